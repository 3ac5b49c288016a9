"""The predicate language of ``where``: parsed once into a checked, immutable tree.

A count query's ``where`` text crosses the trust boundary, so it is never handed to an evaluator
that can reach anything else (``pandas.eval`` resolves ``@name`` to Python variables and allows
attribute access and calls). :func:`parse_predicate` reads the text once -- Python's own parser
in ``eval`` mode is the tokenizer, nothing of its tree is kept -- into the small frozen node
types below, and checks it; everything after that (evaluation on data, on the record states of
a model, the canonical text of records and fingerprints) uses only that tree.

Grammar
-------
::

    predicate  := predicate ("or" | "|") predicate
                | predicate ("and" | "&") predicate
                | ("not" | "~") predicate
                | comparison | "True" | "False" | "(" predicate ")"
    comparison := term (cmp term)+                   # chained: a < b < c is a < b and b < c
                | term ("in" | "not in") list
    cmp        := "==" | "!=" | "<" | "<=" | ">" | ">="
    list       := "[" literal ("," literal)* "]" | "(" literal ("," literal)* ","? ")"
    term       := term ("+" | "-" | "*" | "/") term | "-" term | "(" term ")"
                | name | number | string | "True" | "False"
    name       := identifier | "`" any characters but backtick and newline "`"

``&`` and ``|`` have the precedence of ``and`` and ``or`` (as in pandas), ``~`` is ``not`` and
applies to a parenthesised condition (``~(x > 1)``). Names are attributes; backticks quote a
column name with spaces or other characters (pandas style); bare names are ASCII identifiers.

Meaning
-------
The result is one true/false value per record (a predicate that is not a condition, such as
``height + 1``, is refused when parsed). Attribute values are numbers (integer, float or boolean
columns; ``True`` is 1) or text; numbers are compared and computed as IEEE doubles, so integer
data beyond 2^53 in absolute value are refused rather than rounded. Text is compared as text
(code point order for ``<``). A number is never compared with text; an arithmetic result that
is not a finite number (division by zero, overflow) is an error, not a silent ``False``.

Refused, with a :class:`~quiltpriv.errors.QueryError` naming the piece: ``@`` (pandas local
variables: ``@data`` is the whole DataFrame, sensitive columns included), attribute access,
calls, subscripts, lambdas, comprehensions, conditional expressions, ``:=``, f-strings, bytes,
``is``, ``%``, ``//``, ``**``, bitwise operators on numbers, comments, non-ASCII text outside
quotes, names that are not declared attributes, and texts longer than
:data:`MAX_PREDICATE_LENGTH` characters, with more than :data:`MAX_PREDICATE_NODES` nodes or
nested deeper than :data:`MAX_PREDICATE_DEPTH`.
"""

from __future__ import annotations

import ast
import io
import keyword
import math
import tokenize
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from quiltpriv.errors import QueryError

__all__ = [
    "MAX_PREDICATE_DEPTH",
    "MAX_PREDICATE_LENGTH",
    "MAX_PREDICATE_NODES",
    "Predicate",
    "parse_predicate",
]

#: Longest predicate text accepted (characters).
MAX_PREDICATE_LENGTH = 4000
#: Most nodes of the parsed tree (Python's parse tree, counted before conversion).
MAX_PREDICATE_NODES = 1000
#: Deepest nesting of the parsed tree.
MAX_PREDICATE_DEPTH = 48
#: Integers (literals and data) are exact as doubles up to this magnitude.
MAX_EXACT_INTEGER = 2**53

