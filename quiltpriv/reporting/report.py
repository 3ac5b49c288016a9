"""Audit reports of an APMQM plan ([ZOC22, Alg. 3]) that people can read.

:func:`audit_report` turns a model, a query, a plan and optionally a release into one
self-contained HTML page (inline CSS and inline SVG only: no script, no font, no network) and a
JSON twin with the same content. Per sensitive attribute it draws the DAG with the chosen
quilt's nearby set ``N``, quilt ``Q`` and remote set ``R`` (Definition 7) and tabulates the
best candidate quilts with their max-influence (Definition 8), sensitivity ``Delta_{A and N} F``
and Laplace scale ``Delta / (eps - e)`` ([ZOC22, Alg. 3]), saying why the chosen one wins.

Every number shown is recomputed with the same exact functions the planner uses
(:func:`quiltpriv.inference.influence.max_influence`,
:func:`quiltpriv.graph.quilts.least_influence_quilt`);
nothing here changes the plan or the noise. Every user-provided string (node names, state
names, member names, file names, query fields) is escaped with :func:`html.escape`.

The Jupyter fragments (``theta_html``, ``plan_html``, ``release_html``, ...) are re-exported
here; they live in :mod:`quiltpriv.reporting.notebook`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from quiltpriv.errors import ModelError, ParameterError, QueryError
from quiltpriv.graph.quilts import (
    Quilt,
    enumerate_quilts,
    least_influence_quilt,
    markov_quilt,
    trivial_quilt,
)
from quiltpriv.inference.influence import fmt_influence
from quiltpriv.mechanisms.apmqm import Plan, SensitivePlan, is_tie, query_mismatch
from quiltpriv.mechanisms.apmqm_release import Release
from quiltpriv.mechanisms.quilt_price import price_order, price_quilt, price_text
from quiltpriv.model.network import Theta, check_theta, model_mismatch
from quiltpriv.model.provenance import provenance_dict
from quiltpriv.queries.query import Query, check_query
from quiltpriv.reporting.drawing import Layout, dag_svg, layered_layout
from quiltpriv.reporting.model_tables import cpd_tables, cpd_tables_html, provenance_html
from quiltpriv.reporting.notebook import (
    comparison_html,
    influence_html,
    plan_html,
    quilt_html,
    release_html,
    sensitive_plan_html,
    theta_html,
)
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import badge as _badge
from quiltpriv.utils.format import escape as _e
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.format import fmt_set as _set
from quiltpriv.utils.format import html_set as _sset
from quiltpriv.utils.format import json_number as _num
from quiltpriv.utils.format import kv_table as _kv_table
from quiltpriv.utils.io import check_output_path, write_text_atomic
from quiltpriv.utils.serialize import jsonable
from quiltpriv.utils.validation import check_epsilon, check_instance

__all__ = [
    "MAX_CANDIDATE_ROWS", "MAX_TARGET_SUBSETS", "REPORT_FORMAT", "REPORT_VERSION",
    "SMALL_NETWORK_NODES", "Candidate", "Report", "audit_report", "candidate_quilts",
    "plan_candidates",
    "comparison_html", "influence_html", "model_files", "plan_html", "quilt_html",
    "release_html", "sensitive_plan_html", "theta_html", "why_chosen",
]

#: Candidate rows shown per sensitive attribute (the chosen quilt is always shown).
MAX_CANDIDATE_ROWS = 15
#: Networks up to this many nodes also list every quilt with ``|Q| <= 2`` as a candidate.
SMALL_NETWORK_NODES = 15
#: Most subsets of the query attributes whose least-influence quilt is listed.
MAX_TARGET_SUBSETS = 1024

REPORT_FORMAT = "quiltpriv-audit-report"
REPORT_VERSION = 1

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;
max-width:1300px;padding:0 1.5em;color:#1a1a1a;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:2px solid #ddd;
padding-bottom:.2em}h3{margin-top:1.3em}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}
.hash{word-break:break-all}
table{border-collapse:collapse;margin:.6em 0}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.chosen td{background:#fff3c4;font-weight:600}
.badge{display:inline-block;padding:.05em .5em;border-radius:.8em;font-size:.85em}
.ok{background:#d8f0d8;color:#1d5e1d}.warn{background:#fde2c8;color:#8a3b00}
.why{background:#f6f8fa;border-left:4px solid #0072b2;padding:.5em .8em}
figure{margin:.5em 0;overflow-x:auto}
svg text{font-family:system-ui,sans-serif;font-size:13px}
.node rect{stroke:#333;stroke-width:1.2}
.role-nearby rect{fill:#f5b041}.role-quilt rect{fill:#5dade2}.role-remote rect{fill:#d5d8dc}
.role-none rect{fill:#ffffff}
.node.sensitive rect{stroke:#c0392b;stroke-width:3.5}
.edge{fill:none;stroke:#555;stroke-width:1.3}
.legend rect{stroke:#333;stroke-width:1}
.wide{overflow-x:auto;max-width:100%}
dl.prov{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.15em 1em;margin:.4em 0}
dl.prov dt{font-weight:600;color:#333}dl.prov dd{margin:0;overflow-wrap:anywhere}
dl.prov dl.prov{margin:0;padding-left:.6em;border-left:2px solid #ddd}
ol.prov{margin:0;padding-left:1.4em}
table.prov th,table.prov td{white-space:nowrap}
table.cpd td{min-width:4.5em}small.range{color:#555;white-space:nowrap}
h4{margin:1em 0 .2em}
@media (max-width:600px){body{padding:0 .6em;margin:1em auto}
dl.prov{grid-template-columns:minmax(0,1fr)}dl.prov dd{margin-left:.8em}}
"""


