"""Verifying HMM plans in the structure of the HMM search (the HMM half of
:mod:`quiltpriv.mechanisms.time_series_verification`, whose docstring says what is checked).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from quiltpriv.mechanisms.chain_quilts import _groups
from quiltpriv.mechanisms.hmm_quilts import HMMOrder, hmm_order
from quiltpriv.mechanisms.time_series_verification import (
    _FLOOR,
    _MAX_RADIUS,
    _U,
    OPTIMALITY_RTOL,
    Row,
    _delta_low,
    _log_bound,
    _log_ratio_bound,
    _member_row,
    _NotHere,
    _scale_low,
    _scale_reason,
)
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.validation import check_epsilon

__all__ = ["check_hmm_plan"]


# -- hidden Markov models -------------------------------------------------------------------------


@dataclass(frozen=True)
class _HMMember:
    """One member of a positive two-state HMM: ``tr[t][u, h] = P(H_t = h | H_(t-1) = u)``
    (``tr[0]`` unused), the sign of each transition's determinant (exact), the emission
    ``emit[h, x]``, its columns of largest and smallest ratio, the log odds of the marginals
    ``lpi[t] = log P(H_t = 0) / P(H_t = 1)``, ``log P(X_t = x)``, and the extremal scans
    (:func:`_scans`)."""

    tr: np.ndarray
    sign: np.ndarray
    emit: np.ndarray
    cols: tuple[int, int]
    pi: np.ndarray
    fwd: np.ndarray
    bwd: np.ndarray


def _hmm_member(theta: Theta, order: HMMOrder, m: int) -> _HMMember:
    from fractions import Fraction

    cpds = theta.members[m]
    n = len(order.hidden)
    p0 = np.asarray(cpds[order.hidden[0]].table, dtype=np.float64).reshape(-1)
    if p0.shape != (2,):
        raise _NotHere("not two hidden states")
    tr = np.empty((n, 2, 2))
    tr[0] = np.eye(2)
    sign = np.ones(n, dtype=np.int64)
    seen: dict[int, tuple[np.ndarray, int]] = {}
    for t in range(1, n):
        table = cpds[order.hidden[t]].table
        hit = seen.get(id(table))
        if hit is None:
            arr = np.asarray(table, dtype=np.float64)
            if arr.shape != (2, 2):
                raise _NotHere("not two hidden states")
            a, b, c, d = (Fraction(float(x)) for x in arr.T.reshape(-1))
            det = a * d - b * c
            hit = seen[id(table)] = (arr.T, -1 if det < 0 else 1)
        tr[t], sign[t] = hit
    emit = np.asarray(cpds[order.observed[0]].table, dtype=np.float64).T
    for x in order.observed[1:]:
        if not np.array_equal(np.asarray(cpds[x].table, dtype=np.float64).T, emit):
            raise _NotHere("the emissions change with the step")
    if emit.ndim != 2 or emit.shape[0] != 2:
        raise _NotHere("not two hidden states")
    for arr in (p0, tr[1:], emit):
        if np.any(arr < _FLOOR):
            raise _NotHere("a zero or tiny probability")
    ratio = emit[0] / emit[1]
    cols = (int(np.argmax(ratio)), int(np.argmin(ratio)))
    pi = np.empty((n, 2))
    pi[0] = cur = p0
    for t in range(1, n):
        nxt = cur @ tr[t]
        if np.array_equal(nxt, cur) and (tr[t:] == tr[t]).all():
            pi[t:] = cur
            break
        pi[t] = cur = nxt
    fwd, bwd = _scans(tr, sign, emit, cols, p0)
    for arr in (pi, fwd, bwd):
        if np.any(arr < _FLOOR) or not np.all(np.isfinite(arr)):
            raise _NotHere("a marginal too small for float64 here")
    return _HMMember(tr, sign, emit, cols, pi, fwd, bwd)


def _ext(v: np.ndarray, emit: np.ndarray, cols: tuple[int, int]) -> np.ndarray:
    """Observations at the largest (``v[..., 0, :]``) and smallest (``v[..., 1, :]``) emission
    ratio: the ends of the interval of likelihood ratios they can produce."""
    return v * np.stack([emit[:, cols[0]], emit[:, cols[1]]])


def _norm(v: np.ndarray) -> np.ndarray:
    return v / v.sum(axis=-1, keepdims=True)


def _scans(tr: np.ndarray, sign: np.ndarray, emit: np.ndarray, cols: tuple[int, int],
           p0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``fwd[t]``: the vectors ``P(x_0..x_(t-1), H_t)`` (up to a factor) of largest and
    smallest ratio over the values of the observations before ``t`` (shape ``(T, 2, 2)``);
    ``bwd[t]``: ``P(x_(t+1)..x_(T-1) | H_t)`` likewise. A transition maps the ratio by an
    increasing (``det >= 0``) or decreasing (``det < 0``) linear-fractional map, so the ends
    follow the ends (swapped by a decreasing map). Once the pair repeats under a matrix every
    later step repeats, the rest are these floats."""
    n = tr.shape[0]
    fwd = np.empty((n, 2, 2))
    fwd[0] = cur = np.stack([p0, p0])
    for t in range(1, n):
        nxt = _norm(np.matmul(_ext(cur, emit, cols), tr[t]))
        if sign[t] < 0:
            nxt = nxt[::-1]
        if np.array_equal(nxt, cur) and (tr[t:] == tr[t]).all() and (sign[t:] == 1).all():
            fwd[t:] = cur
            break
        fwd[t] = cur = nxt
    bwd = np.empty((n, 2, 2))
    bwd[n - 1] = cur = np.full((2, 2), 0.5)
    for t in range(n - 2, -1, -1):
        nxt = _norm(np.matmul(tr[t + 1], _ext(cur, emit, cols)[..., None])[..., 0])
        if sign[t + 1] < 0:
            nxt = nxt[::-1]
        if np.array_equal(nxt, cur) and (tr[1:t + 2] == tr[t + 1]).all() \
                and (sign[1:t + 2] == 1).all():
            bwd[:t + 1] = cur
            break
        bwd[t] = cur = nxt
    return fwd, bwd


