"""Shared helpers: parameter checks (``validation``), directed rounding that errs towards
privacy (``rounding``), the memory budget (``memory``), atomic file output (``io``), progress
bars (``progress``), how numbers, sets, tables and HTML are written (``format``), the JSON
form of results (``serialize``) and the Wasserstein distances between distributions
(:mod:`quiltpriv.utils.distances`).

Every other subpackage may import from here; this subpackage imports only :mod:`quiltpriv.errors`.
"""
