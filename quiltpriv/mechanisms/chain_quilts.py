"""Exact least-noise quilts of every step of a Markov chain, in time linear in its length.

On a directed chain ``X_1 -> ... -> X_T`` (a time series: one node per step) the nearby set of
any quilt ``Q`` of ``X_i`` is the open interval between ``Q``'s nearest nodes to ``i`` on either
side, so the quilt ``{X_(i-a), X_(i+b)}`` of those (at most two) nodes has the same ``N`` and,
being a subset of ``Q``, no more influence ([SWC17]; monotonicity of [ZOC22, Def. 8]). Every
quilt of ``X_i`` is thus dominated by one of the family ``(a, b)``, ``a`` and ``b`` a distance
or "none" (no quilt node on that side, ``N`` runs to the end). The scale of ``(a, b)`` is
``Delta(N) / (eps - e(a, b))`` ([ZOC22, Alg. 3] and Alg. 5), and:

* the two quilt nodes are independent given ``X_i``, so ``P(x_(i-a), x_(i+b) | x_i)`` is a
  product and ``e(a, b) = max over members and pairs (x, x') of L_a(x, x') + R_b(x, x')`` with
  ``L_a(x, x') = max_u log P(X_(i-a) = u | x) / P(u | x')`` and ``R_b`` likewise forward. Both
  come from products of the transition matrices over ``a`` (``b``) steps, built once per
  distance for a block of steps (forward and backward matrix products);
* ``Delta(N)`` grows with ``a`` and ``b`` (an additive sensitivity over the steps in ``N``), so
  every quilt with a node beyond distance ``K`` has a scale of at least ``Delta`` of the ``K``
  nearest steps over ``eps``: once the best scale found within ``K`` is below that, it is the
  optimum over *all* quilts of ``X_i``. ``K`` starts small and doubles for the steps that need
  it, so the work is ``O(T K^2)`` with ``K`` about ``eps`` times the optimal scale over the
  per-step sensitivity (32 for the fraction of time of a two-state chain with flip
  probability 0.1 at eps = 1), whatever ``T``.

Steps whose inputs (the transition products, the marginals and the sensitivity window) are
identical, as in the middle of a homogeneous chain, are evaluated once.

Influences are rounded upwards as :mod:`quiltpriv.inference.influence` rounds them: by the
float64 error bound of the products and logs (Higham, Section 3.1; all numbers are
non-negative) and by at least ``ROUNDING_MARGIN`` absolute and relative. A model whose numbers
could leave float64's normal range here is refused (:class:`ChainNotApplicable`) and the
general planner is used instead.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from quiltpriv.errors import ParameterError, QuiltPrivError
from quiltpriv.inference.influence import ROUNDING_MARGIN
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.deprecation import clock_deadline_keyword, renamed_keywords
from quiltpriv.utils.time_limit import TimeLimit, check_time_limit, passed
from quiltpriv.utils.validation import check_epsilon

__all__ = ["CHAIN_MIN_NODES", "ChainNotApplicable", "ChainQuilts", "chain_least_quilts",
           "chain_order"]

#: APMQM plans chains with at least this many nodes by the chain search (shorter ones by the
#: general planner, as fast there; the tests compare the two). MQM always uses it on a chain.
CHAIN_MIN_NODES = 64

#: The unit roundoff of float64.
_U = 2.0**-53


def _rounding_bound_k(k: int) -> float:
    """``|computed - exact|`` of a float64 log-ratio of two conditionals whose four entries
    were each computed with at most ``k`` roundings of non-negative numbers: ``4 gamma_k``
    (Higham, Section 3.1) plus the two logs' rounding (the bound of
    :mod:`quiltpriv.inference.influence`)."""
    if k * _U >= 0.25:
        return float("inf")
    gamma = k * _U / (1 - k * _U)
    return 4 * gamma / (1 - 4 * gamma) + 1500 * _U


def chain_order(theta: Theta) -> tuple[str, ...] | None:
    """The nodes in chain order if the DAG is one directed path ``Y_1 -> ... -> Y_m``, else None."""
    nodes = check_theta(theta).nodes
    if len(nodes) < 2 or theta.parents[nodes[0]]:
        return None
    # The first node a root and every other one's parents exactly its predecessor: one path
    # (m - 1 edges, at most one parent and one child each). C-level passes (a year of minutes
    # has 500,000 nodes).
    if not all(map(operator.eq, map(theta.parents.__getitem__, nodes[1:]), zip(nodes[:-1]))):
        return None
    return nodes

#: First search radius ``K`` (doubled for the steps whose optimum it does not prove).
START_RADIUS = 16

#: Steps evaluated together (memory: about ``BLOCK * K^2`` floats per member and state pair).
BLOCK = 2048

#: Relative slack of the optimality proof's comparisons (sums of non-negative floats err by at
#: most ``T u`` relative, far below it).
PROOF_RTOL = 1e-9

#: Computed probabilities must be 0 exactly where they are 0 and at least this where they are
#: not (else the model is refused here: an underflow could hide an infinite influence).
_SAFE_FLOOR = 2.0**-900


class ChainNotApplicable(QuiltPrivError):
    """The chain search cannot be trusted for this model (tiny probabilities)."""


@dataclass(frozen=True)
class ChainQuilts:
    """The least-scale quilt ``{X_(i-a), X_(i+b)}`` of each searched step (arrays by step).

    ``a`` / ``b`` are distances, 0 for "no quilt node on that side". ``influence`` is rounded
    upwards; ``delta`` and ``scale`` are float64 values of ``Delta(N)`` and of the scale used to
    choose (callers recompute the reported ones exactly); ``optimal`` says whether the
    optimum over all quilts is proven (False only where the time limit stopped the search: the
    step then keeps the best quilt found, which is valid). ``member`` and ``pair`` (state
    indices) attain the influence (-1 when it is 0 by construction).
    """

    positions: np.ndarray
    a: np.ndarray
    b: np.ndarray
    influence: np.ndarray
    delta: np.ndarray
    scale: np.ndarray
    optimal: np.ndarray
    member: np.ndarray
    pair: np.ndarray
    considered: np.ndarray
    stopped: bool


def _transitions(theta: Theta, order: Sequence[str], member: int) -> np.ndarray:
    """``F[t][u, x] = P(X_t = x | X_(t-1) = u)`` (``F[0]`` unused), shape ``(T, k, k)``.

    Every node must have the same number of states ``k``.
    """
    cpds = theta.members[member]
    first = np.asarray(cpds[order[0]].table, dtype=np.float64)
    k = first.shape[0]
    out = np.empty((len(order), k, k))
    out[0] = np.eye(k)
    cache: dict[int, np.ndarray] = {}
    for t in range(1, len(order)):
        table = cpds[order[t]].table
        key = id(table)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = np.asarray(table, dtype=np.float64).T
        out[t] = hit
    return out


def _forward(f: np.ndarray, p0: np.ndarray, step: Callable[[np.ndarray, np.ndarray],
                                                             np.ndarray]) -> np.ndarray:
    """``out[0] = p0``, ``out[t] = step(out[t-1], f[t])``; once a vector is a fixed point of a
    matrix that every later step repeats, the rest is that vector (the same floats: the same
    operation on the same inputs), which makes a homogeneous chain's marginals O(1) a step."""
    out = np.empty((f.shape[0], f.shape[1]), dtype=p0.dtype)
    out[0] = p0
    cur = p0
    checked = False
    for t in range(1, f.shape[0]):
        ft = f[t]
        nxt = step(cur, ft)
        if not checked and np.array_equal(nxt, cur):
            checked = True  # checked once: inhomogeneous chains pay it once only
            if (f[t:] == ft).all():
                out[t:] = cur
                return out
        cur = nxt
        out[t] = cur
    return out


