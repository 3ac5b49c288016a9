"""The explorer's auditor workflow over HTTP: published record -> verify -> audit -> signed report.

A publisher plans and releases with the command line; the explorer is started on the model as
a BIF file (the same model: the same fingerprint), loads the published plan or record (by path
or uploaded), verifies it, audits it and writes the signed report. Each answer is compared with
what ``quiltpriv verify`` / ``audit`` / ``report --record`` say on the same files; nothing is
planned or released again.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
import reference as ref

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.explorer.published import MAX_DOCUMENT
from quiltpriv.explorer.server import MAX_BODY, MAX_UPLOAD, Explorer, ExplorerServer
from quiltpriv.mechanisms.attained import attained_epsilons
from quiltpriv.mechanisms.fragility import fragility
from quiltpriv.mechanisms.verification import query_from_dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_explorer_api import Client  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
QUERY = ref.PUBLISHED_QUERY


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """The publisher's files: plan.json, record.json (released through ledger.db)."""
    return ref.publish_student_files(tmp_path_factory.mktemp("published"))


@pytest.fixture
def client():
    bif = ROOT / "models" / "student.bif"
    server = ExplorerServer(Explorer(qp.load_model(str(bif)), str(bif), sources=[bif]))
    server.start_in_thread()
    yield Client(server)
    server.stop()


def _job(client, path, body):
    status, j = client.call("POST", path, body)
    assert status == 202, j
    return client.wait(j["job"])


def _verify(client, body=None):
    s = _job(client, "/api/published/verify", body or {})
    assert s["state"] == "done", s
    return s["result"]


def _cli_json(capsys, argv):
    code = main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_record_by_path_verifies_audits_and_reports_as_the_cli(client, published, capsys,
                                                               tmp_path):
    record_path = published / "record.json"
    record = json.loads(record_path.read_text())
    status, loaded = client.call("POST", "/api/published", {"path": str(record_path)})
    assert status == 200, loaded
    doc = loaded["document"]
    assert doc["kind"] == "record" and doc["sha256"] == hashlib.sha256(
        record_path.read_bytes()).hexdigest()
    assert doc["scale"] == record["plan"]["scale"] == 1000 and doc["value"] == record["value"]
    assert doc["noise_scale_used"] == record["scale"] >= 1000
    assert client.call("GET", "/api/published")[1]["document"] == doc

    data = str(ROOT / "examples/data/students.csv")
    ledger = str(published / "ledger.db")
    r = _verify(client, {"data": data, "ledger": ledger, "audit": True})
    code, cli = _cli_json(capsys, ["verify", str(record_path), str(ROOT / "models/student.bif"),
                                   "--data", data, "--ledger", ledger, "--json"])
    assert code == 0 and r["verified"] is True and r["failure"] is None
    assert r["checks"] == cli["checks"]                   # every check, as verify prints it
    assert [c["name"] for c in r["checks"]][-2:] == ["data", "ledger"]
    assert r["published_value"] == record["value"] == cli["published_value"]
    assert r["true_value"] == cli["true_value"] and r["noise_added"] == cli["noise_added"]
    assert "release record VERIFIED" in r["text"]
    # the epsilon each attribute attains, from the published plan
    theta = qp.load_model("student")
    plan = qp.Plan.from_dict(record["plan"])
    query = query_from_dict(plan.query)
    assert r["attained"] == [json.loads(json.dumps(a.to_dict()))
                             for a in attained_epsilons(plan, query)]
    assert {a["node"]: a["epsilon"] for a in r["attained"]}["income"] == 1.0
    # the published quilts, marked in the candidate table
    for q, sp in zip(r["quilts"], plan.sensitive, strict=True):
        assert q["node"] == sp.sensitive and q["quilt"] == list(sp.quilt)
        chosen = [row for row in q["candidates"]["rows"] if row["chosen"]]
        assert len(chosen) == 1 and chosen[0]["quilt"] == list(sp.quilt)
        assert "<svg" in q["svg"]
    # the perturbation test, as fragility() finds it
    want = fragility(theta, plan, query)
    assert [row["verdict"] for row in r["fragility"]["rows"]] == [
        row.verdict for row in want.rows] == ["STABLE", "STABLE"]
    # the exact audit at the published scale (docs/audit.md's figures)
    assert r["audit"]["verdict"] == "MET" and round(r["audit"]["least_scale"], 2) == 300.15
    assert round(r["audit"]["per_attribute"]["income"]["loss"], 2) == 0.30
    assert r["other_model"] is None

    # the signed report, from the published plan and record (nothing planned or drawn again)
    out = tmp_path / "signed.html"
    s = _job(client, "/api/published/report", {"path": str(out), "ledger": ledger,
                                                "audit": True})
    assert s["state"] == "done", s
    assert s["result"]["record_verified"] is True and s["result"]["audit"] == "MET"
    rep = json.loads(out.with_suffix(".json").read_text())
    assert rep["plan"] == record["plan"]
    assert rep["release"]["value"] == record["value"]
    att = rep["attestation"]
    assert att["inputs"]["record_sha256"] == hashlib.sha256(
        qp.mechanisms.apmqm.canonical_json(record).encode()).hexdigest()
    assert att["verify"]["record"]["verified"] and att["ledger"]["entry"] == 0
    assert att["audit"]["verdict"] == "MET" and att["fragility"]["run"]
    assert att["inputs"]["model_files"][0]["path"].endswith("student.bif")
    html = out.read_text()
    assert "Sign-off" in html and "this release is entry 0" in html
    # the command line's report on the same record says the same
    cli_out = tmp_path / "cli.html"
    assert main(["report", str(ROOT / "models/student.bif"), "--sensitive", "gender,income",
                 *QUERY, "--record", str(record_path), "--check-ledger", ledger, "--audit",
                 "-o", str(cli_out)]) == 0
    cli_att = json.loads(cli_out.with_suffix(".json").read_text())["attestation"]
    for key in ("inputs", "verify", "attained_epsilon", "ledger"):
        assert cli_att[key] == att[key], key
    assert cli_att["audit"]["least_scale"] == att["audit"]["least_scale"]


