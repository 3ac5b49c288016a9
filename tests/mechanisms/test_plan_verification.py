"""Saved plans and queries are checked, not trusted.

A plan read from JSON is verified against the model and the query before anything uses it;
edits of a saved plan that would make a release carry less noise than its claims need are
refused. The random-edit tests judge every verdict with an independent reference (networkx
d-separation, [ZOC22, Def. 8] on the full joint, [ZOC22, Alg. 3]'s scale; tests/reference.py).
"""

from __future__ import annotations

import copy
import json
import math
import pickle
from fractions import Fraction
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import reference as ref

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.mechanisms.apmqm import PLAN_FORMAT, query_fingerprint
from quiltpriv.mechanisms.apmqm import quilt_scale as _scale
from quiltpriv.mechanisms.verification import (
    INFLUENCE_SLACK,
    plan_from_json,
    query_from_dict,
)
from quiltpriv.reporting.report import audit_report

ROOT = Path(__file__).resolve().parents[2]
STUDENT_BIF = ROOT / "models" / "student.bif"


@pytest.fixture(scope="module")
def count_plan(student):
    query = qp.CountQuery(["height", "sat"], 1000, where="height > 66 and sat > 1300")
    return query, qp.plan(student, query, ["income", "gender"], 1.0)


def _frame(n: int = 20, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"height": rng.integers(60, 75, n), "sat": rng.integers(900, 1600, n),
                         "income": rng.integers(0, 2, n), "gender": rng.integers(0, 2, n),
                         "weight": rng.integers(100, 200, n)})


def _edited(p: qp.Plan, edit) -> qp.Plan:
    d = json.loads(p.to_json())
    edit(d)
    return qp.Plan.from_dict(d)


# -- the examples --------------------------------------------------------------------


def test_plan_made_here_is_verified_and_a_parsed_one_is_not(student, count_plan):
    query, p = count_plan
    assert p.verified
    back = qp.Plan.from_json(p.to_json())
    assert back == p and not back.verified
    assert "NOT VERIFIED" in back.explain() and "NOT VERIFIED" in back._repr_html_()
    assert "NOT VERIFIED" not in p.explain() and "NOT VERIFIED" not in p._repr_html_()
    assert "NOT VERIFIED" not in qp.verify_plan(back, student, query).explain()
    # pickles and copies are saved plans too
    assert not pickle.loads(pickle.dumps(p)).verified
    assert not copy.deepcopy(p).verified
    with pytest.raises(qp.PlanError, match="not verified"):
        qp.release(back, query, _frame())


def test_scale_edit_1000_to_1_is_refused_everywhere(student, count_plan):
    query, p = count_plan
    assert p.scale == 1000.0 and p["income"].scale == 1000.0

    def edit(d):
        d["scale"] = 1.0
        d["sensitive"]["income"]["scale"] = 1.0

    bad = _edited(p, edit)  # well-formed, so it parses; it does not verify
    with pytest.raises(qp.PlanError, match="'income': it states scale 1, below"):
        qp.verify_plan(bad, student, query)
    with pytest.raises(qp.PlanError, match="not verified"):
        qp.release(bad, query, _frame())
    with pytest.raises(qp.PlanError, match="states scale 1, below"):
        qp.release(bad, query, _frame(), theta=student)
    with pytest.raises(qp.PlanError, match="states scale 1, below"):
        audit_report(student, query, bad)
    v = qp.check_plan(bad, student, query)
    assert not v.ok and v.kind == "plan" and not v.plan.verified
    (income,) = [c for c in v.attributes if c.sensitive == "income"]
    assert income.scale == 1000.0 and income.stated_scale == 1.0 and not income.ok


def test_scale_at_the_tie_is_refused_one_ulp_below_and_accepted_equal(student, count_plan):
    """No tolerance below the need: a trivial quilt's scale Delta / eps = 1/3 (a mean over
    [0, 1] at eps 3) is stored as the least float above 1/3; one ulp or 1e-13 below is refused
    (1e-13 to 5e-13 below used to be accepted as a tie), equal is accepted."""
    mean = qp.MeanQuery("height", lower=0, upper=1)
    cases = [(mean, qp.plan(student, mean, ["height"], 3.0), "height"),
             (count_plan[0], count_plan[1], "income")]
    for query, p, node in cases:
        need = p[node].scale
        assert need == _scale(p[node].sensitivity, p[node].influence, p.epsilon)
        for low in (math.nextafter(need, 0.0), need * (1 - 1e-13), need * (1 - 5e-13)):
            assert low < need

            def edit(d, low=low, node=node):
                d["sensitive"][node]["scale"] = low
                d["scale"] = max(s["scale"] for s in d["sensitive"].values())

            bad = _edited(p, edit)
            with pytest.raises(qp.PlanError, match=f"'{node}': it states scale .*, below"):
                qp.verify_plan(bad, student, query)
            assert not qp.check_plan(bad, student, query).ok
        same = _edited(p, lambda d: None)
        assert qp.verify_plan(same, student, query) == p
    assert Fraction(cases[0][1].scale) >= Fraction(1, 3) > Fraction(math.nextafter(
        cases[0][1].scale, 0.0))


