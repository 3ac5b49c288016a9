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
