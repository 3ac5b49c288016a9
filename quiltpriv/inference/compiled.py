"""The compiled kernel, ``quiltpriv.inference._kernel`` (built from
``quiltpriv/inference/_kernel.c`` by ``pip install``; see CMakeLists.txt): finding it, and what
its calls return.

The one place that loads the compiled module: every engine reads :data:`_KERNEL` from here at
call time, so setting it to None (as ``QUILTPRIV_NO_KERNEL`` does at import) switches every
path to pure Python at once.

Installed, the kernel is a submodule of this package. A source checkout (the test suite imports
``quiltpriv`` from the repository) has no build of its own: it loads the build of the installed
``quiltpriv`` distribution, found through :mod:`importlib.metadata`. Either way a build is used
only when it was made from the very ``_kernel.c`` beside this module (the SHA-256 it records):
a build of other source (installed before ``_kernel.c`` changed) is refused with a warning,
and the pure-Python engines run. ``QUILTPRIV_KERNEL_PATH`` names a build to load instead (a
file, or a folder holding ``_kernel*.so``: a developer's or the sanitizer's build from
``.ci/build-kernel``), under the same checks.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

#: The kernel's import name.
KERNEL_MODULE = "quiltpriv.inference._kernel"

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


def _load_file(path: Path) -> ModuleType:
    """The extension module in ``path`` (a file, or a folder holding one ``_kernel`` build),
    imported as :data:`KERNEL_MODULE`."""
    if path.is_dir():
        builds = [f for suffix in importlib.machinery.EXTENSION_SUFFIXES
                  for f in path.glob("_kernel" + suffix)]
        if len(builds) != 1:
            raise ImportError(f"{path} holds {len(builds)} builds of _kernel, not one")
        path = builds[0]
    spec = importlib.util.spec_from_file_location(KERNEL_MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _installed_build() -> Path | None:
    """The kernel file of an installed ``quiltpriv`` distribution, if one has it (each one found
    is asked: a checkout may also hold the metadata of an old build)."""
    names = {"quiltpriv/inference/_kernel" + s for s in importlib.machinery.EXTENSION_SUFFIXES}
    for dist in importlib.metadata.distributions(name="quiltpriv"):
        for f in dist.files or ():
            if f.as_posix() in names:
                located = Path(str(f.locate()))
                if located.is_file():
                    return located
    return None


def _find_kernel() -> tuple[Any, str, bool]:
    """The kernel module (or None), why not, and whether that deserves a warning."""
    named = os.environ.get("QUILTPRIV_KERNEL_PATH")
    if named:
        try:
            return _load_file(Path(named)), "", False
        except (ImportError, OSError) as e:
            return None, f"QUILTPRIV_KERNEL_PATH={named} does not load ({e})", True
    try:  # installed: the kernel is this package's submodule
        return importlib.import_module(KERNEL_MODULE), "", False
    except ModuleNotFoundError as e:
        if e.name != KERNEL_MODULE:
            raise
    except ImportError as e:  # pragma: no cover - a broken build
        return None, f"the compiled kernel does not load ({e})", True
    # A source checkout: the installed distribution's build, if there is one.
    installed = _installed_build()
    if installed is None:  # installed without it (QUILTPRIV_KERNEL=OFF), or not installed
        return None, "no build of the compiled kernel is installed", False
    try:
        return _load_file(installed), "", False
    except ImportError as e:  # pragma: no cover - a broken build
        return None, f"{installed} does not load ({e})", True


def kernel_or_reason() -> tuple[Any, str, bool]:
    """The checked compiled kernel, or None and why not (one phrase), and whether the reason
    deserves a warning (a build that exists but is refused, or a named one that does not
    load; not the kernel switched off or never built)."""
    if os.environ.get("QUILTPRIV_NO_KERNEL"):
        return None, "switched off by QUILTPRIV_NO_KERNEL", False
    kernel, why, loud = _find_kernel()
    if kernel is None:
        return None, why, loud
    path = getattr(kernel, "__file__", KERNEL_MODULE)
    source = Path(__file__).with_name("_kernel.c")
    if getattr(kernel, "ABI", None) != _KERNEL_ABI:
        return None, (f"{path} has interface {getattr(kernel, 'ABI', None)}, not "
                      f"{_KERNEL_ABI}; reinstall to rebuild it"), True
    if source.exists() and getattr(kernel, "SOURCE_SHA256", None) != hashlib.sha256(
            source.read_bytes()).hexdigest():
        return None, (f"{path} was built from another version of {source}; "
                      "reinstall to rebuild it"), True
    sys.modules.setdefault(KERNEL_MODULE, kernel)
    return kernel, "", False


def _load_kernel() -> Any:
    """The compiled kernel, or None: not built, switched off, or refused (see
    :func:`kernel_or_reason`; a refused build gives a warning line saying why)."""
    kernel, why, loud = kernel_or_reason()
    if loud:
        warnings.warn(f"{why}: using the pure-Python engines", RuntimeWarning, stacklevel=2)
    return kernel


_KERNEL = _load_kernel()


def compiled_kernel() -> bool:
    """Whether ``inference="auto"`` runs the compiled bucket elimination.

    The kernel (``quiltpriv.inference._kernel``, built from ``quiltpriv/inference/_kernel.c``
    when the package is installed) can be left out (``pip install .
    -Ccmake.define.QUILTPRIV_KERNEL=OFF``) or switched off (the environment variable
    ``QUILTPRIV_NO_KERNEL``); the pure-Python path runs instead. Both are exact and agree to
    rounding (tests/inference/test_kernel.py); the kernel is 10-100x faster.
    """
    return _KERNEL is not None
