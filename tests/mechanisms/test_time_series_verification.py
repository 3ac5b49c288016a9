"""Verifying plans of time series in their search's structure (chains held as runs, HMMs).

:mod:`quiltpriv.mechanisms.time_series_verification` must accept the plans the chain and HMM
searches make (short series, where the general verifier and planner are the references, and
long ones, fast), recompute each quilt's influence within its stated error bound of the exact
value (the general calculator's, on random chains and HMMs with several members), and refuse
a tampered plan: a scale lowered, a quilt changed, a claim of optimality that does not hold.
"""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
import pytest
from test_hmm_plans import random_hmm

import quiltpriv as qp
import quiltpriv.mechanisms.hmm_quilts as hmm_quilts
import quiltpriv.mechanisms.time_series_verification as tsv
from quiltpriv.errors import PlanError
from quiltpriv.inference.influence import max_influence
from quiltpriv.mechanisms.apmqm import Plan, plan, quilt_scale
from quiltpriv.mechanisms.step_plans import StepPlans
from quiltpriv.mechanisms.verification import check_plan, verify_plan
from quiltpriv.queries.query import CountQuery, LinearQuery
from quiltpriv.utils.rounding import div_up


def _flip(p: float) -> list[list[float]]:
    return [[1 - p, p], [p, 1 - p]]


def random_chain(seed: int, n: int):
    """A random positive chain (2 or 3 states, transitions changing with the step, 1 or 2
    members)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 4))

    def one(name: str):
        trans = [rng.dirichlet(np.full(k, 3.0), size=k) for _ in range(n - 1)] \
            if rng.random() < 0.5 else rng.dirichlet(np.full(k, 3.0), size=k)
        trans = np.maximum(trans, 0.02)
        trans = trans / trans.sum(axis=-1, keepdims=True)
        p0 = rng.dirichlet(np.ones(k))
        p0 = np.maximum(p0, 0.05) / np.maximum(p0, 0.05).sum()
        return qp.markov_chain(n, trans, p0, name=name)

    theta = one("a")
    if rng.random() < 0.5:
        theta = theta.with_members(one("b"))
    return theta


def _rows(theta, query, p):
    from quiltpriv.mechanisms.hmm_verification import check_hmm_plan

    return (tsv.check_time_series(theta, query, p.sensitive, p.epsilon, quilt_scale)
            or check_hmm_plan(theta, query, p.sensitive, p.epsilon, quilt_scale))


def _general(monkeypatch, theta, query, p):
    """The general verifier's verdict (the time-series route switched off)."""
    import quiltpriv.mechanisms.hmm_verification as hv

    with monkeypatch.context() as m:
        m.setattr(tsv, "check_time_series", lambda *a: None)
        m.setattr(hv, "check_hmm_plan", lambda *a: None)
        return check_plan(p, theta, query)


# -- chains ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_chain_plans_verify_as_the_general_verifier_says(monkeypatch, seed):
    theta = random_chain(seed, 70)
    state = theta.states[theta.nodes[0]][1]
    query = [qp.FractionQuery(theta.nodes, state),
             LinearQuery({a: 0.5 + (i % 3) for i, a in enumerate(theta.nodes[3::7])},
                         {a: (0.0, 1.0) for a in theta.nodes[3::7]}),
             CountQuery(list(theta.nodes[20:23]), records=2)][seed % 3]
    eps = [1.0, 2.0, 3.5][seed % 3]
    sens = theta.nodes[::2] if seed % 2 else theta.nodes
    p = Plan.from_json(plan(theta, query, sens, eps).to_json())
    assert isinstance(p.sensitive, StepPlans) and p.optimal
    rows = _rows(theta, query, p)
    assert rows is not None and all(r.ok for r in rows), [r.reason for r in rows if not r.ok]
    assert len(rows) == len(p.sensitive.runs)
    mine = check_plan(p, theta, query)
    assert mine.ok and mine.plan.verified
    general = _general(monkeypatch, theta, query, p)
    assert general.ok
    # the general verifier re-plans each step: its least scale is within our lower bound's
    # tolerance above it, and never below it by more than rounding
    least = {c.sensitive: c.least_scale for c in general.attributes}
    for r, run in zip(rows, p.sensitive.runs, strict=True):
        for pos in range(run.first, run.first + run.length):
            g = least[theta.nodes[pos]]
            if g is None or r.least_scale is None:
                continue
            assert r.least_scale <= g * (1 + 1e-12)
            assert g <= r.least_scale * (1 + tsv.OPTIMALITY_RTOL)


