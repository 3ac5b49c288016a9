"""A share of one category of a categorical column, learned without a hand-made 0/1 column:
``parameters={"high": 'share of income == "high"'}`` with the column's domain declared."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.errors import AssumptionWarning, DataError, ParameterError

DOMAIN = {"income": ["low", "mid", "high"]}


def _records(seed: int = 0, places: int = 30, per: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(places):
        p_high = rng.uniform(0.1, 0.6)
        income = rng.choice(["low", "mid", "high"], size=per,
                            p=[(1 - p_high) / 2, (1 - p_high) / 2, p_high])
        rows.append(pd.DataFrame({"place": f"p{k:02d}", "income": income,
                                  "age": rng.normal(40 + 30 * p_high, 5, per)}))
    return pd.concat(rows, ignore_index=True)


def _learn(data, parameters, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        return qp.learn_theta(data, parameters, population="place", quantiles=2,
                              data_public=True, **kw)


def test_a_condition_share_equals_the_hand_made_column():
    data = _records()
    by_condition = _learn(data, {"high": 'share of income == "high"', "age": "mean"},
                          domain=DOMAIN)
    manual = data.assign(high=(data["income"] == "high").astype(int))
    by_hand = _learn(manual, {"high": "share", "age": "mean"})
    assert by_condition.fingerprint() == by_hand.fingerprint()
    table = qp.model.learning.population_parameters(manual, "place", {"high": "share"})
    first = data[data["place"] == "p00"]
    assert table.loc["p00", "high"] == pytest.approx(float((first["income"] == "high").mean()),
                                                     rel=1e-15)
    param = by_condition.provenance["parameters"]["high"]
    assert param["kind"] == "share" and param["condition"] == "income == 'high'"
    assert qp.model.provenance.provenance_dict(by_condition)["domain"] == \
        {"income": ["low", "mid", "high"]}
    # a condition over several values and columns
    both = _learn(data, {"rich": 'share of income in ["mid", "high"] and age > 50',
                         "age": "mean"}, domain={"income": DOMAIN["income"]})
    assert both.provenance["parameters"]["rich"]["condition"] == \
        "income in ['mid', 'high'] and age > 50"


def test_the_domain_is_declared_and_enforced():
    data = _records()
    spec = {"high": 'share of income == "high"', "age": "mean"}
    with pytest.raises(ParameterError, match="declare the values of the column"):
        _learn(data, spec)
    with pytest.raises(ParameterError, match="not in its declared domain"):
        _learn(data, {"high": 'share of income == "hihg"', "age": "mean"}, domain=DOMAIN)
    with pytest.raises(ParameterError, match="no 'share of' condition reads: 'place'"):
        _learn(data, spec, domain={**DOMAIN, "place": ["p00"]})
    with pytest.raises(ParameterError, match="compares 'age' with 50"):  # declared: enforced
        _learn(data, {"old": "share of age > 50", "age": "mean"}, domain={"age": [1, 2]})
    with pytest.raises(ParameterError, match="no parameter has a condition"):
        _learn(data.assign(h=0), {"h": "share", "age": "mean"}, domain=DOMAIN)
    odd = data.copy()
    odd.loc[7, "income"] = "very high"
    with pytest.raises(DataError, match=r"1 value\(s\) outside its declared domain"):
        _learn(odd, spec, domain=DOMAIN)
    with pytest.raises(DataError, match="no column"):
        _learn(data.drop(columns="income"), spec, domain=DOMAIN)
    with pytest.raises(ParameterError, match="share of CONDITION"):
        qp.learn_theta(data.groupby("place")[["age"]].mean().assign(h=0.5),
                       {"h": 'share of income == "high"', "age": "mean"}, quantiles=2,
                       domain=DOMAIN)


@pytest.mark.parametrize("kind, match", [
    ("share of", "kind must be one of"),
    ("share of income = 'high'", "use '==' to compare"),
    ("share of income + 1", "not a true/false condition"),
    ("share of __import__('os')", "a function call"),
    ("share of @income == 1", "'@'"),
])
def test_strict_parsing(kind, match):
    with pytest.raises(ParameterError, match=match):
        _learn(_records(), {"high": kind, "age": "mean"}, domain=DOMAIN)


def test_cli_learn_share_of_a_category(tmp_path):
    from quiltpriv.cli import main

    csv = tmp_path / "records.csv"
    _records().to_csv(csv, index=False)
    out = tmp_path / "theta.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        assert main(["learn", str(csv), "--parameters",
                     'high=share of income in ["mid", "high"],age=mean',
                     "--domain", "income=low|mid|high", "--population", "place",
                     "--quantiles", "2", "--data-public", "-o", str(out)]) == 0
    theta = qp.load_model(out)
    assert theta.provenance["parameters"]["high"]["condition"] == "income in ['mid', 'high']"
    assert list(theta.nodes) == ["high", "age"]