# -- the report object -------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    """An audit report: the HTML page and its JSON twin (same content).

    Attributes
    ----------
    html : str
        One self-contained HTML document.
    json_text : str
        The JSON twin (compact); :meth:`to_dict` parses it.
    """

    html: str
    json_text: str

    @property
    def data(self) -> dict[str, Any]:
        """The JSON twin as a fresh dictionary."""
        return self.to_dict()

    def to_dict(self) -> dict[str, Any]:
        from quiltpriv.utils.serialize import load_json

        return load_json(self.json_text, "the report's JSON")

    def to_json(self, **kwargs: Any) -> str:
        if not kwargs:
            return self.json_text
        return json.dumps(self.to_dict(), allow_nan=False, ensure_ascii=False, **kwargs)

    def _repr_html_(self) -> str:
        return self.html

    def write(self, path: str | os.PathLike[str]) -> tuple[Path, Path]:
        """Write ``path`` (the HTML) and its ``.json`` twin beside it, each atomically.

        If the HTML cannot be written after the JSON was, the JSON is put back as it was, so
        a failure leaves no new or half-written file.

        Returns
        -------
        (Path, Path)
            The HTML and JSON paths.
        """
        html_path = Path(path)
        if html_path.suffix.lower() == ".json":
            raise ParameterError(f"{html_path}: give the HTML path; the JSON twin is written "
                                 "beside it with the suffix .json")
        json_path = html_path.with_suffix(".json")
        check_output_path(html_path, "report")
        check_output_path(json_path, "report's JSON twin")
        json_text = self.to_json(indent=2) + "\n"
        old_json = json_path.read_text(encoding="utf-8") if json_path.is_file() else None
        write_text_atomic(json_path, json_text)
        try:
            write_text_atomic(html_path, self.html)
        except BaseException:
            if old_json is None:
                json_path.unlink(missing_ok=True)
            else:
                write_text_atomic(json_path, old_json)
            raise
        return html_path, json_path


# -- helpers -------------------------------------------------------------------------------


def _f(x: float | None) -> str:
    return "too large to compute" if x is None else _fmt(float(x))


def _sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise ModelError(f"cannot hash model file {path}: {exc.strerror or exc}") from exc
    return h.hexdigest()


# -- candidate quilts ----------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One candidate quilt of a sensitive attribute with its cost ([ZOC22, Alg. 3]).

    ``price`` says why it costs ``scale`` (:func:`quiltpriv.mechanisms.quilt_price.price_text`,
    the words of the plan's explanation and of ``quiltpriv quilts``).
    """

    quilt: Quilt
    influence: float | None
    sensitivity: float
    scale: float | None
    source: str
    price: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"quilt": list(self.quilt.quilt), "nearby": list(self.quilt.nearby),
                "remote": list(self.quilt.remote), "trivial": self.quilt.is_trivial,
                "influence": _num(self.influence), "sensitivity": _num(self.sensitivity),
                "scale": _num(self.scale), "source": self.source, "price": self.price}


