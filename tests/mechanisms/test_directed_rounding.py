"""Every scale, sigma and budget is exact or rounded up: each formula against exact Fractions.

A mean over [0, 1] at eps 3 must get a Laplace scale >= 1/3 exactly: fl(1/3) < 1/3 would make
the release (3 + 1.7e-16)-private. The primitives (quiltpriv.mechanisms.calibration) are checked
against an independent Fraction reference, then every formula that uses them.
"""

from __future__ import annotations

import math
import random
import sys
from fractions import Fraction as F

import numpy as np
import pytest
import reference as ref

from quiltpriv.distribution import distribution_privacy as dp
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms import mqm
from quiltpriv.mechanisms.apgm import ConditionalMoments, apgm
from quiltpriv.mechanisms.apmqm import plan, quilt_scale
from quiltpriv.mechanisms.calibration import (
    add_up,
    div_up,
    exp_up,
    gaussian_budget,
    laplace_scale,
    mul_up,
    round_down,
    round_up,
    scale_up,
    sqrt_up,
)
from quiltpriv.mechanisms.group_dp import group_gaussian, group_laplace
from quiltpriv.mechanisms.wasserstein import wasserstein_scale
from quiltpriv.model.loading import load_model
from quiltpriv.queries.query import MeanQuery

MAX = F(sys.float_info.max)


