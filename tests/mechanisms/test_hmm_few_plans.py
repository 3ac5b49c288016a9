"""Hidden Markov models read at a few observations: the few-step search of every node against
the general planner.

The few-step search (:mod:`quiltpriv.mechanisms.hmm_few_quilts`) must choose, for every hidden
state and every observation of a hidden Markov model whose query reads a few observations (a
count, a weighted sum), a quilt of the least scale over all quilts: the general planner
(exhaustive there, tested against brute force elsewhere) is the reference on short random
HMMs (two or three hidden states, two or three observed values, inhomogeneous transitions and
emissions, several members of Theta, random query steps).
"""

from __future__ import annotations

import numpy as np
import pytest

import quiltpriv as qp
import quiltpriv.mechanisms.hmm_few_quilts as hmm_few_quilts
from quiltpriv.inference.influence import max_influence
from quiltpriv.mechanisms.apmqm import plan
from quiltpriv.mechanisms.apmqm.few_plans import _few_plans


def _stochastic(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    x = np.maximum(rng.dirichlet(np.full(cols, rng.choice([0.5, 2.0, 8.0])), size=rows), 0.02)
    return x / x.sum(axis=1, keepdims=True)


def random_hmm(seed: int, n_steps: int):
    """A random HMM of ``n_steps`` steps (members share the structure) and its observations."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 4))
    kx = int(rng.integers(2, 4))

    def one(name: str):
        trans = ([_stochastic(rng, k, k) for _ in range(n_steps - 1)] if rng.random() < 0.4
                 else _stochastic(rng, k, k))
        theta = qp.hidden_markov(n_steps, trans, _stochastic(rng, k, kx),
                                 _stochastic(rng, 1, k)[0], name=name)
        return theta

    theta = one("a")
    if rng.random() < 0.3:
        theta = theta.with_members(one("b"))
    return theta, [f"X{t}" for t in range(1, n_steps + 1)]


def _query(seed: int, steps: list[str]):
    rng = np.random.default_rng(seed + 1000)
    n = int(rng.integers(1, 4))
    attrs = [steps[int(i)] for i in sorted(rng.choice(len(steps), size=n, replace=False))]
    if seed % 2:
        return qp.CountQuery(attrs, 1000)
    weights = {a: float(rng.uniform(0.5, 3.0)) for a in attrs}
    return qp.LinearQuery(weights, {a: (0.0, 2.0) for a in attrs})


@pytest.mark.parametrize("seed", range(20))
def test_few_step_search_equals_the_general_planner(monkeypatch, seed):
    n_steps = int(np.random.default_rng(seed).integers(3, 9))
    theta, steps = random_hmm(seed, n_steps)
    query = _query(seed, steps)
    eps = [0.3, 1.0, 3.0][seed % 3]
    general = plan(theta, query, theta.nodes, eps)
    monkeypatch.setattr(hmm_few_quilts, "HMM_MIN_STEPS", 1)
    assert _few_plans(theta, query, theta.nodes, eps, None, True) is not None
    fast = plan(theta, query, theta.nodes, eps)
    for g, f in zip(general.sensitive, fast.sensitive, strict=True):
        assert f.optimal and g.optimal
        assert f.scale == pytest.approx(g.scale, rel=1e-9, abs=0), (f.sensitive, f.quilt, g.quilt)
        assert f.scale >= g.scale * (1 - 1e-12)
        # the chosen quilt's own numbers: its N's sensitivity and an influence not below the
        # exact value (the general calculator's, both rounded upwards)
        part = f.partition(theta)
        assert f.sensitivity == query.sensitivity([v for v in part.nearby
                                                   if v in query.attributes])
        exact = max_influence(theta, f.sensitive, f.quilt).value if f.quilt else 0.0
        assert exact - 2e-10 * (1 + exact) <= f.influence <= exact + 1e-8 * (1 + exact)
    assert fast.scale == pytest.approx(general.scale, rel=1e-9, abs=0)


@pytest.mark.parametrize("seed", range(20, 26))
def test_longer_series_equal_the_general_planner(monkeypatch, seed):
    """Up to 60 steps (the scans' doubling over several rounds), every node sensitive."""
    theta, steps = random_hmm(seed, int(np.random.default_rng(seed).integers(33, 61)))
    query = _query(seed, steps)
    fast = plan(theta, query, theta.nodes, 1.0)  # at least HMM_MIN_STEPS: the few-step search
    monkeypatch.setattr(hmm_few_quilts, "HMM_MIN_STEPS", 10**9)
    assert _few_plans(theta, query, theta.nodes, 1.0, None, False) is None
    general = plan(theta, query, theta.nodes, 1.0)
    monkeypatch.undo()
    assert _few_plans(theta, query, theta.nodes, 1.0, None, False) is not None
    for g, f in zip(general.sensitive, fast.sensitive, strict=True):
        assert f.optimal and g.optimal
        assert f.scale == pytest.approx(g.scale, rel=1e-9, abs=0), (f.sensitive, f.quilt, g.quilt)
        assert f.scale >= g.scale * (1 - 1e-12)


def test_refuses_what_it_does_not_handle(monkeypatch):
    monkeypatch.setattr(hmm_few_quilts, "HMM_MIN_STEPS", 1)
    theta, steps = random_hmm(3, 6)
    # a hidden state read, or too many steps for the enumeration: the general planner
    assert _few_plans(theta, qp.CountQuery(["H2", "X3"], 10), theta.nodes, 1.0, None,
                     False) is None
    many = qp.CountQuery(steps, 10)
    assert _few_plans(theta, many, theta.nodes, 1.0, None, False) is None
    # a zero probability
    zero = qp.hidden_markov(6, [[1.0, 0.0], [0.1, 0.9]], [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5])
    assert _few_plans(zero, qp.CountQuery(["X2"], 10), zero.nodes, 1.0, None, False) is None


def test_count_far_from_the_query_is_free():
    """A count over three observations of a 400-step ladder: the query's own steps set the
    scale ``1000 / eps``; a node far from them needs no noise (``X_S`` is its quilt)."""
    theta = qp.hidden_markov(400, [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.2], [0.2, 0.8]],
                             [0.5, 0.5])
    query = qp.CountQuery(("X100", "X200", "X300"), 1000)
    got = plan(theta, query, theta.nodes, 1.0)
    assert got.optimal and got.scale == 1000.0
    by = {sp.sensitive: sp for sp in got.sensitive}
    assert by["X200"].scale == 1000.0 and by["X200"].quilt == ()
    assert by["H1"].scale == 0.0 and by["H1"].quilt == ("X100", "X200", "X300")
    assert by["H1"].influence < 1e-8


def _ladder_count(n_steps: int = 80):
    theta = qp.hidden_markov(n_steps, [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.2], [0.2, 0.8]],
                             [0.5, 0.5])
    steps = [f"X{int(n_steps * f)}" for f in (0.25, 0.5, 0.75)]
    return theta, qp.CountQuery(steps, 1000)


