"""Wasserstein distances: the one place quiltpriv computes them.

* On the real line (this docstring): :func:`wasserstein_line`, :func:`wasserstein_inf_line`,
  :func:`wasserstein_1_line`, :func:`quantile_coupling`, and the exact-rational
  :func:`wasserstein_inf_exact` and one-sided :func:`quantile_shift` (the Wasserstein mechanism
  [ZOC22, Alg. 4] and the distribution privacy mechanisms [CO23, Thm. 3.1] use them).
* On a finite metric space [KM19, Sec. II-G]: :func:`wasserstein_inf` (exact bottleneck search
  with rational max-flow), :func:`wasserstein_1` (the cost of an explicit coupling from a linear
  programme, never below the true value), :func:`lifted_relation` [KM19, Def. 9] and
  :func:`line_metric` (line costs rounded up).
* From certified float bounds of two CDFs on ``0..n``: :func:`w_inf_bracket` (integers
  ``lo <= W_inf <= hi``, for the count laws of :mod:`quiltpriv.queries.network_laws`).

Every function here errs upwards: a distance is never reported below the exact one.

On the line the optimal coupling for every W_p (p >= 1, and p = infinity) is the *quantile
coupling*: pair the u-quantiles of the two laws for u uniform on (0, 1). Hence

    W_inf(mu, nu) = ess sup_u |F^{-1}(u) - G^{-1}(u)|        ([ZOC22, Def. 9, Alg. 4];
    W_1(mu, nu)   = int_0^1 |F^{-1}(u) - G^{-1}(u)| du         [KM19, Sec. II-G])

For discrete laws both quantile functions are step functions, so the coupling is a finite list
of pieces (mass, x, y) found by a two-pointer sweep over the merged cumulative sums.

Arithmetic and soundness
------------------------
W_inf is *discontinuous* in the probabilities: a sliver of quantile mass 1e-16 between two
cumulative sums that are equal in exact arithmetic but differ after floating-point rounding
(0.1 + 0.2 versus 0.3) can make W_inf jump (1 becomes 2 in the paper's Example 2). Dropping
short slivers would silently under-estimate W_inf whenever the tiny mass is real, which breaks
the privacy guarantee of the Wasserstein mechanism. So:

* Every computation is exact, in :class:`fractions.Fraction`. Probabilities given as integers,
  :class:`~fractions.Fraction` or decimal strings (``"0.0256"``) are used as they are and must sum
  to exactly one: ties are then decided exactly and no spurious sliver exists.
* Probabilities given as floats are taken at their exact binary values, normalised exactly by
  their (exact) sum. The result is the exact distance of *those* distributions. If the floats
  only approximate the intended numbers, a tie may become a sliver and W_inf may come out larger
  than intended -- the safe direction (more noise). The detailed result flags this case.
* Distances are rounded *up* to the next float, never down.
* Optionally, :func:`wasserstein_line` with ``tolerance=t`` also reports the smallest W such that
  the quantile coupling moves at most mass t farther than W. That is not W_inf; a Laplace
  mechanism calibrated to it is (eps, excess_mass)-private rather than (eps, 0)-private
  (sum the Pufferfish ratio over the coupling: pieces within W cost e^eps, the rest at most their
  mass), and the result reports that excess mass.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational, Real

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linprog

from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.rounding import round_up
from quiltpriv.utils.validation import (
    check_array,
    check_cost_matrix,
    check_log_vector,
    check_probability_vector,
    check_relation_matrix,
    check_scalar,
)

__all__ = [
    "CouplingPiece",
    "LiftedRelation",
    "Transport",
    "WassersteinLineResult",
    "lifted_relation",
    "line_metric",
    "quantile_coupling",
    "quantile_shift",
    "w_inf_bracket",
    "wasserstein_1",
    "wasserstein_1_line",
    "wasserstein_inf",
    "wasserstein_inf_exact",
    "wasserstein_inf_line",
    "wasserstein_line",
]

# Float probability vectors may miss one by rounding; anything farther is a user error.
#: A number as the exact functions read it: an int, a float (at its exact binary value), a
#: Fraction or a decimal string (numpy numbers too).
NumberLike = float | Fraction | str | np.number
#: Support points or probabilities of a law: a sequence or a 1-d array of numbers. The private
#: ``_exact_number``, ``_as_list`` and ``_check_tolerance`` take ``object``: they are the
#: checks that turn untrusted input into these types (or raise ParameterError).
NumbersLike = Sequence[NumberLike] | NDArray[np.generic]

_FLOAT_SUM_ATOL = 1e-9


@dataclass(frozen=True)
class CouplingPiece:
    """One piece of the quantile coupling: ``mass`` of u in (0, 1) maps x (first law) to y."""

    mass: Fraction
    x: Fraction
    y: Fraction

    @property
    def gap(self) -> Fraction:
        return abs(self.x - self.y)


@dataclass(frozen=True)
class WassersteinLineResult:
    """W_inf and W_1 between two finitely supported laws on the line, with an audit trail.

    Attributes
    ----------
    w_inf, w_1
        The exact distances of the given distributions, rounded up to a float.
    exact_inputs
        True when every probability was a rational number (int, Fraction, decimal string), so
        ties between cumulative sums were decided exactly as intended.
    smallest_piece_mass
        The smallest mass of a coupling piece that attains ``w_inf``; with float inputs a value
        below about 1e-12 suggests the maximum comes from a rounding sliver (see ``notes``).
    tolerance, w_inf_within_tolerance, excess_mass
        With ``tolerance`` t > 0: the smallest W such that the quantile coupling moves at most
        mass t farther than W, and the mass it actually moves farther (<= t, rounded up). A
        Laplace(W / eps) release calibrated to it is (eps, excess_mass)-private, not (eps, 0).
        With t = 0 these equal ``w_inf`` and 0.
    notes
        Human-readable remarks (float inputs, suspected slivers, tolerance used).
    """

    w_inf: float
    w_1: float
    exact_inputs: bool
    smallest_piece_mass: float
    tolerance: float
    w_inf_within_tolerance: float
    excess_mass: float
    notes: tuple[str, ...]


# ---------------------------------------------------------------------------------------------
# exact conversion and validation


def _exact_number(value: object, name: str) -> tuple[Fraction, bool]:
    """Return ``value`` as an exact Fraction and whether it was given as a rational."""
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    if isinstance(value, str):
        try:
            return Fraction(value.strip()), True
        except (ValueError, ZeroDivisionError):
            raise ParameterError(f"{name} is not a number: {value!r}") from None
    if isinstance(value, np.integer):
        return Fraction(int(value)), True
    if isinstance(value, Rational):
        return Fraction(int(value.numerator), int(value.denominator)), True
    if isinstance(value, Real | np.floating):
        x = float(value)
        if not math.isfinite(x):
            raise ParameterError(f"{name} must be finite, got {x}")
        return Fraction(x), False
    raise ParameterError(f"{name} must be a number, got {value!r}")


def _as_list(values: object, name: str) -> list[object]:
    if isinstance(values, str | bytes):
        raise ParameterError(f"{name} must be a sequence of numbers, got a string")
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ParameterError(f"{name} must be one-dimensional, got shape {values.shape}")
        return list(values.tolist() if values.dtype.kind in "fiub" else values)
    if not isinstance(values, Iterable):
        raise ParameterError(f"{name} must be a sequence of numbers, got {values!r}")
    return list(values)


def _law(
    support: NumbersLike, probs: NumbersLike, sname: str, pname: str
) -> tuple[list[Fraction], list[Fraction], bool]:
    """Validate one law; return sorted distinct support points, positive masses, exactness."""
    xs_raw = _as_list(support, sname)
    ps_raw = _as_list(probs, pname)
    if not ps_raw:
        raise ParameterError(f"{pname} is empty")
    if len(xs_raw) != len(ps_raw):
        raise ParameterError(
            f"{sname} has {len(xs_raw)} points but {pname} has {len(ps_raw)} probabilities")
    xs = [_exact_number(v, f"{sname}[{k}]")[0] for k, v in enumerate(xs_raw)]
    ps: list[Fraction] = []
    exact = True
    for k, v in enumerate(ps_raw):
        fr, is_rational = _exact_number(v, f"{pname}[{k}]")
        if fr < 0:
            raise ParameterError(f"{pname}[{k}] is negative ({float(fr)})")
        ps.append(fr)
        exact = exact and is_rational
    total = sum(ps, Fraction(0))
    if exact:
        if total != 1:
            raise ParameterError(f"{pname} sums to {total} (= {_fmt(float(total), 17)}), not "
                                 "exactly 1")
    else:
        if abs(float(total) - 1.0) > _FLOAT_SUM_ATOL:
            raise ParameterError(f"{pname} sums to {_fmt(float(total), 12)}, not 1")
        ps = [x / total for x in ps]  # exact renormalisation of the given binary values
    merged: dict[Fraction, Fraction] = {}
    for x, m in zip(xs, ps, strict=True):
        if m > 0:  # zero-mass atoms do not affect the quantile function
            merged[x] = merged.get(x, Fraction(0)) + m
    pts = sorted(merged)
    return pts, [merged[x] for x in pts], exact


# ---------------------------------------------------------------------------------------------
# the coupling


def _coupling(
    xs: Sequence[Fraction], p: Sequence[Fraction], ys: Sequence[Fraction], q: Sequence[Fraction]
) -> list[CouplingPiece]:
    pieces: list[CouplingPiece] = []
    i = j = 0
    ri, rj = p[0], q[0]
    while i < len(p) and j < len(q):
        m = min(ri, rj)
        pieces.append(CouplingPiece(m, xs[i], ys[j]))
        ri -= m
        rj -= m
        if ri == 0:
            i += 1
            ri = p[i] if i < len(p) else Fraction(0)
        if rj == 0:
            j += 1
            rj = q[j] if j < len(q) else Fraction(0)
    # Both laws have total mass exactly 1, so the sweep ends on both at once.
    if i != len(p) or j != len(q) or ri != 0 or rj != 0:  # pragma: no cover - exact arithmetic
        raise AssertionError("quantile coupling did not exhaust both laws")
    return pieces


def quantile_coupling(
    xs: NumbersLike, p: NumbersLike, ys: NumbersLike, q: NumbersLike
) -> list[CouplingPiece]:
    """The quantile (monotone) coupling of two finitely supported laws on the line, exactly.

    Parameters
    ----------
    xs, p
        Support points and probabilities of the first law.
    ys, q
        Support points and probabilities of the second law.

    Returns
    -------
    list of CouplingPiece
        Pieces (mass, x, y) with positive exact masses summing to one, in increasing u.
        Zero-probability atoms are dropped, repeated support points merged.
    """
    xs_, p_, _ = _law(xs, p, "xs", "p")
    ys_, q_, _ = _law(ys, q, "ys", "q")
    return _coupling(xs_, p_, ys_, q_)


def wasserstein_inf_exact(xs: NumbersLike, p: NumbersLike, ys: NumbersLike,
                          q: NumbersLike) -> Fraction:
    """W_inf of two finitely supported laws on the line as an exact Fraction (not rounded).

    For callers that keep computing exactly (a Laplace scale W / eps rounded once at the end).
    Inputs as for :func:`wasserstein_line`.
    """
    return max(pc.gap for pc in quantile_coupling(xs, p, ys, q))


def quantile_shift(xs: NumbersLike, p: NumbersLike, ys: NumbersLike, q: NumbersLike) -> Fraction:
    """ess sup_u (F^{-1}(u) - G^{-1}(u)), exactly: how far the first law's quantiles exceed the
    second's (one side of W_inf; negative when the first law lies wholly below the second)."""
    return max(pc.x - pc.y for pc in quantile_coupling(xs, p, ys, q))