def test_epsilon_edit_1_to_100_is_refused(student, count_plan):
    query, p = count_plan

    def edit(d):
        d["epsilon"] = 100.0

    bad = _edited(p, edit)
    # The noise did not change, so the plan is not unsafe for epsilon 100, but it claims to
    # be the least noise for epsilon 100, which it is not.
    with pytest.raises(qp.PlanError, match="claims the least scale"):
        qp.verify_plan(bad, student, query)
    with pytest.raises(qp.PlanError, match="claims the least scale"):
        qp.release(bad, query, _frame(), theta=student)
    # With the privacy required stated, it is refused for what it is.
    with pytest.raises(qp.PlanError, match="epsilon = 100, weaker than the required 1"):
        qp.verify_plan(bad, student, query, epsilon=1.0)

    def consistent(d):  # epsilon 100 with the noise that then suffices and no false claim
        d["epsilon"] = 100.0
        for s in d["sensitive"].values():
            s["scale"] = _scale(s["sensitivity"], s["influence"], 100.0)
            s["optimal"] = False
        d["scale"] = max(s["scale"] for s in d["sensitive"].values())
        d["optimal"] = False

    honest = _edited(p, consistent)
    assert qp.verify_plan(honest, student, query).epsilon == 100.0  # true for epsilon 100
    with pytest.raises(qp.PlanError, match="weaker than the required 1"):
        qp.verify_plan(honest, student, query, epsilon=1.0)


def test_dropping_a_sensitive_attribute_is_caught_when_the_set_is_given(student, count_plan):
    query, p = count_plan

    def edit(d):
        del d["sensitive"]["income"]
        d["scale"] = d["sensitive"]["gender"]["scale"]

    bad = _edited(p, edit)
    assert bad.scale == 0.0
    with pytest.raises(qp.PlanError, match=r"does not protect \{income\}"):
        qp.verify_plan(bad, student, query, sensitive=["income", "gender"])
    # A plan that protects more than required passes that check.
    assert qp.verify_plan(qp.Plan.from_json(p.to_json()), student, query,
                          sensitive="income", epsilon=2.0).verified


def test_custom_query_with_a_larger_sensitivity_is_refused(student):
    def small(b):
        return 1.0 if b else 0.0

    def large(b):
        return 50.0 if b else 0.0

    q1 = qp.CustomQuery(["sat"], small, function=lambda f: float(len(f)), name="f")
    q2 = qp.CustomQuery(["sat"], large, function=lambda f: float(len(f)), name="f")
    p = qp.plan(student, q1, "income", 1.0)
    assert p.scale == 1.0
    assert q1.to_dict()["sensitivity"] == [[[], 0.0], [["sat"], 1.0]]
    with pytest.raises(qp.QueryError, match="not the one the plan was made for"):
        qp.release(p, q2, _frame())
    with pytest.raises(qp.QueryError, match="another query"):
        qp.verify_plan(qp.Plan.from_json(p.to_json()), student, q2)
    with pytest.raises(qp.QueryError, match="another query"):
        audit_report(student, q2, p)
    # The same definition in another object is the same query.
    q3 = qp.CustomQuery(["sat"], lambda b: 1.0 if b else 0.0, function=lambda f: 3.0, name="f")
    assert qp.release(p, q3, _frame(), seed=1).scale >= 1.0


def test_fingerprint_covers_sensitivities_beyond_the_recorded_table():
    # Over 8 attributes the table is not in to_dict(); the fingerprint still covers every
    # sensitivity a plan used, Delta_A included.
    attrs = [f"a{k}" for k in range(9)]

    def delta(top):
        return lambda b: (top if len(b) == 9 else float(len(b)))

    q1, q2 = qp.CustomQuery(attrs, delta(9.0)), qp.CustomQuery(attrs, delta(90.0))
    assert q1.to_dict() == q2.to_dict() and q1.to_dict()["sensitivity"] is None
    sets = [attrs[:3], attrs[5:]]
    assert query_fingerprint(q1, sets) == query_fingerprint(qp.CustomQuery(attrs, delta(9.0)),
                                                            sets)
    assert query_fingerprint(q1, sets) != query_fingerprint(q2, sets)  # Delta_A differs
    q3 = qp.CustomQuery(attrs, lambda b: float(len(b)) + (1.0 if "a6" in b else 0.0))
    assert query_fingerprint(q3, sets) != query_fingerprint(
        qp.CustomQuery(attrs, lambda b: float(len(b)) + (1.0 if "a6" in b else 0.0)
                       + (1.0 if "a1" in b else 0.0)), sets)
    # ... and only those: a difference on an unused subset does not change it.
    q4 = qp.CustomQuery(attrs, lambda b: float(len(b)) + (0.5 if b == frozenset({"a4"})
                                                           else 0.0))
    assert query_fingerprint(q4, sets) == query_fingerprint(
        qp.CustomQuery(attrs, lambda b: float(len(b))), sets)


