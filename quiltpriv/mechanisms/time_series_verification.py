"""Verifying plans of time series: every step of a chain or HMM, independently and in linear time.

:func:`quiltpriv.mechanisms.verification.check_plan` recomputes what a saved plan claims. On a
long time series the general route (one influence computation and, for a claim of
optimality, one run of the planner per sensitive node) is quadratic in the series and its
error bounds grow with the quilt. This module verifies the two plans the time-series searches
make, from the model and the query alone, without calling those searches:

* a plan of a directed chain ``X_1 -> ... -> X_T`` held as runs
  (:class:`~quiltpriv.mechanisms.step_plans.StepPlans`: quilts ``{X_(i-a), X_(i+b)}``,
  :mod:`quiltpriv.mechanisms.chain_quilts`);
* a plan of a hidden Markov model with two hidden states whose query reads every observation
  with one weight (:mod:`quiltpriv.mechanisms.hmm_quilts`): each node's quilt is parsed into
  its shape (the observations past each end of a window, the hidden state beyond them, the
  node's own observation) or handed back to the general route.

Per step it recomputes the stated quilt's influence ``e(Q | i)`` ([ZOC22, Def. 8]) with a
rigorous float64 error bound ``beta`` (Higham, Section 3.1: every number here is a sum of
products of non-negative numbers, so each carries a relative error of at most ``gamma_n``
after ``n`` roundings; the logs and their sums add at most a few units in the last place of
their magnitudes) and accepts the stated influence only when it is at least the recomputed
value plus ``beta``, so it is never below the exact one. The sensitivity ``Delta_{A and N}``
is the query's own for each step's ``N``, and the scale is checked exactly against
``Delta / (eps - e)`` rounded up ([ZOC22, Alg. 3]).

A claim of optimality is checked in the same structure:

* chain: every quilt of ``X_i`` is dominated by one ``{X_(i-a), X_(i+b)}`` (the same ``N``,
  fewer nodes: [SWC17]), ``e(a, b) = max over pairs of L_a + R_b`` with ``L_a, R_b >= 0`` and
  ``Delta(N)`` monotone in ``N``; the quilts within a radius ``K`` are enumerated and those
  beyond are bounded below (``Delta`` of the ``K`` nearest steps over ``eps - e(one side)``);
  ``K`` doubles until the bound closes, so the work is ``O(T K^2)``;
* HMM: every quilt is dominated by a *window* (every observation outside ``X_(i-a) ..
  X_(i+b)`` held fixed; the dominance proof is in :mod:`~quiltpriv.mechanisms.hmm_quilts`),
  whose influence follows from the largest and smallest likelihood ratio of the hidden state
  that the fixed observations can produce. Here those extremes are propagated as an interval
  through each observation (a ratio times the emission ratio) and each transition (a
  linear-fractional map, increasing or decreasing with the sign of its determinant): exact,
  whatever the sign, and one scan over the series serves every window.

The claim holds when the stated scale is within :data:`OPTIMALITY_RTOL` of a proven *lower*
bound on the least scale over all quilts (the influences at ``recomputed - beta``); the
tolerance covers the two searches' different upward roundings (about ``1e-9`` relative at
``T = 500,000``), and optimality is a claim about the noise's size, not its privacy.

Steps of equal inputs (the middle of a homogeneous series) are evaluated once. Models outside
these structures (zero or tiny probabilities, more than two hidden states, quilts of another
shape, a query reading hidden states) are not handled here: :func:`check_time_series` returns
None and the general route verifies the plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from quiltpriv.mechanisms.chain_quilts import _groups, chain_order
from quiltpriv.mechanisms.step_plans import StepPlans, StepRun, window_sensitivities
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_fields
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import jsonable
from quiltpriv.utils.validation import check_epsilon

__all__ = ["OPTIMALITY_RTOL", "check_time_series"]

#: A claim of optimality holds when the stated scale is at most a proven lower bound on the
#: least scale over all quilts times ``1 + OPTIMALITY_RTOL``.
OPTIMALITY_RTOL = 1e-8

#: The unit roundoff of float64.
_U = 2.0**-53

#: Every probability of the model and every computed one must be at least this (no underflow
#: can then hide a rounding), else the general route verifies the plan.
_FLOOR = 2.0**-900

#: Largest search radius of the optimality check (a claim not proven within it is refused).
_MAX_RADIUS = 1 << 10

#: Largest table of one chunk of evaluations (floats).
_CHUNK = 2**21


class _NotHere(Exception):
    """The model or plan is outside what this module verifies (the general route does)."""


def _gamma(n: float) -> float:
    """Higham's ``gamma_n = n u / (1 - n u)``: the relative error after ``n`` roundings."""
    if n * _U >= 0.1:
        raise _NotHere("too many roundings for a useful error bound")
    return n * _U / (1 - n * _U)


