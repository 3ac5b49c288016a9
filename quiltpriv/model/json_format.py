"""quiltpriv's JSON model formats and the binary table column of format ``/2``.

Format ``quiltpriv-network/2`` holds every CPD of a member in one binary column. Format
``quiltpriv-network/1`` writes each CPD as nested lists of decimal numbers; reading a
100,000-node model spends most of its time turning five million decimal literals into floats
and nested lists into arrays. Format ``/2`` keeps the readable ``nodes`` section (each node's
``states`` and ``parents``, as in ``/1``) and replaces each member's ``cpds`` by ``tables``:
every node's CPD, in the order of ``nodes``, flattened in C order over its axes
``(node, *parents)`` (the shape follows from the ``nodes`` section), as IEEE 754 binary64
little-endian numbers, base64-encoded (RFC 4648, padded, no line breaks)::

    {"format": "quiltpriv-network/2",
     "nodes": {"a": {"states": ["0.2", "0.8"], "parents": []},
               "b": {"states": ["0", "1"], "parents": ["a"]}},
     "members": [{"name": "m", "tables": "<base64 of 2 + 4 float64>"}]}

The column is decoded once, checked as a whole (its length exactly the tables' entries, every
entry finite, non-negative and not subnormal, every column summing to one within the
tolerance), and each table is a read-only view of it. A table that fails a check goes through
the same per-table check as format ``/1`` (``quiltpriv.model.cpd_tables._check_table``),
which names it and says what is wrong, or renormalises a column within the tolerance exactly
as ``/1`` does; so both formats give the same Theta, fingerprint included. Binary numbers
need no literal check: the value read is the value written (a subnormal one is refused, as
its decimal literal is in ``/1``).

:func:`quiltpriv.model.network.theta_to_dict` writes both formats (its column through
``_encode_column`` here). :func:`quiltpriv.model.loading.load_model` reads them: it parses the
document and checks the ``nodes`` section, and each member's column is decoded and checked
here (``_decode_column``, ``_check_column``), the one place that does it; every error is a
:class:`~quiltpriv.errors.ModelError`. Only the format names are public: the column helpers
are the reader's and the writer's, not an API.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from quiltpriv.errors import ModelError
from quiltpriv.model.cpd_tables import KEEP_SUM_ULPS, _accurate_column_sums, _check_table
from quiltpriv.utils.format import fmt_number as _fmt

__all__ = ["JSON_FORMAT", "JSON_FORMAT_V2"]

#: The format name of a JSON model whose members hold each table as nested lists of numbers.
JSON_FORMAT = "quiltpriv-network/1"

#: The format name of a JSON model whose members hold their tables as one binary column.
JSON_FORMAT_V2 = "quiltpriv-network/2"

#: float64, little-endian: the column's number type whatever the machine's byte order.
_FLOAT64_LE = np.dtype("<f8")

#: The smallest positive normal float64.
_TINY = float(np.finfo(np.float64).tiny)


def _encode_column(tables: Sequence[np.ndarray]) -> str:
    """The base64 text of ``tables`` flattened in C order and concatenated (float64 LE)."""
    if not tables:
        return ""
    flat = np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in tables])
    return base64.b64encode(flat.astype(_FLOAT64_LE, copy=False).tobytes()).decode("ascii")


def _table_shapes(names: Sequence[str], states: Mapping[str, Sequence[str]],
                  parents: Mapping[str, Sequence[str]]) -> list[tuple[int, ...]]:
    """Each node's table shape ``(states, *parent states)``, in the order of ``names``."""
    card = dict(zip(names, map(len, map(states.__getitem__, names)), strict=True))
    return [(card[v], *map(card.__getitem__, parents[v])) for v in names]


