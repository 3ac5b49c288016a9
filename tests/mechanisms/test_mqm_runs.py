"""MQM plans of chains and hidden Markov models held as runs (issue 36).

The run representation (:mod:`quiltpriv.mechanisms.mqm_runs`) must give, entry by entry, the
very ``NodeScale`` the per-entry search makes (the reference: ``_chain_nodes`` /
``_hmm_nodes``, one object per entry), the same scale bit for bit as the plan that lists its
sets, and the closed form of the symmetric two-state chain from above.
"""

from __future__ import annotations

import json

import mpmath
import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.errors import PlanError
from quiltpriv.mechanisms import mqm
from quiltpriv.mechanisms.mqm import NodeScale, markov_quilt_mechanism, node_runs
from quiltpriv.mechanisms.mqm_runs import NodeRun, NodeRuns, find_runs
from quiltpriv.mechanisms.registry import mqm_mechanism

FLIP = [[0.9, 0.1], [0.1, 0.9]]


def _stochastic(rng: np.random.Generator, k: int) -> list[list[float]]:
    m = rng.random((k, k)) + 0.05
    return (m / m.sum(axis=1, keepdims=True)).tolist()


def _two_state(rng: np.random.Generator) -> list[list[float]]:
    a, b = rng.uniform(0.6, 0.95, 2)
    return [[a, 1 - a], [1 - b, b]]


def _expand(plan: mqm.MQMPlan) -> list[tuple]:
    """Every entry's (node, quilt, numbers) read back from the plan's JSON runs."""
    d = json.loads(plan.to_json())
    names = list(plan.protected)
    pos = {v: k for k, v in enumerate(names)}
    out: dict[int, tuple] = {}
    for r in d["node_runs"]:
        first, stride = pos[r["first"]], r["stride"]
        assert pos[r["last"]] == first + stride * (r["count"] - 1)
        for j in range(first, first + stride * r["count"], stride):
            assert j not in out
            quilt = tuple(r["quilt"]) if "quilt" in r else tuple(
                names[j + o] for o in r["quilt_offsets"])
            out[j] = (names[j], quilt, r["influence"], r["scale"], r["nearby_read"],
                      r["quilts_considered"], r["influence_member"], r["influence_pair"])
    assert sorted(out) == list(range(len(names)))
    return [out[j] for j in range(len(names))]


def _row(ns: NodeScale) -> tuple:
    return (ns.node, ns.quilt, ns.influence, ns.scale, ns.nearby_count, ns.quilts_considered,
            ns.influence_member,
            None if ns.influence_pair is None else [str(x) for x in ns.influence_pair])


def _check_against_per_entry(plan: mqm.MQMPlan, ref: list[NodeScale],
                             listed: mqm.MQMPlan) -> None:
    assert isinstance(plan.nodes, NodeRuns)
    assert len(plan.nodes.runs) <= len(ref)  # fewer on a homogeneous series
    assert tuple(plan.nodes) == tuple(ref)              # every entry, made lazily
    assert [plan.nodes[j] for j in range(-3, 3)] == [ref[j] for j in range(-3, 3)]
    assert _expand(plan) == [_row(ns) for ns in ref]    # and through the JSON runs
    assert plan.binding == max(ref, key=lambda ns: ns.scale).node
    assert _row(plan[plan.binding]) == _row(listed[listed.binding])
    # bit-identical to the plan that lists every entry's sets (the per-entry path)
    assert (plan.scale, plan.b_max, plan.binding, plan.optimal) == (
        listed.scale, listed.b_max, listed.binding, listed.optimal)
    assert [_row(ns) for ns in listed.nodes] == [_row(ns) for ns in ref]


@pytest.mark.parametrize("seed", range(6))
def test_chain_runs_equal_the_per_entry_search(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(70, 200)), int(rng.integers(2, 4))
    if seed % 3 == 2:  # inhomogeneous: a matrix per step
        transition = [_stochastic(rng, k) for _ in range(n - 1)]
    else:
        transition = _stochastic(rng, k)
    theta = qp.markov_chain(n, transition, rng.dirichlet(np.ones(k)).tolist())
    eps = float(rng.uniform(0.5, 3.0))
    read = None if seed % 2 else [v for v in theta.nodes if rng.random() < 0.7]
    protected = None if seed < 4 else [v for v in theta.nodes if rng.random() < 0.8]
    plan = markov_quilt_mechanism(theta, eps, read=read, protected=protected,
                                  list_sets=False)
    listed = markov_quilt_mechanism(theta, eps, read=read, protected=protected,
                                    list_sets=True)
    nodes = mqm._protected(theta, protected)
    ref, skipped = mqm._chain_nodes(theta, theta.nodes, nodes, eps,
                                    None if read is None else frozenset(read), None, False,
                                    False)
    assert not skipped
    _check_against_per_entry(plan, ref, listed)


@pytest.mark.parametrize("seed", range(4))
def test_hmm_runs_equal_the_per_entry_search(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(60, 160))
    theta = qp.hidden_markov(n, _two_state(rng), _two_state(rng),
                             rng.dirichlet([1.0, 1.0]).tolist())
    read = [v for v in theta.nodes if v.startswith("X")]
    eps = float(rng.uniform(0.5, 3.0))
    plan = markov_quilt_mechanism(theta, eps, read=read, list_sets=False)
    listed = markov_quilt_mechanism(theta, eps, read=read, list_sets=True)
    assert plan.family == listed.family == "hmm"
    ref, skipped = mqm._hmm_nodes(theta, theta.nodes, eps, frozenset(read), None, False,
                                  False)
    assert not skipped
    _check_against_per_entry(plan, ref, listed)
    # the node_runs the per-entry plans wrote before: the same JSON here
    assert plan.to_dict()["node_runs"] == node_runs(tuple(ref))


