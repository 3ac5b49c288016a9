"""Tests for quiltpriv.mechanisms.subset_privacy ([Tan])."""

from __future__ import annotations

import argparse
import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from quiltpriv.cli import main
from quiltpriv.cli.subset_privacy import register_cli
from quiltpriv.errors import ParameterError, QueryError, QuiltPrivError
from quiltpriv.mechanisms.subset_privacy import (
    SubsetPrivacyAccountant,
    cell_moments,
    compose_subset_epsilons,
    consistent_count_table,
    pair_matrix,
    two_sided_geometric_pmf,
    two_sided_geometric_variance,
)

TABLE2 = [
    [5, 10, 47, 68, 54, 33, 12, 2],
    [1, 13, 44, 92, 131, 75, 21, 15],
    [2, 25, 78, 218, 237, 153, 46, 18],
]
TABLE3 = [
    [4, 12, 47, 66, 55, 37, 5, 5],
    [5, 12, 44, 91, 133, 73, 20, 14],
    [4, 20, 74, 218, 238, 155, 52, 16],
]
TOTALS = (231, 392, 777)


# ---------------------------------------------------------------------------------------------
# accountant


def example_3_6():
    acc = SubsetPrivacyAccountant(["age", "sex", "region", "race", "other"])
    acc.register("Table A", 1, ["age", "sex"])
    acc.register("Table B", 1, ["region", "race"])
    acc.register("Table C", 1, ["region", "age"])
    return acc


def test_table1_and_derived_values():
    acc = example_3_6()
    t = acc.table()
    assert t.values == ((1, 1, 0, 0, 0), (0, 0, 1, 1, 0), (1, 0, 1, 0, 0))
    assert t.totals == (2, 1, 2, 1, 0)
    assert [acc.epsilon(v) for v in acc.variables] == [2, 1, 2, 1, 0]
    assert acc.epsilon({"age", "sex"}) == 2
    assert acc.epsilon({"region", "race"}) == 2
    assert acc.epsilon({"age", "region"}) == 3
    assert acc.epsilon(acc.variables) == 3
    assert acc.epsilon([]) == 0
    assert acc.release_epsilons("sex") == {"Table A": 1, "Table B": 0, "Table C": 0}
    text = t.format()
    assert text.splitlines()[-1].split() == ["all", "releases", "2", "1", "2", "1", "0"]
    assert "{region}" in text.splitlines()[0]


def test_accountant_is_monotone_and_subadditive():
    acc = example_3_6()
    acc.register("D", 0.25, ["other"])
    vs = acc.variables
    subsets = [set(s) for r in range(len(vs) + 1) for s in itertools.combinations(vs, r)]
    for u1, u2 in itertools.product(subsets, repeat=2):
        if u1 <= u2:  # Prop 3.2
            assert acc.epsilon(u1) <= acc.epsilon(u2)
        assert acc.epsilon(u1 | u2) <= acc.epsilon(u1) + acc.epsilon(u2) + 1e-12
    assert acc.epsilon(vs) == 3.25  # every release reads something: the plain DP total


def brute_release_epsilon(reads, protected, exact, eps, u):
    """Definition 2.2 by brute force on a model release over binary variables.

    The release publishes one record's values on ``reads``: each variable in ``protected``
    through randomised response at eps / |protected| (so the release is eps-private on
    ``protected``), every other one exactly (all of them if ``exact``). Returns the largest
    log-ratio of output probabilities over records that agree outside U.
    """
    names = sorted(reads)
    share = eps / max(1, len(protected))
    keep = math.exp(share) / (1 + math.exp(share))
    best = 0.0
    for a in itertools.product((0, 1), repeat=len(names)):
        for b in itertools.product((0, 1), repeat=len(names)):
            if any(x != y and v not in u for v, x, y in zip(names, a, b, strict=True)):
                continue  # not neighbours on U
            for out in itertools.product((0, 1), repeat=len(names)):
                pa = pb = 1.0
                for v, x, y, o in zip(names, a, b, out, strict=True):
                    if v in protected and not exact:
                        pa *= keep if o == x else 1 - keep
                        pb *= keep if o == y else 1 - keep
                    else:
                        pa *= 1.0 if o == x else 0.0
                        pb *= 1.0 if o == y else 0.0
                if pa > 0 and pb == 0:
                    return math.inf
                if pa > 0:
                    best = max(best, math.log(pa / pb))
    return best


