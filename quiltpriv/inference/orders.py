"""Greedy elimination orders, computed symbolically (no tables): the one Python implementation
of min-weight and min-fill.

:func:`greedy_elimination` triangulates a graph given as adjacency sets: the network's moral
graph (the junction trees of :mod:`quiltpriv.inference.junction_tree`, whose global min-weight
order bucket elimination restricts to each query) or one query's factor graph
(:func:`greedy_rank`, the per-query order of :mod:`quiltpriv.inference.engines.bucket`).
The compiled kernel prices its own orders in C (``quiltpriv/inference/_kernel.c``), by the same
rules; variable elimination (:mod:`quiltpriv.inference.engines.elimination`) orders by the
size of the table a step leaves (min-size), lazily, on named variables.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

__all__ = ["Elimination", "TreeDeadline", "TreeStepTooLarge", "fill_in", "greedy_elimination",
           "greedy_rank"]


class TreeStepTooLarge(Exception):
    """A query step would exceed its table limit (the caller falls back or raises)."""


class TreeDeadline(Exception):
    """The deadline passed while a triangulation was being built (the caller gives up on
    what needed it)."""



class Elimination(NamedTuple):
    """A greedy elimination of a graph (min-weight or min-fill, :func:`greedy_elimination`)."""

    cliques: tuple[tuple[int, ...], ...]
    """Per step, the eliminated variable with its neighbours at that time, sorted."""
    variables: tuple[int, ...]
    """The variable eliminated at each step."""
    position: tuple[int, ...]
    """Per variable, its step (the inverse of ``variables``; 0 for a kept variable)."""



def greedy_elimination(card: Sequence[int], adj: list[set[int]], fill: bool = False,
                       max_weight: int | None = None, deadline: float | None = None,
                       keep: Collection[int] = ()) -> Elimination:
    """Eliminate every variable but ``keep`` in a greedy order (``adj``, the graph's adjacency
    per variable ``0 .. n-1``, is consumed).

    Min-weight by default: the weight is the product of the cardinalities of a variable and
    its current neighbours. With ``fill``, min-fill: the number of fill-in edges first, then
    the weight. Ties by node index. Both keys are kept incrementally (a fill-in edge
    ``a - b`` changes the fill-in of ``a``, of ``b`` and of their common neighbours only; a
    removed variable, that of its neighbours), with a heap whose outdated entries are skipped,
    so each step costs set operations over the neighbourhoods it touches, not a sum over
    every pair of neighbours of every neighbour.

    Variables in ``keep`` are never eliminated (a query's own nodes), but they count in their
    neighbours' weights and fill-ins.

    Raises :class:`TreeStepTooLarge` as soon as a variable to eliminate next has a weight
    above ``max_weight`` (its clique alone exceeds it), and :class:`TreeDeadline` when
    ``deadline`` (``time.monotonic()``) passes.
    """
    n = len(adj)
    kept = [False] * n
    for v in keep:
        kept[v] = True
    weight = [card[v] * math.prod(card[u] for u in adj[v]) for v in range(n)]
    missing = [fill_in(adj, v) for v in range(n)] if fill else [0] * n

    def key(v: int) -> tuple[int, int]:
        return missing[v], weight[v]

    heap = [(key(v), v) for v in range(n) if not kept[v]]
    heapq.heapify(heap)
    eliminated = [False] * n
    pos = [0] * n
    elim_cliques: list[tuple[int, ...]] = []
    elim_var: list[int] = []
    while heap:
        k, v = heapq.heappop(heap)
        if eliminated[v] or k != key(v):  # outdated: a fresher entry of v is in the heap
            continue
        if max_weight is not None and weight[v] > max_weight:
            raise TreeStepTooLarge(f"an elimination clique of {weight[v]} entries")
        if deadline is not None and len(elim_var) % 16 == 0 and time.monotonic() > deadline:
            raise TreeDeadline("the deadline passed while triangulating")
        nb = adj[v]
        pos[v] = len(elim_cliques)
        elim_cliques.append(tuple(sorted((v, *nb))))
        elim_var.append(v)
        eliminated[v] = True
        changed = set(nb)
        members = list(nb)
        for i, a in enumerate(members):  # fill-in: the neighbours become a clique
            adj_a = adj[a]
            for b in members[i + 1:]:
                if b in adj_a:
                    continue
                adj_b = adj[b]
                if fill:
                    common = adj_a & adj_b
                    for c in common:  # the pair (a, b) is no longer missing around c
                        missing[c] -= 1
                    missing[a] += len(adj_a) - len(common)
                    missing[b] += len(adj_b) - len(common)
                    changed |= common
                adj_a.add(b)
                adj_b.add(a)
                weight[a] *= card[b]
                weight[b] *= card[a]
        for a in members:  # remove v: its neighbours lose the pairs (v, x), x not near v
            adj_a = adj[a]
            adj_a.discard(v)
            weight[a] //= card[v]
            if fill:
                missing[a] -= len(adj_a) + 1 - len(members)
        changed.discard(v)
        for a in changed:
            if not kept[a]:
                heapq.heappush(heap, (key(a), a))
        adj[v] = set()
    return Elimination(tuple(elim_cliques), tuple(elim_var), tuple(pos))


def fill_in(adj: list[set[int]], v: int) -> int:
    """Pairs of neighbours of ``v`` that are not adjacent (the edges eliminating it adds)."""
    nb = adj[v]
    degree = len(nb)
    # each neighbour a is adjacent to |adj[a] & nb| others of them; pairs counted twice
    return (degree * (degree - 1) - sum(len(adj[a] & nb) for a in nb)) // 2


def greedy_rank(items: Sequence[tuple[tuple[int, ...], Any, Any]], keep: set[int],
                cards: Sequence[int]) -> tuple[dict[int, int], list[int]]:
    """Greedy min-weight elimination order of one query's factors (symbolic, no tables).

    ``items`` are the factors (their first field the scope, node indices); the query's nodes
    ``keep`` are never eliminated. Returns each eliminated variable's rank and the order.
    The weight of a variable is the size of the table its elimination builds (its own and its
    current neighbours' cardinalities); ties go to the lower node index (the variables are
    renumbered in increasing order for :func:`greedy_elimination`, which keeps ties), so the
    order is deterministic.
    """
    variables = sorted({u for scope, _, _ in items for u in scope})
    local = {u: k for k, u in enumerate(variables)}
    adj: list[set[int]] = [set() for _ in variables]
    for scope, _, _ in items:
        ids = [local[u] for u in scope]
        for a in ids:
            adj[a].update(ids)
    for a, nb in enumerate(adj):
        nb.discard(a)
    elimination = greedy_elimination([cards[u] for u in variables], adj,
                                     keep=[local[u] for u in keep if u in local])
    order = [variables[k] for k in elimination.variables]
    return {v: r for r, v in enumerate(order)}, order
