"""Saved plans are input: parse them strictly, then verify them against the model and query.

A plan made by :func:`quiltpriv.plan` in this process is trusted (``plan.verified``). A plan
read back from JSON (:meth:`quiltpriv.Plan.from_dict`, :meth:`~quiltpriv.Plan.from_json`) is
not: anyone can edit a file, and the fingerprints it carries are plain SHA-256 digests, not
signatures. :func:`verify_plan` recomputes every claim the plan makes that a release or a
report relies on, and returns a trusted copy only when all of them hold:

* the model's fingerprint (every member's CPDs) is the plan's;
* the query's definition (``Query.to_dict()``) is the plan's, and so is its fingerprint, which
  also covers every sensitivity the plan used
  (:func:`quiltpriv.mechanisms.apmqm.query_fingerprint`);
* per sensitive attribute ``i``: ``Q``, ``N`` and ``R`` partition the nodes, ``i`` is in
  ``N`` and ``Q`` d-separates ``i`` from ``R`` (Definition 7 of Zhang, Ohrimenko and
  Cummings); the stated influence is at least the recomputed ``e_Theta(Q | i)`` (exact, or
  the planner's own upper bound when the exact value is too expensive); the stated
  ``Delta_{A and N} F`` is the query's; the stated scale is at least
  ``Delta / (eps - e)`` for the stated ``e`` ([ZOC22, Alg. 3]), compared exactly (no
  tolerance: one ulp below the exact need is refused); a claim of optimality is
  re-checked by running the planner's exact search again;
* the overall scale is the largest per-attribute scale and the plan is optimal exactly when
  every attribute is.

Stating *more* noise than needed (a larger influence or scale) is accepted, as long as the
attribute does not also claim to be optimal. The explanation texts and notes are free text,
and an attribute's status (why optimality is not proven) a claim about the search: carried
along but not verified. Verifying a plan that claims optimality costs about as much as
planning it again; one that does not costs one influence computation per sensitive attribute.

``quiltpriv verify PLAN.json MODEL`` runs the same check on the command line.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from quiltpriv.errors import ModelError, ParameterError, PlanError, QueryError, QuiltPrivError
from quiltpriv.inference.engines.base import (
    EngineName,
    EngineSettings,
    check_settings,
    choose_engine,
)
from quiltpriv.inference.influence import (
    ROUNDING_MARGIN,
    InferenceMethod,
    InfluenceTooExpensive,
)
from quiltpriv.mechanisms.apmqm import (
    Plan,
    PlanningContext,
    SensitivePlan,
    canonical_json,
    plan_from_dict,
    plan_from_json,
    plan_query_fingerprint,
    planning_context,
    quilt_scale,
)
from quiltpriv.model.network import Theta, as_theta, model_mismatch
from quiltpriv.queries.fraction import FractionQuery
from quiltpriv.queries.query import (
    CountQuery,
    CustomQuery,
    HistogramQuery,
    LinearQuery,
    MeanQuery,
    Query,
    SumQuery,
    check_query,
)
from quiltpriv.utils.deprecation import renamed_fields, renamed_keywords
from quiltpriv.utils.format import describe_query, fmt_number, fmt_set, text_table
from quiltpriv.utils.memory import table_limit
from quiltpriv.utils.serialize import JSONResult, jsonable
from quiltpriv.utils.time_limit import TimeLimit
from quiltpriv.utils.validation import check_epsilon

__all__ = [
    "AttributeCheck",
    "PlanVerification",
    "ModelComparison",
    "check_plan",
    "compare_models",
    "plan_from_dict",
    "plan_from_json",
    "query_from_dict",
    "verify_plan",
]

#: A stated influence may fall below the recomputed one by this much (relative, and absolute
#: below 1): different inference paths round differently (~1e-13 relative). It is a hundredth
#: of the planner's upward rounding :data:`quiltpriv.inference.influence.ROUNDING_MARGIN`, so an
# accepted
#: influence is still above the exact value.
INFLUENCE_SLACK = ROUNDING_MARGIN / 100

#: A claim of optimality holds when the stated scale is within this relative distance of the
#: least scale the planner's search finds again (rounding of ``Delta / (eps - e)``).
OPTIMALITY_RTOL = 1e-9

#: Query kinds :func:`query_from_dict` rebuilds (a custom query's code is not in its JSON).
REBUILDABLE_QUERIES: Mapping[str, type[Query]] = {
    c.kind: c for c in (CountQuery, SumQuery, MeanQuery, LinearQuery, HistogramQuery,
                        FractionQuery)}


def query_from_dict(d: Mapping[str, Any]) -> Query:
    """Rebuild a query from its definition (``Query.to_dict()``) for the kinds that allow it.

    Count, sum, mean, linear and histogram queries are rebuilt from their fields; the result
    must give back exactly ``d``. A custom query cannot be rebuilt: its function and
    sensitivity are Python code, which its JSON does not hold.

    Raises
    ------
    QueryError
        For a custom or unknown kind, or fields that do not make the query back.
    """
    if not isinstance(d, Mapping):
        raise QueryError(f"a query definition must be an object, got {type(d).__name__}")
    kind = d.get("kind")
    if kind == CustomQuery.kind:
        raise QueryError("a custom query cannot be rebuilt from JSON (its function and "
                         "sensitivity are Python code); verify the plan from Python with "
                         "quiltpriv.verify_plan(plan, model, query)")
    cls = REBUILDABLE_QUERIES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise QueryError(f"unknown query kind {kind!r} (known: "
                         f"{', '.join(REBUILDABLE_QUERIES)})")
    fields = {k: v for k, v in d.items() if k != "kind"}
    try:
        query = cls(**fields)
    except QuiltPrivError:
        raise
    except (TypeError, ValueError) as exc:
        raise QueryError(f"cannot rebuild the {kind} query from {dict(d)}: {exc}") from None
    if canonical_json(query.to_dict()) != canonical_json(d):
        raise QueryError(f"the {kind} query rebuilt from {dict(d)} is not the same query "
                         f"({query.to_dict()}); give it with the query options")
    return query


# -- verification --------------------------------------------------------------------------


@renamed_fields(node="sensitive")
@dataclass(frozen=True)
class AttributeCheck(JSONResult):
    """The verification of one sensitive attribute of a plan: stated against recomputed.

    Attributes
    ----------
    sensitive : str
        The sensitive attribute ``i`` (or a run of a chain's steps); ``node`` is its
        deprecated name, and the JSON key stays ``"node"``.
    ok : bool
    reason : str or None
        The first discrepancy (None when ``ok``).
    quilt : tuple of str
        The stated quilt ``Q``.
    stated_influence, influence : float, float or None
        The plan's ``e(Q | i)`` and the recomputed one (None when not reached).
    influence_exact : bool
        False when the recomputed influence is the planner's upper bound (data-processing
        inequality), because the exact one is too expensive.
    influence_engine : str or None
        The engine that recomputed the influence (``Influence.engine``,
        :mod:`quiltpriv.inference.engines.base`); None when not reached or nothing was
        computed (an empty quilt).
    stated_sensitivity, sensitivity : float, float or None
        The plan's ``Delta_{A and N} F`` and the query's.
    stated_scale, scale : float, float or None
        The plan's scale and ``Delta / (eps - e)`` for the query's Delta and the stated ``e``.
    optimal : bool
        The plan's claim.
    least_scale : float or None
        The least scale the planner's search finds again (only when optimality is claimed).
    """

    sensitive: str
    ok: bool
    reason: str | None
    quilt: tuple[str, ...]
    stated_influence: float
    influence: float | None = None
    influence_exact: bool = True
    influence_engine: str | None = None
    stated_sensitivity: float = 0.0
    sensitivity: float | None = None
    stated_scale: float = 0.0
    scale: float | None = None
    optimal: bool = False
    least_scale: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d = {"node": d.pop("sensitive"), **d}  # the JSON key stays "node"
        d["quilt"] = list(self.quilt)
        return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v)
                for k, v in d.items()}


@dataclass(frozen=True)
class PlanVerification:
    """The verdict of :func:`check_plan`.

    Parameters
    ----------
    ok : bool
        True when every claim of the plan holds.
    failure : str or None
        The first discrepancy, in plan order (None when ``ok``).
    kind : str or None
        What failed: ``"model"``, ``"query"`` or ``"plan"`` (None when ``ok``).
    attributes : tuple of AttributeCheck
        One per sensitive attribute reached (none when the model or query already failed).
    plan : Plan
        A verified copy of the plan when ``ok``, else the plan as given.
    query : dict
        The definition of the query the plan was checked against.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("chain")
    >>> query = qp.LinearQuery({v: 1 / 12 for v in theta.nodes},
    ...                        {v: (0, 1) for v in theta.nodes})
    >>> saved = qp.plan(theta, query, "x01", epsilon=1.0).to_json()
    >>> plan = qp.Plan.from_json(saved)  # read back: not verified yet
    >>> verdict = qp.check_plan(plan, theta, query, epsilon=0.5)
    >>> verdict.ok, verdict.kind, verdict.failure
    (False, 'plan', 'it is made for epsilon = 1, weaker than the required 0.5')
    >>> qp.check_plan(plan, theta, query, sensitive="x01", epsilon=1.0).ok
    True
    """

    ok: bool
    failure: str | None
    kind: str | None
    attributes: tuple[AttributeCheck, ...]
    plan: Plan
    query: Mapping[str, Any]

    def verified_plan(self) -> Plan:
        """The verified plan, or raise the failure (ModelError, QueryError or PlanError)."""
        if self.ok:
            return self.plan
        error = {"model": ModelError, "query": QueryError}.get(self.kind or "", PlanError)
        raise error(f"the plan does not verify: {self.failure}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "verified": self.ok, "failure": self.failure, "kind": self.kind,
            "mechanism": self.plan.mechanism, "epsilon": self.plan.epsilon,
            "scale": self.plan.scale, "optimal": self.plan.optimal,
            "model": self.plan.model_fingerprint, "query": dict(self.query),
            "sensitive": {c.sensitive: c.to_dict() for c in self.attributes},
            "unverified_fields": ["explanation", "notes", "quilts_considered", "status"],
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        """One screen: the verdict, then stated against recomputed per sensitive attribute."""
        p = self.plan
        head = ("plan VERIFIED against the model and the query" if self.ok
                else f"plan FAILED verification: {self.failure}")
        lines = [head,
                 f"APMQM, epsilon = {fmt_number(p.epsilon)}, Laplace scale b = "
                 f"{fmt_number(p.scale, rounding='up')} "
                 f"({'optimal over all quilts' if p.optimal else 'optimality not claimed'})",
                 f"protects {_protected(p)}; "
                 f"model {p.model_fingerprint[:16]}...; "
                 f"query: {describe_query(self.query)}"
                 + (f", where {self.query['where']}" if self.query.get("where") else ""), ""]
        if self.attributes:
            header = ("sensitive", "quilt Q", "influence", "recomputed", "Delta_{A&N}",
                      "scale", "needed", "least", "verdict")
            rows = []
            for c in self.attributes:
                infl = "-" if c.influence is None else (
                    fmt_number(c.influence) + ("" if c.influence_exact else " (bound)"))
                rows.append((c.sensitive, fmt_set(c.quilt), fmt_number(c.stated_influence), infl,
                             fmt_number(c.stated_sensitivity), fmt_number(c.stated_scale),
                             "-" if c.scale is None else fmt_number(c.scale, rounding='up'),
                             "-" if c.least_scale is None else fmt_number(c.least_scale),
                             "OK" if c.ok else "FAILED"))
            lines += text_table(header, rows)
            engines = sorted({c.influence_engine for c in self.attributes
                              if c.influence_engine is not None})
            if engines:
                lines.append(f"influences recomputed by the engine(s) {', '.join(engines)}")
            for c in self.attributes:
                if not c.ok:
                    lines.append(f"{c.sensitive}: FAILED: {c.reason}")
            lines.append("")
        lines.append("explanations, notes, quilts_considered and the reasons optimality is not "
                     "proven (status) are free text, counts or claims about the search: "
                     "carried along, not verified")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


#: A plan held as runs names at most this many of its sensitive nodes at each end in the text.
_PROTECTED_SHOWN = 3


def _protected(p: Plan) -> str:
    """The sensitive nodes as a set; for a plan held as runs (a time series), its count and
    ends, so that the text stays linear in the runs, not in the steps."""
    from quiltpriv.mechanisms.apmqm import sensitive_nodes
    from quiltpriv.mechanisms.step_plans import StepPlans

    nodes = sensitive_nodes(p)
    if not isinstance(p.sensitive, StepPlans) or len(nodes) <= 2 * _PROTECTED_SHOWN:
        return fmt_set(nodes)
    k = _PROTECTED_SHOWN
    return (f"{len(nodes):,} nodes {{{', '.join(nodes[:k])}, ..., "
            f"{', '.join(nodes[-k:])}}}")


def _check_attribute(theta: Theta, query: Query, sp: SensitivePlan, eps: float,
                     max_table: int, engine: EngineName,
                     context: PlanningContext) -> AttributeCheck:
    """Recompute one attribute's quilt, influence, sensitivity, scale and optimality, as the
    planner computes them for a plan of this size (``context``)."""
    node = sp.sensitive
    found: dict[str, Any] = {"sensitive": node, "quilt": sp.quilt,
                             "stated_influence": sp.influence,
                             "stated_sensitivity": sp.sensitivity, "stated_scale": sp.scale,
                             "optimal": sp.optimal}

    def fail(reason: str) -> AttributeCheck:
        return AttributeCheck(ok=False, reason=reason, **found)

    problem = (_listed_problem(theta, sp, context) if sp.sets_listed
               else _unlisted_problem(theta, query, sp, context))
    if problem is not None:
        return fail(problem)
    q = set(sp.quilt)
    try:
        infl = context.influence(node, q)
    except InfluenceTooExpensive as exc:
        return fail(f"the influence of Q = {fmt_set(sp.quilt)} cannot be recomputed within "
                    f"max_table = {max_table}: {exc}")
    found.update(influence=infl.value, influence_exact=infl.exact,
                 influence_engine=infl.engine)
    if sp.influence < infl.value - INFLUENCE_SLACK * max(1.0, infl.value):
        what = "exact" if infl.exact else "an upper bound (the exact value is too expensive)"
        return fail(f"it states influence e(Q|{node}) = {fmt_number(sp.influence, 17)}, below the "
                    f"recomputed {fmt_number(infl.value, 17)} ({what})")
    delta = query.sensitivity(context.stated_nearby_attributes(sp))
    found.update(sensitivity=delta)
    if sp.sensitivity != delta:
        return fail(f"it states Delta_{{A&N}} F = {fmt_number(sp.sensitivity, 17)}, the query's is "
                    f"{fmt_number(delta, 17)}")
    # The need is the exact Delta / (eps - e) rounded up to the least float at or above it, so
    # a float scale meets the exact need iff it is >= this float: compared exactly, no tie
    # tolerance (one ulp below is refused).
    need = quilt_scale(delta, sp.influence, eps)
    found.update(scale=need)
    if not sp.scale >= need:
        if math.isinf(need):
            return fail(f"its influence {fmt_number(sp.influence, 17)} is not below epsilon = "
                        f"{fmt_number(eps)}, "
                        "so no finite scale makes this quilt private")
        return fail(f"it states scale {fmt_number(sp.scale, 17)}, below Delta / (eps - e) = "
                    f"{fmt_number(need, 17)}")
    if sp.optimal:
        best = context.least_scale_plan(node, eps)
        found.update(least_scale=best.scale)
        if not best.optimal:
            return fail("it claims the least scale over all quilts, which could not be "
                        "re-checked: " + best.explanation.rpartition("Optimality not proven: ")[2])
        if not (sp.scale <= best.scale or math.isclose(sp.scale, best.scale,
                                                       rel_tol=OPTIMALITY_RTOL)):
            return fail(f"it claims the least scale over all quilts, but quilt "
                        f"{fmt_set(best.quilt)} needs only {fmt_number(best.scale, 17)} < "
                        f"{fmt_number(sp.scale, 17)}")
    # Member names are labels, not part of the model's identity (the same network read from
    # student.py and from student.bif is named "student" and "student.bif"): with one member
    # the name can only mean that member.
    if sp.influence_member is not None and sp.influence_member not in theta.names \
            and len(theta) > 1:
        return fail(f"its influence_member {sp.influence_member!r} is not a member of Theta "
                    f"({', '.join(theta.names)})")
    if sp.influence_pair is not None:
        states = [jsonable(x) for x in theta.states[node]]
        bad = [x for x in sp.influence_pair if x not in states]
        if bad:
            return fail(f"its influence_pair names {bad[0]!r}, not a value of {node!r}")
    if sp.influence_bound_via is not None:
        unknown = [v for v in sp.influence_bound_via if v not in theta]
        if unknown:
            return fail(f"its influence_bound_via names {fmt_set(unknown)}, not in the network")
    return AttributeCheck(ok=True, reason=None, **found)


def _listed_problem(theta: Theta, sp: SensitivePlan, context: PlanningContext) -> str | None:
    """What is wrong with a listed partition ``(Q, N, R)`` of ``sp.sensitive``, if anything."""
    node = sp.sensitive
    q, n, r = set(sp.quilt), set(sp.nearby or ()), set(sp.remote or ())
    unknown = [v for v in (*sp.quilt, *(sp.nearby or ()), *(sp.remote or ())) if v not in theta]
    if unknown:
        return f"its quilt names {fmt_set(unknown)}, not in the network"
    if node not in n:
        return f"{node!r} is not in its own nearby set N"
    both = (q & n) | (q & r) | (n & r)
    if both:
        return f"{fmt_set(theta.sort(both))} is in more than one of Q, N and R"
    missing = set(theta.nodes) - q - n - r
    if missing:
        return (f"Q, N and R do not cover the network: {fmt_set(theta.sort(missing))} is in "
                "none of them")
    reached = context.d_connected(node, q) & r
    if reached:
        return (f"Q = {fmt_set(sp.quilt)} does not d-separate {node!r} from "
                f"{fmt_set(theta.sort(reached))}, which the plan puts in the remote set R")
    return None


def _unlisted_problem(theta: Theta, query: Query, sp: SensitivePlan,
                      context: PlanningContext) -> str | None:
    """What is wrong with an unlisted quilt of ``sp.sensitive``, if anything.

    Its remote set is the largest ``Q`` d-separates, so what must hold is that every query
    attribute d-connected to the node given ``Q`` is among ``nearby_attributes`` (a larger
    set only makes the sensitivity, and so the noise, larger).
    """
    node = sp.sensitive
    named = (*sp.quilt, *(sp.nearby_attributes or ()))
    unknown = [v for v in named if v not in theta]
    if unknown:
        return f"its quilt names {fmt_set(unknown)}, not in the network"
    if node in sp.quilt:
        return f"its quilt Q = {fmt_set(sp.quilt)} contains {node!r} itself"
    stated = set(sp.nearby_attributes or ())
    attrs = set(query.attributes)
    if stated - attrs:
        return (f"its nearby_attributes name {fmt_set(theta.sort(stated - attrs))}, not "
                "attributes of the query")
    if set(sp.quilt) & stated:
        return (f"{fmt_set(theta.sort(set(sp.quilt) & stated))} is both in Q and among the "
                "nearby attributes")
    missed = context.nearby_query_attributes(node, sp.quilt) - stated
    if missed:
        return (f"Q = {fmt_set(sp.quilt)} does not d-separate {node!r} from the query "
                f"attribute(s) {fmt_set(theta.sort(missed))}, which nearby_attributes leaves "
                "out")
    return None


@renamed_keywords(model="theta")
def check_plan(plan: Plan, theta: Any, query: Query, *,
               sensitive: str | Iterable[str] | None = None, epsilon: float | None = None,
               max_table: int | None = None, inference: InferenceMethod = "auto",
               max_memory: int | str | None = None,
               engine: EngineName = "auto",
               settings: EngineSettings | None = None) -> PlanVerification:
    """Verify ``plan`` against ``theta`` and ``query``; never raises for a discrepancy.

    See the module's documentation for what is recomputed. :func:`verify_plan` is the same
    check, raising on failure.

    A verified plan is sound for the epsilon and the sensitive attributes it states. Which
    ones those should be is the caller's to say: without ``sensitive`` and ``epsilon`` a plan
    edited to protect fewer attributes, or at a larger epsilon, with the noise that then
    suffices, verifies.

    Parameters
    ----------
    plan : Plan
        Typically :meth:`quiltpriv.Plan.from_json` of a saved plan.
    theta : Theta, pgmpy network or sequence of them
        The model the plan claims to be made for.
    query : Query
        The query the plan claims to be made for.
    sensitive : str or iterable of str, optional
        Attributes the plan must protect (it may protect more).
    epsilon : float, optional
        The privacy the plan must give: its epsilon must be at most this.
    max_table, inference, max_memory, engine, settings
        As in :func:`quiltpriv.plan` (how influences are recomputed; a plan made with other
        ``settings`` is recomputed as they decide only when given them).

    Returns
    -------
    PlanVerification
        ``ok``, the first discrepancy, one :class:`AttributeCheck` per sensitive attribute
        and, when ``ok``, the verified plan.

    Examples
    --------
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("chain")
    >>> query = qp.LinearQuery({v: 1 / 12 for v in theta.nodes},
    ...                        {v: (0, 1) for v in theta.nodes})
    >>> saved = qp.plan(theta, query, "x01", epsilon=1.0).to_json()
    >>> plan = qp.Plan.from_json(saved)  # read back: not verified yet
    >>> qp.check_plan(plan, theta, query, sensitive="x01", epsilon=1.0).ok
    True
    >>> verdict = qp.check_plan(plan, qp.load_model("student"), query)
    >>> verdict.ok, verdict.kind
    (False, 'model')
    >>> print(verdict.failure)
    it was made for another model (model fingerprint ..., this model's is ...)
    """
    if not isinstance(plan, Plan):
        raise PlanError(f"plan must be a quiltpriv Plan, got {type(plan).__name__}")
    check_query(query)
    max_table = table_limit(max_table, max_memory)
    theta = as_theta(theta)
    engine = choose_engine(engine, inference)
    settings = check_settings(settings)
    definition = query.to_dict()

    def verdict(kind: str | None, failure: str | None,
                rows: tuple[AttributeCheck, ...] = ()) -> PlanVerification:
        return PlanVerification(failure is None, failure, kind, rows, plan, definition)

    failure = _model_mismatch(plan, theta)
    if failure is not None:
        return verdict("model", failure)
    try:
        eps = check_epsilon(plan.epsilon)
    except ParameterError as exc:
        return verdict("plan", str(exc))
    failure = _protection_mismatch(plan, theta, eps, sensitive, epsilon)
    if failure is not None:
        return verdict("plan", failure)
    failure = _query_mismatch(plan, theta, query, definition)
    if failure is not None:
        return verdict("query", failure)
    rows = _time_series_rows(theta, query, plan, eps)
    if rows is None:
        context = planning_context(theta, query, [sp.sensitive for sp in plan.sensitive],
                                   max_table, engine=engine, settings=settings)
        rows = tuple(_check_attribute(theta, query, sp, eps, max_table, engine, context)
                     for sp in plan.sensitive)
    for c in rows:
        if not c.ok:
            return verdict("plan", f"sensitive attribute {c.sensitive!r}: {c.reason}", rows)
    failure = _summary_mismatch(plan)
    if failure is not None:
        return verdict("plan", failure, rows)
    if plan_query_fingerprint(query, plan) != plan.query_fingerprint:
        return verdict("query", "the plan's query fingerprint does not match this query "
                                "(its definition and the sensitivities Delta_A and Delta_{A&N} "
                                "the plan uses): the query differs from the one the plan was "
                                "made for (Delta_A, say), or the plan was edited", rows)
    verified = PlanningContext.mark_verified(plan)
    return PlanVerification(True, None, None, rows, verified, definition)


def _time_series_rows(theta: Theta, query: Query, plan: Plan,
                      eps: float) -> tuple[AttributeCheck, ...] | None:
    """The checks of a chain's or HMM's plan, each step verified in the structure of its
    search (:mod:`quiltpriv.mechanisms.time_series_verification`; one row per run of steps of
    a chain), or None where that does not apply."""
    from quiltpriv.mechanisms.hmm_verification import check_hmm_plan
    from quiltpriv.mechanisms.time_series_verification import check_time_series

    found = check_time_series(theta, query, plan.sensitive, eps, quilt_scale)
    if found is None:
        found = check_hmm_plan(theta, query, plan.sensitive, eps, quilt_scale)
    return None if found is None else tuple(AttributeCheck(**vars(r)) for r in found)


def _model_mismatch(plan: Plan, theta: Theta) -> str | None:
    """Why ``plan`` was not made for ``theta`` (fingerprint, size, provenance), or None."""
    mismatch = model_mismatch(plan.model_fingerprint, theta)
    if mismatch is not None:
        return mismatch
    if plan.theta_size != len(theta):
        return f"it states |Theta| = {plan.theta_size}, the model has {len(theta)} member(s)"
    from quiltpriv.model.provenance import provenance_dict

    if (None if plan.provenance is None else dict(plan.provenance)) != provenance_dict(theta):
        return "its provenance (where Theta came from) is not this model's"
    return None


def _protection_mismatch(plan: Plan, theta: Theta, eps: float,
                         sensitive: str | Iterable[str] | None,
                         epsilon: float | None) -> str | None:
    """Why the plan's sensitive attributes or epsilon are wrong or too weak, or None."""
    nodes = (list(plan.sensitive.nodes()) if hasattr(plan.sensitive, "nodes")
             else [sp.sensitive for sp in plan.sensitive])
    unknown = [v for v in nodes if v not in theta]
    if unknown:
        return f"sensitive attribute(s) {fmt_set(unknown)} not in the network"
    if len(set(nodes)) != len(nodes) or not nodes:
        return "its sensitive attributes are empty or repeated"
    if sensitive is not None:
        left_out = [s for s in theta.check_sensitive(sensitive) if s not in nodes]
        if left_out:
            return f"it does not protect {fmt_set(left_out)} (it protects {fmt_set(nodes)})"
    if epsilon is not None and eps > check_epsilon(epsilon):
        return (f"it is made for epsilon = {fmt_number(eps)}, weaker than the required "
                f"{fmt_number(float(epsilon))}")
    return None


def _query_mismatch(plan: Plan, theta: Theta, query: Query,
                    definition: dict[str, Any]) -> str | None:
    """Why the plan was made for another query (or one over unknown attributes), or None."""
    unknown = [a for a in query.attributes if a not in theta]
    if unknown:
        return f"query attribute(s) {fmt_set(unknown)} not in the network"
    try:
        mine, theirs = canonical_json(definition), canonical_json(plan.query)
    except QueryError as exc:
        return str(exc)
    if mine != theirs:
        return f"it was made for another query: {theirs} in the plan, {mine} given"
    return None


def _summary_mismatch(plan: Plan) -> str | None:
    """Why the plan's overall scale or optimality disagrees with its attributes, or None."""
    runs = getattr(plan.sensitive, "runs", None)  # a chain's steps: per run, not per step
    top = max(sp.scale for sp in (plan.sensitive if runs is None else runs))
    if plan.scale != top:
        return (f"it states the overall scale {fmt_number(plan.scale, 17)}, but the "
                f"largest per-attribute scale is {fmt_number(top, 17)}")
    every = all(sp.optimal for sp in (plan.sensitive if runs is None else runs))
    if plan.optimal != every:
        return (f"it states optimal = {str(plan.optimal).lower()}, but the "
                f"attributes say {str(every).lower()}")
    return None


@renamed_keywords(model="theta")
def verify_plan(plan: Plan, theta: Any, query: Query, *,
                sensitive: str | Iterable[str] | None = None, epsilon: float | None = None,
                max_table: int | None = None, inference: InferenceMethod = "auto",
                max_memory: int | str | None = None, engine: EngineName = "auto",
                settings: EngineSettings | None = None) -> Plan:
    """The plan, verified against ``theta`` and ``query``, ready for :func:`quiltpriv.release`.

    A plan made by :func:`quiltpriv.plan` in this process is already verified; one read from
    a file (:meth:`quiltpriv.Plan.from_json`) must pass through here (or through
    ``release(..., theta=...)``, which calls this) before it can be released or reported on.
    Give ``sensitive`` and ``epsilon`` to have the plan checked against the privacy you
    require, not only against its own statement of it.

    Parameters
    ----------
    plan : Plan
        Typically :meth:`quiltpriv.Plan.from_json` of a saved plan.
    theta : Theta, pgmpy network or sequence of them
        The model the plan claims to be made for.
    query : Query
        The query the plan claims to be made for.
    sensitive : str or iterable of str, optional
        Attributes the plan must protect (it may protect more).
    epsilon : float, optional
        The privacy the plan must give: its epsilon must be at most this.
    max_table, inference, max_memory, engine, settings
        As in :func:`quiltpriv.plan` (how influences are recomputed; a plan made with other
        ``settings`` is recomputed as they decide only when given them).

    Returns
    -------
    Plan
        The plan, marked verified (``verified`` is True).

    Raises
    ------
    ModelError
        The plan was made for another model.
    QueryError
        The plan was made for another query (definition or a sensitivity it used).
    PlanError
        Any other claim of the plan does not hold; the message names the first one.

    Examples
    --------
    A plan read back from its JSON is a claim until verified; an edit that lowers its noise
    is refused:

    >>> import json
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("student")
    >>> query = qp.CountQuery(["height"], records=100)
    >>> saved = qp.plan(theta, query, "income", epsilon=1.0).to_json()
    >>> read = qp.Plan.from_json(saved)
    >>> read.verified, qp.verify_plan(read, theta, query, epsilon=1.0).verified
    (False, True)
    >>> doc = json.loads(saved)
    >>> doc["scale"] = doc["sensitive"]["income"]["scale"] = 1.0
    >>> qp.verify_plan(qp.Plan.from_dict(doc), theta, query)
    Traceback (most recent call last):
    ...
    quiltpriv.errors.PlanError: ...
    """
    return check_plan(plan, theta, query, sensitive=sensitive, epsilon=epsilon,
                      max_table=max_table, inference=inference,
                      max_memory=max_memory, engine=engine,
                      settings=settings).verified_plan()


# -- another model -------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelComparison(JSONResult):
    """A plan checked against a model it was not made for: what differs, and does it suffice.

    Attributes
    ----------
    diff : ModelDiff or None
        The plan's model against this one, when the plan's model was given (its fingerprint
        must be the plan's); None otherwise (a plan holds only its model's fingerprint).
    published_scale : float
        The plan's scale ``b``.
    needed_scale : float
        The scale :func:`quiltpriv.plan` finds under this model for the plan's query,
        sensitive attributes and epsilon.
    needed_optimal : bool
        Whether ``needed_scale`` is proven least (else it is an upper bound on the least).
    suffices : bool or None
        True when ``published_scale >= needed_scale``: the published noise is enough under
        this model, by [ZOC22, Thm. 4]; False when it is below a proven least scale; None
        when it is below a scale not proven least (undecided).
    per_attribute : dict
        Per sensitive attribute: the plan's scale and quilt, and the re-planned ones.
    """

    diff: Any
    published_scale: float
    needed_scale: float | None
    needed_optimal: bool
    suffices: bool | None
    per_attribute: Mapping[str, Mapping[str, Any]]
    replan_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"diff": None if self.diff is None else self.diff.to_dict(),
                "published_scale": self.published_scale, "needed_scale": self.needed_scale,
                "needed_optimal": self.needed_optimal, "suffices": self.suffices,
                "per_attribute": {k: dict(v) for k, v in self.per_attribute.items()},
                "replan_error": self.replan_error}

    def explain(self) -> str:
        lines = []
        if self.diff is None:
            lines.append("the plan holds only its model's fingerprint: give the model it was "
                         "made for (--plan-model) to see which tables differ")
        else:
            lines.append(self.diff.explain())
        if self.needed_scale is None:
            lines.append(f"the plan cannot be made again under this model: {self.replan_error}")
            return "\n".join(lines)
        verdict = {True: "SUFFICES", False: "DOES NOT SUFFICE",
                   None: "UNDECIDED (the re-planned scale is not proven least)"}[self.suffices]
        lines.append(f"re-planned under this model: b = {fmt_number(self.needed_scale)}"
                     f"{'' if self.needed_optimal else ' (not proven least)'}; the published "
                     f"b = {fmt_number(self.published_scale)} {verdict}")
        rows = [(node, fmt_set(r["quilt"]), fmt_number(r["scale"], rounding="up"),
                 fmt_set(r["needed_quilt"]), fmt_number(r["needed_scale"], rounding="up"))
                for node, r in self.per_attribute.items()]
        lines.append("")
        lines += text_table(("sensitive", "published quilt", "scale", "re-planned quilt",
                             "needed"), rows)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