def test_release_epsilons_agree_with_the_definition_by_brute_force():
    vs = ["a", "b", "c"]
    subsets = [set(s) for r in range(4) for s in itertools.combinations(vs, r)]
    cases = [(["a", "b"], ["a", "b", "c"], False), (["a", "b"], ["a"], False),
             (["b"], [], True), (["a", "c"], ["c"], False), (["a", "b", "c"], ["b", "c"], False)]
    for reads, protected, exact in cases:
        acc = SubsetPrivacyAccountant(vs)
        rel = (acc.register_exact("r", reads) if exact else
               acc.register("r", 0.75, reads, protected=protected))
        for u in subsets:
            brute = brute_release_epsilon(set(reads), set(protected) & set(reads), exact, 0.75, u)
            got = acc.epsilon(u)
            assert got == rel.epsilon_on(u)
            # infinite exactly when the definition says so, zero exactly when the output
            # ignores U, otherwise a finite upper bound (eps_t)
            assert math.isinf(got) == math.isinf(brute), (reads, protected, u)
            assert (got == 0) == (brute == 0), (reads, protected, u)
            if math.isfinite(got):
                assert brute <= got + 1e-12 and got in (0.0, 0.75)


def test_exact_releases_are_never_finite():
    # [Tan, Alg. 1] on degree x income: private on {income}, exact degree totals
    acc = SubsetPrivacyAccountant(["degree", "income", "age"])
    acc.register("alg1", 1.0, ["degree", "income"], protected=["income"])
    acc.register_exact("degree totals", ["degree"])
    acc.register("age x degree", 0.5, ["age", "degree"])
    assert acc.release_epsilons("degree") == {"alg1": math.inf, "degree totals": math.inf,
                                              "age x degree": 0.5}
    assert math.isinf(acc.epsilon("degree"))
    assert math.isinf(acc.epsilon(["degree", "income"]))
    assert acc.epsilon("income") == 1.0
    assert acc.epsilon("age") == 0.5
    assert acc.epsilon(["age", "income"]) == 1.5
    t = acc.table()
    assert t.totals[0] == math.inf and "inf" in t.format().splitlines()[-1]
    assert t.to_dict()["totals"][0] == "inf"
    assert acc.releases[1].exact and acc.releases[1].protected == frozenset()


def test_compose_subset_epsilons_rounds_up_and_handles_inf():
    assert compose_subset_epsilons([]) == 0.0
    assert compose_subset_epsilons([1, 2, 0]) == 3.0
    assert math.isinf(compose_subset_epsilons([0.5, math.inf]))
    vals = [0.1] * 10
    total = compose_subset_epsilons(vals)
    assert Fraction(total) >= sum(Fraction(v) for v in vals)
    assert total == math.nextafter(1.0, 2) or Fraction(total) == sum(Fraction(v) for v in vals)
    with pytest.raises(ParameterError):
        compose_subset_epsilons([-1.0])
    with pytest.raises(ParameterError):
        compose_subset_epsilons([math.nan])


def test_accountant_errors():
    acc = example_3_6()
    with pytest.raises(QueryError, match="unknown variables \\['income'\\]"):
        acc.epsilon({"income"})
    with pytest.raises(QueryError, match="release 'E'"):
        acc.register("E", 1, ["income"])
    with pytest.raises(ParameterError, match="already registered"):
        acc.register("Table A", 1, ["age"])
    with pytest.raises(ParameterError, match="epsilon of release"):
        acc.register("F", -1, ["age"])
    # an exact release has no finite eps: "epsilon 0" is refused, register_exact is the way
    with pytest.raises(ParameterError, match="epsilon of release"):
        acc.register("G", 0, ["age"])
    with pytest.raises(ParameterError, match="epsilon of release"):
        acc.register("G", math.inf, ["age"])
    with pytest.raises(QueryError, match="protected set of release 'H'"):
        acc.register("H", 1, ["age"], protected=["income"])
    with pytest.raises(ParameterError, match="reads no variable"):
        acc.register_exact("I", [])
    with pytest.raises(ParameterError, match="not distinct"):
        SubsetPrivacyAccountant(["a", "a"])


