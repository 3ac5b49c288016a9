"""quiltpriv's JSON model format: round trip, and hostile JSON files."""

import copy
import json

import pytest

import quiltpriv as qp
from quiltpriv.errors import ModelError, QuiltPrivError

TRIED = {"n": 0}


@pytest.fixture(scope="module")
def student_doc():
    return qp.theta_to_dict(qp.load_model("student:theta"), version=1)


def _write(tmp_path, doc, name="m.json"):
    f = tmp_path / name
    f.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return f


def test_round_trip_keeps_every_influence(tmp_path, student_doc):
    theta = qp.load_model("student:theta")
    back = qp.load_model(_write(tmp_path, student_doc))
    assert len(back) == 2 and back.names == theta.names
    for a, b in zip(back.members, theta.members, strict=True):
        for v in theta.nodes:
            assert a[v].parents == b[v].parents
            assert abs(a[v].table - b[v].table).max() <= 1e-15
    for q in (["gender"], ["height", "weight"], ["sat"]):
        assert qp.max_influence(back, "income", q).value == qp.max_influence(
            theta, "income", q).value
    # The CLI reads it like any model.
    from quiltpriv.cli import main

    assert main(["plan", str(tmp_path / "m.json"), "--sensitive", "income", "--attributes",
                 "height", "--records", "10", "--epsilon", "1", "--json"]) == 0


def _mutations(doc):
    def m(fn):
        d = copy.deepcopy(doc)
        fn(d)
        return d

    g = doc["members"][0]["cpds"]["gender"]
    return {
        "not_object": [1, 2],
        "wrong_format": m(lambda d: d.update(format="other")),
        "no_nodes": m(lambda d: d.update(nodes={})),
        "no_members": m(lambda d: d.update(members=[])),
        "cycle": m(lambda d: d["nodes"]["gender"].update(parents=["weight"])),
        "unknown_parent": m(lambda d: d["nodes"]["sat"].update(parents=["zzz"])),
        "parent_twice": m(lambda d: d["nodes"]["sat"].update(parents=["income", "income"])),
        "state_twice": m(lambda d: d["nodes"]["gender"].update(states=["a", "a", "b"])),
        "no_states": m(lambda d: d["nodes"]["gender"].update(states=[])),
        "huge_states": m(lambda d: d["nodes"]["gender"].update(
            states=[str(k) for k in range(10**6)])),
        "number_states": m(lambda d: d["nodes"]["gender"].update(states=[1, 2, 3])),
        "missing_cpd": m(lambda d: d["members"][0]["cpds"].pop("sat")),
        "extra_cpd": m(lambda d: d["members"][0]["cpds"].update(zzz=[[1.0]])),
        "wrong_shape": m(lambda d: d["members"][0]["cpds"].update(gender=[0.5, 0.5])),
        "ragged": m(lambda d: d["members"][0]["cpds"].update(gender=[[0.3], [0.4, 0.1], [0.2]])),
        "negative": m(lambda d: d["members"][0]["cpds"].update(gender=[-0.3, 1.0, 0.3])),
        "not_normalised": m(lambda d: d["members"][0]["cpds"].update(gender=[0.5] * 3)),
        "words": m(lambda d: d["members"][0]["cpds"].update(gender=["a", "b", "c"])),
        "member_not_object": m(lambda d: d["members"].append(3)),
        "unicode_ok_but_cycle": m(lambda d: d["nodes"]["gender"].update(parents=["sat"])),
        "nan": json.dumps(doc).replace(f'"gender": {json.dumps(g)}',
                                       f'"gender": [NaN, {g[1]}, {g[2]}]', 1),
        "infinity": json.dumps(doc).replace(f'"gender": {json.dumps(g)}',
                                            f'"gender": [Infinity, {g[1]}, {g[2]}]', 1),
        "duplicate_node": json.dumps(doc).replace('"nodes": {', '"nodes": {"sat": {"states": '
                                                  '["x"], "parents": []}, ', 1),
        "deep": "[" * 100000 + "]" * 100000,
        "empty": "",
    }


def test_hostile_json_models(tmp_path, student_doc):
    text = json.dumps(student_doc)
    cases = _mutations(student_doc)
    # Truncations at many offsets.
    for k in range(0, len(text), max(1, len(text) // 60)):
        cases[f"truncated_{k}"] = text[:k]
    for name, doc in cases.items():
        f = _write(tmp_path, doc, f"{name}.json")
        with pytest.raises(QuiltPrivError) as info:
            qp.load_model(f)
        msg = str(info.value)
        assert msg.strip() and "\n" not in msg.strip(), (name, msg)
        TRIED["n"] += 1
    print(f"hostile JSON model cases tried: {TRIED['n']}")
    assert TRIED["n"] >= 80


def test_specific_messages(tmp_path, student_doc):
    cases = _mutations(student_doc)
    for name, pattern in [("cycle", "cycle"), ("unknown_parent", "unknown parent"),
                          ("nan", "NaN"), ("duplicate_node", "'sat' twice"),
                          ("not_normalised", "does not sum to one"),
                          ("huge_states", "at most"), ("no_members", "Theta is empty")]:
        with pytest.raises(ModelError, match=pattern):
            qp.load_model(_write(tmp_path, cases[name], f"{name}.json"))
