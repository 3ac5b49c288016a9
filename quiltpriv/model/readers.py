"""quiltpriv's own readers of BIF and XMLBIF files: text in,
:class:`~quiltpriv.model.network.Theta` out.

They read a model in one pass over the text, with no pgmpy objects in between, and build Theta
with :func:`~quiltpriv.model.network.theta_from_tables`. On every file pgmpy's readers read
correctly they give the same model bit for bit as ``BIFReader``/``XMLBIFReader`` followed by
:func:`~quiltpriv.model.network.theta_from_pgmpy`: the same nodes in the same order, the same state
names, the same parent axis order and the same float64 numbers (``tests/model/test_readers.py``
compares them on every network pgmpy bundles and on hand-made files). pgmpy's readers stay
available as ``load_model(path, reader="pgmpy")``.

BIF, as pgmpy reads it::

    network NAME { property ...; }
    variable NAME { type discrete [ K ] { s1, s2, ..., sK }; property ...; }
    probability ( NODE | P1, P2 ) { ( p1, p2 ) v1, ..., vK; ... }
    probability ( NODE ) { table v1, ..., vK; }

- Comments (``/* */`` and ``//``) are removed and double quotes read as spaces (as pgmpy does),
  so ``"very high"`` and ``very high`` name the same state; names and states are stripped.
- ``probability ( A B C )`` without ``|`` is the old form: node ``A``, parents ``B`` and ``C``.
- A node or parent named in a ``probability`` header matches a declared variable exactly, or
  else the one declared variable equal to it ignoring case.
- A row ``( p1, ..., pk ) v1, ..., vK;`` gives ``P(NODE = s_j | parents = (p1, ..., pk)) =
  v_j``. A ``table`` lists the whole CPD with the node's state as the slowest axis and the
  parents' configurations in row-major order (the last parent fastest); for a node without
  parents ``default`` means the same as ``table``.
- Numbers are decimal literals (``0.25``, ``1e-5``), separated by commas or spaces; each is
  read with Python's ``float`` (correctly rounded), and one that float64 cannot hold is refused
  by :func:`check_probability_literal`.

XMLBIF: ``<BIF><NETWORK><NAME>`` then ``<VARIABLE>`` (``<NAME>``, ``<OUTCOME>`` per state) and
``<DEFINITION>`` (``<FOR>``, ``<GIVEN>`` per parent in axis order, ``<TABLE>`` with the node's
state fastest) elements; texts are taken as written. Entity declarations are refused (no
"billion laughs", no external entities); unknown elements are ignored.

Stricter than pgmpy, by design: a file is refused (:class:`~quiltpriv.errors.ModelError`
naming the file, the line and the problem) when a block is not closed, a statement is not one
of the above, a variable or a CPD is given twice, a row is missing or repeated, a row has the
wrong number of values, ``table`` and rows are mixed, ``default`` is used for a node with
parents, or an entry is not a number. Properties are read and ignored. Where pgmpy's reader
misreads a correct file (a last block without a newline after its ``}``, two blocks on one
line, a header spread over lines, names that differ only in case) these readers read what the
file says.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np

from quiltpriv.errors import ModelError
from quiltpriv.model.cpd_tables import CPD_SUM_TOLERANCE
from quiltpriv.model.network import Theta, theta_from_tables
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.time_limit import TimeLimit, limit_check

#: Most hyperparameter values one node may declare (checked before pgmpy parses the file).
MAX_STATES = 10_000

#: Smallest positive normal float64. A probability below it is stored with fewer than 16
#: significant digits (subnormal) or as 0, so a file that writes one is refused.
_TINY = 2.2250738585072014e-308


def check_probability_literal(token: str, where: str) -> float:
    """The float a model file's probability ``token`` denotes, or ModelError.

    A positive number that float64 rounds to 0 (``1e-400``) would silently make a possible
    state impossible, and one in the subnormal range (below ``2.2250738585072014e-308``) would
    be stored with a relative error up to 100%: both are refused, never read as something else.
    """
    if not isinstance(token, str):
        raise ModelError(f"{where}: a probability literal must be text, got {token!r}")
    try:
        x = float(token)
    except ValueError:
        raise ModelError(f"{where}: {token!r} is not a number") from None
    if not math.isfinite(x):
        raise ModelError(f"{where}: the probability {token} is not a finite number")
    if 0 <= x < _TINY and any(c in "123456789" for c in token.lower().split("e")[0]):
        raise ModelError(
            f"{where}: the probability {token} is positive but below float64's normal range "
            f"(smallest {_fmt(_TINY, 17)}); it cannot be stored faithfully (write 0 if the state "
            "is "
            "impossible)")
    return x


# pgmpy's comment pattern: a double-quoted string (kept) or a comment (removed).
_COMMENT = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|(/\*.*?\*/|//[^\n]*)', re.DOTALL)
_SPACE = re.compile(r"\s*")
_NETWORK = re.compile(r"network(?![\w.-])[^{};]*\{")
_VARIABLE = re.compile(r"variable\s+([^{};]*?)\s*\{")
_PROBABILITY = re.compile(r"probability\s*\(([^(){};]*)\)\s*\{")
_TYPE = re.compile(r"type\s+(\w+)\s*\[\s*(\d+)\s*\]\s*\{([^{}]*)\}\s*;")
# A row or table ends with ";" (pgmpy also reads one left out before the next row or the "}").
_ROW_RE = r"(\()([^(){};]*)\)([^(){};]*)(?:;|(?=\(|\s*(?:\}|\Z)))"
_TABLE_RE = r"(table|default)\s([^(){};]*)(?:;|(?=\s*(?:\}|\Z)))"
_PROPERTY_RE = r"property(?![\w.-])[^;{}]*;"
_ROW = re.compile(_ROW_RE)
_PROPERTY = re.compile(_PROPERTY_RE)
_TABLE = re.compile(_TABLE_RE)
#: One statement of a probability block body, and a whole body (what the fast path accepts).
_STATEMENT = re.compile(rf"\s*(?:{_ROW_RE}|{_TABLE_RE}|{_PROPERTY_RE})")
_BODY = re.compile(rf"(?:\s*(?:{_ROW_RE}|{_TABLE_RE}|{_PROPERTY_RE}))*\s*")
_COMMA_SPACE = re.compile(r"\s*,\s*")
#: Characters a name cannot hold (they would end it in some statement).
_NAME_BREAKS = re.compile(r"[(){}\[\];,|]")
#: Empty entries in a ";"-joined list of numbers: a doubled comma, or a piece opening with one
#: (both start with a literal character, which the regular expression engine skips to fast).
_DOUBLE_COMMA = re.compile(r",\s*,")
_LEADING_COMMA = re.compile(r";\s*,")
#: A character no decimal literal holds (so "nan", "inf" and "1_0" never reach float()).
_NOT_NUMERIC = re.compile(r"[^0-9.eE+\-,;\s]")
_NOT_NUMERIC_XML = re.compile(r"[^0-9.eE+\-\s]")  # one piece, spaces only
_NAN_OR_INF = re.compile(r"(?i)[-+]?(nan|inf(inity)?)")
#: Smallest positive normal float64 (as in quiltpriv.model.loading): below it a literal needs a
# check.
_TINY = 2.2250738585072014e-308
#: More digits than any sane count of states (int() of a 5,000-digit number raises).
_MAX_COUNT_DIGITS = 9


def _after_space(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not white space."""
    match = _SPACE.match(text, pos)
    assert match is not None  # \s* matches everywhere
    return match.end()


