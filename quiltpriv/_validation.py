"""Small input checks shared by every module (one place, one wording)."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from .errors import ParameterError


def check_epsilon(eps: object, name: str = "epsilon") -> float:
    """Return ``eps`` as a float, or raise if it is not a finite number > 0."""
    return check_positive(eps, name)


def check_positive(value: object, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, or raise if it is not finite and > 0 (>= 0 if allowed)."""
    if isinstance(value, bool) or not isinstance(value, Real | np.number):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if math.isnan(x):
        raise ParameterError(f"{name} is NaN")
    if math.isinf(x):
        raise ParameterError(f"{name} must be finite, got {x}")
    if x < 0 or (x == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ParameterError(f"{name} must be {bound}, got {x}")
    return x


def check_delta(delta: object, name: str = "delta") -> float:
    """Return ``delta`` as a float, or raise if it is not in the open interval (0, 1)."""
    x = check_positive(delta, name)
    if x >= 1:
        raise ParameterError(f"{name} must be in (0, 1), got {x}")
    return x


def check_records(n: object, name: str = "records") -> int:
    """Return the number of records as an int, or raise if it is not a whole number >= 1."""
    if isinstance(n, bool) or not isinstance(n, Real | np.number):
        raise ParameterError(f"{name} must be a whole number >= 1, got {n!r}")
    x = float(n)
    if not math.isfinite(x) or x != int(x) or x < 1:
        raise ParameterError(f"{name} must be a whole number >= 1, got {n!r}")
    return int(x)


def check_vector(x: object, name: str, length: int | None = None) -> np.ndarray:
    """Return ``x`` (a number or a 1-d sequence) as a finite, non-empty float vector.

    ``length``, when given, is the required number of entries.
    """
    try:
        arr = np.atleast_1d(np.asarray(x, dtype=float))
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number or a vector of numbers") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"{name} must be a number or a non-empty 1-d vector, got shape "
                             f"{arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} contains NaN or infinite entries")
    if length is not None and arr.size != length:
        raise ParameterError(f"{name} has length {arr.size}, expected {length}")
    return arr


def check_probability_vector(p: object, name: str, *, atol: float = 1e-9) -> np.ndarray:
    """Return ``p`` as a float array that is finite, non-negative and sums to one."""
    arr = np.asarray(p, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"{name} must be a non-empty 1-d probability vector")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} contains NaN or infinite entries")
    if np.any(arr < 0):
        raise ParameterError(f"{name} has negative entries")
    if abs(arr.sum() - 1.0) > atol:
        raise ParameterError(f"{name} sums to {arr.sum():.12g}, not 1")
    return arr
