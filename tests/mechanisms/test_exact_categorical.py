"""Exact categorical sampling (quiltpriv.mechanisms.noise) and the local mechanisms that use it.

Every sampler's law is established exactly, not only statistically:

* :func:`noise.categorical` and :func:`noise.uniform_index` by *enumerating* the random source:
  a scripted ``getrandbits`` hands out every first value in turn, and the outcome counts must be
  the integer weights (or the boundaries of each outcome's interval must be exactly where the
  weights put them, when the source is too wide to enumerate);
* :func:`noise.exponential_categorical` by recording what it asks of the exact Bernoulli
  (``exp(-(gamma_i - min gamma))`` for proposal ``i``, checked in rationals; the Bernoulli itself
  is tested in test_noise.py), then by a seeded chi-square test of the whole sampler;
* the exponential mechanism and randomised response at extreme eps: the exact law they sample,
  evaluated with mpmath at 60 digits, keeps the ratio e^eps (the float sampler gave 0 and
  2^-52, an infinite loss).
"""

from __future__ import annotations

import math
import pickle
import random
from collections import Counter
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from quiltpriv.distribution import local_distribution_privacy as ldp
from quiltpriv.distribution import tupling
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms import noise


class Scripted:
    """A random source that hands out scripted values, then ``fallback`` (0: always accepted)."""

    def __init__(self, values, fallback=0):
        self.values = list(values)
        self.fallback = fallback
        self.asked: list[int] = []

    def getrandbits(self, k):
        self.asked.append(k)
        return self.values.pop(0) if self.values else self.fallback


def enumerate_first_draw(sample, bits):
    """Outcome counts over every first value of a ``bits``-bit draw that is accepted.

    A first value the sampler rejects asks for a second draw (then 0); those are not counted,
    so the counts are exactly the sampler's law times the number of accepted values.
    """
    counts: Counter = Counter()
    for r in range(2**bits):
        src = Scripted([r])
        out = sample(src)
        if len(src.asked) == 1:  # accepted at once
            counts[out] += 1
    return counts


@pytest.mark.parametrize("weights", [[1, 2, 3], [Fraction(1, 3), Fraction(1, 6), 0, Fraction(1, 2)],
                                     [0.25, 0.5, 0.125, 0.125], [7]])
def test_categorical_law_by_enumeration(weights):
    ws = [Fraction(w) for w in weights]
    den = np.lcm.reduce([w.denominator for w in ws])
    ints = [int(w * int(den)) for w in ws]
    total = sum(ints)
    bits = (total - 1).bit_length()
    counts = enumerate_first_draw(lambda src: noise.categorical(weights, src), bits)
    assert [counts[i] for i in range(len(ws))] == ints  # P(i) = w_i / sum w exactly


def test_categorical_tiny_weight_interval_is_exact():
    # the exponential mechanism's float row [1 - 7e-17, 7e-17]: too wide to enumerate, so check
    # that the outcome switches exactly at the integer weight of entry 0
    a = ldp.exponential_mechanism_matrix([[74.4, 0], [73.4, 1]], 1.0)
    row = np.asarray(a)[0].tolist()
    w = [Fraction(x) for x in row]
    den = max(x.denominator for x in w)
    w0, w1 = (int(x * den) for x in w)
    assert w1 > 0
    assert noise.categorical(row, Scripted([w0 - 1])) == 0
    assert noise.categorical(row, Scripted([w0])) == 1  # the tiny outcome is possible...
    assert noise.categorical(row, Scripted([w0 + w1 - 1])) == 1  # ...on exactly w1 values
    assert noise.categorical(row, Scripted([w0 + w1], fallback=0)) == 0  # rejected, redrawn


def test_uniform_index_law_by_enumeration():
    assert noise.uniform_index(1, Scripted([])) == 0  # one outcome: no randomness needed
    for n in (2, 3, 5, 8, 13):
        bits = (n - 1).bit_length()
        counts = enumerate_first_draw(lambda src, n=n: noise.uniform_index(n, src), bits)
        assert [counts[i] for i in range(n)] == [1] * n


class Exhausted(Exception):
    pass


class Finite:
    """Scripted values, then an exception (ends an otherwise endless rejection loop)."""

    def __init__(self, values):
        self.values = list(values)

    def getrandbits(self, k):
        if not self.values:
            raise Exhausted
        return self.values.pop(0)


def test_exponential_categorical_asks_the_exact_bernoulli(monkeypatch):
    gammas = [Fraction(5, 2), 0.1, float("inf"), Fraction(-1, 3)]
    low = Fraction(-1, 3)
    expected = {0: Fraction(5, 2) - low, 1: Fraction(0.1) - low, 3: Fraction(0)}
    seen = []

    def reject(num, den, rng):
        seen.append(Fraction(num, den))
        return False

    monkeypatch.setattr(noise, "_bern_exp_neg", reject)
    for proposal in (0, 1, 3):
        seen.clear()
        with pytest.raises(Exhausted):
            noise.exponential_categorical(gammas, Finite([proposal, 2, 1]))
        # proposal i -> Bernoulli(exp(-(gamma_i - min))) exactly; the +inf entry (index 2) is
        # rejected without asking
        assert seen == [expected[proposal], expected[1]]