_COMPARE_OPS: dict[type[ast.AST], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_ARITH_OPS: dict[type[ast.AST], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_REFUSED_OPS: dict[type[ast.AST], str] = {
    ast.Mod: "'%'", ast.Pow: "'**'", ast.FloorDiv: "'//'", ast.MatMult: "'@'",
    ast.BitXor: "'^'", ast.LShift: "'<<'", ast.RShift: "'>>'",
    ast.BitAnd: "'&' on numbers", ast.BitOr: "'|' on numbers",
    ast.Is: "'is'", ast.IsNot: "'is not'", ast.UAdd: "unary '+'"}
_REFUSED_NODES = {
    ast.Attribute: "attribute access", ast.Call: "a function call", ast.Subscript: "subscripting",
    ast.Lambda: "a lambda", ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator expression",
    ast.IfExp: "a conditional expression", ast.NamedExpr: "an assignment (':=')",
    ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string", ast.Starred: "'*'",
    ast.Dict: "a dict", ast.Set: "a set", ast.Slice: "a slice", ast.Await: "'await'",
    ast.Yield: "'yield'", ast.YieldFrom: "'yield'",
}


# -- the tree -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attribute:
    """A declared attribute (a column of the data, a node of the model)."""

    name: str


@dataclass(frozen=True)
class Literal:
    """A constant: ``kind`` is ``"number"`` (int or float), ``"text"`` or ``"bool"``."""

    value: int | float | str | bool
    kind: str


@dataclass(frozen=True)
class Negate:
    """``-operand`` (numbers)."""

    operand: Node


@dataclass(frozen=True)
class Arithmetic:
    """``left op right`` with ``op`` in ``+ - * /`` (numbers, IEEE doubles)."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Comparison:
    """``left op right`` with ``op`` in ``== != < <= > >=``."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Membership:
    """``operand in [values]`` (``not in`` when ``negated``)."""

    operand: Node
    values: tuple[Literal, ...]
    negated: bool


@dataclass(frozen=True)
class Not:
    """``not operand``."""

    operand: Node


@dataclass(frozen=True)
class Logical:
    """``operands[0] op operands[1] op ...`` with ``op`` ``"and"`` or ``"or"``."""

    op: str
    operands: tuple[Node, ...]


Node = Attribute | Literal | Negate | Arithmetic | Comparison | Membership | Not | Logical

# Precedence for printing (higher binds tighter).
_PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "/": 6, "neg": 7,
         "atom": 8}


def _prec(node: Node) -> int:
    if isinstance(node, Logical):
        return _PREC[node.op]
    if isinstance(node, Not):
        return _PREC["not"]
    if isinstance(node, Comparison | Membership):
        return _PREC["cmp"]
    if isinstance(node, Arithmetic):
        return _PREC[node.op]
    if isinstance(node, Negate):
        return _PREC["neg"]
    if isinstance(node, Literal) and node.kind == "number" and cast(float, node.value) < 0:
        return _PREC["neg"]
    return _PREC["atom"]


def _name_text(name: str) -> str:
    if (name.isascii() and name.isidentifier() and not keyword.iskeyword(name)
            and name not in ("True", "False", "None")):
        return name
    return f"`{name}`"


def _literal_text(lit: Literal) -> str:
    return repr(lit.value)


def _text(node: Node) -> str:
    """Canonical text: minimal parentheses, ``and``/``or``/``not``, backticks where needed."""

    def wrap(child: Node, least: int) -> str:
        s = _text(child)
        return f"({s})" if _prec(child) < least else s

    if isinstance(node, Attribute):
        return _name_text(node.name)
    if isinstance(node, Literal):
        return _literal_text(node)
    if isinstance(node, Negate):
        return "-" + wrap(node.operand, _PREC["neg"])
    if isinstance(node, Arithmetic):
        p = _PREC[node.op]
        # Left-associative; the right operand needs parentheses at equal precedence (a - (b - c),
        # and a + (b + c), since float addition is not associative).
        return f"{wrap(node.left, p)} {node.op} {wrap(node.right, p + 1)}"
    if isinstance(node, Comparison):
        p = _PREC["cmp"] + 1
        return f"{wrap(node.left, p)} {node.op} {wrap(node.right, p)}"
    if isinstance(node, Membership):
        op = "not in" if node.negated else "in"
        items = ", ".join(_literal_text(v) for v in node.values)
        return f"{wrap(node.operand, _PREC['cmp'] + 1)} {op} [{items}]"
    if isinstance(node, Not):
        return "not " + wrap(node.operand, _PREC["not"])
    p = _PREC[node.op] + 1
    return f" {node.op} ".join(wrap(o, p) for o in node.operands)


def _tree_dict(node: Node) -> dict[str, Any]:
    if isinstance(node, Attribute):
        return {"attribute": node.name}
    if isinstance(node, Literal):
        return {"literal": node.value, "kind": node.kind}
    if isinstance(node, Negate):
        return {"op": "neg", "operand": _tree_dict(node.operand)}
    if isinstance(node, Arithmetic | Comparison):
        return {"op": node.op, "left": _tree_dict(node.left), "right": _tree_dict(node.right)}
    if isinstance(node, Membership):
        return {"op": "not in" if node.negated else "in", "operand": _tree_dict(node.operand),
                "values": [v.value for v in node.values]}
    if isinstance(node, Not):
        return {"op": "not", "operand": _tree_dict(node.operand)}
    return {"op": node.op, "operands": [_tree_dict(o) for o in node.operands]}


def _walk(node: Node) -> Iterable[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, Negate | Not):
            stack.append(n.operand)
        elif isinstance(n, Arithmetic | Comparison):
            stack += [n.right, n.left]
        elif isinstance(n, Membership):
            stack.append(n.operand)
        elif isinstance(n, Logical):
            stack += reversed(n.operands)


# -- parsing --------------------------------------------------------------------------------------


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _string_end(text: str, i: int) -> int:
    """Index just after the string literal that starts with the quote at ``text[i]``."""
    q = text[i]
    triple = text[i:i + 3] == q * 3
    j = i + (3 if triple else 1)
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if triple and text[j:j + 3] == q * 3:
            return j + 3
        if not triple and c == q:
            return j + 1
        if not triple and c in "\r\n":
            break
        j += 1
    raise QueryError(f"predicate {_short(text)!r}: unterminated string starting at "
                     f"{_short(text[i:], 20)!r}")


def _syntax_hint(source: str) -> str:
    """A hint for the usual slips of a predicate that does not parse: ``=`` for ``==`` (as in
    SQL), ``=>`` / ``=<`` for ``>=`` / ``<=``; "" when none is seen.

    Read from Python's tokens of the prepared source, so an ``=`` inside a quoted string or a
    backtick name is never taken for one.
    """
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type == tokenize.OP]
    except (tokenize.TokenError, SyntaxError, ValueError):  # no hint; the error stands
        return ""
    for k, t in enumerate(tokens):
        if t.string != "=":
            continue
        after = tokens[k + 1] if k + 1 < len(tokens) else None
        if after is not None and after.start == t.end and after.string in ("<", ">"):
            meaning = {"<": "at most", ">": "at least"}[after.string]
            return f" (use '{after.string}=' for '{meaning}', not '={after.string}')"
        return " (use '==' to compare for equality; '=' is not an operator here)"
    return ""