def wasserstein_line(
    xs: NumbersLike, p: NumbersLike, ys: NumbersLike, q: NumbersLike, *,
    tolerance: float = 0.0
) -> WassersteinLineResult:
    """W_inf and W_1 on the line with exact arithmetic and an audit trail.

    Parameters
    ----------
    xs, p, ys, q
        Support points and probabilities of the two laws (supports first, as in
        :func:`wasserstein_inf_line`). Probabilities may be floats, ints, Fractions or decimal
        strings; see the module docstring for how floats are treated.
    tolerance
        Optional mass t in [0, 1): also report the smallest W that the quantile coupling
        exceeds on mass at most t (an (eps, t)-style relaxation, never used by default).

    Returns
    -------
    WassersteinLineResult
    """
    t = _check_tolerance(tolerance)
    xs_, p_, exact_p = _law(xs, p, "xs", "p")
    ys_, q_, exact_q = _law(ys, q, "ys", "q")
    exact = exact_p and exact_q
    pieces = _coupling(xs_, p_, ys_, q_)
    w_inf = max(pc.gap for pc in pieces)
    w_1 = sum((pc.mass * pc.gap for pc in pieces), Fraction(0))
    smallest = min(pc.mass for pc in pieces if pc.gap == w_inf)
    notes: list[str] = []
    if not exact:
        notes.append("float probabilities taken at their exact binary values (renormalised "
                     "exactly); pass Fractions or decimal strings for exact ties")
        if smallest < Fraction(1, 10**12):
            notes.append(f"W_inf is attained only on quantile mass {_fmt(float(smallest), 3)}: "
                         "possibly a floating-point sliver, which over-estimates W_inf "
                         "(safe); exact inputs would decide it")
    # Tolerance relaxation: drop the largest gaps while their total mass stays <= t.
    w_tol, excess = w_inf, Fraction(0)
    if t > 0:
        by_gap: dict[Fraction, Fraction] = {}
        for pc in pieces:
            by_gap[pc.gap] = by_gap.get(pc.gap, Fraction(0)) + pc.mass
        t_exact = Fraction(t)
        gaps = sorted(by_gap, reverse=True)
        k = 0
        while k < len(gaps) - 1 and excess + by_gap[gaps[k]] <= t_exact:
            excess += by_gap[gaps[k]]
            k += 1
        w_tol = gaps[k]
        if w_tol < w_inf:
            notes.append(f"with tolerance {_fmt(t)}: W = {_fmt(float(w_tol))} is exceeded on "
                         "quantile "
                         f"mass {_fmt(float(excess), 3)}; a Laplace release calibrated to it is "
                         "(eps, that mass)-private, not (eps, 0)")
    return WassersteinLineResult(
        w_inf=round_up(w_inf),
        w_1=round_up(w_1),
        exact_inputs=exact,
        smallest_piece_mass=float(smallest),
        tolerance=t,
        w_inf_within_tolerance=round_up(w_tol),
        excess_mass=round_up(excess),
        notes=tuple(notes),
    )


