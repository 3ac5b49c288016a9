"""``--time-limit`` while the model is read (issue 36): every command that has the option
reads its model within the limit, counted from the command's start, and a limit that passes
while it is read ends the command with one line naming the limit, exit status 2, nothing
written. A limit that passes after reading still gives the flagged plan.

No test sleeps: the command's start is moved into the past (its clock is the ``time`` module
of ``quiltpriv.cli``, read once when the command starts).
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

import quiltpriv.cli as cli
import quiltpriv.cli.core as core
from quiltpriv.cli import main

COUNT = ["--sensitive", "income", "--attributes", "sat", "--records", "8", "--epsilon", "1"]


@pytest.fixture
def started_long_ago(monkeypatch):
    """Commands start 1,000 s in the past: any --time-limit below that has passed."""
    real = time.monotonic
    monkeypatch.setattr(cli, "time", SimpleNamespace(monotonic=lambda: real() - 1000.0))


def _commands(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("sat,income\n1400,0.2\n1200,0.35\n")
    plan = tmp_path / "plan.json"
    assert main(["plan", "student", *COUNT, "--json", "-o", str(plan)]) == 0
    return {
        "plan": ["plan", "student", *COUNT, "--json"],
        "release": ["release", "student", *COUNT, "--where", "sat > 1300", "--data",
                    str(data), "--seed", "3"],
        "quilts": ["quilts", "student", "--node", "income"],
        "report": ["report", "student", *COUNT, "--where", "sat > 1300"],
        "verify": ["verify", str(plan), "student"],
        "verify --plan-model": ["verify", str(plan), "example3", "--plan-model", "student"],
        "audit": ["audit", "student", *COUNT, "--scale", "900"],
        "compare": ["compare", "student", *COUNT],
    }


@pytest.mark.parametrize("command", ["plan", "release", "quilts", "report", "verify",
                                     "verify --plan-model", "audit", "compare"])
def test_a_limit_passed_while_reading_is_a_one_line_refusal(tmp_path, capsys,
                                                            monkeypatch, command):
    argv = _commands(tmp_path)[command]
    real = time.monotonic
    monkeypatch.setattr(cli, "time", SimpleNamespace(monotonic=lambda: real() - 1000.0))
    capsys.readouterr()
    out = tmp_path / "out.file"
    written = [] if argv[0] in ("quilts", "verify") else ["-o", str(out)]  # no -o there
    assert main([*argv, "--time-limit", "2", *written]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("quiltpriv: error: the time limit of 2 s was reached while "
                               "reading the model "), lines[0]
    assert not out.exists()  # nothing written, not even part of a file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "plan.json"]


def test_a_limit_passed_after_reading_gives_the_flagged_plan(tmp_path, monkeypatch):
    # reading done within the limit, the search starting past it: the plan stays private
    # with the trivial quilt, flagged, exit status 0 (docs/cli.md)
    real_load = core.load_theta
    monkeypatch.setattr(core, "load_theta",
                        lambda specs, **kw: real_load(specs, **{**kw, "time_limit": None}))
    real = time.monotonic
    monkeypatch.setattr(cli, "time", SimpleNamespace(monotonic=lambda: real() - 1000.0))
    out = tmp_path / "plan.json"
    assert main(["plan", "student", *COUNT, "--time-limit", "2", "--json", "-o", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["optimal"] is False
    assert any("the time limit of 2 s was reached" in note for note in d["notes"]), d["notes"]


def test_no_limit_and_a_running_limit_read_the_model(tmp_path, started_long_ago):
    # --time-limit none never refuses; a limit longer than the time since the start reads
    for limit in ("none", "3600"):
        out = tmp_path / f"plan-{limit}.json"
        assert main(["plan", "student", *COUNT, "--time-limit", limit, "--json", "-o",
                     str(out)]) == 0
        assert json.loads(out.read_text())["optimal"] is True
