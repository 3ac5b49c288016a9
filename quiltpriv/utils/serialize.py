"""Plain JSON forms of result objects: :func:`jsonable` and the :class:`JSONResult` mixin.

Every frozen dataclass that a public function returns as a result gets ``to_dict`` (plain JSON
values: dicts with string keys, lists, numbers, strings, booleans, None) and ``to_json`` from
:class:`JSONResult`, so results can be stored, compared and sent over the wire in one way.

Conversions: nested dataclasses and objects with their own ``to_dict`` recursively; mappings
as dicts (keys as text: ``str`` of a non-string key); tuples, lists, sets (sorted) and numpy
arrays as lists; numpy scalars unwrapped; a :class:`~fractions.Fraction` that is not a whole
number as its exact text ``"p/q"`` (never a rounded float: these are often bounds); a
non-finite float as ``"inf"``, ``"-inf"`` or ``"nan"`` (JSON has no such numbers); anything
else (a callable, say) as its ``repr``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from quiltpriv.errors import ParameterError, QuiltPrivError

__all__ = ["MAX_JSON_INT_DIGITS", "JSONResult", "canonical_json", "jsonable", "load_json"]

#: The longest integer any JSON the package reads may spell. Python refuses to convert a
#: decimal string of more than 4300 digits to an int (``sys.get_int_max_str_digits``) with a
#: bare ``ValueError``; no number quiltpriv stores comes anywhere near this.
MAX_JSON_INT_DIGITS = 4300


def canonical_json(x: Any) -> str:
    """The one canonical JSON text the package hashes (fingerprints, the ledger's chain).

    Sorted keys, no spaces, ASCII only (other characters escaped), and finite numbers only: two
    equal documents give the same characters, and NaN or infinity, which JSON cannot spell,
    is refused instead of written as a non-standard token. ``x`` must hold plain JSON values
    already (use :func:`jsonable` first for result objects).

    Parameters
    ----------
    x : JSON value
        Dicts with string keys, lists, tuples, strings, finite numbers, booleans and None.

    Returns
    -------
    str
        The canonical text (ASCII).

    Raises
    ------
    ParameterError
        ``x`` holds a value JSON cannot spell: NaN, an infinity, or an object of another
        type (a ``ValueError``, as every error of the package).

    Examples
    --------
    >>> canonical_json({"b": [1, 2.5], "a": None})
    '{"a":null,"b":[1,2.5]}'
    """
    try:
        return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False)
    except (TypeError, ValueError, RecursionError) as err:
        raise ParameterError(f"canonical JSON: {err}") from None


def load_json(text: str | bytes | bytearray, what: str, *,
              error: type[QuiltPrivError] = QuiltPrivError,
              object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
              parse_constant: Callable[[str], Any] | None = None,
              parse_float: Callable[[str], Any] | None = None,
              parse_int: Callable[[str], Any] | None = None) -> Any:
    """Parse untrusted JSON text; every way it can fail is ``error`` with one line.

    Every JSON reader of the package goes through here (plans, models, release records,
    ledger entries, explorer requests): Python's own :func:`json.loads` fails on hostile text
    with exceptions that are not the package's (``ValueError`` for an integer of more than
    4300 digits, ``RecursionError`` for deep nesting, ``UnicodeDecodeError``), and turns a
    literal such as ``1e999`` into an infinite float silently.

    Parameters
    ----------
    text : str or bytes
        The JSON text (bytes must be UTF-8).
    what : str
        What is read, to start the message (``"plan"``, ``"the request body"``).
    error : type
        The :class:`~quiltpriv.errors.QuiltPrivError` subclass raised.
    object_pairs_hook, parse_constant, parse_float, parse_int : callable, optional
        As for :func:`json.loads`; errors they raise pass through unchanged when they are the
        package's own. Without ``parse_constant``, ``NaN`` and ``Infinity`` are refused;
        without ``parse_float``, a number that overflows a float is refused; without
        ``parse_int``, an integer longer than :data:`MAX_JSON_INT_DIGITS` digits is refused.

    Raises
    ------
    QuiltPrivError
        ``error``: not JSON, not UTF-8, nested too deeply, or a number out of range.
    """

    if not isinstance(text, str | bytes | bytearray):
        raise error(f"{what}: the JSON text must be a str or bytes, got {type(text).__name__}")

    def _constant(name: str) -> Any:
        raise error(f"{what}: the JSON holds {name}; every number must be finite")

    def _float(token: str) -> float:
        value = float(token)
        if not math.isfinite(value):
            raise error(f"{what}: the JSON number {_excerpt(token)} is out of a float's range")
        return value

    def _int(token: str) -> int:
        digits = len(token) - token.startswith("-")
        if digits > MAX_JSON_INT_DIGITS:
            raise error(f"{what}: the JSON holds an integer of {digits} digits (at most "
                        f"{MAX_JSON_INT_DIGITS} are read)")
        return int(token)

    try:
        if isinstance(text, bytes | bytearray):  # UTF-8 only (json.loads would guess UTF-16)
            text = bytes(text).decode("utf-8")
        return json.loads(text, object_pairs_hook=object_pairs_hook,
                          parse_constant=parse_constant or _constant,
                          parse_float=parse_float or _float, parse_int=parse_int or _int)
    except QuiltPrivError:
        raise
    except json.JSONDecodeError as exc:
        raise error(f"{what}: not valid JSON: {exc}") from None
    except UnicodeDecodeError:
        raise error(f"{what}: cannot read the JSON: it is not UTF-8 text") from None
    except RecursionError:
        raise error(f"{what}: cannot read the JSON: it is nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # a number Python cannot convert
        raise error(f"{what}: cannot read a number of the JSON ({_excerpt(str(exc))})") from None


def _excerpt(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def jsonable(x: Any) -> Any:
    """``x`` as plain JSON values (see the module docstring for each conversion)."""
    if x is None or isinstance(x, bool | str | int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, Fraction):
        return int(x) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    if type(x).__module__ == "numpy":
        tolist = getattr(x, "tolist", None)
        if callable(tolist):
            return jsonable(tolist())
    if isinstance(x, Mapping):
        return {(k if isinstance(k, str) else str(jsonable(k))): jsonable(v)
                for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, set | frozenset):
        return sorted((jsonable(v) for v in x), key=repr)
    to_dict = getattr(x, "to_dict", None)
    if callable(to_dict) and not isinstance(x, type):
        return jsonable(to_dict())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: jsonable(getattr(x, f.name)) for f in dataclasses.fields(x)}
    return repr(x)


class JSONResult:
    """Mixin of result dataclasses: ``to_dict`` (every field, as :func:`jsonable`) and
    ``to_json``."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """Every field of the result as plain JSON values."""
        return {f.name: jsonable(getattr(self, f.name))
                for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as one JSON text (``json.dumps`` keyword arguments pass through)."""
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)
