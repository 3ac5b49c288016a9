"""docs/time-series.md runs as written: its command-line section's Python writes the files, its
shell commands plan, verify and release them (``python -m quiltpriv`` for ``quiltpriv``).

The page's other Python blocks run in tests/integration/test_doc_examples.py.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "time-series.md"


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}[ \t]*\n(.*?)^```[ \t]*$", text, flags=re.S | re.M)


def _commands(block: str) -> list[list[str]]:
    joined = re.sub(r"\\\n\s*", " ", block)
    return [shlex.split(line) for line in joined.splitlines() if line.strip()]


def test_the_command_line_section_runs_as_written(tmp_path, monkeypatch):
    section = _section(PAGE.read_text(encoding="utf-8"), "From the command line")
    code = _blocks(section, "python")
    shell = _blocks(section, "bash")
    assert len(code) == 1 and len(shell) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile("import quiltpriv as qp\n" + code[0], str(PAGE), "exec"), {})
    commands = _commands(shell[0])
    assert [c[:2] for c in commands] == [["quiltpriv", "plan"], ["quiltpriv", "verify"],
                                         ["quiltpriv", "release"]]
    outputs = []
    for cmd in commands:
        # this checkout's quiltpriv (the files above were written by it), not an installed one
        done = subprocess.run([sys.executable, "-m", "quiltpriv", *cmd[1:]], cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, (cmd, done.stderr)
        outputs.append(done.stdout)
    plan = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))
    assert plan["optimal"] and plan["format"] == "quiltpriv-plan/3"  # the chain's runs
    closed = 31.737788616 / 100
    assert closed <= plan["scale"] <= closed * (1 + 1e-9)
    assert outputs[1].startswith("plan VERIFIED")
    assert "MQM" in outputs[2] or "mqm" in outputs[2]