@renamed_keywords(node="sensitive")
def candidate_quilts(theta: Theta, query: Query, sensitive: str, epsilon: float
                     ) -> tuple[list[Candidate], bool]:
    """Candidate quilts of the sensitive attribute ``sensitive`` (``node`` is its deprecated
    name), best first (least scale, then least influence).

    The candidates are the trivial quilt, ``Q = {}``, the least-influence quilt for each
    subset of the query attributes (the planner's exact candidate family) and, on networks of
    at most :data:`SMALL_NETWORK_NODES` nodes, every quilt with ``|Q| <= 2``. A quilt whose
    exact influence is too expensive is listed last with no scale. Returns the list and whether
    the subset family was cut at :data:`MAX_TARGET_SUBSETS`.
    """
    theta = check_theta(theta)
    check_query(query)
    node = theta.check_node(sensitive, "sensitive attribute")
    theta.check_nodes(query.attributes, "query attribute")
    epsilon = check_epsilon(epsilon)
    found: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[Quilt, str]] = {}

    def add(q: Quilt, source: str) -> None:
        found.setdefault((q.quilt, q.nearby), (q, source))

    add(trivial_quilt(theta, node), "trivial quilt (Q = R = {})")
    add(markov_quilt(theta, node, ()), "Q = {}")
    others = [a for a in theta.sort(query.attributes) if a != node]
    truncated = False
    count = 0
    for k in range(len(others) + 1):
        for t in combinations(others, k):
            if count >= MAX_TARGET_SUBSETS:
                truncated = True
                break
            count += 1
            least = least_influence_quilt(theta, node, t)
            add(markov_quilt(theta, node, least), f"least influence keeping {_set(t)} out of N")
        if truncated:
            break
    if len(theta.nodes) <= SMALL_NETWORK_NODES:
        for q in enumerate_quilts(theta, node, max_size=2):
            add(q, f"|Q| = {len(q.quilt)}")
    out: list[Candidate] = []
    for q, source in found.values():
        price = price_quilt(theta, query, q, epsilon)  # the planner's pricer and words
        out.append(Candidate(q, price.influence, price.sensitivity, price.scale, source,
                             price.explain()))

    # The planner's order; the trivial quilt loses ties to any proper quilt.
    out.sort(key=lambda c: price_order(c.scale, c.influence, c.quilt.quilt,
                                       c.quilt.is_trivial, theta))
    return out, truncated


def plan_candidates(theta: Theta, query: Query, sp: SensitivePlan, epsilon: float
                    ) -> tuple[list[Candidate], list[Candidate], Candidate, bool]:
    """The candidate quilts of a plan's sensitive attribute ``sp`` as the report and the
    explorer show them: all of them ranked, the rows shown (the first
    :data:`MAX_CANDIDATE_ROWS`, and the chosen one), the chosen one, and whether the family was
    cut. The plan's quilt is always there: with the plan's own numbers and price when the
    listed family does not hold it."""
    theta = check_theta(theta)
    check_query(query)
    check_instance(sp, SensitivePlan, "sp")
    epsilon = check_epsilon(epsilon)
    chosen_q = sp.partition(theta)
    ranked, truncated = candidate_quilts(theta, query, sp.sensitive, epsilon)
    chosen = next((c for c in ranked if c.quilt == chosen_q), None)
    if chosen is None:
        read = theta.sort(set(query.attributes) & set(chosen_q.nearby))
        chosen = Candidate(chosen_q, sp.influence, sp.sensitivity, sp.scale, "the plan",
                           price_text(sp.sensitive, tuple(read), sp.influence, sp.sensitivity,
                                      sp.scale, epsilon))
        ranked.append(chosen)
    shown = ranked[:MAX_CANDIDATE_ROWS]
    if chosen not in shown:
        shown.append(chosen)
    return ranked, shown, chosen, truncated


