"""Tests for quiltpriv.distribution.local_distribution_privacy ([KM19], Kawamoto and Murakami)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from quiltpriv.distribution.local_distribution_privacy import (
    approximate_max_divergence,
    distp_epsilon,
    exponential_mechanism_matrix,
    f_distp_epsilon,
    f_divergence,
    laplace_max_divergence,
    laplace_scale_for_distp,
    lift,
    pdistp_epsilon,
    point_privacy_epsilon,
    probabilistic_epsilon,
    randomised_response_matrix,
    sample_mechanism,
    xdistp_epsilon,
)
from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.utils.distances import (
    lifted_relation,
    line_metric,
    wasserstein_1,
    wasserstein_1_line,
    wasserstein_inf,
    wasserstein_inf_line,
)


def line_cost(xs, ys=None):
    ys = xs if ys is None else ys
    return np.abs(np.subtract.outer(np.asarray(xs, float), np.asarray(ys, float)))


def dyadic_law(rng, n, denom=64, zeros=True):
    """A random law with exact binary probabilities (multiples of 1/denom)."""
    w = rng.multinomial(denom, rng.dirichlet(np.ones(n) * (0.5 if zeros else 5.0)))
    return w / denom


# ---------------------------------------------------------------------------------------------
# spec oracles

ORACLE = [
    ((0.2, 0.3, 0.5), (0, 0.5, 0.5), 0.2, 1.0),
    ((1, 0, 0), (0, 0, 1), 2.0, 2.0),
    ((0.5, 0, 0.5), (0, 1, 0), 1.0, 1.0),
    ((0.6, 0.4, 0, 0), (0, 0, 0.4, 0.6), 2.2, 3.0),
]


@pytest.mark.parametrize(("lam0", "lam1", "w1", "winf"), ORACLE)
def test_oracle_table_general_metric(lam0, lam1, w1, winf):
    xs = list(range(len(lam0)))
    c = line_cost(xs)
    assert wasserstein_inf(c, lam0, lam1).distance == winf
    assert wasserstein_inf(c, lam1, lam0).distance == winf
    assert wasserstein_1(c, lam0, lam1).distance == pytest.approx(w1, abs=1e-9)
    # and the line (quantile coupling) versions agree
    assert wasserstein_inf_line(xs, list(lam0), xs, list(lam1)) == winf
    assert wasserstein_1_line(xs, list(lam0), xs, list(lam1)) == pytest.approx(w1, abs=1e-12)


def test_laplace_oracles():
    # point masses at 0 and 2, scale 1: D_inf = 2 = eps W_inf (tight)
    assert laplace_max_divergence([0], [1], [2], [1], 1.0) == pytest.approx(2.0, abs=1e-12)
    assert laplace_max_divergence([2], [1], [0], [1], 1.0) == pytest.approx(2.0, abs=1e-12)
    # (delta_0 + delta_2)/2 against delta_1
    fwd = laplace_max_divergence([0, 2], [0.5, 0.5], [1], [1], 1.0)
    rev = laplace_max_divergence([1], [1], [0, 2], [0.5, 0.5], 1.0)
    assert fwd == pytest.approx(math.log(math.cosh(1.0)), abs=1e-12)
    assert round(fwd, 6) == 0.433781
    assert rev == pytest.approx(1.0, abs=1e-12)
    # both within XDistP: D_inf <= W_inf / scale with W_inf = 1
    assert fwd <= 1.0 + 1e-12 and rev <= 1.0 + 1e-12


def test_laplace_max_divergence_against_dense_grid():
    rng = np.random.default_rng(1)
    for _ in range(20):
        x0, x1 = rng.normal(size=3) * 2, rng.normal(size=4) * 2
        l0, l1 = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(4))
        b = float(rng.uniform(0.3, 2.0))
        exact = laplace_max_divergence(x0, l0, x1, l1, b)
        ys = np.linspace(-15, 15, 20001)
        d0 = (l0[None, :] * np.exp(-np.abs(ys[:, None] - x0) / b)).sum(1)
        d1 = (l1[None, :] * np.exp(-np.abs(ys[:, None] - x1) / b)).sum(1)
        grid = max(0.0, float(np.max(np.log(d0) - np.log(d1))))
        assert grid <= exact + 1e-9  # the supremum is never exceeded on a grid
        assert grid >= exact - 1e-3  # and the grid gets close to it


def test_randomised_response_oracles():
    a = randomised_response_matrix(3, math.log(2))
    assert np.allclose(a, [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    r = distp_epsilon(a, [((1, 0, 0), (0, 0, 1))])
    assert r.epsilon == pytest.approx(math.log(2), abs=1e-12)
    r = distp_epsilon(a, [((0.5, 0.5, 0), (0, 0.5, 0.5))], symmetric=False)
    assert r.epsilon == pytest.approx(math.log(1.5), abs=1e-12)
    assert round(r.epsilon, 6) == 0.405465
    assert point_privacy_epsilon(a) == pytest.approx(math.log(2), abs=1e-12)


def test_laplace_calibration():
    cal = laplace_scale_for_distp([0, 1, 2], [0.2, 0.3, 0.5], [0, 1, 2], [0, 0.5, 0.5], 0.5)
    assert cal.w_inf == 1.0 and cal.scale == 2.0
    rng = np.random.default_rng(7)
    for _ in range(25):
        x0, x1 = rng.integers(-5, 6, size=3), rng.integers(-5, 6, size=3)
        l0, l1 = dyadic_law(rng, 3, zeros=False), dyadic_law(rng, 3, zeros=False)
        eps = float(rng.uniform(0.1, 3))
        cal = laplace_scale_for_distp(x0, l0, x1, l1, eps)
        if cal.w_inf == 0:
            continue
        assert cal.scale * eps >= cal.w_inf
        for args in ((x0, l0, x1, l1), (x1, l1, x0, l0)):
            assert laplace_max_divergence(*args, cal.scale) <= eps * (1 + 1e-12)


# ---------------------------------------------------------------------------------------------
# exact divergences against brute force


def brute_max_divergence(p, q, delta):
    best = 0.0
    for r in range(1, len(p) + 1):
        for s in itertools.combinations(range(len(p)), r):
            ps, qs = p[list(s)].sum(), q[list(s)].sum()
            if ps > delta:
                best = max(best, math.inf if qs == 0 else math.log((ps - delta) / qs))
    return best


def brute_probabilistic(p, q, delta, *, one_set=True):
    """Definition 13 by search over every excluded set Omega; one_set=False is the unsafe
    reading (a set per direction), kept to show what it would report."""
    if not one_set:
        return max(brute_probabilistic_one_direction(p, q, delta),
                   brute_probabilistic_one_direction(q, p, delta))
    best = math.inf
    n = len(p)
    for r in range(n + 1):
        for omega in itertools.combinations(range(n), r):
            o = list(omega)
            if p[o].sum() > delta or q[o].sum() > delta:
                continue
            e = 0.0
            for y in range(n):
                if y in omega or (p[y] == 0 and q[y] == 0):
                    continue
                e = max(e, math.inf if p[y] == 0 or q[y] == 0 else abs(math.log(p[y] / q[y])))
            best = min(best, e)
    return best


def brute_probabilistic_one_direction(p, q, delta):
    best = math.inf
    n = len(p)
    for r in range(n + 1):
        for omega in itertools.combinations(range(n), r):
            o = list(omega)
            if p[o].sum() > delta or q[o].sum() > delta:
                continue
            rest = [y for y in range(n) if y not in omega and p[y] > 0]
            e = 0.0
            for y in rest:
                e = max(e, math.inf if q[y] == 0 else math.log(p[y] / q[y]))
            best = min(best, e)
    return best


def test_approximate_max_divergence_matches_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(1, 7))
        p, q = dyadic_law(rng, n), dyadic_law(rng, n)
        delta = [0.0, 0.01, 0.05, 0.2, 0.5][trial % 5]
        exact = approximate_max_divergence(p, q, delta)
        brute = brute_max_divergence(p, q, delta)
        if math.isinf(brute):
            assert math.isinf(exact)
        else:
            assert exact == pytest.approx(brute, abs=1e-12)


def test_probabilistic_epsilon_matches_brute_force():
    rng = np.random.default_rng(2)
    for trial in range(300):
        n = int(rng.integers(1, 7))
        p, q = dyadic_law(rng, n), dyadic_law(rng, n)
        delta = [0.0, 0.02, 0.1, 0.3][trial % 4]
        exact = probabilistic_epsilon(p, q, delta)
        brute = brute_probabilistic(p, q, delta)
        if math.isinf(brute):
            assert math.isinf(exact)
        else:
            assert exact == pytest.approx(brute, abs=1e-12)
        # PDistP implies DistP at the same (eps, delta); one set for both directions is
        # symmetric and never below the per-direction reading
        assert approximate_max_divergence(p, q, delta) <= exact + 1e-12
        assert probabilistic_epsilon(q, p, delta) == exact
        assert brute_probabilistic(p, q, delta, one_set=False) <= exact + 1e-12


def test_probabilistic_epsilon_one_excluded_set_for_both_directions():
    # Each direction alone can exclude its one violating output (mass 0.2 and 0.1 <= delta
    # under both laws), but one set must exclude both (mass 0.3 > delta): eps = ln 2, not 0.
    p, q = np.array([0.2, 0.1, 0.7]), np.array([0.1, 0.2, 0.7])
    assert brute_probabilistic(p, q, 0.2, one_set=False) == 0.0
    assert brute_probabilistic(p, q, 0.2) == pytest.approx(math.log(2), abs=1e-15)
    assert probabilistic_epsilon(p, q, 0.2) == pytest.approx(math.log(2), abs=1e-15)
    a = np.array([[0.2, 0.1, 0.7], [0.1, 0.2, 0.7]])  # identity lifting of point masses
    res = pdistp_epsilon(a, [([1, 0], [0, 1])], 0.2)
    assert res.epsilon == pytest.approx(math.log(2), abs=1e-15)


def test_f_divergences_known_values():
    p, q = [0.5, 0.5], [0.25, 0.75]
    kl = 0.5 * math.log(2) + 0.5 * math.log(0.5 / 0.75)
    assert f_divergence(p, q, "kl") == pytest.approx(kl, abs=1e-15)
    rkl = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)
    assert f_divergence(p, q, "reverse_kl") == pytest.approx(rkl, abs=1e-15)
    assert f_divergence(p, q, "total_variation") == pytest.approx(0.25)
    assert f_divergence(p, q, "chi_square") == pytest.approx(0.25**2 / 0.25 + 0.25**2 / 0.75)
    hel = (math.sqrt(0.5) - 0.5) ** 2 + (math.sqrt(0.5) - math.sqrt(0.75)) ** 2
    assert f_divergence(p, q, "hellinger") == pytest.approx(hel, abs=1e-15)
    assert f_divergence([1, 0], [0.5, 0.5], "kl") == pytest.approx(math.log(2))
    assert math.isinf(f_divergence([0.5, 0.5], [1, 0], "kl"))
    assert math.isinf(f_divergence([0.5, 0.5], [1, 0], "chi_square"))
    assert math.isinf(f_divergence([1, 0], [0.5, 0.5], "reverse_kl"))
    with pytest.raises(ParameterError, match="unknown divergence"):
        f_divergence(p, q, "renyi")


def test_f_distp_joint_convexity_bound():
    """D_f(A#l || A#l') <= sum_gamma D_f(A(x) || A(x')) for any coupling gamma ([KM19])."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        a = rng.dirichlet(np.ones(4), size=3)
        l0, l1 = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
        gamma = wasserstein_1(line_cost([0, 1, 2]), l0, l1).coupling
        for div in ("kl", "reverse_kl", "total_variation", "chi_square", "hellinger"):
            lhs = f_distp_epsilon(a, [(l0, l1)], div, symmetric=False).epsilon
            rhs = sum(gamma[i, j] * f_divergence(a[i], a[j], div)
                      for i in range(3) for j in range(3))
            assert lhs <= rhs + 1e-12


def test_pdistp_not_below_distp_on_mechanisms():
    rng = np.random.default_rng(4)
    for _ in range(30):
        a = rng.dirichlet(np.ones(5) * 0.7, size=4)
        pairs = [(rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4)))]
        for delta in (0.0, 0.05, 0.2):
            d = distp_epsilon(a, pairs, delta)
            pd = pdistp_epsilon(a, pairs, delta)
            assert pd.epsilon >= d.epsilon - 1e-12
            assert len(d.pair_epsilons) == 2


