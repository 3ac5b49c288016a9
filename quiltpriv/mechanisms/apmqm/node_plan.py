"""One sensitive attribute's plan: the search's result as a :class:`SensitivePlan`, with why.
"""

from __future__ import annotations

from typing import Any

from quiltpriv.graph.quilts import Quilt, trivial_quilt
from quiltpriv.inference.engines.base import (
    DEFAULT_SETTINGS,
    EngineName,
    EngineSettings,
    check_settings,
    choose_engine,
)
from quiltpriv.inference.influence import InferenceMethod, fmt_influence
from quiltpriv.mechanisms.apmqm.search import (
    DEFAULT_MAX_CANDIDATES,
    _Search,
    _search,
)
from quiltpriv.mechanisms.apmqm.sensitive_plan import SensitivePlan
from quiltpriv.mechanisms.apmqm.shared import _cancelled, _Shared
from quiltpriv.mechanisms.plan_status import PlanStatus
from quiltpriv.mechanisms.quilt_price import candidate_key, price_text, quilt_scale
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import clock_deadline_keyword, renamed_keywords
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.format import fmt_set as _set
from quiltpriv.utils.memory import table_limit
from quiltpriv.utils.serialize import jsonable
from quiltpriv.utils.time_limit import TimeLimit, check_time_limit
from quiltpriv.utils.validation import check_epsilon, check_scalar

#: An explanation names the remote set's nodes when it has at most this many; a larger one is
#: counted (it is listed in ``remote``): a plan of every node of a 1,000-node network would
#: otherwise repeat a million names in its explanations.
EXPLAINED_REMOTE_NAMES = 16


def _plan_node_by_deadline(theta: Theta, query: Query, sensitive: str, epsilon: float, *,
                           deadline: float | None = None, **options: Any) -> SensitivePlan:
    """:func:`plan_node` with its deprecated ``deadline=`` (a ``time.monotonic()`` reading)."""
    limit = None if deadline is None else TimeLimit.ending_at(deadline)
    return plan_node(theta, query, sensitive, epsilon, time_limit=limit, **options)


@renamed_keywords(node="sensitive")
@clock_deadline_keyword(_plan_node_by_deadline)
def plan_node(
    theta: Theta,
    query: Query,
    sensitive: str,
    epsilon: float,
    *,
    max_table: int | None = None,
    time_limit: float | TimeLimit | None = None,
    inference: InferenceMethod = "auto",
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    max_memory: int | str | None = None,
    engine: EngineName = "auto",
    settings: EngineSettings | None = None,
) -> SensitivePlan:
    """Least-noise quilt for one sensitive attribute (the inner loop of [ZOC22, Alg. 3]).

    See :func:`plan` for the parameters (``time_limit``: seconds from this call or a running
    :class:`~quiltpriv.utils.time_limit.TimeLimit`; the old ``deadline=``, a
    ``time.monotonic()`` reading, is deprecated). The search is exact unless a candidate's
    influence is too expensive to compute (``max_table``), the time limit passes, the
    candidate budget is used up or the search is interrupted (Ctrl-C); in every case the
    returned quilt is valid, and ``optimal`` says whether it is proven least.
    """
    theta = check_theta(theta)
    check_query(query)
    sensitive = theta.check_node(sensitive, "sensitive attribute")
    theta.check_nodes(query.attributes, "query attribute")
    epsilon = check_epsilon(epsilon)
    return _plan_node(theta, query, sensitive, epsilon, table_limit(max_table, max_memory),
                      check_time_limit(time_limit), choose_engine(engine, inference),
                      _check_max_candidates(max_candidates), settings=check_settings(settings))[0]


def _check_max_candidates(max_candidates: object) -> int:
    return int(check_scalar(max_candidates, "max_candidates", integer=True, min_val=1))


