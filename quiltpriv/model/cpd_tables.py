"""Checking and normalising the conditional probability tables of a network.

Every way of building a :class:`~quiltpriv.model.network.Theta` (pgmpy, tables, JSON, BIF,
time-series chains) passes its CPDs through ``_check_table`` or its vectorised form
``_check_tables`` (the model package's own helpers: their callers have checked the shapes):
finite, non-negative, each column summing to one within :data:`CPD_SUM_TOLERANCE`, and
renormalised only when its correctly rounded sum is more than :data:`KEEP_SUM_ULPS` ulps from
one, so that a model written and read back keeps its fingerprint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from quiltpriv.errors import ModelError
from quiltpriv.utils.format import fmt_number as _fmt

#: Default tolerance for a CPD column to count as summing to one. Columns within it are
#: renormalised exactly (BIF files print rounded probabilities); columns outside it are an error.
CPD_SUM_TOLERANCE = 1e-6

#: A CPD column whose correctly rounded sum is within this many ulps (of 1.0) of one is kept
#: as given; any other column within the tolerance is renormalised (:func:`_check_table`).
KEEP_SUM_ULPS = 4

#: Up to this many states, column sums are compensated (Neumaier) vectorised over the columns;
#: beyond it each column is summed by math.fsum.
_COMPENSATED_STATES = 64


def _check_table(values: Any, shape: tuple[int, ...], what: str, tolerance: float) -> np.ndarray:
    """``values`` as a read-only float64 CPD of ``shape`` (axes ``(node, *parents)``), checked.

    Parameters
    ----------
    values : array_like
        The table (never aliased or frozen: the result is a copy).
    shape : tuple of int
        Its expected shape; the first axis is the node's states.
    what : str
        The table's name in error messages (``"member: CPD of 'x'"``).
    tolerance : float
        How far from one a column may sum (:data:`CPD_SUM_TOLERANCE` by default everywhere).

    Raises
    ------
    ModelError
        For non-numeric, wrongly sized, non-finite or negative entries, a column summing to
        one only outside ``tolerance``, or a subnormal entry in a column to renormalise.
    """
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} has non-numeric values") from exc
    if arr.size != math.prod(shape):
        raise ModelError(f"{what} has {arr.size} entries, expected shape {shape}")
    arr = arr.reshape(shape)
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} contains NaN or infinite probabilities")
    if np.any(arr < 0):
        raise ModelError(f"{what} contains negative probabilities")
    sums = arr.sum(axis=0)
    bad = np.abs(sums - 1.0) > tolerance
    if np.any(bad):
        worst = float(sums.flat[int(np.argmax(np.abs(sums - 1.0)))])
        raise ModelError(
            f"{what} does not sum to one over the node's states ({int(bad.sum())} column(s); "
            f"worst sums to {_fmt(worst, 9)})"
        )
    # A column already normalised up to float rounding is kept as given: dividing would move its
    # entries by an ulp, so a model written by theta_to_dict and read back would no longer have
    # the same fingerprint. "Up to rounding" is decided on the correctly rounded sum, within
    # KEEP_SUM_ULPS ulps of one whatever the cardinality k: the exact sum is then within
    # 10 * 2^-53 of one, so the influence's log-ratios move by at most 4 * 10 * 2^-53 per node,
    # far inside its rounding margin (a tolerance of 8 k ulps, as before, let a 2,000,000-state
    # column report an influence 9.1e-10 below the exact one on the normalised model).
    # Every other column is divided by that accurate sum: its entries are then within 2 ulps
    # of the exactly normalised ones, and it sums to one within 5 * 2^-53 (so it is kept as
    # given when read back).
    exact_sums = _accurate_column_sums(arr)
    off = np.abs(exact_sums - 1.0) > KEEP_SUM_ULPS * np.finfo(np.float64).eps
    if not np.any(off):
        arr = arr.copy()  # never freeze (or alias) the caller's array
    else:
        arr = np.where(off, arr / exact_sums, arr)  # renormalise within the tolerance
        # Division rounds a subnormal entry by up to its own size; refuse rather than guess.
        tiny = (arr > 0) & (arr < np.finfo(np.float64).tiny) & off
        if np.any(tiny):
            raise ModelError(
                f"{what} has a probability below float64's normal range "
                f"({_fmt(float(arr[tiny].min()), 3)}) in a column that does not sum to one "
                "exactly; "
                "renormalising would round it by up to its own size (make the column sum to "
                "one, or use 0 for an impossible state)")
    arr.setflags(write=False)
    return arr


def _check_tables(items: Sequence[tuple[Any, tuple[int, ...], str]],
                  tolerance: float) -> list[np.ndarray]:
    """:func:`_check_table` of every ``(values, shape, what)``, the checks vectorised over all.

    Each table is converted on its own; finiteness, signs, the column sums against
    ``tolerance`` and the keep-as-given test (:data:`KEEP_SUM_ULPS`) are then decided on one
    concatenated array per cardinality, which is what makes a 100,000-node model load in a
    fraction of the per-table time. The column-wise arithmetic is the same as
    :func:`_check_table`'s, column for column, so the outcome is the same: a table that fails
    any check, or needs renormalising, goes through :func:`_check_table` itself (in the given
    order), which raises the same error or returns the same array.
    """
    arrs = _converted_tables(items, tolerance)
    if not arrs:
        return []
    flat = np.concatenate([a.ravel() for a in arrs])
    slow = np.zeros(len(arrs), dtype=bool)
    if not (np.all(np.isfinite(flat)) and not np.any(flat < 0)):
        slow[:] = True  # the per-table checks name the first offending table
    else:
        by_k: dict[int, list[int]] = {}
        for i, (_, shape, _) in enumerate(items):
            by_k.setdefault(shape[0], []).append(i)
        for k, idx in by_k.items():
            blocks = [arrs[i].reshape(k, -1) for i in idx]
            wide = np.concatenate(blocks, axis=1)
            bounds = np.cumsum([0] + [b.shape[1] for b in blocks])
            bad = np.abs(wide.sum(axis=0) - 1.0) > tolerance
            off = np.abs(_accurate_column_sums(wide) - 1.0) > (
                KEEP_SUM_ULPS * np.finfo(np.float64).eps)
            flagged = np.cumsum(np.concatenate(([0], (bad | off).astype(np.int64))))
            hit = flagged[bounds[1:]] - flagged[bounds[:-1]] > 0
            slow[np.asarray(idx)[hit]] = True
    out = []
    for i, (values, shape, what) in enumerate(items):
        if slow[i]:
            out.append(_check_table(values, shape, what, tolerance))
        else:
            arr = arrs[i]
            arr.setflags(write=False)
            out.append(arr)
    return out


def _converted_tables(items: Sequence[tuple[Any, tuple[int, ...], str]],
                      tolerance: float) -> list[np.ndarray]:
    """Every ``values`` of ``items`` as a float64 array of its ``shape`` (a copy, never the
    caller's), or the precise :func:`_check_table` error of the first that is not one.

    Tables of one shape are converted by one ``np.array`` call over all of them (100,000
    small calls were most of the conversion time of a 100,000-node model); a group numpy
    cannot convert whole (a ragged or non-numeric table among them) is converted table by
    table, as before, so the error names the same table.
    """
    arrs: list[np.ndarray | None] = [None] * len(items)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (values, shape, _) in enumerate(items):
        if isinstance(values, list):
            groups.setdefault(shape, []).append(i)
    for shape, idx in groups.items():
        if len(idx) < 2:
            continue
        try:
            block = np.array([items[i][0] for i in idx], dtype=float)
        except (TypeError, ValueError):
            continue
        if block.shape == (len(idx), *shape):
            for j, i in enumerate(idx):
                arrs[i] = block[j]
    out = []
    for i, (values, shape, what) in enumerate(items):
        arr = arrs[i]
        if arr is None:
            try:
                arr = np.array(values, dtype=float)  # a copy: never freeze or alias the caller's
            except (TypeError, ValueError):
                arr = None
            if arr is None or arr.size != math.prod(shape):
                _check_table(values, shape, what, tolerance)  # raises the precise error
                raise AssertionError("unreachable")  # pragma: no cover
        out.append(arr.reshape(shape))
    return out


def _accurate_column_sums(arr: np.ndarray) -> np.ndarray:
    """Sums over axis 0, each within one rounding of the exact sum, whatever the cardinality.

    numpy's sum along axis 0 adds rows one after another (error up to k ulps for k states);
    math.fsum is correctly rounded; Neumaier's compensated sum errs by at most
    2u |s| + O(k u^2) sum |x|, which for k <= 64 non-negative entries is below 2.01 u |s|.
    """
    k = arr.shape[0]
    flat = arr.reshape(k, -1)
    if k > _COMPENSATED_STATES:
        sums = np.array([math.fsum(flat[:, c].tolist()) for c in range(flat.shape[1])])
        return sums.reshape(arr.shape[1:])
    total = flat[0].copy()
    comp = np.zeros_like(total)
    for row in flat[1:]:
        t = total + row
        big = np.abs(total) >= np.abs(row)
        comp += np.where(big, (total - t) + row, (row - t) + total)
        total = t
    return (total + comp).reshape(arr.shape[1:])
