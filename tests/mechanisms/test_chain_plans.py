"""Time series: the chain search of every step against the general planner and the closed form.

The chain search (:mod:`quiltpriv.mechanisms.chain_quilts`) must choose, for every step of a
chain and an additive query, a quilt of the least scale over all quilts: the general planner
(tested against brute force elsewhere) is the reference on short random chains (several states,
zeros, inhomogeneous transitions, several members of Theta, queries over some steps), and the
closed form of a stationary symmetric two-state chain is the reference at any length.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import quiltpriv.mechanisms.chain_quilts as chain_quilts
from quiltpriv.mechanisms.apmqm import SensitivePlan, plan
from quiltpriv.mechanisms.chain_quilts import chain_least_quilts
from quiltpriv.mechanisms.mqm import chain_order
from quiltpriv.mechanisms.step_plans import chain_step_plans
from quiltpriv.model.network import theta_from_tables
from quiltpriv.queries.query import CountQuery, LinearQuery
from quiltpriv.utils.time_limit import TimeLimit


def _random_chain(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    k = int(rng.integers(2, 4))
    names = [f"X{t}" for t in range(n)]
    members = []
    for _ in range(int(rng.integers(1, 3))):
        homogeneous = rng.random() < 0.5
        shared = None
        cpds = {}
        for t, v in enumerate(names):
            if t == 0:
                p = rng.dirichlet(np.ones(k))
                if rng.random() < 0.3:
                    p[rng.integers(k)] = 0.0
                cpds[v] = p / p.sum()
                continue
            if homogeneous and shared is not None:
                cpds[v] = shared
                continue
            cols = rng.dirichlet(np.full(k, rng.choice([0.3, 1.0, 5.0])), size=k).T
            cols[cols < 0.02] = 0.0  # exact zeros
            cols /= cols.sum(axis=0, keepdims=True)
            cpds[v] = shared = cols
        members.append(cpds)
    theta = theta_from_tables(list(zip(names[:-1], names[1:], strict=True)),
                              {v: tuple(str(s) for s in range(k)) for v in names}, members)
    read = [v for v in names if rng.random() < 0.8] or names[:1]
    query = LinearQuery({v: float(rng.choice([1.0, 0.5, 2.0])) for v in read},
                        {v: (0.0, 1.0) for v in read})
    return theta, query


@pytest.mark.parametrize("seed", range(60))
def test_chain_search_equals_the_general_planner(monkeypatch, seed):
    theta, query = _random_chain(seed)
    eps = [0.3, 1.0, 3.0][seed % 3]
    monkeypatch.setattr(chain_quilts, "CHAIN_MIN_NODES", 10**9)
    general = plan(theta, query, theta.nodes, eps)
    monkeypatch.setattr(chain_quilts, "CHAIN_MIN_NODES", 1)
    fast = plan(theta, query, theta.nodes, eps)
    assert chain_step_plans(SensitivePlan, theta, query, theta.nodes, eps, None, False,
                            True) is not None
    for g, f in zip(general.sensitive, fast.sensitive, strict=True):
        assert f.optimal and g.optimal
        assert f.scale == pytest.approx(g.scale, rel=1e-8, abs=0), (f.sensitive, f.quilt, g.quilt)
        # the chosen quilt's own numbers: its N's sensitivity and an influence not below
        # the exact value (the general calculator's, both rounded upwards)
        part = f.partition(theta)
        assert f.sensitivity == query.sensitivity([v for v in part.nearby
                                                   if v in query.attributes])
        from quiltpriv.inference.influence import max_influence

        exact = max_influence(theta, f.sensitive, f.quilt).value if f.quilt else 0.0
        if math.isinf(exact):
            assert math.isinf(f.influence)
        else:
            assert f.influence >= exact - 2e-10 * (1 + exact)
            assert f.influence <= exact + 1e-8 * (1 + exact)
    assert fast.scale == pytest.approx(general.scale, rel=1e-8, abs=0)


@pytest.mark.parametrize("seed", range(30))
def test_chain_search_of_a_count_equals_the_general_planner(monkeypatch, seed):
    # an all-or-nothing sensitivity (Delta_A once N holds a query attribute): the same family
    theta, linear = _random_chain(seed)
    rng = np.random.default_rng(1000 + seed)
    read = [v for v in linear.attributes if rng.random() < 0.5] or list(linear.attributes[:1])
    query = CountQuery(read, records=int(rng.integers(1, 5)))
    eps = [0.3, 1.0, 3.0][seed % 3]
    monkeypatch.setattr(chain_quilts, "CHAIN_MIN_NODES", 10**9)
    general = plan(theta, query, theta.nodes, eps)
    monkeypatch.setattr(chain_quilts, "CHAIN_MIN_NODES", 1)
    assert chain_step_plans(SensitivePlan, theta, query, theta.nodes, eps, None, False,
                            True) is not None
    fast = plan(theta, query, theta.nodes, eps)
    for g, f in zip(general.sensitive, fast.sensitive, strict=True):
        assert f.optimal and g.optimal
        assert f.scale == pytest.approx(g.scale, rel=1e-8, abs=0), (f.sensitive, f.quilt, g.quilt)
        part = f.partition(theta)
        assert f.sensitivity == query.sensitivity([v for v in part.nearby if v in read])
    assert fast.scale == pytest.approx(general.scale, rel=1e-8, abs=0)


def closed_form_scale(eps: float, p: float) -> float:
    """min over a, b >= 1 of (a + b - 1) / (eps - g(a) - g(b)), g(k) = log((1 + l^k)/(1 - l^k))
    with l = 1 - 2p: T times the scale of the fraction of time in a state on a stationary
    symmetric two-state chain (the interior steps bind)."""
    lam = 1 - 2 * p
    g = [math.inf] + [math.log((1 + lam**k) / (1 - lam**k)) for k in range(1, 400)]
    return min((a + b - 1) / (eps - g[a] - g[b]) for a in range(1, 400) for b in range(1, 400)
               if g[a] + g[b] < eps)


def symmetric_chain(n: int, p: float):
    names = [f"X{t}" for t in range(n)]
    flip = np.array([[1 - p, p], [p, 1 - p]])
    cpds = {names[0]: np.array([0.5, 0.5]), **{v: flip for v in names[1:]}}
    return theta_from_tables(list(zip(names[:-1], names[1:], strict=True)),
                             {v: ("0", "1") for v in names}, cpds)


def test_closed_form_value():
    assert closed_form_scale(1.0, 0.1) == pytest.approx(31.737788616, rel=1e-10)


@pytest.mark.parametrize("n,eps,p", [(64, 1.0, 0.1), (200, 1.0, 0.1), (3000, 1.0, 0.1),
                                     (500, 2.0, 0.2), (400, 0.5, 0.05)])
def test_fraction_of_time_equals_the_closed_form_from_above(n, eps, p):
    theta = symmetric_chain(n, p)
    query = LinearQuery({v: 1 / n for v in theta.nodes}, {v: (0, 1) for v in theta.nodes})
    got = plan(theta, query, theta.nodes, eps)
    want = closed_form_scale(eps, p) / n
    assert got.optimal
    assert want <= got.scale <= want * (1 + 1e-9)


@pytest.mark.parametrize("n", [pytest.param(500_000, marks=pytest.mark.slow), 20_000])
def test_chain_search_equals_the_closed_form_at_length(n):
    theta = symmetric_chain(n, 0.1)
    order = chain_order(theta)
    mid = list(range(n // 2 - 3, n // 2 + 3)) + [0, 5, n - 1]
    found = chain_least_quilts(theta, order, mid, np.full(n, 1 / n), 1.0)
    want = closed_form_scale(1.0, 0.1) / n
    assert found.optimal.all()
    assert want <= found.scale.max() <= want * (1 + 1e-9)


def test_deadline_keeps_valid_quilts():
    theta = symmetric_chain(5000, 0.1)
    order = chain_order(theta)
    found = chain_least_quilts(theta, order, range(5000), np.full(5000, 1 / 5000), 1.0,
                               time_limit=TimeLimit.ending_at(0.0))
    assert found.stopped and not found.optimal.any()
    # the quilt {} (every step nearby): Delta_A / eps
    assert np.allclose(found.scale, 1.0) and (found.a == 0).all() and (found.b == 0).all()


# -- the original MQM on chains -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_mqm_chain_search_equals_the_enumerated_chain_family(seed):
    from quiltpriv.inference.influence import DEFAULT_MAX_TABLE
    from quiltpriv.mechanisms.mqm import _search_node, chain_quilts, markov_quilt_mechanism

    theta, query = _random_chain(seed)
    eps = [0.5, 1.0, 2.5][seed % 3]
    read = frozenset(query.attributes) if seed % 2 else None
    got = markov_quilt_mechanism(theta, eps, read=read)
    assert got.family == "chain" and got.optimal
    order = chain_order(theta)
    for ns in got.nodes:
        ref, skipped = _search_node(theta, ns.node, eps, chain_quilts(theta, ns.node, order),
                                    DEFAULT_MAX_TABLE, read)
        assert not skipped
        assert ns.scale == pytest.approx(ref.scale, rel=1e-8, abs=0), (ns.quilt, ref.quilt)
        assert ns.nearby_count == len([v for v in ns.nearby if read is None or v in read])


@pytest.mark.parametrize("n", [200, 10_000])
def test_mqm_fraction_of_time_equals_the_closed_form_from_above(n):
    from quiltpriv.mechanisms.mqm import markov_quilt_mechanism

    theta = symmetric_chain(n, 0.1)
    got = markov_quilt_mechanism(theta, 1.0, lipschitz=1 / n)
    want = closed_form_scale(1.0, 0.1) / n
    assert got.optimal and got.family == "chain"
    assert want <= got.scale <= want * (1 + 1e-9)


def test_mqm_time_limit_keeps_valid_quilts():
    from quiltpriv.mechanisms.mqm import markov_quilt_mechanism

    theta = symmetric_chain(3000, 0.1)
    got = markov_quilt_mechanism(theta, 1.0, time_limit=1e-9)
    assert not got.optimal
    assert any("time limit" in n for n in got.notes)
    assert got.b_max == pytest.approx(3000.0)  # every entry keeps the trivial quilt
