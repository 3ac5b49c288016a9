"""Queries and their sensitivity to a set of columns.

Two datasets are *B-column neighbours* when they agree outside the columns in ``B``, which may
differ arbitrarily; ``Delta_B F`` is the largest ``|F(X) - F(X')|`` (L1 norm for vector
queries) over B-column neighbours (Zhang, Ohrimenko and Cummings, Section 5.1). APMQM scales
its noise by ``Delta_{A and N} F``. Each query here knows the attributes ``A`` it reads, its
``Delta_B`` for any ``B`` and how to evaluate itself on a pandas DataFrame.

=================  ===============================================  =====================
query              F(X)                                             Delta_B F (B meets A)
=================  ===============================================  =====================
CountQuery         #records satisfying a predicate over A           n
SumQuery           sum of attribute j, values in [lo, hi]           n (hi - lo)
MeanQuery          mean of attribute j, values in [lo, hi]          hi - lo
LinearQuery        sum_j w_j mean_j                                 sum_{j in B} |w_j|(hi_j - lo_j)
HistogramQuery     counts per joint category of A (a vector)        2 n  (L1)
CustomQuery        any F with a user-supplied Delta(B)              Delta(B & A)
=================  ===============================================  =====================

``Delta_B`` is 0 when ``B`` does not meet ``A``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ._validation import check_records
from .errors import QueryError


def _attrs(attributes: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(attributes, str):
        attributes = [attributes]
    out = tuple(attributes)
    if not out:
        raise QueryError(f"{what} needs at least one attribute")
    for a in out:
        if not isinstance(a, str) or not a:
            raise QueryError(f"{what}: attribute names must be non-empty strings, got {a!r}")
    if len(set(out)) != len(out):
        raise QueryError(f"{what}: duplicate attribute in {list(out)}")
    return out


def _bounds(lo: Any, hi: Any, what: str) -> tuple[float, float]:
    try:
        lo_f, hi_f = float(lo), float(hi)
    except (TypeError, ValueError) as exc:
        raise QueryError(f"{what}: bounds must be numbers, got {lo!r}, {hi!r}") from exc
    if not (math.isfinite(lo_f) and math.isfinite(hi_f)):
        raise QueryError(f"{what}: bounds must be finite, got [{lo_f}, {hi_f}]")
    if lo_f > hi_f:
        raise QueryError(f"{what}: lower bound {lo_f} exceeds upper bound {hi_f}")
    return lo_f, hi_f


def _columns(data: pd.DataFrame, columns: Sequence[str], what: str) -> pd.DataFrame:
    if not isinstance(data, pd.DataFrame):
        raise QueryError(f"{what}: data must be a pandas DataFrame, got {type(data).__name__}")
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise QueryError(f"{what}: the data has no column(s) {', '.join(map(repr, missing))}")
    return data[list(columns)]


def _bounded_values(data: pd.DataFrame, col: str, lo: float, hi: float, what: str) -> np.ndarray:
    s = _columns(data, [col], what)[col]
    try:
        x = s.to_numpy(dtype=float)
    except (TypeError, ValueError) as exc:
        raise QueryError(f"{what}: column {col!r} is not numeric") from exc
    if np.any(np.isnan(x)):
        n_bad = int(np.isnan(x).sum())
        raise QueryError(f"{what}: column {col!r} has {n_bad} missing/NaN value(s)")
    bad = (x < lo) | (x > hi)
    if np.any(bad):
        raise QueryError(
            f"{what}: column {col!r} has {int(bad.sum())} value(s) outside the declared bounds "
            f"[{lo:g}, {hi:g}] (e.g. {x[bad][0]:g}); clip the data or widen the bounds"
        )
    return x


class Query:
    """Base class: a query ``F`` over attributes ``A`` with column sensitivities ``Delta_B``."""

    kind: str = "query"
    attributes: tuple[str, ...]
    #: How ``Delta_B`` depends on ``B`` (the planner's search relies on it): ``"all-or-nothing"``
    #: (one value whenever ``B`` meets the attributes ``j`` with ``Delta_{j} > 0``, else 0),
    #: ``"additive"`` (the sum of ``Delta_{j}`` over ``j`` in ``B``) or ``"general"``.
    sensitivity_structure = "general"

    def sensitivity(self, columns: Iterable[str]) -> float:
        """``Delta_B F`` for ``B = columns``."""
        raise NotImplementedError

    def evaluate(self, data: pd.DataFrame) -> float | np.ndarray:
        """``F(X)`` on a DataFrame whose columns are the attributes."""
        raise NotImplementedError

    def check_records(self, n_rows: int) -> None:
        """Raise if ``n_rows`` rows break the sensitivity this query was planned with."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.kind} over {', '.join(self.attributes)}"


