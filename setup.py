"""Build script for the optional compiled kernel; everything else is in pyproject.toml.

``_quiltpriv_kernel`` (quiltpriv/_kernel.c) is bucket elimination in C, the fast path of
``quiltpriv.influence``. It is optional: where it cannot be compiled (no C compiler), the
install still succeeds and quiltpriv uses its pure-Python path, which gives the same results.
It is a top-level module so that it is found from site-packages even when ``quiltpriv`` itself
is imported from a source checkout (as the test suite does).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("_quiltpriv_kernel", ["quiltpriv/_kernel.c"], optional=True)])