def why_chosen(chosen: Candidate, ranked: list[Candidate], optimal: bool) -> str:
    """One sentence on why the chosen quilt wins: least scale, ties by least influence."""
    check_instance(chosen, Candidate, "chosen")
    if not isinstance(ranked, Sequence) or not all(isinstance(c, Candidate) for c in ranked):
        raise ParameterError("ranked must be a list of Candidate (candidate_quilts)")
    rated = [c for c in ranked if c.scale is not None]
    better = [c for c in rated if c.scale is not None and chosen.scale is not None
              and c.scale < chosen.scale and not is_tie(c.scale, chosen.scale)]
    if better:
        b = better[0]
        return (f"The plan's search was {'exact' if optimal else 'stopped early'}, yet candidate "
                f"Q = {_set(b.quilt.quilt)} listed here has a smaller scale "
                f"({_fmt(b.scale or 0, rounding='up')}"
                f" < {_fmt(chosen.scale or 0, rounding='up')}); the plan remains private but not "
                "least-noise.")
    ties = [c for c in rated if c is not chosen and chosen.scale is not None
            and c.scale is not None and is_tie(c.scale, chosen.scale)]
    name = "the trivial quilt" if chosen.quilt.is_trivial else f"Q = {_set(chosen.quilt.quilt)}"
    text = (f"{name} wins because it has the least Laplace scale b = "
            f"{_fmt(chosen.scale or 0, rounding='up')} "
            f"of the {len(rated)} candidates evaluated")
    if ties:
        tie_e = min(c.influence or 0.0 for c in ties)
        n_ties = (f"{len(ties)} other candidate{'s tie' if len(ties) > 1 else ' ties'} "
                  "on scale")
        if chosen.influence is not None and chosen.influence < tie_e and not is_tie(
                chosen.influence, tie_e):
            text += (f"; {n_ties}, and the tie is broken by least influence "
                     f"(e = {_f(chosen.influence)} < {_f(tie_e)})")
        else:
            text += (f"; {n_ties} and influence (e = {_f(chosen.influence)}), and the tie is "
                     "broken by fewest quilt nodes, then network order")
    text += "."
    if optimal:
        text += " The planner proved it least over all quilts of this attribute."
    else:
        text += " The planner did not prove it least over all quilts (see the plan's notes)."
    return text


# -- the report ------------------------------------------------------------------------------


def _cpd_summary(theta: Theta) -> list[dict[str, Any]]:
    rows = []
    for v in theta.nodes:
        rows.append({
            "node": v, "states": [jsonable(s) for s in theta.states[v]],
            "parents": list(theta.parents[v]),
            "members": [{"member": name, "min": float(m[v].table.min()),
                         "max": float(m[v].table.max())}
                        for name, m in zip(theta.names, theta.members, strict=True)],
        })
    return rows


