"""Hidden Markov models: the HMM search of every node against the general planner and a closed
form.

The HMM search (:mod:`quiltpriv.mechanisms.hmm_quilts`) must choose, for every hidden state
and every observation of a hidden Markov model read at its observations, a quilt of the least
scale over all quilts: the general planner (exhaustive there, tested against brute force
elsewhere) is the reference on short random HMMs (two hidden states, two or three observed
values, inhomogeneous transitions, several members of Theta), and the stationary symmetric
HMM has a closed form at any length.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import quiltpriv as qp
import quiltpriv.mechanisms.hmm_quilts as hmm_quilts
from quiltpriv.inference.influence import max_influence
from quiltpriv.mechanisms.apmqm import plan
from quiltpriv.mechanisms.apmqm.planner import _hmm_plans
from quiltpriv.mechanisms.hmm_quilts import HMMNotApplicable, hmm_least_quilts, hmm_order
from quiltpriv.mechanisms.mqm import markov_quilt_mechanism
from quiltpriv.utils.time_limit import TimeLimit


def _sticky(rng: np.random.Generator) -> np.ndarray:
    """A random 2 x 2 transition matrix with det >= 0 (rows: P(H_t | H_(t-1) = u))."""
    a, b = sorted(rng.uniform(0.03, 0.97, size=2), reverse=True)
    return np.array([[a, 1 - a], [b, 1 - b]])  # det = a - b >= 0


def random_hmm(seed: int, n_steps: int | None = None):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9)) if n_steps is None else n_steps
    m = int(rng.integers(2, 4))

    def one(name: str):
        trans = [_sticky(rng) for _ in range(n - 1)] if rng.random() < 0.4 else _sticky(rng)
        emit = rng.dirichlet(np.full(m, rng.choice([0.5, 2.0, 8.0])), size=2)
        emit = np.maximum(emit, 0.01)
        p0 = np.maximum(rng.dirichlet([1.0, 1.0]), 0.02)
        return qp.hidden_markov(n, trans, emit / emit.sum(axis=1, keepdims=True),
                                p0 / p0.sum(), name=name)

    theta = one("a")
    if rng.random() < 0.3:
        theta = theta.with_members(one("b"))
    return theta, [f"X{t}" for t in range(1, n + 1)]


@pytest.mark.parametrize("seed", range(24))
def test_hmm_search_equals_the_general_planner(monkeypatch, seed):
    theta, steps = random_hmm(seed)
    eps = [0.3, 1.0, 3.0][seed % 3]
    query = qp.FractionQuery(steps, "1")
    general = plan(theta, query, theta.nodes, eps)
    monkeypatch.setattr(hmm_quilts, "HMM_MIN_STEPS", 1)
    fast = plan(theta, query, theta.nodes, eps)
    assert _hmm_plans(theta, query, theta.nodes, eps, None, False, True) is not None
    for g, f in zip(general.sensitive, fast.sensitive, strict=True):
        assert f.optimal and g.optimal
        assert f.scale == pytest.approx(g.scale, rel=1e-9, abs=0), (f.sensitive, f.quilt, g.quilt)
        # the chosen quilt's own numbers: its N's sensitivity and an influence not below the
        # exact value (the general calculator's, both rounded upwards)
        part = f.partition(theta)
        assert f.sensitivity == query.sensitivity([v for v in part.nearby if v in steps])
        exact = max_influence(theta, f.sensitive, f.quilt).value if f.quilt else 0.0
        assert exact - 2e-10 * (1 + exact) <= f.influence <= exact + 1e-8 * (1 + exact)
    assert fast.scale == pytest.approx(general.scale, rel=1e-9, abs=0)
    assert fast.scale >= general.scale * (1 - 1e-12)


@pytest.mark.parametrize("seed", range(24, 40))
def test_mqm_hmm_search_equals_every_quilt_enumerated(monkeypatch, seed):
    theta, steps = random_hmm(seed, n_steps=int(np.random.default_rng(seed).integers(3, 7)))
    eps = [0.5, 1.0, 2.5][seed % 3]
    general = markov_quilt_mechanism(theta, eps, read=steps)
    assert general.family == "all" and general.optimal
    monkeypatch.setattr(hmm_quilts, "HMM_MIN_STEPS", 1)
    fast = markov_quilt_mechanism(theta, eps, read=steps)
    assert fast.family == "hmm" and fast.optimal
    for g, f in zip(general.nodes, fast.nodes, strict=True):
        assert f.scale == pytest.approx(g.scale, rel=1e-9, abs=0), (f.sensitive, f.quilt, g.quilt)
        assert f.nearby_count == len([v for v in f.nearby if v in steps])


@pytest.mark.parametrize("seed", range(40, 48))
def test_banded_quilts_state_their_own_influence(monkeypatch, seed):
    """Bands ending at a hidden state (kept short here): the stated influence is the exact
    one of that quilt (the general calculator's), rounded upwards."""
    theta, _ = random_hmm(seed, n_steps=9)
    monkeypatch.setattr(hmm_quilts, "BAND_START", 2)
    monkeypatch.setattr(hmm_quilts, "BAND_RTOL", 10.0)  # accept any band
    order = hmm_order(theta)
    found = hmm_least_quilts(theta, order, theta.nodes, 3.0)
    hidden_ends = 0
    for j, node in enumerate(theta.nodes):
        quilt = found.quilt(j, order)
        hidden_ends += sum(v.startswith("H") for v in quilt)
        exact = max_influence(theta, node, quilt).value if quilt else 0.0
        got = float(found.influence[j])
        assert exact - 2e-10 * (1 + exact) <= got <= exact + 1e-8 * (1 + exact), (node, quilt)
        # N: the observations nearby, counted as the scale counts them
        near = qp.markov_quilt(theta, node, quilt).nearby if quilt else theta.nodes
        assert found.count[j] == sum(v.startswith("X") for v in near)
    assert hidden_ends > 0


def closed_form_hmm(eps: float, p: float, q: float) -> float:
    """T times the scale of the fraction of time in a state on a stationary symmetric HMM (flip
    probability ``p``, emission ``q`` right) far from its ends: a hidden state binds, with
    ``n`` observations nearby on each side; the observations beyond enter through the fixed
    point ``x`` of ``x -> tau(r x)`` (``r = q / (1 - q)``, ``tau`` one transition on the
    likelihood ratio), ``R(n) = log tau^n(x)``, and the scale is the least
    ``(n_l + n_r + 1) / (eps - R(n_l) - R(n_r))``."""
    r = q / (1 - q)
    x = ((r - 1) * (1 - p) + math.sqrt(((r - 1) * (1 - p)) ** 2 + 4 * r * p * p)) / (2 * r * p)
    side = []
    for _ in range(300):
        side.append(math.log(x))
        x = ((1 - p) * x + p) / (p * x + 1 - p)
    return min((a + b + 1) / (eps - side[a] - side[b]) for a in range(300) for b in range(300)
               if side[a] + side[b] < eps)


def test_closed_form_value():
    assert closed_form_hmm(1.0, 0.1, 0.8) == pytest.approx(30.876143218964668, rel=1e-12)


def symmetric_hmm(n: int, p: float, q: float):
    return qp.hidden_markov(n, [[1 - p, p], [p, 1 - p]], [[q, 1 - q], [1 - q, q]], [0.5, 0.5])


@pytest.mark.parametrize("n,eps,p,q", [(200, 1.0, 0.1, 0.8), (2000, 1.0, 0.1, 0.8),
                                       (300, 2.0, 0.2, 0.9), (400, 0.5, 0.05, 0.7),
                                       pytest.param(500_000, 1.0, 0.1, 0.8,
                                                    marks=pytest.mark.slow)])
def test_fraction_of_time_equals_the_closed_form(n, eps, p, q):
    theta = symmetric_hmm(n, p, q)
    steps = [f"X{t}" for t in range(1, n + 1)]
    got = plan(theta, qp.FractionQuery(steps, "1"), theta.nodes, eps)
    want = closed_form_hmm(eps, p, q) / n
    assert got.optimal
    # above the exact value by the influences' upward rounding (the finite series' ends
    # lower it by far less)
    assert want * (1 - 1e-12) <= got.scale <= want * (1 + 2e-9)
    mqm = markov_quilt_mechanism(theta, eps, lipschitz=1 / n, read=steps)
    assert mqm.family == "hmm" and mqm.optimal
    assert mqm.scale == pytest.approx(got.scale, rel=1e-12)


def test_refuses_what_it_does_not_handle(monkeypatch):
    monkeypatch.setattr(hmm_quilts, "HMM_MIN_STEPS", 1)
    steps = [f"X{t}" for t in range(1, 6)]
    sticky, emit = [[0.9, 0.1], [0.2, 0.8]], [[0.7, 0.3], [0.4, 0.6]]
    cases = {
        "three hidden states": qp.hidden_markov(5, np.full((3, 3), 1 / 3), np.full((3, 2), 0.5),
                                                np.full(3, 1 / 3)),
        "det < 0": qp.hidden_markov(5, [[0.2, 0.8], [0.9, 0.1]], emit, [0.5, 0.5]),
        "a zero": qp.hidden_markov(5, [[1.0, 0.0], [0.2, 0.8]], emit, [0.5, 0.5]),
    }
    for why, theta in cases.items():
        order = hmm_order(theta)
        assert order is not None
        with pytest.raises(HMMNotApplicable):
            hmm_least_quilts(theta, order, theta.nodes, 1.0)
        query = qp.FractionQuery(steps, "1")
        assert _hmm_plans(theta, query, theta.nodes, 1.0, None, False, True) is None, why
        assert plan(theta, query, theta.nodes, 1.0).optimal  # the general search, exact here
    theta = qp.hidden_markov(5, sticky, emit, [0.5, 0.5])
    # a query over some steps only, or reading a hidden state: the general search
    assert _hmm_plans(theta, qp.FractionQuery(steps[:3], "1"), theta.nodes, 1.0, None, False,
                     True) is None
    assert _hmm_plans(theta, qp.FractionQuery([*steps, "H1"], "1"), theta.nodes, 1.0, None,
                     False, True) is None
    assert markov_quilt_mechanism(theta, 1.0).family == "all"  # reads the hidden states too
    # not an HMM
    chain = qp.markov_chain(5, sticky, [0.5, 0.5])
    assert hmm_order(chain) is None


def test_time_limit_keeps_valid_quilts():
    n = 3000
    theta = symmetric_hmm(n, 0.1, 0.8)
    steps = [f"X{t}" for t in range(1, n + 1)]
    got = markov_quilt_mechanism(theta, 1.0, lipschitz=1 / n, read=steps, time_limit=1e-9)
    assert got.family == "hmm" and not got.optimal
    assert any("time limit" in note for note in got.notes)
    assert got.b_max == pytest.approx(n)  # every entry keeps the quilt {}: all of X nearby
    found = hmm_least_quilts(theta, hmm_order(theta), theta.nodes[:10], 1.0,
                             time_limit=TimeLimit.ending_at(0.0))
    assert found.stopped and not found.optimal.any()
