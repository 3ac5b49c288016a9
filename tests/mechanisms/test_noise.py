"""Tests of quiltpriv.mechanisms.noise: exact discrete samplers (CKS 2020) and the release API.

Statistical tests are seeded, hence deterministic: each either passes or the sampler is wrong.
Acceptance rules are fixed in advance: chi-square goodness of fit with p > 1e-4 on 20,000
samples (bins with expected count >= 5, tails merged), frequencies within 4.5 standard errors,
sample means within 5 standard errors and sample variances within 5 standard errors of the
exact variance of the discrete distribution.
"""

from __future__ import annotations

import math
import random
import secrets
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms import noise

N = 20_000
P_MIN = 1e-4


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def dlap_pmf(k: np.ndarray, t: float) -> np.ndarray:
    """Exact pmf of the discrete Laplace: (1-e^{-1/t})/(1+e^{-1/t}) e^{-|k|/t}."""
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * np.exp(-np.abs(k) / t)


def dgauss_pmf(k: np.ndarray, sigma2: float) -> np.ndarray:
    support = np.arange(-2000, 2001)
    norm = np.exp(-(support**2) / (2 * sigma2)).sum()
    return np.exp(-(np.asarray(k) ** 2) / (2 * sigma2)) / norm


def dlap_var(t: float) -> float:
    q = math.exp(-1.0 / t)
    return 2 * q / (1 - q) ** 2


def chi_square_p(samples, pmf) -> tuple[float, int]:
    """p-value of a chi-square fit of integer samples to pmf (symmetric, unimodal at 0)."""
    samples = np.asarray(samples, dtype=np.int64)
    n = samples.size
    kmax = 0
    while n * pmf(np.array([kmax + 1]))[0] >= 5:
        kmax += 1
    inner = np.arange(-kmax, kmax + 1)
    expected = n * pmf(inner)
    tail = (n - expected.sum()) / 2  # mass beyond +-kmax, split evenly (pmf symmetric)
    expected[0] += tail
    expected[-1] += tail
    clipped = np.clip(samples, -kmax, kmax)
    observed = np.array([(clipped == k).sum() for k in inner])
    assert observed.sum() == n
    return float(stats.chisquare(observed, expected).pvalue), inner.size


class SpyRandom(random.SystemRandom):
    """secrets.SystemRandom stand-in that counts the random bits it hands out."""

    instances = 0
    calls = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        SpyRandom.instances += 1

    def getrandbits(self, k):
        SpyRandom.calls += 1
        return super().getrandbits(k)


class BitsOnly:
    """An rng offering only getrandbits: the samplers must need nothing else."""

    def __init__(self, seed):
        self._r = random.Random(seed)

    def getrandbits(self, k):
        return self._r.getrandbits(k)


# ------------------------------------------------------------------------------------------
# [CKS20, Alg. 1]: Bernoulli(exp(-gamma))
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [Fraction(1, 3), Fraction(1), Fraction(5, 2), 4, 0.7])
def test_bernoulli_exp_neg_frequency(gamma):
    rng = random.Random(11)
    hits = sum(noise.bernoulli_exp_neg(gamma, rng) for _ in range(N))
    p = math.exp(-float(gamma))
    se = math.sqrt(p * (1 - p) / N)
    assert abs(hits / N - p) <= 4.5 * se, (gamma, hits / N, p)


def test_bernoulli_exp_neg_gamma_zero_is_always_one():
    rng = random.Random(0)
    assert all(noise.bernoulli_exp_neg(0, rng) for _ in range(1000))


def test_bernoulli_exp_neg_large_gamma_is_rare_and_cheap():
    rng = random.Random(5)
    # exp(-10**6) is 0 to any precision; expected cost is O(1) despite floor(gamma) = 10**6
    assert not any(noise.bernoulli_exp_neg(Fraction(10**6), rng) for _ in range(2000))


# ------------------------------------------------------------------------------------------
# [CKS20, Alg. 2, Alg. 3]: pmf by chi-square
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", [Fraction(7, 3), Fraction(1, 2), 3, Fraction(40)])
def test_discrete_laplace_pmf(t):
    rng = random.Random(2024)
    samples = [noise.discrete_laplace(t, rng) for _ in range(N)]
    p, bins = chi_square_p(samples, lambda k: dlap_pmf(k, float(t)))
    assert bins >= 5
    assert p > P_MIN, (t, p)


