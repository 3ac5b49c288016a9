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
names the importing line. The walker itself lives in the package's lowest layer
(``quiltpriv._frames``), beside ``quiltpriv._compat``, which uses it; it is imported from here.
"""

from __future__ import annotations

import os
import sys

from quiltpriv._frames import caller_stacklevel

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
