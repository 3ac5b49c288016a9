"""Format quiltpriv-network/2 (every member's tables in one base64 column of float64):
round trips against format /1, old files still read, and malformed columns refused with the
same checks and messages as /1's tables."""

import base64
import copy
import gzip
import json

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.model.json_format import (
    JSON_FORMAT,
    JSON_FORMAT_V2,
    _decode_column,
    _encode_column,
)
from quiltpriv.model.network import theta_from_tables


def _write(tmp_path, doc, name="m.json"):
    f = tmp_path / name
    f.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return f


def _random_theta(seed, n=12, members=2):
    """A seeded DAG of ``n`` nodes, 1-3 parents among the 4 before, 2-4 states, some
    columns a few ulps off one (renormalised on reading) and some exact zeros."""
    rng = np.random.default_rng(seed)
    names = [f"v{k}" for k in range(n)]
    card = [int(rng.integers(2, 5)) for _ in range(n)]
    parents = {names[j]: [names[int(p)] for p in rng.choice(
        range(max(0, j - 4), j), size=min(j, int(rng.integers(1, 4))), replace=False)]
        for j in range(n)}
    edges = [(p, v) for v in names for p in parents[v]]
    tables = []
    for _ in range(members):
        t = {}
        for j, v in enumerate(names):
            shape = [card[j], *(card[names.index(p)] for p in parents[v])]
            cols = rng.dirichlet(np.ones(card[j]), size=int(np.prod(shape[1:]))).T
            cols[:, ::3] *= 1 + 3e-16  # off one by an ulp or so: renormalised alike
            if j % 4 == 1:
                cols[:, 0] = 0.0
                cols[0, 0] = 1.0
            t[v] = cols.reshape(shape)
        tables.append(t)
    return theta_from_tables(edges, {v: [str(s) for s in range(card[j])]
                                     for j, v in enumerate(names)}, tables,
                             parents_order=parents, names=["a", "b"][:members])


def _same(a, b):
    assert a.fingerprint() == b.fingerprint()
    assert a.nodes == b.nodes and a.names == b.names
    for ma, mb in zip(a.members, b.members, strict=True):
        for v in a.nodes:
            assert ma[v].parents == mb[v].parents
            assert ma[v].table.tobytes() == mb[v].table.tobytes()  # bit for bit
            assert not mb[v].table.flags.writeable


@pytest.mark.parametrize("spec", ["student", "student:theta", "example3", "chain",
                                  "random-1", "random-2", "random-3"])
def test_both_formats_round_trip_to_the_same_theta(tmp_path, spec):
    theta = _random_theta(int(spec[7:])) if spec.startswith("random") else qp.load_model(spec)
    v2, v1 = qp.theta_to_dict(theta), qp.theta_to_dict(theta, version=1)
    assert v2["format"] == JSON_FORMAT_V2 == "quiltpriv-network/2" and "cpds" not in \
        v2["members"][0]
    assert v1["format"] == JSON_FORMAT == "quiltpriv-network/1" and "tables" not in \
        v1["members"][0]
    assert v2["nodes"] == v1["nodes"]
    a = qp.load_model(_write(tmp_path, v2, "v2.json"))
    b = qp.load_model(_write(tmp_path, v1, "v1.json"))
    _same(theta, a)
    _same(b, a)
    # written again from what was read: the same text (a fixed point)
    assert json.dumps(qp.theta_to_dict(a)) == json.dumps(v2)
    gz = tmp_path / "v2.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(v2).encode()))
    _same(a, qp.load_model(gz))


def test_the_column_is_float64_little_endian_in_node_order():
    theta = qp.load_model("example3")
    (column,) = [m["tables"] for m in qp.theta_to_dict(theta)["members"]]
    raw = base64.b64decode(column, validate=True)
    want = np.concatenate([theta.members[0][v].table.ravel() for v in theta.nodes])
    assert raw == want.astype("<f8").tobytes()
    assert _encode_column([]) == ""
    assert _decode_column(column, want.size, "m").tolist() == want.tolist()


