"""Small input checks shared by every module (one place, one wording).

:func:`check_scalar` is the one numeric check (in the spirit of scikit-learn's
``check_scalar``): type, finiteness, integer-ness and range, with the parameter's name in the
message. The other ``check_*`` functions are named uses of it; the command line parses its
numeric options through the same function (``quiltpriv.cli.core.number``), so an API
parameter and its option are refused with the same words.
"""

from __future__ import annotations

import math
import os
from numbers import Integral, Real
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from quiltpriv.errors import ParameterError

#: The most records a query may declare: 2**53, beyond which counts are not exact floats.
MAX_RECORDS = 2**53

Boundaries = Literal["both", "left", "right", "neither"]

# Every check_* below takes ``object``: its argument is untrusted input, and the check is what
# turns it into a value of the returned type (or raises ParameterError).


def _interval(min_val: float | None, max_val: float | None, closed: Boundaries) -> str:
    """``"> 0"``, ``">= 1"``, ``"in [1, 2**53]"``, ... for a message."""
    left = closed in ("both", "left")
    right = closed in ("both", "right")
    if min_val is not None and max_val is not None:
        return (f"in {'[' if left else '('}{_num(min_val)}, {_num(max_val)}"
                f"{']' if right else ')'}")
    if min_val is not None:
        return f"{'>=' if left else '>'} {_num(min_val)}"
    if max_val is not None:
        return f"{'<=' if right else '<'} {_num(max_val)}"
    return ""


def _num(x: float) -> str:
    if isinstance(x, int) and x >= 2**20 and x & (x - 1) == 0:
        return f"2**{x.bit_length() - 1}"  # MAX_RECORDS reads better as 2**53
    return f"{x:g}" if isinstance(x, float) else str(x)


def check_scalar(
    value: object,
    name: str,
    *,
    integer: bool = False,
    min_val: float | None = None,
    max_val: float | None = None,
    include_boundaries: Boundaries = "both",
) -> float:
    """Return ``value`` as a finite float (an int if ``integer``), or raise naming ``name``.

    Parameters
    ----------
    value : object
        The value to check. ``bool`` is refused (it is not a count or a scale); numpy scalars
        are accepted. With ``integer``, a whole float such as ``1e6`` is accepted.
    name : str
        How the caller calls it (a Python keyword, or a command-line option such as
        ``"--records"``); the message starts with it.
    integer : bool
        Require a whole number and return an ``int`` (compared exactly, however large).
    min_val, max_val : float, optional
        Bounds of the allowed range.
    include_boundaries : {"both", "left", "right", "neither"}
        Which bounds are allowed values.

    Raises
    ------
    ParameterError
        Not a number, NaN, infinite, not whole (``integer``) or out of range.
    """
    kind = "a whole number" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, Real | np.number):
        raise ParameterError(f"{name} must be {kind}, got {value!r}")
    x: float
    if isinstance(value, Integral | np.integer):
        x = int(value)  # exact: no rounding of huge integers before the range check
    else:
        x = float(value)
        if not math.isfinite(x):
            raise ParameterError(f"{name} must be finite, got {x}")
        if integer:
            if x != math.floor(x):
                raise ParameterError(f"{name} must be a whole number, got {x:g}")
            x = int(x)
    if integer and not isinstance(x, int):  # a non-integral numpy type (complex, ...)
        raise ParameterError(f"{name} must be a whole number, got {value!r}")
    left = include_boundaries in ("both", "left")
    right = include_boundaries in ("both", "right")
    if ((min_val is not None and (x < min_val or (x == min_val and not left)))
            or (max_val is not None and (x > max_val or (x == max_val and not right)))):
        want = ("a whole number " if integer else "") + _interval(min_val, max_val,
                                                                   include_boundaries)
        shown = x if isinstance(value, Integral | np.integer) else float(value)
        raise ParameterError(f"{name} must be {want}, got {_shown(shown)}")
    return x


def _shown(x: float) -> str:
    """``x`` for a message: huge integers in short scientific form, not hundreds of digits."""
    if isinstance(x, int) and abs(x) >= 10**15:
        if x.bit_length() > 1000:
            return f"an integer of about {int(x.bit_length() * math.log10(2))} digits"
        return f"{x:.4g}"
    return f"{x:g}" if isinstance(x, float) else str(x)


def check_epsilon(eps: object, name: str = "epsilon") -> float:
    """Return ``eps`` as a float, or raise if it is not a finite number > 0."""
    return check_positive(eps, name)


def check_positive(value: object, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, or raise if it is not finite and > 0 (>= 0 if allowed)."""
    return float(check_scalar(value, name, min_val=0.0,
                              include_boundaries="both" if allow_zero else "right"))


def check_delta(delta: object, name: str = "delta") -> float:
    """Return ``delta`` as a float, or raise if it is not in the open interval (0, 1)."""
    x = check_positive(delta, name)
    if x >= 1:
        raise ParameterError(f"{name} must be in (0, 1), got {x}")
    return x


def check_records(n: object, name: str = "records") -> int:
    """Return the number of records as an int, or raise unless it is whole, in [1, 2**53]."""
    return int(check_scalar(n, name, integer=True, min_val=1, max_val=MAX_RECORDS))


def check_n_jobs(n_jobs: object, name: str = "n_jobs") -> int | None:
    """``None``, or a whole number of parallel workers: ``k >= 1``, or ``-1`` for every core.

    joblib also reads ``-2`` as "every core but one" and so on; those are accepted down to
    ``-(cores)``. ``0`` means nothing and is refused.
    """
    if n_jobs is None:
        return None
    k = int(check_scalar(n_jobs, name, integer=True))
    if k == 0 or k < -(os.cpu_count() or 1):
        raise ParameterError(f"{name} must be >= 1, or -1 for every core (-2 all but one, "
                             f"...), got {k}")
    return k


def check_vector(x: object, name: str, length: int | None = None) -> NDArray[np.float64]:
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


def check_probability_vector(p: object, name: str, *,
                             atol: float = 1e-9) -> NDArray[np.float64]:
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
