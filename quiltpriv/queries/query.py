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

Domains are declared, never read off the data: a count's predicate is parsed once into a
checked tree (:mod:`quiltpriv.queries.predicate`) whose names must be exactly the query's
attributes, and may come with a declared ``domain`` (the values each attribute takes) and
``record_states`` (how those values map to the record categories of a model); a histogram's cells
are its declared ``categories``. Values outside a declared domain are an error at evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np

from quiltpriv.errors import QueryError
from quiltpriv.queries.predicate import Predicate, parse_predicate
from quiltpriv.utils.deprecation import reordered_arguments
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.rounding import mul_up, round_up, sum_of_spans_up
from quiltpriv.utils.validation import check_records

if TYPE_CHECKING:  # pandas is imported when data are evaluated, not when queries are built
    import pandas as pd


def _attrs(attributes: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(attributes, str):
        attributes = [attributes]
    try:
        out = tuple(attributes)
    except TypeError:
        raise QueryError(f"{what}: attributes must be a list of attribute names, got "
                         f"{type(attributes).__name__}") from None
    if not out:
        raise QueryError(f"{what} needs at least one attribute")
    for a in out:
        if not isinstance(a, str) or not a:
            raise QueryError(f"{what}: attribute names must be non-empty strings, got {a!r}")
    if len(set(out)) != len(out):
        raise QueryError(f"{what}: duplicate attribute in {list(out)}")
    return out


def _number(v: Any, what: str) -> float:
    """``v`` as a finite float; a non-number, or one beyond the float range (a huge integer
    or Fraction), is refused with the query's error rather than an OverflowError."""
    try:
        out = float(v)
    except (TypeError, ValueError, OverflowError) as exc:
        raise QueryError(f"{what}: {v!r} is not a number" if not isinstance(exc, OverflowError)
                         else f"{what}: {_short(v)} is beyond the floating-point range "
                         "(about 1.8e308)") from None
    if not math.isfinite(out):
        raise QueryError(f"{what}: {_short(v)} is not finite")
    return out


def _short(v: Any) -> str:
    """``v`` for an error line: a huge integer is shown by its number of digits only."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        # str() of an integer over 4,300 digits raises; its length follows from its bits.
        return f"an integer of about {int(v.bit_length() * math.log10(2)) + 1} digits"
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _bounds(lo: Any, hi: Any, what: str) -> tuple[float, float]:
    lo_f = _number(lo, f"{what}: lower bound")
    hi_f = _number(hi, f"{what}: upper bound")
    if lo_f > hi_f:
        raise QueryError(f"{what}: lower bound {lo_f} exceeds upper bound {hi_f}")
    if not math.isfinite(hi_f - lo_f):
        raise QueryError(f"{what}: the width of [{_fmt(lo_f)}, {_fmt(hi_f)}] is not a finite float "
                         "(it overflows); its sensitivity would be infinite")
    return lo_f, hi_f


def _pair(bounds: Any, what: str) -> tuple[Any, Any]:
    """Untrusted ``(lo, hi)``: exactly two values."""
    if isinstance(bounds, str | bytes) or not isinstance(bounds, Sequence) or len(bounds) != 2:
        raise QueryError(f"{what}: bounds must be a pair (lower, upper), got {_short(bounds)}")
    return bounds[0], bounds[1]


def _finite_sensitivity(value: float, what: str, hint: str = "narrow the bounds") -> float:
    """Refuse a query whose sensitivity overflows (no finite noise could protect it)."""
    if not math.isfinite(value):
        raise QueryError(f"{what}: its sensitivity is not a finite float (it overflows); {hint}")
    return value


def query_columns(data: pd.DataFrame, columns: Sequence[str], what: str) -> pd.DataFrame:
    """The one place that decides which columns of ``data`` a query may read.

    Exactly one column per declared attribute, in declared order: a frame whose columns are
    not flat names, or that holds a declared attribute's name more than once, is refused
    (reading both copies of a summed column would double its privacy loss; [ZOC22],
    Section 5.1 bounds one column per attribute).
    """
    import pandas as pd

    if not isinstance(data, pd.DataFrame):
        raise QueryError(f"{what}: data must be a pandas DataFrame, got {type(data).__name__}")
    if isinstance(data.columns, pd.MultiIndex):
        raise QueryError(f"{what}: the data's columns must be plain names, not a MultiIndex")
    names = list(data.columns)
    wanted = set(columns)
    counts: dict[Any, int] = {}
    for c in names:
        if isinstance(c, str) and c in wanted:
            counts[c] = counts.get(c, 0) + 1
    dup = [c for c in columns if counts.get(c, 0) > 1]
    if dup:
        raise QueryError(f"{what}: the data have more than one column named "
                         f"{', '.join(map(repr, dup))}; a query reads exactly one column per "
                         "attribute")
    missing = [c for c in columns if counts.get(c, 0) == 0]
    if missing:
        raise QueryError(f"{what}: the data has no column(s) {', '.join(map(repr, missing))}")
    pos = {c: k for k, c in enumerate(names) if isinstance(c, str) and c in wanted}
    take = [pos[c] for c in columns]  # positions: exactly the declared columns once each
    return data if take == list(range(len(names))) else data.iloc[:, take]  # (iloc: slow)


_columns = query_columns


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
            f"[{_fmt(lo)}, {_fmt(hi)}] (e.g. {_fmt(x[bad][0])}); clip the data or widen the bounds"
        )
    return x


#: Most values in one declared domain (an attribute's categories), and most cells of a histogram.
MAX_DOMAIN_SIZE = 100_000
MAX_HISTOGRAM_CELLS = 1 << 22


def _plain(v: Any, what: str) -> int | float | str | bool:
    """A declared value as a plain Python str, int, float (finite) or bool."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, str | bool | int):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise QueryError(f"{what}: {v!r} is not a finite number")
        return v
    raise QueryError(f"{what}: {v!r} ({type(v).__name__}) is not a number or a text")


def _domain(values: Any, what: str) -> tuple[Any, ...]:
    """A declared domain: distinct numbers, or distinct texts, in the declared order."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise QueryError(f"{what}: declare a list of values, got {values!r}")
    out: list[Any] = []
    keys: set[Any] = set()
    for v in values:
        v = _plain(v, what)
        if len(out) >= MAX_DOMAIN_SIZE:
            raise QueryError(f"{what}: more than {MAX_DOMAIN_SIZE} values")
        key = _value_key(v)
        if key in keys:
            raise QueryError(f"{what}: the value {v!r} is declared twice")
        keys.add(key)
        out.append(v)
    if not out:
        raise QueryError(f"{what}: the domain is empty")
    if len({k[0] for k in keys}) > 1:
        raise QueryError(f"{what}: mixes numbers and text {out[:6]}; declare one or the other")
    return tuple(out)


def _value_key(v: Any) -> tuple[str, Any]:
    # Numbers by value (1, 1.0 and True are one value), text as itself.
    return ("text", v) if isinstance(v, str) else ("number", float(v))


def _data_key(v: Any) -> tuple[str, Any] | None:
    if isinstance(v, str):
        return ("text", v)
    if isinstance(v, bool | int | float | np.integer | np.floating | np.bool_):
        return ("number", float(v))
    return None


def _domain_codes(values: pd.Series, domain: Sequence[Any], what: str, col: str,
                  fallback: int | None = None) -> np.ndarray:
    """Index of each data value in ``domain`` (``fallback`` for others, else an error)."""
    import pandas as pd

    index: dict[tuple[str, Any] | None, int] = {_value_key(v): k for k, v in enumerate(domain)}
    numeric = pd.api.types.is_numeric_dtype(values.dtype) or \
        pd.api.types.is_bool_dtype(values.dtype)
    raw = values.to_numpy()
    if numeric:
        lookup = {key[1]: k for key, k in index.items() if key is not None and key[0] == "number"}
        mapped = pd.Series(raw.astype(float)).map(lookup)
        codes = mapped.fillna(-1).to_numpy(dtype=np.int64)
    else:
        codes = np.fromiter((index.get(_data_key(v), -1) for v in raw), dtype=np.int64,
                            count=len(raw))
    bad = codes < 0
    if np.any(bad):
        if fallback is not None:
            codes[bad] = fallback
        else:
            example = raw[np.flatnonzero(bad)[0]]
            if isinstance(example, np.generic):
                example = example.item()
            kind = "numbers" if numeric else "text"
            declared = "text" if isinstance(domain[0], str) else "numbers"
            hint = (f" (the column holds {kind}, the domain is {declared})"
                    if kind != declared else "")
            shown = ", ".join(repr(v) for v in list(domain)[:8])
            more = ", ..." if len(domain) > 8 else ""
            raise QueryError(
                f"{what}: column {col!r} has {int(bad.sum())} value(s) outside its declared "
                f"domain [{shown}{more}] (e.g. {example!r}){hint}")
    return codes


def declared_domain(values: Any, what: str) -> tuple[Any, ...]:
    """A declared domain (untrusted), checked: distinct numbers, or distinct texts, in the
    declared order (:class:`~quiltpriv.errors.QueryError` naming ``what`` otherwise)."""
    return _domain(values, what)


def check_in_domain(values: pd.Series, domain: Sequence[Any], what: str, col: str) -> None:
    """Refuse a data column ``col`` with a value outside its declared ``domain``."""
    import pandas as pd

    if not isinstance(values, pd.Series):
        raise QueryError(f"{what}: column {col!r} must be a pandas Series, got "
                         f"{type(values).__name__}")
    _domain_codes(values, _domain(domain, f"{what}: domain of {col!r}"), what, col)


class Query:
    """Base class: a query ``F`` over attributes ``A`` with column sensitivities ``Delta_B``.

    ``Delta_B F`` is the most ``F`` changes when the columns ``B`` of every record change
    ([ZOC22, Def. 6]); a mechanism adds noise scaled to it. Subclasses say how to compute it
    (:meth:`sensitivity`) and how to evaluate ``F`` on data (:meth:`evaluate`).

    Examples
    --------
    >>> import quiltpriv as qp
    >>> query = qp.MeanQuery("hours", lower=0, upper=40)
    >>> isinstance(query, qp.Query), query.attributes
    (True, ('hours',))
    >>> query.sensitivity({"hours"}), query.sensitivity({"income"})
    (40.0, 0.0)
    """

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

    def check_records(self, records: int) -> None:
        """Raise if data of ``records`` rows break the sensitivity this query was planned with."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.kind} over {', '.join(self.attributes)}"


def check_query(query: object, name: str = "query") -> Query:
    """Return ``query`` if it is one of quiltpriv's queries, else raise QueryError naming what
    it is: the one check every function taking a query starts with."""
    if not isinstance(query, Query):
        raise QueryError(f"{name} must be a quiltpriv query (CountQuery, SumQuery, ... from "
                         f"quiltpriv.queries.query), got {type(query).__name__}")
    return query


class _RecordBound(Query):
    records: int

    def check_records(self, records: int) -> None:
        if records > self.records:
            raise QueryError(
                f"the data has {records} records but the query was planned for at most "
                f"{self.records}; its sensitivity would be under-estimated"
            )


@dataclass(frozen=True)
class CountQuery(_RecordBound):
    """Number of records satisfying a predicate over ``attributes``.

    Parameters
    ----------
    attributes : sequence of str
        The attributes ``A`` the predicate reads; with ``where`` they must be exactly the
        names it reads.
    records : int
        ``n``, an upper bound on the number of records (public).
    where : str or Predicate, optional
        The predicate, in quiltpriv's predicate language (:mod:`quiltpriv.queries.predicate`), e.g.
        ``"height > 66 and sat > 1300"``; parsed and checked here, stored as its canonical
        text. Required to evaluate, not to plan.
    domain : mapping of str to sequence, optional
        The values each attribute can take (declared, never read off the data): ``evaluate``
        refuses data outside it, and every literal the predicate compares with an attribute
        must be one of its values. Needed by mechanisms that use the model's law of the count
        (the Wasserstein mechanism on a network, ``compare``, ``audit``): there a domain equal
        to the model's record categories (``(0, 1)`` for a Bernoulli node, ``0..k-1`` for a
        categorical one) is read as those categories.
    record_states : mapping of str to mapping, optional
        Per attribute, data value -> record category of the model (``{"height": {"short": 0,
        "tall": 1}}``): how a mechanism that uses the model reads the data. Its keys are the
        attribute's domain (declared with ``domain`` or taken from these keys).

    Attributes
    ----------
    predicate : Predicate or None
        The parsed ``where``.

    Examples
    --------
    Changing the height or the SAT score of every record can change the count by ``n``:

    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> query = qp.CountQuery(["height", "sat"], records=1000,
    ...                       where="height > 66 and sat > 1300")
    >>> query.sensitivity({"height"}), query.sensitivity({"income"})
    (1000.0, 0.0)
    >>> query.evaluate(pd.DataFrame({"height": [60, 70, 72], "sat": [1400, 1350, 1200]}))
    1.0
    """

    attributes: tuple[str, ...]
    records: int
    where: str | Predicate | None = None
    domain: Mapping[str, Sequence[Any]] | None = None
    record_states: Mapping[str, Mapping[Any, int]] | None = None
    kind: str = field(default="count", init=False)
    predicate: Predicate | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        attrs = _attrs(self.attributes, "count query")
        object.__setattr__(self, "attributes", attrs)
        object.__setattr__(self, "records", check_records(self.records))
        domain, states = _declared_domain(attrs, self.domain, self.record_states)
        object.__setattr__(self, "domain", domain)
        object.__setattr__(self, "record_states", states)
        if self.where is None:
            return
        pred = parse_predicate(self.where)
        extra = [a for a in attrs if a not in pred.names]
        undeclared = [a for a in pred.names if a not in attrs]
        if extra or undeclared:
            parts = []
            if undeclared:
                parts.append(f"read but not declared: {', '.join(map(repr, undeclared))}")
            if extra:
                parts.append(f"declared but not read: {', '.join(map(repr, extra))}")
            raise QueryError(
                f"count query: the attributes must be exactly those the predicate "
                f"{str(pred)!r} reads ({'; '.join(parts)})")
        if domain is not None:
            pred.check_domain(domain, "count query")
        object.__setattr__(self, "predicate", pred)
        object.__setattr__(self, "where", str(pred))

    def sensitivity(self, columns: Iterable[str]) -> float:
        # linear in |B|, not in |A| (a count over every step of a long series)
        attrs = self.__dict__.get("_attribute_set")
        if attrs is None:
            attrs = frozenset(self.attributes)
            object.__setattr__(self, "_attribute_set", attrs)
        return float(self.records) if any(c in attrs for c in columns) else 0.0

    sensitivity_structure = "all-or-nothing"

    def evaluate(self, data: pd.DataFrame) -> float:
        if self.predicate is None:
            raise QueryError("count query: give a predicate (where=...) to evaluate it")
        frame = _columns(data, self.attributes, "count query")
        if frame.isna().to_numpy().any():
            raise QueryError("count query: the data has missing/NaN values in "
                             f"{[c for c in self.attributes if frame[c].isna().any()]}")
        if self.domain is not None:
            for a in self.attributes:
                _domain_codes(frame[a], self.domain[a], "count query", a)
        return float(self.predicate.evaluate(frame).sum())

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "attributes": list(self.attributes),
                             "records": self.records, "where": self.where}
        # Only when declared, so that records of queries without one are unchanged.
        if self.domain is not None:
            d["domain"] = {a: list(v) for a, v in self.domain.items()}
        if self.record_states is not None:
            d["record_states"] = {a: [[v, k] for v, k in m.items()]
                                  for a, m in self.record_states.items()}
        return d


