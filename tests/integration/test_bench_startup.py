"""Smoke test of benchmarks/bench_startup.py: it runs and reports (no timed assertions)."""

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("pgmpy")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_startup.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_startup", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_startup"] = module
    spec.loader.exec_module(module)
    return module


def test_read_worker_reads_what_load_model_reads(bench):
    import quiltpriv as qp

    row = bench.read_worker("asia", 1, with_pgmpy=False, with_pyagrum=False)
    assert row["network"] == "asia" and row["nodes"] == 8 and row["quiltpriv_s"] > 0
    assert row["bytes"] > 1000
    assert len(qp.load_model(bench.bif_path("asia")).nodes) == row["nodes"]


def test_commands_run_and_the_report_names_the_targets(bench):
    cmds = bench.commands(quick=True)
    labels = [label for label, _, _ in cmds]
    assert labels[:2] == ["python -c pass", "import numpy"]
    assert "quiltpriv --help" in labels and "quiltpriv plan asia" in labels
    # One timed round of the two cheapest commands, through the real subprocess path.
    proc = bench.time_processes({"this tree": bench.ROOT}, cmds[:2], runs=1, munin_runs=0)
    assert set(proc["this tree"]) == {"python -c pass", "import numpy"}
    fake = {label: {"median_s": 0.1 * (k + 1), "min_s": 0.1, "max_s": 1.0, "runs": 1}
            for k, label in enumerate(labels)}
    reading = [{"network": "asia", "bytes": 1074, "nodes": 8, "quiltpriv_s": 0.001,
                "pyagrum_s": 0.002, "pgmpy_s": 1.5}]
    facts = {"cpu": "cpu", "cores": 2, "ram_gb": 1, "platform": "p", "python": "3",
             "numpy": "2", "pgmpy": "1", "loadavg_at_end": (1.0, 1.0, 1.0)}
    text = bench.report({"this tree": fake}, reading, facts, [], (1.0, 1.0, 1.0))
    assert "`quiltpriv --help` / `import numpy`: 2.00 (target <= 2)" in text
    assert "| asia | 8 | 0.00 | 0.0010 |" in text and "| 2.00 | 1.50 | 1500 |" in text