@pytest.mark.parametrize("seed", range(6))
def test_chain_influences_are_within_their_bound_of_the_exact_ones(seed):
    theta = random_chain(100 + seed, 24)
    order = theta.nodes
    w = np.ones(len(order))
    ch = tsv._chain_numbers(theta, order, w)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        i = int(rng.integers(0, len(order)))
        a = int(rng.integers(0, i + 1))
        b = int(rng.integers(0, len(order) - i))
        e, beta = tsv._influences(ch, np.array([i]), max(a, 1), max(b, 1))
        quilt = [order[x] for x in ((i - a) if a else -1, (i + b) if b else -1) if x >= 0]
        exact = max_influence(theta, order[i], quilt).value if quilt else 0.0
        # the general calculator rounds upwards by at least 1e-10: its value is above the
        # exact one by less than ~2e-10 (relative and absolute)
        got = float(e[0, a, b])
        assert got - beta[a, b] <= exact + 1e-15
        assert exact - 3e-10 * (1 + exact) <= got + beta[a, b]
        assert beta[a, b] < 1e-11
        assert tsv._stated_influence(ch, np.array([i]), a, b) == pytest.approx(
            got + beta[a, b], abs=1e-15) if quilt else True


@pytest.mark.parametrize("n", [10_000, pytest.param(500_000, marks=pytest.mark.slow)])
def test_long_chain_plans_verify_fast_and_equal_the_closed_form(n):
    theta = qp.markov_chain(n, _flip(0.1), [0.5, 0.5])
    query = qp.FractionQuery(theta.nodes, "1")
    p = Plan.from_json(plan(theta, query, theta.nodes, 1.0).to_json())
    t = time.process_time()
    v = check_plan(p, theta, query)
    assert v.ok, v.failure
    assert time.process_time() - t < 120  # generous: linear in T (0.2 s at 10^4)
    assert len(v.attributes) == len(p.sensitive.runs) < 200
    closed = 31.737788616 / n
    assert closed * (1 - 1e-10) <= v.plan.scale <= closed * (1 + 1e-9)
    # the least scale the verifier proves for the binding steps is the closed form's too
    least = max(c.least_scale for c in v.attributes if c.least_scale is not None)
    assert closed * (1 - 1e-8) <= least <= closed * (1 + 1e-9)
    assert "X33..X" in v.explain()


def _edited(p, edit) -> Plan:
    d = json.loads(p.to_json())
    edit(d)
    return Plan.from_dict(d)


def test_tampered_chain_plans_are_refused():
    n = 2_000
    theta = qp.markov_chain(n, _flip(0.1), [0.5, 0.5])
    query = qp.FractionQuery(theta.nodes, "1")
    p = plan(theta, query, theta.nodes, 1.0)
    runs = p.to_dict()["sensitive"]["runs"]
    mid = max(range(len(runs)), key=lambda j: runs[j][1])  # the long run in the middle

    def lower_scale(d):
        d["sensitive"]["runs"][mid][6] *= 1 - 1e-9
        d["scale"] = max(r[6] for r in d["sensitive"]["runs"])

    v = check_plan(_edited(p, lower_scale), theta, query)
    assert not v.ok and "below Delta / (eps - e)" in v.failure

    def nearer_quilt(d):  # a = 11 instead of 12: more influence than stated
        d["sensitive"]["runs"][mid][2] -= 1

    v = check_plan(_edited(p, nearer_quilt), theta, query)
    assert not v.ok and ("influence" in v.failure or "Delta" in v.failure)

    def worse_quilt(d):  # a farther quilt node, its own numbers, still claimed optimal
        r = d["sensitive"]["runs"][mid]
        r[2] += 4
        g = [np.log((1 + 0.8**k) / (1 - 0.8**k)) for k in (r[2], r[3])]
        r[4] = float(sum(g)) + 1e-9
        r[5] = div_up(r[2] + r[3] - 1, n)  # the query's Delta: exact, rounded up
        r[6] = quilt_scale(r[5], r[4], 1.0)
        d["scale"] = max(x[6] for x in d["sensitive"]["runs"])

    v = check_plan(_edited(p, worse_quilt), theta, query)
    assert not v.ok and "claims the least scale" in v.failure, v.failure
    with pytest.raises(PlanError, match="claims the least scale"):
        verify_plan(_edited(p, worse_quilt), theta, query)


# -- hidden Markov models -------------------------------------------------------------------------


def _hmm(n: int):
    hmm = qp.hidden_markov(n, _flip(0.1), [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5])
    return hmm, qp.FractionQuery([f"X{t}" for t in range(1, n + 1)], "1")


