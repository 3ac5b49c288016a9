"""[KM19] Table III compositions and the Sec. III-E/F interpretation, against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quiltpriv.distribution import (
    bayes_factor_bound,
    close_beliefs_bound,
    close_beliefs_xdistp,
    compose_independent_inputs,
    compose_same_input,
    independent_inputs_mechanism,
    post_process,
    pre_process,
    product_distribution,
    same_input_mechanism,
)
from quiltpriv.distribution.local_distribution_privacy import (
    approximate_max_divergence,
    distp_epsilon,
    f_distp_epsilon,
    f_divergence,
    lift,
    pdistp_epsilon,
    point_privacy_epsilon,
    xdistp_epsilon,
)
from quiltpriv.errors import ParameterError

TOL = 1e-9


def mechanism(rng, n, m, floor=0.02):
    a = rng.random((n, m)) + floor
    return a / a.sum(axis=1, keepdims=True)


def law(rng, n, zeros=False):
    p = rng.random(n)
    if zeros and n > 2:
        p[rng.integers(n)] = 0.0
    return p / p.sum()


def dmax(p, q, delta=0.0):
    return max(approximate_max_divergence(p, q, delta), approximate_max_divergence(q, p, delta))


def test_independent_inputs_add_and_are_exact_at_delta_zero():
    rng = np.random.default_rng(1)
    for trial in range(60):
        a0, a1 = mechanism(rng, 3, 3), mechanism(rng, 2, 4)
        l0, m0, l1, m1 = law(rng, 3), law(rng, 3), law(rng, 2), law(rng, 2)
        d0, d1 = [(0.0, 0.0), (0.01, 0.05), (0.1, 0.0)][trial % 3]
        e0 = distp_epsilon(a0, [(l0, m0)], d0, symmetric=False).epsilon
        e1 = distp_epsilon(a1, [(l1, m1)], d1, symmetric=False).epsilon
        g = compose_independent_inputs([(e0, d0), (e1, d1)])
        assert g.delta == pytest.approx(d0 + d1)
        joint = independent_inputs_mechanism(a0, a1)
        p, q = lift(joint, product_distribution(l0, l1)), lift(joint, product_distribution(m0, m1))
        actual = approximate_max_divergence(p, q, g.delta)
        assert actual <= g.epsilon + TOL
        if d0 == d1 == 0:  # max-divergence of products adds exactly
            assert actual == pytest.approx(e0 + e1, abs=1e-9)


def test_same_input_distribution_privacy_alone_gives_no_bound():
    # Each mechanism leaks nothing about (lam, lam'), together they reveal it.
    a0 = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    a1 = a0[::-1]
    lam, lam2 = [0.5, 0.0, 0.5], [0.0, 1.0, 0.0]
    assert distp_epsilon(a0, [(lam, lam2)]).epsilon == 0.0
    assert distp_epsilon(a1, [(lam, lam2)]).epsilon == 0.0
    joint = same_input_mechanism(a0, a1)
    assert math.isinf(distp_epsilon(joint, [(lam, lam2)]).epsilon)
    assert math.isinf(compose_same_input([(0.0, 0.0), (0.0, 0.0)], point_private=False).epsilon)


def test_same_input_can_exceed_the_sum_of_distp_epsilons():
    # The Laplace example of [KM19]: on the line, point masses at 0 and 2 mixed against a point
    # mass at 1; a discretised two-sided geometric at eps = 1 released twice on the same input.
    ys = np.arange(-30, 33)
    a = np.array([np.exp(-np.abs(ys - x)) for x in (0, 1, 2)])
    a /= a.sum(axis=1, keepdims=True)
    pair = [([0.5, 0.0, 0.5], [0.0, 1.0, 0.0])]
    single = distp_epsilon(a, pair, symmetric=False).epsilon
    assert single == pytest.approx(math.log(math.cosh(1.0)), abs=1e-6)  # 0.4338
    twice = distp_epsilon(same_input_mechanism(a, a), pair, symmetric=False).epsilon
    assert twice == pytest.approx(1.3250, abs=1e-4)
    assert twice > 2 * single + 0.45  # not the sum: an excess of 0.457
    # while point privacy composes: the bound from the point epsilons holds
    e = point_privacy_epsilon(a)
    g = compose_same_input([(e, 0.0), (e, 0.0)], point_private=True)
    assert twice <= g.epsilon + TOL


def test_same_input_point_privacy_composes_on_the_lifted_relation():
    rng = np.random.default_rng(2)
    for trial in range(60):
        a0, a1 = mechanism(rng, 3, 3), mechanism(rng, 3, 2)
        d0, d1 = [(0.0, 0.0), (0.02, 0.01)][trial % 2]
        e0, e1 = point_privacy_epsilon(a0, delta=d0), point_privacy_epsilon(a1, delta=d1)
        g = compose_same_input([(e0, d0), (e1, d1)], point_private=True)
        joint = same_input_mechanism(a0, a1)
        lam, lam2 = law(rng, 3, zeros=True), law(rng, 3, zeros=True)  # all pairs adjacent
        assert dmax(lift(joint, lam), lift(joint, lam2), g.delta) <= g.epsilon + TOL


def test_same_input_xdp_composes_to_xdistp():
    rng = np.random.default_rng(3)
    metric = np.abs(np.subtract.outer(np.arange(4), np.arange(4))).astype(float)
    point_pairs = [(np.eye(4)[i], np.eye(4)[j]) for i in range(4) for j in range(i + 1, 4)]
    for _ in range(20):
        a0, a1 = mechanism(rng, 4, 3), mechanism(rng, 4, 3)
        e0 = xdistp_epsilon(a0, metric, point_pairs).epsilon  # per unit of d: XDP
        e1 = xdistp_epsilon(a1, metric, point_pairs).epsilon
        g = compose_same_input([(e0, 0.0), (e1, 0.0)], point_private=True, notion="XDistP")
        joint = same_input_mechanism(a0, a1)
        pairs = [(law(rng, 4), law(rng, 4)) for _ in range(5)]
        assert xdistp_epsilon(joint, metric, pairs).epsilon <= g.epsilon + TOL


def test_kl_compositions():
    rng = np.random.default_rng(9)
    for _ in range(30):
        a0, a1 = mechanism(rng, 3, 3), mechanism(rng, 3, 4)
        l0, m0, l1, m1 = law(rng, 3), law(rng, 3), law(rng, 3), law(rng, 3)
        e0 = f_distp_epsilon(a0, [(l0, m0)], "kl", symmetric=False).epsilon
        e1 = f_distp_epsilon(a1, [(l1, m1)], "kl", symmetric=False).epsilon
        g = compose_independent_inputs([(e0, 0.0), (e1, 0.0)], notion="KL")
        joint = independent_inputs_mechanism(a0, a1)
        kl = f_distp_epsilon(joint, [(product_distribution(l0, l1),
                                      product_distribution(m0, m1))], "kl",
                             symmetric=False).epsilon
        assert kl == pytest.approx(e0 + e1, rel=1e-9, abs=1e-12) and kl <= g.epsilon + TOL
        # one input: point KL-privacy (every pair of inputs) composes to KL-DistP on all pairs
        p0 = max(f_divergence(a0[i], a0[j], "kl") for i in range(3) for j in range(3))
        p1 = max(f_divergence(a1[i], a1[j], "kl") for i in range(3) for j in range(3))
        g = compose_same_input([(p0, 0.0), (p1, 0.0)], point_private=True, notion="KL")
        both = same_input_mechanism(a0, a1)
        assert f_distp_epsilon(both, [(l0, m0)], "kl").epsilon <= g.epsilon + TOL
    with pytest.raises(ParameterError, match="no delta"):
        compose_independent_inputs([(0.1, 0.01)], notion="KL")


def test_post_processing_keeps_the_guarantee():
    rng = np.random.default_rng(4)
    for _ in range(40):
        a, mu = mechanism(rng, 3, 4), mechanism(rng, 4, 3)
        pair = [(law(rng, 3), law(rng, 3))]
        g = post_process((distp_epsilon(a, pair, 0.05).epsilon, 0.05))
        assert distp_epsilon(a @ mu, pair, 0.05).epsilon <= g.epsilon + TOL


def test_pre_processing_by_a_stable_map():
    rng = np.random.default_rng(5)
    n = 7
    adjacent = [(np.eye(n)[i], np.eye(n)[i + 1]) for i in range(n - 1)]
    for trial in range(30):
        a = mechanism(rng, n, 5, floor=0.2)
        delta = [0.0, 0.01][trial % 2]
        e = distp_epsilon(a, adjacent, delta).epsilon
        for c in (1, 2, 3):
            g = pre_process((e, delta), c)
            # T: x -> c x maps adjacent inputs of {0, 1, ...} to inputs c apart
            for i in range((n - 1) // c):
                p, q = a[c * i], a[c * (i + 1)]
                assert dmax(p, q, g.delta) <= g.epsilon + TOL
    assert pre_process((0.5, 0.0), 0.5, notion="XDistP").epsilon == 0.25
    with pytest.raises(ParameterError, match="chain length"):
        pre_process((0.5, 0.0), 1.5)


def test_bayes_factor_bounds_every_output():
    rng = np.random.default_rng(6)
    for _ in range(40):
        a = mechanism(rng, 3, 5)
        l0, l1 = law(rng, 3), law(rng, 3)
        b = bayes_factor_bound(distp_epsilon(a, [(l0, l1)]))
        p, q = lift(a, l0), lift(a, l1)
        assert np.all(p / q <= b.factor) and np.all(q / p <= b.factor)
        lo, hi = b.posterior_odds(2.0)
        for y in range(5):  # Bayes' theorem with prior odds 2
            post = 2.0 * p[y] / q[y]
            assert lo <= post <= hi
        # PDistP: outside a set of probability <= delta under both, the bound holds
        pd = pdistp_epsilon(a, [(l0, l1)], 0.1)
        bp = bayes_factor_bound(pd)
        out = (p / q > bp.factor) | (q / p > bp.factor)
        assert bp.probability == pytest.approx(0.9)
        assert p[out].sum() <= 0.1 + 1e-12 and q[out].sum() <= 0.1 + 1e-12
    with pytest.raises(ParameterError, match="PDistP"):
        bayes_factor_bound(0.5, delta=0.1)
    assert bayes_factor_bound(0.5, notion="XDistP", distance=2.0).factor >= math.exp(1.0)


def test_close_beliefs_bound_holds():
    rng = np.random.default_rng(7)
    for trial in range(60):
        a = mechanism(rng, 4, 4)
        l0, l1 = law(rng, 4), law(rng, 4)
        m0 = 0.8 * l0 + 0.2 * law(rng, 4)
        m1 = 0.8 * l1 + 0.2 * law(rng, 4)
        delta = [0.0, 0.05][trial % 2]
        e = distp_epsilon(a, [(l0, l1)], delta).epsilon  # both directions
        g = close_beliefs_bound(e, delta, l0, l1, m0, m1)
        if g.delta >= 1:
            continue  # vacuous
        assert dmax(lift(a, m0), lift(a, m1), g.delta) <= g.epsilon + TOL
    g = close_beliefs_bound(0.5, 0.0, [0.5, 0.5, 0], [0, 0.5, 0.5], [0.4, 0.4, 0.2], [0, 0.5, 0.5])
    assert math.isinf(g.epsilon)  # the belief puts mass where lam0 has none


def test_close_beliefs_xdistp_holds():
    rng = np.random.default_rng(8)
    metric = np.abs(np.subtract.outer(np.arange(5), np.arange(5))).astype(float)
    point_pairs = [(np.eye(5)[i], np.eye(5)[j]) for i in range(5) for j in range(i + 1, 5)]
    for _ in range(30):
        a = mechanism(rng, 5, 4)
        e = xdistp_epsilon(a, metric, point_pairs).epsilon
        l0, l1, m0, m1 = (law(rng, 5) for _ in range(4))
        bound = close_beliefs_xdistp(e, metric, l0, l1, m0, m1)
        assert dmax(lift(a, m0), lift(a, m1)) <= bound + TOL
