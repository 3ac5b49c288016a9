"""The frame walker behind every warning that names a caller's line
(:func:`quiltpriv.utils.stack.caller_stacklevel`, imported from there).

It sits in the lowest layer, with :mod:`quiltpriv.errors` and :mod:`quiltpriv._compat`, because
the old module paths' warnings (``_compat``) use it too; it imports nothing of the package.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType

__all__ = ["caller_stacklevel"]


def _import_machinery(filename: str) -> bool:
    """A frame ``warnings.warn`` neither names nor counts (CPython's ``_is_internal_frame``)."""
    return "importlib" in filename and "_bootstrap" in filename


def caller_stacklevel(skip: Callable[[str], bool], *, extra: int = 0,
                      frame: FrameType | None = None) -> int:
    """The ``stacklevel`` that names the first frame, from the caller up, that ``skip`` does
    not step over.

    Parameters
    ----------
    skip : callable
        ``skip(filename)`` is True for a frame to step over (counted); the first frame for
        which it is False is the one the warning names. Import-machinery frames are stepped
        over and not counted (module text).
    extra : int
        How many frames below the caller ``warnings.warn`` is called: 0 when the caller itself
        calls it, 1 when it passes the level to a function it calls, and so on.
    frame : frame, optional
        The frame to start from (by default the caller's): a helper that computes the level
        for its own caller passes ``sys._getframe(1)``.

    Returns
    -------
    int
        The level for :func:`warnings.warn` (at least ``1 + extra``).

    Examples
    --------
    Stepping over no frame, the caller itself is the frame named:

    >>> caller_stacklevel(lambda filename: False)
    1
    """
    current: FrameType | None = sys._getframe(1) if frame is None else frame
    level = 1 + extra
    while current is not None:
        name = current.f_code.co_filename
        if not _import_machinery(name):
            if not skip(name):
                return level
            level += 1
        current = current.f_back
    return level
