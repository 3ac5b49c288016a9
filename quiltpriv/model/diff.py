"""What differs between two models: nodes, edges, states and tables, and by how much.

An auditor whose model does not have the fingerprint a plan states needs to know whether the
two differ in one probability or in everything. :func:`model_diff` compares two
:class:`~quiltpriv.model.network.Theta` by name (node order, parent order and the order of
members do not matter, as they do not for the fingerprint) and returns a :class:`ModelDiff`:
added and removed nodes and edges, nodes whose states differ, and per node whose states and
parents agree the largest absolute difference between its tables (the max over members paired
in their canonical order, and over every entry).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from quiltpriv.model.network import CPD, Theta, _align, check_theta
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import canonical_json

__all__ = ["ModelDiff", "TableDiff", "model_diff"]


@dataclass(frozen=True)
class TableDiff:
    """One node's tables compared: the largest absolute difference of an entry.

    Attributes
    ----------
    node : str
    max_abs_difference : float
        Over every member pair and every entry ``P(node = s | parents)``.
    where : str
        The entry where it occurs, e.g. ``"P(income = 0.5 | gender = 0.4)"``.
    """

    node: str
    max_abs_difference: float
    where: str

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "max_abs_difference": self.max_abs_difference,
                "where": self.where}


@dataclass(frozen=True)
class ModelDiff:
    """The differences between a model ``a`` (e.g. the published one) and ``b`` (the auditor's).

    Attributes
    ----------
    same : bool
        True when the fingerprints agree (then every other field is empty).
    fingerprints : tuple of str
        ``a``'s and ``b``'s.
    nodes_only_in_a, nodes_only_in_b : tuple of str
    edges_only_in_a, edges_only_in_b : tuple of (str, str)
    states_differ : tuple of str
        Nodes in both whose state names differ (their tables are not compared).
    members : tuple of int
        ``|Theta|`` of ``a`` and of ``b`` (tables are compared only when they agree).
    tables : tuple of TableDiff
        Nodes with the same states and parents in both whose tables differ, largest first.
    """

    same: bool
    fingerprints: tuple[str, str]
    nodes_only_in_a: tuple[str, ...] = ()
    nodes_only_in_b: tuple[str, ...] = ()
    edges_only_in_a: tuple[tuple[str, str], ...] = ()
    edges_only_in_b: tuple[tuple[str, str], ...] = ()
    states_differ: tuple[str, ...] = ()
    members: tuple[int, int] = (1, 1)
    tables: tuple[TableDiff, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "same": self.same, "fingerprints": list(self.fingerprints),
            "nodes_only_in_a": list(self.nodes_only_in_a),
            "nodes_only_in_b": list(self.nodes_only_in_b),
            "edges_only_in_a": [list(e) for e in self.edges_only_in_a],
            "edges_only_in_b": [list(e) for e in self.edges_only_in_b],
            "states_differ": list(self.states_differ), "members": list(self.members),
            "tables": [t.to_dict() for t in self.tables],
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self, a: str = "the plan's model", b: str = "this model") -> str:
        """A few lines: what differs, with the tables' largest differences."""
        if self.same:
            return f"{a} and {b} are the same model (fingerprint {self.fingerprints[0][:16]}...)"
        lines = [f"{a} ({self.fingerprints[0][:16]}...) and {b} "
                 f"({self.fingerprints[1][:16]}...) differ:"]

        def names(xs: Any) -> str:
            return ", ".join(xs)

        def arrows(es: Any) -> str:
            return ", ".join(f"{p} -> {c}" for p, c in es)

        if self.nodes_only_in_a:
            lines.append(f"  nodes only in {a}: {names(self.nodes_only_in_a)}")
        if self.nodes_only_in_b:
            lines.append(f"  nodes only in {b}: {names(self.nodes_only_in_b)}")
        if self.edges_only_in_a:
            lines.append(f"  edges only in {a}: {arrows(self.edges_only_in_a)}")
        if self.edges_only_in_b:
            lines.append(f"  edges only in {b}: {arrows(self.edges_only_in_b)}")
        if self.states_differ:
            lines.append(f"  states differ: {names(self.states_differ)}")
        if self.members[0] != self.members[1]:
            lines.append(f"  |Theta| = {self.members[0]} against {self.members[1]} (tables "
                         "not compared)")
        for t in self.tables:
            lines.append(f"  table of {t.node}: max |difference| {_fmt(t.max_abs_difference)} "
                         f"at {t.where}")
        if len(lines) == 1:
            lines.append("  only in how the tables were rounded below float64's precision")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _members_sorted(theta: Theta, nodes: list[str], order: Mapping[str, tuple[str, ...]]
                    ) -> list[dict[str, CPD]]:
    """The members' tables of ``nodes`` with parent axes in ``order``, in canonical order."""
    aligned = [{v: _align(m[v], order[v]) for v in nodes} for m in theta.members]
    keys = [canonical_json({v: (c.table + 0.0).tolist() for v, c in m.items()})
            for m in aligned]
    return [aligned[k] for k in sorted(range(len(aligned)), key=keys.__getitem__)]


def model_diff(a: Theta, b: Theta) -> ModelDiff:
    """Compare two models by name (see the module's documentation).

    Parameters
    ----------
    a, b : Theta
        Typically the model a plan was made for and the auditor's.

    Returns
    -------
    ModelDiff
    """
    a, b = check_theta(a, "a"), check_theta(b, "b")
    fps = (a.fingerprint(), b.fingerprint())
    if fps[0] == fps[1]:
        return ModelDiff(True, fps, members=(len(a), len(b)))
    na, nb = set(a.nodes), set(b.nodes)
    ea, eb = set(a.edges), set(b.edges)
    both = sorted(na & nb)
    states_differ = tuple(v for v in both if a.states[v] != b.states[v])
    tables: list[TableDiff] = []
    comparable = [v for v in both if v not in states_differ
                  and set(a.parents[v]) == set(b.parents[v])
                  and all(a.states[p] == b.states[p] for p in a.parents[v])]
    if len(a) == len(b) and comparable:
        order = {v: tuple(sorted(a.parents[v])) for v in comparable}
        ma = _members_sorted(a, comparable, order)
        mb = _members_sorted(b, comparable, order)
        for v in comparable:
            worst, where = 0.0, ""
            for x, y in zip(ma, mb, strict=True):
                d = np.abs(x[v].table - y[v].table)
                if d.size and float(d.max()) > worst:
                    idx = np.unravel_index(int(np.argmax(d)), d.shape)
                    worst, where = float(d.max()), _entry(a, v, order[v], idx)
            if worst > 0:
                tables.append(TableDiff(v, worst, where))
    tables.sort(key=lambda t: (-t.max_abs_difference, t.node))
    return ModelDiff(
        False, fps, tuple(sorted(na - nb)), tuple(sorted(nb - na)),
        tuple(sorted(ea - eb)), tuple(sorted(eb - ea)), states_differ, (len(a), len(b)),
        tuple(tables))


def _entry(theta: Theta, node: str, parents: tuple[str, ...], idx: tuple[Any, ...]) -> str:
    """``P(node = s | p1 = t1, ...)`` for the table index ``idx`` (axes ``(node, *parents)``)."""
    head = f"{node} = {theta.states[node][int(idx[0])]}"
    given = ", ".join(f"{p} = {theta.states[p][int(k)]}" for p, k in zip(parents, idx[1:],
                                                                            strict=True))
    return f"P({head} | {given})" if given else f"P({head})"