# ---------------------------------------------------------------------------------------------
# the noise law and moments


def test_noise_law_corrected_normaliser_and_variance():
    z = np.arange(-2000, 2001)
    for eps in (0.1, 0.5, 1.0, 3.0):
        pmf = two_sided_geometric_pmf(z, eps)
        assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
        assert pmf[2000] == pytest.approx(math.tanh(eps / 4))
        a = math.exp(-eps / 2)
        assert math.tanh(eps / 4) == pytest.approx((1 - a) / (1 + a))
        assert (pmf * z**2).sum() == pytest.approx(two_sided_geometric_variance(eps), rel=1e-9)
    assert round(two_sided_geometric_variance(1.0), 4) == 7.8354
    assert cell_moments(5, 1.0) == pytest.approx((4 * 7.835396, -7.835396), rel=1e-6)
    assert cell_moments(1, 1.0) == (0.0, 0.0)
    m = pair_matrix(4)
    assert m.shape == (6, 4) and np.all(m.sum(1) == 0) and np.all(np.abs(m).sum(1) == 2)
    assert len({tuple(np.flatnonzero(r)) for r in m}) == 6


# ---------------------------------------------------------------------------------------------
# [Tan, Alg. 1]


def test_table2_invariants_and_table3():
    out = consistent_count_table(TABLE2, 1.0, seed=2023)
    g = out.counts
    assert g.dtype == np.int64 and g.shape == (3, 8)
    assert tuple(g.sum(1)) == TOTALS == out.row_totals
    assert out.epsilon == 1.0 and out.privacy_loss == 0.5
    assert not out.secure and out.seed == 2023
    with pytest.raises(ValueError):
        g[0, 0] = 1  # read-only
    # the paper's Table 3 satisfies exactly the invariants [Tan, Alg. 1] guarantees
    t3 = np.array(TABLE3)
    assert tuple(t3.sum(1)) == TOTALS
    assert not np.array_equal(t3.sum(0), np.array(TABLE2).sum(0))  # column totals move
    moved = [not np.array_equal(consistent_count_table(TABLE2, 1.0, seed=s).counts.sum(0),
                                np.array(TABLE2).sum(0)) for s in range(5)]
    assert all(moved)


def test_seeded_reproducible_and_secure_default():
    a = consistent_count_table(TABLE2, 0.5, seed=7).counts
    b = consistent_count_table(TABLE2, 0.5, seed=7).counts
    c = consistent_count_table(TABLE2, 0.5, seed=8).counts
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    s = consistent_count_table(TABLE2, 0.5)
    assert s.secure and s.seed is None and "SystemRandom" in s.sampler
    assert tuple(s.counts.sum(1)) == TOTALS


def test_two_category_rows_are_noised_and_single_rows_exact():
    # the printed "n_i > 2" would leave a two-category row exact
    outs = [consistent_count_table([[10, 20]], 1.0, seed=s).counts for s in range(20)]
    assert any(not np.array_equal(o, [[10, 20]]) for o in outs)
    allowed = [[True, False, False], [True, True, True]]
    out = consistent_count_table([[7, 0, 0], [1, 2, 3]], 1.0, allowed=allowed, seed=1).counts
    assert out[0].tolist() == [7, 0, 0]
    assert out[1].sum() == 6
    with pytest.raises(ParameterError, match="impossible"):
        consistent_count_table([[7, 1, 0]], 1.0, allowed=[[True, False, True]])


