"""Partitions shared per quilt (quiltpriv.graph.shared_separation) equal markov_quilt's, one
walk per node (the obviously correct reference), on random networks and quilts."""

import numpy as np
import pytest

from quiltpriv.errors import ParameterError
from quiltpriv.graph.quilts import d_connected, markov_quilt
from quiltpriv.graph.shared_separation import FixedQuiltReach, QuiltPartitions
from quiltpriv.model.network import theta_from_tables


def _random_dag(rng, m, p):
    names = [f"v{k:02d}" for k in range(m)]
    order = rng.permutation(m)
    edges = [(names[order[a]], names[order[b]]) for a in range(m) for b in range(a + 1, m)
             if rng.random() < p]
    parents = {v: [a for a, b in edges if b == v] for v in names}
    cpds = {v: np.full((2,) + (2,) * len(parents[v]), 0.5) for v in names}
    return theta_from_tables(edges, {v: (0, 1) for v in names}, cpds)


@pytest.mark.parametrize("seed", range(40))
def test_shared_walk_equals_one_walk_per_node(seed):
    rng = np.random.default_rng(4100 + seed)
    m = int(rng.integers(1, 40))
    theta = _random_dag(rng, m, float(rng.choice([0.05, 0.1, 0.2, 0.4])))
    for _ in range(4):
        k = int(rng.integers(0, m))
        quilt = sorted(rng.choice(theta.nodes, size=k, replace=False).tolist()) if k else []
        walk = FixedQuiltReach(theta, quilt)
        # sources in a random order: each later one reuses what the earlier ones closed
        for node in rng.permutation([v for v in theta.nodes if v not in quilt]).tolist():
            assert walk.partition(node) == markov_quilt(theta, node, quilt), (seed, quilt)
            assert walk.reached(node) == d_connected(theta, node, quilt)


@pytest.mark.parametrize("seed", range(20))
def test_partitions_of_many_pairs_equal_markov_quilt_and_share_equal_sets(seed):
    rng = np.random.default_rng(4200 + seed)
    theta = _random_dag(rng, int(rng.integers(2, 60)), float(rng.choice([0.05, 0.1, 0.3])))
    quilts = [sorted(rng.choice(theta.nodes, size=int(rng.integers(0, 4)),
                                replace=False).tolist()) for _ in range(3)]
    parts = QuiltPartitions(theta)
    got = {}
    for _ in range(3 * len(theta.nodes)):
        quilt = quilts[int(rng.integers(len(quilts)))]
        node = str(rng.choice([v for v in theta.nodes if v not in quilt] or [None]))
        if node == "None":
            continue
        got[node, tuple(quilt)] = q = parts.partition(node, quilt)
        assert q == markov_quilt(theta, node, quilt), (seed, node, quilt)
    by_value = {}
    for q in got.values():  # equal sets from one quilt's shared walk are one tuple object
        by_value.setdefault((q.quilt, q.nearby), []).append(q.nearby)
    shared = [ts for (quilt, _), ts in by_value.items() if len(ts) > 2]
    assert all(all(t is ts[-1] for t in ts[2:]) for ts in shared)


def test_a_quilt_holding_its_node_is_refused_as_markov_quilt_refuses_it():
    theta = _random_dag(np.random.default_rng(1), 6, 0.4)
    walk = FixedQuiltReach(theta, ["v01"])
    with pytest.raises(ParameterError, match="cannot contain 'v01'"):
        walk.partition("v01")
    with pytest.raises(ParameterError, match="cannot contain 'v01'"):
        markov_quilt(theta, "v01", ["v01"])


@pytest.mark.parametrize("seed", range(10))
def test_reached_equals_d_connected(seed):
    rng = np.random.default_rng(4300 + seed)
    theta = _random_dag(rng, int(rng.integers(2, 30)), 0.2)
    parts = QuiltPartitions(theta)
    quilts = [sorted(rng.choice(theta.nodes, size=int(rng.integers(0, 3)),
                                replace=False).tolist()) for _ in range(2)]
    for _ in range(40):
        quilt = quilts[int(rng.integers(2))]
        rest = [v for v in theta.nodes if v not in quilt]
        if rest:
            node = str(rng.choice(rest))
            assert parts.reached(node, quilt) == d_connected(theta, node, quilt)
