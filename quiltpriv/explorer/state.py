"""The explorer's model, its edits, and the requests of its JSON API parsed into checked form.

Nothing here knows about HTTP. Every request body is untrusted: :func:`parse_plan_request`,
:func:`parse_cell_edit`, ... turn it into a checked value once (the command line's own query
parsing, :func:`quiltpriv.frontend.options.query_from_options`, reads the query, so the predicate
language, declared domains and every numeric check are the CLI's), and the rest of the code
trusts only that value.

Edits never change a model in place: :class:`Theta` is immutable, so an edit builds a new one
with :func:`quiltpriv.model.network.theta_from_tables` (which validates the tables as a model file's
are validated) and :class:`ModelState` keeps the previous ones for undo.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from quiltpriv.errors import ModelError, ParameterError, QueryError
from quiltpriv.frontend.options import QUERY_KINDS, parse_number, query_from_options
from quiltpriv.model.cpd_tables import CPD_SUM_TOLERANCE
from quiltpriv.model.loading import model_dirs, theta_to_dict
from quiltpriv.model.network import CPD, Theta, theta_from_tables
from quiltpriv.model.provenance import provenance_dict
from quiltpriv.queries.query import Query
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.io import check_output_path, write_text_atomic
from quiltpriv.utils.validation import MAX_RECORDS, check_scalar

#: Most edits kept for undo.
MAX_UNDO = 200
#: Default and largest time budget of one plan, in seconds.
DEFAULT_TIME_LIMIT = 30.0
MAX_TIME_LIMIT = 3600.0
#: Largest factor by which a dependency's strength may be scaled.
MAX_STRENGTH = 100.0

PLAN_FIELDS = ("sensitive", "epsilon", "query", "time_limit", "compare")
#: The query's fields, named as the command line's options (``record_states`` is
#: ``--record-states``); their values are the options' texts.
QUERY_FIELDS = ("kind", "attributes", "records", "where", "bounds", "weights", "categories",
                "record_states", "catch_all")


# -- checked request values ------------------------------------------------------------------


def _object(body: Any, fields: Sequence[str], what: str) -> dict[str, Any]:
    """``body`` as a JSON object holding only ``fields``."""
    if not isinstance(body, dict):
        raise ParameterError(f"{what}: expected a JSON object, got {type(body).__name__}")
    unknown = [k for k in body if k not in fields]
    if unknown:
        raise ParameterError(f"{what}: unknown field(s) {', '.join(map(repr, unknown))} "
                             f"(known: {', '.join(fields)})")
    return body


def _text(value: Any, name: str) -> str | None:
    """An optional text field: a string, or null/absent/empty for "not given"."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParameterError(f"{name} must be a text, got {type(value).__name__}")
    return value if value.strip() else None


def _number(value: Any, name: str, **limits: Any) -> float:
    """A JSON number, or a numeric text read as the command line reads it; then checked."""
    if isinstance(value, str):
        return parse_number(value.strip(), name, **limits)
    return check_scalar(value, name, **limits)


