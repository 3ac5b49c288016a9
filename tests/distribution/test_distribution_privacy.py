"""Distribution privacy mechanisms ([CO23], Chen and Ohrimenko 2023)."""

import math
import random

import numpy as np
import pytest
from scipy import stats

from quiltpriv.distribution import distribution_privacy as dp
from quiltpriv.errors import ModelError, ParameterError, QuiltPrivError

# worked example after Theorem 4.5
MU = {1: [100.0, 101.0], 2: [99.0, 102.0]}
SIGMA = np.array([[22.0, -6.0], [-6.0, 13.0]])
COV = {1: SIGMA, 2: SIGMA}
EPS, DELTA = 1.0, 0.001


def test_constants_of_the_worked_example():
    c = dp.c_gaussian(DELTA)
    assert c == pytest.approx(3.7764795, abs=1e-7)
    d2 = dp.mean_difference_norm(MU)
    assert d2 == pytest.approx(math.sqrt(2), rel=1e-8)
    assert (c * d2 / EPS) ** 2 == pytest.approx(28.523595, abs=1e-6)
    assert (EPS / c) ** 2 == pytest.approx(0.0701174, abs=1e-7)


def test_eigm_worked_example():
    res = dp.eigm_gaussian(MU, COV, EPS, DELTA)
    v1 = np.array([1.0, 2.0]) / math.sqrt(5)
    v2 = np.array([2.0, -1.0]) / math.sqrt(5)
    assert v1 @ SIGMA @ v1 == pytest.approx(10)
    assert v2 @ SIGMA @ v2 == pytest.approx(25)
    s = res.covariance
    assert v1 @ s @ v1 == pytest.approx(18.523595, abs=1e-5)
    assert v2 @ s @ v2 == pytest.approx(3.523595, abs=1e-5)
    assert v1 @ s @ v2 == pytest.approx(0, abs=1e-9)
    np.testing.assert_allclose(s, [[6.5236, 6.0], [6.0, 15.5236]], atol=1e-4)
    # never less noise than the exact requirement
    assert v1 @ s @ v1 >= 28.52359532118539 - 10
    assert res.epsilon == EPS and res.delta == DELTA and res.noise == "gaussian"
    # with the noise the Mahalanobis term equals (eps/c_G)^2 and Corollary A.1 holds
    chk = dp.gaussian_noise_check(MU, COV, EPS, DELTA, s)
    assert chk.holds
    assert chk.worst == pytest.approx(0.0701174, abs=1e-7)
    assert chk.bound == pytest.approx(0.0701174, abs=1e-7)


def test_no_noise_fails_in_worked_example():
    chk = dp.no_noise_check(MU, COV, EPS, DELTA)
    assert not chk.holds
    assert chk.worst == pytest.approx(0.092, abs=1e-12)
    assert chk.bound == pytest.approx(0.0701174, abs=1e-7)


def test_no_noise_holds_with_enough_adversarial_uncertainty():
    big = {1: 100 * SIGMA, 2: 100 * SIGMA}
    chk = dp.no_noise_check(MU, big, EPS, DELTA)
    assert chk.holds and chk.worst == pytest.approx(0.00092)


def test_isotropic_baseline_of_worked_example():
    # 28.52 in both directions without using the data's own variance
    res = dp.expm_gaussian(MU, EPS, DELTA)
    np.testing.assert_allclose(res.covariance, 28.523595 * np.eye(2), rtol=1e-6)
    assert res.covariance[0, 0] >= 28.52359532118539


def test_daum_worked_example_closed_form():
    res = dp.daum_gaussian(MU, COV, EPS, DELTA)
    v = np.array([1.0, -1.0]) / math.sqrt(2)
    u = v @ np.linalg.solve(SIGMA, v)
    assert u == pytest.approx(23 / 500)
    want = 28.52359532118539 - 500 / 23
    assert v @ res.covariance @ v == pytest.approx(want, rel=1e-7)
    assert v @ res.covariance @ v >= want
    assert dp.gaussian_noise_check(MU, COV, EPS, DELTA, res.covariance).holds
    # DauM adds far less noise than EigM and ExpM here
    assert np.trace(res.covariance) < np.trace(dp.eigm_gaussian(MU, COV, EPS, DELTA).covariance)


