"""One sensitive attribute's plan (:class:`SensitivePlan`): its quilt, numbers and views.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from quiltpriv.graph.quilts import Quilt, markov_quilt
from quiltpriv.mechanisms.plan_status import PlanStatus, check_status
from quiltpriv.model.network import as_theta
from quiltpriv.utils.deprecation import renamed_fields, renamed_keywords
from quiltpriv.utils.format import fmt_set as _set
from quiltpriv.utils.serialize import JSONResult, jsonable
from quiltpriv.utils.validation import check_instance

#: A plan lists every sensitive attribute's ``nearby`` and ``remote`` sets when the network's
#: size times the number of sensitive attributes is at most this (about a million names);
#: above it they are ``null``, so that a plan, its JSON and its text stay linear in the
#: network, and ``nearby_attributes`` (the query attributes in ``N``, all the noise depends
#: on) and :meth:`SensitivePlan.partition` stand for them. ``plan(list_sets=...)`` overrides.
LIST_SETS_LIMIT = 2**20

#: ... and the network has at most this many nodes: a plan of one attribute of a year-long
#: series (500,000 steps) would otherwise list 13 MB of names nobody asked for, and cost more
#: than a plan of every step.
LIST_SETS_MAX_NODES = 2**16


@renamed_fields(node="sensitive")
@dataclass(frozen=True)
class SensitivePlan(JSONResult):
    """The chosen quilt for one sensitive attribute and why it was chosen.

    Parameters
    ----------
    sensitive : str
        The sensitive attribute ``i`` (``node`` is its deprecated name; the plan file's key
        stays ``"node"``).
    quilt : tuple of str
        The chosen quilt ``Q`` (network order).
    nearby, remote : tuple of str or None
        Its nearby set ``N`` and remote set ``R`` (network order), or None in a plan too large
        to list them (:data:`LIST_SETS_LIMIT`); :meth:`partition` gives them on demand.
    influence : float
        ``e_Theta(Q | i)``, rounded upwards by at least 1e-10 relative plus 1e-10 absolute and
        by a proven bound on float64's rounding (never below the exact value).
    sensitivity : float
        ``Delta_{A and N} F``.
    scale : float
        ``b_i``, the Laplace scale this attribute needs.
    quilts_considered : int
        Distinct candidate quilts whose scale was evaluated (trivial quilt included).
    optimal : bool
        True when ``scale`` is proven to be the least over all quilts of ``i``.
    explanation : str
        One paragraph, for humans.
    influence_member : str or None
        The member of Theta attaining the influence.
    influence_pair : tuple or None
        The values ``(a, b)`` of ``phi_i`` attaining it.
    influence_bound_via : tuple of str or None
        ``None`` when ``influence`` is exact; else the separator whose exact influence bounds it.
    influence_arithmetic : {"float64", "exact"}
        ``"exact"`` when the influence was computed in exact integer arithmetic (the model's
        probabilities are too small for float64, or float64 could not tell a tiny influence
        from 0).
    nearby_attributes : tuple of str or None
        In a plan that does not list ``nearby`` (and then only), the query's attributes in
        ``N`` (network order): all ``Delta_{A and N}`` reads. :meth:`nearby_in` answers
        either way.
    status : PlanStatus or str
        Why the scale is or is not proven least (:class:`~quiltpriv.mechanisms.plan_status.
        PlanStatus`): ``"optimal"`` exactly when ``optimal`` is true; otherwise what stopped
        the search (``"time_limit"``, ``"budget"``, ``"cancelled"``, ``"interrupted"``,
        ``"not_reached"``) or ``"unresolved"``. By default ``"optimal"`` for an optimal plan
        and ``"not_recorded"`` otherwise (a plan file written before ``quiltpriv-plan/4``).

    Examples
    --------
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("chain")  # 12 steps of a Markov chain
    >>> query = qp.LinearQuery({v: 1 / 12 for v in theta.nodes},  # the mean of the 12 steps
    ...                        {v: (0, 1) for v in theta.nodes})
    >>> chosen = qp.plan(theta, query, "x01", epsilon=1.0).sensitive[0]
    >>> chosen.sensitive, chosen.quilt, round(chosen.sensitivity, 6)
    ('x01', ('x07',), 0.5)
    >>> round(chosen.influence, 6), round(chosen.scale, 6)
    (0.336478, 0.753554)
    >>> chosen.status.value, chosen.influence_arithmetic
    ('optimal', 'float64')
    """

    sensitive: str
    quilt: tuple[str, ...]
    nearby: tuple[str, ...] | None
    remote: tuple[str, ...] | None
    influence: float
    sensitivity: float
    scale: float
    quilts_considered: int
    optimal: bool
    explanation: str
    influence_member: str | None = None
    influence_pair: tuple[Any, Any] | None = None
    influence_bound_via: tuple[str, ...] | None = None
    influence_arithmetic: str = "float64"
    nearby_attributes: tuple[str, ...] | None = None
    status: PlanStatus = PlanStatus.NOT_RECORDED

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", check_status(self.status, self.optimal))

    def __setstate__(self, state: dict[str, Any]) -> None:
        # pickled before the status was a field: derived as from a plan file of then; and
        # before node was named sensitive
        state = dict(state)
        if "node" in state:
            state.setdefault("sensitive", state.pop("node"))
        state["status"] = check_status(state.get("status", PlanStatus.NOT_RECORDED),
                                       state["optimal"])
        self.__dict__.update(state)

    @property
    def sets_listed(self) -> bool:
        """Whether ``nearby`` and ``remote`` are listed (see :data:`LIST_SETS_LIMIT`)."""
        return self.nearby is not None

    def nearby_in(self, attributes: Iterable[str]) -> tuple[str, ...]:
        """The query attributes (``attributes``, the plan's query's) that are in ``N``."""
        near = set(self.nearby if self.nearby is not None else self.nearby_attributes or ())
        return tuple(a for a in attributes if a in near)

    @renamed_keywords(model="theta")
    def partition(self, theta: Any) -> Quilt:
        """The quilt ``(Q, N, R)``: as listed, or recomputed from ``theta`` (linear in it).

        The remote set of an unlisted plan is the largest one ``Q`` d-separates (how
        :func:`plan` chooses it); for the trivial quilt (``Q = {}``, every query attribute
        nearby) that is the quilt ``Q = {}`` with its remote set, which needs no more noise.
        """
        if self.nearby is not None and self.remote is not None:
            return Quilt(self.sensitive, self.quilt, self.nearby, self.remote)
        return markov_quilt(as_theta(theta), self.sensitive, self.quilt)

    def to_dict(self, *, sets: bool = True) -> dict[str, Any]:
        """The attribute's entry of a plan's JSON (``sets=False``: ``nearby`` and ``remote``
        left as they are, for a plan that writes each distinct set once)."""
        # fields read one by one: asdict would copy every listed set name by name; the file's
        # key for the sensitive attribute stays "node"
        d = {"node": self.sensitive, **{f.name: getattr(self, f.name) for f in fields(self)
                                        if f.name != "sensitive"}}
        d["quilt"] = list(self.quilt)
        if sets:
            d["nearby"] = None if self.nearby is None else list(self.nearby)
            d["remote"] = None if self.remote is None else list(self.remote)
        d["nearby_attributes"] = (None if self.nearby_attributes is None
                                  else list(self.nearby_attributes))
        d["influence_pair"] = None if self.influence_pair is None else [
            jsonable(x) for x in self.influence_pair]
        d["influence_bound_via"] = None if self.influence_bound_via is None else list(
            self.influence_bound_via)
        d["status"] = self.status.value
        return d

    def _repr_html_(self) -> str:
        from quiltpriv.reporting.notebook import sensitive_plan_html  # a presentation hook

        return sensitive_plan_html(self)


def shown_set(names: tuple[str, ...] | None, attrs: tuple[str, ...] | None) -> str:
    """A listed set, or what an unlisted one shows: its query attributes, if known."""
    for x in (names, attrs):
        if x is not None:
            check_instance(x, tuple, "names")
    if names is not None:
        return _set(names)
    return "(not listed)" if attrs is None else f"{_set(attrs)} + ... (not listed)"


def __getattr__(name: str) -> object:
    # The Jupyter view moved to quiltpriv.reporting.notebook (the old path warns until 0.3.0).
    from quiltpriv._compat import moved_attribute

    new = "quiltpriv.reporting.notebook"
    return moved_attribute(__name__, {"sensitive_plan_html": new}, name)
