"""Strict parsing of a plan's JSON fields: one clear :class:`~quiltpriv.errors.PlanError` naming
the first malformed field (used by :mod:`quiltpriv.mechanisms.apmqm` and
:mod:`quiltpriv.mechanisms.step_plans`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from quiltpriv.errors import PlanError


def _fail(where: str, what: str, got: Any) -> PlanError:
    shown = repr(got)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return PlanError(f"plan: {where} must be {what}, got {shown}")


def _number(x: Any, where: str, *, positive: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise _fail(where, "a number", x)
    try:
        v = float(x)
    except OverflowError:  # an integer beyond the float range
        v = math.inf
    if not math.isfinite(v):
        raise _fail(where, "a finite number", x)
    if v < 0 or (positive and v == 0):
        raise _fail(where, "a number > 0" if positive else "a number >= 0", x)
    return v


def _bool(x: Any, where: str) -> bool:
    if not isinstance(x, bool):
        raise _fail(where, "true or false", x)
    return x


def _int(x: Any, where: str, minimum: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < minimum:
        raise _fail(where, f"a whole number >= {minimum}", x)
    return x


def _text(x: Any, where: str) -> str:
    if not isinstance(x, str):
        raise _fail(where, "a string", x)
    return x


def _member_pair(member: Any, pair: Any, where: str
                 ) -> tuple[str | None, tuple[Any, Any] | None]:
    """A run's attaining member (null or a string) and state pair (null or two numbers or
    strings), as every run format of a plan writes them."""
    if member is not None:
        member = _text(member, f"{where}.member")
    if pair is not None:
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(v, str | int | float)
                           and not isinstance(v, bool) for v in pair)):
            raise _fail(f"{where}.pair", "null or a list of two values", pair)
        pair = (pair[0], pair[1])
    return member, pair


#: A run field in :func:`_run_rows`: its name, its kind (``"int"``, ``"bool"`` or
#: ``"number"``) and, for a whole number, its least value.
RunField = tuple[str, str, int]


def _run_rows(raw: Any, fields: tuple[RunField, ...], where: str = "sensitive.runs"
              ) -> list[tuple[Any, ...]]:
    """The rows of a plan's run format, checked field by field: a non-empty list of lists of
    ``len(fields) + 2`` values, ``fields`` (name and kind) in order, then the attaining member
    and state pair (:func:`_member_pair`, read first). One reader for every run format (the
    chain's, the HMM's and the few-step HMM's); each row comes back as its parsed values,
    member and pair last."""
    if not isinstance(raw, list) or not raw:
        raise _fail(where, "a non-empty list of runs", raw)
    names = [f[0] for f in fields] + ["member", "pair"]
    shape = f"a list of {len(names)} fields ({', '.join(names)})"
    rows = []
    for k, x in enumerate(raw):
        at = f"{where}[{k}]"
        if not isinstance(x, list) or len(x) != len(names):
            raise _fail(at, shape, x)
        member, pair = _member_pair(x[-2], x[-1], at)
        row: list[Any] = []
        for (name, kind, least), v in zip(fields, x, strict=False):
            if kind == "int":
                row.append(_int(v, f"{at}.{name}", least))
            elif kind == "bool":
                row.append(_bool(v, f"{at}.{name}"))
            else:
                row.append(_number(v, f"{at}.{name}"))
        rows.append((*row, member, pair))
    return rows


def _digest(x: Any, where: str) -> str:
    if not (isinstance(x, str) and len(x) == 64
            and all(c in "0123456789abcdef" for c in x)):
        raise _fail(where, "a SHA-256 digest (64 lower-case hexadecimal digits)", x)
    return x


def _names(x: Any, where: str) -> tuple[str, ...]:
    if not isinstance(x, list) or not all(isinstance(v, str) and v for v in x):
        raise _fail(where, "a list of node names", x)
    if len(set(x)) != len(x):
        raise PlanError(f"plan: {where} names a node twice: {x}")
    return tuple(x)


def _keys(d: Any, keys: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(d, Mapping):
        raise _fail(where, "an object", d)
    missing = [k for k in keys if k not in d]
    if missing:
        raise PlanError(f"plan: {where} has no {', '.join(map(repr, missing))}")
    extra = [k for k in d if k not in keys]
    if extra:
        raise PlanError(f"plan: {where} has unknown field(s) {', '.join(map(repr, extra))}")
    return d