def test_daum_closed_form_equals_bisection_on_random_covariances():
    rng = np.random.default_rng(7)
    for _ in range(25):
        m = int(rng.integers(2, 6))
        a = rng.normal(size=(m, m))
        cov = a @ a.T + 0.1 * np.eye(m)
        v = rng.normal(size=m)
        v /= np.linalg.norm(v)
        alpha = float(rng.uniform(0.1, 5))
        eps = float(rng.choice([0.2, 0.5, 1.0]))
        mu = {"a": np.zeros(m), "b": alpha * v}
        res = dp.daum_gaussian(mu, {"a": cov, "b": cov}, eps, DELTA, pairs=[("b", "a")])
        closed = float(v @ res.covariance @ v)
        ref = dp.daum_variance_bisection(cov, v, alpha, eps, DELTA)
        assert closed == pytest.approx(ref, rel=1e-6, abs=1e-9)
        assert closed >= ref * (1 - 1e-12)


def test_figure_1_wasserstein_and_closeness():
    pts = [1, 2, 3, 100]
    mu = ["0.6", "0.2", "0", "0.2"]
    nu = ["0.4", "0.3", "0.2", "0.1"]
    laws = {"mu": (pts, mu), "nu": (pts, nu)}
    w = dp.wasserstein_mechanism_1d(laws, 1.0)
    assert w.sensitivity == 97 and w.laplace_scale == pytest.approx(97) and w.delta == 0
    assert dp.closeness_1d(pts, mu, pts, nu, 0.1) == 1
    assert dp.closeness_1d(pts, mu, pts, nu, 0.05) == 97
    a = dp.approximate_wasserstein_mechanism_1d(laws, 0.5, 0.1)
    assert a.sensitivity == 1 and a.laplace_scale == pytest.approx(2) and a.delta == 0.1


def test_table2_group_dp_gaussian_expected_error():
    # per-record sensitivities of the five Adult queries ([CO23, Sec. 5]): L2 = 1.8750467
    sens = np.array([0.73, 0.15, 1.0, 1.0, 0.98])
    assert np.linalg.norm(sens) == pytest.approx(1.8750467, abs=1e-7)
    assert sens.sum() == pytest.approx(3.86)
    table = {0.2: 7394.67, 1.0: 1539.93, 5.0: 293.17}  # mean of 50 runs in the paper
    chi5_mean = math.sqrt(2) * math.gamma(3) / math.gamma(2.5)
    chi5_sd = math.sqrt(5 - chi5_mean ** 2)
    for eps, paper in table.items():
        res = dp.group_dp_gaussian(float(np.linalg.norm(sens)), 100, 5, eps, DELTA)
        sigma = dp.c_gaussian(DELTA) * 100 * 1.8750467 / eps
        assert math.sqrt(res.covariance[0, 0]) == pytest.approx(sigma, rel=1e-6)
        err = res.expected_l2_error()
        assert err == pytest.approx(sigma * chi5_mean, rel=1e-6)
        # the paper's figure is a mean of 50 runs: within 2 standard errors of the closed form
        assert abs(paper - err) < 2 * sigma * chi5_sd / math.sqrt(50)
    assert dp.group_dp_gaussian(1.8750467, 100, 5, 1.0, DELTA).expected_l2_error() == \
        pytest.approx(1506.63, abs=0.01)


def test_expected_l2_norm_quadrature_against_monte_carlo():
    cov = np.diag([9.0, 1.0, 0.25])
    exact = dp.expected_l2_norm_gaussian(cov)
    rng = np.random.default_rng(3)
    z = rng.normal(size=(200_000, 3)) * np.sqrt(np.diag(cov))
    norms = np.linalg.norm(z, axis=1)
    assert abs(norms.mean() - exact) < 4 * norms.std() / math.sqrt(len(norms))
    assert dp.expected_l2_norm_gaussian(np.diag([4.0, 0, 0])) == \
        pytest.approx(2 * math.sqrt(2 / math.pi))


