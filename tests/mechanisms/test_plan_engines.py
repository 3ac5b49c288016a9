"""``engine=`` through the planner and the verifier: the engine is a parameter of
:func:`quiltpriv.plan`, :func:`quiltpriv.check_plan` and the command line (``--engine``), every
engine gives the same plan as exact integer elimination, and the plan's explanation and the
verification say which engine answered."""

from __future__ import annotations

import json

import pytest
import reference as ref

import quiltpriv as qp
from quiltpriv.inference import compiled
from quiltpriv.inference.engines.base import ENGINES

KERNEL = compiled._KERNEL is not None
RUNNABLE = [e for e in ENGINES if e != "kernel" or KERNEL]


@pytest.mark.parametrize("seed", range(4))
def test_every_engine_plans_as_exact_integers_do(seed):
    """On random networks each engine's plan has the quilts and, to rounding, the scales of the
    plan computed in exact integer arithmetic; each explanation names the engine."""
    net = ref.random_network(16_100 + seed, min_nodes=4, max_nodes=8)
    theta = net.to_theta()
    query = qp.CountQuery(list(theta.nodes[:3]), 50)
    sensitive = list(theta.nodes[-2:])
    exact = qp.plan(theta, query, sensitive, 2.0, engine="exact")
    for engine in RUNNABLE:
        p = qp.plan(net.to_theta(), query, sensitive, 2.0, engine=engine)
        for a, b in zip(exact.sensitive, p.sensitive, strict=True):
            assert a.quilt == b.quilt, (engine, a.sensitive)
            assert b.scale == pytest.approx(a.scale, rel=1e-9, abs=1e-12), (engine, a.sensitive)
            assert b.influence == pytest.approx(a.influence, rel=1e-9, abs=1e-9)
    # the engine that computed a chosen quilt's influence is named in its explanation
    for engine in ("python", "exact", "elimination"):
        p = qp.plan(net.to_theta(), query, sensitive, 2.0, engine=engine)
        for sp in p.sensitive:
            if sp.quilt:
                assert f"(engine: {engine})" in sp.explanation, (engine, sp.explanation)


def test_the_verifier_recomputes_with_the_engine_asked_for():
    theta = qp.load_model("chain")
    query = qp.LinearQuery({v: 1 / 12 for v in theta.nodes}, {v: (0, 1) for v in theta.nodes})
    p = qp.plan(theta, query, "x01", 1.0, engine="python")
    assert "(engine: python)" in p.sensitive[0].explanation
    saved = qp.Plan.from_json(p.to_json())
    verdict = qp.check_plan(saved, theta, query, engine="exact")
    assert verdict.ok
    assert [c.influence_engine for c in verdict.attributes] == ["exact"]
    assert "influences recomputed by the engine(s) exact" in verdict.explain()
    assert verdict.attributes[0].to_dict()["influence_engine"] == "exact"
    qp.verify_plan(saved, theta, query, engine="elimination")


def test_a_plan_refuses_a_bad_or_contradicted_engine():
    theta = qp.load_model("student:theta")
    query = qp.CountQuery(["height"], 10)
    with pytest.raises(qp.ParameterError, match="engine must be one of"):
        qp.plan(theta, query, "income", 1.0, engine="fast")
    with pytest.raises(qp.ParameterError, match="disagree"):
        qp.plan(theta, query, "income", 1.0, inference="junction_tree", engine="exact")
    # the older name alone still chooses the engine of the same name
    p = qp.plan(theta, query, "income", 1.0, inference="elimination")
    q = qp.plan(theta, query, "income", 1.0, engine="elimination")
    assert p.to_dict() == q.to_dict()


def test_the_command_line_takes_engine(cli):
    argv = ["plan", "student", "--sensitive", "income", "--query", "count", "--attributes",
            "height", "--records", "10", "--epsilon", "1", "--json"]
    rc, out, err = cli([*argv, "--engine", "exact"])
    assert rc == 0, err
    explanation = json.loads(out)["sensitive"]["income"]["explanation"]
    assert "exact integer arithmetic, as asked) (engine: exact)" in explanation
    rc, out, err = cli([*argv, "--engine", "magic"])
    assert rc == 2 and out == "" and "--engine" in err
    rc, out, err = cli([*argv, "--engine", "python", "--inference", "junction_tree"])
    assert rc == 2 and out == "" and "disagree" in err
    assert err.count("\n") == 1
