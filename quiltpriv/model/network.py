"""Attribute hyperparameter networks and the adversary's class Theta.

A *hyperparameter network* (Zhang, Ohrimenko and Cummings, Section 5) is a discrete Bayesian
network whose node per attribute ``i`` carries that attribute's distribution parameter
``phi_i``: the node's states are the hyperparameter values (e.g. ``0.2, 0.5, 0.8`` for a
Bernoulli probability) and the CPDs give the joint law of ``phi``. Users declare it in pgmpy as a
``DiscreteBayesianNetwork``; this module validates it once and keeps an immutable numeric copy
(the DAG, the state names and one CPD array per node) that the quilt search and the influence
calculator work on.

``Theta`` (the distributions the adversary may hold) is one or more such networks sharing one DAG
and one state space per node, differing only in their CPDs. Every "sup over theta" in the paper
is a maximum over :attr:`Theta.members`.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, islice, repeat
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from quiltpriv.errors import ModelError, ParameterError, TimeLimitError
from quiltpriv.model.canonical_text import canonical_text
from quiltpriv.model.cpd_tables import CPD_SUM_TOLERANCE, _check_table, _check_tables
from quiltpriv.model.json_format import JSON_FORMAT, JSON_FORMAT_V2, _encode_column
from quiltpriv.model.names import MAX_LISTED_NODES as MAX_LISTED_NODES
from quiltpriv.model.names import _closest as _closest
from quiltpriv.model.names import _known_hint, _state_names
from quiltpriv.model.names import state_name as state_name
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.validation import check_scalar

if TYPE_CHECKING:  # networkx is imported by Theta.graph only (planning does not use it)
    import networkx as nx

class _Check(Protocol):
    """What a reader checks its time limit with between passes
    (:class:`quiltpriv.utils.time_limit.LimitCheck`)."""

    def __call__(self, stage: str) -> None: ...  # pragma: no cover - a protocol


def _unchecked(stage: str) -> None:
    """No time limit."""


#: Nodes a per-node Python loop handles between two checks of a reader's time limit.
_PACE = 4096


#: The ``"format"`` of the document :meth:`Theta.fingerprint` hashes. Version 1 (before
#: quiltpriv 0.1.0's canonical fingerprint) hashed ``repr`` of the states in network order, so
#: the same model read from two files with its nodes in another order, or saved and read back
#: with float states, had two fingerprints.
FINGERPRINT_FORMAT = "quiltpriv-model-fingerprint/2"


@dataclass(frozen=True, eq=False)
class CPD:
    """One node's conditional probability table, axes ``(node, *parents)``.

    ``table[s, p1, ..., pk] = P(phi_node = states[s] | phi_parents = ...)``.
    """

    node: str
    parents: tuple[str, ...]
    table: np.ndarray


class Theta:
    """The adversary's class of distributions: a shared DAG and one CPD set per member.

    Build it with :func:`theta_from_tables`, :func:`theta_from_pgmpy`,
    :class:`~quiltpriv.model.builder.NetworkBuilder` or
    :func:`quiltpriv.model.loading.load_model`; the constructor takes already-validated parts,
    each kept as the attribute of the same name.

    Parameters
    ----------
    nodes : tuple of str
        Attribute names in a topological order of the DAG.
    states : mapping of str to tuple of str
        Hyperparameter values of each node, by their canonical names (:func:`state_name`: a
        number is kept as its shortest decimal, ``0.4 -> "0.4"``).
    parents : mapping of str to tuple of str
        Parents of each node, in the axis order of its CPD tables.
    members : tuple of mapping of str to CPD
        One CPD set per member of Theta.
    names : tuple of str
        A label per member (model name or file), for reports.
    provenance : mapping or None
        Where Theta came from (JSON-ready; :mod:`quiltpriv.model.provenance`): for a learned Theta
        the data hash, bins, estimator settings and seed; for a declared one, the builder.
        Carried into plans and audit reports. Metadata only: not part of :meth:`fingerprint`.

    Examples
    --------
    The student network of [ZOC22, Ex. 1, Fig. 1]:

    >>> import quiltpriv as qp
    >>> theta = qp.load_model("student")
    >>> theta
    Theta(5 nodes, 5 edges, 1 member)
    >>> theta.nodes
    ('gender', 'income', 'sat', 'height', 'weight')
    >>> theta.parents["weight"], theta.states["income"]
    (('gender', 'height'), ('0.2', '0.35', '0.5'))
    """

    def __init__(
        self,
        nodes: Sequence[str],
        states: Mapping[str, Sequence[Any]],
        parents: Mapping[str, Sequence[str]],
        members: Sequence[Mapping[str, CPD]],
        names: Sequence[str] | None = None,
        provenance: Mapping[str, Any] | None = None,
    ) -> None:
        try:
            self._build(nodes, states, parents, members, names, provenance)
        except (TypeError, KeyError, ValueError, AttributeError) as err:
            if isinstance(err, ModelError | TimeLimitError):
                raise
            # the constructor takes already-validated parts; anything else is refused whole
            raise ModelError(f"Theta(...) takes validated parts (nodes, states, parents, "
                             f"members); build one with theta_from_tables or theta_from_pgmpy "
                             f"({type(err).__name__}: {err})") from None

    @classmethod
    def _from_named(cls, nodes: Sequence[str], states: Mapping[str, Sequence[str]],
                    parents: Mapping[str, Sequence[str]],
                    members: Sequence[Mapping[str, CPD]], names: Sequence[str], *,
                    check: _Check = _unchecked) -> Theta:
        """Theta from parts whose state names are already canonical: distinct ``str`` per
        node, as the JSON reader checks them (``state_name`` of a ``str`` is itself). The
        same object as ``Theta(...)``, without naming every state a second time. ``check``
        sees a reader's time limit between the passes over the nodes."""
        self = cls.__new__(cls)
        self._build(nodes, states, parents, members, names, None, named=True, check=check)
        return self

    def _build(self, nodes: Sequence[str], states: Mapping[str, Sequence[Any]],
               parents: Mapping[str, Sequence[str]], members: Sequence[Mapping[str, CPD]],
               names: Sequence[str] | None, provenance: Mapping[str, Any] | None,
               named: bool = False, check: _Check = _unchecked) -> None:
        if not members:
            raise ModelError("Theta is empty: give at least one network")
        if not nodes:
            raise ModelError("the network has no nodes")
        self.nodes: tuple[str, ...] = tuple(nodes)
        if not all(map(isinstance, self.nodes, repeat(str))):
            raise ModelError("node names must be strings")
        # zip/map rather than comprehensions: a 100,000-node model is built in C loops
        self.states = MappingProxyType(
            dict(zip(self.nodes, map(tuple, map(states.__getitem__, self.nodes)), strict=True))
            if named else {v: _state_names(v, states[v]) for v in self.nodes})
        stage = f"building Theta of {len(self.nodes):,} nodes"
        check(stage)
        self.parents = MappingProxyType(
            dict(zip(self.nodes, map(tuple, map(parents.__getitem__, self.nodes)), strict=True)))
        check(stage)
        self.members: tuple[Mapping[str, CPD], ...] = tuple(
            MappingProxyType(dict(m)) for m in members
        )
        check(stage)
        self.names: tuple[str, ...] = tuple(names) if names else tuple(
            f"theta[{k}]" for k in range(len(self.members))
        )
        self.provenance: Mapping[str, Any] | None = (
            None if provenance is None else _frozen(provenance))
        self.index = MappingProxyType(dict(zip(self.nodes, range(len(self.nodes)), strict=True)))
        self.cardinality = MappingProxyType(
            dict(zip(self.nodes, map(len, self.states.values()), strict=True)))
        check(stage)
        children: dict[str, list[str]] = {v: [] for v in self.nodes}
        # children[p].append(v) for every edge p -> v, parents in node order, in C loops
        ps = self.parents.values()
        deque(map(list.append, map(children.__getitem__, chain.from_iterable(ps)),
                  chain.from_iterable(map(repeat, self.nodes, map(len, ps)))), maxlen=0)
        check(stage)
        self.children = MappingProxyType(
            dict(zip(children, map(tuple, children.values()), strict=True)))
        self._graph: nx.DiGraph | None = None
        self._fingerprint: str | None = None
        # Inference's cache (a quiltpriv.inference.cache.InferenceCache, created by its
        # InferenceCache.of on first use), valid because Theta is immutable.
        self._cache: Any = None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Picklable (for joblib workers): rebuild from plain parts; caches are not shipped.
        return (Theta, (self.nodes, dict(self.states), dict(self.parents),
                        [dict(m) for m in self.members], self.names,
                        None if self.provenance is None else _thawed(self.provenance)))

    # -- read-only views -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.members)

    def __contains__(self, node: object) -> bool:
        return node in self.index

    def __repr__(self) -> str:
        edges = sum(len(p) for p in self.parents.values())
        return (
            f"Theta({len(self.nodes)} nodes, {edges} edges, {len(self.members)} member"
            f"{'s' if len(self.members) != 1 else ''})"
        )

    def _repr_html_(self) -> str:
        from quiltpriv.reporting.notebook import theta_html  # a presentation hook

        return theta_html(self)

    @property
    def graph(self) -> nx.DiGraph:
        """The shared DAG as a networkx ``DiGraph`` (built once; do not mutate)."""
        if self._graph is None:
            import networkx as nx

            g = nx.DiGraph()
            g.add_nodes_from(self.nodes)
            g.add_edges_from((p, v) for v in self.nodes for p in self.parents[v])
            self._graph = g
        return self._graph

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        return tuple((p, v) for v in self.nodes for p in self.parents[v])

    def check_nodes(self, names: Iterable[str], role: str = "attribute") -> tuple[str, ...]:
        """Return ``names`` as a tuple, or raise naming every one not in the network.

        A single string is one name (not an iterable of one-letter names).
        """
        if isinstance(names, str):
            names = (names,)
        try:
            names = tuple(names)
        except TypeError:
            raise ParameterError(f"{role}s must be a collection of attribute names, got "
                                 f"{type(names).__name__}") from None
        try:  # every name known (the usual case): one C-level pass
            if all(map(self.index.__contains__, names)):
                return names
        except TypeError:  # an unhashable name: reported below
            pass
        missing = [n for n in names if not isinstance(n, str) or n not in self.index]
        if missing:
            shown = ", ".join(map(repr, missing[:5]))
            if len(missing) > 5:
                shown += f" and {len(missing) - 5} more"
            raise ModelError(f"{role} {shown} not in the network "
                             f"{_known_hint(missing, self.nodes)}")
        return names

    def check_node(self, name: object, role: str = "attribute") -> str:
        """Return ``name`` if it is one attribute of the network, else raise naming it."""
        if not isinstance(name, str):
            raise ModelError(f"{role} must be an attribute name (a string), got {name!r}")
        (node,) = self.check_nodes((name,), role)
        return node

    def check_member(self, member: object) -> int:
        """Return ``member`` as an index into :attr:`members`, else raise ParameterError."""
        return int(check_scalar(member, "member", integer=True, min_val=0,
                                max_val=len(self.members) - 1))

    def check_sensitive(self, sensitive: str | Iterable[str]) -> tuple[str, ...]:
        """Sensitive attribute(s) as a non-empty tuple without repeats, each in the network."""
        if isinstance(sensitive, str):
            sensitive = [sensitive]
        sens = tuple(dict.fromkeys(sensitive))
        if not sens:
            raise ParameterError("give at least one sensitive attribute")
        return self.check_nodes(sens, "sensitive attribute")

    def ancestral_set(self, nodes: Iterable[str]) -> set[str]:
        """``nodes`` and all their ancestors."""
        anc: set[str] = set()
        stack = list(nodes)
        while stack:
            v = stack.pop()
            if v not in anc:
                anc.add(v)
                stack.extend(self.parents[v])
        return anc

    def sort(self, nodes: Iterable[str]) -> tuple[str, ...]:
        """``nodes`` in the network's (topological) order: the canonical order of a set."""
        if isinstance(nodes, list | tuple) and len(nodes) > 1:
            # already in order without repeats (``--sensitive all``, a series' steps): one
            # C-level pass over their positions instead of a set and a sort
            pos = list(map(self.index.__getitem__, nodes))
            if all(map(operator.lt, pos, islice(pos, 1, None))):
                return tuple(nodes)
        return tuple(sorted(set(nodes), key=self.index.__getitem__))

    def fingerprint(self) -> str:
        """SHA-256 of the model's canonical JSON: structure, states and every member's CPDs.

        The hashed document (:data:`FINGERPRINT_FORMAT`, :meth:`canonical_document`) lists the
        nodes by name, each with its canonical state names (:func:`state_name`) and its
        parents sorted by name; each member's tables have their parent axes in that sorted
        order, and the members are sorted by their own canonical JSON. So the fingerprint
        does not depend on the order the nodes, parents or members were written in, nor on
        the file format, nor on whether states were given as numbers, numpy values or names;
        it changes with any state, edge or probability. Member names and provenance are
        metadata, not part of it.
        """
        if self._fingerprint is None:
            text = self.canonical_document()
            self._fingerprint = hashlib.sha256(text.encode("ascii")).hexdigest()
        return self._fingerprint

    def canonical_document(self) -> str:
        """The canonical JSON text :meth:`fingerprint` hashes (see there).

        Sorted keys, no spaces, each probability as Python's shortest round-trip decimal
        (``-0.0`` as ``0.0``).
        """
        return canonical_text(FINGERPRINT_FORMAT, self.nodes, self.states, self.parents,
                              self.members, _align)

    def to_dict(self) -> dict[str, Any]:
        """Theta as a JSON-ready dict, provenance included (format ``quiltpriv-network/2``:
        :func:`theta_to_dict`); :func:`~quiltpriv.model.loading.load_model` reads it back
        with the same :meth:`fingerprint`."""
        return theta_to_dict(self)

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON text (``json.dumps`` keyword arguments, e.g. ``indent``)."""
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write :meth:`to_json` to ``path`` (a ``.json`` name, written atomically: no partial
        file on failure) and return the path; ``load_model(path)`` reads it back."""
        from quiltpriv.utils.io import check_output_path, write_text_atomic

        if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
            raise ParameterError(f"path must be a file name, got {type(path).__name__}")
        if not os.fspath(path).lower().endswith(".json"):
            raise ParameterError(f"{os.fspath(path)}: save Theta to a .json file (the name "
                                 "load_model reads as quiltpriv's JSON model)")
        check_output_path(path, "path")
        write_text_atomic(path, self.to_json(indent=1) + "\n")
        return os.fspath(path)

    def to_pgmpy(self, member: int | None = None) -> Any:
        """pgmpy ``DiscreteBayesianNetwork`` s with ``TabularCPD`` s: a list, one per member
        (``member=None``), or the network of one member (an index into :attr:`members`).
        ``theta_from_pgmpy`` of the list gives this Theta back (same fingerprint)."""
        if member is None:
            nets = theta_to_pgmpy(self)
            return nets if isinstance(nets, list) else [nets]
        k = self.check_member(member)
        return theta_to_pgmpy(Theta(self.nodes, self.states, self.parents,
                                    (self.members[k],), (self.names[k],)))

    def with_provenance(self, provenance: Mapping[str, Any] | None) -> Theta:
        """The same Theta (same members, same fingerprint) carrying ``provenance``."""
        frozen = None if provenance is None else _frozen(provenance)
        # Every other part is immutable and already checked: shared, not rebuilt (rebuilding
        # names every state again, seconds on a 500,000-step chain). The inference cache
        # stays with ``self``.
        twin = Theta.__new__(Theta)
        twin.__dict__.update(self.__dict__)
        twin.provenance = frozen
        twin._cache = None
        return twin

    def with_members(self, other: Theta) -> Theta:
        """Theta holding the members of ``self`` and ``other`` (which must share the DAG).

        The joined Theta keeps no provenance: it is no longer what either record describes.
        """
        _check_same_structure(self, other, other.names[0] if other.names else "member")
        # Every member shares one table layout: permute the other's parent axes to ours.
        aligned = tuple(
            {v: _align(m[v], self.parents[v]) for v in self.nodes} for m in other.members
        )
        return Theta(
            self.nodes, self.states, self.parents,
            self.members + aligned, self.names + other.names,
        )


