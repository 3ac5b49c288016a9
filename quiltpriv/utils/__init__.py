"""Shared helpers with no privacy meaning: parameter validators, safe file output, progress bars.

Every other subpackage may import from here; this subpackage imports only :mod:`quiltpriv.errors`.
"""
