"""The optional compiled kernel (``quiltpriv/inference/_kernel.c``): loading it, and what its
calls return.

The one place that imports the compiled module: every engine reads :data:`_KERNEL` from here
at call time, so setting it to None (as ``QUILTPRIV_NO_KERNEL`` does at import) switches every
path to pure Python at once.
"""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from pathlib import Path
from typing import Any

_KERNEL_ABI = 4

# What the kernel's Network.joint returns: no order fits max_table; the joint; the joint, but
# some operation underflowed (the IEEE flag), so it is trusted only where it cannot have; the
# call's time budget passed first (also what Network.influence returns then; Network.price
# returns -1.0).
_KERNEL_NO_FIT, _KERNEL_OK, _KERNEL_UNDERFLOW, _KERNEL_LATE = 0, 1, 2, 3


def _budget(deadline: float | None) -> float:
    """The kernel's time budget in seconds for ``deadline`` (``time.monotonic()``; the kernel
    measures it on its own monotonic clock): -1.0 for none, 0.0 once it has passed."""
    return -1.0 if deadline is None else max(0.0, deadline - time.monotonic())


def _load_kernel() -> Any:
    """The compiled kernel, or None: not built, switched off, or built from other source."""
    if os.environ.get("QUILTPRIV_NO_KERNEL"):
        return None
    # The optional compiled bucket elimination (quiltpriv/inference/_kernel.c, built by pip
    # install).
    try:
        import _quiltpriv_kernel as kernel
    except ImportError:  # pragma: no cover - installed without a C compiler
        return None
    if getattr(kernel, "ABI", None) != _KERNEL_ABI:
        return None
    source = Path(__file__).with_name("_kernel.c")
    if source.exists():  # a source checkout: use the build only if it is of this source
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        if getattr(kernel, "SOURCE_SHA256", None) != digest:
            warnings.warn(f"{kernel.__file__} was built from another version of {source}; "
                          "using the pure-Python path (reinstall to rebuild the kernel)",
                          RuntimeWarning, stacklevel=2)
            return None
    return kernel


_KERNEL = _load_kernel()


def compiled_kernel() -> bool:
    """Whether ``inference="auto"`` runs the compiled bucket elimination.

    The kernel (``_quiltpriv_kernel``, built from ``quiltpriv/_kernel.c`` when the package is
    installed) is optional: without a C compiler at install time, or with the environment
    variable ``QUILTPRIV_NO_KERNEL`` set, the pure-Python path runs instead. Both are exact
    and agree to rounding (tests/inference/test_kernel.py); the kernel is faster.
    """
    return _KERNEL is not None
