"""[CO23] vector forms: W_inf and closeness in R^m (L1), Wasserstein mechanisms, DirM with
several directions; against permutation brute force, the paper's Figure 1 and the 1-d forms."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from quiltpriv.distribution.distribution_privacy import (
    closeness_1d,
    dirm_gaussian,
    dirm_laplace,
    wasserstein_mechanism_1d,
)
from quiltpriv.distribution.vector_mechanisms import (
    approximate_wasserstein_mechanism,
    closeness,
    coupling_bounds_mechanism,
    dirm_gaussian_directions,
    dirm_laplace_directions,
    l1_cost_matrix,
    wasserstein_inf_l1,
    wasserstein_mechanism,
)
from quiltpriv.errors import ModelError, ParameterError


def brute_uniform(xs, ys, delta):
    """Least W with (W, delta)-closeness of two uniform laws on k points each, by brute force
    over permutations: a coupling of uniform laws is a mixture of permutations (Birkhoff), and
    the mass a coupling can put on pairs within W is (largest matching within W) / k."""
    k = len(xs)
    d = np.abs(xs[:, None, :] - ys[None, :, :]).sum(axis=2)
    need = math.ceil((1 - delta) * k)
    best = math.inf
    for perm in itertools.permutations(range(k)):
        costs = sorted(d[i, perm[i]] for i in range(k))
        best = min(best, costs[need - 1] if need > 0 else 0.0)
    return best


def test_winf_and_closeness_match_permutation_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(40):
        k, m = int(rng.integers(2, 6)), int(rng.integers(1, 4))
        xs = rng.integers(-5, 6, size=(k, m)).astype(float)
        ys = rng.integers(-5, 6, size=(k, m)).astype(float)
        u = np.full(k, 1 / k)
        assert wasserstein_inf_l1(xs, u, ys, u) == brute_uniform(xs, ys, 0.0)
        for j in range(k):
            # a hair above j / k: j / k itself is not exact in binary (the exact check then
            # rightly asks for a little more than k - j matched points)
            delta = j / k + 1e-12 if j else 0.0
            assert closeness(xs, u, ys, u, delta) == brute_uniform(xs, ys, delta), (trial, j)


def test_figure_1_and_agreement_with_the_scalar_forms():
    pts = np.array([1.0, 2.0, 3.0, 100.0])
    mu, nu = [0.6, 0.2, 0.0, 0.2], [0.4, 0.3, 0.2, 0.1]
    assert wasserstein_inf_l1(pts, mu, pts, nu) == 97.0
    # (1, 0.1)-close: exactly 0.1 of the mass must move farther than 1. The probabilities are
    # taken at their binary values (0.6, 0.2, ... are not exact in binary), so the boundary
    # needs delta a hair above 0.1; at 0.0999 it is not (1, delta)-close.
    assert closeness(pts, mu, pts, nu, 0.1 + 1e-12) == 1.0
    assert closeness(pts, mu, pts, nu, 0.0999) == 97.0
    assert closeness(pts, mu, pts, nu, 0.0) == 97.0
    rng = np.random.default_rng(1)
    for _ in range(30):
        xs, ys = np.sort(rng.integers(0, 20, 5)).astype(float), np.sort(
            rng.integers(0, 20, 4)).astype(float)
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(4))
        for delta in (0.0, 0.05, 0.2):
            exact = closeness(xs, p, ys, q, delta)
            # the quantile coupling is optimal for W_inf; for delta > 0 it certifies an upper
            # bound, never below the least W
            assert exact <= closeness_1d(xs, p, ys, q, delta) + 1e-12
            if delta == 0:
                assert exact == pytest.approx(closeness_1d(xs, p, ys, q, 0.0), abs=1e-9)


def test_l1_costs_are_upper_bounds():
    rng = np.random.default_rng(2)
    xs, ys = rng.normal(size=(6, 5)) * 1e3, rng.normal(size=(7, 5))
    c = l1_cost_matrix(xs, ys)
    for i in range(6):
        for j in range(7):
            exact = sum(abs(Fraction(float(a)) - Fraction(float(b)))
                        for a, b in zip(xs[i], ys[j], strict=True))
            assert Fraction(float(c[i, j])) >= exact
            assert float(c[i, j]) == pytest.approx(float(exact), rel=1e-14)
    assert l1_cost_matrix([[1.0, 2.0]], [[1.0, 2.0]])[0, 0] == 0.0


def lap_density(z, b):
    return np.prod(np.exp(-np.abs(z) / b) / (2 * b), axis=-1)


def test_vector_wasserstein_mechanism_is_private_on_a_grid():
    # F in R^2 with two laws; the output densities' ratio never exceeds e^eps
    laws = {"a": ([[0, 0], [1, 2], [3, 1]], [0.5, 0.3, 0.2]),
            "b": ([[1, 0], [1, 3], [2, 2]], [0.4, 0.4, 0.2])}
    eps = 0.7
    res = wasserstein_mechanism(laws, eps)
    w = max(wasserstein_inf_l1(*laws["a"], *laws["b"]), wasserstein_inf_l1(*laws["b"],
                                                                          *laws["a"]))
    assert res.laplace_scale >= w / eps and res.laplace_scale == pytest.approx(w / eps, rel=1e-8)
    assert res.dimension == 2 and res.delta == 0.0
    g = np.linspace(-6, 9, 151)
    zz = np.stack(np.meshgrid(g, g), axis=-1)
    dens = {k: sum(p * lap_density(zz - np.array(x, float), res.laplace_scale)
                   for x, p in zip(*v, strict=True)) for k, v in laws.items()}
    assert np.max(np.log(dens["a"] / dens["b"])) <= eps + 1e-9
    assert np.max(np.log(dens["b"] / dens["a"])) <= eps + 1e-9
    # a release goes through the noise core and has the right shape
    out = res.release([1.0, 2.0], seed=1)
    assert out.shape == (2,)
    # with m = 1 the vector form gives the scalar form's scale
    one = {"a": ([0.0, 1.0, 5.0], [0.2, 0.5, 0.3]), "b": ([1.0, 2.0], [0.5, 0.5])}
    assert wasserstein_mechanism(one, 1.0).laplace_scale == pytest.approx(
        wasserstein_mechanism_1d(one, 1.0).laplace_scale, rel=1e-8)


def test_approximate_vector_mechanism():
    pts = np.array([[1.0], [2.0], [3.0], [100.0]])
    laws = {"mu": (pts, [0.6, 0.2, 0.0, 0.2]), "nu": (pts, [0.4, 0.3, 0.2, 0.1])}
    res = approximate_wasserstein_mechanism(laws, 1.0, 0.1 + 1e-12)
    assert res.laplace_scale == pytest.approx(1.0, rel=1e-8)
    assert wasserstein_mechanism(laws, 1.0).laplace_scale == pytest.approx(97.0, rel=1e-8)


def test_dirm_several_directions():
    means = {"a": [0.0, 0.0, 0.0], "b": [1.0, 2.0, 0.0], "c": [2.0, -1.0, 0.0]}
    res = dirm_laplace_directions(means, 0.5)
    v = res.basis
    assert v.shape == (3, 2)
    assert np.allclose(v.T @ v, np.eye(2), atol=1e-12)
    worst = max(np.abs(v.T @ (np.array(means[a]) - np.array(means[b]))).sum()
                for a in means for b in means if a != b)
    assert res.laplace_scale >= worst / 0.5
    assert res.laplace_scale == pytest.approx(worst / 0.5, rel=1e-7)
    noise = res.sample_noise(2000, seed=3)
    assert noise.shape == (2000, 3) and np.allclose(noise[:, 2], 0.0)  # only along the span
    g = dirm_gaussian_directions(means, 0.5, 1e-3)
    assert np.allclose(g.covariance @ np.array([0, 0, 1.0]), 0.0)
    # one direction: the same noise as DirM(L) / DirM(G)
    two = {"a": [0.0, 0.0], "b": [3.0, 4.0]}
    assert dirm_laplace_directions(two, 1.0).laplace_scale == pytest.approx(
        dirm_laplace(two, 1.0).laplace_scale, rel=1e-7)  # ||V^T d||_1 = ||d||_2 = 5
    assert np.allclose(dirm_gaussian_directions(two, 1.0, 1e-3).covariance,
                       dirm_gaussian(two, 1.0, 1e-3).covariance, rtol=1e-7)
    with pytest.raises(ModelError, match="outside the declared"):
        dirm_laplace_directions(means, 0.5, directions=[[1.0, 0.0, 0.0]])
    with pytest.raises(ParameterError):
        dirm_laplace_directions({"a": [0.0], "b": [0.0]}, 1.0)


def test_coupling_bounds_mechanism_is_private_on_a_grid():
    # F = (F_1, F_2) with independent coordinates under each theta: the product of the two
    # per-coordinate optimal couplings moves coordinate k by W_k, so the bounds are (W_1, W_2)
    from quiltpriv.utils.distances import wasserstein_inf_line

    m1 = {"a": ([0.0, 1.0, 2.0], [0.5, 0.3, 0.2]), "b": ([0.0, 1.0, 2.0], [0.2, 0.3, 0.5])}
    m2 = {"a": ([0.0, 4.0], [0.7, 0.3]), "b": ([0.0, 4.0], [0.4, 0.6])}
    bounds = [max(float(wasserstein_inf_line(*m[t], *m[u])) for t, u in (("a", "b"), ("b", "a")))
              for m in (m1, m2)]
    assert bounds == [1.0, 4.0]
    eps = 0.8
    res = coupling_bounds_mechanism(bounds, eps)
    assert res.delta == 0.0 and res.dimension == 2
    w = np.array(res.weights)
    assert all(math.log2(x) == round(math.log2(x)) for x in w)  # powers of two
    # Delta = sum w_k B_k, scale of coordinate k = Delta / (eps w_k), never below
    delta = float((w * np.array(bounds)).sum())
    for s, wk in zip(res.scales, w, strict=True):
        assert s >= delta / (eps * wk) and s == pytest.approx(delta / (eps * wk), rel=1e-8)
    g = np.linspace(-8, 14, 111)
    zz = np.stack(np.meshgrid(g, g, indexing="ij"), axis=-1)

    def density(theta):
        out = np.zeros(zz.shape[:2])
        for x1, p1 in zip(*m1[theta], strict=True):
            for x2, p2 in zip(*m2[theta], strict=True):
                out += p1 * p2 * (np.exp(-abs(zz[..., 0] - x1) / res.scales[0]) / res.scales[0]
                                  * np.exp(-abs(zz[..., 1] - x2) / res.scales[1]) / res.scales[1])
        return out

    da, db = density("a"), density("b")
    assert np.max(np.abs(np.log(da / db))) <= eps + 1e-9
    # the default weights minimise E||noise||^2 up to the power-of-two rounding: no other
    # power-of-two weighting on a grid does better
    best = min(sum(s * s for s in coupling_bounds_mechanism(bounds, eps, weights=[1, 2.0 ** k])
                   .scales) for k in range(-6, 7))
    assert sum(s * s for s in res.scales) <= best * (1 + 1e-12)
    # equal weights: Thm. 3.1 with the plain L1 norm, Lap((B_1 + B_2) / eps) everywhere
    flat = coupling_bounds_mechanism(bounds, eps, weights=[1, 1])
    assert flat.scales[0] == flat.scales[1] == pytest.approx(5.0 / eps, rel=1e-8)
    # releases go through the noise core; a seeded noise sample has the per-coordinate spread
    out = res.release([1.0, 2.0], seed=1)
    assert out.shape == (2,)
    z = res.sample_noise(4000, seed=2)
    for k in range(2):  # E|Lap(b)| = b; 4000 draws: sd b / sqrt(4000), 5 sigma
        assert abs(np.abs(z[:, k]).mean() - res.scales[k]) <= 5 * res.scales[k] / math.sqrt(4000)
    assert res.expected_l1_error() == pytest.approx(sum(res.scales))
    with pytest.raises(ParameterError):
        coupling_bounds_mechanism([1.0, 0.0], eps)
