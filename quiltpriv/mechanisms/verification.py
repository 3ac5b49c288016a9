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
  ``Delta / (eps - e)`` for the stated ``e`` (Algorithm 3); a claim of optimality is
  re-checked by running the planner's exact search again;
* the overall scale is the largest per-attribute scale and the plan is optimal exactly when
  every attribute is.

Stating *more* noise than needed (a larger influence or scale) is accepted, as long as the
attribute does not also claim to be optimal. The explanation texts and notes are free text,
carried along but not verified. Verifying a plan that claims optimality costs about as much as
planning it again; one that does not costs one influence computation per sensitive attribute.

``quiltpriv verify PLAN.json MODEL`` runs the same check on the command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from quiltpriv.errors import ModelError, ParameterError, PlanError, QueryError, QuiltPrivError
from quiltpriv.graph.quilts import d_connected
from quiltpriv.inference.influence import (
    DEFAULT_MAX_TABLE,
    ROUNDING_MARGIN,
    InferenceMethod,
    InfluenceTooExpensive,
    check_inference,
    influence_upper_bound,
)
from quiltpriv.mechanisms.apmqm import (
    PLAN_FORMAT,
    Plan,
    SensitivePlan,
    _close,
    _describe_query,
    _fmt,
    _jsonable,
    _plain,
    _scale,
    _set,
    _table,
    _trusted,
    canonical_json,
    plan_node,
    query_fingerprint,
)
from quiltpriv.model.network import Theta, as_theta
from quiltpriv.queries.query import (
    CountQuery,
    CustomQuery,
    HistogramQuery,
    LinearQuery,
    MeanQuery,
    Query,
    SumQuery,
)
from quiltpriv.utils.validation import check_epsilon

