"""The batched propagation of ``P(phi_v, phi_A)`` for every node against the full joint."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from marks import fast_sample
from reference import full_joint, marginal, random_network, reference_influence

from quiltpriv.errors import ParameterError
from quiltpriv.inference.attribute_joints import (
    attribute_joints,
    joint_influence,
)
from quiltpriv.inference.influence import max_influence, subnormals_kept
from quiltpriv.model.network import theta_from_tables


def _attributes(net, seed: int) -> list[str]:
    rng = np.random.default_rng(seed + 1000)
    k = int(rng.integers(1, min(3, len(net.nodes)) + 1))
    return [str(v) for v in rng.choice(list(net.nodes), k, replace=False)]


@pytest.mark.parametrize("seed", fast_sample(range(60), 15))
def test_every_node_joint_equals_the_full_joint(seed):
    net = random_network(seed, min_nodes=2, max_nodes=8)
    theta = net.to_theta()
    attrs = theta.sort(_attributes(net, seed))
    for m in range(len(theta.members)):
        aj = attribute_joints(theta, attrs, m)
        assert aj is not None  # the reference networks have no tiny entries
        joint = full_joint(net, m)
        for v in theta.nodes:
            if v in attrs:  # the table keeps v's own axis among A's: its diagonal
                got = aj.tables[theta.index[v]]
                k = attrs.index(v)
                want = marginal(net, joint, list(attrs))
                diag = np.moveaxis(np.diagonal(got, axis1=0, axis2=1 + k), -1, k)
                np.testing.assert_allclose(diag, want, rtol=1e-12, atol=1e-300)
                continue
            want = marginal(net, joint, [v, *attrs])
            np.testing.assert_allclose(aj.tables[theta.index[v]], want, rtol=1e-12,
                                       atol=1e-300)


@pytest.mark.parametrize("seed", fast_sample(range(60), 15))
def test_joint_influence_is_never_below_the_definition(seed):
    net = random_network(seed, min_nodes=2, max_nodes=8)
    theta = net.to_theta()
    attrs = theta.sort(_attributes(net, seed))
    joints = [attribute_joints(theta, attrs, m) for m in range(len(theta.members))]
    exact = [full_joint(net, m) for m in range(len(theta.members))]
    checked = 0
    for v in theta.nodes:
        q = [a for a in attrs if a != v]
        if not q:
            continue
        got = joint_influence(theta, joints, v, q)
        ref = reference_influence(net, v, q, exact)
        one = max_influence(theta, v, q)
        checked += 1
        if math.isinf(ref):
            assert math.isinf(got.value) and math.isinf(one.value)
            continue
        assert ref <= got.value <= ref + 1e-6 * (1 + ref)
        assert got.value == pytest.approx(one.value, rel=1e-6, abs=1e-6)
        assert got.member is not None and got.pair is not None
    assert checked or len(attrs) == 1


def _tiny_chain(p: float):
    """i -> a -> b with P(a=1 | i) = p * (1, 2) and P(b=1 | a=1) = p: ``P(a=1, b=1)`` is about
    ``p**2``, which underflows for tiny ``p``."""
    edges = [("i", "a"), ("a", "b")]
    states = {"i": [0, 1], "a": [0, 1], "b": [0, 1]}
    tables = {"i": np.array([0.5, 0.5]),
              "a": np.array([[1 - p, 1 - 2 * p], [p, 2 * p]]),
              "b": np.array([[0.5, 1 - p], [0.5, p]])}
    return theta_from_tables(edges, states, tables)


def test_an_underflow_stops_the_propagation():
    # P(a=1, b=1) = 1.5 p^2 (~1e-400) is below float64's range: the IEEE flag stops it
    assert subnormals_kept()
    assert attribute_joints(_tiny_chain(1e-200), ["a", "b"], 0) is None
    # the same network with moderate numbers propagates, and agrees with elimination
    theta = _tiny_chain(1e-3)
    aj = attribute_joints(theta, ["a", "b"], 0)
    assert aj is not None
    got = joint_influence(theta, [aj], "i", ["a", "b"])
    assert got.value == pytest.approx(max_influence(theta, "i", ["a", "b"]).value, rel=1e-9)
    assert got.value >= math.log(2)  # P(a=1|i=1) / P(a=1|i=0) = 2, and b adds to it


def test_budgets_refuse_rather_than_grow():
    theta = _tiny_chain(1e-3)
    assert attribute_joints(theta, ["a", "b"], 0, max_work=10) is None
    assert attribute_joints(theta, ["a", "b"], 0, max_held=10) is None
    assert attribute_joints(theta, ["a", "b"], 0, deadline=time.monotonic() - 1) is None
    assert attribute_joints(theta, ["a", "b"], 0, deadline=time.monotonic() + 60) is not None


def test_the_result_counts_against_max_held():
    """The result (one table of card(v) x joint states of A per node) is held too: on a long
    chain it outweighs the messages, and a budget below it refuses."""
    from quiltpriv.inference.attribute_joints import _Rooted, propagation_work
    from quiltpriv.inference.junction_tree import cardinalities, fill_tree_structure

    n = 300
    names = [f"x{k}" for k in range(n)]
    rng = np.random.default_rng(5)
    tables = {names[0]: np.array([0.3, 0.7])}
    for k in range(1, n):
        tables[names[k]] = rng.dirichlet(np.ones(2), size=2).T
    theta = theta_from_tables([(names[k - 1], names[k]) for k in range(1, n)],
                              {v: [0, 1] for v in names}, tables)
    attrs = [names[10], names[150], names[290]]
    structure = fill_tree_structure(theta)
    cards = cardinalities(theta)
    idx = sorted(theta.index[a] for a in attrs)
    result = sum(cards) * 8
    rooted = _Rooted(structure, idx, cards)
    working = (rooted.held + 2 * structure.width * 8 + structure.width
               + 2 * max(cards) * 8)
    assert working < result  # the case this test is for
    assert propagation_work(theta, attrs) == 2 * structure.size * 8
    assert attribute_joints(theta, attrs, 0, max_held=working + result - 1) is None
    aj = attribute_joints(theta, attrs, 0, max_held=working + result)
    assert aj is not None
    assert sum(t.size for t in aj.tables) == result


def test_bad_arguments_are_refused():
    theta = _tiny_chain(1e-3)
    aj = attribute_joints(theta, ["a"], 0)
    with pytest.raises(ParameterError):
        joint_influence(theta, [aj], "i", ["b"])  # b is not among the joints' attributes
    with pytest.raises(ParameterError):
        joint_influence(theta, [aj], "a", ["a"])
    with pytest.raises(ParameterError):
        joint_influence(theta, [], "i", ["a"])


def test_progress_is_reported_per_pass():
    from quiltpriv.inference.junction_tree import fill_tree_structure
    from quiltpriv.utils.progress import observe

    theta = _tiny_chain(1e-3)
    seen = []
    with observe(lambda done, total: seen.append((done, total))):
        assert attribute_joints(theta, ["a", "b"], 0, progress=True) is not None
    cliques = len(fill_tree_structure(theta).cliques)
    assert seen.count((cliques, cliques)) == 2 and seen.count((0, cliques)) == 2


@pytest.mark.parametrize("seed", range(6))
def test_the_memory_estimate_bounds_what_the_propagation_allocates(seed):
    """numpy reports its allocations to tracemalloc: the propagation's peak stays within the
    entries ``max_held`` is compared with (messages up and down, a clique's visit, the
    result), eight bytes each, plus the fixed cost of the Python objects around them."""
    import tracemalloc

    from quiltpriv.inference.attribute_joints import _Rooted
    from quiltpriv.inference.junction_tree import cardinalities, fill_tree_structure

    net = random_network(7700 + seed, n_nodes=60, edge_prob=0.08, max_card=3)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    attrs = theta.sort([str(v) for v in rng.choice(list(net.nodes), 4, replace=False)])
    structure = fill_tree_structure(theta)
    cards = cardinalities(theta)
    idx = sorted(theta.index[a] for a in attrs)
    batch = math.prod(cards[a] for a in idx)
    estimate = (_Rooted(structure, idx, cards).held
                + 2 * structure.width * batch + structure.width + 2 * max(cards) * batch
                + sum(cards) * batch)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        aj = attribute_joints(theta, attrs, 0)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert aj is not None
    assert peak <= 8 * estimate + 2**20, (peak, 8 * estimate)