def test_exact_likelihood_ratio_two_categories():
    """n_i = 2: the output law is closed-form; the loss is exactly eps/2 (<= eps)."""
    eps = 1.0
    f, f2 = np.array([3, 1]), np.array([2, 2])  # one record moves from column 0 to column 1
    g0 = np.arange(-40, 41)
    # g = f + (b, -b): P(g | f) = pmf(g0 - f0)
    ratios = two_sided_geometric_pmf(g0 - f[0], eps) / two_sided_geometric_pmf(g0 - f2[0], eps)
    losses = np.log(ratios)
    assert np.max(np.abs(losses)) == pytest.approx(eps / 2, abs=1e-12)
    assert np.max(np.abs(losses)) <= eps


def test_exact_likelihood_ratio_three_categories():
    """n_i = 3: the noise W = bM, by exact convolution with a rigorous truncation bound.

    P(W = (w1, w2, -w1-w2)) = sum_b12 p(b12) p(w1 - b12) p(w2 + b12) (b13 = w1 - b12,
    b23 = w2 + b12). Truncating every noise to |b| <= R loses mass T <= 3 P(|b| > R), so the
    true probability lies in [P_R, P_R + T]; the ratio's rigorous upper bound is
    (P_R(z) + T) / P_R(z'), checked where both are far above T.
    """
    eps, r = 1.0, 60
    a = math.exp(-eps / 2)
    b = np.arange(-r, r + 1)
    p = two_sided_geometric_pmf(b, eps)
    size, off = 4 * r + 1, 2 * r
    law = np.zeros((size, size))  # law[w1 + off, w2 + off]
    for i, b12 in enumerate(b):
        law[off + b12 - r:off + b12 + r + 1, off - b12 - r:off - b12 + r + 1] += \
            p[i] * np.outer(p, p)
    tail = 3 * 2 * a ** (r + 1) / (1 + a)
    # neighbours f = (2, 1, 1) and f' = (1, 2, 1): g - f = z, g - f' = z + (1, -1, 0)
    num, den = law[:-1, 1:], law[1:, :-1]  # P(w1, w2 + 1) and P(w1 + 1, w2)
    ok = (num > 1e6 * tail) & (den > 1e6 * tail)
    assert ok.sum() > 1000
    upper = np.log((num[ok] + tail) / den[ok])
    lower = np.log(num[ok] / (den[ok] + tail))
    assert upper.max() <= eps / 2 + 1e-9  # the loss never exceeds eps/2 (so also eps)
    assert lower.max() >= eps / 2 - 1e-3  # and approaches eps/2: eps/2 is the exact loss
    back = np.log((den[ok] + tail) / num[ok])
    assert back.max() <= eps / 2 + 1e-9


def test_unbiased_and_variance_by_simulation():
    eps, f = 1.0, np.array([[5, 10, 20, 1]])
    rng = random.Random(11)
    draws = np.array([consistent_count_table(f, eps, seed=rng).counts[0] for _ in range(6000)])
    var, cov = cell_moments(4, eps)  # 23.506, -7.835
    mean_sd = math.sqrt(var / len(draws))
    assert np.all(np.abs(draws.mean(0) - f[0]) < 5 * mean_sd)
    emp = np.cov(draws.T)
    assert np.all(np.abs(np.diag(emp) - var) < 0.1 * var)
    off = emp[~np.eye(4, dtype=bool)]
    assert np.all(np.abs(off - cov) < 0.15 * var)


def test_bad_tables():
    with pytest.raises(ParameterError, match="non-negative integers"):
        consistent_count_table([[1.5, 2]], 1.0)
    with pytest.raises(ParameterError, match="non-negative integers"):
        consistent_count_table([[-1, 2]], 1.0)
    with pytest.raises(ParameterError, match="2-d"):
        consistent_count_table([1, 2], 1.0)
    with pytest.raises(ParameterError, match="epsilon"):
        consistent_count_table(TABLE2, 0)


# ---------------------------------------------------------------------------------------------
# command line (through our own parser until the CLI is wired)


