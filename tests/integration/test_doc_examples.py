"""Every documented Python example runs as written.

The ```python blocks of README.md and of every page in docs/ run in order, one namespace per
page, in a fresh temporary folder in which ``examples/`` and ``models/`` point at the
repository's (the pages name files relative to the repository root); so does the quick start
of the package docstring (``quiltpriv/__init__.py``). A block whose line before is
``<!-- needs: MODULE[, MODULE...] -->`` needs an optional extra (e.g. statsmodels, the ``data``
extra): it is skipped only when one of those modules is missing, and CI, which installs every
extra, runs it. No other way to leave a block out exists.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import mpmath
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    flags=re.S | re.M)
_NEEDS = re.compile(r"<!--\s*needs:\s*(?P<mods>[\w., ]+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One example: its source, the line it starts on and the modules it needs."""

    code: str
    line: int
    needs: tuple[str, ...]


def _dedent(body: str, indent: str) -> str:
    return "".join(ln[len(indent):] if ln.startswith(indent) else ln.lstrip(" \t")
                   for ln in body.splitlines(keepends=True))


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, with the marker on the line before each."""
    blocks = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _NEEDS.search(before)
        needs = tuple(s.strip() for s in marker["mods"].split(",")) if marker else ()
        blocks.append(Block(_dedent(m["body"], m["indent"]), text.count("\n", 0, m.start()) + 2,
                            needs))
    return blocks


def docstring_example() -> str:
    """The indented block after the ``::`` of the package docstring's quick start."""
    tree = ast.parse((ROOT / "quiltpriv" / "__init__.py").read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree, clean=True)
    assert doc and "::" in doc
    lines = doc.split("::", 1)[1].splitlines()
    body = []
    for ln in lines[1:]:
        if ln.strip() and not ln.startswith("    "):
            break
        body.append(ln[4:])
    code = "\n".join(body).strip("\n") + "\n"
    assert code.strip()
    return code


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh folder that sees the repository's example data and models, and nothing else."""
    for name in ("examples", "models"):
        if (ROOT / name).exists():
            (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


def _run(code: str, where: str, namespace: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pgmpy's, not ours
        exec(compile(code, where, "exec"), namespace)  # noqa: S102


def test_the_extractor_reads_fences_and_markers():
    text = ("x\n```python\na = 1\n```\n<!-- needs: statsmodels, foo -->\n```python\nb = a\n```\n"
            "- item\n\n  ```python\n  c = b\n  ```\n```\nnot python\n```\n")
    blocks = python_blocks(text)
    assert [b.code for b in blocks] == ["a = 1\n", "b = a\n", "c = b\n"]
    assert [b.needs for b in blocks] == [(), ("statsmodels", "foo"), ()]
    assert [b.line for b in blocks] == [3, 7, 12]


def _pages_with_examples() -> list[str]:
    return [p for p in PAGES if python_blocks((ROOT / p).read_text(encoding="utf-8"))]


def test_the_main_pages_have_examples():
    assert {"README.md", "docs/index.md", "docs/modelling.md"} <= set(_pages_with_examples())


def _at_least(value: float, reference: float, rel: float = 1e-8) -> None:
    """value is reference rounded up (never below it), within a relative ``rel``."""
    assert reference <= value <= reference * (1 + rel), (value, reference)


def _released(rel, seed) -> None:
    """The default release is secure; the seeded one says it is for experiments."""
    assert rel.secure and not seed.secure


def _check_apgm(ns: dict) -> None:
    # [ZOC22, Alg. 1]: sigma^2 = (c Delta / eps)^2 - min Var, c = sqrt(2 ln(1.25 / delta)),
    # Delta = 0.5 (the first theta's mean shift), min Var = 0.01.
    with mpmath.workdps(50):
        c = mpmath.sqrt(2 * mpmath.log(mpmath.mpf(1.25) / mpmath.mpf("1e-5")))
        _at_least(ns["plan"].sigma, float(mpmath.sqrt((c / 2) ** 2 - mpmath.mpf("0.01"))))
    _released(ns["released"], ns["trial"])


def _check_wasserstein(ns: dict) -> None:
    assert ns["plan"].exact and ns["plan"].sensitivity == 1 and ns["plan"].scale == 1  # [ZOC22]
    _released(ns["released"], ns["trial"])


def _check_distribution(ns: dict) -> None:
    # [CO23, Thms 4.1-4.2]: Delta_E,1 = 0.05 + 0.05; sigma = c_G Delta_E,2 = c_G 0.05 sqrt(2).
    _at_least(ns["lap"].laplace_scale, 0.1, rel=1e-6)
    with mpmath.workdps(50):
        c = mpmath.sqrt(2 * mpmath.log(mpmath.mpf(1.25) / mpmath.mpf("1e-5")))
        _at_least(float(ns["gau"].covariance[0, 0]) ** 0.5,
                  float(c * mpmath.mpf("0.05") * mpmath.sqrt(2)), rel=1e-6)


def _check_local(ns: dict) -> None:
    # Randomised response pushes lambda to (e lambda_y + 1 - lambda_y) / (e + 2); with delta
    # = 0 the DistP eps is the largest |log ratio| of the two output laws.
    lam0, lam1 = ns["pairs"][0]
    with mpmath.workdps(50):
        e = mpmath.e
        out = [[(e * mpmath.mpf(x) + 1 - mpmath.mpf(x)) / (e + 2) for x in lam]
               for lam in (lam0, lam1)]
        ref = max(abs(mpmath.log(a / b)) for a, b in zip(*out, strict=True))
    assert ns["distp"].epsilon == pytest.approx(float(ref), rel=1e-9)
    assert ns["released"].secure and not ns["trial"].secure and ns["trial"].seed == 7


def _check_subset(ns: dict) -> None:
    # [Tan]: Var Z = 2a / (1 - a)^2, a = e^(-eps/2). A description of the noise drawn (exact
    # discrete noise), not a calibration: compared to within rounding, not rounded up.
    with mpmath.workdps(50):
        a = mpmath.exp(mpmath.mpf(-0.5))
        assert ns["table"].noise_variance == pytest.approx(float(2 * a / (1 - a) ** 2), rel=1e-12)
    assert ns["table"].row_totals == (55, 64) and ns["table"].privacy_loss == 0.5
    assert ns["table"].counts.sum(axis=1).tolist() == [55, 64]
    assert ns["table"].secure and not ns["trial"].secure and ns["trial"].seed == 7


def _check_gap(ns: dict) -> None:
    # [HKCSR17] at (p, q) = (0.5, 0.25): PDD 0.75 - D, PDI 0.75 - D / 2.
    assert ns["pdd"].accuracy == pytest.approx(0.65, abs=1e-9)
    assert ns["pdi"].accuracy == pytest.approx(0.70, abs=1e-9)


#: The figures each sibling-mechanism page's Usage example prints, against references.
_USAGE_FIGURES = {
    "docs/gaussian-mechanism.md": _check_apgm,
    "docs/wasserstein-mechanism.md": _check_wasserstein,
    "docs/distribution-privacy.md": _check_distribution,
    "docs/local-distribution-privacy.md": _check_local,
    "docs/subset-privacy.md": _check_subset,
    "docs/generative-adversarial-privacy.md": _check_gap,
}


@pytest.mark.parametrize("page", _pages_with_examples())
def test_page_examples_run_as_written(page, workdir):
    blocks = python_blocks((ROOT / page).read_text(encoding="utf-8"))
    namespace: dict = {"__name__": "__doc_example__"}
    skipped = []
    for block in blocks:
        missing = _missing(block.needs)
        if missing:
            skipped.append((block.line, missing))
            continue  # an optional extra is missing; CI installs it and runs the block
        _run(block.code, f"{page}:{block.line}", namespace)
    if page == "README.md":
        rel = namespace["release"]
        assert rel.plan.scale == 1000.0 and rel.secure
        assert namespace["declared"].provenance["source"] == "declared"
    check = _USAGE_FIGURES.get(page)
    if check is not None:
        check(namespace)
    if skipped and len(skipped) == len(blocks):
        pytest.skip(f"{page}: every example needs a missing extra {skipped}")


def test_package_docstring_example_runs(workdir):
    namespace: dict = {"__name__": "__doc_example__"}
    _run(docstring_example(), "quiltpriv/__init__.py docstring", namespace)
    assert namespace["rel"].plan is namespace["plan"]


def test_every_marker_names_an_optional_dependency():
    """``needs`` markers only name extras of pyproject.toml, never a way to skip for good."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for page in PAGES:
        for block in python_blocks((ROOT / page).read_text(encoding="utf-8")):
            for mod in block.needs:
                assert re.search(rf"\b{re.escape(mod)}\b", pyproject, flags=re.I), (page, mod)


def _resolve(dotted: str) -> object:
    """The object a fully qualified name names (module, then attributes)."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_paper_index_names_real_functions_and_tests():
    """Every function and test docs/papers.md names exists (the index cannot go stale)."""
    text = (ROOT / "docs" / "papers.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`(quiltpriv(?:\.\w+)+)`", text))
    assert len(names) > 100
    for dotted in sorted(names):
        if dotted.endswith("_kernel.c"):
            assert (ROOT / dotted.replace(".", "/").replace("/c", ".c")).is_file()
            continue
        _resolve(dotted)
    tests = set(re.findall(r"`(test_\w+\.py)::(test_\w+)`", text))
    assert len(tests) > 80
    for file, name in sorted(tests):
        found = sorted((ROOT / "tests").rglob(file))  # tests mirror the package's layout
        assert len(found) == 1, (file, found)
        source = found[0].read_text(encoding="utf-8")
        assert re.search(rf"^def {name}\(", source, flags=re.M), (file, name)
    for path in re.findall(r"`(examples/[\w./]+\.py)`", text):
        assert (ROOT / path).is_file(), path


def test_cli_reference_hook_lists_every_subcommand():
    """docs/gen_cli.py, the MkDocs hook, fills docs/cli.md's marker with every subcommand's
    help and options, without MkDocs (test_docs.py checks the built page, with the slow
    tests)."""
    from types import SimpleNamespace

    from cli_parser import subcommand_options

    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    gen_cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_cli)
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert gen_cli.MARKER in page
    md = gen_cli.on_page_markdown(page, SimpleNamespace(file=SimpleNamespace(src_uri="cli.md")))
    assert gen_cli.MARKER not in md
    commands = subcommand_options()
    assert len(commands) >= 5
    for name, options in commands.items():
        assert f"## `quiltpriv {name}`" in md, name
        assert f"usage: quiltpriv {name}" in md, name
        for opt in options:
            assert opt in md, (name, opt)


def test_every_usage_check_has_its_example():
    """A page whose Usage example went away would silently skip its figure check."""
    assert set(_USAGE_FIGURES) <= set(_pages_with_examples())
