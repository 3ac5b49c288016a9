"""Exact discrete noise for differentially private releases.

Why this module exists
----------------------
Textbook samplers compute Laplace noise as ``-b * sign(u) * log(1 - 2|u|)`` in floating point.
The set of floats such a sampler can output around a true value ``x`` depends on ``x``, so the
low-order bits of ``x + noise`` reveal ``x`` (Mironov 2012, "On significance of the least
significant bits for differential privacy"); the released number is then not differentially
private at all.

The defence used here
---------------------
Noise is ``g * K`` where ``g`` is a power of two (the *granularity*) and ``K`` is an integer
drawn **exactly** from the discrete Laplace or discrete Gaussian distribution by the
rational-arithmetic rejection samplers of Canonne, Kamath and Steinke (2020, "The Discrete
Gaussian for Differential Privacy", CKS):

* :func:`bernoulli_exp_neg` -- Bernoulli(exp(-gamma)), [CKS20, Alg. 1];
* :func:`discrete_laplace` -- P(K = k) proportional to exp(-|k|/t), [CKS20, Alg. 2];
* :func:`discrete_gaussian` -- P(K = k) proportional to exp(-k^2/(2 sigma^2)), [CKS20, Alg. 3].

All parameters are exact rationals (a float is converted exactly with ``Fraction(x)``) and the
only randomness is uniform integers from ``rng.getrandbits``. No float is ever involved in
choosing ``K``, so the distribution of ``K`` is exactly the stated one.

Randomness source
-----------------
``seed=None`` (the default everywhere) draws from :class:`secrets.SystemRandom` (the operating
system CSPRNG, ``os.urandom``). ``seed=<int>`` uses ``random.Random(seed)`` (Mersenne Twister):
reproducible, **not secure, for experiments only** -- its output is predictable from a few
hundred samples. A ``random.Random`` instance may also be passed as ``seed`` to draw a
reproducible *stream* across several calls (passing the same int twice gives the same noise
twice, which is what reproducibility means but is wrong for two independent releases).
:func:`noise_source` and :class:`NoisyValue` record which source was used.

What the guarantee is
---------------------
Let ``q`` be a query whose values lie on the grid ``g * Z`` and whose neighbouring values differ
by at most ``Delta`` (a multiple of ``g``). Releasing ``q + g * K`` with ``K`` discrete Laplace
of parameter ``t`` is exactly ``(Delta / (t * g))``-DP (the geometric mechanism; a shift by
``m = Delta/g`` grid steps changes each probability by at most ``exp(m/t)``). With ``K``
discrete Gaussian of variance parameter ``s^2`` it is ``(Delta/g)^2 / (2 s^2)``-zCDP (CKS,
concentrated-DP theorem for the discrete Gaussian), the same as the continuous Gaussian
mechanism with standard deviation ``g * s``.

Integer counts are on the grid whenever ``g`` is a power of two ``<= 1``; the default
granularity of :func:`laplace` / :func:`gaussian` is capped at 1 for that reason. Converting
``g * K`` to a float is exact while ``|K| < 2**53``; IEEE addition is correctly rounded, so for an
on-grid float ``x``, ``x + laplace(...)`` is a deterministic function of the exact private value
``x + g*K`` and stays private (post-processing). For a value **not** on the grid the exact sum
reveals ``x mod g``: use :func:`laplace_release` / :func:`gaussian_release`, which snap the
value to the grid first, pay for the snapping by inflating the noise (sensitivity ``Delta``
becomes ``Delta + g``), form the sum exactly and round it to a float once.

Vectors and categories
----------------------
:func:`laplace_release_vector` / :func:`gaussian_release_vector` release a vector on one grid,
paying for the snapping by the dimension (``Delta + d g`` in L1, ``Delta + sqrt(d) g`` in L2,
``sqrt(d)`` bounded above by :func:`sqrt_upper`). Local mechanisms release an index:
:func:`categorical` (rational weights, one uniform integer, no float cumulative sum),
:func:`exponential_categorical` (``P(i)`` proportional to ``exp(-gamma_i)`` by uniform
proposals and :func:`bernoulli_exp_neg`) and :func:`uniform_index` sample exactly, so a
mechanism's probability ratios hold exactly however small its probabilities are.

Every release of the package draws its randomness here; ``tests/mechanisms/
test_one_noise_module.py`` fails on a random generator used anywhere else (bar a commented
allow-list of experiments). docs/noise.md says, mechanism by mechanism, how each output is
sampled and why its low bits carry nothing.

Range
-----
A scale above :data:`MAX_NOISE_SCALE` (about 8.8e304) is refused before anything is drawn:
its noise could overflow the float range (and would carry no information anyway). Below it,
a draw leaves half the float range with probability at most ``exp(-TAIL_FACTOR)`` = e^-1024
(Laplace; far less for the Gaussian); should the exact sum ever round beyond the largest float,
it is clamped to +-``sys.float_info.max`` -- a deterministic function of the exact private sum,
so post-processing, never an error that would depend on the data.

Cost
----
Measured here (Python 3.11, AMD EPYC, one core, 20,000-sample runs; see docs/noise.md), per
sample: :func:`laplace` 5-6.5 us secure / 1.1-1.5 us seeded; :func:`gaussian` 9-13 us secure /
2.3-3 us seeded; :func:`laplace_release` / :func:`gaussian_release` 20-29 us per call (one
generator set-up per call dominates). The secure path costs more because every
``getrandbits`` is an ``os.urandom`` system call. ``size`` is a plain Python loop
(numpy's float Laplace: 0.2 us).
"""

