"""The Attribute-Private Markov Quilt Mechanism (APMQM, Algorithm 3) : plan and release.

For every sensitive attribute ``i`` Algorithm 3 takes the quilt of least Laplace scale

    b_i = min( Delta_A F / eps,  min over quilts with e(Q|i) < eps of
                                  Delta_{A and N(Q)} F / (eps - e_Theta(Q | i)) )

(a quilt with ``Delta_{A and N} F = 0`` and ``e <= eps`` gives ``b_i = 0``) and releases
``F(X) + Lap(max_i b_i)``; Theorem 4 makes the release (eps, 0)-distributional attribute
private (the proof's first ratio is ``exp(eps - e)``, not ``exp(eps - exp(e))`` as printed).

Exact optimum over all quilts, cheaply. The scale of a quilt depends on ``Q`` only through
``e(Q|i)`` and through ``A & N(Q)``. For each set ``T`` of query attributes to keep out of
``N``, :func:`quiltpriv.quilts.least_influence_quilt` returns a quilt ``Q*(T)`` whose influence
is at most that of *every* quilt keeping ``T`` out of ``N`` (monotonicity and the
data-processing inequality). The optimal quilt ``Q_opt`` keeps ``T = A - N(Q_opt)`` out of
``N``, so ``Q*(T)`` is at least as good: the optimum over all ``2**(m-1)`` quilts is the least
scale over the candidates ``Q*(T)``. The query says how its sensitivity depends on the
columns (``Query.sensitivity_structure``), and the search uses it instead of trying all
``2**|A|`` targets:

- all-or-nothing (count, histogram; sum and mean read one attribute): two candidates,
  ``T = {}`` (the quilt ``Q = {}``) and ``T`` = every query attribute other than ``i``;
- additive (linear) and general (custom): a branch and bound over ``T``. ``e(Q*(T))`` is
  monotone in ``T`` and ``Delta`` of what ``T`` leaves in ``N`` shrinks as ``T`` grows, which
  bounds every target below a node of the search; for additive sensitivities, influences also
  add up over parts of ``Q`` that are independent given ``phi_i``, which bounds them further.
  The search stops at ``max_candidates`` targets or the time limit with a valid plan flagged
  as not proven optimal.

docs/concepts.md has the proofs; tests check the planner against brute force.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._validation import check_epsilon
from .errors import ParameterError, QueryError
from .influence import (
    DEFAULT_MAX_TABLE,
    InfluenceTooExpensive,
    check_inference,
    influence_upper_bound,
    joint_marginal,
)
from .network import Theta, as_theta
from .quilts import (
    Quilt,
    least_influence_quilt,
    markov_quilt,
    moral_ancestral_graph,
    trivial_quilt,
)
from .sensitivity import Query


@dataclass(frozen=True)
class SensitivePlan:
    """The chosen quilt for one sensitive attribute and why it was chosen.

    Attributes
    ----------
    node : str
        The sensitive attribute ``i``.
    quilt, nearby, remote : tuple of str
        The chosen quilt's ``Q``, ``N`` and ``R`` (network order).
    influence : float
        ``e_Theta(Q | i)`` (exact, rounded upwards by 1e-10 relative plus 1e-10 absolute).
    sensitivity : float
        ``Delta_{A and N} F``.
    scale : float
        ``b_i``, the Laplace scale this attribute needs.
    quilts_considered : int
        Distinct candidate quilts whose scale was evaluated (trivial quilt included).
    optimal : bool
        True when ``scale`` is proven to be the least over all quilts of ``i``.
    explanation : str
        One paragraph, for humans.
    influence_member : str or None
        The member of Theta attaining the influence.
    influence_pair : tuple or None
        The values ``(a, b)`` of ``phi_i`` attaining it.
    """

    node: str
    quilt: tuple[str, ...]
    nearby: tuple[str, ...]
    remote: tuple[str, ...]
    influence: float
    sensitivity: float
    scale: float
    quilts_considered: int
    optimal: bool
    explanation: str
    influence_member: str | None = None
    influence_pair: tuple[Any, Any] | None = None
    influence_bound_via: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["quilt"], d["nearby"], d["remote"] = list(self.quilt), list(self.nearby), list(
            self.remote)
        d["influence_pair"] = None if self.influence_pair is None else [
            _jsonable(x) for x in self.influence_pair]
        d["influence_bound_via"] = None if self.influence_bound_via is None else list(
            self.influence_bound_via)
        return d


@dataclass(frozen=True)
class Plan:
    """A deterministic, immutable APMQM plan: the noise a release needs and why.

    ``to_json()`` gives the command line's JSON contract::

        {"epsilon": E, "scale": b, "optimal": true,
         "sensitive": {"S1": {"scale": b1, "quilt": [...], "nearby": [...], "remote": [...],
                              "influence": e, "sensitivity": d, "quilts_considered": k}, ...}}

    plus the query, the model fingerprint, |Theta| and notes.
    """

    epsilon: float
    scale: float
    optimal: bool
    sensitive: tuple[SensitivePlan, ...]
    query: Mapping[str, Any]
    model: str
    theta_size: int
    notes: tuple[str, ...] = ()
    mechanism: str = field(default="APMQM", init=False)

    def __getitem__(self, node: str) -> SensitivePlan:
        for sp in self.sensitive:
            if sp.node == node:
                return sp
        raise KeyError(node)

    @property
    def binding(self) -> SensitivePlan:
        """The sensitive attribute that sets the overall scale (first in order on ties)."""
        return max(self.sensitive, key=lambda sp: sp.scale)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "optimal": self.optimal,
            "sensitive": {sp.node: sp.to_dict() for sp in self.sensitive},
            "query": dict(self.query),
            "model": self.model,
            "theta_size": self.theta_size,
            "notes": list(self.notes),
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Plan:
        """Rebuild a plan from :meth:`to_dict` output (inverse of it)."""
        sens = []
        for node, s in d["sensitive"].items():
            pair = s.get("influence_pair")
            sens.append(SensitivePlan(
                node=node, quilt=tuple(s["quilt"]), nearby=tuple(s["nearby"]),
                remote=tuple(s["remote"]), influence=float(s["influence"]),
                sensitivity=float(s["sensitivity"]), scale=float(s["scale"]),
                quilts_considered=int(s["quilts_considered"]), optimal=bool(s["optimal"]),
                explanation=s["explanation"], influence_member=s.get("influence_member"),
                influence_pair=None if pair is None else tuple(pair),
                influence_bound_via=None if s.get("influence_bound_via") is None
                else tuple(s["influence_bound_via"]),
            ))
        return cls(float(d["epsilon"]), float(d["scale"]), bool(d["optimal"]), tuple(sens),
                   dict(d["query"]), d["model"], int(d["theta_size"]), tuple(d.get("notes", ())))

    def explain(self) -> str:
        """A readable table and one paragraph per sensitive attribute."""
        lines = [
            f"APMQM plan: epsilon = {self.epsilon:g}, Laplace scale b = {_fmt(self.scale)}"
            f" ({'optimal over all quilts' if self.optimal else 'optimality NOT proven'})",
            f"query: {_describe_query(self.query)}; |Theta| = {self.theta_size}",
            "",
        ]
        header = ("sensitive", "quilt Q", "nearby N", "remote R", "influence", "Delta_{A&N}",
                  "scale", "quilts")
        rows = [(sp.node, _set(sp.quilt), _set(sp.nearby), _set(sp.remote),
                 _fmt(sp.influence), _fmt(sp.sensitivity), _fmt(sp.scale),
                 str(sp.quilts_considered)) for sp in self.sensitive]
        lines += _table(header, rows)
        lines.append("")
        for sp in self.sensitive:
            lines.append(f"{sp.node}: {sp.explanation}")
        for note in self.notes:
            lines.append(f"note: {note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def _repr_html_(self) -> str:
        from .report import plan_html

        return plan_html(self)


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, str | int | float | bool) or x is None:
        return x
    return str(x)


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf"
    return f"{x:.6g}"


def _set(xs: Iterable[str]) -> str:
    xs = list(xs)
    return "{" + ", ".join(xs) + "}" if xs else "{}"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h)
              for k, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def _describe_query(q: Mapping[str, Any]) -> str:
    kind = q.get("kind", "query")
    if "attributes" in q:
        attrs = ", ".join(q["attributes"])
    elif "attribute" in q:
        attrs = q["attribute"]
    else:
        attrs = ", ".join(q.get("weights", {}))
    extra = f", n = {q['records']}" if "records" in q else ""
    return f"{kind} over {attrs}{extra}"


# -- planning ---------------------------------------------------------------------------------


def _scale(delta: float, e: float, eps: float) -> float:
    """Laplace scale of one quilt: ``Delta / (eps - e)``; 0 if Delta = 0 and e <= eps."""
    if delta == 0.0:
        return 0.0 if e <= eps else math.inf
    if e < eps:
        return delta / (eps - e)
    return math.inf


#: Scales or influences this close (relative) are ties: mathematically equal influences of
#: different quilts (say ``{income}`` and ``{income, sat}`` with ``sat`` remote) come out of
#: different contractions a few ulps apart, and rounding noise must not pick the winner.
TIE_RTOL = 1e-12


def _close(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=TIE_RTOL, abs_tol=0.0)


class _Tol:
    """A float compared with :data:`TIE_RTOL` (ordering key for candidates)."""

    __slots__ = ("x",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, x: float) -> None:
        self.x = x

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Tol) and _close(self.x, other.x)

    def __lt__(self, other: _Tol) -> bool:
        return not _close(self.x, other.x) and self.x < other.x


def _key(scale: float, e: float, q: tuple[str, ...], theta: Theta) -> tuple:
    # Least scale; then least influence (widest margin); then fewest quilt nodes; then order.
    return (_Tol(scale), _Tol(e), len(q), tuple(theta.index[v] for v in q))


@dataclass
class _Search:
    """Mutable state of one node's candidate search (kept when the search is interrupted)."""

    quilt: Quilt
    scale: float
    delta: float
    key: tuple
    e: float = 0.0
    member: str | None = None
    pair: Any = None
    via: tuple[str, ...] | None = None
    considered: int = 1
    optimal: bool = True
    reasons: list[str] = field(default_factory=list)


