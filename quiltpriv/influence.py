"""Max-influence of a quilt on a sensitive attribute (Definition 8).

    e_Theta(Q | i) = max_theta max_{a,b} max_q log P(phi_Q=q | phi_i=a) / P(phi_Q=q | phi_i=b)

over values ``a, b`` of ``phi_i`` with positive probability under ``theta``; ``+inf`` when some
``q`` is possible under ``a`` and impossible under ``b``; ``0`` for ``Q = {}``. Per joint state
``q`` it is ``log max_a P(q | a) - log min_b P(q | b)``, so only the joint of ``(phi_i, phi_Q)``
is needed. It is computed exactly by variable elimination on the ancestral subgraph of
``{i} + Q`` (barren nodes drop out), vectorised over joint states with ``numpy.einsum``, and
cached per ``(theta member, i, Q)``.

Floating point: the contraction rounds, so a computed ratio can be below the true one by a few
hundred ulps. Every returned influence is raised by :data:`ROUNDING_MARGIN` (relative and
absolute) so that it is never below the exact value; the tests compare with pgmpy to 1e-9.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .errors import QuiltPrivError
from .network import Theta

#: Upward rounding applied to every non-zero computed influence (relative and absolute). It
#: covers the rounding of the contraction (relative error ~1e-13 even on the largest bundled
#: networks) so that the influence used for a plan is never an under-estimate.
ROUNDING_MARGIN = 1e-10

#: Largest intermediate or output table (entries) the exact computation will build.
DEFAULT_MAX_TABLE = 2**25

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class InfluenceTooExpensive(QuiltPrivError):
    """The exact joint of ``(phi_i, phi_Q)`` needs a table larger than the allowed size."""


@dataclass(frozen=True)
class Influence:
    """A max-influence value with the member of Theta and the pair that attain it."""

    node: str
    quilt: tuple[str, ...]
    value: float
    member: int | None
    pair: tuple[object, object] | None
    bound_via: tuple[str, ...] | None = None
    """``None`` when exact; else the separator ``S`` whose exact influence bounds this one."""

    @property
    def exact(self) -> bool:
        return self.bound_via is None


def joint_marginal(
    theta: Theta, nodes: Sequence[str], member: int = 0, *, max_table: int = DEFAULT_MAX_TABLE
) -> np.ndarray:
    """Exact ``P(phi_nodes)`` under one member of Theta, axes in the order of ``nodes``.

    Variable elimination over the ancestral set of ``nodes`` with a greedy min-size order.

    Raises
    ------
    InfluenceTooExpensive
        If the output or an intermediate factor would exceed ``max_table`` entries.
    """
    nodes = tuple(nodes)
    if len(set(nodes)) != len(nodes):
        raise ValueError("joint_marginal needs distinct nodes")
    card = theta.cardinality
    out_size = math.prod(card[v] for v in nodes)
    if out_size > max_table:
        raise InfluenceTooExpensive(
            f"the joint table over {len(nodes)} nodes has {out_size} entries "
            f"(limit {max_table})"
        )
    cpds = theta.members[member]
    anc = theta.ancestral_set(nodes)
    rank = theta.index
    factors: dict[int, tuple[tuple[str, ...], np.ndarray]] = {}
    where: dict[str, set[int]] = {v: set() for v in anc}
    for k, v in enumerate(sorted(anc, key=rank.__getitem__)):
        scope = (v, *theta.parents[v])
        factors[k] = (scope, cpds[v].table)
        for u in scope:
            where[u].add(k)
    next_id = len(factors)

    def cost(v: str) -> tuple[int, set[str]]:
        scope: set[str] = set()
        for k in where[v]:
            scope.update(factors[k][0])
        scope.discard(v)
        return math.prod(card[u] for u in scope), scope

    # Greedy min-size elimination order, kept incrementally: a heap of (cost, rank, var) with
    # lazy re-evaluation (a popped entry whose cost changed is pushed back), and fresh entries
    # for the neighbours of each eliminated variable.
    remaining = anc - set(nodes)
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
        if actual > max_table:
            raise InfluenceTooExpensive(
                f"exact elimination needs a factor of {actual} entries (limit {max_table})"
            )
        ks = sorted(where.pop(v))
        involved = [factors.pop(k) for k in ks]
        for vs, _ in involved:
            for u in vs:
                if u != v:
                    where[u].difference_update(ks)
        if len(involved) == 1:  # summing one factor out needs no product
            vs, t = involved[0]
            out_vars = tuple(u for u in vs if u != v)
            table = t.sum(axis=vs.index(v))
        else:
            out_vars = theta.sort(scope)
            table = _contract(involved, out_vars)
        factors[next_id] = (out_vars, table)
        for u in out_vars:
            where[u].add(next_id)
        next_id += 1
        remaining.discard(v)
        for u in out_vars:
            if u in remaining:
                heapq.heappush(heap, (cost(u)[0], rank[u], u))
    return _contract(list(factors.values()), nodes)


def _contract(
    factors: Sequence[tuple[tuple[str, ...], np.ndarray]], out_vars: Sequence[str]
) -> np.ndarray:
    """Multiply ``factors`` and sum out every variable not in ``out_vars`` (one einsum)."""
    names: dict[str, str] = {}
    for vs, _ in factors:
        for v in vs:
            if v not in names:
                if len(names) >= len(_LETTERS):
                    raise InfluenceTooExpensive("an elimination step involves over 52 variables")
                names[v] = _LETTERS[len(names)]
    for v in out_vars:
        if v not in names:  # cannot happen for a well-formed ancestral set
            raise AssertionError(f"output variable {v!r} appears in no factor")
    spec = ",".join("".join(names[v] for v in vs) for vs, _ in factors)
    spec += "->" + "".join(names[v] for v in out_vars)
    if not factors:
        return np.ones(())
    return np.einsum(spec, *(t for _, t in factors), optimize=len(factors) > 2)


def _influence_from_joint(joint: np.ndarray) -> tuple[float, int, int]:
    """``max_q log max_a P(q|a) / min_b P(q|b)`` from ``joint[a, q...]``, and the argmax pair."""
    j = joint.reshape(joint.shape[0], -1)
    p_i = j.sum(axis=1)
    valid = np.flatnonzero(p_i > 0)
    cond = j[valid] / p_i[valid, None]
    hi = cond.max(axis=0)
    lo = cond.min(axis=0)
    possible = hi > 0
    if np.any(possible & (lo == 0)):
        col = int(np.flatnonzero(possible & (lo == 0))[0])
        return math.inf, int(valid[cond[:, col].argmax()]), int(valid[cond[:, col].argmin()])
    if not np.any(possible):
        return 0.0, int(valid[0]), int(valid[0])
    with np.errstate(divide="ignore"):
        ratio = np.where(possible, np.log(hi) - np.log(np.where(possible, lo, 1.0)), -np.inf)
    col = int(ratio.argmax())
    value = float(ratio[col])
    return max(value, 0.0), int(valid[cond[:, col].argmax()]), int(valid[cond[:, col].argmin()])


def max_influence(
    theta: Theta,
    node: str,
    quilt: Iterable[str],
    *,
    max_table: int = DEFAULT_MAX_TABLE,
) -> Influence:
    """Exact max-influence ``e_Theta(Q | node)`` (Definition 8), rounded upwards.

    Parameters
    ----------
    theta : Theta
        The hyperparameter network(s).
    node : str
        The sensitive attribute ``i``.
    quilt : iterable of str
        The quilt ``Q`` (must not contain ``node``).
    max_table : int
        Largest table the exact computation may build.

    Returns
    -------
    Influence
        ``value`` is ``+inf`` when a joint state of ``Q`` is possible under one value of
        ``phi_i`` and impossible under another; ``0`` for ``Q = {}``.

    Raises
    ------
    InfluenceTooExpensive
        When the exact computation would exceed ``max_table`` (callers fall back to a bound
        or drop the candidate; they never guess).
    """
    (node,) = theta.check_nodes([node], "sensitive attribute")
    q = theta.sort(theta.check_nodes(quilt, "quilt node"))
    if node in q:
        raise ValueError(f"a quilt of {node!r} cannot contain {node!r} itself")
    if not q:
        return Influence(node, q, 0.0, None, None)
    best = Influence(node, q, -1.0, None, None)
    for m in range(len(theta.members)):
        key = ("influence", m, node, q)
        hit = theta._cache.get(key)
        if hit is None:
            joint = joint_marginal(theta, (node, *q), m, max_table=max_table)
            value, a, b = _influence_from_joint(joint)
            if value > 0 and math.isfinite(value):
                value = value * (1 + ROUNDING_MARGIN) + ROUNDING_MARGIN
            states = theta.states[node]
            hit = (value, (states[a], states[b]))
            theta._cache[key] = hit
        if hit[0] > best.value:
            best = Influence(node, q, hit[0], m, hit[1])
    return best


def influence_upper_bound(
    theta: Theta,
    node: str,
    quilt: Iterable[str],
    *,
    max_table: int = DEFAULT_MAX_TABLE,
) -> Influence:
    """``e_Theta(Q | node)`` exactly if affordable, else a proven upper bound.

    The bound is the data-processing inequality (spec fact 2): if ``S`` d-separates ``node``
    from ``Q - S`` then ``e(Q | node) <= e(S | node)``. ``S`` is the set of neighbours of
    ``node`` in the moral graph of the ancestral set of ``{node} + Q``; every other node of
    that graph, ``Q`` included, is separated from ``node`` by it, and separation in that graph
    implies d-separation. The result's ``bound_via`` names ``S``.

    Raises
    ------
    InfluenceTooExpensive
        When neither the exact value nor the bound is affordable (the caller must then not use
        the quilt: never a guess).
    """
    from .quilts import moral_ancestral_graph

    try:
        return max_influence(theta, node, quilt, max_table=max_table)
    except InfluenceTooExpensive as exc:
        q = theta.sort(quilt)
        adj = moral_ancestral_graph(theta, {node, *q})
        sep = theta.sort(adj[node])
        if set(sep) >= set(q):
            raise
        try:
            bound = max_influence(theta, node, sep, max_table=max_table)
        except InfluenceTooExpensive:
            raise InfluenceTooExpensive(
                f"{exc}; the data-processing bound via {list(sep)} is too expensive too"
            ) from None
        return Influence(node, q, bound.value, bound.member, bound.pair, bound_via=sep)
