"""The exact least-scale search over one sensitive attribute's quilts ([ZOC22, Alg. 3]).

The candidates are the quilts ``Q*(T)`` (:func:`quiltpriv.graph.quilts.least_influence_quilt`)
for sets ``T`` of query attributes kept out of ``N``; an all-or-nothing sensitivity needs two,
additive and general ones are searched by branch and bound (docs/concepts.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from quiltpriv.graph.quilts import least_influence_quilt, moral_ancestral_graph
from quiltpriv.inference.engines.base import EngineName
from quiltpriv.inference.influence import InfluenceTooExpensive, joint_marginal
from quiltpriv.mechanisms.apmqm.shared import _cancelled, _Shared
from quiltpriv.mechanisms.plan_status import PlanStatus, worse
from quiltpriv.mechanisms.quilt_price import candidate_key, quilt_scale
from quiltpriv.mechanisms.step_plans import TIME_LIMIT_REASON
from quiltpriv.model.network import Theta
from quiltpriv.queries.query import Query
from quiltpriv.utils.format import fmt_set as _set
from quiltpriv.utils.time_limit import TimeLimit, passed


@dataclass
class _Search:
    """Mutable state of one node's candidate search (kept when the search is interrupted)."""

    quilt: tuple[str, ...] | None
    """The chosen ``Q``; None for the trivial quilt (``Q = R = {}``, every attribute nearby)."""
    nearby_attributes: tuple[str, ...]
    """The query's attributes in the chosen quilt's nearby set ``N``."""
    scale: float
    delta: float
    key: tuple
    e: float = 0.0
    member: str | None = None
    pair: Any = None
    via: tuple[str, ...] | None = None
    arithmetic: str = "float64"
    engine: str | None = None
    considered: int = 1
    optimal: bool = True
    reasons: list[str] = field(default_factory=list)
    status: PlanStatus = PlanStatus.OPTIMAL

    def not_optimal(self, reason: str, status: PlanStatus) -> None:
        """Optimality is not proven, for ``reason`` (words) and ``status`` (data)."""
        self.optimal = False
        self.reasons.append(reason)
        self.status = worse(self.status, status)


#: Most target sets ``T`` the search of one sensitive attribute evaluates (each costs at most
#: one exact influence) before it stops with the best quilt found so far, flagged as not proven
#: optimal. Count and histogram queries need two; additive and general sensitivities are
#: searched by branch and bound, which this bounds.
DEFAULT_MAX_CANDIDATES = 100_000


#: Said when the plan is cancelled (:func:`plan`'s ``cancel``) during a search.
CANCELLED_REASON = "the plan was cancelled; this is the best quilt found so far"

#: Begins what is said when the candidate budget stops a search.
BUDGET_REASON = "the search stopped after its budget of"


#: The independent-parts bound (:class:`_PairBound`) is used by the branch and bound on
#: additive queries with at least this many attributes, and before an all-or-nothing query's
#: second candidate when its joint table would exceed this many entries.
PAIR_MIN_ITEMS = 8
PAIR_CHECK_SIZE = 2**16


class _Stop(Exception):
    """The search must stop now (time limit, cancellation or candidate budget): the message
    says which in words, ``status`` as data."""

    def __init__(self, message: str, status: PlanStatus) -> None:
        super().__init__(message)
        self.status = status


