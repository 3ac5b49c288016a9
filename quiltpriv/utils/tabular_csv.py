"""Fast paths for CSV files of many columns: the same frames and the same bytes as pandas.

A time series of one person is often written as one row with one column per step: 500,000
columns. pandas reads and writes such a file column by column (58 s to read it, 41 s to write
the canonical text a data hash is taken of). :func:`read_wide_csv` and
:func:`canonical_csv_text` handle the common shapes with numpy in one pass and return None for
anything else, so that the caller falls back to pandas: the frames and texts they return are
exactly pandas' (the tests compare them on random tables).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from typing import TYPE_CHECKING, Any

from quiltpriv.errors import DataError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["canonical_csv_text", "read_wide_csv"]

#: Cells pandas' C parser reads as int64 without question (no sign other than '-', no
#: spaces, at most 18 digits: within int64).
_INT = re.compile(r"-?[0-9]{1,18}")

#: Below this many cells the fast reader is not worth its checks (pandas is fast there).
MIN_CELLS = 1 << 12


def read_wide_csv(path: str, text_columns: frozenset[str]) -> pd.DataFrame | None:
    """The frame ``pd.read_csv`` gives for a file of whole numbers (or, when every column is
    declared text, of any text), or None for any other file.

    ``text_columns``: the columns read as text exactly as written (``dtype=str``,
    ``keep_default_na=False``); the fast path applies when there are none, or when every
    column is one (then every cell is kept as written, empty cells included).

    Raises
    ------
    DataError
        ``path`` is not a path, or the file cannot be opened.
    """
    import numpy as np
    import pandas as pd

    if not isinstance(path, str | os.PathLike):
        raise DataError(f"a data file is named by a path, got {type(path).__name__}")
    if not isinstance(text_columns, frozenset) or not all(isinstance(c, str)
                                                          for c in text_columns):
        raise ParameterError("text_columns must be a frozenset of column names")
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
    except (UnicodeDecodeError, csv.Error):
        return None  # pandas reads it, or says why it cannot
    except OSError as exc:
        raise DataError(f"cannot read data file {path}: {exc}") from exc
    if not rows:
        return None
    header = rows[0]
    width = len(header)
    if width == 0 or (width * len(rows) < MIN_CELLS) or any(not h for h in header) \
            or header[0].startswith("\ufeff") or any(len(r) != width for r in rows):
        return None
    body = rows[1:]
    if not body:
        return None
    all_text = bool(text_columns) and all(h in text_columns for h in header)
    if text_columns and not all_text:
        return None
    if all_text:
        values = np.array(body, dtype=object)
        return pd.DataFrame(values, columns=header)
    cells = [c for r in body for c in r]
    if not all(_INT.fullmatch(c) for c in cells):
        return None
    values = np.array(cells, dtype=np.int64).reshape(len(body), width)
    return pd.DataFrame(values, columns=header)


def canonical_csv_text(frame: pd.DataFrame) -> str | None:
    """``frame``'s columns sorted by name (as text), written as
    ``to_csv(index=False, lineterminator="\\n", float_format="%.17g")`` writes them, or None
    when a column is not of a kind handled here (whole numbers, booleans, float64, text)."""
    import numpy as np
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, got {type(frame).__name__}")
    if isinstance(frame.columns, pd.MultiIndex) or frame.shape[1] == 0:
        return None
    names = list(frame.columns)
    order = sorted(range(len(names)), key=lambda k: str(names[k]))
    kinds = []
    for dt in frame.dtypes.tolist():
        if not isinstance(dt, np.dtype):
            return None
        if dt.kind in "iu":
            kinds.append("i")
        elif dt.kind == "b":
            kinds.append("b")
        elif dt == np.float64:
            kinds.append("f")
        elif dt.kind == "O":
            kinds.append("O")
        else:
            return None
    if len(set(kinds)) == 1 and kinds[0] != "O":
        values = frame.to_numpy()[:, order]
        kind = kinds[0]
        if kind == "i":
            cells = [str(x) for x in values.ravel().tolist()]
        elif kind == "b":
            cells = ["True" if x else "False" for x in values.ravel().tolist()]
        else:
            # pandas applies float_format with the % operator: the same operator here
            cells = ["" if math.isnan(x) else "%.17g" % x  # noqa: UP031
                     for x in values.ravel().tolist()]
        n_rows = values.shape[0]
        rows = [cells[k * len(order):(k + 1) * len(order)] for k in range(n_rows)]
    else:
        values = frame.to_numpy(dtype=object)[:, order]
        col_kinds = [kinds[k] for k in order]
        rows = []
        for r in values.tolist():
            out = []
            for x, kd in zip(r, col_kinds, strict=True):
                cell = _cell(x, kd)
                if cell is None:
                    return None
                out.append(cell)
            rows.append(out)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow([str(names[k]) for k in order])
    writer.writerows(rows)
    return buf.getvalue()


def _cell(x: Any, kind: str) -> str | None:
    """One cell as pandas writes it (None: a value not handled here)."""
    if kind == "i":
        return str(x)
    if kind == "b":
        return "True" if x else "False"
    if kind == "f":
        return "" if math.isnan(x) else "%.17g" % x  # noqa: UP031 (pandas' float_format)
    if isinstance(x, str):
        return x
    if x is None:
        return ""
    return None