def _marginals(f: np.ndarray, p0: np.ndarray) -> np.ndarray:
    """``P(X_t)`` for every step, forward."""
    return _forward(f, p0, lambda v, m: v @ m)


def _supports(sf: np.ndarray, s0: np.ndarray) -> np.ndarray:
    """Where ``P(X_t) > 0``, exactly (boolean products of the transitions' supports)."""
    return _forward(sf, s0, lambda v, m: (v.astype(np.float64) @ m.astype(np.float64)) > 0)


def _check_range(x: np.ndarray, support: np.ndarray) -> None:
    if np.any((x > 0) != support) or np.any((x > 0) & (x < _SAFE_FLOOR)):
        raise ChainNotApplicable("a transition product or marginal underflows float64 here")


def _log_ratio_max(p: np.ndarray, valid_rows: np.ndarray | None, axis_rows: bool) -> np.ndarray:
    """``max over rows r of log p[r, x] / p[r, x']`` (``axis_rows``) or ``max over columns c
    of log p[x, c] / p[x', c]``, over the entries with ``p[.., x] > 0``; ``+inf`` where some
    such entry has ``p[.., x'] = 0``. ``p`` has shape ``(n, k, k)``; returns ``(n, k, k)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lp = np.log(p)
        if axis_rows:  # d[n, r, x, x'] = lp[n, r, x] - lp[n, r, x']
            d = lp[:, :, :, None] - lp[:, :, None, :]
            pos = (p > 0)[:, :, :, None] & np.ones_like(d, dtype=bool)
            if valid_rows is not None:
                pos &= valid_rows[:, :, None, None]
            d = np.where(pos, d, -np.inf)
            return d.max(axis=1)
        d = lp[:, :, None, :] - lp[:, None, :, :]  # d[n, x, x', c]
        pos = (p > 0)[:, :, None, :] & np.ones_like(d, dtype=bool)
        d = np.where(pos, d, -np.inf)
        return d.max(axis=3)


def _side_tables(f: np.ndarray, pi: np.ndarray, sf: np.ndarray, spi: np.ndarray,
                 nodes: np.ndarray, k_max: int, left: bool) -> np.ndarray:
    """``L_a`` (``left``) or ``R_b`` for ``a`` (``b``) = 1..k_max at ``nodes``: shape
    ``(n, k_max + 1, k, k)``, index 0 = no quilt node on that side (zeros), ``nan`` where the
    distance runs past the chain's end."""
    n_steps, k = f.shape[0], f.shape[1]
    n = len(nodes)
    out = np.full((n, k_max + 1, k, k), np.nan)
    valid0 = spi[nodes]
    out[:, 0] = np.where(valid0[:, :, None] & valid0[:, None, :], 0.0, -np.inf)
    eye = np.broadcast_to(np.eye(k), (n, k, k))
    cur = eye.copy()
    scur = eye.copy() > 0
    for d in range(1, k_max + 1):
        src = nodes - d + 1 if left else nodes + d
        ok = (src >= 1) & (src < n_steps)
        if not ok.any():
            break
        srcc = np.clip(src, 1, n_steps - 1)
        if left:  # P(X_i | X_(i-d)) = F_(i-d+1) ... F_i: prepend F_(i-d+1)
            cur = np.matmul(f[srcc], cur)
            scur = np.matmul(sf[srcc].astype(np.float64), scur.astype(np.float64)) > 0
        else:  # P(X_(i+d) | X_i) = F_(i+1) ... F_(i+d): append F_(i+d)
            cur = np.matmul(cur, f[srcc])
            scur = np.matmul(scur.astype(np.float64), sf[srcc].astype(np.float64)) > 0
        _check_range(cur[ok], scur[ok])
        if left:
            far = np.clip(nodes - d, 0, n_steps - 1)
            table = _log_ratio_max(cur, spi[far], axis_rows=True)
            here = pi[nodes]
            lpi = np.log(np.where(here > 0, here, 1.0))  # states of P = 0 are masked later
            with np.errstate(invalid="ignore"):
                table = table + lpi[:, None, :] - lpi[:, :, None]
        else:
            table = _log_ratio_max(cur, None, axis_rows=False)
        # a state pair of P(X_i) = 0 is no pair of Definition 8: never the max
        valid = spi[nodes]
        table = np.where(valid[:, :, None] & valid[:, None, :], table, -np.inf)
        table[~ok] = np.nan
        out[:, d] = table
    return out


