"""The epsilon each sensitive attribute really gets at the published scale, and choices near
the limit.

A plan states one epsilon, but its scale ``b`` is set by the *binding* attribute: every other
sensitive attribute ``i`` gets more noise than its quilt needs. By [ZOC22, Thm. 4] (the proof
of Alg. 3) a Laplace release of scale ``b`` is ``eps_i``-private for ``i`` with

    eps_i = e(Q|i) + Delta_{A and N} F / b

for ``i``'s quilt ``Q`` (nearby set ``N``); ``eps_i <= eps`` because ``b >= Delta / (eps -
e)``. With ``b = 0`` the release is exact and ``eps_i = e(Q|i)`` when ``Delta = 0`` (else no
finite epsilon). :func:`attained_epsilons` computes ``eps_i`` in exact rational arithmetic
from the plan's own float values and rounds it up, so it is never below the bound.

A choice is *near the limit* when its influence is close to epsilon: ``e(Q|i)`` within
:data:`NEAR_LIMIT_MARGIN` of ``eps`` (relative, 10%). A small change in one table that raises
the influence past ``eps`` would make the quilt infeasible, and the attribute fall back on
another quilt; for a quilt that needs no noise (``Delta_{A and N} F = 0``) that can flip the
plan from zero noise to the trivial quilt's ``Delta_A F / eps`` (``n / eps`` for a count).
This is a cheap flag on the margin only; whether a change of one table really flips the choice
is the exact analysis of :mod:`quiltpriv.mechanisms.fragility` (``FRAGILE``: ``FLIPS`` or
``UNDECIDED``), and only that analysis says ``FRAGILE``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from quiltpriv.errors import PlanError
from quiltpriv.mechanisms.apmqm import Plan
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_fields
from quiltpriv.utils.format import fmt_number, fmt_set, text_table
from quiltpriv.utils.rounding import round_up
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_epsilon

__all__ = ["FRAGILE_MARGIN", "NEAR_LIMIT_MARGIN", "AttainedEpsilon", "attained_epsilon",
           "attained_epsilons", "attained_table", "plan_attained_table"]

#: A chosen quilt is flagged near the limit when ``eps - e(Q|i) < NEAR_LIMIT_MARGIN * eps``.
NEAR_LIMIT_MARGIN = 0.1

#: The old name of :data:`NEAR_LIMIT_MARGIN` (the flag was called fragile, which is now the
#: exact analysis's word only).
FRAGILE_MARGIN = NEAR_LIMIT_MARGIN


def attained_epsilon(influence: float, sensitivity: float, scale: float) -> float:
    """``e + Delta / b`` rounded up to a float (``inf`` when ``b = 0 < Delta``).

    Parameters
    ----------
    influence : float
        ``e(Q|i)`` (finite, >= 0).
    sensitivity : float
        ``Delta_{A and N} F`` (finite, >= 0).
    scale : float
        The published Laplace scale ``b`` (finite, >= 0).
    """
    for name, x in (("influence", influence), ("sensitivity", sensitivity), ("scale", scale)):
        if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) \
                or x < 0:
            raise PlanError(f"attained epsilon: {name} must be a finite number >= 0, got {x!r}")
    if sensitivity == 0:
        return float(influence)
    if scale == 0:
        return math.inf
    return round_up(Fraction(influence) + Fraction(sensitivity) / Fraction(scale))


@renamed_fields(node="sensitive", fragile="near_limit", why_fragile="why_near_limit")
@dataclass(frozen=True)
class AttainedEpsilon(JSONResult):
    """One sensitive attribute's epsilon at the published scale.

    Attributes
    ----------
    sensitive : str
        The sensitive attribute (``node`` is its deprecated name; the JSON key stays
        ``"node"``).
    quilt : tuple of str
    influence : float
        ``e(Q|i)`` as the plan states it.
    sensitivity : float
        ``Delta_{A and N} F``.
    scale : float
        The published scale ``b`` (the plan's, over all sensitive attributes).
    epsilon : float
        ``eps_i = e + Delta / b``, rounded up.
    binding : bool
        True for the attribute whose quilt sets ``b``.
    near_limit : bool
        ``e(Q|i)`` is within :data:`NEAR_LIMIT_MARGIN` of eps (``fragile`` is its deprecated
        name): a margin flag, not the exact analysis of :mod:`quiltpriv.mechanisms.fragility`.
    why_near_limit : str or None
        Why, in words (``why_fragile`` is its deprecated name).
    """

    sensitive: str
    quilt: tuple[str, ...]
    influence: float
    sensitivity: float
    scale: float
    epsilon: float
    binding: bool
    near_limit: bool
    why_near_limit: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.sensitive, "quilt": list(self.quilt), "influence": self.influence,
                "sensitivity": self.sensitivity, "scale": self.scale,
                "epsilon": "inf" if math.isinf(self.epsilon) else self.epsilon,
                "binding": self.binding, "near_limit": self.near_limit,
                "why_near_limit": self.why_near_limit}


def _why_near_limit(plan: Plan, influence: float, sensitivity: float,
                 fallback: float | None) -> str | None:
    eps = plan.epsilon
    gap = eps - influence
    if not gap < NEAR_LIMIT_MARGIN * eps:
        return None
    text = (f"e(Q|i) = {fmt_number(influence)} is within {fmt_number(gap)} of eps = "
            f"{fmt_number(eps)}: a "
            "change in one table that raises it by that much would make this quilt infeasible "
            "(whether one can is the exact fragility analysis: audit --fragility)")
    if sensitivity == 0:
        text += " and this attribute's zero noise must come from another quilt"
        if fallback is not None:
            text += f" (up to Delta_A F / eps = {fmt_number(fallback)}, the trivial quilt)"
    return text


def attained_epsilons(plan: Plan, query: Query | None = None) -> tuple[AttainedEpsilon, ...]:
    """Per sensitive attribute of ``plan``: its epsilon at the plan's scale, and whether its
    choice is near the limit.

    Parameters
    ----------
    plan : Plan
        A plan (verify a plan read from a file first: these are its own numbers).
    query : Query, optional
        The plan's query; with it a zero-noise choice near the limit names the scale
        ``Delta_A F / eps`` of the trivial quilt it could fall back on.

    Returns
    -------
    tuple of AttainedEpsilon
        In plan order.
    """
    if not isinstance(plan, Plan):
        raise PlanError(f"plan must be a quiltpriv Plan, got {type(plan).__name__}")
    fallback = None
    if query is not None:
        fallback = query.sensitivity(query.attributes) / plan.epsilon
    binding = plan.binding.sensitive
    return tuple(
        AttainedEpsilon(sp.sensitive, tuple(sp.quilt), sp.influence, sp.sensitivity, plan.scale,
                        attained_epsilon(sp.influence, sp.sensitivity, plan.scale),
                        sp.sensitive == binding,
                        (why := _why_near_limit(plan, sp.influence, sp.sensitivity,
                                             fallback)) is not None, why)
        for sp in plan.sensitive)


def attained_table(rows: tuple[AttainedEpsilon, ...], epsilon: float) -> list[str]:
    """Text lines: per attribute the quilt, influence, Delta, attained eps and a flag when
    the choice is near the limit (not the exact fragility analysis)."""
    if not isinstance(rows, tuple | list) or not all(isinstance(r, AttainedEpsilon)
                                                     for r in rows):
        raise PlanError("attained_table takes the rows of attained_epsilons(plan)")
    epsilon = check_epsilon(epsilon)
    lines = [f"epsilon each sensitive attribute attains at the published scale (eps_i = e(Q|i) "
             f"+ Delta_{{A&N}} F / b; the plan states {fmt_number(epsilon)} for all):"]
    lines += text_table(
        ("sensitive", "quilt Q", "e(Q|i)", "Delta_{A&N}", "eps_i", "note"),
        [(r.sensitive, fmt_set(r.quilt), fmt_number(r.influence), fmt_number(r.sensitivity),
          fmt_number(r.epsilon),
          ", ".join(x for x in ("sets b" if r.binding else "",
                                "near the limit" if r.near_limit else "") if x) or "-")
         for r in rows])
    lines += [f"{r.sensitive}: near the limit (margin < {fmt_number(100 * NEAR_LIMIT_MARGIN, 2)}% "
              "of eps): "
              f"{r.why_near_limit}" for r in rows if r.near_limit]
    return lines


def plan_attained_table(plan: Plan, query: Query | None = None) -> list[str]:
    """:func:`attained_table` of a plan: one row per attribute, or, for the steps of a time
    series held as runs (:class:`~quiltpriv.mechanisms.step_plans.StepPlans`), one row per
    run of steps sharing their numbers (linear in the runs, not in the steps)."""
    from quiltpriv.mechanisms.step_plans import StepPlans

    if not isinstance(plan, Plan):
        raise PlanError(f"plan must be a quiltpriv Plan, got {type(plan).__name__}")
    if query is not None:
        check_query(query)
    steps = plan.sensitive
    if not isinstance(steps, StepPlans):
        return attained_table(attained_epsilons(plan, query), plan.epsilon)
    fallback = None if query is None else query.sensitivity(query.attributes) / plan.epsilon
    top = steps.binding_run()
    rows = []
    for i, r in enumerate(steps.runs):
        why = _why_near_limit(plan, r.influence, r.sensitivity, fallback)
        rows.append(AttainedEpsilon(
            steps.run_label(r), steps.run_quilt_parts(r), r.influence, r.sensitivity, plan.scale,
            attained_epsilon(r.influence, r.sensitivity, plan.scale), i == top,
            why is not None, why))
    return attained_table(tuple(rows), plan.epsilon)
