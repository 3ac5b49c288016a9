"""benchmarks/measure.py reports a command's own peak memory, not its parent's.

On Linux the kernel folds the peak RSS of the memory image a process leaves at ``exec`` into
the new program's ``ru_maxrss``; ``subprocess`` children start from the parent's image, so a
benchmark that once held a large result made every later child report at least that much (the
ladder benchmark's chain rows read 199 MB at every size). These tests make the parent large
first, then check both measurements a benchmark uses.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARENT_MB = 256

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(),
                                reason="VmHWM is read from /proc (Linux)")


@pytest.fixture(scope="module")
def measure():
    spec = importlib.util.spec_from_file_location("bench_measure",
                                                  ROOT / "benchmarks" / "measure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def grown(measure):
    """Raise this process's peak RSS by PARENT_MB (touched, then freed)."""
    block = bytearray(PARENT_MB * 2**20)
    block[::4096] = b"x" * len(block[::4096])
    del block
    assert measure.peak_rss_mb() >= PARENT_MB
    return PARENT_MB


def test_the_kernel_behaviour_this_guards_against(grown):
    # ru_maxrss of a child started directly: at least the parent's peak (so it is unusable).
    out = subprocess.run([sys.executable, "-c", "import resource; print(resource.getrusage("
                          "resource.RUSAGE_SELF).ru_maxrss / 1024)"],
                         capture_output=True, text=True, check=True).stdout
    if float(out) < grown:
        pytest.skip("this kernel does not carry the parent's peak across exec")


def test_a_worker_reads_its_own_peak(measure, grown):
    code = measure.PEAK_RSS_SOURCE + (
        "b = bytearray(64 * 2**20); b[::4096] = b'x' * len(b[::4096])\n"
        "print(peak_rss_mb())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert 64 <= float(out) < grown  # its own 64 MB and the interpreter, not the parent's


def test_a_command_measured_through_the_launcher(measure, grown):
    m = measure.run_measured([sys.executable, "-c",
                              "b = bytearray(64 * 2**20); b[::4096] = b'x' * len(b[::4096]);"
                              "print('done')"])
    assert m.returncode == 0 and not m.killed and m.stdout == b"done\n"
    assert 64 <= m.rss_mb < grown
    assert 0 < m.rss_floor_mb < 64 and m.cpu_s > 0 and m.wall_s > 0


def test_exit_status_and_the_timeout(measure):
    assert measure.run_measured([sys.executable, "-c", "raise SystemExit(3)"]).returncode == 3
    m = measure.run_measured([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert m.killed and m.returncode == -9 and m.wall_s < 30