#: Most target sets ``T`` the search of one sensitive attribute evaluates (each costs at most
#: one exact influence) before it stops with the best quilt found so far, flagged as not proven
#: optimal. Count and histogram queries need two; additive and general sensitivities are
#: searched by branch and bound, which this bounds.
DEFAULT_MAX_CANDIDATES = 100_000

#: Said (in the attribute's explanation) when the time limit stops a search.
TIME_LIMIT_REASON = "the time limit was reached before the search finished"
#: Begins what is said when the candidate budget stops a search.
BUDGET_REASON = "the search stopped after its budget of"


#: The independent-parts bound (:class:`_PairBound`) is used by the branch and bound on
#: additive queries with at least this many attributes, and before an all-or-nothing query's
#: second candidate when its joint table would exceed this many entries.
PAIR_MIN_ITEMS = 8
PAIR_CHECK_SIZE = 2**16


class _Stop(Exception):
    """The search must stop now (time limit or candidate budget); the message says which."""


class _Candidates:
    """Evaluates the candidates ``Q*(T)`` of one sensitive attribute and keeps the best.

    ``memo`` maps each evaluated quilt to its exact influence (``None`` when only an upper
    bound, or nothing, is known); it holds at most ``max_candidates`` entries.
    """

    def __init__(self, theta: Theta, query: Query, node: str, eps: float, best: _Search,
                 max_table: int, deadline: float | None, inference: str,
                 max_candidates: int) -> None:
        self.theta, self.query, self.node, self.eps, self.best = theta, query, node, eps, best
        self.max_table, self.deadline, self.inference = max_table, deadline, inference
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
                self.best.optimal = False
                self.best.reasons.append(reason)

    def evaluate(self, target: frozenset[str], floor: float, lazy: bool = False) -> float:
        """Make ``Q*(target)`` a candidate; return a lower bound on ``e(Q*(T))`` for every
        ``T`` containing ``target``.

        ``floor`` is such a bound already known (from a subset of ``target``, or independent
        parts): ``e(Q*(T))`` is monotone in ``T``. The quilt's exact influence is one too; an
        upper bound is not. ``lazy``: skip the influence when ``floor`` alone shows that the
        quilt cannot beat the best scale (then ``floor`` is returned).
        """
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _Stop(TIME_LIMIT_REASON)
        if self.evaluated >= self.max_candidates:
            raise _Stop(f"{BUDGET_REASON} {self.max_candidates} candidate target sets")
        self.evaluated += 1
        theta, node, eps, best = self.theta, self.node, self.eps, self.best
        q = least_influence_quilt(theta, node, target)
        if q in self.memo:
            known = self.memo[q]
            return floor if known is None else max(floor, known)
        quilt = markov_quilt(theta, node, q)
        delta = self.query.sensitivity(self.attrs & set(quilt.nearby))
        if lazy and _scale(delta, floor, eps) >= best.scale:
            return floor
        self.memo[q] = None
        try:
            infl = influence_upper_bound(theta, node, q, max_table=self.max_table,
                                         inference=self.inference)
        except InfluenceTooExpensive as exc:
            self.unresolved.append((_scale(delta, floor, eps), f"quilt {_set(q)} skipped: {exc}"))
            return floor
        best.considered += 1
        e = infl.value
        scale = _scale(delta, e, eps)
        if infl.exact:
            self.memo[q] = e
            floor = max(floor, e)
        else:
            # An upper bound: the scale is valid (more noise); the optimum is not proven
            # unless even the least influence this quilt can have would not beat the best.
            self.unresolved.append((_scale(delta, floor, eps),
                                    f"the influence of {_set(q)} is an upper bound (data-"
                                    f"processing inequality via {_set(infl.bound_via or ())})"))
        key = _key(scale, e, q, theta) + (0,)
        if key < best.key:
            best.key, best.quilt, best.scale, best.e, best.delta = key, quilt, scale, e, delta
            best.via = infl.bound_via
            best.member = theta.names[infl.member] if infl.member is not None else None
            best.pair = infl.pair
        return floor


