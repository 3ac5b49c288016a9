"""The price of one Markov quilt, and the one sentence that says it ([ZOC22, Alg. 3]).

A quilt ``(Q, N, R)`` of a sensitive attribute ``i`` costs the Laplace scale
``Delta_{A&N} F / (eps - e(Q|i))``: the query's sensitivity to the nearby attributes it reads,
over what is left of epsilon after the quilt's max-influence. The planner
(:mod:`quiltpriv.mechanisms.apmqm`), the HTML report's candidate table
(:func:`quiltpriv.reporting.report.candidate_quilts`) and ``quiltpriv quilts`` all price a quilt
with :func:`quilt_scale` (through :func:`price_quilt` where the influence is still to be
computed) and say why it costs what it costs with :func:`price_text`, so the three show the
same number and the same words for the same quilt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

from quiltpriv.errors import ParameterError
from quiltpriv.graph.quilts import Quilt
from quiltpriv.mechanisms.calibration import scale_up
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.format import fmt_number, fmt_set
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_epsilon, check_positive

__all__ = ["TIE_RTOL", "QuiltPrice", "candidate_key", "is_tie", "price_order", "price_quilt",
           "price_text", "quilt_scale"]


def quilt_scale(delta: float, e: float, epsilon: float) -> float:
    """Laplace scale of one quilt: ``Delta / (eps - e)`` computed exactly and rounded up (never
    below the exact need; ``inf`` beyond the float range); 0 if Delta = 0 and e <= eps.

    ``delta`` is a finite sensitivity >= 0, ``e`` an influence in [0, inf] and ``epsilon`` > 0;
    anything else is refused (ParameterError).

    Examples
    --------
    >>> quilt_scale(1.0, 0.0, 3.0) > 1 / 3  # fl(1/3) is below 1/3: rounded up instead
    True
    >>> quilt_scale(2.0, 0.5, 0.5), quilt_scale(0.0, 0.2, 0.5)
    (inf, 0.0)
    """
    delta = check_positive(delta, "delta", allow_zero=True)
    if isinstance(e, bool) or not isinstance(e, Real) or not e >= 0:  # NaN fails e >= 0
        raise ParameterError(f"e must be an influence >= 0 (inf allowed), got {e!r}")
    epsilon = check_epsilon(epsilon)
    if delta == 0.0:
        return 0.0 if e <= epsilon else math.inf
    if e < epsilon:
        # exact quotient rounded up: fl(1 / 3) < 1/3 would give a (3 + 1.7e-16)-private mean
        return scale_up(delta, epsilon, e)
    return math.inf


#: Scales or influences this close (relative) are ties: mathematically equal influences of
#: different quilts (say ``{income}`` and ``{income, sat}`` with ``sat`` remote) come out of
#: different contractions a few ulps apart, and rounding noise must not pick the winner.
TIE_RTOL = 1e-12


def is_tie(a: float, b: float) -> bool:
    """Whether two scales or influences are equal up to :data:`TIE_RTOL` (rounding noise)."""
    return a == b or math.isclose(a, b, rel_tol=TIE_RTOL, abs_tol=0.0)


class _Tol:
    """A float compared with :data:`TIE_RTOL` (ordering key for candidates)."""

    __slots__ = ("x",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, x: float) -> None:
        self.x = x

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Tol) and is_tie(self.x, other.x)

    def __lt__(self, other: _Tol) -> bool:
        return not is_tie(self.x, other.x) and self.x < other.x


def candidate_key(scale: float, e: float, q: tuple[str, ...], theta: Theta) -> tuple:
    """The planner's order of candidate quilts: the least key wins (ties per :func:`is_tie`)."""
    # Least scale; then least influence (widest margin); then fewest quilt nodes; then order.
    return (_Tol(scale), _Tol(e), len(q), tuple(theta.index[v] for v in q))


def price_order(scale: float | None, influence: float | None, quilt: tuple[str, ...],
                trivial: bool, theta: Theta) -> tuple:
    """:func:`candidate_key` of a listed quilt, for the report's and ``quiltpriv quilts``'s
    rankings: the planner's order, the trivial quilt losing ties to any proper quilt (as in
    the planner), and a quilt with no price (its influence too expensive) last."""
    if scale is None:
        return (1, math.inf, math.inf, len(quilt), ())
    return (0, *candidate_key(scale, influence or 0.0, quilt, theta), int(trivial))


def price_text(sensitive: str, nearby_attributes: tuple[str, ...], influence: float | None,
               sensitivity: float, scale: float | None, epsilon: float) -> str:
    """Why a quilt costs its scale, in one clause (no final full stop).

    Parameters
    ----------
    sensitive : str
        The sensitive attribute ``i``.
    nearby_attributes : tuple of str
        ``A & N``: the query's attributes the quilt leaves nearby.
    influence : float or None
        ``e(Q|i)`` (None: too expensive to compute exactly).
    sensitivity : float
        ``Delta_{A&N} F``.
    scale : float or None
        :func:`quilt_scale` of the two (None with no influence).
    epsilon : float
        The privacy parameter.

    Examples
    --------
    >>> price_text("income", ("sat",), 0.2, 1.0, 1.25, 1.0)
    'the query reads nearby {sat}, Delta_{A&N} F = 1, scale = 1 / (1 - 0.2) = 1.25'
    """
    if not isinstance(sensitive, str):
        raise ParameterError(f"sensitive must be an attribute name, got {sensitive!r}")
    if not isinstance(nearby_attributes, tuple | list) or not all(
            isinstance(a, str) for a in nearby_attributes):
        raise ParameterError("nearby_attributes must be a tuple of attribute names, got "
                             f"{nearby_attributes!r}")
    sensitivity = check_positive(sensitivity, "sensitivity", allow_zero=True)
    epsilon = check_epsilon(epsilon)
    for name, x in (("influence", influence), ("scale", scale)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, Real) or not x >= 0):
            raise ParameterError(f"{name} must be None or a number >= 0 (inf allowed), got "
                                 f"{x!r}")
    return _price_words(sensitive, nearby_attributes, influence, sensitivity, scale, epsilon)