def _prepare(text: str) -> tuple[str, dict[str, str]]:
    """Python source for ``text``: backtick names -> placeholders, ``&``/``|`` -> and/or.

    Strings are copied verbatim; ``@``, comments and non-ASCII characters outside strings and
    backticks are refused here (before Python's parser could read ``@x`` as anything).
    """
    m = 0
    while f"_q{m}_" in text:
        m += 1
    out: list[str] = []
    names: dict[str, str] = {}
    by_name: dict[str, str] = {}
    i = 0
    while i < len(text):
        c = text[i]
        if c in "'\"":
            j = _string_end(text, i)
            out.append(text[i:j])
            i = j
            continue
        if c == "`":
            j = text.find("`", i + 1)
            name = text[i + 1:j] if j >= 0 else ""
            if j < 0 or not name or "\n" in name or "\r" in name:
                raise QueryError(f"predicate {_short(text)!r}: a backtick-quoted name must be "
                                 "non-empty, on one line and closed with a backtick")
            ph = by_name.get(name)
            if ph is None:
                ph = by_name[name] = f"_q{m}_{len(by_name)}"
                names[ph] = name
            out.append(f" {ph} ")
            i = j + 1
            continue
        if c == "@":
            k = i + 1
            while k < len(text) and (text[k].isalnum() or text[k] in "_.'\"()"):
                k += 1
            raise QueryError(
                f"predicate {_short(text)!r}: {text[i:k]!r} is not allowed: '@' names a Python "
                "variable (pandas' @data is the whole dataset), not a declared attribute")
        if c == "#":
            raise QueryError(f"predicate {_short(text)!r}: comments ('#') are not allowed")
        if not c.isascii():
            raise QueryError(f"predicate {_short(text)!r}: character {c!r} outside quotes; "
                             "quote a column name that is not plain ASCII with backticks")
        if c in "\r\n\t\f\v":
            out.append(" ")  # a predicate may span lines; Python would read indentation
        elif c == "&":
            out.append(" and ")
        elif c == "|":
            out.append(" or ")
        else:
            out.append(c)
        i += 1
    return "".join(out), names


