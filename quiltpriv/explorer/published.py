"""The auditor's side of the explorer: a published plan or release record, verified and audited.

An auditor is given a plan file (``quiltpriv plan --json``) or a release record (``quiltpriv
release -o``), written by someone else: untrusted input. :func:`parse_published` reads one,
uploaded by the page or named by its path, through the parsers ``quiltpriv verify`` uses
(:func:`~quiltpriv.mechanisms.apmqm.plan_from_json`,
:func:`~quiltpriv.mechanisms.record_verification.record_from_json`: strict JSON, no repeated
key, every field checked), refusing anything above :data:`MAX_DOCUMENT` bytes before reading
it. Nothing is planned or released again:

* :func:`verify_payload` checks it against the model being explored (as ``quiltpriv verify``
  does: the record end to end, with the data and the ledger when given), and when it verifies
  gathers what the page shows: the epsilon each sensitive attribute attains at the published
  scale, the published quilts with the audit report's candidate table, the perturbation test
  of :mod:`quiltpriv.mechanisms.fragility`, and on request the exact audit at the published
  scale (overall, per attribute, least sufficient scale). When the model is not the plan's
  (an edited table, say), the plan is made again under it and the scales compared, and the
  tables that differ from the model the explorer started with are listed;
* :func:`report_payload` writes the signed audit report ``quiltpriv report --record`` writes,
  from the published plan and record.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quiltpriv.errors import ParameterError, PlanError
from quiltpriv.explorer.state import ModelState, _number, _object, _text
from quiltpriv.mechanisms.apmqm import Plan, plan_from_dict, plan_from_json
from quiltpriv.mechanisms.record_verification import looks_like_record, record_from_json
from quiltpriv.model.network import Theta
from quiltpriv.utils.serialize import jsonable as json_value

__all__ = ["MAX_DOCUMENT", "Published", "PublishedSession", "VerifyRequest",
           "parse_published", "parse_verify_request", "published_route", "report_payload",
           "verify_payload"]

#: Largest published plan or release record read, in bytes.
MAX_DOCUMENT = 8 * 1024 * 1024
#: Default and largest time budget of a verification, in seconds.
DEFAULT_TIME_LIMIT = 60.0
MAX_TIME_LIMIT = 3600.0

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Published:
    """A published plan or release record, parsed (not yet verified)."""

    kind: str                       # "plan" or "record"
    name: str
    sha256: str
    size: int
    plan: Plan
    record: Mapping[str, Any] | None

    def summary(self) -> dict[str, Any]:
        p = self.plan
        out: dict[str, Any] = {
            "kind": self.kind, "name": self.name, "sha256": self.sha256, "bytes": self.size,
            "epsilon": p.epsilon, "scale": json_value(p.scale),
            "sensitive": [sp.sensitive for sp in p.sensitive], "model": p.model_fingerprint,
            "query": json_value(dict(p.query)), "optimal": p.optimal}
        if self.record is not None:
            out["value"] = json_value(self.record.get("value"))
            out["noise_scale_used"] = json_value(self.record.get("scale"))
            out["created"] = json_value(self.record.get("created"))
        return out


def _read_limited(path: str) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_DOCUMENT` bytes (checked first)."""
    p = Path(path).expanduser()
    try:
        st = os.stat(p)
    except OSError as exc:
        raise ParameterError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ParameterError(f"{path} is not a regular file")
    if st.st_size > MAX_DOCUMENT:
        raise ParameterError(f"{path} holds {st.st_size} bytes, more than the {MAX_DOCUMENT} "
                             "a plan or release record may")
    try:
        with open(p, "rb") as fh:
            raw = fh.read(MAX_DOCUMENT + 1)
    except OSError as exc:
        raise ParameterError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_DOCUMENT:
        raise ParameterError(f"{path} grew above {MAX_DOCUMENT} bytes while being read")
    return raw


def parse_published(body: Any) -> Published:
    """A request ``{"path": ...}`` or ``{"text": ..., "name": ...}`` as a parsed document.

    Raises
    ------
    ParameterError
        Neither or both of path and text, a file that cannot be read or is too large.
    PlanError
        Not a plan or release record ``quiltpriv verify`` reads (the parser's message), or a
        record of another mechanism (only APMQM records embed their plan).
    """
    b = _object(body, ("path", "text", "name"), "load a published plan or record")
    path, text = b.get("path"), b.get("text")
    if (path is None) == (text is None):
        raise ParameterError("load: give either the path of the file or its text")
    if path is not None:
        path = _text(path, "path")
        if path is None:
            raise ParameterError("load: give the path of the file")
        raw = _read_limited(path)
        name = path
    else:
        if not isinstance(text, str):
            raise ParameterError("load: text must be the file's text")
        raw = text.encode("utf-8")
        if len(raw) > MAX_DOCUMENT:
            raise ParameterError(f"the file holds {len(raw)} bytes, more than the "
                                 f"{MAX_DOCUMENT} a plan or release record may")
        name = _text(b.get("name"), "name") or "uploaded file"
    digest = hashlib.sha256(raw).hexdigest()
    if looks_like_record(raw):
        record = record_from_json(raw)
        if record.get("mechanism") != "APMQM" or not isinstance(record.get("plan"), Mapping):
            raise PlanError(f"release record: mechanism {record.get('mechanism')!r}; the "
                            "explorer audits APMQM releases (their record embeds the plan)")
        return Published("record", name, digest, len(raw), plan_from_dict(record["plan"]),
                         record)
    return Published("plan", name, digest, len(raw), plan_from_json(raw), None)


