"""The junction-tree engine: each member's calibrated junction tree
(:mod:`quiltpriv.inference.junction_tree`), queried through the smallest subtree that covers
the query; variable elimination where the tree or the query's step is too large."""

from __future__ import annotations

from quiltpriv.inference.engines.base import Answer, JointQuery
from quiltpriv.inference.engines.elimination import EliminationEngine
from quiltpriv.inference.junction_tree import TreeStepTooLarge, _junction_tree
from quiltpriv.inference.rounding import _tree_depth
from quiltpriv.inference.underflow import _float_safe_for


class JunctionTreeEngine:
    """``engine="junction_tree"`` (:class:`~quiltpriv.inference.engines.base.Engine`).

    The tree touches every CPD of the member, so float64 is trusted only where the whole
    member's bound holds (:func:`~quiltpriv.inference.underflow._float_safe_for`). The tree is
    built once per member, within :attr:`EngineSettings.max_tree
    <quiltpriv.inference.engines.base.EngineSettings>` entries and within the query's
    ``max_table`` for the trees of all members together (the memory budget), and does not
    read the deadline; the elimination it falls back to does.
    """

    name = "junction_tree"

    def joint(self, query: JointQuery) -> Answer | None:
        theta, nodes, member = query.theta, query.nodes, query.member
        if not _float_safe_for(theta, member, nodes, "junction_tree",
                               query.settings.safe_log2_floor):
            return None
        # the tree is held as long as the Theta: charged against the call's budget
        # (max_table, from max_memory) with the other members' trees, and settings.max_tree
        tree = _junction_tree(theta, member, min(query.settings.max_tree, query.max_table))
        if tree is not None:
            try:
                table = tree.marginal([theta.index[v] for v in nodes], query.max_table)
                return Answer(table, self.name, _tree_depth(theta))
            except TreeStepTooLarge:
                pass  # variable elimination on the ancestral set may still fit
        return EliminationEngine().joint(query)
