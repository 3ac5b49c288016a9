"""W_inf and W_1 on the line: oracles, a brute-force coupling LP, exactness and bad inputs."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.stats import wasserstein_distance

from quiltpriv.errors import ParameterError
from quiltpriv.utils.distances import (
    quantile_coupling,
    wasserstein_1_line,
    wasserstein_inf_line,
    wasserstein_line,
)

# W_1 and W_inf on the line (d = |x - x'|), derived by hand from [KM19, Sec. II-G].
LINE_ORACLES = [
    ((0.2, 0.3, 0.5), (0, 0.5, 0.5), 0.2, 1.0),
    ((1, 0, 0), (0, 0, 1), 2.0, 2.0),
    ((0.5, 0, 0.5), (0, 1, 0), 1.0, 1.0),
    ((0.6, 0.4, 0, 0), (0, 0, 0.4, 0.6), 2.2, 3.0),
]


@pytest.mark.parametrize(("p", "q", "w1", "winf"), LINE_ORACLES)
def test_line_distance_oracles(p, q, w1, winf):
    support = list(range(len(p)))
    assert wasserstein_inf_line(support, p, support, q) == winf
    assert wasserstein_1_line(support, p, support, q) == pytest.approx(w1, abs=1e-12)
    # symmetric in the two laws
    assert wasserstein_inf_line(support, q, support, p) == winf


def test_paper_example2_table_gives_one():
    # Example 2 of the attribute-privacy paper: Bin(4, 0.6) against Bin(4, 0.4), exact decimals.
    support = range(5)
    p = ["0.0256", "0.1536", "0.3456", "0.3456", "0.1296"]
    q = ["0.1296", "0.3456", "0.3456", "0.1536", "0.0256"]
    res = wasserstein_line(support, p, support, q)
    assert res.exact_inputs
    assert res.w_inf == 1.0
    assert res.notes == ()


def _lp_winf(xs, p, ys, q):
    """Brute force: the smallest threshold t that admits a coupling supported on |x-y| <= t."""
    gaps = sorted({abs(x - y) for x in xs for y in ys})
    n, m = len(xs), len(ys)
    a_eq = np.zeros((n + m, n * m))
    for i in range(n):
        a_eq[i, i * m:(i + 1) * m] = 1
    for j in range(m):
        a_eq[n + j, j::m] = 1
    b_eq = np.concatenate([p, q])
    for t in gaps:
        allowed = [abs(xs[i] - ys[j]) <= t for i in range(n) for j in range(m)]
        bounds = [(0, None) if ok else (0, 0) for ok in allowed]
        res = linprog(np.zeros(n * m), A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
        if res.status == 0:
            return t
    raise AssertionError("no feasible coupling")


def _lp_w1(xs, p, ys, q):
    n, m = len(xs), len(ys)
    cost = np.array([abs(xs[i] - ys[j]) for i in range(n) for j in range(m)], dtype=float)
    a_eq = np.zeros((n + m, n * m))
    for i in range(n):
        a_eq[i, i * m:(i + 1) * m] = 1
    for j in range(m):
        a_eq[n + j, j::m] = 1
    res = linprog(cost, A_eq=a_eq, b_eq=np.concatenate([p, q]), method="highs")
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("seed", range(25))
def test_against_brute_force_coupling_lp(seed):
    rng = np.random.default_rng(seed)
    n, m = rng.integers(1, 6, size=2)
    xs = sorted(rng.choice(np.arange(-6, 7), size=n, replace=False).tolist())
    ys = sorted(rng.choice(np.arange(-6, 7), size=m, replace=False).tolist())
    # integer weights over a common small denominator: exact Fractions, and margins of
    # infeasibility far above the LP solver's tolerance
    wp = rng.integers(0, 5, size=n)
    wq = rng.integers(0, 5, size=m)
    wp[rng.integers(n)] += 1
    wq[rng.integers(m)] += 1
    p = [Fraction(int(w), int(wp.sum())) for w in wp]
    q = [Fraction(int(w), int(wq.sum())) for w in wq]
    pf = np.array([float(v) for v in p])
    qf = np.array([float(v) for v in q])
    # the LP works on the positive-mass atoms (zero-mass atoms constrain nothing)
    xs_pos = [x for x, v in zip(xs, p, strict=True) if v > 0]
    ys_pos = [y for y, v in zip(ys, q, strict=True) if v > 0]
    pf_pos = pf[pf > 0]
    qf_pos = qf[qf > 0]
    expected_inf = _lp_winf(xs_pos, pf_pos, ys_pos, qf_pos)
    assert wasserstein_inf_line(xs, p, ys, q) == expected_inf
    expected_1 = _lp_w1(xs_pos, pf_pos, ys_pos, qf_pos)
    assert wasserstein_1_line(xs, p, ys, q) == pytest.approx(expected_1, abs=1e-9)
    # W_1 also against scipy's CDF formula
    assert wasserstein_1_line(xs, p, ys, q) == pytest.approx(
        wasserstein_distance(xs, ys, pf, qf), abs=1e-9)
    # coupling marginals are exact
    pieces = quantile_coupling(xs, p, ys, q)
    assert sum(pc.mass for pc in pieces) == 1
    for x, v in zip(xs, p, strict=True):
        assert sum(pc.mass for pc in pieces if pc.x == x) == v


def test_float_sliver_is_over_estimated_and_flagged():
    # 0.1 + 0.2 != 0.3 in binary floating point: a sliver of mass ~2e-17 maps 10 to 1.
    res = wasserstein_line([0, 10], [0.3, 0.7], [0, 1, 10], [0.1, 0.2, 0.7])
    assert res.w_inf == 9.0  # exact for the given binary values: safe over-estimate
    assert not res.exact_inputs
    assert res.smallest_piece_mass < 1e-15
    assert any("sliver" in n for n in res.notes)
    # the same numbers given exactly decide the tie: W_inf = 1
    assert wasserstein_inf_line([0, 10], ["0.3", "0.7"], [0, 1, 10], ["0.1", "0.2", "0.7"]) == 1
    assert wasserstein_inf_line(
        [0, 10], [Fraction(3, 10), Fraction(7, 10)],
        [0, 1, 10], [Fraction(1, 10), Fraction(2, 10), Fraction(7, 10)]) == 1


def test_tolerance_reports_excess_mass():
    res = wasserstein_line([0, 10], [0.3, 0.7], [0, 1, 10], [0.1, 0.2, 0.7], tolerance=1e-12)
    assert res.w_inf == 9.0  # w_inf itself is never relaxed
    assert res.w_inf_within_tolerance == 1.0
    assert 0 < res.excess_mass <= 1e-12
    # a real small mass is not dropped unless the tolerance covers it
    res = wasserstein_line([0, 5], ["0.999", "0.001"], [0], [1], tolerance=1e-4)
    assert res.w_inf == 5.0 and res.w_inf_within_tolerance == 5.0 and res.excess_mass == 0
    res = wasserstein_line([0, 5], ["0.999", "0.001"], [0], [1], tolerance=1e-3)
    assert res.w_inf_within_tolerance == 0.0 and res.excess_mass == pytest.approx(1e-3)


def test_tiny_real_atom_is_not_lost():
    # mass 1e-300 far away: float cumulative sums would swallow it; exact arithmetic keeps it
    assert wasserstein_inf_line([0, 1000], [1.0, 1e-300], [0], [1.0]) == 1000.0


def test_rounding_up_never_under_estimates():
    x, y = 0.1, 0.3  # the exact binary difference is not a float
    w = wasserstein_inf_line([x], [1], [y], [1])
    exact = Fraction(y) - Fraction(x)
    assert Fraction(w) >= exact  # never below the exact distance
    assert Fraction(math.nextafter(w, -math.inf)) < exact  # and the smallest float that is


def test_unsorted_duplicate_and_zero_atoms():
    a = wasserstein_inf_line([2, 0, 2, 7], [0.25, 0.5, 0.25, 0], [1], [1])
    assert a == 1.0
    assert wasserstein_1_line([2, 0, 2], [0.25, 0.5, 0.25], [1], [1]) == 1.0
    assert wasserstein_inf_line(np.array([0.0, 1.0]), np.array([0.5, 0.5]),
                                np.array([0.0, 1.0]), np.array([0.5, 0.5])) == 0.0


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([0, 1], [0.5], [0], [1]), "2 points but p has 1"),
        (([], [], [0], [1]), "p is empty"),
        (([0, 1], [0.5, 0.6], [0], [1]), "sums to"),
        (([0, 1], ["1/2", "1/3"], [0], [1]), "not exactly 1"),
        (([0, 1], [1.5, -0.5], [0], [1]), "negative"),
        (([0, float("nan")], [0.5, 0.5], [0], [1]), "finite"),
        (([0, 1], [0.5, "half"], [0], [1]), "not a number"),
        (([0, 1], [True, False], [0], [1]), "must be a number"),
        (([0], [1], [0], "1"), "string"),
        ((np.zeros((2, 2)), [1], [0], [1]), "one-dimensional"),
    ],
)
def test_bad_inputs(args, match):
    with pytest.raises(ParameterError, match=match):
        wasserstein_inf_line(*args)


def test_bad_tolerance():
    with pytest.raises(ParameterError, match="tolerance"):
        wasserstein_line([0], [1], [0], [1], tolerance=1.0)
    with pytest.raises(ParameterError, match="tolerance"):
        wasserstein_line([0], [1], [0], [1], tolerance=-0.1)


# ---------------------------------------------------------------------------------------------
# the one toolbox against slow, obviously correct CDF references (exact rationals)


def _cdf(xs, p, t):
    return sum((m for x, m in zip(xs, p, strict=True) if x <= t), Fraction(0))


def _ref_shift(xs, p, ys, q):
    """Least d with F_P(t + d) >= F_Q(t) for every t: sup_u F_P^-1(u) - F_Q^-1(u)."""
    pts = sorted(set(xs) | set(ys))
    cands = sorted({x - y for x in xs for y in ys})
    for d in cands:  # the quantity is one of the differences of support points
        if all(_cdf(xs, p, t + d) >= _cdf(ys, q, t) for t in pts):
            return d
    raise AssertionError("no candidate works")


def _ref_w1(xs, p, ys, q):
    """int |F_P(t) - F_Q(t)| dt, summed exactly between consecutive support points."""
    pts = sorted(set(xs) | set(ys))
    steps = zip(pts, pts[1:], strict=False)
    return sum((abs(_cdf(xs, p, a) - _cdf(ys, q, a)) * (b - a) for a, b in steps), Fraction(0))


def _random_law(rng, size, total=16):
    """Quarter-integer points, dyadic masses (k/16): exact as floats, so float and rational
    inputs are the same law and ties are real ties."""
    pts = [Fraction(int(v), 4) for v in rng.integers(-12, 13, size)]
    cuts = np.sort(rng.integers(0, total + 1, size - 1))
    w = np.diff(np.concatenate([[0], cuts, [total]]))  # a random composition of total
    return pts, [Fraction(int(v), total) for v in w]


@pytest.mark.parametrize("seed", range(40))
def test_toolbox_against_cdf_references(seed):
    from quiltpriv.utils.distances import (
        lifted_relation,
        line_metric,
        quantile_shift,
        wasserstein_1,
        wasserstein_inf,
        wasserstein_inf_exact,
    )

    rng = np.random.default_rng(seed)
    xs, p = _random_law(rng, int(rng.integers(1, 6)))
    ys, q = _random_law(rng, int(rng.integers(1, 6)))
    up, down = _ref_shift(xs, p, ys, q), _ref_shift(ys, q, xs, p)
    assert quantile_shift(xs, p, ys, q) == up
    assert quantile_shift(ys, q, xs, p) == down
    w_inf = max(up, down)
    assert wasserstein_inf_exact(xs, p, ys, q) == w_inf
    res = wasserstein_line(xs, p, ys, q)
    assert Fraction(res.w_inf) == w_inf  # quarters: exact as floats
    assert Fraction(res.w_1) >= _ref_w1(xs, p, ys, q)
    assert Fraction(math.nextafter(res.w_1, -math.inf)) < _ref_w1(xs, p, ys, q)
    # the finite-metric versions (max-flow, LP) on the line metric agree with the line ones
    fx, fy = [float(x) for x in xs], [float(y) for y in ys]
    pf, qf = [float(m) for m in p], [float(m) for m in q]
    cost = line_metric(fx, fy)
    assert wasserstein_inf(cost, pf, qf).distance == float(w_inf)
    w1 = wasserstein_1(cost, pf, qf).distance
    assert w1 >= float(_ref_w1(xs, p, ys, q)) - 1e-12 and w1 == pytest.approx(
        float(_ref_w1(xs, p, ys, q)), abs=1e-7)
    # a coupling within W_inf exists, none within anything smaller
    assert lifted_relation(cost <= float(w_inf), pf, qf).holds
    if w_inf > 0:
        assert not lifted_relation(cost < float(w_inf), pf, qf).holds


def test_moved_distances_still_import_with_a_warning():
    import quiltpriv.utils.distances as dist
    from quiltpriv.distribution import local_distribution_privacy as ldp

    for name in ("wasserstein_inf", "wasserstein_1", "lifted_relation", "line_metric",
                 "Transport", "LiftedRelation"):
        with pytest.warns(DeprecationWarning, match=f"distances.{name}"):
            assert getattr(ldp, name) is getattr(dist, name)
    with pytest.raises(AttributeError):
        ldp.no_such_name  # noqa: B018