def _side_sums(c: np.ndarray, pre: np.ndarray, suf: np.ndarray, nodes: np.ndarray,
               k_max: int, left: bool) -> np.ndarray:
    """Sensitivity of the steps of ``N`` on one side, shape ``(n, k_max + 1)``.

    Left: index ``a`` >= 1 sums ``c`` over ``i-a+1 .. i`` (``i`` included), index 0 over
    ``0 .. i``. Right: index ``b`` >= 1 over ``i+1 .. i+b-1``, index 0 over ``i+1 .. T-1``.
    Each is a sum of non-negative terms from ``i`` outwards (relative error ``<= T u``).
    """
    n_steps = len(c)
    steps = np.arange(k_max)
    if left:
        idx = nodes[:, None] - steps[None, :]
        vals = np.where(idx >= 0, c[np.clip(idx, 0, n_steps - 1)], 0.0)
        sums = np.cumsum(vals, axis=1)  # sums[:, a-1] = c over i-a+1..i
        head = pre[nodes + 1]
    else:
        idx = nodes[:, None] + 1 + steps[None, :]
        vals = np.where(idx < n_steps, c[np.clip(idx, 0, n_steps - 1)], 0.0)
        sums = np.concatenate([np.zeros((len(nodes), 1)), np.cumsum(vals, axis=1)[:, :-1]],
                              axis=1)  # sums[:, b-1] = c over i+1..i+b-1
        head = suf[nodes + 1]
    return np.concatenate([head[:, None], sums], axis=1)


