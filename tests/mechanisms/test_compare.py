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
from quiltpriv.mechanisms.network_wasserstein import network_wasserstein
from quiltpriv.model.loading import load_model
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


#: The rows (mechanism, applicable, registry name, scale) ``compare`` gave when it hard-coded
#: them (before it iterated the registry), for five inputs that reach every row's branches.
ROWS_BEFORE_THE_REGISTRY = {
    "two": [("APMQM", True, "apmqm", 100.0), ("group DP Laplace", True, "group-dp", 100.0),
            ("Wasserstein", False, None, None), ("APGM", False, None, None),
            ("original MQM", False, None, None)],
    "height": [("APMQM", True, "apmqm", 0.0), ("group DP Laplace", True, "group-dp", 100.0),
               ("Wasserstein", True, "wasserstein", 2.0), ("APGM", False, None, None),
               ("original MQM", False, None, None)],
    "sat": [("APMQM", True, "apmqm", 100.0), ("group DP Laplace", True, "group-dp", 100.0),
            ("Wasserstein", True, "wasserstein", 14.0), ("APGM", False, None, None),
            ("original MQM", False, None, None)],
    "mean": [("APMQM", True, "apmqm", 0.0), ("group DP Laplace", True, "group-dp", 2.0),
             ("Wasserstein", False, None, None), ("APGM", False, None, None),
             ("original MQM", False, None, None)],
    "chain": [("APMQM", True, "apmqm", 0.5), ("group DP Laplace", True, "group-dp", 0.5),
              ("Wasserstein", False, None, None), ("APGM", False, None, None),
              ("MQM", True, "mqm", 1.0)],
}


def _compared(case: str):
    from quiltpriv.model.time_series import markov_chain

    student = load_model("student")
    if case == "chain":
        chain = markov_chain(4, [[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5])
        return compare(chain, CountQuery(["X1", "X2"], 1), ["X1", "X3"], 2.0)
    if case == "mean":
        return compare(student, MeanQuery("height", lower=0, upper=1), ["income"], 0.5)
    attrs = {"two": ["height", "sat"], "height": ["height"], "sat": ["sat"]}[case]
    return compare(student, CountQuery(attrs, 100), "income", 1.0)


@pytest.mark.parametrize("case", sorted(ROWS_BEFORE_THE_REGISTRY))
def test_rows_from_the_registry_are_the_rows_compare_hard_coded(case):
    c = _compared(case)
    assert [(r.mechanism, r.applicable, r.name, r.scale) for r in c.rows] == \
        ROWS_BEFORE_THE_REGISTRY[case]
    for r in c.rows:
        assert (r.std is None) == (r.scale is None)
        if r.scale is not None:
            assert r.std == pytest.approx(math.sqrt(2) * r.scale)


def test_compare_lists_every_mechanism_of_the_registry(monkeypatch):
    """A mechanism added to the registry gets a row, read off its protocol; an (eps, delta)
    one is left out (compare has no delta); one a network cannot calibrate says why."""
    from quiltpriv.mechanisms import compare as compare_mod
    from quiltpriv.mechanisms.registry import REGISTRY, MechanismEntry, group_dp_mechanism

    assert [e.name for e in REGISTRY] == ["apmqm", "group-dp", "wasserstein",
                                          "group-dp-gaussian", "apgm", "mqm"]

    def build(theta, query, sensitive, epsilon, **_):
        return group_dp_mechanism(query, 2 * epsilon)

    extra = MechanismEntry("twice", "twice", "group DP at 2 eps", False, build)
    gone = MechanismEntry("gone", "gone", "needs what a network lacks", False, None,
                          unavailable="does not apply: no reason")
    monkeypatch.setattr(compare_mod, "REGISTRY", (*REGISTRY, extra, gone))
    c = compare(load_model("student"), CountQuery(["sat"], 100), "income", 1.0)
    row = c.rows[-2]
    assert (row.name, row.applicable, row.scale) == ("twice", True, 50.0)
    assert row.privacy == group_dp_mechanism(CountQuery(["sat"], 100), 2.0).guarantee
    assert (c.rows[-1].mechanism, c.rows[-1].applicable, c.rows[-1].detail) == \
        ("gone", False, "does not apply: no reason")
    assert "group-dp-gaussian" not in [r.name for r in c.rows]
