"""Markov quilts of a node in a hyperparameter network ([ZOC22, Def. 7]).

A set ``Q`` of nodes not containing ``i`` is a Markov quilt of ``i`` with remote set ``R`` and
nearby set ``N`` when ``V = N + Q + R`` is a partition, ``i`` is in ``N`` and ``Q`` d-separates
``R`` from ``i``. For a fixed ``Q`` the best remote set is the largest one: every node outside
``Q`` that ``Q`` d-separates from ``i`` (spec, "Markov quilts"). ``Q = {}`` is a quilt; the
*trivial* quilt has ``Q = R = {}`` and ``N = V``.

d-separation is decided by the Bayes-ball reachability of Koller and Friedman ([KF09, Alg. 3.1]):
linear in nodes plus edges, with states marked visited when pushed (networkx's
``is_d_separator`` marks them when popped and re-checks acyclicity on every call, which the
engineering notes measured blowing up on large graphs). The tests check it against networkx.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import combinations

from quiltpriv.errors import ParameterError
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.deprecation import renamed_fields, renamed_keywords
from quiltpriv.utils.validation import check_scalar


@renamed_fields(node="sensitive")
@dataclass(frozen=True)
class Quilt:
    """A Markov quilt ``(Q, N, R)`` of ``sensitive``; each set in the network's node order.

    ``Q`` separates the nearby nodes ``N`` (``sensitive`` among them) from the remote nodes ``R``
    [ZOC22, Def. 7]. Build one with :func:`markov_quilt`, :func:`trivial_quilt` or
    :func:`enumerate_quilts`.

    Parameters
    ----------
    sensitive : str
        The sensitive attribute (``node`` is its deprecated name).
    quilt : tuple of str
        ``Q``.
    nearby : tuple of str
        ``N``: every node not in ``Q`` or ``R``.
    remote : tuple of str
        ``R``: nodes d-separated from ``sensitive`` given ``Q``.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> quilt = qp.markov_quilt(qp.load_model("student"), "income", ["gender", "sat"])
    >>> quilt.nearby, quilt.remote, quilt.is_trivial
    (('income',), ('height', 'weight'), False)
    """

    sensitive: str
    quilt: tuple[str, ...]
    nearby: tuple[str, ...]
    remote: tuple[str, ...]

    @property
    def is_trivial(self) -> bool:
        """True for the trivial quilt (``Q = R = {}``, everything is nearby)."""
        return not self.quilt and not self.remote

    def _repr_html_(self) -> str:
        from quiltpriv.reporting.notebook import quilt_html  # a presentation hook

        return quilt_html(self)


def d_connected(theta: Theta, source: str, given: Iterable[str]) -> set[str]:
    """Nodes d-connected to ``source`` given ``given`` (``source`` included, ``given`` excluded).

    Bayes-ball reachability on the DAG of ``theta``: a node is reached when an active trail
    from ``source`` ends at it. ``given`` must not contain ``source``.
    """
    theta = check_theta(theta)
    source = theta.check_node(source, "source")
    z = set(theta.check_nodes(given, "given node"))
    if source in z:
        raise ParameterError(f"given must not contain the source {source!r}")
    parents, children = theta.parents, theta.children
    # Ancestors of Z (Z included): a collider on a trail is open iff it is in this set.
    anc_z = theta.ancestral_set(z)
    # Two visit marks per node: arrived moving up (from a child) or down (from a parent).
    up_seen = {source}
    down_seen: set[str] = set()
    reached: set[str] = set()
    up_stack = [source]
    down_stack: list[str] = []
    while up_stack or down_stack:
        if up_stack:
            v = up_stack.pop()
            if v in z:
                continue  # a trail arriving from a child is blocked at an observed node
            reached.add(v)
            for p in parents[v]:
                if p not in up_seen:
                    up_seen.add(p)
                    up_stack.append(p)
            for c in children[v]:
                if c not in down_seen:
                    down_seen.add(c)
                    down_stack.append(c)
        else:
            v = down_stack.pop()
            if v not in z:
                reached.add(v)
                for c in children[v]:
                    if c not in down_seen:
                        down_seen.add(c)
                        down_stack.append(c)
            if v in anc_z:  # an open collider: the trail turns back up
                for p in parents[v]:
                    if p not in up_seen:
                        up_seen.add(p)
                        up_stack.append(p)
    return reached


def is_d_separated(theta: Theta, x: str, y: Iterable[str], given: Iterable[str]) -> bool:
    """True when ``given`` d-separates ``x`` from every node of ``y`` in ``theta``'s DAG."""
    theta = check_theta(theta)
    y = theta.check_nodes(y, "node")
    given = set(theta.check_nodes(given, "given node"))
    reach = d_connected(theta, x, given)
    return not any(v in reach for v in y if v not in given)


