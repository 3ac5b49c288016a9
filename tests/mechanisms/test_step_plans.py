"""Plans of the steps of a time series held as runs: the same plans, a linear JSON, strict parsing.

A chain plan (:class:`quiltpriv.mechanisms.step_plans.StepPlans`) must give, step by step, the
plan the per-step planner gives (the general planner is the reference on short chains), round
trip through its JSON (``"quiltpriv-plan/3"``), verify, and refuse an edited or malformed file.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import quiltpriv as qp
import quiltpriv.mechanisms.chain_quilts as chain_quilts
from quiltpriv.errors import PlanError
from quiltpriv.mechanisms.apmqm import PLAN_FORMAT_RUNS, Plan, plan, query_mismatch
from quiltpriv.mechanisms.step_plans import StepPlans
from quiltpriv.mechanisms.verification import check_plan, verify_plan
from quiltpriv.queries.query import LinearQuery

CLOSED_FORM = 31.737788616  # T times the scale at eps = 1, p = 0.1 (docs/time-series.md)


def _chain(n: int, flip=((0.9, 0.1), (0.2, 0.8)), init=(0.3, 0.7)):
    return qp.markov_chain(n, [list(r) for r in flip], list(init))


def _linear(theta, step: int = 7):
    attrs = theta.nodes[3::step]
    return LinearQuery({a: 0.5 + (i % 3) for i, a in enumerate(attrs)},
                       {a: (0.0, 1.0) for a in attrs})


def _fields(sp):
    return (sp.sensitive, sp.quilt, sp.nearby, sp.remote, sp.nearby_attributes, sp.influence,
            sp.sensitivity, sp.scale, sp.quilts_considered, sp.optimal, sp.influence_member,
            sp.influence_pair)


@pytest.mark.parametrize("listed", [True, False])
def test_runs_give_the_general_planners_plans(monkeypatch, listed):
    theta = _chain(70)
    query = _linear(theta)
    sens = list(theta.nodes[::3])[::-1]  # not in chain order, not consecutive
    fast = plan(theta, query, sens, 1.0, list_sets=listed)
    assert isinstance(fast.sensitive, StepPlans)
    monkeypatch.setattr(chain_quilts, "CHAIN_MIN_NODES", 10**9)
    general = plan(theta, query, sens, 1.0, list_sets=listed)
    assert isinstance(general.sensitive, tuple)
    assert len(fast.sensitive) == len(general.sensitive) == len(sens)
    for f, g in zip(fast.sensitive, general.sensitive, strict=True):
        assert f.sensitive == g.sensitive
        assert f.optimal and g.optimal
        assert f.scale == pytest.approx(g.scale, rel=1e-8, abs=0)
        assert f.sets_listed == listed
        # its own N: the query's Delta of the query attributes in N
        part = f.partition(theta)
        assert f.sensitivity == query.sensitivity(
            [v for v in part.nearby if v in query.attributes])
    assert fast.scale == pytest.approx(general.scale, rel=1e-8, abs=0)
    assert fast.binding.sensitive == general.binding.sensitive
    assert fast[sens[4]] == fast.sensitive[4]
    with pytest.raises(KeyError):
        fast["nope"]


def test_json_round_trip_verifies_and_is_compact():
    n = 2000
    theta = _chain(n)
    query = qp.FractionQuery(theta.nodes, "1")
    p = plan(theta, query, theta.nodes, 1.0)
    assert isinstance(p.sensitive, StepPlans)
    assert len(p.sensitive.runs) < 200  # the middle of a homogeneous chain is one run
    text = p.to_json()
    d = json.loads(text)
    assert d["format"] == PLAN_FORMAT_RUNS
    assert len(text) < 200 * n  # names of the order and of the query's steps, not N per step
    back = Plan.from_json(text)
    assert not back.verified
    assert back == p and back.sensitive == p.sensitive
    assert [_fields(a) for a in back.sensitive] == [_fields(b) for b in p.sensitive]
    assert [a.explanation for a in back.sensitive] == [b.explanation for b in p.sensitive]
    assert query_mismatch(back, query) is None
    other = qp.FractionQuery(theta.nodes, "0")
    assert query_mismatch(back, other) is not None
    assert "sensitive steps" in p.explain() and "2,000 sensitive steps" in p.explain()


def test_parsed_chain_plan_verifies_and_edits_are_refused():
    theta = _chain(70)
    query = _linear(theta, 9)
    sens = theta.nodes[10:16]
    p = plan(theta, query, sens, 1.0)
    assert isinstance(p.sensitive, StepPlans)
    back = Plan.from_json(p.to_json())
    ok = verify_plan(back, theta, query)
    assert ok.verified and ok.scale == p.scale
    d = json.loads(p.to_json())
    run = d["sensitive"]["runs"][0]
    run[6] = run[6] / 2  # a scale below what its quilt needs
    d["scale"] = max(r[6] for r in d["sensitive"]["runs"])
    v = check_plan(Plan.from_dict(d), theta, query)
    assert not v.ok and "scale" in v.failure
    d = json.loads(p.to_json())
    d["sensitive"]["runs"][0][5] *= 2  # another Delta_{A&N}
    with pytest.raises(PlanError, match="Delta"):
        verify_plan(Plan.from_dict(d), theta, query)
    assert query_mismatch(Plan.from_dict(d), query) is not None


@pytest.mark.parametrize("edit,message", [
    (lambda s: s["runs"][0].__setitem__(1, 10**6), "runs past"),
    (lambda s: s["runs"].append(list(s["runs"][0])), "another run"),
    (lambda s: s["runs"][0].pop(), "a list of 11 fields"),
    (lambda s: s["runs"][0].__setitem__(2, 10**5), "outside the chain"),
    (lambda s: s["runs"][0].__setitem__(6, math.inf), "finite"),
    (lambda s: s["runs"][0].__setitem__(7, 1), "true or false"),
    (lambda s: s.__setitem__("attributes", [[5, 2], [3, 1]]), "out of order"),
    (lambda s: s.__setitem__("extra", 1), "unknown field"),
    (lambda s: s.__setitem__("order", ["X1", "X1"]), "twice"),
])
def test_malformed_runs_are_refused(edit, message):
    theta = _chain(80)
    p = plan(theta, _linear(theta), theta.nodes[5:40], 1.0)
    d = p.to_dict()
    edit(d["sensitive"])
    with pytest.raises(PlanError, match=message):
        Plan.from_dict(json.loads(json.dumps(d)))


def test_old_reader_refusal_names_the_formats():
    theta = _chain(80)
    d = plan(theta, _linear(theta), theta.nodes[5:9], 1.0).to_dict()
    d["format"] = "quiltpriv-plan/9"
    with pytest.raises(PlanError, match="quiltpriv-plan/3"):
        Plan.from_dict(d)


def test_deadline_gives_a_flagged_valid_plan():
    theta = _chain(5000)
    p = plan(theta, qp.FractionQuery(theta.nodes, "1"), theta.nodes, 1.0, time_limit=1e-9)
    assert not p.optimal
    assert any("time limit" in note for note in p.notes)
    # the quilt {} (every step nearby): Delta_A / eps for the steps not reached
    assert p.scale == pytest.approx(1.0)
    assert "Optimality not proven" in p.sensitive[0].explanation


@pytest.mark.parametrize("n", [pytest.param(500_000, marks=pytest.mark.slow), 20_000])
def test_fraction_plan_equals_the_closed_form_from_above(n):
    theta = qp.markov_chain(n, [[0.9, 0.1], [0.1, 0.9]], [0.5, 0.5])
    query = qp.FractionQuery(theta.nodes, "1")
    p = plan(theta, query, theta.nodes, 1.0)
    assert p.optimal
    want = CLOSED_FORM / n
    assert want * (1 - 1e-10) <= p.scale <= want * (1 + 1e-9)
    steps = p.sensitive
    assert isinstance(steps, StepPlans) and len(steps.runs) < 200
    assert np.all(steps.column("optimal"))


def test_a_count_of_few_steps_on_a_long_chain_stays_within_a_small_radius():
    # the steps near a counted step whose best quilt is {} must be proven optimal without the
    # search radius growing to the chain's ends (it did: 15 GB at T = 20,000)
    from quiltpriv.queries.query import CountQuery

    n = 20_000
    theta = qp.markov_chain(n, [[0.9, 0.1], [0.1, 0.9]], [0.5, 0.5])
    steps = [f"X{n // 100}", f"X{n // 2}", f"X{n - n // 100}"]
    query = CountQuery(steps, records=2)
    p = plan(theta, query, theta.nodes, 1.0)
    assert isinstance(p.sensitive, StepPlans) and p.optimal
    considered = p.sensitive.column("considered")
    assert considered.max() <= (2 * 64 + 1) ** 2
    # a query step has itself in N: Delta_A / eps at least, reached by the quilt {}
    assert p.scale == pytest.approx(query.sensitivity(steps) / 1.0, rel=1e-12)
    far = p[f"X{n // 4}"]
    assert far.sensitivity == 0.0 and far.scale == 0.0