def _check_tolerance(tolerance: object) -> float:
    return float(check_scalar(tolerance, "tolerance", min_val=0.0, max_val=1.0,
                              include_boundaries="left"))


def wasserstein_inf_line(xs: NumbersLike, p: NumbersLike, ys: NumbersLike,
                         q: NumbersLike) -> float:
    """W_inf between two finitely supported distributions on the real line.

    W_inf(mu, nu) = min over couplings of the largest |x - y| on the coupling's support; on the
    line the quantile coupling attains it, so W_inf = ess sup_u |F^{-1}(u) - G^{-1}(u)|
    ([ZOC22, Def. 9, Alg. 4]; [KM19, Def. 12], XDistP).

    Computed exactly (Fractions) and rounded up, so it never under-estimates the distance of the
    given distributions. Float probabilities are taken at their exact binary values: a tie that
    holds only in decimal arithmetic becomes a sliver and can raise the value (the safe
    direction). Pass Fractions or decimal strings for exact ties, or use
    :func:`wasserstein_line` for the audit trail.

    Parameters
    ----------
    xs, p
        Support points and probabilities of the first distribution.
    ys, q
        Support points and probabilities of the second distribution.

    Returns
    -------
    float
        W_inf with the metric |x - y|.

    Raises
    ------
    ParameterError
        Mismatched lengths, empty or negative or non-normalised probabilities, non-finite
        points.
    """
    return wasserstein_line(xs, p, ys, q).w_inf


