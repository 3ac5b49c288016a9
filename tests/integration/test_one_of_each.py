"""One of each job: one JSON converter, one number format, one directed rounding, one
log-sum-exp.

Five JSON converters once disagreed on NaN and sets, and five modules each rounded a Fraction up
to a float their own way; these checks keep every new module on the shared ones
(:func:`quiltpriv.utils.serialize.jsonable`, :mod:`quiltpriv.utils.rounding`,
:func:`scipy.special.logsumexp`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "quiltpriv"

#: A function whose name says it converts to JSON values.
_CONVERTER = re.compile(r"^_?(json_?able|json_value|to_jsonable|json_safe|plain_json)$")
#: A function whose name says it rounds up/down or sums in log space.
_ROUNDING = re.compile(r"^_?(float_up|ceil_float|up|round_up|round_down|logsumexp)$")


_SHARED = {"round_up", "round_down", "div_up", "mul_up", "add_up", "scale_up", "sqrt_up",
           "exp_up", "logsumexp", "jsonable"}


def _functions(wrappers: bool = True):
    """(module path, function name) of every function; without ``wrappers``, those that call a
    shared helper (a thin wrapper adding a check) are left out."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                calls = {c.func.id for c in ast.walk(node)
                         if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
                if wrappers or not calls & _SHARED:
                    yield str(path.relative_to(PACKAGE.parent)), node.name


def test_one_json_converter():
    found = [(p, n) for p, n in _functions() if _CONVERTER.match(n)]
    assert found == [("quiltpriv/utils/serialize.py", "jsonable")], found


def test_one_number_and_set_format():
    # every table and message prints numbers by utils.format.fmt_number and sets by fmt_set
    found = [(p, n) for p, n in _functions() if re.match(r"^(_?fmt|fmt_number|_set|fmt_set)$", n)
             and p != "quiltpriv/utils/format.py"]
    assert not found, found


def test_one_directed_rounding():
    found = [(p, n) for p, n in _functions(wrappers=False) if _ROUNDING.match(n)
             and p != "quiltpriv/utils/rounding.py"]
    assert not found, found


def test_the_shared_converter_agrees_on_the_cases_that_once_differed():
    import json
    from fractions import Fraction

    import numpy as np

    from quiltpriv.utils.serialize import jsonable

    x = {"nan": float("nan"), "inf": -float("inf"), "set": {3, 1, 2}, "arr": np.arange(3),
         "half": Fraction(1, 2), "two": Fraction(4, 2), 7: np.float64(0.25)}
    assert json.loads(json.dumps(jsonable(x), allow_nan=False)) == {
        "nan": "nan", "inf": "-inf", "set": [1, 2, 3], "arr": [0, 1, 2], "half": "1/2",
        "two": 2, "7": 0.25}


def test_one_query_check():
    # every function taking a query refuses a non-query through queries.query.check_query
    said = [str(p.relative_to(PACKAGE.parent)) for p in sorted(PACKAGE.rglob("*.py"))
            if "must be a quiltpriv query" in p.read_text(encoding="utf-8")]
    # apmqm's plan parser returns the text as one of a plan's problems rather than raising it
    assert said == ["quiltpriv/mechanisms/apmqm/plan_types.py", "quiltpriv/queries/query.py"], said


def test_the_query_check_names_what_it_got():
    import pytest

    from quiltpriv.errors import QueryError
    from quiltpriv.queries.query import CountQuery, check_query

    q = CountQuery(["a"], 3)
    assert check_query(q) is q
    with pytest.raises(QueryError, match=r"^query must be a quiltpriv query \(CountQuery, "
                                         r"SumQuery, \.\.\. from quiltpriv\.queries\.query\), "
                                         r"got dict$"):
        check_query({"attributes": ["a"]})


def test_one_canonical_json():
    # Fingerprints (the model's, the query's) and the ledger's hash chain hash canonical JSON
    # text; it was written by three json.dumps calls with the same keywords (and model_diff
    # sorted members by a fourth). Now one function:
    # no other module of the package calls json.dumps with sort_keys=True.
    import pytest

    from quiltpriv.errors import ParameterError
    from quiltpriv.utils.serialize import canonical_json

    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "dumps"
                    and any(k.arg == "sort_keys" for k in node.keywords)):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert [o.split(":")[0] for o in offenders] == ["quiltpriv/utils/serialize.py"], offenders
    assert canonical_json({"b": [1, 2.5, (3, "é")], "a": None}) == \
        '{"a":null,"b":[1,2.5,[3,"\\u00e9"]]}'
    for bad in (float("nan"), float("inf"), {1: object()}, {"x": object()}):
        with pytest.raises(ParameterError):
            canonical_json(bad)