def _capped(sums: np.ndarray, cap: float | None) -> np.ndarray:
    """``Delta(N)`` from the sum of the weights over ``N``: the sum, or ``cap`` where it is
    positive (an all-or-nothing sensitivity)."""
    return sums if cap is None else np.where(sums > 0, cap, 0.0)


def _lower(sums: np.ndarray, cap: float | None, eps: float) -> np.ndarray:
    """A lower bound on the scale of every quilt whose ``N`` holds the steps summed in
    ``sums``: ``Delta / eps`` (with the sums' float slack for an additive ``Delta``)."""
    if cap is None:
        return sums / eps * (1 - PROOF_RTOL)
    return np.where(sums > 0, cap / eps, 0.0)


def _beyond(delta: np.ndarray, e: np.ndarray, eps: float, cap: float | None) -> np.ndarray:
    """Per step, the least of ``delta[:, d] / (eps - e[:, d])`` over the other side's
    distances ``d`` (a past-the-end distance, NaN, is no quilt), with the proof's slack: the
    influences are float sums, and so are additive ``Delta``s. ``d = 0`` has ``e = 0`` exactly
    (no quilt node on either side), so an all-or-nothing ``Delta`` needs no slack there."""
    s = _scales(delta, e, eps)
    s = np.where(np.isnan(s), np.inf, s)
    slack = np.full(s.shape[1], 1 - PROOF_RTOL)
    if cap is not None:
        slack[0] = 1.0
    return (s * slack[None, :]).min(axis=1)


