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

Composition: what releases guarantee together, only where a published theorem says so, is
:mod:`quiltpriv.releases.composition` (re-exported here); ``docs/ledger.md`` quotes the
theorems.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quiltpriv.errors import LedgerError, QuiltPrivError
from quiltpriv.releases.composition import (
    THEOREMS,
    Composition,
    composition,
)
from quiltpriv.releases.records import READABLE_FORMATS
from quiltpriv.utils.format import fmt_number
from quiltpriv.utils.serialize import canonical_json, load_json

__all__ = [
    "GENESIS",
    "LEDGER_FORMAT",
    "THEOREMS",
    "Composition",
    "LedgerEntry",
    "LedgerHead",
    "append",
    "booking",
    "composition",
    "read",
    "repeats",
    "verify",
]

#: The ledger's format, stored in its ``meta`` table; any other value is refused.
LEDGER_FORMAT = "quiltpriv-ledger/1"

#: The record formats a ledger holds, in words.
_FORMATS = " or ".join(READABLE_FORMATS)

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


_canonical = canonical_json


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _fail(path: str, why: str) -> LedgerError:
    return LedgerError(f"ledger {path}: {why}")


# -- opening ----------------------------------------------------------------------------------


def _create(path: str) -> None:
    """Create a new, initialised ledger at ``path`` atomically, unless a file is there.

    The tables are written to a private file in the same folder, which is then hard-linked to
    ``path`` (``os.link`` fails if ``path`` exists: a concurrent creator won, and its ledger is
    used). So ``path`` never exists without its tables: a process checking the ledger while
    another creates it (``check_writable`` before a release) sees either no file or a ledger,
    never an empty database that it would have to call "not a ledger".
    """
    p = Path(path)
    folder = p.resolve().parent
    if not folder.is_dir():
        raise _fail(path, f"folder {folder} does not exist")
    try:
        fd, name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".new", dir=folder)
    except OSError as exc:
        raise _fail(path, f"cannot create it ({exc.strerror or exc})") from None
    os.close(fd)
    tmp = Path(name)
    try:
        con = sqlite3.connect(os.fspath(tmp), isolation_level=None)
        try:
            con.execute("BEGIN IMMEDIATE")
            _initialise(con, path)
            con.execute("COMMIT")
        finally:
            con.close()
        try:
            os.link(tmp, p)
        except FileExistsError:
            pass  # another process created it first: use theirs
    except OSError as exc:
        raise _fail(path, f"cannot create it ({exc.strerror or exc})") from None
    except sqlite3.Error as exc:
        raise _fail(path, f"cannot create it ({exc})") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _connect(path: str, *, create: bool) -> sqlite3.Connection:
    """An autocommit connection (transactions are explicit), read-only unless ``create``
    (then a missing ledger is created first, atomically: :func:`_create`)."""
    p = Path(path)
    if p.is_dir():
        raise _fail(path, "is a folder, not a ledger file")
    if create and not p.exists():
        _create(path)
    if not p.exists():
        raise _fail(path, "no such file")
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
        doc = load_json(body, f"entry {seq}")
    except QuiltPrivError as exc:
        raise _fail(path, f"{exc}") from None
    if not isinstance(doc, dict) or set(doc) != {"seq", "prev", "record"}:
        raise _fail(path, f"entry {seq}: not a ledger entry (keys seq, prev, record)")
    if _canonical(doc) != body:
        raise _fail(path, f"entry {seq}: its text is not in canonical form (edited by hand?)")
    if not isinstance(doc["record"], dict) or \
            doc["record"].get("format") not in READABLE_FORMATS:
        raise _fail(path, f"entry {seq}: its record is not a {_FORMATS} record")
    return doc


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


class Booking:
    """An open write transaction on a ledger, holding its write lock (:func:`booking`).

    ``entries`` are the verified entries before this release; call :meth:`append` once with
    the release's record. The entry is written when the ``with`` block ends without an
    exception.
    """

    def __init__(self, path: str, entries: Sequence[LedgerEntry], prev: str) -> None:
        self.path = path
        self.entries = tuple(entries)
        self.prev = prev
        self.record: dict[str, Any] | None = None
        self.entry: LedgerEntry | None = None

    def append(self, record: Mapping[str, Any]) -> None:
        """Stage ``record`` (written when the ``with`` block ends)."""
        if self.record is not None:
            raise LedgerError(f"ledger {self.path}: one release per booking")
        if not isinstance(record, Mapping) or record.get("format") not in READABLE_FORMATS:
            raise LedgerError(f"only {_FORMATS} records go into a ledger")
        self.record = dict(record)