@dataclass(frozen=True)
class _Shape:
    """Parsed quilts (arrays by node): step ``t``, ``observed``; left: ``lk`` 0 = no quilt
    node (N runs to the start), 1 = observations ``X_0 .. X_lc``, 2 = ``H_lh`` and
    observations ``X_(lh+1) .. X_lc``; right: ``rk`` likewise with ``X_rc .. X_(T-1)`` or
    ``X_rc .. X_(rh-1)`` and ``H_rh``; ``center``: ``X_t`` in ``Q`` (hidden nodes)."""

    t: np.ndarray
    observed: np.ndarray
    lk: np.ndarray
    lh: np.ndarray
    lc: np.ndarray
    rk: np.ndarray
    rh: np.ndarray
    rc: np.ndarray
    center: np.ndarray


def _parse_quilts(order: HMMOrder, plans: Sequence[Any]) -> _Shape:
    n_steps = len(order.hidden)
    where = {v: (t, False) for t, v in enumerate(order.hidden)}
    where.update({v: (t, True) for t, v in enumerate(order.observed)})
    cols: dict[str, list[int]] = {k: [] for k in ("t", "o", "lk", "lh", "lc", "rk", "rh", "rc",
                                                 "c")}
    for sp in plans:
        t, obs = where[sp.sensitive]
        left_h: list[int] = []
        left_x: list[int] = []
        right_h: list[int] = []
        right_x: list[int] = []
        center = False
        for v in sp.quilt:
            got = where.get(v)
            if got is None:
                raise _NotHere("a quilt node outside the model")
            s, o = got
            if s == t:
                if obs or not o:
                    raise _NotHere("a quilt holding the node's own step")
                center = True
            elif s < t:
                (left_x if o else left_h).append(s)
            else:
                (right_x if o else right_h).append(s)
        lk, lh, lc = _side_shape(sorted(left_h), sorted(left_x), False, n_steps)
        rk, rh, rc = _side_shape(sorted(right_h), sorted(right_x), True, n_steps)
        for k, v in (("t", t), ("o", obs), ("lk", lk), ("lh", lh), ("lc", lc), ("rk", rk),
                     ("rh", rh), ("rc", rc), ("c", center)):
            cols[k].append(int(v))
    a = {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}
    return _Shape(a["t"], a["o"].astype(bool), a["lk"], a["lh"], a["lc"], a["rk"], a["rh"],
                  a["rc"], a["c"].astype(bool))