def test_release_refuses_a_query_differing_only_in_delta_a():
    # A plan whose quilt keeps every query attribute out of N uses no Delta_{A&N} > 0; the
    # definitions agree (no table over 8 attributes); only Delta_A, in the fingerprint, differs.
    net = ref.random_network(5, n_nodes=10, max_card=2, theta_size=1)
    theta = net.to_theta()
    attrs, (node,) = list(theta.nodes[:9]), theta.nodes[9:]

    def delta(top):
        return lambda b: (top if len(b) == 9 else float(len(b)))

    q1, q2 = qp.CustomQuery(attrs, delta(9.0)), qp.CustomQuery(attrs, delta(90.0))
    p = qp.plan(theta, q1, node, 1.0)
    assert q1.to_dict() == q2.to_dict() == p.query
    assert all(q2.sensitivity(set(attrs) & set(sp.nearby)) == sp.sensitivity
               for sp in p.sensitive)
    with pytest.raises(qp.QueryError, match="fingerprint"):
        qp.release(p, q2, pd.DataFrame({a: [0] for a in attrs}))
    with pytest.raises(qp.QueryError, match="fingerprint does not match"):
        qp.verify_plan(qp.Plan.from_json(p.to_json()), theta, q2)


def test_fingerprint_changes_with_every_field_of_a_query():
    base = qp.CountQuery(["x", "y"], 10, where="x > 1 and y > 0")
    sets = [["x"]]
    fp = query_fingerprint(base, sets)
    assert fp == query_fingerprint(qp.CountQuery(["x", "y"], 10, where="x > 1 and y > 0"), sets)
    for other in (qp.CountQuery(["x", "y"], 11, where="x > 1 and y > 0"),
                  qp.CountQuery(["x", "y"], 10, where="x > 2 and y > 0"),
                  qp.CountQuery(["y", "x"], 10, where="x > 1 and y > 0"),
                  qp.CountQuery(["x", "y"], 10, where="x > 1 and y > 0",
                                domain={"x": [0, 1, 2], "y": [0, 1]}),
                  qp.HistogramQuery(["x", "y"], 10, categories={"x": [0, 1], "y": [0, 1]})):
        assert query_fingerprint(other, sets) != fp, other
    lin = qp.LinearQuery({"x": 1.0}, {"x": (0.0, 1.0)})
    assert query_fingerprint(lin, []) != query_fingerprint(
        qp.LinearQuery({"x": 1.0}, {"x": (0.0, 2.0)}), [])


def test_custom_query_function_sees_only_its_declared_columns():
    seen = {}

    def spy(frame):
        seen["columns"] = list(frame.columns)
        seen["index"] = list(frame.index)
        frame["height"] = -1  # must not reach the caller's frame
        return float(frame["height"].sum())

    q = qp.CustomQuery(["height"], lambda b: 1.0 if b else 0.0, function=spy)
    data = _frame(5).set_index("income")  # the index is a sensitive column here
    before = data.copy()
    assert q.evaluate(data) == -5.0
    assert seen == {"columns": ["height"], "index": [0, 1, 2, 3, 4]}
    pd.testing.assert_frame_equal(data, before)

    def snoop(frame):
        return float(frame["income"].sum())

    nosy = qp.CustomQuery(["height"], lambda b: 1.0 if b else 0.0, function=snoop)
    with pytest.raises(qp.QueryError, match="KeyError: 'income'"):
        nosy.evaluate(_frame())
    with pytest.raises(qp.QueryError, match="no column"):
        nosy.evaluate(_frame().drop(columns=["height"]))


def test_custom_query_sensitivity_is_fixed_when_built():
    calls = []

    def drifting(b):  # returns more on every call: only the first answer may count
        calls.append(b)
        return float(len(b)) * len(calls)

    with pytest.raises(qp.QueryError, match="not monotone"):
        qp.CustomQuery(["x", "y", "z"], lambda b: -len(b) + 3.0 if b else 0.0)
    q = qp.CustomQuery(["x", "y"], drifting)
    first = [q.sensitivity(b) for b in ([], ["x"], ["y"], ["x", "y"])]
    n_calls = len(calls)
    assert [q.sensitivity(b) for b in ([], ["x"], ["y"], ["x", "y"])] == first
    assert q.sensitivity(["x", "nope"]) == first[1]
    assert len(calls) == n_calls == 4  # every subset computed once, when the query was built


