"""A time limit already running: the seconds a user gave, counted from when the work began.

Every public entry point that can run long takes ``time_limit=``: a number of seconds (the
limit starts when the function is called) or a :class:`TimeLimit`, a limit that started
earlier. The command line makes one when a command starts, before it reads the model and the
data, and hands it to the planners, so that ``--time-limit 2`` bounds the whole command while
the plan's notes still state the user's number ("the time limit of 2 s was reached").

Below the entry points the limit travels as its end, a ``time.monotonic()`` reading
(:attr:`TimeLimit.ends`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from quiltpriv.errors import ParameterError
from quiltpriv.utils.validation import check_positive

__all__ = ["TimeLimit", "check_time_limit", "seconds_left"]


@dataclass(frozen=True)
class TimeLimit:
    """``seconds`` of work allowed from ``started`` (a ``time.monotonic()`` reading).

    Parameters
    ----------
    seconds : float
        The limit as the user gave it (finite, > 0): what notes and records state.
    started : float
        When the limited work began, on the ``time.monotonic()`` clock.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> from quiltpriv.utils.time_limit import TimeLimit
    >>> limit = TimeLimit.starting_now(2.0)  # as `quiltpriv plan --time-limit 2` makes it
    >>> limit.seconds, 0.0 < limit.remaining() <= 2.0, limit.passed()
    (2.0, True, False)
    >>> plan = qp.plan(qp.load_model("chain"), qp.CountQuery(["x03"], 10), "x01", 1.0,
    ...                time_limit=limit)  # what is left of the 2 s, not 2 s more
    """

    seconds: float
    started: float

    def __post_init__(self) -> None:
        seconds = check_positive(self.seconds, "time_limit")
        if isinstance(self.started, bool) or not isinstance(self.started, int | float) \
                or not math.isfinite(self.started):
            raise ParameterError(f"a time limit's start must be a time.monotonic() reading, "
                                 f"got {self.started!r}")
        object.__setattr__(self, "seconds", seconds)
        object.__setattr__(self, "started", float(self.started))

    @classmethod
    def starting_now(cls, seconds: float) -> TimeLimit:
        """A limit of ``seconds`` that starts now."""
        return cls(seconds, time.monotonic())

    @property
    def ends(self) -> float:
        """When the limit passes, on the ``time.monotonic()`` clock."""
        return self.started + self.seconds

    def remaining(self) -> float:
        """Seconds left (negative once passed)."""
        return self.ends - time.monotonic()

    def passed(self) -> bool:
        """Whether the limit has passed."""
        return time.monotonic() > self.ends

    def wall_ends(self) -> float:
        """When the limit passes on the ``time.time()`` clock (for other processes)."""
        return time.time() + self.remaining()

    def __str__(self) -> str:
        return f"{self.seconds:g} s"


def check_time_limit(time_limit: object, name: str = "time_limit") -> TimeLimit | None:
    """``time_limit`` as a running :class:`TimeLimit`: None (no limit) stays None, a number of
    seconds (finite, > 0) starts now, a :class:`TimeLimit` is kept as it is."""
    if time_limit is None or isinstance(time_limit, TimeLimit):
        return time_limit
    return TimeLimit.starting_now(check_positive(time_limit, name))


def seconds_left(time_limit: float | TimeLimit | None, least: float = 1e-3) -> float | None:
    """Seconds for a callee that takes only a number: what is left of a :class:`TimeLimit`
    (at least ``least``, so that work started late stops at once instead of being refused),
    a number as it is, None as None."""
    least = check_positive(least, "least")
    if isinstance(time_limit, TimeLimit):
        return max(time_limit.remaining(), least)
    return None if time_limit is None else check_positive(time_limit, "time_limit")
