"""The exact joint privacy loss of a ledger's releases on the same data, for one Theta.

:func:`audit_ledger` groups a ledger's entries by the data they were released on
(:func:`quiltpriv.releases.composition.same_data_groups`, as composition does) and, for each
group, runs the exact joint auditor (:func:`quiltpriv.audit.joint.joint_audit`) on the
releases' queries (rebuilt from their records) and the Laplace scales actually drawn
(``calibration.noise_scale_used``), for the sensitive attributes the records protect, over
the members of the Theta given. The number is **audited, exact, for this Theta**: the worst
privacy loss of the joint output over Theta's members and every pair of values of a
sensitive attribute, not a theorem for other models or other data. It audits the ideal
continuous Laplace of each recorded scale (the scale the exact discrete sampler drew, which
already pays for its grid), like the single-release auditor.

It is bounded like the rest of the package: the auditor's own limits
(:data:`quiltpriv.audit.joint.MAX_JOINT_OUTPUTS`, :data:`~quiltpriv.audit.joint.MAX_JOINT_WORK`)
and a time limit per group; a group beyond them, or with releases the auditor cannot read
(Gaussian noise, histograms, sums, custom queries, no sensitive attribute recorded), is
refused with the reason, never approximated.
"""

from __future__ import annotations

import json
import math
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from quiltpriv.errors import LedgerError, QuiltPrivError
from quiltpriv.model.network import as_theta
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number
from quiltpriv.utils.validation import check_positive

__all__ = ["AUDIT_WORDS", "GroupAudit", "audit_ledger"]

#: How an audited number is labelled wherever it is shown.
AUDIT_WORDS = "audited, exact, for this Theta"

#: Default seconds per group of ``ledger show --audit``.
DEFAULT_AUDIT_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class GroupAudit:
    """The joint audit of the releases on one data set (or why there is none).

    Attributes
    ----------
    releases : tuple of str
        Ledger entries ``#k`` of the group.
    loss : float or None
        The exact worst-case joint privacy loss (``inf`` when some output is possible under
        one secret and impossible under another); None when refused.
    sensitive : tuple of str
        The sensitive attributes audited (those the records protect).
    scales : tuple of float
        The Laplace scale of each release (0: released without noise).
    records : int or None
        ``n``, the records of the data set.
    theta_fingerprint : str
        The Theta audited.
    models : tuple of str
        The model fingerprints the releases were planned against (for comparison).
    refused : str or None
        Why no number is given (limits, time, releases the auditor cannot read).
    seconds : float
    worst : mapping or None
        Where the worst loss is attained (attribute, member, pair, output).
    """

    releases: tuple[str, ...]
    loss: float | None
    sensitive: tuple[str, ...]
    scales: tuple[float, ...]
    records: int | None
    theta_fingerprint: str
    models: tuple[str, ...]
    refused: str | None
    seconds: float
    worst: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        loss: Any = self.loss
        if loss is not None and math.isinf(loss):
            loss = "inf"
        return {"releases": list(self.releases), "loss": loss, "label": AUDIT_WORDS,
                "sensitive": list(self.sensitive), "scales": list(self.scales),
                "records": self.records, "theta_fingerprint": self.theta_fingerprint,
                "models": list(self.models), "refused": self.refused,
                "seconds": self.seconds, "worst": None if self.worst is None else
                dict(self.worst)}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        who = f"releases {', '.join(self.releases)}"
        if self.loss is None:
            return _wrap(f"{who}: joint loss not audited: {self.refused}")
        loss = fmt_number(self.loss)
        scales = ", ".join(fmt_number(s) for s in self.scales)
        other = [m for m in self.models if m != self.theta_fingerprint]
        line = (f"{who}: joint privacy loss {loss} for secrets about "
                f"{{{', '.join(self.sensitive)}}} ({AUDIT_WORDS}: fingerprint "
                f"{self.theta_fingerprint[:16]}..., n = {self.records}, Laplace scales "
                f"{scales})")
        if other:
            line += (f"; the releases were planned against other models "
                     f"({', '.join(m[:16] + '...' for m in other)})")
        return _wrap(line)


def _wrap(text: str) -> str:
    """Lines of at most 96 characters; AUDIT_WORDS is never split across lines."""
    glued = AUDIT_WORDS.replace(" ", "\0")
    lines = textwrap.wrap(text.replace(AUDIT_WORDS, glued), width=96, subsequent_indent="  ",
                          break_on_hyphens=False)
    return "\n".join(line.replace("\0", " ") for line in lines)


