"""Triangulation and a calibrated junction tree per member of Theta (exact joint marginals).

Exact max-influence (Definition 8) needs the joint ``P(phi_i, phi_Q)``. This module holds the
per-Theta work that queries share:

1. :func:`tree_structure` triangulates the moral graph with a greedy min-weight elimination
   order and keeps the maximal elimination cliques, joined into a junction tree (running
   intersection holds for the elimination tree, and absorbing a clique into a neighbour that
   contains it preserves it). Its global elimination order is what the default inference path
   (``inference="auto"``, bucket elimination in :mod:`quiltpriv.inference.influence`) restricts to
   each query's ancestral set.
2. :func:`junction_tree` calibrates the tree (Hugin propagation, a collect and a distribute
   pass), after which every clique table is the exact marginal ``P(phi_C)`` and every separator
   table is ``P(phi_S)`` (``inference="junction_tree"``).
3. :meth:`JunctionTree.marginal` answers ``P(phi_S)`` from the cliques: it marginalises one
   clique when ``S`` fits in one, else contracts the smallest subtree that covers ``S`` (a
   Steiner tree through the lowest common ancestor) as ``P(C_r) * prod P(C | S_C)``, summing
   out each clique's private variables first. Measured on pgmpy's bundled networks, this is
   slower than bucket elimination for the planner's queries (large cliques on andes and munin),
   so it is an independent exact cross-check, not the default.

Every operation is a product, a sum of non-negative numbers or a division by a separator
marginal (``0 / 0 := 0``, the only case where a divisor is zero), so a probability is zero
exactly when it is zero in the model: the zero pattern, which decides infinite influences, is
exact, provided nothing underflows: :mod:`quiltpriv.inference.influence` uses the tree only when the
product of the least positive CPD entries of the whole network is at least ``2**-1000``, and
computes in exact integers otherwise. Rounding is relative and tiny (~1e-15 per operation);
the influence's upward rounding covers it with a proven bound, and the tests compare with
variable elimination, pgmpy and exact rationals.

This is standard exact inference (Lauritzen and Spiegelhalter 1988; Jensen, Lauritzen and
Olesen 1990), built here on numpy so it needs no per-query model copies and works on integer
node indices.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.inference.cache import InferenceCache, Kind
from quiltpriv.inference.engines.base import DEFAULT_SETTINGS
from quiltpriv.inference.factors import (
    MAX_VARIABLES,
    broadcast,
    product_sum,
    scope_of,
    sum_to,
    to_order,
)
from quiltpriv.inference.orders import (  # the exceptions are this module's public names too
    Elimination,
    TreeDeadline,
    TreeStepTooLarge,
    greedy_elimination,
)
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.memory import table_limit
from quiltpriv.utils.validation import check_scalar


@dataclass(frozen=True, eq=False)
class TreeStructure:
    """The member-independent part: cliques, tree edges and where each CPD goes.

    Variables are node indices in ``theta.nodes`` (a topological order); every clique and
    separator lists its variables in increasing index, which is also the axis order of its
    table.
    """

    cliques: tuple[tuple[int, ...], ...]
    parent: tuple[int, ...]
    """Parent clique of each clique, ``-1`` for the root (one root: components hang below it
    with empty separators)."""
    separators: tuple[tuple[int, ...], ...]
    """``cliques[c] & cliques[parent[c]]`` (empty for the root)."""
    depth: tuple[int, ...]
    order: tuple[int, ...]
    """Cliques root first, every clique after its parent (the distribute order)."""
    home: tuple[tuple[int, ...], ...]
    """Per variable, the cliques containing it, smallest table first."""
    assign: tuple[int, ...]
    """Per variable, the clique that receives its CPD (contains its family)."""
    size: int
    """Total entries of the clique and separator tables."""
    width: int
    """Entries of the largest clique table."""
    position: tuple[int, ...]
    """Per variable, its step in the global elimination order (variable elimination on a
    query's ancestral set eliminates in this order: it restricts a good global order, so no
    per-query ordering work is needed)."""
    elimination_order: tuple[int, ...]
    """The variable eliminated at each step (the inverse of ``position``)."""


#: The cache's kinds this module keeps (:class:`~quiltpriv.inference.cache.InferenceCache`):
#: the min-weight and min-fill junction trees' structures, and each member's calibrated tree
#: (charged against the memory budget, :func:`junction_tree`).
STRUCTURE: Kind[None, TreeStructure] = Kind("junction_structure")
FILL_STRUCTURE: Kind[None, TreeStructure] = Kind("fill_structure")
TREES: Kind[int, JunctionTree] = Kind("junction_tree", lru=True)


def parent_indices(theta: Theta) -> tuple[tuple[int, ...], ...]:
    """Per node index, its parents' indices in CPD axis order (cached on ``theta``)."""
    check_theta(theta)
    hit = InferenceCache.of(theta).parent_indices.get()
    if hit is None:
        idx = theta.index
        hit = InferenceCache.of(theta).parent_indices.set(tuple(
            tuple(idx[p] for p in theta.parents[v]) for v in theta.nodes))
    return hit