def _bound_tree(tree: ast.AST, text: str) -> None:
    """Refuse a parse tree with too many nodes or too deep (iteratively: no recursion)."""
    count = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_PREDICATE_NODES:
            raise QueryError(f"predicate {_short(text)!r} is too large (more than "
                             f"{MAX_PREDICATE_NODES} nodes)")
        if depth > MAX_PREDICATE_DEPTH:
            raise QueryError(f"predicate {_short(text)!r} is nested too deeply (more than "
                             f"{MAX_PREDICATE_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


class _Converter:
    """Python parse tree -> predicate tree, refusing everything outside the grammar."""

    def __init__(self, text: str, source: str, placeholders: Mapping[str, str]) -> None:
        self.text = text
        self.source = source
        self.placeholders = placeholders

    def piece(self, node: ast.AST) -> str:
        seg = ast.get_source_segment(self.source, node) or type(node).__name__
        for ph, name in self.placeholders.items():
            seg = seg.replace(ph, f"`{name}`")
        return _short(" ".join(seg.split()), 60)

    def refuse(self, node: ast.AST, what: str) -> QueryError:
        return QueryError(f"predicate {_short(self.text)!r}: {what} is not allowed "
                          f"(in {self.piece(node)!r}); a predicate compares declared "
                          "attributes with literals (==, !=, <, <=, >, >=, in [...]) and "
                          "combines conditions with and, or, not")

    def literal(self, node: ast.AST) -> Literal:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.literal(node.operand)
            if inner.kind != "number":
                raise self.refuse(node, "minus on a non-number")
            return _number(-cast(float, inner.value), self, node)
        if not isinstance(node, ast.Constant):
            raise self.refuse(node, "a value that is not a literal inside a list")
        return self.constant(node)

    def constant(self, node: ast.Constant) -> Literal:
        v = node.value
        if isinstance(v, bool):
            return Literal(v, "bool")
        if isinstance(v, int | float):
            return _number(v, self, node)
        if isinstance(v, str):
            return Literal(v, "text")
        what = {bytes: "a bytes literal", complex: "a complex number"}.get(type(v), f"{v!r}")
        raise self.refuse(node, what)

    def convert(self, node: ast.AST) -> Node:
        if isinstance(node, ast.Expression):
            return self.convert(node.body)
        if isinstance(node, ast.Name):
            # Placeholders use a prefix that does not occur in the text, so no user name can
            # collide with one.
            return Attribute(self.placeholders.get(node.id, node.id))
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            parts: list[Node] = []
            for v in node.values:
                c = self.convert(v)
                parts += c.operands if isinstance(c, Logical) and c.op == op else [c]
            return Logical(op, tuple(parts))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not | ast.Invert):
                return Not(self.convert(node.operand))
            if isinstance(node.op, ast.USub):
                inner = self.convert(node.operand)
                if isinstance(inner, Literal) and inner.kind == "number":
                    return _number(-cast(float, inner.value), self, node)
                return Negate(inner)
            raise self.refuse(node, _REFUSED_OPS.get(type(node.op), "this operator"))
        if isinstance(node, ast.BinOp):
            arith = _ARITH_OPS.get(type(node.op))
            if arith is None:
                raise self.refuse(node, _REFUSED_OPS.get(type(node.op), "this operator"))
            return Arithmetic(arith, self.convert(node.left), self.convert(node.right))
        if isinstance(node, ast.Compare):
            parts = []
            left = self.convert(node.left)
            last = len(node.ops) - 1
            for k, (cmp, right_ast) in enumerate(zip(node.ops, node.comparators, strict=True)):
                if isinstance(cmp, ast.In | ast.NotIn):
                    if not isinstance(right_ast, ast.List | ast.Tuple):
                        raise self.refuse(right_ast, "'in' with something other than a list "
                                                     "of literals")
                    if k != last:
                        raise self.refuse(node, "a comparison chained after 'in [...]'")
                    values = tuple(self.literal(e) for e in right_ast.elts)
                    parts.append(Membership(left, values, isinstance(cmp, ast.NotIn)))
                    continue
                sym = _COMPARE_OPS.get(type(cmp))
                if sym is None:
                    raise self.refuse(node, _REFUSED_OPS.get(type(cmp), "this comparison"))
                right = self.convert(right_ast)
                parts.append(Comparison(sym, left, right))
                left = right
            return parts[0] if len(parts) == 1 else Logical("and", tuple(parts))
        if isinstance(node, ast.List | ast.Tuple):
            raise self.refuse(node, "a list outside 'in [...]'")
        what = _REFUSED_NODES.get(type(node), f"{type(node).__name__}")
        raise self.refuse(node, what)


def _number(v: int | float, conv: _Converter, node: ast.AST) -> Literal:
    if isinstance(v, int):
        if abs(v) > MAX_EXACT_INTEGER:
            raise conv.refuse(node, f"an integer beyond 2^53 ({_short(str(v), 30)}), which is "
                                    "not exact as a double,")
        return Literal(v, "number")
    if not math.isfinite(v):
        raise conv.refuse(node, "a number that is not finite")
    # Integral floats are written as integers: 66.0 and 66 are the same predicate.
    if v == int(v) and abs(v) <= MAX_EXACT_INTEGER:
        return Literal(int(v), "number")
    return Literal(float(v), "number")


# -- kinds (static type checking) -----------------------------------------------------------------


def _as_compared(kind: str, node: Node) -> str:
    """The kind of a comparison operand: a bool literal compares as the number 1 or 0."""
    if isinstance(node, Literal) and node.kind == "bool":
        return "number"
    return kind


