"""Audit reports (quiltpriv.reporting.report): HTML structure, JSON twin, escaping, atomic writes,
CLI."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
import quiltpriv.reporting.report as report_module
from quiltpriv.cli.report import register_cli
from quiltpriv.errors import ModelError, ParameterError, QueryError, QuiltPrivError
from quiltpriv.mechanisms.apmqm import Plan
from quiltpriv.reporting.report import (
    audit_report,
    layered_layout,
    plan_html,
    release_html,
    theta_html,
)

VOID = {"meta", "br", "link", "img", "input", "hr", "col", "area", "base", "wbr"}
SVG_SELF_CLOSING = {"rect", "path", "circle", "line"}
STUDENT_BIF = Path(__file__).resolve().parents[2] / "models" / "student.bif"


class Collector(HTMLParser):
    """Collects the report's SVGs, node groups, candidate rows; checks tags are balanced."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.svgs: list[dict] = []
        self.rows: list[list] = []  # per candidate table: [(class, data-quilt, [cells])]
        self.in_candidates = False
        self.cell: list[str] | None = None
        self.row: dict | None = None
        self.errors: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "svg":
            self.svgs.append({"id": a.get("id"), "nodes": {}, "rects": 0, "markers": 0,
                              "edges": 0})
        if self.svgs and "svg" in self.stack + [tag]:
            svg = self.svgs[-1]
            if tag == "g" and "node" in cls:
                svg["nodes"][a["data-node"]] = set(cls)
            if tag == "rect" and self.stack and self.stack[-1] == "g" and self._in_node:
                svg["rects"] += 1
            if tag == "path" and "edge" in cls:
                svg["edges"] += 1
                assert a["marker-end"].startswith("url(#")
            if tag == "marker":
                svg["markers"] += 1
        self._in_node = tag == "g" and "node" in cls or (
            getattr(self, "_in_node", False) and tag != "g")
        if tag == "table" and "candidates" in cls:
            self.in_candidates = True
            self.rows.append([])
        if self.in_candidates and tag == "tr" and "data-quilt" in a:
            self.row = {"class": cls, "quilt": json.loads(a["data-quilt"]), "cells": []}
        if self.row is not None and tag == "td":
            self.cell = []
        if tag not in VOID and not (tag in SVG_SELF_CLOSING and "svg" in self.stack):
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID or (tag in SVG_SELF_CLOSING and "svg" in self.stack
                           and (not self.stack or self.stack[-1] != tag)):
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else None}")
            return
        self.stack.pop()
        if tag == "g":
            self._in_node = False
        if tag == "td" and self.row is not None and self.cell is not None:
            self.row["cells"].append("".join(self.cell).strip())
            self.cell = None
        if tag == "tr" and self.row is not None:
            self.rows[-1].append(self.row)
            self.row = None
        if tag == "table":
            self.in_candidates = False

    def handle_data(self, data):
        self.text.append(data)
        if self.cell is not None:
            self.cell.append(data)


def parse(text: str) -> Collector:
    c = Collector()
    c.feed(text)
    c.close()
    assert not c.errors, c.errors[:5]
    assert c.stack == [], c.stack
    return c


@pytest.fixture(scope="module")
def student_plan(student_theta):
    theta = student_theta
    query = qp.LinearQuery({"income": 1.0, "weight": 1.0},
                           {"income": (0.0, 1.0), "weight": (0.0, 1.0)})
    plan = qp.plan(theta, query, ["weight", "income"], 1.0)
    return theta, query, plan


@pytest.fixture(scope="module")
def student_report(student_plan):
    theta, query, plan = student_plan
    return audit_report(theta, query, plan)


