"""Progress bars that degrade quietly, and a way to watch progress from another thread.

:func:`progress_bar` wraps an iterable in a tqdm bar. ``tqdm.auto`` picks a Jupyter widget in a
notebook, but without ipywidgets it warns ``TqdmWarning: IProgress not found`` on import; the
plain text bar is used instead when ipywidgets is not installed, so a notebook shows no warning.
pgmpy imports ``tqdm.auto`` itself: :func:`quiet_tqdm_auto` is called before quiltpriv imports
pgmpy, so that its import does not print the warning either.

:func:`observe` replaces the bar, in the calling thread only, by a callback
``callback(done, total)``: the local explorer runs the planner on a worker thread and reports
its progress to the page this way, with nothing written to the terminal.
"""

from __future__ import annotations

import importlib.util
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

from quiltpriv.errors import ParameterError

T = TypeVar("T")

_local = threading.local()


def tqdm_class() -> Any:
    """``tqdm.auto.tqdm`` when ipywidgets is installed, else the plain ``tqdm.std.tqdm``."""
    if importlib.util.find_spec("ipywidgets") is None:
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm


def quiet_tqdm_auto() -> None:
    """Import ``tqdm.auto`` once with its "IProgress not found" warning silenced.

    pgmpy imports ``tqdm.auto`` when it is imported; in a notebook without ipywidgets that
    import warns (once per process: the module is then cached). Importing it here first, under
    a filter for that one warning, keeps the notebook quiet; other warnings are untouched.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import tqdm.auto  # noqa: F401


def progress_bar(items: Iterable[T], *, desc: str, unit: str) -> Iterable[T]:
    """``items`` with a progress bar, or reported to this thread's :func:`observe` callback."""
    if not isinstance(items, Iterable):
        raise ParameterError(f"items must be iterable, got {type(items).__name__}")
    if not (isinstance(desc, str) and isinstance(unit, str)):
        raise ParameterError(f"desc and unit must be strings, got {desc!r} and {unit!r}")
    hook = getattr(_local, "hook", None)
    if hook is not None:
        return _observed(list(items), hook)
    return tqdm_class()(items, desc=desc, unit=unit)


def _observed(items: list[T], hook: Callable[[int, int], None]) -> Iterator[T]:
    total = len(items)
    hook(0, total)
    for k, x in enumerate(items):
        yield x
        hook(k + 1, total)  # the consumer asked for the next item: item k is done


def observe(callback: Callable[[int, int], None]) -> AbstractContextManager[None]:
    """Within the block, :func:`progress_bar` in this thread calls ``callback(done, total)``."""
    if not callable(callback):
        raise ParameterError(f"callback must be callable, got {type(callback).__name__}")
    return _observe(callback)


@contextmanager
def _observe(callback: Callable[[int, int], None]) -> Iterator[None]:
    old = getattr(_local, "hook", None)
    _local.hook = callback
    try:
        yield
    finally:
        _local.hook = old