# ---------------------------------------------------------------------------------------------
# distances


def brute_winf(cost, p, q):
    """Smallest threshold t with Hall's condition p(S) <= q(N_t(S)) for every S."""
    sp, sq = np.flatnonzero(p > 0), np.flatnonzero(q > 0)
    for t in np.unique(cost[np.ix_(sp, sq)]):
        ok = True
        for r in range(1, len(sp) + 1):
            for s in itertools.combinations(sp, r):
                nb = [j for j in sq if np.any(cost[list(s), j] <= t)]
                if p[list(s)].sum() > q[nb].sum():
                    ok = False
                    break
            if not ok:
                break
        if ok:
            return float(t)
    raise AssertionError("unreachable")


def test_winf_against_hall_brute_force_on_general_metrics():
    rng = np.random.default_rng(5)
    for _ in range(60):
        n, m = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        xs, ys = rng.integers(0, 5, size=(n, 2)), rng.integers(0, 5, size=(m, 2))
        cost = np.sqrt(((xs[:, None, :] - ys[None, :, :]) ** 2).sum(-1))
        p, q = dyadic_law(rng, n), dyadic_law(rng, m)
        res = wasserstein_inf(cost, p, q)
        assert res.distance == brute_winf(cost, p, q)
        g = res.coupling
        assert np.allclose(g.sum(1), p) and np.allclose(g.sum(0), q) and np.all(g >= 0)
        assert np.all(cost[g > 0] <= res.distance)


