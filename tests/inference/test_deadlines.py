"""Every long step of inference sees the deadline (issue: the time limit bounds the command).

The min-fill triangulation of the shared propagation (incremental keys, checked against a
from-scratch reference), its size cap and its deadline; the compiled kernel's budget in its
pricing and elimination loops (the LATE status); the pure-Python elimination's deadline.
"""

from __future__ import annotations

import math
import random
import time

import numpy as np
import pytest
import reference as ref

import quiltpriv.inference.influence as infl
from quiltpriv.inference import compiled, orders
from quiltpriv.inference import junction_tree as jt
from quiltpriv.inference.engines import kernel as kernel_engine
from quiltpriv.inference.influence import InfluenceTooExpensive, max_influence


def _reference_order(card, adj, fill, keep=()):
    """Greedy elimination recomputing every key from scratch at every step (slow, obvious):
    least (fill-in, weight, index), or (weight, index) without ``fill``; ``keep`` is never
    eliminated."""
    adj = [set(a) for a in adj]
    alive, order = set(range(len(adj))) - set(keep), []

    def key(v):
        nb = sorted(adj[v])
        w = card[v] * math.prod(card[u] for u in nb)
        missing = sum(1 for i, a in enumerate(nb) for b in nb[i + 1:] if b not in adj[a])
        return (missing if fill else 0, w, v)

    while alive:
        v = min(alive, key=key)
        for a in adj[v]:
            adj[a] |= adj[v] - {a}
            adj[a].discard(v)
        adj[v] = set()
        alive.discard(v)
        order.append(v)
    return order


def test_incremental_greedy_orders_equal_the_from_scratch_reference():
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(1, 28)
        parents = [sorted(rng.sample(range(j), min(j, rng.randint(0, 3)))) for j in range(n)]
        card = [rng.randint(2, 4) for _ in range(n)]
        for fill in (False, True):
            adj = jt._moral_adjacency(parents)
            want = _reference_order(card, adj, fill)
            got = orders.greedy_elimination(card, [set(a) for a in adj], fill)
            assert list(got.variables) == want
            assert [got.position[v] for v in want] == list(range(n))
            keep = rng.sample(range(n), rng.randint(0, min(n, 3)))
            got = orders.greedy_elimination(card, [set(a) for a in adj], fill, keep=keep)
            assert list(got.variables) == _reference_order(card, adj, fill, keep)


def test_a_querys_greedy_rank_is_the_reference_order_on_its_factor_graph():
    """The per-query order of the Python bucket engine is the same min-weight elimination, on
    the factor graph of the query's ancestral set, with its nodes kept (sparse node indices)."""
    rng = random.Random(6)
    for _ in range(200):
        n = rng.randint(2, 40)
        card = [rng.randint(2, 4) for _ in range(n)]
        used = sorted(rng.sample(range(n), rng.randint(1, n)))
        scopes = [tuple(sorted(rng.sample(used, rng.randint(1, min(4, len(used))))))
                  for _ in range(rng.randint(1, 12))]
        keep = set(rng.sample(used, rng.randint(0, min(3, len(used)))))
        rank, order = orders.greedy_rank([(sc, None, None) for sc in scopes], keep, card)
        present = sorted({u for sc in scopes for u in sc})
        local = {u: k for k, u in enumerate(present)}
        adj = [set() for _ in present]
        for sc in scopes:
            for a in sc:
                adj[local[a]].update(local[b] for b in sc if b != a)
        want = _reference_order([card[u] for u in present], adj, False,
                                [local[u] for u in keep if u in local])
        assert order == [present[k] for k in want]
        assert rank == {v: r for r, v in enumerate(order)}


def test_min_fill_stops_at_its_size_cap_and_at_the_deadline():
    theta = ref.lattice(600, 30)
    assert jt.fill_tree_structure(theta, max_weight=2**12) is None
    assert jt.fill_tree_structure(theta, max_weight=2**10) is None  # remembered: at once
    assert jt.fill_tree_structure(ref.lattice(600, 30), deadline=time.monotonic() - 1) is None
    small = ref.random_network(3, n_nodes=10, edge_prob=0.4, max_card=3).to_theta()
    full = jt.fill_tree_structure(small)
    assert full is not None
    assert jt.fill_tree_structure(small, max_weight=full.width) is full
    assert jt.fill_tree_structure(small, max_weight=full.width - 1) is None


def test_the_python_elimination_sees_the_deadline(monkeypatch):
    theta = ref.lattice(400, 20)
    with pytest.raises(InfluenceTooExpensive, match="time limit"):
        infl.max_influence_until(theta, "v5", ["v390"], deadline=time.monotonic() - 1,
                            engine="python")


def test_max_influence_time_limit_is_seconds_from_the_call():
    """The public ``time_limit`` (seconds) becomes the deadline the engines see: a budget far
    shorter than the elimination stops it, naming the time limit; ``time_limit`` is checked."""
    theta = ref.lattice(400, 20)
    with pytest.raises(InfluenceTooExpensive, match="time limit"):
        max_influence(theta, "v5", ["v390"], time_limit=1e-9, engine="python")
    with pytest.raises(InfluenceTooExpensive, match="time limit"):
        infl.influence_upper_bound(theta, "v5", ["v390"], time_limit=1e-9, engine="python")


@pytest.mark.skipif(not infl.compiled_kernel(), reason="the compiled kernel is not built here")
def test_the_kernel_returns_late_when_its_budget_has_passed():
    theta = ref.lattice(400, 20)
    net = kernel_engine._kernel_network(theta, 0)
    where = [theta.index["v5"], theta.index["v390"]]
    out = np.empty((2, 2))
    assert net.joint(where, out, 2**20, 0, -1.0) == compiled._KERNEL_OK  # no budget: as before
    assert net.joint(where, out, 2**20, 0, 0.0) == compiled._KERNEL_LATE
    assert net.price(where, 2**20, 0, 0.0) == -1.0
    assert net.influence(where, 2**20, 0, 0.0) == compiled._KERNEL_LATE
    assert net.price(where, 2**20, 0, 60.0) == net.price(where, 2**20)
    with pytest.raises(ValueError, match="budget"):
        net.price(where, 2**20, 0, math.nan)
    with pytest.raises(InfluenceTooExpensive, match="time limit"):
        infl.max_influence_until(theta, "v5", ["v390"], deadline=time.monotonic() - 1)
