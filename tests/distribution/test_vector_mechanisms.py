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
