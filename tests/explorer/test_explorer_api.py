"""The explorer's JSON API, called with urllib against a server on a free port (no browser).

Every answer is compared with the Python API on the same inputs: the plan with ``qp.plan``,
edited models with models edited here by hand, saved files with ``qp.load_model``.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import reference as ref

import quiltpriv as qp
from quiltpriv.explorer import jobs as jobs_module
from quiltpriv.explorer.server import MAX_BODY, Explorer, ExplorerServer
from quiltpriv.mechanisms.compare import compare
from quiltpriv.model.loading import theta_to_dict
from quiltpriv.reporting.report import audit_report, candidate_quilts

ROOT = Path(__file__).resolve().parents[2]


def _norm(x):
    """JSON-normalised (floats as the page receives them; inf as "inf")."""
    from quiltpriv.utils.serialize import jsonable

    return json.loads(json.dumps(jsonable(x)))


class Client:
    def __init__(self, server: ExplorerServer):
        self.server = server
        self.base = f"http://127.0.0.1:{server.port}"
        self.token = server.app.token

    def call(self, method, path, body=None, *, raw: bytes | None = None, headers=None,
             token=True):
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if token:
            req.add_header("X-Quiltpriv-Token", self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def raw(self, method, path, headers, body=b""):
        """A request with exactly these headers (Host included), via http.client."""
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders(body or None)
        r = conn.getresponse()
        out = r.status, dict(r.getheaders()), r.read()
        conn.close()
        return out

    def wait(self, job_id):
        while True:
            status, s = self.call("GET", f"/api/jobs/{job_id}")
            assert status == 200, s
            if s["state"] != "running":
                return s
            time.sleep(0.02)

    def plan(self, body):
        status, j = self.call("POST", "/api/plan", body)
        assert status == 202, j
        s = self.wait(j["job"])
        assert s["state"] == "done", s
        return s["result"]


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "student.json"
    path.write_text(json.dumps(theta_to_dict(qp.load_model("student"))), encoding="utf-8")
    return path


@pytest.fixture
def client(model_file):
    theta = qp.load_model(str(model_file))
    server = ExplorerServer(Explorer(theta, str(model_file), sources=[model_file]))
    server.start_in_thread()
    yield Client(server)
    server.stop()


def _req(sensitive, eps, **query):
    return {"sensitive": sensitive, "epsilon": eps, "query": query}


CASES = [
    (["income"], 1.0, qp.CountQuery(["height", "sat"], 1000),
     {"kind": "count", "attributes": ["height", "sat"], "records": 1000}),
    (["income", "weight"], 2.0, qp.CountQuery(["sat"], 50, where="sat > 0.15"),
     {"kind": "count", "attributes": "sat", "records": "50", "where": "sat > 0.15"}),
    (["weight"], 0.7, qp.MeanQuery("height", lower=0.0, upper=1.0),
     {"kind": "mean", "attributes": ["height"], "bounds": "0:1"}),
    (["income", "gender"], 3.0,
     qp.LinearQuery({"income": 1.0, "weight": -2.0}, {"income": (0, 1), "weight": (0, 1)}),
     {"kind": "linear", "weights": "income=1,weight=-2", "bounds": "income=0:1,weight=0:1"}),
    (["gender"], 1.5, qp.HistogramQuery(["sat"], 100, categories={"sat": ("lo", "hi")}),
     {"kind": "histogram", "attributes": ["sat"], "records": 100, "categories": "sat=lo|hi"}),
]


@pytest.mark.parametrize("sensitive,eps,query,fields", CASES)
def test_plan_matches_the_python_planner(client, model_file, sensitive, eps, query, fields):
    theta = qp.load_model(str(model_file))
    r = client.plan(_req(sensitive, eps, **fields))
    p = qp.plan(theta, query, sensitive, eps, time_limit=30)
    assert r["plan"] == _norm(p.to_dict())
    assert r["scale"] == p.scale and r["optimal"] is True
    assert r["fingerprint"] == theta.fingerprint()
    for sp, section in zip(p.sensitive, r["sensitive"], strict=True):
        assert section["quilt"] == list(sp.quilt) and section["scale"] == sp.scale
        ranked, _ = candidate_quilts(theta, query, sp.sensitive, eps)
        rows = section["candidates"]["rows"]
        assert [row["quilt"] for row in rows] == [list(c.quilt.quilt) for c in ranked][:len(rows)]
        assert [row["scale"] for row in rows] == _norm([c.scale for c in ranked][:len(rows)])
        assert sum(row["chosen"] for row in rows) == 1
        chosen = next(row for row in rows if row["chosen"])
        assert chosen["quilt"] == list(sp.quilt)
        assert f'data-node="{sp.sensitive}"' in section["svg"]
    assert r["comparison"] == _norm(compare(theta, query, sensitive, eps).to_dict()) | {
        "best": compare(theta, query, sensitive, eps).best.mechanism}
    assert r["command"].startswith(f"quiltpriv plan {model_file} --sensitive ")


def test_the_command_shown_gives_the_same_plan(client, model_file, cli):
    from quiltpriv.cli import main

    r = client.plan(_req(["income"], 1.0, kind="count", attributes="height,sat", records=1000,
                         where="height > 0.4 and sat < 0.25"))
    import shlex

    argv = shlex.split(r["command"])[1:] + ["--json"]
    # Run in this process: the command's meaning, not the interpreter's start-up, is under test
    # (the model's path in it is absolute).
    out = cli(argv)
    assert out.rc == 0, out.err
    assert json.loads(out.out) == r["plan"]
    assert callable(main)


def _cell_reference(table: np.ndarray, column: int, row: int, value: float) -> np.ndarray:
    """The cell edit, written out plainly: the others keep their proportions."""
    flat = np.array(table, dtype=float).reshape(table.shape[0], -1)
    col = [float(v) for v in flat[:, column]]
    others = sum(v for k, v in enumerate(col) if k != row)
    new = [value if k == row else (v * ((1 - value) / others) if others > 0
                                   else (1 - value) / (len(col) - 1))
           for k, v in enumerate(col)]
    flat[:, column] = new
    return flat.reshape(table.shape)


def server_theta(client, like):
    """The model the server holds, rebuilt exactly from its CPDs (``like`` gives the DAG)."""
    from quiltpriv.model.network import CPD, Theta

    members = []
    for k in range(len(like)):
        tables = {}
        for v in like.nodes:
            status, cpd = client.call("GET", f"/api/cpd?node={v}&member={k}")
            assert status == 200
            t = np.array(cpd["table"]).reshape(like.members[k][v].table.shape)
            tables[v] = CPD(v, like.parents[v], t)
        members.append(tables)
    return Theta(like.nodes, like.states, like.parents, members, like.names)


def test_cpd_edits_change_the_plan_as_on_the_edited_theta(client, model_file):
    theta = qp.load_model(str(model_file))
    body = _req(["income"], 2.0, kind="count", attributes="sat", records=100)
    q = qp.CountQuery(["sat"], 100)
    before = client.plan(body)
    status, m = client.call("POST", "/api/edit/cell",
                            {"node": "sat", "column": 0, "row": 0, "value": 0.5})
    assert status == 200 and m["edited"] and m["undo"] == 1
    edited = server_theta(client, theta)
    assert m["fingerprint"] == edited.fingerprint() != theta.fingerprint()
    want = _cell_reference(theta.members[0]["sat"].table, 0, 0, 0.5)
    assert np.abs(edited.members[0]["sat"].table - want).max() <= 1e-16
    for v in theta.nodes:  # nothing else moved, not even by an ulp
        if v != "sat":
            assert np.array_equal(edited.members[0][v].table, theta.members[0][v].table)
    after = client.plan(body)
    assert after["plan"] == _norm(qp.plan(edited, q, "income", 2.0, time_limit=30).to_dict())
    assert after["fingerprint"] == edited.fingerprint() != before["fingerprint"]

    def e_sat(r):  # the influence of the quilt {sat} on income: the edit changes it
        return next(row["influence"] for row in r["sensitive"][0]["candidates"]["rows"]
                    if row["quilt"] == ["sat"])

    assert e_sat(after) == qp.max_influence(edited, "income", ["sat"]).value != e_sat(before)
    # Random edits, each checked against the plain reference.
    rng = np.random.default_rng(7)
    current = edited
    for _ in range(5):
        node = str(rng.choice(current.nodes))
        cols = int(np.prod([current.cardinality[p] for p in current.parents[node]]))
        col, row = int(rng.integers(cols)), int(rng.integers(3))
        value = float(np.round(rng.uniform(0, 1), 3))
        status, m = client.call("POST", "/api/edit/cell",
                                {"node": node, "column": col, "row": row, "value": value})
        assert status == 200, m
        want = _cell_reference(current.members[0][node].table, col, row, value)
        current = server_theta(client, theta)
        assert np.abs(current.members[0][node].table - want).max() <= 1e-16
        assert m["fingerprint"] == current.fingerprint()
    r = client.plan(body)
    assert r["plan"] == _norm(qp.plan(current, q, "income", 2.0, time_limit=30).to_dict())


def test_strength_scaling_and_undo(client, model_file):
    theta = qp.load_model(str(model_file))
    status, m = client.call("POST", "/api/edit/strength",
                            {"parent": "income", "child": "sat", "factor": 0.25})
    assert status == 200, m
    t = np.array(theta.members[0]["sat"].table)
    mean = t.mean(axis=1, keepdims=True)
    edited = server_theta(client, theta)
    assert np.abs(edited.members[0]["sat"].table - (mean + 0.25 * (t - mean))).max() <= 1e-16
    body = _req(["income"], 1.0, kind="count", attributes="sat", records=100)
    r = client.plan(body)
    assert r["plan"] == _norm(qp.plan(edited, qp.CountQuery(["sat"], 100), "income", 1.0,
                                      time_limit=30).to_dict())
    # Factor 0: sat no longer depends on income, so the influence of Q = {} on sat is 0.
    status, m = client.call("POST", "/api/edit/strength",
                            {"parent": "income", "child": "sat", "factor": 0})
    flat = server_theta(client, theta)
    assert qp.max_influence(flat, "income", ["sat"]).value <= 1e-9
    client.call("POST", "/api/undo", {})
    # Too strong: an entry would go negative; the message names the largest factor.
    t2 = np.array(edited.members[0]["sat"].table)
    m2 = t2.mean(axis=1, keepdims=True)
    below = t2 < m2  # entries that fall as the dependency grows
    limit = float(np.min((np.broadcast_to(m2, t2.shape) / (m2 - t2))[below]))
    status, e = client.call("POST", "/api/edit/strength",
                            {"parent": "income", "child": "sat", "factor": limit * 1.5})
    assert status == 400 and f"at most {limit:.6g}" in e["error"]
    status, e = client.call("POST", "/api/edit/strength",
                            {"parent": "gender", "child": "sat", "factor": 1})
    assert status == 400 and "not a parent" in e["error"]
    # Undo goes back to the file's model, exactly; then there is nothing left to undo.
    status, m = client.call("POST", "/api/undo", {})
    assert status == 200 and m["fingerprint"] == theta.fingerprint() and not m["edited"]
    status, e = client.call("POST", "/api/undo", {})
    assert status == 400 and e["error"] == "nothing to undo"


def _ensemble(n=6, seed=5):
    """The student model and ``n - 1`` members drawn around it (members disagree everywhere)."""
    return ref.student_ensemble(n, seed, prefix="b")


def test_edits_of_all_members():
    prov = {"source": "learned", "data_public": True, "bootstrap": {"resamples": 5, "seed": 0}}
    theta = _ensemble().with_provenance(prov)
    server = ExplorerServer(Explorer(theta, "ensemble"))
    server.start_in_thread()
    try:
        c = Client(server)
        status, m = c.call("GET", "/api/model")
        assert status == 200 and m["provenance"] == prov  # shown on the page
        # The table view gives each entry's least and largest value over the members.
        status, cpd = c.call("GET", "/api/cpd?node=sat&member=2")
        every = np.stack([m["sat"].table.reshape(3, -1) for m in theta.members])
        assert status == 200 and cpd["table"] == every[2].tolist()
        assert cpd["min"] == every.min(axis=0).tolist()
        assert cpd["max"] == every.max(axis=0).tolist()
        assert (every.max(axis=0) > every.min(axis=0)).all()
        # One probability set in every member; each member's column keeps its own proportions.
        status, m = c.call("POST", "/api/edit/cell", {"member": "all", "node": "sat",
                                                      "column": 2, "row": 1, "value": 0.4})
        assert status == 200, m
        assert m["history"] == ["P(sat = state 1 | column 2) = 0.4 in all 6 members"]
        assert m["edited"] and m["provenance"] == prov  # the model as loaded (the page says)
        edited = server_theta(c, theta)
        for k in range(len(theta)):
            want = _cell_reference(theta.members[k]["sat"].table, 2, 1, 0.4)
            assert np.abs(edited.members[k]["sat"].table - want).max() <= 1e-16
            assert edited.members[k]["sat"].table[1, 2] == 0.4
            for v in theta.nodes:
                if v != "sat":
                    assert np.array_equal(edited.members[k][v].table, theta.members[k][v].table)
        status, cpd = c.call("GET", "/api/cpd?node=sat&member=0")
        assert cpd["min"][1][2] == cpd["max"][1][2] == 0.4  # the members now agree on it
        body = _req(["income"], 2.0, kind="count", attributes="sat", records=100)
        r = c.plan(body)
        assert r["plan"] == _norm(qp.plan(edited, qp.CountQuery(["sat"], 100), "income", 2.0,
                                          time_limit=30).to_dict())
        assert edited.provenance is None  # an edited model is no longer the learned one
        # A strength factor scales each member's own dependency.
        status, m = c.call("POST", "/api/edit/strength", {"member": "all", "parent": "income",
                                                          "child": "sat", "factor": 0.5})
        assert status == 200 and m["history"][-1].endswith("x 0.5 in all 6 members")
        scaled = server_theta(c, theta)
        for k in range(len(theta)):
            t = edited.members[k]["sat"].table
            mean = t.mean(axis=1, keepdims=True)
            assert np.abs(scaled.members[k]["sat"].table - (mean + 0.5 * (t - mean))).max() \
                <= 1e-16
        # Too strong for some member: refused, naming the largest factor every member allows.
        limits = []
        for k in range(len(theta)):
            t = scaled.members[k]["sat"].table
            mean = np.broadcast_to(t.mean(axis=1, keepdims=True), t.shape)
            limits.append(float(np.min((mean / (mean - t))[t < mean])))
        status, e = c.call("POST", "/api/edit/strength", {"member": "all", "parent": "income",
                                                          "child": "sat",
                                                          "factor": max(limits) * 1.01})
        assert status == 400 and f"at most {min(limits):.6g}" in e["error"]
        assert "every edited member" in e["error"]
        assert server_theta(c, theta).fingerprint() == scaled.fingerprint()  # nothing changed
        # One member only, as before.
        status, m = c.call("POST", "/api/edit/cell", {"member": 4, "node": "gender",
                                                      "column": 0, "row": 0, "value": 0.25})
        assert status == 200 and m["history"][-1].endswith("in member 4")
        one = server_theta(c, theta)
        assert [k for k in range(len(theta)) if not np.array_equal(
            one.members[k]["gender"].table, theta.members[k]["gender"].table)] == [4]
        for bad in ("every", "ALL", -1, 6, True):
            status, e = c.call("POST", "/api/edit/cell", {"member": bad, "node": "sat",
                                                          "column": 0, "row": 0, "value": 0.5})
            assert status == 400 and '(or "all" for every member)' in e["error"], (bad, e)
    finally:
        server.stop()


def test_save_as_round_trips_and_never_touches_the_original(client, model_file, tmp_path):
    theta = qp.load_model(str(model_file))
    original = model_file.read_bytes()
    client.call("POST", "/api/edit/cell", {"node": "income", "column": 2, "row": 0,
                                           "value": 0.1})
    edited = server_theta(client, theta)
    q = qp.CountQuery(["sat", "height"], 100)
    want = qp.plan(edited, q, ["income", "weight"], 1.0)
    for name in ("edited.json", "edited.bif"):
        status, r = client.call("POST", "/api/save", {"path": str(tmp_path / name)})
        assert status == 200, r
        back = qp.load_model(str(tmp_path / name))
        assert set(back.edges) == set(edited.edges)
        for v in edited.nodes:
            assert [str(x) for x in back.states[v]] == [str(x) for x in edited.states[v]]
            perm = [0] + [1 + back.parents[v].index(p) for p in edited.parents[v]]
            # The loader renormalises columns whose float sum is not exactly one (as for any
            # file), which moves an entry by at most an ulp.
            assert np.abs(np.transpose(back.members[0][v].table, perm)
                          - edited.members[0][v].table).max() <= 2e-16
        got = qp.plan(back, q, ["income", "weight"], 1.0)
        for a, b in zip(got.sensitive, want.sensitive, strict=True):
            assert set(a.quilt) == set(b.quilt)
            assert a.scale == pytest.approx(b.scale, rel=1e-12)
    for path, words in [(str(model_file), "never modified"),
                        (str(tmp_path / "x.txt"), "must end in .json or .bif"),
                        (str(tmp_path), "is a folder"),
                        (str(tmp_path / "missing" / "x.json"), "does not exist"),
                        ("", "give a file path")]:
        status, e = client.call("POST", "/api/save", {"path": path})
        assert status == 400 and words in e["error"], (path, e)
    os.symlink(model_file, tmp_path / "link.json")
    status, e = client.call("POST", "/api/save", {"path": str(tmp_path / "link.json")})
    assert status == 400 and "never modified" in e["error"]
    assert model_file.read_bytes() == original


def test_bif_holds_one_member(tmp_path):
    theta = qp.load_model("student:theta")
    server = ExplorerServer(Explorer(theta, "student:theta"))
    server.start_in_thread()
    try:
        c = Client(server)
        status, e = c.call("POST", "/api/save", {"path": str(tmp_path / "t.bif")})
        assert status == 400 and "2 members" in e["error"]
        status, r = c.call("POST", "/api/save", {"path": str(tmp_path / "t.bif"), "member": 1})
        assert status == 200
        back = qp.load_model(str(tmp_path / "t.bif"))
        for v in theta.nodes:
            perm = [0] + [1 + back.parents[v].index(p) for p in theta.parents[v]]
            assert np.abs(np.transpose(back.members[0][v].table, perm)
                          - theta.members[1][v].table).max() <= 2e-16
        status, r = c.call("POST", "/api/save", {"path": str(tmp_path / "t.json")})
        back = qp.load_model(str(tmp_path / "t.json"))
        assert back.names == theta.names
        for a, b in zip(back.members, theta.members, strict=True):
            assert all(np.abs(a[v].table - b[v].table).max() <= 2e-16 for v in theta.nodes)
    finally:
        server.stop()


GOOD = _req(["income"], 1, kind="count", attributes=["sat"], records=10)

BAD = [
    ("/api/plan", dict(GOOD, colour="red"), "unknown field(s) 'colour'"),
    ("/api/plan", dict(GOOD, epsilon=-1), "epsilon must be > 0"),
    ("/api/plan", dict(GOOD, epsilon="nan"), "epsilon must be finite"),
    ("/api/plan", dict(GOOD, epsilon=True), "epsilon must be a number"),
    ("/api/plan", dict(GOOD, sensitive=["incom"]), "sensitive attribute 'incom' not in the"),
    ("/api/plan", dict(GOOD, sensitive=[]), "choose at least one sensitive attribute"),
    ("/api/plan", dict(GOOD, time_limit=0), "time_limit must be"),
    ("/api/plan", _req(["income"], 1, kind="count", attributes="sat", records=0),
     "--records must be a whole number in [1, 2**53]"),
    ("/api/plan", _req(["income"], 1, kind="count", attributes="sat", records=10,
                       where="sat > 0.1 and @data.income == 1"), "'@' names a Python variable"),
    ("/api/plan", _req(["income"], 1, kind="count", attributes="sat", records=10,
                       where="height > 0.1"), "must be exactly those the predicate"),
    ("/api/plan", _req(["income"], 1, kind="count", attributes="sat", records=10,
                       where="sat.__class__"), "not allowed"),
    ("/api/plan", _req(["income"], 1, kind="histogram", attributes="sat", records=10),
     "needs its cells declared"),
    ("/api/plan", _req(["income"], 1, kind="drop table", attributes="sat"), "query kind"),
    ("/api/plan", _req(["income"], 1, kind="count", attributes="salary", records=3),
     "query attribute 'salary' not in the network"),
    ("/api/plan", _req(["income"], 1, kind="mean", attributes="sat", bounds="1:0"),
     "exceeds upper bound"),
    ("/api/plan", [1, 2], "expected a JSON object"),
    ("/api/edit/cell", {"node": "sat", "column": 0, "row": 0, "value": 1.5},
     "value must be in [0, 1]"),
    ("/api/edit/cell", {"node": "sat", "column": 3, "row": 0, "value": 0.5},
     "column must be a whole number in [0, 2]"),
    ("/api/edit/cell", {"node": "sat", "column": 0, "row": 0}, "value must be a number"),
    ("/api/edit/cell", {"node": "<b>", "column": 0, "row": 0, "value": 0.5},
     "node '<b>' not in the network"),
    ("/api/edit/strength", {"parent": "income", "child": "sat", "factor": -1},
     "factor must be in [0, 100]"),
    ("/api/undo", {"please": 1}, "undo takes no fields"),
]


@pytest.mark.parametrize("path,body,words", BAD)
def test_bad_requests_get_400_and_a_clear_message(client, path, body, words):
    status, e = client.call("POST", path, body)
    assert status == 400 and words in e["error"], e
    assert e["status"] == 400


@pytest.mark.parametrize("raw,words", [
    (b"{", "not valid JSON"),
    (b'{"epsilon": NaN}', "NaN, which is not a JSON number"),
    (b'{"epsilon": 1, "epsilon": 2}', "names 'epsilon' twice"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[" * 20000 + b"]" * 20000, "nested too deeply"),
    (b'{"epsilon": 1' + b"0" * 5000 + b"}", "integer of 5001 digits"),
    (b'{"epsilon": 1e999}', "out of a float's range"),
])
def test_malformed_bodies_get_400(client, raw, words):
    status, e = client.call("POST", "/api/plan", raw=raw)
    assert status == 400 and words in e["error"], e


def test_unknown_things_and_wrong_methods(client):
    assert client.call("GET", "/api/nothing")[0] == 404
    assert client.call("GET", "/api/jobs/0123")[0] == 404
    status, e = client.call("GET", "/api/cpd?node=sat&member=5")
    assert status == 400 and "member must be a whole number in [0, 0]" in e["error"]
    status, e = client.call("GET", "/api/cpd")
    assert status == 400 and "node=" in e["error"]
    status, _, body = client.raw("DELETE", "/api/model", {"Host": f"127.0.0.1:{client.server.port}",
                                                        "X-Quiltpriv-Token": client.token})
    assert status == 405 and b"DELETE" in body


def test_foreign_origin_host_and_token_are_403(client):
    port = client.server.port
    ok = {"Host": f"127.0.0.1:{port}", "X-Quiltpriv-Token": client.token}
    assert client.raw("GET", "/api/model", ok)[0] == 200
    assert client.raw("GET", "/api/model", dict(ok, Host=f"localhost:{port}"))[0] == 200
    assert client.raw("GET", "/api/model",
                      dict(ok, Origin=f"http://localhost:{port}"))[0] == 200
    refused = [
        dict(ok, Host="evil.example"),                  # DNS rebinding: the attacker's name
        dict(ok, Host=f"evil.example:{port}"),
        dict(ok, Host=f"127.0.0.1:{port + 1}"),
        dict(ok, Host=f"127.0.0.1.evil.example:{port}"),
        {"X-Quiltpriv-Token": client.token},            # no Host at all
        dict(ok, Origin="http://evil.example"),
        dict(ok, Origin="null"),
        dict(ok, Origin=f"http://127.0.0.1:{port + 1}"),
        dict(ok, Origin=f"https://127.0.0.1:{port}"),
        dict(ok, **{"Sec-Fetch-Site": "cross-site"}),
        {"Host": f"127.0.0.1:{port}"},                  # no token
        dict(ok, **{"X-Quiltpriv-Token": "guess"}),
    ]
    for headers in refused:
        status, _, body = client.raw("GET", "/api/model", headers)
        assert status == 403, headers
        assert json.loads(body)["error"].startswith("refused:")
    # A cross-origin POST that would change the model is refused before it is read.
    status, _, body = client.raw("POST", "/api/edit/cell", dict(
        ok, Origin="http://evil.example", **{"Content-Type": "application/json",
                                             "Content-Length": "2"}), b"{}")
    assert status == 403
    assert client.call("GET", "/api/model")[1]["undo"] == 0


def test_page_needs_the_token_and_ships_its_own_assets(client):
    port = client.server.port
    host = {"Host": f"127.0.0.1:{port}"}
    assert client.raw("GET", "/", host)[0] == 403
    status, headers, body = client.raw("GET", f"/?token={client.token}", host)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    page = body.decode()
    assert '<script src="/static/explorer.js"' in page and "http" not in page.replace(
        "http-equiv", "")
    for name, kind in (("explorer.js", "text/javascript"), ("explorer.css", "text/css")):
        status, headers, body = client.raw("GET", f"/static/{name}", host)
        assert status == 200 and headers["Content-Type"].startswith(kind)
        assert b"http://" not in body and b"https://" not in body  # nothing from the network
    assert client.raw("GET", "/static/../server.py", host)[0] == 404
    assert client.raw("GET", "/static/state.py", host)[0] == 404


def test_body_size_and_type_limits(client):
    port = client.server.port
    ok = {"Host": f"127.0.0.1:{port}", "X-Quiltpriv-Token": client.token,
          "Content-Type": "application/json"}
    status, _, body = client.raw("POST", "/api/plan",
                                 dict(ok, **{"Content-Length": str(MAX_BODY + 1)}))
    assert status == 413 and b"larger than the 65536 bytes" in body
    status, _, body = client.raw("POST", "/api/plan", ok)
    assert status == 411
    status, _, body = client.raw("POST", "/api/plan", dict(ok, **{"Content-Type": "text/plain",
                                                                  "Content-Length": "2"}), b"{}")
    assert status == 415
    # Just under the limit is read (and refused for what it says, not for its size).
    pad = json.dumps(dict(GOOD, colour="x" * (MAX_BODY - 200))).encode()
    assert len(pad) <= MAX_BODY
    status, e = client.call("POST", "/api/plan", raw=pad)
    assert status == 400 and "colour" in e["error"]


def test_cancel_stops_a_running_plan(client, monkeypatch):
    from quiltpriv.explorer import compute

    started = []

    def slow_plan(*args, cancel, **kwargs):
        started.append(1)
        end = time.monotonic() + 60
        while time.monotonic() < end:  # the planner reads the job's cancel event
            if cancel.is_set():
                return None  # the job sees the cancel next and ends without this "plan"
            time.sleep(0.005)
        raise AssertionError("the job was not cancelled")

    monkeypatch.setattr(compute, "plan", slow_plan)
    status, j = client.call("POST", "/api/plan", GOOD)
    assert status == 202
    while not started:
        time.sleep(0.01)
    status, s = client.call("GET", f"/api/jobs/{j['job']}")
    assert s["state"] == "running" and s["phase"] in ("starting", "planning")
    assert client.call("POST", f"/api/jobs/{j['job']}/cancel")[0] == 200
    s = client.wait(j["job"])
    assert s["state"] == "cancelled" and s["result"] is None and s["error"] is None


def test_cancel_stops_the_real_planner_without_injecting_an_exception(client, monkeypatch):
    """A long plan (each influence made to take 0.3 s; about 40 candidates) is cancelled from
    the API: the planner's search sees the job's event at its next candidate and returns its
    best plan so far, flagged interrupted, and the job ends as cancelled. No exception is put
    into the job's thread (PyThreadState_SetAsyncExc is never called)."""
    import ctypes

    import quiltpriv.mechanisms.apmqm.shared as apmqm_shared
    from quiltpriv.explorer import compute
    from quiltpriv.mechanisms.apmqm import was_interrupted

    injected = []
    monkeypatch.setattr(ctypes.pythonapi, "PyThreadState_SetAsyncExc",
                        lambda *a: injected.append(a) or 1)
    calls, plans = [], []
    real_influence, real_plan = apmqm_shared.influence_upper_bound_until, compute.plan

    def slow_influence(*args, **kwargs):
        calls.append(time.monotonic())
        time.sleep(0.3)
        return real_influence(*args, **kwargs)

    def recorded_plan(*args, **kwargs):
        plans.append(real_plan(*args, **kwargs))
        return plans[-1]

    monkeypatch.setattr(apmqm_shared, "influence_upper_bound_until", slow_influence)
    monkeypatch.setattr(compute, "plan", recorded_plan)
    req = _req(["gender", "income", "sat", "height", "weight"], 1.0, kind="linear",
               weights="gender=1,income=1,sat=1,height=1,weight=1",
               bounds="gender=0:1,income=0:1,sat=0:1,height=0:1,weight=0:1")
    status, j = client.call("POST", "/api/plan", dict(req, time_limit=600))
    assert status == 202, j
    while len(calls) < 3:
        time.sleep(0.01)
    assert client.call("POST", f"/api/jobs/{j['job']}/cancel")[0] == 200
    cancelled_at = time.monotonic()
    s = client.wait(j["job"])
    assert s["state"] == "cancelled" and s["result"] is None and s["error"] is None
    # stopped at the next candidate: at most the influence under way when cancelled, and one
    # more started just before the event was set
    assert len([c for c in calls if c > cancelled_at]) <= 1, len(calls)
    assert len(plans) == 1 and was_interrupted(plans[0]) and not plans[0].optimal
    assert "cancelled" in " ".join(sp.explanation for sp in plans[0].sensitive)
    assert injected == []
    assert not hasattr(jobs_module, "ctypes")
    # the same plan without cancelling evaluates many more candidates
    monkeypatch.setattr(apmqm_shared, "influence_upper_bound_until", real_influence)
    theta = qp.load_model("student")
    full = qp.plan(theta, qp.LinearQuery({v: 1.0 for v in theta.nodes},
                                         {v: (0, 1) for v in theta.nodes}), theta.nodes, 1.0)
    assert sum(sp.quilts_considered for sp in full.sensitive) > len(calls) + 5