@pytest.mark.parametrize("sigma2", [Fraction(17, 4), Fraction(1, 3), 25])
def test_discrete_gaussian_pmf(sigma2):
    rng = random.Random(77)
    samples = [noise.discrete_gaussian(sigma2, rng) for _ in range(N)]
    p, bins = chi_square_p(samples, lambda k: dgauss_pmf(k, float(sigma2)))
    assert bins >= 3
    assert p > P_MIN, (sigma2, p)


def test_chi_square_helper_rejects_a_wrong_sampler():
    # the acceptance rule has power: discrete Laplace t=3 samples judged against t=2.5 fail
    rng = random.Random(2024)
    samples = [noise.discrete_laplace(3, rng) for _ in range(N)]
    p, _ = chi_square_p(samples, lambda k: dlap_pmf(k, 2.5))
    assert p < P_MIN


def test_samplers_need_only_getrandbits_and_match_random_random():
    a = [noise.discrete_laplace(Fraction(5, 2), BitsOnly(9)) for _ in range(1)]
    b = [noise.discrete_laplace(Fraction(5, 2), random.Random(9)) for _ in range(1)]
    assert a == b
    r1, r2 = BitsOnly(4), random.Random(4)
    assert [noise.discrete_gaussian(3, r1) for _ in range(50)] == [
        noise.discrete_gaussian(3, r2) for _ in range(50)
    ]


# ------------------------------------------------------------------------------------------
# laplace() / gaussian()
# ------------------------------------------------------------------------------------------


def test_default_granularity_values():
    assert noise.default_granularity(1.0) == 2.0**-20
    assert noise.default_granularity(3.0) == 2.0**-19
    assert noise.default_granularity(2.0**-30) == 2.0**-50
    assert noise.default_granularity(1e9) == 1.0  # capped: integers stay on the grid
    assert noise.default_granularity(5e-324) == 5e-324  # smallest subnormal, never 0


def test_laplace_mean_and_variance():
    scale = 2.5
    x = noise.laplace(scale, N, seed=1)
    g = noise.default_granularity(scale)
    var = g**2 * dlap_var(scale / g)  # = 2 scale^2 to ~1e-12 relative
    assert var == pytest.approx(2 * scale**2, rel=1e-9)
    assert abs(x.mean()) <= 5 * math.sqrt(var / N)
    # sample variance of Laplace data: relative standard error sqrt((kurtosis - 1)/N) = sqrt(5/N)
    assert abs(x.var() / var - 1) <= 5 * math.sqrt(5 / N)


def test_gaussian_mean_and_variance():
    sigma = 1.7
    x = noise.gaussian(sigma, N, seed=2)
    assert abs(x.mean()) <= 5 * sigma / math.sqrt(N)
    assert abs(x.var() / sigma**2 - 1) <= 5 * math.sqrt(2 / N)


@pytest.mark.parametrize("scale", [0.1, 2.5, 3e6])
def test_default_grid_laplace_and_gaussian_match_continuous_cdf(scale):
    # with g <= scale * 2**-20 the discrete law is within ~1e-6 of the continuous one in
    # Kolmogorov distance, far below what 20,000 samples can see
    x = noise.laplace(scale, N, seed=21)
    assert stats.kstest(x, "laplace", args=(0, scale)).pvalue > P_MIN
    y = noise.gaussian(scale, N, seed=22)
    assert stats.kstest(y, "norm", args=(0, scale)).pvalue > P_MIN


def test_laplace_with_coarse_grid_is_discrete_laplace_on_the_grid():
    # scale 1.5 on grid 0.5 -> K discrete Laplace with t = 3
    x = noise.laplace(1.5, N, seed=3, granularity=0.5)
    k = x / 0.5
    assert np.all(k == np.round(k))
    p, _ = chi_square_p(k.astype(np.int64), lambda kk: dlap_pmf(kk, 3.0))
    assert p > P_MIN


