"""The fast CSV paths (:mod:`quiltpriv.utils.tabular_csv`) against pandas itself.

:func:`canonical_csv_text` must write exactly the text pandas writes for the data hash, and
:func:`read_wide_csv` must give exactly the frame ``pd.read_csv`` gives (or None, and pandas
reads the file), on random tables with the awkward cells: quotes, separators, line breaks,
empty text, NaN, infinities, negative zero, whole numbers with leading zeros.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

import quiltpriv.utils.tabular_csv as tc
from quiltpriv.model.provenance import data_sha256
from quiltpriv.queries.data_file import read_query_data

AWKWARD = ["", "a", "a,b", 'say "hi"', "line\nbreak", "cr\rx", " lead", "NA", "None", "01",
           "é", "x;y", "\t"]


def _pandas_text(frame: pd.DataFrame) -> str:
    canonical = frame[sorted(frame.columns, key=str)]
    return canonical.to_csv(index=False, lineterminator="\n", float_format="%.17g")


def _random_frame(rng: np.random.Generator) -> pd.DataFrame:
    n_rows, n_cols = int(rng.integers(0, 5)), int(rng.integers(1, 7))
    cols = {}
    for k in range(n_cols):
        kind = rng.choice(["int", "float", "bool", "str", "strnone"])
        name = str(rng.choice(["b", "a", "x,y", 'q"', "Z", "10", "2"])) + str(k)
        if kind == "int":
            cols[name] = rng.integers(-10**12, 10**12, size=n_rows)
        elif kind == "float":
            pool = np.array([0.1, -0.0, np.nan, np.inf, -np.inf, 1e300, 5e-324, 3.0, 1 / 3])
            cols[name] = rng.choice(pool, size=n_rows)
        elif kind == "bool":
            cols[name] = rng.random(n_rows) < 0.5
        else:
            vals = [str(rng.choice(AWKWARD)) for _ in range(n_rows)]
            if kind == "strnone" and n_rows:
                vals[0] = None
            cols[name] = pd.Series(vals, dtype=object)
    return pd.DataFrame(cols)


@pytest.mark.parametrize("seed", range(60))
def test_canonical_text_is_pandas_text(seed):
    frame = _random_frame(np.random.default_rng(seed))
    got = tc.canonical_csv_text(frame)
    assert got is not None
    assert got == _pandas_text(frame)


def test_canonical_text_of_a_wide_trace_and_the_hash():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.integers(0, 2, size=(1, 3000)),
                         columns=[f"X{t}" for t in range(1, 3001)])
    text = _pandas_text(frame)
    assert tc.canonical_csv_text(frame) == text
    assert data_sha256(frame) == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_other_kinds_go_to_pandas():
    for frame in (pd.DataFrame({"a": pd.Categorical(["x", "y"])}),
                  pd.DataFrame({"a": pd.to_datetime(["2020-01-01", "2021-01-01"])}),
                  pd.DataFrame({"a": pd.Series([1.5, 2], dtype=object)}),
                  pd.DataFrame({"a": np.array([1.5, 2.5], dtype=np.float32)}),
                  pd.DataFrame(index=range(3))):
        assert tc.canonical_csv_text(frame) is None
        data_sha256(frame) if frame.shape[1] else None  # pandas' path still hashes it


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "data.csv"
    path.write_bytes(text.encode("utf-8"))
    return str(path)


@pytest.mark.parametrize("text", [
    "a,b,c\n1,0,1\n", "a,b,c\r\n-1,0,01\r\n7,8,9\r\n", 'a,"b,c",d\n"1",2,3\n',
    "x\n5\n6\n", "a,b\n123456789012345678,-123456789012345678",
])
def test_wide_reader_is_pandas_reader(tmp_path, monkeypatch, text):
    monkeypatch.setattr(tc, "MIN_CELLS", 0)
    path = _write(tmp_path, text)
    got = tc.read_wide_csv(path, frozenset())
    assert got is not None
    pd.testing.assert_frame_equal(got, pd.read_csv(path))
    pd.testing.assert_frame_equal(read_query_data(path), pd.read_csv(path))


@pytest.mark.parametrize("text", [
    "a,b\n1,\n", "a,b\n1,2.5\n", "a,b\n1,x\n", "a,b\n+1,2\n", "a,b\n 1,2\n", "a,b\n1,2,3\n",
    "a,b\n\n1,2\n", "\ufeffa,b\n1,2\n", "a,\n1,2\n", "a,b\n1234567890123456789,1\n", "a,b\n",
])
def test_wide_reader_leaves_other_files_to_pandas(tmp_path, monkeypatch, text):
    monkeypatch.setattr(tc, "MIN_CELLS", 0)
    assert tc.read_wide_csv(_write(tmp_path, text), frozenset()) is None


def test_wide_reader_of_declared_text(tmp_path, monkeypatch):
    monkeypatch.setattr(tc, "MIN_CELLS", 0)
    path = _write(tmp_path, 'a,b\n01,NA\n,"x,y"\n')
    got = tc.read_wide_csv(path, frozenset({"a", "b"}))
    assert got is not None
    pd.testing.assert_frame_equal(got, pd.read_csv(path, dtype=str, keep_default_na=False))
    assert tc.read_wide_csv(path, frozenset({"a"})) is None  # some text, some not: pandas
