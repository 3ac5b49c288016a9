"""The README's performance table is benchmarks/readme_table.py's output from the results
files (so it cannot go stale), its figures are the files' own, and the README keeps the
install and test commands CI runs."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gen():
    path = ROOT / "benchmarks" / "readme_table.py"
    spec = importlib.util.spec_from_file_location("readme_table", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_table"] = module
    spec.loader.exec_module(module)
    return module


def test_the_readme_table_is_the_generated_one(gen):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(gen.BEGIN) == 1 and text.count(gen.END) == 1
    assert gen.section(text) == gen.table(), (
        "the README's performance table is stale: run python benchmarks/readme_table.py")
    assert gen.rewrite(text) == text  # rewriting changes nothing
    assert gen.main(["--check"]) == 0


def test_the_figures_are_the_results_files_own(gen):
    startup = gen.latest("startup")
    data = json.loads(startup.read_text(encoding="utf-8"))
    asia = data["processes"]["this tree"]["quiltpriv plan asia"]["median_s"]
    row = next(r for r in gen.table().splitlines() if "plan asia.bif.gz" in r)
    assert f"| {float(f'{asia:.2g}'):g} s |" in row and startup.name in row
    compare = json.loads(gen.latest("compare-records").read_text(encoding="utf-8"))
    cpus = [r["compare_cmd"]["cpu_s"] for r in compare["rows"] if r["records"] == 10**5]
    row = next(r for r in gen.table().splitlines() if "100,000 records" in r)
    assert f"cpu {gen._span(cpus)} (wall" in row
    pyagrum = json.loads(gen.latest("pyagrum").read_text(encoding="utf-8"))
    both = sum(r["answered_by_both"] for r in pyagrum["results"])
    assert f"{both:,} queries both answer" in gen.table()
    for r in pyagrum["results"]:  # the worst ratio of every network, from the file
        row = next(line for line in gen.table().splitlines()
                   if line.startswith(f"| {r['network']} |"))
        worst = float(f"{r['ratio_worst']:.3g}")
        assert f"| {worst:g}x |" in row, row


def test_the_test_suite_figures_are_the_results_files_own(gen):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(gen.SUITE_BEGIN) == 1 and text.count(gen.SUITE_END) == 1
    data = json.loads(gen.latest("test-suite").read_text(encoding="utf-8"))
    sentence = gen.section(text, gen.SUITE_BEGIN, gen.SUITE_END)
    assert sentence == gen.suite()
    assert f"default run has {data['counts']['default']:,} tests" in sentence
    assert f"slow run {data['counts']['slow']:,}" in sentence
    for run in data["runs"]:
        if run["returncode"] == 0:
            assert f"with `-n {run['workers']}`" in sentence


def test_latest_takes_the_newest_date_then_suffix(gen, tmp_path):
    for name in ("startup-2026-11-23.json", "startup-2026-11-23c.json",
                 "startup-2026-11-22d.json", "startup-bundled-2026-12-01.json",
                 "startup-2026-11-23b.json"):
        (tmp_path / name).write_text("{}")
    assert gen.latest("startup", tmp_path).name == "startup-2026-11-23c.json"
    with pytest.raises(FileNotFoundError):
        gen.latest("nothing", tmp_path)


def test_spans_and_seconds(gen):
    assert gen._s(0.04) == "0.04 s" and gen._s(5.294) == "5.3 s" and gen._s(123.4) == "123 s"
    assert gen._span([5.29, 5.42]) == "5.3-5.4 s" and gen._span([2.0, 2.01]) == "2 s"


def test_the_readme_keeps_the_commands_ci_runs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index("<!-- quickstart:begin -->"):text.index("<!-- quickstart:end -->")]
    commands = [ln[4:] for ln in block.splitlines() if ln.startswith("    ") and ln[4] != " "]
    assert commands == [
        "pip install . && quiltpriv plan student --sensitive income --query count --attributes "
        "height --records 1000 --epsilon 1 && quiltpriv plan student --sensitive income "
        "--query count --attributes height,sat --records 1000 --epsilon 1",
        'pip install ".[test]" && python -m pytest -q -n auto',
    ]
