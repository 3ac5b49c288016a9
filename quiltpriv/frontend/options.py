"""The query options of the command line and of the explorer, parsed into a checked query.

``quiltpriv plan --query count --attributes A --records N --where ...`` and the explorer's
query form give a query as option texts; :func:`query_from_options` turns them into a
:class:`~quiltpriv.queries.query.Query` once, at the boundary, with every numeric option
checked by :func:`parse_number` under its own name. ``options`` is any object with the
attributes ``query``, ``attributes``, ``records``, ``where``, ``bounds``, ``weights``,
``domain``, ``record_states`` and ``catch_all`` (the command line's parsed arguments, or a
:class:`types.SimpleNamespace`); the last three may be missing (not given).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.queries.fraction import FractionQuery
from quiltpriv.queries.query import (
    CountQuery,
    HistogramQuery,
    LinearQuery,
    MeanQuery,
    Query,
    SumQuery,
)
from quiltpriv.utils.validation import Boundaries, check_records, check_scalar

__all__ = ["QUERY_KINDS", "domain_from_options", "domain_from_text", "parse_number",
           "query_from_options", "record_states_from_options", "split_list"]

_RANGE = re.compile(r"^(?P<prefix>.*?)(?P<lo>\d+)\.\.(?P=prefix)?(?P<hi>\d+)$")


def _expand_steps(text: str) -> list[str]:
    """The command line's step ranges: ``"X1..X5"`` (or ``"X1..5"``) as ``["X1", ..., "X5"]``;
    any other text as itself."""
    m = _RANGE.match(text.strip())
    if m is None:
        return [text.strip()]
    lo, hi = int(m["lo"]), int(m["hi"])
    if hi < lo:
        raise QueryError(f"the step range {text!r} runs backwards")
    if hi - lo >= 10**7:
        raise QueryError(f"the step range {text!r} has more than 10,000,000 steps")
    return [f"{m['prefix']}{t}" for t in range(lo, hi + 1)]

#: The query kinds of ``--query``.
QUERY_KINDS = ("count", "sum", "mean", "linear", "histogram", "fraction")


def split_list(text: str | Sequence[str] | None) -> list[str]:
    """``A1,A2,...`` as a list of the non-empty, stripped items (a list of names, as the
    command line expands ``all`` and ``@FILE``, is taken item by item, unsplit)."""
    if isinstance(text, list | tuple):
        if not all(isinstance(s, str) for s in text):
            raise ParameterError("expected a list of names (str)")
        return [s.strip() for s in text if s.strip()]
    if text is not None and not isinstance(text, str):
        raise ParameterError(f"expected a comma-separated text, got {type(text).__name__}")
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def _parse_number(text: str, option: str, integer: bool) -> float:
    """The number TEXT spells: an int when it is one (exact, however long), else a float."""
    if not isinstance(text, str):
        raise ParameterError(f"{option} must be a number's text, got {type(text).__name__}")
    if integer:
        try:
            return int(text)
        except ValueError:  # "1e6", "2.5", or more digits than int() reads
            pass
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"{option} must be a number, got {text!r}") from None


def parse_number(text: str, option: str, *, integer: bool = False,
                 min_val: float | None = None, max_val: float | None = None,
                 include_boundaries: Boundaries = "both") -> float:
    """Parse an option's TEXT and check it with :func:`~quiltpriv.utils.validation.check_scalar`.

    Every numeric option goes through here, so each is refused (NaN, infinite, not whole, out
    of range) with its own name before any work starts.
    """
    return check_scalar(_parse_number(text, option, integer), option, integer=integer,
                        min_val=min_val, max_val=max_val,
                        include_boundaries=include_boundaries)


def _float(text: str, what: str) -> float:
    try:
        return parse_number(text, what)
    except ParameterError as exc:
        raise QueryError(str(exc)) from None


def _interval(text: str, what: str) -> tuple[float, float]:
    lo, sep, hi = text.partition(":")
    if not sep:
        raise QueryError(f"{what}: expected LO:HI, got {text!r}")
    return _float(lo, what), _float(hi, what)


def _values(text: str, what: str) -> list[Any]:
    """``V1|V2|...``: numbers when every value reads as a finite number, else texts.

    A value with a leading zero (``01``) is text, as codes such as ZIP codes are.
    """
    values = [v.strip() for v in text.split("|")]
    if any(not v for v in values):
        raise QueryError(f"{what}: empty value in {text!r}")
    numbers = []
    for v in values:
        if len(v.lstrip("+-")) > 1 and v.lstrip("+-")[0] == "0" and v.lstrip("+-")[1].isdigit():
            return values
        try:
            x = float(v)
        except ValueError:
            return values
        if not math.isfinite(x):
            return values
        numbers.append(int(x) if x.is_integer() else x)
    return numbers


def _per_attribute(text: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in split_list(text):
        a, sep, rest = item.partition("=")
        a = a.strip()
        if not sep or not a:
            raise QueryError(f"{what}: expected A=..., got {item!r}")
        if a in out:
            raise QueryError(f"{what}: {a!r} is given twice")
        out[a] = rest
    return out


#: The attributes every options object has (the last three of the module text may be missing).
OPTIONS = ("query", "attributes", "records", "where", "bounds", "weights")


def _check_options(args: Any) -> None:
    """Refuse an ``args`` that is not an options object (a dict, say, whose keys would be
    silently read as "not given"), and option values that are not texts."""
    missing = [o for o in OPTIONS if not hasattr(args, o)]
    if missing:
        raise ParameterError(f"options must be an object with the attributes {', '.join(OPTIONS)}"
                             f" (argparse namespace or SimpleNamespace); {type(args).__name__} "
                             f"lacks {', '.join(missing)}")
    for o in ("query", "attributes", "where", "bounds", "weights", "domain", "record_states",
              "catch_all", "state"):
        value = getattr(args, o, None)
        if o == "attributes" and isinstance(value, list | tuple) and all(
                isinstance(a, str) for a in value):
            continue  # the names of --attributes all / @FILE, expanded by the command line
        if value is not None and not isinstance(value, str):
            raise ParameterError(f"--{o.replace('_', '-')} must be a text, got "
                                 f"{type(value).__name__}")


def domain_from_options(args: Any) -> dict[str, list[Any]] | None:
    """``--domain``/``--categories A=V1|V2,B=W1|W2`` as attribute -> values (or None)."""
    _check_options(args)
    if getattr(args, "domain", None) is None:
        return None
    return domain_from_text(args.domain)


def domain_from_text(text: str, option: str = "--domain") -> dict[str, list[Any]]:
    """``A=V1|V2,B=W1|W2`` as attribute -> values (numbers when every value reads as one)."""
    return {a: _values(v, f"{option} {a}") for a, v in _per_attribute(text, option).items()}


def record_states_from_options(args: Any) -> dict[str, dict[Any, int]] | None:
    """``--record-states A=V1:K1|V2:K2`` as attribute -> {value: category} (or None)."""
    _check_options(args)
    if getattr(args, "record_states", None) is None:
        return None
    out: dict[str, dict[Any, int]] = {}
    for a, text in _per_attribute(args.record_states, "--record-states").items():
        pairs = [p.rpartition(":") for p in text.split("|")]
        if any(not sep for _, sep, _ in pairs):
            raise QueryError(f"--record-states {a}: expected VALUE:CATEGORY|..., got {text!r}")
        cats = []
        for _, _, k in pairs:
            try:
                cats.append(int(k))
            except ValueError:
                raise QueryError(f"--record-states {a}: category {k!r} is not a whole "
                                 "number") from None
        values = _values("|".join(v for v, _, _ in pairs), f"--record-states {a}")
        out[a] = dict(zip(values, cats, strict=True))
    return out


def query_from_options(args: Any) -> Query:
    """The query the options ``args`` describe (see the module text), checked."""
    _check_options(args)
    kind = args.query
    attrs = split_list(args.attributes)
    records = args.records
    if records is not None:
        check_records(records, "--records")
    if kind not in QUERY_KINDS:
        raise QueryError(f"--query must be one of {', '.join(QUERY_KINDS)}, got {kind!r}")
    domain = domain_from_options(args)
    states = record_states_from_options(args)
    catch_all = getattr(args, "catch_all", None)
    if domain is not None and kind not in ("count", "histogram"):
        raise QueryError(f"--domain/--categories applies to count and histogram queries; a "
                         f"{kind} query's domain is its --bounds")
    if states is not None and kind != "count":
        raise QueryError("--record-states applies to count queries")
    if catch_all is not None and kind != "histogram":
        raise QueryError("--catch-all applies to histogram queries")
    if kind in ("count", "sum", "histogram") and records is None:
        raise ParameterError(f"a {kind} query needs --records N")
    state = getattr(args, "state", None)
    if state is not None and kind != "fraction":
        raise QueryError("--state applies to fraction queries")
    if kind == "fraction":
        return _fraction(args, attrs, state)
    if kind == "count":
        if not attrs:
            raise QueryError("a count query needs --attributes")
        return CountQuery(tuple(attrs), int(records), where=args.where, domain=domain,
                          record_states=states)
    if args.where is not None:
        raise QueryError(f"--where applies to count queries, not {kind}")
    if kind == "histogram":
        if not attrs:
            raise QueryError("a histogram query needs --attributes")
        if domain is None:
            raise QueryError("a histogram query needs its cells declared: --categories "
                             "A=V1|V2|...,B=W1|W2|... (never read off the data)")
        return HistogramQuery(tuple(attrs), int(records), categories=domain,
                              catch_all=catch_all)
    if kind in ("sum", "mean"):
        if len(attrs) != 1:
            raise QueryError(f"a {kind} query reads exactly one attribute (--attributes A)")
        if not args.bounds:
            raise QueryError(f"a {kind} query needs --bounds LO:HI")
        lo, hi = _interval(args.bounds, "--bounds")
        if kind == "sum":
            return SumQuery(attrs[0], int(records), lower=lo, upper=hi)
        return MeanQuery(attrs[0], lower=lo, upper=hi)
    # linear
    if not args.weights or not args.bounds:
        raise QueryError("a linear query needs --weights A1=W1,... and --bounds A1=LO:HI,...")
    weights: dict[str, float] = {}
    bounds: dict[str, tuple[float, float]] = {}
    for item in split_list(args.weights):
        a, sep, w = item.partition("=")
        if not sep:
            raise QueryError(f"--weights: expected A=W, got {item!r}")
        _once(weights, a.strip(), "--weights")
        weights[a.strip()] = _float(w, f"--weights {a.strip()}")
    for item in split_list(args.bounds):
        a, sep, rng = item.partition("=")
        if not sep:
            raise QueryError(f"--bounds: expected A=LO:HI, got {item!r}")
        _once(bounds, a.strip(), "--bounds")
        bounds[a.strip()] = _interval(rng, f"--bounds {a.strip()}")
    return LinearQuery(weights, bounds)


def _fraction(args: Any, attrs: list[str], state: str | None) -> FractionQuery:
    """``--query fraction --state S --attributes X1..XT``: the share of the steps in S."""
    if state is None or not state.strip():
        raise QueryError("a fraction query needs --state S (the state whose share is released)")
    for o in ("where", "bounds", "weights"):
        if getattr(args, o, None) is not None:
            raise QueryError(f"--{o} does not apply to a fraction query")
    if not attrs:
        raise QueryError("a fraction query needs --attributes: the steps, e.g. X1..X10000")
    steps = [s for a in attrs for s in _expand_steps(a)]
    total = None
    if args.records is not None:  # --records T: the share of all T steps
        total = int(args.records)
    return FractionQuery(tuple(steps), state.strip(), total)


def _once(seen: dict[str, Any], key: str, option: str) -> None:
    # A repeated key would silently replace the first value: refuse it instead.
    if key in seen:
        raise QueryError(f"{option}: {key!r} is given twice")
