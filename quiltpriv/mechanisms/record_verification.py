"""Published release records are input: check one end to end against the model.

A release record (:data:`quiltpriv.releases.records.RELEASE_FORMAT`) of an APMQM release
embeds the plan it was drawn with and restates that plan's guarantee and calibration. Anyone
can edit the file: lower the scale, drop a sensitive attribute, change the value. Given the
model (and, when the auditor has them, the data and the ledger), :func:`check_record` checks:

* the embedded plan, as :func:`quiltpriv.mechanisms.verification.check_plan` checks a plan
  file (model fingerprint, quilts, influences, sensitivities, scales, optimality);
* that the record states what the plan states: the model's fingerprint and ``|Theta|``, the
  query's definition and fingerprint, the guarantee (kind, epsilon, delta, sensitive
  attributes) and the calibration (scale, sensitivity, binding attribute); that the noise
  actually drawn (``noise_scale_used``) is at least the plan's scale, and that a plan needing
  noise was not released without any;
* with the data: the SHA-256 and row count of the columns the query reads, and the true value
  of the query, so that the auditor sees the noise actually added (published minus true,
  snapping to the noise grid included);
* with the ledger: the ledger's hash chain, and an entry holding exactly this record.

Every check runs (so the auditor sees all of them); the first failure is the verdict's.
``quiltpriv verify RECORD.json MODEL [--data D.csv] [--ledger L]`` is the same check.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from quiltpriv.errors import PlanError, QuiltPrivError
from quiltpriv.mechanisms.apmqm import Plan, canonical_json, plan_from_dict
from quiltpriv.mechanisms.verification import PlanVerification, check_plan, query_from_dict
from quiltpriv.queries.query import Query, check_query
from quiltpriv.releases.records import READABLE_FORMATS
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number
from quiltpriv.utils.serialize import JSONResult, load_json

__all__ = ["RecordCheck", "RecordVerification", "check_record", "record_from_json"]

#: The record's keys compared with the plan's calibration (besides ``scale``).
_CALIBRATION_KEYS = ("sensitivity", "binding", "binding_influence", "binding_sensitivity")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        dup = sorted(k for k, c in Counter(k for k, _ in pairs).items() if c > 1)
        raise PlanError(f"release record: the JSON names {', '.join(map(repr, dup))} twice "
                        "in one object")
    return out


def record_from_json(text: str | bytes) -> dict[str, Any]:
    """A release record's JSON text as a dict (strict: no NaN, no repeated key, an object).

    Raises
    ------
    PlanError
        Not JSON, not an object, or not a release record of a readable format.
    """
    doc = load_json(text, "release record", error=PlanError,
                    object_pairs_hook=_no_duplicates)
    if not is_release_record(doc):
        raise PlanError(f"release record: not a release record (format "
                        f"{doc.get('format') if isinstance(doc, dict) else None!r}; readable: "
                        f"{', '.join(READABLE_FORMATS)})")
    return doc


def looks_like_record(text: str | bytes) -> bool:
    """True when ``text`` parses as JSON of a release record (else a plan, or unreadable: the
    strict parser of whichever it is names what is wrong)."""
    try:
        return is_release_record(load_json(text, "the document"))
    except QuiltPrivError:
        return False


def is_release_record(doc: object) -> bool:
    """True when ``doc`` is a JSON object of a readable release-record format (any other
    value, of any type, is simply not one: a predicate, not a check)."""
    return isinstance(doc, Mapping) and doc.get("format") in READABLE_FORMATS


@dataclass(frozen=True)
class RecordCheck:
    """One check of a release record: what was compared, and whether it held."""

    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True)
class RecordVerification(JSONResult):
    """The verdict of :func:`check_record`.

    Attributes
    ----------
    ok : bool
    failure : str or None
        The first check that failed (None when ``ok``).
    checks : tuple of RecordCheck
        Every check run, in order.
    plan : PlanVerification or None
        The embedded plan's verification (None when the plan could not be read).
    published_value : float, list or None
    true_value : float, list or None
        The query on the data (only with data).
    noise_added : float, list or None
        ``published_value - true_value`` (only with data).
    ledger_entry : int or None
        The sequence number of the ledger entry holding the record (only with a ledger).
    """

    ok: bool
    failure: str | None
    checks: tuple[RecordCheck, ...]
    plan: PlanVerification | None
    published_value: Any = None
    true_value: Any = None
    noise_added: Any = None
    ledger_entry: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"verified": self.ok, "failure": self.failure,
                "checks": [c.to_dict() for c in self.checks],
                "plan": None if self.plan is None else self.plan.to_dict(),
                "published_value": self.published_value, "true_value": self.true_value,
                "noise_added": self.noise_added, "ledger_entry": self.ledger_entry}

    def verified(self) -> RecordVerification:
        """``self`` when the record verifies, else raise the failure (PlanError)."""
        if not self.ok:
            raise PlanError(f"the release record does not verify: {self.failure}")
        return self

    def explain(self) -> str:
        head = ("release record VERIFIED against the model" if self.ok
                else f"release record FAILED verification: {self.failure}")
        lines = [head, ""]
        for c in self.checks:
            lines.append(f"  [{'OK' if c.ok else 'FAILED'}] {c.name}: {c.detail}")
        if self.true_value is not None:
            lines += ["", f"published value {_show(self.published_value)}; true value on the "
                          f"data {_show(self.true_value)}; noise actually added "
                          f"{_show(self.noise_added)}"]
        if self.plan is not None:
            lines += ["", "the embedded plan:", self.plan.explain()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _show(x: Any) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_show(v) for v in x) + "]"
    return fmt_number(x) if isinstance(x, float | int) else str(x)


def _get(d: Any, *path: str) -> Any:
    for k in path:
        if not isinstance(d, Mapping) or k not in d:
            return None
        d = d[k]
    return d


def _same(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except QuiltPrivError:
        return False


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return None
    return float(x)


@renamed_keywords(model="theta")
def check_record(record: Mapping[str, Any] | str | bytes, theta: Any,
                 query: Query | None = None, *, data: Any = None, ledger: Any = None,
                 sensitive: str | Iterable[str] | None = None,
                 epsilon: float | None = None) -> RecordVerification:
    """Check a published APMQM release record end to end (see the module's documentation).

    Parameters
    ----------
    record : dict, str or bytes
        The record, or its JSON text.
    theta : Theta, pgmpy network or sequence of them
        The model the release claims to be planned for.
    query : Query, optional
        The query; by default rebuilt from the plan's record of it (not possible for a custom
        query).
    data : pandas.DataFrame, optional
        The data released on: its columns' hash and row count are compared, and the true
        value computed.
    ledger : path, optional
        A privacy ledger that must hold this record in an intact hash chain.
    sensitive, epsilon
        The protection required (as in :func:`~quiltpriv.mechanisms.verification.check_plan`).

    Returns
    -------
    RecordVerification

    Raises
    ------
    PlanError
        The record cannot be read at all, or is not an APMQM release with a plan.
    QueryError, DataError, LedgerError
        The query cannot be rebuilt, the data lack a column the query reads, the ledger cannot
        be read.
    """
    rec = record_from_json(record) if isinstance(record, str | bytes | bytearray) else record
    if not is_release_record(rec):
        raise PlanError("release record: not a release record of a readable format "
                        f"({', '.join(READABLE_FORMATS)})")
    if rec.get("mechanism") != "APMQM" or not isinstance(rec.get("plan"), Mapping):
        raise PlanError(f"release record: mechanism {rec.get('mechanism')!r}; verify checks "
                        "APMQM releases (their record embeds the plan)")
    plan = plan_from_dict(rec["plan"])
    query = query_from_dict(plan.query) if query is None else check_query(query)
    pv = check_plan(plan, theta, query, sensitive=sensitive, epsilon=epsilon)
    checks = [RecordCheck("embedded plan", pv.ok, "verifies against the model and the query"
                          if pv.ok else str(pv.failure)),
              _model_check(rec, plan), _query_check(rec, plan), _guarantee_check(rec, plan),
              _calibration_check(rec, plan), _noise_check(rec, plan)]
    published = rec.get("value")
    true_value = noise = None
    if data is not None:
        checks.append(_data_check(rec, data, query))
        true_value = _plain_value(query.evaluate(data))
        noise = _difference(published, true_value)
    entry = None
    if ledger is not None:
        ledger_check, entry = _ledger_check(rec, ledger)
        checks.append(ledger_check)
    failure = next((f"{c.name}: {c.detail}" for c in checks if not c.ok), None)
    return RecordVerification(failure is None, failure, tuple(checks), pv, published,
                              true_value, noise, entry)


def _model_check(rec: Mapping[str, Any], plan: Plan) -> RecordCheck:
    fp, size = _get(rec, "model", "fingerprint"), _get(rec, "model", "theta_size")
    mine = plan.model_fingerprint
    if fp == mine and size == plan.theta_size:
        return RecordCheck("model", True, f"fingerprint {mine[:16]}..., |Theta| = {size}")
    return RecordCheck("model", False, f"the record states model {str(fp)[:16]}... (|Theta| = "
                                       f"{size}), its plan {mine[:16]}... (|Theta| = "
                                       f"{plan.theta_size})")


def _query_check(rec: Mapping[str, Any], plan: Plan) -> RecordCheck:
    qdef, qfp = _get(rec, "query", "definition"), _get(rec, "query", "fingerprint")
    if _same(qdef, plan.query) and qfp == plan.query_fingerprint:
        return RecordCheck("query", True, "definition and fingerprint are the plan's")
    return RecordCheck("query", False, "the record's query definition or fingerprint is not "
                                       "its plan's")


def _differences(stated: Any, want: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    bad = [k for k in keys if not _same(_get(stated, k), want.get(k))]
    if not bad:
        return None
    return "; ".join(f"{k}: {_get(stated, k)!r} against the plan's {want.get(k)!r}"
                     for k in bad)


def _guarantee_check(rec: Mapping[str, Any], plan: Plan) -> RecordCheck:
    want = plan.guarantee.to_dict()
    bad = _differences(rec.get("guarantee"), want, ("kind", "epsilon", "delta", "sensitive"))
    if bad is None:
        return RecordCheck("guarantee", True,
                           f"{want['kind']}, epsilon = {fmt_number(plan.epsilon)}, delta = 0, "
                           "sensitive "
                           f"{', '.join(want['sensitive'])}")
    return RecordCheck("guarantee", False, f"the record's guarantee is not its plan's ({bad})")


def _calibration_check(rec: Mapping[str, Any], plan: Plan) -> RecordCheck:
    want = plan.calibration.to_dict()
    bad = _differences(rec.get("calibration"), want, ("noise", "scale", *_CALIBRATION_KEYS))
    if bad is None:
        return RecordCheck("calibration", True, "Laplace scale b = "
                           f"{fmt_number(plan.scale, rounding='up')}, set by "
                           f"{want.get('binding')!r}")
    return RecordCheck("calibration", False,
                       f"the record's calibration is not its plan's ({bad})")


def _noise_check(rec: Mapping[str, Any], plan: Plan) -> RecordCheck:
    """The noise actually drawn: at least the plan's scale, and some when the plan needs it."""
    cal = rec.get("calibration")
    used, flat = _number(_get(cal, "noise_scale_used")), _number(rec.get("scale"))
    source = _get(rec, "noise", "source")
    if used is None or flat is None:
        return RecordCheck("noise drawn", False, "the record states no finite noise scale")
    if flat != used:
        return RecordCheck("noise drawn", False, f"its scale {flat!r} is not its "
                                                 f"calibration's noise_scale_used {used!r}")
    if not used >= plan.scale:  # exact: no tolerance below the plan's scale
        return RecordCheck("noise drawn", False, f"noise of scale {used!r} was drawn, below "
                                                 f"the plan's {plan.scale!r}")
    if plan.scale > 0 and (source == "none" or not _number(_get(cal, "granularity"))):
        return RecordCheck("noise drawn", False, "the plan needs noise but the record says "
                                                 "none was drawn")
    detail = f"scale {fmt_number(used)} (>= the plan's), source {source}"
    if source == "seeded":
        detail += f" (seed {_get(rec, 'noise', 'seed')!r}: reproducible, NOT secure)"
    return RecordCheck("noise drawn", True, detail)


