"""The canonical JSON text a model's fingerprint hashes, written in time linear in the model.

:meth:`quiltpriv.model.network.Theta.canonical_document` defines the text: ``json.dumps`` of
``{"format", "nodes": {name: {"parents", "states"}}, "members": [{name: table}]}`` with sorted
keys, no spaces, ASCII only, each table with its parent axes in sorted order (as nested lists
of Python floats, ``-0.0`` written ``0.0``) and the members sorted by their own text. Building
that document as Python objects and dumping it costs seconds on a 500,000-step chain (a dict
and a nested list per node and member, then the encoder over all of them, twice when members
are sorted). :func:`canonical_text` writes the same characters from the parts directly: the
text of each distinct table (and each distinct list of states) is made once, and the per-node
work is C-level joins of those texts, so the fingerprint of a long time series, whose steps
share a few tables, costs a fraction of reading it. ``tests/model/test_fingerprint_text.py``
checks it character for character against the document's ``json.dumps``.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from operator import attrgetter, methodcaller
from typing import Any

from quiltpriv.errors import ModelError
from quiltpriv.utils.serialize import canonical_json

__all__ = ["canonical_text"]

_encode = json.encoder.encode_basestring_ascii  # what json.dumps(ensure_ascii=True) writes
_table_of = attrgetter("table")
_parents_of = attrgetter("parents")
_layout_of = attrgetter("shape", "dtype")


_dumps = canonical_json


def _texts(keys: Sequence[Any], cache: dict[Any, str], make: Callable[[int], str]) -> list[str]:
    """``cache[keys[j]]`` for every ``j``, made by ``make(j)`` (once per distinct key) for the
    keys not yet cached; C-level passes over ``keys`` only."""
    where = dict(zip(keys, range(len(keys)), strict=True))  # a position of each distinct key
    for key in where.keys() - cache.keys():
        cache[key] = make(where[key])
    return list(map(cache.__getitem__, keys))


def _member_text(cpds: Mapping[str, Any], names: list[str], sorted_parents: list[tuple[str, ...]],
                 align: Callable[[Any, tuple[str, ...]], Any], keys: list[str],
                 cache: dict[Any, str]) -> str:
    """One member's ``{name: table}`` text (names sorted), each distinct table written once."""
    chosen = list(map(cpds.__getitem__, names))
    if list(map(_parents_of, chosen)) != sorted_parents:  # some parent axes to reorder
        chosen = list(map(align, chosen, sorted_parents))
    tables = list(map(_table_of, chosen))
    bytes_of = list(map(methodcaller("tobytes"), tables))  # equal bytes, shape, dtype: equal
    table_keys = list(zip(bytes_of, map(_layout_of, tables), strict=True))
    texts = _texts(table_keys, cache, lambda j: _dumps((tables[j] + 0.0).tolist()))
    return "{" + ",".join(map("".join, zip(keys, repeat(":"), texts))) + "}"


def canonical_text(fmt: str, nodes: Sequence[str], states: Mapping[str, Sequence[str]],
                   parents: Mapping[str, Sequence[str]], members: Sequence[Mapping[str, Any]],
                   align: Callable[[Any, tuple[str, ...]], Any]) -> str:
    """The canonical document's text (see the module docstring).

    Parameters
    ----------
    fmt : str
        The fingerprint format (:data:`quiltpriv.model.network.FINGERPRINT_FORMAT`).
    nodes, states, parents, members
        Theta's parts: node names, each node's canonical state names (strings), parents and,
        per member, a CPD (``.parents``, ``.table``) per node.
    align : callable
        ``align(cpd, parents)``: the CPD with its parent axes in the order ``parents``.
    """
    if not isinstance(fmt, str) or not callable(align):
        raise ModelError("canonical_text takes the fingerprint format (a string), Theta's "
                         "parts and an align function")
    was_enabled = gc.isenabled()
    gc.disable()  # millions of new strings and no cycle: collections would rescan Theta
    try:
        return _text(fmt, nodes, states, parents, members, align)
    except (TypeError, KeyError, AttributeError, ValueError) as err:
        # the parts of a Theta are checked when it is built: anything else is refused whole
        raise ModelError(f"canonical_text takes a Theta's checked parts "
                         f"({type(err).__name__}: {err})") from None
    finally:
        if was_enabled:
            gc.enable()


def _text(fmt: str, nodes: Sequence[str], states: Mapping[str, Sequence[str]],
          parents: Mapping[str, Sequence[str]], members: Sequence[Mapping[str, Any]],
          align: Callable[[Any, tuple[str, ...]], Any]) -> str:
    names = sorted(nodes)
    keys = list(map(_encode, names))
    sorted_parents = [tuple(p) if len(p) < 2 else tuple(sorted(p))
                      for p in map(parents.__getitem__, names)]
    cache: dict[Any, str] = {}
    members_text = sorted((_member_text(m, names, sorted_parents, align, keys, cache), k)
                          for k, m in enumerate(members))
    state_lists = list(map(tuple, map(states.__getitem__, names)))
    state_texts = _texts(state_lists, {}, lambda j: _dumps(list(state_lists[j])))
    parent_texts = map(",".join, map(map, repeat(_encode), sorted_parents))
    node_texts = map("".join, zip(keys, repeat(':{"parents":['), parent_texts,
                                  repeat('],"states":'), state_texts, repeat("}")))
    return ('{"format":' + _encode(fmt) + ',"members":['
            + ",".join(text for text, _ in members_text) + '],"nodes":{'
            + ",".join(node_texts) + "}}")