def test_an_edited_record_uploaded_is_refused(client, published, tmp_path):
    record = json.loads((published / "record.json").read_text())
    edited = json.loads(json.dumps(record))
    edited["scale"] = edited["calibration"]["noise_scale_used"] = 10.0  # noise lowered
    status, loaded = client.call("POST", "/api/published",
                                 {"text": json.dumps(edited), "name": "record.json"})
    assert status == 200 and loaded["document"]["name"] == "record.json"
    r = _verify(client)
    assert r["verified"] is False
    assert r["failure"].startswith("noise drawn: noise of scale 10.0 was drawn, below")
    assert r["attained"] is not None  # the embedded plan itself still verifies
    # the signed report shows the record as FAILED
    out = tmp_path / "r.html"
    s = _job(client, "/api/published/report", {"path": str(out)})
    assert s["state"] == "done" and s["result"]["record_verified"] is False
    assert "FAILED: noise drawn" in out.read_text()
    # a record whose embedded plan was edited: verify fails, and no report is written
    edited = json.loads(json.dumps(record))
    edited["plan"]["sensitive"]["income"]["scale"] = 10.0
    assert client.call("POST", "/api/published", {"text": json.dumps(edited)})[0] == 200
    r = _verify(client)
    assert r["verified"] is False and r["failure"].startswith("embedded plan:")
    assert r["attained"] is None and r["quilts"] is None
    out2 = tmp_path / "r2.html"
    s = _job(client, "/api/published/report", {"path": str(out2)})
    assert s["state"] == "error" and "does not verify" in s["error"]
    assert not out2.exists() and not out2.with_suffix(".json").exists()


def test_a_plan_against_an_edited_model_shows_the_diff_and_the_replanned_scale(client,
                                                                               published):
    assert client.call("POST", "/api/published",
                       {"path": str(published / "plan.json")})[0] == 200
    r = _verify(client)
    assert r["verified"] is True and r["checks"] is None and r["document"]["kind"] == "plan"
    # an edit of the auditor: P(income = first state | its parents' first states) = 0.9
    status, _ = client.call("POST", "/api/edit/cell", {"member": 0, "node": "income",
                                                       "column": 0, "row": 0, "value": 0.9})
    assert status == 200
    r = _verify(client)
    assert r["verified"] is False and "another model" in r["failure"]
    other = r["other_model"]
    assert other["diff"] is not None and "income" in other["text"]
    edited = client.server.app.state.theta
    plan = qp.Plan.from_json((published / "plan.json").read_text())
    need = qp.plan(edited, query_from_dict(plan.query), ["gender", "income"], 1.0)
    assert other["needed_scale"] == need.scale
    assert other["suffices"] == (plan.scale >= need.scale)