def run_cli(argv):
    parser = argparse.ArgumentParser(prog="quiltpriv")
    register_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def records(tmp_path):
    bands = ["<30k", "30-40k", ">=40k"]
    rng = random.Random(0)
    lines = ["degree,income,age"]
    for deg, n in (("BA", 30), ("BSc", 20), ("BEng", 1)):
        for _ in range(n):
            lines.append(f"{deg},{rng.choice(bands)},{rng.randint(20, 60)}")
    path = tmp_path / "records.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, bands


def test_cli_writes_protected_table(records, tmp_path, capsys):
    path, bands = records
    out = tmp_path / "protected.csv"
    argv = ["subset-privacy", str(path), "--rows", "degree", "--protected", "income",
            "--epsilon", "1", "--categories", ",".join(bands), "-o", str(out), "--seed", "4"]
    assert run_cli(argv) == 0
    rows = [line.split(",") for line in out.read_text().splitlines()]
    assert rows[0] == ["degree", "total", *bands]
    body = {r[0]: [int(x) for x in r[1:]] for r in rows[1:]}
    assert body.keys() == {"BA", "BSc", "BEng"}
    assert [body[d][0] for d in ("BA", "BSc", "BEng")] == [30, 20, 1]
    for vals in body.values():
        assert sum(vals[1:]) == vals[0]
    first = out.read_text()
    assert run_cli(argv) == 0 and out.read_text() == first  # seeded: reproducible
    assert "seed 4" in capsys.readouterr().out


def test_cli_errors_leave_no_file(records, tmp_path):
    path, bands = records
    out = tmp_path / "protected.csv"
    base = ["subset-privacy", str(path), "--rows", "degree", "--protected", "income",
            "-o", str(out)]
    cats = ["--categories", ",".join(bands)]
    with pytest.raises(ParameterError, match="categories"):
        run_cli([*base, "--epsilon", "1"])
    with pytest.raises(QueryError, match="no column 'salary'"):
        run_cli(["subset-privacy", str(path), "--rows", "degree", "--protected", "salary",
                 "--epsilon", "1", "-o", str(out), *cats])
    with pytest.raises(QueryError, match="outside --categories"):
        run_cli([*base, "--epsilon", "1", "--categories", "<30k,30-40k"])
    # A bad --epsilon is refused as the options are parsed (argparse exits with status 2).
    with pytest.raises(SystemExit, match="2"):
        run_cli([*base, "--epsilon", "nan", *cats])
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [path]  # no temporary left behind either
    out.write_text("previous\n")
    with pytest.raises(QuiltPrivError):
        run_cli([*base, "--epsilon", "1e-300", *cats])  # noise too large for the cells
    assert out.read_text() == "previous\n"


def test_cli_categories_are_declared_never_read_off_the_data(records, tmp_path, capsys):
    path, bands = records
    out = tmp_path / "p.csv"
    base = ["subset-privacy", str(path), "--rows", "degree", "--protected", "income",
            "--epsilon", "2", "-o", str(out)]
    with pytest.raises(ParameterError, match="no longer accepted"):
        run_cli([*base, "--categories-from-data"])
    assert main([*base, "--categories-from-data"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("quiltpriv: error:") and len(err.strip().splitlines()) == 1
    assert not out.exists()
    # Declared rows: every declared row is written in declared order, an empty one included;
    # a declared but unused protected category still has its column.
    cats = [*bands, "unused"]
    assert run_cli([*base, "--categories", ",".join(cats), "--row-categories",
                    "BSc,PhD,BA,BEng", "--seed", "1"]) == 0
    rows = [line.split(",") for line in out.read_text().splitlines()]
    assert rows[0] == ["degree", "total", *cats]
    assert [r[0] for r in rows[1:]] == ["BSc", "PhD", "BA", "BEng"]
    assert [int(r[1]) for r in rows[1:]] == [20, 0, 30, 1]
    with pytest.raises(QueryError, match="outside --row-categories"):
        run_cli([*base, "--categories", ",".join(bands), "--row-categories", "BSc,BA"])
