"""Max-influence of a quilt on a sensitive attribute ([ZOC22, Def. 8]).

    e_Theta(Q | i) = max_theta max_{a,b} max_q log P(phi_Q=q | phi_i=a) / P(phi_Q=q | phi_i=b)

over values ``a, b`` of ``phi_i`` with positive probability under ``theta``; ``+inf`` when some
``q`` is possible under ``a`` and impossible under ``b``; ``0`` for ``Q = {}``. Per joint state
``q`` it is ``log max_a P(q | a) - log min_b P(q | b)``, so only the joint of ``(phi_i, phi_Q)``
is needed. It is computed exactly by an engine (``engine=``, one object per module of
:mod:`quiltpriv.inference.engines` behind the
:class:`~quiltpriv.inference.engines.base.Engine` protocol) on the ancestral subgraph of
``{i} + Q`` (barren nodes drop out), and cached per ``(theta member, i, Q, engine, settings,
max_table)`` (:class:`~quiltpriv.inference.cache.InferenceCache`). By default it is bucket
elimination over CPDs with single-child ancestors folded in once per Theta, run by the
optional compiled kernel in a per-query order when it is built (else in Python, in a global
min-weight order for small queries); see :func:`joint_marginal` for the engines. A query
that no order of the folded CPDs fits within ``max_table`` is priced again unfolded
(:func:`_kernel_call`), and one no order fits at all is answered by conditioning on a small
cutset, one elimination per state (the ``"cutset"`` engine,
:class:`~quiltpriv.inference.engines.cutset.CutsetEngine`), before it is refused.

Floating point, at every magnitude. float64 is trusted only where it provably cannot fail:

* *Underflow.* The rounding bound below holds only if no operation underflowed (a result
  below float64's normal range loses relative precision; one flushed to zero can turn a large
  ratio of tiny conditionals into ``0/0``). The compiled kernel watches the IEEE underflow flag
  over the whole query (elimination and Definition 8), which is raised for every tiny inexact
  result, and also reports a floating-point environment that flushes subnormals to zero; a
  query it computed without an underflow is trusted at any magnitude. Otherwise, and on the
  pure-Python paths, which cannot read the flag, a static bound decides: every intermediate of
  an elimination (and of Definition 8) is a sum of products of CPD entries of the query's
  ancestral set (or ratios of such sums, in the junction tree), so none is below ``L = prod
  over those CPDs of their least positive entry``. Per query and member the exponent of ``L``
  is summed exactly from ``frexp`` exponents; when ``L >= 2**-1000`` (:data:`SAFE_LOG2_FLOOR`,
  far above the subnormal range that starts at ``2**-1022``) no intermediate can underflow and
  a computed zero is an exact zero. The per-Theta folds of private ancestors (numpy, before the
  kernel's watch starts) are made only where this bound holds for them. When neither the flag
  nor the bound clears a query, the joint is computed in exact integer arithmetic (every float
  is ``m * 2**e``, so each CPD becomes integers with one power-of-two scale, and the
  elimination is exact) and Definition 8 is evaluated on those integers; the result records
  ``arithmetic="exact"`` and the plan says so.
* *Rounding.* On the float path every value has a relative error of at most ``gamma_K = K u /
  (1 - K u)`` (``u = 2**-53``), with ``K`` the depth of the arithmetic: at most the network's
  size (which bounds any ancestral set's) times (the largest summed block plus two), plus the
  output's size (Higham,
  *Accuracy and Stability of Numerical Algorithms*, Section 3.1: sums and products of
  non-negative numbers). A log-ratio of two conditionals then errs by at most ``4 gamma_K``
  plus the two logs' rounding; every influence of a non-empty quilt is raised by that bound, by
  at least :data:`ROUNDING_MARGIN` absolute and by :data:`ROUNDING_MARGIN` relative, so that it
  is never below the exact value. A computed 0 is raised too: float64 equality is not exact
  equality, and a stored CPD column sums to one only up to its rounding, so even a quilt that
  shares no ancestor with ``i`` reports ``1e-10``, not 0.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from quiltpriv.errors import ParameterError
from quiltpriv.inference import compiled
from quiltpriv.inference.budget import (
    DEFAULT_MAX_TABLE,
    InfluenceTooExpensive,
    _check_deadline,
    _check_deadline_now,
    _check_output_size,
    _late,
    deadline_after,
)
from quiltpriv.inference.cache import InferenceCache
from quiltpriv.inference.compiled import _KERNEL_LATE, compiled_kernel
from quiltpriv.inference.definition8 import _influence_exact, _influence_from_joint
from quiltpriv.inference.engines.base import (
    DEFAULT_SETTINGS,
    ENGINES,
    Answer,
    Engine,
    EngineName,
    EngineSettings,
    JointQuery,
    check_engine,
    check_settings,
    choose_engine,
)
from quiltpriv.inference.engines.batched import BatchedJunctionTreeEngine
from quiltpriv.inference.engines.bucket import BucketEngine
from quiltpriv.inference.engines.cutset import CutsetEngine, NoCutset
from quiltpriv.inference.engines.elimination import (
    EliminationEngine,
    _eliminate,
    _eliminate_if_it_fits,
    _python_float_joint,
    elimination_work,
)
from quiltpriv.inference.engines.exact import ExactEngine, _exact_joint
from quiltpriv.inference.engines.junction import JunctionTreeEngine
from quiltpriv.inference.engines.kernel import KernelEngine, _kernel_call
from quiltpriv.inference.junction_tree import is_floating
from quiltpriv.inference.methods import (
    EXACT,
    FLOAT64,
    INFERENCE_METHODS,
    InferenceMethod,
    check_inference,
)
from quiltpriv.inference.result import Influence, fmt_influence
from quiltpriv.inference.rounding import ROUNDING_MARGIN, _elim_depth, _rounding_bound_k
from quiltpriv.inference.underflow import SAFE_LOG2_FLOOR, _float_safe_for, subnormals_kept
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.deprecation import clock_deadline_keyword, renamed_keywords
from quiltpriv.utils.memory import table_limit

# The public names of the inference layer's modules that this one gathers (imported from here
# by the rest of the package, tests and user code).
__all__ = [
    "DEFAULT_MAX_TABLE", "DEFAULT_SETTINGS", "ENGINES", "EXACT", "FLOAT64", "INFERENCE_METHODS",
    "ROUNDING_MARGIN", "SAFE_LOG2_FLOOR", "EngineName", "EngineSettings", "InferenceMethod",
    "Influence", "InfluenceTooExpensive", "check_engine", "check_inference", "choose_engine",
    "compiled_kernel", "elimination_work", "fmt_influence",
    "influence_upper_bound", "influence_upper_bound_until", "joint_marginal",
    "max_influence", "max_influence_until", "subnormals_kept",
]


#: One instance of each engine, by name (``engine=``; ``"auto"`` is resolved by
#: :func:`_resolve`). Each implements :class:`~quiltpriv.inference.engines.base.Engine`.
_ENGINES: dict[str, Engine] = {e.name: e for e in (
    KernelEngine(), BucketEngine(), EliminationEngine(), JunctionTreeEngine(), ExactEngine(),
    CutsetEngine(), BatchedJunctionTreeEngine())}

#: Where ``"kernel"`` and ``"python"`` send a query no order of theirs fits: conditioning, by
#: the kernel for the one and by the Python order for the other.
_CONDITIONING = {"kernel": CutsetEngine(use_kernel=True), "python": CutsetEngine(use_kernel=False)}


class _Run(NamedTuple):
    """How one call computes its joints: the engine (resolved), the settings and the
    deadline."""

    engine: str  #: a name of ENGINES but "auto"
    settings: EngineSettings
    deadline: float | None = None

    @property
    def compiled_definition8(self) -> bool:
        """Whether Definition 8 may run in the kernel: every engine but ``"python"``."""
        return self.engine != "python"


def _resolve(engine: object, inference: object, settings: object,
             deadline: float | None = None) -> _Run:
    """The checked engine choice (see :mod:`quiltpriv.inference.engines.base`).

    ``inference="elimination"`` and ``"junction_tree"`` (the older parameter) name the engines
    of the same name; ``engine="auto"`` is ``"kernel"`` when the kernel is loaded, else
    ``"python"``. ``engine="kernel"`` without the kernel is refused, never run in Python.
    """
    name: str = choose_engine(engine, inference)
    if name == "auto":
        name = "kernel" if compiled._KERNEL is not None else "python"
    if name == "kernel" and compiled._KERNEL is None:
        raise ParameterError(
            "engine='kernel' needs the compiled kernel, which is not loaded here (not built, "
            "or QUILTPRIV_NO_KERNEL is set); use engine='auto' or 'python'")
    return _Run(name, check_settings(settings), deadline)


def _definition8(joint: np.ndarray, run: _Run) -> tuple[float, int, int]:
    return _influence_from_joint(np.ascontiguousarray(joint),
                                 use_kernel=run.compiled_definition8,
                                 small_joint=run.settings.small_joint)


def joint_marginal(
    theta: Theta,
    nodes: Sequence[str],
    member: int = 0,
    *,
    max_table: int | None = None,
    inference: InferenceMethod = "auto",
    max_memory: int | str | None = None,
    engine: EngineName = "auto",
    settings: EngineSettings | None = None,
) -> np.ndarray:
    """Exact ``P(phi_nodes)`` under one member of Theta, axes in the order of ``nodes``.

    Parameters
    ----------
    theta : Theta
    nodes : sequence of str
        Distinct nodes; the output's axes follow this order.
    member : int
        Which member of Theta.
    max_table : int, optional
        Largest intermediate or output table (entries); by default as many as ``max_memory``
        holds (:func:`quiltpriv.utils.memory.table_limit`), and never more when both are given.
    inference : {"auto", "junction_tree", "elimination"}
        The older name of ``engine``: ``"elimination"`` and ``"junction_tree"`` are the engines
        of those names; ``"auto"`` leaves the choice to ``engine``.
    max_memory : int or str, optional
        The memory budget in bytes or as a size (``"4G"``); default
        :data:`quiltpriv.utils.memory.DEFAULT_MAX_MEMORY`, half the machine's memory.
    engine : str
        One of :data:`~quiltpriv.inference.engines.base.ENGINES`: which engine computes the
        joint (:mod:`quiltpriv.inference.engines.base`); all are
        exact and differ in speed and rounding only. ``"auto"`` (the default): the compiled
        kernel when it is loaded (:func:`compiled_kernel`), else ``"python"``. Both are bucket
        elimination over the ancestral set of ``nodes``, with single-child ancestors folded
        into their child's CPD once per Theta. ``"kernel"`` runs in C, in the cheapest of the
        topological order restricted to the query and greedy min-weight, min-fill and (for
        expensive queries) randomised orders of the query's own, priced symbolically.
        ``"python"``: small queries use the network's global min-weight order (computed once
        per Theta), queries of ``settings.greedy_from`` factors or more, or whose global order
        would build a table above ``settings.bucket_limit`` entries, a greedy min-weight order
        of their own. With either, a query no order fits is conditioned on a cutset
        (:mod:`quiltpriv.inference.engines.cutset`) before it is refused.
        ``"elimination"``: variable elimination with a greedy min-size order chosen per query
        (the core's original path; also used for exact rational tables).
        ``"junction_tree"``: from the member's calibrated junction tree
        (:mod:`quiltpriv.inference.junction_tree`, built once per member; slower for the
        planner's queries, kept as an independent cross-check and for clique-local
        marginals), falling back to elimination when the tree would be too large.
        ``"exact"``: exact integer elimination, each entry rounded once at the end. Where
        float64 could underflow, every float engine hands the query to ``"exact"``.
        ``"cutset"``: conditioning on the least cutset found (none where an order fits), one
        elimination per joint state of the cutset, by the kernel when it is loaded.
        ``"junction_tree_batched"``: one propagation over the min-fill junction tree with
        the evidence of every joint state of ``nodes[1:]`` at once, kept for the queries that
        follow with the same nodes after the first (the planner's ``"auto"`` for plans of
        many sensitive attributes); elimination where it cannot be afforded.
    settings : EngineSettings, optional
        The engines' tuning (:class:`~quiltpriv.inference.engines.base.EngineSettings`);
        default :data:`~quiltpriv.inference.engines.base.DEFAULT_SETTINGS`.

    Raises
    ------
    InfluenceTooExpensive
        If the output or an intermediate factor would exceed ``max_table`` entries (the
        message names the memory it needs and the budget).
    ParameterError
        ``engine="kernel"`` where the kernel is not loaded, or ``inference`` and ``engine``
        naming different engines.

    Examples
    --------
    ``P(gender, income)`` in the student network, gender's states along the rows:

    >>> import quiltpriv as qp
    >>> qp.joint_marginal(qp.load_model("student"), ["gender", "income"])
    array([[0.12 , 0.105, 0.075],
           [0.14 , 0.14 , 0.12 ],
           [0.09 , 0.105, 0.105]])
    """
    max_table = table_limit(max_table, max_memory)
    theta = check_theta(theta)
    nodes = theta.check_nodes(nodes, "node")
    if len(set(nodes)) != len(nodes):
        raise ParameterError("joint_marginal needs distinct nodes")
    member = theta.check_member(member)
    run = _resolve(engine, inference, settings)
    _check_output_size(theta, nodes, max_table)
    if not nodes:
        return np.ones(())
    return _member_joint(theta, nodes, member, max_table, run)[0]


def _member_joint(theta: Theta, nodes: tuple[str, ...], member: int, max_table: int,
                  run: _Run) -> Answer:
    """:func:`joint_marginal` after validation, with the engine that answered."""
    if not is_floating(theta, member):  # exact rational tables: elimination, any engine
        return Answer(_eliminate(theta, nodes, theta.ancestral_set(nodes), member, max_table),
                      "elimination", 0)
    query = JointQuery(theta, nodes, member, max_table, run.settings, run.deadline)
    if run.engine != "exact":
        found = _float_joint(query, run)
        if found is not None:
            return found
    # float64 underflowed, or could: compute exactly, then round each entry once
    exact = _ENGINES["exact"].joint(query)
    assert exact is not None  # the exact engine always answers (or refuses)
    return exact


def max_influence_until(theta: Theta, sensitive: str, quilt: Iterable[str], *,
                        max_table: int | None = None, inference: InferenceMethod = "auto",
                        deadline: float | None = None, max_memory: int | str | None = None,
                        engine: EngineName = "auto",
                        settings: EngineSettings | None = None) -> Influence:
    """:func:`max_influence` with the time budget as a ``time.monotonic()`` ``deadline`` (one
    already past stops at the first check), for callers that hold one for a whole search."""
    max_table = table_limit(max_table, max_memory)
    theta = check_theta(theta)
    run = _resolve(engine, inference, settings, _check_deadline(deadline))
    node = theta.check_node(sensitive, "sensitive attribute")
    q = theta.sort(theta.check_nodes(quilt, "quilt node"))
    if node in q:
        raise ParameterError(f"a quilt of {node!r} cannot contain {node!r} itself")
    if not q:
        return Influence(node, q, 0.0, None, None)
    best: tuple[float, int, Any] = (-1.0, 0, None)
    cache = InferenceCache.of(theta)
    arithmetic = FLOAT64
    answered: list[str] = []
    for m in range(len(theta.members)):
        key = (m, node, q, run.engine, run.settings, max_table)
        hit = cache.influence.get(key)
        if hit is None:
            hit = _member_influence(theta, node, q, m, max_table, run)
            cache.influence[key] = hit
        if hit[0] > best[0]:
            best = (hit[0], m, hit[1])
        if hit[2] == EXACT:
            arithmetic = EXACT
        if hit[3] not in answered:
            answered.append(hit[3])
    return Influence(node, q, best[0], best[1], best[2], arithmetic=arithmetic,
                     engine=", ".join(answered))


def _float_joint(query: JointQuery, run: _Run) -> Answer | None:
    """The engine's answer, or conditioning's where no order of ``"kernel"`` or ``"python"``
    fits (:data:`_CONDITIONING`); None where float64 could have underflowed."""
    try:
        return _ENGINES[run.engine].joint(query)
    except InfluenceTooExpensive as refused:
        conditioning = _CONDITIONING.get(run.engine)
        if conditioning is None:
            raise
        _check_deadline_now(run.deadline, "an elimination")
        try:
            found = conditioning.joint(query, allow_empty=False)
        except NoCutset:
            raise refused from None
        if found is None:  # a term underflowed: exact integers would not fit either
            raise refused from None
        return found


@renamed_keywords(node="sensitive")
@clock_deadline_keyword(max_influence_until)
def max_influence(
    theta: Theta,
    sensitive: str,
    quilt: Iterable[str],
    *,
    max_table: int | None = None,
    inference: InferenceMethod = "auto",
    time_limit: float | None = None,
    max_memory: int | str | None = None,
    engine: EngineName = "auto",
    settings: EngineSettings | None = None,
) -> Influence:
    """Exact max-influence ``e_Theta(Q | i)`` [ZOC22, Def. 8] of the sensitive attribute
    ``i``, rounded upwards.

    Parameters
    ----------
    theta : Theta
        The hyperparameter network(s).
    sensitive : str
        The sensitive attribute ``i`` (``node`` is its deprecated name).
    quilt : iterable of str
        The quilt ``Q`` (must not contain ``sensitive``).
    max_table : int, optional
        Largest table (entries) the exact computation may build; by default as many as
        ``max_memory`` holds, and never more when both are given.
    inference : {"auto", "junction_tree", "elimination"}
        The older name of ``engine`` (:func:`joint_marginal`).
    time_limit : float, optional
        Seconds from the call: a computation that takes longer (conditioning on a cutset, an
        elimination the engine can stop) stops between two of its steps once they have
        passed, with :class:`InfluenceTooExpensive`. ``deadline=`` (a ``time.monotonic()``
        value) is its deprecated form.
    max_memory : int or str, optional
        The memory budget in bytes or as a size (``"4G"``); default
        :data:`quiltpriv.utils.memory.DEFAULT_MAX_MEMORY`, half the machine's memory.
    engine : {"auto", "kernel", "python", "elimination", "junction_tree", "exact"}
        Which engine computes the joint of ``(phi_i, phi_Q)`` (:func:`joint_marginal`); all
        exact. The result's ``engine`` names the one that answered.
    settings : EngineSettings, optional
        The engines' tuning (:class:`~quiltpriv.inference.engines.base.EngineSettings`).

    Returns
    -------
    Influence
        ``value`` is ``+inf`` when a joint state of ``Q`` is possible under one value of
        ``phi_i`` and impossible under another; ``0`` for ``Q = {}``.

    Raises
    ------
    InfluenceTooExpensive
        When the exact computation would exceed ``max_table``, or ``time_limit`` passed during
        it (callers fall back to a bound or drop the candidate; they never guess). The
        message names the memory needed and the budget.

    Examples
    --------
    The farther the quilt from ``x01`` on the bundled 12-step chain, the less it can move
    the odds on ``x01``:

    >>> import quiltpriv as qp
    >>> theta = qp.load_model("chain")
    >>> [round(qp.max_influence(theta, "x01", [q]).value, 4) for q in ("x02", "x07", "x12")]
    [2.0794, 0.3365, 0.0588]
    >>> influence = qp.max_influence(theta, "x01", ["x07"])
    >>> influence.member, influence.pair
    (0, ('0.2', '0.5'))
    >>> qp.max_influence(theta, "x01", []).value  # the empty quilt
    0.0
    """
    return max_influence_until(theta, sensitive, quilt, max_table=max_table, inference=inference,
                          deadline=deadline_after(time_limit), max_memory=max_memory,
                          engine=engine, settings=settings)


def _member_influence(theta: Theta, node: str, q: tuple[str, ...], m: int, max_table: int,
                      run: _Run) -> tuple[float, tuple[Any, Any], str, str]:
    """Definition 8 under member ``m``, rounded upwards: ``(value, (a, b), arithmetic,
    engine)``."""
    nodes = (node, *q)
    _check_output_size(theta, nodes, max_table)
    found = None if run.engine == "exact" else _float_influence(theta, nodes, m, max_table, run)
    if found is None:
        # Exact rational tables, or float64 underflowed (or could have).
        if is_floating(theta, m):
            joint, _ = _exact_joint(theta, nodes, m, max_table, run.settings.exact_max_table)
            answered = "exact"
        else:
            joint = _eliminate_if_it_fits(theta, nodes, m, max_table)
            answered = "elimination"
        value, a, b = _influence_exact(joint)
        arithmetic, bound = EXACT, 0.0
    else:
        value, a, b, depth, answered = found
        arithmetic = FLOAT64
        # the engine's depth, plus Definition 8's row totals (at most the joint's size)
        bound = _rounding_bound_k(depth + math.prod(theta.cardinality[v] for v in nodes))
    if math.isfinite(value):
        # Raised even from 0: float64 equality is not exact equality, and a model's columns
        # sum to one only up to rounding, so "independent" holds only up to the margin too.
        value = value * (1 + ROUNDING_MARGIN) + max(ROUNDING_MARGIN, bound)
    states = theta.states[node]
    return value, (states[a], states[b]), arithmetic, answered


def _float_influence(theta: Theta, nodes: tuple[str, ...], m: int, max_table: int,
                     run: _Run) -> tuple[float, int, int, int, str] | None:
    """Definition 8 of ``P(phi_nodes)`` in float64, unrounded, the rounding depth of the
    joint (:attr:`Answer.depth <quiltpriv.inference.engines.base.Answer>`) and the engine that
    answered; or None where float64 is not trusted: the member's tables are exact rationals,
    or an operation underflowed, or could.

    The compiled kernel reports whether any of its operations underflowed (the IEEE flag), so
    its result is trusted whenever none did; the pure-Python paths, which cannot read the flag,
    are trusted only where no intermediate can underflow (:func:`_float_safe`).
    """
    if not is_floating(theta, m):
        return None
    query = JointQuery(theta, nodes, m, max_table, run.settings, run.deadline)
    if run.engine == "kernel":
        try:
            return _kernel_influence(query, run)
        except InfluenceTooExpensive as refused:
            _check_deadline_now(run.deadline, "an elimination")
            try:
                found = _CONDITIONING["kernel"].joint(query, allow_empty=False)
            except NoCutset:
                raise refused from None
            if found is None:
                raise refused from None
    else:
        found = _float_joint(query, run)
    if found is None:
        return None
    return (*_definition8(found.table, run), found.depth, found.engine)


def _kernel_influence(query: JointQuery, run: _Run) -> tuple[float, int, int, int, str] | None:
    """The kernel's joint and Definition 8 in one call (no table crosses into Python); a
    query no order of the kernel fits by the Python order (``"elimination"``)."""
    theta, nodes, m, max_table = query.theta, query.nodes, query.member, query.max_table
    where = [theta.index[v] for v in nodes]
    floor = run.settings.safe_log2_floor
    depth = _elim_depth(theta, run.settings.merge_limit)
    # None: no order the kernel prices fits max_table
    found = _kernel_call(theta, m, "influence", where, max_table, deadline=run.deadline,
                         settings=run.settings)
    if found == _KERNEL_LATE:
        raise _late(run.deadline, "an elimination")
    if found is not None:
        value, a, b, underflow = found
        if not underflow or _float_safe_for(theta, m, nodes, "auto", floor):
            return value, a, b, depth, "kernel"
        return None
    joint = _python_float_joint(theta, nodes, m, max_table, run.deadline, floor)
    return None if joint is None else (*_definition8(joint, run), depth, "elimination")


def influence_upper_bound_until(theta: Theta, sensitive: str, quilt: Iterable[str], *,
                                max_table: int | None = None, inference: InferenceMethod = "auto",
                                deadline: float | None = None,
                                max_memory: int | str | None = None, engine: EngineName = "auto",
                                settings: EngineSettings | None = None) -> Influence:
    """:func:`influence_upper_bound` with a ``time.monotonic()`` ``deadline`` (as
    :func:`max_influence_until`)."""
    from quiltpriv.graph.quilts import moral_ancestral_graph

    theta = check_theta(theta)
    node = theta.check_node(sensitive, "sensitive attribute")
    quilt = theta.check_nodes(quilt, "quilt node")
    options: dict[str, Any] = {"max_table": max_table, "inference": inference,
                               "deadline": deadline, "max_memory": max_memory,
                               "engine": engine, "settings": settings}
    try:
        return max_influence_until(theta, node, quilt, **options)
    except InfluenceTooExpensive as exc:
        if deadline is not None and time.monotonic() > deadline:
            raise
        q = theta.sort(quilt)
        adj = moral_ancestral_graph(theta, {node, *q})
        sep = theta.sort(adj[node])
        if set(sep) >= set(q):
            raise
        try:
            bound = max_influence_until(theta, node, sep, **options)
        except InfluenceTooExpensive:
            raise InfluenceTooExpensive(
                f"{exc}; the data-processing bound via {list(sep)} is too expensive too"
            ) from None
        return Influence(node, q, bound.value, bound.member, bound.pair, bound_via=sep,
                         arithmetic=bound.arithmetic, engine=bound.engine)


@renamed_keywords(node="sensitive")
@clock_deadline_keyword(influence_upper_bound_until)
def influence_upper_bound(
    theta: Theta,
    sensitive: str,
    quilt: Iterable[str],
    *,
    max_table: int | None = None,
    inference: InferenceMethod = "auto",
    time_limit: float | None = None,
    max_memory: int | str | None = None,
    engine: EngineName = "auto",
    settings: EngineSettings | None = None,
) -> Influence:
    """``e_Theta(Q | i)`` of the sensitive attribute ``i`` exactly if affordable, else a
    proven upper bound.

    The bound is the data-processing inequality: if ``S`` d-separates ``i`` from ``Q - S``
    then ``e(Q | i) <= e(S | i)``. ``S`` is the set of neighbours of ``i`` in the moral graph
    of the ancestral set of ``{i} + Q``; every other node of that graph, ``Q`` included, is
    separated from ``i`` by it, and separation in that graph implies d-separation. The
    result's ``bound_via`` names ``S``. ``sensitive`` (``node`` is its deprecated name),
    ``max_table``, ``inference``, ``time_limit`` (one budget for both computations),
    ``max_memory``, ``engine`` and ``settings`` are those of :func:`max_influence`.

    Raises
    ------
    InfluenceTooExpensive
        When neither the exact value nor the bound is affordable, or ``time_limit`` passed
        (the caller must then not use the quilt: never a guess).
    """
    return influence_upper_bound_until(theta, sensitive, quilt, max_table=max_table,
                                  inference=inference, deadline=deadline_after(time_limit),
                                  max_memory=max_memory, engine=engine, settings=settings)


def __getattr__(name: str) -> object:
    # The Jupyter view moved to quiltpriv.reporting.notebook (the old path warns until 0.3.0).
    from quiltpriv._compat import moved_attribute

    return moved_attribute(__name__, {"influence_html": "quiltpriv.reporting.notebook"}, name)