def test_general_distances_agree_with_line_versions():
    rng = np.random.default_rng(6)
    for trial in range(80):
        n, m = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        xs, ys = rng.integers(-6, 7, size=n), rng.integers(-6, 7, size=m)
        if trial % 2:
            p, q = dyadic_law(rng, n), dyadic_law(rng, m)
        else:  # arbitrary floats: both sides use the exact binary values, renormalised exactly
            p, q = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(m))
        c = line_cost(xs, ys)
        assert wasserstein_inf(c, p, q).distance == wasserstein_inf_line(xs, p, ys, q)
        w1 = wasserstein_1(c, p, q).distance
        w1_line = wasserstein_1_line(xs, p, ys, q)
        assert w1 >= w1_line - 1e-12  # an explicit coupling never undercuts the optimum
        assert w1 == pytest.approx(w1_line, abs=1e-7)


def test_line_metric_rounds_up_and_matches_line_distances():
    from fractions import Fraction

    rng = np.random.default_rng(12)
    mismatches_plain = 0
    for _ in range(30):
        n = int(rng.integers(5, 40))
        xs, ys = rng.normal(size=n), rng.normal(size=n)
        p, q = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
        c = line_metric(xs, ys)
        for i in range(0, n, 7):
            for j in range(0, n, 5):
                exact = abs(Fraction(float(xs[i])) - Fraction(float(ys[j])))
                assert Fraction(float(c[i, j])) >= exact
                assert float(c[i, j]) <= np.nextafter(float(exact), np.inf)
        assert wasserstein_inf(c, p, q).distance == wasserstein_inf_line(xs, p, ys, q)
        plain = np.abs(np.subtract.outer(xs, ys))
        w_plain, w_up = wasserstein_inf(plain, p, q).distance, wasserstein_inf(c, p, q).distance
        assert w_plain <= w_up
        mismatches_plain += w_plain != w_up
    assert mismatches_plain > 0  # plain float subtraction does round some distances down


