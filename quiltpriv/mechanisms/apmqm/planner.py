""":func:`plan`, the APMQM planner's entry point ([ZOC22, Alg. 3]): checks, dispatch (a chain's
steps, a hidden Markov model, in parallel or one attribute after another) and the plan's notes.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.graph.quilts import markov_quilt
from quiltpriv.inference.engines.base import (
    EngineName,
    EngineSettings,
    check_settings,
    choose_engine,
)
from quiltpriv.inference.influence import InferenceMethod
from quiltpriv.mechanisms.apmqm.fingerprints import canonical_json, query_fingerprint
from quiltpriv.mechanisms.apmqm.node_plan import (
    _check_max_candidates,
    _explain,
    _plan_node,
    _trivial_plan,
)
from quiltpriv.mechanisms.apmqm.parallel import _plan_parallel
from quiltpriv.mechanisms.apmqm.plan_types import (
    INTERRUPTED_NOTE,
    Plan,
    _nearby_query_attributes,
    _trusted,
)
from quiltpriv.mechanisms.apmqm.search import DEFAULT_MAX_CANDIDATES
from quiltpriv.mechanisms.apmqm.sensitive_plan import (
    LIST_SETS_LIMIT,
    LIST_SETS_MAX_NODES,
    SensitivePlan,
)
from quiltpriv.mechanisms.apmqm.shared import (
    CancelToken,
    _Shared,
    _shared_context,
    _shares_work,
)
from quiltpriv.mechanisms.plan_status import PlanStatus
from quiltpriv.mechanisms.quilt_price import quilt_scale
from quiltpriv.mechanisms.step_plans import TIME_LIMIT_REASON, StepPlans
from quiltpriv.model.network import Theta, as_theta
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.memory import table_limit
from quiltpriv.utils.serialize import jsonable
from quiltpriv.utils.time_limit import TimeLimit, check_time_limit
from quiltpriv.utils.validation import check_epsilon, check_n_jobs


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
                f"the least Laplace scale for {sp.sensitive!r}, Delta_{{A&N}} F / (epsilon - e) = "
                f"{_fmt(sp.sensitivity)} / ({_fmt(eps)} - {_fmt(sp.influence)}), overflows the "
                f"float range; raise epsilon or lower the query's sensitivity")


#: How many attribute names a plan-wide note lists before counting the rest (a 5,000-node
#: plan stopped by its time limit listed every name: 30 KB in one note).
NOTE_NAMES = 10


def _few(names: Sequence[Hashable]) -> str:
    """``names`` for a note: the first :data:`NOTE_NAMES`, then how many more (each attribute's
    own explanation says what happened to it)."""
    shown = ", ".join(map(repr, names[:NOTE_NAMES]))
    rest = len(names) - NOTE_NAMES
    return shown if rest <= 0 else f"{shown} and {rest} more (see each attribute's explanation)"


@renamed_keywords(model="theta")
def plan(
    theta: Any,
    query: Query,
    sensitive: str | Iterable[str],
    epsilon: float,
    *,
    max_table: int | None = None,
    time_limit: float | TimeLimit | None = None,
    n_jobs: int | None = None,
    progress: bool = False,
    inference: InferenceMethod = "auto",
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    list_sets: bool | None = None,
    max_memory: int | str | None = None,
    cancel: CancelToken | None = None,
    engine: EngineName = "auto",
    settings: EngineSettings | None = None,
) -> Plan:
    """Plan an APMQM release ([ZOC22, Alg. 3]): the least Laplace scale over all Markov quilts.

    Parameters
    ----------
    theta : Theta, pgmpy DiscreteBayesianNetwork or sequence of them
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
    time_limit : float or TimeLimit, optional
        Seconds from this call, or a :class:`~quiltpriv.utils.time_limit.TimeLimit` that
        started earlier (the command line's, counted from the start of the command); when it
        passes, the search stops with the best valid quilt found so far, and the notes state
        the limit's seconds.
    n_jobs : int, optional
        Plan the sensitive attributes in parallel with joblib (``-1``: every core). The
        backend is joblib's, so ``with joblib.parallel_backend("dask"): plan(...)`` spreads
        the work over a Dask cluster with nothing else changed. The attributes go out in a few
        batches per worker (each batch ships Theta once). ``time_limit`` is one overall
        budget, passed to workers as a wall-clock deadline (a cluster's clocks must agree).
        A plan that shares its work across attributes
        (:attr:`EngineSettings.shared_min_sensitive
        <quiltpriv.inference.engines.base.EngineSettings>`) runs in one process, whatever
        ``n_jobs`` says, and a note says so.
    progress : bool
        Show a progress bar (tqdm) over the sensitive attributes.
    inference : {"auto", "junction_tree", "elimination"}
        How exact influences are computed (:func:`quiltpriv.inference.influence.joint_marginal`);
        the older name of ``engine``, which it must not contradict.
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
    cancel : threading.Event, optional
        Another thread sets it to stop the plan (anything with ``is_set()``): the searches read
        it where they read the time limit, and the plan is returned as on Ctrl-C (below). A
        cooperative stop: no exception is raised in the planning thread. The one-pass plans
        of a chain's steps and of a hidden Markov model, and a single long influence
        computation, see only the time limit.
    engine : str
        The engine that computes exact influences, one of
        :data:`~quiltpriv.inference.engines.base.ENGINES`. All are exact; ``"auto"``, the
        fastest measured on the bundled networks, shares one batched propagation
        (``"junction_tree_batched"``) across many sensitive attributes where it is priced
        cheaper than eliminating per attribute, and otherwise runs the compiled kernel when
        it is loaded. ``"junction_tree_batched"`` shares it whatever the number of sensitive
        attributes and the price. Each attribute's explanation names the engine that
        computed its influence.
    settings : EngineSettings, optional
        The engines' tuning (:class:`~quiltpriv.inference.engines.base.EngineSettings`),
        including how many sensitive attributes make a plan share its work
        (``shared_min_sensitive``). They change speed and rounding only; verify the plan
        with the same settings (:func:`~quiltpriv.mechanisms.verification.check_plan`) to
        recompute its own numbers.

    Returns
    -------
    Plan
        Deterministic for given inputs (``time_limit``, cancellation and interruption aside).

    Notes
    -----
    On Ctrl-C (KeyboardInterrupt) or ``cancel`` the plan is returned, valid and flagged as
    not proven optimal (:func:`was_interrupted` is then true): in a serial plan the attribute
    being searched keeps the best quilt found so far and the attributes not reached get the
    trivial quilt; in a parallel plan the attributes of unfinished batches get the trivial
    quilt.

    Raises
    ------
    ParameterError, ModelError, QueryError
        eps not finite and > 0; an attribute not in the network; an empty sensitive set;
        ``n_jobs`` 0 or not whole; a sensitivity or a least scale that overflows the float
        range (plans hold finite scales only).

    Examples
    --------
    Protecting the first step of a chain, conditioning on ``x07`` cuts off five of the twelve
    steps: ``b = Delta_{A & N} F / (1 - e(Q | x01)) = 0.5 / (1 - 0.336478)``
    [ZOC22, Alg. 3]:

    >>> import quiltpriv as qp
    >>> theta = qp.load_model("chain")  # 12 steps of a Markov chain
    >>> query = qp.LinearQuery({v: 1 / 12 for v in theta.nodes},  # the mean of the 12 steps
    ...                        {v: (0, 1) for v in theta.nodes})
    >>> plan = qp.plan(theta, query, "x01", epsilon=1.0)
    >>> round(plan.scale, 6), plan.optimal
    (0.753554, True)
    >>> chosen = plan.sensitive[0]
    >>> chosen.quilt, chosen.remote
    (('x07',), ('x08', 'x09', 'x10', 'x11', 'x12'))
    >>> print(chosen.explanation)
    Q = {x07} d-separates 'x01' from R = {x08, x09, x10, x11, x12}; max-influence ...

    Every step sensitive: the plan's scale is the largest of the steps' scales.

    >>> round(qp.plan(theta, query, theta.nodes, epsilon=1.0).scale, 6)
    1.0
    """
    max_table = table_limit(max_table, max_memory)
    theta = as_theta(theta)
    eps = check_epsilon(epsilon)
    check_query(query)
    sens = theta.check_sensitive(sensitive)
    theta.check_nodes(query.attributes, "query attribute")
    _check_sensitivity_finite(query)
    n_jobs = check_n_jobs(n_jobs)
    limit = check_time_limit(time_limit)
    engine = choose_engine(engine, inference)
    settings = check_settings(settings)
    max_candidates = _check_max_candidates(max_candidates)
    _check_cancel(cancel)
    if list_sets is None:
        list_sets = (len(theta.nodes) <= LIST_SETS_MAX_NODES
                     and len(theta.nodes) * len(sens) <= LIST_SETS_LIMIT)
    elif not isinstance(list_sets, bool):
        raise ParameterError(f"list_sets must be True, False or None, got {list_sets!r}")
    wall_deadline = None if limit is None else limit.wall_ends()
    seconds = None if limit is None else limit.seconds
    notes: list[str] = []
    # the shared work is set up only where a search uses it (below the one-pass plans of a
    # time series, which have their own: on a 500,000-step chain it is a pass over all steps)
    if n_jobs not in (None, 1) and len(sens) > 1 and _shares_work(query, sens, engine,
                                                                    settings):
        # Workers would each redo the work this plan shares: one process is faster.
        notes.append(f"n_jobs={n_jobs} not used: a plan of {len(sens)} sensitive attributes "
                     "shares its graph walks and inference across them in one process")
        n_jobs = None
    from quiltpriv.mechanisms.step_plans import chain_step_plans

    steps = chain_step_plans(SensitivePlan, theta, query, sens, eps, limit, progress,
                             list_sets)
    if steps is not None:
        # a time series (a directed chain, an additive or all-or-nothing query): exact and
        # linear in its length, held as runs of steps
        if n_jobs not in (None, 1):
            notes.append(f"n_jobs={n_jobs} not used: a chain is planned in one pass")
        return _chain_result(theta, query, steps, eps, notes, seconds)
    # a hidden Markov model: exact and linear in its length too
    chained = _hmm_plans(theta, query, sens, eps, limit, progress, list_sets)
    if isinstance(chained, StepPlans):
        # every node of a hidden Markov model, in step order: held as runs too
        if n_jobs not in (None, 1):
            notes.append(f"n_jobs={n_jobs} not used: a hidden Markov model is planned in one "
                         "pass")
        return _chain_result(theta, query, chained, eps, notes, seconds)
    if chained is None:
        # a hidden Markov model read at a few observations (a count over three steps)
        from quiltpriv.mechanisms.apmqm.few_plans import _few_plans

        chained = _few_plans(theta, query, sens, eps, limit, list_sets)
        if isinstance(chained, StepPlans):
            if n_jobs not in (None, 1):
                notes.append(f"n_jobs={n_jobs} not used: a hidden Markov model is planned in "
                             "one pass")
            return _chain_result(theta, query, chained, eps, notes, seconds)
    interrupted = False  # Ctrl-C or cancel (the one-pass plans see neither)
    if chained is not None:
        plans = chained
        if n_jobs not in (None, 1):
            notes.append(f"n_jobs={n_jobs} not used: a hidden Markov model is planned in one "
                         "pass")
    elif n_jobs not in (None, 1) and len(sens) > 1:
        plans, interrupted = _plan_parallel(theta, query, sens, eps, max_table, wall_deadline,
                                            engine, n_jobs, notes, max_candidates,
                                            list_sets, cancel, settings)
    else:
        shared = _shared_context(theta, query, sens, max_table, engine, limit, progress,
                                 cancel, settings)
        plans, interrupted = _plan_serial(theta, query, sens, eps, max_table, limit, engine,
                             max_candidates, shared, list_sets, progress, notes)
    _check_scale_finite(plans, eps)
    for status, what in ((PlanStatus.TIME_LIMIT, f"the time limit of {_fmt(seconds or 0)} s"),
                         (PlanStatus.BUDGET, f"the budget of {max_candidates} candidates")):
        stopped = [sp.sensitive for sp in plans if sp.status is status]
        if stopped:
            notes.append(f"{what} was reached: the search of {_few(stopped)} stopped with the "
                         "best quilt found so far (valid, optimality not proven)")
    scale = max(sp.scale for sp in plans)
    if len(plans) > 1:
        b = max(plans, key=lambda sp: sp.scale)
        notes.append(f"the overall scale is set by {b.sensitive!r} (max over sensitive attributes)")
    from quiltpriv.model.provenance import provenance_dict, state_problems

    notes.extend(state_problems(theta))
    _warn_private_model(theta)
    attrs_set = frozenset(query.attributes)
    return _trusted(Plan(
        epsilon=eps, scale=scale, optimal=all(sp.optimal for sp in plans), sensitive=plans,
        query=query.to_dict(), model_fingerprint=theta.fingerprint(), theta_size=len(theta),
        query_fingerprint=query_fingerprint(query, [_nearby_query_attributes(sp, attrs_set)
                                                    for sp in plans]),
        notes=tuple(notes), provenance=provenance_dict(theta),
        interrupted=interrupted,
    ))


def _plan_serial(theta: Theta, query: Query, sens: tuple[str, ...], eps: float, max_table: int,
                 limit: TimeLimit | None, engine: EngineName, max_candidates: int,
                 shared: _Shared, list_sets: bool, progress: bool,
                 notes: list[str]) -> tuple[tuple[SensitivePlan, ...], bool]:
    """:func:`plan`'s serial branch: one attribute after another, with the work they share;
    the plans and whether planning was interrupted.

    Interrupted (Ctrl-C) or cancelled, the attribute being searched keeps its best quilt so
    far and the attributes not reached get the trivial quilt (and ``notes`` says so).
    """
    done: list[SensitivePlan] = []
    nodes: Iterable[str] = sens
    if progress:
        from quiltpriv.utils.progress import progress_bar

        nodes = progress_bar(sens, desc="planning", unit="attribute")
    halted = False
    try:
        for s in nodes:
            # halted: interrupted (Ctrl-C) or cancelled during this attribute's search
            sp, halted = _plan_node(theta, query, s, eps, max_table, limit, engine,
                                    max_candidates, shared, list_sets)
            done.append(sp)
            if halted:
                break
    except KeyboardInterrupt:
        halted = True
    if halted:
        notes.append(INTERRUPTED_NOTE)
    for s in sens[len(done):]:
        done.append(_trivial_plan(theta, query, s, eps, "planning was interrupted before "
                                  "this attribute was searched", list_sets,
                                  shared.trivial_terms()))
    return tuple(done), halted


def _check_cancel(cancel: object) -> None:
    """Refuse a ``cancel`` that is neither None nor an event with ``is_set()``."""
    if cancel is not None and not callable(getattr(cancel, "is_set", None)):
        raise ParameterError(f"cancel must be None or an event with is_set() (a "
                             f"threading.Event), got {type(cancel).__name__}")


def _warn_private_model(theta: Theta) -> None:
    """Warn (:class:`~quiltpriv.errors.PrivateModelWarning`) when Theta was learned from data
    not declared public: its parameters go, without noise, into the plan."""
    import warnings

    from quiltpriv.errors import PrivateModelWarning
    from quiltpriv.releases.records import learned_from
    from quiltpriv.utils.stack import user_stacklevel

    why = learned_from(theta.provenance)
    if why is not None:  # names the user's line, past plan's deprecated-keyword wrapper
        warnings.warn(why, PrivateModelWarning, stacklevel=user_stacklevel())


def _chain_result(theta: Theta, query: Query, steps: StepPlans, eps: float, notes: list[str],
                  time_limit: float | None) -> Plan:
    """:func:`plan`'s result for a plan held as runs (its summaries per run, not per step)."""
    from quiltpriv.model.provenance import provenance_dict, state_problems

    for r in steps.runs:
        if not math.isfinite(r.scale):
            _check_scale_finite((steps[int(steps.index(steps.node_at(r, 0)))],), eps)
    n_stopped = sum(r.length for r in steps.runs if not r.optimal)
    if n_stopped:
        first = [steps.node_at(r, k) for r in steps.runs if not r.optimal
                 for k in range(min(r.length, NOTE_NAMES))][:NOTE_NAMES]
        shown = ", ".join(map(repr, first))
        if n_stopped > len(first):
            shown += f" and {n_stopped - len(first)} more (see each attribute's explanation)"
        notes.append(f"the time limit of {_fmt(time_limit or 0)} s was reached: the search of "
                     f"{shown} stopped with the best quilt found so far (valid, optimality not "
                     "proven)")
    scale = max(r.scale for r in steps.runs)
    if len(steps) > 1:
        notes.append(f"the overall scale is set by {steps[steps.binding_index()].sensitive!r} (max "
                     "over sensitive attributes)")
    notes.extend(state_problems(theta))
    _warn_private_model(theta)
    return _trusted(Plan(
        epsilon=eps, scale=scale, optimal=all(r.optimal for r in steps.runs), sensitive=steps,
        query=query.to_dict(), model_fingerprint=theta.fingerprint(), theta_size=len(theta),
        query_fingerprint=steps.fingerprint(query, steps.column("sensitivity"),
                                            canonical_json),
        notes=tuple(notes), provenance=provenance_dict(theta),
    ))


def _hmm_plans(theta: Theta, query: Query, sensitive: Sequence[str], eps: float,
               limit: TimeLimit | None, progress: bool,
               list_sets: bool) -> tuple[SensitivePlan, ...] | StepPlans | None:
    """Plans of ``sensitive`` on a hidden Markov model whose additive query reads every
    observation with one weight (the fraction of time in a state), or None
    (:func:`quiltpriv.mechanisms.hmm_quilts.hmm_search`). ``Delta_{A and N}`` is the query's
    own for the chosen ``N``; the scale ``Delta / (eps - e)`` rounded up ([ZOC22, Alg. 3]).

    Held as runs (:class:`~quiltpriv.mechanisms.hmm_step_plans.HMMStepPlans`) when the sets
    are not listed and ``sensitive`` is in step order (``H_t`` before ``X_t``, as
    ``--sensitive all`` gives them); else one record per node, in the order given."""
    from quiltpriv.mechanisms.hmm_quilts import hmm_search

    if query.sensitivity_structure != "additive":
        return None
    attrs = frozenset(query.attributes)
    found = hmm_search(theta, lambda v: query.sensitivity((v,)) if v in attrs else 0.0,
                       sensitive, eps, time_limit=limit, progress=progress)
    if found is None:
        return None
    order, fq = found
    scales: dict[tuple[float, float], float] = {}  # exact quotients, shared by equal steps
    deltas: dict[tuple[int, int, int], float] = {}

    def numbers(j: int) -> tuple[tuple[str, ...], float, float]:
        near = fq.nearby_observed(j, order)
        t = int(fq.step[j])
        key = (t - int(fq.left[j]), t + int(fq.right[j]), t if fq.center[j] else -1)
        delta = deltas.get(key)  # the same observations in N: the same Delta
        if delta is None:
            delta = deltas[key] = float(query.sensitivity(near))
        e = float(fq.influence[j])
        scale = scales.get((delta, e))
        if scale is None:
            scale = scales[delta, e] = quilt_scale(delta, e, eps)
        return near, delta, scale

    states = (theta.states[order.hidden[0]], theta.states[order.observed[0]])
    if not list_sets and all(theta.states[v] == states[0] for v in order.hidden) \
            and all(theta.states[v] == states[1] for v in order.observed):
        from quiltpriv.mechanisms.hmm_step_plans import hmm_numbers, hmm_runs

        delta_col, scale_col = hmm_numbers(order, fq, query, eps)
        runs = hmm_runs(SensitivePlan, order, fq, sensitive, delta_col, scale_col, theta.names,
                        states, eps)
        if runs is not None:
            return runs
    plans = []
    for j, node in enumerate(sensitive):
        quilt = fq.quilt(j, order)
        near, delta, scale = numbers(j)
        e, optimal = float(fq.influence[j]), bool(fq.optimal[j])
        full = markov_quilt(theta, node, quilt) if list_sets else None
        m = int(fq.member[j])
        pair = fq.pair_states(j, theta.states[node])
        member = theta.names[m] if m >= 0 else None
        text = _explain(theta, query, node, quilt or None, full, near, e, delta, scale, eps,
                        member, pair, optimal, [] if optimal else [TIME_LIMIT_REASON])
        plans.append(SensitivePlan(
            status=PlanStatus.OPTIMAL if optimal else PlanStatus.TIME_LIMIT,
            sensitive=node, quilt=quilt, nearby=None if full is None else full.nearby,
            remote=None if full is None else full.remote,
            nearby_attributes=near if full is None else None, influence=e, sensitivity=delta,
            scale=scale, quilts_considered=int(fq.considered[j]), optimal=optimal,
            explanation=text, influence_member=member, influence_pair=None if pair is None
            else (jsonable(pair[0]), jsonable(pair[1]))))
    return tuple(plans)
