"""The record-level diagnostics flag within-population dependence and tiny populations, stay
quiet on records built without them, and never change Theta."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.errors import AssumptionWarning, ParameterError
from quiltpriv.model.diagnostics import record_diagnostics

PARAMS = {"lean": "share", "vote": "share", "age": "mean"}


def _records(dependent: bool, seed: int = 0, places: int = 60, per: int = 25,
             tiny: int = 0) -> pd.DataFrame:
    """Records in places whose shares vary together across places (a between-place
    correlation the assumption allows); within a place, vote copies lean with probability 0.8
    when ``dependent`` (the anes96 situation), else it is drawn on its own."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(places + tiny):
        n = 2 if k >= places else per
        p = rng.uniform(0.2, 0.8)
        q = float(np.clip(p + rng.normal(0, 0.05), 0.05, 0.95))
        lean = rng.random(n) < p
        vote = rng.random(n) < q
        if dependent:
            copy = rng.random(n) < 0.8
            vote = np.where(copy, lean, vote)
        age = rng.normal(40 + 20 * p, 5, n)
        rows.append(pd.DataFrame({"place": k, "lean": lean.astype(int),
                                  "vote": vote.astype(int), "age": age}))
    return pd.concat(rows, ignore_index=True)


def _learn(data, **kw):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        theta = qp.learn_theta(data, PARAMS, population="place", quantiles=2,
                               data_public=True, **kw)
    return theta, [str(w.message) for w in seen if issubclass(w.category, AssumptionWarning)]


def test_dependent_records_are_flagged():
    theta, said = _learn(_records(dependent=True))
    diag = theta.provenance["diagnostics"]
    pair = {tuple(r["attributes"]): r for r in diag["pairs"]}[("lean", "vote")]
    assert pair["flagged"] and pair["p_value"] < 1e-12 and pair["correlation"] > 0.6
    assert pair["df"] == 60 * 25 - 60 - 1
    assert diag["flagged"]
    assert len(said) == 1 and "'lean' and 'vote' are dependent" in said[0]
    # shown wherever Theta is used: the plan (text and record), compare
    query = qp.CountQuery(["vote"], 100)
    plan = qp.plan(theta, query, "lean", 1.0)
    flagged = [w for w in plan.warnings if "'lean' and 'vote' are dependent" in w]
    assert len(flagged) == 1 and flagged[0] in plan.explain()
    assert plan.to_dict()["provenance"]["diagnostics"]["flagged"] is True
    from quiltpriv.mechanisms.compare import compare

    notes = compare(theta, query, "lean", 1.0).notes
    assert any("'lean' and 'vote' are dependent" in n for n in notes)
    import html

    from quiltpriv.reporting.report import audit_report

    page = html.unescape(audit_report(theta, query, plan).html)
    assert "'lean' and 'vote' are dependent" in page


def test_independent_records_stay_quiet():
    # the shares move together across places, but records are independent within a place
    for seed in range(3):
        theta, said = _learn(_records(dependent=False, seed=seed))
        diag = theta.provenance["diagnostics"]
        assert not diag["flagged"] and said == []
        plan = qp.plan(theta, qp.CountQuery(["vote"], 100), "lean", 1.0)
        assert not [w for w in plan.warnings if "records Theta was learned from" in w]
        assert all(r["p_value"] > 0.01 / 3 for r in diag["pairs"])


def test_tiny_populations_and_min_records():
    data = _records(dependent=False, seed=1, tiny=4)
    theta, said = _learn(data)
    pops = theta.provenance["diagnostics"]["populations"]
    assert (pops["count"], pops["tiny"], pops["min"], pops["max"]) == (64, 4, 2, 25)
    assert len(said) == 1 and "4 of 64 populations have fewer than 5 records" in said[0]
    kept, said = _learn(data, min_records=5)
    assert kept.provenance["diagnostics"]["populations"]["count"] == 60
    assert kept.provenance["min_records"] == 5 and kept.provenance["populations"] == 60
    assert said == []
    with pytest.raises(ParameterError, match="min_records"):
        qp.learn_theta(data, PARAMS, population="place", quantiles=2, min_records=0)
    with pytest.raises(ParameterError, match="population="):
        qp.learn_theta(data.drop(columns="place"), PARAMS, quantiles=2, min_records=5)