def _scales(delta: np.ndarray, e: np.ndarray, eps: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(e < eps, delta / (eps - e), np.inf)
    s = np.where((delta == 0) & (e <= eps), 0.0, s)
    return np.where(np.isnan(e), np.inf, s)


def _chain_least_quilts_by_deadline(theta: Theta, order: Sequence[str],
                                    positions: Sequence[int] | np.ndarray,
                                    weights: Sequence[float] | np.ndarray, epsilon: float, *,
                                    deadline: float | None = None,
                                    **options: Any) -> ChainQuilts:
    """:func:`chain_least_quilts` with its deprecated ``deadline=`` (a ``time.monotonic()``
    reading)."""
    limit = None if deadline is None else TimeLimit.ending_at(deadline)
    return chain_least_quilts(theta, order, positions, weights, epsilon, time_limit=limit,
                              **options)


@renamed_keywords(eps="epsilon")
@clock_deadline_keyword(_chain_least_quilts_by_deadline)
def chain_least_quilts(theta: Theta, order: Sequence[str], positions: Sequence[int] | np.ndarray,
                       weights: Sequence[float] | np.ndarray, epsilon: float, *,
                       time_limit: float | TimeLimit | None = None, progress: bool = False,
                       cap: float | None = None) -> ChainQuilts:
    """The least-scale quilt of each step in ``positions`` of the chain ``order``.

    Parameters
    ----------
    theta : Theta
        A directed chain (``order`` is :func:`quiltpriv.mechanisms.mqm.chain_order` of it).
    positions : sequence of int
        The steps to search (indices into ``order``).
    weights : sequence of float
        Per step, ``Delta`` of that step alone (>= 0, additive: ``Delta(N)`` is their sum over
        ``N``): ``|w_j| (hi_j - lo_j)`` for a linear query, 1 for a step MQM counts, 0 for a
        step the query does not read.
    epsilon : float
    time_limit : float or TimeLimit, optional
        Seconds from this call, or a running :class:`~quiltpriv.utils.time_limit.TimeLimit`:
        steps not proven by then keep their best quilt so far (valid, ``optimal`` False; steps
        not reached keep the quilt ``{}``). The old ``deadline=`` (a ``time.monotonic()``
        reading) is deprecated.
    progress : bool
        A progress bar over the steps.
    cap : float, optional
        An all-or-nothing sensitivity (a count, a histogram): ``Delta(N)`` is ``cap`` when the
        weights over ``N`` sum to more than 0 (``N`` holds a step the query reads), else 0.
        Monotone in ``N`` like a sum, so the same proof of optimality holds.

    Raises
    ------
    ChainNotApplicable
        When float64 could underflow on this model (the caller plans another way).
    """
    theta = check_theta(theta)
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, float | int)
                            or not math.isfinite(cap) or cap < 0):
        raise ParameterError(f"cap must be a finite number >= 0, got {cap!r}")
    if isinstance(order, str) or not isinstance(order, Sequence) \
            or tuple(order) != chain_order(theta):
        raise ParameterError("order must be the network's chain order (chain_order(theta))")
    epsilon = check_epsilon(epsilon)
    limit = check_time_limit(time_limit)
    n_steps = len(order)
    try:
        pos_arr = np.asarray(positions)
        w_arr = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"positions and weights must be numbers: {exc}") from None
    if pos_arr.ndim != 1 or (pos_arr.size and not np.issubdtype(pos_arr.dtype, np.integer)) \
            or (pos_arr.size and (pos_arr.min() < 0 or pos_arr.max() >= n_steps)):
        raise ParameterError(f"positions must be whole numbers in [0, {n_steps - 1}]")
    if w_arr.shape != (n_steps,) or not np.all(np.isfinite(w_arr)) or np.any(w_arr < 0):
        raise ParameterError(f"give one finite weight >= 0 per step ({n_steps})")
    k = theta.cardinality[order[0]]
    if any(theta.cardinality[v] != k for v in order):
        raise ChainNotApplicable("the chain's steps have different numbers of states")
    c = w_arr
    pos = pos_arr.astype(np.int64)
    pre = np.concatenate([[0.0], np.cumsum(c)])
    suf = np.concatenate([np.cumsum(c[::-1])[::-1], [0.0]])
    if passed(limit):
        # the limit passed before the search began: every step keeps the quilt {} (valid,
        # flagged), and no table of the model is read
        return _unsearched(pos, float(pre[n_steps]), cap, epsilon)
    n_members = len(theta.members)
    fs, pis, sfs, spis = [], [], [], []
    for m in range(n_members):
        f = _transitions(theta, order, m)
        p0 = np.asarray(theta.members[m][order[0]].table, dtype=np.float64).reshape(k)
        pi = _marginals(f, p0)
        sf = f > 0
        spi = _supports(sf, p0 > 0)
        _check_range(pi, spi)
        fs.append(f)
        pis.append(pi)
        sfs.append(sf)
        spis.append(spi)
    # A marginal P(X_t) is computed with at most (t + 1)(k + 2) roundings of non-negative
    # numbers: relative error gamma_K (Higham, Section 3.1), and L_a holds a ratio of two of
    # them (the products over a steps are bounded per radius, in _block).
    depth = (n_steps + 1) * (k + 2) + 16
    gamma = depth * _U / (1 - depth * _U)
    pi_bound = 2 * gamma / (1 - 2 * gamma) + 8 * _U

    n = len(pos)
    start_q = _unsearched(pos, float(pre[n_steps]), cap, epsilon)
    out_a, out_b, out_e, out_d = start_q.a, start_q.b, start_q.influence, start_q.delta
    out_s, out_opt, out_m, out_p = start_q.scale, start_q.optimal, start_q.member, start_q.pair
    out_n = start_q.considered
    stopped = False
    blocks = list(range(0, n, BLOCK))
    it: Iterable[int] = blocks
    if progress:
        from quiltpriv.utils.progress import progress_bar

        it = progress_bar(blocks, desc="quilts", unit=f"block of {BLOCK} steps")
    for start in it:
        sel = np.arange(start, min(n, start + BLOCK))
        radius = START_RADIUS
        while sel.size:
            if passed(limit):
                stopped = True
                break
            _block(fs, pis, sfs, spis, c, pre, suf, pos, sel, radius, epsilon, pi_bound, cap,
                   out_a, out_b, out_e, out_d, out_s, out_opt, out_m, out_p, out_n)
            sel = sel[~out_opt[sel]]
            radius *= 2
        if stopped:
            break
    return ChainQuilts(pos, out_a, out_b, out_e, out_d, out_s, out_opt, out_m, out_p, out_n,
                       stopped)


