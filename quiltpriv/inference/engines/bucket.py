"""Bucket elimination in Python over CPDs with single-child ancestors folded in once per
Theta, in the network's global min-weight order or a greedy order of the query's own.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from quiltpriv.inference.budget import InfluenceTooExpensive, _check_deadline_now
from quiltpriv.inference.cache import InferenceCache, Kind
from quiltpriv.inference.engines.base import (
    DEFAULT_SETTINGS,
    Answer,
    EngineSettings,
    JointQuery,
)
from quiltpriv.inference.engines.elimination import EliminationEngine
from quiltpriv.inference.factors import (
    MAX_VARIABLES,
    Factor,
    labelled_product_sum,
    product_sum,
)
from quiltpriv.inference.junction_tree import (
    cardinalities,
    is_floating,
    parent_indices,
    sorted_tables,
    tree_structure,
)
from quiltpriv.inference.orders import greedy_rank
from quiltpriv.inference.rounding import _elim_depth
from quiltpriv.inference.underflow import _float_safe_for, _log2_floors
from quiltpriv.model.network import Theta


class _FoldedFactor(NamedTuple):
    """A node's CPD with its private ancestors folded in (see ``_folded_factors``)."""

    private: frozenset[int]
    """The private ancestors summed out (usable only when none of them is queried)."""
    scope: tuple[int, ...]
    table: np.ndarray
    order: tuple[int, ...]
    """The elimination positions of ``scope``, ascending."""
    parents: tuple[int, ...]
    """The folded factor's variables other than the node (where the ancestral walk goes on)."""


class _Prepared(NamedTuple):
    """Everything bucket elimination reads about one member, computed once per Theta."""

    position: tuple[int, ...]
    """Per variable, its step in the global elimination order."""
    elimination_order: tuple[int, ...]
    scopes: tuple[tuple[int, ...], ...]
    """Per node, its CPD's variables in increasing index (the table's axis order)."""
    tables: tuple[np.ndarray, ...]
    by_position: tuple[tuple[int, ...], ...]
    """Per node, the elimination positions of its CPD's variables, ascending."""
    parents: tuple[tuple[int, ...], ...]
    cards: tuple[int, ...]
    folded: tuple[_FoldedFactor | None, ...]


#: The cache's kind for one member's :class:`_Prepared`, keyed by ``(member, fold limit, log2
#: floor)`` (:func:`_fold_key`).
PREPARED: Kind[tuple[int, int, int], _Prepared] = Kind("prepared")


class _Item(NamedTuple):
    """A factor of one query's ancestral set, with its variables' elimination positions."""

    scope: tuple[int, ...]
    table: np.ndarray
    order: tuple[int, ...]


@dataclass
class _Schedule:
    """Factors placed in buckets: bucket ``p`` eliminates the variable ``var_at[p]``."""

    buckets: dict[int, list[Factor]]
    final: list[Factor]
    """Factors over queried nodes only (multiplied together at the end)."""
    rank: Mapping[int, int] | Sequence[int]
    """Per variable, its bucket."""
    var_at: Sequence[int]
    end: int
    """The rank past every bucket (a factor with no variable left to eliminate)."""


class _Step(NamedTuple):
    """One elimination step: the factors multiplied and the variables summed out."""

    factors: list[Factor]
    gone: set[int]
    scope: set[int]
    size: int
    """Entries of the product of ``factors``."""
    next: int
    """The bucket that receives the result (``end``: the final factors)."""