from __future__ import annotations

import math
import random
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational, Real
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from quiltpriv.errors import ParameterError
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_positive

#: What a ``seed`` parameter accepts (see :func:`make_rng`). The ``_check_*`` helpers below
#: take ``object``: they validate untrusted input into these types.
Seed = int | random.Random | None

__all__ = [
    "DEFAULT_RELATIVE_GRANULARITY_BITS",
    "MAX_NOISE_SCALE",
    "TAIL_FACTOR",
    "NoiseSource",
    "NoisyValue",
    "RandomBits",
    "bernoulli_exp_neg",
    "categorical",
    "check_noise_scale",
    "default_granularity",
    "discrete_gaussian",
    "discrete_laplace",
    "exponential_categorical",
    "gaussian",
    "gaussian_release",
    "gaussian_release_vector",
    "laplace",
    "laplace_release",
    "laplace_release_vector",
    "make_rng",
    "noise_source",
    "snap",
    "sqrt_upper",
    "uniform_index",
]

#: The default grid step is the largest power of two <= (scale * 2**-20), capped at 1, so the
#: discretisation changes the noise distribution by a relative 1e-6 at most.
DEFAULT_RELATIVE_GRANULARITY_BITS = 20

#: Noise beyond ``TAIL_FACTOR`` scales has probability at most ``exp(-TAIL_FACTOR)`` (Laplace).
TAIL_FACTOR = 1024

#: The largest noise scale drawn: its noise stays within half the float range except with
#: probability ``exp(-TAIL_FACTOR)`` (about 1e-445).
MAX_NOISE_SCALE = sys.float_info.max / (2 * TAIL_FACTOR)

_SECURE_SOURCE = "secrets.SystemRandom (os.urandom)"
_SEEDED_SOURCE = "seeded random.Random (Mersenne Twister): reproducible, NOT for production"


class RandomBits(Protocol):
    """The only interface the exact samplers need: ``getrandbits(k)`` -> uniform k-bit int."""

    def getrandbits(self, k: int, /) -> int: ...


@dataclass(frozen=True)
class NoiseSource(JSONResult):
    """Where noise comes from.

    Attributes
    ----------
    secure : bool
        True iff the randomness is the operating system CSPRNG (``secrets.SystemRandom``).
    sampler : str
        Human-readable description of the exact sampler and the randomness source.
    """

    secure: bool
    sampler: str


@dataclass(frozen=True)
class NoisyValue(JSONResult):
    """A value released with exact discrete noise.

    Attributes
    ----------
    value : float
        The released value: ``snap(true value) + g * K`` computed exactly, rounded to a float once.
    noise_scale_used : float
        The scale actually used (Laplace ``t * g`` or Gaussian ``sigma``), after the inflation
        that pays for snapping; >= the requested scale. Rounded to the nearest float for display.
    granularity : float
        The grid step ``g`` (a power of two); 0.0 when no noise was added.
    secure : bool
        True iff the noise came from ``secrets.SystemRandom``.
    sampler : str
        Which exact sampler and which randomness source produced the noise.
    """

    value: float
    noise_scale_used: float
    granularity: float
    secure: bool
    sampler: str


# --------------------------------------------------------------------------------------------
# Randomness
# --------------------------------------------------------------------------------------------


def make_rng(seed: int | random.Random | None = None) -> random.Random:
    """Return the randomness source for ``seed``.

    Parameters
    ----------
    seed : None, int or random.Random
        ``None`` -> a fresh ``secrets.SystemRandom()`` (secure, the default). An ``int`` ->
        ``random.Random(seed)``: reproducible, NOT secure, for experiments only. A
        ``random.Random`` instance is returned unchanged (use it to draw a reproducible stream
        over several calls).
    """
    if seed is None:
        return secrets.SystemRandom()
    if isinstance(seed, random.Random):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ParameterError(
            f"seed must be None (secure), an int or a random.Random, got {type(seed).__name__}"
        )
    return random.Random(int(seed))


