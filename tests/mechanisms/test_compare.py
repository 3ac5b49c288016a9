"""Tests of the side-by-side comparison (quiltpriv.mechanisms.compare) and its CLI handler."""

from __future__ import annotations

import argparse
import json
import math

import pytest

from quiltpriv.cli.compare import register_cli
from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.mechanisms.apmqm import plan
from quiltpriv.mechanisms.compare import compare
from quiltpriv.model.loading import load_model
from quiltpriv.queries.network_laws import network_wasserstein
from quiltpriv.queries.query import CountQuery, MeanQuery


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser()
    register_cli(ap.add_subparsers())
    return ap


def test_student_count_rows_agree_with_each_mechanism():
    theta = load_model("student")
    q = CountQuery(["height", "sat"], 100)
    c = compare(theta, q, "income", 1.0)
    assert [r.mechanism for r in c.rows] == ["APMQM", "group DP Laplace", "Wasserstein",
                                             "APGM", "original MQM"]
    p = plan(theta, q, "income", 1.0)
    assert c["APMQM"].scale == p.scale
    assert c["APMQM"].std == pytest.approx(math.sqrt(2) * p.scale)
    assert c["group DP Laplace"].scale == 100.0  # n * 1 / eps
    # two attributes: the Wasserstein laws need a convolution, refused with a reason
    w = c["Wasserstein"]
    assert not w.applicable and "needs its predicate" in w.detail
    assert not c["APGM"].applicable and "Gaussian" in c["APGM"].detail
    assert not c["original MQM"].applicable
    # sat is nearby for every quilt with influence below eps: APMQM pays the full n / eps
    assert c["APMQM"].scale == 100.0
    # the paper's Example 1: a count over height alone needs no noise (Q = {gender})
    h = compare(theta, CountQuery(["height"], 100), "income", 1.0)
    assert h["APMQM"].scale == 0.0 and h.best is h["APMQM"]
    assert h["Wasserstein"].applicable and h["Wasserstein"].scale > 0


def test_student_single_attribute_count_uses_exact_wasserstein():
    theta = load_model("student")
    q = CountQuery(["sat"], 100)
    c = compare(theta, q, "income", 1.0)
    w = c["Wasserstein"]
    ref = network_wasserstein(theta, q, "income", 1.0)
    assert w.applicable and w.scale == ref.scale == 14.0
    assert c.best is w  # far below group DP's 100 and APMQM's trivial 100
    assert c["APMQM"].scale == 100.0


def test_example3_matches_paper():
    c = compare(load_model("example3"), CountQuery(["x1"], 4), "x2", 1.0)
    assert c["Wasserstein"].scale == 1.0  # Example 3: Lap(1 / eps)
    assert c["group DP Laplace"].scale == 4.0
    assert c["APMQM"].scale == 4.0  # x1 determines x2: infinite influence, trivial quilt


def test_mean_query_and_bad_inputs():
    c = compare(load_model("student"), MeanQuery("height", lower=0, upper=1), ["income"], 0.5)
    assert c["group DP Laplace"].scale == 2.0
    assert not c["Wasserstein"].applicable and "count" in c["Wasserstein"].detail
    with pytest.raises(ParameterError):
        compare(load_model("student"), MeanQuery("height", lower=0, upper=1), [], 0.5)
    with pytest.raises(ModelError):
        compare(load_model("student"), MeanQuery("height", lower=0, upper=1), ["nope"], 0.5)
    with pytest.raises(ParameterError):
        compare(load_model("student"), MeanQuery("height", lower=0, upper=1), ["income"], -1)


def test_cli_text_and_json(capsys):
    ap = _parser()
    args = ap.parse_args("compare student --sensitive income --query count --attributes sat "
                         "--records 100 --epsilon 1".split())
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "Wasserstein" in out and "least noise: Wasserstein" in out
    args = ap.parse_args("compare example3 --sensitive x2 --attributes x1 --records 4 "
                         "--epsilon 2 --json".split())
    assert args.func(args) == 0
    d = json.loads(capsys.readouterr().out)
    rows = {r["mechanism"]: r for r in d["rows"]}
    assert rows["Wasserstein"]["scale"] == 0.5 and rows["group DP Laplace"]["scale"] == 2.0
    args = ap.parse_args("compare student --sensitive income --attributes sat --epsilon 1".split())
    with pytest.raises(ParameterError, match="records"):
        args.func(args)