class _Candidates:
    """Evaluates the candidates ``Q*(T)`` of one sensitive attribute and keeps the best.

    ``memo`` maps each evaluated quilt to its exact influence (``None`` when only an upper
    bound, or nothing, is known); it holds at most ``max_candidates`` entries.
    """

    def __init__(self, theta: Theta, query: Query, node: str, eps: float, best: _Search,
                 max_table: int, time_limit: TimeLimit | None, engine: EngineName,
                 max_candidates: int, shared: _Shared) -> None:
        self.theta, self.query, self.node, self.eps, self.best = theta, query, node, eps, best
        self.shared = shared
        self.max_table, self.time_limit, self.engine = max_table, time_limit, engine
        self.max_candidates = max_candidates
        self.attrs = frozenset(query.attributes)
        self.memo: dict[tuple[str, ...], float | None] = {}
        self.evaluated = 0
        # Candidates whose exact influence is unknown: (lower bound on their scale, why).
        self.unresolved: list[tuple[float, str]] = []

    def resolve(self) -> None:
        """Optimality is not proven if a candidate with an unknown exact influence could
        still have a scale below the best one found."""
        for low, reason in self.unresolved:
            if low < self.best.scale:
                self.best.not_optimal(reason, PlanStatus.UNRESOLVED)

    def evaluate(self, target: frozenset[str], floor: float, lazy: bool = False) -> float:
        """Make ``Q*(target)`` a candidate; return a lower bound on ``e(Q*(T))`` for every
        ``T`` containing ``target``.

        ``floor`` is such a bound already known (from a subset of ``target``, or independent
        parts): ``e(Q*(T))`` is monotone in ``T``. The quilt's exact influence is one too; an
        upper bound is not. ``lazy``: skip the influence when ``floor`` alone shows that the
        quilt cannot beat the best scale (then ``floor`` is returned).
        """
        if passed(self.time_limit):
            raise _Stop(TIME_LIMIT_REASON, PlanStatus.TIME_LIMIT)
        if _cancelled(self.shared.cancel):
            raise _Stop(CANCELLED_REASON, PlanStatus.CANCELLED)
        if self.evaluated >= self.max_candidates:
            raise _Stop(f"{BUDGET_REASON} {self.max_candidates} candidate target sets",
                        PlanStatus.BUDGET)
        self.evaluated += 1
        theta, node, eps, best = self.theta, self.node, self.eps, self.best
        q = self.shared.quilt(node, target)
        if q in self.memo:
            known = self.memo[q]
            return floor if known is None else max(floor, known)
        near = self.shared.nearby_attributes(node, q)
        delta = self.query.sensitivity(near)
        if lazy and quilt_scale(delta, floor, eps) >= best.scale:
            return floor
        self.memo[q] = None
        try:
            infl = self.shared.influence(node, q)
        except InfluenceTooExpensive as exc:
            self.unresolved.append((quilt_scale(delta, floor, eps),
                                    f"quilt {_set(q)} skipped: {exc}"))
            return floor
        best.considered += 1
        e = infl.value
        scale = quilt_scale(delta, e, eps)
        if infl.exact:
            self.memo[q] = e
            floor = max(floor, e)
        else:
            # An upper bound: the scale is valid (more noise); the optimum is not proven
            # unless even the least influence this quilt can have would not beat the best.
            self.unresolved.append((quilt_scale(delta, floor, eps),
                                    f"the influence of {_set(q)} is an upper bound (data-"
                                    f"processing inequality via {_set(infl.bound_via or ())})"))
        key = candidate_key(scale, e, q, theta) + (0,)
        if key < best.key:
            best.key, best.quilt, best.scale, best.e, best.delta = key, q, scale, e, delta
            best.nearby_attributes = near
            best.via = infl.bound_via
            best.arithmetic = infl.arithmetic
            best.engine = infl.engine
            best.member = theta.names[infl.member] if infl.member is not None else None
            best.pair = infl.pair
        return floor


