"""The layout tree of docs/api.md names modules that exist.

Modules moved between subpackages more than once and the tree kept describing the old places.
The tree (the first fenced block after ``## The layout``) is read here: each entry is a path
under ``quiltpriv/`` (two spaces of indentation per folder level), and each must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "quiltpriv"
_ENTRY = re.compile(r"^(?P<indent> *)(?P<name>[\w.]+(?:/|\.py|\.c))(?:\s|$)")


def tree_entries(text: str) -> dict[str, list[str]]:
    """Folder (relative to the package, "" for its root) -> the entries listed in it."""
    block = text.split("## The layout", 1)[1].split("```", 2)[1]
    folders: list[tuple[int, str]] = []  # (indent, path) of the open folders
    out: dict[str, list[str]] = {}
    for line in block.splitlines():
        m = _ENTRY.match(line)
        if not m or m["name"] == "quiltpriv/":
            continue
        indent = len(m["indent"])
        if indent > (folders[-1][0] if folders else 0) + 2:
            continue  # a description's second line, not an entry
        while folders and folders[-1][0] >= indent:
            folders.pop()
        parent = folders[-1][1] if folders else ""
        out.setdefault(parent, []).append(m["name"])
        if m["name"].endswith("/"):
            folders.append((indent, parent + m["name"]))
    return out


def test_every_module_the_layout_names_exists():
    entries = tree_entries((ROOT / "docs" / "api.md").read_text(encoding="utf-8"))
    assert sum(map(len, entries.values())) > 50  # the tree was found and read
    missing = [folder + name for folder, names in entries.items() for name in names
               if not (PACKAGE / folder / name).exists()]
    assert not missing, f"docs/api.md names what does not exist: {missing}"


def test_the_reader_follows_the_indentation():
    text = ("## The layout\n\n```\nquiltpriv/\n  errors.py   the errors\n  model/      Theta\n"
            "    network.py  Theta [ZOC22]\n                continued.py is not an entry\n"
            "  cli/        the command line\n```\n")
    assert tree_entries(text) == {"": ["errors.py", "model/", "cli/"],
                                  "model/": ["network.py"]}