def _declared_domain(
    attrs: tuple[str, ...], domain: Mapping[str, Sequence[Any]] | None,
    record_states: Mapping[str, Mapping[Any, int]] | None,
) -> tuple[dict[str, tuple[Any, ...]] | None, dict[str, dict[Any, int]] | None]:
    """Check ``domain`` and ``record_states`` of a count query; complete the domain."""
    if domain is None and record_states is None:
        return None, None
    for name, given in (("domain", domain), ("record_states", record_states)):
        _check_attribute_mapping(name, given, attrs)
    out: dict[str, tuple[Any, ...]] = {}
    for a, values in (domain or {}).items():
        out[a] = _domain(values, f"count query: domain of {a!r}")
    states: dict[str, dict[Any, int]] = {}
    for a, mapping in (record_states or {}).items():
        what = f"count query: record_states of {a!r}"
        keys, states[a] = _record_state_map(mapping, what)
        if a in out:
            _check_all_mapped(out[a], keys, what)
        else:
            out[a] = keys
    missing = [a for a in attrs if a not in out]
    if missing:
        raise QueryError(f"count query: declare the domain of every attribute (missing: "
                         f"{', '.join(map(repr, missing))})")
    return {a: out[a] for a in attrs}, (states or None)


def _check_attribute_mapping(name: str, given: object, attrs: tuple[str, ...]) -> None:
    """``given`` (untrusted: any object) is None or a mapping over some of ``attrs``."""
    if given is not None and not isinstance(given, Mapping):
        raise QueryError(f"count query: {name} must be a mapping attribute -> "
                         f"{'values' if name == 'domain' else '{value: category}'}")
    unknown = [a for a in (given or {}) if a not in attrs]
    if unknown:
        raise QueryError(f"count query: {name} names {unknown}, which are not among the "
                         f"attributes {list(attrs)}")