def test_winf_small_far_mass():
    # W_inf sees a sliver of mass far away; W_1 barely does
    p = [0.999, 0.0, 0.001]
    q = [1.0, 0.0, 0.0]
    c = line_cost([0, 1, 100])
    assert wasserstein_inf(c, p, q).distance == 100.0
    assert wasserstein_1(c, p, q).distance == pytest.approx(0.1, abs=1e-9)


def test_lifted_relation_and_dp_implies_distp():
    rng = np.random.default_rng(8)
    n = 4
    phi = np.abs(np.subtract.outer(range(n), range(n))) <= 1  # adjacent values on a line
    for _ in range(25):
        a = rng.dirichlet(np.ones(3), size=n)
        dp = point_privacy_epsilon(a, phi)
        # a random coupling supported on phi gives a pair in phi#
        g = rng.random((n, n)) * phi
        g /= g.sum()
        l0, l1 = g.sum(1), g.sum(0)
        lr = lifted_relation(phi, l0, l1)
        assert lr.holds
        assert np.allclose(lr.coupling.sum(1), l0) and np.allclose(lr.coupling.sum(0), l1)
        assert not np.any(lr.coupling[~phi] > 0)
        assert distp_epsilon(a, [(l0, l1)]).epsilon <= dp + 1e-12
    assert not lifted_relation(phi, [1, 0, 0, 0], [0, 0, 1, 0]).holds
    assert lifted_relation(phi, [0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]).holds