def wasserstein_1_line(xs: NumbersLike, p: NumbersLike, ys: NumbersLike,
                       q: NumbersLike) -> float:
    """W_1 (earth mover's distance) between two finitely supported distributions on the line.

    W_1 = int_0^1 |F^{-1}(u) - G^{-1}(u)| du = int |F(t) - G(t)| dt, via the exact quantile
    coupling (optimal on the line), rounded up. Same inputs and errors as
    :func:`wasserstein_inf_line`. W_1 is continuous in the probabilities, so floats raise no
    sliver issue here.
    """
    return wasserstein_line(xs, p, ys, q).w_1


# ---------------------------------------------------------------------------------------------
# distances on a finite metric space


@dataclass(frozen=True)
class Transport:
    """A Wasserstein distance with a coupling that attains it.

    Attributes
    ----------
    distance : float
        W_inf: exact (one of the given costs). W_1: the cost of ``coupling``, an explicit
        coupling of the two laws, hence never below the true W_1 and within the LP solver's
        tolerance of it.
    coupling : numpy.ndarray
        |p| x |q| matrix with marginals p and q (W_inf: supported where cost <= distance).
    method : str
        How it was computed.
    """

    distance: float
    coupling: np.ndarray
    method: str


@dataclass(frozen=True)
class LiftedRelation:
    """Whether (p, q) is in the lifted relation Phi# [KM19, Def. 9], with a witness coupling."""

    holds: bool
    coupling: np.ndarray | None


