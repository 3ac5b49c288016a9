"""The factor algebra every Python inference path uses: a factor is a table with one axis per
variable, and these are its operations, written once.

A factor is ``(variables, table)``: ``table.shape[k]`` is the cardinality of ``variables[k]``
(an int node index, or a node name where :mod:`quiltpriv.inference.engines.elimination` works
on names). Optional leading *batch* axes (:mod:`quiltpriv.inference.attribute_joints`) come
before the variables' axes and are never summed. Every operation is a product or a sum of
non-negative numbers, so a zero stays exactly zero (the zero pattern decides infinite
influences, [ZOC22, Def. 8]); each works for any element type numpy multiplies and adds
(float64, or Python integers in exact arithmetic).

The compiled kernel (``quiltpriv/inference/_kernel.c``) has its own, in C.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

try:  # numpy's C einsum without the Python wrapper (sublist form); same results
    from numpy._core._multiarray_umath import c_einsum as _c_einsum
except ImportError:  # pragma: no cover - a numpy that moved it
    _c_einsum = np.einsum

__all__ = ["MAX_VARIABLES", "Factor", "broadcast", "broadcast_shape", "labelled_product_sum",
           "product_sum", "scope_of", "sum_to", "to_order"]

#: Most distinct variables one product may involve: numpy's einsum has 52 labels.
MAX_VARIABLES = 52

#: A factor over int node indices: its variables and its table (one axis each).
Factor = tuple[tuple[int, ...], np.ndarray]


def scope_of(factors: Sequence[tuple[Sequence[Hashable], Any]]) -> set[Any]:
    """Every variable of ``factors``."""
    out: set[Any] = set()
    for vs, _ in factors:
        out.update(vs)
    return out


def sum_to(table: np.ndarray, variables: Sequence[Hashable], keep: Collection[Hashable],
           n_batch: int = 0) -> np.ndarray:
    """Sum ``table`` (axes ``variables``, after ``n_batch`` batch axes) over every variable not
    in ``keep``; the kept axes stay in their order."""
    kept = keep if isinstance(keep, set | frozenset) else set(keep)
    axes = tuple(n_batch + k for k, u in enumerate(variables) if u not in kept)
    return table.sum(axis=axes) if axes else table


def to_order(table: np.ndarray, variables: Sequence[Hashable],
             nodes: Sequence[Hashable]) -> np.ndarray:
    """``table`` over ``variables`` restricted to ``nodes`` (the others summed out), its axes
    in the order of ``nodes``."""
    wanted = set(nodes)
    present = [u for u in variables if u in wanted]
    if len(present) != table.ndim:
        table = sum_to(table, variables, wanted)
    return np.transpose(table, [present.index(u) for u in nodes])


def broadcast_shape(sub: Sequence[Any], full: Sequence[Any],
                    cards: Sequence[int] | Mapping[Any, int],
                    batch: Sequence[int] = ()) -> list[int]:
    """The shape of a table over ``batch`` axes and ``sub`` (a subsequence of ``full``) that
    broadcasts against tables over ``full``: ``cards[u]`` for ``u`` in ``sub``, 1 elsewhere."""
    shape = [*batch] + [1] * len(full)
    j, off = 0, len(batch)
    for k, u in enumerate(full):
        if j < len(sub) and sub[j] == u:
            shape[k + off] = cards[u]
            j += 1
    return shape


def broadcast(table: np.ndarray, sub: Sequence[Hashable],
              full: Sequence[Hashable]) -> np.ndarray:
    """View ``table`` over ``sub`` (a subsequence of ``full``) broadcastable over ``full``."""
    return table.reshape(broadcast_shape(sub, full, dict(zip(sub, table.shape, strict=True))))


def product_sum(factors: Sequence[tuple[Sequence[Hashable], np.ndarray]],
                every: Sequence[Hashable], out: Sequence[Hashable], *,
                optimize: bool = False) -> np.ndarray:
    """Multiply ``factors`` and sum out every variable not in ``out``, in one einsum; the
    result's axes follow ``out``.

    ``every`` lists every variable of the factors (each gets the einsum label of its
    position): at most :data:`MAX_VARIABLES`, which callers check first, refusing in their
    own terms. ``optimize``: let numpy choose a pairwise contraction order (worth it for more
    than two factors of some size; the same sums, rounded in another order).
    """
    if len(every) > MAX_VARIABLES:
        raise ValueError(f"a product of {len(every)} variables (einsum takes {MAX_VARIABLES})")
    if not factors:
        return np.ones(())
    label = {u: k for k, u in enumerate(every)}
    operands: list[Any] = []
    for vs, t in factors:
        operands += [t, [label[u] for u in vs]]
    return np.einsum(*operands, [label[u] for u in out], optimize=optimize)


def labelled_product_sum(factors: Sequence[Factor], label: Mapping[int, int],
                         out: Sequence[int]) -> np.ndarray:
    """:func:`product_sum` with one fixed einsum label per variable (``label``, below
    :data:`MAX_VARIABLES`), kept over a whole elimination so no step relabels: numpy's C
    einsum, without its Python wrapper (the bucket engine's hot path)."""
    operands: list[object] = []
    for vs, t in factors:
        operands.append(t)
        operands.append([label[u] for u in vs])
    return _c_einsum(*operands, [label[u] for u in out])