def _log_ratio_bound(n: float) -> float:
    """Error of ``log p - log q`` from ``p`` and ``q`` each within ``gamma_n`` relative
    (``|log(1 + t)| <= g / (1 - g)`` for ``|t| <= g``)."""
    g = _gamma(n)
    return 2 * g / (1 - g)


def _log_bound(terms: float) -> float:
    """Error of a sum of a few float64 logs whose magnitudes add to at most ``terms``: each log
    within 2 ulp of its value, each of at most 8 additions within 1 ulp of a partial sum."""
    return 10 * _U * terms


@renamed_fields(node="sensitive")
@dataclass(frozen=True)
class Row:
    """One verified unit (a run of chain steps or one node): the fields of
    :class:`~quiltpriv.mechanisms.verification.AttributeCheck` (``sensitive`` names the
    attribute or the run; ``node`` is its deprecated name)."""

    sensitive: str
    ok: bool
    reason: str | None
    quilt: tuple[str, ...]
    stated_influence: float
    influence: float | None
    stated_sensitivity: float
    sensitivity: float | None
    stated_scale: float
    scale: float | None
    optimal: bool
    least_scale: float | None


def check_time_series(theta: Theta, query: Query, sensitive: Any, epsilon: float,
                      quilt_scale: Any) -> list[Row] | None:
    """The rows of a time-series plan's verification, or None where the general route must
    verify it (a plan or model outside the structures of the module docstring).

    ``sensitive`` is the plan's :attr:`~quiltpriv.mechanisms.apmqm.Plan.sensitive`;
    ``quilt_scale`` is :func:`quiltpriv.mechanisms.apmqm.quilt_scale` (the exact need).
    """
    # untrusted arguments get the package's errors; a plan of another shape gets None
    check_theta(theta)
    check_query(query)
    eps = check_epsilon(epsilon)
    try:
        from quiltpriv.mechanisms.hmm_step_plans import HMMStepPlans

        if isinstance(sensitive, StepPlans) and not isinstance(sensitive, HMMStepPlans):
            return _check_chain(theta, query, sensitive, eps, quilt_scale)
        return None  # an HMM's plan: quiltpriv.mechanisms.hmm_verification
    except _NotHere:
        return None


# -- shared pieces ------------------------------------------------------------------------------


def _member_row(theta: Theta, node: str, member: Any, pair: Any) -> str | None:
    """What is wrong with a stated member and pair of values, if anything."""
    if member is not None and member not in theta.names and len(theta) > 1:
        return (f"its influence_member {member!r} is not a member of Theta "
                f"({', '.join(theta.names)})")
    if pair is not None:
        states = [jsonable(x) for x in theta.states[node]]
        bad = [x for x in pair if x not in states]
        if bad:
            return f"its influence_pair names {bad[0]!r}, not a value of {node!r}"
    return None