def _closed_form(eps: float, p: float) -> mpmath.mpf:
    """T x the scale of the symmetric two-state chain in its middle:
    min over a, b >= 1 of (a + b - 1) / (eps - g(a) - g(b)), g(k) = log((1+l^k)/(1-l^k))."""
    mpmath.mp.dps = 40
    lam = 1 - 2 * mpmath.mpf(p)

    def g(k: int) -> mpmath.mpf:
        return mpmath.log((1 + lam**k) / (1 - lam**k))

    best = mpmath.inf
    for a in range(1, 120):
        for b in range(1, 120):
            rest = eps - g(a) - g(b)
            if rest > 0:
                best = min(best, (a + b - 1) / rest)
    return best


@pytest.mark.parametrize("n", [1500, 20000])
def test_symmetric_chain_closed_form_from_above(n):
    closed = _closed_form(1, mpmath.mpf(1) / 10)
    assert abs(closed - mpmath.mpf("31.737788616")) < 1e-9 * 31.8
    theta = qp.markov_chain(n, FLIP, [0.5, 0.5])
    plan = markov_quilt_mechanism(theta, 1.0, lipschitz=1 / n)
    assert isinstance(plan.nodes, NodeRuns) and len(plan.nodes.runs) < 400
    assert plan.optimal
    rel = mpmath.mpf(plan.scale) * n / closed - 1
    assert 0 <= rel < 1e-9


def test_time_limit_past_keeps_a_valid_flagged_plan():
    n = 3000
    theta = qp.markov_chain(n, FLIP, [0.5, 0.5])
    plan = markov_quilt_mechanism(theta, 1.0, lipschitz=1 / n, time_limit=1e-9)
    assert not plan.optimal
    assert any(f"{n} entries keep" in note for note in plan.notes), plan.notes
    assert isinstance(plan.nodes, NodeRuns) and len(plan.nodes.runs) == 1
    assert plan.b_max == plan.nodes[0].scale == 1.0 * n  # the quilt {}: |read| / eps


def test_find_runs_past_the_deadline_gives_each_lane_the_trivial_quilt():
    names = tuple(f"Y{i}" for i in range(10))
    keys = np.arange(10, dtype=np.float64)[:, None]  # every entry its own run

    def make(first: int, length: int) -> NodeRun:
        return NodeRun(first, length, 1, (), None, 1, 0.5, 2.0, 3, "m", (0, 1))

    def trivial(first: int, length: int) -> NodeRun:
        return NodeRun(first, length, 1, (), None, 10, 0.0, 10.0, 1, None, None)

    calls = iter([False, True])
    runs, late = find_runs(NodeScale, names, 2, keys, np.zeros(10, dtype=bool), make,
                           expired=lambda: next(calls, True), trivial=trivial,
                           check_every=1)
    # lane 0: entry 0 made, then the deadline: entries 2, 4, 6, 8 one trivial run;
    # lane 1: the deadline at once: entries 1, 3, ... one trivial run
    assert late.tolist() == [False] + [True] * 9
    assert [(r.first, r.length, r.stride, r.scale) for r in runs.runs] == [
        (0, 1, 1, 2.0), (1, 5, 2, 10.0), (2, 4, 2, 10.0)]
    assert [ns.scale for ns in runs] == [2.0] + [10.0] * 9


def _run(first: int, length: int, stride: int = 1, offsets: tuple[int, ...] | None = (),
         quilt: tuple[str, ...] | None = None) -> NodeRun:
    return NodeRun(first, length, stride, offsets, quilt, 1, 0.0, 1.0, 1, None, None)


@pytest.mark.parametrize("runs,message", [
    ([_run(0, 2), _run(1, 2)], "another run names"),          # overlap
    ([_run(0, 2)], "in no run"),                              # a gap
    ([_run(0, 4)], "outside the plan"),                       # past the end
    ([_run(0, 3, offsets=(1,))], "quilt entry outside"),      # a quilt past the end
    ([_run(0, 3, offsets=(-1,))], "quilt entry outside"),     # a quilt before the start
    ([_run(0, 3, offsets=None)], "quilt offsets"),            # no quilt at all
    ([_run(0, 3, quilt=("Z",))], "quilt offsets"),            # a named quilt on 3 entries
])
def test_node_runs_refuse_malformed_runs(runs, message):
    with pytest.raises(PlanError, match=message):
        NodeRuns(NodeScale, ("A", "B", "C"), runs)


def test_registry_and_release_use_the_runs_without_listing_entries():
    n = 2000
    theta = qp.markov_chain(n, FLIP, [0.5, 0.5])
    q = qp.FractionQuery([f"X{t}" for t in range(1, n + 1)], 1)
    mech = mqm_mechanism(theta, q, None, 1.0)
    assert mech.guarantee.sensitive == theta.nodes
    assert len(mech.details["node_runs"]) < 400


def test_low_level_release_of_a_runs_plan():
    n = 2000
    theta = qp.markov_chain(n, FLIP, [0.5, 0.5])
    plan = markov_quilt_mechanism(theta, 1.0, lipschitz=1 / n)
    assert isinstance(plan.nodes, NodeRuns)
    rec = plan.release(0.5, seed=1)
    assert rec.guarantee.sensitive == theta.nodes
    b = plan[plan.binding]
    assert rec.calibration.details["binding"] == b.node == plan.binding
    assert rec.calibration.details["nearby"] == b.nearby_count
    assert rec.calibration.scale == plan.scale