# -- round trip ----------------------------------------------------------------------------


def test_round_trip_plan_json_verify_release(student, count_plan):
    query, p = count_plan
    back = qp.Plan.from_json(p.to_json(indent=2))
    trusted = qp.verify_plan(back, student, query)
    assert trusted.verified and trusted == p and trusted.to_dict() == p.to_dict()
    data = _frame()
    r1 = qp.release(trusted, query, data, seed=7)
    r2 = qp.release(p, query, data, seed=7)
    r3 = qp.release(back, query, data, seed=7, theta=student)
    assert r1.value == r2.value == r3.value and r1.scale == r2.scale >= p.scale
    assert r3.plan.verified
    with pytest.raises(qp.ModelError, match="another model"):
        qp.release(p, query, data, theta=qp.load_model("student:theta"))
    report = audit_report(student, query, back)
    assert qp.Plan.from_dict(report.to_dict()["plan"]) == p


def test_round_trip_of_every_rebuildable_query_kind(student):
    queries = [qp.CountQuery(["height", "sat"], 50, where="height > 66 and sat > 1300"),
               qp.CountQuery(["height", "sat"], 50, where="height == 1 and sat == 1",
                             domain={"height": [0, 1], "sat": [0, 1]}),
               qp.SumQuery("weight", 30, lower=0.0, upper=1.0),
               qp.MeanQuery("weight", lower=-1.0, upper=2.5),
               qp.LinearQuery({"height": 1.0, "weight": -2.0},
                              {"height": (0.0, 1.0), "weight": (0.0, 1.0)}),
               qp.HistogramQuery(["sat"], 40, categories={"sat": [0, 1]})]
    for q in queries:
        back = query_from_dict(json.loads(json.dumps(q.to_dict())))
        assert back == q, q
        p = qp.plan(student, q, "income", 0.7)
        assert qp.verify_plan(qp.Plan.from_json(p.to_json()), student, back) == p
    with pytest.raises(qp.QueryError, match="custom query cannot be rebuilt"):
        query_from_dict(qp.CustomQuery(["x"], lambda b: 1.0 if b else 0.0).to_dict())
    with pytest.raises(qp.QueryError, match="cannot rebuild"):
        query_from_dict({"kind": "count", "attributes": ["x"], "records": 3, "extra": 1})


# -- strict parsing ------------------------------------------------------------------------


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("format"), "no 'format' field.*plan it again"),
    (lambda d: d.update(format="quiltpriv-plan/0"), "unknown format"),
    (lambda d: d.update(mechanism="MQM"), "mechanism must be 'APMQM'"),
    (lambda d: d.pop("query_fingerprint"), "has no 'query_fingerprint'"),
    (lambda d: d.update(extra=1), "unknown field"),
    (lambda d: d.update(epsilon="1"), "epsilon must be a number"),
    (lambda d: d.update(epsilon=0), "epsilon must be a number > 0"),
    (lambda d: d.update(epsilon=True), "epsilon must be a number"),
    (lambda d: d.update(scale=-1.0), "scale must be a number >= 0"),
    (lambda d: d.update(scale=1e400), "finite"),
    (lambda d: d.update(scale=10**400), "finite"),
    (lambda d: d.update(sensitive={"income": []}), "must be an object"),
    (lambda d: d.update(optimal=1), "optimal must be true or false"),
    (lambda d: d.update(sensitive={}), "non-empty object"),
    (lambda d: d.update(model="abc"), "SHA-256"),
    (lambda d: d.update(theta_size=0), "theta_size must be a whole number >= 1"),
    (lambda d: d.update(notes=[1]), "notes must be a list of strings"),
    (lambda d: d.update(query=[]), "query must be an object"),
    (lambda d: d["sensitive"]["income"].update(node="gender"), "node is 'gender'"),
    (lambda d: d["sensitive"]["income"].update(influence=-0.5), "influence must be"),
    (lambda d: d["sensitive"]["income"].update(quilt=["sat", "sat"]), "twice"),
    (lambda d: d["sensitive"]["income"].update(nearby="income"), "list of node names"),
    (lambda d: d["sensitive"]["income"].update(quilts_considered=0), "whole number >= 1"),
    (lambda d: d["sensitive"]["income"].update(influence_pair=[1]), "list of two values"),
    (lambda d: d["sensitive"]["income"].pop("scale"), "has no 'scale'"),
])
def test_malformed_plans_are_refused_with_the_field_named(count_plan, edit, message):
    _, p = count_plan
    d = json.loads(p.to_json())
    edit(d)
    with pytest.raises(qp.PlanError, match=message):
        qp.Plan.from_dict(d)