def line_metric(xs: object, ys: object | None = None) -> np.ndarray:
    """The cost matrix |x_i - y_j| on the real line, each entry rounded *up* to a float.

    A plain float subtraction can round a distance down by one unit in the last place, which
    would let :func:`wasserstein_inf` report a value below the exact one; the error-free
    transformation TwoSum detects those entries and moves them up one ulp.
    """
    x = check_array(xs, "xs").ravel()
    y = x if ys is None else check_array(ys, "ys").ravel()
    a, b = x[:, None], -y[None, :]
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)  # exact: x - y = s + err (Knuth's TwoSum)
    d = np.abs(s)
    low = np.where(s != 0, np.sign(err) == np.sign(s), err != 0) & (err != 0)
    d[low] = np.nextafter(d[low], np.inf)
    return d


def _exact_law(p: np.ndarray) -> list[Fraction]:
    """The exact binary values of p, normalised exactly to sum one."""
    fr = [Fraction(float(x)) for x in p]
    total = sum(fr, Fraction(0))
    return [x / total for x in fr]


def _transport_feasible(p: list[Fraction], q: list[Fraction], allowed: np.ndarray
                        ) -> list[list[Fraction]] | None:
    """A coupling of p and q supported on ``allowed``, or None; exact max-flow (Edmonds-Karp).

    Rational arithmetic decides ties exactly: a float max-flow could report 1 - 1e-16 and so
    over- or under-state the support a coupling needs.
    """
    n, m = len(p), len(q)
    adj = [np.flatnonzero(allowed[i]).tolist() for i in range(n)]
    flow = [[Fraction(0)] * m for _ in range(n)]
    sup, dem = list(p), list(q)
    for i in range(n):  # greedy start: most mass moves without augmenting paths
        for j in adj[i]:
            if sup[i] == 0:
                break
            t = min(sup[i], dem[j])
            if t > 0:
                flow[i][j] += t
                sup[i] -= t
                dem[j] -= t
    while any(s > 0 for s in sup):
        parent_x: dict[int, int | None] = {i: None for i in range(n) if sup[i] > 0}
        parent_y: dict[int, int] = {}
        queue, found = list(parent_x), None
        while queue and found is None:
            i = queue.pop(0)
            for j in adj[i]:
                if j in parent_y:
                    continue
                parent_y[j] = i
                if dem[j] > 0:
                    found = j
                    break
                for i2 in range(n):  # residual back edges j -> i2 carry existing flow
                    if i2 not in parent_x and flow[i2][j] > 0:
                        parent_x[i2] = j
                        queue.append(i2)
        if found is None:
            return None
        # walk back: found <- i <- j' <- i' ... to a source-adjacent i
        path, j = [], found
        while True:
            i = parent_y[j]
            path.append((i, j))
            back = parent_x[i]
            if back is None:
                break
            path.append((i, -1 - back))  # backward edge (i, back)
            j = back
        start = path[-1][0]
        t = min(sup[start], dem[found])
        for i, j in path:
            if j < 0:
                t = min(t, flow[i][-1 - j])
        for i, j in path:
            if j < 0:
                flow[i][-1 - j] -= t
            else:
                flow[i][j] += t
        sup[start] -= t
        dem[found] -= t
    return flow


def _support_law(p: object, name: str) -> tuple[np.ndarray, np.ndarray]:
    a = check_probability_vector(p, name)
    idx = np.flatnonzero(a > 0)
    return a, idx


