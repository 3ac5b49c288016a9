"""Fragile quilt choices: would a small change in one table flip a sensitive attribute's plan?

A plan chooses, for each sensitive attribute ``i``, a quilt ``Q`` whose max-influence
``e(Q|i)`` is below eps [ZOC22, Alg. 3]. The influence depends on the model's tables; if a small
change of one table raises it to eps or above, ``Q`` is no longer a Markov quilt the mechanism
may use, and ``i`` falls back on another quilt: for a quilt that needs no noise
(``Delta_{A and N} F = 0``) that can flip the release from zero noise to the trivial quilt's
``Delta_A F / eps`` (``n / eps`` for a count over ``n`` records). :func:`fragility` tests that,
for every sensitive attribute's chosen quilt, against every change of at most ``delta`` in
total variation of any one column ``P(phi_v | phi_pa(v) = c)`` of any one member's table.

How (per member ``m``, node ``v`` among the ancestors of ``{i} and Q``, since no other table
moves the joint of ``(phi_i, phi_Q)``, and column ``c``):

* The joint ``P(phi_i, phi_Q)`` is linear in the column: with ``J_s`` the joint computed with
  the column set to the point mass on state ``s`` (one exact inference each), the column
  ``theta'`` gives ``sum_s theta'_s J_s``. Every changed column is then a few array operations.
* **Bound.** Each conditional ``P(q | a) = (c . theta') / (d . theta')`` is linear-fractional in
  ``theta'``, so its maximum and minimum over the set ``{theta' in the simplex, TV(theta',
  theta) <= delta}`` are found exactly by Dinkelbach's method, each step a greedy linear
  maximisation over that set (move up to ``delta`` of mass from the states of lowest weight to
  the one of highest). The influence after any such change is at most ``max_q max_{a != b}
  log hi(q|a) / lo(q|b)`` (the two extremes taken separately: an upper bound, widened by
  :data:`BOUND_MARGIN` for float64's rounding). Below eps for every column: ``STABLE``.
* **Witness.** The columns attaining those extremes, and every move of up to ``delta`` from one
  state to another, are evaluated exactly (the influence of the changed joint); one reaching
  eps is a witness: ``FLIPS``, with the table, the column, its values before and after, the
  influence reached and the least change (bisection) that still flips it. With the query, the
  plan is made again under the changed model to show the scale it then needs.
* Otherwise (the bound reaches eps, no witness found, or the time limit cut the test short):
  ``UNDECIDED``, flagged as fragile: when in doubt the choice is reported, never cleared.

This is a diagnostic of the plan's robustness to the model, not part of its guarantee (which
holds for the model as given); it errs towards flagging.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from quiltpriv.errors import ParameterError, PlanError, QuiltPrivError
from quiltpriv.inference.influence import joint_marginal
from quiltpriv.mechanisms.apmqm import Plan, SensitivePlan
from quiltpriv.model.network import CPD, Theta, check_theta
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_fields
from quiltpriv.utils.format import fmt_number, fmt_set
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_array, check_scalar

__all__ = ["BOUND_MARGIN", "DEFAULT_DELTA", "DEFAULT_TIME_LIMIT", "AttributeFragility",
           "Fragility", "TableChange", "fragility", "influence_of_joint"]

#: Default largest change of one column, in total variation (half the L1 distance).
DEFAULT_DELTA = 0.05
#: Default time budget of the whole test, in seconds.
DEFAULT_TIME_LIMIT = 30.0
#: Relative widening of the upper bound (float64 rounding of the joints and of Dinkelbach's
#: steps), so that ``STABLE`` is never claimed within rounding of eps.
BOUND_MARGIN = 1e-9
_MAX_STEPS = 64


@dataclass(frozen=True)
class TableChange:
    """One changed column of one member's table, and the influence it gives."""

    member: int
    node: str
    column: tuple[tuple[str, str], ...]
    before: tuple[float, ...]
    after: tuple[float, ...]
    change: float
    influence: float

    def where(self) -> str:
        cond = ", ".join(f"{p} = {s}" for p, s in self.column)
        return f"P({self.node} | {cond})" if cond else f"P({self.node})"

    def to_dict(self) -> dict[str, Any]:
        return {"member": self.member, "node": self.node,
                "column": {p: s for p, s in self.column}, "before": list(self.before),
                "after": list(self.after), "change": self.change,
                "influence": "inf" if math.isinf(self.influence) else self.influence}