__all__ = [
    "AttributeCheck",
    "PlanVerification",
    "check_plan",
    "plan_from_dict",
    "plan_from_json",
    "query_from_dict",
    "register_cli",
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

_PLAN_KEYS = ("format", "mechanism", "epsilon", "scale", "optimal", "sensitive", "query",
              "query_fingerprint", "model", "theta_size", "notes", "provenance")
_SENSITIVE_KEYS = ("node", "quilt", "nearby", "remote", "influence", "sensitivity", "scale",
                   "quilts_considered", "optimal", "explanation", "influence_member",
                   "influence_pair", "influence_bound_via", "influence_arithmetic")

#: Query kinds :func:`query_from_dict` rebuilds (a custom query's code is not in its JSON).
REBUILDABLE_QUERIES: Mapping[str, type[Query]] = {
    c.kind: c for c in (CountQuery, SumQuery, MeanQuery, LinearQuery, HistogramQuery)}


# -- strict parsing ------------------------------------------------------------------------


def _fail(where: str, what: str, got: Any) -> PlanError:
    shown = repr(got)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return PlanError(f"plan: {where} must be {what}, got {shown}")


def _number(x: Any, where: str, *, positive: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise _fail(where, "a number", x)
    try:
        v = float(x)
    except OverflowError:  # an integer beyond the float range
        v = math.inf
    if not math.isfinite(v):
        raise _fail(where, "a finite number", x)
    if v < 0 or (positive and v == 0):
        raise _fail(where, "a number > 0" if positive else "a number >= 0", x)
    return v


def _bool(x: Any, where: str) -> bool:
    if not isinstance(x, bool):
        raise _fail(where, "true or false", x)
    return x


def _int(x: Any, where: str, minimum: int) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < minimum:
        raise _fail(where, f"a whole number >= {minimum}", x)
    return x


def _text(x: Any, where: str) -> str:
    if not isinstance(x, str):
        raise _fail(where, "a string", x)
    return x


def _digest(x: Any, where: str) -> str:
    if not (isinstance(x, str) and len(x) == 64
            and all(c in "0123456789abcdef" for c in x)):
        raise _fail(where, "a SHA-256 digest (64 lower-case hexadecimal digits)", x)
    return x


def _names(x: Any, where: str) -> tuple[str, ...]:
    if not isinstance(x, list) or not all(isinstance(v, str) and v for v in x):
        raise _fail(where, "a list of node names", x)
    if len(set(x)) != len(x):
        raise PlanError(f"plan: {where} names a node twice: {x}")
    return tuple(x)


def _keys(d: Any, keys: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(d, Mapping):
        raise _fail(where, "an object", d)
    missing = [k for k in keys if k not in d]
    if missing:
        raise PlanError(f"plan: {where} has no {', '.join(map(repr, missing))}")
    extra = [k for k in d if k not in keys]
    if extra:
        raise PlanError(f"plan: {where} has unknown field(s) {', '.join(map(repr, extra))}")
    return d


def _sensitive(node: Any, s: Any) -> SensitivePlan:
    if not isinstance(node, str) or not node:
        raise _fail("a key of 'sensitive'", "a node name", node)
    where = f"sensitive[{node!r}]"
    s = _keys(s, _SENSITIVE_KEYS, where)
    if s["node"] != node:
        raise PlanError(f"plan: {where}.node is {s['node']!r}, not {node!r}")
    quilt, nearby, remote = (_names(s[k], f"{where}.{k}") for k in ("quilt", "nearby", "remote"))
    member = s["influence_member"]
    if member is not None:
        member = _text(member, f"{where}.influence_member")
    pair = s["influence_pair"]
    if pair is not None:
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(v, str | int | float) for v in pair)):
            raise _fail(f"{where}.influence_pair", "null or a list of two values", pair)
        pair = tuple(pair)
    via = s["influence_bound_via"]
    if via is not None:
        via = _names(via, f"{where}.influence_bound_via")
    arithmetic = s["influence_arithmetic"]
    if arithmetic not in ("float64", "exact"):
        raise _fail(f"{where}.influence_arithmetic", '"float64" or "exact"', arithmetic)
    return SensitivePlan(
        node=node, quilt=quilt, nearby=nearby, remote=remote,
        influence=_number(s["influence"], f"{where}.influence"),
        sensitivity=_number(s["sensitivity"], f"{where}.sensitivity"),
        scale=_number(s["scale"], f"{where}.scale"),
        quilts_considered=_int(s["quilts_considered"], f"{where}.quilts_considered", 1),
        optimal=_bool(s["optimal"], f"{where}.optimal"),
        explanation=_text(s["explanation"], f"{where}.explanation"),
        influence_member=member, influence_pair=pair, influence_bound_via=via,
        influence_arithmetic=arithmetic,
    )


def plan_from_dict(d: Any) -> Plan:
    """Parse a plan's JSON object strictly (see :meth:`quiltpriv.Plan.from_dict`).

    The plan returned is not verified.

    Raises
    ------
    PlanError
        Naming the first malformed field; for a plan without ``"format"`` (written before
        plans were versioned) or with another format, saying to plan again.
    """
    if not isinstance(d, Mapping):
        raise _fail("the document", "a JSON object", d)
    if "format" not in d:
        raise PlanError("plan: no 'format' field: this is not a quiltpriv plan, or one written "
                        f"by an older quiltpriv (before {PLAN_FORMAT!r}); plan it again")
    if d["format"] != PLAN_FORMAT:
        raise PlanError(f"plan: unknown format {d['format']!r} (this quiltpriv reads "
                        f"{PLAN_FORMAT!r}); plan it again")
    d = _keys(d, _PLAN_KEYS, "the plan")
    if d["mechanism"] != "APMQM":
        raise _fail("mechanism", "'APMQM'", d["mechanism"])
    sensitive = d["sensitive"]
    if not isinstance(sensitive, Mapping) or not sensitive:
        raise _fail("sensitive", "a non-empty object (one entry per sensitive attribute)",
                    sensitive)
    query = d["query"]
    if not isinstance(query, Mapping) or not isinstance(query.get("kind"), str):
        raise _fail("query", "an object with a 'kind'", query)
    try:
        query = _plain(query, "plan: query")
    except QueryError as exc:
        raise PlanError(str(exc)) from None
    notes = d["notes"]
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise _fail("notes", "a list of strings", notes)
    provenance = d["provenance"]
    if provenance is not None and not isinstance(provenance, dict):
        raise _fail("provenance", "null or an object", provenance)
    return Plan(
        epsilon=_number(d["epsilon"], "epsilon", positive=True),
        scale=_number(d["scale"], "scale"),
        optimal=_bool(d["optimal"], "optimal"),
        sensitive=tuple(_sensitive(k, v) for k, v in sensitive.items()),
        query=query,
        model=_digest(d["model"], "model"),
        theta_size=_int(d["theta_size"], "theta_size", 1),
        query_fingerprint=_digest(d["query_fingerprint"], "query_fingerprint"),
        notes=tuple(notes), provenance=provenance,
    )


def _reject_constant(name: str) -> Any:
    raise PlanError(f"plan: the JSON holds {name}; every number must be finite")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise PlanError(f"plan: the JSON names {', '.join(map(repr, dup))} twice in one object")
    return dict(pairs)


def plan_from_json(text: str | bytes) -> Plan:
    """Parse a plan's JSON text strictly (:func:`plan_from_dict`); not verified."""
    try:
        doc = json.loads(text, parse_constant=_reject_constant,
                         object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise PlanError(f"plan: not valid JSON: {exc}") from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise PlanError(f"plan: cannot read the JSON: {exc}") from None
    if isinstance(doc, dict) and "format" not in doc and isinstance(doc.get("plan"), dict):
        raise PlanError("plan: this is a release record or an audit report, not a plan; its "
                        "plan is the 'plan' field")
    if isinstance(doc, dict) and doc.get("format") == "quiltpriv-audit-report":
        raise PlanError("plan: this is an audit report, not a plan; its plan is the 'plan' "
                        "field")
    return plan_from_dict(doc)


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


@dataclass(frozen=True)
class AttributeCheck:
    """The verification of one sensitive attribute of a plan: stated against recomputed.

    Attributes
    ----------
    node : str
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
    stated_sensitivity, sensitivity : float, float or None
        The plan's ``Delta_{A and N} F`` and the query's.
    stated_scale, scale : float, float or None
        The plan's scale and ``Delta / (eps - e)`` for the query's Delta and the stated ``e``.
    optimal : bool
        The plan's claim.
    least_scale : float or None
        The least scale the planner's search finds again (only when optimality is claimed).
    """

    node: str
    ok: bool
    reason: str | None
    quilt: tuple[str, ...]
    stated_influence: float
    influence: float | None = None
    influence_exact: bool = True
    stated_sensitivity: float = 0.0
    sensitivity: float | None = None
    stated_scale: float = 0.0
    scale: float | None = None
    optimal: bool = False
    least_scale: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["quilt"] = list(self.quilt)
        return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v)
                for k, v in d.items()}


