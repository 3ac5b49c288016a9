"""The APMQM plan (:class:`Plan`) of [ZOC22, Alg. 3]: its JSON form, strict parsing and views.

A plan is input like any other once saved: :func:`plan_from_dict` and :func:`plan_from_json`
parse it strictly (every key required, every number finite) and return it unverified.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from quiltpriv.errors import ParameterError, PlanError, QueryError
from quiltpriv.inference.influence import fmt_influence
from quiltpriv.mechanisms.apmqm.fingerprints import _plain, canonical_json, query_fingerprint
from quiltpriv.mechanisms.apmqm.sensitive_plan import SensitivePlan, shown_set
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
from quiltpriv.mechanisms.plan_status import PlanStatus, check_status
from quiltpriv.mechanisms.protocol import Calibration, Guarantee, GuaranteeKind
from quiltpriv.mechanisms.step_plans import StepPlans
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_fields
from quiltpriv.utils.format import describe_query as _describe_query
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.format import fmt_set as _set
from quiltpriv.utils.format import text_table as _table
from quiltpriv.utils.validation import check_instance

#: What an APMQM release guarantees ([ZOC22, Def. 4, Thm. 4]).
GUARANTEE_KIND: GuaranteeKind = "distributional attribute privacy"

#: The assumptions of [ZOC22, Thm. 4], in plain words.
APMQM_ASSUMPTIONS = (
    "the attribute parameters phi follow the hyperparameter network for some theta in Theta",
    "the records are drawn independently given phi",
    "the query reads only its declared attributes and at most its declared number of records",
)


#: The ``"format"`` of a plan's JSON. A plan without it (written before plans were versioned)
#: or with another value is refused by :meth:`Plan.from_dict`: plan it again. Since /4 each
#: attribute states its ``"status"`` (:class:`~quiltpriv.mechanisms.plan_status.PlanStatus`)
#: and the plan whether it was ``"interrupted"``.
PLAN_FORMAT = "quiltpriv-plan/4"

#: The format of a plan of the steps of a time series held as runs
#: (:class:`~quiltpriv.mechanisms.step_plans.StepPlans`): ``"sensitive"`` is
#: ``{"order", "attributes", "listed", "runs"}`` instead of one object per attribute. A run's
#: status follows from its ``optimal`` (only the time limit stops the chain's one-pass
#: search short), and such a plan is never interrupted (it sees neither Ctrl-C nor cancel).
PLAN_FORMAT_RUNS = "quiltpriv-plan/3"

#: The format of a plan of the nodes of a hidden Markov model held as runs
#: (:class:`~quiltpriv.mechanisms.hmm_step_plans.HMMStepPlans`): ``"sensitive"`` is
#: ``{"hidden", "observed", "runs"}``; a run's status follows from its ``optimal`` as in
#: :data:`PLAN_FORMAT_RUNS`, and such a plan is never interrupted.
PLAN_FORMAT_HMM_RUNS = "quiltpriv-plan/hmm-runs-1"

#: The format of a plan of a hidden Markov model read at a few observations, held as runs
#: (:class:`~quiltpriv.mechanisms.hmm_few_step_plans.FewStepPlans`): ``"sensitive"`` is
#: ``{"hidden", "observed", "steps", "runs"}``.
PLAN_FORMAT_HMM_FEW_RUNS = "quiltpriv-plan/hmm-few-runs-1"

#: Older formats, still read. /2: no ``"status"`` (an attribute not proven optimal reads as
#: ``"not_recorded"``) and no ``"interrupted"`` (read from the plan's notes). /1: also no
#: ``nearby_attributes`` (``nearby`` and ``remote`` listed for every attribute).
PLAN_FORMAT_2 = "quiltpriv-plan/2"
PLAN_FORMAT_1 = "quiltpriv-plan/1"

#: The format of a plan that lists more than :data:`INLINE_SETS_LIMIT` names of nearby and
#: remote sets: :data:`PLAN_FORMAT` with each distinct listed set written once, in a top-level
#: ``"sets"`` list, and each attribute's ``nearby`` and ``remote`` its index there (or
#: ``null``). Attributes often share a quilt and its sets (a 1,000-node random local network
#: planned for a 3-attribute count chose 3 distinct quilts for its 1,000 nodes): written
#: inline, the sets cost more than the planning they report.
PLAN_FORMAT_SETS = "quiltpriv-plan/5"

#: A plan listing at most this many names (``nearby`` and ``remote`` of every attribute) is
#: written as :data:`PLAN_FORMAT`, each set inline; a larger one as :data:`PLAN_FORMAT_SETS`.
INLINE_SETS_LIMIT = 2**16

#: Each format's version number, as :func:`plan_from_dict` reads it.
_VERSIONS = {PLAN_FORMAT_1: 1, PLAN_FORMAT_2: 2, PLAN_FORMAT_RUNS: 3, PLAN_FORMAT: 4,
             PLAN_FORMAT_HMM_RUNS: 5, PLAN_FORMAT_SETS: 6, PLAN_FORMAT_HMM_FEW_RUNS: 7}


#: The note of a plan that is not verified (read from a file or built by hand).
UNVERIFIED_NOTE = ("NOT VERIFIED: this plan was read from a file or built by hand; its numbers are "
               "claims until quiltpriv.verify_plan(plan, model, query) recomputes them")


@renamed_fields(model="model_fingerprint")
@dataclass(frozen=True)
class Plan:
    """A deterministic, immutable APMQM plan: the noise a release needs and why.

    ``to_json()`` gives the command line's JSON contract::

        {"format": "quiltpriv-plan/4", "mechanism": "APMQM", "epsilon": E, "scale": b,
         "optimal": true, "interrupted": false,
         "sensitive": {"S1": {"scale": b1, "quilt": [...], "nearby": [...], "remote": [...],
                              "nearby_attributes": null, "status": "optimal",
                              "influence": e, "sensitivity": d, "quilts_considered": k}, ...},
         "query": {...}, "query_fingerprint": "<sha256>", "model": "<sha256>",
         "theta_size": t, "notes": [...], "provenance": {...} or null}

    ``query`` is the query's definition (``Query.to_dict()``), ``query_fingerprint`` covers
    it and every sensitivity the plan used (:func:`query_fingerprint`), ``model_fingerprint``
    (the file's ``"model"``; ``Plan.model`` is its deprecated name) is Theta's fingerprint
    (:meth:`~quiltpriv.model.network.Theta.fingerprint`). Above :data:`LIST_SETS_LIMIT` names,
    ``nearby`` and ``remote`` are ``null`` and ``nearby_attributes`` lists the query
    attributes in ``N`` (docs/trust-boundary.md).

    ``verified`` is True for a plan made by :func:`plan` in this process, or returned by
    :func:`quiltpriv.mechanisms.verification.verify_plan`; a plan rebuilt by :meth:`from_dict` (or
    built by hand) is not, and :func:`release` and :func:`quiltpriv.reporting.report.audit_report`
    verify it against the model before using it. ``provenance`` says where Theta came from
    (:mod:`quiltpriv.model.provenance`; ``None`` when not recorded).

    Parameters
    ----------
    epsilon : float
        The privacy parameter the plan is for.
    scale : float
        The Laplace scale ``b``: the largest of the sensitive attributes' scales.
    optimal : bool
        True when every attribute's scale is proven least over its quilts.
    sensitive : sequence of SensitivePlan
        One plan per sensitive attribute (a
        :class:`~quiltpriv.mechanisms.step_plans.StepPlans` for the steps of a time series).
    query : mapping
        The query's definition (``Query.to_dict()``).
    model_fingerprint : str
        Theta's fingerprint (``"model"`` in the file; ``model`` is its deprecated keyword).
    theta_size : int
        The number of networks in Theta.
    query_fingerprint : str
        The fingerprint of the query and every sensitivity the plan used.
    notes : tuple of str
        Plan-wide notes, for humans.
    provenance : mapping or None
        Where Theta came from.
    interrupted : bool
        True when planning was interrupted (Ctrl-C) or cancelled: the plan is the best found
        before (still valid; :func:`was_interrupted`).

    Examples
    --------
    >>> import quiltpriv as qp
    >>> theta = qp.load_model("chain")
    >>> query = qp.LinearQuery({v: 1 / 12 for v in theta.nodes},
    ...                        {v: (0, 1) for v in theta.nodes})
    >>> plan = qp.plan(theta, query, ["x01", "x04"], epsilon=1.0)
    >>> plan.epsilon, plan.scale, plan.binding.sensitive
    (1.0, 1.0, 'x04')
    >>> plan["x01"].quilt
    ('x07',)
    >>> saved = plan.to_json()
    >>> again = qp.Plan.from_json(saved)
    >>> again == plan, again.verified  # read back: equal, and to verify before a release
    (True, False)
    >>> again.interrupted, [sp.status.value for sp in again.sensitive]
    (False, ['optimal', 'optimal'])
    """

    epsilon: float
    scale: float
    optimal: bool
    sensitive: Sequence[SensitivePlan]
    query: Mapping[str, Any]
    model_fingerprint: str
    theta_size: int
    query_fingerprint: str
    notes: tuple[str, ...] = ()
    provenance: Mapping[str, Any] | None = None
    interrupted: bool = False
    mechanism: str = field(default="APMQM", init=False)
    verified: bool = field(default=False, init=False, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        # A pickled plan is a saved plan like any other: it comes back unverified.
        state = dict(self.__dict__)
        state.pop("verified", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        if "model" in state:  # pickled before the field was named model_fingerprint
            state.setdefault("model_fingerprint", state.pop("model"))
        if "interrupted" not in state:  # pickled before it was a field: the note stood for it
            state["interrupted"] = INTERRUPTED_NOTE in state.get("notes", ())
        self.__dict__.update(state)

    def __getitem__(self, node: str) -> SensitivePlan:
        if isinstance(self.sensitive, StepPlans):
            try:
                return self.sensitive[self.sensitive.index(node)]
            except ValueError:
                raise KeyError(node) from None
        for sp in self.sensitive:
            if sp.sensitive == node:
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
                   f"e(Q|i)), set by {b.sensitive!r}: {_fmt(b.sensitivity)} / "
                   f"({_fmt(self.epsilon)} - "
                   f"{_fmt(b.influence)}) = {_fmt(self.scale, rounding='up')}")
        return Calibration("laplace", self.scale, b.sensitivity, why, {
            "binding": b.sensitive, "binding_influence": b.influence,
            "binding_sensitivity": b.sensitivity,
            "sampler_sensitivity": self.sampler_sensitivity})

    def to_dict(self) -> dict[str, Any]:
        from quiltpriv.mechanisms.hmm_few_step_plans import FewStepPlans
        from quiltpriv.mechanisms.hmm_step_plans import HMMStepPlans

        runs = isinstance(self.sensitive, StepPlans)
        if runs and self.interrupted:
            raise PlanError("plan: a plan of a chain's steps held as runs is made in one pass "
                            "that sees neither Ctrl-C nor cancel; its format has no "
                            "'interrupted', and this one says it was interrupted")
        hmm = isinstance(self.sensitive, HMMStepPlans)
        sets: list[list[str]] | None = None
        if isinstance(self.sensitive, StepPlans):
            form = (PLAN_FORMAT_HMM_FEW_RUNS if isinstance(self.sensitive, FewStepPlans)
                    else PLAN_FORMAT_HMM_RUNS if hmm else PLAN_FORMAT_RUNS)
            sensitive: Any = self.sensitive.to_dict()
        elif _listed_names(self.sensitive) <= INLINE_SETS_LIMIT:
            form, sensitive = PLAN_FORMAT, {sp.sensitive: sp.to_dict() for sp in self.sensitive}
        else:  # each distinct set once (PLAN_FORMAT_SETS)
            form, (sensitive, sets) = PLAN_FORMAT_SETS, _shared_sets(self.sensitive)
        out: dict[str, Any] = {
            "format": form,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "scale": self.scale,
            "optimal": self.optimal,
            **({} if runs else {"interrupted": self.interrupted}),
            "sensitive": sensitive,
            "query": dict(self.query),
            "query_fingerprint": self.query_fingerprint,
            "model": self.model_fingerprint,  # the file's key stays "model"
            "theta_size": self.theta_size,
            "notes": list(self.notes),
            "provenance": None if self.provenance is None else dict(self.provenance),
        }
        if sets is not None:
            out["sets"] = sets
        return out

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Plan:
        """Parse :meth:`to_dict` output strictly; the plan returned is NOT verified.

        Every key is required (and no other is allowed), every number must be finite and in
        range, ``format`` must be one this version reads (:data:`PLAN_FORMAT`,
        :data:`PLAN_FORMAT_RUNS` or an older one) and ``mechanism`` ``"APMQM"``. A plan
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
            f"APMQM plan: epsilon = {_fmt(self.epsilon)}, Laplace scale b = "
            f"{_fmt(self.scale, rounding='up')}"
            f" ({'optimal over all quilts' if self.optimal else 'optimality NOT proven'})",
            f"query: {_describe_query(self.query)}; |Theta| = {self.theta_size}",
            "",
        ]
        if isinstance(self.sensitive, StepPlans):
            return "\n".join(lines + _run_lines(self))
        header = ("sensitive", "quilt Q", "nearby N", "remote R", "influence", "Delta_{A&N}",
                  "scale", "quilts", "optimal")
        rows = [(sp.sensitive, _set(sp.quilt), shown_set(sp.nearby, sp.nearby_attributes),
                 shown_set(sp.remote, None),
                 fmt_influence(sp.influence), _fmt(sp.sensitivity), _fmt(sp.scale, rounding='up'),
                 str(sp.quilts_considered), status_word(sp)) for sp in self.sensitive]
        lines += _table(header, rows)
        lines.append("")
        for sp in self.sensitive:
            lines.append(f"{sp.sensitive}: {sp.explanation}")
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
        from quiltpriv.reporting.notebook import plan_html  # a presentation hook

        return plan_html(self)