@dataclass(frozen=True)
class VerifyRequest:
    """A checked request to verify (and audit) the published document, or report on it."""

    data: str | None
    ledger: str | None
    audit: bool
    fragility: bool
    delta: float
    time_limit: float


VERIFY_FIELDS = ("data", "ledger", "audit", "fragility", "delta", "time_limit")


def _flag(value: Any, name: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be true or false")
    return value


def parse_verify_request(body: Any, fields: tuple[str, ...] = VERIFY_FIELDS,
                         what: str = "verify") -> tuple[VerifyRequest, dict[str, Any]]:
    """The checked options of a verify (or report) request, and the body's other fields."""
    from quiltpriv.mechanisms.fragility import DEFAULT_DELTA

    b = dict(_object(body if body is not None else {}, fields, what))
    delta = b.pop("delta", None)
    limit = b.pop("time_limit", None)
    req = VerifyRequest(
        data=_text(b.pop("data", None), "data"), ledger=_text(b.pop("ledger", None), "ledger"),
        audit=_flag(b.pop("audit", None), "audit", False),
        fragility=_flag(b.pop("fragility", None), "fragility", True),
        delta=DEFAULT_DELTA if delta is None or delta == "" else _number(
            delta, "delta", min_val=0.0, max_val=1.0, include_boundaries="right"),
        time_limit=DEFAULT_TIME_LIMIT if limit is None or limit == "" else _number(
            limit, "time limit", min_val=0.0, max_val=MAX_TIME_LIMIT,
            include_boundaries="right"))
    return req, b


class PublishedSession:
    """The document loaded into one explorer (thread-safe), and the model it started with."""

    def __init__(self, original: Theta) -> None:
        self._lock = threading.Lock()
        self._doc: Published | None = None
        self.original = original

    @property
    def document(self) -> Published:
        with self._lock:
            if self._doc is None:
                raise ParameterError("load a published plan or release record first")
            return self._doc

    def load(self, doc: Published) -> None:
        with self._lock:
            self._doc = doc

    def clear(self) -> None:
        with self._lock:
            self._doc = None

    def summary(self) -> dict[str, Any] | None:
        with self._lock:
            return None if self._doc is None else self._doc.summary()


# -- the work of the jobs ------------------------------------------------------------------------


def _query(doc: Published) -> Any:
    from quiltpriv.mechanisms.verification import query_from_dict

    return query_from_dict(doc.plan.query)


def _data(req: VerifyRequest, query: Any) -> Any:
    if req.data is None:
        return None
    from quiltpriv.queries.data_file import read_query_data

    return read_query_data(req.data, query)


def _quilts(theta: Theta, query: Any, plan: Plan) -> list[dict[str, Any]]:
    """Per sensitive attribute: the published quilt drawn, with the candidate table."""
    from quiltpriv.explorer.compute import candidate_table
    from quiltpriv.reporting.drawing import dag_svg, layered_layout

    layout = layered_layout(theta)
    out = []
    for k, sp in enumerate(plan.sensitive):
        out.append({"node": sp.sensitive, "quilt": list(sp.quilt),
                    "influence": json_value(sp.influence),
                    "sensitivity": json_value(sp.sensitivity), "scale": json_value(sp.scale),
                    "candidates": candidate_table(theta, query, sp, plan.epsilon),
                    "svg": dag_svg(theta, sp.partition(theta), svg_id=f"published-dag-{k}",
                                   layout=layout)})
    return out


def verify_payload(theta: Theta, original: Theta, doc: Published, req: VerifyRequest,
                   progress: Progress, check: Callable[[], None]) -> dict[str, Any]:
    """Verify ``doc`` against ``theta`` and gather what the page shows (module docstring)."""
    from quiltpriv.mechanisms.attained import attained_epsilons
    from quiltpriv.mechanisms.record_verification import check_record
    from quiltpriv.mechanisms.verification import check_plan, compare_models

    start = time.monotonic()
    deadline = start + req.time_limit
    progress("verifying", 0, 1)
    query = _query(doc)
    out: dict[str, Any] = {"document": doc.summary(), "fingerprint": theta.fingerprint()}
    if doc.record is not None:
        rv = check_record(doc.record, theta, query, data=_data(req, query), ledger=req.ledger)
        pv = rv.plan
        out.update(verified=rv.ok, failure=rv.failure, text=rv.explain(),
                   checks=[c.to_dict() for c in rv.checks],
                   published_value=json_value(rv.published_value),
                   true_value=json_value(rv.true_value), noise_added=json_value(rv.noise_added))
    else:
        if req.data is not None or req.ledger is not None:
            raise ParameterError("data and ledger apply to a release record; this is a plan")
        pv = check_plan(doc.plan, theta, query)
        out.update(verified=pv.ok, failure=pv.failure, text=pv.explain(), checks=None)
    check()
    assert pv is not None
    out["plan_verification"] = json_value(pv.to_dict())
    out["other_model"] = None
    if pv.kind == "model" and "another model" in (pv.failure or ""):
        progress("planning under this model", 0, 1)
        plan_model = original if original.fingerprint() == doc.plan.model_fingerprint else None
        cmp = compare_models(doc.plan, theta, query, plan_theta=plan_model,
                             time_limit=max(deadline - time.monotonic(), 1e-3))
        out["other_model"] = dict(json_value(cmp.to_dict()), text=cmp.explain())
    out.update(attained=None, quilts=None, fragility=None, audit=None, notes=[])
    if pv.ok:
        plan = pv.plan
        out["attained"] = [json_value(r.to_dict()) for r in attained_epsilons(plan, query)]
        progress("quilts", 0, 1)
        check()
        out["quilts"] = _quilts(theta, query, plan)
        if req.fragility:
            from quiltpriv.mechanisms.fragility import fragility

            progress("fragility", 0, 1)
            check()
            f = fragility(theta, plan, query, delta=req.delta,
                          time_limit=max(deadline - time.monotonic(), 1e-3))
            out["fragility"] = dict(json_value(f.to_dict()), text=f.explain())
        if req.audit:
            from quiltpriv.reporting.attestation import audit_summary

            progress("exact audit", 0, 1)
            check()
            out["audit"] = json_value(audit_summary(
                theta, query, plan, None, max(deadline - time.monotonic(), 1e-3)))
    progress("done", 1, 1)
    out["seconds"] = round(time.monotonic() - start, 3)
    return out


def report_payload(state: ModelState, theta: Theta, doc: Published, req: VerifyRequest,
                   target: Path, progress: Progress,
                   check: Callable[[], None]) -> dict[str, Any]:
    """Write the signed audit report of ``doc`` (``quiltpriv report --record``) to ``target``.

    The published plan must verify against ``theta``; the record is checked end to end in the
    report's attestation, and the exact audit and the perturbation test run when asked.
    """
    from quiltpriv.mechanisms.verification import check_plan
    from quiltpriv.reporting.report import audit_report

    progress("verifying", 0, 1)
    query = _query(doc)
    plan = check_plan(doc.plan, theta, query).verified_plan()
    check()
    progress("writing the report", 0, 1)
    edited = theta.fingerprint() != state.original
    report = audit_report(theta, query, plan, doc.record,
                          model_files=() if edited else state.sources, run_audit=req.audit,
                          ledger=req.ledger)
    check()
    html_path, json_path = report.write(target)
    progress("done", 1, 1)
    att = report.data["attestation"]
    return {"html": str(html_path), "json": str(json_path),
            "record_verified": None if att["verify"]["record"] is None
            else att["verify"]["record"]["verified"],
            "audit": att["audit"].get("verdict") if att["audit"].get("run") else None}


def published_route(app: Any, method: str, parts: list[str], body: Any) -> tuple[int, Any]:
    """Route ``/api/published...`` for the :class:`~quiltpriv.explorer.server.Explorer` ``app``
    (its ``published`` session, model state and jobs)."""
    from quiltpriv.explorer.compute import report_target

    session: PublishedSession = app.published
    where = f"{method} /api/published{''.join('/' + p for p in parts)}"
    if method == "GET" and parts == []:
        return 200, {"document": session.summary()}
    if method != "POST":
        status = 405 if parts in ([], ["verify"], ["report"], ["clear"]) else 404
        return status, {"error": f"no such API endpoint: {where}", "status": status}
    if parts == []:
        doc = parse_published(body)  # refused (400) before anything is kept
        session.load(doc)
        return 200, {"document": doc.summary()}
    if parts == ["clear"]:
        if body not in (None, {}):
            raise ParameterError("clear takes no fields")
        session.clear()
        return 200, {"document": None}
    if parts == ["verify"]:
        req, _ = parse_verify_request(body)
        doc = session.document
        theta = app.state.theta  # immutable: the job verifies against this version
        job = app.jobs.start("verify", lambda j: verify_payload(
            theta, session.original, doc, req, j.progress, j.check))
        return 202, {"job": job.id}
    if parts == ["report"]:
        req, rest = parse_verify_request(body, ("path", "ledger", "audit"),
                                         "export the signed report")
        doc = session.document
        target = report_target(app.state, rest.get("path"))  # refused before any work
        theta = app.state.theta
        job = app.jobs.start("report", lambda j: report_payload(
            app.state, theta, doc, req, target, j.progress, j.check))
        return 202, {"job": job.id}
    return 404, {"error": f"no such API endpoint: {where}", "status": 404}
