"""Names of states and nodes: the canonical name of a state, and hints for an unknown node.

Every :class:`~quiltpriv.model.network.Theta` holds its states under their canonical names
(:func:`state_name`), so a model declared with float states, with a numpy array of them or
with their names is the same model. An unknown node name is answered with the network's nodes
(a small network) or the names closest to it (a large one).
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterable, Sequence
from numbers import Real
from typing import Any

import numpy as np

from quiltpriv.errors import ModelError

__all__ = ["MAX_LISTED_NODES", "state_name"]


def state_name(value: Any) -> str:
    """The canonical name of a state: a string is kept, a number becomes its shortest decimal.

    ``0.35 -> "0.35"``, ``3.0 -> "3"``, ``np.float64(0.4) -> "0.4"``, ``-0.0 -> "0"``.
    Distinct floats get distinct names (Python's ``repr`` of a float round-trips). Every Theta
    holds its states under these names, so a model declared with float states, with a numpy
    array of them or with their names is the same model, and keeps its fingerprint through
    :func:`quiltpriv.model.loading.theta_to_dict` (which writes the names).

    Raises
    ------
    ModelError
        For a value that is neither a string nor a finite number (booleans included).
    """
    if isinstance(value, str):
        return str(value)  # np.str_ becomes str
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real | np.number):
        raise ModelError(f"a state must be a string or a number, got {value!r}")
    if isinstance(value, int | np.integer):
        return str(int(value))
    x = float(value)
    if not math.isfinite(x):
        raise ModelError(f"a state must be finite, got {value!r}")
    if x == 0.0:
        return "0"  # one name for 0.0 and -0.0
    text = repr(x)
    return text[:-2] if text.endswith(".0") else text


def _state_names(node: str, states: Iterable[Any]) -> tuple[str, ...]:
    """The canonical names of one node's states, refusing two states with one name."""
    names = tuple(state_name(s) for s in states)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ModelError(f"node {node!r}: state(s) {', '.join(dup)} listed twice (as names, "
                         "numbers 1 and 1.0 are the same state)")
    return names


#: A network with at most this many nodes lists them all in an unknown-name error; a larger one
#: lists only the closest names (a 441-node grid would otherwise print 441 names).
MAX_LISTED_NODES = 12


def _known_hint(missing: Sequence[object], nodes: tuple[str, ...]) -> str:
    """``(nodes: a, b, c)`` for a small network, else the names closest to the missing ones."""
    if len(nodes) <= MAX_LISTED_NODES:
        return f"(nodes: {', '.join(nodes)})"
    close = dict.fromkeys(m for name in missing[:5] for m in _closest(str(name), nodes))
    if not close:
        return f"(it has {len(nodes)} nodes, none with a similar name)"
    return f"(closest: {', '.join(close)}; {len(nodes)} nodes in all)"


def _closest(name: str, nodes: tuple[str, ...], n: int = 3) -> list[str]:
    """The ``n`` nodes most like ``name`` (difflib's ratio >= 0.6, as ``get_close_matches``).

    Ties go to the longer common prefix, then to network order: for ``x0l`` among ``x01 ..
    x441``, ``x01`` comes before ``x90``, which difflib alone would rank first.
    """
    scored = []
    for k, v in enumerate(nodes):
        ratio = difflib.SequenceMatcher(None, name, v).ratio()
        if ratio >= 0.6:
            scored.append((-ratio, -len(os.path.commonprefix([name, v])), k, v))
    return [v for *_, v in sorted(scored)[:n]]
