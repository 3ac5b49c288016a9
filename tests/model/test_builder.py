"""The network builder: round trips to pgmpy and Theta, and every bad input named."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.errors import ModelError, ParameterStatesWarning
from quiltpriv.model.builder import NetworkBuilder, state_name

STUDENT_STATES = {"gender": [0.4, 0.5, 0.6], "income": [0.2, 0.35, 0.5],
                  "sat": [0.1, 0.2, 0.3], "height": [0.3, 0.45, 0.6], "weight": [0.3, 0.5, 0.7]}


def student_builder() -> NetworkBuilder:
    """The bundled student network, written with the builder in three different table styles."""
    b = NetworkBuilder("student")
    for v, st in STUDENT_STATES.items():
        b.attribute(v, st, kind="share")
    b.edges([("gender", "income"), ("income", "sat"), ("gender", "height"),
             ("gender", "weight"), ("height", "weight")])
    b.table("gender", {0.4: 0.3, 0.5: 0.4, "0.6": 0.3})
    b.table("income", {0.4: [0.40, 0.35, 0.25], 0.5: [0.35, 0.35, 0.30],
                       0.6: [0.30, 0.35, 0.35]})
    b.table("sat", {"0.2": {"0.1": 0.6, "0.2": 0.3, "0.3": 0.1},
                    0.35: [0.3, 0.45, 0.25], 0.5: [0.1, 0.3, 0.6]})
    b.table("height", {(0.4,): [0.25, 0.35, 0.4], (0.5,): [0.35, 0.35, 0.3],
                       (0.6,): [0.45, 0.35, 0.2]})
    # Nested by parent (gender, then height), one gender written with tuple keys instead.
    b.table("weight", {0.4: {0.3: [.4, .35, .25], 0.45: [.3, .4, .3], 0.6: [.2, .4, .4]},
                       0.5: {0.3: [.45, .35, .2], 0.45: [.35, .4, .25], 0.6: [.25, .4, .35]},
                       (0.6, 0.3): [.5, .3, .2], (0.6, 0.45): [.4, .35, .25],
                       (0.6, 0.6): [.3, .4, .3]})
    return b


def test_builder_reproduces_the_bundled_student_network_exactly():
    theta = student_builder().to_theta()
    ref = qp.load_model("student")
    assert theta.fingerprint() == ref.fingerprint()
    assert theta.provenance["source"] == "declared"
    from quiltpriv.model.provenance import provenance_dict

    assert provenance_dict(theta)["parameters"]["income"] == {
        "kind": "share", "states": ["0.2", "0.35", "0.5"]}


def test_builder_pgmpy_round_trip_keeps_state_names_and_columns():
    b = student_builder()
    net = b.to_pgmpy()
    assert net.check_model()
    cpd = net.get_cpds("weight")
    assert cpd.state_names["weight"] == ["0.3", "0.5", "0.7"]
    # pgmpy's column order (gender major, height minor) must hold the row given for
    # gender = 0.5, height = 0.6.
    g, h = cpd.variables[1:]
    values = cpd.get_values()
    col = (cpd.state_names[g].index("0.5") * 3 + cpd.state_names[h].index("0.6")
           if (g, h) == ("gender", "height") else
           cpd.state_names[h].index("0.5") * 3 + cpd.state_names[g].index("0.6"))
    assert np.allclose(values[:, col], [.25, .4, .35])
    # Back to Theta through pgmpy, and through the builder's own arrays: same numbers.
    assert qp.theta_from_pgmpy(net).fingerprint() == b.to_theta().fingerprint()
    parents, tables = b.arrays()
    assert parents["weight"] == ("gender", "height")
    assert tables["weight"][:, 1, 2].tolist() == [.25, .4, .35]


def test_given_fixes_the_key_order():
    b = NetworkBuilder("two-parents")
    b.attribute("x", [0.2, 0.8]).attribute("y", [0.1, 0.9]).attribute("z", [0.3, 0.7])
    b.edge("x", "z").edge("y", "z")
    b.table("x", [0.5, 0.5]).table("y", [0.5, 0.5])
    b.table("z", {(0.1, 0.2): [1, 0], (0.1, 0.8): [0.5, 0.5],
                  (0.9, 0.2): [0.25, 0.75], (0.9, 0.8): [0, 1]}, given=["y", "x"])
    parents, tables = b.arrays()
    assert parents["z"] == ("y", "x")
    assert tables["z"][:, 1, 0].tolist() == [0.25, 0.75]  # y = 0.9, x = 0.2
    theta = b.to_theta()
    assert theta.parents["z"] == ("y", "x")


def test_state_names_are_shortest_round_trips():
    assert [state_name(x) for x in (0.35, 3.0, 1e-5, 0, -0.0, "low")] == [
        "0.35", "3", "1e-05", "0", "0", "low"]
    assert float(state_name(0.1 + 0.2)) == 0.1 + 0.2


def _two() -> NetworkBuilder:
    b = NetworkBuilder("t")
    b.attribute("income", [0.2, 0.5], kind="share").attribute("sat", [0.1, 0.3, 0.5])
    b.edge("income", "sat")
    b.table("income", [0.5, 0.5])
    return b


@pytest.mark.parametrize("table, message", [
    ({0.2: [0.5, 0.3, 0.2]}, r"table of 'sat': no row for parent state\(s\) income = 0.5"),
    ({0.2: [0.5, 0.3, 0.2], 0.5: [0.5, 0.3, 0.2], 0.9: [1, 0, 0]},
     r"table of 'sat': parent 'income': 0.9 is not a state of 'income'"),
    ({0.2: [0.5, 0.5], 0.5: [0.5, 0.3, 0.2]},
     r"table of 'sat' given income = 0.2: 2 probabilities for the 3 states of 'sat'"),
    ({0.2: [0.5, 0.3, 0.3], 0.5: [0.5, 0.3, 0.2]},
     r"table of 'sat' given income = 0.2: the probabilities sum to 1.1, not 1"),
    ({0.2: [0.5, 0.3, 0.2], 0.5: [1.2, -0.2, 0.0]},
     r"table of 'sat' given income = 0.5: negative probability \(0.3: -0.2\)"),
    ({0.2: {0.1: 0.5, 0.3: 0.5}, 0.5: [0.5, 0.3, 0.2]},
     r"table of 'sat' given income = 0.2: no probability for state\(s\) 0.5 of 'sat'"),
    ({0.2: [0.5, 0.3, "x"], 0.5: [0.5, 0.3, 0.2]},
     r"table of 'sat' given income = 0.2: 'x' is not a probability"),
    ({0.2: [0.5, 0.3, float("nan")], 0.5: [0.5, 0.3, 0.2]}, r"not a finite probability"),
    ([0.5, 0.3, 0.2], r"'sat' has parent\(s\) \['income'\], so give a mapping"),
    ({(0.2, 0.1): [0.5, 0.3, 0.2]}, r"key \(0.2, 0.1\) names 2 parent state\(s\), expected 1"),
])
def test_bad_tables_name_the_attribute_and_the_parent_state(table, message):
    b = _two().table("sat", table)
    with pytest.raises(ModelError, match=message):
        b.to_theta()


def test_bad_declarations_are_named():
    b = NetworkBuilder("t").attribute("income", [0.2, 0.5], kind="share")
    with pytest.raises(ModelError, match="attribute 'income' is declared twice"):
        b.attribute("income", [0.1, 0.2])
    with pytest.raises(ModelError, match=r"attribute 'x' is a share, but state\(s\) 1.5"):
        b.attribute("x", [0.5, 1.5], kind="share")
    with pytest.raises(ModelError, match=r"state\(s\) 0.5 listed twice"):
        b.attribute("y", [0.5, 0.50, 0.7])
    with pytest.raises(ModelError, match="kind must be one of"):
        b.attribute("z", [0.5, 0.7], kind="proportion")
    with pytest.raises(ModelError, match="edge 'income' -> 'sat': 'sat' is not a declared "
                                         "attribute"):
        b.edge("income", "sat")
    b.attribute("sat", [0.1, 0.3]).edge("income", "sat")
    with pytest.raises(ModelError, match="closes a cycle"):
        b.edge("sat", "income")
    with pytest.raises(ModelError, match="declared twice"):
        b.edge("income", "sat")
    b.table("income", [0.5, 0.5])
    with pytest.raises(ModelError, match=r"no table for attribute\(s\) 'sat'"):
        b.to_theta()
    b.table("sat", {0.2: [1, 0], 0.5: [0, 1]}, given="income")
    b.to_theta()
    c = NetworkBuilder("t").attribute("a", [0.1, 0.2]).attribute("b", [0.1, 0.2])
    c.table("a", [1, 0]).table("b", {0.1: [1, 0], 0.2: [0, 1]}, given="a")
    with pytest.raises(ModelError, match=r"table of 'b': given=\['a'\] but its parents"):
        c.to_theta()


def test_non_numeric_states_warn_and_the_plan_says_so():
    b = NetworkBuilder("asia-like")
    b.attribute("smoke", ["yes", "no"]).attribute("lung", ["yes", "no"])
    b.edge("smoke", "lung").table("smoke", [0.5, 0.5])
    b.table("lung", {"yes": [0.1, 0.9], "no": [0.01, 0.99]})
    with pytest.warns(ParameterStatesWarning, match="states that are not numbers"):
        theta = b.to_theta()
    p = qp.plan(theta, qp.CountQuery(["lung"], records=10), "smoke", 1.0)
    assert any("record-level network" in n for n in p.notes)


def test_numeric_networks_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParameterStatesWarning)
        student_builder().to_theta()
        qp.load_model("student")


def test_load_model_warns_on_a_record_level_bif(tmp_path):
    path = tmp_path / "asia.bif"
    path.write_text(
        "network asia {\n}\n"
        "variable smoke {\n  type discrete [ 2 ] { yes, no };\n}\n"
        "variable lung {\n  type discrete [ 2 ] { yes, no };\n}\n"
        "probability ( smoke ) {\n  table 0.5, 0.5 ;\n}\n"
        "probability ( lung | smoke ) {\n  ( yes ) 0.1, 0.9;\n  ( no ) 0.01, 0.99;\n}\n")
    with pytest.warns(ParameterStatesWarning, match="asia.bif: .*'smoke' \\('yes', 'no'\\)"):
        theta = qp.load_model(path)
    assert theta.nodes == ("smoke", "lung")


def test_provenance_survives_json_and_reaches_the_plan(tmp_path):
    import json

    theta = student_builder().to_theta()
    path = tmp_path / "student.json"
    path.write_text(json.dumps(qp.theta_to_dict(theta)))
    back = qp.load_model(path)
    assert back.nodes == theta.nodes and back.parents == theta.parents
    for v in theta.nodes:  # equal up to the renormalisation of a rounded column sum
        assert np.allclose(back.members[0][v].table, theta.members[0][v].table, atol=1e-15)
    from quiltpriv.model.provenance import provenance_dict

    assert provenance_dict(back) == provenance_dict(theta)
    p = qp.plan(back, qp.CountQuery(["height"], records=100), "income", 1.0)
    d = p.to_dict()
    assert d["provenance"]["source"] == "declared"
    assert qp.Plan.from_dict(json.loads(p.to_json())).to_dict() == d
    bad = qp.theta_to_dict(theta)
    bad["provenance"] = [1, 2]
    path.write_text(json.dumps(bad))
    with pytest.raises(ModelError, match="'provenance' must be an object"):
        qp.load_model(path)


def test_declared_shares_outside_the_unit_interval_warn_at_load(tmp_path):
    import json

    doc = qp.theta_to_dict(student_builder().to_theta())
    doc["nodes"]["sat"]["states"] = ["10", "20", "30"]  # percentages, not shares
    path = tmp_path / "percent.json"
    path.write_text(json.dumps(doc))
    with pytest.warns(ParameterStatesWarning, match=r"'sat' are declared shares but some lie "
                                                    r"outside \[0, 1\] \(10, 20, 30\)"):
        qp.load_model(path)
    doc["provenance"]["parameters"]["sat"]["kind"] = "mean"  # declared means: no warning
    path.write_text(json.dumps(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParameterStatesWarning)
        qp.load_model(path)
