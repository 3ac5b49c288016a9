"""Exact least-noise quilts of every node of a hidden Markov model, in time linear in its length.

The network is a hidden chain ``H_1 -> ... -> H_T`` with one observation ``H_t -> X_t`` per
step, and the query reads the observations (each with the same weight ``w``: the fraction of
time in a state, or MQM's count ``|N & read|`` with the observations read); the sensitive
nodes may be hidden states, observations or both. Every node has at most one parent, so the
DAG is a tree without colliders and ``Q`` d-separates exactly what it cuts off: the nearby set
``N(Q)`` of a node ``v`` is the connected part of ``v`` once ``Q`` is removed ([ZOC22,
Def. 7]).

Which quilts dominate
---------------------
Three steps, each by N-equivalence and subset monotonicity ([SWC17]; [ZOC22, Def. 8]:
an influence never falls as a quilt grows, and never rises under a common Markov kernel):

1. The nodes of ``Q`` adjacent to ``N(Q)`` form a quilt with the same ``N``, and a subset of
   ``Q``: every quilt is dominated by the boundary of a connected set around ``v``.
2. A hidden node ``H_r`` in ``Q`` (``r`` beyond ``v``) can be replaced by the observations
   ``X_r, ..., X_T`` (``H_r, ..., H_T`` join ``N``, read by nobody, so ``Delta`` is unchanged):
   given ``H_r`` they are independent of ``v`` and of the rest of ``Q``, so the new quilt's
   conditionals are the old ones mixed by one kernel, and no likelihood ratio grows. Likewise
   on the left. So every quilt is dominated by a set ``X_A`` of observations, with every
   hidden state and every other observation nearby: ``Delta = w |not A|`` and
   ``e = e(X_A | v)``.
3. With two hidden states, given ``H_i`` the observations on each side enter only through one
   likelihood ratio ``rho = P(x | H_i = 0) / P(x | H_i = 1)``, built by maps ``rho -> r rho``
   (an observation, ``r`` its emission ratio) and linear-fractional transition maps, which are
   non-decreasing when every transition matrix has ``det >= 0`` (a "sticky" chain) and satisfy
   ``t(r x) <= r t(x)`` for ``r >= 1`` (``>=`` for ``r <= 1``). So the largest (smallest)
   ``rho`` over the values of ``X_A`` takes the largest (smallest) emission ratio at every
   observation, and moving a step of ``N`` nearer to ``i`` (swapping it with an observation
   of ``A`` there) never raises the largest ``rho`` nor lowers the smallest. For a given
   number ``n`` of observations in ``N`` on one side, the *window* (the ``n`` nearest) is
   therefore the least influential choice, for both pairs of hidden states at once; and the
   influence of ``X_i`` (a mixture over ``H_i``, monotone in ``rho``) and of ``H_i`` are
   functions of these extremes.

So the quilts ``X_(outside the window [i - a, i + b])`` -- with, for a hidden node, ``X_i``
in or out of ``Q`` -- hold an optimal quilt of every node. Their influences are products of
forward (left) and backward (right) extremal vectors, one scan each over the series, and of
the transition products over the window, as in :mod:`quiltpriv.mechanisms.chain_quilts`
(search radius doubled until ``Delta`` of the nearest steps proves no wider window can win;
nodes with identical inputs evaluated once).

The optimal window ends at the series' ends, which would put ``O(T)`` observations in every
quilt. The plan uses instead the first ``m`` observations past each end of the window and the
hidden state just beyond them (``{H_s, X_(s+1), ..., X_(i-a-1)}`` on the left): a valid quilt
with the same ``N`` up to hidden states, whose influence exceeds the window's by less than a
relative ``BAND_RTOL`` (``m`` grows by half until it does; the ratio of the far observations decays
geometrically). A node is flagged optimal when its quilt's scale is within ``PROOF_RTOL`` of
the least over all quilts, computed with every influence rounded upwards as
:mod:`quiltpriv.inference.influence` rounds them (Higham, Section 3.1: all numbers are
non-negative).

Anything else -- more than two hidden states, a zero probability, a transition with
``det < 0``, emissions that change with the step, a query reading hidden states or weighting
the observations unequally -- is refused (:class:`HMMNotApplicable`, or None from the
dispatchers) and planned by the general search.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import compress, repeat
from typing import Any, cast

import numpy as np

from quiltpriv.errors import ParameterError, QuiltPrivError
from quiltpriv.inference.influence import ROUNDING_MARGIN
from quiltpriv.mechanisms.chain_quilts import (
    _SAFE_FLOOR,
    _U,
    PROOF_RTOL,
    START_RADIUS,
    _forward,
    _groups,
    _rounding_bound_k,
    _scales,
)
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.deprecation import clock_deadline_keyword, renamed_keywords
from quiltpriv.utils.time_limit import TimeLimit, check_time_limit, passed
from quiltpriv.utils.validation import check_epsilon

__all__ = ["HMM_MIN_STEPS", "HMMNotApplicable", "HMMOrder", "HMMQuilts", "hmm_least_quilts",
           "hmm_order", "hmm_search"]

#: The planners use this search on HMMs of at least this many steps (shorter ones go to the
#: general search, exact there; the tests compare the two).
HMM_MIN_STEPS = 32

#: Nodes searched together (the evaluations of equal steps are shared within a block; their
#: tables are built in chunks of at most ``_CHUNK_FLOATS``).
HMM_BLOCK = 8192

#: First band length ``m`` (observations past each end of the window), grown by half as needed.
BAND_START = 8

#: A band's influence may exceed its window's by this much (relative; the scale's excess is
#: ``e / (eps - e)`` times it, far below the influences' rounding margin).
BAND_RTOL = 1e-11

#: Bound on the rounding of the sums of (at most four) logs of numbers in [2^-900, 1]:
#: each |log| <= 624, each log and addition rounds by at most u times the magnitude.
_LOG_SUM_BOUND = 40000 * _U


class HMMNotApplicable(QuiltPrivError):
    """The HMM search does not handle this model or query (the general search does)."""


@dataclass(frozen=True)
class HMMOrder:
    """The hidden chain ``H_1 .. H_T`` and the observation ``X_t`` of each step."""

    hidden: tuple[str, ...]
    observed: tuple[str, ...]


def hmm_order(theta: Theta) -> HMMOrder | None:
    """The steps of a hidden Markov model, or None if ``theta`` is not one.

    A hidden Markov model here: nodes that are leaves with one parent (the observations) and a
    directed path of the others (the hidden chain), each with exactly one observation child.
    """
    theta = check_theta(theta)
    parents, children = theta.parents, theta.children
    nodes = theta.nodes
    # C-level passes over the nodes (a year of minutes is a million of them)
    is_leaf = list(map(operator.and_, map(operator.not_, map(children.__getitem__, nodes)),
                       map(operator.eq, map(len, map(parents.__getitem__, nodes)), repeat(1))))
    leaves = list(compress(nodes, is_leaf))
    hidden = tuple(compress(nodes, map(operator.not_, is_leaf)))
    if len(hidden) < 2 or len(leaves) != len(hidden) or parents[hidden[0]]:
        return None
    # the hidden nodes form a directed path, in network order: each one's parents are just
    # the one before it (so the next one is among its children)
    if list(map(parents.__getitem__, hidden[1:])) != list(zip(hidden[:-1])):
        return None
    # each hidden node has its next one and exactly one leaf as children (the last: the leaf
    # alone); a leaf's one parent is hidden (every other node is), so mapping each leaf's
    # parent to it finds that leaf, and no two leaves may share a parent
    if list(map(len, map(children.__getitem__, hidden))) != [2] * (len(hidden) - 1) + [1]:
        return None
    leaf_of = dict(zip(map(operator.itemgetter(0), map(parents.__getitem__, leaves)), leaves,
                       strict=True))
    if len(leaf_of) != len(leaves):
        return None
    observed = tuple(map(leaf_of.get, hidden))
    if None in observed:
        return None
    return HMMOrder(hidden, cast(tuple[str, ...], observed))


@dataclass(frozen=True)
class _Member:
    """One member's arrays: ``tr[t][u, h] = P(H_t = h | H_(t-1) = u)`` (``tr[0]`` unused),
    ``emit[h, x]``, the marginals ``pi[t]`` and the extremal forward / backward vectors
    (``fwd[c][t]``: ``P(x_(1..t-1), H_t)`` up to a factor, every observation at the largest
    (``c = 0``) or smallest (``c = 1``) emission ratio; ``bwd[c][t]``: ``P(x_(t+1..T) | H_t)``
    likewise)."""

    tr: np.ndarray
    emit: np.ndarray
    pi: np.ndarray
    fwd: tuple[np.ndarray, np.ndarray]
    bwd: tuple[np.ndarray, np.ndarray]
    cols: tuple[int, int]


def _det_nonnegative(table: np.ndarray) -> bool:
    a, b, c, d = (Fraction(float(x)) for x in table.reshape(-1))
    return a * d - b * c >= 0


def _normalize(v: np.ndarray) -> np.ndarray:
    return v / v.sum(axis=-1, keepdims=True)


def _forward_step(e: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``alpha -> (alpha * e) @ tr``, normalised: one observation at ``e``, one transition."""
    return lambda v, f: _normalize((v * e) @ f)


