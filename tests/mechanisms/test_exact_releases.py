"""Every release path of the distribution privacy mechanisms and APGM's vector release is exact.

* Low bits carry nothing: the attack of [Mir12] on the old float releases (F uniform on
  {0.1, 0.2} under theta1, {0.2, 0.3} under theta2; ExpM(L) with Delta 0.1, eps 1) recovered F
  from the residue of the output modulo the noise grid in 400 of 400 releases. Here a residue
  classifier trained on 200 seeded releases and scored on 200 more must stay at chance level
  (at most 0.6; chance 0.5, one standard error 0.035), on every path.
* The calibration pays for the snapping: the exact scales and sigmas used are checked in
  rationals against the promise, and APGM's d = 1024 vector against the zCDP rho and the
  (eps, delta) promised (mpmath, 50 digits).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from quiltpriv.distribution import distribution_privacy as dp
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms import noise
from quiltpriv.mechanisms.apgm import APGMResult
from quiltpriv.mechanisms.calibration import gaussian_sigma

N_TRAIN = N_TEST = 200
CHANCE_BOUND = 0.62  # chance 1/2 (the value 0.2 is half the draws); 3.4 standard errors


def residue_classifier_accuracy(release, thetas, seed, moduli):
    """Best accuracy, over ``moduli``, of recovering F from the release's residues.

    ``thetas``: two lists of values of F (F uniform on the list under that theta, the theta
    uniform). A lookup table from (residue of every coordinate) to the most frequent value of F
    in training; an unseen residue gets the most frequent value overall. A classifier that
    learns nothing scores the frequency of the commonest value (1/2 for the lists used here).
    """
    rng = random.Random(seed)

    def draw():
        f = rng.choice(thetas[rng.randrange(2)])
        return tuple(np.atleast_1d(f).tolist()), np.asarray(release(f, rng), dtype=float)

    train = [draw() for _ in range(N_TRAIN)]
    test = [draw() for _ in range(N_TEST)]
    overall = Counter(f for f, _ in train).most_common(1)[0][0]
    best = 0.0
    for mod in moduli:
        def key(out, mod=mod):
            return tuple(Fraction(float(v)) % mod for v in np.atleast_1d(out))

        votes: dict = {}
        for f, out in train:
            votes.setdefault(key(out), Counter())[f] += 1
        hits = 0
        for f, out in test:
            c = votes.get(key(out))
            hits += (c.most_common(1)[0][0] if c else overall) == f
        best = max(best, hits / N_TEST)
    return best


def float_ulp_moduli(g):
    # the release grid, coarser and finer powers of two, the old noise grid of a scale-0.1
    # Laplace (the attacker's), and about the ulp of the values
    g = Fraction(g)
    return [g, g * 1024, g / 1024, Fraction(noise.default_granularity(0.1)),
            Fraction(2) ** -55]


def test_the_old_float_release_fails_this_test():
    # the classifier detects the attack it is meant to detect: the old ExpM(L) release, F plus
    # exact noise on the noise's grid, added to an off-grid F in floats (400/400 recovered)
    def old(f, rng):
        return f + noise.laplace(0.1, seed=rng)

    thetas = ([0.1, 0.2], [0.2, 0.3])
    acc = residue_classifier_accuracy(old, thetas, 1,
                                      float_ulp_moduli(noise.default_granularity(0.1)))
    assert acc == 1.0


def test_expm_laplace_low_bits_are_at_chance():
    res = dp.expm_laplace({1: [0.15], 2: [0.25]}, 1.0)  # Delta_E,1 = 0.1
    g = res.release([0.1], seed=1)  # one release to learn the grid: a power of two
    rec = noise.laplace_release(0.1, res.laplace_scale, res.sensitivity, seed=1, dimension=1)
    assert Fraction(float(g[0])) % Fraction(rec.granularity) == 0

    def release(f, rng):
        return res.release([f], seed=rng)

    thetas = ([0.1, 0.2], [0.2, 0.3])
    assert residue_classifier_accuracy(release, thetas, 2,
                                       float_ulp_moduli(rec.granularity)) <= CHANCE_BOUND


MU = {1: [0.15, 1.0, -2.0], 2: [0.25, 1.05, -2.1]}
COV = {1: np.diag([0.01, 0.02, 0.03]), 2: np.diag([0.01, 0.02, 0.03])}
DIRECTION_MU = {1: [0.0, 0.0, 0.0], 2: [0.1, 0.1, 0.0]}


def plans():
    return {
        "ExpM(L)": dp.expm_laplace(MU, 1.0),
        "DirM(L)": dp.dirm_laplace(DIRECTION_MU, 1.0),
        "ExpM(G)": dp.expm_gaussian(MU, 1.0, 1e-3),
        "DirM(G)": dp.dirm_gaussian(DIRECTION_MU, 1.0, 1e-3),
        "EigM(G)": dp.eigm_gaussian(MU, COV, 1.0, 1e-3),
        "DauM(G)": dp.daum_gaussian(DIRECTION_MU, COV, 1.0, 1e-3),
        "GroupDP(G)": dp.group_dp_gaussian(0.1, 3, 3, 1.0, 1e-3),
        "GroupDP(L)": dp.group_dp_laplace(0.1, 3, 3, 1.0),
    }


@pytest.mark.parametrize("name", list(plans()))
def test_every_distribution_release_is_on_one_grid_and_low_bits_are_at_chance(name):
    res = plans()[name]
    base = np.array([0.1, 1.3, -2.7])
    thetas = ([base, base + [0.1, 1e-9, 3e-17]], [base + [0.1, 1e-9, 3e-17], base + 0.2])
    outs = [res.release(f, seed=random.Random(i)) for i, f in enumerate(thetas[0] * 4)]
    # all coordinates of all releases on one power-of-two grid, from the noise module
    dens = {Fraction(float(v)).denominator for o in outs for v in o}
    g = Fraction(1, max(dens))
    assert all(Fraction(float(v)) % g == 0 for o in outs for v in o)
    assert g.numerator == 1 and g.denominator & (g.denominator - 1) == 0

    def release(f, rng):
        return res.release(f, seed=rng)

    assert residue_classifier_accuracy(release, thetas, 3, float_ulp_moduli(g)) <= CHANCE_BOUND


def test_laplace_release_charges_the_l1_snapping():
    res = plans()["ExpM(L)"]
    rec = noise.laplace_release_vector([0.1, 1.0, 2.0], res.laplace_scale, res.sensitivity,
                                       seed=1)
    g = Fraction(rec[0].granularity)
    b, d = Fraction(res.laplace_scale), Fraction(res.sensitivity)
    # worst L1 shift of the snapped vectors: Delta + 3 g; over the scale used: Delta / b
    used = b * (d + 3 * g) / d
    assert all(Fraction(r.noise_scale_used) == used or
               abs(Fraction(r.noise_scale_used) - used) <= used * Fraction(2) ** -52 for r in rec)
    assert (d + 3 * g) / used == d / b


def test_several_directions_laplace_releases_exactly():
    from quiltpriv.distribution.vector_mechanisms import (
        dirm_gaussian_directions,
        dirm_laplace_directions,
    )

    mu = {1: [0.0, 0.0, 0.0], 2: [0.1, 0.0, 0.05], 3: [0.0, 0.1, 0.0]}
    for res in (dirm_laplace_directions(mu, 1.0), dirm_gaussian_directions(mu, 1.0, 1e-3)):
        outs = [res.release([0.1, 1.3, -2.7], seed=random.Random(i)) for i in range(5)]
        g = Fraction(1, max(Fraction(float(v)).denominator for o in outs for v in o))
        assert g.denominator & (g.denominator - 1) == 0
        assert all(Fraction(float(v)) % g == 0 for o in outs for v in o)
    res = dirm_laplace_directions(mu, 1.0)
    scale, sens = res._direction_l1_plan()
    # ||V c||_1 <= sqrt(m) ||V c||_2 = sqrt(m) ||c||_2 <= sqrt(m) ||c||_1 <= sqrt(m) Delta
    assert Fraction(sens) ** 2 >= 3 * Fraction(res.sensitivity) ** 2
    assert Fraction(sens) / Fraction(scale) <= Fraction(res.sensitivity) / Fraction(
        res.laplace_scale)


def test_unknown_noise_kind_releases_nothing():
    res = dp.DistributionPrivacyResult("custom", "cauchy", 1, 1.0, 0.0, laplace_scale=1.0)
    with pytest.raises(ParameterError, match="unknown noise"):
        res.release([0.0], seed=1)


def test_direction_laplace_pays_sqrt_m_in_l1():
    res = plans()["DirM(L)"]
    scale, sens = res._direction_l1_plan()
    m = res.dimension
    # sens >= sqrt(m) Delta (any L2 shift of norm Delta has L1 norm <= sqrt(m) Delta) and
    # sens/scale <= Delta/b: the promised eps holds
    assert Fraction(sens) ** 2 >= m * Fraction(res.sensitivity) ** 2
    assert Fraction(sens) / Fraction(scale) <= Fraction(res.sensitivity) / Fraction(
        res.laplace_scale)


@pytest.mark.parametrize("name", ["EigM(G)", "DauM(G)"])
def test_gaussian_release_sigma_does_not_rely_on_fs_variance(name):
    res = plans()[name]
    r, _ = dp.mahalanobis_budget(1.0, 1e-3)
    assert res.release_sigma is not None
    assert res.release_sigma >= res.sensitivity / r  # the coupling alone suffices
    assert res.release_sigma ** 2 >= float(np.linalg.eigvalsh(res.covariance)[-1])


def test_gaussian_release_sigma_dominates_the_plan():
    for name in ("ExpM(G)", "DirM(G)", "GroupDP(G)"):
        res = plans()[name]
        r, _ = dp.mahalanobis_budget(1.0, 1e-3)
        assert res.release_sigma is None
        assert res.gaussian_release_sigma() >= res.sensitivity / r * (1 - 1e-12)


def test_distribution_release_refuses_an_undrawable_scale_and_draws_nothing(monkeypatch):
    res = dp.DistributionPrivacyResult("custom", "laplace", 2, 1.0, 0.0, laplace_scale=1e306,
                                       sensitivity=1.0)
    drawn = []
    monkeypatch.setattr(noise, "_discrete_laplace", lambda *a: drawn.append(a) or 0)
    with pytest.raises(ParameterError, match="too large to draw"):
        res.release([0.0, 1.0], seed=1)
    g = dp.DistributionPrivacyResult("custom", "gaussian", 2, 1.0, 1e-3,
                                     covariance=np.eye(2), sensitivity=1.0,
                                     release_sigma=1e306)
    with pytest.raises(ParameterError, match="too large to draw"):
        g.release([0.0, 1.0], seed=1)
    assert drawn == []


# ------------------------------------------------------------------------------------------
# APGM's vector release at d = 1024
# ------------------------------------------------------------------------------------------


def profile(eps, ratio):
    """Exact analytic-Gaussian delta(eps) for shift/sigma = ratio [BW18, Thm. 8], mpmath."""
    with mpmath.workdps(50):
        r = mpmath.mpf(ratio.numerator) / ratio.denominator
        e = mpmath.mpf(eps)
        return mpmath.ncdf(r / 2 - e / r) - mpmath.exp(e) * mpmath.ncdf(-r / 2 - e / r)


def test_apgm_vector_release_keeps_rho_and_delta_at_d_1024():
    d, delta_sens, eps, target = 1024, 1.0, 1.0, 1e-6
    sigma = gaussian_sigma(delta_sens, eps, target, calibration="analytic")
    res = APGMResult(sigma * sigma, sigma, eps, target, {"a": delta_sens}, {"a": 0.0},
                     {"a": sigma * sigma}, "a", d, "analytic")
    values = [0.1 * i + 1e-3 for i in range(d)]
    out = res.release(values, seed=7)  # a VectorRelease: one grid, one scale for the vector
    assert len(out) == d
    g = Fraction(out.granularity)
    assert all(Fraction(v) % g == 0 for v in out.value)
    s, dl = Fraction(sigma), Fraction(delta_sens)
    # snapped worst case: every coordinate moves by up to g, L2 shift Delta + sqrt(d) g
    shift = dl + 32 * g  # sqrt(1024) = 32 exactly
    used = s * shift / dl
    assert Fraction(out.noise_scale_used) == Fraction(float(used))
    promised_rho = dl ** 2 / (2 * s ** 2)
    assert shift ** 2 / (2 * used ** 2) <= promised_rho  # exactly equal
    assert profile(eps, shift / used) <= target
    # the old per-coordinate charge (Delta + g) would break both promises at this d
    old = s * (dl + g) / dl
    assert shift ** 2 / (2 * old ** 2) > promised_rho
    assert profile(eps, shift / old) > profile(eps, dl / s)


def test_gaussian_release_dimension_formula_and_default_grid():
    for d in (1, 2, 3, 1000):
        r = noise.gaussian_release(0.3, 2.0, 1.0, seed=1, dimension=d)
        g = Fraction(r.granularity)
        assert g <= Fraction(2) ** -20 / d
        root = noise.sqrt_upper(d)
        assert root ** 2 >= d and (root - Fraction(2) ** -40) ** 2 < d or root ** 2 == d
        assert Fraction(r.noise_scale_used) == Fraction(float(2 * (1 + root * g)))
        assert r.noise_scale_used <= 2.0 * (1 + 2**-20)
    assert noise.sqrt_upper(1024) == 32
    with pytest.raises(ParameterError, match="dimension"):
        noise.gaussian_release(0.3, 2.0, 1.0, dimension=0)
    with pytest.raises(ParameterError, match="too large"):
        noise.gaussian_release_vector([0.0, 1.0], 1e308, 1e-300, granularity=1.0)


def test_sqrt_upper_is_an_upper_bound():
    for n in list(range(50)) + [2**61 - 1, 10**30 + 7]:
        r = noise.sqrt_upper(n)
        assert r * r >= n
        assert r - Fraction(math.isqrt(n)) <= 1


@pytest.mark.parametrize("d", [1, 4])
def test_apgm_release_low_bits_are_at_chance(d):
    sigma = gaussian_sigma(0.1, 1.0, 1e-6, calibration="analytic")
    res = APGMResult(sigma * sigma, sigma, 1.0, 1e-6, {"a": 0.1}, {"a": 0.0},
                     {"a": sigma * sigma}, "a", d, "analytic")

    def release(f, rng):
        out = res.release(f if d > 1 else f[0], seed=rng)
        return list(out.value) if d > 1 else [out.value]

    base = np.linspace(0.1, 0.7, d)
    thetas = ([base, base + 0.1], [base + 0.1, base + 0.2])
    g = Fraction(release(base, random.Random(0))[0]).denominator
    assert residue_classifier_accuracy(release, thetas, 5,
                                       float_ulp_moduli(Fraction(1, g))) <= CHANCE_BOUND