def _scale_reason(influence: float, scale: float, optimal: bool, eps: float, need: float,
                  lo: float | None) -> str | None:
    """What is wrong with a stated scale, if anything: below the quilt's ``need``
    (``Delta / (eps - e)``, infinite when ``e >= eps``), or claimed least although the
    recomputed least over all quilts, ``lo`` (None: none found), is below it."""
    if not scale >= need:
        return (f"its influence {_fmt(influence, 17)} is not below epsilon = {_fmt(eps)}, so no "
                "finite scale makes this quilt private" if math.isinf(need) else
                f"it states scale {_fmt(scale, 17)}, below Delta / (eps - e) = {_fmt(need, 17)}")
    if optimal and scale > 0 and not (lo is not None and scale <= lo * (1 + OPTIMALITY_RTOL)):
        return ("it claims the least scale over all quilts, but a quilt may need only "
                f"{_fmt(lo if lo is not None else 0, 17)} < {_fmt(scale, 17)}")
    return None


def _weights(theta: Theta, query: Query, nodes: Sequence[str]) -> tuple[np.ndarray, float | None]:
    """Per node of ``nodes``, ``Delta`` of that node alone (0 if the query does not read it),
    and the cap of an all-or-nothing sensitivity (None for an additive one)."""
    structure = query.sensitivity_structure
    attrs = set(query.attributes)
    if structure == "additive":
        w = np.array([float(query.sensitivity((v,))) if v in attrs else 0.0 for v in nodes])
        return w, None
    if structure == "all-or-nothing":
        cap = float(query.sensitivity(query.attributes))
        if query.sensitivity(()) != 0.0 or any(query.sensitivity((v,)) != cap
                                              for v in dict.fromkeys(query.attributes)):
            raise _NotHere("not an all-or-nothing sensitivity")
        return np.array([1.0 if v in attrs else 0.0 for v in nodes]), cap
    raise _NotHere("a general (custom) sensitivity")


def _delta_low(sums: np.ndarray, cap: float | None, n_terms: int) -> np.ndarray:
    """A lower bound on ``Delta(N)`` from float sums of the weights over ``N`` (each sum of at
    most ``n_terms`` non-negative terms: relative error ``gamma_n``)."""
    if cap is not None:
        return np.where(sums > 0, cap, 0.0)
    return sums * (1 - _gamma(n_terms + 1))


