"""The audit report's model section for a person: the provenance as a definition list, every
conditional table as an HTML table (quiltpriv.reporting.model_tables), all of it escaped."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pytest
import reference as ref

import quiltpriv as qp
from quiltpriv.model.network import Theta
from quiltpriv.reporting import model_tables
from quiltpriv.reporting.model_tables import cpd_tables, cpd_tables_html, provenance_html
from quiltpriv.reporting.report import audit_report
from quiltpriv.utils.format import fmt_number

EVIL = "<script>alert(1)</script>"
HASH = "ab" * 32


class Tables(HTMLParser):
    """The page's ``table.cpd`` tables (node -> rows of cell texts, header rows) and the
    provenance's definition lists (dt texts), with the balance of every tag checked."""

    VOID = {"meta", "br", "link", "img", "input", "hr", "col", "wbr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tables: dict[str, dict[str, list]] = {}
        self.node: str | None = None
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.titles: list[str | None] = []
        self.dts: list[str] = []
        self.dt: list[str] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "cpd" in (a.get("class") or "").split():
            self.node = a["data-node"]
            self.tables[self.node] = {"head": [], "body": [], "titles": []}
        if self.node is not None and tag == "tr":
            self.row = []
        if self.row is not None and tag in ("td", "th"):
            self.cell = []
        if self.node is not None and tag == "span":
            self.tables[self.node]["titles"].append(a.get("title"))
        if tag == "dt":
            self.dt = []
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append("".join(self.cell).strip())
            self.cell = None
        if tag == "tr" and self.row is not None and self.node is not None:
            part = "body" if "tbody" in self.stack else "head"
            self.tables[self.node][part].append(self.row)
            self.row = None
        if tag == "table":
            self.node = None
        if tag == "dt" and self.dt is not None:
            self.dts.append("".join(self.dt))
            self.dt = None

    def handle_data(self, data):
        self.text.append(data)
        if self.cell is not None:
            self.cell.append(data)
        if self.dt is not None:
            self.dt.append(data)


def parse(html: str) -> Tables:
    p = Tables()
    p.feed(html)
    p.close()
    assert p.stack == []
    return p


def ensemble(n: int = 5, seed: int = 2) -> Theta:
    return ref.student_ensemble(n, seed)


PROVENANCE = {
    "source": "learned", "data_sha256": HASH, "data_public": True, "populations": 303,
    "population_column": None,
    "parameters": {
        "income": {"kind": "share", "binning": "quantile", "edges": [0.0, 0.25, 1.0],
                   "states": ["0.2", "0.35"]},
        "sat": {"kind": "share", "binning": "declared", "edges": [0.0, 0.5, 1.0],
                "states": ["0.1", EVIL]},
    },
    "structure": {"method": "hill_climb", "learned_edges": [["income", "sat"],
                                                             ["gender", EVIL]],
                  "required_edges": [], "time_limit": 60.0},
    EVIL: {"note": f"a {EVIL} & more", "deep": {"a": {"b": {"c": {"d": {"e": {"f": [1]}}}}}}},
}


def test_provenance_is_a_definition_list_not_json():
    html = provenance_html(PROVENANCE)
    p = parse(html)
    assert "<script" not in html.lower() and "&lt;script&gt;" in html
    # One term per field, named for a person; nested objects are lists of their own.
    for label in ("source", "data sha256", "data public", "populations", "population column",
                  "parameters", "structure", "method", "learned edges", "required edges",
                  "time limit", EVIL, "note", "deep"):
        assert label in p.dts, label
    text = "".join(p.text)
    assert "income \u2192 sat" in text and f"gender \u2192 {EVIL}" in text
    assert f'<code class="hash">{HASH}</code>' in html
    assert "data public</dt><dd>yes</dd>" in html
    assert "population column</dt><dd><i>none</i></dd>" in html
    assert "0.0, 0.25, 1.0" in text  # a list of numbers: one line
    # The per-parameter bins: one table, one row per parameter, one column per field.
    assert '<table class="prov">' in html and "<th>binning</th>" in html
    # No raw JSON objects, except past the nesting limit, where the rest is JSON text.
    assert '{"' not in html.replace('{&quot;', "").split("deep")[0]
    assert html.count("{&quot;") == 1
    assert provenance_html(None).startswith("<p>Provenance: not recorded")


def test_tables_show_every_entry_and_its_range_over_members():
    theta = ensemble()
    tables = cpd_tables(theta)
    html = cpd_tables_html(theta)
    p = parse(html)
    assert set(p.tables) == set(theta.nodes)
    for t in tables:
        v = t["node"]
        k = theta.cardinality[v]
        every = np.stack([m[v].table.reshape(k, -1) for m in theta.members])
        assert t["values"] == every[0].tolist()
        assert t["min"] == every.min(axis=0).tolist() and t["max"] == every.max(axis=0).tolist()
        shown = p.tables[v]
        # One header row per parent (its name, then each column's state of it).
        assert [row[0] for row in shown["head"]] == (
            [f"{q} \u2192" for q in theta.parents[v]] or [f"{v} \u2193"])
        for j in range(len(theta.parents[v])):
            assert shown["head"][j][1:] == [str(c[j]) for c in t["columns"]]
        # One row per state: the first member's value, then the range over the members.
        assert [row[0] for row in shown["body"]] == [str(s) for s in theta.states[v]]
        for r, row in enumerate(shown["body"]):
            for c, cell in enumerate(row[1:]):
                lo, hi = every[:, r, c].min(), every[:, r, c].max()
                assert cell == fmt_number(every[0, r, c]) + (
                    f"{fmt_number(lo)}\u2013{fmt_number(hi)}" if lo != hi else "")
        # Every digit on hover.
        assert [float(x) for x in shown["titles"]] == every[0].ravel().tolist()
    assert "5 members" in html and "point" in html


def test_report_holds_the_tables_and_the_provenance(tmp_path):
    theta = ensemble().with_provenance(PROVENANCE)
    query = qp.CountQuery(["sat"], 100)
    plan = qp.plan(theta, query, "income", 1.0)
    rep = audit_report(theta, query, plan)
    d = rep.to_dict()
    assert d["model"]["tables"] == json.loads(json.dumps(cpd_tables(theta)))
    assert d["model"]["provenance"]["data_sha256"] == HASH
    html = rep.html
    assert "<script" not in html.lower()
    model = html[html.index('<section id="model">'):]
    p = parse(model[:model.index("</section>") + len("</section>")])
    assert set(p.tables) == set(theta.nodes) and "learned edges" in p.dts
    assert "<h3>Conditional probability tables</h3>" in model


def test_hostile_names_in_tables_are_escaped():
    evil_state = '<img src=x onerror="alert(1)">'
    theta = qp.theta_from_tables([(EVIL, "c")], {EVIL: [evil_state, "hi"], "c": ["0", "1"]},
                                 {EVIL: [0.5, 0.5], "c": [[0.9, 0.2], [0.1, 0.8]]},
                                 names=["<i>member</i>"])
    html = cpd_tables_html(theta)
    assert "<script" not in html and "<img" not in html and "<i>member" not in html
    p = parse(html)
    assert set(p.tables) == {EVIL, "c"}
    assert p.tables["c"]["head"][0] == [f"{EVIL} \u2192", evil_state, "hi"]
    assert p.tables[EVIL]["body"][0][0] == evil_state


def test_large_tables_are_left_out_with_a_note(monkeypatch):
    monkeypatch.setattr(model_tables, "MAX_TABLE_ENTRIES", 20)
    theta = qp.load_model("student")
    tables = cpd_tables(theta)
    sizes = {t["node"]: theta.members[0][t["node"]].table.size for t in tables}
    shown = [t["node"] for t in tables if t["values"] is not None]
    assert sum(sizes[v] for v in shown) <= 20 and len(shown) < len(tables)
    html = cpd_tables_html(theta)
    left_out = next(t for t in tables if t["values"] is None)
    assert f"Not shown: {sizes[left_out['node']]} entries" in html
    assert set(parse(html).tables) == set(shown)


@pytest.mark.parametrize("value,text", [(None, "<i>none</i>"), (True, "yes"), (3, "3"),
                                        (0.1, "0.1"), ([], "<i>none</i>"), ({}, "<i>none</i>")])
def test_scalars_for_a_person(value, text):
    assert f"<dd>{text}</dd>" in provenance_html({"x": value})