def test_json_text_is_parsed_strictly(count_plan):
    _, p = count_plan
    text = p.to_json()
    with pytest.raises(qp.PlanError, match="NaN"):
        plan_from_json(text.replace('"scale": 1000.0', '"scale": NaN', 1))
    with pytest.raises(qp.PlanError, match="twice"):
        plan_from_json(text.replace('"scale": 1000.0', '"scale": 1000.0, "scale": 1.0', 1))
    with pytest.raises(qp.PlanError, match="not valid JSON"):
        plan_from_json(text[:-5])
    with pytest.raises(qp.PlanError, match="release record"):
        plan_from_json(json.dumps({"value": 1.0, "plan": json.loads(text)}))
    with pytest.raises(qp.PlanError, match="cannot read"):
        plan_from_json(b"\xff\xfe\x00")
    assert plan_from_json(text.encode()) == p


def test_verification_of_model_and_structure(student, count_plan):
    query, p = count_plan
    other = qp.load_model("example3")
    with pytest.raises(qp.ModelError, match="another model"):
        qp.verify_plan(qp.Plan.from_json(p.to_json()), other, query)
    with pytest.raises(qp.ModelError, match="another model"):
        qp.verify_plan(qp.Plan.from_json(p.to_json()), qp.load_model("student:theta"), query)

    def ghost(d):
        d["sensitive"]["gender"]["quilt"].append("ghost")

    with pytest.raises(qp.PlanError, match=r"names \{ghost\}, not in the network"):
        qp.verify_plan(_edited(p, ghost), student, query)

    def fake_pair(d):
        d["sensitive"]["gender"]["influence_pair"] = ["0.4", "9"]

    with pytest.raises(qp.PlanError, match="influence_pair names '9'"):
        qp.verify_plan(_edited(p, fake_pair), student, query)

    def overall(d):
        d["scale"] = 2000.0

    with pytest.raises(qp.PlanError, match="largest per-attribute scale is 1000"):
        qp.verify_plan(_edited(p, overall), student, query)

    def flag(d):
        d["optimal"] = False

    with pytest.raises(qp.PlanError, match="attributes say true"):
        qp.verify_plan(_edited(p, flag), student, query)
    hand = qp.Plan(p.epsilon, 0.0, True, p.sensitive, p.query, p.model_fingerprint, p.theta_size,
                   p.query_fingerprint)
    assert not hand.verified
    with pytest.raises(qp.PlanError, match="not verified"):
        qp.release(hand, query, _frame())


# -- random edits on random networks -------------------------------------------------------


def _sound(net, joints, delta, attrs, d, epsilon=None, sensitive=()):
    """Reference: does every claim a release relies on hold? (optimality not included)"""
    if epsilon is not None and d["epsilon"] > epsilon:
        return False
    if any(s not in d["sensitive"] for s in sensitive):
        return False
    g, eps, every = net.graph(), d["epsilon"], set(net.nodes)
    for node, s in d["sensitive"].items():
        q, n, r = set(s["quilt"]), set(s["nearby"]), set(s["remote"])
        if node not in n or (q & n) or (q & r) or (n & r) or (q | n | r) != every:
            return False
        if r and not nx.is_d_separator(g, {node}, r, q):
            return False
        if s["influence"] < ref.reference_influence(net, node, q, joints) * (1 - 1e-9):
            return False
        need = ref.algorithm3_scale(delta(attrs & n), s["influence"], eps)  # exact, rounded up
        if s["sensitivity"] < delta(attrs & n) or s["scale"] < need:
            return False
    return d["scale"] >= max(s["scale"] for s in d["sensitive"].values())


def _consistent(d):
    """Restate every scale from its sensitivity and influence, as an attacker would."""
    for s in d["sensitive"].values():
        s["scale"] = _scale(s["sensitivity"], s["influence"], d["epsilon"])
    d["scale"] = max(s["scale"] for s in d["sensitive"].values())


def _random_case(seed):
    rng = np.random.default_rng(seed)
    net = ref.random_network(seed, min_nodes=3, max_nodes=6, max_card=3)
    theta = net.to_theta()
    nodes = list(net.nodes)
    attrs = {str(a) for a in rng.choice(nodes, size=int(rng.integers(1, len(nodes) + 1)),
                                        replace=False)}
    if rng.random() < 0.5:
        records = int(rng.integers(1, 100))
        query = qp.CountQuery(sorted(attrs), records,
                              where=" and ".join(f"{a} >= 0" for a in sorted(attrs)))
        delta = ref.count_sensitivity(attrs, records)
    else:
        weights = {a: float(rng.choice([-2.0, 0.5, 1.0, 3.0])) for a in sorted(attrs)}
        bounds = {a: (0.0, float(rng.integers(1, 5))) for a in sorted(attrs)}
        query = qp.LinearQuery(weights, bounds)
        delta = ref.linear_sensitivity(weights, bounds)
    sens = sorted(str(v) for v in rng.choice(nodes, size=int(rng.integers(1, min(3, len(nodes))
                                                                          + 1)), replace=False))
    eps = float(rng.choice([0.3, 1.0, 2.5]))
    p = qp.plan(theta, query, sens, eps)
    joints = [ref.full_joint(net, k) for k in range(len(net.members))]
    return rng, net, theta, query, delta, attrs, sens, p, joints


