"""Exact least-noise quilts of every node of a hidden Markov model whose query reads a few steps.

The network is a hidden chain ``H_1 -> ... -> H_T`` with one observation ``H_t -> X_t`` per
step (:func:`quiltpriv.mechanisms.hmm_quilts.hmm_order`), and the query reads a few
observations ``X_S`` (a count or a sum over, say, three steps), with any sensitivity that is
a function of the query attributes in ``N`` (``Delta_{A & N}``, [ZOC22, Alg. 3]). Every
quilt of a node ``v`` is dominated -- no larger ``Delta``, no larger influence -- by a set
``X_B`` of query observations, ``B`` a subset of ``S`` (``X_v`` itself excluded):

1. The nodes of a quilt ``Q`` adjacent to ``N(Q)`` form a quilt with the same ``N`` and a
   subset of ``Q`` (a tree without colliders: ``Q`` d-separates what it cuts off).
2. A hidden state ``H_r`` in ``Q`` can be replaced by the observations beyond it
   (``X_r .. X_T`` on the right): ``H_r .. H_T`` join ``N``, read by nobody, and the new
   quilt's conditionals are the old ones mixed by one Markov kernel, so no likelihood ratio
   grows ([SWC17]; [ZOC22, Def. 8]). Every quilt is thus dominated by observations ``X_A``
   with everything else nearby (``R`` empty).
3. Dropping from ``A`` the observations the query does not read leaves ``Delta`` unchanged
   (they join ``N`` unread) and the influence no larger (a marginal of the conditional).

So the least scale of ``v`` is the least over the ``2^|S|`` subsets ``B`` of
``Delta(S \\ B) / (eps - e(X_B | v))`` -- the optimum over all quilts, proven by the
enumeration. The influences ``e(X_B | v)`` of every node come from one segmented scan of the
transition products between consecutive query steps (forward and backward) and the joint
vectors at the query steps: for ``H_t`` the left and right parts separate given ``H_t``
(``log P(x_L | h) / P(x_L | h')`` plus the right's), for ``X_t`` they are mixed by
``P(X_t | H_t)``. The work is ``O(T (|X| + 1)^|S|)``: linear in ``T`` for a few steps.

Influences are rounded upwards as :mod:`quiltpriv.inference.influence` rounds them: by the
float64 error bound of the products and logs (Higham, Section 3.1; all numbers are positive)
and by at least ``ROUNDING_MARGIN`` absolute and relative; away from ``eps`` a chosen
influence is further rounded up to a multiple of ``2^-40`` (the scale then exceeds the least
by under ``PROOF_RTOL`` relative), so that the steps far from the query share one record and
a plan of a long series is a few runs. A zero or tiny probability, or a query reading a
hidden state or many steps, is refused (None or :class:`FewNotApplicable`): the general
planner plans it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from quiltpriv.errors import QuiltPrivError
from quiltpriv.inference.influence import ROUNDING_MARGIN
from quiltpriv.mechanisms.chain_quilts import _SAFE_FLOOR, _U, PROOF_RTOL, _forward, _scales
from quiltpriv.mechanisms.hmm_quilts import HMM_MIN_STEPS, HMMOrder, hmm_order
from quiltpriv.model.network import Theta
from quiltpriv.utils.time_limit import TimeLimit, passed

__all__ = ["FEW_MAX_ASSIGNMENTS", "FewNotApplicable", "FewQuilts"]

#: The search applies while ``(|X| + 1)^|S|`` (the joint assignments of every subset of the
#: query's observations, ``|X|`` values each) is at most this.
FEW_MAX_ASSIGNMENTS = 256

#: Floats per chunk of steps evaluated together (memory: a few times this many float64s).
_CHUNK_FLOATS = 1 << 21

#: Influences at least this far below ``eps`` are rounded up to a multiple of ``_GRID``.
_GRID = 2.0**-40
_GRID_ROOM = _GRID / PROOF_RTOL

#: Rounding of a sum of at most eight logs of numbers in [2^-900, 1] (each |log| <= 624).
_LOG_SUM_BOUND = 80000 * _U


class FewNotApplicable(QuiltPrivError):
    """The few-step HMM search does not handle this model (the general planner does)."""


@dataclass(frozen=True)
class FewQuilts:
    """The least-scale quilt ``X_B`` of each searched node (arrays by node).

    ``steps`` are the query's observation steps ``S`` (0-based, increasing); ``mask`` the
    subset ``B`` as bits over ``steps`` (bit ``j``: ``X_(steps[j])`` is in ``Q``; 0 is the
    quilt ``{}``). ``influence`` is rounded upwards, ``delta`` is ``Delta(S \\ B)`` and
    ``scale`` the float64 scale used to choose; ``optimal`` is False only where the time limit
    stopped the search (the node keeps ``{}``). ``member`` and ``pair`` (state indices) attain
    the influence (-1 for ``{}``); ``considered`` counts the subsets compared.
    """

    step: np.ndarray
    observed: np.ndarray
    mask: np.ndarray
    influence: np.ndarray
    delta: np.ndarray
    scale: np.ndarray
    optimal: np.ndarray
    member: np.ndarray
    pair: np.ndarray
    considered: np.ndarray
    steps: np.ndarray
    stopped: bool

    def quilt(self, j: int, order: HMMOrder) -> tuple[str, ...]:
        """Node ``j``'s quilt, in step order."""
        m = int(self.mask[j])
        return tuple(order.observed[s] for b, s in enumerate(self.steps.tolist()) if m >> b & 1)