def wasserstein_inf(cost: object, p: object, q: object) -> Transport:
    """W_inf,d(p, q) = min over couplings of the largest d(x, y) on the coupling's support.

    [KM19, Sec. II-G]. ``cost[i, j]`` = d(x_i, y_j) on a finite metric space (p lives on the x's, q
    on the y's). Exact: binary search over the distinct costs, each threshold decided by a
    rational max-flow (the probabilities are taken at their exact binary values, renormalised
    exactly). The result is one of the given costs, so it is exact *for those costs*; build
    costs on the line with :func:`line_metric`, which rounds them up.
    """
    a, ia = _support_law(p, "p")
    b, ib = _support_law(q, "q")
    c = check_cost_matrix(cost, a.size, b.size)
    sub = c[np.ix_(ia, ib)]
    pa, qb = _exact_law(a[ia]), _exact_law(b[ib])
    # every x must reach some y and vice versa: a lower bound that prunes the search
    floor = max(sub.min(axis=1).max(), sub.min(axis=0).max())
    levels = np.unique(sub[sub >= floor])
    lo, hi = 0, levels.size - 1
    best = _transport_feasible(pa, qb, sub <= levels[hi])
    while lo < hi:
        mid = (lo + hi) // 2
        flow = _transport_feasible(pa, qb, sub <= levels[mid])
        if flow is None:
            lo = mid + 1
        else:
            hi, best = mid, flow
    coupling = np.zeros((a.size, b.size))
    assert best is not None  # the largest level allows every pair
    coupling[np.ix_(ia, ib)] = np.array([[float(x) for x in row] for row in best])
    return Transport(float(levels[lo]), coupling, "exact bottleneck search (rational max-flow)")


def lifted_relation(relation: object, p: object, q: object) -> LiftedRelation:
    """Is (p, q) in the lifted relation Phi# [KM19, Def. 9]?

    True iff some coupling of p and q puts all its mass on pairs (x, y) with relation[x, y];
    decided exactly by a rational max-flow. The witness coupling is returned when it holds.
    """
    a, ia = _support_law(p, "p")
    b, ib = _support_law(q, "q")
    r = check_relation_matrix(relation, a.size, b.size)
    flow = _transport_feasible(_exact_law(a[ia]), _exact_law(b[ib]), r[np.ix_(ia, ib)])
    if flow is None:
        return LiftedRelation(False, None)
    coupling = np.zeros((a.size, b.size))
    coupling[np.ix_(ia, ib)] = np.array([[float(x) for x in row] for row in flow])
    return LiftedRelation(True, coupling)


def wasserstein_1(cost: object, p: object, q: object) -> Transport:
    """W_1,d(p, q) = min over couplings of the expected d(x, y) [KM19, Sec. II-G], by LP.

    The LP (scipy HiGHS) coupling is repaired into an exact coupling of p and q (negative
    entries clipped, over-full rows/columns scaled down, the leftover mass coupled
    independently) and its cost is returned: a feasible coupling never costs less than W_1, so
    the value errs upwards, by at most the solver tolerance times the largest cost.
    """
    a, ia = _support_law(p, "p")
    b, ib = _support_law(q, "q")
    c = check_cost_matrix(cost, a.size, b.size)
    pa, qb = a[ia] / a[ia].sum(), b[ib] / b[ib].sum()
    sub = c[np.ix_(ia, ib)]
    n, m = sub.shape
    a_eq = np.zeros((n + m, n * m))
    for i in range(n):
        a_eq[i, i * m:(i + 1) * m] = 1.0
    for j in range(m):
        a_eq[n + j, j::m] = 1.0
    res = linprog(sub.ravel(), A_eq=a_eq, b_eq=np.concatenate([pa, qb]), bounds=(0, None),
                  method="highs")
    if res.status != 0:  # pragma: no cover - the transport LP is always feasible and bounded
        raise QueryError(f"the transport linear programme failed: {res.message}")
    g = np.clip(res.x.reshape(n, m), 0.0, None)
    rows = g.sum(axis=1)
    over = rows > pa
    g[over] *= (pa[over] / rows[over])[:, None]
    cols = g.sum(axis=0)
    over = cols > qb
    g[:, over] *= qb[over] / cols[over]
    ra, rb = np.clip(pa - g.sum(axis=1), 0, None), np.clip(qb - g.sum(axis=0), 0, None)
    if ra.sum() > 0 and rb.sum() > 0:
        g += np.outer(ra, rb) / ra.sum()
    coupling = np.zeros((a.size, b.size))
    coupling[np.ix_(ia, ib)] = g
    return Transport(float(np.sum(g * sub)), coupling, "linear programme (HiGHS), repaired")

