"""A privacy ledger: an append-only, hash-chained record of every release, and what the
releases together guarantee.

Storage: one SQLite database (the standard library's :mod:`sqlite3`). SQLite, not a JSON-lines
file, because an append is one transaction: several processes releasing at once are
serialised by SQLite's own lock (``BEGIN IMMEDIATE``) with no platform-specific file locking;
an entry is wholly written or absent even if the process dies mid-write (the journal); and the
head of the chain (count and last hash) is updated in the same transaction as the entry, so
the database always states where its chain ends. Triggers refuse ``UPDATE`` and ``DELETE`` on
entries. ``quiltpriv ledger show PATH --json`` prints everything as JSON for other tools.

Chain: entry ``k`` is the canonical JSON (sorted keys, no spaces) of
``{"seq": k, "prev": h_{k-1}, "record": <release record>}``, ``h_k`` the SHA-256 of those bytes
and ``h_{-1}`` sixty-four zeros. :func:`verify` recomputes every hash and checks that the
sequence numbers run 0, 1, 2, ... without a gap, that each entry names its predecessor's hash,
that every text is canonical, and that the stored head matches the last entry: an edited value,
a deleted or reordered entry, or a deleted last entry (the head still counts it) is detected.

Limit, stated plainly: whoever can write the file can also rewrite the whole chain and its head
consistently (SQLite is not a signature). Keep the head that :func:`verify` returns (or
``quiltpriv ledger verify`` prints) somewhere else and check it later with ``expect_head``:
every change to the history before that head is then detected.

Order with the release: :func:`quiltpriv.release` draws the noise, appends the record to the
ledger, and only then returns (the command line: prints) the released value. If the ledger
cannot be written, the release fails and its value is never shown. The converse can happen: a
value recorded in the ledger whose printing then failed. The ledger errs on the side of listing
a release that nobody saw, never of missing one that was seen.

Composition: see :func:`composition` and ``docs/ledger.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sqlite3
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from quiltpriv.errors import LedgerError
from quiltpriv.releases.records import RELEASE_FORMAT

__all__ = [
    "GENESIS",
    "LEDGER_FORMAT",
    "THEOREMS",
    "AttributeComposition",
    "Composition",
    "LedgerEntry",
    "LedgerHead",
    "append",
    "composition",
    "read",
    "repeats",
    "verify",
]

#: The ledger's format, stored in its ``meta`` table; any other value is refused.
LEDGER_FORMAT = "quiltpriv-ledger/1"

#: The ``prev`` hash of the first entry.
GENESIS = "0" * 64

#: Seconds a writer waits for another writer's transaction before giving up.
BUSY_TIMEOUT = 60.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries (seq INTEGER PRIMARY KEY, prev TEXT NOT NULL, "
    "hash TEXT NOT NULL, body TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS head (id INTEGER PRIMARY KEY CHECK (id = 0), "
    "count INTEGER NOT NULL, hash TEXT NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS entries_append_only_update BEFORE UPDATE ON entries "
    "BEGIN SELECT RAISE(ABORT, 'a quiltpriv ledger is append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS entries_append_only_delete BEFORE DELETE ON entries "
    "BEGIN SELECT RAISE(ABORT, 'a quiltpriv ledger is append-only'); END",
)


@dataclass(frozen=True)
class LedgerEntry:
    """One verified entry: its place in the chain and the release record it holds."""

    seq: int
    prev: str
    hash: str
    record: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "prev": self.prev, "hash": self.hash,
                "record": dict(self.record)}


@dataclass(frozen=True)
class LedgerHead:
    """Where a verified chain ends: keep ``hash`` elsewhere to detect a rewritten history."""

    path: str
    count: int
    hash: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "count": self.count, "head": self.hash}

    def explain(self) -> str:
        return (f"ledger {self.path}: {self.count} entr{'y' if self.count == 1 else 'ies'}, "
                f"hash chain intact, head {self.hash}")


def _canonical(x: Any) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), allow_nan=False,
                      ensure_ascii=True)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _fail(path: str, why: str) -> LedgerError:
    return LedgerError(f"ledger {path}: {why}")


# -- opening ----------------------------------------------------------------------------------


def _connect(path: str, *, create: bool) -> sqlite3.Connection:
    """An autocommit connection (transactions are explicit), read-only unless ``create``."""
    p = Path(path)
    if p.is_dir():
        raise _fail(path, "is a folder, not a ledger file")
    if not create and not p.exists():
        raise _fail(path, "no such file")
    if create and not p.exists():
        folder = p.resolve().parent
        if not folder.is_dir():
            raise _fail(path, f"folder {folder} does not exist")
    try:
        if create:
            con = sqlite3.connect(os.fspath(p), timeout=BUSY_TIMEOUT, isolation_level=None)
        else:
            # Read-write when allowed (never creating): SQLite then rolls back the journal a
            # writer that died mid-append left behind, which a read-only connection cannot.
            mode = "rw" if os.access(p, os.W_OK) else "ro"
            con = sqlite3.connect(f"{p.resolve().as_uri()}?mode={mode}", uri=True,
                                  timeout=BUSY_TIMEOUT, isolation_level=None)
    except sqlite3.Error as exc:
        raise _fail(path, f"cannot open it ({exc})") from None
    return con


def _check_format(con: sqlite3.Connection, path: str) -> None:
    try:
        tables = {r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise _fail(path, f"not a quiltpriv ledger (not an SQLite database: {exc})") from None
    if not {"meta", "entries", "head"} <= tables:
        raise _fail(path, "not a quiltpriv ledger (its tables are missing)")
    row = con.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    if row is None or row[0] != LEDGER_FORMAT:
        found = None if row is None else row[0]
        raise _fail(path, f"not a {LEDGER_FORMAT} ledger (format {found!r})")


def _initialise(con: sqlite3.Connection, path: str) -> None:
    """Create the tables of an empty file (inside the caller's write transaction)."""
    try:
        tables = {r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise _fail(path, f"not a quiltpriv ledger (not an SQLite database: {exc})") from None
    if not tables:
        for stmt in _SCHEMA:
            con.execute(stmt)
        con.execute("INSERT INTO meta (key, value) VALUES ('format', ?)", (LEDGER_FORMAT,))
        con.execute("INSERT INTO head (id, count, hash) VALUES (0, 0, ?)", (GENESIS,))
    _check_format(con, path)


# -- verification -----------------------------------------------------------------------------


def _parse_body(path: str, seq: int, body: Any) -> dict[str, Any]:
    if not isinstance(body, str):
        raise _fail(path, f"entry {seq}: its text is not a string")
    try:
        doc = json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise _fail(path, f"entry {seq}: its text is not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or set(doc) != {"seq", "prev", "record"}:
        raise _fail(path, f"entry {seq}: not a ledger entry (keys seq, prev, record)")
    if _canonical(doc) != body:
        raise _fail(path, f"entry {seq}: its text is not in canonical form (edited by hand?)")
    if not isinstance(doc["record"], dict) or doc["record"].get("format") != RELEASE_FORMAT:
        raise _fail(path, f"entry {seq}: its record is not a {RELEASE_FORMAT} record")
    return doc


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a finite number")


def _verified_entries(con: sqlite3.Connection, path: str,
                      expect_head: str | None = None) -> tuple[list[LedgerEntry], str]:
    """Every entry, verified in order, and the chain's head hash; raise at the first fault."""
    _check_format(con, path)
    heads = con.execute("SELECT count, hash FROM head").fetchall()
    if len(heads) != 1:
        raise _fail(path, f"the head table holds {len(heads)} rows, not 1")
    head_count, head_hash = heads[0]
    entries: list[LedgerEntry] = []
    prev = GENESIS
    expected_seen = expect_head is None
    for seq, prev_col, hash_col, body in con.execute(
            "SELECT seq, prev, hash, body FROM entries ORDER BY seq"):
        k = len(entries)
        if seq != k:
            raise _fail(path, f"entry {k} is missing (the next entry is numbered {seq}): "
                              "entries were deleted")
        doc = _parse_body(path, seq, body)
        if doc["seq"] != seq:
            raise _fail(path, f"entry {seq}: its text says it is entry {doc['seq']} "
                              "(entries were moved)")
        if doc["prev"] != prev or prev_col != prev:
            raise _fail(path, f"entry {seq}: it does not follow entry {seq - 1} (the hash "
                              "chain is broken: an earlier entry was changed, deleted or moved)")
        digest = _sha(body)
        if hash_col != digest:
            raise _fail(path, f"entry {seq}: its content does not match its hash (edited)")
        entries.append(LedgerEntry(seq=seq, prev=prev, hash=digest, record=doc["record"]))
        prev = digest
        if expect_head is not None and digest == expect_head:
            expected_seen = True
    if head_count != len(entries) or head_hash != prev:
        raise _fail(path, f"the ledger's head says {head_count} entries ending in "
                          f"{str(head_hash)[:16]}..., the chain holds {len(entries)} ending in "
                          f"{prev[:16]}...: entries were deleted or added outside quiltpriv")
    if not expected_seen:
        raise _fail(path, f"the expected head {expect_head} is not in the chain: the history "
                          "before it was rewritten")
    return entries, prev


def _check_hex(text: str | None, what: str) -> str | None:
    if text is None:
        return None
    t = str(text).strip().lower()
    if len(t) != 64 or any(c not in "0123456789abcdef" for c in t):
        raise LedgerError(f"{what} must be a SHA-256 (64 hexadecimal digits), got {text!r}")
    return t


def _ledger_path(path: object) -> str:
    """A ledger's file name as a str, or LedgerError."""
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise LedgerError(f"the ledger path must be a file name (str or path), got "
                          f"{type(path).__name__}")
    return os.fspath(path)


def read(path: str | os.PathLike[str], *, expect_head: str | None = None
         ) -> tuple[tuple[LedgerEntry, ...], LedgerHead]:
    """Every entry of a ledger, after verifying the whole chain and its head.

    Parameters
    ----------
    path : str or path
    expect_head : str, optional
        A head hash kept from an earlier :func:`verify`: it must still be in the chain.

    Raises
    ------
    LedgerError
        The file is missing or not a ledger, or verification fails (the first fault named).
    """
    p = _ledger_path(path)
    expect = _check_hex(expect_head, "expect_head")
    con = _connect(p, create=False)
    try:
        try:
            con.execute("BEGIN")  # one consistent snapshot while reading
            entries, head = _verified_entries(con, p, expect)
        except sqlite3.DatabaseError as exc:
            raise _fail(p, f"cannot read it ({exc})") from None
        finally:
            if con.in_transaction:
                con.execute("ROLLBACK")
    finally:
        con.close()
    return tuple(entries), LedgerHead(path=p, count=len(entries), hash=head)


def verify(path: str | os.PathLike[str], *, expect_head: str | None = None,
           expect_count: int | None = None) -> LedgerHead:
    """Verify a ledger's hash chain and head; return where the chain ends.

    Parameters
    ----------
    path : str or path
    expect_head : str, optional
        A head kept from an earlier verification: it must still be in the chain.
    expect_count : int, optional
        The number of entries there must be at least.

    Raises
    ------
    LedgerError
        Naming the first fault (an edited, deleted, moved or added entry, a head that does not
        match, a missing expected head).
    """
    entries, head = read(path, expect_head=expect_head)
    if expect_count is not None and head.count < expect_count:
        raise _fail(head.path, f"{head.count} entries, fewer than the {expect_count} expected: "
                               "entries were deleted")
    return head


def check_writable(path: str | os.PathLike[str]) -> tuple[LedgerEntry, ...]:
    """Refuse, before any work, a ledger path that cannot be appended to; return its entries.

    An existing file must be a verified, writable ledger (its verified entries are returned);
    a new one needs an existing, writable folder (no entries).
    """
    p = _ledger_path(path)
    if not p:
        raise LedgerError("the ledger path is empty")
    if Path(p).exists():
        entries, _ = read(p)
        if not os.access(p, os.W_OK):
            raise _fail(p, "the file is not writable")
        return entries
    folder = Path(p).resolve().parent
    if not folder.is_dir():
        raise _fail(p, f"folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _fail(p, f"folder {folder} is not writable")
    return ()


def append(path: str | os.PathLike[str], record: Mapping[str, Any]) -> LedgerEntry:
    """Append one release record; create the ledger if the file does not exist.

    The whole chain is verified first, inside the write transaction (a broken ledger is never
    extended), then the entry and the new head are written in the same transaction.
    Concurrent appenders wait for each other (up to :data:`BUSY_TIMEOUT` seconds).

    Raises
    ------
    LedgerError
        The ledger cannot be opened or written, or fails verification.
    """
    p = _ledger_path(path)
    if not isinstance(record, Mapping) or record.get("format") != RELEASE_FORMAT:
        raise LedgerError(f"only {RELEASE_FORMAT} records go into a ledger")
    con = _connect(p, create=True)
    try:
        try:
            try:
                con.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                if "not a database" not in str(exc):
                    raise
                raise _fail(p, f"not a quiltpriv ledger (not an SQLite database: {exc})"
                            ) from None
            _initialise(con, p)
            entries, prev = _verified_entries(con, p)
            seq = len(entries)
            body = _canonical({"seq": seq, "prev": prev, "record": dict(record)})
            digest = _sha(body)
            con.execute("INSERT INTO entries (seq, prev, hash, body) VALUES (?, ?, ?, ?)",
                        (seq, prev, digest, body))
            con.execute("UPDATE head SET count = ?, hash = ? WHERE id = 0", (seq + 1, digest))
            con.execute("COMMIT")
        except sqlite3.Error as exc:
            raise _fail(p, f"cannot write it ({exc})") from None
        except ValueError as exc:  # a record that has no canonical JSON form
            raise _fail(p, f"the record cannot be written ({exc})") from None
        finally:
            if con.in_transaction:
                con.execute("ROLLBACK")
    finally:
        con.close()
    return LedgerEntry(seq=seq, prev=prev, hash=digest, record=json.loads(body)["record"])


def repeats(entries: Iterable[LedgerEntry], data_sha: str, query_fp: str, model_fp: str
            ) -> list[str]:
    """Entries on the same data columns with the same query or the same model (descriptions)."""
    out = []
    if isinstance(entries, str) or not isinstance(entries, Iterable):
        raise LedgerError(f"entries must be a list of ledger entries, got "
                          f"{type(entries).__name__}")
    for e in entries:
        if not isinstance(e, LedgerEntry):
            raise LedgerError(f"entries must be ledger entries (read()), got {type(e).__name__}")
        r = e.record
        data = r.get("data") or {}
        if data.get("sha256") != data_sha:
            continue
        same_query = (r.get("query") or {}).get("fingerprint") == query_fp
        same_model = (r.get("model") or {}).get("fingerprint") == model_fp
        if same_query or same_model:
            what = "same query" if same_query else "same model"
            out.append(f"ledger entry {e.seq} at {r.get('timestamp', '?')}, {what}")
    return out


# -- composition ------------------------------------------------------------------------------

#: Composition results quiltpriv checks, by citation key.
THEOREMS: Mapping[str, str] = {
    "shared-quilt": (
        "the releases together are one APMQM release of the stacked query (F_1/b_1, ..., "
        "F_K/b_K) with unit Laplace noise per coordinate, so Theorem 4 of Zhang, Ohrimenko "
        "and Cummings (L1 sensitivity of a vector query), applied with the quilt every release "
        "used for the attribute, bounds the joint loss by e(Q|i) + sum_k Delta_{A_k & N} F_k / "
        "b_k: the quilt's influence is paid once, as in Song and Chaudhuri's composition of the "
        "Markov Quilt Mechanism (2017); proof in docs/ledger.md"),
}

#: Assumed, not checked (it is the assumption of every single release too).
_ASSUMED = ("the data of every release are records of the one population the model describes "
            "(the same dataset, or records drawn from the same hyperparameters)")


@dataclass(frozen=True)
class _Facts:
    """What composition needs from one release record, parsed and checked."""

    label: str
    epsilon: float
    scale: float
    model: str
    source: str
    seed: int | None
    data_sha: str | None
    sensitive: Mapping[str, tuple[tuple[str, ...], tuple[str, ...], float, float]]


@dataclass(frozen=True)
class AttributeComposition:
    """What the releases together guarantee for secrets about one sensitive attribute.

    Attributes
    ----------
    node : str
    epsilon : float or None
        The composed guarantee, or None when no composition result applies.
    quilt, nearby : tuple of str or None
        The Markov quilt every release used for ``node`` (when shared).
    influence : float or None
        ``e(Q | node)``, the largest any release recorded for that quilt.
    terms : tuple of float
        ``Delta_{A_k & N} F_k / b_k`` per release (when composed).
    reason : str
        Why the result applies, or why none does, in plain words.
    """

    node: str
    epsilon: float | None
    quilt: tuple[str, ...] | None
    nearby: tuple[str, ...] | None
    influence: float | None
    terms: tuple[float, ...]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "epsilon": self.epsilon,
                "quilt": None if self.quilt is None else list(self.quilt),
                "nearby": None if self.nearby is None else list(self.nearby),
                "influence": self.influence, "terms": list(self.terms), "reason": self.reason}


@dataclass(frozen=True)
class Composition:
    """What a sequence of releases guarantees together, when a checked result says so.

    Attributes
    ----------
    releases : tuple of str
        The releases considered (ledger entry numbers, or positions).
    epsilon : float or None
        The joint guarantee for secrets about every attribute any release protects; None when
        no composition result covers the whole sequence (see ``reasons``).
    theorem : str or None
        The citation key of the result used (:data:`THEOREMS`).
    citation : str or None
        The result, in words.
    conditions : tuple of str
        The conditions the code checked, each met (when ``epsilon`` is given).
    assumptions : tuple of str
        What is assumed, not checked.
    problems : tuple of str
        Why no result applies to the sequence as a whole (different models, noise that is not
        independent); the reasons about single attributes are in ``attributes``.
    attributes : tuple of AttributeComposition
        Per sensitive attribute.
    alone : tuple of tuple
        Per release: (label, epsilon, sensitive attributes): what it guarantees alone.
    """

    releases: tuple[str, ...]
    epsilon: float | None
    theorem: str | None
    citation: str | None
    conditions: tuple[str, ...]
    assumptions: tuple[str, ...]
    problems: tuple[str, ...]
    attributes: tuple[AttributeComposition, ...]
    alone: tuple[tuple[str, float, tuple[str, ...]], ...] = field(default=())

    @property
    def composed(self) -> bool:
        return self.epsilon is not None

    @property
    def reasons(self) -> tuple[str, ...]:
        """Every reason no result applies: the sequence's, then each attribute's."""
        return self.problems + tuple(f"for {a.node!r}: {a.reason}" for a in self.attributes
                                     if a.epsilon is None)

    def to_dict(self) -> dict[str, Any]:
        return {"releases": list(self.releases), "epsilon": self.epsilon,
                "theorem": self.theorem, "citation": self.citation,
                "conditions": list(self.conditions), "assumptions": list(self.assumptions),
                "reasons": list(self.reasons),
                "attributes": [a.to_dict() for a in self.attributes],
                "alone": [{"release": lab, "epsilon": e, "sensitive": list(s)}
                          for lab, e, s in self.alone]}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        n = len(self.releases)
        lines = [f"releases {', '.join(self.releases)} ({n} release{'s' if n != 1 else ''}):"]
        if self.composed:
            lines.append(f"  together: epsilon = {_num(self.epsilon)} for secrets about "
                         f"{_names(a.node for a in self.attributes)}, by [{self.theorem}]")
            lines += _wrap(f"[{self.theorem}] {self.citation}")
            for c in self.conditions:
                lines += _wrap(f"checked: {c}")
            for c in self.assumptions:
                lines += _wrap(f"assumed: {c}")
        else:
            lines.append("  together: NO composition result applies, so quiltpriv states no "
                         "joint guarantee (summing the epsilons would not be one):")
            for r in self.problems:
                lines += _wrap(f"- {r}")
        for a in self.attributes:
            if a.epsilon is not None:
                terms = " + ".join(_num(t) for t in a.terms)
                lines.append(f"  {a.node}: quilt {_names(a.quilt or ())}, e = "
                             f"{_num(a.influence)}; {_num(a.influence)} + {terms} = "
                             f"{_num(a.epsilon)}")
            else:
                lines += _wrap(f"{a.node}: no joint guarantee: {a.reason}")
        alone = "; ".join(f"{lab}: epsilon {_num(e)} for {_names(s)}"
                          for lab, e, s in self.alone)
        lines += _wrap(f"each alone: {alone}")
        return "\n".join(lines)


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=96, initial_indent="  ", subsequent_indent="    ",
                         break_on_hyphens=False)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _names(xs: Iterable[str]) -> str:
    return "{" + ", ".join(xs) + "}"


def _record_of(item: Any) -> tuple[str | None, Mapping[str, Any]]:
    if isinstance(item, LedgerEntry):
        return f"#{item.seq}", item.record
    to_dict = getattr(item, "to_dict", None)
    if callable(to_dict) and not isinstance(item, Mapping):
        return None, to_dict()
    if isinstance(item, Mapping):
        if set(item) == {"seq", "prev", "hash", "record"}:
            return f"#{item['seq']}", item["record"]
        return None, item
    raise LedgerError(f"composition: expected ledger entries or release records, got "
                      f"{type(item).__name__}")


def _number(x: Any, what: str, *, positive: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) \
            or x < 0 or (positive and x == 0):
        raise LedgerError(f"{what} is not a finite number {'> 0' if positive else '>= 0'}: "
                          f"{x!r}")
    return float(x)


def _names_list(x: Any, what: str) -> tuple[str, ...]:
    if not isinstance(x, list) or not all(isinstance(v, str) for v in x):
        raise LedgerError(f"{what} is not a list of attribute names")
    return tuple(x)


def _facts(label: str, r: Mapping[str, Any]) -> _Facts:
    """Parse one record into what composition needs, refusing anything malformed."""
    where = f"composition: release {label}"
    if r.get("format") != RELEASE_FORMAT:
        raise LedgerError(f"{where}: not a {RELEASE_FORMAT} record")
    try:
        plan = r["plan"]
        g = r["guarantee"]
        noise = r["noise"]
        eps = _number(g["epsilon"], f"{where}: epsilon", positive=True)
        delta = _number(g["delta"], f"{where}: delta")
        scale = _number(plan["scale"], f"{where}: the plan's scale")
        sens = {}
        for node, sp in plan["sensitive"].items():
            sens[str(node)] = (
                _names_list(sp["quilt"], f"{where}: the quilt of {node!r}"),
                _names_list(sp["nearby"], f"{where}: the nearby set of {node!r}"),
                _number(sp["influence"], f"{where}: the influence of {node!r}"),
                _number(sp["sensitivity"], f"{where}: the sensitivity of {node!r}"),
            )
        seed = noise["seed"]
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise LedgerError(f"{where}: the seed {seed!r} is not an integer")
        model = r["model"]["fingerprint"]
        mech = r["mechanism"]
        source = noise["source"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise LedgerError(f"{where}: the record lacks {exc}") from None
    if mech != "APMQM" or plan.get("mechanism") != "APMQM":
        raise LedgerError(f"{where}: mechanism {mech!r}; composition knows APMQM releases only")
    if delta != 0:
        raise LedgerError(f"{where}: delta = {delta}; composition knows pure guarantees only")
    if source not in ("secure", "seeded", "none"):
        raise LedgerError(f"{where}: unknown noise source {source!r}")
    data = r.get("data") or {}
    return _Facts(label=label, epsilon=eps, scale=scale, model=str(model), source=source,
                  seed=seed, data_sha=data.get("sha256"), sensitive=sens)


def _ratio_up(num: float, den: float) -> Fraction:
    """``num / den`` exactly (``0 / 0`` is 0: a release without noise whose query reads no
    nearby column adds nothing)."""
    if num == 0:
        return Fraction(0)
    if den == 0:
        raise ZeroDivisionError
    return Fraction(num) / Fraction(den)


def _float_up(x: Fraction) -> float:
    """The least float >= ``x`` (a claimed epsilon is never rounded down)."""
    f = float(x)
    if Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def composition(entries: Iterable[Any]) -> Composition:
    """What a sequence of releases guarantees together, only where a checked result says so.

    Parameters
    ----------
    entries : iterable of LedgerEntry, Release or release record (dict)
        The releases, taken as releases about one population. From a ledger, pass verified
        entries (:func:`read`): the plans' recorded quilts, influences and sensitivities are
        trusted as verified when each release was made.

    Returns
    -------
    Composition
        ``epsilon`` is given only when the ``shared-quilt`` result (:data:`THEOREMS`) covers
        every attribute any release protects; its ``conditions`` list what was checked:

        1. every release is APMQM with Laplace noise and a pure guarantee (delta = 0);
        2. every release was planned against the same model (fingerprint);
        3. the noise is independent: no two seeded releases share a seed, and no seeded
           release drew from a ``random.Random`` stream whose seed is not recorded;
        4. per attribute: it is sensitive in every release, and every release used the same
           Markov quilt ``Q`` for it (same ``Q``, same nearby set ``N``).

        Then ``epsilon = max_i [e(Q_i|i) + sum_k Delta_{A_k & N_i} F_k / b_k]`` (``b_k`` the
        plan's Laplace scale), computed in exact rationals and rounded up. Otherwise
        ``epsilon`` is None and ``reasons`` say in plain words why; attributes the result does
        cover still get their own ``epsilon``.

    Raises
    ------
    LedgerError
        No releases, or a record that is malformed (the release named).
    """
    if isinstance(entries, str | Mapping) or not isinstance(entries, Iterable):
        raise LedgerError(f"composition: entries must be a list of releases, got "
                          f"{type(entries).__name__}")
    items = [_record_of(e) for e in entries]
    if not items:
        raise LedgerError("composition: no releases given")
    facts = [_facts(lab or f"[{k}]", r) for k, (lab, r) in enumerate(items)]
    labels = tuple(f.label for f in facts)
    alone = tuple((f.label, f.epsilon, tuple(f.sensitive)) for f in facts)
    reasons: list[str] = []
    conditions = ["every release is APMQM with Laplace noise and a pure guarantee (delta = 0)"]
    models = sorted({f.model for f in facts})
    if len(models) > 1:
        reasons.append(f"the releases were planned against {len(models)} different models "
                       f"(fingerprints {', '.join(m[:12] + '...' for m in models)}): no "
                       "result relates guarantees under different models")
    else:
        conditions.append(f"every release was planned against the same model (fingerprint "
                          f"{models[0][:16]}...)")
    seeds: dict[int, str] = {}
    noise_ok = True
    for f in facts:
        if f.source != "seeded":
            continue
        if f.seed is None:
            noise_ok = False
            reasons.append(f"release {f.label} drew seeded noise from a random.Random stream "
                           "whose seed is not recorded: the independence of the releases' "
                           "noise cannot be checked")
        elif f.seed in seeds:
            noise_ok = False
            reasons.append(f"releases {seeds[f.seed]} and {f.label} used the same seed "
                           f"{f.seed}: their noise is not independent (one draw, twice)")
        else:
            seeds[f.seed] = f.label
    if noise_ok:
        conditions.append("the releases' noise is independent (secure noise, no noise, or "
                          "seeded with distinct recorded seeds)")
    union = list(dict.fromkeys(n for f in facts for n in f.sensitive))
    attrs = [_attribute(node, facts, can_compose=not reasons) for node in union]
    if reasons or any(a.epsilon is None for a in attrs):
        return Composition(releases=labels, epsilon=None, theorem=None, citation=None,
                           conditions=(), assumptions=(), problems=tuple(reasons),
                           attributes=tuple(attrs), alone=alone)
    conditions.append("every attribute any release protects is sensitive in every release, "
                      "with the same Markov quilt (Q and N) in every release")
    assumed = [_ASSUMED]
    seeded = [f.label for f in facts if f.source == "seeded"]
    if seeded:
        assumed.append(f"the seeds of the seeded releases ({', '.join(seeded)}) are secret, as "
                       "their own guarantees assume: seeded noise is for experiments, and a "
                       "record holding its seed reveals the noise")
    total = max(a.epsilon for a in attrs)  # type: ignore[type-var]
    return Composition(releases=labels, epsilon=total, theorem="shared-quilt",
                       citation=THEOREMS["shared-quilt"], conditions=tuple(conditions),
                       assumptions=tuple(assumed), problems=(), attributes=tuple(attrs),
                       alone=alone)


def _attribute(node: str, facts: Sequence[_Facts], *, can_compose: bool) -> AttributeComposition:
    """The shared-quilt bound for ``node``, or why it does not apply."""
    def refused(reason: str) -> AttributeComposition:
        return AttributeComposition(node=node, epsilon=None, quilt=None, nearby=None,
                                    influence=None, terms=(), reason=reason)

    missing = [f.label for f in facts if node not in f.sensitive]
    if missing:
        return refused(f"release{'s' if len(missing) > 1 else ''} {', '.join(missing)} did "
                       f"not protect {node!r}, so nothing bounds what they reveal about it")
    quilts = {(f.sensitive[node][0], f.sensitive[node][1]) for f in facts}
    if len(quilts) > 1:
        shown = "; ".join(f"{f.label}: Q = {_names(f.sensitive[node][0])}" for f in facts)
        return refused(f"the releases used different Markov quilts for {node!r} ({shown}); "
                       "no checked result composes releases through different quilts (two "
                       "releases each private alone can together reveal the secret)")
    if not can_compose:
        return refused("the conditions on the whole sequence are not met")
    ((quilt, nearby),) = quilts
    influence = max(f.sensitive[node][2] for f in facts)
    terms = []
    try:
        for f in facts:
            terms.append(_ratio_up(f.sensitive[node][3], f.scale))
    except ZeroDivisionError:
        return refused("a release without noise reads a nearby column (its record is "
                       "inconsistent)")
    total = Fraction(influence) + sum(terms, Fraction(0))
    return AttributeComposition(
        node=node, epsilon=_float_up(total), quilt=quilt, nearby=nearby, influence=influence,
        terms=tuple(_float_up(t) for t in terms),
        reason="shared-quilt: every release used this quilt for it")


def compositions_by_model(entries: Sequence[LedgerEntry]) -> list[Composition | LedgerError]:
    """:func:`composition` of the ledger's entries, one sequence per model (in order of first
    appearance); a sequence whose records composition cannot read gives its error instead."""
    groups: dict[str, list[LedgerEntry]] = {}
    for e in entries:
        model = e.record.get("model")
        fp = model.get("fingerprint") if isinstance(model, Mapping) else None
        groups.setdefault(str(fp), []).append(e)
    out: list[Composition | LedgerError] = []
    for g in groups.values():
        try:
            out.append(composition(g))
        except LedgerError as exc:
            out.append(exc)
    return out


# -- display ----------------------------------------------------------------------------------


def _query_text(q: Mapping[str, Any]) -> str:
    kind = q.get("kind", "query")
    if q.get("where"):
        text = f"{kind} where {q['where']}"
    elif kind == "linear" and isinstance(q.get("weights"), Mapping):
        text = "linear " + " + ".join(f"{_num(w)}*mean({a})" for a, w in q["weights"].items())
    else:
        attrs = q.get("attributes") or ([q["attribute"]] if "attribute" in q else
                                        list(q.get("weights", {})))
        text = f"{kind} of {', '.join(map(str, attrs))}"
    return text if len(text) <= 48 else text[:45] + "..."


def _value_text(v: Any) -> str:
    if isinstance(v, list):
        inner = ", ".join(_value_text(x) for x in v[:3])
        return f"[{inner}{', ...' if len(v) > 3 else ''}]"
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def table(entries: Sequence[LedgerEntry]) -> str:
    """The entries as a text table, one row per release."""
    from quiltpriv.mechanisms.apmqm import _table

    header = ("#", "time (UTC)", "query", "sensitive", "epsilon", "scale", "value", "noise",
              "data sha256", "rows")
    rows = []
    for e in entries:
        r = e.record
        g, data, noise = r.get("guarantee", {}), r.get("data") or {}, r.get("noise", {})
        src = noise.get("source", "?")
        if src == "seeded":
            src = f"seeded ({noise.get('seed')})" if noise.get("seed") is not None else \
                "seeded (stream)"
        rows.append((str(e.seq), str(r.get("timestamp", "?"))[:19].replace("T", " "),
                     _query_text((r.get("query") or {}).get("definition", {})),
                     ",".join(g.get("sensitive", [])), _num(g.get("epsilon")),
                     _num((r.get("calibration") or {}).get("scale")),
                     _value_text(r.get("value")), src,
                     str(data.get("sha256", "-"))[:12], str(data.get("rows", "-"))))
    return "\n".join(_table(header, rows))


# -- command line -----------------------------------------------------------------------------


def _cmd_ledger(args: argparse.Namespace) -> int:
    if args.action == "verify":
        if args.json:
            raise LedgerError("--json applies to 'ledger show'")
        head = verify(args.path, expect_head=args.expect_head, expect_count=args.expect_count)
        print(head.explain())
        return 0
    entries, head = read(args.path, expect_head=args.expect_head)
    if args.expect_count is not None and head.count < args.expect_count:
        raise _fail(head.path, f"{head.count} entries, fewer than the {args.expect_count} "
                               "expected: entries were deleted")
    comps = compositions_by_model(entries)
    if args.json:
        print(json.dumps({"format": LEDGER_FORMAT, "head": head.to_dict(),
                          "entries": [e.to_dict() for e in entries],
                          "compositions": [c.to_dict() if isinstance(c, Composition)
                                           else {"error": str(c)} for c in comps]},
                         allow_nan=False, indent=2))
        return 0
    print(table(entries))
    print()
    print(head.explain())
    for c in comps:
        print()
        print(c.explain() if isinstance(c, Composition) else f"no composition: {c}")
    return 0


def _count(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--expect-count must be a whole number, got "
                                         f"{text!r}") from None
    if k < 0:
        raise argparse.ArgumentTypeError(f"--expect-count must be >= 0, got {k}")
    return k


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv ledger show|verify PATH``."""
    p = sub.add_parser(
        "ledger", help="show or verify a privacy ledger",
        description="Show a privacy ledger (written by 'quiltpriv release --ledger PATH') as a "
                    "table with what its releases guarantee together (only where a checked "
                    "composition result applies), or verify its hash chain: exit status 0 "
                    "when intact, 2 with the first fault otherwise.")
    p.add_argument("action", choices=("show", "verify"), help="show the entries, or verify")
    p.add_argument("path", metavar="PATH", help="the ledger file (SQLite)")
    p.add_argument("--expect-head", metavar="SHA256",
                   help="a head printed by an earlier 'ledger verify': it must still be in the "
                        "chain (detects a history rewritten as a whole)")
    p.add_argument("--expect-count", type=_count,
                   metavar="N", help="at least N entries must be there")
    p.add_argument("--json", action="store_true",
                   help="show: print the entries, head and compositions as one JSON object")
    p.set_defaults(func=_cmd_ledger)
