"""Smoke test of benchmarks/bench_core.py: correctness only (no timed assertions).

The benchmark compares quiltpriv's influences with pgmpy's VariableElimination; here we check
that, on asia and alarm in quick mode, the two agree to 1e-9 once quiltpriv's deliberate upward
margin is taken off, that quiltpriv never comes out below VE, and that the plans are exact.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from marks import fast_sample

from quiltpriv.inference.influence import ROUNDING_MARGIN, max_influence
from quiltpriv.model.network import theta_from_pgmpy

pytest.importorskip("pgmpy")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_core.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_core", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_core"] = module
    spec.loader.exec_module(module)
    return module


def test_definition8_reference_by_hand(bench):
    # P(q|a=0) = (.6, .4), P(q|a=1) = (.2, .8): max(log .6/.2, log .8/.4) = log 3.
    assert bench.definition8(np.array([[0.3, 0.2], [0.1, 0.4]])) == pytest.approx(math.log(3))
    # q = 1 is possible under a = 1 and impossible under a = 0.
    assert bench.definition8(np.array([[0.5, 0.0], [0.2, 0.3]])) == math.inf
    # A value of phi_i with probability 0 is not compared.
    assert bench.definition8(np.array([[0.0, 0.0], [0.5, 0.5]])) == 0.0
    # Three quilt states, three values: the largest ratio is column 2, (0.5/0.1).
    joint = np.array([[0.2, 0.3, 0.5], [0.3, 0.3, 0.4], [0.45, 0.45, 0.1]]) / 3
    assert bench.definition8(joint) == pytest.approx(math.log(5))


def test_asia_every_pair_agrees_with_variable_elimination(bench):
    from pgmpy.inference import VariableElimination

    model = bench.read_pgmpy(bench.read_text("asia"))
    theta = theta_from_pgmpy(model, ["asia"])
    for cpd in model.get_cpds():
        cpd.normalize(inplace=True)
    ve = VariableElimination(model)
    checked = 0
    for node in theta.nodes:
        others = [v for v in theta.nodes if v != node]
        for k in (1, 2):
            for q in combinations(others, k):
                ours = max_influence(theta, node, q).value
                ref = bench.ve_influence(ve, node, theta.sort(q))
                if math.isinf(ref):
                    assert ours == math.inf
                else:
                    assert ours >= ref - bench.UNDER_TOLERANCE
                    assert ours <= ref * (1 + ROUNDING_MARGIN) + ROUNDING_MARGIN + 1e-12
                checked += 1
    assert checked == 8 * (7 + 21)


# alarm is slow (~1.2 s): asia runs the same code by default.
@pytest.mark.parametrize("name", fast_sample(["asia", "alarm"], 1))
def test_bench_network_quick_is_correct(bench, name):
    res = bench.bench_network(name, quick=True)
    assert res["plan_all"]["optimal"]
    assert res["plan_all"]["optimal_nodes"] == res["plan_all"]["sensitive"] == res["nodes"]
    assert res["plan_one"]["optimal"]
    infl = res["influence"]
    assert infl["skipped"] == 0
    assert infl["timed"] == infl["pairs"] >= 4
    assert infl["under_estimates"] == 0
    assert infl["max_raw_diff"] <= 1e-9
    for row in infl["rows"]:
        assert row["raw_diff"] <= 1e-9, row
    # Quilts sampled from the plan really are the ones the planner evaluated.
    assert any(r["source"] == "planner" for r in infl["rows"])
    json.dumps(res)  # the worker's payload must serialise


@pytest.mark.slow  # ~4 s of CPU: the files it writes (the computation is checked above)
def test_cli_writes_results(bench, tmp_path):
    out = tmp_path / "core"
    assert bench.main(["--networks", "asia", "--quick", "--out", str(out)]) == 0
    payload = json.loads((tmp_path / "core.json").read_text())
    assert [r["network"] for r in payload["results"]] == ["asia"]
    assert payload["machine"]["pgmpy"]
    text = (tmp_path / "core.txt").read_text()
    assert "asia" in text and "targets:" in text


def test_bench_scale_quick_asia_correctness_only():
    """benchmarks/bench_scale.py on asia, quick: fast and core planners agree, every plan is
    proven optimal, influences agree with VE (margin removed) and never fall below it."""
    path = BENCH.parent / "bench_scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = module
    spec.loader.exec_module(module)
    res = module.bench_network("asia", quick=True, seed=2024, repeat=1)
    assert len(res["plans"]) == 3  # eps 0.5, 1, 2
    for p in res["plans"]:
        cmp = p["core_vs_fast"]
        assert cmp["higher"] == 0 and cmp["equal"] == cmp["sensitive"] == 8
        assert p["optimal_nodes"] == 8 and cmp["core_optimal"] == 8
    for label, summary in res["influence"]["methods"].items():
        assert summary["under_estimates"] == 0, label
        assert summary["max_raw_diff"] <= 1e-9, label
        assert summary["timed"] >= 10, label