def _side_shape(hid: list[int], obs: list[int], right: bool, n_steps: int
                ) -> tuple[int, int, int]:
    """One side of a quilt as ``(kind, hidden step, last (first) observation)``."""
    if not hid and not obs:
        return 0, -1, -1
    if len(hid) > 1 or (obs and obs != list(range(obs[0], obs[-1] + 1))):
        raise _NotHere("a quilt of another shape")
    if not right:
        if not hid:
            if obs[0] != 0:
                raise _NotHere("a quilt of another shape")
            return 1, -1, obs[-1]
        h = hid[0]
        if obs and obs[0] != h + 1:
            raise _NotHere("a quilt of another shape")
        return 2, h, obs[-1] if obs else h
    if not hid:
        if obs[-1] != n_steps - 1:
            raise _NotHere("a quilt of another shape")
        return 1, n_steps, obs[0]
    h = hid[0]
    if obs and obs[-1] != h - 1:
        raise _NotHere("a quilt of another shape")
    return 2, h, obs[0] if obs else h


def _left_vectors(mem: _HMMember, sh: _Shape) -> tuple[np.ndarray, np.ndarray]:
    """Per node, the extremal vectors at ``H_t`` of its quilt's left part (shape
    ``(n, 2, 2)``: largest, smallest ratio; ``P(H_t)`` where the part is empty) and the
    roundings each entry carries."""
    n_steps = mem.tr.shape[0]
    t = sh.t
    n = len(t)
    start = np.where(sh.lk == 2, sh.lh + 1, 0)
    # kind 2: H_lh = u held fixed, X_lh in R: the vector at H_(lh+1) is tr[lh+1][u, :]
    trs = mem.tr[np.clip(start, 1, n_steps - 1)]
    two = _order_pair(_norm(trs[:, :, :]))
    vec = np.where((sh.lk == 2)[:, None, None], two, np.broadcast_to(mem.pi[0], (n, 2, 2)))
    pos = start.copy()
    act = (sh.lk > 0) & (pos < t)
    while act.any():
        j = pos
        inq = (j <= sh.lc)[:, None, None]
        v = np.where(inq, _ext(vec, mem.emit, mem.cols), vec)
        nxt = _norm(np.matmul(v, mem.tr[np.clip(j + 1, 1, n_steps - 1)]))
        nxt = np.where((mem.sign[np.clip(j + 1, 1, n_steps - 1)] < 0)[:, None, None],
                       nxt[:, ::-1], nxt)
        vec = np.where(act[:, None, None], nxt, vec)
        pos = np.where(act, pos + 1, pos)
        act = (sh.lk > 0) & (pos < t)
    vec = np.where((sh.lk == 0)[:, None, None], mem.pi[t][:, None, :], vec)
    return vec, 4.0 * (t - start) + 8


