"""The one noise calibration (quiltpriv.mechanisms.calibration) against a 200-bit reference.

The reference solves the exact Gaussian condition [BW18, Thm. 8] with mpmath bisection at 200
bits, independently of scipy; every Gaussian mechanism's sigma must meet the condition at the
returned value and lie within the documented safety margin of the least such sigma.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath  # in the test extra: these tests run by default
import numpy as np
import pytest
from scipy import special

from quiltpriv.distribution import distribution_privacy as dp
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms import apgm, calibration, group_dp
from quiltpriv.mechanisms.calibration import (
    SAFETY_RTOL,
    c_gaussian,
    gaussian_budget,
    gaussian_delta,
    gaussian_sigma,
    laplace_scale,
)

MP_PREC = 200

#: The documented bound: sigma <= (1 + 3 rho) * the least sigma allowed for delta (1 - rho);
#: the tightened delta moves the least sigma by at most rho / |d log delta / d log sigma|.
MARGIN = 4 * SAFETY_RTOL


def mp_profile(r, eps):
    """delta(r) = Phi(r/2 - eps/r) - e^eps Phi(-r/2 - eps/r) in mpmath."""
    r, eps = mpmath.mpf(r), mpmath.mpf(eps)
    if r == 0:
        return mpmath.mpf(0)
    return mpmath.ncdf(r / 2 - eps / r) - mpmath.exp(eps) * mpmath.ncdf(-r / 2 - eps / r)


def mp_least_sigma(sens, eps, delta):
    """The least sigma with mp_profile(sens / sigma) <= delta (200-bit bisection on r)."""
    with mpmath.workprec(MP_PREC):
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        while mp_profile(hi, eps) <= delta:
            lo, hi = hi, 2 * hi
        for _ in range(MP_PREC):
            mid = (lo + hi) / 2
            if mp_profile(mid, eps) <= delta:
                lo = mid
            else:
                hi = mid
        return mpmath.mpf(sens) / lo


def mp_delta_at(sens, eps, sigma):
    with mpmath.workprec(MP_PREC):
        return mp_profile(mpmath.mpf(sens) / mpmath.mpf(sigma), eps)


def _grid(seed, n):
    rng = np.random.default_rng(seed)
    eps = np.exp(rng.uniform(math.log(0.05), math.log(30.0), n))
    delta = np.exp(rng.uniform(math.log(1e-12), math.log(0.2), n))
    sens = np.exp(rng.uniform(math.log(1e-3), math.log(1e3), n))
    return list(zip(eps.tolist(), delta.tolist(), sens.tolist(), strict=True))


@pytest.mark.parametrize(("eps", "delta", "sens"), _grid(1, 40))
def test_analytic_sigma_is_private_and_within_margin(eps, delta, sens):
    s = gaussian_sigma(sens, eps, delta, calibration="analytic")
    assert mp_delta_at(sens, eps, s) <= delta  # private at the returned sigma
    least = mp_least_sigma(sens, eps, delta)
    assert s >= least
    assert s <= least * (1 + MARGIN)  # and tight: the documented margin, no more


@pytest.mark.parametrize(("eps", "delta", "sens"), _grid(2, 40))
def test_classical_sigma_is_the_formula_and_private_when_returned(eps, delta, sens):
    c = math.sqrt(2 * math.log(1.25 / delta))
    try:
        s = gaussian_sigma(sens, eps, delta)
    except ParameterError as err:
        # refused only at eps >= 1, and only when the classical sigma really fails
        assert eps >= 1 and "use calibration='analytic'" in str(err)
        assert mp_delta_at(sens, eps, c * sens / eps) > delta
        return
    assert s >= c * sens / eps
    assert s <= c * sens / eps * (1 + MARGIN)
    assert mp_delta_at(sens, eps, s) <= delta
    # the classical constant never beats the exact calibration
    assert s >= gaussian_sigma(sens, eps, delta, calibration="analytic")


def test_classical_below_one_is_dwork_roth_and_refusal_at_large_eps():
    # eps < 1: the theorem, no verification needed (and the profile agrees)
    b = gaussian_budget(0.5, 1e-5)
    assert b.ratio == pytest.approx(0.5 / c_gaussian(1e-5), rel=MARGIN)
    assert b.exact_delta <= 1e-5
    # eps = 20, delta = 1e-3: the classical constant is not enough (exact delta > 1e-3)
    assert mp_delta_at(1.0, 20.0, c_gaussian(1e-3) / 20.0) > 1e-3
    with pytest.raises(ParameterError, match="calibration='analytic'"):
        gaussian_budget(20.0, 1e-3)


def test_every_gaussian_mechanism_uses_the_one_calibration():
    for eps, delta in [(0.3, 1e-6), (2.0, 1e-3), (5.0, 1e-5)]:
        for cal in ("classical", "analytic"):
            b = gaussian_budget(eps, delta, cal)
            assert apgm.gaussian_sigma(2.5, eps, delta, calibration=cal) == b.sigma(2.5)
            assert dp.mahalanobis_budget(eps, delta, cal)[0] == b.ratio
            g = group_dp.group_gaussian(2.5, 7, eps, delta, calibration=cal)
            assert g.scale == b.sigma(2.5 * 7)
            d = dp.group_dp_gaussian(2.5, 7, 3, eps, delta, calibration=cal)
            assert np.array_equal(d.covariance, g.scale ** 2 * np.eye(3))


def test_gaussian_delta_matches_reference():
    rng = np.random.default_rng(3)
    for _ in range(60):
        eps, d, s = rng.uniform(0, 10), rng.uniform(0, 5), rng.uniform(0.05, 5)
        ref = mp_delta_at(d, eps, s)
        got = gaussian_delta(eps, d, s)
        assert got == pytest.approx(float(ref), rel=1e-9, abs=1e-300)
    assert gaussian_delta(1.0, 0.0, 1.0) == 0.0 and gaussian_delta(1.0, 1.0, 0.0) == 1.0


def test_profile_is_monotone_in_the_ratio():
    # the bisection's bracket rests on delta(r) increasing in r
    for eps in (0.01, 1.0, 25.0):
        rs = np.linspace(0.0, 40.0, 400)
        vals = [calibration._profile(float(r), eps) for r in rs]
        assert all(b >= a for a, b in zip(vals, vals[1:], strict=False))
        assert vals[0] == 0.0 and vals[-1] > 0.99


@pytest.mark.parametrize(("sens", "eps"), [(1, 3), (0.1, 0.3), (4, 1.0), (1e-300, 7), (3, 1e-3)])
def test_laplace_scale_is_the_exact_quotient_rounded_up(sens, eps):
    b = laplace_scale(sens, eps)
    q = Fraction(sens) / Fraction(eps)
    assert Fraction(b) >= q
    assert Fraction(math.nextafter(b, 0.0)) < q  # the least float >= q


def test_scipy_condition_at_group_sigma():
    # the agreed group-DP values: classical at eps = 2 is verified, not refused
    g = group_dp.group_gaussian(1.0, 10, 2.0, 1e-3)
    a, b = 10 / (2 * g.scale), 2.0 * g.scale / 10
    assert special.ndtr(a - b) - math.exp(2.0) * special.ndtr(-a - b) <= 1e-3
    assert g.scale == pytest.approx(c_gaussian(1e-3) * 10 / 2.0, rel=MARGIN)


@pytest.mark.parametrize("bad", [None, "exact", 1, ("classical",)])
def test_bad_calibration_name(bad):
    with pytest.raises(ParameterError, match="calibration must be one of"):
        gaussian_budget(1.0, 1e-5, bad)