def test_a_node_order_that_is_not_topological_reads_alike(tmp_path):
    theta = _random_theta(5)
    order = list(reversed(theta.nodes))  # every child before its parents
    read = []
    for version in (1, 2):
        doc = qp.theta_to_dict(theta, version=version)
        doc["nodes"] = {v: doc["nodes"][v] for v in order}
        for k, m in enumerate(doc["members"]):
            tables = [theta.members[k][v].table for v in order]
            if version == 1:
                m["cpds"] = {v: t.tolist() for v, t in zip(order, tables, strict=True)}
            else:
                m["tables"] = _encode_column(tables)
        read.append(qp.load_model(_write(tmp_path, doc, f"rev{version}.json")))
    _same(read[0], read[1])
    assert read[1].fingerprint() == theta.fingerprint() and read[1].nodes != theta.nodes


def test_the_writer_takes_version_1_or_2_only():
    theta = qp.load_model("example3")
    for bad in (0, 3, True, "2", None):
        with pytest.raises(ParameterError, match="version must be 1 or 2"):
            qp.theta_to_dict(theta, version=bad)


def _doc2():
    return qp.theta_to_dict(qp.load_model("student:theta"))


def _values(doc, k=0):
    return np.frombuffer(base64.b64decode(doc["members"][k]["tables"]), dtype="<f8").copy()


def _with_values(doc, values, k=0):
    d = copy.deepcopy(doc)
    d["members"][k]["tables"] = base64.b64encode(
        np.asarray(values, dtype="<f8").tobytes()).decode()
    return d


def _first(doc):
    """The student model's first node ('gender', 3 states, no parents): entries 0..2."""
    assert next(iter(doc["nodes"])) == "gender" and doc["nodes"]["gender"]["parents"] == []
    return _values(doc)


def _malformed():
    doc = _doc2()
    v = _first(doc)
    text = doc["members"][0]["tables"]
    neg, nan, inf, tiny, unnorm = (v.copy() for _ in range(5))
    neg[0], neg[1] = -neg[0], neg[1] + 2 * neg[0]
    nan[0] = np.nan
    inf[0] = np.inf
    tiny[0], tiny[1] = 1e-310, tiny[1] + tiny[0] - 1e-310
    unnorm[0:3] = 0.5

    def edit(fn):
        d = copy.deepcopy(doc)
        fn(d)
        return d

    return {
        "a list": (edit(lambda d: d["members"][0].update(tables=v.tolist())),
                   "'tables' must be a base64 string"),
        "a number": (edit(lambda d: d["members"][0].update(tables=1.5)),
                     "'tables' must be a base64 string"),
        "null": (edit(lambda d: d["members"][0].update(tables=None)),
                 "'tables' must be a base64 string"),
        "nested lists as in /1": (edit(lambda d: d["members"][0].update(
            tables={"gender": [0.3, 0.3, 0.4]})), "'tables' must be a base64 string"),
        "no tables": (edit(lambda d: d["members"][0].pop("tables")),
                      "member 0 must be an object with 'tables'"),
        "cpds in /2": (edit(lambda d: d["members"][0].update(
            cpds=d["members"][0].pop("tables"))), "member 0 must be an object with 'tables'"),
        "one entry short": (_with_values(doc, v[:-1]), "the nodes' tables need"),
        "one entry more": (_with_values(doc, np.append(v, 0.5)), "the nodes' tables need"),
        "a byte short": (edit(lambda d: d["members"][0].update(
            tables=base64.b64encode(base64.b64decode(text)[:-1]).decode())),
            "decodes to 455 bytes, not the 456 of 57 float64 numbers"),
        "not base64": (edit(lambda d: d["members"][0].update(tables="!" + text[1:])),
                       "not base64"),
        "whitespace": (edit(lambda d: d["members"][0].update(tables=" " + text[1:])),
                       "not base64"),
        "non-ASCII": (edit(lambda d: d["members"][0].update(tables="é" + text[1:])),
                      "not base64"),
        "misplaced padding": (edit(lambda d: d["members"][0].update(
            tables=text[:8] + "====" + text[12:])), "'tables'"),
        "a state more": (edit(lambda d: d["nodes"]["gender"]["states"].append("0.7")),
                         "the nodes' tables need"),
        "negative": (_with_values(doc, neg), "CPD of 'gender' contains negative"),
        "NaN": (_with_values(doc, nan), "CPD of 'gender' contains NaN or infinite"),
        "infinite": (_with_values(doc, inf), "CPD of 'gender' contains NaN or infinite"),
        "subnormal": (_with_values(doc, tiny), "CPD of 'gender'.*below float64's normal"),
        "not normalised": (_with_values(doc, unnorm), "CPD of 'gender' does not sum to one"),
        "unknown format": (edit(lambda d: d.update(format="quiltpriv-network/3")),
                           "unknown JSON model format"),
        "tables in /1": (edit(lambda d: d.update(format=JSON_FORMAT)),
                         "member 0 must be an object with 'cpds'"),
    }