def _decode_column(data: object, entries: int, what: str) -> np.ndarray:
    """The float64 column of ``entries`` numbers that ``data`` (base64 text) encodes.

    Raises
    ------
    ModelError
        ``data`` is not a string, not strict base64, or does not hold exactly ``entries``
        float64 numbers (``what`` starts the message).
    """
    if not isinstance(data, str):
        raise ModelError(f"{what}: 'tables' must be a base64 string of float64 numbers, "
                         f"not {type(data).__name__}")
    need = 4 * math.ceil(8 * entries / 3)
    if len(data) != need:
        held = f"{len(data)} characters" if len(data) % 4 else \
            f"about {len(data) * 3 // 4 // 8} numbers"
        raise ModelError(f"{what}: 'tables' holds {held}; the nodes' tables need {entries} "
                         f"float64 numbers ({need} base64 characters)")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ModelError(f"{what}: 'tables' is not base64 text ({exc})") from None
    if len(raw) != 8 * entries:
        raise ModelError(f"{what}: 'tables' decodes to {len(raw)} bytes, not the "
                         f"{8 * entries} of {entries} float64 numbers")
    flat = np.frombuffer(raw, dtype=_FLOAT64_LE)
    return flat if flat.dtype.isnative else flat.astype(np.float64)


def _check_column(flat: np.ndarray, shapes: Sequence[tuple[int, ...]],
                  what: Callable[[int], str], tolerance: float) -> list[np.ndarray]:
    """The tables of ``shapes`` in ``flat`` (one after another), checked; read-only.

    The checks of :func:`quiltpriv.model.cpd_tables._check_tables`, decided on the whole column
    at once: every entry finite and non-negative, and every column's plain sum within
    ``tolerance`` of one and its accurate sum within
    :data:`~quiltpriv.model.cpd_tables.KEEP_SUM_ULPS` ulps (kept as given). A table failing any
    of them goes through :func:`~quiltpriv.model.cpd_tables._check_table`, which raises the same
    error as for format ``/1`` or returns the same renormalised table. A positive entry below
    float64's normal range is refused, naming the table (its decimal literal is in ``/1``).
    ``what(i)`` names table ``i`` in messages.
    """
    sizes = np.fromiter(map(math.prod, shapes), dtype=np.int64, count=len(shapes))
    if int(sizes.sum()) != flat.size:
        raise ModelError(f"the tables' column holds {flat.size} numbers, not the "
                         f"{int(sizes.sum())} the nodes' tables need")
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    tiny = (flat > 0) & (flat < _TINY)
    if np.any(tiny):
        k = int(np.searchsorted(offsets, int(np.argmax(tiny)), side="right")) - 1
        x = float(flat[int(np.argmax(tiny))])
        raise ModelError(f"{what(k)}: the probability {x!r} is positive but below float64's "
                         f"normal range (smallest {_fmt(_TINY, 17)}); it cannot be stored "
                         "faithfully (write 0 if the state is impossible)")
    slow = np.zeros(len(shapes), dtype=bool)
    if not (np.all(np.isfinite(flat)) and not np.any(flat < 0)):
        slow[:] = True  # the per-table checks name the first offending table
    else:
        card = np.fromiter((s[0] for s in shapes), dtype=np.int64, count=len(shapes))
        cols = sizes // card
        for k in np.unique(card).tolist():
            idx = np.flatnonzero(card == k)
            m = cols[idx]
            starts = np.concatenate(([0], np.cumsum(m)))
            j = np.arange(int(starts[-1])) - np.repeat(starts[:-1], m)  # column within table
            base = np.repeat(offsets[idx], m) + j
            step = np.repeat(m, m)
            wide = flat[base[None, :] + np.arange(k)[:, None] * step[None, :]]  # (k, columns)
            bad = np.abs(wide.sum(axis=0) - 1.0) > tolerance
            off = np.abs(_accurate_column_sums(wide) - 1.0) > (
                KEEP_SUM_ULPS * np.finfo(np.float64).eps)
            flagged = np.cumsum(np.concatenate(([0], (bad | off).astype(np.int64))))
            hit = flagged[starts[1:]] - flagged[starts[:-1]] > 0
            slow[idx[hit]] = True
    column = flat if not flat.flags.writeable else _frozen(flat)
    bounds = offsets.tolist()
    out = list(map(np.ndarray.reshape, map(column.__getitem__, map(slice, bounds[:-1],
                                                                   bounds[1:])), shapes))
    for i in np.flatnonzero(slow).tolist():
        out[i] = _check_table(out[i], shapes[i], what(i), tolerance)
    return out


def _frozen(flat: np.ndarray) -> np.ndarray:
    flat = flat.copy()
    flat.setflags(write=False)
    return flat
