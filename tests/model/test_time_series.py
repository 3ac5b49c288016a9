"""Time-series models and the fraction-of-time query: builders, files, CLI and compare."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.errors import ModelError, QueryError
from quiltpriv.frontend.options import query_from_options
from quiltpriv.mechanisms.compare import compare
from quiltpriv.model.network import theta_from_tables

FLIP = [[0.9, 0.1], [0.1, 0.9]]


def test_markov_chain_is_the_chain_theta_from_tables_builds():
    theta = qp.markov_chain(6, FLIP, [0.5, 0.5])
    names = [f"X{t}" for t in range(1, 7)]
    ref = theta_from_tables(list(zip(names[:-1], names[1:], strict=True)),
                            {v: ("0", "1") for v in names},
                            {names[0]: np.array([0.5, 0.5]),
                             **{v: np.array(FLIP).T for v in names[1:]}})
    assert theta.nodes == ref.nodes and theta.fingerprint() == ref.fingerprint()
    # one table shared by every step (a homogeneous chain holds one matrix)
    assert theta.members[0]["X2"].table is theta.members[0]["X6"].table
    assert theta.provenance["network"] == "record values"
    # an inhomogeneous chain: row u of step t's matrix is P(X_t | X_(t-1) = u)
    steps = [[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.3, 0.7]]]
    inh = qp.markov_chain(3, steps, [1.0, 0.0], states=["off", "on"])
    assert inh.states["X3"] == ("off", "on")
    assert np.allclose(inh.members[0]["X3"].table, np.array(steps[1]).T)


def test_hidden_markov_structure():
    theta = qp.hidden_markov(4, FLIP, [[0.8, 0.2], [0.3, 0.7]], [0.5, 0.5],
                             observed_states=["low", "high"])
    assert theta.nodes == ("H1", "X1", "H2", "X2", "H3", "X3", "H4", "X4")
    assert theta.parents["X3"] == ("H3",) and theta.parents["H3"] == ("H2",)
    assert theta.states["X2"] == ("low", "high")
    assert np.allclose(theta.members[0]["X2"].table, [[0.8, 0.3], [0.2, 0.7]])


@pytest.mark.parametrize("bad", [
    dict(n_steps=0), dict(transition=[[0.9, 0.2], [0.1, 0.9]]), dict(initial=[0.5, 0.6]),
    dict(transition=[[1.0]]), dict(states=["a"]), dict(transition=[FLIP, FLIP]),
])
def test_markov_chain_refuses_bad_input(bad):
    args = dict(n_steps=5, transition=FLIP, initial=[0.5, 0.5]) | bad
    with pytest.raises(ModelError):
        qp.markov_chain(**args)


def test_json_gz_model_round_trip(tmp_path):
    theta = qp.markov_chain(50, FLIP, [0.5, 0.5])
    path = tmp_path / "chain.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(qp.theta_to_dict(theta), fh)
    assert qp.load_model(path).fingerprint() == theta.fingerprint()
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(ModelError):
        qp.load_model(bad)


def test_fraction_query():
    q = qp.FractionQuery(("X1", "X2", "X3", "X4"), "1")
    assert q.sensitivity(["X1", "X3", "Y"]) == 0.5 and q.sensitivity([]) == 0.0
    assert q.sensitivity(["X1", "X1"]) == 0.25
    data = pd.DataFrame([{"X1": 1, "X2": 0, "X3": "1", "X4": 0}])
    assert q.evaluate(data) == 0.5
    whole = qp.FractionQuery(("X1", "X2"), 1, total=10)  # the share of all 10 steps
    assert whole.sensitivity(["X2"]) == 0.1
    assert whole.evaluate(pd.DataFrame([{"X1": 1, "X2": 1}])) == pytest.approx(0.2)
    from quiltpriv.mechanisms.verification import query_from_dict

    assert query_from_dict(q.to_dict()) == q
    for bad in (dict(steps="X1", state="1"), dict(steps=("X1",), state=None),
                dict(steps=("X1", "X2"), state="1", total=1)):
        with pytest.raises(QueryError):
            qp.FractionQuery(**bad)


def _options(**kw):
    from types import SimpleNamespace

    base = dict(query="fraction", attributes=None, records=None, where=None, bounds=None,
                weights=None, state=None)
    return SimpleNamespace(**(base | kw))


def test_fraction_options():
    q = query_from_options(_options(attributes="X1..X5", state="1"))
    assert q.steps == ("X1", "X2", "X3", "X4", "X5") and q.total == 5 and q.state == "1"
    q = query_from_options(_options(attributes="X2..4,X9", state="on", records=20))
    assert q.steps == ("X2", "X3", "X4", "X9") and q.total == 20
    for bad in (_options(attributes="X1..X5"), _options(state="1"),
                _options(attributes="X5..X1", state="1"),
                _options(query="count", attributes="X1", records=1, state="1")):
        with pytest.raises((QueryError, qp.ParameterError)):
            query_from_options(bad)


def test_compare_lists_mqm_on_a_value_network_as_release_computes_it():
    from quiltpriv.mechanisms.registry import build_mechanism

    theta = qp.markov_chain(80, FLIP, [0.5, 0.5])
    q = qp.FractionQuery(theta.nodes, "1")
    c = compare(theta, q, theta.nodes, 1.0)
    row = c["MQM"]
    assert row.applicable
    assert row.scale == build_mechanism("mqm", theta, q, theta.nodes, 1.0).calibration.scale
    # both equal the closed form of the stationary symmetric chain (interior steps bind)
    assert row.scale == pytest.approx(31.737788616 / 80, rel=1e-9)
    assert c["APMQM"].scale == pytest.approx(row.scale, rel=1e-12)


def test_mqm_on_an_hmm_counts_only_the_observations_read():
    from quiltpriv.mechanisms.mqm import markov_quilt_mechanism

    theta = qp.hidden_markov(5, FLIP, [[0.8, 0.2], [0.3, 0.7]], [0.5, 0.5])
    read = [f"X{t}" for t in range(1, 6)]
    got = markov_quilt_mechanism(theta, 1.0, read=read)
    every = markov_quilt_mechanism(theta, 1.0)
    assert got.b_max <= every.b_max
    for ns in got.nodes:
        assert ns.nearby_count == len([v for v in ns.nearby if v in read])
    # the trivial quilt counts the 5 observations, not the 10 nodes
    assert got.b_max <= 5.0 and every.b_max <= 10.0


def test_cli_plans_and_releases_the_fraction_of_time(tmp_path, capsys):
    from quiltpriv.cli import main

    n = 80
    theta = qp.markov_chain(n, FLIP, [0.5, 0.5])
    model = tmp_path / "week.json.gz"
    with gzip.open(model, "wt", encoding="utf-8") as fh:
        json.dump(qp.theta_to_dict(theta), fh)
    steps = ",".join(theta.nodes)
    args = [str(model), "--sensitive", steps, "--epsilon", "1", "--query", "fraction",
            "--state", "1", "--attributes", f"X1..X{n}"]
    assert main(["plan", *args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["optimal"] and d["scale"] == pytest.approx(31.737788616 / n, rel=1e-9)
    data = tmp_path / "series.csv"
    pd.DataFrame([{v: t % 2 for t, v in enumerate(theta.nodes)}]).to_csv(data, index=False)
    for mechanism in ("apmqm", "mqm"):
        assert main(["release", *args, "--data", str(data), "--mechanism", mechanism,
                     "--seed", "3", "--json"]) == 0
        r = json.loads(capsys.readouterr().out)
        # the noise pays for snapping the value to its grid: a little above the plan's scale
        assert 31.737788616 / n <= r["scale"] <= 31.737788616 / n * (1 + 1e-5), mechanism


def test_fraction_evaluate_matches_each_cells_text():
    # the state as given or as its text, missing values never its text (pandas' per-column
    # astype(str), as the query compared them before it read all cells at once)
    df = pd.DataFrame({"a": [1, 0, 2], "b": ["1", "x", None], "c": [1.0, np.nan, 1.5],
                       "d": [True, False, True], "f": ["nan", "None", "1"]})
    values = df.to_numpy(dtype=object)
    for state in ["1", 1, "nan", "None", "<NA>", "True", "1.0", "x", 1.5]:
        q = qp.FractionQuery(list(df.columns), state)
        per_column = ((values == state) | (df.astype(str).to_numpy() == str(state))).mean(0)
        assert q.evaluate(df) == float(per_column.sum() / q.total), state


@pytest.mark.parametrize("model,mechanism", [("chain", "apmqm")])
def test_cli_time_limit_holds_on_a_long_series(tmp_path, model, mechanism):
    # a tiny --time-limit on a long series: a prompt answer (a generous wall-clock bound:
    # the issue asks that the limit hold). It passes while the model is read, so the answer
    # is the refusal naming the limit, status 2, nothing written (issue 36: reading sees the
    # limit; this test expected a flagged plan before, when reading did not look at it)
    import subprocess
    import sys
    import time

    n = 5_000
    theta = (qp.markov_chain(n, FLIP, [0.5, 0.5]) if model == "chain" else
             qp.hidden_markov(n, FLIP, [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5]))
    path = tmp_path / "series.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(qp.theta_to_dict(theta), fh)
    out = tmp_path / "out.json"
    args = [str(path), "--sensitive", "all", "--epsilon", "1", "--query", "fraction",
            "--state", "1", "--attributes", f"X1..X{n}", "--time-limit", "0.001", "--json",
            "-o", str(out)]
    if mechanism == "apmqm":
        cmd = ["plan", *args]
    else:
        data = tmp_path / "trace.csv"
        data.write_text(",".join(f"X{t}" for t in range(1, n + 1)) + "\n"
                        + ",".join("1" if t % 3 else "0" for t in range(n)) + "\n")
        cmd = ["release", *args, "--mechanism", "mqm", "--data", str(data), "--seed", "1"]
    t = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "quiltpriv", *cmd], capture_output=True,
                          text=True, timeout=600, check=False)
    assert time.monotonic() - t < 300, "the time limit was not kept"
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("quiltpriv: error: the time limit of 0.001 s was reached "
                                  f"while reading the model {path} (")
    assert done.stderr.count("\n") == 1 and done.stdout == "" and not out.exists()