def _bucket_eliminate(theta: Theta, nodes: Sequence[int], member: int,
                      max_table: int, *, greedy: bool = False,
                      merge_limit: int | None = None,
                      deadline: float | None = None,
                      settings: EngineSettings = DEFAULT_SETTINGS) -> np.ndarray | None:
    """Bucket elimination of the ancestral set of ``nodes`` (indices).

    By default the order is the global min-weight elimination order of the whole moral graph
    (:func:`quiltpriv.inference.junction_tree.tree_structure`) restricted to the ancestral set: the
    ancestral set's moral graph is a subgraph of the whole one, on which the restricted order
    creates no fill edge the global one does not, and it costs no per-query ordering work.
    The query's own nodes stay to the end, which can still enlarge tables; ``greedy=True``
    orders this query's factors by greedy min-weight instead. A node whose private ancestors
    are not queried enters already folded (``_folded_factors``). Each bucket is one
    product-and-sum. Returns ``None`` when a bucket would exceed ``max_table`` entries;
    raises :class:`InfluenceTooExpensive` once ``deadline`` passed (looked at every bucket).
    ``settings``: ``greedy_from``, ``merge_limit`` (unless given), and the folds'
    ``fold_limit`` and ``safe_log2_floor``.
    """
    key = (member, *_fold_key(settings))
    entries = InferenceCache.of(theta).entries(PREPARED)
    prepared = entries.get(key)
    if prepared is None:  # everything a query reads, in one cache entry
        prepared = entries[key] = _prepare(theta, member, settings)
    keep = set(nodes)
    if merge_limit is None:
        merge_limit = settings.merge_limit
    items, seen = _ancestral_items(prepared, nodes, keep)
    if greedy or len(items) >= settings.greedy_from:
        schedule = _greedy_schedule(items, keep, prepared.cards)
    else:
        schedule = _global_schedule(items, keep, prepared)
    buckets, final = schedule.buckets, schedule.final
    # One einsum label per variable of the query (einsum takes at most 52), else per step.
    label = {u: k for k, u in enumerate(seen)} if len(seen) <= MAX_VARIABLES else None
    heap = list(buckets)
    heapq.heapify(heap)
    while heap:
        step = _merged_step(schedule, heapq.heappop(heap), heap, keep, prepared.cards,
                            merge_limit)
        if step.size > max_table:
            return None
        _check_deadline_now(deadline, "an elimination")
        out, table = _product_sum_step(step, label)
        if step.next == schedule.end:
            final.append((out, table))
        elif step.next in buckets:
            buckets[step.next].append((out, table))
        else:
            buckets[step.next] = [(out, table)]
            heapq.heappush(heap, step.next)
    if label is None:
        return _einsum(final, sorted(keep), nodes)
    return labelled_product_sum(final, label, nodes)


def _fold_key(settings: EngineSettings) -> tuple[int, int]:
    """The settings the folds depend on (part of the cache keys of everything built on them)."""
    return settings.fold_limit, settings.safe_log2_floor


def _prepare(theta: Theta, member: int,
             settings: EngineSettings = DEFAULT_SETTINGS) -> _Prepared:
    """The per-member data of :func:`_bucket_eliminate` (the caller caches it)."""
    structure = tree_structure(theta)
    pos = structure.position
    folded = tuple(None if f is None else
                   _FoldedFactor(f[0], f[1], f[2], tuple(sorted(pos[w] for w in f[1])), f[3])
                   for f in _folded_factors(theta, member, settings))
    scopes, tables = sorted_tables(theta, member)
    return _Prepared(pos, structure.elimination_order, scopes, tables,
                     _scopes_by_position(theta), parent_indices(theta), cardinalities(theta),
                     folded)


def _ancestral_items(prepared: _Prepared, nodes: Sequence[int],
                     keep: set[int]) -> tuple[list[_Item], set[int]]:
    """The factors of the ancestral set of ``nodes``, and the set of its variables.

    A node enters with its private ancestors folded in when none of them is queried.
    """
    items: list[_Item] = []
    seen: set[int] = set()
    stack = list(nodes)
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        f = prepared.folded[v]
        if f is not None and keep.isdisjoint(f.private):
            scope, table, order, ups = f.scope, f.table, f.order, f.parents
        else:
            scope, table = prepared.scopes[v], prepared.tables[v]
            order, ups = prepared.by_position[v], prepared.parents[v]
        stack.extend(ups)
        items.append(_Item(scope, table, order))
    return items, seen


