"""Start-up: what ``import quiltpriv`` and the command line load, and that laziness changes nothing.

Each check runs a fresh interpreter (``sys.modules`` of this test process is full already) on
this checkout's package and reads back which modules were imported.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import quiltpriv as qp
from quiltpriv.cli import COMMAND_MODULES, COMMANDS, _command_of, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
#: Modules no start-up should pay for unless the command uses them.
HEAVY = ("pandas", "scipy", "matplotlib", "joblib", "networkx", "pgmpy", "tqdm", "pyparsing",
         "sklearn", "pyagrum")


def _modules_after(code: str, *args: str) -> tuple[set[str], str]:
    """Run ``code`` in a fresh interpreter; return the modules it imported and its stdout."""
    probe = (f"{code}\nimport json, sys\n"
             "print('\\n' + json.dumps(sorted(sys.modules)), file=sys.stderr)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stderr.strip().splitlines()[-1])), done.stdout


def _loaded(modules: set[str], names) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in names)


def test_import_quiltpriv_loads_nothing_heavy():
    modules, _ = _modules_after("import quiltpriv")
    assert _loaded(modules, HEAVY + ("numpy",)) == []
    assert sorted(m for m in modules if m.startswith("quiltpriv")) == [
        "quiltpriv", "quiltpriv._compat", "quiltpriv._version", "quiltpriv.errors"]


def test_public_names_resolve_on_first_use():
    code = ("import quiltpriv as qp\n"
            "names = {n: getattr(qp, n).__module__ for n in qp.__all__ if n[0].isupper()}\n"
            "print(names['CountQuery'], names['Theta'], names['Plan'])\n"
            "print(qp.inference.influence.max_influence is qp.max_influence)")
    modules, out = _modules_after(code)
    assert out.split() == ["quiltpriv.queries.query", "quiltpriv.model.network",
                           "quiltpriv.mechanisms.apmqm.plan_types", "True"]
    assert _loaded(modules, ("pandas", "scipy", "matplotlib", "joblib", "networkx")) == []


def test_all_and_dir_are_those_of_an_eager_package():
    for name in qp.__all__:
        assert getattr(qp, name) is not None
    namespace: dict = {}
    exec("from quiltpriv import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(qp.__all__)
    listed = dir(qp)
    assert set(qp.__all__) <= set(listed)
    assert {"inference", "model", "mechanisms", "graph", "queries"} <= set(listed)
    # quiltpriv 0.1's flat module paths are not listed (they still import, with a warning)
    assert not {"influence", "loading", "network", "sensitivity"} & set(listed)
    assert not {"_importlib", "_EXPORTS", "__getattr__"} & set(listed)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        qp.nope  # noqa: B018


def test_help_imports_no_command_module():
    modules, out = _modules_after("import sys\nfrom quiltpriv.cli import main\nmain(['--help'])")
    assert _loaded(modules, HEAVY + ("numpy",)) == []
    assert not [m for m in modules if m in COMMAND_MODULES]
    assert out == build_parser().format_help()


def test_plan_on_a_bif_file_loads_nothing_heavy():
    args = ["plan", str(ROOT / "models" / "student.bif"), "--sensitive", "income",
            "--query", "count", "--attributes", "height", "--records", "1000", "--epsilon", "1"]
    modules, out = _modules_after("import sys\nfrom quiltpriv.cli import main\n"
                                  "main(sys.argv[1:])", *args)
    assert "Laplace scale b = 0" in out
    assert _loaded(modules, HEAVY) == []
    assert "quiltpriv.mechanisms.compare" not in modules
    assert "quiltpriv.reporting.report" not in modules


def test_plan_on_a_bundled_model_loads_nothing_heavy():
    # The README's first command: a bundled Python model declared with NetworkBuilder.
    args = ["plan", "student", "--sensitive", "income", "--query", "count", "--attributes",
            "height", "--records", "1000", "--epsilon", "1"]
    modules, out = _modules_after("import sys\nfrom quiltpriv.cli import main\n"
                                  "main(sys.argv[1:])", *args)
    assert "Laplace scale b = 0" in out
    assert _loaded(modules, HEAVY) == []


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_command_table_matches_what_the_modules_register():
    import importlib

    missing = [m for m in COMMAND_MODULES if m not in COMMANDS]
    assert not missing, f"add the commands of {missing} to quiltpriv.cli.COMMANDS"
    assert set(COMMANDS) == set(COMMAND_MODULES)
    for module in COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register_cli(sub)
        registered = tuple((a.dest, a.help) for a in sub._choices_actions)
        assert registered == COMMANDS[module], module


@pytest.mark.parametrize("command", ["", "--help", *(c for m in COMMANDS.values() for c, _ in m)])
def test_lazy_parser_reads_as_the_full_one(command):
    full, lazy = build_parser(), build_parser(_command_of([command]))
    assert lazy.format_help() == full.format_help()
    assert list(_subcommands(lazy).choices) == list(_subcommands(full).choices)
    if command and not command.startswith("-"):
        assert _subcommands(lazy).choices[command].format_help() == \
            _subcommands(full).choices[command].format_help()


def test_command_of():
    assert _command_of(["plan", "x"]) == "plan"
    assert _command_of(["-h"]) == ""
    assert _command_of([]) == ""
    assert _command_of(["--help", "report"]) == "report"


def test_unknown_command_lists_every_command(capsys):
    assert main(["bogus"]) == 2
    err = capsys.readouterr().err
    names = [c for m in COMMANDS.values() for c, _ in m]
    assert err.startswith("quiltpriv: error: argument COMMAND: invalid choice: 'bogus'")
    assert all(f"'{n}'" in err for n in names)


def test_ctrl_c_while_a_command_module_imports_is_one_line(monkeypatch, capsys):
    # The heavy imports happen inside main(), so Ctrl-C there ends like any other Ctrl-C.
    import quiltpriv.cli as cli

    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.importlib, "import_module", interrupted)
    assert main(["plan", "student", "--sensitive", "income"]) == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err == "quiltpriv: interrupted\n"