@pytest.mark.parametrize("n", [40, 10_000])
def test_hmm_plans_verify(n):
    hmm, query = _hmm(n)
    p = Plan.from_json(plan(hmm, query, hmm.nodes, 1.0).to_json())
    assert p.optimal
    v = check_plan(p, hmm, query)
    assert v.ok, v.failure
    assert all(c.least_scale is not None for c in v.attributes)
    if n >= 1000:  # the middle binds: the closed form of the stationary HMM
        closed = 30.876143219 / n
        assert closed * (1 - 1e-10) <= v.plan.scale <= closed * (1 + 2e-9)


@pytest.mark.parametrize("seed", range(12))
def test_hmm_recomputed_influences_and_least_scales_match_the_general_ones(monkeypatch, seed):
    theta, steps = random_hmm(seed, n_steps=int(np.random.default_rng(seed).integers(4, 8)))
    eps = [0.5, 1.0, 2.5][seed % 3]
    query = qp.FractionQuery(steps, "1")
    general = plan(theta, query, theta.nodes, eps)  # exhaustive at this size
    monkeypatch.setattr(hmm_quilts, "HMM_MIN_STEPS", 1)
    fast = Plan.from_json(plan(theta, query, theta.nodes, eps).to_json())
    rows = _rows(theta, query, fast)
    assert rows is not None and all(r.ok for r in rows), [r.reason for r in rows if not r.ok]
    for r, g, f in zip(rows, general.sensitive, fast.sensitive, strict=True):
        exact = max_influence(theta, f.sensitive, f.quilt).value if f.quilt else 0.0
        # the recomputed upper bound: above the exact value, below the calculator's (which
        # adds at least 1e-10)
        assert exact - 3e-10 * (1 + exact) <= r.influence <= exact + 1e-9 * (1 + exact)
        assert r.least_scale is not None
        assert r.least_scale <= g.scale * (1 + 1e-12)
        assert g.scale <= r.least_scale * (1 + tsv.OPTIMALITY_RTOL)
    assert _general(monkeypatch, theta, query, fast).ok


def test_tampered_hmm_plans_are_refused():
    from quiltpriv.graph.quilts import markov_quilt

    n = 40
    hmm, query = _hmm(n)
    p = plan(hmm, query, hmm.nodes, 1.0)
    k = max(range(len(p.sensitive)), key=lambda j: p.sensitive[j].scale)
    sp = p.sensitive[k]
    i = int(sp.sensitive[1:])
    assert sp.sensitive.startswith("H") and sp.sets_listed

    def with_quilt(quilt, **numbers):
        part = markov_quilt(hmm, sp.sensitive, quilt)
        return dataclasses.replace(sp, quilt=tuple(quilt), nearby=part.nearby,
                                   remote=part.remote, **numbers)

    def replaced(new) -> Plan:
        sens = list(p.sensitive)
        sens[k] = new
        return Plan.from_json(dataclasses.replace(
            p, sensitive=tuple(sens), scale=max(s.scale for s in sens)).to_json())

    assert check_plan(replaced(sp), hmm, query).ok
    v = check_plan(replaced(dataclasses.replace(sp, scale=sp.scale * (1 - 1e-9))), hmm, query)
    assert not v.ok and "below Delta / (eps - e)" in v.failure
    # the band past the window's left end cut to one observation: more influence than stated
    left = sorted(int(x[1:]) for x in sp.quilt if x.startswith("X") and int(x[1:]) < i)
    right = tuple(x for x in sp.quilt if int(x[1:]) > i)
    c = left[-1]
    v = check_plan(replaced(with_quilt((f"H{c - 1}", f"X{c}") + right)), hmm, query)
    assert not v.ok and "influence" in v.failure, v.failure
    # a valid, worse quilt (two more readings nearby on the left), with its own numbers,
    # claimed optimal
    lead = tuple(x for x in sp.quilt if int(x[1:]) < i and x not in (f"X{c}", f"X{c - 1}"))
    wider = lead + right
    part = markov_quilt(hmm, sp.sensitive, wider)
    near = [x for x in part.nearby if x in query.attributes]
    e = max_influence(hmm, sp.sensitive, wider).value
    delta = query.sensitivity(near)
    worse = with_quilt(wider, influence=e, sensitivity=delta, scale=quilt_scale(delta, e, 1.0))
    assert worse.scale > sp.scale * (1 + 1e-6)
    v = check_plan(replaced(worse), hmm, query)
    assert not v.ok and "claims the least scale" in v.failure, v.failure
    assert check_plan(replaced(dataclasses.replace(worse, optimal=False)), hmm, query).kind \
        == "plan"  # then the plan's own optimal flag disagrees with its attributes