def status_word(sp: SensitivePlan) -> str:
    """An attribute's status in a table cell: ``yes``, or ``not proven (<status>)``."""
    check_instance(sp, SensitivePlan, "sp")
    return "yes" if sp.optimal else f"not proven ({sp.status.value.replace('_', ' ')})"


def sensitive_nodes(plan_: Plan) -> tuple[str, ...]:
    """The plan's sensitive attributes, in order (without making each one's plan)."""
    check_instance(plan_, Plan, "plan")
    if isinstance(plan_.sensitive, StepPlans):
        return plan_.sensitive.nodes()
    return tuple(sp.sensitive for sp in plan_.sensitive)


def _run_lines(p: Plan) -> list[str]:
    """:meth:`Plan.explain` of a plan held as runs: one row and one paragraph per run."""
    steps = cast(StepPlans, p.sensitive)
    header = ("sensitive steps", "quilt Q", "influence", "Delta_{A&N}", "scale", "quilts",
              "optimal")
    rows = [(steps.run_label(r), steps.run_quilt(r), fmt_influence(r.influence),
             _fmt(r.sensitivity), _fmt(r.scale, rounding='up'), str(r.considered),
             "yes" if r.optimal else "not proven") for r in steps.runs]
    lines = [steps.describe()]
    lines += _table(header, rows)
    lines.append("")
    for i, r in enumerate(steps.runs):
        sp = steps[steps.run_head(i)]
        more = "" if r.length == 1 else f" (and likewise each step of {steps.run_label(r)})"
        lines.append(f"{sp.sensitive}{more}: {sp.explanation}")
    for note in p.notes:
        lines.append(f"note: {note}")
    for warning in p.warnings:
        lines.append(f"warning: {warning}")
    if not p.verified:
        lines.append(UNVERIFIED_NOTE)
    return lines


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
            return (f"its sensitivity Delta_{{A&N}} for {sp.sensitive!r} (A & N = "
                    f"{_set(near)}) is {_fmt(delta, 17)}, the plan used {_fmt(sp.sensitivity, 17)}")
    if query_fingerprint(query, nears) != plan_.query_fingerprint:
        return "its fingerprint (definition and every sensitivity the plan used) differs"
    return None