def test_diagnostics_never_change_theta():
    data = _records(dependent=True)
    theta, _ = _learn(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        again = qp.learn_theta(data, PARAMS, population="place", quantiles=2,
                               data_public=True)
    assert again.fingerprint() == theta.fingerprint()  # warnings filtered or not
    # the fingerprint covers the tables, not the provenance: the diagnostics only annotate
    assert theta.with_provenance(None).fingerprint() == theta.fingerprint()


def test_record_diagnostics_against_a_direct_computation():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 7, 200)
    x = rng.normal(size=200) + groups
    y = 0.3 * x + rng.normal(size=200)
    d = record_diagnostics({"x": x, "y": y}, groups)
    xc = x - pd.Series(x).groupby(groups).transform("mean").to_numpy()
    yc = y - pd.Series(y).groupby(groups).transform("mean").to_numpy()
    r = float(np.corrcoef(xc, yc)[0, 1])
    from scipy import stats

    df = 200 - 7 - 1
    t = r * np.sqrt(df / (1 - r * r))
    (row,) = d["pairs"]
    assert row["correlation"] == pytest.approx(r, rel=1e-12)
    assert row["p_value"] == pytest.approx(2 * stats.t.sf(abs(t), df), rel=1e-9)
    with pytest.raises(ParameterError):
        record_diagnostics({"x": x}, groups, alpha=2)


# -- the non-linear dependence test and survey weights ------------------------------------------