def brute_force_scales(theta, query, node, eps):
    """Scale of every quilt of ``node`` ([ZOC22, Alg. 3]'s objective), from the definition."""
    out = {}
    quilts = list(qp.enumerate_quilts(theta, node)) + [qp.trivial_quilt(theta, node)]
    for q in quilts:
        e = qp.max_influence(theta, node, q.quilt).value
        d = query.sensitivity(set(query.attributes) & set(q.nearby))
        s = (0.0 if e <= eps else math.inf) if d == 0 else (d / (eps - e) if e < eps else math.inf)
        out[(q.quilt, q.nearby)] = (s, e, d)
    return out


def test_html_structure_svg_per_sensitive_attribute(student_plan, student_report):
    theta, _, plan = student_plan
    c = parse(student_report.html)
    assert len(c.svgs) == len(plan.sensitive) == 2
    for svg, sp in zip(c.svgs, plan.sensitive, strict=True):
        assert set(svg["nodes"]) == set(theta.nodes)
        assert svg["rects"] == len(theta.nodes) == 5
        assert svg["edges"] == len(theta.edges) == 5
        assert svg["markers"] == 1
        for v, cls in svg["nodes"].items():
            role = ("role-quilt" if v in sp.quilt else "role-nearby" if v in sp.nearby
                    else "role-remote")
            assert role in cls
            assert sum(r in cls for r in ("role-quilt", "role-nearby", "role-remote")) == 1
            assert ("sensitive" in cls) == (v == sp.sensitive)
    # The plan these drawings must match (student:theta, linear query on income + weight):
    assert plan["weight"].quilt == ("income",) and plan["weight"].remote == ("sat",)
    assert plan["income"].quilt == ("weight",) and plan["income"].remote == ()
    ids = [s["id"] for s in c.svgs]
    assert len(set(ids)) == len(ids)  # marker ids stay unique in one document


def test_no_network_and_no_script(student_report):
    low = student_report.html.lower()
    assert "http" not in low
    assert "<script" not in low
    assert "@import" not in low and "url(" not in low.replace("url(#", "")
    assert "<link" not in low and "<img" not in low


def test_candidate_table_rows_values_and_highlight(student_plan, student_report):
    theta, query, plan = student_plan
    c = parse(student_report.html)
    data = student_report.to_dict()
    assert len(c.rows) == 2
    for rows, sp in zip(c.rows, plan.sensitive, strict=True):
        # Student (5 nodes, fully connected a priori): the |Q| <= 2 family gives 1 + 4 + 6 = 11
        # quilts; Q = {} is the trivial quilt and the least-influence quilts (subsets of the
        # other query attribute) are in that family, so 11 distinct candidates, all shown.
        assert len(rows) == 11
        assert data["sensitive"][sp.sensitive]["candidates_evaluated"] == 11
        chosen = [r for r in rows if "chosen" in r["class"]]
        assert len(chosen) == 1 and tuple(chosen[0]["quilt"]) == sp.quilt
        assert rows[0] is chosen[0]  # exact plan: the chosen quilt heads the table
        ref = brute_force_scales(theta, query, sp.sensitive, plan.epsilon)
        best = min(s for s, _, _ in ref.values())
        assert sp.scale == pytest.approx(best, rel=1e-12)
        cands = data["sensitive"][sp.sensitive]["candidates"]
        keys = []
        for row, cand in zip(rows, cands, strict=True):
            assert row["quilt"] == cand["quilt"]
            s, e, d = ref[(tuple(cand["quilt"]), tuple(cand["nearby"]))]
            assert cand["influence"] == pytest.approx(e, rel=1e-12, abs=1e-15)
            assert cand["sensitivity"] == d
            # JSON has no infinity: an infeasible quilt (e >= eps) has scale "inf".
            assert float(cand["scale"]) == pytest.approx(s, rel=1e-12)
            assert float(row["cells"][5]) == pytest.approx(s, rel=1e-5)  # shown to 6 digits
            keys.append((float(cand["scale"]), float(cand["influence"])))
        # Best first: scale, then influence, each compared with the planner's tie tolerance
        # (mathematically equal influences of different quilts differ by a few ulps).
        for (s1, e1), (s2, e2) in zip(keys, keys[1:], strict=False):
            assert s1 <= s2 or math.isclose(s1, s2, rel_tol=1e-12), keys
            if math.isclose(s1, s2, rel_tol=1e-12):
                assert e1 <= e2 or math.isclose(e1, e2, rel_tol=1e-12), keys
    # Oracle numbers for the student model (also printed by examples/student_report.py).
    assert plan["weight"].scale == pytest.approx(1.10293, rel=1e-5)
    assert plan["income"].scale == pytest.approx(1.10854, rel=1e-5)
    assert plan.scale == plan["income"].scale
    why = data["sensitive"]["weight"]["why"]
    # {income, sat} ties {income} on scale and influence (sat is remote): fewest nodes wins.
    assert "least Laplace scale" in why and "fewest quilt nodes" in why
    assert why in student_report.html.replace("&#x27;", "'")