def _runs_query_mismatch(plan_: Plan, query: Query) -> str | None:
    """:func:`query_mismatch` of a plan held as runs: every step's ``Delta_{A&N}`` and the
    fingerprint, recomputed (linear in the steps)."""
    steps = cast(StepPlans, plan_.sensitive)
    if not steps.attributes_match(query):
        return "its query attributes are not the query's"
    deltas = steps.sensitivities(query)
    stated = steps.column("sensitivity")
    bad = np.flatnonzero(deltas != stated)
    if bad.size:
        sp = steps[int(bad[0])]
        return (f"its sensitivity Delta_{{A&N}} for {sp.sensitive!r} (A & N = "
                f"{_set(sp.nearby_in(query.attributes))}) is {_fmt(deltas[bad[0]], 17)}, the plan "
                f"used {_fmt(sp.sensitivity, 17)}")
    if steps.fingerprint(query, deltas, canonical_json) != plan_.query_fingerprint:
        return "its fingerprint (definition and every sensitivity the plan used) differs"
    return None


def plan_query_fingerprint(query: Query, plan_: Plan) -> str:
    """The fingerprint ``plan_`` should state for ``query`` (:func:`query_fingerprint` of its
    nearby sets; for a plan held as runs, its linear form
    :func:`~quiltpriv.mechanisms.step_plans.window_fingerprint`)."""
    check_query(query)
    check_instance(plan_, Plan, "plan")
    if isinstance(plan_.sensitive, StepPlans):
        steps = plan_.sensitive
        return steps.fingerprint(query, steps.sensitivities(query), canonical_json)
    attrs = frozenset(query.attributes)
    return query_fingerprint(query, [_nearby_query_attributes(sp, attrs)
                                     for sp in plan_.sensitive])