def _search(theta: Theta, query: Query, node: str, eps: float, best: _Search,
            max_table: int, time_limit: TimeLimit | None, engine: EngineName,
            max_candidates: int, shared: _Shared) -> None:
    """The exact least-scale search over the candidates ``Q*(T)`` (module docstring).

    ``T = {}`` (the quilt ``Q = {}``) first; then, by the query's sensitivity structure, the
    one other candidate an all-or-nothing sensitivity needs, or a branch and bound.
    """
    ctx = _Candidates(theta, query, node, eps, best, max_table, time_limit, engine,
                      max_candidates, shared)
    try:
        ctx.evaluate(frozenset(), 0.0)  # first: after the time limit it stops here, in O(1)
        others = [a for a in shared.trivial_terms()[0] if a != node]
        if query.sensitivity_structure == "all-or-nothing":
            # Delta_B is one value c whenever B meets the support A' (the attributes with
            # Delta_{j} > 0), else 0. A quilt with A' nearby has scale c / (eps - e) >= c / eps,
            # the scale of Q = {}; one with no attribute of A' nearby is dominated by
            # Q*(A'), whose influence is least among them. Impossible if i is in A'.
            support = [a for a in others if query.sensitivity((a,)) > 0]
            if support and not query.sensitivity((node,)) > 0:
                # Its scale is 0 or infinite; before a large joint, independent parts may
                # already show that it is infinite.
                q = shared.quilt(node, support)
                big = math.prod(theta.cardinality[v] for v in (node, *q)) > PAIR_CHECK_SIZE
                pairs = _PairBound(ctx, support, {}) if big else None
                if pairs is None or pairs.floors(support[1:], support[:1])[0] <= eps:
                    ctx.evaluate(frozenset(support), 0.0)
        else:
            _branch_and_bound(ctx, others)
    except _Stop as stop:
        best.not_optimal(str(stop), stop.status)
    finally:
        ctx.resolve()


def _branch_and_bound(ctx: _Candidates, others: list[str]) -> None:
    """Least ``Delta(A - T) / (eps - e(Q*(T)))`` over targets ``T`` (docs/concepts.md).

    A set-enumeration tree over ``T``: a node ``t`` with its available items ``U`` stands for
    the targets ``t + S``, ``S`` inside ``U``. Evaluating ``t + j`` for every ``j`` in ``U``
    (these are the node's children, each a candidate) gives ``e(t + S) >= e(t + j)`` for
    every ``j`` in ``S`` (monotonicity), and ``Delta(A - t - S)`` only grows as ``S`` shrinks;
    ``bound`` turns both into a lower bound on every scale below the node (and
    :class:`_PairBound` adds one for additive sensitivities), and a node whose bound is not
    below the best scale found is not searched. An item whose ``e(t + j)`` exceeds eps is
    dropped below ``t`` (every target containing it has an infinite scale).
    """
    query, node, eps, best = ctx.query, ctx.node, ctx.eps, ctx.best
    additive = query.sensitivity_structure == "additive"
    weight = {a: query.sensitivity((a,)) for a in others} if additive else {}
    # Additive: an attribute of weight 0 never lowers Delta, so keeping it out only costs.
    items = [a for a in others if weight[a] > 0] if additive else list(others)
    w_node = query.sensitivity((node,)) if additive else 0.0
    bounds = _ScaleBound(query, ctx.attrs, eps, additive, weight)
    stack = [_SearchNode(frozenset(), 0.0, tuple(items), w_node, 0.0)]
    # The pair bound costs a walk of the whole moral graph and one small joint per item:
    # worth it on wide queries only.
    pairs = _PairBound(ctx, items, weight) if additive and len(items) >= PAIR_MIN_ITEMS else None
    while stack:
        t, e_t, avail, excluded, pre = stack.pop()
        if pre >= best.scale:
            continue
        if pairs is not None and pairs.excludes(t, avail, excluded, best.scale, eps):
            continue
        ext = _extensions(ctx, pairs, t, e_t, avail)
        if additive:
            kept_on = {j for j, _ in ext}
            excluded += sum(weight[j] for j in avail if j not in kept_on)
        lb, arg = bounds.bound(t, e_t, excluded, ext)
        if lb < best.scale and arg == len(ext) > 1:
            # The bound points at keeping everything available out: try that target first
            # (unless independent parts already show it is not that good); when its influence
            # is as low as the bound hoped (influences that saturate, as through a hub), it
            # closes the whole subtree at once.
            _try_all_kept(ctx, pairs, t, ext, excluded)
        if lb >= best.scale:
            continue
        stack.extend(_children(bounds, best.scale, t, ext, excluded))


