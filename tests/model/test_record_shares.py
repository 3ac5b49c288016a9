"""A share of one category of a categorical column, learned without a hand-made 0/1 column:
``parameters={"high": qp.share_of('income == "high"', domain=...)}``, on the command line
``--parameters 'high=share of income == "high"' --domain income=low|mid|high``."""

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
    high = qp.share_of('income == "high"', domain=DOMAIN)
    by_condition = _learn(data, {"high": high, "age": "mean"})
    manual = data.assign(high=(data["income"] == "high").astype(int))
    by_hand = _learn(manual, {"high": "share", "age": "mean"})
    assert by_condition.fingerprint() == by_hand.fingerprint()
    first = data[data["place"] == "p00"]
    assert list(high.indicator(first)) == [int(v == "high") for v in first["income"]]
    prov = qp.model.provenance.provenance_dict(by_condition)
    assert prov["parameters"]["high"]["kind"] == "share"
    assert prov["parameters"]["high"]["condition"] == "income == 'high'"
    assert prov["parameters"]["high"]["domain"] == {"income": ["low", "mid", "high"]}
    # a condition over several values and columns; age is only ordered: no domain needed
    rich = qp.share_of('income in ["mid", "high"] and age > 50', domain=DOMAIN)
    both = _learn(data, {"rich": rich, "age": "mean"})
    assert both.provenance["parameters"]["rich"]["condition"] == \
        "income in ['mid', 'high'] and age > 50"
    want = ((first["income"] != "low") & (first["age"] > 50)).astype(int).tolist()
    assert list(rich.indicator(first)) == want


def test_the_domain_is_declared_and_enforced():
    data = _records()
    with pytest.raises(ParameterError, match="declare the values of the column"):
        qp.share_of('income == "high"')
    with pytest.raises(ParameterError, match="not in its declared domain"):
        qp.share_of('income == "hihg"', domain=DOMAIN)
    with pytest.raises(ParameterError, match="does not read: 'place'"):
        qp.share_of('income == "high"', domain={**DOMAIN, "place": ["p00"]})
    with pytest.raises(ParameterError, match="compares 'age' with 50"):  # declared: enforced
        qp.share_of("age > 50", domain={"age": [1, 2]})
    spec = {"high": qp.share_of('income == "high"', domain=DOMAIN), "age": "mean"}
    odd = data.copy()
    odd.loc[7, "income"] = "very high"
    with pytest.raises(DataError, match=r"1 value\(s\) outside its declared domain"):
        _learn(odd, spec)
    with pytest.raises(DataError, match="no column"):
        _learn(data.drop(columns="income"), spec)
    with pytest.raises(ParameterError, match="population column"):
        qp.learn_theta(data.groupby("place")[["age"]].mean().assign(high=0.5), spec,
                       quantiles=2)
    with pytest.raises(ParameterError, match=r"qp.share_of\('income == \"high\"'"):
        _learn(data, {"high": 'share of income == "high"', "age": "mean"})


@pytest.mark.parametrize("condition, match", [
    ("", "empty"),
    ("income = 'high'", "use '==' to compare"),
    ("income + 1", "not a true/false condition"),
    ("__import__('os')", "a function call"),
    ("@income == 1", "'@'"),
])
def test_strict_parsing(condition, match):
    with pytest.raises(ParameterError, match=match):
        qp.share_of(condition, domain=DOMAIN)


def test_cli_learn_share_of_a_category(tmp_path, capsys):
    from quiltpriv.cli import main

    csv = tmp_path / "records.csv"
    _records().to_csv(csv, index=False)
    out = tmp_path / "theta.json"
    args = ["learn", str(csv), "--parameters", 'high=share of income in ["mid", "high"],age=mean',
            "--domain", "income=low|mid|high", "--population", "place", "--quantiles", "2",
            "--data-public", "-o", str(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        assert main(args) == 0
    theta = qp.load_model(out)
    assert theta.provenance["parameters"]["high"]["condition"] == "income in ['mid', 'high']"
    assert list(theta.nodes) == ["high", "age"]
    capsys.readouterr()
    assert main(args[:5] + ["income=low|mid"] + args[6:]) == 2  # 'high' not declared
    err = capsys.readouterr().err
    assert "'high', which is not in its declared domain" in err and len(err.splitlines()) == 1
    assert main(args[:3] + ['high=share of income == "high"'] + args[6:]) == 2  # no --domain
    assert "declare the values of the column(s) 'income'" in capsys.readouterr().err
