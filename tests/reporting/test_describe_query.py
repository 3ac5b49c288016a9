"""One-line query descriptions (plan headers, verify, reports) for every query kind."""

from __future__ import annotations

import quiltpriv as qp
from quiltpriv.utils.format import describe_query


def test_a_fraction_of_time_names_its_steps_and_state_in_a_short_line():
    q = qp.FractionQuery([f"X{i}" for i in range(1, 10_001)], state="1")
    line = describe_query(q.to_dict())
    assert line == "fraction over X1, X2, X3, X4, X5, ..., X10000 (10000 in all), state '1'"


def test_the_other_kinds():
    assert describe_query(qp.CountQuery(["a", "b"], 5).to_dict()) == "count over a, b, n = 5"
    assert describe_query({"kind": "linear", "weights": {"a": 1, "b": 2}}) == "linear over a, b"
    assert describe_query({"kind": "mean", "attribute": "a", "records": 3}) == "mean over a, n = 3"
    assert describe_query({}) == "query over ?"