@dataclass(frozen=True)
class PlanVerification:
    """The verdict of :func:`check_plan`.

    Attributes
    ----------
    ok : bool
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
            "model": self.plan.model, "query": dict(self.query),
            "sensitive": {c.node: c.to_dict() for c in self.attributes},
            "unverified_fields": ["explanation", "notes", "quilts_considered"],
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        """One screen: the verdict, then stated against recomputed per sensitive attribute."""
        p = self.plan
        head = ("plan VERIFIED against the model and the query" if self.ok
                else f"plan FAILED verification: {self.failure}")
        lines = [head,
                 f"APMQM, epsilon = {p.epsilon:g}, Laplace scale b = {_fmt(p.scale)} "
                 f"({'optimal over all quilts' if p.optimal else 'optimality not claimed'})",
                 f"protects {_set(sp.node for sp in p.sensitive)}; model {p.model[:16]}...; "
                 f"query: {_describe_query(self.query)}"
                 + (f", where {self.query['where']}" if self.query.get("where") else ""), ""]
        if self.attributes:
            header = ("sensitive", "quilt Q", "influence", "recomputed", "Delta_{A&N}",
                      "scale", "needed", "least", "verdict")
            rows = []
            for c in self.attributes:
                infl = "-" if c.influence is None else (
                    _fmt(c.influence) + ("" if c.influence_exact else " (bound)"))
                rows.append((c.node, _set(c.quilt), _fmt(c.stated_influence), infl,
                             _fmt(c.stated_sensitivity), _fmt(c.stated_scale),
                             "-" if c.scale is None else _fmt(c.scale),
                             "-" if c.least_scale is None else _fmt(c.least_scale),
                             "OK" if c.ok else "FAILED"))
            lines += _table(header, rows)
            for c in self.attributes:
                if not c.ok:
                    lines.append(f"{c.node}: FAILED: {c.reason}")
            lines.append("")
        lines.append("explanations, notes and quilts_considered are free text or counts: "
                     "carried along, not verified")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _check_attribute(theta: Theta, query: Query, sp: SensitivePlan, eps: float,
                     max_table: int, inference: InferenceMethod) -> AttributeCheck:
    """Recompute one attribute's quilt, influence, sensitivity, scale and optimality."""
    node = sp.node
    found: dict[str, Any] = {"node": node, "quilt": sp.quilt,
                             "stated_influence": sp.influence,
                             "stated_sensitivity": sp.sensitivity, "stated_scale": sp.scale,
                             "optimal": sp.optimal}

    def fail(reason: str) -> AttributeCheck:
        return AttributeCheck(ok=False, reason=reason, **found)

    q, n, r = set(sp.quilt), set(sp.nearby), set(sp.remote)
    unknown = [v for v in (*sp.quilt, *sp.nearby, *sp.remote) if v not in theta]
    if unknown:
        return fail(f"its quilt names {_set(unknown)}, not in the network")
    if node not in n:
        return fail(f"{node!r} is not in its own nearby set N")
    both = (q & n) | (q & r) | (n & r)
    if both:
        return fail(f"{_set(theta.sort(both))} is in more than one of Q, N and R")
    missing = set(theta.nodes) - q - n - r
    if missing:
        return fail(f"Q, N and R do not cover the network: {_set(theta.sort(missing))} is in "
                    "none of them")
    reached = d_connected(theta, node, q) & r
    if reached:
        return fail(f"Q = {_set(sp.quilt)} does not d-separate {node!r} from "
                    f"{_set(theta.sort(reached))}, which the plan puts in the remote set R")
    try:
        infl = influence_upper_bound(theta, node, theta.sort(q), max_table=max_table,
                                     inference=inference)
    except InfluenceTooExpensive as exc:
        return fail(f"the influence of Q = {_set(sp.quilt)} cannot be recomputed within "
                    f"max_table = {max_table}: {exc}")
    found.update(influence=infl.value, influence_exact=infl.exact)
    if sp.influence < infl.value - INFLUENCE_SLACK * max(1.0, infl.value):
        what = "exact" if infl.exact else "an upper bound (the exact value is too expensive)"
        return fail(f"it states influence e(Q|{node}) = {sp.influence:.17g}, below the "
                    f"recomputed {infl.value:.17g} ({what})")
    delta = query.sensitivity(set(query.attributes) & n)
    found.update(sensitivity=delta)
    if sp.sensitivity != delta:
        return fail(f"it states Delta_{{A&N}} F = {sp.sensitivity:.17g}, the query's is "
                    f"{delta:.17g}")
    need = _scale(delta, sp.influence, eps)
    found.update(scale=need)
    if not (sp.scale >= need or _close(sp.scale, need)):
        if math.isinf(need):
            return fail(f"its influence {sp.influence:.17g} is not below epsilon = {eps:g}, "
                        "so no finite scale makes this quilt private")
        return fail(f"it states scale {sp.scale:.17g}, below Delta / (eps - e) = "
                    f"{need:.17g}")
    if sp.optimal:
        best = plan_node(theta, query, node, eps, max_table=max_table, inference=inference)
        found.update(least_scale=best.scale)
        if not best.optimal:
            return fail("it claims the least scale over all quilts, which could not be "
                        "re-checked: " + best.explanation.rpartition("Optimality not proven: ")[2])
        if not (sp.scale <= best.scale or math.isclose(sp.scale, best.scale,
                                                       rel_tol=OPTIMALITY_RTOL)):
            return fail(f"it claims the least scale over all quilts, but quilt "
                        f"{_set(best.quilt)} needs only {best.scale:.17g} < {sp.scale:.17g}")
    if sp.influence_member is not None and sp.influence_member not in theta.names:
        return fail(f"its influence_member {sp.influence_member!r} is not a member of Theta "
                    f"({', '.join(theta.names)})")
    if sp.influence_pair is not None:
        states = [_jsonable(x) for x in theta.states[node]]
        bad = [x for x in sp.influence_pair if x not in states]
        if bad:
            return fail(f"its influence_pair names {bad[0]!r}, not a value of {node!r}")
    if sp.influence_bound_via is not None:
        unknown = [v for v in sp.influence_bound_via if v not in theta]
        if unknown:
            return fail(f"its influence_bound_via names {_set(unknown)}, not in the network")
    return AttributeCheck(ok=True, reason=None, **found)