def booking(path: str | os.PathLike[str], prospective: Mapping[str, Any] | None = None, *,
            budget: float | None = None, allow_unproved: bool = False
            ) -> contextlib.AbstractContextManager[Booking]:
    """Hold the ledger's write lock while a release is checked, drawn and appended.

    Inside one SQLite transaction (``BEGIN IMMEDIATE``: concurrent releases into the same
    ledger wait for each other, up to :data:`BUSY_TIMEOUT` seconds): the whole chain is
    verified (a broken ledger is never extended); with ``budget``, the release described by
    ``prospective`` (its record before the noise is drawn) is refused with
    :class:`~quiltpriv.errors.BudgetError` when the proved total on the same data would
    exceed ``budget``, or cannot be proved and ``allow_unproved`` is false
    (:func:`quiltpriv.releases.composition.budget_check`); then the ``with`` block draws and
    calls :meth:`Booking.append`, and the entry and the new head are written in the same
    transaction. The check and the append are one transaction, so two processes cannot both
    pass the check on the same history.

    An exception in the block, or no :meth:`Booking.append`, writes nothing.

    Raises
    ------
    LedgerError
        The ledger cannot be opened or written, or fails verification.
    BudgetError
        The budget refuses the release (nothing drawn, nothing written).
    """
    p = _ledger_path(path)
    if prospective is not None and not isinstance(prospective, Mapping):
        raise LedgerError(f"the release's record must be a mapping, got "
                          f"{type(prospective).__name__}")
    if budget is not None and prospective is None:
        raise LedgerError("a budget needs the release's record before drawing")
    return _booking(p, prospective, budget, bool(allow_unproved))


@contextlib.contextmanager
def _booking(p: str, prospective: Mapping[str, Any] | None, budget: float | None,
             allow_unproved: bool) -> Iterator[Booking]:
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
            if budget is not None:
                from quiltpriv.releases.composition import budget_check

                assert prospective is not None
                budget_check(entries, prospective, budget, allow_unproved=allow_unproved)
            book = Booking(p, entries, prev)
            yield book
            if book.record is not None:
                seq = len(entries)
                try:
                    body = _canonical({"seq": seq, "prev": prev, "record": book.record})
                except ValueError as exc:  # a record that has no canonical JSON form
                    raise _fail(p, f"the record cannot be written ({exc})") from None
                digest = _sha(body)
                con.execute("INSERT INTO entries (seq, prev, hash, body) VALUES (?, ?, ?, ?)",
                            (seq, prev, digest, body))
                con.execute("UPDATE head SET count = ?, hash = ? WHERE id = 0",
                            (seq + 1, digest))
                con.execute("COMMIT")
                book.entry = LedgerEntry(seq=seq, prev=prev, hash=digest,
                                         record=load_json(body, "the entry written")["record"])
        except sqlite3.Error as exc:
            raise _fail(p, f"cannot write it ({exc})") from None
        finally:
            if con.in_transaction:
                con.execute("ROLLBACK")
    finally:
        con.close()


def append(path: str | os.PathLike[str], record: Mapping[str, Any]) -> LedgerEntry:
    """Append one release record; create the ledger if the file does not exist.

    The whole chain is verified first, inside the write transaction (a broken ledger is never
    extended), then the entry and the new head are written in the same transaction
    (:func:`booking`). Concurrent appenders wait for each other (up to :data:`BUSY_TIMEOUT`
    seconds).

    Raises
    ------
    LedgerError
        The ledger cannot be opened or written, or fails verification.
    """
    p = _ledger_path(path)
    if not isinstance(record, Mapping) or record.get("format") not in READABLE_FORMATS:
        raise LedgerError(f"only {_FORMATS} records go into a ledger")
    with booking(p) as book:
        book.append(record)
    assert book.entry is not None
    return book.entry


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


