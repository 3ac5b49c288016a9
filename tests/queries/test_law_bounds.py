"""Certified float64 laws (quiltpriv.queries.law_bounds) against exact rationals and 120-bit mpmath.

Every bound the module proves is checked on random inputs: the error of each computed value
is at most its stated bound, the W_inf bracket contains the exact W_inf (its upper end never
below it, and within one of it), the audit's loss bracket contains the exact loss. The error
model's one assumption, the accuracy of exp/log/log1p/gammaln, is checked on this machine.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath  # in the test extra: these tests run by default
import numpy as np
import pytest
from marks import fast_and_full

import quiltpriv.queries.law_bounds as lb
from quiltpriv.audit.exact import audit
from quiltpriv.errors import ParameterError, QuiltPrivError
from quiltpriv.mechanisms.compare import compare
from quiltpriv.mechanisms.network_wasserstein import network_wasserstein
from quiltpriv.model.loading import load_model
from quiltpriv.model.network import theta_from_tables
from quiltpriv.queries.law_bounds import (
    LIBM_ULPS,
    BinomialLogPmf,
    BudgetExceeded,
    U,
    cdf_bounds,
    cdf_key,
    laplace_log_density,
    log_decay_cumsum,
    log_fraction,
    mixture_log_pmf,
)
from quiltpriv.queries.network_laws import count_laws, count_mixtures
from quiltpriv.queries.query import CountQuery, LinearQuery
from quiltpriv.utils.distances import quantile_coupling, w_inf_bracket

mpmath.mp.prec = 160


def _exact_log(x: Fraction) -> float:
    return float(mpmath.log(mpmath.mpf(x.numerator) / mpmath.mpf(x.denominator)))


def _binomial(n: int, p: Fraction) -> list[Fraction]:
    q = 1 - p
    return [math.comb(n, k) * p**k * q ** (n - k) for k in range(n + 1)]


def _random_fraction(rng: random.Random, digits: int = 400) -> Fraction:
    kind = rng.random()
    if kind < 0.2:
        return Fraction(1, 10 ** rng.randint(5, digits))  # below the float range too
    if kind < 0.4:
        return 1 - Fraction(1, 10 ** rng.randint(5, min(digits, 60)))
    if kind < 0.5:
        return Fraction(rng.getrandbits(digits) + 1, rng.getrandbits(digits + 10) + 2**digits)
    return Fraction(rng.randint(1, 999), 1000)


# -- the error model's assumption, on this machine ------------------------------------------


def test_library_functions_within_the_assumed_accuracy():
    from scipy.special import gammaln

    rng = np.random.default_rng(7)
    xs = np.concatenate([np.arange(1.0, 300.0), rng.integers(1, 10**8, 400).astype(float)])
    worst = 0.0
    for x, g in zip(xs, gammaln(xs), strict=True):
        ref = mpmath.loggamma(mpmath.mpf(x))
        worst = max(worst, float(abs(mpmath.mpf(float(g)) - ref) / (abs(ref) + 1)) / U)
    args = np.concatenate([rng.uniform(-700, 700, 300), rng.uniform(-1, 1, 100)])
    for x, e in zip(args, np.exp(args), strict=True):
        ref = mpmath.exp(mpmath.mpf(float(x)))
        worst = max(worst, float(abs(mpmath.mpf(float(e)) - ref) / ref) / U)
    pos = np.concatenate([10.0 ** rng.uniform(-300, 300, 300), rng.uniform(0.5, 2, 100)])
    for x, v in zip(pos, np.log(pos), strict=True):
        ref = mpmath.log(mpmath.mpf(float(x)))
        worst = max(worst, float(abs(mpmath.mpf(float(v)) - ref) / (abs(ref) + 1)) / U)
        m = math.log(float(x))
        worst = max(worst, float(abs(mpmath.mpf(m) - ref) / (abs(ref) + 1)) / U)
    small = 10.0 ** rng.uniform(-300, 0, 200)
    for x, v in zip(small, np.log1p(small), strict=True):
        ref = mpmath.log1p(mpmath.mpf(float(x)))
        worst = max(worst, float(abs(mpmath.mpf(float(v)) - ref) / (abs(ref) + 1)) / U)
    print(f"worst library error: {worst:.2f} units of U (assumed at most {LIBM_ULPS})")
    assert worst <= LIBM_ULPS


def test_log_fraction_within_its_bound():
    rng = random.Random(3)
    for _ in range(300):
        x = _random_fraction(rng) * Fraction(rng.randint(1, 10**6))
        value, err = log_fraction(x)
        assert abs(value - _exact_log(x)) <= err
    assert log_fraction(Fraction(1))[0] == 0.0
    with pytest.raises(ValueError):
        log_fraction(Fraction(0))


# -- laws -------------------------------------------------------------------------------------


def test_binomial_log_pmf_within_its_bound():
    rng = random.Random(11)
    cases = [(rng.randint(1, 200), _random_fraction(rng, 40)) for _ in range(40)]
    cases += [(17, Fraction(1, 10**400)), (9, 1 - Fraction(1, 10**300))]
    for n, pi in cases:
        lp, eta = BinomialLogPmf(n)(pi)
        exact = _binomial(n, pi)
        for j in rng.sample(range(n + 1), min(n + 1, 25)):
            assert abs(lp[j] - _exact_log(exact[j])) <= eta, (n, pi, j)
    for pi, where in ((Fraction(0), 0), (Fraction(1), 7)):
        lp, eta = BinomialLogPmf(7)(pi)
        assert eta == 0 and lp[where] == 0 and np.isneginf(np.delete(lp, where)).all()


def _random_mixture(rng: random.Random, size: int,
                    digits: int = 400) -> list[tuple[Fraction, Fraction]]:
    pis = [rng.choice([Fraction(0), Fraction(1), Fraction(1, 10**40)]) if rng.random() < 0.1
           else _random_fraction(rng, digits) for _ in range(size)]
    ws = [Fraction(1, 10**rng.randint(20, 80)) if rng.random() < 0.2
          else Fraction(rng.randint(1, 100)) for _ in range(size)]
    total = sum(ws)
    return [(p, w / total) for p, w in zip(pis, ws, strict=True)]


def _exact_mixture(n: int, comps) -> list[Fraction]:
    out = [Fraction(0)] * (n + 1)
    for pi, w in comps:
        for k, pr in enumerate(_binomial(n, pi)):
            out[k] += w * pr
    return out


def test_mixture_and_cdf_key_within_their_bounds():
    rng = random.Random(5)
    for _ in range(25):
        n = rng.randint(1, 80)
        comps = _random_mixture(rng, rng.randint(1, 4), 40)
        table = BinomialLogPmf(n)
        mix, err = mixture_log_pmf(comps, table)
        exact = _exact_mixture(n, comps)
        for k in range(n + 1):
            if exact[k] == 0:
                assert mix[k] == -math.inf
            else:
                assert abs(mix[k] - _exact_log(exact[k])) <= err
        key, e_key = cdf_key(mix, err)
        cum = Fraction(0)
        for k in range(n):
            cum += exact[k]
            if cum == 0:
                assert key[k] == -math.inf
            elif cum == 1:
                assert key[k] == math.inf
            else:
                ref = _exact_log(cum) - _exact_log(1 - cum)
                assert abs(key[k] - ref) <= e_key + U * abs(ref) * 2
        assert key[n] == math.inf


@pytest.mark.parametrize("c", [0.0, -1e-3, -0.7, -40.0, -5000.0])
def test_log_decay_cumsum_against_mpmath(monkeypatch, c):
    # Short rows so that a few hundred entries go through several levels of recursion.
    monkeypatch.setattr(lb, "_ROW", 8)
    monkeypatch.setattr(lb, "_ROW_DECAY", 64.0)
    rng = np.random.default_rng(int(-c * 10))
    for n in (1, 7, 8, 9, 65, 300, 700):
        y = rng.normal(0, 300, n) - np.abs(rng.normal(0, 1e4, n)) * (rng.random(n) < 0.2)
        y[rng.random(n) < 0.15] = -np.inf
        x, added = log_decay_cumsum(y, c)
        acc = None
        for m in range(n):
            term = None if y[m] == -np.inf else mpmath.mpf(float(y[m]))
            if acc is not None:
                acc = acc + c
            if term is not None:
                acc = term if acc is None else acc + mpmath.log1p(mpmath.exp(term - acc)) \
                    if term <= acc else term + mpmath.log1p(mpmath.exp(acc - term))
            if acc is None:
                assert x[m] == -np.inf
            else:
                assert abs(mpmath.mpf(float(x[m])) - acc) <= added, (n, m)


def test_laplace_log_density_within_its_bound():
    rng = random.Random(9)
    for _ in range(10):
        n = rng.randint(1, 30)
        comps = _random_mixture(rng, rng.randint(1, 3), 12)
        s = rng.choice([0.05, 0.7, 3.0, 250.0])
        mix, err = mixture_log_pmf(comps, BinomialLogPmf(n))
        dens, e_dens = laplace_log_density(mix, err, s)
        exact = _exact_mixture(n, comps)
        logs = [mpmath.log(mpmath.mpf(p.numerator) / p.denominator) if p else None
                for p in exact]
        for k in range(n + 1):
            ref = mpmath.log(mpmath.fsum(mpmath.exp(lg - abs(k - j) / mpmath.mpf(s))
                                         for j, lg in enumerate(logs) if lg is not None))
            assert abs(mpmath.mpf(float(dens[k])) - ref) <= e_dens


# -- W_inf ------------------------------------------------------------------------------------


def _exact_w(n: int, pa: list[Fraction], pb: list[Fraction]) -> int:
    support = list(range(n + 1))
    return int(max(pc.gap for pc in quantile_coupling(support, pa, support, pb)))


# The first 30 seeded pairs by default, all 120 slow (~1.4 s).
@pytest.mark.parametrize("cases", fast_and_full(30, 120))
def test_w_inf_bracket_contains_the_exact_value(cases):
    rng = random.Random(21)
    closed = 0
    for _ in range(cases):
        n = rng.randint(1, 90)
        table = BinomialLogPmf(n)
        ca, cb = (_random_mixture(rng, rng.randint(1, 3), 12) for _ in range(2))
        keys = [cdf_bounds(*cdf_key(*mixture_log_pmf(c, table))) for c in (ca, cb)]
        lo, hi = w_inf_bracket(*keys)
        exact = _exact_w(n, _exact_mixture(n, ca), _exact_mixture(n, cb))
        assert lo <= exact <= hi <= exact + 1, (n, ca, cb, lo, exact, hi)
        closed += lo == hi
    print(f"W_inf brackets closed on {closed} of {cases} random pairs")
    assert closed >= cases * 0.9
    # An exact tie cannot be certified from floats: two copies of one law bracket W_inf = 0
    # as [0, 1] (the mechanisms recognise identical mixtures exactly before this point).
    same = cdf_bounds(*cdf_key(*mixture_log_pmf([(Fraction(3, 10), Fraction(1))],
                                                BinomialLogPmf(50))))
    assert w_inf_bracket(same, same) == (0, 1)


PHI = (("0.2", "0.5", "0.8"), ("0.2", "0.8"), ("0.1", "0.5", "0.9"), ("0", "0.3", "1"),
       ("0.05", "0.95"))


def _random_theta(rng: random.Random):
    k = rng.randint(2, 4)
    nodes = [f"v{j}" for j in range(k)]
    states = {v: rng.choice(PHI) for v in nodes}
    edges = [(nodes[a], nodes[b]) for a in range(k) for b in range(a + 1, k)
             if rng.random() < 0.6]
    parents = {v: [a for a, b in edges if b == v] for v in nodes}
    members = []
    for _ in range(rng.choice([1, 2])):
        tables = {}
        for v in nodes:
            shape = (len(states[v]), *(len(states[p]) for p in parents[v]))
            cols = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            out = np.empty((shape[0], cols))
            for c in range(cols):
                col = np.array([rng.gammavariate(0.6, 1.0) + 1e-4 for _ in range(shape[0])])
                if rng.random() < 0.15:
                    col[rng.randrange(shape[0])] = 0.0
                out[:, c] = col / col.sum()
            tables[v] = out.reshape(shape)
        members.append(tables)
    return theta_from_tables(edges, states, members)


# The first 10 seeded networks by default, all 40 slow (~1.1 s).
@pytest.mark.parametrize("cases", fast_and_full(10, 40))
def test_network_wasserstein_certified_matches_exact_on_random_networks(cases):
    rng = random.Random(4)
    closed = 0
    for _ in range(cases):
        theta = _random_theta(rng)
        attrs = rng.sample(theta.nodes, rng.choice([1, 1, 2]))
        where = None if len(attrs) == 1 else " and ".join(f"{a} == 1" for a in attrs)
        q = CountQuery(attrs, rng.randint(2, 120), where=where,
                       domain=None if where is None else {a: (0, 1) for a in attrs})
        sens = rng.sample(theta.nodes, rng.choice([1, 2]))
        exact = network_wasserstein(theta, q, sens, 1.0)
        fast = network_wasserstein(theta, q, sens, 1.0, exact_records=0)
        assert fast.arithmetic == "certified float64" and exact.arithmetic == "exact"
        w = exact.sensitivity
        assert fast.result.sensitivity_lower <= w <= fast.sensitivity <= w + 1
        assert fast.scale >= exact.scale  # never less noise than the exact mechanism
        closed += fast.result.exact
        if fast.result.exact:
            assert fast.sensitivity == w
    print(f"certified W exact on {closed} of {cases} random networks")
    assert closed >= cases * 0.8


def test_identical_laws_give_zero_exactly():
    # x is independent of s: both secrets have the same mixture, W = 0 (no bracket slack).
    theta = theta_from_tables([], {"s": ("0.2", "0.7"), "x": ("0.3", "0.6")},
                              {"s": np.array([0.5, 0.5]), "x": np.array([0.4, 0.6])})
    res = network_wasserstein(theta, CountQuery(["x"], 5000), "s", 1.0)
    assert res.sensitivity == 0.0 and res.scale == 0.0 and res.result.exact
    r = audit(theta, CountQuery(["x"], 5000), "s", 1.0, 0.0)
    assert r.loss == 0.0 and r.verdict == "MET" and r.arithmetic == "certified float64"


def test_count_mixtures_are_the_exact_laws():
    theta = load_model("student")
    mixtures = count_mixtures(theta, ["height", "sat"], "income",
                              where="height == 1 and sat == 1")
    laws = count_laws(theta, ["height", "sat"], "income", 7,
                      where="height == 1 and sat == 1").laws
    for per, exact in zip(mixtures, laws, strict=True):
        assert set(per) == set(exact)
        for state, mix in per.items():
            assert sum(mix.values()) == 1
            assert tuple(_exact_mixture(7, list(mix.items()))) == exact[state][1]
    # 0.3 * 0.2 == 0.6 * 0.1: configurations with the same pi are merged
    assert all(len(mix) < 9 for per in mixtures for mix in per.values())


def test_student_at_large_n_is_exact_and_linear_in_structure():
    theta = load_model("student")
    res = network_wasserstein(theta, CountQuery(["sat"], 20000), "income", 1.0)
    assert res.result.exact and res.arithmetic == "certified float64"
    assert res.scale == res.sensitivity and 0.15 * 20000 < res.sensitivity < 0.25 * 20000
    c = compare(theta, CountQuery(["sat"], 20000), "income", 1.0)
    assert c["Wasserstein"].applicable and c["Wasserstein"].scale == res.scale
    assert "certified" in c["Wasserstein"].detail


# -- the audit --------------------------------------------------------------------------------


# The first 10 seeded networks by default, all 40 slow (~1.5 s).
@pytest.mark.parametrize("cases", fast_and_full(10, 40))
def test_certified_audit_brackets_the_exact_loss(cases):
    rng = random.Random(8)
    widest = 0.0
    for _ in range(cases):
        theta = _random_theta(rng)
        attrs = tuple(rng.sample(theta.nodes, rng.choice([1, 2])))
        q = CountQuery(attrs, rng.randint(2, 60))
        sens = rng.sample(theta.nodes, rng.choice([1, 2]))
        for s in (0.0, 0.4, 3.0):
            ex = audit(theta, q, sens, 1.0, s)
            ce = audit(theta, q, sens, 1.0, s, exact_records=0)
            assert ex.arithmetic == "exact" and ce.arithmetic == "certified float64"
            assert ce.pairs_audited == ex.pairs_audited
            if math.isinf(ex.loss):
                assert math.isinf(ce.loss) and ce.verdict == "VIOLATED"
                continue
            assert ce.loss_lower - 1e-12 <= ex.loss <= ce.loss + 1e-12
            widest = max(widest, ce.loss - ce.loss_lower)
            if ce.verdict != "UNDECIDED":
                assert ce.verdict == ex.verdict
    print(f"widest certified loss bracket: {widest:.3g}")
    assert widest < 1e-8


def test_linear_query_over_one_attribute_matches_the_exact_audit():
    theta = load_model("student")
    for w, s in ((2.0, 0.3), (-0.5, 0.05), (1.0, 0.0)):
        q = LinearQuery({"sat": w}, {"sat": (0, 1)})
        ex = audit(theta, q, "income", 1.0, s, records=40)
        ce = audit(theta, q, "income", 1.0, s, records=40, exact_records=0)
        assert ce.loss_lower - 1e-12 <= ex.loss <= ce.loss + 1e-12
    zero = LinearQuery({"sat": 0.0}, {"sat": (0, 1)})
    assert audit(theta, zero, "income", 1.0, 1.0, records=10**5).loss == 0.0


def test_tiny_scales_are_bracketed_by_monotonicity():
    theta = load_model("student")
    q = CountQuery(["sat"], 300)
    exact = audit(theta, q, "income", 1.0, 1e-11)  # (n + 1) / s above 1e12
    cert = audit(theta, q, "income", 1.0, 1e-11, exact_records=0)
    assert cert.loss_lower - 1e-12 <= exact.loss <= cert.loss + 1e-12
    assert any("monotonicity" in n or "never raises" in n for n in cert.notes)
    assert audit(theta, q, "income", 1.0, 1e-300, exact_records=0).verdict == "VIOLATED"


def test_undecided_is_never_met():
    theta = load_model("student")
    q = CountQuery(["sat"], 5000)
    r = audit(theta, q, "income", 1.0, 900.0)
    assert r.loss_lower < r.loss
    mid = (r.loss + r.loss_lower) / 2
    u = audit(theta, q, "income", mid - r.tolerance, 900.0)
    assert u.verdict == "UNDECIDED" and not u.met and "neither" in u.explain()
    assert audit(theta, q, "income", r.loss, 900.0).verdict == "MET"
    assert audit(theta, q, "income", r.loss_lower / 2, 900.0).verdict == "VIOLATED"


# -- budgets and refusals ---------------------------------------------------------------------


class _Clock:
    """A monotonic clock that advances one second per reading."""

    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        self.t += 1.0
        return self.t


def test_time_limit_refuses_or_flags(monkeypatch):
    monkeypatch.setattr(lb, "time", _Clock())
    theta = load_model("student")
    q = CountQuery(["sat"], 3000)
    with pytest.raises(BudgetExceeded, match="time limit"):
        network_wasserstein(theta, q, "income", 1.0, time_limit=2.5)
    row = compare(theta, q, "income", 1.0, time_limit=2.5)["Wasserstein"]
    assert not row.applicable and "time limit" in row.detail
    r = audit(theta, q, "income", 1.0, 100.0, time_limit=2.5)
    assert r.verdict == "UNDECIDED" and not r.complete and r.loss == math.inf
    assert any("time limit" in n for n in r.notes)
    # Without noise every pair of income values is told apart: the pairs audited before the
    # limit already prove the violation. Count the clock readings of a whole audit, then stop
    # it two readings before its end.
    clock = _Clock()
    monkeypatch.setattr(lb, "time", clock)
    full = audit(theta, q, "income", 0.5, 0.0, time_limit=1e9)
    assert full.complete and full.verdict == "VIOLATED" and full.pairs_audited == 6
    monkeypatch.setattr(lb, "time", _Clock())
    v = audit(theta, q, "income", 0.5, 0.0, time_limit=clock.t - 2.5)
    assert not v.complete and 0 < v.pairs_audited < 6 and v.verdict == "VIOLATED"
    assert v.loss == math.inf and 0.5 < v.loss_lower <= full.loss


def test_beyond_reach_is_refused_at_once():
    theta = load_model("student")
    with pytest.raises(BudgetExceeded, match="at most 10,000,000 records"):
        network_wasserstein(theta, CountQuery(["sat"], 2**53), "income", 1.0)
    with pytest.raises(BudgetExceeded, match="at most 10,000,000 records"):
        audit(theta, CountQuery(["sat"], 2**53), "income", 1.0, 1.0)
    row = compare(theta, CountQuery(["sat"], 2**53), "income", 1.0)["Wasserstein"]
    assert not row.applicable and "10,000,000" in row.detail
    lin = LinearQuery({"sat": 1.0, "height": 1.0}, {"sat": (0, 1), "height": (0, 1)})
    with pytest.raises(BudgetExceeded, match="possible values"):
        audit(theta, lin, "income", 1.0, 1.0, records=1000)
    with pytest.raises(ParameterError, match="exact rational laws"):
        count_laws(theta, "sat", "income", 10**6)
    with pytest.raises(ParameterError, match="time_limit"):
        network_wasserstein(theta, CountQuery(["sat"], 10), "income", 1.0, time_limit=-1)
    assert issubclass(BudgetExceeded, QuiltPrivError)


def test_progress_bar_does_not_change_results(capsys):
    theta = load_model("student")
    q = CountQuery(["sat"], 3000)
    a = network_wasserstein(theta, q, "income", 1.0, progress=True)
    b = network_wasserstein(theta, q, "income", 1.0)
    assert a.result == b.result
    capsys.readouterr()


def test_a_predicate_reads_one_truth_table_on_both_paths():
    # Text data values mapped onto the record categories: the certified laws (exact_records=0)
    # count the same records as the exact ones, and as the same predicate over the declared
    # 0/1 domain.
    theta = load_model("student")
    states = {"height": {"short": 0, "tall": 1}, "sat": {"lo": 0, "hi": 1}}
    words = CountQuery(["height", "sat"], 150, where="height == 'tall' or sat == 'lo'",
                       record_states=states)
    codes = CountQuery(["height", "sat"], 150, where="height == 1 or sat == 0",
                       domain={"height": (0, 1), "sat": (0, 1)})
    exact = network_wasserstein(theta, words, "income", 1.0)
    fast = network_wasserstein(theta, words, "income", 1.0, exact_records=0)
    assert exact.sensitivity == network_wasserstein(theta, codes, "income", 1.0).sensitivity
    assert fast.arithmetic == "certified float64"
    assert fast.result.sensitivity_lower <= exact.sensitivity <= fast.sensitivity
    full = audit(theta, words, "income", 1.0, exact.scale)
    bounds = audit(theta, words, "income", 1.0, exact.scale, exact_records=0)
    assert bounds.arithmetic == "certified float64" and full.arithmetic == "exact"
    assert bounds.loss_lower - 1e-9 <= full.loss <= bounds.loss + 1e-9


def test_an_undeclared_predicate_is_refused_before_any_law(monkeypatch):
    import quiltpriv.queries.network_laws as nl

    def no_laws(*args, **kwargs):
        raise AssertionError("a law was computed before the refusal")

    monkeypatch.setattr(nl, "mixture_weights", no_laws)
    theta = load_model("student")
    for n in (150, 5000, 2**53):  # the exact path, the certified path, beyond their reach
        q = CountQuery(["height", "sat"], n, where="height == 1 and sat == 1")
        with pytest.raises(QuiltPrivError, match="declares no domain"):
            network_wasserstein(theta, q, "income", 1.0)
        with pytest.raises(QuiltPrivError, match="declares no domain"):
            audit(theta, q, "income", 1.0, 1.0)
        # A domain that is not the record categories is refused the same way.
        bad = CountQuery(["height", "sat"], n, where="height > 66 and sat == 1",
                         domain={"height": (60, 66, 72), "sat": (0, 1)})
        with pytest.raises(QuiltPrivError, match="record categories"):
            network_wasserstein(theta, bad, "income", 1.0, exact_records=0)
        with pytest.raises(QuiltPrivError, match="record categories"):
            audit(theta, bad, "income", 1.0, 1.0, exact_records=0)