def _record_state_map(mapping: object, what: str) -> tuple[tuple[Any, ...], dict[Any, int]]:
    """One attribute's ``record_states`` (untrusted: any object): its data values, and each
    one's record category (a whole number >= 0)."""
    if not isinstance(mapping, Mapping):
        raise QueryError(f"{what}: give a mapping data value -> record category")
    keys = _domain(list(mapping), what)
    m: dict[Any, int] = {}
    for v, k in zip(keys, mapping.values(), strict=True):
        if isinstance(k, np.integer):
            k = int(k)
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise QueryError(f"{what}: {v!r} maps to {k!r}; a record category is a whole "
                             "number >= 0 (0/1 for a Bernoulli node, 0..k-1 for a "
                             "categorical one)")
        m[v] = k
    return keys, m


def _check_all_mapped(declared_values: Sequence[Any], keys: Sequence[Any], what: str) -> None:
    """Refuse record_states that do not map exactly the declared values."""
    declared = {_value_key(v) for v in declared_values}
    mapped = {_value_key(v) for v in keys}
    unmapped = [v for v in declared_values if _value_key(v) not in mapped]
    undeclared = [v for v in keys if _value_key(v) not in declared]
    if unmapped or undeclared:
        raise QueryError(f"{what}: every declared value must be mapped, and only those"
                         + (f"; not mapped: {unmapped[:6]}" if unmapped else "")
                         + (f"; not in the domain: {undeclared[:6]}" if undeclared else ""))


