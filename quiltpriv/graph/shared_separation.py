"""d-separation from many nodes given one set: the partitions of a plan's attributes at once.

A plan that lists every sensitive attribute's nearby and remote sets needs, per attribute
``i`` and its chosen quilt ``Q``, the nodes d-connected to ``i`` given ``Q``
(:func:`~quiltpriv.graph.quilts.markov_quilt`): one Bayes-ball walk of the whole network each,
quadratic in the network when every node is sensitive. Attributes often share their quilt
(on a 1,000-node random local network planned for a 3-attribute count, the 1,000 plans chose
3 distinct quilts). For a fixed ``Q`` the walk is reachability in one directed graph, whose
states are a node entered from a child (``up``) or from a parent (``down``) ([KF09, Alg. 3.1]):

- ``up(v)``, ``v`` not in ``Q``: ``v`` is reached; on to ``up(p)`` for each parent ``p`` and
  ``down(c)`` for each child ``c``; ``up(v)`` for ``v`` in ``Q`` goes nowhere;
- ``down(v)``: ``v`` is reached unless it is in ``Q``, and (then only) goes on to ``down(c)``
  for each child; when ``v`` is in ``Q`` or has a descendant in it (an open collider), on to
  ``up(p)`` for each parent.

The nodes d-connected to ``i`` are those of the states reachable from ``up(i)``. Here the
graph's strongly connected components are found once per ``Q`` (Tarjan's algorithm, grown
lazily from each new source), each holding the set it reaches as a bitset (a Python int,
one bit per node in the network's order): a component reaches its own nodes and what its
successors reach, and Tarjan closes components successors first. Every source after the first
costs only the states no earlier source reached. Equal sets give one shared tuple.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

import numpy as np

from quiltpriv.errors import ParameterError
from quiltpriv.graph.quilts import Quilt, d_connected, markov_quilt
from quiltpriv.model.network import Theta, check_theta

__all__ = ["SHARED_SEPARATION_MAX_NODES", "FixedQuiltReach", "QuiltPartitions"]

#: Largest network whose partitions are shared per quilt: each component holds a bitset of the
#: network's size, so one quilt's walk holds up to ``2 n`` of them (``n^2 / 4`` bytes: 4 MB at
#: 4,096 nodes). A plan lists sets for at most 2^20 (nodes x sensitive attributes), so above
#: this size it lists at most 256 attributes, walked one by one as before.
SHARED_SEPARATION_MAX_NODES = 4096

#: Quilts whose shared walk a :class:`QuiltPartitions` keeps (least recently used out first).
SHARED_QUILTS_KEPT = 8

#: Quilts a :class:`QuiltPartitions` remembers having been asked for once (then forgotten).
SEEN_QUILTS_KEPT = 2**16


class FixedQuiltReach:
    """The nodes d-connected to any source given one fixed set ``Q`` (shared walk).

    Parameters
    ----------
    theta : Theta
        The network.
    quilt : iterable of str
        ``Q``, the conditioning set.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("chain")
    >>> walk = FixedQuiltReach(theta, ["x04", "x08"])
    >>> walk.partition("x06").nearby
    ('x05', 'x06', 'x07')
    >>> walk.partition("x02").remote == qp.markov_quilt(theta, "x02", ["x04", "x08"]).remote
    True
    """

    def __init__(self, theta: Theta, quilt: Iterable[str]) -> None:
        self.theta = check_theta(theta)
        self.quilt = theta.sort(set(theta.check_nodes(quilt, "quilt node")))
        index = theta.index
        n = len(theta.nodes)
        self._n = n
        self._node_index = index
        z = [index[v] for v in self.quilt]
        self._in_z = np.zeros(n, dtype=bool)
        self._in_z[z] = True
        anc = theta.ancestral_set(self.quilt)
        self._parents = [[index[p] for p in theta.parents[v]] for v in theta.nodes]
        self._children = [[index[c] for c in theta.children[v]] for v in theta.nodes]
        self._opens = [v in anc for v in theta.nodes]  # an open collider when entered down
        self._blocked = self._in_z.tolist()
        # Tarjan's state, kept between sources (states: 2 k = up(k), 2 k + 1 = down(k))
        self._order: dict[int, int] = {}
        self._component: dict[int, int] = {}
        self._reach: list[int] = []  # per component, the bitset of the nodes it reaches
        self._names = np.array(theta.nodes, dtype=object)
        self._sets: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def _successors(self, s: int) -> list[int]:
        k, down = divmod(s, 2)
        if not down:
            if self._blocked[k]:
                return []
            return [2 * p for p in self._parents[k]] + [2 * c + 1 for c in self._children[k]]
        out = [] if self._blocked[k] else [2 * c + 1 for c in self._children[k]]
        if self._opens[k]:
            out += [2 * p for p in self._parents[k]]
        return out

    def _bit(self, s: int) -> int:
        k = s >> 1
        return 0 if self._blocked[k] else 1 << k

    def _walk(self, start: int) -> None:
        """Tarjan's algorithm from ``start`` (iterative), closing each component with the
        bitset it reaches."""
        order, component, reach = self._order, self._component, self._reach
        low: dict[int, int] = {}
        stack: list[int] = []
        on_stack: set[int] = set()
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(self._successors(start)))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in order:
                    order[w] = low[w] = len(order)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(self._successors(w))))
                    break
                if w in on_stack and order[w] < low[v]:
                    low[v] = order[w]
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    if low[v] < low[u]:
                        low[u] = low[v]
                if low[v] == order[v]:
                    members = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        members.append(w)
                        if w == v:
                            break
                    c = len(reach)
                    for w in members:
                        component[w] = c
                    bits = 0
                    for w in members:
                        bits |= self._bit(w)
                        for x in self._successors(w):
                            cx = component[x]  # closed: in this component or an earlier one
                            if cx != c:
                                bits |= reach[cx]
                    reach.append(bits)

    def reached_bits(self, source: str) -> int:
        """The nodes d-connected to ``source`` given ``Q`` (``source`` included), as a
        bitset over the network's order."""
        k = self._node_index[source]
        if self._blocked[k]:
            raise ParameterError(f"a quilt of {source!r} cannot contain {source!r} itself")
        if 2 * k not in self._component:
            self._walk(2 * k)
        return self._reach[self._component[2 * k]]

    def reached(self, source: str) -> set[str]:
        """:func:`~quiltpriv.graph.quilts.d_connected` of ``source`` given ``Q``."""
        return set(self._names[self._mask(self.reached_bits(source))].tolist())

    def _mask(self, bits: int) -> np.ndarray:
        raw = np.frombuffer(bits.to_bytes((self._n + 7) // 8, "little"), dtype=np.uint8)
        return np.unpackbits(raw, bitorder="little")[: self._n].astype(bool)

    def partition(self, source: str) -> Quilt:
        """:func:`~quiltpriv.graph.quilts.markov_quilt` of ``source`` and ``Q`` (equal to
        it); sources with equal sets share their tuples."""
        bits = self.reached_bits(source)
        sets = self._sets.get(bits)
        if sets is None:
            near = self._mask(bits)
            sets = self._sets[bits] = (tuple(self._names[near].tolist()),
                                       tuple(self._names[~(near | self._in_z)].tolist()))
        return Quilt(source, self.quilt, *sets)


class QuiltPartitions:
    """``(Q, N, R)`` of many (node, quilt) pairs, each equal to
    :func:`~quiltpriv.graph.quilts.markov_quilt`'s, sharing the walk of a quilt asked for
    more than once (:class:`FixedQuiltReach`) in a network of at most
    :data:`SHARED_SEPARATION_MAX_NODES` nodes."""

    def __init__(self, theta: Theta) -> None:
        self.theta = check_theta(theta)
        self._share = len(theta.nodes) <= SHARED_SEPARATION_MAX_NODES
        self._seen: set[tuple[str, ...]] = set()
        self._walks: OrderedDict[tuple[str, ...], FixedQuiltReach] = OrderedDict()

    def partition(self, sensitive: str, quilt: Iterable[str]) -> Quilt:
        """The quilt ``(Q, N, R)`` of ``sensitive`` with quilt set ``quilt``."""
        key = tuple(sorted(set(quilt)))
        walk = self._walk(key)
        if walk is None:
            return markov_quilt(self.theta, sensitive, key)
        return walk.partition(self.theta.check_node(sensitive, "sensitive attribute"))

    def reached(self, source: str, quilt: Iterable[str]) -> set[str]:
        """:func:`~quiltpriv.graph.quilts.d_connected` of ``source`` given ``quilt``."""
        key = tuple(sorted(set(quilt)))
        walk = self._walk(key)
        if walk is None:
            return d_connected(self.theta, source, key)
        return walk.reached(self.theta.check_node(source, "source"))

    def _walk(self, key: tuple[str, ...]) -> FixedQuiltReach | None:
        """The shared walk of quilt ``key``, or None: a quilt asked for the first time (one
        walk, as markov_quilt's, costs less than a shared one) or a network too large."""
        if not self._share:
            return None
        walk = self._walks.get(key)
        if walk is not None:
            self._walks.move_to_end(key)
            return walk
        if key not in self._seen:
            if len(self._seen) >= SEEN_QUILTS_KEPT:  # a long search: memory stays bounded
                self._seen.clear()
            self._seen.add(key)
            return None
        walk = self._walks[key] = FixedQuiltReach(self.theta, key)
        if len(self._walks) > SHARED_QUILTS_KEPT:
            self._walks.popitem(last=False)
        return walk
