"""The planner's work as another module uses it: :class:`PlanningContext`.

A plan's numbers are only as good as their recomputation: verification
(:mod:`quiltpriv.mechanisms.verification`) recomputes each influence, each nearby set and each
least scale *the way the planner computed them* (the same shared propagation, the same graph
walks, the same search), so that a plan the planner made verifies and an edited one does not.
This module is that interface; the planner's internals (:mod:`.shared`, :mod:`.node_plan`) stay
its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from quiltpriv.inference.engines.base import (
    EngineName,
    EngineSettings,
    check_settings,
    choose_engine,
)
from quiltpriv.inference.influence import InferenceMethod, Influence
from quiltpriv.mechanisms.apmqm.node_plan import _plan_node
from quiltpriv.mechanisms.apmqm.plan_types import Plan, _nearby_query_attributes, _trusted
from quiltpriv.mechanisms.apmqm.search import DEFAULT_MAX_CANDIDATES
from quiltpriv.mechanisms.apmqm.sensitive_plan import SensitivePlan
from quiltpriv.mechanisms.apmqm.shared import _shared_context
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.validation import check_scalar


class PlanningContext:
    """The work a plan of some sensitive attributes shares, decided as :func:`plan` decides it.

    Build it with :func:`planning_context`. A plan of many sensitive attributes shares its
    graph walks and inference across them (:attr:`EngineSettings.shared_min_sensitive
    <quiltpriv.inference.engines.base.EngineSettings>`); the context given the same settings
    makes the same choice, so that what it recomputes is what the plan computed.

    Parameters
    ----------
    theta : Theta
        The model.
    query : Query
        The plan's query.
    sensitive : sequence of str
        The plan's sensitive attributes (their number decides whether work is shared).
    max_table : int
        Largest joint table an exact influence may build.
    inference : {"auto", "junction_tree", "elimination"}
        How exact influences are computed (the older name of ``engine``).
    engine : str
        The engine that computes exact influences (:func:`quiltpriv.plan`).
    settings : EngineSettings, optional
        The engines' tuning, as given to :func:`quiltpriv.plan`.
    """

    def __init__(self, theta: Theta, query: Query, sensitive: Sequence[str], max_table: int,
                 inference: InferenceMethod = "auto", engine: EngineName = "auto",
                 settings: EngineSettings | None = None) -> None:
        theta = check_theta(theta)
        check_query(query)
        sensitive = theta.check_sensitive(sensitive)
        theta.check_nodes(query.attributes, "query attribute")
        max_table = int(check_scalar(max_table, "max_table", integer=True, min_val=1))
        engine = choose_engine(engine, inference)
        self._theta, self._query = theta, query
        self._max_table, self._engine = max_table, engine
        self._shared = _shared_context(theta, query, sensitive, max_table, engine,
                                       settings=check_settings(settings))

    @property
    def query_attributes(self) -> frozenset[str]:
        """The query's attributes ``A``."""
        return self._shared.attrs

    @renamed_keywords(node="sensitive")
    def influence(self, sensitive: str, quilt: Iterable[str]) -> Influence:
        """``e_Theta(Q | sensitive)`` as the planner computes it: exact and rounded upwards, or a
        proven upper bound (``Influence.exact`` says which).

        Raises
        ------
        InfluenceTooExpensive
            When the influence needs a table above ``max_table``.
        """
        return self._shared.influence(sensitive, self._theta.sort(set(quilt)))

    @renamed_keywords(node="sensitive")
    def nearby_query_attributes(self, sensitive: str, quilt: Iterable[str]) -> frozenset[str]:
        """The query attributes d-connected to ``sensitive`` given ``quilt``: those in the nearby
        set ``N`` of the quilt whose remote set is the largest ``quilt`` d-separates.

        ``quilt`` must name nodes of the network other than ``sensitive``.
        """
        q = tuple(quilt)
        attrs = self._shared.attrs
        index = self._shared.index
        if index is not None and attrs.issuperset(q):
            return frozenset(index.nearby_attributes(sensitive, q))
        return frozenset(self.d_connected(sensitive, q) & attrs)

    def d_connected(self, source: str, quilt: Iterable[str]) -> set[str]:
        """:func:`~quiltpriv.graph.quilts.d_connected` of ``source`` given ``quilt``, from one
        shared walk per quilt several attributes ask about
        (:class:`~quiltpriv.graph.shared_separation.QuiltPartitions`)."""
        return self._shared.partitions.reached(source, quilt)

    def stated_nearby_attributes(self, sp: SensitivePlan) -> tuple[str, ...]:
        """The query attributes ``sp`` states to be in its ``N`` (listed or not), network order;
        linear in ``N``, not in ``A``."""
        return _nearby_query_attributes(sp, self._shared.attrs)

    @renamed_keywords(node="sensitive")
    def least_scale_plan(self, sensitive: str, epsilon: float) -> SensitivePlan:
        """The planner's own search for ``sensitive`` at ``epsilon`` (no time limit, the default
        candidate budget, sets not listed): ``optimal`` says whether its scale is proven least.
        """
        return _plan_node(self._theta, self._query, sensitive, epsilon, self._max_table, None,
                          self._engine, DEFAULT_MAX_CANDIDATES, self._shared,
                          list_sets=False, settings=self._shared.settings)[0]

    @staticmethod
    def mark_verified(plan: Plan) -> Plan:
        """A copy of ``plan`` marked verified (``Plan.verified``).

        For :func:`~quiltpriv.mechanisms.verification.check_plan` only, once every claim of
        ``plan`` was recomputed through a context and held: a verified plan is released
        without being checked again.
        """
        return _trusted(dataclasses.replace(plan))


def planning_context(theta: Theta, query: Query, sensitive: Sequence[str], max_table: int,
                     inference: InferenceMethod = "auto",
                     engine: EngineName = "auto",
                     settings: EngineSettings | None = None) -> PlanningContext:
    """The :class:`PlanningContext` of a plan of ``sensitive`` (see there)."""
    return PlanningContext(theta, query, sensitive, max_table, inference, engine, settings)
