"""What the explorer computes for the page: the plan, the candidate quilts, the comparison.

Every number comes from the functions the command line uses: :func:`quiltpriv.plan` (with
the request's time budget), :func:`quiltpriv.reporting.report.candidate_quilts` and
:func:`~quiltpriv.reporting.report.why_chosen` (the audit report's candidate table),
:func:`quiltpriv.mechanisms.compare.compare` and :func:`quiltpriv.reporting.report.audit_report`.
Nothing here changes a plan or a noise scale.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quiltpriv.errors import ParameterError
from quiltpriv.explorer.state import ModelState, PlanRequest
from quiltpriv.mechanisms.apmqm import plan
from quiltpriv.model.network import Theta
from quiltpriv.reporting.drawing import dag_svg, layered_layout
from quiltpriv.reporting.report import audit_report, plan_candidates, why_chosen
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import json_number as _num
from quiltpriv.utils.progress import observe
from quiltpriv.utils.serialize import jsonable

#: ``progress(phase, done, total)``; ``check()`` raises the job's JobCancelled once cancelled.
Progress = Callable[[str, int, int], None]


def _candidates(theta: Theta, req: PlanRequest, sp: Any) -> dict[str, Any]:
    """The audit report's candidate table for one sensitive attribute, as JSON."""
    return candidate_table(theta, req.query, sp, req.epsilon)


def candidate_table(theta: Theta, query: Any, sp: Any, epsilon: float) -> dict[str, Any]:
    """The audit report's candidate table for ``sp`` (a plan's sensitive attribute) as JSON,
    its chosen quilt marked (and added with the plan's own numbers when not listed)."""
    ranked, shown, chosen, truncated = plan_candidates(theta, query, sp, epsilon)
    return {
        "why": why_chosen(chosen, ranked, sp.optimal), "evaluated": len(ranked),
        "truncated": truncated,
        "rows": [dict(c.to_dict(), rank=ranked.index(c) + 1, chosen=c is chosen)
                 for c in shown],
    }


@renamed_keywords(model="theta_name")
def plan_payload(theta: Theta, req: PlanRequest, theta_name: str, progress: Progress,
                 check: Callable[[], None],
                 cancel: threading.Event | None = None) -> dict[str, Any]:
    """Plan ``req`` on ``theta`` and gather what the page shows (``theta_name``, the network's
    name or file for the equivalent command line; ``model`` is its deprecated name).

    The plan gets the request's time budget; the candidate tables and the comparison are made
    only while that budget lasts (the page says which were skipped). ``check`` is called
    between phases and raises when the job was cancelled; ``cancel`` (the job's event) stops
    the planner's search cooperatively.
    """
    start = time.monotonic()
    deadline = start + req.time_limit
    with observe(lambda done, total: progress("planning", done, total)):
        p = plan(theta, req.query, req.sensitive, req.epsilon, time_limit=req.time_limit,
                 progress=True, cancel=cancel)
    check()
    layout = layered_layout(theta)
    notes: list[str] = []
    sections = []
    for k, sp in enumerate(p.sensitive):
        progress("candidate quilts", k, len(p.sensitive))
        check()
        cands = None
        if time.monotonic() < deadline:
            cands = _candidates(theta, req, sp)
        else:
            notes.append(f"candidate quilts of {sp.sensitive!r} not listed: the time budget was "
                         "spent")
        quilt = sp.partition(theta)
        sections.append(dict(jsonable(sp.to_dict()), candidates=cands,
                             svg=dag_svg(theta, quilt, svg_id=f"dag-{k}", layout=layout)))
    comparison = None
    if req.compare:
        if not p.optimal:
            notes.append("mechanisms not compared: the plan is not proven optimal (the time "
                         "budget or a table limit was hit)")
        elif time.monotonic() >= deadline:
            notes.append("mechanisms not compared: the time budget was spent")
        else:
            from quiltpriv.mechanisms.compare import compare

            progress("comparing mechanisms", 0, 1)
            check()
            # The rest of the job's budget bounds the comparison (a Wasserstein row not
            # computed in time says so).
            left = max(deadline - time.monotonic(), 1e-3)
            comparison = jsonable(compare(theta, req.query, req.sensitive, req.epsilon,
                                           time_limit=left).to_dict())
            best = min((r for r in comparison["rows"] if r["applicable"]
                        and isinstance(r["std"], float)), key=lambda r: r["std"], default=None)
            comparison["best"] = None if best is None else best["mechanism"]
    progress("done", 1, 1)
    return {
        "fingerprint": theta.fingerprint(), "epsilon": p.epsilon, "scale": _num(p.scale),
        "optimal": p.optimal, "notes": list(p.notes), "explorer_notes": notes,
        "delta_A": _num(req.query.sensitivity(req.query.attributes)),
        "plan": jsonable(p.to_dict()), "sensitive": sections, "comparison": comparison,
        "command": req.command(theta_name), "seconds": round(time.monotonic() - start, 3),
    }


def export_report(state: ModelState, theta: Theta, req: PlanRequest, target: Path,
                  progress: Progress, check: Callable[[], None],
                  cancel: threading.Event | None = None) -> dict[str, Any]:
    """Plan ``req`` and write the audit report ``quiltpriv report`` writes, to ``target``
    (``check`` and ``cancel`` as for :func:`plan_payload`)."""
    with observe(lambda done, total: progress("planning", done, total)):
        p = plan(theta, req.query, req.sensitive, req.epsilon, time_limit=req.time_limit,
                 progress=True, cancel=cancel)
    check()
    progress("writing the report", 0, 1)
    edited = theta.fingerprint() != state.original
    # The files' hashes describe the model only while it is unedited.
    report = audit_report(theta, req.query, p, model_files=() if edited else state.sources)
    check()
    html_path, json_path = report.write(target)
    progress("done", 1, 1)
    return {"html": str(html_path), "json": str(json_path), "optimal": p.optimal,
            "scale": _num(p.scale)}


def report_target(state: ModelState, path: Any) -> Path:
    """The report's HTML path, checked with its JSON twin before any work."""
    target = state.check_output(path, "export report")
    if target.suffix.lower() == ".json":
        raise ParameterError("export report: give the HTML path; the JSON twin is written "
                             "beside it")
    state.check_output(str(target.with_suffix(".json")), "export report's JSON twin")
    return target
