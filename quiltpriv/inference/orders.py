"""Elimination orders of one query's factors, computed symbolically (no tables)."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any


def _greedy_rank(items: Sequence[tuple[tuple[int, ...], Any, Any]], keep: set[int],
                 cards: Sequence[int]) -> tuple[dict[int, int], list[int]]:
    """Greedy min-weight elimination order of one query's factors (symbolic, no tables).

    The weight of a variable is the size of the table its elimination builds (its own and its
    current neighbours' cardinalities); the query's nodes are never eliminated. Ties go to
    the lower node index, so the order is deterministic.
    """
    adj: dict[int, set[int]] = {}
    for scope, _, _ in items:
        for u in scope:
            adj.setdefault(u, set()).update(scope)
    for u, nb in adj.items():
        nb.discard(u)

    def weight(v: int) -> int:
        w = cards[v]
        for u in adj[v]:
            w *= cards[u]
        return w

    # Only the neighbours of an eliminated variable change weight, so the current weight is
    # kept per variable and a popped heap entry is stale exactly when it differs.
    current = {v: weight(v) for v in adj if v not in keep}
    heap = [(w, v) for v, w in current.items()]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        w, v = heapq.heappop(heap)
        if current.get(v) != w:
            continue
        del current[v]
        order.append(v)
        nb = adj.pop(v)
        for u in nb:
            au = adj[u]
            au.discard(v)
            au.update(nb)
            au.discard(u)
        for u in nb:
            if u not in keep:
                w = current[u] = weight(u)
                heapq.heappush(heap, (w, u))
    return {v: r for r, v in enumerate(order)}, order