def _greedy_schedule(items: Sequence[_Item], keep: set[int],
                     cards: Sequence[int]) -> _Schedule:
    """Buckets in this query's own greedy min-weight order."""
    buckets: dict[int, list[Factor]] = {}
    final: list[Factor] = []
    rank, var_at = greedy_rank(items, keep, cards)
    n = len(var_at)
    for scope, table, _ in items:  # each factor goes to the bucket of its first variable
        first = min((rank[u] for u in scope if u not in keep), default=n)
        (final if first == n else buckets.setdefault(first, [])).append((scope, table))
    return _Schedule(buckets, final, rank, var_at, n)


def _global_schedule(items: Sequence[_Item], keep: set[int], prepared: _Prepared) -> _Schedule:
    """Buckets in the global elimination order restricted to the query's ancestral set."""
    buckets: dict[int, list[Factor]] = {}
    final: list[Factor] = []
    rank, var_at = prepared.position, prepared.elimination_order
    for scope, table, order in items:
        for p in order:
            if var_at[p] not in keep:
                buckets.setdefault(p, []).append((scope, table))
                break
        else:
            final.append((scope, table))
    return _Schedule(buckets, final, rank, var_at, len(rank))


def _next_bucket(scope: set[int], keep: set[int], gone: set[int], schedule: _Schedule) -> int:
    """The first bucket of a product over ``scope`` once ``gone`` is summed out."""
    rank = schedule.rank
    first = schedule.end
    for u in scope:
        if u not in keep and u not in gone and rank[u] < first:
            first = rank[u]
    return first


def _merged_step(schedule: _Schedule, p: int, heap: list[int], keep: set[int],
                 cards: Sequence[int], merge_limit: int) -> _Step:
    """Bucket ``p`` (removed from the schedule), chained with the buckets it feeds.

    Chain merging: when this step's result would go straight into the next bucket, eliminate
    both in one einsum (same output, one call and one placement fewer), while the product
    stays small. Merged buckets are popped from ``heap``.
    """
    buckets, var_at = schedule.buckets, schedule.var_at
    factors = buckets.pop(p)
    gone = {var_at[p]}
    scope_set: set[int] = set()
    size = 1
    for vs, _ in factors:
        scope_set.update(vs)
    for u in scope_set:
        size *= cards[u]
    first = _next_bucket(scope_set, keep, gone, schedule)
    while heap and heap[0] == first:
        extra: set[int] = set()
        for vs, _ in buckets[first]:
            extra.update(vs)
        extra -= scope_set
        grown = size
        for u in extra:
            grown *= cards[u]
        if grown > merge_limit:
            break
        heapq.heappop(heap)
        factors = factors + buckets.pop(first)
        gone.add(var_at[first])
        scope_set |= extra
        size = grown
        first = _next_bucket(scope_set, keep, gone, schedule)
    return _Step(factors, gone, scope_set, size, first)


def _product_sum_step(step: _Step, label: dict[int, int] | None) -> Factor:
    """Multiply a step's factors and sum out its eliminated variables."""
    factors, gone = step.factors, step.gone
    if len(factors) == 1:
        vs, t = factors[0]
        (v,) = gone
        return tuple(u for u in vs if u != v), t.sum(axis=vs.index(v))
    scope = tuple(step.scope)  # any fixed axis order will do
    out = tuple(u for u in scope if u not in gone)
    if label is None:
        return out, _einsum(factors, scope, out)
    return out, labelled_product_sum(factors, label, out)