def _scale_low(delta: np.ndarray, e_low: np.ndarray, eps: float) -> np.ndarray:
    """``Delta / (eps - e)`` rounded down from lower bounds of both (:func:`quilt_scale`'s
    cases: ``inf`` for ``e >= eps``, or for ``Delta = 0`` and ``e > eps``; 0 for ``Delta = 0``
    and ``e <= eps``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(e_low < eps, delta / (eps - e_low), np.inf) * (1 - 4 * _U)
    s = np.where((delta == 0) & (e_low <= eps), 0.0, s)  # quilt_scale's 0 (or inf)
    return np.where(np.isnan(s), np.inf, s)


# -- chains -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Chain:
    """A positive chain's numbers: ``f[m][t][u, x] = P(X_t = x | X_(t-1) = u)`` (``f[m][0]``
    unused), log marginals ``lpi[m][t]`` and the step ids (equal ids: equal inputs)."""

    f: list[np.ndarray]
    lpi: list[np.ndarray]
    pi_bound: float
    ids: np.ndarray
    k: int


def _chain_numbers(theta: Theta, order: Sequence[str], weights: np.ndarray) -> _Chain:
    k = theta.cardinality[order[0]]
    if any(theta.cardinality[v] != k for v in order):
        raise _NotHere("the steps have different numbers of states")
    n = len(order)
    fs, lpis, rows = [], [], []
    for cpds in theta.members:
        p0 = np.asarray(cpds[order[0]].table, dtype=np.float64).reshape(k)
        f = np.empty((n, k, k))
        f[0] = np.eye(k)
        seen: dict[int, np.ndarray] = {}
        for t in range(1, n):
            table = cpds[order[t]].table
            hit = seen.get(id(table))
            if hit is None:
                hit = seen[id(table)] = np.asarray(table, dtype=np.float64).T
            f[t] = hit
        if np.any(p0 < _FLOOR) or np.any(f[1:] < _FLOOR):
            raise _NotHere("a zero or tiny probability")
        pi = np.empty((n, k))
        pi[0] = p0
        cur = p0
        t = 1
        while t < n:
            nxt = cur @ f[t]
            # a fixed point of a matrix every later step repeats: the rest are these floats
            if np.array_equal(nxt, cur) and (f[t:] == f[t]).all():
                pi[t:] = cur
                break
            pi[t] = cur = nxt
            t += 1
        if np.any(pi < _FLOOR):
            raise _NotHere("a marginal too small for float64 here")
        fs.append(f)
        lpis.append(np.log(pi))
        rows += [f.reshape(n, -1), pi]
    rows.append(weights[:, None])
    ids = _groups(np.concatenate(rows, axis=1))[1].astype(np.int64)
    # P(X_t) after t vector-matrix products of k non-negative terms: gamma_(t k) relative
    return _Chain(fs, lpis, _log_ratio_bound(n * k + 1), ids, k)


def _side(ch: _Chain, m: int, steps: np.ndarray, dmax: int, left: bool,
          only_last: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per step, ``L_d`` (``left``) or ``R_d`` for ``d = 1..dmax`` of member ``m``, shape
    ``(n, dmax + 1, k, k)`` (``[:, 0]`` unused, ``nan`` past the chain's end), and the
    largest magnitude of a log used per ``d``.

    ``L_d(x, x') = max_u log P(x | u) / P(x' | u) + log P(x') / P(x)`` (``u = X_(i-d)``),
    ``R_d(x, x') = max_c log P(c | x) / P(c | x')`` (``c = X_(i+d)``). With ``only_last``
    only ``d = dmax`` is kept (index 0 of a table of shape ``(n, 1, k, k)``)."""
    f = ch.f[m]
    n_steps, k = f.shape[0], ch.k
    n = len(steps)
    out = np.full((n, 1 if only_last else dmax + 1, k, k), np.nan)
    mags = np.zeros(dmax + 1)
    cur = np.broadcast_to(np.eye(k), (n, k, k)).copy()
    lpi = ch.lpi[m][steps]
    for d in range(1, dmax + 1):
        src = steps - d + 1 if left else steps + d
        ok = (src >= 1) & (src < n_steps) if left else src < n_steps
        if left:
            ok &= steps - d >= 0
        if not ok.any():
            break
        srcc = np.clip(src, 1, n_steps - 1)
        cur = np.matmul(f[srcc], cur) if left else np.matmul(cur, f[srcc])
        good = cur[ok]
        if good.size and good.min() < _FLOOR:
            raise _NotHere("a transition product too small for float64 here")
        if only_last and d < dmax:
            continue
        lc = np.log(np.where(cur > 0, cur, 1.0))
        if left:  # rows u: lc[n, u, x] - lc[n, u, x'], max over u; then the marginals
            t = (lc[:, :, :, None] - lc[:, :, None, :]).max(axis=1)
            t = t + lpi[:, None, :] - lpi[:, :, None]
            mag = 2 * np.abs(lc[ok]).max(initial=0) + 2 * np.abs(lpi[ok]).max(initial=0)
        else:      # columns c: lc[n, x, c] - lc[n, x', c], max over c
            t = (lc[:, :, None, :] - lc[:, None, :, :]).max(axis=3)
            mag = 2 * np.abs(lc[ok]).max(initial=0)
        t[~ok] = np.nan
        out[:, 0 if only_last else d] = t
        mags[d] = mag
    return out, mags


def _pair_max(left: np.ndarray, right: np.ndarray, k: int) -> np.ndarray:
    """``max over x != x' of left[..., x, x'] + right[..., x, x']`` (broadcast)."""
    best = None
    for x in range(k):
        for y in range(k):
            if x != y:
                v = left[..., x, y] + right[..., x, y]
                best = v if best is None else np.fmax(best, v)
    assert best is not None
    return best


