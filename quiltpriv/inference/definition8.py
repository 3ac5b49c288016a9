"""Definition 8 of [ZOC22] on a joint table: the max-influence of ``phi_Q`` on ``phi_i`` given
``P(phi_i, phi_Q)``.

    e(Q | i) = max_q log max_a P(q | a) / min_b P(q | b)

in float64 (numpy, a pure-Python loop for small tables, or the compiled kernel) and on exact
integer joints (conditionals compared by cross-multiplication).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from quiltpriv.errors import QuiltPrivError
from quiltpriv.inference import compiled
from quiltpriv.inference.engines.base import DEFAULT_SETTINGS


def _influence_from_joint(joint: np.ndarray, *, use_kernel: bool = True,
                          small_joint: int = DEFAULT_SETTINGS.small_joint,
                          ) -> tuple[float, int, int]:
    """``max_q log max_a P(q|a) / min_b P(q|b)`` from ``joint[a, q...]``, and the argmax pair.

    In the compiled kernel when it is loaded and ``use_kernel``; else in numpy, or in a
    pure-Python loop for tables of at most ``small_joint`` entries
    (:attr:`EngineSettings.small_joint <quiltpriv.inference.engines.base.EngineSettings>`).
    """
    if use_kernel and compiled._KERNEL is not None and joint.dtype == np.float64:
        return compiled._KERNEL.definition8(np.ascontiguousarray(joint), joint.shape[0])
    if joint.size <= small_joint:
        return _influence_small(joint.reshape(joint.shape[0], -1).tolist())
    j = joint.reshape(joint.shape[0], -1)
    p_i = j.sum(axis=1)
    positive = p_i > 0
    if positive.all():
        valid = None
        cond = j / p_i[:, None]
    else:
        valid = np.flatnonzero(positive)
        cond = j[valid] / p_i[valid, None]
    hi = cond.max(axis=0)
    lo = cond.min(axis=0)
    if not lo.all():  # some joint state impossible under some value of phi_i
        bad = np.flatnonzero((lo == 0) & (hi > 0))
        if bad.size:
            col = int(bad[0])
            value = math.inf
        else:
            possible = np.flatnonzero(hi > 0)
            if not possible.size:
                a = 0 if valid is None else int(valid[0])
                return 0.0, a, a
            ratio = _log_quotients(hi[possible], lo[possible])
            col = int(possible[ratio.argmax()])
            value = float(ratio.max())
    else:
        ratio = _log_quotients(hi, lo)
        col = int(ratio.argmax())
        value = float(ratio[col])
    a, b = int(cond[:, col].argmax()), int(cond[:, col].argmin())
    if valid is not None:
        a, b = int(valid[a]), int(valid[b])
    return max(value, 0.0), a, b


def _log_quotients(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``log(hi / lo)`` per column (``log hi - log lo`` where ``lo`` is subnormal), as the
    kernel's Definition 8 computes its terms; ``0 < lo <= hi``."""
    normal = lo >= sys.float_info.min
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(normal, np.log(hi / np.where(normal, lo, 1.0)),
                        np.log(hi) - np.log(lo))


def _influence_small(rows: list[list[float]]) -> tuple[float, int, int]:
    """:func:`_influence_from_joint` on a small table given as rows (same result, no numpy)."""
    cond = []
    for a, r in enumerate(rows):
        total = sum(r)
        if total > 0:
            cond.append((a, [x / total for x in r]))
    best, best_pair, top = -1.0, (cond[0][0], cond[0][0]), 0.0
    for col in range(len(rows[0])):
        hi_a, hi = lo_a, lo = cond[0][0], cond[0][1][col]
        for a, c in cond:
            x = c[col]
            if x > hi:
                hi_a, hi = a, x
            elif x < lo:
                lo_a, lo = a, x
        if hi <= 0:
            continue
        if lo == 0:
            return math.inf, hi_a, lo_a
        if lo >= sys.float_info.min:  # the kernel's terms and its skipping of ties
            ratio = hi / lo
            if ratio <= top:
                continue
            top = ratio
            value = math.log(ratio)
        else:
            value = math.log(hi) - math.log(lo)
        if value > best:
            best, best_pair = value, (hi_a, lo_a)
    return max(best, 0.0), best_pair[0], best_pair[1]


def _influence_exact(joint: np.ndarray) -> tuple[float, int, int]:
    """Definition 8 on an exact joint (Python ints or Fractions; axis 0 is ``phi_i``).

    Conditionals are compared exactly by cross-multiplication; only the final log of the
    largest ratio is rounded (by :func:`_log_ratio`, a few ulps).
    """
    from fractions import Fraction

    rows = [list(r) for r in np.asarray(joint, dtype=object).reshape(joint.shape[0], -1)]
    totals = [sum(r, 0) for r in rows]
    valid = [a for a, t in enumerate(totals) if t > 0]
    if not valid:
        raise QuiltPrivError("the sensitive attribute has no value of positive probability")
    best: Fraction | None = None
    best_pair = (valid[0], valid[0])
    for col in range(len(rows[0])):
        hi_a = lo_a = valid[0]
        for a in valid[1:]:  # P(q | a) = rows[a][col] / totals[a], compared exactly
            if rows[a][col] * totals[hi_a] > rows[hi_a][col] * totals[a]:
                hi_a = a
            if rows[a][col] * totals[lo_a] < rows[lo_a][col] * totals[a]:
                lo_a = a
        hi_num = rows[hi_a][col] * totals[lo_a]
        lo_num = rows[lo_a][col] * totals[hi_a]
        if hi_num <= 0:
            continue
        if lo_num == 0:
            return math.inf, hi_a, lo_a
        ratio = Fraction(hi_num) / Fraction(lo_num)
        if best is None or ratio > best:
            best, best_pair = ratio, (hi_a, lo_a)
    if best is None or best <= 1:
        return 0.0, best_pair[0], best_pair[1]
    return _log_ratio(best.numerator, best.denominator), best_pair[0], best_pair[1]


def _log_ratio(num: int, den: int) -> float:
    """``log(num / den)`` for positive integers of any size, to a few ulps.

    The quotient is scaled by a power of two into ``[0.5, 2]`` (Python's int true division is
    correctly rounded), so neither overflow nor underflow can occur.
    """
    shift = num.bit_length() - den.bit_length()
    r = num / (den << shift) if shift >= 0 else (num << -shift) / den
    return math.log(r) + shift * math.log(2.0)
