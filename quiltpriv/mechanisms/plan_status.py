"""Why a sensitive attribute's plan is, or is not, proven optimal: :class:`PlanStatus`.

The planner ([ZOC22, Alg. 3]) records what stopped each attribute's search as data, not in
its explanation's words: every status but :attr:`PlanStatus.OPTIMAL` leaves a valid quilt
(the best found, or the trivial quilt) whose scale is not proven least.
"""

from __future__ import annotations

from enum import Enum

from quiltpriv.errors import ParameterError


class PlanStatus(str, Enum):
    """What the search of one sensitive attribute ended with (its value is the plan file's).

    Attributes
    ----------
    OPTIMAL
        The search finished: the scale is proven least over all quilts.
    TIME_LIMIT
        The time limit stopped the search; the best quilt found so far is used.
    BUDGET
        The candidate budget (``max_candidates``) stopped the search; the best so far is used.
    CANCELLED
        The plan was cancelled (``cancel``) during this attribute's search.
    INTERRUPTED
        The search was interrupted (Ctrl-C); the best quilt found so far is used.
    NOT_REACHED
        Planning was interrupted or cancelled before this attribute's search (finished): it
        has the trivial quilt.
    UNRESOLVED
        The search finished, but a candidate that might beat the chosen quilt has no exact
        influence (too expensive for ``max_table``, or known only as an upper bound).
    NOT_RECORDED
        Not proven optimal, and the plan file (written before ``quiltpriv-plan/4``) does not
        say why (its explanation does, in words).

    Examples
    --------
    >>> from quiltpriv.mechanisms.plan_status import PlanStatus
    >>> PlanStatus("time_limit") is PlanStatus.TIME_LIMIT, PlanStatus.TIME_LIMIT.value
    (True, 'time_limit')
    >>> PlanStatus.BUDGET.describe()
    'not proven optimal: the candidate budget was reached'
    """

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    BUDGET = "budget"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    NOT_REACHED = "not_reached"
    UNRESOLVED = "unresolved"
    NOT_RECORDED = "not_recorded"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def _missing_(cls, value: object) -> PlanStatus:
        # the package's own error, naming every status, instead of Enum's bare ValueError
        raise ParameterError(f"status must be one of {', '.join(repr(s.value) for s in cls)}, "
                             f"got {value!r}")

    def describe(self) -> str:
        """A few words for text and HTML views."""
        return _WORDS[self]

    @property
    def stopped(self) -> bool:
        """True when the search stopped before it finished (time limit, budget, cancel,
        Ctrl-C, or never started)."""
        return self in _STOPS


_WORDS = {
    PlanStatus.OPTIMAL: "proven least over all quilts",
    PlanStatus.TIME_LIMIT: "not proven optimal: the time limit was reached",
    PlanStatus.BUDGET: "not proven optimal: the candidate budget was reached",
    PlanStatus.CANCELLED: "not proven optimal: the plan was cancelled",
    PlanStatus.INTERRUPTED: "not proven optimal: the search was interrupted",
    PlanStatus.NOT_REACHED: "not proven optimal: not searched (trivial quilt)",
    PlanStatus.UNRESOLVED: "not proven optimal: a candidate's exact influence is unknown",
    PlanStatus.NOT_RECORDED: "not proven optimal (why is not recorded)",
}

_STOPS = frozenset({PlanStatus.TIME_LIMIT, PlanStatus.BUDGET, PlanStatus.CANCELLED,
                    PlanStatus.INTERRUPTED, PlanStatus.NOT_REACHED})


def check_status(status: object, optimal: bool, where: str = "status") -> PlanStatus:
    """``status`` as a :class:`PlanStatus` agreeing with ``optimal``.

    ``NOT_RECORDED`` of an optimal plan becomes ``OPTIMAL`` (an optimal plan has one status);
    ``OPTIMAL`` of a plan whose claim of optimality was withdrawn (``optimal`` set to false
    by hand, in a file or with :func:`dataclasses.replace`) becomes ``NOT_RECORDED``: the
    safe direction, claiming less.

    Raises
    ------
    ParameterError
        ``status`` is not a status, or says the search stopped short while ``optimal``
        claims the least scale.
    """
    try:
        st = PlanStatus(status)
    except ParameterError as exc:
        raise ParameterError(f"{where}{str(exc).removeprefix('status')}") from None
    if optimal and st is PlanStatus.NOT_RECORDED:
        return PlanStatus.OPTIMAL
    if not optimal and st is PlanStatus.OPTIMAL:
        return PlanStatus.NOT_RECORDED
    if optimal and st is not PlanStatus.OPTIMAL:
        raise ParameterError(f"{where} is {st.value!r} but optimal is true: a plan is optimal "
                             "exactly when its status is 'optimal'")
    return st


def worse(current: PlanStatus, new: PlanStatus) -> PlanStatus:
    """The status to keep when ``new`` happens to a search whose status is ``current``: what
    stopped the search wins over an unresolved candidate, and the first stop is kept."""
    current, new = PlanStatus(current), PlanStatus(new)
    if current is PlanStatus.OPTIMAL or (current is PlanStatus.UNRESOLVED and new.stopped):
        return new
    return current
