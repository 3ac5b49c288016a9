"""The packaging basics a new user looks for: a licence that matches the metadata, a
changelog that knows the current version."""

from __future__ import annotations

import sys
from pathlib import Path

import quiltpriv

ROOT = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = None


def test_license_is_the_declared_mit():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Copyright (c) 2026 the quiltpriv authors" in text
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text
    if tomllib is not None:
        meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        assert meta["project"]["license"] == {"text": "MIT"}
        assert meta["project"]["version"] == quiltpriv.__version__


def test_changelog_lists_the_current_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog")
    assert f"## {quiltpriv.__version__} - " in text
    assert "## Unreleased" in text
