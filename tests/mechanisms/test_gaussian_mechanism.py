"""APGM: Section 4.3 closed forms, [ZOC22, Alg. 1] from moments, calibrations, APGMnG lambda_eta."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.mechanisms.apgm import (
    ConditionalMoments,
    GaussianRecordModel,
    apgm,
    apgm_gaussian_columns,
    apgm_non_gaussian,
    gaussian_sigma,
    smoothed_max_divergence,
)
from quiltpriv.mechanisms.calibration import SAFETY_RTOL

EPS, DELTA = 0.5, 1e-5
C = math.sqrt(2 * math.log(1.25 / DELTA))
# the calibration's safety rule puts sigma at most ~3e-9 (relative) above c Delta / eps, so
# sigma^2 at most ~6e-9 above the paper's closed form
RTOL = 8 * SAFETY_RTOL


def test_section43_first_covariance():
    v = np.array([[1.0, 0.5], [0.5, 2.0]])
    m = GaussianRecordModel([0.0, 0.0], v, ("i", "j"))
    r = apgm_gaussian_columns(m, 100, "j", {"i": [0, 1]}, EPS, DELTA)
    # hand: Delta = 0.5/1 * 1, Var = (2 - 0.25)/100
    expected = (C * 0.5 / EPS) ** 2 - 1.75 / 100
    assert r.sigma2 == pytest.approx(expected, rel=RTOL)
    assert r.sigma2 >= expected  # rounding only adds noise
    assert r.sensitivity["i"] == pytest.approx(0.5)


def test_section43_negative_correlation_uses_absolute_value():
    v = np.array([[4.0, -1.2, 0.0], [-1.2, 1.0, 0.0], [0.0, 0.0, 3.0]])
    m = GaussianRecordModel([1.0, 2.0, 3.0], v, ("a", "b", "c"))
    r = apgm_gaussian_columns(m, 50, "b", {"a": [-1.0, 0.0, 2.0]}, EPS, DELTA)
    delta_f = 1.2 / 4.0 * 3.0  # |V_ab| / V_aa * d(U)
    var = (1.0 - 1.44 / 4.0) / 50
    assert r.sigma2 == pytest.approx((C * delta_f / EPS) ** 2 - var, rel=RTOL)
    # the uncorrelated column c needs no noise
    z = apgm_gaussian_columns(m, 50, "c", {"a": [-1.0, 0.0, 2.0]}, EPS, DELTA)
    assert z.sigma2 == 0.0 and z.sigma == 0.0 and z.binding_attribute is None
    assert z.release(7.25).value == 7.25
    assert z.accuracy(0.05) == 0.0


def test_section43_theta_takes_max_delta_and_min_variance():
    v1 = np.array([[1.0, 0.3], [0.3, 1.0]])
    v2 = np.array([[1.0, 0.6], [0.6, 1.0]])
    ms = [GaussianRecordModel([0, 0], v, ("i", "j")) for v in (v1, v2)]
    r = apgm_gaussian_columns(ms, 10, "j", {"i": [0, 2]}, EPS, DELTA)
    expected = (C * 0.6 * 2 / EPS) ** 2 - (1 - 0.36) / 10
    assert r.sigma2 == pytest.approx(expected, rel=RTOL)


def test_section43_vector_query_matches_generic_apgm():
    v = np.array([[2.0, 0.4, -0.3], [0.4, 1.0, 0.2], [-0.3, 0.2, 1.5]])
    m = GaussianRecordModel([0, 0, 0], v, ("s", "h", "w"))
    n, u = 30, [0.0, 1.5]
    r = apgm_gaussian_columns(m, n, ["h", "w"], {"s": u}, EPS, DELTA)
    cross = v[1:, 0]
    means = {a: cross / v[0, 0] * a for a in u}
    cov = (v[1:, 1:] - np.outer(cross, cross) / v[0, 0]) / n
    g = apgm({"s": [ConditionalMoments(means, cov)]}, EPS, DELTA)
    assert r.sigma2 == pytest.approx(g.sigma2, rel=1e-9)
    assert r.dimension == 2
    assert r.accuracy(0.1) == pytest.approx(r.sigma * math.sqrt(stats.chi2.ppf(0.9, 2)))
    out = r.release([1.0, 2.0], seed=3)
    assert len(out) == 2


def test_from_dataframe():
    rng = np.random.default_rng(0)
    x = rng.multivariate_normal([1, 2], [[1, 0.8], [0.8, 1]], size=500)
    df = pd.DataFrame(x, columns=["a", "b"])
    m = GaussianRecordModel.from_dataframe(df)
    assert np.allclose(m.covariance, np.cov(x, rowvar=False))
    assert np.allclose(m.mean, x.mean(axis=0))


def test_generic_apgm_and_theorem2():
    thetas = [ConditionalMoments({0: 0.0, 1: 1.0, 2: 2.0}, 0.5),
              ConditionalMoments({0: 0.0, 1: 0.5, 2: 1.0}, 0.2)]
    r = apgm({"x": thetas}, EPS, DELTA)
    expected = (C * 2.0 / EPS) ** 2 - 0.2
    assert r.sigma2 == pytest.approx(expected, rel=RTOL)
    assert r.accuracy(0.05) == pytest.approx(math.sqrt(r.sigma2) * stats.norm.ppf(0.975))
    # a large conditional variance hides the secret: no noise
    big = apgm({"x": [ConditionalMoments({0: 0.0, 1: 0.1}, 100.0)]}, EPS, DELTA)
    assert big.sigma2 == 0.0
    # restricted pairs
    r2 = apgm({"x": thetas}, EPS, DELTA, pairs={"x": [(0, 1)]})
    assert r2.sensitivity["x"] == pytest.approx(1.0)


def test_total_variance_meets_the_gaussian_mechanism():
    # Theorem 1's proof: Var(F|g) + sigma2 >= (c Delta / eps)^2 for every theta
    r = apgm({"x": [ConditionalMoments({0: 0.0, 1: 3.0}, 1.0)]}, EPS, DELTA)
    assert 1.0 + r.sigma2 >= (C * 3.0 / EPS) ** 2


def test_analytic_calibration_meets_delta_exactly():
    def prof(sig, eps):  # Balle-Wang exact delta for sensitivity 1
        a, b = 1 / (2 * sig), eps * sig
        return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)

    for eps in (0.3, 1.0, 4.0):
        s = gaussian_sigma(1.0, eps, 1e-6, calibration="analytic")
        assert prof(s, eps) <= 1e-6
        assert prof(s * (1 - 1e-6), eps) > 1e-6 * (1 - 1e-6)  # and it is tight
    assert gaussian_sigma(1.0, 0.5, 1e-5, calibration="analytic") < gaussian_sigma(1.0, 0.5, 1e-5)


def _hockey(p, q, c, w):
    return np.trapezoid(np.maximum(p - c * q, 0), w)


def test_smoothed_max_divergence_sound_and_tight():
    # binomial count vs its moment-matched Gaussian, released with sigma = 1
    n, pr, s, eta = 12, 0.3, 1.0, 1e-3
    xs = np.arange(n + 1)
    ps = stats.binom.pmf(xs, n, pr)
    mu, var = n * pr, n * pr * (1 - pr)
    lam = smoothed_max_divergence(xs, ps, mu, var, s, eta)
    w = np.linspace(-30, 45, 1_500_001)
    p = sum(pk * stats.norm.pdf(w, xk, s) for xk, pk in zip(xs, ps, strict=True))
    q = stats.norm.pdf(w, mu, math.sqrt(var + s * s))

    def worst(lmb):
        c = math.exp(lmb)
        return max(_hockey(p, q, c, w), _hockey(q, p, c, w))

    assert worst(lam) <= eta * (1 + 1e-6)  # sound: the bound holds at lambda
    assert worst(max(0.0, lam - 0.02)) > eta  # and lambda is not grossly loose


def test_smoothed_max_divergence_closed_form_one_atom():
    # P = N(0, s^2), Q = N(0, tau^2): D^eta(Q||P) has a closed form via the two crossing points
    s, v, eta = 1.0, 0.5, 1e-3
    tau = math.sqrt(v + s * s)
    lam = smoothed_max_divergence([0.0], [1.0], 0.0, v, s, eta)

    def h_qp(lmb):  # int (q - e^l p)_+ : q wins outside |w| < r
        c = math.exp(lmb)
        r2 = 2 * (lmb + math.log(tau / s)) / (1 / s**2 - 1 / tau**2)
        r = math.sqrt(r2)
        return 2 * (stats.norm.sf(r, 0, tau) - c * stats.norm.sf(r, 0, s))

    assert h_qp(lam) <= eta * (1 + 1e-9)
    assert h_qp(lam - 0.01) > eta


def test_apgm_non_gaussian_binomial_guarantee():
    # Example-2-like dataset privacy with n = 20: F | g = a ~ Bin(a, 0.4) + Bin(20 - a, 0.6)
    n = 20
    xs = np.arange(n + 1)

    def law(a):
        return xs, np.convolve(stats.binom.pmf(np.arange(a + 1), a, 0.4),
                               stats.binom.pmf(np.arange(n - a + 1), n - a, 0.6))

    laws = {"X2": [{a: law(a) for a in (0, 10, 20)}]}
    eps0, d0, eta = 0.5, 1e-5, 1e-3
    r = apgm_non_gaussian(laws, eps0, d0, eta)
    assert r.sigma > 0 and math.isfinite(r.lambda_eta) and r.lambda_eta >= 0
    lam = r.lambda_eta
    assert r.epsilon == pytest.approx(eps0 + 2 * lam)
    assert r.delta == pytest.approx(math.exp(lam) * d0 + (1 + math.exp(eps0 + lam)) * eta)
    # default approximations: true means, common variance
    approx = r.approximations["X2"][0]
    assert approx[0][0] == pytest.approx(12.0) and approx[20][0] == pytest.approx(8.0)
    assert len({v for _, v in approx.values()}) == 1
    assert r.plan.sensitivity["X2"] == pytest.approx(4.0)


def test_apgm_non_gaussian_without_noise_has_no_guarantee():
    xs = np.arange(3)
    laws = {"g": [{0: (xs, [0.25, 0.5, 0.25]), 1: (xs, [0.26, 0.5, 0.24])}]}
    r = apgm_non_gaussian(laws, 0.5, 1e-5, 1e-3)
    assert r.sigma == 0 and math.isinf(r.lambda_eta) and math.isinf(r.epsilon)
    r2 = apgm_non_gaussian(laws, 0.5, 1e-5, 1e-3, min_sigma=1.0)
    assert math.isfinite(r2.epsilon)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: GaussianRecordModel([0, 0], [[1, 2], [2, 1]], ("a", "b")), ModelError,
         "positive semi-definite"),
        (lambda: GaussianRecordModel([0, 0], [[1, 0.1], [0.2, 1]], ("a", "b")), ModelError,
         "symmetric"),
        (lambda: apgm({"x": [ConditionalMoments({0: 0.0, 1: 1.0}, [[-1.0]])]}, EPS, DELTA),
         ModelError, "positive semi-definite"),
        (lambda: apgm({"x": [ConditionalMoments({0: 0.0, 1: 1.0}, 1.0)]}, EPS, 0.0),
         ParameterError, "delta"),
        (lambda: apgm({"x": [ConditionalMoments({0: 0.0, 1: 1.0}, 1.0)]}, EPS, 1.0),
         ParameterError, "delta"),
        (lambda: apgm({"x": [ConditionalMoments({}, 1.0)]}, EPS, DELTA), ParameterError,
         "secret set is empty"),
        (lambda: apgm({"x": [ConditionalMoments({0: 0.0}, 1.0)]}, 20.0, DELTA), ParameterError,
         "analytic"),
        (lambda: apgm_gaussian_columns(GaussianRecordModel([0, 0], np.eye(2), ("a", "b")), 10,
                                       "b", {"a": []}, EPS, DELTA), ParameterError, "empty"),
        (lambda: apgm_gaussian_columns(
            GaussianRecordModel([0, 0], [[0.0, 0.0], [0.0, 1.0]], ("a", "b")), 10, "b",
            {"a": [0, 1]}, EPS, DELTA), ModelError, "zero variance"),
        (lambda: apgm_gaussian_columns(GaussianRecordModel([0, 0], np.eye(2), ("a", "b")), 10,
                                       "zz", {"a": [0, 1]}, EPS, DELTA), Exception, "zz"),
        (lambda: apgm_non_gaussian({"g": [{0: ([0, 1], [0.5, 0.5]), 1: ([0, 1], [0.4, 0.6])}]},
                                   EPS, DELTA, 1e-3,
                                   approximations={"g": [{0: (0.5, 0.25), 1: (0.6, 0.24)}]}),
         ParameterError, "one variance"),
    ],
)
def test_bad_inputs(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
