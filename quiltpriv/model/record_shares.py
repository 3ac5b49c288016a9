"""Shares defined by a condition on the records: ``"share of income == 'high'"``.

A share parameter is a population's share of records with a property. When the records hold
the property as a 0/1 column, ``parameters={"high": "share"}`` reads it; when the property is
a category of a categorical column (or any condition on a few columns), the parameter's kind
says it: ``parameters={"high": 'share of income == "high"'}``. The condition is a predicate
of the query language (:mod:`quiltpriv.queries.predicate`): parsed once and checked, never
evaluated as Python. Every column it tests for equality (``==``, ``!=``, ``in``, ``not in``),
a categorical column, needs a declared ``domain`` (the values the column can take, never read
off the data): a literal outside it (a misspelt category) is refused before any record is
read, and a record outside it is an error rather than a silent 0. A column only ordered or
computed with (``age > 50``) must hold numbers, which the predicate checks record by record.

:func:`parameter_specs` splits ``parameters`` into the kinds learning uses (``"share"`` or
``"mean"``) and the conditions; :func:`with_condition_columns` adds each condition's 0/1
column to the records.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from quiltpriv.errors import DataError, ParameterError, QueryError
from quiltpriv.model.provenance import PARAMETER_KINDS
from quiltpriv.queries.predicate import Predicate, parse_predicate

__all__ = ["SHARE_OF", "check_condition_domain", "parameter_specs", "with_condition_columns"]

#: How a kind that defines a share by a condition begins (``"share of " + predicate``).
SHARE_OF = "share of"

_SHARE_OF = re.compile(r"^\s*share\s+of\s+(?P<condition>\S.*)$", re.DOTALL)


def parameter_specs(parameters: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Predicate]]:
    """``parameters`` (untrusted) as learning's kinds and the conditions of ``share of`` kinds.

    Returns
    -------
    kinds : dict of str to {"share", "mean"}
        Every parameter, in the given order; a ``share of`` parameter is a ``"share"``.
    conditions : dict of str to Predicate
        The parsed condition of each ``share of`` parameter.

    Raises
    ------
    ParameterError
        A kind that is neither ``share``, ``mean`` nor ``share of CONDITION``, or a condition
        the predicate language refuses (the message says why).
    """
    if not isinstance(parameters, Mapping) or not parameters:
        raise ParameterError("parameters must be a non-empty mapping {column: 'share', 'mean' "
                             "or 'share of CONDITION'}")
    kinds: dict[str, str] = {}
    conditions: dict[str, Predicate] = {}
    for name, kind in parameters.items():
        if isinstance(kind, str) and kind not in PARAMETER_KINDS:
            m = _SHARE_OF.match(kind)
            if m is not None:
                try:
                    conditions[name] = parse_predicate(m["condition"])
                except QueryError as exc:
                    raise ParameterError(f"parameter {name!r}: {exc}") from None
                kinds[name] = "share"
                continue
        kinds[name] = kind  # checked with the others by learning's own parameter check
    return kinds, conditions


def check_condition_domain(conditions: Mapping[str, Predicate], domain: Any,
                           columns: Sequence[str] | None = None) -> dict[str, tuple[Any, ...]]:
    """The declared ``domain`` (untrusted) of the columns the conditions read, checked.

    Every column a condition tests for equality or membership must have a declared domain
    (others may have one), every literal a condition
    compares a column with must be in it (see :meth:`Predicate.check_domain`), and a domain
    may only name columns some condition reads. With no conditions, ``domain`` must be None.
    """
    from quiltpriv.queries.query import _domain

    if not conditions:
        if domain is not None:
            raise ParameterError("domain= declares the values of the columns a 'share of "
                                 "CONDITION' parameter reads; no parameter has a condition")
        return {}
    read = list(dict.fromkeys(a for c in conditions.values() for a in c.names))
    needed = list(dict.fromkeys(a for c in conditions.values() for a in _categorical(c)))
    if domain is None:
        domain = {}
    if not isinstance(domain, Mapping):
        raise ParameterError(f"domain must be a mapping {{column: [values]}}, got "
                             f"{type(domain).__name__}")
    missing = [a for a in needed if a not in domain]
    if missing:
        raise ParameterError(
            f"declare the values of the column(s) {', '.join(map(repr, missing))} that 'share "
            "of' conditions compare with categories: domain={column: [values]} (on the "
            "command line --domain COLUMN=V1|V2); they are never read off the data")
    extra = [a for a in domain if a not in read]
    if extra:
        raise ParameterError(f"domain= names column(s) no 'share of' condition reads: "
                             f"{', '.join(map(repr, map(str, extra)))}")
    out: dict[str, tuple[Any, ...]] = {}
    for a in domain:
        try:
            out[a] = _domain(domain[a], f"domain of {a!r}")
        except QueryError as exc:
            raise ParameterError(str(exc)) from None
    for name, cond in conditions.items():
        try:
            cond.check_domain({a: out[a] for a in cond.names if a in out})
        except QueryError as exc:
            raise ParameterError(f"parameter {name!r}: {exc}") from None
    if columns is not None:
        absent = [a for a in read if a not in columns]
        if absent:
            raise DataError(f"the records have no column(s) {', '.join(map(repr, absent))} "
                            "read by a 'share of' parameter")
    return out


def _categorical(condition: Predicate) -> list[str]:
    """The columns ``condition`` tests for equality or membership (categorical use)."""
    from quiltpriv.queries.predicate import Attribute, Comparison, Membership, _walk

    out = []
    for node in _walk(condition.root):
        if isinstance(node, Comparison) and node.op in ("==", "!="):
            out += [n.name for n in (node.left, node.right) if isinstance(n, Attribute)]
        elif isinstance(node, Membership) and isinstance(node.operand, Attribute):
            out.append(node.operand.name)
    return out


def with_condition_columns(records: pd.DataFrame, conditions: Mapping[str, Predicate],
                           domain: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """``records`` with one 0/1 column per condition (named by its parameter), each record's
    value of the columns read checked against the declared ``domain`` first.

    A parameter named like an existing column replaces it (the data's hash, taken before,
    still covers the records as given)."""
    from quiltpriv.queries.query import _domain_codes

    if not conditions:
        return records
    added: dict[str, Any] = {}
    for name, cond in conditions.items():
        frame = records[list(cond.names)]
        if frame.isna().to_numpy().any():
            bad = [a for a in cond.names if frame[a].isna().any()]
            raise DataError(f"parameter {name!r}: the records have missing values in "
                            f"{', '.join(map(repr, bad))}")
        try:
            for a in cond.names:
                if a in domain:
                    _domain_codes(frame[a], domain[a], f"parameter {name!r}", a)
            added[name] = cond.evaluate(frame).astype(int)
        except QueryError as exc:
            raise DataError(str(exc)) from None
    return records.assign(**added)