def _backward_step(e: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``beta -> tr @ (e * beta)``, normalised."""
    return lambda v, f: _normalize(f @ (e * v))


def _member(theta: Theta, order: HMMOrder, m: int) -> _Member:
    cpds = theta.members[m]
    n_steps = len(order.hidden)
    p0 = np.asarray(cpds[order.hidden[0]].table, dtype=np.float64).reshape(-1)
    if p0.shape != (2,):
        raise HMMNotApplicable("the hidden states do not have two values")
    tr = np.empty((n_steps, 2, 2))
    tr[0] = np.eye(2)
    seen: dict[int, np.ndarray] = {}
    for t in range(1, n_steps):
        table = cpds[order.hidden[t]].table
        hit = seen.get(id(table))
        if hit is None:
            hit = np.asarray(table, dtype=np.float64)
            if hit.shape != (2, 2):
                raise HMMNotApplicable("the hidden states do not have two values")
            if not _det_nonnegative(hit):
                raise HMMNotApplicable("a transition matrix has a negative determinant")
            seen[id(table)] = hit = hit.T
        tr[t] = hit
    first = cpds[order.observed[0]].table
    emit = np.asarray(first, dtype=np.float64).T
    for x in order.observed[1:]:
        table = cpds[x].table
        if table is not first and not np.array_equal(np.asarray(table, dtype=np.float64).T,
                                                    emit):
            raise HMMNotApplicable("the emission probabilities change with the step")
    if emit.ndim != 2 or emit.shape[0] != 2:
        raise HMMNotApplicable("the hidden states do not have two values")
    for arr in (p0, tr[1:], emit):
        if np.any(arr < _SAFE_FLOOR):
            raise HMMNotApplicable("a probability is zero or too small for float64 here")
    ratio = emit[0] / emit[1]
    cols = (int(np.argmax(ratio)), int(np.argmin(ratio)))
    pi = _forward(tr, p0, lambda v, f: v @ f)
    # backward: g[s] = tr[T - s] for s >= 1, so out[s] is the vector at step T - 1 - s
    g = np.concatenate([np.eye(2)[None], tr[::-1][:-1]])
    fwd = (_forward(tr, p0, _forward_step(emit[:, cols[0]])),
           _forward(tr, p0, _forward_step(emit[:, cols[1]])))
    half = np.array([0.5, 0.5])
    bwd = (_forward(g, half, _backward_step(emit[:, cols[0]]))[::-1],
           _forward(g, half, _backward_step(emit[:, cols[1]]))[::-1])
    for arr in (pi, *fwd, *bwd):
        if np.any(arr < _SAFE_FLOOR) or not np.all(np.isfinite(arr)):
            raise HMMNotApplicable("a marginal underflows float64 here")
    return _Member(tr, emit, pi, fwd, bwd, cols)


@dataclass(frozen=True)
class HMMQuilts:
    """The least-scale quilt of each searched node (arrays by node).

    ``step`` is the node's step ``t`` (0-based) and ``observed`` whether it is ``X_t`` (else
    ``H_t``). ``left`` / ``right``: the number of observations in ``N`` on each side (equal to
    the room to that end: no quilt node there); ``center``: ``X_t`` is in ``Q`` (hidden nodes
    only). ``band_left`` / ``band_right``: the first and last observation in ``Q`` (a hidden
    state beyond them is in ``Q`` too unless they reach the end). ``influence`` is rounded
    upwards; ``count`` the observations in ``N``; ``scale`` the float64 scale used to choose;
    ``optimal`` whether the least over all quilts is proven. ``member`` and ``pair`` attain the
    influence (state indices; -1 for ``Q = {}``).
    """

    step: np.ndarray
    observed: np.ndarray
    left: np.ndarray
    right: np.ndarray
    center: np.ndarray
    band_left: np.ndarray
    band_right: np.ndarray
    influence: np.ndarray
    count: np.ndarray
    scale: np.ndarray
    optimal: np.ndarray
    member: np.ndarray
    pair: np.ndarray
    considered: np.ndarray
    stopped: bool

    def quilt(self, j: int, order: HMMOrder) -> tuple[str, ...]:
        """Node ``j``'s quilt in step order (hidden state before observation at a step)."""
        t, n_steps = int(self.step[j]), len(order.hidden)
        out: list[str] = []
        lo, hi = int(self.band_left[j]), int(self.band_right[j])
        if self.left[j] < t:
            if lo > 0:
                out.append(order.hidden[lo - 1])
            out.extend(order.observed[lo:t - int(self.left[j])])
        if self.center[j]:
            out.append(order.observed[t])
        if self.right[j] < n_steps - 1 - t:
            out.extend(order.observed[t + int(self.right[j]) + 1:hi + 1])
            if hi < n_steps - 1:
                out.append(order.hidden[hi + 1])
        return tuple(out)

    def pair_states(self, j: int, states: Sequence[Any]) -> tuple[Any, Any] | None:
        """The pair of node ``j``'s values (its ``states``) attaining its influence."""
        if self.member[j] < 0:
            return None
        p = int(self.pair[j])
        if self.observed[j]:
            return states[p // len(states)], states[p % len(states)]
        return (states[0], states[1]) if p == 1 else (states[1], states[0])

    def nearby_observed(self, j: int, order: HMMOrder) -> tuple[str, ...]:
        """The observations in node ``j``'s ``N``, in step order."""
        t = int(self.step[j])
        lo, hi = t - int(self.left[j]), t + int(self.right[j])
        if self.center[j]:
            return order.observed[lo:t] + order.observed[t + 1:hi + 1]
        return order.observed[lo:hi + 1]


def _extremes(mem: _Member, steps: np.ndarray, n_max: int, left: bool
              ) -> tuple[np.ndarray, np.ndarray]:
    """The extremal vectors (largest, smallest ratio) at ``H_i`` of the windows with
    ``n = 0..n_max`` observations of ``N`` on one side, plus index ``n_max + 1`` = no quilt
    node on that side: shape ``(len(steps), n_max + 2, 2)`` each, ``nan`` past the end.
    Left: ``P(x_left, H_i)``, right: ``P(x_right | H_i)``, up to a positive factor each."""
    n_steps = mem.tr.shape[0]
    n = len(steps)
    room = steps if left else n_steps - 1 - steps
    none = mem.pi[steps] if left else np.ones((n, 2))
    outs = []
    prods = [np.broadcast_to(np.eye(2), (n, 2, 2))]
    for d in range(1, n_max + 1):
        src = np.clip(steps - d + 1 if left else steps + d, 1, n_steps - 1)
        prods.append(np.matmul(mem.tr[src], prods[-1]) if left
                     else np.matmul(prods[-1], mem.tr[src]))
    prod = np.stack(prods, axis=1)                                  # (n, n_max + 1, 2, 2)
    far = np.clip(steps[:, None] + (-1 if left else 1) * np.arange(n_max + 1)[None, :], 0,
                  n_steps - 1)
    dist = np.arange(n_max + 1)[None, :]
    for scan in (mem.fwd if left else mem.bwd):
        vec = (np.matmul(scan[far][:, :, None, :], prod)[:, :, 0] if left
               else np.matmul(prod, scan[far][:, :, :, None])[:, :, :, 0])
        vec = np.where(np.asarray(dist == room[:, None])[:, :, None], none[:, None, :], vec)
        vec = np.where(np.asarray(dist <= room[:, None])[:, :, None], vec, np.nan)
        last = np.where((room > n_max)[:, None], none, np.nan)
        outs.append(np.concatenate([vec, last[:, None, :]], axis=1))
    return outs[0], outs[1]


def _influences(mem: _Member, steps: np.ndarray, wl: tuple[np.ndarray, np.ndarray],
                wr: tuple[np.ndarray, np.ndarray], observed: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """``e(Q | v)`` of one member for the side vectors ``wl`` / ``wr`` (extremal max, min;
    broadcast against each other) and the pair attaining it (packed ``2 x + x'``).

    Hidden ``v = H_i``: a leading axis of 2 (``X_i`` in ``Q``, in ``N``). The log-ratios of
    hidden pairs are ``log w0 - log w1 - log pi0 + log pi1`` (``w = left * right``, times the
    emission of ``X_i`` at the extreme when it is in ``Q``); of observed pairs
    ``log P(x_Q, X_i = x) - log P(x_Q, X_i = x') - log P(x) + log P(x')``.
    """
    shape = np.broadcast_shapes(wl[0].shape, wr[0].shape)
    pi = mem.pi[steps].reshape((len(steps),) + (1,) * (len(shape) - 2) + (2,))
    with np.errstate(invalid="ignore"):
        if not observed:
            lpi = np.log(pi[..., 0]) - np.log(pi[..., 1])
            outs, pairs = [], []
            for center in (True, False):
                w_hi = wl[0] * wr[0]
                w_lo = wl[1] * wr[1]
                if center:
                    w_hi = w_hi * mem.emit[:, mem.cols[0]]
                    w_lo = w_lo * mem.emit[:, mem.cols[1]]
                up = np.log(w_hi[..., 0]) - np.log(w_hi[..., 1]) - lpi
                down = lpi - (np.log(w_lo[..., 0]) - np.log(w_lo[..., 1]))
                outs.append(np.maximum(up, down))
                pairs.append(np.where(up >= down, 1, 2))  # (0, 1) or (1, 0)
            return np.stack(outs), np.stack(pairs)
        lpx = np.log(pi @ mem.emit)  # log P(X_i = x)
        best = np.full(shape[:-1], -np.inf)
        pair = np.zeros(shape[:-1], dtype=np.int64)
        m_states = mem.emit.shape[1]
        for w in (wl[0] * wr[0], wl[1] * wr[1]):
            a = np.log(w @ mem.emit) - lpx
            hi, lo = np.argmax(a, axis=-1), np.argmin(a, axis=-1)
            val = np.take_along_axis(a, hi[..., None], -1)[..., 0] - \
                np.take_along_axis(a, lo[..., None], -1)[..., 0]
            better = val > best
            best = np.where(better, val, best)
            pair = np.where(better, hi * m_states + lo, pair)
        return best, pair


def _with_margin(e: np.ndarray, bound: float) -> np.ndarray:
    """Influences raised by the rounding bound and the margin every computed influence gets
    (:data:`~quiltpriv.inference.influence.ROUNDING_MARGIN`, relative and absolute)."""
    e = np.maximum(e, 0.0)
    return np.where(np.isfinite(e), e * (1 + ROUNDING_MARGIN) + max(ROUNDING_MARGIN, bound), e)


def _step_ids(members: list[_Member]) -> np.ndarray:
    """One integer per step, equal for steps whose transition, marginal and extremal vectors
    are equal in every member (the same floats)."""
    rows = np.concatenate([np.concatenate([mem.tr.reshape(len(mem.tr), -1), mem.pi, *mem.fwd,
                                           *mem.bwd], axis=1) for mem in members], axis=1)
    return _groups(rows)[1].astype(np.int64)


def _signatures(ids: np.ndarray, n_steps: int, steps: np.ndarray, kr: int) -> np.ndarray:
    """One row per step of everything its window tables within ``kr`` depend on: the ids of
    steps ``i-kr .. i+kr`` (:func:`_step_ids`) and the room to each end (capped at
    ``kr + 1``). Equal rows give equal tables (the same floats through the same
    operations)."""
    vi = np.clip(steps[:, None] + np.arange(-kr, kr + 1)[None, :], 0, n_steps - 1)
    return np.concatenate([np.minimum(steps, kr + 1)[:, None],
                           np.minimum(n_steps - 1 - steps, kr + 1)[:, None], ids[vi]], axis=1)


@dataclass
class _Search:
    """The search's state: per node the best window so far (written by :func:`_block`)."""

    members: list[_Member]
    steps: np.ndarray
    observed: bool
    eps: float
    bound: float
    left: np.ndarray
    right: np.ndarray
    center: np.ndarray
    e_up: np.ndarray
    count: np.ndarray
    scale: np.ndarray
    optimal: np.ndarray
    member: np.ndarray
    pair: np.ndarray
    considered: np.ndarray
    ids: np.ndarray
    band: np.ndarray | None = None


def _least(scale: np.ndarray, infl: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per row, the column of least scale; among ties (relative 1e-12) the least influence,
    then the fewest quilt sides."""
    least = scale.min(axis=1)
    tie = (scale <= least[:, None] * (1 + 1e-12)) | (scale == least[:, None])
    ef = np.where(tie, infl, np.inf)
    e_least = ef.min(axis=1)
    tie &= (ef <= e_least[:, None] * (1 + 1e-12)) | (ef == e_least[:, None])
    return np.argmin(np.where(tie, size, 99), axis=1)


#: Largest per-evaluation table of one chunk (floats): bounds the memory of a block.
_CHUNK_FLOATS = 2**21


def _rep_tables(st: _Search, reps: np.ndarray, kr: int, centers: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rounded-up influences of every window within ``kr`` of the evaluations ``reps`` (max
    over the members), with the member and pair attaining them: shape
    ``(centers, reps, kr + 2, kr + 2)``; ``nan`` where a window runs past an end."""
    n_steps = st.members[0].tr.shape[0]
    n_u, kr1, kr2 = len(reps), kr + 1, kr + 2
    n_c = len(centers)
    best = np.full((n_c, n_u, kr2, kr2), -np.inf)
    best_m = np.zeros(best.shape, dtype=np.int64)
    best_p = np.zeros(best.shape, dtype=np.int64)
    for m, mem in enumerate(st.members):
        left, right = _extremes(mem, reps, kr, True), _extremes(mem, reps, kr, False)
        wl = (left[0][:, :, None, :], left[1][:, :, None, :])
        wr = (right[0][:, None, :, :], right[1][:, None, :, :])
        e, p = _influences(mem, reps, wl, wr, st.observed)
        if st.observed:
            e, p = e[None], p[None]
        e = np.where(np.isnan(e), -np.inf, e)
        better = e > best
        best = np.where(better, e, best)
        best_m = np.where(better, m, best_m)
        best_p = np.where(better, p, best_p)
    valid = best > -np.inf
    e_up = _with_margin(best, st.bound)
    # Q = {} (no quilt node on either side, X_i in N) has influence 0 exactly
    u_rows = np.arange(n_u)
    none_l = np.where(reps <= kr, reps, kr1)
    none_r = np.where(n_steps - 1 - reps <= kr, n_steps - 1 - reps, kr1)
    e_up[n_c - 1, u_rows, none_l, none_r] = 0.0
    best_m[n_c - 1, u_rows, none_l, none_r] = -1
    return np.where(valid, e_up, np.nan), best_m, best_p


def _rep_summary(st: _Search, reps: np.ndarray, kr: int, centers: np.ndarray
                 ) -> dict[str, np.ndarray]:
    """Per evaluation: its best window with both sides within ``kr`` (``in_*``: scale,
    influence, size, center, a, b, member, pair) and the windows with no quilt node on one
    side beyond ``kr`` (``row_*``: a = none, ``col_*``: b = none), whose counts are the
    node's own."""
    n_steps = st.members[0].tr.shape[0]
    n_c, kr1 = len(centers), kr + 1
    e_up, best_m, best_p = _rep_tables(st, reps, kr, centers)
    n_u = len(reps)
    idx = np.arange(kr1)
    none_l = np.where(reps <= kr, reps, kr1)
    none_r = np.where(n_steps - 1 - reps <= kr, n_steps - 1 - reps, kr1)
    e_in = e_up[:, :, :kr1, :kr1]
    cnt_in = np.broadcast_to(centers[:, None, None, None] + idx[None, None, :, None]
                             + idx[None, None, None, :], e_in.shape)
    s_in = np.where(np.isnan(e_in), np.inf, _scales(cnt_in * 1.0, e_in, st.eps))
    size_in = ((centers == 0)[:, None, None, None] + (idx[None, None, :, None]
               != none_l[None, :, None, None]) + (idx[None, None, None, :]
               != none_r[None, :, None, None]))

    def flat(x: np.ndarray) -> np.ndarray:
        return x.transpose(1, 0, 2, 3).reshape(n_u, -1)

    f_s, f_e, f_z = flat(s_in), flat(np.where(np.isnan(e_in), np.inf, e_in)), flat(size_in)
    pick = _least(f_s, f_e, f_z)
    rows = np.arange(n_u)
    ci, ai, bi = np.unravel_index(pick, (n_c, kr1, kr1))
    return {"in_s": f_s[rows, pick], "in_e": f_e[rows, pick], "in_z": f_z[rows, pick],
            "in_c": ci, "in_a": ai, "in_b": bi,
            "in_m": best_m[ci, rows, ai, bi], "in_p": best_p[ci, rows, ai, bi],
            "row_e": e_up[:, :, kr1, :], "row_m": best_m[:, :, kr1, :],
            "row_p": best_p[:, :, kr1, :], "col_e": e_up[:, :, :kr1, kr1],
            "col_m": best_m[:, :, :kr1, kr1], "col_p": best_p[:, :, :kr1, kr1]}


def _block(st: _Search, sel: np.ndarray, kr: int) -> None:
    """Search the nodes ``sel`` within radius ``kr``; write the best window and the proof.

    Index ``n <= kr`` of a side is the window with ``n`` observations of ``N`` there (the
    room to the end when ``n`` equals it: no quilt node there); index ``kr + 1`` is "no quilt
    node there" when the room exceeds ``kr``. Candidates with both indices ``<= kr`` depend
    only on the evaluation's inputs (chosen once per group of equal steps); the others count
    the room to an end, per node (``O(kr)`` each).
    """
    n_steps = st.members[0].tr.shape[0]
    steps = st.steps[sel]
    first, inverse = _groups(_signatures(st.ids, n_steps, steps, kr))
    reps = steps[first]
    kr1, kr2 = kr + 1, kr + 2
    centers = np.asarray([1] if st.observed else [0, 1])  # X_i in N (1) or in Q (0)
    n_c = len(centers)
    chunk = max(1, _CHUNK_FLOATS // (n_c * kr2 * kr2))
    parts = [_rep_summary(st, reps[i:i + chunk], kr, centers)
             for i in range(0, len(reps), chunk)]
    summ = {k: np.concatenate([p_[k] for p_ in parts], axis=1 if k[:3] in ("row", "col")
                              else 0) for k in parts[0]}
    # per node: the interior pick, then a = none beyond kr (every b), b = none beyond kr
    n = len(steps)
    room_l, room_r = steps, n_steps - 1 - steps
    rows = np.arange(n)
    cand = {k: [summ["in_" + k][inverse][:, None]] for k in ("s", "e", "z", "c", "a", "b",
                                                             "m", "p")}
    dr_all = np.where(np.arange(kr2)[None, :] <= kr, np.arange(kr2)[None, :], room_r[:, None])
    dl_in = np.broadcast_to(np.arange(kr1), (n, kr1))
    none_b = np.where(room_r <= kr, room_r, kr1)[:, None]
    for c_i, c in enumerate(centers):
        for side, cnt, a_of, b_of in (
                ("row", room_l[:, None] + dr_all + c, np.full((n, kr2), kr1),
                 np.broadcast_to(np.arange(kr2), (n, kr2))),
                ("col", dl_in + room_r[:, None] + c, dl_in, np.full((n, kr1), kr1))):
            e_side = summ[side + "_e"][c_i, inverse]
            cand["s"].append(np.where(np.isnan(e_side), np.inf,
                                      _scales(cnt * 1.0, e_side, st.eps)))
            cand["e"].append(np.where(np.isnan(e_side), np.inf, e_side))
            cand["z"].append((c == 0) + (b_of != none_b).astype(np.int64) + (a_of != kr1))
            cand["c"].append(np.full(a_of.shape, c_i))
            cand["a"].append(a_of)
            cand["b"].append(b_of)
            cand["m"].append(summ[side + "_m"][c_i, inverse])
            cand["p"].append(summ[side + "_p"][c_i, inverse])
    full = {k: np.concatenate(v, axis=1) for k, v in cand.items()}
    choice = _least(full["s"], full["e"], full["z"])
    got = {k: v[rows, choice] for k, v in full.items()}
    s_node = got["s"]
    # proof: a window wider than kr on one side leaves more than kr observations in N there
    lb = kr1 / st.eps * (1 - PROOF_RTOL)
    proven = ((room_l <= kr) | (s_node <= lb)) & ((room_r <= kr) | (s_node <= lb))
    upd = (s_node <= st.scale[sel]) | proven
    tgt = sel[upd]
    ap, bp = got["a"][upd], got["b"][upd]
    st.left[tgt] = np.where(ap == kr1, room_l[upd], ap)
    st.right[tgt] = np.where(bp == kr1, room_r[upd], bp)
    st.center[tgt] = centers[got["c"][upd]] == 0
    st.e_up[tgt] = got["e"][upd]
    st.count[tgt] = st.left[tgt] + st.right[tgt] + (~st.center[tgt])
    st.scale[tgt] = s_node[upd]
    st.member[tgt] = got["m"][upd]
    st.pair[tgt] = got["p"][upd]
    st.optimal[sel] = proven
    st.considered[sel] = n_c * (np.minimum(room_l, kr1) + 1) * (np.minimum(room_r, kr1) + 1)


def _band_vectors(mem: _Member, c: int, steps: np.ndarray, n_in: np.ndarray,
                  band: np.ndarray, left: bool) -> np.ndarray:
    """The side vectors at ``H_i`` of the chosen quilts: ``n_in`` observations in ``N``, then
    ``band`` observations in ``Q`` and the hidden state beyond them (none where the band
    reaches the end)."""
    n_steps = mem.tr.shape[0]
    col = mem.emit[:, mem.cols[c]]
    near = steps - n_in if left else steps + n_in          # the window's last step in N
    far = np.maximum(near - band, 0) if left else np.minimum(near + band, n_steps - 1)
    to_end = far == 0 if left else far == n_steps - 1
    scan = mem.fwd[c] if left else mem.bwd[c]
    u = c  # det >= 0: the hidden state 0 beyond the band maximises rho, 1 minimises it
    if left:  # alpha at H_far from H_(far - 1) = u
        vec = _normalize(mem.tr[np.clip(far, 1, n_steps - 1), u, :])
    else:     # beta at H_far from H_(far + 1) = u
        vec = _normalize(mem.tr[np.clip(far + 1, 1, n_steps - 1), :, u])
    pos = far.copy()
    for _ in range(int(np.where(to_end, 0, band).max(initial=0))):
        todo = ((pos < near) if left else (pos > near)) & ~to_end
        if not todo.any():
            break
        if left:
            nxt = _normalize(np.matmul(((vec * col)[:, None, :]),
                                       mem.tr[np.clip(pos + 1, 1, n_steps - 1)])[:, 0])
            pos = np.where(todo, pos + 1, pos)
        else:
            nxt = _normalize(np.matmul(mem.tr[np.clip(pos, 1, n_steps - 1)],
                                       (col * vec)[:, :, None])[:, :, 0])
            pos = np.where(todo, pos - 1, pos)
        vec = np.where(todo[:, None], nxt, vec)
    vec = np.where(to_end[:, None], scan[np.clip(near, 0, n_steps - 1)], vec)
    # through the window's observations in N to H_i
    for d in range(int(n_in.max(initial=0))):
        act = d < n_in
        if left:
            src = np.clip(near + d + 1, 1, n_steps - 1)
            nxt = np.matmul(vec[:, None, :], mem.tr[src])[:, 0]
        else:
            src = np.clip(near - d, 1, n_steps - 1)
            nxt = np.matmul(mem.tr[src], vec[:, :, None])[:, :, 0]
        vec = np.where(act[:, None], nxt, vec)
    return vec


#: Nodes whose band signatures are grouped at once (memory: this times the window's width).
_BAND_CHUNK = 32768


def _band_influences(st: _Search, idx: np.ndarray, band: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Influence (unrounded), member, pair and band ends of the chosen quilts of ``idx`` with
    bands of ``band`` observations on each side; nodes whose inputs are equal (the steps'
    ids over the window and both bands, the counts, the room to the ends) share one
    evaluation."""
    n_steps = st.members[0].tr.shape[0]
    steps = st.steps[idx]
    n_l, n_r = st.left[idx], st.right[idx]
    none_l, none_r = n_l >= steps, n_r >= n_steps - 1 - steps
    n_l, n_r = np.where(none_l, 0, n_l), np.where(none_r, 0, n_r)  # no band there
    lo = np.maximum(steps - n_l - band, 0)
    hi = np.minimum(steps + n_r + band, n_steps - 1)
    out = (np.empty(len(idx)), np.empty(len(idx), dtype=np.int64),
           np.empty(len(idx), dtype=np.int64))
    for start in range(0, len(idx), _BAND_CHUNK):
        sl = slice(start, start + _BAND_CHUNK)
        # a band reaching the end is the extremal scan's vector at the window's edge
        end_l, end_r = lo[sl] == 0, hi[sl] == n_steps - 1
        reach_l = n_l[sl] + np.where(end_l, 0, band[sl]) + 1
        reach_r = n_r[sl] + np.where(end_r, 0, band[sl]) + 1
        span = np.arange(-int(reach_l.max(initial=0)), int(reach_r.max(initial=0)) + 1)
        win = st.ids[np.clip(steps[sl, None] + span[None, :], 0, n_steps - 1)]
        meta = np.stack([n_l[sl], n_r[sl], none_l[sl], none_r[sl], st.center[idx[sl]],
                         end_l, end_r, reach_l, reach_r, np.minimum(steps[sl], reach_l),
                         np.minimum(n_steps - 1 - steps[sl], reach_r)], axis=1)
        first, inverse = _groups(np.concatenate([meta.astype(np.int64), win], axis=1))
        got = _band_evaluate(st, idx[sl][first], band[sl][first])
        for o, g in zip(out, got, strict=True):
            o[sl] = g[inverse]
    return out[0], out[1], out[2], lo, hi


def _band_evaluate(st: _Search, idx: np.ndarray, band: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_band_influences` of the nodes ``idx``, each evaluated."""
    n_steps = st.members[0].tr.shape[0]
    steps = st.steps[idx]
    n_l, n_r = st.left[idx], st.right[idx]
    none_l, none_r = n_l >= steps, n_r >= n_steps - 1 - steps
    n_l, n_r = np.where(none_l, 0, n_l), np.where(none_r, 0, n_r)
    best = np.full(len(idx), -np.inf)
    mem_i = np.zeros(len(idx), dtype=np.int64)
    pair = np.zeros(len(idx), dtype=np.int64)
    for m, mem in enumerate(st.members):
        wl, wr = [], []
        for c in (0, 1):
            v = _band_vectors(mem, c, steps, n_l, band, True)
            wl.append(np.where(none_l[:, None], mem.pi[steps], v))
            v = _band_vectors(mem, c, steps, n_r, band, False)
            wr.append(np.where(none_r[:, None], 1.0, v))
        e, p = _influences(mem, steps, (wl[0], wl[1]), (wr[0], wr[1]), st.observed)
        if not st.observed:
            pick = np.where(st.center[idx], 0, 1)
            e = np.take_along_axis(e, pick[None], 0)[0]
            p = np.take_along_axis(p, pick[None], 0)[0]
        better = e > best
        best, mem_i, pair = (np.where(better, e, best), np.where(better, m, mem_i),
                             np.where(better, p, pair))
    return best, mem_i, pair


def _hmm_least_quilts_by_deadline(theta: Theta, order: HMMOrder, nodes: Sequence[str],
                                  epsilon: float, *, deadline: float | None = None,
                                  **options: Any) -> HMMQuilts:
    """:func:`hmm_least_quilts` with its deprecated ``deadline=`` (a ``time.monotonic()``
    reading)."""
    limit = None if deadline is None else TimeLimit.ending_at(deadline)
    return hmm_least_quilts(theta, order, nodes, epsilon, time_limit=limit, **options)


@renamed_keywords(eps="epsilon")
@clock_deadline_keyword(_hmm_least_quilts_by_deadline)
def hmm_least_quilts(theta: Theta, order: HMMOrder, nodes: Sequence[str], epsilon: float, *,
                     time_limit: float | TimeLimit | None = None,
                     progress: bool = False) -> HMMQuilts:
    """The least-scale quilt of each node in ``nodes`` (hidden states or observations).

    The query reads every observation with the same weight and no hidden state (scales are
    in units of that weight: ``count / (eps - e)``).

    Parameters
    ----------
    theta : Theta
        A hidden Markov model (``order`` is :func:`hmm_order` of it).
    nodes : sequence of str
        The sensitive (protected) nodes.
    epsilon : float
    time_limit : float or TimeLimit, optional
        Seconds from this call, or a running :class:`~quiltpriv.utils.time_limit.TimeLimit`:
        nodes not proven by then keep their best quilt so far (valid, ``optimal`` False; nodes
        not reached keep the quilt ``{}``). The old ``deadline=`` (a ``time.monotonic()``
        reading) is deprecated.
    progress : bool
        A progress bar over the blocks of nodes.

    Raises
    ------
    HMMNotApplicable
        A model outside the structure handled here (see the module docstring).
    """
    theta = check_theta(theta)
    if not isinstance(order, HMMOrder) or order != hmm_order(theta):
        raise ParameterError("order must be the network's hmm_order(theta)")
    return _least_quilts(theta, order, theta.check_nodes(nodes, "sensitive node"),
                         check_epsilon(epsilon), check_time_limit(time_limit), progress)


def _least_quilts(theta: Theta, order: HMMOrder, nodes: tuple[str, ...], eps: float,
                  time_limit: TimeLimit | None, progress: bool) -> HMMQuilts:
    """:func:`hmm_least_quilts` of checked arguments."""
    members = [_member(theta, order, m) for m in range(len(theta.members))]
    n_steps = len(order.hidden)
    where = {v: (t, False) for t, v in enumerate(order.hidden)}
    where.update({v: (t, True) for t, v in enumerate(order.observed)})
    found = [where[v] for v in nodes]
    out: dict[bool, _Search] = {}
    ids = _step_ids(members)
    stopped = False
    # entries of at most ~5 roundings a step over the series and the window (Higham 3.1)
    kd_base = 5 * n_steps + 64
    for observed in (False, True):
        steps = np.asarray([t for t, o in found if o == observed], dtype=np.int64)
        n = len(steps)
        st = _Search(members, steps, observed, eps, 0.0,
                     left=steps.copy(), right=n_steps - 1 - steps,
                     center=np.zeros(n, dtype=bool), e_up=np.zeros(n),
                     count=np.full(n, n_steps), scale=np.full(n, n_steps / eps),
                     optimal=np.zeros(n, dtype=bool), member=np.full(n, -1, dtype=np.int64),
                     pair=np.zeros(n, dtype=np.int64), considered=np.ones(n, dtype=np.int64),
                     ids=ids)
        out[observed] = st
        blocks: Iterable[int] = range(0, n, HMM_BLOCK)
        if progress and n:
            from quiltpriv.utils.progress import progress_bar

            blocks = progress_bar(list(blocks), desc="hidden" if not observed else "observed",
                                  unit=f"block of {HMM_BLOCK} nodes")
        for start in blocks:
            sel = np.arange(start, min(n, start + HMM_BLOCK))
            radius = START_RADIUS
            while sel.size and not stopped:
                if passed(time_limit):
                    stopped = True
                    break
                kr = min(radius, n_steps)
                st.bound = _rounding_bound_k(kd_base + 5 * kr) + _LOG_SUM_BOUND
                _block(st, sel, kr)
                sel = sel[~st.optimal[sel]]
                radius *= 2
        _bands(st, time_limit)
    h, x = out[False], out[True]
    idx = {False: 0, True: 0}
    order_idx = []
    for _, o in found:
        order_idx.append((o, idx[o]))
        idx[o] += 1
    pick = np.asarray([j if not o else len(h.steps) + j for o, j in order_idx], dtype=np.int64)

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(h, name), getattr(x, name)])[pick]

    assert h.band is not None and x.band is not None
    bands = np.concatenate([h.band, x.band])[pick]
    return HMMQuilts(
        step=cat("steps"), observed=np.asarray([o for _, o in found], dtype=bool),
        left=cat("left"), right=cat("right"), center=cat("center"),
        band_left=bands[:, 0], band_right=bands[:, 1], influence=cat("e_up"),
        count=cat("count"), scale=cat("scale"), optimal=cat("optimal"),
        member=cat("member"), pair=cat("pair"), considered=cat("considered"),
        stopped=stopped)


def _unsearched(order: HMMOrder, nodes: tuple[str, ...], eps: float) -> HMMQuilts:
    """Every node of ``nodes`` with the quilt ``{}`` (all observations in ``N``, influence
    0), not proven optimal: where the search starts from, as :func:`_bands` leaves it."""
    n_steps = len(order.hidden)
    hidden_at = dict(zip(order.hidden, range(n_steps), strict=True))
    obs_at = dict(zip(order.observed, range(n_steps), strict=True))
    n = len(nodes)
    is_obs = np.fromiter(map(obs_at.__contains__, nodes), dtype=bool, count=n)
    step = np.fromiter((obs_at[v] if v in obs_at else hidden_at[v] for v in nodes),
                       dtype=np.int64, count=n)
    return HMMQuilts(
        step=step, observed=is_obs, left=step.copy(), right=n_steps - 1 - step,
        center=np.zeros(n, dtype=bool), band_left=np.maximum(step - BAND_START, 0),
        band_right=np.minimum(step + BAND_START, n_steps - 1), influence=np.zeros(n),
        count=np.full(n, n_steps, dtype=np.int64), scale=np.full(n, n_steps / eps),
        optimal=np.zeros(n, dtype=bool), member=np.full(n, -1, dtype=np.int64),
        pair=np.zeros(n, dtype=np.int64), considered=np.ones(n, dtype=np.int64),
        stopped=n > 0)


def _bands(st: _Search, time_limit: TimeLimit | None) -> None:
    """Replace each chosen window by its banded quilt (growing the band until its influence
    is within ``BAND_RTOL`` of the window's), with its own influence rounded upwards."""
    n = len(st.steps)
    st.band = np.zeros((n, 2), dtype=np.int64)
    if not n:
        return
    n_steps = st.members[0].tr.shape[0]
    empty = (st.left >= st.steps) & (st.right >= n_steps - 1 - st.steps) & ~st.center
    # the quilt {} (every node the search did not reach, past the time limit) has no band to
    # grow and influence 0: only the other windows are evaluated (its band is the first one)
    st.band[:, 0] = np.maximum(st.steps - BAND_START, 0)
    st.band[:, 1] = np.minimum(st.steps + BAND_START, n_steps - 1)
    idx = np.flatnonzero(~empty)
    e_win = np.zeros(n)
    e_win[idx] = _band_influences(st, idx, np.full(len(idx), n_steps, dtype=np.int64))[0]
    band = np.full(n, BAND_START, dtype=np.int64)
    todo = idx
    e_fin = np.zeros(n)
    while todo.size:
        e, m, p, lo, hi = _band_influences(st, todo, band[todo])
        e_fin[todo], st.member[todo], st.pair[todo] = e, m, p
        st.band[todo, 0], st.band[todo, 1] = lo, hi
        close = e <= e_win[todo] + BAND_RTOL * (1 + np.abs(e_win[todo]))
        reached = band[todo] >= n_steps
        late = passed(time_limit)
        todo = todo[~(close | reached)] if not late else todo[:0]
        band[todo] += (band[todo] + 1) // 2
    e_up = _with_margin(e_fin, st.bound)
    e_up[empty] = 0.0
    st.member[empty] = -1
    scale = _scales(st.count * 1.0, e_up, st.eps)
    close = scale <= st.scale * (1 + PROOF_RTOL)
    # a band that cannot be trusted to be private (never seen) falls back to Q = {}
    bad = ~np.isfinite(scale)
    st.optimal &= close & ~bad
    st.e_up, st.scale = np.where(bad, 0.0, e_up), np.where(bad, n_steps / st.eps, scale)
    if bad.any():
        st.left[bad], st.right[bad] = st.steps[bad], n_steps - 1 - st.steps[bad]
        st.center[bad] = False
        st.count[bad] = n_steps
        st.member[bad] = -1


# -- the planners' hook -----------------------------------------------------------------------


def _hmm_search_by_deadline(theta: Theta, weight: Callable[[str], float], nodes: Sequence[str],
                            epsilon: float, *, deadline: float | None = None,
                            **options: Any) -> tuple[HMMOrder, HMMQuilts] | None:
    """:func:`hmm_search` with its deprecated ``deadline=`` (a ``time.monotonic()``
    reading)."""
    limit = None if deadline is None else TimeLimit.ending_at(deadline)
    return hmm_search(theta, weight, nodes, epsilon, time_limit=limit, **options)


@renamed_keywords(eps="epsilon")
@clock_deadline_keyword(_hmm_search_by_deadline)
def hmm_search(theta: Theta, weight: Callable[[str], float], nodes: Sequence[str], epsilon: float,
               *, time_limit: float | TimeLimit | None = None, progress: bool = False
               ) -> tuple[HMMOrder, HMMQuilts] | None:
    """:func:`hmm_least_quilts` where it applies, else None: a hidden Markov model of at least
    :data:`HMM_MIN_STEPS` steps whose query gives every observation the same weight > 0 and
    every hidden state the weight 0 (``weight(node)``: ``Delta`` of that node alone), within
    the structure of the module docstring."""
    theta = check_theta(theta)
    if not callable(weight):
        raise ParameterError("weight must be a function of a node")
    epsilon = check_epsilon(epsilon)
    limit = check_time_limit(time_limit)
    nodes = theta.check_nodes(nodes, "sensitive node")
    if len(theta.nodes) < 2 * HMM_MIN_STEPS:
        return None
    order = hmm_order(theta)
    if order is None or any(weight(v) for v in order.hidden):
        return None
    if passed(limit):
        # past the limit before the search: every node the quilt {}, valid whatever the
        # observations' weights (the query reads no hidden state), with no model check
        return order, _unsearched(order, nodes, epsilon)
    w0 = weight(order.observed[0])
    if not (w0 > 0 and math.isfinite(w0)) or any(weight(v) != w0 for v in order.observed):
        return None
    try:
        return order, _least_quilts(theta, order, nodes, epsilon, limit, progress)
    except HMMNotApplicable:
        return None
