"""The MkDocs site builds with --strict (warnings are errors) and holds the generated pages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = Path(__file__).resolve().parents[2]

# Building the site takes ~6 s: slow. CI builds it in its optional-tools step (.ci/run) and these
# checks of the built pages run with its slow tests. By default test_doc_examples.py runs the
# pages' examples, checks the paper index and the CLI reference that the build's hook inserts.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_every_nav_page_is_built(site):
    for page in ["index.html", "cli/index.html", "api/index.html", "concepts/index.html",
                 "report/index.html", "audit/index.html", "noise/index.html"]:
        assert (site / page).is_file(), page
    assert (site / "report-screenshot.png").is_file()
    assert not (site / "gen_cli.py").exists()  # the hook is not published


def test_cli_reference_lists_every_subcommand(site):
    from cli_parser import subcommand_options

    html = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "cli-reference" not in html  # the marker was replaced
    commands = subcommand_options()
    assert len(commands) >= 5
    for name, options in commands.items():
        assert f"<h2 id=\"quiltpriv-{name}\"><code>quiltpriv {name}</code>" in html, name
        assert f"usage: quiltpriv {name}" in html, name
        for opt in options:
            assert opt in html, (name, opt)


def test_api_reference_documents_the_public_functions(site):
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    for ident in ["quiltpriv.mechanisms.apmqm.plan", "quiltpriv.mechanisms.apmqm_release.release",
                  "quiltpriv.mechanisms.compare.compare", "quiltpriv.reporting.report.audit_report",
                  "quiltpriv.reporting.plots.plot_noise_vs_epsilon",
                  "quiltpriv.reporting.plots.plot_quilt_tradeoff",
                  "quiltpriv.graph.quilts.markov_quilt",
                  "quiltpriv.inference.influence.max_influence"]:
        assert f'id="{ident}"' in html, ident
    # numpy-style sections are parsed, not shown raw
    assert "Parameters\n----------" not in html
