"""docs/audit.md's auditor workflow runs as written, each command succeeding, in order.

The block after ``<!-- audit-workflow -->`` holds shell commands (``quiltpriv ...``, with
``\\`` continuations and ``#`` comments); each runs through the CLI's ``main`` in a temporary
folder where ``examples/`` and ``models/`` point at the repository's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from quiltpriv.cli import main

ROOT = Path(__file__).resolve().parents[2]


def workflow_commands() -> list[list[str]]:
    text = (ROOT / "docs" / "audit.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- audit-workflow -->\s*```\n(.*?)^```", text, flags=re.S | re.M)
    assert m, "docs/audit.md has no audit-workflow block"
    joined = m[1].replace("\\\n", " ")
    return [shlex.split(line) for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_the_documented_audit_workflow_runs(tmp_path, monkeypatch, capsys):
    for name in ("examples", "models"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    commands = workflow_commands()
    assert [c[1] for c in commands] == ["plan", "release", "verify", "verify", "quilts",
                                        "audit", "report"]
    outputs = []
    for argv in commands:
        assert argv[0] == "quiltpriv"
        code = main(argv[1:])
        out, err = capsys.readouterr()
        assert code == 0, (argv, err)
        outputs.append(out)
    assert "plan VERIFIED" in outputs[2]
    assert "release record VERIFIED" in outputs[3] and "noise actually added" in outputs[3]
    assert "[OK] ledger: entry 0 of 1" in outputs[3]
    assert "*  {income}" in outputs[4]
    assert "least sufficient scale by exact audit" in outputs[5]
    assert "gender: quilt {income}" in outputs[5] and "STABLE" in outputs[5]
    report = json.loads((tmp_path / "report.json").read_text())["attestation"]
    assert report["verify"]["record"]["verified"] and report["audit"]["verdict"] == "MET"
    assert report["ledger"]["entry"] == 0
    # the figures the page quotes
    assert report["attained_epsilon"]["gender"]["epsilon"] == \
        report["attained_epsilon"]["gender"]["influence"]
    assert round(report["attained_epsilon"]["gender"]["epsilon"], 3) == 0.336
    assert round(report["audit"]["least_scale"], 2) == 300.15
    assert round(report["audit"]["per_attribute"]["income"]["loss"], 2) == 0.30
    assert os.path.exists(tmp_path / "report.html")
