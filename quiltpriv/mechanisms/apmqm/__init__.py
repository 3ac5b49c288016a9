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

The package, by role: :mod:`~quiltpriv.mechanisms.apmqm.sensitive_plan` (one attribute's plan)
and :mod:`~quiltpriv.mechanisms.apmqm.plan_types` (the plan, its JSON form, strict parsing and
views); :mod:`~quiltpriv.mechanisms.apmqm.fingerprints` (canonical JSON and query fingerprints);
:mod:`~quiltpriv.mechanisms.apmqm.search` (the branch and bound over one attribute's quilts),
:mod:`~quiltpriv.mechanisms.apmqm.shared` (the work a plan shares across attributes),
:mod:`~quiltpriv.mechanisms.apmqm.node_plan` (one attribute's plan and why),
:mod:`~quiltpriv.mechanisms.apmqm.parallel` (joblib dispatch),
:mod:`~quiltpriv.mechanisms.apmqm.planner` (:func:`plan`) and
:mod:`~quiltpriv.mechanisms.apmqm.context` (:class:`PlanningContext`, the planner's work as
verification uses it). Every name is importable from here.
"""

from __future__ import annotations

from quiltpriv.mechanisms.apmqm.context import PlanningContext, planning_context
from quiltpriv.mechanisms.apmqm.fingerprints import canonical_json, query_fingerprint
from quiltpriv.mechanisms.apmqm.node_plan import plan_node
from quiltpriv.mechanisms.apmqm.plan_types import (
    APMQM_ASSUMPTIONS,
    GUARANTEE_KIND,
    INTERRUPTED_NOTE,
    PLAN_FORMAT,
    PLAN_FORMAT_1,
    PLAN_FORMAT_2,
    PLAN_FORMAT_RUNS,
    PLAN_FORMAT_SETS,
    UNVERIFIED_NOTE,
    Plan,
    plan_from_dict,
    plan_from_json,
    plan_query_fingerprint,
    query_mismatch,
    sensitive_nodes,
    was_interrupted,
)
from quiltpriv.mechanisms.apmqm.planner import NOTE_NAMES, plan
from quiltpriv.mechanisms.apmqm.search import (
    BUDGET_REASON,
    DEFAULT_MAX_CANDIDATES,
    PAIR_CHECK_SIZE,
    PAIR_MIN_ITEMS,
)
from quiltpriv.mechanisms.apmqm.sensitive_plan import (
    LIST_SETS_LIMIT,
    LIST_SETS_MAX_NODES,
    SensitivePlan,
)
from quiltpriv.mechanisms.plan_status import PlanStatus
from quiltpriv.mechanisms.quilt_price import TIE_RTOL, candidate_key, is_tie, quilt_scale

__all__ = [
    "APMQM_ASSUMPTIONS",
    "BUDGET_REASON",
    "DEFAULT_MAX_CANDIDATES",
    "GUARANTEE_KIND",
    "INTERRUPTED_NOTE",
    "LIST_SETS_LIMIT",
    "LIST_SETS_MAX_NODES",
    "NOTE_NAMES",
    "PAIR_CHECK_SIZE",
    "PAIR_MIN_ITEMS",
    "PLAN_FORMAT",
    "PLAN_FORMAT_1",
    "PLAN_FORMAT_2",
    "PLAN_FORMAT_RUNS",
    "PLAN_FORMAT_SETS",
    "Plan",
    "PlanStatus",
    "PlanningContext",
    "SHARED_MAX_ATTRIBUTES",
    "SHARED_MIN_SENSITIVE",
    "SHARED_PRICE_SAMPLE",
    "SHARED_WORK_RATIO",
    "SensitivePlan",
    "TIE_RTOL",
    "UNVERIFIED_NOTE",
    "candidate_key",
    "canonical_json",
    "is_tie",
    "plan",
    "plan_from_dict",
    "plan_from_json",
    "plan_node",
    "plan_query_fingerprint",
    "planning_context",
    "query_fingerprint",
    "query_mismatch",
    "quilt_scale",
    "sensitive_nodes",
    "was_interrupted",
]


def __getattr__(name: str) -> object:
    # The tuning constants became EngineSettings fields (their old names warn until 0.3.0).
    from quiltpriv.mechanisms.apmqm.shared import _DEPRECATED_CONSTANTS
    from quiltpriv.utils.deprecation import deprecated_constant

    if name in _DEPRECATED_CONSTANTS:
        return deprecated_constant(__name__, _DEPRECATED_CONSTANTS, name)
    # The Jupyter views moved to quiltpriv.reporting.notebook (the old paths warn until 0.3.0).
    from quiltpriv._compat import moved_attribute

    new = "quiltpriv.reporting.notebook"
    return moved_attribute(__name__, {"plan_html": new, "sensitive_plan_html": new}, name)
