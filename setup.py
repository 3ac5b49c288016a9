"""Build script for the optional compiled kernel; everything else is in pyproject.toml.

``_quiltpriv_kernel`` (quiltpriv/inference/_kernel.c) is bucket elimination in C, the fast path of
``quiltpriv.inference.influence``. It is optional: where it cannot be compiled (no C compiler), the
install still succeeds and quiltpriv uses its pure-Python path, which gives the same results.
It is a top-level module so that it is found from site-packages even when ``quiltpriv`` itself
is imported from a source checkout (as the test suite does).
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "quiltpriv/inference/_kernel.c"
# The build records which source it came from, so that a source checkout can tell a stale
# build (installed before _kernel.c changed) from a current one and not use it.
DIGEST = hashlib.sha256((Path(__file__).parent / SOURCE).read_bytes())

setup(ext_modules=[Extension(
    "_quiltpriv_kernel", [SOURCE], optional=True,
    define_macros=[("KERNEL_SOURCE_SHA256", f'"{DIGEST.hexdigest()}"')],
)])
