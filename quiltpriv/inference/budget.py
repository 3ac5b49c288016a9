"""What bounds an exact computation: the largest table, the deadline, and the refusal.

Every engine refuses a query it cannot afford with :class:`InfluenceTooExpensive` (never a
guess): a table above ``max_table`` entries, or a ``deadline`` (``time.monotonic()``) passed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from quiltpriv.errors import QuiltPrivError
from quiltpriv.utils.memory import table_limit, too_large
from quiltpriv.utils.validation import check_positive, check_scalar

if TYPE_CHECKING:
    from quiltpriv.model.network import Theta


class InfluenceTooExpensive(QuiltPrivError):
    """The exact joint of ``(phi_i, phi_Q)`` needs a table larger than the allowed size.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> try:
    ...     qp.max_influence(qp.load_model("student"), "income", ["gender"], max_table=1)
    ... except qp.InfluenceTooExpensive as error:
    ...     print(error)
    the joint table over 2 nodes has 9 entries, needing about 288 bytes of memory (limit 1 ...)
    """


#: Largest intermediate or output table (entries) the exact computation builds by default: as
#: many as the default memory budget holds (:func:`quiltpriv.utils.memory.table_limit`).
DEFAULT_MAX_TABLE = table_limit()


def _late(deadline: float | None, what: str) -> InfluenceTooExpensive:
    return InfluenceTooExpensive(f"the time limit passed during {what}")


def _check_deadline_now(deadline: float | None, what: str) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _late(deadline, what)


def deadline_after(time_limit: object) -> float | None:
    """The ``time.monotonic()`` deadline ``time_limit`` seconds from now (None: no limit).

    Raises
    ------
    ParameterError
        When ``time_limit`` is not a finite number of seconds > 0.

    Examples
    --------
    >>> import time
    >>> deadline_after(None) is None, deadline_after(60) > time.monotonic() + 59
    (True, True)
    """
    if time_limit is None:
        return None
    return time.monotonic() + check_positive(time_limit, "time_limit")


def _check_deadline(deadline: object) -> float | None:
    """A ``time.monotonic()`` deadline (any finite float: one already past stops at once)."""
    return None if deadline is None else check_scalar(deadline, "deadline")


def _check_output_size(theta: Theta, nodes: Sequence[str], max_table: int) -> None:
    """Refuse a joint over ``nodes`` that would itself exceed ``max_table`` entries."""
    card = theta.cardinality
    out_size = math.prod(card[v] for v in nodes)
    if out_size > max_table:
        raise InfluenceTooExpensive(
            too_large(f"the joint table over {len(nodes)} nodes", out_size, max_table))


def _check_step(size: int, max_table: int, scope: set[str]) -> None:
    """Refuse a step above ``max_table``; the exception carries its variables (``scope``)."""
    if size > max_table:
        refused = InfluenceTooExpensive(
            too_large("a factor of the exact elimination", size, max_table))
        refused.scope = frozenset(scope)  # type: ignore[attr-defined]
        raise refused
