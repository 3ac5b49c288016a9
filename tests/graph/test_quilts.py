"""Markov quilts (quiltpriv.graph.quilts): d-separation against networkx, and the least-influence
quilt ``Q*(T)`` against brute force over every quilt (tests/reference.py) on seeded random
networks."""

import networkx as nx
import numpy as np
import pytest
import reference as ref

from quiltpriv.errors import ParameterError
from quiltpriv.graph.quilts import d_connected, least_influence_quilt, markov_quilt
from quiltpriv.model.network import theta_from_tables

ABS = 1e-12  # as in tests/mechanisms/test_bruteforce.py: sums in different orders


@pytest.mark.parametrize("seed", range(60))
def test_least_influence_quilt_beats_every_feasible_quilt(seed):
    """Q*(T) is feasible for T and no feasible quilt has smaller influence (brute force)."""
    net = ref.random_network(50_000 + seed)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    node = str(rng.choice(net.nodes))
    records = ref.all_quilts(net, node)
    others = [v for v in net.nodes if v != node]
    targets_list = [()] + [tuple(rng.choice(others, size=int(rng.integers(1, len(others) + 1)),
                                            replace=False)) for _ in range(4)] if others else [()]
    for targets in targets_list:
        t = set(targets)
        q = set(least_influence_quilt(theta, node, t))
        assert q <= t
        rec = next(r for r in records if r.quilt == frozenset(q))
        assert t <= rec.quilt | rec.remote, (seed, node, targets, q)
        best = min(r.influence for r in records if t <= r.quilt | r.remote)
        assert rec.influence <= best + ABS or rec.influence == best, (seed, node, targets, q)


@pytest.mark.parametrize("seed", range(40))
def test_d_connected_matches_networkx(seed):
    rng = np.random.default_rng(900 + seed)
    m = int(rng.integers(1, 15))
    names = [f"v{k}" for k in range(m)]
    order = rng.permutation(m)
    p = float(rng.choice([0.1, 0.2, 0.35, 0.5]))
    edges = [(names[order[a]], names[order[b]]) for a in range(m) for b in range(a + 1, m)
             if rng.random() < p]
    states = {v: (0, 1) for v in names}
    parents = {v: [a for a, b in edges if b == v] for v in names}
    cpds = {v: np.full((2,) + (2,) * len(parents[v]), 0.5) for v in names}
    theta = theta_from_tables(edges, states, cpds)
    g = nx.DiGraph()
    g.add_nodes_from(names)
    g.add_edges_from(edges)
    for _ in range(25):
        src = str(rng.choice(names))
        rest = [v for v in names if v != src]
        k = int(rng.integers(0, len(rest) + 1))
        z = set(rng.choice(rest, size=k, replace=False).tolist()) if k else set()
        got = d_connected(theta, src, z)
        want = {src} | {v for v in rest if v not in z and not nx.is_d_separator(g, {src}, {v}, z)}
        assert got == want, (seed, src, sorted(z), edges)


@pytest.mark.parametrize("seed", range(30))
def test_markov_quilt_partition_matches_sorted_reference(seed):
    """The one-pass split of N and R equals the sort-based partition it replaced (each set in
    the network's order, N from networkx's d-separation) on random networks and quilts."""
    net = ref.random_network(70_000 + seed)
    theta = net.to_theta()
    g = nx.DiGraph()
    g.add_nodes_from(theta.nodes)
    g.add_edges_from(theta.edges)
    rng = np.random.default_rng(seed)
    for node in theta.nodes:
        rest = [v for v in theta.nodes if v != node]
        k = int(rng.integers(0, len(rest) + 1))
        q = set(rng.choice(rest, size=k, replace=False).tolist()) if k else set()
        got = markov_quilt(theta, node, q)
        near = {node} | {v for v in rest
                         if v not in q and not nx.is_d_separator(g, {node}, {v}, q)}
        remote = set(theta.nodes) - near - q
        assert got.quilt == theta.sort(q)
        assert got.nearby == theta.sort(near), (seed, node, sorted(q))
        assert got.remote == theta.sort(remote), (seed, node, sorted(q))
        assert type(got.nearby) is tuple and type(got.remote) is tuple


@pytest.mark.parametrize("seed", range(30))
def test_quilt_index_answers_as_the_per_node_functions(seed):
    """QuiltIndex (walks from the attributes, shared by every node) gives exactly
    least_influence_quilt and the attributes of markov_quilt's N, for every node and target."""
    from itertools import combinations

    from quiltpriv.graph.quilts import QuiltIndex

    net = ref.random_network(70_000 + seed, min_nodes=3, max_nodes=12)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    attrs = [str(v) for v in rng.choice(net.nodes, min(4, len(net.nodes)), replace=False)]
    index = QuiltIndex(theta, attrs)
    checked = 0
    for node in theta.nodes:
        others = [a for a in attrs if a != node]
        for r in range(len(others) + 1):
            for targets in combinations(others, r):
                q = index.least_influence_quilt(node, targets)
                assert q == least_influence_quilt(theta, node, targets), (node, targets)
                near = markov_quilt(theta, node, q).nearby
                assert index.nearby_attributes(node, q) == theta.sort(
                    set(near) & set(attrs)), (node, q)
                checked += 1
    assert checked >= len(theta.nodes)
    with pytest.raises(ParameterError):
        index.least_influence_quilt(attrs[0], attrs[:1])
    outside = [v for v in theta.nodes if v not in attrs]
    if outside:
        with pytest.raises(ParameterError):
            index.least_influence_quilt(attrs[0], outside[:1])