def audit_report(theta: Theta, query: Query, plan: Plan,
                 release: Release | Mapping[str, Any] | None = None,
                 model_files: Iterable[str | os.PathLike[str]] | None = None, *,
                 run_audit: bool = False, records: int | None = None,
                 ledger: str | os.PathLike[str] | None = None) -> Report:
    """Build the audit report of an APMQM plan (and of its release, if given).

    Parameters
    ----------
    theta : Theta
        The model the plan was made for (its fingerprint must match ``plan.model_fingerprint``).
    query : Query
        The planned query (must match ``plan.query``).
    plan : Plan
        The output of :func:`quiltpriv.plan` ([ZOC22, Alg. 3]). A plan read from a file is
        verified against ``theta`` and ``query`` first
        (:func:`quiltpriv.mechanisms.verification.verify_plan`).
    release : Release or release record (mapping), optional
        A release made with ``plan``, or its saved record (``Release.to_dict()``, what
        ``quiltpriv release -o`` writes, or a ledger entry's record): included as published
        (value, scale, sampler, secure, seed, warnings). The report never draws noise.
    model_files : iterable of path, optional
        Files the model was read from; their SHA-256 is recorded next to the fingerprint.
    run_audit : bool
        Run the exact audit (count and linear queries up to
        :data:`quiltpriv.reporting.attestation.AUDIT_RECORDS` records) at the plan's scale:
        overall, per sensitive attribute and the least sufficient scale, in the attestation.
    records : int, optional
        A linear query's number of records (for the audit).
    ledger : path, optional
        A privacy ledger: its chain is verified and the release looked up in it.

    The report ends with an attestation (:mod:`quiltpriv.reporting.attestation`): date and
    version, the hashes of every input, the verdicts of verify (the plan; the release record
    end to end) and of the audit, the epsilon each attribute attains, the ledger's status, the
    assumptions in one paragraph and a sign-off block.

    Raises
    ------
    ModelError, QueryError, ParameterError
        The plan was made for another model or query, does not verify (PlanError), the
        release was made with another plan, or a model file cannot be read.
    """
    theta = check_theta(theta)
    if not isinstance(plan, Plan):
        raise ParameterError(f"plan must be a quiltpriv Plan, got {type(plan).__name__}")
    check_query(query)
    fingerprint = theta.fingerprint()
    mismatch = model_mismatch(plan.model_fingerprint, theta, "the plan")
    if mismatch is not None:
        raise ModelError(mismatch)
    if not plan.verified:  # read from a file or built by hand: recompute what it claims
        from quiltpriv.mechanisms.verification import verify_plan

        plan = verify_plan(plan, theta, query)
    why = query_mismatch(plan, query)
    if why is not None:
        raise QueryError(f"the plan was made for another query: {why}")
    if release is not None:
        if isinstance(release, Release):
            made_with = release.plan.to_dict()
        elif isinstance(release, Mapping):
            made_with = _record_plan(release)
        else:
            raise ParameterError(f"release must be a quiltpriv Release or its record, got "
                                 f"{type(release).__name__}")
        if made_with != plan.to_dict():
            raise ParameterError("the release was made with another plan")
    files = [{"path": str(p), "sha256": _sha256_file(p)} for p in (model_files or ())]
    eps = plan.epsilon
    delta_a = query.sensitivity(query.attributes)
    layout = layered_layout(theta)
    sensitive: dict[str, Any] = {}
    sections: list[str] = []
    for k, sp in enumerate(plan.sensitive):
        chosen_q = sp.partition(theta)
        ranked, shown, chosen, truncated = plan_candidates(theta, query, sp, eps)
        why = why_chosen(chosen, ranked, sp.optimal)
        sensitive[sp.sensitive] = {
            "quilt": list(sp.quilt), "nearby": list(chosen_q.nearby),
            "remote": list(chosen_q.remote),
            "influence": _num(sp.influence), "sensitivity": _num(sp.sensitivity),
            "scale": _num(sp.scale), "optimal": sp.optimal, "explanation": sp.explanation,
            "influence_member": sp.influence_member,
            "influence_pair": jsonable(sp.influence_pair),
            "why": why, "candidates_evaluated": len(ranked),
            "candidate_family_truncated": truncated,
            "candidates": [dict(c.to_dict(), rank=ranked.index(c) + 1, chosen=c is chosen)
                           for c in shown],
        }
        sections.append(_sensitive_section(theta, sp, chosen_q, shown, chosen, why,
                                           len(ranked), truncated, f"dag-{k}", layout))
    data: dict[str, Any] = {
        "format": REPORT_FORMAT, "version": REPORT_VERSION, "mechanism": plan.mechanism,
        "epsilon": eps, "scale": _num(plan.scale), "optimal": plan.optimal,
        "model": {
            "fingerprint": fingerprint, "files": files, "theta_size": len(theta),
            "members": list(theta.names), "nodes": list(theta.nodes),
            "edges": [list(e) for e in theta.edges],
            "layers": {v: layout.layer[v] for v in theta.nodes},
            "cpds": _cpd_summary(theta), "tables": cpd_tables(theta),
            "provenance": provenance_dict(theta),
        },
        "query": jsonable(dict(plan.query)), "delta_A": _num(delta_a),
        "sensitive": sensitive, "notes": list(plan.notes), "plan": jsonable(plan.to_dict()),
        "release": None if release is None else _release_record(release),
    }
    # What the release does not protect (no noise; Theta learned from private data), in the
    # words of the plan and of the release record.
    data["warnings"] = list(dict.fromkeys([*plan.warnings, *(
        (data["release"] or {}).get("warnings") or [])]))
    from quiltpriv.reporting.attestation import attestation, attestation_html

    full_record = None if release is None else (
        release.to_record().to_dict() if isinstance(release, Release)
        else jsonable(dict(release)))
    data["attestation"] = jsonable(attestation(
        theta, query, plan, full_record, files, run_audit=run_audit, records=records,
        ledger=ledger))
    page = _page(theta, data, sections, release, attestation_html(data["attestation"]))
    # Serialised now so that a value JSON cannot hold fails here, before anything is written.
    return Report(page, json.dumps(data, allow_nan=False, ensure_ascii=False))


def _record_plan(record: Mapping[str, Any]) -> Any:
    """The plan a saved APMQM release record holds, refusing any other record."""
    from quiltpriv.releases.records import READABLE_FORMATS

    if record.get("format") not in READABLE_FORMATS:
        raise ParameterError(f"not a release record (format {record.get('format')!r}; "
                             f"expected {' or '.join(READABLE_FORMATS)})")
    if record.get("mechanism", "APMQM") != "APMQM" or not isinstance(record.get("plan"),
                                                                     Mapping):
        raise ParameterError(f"the audit report covers APMQM releases; this record is a "
                             f"{record.get('mechanism')!r} release")
    return dict(record["plan"])


