"""Accounting across releases: grouping by the data released (whatever the model or
mechanism), data-set identity, the warnings a record carries, composition by the published
results whose conditions the records meet, and the budget."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.mechanisms.registry import build_mechanism
from quiltpriv.model.network import theta_from_tables
from quiltpriv.releases import ledger, records
from quiltpriv.releases.composition import (
    NO_RESULT,
    composition,
    compositions_by_data,
    same_data_groups,
)


@pytest.fixture(autouse=True)
def _fresh_session():
    records.forget_releases()
    yield
    records.forget_releases()


def _xor_tables():
    s = ("0.2", "0.8")
    xor = np.zeros((2, 2, 2))
    for a, b in itertools.product(range(2), repeat=2):
        xor[a ^ b, a, b] = 1.0
    return [("j", "i"), ("k", "i")], {"j": s, "k": s, "i": s}, {
        "j": np.array([0.5, 0.5]), "k": np.array([0.5, 0.5]), "i": xor}


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


XOR_DATA = pd.DataFrame({"j": [1, 0, 1], "k": [0, 0, 1], "i": [1, 0, 0]})
Q1 = qp.CountQuery(["j"], 3, where="j == 1", domain={"j": (0, 1)})
Q2 = qp.CountQuery(["k"], 3, where="k == 1", domain={"k": (0, 1)})


def test_the_xor_pair_across_two_models_gets_no_joint_guarantee(tmp_path, capsys):
    # Hole 1: the same beliefs as a one-member Theta and as a two-member Theta have different
    # fingerprints; grouping by model showed each release alone with "together: epsilon 0.5".
    edges, states, tables = _xor_tables()
    one = theta_from_tables(edges, states, tables)
    two = theta_from_tables(edges, states, [tables, tables])
    assert one.fingerprint() != two.fingerprint()
    p1, p2 = qp.plan(one, Q1, "i", 0.5), qp.plan(two, Q2, "i", 0.5)
    assert p1.scale == p2.scale == 0
    path = tmp_path / "l.db"
    _quiet(qp.release, p1, Q1, XOR_DATA, ledger=path)
    _quiet(qp.release, p2, Q2, XOR_DATA, ledger=path)
    entries, _ = ledger.read(path)
    (c,) = compositions_by_data(entries)
    assert not c.composed and c.releases == ("#0", "#1") and c.reasons[0] == NO_RESULT
    assert "2 different models" in " ".join(c.notes)
    assert main(["ledger", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "together: NO joint guarantee" in out and "together: epsilon" not in out
    # what is at stake: the exact joint loss of the pair is 3.466 (docs/ledger.md)
    from quiltpriv.audit.joint import joint_audit

    exact = np.log((0.8**6 + 0.2**6) / 2 / (0.8**3 * 0.2**3))
    assert joint_audit(two, [Q1, Q2], [0.0, 0.0], "i").loss == pytest.approx(exact, rel=1e-12)
    assert exact == pytest.approx(3.466, abs=5e-4)


def test_apmqm_next_to_group_dp_on_the_same_data_gets_no_joint_guarantee(tmp_path):
    theta = qp.load_model("example3")
    q = qp.CountQuery(["x1"], 3, where="x1 == 1", domain={"x1": (0, 1)})
    data = pd.DataFrame({"x1": [1, 0, 1]})
    path = tmp_path / "l.db"
    _quiet(qp.release, qp.plan(theta, q, "x2", 1.0), q, data, ledger=path)
    _quiet(build_mechanism("group-dp", theta, q, "x2", 1.0).release, data, ledger=path)
    entries, _ = ledger.read(path)
    (c,) = compositions_by_data(entries)
    assert not c.composed and c.reasons[0] == NO_RESULT
    assert "different kinds of guarantee" in c.reasons[1]
    assert "APMQM, group DP Laplace" in " ".join(c.notes)
    assert "as each record states" in c.explain()


def _csv(tmp_path):
    df = pd.DataFrame({"height": [60.0, 70.0, 68.0], "sat": [1200.0, 1400.0, 1350.0],
                       "gender": ["f", "m", "f"]})
    path = tmp_path / "survey.csv"
    df.to_csv(path, index=False)
    return path


def test_a_count_and_a_histogram_over_different_columns_are_the_same_data(tmp_path, capsys):
    # Hole 2: the columns' hashes differ, the whole table's hash is the same.
    csv, path = _csv(tmp_path), tmp_path / "l.db"
    common = ["student", "--sensitive", "income", "--epsilon", "1", "--data", str(csv),
              "--ledger", str(path), "--records", "3"]
    assert main(["release", *common, "--attributes", "height", "--where", "height > 66"]) == 0
    assert main(["release", *common, "--query", "histogram", "--attributes", "sat",
                 "--domain", "sat=1200|1350|1400"]) == 0
    capsys.readouterr()
    entries, _ = ledger.read(path)
    d0, d1 = (e.record["data"] for e in entries)
    assert d0["sha256"] != d1["sha256"] and d0["columns"] != d1["columns"]
    assert d0["table_sha256"] == d1["table_sha256"]
    (c,) = compositions_by_data(entries)
    assert not c.composed and c.releases == ("#0", "#1")
    assert "every release is on the same data (table sha256" in " ".join(c.notes)


def test_a_declared_data_set_name_joins_releases_and_other_tables_stay_apart(tmp_path, capsys):
    csv, path = _csv(tmp_path), tmp_path / "l.db"
    common = ["student", "--sensitive", "income", "--epsilon", "1", "--ledger", str(path),
              "--records", "3", "--attributes", "height", "--where", "height > 66"]
    other = tmp_path / "other.csv"
    pd.read_csv(csv).assign(weight=[1, 2, 3]).to_csv(other, index=False)
    third = tmp_path / "third.csv"
    pd.DataFrame({"height": [50.0]}).to_csv(third, index=False)
    assert _quiet(main, ["release", *common, "--data", str(csv), "--dataset", "survey"]) == 0
    # another file of the same survey (a column more), declared by name
    assert _quiet(main, ["release", *common, "--data", str(other), "--dataset", "survey"]) == 0
    assert _quiet(main, ["release", *common, "--data", str(third)]) == 0  # other data
    entries, _ = ledger.read(path)
    assert entries[0].record["data"]["dataset"] == "survey"
    assert same_data_groups([e.record for e in entries]) == [[0, 1], [2]]
    comps = compositions_by_data(entries)
    assert [c.releases for c in comps] == [("#0", "#1"), ("#2",)]
    assert not comps[0].composed and comps[1].composed
    # a record written before format 3 may be on any data: it joins every group
    old = {k: v for k, v in entries[2].record.items()}
    old["format"] = "quiltpriv-release/2"
    old["data"] = {k: old["data"][k] for k in ("sha256", "rows", "columns")}
    recs = [e.record for e in entries] + [old]
    assert same_data_groups(recs) == [[0, 1, 2, 3]]
    assert "written before format 3" in " ".join(composition(recs).notes)
    capsys.readouterr()
    assert main(["release", *common, "--data", str(csv), "--dataset", " "]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "dataset must be a printable name" in cap.err
    assert ledger.verify(path).count == 3  # nothing written
