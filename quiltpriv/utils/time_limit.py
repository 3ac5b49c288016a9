"""A time limit already running: the seconds a user gave, counted from when the work began.

Every public entry point that can run long takes ``time_limit=``: a number of seconds (the
limit starts when the function is called) or a :class:`TimeLimit`, a limit that started
earlier. The command line makes one when a command starts, before it reads the model and the
data, and hands it to the planners, so that ``--time-limit 2`` bounds the whole command while
the plan's notes still state the user's number ("the time limit of 2 s was reached").

Below the entry points the planners (the APMQM search, the chain and HMM step searches, MQM)
pass the :class:`TimeLimit` itself; the inference layer, which only compares a clock with the
limit's end, takes that end, a ``time.monotonic()`` reading (:attr:`TimeLimit.ends`,
:func:`ends_of`). Where a public function took such a reading as ``deadline=``, it still does,
with a warning, through :meth:`TimeLimit.ending_at`. Work that has nothing to answer with
until it ends (reading a model: there is no plan without one) checks the limit as a
:class:`LimitCheck` between its passes and refuses with a
:class:`~quiltpriv.errors.TimeLimitError` once it has passed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TypeVar

from quiltpriv.errors import ParameterError, TimeLimitError
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.validation import check_positive

__all__ = ["LimitCheck", "TimeLimit", "check_time_limit", "ends_of", "limit_check", "passed",
           "seconds_left"]

_T = TypeVar("_T")

#: Items a :meth:`LimitCheck.paced` pass handles between two readings of the clock: the
#: clock costs about 50 ns a reading, a C-level pass about as much per item, so a reading
#: every 16,384 items costs nothing measurable and comes every millisecond or so.
PACE = 16_384

#: The length of a limit made from a deadline already past (:meth:`TimeLimit.ending_at`).
_PAST = 1e-9


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

    @classmethod
    def ending_at(cls, reading: float) -> TimeLimit:
        """The limit that passes at ``reading`` on the ``time.monotonic()`` clock (what the old
        ``deadline=`` parameters took): from now until then, or, for a reading already past, a
        limit that passed then (work stops at its first check, as it did)."""
        if isinstance(reading, bool) or not isinstance(reading, int | float) \
                or not math.isfinite(reading):
            raise ParameterError(f"deadline must be a time.monotonic() reading, got "
                                 f"{reading!r}")
        now = time.monotonic()
        if reading > now:
            return cls(reading - now, now)
        return cls(_PAST, reading - _PAST)

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
        return f"{_fmt(self.seconds)} s"


def check_time_limit(time_limit: object, name: str = "time_limit") -> TimeLimit | None:
    """``time_limit`` as a running :class:`TimeLimit`: None (no limit) stays None, a number of
    seconds (finite, > 0) starts now, a :class:`TimeLimit` is kept as it is."""
    if time_limit is None or isinstance(time_limit, TimeLimit):
        return time_limit
    return TimeLimit.starting_now(check_positive(time_limit, name))


def ends_of(time_limit: TimeLimit | None) -> float | None:
    """When ``time_limit`` passes on the ``time.monotonic()`` clock (None: no limit), for the
    inference layer's ``deadline`` parameters."""
    return None if _running(time_limit) is None else time_limit.ends  # type: ignore[union-attr]


def passed(time_limit: TimeLimit | None) -> bool:
    """Whether ``time_limit`` (None: no limit, never passed) has passed."""
    return _running(time_limit) is not None and time_limit.passed()  # type: ignore[union-attr]


def _running(time_limit: object) -> TimeLimit | None:
    """``time_limit`` if it is None or a :class:`TimeLimit` (what the planners pass down);
    ParameterError for anything else (seconds are made a limit at the entry points)."""
    if time_limit is None or isinstance(time_limit, TimeLimit):
        return time_limit
    raise ParameterError(f"expected a TimeLimit or None, got {type(time_limit).__name__}")


def seconds_left(time_limit: float | TimeLimit | None, least: float = 1e-3) -> float | None:
    """Seconds for a callee that takes only a number: what is left of a :class:`TimeLimit`
    (at least ``least``, so that work started late stops at once instead of being refused),
    a number as it is, None as None."""
    least = check_positive(least, "least")
    if isinstance(time_limit, TimeLimit):
        return max(time_limit.remaining(), least)
    return None if time_limit is None else check_positive(time_limit, "time_limit")


@dataclass(frozen=True)
class LimitCheck:
    """Where work with nothing to answer with before it ends checks its time limit.

    Calling it refuses the work (:class:`~quiltpriv.errors.TimeLimitError`) once the limit
    has passed, saying what the work was and how far it got; without a limit it does nothing.
    Long passes over items check every :data:`PACE` items through :meth:`paced`.

    Parameters
    ----------
    limit : TimeLimit or None
        The running limit (None: no limit).
    what : str
        The work, for the message: ``"reading the model chain.json.gz"``.

    Examples
    --------
    >>> import time
    >>> from quiltpriv.utils.time_limit import LimitCheck, TimeLimit
    >>> LimitCheck(TimeLimit.starting_now(60), "reading the model m.json")("its text parsed")
    >>> check = LimitCheck(TimeLimit(2, time.monotonic() - 5), "reading the model m.json")
    >>> check("its text parsed")
    Traceback (most recent call last):
    ...
    quiltpriv.errors.TimeLimitError: the time limit of 2 s was reached while reading the ...
    """

    limit: TimeLimit | None
    what: str

    def __call__(self, stage: str) -> None:
        """Refuse the work if the limit has passed (``stage``: how far it got)."""
        if self.limit is not None and self.limit.passed():
            raise TimeLimitError(f"the time limit of {self.limit} was reached while "
                                 f"{self.what} ({stage})")

    def paced(self, items: Sequence[_T], stage: str) -> Iterable[_T]:
        """``items`` as one iterable whose consumer's pass checks the limit every
        :data:`PACE` items (the items themselves flow through C-level iteration).

        ``stage`` is formatted with ``done`` and ``total`` (items before the check, all
        items): ``"{done:,} of {total:,} nodes checked"``.
        """
        if self.limit is None or len(items) <= PACE:
            self(stage.format(done=0, total=len(items)))
            return items
        return chain.from_iterable(self._slices(items, stage))

    def _slices(self, items: Sequence[_T], stage: str) -> Iterator[Sequence[_T]]:
        total = len(items)
        for start in range(0, total, PACE):
            self(stage.format(done=start, total=total))
            yield items[start:start + PACE]


def limit_check(time_limit: object, what: str) -> LimitCheck:
    """A :class:`LimitCheck` of ``time_limit`` (as :func:`check_time_limit` takes it)."""
    return LimitCheck(check_time_limit(time_limit), what)