def _search(theta: Theta, query: Query, node: str, eps: float, best: _Search,
            max_table: int, deadline: float | None, inference: str,
            max_candidates: int = DEFAULT_MAX_CANDIDATES) -> None:
    """The exact least-scale search over the candidates ``Q*(T)`` (module docstring).

    ``T = {}`` (the quilt ``Q = {}``) first; then, by the query's sensitivity structure, the
    one other candidate an all-or-nothing sensitivity needs, or a branch and bound.
    """
    ctx = _Candidates(theta, query, node, eps, best, max_table, deadline, inference,
                      max_candidates)
    others = [a for a in theta.sort(query.attributes) if a != node]
    try:
        ctx.evaluate(frozenset(), 0.0)
        if query.sensitivity_structure == "all-or-nothing":
            # Delta_B is one value c whenever B meets the support A' (the attributes with
            # Delta_{j} > 0), else 0. A quilt with A' nearby has scale c / (eps - e) >= c / eps,
            # the scale of Q = {}; one with no attribute of A' nearby is dominated by
            # Q*(A'), whose influence is least among them. Impossible if i is in A'.
            support = [a for a in others if query.sensitivity((a,)) > 0]
            if support and not query.sensitivity((node,)) > 0:
                # Its scale is 0 or infinite; before a large joint, independent parts may
                # already show that it is infinite.
                q = least_influence_quilt(theta, node, support)
                big = math.prod(theta.cardinality[v] for v in (node, *q)) > PAIR_CHECK_SIZE
                pairs = _PairBound(ctx, support, {}) if big else None
                if pairs is None or pairs.floors(support[1:], support[:1])[0] <= eps:
                    ctx.evaluate(frozenset(support), 0.0)
        else:
            _branch_and_bound(ctx, others)
    except _Stop as stop:
        best.optimal = False
        best.reasons.append(str(stop))
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
    attrs = ctx.attrs

    def left(kept: frozenset[str], excluded: float, rest: list[tuple[str, float]]) -> list[float]:
        """``Delta(A - kept - S_k)`` for ``S_k`` = the first ``k`` items of ``rest``."""
        if additive:
            suffix = [0.0] * (len(rest) + 1)
            for k in range(len(rest) - 1, -1, -1):
                suffix[k] = weight[rest[k][0]] + suffix[k + 1]
            return [excluded + x for x in suffix]
        out, s = [], set(attrs - kept)
        out.append(query.sensitivity(s))
        for j, _ in rest:
            s.discard(j)
            out.append(query.sensitivity(s))
        return out

    def bound(kept: frozenset[str], e_kept: float, excluded: float,
              rest: list[tuple[str, float]]) -> tuple[float, int]:
        """Lower bound on the scale of every target ``kept + S``, ``S`` inside ``rest``, and
        the ``k`` attaining it.

        ``rest`` holds ``(j, lower bound on e(kept + j))``, sorted by that bound; if the
        largest bound in ``S`` is the ``k``-th, then ``S`` lies in the first ``k`` items.
        ``excluded`` is ``Delta`` of what no such target keeps out (additive case only).
        """
        deltas = left(kept, excluded, rest)
        lb, arg = _scale(deltas[0], e_kept, eps), 0
        for k, (_, e_j) in enumerate(rest, start=1):
            x = _scale(deltas[k], max(e_kept, e_j), eps)
            if x < lb:
                lb, arg = x, k
        return lb, arg

    # Stack entries: (t, e lower bound of t, available items, Delta excluded, pre-bound).
    stack: list[tuple[frozenset[str], float, tuple[str, ...], float, float]] = [
        (frozenset(), 0.0, tuple(items), w_node, 0.0)]
    # The pair bound costs a walk of the whole moral graph and one small joint per item:
    # worth it on wide queries only.
    pairs = _PairBound(ctx, items, weight) if additive and len(items) >= PAIR_MIN_ITEMS else None
    while stack:
        t, e_t, avail, excluded, pre = stack.pop()
        if pre >= best.scale:
            continue
        if pairs is not None and pairs.excludes(t, avail, excluded, best.scale, eps):
            continue
        ext = []
        floors = pairs.floors(t, avail) if pairs is not None else [0.0] * len(avail)
        blocks = pairs.blocks_of(t) if pairs is not None else None
        for j, floor in zip(avail, floors, strict=True):
            if floor > eps:
                continue  # independent parts alone exceed eps: no need for its influence
            # With one attribute per block the floor is the influence itself: a candidate
            # it shows cannot win needs no influence of its own (nor gives a better bound).
            exact = blocks is not None and pairs.block[j] not in blocks
            e_j = ctx.evaluate(t | {j}, max(e_t, floor), lazy=exact)
            if e_j <= eps:
                ext.append((j, e_j))
        ext.sort(key=lambda x: x[1])
        if additive:
            kept_on = {j for j, _ in ext}
            excluded += sum(weight[j] for j in avail if j not in kept_on)
        lb, arg = bound(t, e_t, excluded, ext)
        if lb < best.scale and arg == len(ext) > 1:
            # The bound points at keeping everything available out: try that target first
            # (unless independent parts already show it is not that good); when its influence
            # is as low as the bound hoped (influences that saturate, as through a hub), it
            # closes the whole subtree at once.
            full = t | {j for j, _ in ext}
            floor = pairs.floors(full, [ext[-1][0]])[0] if pairs is not None else 0.0
            q = least_influence_quilt(ctx.theta, node, full)
            fits = math.prod(ctx.theta.cardinality[v] for v in (node, *q)) <= ctx.max_table
            if fits and _scale(excluded, max(ext[-1][1], floor), eps) < best.scale:
                ctx.evaluate(full, max(ext[-1][1], floor))
        if lb >= best.scale:
            continue
        children = []
        order = sorted(ext, key=lambda x: -x[1])  # largest influence: largest subtree
        for k, (j, e_j) in enumerate(order):
            # The child t + j stands for the targets whose first item (in this order) is j.
            later = {x for x, _ in order[k + 1:]}
            rest = [x for x in ext if x[0] in later]
            lb = bound(t | {j}, e_j, excluded, rest)[0]
            if lb < best.scale:
                children.append((lb, k, (t | {j}, e_j, tuple(x for x, _ in rest), excluded, lb)))
            if additive:
                excluded += weight[j]  # below the later children, j is left in N
        children.sort(key=lambda c: (c[0], c[1]), reverse=True)  # least bound popped first
        stack.extend(c[2] for c in children)


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
            p_i = joint_marginal(theta, (node,), m, inference=ctx.inference)
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
                                           inference=ctx.inference)
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


