"""The rows of ``quiltpriv quilts``: ranked, the planner's choice marked, each loser explained.

Kept apart from :mod:`quiltpriv.cli.core` (which registers the command) so that the table's
rules are small pure functions: rank by scale when a query and epsilon are given (infeasible
quilts last), always include and mark the quilt the planner chooses, say why every other quilt
lost, and abbreviate long sets.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from quiltpriv.mechanisms.quilt_price import is_tie, price_order
from quiltpriv.utils.format import fmt_number

if TYPE_CHECKING:
    from quiltpriv.model.network import Theta

#: A set with more names than this is shown as its first names and "+k more".
SHOWN_NAMES = 4


def short_set(xs: Iterable[str], limit: int = SHOWN_NAMES) -> str:
    """``{a, b, c, d, +7 more}`` for a long set, ``{a, b}`` for a short one."""
    names = list(xs)
    if len(names) <= limit + 1:
        return "{" + ", ".join(names) + "}"
    return "{" + ", ".join(names[:limit]) + f", +{len(names) - limit} more}}"


def rank(rows: list[dict[str, Any]], theta: Theta | None) -> list[dict[str, Any]]:
    """Rows in the planner's order (:func:`quiltpriv.mechanisms.quilt_price.price_order`:
    scale, then influence, then |Q|, ties within rounding noise, the trivial quilt losing ties);
    in listing order without a network to rank on (no query and epsilon)."""
    if theta is None:
        return list(rows)
    return sorted(rows, key=lambda r: price_order(r.get("scale"), r.get("influence"),
                                                  tuple(r["quilt"]), r["trivial"], theta))


def why_lost(row: dict[str, Any], chosen: dict[str, Any] | None, epsilon: float | None,
             query_attributes: Sequence[str]) -> str:
    """Why ``row`` is not the planner's choice (``"chosen"`` for the choice itself)."""
    if chosen is not None and row["quilt"] == chosen["quilt"]:
        return "chosen by the planner"
    infl = row.get("influence")
    if infl is None:
        return "influence too expensive to compute exactly (max_table)"
    if epsilon is None or chosen is None:
        return ""
    scale, best = row.get("scale"), chosen.get("scale")
    if scale is not None and math.isinf(scale):
        return f"infeasible: e(Q|i) = {fmt_number(infl)} >= eps = {fmt_number(epsilon)}"
    near = [a for a in query_attributes if a in set(row["nearby"])]
    if scale is not None and best is not None and scale > best and not is_tie(scale, best):
        stay = ("query attribute(s) " + short_set(near) + " stay nearby" if near
                else "no query attribute stays nearby")
        return f"needs b = {fmt_number(scale, rounding='up')} > {fmt_number(best)}: {stay}"
    return ("as good: a tie on scale, broken by least influence, then fewest quilt nodes, then "
            "network order")


def annotate(rows: list[dict[str, Any]], chosen_quilt: Sequence[str] | None,
             epsilon: float | None, query_attributes: Sequence[str]) -> list[dict[str, Any]]:
    """Each row with ``chosen`` (bool) and ``why`` (why it lost, or that it is chosen)."""
    chosen = next((r for r in rows if chosen_quilt is not None
                   and sorted(r["quilt"]) == sorted(chosen_quilt)), None)
    out = []
    for r in rows:
        is_chosen = chosen is not None and r is chosen
        out.append({**r, "chosen": is_chosen,
                    "why": why_lost(r, chosen, epsilon, query_attributes)})
    return out


def top(rows: list[dict[str, Any]], k: int | None) -> list[dict[str, Any]]:
    """The first ``k`` rows, and the chosen one after them when it is not among them."""
    if k is None or len(rows) <= k:
        return rows
    head = rows[:k]
    if not any(r.get("chosen") for r in head):
        head += [r for r in rows[k:] if r.get("chosen")]
    return head


def scale_text(row: dict[str, Any], epsilon: float | None) -> str:
    """The scale cell: a number, ``infeasible`` for an influence at or above eps, or ``-``."""
    scale = row.get("scale")
    if scale is None:
        return "-"
    if math.isinf(scale):
        return "infeasible"
    return fmt_number(scale, rounding='up')
