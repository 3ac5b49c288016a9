"""Tests of the original Markov Quilt Mechanism ([ZOC22, Alg. 5], quiltpriv.mechanisms.mqm)."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.mechanisms.mqm import chain_order, markov_quilt_mechanism
from quiltpriv.model.loading import load_model
from quiltpriv.model.network import theta_from_tables

# -- an independent, slow reference -------------------------------------------------------------


def _random_theta(rng: np.random.Generator, m: int, members: int = 1, p_edge: float = 0.45):
    names = [f"y{k}" for k in range(m)]
    states = {v: tuple(range(int(rng.integers(2, 4)))) for v in names}
    edges = [(names[a], names[b]) for a in range(m) for b in range(a + 1, m)
             if rng.random() < p_edge]
    parents = {v: [a for a, b in edges if b == v] for v in names}
    cpds = []
    for _ in range(members):
        tables = {}
        for v in names:
            shape = (len(states[v]),) + tuple(len(states[p]) for p in parents[v])
            t = rng.uniform(0.05, 1.0, size=shape)
            tables[v] = t / t.sum(axis=0, keepdims=True)
        cpds.append(tables)
    return names, states, edges, parents, cpds


def _full_joint(names, states, parents, tables) -> np.ndarray:
    """P(y_0, ..., y_{m-1}) by brute-force broadcasting of every CPD."""
    shape = tuple(len(states[v]) for v in names)
    joint = np.ones(shape)
    for v in names:
        axes = [names.index(v)] + [names.index(p) for p in parents[v]]
        t = tables[v]
        # move the table's axes to their positions in the full joint
        order = np.argsort(axes)
        t = np.transpose(t, order)
        full_shape = [1] * len(names)
        for ax in axes:
            full_shape[ax] = shape[ax]
        joint = joint * t.reshape(full_shape)
    return joint


def _influence(joint: np.ndarray, i: int, q: tuple[int, ...]) -> float:
    m = joint.ndim
    keep = (i, *q)
    marg = joint.sum(axis=tuple(k for k in range(m) if k not in keep))
    # axes of marg are sorted positions; bring i first
    order = sorted(keep)
    marg = np.moveaxis(marg, order.index(i), 0).reshape(joint.shape[i], -1)
    p_i = marg.sum(axis=1)
    cond = marg[p_i > 0] / p_i[p_i > 0, None]
    hi, lo = cond.max(axis=0), cond.min(axis=0)
    if np.any((hi > 0) & (lo == 0)):
        return math.inf
    ok = hi > 0
    return float(np.max(np.log(hi[ok]) - np.log(lo[ok]))) if np.any(ok) else 0.0


def _reference_scale(names, edges, joints, eps: float) -> float:
    """max_i min_Q |N(Q)| / (eps - e(Q|i)) over every subset Q, d-separation from networkx."""
    g = nx.DiGraph()
    g.add_nodes_from(names)
    g.add_edges_from(edges)
    m = len(names)
    worst = 0.0
    for i in range(m):
        others = [k for k in range(m) if k != i]
        best = m / eps  # trivial quilt
        for size in range(len(others) + 1):
            for q in itertools.combinations(others, size):
                qs = {names[k] for k in q}
                remote = [k for k in others if k not in q
                          and nx.is_d_separator(g, {names[i]}, {names[k]}, qs)]
                nearby = m - len(q) - len(remote)
                e = max(_influence(j, i, q) for j in joints)
                if e < eps:
                    best = min(best, nearby / (eps - e))
        worst = max(worst, best)
    return worst


@pytest.mark.parametrize("seed", range(8))
def test_matches_exhaustive_reference_on_random_networks(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 7))
    members = 1 + seed % 2
    names, states, edges, parents, cpds = _random_theta(rng, m, members)
    theta = theta_from_tables(edges, states, cpds)
    joints = [_full_joint(names, states, parents, t) for t in cpds]
    for eps in (0.5, 2.0):
        plan = markov_quilt_mechanism(theta, eps, family="all")
        ref = _reference_scale(names, edges, joints, eps)
        assert plan.optimal
        assert plan.b_max == pytest.approx(ref, rel=1e-8)
        assert plan.b_max >= ref * (1 - 1e-12)  # never below the exact value
        # a restricted family is valid but can only be worse
        bounded = markov_quilt_mechanism(theta, eps, family="bounded", max_quilt_size=1)
        assert bounded.b_max >= plan.b_max * (1 - 1e-12)
        if m - 1 > 1:
            assert not bounded.optimal
            assert any("RESTRICTED" in n for n in bounded.notes)


def _two_state_chain(length: int, flip: float):
    names = [f"y{k}" for k in range(1, length + 1)]
    states = {v: (0, 1) for v in names}
    edges = list(itertools.pairwise(names))
    trans = np.array([[1 - flip, flip], [flip, 1 - flip]])
    cpds = {names[0]: np.array([0.5, 0.5])}
    cpds.update({v: trans for v in names[1:]})
    return names, theta_from_tables(edges, states, cpds)


def test_two_state_symmetric_chain_by_hand():
    # Stationary start, flip probability p: P(Y_{i+k} = Y_i) = (1 + r^k) / 2 with r = 1 - 2p,
    # and by reversibility the same backwards. Given Y_i the two sides are independent, so
    #   e({Y_{i-a}, Y_{i+b}}) = g(a) + g(b),  g(k) = log((1 + r^k) / (1 - r^k)),
    #   N = the a + b - 1 nodes strictly between; one-sided quilts reach the chain's end.
    length, p, eps = 9, 0.15, 1.0
    names, theta = _two_state_chain(length, p)
    r = 1 - 2 * p

    def g(k):
        return math.log((1 + r**k) / (1 - r**k))

    def by_hand(i):  # i in 1..length
        best = length / eps
        for a in [None, *range(1, i)]:
            for b in [None, *range(1, length - i + 1)]:
                e = (g(a) if a else 0.0) + (g(b) if b else 0.0)
                lo = i - a if a else 0
                hi = i + b if b else length + 1
                n = hi - lo - 1
                if e < eps:
                    best = min(best, n / (eps - e))
        return best

    plan = markov_quilt_mechanism(theta, eps)
    assert plan.family == "chain" and plan.optimal
    for k, v in enumerate(names, start=1):
        assert plan[v].scale == pytest.approx(by_hand(k), rel=1e-9)
    # Worked by hand: for y1 the best quilt is {y6} (N = y1..y5, r^5 = 0.16807,
    # e = log(1.16807 / 0.83193) = 0.339359), b = 5 / (1 - 0.339359) = 7.56842; {y5} gives
    # 4 / (1 - 0.489773) = 7.8397 and {y7} 6 / (1 - 0.236377) = 7.8573. The middle node y5
    # gets nothing better than the trivial 9 / eps: {y1, y9} has e = 2 * 0.489773 < 1 but
    # 7 / 0.0205 = 342, {y1} alone 8 / 0.510227 = 15.68.
    assert plan["y1"].quilt == ("y6",)
    assert plan["y1"].scale == pytest.approx(7.56842, abs=1e-5)
    assert plan["y5"].scale == pytest.approx(9.0)
    assert plan.b_max == pytest.approx(max(by_hand(k) for k in range(1, length + 1)), rel=1e-9)
    # and the chain family agrees with every quilt
    full = markov_quilt_mechanism(theta, eps, family="all")
    assert full.b_max == pytest.approx(plan.b_max, rel=1e-12)
    for v in names:
        assert full[v].scale == pytest.approx(plan[v].scale, rel=1e-12)


def test_chain_family_equals_exhaustive_on_bundled_chain():
    from models.chain import chain

    theta = load_model("chain")  # 12 periods
    plan = markov_quilt_mechanism(theta, 1.0)
    assert plan.family == "chain" and plan.optimal
    assert chain_order(theta) == theta.nodes
    small = markov_quilt_mechanism(chain(7, 0.7), 2.0)
    full = markov_quilt_mechanism(chain(7, 0.7), 2.0, family="all")
    assert small.b_max == pytest.approx(full.b_max, rel=1e-12)
    # the end periods need less noise than the middle ones (fewer neighbours)
    assert plan["x01"].scale < plan["x06"].scale <= 12.0


def test_lipschitz_release_and_audit():
    names, theta = _two_state_chain(5, 0.1)
    plan = markov_quilt_mechanism(theta, 1.0, lipschitz=2.0)
    assert plan.scale == pytest.approx(2.0 * plan.b_max, rel=1e-15)
    assert plan.scale >= 2.0 * plan.b_max
    assert plan.std == pytest.approx(math.sqrt(2) * plan.scale)
    out = plan.release(3.0, seed=7)
    assert not out.secure and math.isfinite(out.value)
    assert plan.to_dict()["nodes"][0]["node"] == "y1"
    assert "[ZOC22, Alg. 5]" in plan.explain()
    # protecting one entry only uses its b_i
    one = markov_quilt_mechanism(theta, 1.0, protected="y1")
    assert one.b_max == pytest.approx(plan["y1"].scale)


def test_deterministic_dependence_forces_trivial_quilts():
    theta = load_model("example3")  # x1 is a function of x2: infinite influence
    plan = markov_quilt_mechanism(theta, 1.0)
    assert plan.b_max == pytest.approx(2.0)  # |V| / eps, nothing better exists
    assert plan.optimal


def test_bad_inputs():
    theta = load_model("student")
    with pytest.raises(ParameterError):
        markov_quilt_mechanism(theta, 0.0)
    with pytest.raises(ParameterError):
        markov_quilt_mechanism(theta, 1.0, lipschitz=-1)
    with pytest.raises(ParameterError, match="family"):
        markov_quilt_mechanism(theta, 1.0, family="greedy")
    with pytest.raises(ParameterError, match="chain"):
        markov_quilt_mechanism(theta, 1.0, family="chain")
    with pytest.raises(ModelError, match="nope"):
        markov_quilt_mechanism(theta, 1.0, protected=["nope"])