def plan_node(
    theta: Theta,
    query: Query,
    node: str,
    epsilon: float,
    *,
    max_table: int = DEFAULT_MAX_TABLE,
    deadline: float | None = None,
    inference: str = "auto",
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
) -> SensitivePlan:
    """Least-noise quilt for one sensitive attribute (the inner loop of Algorithm 3).

    See :func:`plan` for the parameters. The search is exact unless a candidate's influence is
    too expensive to compute (``max_table``), the deadline passes, the candidate budget is used
    up or the search is interrupted (Ctrl-C); in every case the returned quilt is valid, and
    ``optimal`` says whether it is proven least.
    """
    return _plan_node(theta, query, node, epsilon, max_table, deadline,
                      check_inference(inference), _check_max_candidates(max_candidates))[0]


def _check_max_candidates(max_candidates: object) -> int:
    if (isinstance(max_candidates, bool) or not isinstance(max_candidates, int | np.integer)
            or max_candidates < 1):
        raise ParameterError(f"max_candidates must be a whole number >= 1, got "
                             f"{max_candidates!r}")
    return int(max_candidates)


def _plan_node(theta: Theta, query: Query, node: str, eps: float, max_table: int,
               deadline: float | None, inference: str = "auto",
               max_candidates: int = DEFAULT_MAX_CANDIDATES) -> tuple[SensitivePlan, bool]:
    """:func:`plan_node`, also saying whether the search was interrupted."""
    interrupted = False
    delta_all = query.sensitivity(query.attributes)
    scale_all = _scale(delta_all, 0.0, eps)
    best = _Search(quilt=trivial_quilt(theta, node), scale=scale_all, delta=delta_all,
                   key=_key(scale_all, 0.0, (), theta) + (1,))  # trivial loses ties to Q = {}
    try:
        _search(theta, query, node, eps, best, max_table, deadline, inference, max_candidates)
    except KeyboardInterrupt:
        interrupted = True
        best.optimal = False
        best.reasons.append("the search was interrupted; this is the best quilt found so far")
    explanation = _explain(theta, query, best.quilt, best.e, best.delta, best.scale, eps,
                           best.member, best.pair, best.optimal, best.reasons, best.via)
    q = best.quilt
    return SensitivePlan(
        node=node, quilt=q.quilt, nearby=q.nearby, remote=q.remote,
        influence=best.e, sensitivity=best.delta, scale=best.scale,
        quilts_considered=best.considered, optimal=best.optimal, explanation=explanation,
        influence_member=best.member,
        influence_pair=None if best.pair is None else tuple(_jsonable(x) for x in best.pair),
        influence_bound_via=best.via,
    ), interrupted