def test_runs_hold_the_same_plans_and_round_trip():
    """Held as runs (sets not listed), every node's plan is the one of the listed plan; the
    JSON round-trips and verifies."""
    from quiltpriv.mechanisms.hmm_few_step_plans import FewStepPlans

    theta, query = _ladder_count()
    runs = plan(theta, query, theta.nodes, 1.0, list_sets=False)
    listed = plan(theta, query, theta.nodes, 1.0, list_sets=True)
    assert isinstance(runs.sensitive, FewStepPlans)
    assert len(runs.sensitive.runs) < len(theta.nodes)
    assert runs.scale == listed.scale == 1000.0 and runs.optimal and listed.optimal
    for a, b in zip(runs.sensitive, listed.sensitive, strict=True):
        assert (a.sensitive, a.quilt, a.influence, a.sensitivity, a.scale, a.optimal) == (
            b.sensitive, b.quilt, b.influence, b.sensitivity, b.scale, b.optimal)
        assert a.nearby_attributes == tuple(v for v in query.attributes if v not in a.quilt)
    text = runs.to_json()
    assert '"format": "quiltpriv-plan/hmm-few-runs-1"' in text
    back = qp.Plan.from_json(text)
    assert back == runs and back.sensitive == runs.sensitive
    assert qp.check_plan(back, theta, query, sensitive=theta.nodes, epsilon=1.0).ok
    assert "read at 3 observations" in runs.explain()


def test_edited_runs_are_refused():
    import json

    theta, query = _ladder_count()
    d = json.loads(plan(theta, query, theta.nodes, 1.0, list_sets=False).to_json())
    runs = d["sensitive"]["runs"]
    # an observation's quilt holding itself
    obs = next(k for k, r in enumerate(runs) if r[2] and r[0] == d["sensitive"]["steps"][1])
    bad = json.loads(json.dumps(d))
    bad["sensitive"]["runs"][obs][3] = 7
    with pytest.raises(qp.PlanError, match="cannot hold itself"):
        qp.Plan.from_dict(bad)
    # a mask naming a step the query does not read
    bad = json.loads(json.dumps(d))
    bad["sensitive"]["runs"][0][3] = 8
    with pytest.raises(qp.PlanError, match="mask"):
        qp.Plan.from_dict(bad)
    # a lowered scale: the verification recomputes the quilt's need
    bad = json.loads(json.dumps(d))
    k = next(k for k, r in enumerate(runs) if r[6] > 0)
    bad["sensitive"]["runs"][k][6] = runs[k][6] / 2
    got = qp.check_plan(qp.Plan.from_dict(bad), theta, query)
    assert not got.ok