class _SearchNode(NamedTuple):
    """A node of the set-enumeration tree: the targets ``kept + S``, ``S`` inside ``avail``."""

    kept: frozenset[str]
    e_kept: float
    """A lower bound on ``e(Q*(kept))``."""
    avail: tuple[str, ...]
    excluded: float
    """``Delta`` of what every target below keeps out (additive case only)."""
    pre_bound: float
    """The lower bound on the scales below, as computed when the node was pushed."""


@dataclass(frozen=True)
class _ScaleBound:
    """Lower bounds on the scales of the targets below a node of the search."""

    query: Query
    attrs: frozenset[str]
    eps: float
    additive: bool
    weight: Mapping[str, float]

    def left(self, kept: frozenset[str], excluded: float,
             rest: Sequence[tuple[str, float]]) -> list[float]:
        """``Delta(A - kept - S_k)`` for ``S_k`` = the first ``k`` items of ``rest``."""
        if self.additive:
            weight = self.weight
            suffix = [0.0] * (len(rest) + 1)
            for k in range(len(rest) - 1, -1, -1):
                suffix[k] = weight[rest[k][0]] + suffix[k + 1]
            return [excluded + x for x in suffix]
        query = self.query
        out, s = [], set(self.attrs - kept)
        out.append(query.sensitivity(s))
        for j, _ in rest:
            s.discard(j)
            out.append(query.sensitivity(s))
        return out

    def bound(self, kept: frozenset[str], e_kept: float, excluded: float,
              rest: Sequence[tuple[str, float]]) -> tuple[float, int]:
        """Lower bound on the scale of every target ``kept + S``, ``S`` inside ``rest``, and
        the ``k`` attaining it.

        ``rest`` holds ``(j, lower bound on e(kept + j))``, sorted by that bound; if the
        largest bound in ``S`` is the ``k``-th, then ``S`` lies in the first ``k`` items.
        ``excluded`` is ``Delta`` of what no such target keeps out (additive case only).
        """
        eps = self.eps
        deltas = self.left(kept, excluded, rest)
        lb, arg = quilt_scale(deltas[0], e_kept, eps), 0
        for k, (_, e_j) in enumerate(rest, start=1):
            x = quilt_scale(deltas[k], max(e_kept, e_j), eps)
            if x < lb:
                lb, arg = x, k
        return lb, arg


def _extensions(ctx: _Candidates, pairs: _PairBound | None, t: frozenset[str], e_t: float,
                avail: Sequence[str]) -> list[tuple[str, float]]:
    """``(j, e(t + j))`` for each available ``j`` whose target stays within eps, least first."""
    eps = ctx.eps
    ext = []
    floors = pairs.floors(t, avail) if pairs is not None else [0.0] * len(avail)
    blocks = pairs.blocks_of(t) if pairs is not None else None
    for j, floor in zip(avail, floors, strict=True):
        if floor > eps:
            continue  # independent parts alone exceed eps: no need for its influence
        # With one attribute per block the floor is the influence itself: a candidate
        # it shows cannot win needs no influence of its own (nor gives a better bound).
        exact = pairs is not None and blocks is not None and pairs.block[j] not in blocks
        e_j = ctx.evaluate(t | {j}, max(e_t, floor), lazy=exact)
        if e_j <= eps:
            ext.append((j, e_j))
    ext.sort(key=lambda x: x[1])
    return ext


def _try_all_kept(ctx: _Candidates, pairs: _PairBound | None, t: frozenset[str],
                  ext: Sequence[tuple[str, float]], excluded: float) -> None:
    """Evaluate the target that keeps every extension out, if it fits and could win."""
    full = t | {j for j, _ in ext}
    floor = pairs.floors(full, [ext[-1][0]])[0] if pairs is not None else 0.0
    q = ctx.shared.quilt(ctx.node, full)
    fits = math.prod(ctx.theta.cardinality[v] for v in (ctx.node, *q)) <= ctx.max_table
    if fits and quilt_scale(excluded, max(ext[-1][1], floor), ctx.eps) < ctx.best.scale:
        ctx.evaluate(full, max(ext[-1][1], floor))


