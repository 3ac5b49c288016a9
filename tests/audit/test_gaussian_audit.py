"""Exact (eps, delta) audit of the APGM: the oracle against quadrature, then random instances."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from marks import fast_sample
from scipy import integrate, stats

from quiltpriv.audit.gaussian import (
    GAUSSIAN_AUDIT_TOLERANCE,
    audit_apgm,
    audit_apgm_gaussian_columns,
    audit_gaussian_release,
    column_mean_laws,
    gaussian_delta,
    gaussian_hockey_stick,
)
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.apgm import (
    ConditionalMoments,
    GaussianRecordModel,
    apgm,
    apgm_gaussian_columns,
)
from quiltpriv.mechanisms.calibration import PROFILE_RTOL


def _quad_delta(eps, m1, v1, m2, v2):
    """max over both directions of int (p1 - e^eps p2)_+ by adaptive quadrature."""
    s1, s2 = math.sqrt(v1), math.sqrt(v2)
    lo, hi = min(m1 - 40 * s1, m2 - 40 * s2), max(m1 + 40 * s1, m2 + 40 * s2)
    out = 0.0
    for a, sa, b, sb in ((m1, s1, m2, s2), (m2, s2, m1, s1)):
        def f(x, a=a, sa=sa, b=b, sb=sb):
            return max(0.0, stats.norm.pdf(x, a, sa) - math.exp(eps) * stats.norm.pdf(x, b, sb))
        val, _ = integrate.quad(f, lo, hi, points=sorted({m1, m2}), epsabs=1e-13,
                                epsrel=1e-12, limit=2000)
        out = max(out, val)
    return out


@pytest.mark.parametrize("eps", fast_sample([0.1, 1.0, 3.0], (1,)))
def test_gaussian_delta_matches_quadrature(eps):
    for shift in (0.01, 0.3, 1.0, 3.0, 10.0):
        for sigma in (0.5, 2.0):
            exact = gaussian_delta(eps, shift, sigma)
            assert exact == pytest.approx(_quad_delta(eps, 0.0, sigma**2, shift, sigma**2),
                                          abs=1e-10)
            # the same via the general routine, and translation invariance
            moved = gaussian_hockey_stick(eps, 5.0, sigma**2, 5.0 - shift, sigma**2)
            assert moved == pytest.approx(exact, rel=1e-9)


def test_gaussian_delta_known_values():
    # Balle-Wang at eps = 0: total variation 2 Phi(D / 2s) - 1
    # (gaussian_delta rounds up: at most PROFILE_RTOL above the value, never below it)
    tv = 2 * stats.norm.cdf(0.5) - 1
    assert tv * (1 - 1e-14) <= gaussian_delta(0.0, 1.0, 1.0) <= tv * (1 + 2 * PROFILE_RTOL)
    # D = s = 1, eps = 0.5: Phi(0) - e^0.5 Phi(-1) = 0.5 - 1.64872 * 0.158655 = 0.238422
    hand = 0.5 - math.exp(0.5) * stats.norm.cdf(-1.0)
    assert hand * (1 - 1e-13) <= gaussian_delta(0.5, 1.0, 1.0) <= hand * (1 + 2 * PROFILE_RTOL)
    assert hand == pytest.approx(0.2384217081, abs=1e-10)
    assert gaussian_delta(1.0, 0.0, 1.0) == 0.0
    assert gaussian_delta(1.0, 1.0, 0.0) == 1.0
    # tiny deltas keep relative accuracy (no cancellation to 0)
    tiny = gaussian_delta(1.0, 1.0, 10.0)
    assert 0 < tiny < 1e-20
    # decreasing in sigma and in eps
    assert gaussian_delta(0.5, 1, 2) < gaussian_delta(0.5, 1, 1) < gaussian_delta(0.2, 1, 1)


@pytest.mark.parametrize("eps", fast_sample([0.1, 1.0, 3.0], (1,)))
def test_unequal_variances_match_quadrature(eps):
    cases = [(0.3, 1.0, 1.5), (1.0, 1.0, 0.5), (0.0, 1.0, 2.0), (2.0, 0.3, 0.31),
             (5.0, 1.0, 4.0), (0.1, 1.0, 1.0 + 1e-6)]
    for m2, v1, v2 in cases:
        exact = gaussian_hockey_stick(eps, 0.0, v1, m2, v2)
        assert exact == pytest.approx(_quad_delta(eps, 0.0, v1, m2, v2), abs=1e-10)
    assert gaussian_hockey_stick(eps, 0.0, 0.0, 0.0, 1.0) == 1.0  # point mass vs density


def test_vector_whitening_is_the_mahalanobis_distance():
    cov = np.diag([1.0, 4.0])
    laws = {"i": [{0: ([0.0, 0.0], cov), 1: ([1.0, 2.0], cov)}]}
    r = audit_gaussian_release(laws, 0.0, 0.5, 1e-5)
    assert r.audited_delta == pytest.approx(gaussian_delta(0.5, math.sqrt(2.0), 1.0), rel=1e-12)
    assert r.closed_form and r.worst_pair == (0, 1) and r.pairs_audited == 1
    # a singular covariance whose null space the shift leaves: the laws are mutually singular
    sing = np.diag([1.0, 0.0])
    laws = {"i": [{0: ([0.0, 0.0], sing), 1: ([0.0, 1.0], sing)}]}
    assert audit_gaussian_release(laws, 0.0, 0.5, 1e-5).audited_delta == 1.0
    # ... and noise repairs it
    r = audit_gaussian_release(laws, 2.0, 0.5, 1e-5)
    assert r.audited_delta == pytest.approx(gaussian_delta(0.5, 1.0, 2.0), rel=1e-12)


def _random_model(rng, m):
    a = rng.normal(size=(m, m))
    cov = a @ a.T + 0.05 * np.eye(m)
    return GaussianRecordModel(rng.normal(size=m) * 3, cov, tuple(f"c{k}" for k in range(m)))


def _random_instance(rng):
    m = int(rng.integers(2, 5))
    base = _random_model(rng, m)
    thetas = [base]
    for _ in range(int(rng.integers(0, 3))):  # perturbed members of Theta
        b = rng.normal(scale=0.3, size=(m, m))
        thetas.append(GaussianRecordModel(base.mean + rng.normal(size=m),
                                          base.covariance + b @ b.T, base.columns))
    cols = base.columns
    kind = rng.integers(3)
    if kind == 0:
        query = cols[-1]
    elif kind == 1:
        query = list(cols[1:])
    else:
        query = {c: float(rng.normal()) for c in cols[1:]}
    protected = [cols[0]] if rng.random() < 0.6 else [cols[0], cols[1]]
    secrets = {c: sorted(rng.normal(scale=2, size=int(rng.integers(2, 5)))) for c in protected
               if not (isinstance(query, str) and c == query)}
    n = int(rng.choice([5, 50, 500]))
    return thetas, n, query, secrets


CASES = [(cal, eps, dl) for cal, epss in (("classical", (0.2, 0.5, 0.9)),
                                          ("analytic", (0.5, 1.0, 3.0)))
         for eps in epss for dl in (1e-3, 1e-5)]


@pytest.mark.parametrize(("calibration", "eps", "delta"), CASES)
def test_apgm_gaussian_columns_passes_exact_audit(calibration, eps, delta):
    rng = np.random.default_rng(1000 + CASES.index((calibration, eps, delta)))
    caught, tightest = 0, 0.0
    for _ in range(5):  # 12 settings x 5 = 60 random instances
        thetas, n, query, secrets = _random_instance(rng)
        res = apgm_gaussian_columns(thetas, n, query, secrets, eps, delta,
                                    calibration=calibration)
        aud = audit_apgm_gaussian_columns(thetas, n, query, secrets, res)
        assert aud.met, (calibration, eps, delta, aud)
        assert aud.audited_delta <= delta + GAUSSIAN_AUDIT_TOLERANCE
        assert aud.margin == pytest.approx(delta - aud.audited_delta)
        tightest = max(tightest, aud.audited_delta / delta)
        # the generic [ZOC22, Alg. 1] on the same (independently derived) laws audits the same
        laws = column_mean_laws(thetas, n, query, secrets)
        moments = {a: [ConditionalMoments({s: m for s, (m, _) in law.items()},
                                          next(iter(law.values()))[1]) for law in per]
                   for a, per in laws.items()}
        res2 = apgm(moments, eps, delta, calibration=calibration)
        assert res2.sigma == pytest.approx(res.sigma, rel=1e-9, abs=1e-12)
        assert audit_apgm(moments, res2).met
        # a deliberately broken sigma (halved)
        broken = dataclasses.replace(res, sigma=res.sigma / 2, sigma2=res.sigma2 / 4)
        caught += not audit_apgm_gaussian_columns(thetas, n, query, secrets, broken).met
    # halving sigma is caught on (nearly) every seeded instance; measured: 5/5 except 4/5 for
    # (analytic, 0.5, 1e-3), where one instance needs no noise at all
    assert caught >= 4
    if calibration == "analytic":
        assert tightest > 1 - 1e-6  # calibrated to delta exactly: the auditor is sharp
    else:
        assert tightest < 0.01  # the classical constant leaves a factor > 100 (measured)


@pytest.mark.parametrize("calibration", ["classical", "analytic"])
@pytest.mark.parametrize("delta", [1e-3, 1e-5])
def test_audit_is_tight_for_analytic_single_theta(calibration, delta):
    v = np.array([[1.0, 0.8], [0.8, 1.0]])
    m = GaussianRecordModel([0.0, 0.0], v, ("i", "j"))
    res = apgm_gaussian_columns(m, 100, "j", {"i": [0.0, 1.0]}, 0.5, delta,
                                calibration=calibration)
    aud = audit_apgm_gaussian_columns(m, 100, "j", {"i": [0.0, 1.0]}, res)
    assert aud.met and aud.worst_attribute == "i" and aud.worst_theta == 0
    if calibration == "analytic":
        assert aud.audited_delta == pytest.approx(delta, rel=1e-6)  # calibrated to delta
    else:
        assert aud.audited_delta < delta / 10  # the classical constant is loose
    broken = dataclasses.replace(res, sigma=res.sigma / 2, sigma2=res.sigma2 / 4)
    bad = audit_apgm_gaussian_columns(m, 100, "j", {"i": [0.0, 1.0]}, broken)
    assert not bad.met and bad.margin < 0


def test_unequal_true_variances_are_audited_and_can_fail():
    # The analyst declares variance 1 for both secrets (Theorem 1's assumption) but the true
    # conditional variance of secret b is 0.2: the exact audit sees the violation.
    moments = {"i": [ConditionalMoments({"a": 0.0, "b": 1.0}, 1.0)]}
    res = apgm(moments, 1.0, 1e-5, calibration="analytic")
    assert audit_apgm(moments, res).audited_delta == pytest.approx(1e-5, rel=1e-6)
    aud = audit_apgm(moments, res, variances={"i": [{"a": 1.0, "b": 0.2}]})
    assert not aud.closed_form and not aud.met
    tot = res.sigma2
    assert aud.audited_delta == pytest.approx(
        _quad_delta(1.0, 0.0, 1.0 + tot, 1.0, 0.2 + tot), abs=1e-10)
    assert aud.audited_delta == pytest.approx(4.30645e-4, rel=1e-5)


def test_bad_inputs():
    with pytest.raises(ParameterError, match="mean_shift"):
        gaussian_delta(1.0, -1.0, 1.0)
    with pytest.raises(ParameterError, match="result"):
        audit_apgm({"i": [ConditionalMoments({0: 0.0, 1: 1.0}, 1.0)]}, object())
    moments = {"i": [ConditionalMoments({0: 0.0, 1: 1.0}, 1.0)]}
    with pytest.raises(ParameterError, match="exactly the secrets"):
        audit_apgm(moments, apgm(moments, 0.5, 1e-5), variances={"i": [{0: 1.0}]})
    laws = {"i": [{0: ([0.0, 0.0], np.eye(2)), 1: ([1.0, 0.0], 2 * np.eye(2))}]}
    with pytest.raises(ParameterError, match="different covariances"):
        audit_gaussian_release(laws, 1.0, 0.5, 1e-5)
    with pytest.raises(ParameterError, match="names a secret"):
        audit_gaussian_release({"i": [{0: (0.0, 1.0)}]}, 1.0, 0.5, 1e-5, pairs={"i": [(0, 9)]})
