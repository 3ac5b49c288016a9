"""The least Laplace scale the exact audit proves sufficient, and audits per sensitive attribute.

APMQM's scale is sufficient by [ZOC22, Thm. 4], not least: its bound
``e(Q|i) + Delta_{A and N} F / b`` is loose. The exact auditor (:func:`quiltpriv.audit.exact.audit`)
measures the real worst-case loss at a given scale, and that loss never rises with the scale
(for ``s < t``, ``Lap(t)`` is ``Lap(s)`` plus independent noise, and post-processing cannot
raise a privacy loss). So bisection on the scale finds the least scale whose audit is ``MET``,
to a relative tolerance: :func:`least_scale` returns the smallest scale it proved ``MET``
(never one it did not prove) and the largest it found not proven.

:func:`audit_per_attribute` audits each sensitive attribute alone at one scale: the loss each
one really suffers, beside the epsilon its quilt guarantees
(:mod:`quiltpriv.mechanisms.attained`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from quiltpriv.audit.exact import AuditResult, audit
from quiltpriv.errors import ParameterError
from quiltpriv.model.network import as_theta
from quiltpriv.queries.law_bounds import BudgetExceeded
from quiltpriv.queries.query import Query
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_epsilon, check_positive

__all__ = ["LeastScale", "audit_per_attribute", "least_scale"]

#: Bisection stops when the bracket is this narrow relative to its upper end.
LEAST_SCALE_RTOL = 1e-6

#: Doublings tried above the starting scale before giving up (2^64 times the start).
_MAX_DOUBLINGS = 64


@dataclass(frozen=True)
class LeastScale(JSONResult):
    """The least scale the exact audit proves sufficient, bracketed.

    Attributes
    ----------
    scale : float
        The least scale found whose audit is ``MET`` (an upper bound of the least sufficient
        scale; 0 when the exact value already meets eps).
    below : float
        The largest scale found whose audit is not ``MET`` (0 when none was tried); the least
        sufficient scale is in ``(below, scale]``.
    planned : float or None
        The scale it is compared with (the plan's), when given.
    audits : int
        Audits run.
    complete : bool
        False when the time limit stopped the bisection (``scale`` is still proven).
    """

    scale: float
    below: float
    planned: float | None
    audits: int
    complete: bool

    def explain(self) -> str:
        if self.scale == 0:
            text = "least sufficient scale by exact audit: 0 (the exact value already meets eps)"
            if self.planned is not None:
                text += f"; the plan's scale is {fmt_number(self.planned)}"
            return text
        text = (f"least sufficient scale by exact audit: {fmt_number(self.scale, rounding='up')} "
                "(proven MET; "
                f"the least lies in ({fmt_number(self.below)}, "
                f"{fmt_number(self.scale, rounding='up')}], "
                f"{self.audits} audits{'' if self.complete else ', stopped by the time limit'})")
        if self.planned is not None:
            ratio = (f", {fmt_number(self.planned / self.scale, 3)}x the least" if self.scale > 0
                     else "")
            text += f"; the plan's scale is {fmt_number(self.planned)}{ratio}"
        return text


@renamed_keywords(model="theta")
def least_scale(theta: Any, query: Query, sensitive: str | Iterable[str], epsilon: float, *,
                start: float | None = None, records: int | None = None,
                rtol: float = LEAST_SCALE_RTOL, time_limit: float | None = None,
                planned: float | None = None,
                max_memory: int | str | None = None) -> LeastScale:
    """Bisect the Laplace scale down to the least one the exact audit proves ``MET``.

    Parameters
    ----------
    theta, query, sensitive, epsilon, records, max_memory
        As in :func:`quiltpriv.audit.exact.audit`.
    start : float, optional
        A scale to start from (the plan's): doubled until it is proven ``MET``.
    rtol : float
        Relative width of the final bracket.
    time_limit : float, optional
        Seconds for the whole search; when reached the best proven scale so far is returned
        (``complete`` false).
    planned : float, optional
        The plan's scale, reported beside the least.

    Raises
    ------
    BudgetExceeded
        No scale up to ``2^64`` times the start was proven ``MET`` within the time limit.
    """
    eps = check_epsilon(epsilon)
    rtol = check_positive(rtol, "rtol")
    deadline = None if time_limit is None else time.monotonic() + check_positive(
        time_limit, "time_limit")
    runs = 0

    def met(scale: float) -> bool:
        nonlocal runs
        runs += 1
        left = None if deadline is None else max(deadline - time.monotonic(), 1e-3)
        return audit(theta, query, sensitive, eps, scale, records=records,
                     time_limit=left, max_memory=max_memory).met

    def out_of_time() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    if met(0.0):
        return LeastScale(0.0, 0.0, planned, runs, True)
    hi = check_positive(start, "start") if start else 1.0
    lo = 0.0
    for _ in range(_MAX_DOUBLINGS):
        if met(hi):
            break
        lo, hi = hi, hi * 2
        if out_of_time():
            raise BudgetExceeded("least scale: the time limit was reached before any scale "
                                 "was proven to meet epsilon")
    else:
        raise BudgetExceeded(f"least scale: no scale up to {fmt_number(hi)} was proven to meet "
                             "epsilon")
    while hi - lo > rtol * hi:
        if out_of_time():
            return LeastScale(hi, lo, planned, runs, False)
        mid = lo + (hi - lo) / 2
        if met(mid):
            hi = mid
        else:
            lo = mid
    return LeastScale(hi, lo, planned, runs, True)


@renamed_keywords(model="theta")
def audit_per_attribute(theta: Any, query: Query, sensitive: str | Iterable[str],
                        epsilon: float, scale: float, *, records: int | None = None,
                        time_limit: float | None = None,
                        max_memory: int | str | None = None) -> dict[str, AuditResult]:
    """The exact audit of each sensitive attribute alone, at one scale (in the order given;
    ``max_memory`` as in :func:`quiltpriv.audit.exact.audit`)."""
    if not isinstance(sensitive, str | Iterable):
        raise ParameterError(f"sensitive must be an attribute name or a list of them, got "
                             f"{type(sensitive).__name__}")
    nodes = list(as_theta(theta).check_sensitive(sensitive))
    deadline = None if time_limit is None else time.monotonic() + check_positive(
        time_limit, "time_limit")
    out = {}
    for node in nodes:
        left = None if deadline is None else max(deadline - time.monotonic(), 1e-3)
        out[node] = audit(theta, query, node, epsilon, scale, records=records, time_limit=left,
                          max_memory=max_memory)
    return out