@pytest.mark.parametrize("case", list(_malformed()))
def test_malformed_columns_are_refused_in_one_line(tmp_path, case):
    doc, pattern = _malformed()[case]
    with pytest.raises(ModelError, match=pattern) as info:
        qp.load_model(_write(tmp_path, doc))
    assert "\n" not in str(info.value)


def test_value_checks_say_what_format_1_says(tmp_path):
    """A bad table: the same message from both formats (the same per-table check)."""
    doc2 = _doc2()
    doc1 = qp.theta_to_dict(qp.load_model("student:theta"), version=1)
    v = _first(doc2)
    for change in ([-v[0], v[1] + 2 * v[0], v[2]], [0.5, 0.5, 0.5], [np.nan, 0.5, 0.5]):
        w = v.copy()
        w[:3] = change
        d1 = copy.deepcopy(doc1)
        d1["members"][0]["cpds"]["gender"] = [float(x) for x in change]
        msgs = []
        for d in (_with_values(doc2, w), d1):
            with pytest.raises(ModelError) as info:
                qp.load_model(_write(tmp_path, json.dumps(d).replace("NaN", "1e999")
                                     if d is d1 else d))
            msgs.append(str(info.value).split(": ", 1)[1])
        if not np.isnan(change[0]):
            assert msgs[0] == msgs[1]


def test_a_column_within_the_tolerance_is_renormalised_as_format_1_does(tmp_path):
    doc2 = _doc2()
    doc1 = qp.theta_to_dict(qp.load_model("student:theta"), version=1)
    v = _first(doc2)
    w = v.copy()
    w[:3] = [0.3, 0.3, 0.4 + 1e-9]
    doc1["members"][0]["cpds"]["gender"] = w[:3].tolist()
    a = qp.load_model(_write(tmp_path, _with_values(doc2, w), "a.json"))
    b = qp.load_model(_write(tmp_path, doc1, "b.json"))
    _same(a, b)
    assert a.members[0]["gender"].table.tolist() != w[:3].tolist()  # divided by its sum


@pytest.mark.parametrize("leaf", ['"0.5"', '"1e-400"', "true", "false", '"a"', "null",
                                  "{}"])
def test_format_1_tables_hold_numbers_only(tmp_path, leaf):
    """numpy reads "0.5" and "1e-400" as numbers and true as 1.0: refused before it can."""
    doc = qp.theta_to_dict(qp.load_model("student"), version=1)
    doc["members"][0]["cpds"]["gender"] = [0.31415926, 0.3, 0.4]
    text = json.dumps(doc).replace("0.31415926", leaf, 1)
    with pytest.raises(ModelError, match="CPD of 'gender'") as info:
        qp.load_model(_write(tmp_path, text))
    assert "\n" not in str(info.value)


def test_format_1_numbers_next_to_text_that_looks_like_booleans_still_read(tmp_path):
    """'true' in a name or an escaped quote sends the tables to the walk; they pass it."""
    theta = qp.load_model("student")
    doc = qp.theta_to_dict(theta, version=1)
    doc["members"][0]["name"] = 'true "quoted" false'
    doc["provenance"] = {"flag": True, "note": 'say "false"'}
    back = qp.load_model(_write(tmp_path, doc))
    assert back.fingerprint() == theta.fingerprint()
    assert back.names == ('true "quoted" false',)


def test_the_column_helpers_raise_model_errors_only():
    # The error contract: whatever the column holds, the reader's helpers raise ModelError.
    from quiltpriv.model.json_format import _check_column

    for data, entries in [(None, 2), (b"AAAA", 1), ("A" * 12, 1), ("@" * 12, 1),
                          (_encode_column([np.array([0.5, 0.5])]), 3)]:
        with pytest.raises(ModelError, match="'tables'|m:"):
            _decode_column(data, entries, "m")
    with pytest.raises(ModelError, match="holds 2 numbers, not the 3"):
        _check_column(np.array([0.5, 0.5]), [(3,)], lambda i: f"t{i}", 1e-9)