def test_json_twin_round_trip_matches_plan(student_plan, student_report):
    theta, query, plan = student_plan
    d = student_report.to_dict()
    assert json.loads(student_report.to_json()) == d
    assert json.loads(json.dumps(d)) == d
    assert Plan.from_dict(d["plan"]) == plan
    assert d["epsilon"] == plan.epsilon and d["scale"] == plan.scale
    assert d["optimal"] is True
    assert d["model"]["fingerprint"] == theta.fingerprint() == plan.model_fingerprint
    assert d["model"]["theta_size"] == 2
    assert d["model"]["members"] == ["student", "student-strong-gender-income"]
    assert d["model"]["nodes"] == list(theta.nodes)
    assert d["delta_A"] == 2.0  # two attributes with range 1 and weight 1
    assert d["release"] is None
    for sp in plan.sensitive:
        s = d["sensitive"][sp.sensitive]
        assert (s["quilt"], s["nearby"], s["remote"]) == (
            list(sp.quilt), list(sp.nearby), list(sp.remote))
        assert s["scale"] == sp.scale and s["influence"] == sp.influence
    # CPD summary: min/max per member straight from the tables.
    cpd = {c["node"]: c for c in d["model"]["cpds"]}
    assert cpd["weight"]["parents"] == ["gender", "height"]
    assert cpd["income"]["states"] == ["0.2", "0.35", "0.5"]
    strong = cpd["income"]["members"][1]
    assert (strong["min"], strong["max"]) == (pytest.approx(0.2), pytest.approx(0.5))
    # Every JSON string value that names a node appears (escaped) in the HTML too.
    for v in theta.nodes:
        assert f"<code>{v}</code>" in student_report.html


def hostile_theta():
    evil = "<script>alert(1)</script>"
    other = 'Größe "&\' →'
    states = {evil: ["<b>lo</b>", "hi"], other: ["0", "1"], "c": ["0", "1"]}
    cpds = {evil: [0.5, 0.5], other: [[0.9, 0.2], [0.1, 0.8]], "c": [[0.7, 0.4], [0.3, 0.6]]}
    theta = qp.theta_from_tables([(evil, other), (other, "c")], states, cpds,
                                 names=["<i>member</i>"])
    return theta, evil, other


def test_hostile_names_are_escaped(tmp_path):
    theta, evil, other = hostile_theta()
    query = qp.CountQuery(["c"], records=10)
    plan = qp.plan(theta, query, [evil], 1.0)
    rep = audit_report(theta, query, plan, model_files=[])
    text = rep.html
    assert "<script" not in text.lower() and "<b>lo" not in text and "<i>member" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    c = parse(text)
    assert set(c.svgs[0]["nodes"]) == {evil, other, "c"}  # attributes unescape to the name
    assert "sensitive" in c.svgs[0]["nodes"][evil]
    assert rep.to_dict()["model"]["nodes"] == list(theta.nodes)
    for frag in (theta_html(theta), plan_html(plan)):
        assert "<script" not in frag.lower() and "<i>member" not in frag
        parse(frag)