def test_exponential_categorical_accepts_exactly_what_the_bernoulli_accepts(monkeypatch):
    monkeypatch.setattr(noise, "_bern_exp_neg", lambda num, den, rng: True)
    for i in range(3):
        assert noise.exponential_categorical([1, 2, 3], Scripted([i])) == i


@pytest.mark.parametrize("gammas", [[0, 1, 2, 0.5], [Fraction(7, 3), Fraction(7, 3), 3]])
def test_exponential_categorical_chi_square(gammas):
    rng = random.Random(4)
    n = 20_000
    draws = np.bincount([noise.exponential_categorical(gammas, rng) for _ in range(n)],
                        minlength=len(gammas))
    w = np.exp(-np.array([float(g) for g in gammas]))
    assert stats.chisquare(draws, n * w / w.sum()).pvalue > 1e-4


def test_categorical_chi_square_and_zero_weights_never_drawn():
    rng = random.Random(5)
    p = [0.2, 0.0, 0.5, 0.3]
    draws = np.bincount([noise.categorical(p, rng) for _ in range(20_000)], minlength=4)
    assert draws[1] == 0
    keep = [0, 2, 3]
    assert stats.chisquare(draws[keep], 20_000 * np.array(p)[keep]).pvalue > 1e-4


def test_categorical_bad_input():
    for bad, match in (([], "empty"), ([0, 0], "all zero"), ([1, -1], ">= 0"),
                       ([1, float("nan")], "weights\\[1\\]"), (3, "sequence")):
        with pytest.raises(ParameterError, match=match):
            noise.categorical(bad)
    for bad, match in (([], "empty"), ([float("inf")], "every gamma"),
                       ([float("-inf")], "finite"), (["a"], "number")):
        with pytest.raises(ParameterError, match=match):
            noise.exponential_categorical(bad)
    with pytest.raises(ParameterError, match="n must be"):
        noise.uniform_index(0)


# ------------------------------------------------------------------------------------------
# the local mechanisms: the law sampled is the law of the privacy proof
# ------------------------------------------------------------------------------------------


def exact_law(gammas_row):
    """P(y) = exp(-gamma_y) / sum exp(-gamma), in mpmath at 60 digits."""
    with mpmath.workdps(60):
        w = [mpmath.exp(-mpmath.mpf(g.numerator) / g.denominator) for g in gammas_row]
        z = mpmath.fsum(w)
        return [x / z for x in w]


def test_exponential_mechanism_example_keeps_its_ratio_exactly():
    a = ldp.exponential_mechanism_matrix([[74.4, 0], [73.4, 1]], 1.0)
    assert a.exact_gammas is not None
    p0, p1 = exact_law(a.exact_gammas[0]), exact_law(a.exact_gammas[1])
    with mpmath.workdps(60):
        e = mpmath.e
        for y in range(2):
            assert p0[y] > 0 and p1[y] > 0  # every output possible from every input
            assert p0[y] <= e * p1[y] * (1 + mpmath.mpf(10) ** -50)
            assert p1[y] <= e * p0[y] * (1 + mpmath.mpf(10) ** -50)
        # the bound is attained (Delta u = 1 is exact): P(y1|x1)/P(y1|x0) = e * Z0/Z1 ~ e
        assert abs(p1[1] / p0[1] - e) < mpmath.mpf(10) ** -14
    # and the floats agree with the exact law to their precision
    assert np.allclose(np.asarray(a), [[float(v) for v in p0], [float(v) for v in p1]],
                       rtol=1e-12, atol=0)


def test_exponential_mechanism_sensitivity_is_exact_not_float_rounded():
    # 0.3 - 0.1 rounds to 0.19999999999999998 in floats; the exact difference is larger,
    # and c = eps / (2 Delta u) must use the larger one
    a = ldp.exponential_mechanism_matrix([[0.3, 0.0], [0.1, 0.0]], 1.0)
    du = Fraction(0.3) - Fraction(0.1)
    assert a.exact_gammas[0][1] == Fraction(1) / (2 * du) * Fraction(0.3)


@pytest.mark.parametrize("eps", [1.0, 37.5, 40.0, 700.0])
def test_randomised_response_keeps_e_to_the_eps_exactly(eps):
    a = ldp.randomised_response_matrix(3, eps)
    laws = [exact_law(row) for row in a.exact_gammas]
    with mpmath.workdps(60):
        bound = mpmath.exp(mpmath.mpf(eps))
        for y in range(3):
            for x in range(3):
                for x2 in range(3):
                    assert laws[x][y] > 0
                    # equal to e^eps where attained: exact up to mpmath's own precision
                    assert laws[x][y] <= bound * laws[x2][y] * (1 + mpmath.mpf(10) ** -50)