def check_plan(plan: Plan, model: Any, query: Query, *,
               sensitive: str | Iterable[str] | None = None, epsilon: float | None = None,
               max_table: int = DEFAULT_MAX_TABLE,
               inference: InferenceMethod = "auto") -> PlanVerification:
    """Verify ``plan`` against ``model`` and ``query``; never raises for a discrepancy.

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
    model : Theta, pgmpy network or sequence of them
        The model the plan claims to be made for.
    query : Query
        The query the plan claims to be made for.
    sensitive : str or iterable of str, optional
        Attributes the plan must protect (it may protect more).
    epsilon : float, optional
        The privacy the plan must give: its epsilon must be at most this.
    max_table, inference
        As in :func:`quiltpriv.plan` (how influences are recomputed).

    Returns
    -------
    PlanVerification
        ``ok``, the first discrepancy, one :class:`AttributeCheck` per sensitive attribute
        and, when ``ok``, the verified plan.
    """
    if not isinstance(plan, Plan):
        raise PlanError(f"plan must be a quiltpriv Plan, got {type(plan).__name__}")
    if not isinstance(query, Query):
        raise QueryError(f"query must be a quiltpriv query, got {type(query).__name__}")
    theta = as_theta(model)
    inference = check_inference(inference)
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
    rows = tuple(_check_attribute(theta, query, sp, eps, max_table, inference)
                 for sp in plan.sensitive)
    for c in rows:
        if not c.ok:
            return verdict("plan", f"sensitive attribute {c.node!r}: {c.reason}", rows)
    failure = _summary_mismatch(plan)
    if failure is not None:
        return verdict("plan", failure, rows)
    if query_fingerprint(query, [sp.nearby for sp in plan.sensitive]) != plan.query_fingerprint:
        return verdict("query", "the plan's query fingerprint does not match this query "
                                "(its definition and the sensitivities Delta_A and Delta_{A&N} "
                                "the plan uses): the query differs from the one the plan was "
                                "made for (Delta_A, say), or the plan was edited", rows)
    verified = _trusted(dataclasses.replace(plan))
    return PlanVerification(True, None, None, rows, verified, definition)


