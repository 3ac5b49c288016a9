"""Every warning that names a caller's line takes its ``stacklevel`` from one frame walker,
``quiltpriv.utils.stack.caller_stacklevel``, told which frames to step over. Each former walker's
case: the user's line past every frame of the package (``user_stacklevel``); the line inside the
package that calls a deprecated keyword (the deprecation wrapper steps over its own module
only); and the importing line past the import machinery (the old module paths), whose frames
``warnings.warn`` does not count."""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from pathlib import Path

import pytest

import quiltpriv
from quiltpriv.utils.deprecation import clock_deadline_keyword
from quiltpriv.utils.stack import caller_stacklevel, in_package, user_stacklevel

#: A file name inside the package (never written): code compiled under it runs as the
#: package's own frames do.
PACKAGE_FILE = str(Path(quiltpriv.__file__).with_name("_frames_of_a_test.py"))


def _in_package(source: str) -> dict:
    """Run ``source`` as if it were a module of the package; its namespace."""
    namespace: dict = {"warnings": warnings, "user_stacklevel": user_stacklevel}
    exec(compile(source, PACKAGE_FILE, "exec"), namespace)
    return namespace


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno  # type: ignore[union-attr]


def test_the_users_line_past_every_frame_of_the_package():
    assert in_package(PACKAGE_FILE) and not in_package(__file__)
    package = _in_package(
        "def inner(extra):\n"
        "    level = user_stacklevel(extra=extra)\n"
        "    warnings.warn('told', UserWarning, stacklevel=level)\n"
        "def outer():\n"
        "    inner(0)\n"
        "def passes_level():\n"
        "    warn_at(user_stacklevel(extra=1))\n"
        "def warn_at(level):\n"
        "    warnings.warn('told', UserWarning, stacklevel=level)\n")
    for call in (package["outer"], package["passes_level"]):
        with pytest.warns(UserWarning) as caught:
            line = _line() + 1
            call()
        assert (caught[0].filename, caught[0].lineno) == (__file__, line)


def test_a_deprecated_keyword_names_the_line_that_uses_it_even_in_the_package():
    def by_deadline(*, deadline=None):
        return deadline

    @clock_deadline_keyword(by_deadline)
    def wait(*, time_limit=None):
        return time_limit

    package = _in_package("def uses_old(wait):\n    return wait(deadline=1.0)\n")
    with pytest.warns(DeprecationWarning, match="'deadline'") as caught:
        assert package["uses_old"](wait) == 1.0
    # the package's own line, where the old keyword must be replaced (not the user's line)
    assert (caught[0].filename, caught[0].lineno) == (PACKAGE_FILE, 2)
    with pytest.warns(DeprecationWarning) as caught:
        line = _line() + 1
        wait(deadline=2.0)
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)


def test_a_warning_during_an_import_names_the_importing_line(tmp_path, monkeypatch):
    """The module being imported and ``importlib.import_module`` are stepped over; the
    ``importlib._bootstrap`` frames between them are not counted (``warnings.warn`` skips them
    too), so the warning names the line that imports."""
    module = tmp_path / "imported_with_a_warning.py"
    module.write_text(
        "import importlib, warnings\n"
        "from quiltpriv.utils.stack import caller_stacklevel\n"
        "skip = {__file__, importlib.__file__}.__contains__\n"
        "warnings.warn('on import', UserWarning, stacklevel=caller_stacklevel(skip))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(module.stem, None)
    try:
        with pytest.warns(UserWarning, match="on import") as caught:
            line = _line() + 1
            importlib.import_module(module.stem)
    finally:
        sys.modules.pop(module.stem, None)
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)


def test_the_caller_itself_when_nothing_is_stepped_over():
    assert caller_stacklevel(lambda filename: False) == 1
    assert caller_stacklevel(lambda filename: False, extra=2) == 3
    assert caller_stacklevel(lambda filename: filename == __file__) >= 2