def _children(bounds: _ScaleBound, best_scale: float, t: frozenset[str],
              ext: Sequence[tuple[str, float]], excluded: float) -> list[_SearchNode]:
    """The children of a node that may hold a scale below ``best_scale``, in push order (the
    least bound is popped first)."""
    children = []
    order = sorted(ext, key=lambda x: -x[1])  # largest influence: largest subtree
    for k, (j, e_j) in enumerate(order):
        # The child t + j stands for the targets whose first item (in this order) is j.
        later = {x for x, _ in order[k + 1:]}
        rest = [x for x in ext if x[0] in later]
        lb = bounds.bound(t | {j}, e_j, excluded, rest)[0]
        if lb < best_scale:
            children.append((lb, k, _SearchNode(t | {j}, e_j, tuple(x for x, _ in rest),
                                                excluded, lb)))
        if bounds.additive:
            excluded += bounds.weight[j]  # below the later children, j is left in N
    children.sort(key=lambda c: (c[0], c[1]), reverse=True)  # least bound popped first
    return [c[2] for c in children]


def _blocks(theta: Theta, node: str) -> dict[str, int]:
    """Each other node's connected component in the moral graph of the whole DAG minus
    ``node``: quilts in different components are independent given ``phi_node``."""
    adj = moral_ancestral_graph(theta, theta.nodes)
    block: dict[str, int] = {}
    for start in theta.nodes:
        if start == node or start in block:
            continue
        block[start] = len(block)
        label, stack = block[start], [start]
        while stack:
            for w in adj[stack.pop()]:
                if w != node and w not in block:
                    block[w] = label
                    stack.append(w)
    return block


