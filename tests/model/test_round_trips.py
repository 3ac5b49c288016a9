"""Everything learned round-trips: learn -> save -> load -> plan -> verify with the same
fingerprint, from Python and from the command line; Theta -> pgmpy -> Theta; tables learned
on a DAG the user gives."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.errors import ParameterError

PARAMETERS = {"a": "share", "b": "share", "c": "share"}


@pytest.fixture(scope="module")
def table():
    """120 populations: b follows a, c is independent of both."""
    rng = np.random.default_rng(7)
    a = rng.uniform(0.05, 0.95, 120)
    b = np.clip(a + rng.normal(0, 0.08, 120), 0, 1)
    c = rng.uniform(0, 1, 120)
    return pd.DataFrame({"a": a, "b": b, "c": c})


@pytest.fixture(scope="module")
def learned(table):
    return qp.learn_theta(table, PARAMETERS, quantiles=3, n_bootstrap=2, seed=1,
                          data_public=True)


def test_learn_save_load_plan_verify(learned, tmp_path):
    assert {frozenset(e) for e in learned.edges} >= {frozenset(("a", "b"))}
    path = learned.save(tmp_path / "theta.json")
    again = qp.load_model(path)
    assert again.fingerprint() == learned.fingerprint()
    assert again.provenance == learned.provenance and again.names == learned.names
    assert json.loads(learned.to_json()) == learned.to_dict()
    query = qp.CountQuery(["c"], records=50)
    plan = qp.plan(learned, query, "a", 1.0)
    saved = qp.Plan.from_json(plan.to_json())
    verified = qp.verify_plan(saved, again, query, sensitive="a", epsilon=1.0)
    assert verified.model_fingerprint == learned.fingerprint() and verified.scale == plan.scale


def test_save_refuses_other_names(learned, tmp_path):
    with pytest.raises(ParameterError, match=r"\.json"):
        learned.save(tmp_path / "theta.bif")
    with pytest.raises(ParameterError, match="file name"):
        learned.save(3)
    assert list(tmp_path.iterdir()) == []


def test_to_pgmpy_per_member(learned):
    nets = learned.to_pgmpy()
    assert len(nets) == len(learned.members) == 3
    assert qp.theta_from_pgmpy(nets).fingerprint() == learned.fingerprint()
    one = learned.to_pgmpy(member=2)
    back = qp.theta_from_pgmpy(one)
    assert back.fingerprint() == qp.Theta(learned.nodes, learned.states, learned.parents,
                                          learned.members[2:]).fingerprint()
    for v in learned.nodes:
        cpd = one.get_cpds(v)
        assert np.allclose(cpd.get_values(),
                           learned.members[2][v].table.reshape(len(learned.states[v]), -1))
    with pytest.raises(ParameterError):
        learned.to_pgmpy(member=3)


def test_given_dag_learns_only_its_tables(table, learned):
    same = qp.learn_theta(table, PARAMETERS, quantiles=3, n_bootstrap=2, seed=1,
                          edges=list(learned.edges), data_public=True)
    # the same DAG: the same BDeu tables and bootstrap members, whatever found the DAG
    assert same.fingerprint() == learned.fingerprint()
    assert same.provenance["structure"]["method"] == "given"
    mine = qp.learn_theta(table, PARAMETERS, quantiles=3, edges=[("c", "a"), ("a", "b")],
                          data_public=True)
    assert set(mine.edges) == {("c", "a"), ("a", "b")}
    assert mine.parents["a"] == ("c",) and mine.parents["c"] == ()
    empty = qp.learn_theta(table, PARAMETERS, quantiles=3, edges=[], data_public=True)
    assert empty.edges == ()
    for bad, match in [([("a", "b"), ("b", "a")], "cycle a -> b -> a"),
                       ([("a", "z")], "'z', which is not a parameter"),
                       ("a>b", "list of .parent, child. pairs")]:
        with pytest.raises(ParameterError, match=match):
            qp.learn_theta(table, PARAMETERS, quantiles=3, edges=bad)
    with pytest.raises(ParameterError, match="required_edges and forbidden_edges"):
        qp.learn_theta(table, PARAMETERS, quantiles=3, edges=[("a", "b")],
                       required_edges=[("a", "b")])


def test_cli_learn_plan_verify(table, learned, tmp_path, capsys):
    csv = tmp_path / "t.csv"
    table.to_csv(csv, index=False)
    model = tmp_path / "theta.json"
    assert main(["learn", str(csv), "--parameters", "a=share,b=share,c=share",
                 "--bootstrap", "2", "--seed", "1", "--data-public", "-o", str(model)]) == 0
    out = capsys.readouterr().out
    assert f"fingerprint {learned.fingerprint()}" in out
    assert qp.load_model(model).fingerprint() == learned.fingerprint()
    plan = tmp_path / "plan.json"
    assert main(["plan", str(model), "--sensitive", "a", "--attributes", "c", "--records",
                 "50", "--epsilon", "1", "--json", "-o", str(plan)]) == 0
    assert main(["verify", str(plan), str(model), "--sensitive", "a", "--epsilon", "1"]) == 0
    capsys.readouterr()
    assert main(["learn", str(csv), "--parameters", "a=share,b=share", "--edges",
                 "b>a"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["nodes"]["a"]["parents"] == ["b"]
    assert printed["provenance"]["structure"]["method"] == "given"
    bad = tmp_path / "bad.json"
    for argv, message in [(["--parameters", "a"], "not NAME=KIND"),
                          (["--parameters", "a=share", "--edges", "a-b"], "not PARENT>CHILD"),
                          (["--parameters", "a=share,zz=share"], "zz")]:
        assert main(["learn", str(csv), *argv, "-o", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("quiltpriv: error: ") and message in err and err.count("\n") == 1
        assert not bad.exists()


def test_cli_learn_time_limit(table, tmp_path, capsys):
    """``--time-limit`` reaches the search and its provenance; a bad one is one line, exit 2."""
    csv = tmp_path / "t.csv"
    table.to_csv(csv, index=False)
    for value, expected in [("none", None), ("30", 30.0)]:
        assert main(["learn", str(csv), "--parameters", "a=share,b=share,c=share",
                     "--time-limit", value, "--data-public"]) == 0
        structure = json.loads(capsys.readouterr().out)["provenance"]["structure"]
        assert structure["time_limit"] == expected
        assert structure["search_end"] == "local_optimum"
    assert main(["learn", str(csv), "--parameters", "a=share", "--time-limit", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("quiltpriv: error: ") and "--time-limit" in err
    assert err.count("\n") == 1