#: The note of a plan whose search was interrupted (Ctrl-C); :func:`was_interrupted` reads it.
INTERRUPTED_NOTE = "planning was interrupted: attributes not reached use the trivial quilt"


def was_interrupted(plan_: Plan) -> bool:
    """True when ``plan_`` is the best found before an interruption (still valid): its
    ``interrupted`` field."""
    return check_instance(plan_, Plan, "plan").interrupted


def _trusted(p: Plan) -> Plan:
    """Mark a plan computed (or recomputed) here as verified; only this module's callers do."""
    object.__setattr__(p, "verified", True)
    return p


_PLAN_KEYS_2 = ("format", "mechanism", "epsilon", "scale", "optimal", "sensitive", "query",
                "query_fingerprint", "model", "theta_size", "notes", "provenance")
_PLAN_KEYS = _PLAN_KEYS_2 + ("interrupted",)
_SENSITIVE_KEYS_2 = ("node", "quilt", "nearby", "remote", "influence", "sensitivity", "scale",
                     "quilts_considered", "optimal", "explanation", "influence_member",
                     "influence_pair", "influence_bound_via", "influence_arithmetic",
                     "nearby_attributes")
_SENSITIVE_KEYS = _SENSITIVE_KEYS_2 + ("status",)
_SENSITIVE_KEYS_1 = _SENSITIVE_KEYS_2[:-1]
_PLAN_KEYS_SETS = _PLAN_KEYS + ("sets",)


