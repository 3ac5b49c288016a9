"""The Attribute-Private Markov Quilt Mechanism (APMQM, [ZOC22, Alg. 3]) : plan and release.

For every sensitive attribute ``i`` [ZOC22, Alg. 3] takes the quilt of least Laplace scale

    b_i = min( Delta_A F / eps,  min over quilts with e(Q|i) < eps of
                                  Delta_{A and N(Q)} F / (eps - e_Theta(Q | i)) )

(a quilt with ``Delta_{A and N} F = 0`` and ``e <= eps`` gives ``b_i = 0``) and releases
``F(X) + Lap(max_i b_i)``; Theorem 4 makes the release (eps, 0)-distributional attribute
private (the proof's first ratio is ``exp(eps - e)``, not ``exp(eps - exp(e))`` as printed).

Exact optimum over all quilts, cheaply. The scale of a quilt depends on ``Q`` only through
``e(Q|i)`` and through ``A & N(Q)``. For each set ``T`` of query attributes to keep out of
``N``, :func:`quiltpriv.graph.quilts.least_influence_quilt` returns a quilt ``Q*(T)`` whose
influence is at most that of *every* quilt keeping ``T`` out of ``N`` (monotonicity and the
data-processing inequality). The optimal quilt ``Q_opt`` keeps ``T = A - N(Q_opt)`` out of
``N``, so ``Q*(T)`` is at least as good: the optimum over all ``2**(m-1)`` quilts is the least
scale over the candidates ``Q*(T)``. The query says how its sensitivity depends on the
columns (``Query.sensitivity_structure``), and the search uses it instead of trying all
``2**|A|`` targets:

- all-or-nothing (count, histogram; sum and mean read one attribute): two candidates,
  ``T = {}`` (the quilt ``Q = {}``) and ``T`` = every query attribute other than ``i``;
- additive (linear) and general (custom): a branch and bound over ``T``. ``e(Q*(T))`` is
  monotone in ``T`` and ``Delta`` of what ``T`` leaves in ``N`` shrinks as ``T`` grows, which
  bounds every target below a node of the search; for additive sensitivities, influences also
  add up over parts of ``Q`` that are independent given ``phi_i``, which bounds them further.
  The search stops at ``max_candidates`` targets or the time limit with a valid plan flagged
  as not proven optimal.

A plan over many sensitive attributes shares its work across them (:class:`_Shared`): a few
graph walks from the query's attributes give every attribute's candidates and nearby query
attributes (:class:`~quiltpriv.graph.quilts.QuiltIndex`), and one batched propagation gives
every influence (:mod:`quiltpriv.inference.attribute_joints`), so a plan of every node of a
long network of bounded treewidth is linear in it; a plan too large to list each attribute's
``N`` and ``R`` keeps the query attributes in ``N`` instead (:data:`LIST_SETS_LIMIT`).

docs/concepts.md has the proofs; tests check the planner against brute force.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from numbers import Real
from typing import Any, NamedTuple, cast

import numpy as np

from quiltpriv.errors import ParameterError, PlanError, QueryError
from quiltpriv.graph.quilts import (
    Quilt,
    QuiltIndex,
    least_influence_quilt,
    markov_quilt,
    moral_ancestral_graph,
    trivial_quilt,
)
from quiltpriv.inference.attribute_joints import (
    DEFAULT_MAX_HELD,
    DEFAULT_MAX_WORK,
    AttributeJoints,
    attribute_joints,
    joint_influence,
    propagation_work,
)
from quiltpriv.inference.influence import (
    InferenceMethod,
    Influence,
    InfluenceTooExpensive,
    check_inference,
    elimination_work,
    fmt_influence,
    influence_upper_bound,
    joint_marginal,
)
from quiltpriv.inference.junction_tree import fill_tree_structure
from quiltpriv.mechanisms.calibration import scale_up
from quiltpriv.mechanisms.plan_fields import (
    _bool,
    _digest,
    _fail,
    _int,
    _keys,
    _names,
    _number,
    _text,
)
from quiltpriv.mechanisms.protocol import Calibration, Guarantee, GuaranteeKind
from quiltpriv.mechanisms.step_plans import TIME_LIMIT_REASON, StepPlans
from quiltpriv.model.network import Theta, as_theta, check_theta
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.format import describe_query as _describe_query
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.format import fmt_set as _set
from quiltpriv.utils.format import text_table as _table
from quiltpriv.utils.memory import table_limit
from quiltpriv.utils.serialize import JSONResult, jsonable
from quiltpriv.utils.validation import (
    check_epsilon,
    check_instance,
    check_n_jobs,
    check_positive,
    check_scalar,
)

#: What an APMQM release guarantees ([ZOC22, Def. 4, Thm. 4]).
GUARANTEE_KIND: GuaranteeKind = "distributional attribute privacy"

#: The assumptions of [ZOC22, Thm. 4], in plain words.
APMQM_ASSUMPTIONS = (
    "the attribute parameters phi follow the hyperparameter network for some theta in Theta",
    "the records are drawn independently given phi",
    "the query reads only its declared attributes and at most its declared number of records",
)


@dataclass(frozen=True)
class SensitivePlan(JSONResult):
    """The chosen quilt for one sensitive attribute and why it was chosen.

    Attributes
    ----------
    node : str
        The sensitive attribute ``i``.
    quilt : tuple of str
        The chosen quilt ``Q`` (network order).
    nearby, remote : tuple of str or None
        Its nearby set ``N`` and remote set ``R`` (network order), or None in a plan too large
        to list them (:data:`LIST_SETS_LIMIT`); :meth:`partition` gives them on demand.
    influence : float
        ``e_Theta(Q | i)``, rounded upwards by at least 1e-10 relative plus 1e-10 absolute and
        by a proven bound on float64's rounding (never below the exact value).
    sensitivity : float
        ``Delta_{A and N} F``.
    scale : float
        ``b_i``, the Laplace scale this attribute needs.
    quilts_considered : int
        Distinct candidate quilts whose scale was evaluated (trivial quilt included).
    optimal : bool
        True when ``scale`` is proven to be the least over all quilts of ``i``.
    explanation : str
        One paragraph, for humans.
    influence_member : str or None
        The member of Theta attaining the influence.
    influence_pair : tuple or None
        The values ``(a, b)`` of ``phi_i`` attaining it.
    influence_bound_via : tuple of str or None
        ``None`` when ``influence`` is exact; else the separator whose exact influence bounds it.
    influence_arithmetic : {"float64", "exact"}
        ``"exact"`` when the influence was computed in exact integer arithmetic (the model's
        probabilities are too small for float64, or float64 could not tell a tiny influence
        from 0).
    nearby_attributes : tuple of str or None
        In a plan that does not list ``nearby`` (and then only), the query's attributes in
        ``N`` (network order): all ``Delta_{A and N}`` reads. :meth:`nearby_in` answers
        either way.
    """

    node: str
    quilt: tuple[str, ...]
    nearby: tuple[str, ...] | None
    remote: tuple[str, ...] | None
    influence: float
    sensitivity: float
    scale: float
    quilts_considered: int
    optimal: bool
    explanation: str
    influence_member: str | None = None
    influence_pair: tuple[Any, Any] | None = None
    influence_bound_via: tuple[str, ...] | None = None
    influence_arithmetic: str = "float64"
    nearby_attributes: tuple[str, ...] | None = None

    @property
    def sets_listed(self) -> bool:
        """Whether ``nearby`` and ``remote`` are listed (see :data:`LIST_SETS_LIMIT`)."""
        return self.nearby is not None

    def nearby_in(self, attributes: Iterable[str]) -> tuple[str, ...]:
        """The query attributes (``attributes``, the plan's query's) that are in ``N``."""
        near = set(self.nearby if self.nearby is not None else self.nearby_attributes or ())
        return tuple(a for a in attributes if a in near)

    def partition(self, model: Any) -> Quilt:
        """The quilt ``(Q, N, R)``: as listed, or recomputed from ``model`` (linear in it).

        The remote set of an unlisted plan is the largest one ``Q`` d-separates (how
        :func:`plan` chooses it); for the trivial quilt (``Q = {}``, every query attribute
        nearby) that is the quilt ``Q = {}`` with its remote set, which needs no more noise.
        """
        if self.nearby is not None and self.remote is not None:
            return Quilt(self.node, self.quilt, self.nearby, self.remote)
        return markov_quilt(as_theta(model), self.node, self.quilt)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["quilt"] = list(self.quilt)
        d["nearby"] = None if self.nearby is None else list(self.nearby)
        d["remote"] = None if self.remote is None else list(self.remote)
        d["nearby_attributes"] = (None if self.nearby_attributes is None
                                  else list(self.nearby_attributes))
        d["influence_pair"] = None if self.influence_pair is None else [
            jsonable(x) for x in self.influence_pair]
        d["influence_bound_via"] = None if self.influence_bound_via is None else list(
            self.influence_bound_via)
        return d

    def _repr_html_(self) -> str:
        return sensitive_plan_html(self)


#: The ``"format"`` of a plan's JSON. A plan without it (written before plans were versioned)
#: or with another value is refused by :meth:`Plan.from_dict`: plan it again.
PLAN_FORMAT = "quiltpriv-plan/2"

#: The previous format, still read: it lists ``nearby`` and ``remote`` for every attribute and
#: has no ``nearby_attributes``.
PLAN_FORMAT_1 = "quiltpriv-plan/1"

#: The format of a plan of the steps of a time series held as runs
#: (:class:`~quiltpriv.mechanisms.step_plans.StepPlans`): ``"sensitive"`` is
#: ``{"order", "attributes", "listed", "runs"}`` instead of one object per attribute.
PLAN_FORMAT_RUNS = "quiltpriv-plan/3"

#: A plan lists every sensitive attribute's ``nearby`` and ``remote`` sets when the network's
#: size times the number of sensitive attributes is at most this (about a million names);
#: above it they are ``null``, so that a plan, its JSON and its text stay linear in the
#: network, and ``nearby_attributes`` (the query attributes in ``N``, all the noise depends
#: on) and :meth:`SensitivePlan.partition` stand for them. ``plan(list_sets=...)`` overrides.
LIST_SETS_LIMIT = 2**20

#: ... and the network has at most this many nodes: a plan of one attribute of a year-long
#: series (500,000 steps) would otherwise list 13 MB of names nobody asked for, and cost more
#: than a plan of every step.
LIST_SETS_MAX_NODES = 2**16

_QUERY_FINGERPRINT_FORMAT = "quiltpriv-query-fingerprint/1"

#: The note of a plan that is not verified (read from a file or built by hand).
UNVERIFIED_NOTE = ("NOT VERIFIED: this plan was read from a file or built by hand; its numbers are "
               "claims until quiltpriv.verify_plan(plan, model, query) recomputes them")


def _plain(x: Any, where: str) -> Any:
    """``x`` as plain JSON values (numpy scalars unwrapped, tuples as lists), or raise."""
    if isinstance(x, Mapping):
        out = {}
        for k, v in x.items():
            if not isinstance(k, str):
                raise QueryError(f"{where}: key {k!r} is not a string")
            out[k] = _plain(v, where)
        return out
    if isinstance(x, list | tuple):
        return [_plain(v, where) for v in x]
    if isinstance(x, np.generic):
        return _plain(x.item(), where)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise QueryError(f"{where}: {x} is not a finite number")
        return x
    if isinstance(x, str | int | bool) or x is None:
        return x
    raise QueryError(f"{where}: a value of type {type(x).__name__} has no JSON form")


def canonical_json(x: Any) -> str:
    """One canonical JSON text of ``x``: sorted keys, no spaces, finite numbers only."""
    return json.dumps(_plain(x, "canonical JSON"), sort_keys=True, separators=(",", ":"),
                      allow_nan=False, ensure_ascii=True)


def query_fingerprint(query: Query, column_sets: Iterable[Iterable[str]]) -> str:
    """SHA-256 of a query's whole definition and of the sensitivities a plan used.

    The hashed document is the canonical JSON of ``query.to_dict()`` (every field that gives
    the query its meaning) and of ``Delta_B F`` for ``B = A`` and for ``B = A & S`` for each
    set ``S`` of ``column_sets`` (a plan's nearby sets ``N``), each recomputed from ``query``.
    Two queries with the same fingerprint for a plan have the same definition and need the
    same noise under it.

    Parameters
    ----------
    query : Query
    column_sets : iterable of iterable of str
        The nearby sets of the plan's chosen quilts.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    check_query(query)
    attrs = tuple(query.attributes)
    pos = {a: k for k, a in enumerate(attrs)}
    if len(pos) == len(attrs):
        # each set's query attributes in the query's order, in time linear in the set (not in
        # |A| per set: a plan of every step of a long series has as many sets as steps)
        sets = {tuple(attrs[k] for k in sorted({pos[a] for a in b if a in pos}))
                for b in column_sets} | {attrs}
    else:  # repeated attributes (kept in every set as the query repeats them)
        sets = {tuple(a for a in attrs if a in frozenset(b)) for b in column_sets} | {attrs}
    table = [[list(b), float(query.sensitivity(b))]
             for b in sorted(sets, key=lambda b: (len(b), tuple(map(pos.__getitem__, b))))]
    # canonical_json of {"format", "query", "sensitivities"} (keys in that, sorted, order),
    # with the table, plain strings and floats by construction, written by json directly (a
    # plan of every step of a long series has as many sets as steps)
    try:
        table_text = json.dumps(table, separators=(",", ":"), allow_nan=False,
                                ensure_ascii=True)
    except ValueError:
        raise QueryError("query fingerprint: a sensitivity is not a finite number") from None
    text = (f'{{"format":{json.dumps(_QUERY_FINGERPRINT_FORMAT)},"query":'
            f'{canonical_json(query.to_dict())},"sensitivities":{table_text}}}')
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _nearby_query_attributes(sp: SensitivePlan, attributes: frozenset[str]) -> tuple[str, ...]:
    """The query attributes (the set ``attributes``) in ``sp``'s ``N``, in network order.

    :meth:`SensitivePlan.nearby_in` for a set given once: linear in ``N`` (or in the listed
    ``nearby_attributes``), not in ``A``, so that checking every attribute of a plan over every
    step of a long series stays linear in it.
    """
    near = sp.nearby if sp.nearby is not None else sp.nearby_attributes or ()
    return tuple(v for v in near if v in attributes)


def query_mismatch(plan_: Plan, query: Query) -> str | None:
    """Why ``query`` is not the query ``plan_`` was made for, or None when it is.

    Compares the definition (``to_dict``), each sensitivity ``Delta_{A&N}`` the plan used and
    the fingerprint (which also covers ``Delta_A``), all recomputed from ``query`` now.
    """
    check_instance(plan_, Plan, "plan")
    if not isinstance(query, Query):
        return f"query must be a quiltpriv query, got {type(query).__name__}"
    try:
        mine, theirs = canonical_json(query.to_dict()), canonical_json(plan_.query)
    except QueryError as exc:
        return str(exc)
    if mine != theirs:
        return (f"its definition differs from the plan's: {mine} here, {theirs} in the "
                "plan")
    if isinstance(plan_.sensitive, StepPlans):
        return _runs_query_mismatch(plan_, query)
    attrs = frozenset(query.attributes)
    nears = [_nearby_query_attributes(sp, attrs) for sp in plan_.sensitive]
    for sp, near in zip(plan_.sensitive, nears, strict=True):
        delta = query.sensitivity(near)
        if delta != sp.sensitivity:
            return (f"its sensitivity Delta_{{A&N}} for {sp.node!r} (A & N = "
                    f"{_set(near)}) is {delta:.17g}, the plan used {sp.sensitivity:.17g}")
    if query_fingerprint(query, nears) != plan_.query_fingerprint:
        return "its fingerprint (definition and every sensitivity the plan used) differs"
    return None


def _runs_query_mismatch(plan_: Plan, query: Query) -> str | None:
    """:func:`query_mismatch` of a plan held as runs: every step's ``Delta_{A&N}`` and the
    fingerprint, recomputed (linear in the steps)."""
    from quiltpriv.mechanisms.step_plans import window_fingerprint, window_sensitivities

    steps = cast(StepPlans, plan_.sensitive)
    order_attrs = sorted(steps.order[p] for p in steps.attributes.tolist())
    if order_attrs != sorted(set(query.attributes)):
        return "its query attributes are not the query's"
    deltas = window_sensitivities(steps, query)
    stated = steps.column("sensitivity")
    bad = np.flatnonzero(deltas != stated)
    if bad.size:
        sp = steps[int(bad[0])]
        return (f"its sensitivity Delta_{{A&N}} for {sp.node!r} (A & N = "
                f"{_set(sp.nearby_in(query.attributes))}) is {deltas[bad[0]]:.17g}, the plan "
                f"used {sp.sensitivity:.17g}")
    if window_fingerprint(query, steps, deltas, canonical_json) != plan_.query_fingerprint:
        return "its fingerprint (definition and every sensitivity the plan used) differs"
    return None


def plan_query_fingerprint(query: Query, plan_: Plan) -> str:
    """The fingerprint ``plan_`` should state for ``query`` (:func:`query_fingerprint` of its
    nearby sets; for a plan held as runs, its linear form
    :func:`~quiltpriv.mechanisms.step_plans.window_fingerprint`)."""
    check_query(query)
    check_instance(plan_, Plan, "plan")
    if isinstance(plan_.sensitive, StepPlans):
        from quiltpriv.mechanisms.step_plans import window_fingerprint, window_sensitivities

        return window_fingerprint(query, plan_.sensitive,
                                  window_sensitivities(plan_.sensitive, query), canonical_json)
    attrs = frozenset(query.attributes)
    return query_fingerprint(query, [_nearby_query_attributes(sp, attrs)
                                     for sp in plan_.sensitive])


@dataclass(frozen=True)
class Plan:
    """A deterministic, immutable APMQM plan: the noise a release needs and why.

    ``to_json()`` gives the command line's JSON contract::

        {"format": "quiltpriv-plan/2", "mechanism": "APMQM", "epsilon": E, "scale": b,
         "optimal": true,
         "sensitive": {"S1": {"scale": b1, "quilt": [...], "nearby": [...], "remote": [...],
                              "nearby_attributes": null,
                              "influence": e, "sensitivity": d, "quilts_considered": k}, ...},
         "query": {...}, "query_fingerprint": "<sha256>", "model": "<sha256>",
         "theta_size": t, "notes": [...], "provenance": {...} or null}

    ``query`` is the query's definition (``Query.to_dict()``), ``query_fingerprint`` covers
    it and every sensitivity the plan used (:func:`query_fingerprint`), ``model`` is the
    model's fingerprint (:meth:`~quiltpriv.model.network.Theta.fingerprint`). Above
    :data:`LIST_SETS_LIMIT` names, ``nearby`` and ``remote`` are ``null`` and
    ``nearby_attributes`` lists the query attributes in ``N`` (docs/trust-boundary.md).

    ``verified`` is True for a plan made by :func:`plan` in this process, or returned by
    :func:`quiltpriv.mechanisms.verification.verify_plan`; a plan rebuilt by :meth:`from_dict` (or
    built by hand) is not, and :func:`release` and :func:`quiltpriv.reporting.report.audit_report`
    verify it against the model before using it. ``provenance`` says where Theta came from
    (:mod:`quiltpriv.model.provenance`; ``None`` when not recorded).
    """

    epsilon: float
    scale: float
    optimal: bool
    sensitive: Sequence[SensitivePlan]
    query: Mapping[str, Any]
    model: str
    theta_size: int
    query_fingerprint: str
    notes: tuple[str, ...] = ()
    provenance: Mapping[str, Any] | None = None
    mechanism: str = field(default="APMQM", init=False)
    verified: bool = field(default=False, init=False, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        # A pickled plan is a saved plan like any other: it comes back unverified.
        state = dict(self.__dict__)
        state.pop("verified", None)
        return state

    def __getitem__(self, node: str) -> SensitivePlan:
        if isinstance(self.sensitive, StepPlans):
            try:
                return self.sensitive[self.sensitive.index(node)]
            except ValueError:
                raise KeyError(node) from None
        for sp in self.sensitive:
            if sp.node == node:
                return sp
        raise KeyError(node)

    @property
    def binding(self) -> SensitivePlan:
        """The sensitive attribute that sets the overall scale (first in order on ties)."""
        if isinstance(self.sensitive, StepPlans):
            return self.sensitive[self.sensitive.binding_index()]
        return max(self.sensitive, key=lambda sp: sp.scale)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a release of this plan would not protect, in plain words: no noise (an exact
        value), or a Theta learned from data not declared public
        (:func:`quiltpriv.releases.records.release_warnings`)."""
        from quiltpriv.releases.records import release_warnings

        return tuple(release_warnings(scale=self.scale, kind=GUARANTEE_KIND,
                                      provenance=self.provenance, table_sha256=None))

    @property
    def sampler_sensitivity(self) -> float:
        """The sensitivity a release gives the noise sampler: the least positive
        ``Delta_{A&N}`` of the plan (0 if none); the grid's snapping is paid against it."""
        if isinstance(self.sensitive, StepPlans):
            positive = [r.sensitivity for r in self.sensitive.runs if r.sensitivity > 0]
        else:
            positive = [sp.sensitivity for sp in self.sensitive if sp.sensitivity > 0]
        return min(positive) if positive else 0.0

    @property
    def guarantee(self) -> Guarantee:
        """What a release of this plan guarantees ([ZOC22, Thm. 4])."""
        return Guarantee(GUARANTEE_KIND, self.epsilon, 0.0, APMQM_ASSUMPTIONS,
                         sensitive_nodes(self))

    @property
    def calibration(self) -> Calibration:
        """The plan's Laplace scale and why: ``b = Delta_{A&N} F / (eps - e(Q|i))`` of the
        binding attribute ([ZOC22, Alg. 3])."""
        b = self.binding
        if self.scale == 0:
            why = ("[ZOC22, Alg. 3]: b = 0, every sensitive attribute has a quilt with "
                   "Delta_{A&N} F = 0 and e(Q|i) <= eps")
        else:
            why = (f"[ZOC22, Alg. 3]: b = max over sensitive i of Delta_{{A&N}} F / (eps - "
                   f"e(Q|i)), set by {b.node!r}: {_fmt(b.sensitivity)} / ({self.epsilon:g} - "
                   f"{_fmt(b.influence)}) = {_fmt(self.scale)}")
        return Calibration("laplace", self.scale, b.sensitivity, why, {
            "binding": b.node, "binding_influence": b.influence,
            "binding_sensitivity": b.sensitivity,
            "sampler_sensitivity": self.sampler_sensitivity})

    def to_dict(self) -> dict[str, Any]:
        runs = isinstance(self.sensitive, StepPlans)
        return {
            "format": PLAN_FORMAT_RUNS if runs else PLAN_FORMAT,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "optimal": self.optimal,
            "sensitive": (self.sensitive.to_dict() if isinstance(self.sensitive, StepPlans)
                          else {sp.node: sp.to_dict() for sp in self.sensitive}),
            "query": dict(self.query),
            "query_fingerprint": self.query_fingerprint,
            "model": self.model,
            "theta_size": self.theta_size,
            "notes": list(self.notes),
            "provenance": None if self.provenance is None else dict(self.provenance),
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Plan:
        """Parse :meth:`to_dict` output strictly; the plan returned is NOT verified.

        Every key is required (and no other is allowed), every number must be finite and in
        range, ``format`` must be :data:`PLAN_FORMAT` and ``mechanism`` ``"APMQM"``. A plan
        is input like any other: before :func:`release` or a report uses it, it is verified
        against the model and the query (:func:`quiltpriv.mechanisms.verification.verify_plan`).

        Raises
        ------
        PlanError
            Naming the first malformed field.
        """
        return plan_from_dict(d)

    @classmethod
    def from_json(cls, text: str | bytes) -> Plan:
        """:meth:`from_dict` of a JSON text (NaN, infinities and repeated keys refused)."""
        return plan_from_json(text)

    def explain(self) -> str:
        """A readable table and one paragraph per sensitive attribute."""
        lines = [
            f"APMQM plan: epsilon = {self.epsilon:g}, Laplace scale b = {_fmt(self.scale)}"
            f" ({'optimal over all quilts' if self.optimal else 'optimality NOT proven'})",
            f"query: {_describe_query(self.query)}; |Theta| = {self.theta_size}",
            "",
        ]
        if isinstance(self.sensitive, StepPlans):
            return "\n".join(lines + _run_lines(self))
        header = ("sensitive", "quilt Q", "nearby N", "remote R", "influence", "Delta_{A&N}",
                  "scale", "quilts")
        rows = [(sp.node, _set(sp.quilt), _shown_set(sp.nearby, sp.nearby_attributes),
                 _shown_set(sp.remote, None),
                 fmt_influence(sp.influence), _fmt(sp.sensitivity), _fmt(sp.scale),
                 str(sp.quilts_considered)) for sp in self.sensitive]
        lines += _table(header, rows)
        lines.append("")
        for sp in self.sensitive:
            lines.append(f"{sp.node}: {sp.explanation}")
        for note in self.notes:
            lines.append(f"note: {note}")
        for warning in self.warnings:
            lines.append(f"warning: {warning}")
        if not self.verified:
            lines.append(UNVERIFIED_NOTE)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def _repr_html_(self) -> str:
        return plan_html(self)


def sensitive_nodes(plan_: Plan) -> tuple[str, ...]:
    """The plan's sensitive attributes, in order (without making each one's plan)."""
    check_instance(plan_, Plan, "plan")
    if isinstance(plan_.sensitive, StepPlans):
        return plan_.sensitive.nodes()
    return tuple(sp.node for sp in plan_.sensitive)


def _run_lines(p: Plan) -> list[str]:
    """:meth:`Plan.explain` of a plan held as runs: one row and one paragraph per run."""
    steps = cast(StepPlans, p.sensitive)
    header = ("sensitive steps", "quilt Q", "influence", "Delta_{A&N}", "scale", "quilts",
              "optimal")
    rows = [(steps.run_label(r), steps.run_quilt(r), fmt_influence(r.influence),
             _fmt(r.sensitivity), _fmt(r.scale), str(r.considered),
             "yes" if r.optimal else "not proven") for r in steps.runs]
    lines = [f"{len(steps):,} sensitive steps of a {len(steps.order):,}-step chain, in "
             f"{len(steps.runs):,} runs of steps with the same quilt (offsets i-a, i+b from "
             "the step i) and the same numbers:"]
    lines += _table(header, rows)
    lines.append("")
    k = 0
    for r in steps.runs:
        sp = steps[k]
        k += r.length
        more = "" if r.length == 1 else f" (and likewise each step of {steps.run_label(r)})"
        lines.append(f"{sp.node}{more}: {sp.explanation}")
    for note in p.notes:
        lines.append(f"note: {note}")
    for warning in p.warnings:
        lines.append(f"warning: {warning}")
    if not p.verified:
        lines.append(UNVERIFIED_NOTE)
    return lines


def _shown_set(names: tuple[str, ...] | None, attrs: tuple[str, ...] | None) -> str:
    """A listed set, or what an unlisted one shows: its query attributes, if known."""
    if names is not None:
        return _set(names)
    return "(not listed)" if attrs is None else f"{_set(attrs)} + ... (not listed)"


_PLAN_KEYS = ("format", "mechanism", "epsilon", "scale", "optimal", "sensitive", "query",
              "query_fingerprint", "model", "theta_size", "notes", "provenance")
_SENSITIVE_KEYS = ("node", "quilt", "nearby", "remote", "influence", "sensitivity", "scale",
                   "quilts_considered", "optimal", "explanation", "influence_member",
                   "influence_pair", "influence_bound_via", "influence_arithmetic",
                   "nearby_attributes")
_SENSITIVE_KEYS_1 = _SENSITIVE_KEYS[:-1]


# -- strict parsing ------------------------------------------------------------------------


def _sensitive(node: Any, s: Any, version: int) -> SensitivePlan:
    if not isinstance(node, str) or not node:
        raise _fail("a key of 'sensitive'", "a node name", node)
    where = f"sensitive[{node!r}]"
    s = _keys(s, _SENSITIVE_KEYS if version == 2 else _SENSITIVE_KEYS_1, where)
    if s["node"] != node:
        raise PlanError(f"plan: {where}.node is {s['node']!r}, not {node!r}")
    quilt = _names(s["quilt"], f"{where}.quilt")
    near_attrs = None
    if version == 2 and s["nearby_attributes"] is not None:
        near_attrs = _names(s["nearby_attributes"], f"{where}.nearby_attributes")
    if version == 2 and s["nearby"] is None and s["remote"] is None:
        if near_attrs is None:
            raise PlanError(f"plan: {where} lists neither nearby nor nearby_attributes")
        nearby = remote = None
    else:
        nearby, remote = (_names(s[k], f"{where}.{k}") for k in ("nearby", "remote"))
        if near_attrs is not None:
            raise PlanError(f"plan: {where} lists nearby, so its nearby_attributes must be "
                            "null (they are the query attributes of nearby)")
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
        influence_arithmetic=arithmetic, nearby_attributes=near_attrs,
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
    if d["format"] not in (PLAN_FORMAT, PLAN_FORMAT_1, PLAN_FORMAT_RUNS):
        raise PlanError(f"plan: unknown format {d['format']!r} (this quiltpriv reads "
                        f"{PLAN_FORMAT_RUNS!r}, {PLAN_FORMAT!r} and {PLAN_FORMAT_1!r}); plan "
                        "it again")
    version = {PLAN_FORMAT: 2, PLAN_FORMAT_1: 1}.get(d["format"], 3)
    d = _keys(d, _PLAN_KEYS, "the plan")
    if d["mechanism"] != "APMQM":
        raise _fail("mechanism", "'APMQM'", d["mechanism"])
    sensitive = d["sensitive"]
    if version == 3:
        epsilon = _number(d["epsilon"], "epsilon", positive=True)
        sensitive = StepPlans.from_dict(SensitivePlan, sensitive, epsilon)
    elif not isinstance(sensitive, Mapping) or not sensitive:
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
        sensitive=(sensitive if isinstance(sensitive, StepPlans)
                   else tuple(_sensitive(k, v, version) for k, v in sensitive.items())),
        query=query,
        model=_digest(d["model"], "model"),
        theta_size=_int(d["theta_size"], "theta_size", 1),
        query_fingerprint=_digest(d["query_fingerprint"], "query_fingerprint"),
        notes=tuple(notes), provenance=provenance,
    )


def _reject_constant(name: str) -> Any:
    raise PlanError(f"plan: the JSON holds {name}; every number must be finite")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # counted, not searched: a large plan has 10^5 keys in one object
        counts = Counter(k for k, _ in pairs)
        dup = sorted(k for k, c in counts.items() if c > 1)
        raise PlanError(f"plan: the JSON names {', '.join(map(repr, dup))} twice in one object")
    return out


def plan_from_json(text: str | bytes) -> Plan:
    """Parse a plan's JSON text strictly (:func:`plan_from_dict`); not verified."""
    if not isinstance(text, str | bytes | bytearray):
        raise PlanError(f"plan: the JSON text must be a str or bytes, got {type(text).__name__}")
    from quiltpriv.utils.serialize import load_json

    doc = load_json(text, "plan", error=PlanError, parse_constant=_reject_constant,
                    object_pairs_hook=_no_duplicate_keys)
    if isinstance(doc, dict) and "format" not in doc and isinstance(doc.get("plan"), dict):
        raise PlanError("plan: this is a release record or an audit report, not a plan; its "
                        "plan is the 'plan' field")
    if isinstance(doc, dict) and doc.get("format") == "quiltpriv-audit-report":
        raise PlanError("plan: this is an audit report, not a plan; its plan is the 'plan' "
                        "field")
    return plan_from_dict(doc)


# -- planning ---------------------------------------------------------------------------------


def quilt_scale(delta: float, e: float, eps: float) -> float:
    """Laplace scale of one quilt: ``Delta / (eps - e)`` computed exactly and rounded up (never
    below the exact need; ``inf`` beyond the float range); 0 if Delta = 0 and e <= eps.

    ``delta`` is a finite sensitivity >= 0, ``e`` an influence in [0, inf] and ``eps`` > 0;
    anything else is refused (ParameterError).
    """
    delta = check_positive(delta, "delta", allow_zero=True)
    if isinstance(e, bool) or not isinstance(e, Real) or not e >= 0:  # NaN fails e >= 0
        raise ParameterError(f"e must be an influence >= 0 (inf allowed), got {e!r}")
    eps = check_epsilon(eps, "eps")
    if delta == 0.0:
        return 0.0 if e <= eps else math.inf
    if e < eps:
        # exact quotient rounded up: fl(1 / 3) < 1/3 would give a (3 + 1.7e-16)-private mean
        return scale_up(delta, eps, e)
    return math.inf


#: The note of a plan whose search was interrupted (Ctrl-C); :func:`was_interrupted` reads it.
INTERRUPTED_NOTE = "planning was interrupted: attributes not reached use the trivial quilt"


def was_interrupted(plan_: Plan) -> bool:
    """True when ``plan_`` is the best found before an interruption (still valid)."""
    return INTERRUPTED_NOTE in check_instance(plan_, Plan, "plan").notes


def _check_sensitivity_finite(query: Query) -> None:
    """Refuse a query whose ``Delta_A F`` overflows the float range (bounds of +-1e308, ...)."""
    d = query.sensitivity(query.attributes)
    if not math.isfinite(d):
        raise QueryError(f"the query's sensitivity Delta_A F = {d} is not a finite float (it "
                         f"overflows for these bounds, weights or records); declare a "
                         f"narrower range")


def _check_scale_finite(plans: tuple[SensitivePlan, ...], eps: float) -> None:
    """Refuse a plan whose least scale overflows the float range (a tiny eps, a huge Delta).

    The trivial quilt always gives ``Delta_A F / eps``, finite in exact arithmetic, so an
    infinite scale is a float overflow, and noise of that size would carry no information:
    plans (and so the JSON contract) hold finite scales only.
    """
    for sp in plans:
        if not math.isfinite(sp.scale):
            raise ParameterError(
                f"the least Laplace scale for {sp.node!r}, Delta_{{A&N}} F / (epsilon - e) = "
                f"{_fmt(sp.sensitivity)} / ({eps:g} - {_fmt(sp.influence)}), overflows the "
                f"float range; raise epsilon or lower the query's sensitivity")


#: Scales or influences this close (relative) are ties: mathematically equal influences of
#: different quilts (say ``{income}`` and ``{income, sat}`` with ``sat`` remote) come out of
#: different contractions a few ulps apart, and rounding noise must not pick the winner.
TIE_RTOL = 1e-12


def is_tie(a: float, b: float) -> bool:
    """Whether two scales or influences are equal up to :data:`TIE_RTOL` (rounding noise)."""
    return a == b or math.isclose(a, b, rel_tol=TIE_RTOL, abs_tol=0.0)


class _Tol:
    """A float compared with :data:`TIE_RTOL` (ordering key for candidates)."""

    __slots__ = ("x",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, x: float) -> None:
        self.x = x

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Tol) and is_tie(self.x, other.x)

    def __lt__(self, other: _Tol) -> bool:
        return not is_tie(self.x, other.x) and self.x < other.x


def candidate_key(scale: float, e: float, q: tuple[str, ...], theta: Theta) -> tuple:
    """The planner's order of candidate quilts: the least key wins (ties per :func:`is_tie`)."""
    # Least scale; then least influence (widest margin); then fewest quilt nodes; then order.
    return (_Tol(scale), _Tol(e), len(q), tuple(theta.index[v] for v in q))


@dataclass
class _Search:
    """Mutable state of one node's candidate search (kept when the search is interrupted)."""

    quilt: tuple[str, ...] | None
    """The chosen ``Q``; None for the trivial quilt (``Q = R = {}``, every attribute nearby)."""
    nearby_attributes: tuple[str, ...]
    """The query's attributes in the chosen quilt's nearby set ``N``."""
    scale: float
    delta: float
    key: tuple
    e: float = 0.0
    member: str | None = None
    pair: Any = None
    via: tuple[str, ...] | None = None
    arithmetic: str = "float64"
    considered: int = 1
    optimal: bool = True
    reasons: list[str] = field(default_factory=list)


#: Most target sets ``T`` the search of one sensitive attribute evaluates (each costs at most
#: one exact influence) before it stops with the best quilt found so far, flagged as not proven
#: optimal. Count and histogram queries need two; additive and general sensitivities are
#: searched by branch and bound, which this bounds.
DEFAULT_MAX_CANDIDATES = 100_000

#: How many attribute names a plan-wide note lists before counting the rest (a 5,000-node
#: plan stopped by its time limit listed every name: 30 KB in one note).
NOTE_NAMES = 10


def _few(names: Sequence[Hashable]) -> str:
    """``names`` for a note: the first :data:`NOTE_NAMES`, then how many more (each attribute's
    own explanation says what happened to it)."""
    shown = ", ".join(map(repr, names[:NOTE_NAMES]))
    rest = len(names) - NOTE_NAMES
    return shown if rest <= 0 else f"{shown} and {rest} more (see each attribute's explanation)"
#: Begins what is said when the candidate budget stops a search.
BUDGET_REASON = "the search stopped after its budget of"


#: The independent-parts bound (:class:`_PairBound`) is used by the branch and bound on
#: additive queries with at least this many attributes, and before an all-or-nothing query's
#: second candidate when its joint table would exceed this many entries.
PAIR_MIN_ITEMS = 8
PAIR_CHECK_SIZE = 2**16


#: A plan shares its graph walks and inference over the sensitive attributes (:class:`_Shared`)
#: when it has at least this many sensitive attributes and the query at most
#: :data:`SHARED_MAX_ATTRIBUTES` attributes (the propagation's own budgets bound its tables,
#: which grow with the joint states of the query's attributes).
SHARED_MIN_SENSITIVE = 256
SHARED_MAX_ATTRIBUTES = 16

#: The shared propagation is run when its work (table entries touched: twice the junction
#: tree's size times the joint states of ``A``) is at most this many times the number of
#: sensitive attributes times the network's size, a cheap stand-in for what eliminating per
#: attribute would cost. Measured: on the long benchmark networks with a 3-attribute query the
#: ratio is 0.7-73 and sharing is 10-1000x faster; on pgmpy's pigs (441 nodes, shallow
#: ancestral sets) it is 230, and the propagation (0.8 s) would cost more than every
#: elimination (0.16 s).
SHARED_WORK_RATIO = 100

#: Where the ratio refuses, the eliminations are priced (:func:`_per_node_work`, on at most
#: :data:`SHARED_PRICE_SAMPLE` sensitive attributes) and the propagation is run when its work
#: is at most their total. Per priced entry the two cost about the same: the propagation's
#: numpy products are slower than the kernel, and its work is an upper bound, while a search
#: eliminates several candidates per attribute. Measured with 7- and 8-attribute counts (every
#: node sensitive): banded, 2,000 nodes: propagation 1.8e9 entries in 12 s, eliminations
#: priced at 6e10, stopped by a 300 s time limit; lattice, 2,000 nodes: 1.0e9 in 8.1 s against
#: 2.5e9 in 79 s; banded, 500 nodes: 2.1e9 in 14.4 s against 7.7e9 in 15.0 s. On pigs, munin,
#: link and diabetes (every node sensitive, 3, 6 and 10 random attributes, four draws each) it
#: chose the propagation once, on diabetes: 9.2 s against 10.4 s. Both are priced by the
#: Python order, so the choice does not depend on whether the compiled kernel is built, and a
#: verification makes the plan's own.
SHARED_PRICE_SAMPLE = 8


#: Most partitions (each as large as the network) a search walking alone keeps for reuse.
_WALKED_KEPT = 64


class _Shared:
    """What the searches of one plan share: candidate quilts, nearby query attributes and
    influences.

    Each candidate is ``Q*(T)`` for a set ``T`` of query attributes, a subset of ``A``. Alone
    (``shared=False``), a search walks the graph and eliminates per candidate, in time that
    grows with the network. Shared, the answers for every sensitive attribute come from a
    few walks from the attributes of ``A`` (:class:`~quiltpriv.graph.quilts.QuiltIndex`) and,
    with the default inference, from one propagation per member of Theta that gives ``P(phi_v,
    phi_A)`` for every ``v`` (:mod:`quiltpriv.inference.attribute_joints`); the influences are
    rounded upwards by that propagation's own bound. Where the propagation cannot be trusted
    or afforded, influences are computed one by one, as alone.
    """

    def __init__(self, theta: Theta, query: Query, max_table: int,
                 inference: InferenceMethod, shared: bool,
                 deadline: float | None = None, progress: bool = False,
                 sensitive: Sequence[str] = ()) -> None:
        self.theta, self.max_table, self.inference = theta, max_table, inference
        self.deadline, self.progress = deadline, progress
        self.sensitive = theta.sort(sensitive)
        self.attrs = frozenset(query.attributes)
        self._query = query
        self._trivial: tuple[tuple[str, ...], float] | None = None
        self.index = QuiltIndex(theta, query.attributes) if shared else None
        self._joints: list[AttributeJoints] | None = None
        self._tried = not (shared and inference == "auto")
        # the partitions computed for the node being searched (walking alone), reused when
        # the chosen quilt is listed
        self._walked: dict[tuple[str, ...], Quilt] = {}
        self._walked_node: str | None = None

    def trivial_terms(self) -> tuple[tuple[str, ...], float]:
        """The query's attributes (network order) and ``Delta_A F``, computed once per plan
        (every attribute starts from the trivial quilt, and those the deadline leaves
        unsearched must cost O(1) each)."""
        if self._trivial is None:
            self._trivial = (self.theta.sort(self.attrs),
                             self._query.sensitivity(self._query.attributes))
        return self._trivial

    def quilt(self, node: str, targets: Iterable[str]) -> tuple[str, ...]:
        """``Q*(targets)`` (:func:`~quiltpriv.graph.quilts.least_influence_quilt`)."""
        if self.index is not None:
            return self.index.least_influence_quilt(node, targets)
        return least_influence_quilt(self.theta, node, targets)

    def nearby_attributes(self, node: str, quilt: tuple[str, ...]) -> tuple[str, ...]:
        """The query attributes in the nearby set of ``markov_quilt(node, quilt)``."""
        if self.index is not None:
            return self.index.nearby_attributes(node, quilt)
        return tuple(v for v in self.partition(node, quilt).nearby if v in self.attrs)

    def partition(self, node: str, quilt: tuple[str, ...] | None) -> Quilt:
        """``(Q, N, R)`` of ``quilt`` (None: the trivial quilt); walked once per node and
        quilt when the search walks alone."""
        if quilt is None:
            return trivial_quilt(self.theta, node)
        if node != self._walked_node:
            self._walked, self._walked_node = {}, node
        hit = self._walked.get(quilt)
        if hit is None:
            hit = markov_quilt(self.theta, node, quilt)
            if self.index is None:  # a shared plan lists few partitions: keep none
                if len(self._walked) >= _WALKED_KEPT:  # a long search: memory stays bounded
                    self._walked.clear()
                self._walked[quilt] = hit
        return hit

    def influence(self, node: str, quilt: tuple[str, ...]) -> Influence:
        """``e(Q | node)``, exact and rounded upwards, or a proven upper bound."""
        if quilt and self.attrs.issuperset(quilt):
            joints = self._shared_joints()
            if joints is not None:
                return joint_influence(self.theta, joints, node, quilt)
        return influence_upper_bound(self.theta, node, quilt, max_table=self.max_table,
                                     inference=self.inference, deadline=self.deadline)

    def _shared_joints(self) -> list[AttributeJoints] | None:
        if not self._tried:
            self._tried = True
            # a propagation the deadline stops leaves each influence to its own elimination,
            # and the search's own deadline checks then stop the plan with its best so far
            attrs = self.theta.sort(self.attrs)
            # a tree with a clique above the memory cap is never propagated: on a grid-like
            # network its triangulation stops there, long before it would end (and it sees
            # the deadline)
            if fill_tree_structure(self.theta, max_weight=DEFAULT_MAX_HELD,
                                   deadline=self.deadline) is None:
                return None
            cheap = min(DEFAULT_MAX_WORK,
                        SHARED_WORK_RATIO * len(self.sensitive) * len(self.theta.nodes))
            need = propagation_work(self.theta, attrs)
            # beyond the cheap rule, only where eliminating per attribute costs more (then no
            # fixed cap: the alternative is the costlier one; memory and the deadline bound it)
            run = need <= cheap or _per_node_work(
                self.theta, attrs, self.sensitive, self.max_table, need) >= need
            found = [attribute_joints(self.theta, attrs, m, max_work=need if run else cheap,
                                      deadline=self.deadline, progress=self.progress)
                     for m in range(len(self.theta.members))]
            if all(j is not None for j in found):
                self._joints = cast(list[AttributeJoints], found)
        return self._joints


def _shared_context(theta: Theta, query: Query, sensitive: Sequence[str], max_table: int,
                   inference: InferenceMethod, deadline: float | None = None,
                   progress: bool = False) -> _Shared:
    """The work a plan of the ``sensitive`` attributes shares (:class:`_Shared`), decided as
    :func:`plan` decides it, so that a verification recomputes the plan's own numbers."""
    return _Shared(theta, query, max_table, inference,
                   len(sensitive) >= SHARED_MIN_SENSITIVE
                   and len(set(query.attributes)) <= SHARED_MAX_ATTRIBUTES, deadline, progress,
                   sensitive)


def _per_node_work(theta: Theta, attrs: Sequence[str], sensitive: Sequence[str],
                   max_table: int, enough: float = math.inf) -> float:
    """Table entries eliminating ``P(phi_v, phi_A)`` for every sensitive ``v`` would build,
    estimated from :data:`SHARED_PRICE_SAMPLE` of them evenly spaced in the network's order
    (each priced on scopes alone by :func:`~quiltpriv.inference.influence.elimination_work`;
    ``inf`` where one does not fit ``max_table``). Pricing stops once the estimate reaches
    ``enough`` (then some value at least ``enough``): on a long network one elimination's
    pricing is as long as the network, and the caller only compares."""
    step = max(1, len(sensitive) // SHARED_PRICE_SAMPLE)
    sample = sensitive[::step][:SHARED_PRICE_SAMPLE]
    scale = len(sensitive) / len(sample)
    total = 0.0
    for v in sample:
        total += elimination_work(theta, (v, *(a for a in attrs if a != v)),
                                  max_table=max_table, stop_above=enough / scale - total)
        if total * scale >= enough:
            break
    return total * scale


class _Stop(Exception):
    """The search must stop now (time limit or candidate budget); the message says which."""


class _Candidates:
    """Evaluates the candidates ``Q*(T)`` of one sensitive attribute and keeps the best.

    ``memo`` maps each evaluated quilt to its exact influence (``None`` when only an upper
    bound, or nothing, is known); it holds at most ``max_candidates`` entries.
    """

    def __init__(self, theta: Theta, query: Query, node: str, eps: float, best: _Search,
                 max_table: int, deadline: float | None, inference: InferenceMethod,
                 max_candidates: int, shared: _Shared) -> None:
        self.theta, self.query, self.node, self.eps, self.best = theta, query, node, eps, best
        self.shared = shared
        self.max_table, self.deadline, self.inference = max_table, deadline, inference
        self.max_candidates = max_candidates
        self.attrs = frozenset(query.attributes)
        self.memo: dict[tuple[str, ...], float | None] = {}
        self.evaluated = 0
        # Candidates whose exact influence is unknown: (lower bound on their scale, why).
        self.unresolved: list[tuple[float, str]] = []

    def resolve(self) -> None:
        """Optimality is not proven if a candidate with an unknown exact influence could
        still have a scale below the best one found."""
        for low, reason in self.unresolved:
            if low < self.best.scale:
                self.best.optimal = False
                self.best.reasons.append(reason)

    def evaluate(self, target: frozenset[str], floor: float, lazy: bool = False) -> float:
        """Make ``Q*(target)`` a candidate; return a lower bound on ``e(Q*(T))`` for every
        ``T`` containing ``target``.

        ``floor`` is such a bound already known (from a subset of ``target``, or independent
        parts): ``e(Q*(T))`` is monotone in ``T``. The quilt's exact influence is one too; an
        upper bound is not. ``lazy``: skip the influence when ``floor`` alone shows that the
        quilt cannot beat the best scale (then ``floor`` is returned).
        """
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _Stop(TIME_LIMIT_REASON)
        if self.evaluated >= self.max_candidates:
            raise _Stop(f"{BUDGET_REASON} {self.max_candidates} candidate target sets")
        self.evaluated += 1
        theta, node, eps, best = self.theta, self.node, self.eps, self.best
        q = self.shared.quilt(node, target)
        if q in self.memo:
            known = self.memo[q]
            return floor if known is None else max(floor, known)
        near = self.shared.nearby_attributes(node, q)
        delta = self.query.sensitivity(near)
        if lazy and quilt_scale(delta, floor, eps) >= best.scale:
            return floor
        self.memo[q] = None
        try:
            infl = self.shared.influence(node, q)
        except InfluenceTooExpensive as exc:
            self.unresolved.append((quilt_scale(delta, floor, eps),
                                    f"quilt {_set(q)} skipped: {exc}"))
            return floor
        best.considered += 1
        e = infl.value
        scale = quilt_scale(delta, e, eps)
        if infl.exact:
            self.memo[q] = e
            floor = max(floor, e)
        else:
            # An upper bound: the scale is valid (more noise); the optimum is not proven
            # unless even the least influence this quilt can have would not beat the best.
            self.unresolved.append((quilt_scale(delta, floor, eps),
                                    f"the influence of {_set(q)} is an upper bound (data-"
                                    f"processing inequality via {_set(infl.bound_via or ())})"))
        key = candidate_key(scale, e, q, theta) + (0,)
        if key < best.key:
            best.key, best.quilt, best.scale, best.e, best.delta = key, q, scale, e, delta
            best.nearby_attributes = near
            best.via = infl.bound_via
            best.arithmetic = infl.arithmetic
            best.member = theta.names[infl.member] if infl.member is not None else None
            best.pair = infl.pair
        return floor


def _search(theta: Theta, query: Query, node: str, eps: float, best: _Search,
            max_table: int, deadline: float | None, inference: InferenceMethod,
            max_candidates: int, shared: _Shared) -> None:
    """The exact least-scale search over the candidates ``Q*(T)`` (module docstring).

    ``T = {}`` (the quilt ``Q = {}``) first; then, by the query's sensitivity structure, the
    one other candidate an all-or-nothing sensitivity needs, or a branch and bound.
    """
    ctx = _Candidates(theta, query, node, eps, best, max_table, deadline, inference,
                      max_candidates, shared)
    try:
        ctx.evaluate(frozenset(), 0.0)  # first: after the deadline it stops here, in O(1)
        others = [a for a in shared.trivial_terms()[0] if a != node]
        if query.sensitivity_structure == "all-or-nothing":
            # Delta_B is one value c whenever B meets the support A' (the attributes with
            # Delta_{j} > 0), else 0. A quilt with A' nearby has scale c / (eps - e) >= c / eps,
            # the scale of Q = {}; one with no attribute of A' nearby is dominated by
            # Q*(A'), whose influence is least among them. Impossible if i is in A'.
            support = [a for a in others if query.sensitivity((a,)) > 0]
            if support and not query.sensitivity((node,)) > 0:
                # Its scale is 0 or infinite; before a large joint, independent parts may
                # already show that it is infinite.
                q = shared.quilt(node, support)
                big = math.prod(theta.cardinality[v] for v in (node, *q)) > PAIR_CHECK_SIZE
                pairs = _PairBound(ctx, support, {}) if big else None
                if pairs is None or pairs.floors(support[1:], support[:1])[0] <= eps:
                    ctx.evaluate(frozenset(support), 0.0)
        else:
            _branch_and_bound(ctx, others)
    except _Stop as stop:
        best.optimal = False
        best.reasons.append(str(stop))
    finally:
        ctx.resolve()


def _branch_and_bound(ctx: _Candidates, others: list[str]) -> None:
    """Least ``Delta(A - T) / (eps - e(Q*(T)))`` over targets ``T`` (docs/concepts.md).

    A set-enumeration tree over ``T``: a node ``t`` with its available items ``U`` stands for
    the targets ``t + S``, ``S`` inside ``U``. Evaluating ``t + j`` for every ``j`` in ``U``
    (these are the node's children, each a candidate) gives ``e(t + S) >= e(t + j)`` for
    every ``j`` in ``S`` (monotonicity), and ``Delta(A - t - S)`` only grows as ``S`` shrinks;
    ``bound`` turns both into a lower bound on every scale below the node (and
    :class:`_PairBound` adds one for additive sensitivities), and a node whose bound is not
    below the best scale found is not searched. An item whose ``e(t + j)`` exceeds eps is
    dropped below ``t`` (every target containing it has an infinite scale).
    """
    query, node, eps, best = ctx.query, ctx.node, ctx.eps, ctx.best
    additive = query.sensitivity_structure == "additive"
    weight = {a: query.sensitivity((a,)) for a in others} if additive else {}
    # Additive: an attribute of weight 0 never lowers Delta, so keeping it out only costs.
    items = [a for a in others if weight[a] > 0] if additive else list(others)
    w_node = query.sensitivity((node,)) if additive else 0.0
    bounds = _ScaleBound(query, ctx.attrs, eps, additive, weight)
    stack = [_SearchNode(frozenset(), 0.0, tuple(items), w_node, 0.0)]
    # The pair bound costs a walk of the whole moral graph and one small joint per item:
    # worth it on wide queries only.
    pairs = _PairBound(ctx, items, weight) if additive and len(items) >= PAIR_MIN_ITEMS else None
    while stack:
        t, e_t, avail, excluded, pre = stack.pop()
        if pre >= best.scale:
            continue
        if pairs is not None and pairs.excludes(t, avail, excluded, best.scale, eps):
            continue
        ext = _extensions(ctx, pairs, t, e_t, avail)
        if additive:
            kept_on = {j for j, _ in ext}
            excluded += sum(weight[j] for j in avail if j not in kept_on)
        lb, arg = bounds.bound(t, e_t, excluded, ext)
        if lb < best.scale and arg == len(ext) > 1:
            # The bound points at keeping everything available out: try that target first
            # (unless independent parts already show it is not that good); when its influence
            # is as low as the bound hoped (influences that saturate, as through a hub), it
            # closes the whole subtree at once.
            _try_all_kept(ctx, pairs, t, ext, excluded)
        if lb >= best.scale:
            continue
        stack.extend(_children(bounds, best.scale, t, ext, excluded))


class _SearchNode(NamedTuple):
    """A node of the set-enumeration tree: the targets ``kept + S``, ``S`` inside ``avail``."""

    kept: frozenset[str]
    e_kept: float
    """A lower bound on ``e(Q*(kept))``."""
    avail: tuple[str, ...]
    excluded: float
    """``Delta`` of what every target below keeps out (additive case only)."""
    pre_bound: float
    """The lower bound on the scales below, as computed when the node was pushed."""


@dataclass(frozen=True)
class _ScaleBound:
    """Lower bounds on the scales of the targets below a node of the search."""

    query: Query
    attrs: frozenset[str]
    eps: float
    additive: bool
    weight: Mapping[str, float]

    def left(self, kept: frozenset[str], excluded: float,
             rest: Sequence[tuple[str, float]]) -> list[float]:
        """``Delta(A - kept - S_k)`` for ``S_k`` = the first ``k`` items of ``rest``."""
        if self.additive:
            weight = self.weight
            suffix = [0.0] * (len(rest) + 1)
            for k in range(len(rest) - 1, -1, -1):
                suffix[k] = weight[rest[k][0]] + suffix[k + 1]
            return [excluded + x for x in suffix]
        query = self.query
        out, s = [], set(self.attrs - kept)
        out.append(query.sensitivity(s))
        for j, _ in rest:
            s.discard(j)
            out.append(query.sensitivity(s))
        return out

    def bound(self, kept: frozenset[str], e_kept: float, excluded: float,
              rest: Sequence[tuple[str, float]]) -> tuple[float, int]:
        """Lower bound on the scale of every target ``kept + S``, ``S`` inside ``rest``, and
        the ``k`` attaining it.

        ``rest`` holds ``(j, lower bound on e(kept + j))``, sorted by that bound; if the
        largest bound in ``S`` is the ``k``-th, then ``S`` lies in the first ``k`` items.
        ``excluded`` is ``Delta`` of what no such target keeps out (additive case only).
        """
        eps = self.eps
        deltas = self.left(kept, excluded, rest)
        lb, arg = quilt_scale(deltas[0], e_kept, eps), 0
        for k, (_, e_j) in enumerate(rest, start=1):
            x = quilt_scale(deltas[k], max(e_kept, e_j), eps)
            if x < lb:
                lb, arg = x, k
        return lb, arg


def _extensions(ctx: _Candidates, pairs: _PairBound | None, t: frozenset[str], e_t: float,
                avail: Sequence[str]) -> list[tuple[str, float]]:
    """``(j, e(t + j))`` for each available ``j`` whose target stays within eps, least first."""
    eps = ctx.eps
    ext = []
    floors = pairs.floors(t, avail) if pairs is not None else [0.0] * len(avail)
    blocks = pairs.blocks_of(t) if pairs is not None else None
    for j, floor in zip(avail, floors, strict=True):
        if floor > eps:
            continue  # independent parts alone exceed eps: no need for its influence
        # With one attribute per block the floor is the influence itself: a candidate
        # it shows cannot win needs no influence of its own (nor gives a better bound).
        exact = pairs is not None and blocks is not None and pairs.block[j] not in blocks
        e_j = ctx.evaluate(t | {j}, max(e_t, floor), lazy=exact)
        if e_j <= eps:
            ext.append((j, e_j))
    ext.sort(key=lambda x: x[1])
    return ext


def _try_all_kept(ctx: _Candidates, pairs: _PairBound | None, t: frozenset[str],
                  ext: Sequence[tuple[str, float]], excluded: float) -> None:
    """Evaluate the target that keeps every extension out, if it fits and could win."""
    full = t | {j for j, _ in ext}
    floor = pairs.floors(full, [ext[-1][0]])[0] if pairs is not None else 0.0
    q = ctx.shared.quilt(ctx.node, full)
    fits = math.prod(ctx.theta.cardinality[v] for v in (ctx.node, *q)) <= ctx.max_table
    if fits and quilt_scale(excluded, max(ext[-1][1], floor), ctx.eps) < ctx.best.scale:
        ctx.evaluate(full, max(ext[-1][1], floor))


def _children(bounds: _ScaleBound, best_scale: float, t: frozenset[str],
              ext: Sequence[tuple[str, float]], excluded: float) -> list[_SearchNode]:
    """The children of a node that may hold a scale below ``best_scale``, in push order (the
    least bound is popped first)."""
    children = []
    order = sorted(ext, key=lambda x: -x[1])  # largest influence: largest subtree
    for k, (j, e_j) in enumerate(order):
        # The child t + j stands for the targets whose first item (in this order) is j.
        later = {x for x, _ in order[k + 1:]}
        rest = [x for x in ext if x[0] in later]
        lb = bounds.bound(t | {j}, e_j, excluded, rest)[0]
        if lb < best_scale:
            children.append((lb, k, _SearchNode(t | {j}, e_j, tuple(x for x, _ in rest),
                                                excluded, lb)))
        if bounds.additive:
            excluded += bounds.weight[j]  # below the later children, j is left in N
    children.sort(key=lambda c: (c[0], c[1]), reverse=True)  # least bound popped first
    return [c[2] for c in children]


def _blocks(theta: Theta, node: str) -> dict[str, int]:
    """Each other node's connected component in the moral graph of the whole DAG minus
    ``node``: quilts in different components are independent given ``phi_node``."""
    adj = moral_ancestral_graph(theta, theta.nodes)
    block: dict[str, int] = {}
    for start in theta.nodes:
        if start == node or start in block:
            continue
        block[start] = len(block)
        label, stack = block[start], [start]
        while stack:
            for w in adj[stack.pop()]:
                if w != node and w not in block:
                    block[w] = label
                    stack.append(w)
    return block


def _pair_influences(joint: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``max_q log P(q|a) / P(q|b)`` for every ordered pair ``a != b`` of ``valid`` states of
    ``phi_i`` (``joint[a, q...]`` = ``P(phi_i = a, phi_Q = q)``); ``+inf`` when some ``q`` is
    possible under ``a`` and impossible under ``b``. Definition 8 is the largest of them."""
    # float: a lower bound may round either way by ~1e-16; influences are rounded up by 1e-10.
    j = np.asarray(joint, dtype=float).reshape(joint.shape[0], -1)[valid]
    cond = j / j.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        logc = np.log(cond)
        diff = logc[:, None, :] - logc[None, :, :]
    diff = np.where((cond > 0)[:, None, :], diff, -np.inf)
    out = diff.max(axis=2)
    k = len(valid)
    return out[~np.eye(k, dtype=bool)]


class _PairBound:
    """A lower bound on influences from conditional independence given ``phi_i``.

    Split the other nodes into the components ("blocks") of the moral graph minus ``i``.
    ``Q*(T)`` is the union of the ``Q*(T & block)``, which are independent given ``phi_i``
    under every member, so for each member and pair ``(a, b)`` of values of ``phi_i`` the
    log-ratio ``L_p(Q) = max_q log P(q|a) / P(q|b)`` adds up over blocks; and ``L_p`` is
    monotone in ``T`` like ``e``. Hence, with ``v_j`` the vector of ``L_p(Q*({j}))``,
    ``e(Q*(T)) >= sum over blocks of max over j in T & block of v_j[p]`` for every ``p``.
    For an additive ``Delta`` the best completion of a node against a fixed ``p`` is then a
    separable problem per block (docs/concepts.md).
    """

    def __init__(self, ctx: _Candidates, items: Sequence[str], weight: Mapping[str, float]):
        theta, node = ctx.theta, ctx.node
        block = _blocks(theta, node)
        self.block = {j: block[j] for j in items}
        self.weight = weight
        self.useful = len(set(self.block.values())) > 1
        self.vector: dict[str, np.ndarray] = {}
        if not self.useful:
            return
        valid = []
        for m in range(len(theta.members)):
            p_i = joint_marginal(theta, (node,), m, inference=ctx.inference)
            valid.append(np.flatnonzero(p_i > 0))
        for j in items:
            q = least_influence_quilt(theta, node, {j})
            parts = []
            for m, ok in enumerate(valid):
                if not q:
                    parts.append(np.zeros(len(ok) * (len(ok) - 1)))
                    continue
                try:
                    joint = joint_marginal(theta, (node, *q), m, max_table=ctx.max_table,
                                           inference=ctx.inference)
                except InfluenceTooExpensive:
                    parts.append(np.zeros(len(ok) * (len(ok) - 1)))  # L_p >= 0 always
                    continue
                parts.append(_pair_influences(joint, ok))
            self.vector[j] = np.concatenate(parts) if parts else np.zeros(0)

    def blocks_of(self, kept: Iterable[str]) -> set[int] | None:
        """The blocks of ``kept``, or ``None`` when two attributes share one (or the bound is
        not in use): then the floors of ``kept`` and its extensions are not exact."""
        if not self.useful:
            return None
        seen: set[int] = set()
        for j in kept:
            if self.block[j] in seen:
                return None
            seen.add(self.block[j])
        return seen

    def floors(self, kept: Iterable[str], extra: Sequence[str]) -> list[float]:
        """Lower bounds on ``e(Q*(kept + j))`` for each ``j`` of ``extra``: the largest over
        pairs of the sum over blocks of each block's largest ``v_j[p]``."""
        if not self.useful:
            return [0.0] * len(extra)
        top: dict[int, np.ndarray] = {}
        for j in kept:
            g = self.block[j]
            top[g] = self.vector[j] if g not in top else np.maximum(top[g], self.vector[j])
        size = len(next(iter(self.vector.values())))
        base = np.sum(list(top.values()), axis=0) if top else np.zeros(size)
        out = []
        for j in extra:
            g, v = self.block[j], self.vector[j]
            total = base + (np.maximum(top[g], v) - top[g] if g in top else v)
            out.append(float(total.max()) if size else 0.0)
        return out

    def excludes(self, kept: frozenset[str], avail: Sequence[str], excluded: float,
                 scale: float, eps: float) -> bool:
        """True when no target ``kept + S`` (``S`` inside ``avail``) has a scale below
        ``scale``; ``excluded`` is ``Delta`` of what every such target leaves in ``N``."""
        if not self.useful or not math.isfinite(scale) or not avail:
            return False
        w = self.weight
        total = excluded + sum(w[j] for j in avail)
        size = len(next(iter(self.vector.values())))
        for p in range(size):
            floor: dict[int, float] = {}
            for j in kept:
                if j in self.block:
                    g = self.block[j]
                    floor[g] = max(floor.get(g, 0.0), self.vector[j][p])
            base = sum(floor.values())
            by_block: dict[int, list[tuple[float, float]]] = {}
            for j in avail:
                by_block.setdefault(self.block[j], []).append((self.vector[j][p], w[j]))
            gain = 0.0
            for g, pts in by_block.items():
                pts.sort()
                f = floor.get(g, 0.0)
                cum, best_g = 0.0, 0.0
                for v, wj in pts:
                    cum += wj
                    best_g = max(best_g, cum - scale * max(0.0, v - f))
                gain += best_g
            # A completion S beats `scale` only if total - w(S) < scale * (eps - e), and
            # e >= base + sum of the increments, so only if gain > total - scale (eps - base).
            need = total - scale * (eps - base)
            if gain < need - 1e-12 * (abs(need) + gain + scale * eps):
                return True
        return False


def plan_node(
    theta: Theta,
    query: Query,
    node: str,
    epsilon: float,
    *,
    max_table: int | None = None,
    deadline: float | None = None,
    inference: InferenceMethod = "auto",
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    max_memory: int | str | None = None,
) -> SensitivePlan:
    """Least-noise quilt for one sensitive attribute (the inner loop of [ZOC22, Alg. 3]).

    See :func:`plan` for the parameters. The search is exact unless a candidate's influence is
    too expensive to compute (``max_table``), the deadline passes, the candidate budget is used
    up or the search is interrupted (Ctrl-C); in every case the returned quilt is valid, and
    ``optimal`` says whether it is proven least.
    """
    theta = check_theta(theta)
    check_query(query)
    node = theta.check_node(node, "sensitive attribute")
    theta.check_nodes(query.attributes, "query attribute")
    epsilon = check_epsilon(epsilon)
    return _plan_node(theta, query, node, epsilon, table_limit(max_table, max_memory), deadline,
                      check_inference(inference), _check_max_candidates(max_candidates))[0]


def _check_max_candidates(max_candidates: object) -> int:
    return int(check_scalar(max_candidates, "max_candidates", integer=True, min_val=1))


def _plan_node(theta: Theta, query: Query, node: str, eps: float, max_table: int,
               deadline: float | None, inference: InferenceMethod = "auto",
               max_candidates: int = DEFAULT_MAX_CANDIDATES, shared: _Shared | None = None,
               list_sets: bool = True) -> tuple[SensitivePlan, bool]:
    """:func:`plan_node`, also saying whether the search was interrupted."""
    interrupted = False
    if shared is None:
        shared = _Shared(theta, query, max_table, inference, False, deadline)
    all_attrs, delta_all = shared.trivial_terms()
    scale_all = quilt_scale(delta_all, 0.0, eps)
    best = _Search(quilt=None, nearby_attributes=all_attrs,
                   scale=scale_all, delta=delta_all,
                   # the trivial quilt loses ties to Q = {}
                   key=candidate_key(scale_all, 0.0, (), theta) + (1,))
    try:
        _search(theta, query, node, eps, best, max_table, deadline, inference, max_candidates,
                shared)
    except KeyboardInterrupt:
        interrupted = True
        best.optimal = False
        best.reasons.append("the search was interrupted; this is the best quilt found so far")
    full = shared.partition(node, best.quilt) if list_sets else None
    explanation = _explain(theta, query, node, best.quilt, full, best.nearby_attributes,
                           best.e, best.delta, best.scale, eps, best.member, best.pair,
                           best.optimal, best.reasons, best.via, best.arithmetic)
    return SensitivePlan(
        node=node, quilt=best.quilt or (), nearby=None if full is None else full.nearby,
        remote=None if full is None else full.remote,
        nearby_attributes=best.nearby_attributes if full is None else None,
        influence=best.e, sensitivity=best.delta, scale=best.scale,
        quilts_considered=best.considered, optimal=best.optimal, explanation=explanation,
        influence_member=best.member,
        influence_pair=None if best.pair is None else tuple(jsonable(x) for x in best.pair),
        influence_bound_via=best.via, influence_arithmetic=best.arithmetic,
    ), interrupted


def _plan_batch(theta: Theta, query: Query, nodes: Iterable[str], eps: float, max_table: int,
                wall_deadline: float | None, inference: InferenceMethod,
                max_candidates: int = DEFAULT_MAX_CANDIDATES,
                list_sets: bool = True) -> list[SensitivePlan]:
    """:func:`plan_node` for a batch of attributes in one worker.

    The deadline travels as wall-clock time (``time.time()``; monotonic clocks are not
    comparable between processes or machines) and becomes a local monotonic deadline here.
    """
    deadline = (None if wall_deadline is None
                else time.monotonic() + max(0.0, wall_deadline - time.time()))
    return [_plan_node(theta, query, node, eps, max_table, deadline, inference, max_candidates,
                       None, list_sets)[0] for node in nodes]


def _trivial_plan(theta: Theta, query: Query, node: str, eps: float,
                  reason: str, list_sets: bool = True,
                  terms: tuple[tuple[str, ...], float] | None = None) -> SensitivePlan:
    """The always-valid trivial quilt (every attribute nearby), flagged as not optimal.

    ``terms``: the query's attributes in network order and ``Delta_A F``
    (:meth:`_Shared.trivial_terms`), when already known.
    """
    q = trivial_quilt(theta, node) if list_sets else None
    if terms is None:
        terms = (theta.sort(set(query.attributes)), query.sensitivity(query.attributes))
    a_n, delta = terms
    scale = quilt_scale(delta, 0.0, eps)
    text = _explain(theta, query, node, None, q, a_n, 0.0, delta, scale, eps, None, None,
                    False, [reason])
    return SensitivePlan(node=node, quilt=(), nearby=None if q is None else q.nearby,
                         remote=None if q is None else q.remote,
                         nearby_attributes=a_n if q is None else None,
                         influence=0.0, sensitivity=delta, scale=scale, quilts_considered=1,
                         optimal=False, explanation=text)


def _explain(theta: Theta, query: Query, node: str, q: tuple[str, ...] | None,
             full: Quilt | None, a_n: tuple[str, ...], e: float, delta: float, scale: float,
             eps: float, member: str | None, pair: Any, optimal: bool,
             reasons: list[str], via: tuple[str, ...] | None = None,
             arithmetic: str = "float64") -> str:
    """One paragraph on the chosen quilt ``q`` (None: trivial); ``full`` is its listed
    partition, or None in a plan too large to list it (then ``R`` is named, not listed)."""
    if q is None or (not q and full is not None and full.is_trivial):
        # Q = {} with R = {} is the trivial quilt itself
        text = (f"no quilt lowers the noise, so the trivial quilt (every attribute nearby) is "
                f"used: Delta_A F = {_fmt(delta)}, scale = Delta / eps = {_fmt(scale)}.")
    else:
        remote = "R (not listed in a plan this large)" if full is None else \
            f"R = {_set(full.remote)}"
        if not q:
            sep = f"{node!r} is d-separated from {remote} with nothing observed (Q = {{}})"
        elif full is not None and not full.remote:
            sep = (f"the quilt Q = {_set(q)} is held fixed, which takes its nodes out "
                   f"of N (it separates nothing else: R = {{}})")
        else:
            sep = f"Q = {_set(q)} d-separates {node!r} from {remote}"
        where = ""
        if member is not None and pair is not None:
            where = f" (under {member}, phi = {pair[0]} vs {pair[1]})"
        infl = f"max-influence e(Q|{node}) = {fmt_influence(e)}{where}"
        if via is not None:
            infl = (f"max-influence e(Q|{node}) <= {_fmt(e)}, an UPPER BOUND (exact value "
                    f"too expensive): e(S|{node}) for the separator S = {_set(via)}")
        if arithmetic == "exact":
            infl += " (computed in exact integer arithmetic, where float64 could not be trusted)"
        if delta == 0:
            cost = (f"the query reads no nearby attribute (A & N = {{}}), so Delta = 0 and no "
                    f"noise is needed for {node!r}")
        else:
            cost = (f"the query reads nearby {_set(a_n)}, Delta_{{A&N}} F = {_fmt(delta)}, "
                    f"scale = {_fmt(delta)} / ({eps:g} - {_fmt(e)}) = {_fmt(scale)}")
        text = f"{sep}; {infl}; {cost}."
    if optimal:
        m = len(theta.nodes) - 1
        total = f"{2**m}" if m <= 40 else f"2^{m}"
        text += (f" Least scale over all {total} quilts of {node!r} (exact: every other "
                 f"quilt is dominated by an evaluated candidate or ruled out by a bound; see "
                 f"docs/concepts.md).")
    else:
        text += " Optimality not proven: " + "; ".join(dict.fromkeys(reasons)) + "."
    return text


def _plan_parallel(theta: Theta, query: Query, sens: tuple[str, ...], eps: float,
                   max_table: int, wall_deadline: float | None, inference: InferenceMethod,
                   n_jobs: int, notes: list[str],
                   max_candidates: int = DEFAULT_MAX_CANDIDATES,
                   list_sets: bool = True) -> tuple[SensitivePlan, ...]:
    """:func:`plan`'s parallel branch: batches of attributes on joblib workers.

    Results are collected as batches finish, so on Ctrl-C (KeyboardInterrupt in this process;
    joblib then stops the workers) the finished batches are kept and every attribute not
    finished gets the always-valid trivial quilt, as the serial search does.
    """
    from joblib import Parallel, delayed, effective_n_jobs

    if n_jobs > 0:
        n_jobs = min(n_jobs, len(sens))  # no more workers than attributes (each costs a process)
    # A few batches per worker, not one task per attribute: each task pickles Theta once
    # and its attributes share the worker's caches (elimination order, influences).
    n_batches = min(len(sens), 4 * max(1, effective_n_jobs(n_jobs)))
    batches = [sens[k::n_batches] for k in range(n_batches)]
    try:
        runner = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    except ValueError:  # a backend without generators (multiprocessing): all at once
        runner = Parallel(n_jobs=n_jobs)
    by_node: dict[str, SensitivePlan] = {}
    try:
        for batch in runner(delayed(_plan_batch)(theta, query, b, eps, max_table,
                                                 wall_deadline, inference, max_candidates,
                                                 list_sets)
                            for b in batches):
            by_node.update((sp.node, sp) for sp in batch)
    except KeyboardInterrupt:
        notes.append(INTERRUPTED_NOTE)
        terms = (theta.sort(set(query.attributes)), query.sensitivity(query.attributes))
        for s in sens:
            if s not in by_node:
                by_node[s] = _trivial_plan(theta, query, s, eps, "planning was interrupted "
                                           "before the search of this attribute finished",
                                           list_sets, terms)
    return tuple(by_node[s] for s in sens)


def plan(
    model: Any,
    query: Query,
    sensitive: str | Iterable[str],
    epsilon: float,
    *,
    max_table: int | None = None,
    time_limit: float | None = None,
    n_jobs: int | None = None,
    progress: bool = False,
    inference: InferenceMethod = "auto",
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    list_sets: bool | None = None,
    max_memory: int | str | None = None,
) -> Plan:
    """Plan an APMQM release ([ZOC22, Alg. 3]): the least Laplace scale over all Markov quilts.

    Parameters
    ----------
    model : Theta, pgmpy DiscreteBayesianNetwork or sequence of them
        The hyperparameter network(s); several networks form Theta.
    query : Query
        The query ``F`` and its column sensitivities (:mod:`quiltpriv.queries.query`).
    sensitive : str or iterable of str
        The sensitive attributes ``C``.
    epsilon : float
        The privacy parameter, finite and > 0.
    max_table : int, optional
        Largest joint table (entries) an exact influence may build; a candidate beyond it is
        skipped (the plan stays private and says optimality is not proven). By default as
        many as ``max_memory`` holds, and never more when both are given.
    max_memory : int or str, optional
        The memory budget in bytes or as a size (``"4G"``, ``"512M"``); default
        :data:`quiltpriv.utils.memory.DEFAULT_MAX_MEMORY`, half the machine's memory.
    time_limit : float, optional
        Seconds; when passed, the search stops with the best valid quilt found so far.
    n_jobs : int, optional
        Plan the sensitive attributes in parallel with joblib (``-1``: every core). The
        backend is joblib's, so ``with joblib.parallel_backend("dask"): plan(...)`` spreads
        the work over a Dask cluster with nothing else changed. The attributes go out in a few
        batches per worker (each batch ships Theta once). ``time_limit`` is one overall
        budget, passed to workers as a wall-clock deadline (a cluster's clocks must agree).
        A plan that shares its work across attributes (:data:`SHARED_MIN_SENSITIVE`) runs in
        one process, whatever ``n_jobs`` says, and a note says so.
    progress : bool
        Show a progress bar (tqdm) over the sensitive attributes.
    inference : {"auto", "junction_tree", "elimination"}
        How exact influences are computed (:func:`quiltpriv.inference.influence.joint_marginal`).
        All are exact; the default is the fastest measured on the bundled networks.
    max_candidates : int
        Most target sets the search of one sensitive attribute evaluates (each costs at most
        one influence). Count and histogram queries need two; additive (linear) and general
        (custom) sensitivities are searched by branch and bound, which stops here with the
        best quilt found so far, flagged as not proven optimal.
    list_sets : bool, optional
        List every sensitive attribute's nearby and remote sets. By default they are listed
        when the network's size times the number of sensitive attributes is at most
        :data:`LIST_SETS_LIMIT` and the network has at most :data:`LIST_SETS_MAX_NODES`
        nodes; otherwise ``nearby_attributes`` and
        :meth:`SensitivePlan.partition` stand for them, and the plan stays linear in the
        network.

    Returns
    -------
    Plan
        Deterministic for given inputs (``time_limit`` and interruption aside).

    Notes
    -----
    On Ctrl-C (KeyboardInterrupt) the plan is returned, valid and flagged as not proven
    optimal (:func:`was_interrupted` is then true): in a serial plan the attribute being
    searched keeps the best quilt found so far and the attributes not reached get the trivial
    quilt; in a parallel plan the attributes of unfinished batches get the trivial quilt.

    Raises
    ------
    ParameterError, ModelError, QueryError
        eps not finite and > 0; an attribute not in the network; an empty sensitive set;
        ``n_jobs`` 0 or not whole; a sensitivity or a least scale that overflows the float
        range (plans hold finite scales only).
    """
    max_table = table_limit(max_table, max_memory)
    theta = as_theta(model)
    eps = check_epsilon(epsilon)
    check_query(query)
    sens = theta.check_sensitive(sensitive)
    theta.check_nodes(query.attributes, "query attribute")
    _check_sensitivity_finite(query)
    n_jobs = check_n_jobs(n_jobs)
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    check_inference(inference)
    max_candidates = _check_max_candidates(max_candidates)
    if list_sets is None:
        list_sets = (len(theta.nodes) <= LIST_SETS_MAX_NODES
                     and len(theta.nodes) * len(sens) <= LIST_SETS_LIMIT)
    elif not isinstance(list_sets, bool):
        raise ParameterError(f"list_sets must be True, False or None, got {list_sets!r}")
    deadline = None if time_limit is None else time.monotonic() + time_limit
    wall_deadline = None if time_limit is None else time.time() + time_limit
    notes: list[str] = []
    shared = _shared_context(theta, query, sens, max_table, inference, deadline, progress)
    if n_jobs not in (None, 1) and len(sens) > 1 and shared.index is not None:
        # Workers would each redo the work this plan shares: one process is faster.
        notes.append(f"n_jobs={n_jobs} not used: a plan of {len(sens)} sensitive attributes "
                     "shares its graph walks and inference across them in one process")
        n_jobs = None
    from quiltpriv.mechanisms.step_plans import chain_step_plans

    steps = chain_step_plans(SensitivePlan, theta, query, sens, eps, deadline, progress,
                             list_sets)
    if steps is not None:
        # a time series (a directed chain, an additive or all-or-nothing query): exact and
        # linear in its length, held as runs of steps
        if n_jobs not in (None, 1):
            notes.append(f"n_jobs={n_jobs} not used: a chain is planned in one pass")
        return _chain_result(theta, query, steps, eps, notes, time_limit)
    # a hidden Markov model: exact and linear in its length too
    chained = _hmm_plans(theta, query, sens, eps, deadline, progress, list_sets)
    if chained is not None:
        plans = chained
        if n_jobs not in (None, 1):
            notes.append(f"n_jobs={n_jobs} not used: a hidden Markov model is planned in one "
                         "pass")
    elif n_jobs not in (None, 1) and len(sens) > 1:
        plans = _plan_parallel(theta, query, sens, eps, max_table, wall_deadline, inference,
                               n_jobs, notes, max_candidates, list_sets)
    else:
        done: list[SensitivePlan] = []
        nodes: Iterable[str] = sens
        if progress:
            from quiltpriv.utils.progress import progress_bar

            nodes = progress_bar(sens, desc="planning", unit="attribute")
        try:
            for s in nodes:
                sp, interrupted = _plan_node(theta, query, s, eps, max_table, deadline,
                                             inference, max_candidates, shared, list_sets)
                done.append(sp)
                if interrupted:
                    raise KeyboardInterrupt
        except KeyboardInterrupt:
            notes.append(INTERRUPTED_NOTE)
        for s in sens[len(done):]:
            done.append(_trivial_plan(theta, query, s, eps, "planning was interrupted before "
                                      "this attribute was searched", list_sets,
                                      shared.trivial_terms()))
        plans = tuple(done)
    _check_scale_finite(plans, eps)
    for reason, what in ((TIME_LIMIT_REASON, f"the time limit of {time_limit or 0:g} s"),
                         (BUDGET_REASON, f"the budget of {max_candidates} candidates")):
        stopped = [sp.node for sp in plans if reason in sp.explanation]
        if stopped:
            notes.append(f"{what} was reached: the search of {_few(stopped)} stopped with the "
                         "best quilt found so far (valid, optimality not proven)")
    scale = max(sp.scale for sp in plans)
    if len(plans) > 1:
        b = max(plans, key=lambda sp: sp.scale)
        notes.append(f"the overall scale is set by {b.node!r} (max over sensitive attributes)")
    from quiltpriv.model.provenance import provenance_dict, state_problems

    notes.extend(state_problems(theta))
    _warn_private_model(theta)
    attrs_set = frozenset(query.attributes)
    return _trusted(Plan(
        epsilon=eps, scale=scale, optimal=all(sp.optimal for sp in plans), sensitive=plans,
        query=query.to_dict(), model=theta.fingerprint(), theta_size=len(theta),
        query_fingerprint=query_fingerprint(query, [_nearby_query_attributes(sp, attrs_set)
                                                    for sp in plans]),
        notes=tuple(notes), provenance=provenance_dict(theta),
    ))


def _warn_private_model(theta: Theta) -> None:
    """Warn (:class:`~quiltpriv.errors.PrivateModelWarning`) when Theta was learned from data
    not declared public: its parameters go, without noise, into the plan."""
    import warnings

    from quiltpriv.errors import PrivateModelWarning
    from quiltpriv.releases.records import learned_from

    why = learned_from(theta.provenance)
    if why is not None:
        warnings.warn(why, PrivateModelWarning, stacklevel=3)


def _chain_result(theta: Theta, query: Query, steps: StepPlans, eps: float, notes: list[str],
                  time_limit: float | None) -> Plan:
    """:func:`plan`'s result for a plan held as runs (its summaries per run, not per step)."""
    from quiltpriv.mechanisms.step_plans import window_fingerprint
    from quiltpriv.model.provenance import provenance_dict, state_problems

    for r in steps.runs:
        if not math.isfinite(r.scale):
            _check_scale_finite((steps[int(steps.index(steps.order[r.first]))],), eps)
    n_stopped = sum(r.length for r in steps.runs if not r.optimal)
    if n_stopped:
        first = [steps.order[p] for r in steps.runs if not r.optimal
                 for p in range(r.first, r.first + min(r.length, NOTE_NAMES))][:NOTE_NAMES]
        shown = ", ".join(map(repr, first))
        if n_stopped > len(first):
            shown += f" and {n_stopped - len(first)} more (see each attribute's explanation)"
        notes.append(f"the time limit of {time_limit or 0:g} s was reached: the search of "
                     f"{shown} stopped with the best quilt found so far (valid, optimality not "
                     "proven)")
    scale = max(r.scale for r in steps.runs)
    if len(steps) > 1:
        notes.append(f"the overall scale is set by {steps[steps.binding_index()].node!r} (max "
                     "over sensitive attributes)")
    notes.extend(state_problems(theta))
    _warn_private_model(theta)
    return _trusted(Plan(
        epsilon=eps, scale=scale, optimal=all(r.optimal for r in steps.runs), sensitive=steps,
        query=query.to_dict(), model=theta.fingerprint(), theta_size=len(theta),
        query_fingerprint=window_fingerprint(query, steps, steps.column("sensitivity"),
                                             canonical_json),
        notes=tuple(notes), provenance=provenance_dict(theta),
    ))


def _hmm_plans(theta: Theta, query: Query, sensitive: Sequence[str], eps: float,
               deadline: float | None, progress: bool,
               list_sets: bool) -> tuple[SensitivePlan, ...] | None:
    """Plans of ``sensitive`` on a hidden Markov model whose additive query reads every
    observation with one weight (the fraction of time in a state), or None
    (:func:`quiltpriv.mechanisms.hmm_quilts.hmm_search`). ``Delta_{A and N}`` is the query's
    own for the chosen ``N``; the scale ``Delta / (eps - e)`` rounded up ([ZOC22, Alg. 3])."""
    from quiltpriv.mechanisms.hmm_quilts import hmm_search

    if query.sensitivity_structure != "additive":
        return None
    attrs = frozenset(query.attributes)
    found = hmm_search(theta, lambda v: query.sensitivity((v,)) if v in attrs else 0.0,
                       sensitive, eps, deadline=deadline, progress=progress)
    if found is None:
        return None
    order, fq = found
    plans = []
    scales: dict[tuple[float, float], float] = {}  # exact quotients, shared by equal steps
    for j, node in enumerate(sensitive):
        quilt, near = fq.quilt(j, order), fq.nearby_observed(j, order)
        delta, e, optimal = query.sensitivity(near), float(fq.influence[j]), bool(fq.optimal[j])
        scale = scales.get((delta, e))
        if scale is None:
            scale = scales[delta, e] = (0.0 if e <= eps else math.inf) if delta == 0.0 else (
                scale_up(delta, eps, e) if e < eps else math.inf)
        full = markov_quilt(theta, node, quilt) if list_sets else None
        m = int(fq.member[j])
        pair = fq.pair_states(j, theta.states[node])
        member = theta.names[m] if m >= 0 else None
        text = _explain(theta, query, node, quilt or None, full, near, e, delta, scale, eps,
                        member, pair, optimal, [] if optimal else [TIME_LIMIT_REASON])
        plans.append(SensitivePlan(
            node=node, quilt=quilt, nearby=None if full is None else full.nearby,
            remote=None if full is None else full.remote,
            nearby_attributes=near if full is None else None, influence=e, sensitivity=delta,
            scale=scale, quilts_considered=int(fq.considered[j]), optimal=optimal,
            explanation=text, influence_member=member, influence_pair=None if pair is None
            else (jsonable(pair[0]), jsonable(pair[1]))))
    return tuple(plans)


def _trusted(p: Plan) -> Plan:
    """Mark a plan computed (or recomputed) here as verified; only this module's callers do."""
    object.__setattr__(p, "verified", True)
    return p


# -- Jupyter views ----------------------------------------------------------------------------


def plan_html(plan: Plan) -> str:
    """HTML fragment for ``Plan._repr_html_``: scale, optimality and the per-attribute table."""
    check_instance(plan, Plan, "plan")
    from quiltpriv.utils.format import badge, escape, html_set, query_html

    rows = "".join(
        f"<tr><td><code>{escape(sp.node)}</code></td><td>{html_set(sp.quilt)}</td>"
        f"<td>{_html_shown(sp.nearby, sp.nearby_attributes)}</td>"
        f"<td>{_html_shown(sp.remote, None)}</td>"
        f"<td>{escape(fmt_influence(sp.influence))}</td>"
        f"<td>{escape(_fmt(sp.sensitivity))}</td>"
        f"<td>{escape(_fmt(sp.scale))}</td>"
        f"<td>{'yes' if sp.optimal else 'not proven'}</td></tr>"
        for sp in plan.sensitive)
    notes = "".join(f"<li>{escape(n)}</li>" for n in plan.notes)
    unverified = "" if plan.verified else (
        "<p>" + badge(False, "", escape(UNVERIFIED_NOTE)) + "</p>")
    return (f"<div class=\"quiltpriv-plan\"><p><b>APMQM plan</b>: \u03b5 = "
            f"{escape(f'{plan.epsilon:g}')}, Laplace scale b = "
            f"<b>{escape(_fmt(plan.scale))}</b> "
            f"({'optimal over all quilts' if plan.optimal else 'optimality NOT proven'}); "
            f"|\u0398| = {plan.theta_size}<br>query: {query_html(plan.query)}</p>"
            "<table><thead><tr><th>sensitive</th><th>Q</th><th>N</th><th>R</th>"
            "<th>influence</th><th>\u0394<sub>A\u2229N</sub></th><th>scale</th><th>optimal</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
            f"{'<ul>' + notes + '</ul>' if notes else ''}"
            f"{unverified}"
            "</div>")


def _html_shown(names: tuple[str, ...] | None, attrs: tuple[str, ...] | None) -> str:
    from quiltpriv.utils.format import escape, html_set

    if names is not None:
        return html_set(names)
    return escape(_shown_set(None, attrs))


def sensitive_plan_html(sp: SensitivePlan) -> str:
    """HTML fragment for ``SensitivePlan._repr_html_``: the quilt chosen for one attribute."""
    check_instance(sp, SensitivePlan, "sp")
    from quiltpriv.utils.format import escape, html_set, kv_table

    where = ""
    if sp.influence_member is not None and sp.influence_pair is not None:
        a, b = sp.influence_pair
        where = (f" (attained under member {escape(sp.influence_member)}, "
                 f"\u03c6 = {escape(a)} vs {escape(b)})")
    bound = "" if sp.influence_bound_via is None else (
        f" <b>upper bound</b> via the separator {html_set(sp.influence_bound_via)}")
    facts = kv_table([
        ("quilt Q", html_set(sp.quilt)), ("nearby N", _html_shown(sp.nearby,
                                                                     sp.nearby_attributes)),
        ("remote R", _html_shown(sp.remote, None)),
        ("max-influence e(Q | i)", escape(fmt_influence(sp.influence)) + where + bound),
        ("\u0394<sub>A\u2229N</sub> F", escape(_fmt(sp.sensitivity))),
        ("Laplace scale b<sub>i</sub>", escape(_fmt(sp.scale))),
        ("quilts evaluated", escape(sp.quilts_considered)),
        ("optimal", "proven least over all quilts" if sp.optimal else "NOT proven"),
    ])
    return (f"<div class=\"quiltpriv-sensitive-plan\"><p><b>Sensitive attribute</b> "
            f"<code>{escape(sp.node)}</code></p>{facts}<p>{escape(sp.explanation)}</p></div>")
