"""Tests for quiltpriv.distribution.tupling: the tupling mechanism and its exact privacy loss (spec
04)."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from quiltpriv.distribution.local_distribution_privacy import (
    approximate_max_divergence,
    randomised_response_matrix,
)
from quiltpriv.distribution.tupling import (
    tupling_exact_privacy,
    tupling_guarantee,
    tupling_output_law,
    tupling_sample,
)
from quiltpriv.errors import ParameterError, QueryError


def literal_tuple_law(a, lam, k, nu):
    """Probability of every tuple, straight from the mechanism's description."""
    mu = np.asarray(lam) @ a
    m = a.shape[1]
    law = {}
    for t in itertools.product(range(m), repeat=k + 1):
        pr = 0.0
        for pos in range(k + 1):  # the real report sits at pos, the rest are dummies
            term = mu[t[pos]] / (k + 1)
            for j, y in enumerate(t):
                if j != pos:
                    term *= nu[y]
            pr += term
        law[t] = pr
    return law


@pytest.mark.parametrize("uniform", [True, False])
def test_output_law_matches_literal_enumeration(uniform):
    rng = np.random.default_rng(0)
    a = rng.dirichlet(np.ones(3), size=2)
    lam = [0.3, 0.7]
    nu = np.full(3, 1 / 3) if uniform else np.array([0.5, 0.3, 0.2])
    k = 3
    counts, probs = tupling_output_law(a, lam, k, dummy_law=None if uniform else nu)
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(counts.sum(1) == k + 1)
    literal = literal_tuple_law(a, lam, k, nu)
    grouped = Counter()
    for t, pr in literal.items():
        grouped[tuple(np.bincount(t, minlength=3))] += pr
    assert len(grouped) == counts.shape[0]
    for c, pr in zip(counts, probs, strict=True):
        assert pr == pytest.approx(grouped[tuple(c)], abs=1e-14)


def test_exact_loss_equals_tuple_level_loss():
    a = randomised_response_matrix(3, 1.0)
    l0, l1 = [0.8, 0.2, 0.0], [0.1, 0.1, 0.8]
    k, nu = 3, np.full(3, 1 / 3)
    p = np.array(list(literal_tuple_law(a, l0, k, nu).values()))
    q = np.array(list(literal_tuple_law(a, l1, k, nu).values()))
    ex = tupling_exact_privacy(a, l0, l1, k, delta=0.1)
    tuple_level = max(approximate_max_divergence(p, q, 0.1), approximate_max_divergence(q, p, 0.1))
    assert ex.distp_epsilon == pytest.approx(tuple_level, abs=1e-12)


def test_guarantee_formula():
    a = np.eye(3)
    g = tupling_guarantee(a, [[0.5, 0.5, 0], [0, 0.5, 0.5]], k=20, alpha=3.0)
    assert g.beta == 0.5
    assert g.epsilon == pytest.approx(math.log((20 + 3.5 * 3) / (20 - 9)))
    assert g.delta == pytest.approx(2 * math.exp(-2 * 9 / (20 * 0.25)))
    assert (g.k, g.n_outputs, g.alpha) == (20, 3, 3.0)


def test_stated_guarantee_holds_exactly_on_small_domains():
    """The reconstruction's (eps_alpha, delta_alpha)-PDistP, against the exact loss."""
    rng = np.random.default_rng(1)
    checked = 0
    for trial in range(80):
        m, k = int(rng.integers(2, 5)), int(rng.integers(1, 21))
        a = np.eye(m) if trial % 2 == 0 else rng.dirichlet(np.ones(m) * 0.3, size=m)
        l0, l1 = rng.dirichlet(np.ones(m) * 0.5), rng.dirichlet(np.ones(m) * 0.5)
        alpha = float(rng.uniform(0.05, 0.99)) * k / m
        g = tupling_guarantee(a, [l0, l1], k, alpha)
        ex = tupling_exact_privacy(a, l0, l1, k, epsilon=g.epsilon)
        assert ex.pdistp_delta <= g.delta  # exact delta at eps_alpha
        if g.delta < 1:
            checked += 1
            ex = tupling_exact_privacy(a, l0, l1, k, delta=g.delta)
            assert ex.pdistp_epsilon <= g.epsilon  # exact eps at delta_alpha
            assert ex.distp_epsilon <= ex.pdistp_epsilon + 1e-12
    assert checked >= 30  # the guarantee was non-vacuous in many trials


def test_dummies_do_not_reduce_pure_distp():
    """The likelihood ratio (c.mu)/(c.mu') peaks at a one-value tuple: D_inf equals A's."""
    rng = np.random.default_rng(2)
    for _ in range(10):
        a = rng.dirichlet(np.ones(3), size=3)
        l0, l1 = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
        mu0, mu1 = np.asarray(l0) @ a, np.asarray(l1) @ a
        base = max(approximate_max_divergence(mu0, mu1), approximate_max_divergence(mu1, mu0))
        ex = tupling_exact_privacy(a, l0, l1, k=6)
        assert ex.max_divergence == pytest.approx(base, abs=1e-10)
        # but with delta the dummies help: the PDistP eps at delta = 0.1 is smaller
        assert tupling_exact_privacy(a, l0, l1, k=6, delta=0.1).pdistp_epsilon <= base + 1e-12


def test_sampler_matches_exact_law():
    a = randomised_response_matrix(3, 1.0)
    k = 2
    counts, probs = tupling_output_law(a, [1, 0, 0], k)
    rng = random.Random(3)
    n = 3000
    seen = Counter()
    for _ in range(n):
        out = tupling_sample(a, 0, k, seed=rng).output
        assert len(out) == k + 1
        seen[tuple(np.bincount(out, minlength=3))] += 1
    chi2 = sum((seen[tuple(c)] - n * p) ** 2 / (n * p) for c, p in zip(counts, probs, strict=True))
    assert chi2 < 35  # 9 degrees of freedom: P(chi2 > 35) < 1e-4


def test_sampler_randomness_is_recorded():
    a = np.eye(3)
    r1, r2 = tupling_sample(a, 1, 4, seed=5), tupling_sample(a, 1, 4, seed=5)
    assert r1 == r2 and not r1.secure and r1.seed == 5
    assert 1 in r1.output  # identity base: the real value is always in the tuple
    s = tupling_sample(a, 1, 4, dummy_law=[0.2, 0.3, 0.5])
    assert s.secure and s.seed is None and len(s.output) == 5


def test_bad_inputs():
    a = np.eye(3)
    with pytest.raises(ParameterError, match="alpha must be < k/"):
        tupling_guarantee(a, [[1, 0, 0]], k=3, alpha=1.0)
    with pytest.raises(ParameterError, match="k \\(the number of dummies\\)"):
        tupling_sample(a, 0, 0)
    with pytest.raises(QueryError, match="input index"):
        tupling_sample(a, 3, 2)
    with pytest.raises(ParameterError, match="positive probability"):
        tupling_output_law(a, [1, 0, 0], 2, dummy_law=[1, 0, 0])
    with pytest.raises(ParameterError, match="count vectors"):
        tupling_output_law(np.eye(30), np.eye(30)[0], 40)
    with pytest.raises(ParameterError, match="at least one"):
        tupling_guarantee(a, [], k=3, alpha=0.5)