def fingerprint_v1(theta: Theta) -> str:
    """The model's fingerprint in the format before :data:`FINGERPRINT_FORMAT` (version 1).

    Kept only to tell an old plan apart from a plan for another model: it hashed ``repr`` of
    each node's name, parents and states in network order, then every table's bytes, so it
    depends on node order. It matches what an older quiltpriv wrote for a model whose states
    were names (BIF, XMLBIF, JSON, the builder, the learner), not for float states.
    """
    theta = check_theta(theta)
    h = hashlib.sha256()
    for v in theta.nodes:
        h.update(repr((v, theta.parents[v], theta.states[v])).encode())
    for m in theta.members:
        for v in theta.nodes:
            h.update(np.ascontiguousarray(m[v].table, dtype=np.float64).tobytes())
    return h.hexdigest()


def model_mismatch(stated: str, theta: Theta, what: str = "it") -> str | None:
    """Why a document stating model fingerprint ``stated`` was not made for ``theta``, or None.

    A fingerprint of the old format that matches ``theta`` is still refused (two digests for
    one model would bring back the false alarms the canonical fingerprint ends), with a message
    saying so: make the plan again with this quiltpriv.
    """
    fingerprint = check_theta(theta).fingerprint()
    if not isinstance(stated, str) or len(stated) != 64 \
            or stated.strip("0123456789abcdef") != "":
        raise ParameterError(f"a model fingerprint is 64 lowercase hexadecimal digits, got "
                             f"{stated!r}"[:200])
    if stated == fingerprint:
        return None
    if stated == fingerprint_v1(theta):
        return (f"{what} states this model's fingerprint in the old format (before "
                f"{FINGERPRINT_FORMAT!r}, which no longer depends on node order): the "
                "fingerprint format changed; make the plan again with this quiltpriv")
    return (f"{what} was made for another model (model fingerprint {stated[:16]}..., this "
            f"model's is {fingerprint[:16]}...)")