def test_gaussian_with_coarse_grid_is_discrete_gaussian_on_the_grid():
    # sigma 1.25 on grid 0.25 -> K discrete Gaussian with sigma^2 = 25
    x = noise.gaussian(1.25, N, seed=4, granularity=0.25)
    k = x / 0.25
    assert np.all(k == np.round(k))
    p, _ = chi_square_p(k.astype(np.int64), lambda kk: dgauss_pmf(kk, 25.0))
    assert p > P_MIN


@pytest.mark.parametrize("fn", [noise.laplace, noise.gaussian])
@pytest.mark.parametrize("scale", [1.0, 0.1, 37.0, 3e6])
def test_output_lies_on_the_default_grid(fn, scale):
    g = noise.default_granularity(scale)
    x = fn(scale, 500, seed=5)
    k = x / g
    assert np.all(k == np.round(k))
    assert np.all(np.abs(k) < 2.0**53)  # so g*K was exactly representable
    assert np.unique(x).size > 400  # not degenerate


def test_integer_query_plus_noise_stays_on_the_grid():
    x = 1234 + noise.laplace(0.8, 200, seed=6)
    g = noise.default_granularity(0.8)
    assert np.all((x / g) == np.round(x / g))


def test_shapes_and_scalars():
    assert isinstance(noise.laplace(1.0, seed=1), float)
    assert isinstance(noise.gaussian(1.0, seed=1), float)
    assert noise.laplace(1.0, (2, 3), seed=1).shape == (2, 3)
    assert noise.gaussian(1.0, 0, seed=1).shape == (0,)
    # a vector is the same stream as repeated scalar draws from one seeded generator
    r = random.Random(8)
    assert noise.laplace(1.0, 4, seed=8).tolist() == [noise.laplace(1.0, seed=r) for _ in range(4)]


@pytest.mark.parametrize("fn", [noise.laplace, noise.gaussian])
def test_scale_zero_gives_exact_zeros(fn):
    assert fn(0.0) == 0.0
    assert fn(0, 5).tolist() == [0.0] * 5


# ------------------------------------------------------------------------------------------
# randomness source
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [noise.laplace, noise.gaussian])
def test_default_path_draws_from_secrets_system_random(fn, monkeypatch):
    monkeypatch.setattr(secrets, "SystemRandom", SpyRandom)
    SpyRandom.instances = SpyRandom.calls = 0
    fn(1.0, 3)
    assert SpyRandom.instances == 1 and SpyRandom.calls > 0
    SpyRandom.instances = SpyRandom.calls = 0
    fn(1.0, 3, seed=1)
    assert SpyRandom.instances == 0 and SpyRandom.calls == 0


def test_release_default_path_is_secure_and_recorded(monkeypatch):
    monkeypatch.setattr(secrets, "SystemRandom", SpyRandom)
    SpyRandom.calls = 0
    rec = noise.laplace_release(10.0, 1.0, 1.0)
    assert SpyRandom.calls > 0
    assert rec.secure is True and "SystemRandom" in rec.sampler
    rec = noise.gaussian_release(10.0, 1.0, 1.0)
    assert rec.secure is True and "discrete Gaussian" in rec.sampler


def test_unseeded_calls_differ_and_seeded_calls_agree():
    assert noise.laplace(1.0, 4).tolist() != noise.laplace(1.0, 4).tolist()
    assert noise.gaussian(1.0, 4).tolist() != noise.gaussian(1.0, 4).tolist()
    assert noise.laplace(1.0, 4, seed=3).tolist() == noise.laplace(1.0, 4, seed=3).tolist()
    assert noise.gaussian(1.0, 4, seed=3).tolist() == noise.gaussian(1.0, 4, seed=3).tolist()
    a = noise.laplace_release(5.0, 1.0, 1.0, seed=3)
    assert a == noise.laplace_release(5.0, 1.0, 1.0, seed=3)
    assert a.secure is False and "NOT for production" in a.sampler


def test_random_instance_seed_gives_a_reproducible_stream():
    r1, r2 = random.Random(12), random.Random(12)
    a = [noise.laplace(1.0, seed=r1) for _ in range(3)]
    b = [noise.laplace(1.0, seed=r2) for _ in range(3)]
    assert a == b and len(set(a)) == 3


