"""Smoke test of benchmarks/bench_compare_records.py: correctness only (no timed assertions)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_compare_records.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_compare_records", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # ~5 s of CPU: two command-line runs and the exact rationals
def test_one_size_agrees_across_paths(bench):
    # n = 300: the command and the function use the certified laws, the reference the exact
    # rationals; all three give the same W, and the audit of the resulting scale meets eps.
    row = bench.bench(300, "sat", repeat=1, timeout=300, exact_up_to=300)
    assert row["compare_cmd"]["rc"] == 0 and row["audit_cmd"]["rc"] == 0
    w = row["wasserstein"]
    assert w["arithmetic"] == "certified float64" and w["exact"]
    assert w["W"] == row["exact_rationals"]["W"] == row["wasserstein_scale_cmd"]
    assert row["audit_cmd"]["verdict"] == row["audit"]["verdict"] == "MET"
    assert row["audit"]["loss_lower"] <= row["audit"]["loss"] <= 1.0
    facts = {"date": "d", "cpu": "c", "cores": 2, "ram_gb": 1, "platform": "p", "python": "3",
             "numpy": "2", "pgmpy": "1", "code": "x"}
    text = bench.report([row], facts, [], "up", "up")
    assert "sat" in text and "MET" in text
