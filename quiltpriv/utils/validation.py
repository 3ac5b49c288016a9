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
from typing import Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

from quiltpriv.errors import ParameterError, QuiltPrivError
from quiltpriv.utils.format import fmt_number as _fmt

#: The most records a query may declare: 2**53, beyond which counts are not exact floats.
MAX_RECORDS = 2**53

Boundaries = Literal["both", "left", "right", "neither"]

T = TypeVar("T")
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
    return f"{_fmt(x)}" if isinstance(x, float) else str(x)


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
                raise ParameterError(f"{name} must be a whole number, got {_fmt(x)}")
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
        return f"{_fmt(x, 4)}"
    return f"{_fmt(x)}" if isinstance(x, float) else str(x)


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float, or raise if it is not a finite number > 0."""
    return check_positive(epsilon, name)


def check_positive(value: object, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, or raise if it is not finite and > 0 (>= 0 if allowed)."""
    return float(check_scalar(value, name, min_val=0.0,
                              include_boundaries="both" if allow_zero else "right"))


def check_delta(delta: object, name: str = "delta", *, allow_zero: bool = False) -> float:
    """Return ``delta`` as a float, or raise if it is not in (0, 1) ([0, 1) if allowed)."""
    x = check_positive(delta, name, allow_zero=allow_zero)
    if x >= 1:
        raise ParameterError(f"{name} must be in {'[' if allow_zero else '('}0, 1), got {x}")
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
    try:
        arr = np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a probability vector (numbers), got "
                             f"{type(p).__name__}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"{name} must be a non-empty 1-d probability vector")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} contains NaN or infinite entries")
    if np.any(arr < 0):
        raise ParameterError(f"{name} has negative entries")
    if abs(arr.sum() - 1.0) > atol:
        raise ParameterError(f"{name} sums to {_fmt(arr.sum(), 12)}, not 1")
    return arr


def check_cost_matrix(cost: object, n: int | None = None, m: int | None = None, *,
                      name: str = "cost/metric") -> np.ndarray:
    """Return ``cost`` as a finite, non-negative float matrix (of shape ``(n, m)`` if given)."""
    try:
        c = np.asarray(cost, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a 2-d array of numbers") from None
    if c.ndim != 2:
        raise ParameterError(f"{name} must be a 2-d matrix, got shape {c.shape}")
    if (n is not None and c.shape[0] != n) or (m is not None and c.shape[1] != m):
        raise ParameterError(f"{name} has shape {c.shape}, expected ({n}, {m})")
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ParameterError(f"{name} entries must be finite and >= 0")
    return c


def check_relation_matrix(relation: object, n: int, m: int, *,
                          name: str = "relation") -> np.ndarray:
    """Return ``relation`` as an ``(n, m)`` boolean matrix (booleans or 0/1 entries)."""
    try:
        r = np.asarray(relation)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a boolean (0/1) matrix") from None
    if r.shape != (n, m):
        raise ParameterError(f"{name} has shape {r.shape}, expected ({n}, {m})")
    if r.dtype != bool:
        if r.dtype.kind not in "iuf" or not np.all(np.isin(r, (0, 1))):
            raise ParameterError(f"{name} must be a boolean (0/1) matrix")
        r = r.astype(bool)
    return r


def check_array(x: object, name: str, *, ndim: int | None = None,
                error: type[QuiltPrivError] = ParameterError, finite: bool = True) -> np.ndarray:
    """Return ``x`` as a finite float array (of ``ndim`` dimensions if given), else raise.

    ``error`` is the class raised (ModelError for a model's parameters, ParameterError for a
    mechanism's). With ``finite=False`` infinities are allowed (log-probabilities), NaN never.
    """
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise error(f"{name} must be an array of numbers, got {type(x).__name__}") from None
    if ndim is not None and arr.ndim != ndim:
        raise error(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise error(f"{name} contains NaN or infinite entries")
    if np.isnan(arr).any():
        raise error(f"{name} contains NaN")
    return arr


def check_instance(value: T, kind: type | tuple[type, ...], name: str, *,
                   error: type[QuiltPrivError] = ParameterError, hint: str = "") -> T:
    """Return ``value`` if it is an instance of ``kind``, else raise ``error`` naming both."""
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        want = " or ".join(k.__name__ for k in kinds)
        raise error(f"{name} must be a {want}{hint}, got {type(value).__name__}")
    return value


def check_path(path: object, name: str = "path") -> str | os.PathLike[str]:
    """Return ``path`` if it is a file name (a string or an ``os.PathLike``), else raise."""
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike) or not str(path):
        raise ParameterError(f"{name} must be a file name (str or pathlib.Path), got {path!r}")
    return path


def check_square_matrix(x: object, name: str, size: int | None = None, *,
                        error: type[QuiltPrivError] = ParameterError) -> np.ndarray:
    """Return ``x`` as a finite ``size x size`` float matrix (a number is a 1x1 matrix)."""
    a = check_array(x, name, error=error)
    if a.ndim == 0:
        a = a.reshape(1, 1)
    if (a.ndim != 2 or a.shape[0] != a.shape[1] or a.size == 0
            or (size is not None and a.shape[0] != size)):
        want = "a square" if size is None else f"a {size}x{size}"
        raise error(f"{name} must be {want} matrix (a number for 1x1), got shape {a.shape}")
    return a


def check_covariance(x: object, name: str, size: int | None = None, *,
                     error: type[QuiltPrivError] = ParameterError,
                     psd: bool = True) -> np.ndarray:
    """Return ``x`` as a finite, symmetric (to rounding) and, with ``psd``, positive
    semi-definite ``size x size`` matrix; the check's tolerances are relative to its largest
    entry (1e-12 for symmetry, 1e-10 for the smallest eigenvalue)."""
    a = check_square_matrix(x, name, size, error=error)
    scale = max(1.0, float(np.abs(a).max()))
    if not np.allclose(a, a.T, rtol=1e-10, atol=1e-12 * scale):
        raise error(f"{name} is not symmetric")
    if psd:
        lam = float(np.linalg.eigvalsh((a + a.T) / 2).min())
        if lam < -1e-10 * scale:
            raise error(f"{name} is not positive semi-definite (smallest eigenvalue "
                        f"{_fmt(lam, 3)})")
    return a


def check_log_vector(x: object, name: str) -> np.ndarray:
    """Return ``x`` as a non-empty 1-d float array without NaN; infinities are allowed (a
    log-probability of ``-inf``, a CDF key of ``+inf``)."""
    if isinstance(x, str | bytes):
        raise ParameterError(f"{name} must be a non-empty 1-d float array, got a string")
    arr = check_array(x, name, ndim=1, finite=False)
    if arr.size == 0:
        raise ParameterError(f"{name} must be a non-empty 1-d float array")
    return arr