def test_noise_source_description():
    assert noise.noise_source() == noise.NoiseSource(
        secure=True, sampler="CKS exact discrete Laplace, secrets.SystemRandom (os.urandom)"
    )
    src = noise.noise_source(7, distribution="Gaussian")
    assert src.secure is False and "Gaussian" in src.sampler and "NOT" in src.sampler
    assert noise.noise_source(random.SystemRandom()).secure is True
    with pytest.raises(ParameterError, match="distribution"):
        noise.noise_source(distribution="Cauchy")


# ------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "1", True, None])
@pytest.mark.parametrize("fn", [noise.laplace, noise.gaussian])
def test_invalid_scale_raises(fn, bad):
    with pytest.raises(ParameterError):
        fn(bad)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"granularity": 0.3}, "power of two"),
        ({"granularity": 0.0}, "granularity"),
        ({"granularity": -0.5}, "granularity"),
        ({"seed": 1.5}, "seed"),
        ({"seed": "abc"}, "seed"),
        ({"size": -1}, "size"),
        ({"size": 2.5}, "size"),
        ({"size": (2, -1)}, "size"),
    ],
)
def test_invalid_options_raise(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        noise.laplace(1.0, **kwargs)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: noise.bernoulli_exp_neg(-1), "gamma"),
        (lambda: noise.bernoulli_exp_neg(float("nan")), "gamma"),
        (lambda: noise.discrete_laplace(0), "t"),
        (lambda: noise.discrete_laplace(Fraction(-1, 2)), "t"),
        (lambda: noise.discrete_gaussian(float("inf")), "sigma2"),
        (lambda: noise.discrete_gaussian(0), "sigma2"),
        (lambda: noise.discrete_laplace(1, rng=object()), "getrandbits"),
        (lambda: noise.laplace_release(float("nan"), 1.0, 1.0), "value"),
        (lambda: noise.laplace_release(1.0, 1.0, -1.0), "sensitivity"),
        (lambda: noise.gaussian_release(1.0, -2.0, 1.0), "sigma"),
        (lambda: noise.snap(1.0, 3.0), "power of two"),
    ],
)
def test_invalid_sampler_and_release_arguments(call, match):
    with pytest.raises(ParameterError, match=match):
        call()


def test_exact_samplers_default_to_the_secure_source(monkeypatch):
    monkeypatch.setattr(secrets, "SystemRandom", SpyRandom)
    SpyRandom.calls = 0
    noise.discrete_laplace(2)
    noise.discrete_gaussian(2)
    noise.bernoulli_exp_neg(Fraction(1, 2))
    assert SpyRandom.calls > 0


# ------------------------------------------------------------------------------------------
# snapping and releases
# ------------------------------------------------------------------------------------------


def test_snap_examples():
    assert noise.snap(0.3, 0.25) == 0.25
    assert noise.snap(-0.3, 0.25) == -0.25
    assert noise.snap(0.375, 0.25) == 0.5  # tie 1.5 -> 2 (half to even)
    assert noise.snap(0.125, 0.25) == 0.0  # tie 0.5 -> 0
    assert noise.snap(7.0, 1.0) == 7.0
    assert noise.snap(0.1, 2.0**-60) == 0.1  # already on a grid finer than its ulp


@settings(max_examples=200, deadline=None)
@given(
    x=st.floats(-1e12, 1e12, allow_nan=False),
    y=st.floats(-1e12, 1e12, allow_nan=False),
    e=st.integers(-30, 10),
)
def test_snap_error_and_sensitivity_bound(x, y, e):
    g = 2.0**e
    sx, sy = Fraction(noise.snap(x, g)), Fraction(noise.snap(y, g))
    assert abs(sx - Fraction(x)) <= Fraction(g) / 2
    assert (sx / Fraction(g)).denominator == 1
    assert abs(sx - sy) <= abs(Fraction(x) - Fraction(y)) + Fraction(g)


def test_laplace_release_inflation_formula_explicit_grid():
    # t*g = b (Delta + g)/Delta = 2 * 1.25 / 1 = 2.5
    rec = noise.laplace_release(0.3, 2.0, 1.0, seed=1, granularity=0.25)
    assert rec.noise_scale_used == 2.5
    assert rec.granularity == 0.25
    assert (rec.value / 0.25).is_integer()  # released value on the grid although 0.3 is not