def _infer_kinds(root: Node, kinds: Mapping[str, str], text: str) -> dict[str, str]:
    """Kinds of attributes implied by their use: arithmetic needs numbers, and an attribute
    compared directly with a number (text) is a number (text). Conflicting uses are refused
    (``x > 'a' and x < 3`` compares a number with text, whatever the data)."""
    out = dict(kinds)
    why: dict[str, str] = {}

    def need(name: str, kind: str, node: Node) -> None:
        have = out.get(name)
        if have is not None and have != kind:
            first = why.get(name, "its declared domain")
            raise QueryError(
                f"predicate {_short(text)!r}: {name!r} is used as "
                f"{'a number' if kind == 'number' else 'text'} in {_text(node)!r} but as "
                f"{'a number' if have == 'number' else 'text'} in {first}; it compares the "
                "number with text")
        out[name] = kind
        why.setdefault(name, repr(_text(node)))

    for n in _walk(root):
        if isinstance(n, Negate | Arithmetic):
            for o in ([n.operand] if isinstance(n, Negate) else [n.left, n.right]):
                if isinstance(o, Attribute):
                    need(o.name, "number", n)
        elif isinstance(n, Comparison):
            for a, b in ((n.left, n.right), (n.right, n.left)):
                if isinstance(a, Attribute) and isinstance(b, Literal):
                    need(a.name, "text" if b.kind == "text" else "number", n)
                elif isinstance(a, Attribute) and isinstance(b, Negate | Arithmetic):
                    need(a.name, "number", n)
        elif isinstance(n, Membership) and isinstance(n.operand, Attribute):
            for v in n.values:
                need(n.operand.name, "text" if v.kind == "text" else "number", n)
    return out


def _check_kinds(node: Node, kinds: Mapping[str, str], text: str) -> str:
    """Kind of ``node``: ``bool``, ``number``, ``text`` or ``value`` (number or text)."""

    def err(msg: str) -> QueryError:
        return QueryError(f"predicate {_short(text)!r}: {msg}")

    if isinstance(node, Attribute):
        return kinds.get(node.name, "value")
    if isinstance(node, Literal):
        return node.kind
    if isinstance(node, Negate | Arithmetic):
        operands = [node.operand] if isinstance(node, Negate) else [node.left, node.right]
        for o in operands:
            k = _check_kinds(o, kinds, text)
            if k not in ("number", "value"):
                raise err(f"arithmetic needs numbers, but {_text(o)!r} is "
                          f"{'a condition' if k == 'bool' else 'text'}")
        return "number"
    if isinstance(node, Comparison | Membership):
        left = node.left if isinstance(node, Comparison) else node.operand
        rights = [node.right] if isinstance(node, Comparison) else list(node.values)
        found = []
        for o in (left, *rights):
            k = _as_compared(_check_kinds(o, kinds, text), o)
            if k == "bool":
                raise err(f"{_text(o)!r} is a condition, not a value; combine conditions with "
                          "and, or, not instead of comparing them")
            found.append((k, o))
        concrete = {k for k, _ in found if k != "value"}
        if len(concrete) > 1:
            num = next(o for k, o in found if k == "number")
            txt = next(o for k, o in found if k == "text")
            raise err(f"{_text(node)!r} compares the number {_text(num)!r} with the text "
                      f"{_text(txt)!r}")
        return "bool"
    if isinstance(node, Not):
        if _check_kinds(node.operand, kinds, text) != "bool":
            raise err(f"'not'/'~' applies to a condition, but {_text(node.operand)!r} is a "
                      "value (write e.g. ~(x > 1))")
        return "bool"
    for o in node.operands:
        if _check_kinds(o, kinds, text) != "bool":
            raise err(f"'{node.op}' combines conditions, but {_text(o)!r} is a value "
                      "(write e.g. x == 1)")
    return "bool"


# -- evaluation -----------------------------------------------------------------------------------


def _value_kind(v: Any) -> str | None:
    if isinstance(v, str):
        return "text"
    if isinstance(v, bool | int | float | np.integer | np.floating | np.bool_):
        return "number"
    return None


def _key(v: Any) -> tuple[str, Any]:
    """Hashable identity of a value: numbers by value as doubles, text as itself."""
    if isinstance(v, str):
        return ("text", v)
    return ("number", float(v))


