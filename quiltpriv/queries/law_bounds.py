"""Laws of a count at any number of records: float64 with proven error bounds, O(n).

On a hyperparameter network the law of a count over ``n`` records given a secret is a mixture
of binomials, ``P(F = k | a) = sum_c w_c Binomial(n, pi_c)(k)``
(:mod:`quiltpriv.queries.network_laws`).
In exact rationals each term has ``O(n)`` digits, so the laws cost ``O(n^2)`` and more: a few
seconds at ``n = 1000``, hours at ``10^5``. This module computes them in float64 in ``O(n)``
per distinct ``pi_c`` and per secret, *with a proven bound on every error*, and turns them into
quantities that are never on the unsafe side:

* :func:`quiltpriv.utils.distances.w_inf_bracket` (from :func:`cdf_bounds`): integers
  ``lo <= W_inf <= hi`` for the Wasserstein mechanism; the mechanism uses ``hi`` (never below
  the exact ``W_inf``), and ``lo == hi`` proves it exact;
* :func:`laplace_log_density` and :func:`pair_loss_bounds`: a bracket of the worst-case privacy
  loss of ``F + Lap(s)`` for the auditor.

Error model
-----------
Every float64 ``+ - * /`` is correctly rounded (relative error at most ``U = 2**-53``). A
library function (``exp``, ``log``, ``log1p`` of numpy and :mod:`math`, ``scipy.special.gammaln``)
is assumed to return its value within ``LIBM_ULPS * U`` relative (``exp``) or within
``LIBM_ULPS * U * (|value| + 1)`` absolute (the logarithms), with ``LIBM_ULPS = 64``. Measured
libraries are within 1-4 units (glibc, numpy's SIMD loops; ``gammaln`` was measured within 2.6
against 120-bit ``mpmath``); ``tests/queries/test_law_bounds.py`` re-checks the assumption on the
machine it runs on. Every bound below is a sum of such terms; bounds are computed in float64 and
then raised by a relative ``2**-30``, far more than their own rounding.

Everything is in *log space*: a probability ``p`` is held as ``log p``, so that the deep tails
(``P(F = 0) = (1 - pi)^n``, ``e^{-10^5}`` at ``n = 10^6``) keep their relative accuracy.
An absolute error ``e`` on ``log p`` is a relative error ``e^{|e|} - 1 ~ e`` on ``p``.
``-inf`` is an exact zero (only a point mass, ``pi`` in ``{0, 1}``, produces one).

1. ``log(x)`` of an exact rational (:func:`log_fraction`): ``x = m 2^e`` with ``m`` in
   ``(1/2, 2)`` (exact integer work), ``log(float(m)) + e log 2``; error
   ``U (2 + 2 LIBM_ULPS + 2 |e| log 2 + |value|)``.
2. Binomial log-pmf (:class:`BinomialLogPmf`): ``log C(n, j) + j log pi + (n - j) log(1 - pi)``
   with ``log C(n, j) = g(n) - g(j) - g(n - j)``, ``g(j) = gammaln(j + 1) in [0, G]``,
   ``G = g(n)``. Three library values err by ``LIBM_ULPS U (G + 1)`` each, five roundings by at
   most ``U`` times ``G + n L`` (``L = max(|log pi|, |log(1 - pi)|)``), the logs of ``pi`` by
   their own bound times ``n``: ``eta = U ((3 LIBM_ULPS + 4)(G + 1) + 5 n L) + n (e_pi + e_q)``.
   At ``n = 10^6`` this is ``~3e-7``; at ``n = 200`` ``~3e-11``.
3. Mixture (:func:`mixture_log_pmf`): ``M + log sum_c exp(t_c - M)``, ``t_c = log w_c + lp_c``,
   ``M = max_c t_c``. The sum has ``C`` non-negative terms, the largest exactly 1, so it is in
   ``[1, C]`` and errs by ``(C - 1) U`` relative; terms that underflow are below ``e^{-745}``
   relative each. Bound: ``max_c (e_w + eta_c) + U (4 T + (2 LIBM_ULPS + C + 1)(1 + log C))``
   with ``T`` the largest finite ``|t_c|``.
4. Running sums (:func:`log_decay_cumsum`): ``x_m = log sum_{k <= m} exp(y_k + (m - k) c)``
   for ``c <= 0`` (``c = 0``: the CDF; ``c = -1/s``: one side of a Laplace smoothing). The
   input is cut into rows of ``B`` entries; within a row ``z_k = y_k - k c`` is shifted by the
   row's maximum and summed by ``numpy.logaddexp.accumulate`` (each step errs by at most
   ``U (|result| + 2 LIBM_ULPS + 1)`` and ``logaddexp`` is 1-Lipschitz in the max-norm, so errors
   add up over the row's ``B`` steps but never grow), the row totals are combined by the same
   function applied to them with ``c' = B c`` (recursively), and each entry adds its row's
   carry with one more ``logaddexp``. Per level the rounding adds at most
   ``U (B (A + 2 LIBM_ULPS + 1) + 10 (V + 2 LIBM_ULPS + 1))`` with ``A`` the largest shifted
   magnitude in a row and ``V`` a bound on every other magnitude of the level; levels add.
   Input errors pass through unchanged (the map is 1-Lipschitz).
5. CDF key: ``key(k) = log F(k) - log S(k)``, ``S = 1 - F``, from a forward and a backward
   running sum. It is strictly increasing in ``F`` and accurate at both ends (``~log F`` in the
   lower tail, ``~ -log S`` in the upper one), with error ``e_F + e_S``. ``key(n) = +inf``.

From keys to ``W_inf`` (:func:`quiltpriv.utils.distances.w_inf_bracket`). For laws on ``{0..n}``,
``W_inf(P, Q) <= d`` if and only if ``F_P(k) <= F_Q(k + d)`` and ``F_Q(k) <= F_P(k + d)`` for
every ``k`` (the quantile functions differ by at most ``d``). With ``lo(k) <= key(k) <= hi(k)``
(made monotone: a running maximum of the lower bounds and a running minimum, from the right, of
the upper ones are still bounds of an increasing function):

* ``hi_P(k) <= lo_Q(k + d)`` proves ``F_P(k) <= F_Q(k + d)``; the least ``d`` proven in both
  directions is an upper bound ``W_hi >= W_inf`` -- the errors are taken in the unsafe
  direction, so rounding can only raise it;
* ``lo_P(k) > hi_Q(k + d)`` proves ``F_P(k) > F_Q(k + d)``, i.e. ``W_inf > d``: the largest
  such ``d`` plus one is a lower bound ``W_lo``.

Both are found for every ``k`` at once by ``numpy.searchsorted`` on the monotone bounds. An
exact tie ``F_P(k) = F_Q(k + d)`` (or one closer than the error bounds) cannot be certified
from floats and raises ``W_hi`` above ``W_inf``, typically by one; two secrets with identical
mixtures (the same weights on the same ``pi``) are recognised exactly beforehand
(``W_inf = 0``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from quiltpriv._compat import moved_attribute
from quiltpriv.errors import ParameterError, QuiltPrivError
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.validation import check_log_vector, check_positive, check_scalar

__all__ = [
    "LIBM_ULPS",
    "U",
    "BinomialLogPmf",
    "Budget",
    "BudgetExceeded",
    "cdf_bounds",
    "cdf_key",
    "laplace_log_density",
    "log_decay_cumsum",
    "log_fraction",
    "mixture_log_pmf",
    "pair_loss_bounds",
]

#: Unit roundoff of float64 (round to nearest).
U = 2.0**-53
#: Assumed accuracy of exp, log, log1p and gammaln, in units of ``U`` (module docstring).
LIBM_ULPS = 64
_LN2 = math.log(2.0)
#: Raise a bound computed in floats by this relative amount (covers its own rounding).
_BOUND_SLACK = 1.0 + 2.0**-30
#: Row length of the running sums (a power of two).
_ROW = 4096
#: Within a row the decay offsets ``k |c|`` stay below this (rows shrink for steep decays).
_ROW_DECAY = 8192.0


class BudgetExceeded(QuiltPrivError):
    """The computation would exceed its time limit or its memory budget."""


@dataclass
class Budget:
    """A deadline and an optional progress bar shared by the steps of one computation.

    ``tick`` is called after every step (each ``O(n)``); it advances the bar and raises
    :class:`BudgetExceeded` once the deadline has passed, naming what was being computed.
    """

    time_limit: float | None = None
    progress: bool = False
    what: str = "the computation"
    _deadline: float | None = field(default=None, init=False)
    _bar: Any = field(default=None, init=False)
    done: int = field(default=0, init=False)
    total: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._start = time.monotonic()
        if self.time_limit is not None:
            self._deadline = self._start + self.time_limit

    def remaining(self) -> float | None:
        """Seconds left (``None``: no limit)."""
        return None if self._deadline is None else self._deadline - time.monotonic()

    def start(self, total: int, desc: str) -> None:
        """Announce ``total`` more steps (a bar appears after half a second on a terminal)."""
        self.total += total
        if self.progress and self._bar is None:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, desc=desc, unit="step", delay=0.5, leave=False)
        elif self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()
        self.check()

    def tick(self, k: int = 1) -> None:
        self.done += k
        if self._bar is not None:
            self._bar.update(k)
        self.check()

    def check(self) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise BudgetExceeded(
                f"{self.what} reached the time limit after "
                f"{_fmt(time.monotonic() - self._start, 3)} s ({self.done} of {self.total} steps "
                "done); raise the time limit (--time-limit) or reduce --records")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# -- scalar logs ------------------------------------------------------------------------------


def log_fraction(x: Fraction) -> tuple[float, float]:
    """``log(x)`` of an exact positive rational, and a bound on its absolute error.

    Exact integer work brings ``x`` to ``m 2^e`` with ``m`` in ``(1/2, 2)``, so neither a tiny
    ``x`` (below the float range) nor a huge numerator and denominator lose anything.
    """
    x = _check_fraction(x, "x")
    if x <= 0:
        raise ParameterError(f"log of a non-positive number {x}")
    num, den = x.numerator, x.denominator
    e = num.bit_length() - den.bit_length()
    m = Fraction(num, den << e) if e >= 0 else Fraction(num << -e, den)
    value = math.log(float(m)) + e * _LN2
    err = U * (2.0 + 2.0 * LIBM_ULPS + 2.0 * abs(e) * _LN2 + abs(value))
    return value, err * _BOUND_SLACK


def _max_abs_finite(x: np.ndarray) -> float:
    """The largest ``|x|`` over finite entries (0 when there are none)."""
    if x.size == 0:
        return 0.0
    hi, lo = float(np.max(x)), float(np.min(x))
    if math.isfinite(hi) and math.isfinite(lo):
        return max(abs(hi), abs(lo))
    fin = x[np.isfinite(x)]
    return float(np.max(np.abs(fin))) if fin.size else 0.0


# -- binomial laws ----------------------------------------------------------------------------


class BinomialLogPmf:
    """``log Binomial(n, pi)(j)`` for ``j = 0..n`` with an error bound (module docstring, 2).

    The table ``log C(n, j)`` is built once (``O(n)``) and shared by every ``pi``.
    """

    def __init__(self, n: int) -> None:
        from scipy.special import gammaln

        self.n = int(check_scalar(n, "n", integer=True, min_val=0, max_val=2**53))
        self.j = np.arange(self.n + 1, dtype=float)
        g = gammaln(self.j + 1.0)
        self.big_g = float(g[-1])
        self.log_comb = (self.big_g - g) - g[::-1]

    def __call__(self, pi: Fraction) -> tuple[np.ndarray, float]:
        """(log-pmf array, bound on the absolute error of every finite entry)."""
        n = self.n
        pi = _check_fraction(pi, "pi")
        if not 0 <= pi <= 1:
            raise ParameterError(f"pi must be in [0, 1], got {pi}")
        if pi == 0 or pi == 1:  # a point mass, exact
            lp = np.full(n + 1, -np.inf)
            lp[0 if pi == 0 else n] = 0.0
            return lp, 0.0
        lpi, e_p = log_fraction(pi)
        lqi, e_q = log_fraction(1 - pi)
        lp = self.j * lpi
        lp += self.log_comb
        lp += (n - self.j) * lqi
        big_l = max(abs(lpi), abs(lqi))
        eta = U * ((3.0 * LIBM_ULPS + 4.0) * (self.big_g + 1.0) + 5.0 * n * big_l)
        eta += n * (e_p + e_q)
        return lp, eta * _BOUND_SLACK


def mixture_log_pmf(
    components: Sequence[tuple[Fraction, Fraction]],
    log_pmf: Any,
    check: Any = None,
) -> tuple[np.ndarray, float]:
    """``log sum_c w_c Binomial(n, pi_c)`` for ``components = [(pi_c, w_c), ...]``.

    ``log_pmf(pi)`` returns ``(log-pmf array, error)`` (a :class:`BinomialLogPmf` or a cache
    around one); ``check()``, when given, is called after every component (a deadline).
    Zero weights are skipped; returns the log-pmf of the mixture and its error bound (module
    docstring, 3).
    """
    comps = [(pi, w) for pi, w in _check_components(components) if w > 0]
    if not comps:
        raise ParameterError("an empty mixture")
    if not callable(log_pmf):
        raise ParameterError("log_pmf must be callable (a BinomialLogPmf)")
    logs = [log_fraction(w) for _, w in comps]
    top: np.ndarray | None = None
    big_t, worst = 0.0, 0.0
    for (pi, _), (lw, e_w) in zip(comps, logs, strict=True):
        lp, eta = log_pmf(pi)
        t = lp + lw
        top = t if top is None else np.maximum(top, t, out=top)
        big_t = max(big_t, abs(lw) + _max_abs_finite(lp))
        worst = max(worst, e_w + eta)
        if check is not None:
            check()
    assert top is not None
    shift = np.where(np.isfinite(top), top, 0.0)
    total = np.zeros_like(shift)
    for (pi, _), (lw, _) in zip(comps, logs, strict=True):
        lp, _ = log_pmf(pi)
        t = lp + lw
        t -= shift
        np.exp(t, out=t)
        total += t
        if check is not None:
            check()
    with np.errstate(divide="ignore"):
        out = np.log(total)
    out += shift
    c = len(comps)
    err = worst + U * (4.0 * big_t + (2.0 * LIBM_ULPS + c + 1.0) * (1.0 + math.log(c)))
    err += c * 1e-300  # underflowed terms (each below e^-745 of the sum)
    return out, err * _BOUND_SLACK


# -- input checks (these functions take the arrays the count-law code builds) ----------------


def _check_fraction(x: object, name: str) -> Fraction:
    """An exact rational (Fraction or int), else ParameterError: these bounds are exact."""
    if isinstance(x, bool) or not isinstance(x, Fraction | int):
        raise ParameterError(f"{name} must be an exact rational (Fraction or int), got {x!r}")
    return Fraction(x)


def _check_components(components: object) -> list[tuple[Fraction, Fraction]]:
    """A mixture as a list of exact (pi, weight) pairs, else ParameterError."""
    if isinstance(components, str) or not isinstance(components, Iterable):
        raise ParameterError("components must be a list of (pi, weight) pairs")
    out = []
    for c in components:
        if not isinstance(c, tuple | list) or len(c) != 2:
            raise ParameterError(f"a mixture component must be a (pi, weight) pair, got {c!r}")
        out.append((_check_fraction(c[0], "pi"), _check_fraction(c[1], "weight")))
    return out


# -- running sums in log space ----------------------------------------------------------------


def _row_length(c: float) -> int:
    if c == 0:
        return _ROW
    b = _ROW
    while b > 2 and b * abs(c) > _ROW_DECAY:
        b //= 2
    return b


def log_decay_cumsum(y: np.ndarray, c: float = 0.0) -> tuple[np.ndarray, float]:
    """``x_m = log sum_{k <= m} exp(y_k + (m - k) c)`` for ``c <= 0``, in ``O(len(y))``.

    Returns ``x`` and a bound on the error the computation *adds* (the input's own error
    passes through unchanged: the map is 1-Lipschitz in the max-norm). ``c`` is taken as the
    float given; a caller whose ``c`` is a rounded value adds ``len(y) |c| U`` itself.
    Module docstring, 4.
    """
    y = check_log_vector(y, "y")
    c = float(check_scalar(c, "c", max_val=0.0))
    n = y.size
    if not c <= 0 or not math.isfinite(c):
        raise ValueError(f"decay c must be finite and <= 0, got {c}")
    if n == 0:
        return y.copy(), 0.0
    b = min(_row_length(c), n)
    rows = -(-n // b)
    pad = rows * b - n
    ymat = (np.concatenate([y, np.full(pad, -np.inf)]) if pad else y).reshape(rows, b)
    t = np.arange(b, dtype=float)
    tc = t * c
    z = ymat - tc if c else ymat
    ref = np.max(z, axis=1)
    ref[~np.isfinite(ref)] = 0.0
    a = z - ref[:, None]
    big_a = max(_max_abs_finite(a), math.log(b))
    acc = np.logaddexp.accumulate(a, axis=1, out=a)
    acc += (ref[:, None] + tc) if c else ref[:, None]
    y_max = _max_abs_finite(y)
    # Every finite x_m is within [-(y_max + n |c|), y_max + log n]; loc, z, ref, carries alike.
    big_v = y_max + n * abs(c) + math.log(n + 1.0) + b * abs(c) + big_a + math.log(b)
    added = U * (b * (big_a + 2.0 * LIBM_ULPS + 1.0) + 10.0 * (big_v + 2.0 * LIBM_ULPS + 1.0))
    if rows > 1:
        carry, e_rec = log_decay_cumsum(acc[:, -1], b * c)
        prev = np.concatenate([[-np.inf], carry[:-1]])[:, None]
        x = np.logaddexp(prev + (t + 1.0) * c if c else prev, acc, out=acc)
        added += e_rec
    else:
        x = acc
    return x.reshape(-1)[:n], added * _BOUND_SLACK


def cdf_key(log_pmf: np.ndarray, err: float) -> tuple[np.ndarray, float]:
    """``log F(k) - log S(k)`` for ``k = 0..n`` (``+inf`` at ``n``) and its error bound.

    ``F(k) = P(X <= k)``, ``S(k) = P(X > k)``; ``log_pmf`` is over ``0..n`` with error ``err``.
    Module docstring, 5.
    """
    log_pmf, err = check_log_vector(log_pmf, "log_pmf"), check_positive(err, "err", allow_zero=True)
    log_f, e_f = log_decay_cumsum(log_pmf)
    log_g, e_g = log_decay_cumsum(log_pmf[::-1])
    log_s = np.empty_like(log_f)
    log_s[:-1] = log_g[::-1][1:]  # S(k) = sum_{j > k}
    log_s[-1] = -np.inf
    with np.errstate(invalid="ignore"):
        key = log_f - log_s
    key[-1] = np.inf
    if np.isnan(key).any():  # pragma: no cover - F and S cannot both be exact zeros
        raise AssertionError("CDF and survival function both zero")
    return key, (2.0 * err + e_f + e_g) * _BOUND_SLACK


def _monotone_bounds(key: np.ndarray, err: float) -> tuple[np.ndarray, np.ndarray]:
    """Monotone lower and upper bounds of an increasing function known to within ``err``.

    ``key`` itself was rounded once (the subtraction ``log F - log S``): ``U |key|`` more.
    Infinite entries are exact.
    """
    fin = np.isfinite(key)
    slack = np.where(fin, err + U * np.abs(np.where(fin, key, 0.0)), 0.0)
    lo = np.where(fin, np.nextafter(key - slack, -np.inf), key)
    hi = np.where(fin, np.nextafter(key + slack, np.inf), key)
    np.maximum.accumulate(lo, out=lo)
    hi = np.minimum.accumulate(hi[::-1])[::-1]
    return lo, hi


def cdf_bounds(key: np.ndarray, err: float) -> tuple[np.ndarray, np.ndarray]:
    """Monotone (lower, upper) bounds of a CDF key (:func:`cdf_key`), for
    :func:`quiltpriv.utils.distances.w_inf_bracket`."""
    err = check_positive(err, "err", allow_zero=True)
    return _monotone_bounds(check_log_vector(key, "key"), err)


# -- Laplace smoothing (the auditor) ---------------------------------------------------------


def laplace_log_density(log_pmf: np.ndarray, err: float,
                        scale: float) -> tuple[np.ndarray, float]:
    """``log sum_j P(j) exp(-|k - j| / s)`` at every ``k = 0..n``, and its error bound.

    The Laplace density of ``F + Lap(s)`` at ``k`` up to the factor ``1 / 2s`` common to every
    law. Left part ``sum_{j <= k}`` and right part ``sum_{j > k}`` are running sums with decay
    ``c = -1/s``. The float ``c`` is within ``2 U |c|`` of the intended ``-1/s`` (one rounding
    of the division, and half a unit more when ``scale`` is itself a rounded value, as for a
    rescaled linear query), which moves each exponent ``|k - j| c`` by at most
    ``2 (n + 1) U |c|``.
    """
    log_pmf, err = check_log_vector(log_pmf, "log_pmf"), check_positive(err, "err", allow_zero=True)
    scale = check_positive(scale, "scale")
    n = log_pmf.size - 1
    c = -1.0 / scale
    left, e_l = log_decay_cumsum(log_pmf, c)
    back, e_b = log_decay_cumsum(log_pmf[::-1], c)
    right = np.empty_like(left)
    right[:-1] = back[::-1][1:] + c
    right[-1] = -np.inf
    out = np.logaddexp(left, right)
    big_v = _max_abs_finite(log_pmf) + (n + 1.0) * abs(c) + math.log(n + 1.0)
    added = max(e_l, e_b) + U * (2.0 * (n + 2.0) * abs(c) + 3.0 * big_v + 2.0 * LIBM_ULPS + 1.0)
    return out, (err + added) * _BOUND_SLACK


def pair_loss_bounds(log_a: np.ndarray, err_a: float, log_b: np.ndarray,
                     err_b: float) -> tuple[float, float, int | None]:
    """Bracket of ``max_k log a(k) / b(k)`` over ``k`` with ``a(k) > 0``, and the argmax.

    ``+inf`` (exact) when some ``k`` has ``a(k) > 0 = b(k)``; ``-inf`` when ``a`` is zero
    everywhere.
    """
    log_a, log_b = check_log_vector(log_a, "log_a"), check_log_vector(log_b, "log_b")
    if log_a.shape != log_b.shape:
        raise ParameterError("the two laws must share the support 0..n")
    err_a = check_positive(err_a, "err_a", allow_zero=True)
    err_b = check_positive(err_b, "err_b", allow_zero=True)
    pos = np.isfinite(log_a)
    if not pos.any():
        return -math.inf, -math.inf, None
    if (pos & ~np.isfinite(log_b)).any():
        k = int(np.argmax(pos & ~np.isfinite(log_b)))
        return math.inf, math.inf, k
    with np.errstate(invalid="ignore"):  # -inf - -inf where neither law has mass
        diff = np.where(pos, log_a - log_b, -np.inf)
    k = int(np.argmax(diff))
    best = float(diff[k])
    slack = (err_a + err_b + U * _max_abs_finite(diff)) * _BOUND_SLACK
    return (math.nextafter(best - slack, -math.inf), math.nextafter(best + slack, math.inf), k)


def identical(components_a: Iterable[tuple[Fraction, Fraction]],
              components_b: Iterable[tuple[Fraction, Fraction]]) -> bool:
    """Whether two mixtures are the same law: the same positive weight on the same ``pi``."""
    def canon(comps: Iterable[tuple[Fraction, Fraction]]) -> dict[Fraction, Fraction]:
        out: dict[Fraction, Fraction] = {}
        for pi, w in comps:
            if w:
                out[pi] = out.get(pi, Fraction(0)) + w
        return out

    return canon(components_a) == canon(components_b)


#: Moved to :mod:`quiltpriv.utils.distances` with the other Wasserstein computations (the old name
#: still works, with a DeprecationWarning).
_MOVED = {"w_inf_bracket": "quiltpriv.utils.distances"}


def __getattr__(name: str) -> object:
    return moved_attribute(__name__, _MOVED, name)