@reordered_arguments(("attribute", "lower", "upper", "records"), 2)
@dataclass(frozen=True)
class SumQuery(_RecordBound):
    """Sum of one bounded attribute over ``records`` rows: ``Delta = n (hi - lo)``.

    ``SumQuery(attribute, records, lower=..., upper=...)``, the shape of every query
    constructor (attributes, then ``records``, then the bounds by keyword); the old order
    ``SumQuery(attribute, lower, upper, records)`` still works, with a DeprecationWarning.

    Parameters
    ----------
    attribute : str
        The attribute summed.
    records : int
        ``n``, an upper bound on the number of records (public).
    lower, upper : float
        Public bounds on its values; a value outside them is an error when evaluated.

    Examples
    --------
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> query = qp.SumQuery("hours", 100, lower=0, upper=40)
    >>> query.sensitivity({"hours"})
    4000.0
    >>> query.evaluate(pd.DataFrame({"hours": [10, 20, 35]}))
    65.0
    """

    attribute: str
    records: int
    lower: float = field(kw_only=True)
    upper: float = field(kw_only=True)
    kind: str = field(default="sum", init=False)

    def __post_init__(self) -> None:
        _attrs([self.attribute], "sum query")
        lo, hi = _bounds(self.lower, self.upper, "sum query")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "records", check_records(self.records))
        _finite_sensitivity(self.records * (hi - lo), "sum query")

    @property
    def attributes(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.attribute,)

    def sensitivity(self, columns: Iterable[str]) -> float:
        hit = self.attribute in set(columns)  # Delta exact, rounded up
        return mul_up(self.records, Fraction(self.upper) - Fraction(self.lower)) if hit else 0.0

    sensitivity_structure = "all-or-nothing"  # one attribute

    def evaluate(self, data: pd.DataFrame) -> float:
        return float(_bounded_values(data, self.attribute, self.lower, self.upper,
                                     "sum query").sum())

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "attribute": self.attribute, "lower": self.lower,
                "upper": self.upper, "records": self.records}