def _data_check(rec: Mapping[str, Any], data: Any, query: Query) -> RecordCheck:
    """The hash and row count of the columns the query read (and of the whole table, when the
    record states it) against the data given."""
    from quiltpriv.releases.records import query_data

    got = query_data(data, query.attributes)
    stated = rec.get("data")
    same = isinstance(stated, Mapping) and stated.get("sha256") == got["sha256"] \
        and stated.get("rows") == got["rows"]
    table = _get(stated, "table_sha256")
    if same and table is not None and table != got.get("table_sha256"):
        return RecordCheck("data", False, "the columns the query read are the data released "
                                          "on, but the table as a whole is not")
    if same:
        return RecordCheck("data", True, f"sha256 {got['sha256'][:12]}..., {got['rows']} rows "
                                         f"of {', '.join(got['columns'])}")
    return RecordCheck("data", False,
                       f"the data given (sha256 {got['sha256'][:12]}..., {got['rows']} rows) are "
                       f"not the data released on (sha256 {str(_get(stated, 'sha256'))[:12]}"
                       f"..., {_get(stated, 'rows')} rows)")


def _ledger_check(rec: Mapping[str, Any], ledger: Any) -> tuple[RecordCheck, int | None]:
    """The ledger's chain verified, and the sequence number of an entry equal to ``rec``."""
    from quiltpriv.releases.ledger import read

    entries, head = read(ledger)
    mine = canonical_json(rec)
    hits = [e.seq for e in entries if _canonical_or_none(e.record) == mine]
    if hits:
        return RecordCheck("ledger", True, f"entry {hits[0]} of {head.count} ({head.path}), "
                                           "hash chain intact"), hits[0]
    entries_text = f"{head.count} entr{'y' if head.count == 1 else 'ies'}"
    return RecordCheck("ledger", False, f"the ledger {head.path} ({entries_text}, hash chain "
                                        "intact) holds no entry equal to this record"), None


def _canonical_or_none(x: Any) -> str | None:
    try:
        return canonical_json(x)
    except QuiltPrivError:
        return None


def _plain_value(x: Any) -> Any:
    import numpy as np

    if isinstance(x, np.ndarray):
        return [float(v) for v in x.ravel()]
    if isinstance(x, list | tuple):
        return [float(v) for v in x]
    return float(x)


def _difference(published: Any, true_value: Any) -> Any:
    if isinstance(true_value, list):
        if not isinstance(published, list) or len(published) != len(true_value):
            return None
        return [_difference(p, t) for p, t in zip(published, true_value, strict=True)]
    p = _number(published)
    return None if p is None else p - float(true_value)
