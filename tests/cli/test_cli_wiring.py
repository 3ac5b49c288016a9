"""Every registered subcommand works through the real entry point."""

import csv
import json

from quiltpriv.cli import COMMAND_MODULES, build_parser, main


def test_every_module_registers():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for cmd in ("plan", "quilts", "release", "models", "compare", "subset-privacy", "audit",
                "report"):
        assert cmd in sub.choices
    assert len(COMMAND_MODULES) == len(set(COMMAND_MODULES))


def test_compare_through_main(capsys):
    assert main(["compare", "example3", "--sensitive", "x2", "--query", "count",
                 "--attributes", "x1", "--records", "4", "--epsilon", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = {r["mechanism"]: r for r in d["rows"]}
    assert rows["APMQM"]["scale"] == 4.0
    assert rows["Wasserstein"]["scale"] == 1.0


def test_subset_privacy_through_main(tmp_path):
    data = tmp_path / "d.csv"
    with data.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["age", "sex"])
        for k in range(40):
            w.writerow([["young", "old"][k % 2], ["f", "m", "x"][k % 3]])
    out = tmp_path / "t.csv"
    assert main(["subset-privacy", str(data), "--rows", "age", "--protected", "sex",
                 "--epsilon", "1", "--categories", "f,m,x", "--seed", "1",
                 "--output", str(out)]) == 0
    rows = list(csv.reader(out.open()))
    assert len(rows) >= 3
    bad = tmp_path / "bad.csv"
    assert main(["subset-privacy", str(data), "--rows", "nope", "--protected", "sex",
                 "--epsilon", "1", "--categories", "f,m,x", "--output", str(bad)]) == 2
    assert not bad.exists()


def test_report_command_and_reprs(tmp_path, capsys):
    import os

    import quiltpriv as qp

    out = tmp_path / "r.html"
    assert main(["report", "student", "--sensitive", "income", "--attributes", "height",
                 "--records", "10", "--epsilon", "1", "-o", str(out)]) == 0
    assert "<svg" in out.read_text() and (tmp_path / "r.json").exists()
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    theta = qp.load_model("student")
    p = qp.plan(theta, qp.CountQuery(["height"], 10), "income", 1.0)
    for obj in (theta, p):
        assert "income" in obj._repr_html_()


def test_audit_through_main(capsys):
    assert main(["audit", "example3", "--sensitive", "x2", "--attributes", "x1",
                 "--records", "4", "--epsilon", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["met"] is True and d["loss"] <= 1.0 + 1e-9
    # No noise at all on example3 leaks 4 log(0.56 / 0.44) = 0.965 > 0.5: exit status 1.
    assert main(["audit", "example3", "--sensitive", "x2", "--attributes", "x1",
                 "--records", "4", "--epsilon", "0.5", "--scale", "0"]) == 1


def test_version_flag(capsys):
    from quiltpriv import __version__
    from quiltpriv.inference.influence import compiled_kernel

    assert main(["--version"]) == 0
    version, engine = capsys.readouterr().out.splitlines()
    assert version == f"quiltpriv {__version__}"
    # which engine runs: the compiled kernel and its file, or pure Python
    if compiled_kernel():
        assert engine.startswith("engine: compiled kernel (") and "_kernel" in engine
    else:
        assert engine.startswith("engine: pure Python (")


def test_python_dash_m_quiltpriv():
    """``python -m quiltpriv`` is the ``quiltpriv`` script (version, help and a real command)."""
    import subprocess
    import sys

    from quiltpriv import __version__

    def run(*args):
        return subprocess.run([sys.executable, "-m", "quiltpriv", *args], capture_output=True,
                              text=True, timeout=120)

    version = run("--version")
    assert version.returncode == 0
    assert version.stdout.splitlines()[0] == f"quiltpriv {__version__}"
    assert version.stdout.splitlines()[1].startswith("engine: ")
    models = run("models")
    assert models.returncode == 0 and "student" in models.stdout
    bad = run("plan")
    assert bad.returncode == 2 and bad.stderr.startswith("quiltpriv: error:")


def test_model_help_names_json(capsys):
    assert main(["plan", "--help"]) == 0
    assert ".json" in capsys.readouterr().out
