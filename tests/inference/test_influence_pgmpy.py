"""max_influence and joint_marginal against pgmpy's VariableElimination (Definition 8).

pgmpy computes the joint of ``[i] + Q`` independently (its own elimination, its own table
layout); Definition 8 is then applied by the reference's literal pairwise loop
(tests/reference.py), never by quiltpriv. Networks go up to 12 nodes, Theta up to 3 members.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import reference as ref
from pgmpy.inference import VariableElimination

from quiltpriv.inference.influence import ROUNDING_MARGIN, joint_marginal, max_influence


def ve_joint(model, nodes, states) -> np.ndarray:
    """pgmpy's joint of ``nodes`` as an array with axes (and states) in the given order."""
    factor = VariableElimination(model).query(variables=list(nodes), joint=True,
                                              show_progress=False)
    variables = [str(v) for v in factor.variables]
    values = np.transpose(factor.values, [variables.index(v) for v in nodes])
    for ax, v in enumerate(nodes):
        names = list(factor.state_names[v])
        values = np.take(values, [names.index(s) for s in states[v]], axis=ax)
    return values


def _cases(seed: int, max_nodes: int):
    net = ref.random_network(seed, min_nodes=2, max_nodes=max_nodes)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(3):
        node = str(rng.choice(net.nodes))
        others = [v for v in net.nodes if v != node]
        k = int(rng.integers(1, min(len(others), 5) + 1))
        q = [str(x) for x in rng.choice(others, size=k, replace=False)]
        out.append((node, q))
    return net, out


@pytest.mark.parametrize("seed", range(80))
def test_max_influence_matches_pgmpy_ve(seed):
    net, cases = _cases(3000 + seed, max_nodes=12 if seed % 2 else 8)
    theta = net.to_theta()
    models = net.to_pgmpy()
    for node, q in cases:
        per_member = [ref.influence_from_joint(ve_joint(m, [node, *q], net.states))
                      for m in models]
        want = max(per_member)
        got = max_influence(theta, node, q)
        where = (seed, node, q)
        if math.isinf(want):
            assert math.isinf(got.value), where
            continue
        assert math.isfinite(got.value), where
        # Rounded upwards, never below the independent value, and within 1e-9 of it.
        assert got.value >= want - 1e-12, where
        assert got.value == pytest.approx(want, rel=1e-9, abs=1e-9), where
        assert got.value <= want * (1 + 2 * ROUNDING_MARGIN) + 2 * ROUNDING_MARGIN + 1e-12, where
        # The reported member attains it.
        assert got.member is not None
        assert per_member[got.member] == pytest.approx(want, rel=1e-9, abs=1e-9), where


@pytest.mark.parametrize("seed", range(30))
def test_joint_marginal_matches_pgmpy_ve(seed):
    net, cases = _cases(4000 + seed, max_nodes=12 if seed % 2 else 8)
    theta = net.to_theta()
    models = net.to_pgmpy()
    for node, q in cases:
        nodes = [*q, node]  # an order that is not the network's
        for k, model in enumerate(models):
            want = ve_joint(model, nodes, net.states)
            got = joint_marginal(theta, nodes, k)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
            assert got.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_joint_marginal_matches_full_joint(seed):
    """Same check against the dense product of all CPDs (no elimination at all)."""
    net = ref.random_network(5000 + seed, min_nodes=3, max_nodes=8)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    for k in range(len(net.members)):
        full = ref.full_joint(net, k)
        for _ in range(4):
            size = int(rng.integers(1, len(net.nodes) + 1))
            nodes = [str(x) for x in rng.choice(net.nodes, size=size, replace=False)]
            np.testing.assert_allclose(joint_marginal(theta, nodes, k),
                                       ref.marginal(net, full, nodes), rtol=0, atol=1e-12)


def test_zero_and_deterministic_cases():
    """Hand-checked values: exact zeros give +inf, an empty quilt 0, a copy gives log ratios."""
    from quiltpriv.model.network import theta_from_tables

    # i -> q with P(q | i): column i=0 is (0.5, 0.5, 0), column i=1 is (0.25, 0.25, 0.5)
    states = {"i": (0, 1), "q": (0, 1, 2)}
    cpd = {"i": np.array([0.3, 0.7]),
           "q": np.array([[0.5, 0.25], [0.5, 0.25], [0.0, 0.5]])}
    theta = theta_from_tables([("i", "q")], states, cpd)
    assert math.isinf(max_influence(theta, "i", ["q"]).value)  # q=2 possible only under i=1
    assert max_influence(theta, "i", []).value == 0.0
    # Without the zero: log(0.5/0.25) = log 2 (and reversed: log(0.5/0.5) = 0 for q = 2).
    cpd2 = {"i": np.array([0.3, 0.7]),
            "q": np.array([[0.5, 0.25], [0.25, 0.25], [0.25, 0.5]])}
    theta2 = theta_from_tables([("i", "q")], states, cpd2)
    v = max_influence(theta2, "i", ["q"]).value
    assert v >= math.log(2)
    assert v == pytest.approx(math.log(2), rel=1e-9)
    # A value of i with zero probability is not among the pairs (Definition 8): the influence
    # is 0, reported with the rounding margin every non-empty quilt carries.
    cpd3 = {"i": np.array([0.0, 1.0]),
            "q": np.array([[0.5, 0.25], [0.5, 0.25], [0.0, 0.5]])}
    assert max_influence(theta_from_tables([("i", "q")], states, cpd3), "i",
                         ["q"]).value == ROUNDING_MARGIN
    # Theta = both: the max over members.
    both = theta_from_tables([("i", "q")], states, [cpd2, cpd3])
    assert both.members and max_influence(both, "i", ["q"]).value == v


@pytest.mark.parametrize("seed", range(20))
def test_members_with_different_evidence_orders(seed):
    """Members whose pgmpy CPDs list the parents in different orders (Theta aligns them)."""
    from quiltpriv.model.network import theta_from_pgmpy

    net = ref.random_network(6000 + seed, min_nodes=4, max_nodes=8, theta_size=3,
                             edge_prob=0.6)
    models = net.to_pgmpy(shuffle_evidence=seed)
    theta = theta_from_pgmpy(models)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        size = int(rng.integers(1, len(net.nodes) + 1))
        nodes = [str(x) for x in rng.choice(net.nodes, size=size, replace=False)]
        for k, model in enumerate(models):
            np.testing.assert_allclose(joint_marginal(theta, nodes, k),
                                       ve_joint(model, nodes, net.states), rtol=0, atol=1e-12)
        if len(nodes) > 1:
            want = max(ref.influence_from_joint(ve_joint(m, nodes, net.states)) for m in models)
            got = max_influence(theta, nodes[0], nodes[1:]).value
            if math.isinf(want):
                assert math.isinf(got)
            else:
                assert want - 1e-12 <= got == pytest.approx(want, rel=1e-9, abs=1e-9)
