"""Exact integer elimination: every float64 CPD entry is ``m * 2**e``, so each CPD becomes
integers with one power-of-two scale and the elimination is exact (used where float64 could
underflow)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from quiltpriv.inference.cache import InferenceCache
from quiltpriv.inference.engines.base import DEFAULT_SETTINGS, Answer, JointQuery
from quiltpriv.inference.engines.elimination import _eliminate
from quiltpriv.model.network import Theta


def _exact_tables(theta: Theta, member: int, nodes: Iterable[str]) -> dict[str, Any]:
    """Per node, its CPD as exact integers ``M`` and one exponent ``E``: ``table = M * 2**E``.

    Every float is ``f * 2**e`` with ``f * 2**53`` an integer (subnormals included), so the
    conversion is exact; cached per member and node.
    """
    cache = InferenceCache.of(theta).exact_tables.setdefault(member, {})
    out = {}
    for v in nodes:
        hit = cache.get(v)
        if hit is None:
            t = np.asarray(theta.members[member][v].table, dtype=np.float64)
            mant, expo = np.frexp(t)
            positive = t > 0
            base = int(expo[positive].min()) - 53 if positive.any() else 0
            ints = np.empty(t.shape, dtype=object)
            flat = ints.reshape(-1)
            for k, (f, e) in enumerate(zip(mant.reshape(-1).tolist(), expo.reshape(-1).tolist(),
                                           strict=True)):
                flat[k] = int(f * 2.0**53) << (e - 53 - base) if f > 0 else 0
            hit = cache[v] = (ints, base)
        out[v] = hit
    return out


def _exact_joint(theta: Theta, nodes: tuple[str, ...], member: int,
                 max_table: int, limit: int = DEFAULT_SETTINGS.exact_max_table,
                 ) -> tuple[np.ndarray, int]:
    """``P(phi_nodes)`` exactly, as integers ``J`` and an exponent ``E``: ``P = J * 2**E``.

    Variable elimination on the integer tables of :func:`_exact_tables`; each CPD of the
    ancestral set is multiplied in exactly once, so the exponents add up. Intermediates are
    limited to ``limit`` entries (:attr:`EngineSettings.exact_max_table`) and ``max_table``.
    """
    anc = theta.ancestral_set(nodes)
    limit = min(max_table, limit)
    # Price the order first: a query too large is refused before any big-integer arithmetic
    # (which took seconds to minutes a refusal on diabetes); the same order, same refusals.
    _eliminate(theta, nodes, anc, member, limit, price_only=True)
    exact = _exact_tables(theta, member, anc)
    tables = {v: t for v, (t, _) in exact.items()}
    joint = _eliminate(theta, nodes, anc, member, limit, tables)
    return np.asarray(joint, dtype=object), sum(e for _, e in exact.values())


def _ints_to_float(ints: np.ndarray, exponent: int) -> np.ndarray:
    """``ints * 2**exponent`` as float64, each entry correctly rounded (tiny ones to 0)."""
    from fractions import Fraction

    scale = Fraction(2) ** exponent
    return np.array([float(Fraction(int(x)) * scale) for x in ints.reshape(-1)],
                    dtype=np.float64).reshape(ints.shape)


class ExactEngine:
    """``engine="exact"``: exact integer elimination, each entry of the joint rounded once to
    float64 at the end (depth 1: that rounding); never None
    (:class:`~quiltpriv.inference.engines.base.Engine`)."""

    name = "exact"

    def joint(self, query: JointQuery) -> Answer | None:
        ints, exponent = _exact_joint(query.theta, query.nodes, query.member, query.max_table,
                                      query.settings.exact_max_table)
        return Answer(_ints_to_float(ints, exponent), self.name, 1)