def test_sample_mechanism_samples_the_exact_law(monkeypatch):
    calls = []
    real = noise.exponential_categorical

    def spy(gammas, rng):
        calls.append(tuple(gammas))
        return real(gammas, rng)

    monkeypatch.setattr(noise, "exponential_categorical", spy)
    a = ldp.exponential_mechanism_matrix([[74.4, 0], [73.4, 1]], 1.0)
    out = ldp.sample_mechanism(a, 1, seed=3)
    assert calls == [a.exact_gammas[1]] and out.output in (0, 1)
    # a derived array is plain floats and is sampled as exact rationals of its entries
    b = np.asarray(a) * 1.0
    assert not isinstance(b, ldp.MechanismMatrix) or b.exact_gammas is None
    assert a[0:1].exact_gammas is None
    calls.clear()
    ldp.sample_mechanism(b, 1, seed=3)
    assert calls == []


def test_mechanism_matrix_refuses_floats_that_are_not_its_exact_law():
    with pytest.raises(ParameterError, match="not the rounding"):
        ldp.MechanismMatrix([[0.5, 0.5], [0.5, 0.5]], [[0, 1], [0, 0]])
    with pytest.raises(ParameterError, match="shape"):
        ldp.MechanismMatrix([[0.5, 0.5]], [[0, 0, 0]])
    m = ldp.MechanismMatrix([[0.5, 0.5], [0.5, 0.5]], [[0, 0], [1, 1]])
    assert m.exact_gammas == ((0, 0), (1, 1))


def test_mechanism_matrix_is_read_only_and_pickles_as_floats():
    a = ldp.randomised_response_matrix(3, 1.0)
    with pytest.raises(ValueError):
        a[0, 0] = 0.5
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is np.ndarray and np.array_equal(b, a)


def test_sample_mechanism_chi_square_exact_and_float_paths():
    a = ldp.randomised_response_matrix(4, 0.7)
    rng = random.Random(8)
    n = 20_000
    for m in (a, np.asarray(a).copy()):
        draws = np.bincount([ldp.sample_mechanism(m, 2, seed=rng).output for _ in range(n)],
                            minlength=4)
        assert stats.chisquare(draws, n * np.asarray(a)[2]).pvalue > 1e-4


def test_tupling_draws_go_through_the_noise_module(monkeypatch):
    # uniform dummies and the slot by uniform_index, the real report by the exact law
    used = Counter()
    for name in ("uniform_index", "categorical", "exponential_categorical"):
        real = getattr(noise, name)

        def spy(*args, _real=real, _name=name, **kw):
            used[_name] += 1
            return _real(*args, **kw)
        monkeypatch.setattr(noise, name, spy)
        if name == "uniform_index":
            monkeypatch.setattr(tupling, "uniform_index", spy)
    a = ldp.randomised_response_matrix(3, 1.0)
    tupling.tupling_sample(a, 0, 4, seed=1)
    assert used == Counter(uniform_index=5, exponential_categorical=1)
    used.clear()
    tupling.tupling_sample(np.asarray(a).copy(), 0, 2, dummy_law=[0.2, 0.3, 0.5], seed=1)
    assert used == Counter(uniform_index=1, categorical=3)


def test_exact_sensitivity_equals_the_brute_force_rational_maximum():
    rng = np.random.default_rng(3)
    for _ in range(30):
        u = rng.normal(size=(4, 5)) * 10.0 ** rng.integers(-3, 3)
        u[0, 0] = u[1, 0] + 1e-17  # near-ties and float-rounded differences
        phi = rng.random((4, 4)) < 0.6
        brute = max((abs(Fraction(float(u[i, y])) - Fraction(float(u[j, y])))
                     for i, j in zip(*np.nonzero(phi), strict=True) for y in range(5)),
                    default=Fraction(0))
        assert ldp._exact_sensitivity(u, phi) == brute


def test_extreme_parameters_build_without_overflow():
    a = ldp.randomised_response_matrix(3, 800.0)  # e^800 overflows a float
    assert np.array_equal(np.asarray(a), np.eye(3)) and a.exact_gammas[0][1] == 800
    b = ldp.exponential_mechanism_matrix([[1e308, 0.0], [-1e308, 0.0]], 1.0)  # 2e308 > max
    assert b.exact_gammas[0] == (0, Fraction(1, 4))
    assert np.allclose(np.asarray(b)[0], [1 / (1 + math.exp(-0.25)), 1 - 1 / (1 + math.exp(-0.25))])
