"""Wasserstein distances between finitely supported distributions on the real line.

On the line the optimal coupling for every W_p (p >= 1, and p = infinity) is the *quantile
coupling*: pair the u-quantiles of the two laws for u uniform on (0, 1). Hence

    W_inf(mu, nu) = ess sup_u |F^{-1}(u) - G^{-1}(u)|        (Algorithm 4 of Zhang, Ohrimenko and
    W_1(mu, nu)   = int_0^1 |F^{-1}(u) - G^{-1}(u)| du         Cummings; spec 02 and spec 04)

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

from quiltpriv.errors import ParameterError

__all__ = [
    "CouplingPiece",
    "WassersteinLineResult",
    "quantile_coupling",
    "wasserstein_1_line",
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
            raise ParameterError(f"{pname} sums to {total} (= {float(total):.17g}), not exactly 1")
    else:
        if abs(float(total) - 1.0) > _FLOAT_SUM_ATOL:
            raise ParameterError(f"{pname} sums to {float(total):.12g}, not 1")
        ps = [x / total for x in ps]  # exact renormalisation of the given binary values
    merged: dict[Fraction, Fraction] = {}
    for x, m in zip(xs, ps, strict=True):
        if m > 0:  # zero-mass atoms do not affect the quantile function
            merged[x] = merged.get(x, Fraction(0)) + m
    pts = sorted(merged)
    return pts, [merged[x] for x in pts], exact


def _ceil_float(fr: Fraction) -> float:
    """The smallest float >= fr (so a reported distance is never below the exact one)."""
    f = float(fr)  # correctly rounded (int / int true division)
    if Fraction(f) < fr:
        f = math.nextafter(f, math.inf)
    return f


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
            notes.append(f"W_inf is attained only on quantile mass {float(smallest):.3g}: "
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
            notes.append(f"with tolerance {t:g}: W = {float(w_tol):.6g} is exceeded on quantile "
                         f"mass {float(excess):.3g}; a Laplace release calibrated to it is "
                         "(eps, that mass)-private, not (eps, 0)")
    return WassersteinLineResult(
        w_inf=_ceil_float(w_inf),
        w_1=_ceil_float(w_1),
        exact_inputs=exact,
        smallest_piece_mass=float(smallest),
        tolerance=t,
        w_inf_within_tolerance=_ceil_float(w_tol),
        excess_mass=_ceil_float(excess),
        notes=tuple(notes),
    )


def _check_tolerance(tolerance: object) -> float:
    if isinstance(tolerance, bool) or not isinstance(tolerance, Real | np.number):
        raise ParameterError(f"tolerance must be a number in [0, 1), got {tolerance!r}")
    t = float(tolerance)
    if not (0.0 <= t < 1.0):
        raise ParameterError(f"tolerance must be in [0, 1), got {t}")
    return t


def wasserstein_inf_line(xs: NumbersLike, p: NumbersLike, ys: NumbersLike,
                         q: NumbersLike) -> float:
    """W_inf between two finitely supported distributions on the real line.

    W_inf(mu, nu) = min over couplings of the largest |x - y| on the coupling's support; on the
    line the quantile coupling attains it, so W_inf = ess sup_u |F^{-1}(u) - G^{-1}(u)|
    (spec 02, Algorithm 4 of Zhang, Ohrimenko and Cummings; spec 04, XDistP).

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
