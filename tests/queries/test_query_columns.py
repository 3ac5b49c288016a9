"""One column per declared attribute: duplicated names are refused by every query kind.

A frame holding a summed column twice would make the sum read both copies, doubling its
privacy loss ([ZOC22], Section 5.1 bounds one column per attribute). ``query_columns`` is the
one place that decides which columns a query may read; the CLI's data reader refuses a CSV
whose header repeats a name (pandas would otherwise rename the copy to ``a.1``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from quiltpriv.errors import QueryError
from quiltpriv.queries.query import (
    CountQuery,
    CustomQuery,
    HistogramQuery,
    LinearQuery,
    MeanQuery,
    SumQuery,
    query_columns,
)

QUERIES = {
    "count": CountQuery(["a"], 10, where="a > 0.2"),
    "domain count": CountQuery(["a"], 10, where="a == 1", domain={"a": [0.5, 1]}),
    "sum": SumQuery("a", 10, lower=0, upper=1),
    "mean": MeanQuery("a", lower=0, upper=1),
    "linear": LinearQuery({"a": 1.0, "b": 2.0}, {"a": (0, 1), "b": (0, 1)}),
    "histogram": HistogramQuery(["a"], 10, categories={"a": [0.5, 1]}),
    "custom": CustomQuery(["a"], lambda b: float(len(b)),
                          function=lambda f: float(f.to_numpy().sum())),
}

#: The value of each query on the frame without the duplicate (so the refusal is the only change).
EXPECTED = {"count": 2.0, "domain count": 1.0, "sum": 1.5, "mean": 0.75, "linear": 0.75 + 1.0,
            "histogram": [1.0, 1.0], "custom": 1.5}


def _clean() -> pd.DataFrame:
    return pd.DataFrame({"a": [0.5, 1.0], "b": [0.5, 0.5], "c": [3, 4]})


@pytest.mark.parametrize("kind", list(QUERIES))
def test_every_query_reads_one_column_per_attribute(kind):
    q = QUERIES[kind]
    value = q.evaluate(_clean())
    assert np.atleast_1d(value).tolist() == np.atleast_1d(EXPECTED[kind]).tolist()
    dup = pd.concat([_clean(), _clean()[["a"]]], axis=1)
    assert list(dup.columns).count("a") == 2
    with pytest.raises(QueryError, match=r"more than one column named 'a'") as info:
        q.evaluate(dup)
    assert "\n" not in str(info.value)
    # three copies too, and a copy that differs in value
    dup3 = pd.DataFrame([[0.5, 1.0, 0.5, 1.0]], columns=["a", "a", "b", "a"])
    with pytest.raises(QueryError, match="more than one column named 'a'"):
        q.evaluate(dup3)


@pytest.mark.parametrize("kind", list(QUERIES))
def test_a_duplicated_unread_column_does_not_matter(kind):
    frame = pd.concat([_clean(), _clean()[["c"]]], axis=1)
    assert list(frame.columns).count("c") == 2
    value = QUERIES[kind].evaluate(frame)
    assert np.atleast_1d(value).tolist() == np.atleast_1d(EXPECTED[kind]).tolist()


def test_query_columns_returns_exactly_the_declared_columns_in_order():
    frame = pd.DataFrame({"x": [1], "b": [2], "a": [3]})
    out = query_columns(frame, ["a", "b"], "q")
    assert list(out.columns) == ["a", "b"]
    assert out.to_numpy().tolist() == [[3, 2]]
    with pytest.raises(QueryError, match="no column"):
        query_columns(frame, ["z"], "q")
    multi = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "x"), ("a", "y")]))
    with pytest.raises(QueryError, match="MultiIndex"):
        query_columns(multi, ["a"], "q")
    with pytest.raises(QueryError, match="DataFrame"):
        query_columns({"a": [1]}, ["a"], "q")  # type: ignore[arg-type]


@pytest.mark.parametrize("weights, bounds, words", [
    ({"a": 10**400}, {"a": (0, 1)}, "weight of 'a': an integer of about 401 digits"),
    ({"a": 10**5000}, {"a": (0, 1)}, "about 5001 digits"),
    ({"a": 1}, {"a": (0, 10**400)}, "upper bound: an integer of about 401 digits"),
    ({"a": 1}, {"a": (-(10**309), 0)}, "lower bound"),
    ({"a": 1}, {"a": (-1e308, 1e308)}, "not a finite float"),
    ({"a": 1e308}, {"a": (0, 10)}, "not a finite float"),
    ({"a": 1e308, "b": 1e308}, {"a": (0, 1), "b": (0, 1)}, "not a finite float"),
    ({"a": 1}, {"a": (0,)}, "bounds must be a pair"),
    ({"a": "x"}, {"a": (0, 1)}, "is not a number"),
])
def test_linear_query_refuses_huge_numbers_with_its_error(weights, bounds, words):
    with pytest.raises(QueryError, match="linear query") as info:
        LinearQuery(weights, bounds)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_sum_and_mean_refuse_overflowing_sensitivity():
    with pytest.raises(QueryError, match="sum query.*not a finite float"):
        SumQuery("a", 10**10, lower=0, upper=1e300)
    with pytest.raises(QueryError, match="mean query.*upper bound"):
        MeanQuery("a", lower=0, upper=10**400)
    assert SumQuery("a", 10, lower=0, upper=1e300).sensitivity(["a"]) == 1e301


# -- the command line ---------------------------------------------------------------------------

BASE = ["release", "student", "--sensitive", "income", "--epsilon", "1", "--seed", "1"]
CLI_QUERIES = {
    "count": ["--query", "count", "--attributes", "height", "--records", "3",
              "--where", "height > 0"],
    "domain count": ["--query", "count", "--attributes", "height", "--records", "3",
                     "--where", "height == 1", "--domain", "height=0|1"],
    "sum": ["--query", "sum", "--attributes", "height", "--records", "3", "--bounds", "0:1"],
    "mean": ["--query", "mean", "--attributes", "height", "--bounds", "0:1"],
    "linear": ["--query", "linear", "--weights", "height=1", "--bounds", "height=0:1"],
    "histogram": ["--query", "histogram", "--attributes", "height", "--records", "3",
                  "--categories", "height=0|1"],
}


@pytest.mark.parametrize("kind", list(CLI_QUERIES))
def test_cli_refuses_a_csv_with_a_duplicated_column(kind, tmp_path, cli):
    ok = tmp_path / "ok.csv"
    ok.write_text("height,w\n1,0\n0,1\n1,1\n", encoding="utf-8")
    dup = tmp_path / "dup.csv"
    dup.write_text("height,w,height\n1,0,1\n0,1,0\n1,1,1\n", encoding="utf-8")
    rc, out, err = cli([*BASE, *CLI_QUERIES[kind], "--data", ok])
    assert rc == 0, err
    rc, out, err = cli([*BASE, *CLI_QUERIES[kind], "--data", dup])
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("quiltpriv: error: "), err
    assert "more than one column named 'height'" in err
    assert "Traceback" not in err