@renamed_keywords(node="sensitive")
def markov_quilt(theta: Theta, sensitive: str, quilt: Iterable[str]) -> Quilt:
    """The Markov quilt of ``sensitive`` with quilt set ``quilt`` and the largest remote set.

    Parameters
    ----------
    theta : Theta
        The network.
    sensitive : str
        The sensitive attribute.
    quilt : iterable of str
        ``Q``: the nodes conditioned on.

    Returns
    -------
    Quilt
        ``R`` holds every node d-separated from ``sensitive`` given ``Q`` [ZOC22, Def. 7].

    Raises
    ------
    ModelError
        If ``theta`` is not a network, or ``sensitive`` or a quilt member is not in it.
    ParameterError
        If ``sensitive`` is in ``quilt``.

    Examples
    --------
    On the bundled 12-step chain, two steps either side of ``x06`` cut it off from the rest:

    >>> import quiltpriv as qp
    >>> quilt = qp.markov_quilt(qp.load_model("chain"), "x06", ["x04", "x08"])
    >>> quilt.nearby
    ('x05', 'x06', 'x07')
    >>> quilt.remote
    ('x01', 'x02', 'x03', 'x09', 'x10', 'x11', 'x12')
    """
    theta = check_theta(theta)
    sensitive = theta.check_node(sensitive, "sensitive attribute")
    q = set(theta.check_nodes(quilt, "quilt node"))
    if sensitive in q:
        raise ParameterError(f"a quilt of {sensitive!r} cannot contain {sensitive!r} itself")
    nearby = d_connected(theta, sensitive, q)
    # One pass over the (topologically ordered) nodes splits N and R in the network's order:
    # linear in the network, where sorting the remote set cost n log n per sensitive node.
    near: list[str] = []
    remote: list[str] = []
    for v in theta.nodes:
        if v in nearby:
            near.append(v)
        elif v not in q:
            remote.append(v)
    return Quilt(sensitive, theta.sort(q), tuple(near), tuple(remote))


@renamed_keywords(node="sensitive")
def trivial_quilt(theta: Theta, sensitive: str) -> Quilt:
    """The trivial quilt: ``Q = R = {}`` and ``N = V``.

    Parameters
    ----------
    theta : Theta
        The network.
    sensitive : str
        The sensitive attribute.

    Returns
    -------
    Quilt

    Examples
    --------
    >>> import quiltpriv as qp
    >>> quilt = qp.trivial_quilt(qp.load_model("student"), "income")
    >>> quilt.quilt, quilt.nearby, quilt.is_trivial
    ((), ('gender', 'income', 'sat', 'height', 'weight'), True)
    """
    theta = check_theta(theta)
    sensitive = theta.check_node(sensitive, "sensitive attribute")
    return Quilt(sensitive, (), theta.nodes, ())


