"""Release records (schema, seeds, data hash, warnings) and the privacy ledger (hash chain,
tampering, concurrent writers, command line)."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import sqlite3
from datetime import datetime, timezone
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import schema_check

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.errors import (
    LedgerError,
    ParameterError,
    RepeatedReleaseWarning,
    SeededNoiseWarning,
)
from quiltpriv.releases import ledger, records

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "release-record.schema.json").read_text())


@pytest.fixture(autouse=True)
def _fresh_session():
    records.forget_releases()
    yield
    records.forget_releases()


def _frame(n=20, seed=1):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"height": rng.normal(66, 3, n).round(1),
                         "sat": rng.normal(1300, 80, n).round(),
                         "weight": rng.normal(150, 20, n).round()})


def _query(where="height > 66 and sat > 1300", n=20):
    attrs = [a for a in ("height", "sat") if a in where]
    return qp.CountQuery(attrs, n, where=where)


def _valid(record):
    errs = schema_check.errors(record, SCHEMA)
    assert not errs, errs
    try:
        import jsonschema
    except ImportError:  # not a dependency: the small validator above is the check
        return
    jsonschema.validate(record, SCHEMA)


# -- the record -------------------------------------------------------------------------------


def test_record_has_every_field_and_validates(student):
    q = _query()
    p = qp.plan(student, q, "income", 1.0)
    before = datetime.now(timezone.utc)
    r = qp.release(p, q, _frame())
    after = datetime.now(timezone.utc)
    d = r.to_dict()
    _valid(d)
    assert d["format"] == "quiltpriv-release/4" == records.RELEASE_FORMAT
    t = datetime.strptime(d["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    assert before <= t <= after
    assert d["quiltpriv_version"] == qp.__version__
    assert d["model"] == {"fingerprint": student.fingerprint(), "theta_size": 1,
                          "provenance": None}
    assert d["query"] == {"definition": q.to_dict(), "fingerprint": p.query_fingerprint}
    assert d["data"]["rows"] == 20 and d["data"]["columns"] == ["height", "sat"]
    assert d["guarantee"] == {"kind": "distributional attribute privacy", "epsilon": 1.0,
                              "delta": 0.0, "sensitive": ["income"],
                              "assumptions": list(p.guarantee.assumptions)}
    cal = d["calibration"]
    assert cal["scale"] == p.scale and cal["noise_scale_used"] == r.scale >= p.scale
    assert cal["binding"] == "income" and cal["binding_sensitivity"] == p["income"].sensitivity
    assert cal["sensitivity"] == p["income"].sensitivity and cal["noise"] == "laplace"
    assert cal["sampler_sensitivity"] == r.sensitivity and cal["why"].startswith("[ZOC22")
    assert d["details"] is None
    assert d["noise"] == {"source": "secure", "seed": None, "secure": True,
                          "sampler": r.sampler}
    assert d["command"] is None and d["plan"] == p.to_dict()
    assert json.loads(r.to_json()) == d


def test_no_noise_and_histogram_records_validate(student):
    q = qp.CountQuery(["height"], 20, where="height > 66")
    r = qp.release(qp.plan(student, q, "income", 1.0), q, _frame())
    d = r.to_dict()
    _valid(d)
    assert d["noise"]["source"] == "none" and d["calibration"]["scale"] == 0
    h = qp.HistogramQuery(["sat"], 20, categories={"sat": [1200.0, 1300.0]}, catch_all="other")
    frame = _frame().assign(sat=lambda f: np.where(f.sat > 1300, 1300.0, 1200.0))
    rh = qp.release(qp.plan(student, h, "income", 1.0), h, frame)
    dh = rh.to_dict()
    _valid(dh)
    assert len(dh["value"]) == len(dh["cells"]) == 3


def test_provenance_is_recorded_when_theta_carries_one(student):
    q = _query()
    p = qp.plan(student, q, "income", 1.0)
    theta = qp.load_model("student")
    theta.provenance = {"learned_from": {"sha256": "ab" * 32}, "bins": (1, 2)}
    d = qp.release(p, q, _frame(), theta=theta).to_dict()
    _valid(d)
    assert d["model"]["provenance"] == {"learned_from": {"sha256": "ab" * 32}, "bins": [1, 2]}


def test_provenance_comes_through_the_plan(student):
    theta = student.with_provenance({"source": "declared", "by": "a test", "bins": [1, 2]})
    q = _query()
    p = qp.plan(theta, q, "income", 1.0)
    d = qp.release(p, q, _frame()).to_dict()
    _valid(d)
    assert d["model"]["provenance"] == {"source": "declared", "by": "a test", "bins": [1, 2]}
    assert d["model"]["provenance"] == d["plan"]["provenance"]


def test_data_hash_covers_exactly_the_columns_read(student):
    df = _frame()
    base = records.query_data(df, ["sat", "height"])
    assert base == records.query_data(df[["weight", "sat", "height"]], ["height", "sat"])
    other = records.query_data(df.assign(weight=0.0), ["sat", "height"])
    # the columns' hash ignores a column not read; the whole table's hash does not
    assert {**other, "table_sha256": None} == {**base, "table_sha256": None}
    assert other["table_sha256"] != base["table_sha256"] == records.query_data(
        df, ["weight"])["table_sha256"]
    assert base["dataset"] is None
    assert records.query_data(df, ["sat"], dataset=" survey 2026 ")["dataset"] == "survey 2026"
    for bad in ("", "  ", "a\nb", "x" * 201, 3):
        with pytest.raises(ParameterError, match="dataset"):
            records.query_data(df, ["sat"], dataset=bad)
    changed = df.copy()
    changed.loc[3, "sat"] += 1
    assert records.query_data(changed, ["sat", "height"])["sha256"] != base["sha256"]
    assert records.query_data(df.iloc[:-1], ["sat", "height"])["rows"] == 19
    # the canonical CSV, written by hand: columns by name, 17 significant digits
    tiny = pd.DataFrame({"b": [0.1, 2.0], "a": [1, 7], "c": ["x", "y"]})
    text = "a,b\n1,0.10000000000000001\n7,2\n"
    assert records.query_data(tiny, ["b", "a"])["sha256"] == hashlib.sha256(
        text.encode()).hexdigest()
    whole = "a,b,c\n1,0.10000000000000001,x\n7,2,y\n"
    assert records.query_data(tiny, ["b", "a"])["table_sha256"] == hashlib.sha256(
        whole.encode()).hexdigest()


@pytest.mark.parametrize("seed", [3, np.int8(3), np.int16(3), np.int32(3), np.int64(3),
                                  np.uint8(3), np.uint16(3), np.uint32(3), np.uint64(3)])
def test_seeds_of_every_integer_type_are_recorded(student, seed):
    q = _query()
    p = qp.plan(student, q, "income", 1.0)
    with pytest.warns(SeededNoiseWarning, match="NOT secure"):
        r = qp.release(p, q, _frame(), seed=seed)
    d = r.to_dict()
    _valid(d)
    assert d["seed"] == 3 and type(d["seed"]) is int and d["noise"]["seed"] == 3
    assert d["noise"]["source"] == "seeded" and d["secure"] is False
    records.forget_releases()
    with pytest.warns(SeededNoiseWarning):
        assert qp.release(p, q, _frame(), seed=3).value == r.value  # the same generator


def test_big_and_stream_seeds(student):
    q = _query()
    p = qp.plan(student, q, "income", 1.0)
    with pytest.warns(SeededNoiseWarning):
        assert qp.release(p, q, _frame(), seed=2**70).to_dict()["seed"] == 2**70
    import random

    records.forget_releases()
    with pytest.warns(SeededNoiseWarning):
        d = qp.release(p, q, _frame(), seed=random.Random(4)).to_dict()
    assert d["noise"] == {**d["noise"], "source": "seeded", "seed": None}


@pytest.mark.parametrize("bad", [True, np.bool_(True), 3.0, np.float64(3), "3", Fraction(3),
                                 Decimal(3), [3]])
def test_non_integer_seeds_are_refused_before_the_data(student, bad):
    q = _query()
    p = qp.plan(student, q, "income", 1.0)
    with pytest.raises(ParameterError, match="seed"):
        qp.release(p, q, "not even a data frame", seed=bad)


def test_secure_release_does_not_warn_and_repeats_do(student, recwarn):
    q = _query()
    p = qp.plan(student, q, "income", 1.0)
    df = _frame()
    qp.release(p, q, df)
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]
    with pytest.warns(RepeatedReleaseWarning, match="same query"):
        qp.release(p, q, df)
    # another query on the same columns and the same model: still a repeat
    q2 = _query("height > 60 or sat < 1200")
    with pytest.warns(RepeatedReleaseWarning, match="same model"):
        qp.release(qp.plan(student, q2, "income", 2.0), q2, df)
    recwarn.clear()
    qp.release(p, q, _frame(seed=9))  # other data: not a repeat
    assert not [w for w in recwarn if issubclass(w.category, RepeatedReleaseWarning)]


# -- the ledger -------------------------------------------------------------------------------


def _rec(**extra):
    return {"format": records.RELEASE_FORMAT, **extra}


def _ledger(tmp_path, k=4):
    path = str(tmp_path / "l.db")
    for i in range(k):
        ledger.append(path, _rec(v=i))
    return path


def _sql(path, *statements):
    con = sqlite3.connect(path)
    con.execute("DROP TRIGGER IF EXISTS entries_append_only_update")
    con.execute("DROP TRIGGER IF EXISTS entries_append_only_delete")
    for s in statements:
        con.execute(*s) if isinstance(s, tuple) else con.execute(s)
    con.commit()
    con.close()


def _body(path, seq):
    con = sqlite3.connect(path)
    (b,) = con.execute("SELECT body FROM entries WHERE seq = ?", (seq,)).fetchone()
    con.close()
    return b


def test_append_chains_entries(tmp_path):
    path = _ledger(tmp_path)
    entries, head = ledger.read(path)
    assert [e.seq for e in entries] == [0, 1, 2, 3]
    assert [e.record["v"] for e in entries] == [0, 1, 2, 3]
    assert entries[0].prev == ledger.GENESIS
    for a, b in zip(entries, entries[1:], strict=False):
        assert b.prev == a.hash
    for e in entries:  # the hash is the SHA-256 of the canonical entry, recomputed here
        canon = json.dumps({"seq": e.seq, "prev": e.prev, "record": e.record},
                           sort_keys=True, separators=(",", ":"))
        assert hashlib.sha256(canon.encode()).hexdigest() == e.hash
    assert head.count == 4 and head.hash == entries[-1].hash
    assert ledger.verify(path, expect_head=entries[1].hash, expect_count=4) == head


def test_the_database_refuses_edits(tmp_path):
    path = _ledger(tmp_path, 2)
    con = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute("UPDATE entries SET body = 'x' WHERE seq = 0")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute("DELETE FROM entries WHERE seq = 1")
    con.close()
    ledger.verify(path)


def _edit_value(path):
    _sql(path, ("UPDATE entries SET body = ? WHERE seq = 1",
                (_body(path, 1).replace('"v":1', '"v":9'),)))


def _edit_and_rehash(path):
    body = _body(path, 1).replace('"v":1', '"v":9')
    _sql(path, ("UPDATE entries SET body = ?, hash = ? WHERE seq = 1",
                (body, hashlib.sha256(body.encode()).hexdigest())))


def _delete_middle(path):
    _sql(path, "DELETE FROM entries WHERE seq = 1")


def _delete_last(path):
    _sql(path, "DELETE FROM entries WHERE seq = 3")


def _reorder(path):
    con = sqlite3.connect(path)
    rows = {s: (p, h, b) for s, p, h, b in con.execute("SELECT seq, prev, hash, body FROM entries")}
    con.close()
    _sql(path, ("UPDATE entries SET prev = ?, hash = ?, body = ? WHERE seq = 1", rows[2]),
         ("UPDATE entries SET prev = ?, hash = ?, body = ? WHERE seq = 2", rows[1]))


def _reformat(path):
    body = json.dumps(json.loads(_body(path, 2)), indent=1, sort_keys=True)
    _sql(path, ("UPDATE entries SET body = ? WHERE seq = 2", (body,)))


def _append_by_hand(path):
    # a well-formed fifth entry, chained and hashed, but not through quiltpriv (head unchanged)
    prev = hashlib.sha256(_body(path, 3).encode()).hexdigest()
    body = json.dumps({"seq": 4, "prev": prev, "record": _rec(v=9)}, sort_keys=True,
                      separators=(",", ":"))
    _sql(path, ("INSERT INTO entries (seq, prev, hash, body) VALUES (4, ?, ?, ?)",
                (prev, hashlib.sha256(body.encode()).hexdigest(), body)))


def _edit_head(path):
    _sql(path, "UPDATE head SET count = 9")


@pytest.mark.parametrize("tamper, why", [
    (_edit_value, "entry 1: its content does not match its hash"),
    (_edit_and_rehash, "entry 2: it does not follow entry 1"),
    (_delete_middle, "entry 1 is missing"),
    (_delete_last, "head says 4 entries"),
    (_reorder, "entry 1: its text says it is entry 2"),
    (_reformat, "entry 2: its text is not in canonical form"),
    (_append_by_hand, "head says 4 entries .* the chain holds 5"),
    (_edit_head, "head says 9 entries"),
])
def test_tampering_is_detected(tmp_path, capsys, tamper, why):
    path = _ledger(tmp_path)
    tamper(path)
    with pytest.raises(LedgerError, match=why):
        ledger.verify(path)
    with pytest.raises(LedgerError, match=why):
        ledger.append(path, _rec(v=5))  # a broken ledger is never extended
    assert main(["ledger", "verify", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"quiltpriv: error: ledger {path}: ") and err.count("\n") == 1


def test_a_rewritten_tail_is_caught_by_a_kept_head(tmp_path, capsys):
    path = _ledger(tmp_path)
    kept = ledger.verify(path)
    # delete the last entry and fix the head: the file alone is consistent again ...
    _sql(path, "DELETE FROM entries WHERE seq = 3",
         ("UPDATE head SET count = 3, hash = (SELECT hash FROM entries WHERE seq = 2)",))
    assert ledger.verify(path).count == 3
    # ... but not with the head and count kept from before
    with pytest.raises(LedgerError, match="expected head"):
        ledger.verify(path, expect_head=kept.hash)
    with pytest.raises(LedgerError, match="fewer than the 4 expected"):
        ledger.verify(path, expect_count=4)
    assert main(["ledger", "verify", path, "--expect-head", kept.hash]) == 2
    assert "history" in capsys.readouterr().err
    with pytest.raises(LedgerError, match="64 hexadecimal"):
        ledger.verify(path, expect_head="abc")


def test_not_a_ledger(tmp_path, capsys):
    other = tmp_path / "x.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(LedgerError, match="not an SQLite database"):
        ledger.verify(other)
    with pytest.raises(LedgerError, match="not an SQLite database"):
        ledger.append(other, _rec())
    assert other.read_text() == "a,b\n1,2\n"
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="tables are missing"):
        ledger.append(db, _rec())
    with pytest.raises(LedgerError, match="no such file"):
        ledger.verify(tmp_path / "missing.db")
    with pytest.raises(LedgerError, match="folder"):
        ledger.verify(tmp_path)
    with pytest.raises(LedgerError, match="does not exist"):
        ledger.append(tmp_path / "nope" / "l.db", _rec())
    with pytest.raises(LedgerError, match="records go into"):
        ledger.append(tmp_path / "l.db", {"v": 1})
    assert main(["ledger", "show", str(tmp_path / "missing.db")]) == 2
    assert "no such file" in capsys.readouterr().err


def _writer(path, worker, count, barrier):
    barrier.wait()
    for k in range(count):
        ledger.append(path, _rec(worker=worker, k=k))


def test_concurrent_appends_are_all_kept(tmp_path):
    path = str(tmp_path / "l.db")
    ledger.append(path, _rec(worker=-1, k=0))
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    workers, count = 4, 12
    barrier = ctx.Barrier(workers)
    procs = [ctx.Process(target=_writer, args=(path, w, count, barrier))
             for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * workers
    entries, head = ledger.read(path)
    assert head.count == 1 + workers * count
    seen = [(e.record["worker"], e.record["k"]) for e in entries[1:]]
    assert sorted(seen) == [(w, k) for w in range(workers) for k in range(count)]
    for w in range(workers):  # each writer's entries are in its own order
        assert [k for v, k in seen if v == w] == list(range(count))


# -- release with a ledger --------------------------------------------------------------------


def test_release_writes_its_record_before_returning(student, tmp_path, monkeypatch):
    path = tmp_path / "l.db"
    q = _query()
    p = qp.plan(student, q, "income", 1.0)
    r = qp.release(p, q, _frame(), ledger=path)
    entries, _ = ledger.read(path)
    assert len(entries) == 1 and entries[0].record == r.to_dict()
    with pytest.warns(RepeatedReleaseWarning, match="ledger entry 0"):
        records.forget_releases()  # the ledger alone knows the first release
        qp.release(p, q, _frame(), ledger=path)

    def broken(*args, **kwargs):
        raise LedgerError("ledger: disk full")

    # the append fails after the noise is drawn: the value must not come out
    monkeypatch.setattr(ledger.Booking, "append", broken)
    with pytest.raises(LedgerError, match="disk full"), pytest.warns(RepeatedReleaseWarning):
        qp.release(p, q, _frame(), ledger=path)
    monkeypatch.undo()
    assert ledger.verify(path).count == 2


def test_release_refuses_a_bad_ledger_before_reading_data(student, tmp_path):
    path = _ledger(tmp_path)
    _delete_last(path)
    q = _query()
    p = qp.plan(student, q, "income", 1.0)
    with pytest.raises(LedgerError, match="head says"):
        qp.release(p, q, "not a frame", ledger=path)
    with pytest.raises(LedgerError, match="folder"):
        qp.release(p, q, _frame(), ledger=tmp_path / "nope" / "l.db")


def _cli_release(csv, path, *extra, where="height > 66 and sat > 1300", eps="1"):
    attrs = ",".join(a for a in ("height", "sat") if a in where)
    return main(["release", "student", "--sensitive", "income", "--attributes", attrs,
                 "--records", "20", "--epsilon", eps, "--where", where, "--data", str(csv),
                 "--ledger", str(path), "--json", *extra])


def test_cli_session_with_a_ledger(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    _frame().to_csv(csv, index=False)
    path = tmp_path / "l.db"
    assert _cli_release(csv, path) == 0
    first = capsys.readouterr()
    rec = json.loads(first.out)
    _valid(rec)
    assert first.err == ""
    assert rec["command"][:2] == ["quiltpriv", "release"] and str(csv) in rec["command"]
    records.forget_releases()
    assert _cli_release(csv, path, "--seed", "5", where="height > 60 or sat < 1200",
                        eps="0.5") == 0
    second = capsys.readouterr()
    lines = second.err.splitlines()
    assert len(lines) == 2 and all(x.startswith("quiltpriv: warning: ") for x in lines)
    assert "same data" in lines[0] and "ledger entry 0" in lines[0] and "NOT secure" in lines[1]
    assert main(["ledger", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "count where height > 66 and sat > 1300" in out and "seeded (5)" in out
    assert "hash chain intact" in out and "together: NO joint guarantee" in out
    assert "no published composition result applies" in out and "together: epsilon" not in out
    assert "#0: epsilon 1 for {income}; #1: epsilon 0.5 for {income}" in out
    assert main(["ledger", "show", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (comp,) = doc["compositions"]
    assert len(doc["entries"]) == 2 and comp["epsilon"] is None and comp["theorem"] is None
    assert [a["epsilon"] for a in comp["alone"]] == [1.0, 0.5]
    for e in doc["entries"]:
        _valid(e["record"])
    assert main(["ledger", "verify", str(path)]) == 0
    assert "2 entries, hash chain intact" in capsys.readouterr().out


def test_cli_release_refuses_a_bad_ledger_first(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    _frame().to_csv(csv, index=False)
    assert _cli_release(csv, csv) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "not an SQLite database" in cap.err
    assert _cli_release(tmp_path / "missing.csv", tmp_path) == 2  # ledger checked first
    assert "folder" in capsys.readouterr().err


def test_cli_release_prints_nothing_when_the_ledger_write_fails(tmp_path, capsys, monkeypatch):
    csv = tmp_path / "d.csv"
    _frame().to_csv(csv, index=False)

    def broken(*args, **kwargs):
        raise LedgerError("ledger l.db: cannot write it (disk I/O error)")

    monkeypatch.setattr(ledger.Booking, "append", broken)
    assert _cli_release(csv, tmp_path / "l.db") == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "disk I/O error" in cap.err


# -- the small schema validator is itself checked ---------------------------------------------


def test_schema_validator_catches_bad_records(student):
    q = _query()
    d = qp.release(qp.plan(student, q, "income", 1.0), q, _frame()).to_dict()
    bad = [
        {k: v for k, v in d.items() if k != "timestamp"},
        {**d, "seed": "3"},
        {**d, "noise": {**d["noise"], "source": "lucky"}},
        {**d, "format": "quiltpriv-release/5"},
        {**d, "data": {k: v for k, v in d["data"].items() if k != "table_sha256"}},
        {**d, "warnings": [""]},
        {**d, "extra": 1},
        {**d, "timestamp": "2026-01-01 00:00:00"},
        {**d, "data": {**d["data"], "sha256": "XYZ"}},
        {**d, "guarantee": {**d["guarantee"], "epsilon": 0}},
        {**d, "value": []},
        {**d, "seed": True},
    ]
    for b in bad:
        assert schema_check.errors(b, SCHEMA), b
    try:
        import jsonschema
    except ImportError:
        return
    for b in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(b, SCHEMA)


def test_show_survives_records_composition_cannot_read(tmp_path, capsys):
    path = _ledger(tmp_path, 2)  # bare records: no plan, no guarantee
    assert main(["ledger", "show", path]) == 0
    out = capsys.readouterr().out
    assert "2 entries, hash chain intact" in out
    assert "no composition: composition: release #0" in out
    assert main(["ledger", "show", path, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "error" in doc["compositions"][0] and len(doc["entries"]) == 2
    assert main(["ledger", "verify", path, "--json"]) == 2


# -- creation is atomic -----------------------------------------------------------------------


def test_a_ledger_path_never_exists_without_its_tables(tmp_path, monkeypatch):
    # A release checks its ledger before drawing (check_writable); another process creating
    # the same ledger at that moment used to leave an empty SQLite file at the path until its
    # transaction committed, and the check called it "not a quiltpriv ledger (its tables are
    # missing)". Creation now happens in a private file linked into place: in the middle of it
    # the path does not exist yet, and a check then sees no entries.
    path = tmp_path / "l.db"
    seen = []
    real = ledger._initialise

    def watching(con, p):
        real(con, p)
        seen.append((path.exists(), ledger.check_writable(path)))

    monkeypatch.setattr(ledger, "_initialise", watching)
    ledger.append(path, _rec())
    assert seen[0] == (False, ())  # mid-creation: no file at the path, no entries
    monkeypatch.undo()
    entries, head = ledger.read(path)
    assert head.count == 1 and entries[0].record == _rec()
    assert [p.name for p in tmp_path.iterdir()] == ["l.db"]  # the private file is gone


def test_a_creator_that_loses_the_race_uses_the_winners_ledger(tmp_path):
    path = tmp_path / "l.db"
    ledger.append(path, _rec(n=1))
    ledger._create(str(path))  # as a second process would, finding the path taken
    entries, head = ledger.read(path)
    assert head.count == 1 and [e.record for e in entries] == [_rec(n=1)]
    assert [p.name for p in tmp_path.iterdir()] == ["l.db"]
