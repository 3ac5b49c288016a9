"""The part of an audit report a supervisor signs: inputs, verdicts, assumptions, sign-off.

:func:`attestation` gathers, for one plan (and its published release record, if any): when and
with which quiltpriv version the report was made; the SHA-256 of every input (model files, the
model's canonical fingerprint, the plan, the release record, the data as the record identifies
them); the verdicts of ``verify`` (the plan against the model and query; the record end to end)
and, when asked, of the exact ``audit`` (overall, per sensitive attribute, and the least
sufficient scale); the epsilon each sensitive attribute attains at the published scale; the
perturbation test of the chosen quilts (when the audit runs: could a small change of one table
make one infeasible); the ledger's status for this release; the assumptions the guarantee
rests on, in one paragraph; and an empty sign-off block. :func:`attestation_html` renders it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

from quiltpriv._version import __version__
from quiltpriv.mechanisms.apmqm import Plan, canonical_json
from quiltpriv.mechanisms.attained import attained_epsilons
from quiltpriv.model.network import Theta
from quiltpriv.queries.query import CountQuery, LinearQuery, Query, check_query
from quiltpriv.releases.records import utc_timestamp
from quiltpriv.utils.format import escape, fmt_number

__all__ = ["ASSUMPTIONS", "attestation", "attestation_html", "audit_summary"]

#: docs/assumptions.md in one paragraph.
ASSUMPTIONS = (
    "The guarantee is (eps, 0)-distributional attribute privacy [ZOC22, Def. 4, Thm. 4]: for "
    "each sensitive attribute, the release is almost as likely (within a factor e^eps_i, "
    "eps_i <= eps) under any two of the attribute's declared states, so only those states are "
    "secrets, not finer distinctions within them and not the records themselves. It holds "
    "against every adversary whose beliefs are one of Theta's members, and only if the "
    "parameters really follow one of them: outside Theta there is no guarantee. It assumes "
    "records independent given the parameters and a record's attributes independent given "
    "the parameters (columns tied record by record, such as one-hot columns, break it), that "
    "the query reads only its declared attributes and at most its declared number of records, "
    "and that Theta was not learned from the data released (learn it on public or earlier "
    "data). Releases do not compose in general: two releases, each private alone, can "
    "together reveal a secret.")

#: The exact audit runs for count and linear queries up to this many records by default.
AUDIT_RECORDS = 1000


def _sha(x: Any) -> str:
    return hashlib.sha256(canonical_json(x).encode("ascii")).hexdigest()


def audit_summary(theta: Theta, query: Query, plan: Plan, records: int | None,
                   time_limit: float | None) -> dict[str, Any]:
    """The exact audit at the plan's scale: overall, per attribute, and the least scale.

    JSON-ready; ``{"run": False, "why": ...}`` for a query the exact audit does not cover (or
    too many records). ``plan`` must already be verified against ``theta`` and ``query``.
    """
    from quiltpriv.errors import ParameterError
    from quiltpriv.model.network import check_theta
    from quiltpriv.utils.validation import check_scalar

    check_theta(theta)
    check_query(query)
    if not isinstance(plan, Plan):
        raise ParameterError(f"plan must be a quiltpriv Plan, got {type(plan).__name__}")
    if records is not None:
        records = int(check_scalar(records, "records", integer=True, min_val=1))
    if time_limit is not None:
        time_limit = check_scalar(time_limit, "time_limit", min_val=0.0)
    if not isinstance(query, CountQuery | LinearQuery):
        return {"run": False, "why": "the exact audit covers count and linear queries"}
    from quiltpriv.audit.exact import audit
    from quiltpriv.audit.least_scale import audit_per_attribute, least_scale

    n = getattr(query, "records", None) if isinstance(query, CountQuery) else records
    if n is None:
        return {"run": False, "why": "a linear query's audit needs its number of records"}
    if n > AUDIT_RECORDS:
        return {"run": False, "why": f"{n} records: above {AUDIT_RECORDS}, run "
                                     "'quiltpriv audit' on its own"}
    sens = [sp.sensitive for sp in plan.sensitive]
    rec = None if isinstance(query, CountQuery) else n
    overall = audit(theta, query, sens, plan.epsilon, plan.scale, records=rec,
                    time_limit=time_limit)
    per = audit_per_attribute(theta, query, sens, plan.epsilon, plan.scale, records=rec,
                              time_limit=time_limit)
    least = least_scale(theta, query, sens, plan.epsilon, start=plan.scale or None,
                        records=rec, time_limit=time_limit, planned=plan.scale)
    return {"run": True, "verdict": overall.verdict, "loss": overall.loss,
            "loss_lower": overall.loss_lower, "epsilon": plan.epsilon, "scale": plan.scale,
            "per_attribute": {k: {"loss": r.loss, "verdict": r.verdict}
                              for k, r in per.items()},
            "least_scale": least.scale, "least_scale_below": least.below,
            "least_scale_text": least.explain()}


def _fragility_section(theta: Theta, query: Query, plan: Plan,
                       time_limit: float | None) -> dict[str, Any]:
    """The perturbation test of the chosen quilts (:mod:`quiltpriv.mechanisms.fragility`)."""
    from quiltpriv.mechanisms.fragility import fragility

    f = fragility(theta, plan, query, time_limit=time_limit)
    return {"run": True, **f.to_dict(), "text": f.explain()}


def _ledger_section(ledger: str | os.PathLike[str] | None,
                    record: Mapping[str, Any] | None) -> dict[str, Any]:
    if ledger is None:
        return {"given": False, "status": "no ledger given"}
    from quiltpriv.errors import LedgerError
    from quiltpriv.releases.ledger import read

    try:
        entries, head = read(ledger)
    except LedgerError as exc:
        return {"given": True, "status": f"FAILED: {exc}"}
    out = {"given": True, "path": head.path, "entries": head.count, "head": head.hash}
    if record is None:
        return {**out, "status": "hash chain intact"}
    mine = canonical_json(record)
    hits = [e.seq for e in entries if _canonical_or_none(e.record) == mine]
    status = (f"hash chain intact; this release is entry {hits[0]}" if hits else
              "hash chain intact; this release is NOT in the ledger")
    return {**out, "entry": hits[0] if hits else None, "status": status}


def _canonical_or_none(x: Any) -> str | None:
    from quiltpriv.errors import QuiltPrivError

    try:
        return canonical_json(x)
    except QuiltPrivError:
        return None


def attestation(theta: Theta, query: Query, plan: Plan,
                record: Mapping[str, Any] | None = None,
                model_files: list[dict[str, str]] | None = None, *,
                run_audit: bool = False, records: int | None = None,
                ledger: str | os.PathLike[str] | None = None,
                time_limit: float | None = 60.0) -> dict[str, Any]:
    """The signed part of the report (see the module's documentation); JSON-ready.

    ``plan`` must already be verified against ``theta`` and ``query`` (the report does that
    first); ``record`` is checked end to end here.
    """
    from quiltpriv.errors import ParameterError
    from quiltpriv.mechanisms.record_verification import check_record
    from quiltpriv.model.network import check_theta

    check_theta(theta)
    check_query(query)
    if not isinstance(plan, Plan):
        raise ParameterError(f"plan must be a quiltpriv Plan, got {type(plan).__name__}")
    if record is not None and not isinstance(record, Mapping):
        raise ParameterError(f"record must be a release record (a mapping), got "
                             f"{type(record).__name__}")
    rec_verdict = None
    if record is not None:
        rv = check_record(record, theta, query)
        rec_verdict = {"verified": rv.ok, "failure": rv.failure,
                       "checks": [c.to_dict() for c in rv.checks]}
    data = dict(record["data"]) if record is not None and isinstance(
        record.get("data"), Mapping) else None
    return {
        "generated": utc_timestamp(), "quiltpriv_version": __version__,
        "inputs": {
            "model_files": list(model_files or []),
            "model_fingerprint": theta.fingerprint(),
            "plan_sha256": _sha(plan.to_dict()),
            "record_sha256": None if record is None else _sha(record),
            "data": data,
        },
        "verify": {"plan": "VERIFIED against the model and the query", "record": rec_verdict},
        "audit": audit_summary(theta, query, plan, records, time_limit) if run_audit else
        {"run": False, "why": "not asked (report --audit)"},
        "attained_epsilon": {r.sensitive: r.to_dict() for r in attained_epsilons(plan, query)},
        "fragility": _fragility_section(theta, query, plan, time_limit) if run_audit else
        {"run": False, "why": "not asked (report --audit)"},
        "ledger": _ledger_section(ledger, record),
        "assumptions": ASSUMPTIONS,
        "guarantee_assumptions": list(plan.guarantee.assumptions),
        "sign_off": {"reviewer": None, "date": None, "decision": None},
    }


def _row(k: str, v: str) -> str:
    return f"<tr><th>{escape(k)}</th><td>{v}</td></tr>"


def attestation_html(a: Mapping[str, Any]) -> str:
    """The attestation as an HTML section (every string escaped)."""
    keys = ("generated", "quiltpriv_version", "inputs", "verify", "audit", "attained_epsilon",
            "ledger", "assumptions")
    if not isinstance(a, Mapping) or any(k not in a for k in keys):
        from quiltpriv.errors import ParameterError

        raise ParameterError("attestation_html takes the dict attestation(...) returns")
    inp = a["inputs"]
    rows = [_row("generated (UTC)", escape(a["generated"])),
            _row("quiltpriv version", escape(a["quiltpriv_version"])),
            _row("model fingerprint", f"<code class=\"hash\">{escape(inp['model_fingerprint'])}"
                                      "</code>")]
    rows += [_row(f"model file {f['path']}", f"sha256 <code class=\"hash\">{escape(f['sha256'])}"
                                             "</code>") for f in inp["model_files"]]
    rows.append(_row("plan", f"sha256 <code class=\"hash\">{escape(inp['plan_sha256'])}</code>"))
    if inp["record_sha256"]:
        rows.append(_row("release record", f"sha256 <code class=\"hash\">"
                                           f"{escape(inp['record_sha256'])}</code>"))
    if inp["data"]:
        d = inp["data"]
        rows.append(_row("data (as the record states)",
                         escape(f"columns read sha256 {d.get('sha256')}, {d.get('rows')} rows"
                                + (f"; whole table sha256 {d['table_sha256']}"
                                   if d.get("table_sha256") else "")
                                + (f"; data set {d['dataset']!r}" if d.get("dataset") else ""))))
    rows.append(_row("verify: plan", escape(a["verify"]["plan"])))
    rv = a["verify"]["record"]
    if rv is not None:
        rows.append(_row("verify: release record", escape(
            "VERIFIED end to end" if rv["verified"] else f"FAILED: {rv['failure']}")))
    au = a["audit"]
    if au["run"]:
        per = "; ".join(f"{k}: loss {fmt_number(v['loss'])} {v['verdict']}"
                        for k, v in au["per_attribute"].items())
        rows.append(_row("exact audit", escape(
            f"{au['verdict']}: worst-case loss {fmt_number(au['loss'])} against eps "
            f"{fmt_number(au['epsilon'])} at scale {fmt_number(au['scale'], rounding='up')} (per "
            "attribute: "
            f"{per}); "
            f"{au['least_scale_text']}")))
    else:
        rows.append(_row("exact audit", escape(f"not run: {au['why']}")))
    att = "; ".join(f"{k}: {fmt_number(v['epsilon']) if v['epsilon'] != 'inf' else 'inf'}"
                    # the margin flag (an attestation written before it was renamed: "fragile")
                    + (" (near the limit)" if v.get("near_limit", v.get("fragile")) else "")
                    for k, v in a["attained_epsilon"].items())
    rows.append(_row("epsilon attained per attribute", escape(att)))
    fr = a.get("fragility")
    if isinstance(fr, Mapping) and fr.get("run"):
        rows.append(_row("fragility (one table changed)", "<pre>" + escape(fr["text"])
                         + "</pre>"))
    rows.append(_row("ledger", escape(a["ledger"]["status"])))
    sign = ("<table class=\"signoff\"><tr><th>reviewed by</th><td>&nbsp;</td></tr>"
            "<tr><th>date</th><td>&nbsp;</td></tr>"
            "<tr><th>decision</th><td>approve / reject / return for changes</td></tr>"
            "<tr><th>signature</th><td>&nbsp;</td></tr></table>")
    return ("<section id=\"attestation\"><h2>Attestation</h2><table>" + "".join(rows)
            + "</table><h3>Assumptions</h3><p>" + escape(a["assumptions"]) + "</p>"
            "<h3>Sign-off</h3>" + sign + "</section>")
