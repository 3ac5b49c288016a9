"""Shared helpers: parameter validators, safe file output, progress bars, formatting, directed
rounding and the Wasserstein distances between distributions (:mod:`quiltpriv.utils.distances`).

Every other subpackage may import from here; this subpackage imports only :mod:`quiltpriv.errors`.
"""