def test_expm_and_dirm_laplace_scales():
    mu = {"p45": [1.0, 2.0, 3.0], "p55": [2.0, 4.0, 5.0]}
    lap = dp.expm_laplace(mu, 0.5)
    assert lap.laplace_scale == pytest.approx(5 / 0.5) and lap.delta == 0
    dirm = dp.dirm_laplace({"a": [0.0, 0.0], "b": [3.0, 4.0]}, 2.0)
    assert dirm.laplace_scale == pytest.approx(2.5)
    np.testing.assert_allclose(np.abs(dirm.direction), [0.6, 0.8])
    g = dp.dirm_gaussian({"a": [0.0, 0.0], "b": [3.0, 4.0]}, 0.5, DELTA)
    assert g.covariance[1, 1] == pytest.approx(0.64 * (dp.c_gaussian(DELTA) * 5 / 0.5) ** 2)
    b = dp.bounded_query_mechanism(mu, 1.5, 1.0, 0.01)
    assert b.laplace_scale == pytest.approx(5 + 3) and b.delta == 0.01


def test_calibration_rules():
    r, _ = dp.mahalanobis_budget(0.5, DELTA)
    assert r == pytest.approx(0.5 / dp.c_gaussian(DELTA))
    ra, _ = dp.mahalanobis_budget(0.5, DELTA, "analytic")
    assert ra > r  # the exact profile allows more
    # analytic r sits on the exact profile
    a, b = ra / 2, 0.5 / ra
    exact_delta = stats.norm.cdf(a - b) - math.exp(0.5) * stats.norm.cdf(-a - b)
    assert exact_delta == pytest.approx(DELTA, rel=1e-6) and exact_delta <= DELTA
    # the paper's eps = 5 is verified exactly; eps = 20 is refused
    dp.expm_gaussian(MU, 5.0, DELTA)
    with pytest.raises(ParameterError, match="classical"):
        dp.expm_gaussian(MU, 20.0, DELTA)
    assert dp.expm_gaussian(MU, 20.0, DELTA, calibration="analytic").noise == "gaussian"


def test_relaxed_assumptions():
    g = dp.relaxed_max_divergence(1.0, 0.001, 0.1, 1e-4)
    assert g.epsilon == pytest.approx(1.2)
    assert g.delta == pytest.approx((1 + math.exp(1.1)) * 1e-4 + math.exp(0.1) * 0.001)
    w = dp.relaxed_wasserstein(1.0, 0.001, 0.3, 0.1)
    assert w.epsilon == pytest.approx(1.2) and w.delta == pytest.approx(math.exp(0.1) * 0.001)
    assert w.extra_laplace_scale == pytest.approx(3.0)


def test_release_is_seeded_only_on_request_and_has_the_planned_covariance():
    res = dp.eigm_gaussian(MU, COV, EPS, DELTA)
    a = res.sample_noise(4000, seed=1)
    assert np.array_equal(a, res.sample_noise(4000, seed=1))
    emp = np.cov(a.T)
    np.testing.assert_allclose(emp, res.covariance, atol=1.5)
    out = res.release([100.0, 101.0], seed=random.Random(2))
    assert out.shape == (2,)
    lap = dp.expm_laplace(MU, 1.0)
    x = lap.sample_noise(4000, seed=3)
    assert np.mean(np.abs(x)) == pytest.approx(lap.laplace_scale, rel=0.06)
    assert dp.dirm_laplace(MU, 1.0).sample_noise(seed=4) @ np.array([1.0, 1.0]) == \
        pytest.approx(0, abs=1e-9)


# ------------------------------------------------------------------ guards


def test_guard_eigenvectors_not_shared():
    cov = {1: SIGMA, 2: SIGMA}
    other = np.array([[5.0, 1.0], [1.0, 9.0]])
    with pytest.raises(ModelError, match="share eigenvectors"):
        dp.eigm_gaussian({1: [0, 0], 2: [1, 1], 3: [2, 2]}, {**cov, 3: other}, 0.5, DELTA,
                         pairs=[(1, 2), (3, 3)])


def test_guard_unequal_covariances_in_a_pair():
    with pytest.raises(ModelError, match="different covariances"):
        dp.no_noise_check(MU, {1: SIGMA, 2: 2 * SIGMA}, 0.5, DELTA)
    with pytest.raises(ModelError, match="different covariances"):
        dp.expm_laplace(MU, 0.5, covariances={1: SIGMA, 2: 2 * SIGMA})


