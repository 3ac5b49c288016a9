"""Directed rounding: exact values rounded to the float that errs towards privacy.

The one place where a quantity computed exactly (rational arithmetic on floats, which are
exact rationals) becomes a float: Laplace scales, Gaussian sigmas and variances, privacy
budgets and sensitivities are rounded *up* (:func:`round_up` and the operations built on
it), a quantity that is subtracted from a need is rounded *down* (:func:`round_down`).
:mod:`quiltpriv.mechanisms.calibration` re-exports these for the mechanisms; lower layers
(the release ledger's budgets) import them from here.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from fractions import Fraction

from quiltpriv.errors import ParameterError

__all__ = [
    "EXACT_TERMS",
    "sum_of_spans_up",
    "EXP_ULPS",
    "Exact",
    "add_up",
    "div_up",
    "exp_up",
    "mul_up",
    "round_down",
    "round_up",
    "scale_up",
    "sqrt_up",
]


#: An exact number: what the directed-rounding primitives accept (floats are exact rationals).
Exact = Fraction | int | float


def _ratio(x: Exact, what: str) -> tuple[int, int]:
    """``x`` as an exact integer ratio (numerator, denominator > 0)."""
    if type(x) is float and math.isfinite(x):  # the common case, without ABC checks
        return x.as_integer_ratio()
    if isinstance(x, bool) or not isinstance(x, Fraction | int | float):
        raise ParameterError(f"{what} must be a number (int, float or Fraction), got {x!r}")
    if isinstance(x, float) and not math.isfinite(x):
        raise ParameterError(f"{what} must be finite, got {x!r}")
    if isinstance(x, int):
        return x, 1
    return x.as_integer_ratio()


def _ratio_up(n: int, d: int) -> float:
    """The least float >= n / d (d > 0), in integer arithmetic (fast: no Fraction objects)."""
    try:
        f = n / d  # Python's int / int is correctly rounded (to nearest)
    except OverflowError:
        return math.inf if n > 0 else -sys.float_info.max
    if math.isinf(f):
        return f if f > 0 else -sys.float_info.max
    fn, fd = f.as_integer_ratio()
    return math.nextafter(f, math.inf) if fn * d < n * fd else f


def round_up(q: Exact) -> float:
    """The least float >= ``q`` (``inf`` when ``q`` exceeds the largest float).

    The one rounding rule for everything that must not be under-stated: Laplace scales,
    Gaussian sigmas and variances, privacy budgets spent, sensitivities.
    """
    return _ratio_up(*_ratio(q, "round_up"))


def round_down(q: Exact) -> float:
    """The greatest float <= ``q`` (``-inf`` below the most negative float): for what must not
    be over-stated, e.g. a variance subtracted from a required one or an allowed ratio."""
    n, d = _ratio(q, "round_down")
    return -_ratio_up(-n, d)


def div_up(numerator: Exact, denominator: Exact) -> float:
    """``numerator / denominator`` in exact arithmetic, rounded up (denominator > 0)."""
    n1, d1 = _ratio(numerator, "numerator")
    n2, d2 = _ratio(denominator, "denominator")
    if n2 <= 0:
        raise ParameterError(f"denominator must be > 0, got {denominator!r}")
    return _ratio_up(n1 * d2, d1 * n2)


def scale_up(sensitivity: Exact, epsilon: Exact, spent: Exact = 0) -> float:
    """``sensitivity / (epsilon - spent)`` in exact arithmetic, rounded up: the Laplace scale
    of [ZOC22, Alg. 3] (``spent`` = the quilt's influence ``e < epsilon``) and of every
    ``Delta / eps`` (``spent`` = 0). The caller checks ``spent < epsilon``."""
    n, d = _ratio(sensitivity, "sensitivity")
    en, ed = _ratio(epsilon, "epsilon")
    sn, sd = _ratio(spent, "spent")
    den_n, den_d = en * sd - sn * ed, ed * sd  # epsilon - spent, exactly
    if den_n <= 0:
        raise ParameterError(f"epsilon - spent must be > 0, got {epsilon!r} - {spent!r}")
    return _ratio_up(n * den_d, d * den_n)


def mul_up(*factors: Exact) -> float:
    """The exact product of ``factors``, rounded up."""
    n, d = 1, 1
    for k, f in enumerate(factors):
        fn, fd = _ratio(f, f"factor {k}")
        n, d = n * fn, d * fd
    return _ratio_up(n, d)


def add_up(*terms: Exact) -> float:
    """The exact sum of ``terms``, rounded up (a composed privacy budget, say)."""
    n, d = 0, 1
    for k, t in enumerate(terms):
        tn, td = _ratio(t, f"term {k}")
        n, d = n * td + tn * d, d * td
    return _ratio_up(n, d)


#: Up to this many terms :func:`sum_of_spans_up` adds exactly; longer sums take a float bound.
EXACT_TERMS = 256


def sum_of_spans_up(weights: Sequence[float], lows: Sequence[float],
                    highs: Sequence[float]) -> float:
    """A float ``>= sum_k |w_k| (hi_k - lo_k)`` (a linear query's sensitivity), never below.

    Up to :data:`EXACT_TERMS` terms it is the least such float (exact integer ratios). Longer
    sums (a weighted query over every step of a long series) are added in floats and widened:
    each term ``fl(|w| fl(hi - lo))`` is within a factor ``(1 - u)^-2`` of its exact value and
    ``fsum`` is correctly rounded, so the exact sum is at most ``s (1 - u)^-3`` (``u = 2^-53``);
    the result is ``s (1 + 2^-50)`` rounded up, plus ``n`` smallest subnormals for underflowed
    terms: at most a few ulps above the exact sum.
    """
    if not all(isinstance(x, Sequence) for x in (weights, lows, highs)) or not (
            len(weights) == len(lows) == len(highs)):
        raise ParameterError("weights, lows and highs must be sequences of the same length")
    n = len(weights)
    if n <= EXACT_TERMS:
        num, den = 0, 1
        for w, lo, hi in zip(weights, lows, highs, strict=True):
            wn, wd = _ratio(w, "weight")
            wn = abs(wn)
            hn, hd = _ratio(hi, "upper bound")
            ln, ld = _ratio(lo, "lower bound")
            tn, td = wn * (hn * ld - ln * hd), wd * hd * ld
            num, den = num * td + tn * den, den * td
        return _ratio_up(num, den)
    try:
        terms = [abs(float(w)) * (float(hi) - float(lo))
                 for w, lo, hi in zip(weights, lows, highs, strict=True)]
    except (TypeError, ValueError):
        raise ParameterError("weights, lows and highs must hold numbers") from None
    if not all(map(math.isfinite, terms)):
        raise ParameterError("a term |w| (hi - lo) is not finite")
    s = math.fsum(terms) + n * 5e-324
    return math.nextafter(s * (1 + 2.0**-50), math.inf)


#: Ulps by which math.exp may miss the exact value (glibc's is within 1; the margin is for
#: other platforms' libm): :func:`exp_up` steps up by this many.
EXP_ULPS = 4


def exp_up(x: float) -> float:
    """An upper bound on e^x: math.exp stepped up by :data:`EXP_ULPS` ulps (a delta budget
    multiplied by e^lambda, say)."""
    if isinstance(x, bool) or not isinstance(x, int | float) or math.isnan(x):
        raise ParameterError(f"exp_up needs a number, got {x!r}")
    try:
        v = math.exp(x)
    except OverflowError:
        return math.inf
    for _ in range(EXP_ULPS):
        v = math.nextafter(v, math.inf)
    return v


def sqrt_up(x: Exact) -> float:
    """The least float whose square is >= ``x`` (>= 0): a standard deviation from a variance."""
    q = Fraction(*_ratio(x, "sqrt_up"))
    if q < 0:
        raise ParameterError(f"sqrt_up needs a number >= 0, got {x!r}")
    if q > Fraction(sys.float_info.max):
        return math.inf
    s = math.sqrt(round_up(q))
    while Fraction(s) * Fraction(s) < q:
        s = math.nextafter(s, math.inf)
    while s > 0 and Fraction(p := math.nextafter(s, 0.0)) * Fraction(p) >= q:
        s = p
    return s