def _listed_names(plans: Sequence[SensitivePlan]) -> int:
    """The names a plan lists in its attributes' nearby and remote sets."""
    return sum(len(sp.nearby) + len(sp.remote or ()) for sp in plans if sp.nearby is not None)


def _shared_sets(plans: Sequence[SensitivePlan]
                 ) -> tuple[dict[str, dict[str, Any]], list[list[str]]]:
    """The attributes' entries of format :data:`PLAN_FORMAT_SETS` and its ``"sets"``: each
    distinct listed set once, each ``nearby`` and ``remote`` its index (or ``None``)."""
    sets: list[list[str]] = []
    seen: dict[tuple[str, ...], int] = {}

    def ref(names: tuple[str, ...] | None) -> int | None:
        if names is None:
            return None
        k = seen.get(names)
        if k is None:
            k = seen[names] = len(sets)
            sets.append(list(names))
        return k

    entries = {}
    for sp in plans:
        d = sp.to_dict(sets=False)
        d["nearby"], d["remote"] = ref(sp.nearby), ref(sp.remote)
        entries[sp.sensitive] = d
    return entries, sets


# -- strict parsing ------------------------------------------------------------------------


def _sensitive(node: Any, s: Any, version: int,
               sets: Sequence[list[str]] = ()) -> SensitivePlan:
    if not isinstance(node, str) or not node:
        raise _fail("a key of 'sensitive'", "a node name", node)
    where = f"sensitive[{node!r}]"
    s = _keys(s, {1: _SENSITIVE_KEYS_1, 2: _SENSITIVE_KEYS_2}.get(version, _SENSITIVE_KEYS),
              where)
    if version == 6:  # nearby and remote: indices into the plan's "sets", read as listed
        s = {**s, **{k: _set_ref(s[k], sets, f"{where}.{k}") for k in ("nearby", "remote")}}
    if s["node"] != node:
        raise PlanError(f"plan: {where}.node is {s['node']!r}, not {node!r}")
    quilt = _names(s["quilt"], f"{where}.quilt")
    near_attrs = None
    if version >= 2 and s["nearby_attributes"] is not None:
        near_attrs = _names(s["nearby_attributes"], f"{where}.nearby_attributes")
    if version >= 2 and s["nearby"] is None and s["remote"] is None:
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
    optimal = _bool(s["optimal"], f"{where}.optimal")
    # Before /4 the status was not written: an optimal attribute's is "optimal", another's
    # "not_recorded" (its explanation says why, in words; never parsed).
    status = s.get("status", PlanStatus.NOT_RECORDED)
    if not isinstance(status, str):
        raise _fail(f"{where}.status", "a string", status)
    try:
        status = check_status(status, optimal, f"{where}.status")
    except ParameterError as exc:
        raise PlanError(f"plan: {exc}") from None
    return SensitivePlan(
        sensitive=node, quilt=quilt, nearby=nearby, remote=remote,
        influence=_number(s["influence"], f"{where}.influence"),
        sensitivity=_number(s["sensitivity"], f"{where}.sensitivity"),
        scale=_number(s["scale"], f"{where}.scale"),
        quilts_considered=_int(s["quilts_considered"], f"{where}.quilts_considered", 1),
        optimal=optimal,
        explanation=_text(s["explanation"], f"{where}.explanation"),
        influence_member=member, influence_pair=pair, influence_bound_via=via,
        influence_arithmetic=arithmetic, nearby_attributes=near_attrs, status=status,
    )