def test_xdp_mechanism_gives_xdistp_with_winf():
    """A clamped geometric mechanism is (eps, |.|)-XDP, hence XDistP with W_inf ([KM19])."""
    eps, n = 0.7, 5
    a_ = math.exp(-eps)
    z = np.arange(-60, 61)
    pz = (1 - a_) / (1 + a_) * a_ ** np.abs(z)
    mech = np.zeros((n, n))
    for x in range(n):
        for zz, pp in zip(z, pz, strict=True):
            mech[x, min(max(x + zz, 0), n - 1)] += pp
    mech /= mech.sum(1, keepdims=True)
    metric = line_cost(range(n))
    assert point_privacy_epsilon(mech, np.abs(metric) <= 1) <= eps + 1e-9
    rng = np.random.default_rng(9)
    pairs = [(rng.dirichlet(np.ones(n) * 0.4), rng.dirichlet(np.ones(n) * 0.4))
             for _ in range(30)]
    r = xdistp_epsilon(mech, metric, pairs)
    assert r.epsilon <= eps + 1e-9
    assert len(r.distances) == 60
    for k, (l0, l1) in enumerate(pairs):
        w = r.distances[2 * k]
        assert w == wasserstein_inf_line(list(range(n)), l0, list(range(n)), l1)


def test_exponential_mechanism_is_eps_dp():
    rng = np.random.default_rng(10)
    for _ in range(20):
        u = rng.normal(size=(4, 6))
        eps = float(rng.uniform(0.1, 2))
        a = exponential_mechanism_matrix(u, eps)
        assert np.allclose(a.sum(1), 1)
        assert point_privacy_epsilon(a) <= eps + 1e-12
    # utility -|x - y| on a line, sensitivity 1 on adjacent inputs
    xs = np.arange(5)
    u = -np.abs(np.subtract.outer(xs, xs)).astype(float)
    phi = np.abs(np.subtract.outer(xs, xs)) <= 1
    a = exponential_mechanism_matrix(u, 1.0, adjacency=phi)
    assert point_privacy_epsilon(a, phi) <= 1.0 + 1e-12