# ---------------------------------------------------------------------------------------------
# certified W_inf bracket of two laws on 0..n from bounds of their CDFs (the count laws of
# quiltpriv.queries.network_laws, computed in float64 with proven error bounds)


def _check_bounds(b: object, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A (lower, upper) pair of :func:`cdf_bounds` arrays, else ParameterError."""
    if not isinstance(b, tuple | list) or len(b) != 2:
        raise ParameterError(f"{name} must be a (lower, upper) pair from cdf_bounds")
    lo, hi = check_log_vector(b[0], f"{name}[0]"), check_log_vector(b[1], f"{name}[1]")
    if lo.shape != hi.shape:
        raise ParameterError(f"{name}: lower and upper bounds differ in length")
    return lo, hi


#: Each level of :func:`_max_shift` splits a block into this many.
_SHIFT_SPLIT = 64


def _max_shift(b: np.ndarray, a: np.ndarray, floor: int = 0) -> int:
    """``max(floor, max_k (searchsorted(b, a[k]) - k))`` for non-decreasing ``a`` and ``b``.

    Exact. ``m(k) = searchsorted(b, a[k])`` (the number of ``b`` entries below ``a[k]``) is
    non-decreasing, so ``m(k) - k > d`` for some ``k`` if and only if ``b[k + d] < a[k]`` for
    some ``k``: one vectorised comparison settles whether anything beats ``floor``. If
    something does, blocks ``[s, e]`` of ``k`` are bounded by ``m(e) - s``; blocks that cannot
    beat the best value seen are dropped and the others split, down to single entries.
    """
    n = a.size
    if floor >= 0 and (floor >= n or not np.any(b[floor:] < a[:n - floor])):
        return floor
    size = 1
    while size * _SHIFT_SPLIT < n:
        size *= _SHIFT_SPLIT
    starts = np.arange(0, n, size)
    best = floor
    while True:
        best = max(best, int(np.max(np.searchsorted(b, a[starts], side="left") - starts)))
        if size == 1:
            return best
        ends = np.minimum(starts + size - 1, n - 1)
        starts = starts[np.searchsorted(b, a[ends], side="left") - starts > best]
        if starts.size == 0:
            return best
        size //= _SHIFT_SPLIT
        starts = (starts[:, None] + np.arange(0, size * _SHIFT_SPLIT, size)).ravel()
        starts = starts[starts < n]


def w_inf_bracket(p: tuple[np.ndarray, np.ndarray],
                  q: tuple[np.ndarray, np.ndarray]) -> tuple[int, int]:
    """Integers ``lo <= W_inf(P, Q) <= hi`` from two laws'
    :func:`quiltpriv.queries.law_bounds.cdf_bounds` over ``0..n``.

    The upper bound takes every error in the unsafe direction: it is never below the exact
    ``W_inf`` of the two laws (the docstring of :mod:`quiltpriv.queries.law_bounds`).
    """
    (lo_p, hi_p), (lo_q, hi_q) = _check_bounds(p, "p"), _check_bounds(q, "q")
    if lo_p.shape != lo_q.shape:
        raise ParameterError("the two laws must share the support 0..n")
    upper, lower = 0, 0
    for lo_a, hi_a, lo_b, hi_b in ((lo_p, hi_p, lo_q, hi_q), (lo_q, hi_q, lo_p, hi_p)):
        # First m with lo_b(m) >= hi_a(k): F_b(m) >= F_a(k) is proven from there on.
        upper = _max_shift(lo_b, hi_a, upper)
        # Last m with hi_b(m) < lo_a(k) (one before the first m with hi_b(m) >= lo_a(k)):
        # F_b(m) < F_a(k) is proven up to there, so W_inf >= that m - k + 1.
        lower = _max_shift(hi_b, lo_a, lower)
    if lower > upper:  # pragma: no cover - lo <= hi everywhere makes this impossible
        raise AssertionError("inconsistent W_inf bracket")
    return lower, upper
