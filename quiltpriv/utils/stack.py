"""Which line a warning names: the user's, however many of the package's frames stand between.

``warnings.warn(..., stacklevel=k)`` names the ``k``-th frame up from its caller. A fixed ``k``
breaks as soon as a wrapper (a deprecated-keyword decorator, a registry adapter, a release
flow) adds a frame, and the warning then names a line inside quiltpriv, which a user cannot act
on and a ``warnings`` filter by module cannot select. :func:`user_stacklevel` counts the frames
instead.
"""

from __future__ import annotations

import os
import sys
from types import FrameType

__all__ = ["user_stacklevel"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_stacklevel(extra: int = 0) -> int:
    """The ``stacklevel`` that names the first frame outside the package.

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
    frame: FrameType | None = sys._getframe(1)
    level = 1 + extra
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level