@renamed_fields(node="sensitive")
@dataclass(frozen=True)
class AttributeFragility(JSONResult):
    """The perturbation test of one sensitive attribute's chosen quilt.

    Attributes
    ----------
    sensitive : str
        The sensitive attribute ``i`` (``node`` is its deprecated name; the JSON key stays
        ``"node"``).
    quilt : tuple of str
    influence : float
        ``e(Q|i)`` as the plan states it.
    sensitivity : float
        ``Delta_{A and N} F`` of the quilt (0: it needs no noise).
    verdict : {"FLIPS", "STABLE", "UNDECIDED"}
    bound : float
        The largest influence any change of at most ``delta`` in one table can give (an upper
        bound; ``inf`` when unbounded or not computed).
    bound_at : str or None
        The table whose change gives ``bound``.
    witness : TableChange or None
        A change of at most ``delta`` that makes the quilt infeasible (``FLIPS`` only).
    least_change : float or None
        The least change (total variation, found by bisection) of the witness's column that
        still makes the quilt infeasible.
    columns_checked, columns_total : int
        Columns tested, and columns that can move the influence.
    complete : bool
        False when the time limit stopped the test.
    replanned_scale : float or None
        With the query: the scale the plan needs under the witness's model.
    """

    sensitive: str
    quilt: tuple[str, ...]
    influence: float
    sensitivity: float
    verdict: str
    bound: float
    bound_at: str | None
    witness: TableChange | None
    least_change: float | None
    columns_checked: int
    columns_total: int
    complete: bool
    replanned_scale: float | None = None

    @property
    def fragile(self) -> bool:
        return self.verdict != "STABLE"

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.sensitive, "quilt": list(self.quilt), "influence": self.influence,
                "sensitivity": self.sensitivity, "verdict": self.verdict,
                "fragile": self.fragile,
                "bound": "inf" if math.isinf(self.bound) else self.bound,
                "bound_at": self.bound_at,
                "witness": None if self.witness is None else self.witness.to_dict(),
                "least_change": self.least_change, "columns_checked": self.columns_checked,
                "columns_total": self.columns_total, "complete": self.complete,
                "replanned_scale": self.replanned_scale}