def test_lift_and_sampling():
    a = randomised_response_matrix(3, math.log(2))
    assert np.allclose(lift(a, [0.5, 0.5, 0]), [0.375, 0.375, 0.25])
    r1 = sample_mechanism(a, 0, seed=11)
    r2 = sample_mechanism(a, 0, seed=11)
    assert r1 == r2 and not r1.secure and r1.seed == 11
    secure = sample_mechanism(a, 1)
    assert secure.secure and secure.seed is None and 0 <= secure.output < 3
    import random
    rng = random.Random(12)
    draws = [sample_mechanism(a, 0, seed=rng.randrange(2**32)).output for _ in range(4000)]
    freq = np.bincount(draws, minlength=3) / 4000
    assert np.all(np.abs(freq - a[0]) < 0.03)  # > 4 standard deviations


def test_bad_inputs_raise_named_errors():
    with pytest.raises(ParameterError, match="row 1 sums"):
        distp_epsilon([[0.5, 0.5], [0.5, 0.6]], [([1, 0], [0, 1])])
    with pytest.raises(ParameterError, match="negative"):
        lift([[1.5, -0.5], [0.5, 0.5]], [1, 0])
    with pytest.raises(ParameterError, match="inputs"):
        lift(np.eye(2), [1, 0, 0])
    with pytest.raises(ParameterError, match="delta"):
        distp_epsilon(np.eye(2), [([1, 0], [0, 1])], delta=1.0)
    with pytest.raises(ParameterError, match="pairs is empty"):
        distp_epsilon(np.eye(2), [])
    with pytest.raises(ParameterError, match="shape"):
        wasserstein_inf(np.ones((2, 3)), [1, 0], [1, 0])
    with pytest.raises(ParameterError, match="finite"):
        wasserstein_1([[0, -1], [1, 0]], [1, 0], [1, 0])
    with pytest.raises(ParameterError, match="k must be"):
        randomised_response_matrix(1, 1.0)
    with pytest.raises(ParameterError, match="epsilon"):
        randomised_response_matrix(3, 0.0)
    with pytest.raises(QueryError, match="input index"):
        sample_mechanism(np.eye(2), 2)
    with pytest.raises(ParameterError, match="sums to"):
        approximate_max_divergence([0.5, 0.6], [0.5, 0.5])
    assert math.isinf(approximate_max_divergence([0.5, 0.5], [1, 0], 0.1))
    assert approximate_max_divergence([0.5, 0.5], [1, 0], 0.5) == 0.0


def test_rows_accepted_near_one_are_analysed_as_sampled():
    # Rows summing to 1 within 1e-9 are accepted and sampled renormalised exactly
    # (sample_mechanism), so the loss to report is that of the renormalised rows.
    # Both rows below are then the uniform law, whose loss is exactly 0 (as given: 1.6e-9).
    a = np.array([[0.5 + 4e-10, 0.5 + 4e-10], [0.5 - 4e-10, 0.5 - 4e-10]])
    assert distp_epsilon(a, [([1.0, 0.0], [0.0, 1.0])]).epsilon < 1e-15
    # Row 0 sums to 1 + 8e-10: analysed as given, P(y0 | x1) / P(y0 | x0) loses that factor
    # and the reported eps would be 8e-10 below the loss of the law sampled.
    b = np.array([[0.3 + 8e-10, 0.7], [0.5, 0.5]])
    row0 = [Fraction(v) for v in b[0]]
    exact = math.log(Fraction(b[1, 0]) / (row0[0] / sum(row0)))
    assert distp_epsilon(b, [([1.0, 0.0], [0.0, 1.0])]).epsilon >= exact - 1e-14
