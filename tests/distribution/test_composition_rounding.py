"""[KM19] composition figures are rounded upwards (and odds intervals outwards) at every
magnitude, against 60-digit mpmath references; huge epsilons give inf or delta 1, never an
OverflowError."""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import pytest

from quiltpriv.distribution.composition import bayes_factor_bound, close_beliefs_bound, pre_process


def _mp(x: float) -> mpmath.mpf:
    return mpmath.mpf(Fraction(x).numerator) / Fraction(x).denominator


@pytest.mark.parametrize("seed", range(40))
def test_pre_processing_delta_is_never_below_the_exact_sum(seed):
    rng = random.Random(seed)
    eps, delta, c = rng.uniform(1e-6, 30.0), rng.uniform(1e-12, 1e-3), rng.randint(1, 12)
    g = pre_process((eps, delta), c, notion="DistP")
    with mpmath.workdps(60):
        exact = _mp(delta) * mpmath.fsum(mpmath.exp(i * _mp(eps)) for i in range(c))
        assert _mp(g.delta) >= min(exact, 1)
        assert g.delta == 1.0 or _mp(g.delta) <= exact * (1 + mpmath.mpf(2) ** -45)
        assert _mp(g.epsilon) >= c * _mp(eps)


def test_huge_epsilons_do_not_overflow():
    assert pre_process((800.0, 1e-6), 3, notion="DistP").delta == 1.0
    assert pre_process((800.0, 0.0), 3, notion="DistP").delta == 0.0
    b = bayes_factor_bound(800.0)
    assert b.factor == float("inf") and b.posterior_odds(2.0) == (0.0, float("inf"))


@pytest.mark.parametrize("eps", [1e-9, 0.1, 1.0, 5.0, 50.0, 700.0])
def test_bayes_factor_interval_contains_the_exact_one(eps):
    b = bayes_factor_bound(eps)
    lo, hi = b.posterior_odds(2.0)
    with mpmath.workdps(60):
        e = mpmath.exp(_mp(eps))
        assert _mp(b.factor) >= e and _mp(lo) <= 2 / e and _mp(hi) >= 2 * e
        assert _mp(hi) <= 2 * e * (1 + mpmath.mpf(2) ** -48)


def test_close_beliefs_delta_grows_by_at_least_the_exact_factor():
    lam0, lam1 = [0.5, 0.5], [0.4, 0.6]
    bel0, bel1 = [0.45, 0.55], [0.4, 0.6]
    g = close_beliefs_bound(1.0, 1e-6, lam0, lam1, bel0, bel1)
    with mpmath.workdps(60):
        a0 = mpmath.log(mpmath.mpf("0.55") / mpmath.mpf("0.5"))  # D_inf(bel0 || lam0)
        assert _mp(g.delta) >= mpmath.mpf("1e-6") * mpmath.exp(a0) * (1 - mpmath.mpf(2) ** -40)
        assert _mp(g.delta) >= _mp(1e-6) * mpmath.exp(a0 * (1 - mpmath.mpf(10) ** -12))
