"""Loading large JSON models: the vectorised checks refuse what the per-table checks refused.

The fast paths of :func:`quiltpriv.model.loading.load_model` for JSON models (the C float
reader when no literal can fail :func:`check_probability_literal`, table checks over one
concatenated array) are compared with the per-literal and per-table checks they replace.
"""

import gc
import json

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.errors import ModelError
from quiltpriv.model import loading
from quiltpriv.model.cpd_tables import CPD_SUM_TOLERANCE, _check_table, _check_tables


def _random_tables(rng, n):
    items = []
    for j in range(n):
        k = int(rng.choice([2, 3, 5, 70]))
        shape = (k,) + tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3))))
        cols = rng.dirichlet(np.ones(k), size=int(np.prod(shape[1:], dtype=int))).T
        kind = rng.integers(4)
        if kind == 1:  # off by more than rounding, within the tolerance: renormalised
            cols = cols * (1 + 1e-9)
        elif kind == 2:  # exactly normalised columns written as lists
            cols = np.full_like(cols, 1.0 / k) if k in (2,) else cols
        values = cols.reshape(shape)
        items.append((values.tolist() if kind != 3 else values, shape, f"CPD {j}"))
    return items


def test_batched_tables_equal_per_table_checks():
    rng = np.random.default_rng(7)
    for _ in range(5):
        items = _random_tables(rng, 60)
        fast = _check_tables(items, CPD_SUM_TOLERANCE)
        for (values, shape, what), got in zip(items, fast, strict=True):
            want = _check_table(values, shape, what, CPD_SUM_TOLERANCE)
            assert got.shape == want.shape and got.tobytes() == want.tobytes()
            assert not got.flags.writeable
            if isinstance(values, np.ndarray):
                assert not np.shares_memory(got, values)


@pytest.mark.parametrize("bad", [
    [[0.5, np.nan], [0.5, 0.5]],          # NaN
    [[1.5, 0.5], [-0.5, 0.5]],            # negative
    [[0.5, 0.5], [0.5, 0.6]],             # a column not summing to one
    [[0.5, 0.5, 0.2], [0.5, 0.5, 0.8]],   # wrong number of entries
    [["a", 0.5], [0.5, 0.5]],             # not numeric
    [[0.5, 0.5], [0.5]],                  # ragged
    [[1e-310, 0.5], [1 - 1e-7, 0.5]],     # a subnormal in a column to renormalise
])
def test_batched_tables_refuse_with_the_per_table_message(bad):
    good = [[0.25, 0.5], [0.75, 0.5]]
    items = [(good, (2, 2), "CPD a"), (bad, (2, 2), "CPD b"), (good, (2, 2), "CPD c")]
    with pytest.raises(ModelError) as want:
        _check_table(bad, (2, 2), "CPD b", CPD_SUM_TOLERANCE)
    with pytest.raises(ModelError) as got:
        _check_tables(items, CPD_SUM_TOLERANCE)
    assert str(got.value) == str(want.value)


@pytest.fixture(scope="module")
def student_text():
    return json.dumps(qp.theta_to_dict(qp.load_model("student:theta"), version=1))


@pytest.mark.parametrize("literal", [
    "1e-400", "1E-0400", "2e-310", "1e400", "1e+999", "0." + "0" * 320 + "1",
    "1" + "0" * 400 + ".0", "0." + "0" * 250 + "1e-60",
])
def test_literals_the_float_reader_cannot_check_are_still_refused(tmp_path, student_text,
                                                                  literal):
    # The first probability of the file is replaced by the literal (via a sentinel).
    doc = json.loads(student_text)
    member = doc["members"][0]["cpds"]
    node = next(iter(member))
    member[node] = np.asarray(member[node], dtype=float)
    member[node].flat[0] = 0.314159265358979
    member[node] = member[node].tolist()
    text = json.dumps(doc).replace("0.314159265358979", literal, 1)
    assert literal in text
    assert not loading._json_numbers_plain(text)
    f = tmp_path / "m.json"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ModelError) as info:
        qp.load_model(f)
    assert "\n" not in str(info.value)
    assert "normal range" in str(info.value) or "finite" in str(info.value), str(info.value)


def test_fast_and_checked_float_readers_agree(tmp_path, student_text):
    assert loading._json_numbers_plain(student_text)
    plain = tmp_path / "plain.json"
    plain.write_text(student_text, encoding="utf-8")
    # A 200-digit node name sends the same numbers through the per-literal checks.
    doc = json.loads(student_text)
    doc["provenance"] = {"note": "9" * 200}
    slow_text = json.dumps(doc)
    assert not loading._json_numbers_plain(slow_text)
    slow = tmp_path / "slow.json"
    slow.write_text(slow_text, encoding="utf-8")
    assert qp.load_model(plain).fingerprint() == qp.load_model(slow).fingerprint()


def test_no_fixed_size_cap_but_a_memory_budget(tmp_path, monkeypatch, student_text):
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:  # sparse: over the old 64 MiB cap, no disk used
        fh.truncate(64 * 2**20 + 1)
    with pytest.raises(ModelError) as info:
        qp.load_model(big)
    assert "larger than" not in str(info.value) and "not valid JSON" in str(info.value)
    f = tmp_path / "m.json"
    f.write_text(student_text, encoding="utf-8")
    monkeypatch.setattr(loading, "JSON_MEMORY_BUDGET", len(student_text))
    with pytest.raises(ModelError, match="over the .*-byte budget") as info:
        qp.load_model(f)
    assert "\n" not in str(info.value)


