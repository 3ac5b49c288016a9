"""When float64 is trusted: a static bound on the least value any intermediate can take.

See :mod:`quiltpriv.inference.influence` (floating point, at every magnitude): a query's
float64 result is trusted without the compiled kernel's IEEE flag only where the product of
the least positive CPD entries of its ancestral set is at least ``2**SAFE_LOG2_FLOOR``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from quiltpriv.inference.cache import InferenceCache
from quiltpriv.inference.engines.base import LEAST_SAFE_LOG2_FLOOR
from quiltpriv.inference.methods import InferenceMethod

if TYPE_CHECKING:
    from quiltpriv.model.network import Theta


#: The float path is used for a query only when the product of the least positive CPD entries
#: of its ancestral set is at least ``2**SAFE_LOG2_FLOOR``: then no intermediate of the
#: elimination can leave float64's normal range (which ends at ``2**-1022``), and the margin of
#: 22 binary orders absorbs the rounding of the products themselves. The default of
#: :attr:`EngineSettings.safe_log2_floor <quiltpriv.inference.engines.base.EngineSettings>`,
#: which may raise it (never lower it).
SAFE_LOG2_FLOOR = LEAST_SAFE_LOG2_FLOOR


def subnormals_kept() -> bool:
    """Whether numpy's arithmetic here keeps subnormal numbers (no flush-to-zero, no
    denormals-are-zero): the underflow flag then marks every result that lost precision."""
    with np.errstate(all="ignore"):
        tiny = np.array([2.0**-1070])
        kept_in = (tiny * 4.0)[0] == 2.0**-1068  # denormals-are-zero reads tiny as 0
        kept_out = (np.array([2.0**-1000]) * np.array([2.0**-30]))[0] == 2.0**-1030
    return bool(kept_in and kept_out)


def _float_safe_for(theta: Theta, member: int, nodes: tuple[str, ...],
                    inference: InferenceMethod, floor: int = SAFE_LOG2_FLOOR) -> bool:
    """Whether no float64 intermediate of the query over ``nodes`` can underflow.

    The whole member's bound (cached) settles most models at once; only a model with tiny
    probabilities needs the query's own ancestral set (the junction tree touches every CPD).
    """
    if _float_safe(theta, member, theta.nodes, floor):
        return True
    return inference != "junction_tree" and _float_safe(
        theta, member, theta.ancestral_set(nodes), floor)


def _log2_floors(theta: Theta, member: int) -> tuple[int, ...]:
    """Per node (index), an integer ``k`` with ``2**k <=`` its CPD's least positive entry.

    ``frexp`` gives ``x = f * 2**e`` with ``f`` in ``[0.5, 1)``, so ``e - 1`` is exact and
    never above ``log2(x)``, subnormal ``x`` included. Cached per member.
    """
    hit = InferenceCache.of(theta).log2_floors.get(member)
    if hit is None:
        out = []
        for v in theta.nodes:
            t = np.asarray(theta.members[member][v].table, dtype=np.float64)
            positive = t[t > 0]
            out.append(math.frexp(float(positive.min()))[1] - 1 if positive.size else 0)
        hit = InferenceCache.of(theta).log2_floors[member] = tuple(out)
    return hit


def _float_safe(theta: Theta, member: int, scope: Iterable[str],
                floor: int = SAFE_LOG2_FLOOR) -> bool:
    """Whether no float64 intermediate over the CPDs of ``scope`` can leave the normal range.

    Every intermediate is a sum of products (or, in the junction tree, a ratio of sums) of
    entries of those CPDs, all at most one, so none is below the product of their least positive
    entries; its exponent is summed exactly. Safe when that exponent is at least ``floor``
    (:attr:`EngineSettings.safe_log2_floor`, never below :data:`SAFE_LOG2_FLOOR`). The whole
    network's answer is cached.
    """
    if floor < SAFE_LOG2_FLOOR:  # a lower floor could trust float64 where it underflows
        raise AssertionError(f"safe log2 floor {floor} below {SAFE_LOG2_FLOOR}")
    floors = _log2_floors(theta, member)
    if scope is theta.nodes:
        safe = InferenceCache.of(theta).float_safe
        hit = safe.get((member, floor))
        if hit is None:
            hit = safe[member, floor] = sum(floors) >= floor
        return hit
    index = theta.index
    return sum(floors[index[v]] for v in scope) >= floor