def _set_ref(x: Any, sets: Sequence[list[str]], where: str) -> list[str] | None:
    """The listed set a format ``/5`` entry refers to (``None`` for ``null``)."""
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < len(sets):
        raise _fail(where, f"null or an index into 'sets' (0 to {len(sets) - 1})", x)
    return sets[x]


def _listed_sets(x: Any) -> list[list[str]]:
    """A format ``/5`` plan's ``"sets"``: a list of lists of distinct node names (each
    checked once here, and again as the attribute's set it is)."""
    if not isinstance(x, list):
        raise _fail("sets", "a list of lists of node names", x)
    for k, names in enumerate(x):
        _names(names, f"sets[{k}]")
    return x


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
    version = _VERSIONS.get(d["format"]) if isinstance(d["format"], str) else None
    if version is None:
        raise PlanError(f"plan: unknown format {d['format']!r} (this quiltpriv reads "
                        f"{', '.join(map(repr, sorted(_VERSIONS, reverse=True)))}); plan "
                        "it again")
    d = _keys(d, {4: _PLAN_KEYS, 6: _PLAN_KEYS_SETS}.get(version, _PLAN_KEYS_2), "the plan")
    sets = _listed_sets(d["sets"]) if version == 6 else []
    if d["mechanism"] != "APMQM":
        raise _fail("mechanism", "'APMQM'", d["mechanism"])
    sensitive = d["sensitive"]
    if version == 3:
        epsilon = _number(d["epsilon"], "epsilon", positive=True)
        sensitive = StepPlans.from_dict(SensitivePlan, sensitive, epsilon)
    elif version == 5:
        from quiltpriv.mechanisms.hmm_step_plans import HMMStepPlans

        epsilon = _number(d["epsilon"], "epsilon", positive=True)
        sensitive = HMMStepPlans.from_dict(SensitivePlan, sensitive, epsilon)
    elif version == 7:
        from quiltpriv.mechanisms.hmm_few_step_plans import FewStepPlans

        epsilon = _number(d["epsilon"], "epsilon", positive=True)
        sensitive = FewStepPlans.from_dict(SensitivePlan, sensitive, epsilon)
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
    # Before /4 the flag was not written: the planner's note, word for word, stood for it.
    interrupted = (_bool(d["interrupted"], "interrupted") if version in (4, 6)
                   else version not in (3, 5, 7) and INTERRUPTED_NOTE in notes)
    return Plan(
        epsilon=_number(d["epsilon"], "epsilon", positive=True),
        scale=_number(d["scale"], "scale"),
        optimal=_bool(d["optimal"], "optimal"),
        sensitive=(sensitive if isinstance(sensitive, StepPlans)
                   else tuple(_sensitive(k, v, version, sets) for k, v in sensitive.items())),
        query=query,
        model_fingerprint=_digest(d["model"], "model"),
        theta_size=_int(d["theta_size"], "theta_size", 1),
        query_fingerprint=_digest(d["query_fingerprint"], "query_fingerprint"),
        notes=tuple(notes), provenance=provenance, interrupted=interrupted,
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


def __getattr__(name: str) -> object:
    # The Jupyter view moved to quiltpriv.reporting.notebook (the old path warns until 0.3.0).
    from quiltpriv._compat import moved_attribute

    return moved_attribute(__name__, {"plan_html": "quiltpriv.reporting.notebook"}, name)
