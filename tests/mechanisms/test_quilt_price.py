"""One quilt pricer and one "why this quilt" text (:mod:`quiltpriv.mechanisms.quilt_price`):
the planner's explanation, the HTML report's candidate table and ``quiltpriv quilts`` show the
same scale and the same sentence for the same quilt."""

from __future__ import annotations

import json
import math
from fractions import Fraction as F

import pytest

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.graph.quilts import enumerate_quilts, trivial_quilt
from quiltpriv.mechanisms.quilt_price import price_quilt, price_text, quilt_scale
from quiltpriv.model.loading import load_model
from quiltpriv.reporting.report import audit_report

WEIGHTS = {"sat": 1, "gender": 1}
BOUNDS = {"sat": (0, 1), "gender": (0, 1)}
CLI = ["quilts", "student", "--node", "income", "--query", "linear", "--weights",
       "sat=1,gender=1", "--bounds", "sat=0:1,gender=0:1", "--records", "100"]


@pytest.mark.parametrize("eps", [0.3, 1.5])
def test_planner_report_and_cli_agree_on_price_and_words(eps, capsys):
    theta = load_model("student")
    query = qp.LinearQuery(WEIGHTS, BOUNDS)
    plan = qp.plan(theta, query, "income", eps)
    sp = plan.sensitive[0]
    report = audit_report(theta, query, plan).to_dict()["sensitive"]["income"]
    assert main([*CLI, "--epsilon", str(eps), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert main([*CLI, "--epsilon", str(eps)]) == 0
    text = capsys.readouterr().out

    (cli_chosen,) = [r for r in cli["quilts"] if r["chosen"]]
    (rep_chosen,) = [c for c in report["candidates"] if c["chosen"]]
    assert cli_chosen["quilt"] == rep_chosen["quilt"] == list(sp.quilt)
    # one price: the planner's scale, to the last bit
    assert cli_chosen["scale"] == rep_chosen["scale"] == report["scale"] == sp.scale
    # one sentence: in the plan's explanation, the report's and the command's
    assert cli_chosen["price"] == rep_chosen["price"]
    assert cli_chosen["price"] in sp.explanation == report["explanation"]
    assert f": {cli_chosen['price']}." in text
    # every quilt both list has the same price and words
    by_quilt = {tuple(r["quilt"]): r for r in cli["quilts"]}
    both = [c for c in report["candidates"] if tuple(c["quilt"]) in by_quilt]
    assert len(both) >= 2
    for c in both:
        r = by_quilt[tuple(c["quilt"])]
        assert (r["scale"], r["price"]) == (c["scale"], c["price"])
    # the command ranks as the planner does: its choice first
    assert cli["quilts"][0]["chosen"]


def test_price_quilt_values():
    """Figures: the trivial quilt of income costs Delta_A / eps = 2 / 0.3 rounded up;
    {gender} leaves sat nearby: 1 / (1.5 - e(gender|income))."""
    theta = load_model("student")
    query = qp.LinearQuery(WEIGHTS, BOUNDS)
    trivial = price_quilt(theta, query, trivial_quilt(theta, "income"), 0.3)
    assert (trivial.influence, trivial.sensitivity) == (0.0, 2.0)
    assert trivial.scale == quilt_scale(2.0, 0.0, 0.3) and F(trivial.scale) >= F(2) / F(0.3)
    assert trivial.explain() == ("the query reads nearby {gender, sat}, Delta_{A&N} F = 2, "
                                 "scale = 2 / (0.3 - 0) = 6.66667")
    (gender,) = [q for q in enumerate_quilts(theta, "income", max_size=1) if q.quilt == ("gender",)]
    p = price_quilt(theta, query, gender, 1.5)
    e = qp.max_influence(theta, "income", ["gender"]).value
    assert p.influence == e and p.nearby_attributes == ("sat",) and p.sensitivity == 1.0
    assert p.scale == quilt_scale(1.0, e, 1.5) and F(p.scale) >= 1 / (F(1.5) - F(e))
    assert p.scale == pytest.approx(0.84449, rel=1e-5)
    infeasible = price_quilt(theta, query, gender, 0.3)
    assert infeasible.scale == math.inf
    assert infeasible.explain().startswith("infeasible: e(Q|income) = 0.315853 >= eps = 0.3")
    assert json.loads(p.to_json())["scale"] == p.scale


def test_price_text_cases_and_refusals():
    assert price_text("x", (), 0.1, 0.0, 0.0, 1.0) == (
        "the query reads no nearby attribute (A & N = {}), so Delta = 0 and no noise is "
        "needed for 'x'")
    assert "too expensive" in price_text("x", ("a",), None, 1.0, None, 1.0)
    for bad in ([1.0, ("a",), 0.1, 1.0, 1.0, 1.0], ["x", "a", 0.1, 1.0, 1.0, 1.0],
                ["x", ("a",), math.nan, 1.0, 1.0, 1.0], ["x", ("a",), 0.1, -1.0, 1.0, 1.0],
                ["x", ("a",), 0.1, 1.0, -2.0, 1.0], ["x", ("a",), 0.1, 1.0, 1.0, 0.0]):
        with pytest.raises(ParameterError):
            price_text(*bad)
    theta = load_model("student")
    with pytest.raises(QueryError):
        price_quilt(theta, "count", trivial_quilt(theta, "income"), 1.0)
    with pytest.raises(ParameterError, match="Quilt"):
        price_quilt(theta, qp.LinearQuery(WEIGHTS, BOUNDS), ("gender",), 1.0)
