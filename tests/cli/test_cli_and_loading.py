"""The command line contract, file formats and bundled models."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from pgmpy.readwrite import BIFWriter, XMLBIFWriter

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.model.loading import model_dirs

PLAN = ["plan", "student", "--sensitive", "income", "--query", "count", "--records", "1000",
        "--epsilon", "1"]


def test_plan_json_contract(capsys):
    assert main([*PLAN, "--attributes", "height", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["epsilon"] == 1.0 and d["scale"] == 0.0 and d["optimal"] is True
    s = d["sensitive"]["income"]
    assert s["scale"] == 0.0 and s["sensitivity"] == 0.0 and "height" not in s["nearby"]
    assert isinstance(s["quilt"], list) and s["quilts_considered"] >= 2
    assert main([*PLAN, "--attributes", "height,sat", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["scale"] == pytest.approx(1000.0)


def test_plan_list_sets_option(capsys):
    """--list-sets no keeps the contract's fields with N and R null (the large-plan form)."""
    assert main([*PLAN, "--attributes", "height,sat", "--json", "--list-sets", "no"]) == 0
    d = json.loads(capsys.readouterr().out)
    s = d["sensitive"]["income"]
    assert d["format"] == "quiltpriv-plan/4"
    assert s["nearby"] is None and s["remote"] is None and isinstance(s["quilt"], list)
    assert set(s["nearby_attributes"]) <= {"height", "sat"}
    assert main([*PLAN, "--attributes", "height,sat", "--json", "--list-sets", "yes"]) == 0
    listed = json.loads(capsys.readouterr().out)["sensitive"]["income"]
    assert listed["nearby_attributes"] is None
    assert sorted(s["nearby_attributes"]) == sorted(
        set(listed["nearby"]) & {"height", "sat"})
    assert d["scale"] == pytest.approx(1000.0)


def test_plan_table(capsys):
    assert main([*PLAN, "--attributes", "height"]) == 0
    out = capsys.readouterr().out
    assert "APMQM plan" in out and "income" in out and "Least scale over all 16 quilts" in out


