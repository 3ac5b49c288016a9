"""The planar Laplace mechanism on a grid ([KM19, Sec. VII]): exact law, exact
geo-indistinguishability (rounded up, checked against 50-digit mpmath), exact sampling."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from quiltpriv.distribution.local_distribution_privacy import MechanismMatrix, sample_mechanism
from quiltpriv.distribution.location import (
    distance_bounds,
    geo_indistinguishability_epsilon,
    planar_laplace_grid,
    service_quality_loss,
)
from quiltpriv.errors import ParameterError


def mp_geo_epsilon(points: np.ndarray, eps: float) -> mpmath.mpf:
    """The exact geo-indistinguishability of exp(-eps d) restricted to ``points``, in 50
    digits, from the true (unrounded) distances."""
    with mpmath.workdps(50):
        n = len(points)
        e = mpmath.mpf(Fraction(eps).numerator) / Fraction(eps).denominator
        d = [[mpmath.sqrt(sum((mpmath.mpf(float(a)) - mpmath.mpf(float(b))) ** 2
                              for a, b in zip(points[i], points[j], strict=True)))
              for j in range(n)] for i in range(n)]
        logz = [mpmath.log(mpmath.fsum(mpmath.exp(-e * d[i][y]) for y in range(n)))
                for i in range(n)]
        return max((-e * d[i][y] - logz[i] + e * d[j][y] + logz[j]) / d[i][j]
                   for i in range(n) for j in range(n) if i != j for y in range(n))


def grid(side: int) -> np.ndarray:
    return np.array([(i, j) for i in range(side) for j in range(side)], dtype=float)


@pytest.mark.parametrize("seed", range(6))
def test_geo_epsilon_is_the_exact_value_rounded_up(seed):
    rng = np.random.default_rng(seed)
    pts = grid(3) if seed == 0 else rng.uniform(0, 4, (int(rng.integers(2, 8)), 2))
    eps = float(rng.uniform(0.2, 3.0))
    mech = planar_laplace_grid(pts, eps)
    ref = mp_geo_epsilon(pts, eps)
    # never below the exact value; above it only by the stated margins (1e-12 and 2^-40 in d)
    assert mech.geo_epsilon >= ref
    assert mech.geo_epsilon - ref < 1e-9
    # the triangle inequality bracket of the module docstring
    assert eps - 1e-9 <= mech.geo_epsilon <= 2 * eps + 1e-9


def test_geo_epsilon_small_cases():
    # two places at distance 1: the normalisers are equal, so P(y | x) / P(y | x') = e^eps at
    # y = x and eps_geo = eps exactly
    mech = planar_laplace_grid([[0.0, 0.0], [1.0, 0.0]], 1.0)
    assert mech.geo_epsilon == pytest.approx(1.0, abs=1e-9) and mech.geo_epsilon >= 1.0
    # three places on a line: the ends' normalisers differ from the middle's, so eps_geo > eps
    mech3 = planar_laplace_grid([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]], 1.0)
    assert 1.0 < mech3.geo_epsilon < 2.0
    assert mech3.geo_epsilon >= mp_geo_epsilon(np.array([[0, 0], [1, 0], [2, 0]], float), 1.0)


def test_distance_bounds_bracket_the_true_distance():
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(6, 2)) * 10
    low, high = distance_bounds(pts)
    with mpmath.workdps(50):
        for i in range(6):
            for j in range(6):
                d = mpmath.sqrt(sum((mpmath.mpf(float(a)) - mpmath.mpf(float(b))) ** 2
                                    for a, b in zip(pts[i], pts[j], strict=True)))
                lo = mpmath.mpf(low[i][j].numerator) / low[i][j].denominator
                hi = mpmath.mpf(high[i][j].numerator) / high[i][j].denominator
                assert lo <= d <= hi and hi - lo <= mpmath.mpf(2) ** -39


def test_law_is_exact_and_sampled_exactly():
    mech = planar_laplace_grid(grid(2), 1.0)
    assert isinstance(mech.matrix, MechanismMatrix)
    # the exact law: gamma = eps * d_up, so the diagonal is 0 and the diagonal is 1 / Z
    z = 1 + 2 * math.exp(-1) + math.exp(-math.sqrt(2))
    assert mech.matrix[0, 0] == pytest.approx(1 / z, rel=1e-12)
    # seeded, bounded frequency check of the exact sampler (4 outputs, 4000 draws: 5 sigma)
    import random
    rng = random.Random(7)
    counts = Counter(sample_mechanism(mech.matrix, 0, seed=rng).output for _ in range(4000))
    for y in range(4):
        p = float(mech.matrix[0, y])
        assert abs(counts[y] / 4000 - p) <= 5 * math.sqrt(p * (1 - p) / 4000)
    rel = sample_mechanism(mech.matrix, 0, seed=3)
    assert rel.seed == 3 and not rel.secure


def test_geo_epsilon_of_plain_floats_and_refusals():
    pts = grid(2)
    rr = np.full((4, 4), 1 / (math.e + 3))
    np.fill_diagonal(rr, math.e / (math.e + 3))
    # randomised response: ratio e on every pair, smallest distance 1 -> eps_geo = 1 / 1
    assert geo_indistinguishability_epsilon(rr, pts) == pytest.approx(1.0, abs=1e-9)
    assert geo_indistinguishability_epsilon(rr, pts) >= 1.0
    block = np.eye(4)
    assert geo_indistinguishability_epsilon(block, pts) == math.inf
    with pytest.raises(ParameterError):
        planar_laplace_grid([[0.0, 0.0], [0.0, 0.0]], 1.0)
    with pytest.raises(ParameterError):
        planar_laplace_grid(pts, 0.0)


def test_service_quality_loss():
    pts = grid(2)
    lam = [1, 0, 0, 0]
    ident = np.eye(4)
    assert service_quality_loss(ident, lam, pts) == 0.0
    uniform = np.full((4, 4), 0.25)
    assert service_quality_loss(uniform, lam, pts) == pytest.approx((2 + math.sqrt(2)) / 4)
