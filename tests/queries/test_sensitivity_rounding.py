"""Every query's sensitivity is exact or rounded up, never below the true Delta_B.

Reference: the same sums in exact rationals (Fractions of the floats the query holds).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

from quiltpriv.queries.fraction import FractionQuery
from quiltpriv.queries.query import LinearQuery, MeanQuery, SumQuery
from quiltpriv.utils.rounding import EXACT_TERMS, round_up, sum_of_spans_up


def _exact(weights, lows, highs) -> Fraction:
    return sum((abs(Fraction(w)) * (Fraction(h) - Fraction(lo))
                for w, lo, h in zip(weights, lows, highs, strict=True)), Fraction(0))


def test_the_mean_of_twelve_steps_is_not_understated() -> None:
    # float summation gave 0.49999999999999994 for six weights 1/12: below the exact value
    names = [f"x{i:02d}" for i in range(1, 13)]
    q = LinearQuery(dict.fromkeys(names, 1 / 12), dict.fromkeys(names, (0, 1)))
    exact = 6 * Fraction(1 / 12)
    assert sum([1 / 12] * 6) < exact  # the old arithmetic
    assert q.sensitivity(names[:6]) == round_up(exact) == 0.5


def test_linear_sensitivity_is_the_least_float_above_the_exact_sum() -> None:
    rng = random.Random(4)
    for _ in range(300):
        n = rng.randint(1, 12)
        names = [f"a{k}" for k in range(n)]
        w = {a: rng.choice([1 / 3, -0.1, 1 / 7, rng.uniform(-5, 5), 1e-300]) for a in names}
        b = {}
        for a in names:
            lo = rng.choice([0.1, -1 / 3, rng.uniform(-10, 10)])
            b[a] = (lo, lo + rng.choice([0.2, 1 / 3, rng.uniform(0, 10)]))
        q = LinearQuery(w, b)
        cols = rng.sample(names, rng.randint(0, n))
        exact = _exact([q.weights[a] for a in cols], [q.bounds[a][0] for a in cols],
                       [q.bounds[a][1] for a in cols])
        assert q.sensitivity(cols) == round_up(exact)


def test_long_sums_take_a_bound_that_is_never_below_and_a_few_ulps_above() -> None:
    rng = random.Random(9)
    for n in (EXACT_TERMS + 1, 1000, 5000):
        w = [rng.choice([1 / n, rng.uniform(-1, 1), 1 / 3]) for _ in range(n)]
        lo = [rng.uniform(-2, 2) for _ in range(n)]
        hi = [x + rng.choice([0.1, 1 / 3, rng.uniform(0, 3)]) for x in lo]
        got = sum_of_spans_up(w, lo, hi)
        exact = _exact(w, lo, hi)
        assert Fraction(got) >= exact
        assert got <= math.nextafter(round_up(exact) * (1 + 2.0**-48), math.inf)


def test_sum_mean_and_fraction_of_time_round_up() -> None:
    for lo, hi in ((0.1, 0.3), (-1 / 3, 0.7), (0.0, 1.0), (18.0, 90.0)):
        exact = Fraction(hi) - Fraction(lo)
        assert MeanQuery("a", lower=lo, upper=hi).sensitivity(["a"]) == round_up(exact)
        assert SumQuery("a", 7, lower=lo, upper=hi).sensitivity(["a"]) == round_up(7 * exact)
        assert SumQuery("a", 7, lower=lo, upper=hi).sensitivity(["b"]) == 0.0
    steps = [f"s{k}" for k in range(7)]
    q = FractionQuery(steps, state=1)
    for n in range(8):
        assert q.sensitivity(steps[:n]) == round_up(Fraction(n, 7))