@pytest.mark.parametrize("body, words", [
    ({}, "either the path of the file or its text"),
    ({"path": "a", "text": "b"}, "either the path"),
    ({"text": "not json"}, "not valid JSON"),
    ({"text": "[1, 2]"}, "plan"),
    ({"text": '{"format": "quiltpriv-plan/1", "format": "x"}'}, "twice"),
    ({"text": "{\"epsilon\": NaN}"}, "NaN"),
    ({"text": 3}, "text must be the file's text"),
    ({"path": "/no/such/file.json"}, "cannot read /no/such/file.json"),
    ({"path": "/"}, "not a regular file"),
    ({"path": "x", "extra": 1}, "unknown field"),
])
def test_bad_documents_are_refused_and_the_loaded_one_kept(client, published, body, words):
    assert client.call("POST", "/api/published",
                       {"path": str(published / "plan.json")})[0] == 200
    status, err = client.call("POST", "/api/published", body)
    assert status == 400 and words in err["error"], err
    assert client.call("GET", "/api/published")[1]["document"]["kind"] == "plan"


def test_other_mechanisms_large_files_and_early_calls_are_refused(client, published,
                                                                  tmp_path):
    status, err = client.call("POST", "/api/published/verify", {})
    assert status == 400 and "load a published plan or release record first" in err["error"]
    record = json.loads((published / "record.json").read_text())
    record["mechanism"] = "APGM"
    status, err = client.call("POST", "/api/published", {"text": json.dumps(record)})
    assert status == 400 and "the explorer audits APMQM releases" in err["error"]
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_DOCUMENT + 1)
    status, err = client.call("POST", "/api/published", {"path": str(big)})
    assert status == 400 and "more than the" in err["error"]
    ok = {"Host": f"127.0.0.1:{client.server.port}", "X-Quiltpriv-Token": client.token,
          "Content-Type": "application/json"}
    status, _, body = client.raw("POST", "/api/published",
                                 dict(ok, **{"Content-Length": str(MAX_UPLOAD + 1)}))
    assert status == 413 and f"larger than the {MAX_UPLOAD} bytes".encode() in body
    # an upload above the other endpoints' limit is read (and judged by what it says)
    pad = json.dumps({"text": json.dumps(record) + " " * (2 * MAX_BODY)}).encode()
    status, err = client.call("POST", "/api/published", raw=pad)
    assert status == 400 and "the explorer audits APMQM releases" in err["error"]
    status, _, body = client.raw("POST", "/api/plan",
                                 dict(ok, **{"Content-Length": str(MAX_BODY + 1)}))
    assert status == 413
    assert client.call("POST", "/api/published", {"path": str(published / "plan.json")})[0] \
        == 200
    for body, words in (({"delta": 0}, "delta"), ({"delta": 2}, "delta"),
                        ({"audit": "yes"}, "audit must be true or false"),
                        ({"time_limit": -1}, "time limit"), ({"seed": 1}, "unknown field"),
                        ({"data": "x.csv"}, None)):
        status, err = client.call("POST", "/api/published/verify", body)
        if words is None:  # a plan takes no data: the job says so
            s = client.wait(err["job"])
            assert s["state"] == "error" and "apply to a release record" in s["error"]
            continue
        assert status == 400 and words in err["error"], (body, err)
    status, err = client.call("POST", "/api/published/report", {"path": str(ROOT / "models" /
                                                                            "student.bif")})
    assert status == 400 and "never modified" in err["error"]
    assert client.call("GET", "/api/published/verify")[0] == 405
    assert client.call("POST", "/api/published/nothing", {})[0] == 404
    assert client.call("POST", "/api/published/clear")[0] == 200
    assert client.call("GET", "/api/published")[1]["document"] is None


def test_the_page_ships_the_auditor_panel(client):
    host = {"Host": f"127.0.0.1:{client.server.port}"}
    status, _, body = client.raw("GET", f"/?token={client.token}", host)
    page = body.decode()
    assert status == 200 and '<script src="/static/audit.js"' in page
    for ident in ("pub-file", "pub-path", "pub-verify", "pub-report", "published"):
        assert f'id="{ident}"' in page
    status, headers, js = client.raw("GET", "/static/audit.js", host)
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert b"http://" not in js and b"https://" not in js  # nothing from the network
    assert b"innerHTML = q.svg" in js and js.count(b"innerHTML") == 1  # only the server's drawing