def _unsearched(pos: np.ndarray, total: float, cap: float | None, eps: float) -> ChainQuilts:
    """Every step of ``pos`` with the quilt ``{}`` (``N`` all of the chain, ``Delta`` the
    weights' ``total``), not proven optimal: where the search starts from."""
    n = len(pos)
    delta = _capped(total * np.ones(n), cap)
    e = np.zeros(n)
    return ChainQuilts(pos, np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), e,
                       delta, _scales(delta, e, eps), np.zeros(n, dtype=bool),
                       np.full(n, -1, dtype=np.int64), np.full((n, 2), -1, dtype=np.int64),
                       np.ones(n, dtype=np.int64), n > 0)


def _signatures(fs: list[np.ndarray], pis: list[np.ndarray], spis: list[np.ndarray],
                c: np.ndarray, nodes: np.ndarray, kr: int) -> np.ndarray:
    """One row per step of everything its tables within ``kr`` and its interior sensitivities
    depend on: the transitions ``F`` of steps ``i-kr+1 .. i+kr``, the marginals and supports
    of steps ``i-kr .. i``, the weights of steps ``i-kr+1 .. i+kr-1`` and the room to each end
    (capped at ``kr + 1``). Equal rows give equal tables (the same floats through the same
    operations)."""
    n_steps = len(c)
    room_l = np.minimum(nodes, kr + 1)
    room_r = np.minimum(n_steps - 1 - nodes, kr + 1)
    parts = [room_l[:, None].astype(np.float64), room_r[:, None].astype(np.float64)]
    fi = np.clip(nodes[:, None] + np.arange(-kr + 1, kr + 1)[None, :], 0, n_steps - 1)
    pi_idx = np.clip(nodes[:, None] + np.arange(-kr, 1)[None, :], 0, n_steps - 1)
    ci = np.clip(nodes[:, None] + np.arange(-kr + 1, kr)[None, :], 0, n_steps - 1)
    for f, pi, spi in zip(fs, pis, spis, strict=True):
        parts += [f[fi].reshape(len(nodes), -1), pi[pi_idx].reshape(len(nodes), -1),
                  spi[pi_idx].reshape(len(nodes), -1).astype(np.float64)]
    parts.append(c[ci])
    return np.concatenate(parts, axis=1)


