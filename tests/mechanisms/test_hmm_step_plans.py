"""HMM plans held as runs (:mod:`quiltpriv.mechanisms.hmm_step_plans`).

A plan of every node of a hidden Markov model, in step order and without listed sets, is held
as runs of steps sharing their choice. Node by node it must equal the plan of one record per
node that the same search gives (the per-node form, still made for other orders and listed
sets, and still read from files), survive its JSON, verify per run in the structure of the HMM
search, and refuse a tampered run.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_hmm_plans import random_hmm, symmetric_hmm

import quiltpriv as qp
import quiltpriv.mechanisms.hmm_quilts as hmm_quilts
import quiltpriv.mechanisms.hmm_step_plans as hsp
from quiltpriv.errors import PlanError
from quiltpriv.mechanisms.apmqm import Plan, plan
from quiltpriv.mechanisms.hmm_step_plans import HMMStepPlans
from quiltpriv.mechanisms.hmm_verification import _parse_quilts, _runs_shape
from quiltpriv.mechanisms.verification import check_plan


def _query(n: int) -> qp.FractionQuery:
    return qp.FractionQuery([f"X{t}" for t in range(1, n + 1)], "1")


def _per_node(monkeypatch, theta, query, eps):
    with monkeypatch.context() as m:
        m.setattr(hsp, "hmm_runs", lambda *a, **k: None)
        return plan(theta, query, theta.nodes, eps, list_sets=False)


_FIELDS = ("sensitive", "quilt", "nearby_attributes", "influence", "sensitivity", "scale",
           "optimal", "quilts_considered", "influence_member", "influence_pair", "status")


def _same_nodes(runs, nodes) -> None:
    assert len(runs) == len(nodes)
    for a, b in zip(runs, nodes, strict=True):
        for f in _FIELDS:
            assert getattr(a, f) == getattr(b, f), (a.sensitive, f)


@pytest.mark.parametrize("seed", range(6))
def test_runs_equal_the_per_node_plan_on_random_hmms(monkeypatch, seed):
    theta, steps = random_hmm(seed, n_steps=40 + 7 * seed)
    monkeypatch.setattr(hmm_quilts, "HMM_MIN_STEPS", 1)
    query = qp.FractionQuery(steps, "1")
    eps = [0.5, 1.0, 2.5][seed % 3]
    p = plan(theta, query, theta.nodes, eps, list_sets=False)
    assert isinstance(p.sensitive, HMMStepPlans)
    ref = _per_node(monkeypatch, theta, query, eps)
    assert isinstance(ref.sensitive, tuple)
    _same_nodes(p.sensitive, ref.sensitive)
    assert p.scale == ref.scale and p.optimal == ref.optimal
    # the verifier's parse of the runs is its parse of the quilts node by node
    order = hmm_quilts.hmm_order(theta)
    a, b = _runs_shape(p.sensitive), _parse_quilts(order, ref.sensitive)
    for f in ("t", "observed", "lk", "lh", "lc", "rk", "rh", "rc", "center"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    back = Plan.from_json(p.to_json())
    assert back.sensitive == p.sensitive
    v = check_plan(back, theta, query)
    assert v.ok, v.failure
    assert len(v.attributes) == len(p.sensitive.runs)


def test_long_hmm_plan_is_a_few_runs_equal_to_the_per_node_plan(monkeypatch):
    n = 3000
    theta, query = symmetric_hmm(n, 0.1, 0.8), _query(n)
    p = plan(theta, query, theta.nodes, 1.0)  # sets not listed at this size: runs
    steps = p.sensitive
    assert isinstance(steps, HMMStepPlans) and len(steps) == 2 * n
    assert len(steps.runs) < 200
    ref = _per_node(monkeypatch, theta, query, 1.0)
    _same_nodes(steps, ref.sensitive)
    assert steps.nodes() == theta.nodes
    for f in _FIELDS:
        assert getattr(p["H1500"], f) == getattr(ref["H1500"], f)
    text = p.to_json()
    assert json.loads(text)["format"] == "quiltpriv-plan/hmm-runs-1"
    assert len(text) < len(ref.to_json()) / 20
    # both forms verify; the closed form of the stationary HMM, from above
    for form in (Plan.from_json(text), Plan.from_json(ref.to_json())):
        v = check_plan(form, theta, query)
        assert v.ok, v.failure
        closed = 30.876143219 / n
        assert closed * (1 - 1e-10) <= v.plan.scale <= closed * (1 + 1e-9)
    assert "H" in p.explain() and "runs of steps of one kind" in p.explain()


def test_other_orders_and_listed_sets_keep_one_record_per_node():
    n = 100
    theta, query = symmetric_hmm(n, 0.1, 0.8), _query(n)
    hidden_first = [f"H{t}" for t in range(1, n + 1)] + [f"X{t}" for t in range(1, n + 1)]
    p = plan(theta, query, hidden_first, 1.0, list_sets=False)
    assert isinstance(p.sensitive, tuple)
    assert [sp.sensitive for sp in p.sensitive] == hidden_first
    assert isinstance(plan(theta, query, theta.nodes, 1.0, list_sets=True).sensitive, tuple)
    assert isinstance(plan(theta, query, theta.nodes[1::2], 1.0,
                           list_sets=False).sensitive, HMMStepPlans)


def _edited(p: Plan, edit) -> Plan:
    d = json.loads(p.to_json())
    edit(d)
    return Plan.from_dict(d)


def test_tampered_runs_are_refused():
    n = 600
    theta, query = symmetric_hmm(n, 0.1, 0.8), _query(n)
    p = plan(theta, query, theta.nodes, 1.0, list_sets=False)
    steps = p.sensitive
    assert isinstance(steps, HMMStepPlans)
    k = max(range(len(steps.runs)), key=lambda i: steps.runs[i].length)
    r = steps.runs[k]
    assert r.length > 100 and r.left >= 0 and r.band_left > 0  # the middle

    def field(name, value):
        def edit(d):
            d["sensitive"]["runs"][k][hsp._RUN_FIELDS.index(name)] = value
        return _edited(p, edit)

    assert check_plan(Plan.from_json(p.to_json()), theta, query).ok
    v = check_plan(field("scale", r.scale * (1 - 1e-9)), theta, query)
    assert not v.ok and "below Delta / (eps - e)" in v.failure, v.failure
    v = check_plan(field("influence", r.influence * (1 - 1e-6)), theta, query)
    assert not v.ok and "influence" in v.failure, v.failure
    v = check_plan(field("sensitivity", r.sensitivity * 0.5), theta, query)
    assert not v.ok and "Delta_{A&N}" in v.failure, v.failure
    # a shorter band: more influence than stated
    v = check_plan(field("band_left", r.left + 2), theta, query)
    assert not v.ok and "influence" in v.failure, v.failure
    # a run past the series' end, a node named twice, an observation holding itself
    with pytest.raises(PlanError):
        field("length", n)
    with pytest.raises(PlanError):
        field("first", steps.runs[k - 2].first)
    with pytest.raises(PlanError):
        field("center", True) if r.observed else field("observed", True)
