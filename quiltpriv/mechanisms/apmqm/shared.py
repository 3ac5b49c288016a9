"""The work one plan shares across its sensitive attributes (:class:`_Shared`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol

from quiltpriv.graph.quilts import (
    Quilt,
    QuiltIndex,
    least_influence_quilt,
    trivial_quilt,
)
from quiltpriv.graph.shared_separation import QuiltPartitions
from quiltpriv.inference.attribute_joints import (
    AttributeJoints,
    attribute_joints,
    held_limit,
    joint_influence,
    propagation_work,
    result_entries,
)
from quiltpriv.inference.engines.base import DEFAULT_SETTINGS, EngineName, EngineSettings
from quiltpriv.inference.influence import (
    Influence,
    elimination_work,
    influence_upper_bound_until,
)
from quiltpriv.inference.junction_tree import fill_tree_structure
from quiltpriv.model.network import Theta
from quiltpriv.queries.query import Query
from quiltpriv.utils.deprecation import deprecated_constant
from quiltpriv.utils.time_limit import TimeLimit, ends_of

#: The module constants that became :class:`~quiltpriv.inference.engines.base.EngineSettings`
#: fields (the planner reads its ``settings``, never these names: pass ``settings=
#: EngineSettings(shared_work_ratio=...)`` to :func:`quiltpriv.plan` and to its verification),
#: still readable under their old names with a warning: name -> (the default, the setting).
_DEPRECATED_CONSTANTS: dict[str, tuple[object, str]] = {
    "SHARED_MAX_ATTRIBUTES": (DEFAULT_SETTINGS.shared_max_attributes,
                              "EngineSettings.shared_max_attributes"),
    "SHARED_MIN_SENSITIVE": (DEFAULT_SETTINGS.shared_min_sensitive,
                             "EngineSettings.shared_min_sensitive"),
    "SHARED_WORK_RATIO": (DEFAULT_SETTINGS.shared_work_ratio,
                          "EngineSettings.shared_work_ratio"),
    "SHARED_PRICE_SAMPLE": (DEFAULT_SETTINGS.shared_price_sample,
                            "EngineSettings.shared_price_sample"),
}


def __getattr__(name: str) -> object:
    return deprecated_constant(__name__, _DEPRECATED_CONSTANTS, name)


#: Most partitions (each as large as the network) a search walking alone keeps for reuse.
_WALKED_KEPT = 64


class _Shared:
    """What the searches of one plan share: candidate quilts, nearby query attributes and
    influences.

    Each candidate is ``Q*(T)`` for a set ``T`` of query attributes, a subset of ``A``. Alone
    (``shared=False``), a search walks the graph and eliminates per candidate, in time that
    grows with the network. Shared, the answers for every sensitive attribute come from a
    few walks from the attributes of ``A`` (:class:`~quiltpriv.graph.quilts.QuiltIndex`) and,
    with the default inference, from one propagation per member of Theta that gives ``P(phi_v,
    phi_A)`` for every ``v`` (:mod:`quiltpriv.inference.attribute_joints`); the influences are
    rounded upwards by that propagation's own bound. Where the propagation cannot be trusted
    or afforded, influences are computed one by one, as alone.
    """

    def __init__(self, theta: Theta, query: Query, max_table: int,
                 engine: EngineName, shared: bool,
                 time_limit: TimeLimit | None = None, progress: bool = False,
                 sensitive: Sequence[str] = (), cancel: CancelToken | None = None,
                 settings: EngineSettings = DEFAULT_SETTINGS) -> None:
        self.theta, self.max_table, self.engine = theta, max_table, engine
        self.settings = settings
        self.time_limit, self.progress = time_limit, progress
        self.cancel = cancel
        self.sensitive = theta.sort(sensitive)
        self.attrs = frozenset(query.attributes)
        self._query = query
        self._trivial: tuple[tuple[str, ...], float] | None = None
        self.index = QuiltIndex(theta, query.attributes) if shared else None
        self._joints: list[AttributeJoints] | None = None
        # the shared propagation: the batched engine's, chosen by "auto" or by name
        self._tried = not (shared and engine in ("auto", "junction_tree_batched"))
        # the partitions computed for the node being searched (walking alone), reused when
        # the chosen quilt is listed
        self._walked: dict[tuple[str, ...], Quilt] = {}
        self._walked_node: str | None = None
        # a quilt chosen (or tried) for several nodes is walked once for all of them
        self.partitions = QuiltPartitions(theta)

    def trivial_terms(self) -> tuple[tuple[str, ...], float]:
        """The query's attributes (network order) and ``Delta_A F``, computed once per plan
        (every attribute starts from the trivial quilt, and those the time limit leaves
        unsearched must cost O(1) each)."""
        if self._trivial is None:
            self._trivial = (self.theta.sort(self.attrs),
                             self._query.sensitivity(self._query.attributes))
        return self._trivial

    def quilt(self, node: str, targets: Iterable[str]) -> tuple[str, ...]:
        """``Q*(targets)`` (:func:`~quiltpriv.graph.quilts.least_influence_quilt`)."""
        if self.index is not None:
            return self.index.least_influence_quilt(node, targets)
        return least_influence_quilt(self.theta, node, targets)

    def nearby_attributes(self, node: str, quilt: tuple[str, ...]) -> tuple[str, ...]:
        """The query attributes in the nearby set of ``markov_quilt(node, quilt)``."""
        if self.index is not None:
            return self.index.nearby_attributes(node, quilt)
        return tuple(v for v in self.partition(node, quilt).nearby if v in self.attrs)

    def partition(self, node: str, quilt: tuple[str, ...] | None) -> Quilt:
        """``(Q, N, R)`` of ``quilt`` (None: the trivial quilt); walked once per node and
        quilt when the search walks alone, and once for every node that shares a quilt
        (:class:`~quiltpriv.graph.shared_separation.QuiltPartitions`: a plan listing every
        node's sets costs no more than one walk per distinct quilt)."""
        if quilt is None:
            return trivial_quilt(self.theta, node)
        if node != self._walked_node:
            self._walked, self._walked_node = {}, node
        hit = self._walked.get(quilt)
        if hit is None:
            hit = self.partitions.partition(node, quilt)
            if self.index is None:  # a shared plan lists few partitions: keep none
                if len(self._walked) >= _WALKED_KEPT:  # a long search: memory stays bounded
                    self._walked.clear()
                self._walked[quilt] = hit
        return hit

    def influence(self, node: str, quilt: tuple[str, ...]) -> Influence:
        """``e(Q | node)``, exact and rounded upwards, or a proven upper bound."""
        if quilt and self.attrs.issuperset(quilt):
            joints = self._shared_joints()
            if joints is not None:
                return joint_influence(self.theta, joints, node, quilt)
        return influence_upper_bound_until(self.theta, node, quilt, max_table=self.max_table,
                                      engine=self.engine, deadline=ends_of(self.time_limit),
                                      settings=self.settings)

    def _shared_joints(self) -> list[AttributeJoints] | None:
        if not self._tried:
            self._tried = True
            # a propagation the time limit stops leaves each influence to its own elimination,
            # and the search's own checks of the limit then stop the plan with its best so far
            attrs = self.theta.sort(self.attrs)
            settings = self.settings
            # the memory budget's share: each member's propagation holds at most this, the
            # results of the members before it included (they are kept for the whole plan)
            members = len(self.theta.members)
            held = (held_limit(self.max_table, settings)
                    - (members - 1) * result_entries(self.theta, attrs))
            # a tree with a clique above the memory cap is never propagated: on a grid-like
            # network its triangulation stops there, long before it would end (and it sees
            # the time limit)
            if held <= 0 or fill_tree_structure(self.theta, max_weight=held,
                                                deadline=ends_of(self.time_limit)) is None:
                return None
            cheap = min(settings.max_propagation_work,
                        settings.shared_work_ratio * len(self.sensitive) * len(self.theta.nodes))
            need = propagation_work(self.theta, attrs)
            # beyond the cheap rule, only where eliminating per attribute costs more (then no
            # fixed cap: the alternative is the costlier one; memory and the time limit bound it)
            # (or where the batched engine was asked for by name)
            run = (self.engine == "junction_tree_batched" or need <= cheap or _per_node_work(
                self.theta, attrs, self.sensitive, self.max_table, need,
                settings.shared_price_sample) >= need)
            found: list[AttributeJoints] = []
            for m in range(members):
                joints = attribute_joints(
                    self.theta, attrs, m, max_work=need if run else cheap, max_held=held,
                    deadline=ends_of(self.time_limit), progress=self.progress,
                    settings=settings)
                if joints is None:  # the plan computes each influence on its own
                    return None
                found.append(joints)
            self._joints = found
        return self._joints


def _shared_context(theta: Theta, query: Query, sensitive: Sequence[str], max_table: int,
                   engine: EngineName, time_limit: TimeLimit | None = None,
                   progress: bool = False, cancel: CancelToken | None = None,
                   settings: EngineSettings = DEFAULT_SETTINGS) -> _Shared:
    """The work a plan of the ``sensitive`` attributes shares (:class:`_Shared`), decided as
    :func:`plan` decides it (``settings.shared_min_sensitive``), so that a verification given
    the same settings recomputes the plan's own numbers."""
    return _Shared(theta, query, max_table, engine,
                   _shares_work(query, sensitive, engine, settings), time_limit,
                   progress, sensitive, cancel, settings)


def _shares_work(query: Query, sensitive: Sequence[str], engine: EngineName,
                 settings: EngineSettings = DEFAULT_SETTINGS) -> bool:
    """Whether a plan of ``sensitive`` shares its graph walks and inference across them (its
    :class:`_Shared` has an index), decided without building anything."""
    many = len(sensitive) >= settings.shared_min_sensitive or engine == "junction_tree_batched"
    return many and len(set(query.attributes)) <= settings.shared_max_attributes


class CancelToken(Protocol):
    """What :func:`plan` accepts as ``cancel``: anything with ``is_set()``, such as a
    :class:`threading.Event` another thread sets to stop the plan."""

    def is_set(self) -> bool: ...


def _cancelled(cancel: CancelToken | None) -> bool:
    """Whether ``cancel`` (None: never) was set."""
    return cancel is not None and cancel.is_set()


# Where the ratio refuses, the eliminations are priced (on settings.shared_price_sample
# sensitive attributes) and the propagation is run when its work is at most their total. Per
# priced entry the two cost about the same: the propagation's numpy products are slower than
# the kernel, and its work is an upper bound, while a search eliminates several candidates per
# attribute. Measured with 7- and 8-attribute counts (every node sensitive): banded, 2,000
# nodes: propagation 1.8e9 entries in 12 s, eliminations priced at 6e10, stopped by a 300 s
# time limit; lattice, 2,000 nodes: 1.0e9 in 8.1 s against 2.5e9 in 79 s; banded, 500 nodes:
# 2.1e9 in 14.4 s against 7.7e9 in 15.0 s. On pigs, munin, link and diabetes (every node
# sensitive, 3, 6 and 10 random attributes, four draws each) it chose the propagation once,
# on diabetes: 9.2 s against 10.4 s. Both are priced by the Python order, so the choice does
# not depend on whether the compiled kernel is built, and a verification makes the plan's own.
def _per_node_work(theta: Theta, attrs: Sequence[str], sensitive: Sequence[str],
                   max_table: int, enough: float = math.inf,
                   sample_size: int = DEFAULT_SETTINGS.shared_price_sample) -> float:
    """Table entries eliminating ``P(phi_v, phi_A)`` for every sensitive ``v`` would build,
    estimated from ``sample_size`` of them (:attr:`~quiltpriv.inference.engines.base.
    EngineSettings.shared_price_sample`) evenly spaced in the network's order
    (each priced on scopes alone by :func:`~quiltpriv.inference.influence.elimination_work`;
    ``inf`` where one does not fit ``max_table``). Pricing stops once the estimate reaches
    ``enough`` (then some value at least ``enough``): on a long network one elimination's
    pricing is as long as the network, and the caller only compares."""
    step = max(1, len(sensitive) // sample_size)
    sample = sensitive[::step][:sample_size]
    scale = len(sensitive) / len(sample)
    total = 0.0
    for v in sample:
        total += elimination_work(theta, (v, *(a for a in attrs if a != v)),
                                  max_table=max_table, stop_above=enough / scale - total)
        if total * scale >= enough:
            break
    return total * scale