def _is_secure(rng: RandomBits) -> bool:
    return isinstance(rng, random.SystemRandom)


def noise_source(seed: int | random.Random | None = None, *, distribution: str = "Laplace"
                 ) -> NoiseSource:
    """Describe the source :func:`laplace` / :func:`gaussian` use for this ``seed``.

    Mechanisms that call :func:`laplace` directly should store this in their results.
    """
    if distribution not in ("Laplace", "Gaussian"):
        raise ParameterError(f"distribution must be 'Laplace' or 'Gaussian', got {distribution!r}")
    return _describe(make_rng(seed), distribution)


def _describe(rng: RandomBits, distribution: str) -> NoiseSource:
    algo = f"CKS exact discrete {distribution}"
    if _is_secure(rng):
        return NoiseSource(secure=True, sampler=f"{algo}, {_SECURE_SOURCE}")
    return NoiseSource(secure=False, sampler=f"{algo}, {_SEEDED_SOURCE}")


def _check_rng(rng: object) -> RandomBits:
    if rng is None:
        return secrets.SystemRandom()
    if not callable(getattr(rng, "getrandbits", None)):
        raise ParameterError(
            f"rng must provide getrandbits(k) (e.g. secrets.SystemRandom()), got {rng!r}"
        )
    return rng  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# Exact samplers on integers (internal: parameters are positive int numerator/denominator)
# --------------------------------------------------------------------------------------------


def _uniform_below(n: int, rng: RandomBits) -> int:
    """Uniform integer in [0, n) by rejection from getrandbits (exact; acceptance >= 1/2)."""
    if n == 1:
        return 0
    k = (n - 1).bit_length()
    while True:
        r = rng.getrandbits(k)
        if r < n:
            return r


def _bern_exp_neg(num: int, den: int, rng: RandomBits) -> bool:
    """Bernoulli(exp(-num/den)) for integers num >= 0, den >= 1 ([CKS20, Alg. 1])."""
    whole, num = divmod(num, den)
    # gamma > 1: exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac(gamma)); stop at the first 0,
    # so the expected cost is O(1) however large gamma is.
    for _ in range(whole):
        if not _bern_exp_neg_le1(1, 1, rng):
            return False
    return _bern_exp_neg_le1(num, den, rng)


def _bern_exp_neg_le1(num: int, den: int, rng: RandomBits) -> bool:
    # gamma = num/den in [0, 1]: draw A_k ~ Bernoulli(gamma/k) until the first 0; the index K of
    # that first 0 is odd with probability sum_k (-gamma)^k/k! = exp(-gamma).
    if num == 0:
        return True
    k = 1
    while _uniform_below(den * k, rng) < num:
        k += 1
    return k % 2 == 1


def _discrete_laplace(num: int, den: int, rng: RandomBits) -> int:
    """Discrete Laplace with t = num/den: P(k) proportional to exp(-|k|/t) ([CKS20, Alg. 2])."""
    while True:
        u = _uniform_below(num, rng)
        if not _bern_exp_neg_le1(u, num, rng):
            continue
        # V ~ Geometric(1 - exp(-1)), so X = U + num*V ~ Geometric(1 - exp(-1/num)).
        v = 0
        while _bern_exp_neg_le1(1, 1, rng):
            v += 1
        y = (u + num * v) // den  # floor(X/den) ~ Geometric(1 - exp(-den/num)) = exp(-1/t)
        negative = rng.getrandbits(1) == 1
        if negative and y == 0:
            continue  # otherwise 0 would be counted twice
        return -y if negative else y


def _discrete_gaussian(p: int, q: int, rng: RandomBits) -> int:
    """Discrete Gaussian with sigma^2 = p/q ([CKS20, Alg. 3])."""
    t = math.isqrt(p * q) // q + 1  # floor(sqrt(p/q)) + 1, exactly
    two_pq_t2 = 2 * p * q * t * t
    qt = q * t
    while True:
        y = _discrete_laplace(t, 1, rng)
        # accept with probability exp(-(|y| - sigma^2/t)^2 / (2 sigma^2))
        #   = exp(-(|y| q t - p)^2 / (2 p q t^2))
        if _bern_exp_neg((abs(y) * qt - p) ** 2, two_pq_t2, rng):
            return y


# --------------------------------------------------------------------------------------------
# Public exact samplers
# --------------------------------------------------------------------------------------------