def _release_record(r: Release | Mapping[str, Any]) -> dict[str, Any]:
    d = jsonable(r.to_dict() if isinstance(r, Release) else dict(r))
    d.pop("plan", None)  # the plan is in the report already
    return d


def _sensitive_section(theta: Theta, sp: Any, chosen_q: Quilt, shown: list[Candidate],
                       chosen: Candidate, why: str, evaluated: int, truncated: bool,
                       svg_id: str, layout: Layout) -> str:
    rows = []
    for c in shown:
        cls = ' class="chosen"' if c is chosen else ""
        q = "(trivial) {}" if c.quilt.is_trivial else _set(c.quilt.quilt)
        rows.append(
            f'<tr{cls} data-quilt="{_e(json.dumps(list(c.quilt.quilt), ensure_ascii=False))}">'
            f"<td>{_e(q)}</td><td class=\"num\">{len(c.quilt.nearby)}</td>"
            f"<td>{_sset(c.quilt.nearby)}</td>"
            f'<td class="num">{_e(_f(c.influence))}</td>'
            f'<td class="num">{_e(_fmt(c.sensitivity))}</td>'
            f'<td class="num">{_e(_f(c.scale))}</td><td>{_e(c.source)}</td></tr>')
    more = "" if evaluated <= len(shown) else (
        f"<p>{len(shown)} of {evaluated} candidates shown (the best by scale, then influence)."
        "</p>")
    if truncated:
        more += (f"<p>The least-influence family was listed for the first "
                 f"{MAX_TARGET_SUBSETS} subsets of the query attributes only.</p>")
    where = ""
    if sp.influence_member is not None and sp.influence_pair is not None:
        a, b = sp.influence_pair
        where = (f" (attained under member {_e(sp.influence_member)}, "
                 f"\u03c6 = {_e(a)} vs {_e(b)})")
    facts = _kv_table([
        ("quilt Q", _sset(sp.quilt)), ("nearby N", _sset(chosen_q.nearby)),
        ("remote R", _sset(chosen_q.remote)),
        ("max-influence e(Q | i)", _e(fmt_influence(sp.influence)) + where),
        ("\u0394<sub>A\u2229N</sub> F", _e(_fmt(sp.sensitivity))),
        ("Laplace scale b<sub>i</sub>", _e(_fmt(sp.scale, rounding='up'))),
        ("optimal", _badge(sp.optimal, "proven least over all quilts", "not proven")),
    ])
    return (
        f'<section class="sensitive" data-node="{_e(sp.sensitive)}">'
        f"<h2>Sensitive attribute <code>{_e(sp.sensitive)}</code></h2>"
        f"<figure>{dag_svg(theta, chosen_q, svg_id=svg_id, layout=layout)}"
        "<figcaption>The chosen Markov quilt: Q d-separates the sensitive attribute (red "
        "outline) from R; N is everything still d-connected to it.</figcaption></figure>"
        f"{facts}<p>{_e(sp.explanation)}</p>"
        "<h3>Candidate quilts</h3>"
        '<table class="candidates"><thead><tr><th>Q</th><th>|N|</th><th>N</th>'
        "<th>influence e(Q|i)</th><th>\u0394<sub>A\u2229N</sub> F</th><th>scale</th>"
        f"<th>source</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"
        f'<p class="why">{_e(why)}</p></section>')