def _model_mismatch(plan: Plan, theta: Theta) -> str | None:
    """Why ``plan`` was not made for ``theta`` (fingerprint, size, provenance), or None."""
    fingerprint = theta.fingerprint()
    if plan.model != fingerprint:
        return (f"it was made for another model (model fingerprint "
                f"{plan.model[:16]}..., this model's is {fingerprint[:16]}...)")
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
    unknown = [sp.node for sp in plan.sensitive if sp.node not in theta]
    if unknown:
        return f"sensitive attribute(s) {_set(unknown)} not in the network"
    nodes = [sp.node for sp in plan.sensitive]
    if len(set(nodes)) != len(nodes) or not nodes:
        return "its sensitive attributes are empty or repeated"
    if sensitive is not None:
        left_out = [s for s in theta.check_sensitive(sensitive) if s not in nodes]
        if left_out:
            return f"it does not protect {_set(left_out)} (it protects {_set(nodes)})"
    if epsilon is not None and eps > check_epsilon(epsilon):
        return (f"it is made for epsilon = {eps:g}, weaker than the required "
                f"{float(epsilon):g}")
    return None


def _query_mismatch(plan: Plan, theta: Theta, query: Query,
                    definition: dict[str, Any]) -> str | None:
    """Why the plan was made for another query (or one over unknown attributes), or None."""
    unknown = [a for a in query.attributes if a not in theta]
    if unknown:
        return f"query attribute(s) {_set(unknown)} not in the network"
    try:
        mine, theirs = canonical_json(definition), canonical_json(plan.query)
    except QueryError as exc:
        return str(exc)
    if mine != theirs:
        return f"it was made for another query: {theirs} in the plan, {mine} given"
    return None