def cardinalities(theta: Theta) -> tuple[int, ...]:
    """Per node index, its number of states (cached on ``theta``)."""
    check_theta(theta)
    hit = InferenceCache.of(theta).cardinalities.get()
    if hit is None:
        hit = InferenceCache.of(theta).cardinalities.set(tuple(
            theta.cardinality[v] for v in theta.nodes))
    return hit


def sorted_tables(theta: Theta, member: int) -> tuple[tuple[tuple[int, ...], ...],
                                                      tuple[np.ndarray, ...]]:
    """Each CPD of a member as ``(scope, table)`` with axes in increasing node index (cached)."""
    member = check_theta(theta).check_member(member)
    hit = InferenceCache.of(theta).sorted_tables.get(member)
    if hit is None:
        scopes, tables = [], []
        for v, (name, ups) in enumerate(zip(theta.nodes, parent_indices(theta), strict=True)):
            fam = [v, *ups]
            perm = sorted(range(len(fam)), key=fam.__getitem__)
            scopes.append(tuple(fam[k] for k in perm))
            tables.append(np.transpose(theta.members[member][name].table, perm))
        hit = InferenceCache.of(theta).sorted_tables[member] = (tuple(scopes), tuple(tables))
    return hit


def is_floating(theta: Theta, member: int) -> bool:
    """Whether a member's CPDs are floating point (not the exact rational tables of
    :mod:`quiltpriv.queries.network_laws`, which only variable elimination handles)."""
    member = check_theta(theta).check_member(member)
    hit = InferenceCache.of(theta).floating.get(member)
    if hit is None:
        hit = InferenceCache.of(theta).floating[member] = all(
            np.asarray(c.table).dtype.kind == "f" for c in theta.members[member].values())
    return hit


def tree_structure(theta: Theta) -> TreeStructure:
    """Triangulate ``theta``'s moral graph and build its junction tree (cached on ``theta``).

    The elimination order is greedy min-weight (the product of the cardinalities of a variable
    and its current neighbours; ties by node index), kept incrementally with a lazy heap.
    """
    check_theta(theta)
    kept = InferenceCache.of(theta).value(STRUCTURE)
    hit = kept.get()
    if hit is not None:
        return hit
    return kept.set(_build_tree_structure(cardinalities(theta), parent_indices(theta)))


class _Absorbed(NamedTuple):
    """The elimination tree after non-maximal cliques were absorbed."""

    representative: tuple[int, ...]
    """Per elimination clique, the kept clique that absorbed it (itself if kept)."""
    parent: tuple[int, ...]
    """Per elimination clique, its parent elimination clique (``-1``: none)."""


class _RootedTree(NamedTuple):
    """The kept cliques as one rooted tree."""

    cliques: tuple[tuple[int, ...], ...]
    parent: tuple[int, ...]
    """Parent of each kept clique, ``-1`` for the root."""
    root: int
    renumber: dict[int, int]
    """Elimination clique index -> kept clique index, for the kept ones."""