@dataclass(frozen=True)
class _Member:
    """One member: ``tr[t][u, h] = P(H_t = h | H_(t-1) = u)`` (``tr[0]`` the identity),
    ``emit[t][h, x] = P(X_t = x | H_t = h)``, the marginals ``pi[t]``, the products
    ``left[t] = tr[a+1] ... tr[t]`` from the last query step ``a < t`` and
    ``right[t] = tr[t+1] ... tr[b]`` to the next ``b > t``."""

    tr: np.ndarray
    emit: np.ndarray
    pi: np.ndarray
    left: np.ndarray
    right: np.ndarray


def _tables(theta: Theta, names: Sequence[str], m: int, shape: tuple[int, int]) -> np.ndarray:
    """``table.T`` of each node's CPD (``P(child | parent)`` rows by parent): each distinct
    table object converted once (a builder shares one table across the steps)."""
    cpds = theta.members[m]
    tables = [cpds[v].table for v in names]
    ids = np.fromiter(map(id, tables), dtype=np.int64, count=len(tables))
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    distinct = []
    for j in first.tolist():
        hit = np.asarray(tables[j], dtype=np.float64).T
        if hit.shape != shape:
            raise FewNotApplicable("the steps have different numbers of states")
        distinct.append(hit)
    return np.stack(distinct)[inverse.reshape(-1)]