def _chain_bounds(ch: _Chain, a_max: int, b_max: int, mags_l: np.ndarray,
                  mags_r: np.ndarray) -> np.ndarray:
    """``beta(a, b)`` for ``a = 0..a_max``, ``b = 0..b_max`` (0: no quilt node there)."""
    k = ch.k
    bl = np.array([0.0] + [_log_ratio_bound(d * (k + 1)) + ch.pi_bound
                           for d in range(1, a_max + 1)])
    br = np.array([0.0] + [_log_ratio_bound(d * (k + 1)) for d in range(1, b_max + 1)])
    return (bl[:, None] + br[None, :] + _log_bound(1.0) * (mags_l[:a_max + 1, None]
                                                           + mags_r[None, :b_max + 1]))


def _influences(ch: _Chain, steps: np.ndarray, a_max: int, b_max: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Recomputed ``e(a, b)`` of ``steps`` (max over members) and its error bound, shape
    ``(n, a_max + 1, b_max + 1)``; ``nan`` where a quilt node lies outside the chain."""
    k = ch.k
    e = None
    mags_l = np.zeros(a_max + 1)
    mags_r = np.zeros(b_max + 1)
    for m in range(len(ch.f)):
        lt, ml = _side(ch, m, steps, a_max, True)
        rt, mr = _side(ch, m, steps, b_max, False)
        mags_l, mags_r = np.maximum(mags_l, ml), np.maximum(mags_r, mr)
        lt[:, 0] = 0.0
        rt[:, 0] = 0.0
        v = _pair_max(lt[:, :, None], rt[:, None, :], k)
        e = v if e is None else np.fmax(e, v)  # nan only where every member's is
    assert e is not None
    e[:, 0, 0] = 0.0  # Q = {}: nothing observed
    return e, _chain_bounds(ch, a_max, b_max, mags_l, mags_r)


def _stated_influence(ch: _Chain, pos: np.ndarray, a: int, b: int) -> float:
    """The largest recomputed ``e(a, b) + beta`` over the steps ``pos`` (``inf`` when a quilt
    node lies outside the chain)."""
    top = 0.0
    for s in range(0, len(pos), 1 << 16):
        steps = pos[s:s + (1 << 16)]
        e = None
        mags_l, mags_r = np.zeros(a + 1), np.zeros(b + 1)
        for m in range(len(ch.f)):
            shape = (len(steps), 1, ch.k, ch.k)
            lt, ml = _side(ch, m, steps, a, True, True) if a else (np.zeros(shape), mags_l)
            rt, mr = _side(ch, m, steps, b, False, True) if b else (np.zeros(shape), mags_r)
            mags_l, mags_r = np.maximum(mags_l, ml), np.maximum(mags_r, mr)
            v = _pair_max(lt[:, 0], rt[:, 0], ch.k) if a or b else np.zeros(len(steps))
            e = v if e is None else np.fmax(e, v)
        assert e is not None
        if np.isnan(e).any():
            return math.inf
        beta = _chain_bounds(ch, a, b, mags_l, mags_r)[a, b]
        top = max(top, float(np.max(e)) + beta if a or b else 0.0)
    return top


def _check_chain(theta: Theta, query: Query, steps: StepPlans, eps: float,
                 quilt_scale: Any) -> list[Row]:
    order = chain_order(theta)
    if order is None or tuple(steps.order) != order:
        raise _NotHere("not the model's chain")
    index = theta.index
    attr_pos = np.unique(np.fromiter((index[v] for v in query.attributes), dtype=np.int64))
    weights, cap = _weights(theta, query, order)
    ch = _chain_numbers(theta, order, weights)
    rows: list[Row] = []
    if not np.array_equal(steps.attributes, attr_pos):
        rows.append(_chain_row(steps, steps.runs[0], False,
                               "its query attributes are not the query's", None, None, None,
                               None))
        return rows
    deltas = window_sensitivities(steps, query)
    starts = np.concatenate([[0], np.cumsum([r.length for r in steps.runs])])
    optimal_steps: list[np.ndarray] = []
    stated: list[np.ndarray] = []
    run_of: list[np.ndarray] = []
    checks: list[tuple[StepRun, float, float, float]] = []
    for j, r in enumerate(steps.runs):
        pos = np.arange(r.first, r.first + r.length, dtype=np.int64)
        infl = _stated_influence(ch, pos, r.a, r.b)
        d = deltas[starts[j]:starts[j + 1]]
        need = quilt_scale(r.sensitivity, r.influence, eps)
        checks.append((r, infl, float(d[0]), need))
        if r.optimal and r.scale > 0:
            optimal_steps.append(pos)
            stated.append(np.full(r.length, r.scale))
            run_of.append(np.full(r.length, j))
    least = np.full(len(steps.runs), np.inf)
    if optimal_steps:
        pos = np.concatenate(optimal_steps)
        low = _chain_least(ch, weights, cap, eps, pos, np.concatenate(stated))
        np.minimum.at(least, np.concatenate(run_of), low)
    for j, (r, infl, delta, need) in enumerate(checks):
        d = deltas[starts[j]:starts[j + 1]]
        lo = None if not math.isfinite(least[j]) else float(least[j])
        reason = None
        if r.influence < infl:
            reason = (f"it states influence e(Q|i) = {_fmt(r.influence, 17)}, below the recomputed "
                      f"{_fmt(infl, 17)} (an upper bound on the exact value)")
        elif not np.all(d == r.sensitivity):
            bad = int(np.flatnonzero(d != r.sensitivity)[0])
            reason = (f"it states Delta_{{A&N}} F = {_fmt(r.sensitivity, 17)}, the query's is "
                      f"{_fmt(d[bad], 17)} for {order[r.first + bad]!r}")
        else:
            reason = (_scale_reason(r.influence, r.scale, r.optimal, eps, need, lo)
                      or _member_row(theta, order[r.first], r.member, r.pair))
        rows.append(_chain_row(steps, r, reason is None, reason, infl, delta, need, lo))
    return rows


def _chain_row(steps: StepPlans, r: StepRun, ok: bool, reason: str | None,
               infl: float | None, delta: float | None, need: float | None,
               least: float | None) -> Row:
    return Row(sensitive=steps.run_label(r), ok=ok, reason=reason, quilt=steps.run_quilt_parts(r),
               stated_influence=r.influence, influence=infl, stated_sensitivity=r.sensitivity,
               sensitivity=delta, stated_scale=r.scale, scale=need, optimal=r.optimal,
               least_scale=least)


def _chain_least(ch: _Chain, w: np.ndarray, cap: float | None, eps: float, pos: np.ndarray,
                 stated: np.ndarray) -> np.ndarray:
    """Per step of ``pos``, a proven lower bound on the least scale over all its quilts (at
    least ``stated / (1 + OPTIMALITY_RTOL)`` once proven; else the least bound reached at the
    largest radius)."""
    n_steps = len(w)
    pre = np.concatenate([[0.0], np.cumsum(w)])  # pre[j] = w[0..j-1]
    out = np.zeros(len(pos))
    todo = np.arange(len(pos))
    radius = 16
    while todo.size:
        kr = min(radius, n_steps)
        got, inside = _chain_round(ch, w, pre, cap, eps, pos[todo], kr)
        out[todo] = got
        room = np.maximum(pos[todo], n_steps - 1 - pos[todo])
        # a wider radius only adds quilts: once one within it may need less, the claim fails
        done = ((stated[todo] <= got * (1 + OPTIMALITY_RTOL)) | (room <= kr)
                | (stated[todo] > inside * (1 + OPTIMALITY_RTOL)))
        todo = todo[~done]
        if radius >= _MAX_RADIUS:
            break
        radius *= 2
    return out


def _chain_round(ch: _Chain, w: np.ndarray, pre: np.ndarray, cap: float | None, eps: float,
                 steps: np.ndarray, kr: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower bounds on the least scale of ``steps``: the quilts within ``kr`` enumerated, the
    ones beyond bounded below; and the least over the enumerated ones alone."""
    n_steps = len(w)
    room_l, room_r = steps, n_steps - 1 - steps
    vi = np.clip(steps[:, None] + np.arange(-kr, kr + 1)[None, :], 0, n_steps - 1)
    sig = np.concatenate([np.minimum(room_l, kr + 1)[:, None],
                          np.minimum(room_r, kr + 1)[:, None], ch.ids[vi]], axis=1)
    first, inverse = _groups(sig)
    reps = steps[first]
    n_u = len(reps)
    kr1 = kr + 1
    e_low = np.empty((n_u, kr1, kr1))
    chunk = max(1, _CHUNK // (kr1 * kr1 * ch.k * ch.k))
    for s in range(0, n_u, chunk):
        e, beta = _influences(ch, reps[s:s + chunk], kr, kr)
        e_low[s:s + chunk] = np.maximum(e - beta[None], 0.0)  # nan stays nan
    e_low[:, 0, 0] = 0.0
    n_terms = n_steps
    # Delta of N per candidate: left part (a = 1..kr: steps i-a+1..i; a = 0: 0..i) plus the
    # right part (b = 1..kr: steps i+1..i+b-1; b = 0: i+1..T-1)
    d_idx = np.arange(1, kr1)
    lo = np.clip(steps[:, None] - d_idx[None, :] + 1, 0, n_steps)
    left = np.concatenate([pre[steps + 1][:, None], pre[steps + 1][:, None] - pre[lo]], axis=1)
    hi = np.clip(steps[:, None] + d_idx[None, :], 0, n_steps)
    right = np.concatenate([(pre[n_steps] - pre[steps + 1])[:, None],
                            pre[hi] - pre[steps + 1][:, None]], axis=1)
    # a past the start (a > room_l) is no quilt: nan in e_low already
    least = np.full(len(steps), np.inf)
    inside = np.full(len(steps), np.inf)
    n = len(steps)
    rows_chunk = max(1, _CHUNK // (kr1 * kr1))
    for s in range(0, n, rows_chunk):
        sl = slice(s, s + rows_chunk)
        el = e_low[inverse[sl]]
        dl = _delta_low(left[sl][:, :, None] + right[sl][:, None, :], cap, n_terms)
        sc = _scale_low(dl, el, eps)
        sc = np.where(np.isnan(el), np.inf, sc)
        least[sl] = inside[sl] = sc.reshape(len(sc), -1).min(axis=1)
        # beyond the radius on the left (a > kr, a quilt node there): N holds i-kr..i and the
        # right part, and e(a, b) >= e(0, b) (L_a >= 0); on the right likewise
        far_l = room_l[sl] > kr
        far_r = room_r[sl] > kr
        near_l = pre[steps[sl] + 1] - pre[np.clip(steps[sl] - kr, 0, n_steps)]
        near_r = pre[np.clip(steps[sl] + kr + 1, 0, n_steps)] - pre[steps[sl] + 1]
        e0b = el[:, 0, :]          # e(no left node, b)
        ea0 = el[:, :, 0]          # e(a, no right node)
        bl = _scale_low(_delta_low(near_l[:, None] + right[sl], cap, n_terms), e0b, eps)
        bl = np.where(np.isnan(e0b), np.inf, bl)
        br = _scale_low(_delta_low(left[sl] + near_r[:, None], cap, n_terms), ea0, eps)
        br = np.where(np.isnan(ea0), np.inf, br)
        both = _scale_low(_delta_low(near_l + near_r, cap, n_terms), np.zeros(len(near_l)),
                          eps)
        bound_l = np.minimum(bl.min(axis=1), both)
        bound_r = np.minimum(br.min(axis=1), both)
        least[sl] = np.minimum(least[sl], np.where(far_l, bound_l, np.inf))
        least[sl] = np.minimum(least[sl], np.where(far_r, bound_r, np.inf))
    return least, inside
