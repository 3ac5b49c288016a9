"""``P(phi_v, phi_A)`` for every node ``v`` at once: one batched propagation per plan.

Every candidate quilt of the planner is a subset of the query's attributes ``A``
([ZOC22, Alg. 3]; :func:`quiltpriv.graph.quilts.least_influence_quilt` returns a subset of its
targets), so a plan over many sensitive attributes asks for ``P(phi_i, phi_Q)`` with ``Q``
inside one small set ``A``, for every ``i``. Answering each by its own elimination costs the
size of ``i``'s ancestral set, so a plan over every node of a long network is quadratic. Here
one propagation over the junction tree of :func:`quiltpriv.inference.junction_tree.
fill_tree_structure` (Shafer and Shenoy 1990; Lauritzen and Spiegelhalter 1988), with
the evidence ``phi_A = a`` entered for every joint state ``a`` of ``A`` at once (a leading
batch axis on every table; a table no evidence reaches keeps a batch axis of size one), leaves
every clique table equal to ``P(phi_C, phi_A = a)``; summing each node's smallest clique gives
``P(phi_v = x, phi_A = a)`` for every ``v``, ``x`` and ``a``. The work is the tree's size
times the number of joint states of ``A``: linear in the network for bounded treewidth.

Floating point, at every magnitude, as in :mod:`quiltpriv.inference.influence`:

* *Underflow.* Every operation is a product, a sum of non-negative numbers or a division by a
  positive number, run as numpy ufuncs under ``numpy.errstate(under="raise")``: numpy reads
  the IEEE underflow flag after each of them, so a result below the normal range stops the
  propagation (a sum of non-negative numbers cannot underflow unless an input did). A
  floating-point environment that flushes subnormals to zero, or treats them as zero, is
  detected first. In either case :func:`attribute_joints` returns None and the planner
  computes each influence on its own (exact integers where float64 cannot be trusted).
* *Rounding.* Per joint state of ``A`` this is the propagation of the network with the
  evidence's CPDs multiplied by 0 and 1 (exact), so each entry errs by at most ``gamma_K``
  with ``K`` the junction tree's depth bound of :func:`quiltpriv.inference.influence.
  max_influence` (six roundings per table entry of the tree, plus the network's size times
  the largest summed block); :attr:`AttributeJoints.depth` carries ``K`` and the influence
  adds the sums over ``A`` and Definition 8's own.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from quiltpriv.errors import ParameterError
from quiltpriv.inference.budget import DEFAULT_MAX_TABLE
from quiltpriv.inference.definition8 import _influence_from_joint
from quiltpriv.inference.engines.base import DEFAULT_SETTINGS, EngineSettings, check_settings
from quiltpriv.inference.factors import broadcast_shape, sum_to
from quiltpriv.inference.junction_tree import (
    TreeStructure,
    cardinalities,
    fill_tree_structure,
    is_floating,
    sorted_tables,
)
from quiltpriv.inference.result import Influence
from quiltpriv.inference.rounding import ROUNDING_MARGIN, _junction_tree_depth, _rounding_bound_k
from quiltpriv.inference.underflow import subnormals_kept
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.validation import check_scalar

#: The module constants that became settings (:class:`~quiltpriv.inference.engines.base.
#: EngineSettings`), still readable under their old names with a warning: name -> (the old
#: value, what to use instead).
_DEPRECATED_CONSTANTS: dict[str, tuple[object, str]] = {
    "DEFAULT_MAX_WORK": (DEFAULT_SETTINGS.max_propagation_work,
                         "EngineSettings.max_propagation_work"),
    "DEFAULT_MAX_HELD": (2**27, "EngineSettings.max_propagation_held (by default the memory "
                                "budget, max_memory=, decides)"),
}


def __getattr__(name: str) -> object:
    from quiltpriv.utils.deprecation import deprecated_constant

    return deprecated_constant(__name__, _DEPRECATED_CONSTANTS, name)


def held_limit(max_table: int, settings: EngineSettings = DEFAULT_SETTINGS) -> int:
    """Most table entries the propagation may hold at once within a memory budget of
    ``max_table`` entries (:func:`quiltpriv.utils.memory.table_limit`: the budget at
    :data:`~quiltpriv.utils.memory.BYTES_PER_TABLE_ENTRY` bytes an entry, four times the
    float64 each held entry takes), lowered by
    :attr:`~quiltpriv.inference.engines.base.EngineSettings.max_propagation_held` when it is
    set: never above the budget.

    Examples
    --------
    >>> from quiltpriv.inference.engines.base import EngineSettings
    >>> held_limit(2**20), held_limit(2**20, EngineSettings(max_propagation_held=1000))
    (1048576, 1000)
    """
    max_table = int(check_scalar(max_table, "max_table", integer=True, min_val=1))
    cap = check_settings(settings).max_propagation_held
    return max_table if cap is None else min(max_table, cap)


def result_entries(theta: Theta, attributes: Sequence[str]) -> int:
    """The entries of :func:`attribute_joints`' result: ``card(v)`` times the joint states of
    ``attributes``, summed over every node ``v`` (held whole however the propagation is split,
    and kept while the planner propagates the next member)."""
    theta = check_theta(theta)
    cards = cardinalities(theta)
    attrs = {theta.index[a] for a in theta.check_nodes(attributes, "attribute")}
    return sum(cards) * math.prod(cards[a] for a in attrs)


@dataclass(frozen=True, eq=False)
class AttributeJoints:
    """``P(phi_v = x, phi_A = a)`` for every node ``v`` of one member of Theta.

    Attributes
    ----------
    attributes : tuple of int
        The node indices of ``A``, increasing (the network's order).
    tables : tuple of numpy.ndarray
        Per node index ``v``, an array of shape ``(card(v), *card(A))``.
    depth : int
        ``K``: every entry errs by at most ``gamma_K`` relative (module text).
    """

    attributes: tuple[int, ...]
    tables: tuple[np.ndarray, ...]
    depth: int

    def joint(self, node: int, quilt: Sequence[int]) -> np.ndarray:
        """``P(phi_node, phi_quilt)`` (axes: ``node``, then ``quilt`` in the network's order);
        ``quilt`` is a subset of :attr:`attributes` without ``node``."""
        keep = set(quilt)
        axes = tuple(1 + k for k, a in enumerate(self.attributes) if a not in keep)
        table = self.tables[node]
        return table.sum(axis=axes) if axes else table


def propagation_work(theta: Theta, attributes: Sequence[str]) -> int:
    """The table entries :func:`attribute_joints` of ``attributes`` may touch (the number its
    ``max_work`` is compared with): twice the min-fill junction tree's size times the joint
    states of the attributes. Splitting the joint states into chunks does not change it (each
    chunk touches at most its share)."""
    theta = check_theta(theta)
    attrs = {theta.index[a] for a in theta.check_nodes(attributes, "attribute")}
    cards = cardinalities(theta)
    structure = fill_tree_structure(theta)
    assert structure is not None  # no bound was given
    return _work(structure, math.prod(cards[a] for a in attrs))


def _work(structure: TreeStructure, batch: int) -> int:
    return 2 * structure.size * batch


def _visit(structure: TreeStructure, cards: Sequence[int], batch: int) -> int:
    """Entries held while one clique is visited: its belief with the batch (one array,
    multiplied in place), a message summed out of it and a node's marginal (each at most the
    belief's size)."""
    return 2 * structure.width * batch + structure.width + 2 * max(cards) * batch


class _Late(Exception):
    """The deadline passed during the propagation."""


def attribute_joints(theta: Theta, attributes: Sequence[str], member: int, *,
                     max_work: int | None = None, max_held: int | None = None,
                     deadline: float | None = None, progress: bool = False,
                     settings: EngineSettings = DEFAULT_SETTINGS) -> AttributeJoints | None:
    """``P(phi_v, phi_A)`` for every node ``v`` under one member (module text).

    ``max_work`` defaults to ``settings.max_propagation_work`` and ``max_held`` to
    :func:`held_limit` of the default memory budget
    (:data:`~quiltpriv.inference.budget.DEFAULT_MAX_TABLE`).

    When the propagation over every joint state of ``A`` at once would hold more than
    ``max_held`` entries, the joint states are split into chunks (ranges of some attributes'
    values, cut as evenly as their numbers of states allow until a chunk fits; at most
    ``settings.max_chunks``, :attr:`~quiltpriv.inference.engines.base.EngineSettings.
    max_chunks`), and one propagation per chunk fills its part of the result. Each
    entry comes from the same products and sums as in one propagation (numpy may sum in
    another order), so :attr:`AttributeJoints.depth` bounds its rounding all the same.

    Returns None when the result could not be trusted or afforded: the member's tables are
    exact rationals, an operation underflowed, the floating-point environment flushes
    subnormals, the propagation would touch more than ``max_work`` entries
    (:func:`propagation_work`) or hold more than ``max_held`` at once (its messages, a
    clique's tables and the whole result) even split into ``settings.max_chunks`` chunks (the
    min-fill triangulation stops at its first clique above ``max_held``), or ``deadline``
    (``time.monotonic()``) passed before it ended (the triangulation sees it too).
    ``progress`` shows a bar over the cliques of each pass.
    """
    theta = check_theta(theta)
    member = theta.check_member(member)
    if max_work is None:
        max_work = settings.max_propagation_work
    if max_held is None:
        max_held = held_limit(DEFAULT_MAX_TABLE, settings)
    attrs = tuple(sorted(theta.index[a] for a in theta.check_nodes(attributes, "attribute")))
    if not attrs or not is_floating(theta, member) or not subnormals_kept():
        return None
    # a clique larger than max_held can never be visited: the triangulation stops there
    structure = fill_tree_structure(theta, max_weight=max_held, deadline=deadline)
    if structure is None:
        return None
    cards = cardinalities(theta)
    if _work(structure, math.prod(cards[a] for a in attrs)) > max_work:
        return None
    split = _split(structure, attrs, cards, max_held, settings.max_chunks)
    if split is None:
        return None
    sizes, rooting = split
    chunks = list(itertools.product(*(
        [range(lo, min(lo + s, cards[a])) for lo in range(0, cards[a], s)]
        for a, s in zip(attrs, sizes, strict=True))))
    # every entry is written: each node is summed out of one clique, which every chunk's
    # second pass visits, and the chunks partition the joint states
    tables = tuple(np.empty((cards[v], *(cards[a] for a in attrs))) for v in range(len(cards)))
    cpds = sorted_tables(theta, member)
    try:
        with np.errstate(under="raise", over="raise", invalid="raise"):
            for j, chunk in enumerate(chunks):
                label = f"chunk {j + 1}/{len(chunks)}, " if len(chunks) > 1 else ""
                _propagate(structure, cards, cpds, attrs, chunk, rooting, tables, deadline,
                           label if progress else None)
    except (FloatingPointError, _Late):
        return None
    return AttributeJoints(attrs, tables, _junction_tree_depth(theta, structure))


def _split(structure: TreeStructure, attrs: tuple[int, ...], cards: Sequence[int],
           max_held: int, max_chunks: int = DEFAULT_SETTINGS.max_chunks,
           ) -> tuple[tuple[int, ...], _Rooting] | None:
    """Per attribute, how many of its values one chunk takes (all of them where the whole
    propagation fits ``max_held``), and the rooting for a chunk of that shape; None when no
    split into at most ``max_chunks`` chunks fits.

    The result (``card(v)`` times every joint state, per node) is held whole whatever the
    split. Until a chunk fits, one attribute's values per chunk are cut
    (:func:`_finer`): chunks are sized for the largest of them, so even cuts waste least.
    """
    states = [cards[a] for a in attrs]
    result = sum(cards) * math.prod(states)
    if result + _visit(structure, cards, 1) > max_held:
        return None
    roots = _Roots(structure, attrs, cards)
    sizes = list(states)
    while math.prod(-(-c // s) for c, s in zip(states, sizes, strict=True)) <= max_chunks:
        held, j = roots.least(sizes)
        if held + _visit(structure, cards, math.prod(sizes)) + result <= max_held:
            return tuple(sizes), roots.rooting(j, held)
        finer = _finer(states, sizes)
        if finer is None:
            break
        sizes[finer[0]] = finer[1]
    return None


def _finer(cards: Sequence[int], sizes: Sequence[int]) -> tuple[int, int] | None:
    """The cut that shrinks the largest chunk most for the chunks it multiplies: ``(k, s)``,
    attribute ``k`` to take ``s`` values per chunk (``ceil(card / s)`` ranges), maximising
    ``log(shrink) / log(growth)``, then the least growth; None when every size is 1.

    A three-state attribute is cut into thirds (3 chunks, each a third), not into two values
    and one (2 chunks, the larger two thirds)."""
    best: tuple[float, float, int, int] | None = None
    for k, (c, s) in enumerate(zip(cards, sizes, strict=True)):
        ranges = -(-c // s)
        # for r ranges the least size is ceil(card / r): no larger one gives as few ranges
        for t in sorted({-(-c // r) for r in range(ranges + 1, c + 1)} - {s}, reverse=True):
            more = -(-c // t)
            key = (-math.log(s / t) / math.log(more / ranges), more / ranges, k, t)
            if best is None or key < best:
                best = key
    return None if best is None else (best[2], best[3])


class _Rooting(NamedTuple):
    """The junction tree rooted for one propagation: ``held`` is the most message entries it
    holds at once (:class:`_Roots`)."""

    held: int
    parent: list[int]
    order: list[int]
    children: list[list[int]]
    separators: tuple[tuple[int, ...], ...]


class _Roots:
    """The junction tree oriented from each clique where an attribute's evidence enters, so
    that each stored upward message is batched only over the attributes below it.

    :meth:`least` finds, for a chunk of ``sizes`` values per attribute, the rooting whose
    propagation holds the fewest message entries at once: the upward messages (each batched
    over the attributes below it) and, in the downward pass, the messages waiting for their
    clique (each with the whole chunk), simulated over the same depth-first order
    (:func:`_held`). The orientations are built once; a split tries several chunk shapes.
    """

    def __init__(self, structure: TreeStructure, attrs: Sequence[int],
                 cards: Sequence[int]) -> None:
        cliques = structure.cliques
        adj: list[list[int]] = [[] for _ in cliques]
        for c, p in enumerate(structure.parent):
            if p >= 0:
                adj[c].append(p)
                adj[p].append(c)
        homes = [structure.home[a][0] for a in attrs]
        self._oriented: list[_Oriented] = []
        for root in dict.fromkeys(homes):
            parent, order = _orient(adj, root)
            children: list[list[int]] = [[] for _ in cliques]
            for c in order[1:]:
                children[parent[c]].append(c)
            sep = [0 if parent[c] < 0 else
                   math.prod(cards[u] for u in _meet(cliques[c], cliques[parent[c]]))
                   for c in range(len(cliques))]
            self._oriented.append(_Oriented(parent, order, children,
                                            _below(parent, order, homes), sep))
        self._cliques = cliques

    def least(self, sizes: Sequence[int]) -> tuple[int, int]:
        """The fewest entries held at once, and the orientation (its index) that holds them;
        the first root of the attributes' order on ties."""
        return min((_held(o, sizes), j) for j, o in enumerate(self._oriented))

    def rooting(self, j: int, held: int) -> _Rooting:
        """Orientation ``j`` as a :class:`_Rooting`, with its separators' variables."""
        tree, cliques = self._oriented[j], self._cliques
        return _Rooting(held, tree.parent, tree.order, tree.children,
                        tuple(() if p < 0 else _meet(cliques[c], cliques[p])
                              for c, p in enumerate(tree.parent)))


class _Oriented(NamedTuple):
    """The junction tree oriented from one root: per clique its parent, children, the
    attributes (positions) whose evidence is in its subtree and its separator's states."""

    parent: list[int]
    order: list[int]
    children: list[list[int]]
    below: list[frozenset[int]]
    sep: list[int]


def _held(tree: _Oriented, sizes: Sequence[int]) -> int:
    """The most message entries one propagation over this orientation holds at once."""
    parent, order, children, below, sep = tree
    full = math.prod(sizes)
    up = [sep[c] * math.prod(sizes[k] for k in below[c]) for c in range(len(parent))]
    ups = sum(up[c] for c in order[1:])
    pending = 0
    held = ups
    for c in order:  # the downward pass: c's message is used, its children's made
        pending -= sep[c] * full if parent[c] >= 0 else 0
        for k in children[c]:
            ups -= up[k]
            pending += sep[k] * full
        held = max(held, ups + pending)
    return held


def _orient(adj: Sequence[Sequence[int]], root: int) -> tuple[list[int], list[int]]:
    """Parents and a depth-first preorder of the tree ``adj`` rooted at ``root``."""
    parent = [-1] * len(adj)
    order: list[int] = []
    stack = [root]
    seen = [False] * len(adj)
    seen[root] = True
    while stack:
        c = stack.pop()
        order.append(c)
        for k in adj[c]:
            if not seen[k]:
                seen[k] = True
                parent[k] = c
                stack.append(k)
    return parent, order


def _below(parent: Sequence[int], order: Sequence[int],
           homes: Sequence[int]) -> list[frozenset[int]]:
    """Per clique, the attributes (positions in ``homes``) whose evidence is in its subtree."""
    below: list[set[int]] = [set() for _ in parent]
    for k, h in enumerate(homes):
        below[h].add(k)
    for c in reversed(order):
        if parent[c] >= 0:
            below[parent[c]] |= below[c]
    return [frozenset(b) for b in below]


def _meet(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    sb = set(b)
    return tuple(u for u in a if u in sb)


def _propagate(structure: TreeStructure, cards: Sequence[int],
               cpds: tuple[tuple[tuple[int, ...], ...], tuple[np.ndarray, ...]],
               attrs: tuple[int, ...], chunk: Sequence[range], rooting: _Rooting,
               out: tuple[np.ndarray, ...], deadline: float | None = None,
               progress: str | None = None) -> None:
    """Shafer-Shenoy propagation with one batch axis per attribute (size one where its
    evidence has not arrived), over the values ``chunk[k]`` of attribute ``attrs[k]``: writes
    ``P(phi_v, phi_A = a)`` for the chunk's joint states ``a`` into ``out[v]``, of shape
    ``(card(v), *card(A))``.

    Clique tables are rebuilt from their CPDs when needed and dropped at once: only the upward
    messages are kept between the passes, and the downward ones wait on a depth-first stack.
    ``progress`` (None: no bar) starts the bars' descriptions.
    """
    cliques = structure.cliques
    parent, seps, order, children = (rooting.parent, rooting.separators, rooting.order,
                                     rooting.children)
    nb = len(attrs)
    ones = [1] * nb
    mine: list[list[int]] = [[] for _ in cliques]
    for v, c in enumerate(structure.assign):
        mine[c].append(v)
    evidence: dict[int, list[np.ndarray]] = {}
    for k, a in enumerate(attrs):
        c = structure.home[a][0]
        batch = list(ones)
        batch[k] = len(chunk[k])
        ind = np.eye(cards[a])[chunk[k].start:chunk[k].stop]
        ind = ind.reshape(broadcast_shape((a,), (a,), cards, batch)[:nb] + [cards[a]])
        evidence.setdefault(c, []).append(
            ind.reshape(broadcast_shape((a,), cliques[c], cards, batch)))
    scopes, tables = cpds

    def local(c: int) -> np.ndarray:
        """The clique's own table: its CPDs and evidence, batch axes in front."""
        table = np.ones(broadcast_shape((), cliques[c], cards, ones))
        for v in mine[c]:
            table = table * tables[v].reshape(
                broadcast_shape(scopes[v], cliques[c], cards, ones))
        for ind in evidence.get(c, ()):
            table = table * ind
        return table

    def belief(c: int, msgs: Sequence[tuple[np.ndarray, Sequence[int]]]) -> np.ndarray:
        """The clique's table times ``msgs``, multiplied in place into one array of the
        final shape: one clique table with the full batch is held, not one per product."""
        views = [m.reshape(broadcast_shape(sep, cliques[c], cards, m.shape[:nb]))
                 for m, sep in msgs]
        first = local(c)
        acc = np.empty(np.broadcast_shapes(first.shape, *(v.shape for v in views)))
        acc[...] = first
        del first
        for v in views:
            np.multiply(acc, v, out=acc)
        return acc

    def passing(cliques_: Sequence[int], which: str) -> Iterable[int]:
        if progress is None:
            return cliques_
        from quiltpriv.utils.progress import progress_bar

        return progress_bar(cliques_, desc=f"shared inference, {progress}{which}",
                            unit="clique")

    up: list[np.ndarray | None] = [None] * len(cliques)
    for c in passing(order[::-1], "pass 1/2"):  # collect: children before parents
        if parent[c] < 0:
            continue
        if deadline is not None and time.monotonic() > deadline:
            raise _Late
        table = belief(c, [(up[k], seps[k]) for k in children[c]])  # type: ignore[misc]
        up[c] = sum_to(table, cliques[c], seps[c], n_batch=nb)
    at = (slice(None), *(slice(r.start, r.stop) for r in chunk))
    homed: list[list[int]] = [[] for _ in cliques]
    for v in range(len(cards)):
        homed[structure.home[v][0]].append(v)
    down: list[np.ndarray | None] = [None] * len(cliques)
    for c in passing(order, "pass 2/2"):  # distribute: parents before children, depth first
        if deadline is not None and time.monotonic() > deadline:
            raise _Late
        msgs = [(up[k], seps[k]) for k in children[c]]
        if parent[c] >= 0:
            msgs.append((down[c], seps[c]))
            down[c] = None
        table = belief(c, msgs)  # type: ignore[arg-type]
        for v in homed[c]:  # broadcast over the batch axes its marginal lacks
            out[v][at] = np.moveaxis(sum_to(table, cliques[c], (v,), n_batch=nb), -1, 0)
        for k in children[c]:
            msg = up[k]
            up[k] = None
            # what the rest of the tree tells k: the belief divided by k's own message
            # (0 / 0 := 0: where k's message is zero, so is every entry it multiplied)
            new = sum_to(table, cliques[c], seps[k], n_batch=nb)
            den = msg.reshape(  # type: ignore[union-attr]
                broadcast_shape(seps[k], seps[k], cards,
                                msg.shape[:nb]))  # type: ignore[union-attr]
            # in place: new has the full batch, den only the attributes below k (where den
            # is 0, new is 0 already and stays so)
            np.divide(new, den, out=new, where=den > 0)
            down[k] = new


def joint_influence(theta: Theta, joints: Sequence[AttributeJoints], node: str,
                    quilt: Sequence[str]) -> Influence:
    """``e_Theta(Q | node)`` ([ZOC22, Def. 8]) from each member's :class:`AttributeJoints`,
    rounded upwards as :func:`quiltpriv.inference.influence.max_influence` rounds it.

    ``quilt`` is a non-empty subset of the joints' attributes without ``node``; the bound on
    rounding adds the sum over the attributes outside ``Q`` and Definition 8's row totals to
    the propagation's depth.
    """
    theta = check_theta(theta)
    node = theta.check_node(node, "sensitive attribute")
    quilt = theta.sort(theta.check_nodes(quilt, "quilt node"))
    joints = list(joints)
    if len(joints) != len(theta.members) or not all(
            isinstance(j, AttributeJoints) for j in joints):
        raise ParameterError("joints must hold one AttributeJoints per member of Theta")
    where = theta.index[node]
    q = [theta.index[v] for v in quilt]
    if not quilt or node in quilt or not set(q) <= set(joints[0].attributes):
        raise ParameterError(f"the quilt {list(quilt)} must be a non-empty subset of the "
                             f"joints' attributes without {node!r}")
    best: tuple[float, int, int, int] = (-1.0, 0, 0, 0)
    for m, aj in enumerate(joints):
        joint = np.ascontiguousarray(aj.joint(where, q))
        value, a, b = _influence_from_joint(joint)
        if math.isfinite(value):
            k = aj.depth + joint.size + aj.tables[where].size
            value = value * (1 + ROUNDING_MARGIN) + max(ROUNDING_MARGIN, _rounding_bound_k(k))
        if value > best[0]:
            best = (value, m, a, b)
    states = theta.states[node]
    return Influence(node, tuple(quilt), best[0], best[1], (states[best[2]], states[best[3]]),
                     engine="junction_tree_batched")
