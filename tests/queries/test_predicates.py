"""The predicate language (quiltpriv.queries.predicate): what it accepts, what it refuses, what it
means.

* every hostile example of the trust-boundary review is refused (``@data.income``,
  ``@data.to_csv(path)``) in Python and on the command line, and nothing is written;
* a seeded fuzz of token soups and of mutated valid predicates: every outcome is a predicate
  whose names are declared, or a QueryError -- never another exception, never a file opened
  or a process started (an audit hook watches), never an undeclared column read;
* evaluation agrees with a slow reference (plain Python, row by row) on random frames and
  random expression trees, and so does the canonical text (``str(pred)``), which parses back
  to the same tree.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.errors import QueryError
from quiltpriv.queries.predicate import (
    MAX_PREDICATE_DEPTH,
    MAX_PREDICATE_LENGTH,
    Predicate,
    parse_predicate,
)

# -- an audit hook: no file, process or code execution while predicates are parsed/evaluated ----

_WATCH = {"on": False, "events": []}
_FORBIDDEN = ("open", "exec", "os.", "subprocess.", "socket.", "shutil.", "ctypes.",
              "builtins.input", "pty.", "sys._getframe", "object.__getattr__")


def _hook(event, args):
    if _WATCH["on"] and event.startswith(_FORBIDDEN):
        _WATCH["events"].append((event, repr(args)[:80]))


sys.addaudithook(_hook)


class _Watched:
    def __enter__(self):
        _WATCH["events"].clear()
        _WATCH["on"] = True
        return self

    def __exit__(self, *exc):
        _WATCH["on"] = False
        assert not _WATCH["events"], _WATCH["events"][:5]


class _Columns(Mapping):
    """Columns that record which names were read (an undeclared one is a failure)."""

    def __init__(self, data, declared):
        self.data, self.declared, self.read = data, set(declared), set()

    def __getitem__(self, key):
        self.read.add(key)
        assert key in self.declared, f"read undeclared column {key!r}"
        return self.data[key]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)


# -- the review's examples ------------------------------------------------------------------------


def test_at_variables_are_refused_everywhere(tmp_path):
    target = tmp_path / "leak.csv"
    hostile = ["height > 66 and @data.income == 1", f"@data.to_csv('{target}')",
               f"height > 0 and @data.to_csv({str(target)!r}) is None", "@income == 1"]
    df = pd.DataFrame({"height": [60, 70], "sat": [1200, 1400], "income": [0, 1]})
    for text in hostile:
        with _Watched(), pytest.raises(QueryError, match="'@'"):
            parse_predicate(text, ["height", "sat"])
        with pytest.raises(QueryError, match="@"):
            qp.CountQuery(["height", "sat"], 10, where=text)
    assert not target.exists()
    # The exact release of the sensitive column at scale 0 the review found is impossible: the
    # query cannot be built, so neither planned nor released.
    theta = qp.load_model("student")
    q = qp.CountQuery(["height"], 10, where="height > 66")
    p = qp.plan(theta, q, "income", 1.0)
    assert p.scale == 0
    assert qp.release(p, q, df).value == 1.0  # reads height only
    with pytest.raises(QueryError, match="exactly"):
        qp.CountQuery(["height"], 10, where="height > 66 and income == 1")


def test_cli_refuses_at_variables_in_one_line(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("height,sat,income\n60,1200,0\n70,1400,1\n")
    target = tmp_path / "leak.csv"
    for where in ["height > 66 and @data.income == 1", f"@data.to_csv('{target}')",
                  "__import__('os').system('touch x') == 0"]:
        rc = main(["release", "student", "--sensitive", "income", "--attributes", "height",
                   "--records", "10", "--epsilon", "1", "--where", where, "--data", str(data),
                   "-o", str(tmp_path / "out.json")])
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith("quiltpriv: error:"), err
        assert len(err.strip().splitlines()) == 1, err
    assert not target.exists() and not (tmp_path / "out.json").exists()


# -- the grammar ---------------------------------------------------------------------------------

ACCEPTED = [
    ("height > 66 and sat > 1300", "height > 66 and sat > 1300"),
    ("height > 66 & sat > 1300", "height > 66 and sat > 1300"),
    ("a == 1 | b == 2 & c == 3", "a == 1 or b == 2 and c == 3"),
    ("(a == 1 | b == 2) & c == 3", "(a == 1 or b == 2) and c == 3"),
    ("~(a > 1)", "not a > 1"),
    ("not not a > 1", "not not a > 1"),
    ("1 < a <= 3", "1 < a and a <= 3"),
    ("a < b < c", "a < b and b < c"),
    ("a in [1, 2]", "a in [1, 2]"),
    ("a in (1,)", "a in [1]"),
    ("a not in ('x', 'y')", "a not in ['x', 'y']"),
    ("a * 2 - -3 > 10", "a * 2 - -3 > 10"),
    ("a - (b - c) > 0", "a - (b - c) > 0"),
    ("(a - b) - c > 0", "a - b - c > 0"),
    ("a + (b + c) > 0", "a + (b + c) > 0"),
    ("-(a + b) >= 1.5", "-(a + b) >= 1.5"),
    ("a / 4 == 0.25", "a / 4 == 0.25"),
    ("a == 66.0", "a == 66"),
    ("a == True", "a == True"),
    ("`my col` == 'x y'", "`my col` == 'x y'"),
    ("`income (k$)` > 3 and `a` == 1", "`income (k$)` > 3 and a == 1"),
    ("name == \"it's\"", "name == \"it's\""),
    ("name == 'caf\u00e9'", "name == 'caf\u00e9'"),
    ("True", "True"),
    ("a > 1 or False", "a > 1 or False"),
    ("(((a > 1)))", "a > 1"),
    ("a > 1\n and b < 2", "a > 1 and b < 2"),
]


@pytest.mark.parametrize("text, canonical", ACCEPTED)
def test_accepted_and_canonical(text, canonical):
    p = parse_predicate(text)
    assert isinstance(p, Predicate)
    assert str(p) == canonical
    assert parse_predicate(str(p)) == p  # the canonical text is a fixed point
    assert p.to_dict()["text"] == canonical
    assert set(p.to_dict()["reads"]) == set(p.names)


REFUSED = [
    ("height.real > 1", "attribute access"),
    ("len(height) > 1", "function call"),
    ("height[0] > 1", "subscripting"),
    ("(lambda: 1)() == 1", "function call|lambda"),
    ("[h for h in [1]] == 1", "comprehension"),
    ("{h: 1} == 1", "a dict"),
    ("{1} == height", "a set"),
    ("height if sat else 1", "conditional"),
    ("(height := 1) > 0", "':='"),
    ("f'{height}' == '1'", "f-string"),
    ("b'x' == height", "bytes"),
    ("height is None", "'is'"),
    ("height == None", "None"),
    ("height ** 2 > 1", r"'\*\*'"),
    ("height % 2 == 1", "'%'"),
    ("height // 2 == 1", "'//'"),
    ("height ^ 1 == 0", r"'\^'"),
    ("height << 1 > 0", "'<<'"),
    ("+height > 0", "unary"),
    ("height > 1 # comment", "comments"),
    ("h\u00e9ight > 1", "outside quotes"),
    ("height in sat", "list of literals"),
    ("height in [sat]", "literal"),
    ("height == [1, 2]", "list outside"),
    ("height in [1] == True", "chained after"),
    ("height + 1", "not a true/false"),
    ("height", "not a true/false"),
    ("'text'", "not a true/false"),
    ("height > 1 and 2", "combines conditions"),
    ("not height", "applies to a condition"),
    ("~height > 1", "applies to a condition"),
    ("(height > 1) == (sat > 1)", "is a condition"),
    ("(height > 1) + 1 > 0", "arithmetic needs numbers"),
    ("'a' + 1 > 0", "arithmetic needs numbers"),
    ("height > 'a' and height < 3", "compares the number"),
    ("height in [1, 'a']", "compares the number"),
    ("height == 1e999", "not finite"),
    ("height == 9007199254740993", "2\\^53"),
    ("height == 1j", "complex"),
    ("height >", "not valid"),
    ("height > 1 and (", "not valid"),
    ("`unclosed > 1", "backtick"),
    ("`` > 1", "backtick"),
    ("'unterminated > 1", "unterminated"),
    ("", "empty"),
    ("   ", "empty"),
    ("x\x00 > 1", "not valid|cannot be parsed|outside"),
    ("height > 1; import os", "not valid"),
    ("import os", "not valid"),
    ("__import__('os').system('true') == 0", "function call|attribute"),
    ("height.__class__.__mro__ == 1", "attribute access"),
    ("*height == 1", "not valid|'\\*'"),
    ("await height", "not valid|await"),
    ("yield height", "not valid|yield"),
    ("...", "Ellipsis"),
]


@pytest.mark.parametrize("text, match", REFUSED)
def test_refused_with_a_clear_error(text, match):
    with _Watched(), pytest.raises(QueryError, match=match) as info:
        parse_predicate(text)
    assert "\n" not in str(info.value)


def test_undeclared_names_and_exact_attributes():
    with pytest.raises(QueryError, match="'income', which is not declared"):
        parse_predicate("height > 1 and income == 1", ["height"])
    with pytest.raises(QueryError, match="declared but not read: 'sat'"):
        qp.CountQuery(["height", "sat"], 5, where="height > 1")
    with pytest.raises(QueryError, match="read but not declared: 'income'"):
        qp.CountQuery(["height"], 5, where="height > 1 and income > 1")
    q = qp.CountQuery(["my col"], 5, where="`my col` == 'a'")
    assert q.predicate.names == ("my col",) and q.where == "`my col` == 'a'"
    # A predicate object is accepted as is (and checked the same way).
    p = parse_predicate("a == 1 or b == 2")
    assert qp.CountQuery(["b", "a"], 3, where=p).where == "a == 1 or b == 2"


def test_size_bounds():
    with pytest.raises(QueryError, match="too long"):
        parse_predicate("a > 1 and " * (MAX_PREDICATE_LENGTH // 10) + "a > 1")
    with pytest.raises(QueryError, match="too large|too deeply|not valid|cannot be parsed"):
        parse_predicate(" + ".join(["a"] * 600) + " > 1")
    deep = "(" * (MAX_PREDICATE_DEPTH + 5) + "a > 1" + ")" * (MAX_PREDICATE_DEPTH + 5)
    # Parentheses alone add no depth to the tree: this one is fine.
    assert str(parse_predicate(deep)) == "a > 1"
    for hostile in ["-" * 3000 + "a > 1", "not " * 900 + "a > 1", "(" * 1500 + "a",
                    "a" + " < a" * 1200, "[" * 1000]:
        with _Watched(), pytest.raises(QueryError):
            parse_predicate(hostile)
    nested = "a > 1"
    for _ in range(MAX_PREDICATE_DEPTH):
        nested = f"not ({nested} or b > 1)"
    with pytest.raises(QueryError, match="too deeply"):
        parse_predicate(nested)


def test_evaluation_errors_are_query_errors():
    df = pd.DataFrame({"a": [1, 0, 2], "t": ["x", "y", "z"], "m": [1, "x", 2],
                       "n": [1.0, np.nan, 2.0], "big": [2**60, 1, 2]})
    cases = [("a / (a - 1) > 0", "not a finite number on 1 record"),
             ("t > 1", "compares a number with text"),
             ("a == 'x'", "compares a number with text"),
             ("t + 1 > 0", "arithmetic needs numbers"),
             ("t in [1, 2]", "looks for numbers in text"),
             ("m == 1", "mixes numbers and text"),
             ("n > 0", "missing"),
             ("big > 0", "beyond 2\\^53"),
             ("zz > 0", "no column")]
    for text, match in cases:
        with pytest.raises(QueryError, match=match):
            parse_predicate(text).evaluate(df)
    with pytest.raises(QueryError, match="more than one column named 'a'"):
        qp.parse_predicate("a > 1").evaluate(pd.DataFrame([[1, 2]], columns=["a", "a"]))
    with pytest.raises(QueryError, match="one-dimensional"):
        qp.parse_predicate("a > 1").evaluate({"a": np.zeros((2, 2))})
    # A bool column reads as 0/1; text compares as text.
    df2 = pd.DataFrame({"f": [True, False], "t": ["b", "a"]})
    assert parse_predicate("f == True and t > 'a'").evaluate(df2).tolist() == [True, False]
    assert parse_predicate("f + 1 == 2").evaluate(df2).tolist() == [True, False]
    assert parse_predicate("True").evaluate(df2).tolist() == [True, True]
    assert parse_predicate("t in ['a']").evaluate({"t": ["a", "b"]}).tolist() == [True, False]


# -- fuzz -----------------------------------------------------------------------------------------

DECLARED = ("a", "b", "c", "s", "my col")
TOKENS = [
    "a", "b", "c", "s", "`my col`", "`a`", "income", "data", "os", "__import__", "eval", "open",
    "lambda", "for", "in", "not", "and", "or", "is", "if", "else", "None", "True", "False",
    "import", "yield", "await", "print",
    "@", "@data", ".", ",", ":", ";", ":=", "=", "==", "!=", "<", "<=", ">", ">=", "+", "-",
    "*", "/", "**", "//", "%", "&", "|", "~", "^", "<<", "(", ")", "[", "]", "{", "}", "`",
    "'", '"', "'x'", '"y"', "f'{a}'", "b'z'", "r'\\'", "'''", "#", "\\", "\n", "\t", "\x00",
    "0", "1", "2.5", "-3", "1e999", "0x1F", "1_000", "9" * 20, "1j", "\u00e9", "\U0001F600",
    "to_csv", "('/tmp/x')", "__class__", "__mro__", "__subclasses__()", "...",
]


def _check_outcome(text, frame):
    with _Watched():
        try:
            p = parse_predicate(text, DECLARED)
        except QueryError as exc:
            assert str(exc).strip(), text
            return "refused"
        assert set(p.names) <= set(DECLARED), (text, p.names)
        assert parse_predicate(str(p)) == p, text
        cols = _Columns(frame, DECLARED)
        try:
            out = p.evaluate(cols)
        except QueryError:
            return "evaluation refused"
        # Only the predicate's own columns are read (a constant one takes the row count).
        assert cols.read <= set(p.names) or (not p.names and len(cols.read) == 1), text
        assert out.dtype == bool and out.shape == (len(frame["a"]),), text
    return "accepted"


def _frame(rng, n=7):
    return {"a": [rng.randint(-3, 3) for _ in range(n)],
            "b": [rng.choice([0.5, -1.25, 2.0, 3.0]) for _ in range(n)],
            "c": [rng.randint(0, 5) for _ in range(n)],
            "s": [rng.choice(["x", "y", "z"]) for _ in range(n)],
            "my col": [rng.randint(0, 2) for _ in range(n)],
            "income": [1] * n, "data": [1] * n}


def test_fuzz_token_soups():
    rng = random.Random(1405)
    outcomes = {}
    for _ in range(2500):
        k = rng.randint(1, 14)
        sep = rng.choice(["", " ", " "])
        text = sep.join(rng.choice(TOKENS) for _ in range(k))
        try:
            o = _check_outcome(text, _frame(rng))
        except QueryError:  # pragma: no cover - reported by the assertion below
            o = "escaped"
        outcomes[o] = outcomes.get(o, 0) + 1
    # Soups are almost always refused; both outcomes must occur for the test to mean anything.
    assert outcomes.get("refused", 0) > 2000 and outcomes.get("accepted", 0) >= 1, outcomes


def test_fuzz_mutated_valid_predicates():
    rng = random.Random(7)
    outcomes = {}
    for _ in range(1500):
        py, _ = _random_condition(rng, 3)
        pos = rng.randint(0, len(py))
        cut = rng.randint(0, 3)
        text = py[:pos] + rng.choice(TOKENS) + py[pos + cut:]
        o = _check_outcome(text, _frame(rng))
        outcomes[o] = outcomes.get(o, 0) + 1
    assert outcomes.get("refused", 0) > 300 and outcomes.get("accepted", 0) > 50, outcomes


# -- agreement with a slow reference ---------------------------------------------------------------


def _random_term(rng, depth):
    """A numeric term: (python text, alias text); always parenthesised, no division by 0."""
    r = rng.random()
    if depth <= 0 or r < 0.35:
        choice = rng.random()
        if choice < 0.5:
            t = rng.choice(["a", "b", "c"])
        elif choice < 0.8:
            t = str(rng.randint(-4, 4))
        else:
            t = rng.choice(["0.5", "1.5", "-2.25", "3.0"])
        return t, t
    if r < 0.45:
        x, y = _random_term(rng, depth - 1)
        return f"(-{x})", f"(-{y})"
    if r < 0.55:
        x, y = _random_term(rng, depth - 1)
        d = rng.choice(["2", "4", "0.5", "3"])
        return f"({x} / {d})", f"({y} / {d})"
    op = rng.choice(["+", "-", "*"])
    x1, y1 = _random_term(rng, depth - 1)
    x2, y2 = _random_term(rng, depth - 1)
    return f"({x1} {op} {x2})", f"({y1} {op} {y2})"


def _random_condition(rng, depth):
    """A condition: (python text, the same with &, |, ~ where it has and, or, not)."""
    r = rng.random()
    if depth <= 0 or r < 0.4:
        kind = rng.random()
        if kind < 0.45:
            op = rng.choice(["==", "!=", "<", "<=", ">", ">="])
            x1, y1 = _random_term(rng, 2)
            x2, y2 = _random_term(rng, 2)
            return f"({x1} {op} {x2})", f"({y1} {op} {y2})"
        if kind < 0.55:
            x1, y1 = _random_term(rng, 1)
            x2, y2 = _random_term(rng, 1)
            x3, y3 = _random_term(rng, 1)
            ops = [rng.choice(["<", "<=", "==", "!="]) for _ in range(2)]
            return (f"({x1} {ops[0]} {x2} {ops[1]} {x3})", f"({y1} {ops[0]} {y2} {ops[1]} {y3})")
        if kind < 0.7:
            neg = rng.choice(["in", "not in"])
            vals = ", ".join(str(rng.randint(-3, 3)) for _ in range(rng.randint(1, 4)))
            x, y = _random_term(rng, 1)
            return f"({x} {neg} [{vals}])", f"({y} {neg} [{vals}])"
        if kind < 0.9:
            op = rng.choice(["==", "!=", "<", ">=", "in"])
            if op == "in":
                vals = ", ".join(repr(v) for v in rng.sample(["x", "y", "z", "w"], 2))
                return f"(s in [{vals}])", f"(s in [{vals}])"
            v = repr(rng.choice(["x", "y", "z", "w"]))
            return f"(s {op} {v})", f"(s {op} {v})"
        v = rng.choice(["True", "False"])
        return v, v
    if r < 0.55:
        x, y = _random_condition(rng, depth - 1)
        return f"(not {x})", f"(~{y})" if y.startswith("(") else f"(~({y}))"
    op, alias = rng.choice([("and", "&"), ("or", "|")])
    x1, y1 = _random_condition(rng, depth - 1)
    x2, y2 = _random_condition(rng, depth - 1)
    return f"({x1} {op} {x2})", f"({y1} {alias} {y2})"


def _reference(text, rows):
    """Plain Python, row by row (the texts are the test's own, never user input)."""
    code = compile(text, "<reference>", "eval")
    return np.array([bool(eval(code, {"__builtins__": {}}, dict(r))) for r in rows])


def test_evaluation_matches_plain_python_row_by_row():
    rng = random.Random(20240614)
    checked = 0
    for trial in range(400):
        n = rng.randint(1, 12)
        frame = pd.DataFrame({
            "a": [rng.randint(-3, 3) for _ in range(n)],
            "b": [rng.choice([-1.5, 0.0, 0.25, 2.0, 3.0]) for _ in range(n)],
            "c": [rng.randint(0, 5) for _ in range(n)],
            "s": [rng.choice(["x", "y", "z"]) for _ in range(n)],
        })
        rows = [{k: (float(v) if isinstance(v, int | float | np.number) else v)
                 for k, v in r.items()} for r in frame.to_dict("records")]
        py, alias = _random_condition(rng, 4)
        p = parse_predicate(py, ["a", "b", "c", "s"])
        want = _reference(py, rows)
        got = p.evaluate(frame)
        assert got.tolist() == want.tolist(), (trial, py)
        # The aliases are the same predicate; the canonical text means the same in Python.
        assert parse_predicate(alias) == p, (alias, py)
        assert _reference(str(p), rows).tolist() == want.tolist(), (str(p), py)
        assert parse_predicate(str(p)) == p
        checked += 1
    assert checked == 400


def test_ampersand_has_the_precedence_of_and():
    df = pd.DataFrame({"a": [0, 1, 2, 3], "b": [3, 2, 1, 0]})
    rows = df.astype(float).to_dict("records")
    for alias, py in [("a > 1 & b < 2", "a > 1 and b < 2"),
                      ("a > 2 | b > 2 & a == 0", "a > 2 or b > 2 and a == 0"),
                      ("~(a > 1) & b > 0", "not a > 1 and b > 0")]:
        assert parse_predicate(alias).evaluate(df).tolist() == _reference(py, rows).tolist()


@pytest.mark.parametrize("text, hint", [
    ("height = 66", "use '==' to compare for equality"),
    ("height > 66 and sat = 1", "use '==' to compare for equality"),
    ("height => 66", "use '>=' for 'at least', not '=>'"),
    ("height =< 66", "use '<=' for 'at most', not '=<'"),
])
def test_single_equals_suggests_the_operator(text, hint):
    with pytest.raises(QueryError, match="invalid syntax") as info:
        parse_predicate(text)
    assert hint in str(info.value)


@pytest.mark.parametrize("text", ['height == "a=b" and', "`a=b` > 1 and", "height >"])
def test_no_equals_hint_from_quoted_text(text):
    with pytest.raises(QueryError) as info:
        parse_predicate(text)
    assert "'=='" not in str(info.value) and "use '" not in str(info.value)