def _plan_batch(theta: Theta, query: Query, nodes: Iterable[str], eps: float, max_table: int,
                wall_deadline: float | None, inference: str,
                max_candidates: int = DEFAULT_MAX_CANDIDATES) -> list[SensitivePlan]:
    """:func:`plan_node` for a batch of attributes in one worker.

    The deadline travels as wall-clock time (``time.time()``; monotonic clocks are not
    comparable between processes or machines) and becomes a local monotonic deadline here.
    """
    deadline = (None if wall_deadline is None
                else time.monotonic() + max(0.0, wall_deadline - time.time()))
    return [plan_node(theta, query, node, eps, max_table=max_table, deadline=deadline,
                      inference=inference, max_candidates=max_candidates) for node in nodes]


def _trivial_plan(theta: Theta, query: Query, node: str, eps: float,
                  reason: str) -> SensitivePlan:
    """The always-valid trivial quilt (every attribute nearby), flagged as not optimal."""
    q = trivial_quilt(theta, node)
    delta = query.sensitivity(query.attributes)
    scale = _scale(delta, 0.0, eps)
    text = _explain(theta, query, q, 0.0, delta, scale, eps, None, None, False, [reason])
    return SensitivePlan(node=node, quilt=q.quilt, nearby=q.nearby, remote=q.remote,
                         influence=0.0, sensitivity=delta, scale=scale, quilts_considered=1,
                         optimal=False, explanation=text)


