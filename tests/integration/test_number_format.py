"""Every number a message of the package shows goes through the one formatter.

Issue 32 ("one number formatter"): error messages, notes, explanations and tables format their
numbers with :func:`quiltpriv.utils.format.fmt_number` (with ``rounding="up"`` where a number
states a scale or an upper bound, so that a printed scale never looks smaller than it is), not
with an inline format spec (``f"{x:.4g}"``, ``f"{x:.2f}"``, ``"%.3g" % x``). This test reads
the package's source with ``ast`` and fails on any inline float format spec outside the short
allow-list below, each entry with its reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from quiltpriv.utils.format import fmt_number

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "quiltpriv"

#: A float presentation type, with its options: ``g``, ``.4g``, ``.2f``, ``>10.3e``, ``.1%``.
FLOAT_SPEC = re.compile(r"^.?[<>=^]?[-+ ]?#?0?\d*[,_]?(\.\d+)?[eEfFgG%]$")
#: An old-style float conversion: ``%g``, ``%.17g``, ``%6.2f``.
PERCENT_SPEC = re.compile(r"%[-+ #0]*\d*(\.\d+)?[eEfFgG]")

#: (module, enclosing function) -> why an inline float spec is right there. Not messages.
ALLOWED: dict[tuple[str, str], str] = {
    ("quiltpriv/utils/format.py", "fmt_number"): "the formatter itself",
    ("quiltpriv/reporting/drawing.py", "edge_path"): "SVG path coordinates, not text",
    ("quiltpriv/reporting/drawing.py", "dag_svg"): "SVG sizes and coordinates, not text",
    ("quiltpriv/model/learning.py", "values"): "a bin's midpoint state rounded to 10 "
    "significant digits as a value (float(f'...')), not shown",
    ("quiltpriv/model/learning.py", "_quantile_edges"): "bin edges rounded to 3 significant "
    "digits as values (float(f'...')), not shown",
    ("quiltpriv/model/provenance.py", "data_sha256"): "the canonical CSV that is hashed "
    "(17 significant digits: exact), not text for people",
    ("quiltpriv/utils/tabular_csv.py", "*"): "the canonical CSV of a data hash (pandas' "
    "float_format='%.17g'), not text for people",
    ("quiltpriv/releases/records.py", "utc_timestamp"): "strftime's %f (microseconds), not a "
    "float conversion",
}


def _inline_specs(path: Path) -> list[tuple[int, str, str]]:
    """``(line, enclosing function, spec)`` of every inline float format in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, func: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            func = node.name
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            spec = "".join(v.value for v in ast.walk(node.format_spec)
                           if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if FLOAT_SPEC.match(spec):
                found.append((node.lineno, func, spec))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = PERCENT_SPEC.search(node.value)
            if m and "%%" not in node.value and "strftime" not in node.value:
                found.append((node.lineno, func, m.group(0)))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(tree, "<module>")
    return found


def _violations() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for line, func, spec in _inline_specs(path):
            if (rel, func) in ALLOWED or (rel, "*") in ALLOWED:
                continue
            out.append(f"{rel}:{line} in {func}: {spec!r}")
    return out


def test_no_inline_float_format_in_the_package():
    bad = _violations()
    assert bad == [], ("format numbers with quiltpriv.utils.format.fmt_number, not inline: "
                       + "; ".join(bad))


def test_every_allowed_place_still_has_an_inline_spec():
    """The allow-list only shrinks: an entry whose place no longer formats inline goes."""
    used = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for _, func, _ in _inline_specs(path):
            used.add((rel, func))
            used.add((rel, "*"))
    assert [k for k in ALLOWED if k not in used] == []


def test_the_scanner_finds_inline_specs(tmp_path):
    src = tmp_path / "m.py"
    src.write_text('def f(x):\n    return f"a {x:.4g} b {x:g} c {x:>8.2f} d {x!r}" + "%.3g" % x\n'
                   'def g(x):\n    return f"{x} {x:d} {x:>10}"\n')
    assert [(f, s) for _, f, s in _inline_specs(src)] == [
        ("f", ".4g"), ("f", "g"), ("f", ">8.2f"), ("f", "%.3g")]


@pytest.mark.parametrize("x", [2 / 3, 0.1, 1e-5, 123456.789, 4.0000005, 9.9999996e-3,
                               1 / 3 * 1e300, 5e-324])
def test_fmt_number_never_shows_a_bound_on_the_wrong_side(x):
    up, down = fmt_number(x, rounding="up"), fmt_number(x, rounding="down")
    assert float(up) >= x >= float(down)
    assert fmt_number(x) in (up, down)  # the nearest is one of the two
    assert len(up.replace("-", "").replace(".", "").split("e")[0].lstrip("0")) <= 6
    assert fmt_number(-x, rounding="up") == "-" + down


def test_fmt_number_is_the_g_format_it_replaced():
    for x in (0.5, 1e-12, 3, 12345678.9, -0.25):
        for d in (3, 6, 9, 12, 17):
            assert fmt_number(x, d) == f"{x:.{d}g}"
    assert fmt_number(float("inf")) == "inf" and fmt_number(None) == "-"


def test_printed_scales_never_read_below_the_scale():
    """The explanations of a plan, of the comparison and of MQM show scales rounded up."""
    import re as _re

    import quiltpriv as qp
    from quiltpriv.mechanisms.compare import compare

    theta = qp.load_model("student")
    query = qp.CountQuery(["income"], records=7, where="income == 1",
                          domain={"income": (0, 1)})
    plan = qp.plan(theta, query, "sat", epsilon=0.7)
    # the scale is 10.000000000000002 (rounded up on the way): the nearest 6 digits, "10",
    # would read back below it
    assert plan.scale > 10 and fmt_number(plan.scale) == "10"
    shown = _re.search(r"Laplace scale b = ([0-9.e+-]+)", plan.explain())
    assert shown is not None and float(shown.group(1)) >= plan.scale
    table = compare(theta, query, "sat", 0.7).explain()
    row = next(line for line in table.splitlines() if line.startswith("APMQM"))
    assert float(row.split()[2]) >= plan.scale