@renamed_keywords(model="theta", plan_model="plan_theta")
def compare_models(plan: Plan, theta: Any, query: Query, *, plan_theta: Any = None,
                   time_limit: float | TimeLimit | None = 60.0,
                   inference: InferenceMethod = "auto",
                   engine: EngineName = "auto") -> ModelComparison:
    """What differs between ``plan``'s model and ``theta``, and whether its noise suffices.

    Re-plans the plan's query, sensitive attributes and epsilon under ``theta`` and compares
    the least scale found with the published one; with ``plan_theta`` (the network the plan was
    made for: its fingerprint must be the plan's) also lists the differing nodes, edges and
    tables (:func:`quiltpriv.model.diff.model_diff`). ``time_limit`` bounds the re-planning
    (seconds, or a :class:`~quiltpriv.utils.time_limit.TimeLimit` already running).

    Raises
    ------
    ModelError
        ``plan_theta`` is not the network the plan states.
    """
    from quiltpriv.mechanisms.apmqm import plan as make_plan
    from quiltpriv.model.diff import model_diff

    if not isinstance(plan, Plan):
        raise PlanError(f"plan must be a quiltpriv Plan, got {type(plan).__name__}")
    check_query(query)
    theta = as_theta(theta)
    diff = None
    if plan_theta is not None:
        published = as_theta(plan_theta)
        mismatch = model_mismatch(plan.model_fingerprint, published, "the plan")
        if mismatch is not None:
            raise ModelError(f"--plan-model is not the plan's model: {mismatch}")
        diff = model_diff(published, theta)
    try:
        replanned = make_plan(theta, query, [sp.sensitive for sp in plan.sensitive], plan.epsilon,
                              time_limit=time_limit, inference=inference, engine=engine)
    except QuiltPrivError as exc:  # the model lacks an attribute the plan names, say
        return ModelComparison(diff, plan.scale, None, False, None, {}, str(exc))
    need = replanned.scale
    suffices: bool | None = True
    if not plan.scale >= need:  # exact, as verify_plan compares scales
        suffices = False if replanned.optimal else None
    by_node = {sp.sensitive: sp for sp in replanned.sensitive}
    per = {sp.sensitive: {"quilt": list(sp.quilt), "scale": sp.scale,
                     "needed_quilt": list(by_node[sp.sensitive].quilt),
                     "needed_scale": by_node[sp.sensitive].scale}
           for sp in plan.sensitive}
    return ModelComparison(diff, plan.scale, need, replanned.optimal, suffices, per)