def _explain(theta: Theta, query: Query, quilt: Quilt, e: float, delta: float, scale: float,
             eps: float, member: str | None, pair: Any, optimal: bool,
             reasons: list[str], via: tuple[str, ...] | None = None) -> str:
    a_n = theta.sort(set(query.attributes) & set(quilt.nearby))
    if quilt.is_trivial:
        text = (f"no quilt lowers the noise, so the trivial quilt (every attribute nearby) is "
                f"used: Delta_A F = {_fmt(delta)}, scale = Delta / eps = {_fmt(scale)}.")
    else:
        if not quilt.quilt:
            sep = (f"{quilt.node!r} is d-separated from R = {_set(quilt.remote)} with nothing "
                   f"observed (Q = {{}})")
        elif not quilt.remote:
            sep = (f"the quilt Q = {_set(quilt.quilt)} is held fixed, which takes its nodes out "
                   f"of N (it separates nothing else: R = {{}})")
        else:
            sep = (f"Q = {_set(quilt.quilt)} d-separates {quilt.node!r} from R = "
                   f"{_set(quilt.remote)}")
        where = ""
        if member is not None and pair is not None:
            where = f" (under {member}, phi = {pair[0]} vs {pair[1]})"
        infl = f"max-influence e(Q|{quilt.node}) = {_fmt(e)}{where}"
        if via is not None:
            infl = (f"max-influence e(Q|{quilt.node}) <= {_fmt(e)}, an UPPER BOUND (exact value "
                    f"too expensive): e(S|{quilt.node}) for the separator S = {_set(via)}")
        if delta == 0:
            cost = (f"the query reads no nearby attribute (A & N = {{}}), so Delta = 0 and no "
                    f"noise is needed for {quilt.node!r}")
        else:
            cost = (f"the query reads nearby {_set(a_n)}, Delta_{{A&N}} F = {_fmt(delta)}, "
                    f"scale = {_fmt(delta)} / ({eps:g} - {_fmt(e)}) = {_fmt(scale)}")
        text = f"{sep}; {infl}; {cost}."
    if optimal:
        m = len(theta.nodes) - 1
        total = f"{2**m}" if m <= 40 else f"2^{m}"
        text += (f" Least scale over all {total} quilts of {quilt.node!r} (exact: every other "
                 f"quilt is dominated by an evaluated candidate or ruled out by a bound; see "
                 f"docs/concepts.md).")
    else:
        text += " Optimality not proven: " + "; ".join(dict.fromkeys(reasons)) + "."
    return text