def _right_vectors(mem: _HMMember, sh: _Shape) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_left_vectors` for the right part: ``P(x_Q right | H_t)`` up to a factor."""
    n_steps = mem.tr.shape[0]
    t = sh.t
    n = len(t)
    start = np.where(sh.rk == 2, sh.rh - 1, n_steps - 1)
    # kind 2: H_rh = u held fixed, X_rh in R: the vector at H_(rh-1) is tr[rh][:, u]
    cols = np.swapaxes(mem.tr[np.clip(sh.rh, 1, n_steps - 1)], 1, 2)
    two = _order_pair(_norm(cols))
    vec = np.where((sh.rk == 2)[:, None, None], two, np.full((n, 2, 2), 0.5))
    pos = start.copy()
    act = (sh.rk > 0) & (pos > t)
    while act.any():
        j = pos
        inq = (j >= sh.rc)[:, None, None]
        v = np.where(inq, _ext(vec, mem.emit, mem.cols), vec)
        nxt = _norm(np.matmul(mem.tr[np.clip(j, 1, n_steps - 1)][:, None], v[..., None])[..., 0])
        nxt = np.where((mem.sign[np.clip(j, 1, n_steps - 1)] < 0)[:, None, None],
                       nxt[:, ::-1], nxt)
        vec = np.where(act[:, None, None], nxt, vec)
        pos = np.where(act, pos - 1, pos)
        act = (sh.rk > 0) & (pos > t)
    # the last observation before H_t's side: X_(t+1) .. handled above; ones: no quilt node
    vec = np.where((sh.rk == 0)[:, None, None], 1.0, vec)
    return vec, 4.0 * (start - t) + 8


def _order_pair(v: np.ndarray) -> np.ndarray:
    """Two vectors ``v[:, 0]``, ``v[:, 1]`` ordered by ratio (largest first)."""
    r = v[:, :, 0] * v[:, ::-1, 1]  # compare v0[0] v1[1] with v1[0] v0[1]
    first = r[:, 0] >= r[:, 1]
    return np.where(first[:, None, None], v, v[:, ::-1])


def _hmm_influence(mem: _HMMember, t: np.ndarray, observed: bool, center: np.ndarray,
                   wl: np.ndarray, wr: np.ndarray, lpi_exact: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``e(Q | v)`` of one member from the extremal vectors ``wl``, ``wr`` at ``H_t`` (shape
    ``(..., 2, 2)``: largest, smallest), and the largest magnitude of a log used.

    Hidden ``v = H_t``: ``max(l_hi + r_hi + c_hi - lpi, lpi - l_lo - r_lo - c_lo)`` with the
    log ratios ``l``, ``r`` of the vectors and ``c`` the emission's when ``X_t`` is in ``Q``.
    Observed ``v = X_t``: ``max over pairs and ends of log w.e_x - log w.e_x' - log P(x) +
    log P(x')`` with ``w = wl * wr``."""
    with np.errstate(divide="ignore"):
        lpi = np.log(mem.pi[t][..., 0]) - np.log(mem.pi[t][..., 1])
        if not observed:
            l_ = np.log(wl[..., 0]) - np.log(wl[..., 1])
            r_ = np.log(wr[..., 0]) - np.log(wr[..., 1])
            if lpi_exact is not None:  # no left quilt node: the left vector is P(H_t)
                l_ = np.where(lpi_exact[..., None], lpi[..., None], l_)
            ce = np.log(mem.emit[0, list(mem.cols)]) - np.log(mem.emit[1, list(mem.cols)])
            c_hi = np.where(center, ce[0], 0.0)
            c_lo = np.where(center, ce[1], 0.0)
            up = l_[..., 0] + r_[..., 0] + c_hi - lpi
            down = lpi - l_[..., 1] - r_[..., 1] - c_lo
            mag = (np.abs(l_).max(axis=-1) + np.abs(r_).max(axis=-1) + np.abs(ce).max()
                   + np.abs(lpi)) * 2
            return np.maximum(up, down), mag
        w = wl * wr
        lpx = np.log(mem.pi[t] @ mem.emit)  # (..., states)
        lw = np.log(w @ mem.emit)           # (..., 2 ends, states)
        a = lw - lpx[..., None, :]
        e = (a.max(axis=-1) - a.min(axis=-1)).max(axis=-1)
        mag = (np.abs(lw).max(axis=(-1, -2)) + np.abs(lpx).max(axis=-1)) * 2
        return e, mag


def _hmm_setup(theta: Theta, query: Query) -> tuple[HMMOrder, list[_HMMember], float]:
    order = hmm_order(theta)
    if order is None or query.sensitivity_structure != "additive":
        raise _NotHere("not a hidden Markov model read at its observations")
    attrs = set(query.attributes)
    if any(v in attrs for v in order.hidden) or attrs != set(order.observed):
        raise _NotHere("the query does not read exactly the observations")
    w = float(query.sensitivity((order.observed[0],)))
    if not (w > 0 and math.isfinite(w)) or any(query.sensitivity((v,)) != w
                                               for v in order.observed):
        raise _NotHere("the observations are weighted unequally")
    return order, [_hmm_member(theta, order, m) for m in range(len(theta.members))], w


def check_hmm_plan(theta: Theta, query: Query, sensitive: Any, epsilon: float,
                   quilt_scale: Any) -> list[Row] | None:
    """The rows of an HMM plan's verification, or None where the general route must verify
    it (:func:`quiltpriv.mechanisms.time_series_verification.check_time_series` for chains)."""
    # untrusted arguments get the package's errors; a plan of another shape gets None
    check_theta(theta)
    check_query(query)
    eps = check_epsilon(epsilon)
    try:
        return _check_hmm(theta, query, sensitive, eps, quilt_scale)
    except _NotHere:
        return None


def _check_hmm(theta: Theta, query: Query, sensitive: Any, eps: float,
                quilt_scale: Any) -> list[Row]:
    from quiltpriv.mechanisms.hmm_few_step_plans import FewStepPlans
    from quiltpriv.mechanisms.hmm_step_plans import HMMStepPlans

    if isinstance(sensitive, FewStepPlans):
        raise _NotHere("a plan of the few-step search: every node checked by the general route")
    if isinstance(sensitive, HMMStepPlans):
        return _check_hmm_runs(theta, query, sensitive, eps, quilt_scale)
    if not isinstance(sensitive, tuple) or not sensitive:
        raise _NotHere("not a plan of nodes")
    order, members, w = _hmm_setup(theta, query)
    sh = _parse_quilts(order, sensitive)
    up = _upper_influences(order, members, sh)
    least = _hmm_least(members, sh, w, eps, np.array([sp.scale for sp in sensitive]),
                       np.array([sp.optimal for sp in sensitive], dtype=bool))
    rows = []
    for j, sp in enumerate(sensitive):
        near_x = _near_observations(order, sh, j)
        delta = float(query.sensitivity(near_x))
        need = quilt_scale(sp.sensitivity, sp.influence, eps)
        lo = None if not math.isfinite(least[j]) else float(least[j])
        reason = _hmm_reason(theta, query, order, sh, j, sp, near_x, float(up[j]), need, lo,
                             eps)
        rows.append(Row(sensitive=sp.sensitive, ok=reason is None, reason=reason, quilt=sp.quilt,
                        stated_influence=sp.influence, influence=float(up[j]),
                        stated_sensitivity=sp.sensitivity, sensitivity=delta,
                        stated_scale=sp.scale, scale=need, optimal=sp.optimal,
                        least_scale=lo))
    return rows


def _runs_shape(steps: Any) -> _Shape:
    """The :class:`_Shape` of every node of an HMM plan held as runs (plan order)."""
    n_steps = len(steps.hidden)
    t = steps.column("step")
    left, right = steps.column("left"), steps.column("right")
    bl, br = steps.column("band_left"), steps.column("band_right")
    lk = np.where(left < 0, 0, np.where(bl < 0, 1, 2))
    rk = np.where(right < 0, 0, np.where(br < 0, 1, 2))
    return _Shape(
        t, steps.column("observed").astype(bool), lk,
        np.where(lk == 2, t - bl - 1, -1), np.where(lk > 0, t - left - 1, -1), rk,
        np.where(rk == 2, t + br + 1, np.where(rk == 1, n_steps, -1)),
        np.where(rk > 0, t + right + 1, -1), steps.column("center").astype(bool))


def _check_hmm_runs(theta: Theta, query: Query, steps: Any, eps: float,
                    quilt_scale: Any) -> list[Row]:
    """The rows of an HMM plan held as runs: every node's influence and least scale
    recomputed as for a plan of nodes, one row per run."""
    order, members, w = _hmm_setup(theta, query)
    if steps.hidden != order.hidden or steps.observed != order.observed:
        raise _NotHere("not the model's hidden Markov model")
    sh = _runs_shape(steps)
    up = _upper_influences(order, members, sh)
    n_runs = len(steps.runs)
    run_of = steps.run_indices()
    least_all = _hmm_least(members, sh, w, eps, steps.column("scale"),
                           steps.column("optimal").astype(bool))
    up_run = np.full(n_runs, -np.inf)
    np.maximum.at(up_run, run_of, up)
    least = np.full(n_runs, np.inf)
    np.minimum.at(least, run_of, least_all)
    deltas = steps.sensitivities(query)
    stated = steps.column("sensitivity")
    bad_delta = np.full(n_runs, -1, dtype=np.int64)
    for j in np.flatnonzero(deltas != stated)[::-1].tolist():
        bad_delta[run_of[j]] = j
    first_delta = np.empty(n_runs)
    first_delta[run_of[::-1]] = deltas[::-1]
    rows = []
    for i, r in enumerate(steps.runs):
        need = quilt_scale(r.sensitivity, r.influence, eps)
        lo = None if not (r.optimal and r.scale > 0 and math.isfinite(least[i])) \
            else float(least[i])
        infl = float(up_run[i])
        reason = None
        if r.influence < infl:
            reason = (f"it states influence e(Q|i) = {_fmt(r.influence, 17)}, below the recomputed "
                      f"{_fmt(infl, 17)} (an upper bound on the exact value)")
        elif bad_delta[i] >= 0:
            j = int(bad_delta[i])
            reason = (f"it states Delta_{{A&N}} F = {_fmt(r.sensitivity, 17)}, the query's is "
                      f"{_fmt(deltas[j], 17)} for {steps.nodes()[j]!r}")
        else:
            reason = (_scale_reason(r.influence, r.scale, r.optimal, eps, need, lo)
                      or _member_row(theta, steps.node_at(r, 0), r.member, r.pair))
        rows.append(Row(sensitive=steps.run_label(r), ok=reason is None, reason=reason,
                        quilt=steps.run_quilt_parts(r), stated_influence=r.influence,
                        influence=infl, stated_sensitivity=r.sensitivity,
                        sensitivity=float(first_delta[i]), stated_scale=r.scale, scale=need,
                        optimal=r.optimal, least_scale=lo))
    return rows


def _upper_influences(order: HMMOrder, members: list[_HMMember], sh: _Shape) -> np.ndarray:
    """Per node, an upper bound on the exact influence of its quilt (recomputed plus its
    rounding bound ``beta``; 0 for ``Q = {}``)."""
    n_steps = len(order.hidden)
    e_hat = np.full(len(sh.t), -np.inf)
    beta = np.zeros(len(sh.t))
    log_pi = _log_ratio_bound(2 * n_steps + 2)  # the marginals: 2 roundings a step
    for mem in members:
        wl, nl = _left_vectors(mem, sh)
        wr, nr = _right_vectors(mem, sh)
        for observed in (False, True):
            sel = sh.observed == observed
            if not sel.any():
                continue
            e, mag = _hmm_influence(mem, sh.t[sel], observed, sh.center[sel], wl[sel], wr[sel],
                                    (sh.lk[sel] == 0))
            # each vector entry within gamma_n; the ratio of two entries of each, and of the
            # marginals; an observed node's dot products add 2 roundings and its P(x) 2 more
            extra = 4 if observed else 0
            b = (_log_ratio_bound_arr(nl[sel] + extra) + _log_ratio_bound_arr(nr[sel] + extra)
                 + log_pi + _log_bound(1.0) * mag)
            if observed:
                b = b * 2  # two ends of w, two states: each log ratio within the sum above
            better = e > e_hat[sel]
            idx = np.flatnonzero(sel)
            e_hat[idx] = np.where(better, e, e_hat[idx])
            beta[idx] = np.maximum(beta[idx], b)
    empty = (sh.lk == 0) & (sh.rk == 0) & ~sh.center
    return np.where(empty, 0.0, np.maximum(e_hat, 0.0) + beta)


def _hmm_reason(theta: Theta, query: Query, order: HMMOrder, sh: _Shape, j: int, sp: Any,
                near_x: tuple[str, ...], up: float, need: float, lo: float | None,
                eps: float) -> str | None:
    """The first discrepancy of node ``j``'s plan, if any."""
    stated_near = sp.nearby_attributes if sp.nearby is None else tuple(
        v for v in sp.nearby if v in set(order.observed))
    if sp.nearby is not None and set(sp.nearby) != set(_nearby_nodes(order, sh, j)):
        return (f"its nearby set N is not the part of the network that Q = "
                f"{{{', '.join(sp.quilt)}}} leaves around {sp.sensitive!r}")
    if sp.remote is not None and set(sp.remote) != (
            set(theta.nodes) - set(sp.quilt) - set(sp.nearby or ())):
        return "its remote set R is not the rest of the network"
    if not set(near_x) <= set(stated_near or ()):
        missed = sorted(set(near_x) - set(stated_near or ()), key=order.observed.index)
        return (f"Q = {{{', '.join(sp.quilt)}}} does not d-separate {sp.sensitive!r} from the "
                f"query attribute(s) {{{', '.join(missed[:5])}}}, which its nearby "
                "attributes leave out")
    if sp.influence < up:
        return (f"it states influence e(Q|{sp.sensitive}) = {_fmt(sp.influence, 17)}, below the "
                f"recomputed {_fmt(up, 17)} (an upper bound on the exact value)")
    own = float(query.sensitivity(stated_near or ()))
    if sp.sensitivity != own:
        return (f"it states Delta_{{A&N}} F = {_fmt(sp.sensitivity, 17)}, the query's is "
                f"{_fmt(own, 17)}")
    return (_scale_reason(sp.influence, sp.scale, sp.optimal, eps, need, lo)
            or _member_row(theta, sp.sensitive, sp.influence_member, sp.influence_pair))


def _log_ratio_bound_arr(n: np.ndarray) -> np.ndarray:
    if np.any(n * _U >= 0.1):
        raise _NotHere("too many roundings for a useful error bound")
    g = n * _U / (1 - n * _U)
    return 2 * g / (1 - g)


def _near_observations(order: HMMOrder, sh: _Shape, j: int) -> tuple[str, ...]:
    """The observations in node ``j``'s ``N`` (in step order)."""
    t = int(sh.t[j])
    lo = 0 if sh.lk[j] == 0 else int(sh.lc[j]) + 1
    hi = len(order.hidden) - 1 if sh.rk[j] == 0 else int(sh.rc[j]) - 1
    own = () if (not sh.observed[j] and sh.center[j]) else (order.observed[t],)
    return order.observed[lo:t] + own + order.observed[t + 1:hi + 1]


def _nearby_nodes(order: HMMOrder, sh: _Shape, j: int) -> tuple[str, ...]:
    """Node ``j``'s ``N``: the part of the network ``Q`` leaves around it."""
    h_lo = 0 if sh.lk[j] != 2 else int(sh.lh[j]) + 1
    h_hi = len(order.hidden) - 1 if sh.rk[j] != 2 else int(sh.rh[j]) - 1
    return order.hidden[h_lo:h_hi + 1] + _near_observations(order, sh, j)


def _hmm_least(members: list[_HMMember], sh: _Shape, w: float, eps: float,
               stated: np.ndarray, claimed: np.ndarray) -> np.ndarray:
    """Per node, a proven lower bound on the least scale over all its quilts (the windows of
    the module docstring; those wider than a radius bounded by their count), where optimality
    is claimed (0 elsewhere)."""
    n_steps = members[0].tr.shape[0]
    out = np.zeros(len(sh.t))
    ids = _groups(np.concatenate(
        [np.concatenate([m.tr.reshape(n_steps, -1), m.sign[:, None], m.pi,
                         m.fwd.reshape(n_steps, -1), m.bwd.reshape(n_steps, -1)], axis=1)
         for m in members], axis=1))[1].astype(np.int64)
    for observed in (False, True):
        todo = np.flatnonzero(claimed & (sh.observed == observed) & (stated > 0))
        radius = 16
        while todo.size:
            kr = min(radius, n_steps)
            got, inside = _hmm_round(members, ids, sh.t[todo], observed, w, eps, kr)
            out[todo] = got
            t = sh.t[todo]
            room = np.maximum(t, n_steps - 1 - t)
            done = ((stated[todo] <= got * (1 + OPTIMALITY_RTOL)) | (room <= kr)
                    | (stated[todo] > inside * (1 + OPTIMALITY_RTOL)))
            todo = todo[~done]
            if radius >= _MAX_RADIUS:
                break
            radius *= 2
    return out


def _hmm_round(members: list[_HMMember], ids: np.ndarray, steps: np.ndarray, observed: bool,
               w: float, eps: float, kr: int) -> tuple[np.ndarray, np.ndarray]:
    """Lower bounds on the least scale of the nodes at ``steps``: windows with at most ``kr``
    observations of ``N`` on each side enumerated (and "no quilt node" on a side within
    reach), wider ones bounded by their count; and the least over the enumerated ones."""
    n_steps = members[0].tr.shape[0]
    room_l, room_r = steps, n_steps - 1 - steps
    vi = np.clip(steps[:, None] + np.arange(-kr - 1, kr + 2)[None, :], 0, n_steps - 1)
    sig = np.concatenate([np.minimum(room_l, kr + 1)[:, None],
                          np.minimum(room_r, kr + 1)[:, None], ids[vi]], axis=1)
    first, inverse = _groups(sig)
    reps = steps[first]
    n_u, kr1 = len(reps), kr + 1
    centers = (False,) if observed else (True, False)
    best = np.full((len(centers), n_u, kr1, kr1), -np.inf)
    beta = np.zeros(best.shape)
    idx = np.arange(kr1)
    for mem in members:
        wl = _window_side(mem, reps, kr, True)    # (n_u, kr1, 2, 2)
        wr = _window_side(mem, reps, kr, False)
        none_l = (idx[None, :] == room_l[first][:, None])  # (n_u, kr1): no left quilt node
        for ci, center in enumerate(centers):
            e, mag = _hmm_influence(mem, reps[:, None, None], observed,
                                    np.full((n_u, kr1, kr1), center), wl[:, :, None],
                                    wr[:, None, :], np.broadcast_to(none_l[:, :, None],
                                                                    (n_u, kr1, kr1)))
            e = np.where(np.isnan(e), np.inf, e)
            n_rd = 4.0 * n_steps + 4 * kr + 16 + (4 if observed else 0)
            b = (2 * _log_ratio_bound(n_rd) + _log_ratio_bound(2 * n_steps + 2)
                 + _log_bound(1.0) * mag) * (2 if observed else 1)
            best[ci] = np.maximum(best[ci], e)
            beta[ci] = np.maximum(beta[ci], b)
    e_low = np.maximum(best - beta, 0.0)
    valid = (idx[None, :, None] <= room_l[first][:, None, None]) & (
        idx[None, None, :] <= room_r[first][:, None, None])
    least = np.full(n_u, np.inf)
    for ci, center in enumerate(centers):
        own = 1 if (observed or not center) else 0
        count = idx[:, None] + idx[None, :] + own
        el = e_low[ci]
        none_both = (idx[None, :, None] == room_l[first][:, None, None]) & (
            idx[None, None, :] == room_r[first][:, None, None])
        if not center:
            el = np.where(none_both, 0.0, el)  # Q = {}: nothing observed
        s = _scale_low(_delta_low(w * count[None] * np.ones_like(el), None, 2), el, eps)
        s = np.where(valid, s, np.inf)
        least = np.minimum(least, s.reshape(n_u, -1).min(axis=1))
    # windows with more than kr observations of N on a side: count >= kr + 1 there
    far = (room_l[first] > kr) | (room_r[first] > kr)
    bound = float(_delta_low(np.array([w * (kr + 1)]), None, 2)[0]) / eps * (1 - 4 * _U)
    inside = least
    least = np.where(far, np.minimum(least, bound), least)
    return least[inverse], inside[inverse]


def _window_side(mem: _HMMember, steps: np.ndarray, kr: int, left: bool) -> np.ndarray:
    """The extremal vectors at ``H_t`` of the windows with ``n = 0..kr`` observations of
    ``N`` on one side and every farther observation in ``Q`` (shape ``(n, kr + 1, 2, 2)``;
    ``nan`` past the end): the scan's pair at ``H_(t -+ n)`` through the ``n`` transitions
    between, whose product maps ratios increasingly or decreasingly by its determinant's
    sign."""
    n_steps = mem.tr.shape[0]
    n = len(steps)
    out = np.full((n, kr + 1, 2, 2), np.nan)
    prod = np.broadcast_to(np.eye(2), (n, 2, 2)).copy()
    sgn = np.ones(n, dtype=np.int64)
    for d in range(kr + 1):
        far = steps - d if left else steps + d
        ok = (far >= 0) if left else (far <= n_steps - 1)
        if d:
            src = np.clip(steps - d + 1 if left else steps + d, 1, n_steps - 1)
            prod = np.matmul(mem.tr[src], prod) if left else np.matmul(prod, mem.tr[src])
            sgn = sgn * mem.sign[src]
        farc = np.clip(far, 0, n_steps - 1)
        if left:
            v = np.matmul(mem.fwd[farc], prod)                      # (n, 2, 2) @ (n, 2, 2)
        else:
            v = np.matmul(prod[:, None], mem.bwd[farc][..., None])[..., 0]
        v = np.where((sgn < 0)[:, None, None], v[:, ::-1], v)
        out[:, d] = np.where(ok[:, None, None], v, np.nan)
    return out