def fill_tree_structure(theta: Theta, *, max_weight: int | None = None,
                        deadline: float | None = None) -> TreeStructure | None:
    """:func:`tree_structure` with a greedy min-fill order (cached on ``theta``).

    With ``max_weight``, None as soon as the triangulation reaches a clique of more than
    ``max_weight`` entries (the tree would be too large for its caller: on a grid-like
    network, long before the whole triangulation is built; that bound is remembered, so a
    later call with the same or a smaller one returns at once); with ``deadline``
    (``time.monotonic()``), None once it passes. Without either it always returns the tree.

    The order eliminates, at each step, the variable whose elimination adds the fewest edges
    to the moral graph (ties by min-weight, then node index). On long networks of bounded
    treewidth it builds far smaller trees than min-weight: measured on 10,000-node seeded
    networks (``benchmarks/bench_linear_scale.py``, with the lazily re-keyed order this one
    replaced), 9.9 million clique entries instead of 184 million (banded), 1.3 instead of 3.4
    (layered) and 0.95 instead of 6.9 (lattice).
    The shared propagation of :mod:`quiltpriv.inference.attribute_joints` uses it; the global
    order of variable elimination stays min-weight (the per-query orders it gives were
    measured on the bundled networks).
    """
    check_theta(theta)
    cache = InferenceCache.of(theta)
    kept = cache.value(FILL_STRUCTURE)
    hit = kept.get()
    if hit is not None:
        return hit if max_weight is None or hit.width <= max_weight else None
    over = cache.fill_structure_over.get()
    if max_weight is not None and over is not None and max_weight <= over:
        return None
    try:
        structure = _build_tree_structure(cardinalities(theta), parent_indices(theta),
                                          fill=True, max_weight=max_weight, deadline=deadline)
    except TreeStepTooLarge:
        assert max_weight is not None
        cache.fill_structure_over.set(max(max_weight, over or 0))
        return None
    except TreeDeadline:
        return None
    return kept.set(structure)


def _build_tree_structure(card: Sequence[int], parents: Sequence[Sequence[int]],
                          fill: bool = False, max_weight: int | None = None,
                          deadline: float | None = None) -> TreeStructure:
    """The junction tree of a network given per node index its cardinality and parents
    (:func:`~quiltpriv.inference.orders.greedy_elimination` raises past ``max_weight`` or
    ``deadline``)."""
    elimination = greedy_elimination(card, _moral_adjacency(parents), fill, max_weight,
                                     deadline)
    absorbed = _absorb_nonmaximal(elimination.cliques,
                                 _elimination_tree(elimination))
    tree = _rooted_tree(elimination.cliques, absorbed)
    cliques, par = tree.cliques, tree.parent
    seps = tuple(
        () if p < 0 else tuple(sorted(set(cliques[j]) & set(cliques[p])))
        for j, p in enumerate(par)
    )
    order, depth = _distribute_order(par, tree.root)
    sizes = [math.prod(card[u] for u in c) for c in cliques]
    pos = elimination.position
    assign = tuple(
        tree.renumber[absorbed.representative[pos[min((v, *parents[v]), key=pos.__getitem__)]]]
        for v in range(len(card)))
    size = sum(sizes) + sum(math.prod(card[u] for u in s) for s in seps)
    return TreeStructure(
        cliques=cliques, parent=par, separators=seps, depth=depth,
        order=order, home=_clique_homes(cliques, sizes, len(card)), assign=assign, size=size,
        width=max(sizes), position=pos, elimination_order=elimination.variables,
    )


def _moral_adjacency(parents: Sequence[Sequence[int]]) -> list[set[int]]:
    """Per node index, its neighbours in the moral graph (each family made a clique)."""
    n = len(parents)
    adj: list[set[int]] = [set() for _ in range(n)]
    for v in range(n):
        fam = [v, *parents[v]]
        for a in fam:
            adj[a].update(fam)
    for v in range(n):
        adj[v].discard(v)
    return adj


