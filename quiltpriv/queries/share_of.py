"""The share of records meeting a condition: ``qp.share_of('income == "high"', domain=...)``.

A share parameter is a population's share of records with a property. When the records hold
the property as a 0/1 column, ``parameters={"high": "share"}`` reads it; when the property is
a category of a categorical column (or any condition on a few columns), give the condition:
``parameters={"high": qp.share_of('income == "high"', domain={"income": ["low", "mid",
"high"]})}`` (on the command line, ``--parameters 'high=share of income == "high"' --domain
income=low|mid|high``). The condition is a predicate of the query language
(:mod:`quiltpriv.queries.predicate`): parsed once and checked, never evaluated as Python.
Every column it tests for equality (``==``, ``!=``, ``in``, ``not in``), a categorical column,
needs a declared ``domain`` (the values the column can take, never read off the data): a
literal outside it (a misspelt category) is refused when the share is declared, and a record
outside it is an error rather than a silent 0. A column only ordered or computed with (``age >
50``) must hold numbers, which the predicate checks record by record.

:class:`ShareOf` is what :func:`~quiltpriv.model.learning.learn_theta` accepts as a kind (its
:class:`~quiltpriv.model.learning.RecordShare` protocol): it gives each record's 0/1 value and
describes itself for the provenance.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from quiltpriv.errors import DataError, ParameterError, QueryError
from quiltpriv.queries.predicate import (
    Attribute,
    Comparison,
    Membership,
    Predicate,
    parse_predicate,
)
from quiltpriv.queries.query import check_in_domain, declared_domain

if TYPE_CHECKING:  # pandas is imported where records are read, not to declare a share
    import pandas as pd

__all__ = ["ShareOf", "share_of", "shares_from_text"]

_SHARE_OF = re.compile(r"^\s*share\s+of\s+(?P<condition>\S.*)$", re.DOTALL)


@dataclass(frozen=True)
class ShareOf:
    """The share of records meeting ``condition`` (a learning parameter's kind).

    Parameters
    ----------
    condition : str or Predicate
        A predicate over record columns, e.g. ``'income == "high"'``.
    domain : mapping of str to sequence, optional
        The values of the columns the condition reads; required for every column it tests for
        equality or membership.

    Attributes
    ----------
    predicate : Predicate
        The parsed condition.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> kind = qp.ShareOf('income == "high"', domain={"income": ["low", "high"]})
    >>> kind.condition, kind.names
    ("income == 'high'", ('income',))
    """

    condition: str | Predicate
    domain: Mapping[str, Sequence[Any]] | None = None
    kind: str = field(default="share", init=False)
    predicate: Predicate = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            pred = parse_predicate(self.condition)
        except QueryError as exc:
            raise ParameterError(f"share of: {exc}") from None
        object.__setattr__(self, "predicate", pred)
        object.__setattr__(self, "condition", str(pred))
        object.__setattr__(self, "domain", _check_domain(pred, self.domain))

    @property
    def names(self) -> tuple[str, ...]:
        """The record columns the condition reads."""
        return self.predicate.names

    def indicator(self, records: pd.DataFrame) -> np.ndarray:
        """Each record's 0/1 value (an int array), after checking the columns it reads.

        Raises
        ------
        DataError
            A missing column, missing values, a value outside its declared domain, a number
            compared with text.
        """
        import pandas as pd

        if not isinstance(records, pd.DataFrame):
            raise DataError(f"the records must be a pandas DataFrame, got "
                            f"{type(records).__name__}")
        what = f"share of {self.condition}"
        absent = [a for a in self.names if a not in records.columns]
        if absent:
            raise DataError(f"{what}: the records have no column(s) "
                            f"{', '.join(map(repr, absent))}")
        frame = records[list(self.names)]
        if frame.isna().to_numpy().any():
            bad = [a for a in self.names if frame[a].isna().any()]
            raise DataError(f"{what}: missing values in {', '.join(map(repr, bad))}")
        try:
            for a, values in (self.domain or {}).items():
                check_in_domain(frame[a], values, what, a)
            return self.predicate.evaluate(frame).astype(np.int64)
        except QueryError as exc:
            raise DataError(str(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        """``{"condition": canonical text, "domain": {column: values}}`` (the provenance)."""
        return {"condition": self.condition,
                "domain": {a: list(v) for a, v in (self.domain or {}).items()}}


def share_of(condition: str | Predicate,
             domain: Mapping[str, Sequence[Any]] | None = None) -> ShareOf:
    """The share of records meeting ``condition``, a kind for
    :func:`~quiltpriv.model.learning.learn_theta` (see :class:`ShareOf`).

    Parameters
    ----------
    condition : str or Predicate
        A predicate over record columns, e.g. ``'income == "high"'``.
    domain : mapping of str to sequence, optional
        The values of the columns the condition reads; required for every column it tests for
        equality or membership.

    Returns
    -------
    ShareOf

    Examples
    --------
    The share of high earners of each school, as a parameter to learn a network of:

    >>> import quiltpriv as qp
    >>> qp.share_of('income == "high"', domain={"income": ["low", "high"]})
    ShareOf(condition="income == 'high'", domain={'income': ('low', 'high')}, kind='share')
    """
    return ShareOf(condition, domain)


def shares_from_text(parameters: Mapping[str, Any],
                     domain: Mapping[str, Sequence[Any]] | None) -> dict[str, Any]:
    """``parameters`` with every ``"share of CONDITION"`` kind as a :class:`ShareOf` over the
    part of ``domain`` its condition reads (the command line's form). Every column of
    ``domain`` must be read by some condition."""
    if not isinstance(parameters, Mapping):
        raise ParameterError(f"parameters must be a mapping, got {type(parameters).__name__}")
    if domain is not None and not isinstance(domain, Mapping):
        raise ParameterError(f"domain must be a mapping, got {type(domain).__name__}")
    out: dict[str, Any] = {}
    read: set[str] = set()
    for name, kind in parameters.items():
        m = _SHARE_OF.match(kind) if isinstance(kind, str) else None
        if m is None:
            out[name] = kind
            continue
        try:
            pred = parse_predicate(m["condition"])
        except QueryError as exc:
            raise ParameterError(f"parameter {name!r}: {exc}") from None
        read.update(pred.names)
        mine = {a: v for a, v in (domain or {}).items() if a in pred.names}
        try:
            out[name] = ShareOf(pred, mine or None)
        except ParameterError as exc:
            raise ParameterError(f"parameter {name!r}: {exc}") from None
    extra = [a for a in (domain or {}) if a not in read]
    if extra:
        raise ParameterError(f"--domain names column(s) no 'share of' condition reads: "
                             f"{', '.join(map(repr, map(str, extra)))}")
    return out


def _check_domain(pred: Predicate, domain: Any) -> dict[str, tuple[Any, ...]] | None:
    """The declared ``domain`` (untrusted) of the columns ``pred`` reads, checked."""
    if domain is not None and not isinstance(domain, Mapping):
        raise ParameterError(f"share of: domain must be a mapping {{column: [values]}}, got "
                             f"{type(domain).__name__}")
    domain = domain or {}
    missing = [a for a in dict.fromkeys(_categorical(pred)) if a not in domain]
    if missing:
        raise ParameterError(
            f"share of {str(pred)!r}: declare the values of the column(s) "
            f"{', '.join(map(repr, missing))} it compares with categories: domain={{column: "
            "[values]}} (on the command line --domain COLUMN=V1|V2); they are never read off "
            "the data")
    extra = [a for a in domain if a not in pred.names]
    if extra:
        raise ParameterError(f"share of {str(pred)!r}: domain names column(s) it does not "
                             f"read: {', '.join(map(repr, map(str, extra)))}")
    out: dict[str, tuple[Any, ...]] = {}
    try:
        for a in domain:
            out[a] = declared_domain(domain[a], f"share of: domain of {a!r}")
        pred.check_domain(out, f"share of {str(pred)!r}")
    except QueryError as exc:
        raise ParameterError(str(exc)) from None
    return out or None


def _categorical(pred: Predicate) -> list[str]:
    """The columns ``pred`` tests for equality or membership (categorical use)."""
    out = []
    stack: list[Any] = [pred.root]
    while stack:
        node = stack.pop()
        if isinstance(node, Comparison) and node.op in ("==", "!="):
            out += [n.name for n in (node.left, node.right) if isinstance(n, Attribute)]
        elif isinstance(node, Membership) and isinstance(node.operand, Attribute):
            out.append(node.operand.name)
        # the tree's children: every field that is a node or a tuple of nodes
        for f in fields(node):
            child = getattr(node, f.name)
            stack += [c for c in (child if isinstance(child, tuple) else (child,))
                      if is_dataclass(c)]
    return out