def plan(
    model: Any,
    query: Query,
    sensitive: str | Iterable[str],
    epsilon: float,
    *,
    max_table: int = DEFAULT_MAX_TABLE,
    time_limit: float | None = None,
    n_jobs: int | None = None,
    progress: bool = False,
    inference: str = "auto",
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
) -> Plan:
    """Plan an APMQM release (Algorithm 3): the least Laplace scale over all Markov quilts.

    Parameters
    ----------
    model : Theta, pgmpy DiscreteBayesianNetwork or sequence of them
        The hyperparameter network(s); several networks form Theta.
    query : Query
        The query ``F`` and its column sensitivities (:mod:`quiltpriv.sensitivity`).
    sensitive : str or iterable of str
        The sensitive attributes ``C``.
    epsilon : float
        The privacy parameter, finite and > 0.
    max_table : int, optional
        Largest joint table an exact influence may build; a candidate beyond it is skipped
        (the plan stays private and says optimality is not proven).
    time_limit : float, optional
        Seconds; when passed, the search stops with the best valid quilt found so far.
    n_jobs : int, optional
        Plan the sensitive attributes in parallel with joblib (``-1``: every core). The
        backend is joblib's, so ``with joblib.parallel_backend("dask"): plan(...)`` spreads
        the work over a Dask cluster with nothing else changed. The attributes go out in a few
        batches per worker (each batch ships Theta once). ``time_limit`` is one overall
        budget, passed to workers as a wall-clock deadline (a cluster's clocks must agree).
    progress : bool
        Show a progress bar (tqdm) over the sensitive attributes.
    inference : {"auto", "junction_tree", "elimination"}
        How exact influences are computed (:func:`quiltpriv.influence.joint_marginal`). All
        are exact; the default is the fastest measured on the bundled networks.
    max_candidates : int
        Most target sets the search of one sensitive attribute evaluates (each costs at most
        one influence). Count and histogram queries need two; additive (linear) and general
        (custom) sensitivities are searched by branch and bound, which stops here with the
        best quilt found so far, flagged as not proven optimal.

    Returns
    -------
    Plan
        Deterministic for given inputs (``time_limit`` and interruption aside).

    Notes
    -----
    On Ctrl-C (KeyboardInterrupt) during a serial plan, the attribute being searched keeps
    the best quilt found so far and the attributes not reached get the trivial quilt; the
    plan is returned, valid and flagged as not proven optimal.

    Raises
    ------
    ParameterError, ModelError, QueryError
        eps not finite and > 0; an attribute not in the network; an empty sensitive set.
    """
    theta = as_theta(model)
    eps = check_epsilon(epsilon)
    if not isinstance(query, Query):
        raise QueryError(f"query must be a quiltpriv query, got {type(query).__name__}")
    sens = theta.check_sensitive(sensitive)
    theta.check_nodes(query.attributes, "query attribute")
    if time_limit is not None:
        time_limit = float(time_limit)
        if not time_limit > 0:
            raise ParameterError(f"time_limit must be > 0, got {time_limit}")
    check_inference(inference)
    max_candidates = _check_max_candidates(max_candidates)
    deadline = None if time_limit is None else time.monotonic() + time_limit
    wall_deadline = None if time_limit is None else time.time() + time_limit
    notes = []
    if n_jobs not in (None, 1) and len(sens) > 1:
        from joblib import Parallel, delayed, effective_n_jobs

        # A few batches per worker, not one task per attribute: each task pickles Theta once
        # and its attributes share the worker's caches (elimination order, influences).
        n_batches = min(len(sens), 4 * max(1, effective_n_jobs(n_jobs)))
        batches = [sens[k::n_batches] for k in range(n_batches)]
        done_batches = Parallel(n_jobs=n_jobs)(
            delayed(_plan_batch)(theta, query, b, eps, max_table, wall_deadline, inference,
                                 max_candidates)
            for b in batches)
        by_node = {sp.node: sp for batch in done_batches for sp in batch}
        plans = tuple(by_node[s] for s in sens)
    else:
        done: list[SensitivePlan] = []
        nodes: Iterable[str] = sens
        if progress:
            from tqdm.auto import tqdm

            nodes = tqdm(sens, desc="planning", unit="attribute")
        try:
            for s in nodes:
                sp, interrupted = _plan_node(theta, query, s, eps, max_table, deadline,
                                             inference, max_candidates)
                done.append(sp)
                if interrupted:
                    raise KeyboardInterrupt
        except KeyboardInterrupt:
            notes.append("planning was interrupted: attributes not reached use the trivial "
                         "quilt")
        for s in sens[len(done):]:
            done.append(_trivial_plan(theta, query, s, eps, "planning was interrupted before "
                                      "this attribute was searched"))
        plans = tuple(done)
    for reason, what in ((TIME_LIMIT_REASON, f"the time limit of {time_limit or 0:g} s"),
                         (BUDGET_REASON, f"the budget of {max_candidates} candidates")):
        stopped = [sp.node for sp in plans if reason in sp.explanation]
        if stopped:
            notes.append(f"{what} was reached: the search of {', '.join(map(repr, stopped))} "
                         "stopped with the best quilt found so far (valid, optimality not "
                         "proven)")
    scale = max(sp.scale for sp in plans)
    if len(plans) > 1:
        b = max(plans, key=lambda sp: sp.scale)
        notes.append(f"the overall scale is set by {b.node!r} (max over sensitive attributes)")
    return Plan(
        epsilon=eps, scale=scale, optimal=all(sp.optimal for sp in plans), sensitive=plans,
        query=query.to_dict(), model=theta.fingerprint(), theta_size=len(theta),
        notes=tuple(notes),
    )


