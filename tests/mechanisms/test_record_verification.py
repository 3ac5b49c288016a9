"""Published release records verified end to end, and plans checked against another model."""

from __future__ import annotations

import copy
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.errors import PlanError
from quiltpriv.mechanisms.record_verification import check_record
from quiltpriv.mechanisms.verification import compare_models
from quiltpriv.model.diff import model_diff
from quiltpriv.model.loading import load_model, theta_to_dict

QUERY = qp.SumQuery("gender", 100, lower=0.0, upper=1.0)


@pytest.fixture(scope="module")
def student():
    return load_model("student")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    return pd.DataFrame({v: rng.integers(0, 2, 100).astype(float)
                         for v in ("gender", "income", "sat", "height", "weight")})


@pytest.fixture()
def published(student, data, tmp_path):
    """A seeded release of a sum over the sensitive attribute (b = 100), in a ledger."""
    plan = qp.plan(student, QUERY, "gender", 1.0)
    ledger = tmp_path / "ledger.db"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = qp.release(plan, QUERY, data, seed=3, ledger=ledger)
    return r.to_record().to_dict(), ledger


def test_an_honest_record_verifies_with_its_data_and_ledger(student, data, published):
    record, ledger = published
    v = check_record(record, student, data=data, ledger=ledger)
    assert v.ok, v.failure
    assert [c.name for c in v.checks] == ["embedded plan", "model", "query", "guarantee",
                                          "calibration", "noise drawn", "data", "ledger"]
    assert v.true_value == float(data["gender"].sum())
    assert v.noise_added == pytest.approx(record["value"] - v.true_value, abs=0)
    assert v.noise_added != 0  # b = 100: noise was drawn
    assert v.ledger_entry == 0
    assert "noise actually added" in v.explain()
    # from its JSON text too
    assert check_record(json.dumps(record), student).ok


@pytest.mark.parametrize("edit, failed", [
    # the scale lowered everywhere it is stated: the embedded plan no longer verifies
    (lambda r: [r["calibration"].__setitem__("scale", 50.0),
                r["plan"].__setitem__("scale", 50.0),
                r["plan"]["sensitive"]["gender"].__setitem__("scale", 50.0)], "embedded plan"),
    # only the record's calibration lowered: it no longer states its plan's
    (lambda r: r["calibration"].__setitem__("scale", 50.0), "calibration"),
    (lambda r: r["guarantee"].__setitem__("epsilon", 0.5), "guarantee"),
    (lambda r: r["guarantee"].__setitem__("sensitive", ["gender", "income"]), "guarantee"),
    (lambda r: [r["calibration"].__setitem__("noise_scale_used", 10.0),
                r.__setitem__("scale", 10.0)], "noise drawn"),
    (lambda r: r["noise"].__setitem__("source", "none"), "noise drawn"),
    (lambda r: r["model"].__setitem__("fingerprint", "0" * 64), "model"),
    (lambda r: r["query"].__setitem__("fingerprint", "0" * 64), "query"),
    (lambda r: r["data"].__setitem__("rows", 99), "data"),
    (lambda r: r.__setitem__("value", r["value"] + 1.0), "ledger"),
])
def test_an_edited_record_is_refused(student, data, published, edit, failed):
    record, ledger = published
    edited = copy.deepcopy(record)
    edit(edited)
    v = check_record(edited, student, data=data, ledger=ledger)
    assert not v.ok
    assert v.failure.startswith(failed + ":"), v.failure
    with pytest.raises(PlanError, match="does not verify"):
        v.verified()


def test_records_of_other_kinds_are_refused(student):
    with pytest.raises(PlanError, match="not a release record"):
        check_record("{\"format\": \"quiltpriv-plan/2\"}", student)
    with pytest.raises(PlanError, match="twice"):
        check_record('{"format": "quiltpriv-release/2", "a": 1, "a": 2}', student)


def test_cli_verifies_a_record_and_refuses_an_edited_one(published, data, tmp_path, capsys):
    record, ledger = published
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    csv = tmp_path / "d.csv"
    data.to_csv(csv, index=False)
    assert main(["verify", str(path), "student", "--data", str(csv), "--ledger",
                 str(ledger)]) == 0
    out = capsys.readouterr().out
    assert "release record VERIFIED" in out and "noise actually added" in out
    assert "[OK] ledger: entry 0 of 1" in out
    edited = copy.deepcopy(record)
    for where in (edited["calibration"], edited["plan"], edited["plan"]["sensitive"]["gender"]):
        where["scale"] = 1.0
    path.write_text(json.dumps(edited))
    assert main(["verify", str(path), "student"]) == 2
    err = capsys.readouterr().err
    assert "release record does not verify" in err and "below Delta / (eps - e) = 100" in err
    # --data belongs to a record, not a plan
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(record["plan"]))
    assert main(["verify", str(plan), "student", "--data", str(csv)]) == 2
    assert "apply to a release record" in capsys.readouterr().err