class _Source:
    """The text being read and how to point into it in an error."""

    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where

    def line(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def error(self, pos: int, message: str) -> ModelError:
        return ModelError(f"{self.where}, line {self.line(pos)}: {message}")

    def expected(self, pos: int, what: str, context: str) -> ModelError:
        if pos >= len(self.text):
            return self.error(pos, f"the file ends inside {context}; expected {what}")
        found = self.text[pos:pos + 24].split("\n")[0]
        return self.error(pos, f"expected {what} in {context}, found {found!r}")


def _check_text(text: object, where: object) -> None:
    """A model file's text must be a str (decoded), and ``where`` a label for its messages."""
    if not isinstance(where, str):
        raise ModelError(f"where (the file's name for messages) must be a string, got {where!r}")
    if not isinstance(text, str):
        raise ModelError(f"{where}: the model text must be a str, got {type(text).__name__}")


# -- BIF ------------------------------------------------------------------------------------------


def read_bif(text: str, where: str, *, name: str | None = None,
             tolerance: float = CPD_SUM_TOLERANCE,
             time_limit: TimeLimit | float | None = None) -> Theta:
    """Theta of the BIF model ``text``; ``where`` (the path) prefixes every error.

    ``name`` labels the member of Theta (default: ``where``). ``time_limit`` (seconds, or a
    running :class:`~quiltpriv.utils.time_limit.TimeLimit`) is checked between the text's
    parse and every few thousand probability blocks; once it has passed, reading stops with
    a :class:`~quiltpriv.errors.TimeLimitError`.
    """
    _check_text(text, where)
    check = limit_check(time_limit, f"reading the model {where}")
    check("before its text was parsed")
    src, variables, blocks = _parse_bif(text, where)
    check(f"its text parsed, 0 of {len(blocks):,} probability blocks read")
    states = {v: states for v, (states, _) in variables.items()}
    parents: dict[str, list[str]] = {}
    tables: dict[str, np.ndarray] = {}
    resolve = _resolver(variables, src)
    seen: dict[str, int] = {}
    for block in check.paced(blocks, "{done:,} of {total:,} probability blocks read"):
        var = resolve(block.node, "a probability block", block.pos)
        if var in seen:
            raise ModelError(f"{where}: more than one probability block for {var}")
        seen[var] = block.pos
        pa = [resolve(p, f"the probability block of {var!r}", block.pos) for p in block.parents]
        dup = _first_repeat(pa)
        if dup is not None:
            raise src.error(block.pos, f"the probability block of {var!r} lists parent "
                                       f"{dup!r} twice")
        parents[var] = pa
        tables[var] = _bif_table(block, var, pa, states, src)
    missing = [v for v in variables if v not in tables]
    if missing:
        shown = ", ".join(map(repr, missing[:5])) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ModelError(f"{where}: no probability block for variable(s) {shown}")
    check(f"every probability block read, the tables of {len(tables):,} nodes not yet "
          "checked")
    return _theta(states, parents, tables, name or where, where, tolerance)


class _Block:
    """One ``probability`` block as written: header names, rows or table, position."""

    __slots__ = ("node", "parents", "heads", "numbers", "tables", "pos")

    def __init__(self, node: str, parents: list[str], pos: int) -> None:
        self.node = node
        self.parents = parents
        self.heads: list[str] = []  # the parent states of each row, as written
        self.numbers: list[str] = []  # the probabilities of each row, as written
        self.tables: list[tuple[str, str]] = []  # (keyword, probabilities) of table entries
        self.pos = pos


def _prepare(text: str) -> str:
    """The text as pgmpy reads it: comments removed, double quotes read as spaces.

    A removed comment leaves its newlines behind, so line numbers stay those of the file.
    """
    if text.startswith("\ufeff"):
        text = " " + text[1:]  # a byte order mark, kept as a space so positions hold
    if "/*" in text or "//" in text:
        text = _COMMENT.sub(lambda m: m.group(1) or "\n" * m.group(2).count("\n"), text)
    return text.replace('"', " ")


def _parse_bif(text: str, where: str) -> tuple[
        _Source, dict[str, tuple[tuple[str, ...], int]], list[_Block]]:
    """The text read, its variables (name -> (states, position)) and probability blocks."""
    if "\0" in text:
        raise ModelError(f"{where}: the file holds a NUL character (it is not a text file)")
    text = _prepare(text)
    src = _Source(text, where)
    n = len(text)
    variables: dict[str, tuple[tuple[str, ...], int]] = {}
    blocks: list[_Block] = []
    network_seen = False
    pos = _after_space(text, 0)
    while pos < n:
        if text.startswith("variable", pos):
            name, states, pos_next = _bif_variable(src, pos)
            if name in variables:
                raise ModelError(f"{where}: variable(s) declared twice: {name}")
            variables[name] = (states, pos)
            pos = pos_next
        elif text.startswith("probability", pos):
            block, pos = _bif_probability(src, pos)
            blocks.append(block)
        elif text.startswith("network", pos):
            if network_seen:
                raise src.error(pos, "a second 'network' block")
            network_seen = True
            m = _NETWORK.match(text, pos)
            if m is None:
                raise src.expected(pos, "'network NAME {'", "the network block")
            pos = _properties_then_close(src, m.end(), "the network block")
        else:
            raise src.expected(pos, "'network', 'variable' or 'probability'", "the file")
        pos = _after_space(text, pos)
    if not variables:
        raise ModelError(f"{where}: the BIF file declares no variables")
    return src, variables, blocks


def _properties_then_close(src: _Source, pos: int, context: str) -> int:
    text = src.text
    while True:
        pos = _after_space(text, pos)
        if text.startswith("}", pos):
            return pos + 1
        m = _PROPERTY.match(text, pos)
        if m is None:
            raise src.expected(pos, "'property ...;' or '}'", context)
        pos = m.end()


def _check_name(src: _Source, pos: int, name: str, what: str) -> str:
    if not name:
        raise src.error(pos, f"{what} has no name")
    bad = _NAME_BREAKS.search(name)
    if bad or "\n" in name:
        raise src.error(pos, f"{what} {name!r} holds {bad.group() if bad else 'a newline'!r}, "
                             "which a name cannot")
    return name


def _bif_variable(src: _Source, pos: int) -> tuple[str, tuple[str, ...], int]:
    text = src.text
    m = _VARIABLE.match(text, pos)
    if m is None:
        raise src.expected(pos, "'variable NAME {'", "a variable declaration")
    name = _check_name(src, pos, m.group(1).strip(), "a variable")
    context = f"the declaration of variable {name!r}"
    states: tuple[str, ...] | None = None
    pos = m.end()
    while True:
        pos = _after_space(text, pos)
        if text.startswith("}", pos):
            pos += 1
            break
        if text.startswith("type", pos):
            t = _TYPE.match(text, pos)
            if t is None:
                raise src.expected(pos, "'type discrete [ K ] { s1, ..., sK };'", context)
            if states is not None:
                raise src.error(pos, f"variable {name!r} declares its type twice")
            if t.group(1) != "discrete":
                raise src.error(pos, f"variable {name!r} has type {t.group(1)!r}; only "
                                     "'discrete' variables are supported")
            states = _bif_states(src, pos, name, t.group(2), t.group(3))
            pos = t.end()
            continue
        p = _PROPERTY.match(text, pos)
        if p is None:
            raise src.expected(pos, "'type', 'property' or '}'", context)
        pos = p.end()
    if states is None:
        raise src.error(m.start(), f"variable {name!r} declares no states "
                                   "('type discrete [ K ] { ... };')")
    return name, states, pos


def _bif_states(src: _Source, pos: int, name: str, count: str, listing: str) -> tuple[str, ...]:
    where = src.where
    declared = int(count) if len(count) <= _MAX_COUNT_DIGITS else MAX_STATES + 1
    if declared > MAX_STATES:
        shown = declared if len(count) <= _MAX_COUNT_DIGITS else f"a {len(count)}-digit number of"
        raise ModelError(f"{where}: variable {name!r} declares {shown} states "
                         f"(at most {MAX_STATES} are supported)")
    listed = [s.strip() for s in listing.split(",")]
    listed = [s for s in listed if s]
    if "," not in listing and len(listed) == 1 and len(listed[0].split()) > 1:
        raise src.error(pos, f"variable {name!r} lists its states {listed[0]!r} without commas "
                             "(separate them with commas)")
    if len(listed) != declared:
        raise ModelError(f"{where}: variable {name!r} declares {declared} states but lists "
                         f"{len(listed)}")
    if not listed:
        raise src.error(pos, f"variable {name!r} declares no states")
    if len(set(listed)) != len(listed):
        raise ModelError(f"{where}: variable {name!r} lists a state twice")
    return tuple(listed)


def _bif_probability(src: _Source, pos: int) -> tuple[_Block, int]:
    text = src.text
    m = _PROBABILITY.match(text, pos)
    if m is None:
        raise src.expected(pos, "'probability ( NODE | PARENTS ) {'", "a probability block")
    head = m.group(1)
    node, bar, rest = head.partition("|")
    if bar:
        node = node.strip()
        parents = [p.strip() for p in rest.split(",")]
        if not rest.strip():
            raise src.error(pos, f"the probability block of {node!r} has '|' but no parents")
    else:  # the old form "probability ( A B C )": node A, parents B and C
        words = head.split()
        node, parents = (words[0], words[1:]) if words else ("", [])
    _check_name(src, pos, node, "the node of a probability block")
    for p in parents:
        _check_name(src, pos, p, f"a parent of {node!r}")
    block = _Block(node, parents, pos)
    # No statement of a body holds a "}", so the body ends at the first one. A body that is a
    # sequence of statements is split by one findall; anything else is scanned statement by
    # statement to say where it goes wrong.
    end = text.find("}", m.end())
    body = text[m.end():end] if end >= 0 else ""
    if end >= 0 and _BODY.fullmatch(body):
        for paren, heads, numbers, keyword, table in _STATEMENT.findall(body):
            if paren:
                block.heads.append(heads)
                block.numbers.append(numbers)
            elif keyword:
                block.tables.append((keyword, table))
        return block, end + 1
    _scan_body(src, m.end(), f"the probability block of {node!r}")
    raise AssertionError("unreachable: the scan raises")  # pragma: no cover


def _scan_body(src: _Source, pos: int, context: str) -> None:
    """Raise the error of a probability block body that is not a sequence of statements."""
    text = src.text
    while True:
        pos = _after_space(text, pos)
        if text.startswith("}", pos):
            raise src.error(pos, f"{context} is malformed")  # pragma: no cover - see caller
        for pattern in (_ROW, _TABLE, _PROPERTY):
            m = pattern.match(text, pos)
            if m is not None:
                pos = m.end()
                break
        else:
            raise src.expected(pos, "'( parent states ) probabilities;', 'table ...;' or '}'",
                               context)


def _resolver(variables: Mapping[str, Any], src: _Source) -> Callable[[str, str, int], str]:
    """Map a name in a header to its declared variable: exact, else unique ignoring case."""
    folded: dict[str, list[str]] = {}
    for v in variables:
        folded.setdefault(v.casefold(), []).append(v)

    def resolve(name: str, context: str, pos: int) -> str:
        if name in variables:
            return name
        same = folded.get(name.casefold(), [])
        if len(same) == 1:
            return same[0]
        hint = f" (it matches {', '.join(map(repr, same))} ignoring case)" if same else ""
        raise src.error(pos, f"{context} names {name!r}, which is not a declared "
                             f"variable{hint}")

    return resolve


def _bif_table(block: _Block, var: str, parents: Sequence[str],
               states: Mapping[str, tuple[str, ...]], src: _Source) -> np.ndarray:
    """The CPD of ``var`` as a C-ordered float64 array with axes ``(var, *parents)``."""
    card = len(states[var])
    cards = [len(states[p]) for p in parents]
    ncols = math.prod(cards)
    what = f"the CPD of {var!r}"
    pos = block.pos
    if block.tables and block.heads:
        raise src.error(pos, f"{what} mixes 'table' with rows of parent states")
    if len(block.tables) > 1:
        raise src.error(pos, f"{what} has more than one table/default entry")
    if block.tables:
        keyword, numbers = block.tables[0]
        if keyword == "default" and parents:
            raise src.error(pos, f"{what}: 'default' entries are not supported for a node with "
                                 "parents (give one row per configuration of its parents)")
        values = _numbers([numbers], src, pos, what)
        if values.size != card * ncols:
            raise src.error(pos, f"{what} has {values.size} probabilities, expected "
                                 f"{_expected(card, ncols)}")
        return values.reshape((card, *cards))
    if not block.heads:
        raise src.error(pos, f"{what} gives no probabilities")
    if not parents:
        raise src.error(pos, f"{what} has rows of parent states but {var!r} has no parents "
                             "(use 'table')")
    if len(block.heads) != ncols:  # before any allocation: ncols may be astronomically large
        raise src.error(pos, f"{what} has {len(block.heads)} rows, expected one per "
                             f"configuration of its parents ({_count(ncols)})")
    cols = _row_columns(block.heads, parents, states, src, pos, what)
    values = _numbers(block.numbers, src, pos, what, per_piece=card)
    table = np.empty((card, ncols))
    table[:, cols] = values.reshape(ncols, card).T
    return table.reshape((card, *cards))


def _expected(card: int, ncols: int) -> str:
    if ncols == 1:
        return f"{card} (one per state)"
    return (f"{_count(card * ncols)} ({card} states x {_count(ncols)} configurations of the "
            "parents)")


def _count(n: int) -> str:
    """``n`` for a message; a huge product of cardinalities as a power of ten."""
    return str(n) if n < 10**30 else f"about 10^{round(math.log10(n))}"


def _first_repeat(names: Sequence[str]) -> str | None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def _row_columns(heads: list[str], parents: Sequence[str],
                 states: Mapping[str, tuple[str, ...]], src: _Source, pos: int,
                 what: str) -> list[int]:
    """The column (row-major parent configuration, last parent fastest) each row gives."""
    # "( a , b )" -> "a,b" for every row at once, then one dict look-up per row.
    keys = [k.strip() for k in _COMMA_SPACE.sub(",", "\0".join(heads)).split("\0")]
    configs = itertools.product(*(states[p] for p in parents))
    lookup = dict(zip(map(",".join, configs), itertools.count()))
    cols = list(map(lookup.get, keys))
    if None in cols or len(set(cols)) != len(cols):
        seen: set[int] = set()
        for head, col in zip(heads, cols, strict=True):
            items = [s.strip() for s in head.split(",")]
            if col is None:
                if len(items) != len(parents):
                    raise src.error(pos, f"{what}: the row ({head.strip()}) names {len(items)} "
                                         f"parent states, expected {len(parents)} "
                                         f"({', '.join(parents)})")
                k, s = next((k, s) for k, s in enumerate(items) if s not in states[parents[k]])
                raise src.error(pos, f"{what}: {s!r} in the row ({', '.join(items)}) is not a "
                                     f"state of parent {parents[k]!r} (states: "
                                     f"{', '.join(states[parents[k]])})")
            if col in seen:
                raise src.error(pos, f"{what} gives the row ({', '.join(items)}) twice")
            seen.add(col)
    return cols  # type: ignore[return-value]  # no None left


def _numbers(pieces: Sequence[str], src: _Source, pos: int, what: str,
             per_piece: int | None = None, *, commas: bool = True) -> np.ndarray:
    """The probabilities written in ``pieces`` as one float64 array, in order.

    Each piece is a comma- or space-separated list of decimal literals (one trailing comma
    allowed; without ``commas`` only spaces separate); with ``per_piece`` each must hold
    exactly that many. The pieces are joined and checked at once, then every literal is read
    by ``float``'s rules (correctly rounded).
    """
    joined = ";".join(pieces)
    if not joined.isascii() or "_" in joined or (not commas and ("," in joined or ";" in joined)):
        # float() reads non-ASCII digits and "1_0"; the pattern names the offending literal.
        _refuse_literal(joined, commas, src, pos, what)
    if commas:
        empty = _DOUBLE_COMMA.search(joined) or _LEADING_COMMA.search(joined)
        if empty or joined.lstrip().startswith(",") or joined.rstrip().endswith(",,"):
            index = joined[:empty.start() if empty else 0].count(";") + (
                empty is not None and empty.group().startswith(";"))
            raise src.error(pos, f"{what} has an empty entry in {pieces[index].strip()!r}")
        joined = joined.replace(",", " ")  # a single trailing comma per piece vanishes too
    tokens = joined.replace(";", " ").split() if commas else joined.split()
    if not tokens:
        raise src.error(pos, f"{what} gives no probabilities")
    try:
        # An ASCII literal without "_" that float() reads is a decimal number, "nan" or
        # "inf(inity)" (either case, signed); the last two are refused below.
        values = np.array(tokens, dtype=np.float64)
    except ValueError:
        token = next(t for t in tokens if not _is_float(t))
        raise src.error(pos, f"{what}: {token!r} is not a number") from None
    if per_piece is not None:
        counts = [len(r.split()) for r in joined.split(";")]
        wrong = next((c for c in counts if c != per_piece), None)
        if wrong is not None:
            raise src.error(pos, f"{what}: a row has {wrong} probabilities, expected "
                                 f"{per_piece} (one per state)")
    if not np.all(np.isfinite(values)):
        raise ModelError(f"{src.where}: {what} contains NaN or infinite probabilities")
    small = (values >= 0) & (values < _TINY)
    if small.any():
        # Zeros are common and written a few ways ("0", "0.0"): check each spelling once.
        for token in set(itertools.compress(tokens, small.tolist())):
            check_probability_literal(token, f"{src.where}: {what}")
    return values


def _refuse_literal(joined: str, commas: bool, src: _Source, pos: int, what: str) -> None:
    """Raise naming the first literal of ``joined`` holding a character no number holds."""
    m = (_NOT_NUMERIC if commas else _NOT_NUMERIC_XML).search(joined)
    if m is None:
        return
    separators = " \t\r\n,;" if commas else " \t\r\n"
    start = max(joined.rfind(c, 0, m.start()) for c in separators) + 1
    token = re.split(f"[{separators}]", joined[start:], maxsplit=1)[0] or joined[m.start()]
    if _NAN_OR_INF.fullmatch(token):
        raise ModelError(f"{src.where}: {what} contains NaN or infinite probabilities")
    raise src.error(pos, f"{what}: {token!r} is not a number")


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _theta(states: Mapping[str, tuple[str, ...]], parents: Mapping[str, Sequence[str]],
           tables: Mapping[str, np.ndarray], name: str, where: str,
           tolerance: float) -> Theta:
    """Theta from the parsed parts; its checks (cycles, sums to one, ...) name ``where``."""
    nodes = list(states)
    edges = [(p, v) for v in nodes for p in parents.get(v, ())]
    try:
        return theta_from_tables(edges, states, tables, [name],
                                 parents_order={v: parents.get(v, []) for v in nodes},
                                 tolerance=tolerance)
    except ModelError as exc:
        message = str(exc)
        if message.startswith(f"{name}: "):
            message = message[len(name) + 2:]
        raise ModelError(f"{where}: {message}") from None


# -- XMLBIF ---------------------------------------------------------------------------------------

#: The elements read, by their path from the root (the root's own name is not checked, as
#: pgmpy's reader does not); texts are collected only for the leaves.
_XML_LEAVES = {
    ("NETWORK", "NAME"): "network name",
    ("NETWORK", "VARIABLE", "NAME"): "name",
    ("NETWORK", "VARIABLE", "OUTCOME"): "outcome",
    ("NETWORK", "DEFINITION", "FOR"): "for",
    ("NETWORK", "DEFINITION", "GIVEN"): "given",
    ("NETWORK", "DEFINITION", "TABLE"): "table",
}


class _XmlItem:
    """A VARIABLE or DEFINITION element: its leaves' texts and the line it starts on."""

    __slots__ = ("line", "fields")

    def __init__(self, line: int) -> None:
        self.line = line
        self.fields: dict[str, list[str]] = {}


def read_xmlbif(text: str, where: str, *, name: str | None = None,
                tolerance: float = CPD_SUM_TOLERANCE,
                time_limit: TimeLimit | float | None = None) -> Theta:
    """Theta of the XMLBIF model ``text``; ``where`` (the path) prefixes every error.

    ``time_limit`` is checked as :func:`read_bif` checks it (between the parse and every
    few thousand variables and definitions).
    """
    _check_text(text, where)
    check = limit_check(time_limit, f"reading the model {where}")
    check("before its text was parsed")
    variables, definitions = _parse_xmlbif(text, where)
    check(f"its text parsed, 0 of {len(variables):,} variables read")

    def err(line: int, message: str) -> ModelError:
        return ModelError(f"{where}, line {line}: {message}")

    states: dict[str, tuple[str, ...]] = {}
    for item in check.paced(variables, "{done:,} of {total:,} variables read"):
        names = item.fields.get("name", [])
        if len(names) != 1 or not names[0]:
            raise err(item.line, "a VARIABLE needs exactly one non-empty NAME")
        var = names[0]
        if var in states:
            raise ModelError(f"{where}: variable(s) declared twice: {var}")
        outcomes = item.fields.get("outcome", [])
        if not outcomes:
            raise err(item.line, f"variable {var!r} has no OUTCOME")
        if len(outcomes) > MAX_STATES:
            raise ModelError(f"{where}: variable {var!r} declares {len(outcomes)} states "
                             f"(at most {MAX_STATES} are supported)")
        if not all(outcomes):
            raise err(item.line, f"variable {var!r} has an empty OUTCOME")
        if len(set(outcomes)) != len(outcomes):
            raise ModelError(f"{where}: variable {var!r} lists a state twice")
        states[var] = tuple(outcomes)
    if not states:
        raise ModelError(f"{where}: the XMLBIF file declares no variables")
    parents: dict[str, list[str]] = {}
    tables: dict[str, np.ndarray] = {}
    for item in check.paced(definitions, "{done:,} of {total:,} definitions read"):
        fors = item.fields.get("for", [])
        if len(fors) != 1:
            raise err(item.line, "a DEFINITION needs exactly one FOR")
        var = fors[0]
        if var not in states:
            raise err(item.line, f"a DEFINITION is for {var!r}, which is not a declared "
                                 "variable")
        if var in tables:
            raise ModelError(f"{where}: more than one probability block for {var}")
        pa = item.fields.get("given", [])
        for p in pa:
            if p not in states:
                raise err(item.line, f"the parent {p!r} of {var!r} is not a declared variable")
        dup = _first_repeat(pa)
        if dup is not None:
            raise err(item.line, f"the DEFINITION of {var!r} lists parent {dup!r} twice")
        body = item.fields.get("table", [])
        if len(body) != 1:
            raise err(item.line, f"the DEFINITION of {var!r} needs exactly one TABLE")
        what = f"the CPD of {var!r}"
        values = _numbers([body[0]], _XmlPlace(where, item.line), 0, what, commas=False)
        card, cards = len(states[var]), [len(states[p]) for p in pa]
        ncols = math.prod(cards)
        if values.size != card * ncols:
            raise err(item.line, f"{what} has {values.size} probabilities, expected "
                                 f"{_expected(card, ncols)}")
        # The node's state varies fastest in a TABLE; Theta's axes are (node, *parents).
        tables[var] = np.ascontiguousarray(values.reshape(ncols, card).T).reshape(
            (card, *cards))
        parents[var] = pa
    missing = [v for v in states if v not in tables]
    if missing:
        shown = ", ".join(map(repr, missing[:5])) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ModelError(f"{where}: no DEFINITION for variable(s) {shown}")
    check(f"every definition read, the tables of {len(tables):,} nodes not yet checked")
    return _theta(states, parents, tables, name or where, where, tolerance)


class _XmlPlace(_Source):
    """Errors of an XMLBIF TABLE: the file and the line its DEFINITION starts on."""

    def __init__(self, where: str, line: int) -> None:
        super().__init__("", where)
        self._line = line

    def line(self, pos: int) -> int:
        return self._line


def _parse_xmlbif(text: str, where: str) -> tuple[list[_XmlItem], list[_XmlItem]]:
    """VARIABLE and DEFINITION elements of the first NETWORK under the root, in file order."""
    from xml.parsers import expat

    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    path: list[str] = []
    variables: list[_XmlItem] = []
    definitions: list[_XmlItem] = []
    current: list[_XmlItem | None] = [None]
    texts: list[str] = []
    collecting: list[str | None] = [None]
    networks = [0]

    def no_entities(*args: Any) -> NoReturn:
        raise ModelError(f"{where}, line {parser.CurrentLineNumber}: the file declares XML "
                         "entities, which a model file may not")

    def start(tag: str, attrs: Any) -> None:
        if collecting[0] is not None:
            raise ModelError(f"{where}, line {parser.CurrentLineNumber}: unexpected element "
                             f"<{tag}> inside <{path[-1]}>")
        path.append(tag)
        inner = tuple(path[1:])
        if inner == ("NETWORK",):
            networks[0] += 1
            if networks[0] > 1:
                raise ModelError(f"{where}, line {parser.CurrentLineNumber}: a second NETWORK")
        elif inner in (("NETWORK", "VARIABLE"), ("NETWORK", "DEFINITION")):
            item = _XmlItem(parser.CurrentLineNumber)
            (variables if inner[1] == "VARIABLE" else definitions).append(item)
            current[0] = item
        elif inner in _XML_LEAVES:
            collecting[0] = _XML_LEAVES[inner]
            texts.clear()

    def end(tag: str) -> None:
        inner = tuple(path[1:])
        field = collecting[0]
        if field is not None:
            collecting[0] = None
            value = "".join(texts)
            if field == "network name":
                network_name.append(value)
            else:
                item = current[0]
                assert item is not None
                item.fields.setdefault(field, []).append(value)
        elif inner in (("NETWORK", "VARIABLE"), ("NETWORK", "DEFINITION")):
            current[0] = None
        path.pop()

    def chars(data: str) -> None:
        if collecting[0] is not None:
            texts.append(data)

    network_name: list[str] = []
    parser.EntityDeclHandler = no_entities
    parser.UnparsedEntityDeclHandler = no_entities
    parser.ExternalEntityRefHandler = no_entities
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.buffer_text = True
    try:
        parser.Parse(text.encode("utf-8"), True)
    except expat.ExpatError as exc:
        raise ModelError(f"cannot read XMLBIF file {where}: {exc}") from None
    if not networks[0]:
        raise ModelError(f"cannot read XMLBIF file {where}: no <NETWORK> element under the root")
    if len(network_name) != 1:
        raise ModelError(f"cannot read XMLBIF file {where}: the NETWORK needs exactly one NAME")
    return variables, definitions