# -- release ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """A released value and its audit record (the plan it used and how noise was drawn).

    The true value of the query is deliberately not kept.
    """

    value: float | tuple[float, ...]
    scale: float
    granularity: float
    secure: bool
    sampler: str
    seed: int | None
    plan: Plan

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": list(self.value) if isinstance(self.value, tuple) else self.value,
            "scale": self.scale,
            "granularity": self.granularity,
            "secure": self.secure,
            "sampler": self.sampler,
            "seed": self.seed,
            "plan": self.plan.to_dict(),
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def _repr_html_(self) -> str:
        from .report import release_html

        return release_html(self)


def release(
    plan_: Plan, query: Query, data: pd.DataFrame, *, seed: int | random.Random | None = None
) -> Release:
    """Release ``F(X) + Lap(b)`` with the plan's scale ``b`` (Algorithm 3, last line).

    Noise comes from :mod:`quiltpriv.noise`: an exact discrete Laplace on a fine power-of-two
    grid, drawn from the operating system's secure generator. ``seed`` switches to a
    reproducible, NOT secure generator for experiments, and the record says so.

    Raises
    ------
    QueryError
        If ``query`` is not the query the plan was made for, the data lack a column, hold
        values outside the declared bounds, or have more records than planned.
    """
    from . import noise

    if dict(query.to_dict()) != dict(plan_.query):
        raise QueryError("this query is not the one the plan was made for; plan it again")
    if not isinstance(data, pd.DataFrame):
        raise QueryError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    query.check_records(len(data))
    value = query.evaluate(data)
    positive = [sp.sensitivity for sp in plan_.sensitive if sp.sensitivity > 0]
    sensitivity = min(positive) if positive else 0.0
    vec = np.atleast_1d(np.asarray(value, dtype=float))
    # One generator for every coordinate, so seeded coordinates get independent noise.
    rng = noise.make_rng(seed)
    draws = [noise.laplace_release(float(v), plan_.scale, sensitivity, seed=rng) for v in vec]
    out = tuple(float(d.value) for d in draws)
    first = draws[0]
    sampler, secure = str(first.sampler), bool(first.secure)
    if plan_.scale == 0:
        # Private without noise: every sensitive attribute has a quilt with Delta_{A&N} = 0.
        sampler = "none: the plan needs no noise (Delta_{A&N} F = 0 for every sensitive attribute)"
        secure = seed is None
    return Release(
        value=out if np.ndim(value) else out[0],
        scale=float(first.noise_scale_used), granularity=float(first.granularity),
        secure=secure, sampler=sampler,
        seed=seed if isinstance(seed, int) else None, plan=plan_,
    )
