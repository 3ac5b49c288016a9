"""Shared pytest hooks and fixtures.

Fixtures used by test files in several directories live here: the paper's student model (one
member, and the two-member Theta) and a runner of the ``quiltpriv`` command line. Helpers that
are plain functions (brute-force references, the JSON-schema check, fast samples of long
sweeps, the command line's subcommands and options) are modules next to this file
(reference.py, schema_check.py, marks.py, cli_parser.py); pyproject's ``pythonpath`` puts this
directory on ``sys.path``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

import pytest


def _tried_counts() -> dict[str, dict[str, int]]:
    """The TRIED counters of the fuzzing test modules this process ran, by module."""
    out: dict[str, dict[str, int]] = {}
    for name, module in sorted(sys.modules.items()):
        tried = getattr(module, "TRIED", None)
        short = name.split(".")[-1]
        if short.startswith("test_") and isinstance(tried, dict) and tried:
            out[short] = {k: v for k, v in tried.items() if isinstance(v, int)}
    return out


#: Under pytest-xdist, the counts the workers hand back (the controller runs no test).
_WORKER_TRIED: list[dict[str, dict[str, int]]] = []


def pytest_sessionfinish(session):
    # A pytest-xdist worker hands its counts to the controller (workeroutput is JSON-able).
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["quiltpriv_tried"] = _tried_counts()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    # pytest-xdist's controller: a worker finished; keep its counts for the summary.
    tried = getattr(node, "workeroutput", {}).get("quiltpriv_tried")
    if tried:
        _WORKER_TRIED.append(tried)


def pytest_terminal_summary(terminalreporter):
    # Test modules that fuzz inputs keep a TRIED counter; report the totals in every run.
    totals: dict[str, dict[str, int]] = {}
    for counts in (_tried_counts(), *_WORKER_TRIED):
        for module, tried in counts.items():
            mine = totals.setdefault(module, {})
            for k, v in tried.items():
                mine[k] = mine.get(k, 0) + v
    lines = [f"{module}: {sum(tried.values())} hostile cases tried "
             f"({', '.join(f'{k} {v}' for k, v in sorted(tried.items()))})"
             for module, tried in sorted(totals.items())]
    if lines:
        terminalreporter.write_sep("-", "hostile input")
        for line in lines:
            terminalreporter.write_line(line)


# -- models -----------------------------------------------------------------------------------
# Module scope, as each file had it: a Theta caches influences, so a fresh one per test file
# keeps every file's results independent of which other files ran before it.


@pytest.fixture(scope="module")
def student():
    """The student network of [ZOC22, Example 1] (models/student.py), one member."""
    import quiltpriv as qp

    return qp.load_model("student")


@pytest.fixture(scope="module")
def student_theta():
    """The student Theta with two members (``student:theta``): the network and a variant with
    a stronger gender-income tie."""
    import quiltpriv as qp

    return qp.load_model("student:theta")


# -- the command line -------------------------------------------------------------------------


class CliResult(NamedTuple):
    """Exit status and everything the command wrote to stdout and stderr."""

    rc: int
    out: str
    err: str


@pytest.fixture
def cli(capsys) -> Callable[[Sequence[object]], CliResult]:
    """Run ``quiltpriv.cli.main`` in this process on ``argv`` (items passed through ``str``)
    and return ``(rc, out, err)``, the output captured by ``capsys`` since the last read."""
    from quiltpriv.cli import main

    def run(argv: Sequence[object]) -> CliResult:
        rc = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return CliResult(rc, out, err)

    return run


class _AlwaysUnderflows:
    """A compiled network that reports an underflow for every query it computes."""

    def __init__(self, net):
        self.net = net

    def influence(self, *args):
        found = self.net.influence(*args)
        return None if found is None else (*found[:3], True)

    def joint(self, *args):
        code = self.net.joint(*args)
        return 2 if code else 0


@pytest.fixture
def exact_arithmetic(monkeypatch):
    """Settings under which every floating-point query takes the exact-integer path: no static
    underflow bound holds (``safe_log2_floor=1``; pass them as ``settings=``), and the compiled
    kernel (when built) reports an underflow on every query (its networks are wrapped where
    the kernel engine builds them)."""
    from quiltpriv.inference.engines import kernel
    from quiltpriv.inference.engines.base import EngineSettings

    real = kernel._kernel_network
    monkeypatch.setattr(kernel, "_kernel_network", lambda *args: _AlwaysUnderflows(real(*args)))
    return EngineSettings(safe_log2_floor=1)
