"""The adversary scorecard against brute-force references (direct sums, fine quadrature)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from marks import fast_and_full
from scipy import integrate, stats

from quiltpriv.audit.adversary import (
    score_channel,
    score_finite,
    score_gaussian,
    score_laplace_noised,
)
from quiltpriv.errors import ParameterError

# --------------------------------------------------------------------------- references


def _brute_finite(joint):
    acc = 0.0
    for o in range(joint.shape[1]):
        acc += max(joint[y, o] for y in range(joint.shape[0]))

    def h(p):
        p = p[p > 0]
        return -float(np.sum(p * np.log2(p)))

    mi = h(joint.sum(axis=1)) + h(joint.sum(axis=0)) - h(joint.ravel())
    return acc, mi


def _quad_reference(weighted_densities, lo, hi, points):
    """Slow reference: adaptive quadrature of max_y w_y(x) and of the MI integrand."""
    pts = sorted(p for p in points if lo < p < hi)
    edges = [lo, *pts, hi]

    def f_max(x):
        return float(np.max(weighted_densities(x)))

    def f_mi(x, prior):
        w = weighted_densities(x)
        tot = w.sum()
        ok = w > 0
        return float(np.sum(w[ok] * np.log2(w[ok] / (prior[ok] * tot))))

    return edges, f_max, f_mi


def _integrate(f, edges):
    total = 0.0
    for a, c in zip(edges[:-1], edges[1:], strict=True):
        total += integrate.quad(f, a, c, epsabs=1e-14, epsrel=1e-12, limit=400)[0]
    return total


# --------------------------------------------------------------------------- finite


def test_finite_matches_direct_sums_on_random_joints():
    rng = np.random.default_rng(1)
    for _ in range(50):
        k, m = rng.integers(1, 5), rng.integers(1, 7)
        joint = rng.random((k, m)) * (rng.random((k, m)) > 0.3)
        if joint.sum() == 0:
            continue
        joint /= joint.sum()
        card = score_finite(joint)
        acc, mi = _brute_finite(joint)
        assert card.map_accuracy == pytest.approx(acc, abs=1e-12)
        assert card.mutual_information_bits == pytest.approx(mi, abs=1e-12)
        assert card.prior_accuracy == pytest.approx(joint.sum(axis=1).max(), abs=1e-15)
        assert card.advantage >= 0


def test_finite_known_values():
    # Y uniform bit, output = Y: accuracy 1, one bit.
    card = score_finite([[0.5, 0.0], [0.0, 0.5]])
    assert card.map_accuracy == 1.0 and card.mutual_information_bits == pytest.approx(1.0)
    # Output independent of Y.
    card = score_channel([0.3, 0.7], [[0.2, 0.8], [0.2, 0.8]])
    assert card.map_accuracy == pytest.approx(0.7) and card.mutual_information_bits == 0.0
    # Binary symmetric channel with flip 0.1: accuracy 0.9, MI 1 - h(0.1).
    card = score_channel([0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]])
    h = -(0.1 * math.log2(0.1) + 0.9 * math.log2(0.9))
    assert card.map_accuracy == pytest.approx(0.9)
    assert card.mutual_information_bits == pytest.approx(1 - h, abs=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: score_finite([[0.5, 0.6]]), "sums to"),
        (lambda: score_finite([[-0.5, 1.5]]), "negative"),
        (lambda: score_finite([0.5, 0.5]), "2-d"),
        (lambda: score_finite([[np.nan, 1.0]]), "NaN"),
        (lambda: score_channel([0.5, 0.5], [[1.0, 0.0]]), "rows"),
        (lambda: score_channel([0.5, 0.5], [[1.0, 0.0], [0.5, 0.4]]), "row 1"),
        (lambda: score_channel([0.5, 0.6], [[1.0], [1.0]]), "prior"),
    ],
)
def test_finite_rejects_bad_input(call, match):
    with pytest.raises(ParameterError, match=match):
        call()


# --------------------------------------------------------------------------- Gaussian


def test_gaussian_equal_variances_is_eq37():
    # GAP Eq. (37): P_d = p Q(-a/2 + eta/a) + (1-p) Q(-a/2 - eta/a), eta = ln((1-p)/p).
    q = stats.norm.sf
    for p, mu, s in [(0.5, 3.0, 1.0), (0.75, 3.0, 1.0), (0.2, 0.4, 1.3), (0.9, 1.0, 0.5)]:
        alpha = 2 * mu / s
        eta = math.log((1 - p) / p)
        expected = p * q(-alpha / 2 + eta / alpha) + (1 - p) * q(-alpha / 2 - eta / alpha)
        card = score_gaussian([1 - p, p], [-mu, mu], [s, s])
        assert card.map_accuracy == pytest.approx(expected, abs=1e-13)


# The first 3 of the 12 seeded cases by default (~0.8 s), all 12 slow.
@pytest.mark.parametrize("cases", fast_and_full(3, 12))
def test_gaussian_matches_quadrature_on_random_inputs(cases):
    rng = np.random.default_rng(7)
    for _ in range(cases):
        k = int(rng.integers(2, 4))
        prior = rng.dirichlet(np.ones(k))
        means = rng.normal(0, 3, k)
        sds = rng.uniform(0.3, 3, k)
        card = score_gaussian(prior, means, sds)

        def wd(x, prior=prior, means=means, sds=sds):
            return prior * stats.norm.pdf(x, means, sds)

        lo = float(np.min(means - 15 * sds))
        hi = float(np.max(means + 15 * sds))
        pts = list(np.linspace(lo, hi, 60))
        edges, f_max, f_mi = _quad_reference(wd, lo, hi, pts)
        assert card.map_accuracy == pytest.approx(_integrate(f_max, edges), abs=1e-9)
        mi_ref = _integrate(lambda x, f=f_mi, pr=prior: f(x, pr), edges)
        assert card.mutual_information_bits == pytest.approx(mi_ref, abs=1e-8)
        assert card.mi_error < 1e-8


def test_gaussian_identical_laws_give_prior():
    card = score_gaussian([0.4, 0.6], [1.0, 1.0], [2.0, 2.0])
    assert card.map_accuracy == pytest.approx(0.6, abs=1e-15)
    assert card.mutual_information_bits == pytest.approx(0.0, abs=1e-12)


def test_gaussian_rejects_bad_input():
    with pytest.raises(ParameterError, match="sds"):
        score_gaussian([0.5, 0.5], [0, 1], [1, 0])
    with pytest.raises(ParameterError, match="same length"):
        score_gaussian([0.5, 0.5], [0, 1, 2], [1, 1])


# --------------------------------------------------------------------------- Laplace


def _laplace_wd(prior, laws, support, b):
    w = prior[:, None] * laws

    def wd(x):
        return w @ (np.exp(-np.abs(x - support) / b) / (2 * b))

    return wd


@pytest.mark.parametrize("seed", range(8))
def test_laplace_matches_quadrature(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 4))
    n = int(rng.integers(0, 12))
    prior = rng.dirichlet(np.ones(k))
    laws = rng.dirichlet(np.ones(n + 1) * 0.7, size=k)
    b = float(rng.choice([0.05, 0.4, 1.0, 3.0]))
    support = np.arange(n + 1, dtype=float) if seed % 2 else np.cumsum(rng.uniform(0.2, 2, n + 1))
    card = score_laplace_noised(prior, laws, b, support=support)
    wd = _laplace_wd(prior, laws, support, b)
    lo, hi = support[0] - 60 * b, support[-1] + 60 * b
    # Fine subdivision: support points plus a dense grid so every kink is isolated.
    pts = list(support) + list(np.linspace(lo, hi, 400))
    edges, f_max, f_mi = _quad_reference(wd, lo, hi, pts)
    assert card.map_accuracy == pytest.approx(_integrate(f_max, edges), abs=1e-9)
    mi_ref = _integrate(lambda x: f_mi(x, prior), edges)
    assert card.mutual_information_bits == pytest.approx(mi_ref, abs=1e-8)


def test_laplace_binary_attribute_count():
    # phi_i = 1 shifts a Binomial(10, 0.3) count by one: the typical attribute-privacy question.
    n = 10
    base = stats.binom.pmf(np.arange(n), n - 1, 0.3)
    law0 = np.r_[base, 0.0]
    law1 = np.r_[0.0, base]
    small = score_laplace_noised([0.5, 0.5], [law0, law1], 1 / 0.5)  # eps = 0.5 Laplace
    large = score_laplace_noised([0.5, 0.5], [law0, law1], 1 / 5.0)
    # Shift-by-one under Laplace(1/eps): accuracy at most e^eps / (1 + e^eps) (eps-DP bound).
    assert 0.5 < small.map_accuracy <= math.exp(0.5) / (1 + math.exp(0.5)) + 1e-12
    assert small.map_accuracy < large.map_accuracy <= math.exp(5) / (1 + math.exp(5)) + 1e-12


def test_laplace_two_points_closed_form():
    # Y uniform, Z = Y exactly, O = Z + Lap(b): accuracy 1 - exp(-1/(2b))/2.
    for b in [0.1, 0.5, 2.0]:
        card = score_laplace_noised([0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]], b)
        assert card.map_accuracy == pytest.approx(1 - 0.5 * math.exp(-0.5 / b), abs=1e-14)


def test_laplace_single_point_and_tiny_scale():
    card = score_laplace_noised([0.2, 0.8], [[1.0], [1.0]], 1.0)
    assert card.map_accuracy == pytest.approx(0.8)
    assert card.mutual_information_bits == pytest.approx(0.0, abs=1e-15)
    # A tiny scale must not overflow: the count is revealed almost exactly.
    card = score_laplace_noised([0.5, 0.5], [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], 1e-4)
    assert card.map_accuracy == pytest.approx(0.75, abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(prior=[0.5, 0.5], laws=[[1.0, 0.0]], scale=1.0), "rows"),
        (dict(prior=[0.5, 0.5], laws=[[1.0, 0.0], [0.7, 0.7]], scale=1.0), r"laws\[1\]"),
        (dict(prior=[0.5, 0.5], laws=[[1.0, 0.0], [0.0, 1.0]], scale=0.0), "scale"),
        (dict(prior=[0.5, 0.5], laws=[[1.0, 0.0], [0.0, 1.0]], scale=1.0, support=[1, 0]),
         "increasing"),
        (dict(prior=[0.5, 0.5], laws=[[1.0, 0.0], [0.0, 1.0]], scale=1.0, support=[0, 1, 2]),
         "support"),
    ],
)
def test_laplace_rejects_bad_input(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        score_laplace_noised(**kwargs)


def test_score_count_release_under_an_apmqm_plan():
    import quiltpriv as qp
    from quiltpriv.audit.adversary import score_count_release

    theta = qp.load_model("example3")
    query = qp.CountQuery(["x1"], 4, where="x1 == 1", domain={"x1": (0, 1)})
    exact = score_count_release(theta, query, "x2", 0.0)
    assert exact.prior_accuracy == pytest.approx(1 / 3)
    last = exact.map_accuracy
    for eps in (2.0, 1.0, 0.5):
        p = qp.plan(theta, query, "x2", eps)
        sc = score_count_release(theta, query, "x2", p.scale)
        # An eps-private release: accuracy <= e^eps * max prior; more noise, less accuracy.
        assert sc.map_accuracy <= min(1.0, math.exp(eps) * sc.prior_accuracy) + 1e-12
        assert sc.map_accuracy <= last + 1e-12
        last = sc.map_accuracy
    assert last > sc.prior_accuracy  # something is still learned at eps = 0.5
    with pytest.raises(ParameterError):
        score_count_release(theta, query, "x2", -1.0)