def _page(theta: Theta, data: dict[str, Any], sections: list[str],
          release: Release | Mapping[str, Any] | None, tail: str = "") -> str:
    m = data["model"]
    files = "".join(f"<li><code>{_e(f['path'])}</code> sha256 "
                    f"<code class=\"hash\">{_e(f['sha256'])}</code></li>" for f in m["files"])
    files_html = f"<ul>{files}</ul>" if files else "<p>No model files recorded.</p>"
    cpd_rows = []
    for c in m["cpds"]:
        mm = "<br>".join(f"{_e(x['member'])}: {_fmt(x['min'])} \u2013 {_fmt(x['max'])}"
                         for x in c["members"])
        states = ", ".join(_e(s) for s in c["states"])
        cpd_rows.append(f"<tr><td><code>{_e(c['node'])}</code></td>"
                        f'<td class="num">{len(c["states"])}</td><td>{states}</td>'
                        f"<td>{_sset(c['parents'])}</td><td>{mm}</td></tr>")
    query_rows = [(_e(k), f"<code>{_e(json.dumps(v, ensure_ascii=False))}</code>")
                  for k, v in data["query"].items()]
    query_rows.append(("\u0394<sub>A</sub> F (all attributes nearby)",
                       _e(_fmt(float(data["delta_A"])) if not isinstance(data["delta_A"], str)
                          else data["delta_A"])))
    notes = "".join(f"<li>{_e(n)}</li>" for n in data["notes"])
    notes += "".join(f"<li><b>warning:</b> {_e(w)}</li>" for w in data["warnings"])
    summary = _kv_table([
        ("mechanism", "APMQM ([ZOC22, Alg. 3])"),
        ("\u03b5", _e(f"{_fmt(data['epsilon'])}")),
        ("overall Laplace scale b", _e(_fmt(float(data["scale"])) if not isinstance(
            data["scale"], str) else data["scale"])),
        ("optimality", _badge(data["optimal"], "exact: least scale over all quilts",
                              "not proven (a limit was hit; the plan is still private)")),
        ("sensitive attributes", _e(", ".join(data["sensitive"]))),
        ("model fingerprint", f'<code class="hash">{_e(m["fingerprint"])}</code>'),
        ("|\u0398|", f"{m['theta_size']} ({_e(', '.join(m['members']))})"),
    ])
    rel = ""
    if release is not None:
        r = data["release"]
        value = r["value"]
        rel = ("<section id=\"release\"><h2>Release</h2>" + _kv_table([
            ("released value", _e(json.dumps(value))), ("noise scale used", _e(r["scale"])),
            ("granularity", _e(r["granularity"])), ("sampler", _e(r["sampler"])),
            ("secure randomness", _badge(bool(r["secure"]), "yes (OS CSPRNG)",
                                         "NO: seeded, for experiments only")),
            ("seed", _e("none" if r["seed"] is None else r["seed"])),
        ]) + "</section>")
    edges = ", ".join(f"{_e(a)} \u2192 {_e(b)}" for a, b in m["edges"]) or "none"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>quiltpriv audit report</title><style>{_CSS}</style></head><body>"
        "<h1>APMQM audit report</h1>"
        "<p>Attribute-Private Markov Quilt Mechanism: for each sensitive attribute the Markov "
        "quilt of least Laplace scale \u0394<sub>A\u2229N</sub>F / (\u03b5 \u2212 e(Q|i)), and "
        "the overall scale, the maximum over sensitive attributes.</p>"
        f'<section id="summary"><h2>Summary</h2>{summary}'
        f"{'<ul>' + notes + '</ul>' if notes else ''}</section>"
        f'<section id="query"><h2>Query</h2>{_kv_table(query_rows)}</section>'
        + "".join(sections) + rel +
        f'<section id="model"><h2>Model</h2><p>{len(m["nodes"])} nodes, {len(m["edges"])} '
        f"edges, |\u0398| = {m['theta_size']}. Content hash (Theta.fingerprint, SHA-256 of "
        f'structure, states and every member\'s CPDs): <code class="hash">'
        f'{_e(m["fingerprint"])}</code></p>{files_html}{provenance_html(m["provenance"])}'
        f"<p>Edges: {edges}</p>"
        '<table class="cpds"><thead><tr><th>node</th><th>states</th><th>state values</th>'
        "<th>parents</th><th>CPD min \u2013 max probability per member</th></tr></thead>"
        f"<tbody>{''.join(cpd_rows)}</tbody></table>"
        f"{cpd_tables_html(theta)}</section>" + tail +
        "<footer><p>Generated by quiltpriv. The JSON twin of this page holds the same "
        "content.</p></footer></body></html>\n")


def model_files(specs: Sequence[str]) -> list[str]:
    """The specs that are files on disk (``file.py:function`` counts as ``file.py``)."""
    if isinstance(specs, str) or not isinstance(specs, Sequence) or not all(
            isinstance(s, str) for s in specs):
        raise ParameterError("specs must be a list of model specs (texts)")
    out = []
    for s in specs:
        base = s
        if not Path(s).exists() and ":" in s:
            base = s.rpartition(":")[0]
        if Path(base).is_file():
            out.append(base)
    return out