def test_jobs_are_limited(client, monkeypatch):
    from quiltpriv.explorer import compute

    def slow_plan(*args, cancel, **kwargs):
        while not cancel.is_set():
            time.sleep(0.005)

    monkeypatch.setattr(compute, "plan", slow_plan)
    ids = [client.call("POST", "/api/plan", GOOD)[1]["job"]
           for _ in range(jobs_module.MAX_RUNNING)]
    status, e = client.call("POST", "/api/plan", GOOD)
    assert status == 400 and "cancel one first" in e["error"]
    for i in ids:
        client.call("POST", f"/api/jobs/{i}/cancel")
    assert all(client.wait(i)["state"] == "cancelled" for i in ids)


def test_time_budget_gives_a_valid_plan_and_says_what_was_skipped(client, model_file):
    theta = qp.load_model(str(model_file))
    r = client.plan(dict(GOOD, time_limit=1e-9))
    p = qp.plan(theta, qp.CountQuery(["sat"], 10), ["income"], 1, time_limit=1e-9)
    assert r["plan"] == _norm(p.to_dict()) and r["optimal"] is False
    assert r["comparison"] is None
    assert any("not compared" in n for n in r["explorer_notes"])
    status, s = client.call("GET", "/api/model")
    assert status == 200


def test_export_report_writes_the_audit_report(client, model_file, tmp_path):
    out = tmp_path / "audit.html"
    body = dict(_req(["income", "weight"], 1.0, kind="count", attributes="height,sat",
                     records=1000), path=str(out))
    status, j = client.call("POST", "/api/report", body)
    assert status == 202, j
    s = client.wait(j["job"])
    assert s["state"] == "done", s
    theta = qp.load_model(str(model_file))
    q = qp.CountQuery(["height", "sat"], 1000)
    want = audit_report(theta, q, qp.plan(theta, q, ["income", "weight"], 1.0, time_limit=30),
                        model_files=[model_file])
    # Equal but for the time each report was generated (its attestation records it).
    got = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    mine = want.to_dict()
    when, then = got["attestation"].pop("generated"), mine["attestation"].pop("generated")
    assert got == mine
    assert out.read_text(encoding="utf-8") == want.html.replace(then, when)
    # The JSON twin of model.html would be the model file itself: refused before any work.
    status, e = client.call("POST", "/api/report", dict(body, path=str(model_file.with_suffix(
        ".html"))))
    assert status == 400 and "never modified" in e["error"]
    assert not model_file.with_suffix(".html").exists()