def _groups(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal rows: ``(first, inverse)`` as ``np.unique(rows, axis=0)`` gives them.

    Rows are grouped by a 64-bit hash of their bits, then checked equal to their group's first
    row; a collision (never seen) falls back to the exact sort.
    """
    bits = np.ascontiguousarray(rows).view(np.uint64)
    with np.errstate(over="ignore"):
        # fixed odd multipliers (Weyl sequence of the golden ratio): any hash will do, since
        # every group is checked below
        mult = (np.arange(1, bits.shape[1] + 1, dtype=np.uint64)
                * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
        h = (bits * mult[None, :]).sum(axis=1, dtype=np.uint64)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not np.array_equal(bits, bits[first][inverse]):
        _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    return first, inverse


def _block(fs: list[np.ndarray], pis: list[np.ndarray], sfs: list[np.ndarray],
           spis: list[np.ndarray], c: np.ndarray, pre: np.ndarray, suf: np.ndarray,
           pos: np.ndarray, sel: np.ndarray, radius: int, eps: float, pi_bound: float,
           cap: float | None,
           out_a: np.ndarray, out_b: np.ndarray, out_e: np.ndarray, out_d: np.ndarray,
           out_s: np.ndarray, out_opt: np.ndarray, out_m: np.ndarray,
           out_p: np.ndarray, out_n: np.ndarray) -> None:
    """Search the steps ``pos[sel]`` within ``radius``; write the best and the proof."""
    n_steps = len(c)
    nodes = pos[sel]
    kr = min(radius, n_steps)
    # products over at most kr steps (k + 2 roundings a step) in L_a and in R_b, each a
    # log-ratio of two conditionals; the marginals' ratio in L_a; the sums of the logs
    kd = (kr + 1) * (fs[0].shape[1] + 2) + 16
    bound = 2 * _rounding_bound_k(kd) + pi_bound
    # Steps with identical inputs share one evaluation (the middle of a homogeneous chain).
    first, inverse = _groups(_signatures(fs, pis, spis, c, nodes, kr))
    reps = nodes[first]
    n_u = len(reps)
    k = fs[0].shape[1]
    dl = _side_sums(c, pre, suf, reps, kr, left=True)    # [:, 0] is the rep's own: unused
    dr = _side_sums(c, pre, suf, reps, kr, left=False)
    kr1 = kr + 1
    best_e = np.full((n_u, kr1, kr1), -np.inf)
    best_m = np.full((n_u, kr1, kr1), -1, dtype=np.int64)
    best_x = np.full((n_u, kr1, kr1), -1, dtype=np.int64)
    best_y = np.full((n_u, kr1, kr1), -1, dtype=np.int64)
    past_end = np.zeros((n_u, kr1, kr1), dtype=bool)
    for m in range(len(fs)):
        lt = _side_tables(fs[m], pis[m], sfs[m], spis[m], reps, kr, True)
        rt = _side_tables(fs[m], pis[m], sfs[m], spis[m], reps, kr, False)
        past_end |= (np.isnan(lt).all(axis=(2, 3))[:, :, None]
                     | np.isnan(rt).all(axis=(2, 3))[:, None, :])
        for x in range(k):
            for y in range(k):
                if x == y:
                    continue
                with np.errstate(invalid="ignore"):
                    e = lt[:, :, None, x, y] + rt[:, None, :, x, y]
                e = np.where(np.isnan(e), -np.inf, e)  # past the end: masked below
                better = e > best_e
                best_e = np.where(better, e, best_e)
                best_m = np.where(better, m, best_m)
                best_x = np.where(better, x, best_x)
                best_y = np.where(better, y, best_y)
    # (a, b) = (0, 0) is the quilt {} (nothing observed, influence 0 exactly); every other
    # influence is rounded upwards (a computed 0 too, as the general calculator does)
    e_up = np.maximum(best_e, 0.0)
    finite = np.isfinite(e_up)
    e_up = np.where(finite, e_up * (1 + ROUNDING_MARGIN) + max(ROUNDING_MARGIN, bound), e_up)
    e_up[:, 0, 0] = 0.0
    best_m[:, 0, 0] = -1
    e_up = np.where(past_end, np.nan, e_up)
    # Interior quilts (a, b >= 1): per evaluation. Index 0 (no quilt node on a side) needs the
    # step's own sum to that end: per step, O(kr) each.
    d_inner = _capped((dl[:, 1:, None] + dr[:, None, 1:]).reshape(n_u, -1), cap)
    e_inner = e_up[:, 1:, 1:].reshape(n_u, -1)
    inner = _scales(d_inner, e_inner, eps)
    inner = np.where(np.isnan(inner), np.inf, inner)
    # each evaluation's best interior quilt (ties as below), then one candidate per step
    i_least = inner.min(axis=1)
    i_tie = (inner <= i_least[:, None] * (1 + 1e-12)) | (inner == i_least[:, None])
    i_ef = np.where(i_tie & ~np.isnan(e_inner), e_inner, np.inf)
    i_tie &= (i_ef <= i_ef.min(axis=1)[:, None] * (1 + 1e-12)) | (
        i_ef == i_ef.min(axis=1)[:, None])
    i_pick = np.argmax(i_tie, axis=1)
    urows = np.arange(n_u)
    cand_s = [inner[urows, i_pick][inverse][:, None]]
    cand_e = [e_inner[urows, i_pick][inverse][:, None]]
    head_l = pre[nodes + 1]
    head_r = suf[nodes + 1]
    row0 = _capped(head_l[:, None] + dr[inverse], cap)          # a = 0, b = 0..kr
    col0 = _capped(dl[inverse][:, 1:] + head_r[:, None], cap)   # a = 1..kr, b = 0
    cand_s += [_scales(row0, e_up[inverse, 0, :], eps), _scales(col0, e_up[inverse, 1:, 0], eps)]
    cand_e += [e_up[inverse, 0, :], e_up[inverse, 1:, 0]]
    scale = np.concatenate(cand_s, axis=1)
    infl = np.concatenate(cand_e, axis=1)
    delta = np.concatenate([d_inner[urows, i_pick][inverse][:, None], row0, col0], axis=1)
    ai, bi = np.divmod(i_pick[inverse], kr)
    n = len(nodes)
    cand_a = np.concatenate([(ai + 1)[:, None], np.zeros((n, kr1), dtype=np.int64),
                             np.broadcast_to(np.arange(1, kr1), (n, kr))], axis=1)
    cand_b = np.concatenate([(bi + 1)[:, None], np.broadcast_to(np.arange(kr1), (n, kr1)),
                             np.zeros((n, kr), dtype=np.int64)], axis=1)
    # least scale; among ties (relative 1e-12) the least influence, then fewest quilt nodes
    scale = np.where(np.isnan(scale), np.inf, scale)
    least = scale.min(axis=1)
    tie = (scale <= least[:, None] * (1 + 1e-12)) | (scale == least[:, None])
    ef = np.where(tie & ~np.isnan(infl), infl, np.inf)
    e_least = ef.min(axis=1)
    tie &= (ef <= e_least[:, None] * (1 + 1e-12)) | (ef == e_least[:, None])
    size = (cand_a > 0).astype(np.int64) + (cand_b > 0)
    choice = np.argmin(np.where(tie, size, 99), axis=1)
    rows = np.arange(len(nodes))
    ca, cb = cand_a[rows, choice], cand_b[rows, choice]
    s_node = scale[rows, choice]
    # proof: a quilt node beyond the radius leaves at least `radius` steps of one side in N
    # (the side's kr nearest steps are in N: Delta / eps at least), and, sharper, a quilt
    # node beyond the radius on one side with the other side's node at distance d has an
    # influence at least the one-sided quilt's of d (the left part L_a >= 0) and an N
    # holding both stretches
    lb_left = _lower(dl[inverse, kr], cap, eps)
    lb_right = _lower(c[nodes] + dr[inverse, kr], cap, eps)
    far = _lower(dl[inverse, kr] + dr[inverse, kr], cap, eps)
    lb_left = np.maximum(lb_left, np.minimum(far, _beyond(
        _capped(dl[inverse, kr][:, None] + dr[inverse], cap), e_up[inverse, 0, :], eps, cap)))
    right_sums = np.concatenate([head_l[:, None], dl[inverse][:, 1:]], axis=1) \
        + (c[nodes] + dr[inverse, kr])[:, None]
    lb_right = np.maximum(lb_right, np.minimum(far, _beyond(
        _capped(right_sums, cap), e_up[inverse, :, 0], eps, cap)))
    ok_left = (nodes <= kr) | (s_node <= lb_left)
    ok_right = (n_steps - 1 - nodes <= kr) | (s_node <= lb_right)
    proven = ok_left & ok_right
    upd = (s_node <= out_s[sel]) | proven
    tgt = sel[upd]
    out_a[tgt], out_b[tgt] = ca[upd], cb[upd]
    out_e[tgt], out_d[tgt], out_s[tgt] = infl[rows, choice][upd], delta[rows, choice][upd], \
        s_node[upd]
    u = inverse[upd]
    out_m[tgt] = best_m[u, ca[upd], cb[upd]]
    out_p[tgt, 0], out_p[tgt, 1] = best_x[u, ca[upd], cb[upd]], best_y[u, ca[upd], cb[upd]]
    out_opt[sel] = proven
    # the family members within the radius (a superset of every earlier round's)
    out_n[sel] = (np.minimum(nodes, kr) + 1) * (np.minimum(n_steps - 1 - nodes, kr) + 1)