def _column(values: Any, name: str) -> tuple[str, np.ndarray]:
    """A column as (kind, array): float64 for numbers, object array of str for text."""
    import pandas as pd

    if isinstance(values, pd.DataFrame):
        raise QueryError(f"the data have more than one column named {name!r}")
    if isinstance(values, pd.Series):
        s = values.reset_index(drop=True)
    else:
        arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
        if arr.ndim != 1:
            raise QueryError(f"column {name!r} is not one-dimensional")
        s = pd.Series(arr.astype(object) if arr.dtype.kind in "US" else arr)
    if s.isna().any():
        raise QueryError(f"column {name!r} has {int(s.isna().sum())} missing/NaN value(s)")
    if pd.api.types.is_bool_dtype(s.dtype) or pd.api.types.is_numeric_dtype(s.dtype):
        return "number", _numbers(s.to_numpy(), name)
    raw = s.to_numpy(dtype=object)
    kinds = {_value_kind(v) for v in raw}
    if kinds == {"text"} or not raw.size:
        return "text", raw
    if kinds == {"number"}:
        return "number", _numbers(raw, name)
    bad = next(v for v in raw if _value_kind(v) is None) if None in kinds else None
    if bad is not None:
        raise QueryError(f"column {name!r} holds a value of type {type(bad).__name__} "
                         f"({_short(repr(bad), 30)}); a predicate reads numbers or text")
    raise QueryError(f"column {name!r} mixes numbers and text; a predicate reads one or the "
                     "other")


def _numbers(raw: np.ndarray, name: str) -> np.ndarray:
    big: np.ndarray | list[Any]
    if raw.dtype.kind in "iu":
        big = raw[(raw > MAX_EXACT_INTEGER) | (raw < -MAX_EXACT_INTEGER)]
    elif raw.dtype == object:
        big = [v for v in raw if not isinstance(v, float | np.floating)
               and abs(int(v)) > MAX_EXACT_INTEGER]
    else:
        big = []
    if len(big):
        raise QueryError(f"column {name!r} has {len(big)} integer(s) beyond 2^53 (e.g. "
                         f"{big[0]}), which are not exact as doubles")
    x = np.asarray(raw, dtype=float)
    if not np.all(np.isfinite(x)):
        raise QueryError(f"column {name!r} has {int((~np.isfinite(x)).sum())} value(s) that "
                         "are not finite numbers")
    return x


class _Evaluator:
    def __init__(self, columns: Mapping[str, tuple[str, np.ndarray]], text: str) -> None:
        self.columns = columns
        self.text = text

    def err(self, msg: str) -> QueryError:
        return QueryError(f"predicate {_short(self.text)!r}: {msg}")

    def value(self, node: Node) -> tuple[str, Any]:
        if isinstance(node, Attribute):
            return self.columns[node.name]
        if isinstance(node, Literal):
            if node.kind == "text":
                return "text", node.value
            return "number", np.float64(float(node.value))
        if isinstance(node, Negate):
            return "number", -self.number(node.operand)
        if isinstance(node, Arithmetic):
            a, b = self.number(node.left), self.number(node.right)
            with np.errstate(all="ignore"):
                r = {"+": np.add, "-": np.subtract, "*": np.multiply,
                     "/": np.divide}[node.op](a, b)
            bad = ~np.isfinite(r)
            if np.any(bad):
                raise self.err(f"{_text(node)!r} is not a finite number on {int(np.sum(bad))} "
                               "record(s) (division by zero or overflow)")
            return "number", r
        return "bool", self.truth(node)

    def number(self, node: Node) -> Any:
        kind, v = self.value(node)
        if kind != "number":
            raise self.err(f"arithmetic needs numbers, but {_text(node)!r} is text")
        return v

    def truth(self, node: Node) -> Any:
        if isinstance(node, Literal) and node.kind == "bool":
            return np.bool_(node.value)
        if isinstance(node, Not):
            return ~np.asarray(self.truth(node.operand), dtype=bool)
        if isinstance(node, Logical):
            parts = [np.asarray(self.truth(o), dtype=bool) for o in node.operands]
            f = np.logical_and if node.op == "and" else np.logical_or
            out = parts[0]
            for p in parts[1:]:
                out = f(out, p)
            return out
        if isinstance(node, Comparison):
            (kl, a), (kr, b) = self.operand(node.left), self.operand(node.right)
            if kl != kr:
                raise self.err(self.mismatch(node, node.left, kl, node.right, kr))
            compare = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
                       ">": np.greater, ">=": np.greater_equal}[node.op]
            return np.asarray(compare(a, b), dtype=bool)
        if isinstance(node, Membership):
            kind, a = self.operand(node.operand)
            want = {"number" if v.kind == "bool" else v.kind for v in node.values}
            if want and want != {kind}:
                raise self.err(f"{_text(node)!r} looks for "
                               f"{'text' if kind == 'number' else 'numbers'} in "
                               f"{'numbers' if kind == 'number' else 'text'}")
            if kind == "number":
                out = np.isin(a, np.array([float(v.value) for v in node.values], dtype=float))
            else:
                allowed = {v.value for v in node.values}
                arr = np.atleast_1d(np.asarray(a, dtype=object))
                out = np.fromiter((x in allowed for x in arr), dtype=bool, count=arr.size)
                if np.ndim(a) == 0:
                    out = out[0]
            return ~out if node.negated else out
        raise self.err(f"{_text(node)!r} is not a condition")  # excluded by the type check

    def operand(self, node: Node) -> tuple[str, Any]:
        kind, v = self.value(node)
        if isinstance(node, Literal) and node.kind == "bool":
            return "number", np.float64(float(node.value))
        if kind == "bool":
            raise self.err(f"{_text(node)!r} is a condition, not a value")
        return kind, v

    def mismatch(self, node: Node, left: Node, kl: str, right: Node, kr: str) -> str:
        def desc(n: Node, k: str) -> str:
            if isinstance(n, Attribute):
                return f"column {n.name!r} holds {'numbers' if k == 'number' else 'text'}"
            return f"{_text(n)!r} is {'a number' if k == 'number' else 'text'}"
        return (f"{_text(node)!r} compares a number with text ({desc(left, kl)}, "
                f"{desc(right, kr)})")


