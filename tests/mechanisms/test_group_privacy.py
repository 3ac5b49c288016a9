"""Group-DP baselines: Laplace n Delta / eps and Gaussian c_G n Delta / eps."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import special

from quiltpriv.distribution.distribution_privacy import group_dp_gaussian, group_dp_laplace
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.calibration import SAFETY_RTOL
from quiltpriv.mechanisms.group_dp import group_gaussian, group_laplace


def test_laplace_scale():
    r = group_laplace(1, 4, 1.0)  # Example 2 of the paper: Lap(4/eps)
    assert (r.scale, r.group_sensitivity, r.epsilon, r.delta) == (4.0, 4.0, 1.0, 0.0)
    assert group_laplace(0.5, 10, 0.25).scale == 20.0


def _exact_delta(sens, sigma, eps):
    """[BW18, Thm. 8] at sigma, straight from scipy.special."""
    a, b = sens / (2 * sigma), eps * sigma / sens
    return special.ndtr(a - b) - math.exp(eps) * special.ndtr(-a - b)


def test_gaussian_scale_classical():
    r = group_gaussian(1, 4, 0.5, 1e-5)
    c = math.sqrt(2 * math.log(1.25 / 1e-5))
    # the calibration's safety rule: at most a few 1e-9 (relative) above c n Delta / eps
    assert c * 4 / 0.5 <= r.scale <= c * 4 / 0.5 * (1 + 4 * SAFETY_RTOL)


def test_gaussian_analytic_is_smaller_and_allows_large_eps():
    a = group_gaussian(1, 4, 0.5, 1e-5, calibration="analytic")
    assert a.scale < group_gaussian(1, 4, 0.5, 1e-5).scale
    assert _exact_delta(4, a.scale, 0.5) <= 1e-5
    assert _exact_delta(4, a.scale * (1 - 1e-6), 0.5) > 1e-5  # and the least such sigma


@pytest.mark.parametrize("eps", [1.0, 2.0, 5.0])
def test_classical_at_large_eps_is_verified_not_refused(eps):
    # the one group-DP baseline: the classical sigma c_G n Delta / eps at eps >= 1 is kept when
    # the exact profile confirms it ([CO23] uses it at eps = 5), in both modules alike
    r = group_gaussian(1, 10, eps, 1e-3)
    c = math.sqrt(2 * math.log(1.25 / 1e-3))
    assert c * 10 / eps <= r.scale <= c * 10 / eps * (1 + 4 * SAFETY_RTOL)
    assert _exact_delta(10, r.scale, eps) <= 1e-3
    d = group_dp_gaussian(1, 10, 1, eps, 1e-3)
    assert d.covariance[0, 0] == r.scale ** 2
    assert d.sensitivity == r.group_sensitivity == 10.0


def test_classical_refused_where_the_exact_profile_fails():
    c = math.sqrt(2 * math.log(1.25 / 1e-3))
    assert _exact_delta(4, c * 4 / 20.0, 20.0) > 1e-3
    with pytest.raises(ParameterError, match="calibration='analytic'"):
        group_gaussian(1, 4, 20.0, 1e-3)
    with pytest.raises(ParameterError, match="calibration='analytic'"):
        group_dp_gaussian(1, 4, 2, 20.0, 1e-3)


def test_group_dp_laplace_is_group_laplace():
    g = group_laplace(0.3, 7, 0.9)
    d = group_dp_laplace(0.3, 7, 2, 0.9)
    assert d.laplace_scale == g.scale and d.sensitivity == g.group_sensitivity
    assert Fraction(g.scale) >= Fraction(0.3) * 7 / Fraction(0.9)


def test_release_seeded():
    r = group_laplace(1, 4, 1.0)
    vals = np.array([r.release(0.0, seed=s).value for s in range(300)])
    assert 3.2 < np.mean(np.abs(vals)) < 4.8  # E|Lap(4)| = 4


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: group_laplace(1, 0, 1.0), "records"),
        (lambda: group_laplace(-1, 4, 1.0), "sensitivity"),
        (lambda: group_laplace(1, 4, 0), "epsilon"),
        (lambda: group_gaussian(1, 4, 0.5, 0.0), "delta"),
        (lambda: group_gaussian(1, 4, 0.5, 1.0), "delta"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ParameterError, match=match):
        call()