def _group_inputs(records: Sequence[Mapping[str, Any]]
                  ) -> tuple[list[Any], list[float], list[str], int | None]:
    """Queries, scales, sensitive attributes and n of a group, or QuiltPrivError (why not)."""
    from quiltpriv.mechanisms.verification import query_from_dict
    from quiltpriv.queries.query import CountQuery, LinearQuery

    queries, scales, sensitive, rows = [], [], [], set()
    for r in records:
        cal = r.get("calibration") or {}
        noise = cal.get("noise", "laplace")  # format 1: APMQM, Laplace
        scale = cal.get("noise_scale_used", r.get("scale"))
        if not isinstance(scale, int | float) or isinstance(scale, bool) or \
                not math.isfinite(scale) or scale < 0:
            raise LedgerError(f"a record states no finite noise scale ({scale!r})")
        if scale > 0 and "laplace" not in str(noise):
            raise LedgerError(f"a {r.get('mechanism')} release adds {noise} noise; the exact "
                              "joint auditor audits Laplace noise only")
        q = query_from_dict((r.get("query") or {}).get("definition") or {})
        if not isinstance(q, CountQuery | LinearQuery):
            raise LedgerError(f"a {q.kind} query; the exact joint auditor audits count and "
                              "linear queries")
        queries.append(q)
        scales.append(float(scale))
        g = r.get("guarantee") or {}
        plan = r.get("plan") if isinstance(r.get("plan"), Mapping) else {}
        names = g.get("sensitive") or list((plan or {}).get("sensitive", {}))
        sensitive += [str(x) for x in names]
        data = r.get("data") or {}
        if isinstance(data.get("rows"), int):
            rows.add(int(data["rows"]))
    sens = list(dict.fromkeys(sensitive))
    if not sens:
        raise LedgerError("no release records a sensitive attribute (group DP protects every "
                          "property); nothing to audit the secrets of")
    if len(rows) > 1:
        raise LedgerError(f"the releases read different numbers of rows ({sorted(rows)})")
    return queries, scales, sens, (rows.pop() if rows else None)


@renamed_keywords(model="theta")
def audit_ledger(theta: Any, entries: Sequence[Any], *,
                 time_limit: float | None = DEFAULT_AUDIT_TIME_LIMIT,
                 max_memory: int | str | None = None) -> list[GroupAudit]:
    """The exact joint privacy loss of each data set's releases in a ledger, for ``theta``.

    Parameters
    ----------
    theta : Theta, pgmpy network or sequence of them
        The Theta to audit for (small: the exact auditor's limits apply).
    entries : sequence of LedgerEntry
        Verified entries (:func:`quiltpriv.releases.ledger.read`).
    time_limit : float or None
        Seconds per group (None: no limit); a group past it is refused.
    max_memory : int or str, optional
        Memory budget of the exact tables (bytes or a size such as ``"4G"``), as in
        :func:`quiltpriv.audit.joint.joint_audit`; a group over it is refused.

    Returns
    -------
    list of GroupAudit
        One per data set (:func:`quiltpriv.releases.composition.same_data_groups`), in order
        of first appearance.
    """
    from quiltpriv.audit.joint import joint_audit
    from quiltpriv.releases.composition import record_of, same_data_groups

    theta = as_theta(theta)
    limit = None if time_limit is None else check_positive(time_limit, "time_limit")
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Sequence):
        raise LedgerError(f"expected a list of ledger entries, got {type(entries).__name__}")
    items = [record_of(e) for e in entries]
    labels = [lab or f"[{k}]" for k, (lab, _) in enumerate(items)]
    recs = [r for _, r in items]
    fp = theta.fingerprint()
    out = []
    for group in same_data_groups(recs):
        start = time.monotonic()
        members = [recs[k] for k in group]
        models = tuple(dict.fromkeys(
            str(r["model"]["fingerprint"]) for r in members
            if isinstance(r.get("model"), Mapping) and "fingerprint" in r["model"]))
        names = tuple(labels[k] for k in group)
        try:
            queries, scales, sens, rows = _group_inputs(members)
            res = joint_audit(theta, queries, scales, sens, records=rows, time_limit=limit,
                              max_memory=max_memory)
        except QuiltPrivError as exc:
            out.append(GroupAudit(names, None, (), (), None, fp, models, str(exc),
                                  time.monotonic() - start))
            continue
        worst = None if res.worst_pair is None else {
            "attribute": res.worst_node, "member": res.worst_member,
            "pair": [str(x) for x in res.worst_pair],
            "output": None if res.worst_output is None else list(res.worst_output)}
        out.append(GroupAudit(names, res.loss, tuple(res.sensitive), tuple(res.scales),
                              res.records, fp, models, None, time.monotonic() - start, worst))
    return out