# -- the public object ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Predicate:
    """A checked predicate over declared attributes (see the module docstring).

    Build it with :func:`parse_predicate`. ``str(p)`` is the canonical text (minimal
    parentheses, ``and``/``or``/``not``, names needing it in backticks); parsing it again gives
    an equal predicate.

    Parameters
    ----------
    root : Node
        The expression tree (frozen node types of this module).
    names : tuple of str
        The attributes the predicate reads, in order of first appearance.

    Examples
    --------
    >>> import pandas as pd
    >>> import quiltpriv as qp
    >>> predicate = qp.parse_predicate("(height > 66) and sat>1300")
    >>> str(predicate), predicate.names
    ('height > 66 and sat > 1300', ('height', 'sat'))
    >>> predicate.evaluate(pd.DataFrame({"height": [70, 60], "sat": [1400, 1400]}))
    array([ True, False])
    """

    root: Node
    names: tuple[str, ...]

    def __str__(self) -> str:
        return _text(self.root)

    @property
    def text(self) -> str:
        """The canonical text (``str(self)``)."""
        return _text(self.root)

    def to_dict(self) -> dict[str, Any]:
        """``{"text": canonical text, "reads": names, "tree": nested node dicts}``."""
        return {"text": self.text, "reads": list(self.names), "tree": _tree_dict(self.root)}

    def comparisons(self) -> list[tuple[str, Literal]]:
        """Every (attribute, literal) pair the predicate compares directly (``a < 3``, ``a in
        [...]``); used to check literals against a declared domain."""
        out: list[tuple[str, Literal]] = []
        for n in _walk(self.root):
            if isinstance(n, Comparison):
                for a, b in ((n.left, n.right), (n.right, n.left)):
                    if isinstance(a, Attribute) and isinstance(b, Literal):
                        out.append((a.name, b))
            elif isinstance(n, Membership) and isinstance(n.operand, Attribute):
                out += [(n.operand.name, v) for v in n.values]
        return out

    def check_domain(self, domain: Mapping[str, Sequence[Any]], where: str = "") -> None:
        """Refuse a predicate that cannot mean anything on the declared ``domain``.

        Every attribute compared with a literal must be one whose domain contains that literal
        (``height > 66`` over ``{0, 1}`` is refused: 66 is not a value ``height`` can take),
        and numbers are never compared with text. ``where`` prefixes the message.
        """
        kinds: dict[str, str] = {}
        for a, vals in domain.items():
            ks = {_value_kind(v) for v in vals}
            kind = ks.pop() if len(ks) == 1 else None
            if kind is not None:
                kinds[a] = kind
        prefix = f"{where}: " if where else ""
        try:
            _check_kinds(self.root, _infer_kinds(self.root, kinds, self.text), self.text)
        except QueryError as exc:
            raise QueryError(f"{prefix}{exc} (over the declared domain)") from None
        for name, lit in self.comparisons():
            values = domain.get(name)
            if values is None:
                continue
            keys = {_key(v) for v in values}
            value = float(lit.value) if lit.kind == "bool" else lit.value
            if _key(value) not in keys:
                shown = ", ".join(repr(v) for v in list(values)[:8])
                more = ", ..." if len(values) > 8 else ""
                raise QueryError(
                    f"{prefix}the predicate {_short(self.text)!r} compares {name!r} with "
                    f"{lit.value!r}, which is not in its declared domain [{shown}{more}]: "
                    "every literal compared with an attribute must be a value it can take "
                    "(declare the data's own values, and map them to the model's record "
                    "states with record_states where a model is used)")

    def evaluate(self, frame: Any) -> np.ndarray:
        """True/false per record (a bool array) on a DataFrame or a mapping name -> column.

        Only the columns in :attr:`names` are read.

        Raises
        ------
        QueryError
            A missing column, missing values, a column mixing numbers and text, a number
            compared with text, or arithmetic that is not finite.
        """
        if isinstance(frame, Mapping):
            get = frame.__getitem__
            has = frame.__contains__
            n_rows = None
        else:
            import pandas as pd

            if not isinstance(frame, pd.DataFrame):
                raise QueryError("a predicate is evaluated on a pandas DataFrame or a mapping of "
                                 f"columns, not {type(frame).__name__}")
            get = frame.__getitem__
            has = frame.columns.__contains__
            n_rows = len(frame)
        missing = [a for a in self.names if not has(a)]
        if missing:
            raise QueryError(f"the data have no column(s) {', '.join(map(repr, missing))} "
                             "read by the predicate")
        columns = {a: _column(get(a), a) for a in self.names}
        lengths = {len(v) for _, v in columns.values()}
        if n_rows is None:
            if len(lengths) > 1:
                raise QueryError("the predicate's columns have different lengths")
            if not lengths and len(frame):  # a constant predicate: one value per row
                lengths = {len(get(next(iter(frame))))}
            n_rows = lengths.pop() if lengths else 0
        ev = _Evaluator(columns, self.text)
        out = np.asarray(ev.truth(self.root), dtype=bool)
        return np.broadcast_to(out, (n_rows,)).copy()