@reordered_arguments(("attribute", "lower", "upper"), 1)
@dataclass(frozen=True)
class MeanQuery(Query):
    """Mean of one attribute with values in ``[lower, upper]``: ``Delta = hi - lo``.

    ``MeanQuery(attribute, lower=..., upper=...)`` (the bounds by keyword, as every query
    constructor takes them); the old ``MeanQuery(attribute, lower, upper)`` still works, with a
    DeprecationWarning.

    Parameters
    ----------
    attribute : str
        The attribute averaged.
    lower, upper : float
        Public bounds on its values; a value outside them is an error when evaluated.

    Examples
    --------
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> query = qp.MeanQuery("hours", lower=0, upper=40)
    >>> query.sensitivity({"hours"})
    40.0
    >>> query.evaluate(pd.DataFrame({"hours": [10, 20, 36]}))
    22.0
    """

    attribute: str
    lower: float = field(kw_only=True)
    upper: float = field(kw_only=True)
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
        hit = self.attribute in set(columns)  # Delta exact, rounded up
        return round_up(Fraction(self.upper) - Fraction(self.lower)) if hit else 0.0

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

    Examples
    --------
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> query = qp.LinearQuery({"math": 0.5, "reading": 0.5},
    ...                        {"math": (0, 100), "reading": (0, 100)})
    >>> query.sensitivity({"math"}), query.sensitivity({"math", "reading"})
    (50.0, 100.0)
    >>> query.evaluate(pd.DataFrame({"math": [80, 90], "reading": [70, 60]}))
    75.0
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
            w[a] = _number(self.weights[a], f"linear query: weight of {a!r}")
        b = {a: _bounds(*_pair(self.bounds[a], f"linear query ({a!r})"),
                        f"linear query ({a!r})") for a in attrs}
        _finite_sensitivity(sum(abs(w[a]) * (b[a][1] - b[a][0]) for a in attrs),
                            "linear query", "narrow the bounds or the weights")
        object.__setattr__(self, "weights", dict(w))
        object.__setattr__(self, "bounds", dict(b))
        # Built once: a query over every step of a long series is asked for its attributes and
        # for the sensitivity of small column sets many times (each must not cost O(|A|)).
        object.__setattr__(self, "_attribute_tuple", tuple(w))
        object.__setattr__(self, "_position", {a: k for k, a in enumerate(w)})

    @property
    def attributes(self) -> tuple[str, ...]:  # type: ignore[override]
        return self._attribute_tuple  # type: ignore[attr-defined]

    def sensitivity(self, columns: Iterable[str]) -> float:
        # Exact and rounded up (never below the true Delta_B), in time linear in |B|.
        keys = [a for a in set(columns) if a in self._position]  # type: ignore[attr-defined]
        return sum_of_spans_up([self.weights[a] for a in keys], [self.bounds[a][0] for a in keys],
                               [self.bounds[a][1] for a in keys])

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

    The cells are declared, never read off the data (which values occur would otherwise be
    released without noise, and two neighbouring datasets could give vectors of different
    lengths): ``categories`` lists, per attribute, its values in order. The output has one
    cell per combination (:attr:`cells`, last attribute fastest), always all of them. A data
    value outside an attribute's categories is an error, unless ``catch_all`` declares a
    cell for such values.

    Parameters
    ----------
    attributes : sequence of str
        The attributes whose joint categories are counted.
    records : int
        ``n``, an upper bound on the number of records (public).
    categories : mapping of str to sequence
        Required: the values of every attribute (numbers or texts), in output order.
    catch_all : str or mapping of str to value, optional
        A label (for every attribute, or per attribute) of an extra last category that counts
        the values outside the declared ones.

    Examples
    --------
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> query = qp.HistogramQuery(["smoker"], records=100,
    ...                           categories={"smoker": ["yes", "no"]}, catch_all="other")
    >>> query.cells
    (('yes',), ('no',), ('other',))
    >>> query.sensitivity({"smoker"})
    200.0
    >>> query.evaluate(pd.DataFrame({"smoker": ["yes", "no", "no", "unknown"]}))
    array([1., 2., 1.])
    """

    attributes: tuple[str, ...]
    records: int
    categories: Mapping[str, Sequence[Any]] | None = None
    catch_all: Any = None
    kind: str = field(default="histogram", init=False)

    def __post_init__(self) -> None:
        attrs = _attrs(self.attributes, "histogram query")
        object.__setattr__(self, "attributes", attrs)
        object.__setattr__(self, "records", check_records(self.records))
        if self.categories is None or not isinstance(self.categories, Mapping):
            raise QueryError(
                "histogram query: declare the categories of every attribute, e.g. "
                "categories={'a': ('x', 'y')} (on the command line --categories a=x|y); the "
                "cells are never read off the data")
        missing = [a for a in attrs if a not in self.categories]
        extra = [a for a in self.categories if a not in attrs]
        if missing or extra:
            raise QueryError(
                "histogram query: declare categories for exactly the attributes"
                + (f"; missing: {missing}" if missing else "")
                + (f"; not an attribute: {extra}" if extra else ""))
        cats = {a: _domain(self.categories[a], f"histogram query: categories of {a!r}")
                for a in attrs}
        other: dict[str, Any] | None = None
        if self.catch_all is not None:
            if isinstance(self.catch_all, Mapping):
                bad = [a for a in self.catch_all if a not in attrs]
                if bad:
                    raise QueryError(f"histogram query: catch_all names {bad}, which are not "
                                     "attributes")
                other = {a: self.catch_all[a] for a in attrs if a in self.catch_all}
            else:
                other = {a: self.catch_all for a in attrs}
            for a, label in other.items():
                what = f"histogram query: catch-all label of {a!r}"
                label = other[a] = _plain(label, what)
                if _value_key(label) in {_value_key(v) for v in cats[a]}:
                    raise QueryError(f"{what} {label!r} is also a declared category")
        n_cells = math.prod(len(cats[a]) + (other is not None and a in other) for a in attrs)
        if n_cells > MAX_HISTOGRAM_CELLS:
            raise QueryError(f"histogram query: {n_cells} cells; at most "
                             f"{MAX_HISTOGRAM_CELLS}")
        object.__setattr__(self, "categories", cats)
        object.__setattr__(self, "catch_all", other)

    def _labels(self, a: str) -> tuple[Any, ...]:
        extra = () if not self.catch_all or a not in self.catch_all else (self.catch_all[a],)
        return (*self.categories[a], *extra)  # type: ignore[index]

    @property
    def cells(self) -> tuple[tuple[Any, ...], ...]:
        """The label of every output cell (one value per attribute), in output order."""
        return tuple(product(*(self._labels(a) for a in self.attributes)))

    def sensitivity(self, columns: Iterable[str]) -> float:
        return 2.0 * self.records if set(columns) & set(self.attributes) else 0.0

    sensitivity_structure = "all-or-nothing"

    def evaluate(self, data: pd.DataFrame) -> np.ndarray:
        frame = _columns(data, self.attributes, "histogram query")
        if frame.isna().to_numpy().any():
            raise QueryError("histogram query: the data has missing values in "
                             f"{[c for c in self.attributes if frame[c].isna().any()]}")
        shape = tuple(len(self._labels(a)) for a in self.attributes)
        idx = []
        for a, size in zip(self.attributes, shape, strict=True):
            fallback = size - 1 if self.catch_all and a in self.catch_all else None
            idx.append(_domain_codes(frame[a], self.categories[a],  # type: ignore[index]
                                     "histogram query", a, fallback))
        flat = np.ravel_multi_index(tuple(idx), shape) if idx[0].size else np.zeros(0, int)
        return np.bincount(flat, minlength=math.prod(shape)).astype(float)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": self.kind, "attributes": list(self.attributes), "records": self.records,
            "categories": {a: list(c) for a, c in self.categories.items()}}  # type: ignore
        if self.catch_all:
            d["catch_all"] = dict(self.catch_all)
        return d


def histogram_cells(query: Mapping[str, Any]) -> tuple[tuple[Any, ...], ...] | None:
    """Cell labels of a histogram from its ``to_dict()`` record (None for other queries)."""
    if not isinstance(query, Mapping):
        raise QueryError(f"query must be a query's to_dict() record, got {type(query).__name__}")
    if query.get("kind") != "histogram" or not query.get("categories"):
        return None
    other = query.get("catch_all") or {}
    return tuple(product(*((*query["categories"][a], *([other[a]] if a in other else []))
                           for a in query["attributes"])))


#: A custom query with at most this many attributes lists its whole sensitivity table (every
#: subset ``B`` of ``A``) in :meth:`CustomQuery.to_dict`, so its definition, and hence a plan's
#: query fingerprint, covers every value of ``Delta``; beyond it the table would be too long to
#: record and the fingerprint covers the values a plan used.
CUSTOM_TABLE_ATTRIBUTES = 8

#: The table of a custom query with at most this many attributes is computed (and checked
#: monotone) once, when the query is built.
CUSTOM_CHECK_ATTRIBUTES = 16


@dataclass(frozen=True)
class CustomQuery(Query):
    """Any query with a user-supplied column sensitivity ``Delta(B)``.

    ``sensitivity_fn(frozenset B)`` is called with subsets of ``attributes`` only. It must be
    finite, non-negative and monotone (``B`` inside ``B'`` implies ``Delta(B) <= Delta(B')``),
    as every column sensitivity is. Up to 16 attributes, every value is computed and checked
    when the query is built; beyond that each value is computed when first needed. Either
    way the first value is kept: the query's sensitivity never changes afterwards, whatever
    ``sensitivity_fn`` does on later calls. Privacy never depends on monotonicity (each
    quilt's scale uses the true ``Delta(A & N)``); the planner's claim of optimality does.

    ``function(frame)`` receives a copy of the declared columns only, in declared order, with
    a fresh index: it cannot read another column of the data or change the caller's frame.
    quiltpriv cannot check that ``function`` has the sensitivity ``sensitivity_fn`` declares;
    that declaration is what the guarantee rests on.

    Parameters
    ----------
    attributes : sequence of str
        The attributes ``A`` the query reads.
    sensitivity_fn : callable
        ``Delta(B)`` for a frozenset ``B`` of attributes: finite, non-negative, monotone,
        0 for the empty set.
    function : callable, optional
        ``F``: a DataFrame of the declared columns -> a number or an array. Required to
        evaluate, not to plan.
    name : str, default "custom"
        A name for plans, records and reports.

    Examples
    --------
    Two scores in [0, 2], summed over at most one record each:

    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> query = qp.CustomQuery(["a", "b"], lambda columns: 2.0 * len(columns),
    ...                        function=lambda frame: float(frame.to_numpy().sum()),
    ...                        name="total")
    >>> query.sensitivity({"a"}), query.sensitivity({"a", "b"})
    (2.0, 4.0)
    >>> query.evaluate(pd.DataFrame({"a": [1, 0], "b": [2, 1]}))
    4.0

    A sensitivity that falls when a column is added is refused:

    >>> qp.CustomQuery(["a", "b"], lambda columns: 1.0 if columns == {"a"} else 0.0)
    Traceback (most recent call last):
    ...
    quiltpriv.errors.QueryError: custom query: Delta is not monotone: ...
    """

    attributes: tuple[str, ...]
    sensitivity_fn: Callable[[frozenset[str]], float]
    function: Callable[[pd.DataFrame], float | np.ndarray] | None = None
    name: str = "custom"
    kind: str = field(default="custom", init=False)
    # Delta by bit mask of the attributes (bit k: attributes[k]); filled once, never changed.
    _values: dict[int, float] = field(default_factory=dict, init=False, repr=False,
                                      compare=False)

    def __post_init__(self) -> None:
        attrs = _attrs(self.attributes, "custom query")
        object.__setattr__(self, "attributes", attrs)
        if not callable(self.sensitivity_fn):
            raise QueryError("custom query: sensitivity_fn must be callable")
        if not isinstance(self.name, str):
            raise QueryError(f"custom query: name must be a string, got {self.name!r}")
        if self.function is not None and not callable(self.function):
            raise QueryError("custom query: function must be callable")
        if len(attrs) <= CUSTOM_CHECK_ATTRIBUTES:
            values = {mask: self._value(mask) for mask in range(1 << len(attrs))}
            if values[0] != 0:
                raise QueryError("custom query: Delta({}) must be 0")
            for mask, v in values.items():
                for k in range(len(attrs)):
                    sub = mask & ~(1 << k)
                    if sub != mask and values[sub] > v:
                        raise QueryError(
                            f"custom query: Delta is not monotone: Delta({self._names(sub)}) = "
                            f"{values[sub]} > Delta({self._names(mask)}) = {v}"
                        )

    def _names(self, mask: int) -> list[str]:
        return sorted(a for k, a in enumerate(self.attributes) if mask >> k & 1)

    def _value(self, mask: int) -> float:
        """``Delta`` of the attributes in ``mask``: computed once, then always the same."""
        v = self._values.get(mask)
        if v is None:
            b = frozenset(a for k, a in enumerate(self.attributes) if mask >> k & 1)
            v = self._delta(b)
            self._values[mask] = v
        return v

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
        cols = set(columns)
        return self._value(sum(1 << k for k, a in enumerate(self.attributes) if a in cols))

    def evaluate(self, data: pd.DataFrame) -> float | np.ndarray:
        if self.function is None:
            raise QueryError("custom query: no function given to evaluate it")
        import pandas as pd

        frame = _columns(data, self.attributes, "custom query")
        # A fresh frame: declared columns only, copied, with a plain index (the caller's
        # index could itself be a column, and a view could reach back to the whole frame).
        own = pd.DataFrame({a: frame[a].array.copy() for a in self.attributes})
        try:
            return self.function(own)
        except Exception as exc:  # the user's code: report it as this query's failure
            raise QueryError(f"custom query {self.name!r}: its function failed on the declared "
                             f"columns {list(self.attributes)}: {type(exc).__name__}: {exc}"
                             ) from exc

    def to_dict(self) -> dict[str, Any]:
        """Kind, name, attributes and, up to :data:`CUSTOM_TABLE_ATTRIBUTES` attributes, the
        whole sensitivity table as ``[[columns, Delta], ...]`` (subsets in bit-mask order of
        the declared attributes); beyond that ``"sensitivity"`` is ``None``."""
        table = None
        if len(self.attributes) <= CUSTOM_TABLE_ATTRIBUTES:
            table = [[[a for k, a in enumerate(self.attributes) if mask >> k & 1],
                      self._value(mask)] for mask in range(1 << len(self.attributes))]
        return {"kind": self.kind, "name": self.name, "attributes": list(self.attributes),
                "sensitivity": table}