# -- another model -----------------------------------------------------------------------


def _changed_student(tmp_path, delta=0.05):
    d = theta_to_dict(load_model("student"), version=1)
    table = d["members"][0]["cpds"]["income"]  # axes (income, gender)
    table[0][0] += delta
    table[2][0] -= delta
    path = tmp_path / "student2.json"
    path.write_text(json.dumps(d))
    return load_model(path), path


def test_model_diff_names_the_changed_table(student, tmp_path):
    other, _ = _changed_student(tmp_path)
    diff = model_diff(student, other)
    assert not diff.same and not diff.nodes_only_in_a and not diff.edges_only_in_b
    assert [(t.node, t.where) for t in diff.tables] == [
        ("income", "P(income = 0.2 | gender = 0.4)")]
    assert diff.tables[0].max_abs_difference == pytest.approx(0.05, abs=1e-15)
    assert model_diff(student, load_model("models/student.bif")).same
    # a removed edge and node: named, and the tables of the nodes left compared
    t = qp.theta_from_tables([("a", "b")], {"a": [0, 1], "b": [0, 1], "c": [0, 1]},
                             {"a": [0.5, 0.5], "b": [[0.9, 0.2], [0.1, 0.8]], "c": [0.3, 0.7]})
    u = qp.theta_from_tables([], {"a": [0, 1], "b": [0, 1]},
                             {"a": [0.4, 0.6], "b": [0.5, 0.5]})
    d = model_diff(t, u)
    assert d.nodes_only_in_a == ("c",) and d.edges_only_in_a == (("a", "b"),)
    assert [(x.node, x.max_abs_difference) for x in d.tables] == [
        ("a", pytest.approx(0.1, abs=1e-15))]
    assert "edges only in" in d.explain()


def test_compare_models_replans_and_says_whether_the_noise_suffices(student, tmp_path):
    other, _ = _changed_student(tmp_path)
    q = qp.SumQuery("sat", 100, lower=0.0, upper=1.0)
    plan = qp.plan(student, q, ["gender", "income"], 1.0)
    c = compare_models(plan, other, q, plan_theta=student)
    assert c.needed_scale == qp.plan(other, q, ["gender", "income"], 1.0).scale
    assert c.suffices is (plan.scale >= c.needed_scale)
    assert c.diff.tables[0].node == "income"
    # a published scale below what the other model needs is flagged
    small = qp.Plan.from_dict({**plan.to_dict()})
    from dataclasses import replace

    lowered = replace(small, scale=c.needed_scale / 2)
    if c.needed_scale > 0:
        assert compare_models(lowered, other, q).suffices is False
    with pytest.raises(qp.ModelError, match="not the plan's model"):
        compare_models(plan, other, q, plan_theta=other)


def test_cli_verify_against_another_model_shows_the_diff(student, tmp_path, capsys):
    _, path = _changed_student(tmp_path)
    plan_path = tmp_path / "plan.json"
    assert main(["plan", "student", "--sensitive", "gender,income", "--query", "sum",
                 "--attributes", "sat", "--bounds", "0:1", "--records", "100", "--epsilon",
                 "1", "--json", "-o", str(plan_path)]) == 0
    capsys.readouterr()
    assert main(["verify", str(plan_path), str(path), "--plan-model", "student"]) == 2
    out, err = capsys.readouterr()
    assert "another model" in err
    assert "table of income: max |difference| 0.05 at P(income = 0.2 | gender = 0.4)" in out
    assert "re-planned under this model: b = " in out
    # the same plan against the BIF file of the same model verifies
    assert main(["verify", str(plan_path), "models/student.bif"]) == 0


def test_hostile_record_text_is_one_line(published, tmp_path, capsys):
    record, _ = published
    text = json.dumps(record).replace('"rows": 100', '"rows": 1' + "0" * 5000)
    path = tmp_path / "r.json"
    path.write_text(text)
    assert main(["verify", str(path), "student"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("quiltpriv: error: ")
    path.write_text(json.dumps(record).replace('"epsilon": 1.0', '"epsilon": 1e999', 1))
    assert main(["verify", str(path), "student"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_compare_models_against_a_model_without_the_plan_attributes(student):
    q = qp.SumQuery("sat", 100, lower=0.0, upper=1.0)
    plan = qp.plan(student, q, ["gender"], 1.0)
    other = qp.theta_from_tables([], {"sat": [0, 1]}, {"sat": [0.5, 0.5]})
    c = compare_models(plan, other, q)
    assert c.needed_scale is None and c.suffices is None and "gender" in c.replan_error
    assert "cannot be made again" in c.explain()
