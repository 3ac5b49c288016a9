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
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

__all__ = ["JSONResult", "jsonable"]


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