class _RecordBound(Query):
    records: int

    def check_records(self, n_rows: int) -> None:
        if n_rows > self.records:
            raise QueryError(
                f"the data has {n_rows} records but the query was planned for at most "
                f"{self.records}; its sensitivity would be under-estimated"
            )


@dataclass(frozen=True)
class CountQuery(_RecordBound):
    """Number of records satisfying a predicate over ``attributes``.

    Parameters
    ----------
    attributes : sequence of str
        The attributes ``A`` the predicate reads.
    records : int
        ``n``, an upper bound on the number of records (public).
    where : str, optional
        A pandas expression (``DataFrame.eval``) for the predicate, e.g.
        ``"height > 66 and sat > 1300"``; required to evaluate, not to plan.
    """

    attributes: tuple[str, ...]
    records: int
    where: str | None = None
    kind: str = field(default="count", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes", _attrs(self.attributes, "count query"))
        object.__setattr__(self, "records", check_records(self.records))

    def sensitivity(self, columns: Iterable[str]) -> float:
        return float(self.records) if set(columns) & set(self.attributes) else 0.0

    sensitivity_structure = "all-or-nothing"

    def evaluate(self, data: pd.DataFrame) -> float:
        if self.where is None:
            raise QueryError("count query: give a predicate (where=...) to evaluate it")
        frame = _columns(data, self.attributes, "count query")
        if frame.isna().to_numpy().any():
            raise QueryError("count query: the data has missing/NaN values in "
                             f"{[c for c in self.attributes if frame[c].isna().any()]}")
        try:
            mask = frame.eval(self.where)
        except Exception as exc:  # pandas raises many types for a bad expression
            raise QueryError(f"count query: cannot evaluate {self.where!r}: {exc}") from exc
        if not isinstance(mask, pd.Series) or mask.dtype != bool:
            raise QueryError(f"count query: {self.where!r} is not a true/false predicate")
        return float(mask.sum())

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "attributes": list(self.attributes), "records": self.records,
                "where": self.where}


@dataclass(frozen=True)
class SumQuery(_RecordBound):
    """Sum of one bounded attribute over ``records`` rows: ``Delta = n (hi - lo)``."""

    attribute: str
    lower: float
    upper: float
    records: int
    kind: str = field(default="sum", init=False)

    def __post_init__(self) -> None:
        _attrs([self.attribute], "sum query")
        lo, hi = _bounds(self.lower, self.upper, "sum query")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "records", check_records(self.records))

    @property
    def attributes(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.attribute,)

    def sensitivity(self, columns: Iterable[str]) -> float:
        return self.records * (self.upper - self.lower) if self.attribute in set(columns) else 0.0

    sensitivity_structure = "all-or-nothing"  # one attribute

    def evaluate(self, data: pd.DataFrame) -> float:
        return float(_bounded_values(data, self.attribute, self.lower, self.upper,
                                     "sum query").sum())

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "attribute": self.attribute, "lower": self.lower,
                "upper": self.upper, "records": self.records}