def test_laplace_release_inflation_formula_default_grid():
    b, delta = 2.0, 1.0
    rec = noise.laplace_release(0.3, b, delta, seed=1)
    g = 2.0**-20  # 2**-20 * min(b, delta) rounded down to a power of two
    assert rec.granularity == g
    assert rec.noise_scale_used == b * (delta + g) / delta  # exact in binary here
    # the promise: epsilon for the snapped query (Delta+g)/(t g) <= Delta/b
    assert Fraction(delta + g) / Fraction(rec.noise_scale_used) <= Fraction(delta) / Fraction(b)
    # a tiny sensitivity gets a fine grid, so inflation stays <= 1 + 2**-20
    rec = noise.laplace_release(0.3, 1.0, 1e-9, seed=1)
    assert rec.granularity <= 1e-9 * 2.0**-20
    assert 1.0 <= rec.noise_scale_used <= 1.0 + 2.0**-20


def test_laplace_release_noise_is_discrete_laplace_of_the_inflated_t():
    # b = 2, Delta = 1, g = 0.25: t = b (Delta + g) / (Delta g) = 10
    rng = random.Random(31)
    snapped = noise.snap(0.3, 0.25)
    k = [
        round((noise.laplace_release(0.3, 2.0, 1.0, seed=rng, granularity=0.25).value - snapped)
              / 0.25)
        for _ in range(N)
    ]
    p, _ = chi_square_p(k, lambda kk: dlap_pmf(kk, 10.0))
    assert p > P_MIN


def test_gaussian_release_inflation_and_distribution():
    # sigma' = sigma (Delta + g)/Delta = 1 * 0.625/0.5 = 1.25; K has sigma^2 = (1.25/0.125)^2
    rng = random.Random(32)
    recs = [noise.gaussian_release(2.9, 1.0, 0.5, seed=rng, granularity=0.125) for _ in range(N)]
    assert {r.noise_scale_used for r in recs} == {1.25}
    snapped = noise.snap(2.9, 0.125)
    k = [round((r.value - snapped) / 0.125) for r in recs]
    p, _ = chi_square_p(k, lambda kk: dgauss_pmf(kk, 100.0))
    assert p > P_MIN


@pytest.mark.parametrize("fn", [noise.laplace_release, noise.gaussian_release])
def test_release_scale_zero_returns_value_unchanged(fn):
    rec = fn(0.3, 0.0, 1.0)
    assert rec.value == 0.3  # not even snapped
    assert rec.noise_scale_used == 0.0 and rec.granularity == 0.0
    assert rec.secure is False and "no privacy" in rec.sampler


def test_release_sensitivity_zero_uses_requested_scale():
    rec = noise.laplace_release(4.0, 1.0, 0.0, seed=2, granularity=0.5)
    assert rec.noise_scale_used == 1.0
    rec = noise.gaussian_release(4.0, 3.0, 0.0, seed=2, granularity=0.5)
    assert rec.noise_scale_used == 3.0


def test_noisy_value_is_frozen():
    rec = noise.laplace_release(1.0, 1.0, 1.0, seed=1)
    with pytest.raises(AttributeError):
        rec.value = 2.0  # type: ignore[misc]


def test_vector_release_pays_the_grid_once_per_coordinate():
    # d coordinates snapped to g * Z move an L1 distance by up to d * g: the noise parameter
    # covers Delta + d g (exactly), and the default grid shrinks with d so the inflation stays
    # at most 1 + 2**-20.
    from quiltpriv.mechanisms.noise import laplace_release

    b, delta = 3.0, 2.0
    for d in (1, 2, 7, 1000):
        r = laplace_release(0.3, b, delta, seed=1, dimension=d)
        g = Fraction(r.granularity)
        assert g <= Fraction(2) ** -20 * Fraction(min(b, delta)) / d
        assert Fraction(r.noise_scale_used) == Fraction(b) * (Fraction(delta) + d * g) / Fraction(
            delta)
        assert r.noise_scale_used <= b * (1 + 2**-20)
    with pytest.raises(ParameterError, match="dimension"):
        laplace_release(0.3, b, delta, seed=1, dimension=0)
