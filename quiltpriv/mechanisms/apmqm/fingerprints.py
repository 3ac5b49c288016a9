"""Canonical JSON and query fingerprints: what identifies a plan's query in a plan file.

A plan names its query by :func:`query_fingerprint`, the SHA-256 of the query's definition and
of every sensitivity the plan used, written as :func:`canonical_json`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from itertools import repeat
from typing import Any

import numpy as np

from quiltpriv.errors import QueryError
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.serialize import canonical_json as _canonical_json

_QUERY_FINGERPRINT_FORMAT = "quiltpriv-query-fingerprint/1"


def _plain(x: Any, where: str) -> Any:
    """``x`` as plain JSON values (numpy scalars unwrapped, tuples as lists), or raise."""
    if isinstance(x, Mapping):
        out = {}
        for k, v in x.items():
            if not isinstance(k, str):
                raise QueryError(f"{where}: key {k!r} is not a string")
            out[k] = _plain(v, where)
        return out
    if isinstance(x, list | tuple):
        if all(map(isinstance, x, repeat(str))):  # names (a long series' steps): as they are
            return list(x)
        return [_plain(v, where) for v in x]
    if isinstance(x, np.generic):
        return _plain(x.item(), where)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise QueryError(f"{where}: {x} is not a finite number")
        return x
    if isinstance(x, str | int | bool) or x is None:
        return x
    raise QueryError(f"{where}: a value of type {type(x).__name__} has no JSON form")


def canonical_json(x: Any) -> str:
    """One canonical JSON text of ``x``: sorted keys, no spaces, finite numbers only."""
    return _canonical_json(_plain(x, "canonical JSON"))


def query_fingerprint(query: Query, column_sets: Iterable[Iterable[str]]) -> str:
    """SHA-256 of a query's whole definition and of the sensitivities a plan used.

    The hashed document is the canonical JSON of ``query.to_dict()`` (every field that gives
    the query its meaning) and of ``Delta_B F`` for ``B = A`` and for ``B = A & S`` for each
    set ``S`` of ``column_sets`` (a plan's nearby sets ``N``), each recomputed from ``query``.
    Two queries with the same fingerprint for a plan have the same definition and need the
    same noise under it.

    Parameters
    ----------
    query : Query
    column_sets : iterable of iterable of str
        The nearby sets of the plan's chosen quilts.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    check_query(query)
    attrs = tuple(query.attributes)
    pos = {a: k for k, a in enumerate(attrs)}
    if len(pos) == len(attrs):
        # each set's query attributes in the query's order, in time linear in the set (not in
        # |A| per set: a plan of every step of a long series has as many sets as steps)
        sets = {tuple(attrs[k] for k in sorted({pos[a] for a in b if a in pos}))
                for b in column_sets} | {attrs}
    else:  # repeated attributes (kept in every set as the query repeats them)
        sets = {tuple(a for a in attrs if a in frozenset(b)) for b in column_sets} | {attrs}
    table = [[list(b), float(query.sensitivity(b))]
             for b in sorted(sets, key=lambda b: (len(b), tuple(map(pos.__getitem__, b))))]
    # canonical_json of {"format", "query", "sensitivities"} (keys in that, sorted, order),
    # with the table, plain strings and floats by construction, written without _plain's walk
    # (a plan of every step of a long series has as many sets as steps)
    try:
        table_text = _canonical_json(table)
    except ValueError:
        raise QueryError("query fingerprint: a sensitivity is not a finite number") from None
    text = (f'{{"format":{_canonical_json(_QUERY_FINGERPRINT_FORMAT)},"query":'
            f'{canonical_json(query.to_dict())},"sensitivities":{table_text}}}')
    return hashlib.sha256(text.encode("ascii")).hexdigest()
