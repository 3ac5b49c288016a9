"""Noise calibration: the one place where a Laplace scale or a Gaussian sigma is computed.

Every mechanism that adds Laplace or Gaussian noise calibrated to a sensitivity (APGM, the
group-DP baselines, the distribution privacy mechanisms of [CO23]) takes its scale from here,
so that one rule decides the rounding and one formula decides what is private.

Directed rounding
-----------------
Every scale, sigma, variance and budget is computed exactly and rounded towards more noise by
the primitives of :mod:`quiltpriv.utils.rounding` (re-exported here: :func:`round_up`,
:func:`div_up`, :func:`scale_up`, :func:`mul_up`, :func:`add_up`, :func:`sqrt_up`,
:func:`exp_up`, and :func:`round_down` for what is subtracted from a need); a value beyond the
float range is refused in one line (:func:`check_finite_noise`).

Laplace
-------
:func:`laplace_scale` is ``sensitivity / epsilon`` computed exactly (rational arithmetic on the
two floats) and rounded up to the next float: Lap(b) is (eps, 0)-DP for sensitivity Delta iff
b >= Delta / eps [DR14, Thm. 3.6], and no floating-point rounding can push b below it.

Gaussian
--------
Everything reduces to one scalar, the *budget* ``r = Delta / sigma``: two Gaussians N(m, s^2)
and N(m + Delta, s^2) (or two equal-covariance Gaussians at Mahalanobis distance r) are
(eps, delta)-indistinguishable iff [BW18, Thm. 8]::

    delta(r) = Phi(r/2 - eps/r) - e^eps Phi(-r/2 - eps/r) <= delta,

(:func:`gaussian_delta`), and delta(r) increases continuously from 0 (r = 0) to 1 (r -> oo).

* ``calibration="classical"``: r = eps / c_G with c_G = sqrt(2 ln(1.25/delta)) [DR14, Thm. A.1].
  That theorem is proved for eps < 1 only. For eps >= 1 the classical r is *verified* with the
  exact profile above (which is necessary and sufficient, so a verified r is private) and
  refused with a :class:`~quiltpriv.errors.ParameterError` when it fails (e.g. eps = 20,
  delta = 1e-3). This is how [CO23] uses the constant at eps in {1, 5}.
* ``calibration="analytic"``: the largest r with delta(r) <= delta [BW18, Alg. 1], found by
  bisection; valid for every eps > 0 and never more noise than ``classical``.

The safety rule (one rule, always towards more noise)
-----------------------------------------------------
With rho = :data:`SAFETY_RTOL` = 1e-9:

1. the condition is met for the tightened delta' = delta (1 - rho), with delta(r) evaluated
   without cancellation and inflated by :data:`PROFILE_RTOL` = 1e-11 (its measured relative
   error is at most 3e-13 against 100-digit mpmath, from eps 1e-12 to 20 and delta 1e-300 to
   1e-2; the product form ``Phi(x) (1 - exp(...))`` used before was off by a factor 10^269 at
   eps 1e-12, delta 1e-300);
2. the budget found for delta' (the classical formula, or the bisection's end point on the safe
   side) is shrunk to r (1 - 2 rho): rho for the rounding of c_G and of the division below,
   rho for the floating-point arithmetic that produced the caller's sensitivity;
3. sigma = sensitivity / r, rounded up to the next float.

So the returned sigma is always above the least sigma allowed for (eps, delta), and at most
about 3 rho (relative) above the least sigma allowed for delta' -- a margin the tests measure
against a high-precision reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Literal

from quiltpriv.errors import ParameterError
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.rounding import (
    EXP_ULPS,
    add_up,
    div_up,
    exp_up,
    mul_up,
    round_down,
    round_up,
    scale_up,
    sqrt_up,
)
from quiltpriv.utils.validation import check_delta, check_epsilon, check_positive

__all__ = [
    "CALIBRATIONS",
    "EXP_ULPS",
    "PROFILE_RTOL",
    "add_up",
    "SAFETY_RTOL",
    "GaussianBudget",
    "c_gaussian",
    "check_calibration",
    "check_finite_noise",
    "div_up",
    "exp_up",
    "gaussian_budget",
    "gaussian_delta",
    "gaussian_sigma",
    "laplace_scale",
    "mul_up",
    "round_down",
    "round_up",
    "scale_up",
    "sqrt_up",
]

#: The relative safety margin of every Gaussian calibration (the module docstring's rule), and
#: the relative amount by which mechanisms inflate floating-point sensitivities.
SAFETY_RTOL = 1e-9

#: The Gaussian calibrations: the classical constant [DR14, Thm. A.1] or the exact one [BW18].
CALIBRATIONS: tuple[str, ...] = ("classical", "analytic")

Calibration = Literal["classical", "analytic"]

# Bisection on floats ends when the midpoint equals an end point; halving a float interval
# reaches that in at most ~2100 steps (exponent range plus mantissa bits). The cap only guards
# against a predicate that is not monotone through a bug.
_MAX_STEPS = 4096


def check_calibration(calibration: object) -> Calibration:
    """Return ``calibration`` if it names a Gaussian calibration, else raise ParameterError."""
    if not isinstance(calibration, str) or calibration not in CALIBRATIONS:
        raise ParameterError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    return calibration  # type: ignore[return-value]


def check_finite_noise(value: float, what: str) -> float:
    """``value`` if finite, else the one-line refusal: a scale or sigma that overflows the
    float range cannot be met exactly (and noise that large would carry no information)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ParameterError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ParameterError(f"{what} overflows the float range (beyond about 1.8e308); "
                             "raise epsilon or lower the sensitivity")
    return value


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Laplace scale b = sensitivity / epsilon, exact and rounded up to the next float.

    Lap(b) noise is (epsilon, 0)-DP for an L1 sensitivity Delta iff b >= Delta / epsilon
    [DR14, Thm. 3.6]; the quotient is taken in rational arithmetic so that b is never below
    it. A sensitivity of 0 gives scale 0. A quotient beyond the float range is refused
    (ParameterError).
    """
    d = check_positive(sensitivity, "sensitivity", allow_zero=True)
    eps = check_epsilon(epsilon)
    return check_finite_noise(div_up(d, eps), f"the Laplace scale {_fmt(d)} / {_fmt(eps)}")


def c_gaussian(delta: float) -> float:
    """c_G(delta) = sqrt(2 ln(1.25/delta)), the classical constant [DR14, Thm. A.1]."""
    dl = check_delta(delta)
    return math.sqrt(2.0 * math.log(1.25 / dl))


#: Upper bound on the relative error of :func:`_log_profile`'s delta for deltas >= 1e-300
#: (measured: at most 3e-13 against 100-digit mpmath on the default tests' grid and random
#: points; the float logarithm's own error, |log delta| * 1e-16, is 7e-14 at 1e-300). Every
#: delta this module reports for a given sigma is inflated by it (rounded up).
PROFILE_RTOL = 1e-11

_LOG_HALF = math.log(0.5)
_LOG_MARGIN = math.log1p(PROFILE_RTOL)
#: The series of :func:`_log_profile` stops when an odd term is below this fraction of the sum.
_SERIES_RTOL = 1e-18
_SERIES_TERMS = 200
#: Extra steps of the backward continued fraction beyond the last ratio needed.
_CF_EXTRA = 200


def _moment_ratios(b: float, nmax: int) -> list[float]:
    """rho_n = M_n(b) / M_{n-1}(b) for n = 1..nmax (index 0 unused), b > 0, where
    M_n(b) = int_0^oo u^n exp(-b u - u^2 / 2) du (M_0 is the Mills ratio).

    Integration by parts gives M_{n+1} = n M_{n-1} - b M_n. Forward it subtracts, which is
    harmless for b < 1; for b >= 1 the ratios come from the backward continued fraction
    rho_n = n / (b + rho_{n+1}), which only adds positive numbers.
    """
    from scipy import special  # imported when first needed: it is slow to import

    if b < 1.0:
        mills = math.sqrt(math.pi / 2) * float(special.erfcx(b / math.sqrt(2.0)))
        rho = [0.0, 1.0 / mills - b]
        for n in range(1, nmax):
            rho.append(n / rho[n] - b)
        return rho
    rho = [0.0] * (nmax + 1)
    r = math.sqrt(nmax + _CF_EXTRA + 1.0)  # the ratios' growth for large n
    for n in range(nmax + _CF_EXTRA, 0, -1):
        r = n / (b + r)
        if n <= nmax:
            rho[n] = r
    return rho


def _log_profile(r: float, eps: float) -> float:
    """log delta(r) of the module docstring, without cancellation; -inf for r = 0.

    With a = r/2, b = eps/r, x = a - b, y = -a - b: delta = Phi(x) - e^eps Phi(y).

    * When e^eps Phi(y) <= Phi(x) / 2 the subtraction loses at most one bit: it is done in log
      space (``log_ndtr``, ``log1p``).
    * Otherwise the two terms nearly cancel (small eps: the 16 of 544 grid cases the old
      product form broke). Since e^eps phi(y) = phi(x) (the two densities cross at the
      threshold), delta = phi(x) [R(b - a) - R(b + a)] with R the Mills ratio, and Taylor's
      series of R around b, whose derivatives are R^(n) = (-1)^n M_n(b), gives a sum of
      positive terms only::

          delta = e^((eps - a^2)/2) Phi(-b) * 2 sum_{n odd} (M_n(b) / M_0(b)) a^n / n!

      (phi(x) R(b) = e^((eps - a^2)/2) Phi(-b) because x^2 - b^2 = a^2 - eps.) In this branch
      a < b / 3 or a < 0.6, so the terms fall geometrically.
    """
    from scipy import special

    if r == 0:
        return -math.inf
    a = 0.5 * r
    b = eps / r
    l1 = float(special.log_ndtr(a - b))
    if l1 == -math.inf:  # delta < Phi(x) < exp(-1e300): nothing a float can tell from 0
        return -math.inf
    log_q = eps + float(special.log_ndtr(-a - b)) - l1
    if log_q <= _LOG_HALF:
        return l1 + math.log1p(-math.exp(log_q))
    rho = _moment_ratios(b, _SERIES_TERMS)
    term, total = 1.0, 0.0
    for n in range(1, _SERIES_TERMS + 1):
        term *= rho[n] * a / n
        if n % 2:
            total += term
            if term <= _SERIES_RTOL * total:
                break
    else:  # cannot happen in this branch (the terms fall geometrically); never under-state
        raise ParameterError(f"the Gaussian privacy profile did not converge at r = {r!r}, "
                             f"epsilon = {eps!r}")
    return 0.5 * (eps - a * a) + float(special.log_ndtr(-b)) + math.log(2.0 * total)


def _profile(r: float, eps: float) -> float:
    """delta(r) rounded up: the evaluation inflated by :data:`PROFILE_RTOL`, at most 1."""
    lp = _log_profile(r, eps)
    if lp == -math.inf:
        return 0.0
    up = round_up(Fraction(math.exp(lp)) * (1 + Fraction(PROFILE_RTOL)))
    if lp < -700:  # subnormal results: exp's absolute error is up to a subnormal step
        up = math.nextafter(math.nextafter(up, math.inf), math.inf)
    return min(1.0, up)


def gaussian_delta(epsilon: float, mean_shift: float, sigma: float) -> float:
    """Smallest delta making N(m1, sigma^2) and N(m2, sigma^2) (eps, delta)-indistinguishable.

    With ``D = |m1 - m2|`` [BW18, Thm. 8]::

        delta = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D)

    the same in both directions; 0 when ``D = 0``, 1 when ``sigma = 0 < D``. Evaluated
    without cancellation (:func:`_log_profile`: a log-space difference, or a series of
    positive terms when the two terms nearly cancel, as at small eps) and rounded up: the
    result is never below the exact delta (its relative excess is at most about
    :data:`PROFILE_RTOL`).

    Parameters
    ----------
    epsilon
        eps >= 0.
    mean_shift
        D >= 0.
    sigma
        The common standard deviation, >= 0.
    """
    eps = check_positive(epsilon, "epsilon", allow_zero=True)
    d = check_positive(mean_shift, "mean_shift", allow_zero=True)
    s = check_positive(sigma, "sigma", allow_zero=True)
    if d == 0:
        return 0.0
    if s == 0:
        return 1.0
    return _profile(div_up(d, s), eps)  # r rounded up: delta(r) increases with r


def _bisect_largest(ok: Callable[[float], bool], lo: float, hi: float) -> float:
    """The largest float found in [lo, hi) with ``ok``, given ok(lo) and not ok(hi).

    ``ok`` must be monotone (true then false); the returned point always satisfies it.
    """
    for _ in range(_MAX_STEPS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _analytic_ratio(eps: float, target: float) -> float:
    """The largest r with delta(r) <= target < 1 (bisection from the safe side).

    Bracket: delta(0) = 0 <= target, and delta increases continuously to 1 > target, so
    doubling from max(1, eps) finds hi with delta(hi) > target (within ~1100 doublings before
    r overflows to inf, where delta = 1).
    """
    log_target = math.log(target)

    def ok(r: float) -> bool:  # compared in logs: no underflow for tiny deltas
        return _log_profile(r, eps) + _LOG_MARGIN <= log_target

    lo, hi = 0.0, max(1.0, eps)
    for _ in range(_MAX_STEPS):
        if not ok(hi):
            break
        lo, hi = hi, 2.0 * hi
    return _bisect_largest(ok, lo, hi)


@dataclass(frozen=True)
class GaussianBudget:
    """The largest allowed ratio r = sensitivity / sigma for (epsilon, delta).

    Attributes
    ----------
    ratio
        r after the safety rule (module docstring): N(0, sigma^2) noise with
        sigma >= sensitivity / ratio is (epsilon, delta)-DP for that L2 sensitivity; for
        equal-covariance Gaussian laws, r is the largest Mahalanobis distance allowed.
    epsilon, delta
        The guarantee.
    calibration
        "classical" or "analytic".
    exact_delta
        delta(ratio) by the exact profile [BW18, Thm. 8] (at most delta).
    note
        How r was obtained, for a result's notes.
    """

    ratio: float
    epsilon: float
    delta: float
    calibration: str
    exact_delta: float
    note: str

    def sigma(self, sensitivity: float) -> float:
        """sensitivity / ratio rounded up to the next float (0 for sensitivity 0)."""
        d = check_positive(sensitivity, "sensitivity", allow_zero=True)
        if d == 0:
            return 0.0
        return check_finite_noise(div_up(d, self.ratio), f"the Gaussian sigma for sensitivity "
                                  f"{_fmt(d)} at ({_fmt(self.epsilon)}, {_fmt(self.delta)})")

    def to_dict(self) -> dict:
        """A JSON-ready dict of the fields."""
        return asdict(self)


def gaussian_budget(epsilon: float, delta: float,
                    calibration: Calibration | str = "classical") -> GaussianBudget:
    """The Gaussian budget r = sensitivity / sigma for (epsilon, delta) (module docstring).

    Raises
    ------
    ParameterError
        Bad epsilon, delta or calibration name; or ``classical`` at epsilon >= 1 when the
        exact profile shows the classical constant does not give (epsilon, delta).
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    cal = check_calibration(calibration)
    target = dl * (1.0 - SAFETY_RTOL)
    shrink = 1.0 - 2.0 * SAFETY_RTOL
    if cal == "classical":
        r = eps / math.sqrt(2.0 * math.log(1.25 / target)) * shrink
        exact = _profile(r, eps)
        if eps < 1:
            note = "classical calibration r = eps/c_G (Dwork-Roth Thm A.1, eps < 1)"
        elif exact <= target:
            note = (f"classical calibration r = eps/c_G; eps >= 1 so verified with the exact "
                    f"Gaussian privacy profile (delta {_fmt(exact, 3)} <= {_fmt(dl)})")
        else:
            raise ParameterError(
                f"the classical Gaussian calibration c_G = sqrt(2 ln(1.25/delta)) does not give "
                f"({_fmt(eps)}, {_fmt(dl)}) at epsilon >= 1 (exact delta {_fmt(exact, 3)}); "
                f"use calibration='analytic'")
    else:
        r = _analytic_ratio(eps, target) * shrink
        exact = _profile(r, eps)
        note = "analytic calibration (Balle-Wang exact profile), r found by bisection from below"
    return GaussianBudget(r, eps, dl, cal, exact, note)


def gaussian_sigma(
    sensitivity: float, epsilon: float, delta: float, *,
    calibration: Calibration | str = "classical",
) -> float:
    """Standard deviation of Gaussian noise giving (epsilon, delta) for an L2 sensitivity.

    ``classical``: c_G * sensitivity / epsilon with c_G = sqrt(2 ln(1.25/delta)) [DR14,
    Thm. A.1], for epsilon >= 1 only once the exact profile confirms it (else ParameterError).
    ``analytic``: the least sigma the exact privacy profile allows [BW18, Thm. 8], for every
    epsilon > 0. Both follow the module's safety rule (at most ~3e-9 relative above the least
    sigma). Returns 0 for sensitivity 0.
    """
    sens = check_positive(sensitivity, "sensitivity", allow_zero=True)
    return gaussian_budget(epsilon, delta, calibration).sigma(sens)
