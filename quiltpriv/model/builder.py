"""Declare a hyperparameter network by hand, in the words of the domain.

A hyperparameter network has one node per attribute whose states are values of that
attribute's distribution parameter (a share, a mean), and one conditional table per node. In
pgmpy a table is a 2-D array whose columns follow pgmpy's order of the parents' state
combinations; here a table is a mapping from parent states to the node's distribution::

    import quiltpriv as qp

    b = qp.NetworkBuilder("school")
    b.attribute("gender", [0.4, 0.5, 0.6], kind="share")     # share of women
    b.attribute("income", [0.2, 0.35, 0.5], kind="share")    # share from high-income homes
    b.edge("gender", "income")
    b.table("gender", [0.3, 0.4, 0.3])
    b.table("income", {0.4: [0.40, 0.35, 0.25],              # given gender = 0.4
                       0.5: [0.35, 0.35, 0.30],
                       0.6: [0.30, 0.35, 0.35]})
    theta = b.to_theta()           # or b.to_pgmpy(): a pgmpy DiscreteBayesianNetwork

With several parents, key the rows by tuples of parent states in the order of ``given=``
(default: the order the edges were declared), or nest mappings parent by parent
(``{0.4: {0.3: [...], 0.6: [...]}, ...}``). A row may be a list (in the order the node's states
were declared) or a mapping from state to probability. A parent state may be written as the
number (``0.35``) or as its name (``"0.35"``).

Everything is checked when the network is built, and every error names the attribute and, for
a conditional row, the parent state: a missing or unknown parent state, a row of the wrong
length, a negative probability, a row that does not sum to one.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np

from quiltpriv.errors import ModelError, ParameterStatesWarning
from quiltpriv.model.network import Theta, state_name, theta_from_tables
from quiltpriv.model.provenance import PARAMETER_KINDS, state_problems
from quiltpriv.utils.format import fmt_number as _fmt

__all__ = ["NetworkBuilder", "SUM_TOLERANCE", "state_name"]

#: How far a row may be from summing to one (rows within it are renormalised when Theta is
#: built; rows beyond it are an error naming the attribute and the parent state).
SUM_TOLERANCE = 1e-6


@dataclass(frozen=True)
class _Attribute:
    name: str
    states: tuple[str, ...]
    values: tuple[float | None, ...]  # the number each state names (None: not a number)
    kind: str | None


class NetworkBuilder:
    """Declare attributes, edges and conditional tables; build pgmpy and quiltpriv networks.

    Parameters
    ----------
    name : str
        The network's name (pgmpy's ``name``, Theta's member label).

    Notes
    -----
    Methods return the builder, so calls chain. Nothing is validated against pgmpy until
    :meth:`to_pgmpy` / :meth:`to_theta`, but every declaration is checked when it is made.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> builder = (qp.NetworkBuilder("school")
    ...            .attribute("gender", [0.4, 0.5, 0.6], kind="share")
    ...            .attribute("income", [0.2, 0.35, 0.5], kind="share")
    ...            .edge("gender", "income")
    ...            .table("gender", [0.3, 0.4, 0.3])
    ...            .table("income", {0.4: [0.40, 0.35, 0.25],
    ...                              0.5: [0.35, 0.35, 0.30],
    ...                              0.6: [0.30, 0.35, 0.35]}))
    >>> theta = builder.to_theta()
    >>> theta, theta.names
    (Theta(2 nodes, 1 edges, 1 member), ('school',))

    A row that does not sum to one is refused when the network is built:

    >>> qp.NetworkBuilder().attribute("x", [0.1, 0.9]).table("x", [0.5, 0.6]).to_theta()
    Traceback (most recent call last):
    ...
    quiltpriv.errors.ModelError: table of 'x': the probabilities sum to 1.1, not 1
    """

    def __init__(self, name: str = "declared") -> None:
        self.name = str(name)
        self._attrs: dict[str, _Attribute] = {}
        self._parents: dict[str, list[str]] = {}
        self._tables: dict[str, tuple[Any, tuple[str, ...] | None]] = {}

    # -- declarations --------------------------------------------------------------------------
    def attribute(self, name: str, states: Sequence[Any], *, kind: str | None = None
                  ) -> NetworkBuilder:
        """Declare an attribute and the values its parameter may take.

        Parameters
        ----------
        name : str
            The attribute (a column of the records).
        states : sequence of numbers
            The parameter values, e.g. ``[0.2, 0.35, 0.5]`` for a share. Strings are accepted
            (and warned about when they are not numbers: they do not look like parameters).
        kind : {"share", "mean"}, optional
            ``"share"``: a probability, so every value must lie in [0, 1]. ``"mean"``: any
            finite number. Recorded in the provenance (and used by reports).
        """
        if not isinstance(name, str) or not name:
            raise ModelError(f"an attribute name must be a non-empty string, got {name!r}")
        if name in self._attrs:
            raise ModelError(f"attribute {name!r} is declared twice")
        if kind is not None and kind not in PARAMETER_KINDS:
            raise ModelError(f"attribute {name!r}: kind must be one of {PARAMETER_KINDS}, "
                             f"got {kind!r}")
        if isinstance(states, np.ndarray) and states.ndim == 1:
            states = states.tolist()  # a numpy array of values is the list of them
        if isinstance(states, str) or not isinstance(states, Sequence) or len(states) < 2:
            raise ModelError(f"attribute {name!r}: give a list of at least two parameter values")
        names = tuple(state_name(s) for s in states)
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ModelError(f"attribute {name!r}: state(s) {', '.join(dup)} listed twice")
        values = tuple(_number(s) for s in states)
        if kind == "share":
            bad = [n for n, x in zip(names, values, strict=True)
                   if x is None or not 0.0 <= x <= 1.0]
            if bad:
                raise ModelError(f"attribute {name!r} is a share, but state(s) "
                                 f"{', '.join(bad)} are not numbers in [0, 1]")
        self._attrs[name] = _Attribute(name, names, values, kind)
        self._parents[name] = []
        return self

    def edge(self, parent: str, child: str) -> NetworkBuilder:
        """Declare that ``child``'s parameter depends on ``parent``'s (an arc of the DAG)."""
        for x in (parent, child):
            self._check_attribute(x, f"edge {parent!r} -> {child!r}")
        if parent == child:
            raise ModelError(f"edge {parent!r} -> {child!r} is a self-loop")
        if parent in self._parents[child]:
            raise ModelError(f"edge {parent!r} -> {child!r} is declared twice")
        if child in self._ancestors(parent):
            raise ModelError(f"edge {parent!r} -> {child!r} closes a cycle "
                             f"({child!r} is already an ancestor of {parent!r})")
        self._parents[child].append(parent)
        return self

    def edges(self, pairs: Iterable[tuple[str, str]]) -> NetworkBuilder:
        """Declare several edges (``[(parent, child), ...]``)."""
        for pair in pairs:
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise ModelError(f"an edge is a (parent, child) pair, got {pair!r}")
            self.edge(pair[0], pair[1])
        return self

    def table(self, node: str, probabilities: Any, *, given: Sequence[str] | str | None = None
              ) -> NetworkBuilder:
        """Declare ``node``'s (conditional) distribution.

        Parameters
        ----------
        node : str
            A declared attribute.
        probabilities : list, mapping or nested mapping
            Without parents: one row, a list in the order of the node's states or a mapping
            ``{state: probability}``. With parents: a mapping from the parents' states to a
            row, keyed by a state (one parent), a tuple of states in the order of ``given``, or
            nested mappings, parent by parent.
        given : str or sequence of str, optional
            The parents, in the order the keys name them; must be exactly the node's declared
            parents (default: the order their edges were declared).

        Notes
        -----
        The table is checked when the network is built (edges may still be declared after
        it), so that errors can name every missing parent state.
        """
        self._check_attribute(node, "table")
        if node in self._tables:
            raise ModelError(f"the table of {node!r} is declared twice")
        order = None
        if given is not None:
            order = (given,) if isinstance(given, str) else tuple(given)
            for p in order:
                self._check_attribute(p, f"table of {node!r}: given")
        self._tables[node] = (probabilities, order)
        return self

    # -- building ------------------------------------------------------------------------------
    def arrays(self) -> tuple[dict[str, tuple[str, ...]], dict[str, np.ndarray]]:
        """The parents of each node (axis order) and each table as an array ``(node, *parents)``.

        Raises
        ------
        ModelError
            A node without a table, or any table problem (named by attribute and parent state).
        """
        if not self._attrs:
            raise ModelError(f"{self.name}: no attributes declared")
        missing = [v for v in self._attrs if v not in self._tables]
        if missing:
            raise ModelError(f"{self.name}: no table for attribute(s) "
                             f"{', '.join(map(repr, missing))}")
        parents: dict[str, tuple[str, ...]] = {}
        tables: dict[str, np.ndarray] = {}
        for v, (probs, order) in self._tables.items():
            declared = self._parents[v]
            if order is None:
                order = tuple(declared)
            elif sorted(order) != sorted(declared) or len(set(order)) != len(order):
                raise ModelError(
                    f"table of {v!r}: given={list(order)} but its parents (declared edges) are "
                    f"{declared or 'none'}")
            parents[v] = order
            tables[v] = self._table_array(v, probs, order)
        return parents, tables

    def to_pgmpy(self) -> Any:
        """A checked pgmpy ``DiscreteBayesianNetwork`` with ``TabularCPD`` s and state names."""
        from quiltpriv.utils.progress import quiet_tqdm_auto

        quiet_tqdm_auto()
        from pgmpy.factors.discrete import TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork

        parents, tables = self.arrays()
        net = DiscreteBayesianNetwork()
        net.add_nodes_from(self._attrs)
        net.add_edges_from((p, v) for v in self._attrs for p in parents[v])
        net.name = self.name
        cpds = []
        for v in self._attrs:
            pa = list(parents[v])
            card = len(self._attrs[v].states)
            names = {v: list(self._attrs[v].states)}
            names.update({p: list(self._attrs[p].states) for p in pa})
            values = tables[v].reshape(card, -1)
            cpds.append(TabularCPD(
                v, card, values, evidence=pa or None,
                evidence_card=[len(self._attrs[p].states) for p in pa] or None,
                state_names=names))
        net.add_cpds(*cpds)
        try:
            net.check_model()
        except ValueError as exc:  # pragma: no cover - arrays() checked everything first
            raise ModelError(f"{self.name}: pgmpy rejects the network: {exc}") from exc
        return net

    def to_theta(self) -> Theta:
        """The network as a one-member :class:`~quiltpriv.model.network.Theta`, with provenance.

        Warns (:class:`~quiltpriv.errors.ParameterStatesWarning`) when a state is not a number.
        Built from :meth:`arrays` without pgmpy (the same Theta as ``theta_from_pgmpy`` of
        :meth:`to_pgmpy`, which takes pgmpy's import time).
        """
        parents, tables = self.arrays()
        theta = theta_from_tables(
            [(p, v) for v in self._attrs for p in parents[v]],
            {v: a.states for v, a in self._attrs.items()}, [tables], [self.name],
            parents_order=parents)
        theta = theta.with_provenance(self.provenance())
        problems = state_problems(theta)
        if problems:
            warnings.warn(f"{self.name}: " + "; ".join(problems), ParameterStatesWarning,
                          stacklevel=2)
        return theta

    def provenance(self) -> dict[str, Any]:
        """The provenance record of a declared network (no data involved)."""
        return {
            "source": "declared",
            "builder": "quiltpriv.NetworkBuilder",
            "name": self.name,
            "parameters": {v: {"kind": a.kind, "states": list(a.states)}
                           for v, a in self._attrs.items()},
        }

    # -- helpers -------------------------------------------------------------------------------
    def _check_attribute(self, name: Any, where: str) -> None:
        if name not in self._attrs:
            known = ", ".join(map(repr, self._attrs)) or "none yet"
            raise ModelError(f"{where}: {name!r} is not a declared attribute (declared: {known})")

    def _ancestors(self, node: str) -> set[str]:
        seen: set[str] = set()
        stack = [node]
        while stack:
            v = stack.pop()
            if v not in seen:
                seen.add(v)
                stack.extend(self._parents[v])
        return seen

    def _state_index(self, attr: str, key: Any, where: str) -> int:
        """Index of ``key`` among ``attr``'s states (by name, or by numeric value)."""
        a = self._attrs[attr]
        if isinstance(key, str) and key in a.states:
            return a.states.index(key)
        x = _number(key)
        if x is not None:
            hits = [k for k, v in enumerate(a.values) if v is not None and v == x]
            if hits:
                return hits[0]
        raise ModelError(f"{where}: {key!r} is not a state of {attr!r} "
                         f"(states: {', '.join(a.states)})")

    def _row(self, node: str, row: Any, where: str) -> np.ndarray:
        a = self._attrs[node]
        k = len(a.states)
        if isinstance(row, Mapping):
            out = np.full(k, np.nan)
            for s, p in row.items():
                out[self._state_index(node, s, f"{where}: row key")] = _probability(p, where)
            missing = [a.states[j] for j in range(k) if np.isnan(out[j])]
            if missing:
                raise ModelError(f"{where}: no probability for state(s) {', '.join(missing)} "
                                 f"of {node!r}")
        else:
            if isinstance(row, str) or not isinstance(row, Sequence | np.ndarray):
                raise ModelError(f"{where}: a row is a list of {k} probabilities or a mapping "
                                 f"from state to probability, got {type(row).__name__}")
            if len(row) != k:
                raise ModelError(f"{where}: {len(row)} probabilities for the {k} states of "
                                 f"{node!r} ({', '.join(a.states)})")
            out = np.array([_probability(p, where) for p in row], dtype=float)
        if np.any(out < 0):
            bad = [f"{a.states[j]}: {_fmt(out[j])}" for j in range(k) if out[j] < 0]
            raise ModelError(f"{where}: negative probability ({', '.join(bad)})")
        total = float(out.sum())
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise ModelError(f"{where}: the probabilities sum to {_fmt(total, 9)}, not 1")
        return out

    def _table_array(self, node: str, probs: Any, order: tuple[str, ...]) -> np.ndarray:
        k = len(self._attrs[node].states)
        if not order:
            return self._row(node, probs, f"table of {node!r}")
        if not isinstance(probs, Mapping):
            raise ModelError(
                f"table of {node!r}: {node!r} has parent(s) {list(order)}, so give a mapping "
                f"from their states to a row (e.g. {{state: [...]}}), not a "
                f"{type(probs).__name__}")
        flat = _flatten(probs, len(order), node)
        shape = tuple(len(self._attrs[p].states) for p in order)
        out = np.full((k,) + shape, np.nan)
        for key, row in flat:
            idx = tuple(self._state_index(p, s, f"table of {node!r}: parent {p!r}")
                        for p, s in zip(order, key, strict=True))
            where = f"table of {node!r} given {_describe(order, key)}"
            if not np.isnan(out[(slice(None),) + idx]).all():
                raise ModelError(f"{where}: this parent state is given twice")
            out[(slice(None),) + idx] = self._row(node, row, where)
        missing = [combo for combo in product(*(range(n) for n in shape))
                   if np.isnan(out[(0,) + combo])]
        if missing:
            shown = "; ".join(_describe(order, tuple(self._attrs[p].states[i]
                                                     for p, i in zip(order, c, strict=True)))
                              for c in missing[:4])
            more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
            raise ModelError(f"table of {node!r}: no row for parent state(s) {shown}{more}")
        return out


def _describe(order: Sequence[str], key: Sequence[Any]) -> str:
    return ", ".join(f"{p} = {s}" for p, s in zip(order, key, strict=True))


def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _probability(p: Any, where: str) -> float:
    if isinstance(p, bool):
        raise ModelError(f"{where}: {p!r} is not a probability")
    try:
        x = float(p)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: {p!r} is not a probability") from None
    if not math.isfinite(x):
        raise ModelError(f"{where}: {p!r} is not a finite probability")
    return x


def _flatten(probs: Mapping[Any, Any], depth: int, node: str) -> list[tuple[tuple, Any]]:
    """``[(parent-state tuple, row)]`` from flat tuple keys or mappings nested ``depth`` deep."""
    out: list[tuple[tuple, Any]] = []
    for key, value in probs.items():
        if isinstance(key, tuple):
            if len(key) != depth:
                raise ModelError(f"table of {node!r}: key {key!r} names {len(key)} parent "
                                 f"state(s), expected {depth}")
            out.append((key, value))
        elif depth == 1:
            out.append(((key,), value))
        elif isinstance(value, Mapping):
            out.extend(((key,) + k, v) for k, v in _flatten(value, depth - 1, node))
        else:
            raise ModelError(f"table of {node!r}: key {key!r} names one parent state of "
                             f"{depth}; use a tuple key or nest mappings parent by parent")
    return out