def test_write_both_files_atomically(student_report, tmp_path, monkeypatch):
    html_path, json_path = student_report.write(tmp_path / "report.html")
    assert html_path.read_text(encoding="utf-8") == student_report.html
    assert json.loads(json_path.read_text(encoding="utf-8")) == student_report.to_dict()
    assert json_path == tmp_path / "report.json"
    # The HTML target is a folder: refused before anything is written.
    (tmp_path / "bad.html").mkdir()
    with pytest.raises(ParameterError, match="is a folder"):
        student_report.write(tmp_path / "bad.html")
    assert not (tmp_path / "bad.json").exists()
    # The HTML write fails after the JSON was written: the JSON is taken back ...
    real = report_module.write_text_atomic

    def failing(path, text):
        if str(path).endswith(".html"):
            raise OSError(28, "No space left on device", str(path))
        real(path, text)

    monkeypatch.setattr(report_module, "write_text_atomic", failing)
    with pytest.raises(OSError):
        student_report.write(tmp_path / "full.html")
    assert not (tmp_path / "full.json").exists()
    # ... and an existing JSON twin is put back as it was.
    (tmp_path / "full.json").write_text("old", encoding="utf-8")
    with pytest.raises(OSError):
        student_report.write(tmp_path / "full.html")
    assert (tmp_path / "full.json").read_text(encoding="utf-8") == "old"
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.html", "full.json",
                                                           "report.html", "report.json"]
    with pytest.raises(ParameterError, match="does not exist"):
        student_report.write(tmp_path / "missing" / "r.html")
    with pytest.raises(ParameterError, match="HTML path"):
        student_report.write(tmp_path / "r.json")
    assert not (tmp_path / "missing").exists()


def test_release_record_and_model_file_hash(tmp_path):
    theta = qp.load_model(STUDENT_BIF)
    query = qp.LinearQuery({"income": 1.0, "weight": 1.0},
                           {"income": (0.0, 1.0), "weight": (0.0, 1.0)})
    plan = qp.plan(theta, query, ["weight"], 1.0)
    data = pd.DataFrame({"income": [0.2, 0.5, 0.35], "weight": [0.3, 0.7, 0.5]})
    rel = qp.release(plan, query, data, seed=11)
    rep = audit_report(theta, query, plan, rel, model_files=[STUDENT_BIF])
    d = rep.to_dict()
    assert d["model"]["files"] == [{"path": str(STUDENT_BIF), "sha256": hashlib.sha256(
        STUDENT_BIF.read_bytes()).hexdigest()}]
    r = d["release"]
    assert r["value"] == rel.value and r["seed"] == 11 and r["secure"] is False
    assert r["sampler"] == rel.sampler and r["scale"] == rel.scale
    assert "NO: seeded, for experiments only" in rep.html
    assert json.dumps(rel.value) in rep.html
    frag = release_html(rel)
    assert "NOT secure" in frag and "seed 11" in frag
    parse(frag)
    with pytest.raises(ModelError, match="cannot hash"):
        audit_report(theta, query, plan, model_files=[tmp_path / "nope.bif"])


def test_mismatched_inputs_are_refused(student_plan):
    theta, query, plan = student_plan
    with pytest.raises(QueryError, match="another query"):
        audit_report(theta, qp.LinearQuery({"income": 2.0}, {"income": (0.0, 1.0)}), plan)
    with pytest.raises(ModelError, match="another model"):
        audit_report(qp.load_model("student"), query, plan)
    other = qp.plan(theta, query, ["weight"], 2.0)
    data = pd.DataFrame({"income": [0.2], "weight": [0.3]})
    with pytest.raises(ParameterError, match="another plan"):
        audit_report(theta, query, plan, qp.release(other, query, data, seed=1))