@renamed_keywords(node="sensitive")
def enumerate_quilts(
    theta: Theta, sensitive: str, *, max_size: int | None = None
) -> Iterator[Quilt]:
    """Every Markov quilt of ``sensitive``: one per subset ``Q`` of the other nodes.

    Quilts come by increasing ``|Q|``, then in the network's node order. There are
    ``2**(m-1)`` of them on ``m`` nodes; ``max_size`` bounds ``|Q|``. The trivial quilt is not
    repeated here (use :func:`trivial_quilt`).

    Parameters
    ----------
    theta : Theta
        The network.
    sensitive : str
        The sensitive attribute.
    max_size : int, optional
        The largest ``|Q|`` enumerated (default: every size).

    Yields
    ------
    Quilt

    Examples
    --------
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("student")
    >>> [quilt.quilt for quilt in qp.enumerate_quilts(theta, "income", max_size=1)]
    [(), ('gender',), ('sat',), ('height',), ('weight',)]
    >>> sum(1 for _ in qp.enumerate_quilts(theta, "income"))  # 2**4
    16
    """
    theta = check_theta(theta)
    sensitive = theta.check_node(sensitive, "sensitive attribute")
    if max_size is not None:
        max_size = int(check_scalar(max_size, "max_size", integer=True, min_val=0))
    others = [v for v in theta.nodes if v != sensitive]
    top = len(others) if max_size is None else min(max_size, len(others))
    for k in range(top + 1):
        for q in combinations(others, k):
            yield markov_quilt(theta, sensitive, q)


def moral_ancestral_graph(theta: Theta, nodes: Iterable[str]) -> dict[str, set[str]]:
    """Adjacency of the moral graph of the ancestral set of ``nodes``.

    For quilts inside this ancestral set, d-separation from ``i`` is plain vertex separation
    in this one undirected graph (Lauritzen et al., 1990), so it can be fixed once per target.
    """
    theta = check_theta(theta)
    anc = theta.ancestral_set(theta.check_nodes(nodes, "node"))
    adj: dict[str, set[str]] = {v: set() for v in anc}
    for v in anc:
        ps = theta.parents[v]
        for p in ps:
            adj[v].add(p)
            adj[p].add(v)
        for a, b in combinations(ps, 2):
            adj[a].add(b)
            adj[b].add(a)
    return adj


@renamed_keywords(node="sensitive")
def least_influence_quilt(theta: Theta, sensitive: str, targets: Iterable[str]) -> tuple[str, ...]:
    """The quilt of least max-influence among those that keep ``targets`` out of ``N``.

    Among all quilts ``Q`` of ``sensitive`` with ``targets`` contained in ``Q + R(Q)``, return one
    whose max-influence ``e(Q | sensitive)`` is smallest, for every member of Theta at once.
    It is ``Q* = boundary of C`` in ``M``, where ``M`` is the moral graph of the ancestral set
    of ``{sensitive} + targets`` and ``C`` is the connected component of ``sensitive`` in
    ``M - targets``; ``Q*`` is a subset of ``targets``.

    Why this is optimal (docs/concepts.md gives the proof in full):

    1. Any feasible ``Q`` can be cut down to ``Q' = Q & An({sensitive} + targets)``, still feasible,
       and ``e(Q') <= e(Q)`` by monotonicity (influence never falls as a quilt grows).
    2. For ``Q'`` inside that ancestral set, feasibility is vertex separation in ``M``; the
       component of ``sensitive`` in ``M - Q'`` is connected, avoids ``targets`` and so lies in
       ``C``. Hence every node of ``Q*`` is in ``Q'`` or separated from ``sensitive`` by
       ``Q'``, i.e. ``Q*`` is inside ``Q' + R(Q')``, and the data-processing inequality
       gives ``e(Q*) <= e(Q') <= e(Q)``.

    Parameters
    ----------
    theta : Theta
        The network.
    sensitive : str
        The sensitive attribute.
    targets : iterable of str
        The attributes to keep out of ``N`` (typically those a query reads).

    Returns
    -------
    tuple of str
        ``Q*``, in the network's node order.

    Raises
    ------
    ModelError
        If ``theta`` is not a network, or ``sensitive`` or a target is not in it.
    ParameterError
        If ``sensitive`` is among ``targets`` (a sensitive attribute is always nearby).

    Examples
    --------
    To keep ``height`` and ``weight`` out of the nearby set of ``income`` in the student
    network, condition on both (``gender`` then stays nearby):

    >>> import quiltpriv as qp
    >>> qp.least_influence_quilt(qp.load_model("student"), "income", ["height", "weight"])
    ('height', 'weight')
    """
    theta = check_theta(theta)
    sensitive = theta.check_node(sensitive, "sensitive attribute")
    targets = set(theta.check_nodes(targets, "target"))
    if sensitive in targets:
        raise ParameterError(f"{sensitive!r} is always in its own nearby set")
    if not targets:
        return ()
    # Search i's component of M - targets without building M: the neighbours of v in the
    # moral graph of the ancestral set are its parents, its children in the set and their
    # other parents (co-parents).
    anc = theta.ancestral_set(targets | {sensitive})
    parents, children = theta.parents, theta.children
    component = {sensitive}
    stack = [sensitive]
    boundary: set[str] = set()
    while stack:
        v = stack.pop()
        for c in children[v]:
            if c in anc:
                for w in (c, *parents[c]):
                    if w in targets:
                        boundary.add(w)
                    elif w not in component:
                        component.add(w)
                        stack.append(w)
        for w in parents[v]:
            if w in targets:
                boundary.add(w)
            elif w not in component:
                component.add(w)
                stack.append(w)
    return theta.sort(boundary)