def _plan_node(theta: Theta, query: Query, node: str, eps: float, max_table: int,
               time_limit: TimeLimit | None, engine: EngineName = "auto",
               max_candidates: int = DEFAULT_MAX_CANDIDATES, shared: _Shared | None = None,
               list_sets: bool = True, settings: EngineSettings = DEFAULT_SETTINGS,
               ) -> tuple[SensitivePlan, bool]:
    """:func:`plan_node`, also saying whether the search was interrupted (``settings``: the
    engines' tuning, used when no ``shared`` work is given; a given one has its own)."""
    interrupted = False
    if shared is None:
        shared = _Shared(theta, query, max_table, engine, False, time_limit, settings=settings)
    all_attrs, delta_all = shared.trivial_terms()
    scale_all = quilt_scale(delta_all, 0.0, eps)
    best = _Search(quilt=None, nearby_attributes=all_attrs,
                   scale=scale_all, delta=delta_all,
                   # the trivial quilt loses ties to Q = {}
                   key=candidate_key(scale_all, 0.0, (), theta) + (1,))
    try:
        _search(theta, query, node, eps, best, max_table, time_limit, engine, max_candidates,
                shared)
    except KeyboardInterrupt:
        interrupted = True
        best.not_optimal("the search was interrupted; this is the best quilt found so far",
                         PlanStatus.INTERRUPTED)
    interrupted = interrupted or _cancelled(shared.cancel)
    full = shared.partition(node, best.quilt) if list_sets else None
    explanation = _explain(theta, query, node, best.quilt, full, best.nearby_attributes,
                           best.e, best.delta, best.scale, eps, best.member, best.pair,
                           best.optimal, best.reasons, best.via, best.arithmetic,
                           best.engine, engine)
    return SensitivePlan(
        sensitive=node, quilt=best.quilt or (), nearby=None if full is None else full.nearby,
        remote=None if full is None else full.remote,
        nearby_attributes=best.nearby_attributes if full is None else None,
        influence=best.e, sensitivity=best.delta, scale=best.scale,
        quilts_considered=best.considered, optimal=best.optimal, explanation=explanation,
        influence_member=best.member,
        influence_pair=None if best.pair is None else tuple(jsonable(x) for x in best.pair),
        influence_bound_via=best.via, influence_arithmetic=best.arithmetic,
        status=best.status,
    ), interrupted


def _trivial_plan(theta: Theta, query: Query, node: str, eps: float,
                  reason: str, list_sets: bool = True,
                  terms: tuple[tuple[str, ...], float] | None = None,
                  status: PlanStatus = PlanStatus.NOT_REACHED) -> SensitivePlan:
    """The always-valid trivial quilt (every attribute nearby), flagged as not optimal
    (``status``, and ``reason`` in words).

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
    return SensitivePlan(sensitive=node, quilt=(), nearby=None if q is None else q.nearby,
                         remote=None if q is None else q.remote,
                         nearby_attributes=a_n if q is None else None,
                         influence=0.0, sensitivity=delta, scale=scale, quilts_considered=1,
                         optimal=False, explanation=text, status=status)


def _explain(theta: Theta, query: Query, node: str, q: tuple[str, ...] | None,
             full: Quilt | None, a_n: tuple[str, ...], e: float, delta: float, scale: float,
             eps: float, member: str | None, pair: Any, optimal: bool,
             reasons: list[str], via: tuple[str, ...] | None = None,
             arithmetic: str = "float64", engine: str | None = None,
             asked: str = "auto") -> str:
    """One paragraph on the chosen quilt ``q`` (None: trivial); ``full`` is its listed
    partition, or None in a plan too large to list it (then ``R`` is named, not listed).
    ``engine`` is the engine that computed the influence (``Influence.engine``), ``asked`` the
    one the caller asked for (``engine=``)."""
    if q is None or (not q and full is not None and full.is_trivial):
        # Q = {} with R = {} is the trivial quilt itself
        text = ("no quilt lowers the noise, so the trivial quilt (every attribute nearby) is "
                f"used: {price_text(node, a_n, e, delta, scale, eps)}.")
    else:
        remote = ("R (not listed in a plan this large)" if full is None
                  else f"R = {_set(full.remote)}" if len(full.remote) <= EXPLAINED_REMOTE_NAMES
                  else f"R ({len(full.remote)} nodes, listed in remote)")
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
            infl += (" (computed in exact integer arithmetic, as asked)" if asked == "exact" else
                     " (computed in exact integer arithmetic, where float64 could not be trusted)")
        if engine is not None:
            infl += f" (engine: {engine})"
        # The price in the words the report and ``quiltpriv quilts`` use for the same quilt.
        text = f"{sep}; {infl}; {price_text(node, a_n, e, delta, scale, eps)}."
    if optimal:
        m = len(theta.nodes) - 1
        total = f"{2**m}" if m <= 40 else f"2^{m}"
        text += (f" Least scale over all {total} quilts of {node!r} (exact: every other "
                 f"quilt is dominated by an evaluated candidate or ruled out by a bound; see "
                 f"docs/concepts.md).")
    else:
        text += " Optimality not proven: " + "; ".join(dict.fromkeys(reasons)) + "."
    return text
