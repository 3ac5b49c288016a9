"""Theta from data: planted networks recovered, bootstrap widening, bad inputs named."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.errors import DataError, ModelError, ParameterError
from quiltpriv.model.builder import NetworkBuilder
from quiltpriv.model.learning import _bdeu_tables, discretise
from quiltpriv.model.network import Theta
from quiltpriv.model.provenance import data_sha256

ROOT = Path(__file__).resolve().parents[2]
EDGES3 = [0.0, 1 / 3, 2 / 3, 1.0]
STRONG = {0.2: [0.8, 0.15, 0.05], 0.5: [0.1, 0.8, 0.1], 0.8: [0.05, 0.15, 0.8]}


def planted() -> Theta:
    """a -> b -> c and a -> d, every parameter a share in {0.2, 0.5, 0.8}."""
    b = NetworkBuilder("planted")
    for v in "abcd":
        b.attribute(v, [0.2, 0.5, 0.8], kind="share")
    b.edges([("a", "b"), ("b", "c"), ("a", "d")])
    b.table("a", [0.3, 0.4, 0.3])
    for v in "bcd":
        b.table(v, STRONG)
    return b.to_theta()


def sample_populations(theta: Theta, n: int, seed: int) -> pd.DataFrame:
    """``n`` populations: ancestral samples of the states, each blurred within its bin."""
    rng = np.random.default_rng(seed)
    member = theta.members[0]
    codes: dict[str, np.ndarray] = {}
    out = {}
    for v in theta.nodes:
        table = member[v].table
        col = np.empty(n, dtype=int)
        for i in range(n):
            p = table[(slice(None),) + tuple(codes[q][i] for q in theta.parents[v])]
            col[i] = rng.choice(len(p), p=p)
        codes[v] = col
        values = np.array([float(s) for s in theta.states[v]])
        out[v] = values[col] + rng.uniform(-0.1, 0.1, n)
    return pd.DataFrame(out)


SHARES = {v: "share" for v in "abcd"}
BINS = {v: EDGES3 for v in "abcd"}


def skeleton(edges) -> set[frozenset[str]]:
    return {frozenset(e) for e in edges}


@pytest.mark.parametrize("method", ["hill_climb", "pc"])
def test_learner_recovers_a_planted_network(method):
    truth = planted()
    data = sample_populations(truth, 300, seed=1)
    theta = qp.learn_theta(data, SHARES, bins=BINS, method=method)
    assert skeleton(theta.edges) == skeleton(truth.edges)
    # Bins 0-1/3-2/3-1 have midpoints 1/6, 1/2, 5/6.
    assert theta.states["a"] == ("0.1666666667", "0.5", "0.8333333333")
    # The learned tables are close to the planted ones where the edge kept its direction.
    if ("a", "b") in theta.edges:
        assert np.allclose(theta.members[0]["b"].table, truth.members[0]["b"].table, atol=0.1)


def test_learning_is_deterministic_across_hash_seeds():
    """pgmpy breaks score ties in set order; the learner hands it integers, so the DAG and the
    tables do not depend on the process's string hash seed. (With the names themselves, pgmpy's
    hill climbing returns d -> a under hash seed 1 and a -> d under hash seed 2 on these data.)
    """
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
            f"sys.path.insert(0, {str(ROOT / 'tests' / 'model')!r})\n"
            "import warnings; warnings.simplefilter('ignore')\n"
            "from test_learning import *\n"
            # symmetric data: a <-> b ties exactly under the score-equivalent BDeu
            "d = sample_populations(planted(), 60, seed=3)\n"
            "t = qp.learn_theta(d, SHARES, bins=BINS, n_bootstrap=2, seed=5)\n"
            "print(t.fingerprint(), sorted(t.edges))\n")
    # Both interpreters start at once (~2.5 s each, mostly importing pgmpy): half the wait.
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT,
                              env={"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin"})
             for hash_seed in ("1", "2")]
    outs = set()
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            outs.add(out)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    assert len(outs) == 1


def test_required_and_forbidden_edges_are_honoured():
    data = sample_populations(planted(), 300, seed=2)
    free = qp.learn_theta(data, SHARES, bins=BINS)
    assert frozenset(("b", "c")) in skeleton(free.edges)
    theta = qp.learn_theta(data, SHARES, bins=BINS, required_edges=[("d", "c")],
                           forbidden_edges=[("b", "c"), ("c", "b")])
    assert ("d", "c") in theta.edges
    assert frozenset(("b", "c")) not in skeleton(theta.edges)
    s = theta.provenance["structure"]
    assert [list(e) for e in s["required_edges"]] == [["d", "c"]]
    for method in ("hill_climb", "pc"):
        t = qp.learn_theta(data, SHARES, bins=BINS, method=method, required_edges=[("c", "b")])
        assert ("c", "b") in t.edges and ("b", "c") not in t.edges


def test_max_indegree_bounds_the_parents():
    data = sample_populations(planted(), 300, seed=4)
    theta = qp.learn_theta(data, SHARES, bins=BINS, max_indegree=0)
    assert theta.edges == ()
    theta = qp.learn_theta(data, SHARES, bins=BINS, max_indegree=1)
    assert max(len(p) for p in theta.parents.values()) <= 1


def test_tables_are_pgmpys_bdeu_posterior_and_never_zero():
    """The learner's tables equal pgmpy's BayesianEstimator (BDeu) on the same DAG and data."""
    from pgmpy.estimators import BayesianEstimator
    from pgmpy.models import DiscreteBayesianNetwork

    rng = np.random.default_rng(7)
    for trial in range(5):
        cards = [2, 3, 4]
        n = 30 + 20 * trial
        codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
        codes[:, 2] = np.minimum(codes[:, 2], 2)  # state 3 of node 2 never seen
        parents = {0: [], 1: [0], 2: [0, 1]}
        ess = float(rng.uniform(0.5, 10))
        ours = _bdeu_tables(codes, cards, parents, ess)
        frame = pd.DataFrame({f"n{k}": codes[:, k] for k in range(3)})
        net = DiscreteBayesianNetwork([("n0", "n1"), ("n0", "n2"), ("n1", "n2")])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = BayesianEstimator(net, frame, state_names={f"n{k}": list(range(c))
                                                               for k, c in enumerate(cards)})
            for k in range(3):
                cpd = est.estimate_cpd(f"n{k}", prior_type="BDeu", equivalent_sample_size=ess)
                evidence = [f"n{p}" for p in parents[k]]
                assert list(cpd.variables[1:]) == evidence
                assert np.allclose(ours[k].reshape(cards[k], -1), cpd.get_values(),
                                   rtol=1e-12, atol=0)
        assert all((t > 0).all() for t in ours.values())
        assert (ours[2][3] > 0).all()  # the unseen state is possible


def test_bootstrap_members_widen_influences():
    data = sample_populations(planted(), 120, seed=5)
    boot = qp.learn_theta(data, SHARES, bins=BINS, n_bootstrap=15, seed=11)
    point = qp.learn_theta(data, SHARES, bins=BINS)
    assert len(boot) == 16 and len(point) == 1
    assert boot.edges == point.edges
    # The first member is the point estimate, unchanged.
    for v in point.nodes:
        assert np.array_equal(boot.members[0][v].table, point.members[0][v].table)
    widened = 0
    for node in boot.nodes:
        for other in boot.nodes:
            if other == node:
                continue
            e_point = qp.max_influence(point, node, [other]).value
            e_boot = qp.max_influence(boot, node, [other]).value
            assert e_boot >= e_point
            widened += e_boot > e_point + 0.05
            # Each member's own influence is below the max, and they differ from each other.
            per_member = [qp.max_influence(Theta(boot.nodes, boot.states, boot.parents, [m]),
                                           node, [other]).value for m in boot.members]
            assert max(per_member) == pytest.approx(e_boot, rel=1e-9)
    assert widened >= 6  # a non-trivial spread, not ulps
    # Same seed, same Theta; another seed, other members.
    again = qp.learn_theta(data, SHARES, bins=BINS, n_bootstrap=15, seed=11)
    assert again.fingerprint() == boot.fingerprint()
    other = qp.learn_theta(data, SHARES, bins=BINS, n_bootstrap=15, seed=12)
    assert other.fingerprint() != boot.fingerprint()


def test_record_level_data_with_a_population_column():
    pops = sample_populations(planted(), 40, seed=6)
    rng = np.random.default_rng(0)
    rows = []
    for k, row in pops.iterrows():
        size = 200
        rec = {v: (rng.random(size) < np.clip(row[v], 0, 1)).astype(int) for v in "abcd"}
        rec["score"] = rng.normal(500 + 100 * row["a"], 30, size)
        rec["school"] = f"s{k:03d}"
        rows.append(pd.DataFrame(rec))
    records = pd.concat(rows, ignore_index=True)
    params = {**SHARES, "score": "mean"}
    table = qp.population_parameters(records, "school", params)
    assert len(table) == 40 and list(table.columns) == list(params)
    first = records[records.school == "s000"]
    assert table.loc["s000", "a"] == first["a"].mean()
    assert table.loc["s000", "score"] == pytest.approx(first["score"].mean())
    theta = qp.learn_theta(records, params, population="school", bins=BINS, quantiles=3)
    prov = theta.provenance
    assert prov["data_layout"] == "records" and prov["populations"] == 40
    assert prov["data_rows"] == len(records)
    assert prov["data_sha256"] == data_sha256(records)
    assert prov["parameters"]["score"]["binning"] == "quantile"
    assert prov["parameters"]["a"]["binning"] == "declared"
    # Quantile bins of a mean span the data's range; of a share, [0, 1].
    assert prov["parameters"]["score"]["edges"][0] == table["score"].min()


def test_provenance_reaches_the_plan_the_report_and_json():
    from quiltpriv.reporting.report import audit_report

    data = sample_populations(planted(), 80, seed=8)
    theta = qp.learn_theta(data, SHARES, bins=BINS, n_bootstrap=3, seed=4)
    query = qp.CountQuery(["c"], records=50, where="c > 0")
    plan = qp.plan(theta, query, "a", 1.0)
    d = plan.to_dict()
    prov = d["provenance"]
    assert prov["source"] == "learned"
    assert prov["data_sha256"] == data_sha256(data)
    assert prov["bootstrap"] == {"resamples": 3, "unit": "population", "seed": 4}
    assert prov["parameters"]["a"]["edges"] == EDGES3
    assert prov["structure"]["method"] == "hill_climb"
    json.dumps(d, allow_nan=False)
    report = audit_report(theta, query, plan)
    assert report.to_dict()["model"]["provenance"]["data_sha256"] == prov["data_sha256"]
    assert prov["data_sha256"] in report.html
    # The data themselves are not in the record.
    assert str(data.iloc[0, 0]) not in json.dumps(d)


def test_data_hash_is_canonical():
    df = pd.DataFrame({"b": [0.1, 0.2], "a": [1, 2]})
    assert data_sha256(df) == data_sha256(df[["a", "b"]])
    assert data_sha256(df) != data_sha256(df.iloc[::-1])
    changed = df.copy()
    changed.loc[0, "b"] = 0.1 + 1e-16
    assert data_sha256(changed) != data_sha256(df)


def test_discretise_assigns_bins_and_refuses_out_of_range():
    df = pd.DataFrame({"x": [0.0, 0.32, 1 / 3, 0.5, 1.0]})
    codes, bins = discretise(df, {"x": "share"}, bins={"x": EDGES3})
    assert codes["x"].tolist() == [0, 0, 1, 1, 2]
    assert bins["x"].values == (0.1666666667, 0.5, 0.8333333333)
    with pytest.raises(DataError, match=r"parameter 'm': 1 value\(s\) outside the declared "
                                        r"bins \[0, 10\] \(e.g. 11\)"):
        discretise(pd.DataFrame({"m": [1.0, 11.0]}), {"m": "mean"}, bins={"m": [0, 5, 10]})


def _pops(n=20):
    return sample_populations(planted(), n, seed=9)


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(parameters={"a": "share", "zz": "share"}, bins={"a": EDGES3, "zz": EDGES3}),
     DataError, r"the population table has no column 'zz'"),
    (dict(parameters={"a": "share", "b": "share"}, bins={"a": EDGES3}), ParameterError,
     r"parameter 'b' has no declared bins"),
    (dict(parameters={"a": "share"}, bins={"a": EDGES3, "q": EDGES3}), ParameterError,
     r"bins given for 'q', which are not parameters"),
    (dict(parameters={"a": "share"}, bins={"a": [0, 0.5, 0.4, 1]}), ParameterError,
     r"bins of 'a': edges must increase strictly"),
    (dict(parameters={"a": "share"}, bins={"a": [0, 0.5, 2]}), ParameterError,
     r"bins of 'a': a share's edges lie in \[0, 1\]"),
    (dict(parameters={"a": "proportion"}, bins={"a": EDGES3}), ParameterError,
     r"parameter 'a': kind must be one of"),
    (dict(parameters={"a": "share"}, quantiles=1), ParameterError, r"quantiles must be"),
    (dict(parameters=SHARES, bins=BINS, method="greedy"), ParameterError, r"method must be"),
    (dict(parameters=SHARES, bins=BINS, required_edges=[("a", "q")]), ParameterError,
     r"required_edges: edge 'a' -> 'q' names 'q', which is not a parameter"),
    (dict(parameters=SHARES, bins=BINS, required_edges=[("a", "b")],
          forbidden_edges=[("a", "b")]), ParameterError, r"both required and forbidden"),
    (dict(parameters=SHARES, bins=BINS, max_indegree=-1), ParameterError,
     r"max_indegree must be an integer >= 0"),
    (dict(parameters=SHARES, bins=BINS, n_bootstrap=2.5), ParameterError,
     r"n_bootstrap must be an integer"),
    (dict(parameters=SHARES, bins=BINS, equivalent_sample_size=0), ParameterError,
     r"equivalent_sample_size must be > 0"),
])
def test_bad_settings_are_named(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        qp.learn_theta(_pops(), **kwargs)


def test_bad_data_are_named():
    pops = _pops()
    text = pops.astype(object)
    text.loc[3, "b"] = "high"
    with pytest.raises(DataError, match=r"column 'b' is not numeric \(e.g. 'high'\)"):
        qp.learn_theta(text, SHARES, bins=BINS)
    missing = pops.copy()
    missing.loc[2, "c"] = np.nan
    with pytest.raises(DataError, match=r"column 'c' has 1 missing, NaN or infinite"):
        qp.learn_theta(missing, SHARES, bins=BINS)
    percent = pops.copy()
    percent["d"] *= 100
    with pytest.raises(DataError, match=r"share 'd' has \d+ value\(s\) outside \[0, 1\].*"
                                        r"divide percentages by 100"):
        qp.learn_theta(percent, SHARES, bins=BINS)
    with pytest.raises(DataError, match=r"9 population\(s\): at least 10 are needed"):
        qp.learn_theta(pops.iloc[:9], SHARES, bins=BINS)
    with pytest.raises(DataError, match="must be a pandas DataFrame"):
        qp.learn_theta(pops.to_numpy(), SHARES, bins=BINS)
    flat = pd.DataFrame({"a": [0.5] * 12, "b": np.linspace(0, 1, 12)})
    with pytest.raises(DataError, match=r"'a': 3 quantile bins collapse"):
        qp.learn_theta(flat, {"a": "mean", "b": "share"}, quantiles=3)


def test_bad_record_tables_are_named():
    records = pd.DataFrame({"school": ["x", "x", "y"], "a": [0, 1, 2], "m": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError, match=r"share column 'a' must hold 0/1 values.*found 2"):
        qp.population_parameters(records, "school", {"a": "share"})
    with pytest.raises(DataError, match=r"no population column 'district'"):
        qp.population_parameters(records, "district", {"m": "mean"})
    table = qp.population_parameters(records, "school", {"m": "mean"})
    assert table["m"].tolist() == [1.5, 3.0]


def test_pc_refuses_nothing_silently_on_cyclic_requirements():
    with pytest.raises(ModelError, match="structure learning failed"):
        qp.learn_theta(_pops(40), SHARES, bins=BINS,
                       required_edges=[("a", "b"), ("b", "c"), ("c", "a")])


def _wide(n: int, rows: int = 12, seed: int = 0) -> pd.DataFrame:
    """``rows`` populations of ``n`` shares that all follow one common level (so hill climbing
    finds many improving edges)."""
    rng = np.random.default_rng(seed)
    level = rng.uniform(0.1, 0.9, size=(rows, 1))
    x = np.clip(level + rng.normal(0.0, 0.15, size=(rows, n)), 0.0, 1.0)
    return pd.DataFrame(x, columns=[f"q{i}" for i in range(n)])


def _wide_args(frame: pd.DataFrame) -> dict:
    return dict(parameters={c: "share" for c in frame.columns},
                bins={c: [0.0, 0.5, 1.0] for c in frame.columns}, data_public=True)


def test_a_hundred_shares_learn_under_a_time_limit_flagged_if_stopped():
    frame = _wide(100)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        theta = qp.learn_theta(frame, **_wide_args(frame), time_limit=1.0)
    assert len(theta.nodes) == 100
    s = theta.provenance["structure"]
    assert s["time_limit"] == 1.0 and s["evaluation_budget"] == 5_000_000
    stopped = [w for w in caught if issubclass(w.category, qp.SearchStoppedWarning)]
    # Either outcome is allowed (it depends on the machine's speed), but it must be said.
    if s["search_end"] == "local_optimum":
        assert not stopped
    else:
        assert s["search_end"] == "time_limit"
        assert len(stopped) == 1 and "not a local optimum" in str(stopped[0].message)
    assert all(e[0] in theta.nodes and e[1] in theta.nodes for e in s["learned_edges"])


def test_a_spent_time_limit_returns_the_empty_start_flagged():
    frame = _wide(30)
    with pytest.warns(qp.SearchStoppedWarning, match=r"stopped by the time limit \(1e-09 s\)"):
        theta = qp.learn_theta(frame, **_wide_args(frame), time_limit=1e-9)
    s = theta.provenance["structure"]
    assert s["search_end"] == "time_limit" and len(s["learned_edges"]) == 0


def test_the_work_budget_stops_with_the_best_dag_so_far(monkeypatch):
    """A budget that runs out in the third step (30 nodes: 870 candidate moves in the first
    step, 869 in the second, whose undo of the first is tabu) keeps the first two steps'
    edges: the same as two unbounded steps (max_iter=2), which are deterministic."""
    import quiltpriv.model.learning as learning

    frame = _wide(30)
    with pytest.warns(qp.SearchStoppedWarning, match=r"max_iter \(2 steps\)"):
        two = qp.learn_theta(frame, **_wide_args(frame), max_iter=2, time_limit=None)
    s2 = two.provenance["structure"]
    assert s2["search_end"] == "max_iter" and len(s2["learned_edges"]) == 2
    assert s2["score_evaluations"] == 870 + 869
    monkeypatch.setattr(learning, "MAX_SCORE_EVALUATIONS", 870 + 869 + 100)
    with pytest.warns(qp.SearchStoppedWarning, match=r"work budget \(1,839 score evaluations"):
        theta = qp.learn_theta(frame, **_wide_args(frame), time_limit=None)
    s = theta.provenance["structure"]
    assert s["search_end"] == "evaluation_budget" and s["score_evaluations"] == 1839
    assert s["learned_edges"] == s2["learned_edges"]


def test_over_the_hard_bounds_is_refused_in_one_line():
    frame = _wide(301)
    with pytest.raises(ParameterError, match=r"^301 parameters; learning a network is bounded "
                                             r"to 300$"):
        qp.learn_theta(frame, **_wide_args(frame))
    frame = _wide(41)
    with pytest.raises(ParameterError, match=r"^41 parameters; the PC algorithm is bounded to "
                                             r"40 \(use method='hill_climb'"):
        qp.learn_theta(frame, **_wide_args(frame), method="pc")


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "5", True])
def test_bad_time_limits_are_named(bad):
    with pytest.raises(ParameterError, match="time_limit must be a number of seconds > 0"):
        qp.learn_theta(_pops(), SHARES, bins=BINS, time_limit=bad)