def test_plan_theta_and_other_queries(capsys, tmp_path):
    base = ["plan", "student", "--theta", "student:theta", "--sensitive", "income,gender",
            "--epsilon", "2", "--json"]
    assert main([*base, "--query", "mean", "--attributes", "weight", "--bounds", "0:1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["theta_size"] == 3 and set(d["sensitive"]) == {"income", "gender"}
    assert main([*base, "--query", "linear", "--weights", "height=1,weight=-2",
                 "--bounds", "height=0:1,weight=0:1"]) == 0
    assert json.loads(capsys.readouterr().out)["query"]["kind"] == "linear"
    assert main([*base, "--query", "histogram", "--attributes", "sat", "--records", "10",
                 "--categories", "sat=0|1"]) == 0
    assert json.loads(capsys.readouterr().out)["query"]["kind"] == "histogram"
    out = tmp_path / "plan.json"
    assert main([*base, "--query", "sum", "--attributes", "sat", "--bounds", "0:1",
                 "--records", "5", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["query"]["kind"] == "sum"


@pytest.mark.parametrize("args, msg", [
    (["--attributes", "height", "--epsilon", "0"], "epsilon must be > 0"),
    (["--attributes", "nope"], "query attribute 'nope' not in the network"),
    (["--attributes", "height", "--records", "0"], "--records must be a whole number"),
    (["--attributes", "height", "--sensitive", "zz"], "sensitive attribute 'zz'"),
])
def test_plan_errors_one_line(capsys, args, msg):
    argv = [*PLAN, *args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and err.startswith("quiltpriv: error:")


def test_unreadable_model_error(capsys, tmp_path):
    assert main(["plan", str(tmp_path / "x.bif"), "--sensitive", "a", "--attributes", "b",
                 "--records", "3", "--epsilon", "1"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_quilts_listing(capsys):
    assert main(["quilts", "student", "--node", "income"]) == 0
    out = capsys.readouterr().out
    assert "{gender}" in out and "{height, weight}" in out
    assert main(["quilts", "student", "--node", "income", "--json", "--attributes", "height",
                 "--records", "10", "--epsilon", "1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["quilts"]) == 16  # 2**4 subsets; Q = {} is the trivial quilt here
    g = next(r for r in d["quilts"] if r["quilt"] == ["gender"])
    assert set(g["remote"]) == {"height", "weight"} and g["sensitivity"] == 0


def test_release_cli(tmp_path, capsys):
    rng = np.random.default_rng(1)
    csv = tmp_path / "d.csv"
    pd.DataFrame({"height": rng.normal(66, 3, 20), "sat": rng.normal(1300, 80, 20)}).to_csv(
        csv, index=False)
    out = tmp_path / "rel.json"
    assert main(["release", "student", "--sensitive", "income", "--attributes", "height",
                 "--records", "20", "--epsilon", "1", "--where", "height > 66", "--data",
                 str(csv), "-o", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["scale"] == 0.0 and rec["plan"]["scale"] == 0.0
    # -o writes the record; the one-line summary is still printed
    assert capsys.readouterr().out.startswith("released ")
    assert "needs no noise" in rec["sampler"] and rec["seed"] is None and rec["secure"]
    assert main(["release", "student", "--sensitive", "income", "--attributes", "height,sat",
                 "--records", "20", "--epsilon", "1", "--where", "height > 66 and sat > 1300",
                 "--data", str(csv), "--seed", "3", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["secure"] is False and "NOT secure" in cap.err
    bad = tmp_path / "bad.json"
    assert main(["release", "student", "--sensitive", "income", "--attributes", "height",
                 "--records", "2", "--epsilon", "1", "--where", "height > 66", "--data",
                 str(csv), "-o", str(bad)]) == 2
    assert not bad.exists() and list(tmp_path.glob(".bad.json*")) == []


def test_bif_and_xmlbif_round_trip(tmp_path):
    from quiltpriv.model.loading import _import_file

    net = qp.load_model("student")
    pg = _import_file(model_dirs()[0] / "student.py").network()
    BIFWriter(pg).write(str(tmp_path / "s.bif"))
    XMLBIFWriter(pg).write(str(tmp_path / "s.xml"))
    for f in ("s.bif", "s.xml"):
        t = qp.load_model(tmp_path / f)
        assert set(t.nodes) == set(net.nodes) and set(t.edges) == set(net.edges)
        for q in (["gender"], ["height", "weight"]):
            assert qp.max_influence(t, "income", q).value == pytest.approx(
                qp.max_influence(net, "income", q).value, rel=1e-12)


def test_bundled_bif_fixture_matches_module():
    d = model_dirs()[0]
    t = qp.load_model(d / "student.bif")
    m = qp.load_model("student")
    assert qp.max_influence(t, "income", ["gender"]).value == pytest.approx(
        qp.max_influence(m, "income", ["gender"]).value, rel=1e-12)


@pytest.mark.parametrize("name, members", [
    ("student", [{}]), ("student:theta", [{}, {"strong": True}]), ("example3", [{}]),
    ("chain", [{}]), ("chain:chain", [{}])])
def test_bundled_models_equal_their_pgmpy_networks(name, members):
    # The bundled modules declare their tables with NetworkBuilder (no pgmpy); built by
    # pgmpy from the same declarations (network()), or converted to pgmpy by bundled_network,
    # they give the same Theta, member names included.
    theta = qp.load_model(name)
    base, _, function = name.partition(":")
    nets = [qp.bundled_network(base, function="network", **kw) for kw in members]
    converted = qp.bundled_network(base, function=function or "model")
    for ref in (qp.theta_from_pgmpy(nets, [n.name for n in nets]), qp.theta_from_pgmpy(
            converted if isinstance(converted, list) else [converted])):
        assert theta.fingerprint() == ref.fingerprint()
        assert (theta.nodes, theta.names) == (ref.nodes, ref.names)
        assert dict(theta.parents) == dict(ref.parents) and theta.provenance is None


def test_models_command(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in ("student", "example3", "chain"):
        assert name in out


def test_bundled_network_with_arguments():
    net = qp.bundled_network("chain", 5, stay=0.5, function="chain")
    theta = qp.theta_from_pgmpy(net)
    assert theta.nodes == ("x01", "x02", "x03", "x04", "x05")
    # Persistence 0.5 with 3 states: P(x_{t+1} | x_t) has diagonal 0.5, off-diagonal 0.25.
    assert qp.max_influence(theta, "x01", ["x02"]).value == pytest.approx(2 * 0.34657359, rel=1e-6)
    with pytest.raises(qp.ModelError, match="no bundled model named 'nope'"):
        qp.bundled_network("nope")
    with pytest.raises(qp.ModelError, match="chain\\(\\) failed"):
        qp.bundled_network("chain", 1, function="chain")


def test_quilts_rank_mark_and_explain(capsys):
    """With a query and epsilon: ranked by scale, the planner's choice marked (even when the
    listing is cut before it), every loser explained, long sets abbreviated."""
    from quiltpriv.cli.quilts_table import short_set

    args = ["quilts", "student", "--node", "income", "--query", "linear", "--weights",
            "sat=1,gender=1", "--bounds", "sat=0:1,gender=0:1", "--records", "100",
            "--epsilon", "0.3"]
    assert main([*args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = d["quilts"]
    assert d["ranked_by"] == "scale" and d["chosen"] == []
    scales = [math.inf if r["scale"] == "inf" else r["scale"] for r in rows]
    assert scales == sorted(scales)
    (chosen,) = [r for r in rows if r["chosen"]]
    assert chosen["quilt"] == [] and chosen["scale"] == pytest.approx(2 / 0.3)
    assert chosen["scale"] == qp.plan(qp.load_model("student"), qp.LinearQuery(
        {"sat": 1, "gender": 1}, {"sat": (0, 1), "gender": (0, 1)}),
        "income", 0.3).scale
    g = next(r for r in rows if r["quilt"] == ["gender"])
    assert g["why"].startswith("infeasible: e(Q|i) = 0.315853 >= eps = 0.3")
    w = next(r for r in rows if r["quilt"] == ["weight"])
    assert w["why"].startswith("needs b = 7.59222 > 6.66667: query attribute(s) {sat, gender}")
    # --limit 2 lists {} and one more; the chosen quilt is always there; --top 1 keeps it
    assert main([*args, "--limit", "2", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "ranked by scale; * = the planner's choice" in out
    assert "\n*  (trivial) {}" in out and "infeasible" not in out
    # a long set is abbreviated
    assert short_set([f"x{k}" for k in range(20)]) == "{x0, x1, x2, x3, +16 more}"
    assert short_set(["a", "b", "c", "d", "e"]) == "{a, b, c, d, e}"