@dataclass(frozen=True)
class MeanQuery(Query):
    """Mean of one attribute with values in ``[lower, upper]``: ``Delta = hi - lo``."""

    attribute: str
    lower: float
    upper: float
    kind: str = field(default="mean", init=False)

    def __post_init__(self) -> None:
        _attrs([self.attribute], "mean query")
        lo, hi = _bounds(self.lower, self.upper, "mean query")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @property
    def attributes(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.attribute,)

    def sensitivity(self, columns: Iterable[str]) -> float:
        return self.upper - self.lower if self.attribute in set(columns) else 0.0

    sensitivity_structure = "all-or-nothing"  # one attribute

    def evaluate(self, data: pd.DataFrame) -> float:
        x = _bounded_values(data, self.attribute, self.lower, self.upper, "mean query")
        if x.size == 0:
            raise QueryError("mean query: the data has no rows")
        return float(x.mean())

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "attribute": self.attribute, "lower": self.lower,
                "upper": self.upper}


@dataclass(frozen=True)
class LinearQuery(Query):
    """``sum_j w_j * mean(attribute j)`` with bounded attributes.

    ``Delta_B = sum over j in B of |w_j| (hi_j - lo_j)``.

    Parameters
    ----------
    weights : mapping of str to float
        ``w_j`` per attribute.
    bounds : mapping of str to (float, float)
        ``(lo_j, hi_j)`` per attribute.
    """

    weights: Mapping[str, float]
    bounds: Mapping[str, tuple[float, float]]
    kind: str = field(default="linear", init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.weights, Mapping) or not self.weights:
            raise QueryError("linear query needs a non-empty mapping of weights")
        attrs = _attrs(list(self.weights), "linear query")
        missing = [a for a in attrs if a not in self.bounds]
        if missing:
            raise QueryError(f"linear query: no bounds for {', '.join(map(repr, missing))}")
        extra = [a for a in self.bounds if a not in self.weights]
        if extra:
            raise QueryError(f"linear query: bounds for unweighted {', '.join(map(repr, extra))}")
        w = {}
        for a in attrs:
            try:
                w[a] = float(self.weights[a])
            except (TypeError, ValueError) as exc:
                raise QueryError(f"linear query: weight of {a!r} is not a number") from exc
            if not math.isfinite(w[a]):
                raise QueryError(f"linear query: weight of {a!r} is not finite")
        b = {a: _bounds(*self.bounds[a], f"linear query ({a!r})") for a in attrs}
        object.__setattr__(self, "weights", dict(w))
        object.__setattr__(self, "bounds", dict(b))

    @property
    def attributes(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(self.weights)

    def sensitivity(self, columns: Iterable[str]) -> float:
        cols = set(columns)
        return float(sum(abs(w) * (self.bounds[a][1] - self.bounds[a][0])
                         for a, w in self.weights.items() if a in cols))

    sensitivity_structure = "additive"

    def evaluate(self, data: pd.DataFrame) -> float:
        total = 0.0
        for a, w in self.weights.items():
            lo, hi = self.bounds[a]
            x = _bounded_values(data, a, lo, hi, "linear query")
            if x.size == 0:
                raise QueryError("linear query: the data has no rows")
            total += w * float(x.mean())
        return total

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "weights": dict(self.weights),
                "bounds": {a: list(b) for a, b in self.bounds.items()}}