class QuiltIndex:
    """Quilts inside a fixed set of attributes ``A``, answered for every node at once.

    A plan's candidate quilts are subsets of the query's attributes, and all it needs of a
    candidate's nearby set is which attributes of ``A`` it holds. Both follow from a few
    reachability walks that depend on ``A`` only, shared by every sensitive node: d-connection
    is symmetric, so ``a`` is nearby ``i`` given ``Q`` exactly when ``i`` is d-connected to
    ``a`` given ``Q`` (one walk from ``a`` answers every ``i``), and ``t`` is in
    ``least_influence_quilt(i, T)`` exactly when ``i`` is d-connected to ``t`` given ``T -
    {t}`` (``Q*`` is the part of ``T`` adjacent to ``i``'s component of ``M - T``, in the moral
    graph ``M`` of the ancestral set of ``T + {i}``; by Lauritzen et al. (1990) that is
    d-connection given the rest of ``T``). Each walk is linear in the network and is made once,
    on first use; the answers equal :func:`least_influence_quilt` and the nearby set of
    :func:`markov_quilt` (the tests compare them).
    """

    def __init__(self, theta: Theta, attributes: Iterable[str]) -> None:
        self.theta = check_theta(theta)
        self.attributes = theta.sort(set(theta.check_nodes(attributes, "attribute")))
        self._reach: dict[tuple[str, frozenset[str]], frozenset[str]] = {}

    def _reached(self, source: str, given: frozenset[str]) -> frozenset[str]:
        key = (source, given)
        hit = self._reach.get(key)
        if hit is None:
            hit = self._reach[key] = frozenset(d_connected(self.theta, source, given))
        return hit

    @renamed_keywords(node="sensitive")
    def least_influence_quilt(self, sensitive: str, targets: Iterable[str]) -> tuple[str, ...]:
        """:func:`least_influence_quilt` for targets inside ``A`` (without ``sensitive``)."""
        t = frozenset(targets)
        if sensitive in t:
            raise ParameterError(f"{sensitive!r} is always in its own nearby set")
        outside = t - set(self.attributes)
        if outside:
            raise ParameterError(f"targets {sorted(outside)} are not among the attributes")
        return self.theta.sort(x for x in t if sensitive in self._reached(x, t - {x}))

    @renamed_keywords(node="sensitive")
    def nearby_attributes(self, sensitive: str, quilt: Iterable[str]) -> tuple[str, ...]:
        """The attributes of ``A`` in the nearby set ``N`` of ``markov_quilt(sensitive, quilt)``,
        for a quilt inside ``A`` (network order)."""
        q = frozenset(quilt)
        if sensitive in q:
            raise ParameterError(f"a quilt of {sensitive!r} cannot contain {sensitive!r} itself")
        return tuple(a for a in self.attributes
                     if a not in q and sensitive in self._reached(a, q))


def __getattr__(name: str) -> object:
    # quilt_html moved to quiltpriv.reporting.notebook (the old path warns until 0.3.0).
    from quiltpriv._compat import moved_attribute

    return moved_attribute(__name__, {"quilt_html": "quiltpriv.reporting.notebook"}, name)
