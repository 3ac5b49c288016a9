"""Group-DP baselines: Laplace n Delta / eps and Gaussian c_G n Delta / eps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.group_dp import group_gaussian, group_laplace


def test_laplace_scale():
    r = group_laplace(1, 4, 1.0)  # Example 2 of the paper: Lap(4/eps)
    assert (r.scale, r.group_sensitivity, r.epsilon, r.delta) == (4.0, 4.0, 1.0, 0.0)
    assert group_laplace(0.5, 10, 0.25).scale == 20.0


def test_gaussian_scale_classical():
    r = group_gaussian(1, 4, 0.5, 1e-5)
    c = math.sqrt(2 * math.log(1.25 / 1e-5))
    assert r.scale == pytest.approx(c * 4 / 0.5, rel=1e-10)
    assert r.scale >= c * 4 / 0.5


def test_gaussian_analytic_is_smaller_and_allows_large_eps():
    a = group_gaussian(1, 4, 0.5, 1e-5, calibration="analytic")
    assert a.scale < group_gaussian(1, 4, 0.5, 1e-5).scale
    assert group_gaussian(1, 4, 2.0, 1e-5, calibration="analytic").scale > 0
    with pytest.raises(ParameterError, match="epsilon < 1"):
        group_gaussian(1, 4, 2.0, 1e-5)


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