def _price_words(sensitive: str, nearby_attributes: Sequence[str], influence: float | None,
                 sensitivity: float, scale: float | None, epsilon: float) -> str:
    """:func:`price_text` of numbers the package computed itself, unchecked: a step plan of a
    million steps writes one per step (the checks would cost more than the words)."""
    if influence is None or scale is None:
        return (f"the max-influence e(Q|{sensitive}) is too expensive to compute exactly "
                "(max_table), so the quilt has no price")
    if math.isinf(scale):
        return (f"infeasible: e(Q|{sensitive}) = {fmt_number(influence)} >= eps = "
                f"{fmt_number(epsilon)}, so no noise makes the quilt private")
    if sensitivity == 0:
        return (f"the query reads no nearby attribute (A & N = {{}}), so Delta = 0 and no "
                f"noise is needed for {sensitive!r}")
    return (f"the query reads nearby {fmt_set(nearby_attributes)}, Delta_{{A&N}} F = "
            f"{fmt_number(sensitivity)}, scale = {fmt_number(sensitivity)} / "
            f"({fmt_number(epsilon)} - "
            f"{fmt_number(influence)}) = {fmt_number(scale, rounding='up')}")


@dataclass(frozen=True)
class QuiltPrice(JSONResult):
    """One quilt's price (:func:`price_quilt`).

    Attributes
    ----------
    sensitive : str
        The sensitive attribute.
    quilt : tuple of str
        ``Q``.
    nearby_attributes : tuple of str
        ``A & N`` in the network's order.
    influence : float or None
        ``e(Q|i)``, rounded up; None when too expensive to compute exactly.
    sensitivity : float
        ``Delta_{A&N} F``.
    scale : float or None
        :func:`quilt_scale` (``inf``: infeasible; None with no influence).
    epsilon : float
        The privacy parameter it was priced at.
    """

    sensitive: str
    quilt: tuple[str, ...]
    nearby_attributes: tuple[str, ...]
    influence: float | None
    sensitivity: float
    scale: float | None
    epsilon: float

    def explain(self) -> str:
        """:func:`price_text` of this price."""
        return price_text(self.sensitive, self.nearby_attributes, self.influence,
                          self.sensitivity, self.scale, self.epsilon)


def price_quilt(theta: Theta, query: Query, quilt: Quilt, epsilon: float, *,
                max_memory: int | str | None = None, **influence_options: Any) -> QuiltPrice:
    """Price ``quilt`` for ``query``: its exact max-influence, ``Delta_{A&N} F`` and scale.

    Parameters
    ----------
    theta : Theta
        The network.
    query : Query
        The query released.
    quilt : Quilt
        A quilt of its sensitive attribute (:func:`quiltpriv.graph.quilts.markov_quilt`).
    epsilon : float
        The privacy parameter.
    max_memory : int or str, optional
        The influence computation's memory budget
        (:func:`quiltpriv.inference.influence.max_influence`).
    **influence_options
        Passed on to :func:`~quiltpriv.inference.influence.max_influence`.

    Returns
    -------
    QuiltPrice
        ``influence`` and ``scale`` are None when the influence is too expensive to compute
        exactly.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("student")
    >>> query = qp.LinearQuery({"sat": 1, "gender": 1}, {"sat": (0, 1), "gender": (0, 1)})
    >>> price = price_quilt(theta, query, qp.trivial_quilt(theta, "income"), 0.3)
    >>> price.sensitivity, round(price.scale, 5)
    (2.0, 6.66667)
    """
    from quiltpriv.inference.influence import InfluenceTooExpensive, max_influence

    theta = check_theta(theta)
    check_query(query)
    if not isinstance(quilt, Quilt):
        raise ParameterError(f"quilt must be a quiltpriv Quilt (markov_quilt), got "
                             f"{type(quilt).__name__}")
    epsilon = check_epsilon(epsilon)
    read = set(query.attributes) & set(quilt.nearby)
    delta = query.sensitivity(read)
    try:
        e: float | None = max_influence(theta, quilt.sensitive, quilt.quilt,
                                        max_memory=max_memory, **influence_options).value
    except InfluenceTooExpensive:
        e = None
    return QuiltPrice(
        sensitive=quilt.sensitive, quilt=tuple(quilt.quilt),
        nearby_attributes=tuple(theta.sort(read)), influence=e, sensitivity=delta,
        scale=None if e is None else quilt_scale(delta, e, epsilon), epsilon=epsilon)
