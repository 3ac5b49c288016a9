"""The shipped data are what their generators and loaders say (the README's and the docs'
Python examples that use them run in tests/integration/test_doc_examples.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_students_csv_is_what_its_generator_writes(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "make_students", ROOT / "examples" / "data" / "make_students.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path / "students.csv")
    shipped = (ROOT / "examples" / "data" / "students.csv").read_bytes()
    assert (tmp_path / "students.csv").read_bytes() == shipped
    df = pd.read_csv(ROOT / "examples" / "data" / "students.csv")
    assert list(df.columns) == ["gender", "income", "sat", "height", "weight"]
    assert len(df) == 1000
    assert set(df["gender"]) <= {0, 1} and set(df["income"]) <= {0, 1}
    assert df["sat"].between(400, 1600).all() and df["height"].between(58, 78).all()
    # The README's predicate reads raw values: a real mix of true and false.
    mask = df.eval("height > 66 and sat > 1300")
    assert 0 < mask.sum() < len(df)


def test_star98_loader():
    pytest.importorskip("statsmodels", reason='needs the data extra (pip install ".[data]")')
    from statsmodels.datasets import star98

    from quiltpriv.model.datasets import STAR98_COLUMNS, load_star98

    df = load_star98()
    raw = star98.load_pandas().data
    assert tuple(df.columns) == STAR98_COLUMNS and len(df) == 303
    assert np.allclose(df["low_income"], raw["LOWINC"] / 100)
    assert (df["students"] == raw["NABOVE"] + raw["NBELOW"]).all()
    assert np.allclose(df["math_above"], raw["NABOVE"] / (raw["NABOVE"] + raw["NBELOW"]))
    shares = df.drop(columns=["students", "students_math_above"])
    assert ((shares >= 0) & (shares <= 1)).all().all()
    df.loc[0, "low_income"] = -1.0  # a fresh copy: the next call is unchanged
    assert load_star98().loc[0, "low_income"] >= 0
