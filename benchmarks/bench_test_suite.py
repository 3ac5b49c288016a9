"""The test suite's size and run time, measured (the README's figures are generated from it).

Counts the default and the slow tests as pytest collects them (``pytest --co -q``, and with
``-m slow``), then, unless ``--count-only``, times one run of the default tests in a fresh
process with each ``-n`` given (``--workers 2,auto``; pytest-xdist), recording the wall time,
whether every test passed, the machine and its load average at the start and the end. The
README's sentence on the test suite is generated from the newest results file by
``benchmarks/readme_table.py``, so it names a measured run instead of figures typed by hand.

    python benchmarks/bench_test_suite.py                       # writes results/test-suite-DATE
    python benchmarks/bench_test_suite.py --count-only --out /tmp/counts
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_core import code_version, machine_facts, write_results  # noqa: E402

_COLLECTED = re.compile(r"^(\d+)(?:/\d+)? tests? (?:collected|selected)", re.MULTILINE)
_PASSED = re.compile(r"(\d+) passed")


def collected(*marks: str) -> int:
    """How many tests pytest collects with these extra arguments (e.g. ``-m slow``)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", *marks], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    found = _COLLECTED.findall(out)
    if not found:  # pytest -q prints "N tests collected" (or "N/M tests collected" when marked)
        raise RuntimeError(f"could not read pytest's count from: {out[-300:]!r}")
    return int(found[-1])


def timed_run(workers: str) -> dict[str, Any]:
    """One run of the default tests with ``-n workers`` in a fresh process."""
    load = os.getloadavg()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", workers, "-p",
                           "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    passed = _PASSED.search(tail)
    return {"workers": workers, "wall_s": round(wall, 1), "returncode": done.returncode,
            "passed": int(passed[1]) if passed else None, "summary": tail,
            "load_average": [list(load), list(os.getloadavg())]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="2,auto", help="comma-separated -n values timed")
    ap.add_argument("--count-only", action="store_true", help="count, do not run")
    ap.add_argument("--out", help="write OUT.txt and OUT.json")
    args = ap.parse_args(argv)
    code = code_version()
    counts = {"default": collected(), "slow": collected("-m", "slow")}
    runs = [] if args.count_only else [timed_run(w) for w in args.workers.split(",")]
    lines = [f"# the test suite (benchmarks/bench_test_suite.py); code {code}",
             f"machine: {machine_facts()}",
             f"collected: {counts['default']:,} default tests, {counts['slow']:,} slow tests"]
    lines += [f"-n {r['workers']}: {r['wall_s']} s wall, {r['summary']} (load average "
              f"{r['load_average'][0][0]:.2f} at the start, {r['load_average'][1][0]:.2f} at "
              "the end)" for r in runs]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    write_results("test-suite", args.out, args.count_only and args.out is None, text,
                  {"machine": machine_facts(), "code": code, "counts": counts, "runs": runs})
    return 0 if all(r["returncode"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