def _folded_factors(theta: Theta, member: int,
                    settings: EngineSettings = DEFAULT_SETTINGS) -> tuple[Any, ...]:
    """Per node ``c``, its CPD with its *private* ancestors summed out, or ``None``.

    A parent ``u`` whose only child is ``c`` reaches any query only through ``c`` (or is queried
    itself), so whenever no private ancestor is queried, ``sum_u P(u | pa u) P(c | pa c)``
    replaces both CPDs: it is the elimination of ``u``, done once per Theta instead of per query.
    Applied recursively (``u``'s own private parents first) while the folded table stays within
    ``settings.fold_limit`` entries. Entries: ``(private, scope, table, parents)``.

    The folds run in numpy, which cannot report an underflow, and the kernel's underflow check
    starts after them; so a fold is made only where none of its intermediates can underflow:
    the product of the least positive entries of the CPDs it multiplies is at least
    ``2**settings.safe_log2_floor`` (see :func:`_float_safe`). Where it is not, the query
    eliminates the parent itself, under the kernel's check (or the Python path's own bound).
    """
    key = (member, *_fold_key(settings))
    hit = InferenceCache.of(theta).folded.get(key)
    if hit is not None:
        return hit
    scopes, tables = sorted_tables(theta, member)
    parents = parent_indices(theta)
    cards = cardinalities(theta)
    floors = _log2_floors(theta, member) if is_floating(theta, member) else None
    single = [len(theta.children[v]) == 1 for v in theta.nodes]
    out: list[Any] = [None] * len(theta.nodes)
    # per node, the summed log2 floors of the CPDs its table (folded or not) multiplies
    depth = list(floors) if floors is not None else [0] * len(theta.nodes)
    for c in range(len(theta.nodes)):  # topological: a parent's fold is ready before its child's
        scope, table = scopes[c], tables[c]
        private: frozenset[int] = frozenset()
        for u in parents[c]:
            if not single[u] or depth[c] + depth[u] < settings.safe_log2_floor:
                continue
            fu = out[u]
            u_scope, u_table = (fu[1], fu[2]) if fu is not None else (scopes[u], tables[u])
            union = sorted(set(scope) | set(u_scope))
            if math.prod(cards[w] for w in union) > settings.fold_limit:
                continue
            depth[c] += depth[u]
            new_scope = tuple(w for w in union if w != u)
            table = _einsum([(scope, table), (u_scope, u_table)], union, new_scope)
            scope = new_scope
            private = private | {u} | (fu[0] if fu is not None else frozenset())
        if private:
            out[c] = (private, scope, table, tuple(w for w in scope if w != c))
    hit = InferenceCache.of(theta).folded[key] = tuple(out)
    return hit


def _scopes_by_position(theta: Theta) -> tuple[tuple[int, ...], ...]:
    """Per node, the elimination positions of its CPD's variables, ascending (cached)."""
    hit = InferenceCache.of(theta).scopes_by_position.get()
    if hit is None:
        pos = tree_structure(theta).position
        scopes, _ = sorted_tables(theta, 0)
        hit = InferenceCache.of(theta).scopes_by_position.set(tuple(
            tuple(sorted(pos[u] for u in sc)) for sc in scopes))
    return hit


def _einsum(factors: Sequence[tuple[tuple[int, ...], np.ndarray]], every: Sequence[int],
            out: Sequence[int]) -> np.ndarray:
    """Multiply ``factors`` and keep ``out`` (:func:`~quiltpriv.inference.factors.product_sum`);
    a step over more than 52 variables is refused."""
    if len(every) > MAX_VARIABLES:
        raise InfluenceTooExpensive(
            f"an elimination step involves over {MAX_VARIABLES} variables")
    return product_sum(factors, every, out)


class BucketEngine:
    """``engine="python"``: bucket elimination in numpy over the per-Theta folds, in the
    network's global min-weight order restricted to the query, or the query's own greedy
    order where that one builds tables above ``settings.bucket_limit`` (or the query has
    ``settings.greedy_from`` factors or more); variable elimination where neither fits
    (:class:`~quiltpriv.inference.engines.base.Engine`)."""

    name = "python"

    def joint(self, query: JointQuery) -> Answer | None:
        theta, nodes, member = query.theta, query.nodes, query.member
        settings, deadline = query.settings, query.deadline
        if not _float_safe_for(theta, member, nodes, "auto", settings.safe_log2_floor):
            return None
        index = [theta.index[v] for v in nodes]
        table = _bucket_eliminate(theta, index, member,
                                  min(query.max_table, settings.bucket_limit),
                                  deadline=deadline, settings=settings)
        if table is None:  # the global order suits this query badly: order it greedily
            table = _bucket_eliminate(theta, index, member, query.max_table, greedy=True,
                                      deadline=deadline, settings=settings)
        if table is not None:
            return Answer(table, self.name, _elim_depth(theta, settings.merge_limit))
        return EliminationEngine().joint(query)
