"""Which line a warning names: the user's, however many of the package's frames stand between.

``warnings.warn(..., stacklevel=k)`` names the ``k``-th frame up from its caller. A fixed ``k``
breaks as soon as a wrapper (a deprecated-keyword decorator, a registry adapter, a release
flow) adds a frame, and the warning then names a line inside quiltpriv, which a user cannot act
on and a ``warnings`` filter by module cannot select. :func:`caller_stacklevel` counts the
frames instead, stepping over the frames its ``skip`` names; every warning of the package that
names a caller's line takes its level from it:

- :func:`user_stacklevel` steps over every frame of the package (the user's line);
- the old module paths (``quiltpriv._compat``) step over the forwarding modules only;
- the deprecated keywords (``quiltpriv.utils.deprecation``) step over that module only, so that
  a deprecated call inside the package names the package's line, where it must be fixed.

Frames of the import machinery (``importlib._bootstrap``) are stepped over and not counted:
``warnings.warn`` does not count them either, so a warning issued while a module is imported
names the importing line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import FrameType

__all__ = ["caller_stacklevel", "in_package", "user_stacklevel"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def in_package(filename: str) -> bool:
    """Whether ``filename`` (a code object's ``co_filename``) is a file of quiltpriv.

    Parameters
    ----------
    filename : str
        The file name of a frame's code.

    Examples
    --------
    >>> in_package(__file__), in_package("/usr/lib/python3/json/__init__.py")
    (True, False)
    """
    return os.path.abspath(filename).startswith(_PACKAGE)


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
    The caller here (a doctest) is outside the package, so it is the frame named:

    >>> caller_stacklevel(in_package)
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


def user_stacklevel(extra: int = 0) -> int:
    """The ``stacklevel`` that names the first frame outside the package
    (:func:`caller_stacklevel` stepping over :func:`in_package` frames).

    Parameters
    ----------
    extra : int
        How many frames below the caller ``warnings.warn`` is called: 0 when the caller itself
        calls it, 1 when it passes the level to a function it calls, and so on.

    Returns
    -------
    int
        The level for :func:`warnings.warn` (at least ``1 + extra``).

    Examples
    --------
    Called from outside the package (here, a doctest), the caller itself is the user's frame:

    >>> user_stacklevel()
    1
    """
    return caller_stacklevel(in_package, extra=extra, frame=sys._getframe(1))