def _edits(rng, net, joints, d):
    """(class, edited plan dict, must be refused, required epsilon) for one saved plan."""
    out = []
    for node, s in d["sensitive"].items():
        if s["scale"] > 0:
            e = copy.deepcopy(d)
            e["sensitive"][node]["scale"] *= float(rng.uniform(0.01, 0.99))
            e["scale"] = max(x["scale"] for x in e["sensitive"].values())
            out.append(("lower scale", e, True, None))
            if s["scale"] == _scale(s["sensitivity"], s["influence"], d["epsilon"]):
                # at the tie: one ulp, or 1e-13 to 5e-13 relative, below the exact need
                for low in (math.nextafter(s["scale"], 0.0),
                            s["scale"] * (1 - float(rng.uniform(1e-13, 5e-13)))):
                    e = copy.deepcopy(d)
                    e["sensitive"][node]["scale"] = low
                    e["scale"] = max(x["scale"] for x in e["sensitive"].values())
                    out.append(("scale just below the need", e, True, None))
        exact = ref.reference_influence(net, node, s["quilt"], joints)
        if 0 < exact < math.inf:
            e = copy.deepcopy(d)
            e["sensitive"][node]["influence"] = exact * float(rng.uniform(0.05, 0.99))
            _consistent(e)
            out.append(("lower influence", e, True, None))
        movable = [v for v in s["nearby"] if v != node]
        if movable and s["quilt"]:  # N of a non-trivial quilt is all d-connected to i
            v = str(rng.choice(movable))
            e = copy.deepcopy(d)
            e["sensitive"][node]["nearby"].remove(v)
            e["sensitive"][node]["remote"].append(v)
            _consistent(e)
            out.append(("nearby node moved to remote", e, True, None))
        if movable:
            e = copy.deepcopy(d)
            e["sensitive"][node]["nearby"].remove(str(rng.choice(movable)))
            out.append(("node dropped from nearby", e, True, None))
        if s["quilt"]:
            v = str(rng.choice(s["quilt"]))
            e = copy.deepcopy(d)
            e["sensitive"][node]["quilt"].remove(v)
            e["sensitive"][node]["nearby"].append(v)
            _consistent(e)
            out.append(("quilt node moved to nearby", e, False, None))
        if s["remote"]:
            v = str(rng.choice(s["remote"]))
            e = copy.deepcopy(d)
            e["sensitive"][node]["remote"].remove(v)
            e["sensitive"][node]["nearby"].append(v)
            e["sensitive"][node]["sensitivity"] = float("nan")  # filled by the caller
            out.append(("remote node moved to nearby", e, False, None))
    e = copy.deepcopy(d)
    e["epsilon"] *= float(rng.uniform(1.5, 100.0))
    _consistent(e)
    out.append(("higher epsilon", e, True, d["epsilon"]))
    return out


def _other_quilt(rng, net, theta, query, attrs, d, node):
    """``d`` with ``node``'s quilt replaced by a random non-empty one, every claim true."""
    others = [v for v in net.nodes if v != node]
    q = [str(v) for v in rng.choice(others, size=int(rng.integers(1, len(others) + 1)),
                                    replace=False)]
    r = ref.remote_set(net.graph(), node, q)
    n = set(net.nodes) - set(q) - r
    e = copy.deepcopy(d)
    s = e["sensitive"][node]
    s.update(quilt=q, nearby=sorted(n), remote=sorted(r), optimal=False,
             influence=qp.max_influence(theta, node, q).value,
             sensitivity=query.sensitivity(attrs & n), influence_pair=None,
             influence_member=None)
    e["optimal"] = False
    # The fingerprint covers Delta_{A&N} for every N: an honest editor restates it too.
    e["query_fingerprint"] = query_fingerprint(query, [x["nearby"] for x in
                                                       e["sensitive"].values()])
    _consistent(e)
    return e


