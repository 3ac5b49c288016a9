"""Variable elimination in Python, in a greedy min-size order chosen per query.

The core's original path (``inference="elimination"``), also used for exact rational and
integer tables, for pricing an order on the factors' scopes alone, and as the fallback of the
other engines.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence

import numpy as np

from quiltpriv.errors import ParameterError
from quiltpriv.inference.budget import (
    DEFAULT_MAX_TABLE,
    InfluenceTooExpensive,
    _check_deadline_now,
    _check_step,
)
from quiltpriv.inference.engines.base import Answer, JointQuery
from quiltpriv.inference.factors import MAX_VARIABLES, product_sum
from quiltpriv.inference.rounding import _elim_depth
from quiltpriv.inference.underflow import SAFE_LOG2_FLOOR, _float_safe, _float_safe_for
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.validation import check_scalar


def elimination_work(theta: Theta, nodes: Sequence[str], *,
                     max_table: int = DEFAULT_MAX_TABLE, stop_above: float = math.inf) -> float:
    """Table entries variable elimination builds for ``P(phi_nodes)``, priced on the factors'
    scopes alone (no arithmetic; the same for every member of Theta).

    The order is the greedy min-size one of ``inference="elimination"``. A deterministic
    estimate of a query's cost that does not depend on whether the compiled kernel is built
    (the kernel's own orders may be cheaper). ``inf`` when a step would exceed ``max_table``.
    ``stop_above``: stop pricing once the work passes it (the result is then the work so far,
    above ``stop_above``; enough to decide a comparison at a fraction of the cost).
    """
    theta = check_theta(theta)
    nodes = theta.check_nodes(nodes, "node")
    if len(set(nodes)) != len(nodes):
        raise ParameterError("elimination_work needs distinct nodes")
    max_table = int(check_scalar(max_table, "max_table", integer=True, min_val=1))
    if not (isinstance(stop_above, (int, float)) and stop_above >= 0):
        raise ParameterError(f"stop_above must be a non-negative number, got {stop_above!r}")
    sizes: list[int] = []
    try:
        _eliminate(theta, tuple(nodes), theta.ancestral_set(nodes), 0, max_table,
                   price_only=True, sizes=sizes, stop_above=stop_above)
    except InfluenceTooExpensive:
        return math.inf
    return float(sum(sizes))


def _eliminate(theta: Theta, nodes: tuple[str, ...], anc: set[str], member: int,
               max_table: int, tables: Mapping[str, np.ndarray] | None = None,
               *, price_only: bool = False, fixed: Mapping[str, int] | None = None,
               checked: bool = False, sizes: list[int] | None = None,
               order: list[str] | None = None, stop_above: float = math.inf,
               deadline: float | None = None) -> np.ndarray:
    """Variable elimination of ``anc - nodes`` (greedy min-size order, lazily updated).

    ``tables`` replaces the member's CPD tables (axes ``(v, *parents)``), e.g. by the exact
    integer tables of :func:`_exact_tables`; any element type numpy's einsum can multiply and
    add will do. ``price_only``: walk the same order on the factors' scopes alone, raising
    :class:`InfluenceTooExpensive` exactly where the elimination would (the order and every
    refusal depend on the scopes only), without any arithmetic; returns an empty array.
    ``fixed`` conditions on variables (never in ``nodes``): each factor is sliced at their
    values and loses their axes, so the result is ``P(phi_nodes, fixed)``. ``checked``
    multiplies with numpy ufuncs instead of einsum, so that ``numpy.errstate`` sees every
    operation (:func:`_conditioned_joint`). A refusal's exception carries the refused step's
    variables as ``scope``. ``sizes`` and ``order``, when given, receive each step's table
    size and eliminated variable. ``stop_above`` (pricing only): stop once the steps' sizes
    sum above it. ``deadline`` (``time.monotonic()``): raise :class:`InfluenceTooExpensive`
    once it passes (looked at every 16 steps, and at every step that multiplies tables).
    """
    card = theta.cardinality
    rank = theta.index
    fixed = fixed or {}
    factors, where = _elimination_factors(theta, anc, member, tables, fixed, price_only)
    next_id = len(factors)
    contract = _checked_contract if checked and not price_only else _contract

    def cost(v: str) -> tuple[int, set[str]]:
        scope: set[str] = set()
        for k in where[v]:
            scope.update(factors[k][0])
        scope.discard(v)
        return math.prod(card[u] for u in scope), scope

    # Greedy min-size elimination order, kept incrementally: a heap of (cost, rank, var) with
    # lazy re-evaluation (a popped entry whose cost changed is pushed back), and fresh entries
    # for the neighbours of each eliminated variable.
    remaining = anc - set(nodes) - set(fixed)
    priced = 0
    heap = [(cost(v)[0], rank[v], v) for v in remaining]
    heapq.heapify(heap)
    while heap:
        c, r, v = heapq.heappop(heap)
        if v not in remaining:
            continue
        actual, scope = cost(v)
        if actual != c:
            heapq.heappush(heap, (actual, r, v))
            continue
        _check_step(actual, max_table, scope)
        if deadline is not None and (not price_only or len(remaining) % 16 == 0):
            _check_deadline_now(deadline, "an elimination")
        if sizes is not None:
            sizes.append(actual)
        if order is not None:
            order.append(v)
        priced += actual
        if price_only and priced > stop_above:
            return _PRICED
        involved = _take_factors(factors, where, v)
        if len(involved) == 1:  # summing one factor out needs no product
            vs, t = involved[0]
            out_vars = tuple(u for u in vs if u != v)
            table = _PRICED if price_only else t.sum(axis=vs.index(v))
        else:
            out_vars = theta.sort(scope)
            table = contract(involved, out_vars, price_only)
        factors[next_id] = (out_vars, table)
        for u in out_vars:
            where[u].add(next_id)
        next_id += 1
        remaining.discard(v)
        for u in out_vars:
            if u in remaining:
                heapq.heappush(heap, (cost(u)[0], rank[u], u))
    return contract(list(factors.values()), nodes, price_only)


def _elimination_factors(theta: Theta, anc: set[str], member: int,
                         tables: Mapping[str, np.ndarray] | None, fixed: Mapping[str, int],
                         price_only: bool) -> tuple[dict[int, tuple[tuple[str, ...], np.ndarray]],
                                                    dict[str, set[int]]]:
    """:func:`_eliminate`'s factors (each CPD of ``anc``, sliced at ``fixed``) and, per
    variable, the factors holding it."""
    cpds = theta.members[member]
    factors: dict[int, tuple[tuple[str, ...], np.ndarray]] = {}
    where: dict[str, set[int]] = {v: set() for v in anc if v not in fixed}
    for k, v in enumerate(sorted(anc, key=theta.index.__getitem__)):
        family = (v, *theta.parents[v])
        table = cpds[v].table if tables is None else tables[v]
        if fixed and not price_only and any(u in fixed for u in family):
            table = table[tuple(fixed.get(u, slice(None)) for u in family)]
        family = tuple(u for u in family if u not in fixed)
        factors[k] = (family, table)
        for u in family:
            where[u].add(k)
    return factors, where


def _take_factors(factors: dict[int, tuple[tuple[str, ...], np.ndarray]],
                  where: dict[str, set[int]], v: str) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """Remove and return the factors holding ``v``, unregistering them from their variables."""
    ks = sorted(where.pop(v))
    involved = [factors.pop(k) for k in ks]
    for vs, _ in involved:
        for u in vs:
            if u != v:
                where[u].difference_update(ks)
    return involved


def _checked_contract(factors: Sequence[tuple[tuple[str, ...], np.ndarray]],
                      out_vars: Sequence[str], price_only: bool = False) -> np.ndarray:
    """:func:`_contract` by broadcast products and sums (numpy ufuncs, which report underflow
    to ``numpy.errstate``; einsum does not). Same values up to rounding, same table sizes.
    ``price_only`` is there for the same signature: pricing walks use :func:`_contract`."""
    every: list[str] = []
    for vs, _ in factors:
        every.extend(u for u in vs if u not in every)
    product: np.ndarray = np.ones(())
    for vs, t in factors:
        shape = [1] * len(every)
        for u, n in zip(vs, np.shape(t), strict=True):
            shape[every.index(u)] = n
        order = sorted(range(len(vs)), key=lambda k: every.index(vs[k]))
        product = product * np.transpose(np.asarray(t, dtype=np.float64), order).reshape(shape)
    gone = tuple(k for k, u in enumerate(every) if u not in set(out_vars))
    if gone:
        product = product.sum(axis=gone)
    kept = [u for u in every if u in set(out_vars)]
    return np.transpose(product, [kept.index(u) for u in out_vars])


def _eliminate_if_it_fits(theta: Theta, nodes: tuple[str, ...], member: int,
                          max_table: int) -> np.ndarray:
    """:func:`_eliminate`, its greedy order priced on the scopes first.

    Used where its arithmetic is slow (exact rational tables; :func:`_python_float_joint` does
    the same for float64 after the kernel found no order): a query too large is refused at once
    instead of after the arithmetic of every step up to the one too large (seconds on dense
    networks). Same order, same refusals, same values.
    """
    anc = theta.ancestral_set(nodes)
    _eliminate(theta, nodes, anc, member, max_table, price_only=True)
    return _eliminate(theta, nodes, anc, member, max_table)


#: What :func:`_eliminate` and :func:`_contract` give in place of a table when pricing only.
_PRICED = np.empty(0)


def _contract(
    factors: Sequence[tuple[tuple[str, ...], np.ndarray]], out_vars: Sequence[str],
    price_only: bool = False,
) -> np.ndarray:
    """Multiply ``factors`` and sum out every variable not in ``out_vars`` (one einsum).

    ``price_only``: only the checks (an empty array when the product could be taken).
    """
    every: dict[str, None] = {}  # in order of appearance: each one einsum label
    for vs, _ in factors:
        every.update(dict.fromkeys(vs))
    if len(every) > MAX_VARIABLES:
        raise InfluenceTooExpensive(
            f"an elimination step involves over {MAX_VARIABLES} variables")
    for v in out_vars:
        if v not in every:  # cannot happen for a well-formed ancestral set
            raise AssertionError(f"output variable {v!r} appears in no factor")
    if price_only:
        return _PRICED
    return product_sum(factors, list(every), out_vars, optimize=len(factors) > 2)


def _python_float_joint(theta: Theta, nodes: tuple[str, ...], member: int,
                        max_table: int, deadline: float | None = None,
                        floor: int = SAFE_LOG2_FLOOR) -> np.ndarray | None:
    """``P(phi_nodes)`` by the Python order, for a query no order of the kernel fits; None where
    float64 is not provably free of underflow (the caller then computes exactly).

    The order is priced first, so that a query too large is refused at once, naming its
    float64 limit (the exact path's smaller limit would refuse it too, less tellingly).
    """
    anc = theta.ancestral_set(nodes)
    _eliminate(theta, nodes, anc, member, max_table, price_only=True, deadline=deadline)
    if not (_float_safe(theta, member, theta.nodes, floor)
            or _float_safe(theta, member, anc, floor)):
        return None
    return _eliminate(theta, nodes, anc, member, max_table, deadline=deadline)


class EliminationEngine:
    """``engine="elimination"``: variable elimination in a greedy min-size order of the
    query's own (:class:`~quiltpriv.inference.engines.base.Engine`)."""

    name = "elimination"

    def joint(self, query: JointQuery) -> Answer | None:
        theta, nodes, member = query.theta, query.nodes, query.member
        if not _float_safe_for(theta, member, nodes, "elimination",
                               query.settings.safe_log2_floor):
            return None
        table = _eliminate(theta, nodes, theta.ancestral_set(nodes), member, query.max_table,
                           deadline=query.deadline)
        return Answer(table, self.name, _elim_depth(theta, query.settings.merge_limit))