def _names(value: Any, name: str) -> list[str]:
    """A list of names, or one text with names separated by commas (as on the CLI)."""
    if isinstance(value, str):
        return [s.strip() for s in value.split(",") if s.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParameterError(f"{name} must be a list of names or a text 'A1,A2'")
    if any("," in v for v in value):
        raise ParameterError(f"{name}: a name holding ',' cannot be given (the command line "
                             "separates names with ',')")
    return [v.strip() for v in value if v.strip()]


def parse_query(body: Any) -> tuple[Query, SimpleNamespace]:
    """The query of a request, read by the command line's own parser.

    Returns the query and the option values it was read from (for the equivalent command).
    """
    q = _object(body, QUERY_FIELDS, "query")
    kind = q.get("kind", "count")
    if kind not in QUERY_KINDS:
        raise QueryError(f"query kind must be one of {', '.join(QUERY_KINDS)}, got {kind!r}")
    records = q.get("records")
    if records is not None and not (isinstance(records, str) and not records.strip()):
        records = int(_number(records, "--records", integer=True, min_val=1,
                              max_val=MAX_RECORDS))
    else:
        records = None
    attrs = _names(q.get("attributes", []), "--attributes")
    ns = SimpleNamespace(
        query=kind, attributes=",".join(attrs) or None, records=records,
        where=_text(q.get("where"), "--where"), bounds=_text(q.get("bounds"), "--bounds"),
        weights=_text(q.get("weights"), "--weights"),
        domain=_text(q.get("categories"), "--categories"),
        record_states=_text(q.get("record_states"), "--record-states"),
        catch_all=_text(q.get("catch_all"), "--catch-all"))
    return query_from_options(ns), ns


@dataclass(frozen=True)
class PlanRequest:
    """A checked request to plan: the same inputs as ``quiltpriv plan``."""

    sensitive: tuple[str, ...]
    epsilon: float
    query: Query
    time_limit: float
    compare: bool
    options: SimpleNamespace

    @renamed_keywords(model="theta_name")
    def command(self, theta_name: str) -> str:
        """The equivalent ``quiltpriv plan`` command line (for the page to show), for the
        network named ``theta_name`` (a bundled name or a file; ``model`` is its deprecated
        name)."""
        o = self.options
        words = ["quiltpriv", "plan", theta_name, "--sensitive", ",".join(self.sensitive),
                 "--query", o.query]
        for opt, value in (("--attributes", o.attributes), ("--records", o.records),
                           ("--bounds", o.bounds), ("--weights", o.weights),
                           ("--where", o.where), ("--categories", o.domain),
                           ("--record-states", o.record_states), ("--catch-all", o.catch_all)):
            if value is not None:
                words += [opt, str(value)]
        words += ["--epsilon", f"{self.epsilon!r}", "--time-limit", f"{_fmt(self.time_limit)}"]
        return shlex.join(words)


def parse_plan_request(body: Any, theta: Theta) -> PlanRequest:
    """Check a plan request against ``theta``; raise a QuiltPrivError naming the problem."""
    b = _object(body, PLAN_FIELDS, "plan request")
    if "sensitive" not in b or "epsilon" not in b or "query" not in b:
        raise ParameterError("plan request: give sensitive, epsilon and query")
    sensitive = _names(b["sensitive"], "sensitive")
    if not sensitive:
        raise ParameterError("choose at least one sensitive attribute")
    sens = theta.check_sensitive(sensitive)
    eps = float(_number(b["epsilon"], "epsilon", min_val=0.0, include_boundaries="right"))
    query, options = parse_query(b["query"])
    theta.check_nodes(query.attributes, "query attribute")
    limit = b.get("time_limit", DEFAULT_TIME_LIMIT)
    limit = float(_number(limit, "time_limit", min_val=0.0, max_val=MAX_TIME_LIMIT,
                          include_boundaries="right"))
    compare = b.get("compare", True)
    if not isinstance(compare, bool):
        raise ParameterError("compare must be true or false")
    return PlanRequest(sens, eps, query, limit, compare, options)


def _index(value: Any, name: str, size: int) -> int:
    if value is None:
        raise ParameterError(f"give {name}")
    return int(_number(value, name, integer=True, min_val=0, max_val=size - 1))


#: The ``member`` of an edit request that applies it to every member of Theta.
ALL_MEMBERS = "all"


def _members(value: Any, theta: Theta) -> tuple[int, ...]:
    """An edit's members: one index, or every member for :data:`ALL_MEMBERS`."""
    if value == ALL_MEMBERS:
        return tuple(range(len(theta)))
    try:
        return (_index(value, "member", len(theta)),)
    except ParameterError as exc:
        raise ParameterError(f"{exc} (or \"{ALL_MEMBERS}\" for every member)") from None


def members_text(members: Sequence[int], theta: Theta) -> str:
    """How an edit's description names its members (undo history, the page)."""
    if len(members) == len(theta) and len(theta) > 1:
        return f"in all {len(theta)} members"
    return f"in member {', '.join(str(m) for m in members)}"


@dataclass(frozen=True)
class CellEdit:
    """Set ``P(node = row | parents = column)`` to ``value`` in each of ``members``.

    ``members`` is one member's index, or every member's (a request's ``"member": "all"``):
    each member's other entries of the column are then rescaled in that member's own
    proportions (:func:`set_cell`).
    """

    members: tuple[int, ...]
    node: str
    column: int
    row: int
    value: float


def parse_cell_edit(body: Any, theta: Theta) -> CellEdit:
    b = _object(body, ("member", "node", "column", "row", "value"), "cell edit")
    node = b.get("node")
    if not isinstance(node, str):
        raise ParameterError("cell edit: node must be a node name")
    (node,) = theta.check_nodes([node], "node")
    columns = math.prod(theta.cardinality[p] for p in theta.parents[node])
    return CellEdit(
        members=_members(b.get("member", 0), theta), node=node,
        column=_index(b.get("column"), "column", columns),
        row=_index(b.get("row"), "row", theta.cardinality[node]),
        value=float(_number(b.get("value"), "value", min_val=0.0, max_val=1.0)))


@dataclass(frozen=True)
class StrengthEdit:
    """Scale how strongly ``child`` depends on its parent ``parent`` in each of ``members``."""

    members: tuple[int, ...]
    parent: str
    child: str
    factor: float


def parse_strength_edit(body: Any, theta: Theta) -> StrengthEdit:
    b = _object(body, ("member", "parent", "child", "factor"), "strength edit")
    parent, child = b.get("parent"), b.get("child")
    if not isinstance(parent, str) or not isinstance(child, str):
        raise ParameterError("strength edit: parent and child must be node names")
    theta.check_nodes([parent, child], "node")
    if parent not in theta.parents[child]:
        raise ModelError(f"{parent!r} is not a parent of {child!r} (no edge {parent} -> "
                         f"{child})")
    return StrengthEdit(_members(b.get("member", 0), theta), parent, child,
                        float(_number(b.get("factor"), "factor", min_val=0.0,
                                      max_val=MAX_STRENGTH)))


# -- edits -------------------------------------------------------------------------------------


def with_table(theta: Theta, member: int, node: str, table: np.ndarray) -> Theta:
    """``theta`` with member ``member``'s CPD of ``node`` replaced by ``table``."""
    return with_tables(theta, node, {member: table})


def with_tables(theta: Theta, node: str, tables: dict[int, np.ndarray]) -> Theta:
    """``theta`` with the CPD of ``node`` replaced in each member ``k`` of ``tables``.

    Each new table is checked as a model file's are (shape, finite, no negative entry, no
    subnormal one, columns summing to one within
    :data:`~quiltpriv.model.cpd_tables.CPD_SUM_TOLERANCE`)
    but not renormalised, and every other table is kept as it is: an edit changes exactly
    the entries it names (renormalising would move other columns by an ulp on every edit).
    """
    members = [dict(m) for m in theta.members]
    what = f"the CPD of {node!r}"
    for k, table in tables.items():
        shape = theta.members[k][node].table.shape
        arr = np.array(table, dtype=float).reshape(shape)
        where = f"{what} (member {k})" if len(theta) > 1 else what
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ParameterError(f"{where} would hold a negative or non-finite probability")
        if np.any((arr > 0) & (arr < np.finfo(np.float64).tiny)):
            raise ParameterError(f"{where} would hold a probability below float64's normal "
                                 "range; use 0 for an impossible state")
        sums = arr.sum(axis=0)
        if np.any(np.abs(sums - 1.0) > CPD_SUM_TOLERANCE):
            raise ParameterError(f"{where}: a column would not sum to one")
        arr.setflags(write=False)
        members[k][node] = CPD(node, theta.parents[node], arr)
    return Theta(theta.nodes, theta.states, theta.parents, members, theta.names)


def _cell_table(table: np.ndarray, edit: CellEdit) -> np.ndarray:
    """One member's table with the edit's cell set and its column's others rescaled."""
    table = np.array(table, dtype=float)
    k = table.shape[0]
    flat = table.reshape(k, -1)
    col = flat[:, edit.column]
    others = np.arange(k) != edit.row
    rest = 1.0 - edit.value
    total = float(col[others].sum())
    new = col.copy()
    new[others] = col[others] * (rest / total) if total > 0 else rest / (k - 1)
    new[edit.row] = edit.value
    flat[:, edit.column] = new
    return flat.reshape(table.shape)


def set_cell(theta: Theta, edit: CellEdit) -> Theta:
    """Set one probability in each edited member; the column's other entries are rescaled.

    In each member the others keep that member's proportions (when they are all 0 the rest
    is shared equally), so with every member edited the entry is the same in all of them while
    the rest of the column keeps each member's own shape.
    """
    if theta.cardinality[edit.node] == 1:
        if edit.value != 1.0:
            raise ParameterError(f"{edit.node!r} has one state: its probability is 1")
        return theta
    return with_tables(theta, edit.node, {
        m: _cell_table(theta.members[m][edit.node].table, edit) for m in edit.members})


def _strength_limit(table: np.ndarray, axis: int) -> float:
    """The largest factor keeping ``m + factor * (p - m)`` (``m``: mean over ``axis``) >= 0."""
    table = np.asarray(table, dtype=float)
    mean = table.mean(axis=axis, keepdims=True)
    diff = table - mean
    neg = diff < 0
    if not np.any(neg):
        return math.inf
    return float(np.min(np.broadcast_to(mean, table.shape)[neg] / -diff[neg]))


def scale_strength(theta: Theta, edit: StrengthEdit) -> Theta:
    """Scale the dependency ``parent -> child`` by ``factor`` in each edited member.

    Each CPD entry becomes ``m + factor * (p - m)``, where ``m`` is its mean over the parent's
    states (in its own member): 0 makes the child independent of that parent (given its other
    parents), 1 changes nothing, above 1 strengthens the dependency as far as every entry
    stays >= 0 (in every edited member).
    """
    axis = 1 + theta.parents[edit.child].index(edit.parent)
    tables: dict[int, np.ndarray] = {}
    for m in edit.members:
        table = np.asarray(theta.members[m][edit.child].table, dtype=float)
        mean = table.mean(axis=axis, keepdims=True)
        new = mean + edit.factor * (table - mean)
        if np.any(new < 0):
            limit = min(_strength_limit(theta.members[j][edit.child].table, axis)
                        for j in edit.members)
            where = " in every edited member" if len(edit.members) > 1 else ""
            raise ParameterError(f"a factor of {_fmt(edit.factor)} makes a probability of "
                                 f"{edit.child!r} negative; at most {_fmt(limit)} is possible "
                                 f"for {edit.parent} -> {edit.child}{where}")
        tables[m] = np.clip(new, 0.0, 1.0)
    return with_tables(theta, edit.child, tables)


# -- the model being explored ---------------------------------------------------------------


class ModelState:
    """The current Theta, the edits made so far (for undo) and the files never to overwrite.

    Thread-safe: the server's request threads and its planning threads share it.
    """

    def __init__(self, theta: Theta, spec: str, sources: Sequence[str | os.PathLike[str]] = ()
                 ) -> None:
        self._lock = threading.Lock()
        self._theta = theta
        self._undo: list[tuple[Theta, str]] = []
        self._history: list[str] = []
        self.spec = spec
        self.original = theta.fingerprint()
        # Where the model as loaded came from; an edited Theta has no provenance of its own.
        self.provenance = provenance_dict(theta)
        self.sources = tuple(Path(os.path.realpath(p)) for p in sources)

    @property
    def theta(self) -> Theta:
        with self._lock:
            return self._theta

    @property
    def history(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._history)

    def apply(self, edit: Callable[[Theta], Theta], description: str) -> Theta:
        """Apply ``edit`` to the current Theta (an error leaves everything as it was)."""
        with self._lock:
            new = edit(self._theta)
            if new is not self._theta:
                self._undo.append((self._theta, description))
                del self._undo[:-MAX_UNDO]
                self._history.append(description)
                self._theta = new
            return new

    def undo(self) -> Theta:
        with self._lock:
            if not self._undo:
                raise ParameterError("nothing to undo")
            self._theta, _ = self._undo.pop()
            if self._history:
                self._history.pop()
            return self._theta

    @property
    def undo_depth(self) -> int:
        with self._lock:
            return len(self._undo)

    def protected(self, path: Path) -> bool:
        """True for a model file this session was loaded from (or a bundled model's file)."""
        real = Path(os.path.realpath(path))
        if real in self.sources:
            return True
        for src in self.sources:
            try:
                if real.exists() and os.path.samefile(real, src):
                    return True
            except OSError:
                pass
        return any(real.parent == Path(os.path.realpath(d)) for d in model_dirs())

    def check_output(self, path: Any, what: str) -> Path:
        """An output path: a text, not a model this session read, writable (``check_output_path``).

        Relative paths are relative to the folder the explorer was started in.
        """
        if not isinstance(path, str) or not path.strip():
            raise ParameterError(f"{what}: give a file path")
        target = check_output_path(path.strip(), what)
        if self.protected(target):
            raise ParameterError(f"{what} {path}: that is a model file this explorer read (or a "
                                 "bundled model); the original is never modified, choose "
                                 "another name")
        return target


def model_summary(state: ModelState, theta: Theta | None = None) -> dict[str, Any]:
    """What the page shows of the model: nodes, edges, members, edits, and its drawing."""
    from quiltpriv.reporting.drawing import dag_svg, layered_layout

    theta = theta or state.theta
    lay = layered_layout(theta)
    return {
        "spec": state.spec, "sources": [str(p) for p in state.sources],
        "fingerprint": theta.fingerprint(), "edited": theta.fingerprint() != state.original,
        "undo": state.undo_depth, "history": list(state.history),
        "members": list(theta.names),
        "nodes": [{"name": v, "states": [str(s) for s in theta.states[v]],
                   "parents": list(theta.parents[v]), "layer": lay.layer[v]}
                  for v in theta.nodes],
        "edges": [list(e) for e in theta.edges],
        "svg": dag_svg(theta, svg_id="dag-model", layout=lay),
        "provenance": state.provenance,
    }


#: Most CPD entries sent to the page for one node and member.
MAX_CPD_ENTRIES = 200_000


def cpd_view(theta: Theta, node: Any, member: Any) -> dict[str, Any]:
    """One node's CPD of one member as rows (node states) x columns (parent configurations)."""
    if not isinstance(node, str):
        raise ParameterError("node must be a node name")
    (node,) = theta.check_nodes([node], "node")
    m = _index(member, "member", len(theta))
    table = theta.members[m][node].table
    parents = theta.parents[node]
    flat = table.reshape(table.shape[0], -1)
    if flat.size > MAX_CPD_ENTRIES:
        raise ParameterError(f"the CPD of {node!r} has {flat.size} entries, more than the "
                             f"{MAX_CPD_ENTRIES} the page shows; edit it in a model file")
    columns = [list(c) for c in np.ndindex(*(theta.cardinality[p] for p in parents))]
    # Each entry's least and largest value over the members: how far Theta's members
    # disagree on it (equal to the table itself when Theta has one member).
    every = np.stack([mm[node].table.reshape(flat.shape) for mm in theta.members])
    return {
        "node": node, "member": m, "member_name": theta.names[m],
        "states": [str(s) for s in theta.states[node]],
        "parents": [{"name": p, "states": [str(s) for s in theta.states[p]]} for p in parents],
        "columns": columns, "table": flat.tolist(),
        "min": every.min(axis=0).tolist(), "max": every.max(axis=0).tolist(),
    }


# -- saving ------------------------------------------------------------------------------------


def model_json(theta: Theta) -> str:
    """The model in quiltpriv's JSON format (:func:`quiltpriv.model.loading.theta_to_dict`)."""
    return json.dumps(theta_to_dict(theta), indent=1, allow_nan=False) + "\n"


def model_bif(theta: Theta, member: int = 0) -> str:
    """One member of Theta as BIF text (pgmpy's writer), checked by reading it back.

    Raises
    ------
    ModelError
        The BIF text does not read back as the same network (state names BIF cannot hold, or
        probabilities it rounds).
    """
    import warnings

    from quiltpriv.utils.progress import quiet_tqdm_auto

    quiet_tqdm_auto()
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork
    from pgmpy.readwrite import BIFReader, BIFWriter

    states = {v: [str(s) for s in theta.states[v]] for v in theta.nodes}
    net = DiscreteBayesianNetwork()
    net.add_nodes_from(theta.nodes)
    net.add_edges_from(theta.edges)
    net.name = "quiltpriv_explorer"
    cpds = []
    for v in theta.nodes:
        t = theta.members[member][v].table
        ps = list(theta.parents[v])
        cpds.append(TabularCPD(v, t.shape[0], t.reshape(t.shape[0], -1),
                               evidence=ps or None,
                               evidence_card=[theta.cardinality[p] for p in ps] or None,
                               state_names={x: states[x] for x in [v, *ps]}))
    net.add_cpds(*cpds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = str(BIFWriter(net))
        try:
            back = BIFReader(string=text).get_model()
        except Exception as exc:  # the reader raises anything from pyparsing to KeyError
            raise ModelError(f"the model cannot be written as BIF ({exc}); save it as JSON"
                             ) from None
    from quiltpriv.model.network import theta_from_pgmpy

    again = theta_from_pgmpy(back)
    single = theta_from_tables(theta.edges, dict(theta.states),
                               [{v: theta.members[member][v].table for v in theta.nodes}],
                               parents_order=theta.parents)
    same = (set(again.nodes) == set(single.nodes) and set(again.edges) == set(single.edges)
            and all([str(s) for s in again.states[v]] == states[v] for v in theta.nodes))
    if same:
        for v in theta.nodes:
            a = again.members[0][v].table
            perm = [0] + [1 + again.parents[v].index(p) for p in theta.parents[v]]
            if not np.array_equal(np.transpose(a, perm), single.members[0][v].table):
                same = False
                break
    if not same:
        raise ModelError("the model does not survive a round trip through BIF (its state "
                         "names or probabilities cannot be written exactly); save it as JSON")
    return text


def save_model(state: ModelState, path: Any, member: Any = None) -> dict[str, Any]:
    """Write the current model to ``path`` (``.json``: all of Theta; ``.bif``: one member)."""
    target = state.check_output(path, "save as")
    theta = state.theta
    suffix = target.suffix.lower()
    if suffix == ".json":
        if member is not None:
            raise ParameterError("save as JSON writes every member of Theta; 'member' applies "
                                 "to BIF")
        text = model_json(theta)
    elif suffix == ".bif":
        if member is None and len(theta) > 1:
            raise ParameterError(f"a BIF file holds one network and Theta has {len(theta)} "
                                 "members: save as .json, or choose a member")
        m = 0 if member is None else _index(member, "member", len(theta))
        text = model_bif(theta, m)
    else:
        raise ParameterError(f"save as {path}: the file name must end in .json or .bif")
    write_text_atomic(target, text)
    return {"path": str(target), "fingerprint": theta.fingerprint(), "bytes": len(text)}


__all__ = ["ALL_MEMBERS", "CellEdit", "ModelState", "PlanRequest", "StrengthEdit", "cpd_view",
           "members_text", "model_bif", "model_json", "model_summary", "parse_cell_edit",
           "parse_plan_request", "parse_query", "parse_strength_edit", "save_model",
           "scale_strength", "set_cell", "with_table", "with_tables"]

