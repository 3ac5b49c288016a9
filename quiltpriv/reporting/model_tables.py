"""The model's provenance and conditional tables, rendered for a person (audit report).

A model file is untrusted input: its node, state and member names and every value of its
provenance record (any JSON: texts, numbers, lists, nested objects) reach the page only through
:func:`html.escape` (:func:`quiltpriv.utils.format.escape`), and nesting and size are bounded so
that a hostile record cannot make the page unbounded.

* :func:`provenance_html` shows the provenance (:mod:`quiltpriv.model.provenance`) as a
  definition list: a list of scalars as one line, a list of pairs named ``...edges`` as
  arrows, an object whose values are objects of a few fields (the learned parameters' bins)
  as a table, other objects as nested lists.
* :func:`cpd_tables` / :func:`cpd_tables_html` give each node's table ``P(node | parents)``
  with one column per parent configuration, as the explorer's table editor lays it out: the
  first member's probabilities and, when Theta has several members (a learned Theta's point
  estimate and bootstrap resamples), each entry's least and largest value over them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from quiltpriv.errors import ParameterError
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.format import escape as _e
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import jsonable as _jsonable

__all__ = ["MAX_PROVENANCE_DEPTH", "MAX_TABLE_ENTRIES", "cpd_tables", "cpd_tables_html",
           "provenance_html"]

#: Deepest nesting of the provenance record rendered as lists (deeper: shown as JSON text).
MAX_PROVENANCE_DEPTH = 6
#: Most table entries (over all nodes, one member) shown in full; the other nodes' tables are
#: left out with a note (their min/max per member stay in the model summary).
MAX_TABLE_ENTRIES = 20_000
#: Most fields of an object rendered as a table of objects (more: nested lists).
_MAX_TABLE_FIELDS = 8
_HASH = re.compile(r"[0-9a-f]{40,128}")


# -- provenance --------------------------------------------------------------------------------


def _label(key: Any) -> str:
    """A field name for a person: ``data_sha256`` -> ``data sha256`` (escaped)."""
    return _e(str(key).replace("_", " "))


def _scalar(v: Any) -> str | None:
    """A JSON scalar as escaped HTML, or None for a list or object."""
    if v is None:
        return "<i>none</i>"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return _e(v)
    if isinstance(v, float):
        return _e(repr(v) if math.isfinite(v) else v)
    if isinstance(v, str):
        if _HASH.fullmatch(v):
            return f'<code class="hash">{_e(v)}</code>'
        return _e(v)
    return None


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, bool | int | float | str)


def _value_html(key: Any, v: Any, depth: int) -> str:
    s = _scalar(v)
    if s is not None:
        return s
    if depth >= MAX_PROVENANCE_DEPTH:
        import json

        return f"<code>{_e(json.dumps(_jsonable(v), ensure_ascii=False))}</code>"
    if isinstance(v, Sequence) and not isinstance(v, str):
        if not v:
            return "<i>none</i>"
        if all(_is_scalar(x) for x in v):
            return ", ".join(_scalar(x) or "" for x in v)
        if "edge" in str(key) and all(isinstance(x, Sequence) and not isinstance(x, str)
                                      and len(x) == 2 and all(_is_scalar(y) for y in x)
                                      for x in v):
            return ", ".join(f"{_scalar(a)} \u2192 {_scalar(b)}" for a, b in v)
        return ('<ol class="prov">' + "".join(f"<li>{_value_html(key, x, depth + 1)}</li>"
                                               for x in v) + "</ol>")
    if isinstance(v, Mapping):
        if not v:
            return "<i>none</i>"
        table = _objects_table(v, depth)
        return table if table is not None else _dl(v, depth + 1)
    return _e(v)


def _objects_table(v: Mapping[str, Any], depth: int) -> str | None:
    """An object whose values are objects sharing a few fields, as one table (or None)."""
    if len(v) < 2 or not all(isinstance(x, Mapping) and x for x in v.values()):
        return None
    fields: list[str] = []
    for x in v.values():
        for k in x:
            if k not in fields:
                fields.append(k)
    if len(fields) > _MAX_TABLE_FIELDS:
        return None
    head = "<th></th>" + "".join(f"<th>{_label(f)}</th>" for f in fields)
    rows = "".join(
        f"<tr><th>{_e(name)}</th>" + "".join(
            f"<td>{_value_html(f, x[f], depth + 2) if f in x else ''}</td>" for f in fields)
        + "</tr>" for name, x in v.items())
    return (f'<div class="wide"><table class="prov"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>")


def _dl(v: Mapping[str, Any], depth: int) -> str:
    items = "".join(f"<dt>{_label(k)}</dt><dd>{_value_html(k, x, depth)}</dd>"
                    for k, x in v.items())
    return f'<dl class="prov">{items}</dl>'


def provenance_html(prov: Mapping[str, Any] | None) -> str:
    """Where Theta came from, for a person: a definition list (see the module text).

    ``prov`` is a provenance record (:func:`quiltpriv.model.provenance.provenance_dict`), or
    None when there is none.
    """
    if prov is not None and not isinstance(prov, Mapping):
        raise ParameterError(f"a provenance record must be a mapping or None, got "
                             f"{type(prov).__name__}")
    if not prov:
        return ("<p>Provenance: not recorded (the model was not built or learned by "
                "quiltpriv, or it was edited).</p>")
    return f'<h3>Provenance</h3><div class="provenance">{_dl(prov, 0)}</div>'


# -- conditional tables --------------------------------------------------------------------


def cpd_tables(theta: Theta) -> list[dict[str, Any]]:
    """Each node's table as JSON: rows are the node's states, columns parent configurations.

    Per node: ``node``, ``parents``, ``columns`` (each column's parent states, in the order of
    ``parents``), ``member`` (the member shown: the first), ``values`` (its probabilities,
    ``values[row][column]``) and, with several members, ``min`` and ``max`` (each entry's
    least and largest value over them). ``values`` is None for the tables beyond
    :data:`MAX_TABLE_ENTRIES` entries in all.
    """
    theta = check_theta(theta)
    out = []
    budget = MAX_TABLE_ENTRIES
    for v in theta.nodes:
        parents = list(theta.parents[v])
        k = theta.cardinality[v]
        size = math.prod(theta.cardinality[p] for p in parents) * k
        entry: dict[str, Any] = {"node": v, "parents": parents, "member": theta.names[0]}
        if size > budget:
            entry.update(columns=None, values=None,
                         omitted=f"{size} entries; the report shows {MAX_TABLE_ENTRIES} in all")
            out.append(entry)
            continue
        budget -= size
        entry["columns"] = [[_jsonable(theta.states[p][i]) for p, i in zip(parents, c,
                                                                            strict=True)]
                            for c in np.ndindex(*(theta.cardinality[p] for p in parents))]
        flat = theta.members[0][v].table.reshape(k, -1)
        entry["values"] = flat.tolist()
        if len(theta) > 1:
            every = np.stack([m[v].table.reshape(k, -1) for m in theta.members])
            entry["min"] = every.min(axis=0).tolist()
            entry["max"] = every.max(axis=0).tolist()
        out.append(entry)
    return out


def _cell(value: float, lo: float | None, hi: float | None) -> str:
    text = f'<span title="{_e(repr(value))}">{_e(_fmt(value))}</span>'
    if lo is not None and hi is not None and lo != hi:
        text += (f'<br><small class="range" title="{_e(repr(lo))} to {_e(repr(hi))}">'
                 f"{_e(_fmt(lo))}\u2013{_e(_fmt(hi))}</small>")
    return f'<td class="num">{text}</td>'


def cpd_tables_html(theta: Theta) -> str:
    """The tables of :func:`cpd_tables` as HTML, one per node (everything escaped)."""
    theta = check_theta(theta)
    tables = cpd_tables(theta)
    many = len(theta) > 1
    parts = []
    for t in tables:
        v = t["node"]
        given = f" | {', '.join(_e(p) for p in t['parents'])}" if t["parents"] else ""
        title = f"<h4>P(<code>{_e(v)}</code>{given})</h4>"
        if t["values"] is None:
            parts.append(f"{title}<p>Not shown: {_e(t['omitted'])} (see the model file).</p>")
            continue
        cols = t["columns"]
        if t["parents"]:  # one header row per parent; the first column holds v's states
            head = "".join(
                f"<tr><th>{_e(p)} \u2192</th>" + "".join(f"<th>{_e(c[j])}</th>" for c in cols)
                + "</tr>" for j, p in enumerate(t["parents"]))
        else:
            head = f"<tr><th>{_e(v)} \u2193</th><th>P</th></tr>"
        rows = []
        for r, state in enumerate(theta.states[v]):
            cells = "".join(
                _cell(x, t["min"][r][c] if many else None, t["max"][r][c] if many else None)
                for c, x in enumerate(t["values"][r]))
            rows.append(f"<tr><th>{_e(state)}</th>{cells}</tr>")
        parts.append(f'{title}<div class="wide"><table class="cpd" data-node="{_e(v)}">'
                     f"<thead>{head}</thead><tbody>{''.join(rows)}</tbody></table></div>")
    how = ("<p>Each table is P(node | parents): one row per state of the node, one column per "
           "configuration of the parents (their states in the header rows)")
    if many:
        intro = (f"{how}, in member <code>{_e(theta.names[0])}</code> (the first of "
                 f"\u0398's {len(theta)} members; for a learned \u0398 the point estimate). "
                 "Under an entry: its least and largest value over the members, where they "
                 "differ (every influence is the largest over them).</p>")
    else:
        intro = f"{how}; hover over an entry for every digit.</p>"
    return f'<h3>Conditional probability tables</h3>{intro}{"".join(parts)}'