def _frozen(x: Any) -> Any:
    """A read-only deep copy of a JSON-like value (mappings become read-only, lists tuples)."""
    if isinstance(x, Mapping):
        return MappingProxyType({str(k): _frozen(v) for k, v in x.items()})
    if isinstance(x, list | tuple):
        return tuple(_frozen(v) for v in x)
    return x


def _thawed(x: Any) -> Any:
    """The JSON-ready (dicts and lists) copy of a :func:`_frozen` value."""
    if isinstance(x, Mapping):
        return {k: _thawed(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return [_thawed(v) for v in x]
    return x


# -- construction from pgmpy ------------------------------------------------------------------


def theta_from_pgmpy(
    models: Any | Sequence[Any],
    names: Sequence[str] | None = None,
    *,
    tolerance: float = CPD_SUM_TOLERANCE,
) -> Theta:
    """Validate one or several pgmpy networks and return them as :class:`Theta`.

    Parameters
    ----------
    models : DiscreteBayesianNetwork or sequence of them
        The hyperparameter network(s). Several networks form Theta and must share one DAG and
        the same state names per node.
    names : sequence of str, optional
        A label per network, used in errors and reports.
    tolerance : float
        How far a CPD column may be from summing to one (columns within it are renormalised).

    Returns
    -------
    Theta

    Raises
    ------
    ModelError
        A cycle, a node without a CPD, a CPD whose parents disagree with the DAG, a wrongly
        shaped table, NaN or negative probabilities, a column that does not sum to one, or
        members with different DAGs or state spaces.

    Examples
    --------
    >>> from pgmpy.factors.discrete import TabularCPD
    >>> from pgmpy.models import DiscreteBayesianNetwork
    >>> import quiltpriv as qp
    >>> net = DiscreteBayesianNetwork([("x2", "x1")])
    >>> net.add_cpds(
    ...     TabularCPD("x2", 3, [[0.3], [0.4], [0.3]],
    ...                state_names={"x2": ["0.2", "0.5", "0.8"]}),
    ...     TabularCPD("x1", 2, [[0.7, 0.5, 0.2], [0.3, 0.5, 0.8]], evidence=["x2"],
    ...                evidence_card=[3],
    ...                state_names={"x1": ["0.4", "0.6"], "x2": ["0.2", "0.5", "0.8"]}))
    >>> theta = qp.theta_from_pgmpy(net)
    >>> theta, theta.parents["x1"]
    (Theta(2 nodes, 1 edges, 1 member), ('x2',))
    """
    if not isinstance(models, Sequence) or isinstance(models, str):
        models = [models]
    if len(models) == 0:
        raise ModelError("Theta is empty: give at least one network")
    names = list(names) if names is not None else [
        getattr(m, "name", None) or f"theta[{k}]" for k, m in enumerate(models)
    ]
    if len(names) != len(models):
        raise ModelError(f"{len(names)} names for {len(models)} networks")
    return _theta_from_pgmpy(models, names, tolerance=tolerance)


def _theta_from_pgmpy(models: Sequence[Any], names: Sequence[str], *, tolerance: float,
                      check: _Check = _unchecked) -> Theta:
    """:func:`theta_from_pgmpy` of a list of networks and as many names; ``check`` sees a
    reader's time limit between the networks and every few thousand nodes."""
    if not models:
        raise ModelError("Theta is empty: give at least one network")
    thetas = [_single_from_pgmpy(m, str(n), tolerance, check)
              for m, n in zip(models, names, strict=True)]
    first = thetas[0]
    for t in thetas[1:]:
        first = first.with_members(t)
    return first


def theta_from_tables(
    edges: Iterable[tuple[str, str]],
    states: Mapping[str, Sequence[Any]],
    cpds: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    names: Sequence[str] | None = None,
    *,
    parents_order: Mapping[str, Sequence[str]] | None = None,
    tolerance: float = CPD_SUM_TOLERANCE,
) -> Theta:
    """Build Theta from plain tables (no pgmpy): ``cpds[k][node]`` has axes ``(node, *parents)``.

    Parameters
    ----------
    edges : iterable of (str, str)
        The DAG's edges, parent first.
    states : mapping of str to sequence
        Every node (in this order) and its states, values of a distribution parameter (numbers
        are named by their shortest decimal, ``0.4 -> "0.4"``).
    cpds : mapping of str to array-like, or a sequence of them
        Per node, its conditional table with axes ``(node, *parents)`` (each column sums to
        one); one mapping (|Theta| = 1) or one per member of Theta.
    names : sequence of str, optional
        A label per member, for errors and reports.
    parents_order : mapping of str to sequence of str, optional
        The parent axis order per node (default: parents in the order their edges are listed).
    tolerance : float
        How far a CPD column may be from summing to one (columns within it are renormalised).

    Returns
    -------
    Theta

    Raises
    ------
    ModelError
        An edge naming a node without states, a duplicate edge, a cycle, a wrongly shaped
        table, a negative probability or a column that does not sum to one.

    Examples
    --------
    The two-attribute network of [ZOC22, Sec. 6, Ex. 3], as two members of Theta:

    >>> import quiltpriv as qp
    >>> states = {"x2": [0.2, 0.5, 0.8], "x1": [0.4, 0.6]}
    >>> low = {"x2": [0.3, 0.4, 0.3], "x1": [[0.7, 0.5, 0.2], [0.3, 0.5, 0.8]]}
    >>> high = {"x2": [0.2, 0.6, 0.2], "x1": [[0.6, 0.5, 0.3], [0.4, 0.5, 0.7]]}
    >>> theta = qp.theta_from_tables([("x2", "x1")], states, [low, high], names=["low", "high"])
    >>> theta, theta.names
    (Theta(2 nodes, 1 edges, 2 members), ('low', 'high'))
    >>> theta.states["x1"]
    ('0.4', '0.6')
    """
    edge_list, states = _check_edges(edges), _check_states(states)
    if not isinstance(cpds, Mapping | Sequence) or isinstance(cpds, str):
        raise ModelError(f"cpds must map each node to its table (or be a list of such maps, one "
                         f"per member), got {type(cpds).__name__}")
    nodes_in_order = list(states)
    for a, b in edge_list:
        for x in (a, b):
            if x not in states:
                raise ModelError(f"edge {a!r} -> {b!r} names node {x!r} that has no states")
    parents: dict[str, list[str]] = {v: [] for v in nodes_in_order}
    seen = set()
    for a, b in edge_list:
        if (a, b) in seen:
            raise ModelError(f"duplicate edge {a!r} -> {b!r}")
        seen.add((a, b))
        parents[b].append(a)
    if parents_order is not None:
        for v, order in parents_order.items():
            if sorted(order) != sorted(parents[v]):
                raise ModelError(f"parents_order for {v!r} does not match its edges")
            parents[v] = list(order)
    topo = _topological_order(nodes_in_order, parents)
    members = [cpds] if isinstance(cpds, Mapping) else list(cpds)
    if not members:
        raise ModelError("Theta is empty: give at least one network")
    names = list(names) if names is not None else [f"theta[{k}]" for k in range(len(members))]
    validated = []
    shapes = {v: (len(states[v]),) + tuple(len(states[p]) for p in parents[v]) for v in topo}
    for m, name in zip(members, names, strict=True):
        for v in topo:
            if v not in m:
                raise ModelError(f"{name}: node {v!r} has no CPD")
        checked = _check_tables([(m[v], shapes[v], f"{name}: CPD of {v!r}") for v in topo],
                                tolerance)
        tables = {v: CPD(v, tuple(parents[v]), arr) for v, arr in zip(topo, checked, strict=True)}
        extra = set(m) - set(topo)
        if extra:
            raise ModelError(f"{name}: CPDs for unknown nodes {sorted(extra)}")
        validated.append(tables)
    return Theta(topo, states, parents, validated, names)


def _theta_from_named_tables(states: Mapping[str, list[str]], parents: Mapping[str, list[str]],
                             cpds: Sequence[Mapping[str, Any]], names: Sequence[str], *,
                             tolerance: float = CPD_SUM_TOLERANCE,
                             check: _Check = _unchecked) -> Theta:
    """:func:`theta_from_tables` for parts already checked as the JSON reader checks them
    (each node's states a non-empty list of distinct ``str``, its parents a list of distinct
    known nodes in axis order): the same Theta, the same checks of the tables and the graph,
    without checking the edges and states a second time. ``check`` sees a reader's time
    limit between the passes."""
    topo = _topological_order(list(states), parents)
    check(f"{len(topo):,} nodes ordered, not yet their tables")
    shapes = {v: (len(states[v]),) + tuple(len(states[p]) for p in parents[v]) for v in topo}
    validated = []
    for k, (m, name) in enumerate(zip(cpds, names, strict=True)):
        check(f"the tables of {k} of {len(names)} members checked")
        for v in topo:
            if v not in m:
                raise ModelError(f"{name}: node {v!r} has no CPD")
        checked = _check_tables([(m[v], shapes[v], f"{name}: CPD of {v!r}") for v in topo],
                                tolerance)
        if len(m) != len(topo):
            raise ModelError(f"{name}: CPDs for unknown nodes {sorted(set(m) - set(topo))}")
        validated.append({v: CPD(v, tuple(parents[v]), arr)
                          for v, arr in zip(topo, checked, strict=True)})
    check(f"every table of {len(topo):,} nodes checked, Theta not yet built")
    return Theta._from_named(topo, states, parents, validated, names, check=check)


def _check_edges(edges: object) -> list[tuple[str, str]]:
    """``edges`` as a list of (parent, child) pairs, or ModelError."""
    if isinstance(edges, str) or not isinstance(edges, Iterable):
        raise ModelError(f"edges must be a list of (parent, child) pairs, got "
                         f"{type(edges).__name__}")
    out = []
    for e in edges:
        if isinstance(e, str) or not isinstance(e, Iterable) or len(pair := tuple(e)) != 2:
            raise ModelError(f"an edge must be a (parent, child) pair, got {e!r}")
        out.append(pair)
    return out


def _check_states(states: object) -> Mapping[str, Sequence[Any]]:
    """``states`` as a mapping of node name to its non-empty list of states, or ModelError."""
    if not isinstance(states, Mapping):
        raise ModelError(f"states must map each node to its list of states, got "
                         f"{type(states).__name__}")
    for v, st in states.items():
        if not isinstance(v, str):
            raise ModelError(f"node names must be strings, got {v!r}")
        if isinstance(st, str) or not isinstance(st, Iterable) or not len(tuple(st)):
            raise ModelError(f"the states of {v!r} must be a non-empty list, got {st!r}")
    return states


def _single_from_pgmpy(model: Any, name: str, tolerance: float,
                       check: _Check = _unchecked) -> Theta:
    from quiltpriv.utils.progress import quiet_tqdm_auto

    quiet_tqdm_auto()
    try:
        from pgmpy.models import DiscreteBayesianNetwork
    except ImportError as exc:  # pragma: no cover - pgmpy is a dependency
        raise ModelError("pgmpy is required to read pgmpy networks") from exc
    if not isinstance(model, DiscreteBayesianNetwork):
        raise ModelError(
            f"{name}: expected a pgmpy DiscreteBayesianNetwork, got {type(model).__name__}"
        )
    nodes = [str(v) for v in model.nodes()]
    if not nodes:
        raise ModelError(f"{name}: the network has no nodes")
    if len(set(nodes)) != len(nodes):
        raise ModelError(f"{name}: duplicate node names after conversion to str")
    parents: dict[str, list[str]] = {v: [] for v in nodes}
    for a, b in model.edges():
        parents[str(b)].append(str(a))
    cpds = {str(c.variable): c for c in model.get_cpds()}
    missing = [v for v in nodes if v not in cpds]
    if missing:
        raise ModelError(f"{name}: no CPD for node(s) {', '.join(map(repr, missing))}")
    extra = sorted(set(cpds) - set(nodes))
    if extra:
        raise ModelError(f"{name}: CPD for node(s) not in the graph: {', '.join(extra)}")
    states: dict[str, tuple] = {}
    tables: dict[str, CPD] = {}
    for k, v in enumerate(nodes):
        if not k % _PACE:
            check(f"{k:,} of {len(nodes):,} nodes of {name} converted")
        cpd = cpds[v]
        variables = [str(x) for x in cpd.variables]
        evidence = variables[1:]
        if sorted(evidence) != sorted(parents[v]):
            raise ModelError(
                f"{name}: the CPD of {v!r} is conditioned on {evidence} but its parents in the "
                f"graph are {parents[v]}"
            )
        parents[v] = evidence  # axis order of the table
        sn = cpd.state_names.get(cpd.variable) if cpd.state_names else None
        card = int(cpd.cardinality[0])
        node_states = tuple(sn) if sn is not None else tuple(range(card))
        if len(node_states) != card:
            raise ModelError(f"{name}: node {v!r} has {card} rows but {len(node_states)} states")
        if len(set(map(repr, node_states))) != len(node_states):
            raise ModelError(f"{name}: node {v!r} has duplicate state names")
        states[v] = node_states
    # Parent state names as seen by each child must agree with the parent's own.
    for v in nodes:
        cpd = cpds[v]
        for p in parents[v]:
            sn = cpd.state_names.get(p) if cpd.state_names else None
            if sn is not None and tuple(sn) != states[p]:
                raise ModelError(
                    f"{name}: the CPD of {v!r} names the states of parent {p!r} as "
                    f"{list(sn)}, but {p!r} has states {list(states[p])}"
                )
    topo = _topological_order(nodes, parents)
    for k, v in enumerate(topo):
        if not k % _PACE:
            check(f"the tables of {k:,} of {len(topo):,} nodes of {name} checked")
        cpd = cpds[v]
        expected = (len(states[v]),) + tuple(len(states[p]) for p in parents[v])
        try:
            raw = np.asarray(cpd.values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"{name}: the CPD of {v!r} has non-numeric values") from exc
        tables[v] = CPD(v, tuple(parents[v]),
                        _check_table(raw, expected, f"{name}: CPD of {v!r}", tolerance))
    check(f"every table of {len(topo):,} nodes of {name} checked, Theta not yet built")
    return Theta(topo, states, parents, [tables], [name])


def _topological_order(nodes: Sequence[str], parents: Mapping[str, Sequence[str]]) -> list[str]:
    """Kahn's algorithm, stable in the given node order; raise with the cycle if there is one.

    A given order that is already topological (as :func:`theta_to_dict` writes it) is what
    the stable algorithm returns: every node's parents come before it, so at each step the
    earliest node not yet taken is ready. That is checked in one pass, without the heap.
    """
    pos = {v: k for k, v in enumerate(nodes)}
    if all(pos[p] < k for k, v in enumerate(nodes) for p in parents[v]):
        return list(nodes)
    indeg = {v: len(parents[v]) for v in nodes}
    children: dict[str, list[str]] = {v: [] for v in nodes}
    for v in nodes:
        for p in parents[v]:
            children[p].append(v)
    ready = [v for v in nodes if indeg[v] == 0]
    order: list[str] = []
    import heapq

    heap = [(pos[v], v) for v in ready]
    heapq.heapify(heap)
    while heap:
        _, v = heapq.heappop(heap)
        order.append(v)
        for c in children[v]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, (pos[c], c))
    if len(order) != len(nodes):
        import networkx as nx

        g = nx.DiGraph((p, v) for v in nodes for p in parents[v])
        cycle = nx.find_cycle(g)
        path = " -> ".join([a for a, _ in cycle] + [cycle[0][0]])
        raise ModelError(f"the graph has a cycle: {path}")
    return order


def _check_same_structure(a: Theta, b: Theta, label: str) -> None:
    if set(a.nodes) != set(b.nodes):
        raise ModelError(
            f"Theta members must share one DAG: {label} has nodes "
            f"{sorted(set(b.nodes) ^ set(a.nodes))} that the other lacks"
        )
    if set(a.edges) != set(b.edges):
        diff = sorted(set(a.edges) ^ set(b.edges))
        raise ModelError(
            f"Theta members must share one DAG: {label} differs in edges "
            f"{', '.join(f'{x}->{y}' for x, y in diff)}"
        )
    for v in a.nodes:
        if a.states[v] != b.states[v]:
            raise ModelError(
                f"Theta members must share state spaces: {v!r} has states {list(a.states[v])} "
                f"in one and {list(b.states[v])} in {label}"
            )


def _align(cpd: CPD, parents: tuple[str, ...]) -> CPD:
    if cpd.parents == parents:
        return cpd
    perm = [0] + [1 + cpd.parents.index(p) for p in parents]
    table = np.ascontiguousarray(np.transpose(cpd.table, perm))
    table.setflags(write=False)
    return CPD(cpd.node, parents, table)


def check_theta(theta: object, name: str = "theta") -> Theta:
    """Return ``theta`` if it is a :class:`Theta`, else raise ModelError naming what it is.

    The one check every function taking a network starts with (build one with
    :func:`quiltpriv.model.loading.load_model`, :func:`theta_from_pgmpy` or
    :func:`theta_from_tables`).
    """
    if not isinstance(theta, Theta):
        raise ModelError(f"{name} must be a quiltpriv Theta (load_model, theta_from_pgmpy, "
                         f"theta_from_tables), got {type(theta).__name__}")
    return theta


@renamed_keywords(model="theta")
def as_theta(theta: Any) -> Theta:
    """Accept a :class:`Theta`, a pgmpy network or a sequence of pgmpy networks."""
    if isinstance(theta, Theta):
        return theta
    return theta_from_pgmpy(theta)


def theta_to_dict(theta: Theta, *, version: int = 2) -> dict[str, Any]:
    """Theta as a JSON-ready dict (format ``quiltpriv-network/2``, or ``/1`` with
    ``version=1``; :func:`quiltpriv.model.loading.load_model` reads both).

    ``nodes`` maps each node to its ``states`` (their canonical names,
    :func:`quiltpriv.model.network.state_name`) and ``parents`` (the CPD axis order).
    Version 2: each member's ``tables`` is every node's table, in the order of ``nodes``,
    as one base64 column of float64 numbers (:mod:`quiltpriv.model.json_format`; reading
    a 100,000-node model takes a fraction of version 1's time). Version 1: each member's
    ``cpds`` maps a node to its table as nested lists with axes ``(node, *parents)``
    (readable and editable by hand). A Theta with a provenance record
    (:mod:`quiltpriv.model.provenance`) also gets a ``provenance`` object, read back by
    ``load_model``.

    Parameters
    ----------
    theta : Theta
        The network.
    version : {2, 1}
        The format written (both are read).

    Returns
    -------
    dict

    Examples
    --------
    >>> import json
    >>> import quiltpriv as qp
    >>> doc = qp.theta_to_dict(qp.load_model("example3"))
    >>> doc["format"], list(doc["nodes"])
    ('quiltpriv-network/2', ['x2', 'x1'])
    >>> print(json.dumps(doc["nodes"]["x1"]))
    {"states": ["0.56", "0.5", "0.44"], "parents": ["x2"]}
    >>> old = qp.theta_to_dict(qp.load_model("example3"), version=1)
    >>> len(old["members"][0]["cpds"]["x1"])  # axes (x1, x2)
    3
    """
    theta = check_theta(theta)
    if version not in (1, 2) or isinstance(version, bool):
        raise ParameterError(f"version must be 1 or 2, not {version!r}")
    out: dict[str, Any] = {
        "format": JSON_FORMAT if version == 1 else JSON_FORMAT_V2,
        "nodes": {v: {"states": list(theta.states[v]),
                      "parents": list(theta.parents[v])} for v in theta.nodes},
        "members": [{"name": name, "cpds": {v: m[v].table.tolist() for v in theta.nodes}}
                    for name, m in zip(theta.names, theta.members, strict=True)]
        if version == 1 else [{"name": name, "tables": column} for name, column
                              in zip(theta.names, _theta_columns(theta), strict=True)],
    }
    if theta.provenance is not None:
        out["provenance"] = _thawed(theta.provenance)
    return out


def _theta_columns(theta: Theta) -> list[str]:
    """Each member's ``tables`` column of format ``/2``, nodes in ``theta.nodes`` order."""
    return [_encode_column([m[v].table for v in theta.nodes]) for m in theta.members]


def theta_to_pgmpy(theta: Theta) -> Any:
    """One pgmpy ``DiscreteBayesianNetwork`` per member of ``theta`` (a list when there are
    several), with ``TabularCPD`` s in Theta's node order; imports pgmpy."""
    built = check_theta(theta)
    from quiltpriv.utils.progress import quiet_tqdm_auto

    quiet_tqdm_auto()
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    nets = []
    for label, member in zip(built.names, built.members, strict=True):
        net = DiscreteBayesianNetwork()
        net.add_nodes_from(built.nodes)  # Theta's order: theta_from_pgmpy gives it back
        net.add_edges_from(built.edges)
        net.name = label
        for v in built.nodes:
            parents = list(built.parents[v])
            table = member[v].table
            net.add_cpds(TabularCPD(
                v, table.shape[0], table.reshape(table.shape[0], -1), evidence=parents or None,
                evidence_card=[built.cardinality[p] for p in parents] or None,
                state_names={u: list(built.states[u]) for u in (v, *parents)}))
        nets.append(net)
    return nets[0] if len(nets) == 1 else nets


def __getattr__(name: str) -> object:
    # theta_html moved to quiltpriv.reporting.notebook (the old path warns until 0.3.0).
    from quiltpriv._compat import moved_attribute

    return moved_attribute(__name__, {"theta_html": "quiltpriv.reporting.notebook"}, name)
