"""The least scale the exact audit proves sufficient; per-attribute audits; audit --plan."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.audit.exact import audit
from quiltpriv.audit.least_scale import audit_per_attribute, least_scale
from quiltpriv.cli import main
from quiltpriv.model.loading import load_model
from quiltpriv.model.network import theta_from_tables
from quiltpriv.queries.query import CountQuery


def test_point_masses_least_scale_is_n_over_eps():
    # phi in {0, 1}: the loss at scale s is exactly n / s, so the least scale is n / eps
    x = theta_from_tables([], {"x": ("0", "1")}, {"x": [0.5, 0.5]})
    r = least_scale(x, CountQuery(("x",), 3), "x", 0.5, start=1.0, planned=6.0)
    assert r.below < 6.0 <= r.scale and r.scale - r.below <= 1e-6 * r.scale
    assert r.scale == pytest.approx(6.0, rel=2e-6) and r.complete
    assert audit(x, CountQuery(("x",), 3), "x", 0.5, r.scale).met
    assert not audit(x, CountQuery(("x",), 3), "x", 0.5, r.below).met
    assert "1x the least" in r.explain()


def test_example3_least_scale_is_below_the_planned_and_zero_when_exact_suffices():
    theta = load_model("example3")
    q = CountQuery(("x1",), 4)
    p = qp.plan(theta, q, "x2", 0.5)
    r = least_scale(theta, q, "x2", 0.5, start=p.scale, planned=p.scale)
    assert 0 < r.scale < p.scale and audit(theta, q, "x2", 0.5, r.scale).met
    assert not audit(theta, q, "x2", 0.5, r.below).met
    # 4 log(0.56/0.44) = 0.9646 < 1: no noise is needed at eps = 1
    assert least_scale(theta, q, "x2", 1.0).scale == 0


def test_per_attribute_audit_maxes_to_the_joint_audit():
    theta = load_model("example3")
    q = CountQuery(("x1",), 4)
    sens = list(theta.nodes)
    p = qp.plan(theta, q, sens, 1.0)
    per = audit_per_attribute(theta, q, sens, 1.0, p.scale)
    joint = audit(theta, q, sens, 1.0, p.scale)
    assert list(per) == sens
    assert max(r.loss for r in per.values()) == pytest.approx(joint.loss, rel=1e-12)


def test_cli_audit_reads_a_published_plan_and_record(tmp_path, capsys):
    plan_path = tmp_path / "plan.json"
    assert main(["plan", "example3", "--sensitive", "x2", "--attributes", "x1", "--records",
                 "4", "--epsilon", "0.5", "--json", "-o", str(plan_path)]) == 0
    capsys.readouterr()
    assert main(["audit", "example3", "--plan", str(plan_path), "--per-attribute",
                 "--least-scale", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["scale"] == json.loads(plan_path.read_text())["scale"] and d["met"]
    assert d["per_attribute"]["x2"]["loss"] == pytest.approx(d["loss"])
    assert 0 < d["least_scale"]["scale"] < d["scale"]
    # an edited plan is refused before any audit
    edited = json.loads(plan_path.read_text())
    edited["scale"] = edited["sensitive"]["x2"]["scale"] = 0.1
    plan_path.write_text(json.dumps(edited))
    assert main(["audit", "example3", "--plan", str(plan_path)]) == 2
    assert "does not verify" in capsys.readouterr().err
    # a release record: its plan is verified and audited
    theta = load_model("example3")
    q = CountQuery(("x1",), 4, where="x1 == 1", domain={"x1": (0, 1)})
    data = pd.DataFrame({v: np.random.default_rng(1).integers(0, 2, 4) for v in theta.nodes})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = qp.release(qp.plan(theta, q, "x2", 0.5), q, data, seed=2).to_record().to_dict()
    rec_path = tmp_path / "record.json"
    rec_path.write_text(json.dumps(rec))
    assert main(["audit", "example3", "--plan", str(rec_path)]) == 0
    assert "MET" in capsys.readouterr().out
    assert main(["audit", "example3", "--plan", str(rec_path), "--scale", "1"]) == 2
    assert main(["audit", "example3", "--attributes", "x1", "--records", "4"]) == 2
    assert "--sensitive and --epsilon" in capsys.readouterr().err
    assert not math.isnan(d["loss"])