def _nonlinear(dependent: bool, seed: int = 0, places: int = 60, per: int = 25) -> pd.DataFrame:
    """Within a place, extreme ages (far from the place's mean, either way) vote one way and
    middle ages the other when ``dependent``: a dependence through |age - mean| whose
    correlation is about 0, the situation the correlation test cannot see."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(places):
        mu = rng.uniform(30, 60)
        age = mu + rng.normal(0, 8, per)
        p = np.full(per, rng.uniform(0.3, 0.7))
        if dependent:
            p = np.where(np.abs(age - mu) > 8, p + 0.3, p - 0.25)
        rows.append(pd.DataFrame({"place": k, "age": age,
                                  "vote": (rng.random(per) < p).astype(int)}))
    return pd.concat(rows, ignore_index=True)


def _learn_nl(data, **kw):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        theta = qp.learn_theta(data, {"age": "mean", "vote": "share"}, population="place",
                               quantiles=2, data_public=True, **kw)
    return theta, [str(w.message) for w in seen if issubclass(w.category, AssumptionWarning)]


def test_nonlinear_dependence_is_flagged_where_the_correlation_is_not():
    theta, said = _learn_nl(_nonlinear(dependent=True))
    (row,) = theta.provenance["diagnostics"]["pairs"]
    dep = row["dependence"]
    assert abs(row["correlation"]) < 0.06 and not row["correlation_flagged"]
    assert row["p_value"] > 0.01 / 2  # the correlation test misses it ...
    assert dep["flagged"] and dep["p_value"] < 1e-8  # ... the G-test does not
    assert dep["mutual_information_bits"] > 0.05 and list(dep["categories"]) == [3, 2]
    assert dep["permutations"] == 99 and row["flagged"]
    assert len(said) == 1 and "a dependence the correlation" in said[0]
    assert "conditional G-test" in said[0] and "bits" in said[0]
    plan = qp.plan(theta, qp.CountQuery(["vote"], 100), "age", 1.0)
    assert any("'age' and 'vote' are dependent" in w for w in plan.warnings)
    from quiltpriv.mechanisms.compare import compare

    notes = compare(theta, qp.CountQuery(["vote"], 100), "age", 1.0).notes
    assert any("a dependence the correlation" in n for n in notes)


def test_nonlinear_test_stays_quiet_without_dependence():
    for seed in range(4):
        theta, said = _learn_nl(_nonlinear(dependent=False, seed=seed))
        (row,) = theta.provenance["diagnostics"]["pairs"]
        assert said == [] and not row["flagged"], (seed, row)
        assert row["dependence"]["p_value"] > 0.005


def test_g_statistic_against_a_direct_computation():
    from quiltpriv.model.diagnostics import _g_statistics

    rng = np.random.default_rng(5)
    labels = rng.integers(0, 4, 300)
    x = rng.integers(0, 3, 300)
    y = (rng.random(300) < 0.3 + 0.2 * (x == 1)).astype(np.int64)
    w = rng.uniform(0.5, 2.0, 300)
    for weights in (None, w):
        want = 0.0
        ww = np.ones(300) if weights is None else weights
        for g in range(4):
            m = labels == g
            table = np.zeros((3, 2))
            np.add.at(table, (x[m], y[m]), ww[m])
            e = np.outer(table.sum(1), table.sum(0)) / table.sum()
            nz = table > 0
            want += 2 * float(np.sum(table[nz] * np.log(table[nz] / e[nz])))
        got = _g_statistics(x, y[None, :], labels, 4, weights)[0]
        assert got == pytest.approx(want, rel=1e-12)


def test_permutations_stay_within_each_population():
    from quiltpriv.model import diagnostics as dg

    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(5), [3, 7, 1, 9, 4])[rng.permutation(24)]
    y = rng.integers(0, 2, 24)
    seen = {}

    def spy(x, ys, lab, k, w):
        seen["rows"] = ys
        return np.arange(ys.shape[0], dtype=float)

    orig = dg._g_statistics
    dg._g_statistics = spy
    try:
        dg._g_test(y, y, labels, 5, None, 25, np.random.default_rng(0))
    finally:
        dg._g_statistics = orig
    for row in seen["rows"]:  # each population keeps its multiset of values
        for g in range(5):
            assert sorted(row[labels == g]) == sorted(y[labels == g])


def test_weights_are_used_and_validated():
    data = _records(dependent=False, seed=4)
    data["w"] = 1.0
    theta, _ = _learn(data)
    same, _ = _learn(data, weights="w")
    assert same.fingerprint() == theta.fingerprint()  # equal weights change nothing
    d0, d1 = theta.provenance["diagnostics"], same.provenance["diagnostics"]
    assert d1["weighted"] and not d0["weighted"] and same.provenance["weights"] == "w"
    assert d1["pairs"][0]["p_value"] == pytest.approx(d0["pairs"][0]["p_value"], rel=1e-9)
    # a weighted share is the weighted mean of the records
    data["w"] = np.where(data["vote"] == 1, 3.0, 1.0)
    table = qp.model.learning.population_parameters(data, "place", PARAMS, weights="w")
    first = data[data["place"] == 0]
    want = float((first["vote"] * first["w"]).sum() / first["w"].sum())
    assert table.loc[0, "vote"] == pytest.approx(want, rel=1e-12)
    assert want > float(first["vote"].mean())
    # Kish's effective number of records sets the correlation test's df
    d = record_diagnostics({"a": data["lean"], "b": data["age"]}, data["place"],
                           weights=data["w"].to_numpy())
    w = data["w"].to_numpy()
    assert d["effective_records"] == pytest.approx(w.sum() ** 2 / (w @ w), rel=1e-12)
    assert d["pairs"][0]["df"] == int(np.floor(d["effective_records"])) - 60 - 1
    for bad, match in ((0.0, "positive"), (-1.0, "positive"), (np.nan, "NaN")):
        data.loc[3, "w"] = bad
        with pytest.raises((qp.errors.DataError, ParameterError), match=match):
            qp.learn_theta(data, PARAMS, population="place", quantiles=2, weights="w")
    with pytest.raises(ParameterError, match="population column or a parameter"):
        qp.learn_theta(data, PARAMS, population="place", quantiles=2, weights="vote")
    with pytest.raises(ParameterError, match="population="):
        qp.learn_theta(data.drop(columns="place"), PARAMS, quantiles=2, weights="w")
    with pytest.raises(ParameterError, match="one number per record"):
        record_diagnostics({"a": data["lean"]}, data["place"], weights=[1.0, 2.0])


def test_the_g_test_is_bounded_and_says_so():
    from quiltpriv.model import diagnostics as dg

    data = _records(dependent=False, seed=0)
    values = {p: data[p].to_numpy(dtype=float) for p in PARAMS}
    n = len(data)
    old = dg.MAX_PERMUTATION_WORK
    try:
        dg.MAX_PERMUTATION_WORK = n * 3 * 40  # 40 permutations fit
        d = record_diagnostics(values, data["place"])
        assert d["dependence_test"]["permutations"] == 40
        assert all(r["dependence"]["permutations"] == 40 for r in d["pairs"])
        dg.MAX_PERMUTATION_WORK = n * 3 * 10  # fewer than MIN_PERMUTATIONS
        d = record_diagnostics(values, data["place"])
    finally:
        dg.MAX_PERMUTATION_WORK = old
    assert not d["dependence_test"]["run"] and all(r["dependence"] is None for r in d["pairs"])
    said = dg.diagnostics_warnings(d)
    assert len(said) == 1 and "G-test was not run (work limit" in said[0]


def test_cli_learn_weights_and_min_records(tmp_path):
    from quiltpriv.cli import main

    data = _nonlinear(dependent=True)
    data["w"] = 2.0
    csv = tmp_path / "records.csv"
    data.to_csv(csv, index=False)
    out = tmp_path / "theta.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        assert main(["learn", str(csv), "--parameters", "age=mean,vote=share", "--population",
                     "place", "--weights", "w", "--min-records", "3", "--quantiles", "2",
                     "--data-public", "-o", str(out)]) == 0
    prov = qp.load_model(out).provenance
    assert prov["weights"] == "w" and prov["min_records"] == 3
    assert prov["diagnostics"]["pairs"][0]["dependence"]["flagged"]