@pytest.mark.parametrize("seed", range(40))
def test_random_edits_are_refused_unless_every_claim_still_holds(seed):
    rng, net, theta, query, delta, attrs, sens, p, joints = _random_case(seed)
    d = json.loads(p.to_json())
    assert _sound(net, joints, delta, attrs, d)
    assert qp.verify_plan(qp.Plan.from_dict(d), theta, query) == p
    for kind, e, must_refuse, required in _edits(rng, net, joints, d):
        for s in e["sensitive"].values():
            if math.isnan(s["sensitivity"]):  # the query's own Delta for the new N
                s["sensitivity"] = query.sensitivity(attrs & set(s["nearby"]))
                _consistent(e)
        sound = _sound(net, joints, delta, attrs, e, epsilon=required)
        v = qp.check_plan(qp.Plan.from_dict(e), theta, query, epsilon=required)
        if must_refuse:
            assert not sound, (seed, kind)  # the edit really is unsafe
        # never accepted when a claim fails (the reference decides)
        assert sound or not v.ok, (seed, kind, e)
        if must_refuse:
            assert not v.ok and v.failure, (seed, kind)


@pytest.mark.parametrize("seed", range(40))
def test_any_true_quilt_verifies_and_its_unsafe_edits_do_not(seed):
    """Random quilts other than the planner's: true claims verify, false ones are refused."""
    rng, net, theta, query, delta, attrs, sens, p, joints = _random_case(seed)
    d = json.loads(p.to_json())
    node = str(rng.choice(sens))
    e = _other_quilt(rng, net, theta, query, attrs, d, node)
    s = e["sensitive"][node]
    if math.isinf(s["scale"]):
        # influence >= eps: no scale makes this quilt private; a finite one is a false claim
        # (and an infinite influence has no JSON form: a finite one is a false claim too)
        s["influence"] = min(s["influence"], 1e6)
        s["scale"] = 1e6
        e["scale"] = max(x["scale"] for x in e["sensitive"].values())
        assert not _sound(net, joints, delta, attrs, e)
        v = qp.check_plan(qp.Plan.from_dict(e), theta, query)
        assert not v.ok
        assert "not below epsilon" in v.failure or "below the recomputed inf" in v.failure
        return
    assert _sound(net, joints, delta, attrs, e)
    v = qp.check_plan(qp.Plan.from_dict(e), theta, query)
    assert v.ok, v.failure
    exact = ref.reference_influence(net, node, s["quilt"], joints)
    if 0 < exact < math.inf:
        low = copy.deepcopy(e)
        low["sensitive"][node]["influence"] = exact * float(rng.uniform(0.05, 0.99))
        _consistent(low)
        assert not _sound(net, joints, delta, attrs, low)
        assert not qp.check_plan(qp.Plan.from_dict(low), theta, query).ok
    movable = [v for v in s["nearby"] if v != node]
    if movable:
        moved = copy.deepcopy(e)
        v = str(rng.choice(movable))
        moved["sensitive"][node]["nearby"].remove(v)
        moved["sensitive"][node]["remote"].append(v)
        moved["sensitive"][node]["sensitivity"] = query.sensitivity(
            attrs & set(moved["sensitive"][node]["nearby"]))
        _consistent(moved)
        assert not _sound(net, joints, delta, attrs, moved)
        check = qp.check_plan(qp.Plan.from_dict(moved), theta, query)
        assert not check.ok and "does not d-separate" in check.failure


@pytest.mark.parametrize("seed", range(20))
def test_more_noise_than_needed_is_accepted_without_a_claim_of_optimality(seed):
    """Documented rule: a larger stated scale verifies, but not with 'optimal': true."""
    rng, net, theta, query, delta, attrs, sens, p, joints = _random_case(seed)
    node = str(rng.choice(sens))
    d = json.loads(p.to_json())
    s = d["sensitive"][node]
    s["scale"] = s["scale"] * float(rng.uniform(1.5, 4.0)) if s["scale"] > 0 else 1.0
    d["scale"] = max(x["scale"] for x in d["sensitive"].values())
    claims = qp.check_plan(qp.Plan.from_dict(d), theta, query)
    assert not claims.ok and "claims the least scale" in claims.failure
    s["optimal"] = False
    d["optimal"] = False
    v = qp.check_plan(qp.Plan.from_dict(d), theta, query)
    assert v.ok, v.failure
    assert v.plan.verified and v.plan.scale == d["scale"] >= p.scale
    released = qp.release(v.plan, query, pd.DataFrame({a: [0.0] for a in attrs}), seed=1)
    assert released.scale >= v.plan.scale


def test_influence_slack_stays_inside_the_planners_rounding(student):
    # An accepted influence is at least recomputed - slack, and the recomputed value carries
    # the planner's upward rounding: the slack must be far smaller than that rounding.
    from quiltpriv.inference.influence import ROUNDING_MARGIN

    assert 0 < INFLUENCE_SLACK <= ROUNDING_MARGIN / 10
    query = qp.CountQuery(["sat"], 10)
    p = qp.plan(student, query, "gender", 1.0)
    e = p["gender"].influence
    assert e > 0

    def just_below(d):
        d["sensitive"]["gender"]["influence"] = e - 10 * INFLUENCE_SLACK * max(1.0, e)
        _consistent(d)

    with pytest.raises(qp.PlanError, match="below the recomputed"):
        qp.verify_plan(_edited(p, just_below), student, query)