def _as_fraction(x: object, name: str, *, allow_zero: bool) -> Fraction:
    """Exact rational value of x (int, Fraction or float); raise on negative/NaN/inf."""
    if isinstance(x, bool) or not isinstance(x, Real | np.number):
        raise ParameterError(f"{name} must be a number, got {x!r}")
    if isinstance(x, Rational):
        f = Fraction(int(x.numerator), int(x.denominator))
    else:
        check_positive(x, name, allow_zero=True)  # NaN / inf / negative messages
        f = Fraction(float(x))
    if f < 0 or (f == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ParameterError(f"{name} must be {bound}, got {x}")
    return f


def bernoulli_exp_neg(gamma: Fraction | int | float, rng: RandomBits | None = None) -> bool:
    """Exact Bernoulli(exp(-gamma)) sample ([CKS20, Alg. 1]).

    Parameters
    ----------
    gamma : Fraction, int or float
        gamma >= 0, taken as an exact rational (a float is converted exactly).
    rng : object with ``getrandbits(k)``, optional
        ``None`` -> ``secrets.SystemRandom()``; ``random.Random(seed)`` for experiments.
    """
    g = _as_fraction(gamma, "gamma", allow_zero=True)
    return _bern_exp_neg(g.numerator, g.denominator, _check_rng(rng))


def discrete_laplace(t: Fraction | int | float, rng: RandomBits | None = None) -> int:
    """Exact discrete Laplace sample: P(K = k) = (1-e^{-1/t})/(1+e^{-1/t}) * e^{-|k|/t}.

    [CKS20, Alg. 2]. ``t > 0`` is an exact rational; ``rng`` as in :func:`bernoulli_exp_neg`.
    Adding ``K`` to an integer query of sensitivity ``Delta`` is ``(Delta/t)``-DP.
    """
    f = _as_fraction(t, "t", allow_zero=False)
    return _discrete_laplace(f.numerator, f.denominator, _check_rng(rng))


def discrete_gaussian(sigma2: Fraction | int | float, rng: RandomBits | None = None) -> int:
    """Exact discrete Gaussian sample: P(K = k) proportional to exp(-k^2 / (2 sigma2)).

    [CKS20, Alg. 3]. ``sigma2 > 0`` is an exact rational (the *variance parameter*; the actual
    variance is slightly below ``sigma2``). Adding ``K`` to an integer query of sensitivity
    ``Delta`` is ``Delta^2/(2 sigma2)``-zCDP. ``rng`` as in :func:`bernoulli_exp_neg`.
    """
    f = _as_fraction(sigma2, "sigma2", allow_zero=False)
    return _discrete_gaussian(f.numerator, f.denominator, _check_rng(rng))


# --------------------------------------------------------------------------------------------
# Grid
# --------------------------------------------------------------------------------------------


def default_granularity(scale: float) -> float:
    """Largest power of two <= ``scale * 2**-20``, capped at 1 (and at least 2**-1074).

    The cap at 1 keeps integers on the grid, so integer-valued queries (counts) need no
    snapping; below the cap the grid is 2**20 times finer than the noise, so the discrete
    distribution is indistinguishable in utility from the continuous one.
    """
    s = check_positive(scale, "scale")
    exponent = math.frexp(s)[1] - 1 - DEFAULT_RELATIVE_GRANULARITY_BITS  # 2**(e-1) <= s < 2**e
    return math.ldexp(1.0, max(min(exponent, 0), -1074))


def _check_granularity(granularity: object) -> Fraction:
    g = check_positive(granularity, "granularity")
    if math.frexp(g)[0] != 0.5:
        raise ParameterError(
            f"granularity must be a power of two (so that g*K is an exact float), got {g!r}"
        )
    return Fraction(g)


def _check_finite(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real | np.number):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ParameterError(f"{name} must be finite, got {x}")
    return x


def check_noise_scale(scale: object, name: str = "scale") -> float:
    """Return ``scale`` as a float, or raise unless it is finite, >= 0 and drawable.

    Drawable means at most :data:`MAX_NOISE_SCALE`: larger noise can overflow the float range,
    so it is refused before anything is drawn.
    """
    b = check_positive(scale, name, allow_zero=True)
    _check_drawable(b, name)
    return b


def _check_drawable(scale: float | Fraction, name: str, *, slack: int = 1) -> None:
    # slack = 2 for a scale after the snapping inflation: that one may use the whole float
    # range, so the default grid's inflation (1 + 2**-20) never refuses an accepted scale.
    if scale > slack * MAX_NOISE_SCALE:
        shown = (f"= {_fmt(float(scale), 4, rounding='up')}" if scale <= sys.float_info.max
                 else "(beyond the float range)")
        raise ParameterError(
            f"{name} {shown} is too large to draw: noise of that scale can overflow the float "
            f"range (at most {_fmt(slack * MAX_NOISE_SCALE, 3, rounding='down')}), and would "
            "carry no information "
            "about the value anyway")


def _to_float(x: Fraction) -> float:
    """``x`` rounded to a float, clamped to +-``sys.float_info.max`` (post-processing)."""
    try:
        return float(x)
    except OverflowError:
        return sys.float_info.max if x > 0 else -sys.float_info.max


def _ldexp(k: int, exponent: int) -> float:
    """``k * 2**exponent`` as a float, clamped like :func:`_to_float`."""
    try:
        return math.ldexp(k, exponent)
    except OverflowError:
        return sys.float_info.max if k > 0 else -sys.float_info.max


def _snap_exact(value: float, g: Fraction) -> Fraction:
    # round-half-even to the nearest multiple of g: |snap(x) - x| <= g/2, exact in rationals
    return round(Fraction(value) / g) * g


def snap(value: float, granularity: float) -> float:
    """Round ``value`` to the nearest multiple of the power-of-two ``granularity`` (ties to even).

    The result is exact (a multiple of a power of two near a float is a float).
    ``|snap(x) - x| <= g/2``, hence ``|snap(x) - snap(x')| <= |x - x'| + g``: snapping a query of
    sensitivity ``Delta`` gives a grid-valued query of sensitivity at most ``Delta + g``.
    """
    x = _check_finite(value, "value")
    return float(_snap_exact(x, _check_granularity(granularity)))


# --------------------------------------------------------------------------------------------
# Continuous-looking API
# --------------------------------------------------------------------------------------------


def _check_size(size: object) -> tuple[int, ...] | None:
    if size is None:
        return None
    dims = (size,) if not isinstance(size, tuple | list) else tuple(size)
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0:
            raise ParameterError(f"size must be None, an int >= 0 or a tuple of them, got {size!r}")
        out.append(int(d))
    return tuple(out)


def _grid(scale: float, granularity: object) -> tuple[Fraction, int]:
    if granularity is None:
        g = default_granularity(scale)
    else:
        g = float(_check_granularity(granularity))
    return Fraction(g), math.frexp(g)[1] - 1  # g == 2**exponent


def _draw(sample: Callable[[], int], exponent: int,
          size: tuple[int, ...] | None) -> float | NDArray[np.float64]:
    # float(g*K) = ldexp(K, exponent): exact for |K| < 2**53, a deterministic function of K
    # otherwise (post-processing either way).
    if size is None:
        return _ldexp(sample(), exponent)
    n = math.prod(size)
    out = np.empty(n, dtype=float)
    for i in range(n):
        out[i] = _ldexp(sample(), exponent)
    return out.reshape(size)


def _zeros(size: tuple[int, ...] | None) -> float | NDArray[np.float64]:
    return 0.0 if size is None else np.zeros(size, dtype=float)


def laplace(scale: float, size: int | tuple[int, ...] | None = None, *,
            seed: int | random.Random | None = None,
            granularity: float | None = None) -> float | NDArray[np.float64]:
    """Laplace-like noise ``g * K`` with ``K`` exact discrete Laplace of ``t = scale / g``.

    Parameters
    ----------
    scale : float
        The Laplace scale ``b >= 0`` (noise ``~ b * Lap(1)``); 0 returns exact zeros.
    size : None, int or tuple of int
        ``None`` returns a float, otherwise an ndarray of that shape (independent samples).
    seed : None, int or random.Random
        ``None`` (default): ``secrets.SystemRandom``. An int: ``random.Random(seed)``,
        reproducible and NOT secure (experiments only). See :func:`make_rng`.
    granularity : float, optional
        Power-of-two grid step ``g``; default :func:`default_granularity` (``scale * 2**-20``
        rounded down to a power of two, at most 1).

    Returns
    -------
    float or numpy.ndarray
        Exact multiples of ``g``. For a query ``x`` on the grid ``g * Z`` with sensitivity
        ``Delta``, ``x + laplace(scale)`` is ``(Delta/scale)``-DP exactly; off-grid values
        need :func:`laplace_release`. Cost: a Python loop, ~5 us per sample (secure).
    """
    b = check_noise_scale(scale, "scale")
    shape = _check_size(size)
    if b == 0:
        return _zeros(shape)
    g, exponent = _grid(b, granularity)
    t = Fraction(b) / g
    num, den = t.numerator, t.denominator
    rng = make_rng(seed)
    return _draw(lambda: _discrete_laplace(num, den, rng), exponent, shape)


def gaussian(sigma: float, size: int | tuple[int, ...] | None = None, *,
             seed: int | random.Random | None = None,
             granularity: float | None = None) -> float | NDArray[np.float64]:
    """Gaussian-like noise ``g * K`` with ``K`` exact discrete Gaussian of variance ``(sigma/g)^2``.

    Parameters as in :func:`laplace` (``sigma`` is the standard-deviation parameter). For a
    query on the grid with sensitivity ``Delta``, ``x + gaussian(sigma)`` is
    ``Delta^2/(2 sigma^2)``-zCDP exactly (CKS); off-grid values need :func:`gaussian_release`.
    """
    s = check_noise_scale(sigma, "sigma")
    shape = _check_size(size)
    if s == 0:
        return _zeros(shape)
    g, exponent = _grid(s, granularity)
    sigma2 = (Fraction(s) / g) ** 2
    p, q = sigma2.numerator, sigma2.denominator
    rng = make_rng(seed)
    return _draw(lambda: _discrete_gaussian(p, q, rng), exponent, shape)


# --------------------------------------------------------------------------------------------
# Releases of possibly off-grid values
# --------------------------------------------------------------------------------------------


def _release_grid(scale: float, sensitivity: float, granularity: object,
                  dimension: int = 1) -> Fraction:
    if granularity is not None:
        return _check_granularity(granularity)
    # grid 2**20 * dimension times finer than both the noise and the sensitivity, so the
    # inflation factor (Delta + dimension * g)/Delta is at most 1 + 2**-20
    basis = min(scale, sensitivity) if sensitivity > 0 else scale
    return Fraction(default_granularity(basis / dimension))


def _no_noise(value: float) -> NoisyValue:
    return NoisyValue(value=value, noise_scale_used=0.0, granularity=0.0, secure=False,
                      sampler="none: scale 0, value released without noise (no privacy)")


def laplace_release(value: float, scale: float, sensitivity: float, *,
                    seed: int | random.Random | None = None,
                    granularity: float | None = None, dimension: int = 1) -> NoisyValue:
    """Release ``value`` with exact discrete Laplace noise, as private as ``scale`` promises.

    The caller's promise: ``value`` has sensitivity ``Delta = sensitivity`` and noise of scale
    ``b = scale`` would give ``epsilon = Delta / b``. Here ``value`` is snapped to the grid
    ``g * Z`` (sensitivity becomes ``Delta + g``, see :func:`snap`) and ``g * K`` is added with
    ``K`` discrete Laplace of parameter ``t = b (Delta + g) / (Delta g)`` (exactly), so that
    ``t * g = b (Delta + g) / Delta`` and the released value is ``(Delta + g)/(t g) = Delta/b``
    -DP. With ``Delta = 0`` the snapped value is constant and ``t = b / g``. The sum is formed
    exactly and rounded to a float once (post-processing).

    Parameters
    ----------
    value : float
        The true query value.
    scale : float
        Requested Laplace scale ``b >= 0``; 0 releases ``value`` unchanged with no privacy.
    sensitivity : float
        ``Delta >= 0``.
    seed, granularity
        As in :func:`laplace`; the default ``g`` is the largest power of two
        ``<= 2**-20 * min(scale, sensitivity) / dimension`` (at most 1), so the inflation is
        <= 1 + 2**-20.
    dimension : int
        ``d``, the number of coordinates of a vector query whose coordinates are released by
        ``d`` calls with one scale and an L1 ``sensitivity``: snapping each coordinate moves an
        L1 distance by up to ``d g``, so ``t = b (Delta + d g) / (Delta g)``.
    """
    x = _check_finite(value, "value")
    b = check_noise_scale(scale, "scale")
    delta = check_positive(sensitivity, "sensitivity", allow_zero=True)
    dimension = _check_dimension(dimension)
    if b == 0:
        return _no_noise(x)
    g = _release_grid(b, delta, granularity, dimension)
    bf, df = Fraction(b), Fraction(delta)
    t = bf * (df + dimension * g) / (df * g) if delta > 0 else bf / g
    _check_drawable(t * g, "the inflated scale", slack=2)  # a coarse granularity inflates it
    rng = make_rng(seed)
    k = _discrete_laplace(t.numerator, t.denominator, rng)
    src = _describe(rng, "Laplace")
    return NoisyValue(value=_to_float(_snap_exact(x, g) + g * k), noise_scale_used=float(t * g),
                      granularity=float(g), secure=src.secure, sampler=src.sampler)


def gaussian_release(value: float, sigma: float, sensitivity: float, *,
                     seed: int | random.Random | None = None,
                     granularity: float | None = None, dimension: int = 1) -> NoisyValue:
    """Release ``value`` with exact discrete Gaussian noise, as private as ``sigma`` promises.

    As :func:`laplace_release`: ``value`` is snapped to ``g * Z`` (sensitivity ``Delta + g``)
    and the standard-deviation parameter is inflated to ``sigma' = sigma (Delta + g)/Delta``
    (exactly), so the zCDP parameter ``(Delta + g)^2 / (2 sigma'^2) = Delta^2 / (2 sigma^2)`` is
    what ``sigma`` promised for ``Delta``. ``K`` is discrete Gaussian with variance parameter
    ``(sigma'/g)^2``; ``noise_scale_used`` reports ``sigma'``.

    ``dimension`` (``d``): the coordinates of a vector query whose L2 sensitivity is
    ``Delta``, released by ``d`` calls with one ``sigma`` (see :func:`gaussian_release_vector`).
    Snapping each coordinate by at most ``g/2`` moves an L2 distance by at most ``sqrt(d) g``,
    so ``sigma' = sigma (Delta + R g) / Delta`` with ``R = sqrt_upper(d) >= sqrt(d)`` (exact when
    ``d`` is a square): the snapped vectors' L2 shift over ``sigma'`` is at most
    ``Delta / sigma``, and the d independent discrete Gaussians are ``Delta^2/(2 sigma^2)``-zCDP
    ([CKS20], multivariate discrete Gaussian), as the continuous mechanism with ``sigma`` was.
    """
    x = _check_finite(value, "value")
    s = check_noise_scale(sigma, "sigma")
    delta = check_positive(sensitivity, "sensitivity", allow_zero=True)
    d = _check_dimension(dimension)
    if s == 0:
        return _no_noise(x)
    g = _release_grid(s, delta, granularity, d)
    sigma_used = _inflated_sigma(Fraction(s), Fraction(delta), g, d)
    sigma2 = (sigma_used / g) ** 2
    rng = make_rng(seed)
    k = _discrete_gaussian(sigma2.numerator, sigma2.denominator, rng)
    src = _describe(rng, "Gaussian")
    return NoisyValue(value=_to_float(_snap_exact(x, g) + g * k),
                      noise_scale_used=float(sigma_used), granularity=float(g),
                      secure=src.secure, sampler=src.sampler)


def _check_dimension(dimension: object) -> int:
    if isinstance(dimension, bool) or not isinstance(dimension, int | np.integer) \
            or dimension < 1:
        raise ParameterError(f"dimension must be a whole number >= 1, got {dimension!r}")
    return int(dimension)


def _inflated_sigma(sigma: Fraction, delta: Fraction, g: Fraction, dimension: int) -> Fraction:
    """sigma (Delta + sqrt_upper(d) g) / Delta, exactly; refused when not drawable."""
    used = sigma * (delta + sqrt_upper(dimension) * g) / delta if delta > 0 else sigma
    _check_drawable(used, "the inflated sigma", slack=2)  # a coarse grid inflates it
    return used


def sqrt_upper(n: int) -> Fraction:
    """A rational ``R >= sqrt(n)``: exact for a perfect square, else within ``2**-40`` above.

    ``R = (isqrt(n * 4**40) + 1) / 2**40`` when ``n`` is not a square (``isqrt`` is exact
    integer arithmetic, so ``R^2 > n`` holds without any rounding).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ParameterError(f"sqrt_upper needs a whole number >= 0, got {n!r}")
    r = math.isqrt(n)
    if r * r == n:
        return Fraction(r)
    return Fraction(math.isqrt(n << 80) + 1, 1 << 40)


def gaussian_release_vector(values: object, sigma: float, sensitivity: float, *,
                            seed: int | random.Random | None = None,
                            granularity: float | None = None) -> tuple[NoisyValue, ...]:
    """Release a vector of L2 sensitivity ``sensitivity`` with i.i.d. exact discrete Gaussians.

    Every coordinate is snapped to one grid and charged for the vector:
    :func:`gaussian_release` with ``dimension = len(values)`` and one randomness source (a
    seeded stream gives the coordinates independent noise). The release is
    ``Delta^2/(2 sigma^2)``-zCDP, and (eps, delta)-DP whenever the continuous Gaussian
    mechanism with ``sigma`` and L2 sensitivity ``Delta`` is.
    """
    xs = _check_vector_values(values)
    rng = make_rng(seed)
    return tuple(gaussian_release(x, sigma, sensitivity, seed=rng, granularity=granularity,
                                  dimension=len(xs)) for x in xs)


def laplace_release_vector(values: object, scale: float, sensitivity: float, *,
                           seed: int | random.Random | None = None,
                           granularity: float | None = None) -> tuple[NoisyValue, ...]:
    """Release a vector of L1 sensitivity ``sensitivity`` with i.i.d. exact discrete Laplace.

    :func:`laplace_release` per coordinate with ``dimension = len(values)`` (the snapping is
    paid in L1: ``Delta + d g``) and one randomness source. ``(sensitivity / scale)``-DP.
    """
    xs = _check_vector_values(values)
    rng = make_rng(seed)
    return tuple(laplace_release(x, scale, sensitivity, seed=rng, granularity=granularity,
                                 dimension=len(xs)) for x in xs)


def _check_vector_values(values: object) -> list[float]:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError("values must be a 1-d sequence of finite numbers") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"values must be a non-empty 1-d sequence, got shape {arr.shape}")
    return [_check_finite(v, "value") for v in arr.tolist()]


# --------------------------------------------------------------------------------------------
# Categorical outputs (randomised response, exponential mechanism, tupling)
# --------------------------------------------------------------------------------------------


def uniform_index(n: int, rng: RandomBits | None = None) -> int:
    """A uniform integer in ``[0, n)``, exactly (rejection from ``getrandbits``).

    ``rng``: ``None`` -> ``secrets.SystemRandom()``; any object with ``getrandbits``.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ParameterError(f"n must be a whole number >= 1, got {n!r}")
    return _uniform_below(int(n), _check_rng(rng))


def _exact_weights(weights: object, name: str) -> list[Fraction]:
    try:
        items = list(weights)  # type: ignore[call-overload]
    except TypeError:
        raise ParameterError(f"{name} must be a sequence of numbers") from None
    if not items:
        raise ParameterError(f"{name} is empty")
    return [_as_fraction(w, f"{name}[{i}]", allow_zero=True) for i, w in enumerate(items)]


def categorical(weights: object, rng: RandomBits | None = None) -> int:
    """Index ``i`` with probability exactly ``w_i / sum_j w_j``.

    ``weights`` are non-negative exact rationals (ints, Fractions, or floats taken exactly with
    ``Fraction(x)``), not all zero. They are put over a common denominator ``L`` and one
    uniform integer ``U`` in ``[0, sum_j w_j L)`` picks the index by integer comparisons: no
    float cumulative sum, so every outcome of positive weight is possible and has exactly its
    probability (a weight-0 outcome never occurs).
    """
    ws = _exact_weights(weights, "weights")
    den = math.lcm(*(w.denominator for w in ws))
    ints = [w.numerator * (den // w.denominator) for w in ws]
    total = sum(ints)
    if total == 0:
        raise ParameterError("weights are all zero: no outcome to sample")
    u = _uniform_below(total, _check_rng(rng))
    for i, w in enumerate(ints):
        if u < w:
            return i
        u -= w
    raise AssertionError("unreachable: u < total")  # pragma: no cover


def exponential_categorical(gammas: object, rng: RandomBits | None = None) -> int:
    """Index ``i`` with probability exactly ``exp(-gamma_i) / sum_j exp(-gamma_j)``.

    ``gammas`` are exact rationals (a float is taken exactly); ``math.inf`` means weight 0.
    Rejection sampling: shift by ``m = min gamma``, propose ``i`` uniformly, accept with an
    exact Bernoulli(``exp(-(gamma_i - m))``) ([CKS20, Alg. 1]). An accepted ``i`` has
    probability proportional to ``exp(-gamma_i)``, with no rounding anywhere, so ratios such as
    the exponential mechanism's ``P(y | x) / P(y | x') <= e^eps`` hold exactly, however small
    the probabilities. At least one proposal in ``n`` is accepted on average (the minimum has
    ``gamma_i - m = 0``).
    """
    try:
        items = list(gammas)  # type: ignore[call-overload]
    except TypeError:
        raise ParameterError("gammas must be a sequence of numbers") from None
    if not items:
        raise ParameterError("gammas is empty")
    finite: list[Fraction | None] = []
    for i, g in enumerate(items):
        if isinstance(g, float | np.floating) and math.isinf(g) and g > 0:
            finite.append(None)
        else:
            if isinstance(g, bool) or not isinstance(g, Real | np.number):
                raise ParameterError(f"gammas[{i}] must be a number, got {g!r}")
            if not isinstance(g, Rational) and not math.isfinite(float(g)):
                raise ParameterError(f"gammas[{i}] must be finite or +inf, got {g!r}")
            finite.append(Fraction(g) if isinstance(g, Rational) else Fraction(float(g)))
    present = [g for g in finite if g is not None]
    if not present:
        raise ParameterError("every gamma is +inf: no outcome to sample")
    low = min(present)
    shifted = [None if g is None else g - low for g in finite]
    src = _check_rng(rng)
    n = len(shifted)
    while True:
        i = _uniform_below(n, src)
        gi = shifted[i]
        if gi is not None and _bern_exp_neg(gi.numerator, gi.denominator, src):
            return i