def _segment_scan(mats: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``out[t] = mats[lo[t]] @ ... @ mats[hi[t]]`` for ``lo[t] <= t <= hi[t]`` where each
    ``[lo, hi]`` is the segment holding ``t`` (``lo == t`` or ``hi == t``: a prefix or a suffix
    product), by doubling: ``O(T log T)`` small products, vectorised."""
    out = mats.copy()
    idx = np.arange(len(mats))
    prefix = bool(np.all(hi == idx))
    d = 1
    while True:
        if prefix:
            sel = np.flatnonzero(idx - d >= lo)
            if not sel.size:
                return out
            out[sel] = np.matmul(out[sel - d], out[sel])
        else:
            sel = np.flatnonzero(idx + d <= hi)
            if not sel.size:
                return out
            out[sel] = np.matmul(out[sel], out[sel + d])
        d *= 2


def _member(theta: Theta, order: HMMOrder, m: int, steps: np.ndarray) -> _Member:
    n = len(order.hidden)
    k = theta.cardinality[order.hidden[0]]
    kx = theta.cardinality[order.observed[0]]
    p0 = np.asarray(theta.members[m][order.hidden[0]].table, dtype=np.float64).reshape(-1)
    tr = np.empty((n, k, k))
    tr[0] = np.eye(k)
    tr[1:] = _tables(theta, order.hidden[1:], m, (k, k))
    emit = _tables(theta, order.observed, m, (k, kx))
    for arr in (p0, tr[1:], emit):
        if np.any(arr < _SAFE_FLOOR):
            raise FewNotApplicable("a probability is zero or too small for float64 here")
    pi = _forward(tr, p0, lambda v, f: v @ f)
    idx = np.arange(n)
    # the last query step before t (-1: none) and the first after it (n: none)
    before = np.searchsorted(steps, idx, side="left") - 1
    after = np.searchsorted(steps, idx, side="right")
    a = np.where(before >= 0, steps[np.clip(before, 0, None)], -1)
    b = np.where(after < len(steps), steps[np.clip(after, None, len(steps) - 1)], n)
    left = _segment_scan(tr, np.where(a >= 0, a + 1, idx), idx)
    nxt = np.concatenate([tr[1:], np.eye(k)[None]])  # nxt[t] = tr[t + 1]
    right = _segment_scan(nxt, idx, np.where(b < n, b - 1, idx))
    return _Member(tr, emit, pi, left, right)


def _anchors(mem: _Member, steps: np.ndarray) -> tuple[list[dict[int, np.ndarray]],
                                                        list[dict[int, np.ndarray]]]:
    """Per query step ``s_j``: ``u[j][B] = P(X_B = q, H_(s_j))`` (shape ``(q, k)``) for the
    subsets ``B`` of ``S`` up to ``s_j``, and ``v[j][B] = P(X_B = q | H_(s_j))`` (shape
    ``(k, q)``) for those from ``s_j`` on; ``q`` runs over ``B``'s values, the earliest step
    most significant. ``B = {}`` is the exact marginal (``u``) or ones (``v``)."""
    n_s = len(steps)
    k = mem.pi.shape[1]
    u: list[dict[int, np.ndarray]] = []
    for j, s in enumerate(steps.tolist()):
        cur: dict[int, np.ndarray] = {0: mem.pi[s][None, :]}
        if j:
            for mask, x in u[j - 1].items():
                if mask:
                    cur[mask] = x @ mem.left[s]
        et = mem.emit[s].T  # [x, h]
        for mask in list(cur):
            cur[mask | 1 << j] = (cur[mask][:, None, :] * et[None, :, :]).reshape(-1, k)
        u.append(cur)
    v: list[dict[int, np.ndarray]] = [{} for _ in range(n_s)]
    for j in range(n_s - 1, -1, -1):
        s = int(steps[j])
        cur = {0: np.ones((k, 1))}
        if j < n_s - 1:
            for mask, x in v[j + 1].items():
                if mask:
                    cur[mask] = mem.right[s] @ x
        e = mem.emit[s]
        for mask in list(cur):
            cur[mask | 1 << j] = (e[:, :, None] * cur[mask][:, None, :]).reshape(k, -1)
        v[j] = cur
    return u, v


def _max_log_ratio(p: np.ndarray) -> np.ndarray:
    """``max over q of log p[n, q, x] - log p[n, q, x']``: shape ``(n, kk, kk)`` of
    ``p`` of shape ``(n, q, kk)`` (all entries positive)."""
    lp = np.log(p)
    return (lp[:, :, :, None] - lp[:, :, None, :]).max(axis=1)


def _check_floor(*arrays: np.ndarray) -> None:
    for x in arrays:
        if x.size and not (np.all(np.isfinite(x)) and x.min() >= _SAFE_FLOOR):
            raise FewNotApplicable("a joint probability underflows float64 here")


def _masks(bits: Sequence[int]) -> list[int]:
    """Every subset of the given bit positions, as masks."""
    out = [0]
    for b in bits:
        out += [m | 1 << b for m in out]
    return out


def _group_influences(mem: _Member, u: list[dict[int, np.ndarray]],
                      v: list[dict[int, np.ndarray]], ts: np.ndarray, jl: int, jr: int,
                      own: int, observed: bool) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For the nodes at steps ``ts`` (all with the last query step before them ``jl``, -1:
    none, the first after them ``jr``, ``len(S)``: none, and ``own`` the index of their own
    step in ``S`` or -1), per subset mask ``B``: ``(e, pair)`` of ``e(X_B | node)`` (not
    rounded) and the attaining state pair ``x * k + x'``; ``B = {}`` is left out."""
    k = mem.pi.shape[1]
    kx = mem.emit.shape[2]
    n_s = len(u) if u else len(v)
    lbits = list(range(jl + 1))
    rbits = list(range(jr, n_s))
    lpi = np.log(mem.pi[ts])  # (n, k)
    alphas: dict[int, np.ndarray] = {0: mem.pi[ts][:, None, :]}
    for mask in _masks(lbits)[1:]:
        alphas[mask] = np.matmul(u[jl][mask][None], mem.left[ts])  # (n, q, k)
    betas: dict[int, np.ndarray] = {0: np.ones((len(ts), k, 1))}
    for mask in _masks(rbits)[1:]:
        betas[mask] = np.matmul(mem.right[ts], v[jr][mask][None])  # (n, k, q)
    _check_floor(*alphas.values(), *betas.values())
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    off = ~np.eye(k if not observed else kx, dtype=bool)
    if not observed:
        lt = {0: np.zeros((len(ts), k, k))}
        for mask in _masks(lbits)[1:]:
            lt[mask] = (_max_log_ratio(alphas[mask]) - lpi[:, :, None] + lpi[:, None, :])
        rt = {0: np.zeros((len(ts), k, k))}
        for mask in _masks(rbits)[1:]:
            rt[mask] = _max_log_ratio(np.swapaxes(betas[mask], 1, 2))
        own_t: dict[int, np.ndarray] = {0: np.zeros((len(ts), k, k))}
        if own >= 0:
            le = np.log(mem.emit[ts])  # (n, k, kx)
            own_t[1 << own] = (le[:, :, None, :] - le[:, None, :, :]).max(axis=3)
        for ml, a in lt.items():
            for mr, b in rt.items():
                for mo, c in own_t.items():
                    mask = ml | mr | mo
                    if not mask:
                        continue
                    tot = np.where(off[None], a + b + c, -np.inf).reshape(len(ts), -1)
                    arg = tot.argmax(axis=1)
                    out[mask] = (tot[np.arange(len(ts)), arg], arg)
        return out
    e_t = mem.emit[ts]  # (n, k, kx)
    px = np.log(np.einsum("nh,nhx->nx", mem.pi[ts], e_t))
    for ml in _masks(lbits):
        for mr in _masks(rbits):
            if not ml | mr:
                continue
            joint = np.einsum("nah,nhb,nhx->nabx", alphas[ml], betas[mr], e_t)
            joint = joint.reshape(len(ts), -1, kx)
            _check_floor(joint)
            tot = _max_log_ratio(joint) - px[:, :, None] + px[:, None, :]
            tot = np.where(off[None], tot, -np.inf).reshape(len(ts), -1)
            arg = tot.argmax(axis=1)
            out[ml | mr] = (tot[np.arange(len(ts)), arg], arg)
    return out


def _few_least_quilts(theta: Theta, order: HMMOrder, steps: Sequence[int],
                     delta: Callable[[int], float], node_steps: np.ndarray,
                     node_observed: np.ndarray, epsilon: float, *,
                     time_limit: TimeLimit | None = None) -> FewQuilts:
    """The least-scale quilt ``X_B`` of each node (step ``node_steps[j]``, an observation
    where ``node_observed[j]``) of the HMM ``order`` whose query reads the observations at
    ``steps``; ``delta(mask)`` is ``Delta_{A & N}`` with ``N`` holding the query observations
    outside ``mask`` (bits over ``steps``); ``time_limit`` the limit past which
    the nodes not reached keep the quilt ``{}`` (optimality not proven). Arguments are the
    planner's own, unchecked.

    Raises
    ------
    FewNotApplicable
        When float64 could underflow on this model (the caller plans another way).
    """
    s_arr = np.asarray(sorted(steps), dtype=np.int64)
    n_s = len(s_arr)
    n_steps = len(order.hidden)
    k = theta.cardinality[order.hidden[0]]
    kx = theta.cardinality[order.observed[0]]
    n = len(node_steps)
    mems = [_member(theta, order, m, s_arr) for m in range(len(theta.members))]
    anchors = [_anchors(mem, s_arr) for mem in mems]
    depth = (n_steps + 2 * n_s + 4) * (k + kx + 2) + 64
    gamma = depth * _U / (1 - depth * _U)
    if 8 * gamma >= 0.5:
        raise FewNotApplicable("the series is too long for the float64 error bound")
    bound = max(ROUNDING_MARGIN, 8 * gamma / (1 - 8 * gamma) + _LOG_SUM_BOUND)
    all_masks = _masks(range(n_s))
    d_of = np.array([delta(mask) for mask in all_masks])  # indexed by mask
    out_mask = np.zeros(n, dtype=np.int64)
    out_e = np.zeros(n)
    out_d = np.full(n, d_of[0])
    out_s = _scales(out_d, out_e, epsilon)
    out_opt = np.zeros(n, dtype=bool)
    out_m = np.full(n, -1, dtype=np.int64)
    out_p = np.full((n, 2), -1, dtype=np.int64)
    out_c = np.ones(n, dtype=np.int64)
    # the groups of nodes sharing (last query step before, first after, own step, kind)
    before = np.searchsorted(s_arr, node_steps, side="left") - 1
    own = np.searchsorted(s_arr, node_steps, side="left")
    is_q = (own < n_s) & (s_arr[np.clip(own, 0, n_s - 1)] == node_steps)
    own = np.where(is_q, own, -1)
    after = np.where(is_q, own + 1, before + 1)
    key = ((before + 1) * (n_s + 2) + after) * 2 + node_observed.astype(np.int64)
    order_idx = np.argsort(key, kind="stable")
    cuts = np.flatnonzero(np.diff(key[order_idx])) + 1
    width = (kx + 1) ** n_s * max(k, kx) ** 2 + 1
    chunk = max(64, _CHUNK_FLOATS // width)
    stopped = False
    for g in np.split(order_idx, cuts):
        if not g.size:
            continue
        j0 = int(g[0])
        jl, jr, jo = int(before[j0]), int(after[j0]), int(own[j0])
        obs = bool(node_observed[j0])
        for c0 in range(0, g.size, chunk):
            if passed(time_limit):
                stopped = True
                break
            sel = g[c0:c0 + chunk]
            ts = node_steps[sel]
            best_e: dict[int, np.ndarray] = {}
            best_m: dict[int, np.ndarray] = {}
            best_p: dict[int, np.ndarray] = {}
            for m, (mem, (u, v)) in enumerate(zip(mems, anchors, strict=True)):
                for mask, (e, p) in _group_influences(mem, u, v, ts, jl, jr, jo, obs).items():
                    if mask not in best_e:
                        best_e[mask], best_m[mask], best_p[mask] = e, np.full(len(ts), m), p
                    else:
                        up = e > best_e[mask]
                        best_e[mask] = np.where(up, e, best_e[mask])
                        best_m[mask] = np.where(up, m, best_m[mask])
                        best_p[mask] = np.where(up, p, best_p[mask])
            masks = [0, *sorted(best_e)]
            e_up = np.stack([np.zeros(len(ts))] + [
                np.maximum(best_e[mk], 0.0) * (1 + ROUNDING_MARGIN) + bound
                for mk in masks[1:]], axis=1)
            d = d_of[masks][None, :] * np.ones((len(ts), 1))
            sc = _scales(d, e_up, epsilon)
            least = sc.min(axis=1)
            tie = (sc <= least[:, None] * (1 + 1e-12)) | (sc == least[:, None])
            ef = np.where(tie, e_up, np.inf)
            tie &= (ef <= ef.min(axis=1)[:, None] * (1 + 1e-12)) | (ef == ef.min(axis=1)[:, None])
            size = np.array([bin(mk).count("1") for mk in masks])
            pick = np.argmin(np.where(tie, size[None, :], 99), axis=1)
            rows = np.arange(len(ts))
            chosen = np.array(masks)[pick]
            e_c = e_up[rows, pick]
            far = (e_c > 0) & (e_c <= epsilon - _GRID_ROOM)
            e_c = np.where(far, np.ceil(e_c / _GRID) * _GRID, e_c)
            out_mask[sel], out_e[sel], out_d[sel] = chosen, e_c, d_of[chosen]
            out_s[sel] = _scales(d_of[chosen], e_c, epsilon)
            out_opt[sel] = True
            out_c[sel] = len(masks)
            for i, mk in enumerate(masks[1:], start=1):
                hit = pick == i
                if hit.any():
                    out_m[sel[hit]] = best_m[mk][hit]
                    size_p = kx if obs else k
                    out_p[sel[hit], 0] = best_p[mk][hit] // size_p
                    out_p[sel[hit], 1] = best_p[mk][hit] % size_p
        if stopped:
            break
    return FewQuilts(node_steps.astype(np.int64), node_observed.astype(bool), out_mask, out_e,
                     out_d, out_s, out_opt, out_m, out_p, out_c, s_arr, stopped)


def _few_search(theta: Theta, attributes: Sequence[str], delta: Callable[[tuple[str, ...]], float],
               sensitive: Sequence[str], epsilon: float, *,
               time_limit: TimeLimit | None = None) -> tuple[HMMOrder, FewQuilts] | None:
    """:func:`_few_least_quilts` where it applies, else None: a hidden Markov model of at
    least :data:`~quiltpriv.mechanisms.hmm_quilts.HMM_MIN_STEPS` steps, every hidden state
    with the same number of values and every observation too, a query reading observations
    only (``attributes``, distinct, ``(|X| + 1)^|S| <= FEW_MAX_ASSIGNMENTS``) whose
    ``Delta_{A & N}`` is ``delta`` of the query attributes in ``N``, positive probabilities."""
    if len(theta.nodes) < 2 * HMM_MIN_STEPS:
        return None
    order = hmm_order(theta)
    if order is None:
        return None
    pos = {x: t for t, x in enumerate(order.observed)}
    if not attributes or any(a not in pos for a in attributes):
        return None
    steps = sorted({pos[a] for a in attributes})
    card = theta.cardinality
    k, kx = card[order.hidden[0]], card[order.observed[0]]
    if any(card[h] != k for h in order.hidden) or any(card[x] != kx for x in order.observed):
        return None
    if (kx + 1) ** len(steps) > FEW_MAX_ASSIGNMENTS:
        return None
    step_of = {h: t for t, h in enumerate(order.hidden)}
    step_of.update(pos)
    node_steps = np.fromiter(map(step_of.__getitem__, sensitive), dtype=np.int64,
                             count=len(sensitive))
    node_obs = np.fromiter(map(pos.__contains__, sensitive), dtype=bool, count=len(sensitive))
    names = [order.observed[s] for s in steps]

    def delta_mask(mask: int) -> float:
        return float(delta(tuple(x for b, x in enumerate(names) if not mask >> b & 1)))

    try:
        return order, _few_least_quilts(theta, order, steps, delta_mask, node_steps, node_obs,
                                       epsilon, time_limit=time_limit)
    except FewNotApplicable:
        return None
