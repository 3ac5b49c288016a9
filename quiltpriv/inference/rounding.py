"""Upper bounds on the rounding error of a float64 Definition 8, and the upward margin.

See :mod:`quiltpriv.inference.influence` (floating point, at every magnitude): every
influence of a non-empty quilt computed in float64 is raised by :func:`_rounding_bound` and by
:data:`ROUNDING_MARGIN`, so that it is never below the exact value.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from quiltpriv.inference.cache import InferenceCache
from quiltpriv.inference.engines.base import DEFAULT_SETTINGS
from quiltpriv.inference.junction_tree import TreeStructure, tree_structure
from quiltpriv.inference.methods import InferenceMethod

if TYPE_CHECKING:
    from quiltpriv.model.network import Theta


#: Upward rounding applied to every non-zero computed influence (relative and absolute). It
#: covers the rounding of the contraction (relative error ~1e-13 even on the largest bundled
#: networks) so that the influence used for a plan is never an under-estimate.
ROUNDING_MARGIN = 1e-10


#: Unit roundoff of float64.
_U = 2.0**-53


def _rounding_bound(theta: Theta, out_size: int, inference: InferenceMethod,
                    merge_limit: int = DEFAULT_SETTINGS.merge_limit) -> float:
    """Upper bound on ``|computed - exact|`` of a float64 Definition 8 (see the module text).

    ``K`` bounds the number of roundings on any path from a CPD entry to a joint entry: each
    elimination step multiplies its factors (at most two per eliminated variable, summed over
    the network's ``n`` nodes: ``2 n``) and sums at most ``max(merge_limit, largest
    cardinality)`` terms; the
    row totals of Definition 8 sum at most ``out_size`` entries; the junction tree's Hugin
    passes touch each of its tables a bounded number of times (``_junction_tree_depth``).
    """
    depth = (_tree_depth(theta) if inference == "junction_tree"
             else _elim_depth(theta, merge_limit))
    return _rounding_bound_k(depth + out_size)


def _elim_depth(theta: Theta, merge_limit: int = DEFAULT_SETTINGS.merge_limit) -> int:
    """``K`` of an elimination over any ancestral set of ``theta`` (the network's size bounds
    any ancestral set's), cached per Theta: the depth the elimination engines state in their
    :class:`~quiltpriv.inference.engines.base.Answer`."""
    depths = InferenceCache.of(theta).rounding_depth
    depth = depths.get(("elimination", merge_limit))
    if depth is None:
        depth = depths["elimination", merge_limit] = _elimination_depth(theta, merge_limit)
    return depth


def _tree_depth(theta: Theta) -> int:
    """``K`` of the calibrated junction tree of :func:`~quiltpriv.inference.junction_tree.
    tree_structure` and a contraction of its cliques (:func:`_junction_tree_depth`), cached."""
    depths = InferenceCache.of(theta).rounding_depth
    depth = depths.get(("junction_tree", 0))
    if depth is None:
        depth = depths["junction_tree", 0] = _junction_tree_depth(theta, tree_structure(theta))
    return depth


def _elimination_depth(theta: Theta, merge_limit: int = DEFAULT_SETTINGS.merge_limit) -> int:
    """``K`` of variable elimination over any ancestral set of ``theta`` (module text)."""
    c_max = max(theta.cardinality.values())
    return len(theta.nodes) * (max(merge_limit, c_max) + 2) + 16


def _junction_tree_depth(theta: Theta, structure: TreeStructure) -> int:
    """``K`` of a propagation over ``structure`` and a read of one clique.

    A path from a CPD entry to a result visits each clique at most twice (collect, then
    distribute). Per visit it sums at most the clique's entries, and multiplies at most once
    per CPD, evidence table and message entering the clique, with one division on the way
    down. Over all cliques that is at most twice the tables' entries plus four per clique
    (both below ``6 * size``), plus two per CPD and per attribute, which elimination's ``K``
    (:func:`_elimination_depth`, over 250 per node) covers; the two are added.
    """
    return _elimination_depth(theta) + 6 * structure.size + 16


def _rounding_bound_k(k: int) -> float:
    """Upper bound on ``|computed - exact|`` of a float64 log-ratio of two conditionals whose
    four entries were each computed with at most ``k`` roundings of non-negative numbers.

    Entries err by at most ``gamma_K``, a ratio of two conditionals (four entries) by ``4
    gamma_K``, and the two logs of values above ``2**-1000`` by ``2 * 745 u``.
    """
    if k * _U >= 0.25:
        return math.inf  # pragma: no cover - would need ~10**15 operations
    gamma = k * _U / (1 - k * _U)
    return 4 * gamma / (1 - 4 * gamma) + 1500 * _U