@dataclass(frozen=True)
class Fragility(JSONResult):
    """:func:`fragility`'s result: one row per sensitive attribute, in plan order."""

    epsilon: float
    delta: float
    scale: float
    rows: tuple[AttributeFragility, ...]
    complete: bool

    @property
    def fragile(self) -> tuple[str, ...]:
        return tuple(r.sensitive for r in self.rows if r.fragile)

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "scale": self.scale,
                "complete": self.complete, "fragile": list(self.fragile),
                "rows": [r.to_dict() for r in self.rows]}

    def explain(self) -> str:
        lines = [f"fragility: can a change of at most {fmt_number(self.delta)} (total variation) "
                 "in one "
                 f"column of one table make a chosen quilt infeasible (e(Q|i) >= eps = "
                 f"{fmt_number(self.epsilon)})?"]
        for r in self.rows:
            head = f"  {r.sensitive}: quilt {fmt_set(r.quilt)}, e(Q|i) = {fmt_number(r.influence)}"
            if r.verdict == "STABLE":
                lines.append(f"{head}: STABLE (at most {fmt_number(r.bound)} after any such "
                             f"change; {r.columns_checked} columns tested)")
                continue
            if r.verdict == "FLIPS":
                w = r.witness
                assert w is not None
                lines.append(
                    f"{head}: FRAGILE, FLIPS: changing {w.where()} in member {w.member} from "
                    f"{_vec(w.before)} to {_vec(w.after)} (total variation "
                    f"{fmt_number(w.change)}) gives e(Q|i) = {fmt_number(w.influence)}; a "
                    "change of "
                    f"{fmt_number(r.least_change or w.change)} already does")
                if r.sensitivity == 0:
                    lines.append("    the quilt needs no noise: after the change this "
                                 "attribute needs another quilt"
                                 + ("" if r.replanned_scale is None else
                                    "; the plan's scale goes from "
                                    f"{fmt_number(self.scale, rounding='up')} "
                                    f"to {fmt_number(r.replanned_scale)}"))
                elif r.replanned_scale is not None:
                    lines.append("    the plan's scale goes from "
                                 f"{fmt_number(self.scale, rounding='up')} to "
                                 f"{fmt_number(r.replanned_scale)}")
                continue
            why = ("the time limit cut the test short" if not r.complete else
                   f"a change of {r.bound_at} may reach e(Q|i) = {fmt_number(r.bound)} (an upper "
                   "bound), no change found that does")
            lines.append(f"{head}: FRAGILE, UNDECIDED ({why}; {r.columns_checked} of "
                         f"{r.columns_total} columns tested)")
        if not self.complete:
            lines.append("  (cut short by the time limit: untested choices are flagged)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _vec(v: tuple[float, ...]) -> str:
    return "(" + ", ".join(f"{fmt_number(x, 4)}" for x in v) + ")"


# -- linear and linear-fractional optimisation over a total-variation ball ----------------------


def _greedy_max(w: np.ndarray, theta: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``w`` (shape ``(k, M)``): ``max w . t`` over ``t`` in the simplex with
    ``TV(t, theta) <= delta``, and a maximiser (shape ``(k, M)``).

    Exact: moving mass from a state of weight ``w_s`` to one of weight ``w_t`` gains ``w_t -
    w_s``, so the best move takes up to ``delta`` from the lightest states first and puts it
    all on the heaviest.
    """
    order = np.argsort(w, axis=0, kind="stable")            # ascending weight
    ts = theta[order]                                         # (k, M)
    before = np.cumsum(ts, axis=0) - ts
    take = np.clip(delta - before, 0.0, ts)
    take[-1] = 0.0                                            # the heaviest state receives
    moved = ts - take
    moved[-1] += take.sum(axis=0)
    best = np.empty_like(moved)
    np.put_along_axis(best, order, moved, axis=0)
    value = (w * best).sum(axis=0)
    return value, best


def _ratio_max(c: np.ndarray, d: np.ndarray, theta: np.ndarray, delta: float,
               cap: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Per column: ``max (c . t) / (d . t)`` over the ball (where ``d . t > 0``; ``c, d >= 0``),
    by Dinkelbach's method, and a maximiser.

    Each step maximises ``(c - lam d) . t`` exactly (:func:`_greedy_max`); ``lam`` rises to the
    maximum and stops when no point improves on it. The result is widened by
    :data:`BOUND_MARGIN` (an upper bound up to float64 rounding). ``cap`` is returned where no
    finite bound is found: 1 for a conditional probability (``c <= d`` entrywise), ``inf`` for
    a ratio that ``d . t -> 0`` could make unbounded.
    """
    m = c.shape[1]
    d0 = theta @ d
    lam = np.where(d0 > 0, (theta @ c) / np.where(d0 > 0, d0, 1.0), 0.0)
    arg = np.repeat(theta[:, None], m, axis=1)
    f = np.full(m, np.inf)
    for _ in range(_MAX_STEPS):
        f, t = _greedy_max(c - lam * d, theta, delta)
        den = (d * t).sum(axis=0)
        new = np.where(den > 0, (c * t).sum(axis=0) / np.where(den > 0, den, 1.0), lam)
        better = new > lam
        arg[:, better] = t[:, better]
        lam = np.where(better, new, lam)
        if not better.any():
            break
    else:  # did not settle: no bound better than the trivial one
        return np.full(m, cap), arg
    # No point beats lam by more than f / (d . t): with d_min the least d . t over the ball,
    # every ratio is at most lam + f / d_min (a vertex with d . t = 0 has c . t = 0 too, and
    # adds nothing to f).
    d_min = -_greedy_max(-d, theta, delta)[0]
    slack = np.maximum(f, 0.0)
    extra = np.where(d_min > 0, slack / np.where(d_min > 0, d_min, 1.0),
                     np.where(slack <= 1e-16 * np.maximum(lam, 1e-300), 0.0, np.inf))
    return np.minimum(lam * (1 + BOUND_MARGIN) + extra, cap), arg


def influence_of_joint(joint: np.ndarray) -> float:
    """[ZOC22, Def. 8] from ``joint[a, q]``: ``max_q log max_a P(q|a) / min_b P(q|b)`` over the
    values ``a``, ``b`` of positive probability (``inf`` when some ``q`` is possible under one
    and impossible under another)."""
    arr = check_array(joint, "joint")
    if arr.ndim < 1 or arr.shape[0] == 0 or np.any(arr < 0):
        raise ParameterError("joint must be a table of probabilities >= 0, axes (a, q...)")
    j = arr.reshape(arr.shape[0], -1)
    p = j.sum(axis=1)
    cond = j[p > 0] / p[p > 0, None]
    if cond.shape[0] < 2:
        return 0.0
    hi, lo = cond.max(axis=0), cond.min(axis=0)
    if np.any((lo == 0) & (hi > 0)):
        return math.inf
    ok = hi > 0
    return float(max(0.0, np.max(np.log(hi[ok]) - np.log(lo[ok]), initial=0.0)))


def _influence_bound(terms: np.ndarray) -> tuple[float, int, int, int]:
    """The largest of ``terms[a, b, q]`` (bounds of ``log P'(q|a) / P'(q|b)``) over ``a != b``,
    at least 0, and its ``(a, b, q)``."""
    k = terms.shape[0]
    terms = terms.copy()
    terms[np.arange(k), np.arange(k), :] = -np.inf
    flat = int(np.argmax(terms))
    a, b, q = np.unravel_index(flat, terms.shape)
    return float(max(terms.flat[flat], 0.0)), int(a), int(b), int(q)


# -- the test ------------------------------------------------------------------------------------


@dataclass
class _Column:
    member: int
    node: str
    index: int
    values: np.ndarray          # the column theta (k,)
    joints: np.ndarray          # J_s, shape (k, k_i, X)

    def joint(self, t: np.ndarray) -> np.ndarray:
        return np.tensordot(t, self.joints, axes=1)


def _columns(theta: Theta, targets: tuple[str, ...]) -> Iterator[tuple[int, str, int]]:
    anc = theta.sort(theta.ancestral_set(targets))
    for m in range(len(theta.members)):
        for v in anc:
            table = theta.members[m][v].table
            for c in range(int(np.prod(table.shape[1:], dtype=int))):
                yield m, v, c


def _column_total(theta: Theta, targets: tuple[str, ...]) -> int:
    anc = theta.ancestral_set(targets)
    return len(theta.members) * sum(int(np.prod(theta.members[0][v].table.shape[1:], dtype=int))
                                    for v in anc)


def _with_column(theta: Theta, member: int, node: str, column: int,
                 values: np.ndarray) -> Theta:
    """``theta`` with one column of one member's table replaced (no renormalising)."""
    old = theta.members[member][node].table
    flat = np.array(old, copy=True).reshape(old.shape[0], -1)
    if flat.dtype == object:
        from fractions import Fraction

        flat[:, column] = [Fraction(float(x)) for x in values]
    else:
        flat[:, column] = values
    arr = flat.reshape(old.shape)
    arr.setflags(write=False)
    members = [dict(mm) for mm in theta.members]
    members[member][node] = CPD(node, theta.parents[node], arr)
    return Theta(theta.nodes, theta.states, theta.parents, members, theta.names)


def _column_joints(theta: Theta, member: int, node: str, column: int,
                   nodes: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    table = theta.members[member][node].table
    k = table.shape[0]
    values = np.asarray(np.asarray(table).reshape(k, -1)[:, column], dtype=float)
    joints = []
    for s in range(k):
        unit = np.zeros(k)
        unit[s] = 1.0
        t = _with_column(theta, member, node, column, unit)
        j = np.asarray(joint_marginal(t, nodes, member), dtype=float)
        joints.append(j.reshape(j.shape[0], -1))
    return values, np.stack(joints)


def _label(theta: Theta, node: str, column: int) -> tuple[tuple[str, str], ...]:
    parents = theta.parents[node]
    if not parents:
        return ()
    idx = np.unravel_index(column, [len(theta.states[p]) for p in parents])
    return tuple((p, theta.states[p][int(i)]) for p, i in zip(parents, idx, strict=True))


def _candidates(col: _Column, delta: float, extra: list[np.ndarray]) -> Iterator[np.ndarray]:
    """Changed columns to evaluate: the bound's extremes, and every move of up to ``delta``
    (and half of it) from one state to another."""
    yield from extra
    th = col.values
    k = th.size
    for s in range(k):
        for t in range(k):
            if s == t or th[s] <= 0:
                continue
            for step in (delta, delta / 2):
                moved = min(step, th[s])
                new = th.copy()
                new[s] -= moved
                new[t] += moved
                yield new


def _best_witness(col: _Column, delta: float, eps: float,
                  extra: list[np.ndarray]) -> tuple[float, np.ndarray]:
    best, arg = -1.0, col.values
    for t in _candidates(col, delta, extra):
        e = influence_of_joint(col.joint(t))
        if e > best:
            best, arg = e, t
        if e >= eps:
            break
    return best, arg


def _bound(col: _Column, delta: float) -> tuple[float, list[np.ndarray]]:
    """The upper bound of the influence over the ball, and the columns attaining its terms.

    Two bounds of ``log P'(q|a) / P'(q|b)``, the smaller kept per ``(a, b, q)``: the extremes
    of the two conditionals taken separately, ``hi(q|a) / lo(q|b)``; and, since the same column
    moves both, ``max P'(a, q) / P'(b, q)`` times ``max P'(b) / P'(a)`` (each factor
    linear-fractional, maximised exactly).
    """
    k, ki, x = col.joints.shape
    th = col.values
    c = col.joints.reshape(k, ki * x)                        # J_s(a, q)
    p = col.joints.sum(axis=2)                                # p_s(a)
    d = np.repeat(p, x, axis=1)                               # p_s(a), per (a, q)
    hi, hi_arg = _ratio_max(c, d, th, delta)
    lo, lo_arg = _ratio_min(c, d, th, delta)
    hi2, lo2 = hi.reshape(ki, x), lo.reshape(ki, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        apart = np.log(hi2[:, None, :]) - np.log(lo2[None, :, :])
    joint_num = np.broadcast_to(col.joints[:, :, None, :], (k, ki, ki, x)).reshape(k, -1)
    joint_den = np.broadcast_to(col.joints[:, None, :, :], (k, ki, ki, x)).reshape(k, -1)
    r1, r1_arg = _ratio_max(joint_num, joint_den, th, delta, cap=np.inf)
    r2, r2_arg = _ratio_max(np.broadcast_to(p[:, None, :], (k, ki, ki)).reshape(k, -1),
                            np.broadcast_to(p[:, :, None], (k, ki, ki)).reshape(k, -1), th,
                            delta, cap=np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        together = np.log(r1.reshape(ki, ki, x)) + np.log(r2.reshape(ki, ki))[:, :, None]
    terms = np.fmin(apart, together)                          # NaN (inf - inf) drops out
    terms = np.where(np.isnan(terms), np.inf, terms)          # neither bound: none at all
    terms = np.where(hi2[:, None, :] > 0, terms, -np.inf)     # q impossible under a: no term
    value, a, b, q = _influence_bound(terms)
    return value, [hi_arg[:, a * x + q], lo_arg[:, b * x + q],
                   r1_arg[:, (a * ki + b) * x + q], r2_arg[:, a * ki + b]]


def _ratio_min(c: np.ndarray, d: np.ndarray, theta: np.ndarray, delta: float,
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per column: ``min (c . t) / (d . t)`` over the ball (``0 <= c <= d``): one minus the
    maximum of ``(d - c) . t / d . t``, lowered by :data:`BOUND_MARGIN`."""
    up, arg = _ratio_max(d - c, d, theta, delta)
    # the ratio of d - c is widened upwards, so 1 - it is a lower bound of c / d
    return np.maximum(1.0 - up - BOUND_MARGIN, 0.0), arg


def _least_change(col: _Column, delta: float, eps: float) -> float:
    """Bisection: the least change of this column (within ``delta``) found to flip it."""
    lo, hi = 0.0, delta
    for _ in range(20):
        mid = (lo + hi) / 2
        _, extra = _bound(col, mid)
        e, _ = _best_witness(col, mid, eps, extra)
        if e >= eps:
            hi = mid
        else:
            lo = mid
    return hi


def _attribute(theta: Theta, sp: SensitivePlan, eps: float, delta: float,
               deadline: float) -> tuple[AttributeFragility, _Column | None, np.ndarray | None]:
    quilt = tuple(sp.quilt)
    if not quilt:  # the trivial quilt: e = 0 under every model
        return AttributeFragility(sp.sensitive, quilt, sp.influence, sp.sensitivity, "STABLE", 0.0,
                                  None, None, None, 0, 0, True), None, None
    nodes = (sp.sensitive, *quilt)
    total = _column_total(theta, nodes)
    checked, worst, worst_at = 0, -1.0, None
    for m, v, c in _columns(theta, nodes):
        if time.monotonic() > deadline:
            return AttributeFragility(sp.sensitive, quilt, sp.influence, sp.sensitivity,
                                      "UNDECIDED", math.inf, None, None, None, checked, total,
                                      False), None, None
        values, joints = _column_joints(theta, m, v, c, nodes)
        col = _Column(m, v, c, values, joints)
        checked += 1
        bound, extra = _bound(col, delta)
        where = f"P({v} | {', '.join(f'{p} = {s}' for p, s in _label(theta, v, c))}) in " \
                f"member {m}" if theta.parents[v] else f"P({v}) in member {m}"
        if bound > worst:
            worst, worst_at = bound, where
        if bound < eps:
            continue
        e, arg = _best_witness(col, delta, eps, extra)
        if e >= eps:
            change = float(np.abs(arg - values).sum() / 2)
            w = TableChange(m, v, _label(theta, v, c), tuple(map(float, values)),
                            tuple(map(float, arg)), change, e)
            return AttributeFragility(sp.sensitive, quilt, sp.influence, sp.sensitivity, "FLIPS",
                                      worst, worst_at, w, _least_change(col, delta, eps),
                                      checked, total, True), col, arg
    verdict = "STABLE" if worst < eps else "UNDECIDED"
    return AttributeFragility(sp.sensitive, quilt, sp.influence, sp.sensitivity, verdict,
                              max(worst, 0.0), worst_at, None, None, checked, total,
                              True), None, None


def fragility(theta: Theta, plan: Plan, query: Query | None = None, *,
              delta: float = DEFAULT_DELTA, time_limit: float | None = DEFAULT_TIME_LIMIT,
              ) -> Fragility:
    """Test every sensitive attribute's chosen quilt against small changes of one table.

    Parameters
    ----------
    theta : Theta
        The model the plan was made for (verify a plan read from a file first).
    plan : Plan
        An APMQM plan ([ZOC22, Alg. 3]).
    query : Query, optional
        The plan's query: with it, a flip is followed by planning again under the changed
        model, to show the scale then needed.
    delta : float
        The largest change of one column, in total variation (``0 < delta <= 1``; default
        :data:`DEFAULT_DELTA`).
    time_limit : float or None
        Seconds for the whole test; attributes not finished in time are ``UNDECIDED``.

    Returns
    -------
    Fragility
        One :class:`AttributeFragility` per sensitive attribute (see the module's
        documentation for the verdicts).
    """
    theta = check_theta(theta)
    if not isinstance(plan, Plan):
        raise PlanError(f"plan must be a quiltpriv Plan, got {type(plan).__name__}")
    if query is not None:
        query = check_query(query)
    if plan.model_fingerprint != theta.fingerprint():
        raise PlanError("fragility: the plan was made for another model (verify it first)")
    delta = check_scalar(delta, "delta", min_val=0.0, max_val=1.0)
    if delta <= 0:
        raise ParameterError("delta must be > 0")
    if time_limit is not None:
        time_limit = check_scalar(time_limit, "time_limit", min_val=0.0)
    start = time.monotonic()
    deadline = math.inf if time_limit is None else start + time_limit
    rows = []
    for sp in plan.sensitive:
        row, col, arg = _attribute(theta, sp, plan.epsilon, delta, deadline)
        if col is not None and arg is not None and query is not None \
                and time.monotonic() < deadline:
            row = _replanned(theta, plan, query, row, col, arg, deadline)
        rows.append(row)
    return Fragility(plan.epsilon, delta, plan.scale, tuple(rows),
                     all(r.complete for r in rows))


def _replanned(theta: Theta, plan: Plan, query: Query, row: AttributeFragility, col: _Column,
               arg: np.ndarray, deadline: float) -> AttributeFragility:
    from dataclasses import replace

    from quiltpriv.mechanisms.apmqm import plan as make_plan

    changed = _with_column(theta, col.member, col.node, col.index, arg)
    left = max(deadline - time.monotonic(), 1e-3) if math.isfinite(deadline) else None
    try:
        p = make_plan(changed, query, [s.sensitive for s in plan.sensitive], plan.epsilon,
                      time_limit=left)
    except QuiltPrivError:  # the consequence is extra information only
        return row
    return replace(row, replanned_scale=p.scale)
