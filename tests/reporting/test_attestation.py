"""The signed part of the audit report: input hashes, verdicts, ledger status, sign-off."""

from __future__ import annotations

import hashlib
import json
import warnings

import numpy as np
import pandas as pd

import quiltpriv as qp
from quiltpriv._version import __version__
from quiltpriv.cli import main
from quiltpriv.mechanisms.apmqm import canonical_json
from quiltpriv.model.loading import load_model
from quiltpriv.queries.query import CountQuery
from quiltpriv.reporting.attestation import ASSUMPTIONS
from quiltpriv.reporting.report import audit_report


def _sha(x):
    return hashlib.sha256(canonical_json(x).encode()).hexdigest()


def test_report_attests_inputs_verdicts_ledger_and_leaves_a_sign_off(tmp_path):
    theta = load_model("example3")
    q = CountQuery(("x1",), 4, where="x1 == 1", domain={"x1": (0, 1)})
    p = qp.plan(theta, q, "x2", 0.5)
    data = pd.DataFrame({v: np.random.default_rng(1).integers(0, 2, 4) for v in theta.nodes})
    ledger = tmp_path / "l.db"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = qp.release(p, q, data, seed=2, ledger=ledger).to_record().to_dict()
    r = audit_report(theta, q, p, record, run_audit=True, ledger=ledger)
    a = r.data["attestation"]
    assert a["quiltpriv_version"] == __version__ and a["generated"].endswith("Z")
    assert a["inputs"]["model_fingerprint"] == theta.fingerprint()
    assert a["inputs"]["plan_sha256"] == _sha(p.to_dict())
    assert a["inputs"]["record_sha256"] == _sha(record)
    assert a["inputs"]["data"]["sha256"] == record["data"]["sha256"]
    assert a["verify"]["record"]["verified"] is True
    assert a["audit"]["verdict"] == "MET" and a["audit"]["per_attribute"]["x2"]["verdict"] == "MET"
    assert 0 < a["audit"]["least_scale"] < p.scale
    assert a["attained_epsilon"]["x2"]["epsilon"] == 0.5
    # the perturbation test of the chosen quilt (the trivial quilt here: nothing can flip)
    assert a["fragility"]["run"] and a["fragility"]["complete"]
    assert [r["node"] for r in a["fragility"]["rows"]] == ["x2"]
    assert p["x2"].quilt == () and a["fragility"]["rows"][0]["verdict"] == "STABLE"
    assert "fragility (one table changed)" in r.html
    assert a["ledger"]["entry"] == 0 and "intact" in a["ledger"]["status"]
    assert a["assumptions"] == ASSUMPTIONS and a["sign_off"] == {
        "reviewer": None, "date": None, "decision": None}
    html = r.html
    for text in ("Attestation", "Sign-off", "reviewed by", "exact audit", "MET",
                 a["inputs"]["plan_sha256"], "this release is entry 0"):
        assert text in html, text
    # an edited record is shown as such in the attestation (the report itself refuses a
    # record made with another plan, so edit only what the plan does not hold)
    edited = json.loads(json.dumps(record))
    edited["calibration"]["noise_scale_used"] = edited["scale"] = 0.5
    b = audit_report(theta, q, p, edited, ledger=ledger).data["attestation"]
    assert b["verify"]["record"]["verified"] is False
    assert "NOT in the ledger" in b["ledger"]["status"]
    assert b["audit"] == {"run": False, "why": "not asked (report --audit)"}
    assert b["fragility"] == {"run": False, "why": "not asked (report --audit)"}


def test_cli_report_audit_flag(tmp_path):
    out = tmp_path / "r.html"
    assert main(["report", "example3", "--sensitive", "x2", "--attributes", "x1", "--records",
                 "4", "--where", "x1 == 1", "--domain", "x1=0|1", "--epsilon", "0.5",
                 "--audit", "-o", str(out)]) == 0
    a = json.loads(out.with_suffix(".json").read_text())["attestation"]
    assert a["audit"]["run"] and a["audit"]["verdict"] == "MET"
