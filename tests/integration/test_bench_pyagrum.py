"""Smoke test of benchmarks/bench_pyagrum.py: correctness only (no timed assertions).

Skipped without pyAgrum (an optional benchmark dependency). Checks that pyAgrum's model holds
Theta's CPDs entry for entry, that the benchmark's Definition 8 agrees with quiltpriv's on
random joints, that both engines agree on asia's queries, and that the report lists every query
an engine could not answer.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pgmpy")  # the networks are the ones pgmpy bundles
gum = pytest.importorskip("pyagrum")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_pyagrum.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_pyagrum", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_pyagrum"] = module
    spec.loader.exec_module(module)
    return module


def test_pyagrum_model_holds_thetas_cpds_exactly(bench):
    theta = bench.read_theta("alarm")
    bn = bench.pyagrum_bn(theta)
    assert bn.size() == len(theta.nodes) and bn.sizeArcs() == len(theta.edges)
    for v in theta.nodes:
        cpt = bn.cpt(v)
        axes = list(reversed(cpt.names))
        ours = theta.members[0][v].table
        got = np.transpose(cpt.toarray(), [axes.index(u) for u in (v, *theta.parents[v])])
        assert np.array_equal(got, ours), v  # float64 entry for entry, not float32


def test_definition8_agrees_with_quiltpriv(bench):
    from quiltpriv.inference.definition8 import _influence_from_joint

    rng = np.random.default_rng(7)
    for _ in range(50):
        shape = (int(rng.integers(2, 4)), *rng.integers(1, 4, size=int(rng.integers(1, 3))))
        joint = rng.random(shape) * (rng.random(shape) > 0.2)
        joint[0] += 1e-3  # keep one value of phi_i possible
        joint /= joint.sum()
        ref = _influence_from_joint(joint)[0]
        got = bench.definition8(joint)
        assert got == ref if math.isinf(ref) else got == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_asia_queries_agree_between_the_engines(bench):
    r = bench.bench_network("asia", n_planner=6, n_random=4, repeat=1, cap=120, memory_gb=0,
                            seed=3, n_shaped=1)
    shaped = 3 * 7  # 1-7 attributes (asia has 8 nodes) x near/far/random
    assert r["queries"] == 10 + shaped and r["answered_by_both"] == 10 + shaped
    assert r["quiltpriv_refused"] == [] and r["pyagrum_failed"] == []
    assert r["under_estimates"] == 0 and r["disagree_infinite"] == 0
    assert r["max_raw_diff"] < 1e-12
    sources = {row["source"] for row in r["rows"]}
    assert sources == {"planner", "random"} | {f"{p}-{k}" for p in bench.PLACEMENTS
                                               for k in range(1, 8)}
    for row in r["rows"]:
        assert set(row["engines"]) == set(bench.ENGINES)
        for answer in row["engines"].values():
            assert row["quiltpriv"]["value"] >= answer["value"] - 1e-12
        best = min(x["t"] for x in row["engines"].values())
        assert row["ratio"] == best / row["quiltpriv"]["t"]
    assert r["worst_query"]["ratio"] == r["ratio_worst"]


def test_shaped_queries_place_the_sensitive_node_as_named(bench):
    theta = bench.read_theta("alarm")
    asked = bench.shaped_queries(theta, np.random.default_rng(5), 2, 5000)
    again = bench.shaped_queries(theta, np.random.default_rng(5), 2, 5000)
    assert asked == again  # seeded
    assert {len(q) for _, _, q in asked} == set(range(1, 9))
    for source, node, q in asked:
        place, k = source.split("-")
        assert len(q) == int(k) and node not in q
        assert math.prod(theta.cardinality[v] for v in (node, *q)) <= 5000
        dist = bench._distances(theta, q)
        others = [dist[v] for v in theta.nodes if v not in q and v in dist]
        if place == "near":
            assert dist[node] == min(others)
        elif place == "far":
            assert dist[node] == max(others)


def test_report_lists_the_queries_an_engine_could_not_answer(bench):
    refused = {"source": "planner", "node": "a", "quilt": ["b", "c"], "joint_entries": 8,
               "quiltpriv": {"refused": "exact elimination needs a factor of 9 entries",
                             "t_refusal": 0.25},
               "pyagrum": {"t": 1.5, "value": 0.1}}
    capped = {"source": "random", "node": "b", "quilt": ["a"], "joint_entries": 4,
              "quiltpriv": {"t": 0.001, "value": 0.2},
              "pyagrum": {"error": "over the cap of 60 s"}}
    result = {"network": "toy", "nodes": 3, "edges": 2, "queries": 3, "answered_by_both": 1,
              "ratio_median": 12.0, "ratio_p10": 11.0, "ratio_worst": 10.0,
              "slower_than_pyagrum": 0, "max_raw_diff": 1e-16, "t_prepare_quiltpriv": 0.01,
              "quiltpriv_refused": [refused], "pyagrum_failed": [capped],
              "under_estimates": 0, "disagree_infinite": 0}
    facts = {"cpu": "cpu", "cores": 2, "ram_gb": 1, "platform": "p", "python": "3",
             "numpy": "2", "loadavg_at_end": (1.0, 1.0, 1.0)}
    settings = {"planner": 1, "random": 1, "repeat": 1, "cap": 60.0, "memory_gb": 6.0,
                "seed": 1, "load_start": (1.0, 1.0, 1.0), "pyagrum_version": "x"}
    text = bench.report([result], facts, [], settings)
    assert "| toy | 3 | 3 | 1 | 12 | 11 | 10 | - | 0 | - | - | 1.0e-16 | 1 | 1 | 0.010 |" in text
    assert ("- toy: e({b, c} | a) (joint of 8 entries): quiltpriv refused after 0.250 s "
            "(exact elimination needs a factor of 9 entries); pyAgrum 1.5000 s") in text
    assert "- toy: e({a} | b) (joint of 4 entries): quiltpriv 0.0010 s; pyAgrum over the cap" \
        in text