def parse_predicate(
    text: str | Predicate,
    attributes: Iterable[str] | None = None,
    *,
    domain: Mapping[str, Sequence[Any]] | None = None,
) -> Predicate:
    """Parse and check a predicate (grammar in the module docstring).

    Parameters
    ----------
    text : str or Predicate
        The predicate, e.g. ``"height > 66 and sat > 1300"``. A :class:`Predicate` is checked
        against ``attributes``/``domain`` and returned.
    attributes : iterable of str, optional
        The declared attributes; a name outside them is refused. Default: any name.
    domain : mapping of str to sequence, optional
        Declared values per attribute; see :meth:`Predicate.check_domain`.

    Returns
    -------
    Predicate

    Raises
    ------
    QueryError
        Anything outside the grammar, undeclared names, a result that is not true/false, or a
        text beyond the size limits -- never any other exception.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> print(qp.parse_predicate("height > 66 and not smoker == 'yes'"))
    height > 66 and not smoker == 'yes'
    >>> qp.parse_predicate("weight > 80", attributes=["height"])
    Traceback (most recent call last):
    ...
    quiltpriv.errors.QueryError: ...
    >>> qp.parse_predicate("__import__('os')")
    Traceback (most recent call last):
    ...
    quiltpriv.errors.QueryError: ...
    """
    if isinstance(text, Predicate):
        pred = text
    else:
        if not isinstance(text, str):
            raise QueryError(f"a predicate is a string, got {type(text).__name__}")
        if not text.strip():
            raise QueryError("the predicate is empty")
        if len(text) > MAX_PREDICATE_LENGTH:
            raise QueryError(f"the predicate is too long ({len(text)} characters; at most "
                             f"{MAX_PREDICATE_LENGTH})")
        source, placeholders = _prepare(text)
        try:
            # The parser's warnings (invalid escapes, "1if") would go to stderr: refuse instead.
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as exc:
            raise QueryError(f"predicate {_short(text)!r} is not valid: {exc.msg}"
                             f"{_syntax_hint(source)}") from None
        except (Warning, ValueError, RecursionError, MemoryError) as exc:
            raise QueryError(f"predicate {_short(text)!r} cannot be parsed: "
                             f"{type(exc).__name__}") from None
        _bound_tree(tree, text)
        root = _Converter(text, source.strip(), placeholders).convert(tree)
        kind = _check_kinds(root, _infer_kinds(root, {}, text), text)
        if kind != "bool":
            raise QueryError(
                f"predicate {_short(text)!r} is a {'value' if kind != 'text' else 'text'}, not "
                "a true/false condition (compare it with something, e.g. x == 1 or x > 0)")
        seen: dict[str, None] = {}
        for n in _walk(root):
            if isinstance(n, Attribute):
                seen.setdefault(n.name)
        pred = Predicate(root, tuple(seen))
    if attributes is not None:
        declared = [attributes] if isinstance(attributes, str) else list(attributes)
        unknown = [a for a in pred.names if a not in declared]
        if unknown:
            raise QueryError(
                f"predicate {_short(pred.text)!r} reads {', '.join(map(repr, unknown))}, which "
                f"{'is' if len(unknown) == 1 else 'are'} not declared (declared attributes: "
                f"{', '.join(declared)})")
    if domain is not None:
        pred.check_domain(domain)
    return pred