def test_cli_refuses_bad_options_before_serving(capsys):
    from quiltpriv.cli import main

    assert main(["explore", "student", "--sensitive", "incom", "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("quiltpriv: error: sensitive attribute 'incom' not in the network")
    assert main(["explore", "student", "--epsilon", "0", "--no-browser"]) == 2


def test_cli_explore_takes_all_and_at_file_like_the_other_commands(tmp_path):
    import argparse

    from quiltpriv.cli import main
    from quiltpriv.cli.explore import _initial_from_args

    names = tmp_path / "names.txt"
    names.write_text("income\n\ngender\n", encoding="utf-8")
    base = dict(model="student", theta=[], epsilon=1.0, query="count", records=10, where=None,
                bounds=None, weights=None, domain=None, record_states=None, catch_all=None,
                time_limit=None)
    init = _initial_from_args(argparse.Namespace(**base, sensitive="all",
                                                 attributes=f"@{names}"))
    assert init["sensitive"] == ",".join(qp.load_model("student").nodes)
    assert init["query"]["attributes"] == "income,gender"
    init = _initial_from_args(argparse.Namespace(**base, sensitive=" income , sat",
                                                 attributes=None))
    assert init["sensitive"] == "income,sat" and "attributes" not in init["query"]
    # a bad @FILE is the command's one-line refusal, before any server starts
    assert main(["explore", "student", "--sensitive", f"@{tmp_path / 'none.txt'}",
                 "--no-browser"]) == 2


def test_cli_serves_and_stops_cleanly_on_ctrl_c():
    env = dict(os.environ, CI="1", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "quiltpriv.cli", "explore", "student",
                             "--sensitive", "income", "--attributes", "sat", "--records",
                             "10", "--epsilon", "1"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # Ctrl-C's default handling even when pytest runs as a
                            # background job (whose children start with SIGINT ignored)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = proc.stdout.readline()
        assert line.startswith("quiltpriv explorer: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        with urllib.request.urlopen(url, timeout=30) as r:
            assert r.status == 200 and b"quiltpriv explorer" in r.read()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped" in err and "Traceback" not in err