def test_guard_direction():
    mu = {"a": [0.0, 0.0], "b": [1.0, 0.0], "c": [0.0, 1.0]}
    with pytest.raises(ModelError, match="outside the declared direction"):
        dp.dirm_laplace(mu, 1.0, direction=[1, 0])
    cov = {k: np.eye(2) for k in mu}
    with pytest.raises(ModelError, match="outside the declared direction"):
        dp.daum_gaussian(mu, cov, 0.5, DELTA, direction=[1, 0])
    with pytest.raises(ParameterError, match="non-zero"):
        dp.dirm_laplace(mu, 1.0, direction=[0, 0])


@pytest.mark.parametrize("call", [
    lambda: dp.expm_gaussian(MU, 0.0, DELTA),
    lambda: dp.expm_gaussian(MU, 0.5, 1.5),
    lambda: dp.expm_gaussian(MU, 0.5, DELTA, calibration="magic"),
    lambda: dp.expm_laplace({1: [1, 2], 2: [1, 2, 3]}, 1.0),
    lambda: dp.expm_laplace({1: [1, float("nan")], 2: [1, 2]}, 1.0),
    lambda: dp.expm_laplace(MU, 1.0, pairs=[(1, 7)]),
    lambda: dp.expm_laplace(MU, 1.0, pairs=[]),
    lambda: dp.eigm_gaussian(MU, {1: SIGMA}, 0.5, DELTA),
    lambda: dp.eigm_gaussian(MU, {1: [[1, 2], [0, 1]], 2: [[1, 2], [0, 1]]}, 0.5, DELTA),
    lambda: dp.eigm_gaussian(MU, {1: -SIGMA, 2: -SIGMA}, 0.5, DELTA),
    lambda: dp.wasserstein_mechanism_1d({"a": ([1], [1])}, 1.0),
    lambda: dp.closeness_1d([1], [1], [2], [1], 1.0),
    lambda: dp.group_dp_gaussian(1.0, 0, 5, 1.0, DELTA),
    lambda: dp.bounded_query_mechanism(MU, -1.0, 1.0, 0.01),
    lambda: dp.relaxed_max_divergence(1.0, 0.001, -0.1, 0.0),
])
def test_guards_raise_named_errors(call):
    with pytest.raises(QuiltPrivError):
        call()


def test_laplace_l2_error_refuses_without_closed_form():
    with pytest.raises(ParameterError, match="closed form"):
        dp.expm_laplace(MU, 1.0).expected_l2_error()
    assert dp.expm_laplace(MU, 1.0).expected_l1_error() == pytest.approx(2 * 2)


@pytest.mark.parametrize("eps", [1.0, 2.0, 5.0, 10.0, 20.0])
def test_classical_constant_is_checked_exactly_above_eps_1(eps):
    # c_G = sqrt(2 ln(1.25 / delta)) is a theorem for eps < 1 only [DR14, Thm. A.1]; above, the
    # package accepts it iff the exact profile [BW18, Thm. 8] of sigma = c_G / eps (sensitivity
    # 1) gives delta(eps) <= delta. Reference in 50-digit mpmath: accepted at eps 1, 2, 5
    # (Table 2's eps), refused at 10 and 20.
    import mpmath

    with mpmath.workdps(50):
        c = mpmath.sqrt(2 * mpmath.log(mpmath.mpf(1.25) / mpmath.mpf(DELTA)))
        sigma = c / eps
        exact = (mpmath.ncdf(1 / (2 * sigma) - eps * sigma)
                 - mpmath.exp(eps) * mpmath.ncdf(-1 / (2 * sigma) - eps * sigma))
    if exact <= DELTA:
        assert eps <= 5.0
        r, _ = dp.mahalanobis_budget(eps, DELTA, "classical")
        # r = eps / c_G, rounded down (a larger sigma = Delta / r): within a safety margin
        assert eps / float(c) * (1 - 1e-8) <= r <= eps / float(c)
        dp.expm_gaussian(MU, eps, DELTA)
    else:
        assert eps >= 10.0
        with pytest.raises(ParameterError, match="classical"):
            dp.mahalanobis_budget(eps, DELTA, "classical")
