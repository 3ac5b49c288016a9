"""A data file for a query: a CSV file read with pandas, one column per attribute.

The command line's ``--data`` and the explorer's auditor panel read data through
:func:`read_query_data`, so that one file reads the same everywhere.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from quiltpriv.errors import QueryError, QuiltPrivError
from quiltpriv.queries.query import Query

__all__ = ["read_query_data"]

#: The cells pandas reads as missing by default (its documented ``na_values`` list); kept
#: for the columns whose values are not declared as text.
_PANDAS_NA = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
              "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")


def read_query_data(path: str, query: Query | None = None) -> Any:
    """The dataset of ``--data``: a CSV file read with pandas, one column per attribute.

    Columns whose declared domain (``--domain``, ``--categories``) is text are read as text,
    exactly as written: ``01`` stays ``01``, and ``NA``, ``None``, ``null``, ``N/A`` or an
    empty cell are values (declared categories such as ``NA`` for North America), never
    pandas' missing values. Every other column keeps pandas' default missing-value reading.
    """
    import pandas as pd

    declared = getattr(query, "domain", None) or getattr(query, "categories", None) or {}
    text = {a: str for a, values in declared.items() if values and isinstance(values[0], str)}
    from quiltpriv.utils.tabular_csv import read_wide_csv

    # a file of whole numbers (a trace: one row, a column per step) in one pass, the same
    # frame as pandas' (which reads a 500,000-column row column by column: 58 s)
    try:
        fast = read_wide_csv(path, frozenset(text))
    except QuiltPrivError:
        fast = None  # not a path, or unreadable: pandas' reading below says so, as before
    if fast is not None:
        names = Counter(str(v) for v in fast.columns)
        dup = sorted(c for c, k in names.items() if k > 1)
        if dup:
            raise QueryError(f"data file {path}: more than one column named "
                             f"{', '.join(map(repr, dup))}; a query reads exactly one column "
                             "per attribute")
        return fast
    try:
        # pandas renames a repeated header name ("a", "a.1"), which would hide a duplicated
        # column from the query's own check: read the header as written first.
        header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False)
        if text:
            columns = [str(v) for v in header.iloc[0].tolist()] if len(header) else []
            na = {c: list(_PANDAS_NA) for c in columns if c not in text}
            data = pd.read_csv(path, dtype=text, keep_default_na=False, na_values=na)
        else:
            data = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise QueryError(f"cannot read data file {path}: {exc}") from exc
    names = Counter(str(v) for v in header.iloc[0].tolist()) if len(header) else Counter()
    dup = sorted(c for c, k in names.items() if k > 1)
    if dup:
        raise QueryError(f"data file {path}: more than one column named "
                         f"{', '.join(map(repr, dup))}; a query reads exactly one column per "
                         "attribute")
    return data