def _elimination_tree(elimination: Elimination) -> list[int]:
    """Per elimination clique, its parent in the elimination tree (``-1``: a root).

    The clique of v hangs below the clique of the first-eliminated of its other members (all
    of which were v's neighbours when v went).
    """
    pos = elimination.position
    raw_parent = [-1] * len(elimination.cliques)
    for k, (v, cl) in enumerate(zip(elimination.variables, elimination.cliques, strict=True)):
        rest = [pos[u] for u in cl if u != v]
        if rest:
            raw_parent[k] = min(rest)
    return raw_parent


def _absorb_nonmaximal(elim_cliques: Sequence[tuple[int, ...]],
                      raw_parent: Sequence[int]) -> _Absorbed:
    """Absorb non-maximal cliques of the elimination tree.

    A clique contained in its parent, or a parent contained in one of its children (then that
    child takes its place), is absorbed. Children come before parents in elimination order, so
    one pass in that order sees every child first.
    """
    m = len(elim_cliques)
    alias = list(range(m))

    def find(k: int) -> int:
        while alias[k] != k:
            alias[k] = alias[alias[k]]
            k = alias[k]
        return k

    children: list[list[int]] = [[] for _ in range(m)]
    for k in range(m):
        if raw_parent[k] >= 0:
            children[raw_parent[k]].append(k)
    sets = [frozenset(c) for c in elim_cliques]
    parent = list(raw_parent)
    for k in range(m):
        p = parent[k]
        if p >= 0 and sets[k] <= sets[p]:
            alias[k] = p
            continue
        # A kept child containing this clique replaces it.
        for c in children[k]:
            c = find(c)
            if c != k and alias[c] == c and sets[k] <= sets[c]:
                alias[k] = c
                parent[c] = p
                break
    return _Absorbed(tuple(find(k) for k in range(m)), tuple(parent))


def _rooted_tree(elim_cliques: Sequence[tuple[int, ...]], absorbed: _Absorbed) -> _RootedTree:
    """The kept cliques, renumbered, with one root (the last-eliminated clique).

    Other components hang below the root with an empty separator.
    """
    find, parent = absorbed.representative, absorbed.parent
    kept = [k for k in range(len(elim_cliques)) if find[k] == k]
    new_id = {k: j for j, k in enumerate(kept)}
    par = []
    for k in kept:
        p = parent[k]
        while p >= 0 and find[p] == k:  # cannot happen, but never point at oneself
            p = parent[p]
        par.append(new_id[find[p]] if p >= 0 else -1)
    roots = [j for j, p in enumerate(par) if p < 0]
    root = roots[-1]
    for j in roots:
        if j != root:
            par[j] = root
    return _RootedTree(tuple(elim_cliques[k] for k in kept), tuple(par), root, new_id)