def test_garbage_collector_restored(tmp_path, student_text):
    f = tmp_path / "m.json"
    f.write_text(student_text[:-5], encoding="utf-8")
    assert gc.isenabled()
    with pytest.raises(ModelError):
        qp.load_model(f)
    assert gc.isenabled()
    f.write_text(student_text, encoding="utf-8")
    qp.load_model(f)
    assert gc.isenabled()


def test_compressed_json_bounded_by_the_budget_not_64_mib(tmp_path, monkeypatch, student_text):
    import gzip

    f = tmp_path / "m.json.gz"
    with gzip.open(f, "wt", encoding="utf-8") as fh:
        fh.write(student_text)
    want = qp.load_model("student:theta").fingerprint()
    assert qp.load_model(f).fingerprint() == want
    # Over the BIF cap of 64 MiB once decompressed (trailing spaces), under the budget: read.
    monkeypatch.setattr(loading, "JSON_MEMORY_BUDGET", 2**30 * loading.JSON_BYTES_PER_TEXT_BYTE)
    padded = tmp_path / "padded.json.gz"
    with gzip.open(padded, "wb", compresslevel=1) as fh:
        fh.write(student_text.encode())
        for _ in range(65):
            fh.write(b" " * 2**20)
    assert qp.load_model(padded).fingerprint() == want
    monkeypatch.setattr(loading, "JSON_MEMORY_BUDGET",
                        loading.JSON_BYTES_PER_TEXT_BYTE * (len(student_text) - 1))
    with pytest.raises(ModelError, match="uncompressed size exceeds .* budget") as info:
        qp.load_model(f)
    assert "\n" not in str(info.value)


def _json_with(student_text, edit):
    doc = json.loads(student_text)
    edit(doc)
    return json.dumps(doc)


@pytest.mark.parametrize(("where", "text_edit"), [
    ("top level", lambda t: t.replace('{"format"', '{"provenance": {}, "provenance": {}, '
                                      '"format"', 1)),
    ("a node entry", lambda t: t.replace('"parents": [', '"parents": [], "parents": [', 1)),
    ("a member", lambda t: t.replace('"cpds": {', '"name": "a", "name": "b", "cpds": {', 1)),
    ("the tables", lambda t: t.replace('"cpds": {', '"cpds": {"gender": [0.5, 0.5], ', 1)),
    ("the provenance", lambda t: t.replace('{"format"', '{"provenance": {"a": 1, "a": 2}, '
                                           '"format"', 1)),
])
def test_duplicate_keys_refused_at_every_level(tmp_path, student_text, where, text_edit):
    # The fast reader counts colons against parsed pairs; a dropped duplicate sends the text
    # to the per-object check, which names the key.
    text = text_edit(student_text)
    assert text != student_text, where
    f = tmp_path / "m.json"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ModelError, match="twice") as info:
        qp.load_model(f)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("literal", ["1e400", "1e-400", "2e-310"])
@pytest.mark.parametrize("where", ["provenance", "node entry", "member"])
def test_risky_literals_outside_the_tables_still_refused(tmp_path, student_text, literal,
                                                         where):
    doc = json.loads(student_text)
    sentinel = 0.314159265358979
    if where == "provenance":
        doc["provenance"] = {"note": sentinel}
    elif where == "node entry":
        next(iter(doc["nodes"].values()))["extra"] = sentinel
    else:
        doc["members"][0]["weight"] = sentinel
    text = json.dumps(doc).replace(repr(sentinel), literal, 1)
    f = tmp_path / "m.json"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ModelError, match="normal range|finite"):
        qp.load_model(f)


def test_zero_entries_and_harmless_metadata_read_alike_on_both_paths(tmp_path, student_text):
    doc = json.loads(student_text)
    cpds = doc["members"][0]["cpds"]
    node = next(v for v, t in cpds.items() if np.asarray(t).ndim == 1)
    k = len(cpds[node])
    cpds[node] = [0.0] * (k - 1) + [1.0]  # exact zeros: the fast path re-checks the text
    doc["provenance"] = {"note": "ok", "x": 0.25}
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(doc), encoding="utf-8")
    doc["provenance"]["pad"] = "9" * 200  # forces every literal through the checked reader
    checked = tmp_path / "checked.json"
    checked.write_text(json.dumps(doc), encoding="utf-8")
    a, b = qp.load_model(plain), qp.load_model(checked)
    assert a.fingerprint() == b.fingerprint()
    assert list(a.members[0][node].table) == [0.0] * (k - 1) + [1.0]


def test_load_model_takes_the_memory_budget(tmp_path, student_text):
    from quiltpriv.errors import ParameterError

    f = tmp_path / "m.json"
    f.write_text(student_text, encoding="utf-8")
    want = qp.load_model("student:theta").fingerprint()
    assert qp.load_model(f, max_memory="1G").fingerprint() == want
    with pytest.raises(ModelError, match=r"over the 1000-byte budget \(max_memory\)"):
        qp.load_model(f, max_memory=1000)
    with pytest.raises(ParameterError, match="max_memory"):
        qp.load_model(f, max_memory="lots")
    assert loading.JSON_MEMORY_BUDGET == qp.utils.memory.DEFAULT_MAX_MEMORY  # one setting


def test_bulk_node_checks_agree_with_node_by_node(student_text):
    from pathlib import Path

    nodes = json.loads(student_text)["nodes"]
    states, parents = loading._json_nodes(nodes, Path("m.json"))
    for v, spec in nodes.items():
        assert (states[v], parents[v]) == loading._json_node(v, spec, nodes, Path("m.json"))
