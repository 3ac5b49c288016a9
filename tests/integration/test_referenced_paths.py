"""Every test file that the code, docs, benchmarks or tests name by path exists.

Test modules moved into subfolders once and seven references went stale; a reader following one
found nothing. This reads every tracked text file and checks each ``tests/....py`` it names.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_PATH = re.compile(r"(?<![\w/.])tests/[A-Za-z0-9_/]+\.py")


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.ipynb", "*.toml", "*.yml"],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:  # not a git checkout (an sdist): read the usual folders instead
        return [p for d in ("quiltpriv", "docs", "benchmarks", "examples", "tests")
                for p in (ROOT / d).rglob("*") if p.suffix in {".py", ".md", ".ipynb"}]
    return [ROOT / line for line in out.stdout.splitlines() if line]


def test_every_named_test_file_exists():
    stale = sorted({(str(p.relative_to(ROOT)), m)
                    for p in _tracked_text_files() if p.is_file()
                    for m in _PATH.findall(p.read_text(encoding="utf-8", errors="replace"))
                    if not (ROOT / m).is_file()})
    assert not stale, stale


def test_the_pattern_finds_paths():
    # Guards the check above against a pattern that silently matches nothing.
    text = "see `tests/inference/test_kernel.py` and tests/conftest.py, not mytests/x.py"
    assert _PATH.findall(text) == ["tests/inference/test_kernel.py", "tests/conftest.py"]