@dataclass(frozen=True)
class HistogramQuery(_RecordBound):
    """Counts of records per joint category of ``attributes`` (L1 sensitivity ``2 n``).

    Changing the columns in ``B`` can move every record from one cell to another, which
    changes two counts by one each: ``Delta_B = 2 n`` when ``B`` meets ``A``.
    ``categories`` (optional) fixes the cells per attribute; values outside them are an error.
    """

    attributes: tuple[str, ...]
    records: int
    categories: Mapping[str, tuple[Any, ...]] | None = None
    kind: str = field(default="histogram", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes", _attrs(self.attributes, "histogram query"))
        object.__setattr__(self, "records", check_records(self.records))
        if self.categories is not None:
            cats = {a: tuple(self.categories[a]) for a in self.attributes
                    if a in self.categories}
            missing = [a for a in self.attributes if a not in cats]
            if missing:
                raise QueryError(f"histogram query: no categories for {missing}")
            object.__setattr__(self, "categories", cats)

    def sensitivity(self, columns: Iterable[str]) -> float:
        return 2.0 * self.records if set(columns) & set(self.attributes) else 0.0

    sensitivity_structure = "all-or-nothing"

    def evaluate(self, data: pd.DataFrame) -> np.ndarray:
        frame = _columns(data, self.attributes, "histogram query")
        if frame.isna().to_numpy().any():
            raise QueryError("histogram query: the data has missing values")
        if self.categories is None:
            cats = {a: tuple(sorted(frame[a].unique().tolist())) for a in self.attributes}
        else:
            cats = self.categories
        shape = tuple(len(cats[a]) for a in self.attributes)
        idx = []
        for a in self.attributes:
            lookup = {c: k for k, c in enumerate(cats[a])}
            codes = frame[a].map(lookup)
            if codes.isna().any():
                raise QueryError(f"histogram query: column {a!r} has values outside its "
                                 f"categories {list(cats[a])}")
            idx.append(codes.to_numpy(dtype=int))
        counts = np.zeros(shape, dtype=float)
        np.add.at(counts, tuple(idx), 1.0)
        return counts.ravel()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "attributes": list(self.attributes), "records": self.records,
                "categories": None if self.categories is None
                else {a: list(c) for a, c in self.categories.items()}}


@dataclass(frozen=True)
class CustomQuery(Query):
    """Any query with a user-supplied column sensitivity ``Delta(B)``.

    ``sensitivity_fn(frozenset B)`` is called with subsets of ``attributes`` only. It must be
    finite, non-negative and monotone (``B`` inside ``B'`` implies ``Delta(B) <= Delta(B')``),
    as every column sensitivity is; monotonicity is checked on every subset when the query is
    built (up to 16 attributes). Privacy never depends on it (each quilt's scale uses the
    true ``Delta(A & N)``); the planner's claim of optimality does.
    """

    attributes: tuple[str, ...]
    sensitivity_fn: Callable[[frozenset[str]], float]
    function: Callable[[pd.DataFrame], float | np.ndarray] | None = None
    name: str = "custom"
    kind: str = field(default="custom", init=False)

    def __post_init__(self) -> None:
        attrs = _attrs(self.attributes, "custom query")
        object.__setattr__(self, "attributes", attrs)
        if not callable(self.sensitivity_fn):
            raise QueryError("custom query: sensitivity_fn must be callable")
        if len(attrs) <= 16:
            values = {}
            for k in range(len(attrs) + 1):
                for b in combinations(attrs, k):
                    values[frozenset(b)] = self._delta(frozenset(b))
            if values[frozenset()] != 0:
                raise QueryError("custom query: Delta({}) must be 0")
            for b, v in values.items():
                for a in b:
                    if values[b - {a}] > v:
                        raise QueryError(
                            f"custom query: Delta is not monotone: Delta({sorted(b - {a})}) = "
                            f"{values[b - {a}]} > Delta({sorted(b)}) = {v}"
                        )

    def _delta(self, b: frozenset[str]) -> float:
        try:
            v = float(self.sensitivity_fn(b))
        except Exception as exc:
            raise QueryError(f"custom query: sensitivity_fn failed on {sorted(b)}: {exc}") from exc
        if not math.isfinite(v) or v < 0:
            raise QueryError(
                f"custom query: sensitivity_fn({sorted(b)}) = {v} is not a finite number >= 0")
        return v

    def sensitivity(self, columns: Iterable[str]) -> float:
        return self._delta(frozenset(set(columns) & set(self.attributes)))

    def evaluate(self, data: pd.DataFrame) -> float | np.ndarray:
        if self.function is None:
            raise QueryError("custom query: no function given to evaluate it")
        _columns(data, self.attributes, "custom query")
        return self.function(data)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "attributes": list(self.attributes)}