# -- command line --------------------------------------------------------------------------


def _write_plan(tmp_path, capsys, *extra):
    path = tmp_path / "plan.json"
    assert main(["plan", "student", "--sensitive", "income,gender", "--attributes",
                 "height,sat", "--records", "1000", "--epsilon", "1", "--json", "-o",
                 str(path), *extra]) == 0
    capsys.readouterr()
    return path


def test_cli_verify_accepts_a_saved_plan(tmp_path, capsys):
    path = _write_plan(tmp_path, capsys)
    assert json.loads(path.read_text())["format"] == PLAN_FORMAT
    assert main(["verify", str(path), "student"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("plan VERIFIED") and out.err == ""
    assert "income" in out.out and "gender" in out.out and "OK" in out.out
    assert main(["verify", str(path), "student", "--attributes", "height,sat", "--records",
                 "1000", "--sensitive", "income", "--epsilon", "1", "--json"]) == 0
    v = json.loads(capsys.readouterr().out)
    assert v["verified"] is True and v["failure"] is None
    assert v["sensitive"]["income"]["stated_scale"] == v["sensitive"]["income"]["scale"] == 1000


@pytest.mark.parametrize(("edit", "args", "message"), [
    (lambda d: d["sensitive"]["income"].update(scale=1.0), [],
     "'income': it states scale 1, below"),
    (lambda d: d.update(epsilon=100.0), [], "claims the least scale"),
    (lambda d: d.pop("format"), [], "plan it again"),
    (lambda d: None, ["--records", "10", "--attributes", "height,sat"], "another query"),
    (lambda d: None, ["--epsilon", "0.5"], "weaker than the required 0.5"),
    (lambda d: None, ["--sensitive", "weight"], r"does not protect \{weight\}"),
])
def test_cli_verify_refuses_with_one_line(tmp_path, capsys, edit, args, message):
    import re

    path = _write_plan(tmp_path, capsys)
    d = json.loads(path.read_text())
    edit(d)
    path.write_text(json.dumps(d))
    assert main(["verify", str(path), "student", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("quiltpriv: error: ")
    assert re.search(message, err), err


def test_cli_verify_model_and_query_sources(tmp_path, capsys, student):
    path = _write_plan(tmp_path, capsys)
    assert main(["verify", str(path), "example3"]) == 2
    assert "another model" in capsys.readouterr().err
    assert main(["verify", str(path), "student", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["query"]["records"] == 1000
    custom = qp.CustomQuery(["sat"], lambda b: 2.0 if b else 0.0)
    cpath = tmp_path / "custom.json"
    cpath.write_text(qp.plan(student, custom, "income", 1.0).to_json())
    assert main(["verify", str(cpath), "student"]) == 2
    err = capsys.readouterr().err
    assert "custom query cannot be rebuilt" in err and err.count("\n") == 1
    assert main(["verify", str(tmp_path / "missing.json"), "student"]) == 2
    assert capsys.readouterr().err.startswith("quiltpriv: error: ")
    (tmp_path / "x.json").write_text("{\"format\": \"quiltpriv-plan/1\"}")
    assert main(["verify", str(tmp_path / "x.json"), "student"]) == 2
    assert "has no" in capsys.readouterr().err


def _paths(x, prefix=()):
    """Every key path of a JSON value (objects and lists)."""
    yield prefix
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(x, list):
        for k, v in enumerate(x):
            yield from _paths(v, (*prefix, k))


def test_every_field_replaced_by_any_json_value_gives_a_clear_error_or_a_checked_plan(
        student, count_plan):
    query, p = count_plan
    base = json.loads(p.to_json())
    values = [None, True, 0, -1, 2.5, "", "income", [], ["sat"], {}, {"kind": "count"}]
    tried = 0
    for path in list(_paths(base))[1:]:
        for value in values:
            d = copy.deepcopy(base)
            target = d
            for k in path[:-1]:
                target = target[k]
            target[path[-1]] = value
            tried += 1
            try:
                parsed = qp.Plan.from_dict(d)
            except qp.PlanError:
                continue
            v = qp.check_plan(parsed, student, query)  # never a crash
            if v.ok:  # accepted: then every number a release uses is what it was
                assert v.plan.scale == p.scale and v.plan.epsilon == p.epsilon
                for sp, orig in zip(v.plan.sensitive, p.sensitive, strict=True):
                    assert (sp.quilt, sp.sensitivity, sp.scale) == (orig.quilt,
                                                                    orig.sensitivity,
                                                                    orig.scale)
                    assert set(sp.nearby) == set(orig.nearby)
    assert tried > 300
