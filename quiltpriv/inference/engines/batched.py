"""The batched junction-tree engine: ``P(phi_v, phi_A)`` for every node ``v`` at once, by one
propagation per member over the min-fill junction tree with the evidence ``phi_A = a`` of
every joint state ``a`` entered together (:mod:`quiltpriv.inference.attribute_joints`).

It pays off where many queries ask about one small set ``A``: the planner's queries of a plan
over many sensitive attributes (``engine="auto"`` of :func:`quiltpriv.plan` shares one
propagation across them, :class:`~quiltpriv.mechanisms.apmqm.shared._Shared`, through the
batch functions :func:`~quiltpriv.inference.attribute_joints.attribute_joints` and
:func:`~quiltpriv.inference.attribute_joints.joint_influence`). Asked one query at a time
(``engine="junction_tree_batched"`` of :func:`~quiltpriv.inference.influence.max_influence`),
it propagates over ``A`` = the query's nodes after the first and keeps the result, so that the
queries that follow with the same ``A`` (every sensitive attribute against one quilt) read it.
"""

from __future__ import annotations

import numpy as np

from quiltpriv.inference.attribute_joints import AttributeJoints, attribute_joints, held_limit
from quiltpriv.inference.cache import InferenceCache, Kind
from quiltpriv.inference.engines.base import Answer, EngineSettings, JointQuery
from quiltpriv.inference.engines.elimination import EliminationEngine

#: The propagations this engine keeps, per ``(member, A as node indices, entries it may hold,
#: settings)``; charged against the memory budget (:meth:`~quiltpriv.inference.cache.Entries.
#: charge`: the kept results together hold at most the call's ``max_table`` entries).
PROPAGATIONS: Kind[tuple[int, tuple[int, ...], int, EngineSettings], AttributeJoints] = Kind(
    "attribute_joints", lru=True)


def _entries(joints: AttributeJoints) -> int:
    return sum(t.size for t in joints.tables)


class BatchedJunctionTreeEngine:
    """``engine="junction_tree_batched"`` (:class:`~quiltpriv.inference.engines.base.Engine`).

    The propagation holds at most the query's memory budget (``max_table`` entries, lowered by
    ``settings.max_propagation_held``: :func:`~quiltpriv.inference.attribute_joints.
    held_limit`) at once (its messages, a clique's tables and its result, split into at most
    ``settings.max_chunks`` chunks) and touches at most ``settings.max_propagation_work``
    entries; where it cannot be afforded or trusted (an operation
    underflowed: it runs under ``numpy.errstate(under="raise")``, so it is trusted at any
    magnitude otherwise), variable elimination answers (``"elimination"``, which hands the
    query to exact integers where float64 could underflow). Each entry errs by at most the
    propagation's depth plus the sum over the attributes left out
    (:func:`~quiltpriv.inference.attribute_joints.joint_influence`'s bound).
    """

    name = "junction_tree_batched"

    def joint(self, query: JointQuery) -> Answer | None:
        theta, nodes = query.theta, query.nodes
        first, rest = nodes[0], theta.sort(nodes[1:])
        attributes = rest or nodes
        joints = self._propagation(query, attributes)
        if joints is None:
            return EliminationEngine().joint(query)
        where = theta.index[first]
        table = joints.joint(where, [theta.index[v] for v in rest])
        # axes: the first node, then the rest in the network's order; back to the query's
        order = (first, *rest)
        table = np.ascontiguousarray(np.transpose(table, [order.index(v) for v in nodes]))
        return Answer(table, self.name, joints.depth + joints.tables[where].size)

    @staticmethod
    def _propagation(query: JointQuery, attributes: tuple[str, ...]) -> AttributeJoints | None:
        """The kept propagation over ``attributes``, or a new one (kept within the budget)."""
        theta, member = query.theta, query.member
        held = held_limit(query.max_table, query.settings)
        key = (member, tuple(theta.index[a] for a in attributes), held, query.settings)
        kept = InferenceCache.of(theta).entries(PROPAGATIONS)
        joints = kept.get(key)
        if joints is None:
            joints = attribute_joints(theta, attributes, member, max_held=held,
                                      deadline=query.deadline, settings=query.settings)
            if joints is None:
                return None
        return kept.charge(key, joints, _entries, query.max_table)
