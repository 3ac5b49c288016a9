"""The memory budget: one setting bounds both exact inference and the reading of JSON models.

Work whose size depends on its input is bounded by memory, not by a fixed count: an exact
joint marginal may build tables as large as the budget allows (:func:`table_limit`), and a
JSON model may be read when what parsing it holds fits (``quiltpriv.model.loading``). The
default, :data:`DEFAULT_MAX_MEMORY`, is half the machine's physical memory; the API takes
``max_memory=`` (bytes, or a size such as ``"4G"``) and the command line ``--max-memory``.
What does not fit is refused with a message naming the memory it needs and the budget; work
that fits is still bounded in time by the caller's time limit.
"""

from __future__ import annotations

import os
import re
from numbers import Integral

from quiltpriv.errors import ParameterError
from quiltpriv.utils.format import fmt_number as _fmt

__all__ = [
    "BYTES_PER_TABLE_ENTRY",
    "DEFAULT_MAX_MEMORY",
    "EXACT_BYTES_PER_TABLE_ENTRY",
    "check_max_memory",
    "exact_table_limit",
    "parse_memory_size",
    "physical_memory",
    "table_limit",
]  # describe_bytes and too_large format checked values for messages (not input paths)


def physical_memory() -> int | None:
    """The machine's physical memory in bytes, or None where it cannot be read (not POSIX)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


#: The default memory budget in bytes: half the machine's physical memory (4 GiB where it
#: cannot be read), leaving the other half to the interpreter, the model and other programs.
DEFAULT_MAX_MEMORY: int = (physical_memory() or 2 * 2**32) // 2

#: Bytes of the budget one entry of the largest table of an exact elimination is charged: a
#: float64 entry (8 bytes) four times over, for the table being built, the factors it is
#: built from, the query's joint and Definition 8's temporaries over it, which can be alive
#: at once. Measured on mildew, two queries with 33.8-million-entry joints: one peaked at
#: 0.36 GB resident in all (its largest table the joint: about 8 bytes an entry beyond the
#: interpreter), another at 2.7 GB; the whole-process peaks of every query asked are recorded
#: by ``benchmarks/bench_refused.py``.
BYTES_PER_TABLE_ENTRY = 32

#: Bytes of the budget one entry of an exact (rational) table is charged: a pointer to a
#: ``Fraction`` and the object with its numerator and denominator, four times over as for
#: :data:`BYTES_PER_TABLE_ENTRY`. Measured on the student model: a 243-entry exact joint held
#: 105 bytes an entry and peaked at 169 while it was built; entries of larger networks carry
#: longer integers, hence 128 bytes an entry, four times over.
EXACT_BYTES_PER_TABLE_ENTRY = 512

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)


def parse_memory_size(text: str, name: str = "--max-memory") -> int:
    """A memory size in bytes from ``"4G"``, ``"512M"``, ``"1.5GiB"``, ``"1048576"``.

    Units are binary (K = 1024 bytes, M, G, T), optionally followed by ``B`` or ``iB``; a bare
    number is bytes. Anything else (negative, zero, empty, other units, trailing text) is
    refused with :class:`~quiltpriv.errors.ParameterError` naming ``name``.
    """
    match = _SIZE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ParameterError(f"{name} must be a memory size such as 4G, 512M or 1073741824 "
                             f"(bytes), not {text!r}")
    number, unit = match.groups()
    size = int(float(number) * _UNITS[unit.upper()]) if "." in number \
        else int(number) * _UNITS[unit.upper()]
    if size < 1:
        raise ParameterError(f"{name} must be a memory size of at least 1 byte, not {text!r}")
    return size


def check_max_memory(value: object, name: str = "max_memory") -> int:
    """The memory budget in bytes: :data:`DEFAULT_MAX_MEMORY` for None, a positive integer
    of bytes, or a size string as :func:`parse_memory_size` reads it."""
    if value is None:
        return DEFAULT_MAX_MEMORY
    if isinstance(value, str):
        return parse_memory_size(value, name)
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < 1:
        raise ParameterError(f"{name} must be a positive number of bytes or a size such as "
                             f"'4G', not {value!r}")
    return int(value)


def table_limit(max_table: object = None, max_memory: object = None) -> int:
    """Largest table (entries) an exact elimination may build within ``max_memory``.

    ``max_table`` (entries), when given, lowers it further; with neither, the default budget
    decides (:data:`DEFAULT_MAX_MEMORY` / :data:`BYTES_PER_TABLE_ENTRY`).
    """
    limit = check_max_memory(max_memory) // BYTES_PER_TABLE_ENTRY
    if max_table is not None:
        if isinstance(max_table, bool) or not isinstance(max_table, Integral) or max_table < 1:
            raise ParameterError(f"max_table must be an integer >= 1, not {max_table!r}")
        limit = int(max_table) if max_memory is None else min(limit, int(max_table))
    return max(limit, 1)


def exact_table_limit(max_table: object = None, max_memory: object = None) -> int:
    """Largest exact (rational) table, in entries, within ``max_memory``: as
    :func:`table_limit`, at :data:`EXACT_BYTES_PER_TABLE_ENTRY` bytes an entry."""
    limit = check_max_memory(max_memory) // EXACT_BYTES_PER_TABLE_ENTRY
    if max_table is not None:
        limit = min(limit, table_limit(max_table)) if max_memory is not None \
            else table_limit(max_table)
    return max(limit, 1)


def describe_bytes(size: float) -> str:
    """``"1.3 GB"``, ``"512 MB"``, ``"900 bytes"`` (decimal units, three figures)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{_fmt(size / scale, 3)} {unit}"
    return f"{int(size)} bytes"


def too_large(what: str, entries: int, max_table: int,
              bytes_per_entry: int = BYTES_PER_TABLE_ENTRY) -> str:
    """The refusal of a table of ``entries`` over ``max_table``: the memory it needs, the
    budget it is over, and how to raise it."""
    return (f"{what} has {entries} entries, needing about "
            f"{describe_bytes(entries * bytes_per_entry)} of memory "
            f"(limit {max_table} entries, {describe_bytes(max_table * bytes_per_entry)} "
            f"of the memory budget at {bytes_per_entry} bytes an entry; "
            "max_memory= or --max-memory raises it)")
