"""No docstring paragraph has a word stranded alone on a line (it shows in ``help()``).

A path renaming once re-wrapped about 25 docstrings so that a word or two ended up alone on a
line in the middle of a sentence. The check reads every docstring of the package and flags a
line of at most two words, shorter than 25 characters and not ending a sentence or a clause
(``:`` or ``.``), between two lines of the same paragraph, the one before it over 60 characters.
Lists, doctests and tables are left alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "quiltpriv"
_MARKUP = ("-", "*", ">>>", "...", "#", "|", "=")


def stranded_lines(doc: str) -> list[str]:
    """The stranded lines of one (cleaned) docstring."""
    lines = doc.splitlines()
    out = []
    for before, line, after in zip(lines, lines[1:], lines[2:], strict=False):
        words = line.split()
        if not (words and before.strip() and after.strip()):
            continue
        indent = line[:len(line) - len(line.lstrip())]
        same_paragraph = after.startswith(indent) and not after[len(indent):].startswith(" ")
        if (len(words) <= 2 and len(line.strip()) < 25 and len(before) > 60 and same_paragraph
                and not line.strip().endswith((":", ".", ",\"", ";"))
                and not line.lstrip().startswith(_MARKUP)
                and not after.lstrip().startswith(_MARKUP)
                and before.startswith(indent)):
            out.append(line.strip())
    return out


def _docstrings():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=True)
                if doc:
                    yield f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'name', '')}", doc


def test_no_docstring_strands_a_word():
    found = [(where, line) for where, doc in _docstrings() for line in stranded_lines(doc)
             # the explorer's endpoint list and the registry's table are laid out by hand
             if not where.startswith(("quiltpriv/explorer/server.py",
                                      "quiltpriv/mechanisms/registry.py"))]
    assert not found, found


def test_the_check_finds_a_stranded_word():
    damaged = ("The scale is the least over every quilt of the attribute and the\n"
               "influence\n"
               "is rounded up by the float64 error bound of the products.")
    assert stranded_lines(damaged) == ["influence"]
    healthy = damaged.replace("the\ninfluence\nis", "the influence\nis")
    assert stranded_lines(healthy) == []