# -- the steps every mechanism's release shares ----------------------------------------------


def ledger_entries(ledger: Any) -> tuple[Any, ...]:
    """The verified entries of ``ledger`` (None: no ledger, no entries), refusing before any
    work a ledger that cannot be appended to."""
    if ledger is None:
        return ()
    return check_writable(ledger)


def warn_repeats(booked: Sequence[Any], fingerprints: tuple[str, str, str], *,
                 stacklevel: int = 2) -> None:
    """Warn (:class:`~quiltpriv.errors.RepeatedReleaseWarning`) before drawing when the ledger's
    entries or this process's releases read the same data columns with the same query or
    model; the warning names the frame ``stacklevel`` (as :func:`warnings.warn` counts it from
    here)."""
    import warnings

    from quiltpriv.errors import RepeatedReleaseWarning
    from quiltpriv.releases.records import repeat_message, session_repeats

    earlier = repeats(booked, *fingerprints) if booked else []
    earlier = earlier or session_repeats(*fingerprints)
    if earlier:
        warnings.warn(repeat_message(earlier), RepeatedReleaseWarning, stacklevel=stacklevel)


def book(ledger: Any, prospective: Any, draw: Any, to_dict: Any, *,
         budget: float | None = None, allow_unproved: bool = False) -> Any:
    """Draw a release, through the ledger when one is given.

    Without a ledger: ``draw()``. With one, inside one write transaction
    (:func:`quiltpriv.releases.ledger.booking`): the budget's check on ``prospective()`` (the
    record before drawing), then ``draw()``, then the append of ``to_dict(release)``; the
    release is returned only after the entry is written.
    """
    if ledger is None:
        return draw()
    with booking(ledger, None if budget is None else prospective(), budget=budget,
                            allow_unproved=allow_unproved) as entry:
        release = draw()
        entry.append(to_dict(release))  # before the value leaves: no ledger entry, no release
    return release


# -- display ----------------------------------------------------------------------------------


def _query_text(q: Mapping[str, Any]) -> str:
    kind = q.get("kind", "query")
    if q.get("where"):
        text = f"{kind} where {q['where']}"
    elif kind == "linear" and isinstance(q.get("weights"), Mapping):
        text = "linear " + " + ".join(f"{fmt_number(w)}*mean({a})" for a, w in q["weights"].items())
    else:
        attrs = q.get("attributes") or ([q["attribute"]] if "attribute" in q else
                                        list(q.get("weights", {})))
        text = f"{kind} of {', '.join(map(str, attrs))}"
    return text if len(text) <= 48 else text[:45] + "..."


def _value_text(v: Any) -> str:
    if isinstance(v, list):
        inner = ", ".join(_value_text(x) for x in v[:3])
        return f"[{inner}{', ...' if len(v) > 3 else ''}]"
    return fmt_number(v) if isinstance(v, float) else str(v)


def table(entries: Sequence[LedgerEntry]) -> str:
    """The entries as a text table, one row per release."""
    from quiltpriv.utils.format import text_table

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
                     ",".join(g.get("sensitive", [])), fmt_number(g.get("epsilon")),
                     fmt_number((r.get("calibration") or {}).get("scale")),
                     _value_text(r.get("value")), src,
                     str(data.get("sha256", "-"))[:12], str(data.get("rows", "-"))))
    return "\n".join(text_table(header, rows))


def warning_lines(entries: Sequence[LedgerEntry]) -> list[str]:
    """One line per warning a record carries (``#k: warning: ...``): a release without noise,
    a Theta learned from private data. Records written before format 3 carry none, so a
    release without noise (noise source ``none``) is said from its noise source."""
    from quiltpriv.releases.records import ZERO_NOISE_MESSAGE

    out = []
    for e in entries:
        said = e.record.get("warnings")
        texts = [w for w in said if isinstance(w, str)] if isinstance(said, list) else []
        noise = e.record.get("noise")
        if not texts and isinstance(noise, Mapping) and noise.get("source") == "none" and \
                (e.record.get("guarantee") or {}).get("kind") != "differential privacy (group)":
            texts = [ZERO_NOISE_MESSAGE]
        out += [f"#{e.seq}: warning: {w}" for w in texts]
    return out
