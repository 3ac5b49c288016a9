"""APMQM plans of a hidden Markov model whose query reads a few observations
(:mod:`quiltpriv.mechanisms.hmm_few_quilts`): every node's quilt is a set of the query's
observations, its scale the least over all quilts ([ZOC22, Alg. 3]), in time linear in the
series."""

from __future__ import annotations

import math
from collections.abc import Sequence

from quiltpriv.graph.quilts import markov_quilt
from quiltpriv.mechanisms.apmqm.node_plan import _explain
from quiltpriv.mechanisms.apmqm.sensitive_plan import SensitivePlan
from quiltpriv.mechanisms.calibration import scale_up
from quiltpriv.mechanisms.plan_status import PlanStatus
from quiltpriv.mechanisms.step_plans import TIME_LIMIT_REASON, StepPlans
from quiltpriv.model.network import Theta
from quiltpriv.queries.query import Query
from quiltpriv.utils.serialize import jsonable
from quiltpriv.utils.time_limit import TimeLimit

__all__: list[str] = []  # the planner's own (plan() dispatches here)


def _scale(delta: float, e: float, eps: float, cache: dict[tuple[float, float], float]) -> float:
    """``Delta / (eps - e)`` exact, rounded up (0 for ``Delta = 0``, ``e <= eps``), shared by
    equal pairs."""
    got = cache.get((delta, e))
    if got is None:
        got = cache[delta, e] = (0.0 if e <= eps else math.inf) if delta == 0.0 else (
            scale_up(delta, eps, e) if e < eps else math.inf)
    return got


def _few_plans(theta: Theta, query: Query, sensitive: Sequence[str], epsilon: float,
              time_limit: TimeLimit | None,
              list_sets: bool) -> tuple[SensitivePlan, ...] | StepPlans | None:
    """Plans of ``sensitive`` on a hidden Markov model whose query reads a few observations,
    or None where the few-step search does not apply
    (:func:`quiltpriv.mechanisms.hmm_few_quilts._few_search`).

    Held as runs (:class:`~quiltpriv.mechanisms.hmm_few_step_plans.FewStepPlans`) when the
    sets are not listed and ``sensitive`` is in step order (``H_t`` before ``X_t``); else one
    record per node, in the order given."""
    from quiltpriv.mechanisms.hmm_few_quilts import _few_search

    eps = epsilon
    found = _few_search(theta, query.attributes, query.sensitivity, sensitive, eps,
                       time_limit=time_limit)
    if found is None:
        return None
    order, fq = found
    states = (theta.states[order.hidden[0]], theta.states[order.observed[0]])
    if not list_sets and all(theta.states[v] == states[0] for v in order.hidden) \
            and all(theta.states[v] == states[1] for v in order.observed):
        from quiltpriv.mechanisms.hmm_few_step_plans import _few_runs
        from quiltpriv.mechanisms.step_plans import _scales_up

        runs = _few_runs(SensitivePlan, order, fq, _scales_up(fq.delta, fq.influence, eps),
                        theta.names, states, eps)
        if runs is not None:
            return runs
    attrs = frozenset(query.attributes)
    in_order = tuple(v for v in theta.nodes if v in attrs)  # the query's, in network order
    cache: dict[tuple[float, float], float] = {}
    plans = []
    for j, node in enumerate(sensitive):
        quilt = fq.quilt(j, order)
        inq = frozenset(quilt)
        near = tuple(v for v in in_order if v not in inq)
        delta, e, optimal = float(fq.delta[j]), float(fq.influence[j]), bool(fq.optimal[j])
        scale = _scale(delta, e, eps, cache)
        full = markov_quilt(theta, node, quilt) if list_sets else None
        m = int(fq.member[j])
        member = theta.names[m] if m >= 0 else None
        pair = None
        if m >= 0:
            st = theta.states[node]
            pair = (jsonable(st[int(fq.pair[j, 0])]), jsonable(st[int(fq.pair[j, 1])]))
        text = _explain(theta, query, node, quilt or None, full, near, e, delta, scale, eps,
                        member, pair, optimal, [] if optimal else [TIME_LIMIT_REASON])
        plans.append(SensitivePlan(
            status=PlanStatus.OPTIMAL if optimal else PlanStatus.TIME_LIMIT,
            sensitive=node, quilt=quilt, nearby=None if full is None else full.nearby,
            remote=None if full is None else full.remote,
            nearby_attributes=near if full is None else None, influence=e, sensitivity=delta,
            scale=scale, quilts_considered=int(fq.considered[j]), optimal=optimal,
            explanation=text, influence_member=member, influence_pair=pair))
    return tuple(plans)
