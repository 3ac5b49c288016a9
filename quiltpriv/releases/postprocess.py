"""Post-processing of a released value: integer rounding and clamping to the query's range.

A function of the noisy value and of public facts only (the query's declared record count and
bounds) cannot cost privacy: every guarantee quiltpriv offers is closed under post-processing
([ZOC22, Sec. 3]: a function of an attribute-private release is attribute-private with the same
epsilon; the same holds for differential privacy and Pufferfish). It makes counts read as counts
(an integer in ``[0, records]`` instead of ``-88.9``), at the price of a small bias near the ends
of the range; the record keeps the noisy value too, so an analysis can undo it.

Steps (applied in this order, whichever order they are given in):

``"round"``
    to the nearest integer (ties to even): counts and histogram cells only.
``"clamp"``
    into the range the query's value can take on any data it accepts: ``[0, records]`` for a
    count and for each histogram cell, ``[lower, upper]`` for a mean, ``[min(0, n lower),
    max(0, n upper)]`` for a sum of at most ``n`` records, and the extreme weighted sums of a
    linear query's bounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from quiltpriv.errors import ParameterError

__all__ = ["POSTPROCESS_STEPS", "PostProcess", "postprocess_for"]

#: The post-processing steps, in the order they are applied.
POSTPROCESS_STEPS: tuple[str, ...] = ("round", "clamp")

#: Query kinds whose value is a count (rounding applies).
_COUNTS = ("count", "histogram")


@dataclass(frozen=True)
class PostProcess:
    """Checked post-processing for one query: which steps, and the clamping range.

    Attributes
    ----------
    steps : tuple of str
        A subset of :data:`POSTPROCESS_STEPS`, in their order.
    lower, upper : float or None
        The clamping range (None without ``"clamp"``).
    """

    steps: tuple[str, ...]
    lower: float | None = None
    upper: float | None = None

    def apply(self, value: float) -> float:
        """One released number, post-processed (an ``int`` after rounding)."""
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(
                value):
            raise ParameterError(f"a released value must be a finite number, got {value!r}")
        out: float = value
        if "round" in self.steps:
            out = round(out)  # exact on a float: the nearest integer, ties to even
        if "clamp" in self.steps:
            assert self.lower is not None and self.upper is not None
            out = min(max(out, self.lower), self.upper)
            if "round" in self.steps:
                out = int(out)  # count bounds are whole numbers: still an integer
        return out

    def to_dict(self, noisy: float | tuple[float, ...]) -> dict[str, Any]:
        """The record's ``postprocess`` field: the steps, the range and the noisy value."""
        return {"steps": list(self.steps),
                "range": None if self.lower is None else [self.lower, self.upper],
                "noisy_value": list(noisy) if isinstance(noisy, tuple) else noisy}


def postprocess_for(steps: object, query: Mapping[str, Any]) -> PostProcess | None:
    """Check ``steps`` (None, one step's name, or names) against the query and fix the range.

    Parameters
    ----------
    steps : None, str or iterable of str
        Names from :data:`POSTPROCESS_STEPS`; None or empty for none.
    query : mapping
        The query's definition (``Query.to_dict()``): its kind, records and bounds are public.

    Raises
    ------
    ParameterError
        An unknown step, rounding a value that is not a count, or clamping a query whose
        range is not declared (a custom query).
    """
    if steps is None:
        return None
    names = [steps] if isinstance(steps, str) else steps
    if not isinstance(names, Iterable) or isinstance(names, bytes | Mapping):
        raise ParameterError(f"postprocess must be None, a step or a list of steps "
                             f"({', '.join(POSTPROCESS_STEPS)}), got {type(steps).__name__}")
    given = list(names)
    unknown = [s for s in given if s not in POSTPROCESS_STEPS]
    if unknown:
        raise ParameterError(f"unknown post-processing step {unknown[0]!r} (use "
                             f"{' and/or '.join(map(repr, POSTPROCESS_STEPS))})")
    if not given:
        return None
    kind = query.get("kind")
    if "round" in given and kind not in _COUNTS:
        raise ParameterError(f"rounding applies to counts (count and histogram queries), not "
                             f"to a {kind} query")
    lower = upper = None
    if "clamp" in given:
        lower, upper = _query_range(query)
    return PostProcess(tuple(s for s in POSTPROCESS_STEPS if s in given), lower, upper)


def _query_range(query: Mapping[str, Any]) -> tuple[float, float]:
    """The least and greatest value the query takes on any data it accepts."""
    kind = query.get("kind")
    if kind in _COUNTS:
        return 0, int(query["records"])
    if kind == "mean":
        return float(query["lower"]), float(query["upper"])
    if kind == "sum":
        n = int(query["records"])
        return min(0.0, n * float(query["lower"])), max(0.0, n * float(query["upper"]))
    if kind == "linear":
        lo = hi = 0.0
        for a, w in query["weights"].items():
            lo_a, hi_a = (float(b) for b in query["bounds"][a])
            ends = (float(w) * lo_a, float(w) * hi_a)
            lo, hi = lo + min(ends), hi + max(ends)
        return lo, hi
    raise ParameterError(f"clamping needs the query's range; a {kind} query declares none")