def _distribute_order(par: Sequence[int], root: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Cliques root first, every clique after its parent; and each clique's depth."""
    kids: list[list[int]] = [[] for _ in par]
    for j, p in enumerate(par):
        if p >= 0:
            kids[p].append(j)
    order: list[int] = []
    depth = [0] * len(par)
    stack = [root]
    while stack:
        j = stack.pop()
        order.append(j)
        for c in kids[j]:
            depth[c] = depth[j] + 1
            stack.append(c)
    return tuple(order), tuple(depth)


def _clique_homes(cliques: Sequence[tuple[int, ...]], sizes: Sequence[int],
                 n: int) -> tuple[tuple[int, ...], ...]:
    """Per variable, the cliques containing it, smallest table first (ties by index)."""
    home_lists: list[list[int]] = [[] for _ in range(n)]
    for j, c in enumerate(cliques):
        for u in c:
            home_lists[u].append(j)
    return tuple(tuple(sorted(h, key=lambda j: (sizes[j], j))) for h in home_lists)


@dataclass(frozen=True, eq=False)
class JunctionTree:
    """A calibrated junction tree of one member of Theta (tables are exact marginals)."""

    structure: TreeStructure
    cards: tuple[int, ...]
    tables: tuple[np.ndarray, ...]
    """``P(phi_C)`` per clique, axes in the clique's variable order."""
    sep_tables: tuple[np.ndarray, ...]
    """``P(phi_S)`` per separator (shape ``()`` and value 1 for the root)."""

    def marginal(self, nodes: Sequence[int], max_table: int) -> np.ndarray:
        """Exact ``P(phi_nodes)`` (node indices), axes in the order given.

        Raises
        ------
        TreeStepTooLarge
            If a step of the contraction would exceed ``max_table`` entries.
        """
        st = self.structure
        want = set(nodes)
        first = st.home[nodes[0]]
        for c in first:  # the smallest clique holding every node, if there is one
            if want.issubset(st.cliques[c]):
                return to_order(sum_to(self.tables[c], st.cliques[c], want), st.cliques[c],
                                 nodes)
        return self._contract(nodes, want, max_table)

    def _contract(self, nodes: Sequence[int], want: set[int], max_table: int) -> np.ndarray:
        st = self.structure
        parent, depth = st.parent, st.depth
        # Steiner subtree: repeatedly lift the deepest frontier clique to its parent.
        front = {st.home[v][0] for v in want}
        heap = [(-depth[c], c) for c in front]
        heapq.heapify(heap)
        visit: list[int] = []
        while len(front) > 1:
            _, c = heapq.heappop(heap)
            front.discard(c)
            visit.append(c)
            p = parent[c]
            if p not in front:
                front.add(p)
                heapq.heappush(heap, (-depth[p], p))
        top = front.pop()
        visit.append(top)
        in_tree = set(visit)
        needed: dict[int, set[int]] = {c: set() for c in visit}
        for c in visit:
            if c != top:
                needed[c].update(st.separators[c])
                needed[parent[c]].update(st.separators[c])
        messages: dict[int, list[tuple[tuple[int, ...], np.ndarray]]] = {c: [] for c in visit}
        for c in visit:  # deepest first: every child is done before its parent
            clique = st.cliques[c]
            keep = {u for u in clique if u in want or u in needed[c]}
            factor = sum_to(self.tables[c], clique, keep)
            fvars = tuple(u for u in clique if u in keep)
            if c != top:
                sep = st.separators[c]
                factor = _divide(factor, fvars, self.sep_tables[c], sep)
                out = set(sep) | (want & (keep | scope_of(messages[c])))
            else:
                out = want
            if c != top and parent[c] not in in_tree:
                raise AssertionError("Steiner subtree is not connected")
            result = _product_sum([(fvars, factor), *messages[c]], out, self.cards, max_table)
            if c == top:
                return to_order(result[1], result[0], nodes)
            messages[parent[c]].append(result)
        raise AssertionError("unreachable")  # pragma: no cover


def _divide(factor: np.ndarray, fvars: tuple[int, ...], sep_table: np.ndarray,
            sep: tuple[int, ...]) -> np.ndarray:
    """``factor / P(sep)`` with ``0 / 0 := 0`` (the separator is a subset of ``fvars``)."""
    den = broadcast(sep_table, sep, fvars)
    out = np.zeros(np.broadcast_shapes(factor.shape, den.shape))
    np.divide(factor, den, out=out, where=den > 0)
    return out


def _product_sum(factors: list[tuple[tuple[int, ...], np.ndarray]], out: set[int],
                 cards: tuple[int, ...], max_table: int) -> tuple[tuple[int, ...], np.ndarray]:
    """Multiply ``factors`` and sum out every variable not in ``out`` (one einsum)."""
    every = sorted(scope_of(factors))
    if math.prod(cards[u] for u in every) > max_table:
        raise TreeStepTooLarge(f"a junction-tree step needs {math.prod(cards[u] for u in every)} "
                        f"entries (limit {max_table})")
    if len(every) > MAX_VARIABLES:
        raise TreeStepTooLarge(f"a junction-tree step involves over {MAX_VARIABLES} variables")
    out_vars = tuple(u for u in every if u in out)
    if len(factors) == 1:
        vs, t = factors[0]
        return out_vars, sum_to(t, vs, out)
    return out_vars, product_sum(factors, every, out_vars, optimize=len(factors) > 2)


def calibrate(theta: Theta, member: int, structure: TreeStructure) -> JunctionTree:
    """Hugin propagation on ``structure`` with the CPDs of ``theta.members[member]``."""
    member = check_theta(theta).check_member(member)
    if not isinstance(structure, TreeStructure):
        raise ParameterError(f"structure must be a TreeStructure (tree_structure(theta)), got "
                             f"{type(structure).__name__}")
    cards = cardinalities(theta)
    cliques = structure.cliques
    pots = [np.ones(tuple(cards[u] for u in c)) for c in cliques]
    for v, (scope, table) in enumerate(zip(*sorted_tables(theta, member), strict=True)):
        c = structure.assign[v]
        pots[c] = pots[c] * broadcast(table, scope, cliques[c])
    parent, seps = structure.parent, structure.separators
    old: list[np.ndarray] = [np.ones(())] * len(cliques)
    for c in reversed(structure.order):  # collect: children before parents
        p = parent[c]
        if p < 0:
            continue
        msg = sum_to(pots[c], cliques[c], set(seps[c]))
        old[c] = msg
        pots[p] = pots[p] * broadcast(msg, seps[c], cliques[p])
    root = structure.order[0]
    total = pots[root].sum()
    if not total > 0:
        raise ModelError("the network's joint distribution sums to zero")
    pots[root] = pots[root] / total
    sep_tables: list[np.ndarray] = [np.ones(())] * len(cliques)
    for c in structure.order[1:]:  # distribute: parents before children
        p = parent[c]
        new = sum_to(pots[p], cliques[p], set(seps[c]))
        ratio = np.zeros_like(new)
        np.divide(new, old[c], out=ratio, where=old[c] > 0)
        pots[c] = pots[c] * broadcast(ratio, seps[c], cliques[c])
        sep_tables[c] = new
    return JunctionTree(structure=structure, cards=cards, tables=tuple(pots),
                        sep_tables=tuple(sep_tables))


def junction_tree(theta: Theta, member: int = 0, *, max_tree: int | None = None,
                  max_memory: int | str | None = None) -> JunctionTree | None:
    """The calibrated junction tree of one member (built once, cached on ``theta``).

    Parameters
    ----------
    theta : Theta
    member : int
        Which member of Theta.
    max_tree : int, optional
        Most entries (cliques plus separators) the tree may hold; default
        :attr:`EngineSettings.max_tree <quiltpriv.inference.engines.base.EngineSettings>`.
    max_memory : int or str, optional
        The memory budget (bytes, or a size such as ``"4G"``); default
        :data:`quiltpriv.utils.memory.DEFAULT_MAX_MEMORY`. The tree is charged like a table
        (:func:`quiltpriv.utils.memory.table_limit` entries), and so are the trees of the
        other members kept with it (:func:`_junction_tree`).

    Returns ``None`` when the tree would hold more than ``max_tree`` entries or than the
    budget allows, or when the CPDs are not floating point (the exact-rational tables of
    :mod:`quiltpriv.queries.network_laws`); the caller then uses variable elimination.
    """
    member = check_theta(theta).check_member(member)
    limit = (DEFAULT_SETTINGS.max_tree if max_tree is None
             else int(check_scalar(max_tree, "max_tree", integer=True, min_val=0)))
    return _junction_tree(theta, member, min(limit, table_limit(None, max_memory)))


def _tree_size(tree: JunctionTree) -> int:
    return tree.structure.size


def _junction_tree(theta: Theta, member: int, limit: int) -> JunctionTree | None:
    """:func:`junction_tree` within ``limit`` entries, for the trees of every member together.

    A tree above ``limit`` is not built. The trees a Theta keeps (one per member, of equal
    size: they share the structure) are charged together
    (:meth:`~quiltpriv.inference.cache.Entries.charge`): using one drops the least recently
    used others until all fit ``limit``, so the memory they hold stays within the budget of
    the call that uses them, and an answer never depends on which trees an earlier call left
    (a dropped tree is calibrated again when asked for).
    """
    if not is_floating(theta, member):
        return None
    structure = tree_structure(theta)
    if structure.size > limit:
        return None
    trees = InferenceCache.of(theta).entries(TREES)
    tree = trees.get(member)
    if tree is None:
        tree = calibrate(theta, member, structure)
    return trees.charge(member, tree, _tree_size, limit)