def _pair_influences(joint: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``max_q log P(q|a) / P(q|b)`` for every ordered pair ``a != b`` of ``valid`` states of
    ``phi_i`` (``joint[a, q...]`` = ``P(phi_i = a, phi_Q = q)``); ``+inf`` when some ``q`` is
    possible under ``a`` and impossible under ``b``. Definition 8 is the largest of them."""
    # float: a lower bound may round either way by ~1e-16; influences are rounded up by 1e-10.
    j = np.asarray(joint, dtype=float).reshape(joint.shape[0], -1)[valid]
    cond = j / j.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        logc = np.log(cond)
        diff = logc[:, None, :] - logc[None, :, :]
    diff = np.where((cond > 0)[:, None, :], diff, -np.inf)
    out = diff.max(axis=2)
    k = len(valid)
    return out[~np.eye(k, dtype=bool)]


class _PairBound:
    """A lower bound on influences from conditional independence given ``phi_i``.

    Split the other nodes into the components ("blocks") of the moral graph minus ``i``.
    ``Q*(T)`` is the union of the ``Q*(T & block)``, which are independent given ``phi_i``
    under every member, so for each member and pair ``(a, b)`` of values of ``phi_i`` the
    log-ratio ``L_p(Q) = max_q log P(q|a) / P(q|b)`` adds up over blocks; and ``L_p`` is
    monotone in ``T`` like ``e``. Hence, with ``v_j`` the vector of ``L_p(Q*({j}))``,
    ``e(Q*(T)) >= sum over blocks of max over j in T & block of v_j[p]`` for every ``p``.
    For an additive ``Delta`` the best completion of a node against a fixed ``p`` is then a
    separable problem per block (docs/concepts.md).
    """

    def __init__(self, ctx: _Candidates, items: Sequence[str], weight: Mapping[str, float]):
        theta, node = ctx.theta, ctx.node
        block = _blocks(theta, node)
        self.block = {j: block[j] for j in items}
        self.weight = weight
        self.useful = len(set(self.block.values())) > 1
        self.vector: dict[str, np.ndarray] = {}
        if not self.useful:
            return
        valid = []
        for m in range(len(theta.members)):
            p_i = joint_marginal(theta, (node,), m, engine=ctx.engine,
                                 settings=ctx.shared.settings)
            valid.append(np.flatnonzero(p_i > 0))
        for j in items:
            q = least_influence_quilt(theta, node, {j})
            parts = []
            for m, ok in enumerate(valid):
                if not q:
                    parts.append(np.zeros(len(ok) * (len(ok) - 1)))
                    continue
                try:
                    joint = joint_marginal(theta, (node, *q), m, max_table=ctx.max_table,
                                           engine=ctx.engine, settings=ctx.shared.settings)
                except InfluenceTooExpensive:
                    parts.append(np.zeros(len(ok) * (len(ok) - 1)))  # L_p >= 0 always
                    continue
                parts.append(_pair_influences(joint, ok))
            self.vector[j] = np.concatenate(parts) if parts else np.zeros(0)

    def blocks_of(self, kept: Iterable[str]) -> set[int] | None:
        """The blocks of ``kept``, or ``None`` when two attributes share one (or the bound is
        not in use): then the floors of ``kept`` and its extensions are not exact."""
        if not self.useful:
            return None
        seen: set[int] = set()
        for j in kept:
            if self.block[j] in seen:
                return None
            seen.add(self.block[j])
        return seen

    def floors(self, kept: Iterable[str], extra: Sequence[str]) -> list[float]:
        """Lower bounds on ``e(Q*(kept + j))`` for each ``j`` of ``extra``: the largest over
        pairs of the sum over blocks of each block's largest ``v_j[p]``."""
        if not self.useful:
            return [0.0] * len(extra)
        top: dict[int, np.ndarray] = {}
        for j in kept:
            g = self.block[j]
            top[g] = self.vector[j] if g not in top else np.maximum(top[g], self.vector[j])
        size = len(next(iter(self.vector.values())))
        base = np.sum(list(top.values()), axis=0) if top else np.zeros(size)
        out = []
        for j in extra:
            g, v = self.block[j], self.vector[j]
            total = base + (np.maximum(top[g], v) - top[g] if g in top else v)
            out.append(float(total.max()) if size else 0.0)
        return out

    def excludes(self, kept: frozenset[str], avail: Sequence[str], excluded: float,
                 scale: float, eps: float) -> bool:
        """True when no target ``kept + S`` (``S`` inside ``avail``) has a scale below
        ``scale``; ``excluded`` is ``Delta`` of what every such target leaves in ``N``."""
        if not self.useful or not math.isfinite(scale) or not avail:
            return False
        w = self.weight
        total = excluded + sum(w[j] for j in avail)
        size = len(next(iter(self.vector.values())))
        for p in range(size):
            floor: dict[int, float] = {}
            for j in kept:
                if j in self.block:
                    g = self.block[j]
                    floor[g] = max(floor.get(g, 0.0), self.vector[j][p])
            base = sum(floor.values())
            by_block: dict[int, list[tuple[float, float]]] = {}
            for j in avail:
                by_block.setdefault(self.block[j], []).append((self.vector[j][p], w[j]))
            gain = 0.0
            for g, pts in by_block.items():
                pts.sort()
                f = floor.get(g, 0.0)
                cum, best_g = 0.0, 0.0
                for v, wj in pts:
                    cum += wj
                    best_g = max(best_g, cum - scale * max(0.0, v - f))
                gain += best_g
            # A completion S beats `scale` only if total - w(S) < scale * (eps - e), and
            # e >= base + sum of the increments, so only if gain > total - scale (eps - base).
            need = total - scale * (eps - base)
            if gain < need - 1e-12 * (abs(need) + gain + scale * eps):
                return True
        return False
