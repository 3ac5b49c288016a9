"""No function of quiltpriv is of cyclomatic-complexity grade E or F (radon), when radon is here.

Grades follow radon's scale: E is complexity 31-40, F above 40. A function that grows past D
is split into named steps (small pure functions) rather than allowed here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

radon_complexity = pytest.importorskip("radon.complexity")

PACKAGE = Path(__file__).resolve().parents[2] / "quiltpriv"


def _blocks(source: str) -> list:
    """Every function and method of a module (with closures and methods of classes)."""
    out = []
    for block in radon_complexity.cc_visit(source):
        out.append(block)
        # cc_visit lists classes with their methods inside; closures are scored within their
        # function, as radon's command line does.
        out.extend(getattr(block, "methods", ()))
    return out


def test_no_function_of_grade_e_or_f():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 40  # the whole package is read
    offenders = []
    for path in files:
        for block in _blocks(path.read_text(encoding="utf-8")):
            grade = radon_complexity.cc_rank(block.complexity)
            if grade in ("E", "F"):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{block.lineno} "
                                 f"{block.fullname} - {grade} ({block.complexity})")
    assert not offenders, "functions of radon grade E/F:\n" + "\n".join(offenders)


def test_the_grading_sees_a_complex_function():
    # The check above cannot pass vacuously: a function with 45 branches is graded F.
    body = "\n".join(f"    if x == {k}:\n        return {k}" for k in range(45))
    (block,) = radon_complexity.cc_visit(f"def f(x):\n{body}\n    return -1\n")
    assert radon_complexity.cc_rank(block.complexity) == "F"