def least_float_at_least(q: F) -> float:
    """Independent reference: the least float >= q (inf beyond the range)."""
    if q > MAX:
        return math.inf
    if q < -MAX:
        return -sys.float_info.max
    f = float(q)  # the nearest float: the one below it is < q
    while F(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def _floats(rng: random.Random, n: int) -> list[float]:
    out = [1.0, 3.0, 0.1, 1 / 3, 7.0, 1e-300, 5e-324, 1e300, sys.float_info.max]
    while len(out) < n:
        out.append(rng.choice([rng.random(), rng.uniform(0, 100), 10 ** rng.uniform(-300, 300),
                               float(rng.randint(1, 10**6)), rng.randint(1, 99) / 3]))
    return out


def test_primitives_against_fractions():
    rng = random.Random(11)
    xs = _floats(rng, 120)
    for _ in range(3000):
        a, b, c = rng.choice(xs), rng.choice(xs), rng.choice(xs)
        q = F(a) / F(b)
        assert div_up(a, b) == least_float_at_least(q)
        assert mul_up(a, b) == least_float_at_least(F(a) * F(b))
        assert add_up(a, b, c) == least_float_at_least(F(a) + F(b) + F(c))
        assert round_up(q) == least_float_at_least(q)
        assert round_up(-q) == least_float_at_least(-q) == -round_down(q)  # signs
        d = round_down(q)
        assert F(d) <= q and (q >= MAX or F(math.nextafter(d, math.inf)) > q)
        if c < a:
            assert scale_up(b, a, c) == least_float_at_least(F(b) / (F(a) - F(c)))
        s = sqrt_up(a)
        assert F(s) ** 2 >= F(a) and F(math.nextafter(s, 0.0)) ** 2 < F(a)
    # the classic cases
    assert F(div_up(1, 3)) > F(1, 3) > F(1 / 3)
    assert F(scale_up(1.0, 3.0)) >= F(1, 3)
    assert div_up(1e308, 1e-10) == math.inf and mul_up(1e200, 1e200) == math.inf
    assert exp_up(1.0) > math.e and F(exp_up(0.5)) > F(math.exp(0.5))
    with pytest.raises(ParameterError):
        div_up(1.0, 0.0)
    with pytest.raises(ParameterError):
        round_up(float("nan"))


def test_quilt_scale_is_the_exact_quotient_rounded_up():
    rng = random.Random(5)
    xs = _floats(rng, 60)
    assert F(quilt_scale(1.0, 0.0, 3.0)) >= F(1, 3)
    for _ in range(2000):
        delta, eps = rng.choice(xs), rng.choice(xs)
        e = rng.choice([0.0, eps * rng.random(), math.nextafter(eps, 0.0)])
        if not e < eps:  # eps * random() can round up to a subnormal eps
            continue
        want = least_float_at_least(F(delta) / (F(eps) - F(e)))
        assert quilt_scale(delta, e, eps) == want == ref.algorithm3_scale(delta, e, eps)
        assert mqm._quilt_scale(7, e, eps) == least_float_at_least(F(7) / (F(eps) - F(e)))


def test_a_mean_over_0_1_at_eps_3_gets_at_least_one_third():
    theta = load_model("student")
    p = plan(theta, MeanQuery("height", lower=0, upper=1), ["height"], 3.0)
    assert F(p.scale) >= F(1, 3)
    assert F(p.scale) == F(least_float_at_least(F(1, 3)))


def test_laplace_and_group_scales():
    rng = random.Random(7)
    for _ in range(300):
        d, eps, n = rng.uniform(0, 10), 10 ** rng.uniform(-3, 1), rng.randint(1, 10**6)
        assert laplace_scale(d, eps) == least_float_at_least(F(d) / F(eps))
        g = group_laplace(d, n, eps)
        assert F(g.group_sensitivity) >= F(d) * n
        assert F(g.scale) >= F(d) * n / F(eps)
    assert F(laplace_scale(1.0, 3.0)) >= F(1, 3)
    assert F(wasserstein_scale(F(1), 3.0)) >= F(1, 3)
    with pytest.raises(ParameterError, match="overflows the float range"):
        laplace_scale(1e308, 1e-300)


@pytest.mark.parametrize("cal", ["classical", "analytic"])
def test_gaussian_sigma_is_sensitivity_over_ratio_rounded_up(cal):
    rng = random.Random(3)
    for _ in range(20):
        eps, delta = rng.uniform(0.05, 0.9), 10 ** rng.uniform(-12, -2)
        b = gaussian_budget(eps, delta, cal)
        d, n = rng.uniform(0.1, 10), rng.randint(1, 1000)
        assert F(b.sigma(d)) >= F(d) / F(b.ratio)
        g = group_gaussian(d, n, eps, delta, calibration=cal)
        assert F(g.scale) >= F(d) * n / F(b.ratio)
    with pytest.raises(ParameterError, match="overflows the float range"):
        gaussian_budget(1e-300, 1e-10).sigma(1e300)


def test_distribution_privacy_scales_at_one_third():
    # means 0 and 1 (Delta_E = 1) at eps 3: the scale must be >= 1/3 (and >= 1/3 (1 + rho))
    means = {"a": [0.0], "b": [1.0]}
    for res in (dp.expm_laplace(means, 3.0), dp.dirm_laplace(means, 3.0),
                dp.bounded_query_mechanism(means, 0.0, 3.0, 1e-6)):
        assert F(res.laplace_scale) >= F(res.sensitivity) / 3 >= F(1, 3), res.mechanism
    w = dp.wasserstein_mechanism_1d({"a": ([0.0], [1.0]), "b": ([1.0], [1.0])}, 3.0)
    assert F(w.laplace_scale) >= F(w.sensitivity) / 3 >= F(1, 3)
    g = dp.expm_gaussian(means, 0.5, 1e-6)
    r, _ = dp.mahalanobis_budget(0.5, 1e-6)
    assert F(float(g.covariance[0, 0])) >= (F(g.sensitivity) / F(r)) ** 2


def test_relaxed_budgets_are_rounded_up():
    rng = random.Random(9)
    for _ in range(200):
        eps, dl, la, eta = rng.random() + 0.1, rng.random() * 1e-3, rng.random(), 1e-9
        r = dp.relaxed_wasserstein(eps, dl, 2.0, la)
        assert F(r.epsilon) >= F(eps) + 2 * F(la)
        assert r.delta >= math.exp(la) * dl
        assert F(r.extra_laplace_scale) >= F(2.0) / F(la)
        m = dp.relaxed_max_divergence(eps, dl, la, eta)
        assert F(m.epsilon) >= F(eps) + 2 * F(la)


def test_apgm_variance_and_sigma_rounded_up():
    rng = np.random.default_rng(4)
    for _ in range(50):
        mu = float(rng.uniform(0.1, 3))
        var = float(rng.uniform(0, 2))
        res = apgm({"x": [ConditionalMoments({0: 0.0, 1: mu}, var)]}, 0.5, 1e-5)
        need = F(res.required_variance["x"]) - F(res.min_variance["x"])
        assert F(res.sigma2) >= max(need, F(0))
        assert F(res.sigma) ** 2 >= F(res.sigma2)
        assert F(res.min_variance["x"]) <= F(var)