def test_layered_layout_is_deterministic_and_downward():
    theta = qp.load_model("student")
    lay = layered_layout(theta)
    assert lay == layered_layout(theta)
    assert dict(lay.layer) == {"gender": 0, "income": 1, "height": 1, "sat": 2, "weight": 2}
    for p, c in theta.edges:
        assert lay.y[c] > lay.y[p]
    # Boxes in one layer never overlap and lie on the canvas.
    rows: dict[int, list[str]] = {}
    for v in theta.nodes:
        rows.setdefault(lay.layer[v], []).append(v)
    for row in rows.values():
        row.sort(key=lay.x.__getitem__)
        for a, b in zip(row, row[1:], strict=False):
            assert lay.x[a] + lay.width[a] / 2 < lay.x[b] - lay.width[b] / 2
        assert all(0 <= lay.x[v] - lay.width[v] / 2 and lay.x[v] + lay.width[v] / 2
                   <= lay.canvas[0] for v in row)
    # Random DAGs: longest-path layers (1 + deepest parent), all edges point down.
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(2, 12))
        names = [f"v{k}" for k in range(n)]
        edges = [(names[a], names[b]) for a in range(n) for b in range(a + 1, n)
                 if rng.random() < 0.3]
        states = {v: ["0", "1"] for v in names}
        parents = {v: [a for a, b in edges if b == v] for v in names}
        cpds = {v: np.full((2,) + (2,) * len(parents[v]), 0.5) for v in names}
        t = qp.theta_from_tables(edges, states, cpds)
        lay = layered_layout(t)
        for v in t.nodes:
            ps = t.parents[v]
            assert lay.layer[v] == (1 + max(lay.layer[p] for p in ps) if ps else 0)


def _cli(argv):
    ap = argparse.ArgumentParser()
    register_cli(ap.add_subparsers())
    args = ap.parse_args(argv)
    return args.func(args)


def test_cli_writes_report_and_twin(tmp_path, capsys):
    out = tmp_path / "audit.html"
    rc = _cli(["report", str(STUDENT_BIF), "--sensitive", "weight,income", "--query", "linear",
               "--weights", "income=1,weight=1", "--bounds", "income=0:1,weight=0:1",
               "--epsilon", "1", "-o", str(out)])
    assert rc == 0
    assert "audit.json" in capsys.readouterr().out
    d = json.loads((tmp_path / "audit.json").read_text(encoding="utf-8"))
    theta = qp.load_model(STUDENT_BIF)
    query = qp.LinearQuery({"income": 1.0, "weight": 1.0},
                           {"income": (0.0, 1.0), "weight": (0.0, 1.0)})
    assert Plan.from_dict(d["plan"]) == qp.plan(theta, query, ["weight", "income"], 1.0)
    assert d["model"]["files"][0]["sha256"] == hashlib.sha256(
        STUDENT_BIF.read_bytes()).hexdigest()
    c = parse(out.read_text(encoding="utf-8"))
    assert len(c.svgs) == 2


def test_cli_errors_leave_no_files(tmp_path):
    out = tmp_path / "r.html"
    base = [str(STUDENT_BIF), "--query", "count", "--attributes", "sat", "--records", "10"]
    with pytest.raises(QuiltPrivError, match="nosuch"):
        _cli(["report", *base, "--sensitive", "nosuch", "--epsilon", "1", "-o", str(out)])
    with pytest.raises(ParameterError, match="HTML path"):
        _cli(["report", *base, "--sensitive", "income", "--epsilon", "1",
              "-o", str(tmp_path / "r.json")])
    with pytest.raises(ParameterError, match="does not exist"):
        _cli(["report", *base, "--sensitive", "income", "--epsilon", "1",
              "-o", str(tmp_path / "no" / "r.html")])
    # Options are checked as they are parsed (argparse exits with status 2).
    with pytest.raises(SystemExit, match="2"):
        _cli(["report", *base, "--sensitive", "income", "--epsilon", "-0.5", "-o", str(out)])
    assert list(tmp_path.iterdir()) == []