def _summary_mismatch(plan: Plan) -> str | None:
    """Why the plan's overall scale or optimality disagrees with its attributes, or None."""
    top = max(sp.scale for sp in plan.sensitive)
    if plan.scale != top:
        return (f"it states the overall scale {plan.scale:.17g}, but the "
                f"largest per-attribute scale is {top:.17g}")
    every = all(sp.optimal for sp in plan.sensitive)
    if plan.optimal != every:
        return (f"it states optimal = {str(plan.optimal).lower()}, but the "
                f"attributes say {str(every).lower()}")
    return None


def verify_plan(plan: Plan, model: Any, query: Query, *,
                sensitive: str | Iterable[str] | None = None, epsilon: float | None = None,
                max_table: int = DEFAULT_MAX_TABLE, inference: InferenceMethod = "auto") -> Plan:
    """The plan, verified against ``model`` and ``query``, ready for :func:`quiltpriv.release`.

    A plan made by :func:`quiltpriv.plan` in this process is already verified; one read from
    a file (:meth:`quiltpriv.Plan.from_json`) must pass through here (or through
    ``release(..., model=...)``, which calls this) before it can be released or reported on.
    Parameters as in :func:`check_plan`; give ``sensitive`` and ``epsilon`` to have the plan
    checked against the privacy you require, not only against its own statement of it.

    Raises
    ------
    ModelError
        The plan was made for another model.
    QueryError
        The plan was made for another query (definition or a sensitivity it used).
    PlanError
        Any other claim of the plan does not hold; the message names the first one.
    """
    return check_plan(plan, model, query, sensitive=sensitive, epsilon=epsilon,
                      max_table=max_table, inference=inference).verified_plan()


# -- command line --------------------------------------------------------------------------


def _query_group_given(parser: argparse.ArgumentParser, args: argparse.Namespace) -> bool:
    """True when any option of the ``query`` group differs from its default."""
    for group in parser._action_groups:
        if group.title == "query":
            return any(getattr(args, a.dest) != a.default for a in group._group_actions)
    return False


def _cmd_verify(args: argparse.Namespace) -> int:
    from quiltpriv.cli.core import emit, query_from_args, sensitive_from_args, theta_from_args

    with open(args.plan, "rb") as fh:
        plan = plan_from_json(fh.read())
    theta = theta_from_args(args)
    if _query_group_given(args._parser, args):
        query = query_from_args(args)
    else:
        query = query_from_dict(plan.query)
    sensitive = sensitive_from_args(args) if args.sensitive is not None else None
    result = check_plan(plan, theta, query, sensitive=sensitive, epsilon=args.epsilon)
    emit(result.to_json() if args.json else result.explain(), None)
    result.verified_plan()  # a failure becomes the one-line error and exit status 2
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv verify PLAN.json MODEL [--theta MODEL2 ...] [query options] [--json]``."""
    from quiltpriv.cli.core import add_model_arguments, add_query_arguments, epsilon_type

    p = sub.add_parser(
        "verify", help="verify a saved plan against the model (and the query)",
        description="Verify a plan saved with 'quiltpriv plan --json' against MODEL: the model "
                    "fingerprint, and per sensitive attribute the quilt (d-separation), the "
                    "influence, the sensitivity and the scale recomputed, and a claim of "
                    "optimality re-checked. The query is given by the query options; without "
                    "them it is rebuilt from the plan's own record (not possible for a custom "
                    "query), which checks the plan against the query it states. Give "
                    "--sensitive and --epsilon to check that it gives the privacy you require, "
                    "not only the privacy it states. Exit status 0 when the plan verifies, 2 "
                    "otherwise.")
    p.add_argument("plan", metavar="PLAN.json", help="the plan (JSON of 'quiltpriv plan --json')")
    add_model_arguments(p)
    p.add_argument("--sensitive", metavar="S1[,S2...]",
                   help="attributes the plan must protect (it may protect more)")
    p.add_argument("--epsilon", type=epsilon_type, metavar="E",
                   help="the privacy required: the plan's epsilon must be at most E")
    add_query_arguments(p)
    p.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    p.set_defaults(func=_cmd_verify, _parser=p)
