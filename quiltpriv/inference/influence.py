"""Max-influence of a quilt on a sensitive attribute ([ZOC22, Def. 8]).

    e_Theta(Q | i) = max_theta max_{a,b} max_q log P(phi_Q=q | phi_i=a) / P(phi_Q=q | phi_i=b)

over values ``a, b`` of ``phi_i`` with positive probability under ``theta``; ``+inf`` when some
``q`` is possible under ``a`` and impossible under ``b``; ``0`` for ``Q = {}``. Per joint state
``q`` it is ``log max_a P(q | a) - log min_b P(q | b)``, so only the joint of ``(phi_i, phi_Q)``
is needed. It is computed exactly by variable elimination on the ancestral subgraph of
``{i} + Q`` (barren nodes drop out), vectorised over joint states with ``numpy.einsum``, and
cached per ``(theta member, i, Q, inference)``. By default it is bucket elimination over CPDs
with single-child ancestors folded in once per Theta, run by the optional compiled kernel in a
per-query order when it is built (else in Python, in a global min-weight order for small
queries); see :func:`joint_marginal` for the paths. A query that no order of the folded CPDs
fits within ``max_table`` is priced again unfolded (:func:`_kernel_call`), and one no order
fits at all is answered by conditioning on a small cutset, one elimination per state
(:func:`_conditioned_joint`), before it is refused.

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

import hashlib
import heapq
import math
import os
import sys
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from quiltpriv.errors import ParameterError, QuiltPrivError
from quiltpriv.inference.cache import InferenceCache
from quiltpriv.inference.junction_tree import (
    TreeStepTooLarge,
    TreeStructure,
    cardinalities,
    is_floating,
    junction_tree,
    parent_indices,
    sorted_tables,
    tree_structure,
)
from quiltpriv.model.network import Theta, check_theta
from quiltpriv.utils.memory import table_limit, too_large
from quiltpriv.utils.validation import check_instance, check_scalar

try:  # numpy's C einsum without the Python wrapper (sublist form); same results
    from numpy._core._multiarray_umath import c_einsum as _c_einsum
except ImportError:  # pragma: no cover - a numpy that moved it
    _c_einsum = np.einsum

_KERNEL_ABI = 4

# What the kernel's Network.joint returns: no order fits max_table; the joint; the joint, but
# some operation underflowed (the IEEE flag), so it is trusted only where it cannot have; the
# call's time budget passed first (also what Network.influence returns then; Network.price
# returns -1.0).
_KERNEL_NO_FIT, _KERNEL_OK, _KERNEL_UNDERFLOW, _KERNEL_LATE = 0, 1, 2, 3


def _budget(deadline: float | None) -> float:
    """The kernel's time budget in seconds for ``deadline`` (``time.monotonic()``; the kernel
    measures it on its own monotonic clock): -1.0 for none, 0.0 once it has passed."""
    return -1.0 if deadline is None else max(0.0, deadline - time.monotonic())


def _late(deadline: float | None, what: str) -> InfluenceTooExpensive:
    return InfluenceTooExpensive(f"the time limit passed during {what}")


def _check_deadline_now(deadline: float | None, what: str) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _late(deadline, what)


def _load_kernel() -> Any:
    """The compiled kernel, or None: not built, switched off, or built from other source."""
    if os.environ.get("QUILTPRIV_NO_KERNEL"):
        return None
    # The optional compiled bucket elimination (quiltpriv/inference/_kernel.c, built by pip
    # install).
    try:
        import _quiltpriv_kernel as kernel
    except ImportError:  # pragma: no cover - installed without a C compiler
        return None
    if getattr(kernel, "ABI", None) != _KERNEL_ABI:
        return None
    source = Path(__file__).with_name("_kernel.c")
    if source.exists():  # a source checkout: use the build only if it is of this source
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        if getattr(kernel, "SOURCE_SHA256", None) != digest:
            warnings.warn(f"{kernel.__file__} was built from another version of {source}; "
                          "using the pure-Python path (reinstall to rebuild the kernel)",
                          RuntimeWarning, stacklevel=2)
            return None
    return kernel


_KERNEL = _load_kernel()


def compiled_kernel() -> bool:
    """Whether ``inference="auto"`` runs the compiled bucket elimination.

    The kernel (``_quiltpriv_kernel``, built from ``quiltpriv/_kernel.c`` when the package is
    installed) is optional: without a C compiler at install time, or with the environment
    variable ``QUILTPRIV_NO_KERNEL`` set, the pure-Python path runs instead. Both are exact
    and agree to rounding (tests/inference/test_kernel.py); the kernel is faster.
    """
    return _KERNEL is not None

#: Upward rounding applied to every non-zero computed influence (relative and absolute). It
#: covers the rounding of the contraction (relative error ~1e-13 even on the largest bundled
#: networks) so that the influence used for a plan is never an under-estimate.
ROUNDING_MARGIN = 1e-10

#: Largest intermediate or output table (entries) the exact computation builds by default: as
#: many as the default memory budget holds (:func:`quiltpriv.utils.memory.table_limit`).
DEFAULT_MAX_TABLE = table_limit()

#: The float path is used for a query only when the product of the least positive CPD entries
#: of its ancestral set is at least ``2**SAFE_LOG2_FLOOR``: then no intermediate of the
#: elimination can leave float64's normal range (which ends at ``2**-1022``), and the margin of
#: 22 binary orders absorbs the rounding of the products themselves.
SAFE_LOG2_FLOOR = -1000

#: Largest intermediate table (entries) of the exact-integer fallback: Python integers cost far
#: more than floats, so it refuses sooner (the planner then bounds or skips the quilt, which
#: only adds noise).
EXACT_MAX_TABLE = 2**16

#: Unit roundoff of float64.
_U = 2.0**-53

#: Arithmetic that computed an influence (``Influence.arithmetic``).
FLOAT64 = "float64"
EXACT = "exact"

#: Ways to compute a joint marginal (see :func:`joint_marginal`).
InferenceMethod = Literal["auto", "junction_tree", "elimination"]
INFERENCE_METHODS: tuple[InferenceMethod, ...] = ("auto", "junction_tree", "elimination")

#: With ``inference="auto"``, a query whose bucket elimination in the global order would build
#: a table above this many entries is redone in a greedy order of its own (measured on the
#: bundled networks: the restricted global order is cheapest for most queries, but on some
#: munin queries it builds tables the query-specific order avoids).
BUCKET_LIMIT = 2**16

#: Queries with at least this many (folded) factors are ordered greedily from the start: on
#: large ancestral sets the query-specific order pays for its symbolic cost (andes: slowest
#: query 5x -> 11x faster than pgmpy; smaller networks: unchanged).
GREEDY_FROM = 30

#: Consecutive elimination steps whose intermediate feeds the next step are done in one einsum
#: while their joint product has at most this many entries.
MERGE_LIMIT = 256

#: Largest table (entries, counting the summed-out variable) a per-Theta fold of private
#: ancestors into their child's CPD may build (see ``_folded_factors``).
FOLD_LIMIT = 2**12

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class InfluenceTooExpensive(QuiltPrivError):
    """The exact joint of ``(phi_i, phi_Q)`` needs a table larger than the allowed size."""


@dataclass(frozen=True)
class Influence:
    """A max-influence value with the member of Theta and the pair that attain it."""

    node: str
    quilt: tuple[str, ...]
    value: float
    member: int | None
    pair: tuple[object, object] | None
    bound_via: tuple[str, ...] | None = None
    """``None`` when exact; else the separator ``S`` whose exact influence bounds this one."""
    arithmetic: str = FLOAT64
    """``"float64"``, or ``"exact"`` when some member's joint was computed in exact integer
    arithmetic: the model's probabilities are too small for float64 (an intermediate could
    underflow), or float64 found the conditionals equal and exactness had to decide."""

    @property
    def exact(self) -> bool:
        return self.bound_via is None

    def _repr_html_(self) -> str:
        return influence_html(self)


def joint_marginal(
    theta: Theta,
    nodes: Sequence[str],
    member: int = 0,
    *,
    max_table: int | None = None,
    inference: InferenceMethod = "auto",
    max_memory: int | str | None = None,
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
        All three are exact and differ in rounding only. ``"auto"`` (the default): bucket
        elimination over the ancestral set of ``nodes``, with single-child ancestors folded
        into their child's CPD once per Theta. With the compiled kernel
        (:func:`compiled_kernel`) it runs in C, in the cheapest of the topological order
        restricted to the query and greedy min-weight, min-fill and (for expensive queries)
        randomised orders of the query's own, priced symbolically. In pure Python, small
        queries use the network's global min-weight order (computed once per Theta), queries
        of :data:`GREEDY_FROM` factors or more, or whose global order would build a table
        above :data:`BUCKET_LIMIT` entries, a greedy min-weight order of their own. A query
        no order fits is conditioned on a cutset (:func:`_conditioned_joint`) before it is
        refused. ``"elimination"``: variable elimination with a greedy min-size order chosen
        per query (the core's original path; also used for exact rational tables).
        ``"junction_tree"``: from the member's calibrated junction tree
        (:mod:`quiltpriv.inference.junction_tree`, built once per member; slower for the
        planner's queries, kept as an independent cross-check and for clique-local
        marginals), falling back to elimination when the tree would be too large.

    max_memory : int or str, optional
        The memory budget in bytes or as a size (``"4G"``); default
        :data:`quiltpriv.utils.memory.DEFAULT_MAX_MEMORY`, half the machine's memory.

    Raises
    ------
    InfluenceTooExpensive
        If the output or an intermediate factor would exceed ``max_table`` entries (the
        message names the memory it needs and the budget).
    """
    max_table = table_limit(max_table, max_memory)
    theta = check_theta(theta)
    nodes = theta.check_nodes(nodes, "node")
    if len(set(nodes)) != len(nodes):
        raise ParameterError("joint_marginal needs distinct nodes")
    member = theta.check_member(member)
    check_inference(inference)
    _check_output_size(theta, nodes, max_table)
    if not nodes:
        return np.ones(())
    index = [theta.index[v] for v in nodes]
    if not is_floating(theta, member):
        return _joint(theta, nodes, index, member, max_table, inference)
    try:
        table = _float_joint(theta, nodes, index, member, max_table, inference)
    except InfluenceTooExpensive:
        if inference != "auto":
            raise
        conditioned = _conditioned_joint(theta, nodes, member, max_table)
        if conditioned is None:
            raise
        return conditioned[0]
    if table is not None:
        return table
    # float64 underflowed, or could: compute exactly, then round each entry once
    ints, exponent = _exact_joint(theta, nodes, member, max_table)
    return _ints_to_float(ints, exponent)


def _float_joint(theta: Theta, nodes: tuple[str, ...], index: list[int], member: int,
                 max_table: int, inference: InferenceMethod) -> np.ndarray | None:
    """:func:`joint_marginal` of a floating member by one elimination (or the junction tree);
    None where float64 underflowed or could have."""
    if _KERNEL is not None and inference == "auto":
        out = np.empty([theta.cardinality[v] for v in nodes])
        code = _kernel_call(theta, member, "joint", index, out, max_table)
        if code == _KERNEL_OK or (code == _KERNEL_UNDERFLOW
                                  and _float_safe_for(theta, member, nodes, inference)):
            return out
        if code == _KERNEL_NO_FIT:
            return _python_float_joint(theta, nodes, member, max_table)
        return None
    if _float_safe_for(theta, member, nodes, inference):
        return _joint(theta, nodes, index, member, max_table, inference)
    return None


def elimination_work(theta: Theta, nodes: Sequence[str], *,
                     max_table: int = DEFAULT_MAX_TABLE, stop_above: float = math.inf) -> float:
    """Table entries variable elimination builds for ``P(phi_nodes)``, priced on the factors'
    scopes alone (no arithmetic; the same for every member of Theta).

    The order is the greedy min-size one of ``inference="elimination"``. A deterministic
    estimate of a query's cost that does not depend on whether the compiled kernel is built
    (the kernel's own orders may be cheaper). ``inf`` when a step would exceed ``max_table``.
    ``stop_above``: stop pricing once the work passes it (the result is then the work so far,
    above ``stop_above``; enough to decide a comparison at a fraction of the cost).
    """
    theta = check_theta(theta)
    nodes = theta.check_nodes(nodes, "node")
    if len(set(nodes)) != len(nodes):
        raise ParameterError("elimination_work needs distinct nodes")
    max_table = int(check_scalar(max_table, "max_table", integer=True, min_val=1))
    if not (isinstance(stop_above, (int, float)) and stop_above >= 0):
        raise ParameterError(f"stop_above must be a non-negative number, got {stop_above!r}")
    sizes: list[int] = []
    try:
        _eliminate(theta, tuple(nodes), theta.ancestral_set(nodes), 0, max_table,
                   price_only=True, sizes=sizes, stop_above=stop_above)
    except InfluenceTooExpensive:
        return math.inf
    return float(sum(sizes))


def _check_output_size(theta: Theta, nodes: Sequence[str], max_table: int) -> None:
    """Refuse a joint over ``nodes`` that would itself exceed ``max_table`` entries."""
    card = theta.cardinality
    out_size = math.prod(card[v] for v in nodes)
    if out_size > max_table:
        raise InfluenceTooExpensive(
            too_large(f"the joint table over {len(nodes)} nodes", out_size, max_table))


def _joint(theta: Theta, nodes: tuple[str, ...], index: list[int], member: int,
           max_table: int, inference: InferenceMethod,
           deadline: float | None = None) -> np.ndarray:
    """:func:`joint_marginal` after validation (distinct, non-empty nodes, output in limit);
    the eliminations see ``deadline`` (the junction tree, built once per member, does not)."""
    if inference == "junction_tree":
        tree = junction_tree(theta, member)
        if tree is not None:
            try:
                return tree.marginal(index, max_table)
            except TreeStepTooLarge:
                pass  # variable elimination on the ancestral set may still fit
    if inference == "auto" and is_floating(theta, member):
        table = _bucket_eliminate(theta, index, member, min(max_table, BUCKET_LIMIT),
                                  deadline=deadline)
        if table is None:  # the global order suits this query badly: order it greedily
            table = _bucket_eliminate(theta, index, member, max_table, greedy=True,
                                      deadline=deadline)
        if table is not None:
            return table
    return _eliminate(theta, nodes, theta.ancestral_set(nodes), member, max_table,
                      deadline=deadline)


def check_inference(inference: object) -> InferenceMethod:
    """``inference`` if it names a method of :data:`INFERENCE_METHODS`, else ParameterError.

    ``inference`` is untrusted (any object): this is the check that makes it a method name.
    """
    for method in INFERENCE_METHODS:
        if inference == method:
            return method
    raise ParameterError(f"inference must be one of {', '.join(INFERENCE_METHODS)}; "
                         f"got {inference!r}")


def _eliminate(theta: Theta, nodes: tuple[str, ...], anc: set[str], member: int,
               max_table: int, tables: Mapping[str, np.ndarray] | None = None,
               *, price_only: bool = False, fixed: Mapping[str, int] | None = None,
               checked: bool = False, sizes: list[int] | None = None,
               order: list[str] | None = None, stop_above: float = math.inf,
               deadline: float | None = None) -> np.ndarray:
    """Variable elimination of ``anc - nodes`` (greedy min-size order, lazily updated).

    ``tables`` replaces the member's CPD tables (axes ``(v, *parents)``), e.g. by the exact
    integer tables of :func:`_exact_tables`; any element type numpy's einsum can multiply and
    add will do. ``price_only``: walk the same order on the factors' scopes alone, raising
    :class:`InfluenceTooExpensive` exactly where the elimination would (the order and every
    refusal depend on the scopes only), without any arithmetic; returns an empty array.
    ``fixed`` conditions on variables (never in ``nodes``): each factor is sliced at their
    values and loses their axes, so the result is ``P(phi_nodes, fixed)``. ``checked``
    multiplies with numpy ufuncs instead of einsum, so that ``numpy.errstate`` sees every
    operation (:func:`_conditioned_joint`). A refusal's exception carries the refused step's
    variables as ``scope``. ``sizes`` and ``order``, when given, receive each step's table
    size and eliminated variable. ``stop_above`` (pricing only): stop once the steps' sizes
    sum above it. ``deadline`` (``time.monotonic()``): raise :class:`InfluenceTooExpensive`
    once it passes (looked at every 16 steps, and at every step that multiplies tables).
    """
    card = theta.cardinality
    rank = theta.index
    fixed = fixed or {}
    factors, where = _elimination_factors(theta, anc, member, tables, fixed, price_only)
    next_id = len(factors)
    contract = _checked_contract if checked and not price_only else _contract

    def cost(v: str) -> tuple[int, set[str]]:
        scope: set[str] = set()
        for k in where[v]:
            scope.update(factors[k][0])
        scope.discard(v)
        return math.prod(card[u] for u in scope), scope

    # Greedy min-size elimination order, kept incrementally: a heap of (cost, rank, var) with
    # lazy re-evaluation (a popped entry whose cost changed is pushed back), and fresh entries
    # for the neighbours of each eliminated variable.
    remaining = anc - set(nodes) - set(fixed)
    priced = 0
    heap = [(cost(v)[0], rank[v], v) for v in remaining]
    heapq.heapify(heap)
    while heap:
        c, r, v = heapq.heappop(heap)
        if v not in remaining:
            continue
        actual, scope = cost(v)
        if actual != c:
            heapq.heappush(heap, (actual, r, v))
            continue
        _check_step(actual, max_table, scope)
        if deadline is not None and (not price_only or len(remaining) % 16 == 0):
            _check_deadline_now(deadline, "an elimination")
        if sizes is not None:
            sizes.append(actual)
        if order is not None:
            order.append(v)
        priced += actual
        if price_only and priced > stop_above:
            return _PRICED
        involved = _take_factors(factors, where, v)
        if len(involved) == 1:  # summing one factor out needs no product
            vs, t = involved[0]
            out_vars = tuple(u for u in vs if u != v)
            table = _PRICED if price_only else t.sum(axis=vs.index(v))
        else:
            out_vars = theta.sort(scope)
            table = contract(involved, out_vars, price_only)
        factors[next_id] = (out_vars, table)
        for u in out_vars:
            where[u].add(next_id)
        next_id += 1
        remaining.discard(v)
        for u in out_vars:
            if u in remaining:
                heapq.heappush(heap, (cost(u)[0], rank[u], u))
    return contract(list(factors.values()), nodes, price_only)


def _elimination_factors(theta: Theta, anc: set[str], member: int,
                         tables: Mapping[str, np.ndarray] | None, fixed: Mapping[str, int],
                         price_only: bool) -> tuple[dict[int, tuple[tuple[str, ...], np.ndarray]],
                                                    dict[str, set[int]]]:
    """:func:`_eliminate`'s factors (each CPD of ``anc``, sliced at ``fixed``) and, per
    variable, the factors holding it."""
    cpds = theta.members[member]
    factors: dict[int, tuple[tuple[str, ...], np.ndarray]] = {}
    where: dict[str, set[int]] = {v: set() for v in anc if v not in fixed}
    for k, v in enumerate(sorted(anc, key=theta.index.__getitem__)):
        family = (v, *theta.parents[v])
        table = cpds[v].table if tables is None else tables[v]
        if fixed and not price_only and any(u in fixed for u in family):
            table = table[tuple(fixed.get(u, slice(None)) for u in family)]
        family = tuple(u for u in family if u not in fixed)
        factors[k] = (family, table)
        for u in family:
            where[u].add(k)
    return factors, where


def _check_step(size: int, max_table: int, scope: set[str]) -> None:
    """Refuse a step above ``max_table``; the exception carries its variables (``scope``)."""
    if size > max_table:
        refused = InfluenceTooExpensive(
            too_large("a factor of the exact elimination", size, max_table))
        refused.scope = frozenset(scope)  # type: ignore[attr-defined]
        raise refused


def _take_factors(factors: dict[int, tuple[tuple[str, ...], np.ndarray]],
                  where: dict[str, set[int]], v: str) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """Remove and return the factors holding ``v``, unregistering them from their variables."""
    ks = sorted(where.pop(v))
    involved = [factors.pop(k) for k in ks]
    for vs, _ in involved:
        for u in vs:
            if u != v:
                where[u].difference_update(ks)
    return involved


def _checked_contract(factors: Sequence[tuple[tuple[str, ...], np.ndarray]],
                      out_vars: Sequence[str], price_only: bool = False) -> np.ndarray:
    """:func:`_contract` by broadcast products and sums (numpy ufuncs, which report underflow
    to ``numpy.errstate``; einsum does not). Same values up to rounding, same table sizes.
    ``price_only`` is there for the same signature: pricing walks use :func:`_contract`."""
    every: list[str] = []
    for vs, _ in factors:
        every.extend(u for u in vs if u not in every)
    product: np.ndarray = np.ones(())
    for vs, t in factors:
        shape = [1] * len(every)
        for u, n in zip(vs, np.shape(t), strict=True):
            shape[every.index(u)] = n
        order = sorted(range(len(vs)), key=lambda k: every.index(vs[k]))
        product = product * np.transpose(np.asarray(t, dtype=np.float64), order).reshape(shape)
    gone = tuple(k for k, u in enumerate(every) if u not in set(out_vars))
    if gone:
        product = product.sum(axis=gone)
    kept = [u for u in every if u in set(out_vars)]
    return np.transpose(product, [kept.index(u) for u in out_vars])


#: Most joint states of the cutset :func:`_conditioned_joint` conditions on (each one
#: elimination), and most table entries its eliminations may build in all, by the Python order
#: (2**31: about 20 s of numpy on the 2-core test machine) or by the compiled kernel (2**34:
#: 20-35 s there, measured at 1.1-2 ns an entry on diabetes): beyond any the query is refused.
MAX_CUTSET_STATES = 256
MAX_CUTSET_WORK = 2**31
MAX_CUTSET_KERNEL_WORK = 2**34


class _Cutset(NamedTuple):
    """What :func:`_conditioned_joint` conditions on and how each term is computed."""

    fixed: tuple[str, ...]  #: the cutset's variables, in the order they were chosen
    kernel: bool  #: terms by the compiled kernel (else by the Python order, numpy ufuncs)
    work: float  #: table entries one term builds
    position: tuple[int, ...] | None = None  #: the kernel's first candidate order, per node
    deadline: float | None = None  #: ``time.monotonic()`` by which every term must end


def _cutset(theta: Theta, nodes: tuple[str, ...], member: int, max_table: int,
            deadline: float | None = None) -> _Cutset | None:
    """The least cutset :func:`_conditioned_joint` finds for a query no order fits, priced
    symbolically (no arithmetic); None beyond :data:`MAX_CUTSET_STATES`.

    Grown greedily by the variable of least cardinality in the Python order's refused step
    (never a queried one); after each variable the compiled kernel prices its own orders of
    the conditioned network (:func:`_conditioned_network`), and the first that fits ends the
    search. When the Python order fits first, the kernel is given that order as its first
    candidate, so the terms still run in C (about ten times faster per entry than numpy, and
    watched for underflow by the IEEE flag) whenever the kernel is built. Every pricing sees
    ``deadline`` (:class:`InfluenceTooExpensive` once it passed).
    """
    anc = theta.ancestral_set(nodes)
    card = theta.cardinality
    where = [theta.index[v] for v in nodes]
    fixed: dict[str, int] = {}
    while True:
        _check_deadline_now(deadline, "the search for a cutset")
        if fixed and _KERNEL is not None:
            cost = _price(_conditioned_network(theta, member, fixed), where, max_table,
                          deadline)
            if cost is not None:
                return _Cutset(tuple(fixed), True, cost)
        sizes: list[int] = []
        order: list[str] = []
        try:
            _eliminate(theta, nodes, anc, member, max_table, price_only=True, fixed=fixed,
                       sizes=sizes, order=order, deadline=deadline)
        except InfluenceTooExpensive as exc:
            _check_deadline_now(deadline, "the search for a cutset")
            scope = [u for u in getattr(exc, "scope", ()) if u not in nodes and u not in fixed]
            if not scope:
                return None
            # the least cardinality: fewest extra eliminations per variable conditioned on (on
            # diabetes' hardest query it finds 30 states where the largest-first rule needs
            # 6,336: small shared variables tend to sit in many of the large steps)
            pick = min(scope, key=lambda u: (card[u], theta.index[u]))
            if math.prod(card[u] for u in (*fixed, pick)) > MAX_CUTSET_STATES:
                return None
            fixed[pick] = 0
            continue
        if not fixed:
            return None
        if _KERNEL is not None:
            # a permutation of the nodes: the eliminated ones in the Python order, then the rest
            rank = {v: k for k, v in enumerate(order)}
            for v in theta.nodes:
                rank.setdefault(v, len(rank))
            position = tuple(rank[v] for v in theta.nodes)
            cost = _price(_conditioned_network(theta, member, fixed, position), where,
                          max_table, deadline)
            if cost is not None:
                return _Cutset(tuple(fixed), True, cost, position)
        return _Cutset(tuple(fixed), False, float(sum(sizes)))


def _price(network: Any, where: list[int], max_table: int,
           deadline: float | None) -> float | None:
    """``network.price`` of the query ``where`` within the time left before ``deadline``
    (:class:`InfluenceTooExpensive` when it passed during the pricing)."""
    if deadline is None:
        cost: float | None = network.price(where, max_table)
        return cost
    cost = network.price(where, max_table, 0, _budget(deadline))
    if cost is not None and cost < 0:
        raise _late(deadline, "the pricing of an elimination order")
    return cost


def _conditioned_network(theta: Theta, member: int, fixed: Mapping[str, int],
                         position: Sequence[int] | None = None) -> Any:
    """The compiled kernel's network of ``member`` with each variable of ``fixed`` held at its
    value: it keeps one state (cardinality 1) and every CPD holding it is sliced there, so any
    joint the network computes is ``P(phi_nodes, fixed)``. No folded CPDs (a fold would sum
    a fixed variable out). ``position``: the kernel's first candidate order (default: the
    topological order)."""
    cards = list(cardinalities(theta))
    for u in fixed:
        cards[theta.index[u]] = 1
    cpds = theta.members[member]
    base = []
    for v, (name, ups) in enumerate(zip(theta.nodes, parent_indices(theta), strict=True)):
        family = (name, *theta.parents[name])
        table = cpds[name].table
        if any(u in fixed for u in family):
            table = table[tuple(slice(fixed[u], fixed[u] + 1) if u in fixed else slice(None)
                                for u in family)]
        base.append(((v, *ups), np.ascontiguousarray(table, dtype=np.float64), ups))
    return _KERNEL.Network(cards, range(len(theta.nodes)) if position is None else position,
                           base, [None] * len(theta.nodes))


def _conditioned_term(theta: Theta, nodes: tuple[str, ...], member: int, max_table: int,
                      fixed: Mapping[str, int], cutset: _Cutset) -> np.ndarray | None:
    """One term ``P(phi_nodes, fixed)`` of :func:`_conditioned_joint`; None where an operation
    underflowed (the kernel's IEEE flag, or ``numpy.errstate`` on the Python order); raises
    :class:`InfluenceTooExpensive` when the cutset's deadline passes during the term."""
    deadline = cutset.deadline
    if cutset.kernel:
        out = np.empty([theta.cardinality[v] for v in nodes])
        code = _conditioned_network(theta, member, fixed, cutset.position).joint(
            [theta.index[v] for v in nodes], out, max_table, 0, _budget(deadline))
        if code == _KERNEL_LATE:
            raise _late(deadline, "a conditioned elimination")
        # the same scopes as priced, so an order fits; anything but a clean joint is refused
        return out if code == _KERNEL_OK else None
    try:
        with np.errstate(under="raise", over="raise", invalid="raise"):
            return _eliminate(theta, nodes, theta.ancestral_set(nodes), member, max_table,
                              fixed=fixed, checked=True, deadline=deadline)
    except FloatingPointError:
        return None


def _conditioned_joint(theta: Theta, nodes: tuple[str, ...], member: int, max_table: int,
                       deadline: float | None = None) -> tuple[np.ndarray, int] | None:
    """``P(phi_nodes)`` for a query no elimination order fits ``max_table``: conditioning on
    a cutset (Pearl 1986) trades memory for time, ``P(nodes) = sum over states c of the
    cutset C of P(nodes, C = c)``, each term an elimination with ``C`` fixed.

    The cutset (:func:`_cutset`) has at most :data:`MAX_CUTSET_STATES` states, and its terms
    build at most :data:`MAX_CUTSET_WORK` (:data:`MAX_CUTSET_KERNEL_WORK`) table entries in
    all, both priced before any arithmetic. Every term is checked for underflow (the compiled
    kernel's IEEE flag, or numpy's ufuncs under ``numpy.errstate(under="raise")`` with
    subnormals kept), so float64 is trusted at any magnitude; the sum of non-negative terms
    cannot underflow. Returns the
    joint and the number of terms summed (for the rounding bound), or None when no such
    cutset fits or an operation underflowed.

    Raises
    ------
    InfluenceTooExpensive
        When ``deadline`` (``time.monotonic()``) passes: while the cutset is searched (each
    pricing sees it), between two terms or during one.
    """
    cutset = _cutset(theta, nodes, member, max_table, deadline)
    if cutset is None or not (cutset.kernel or subnormals_kept()):
        return None
    cutset = cutset._replace(deadline=deadline)
    card = theta.cardinality
    n_terms = math.prod(card[u] for u in cutset.fixed)
    if cutset.work * n_terms > (MAX_CUTSET_KERNEL_WORK if cutset.kernel else MAX_CUTSET_WORK):
        return None
    total: np.ndarray | None = None
    for done, states in enumerate(np.ndindex(*(card[u] for u in cutset.fixed))):
        if deadline is not None and time.monotonic() > deadline:
            raise InfluenceTooExpensive(
                f"the time limit passed after {done} of {n_terms} conditioned eliminations")
        term = _conditioned_term(theta, nodes, member, max_table,
                                 dict(zip(cutset.fixed, states, strict=True)), cutset)
        if term is None:
            return None
        total = term if total is None else total + term
    assert total is not None
    return total, n_terms


def subnormals_kept() -> bool:
    """Whether numpy's arithmetic here keeps subnormal numbers (no flush-to-zero, no
    denormals-are-zero): the underflow flag then marks every result that lost precision."""
    with np.errstate(all="ignore"):
        tiny = np.array([2.0**-1070])
        kept_in = (tiny * 4.0)[0] == 2.0**-1068  # denormals-are-zero reads tiny as 0
        kept_out = (np.array([2.0**-1000]) * np.array([2.0**-30]))[0] == 2.0**-1030
    return bool(kept_in and kept_out)


def _eliminate_if_it_fits(theta: Theta, nodes: tuple[str, ...], member: int,
                          max_table: int) -> np.ndarray:
    """:func:`_eliminate`, its greedy order priced on the scopes first.

    Used where its arithmetic is slow (exact rational tables; :func:`_python_float_joint` does
    the same for float64 after the kernel found no order): a query too large is refused at once
    instead of after the arithmetic of every step up to the one too large (seconds on dense
    networks). Same order, same refusals, same values.
    """
    anc = theta.ancestral_set(nodes)
    _eliminate(theta, nodes, anc, member, max_table, price_only=True)
    return _eliminate(theta, nodes, anc, member, max_table)


#: What :func:`_eliminate` and :func:`_contract` give in place of a table when pricing only.
_PRICED = np.empty(0)


def _contract(
    factors: Sequence[tuple[tuple[str, ...], np.ndarray]], out_vars: Sequence[str],
    price_only: bool = False,
) -> np.ndarray:
    """Multiply ``factors`` and sum out every variable not in ``out_vars`` (one einsum).

    ``price_only``: only the checks (an empty array when the product could be taken).
    """
    names: dict[str, str] = {}
    for vs, _ in factors:
        for v in vs:
            if v not in names:
                if len(names) >= len(_LETTERS):
                    raise InfluenceTooExpensive("an elimination step involves over 52 variables")
                names[v] = _LETTERS[len(names)]
    for v in out_vars:
        if v not in names:  # cannot happen for a well-formed ancestral set
            raise AssertionError(f"output variable {v!r} appears in no factor")
    if price_only:
        return _PRICED
    spec = ",".join("".join(names[v] for v in vs) for vs, _ in factors)
    spec += "->" + "".join(names[v] for v in out_vars)
    if not factors:
        return np.ones(())
    return np.einsum(spec, *(t for _, t in factors), optimize=len(factors) > 2)


#: Joint tables up to this many entries take the pure-Python path of Definition 8 (a dozen
#: numpy calls on a tiny array cost more than the loop).
SMALL_JOINT = 32


def _influence_from_joint(joint: np.ndarray) -> tuple[float, int, int]:
    """``max_q log max_a P(q|a) / min_b P(q|b)`` from ``joint[a, q...]``, and the argmax pair."""
    if _KERNEL is not None and joint.dtype == np.float64:
        return _KERNEL.definition8(np.ascontiguousarray(joint), joint.shape[0])
    if joint.size <= SMALL_JOINT:
        return _influence_small(joint.reshape(joint.shape[0], -1).tolist())
    j = joint.reshape(joint.shape[0], -1)
    p_i = j.sum(axis=1)
    positive = p_i > 0
    if positive.all():
        valid = None
        cond = j / p_i[:, None]
    else:
        valid = np.flatnonzero(positive)
        cond = j[valid] / p_i[valid, None]
    hi = cond.max(axis=0)
    lo = cond.min(axis=0)
    if not lo.all():  # some joint state impossible under some value of phi_i
        bad = np.flatnonzero((lo == 0) & (hi > 0))
        if bad.size:
            col = int(bad[0])
            value = math.inf
        else:
            possible = np.flatnonzero(hi > 0)
            if not possible.size:
                a = 0 if valid is None else int(valid[0])
                return 0.0, a, a
            ratio = _log_quotients(hi[possible], lo[possible])
            col = int(possible[ratio.argmax()])
            value = float(ratio.max())
    else:
        ratio = _log_quotients(hi, lo)
        col = int(ratio.argmax())
        value = float(ratio[col])
    a, b = int(cond[:, col].argmax()), int(cond[:, col].argmin())
    if valid is not None:
        a, b = int(valid[a]), int(valid[b])
    return max(value, 0.0), a, b


def _log_quotients(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``log(hi / lo)`` per column (``log hi - log lo`` where ``lo`` is subnormal), as the
    kernel's Definition 8 computes its terms; ``0 < lo <= hi``."""
    normal = lo >= sys.float_info.min
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(normal, np.log(hi / np.where(normal, lo, 1.0)),
                        np.log(hi) - np.log(lo))


def _influence_small(rows: list[list[float]]) -> tuple[float, int, int]:
    """:func:`_influence_from_joint` on a small table given as rows (same result, no numpy)."""
    cond = []
    for a, r in enumerate(rows):
        total = sum(r)
        if total > 0:
            cond.append((a, [x / total for x in r]))
    best, best_pair, top = -1.0, (cond[0][0], cond[0][0]), 0.0
    for col in range(len(rows[0])):
        hi_a, hi = lo_a, lo = cond[0][0], cond[0][1][col]
        for a, c in cond:
            x = c[col]
            if x > hi:
                hi_a, hi = a, x
            elif x < lo:
                lo_a, lo = a, x
        if hi <= 0:
            continue
        if lo == 0:
            return math.inf, hi_a, lo_a
        if lo >= sys.float_info.min:  # the kernel's terms and its skipping of ties
            ratio = hi / lo
            if ratio <= top:
                continue
            top = ratio
            value = math.log(ratio)
        else:
            value = math.log(hi) - math.log(lo)
        if value > best:
            best, best_pair = value, (hi_a, lo_a)
    return max(best, 0.0), best_pair[0], best_pair[1]


def max_influence(
    theta: Theta,
    node: str,
    quilt: Iterable[str],
    *,
    max_table: int | None = None,
    inference: InferenceMethod = "auto",
    deadline: float | None = None,
    max_memory: int | str | None = None,
) -> Influence:
    """Exact max-influence ``e_Theta(Q | node)`` (Definition 8), rounded upwards.

    Parameters
    ----------
    theta : Theta
        The hyperparameter network(s).
    node : str
        The sensitive attribute ``i``.
    quilt : iterable of str
        The quilt ``Q`` (must not contain ``node``).
    max_table : int, optional
        Largest table (entries) the exact computation may build; by default as many as
        ``max_memory`` holds, and never more when both are given.
    inference : {"auto", "junction_tree", "elimination"}
        How the joint of ``(phi_i, phi_Q)`` is computed (:func:`joint_marginal`); all exact.
    deadline : float, optional
        A ``time.monotonic()`` value: a query that needs conditioning on a cutset (seconds of
        work) stops between two of its eliminations once it has passed.
    max_memory : int or str, optional
        The memory budget in bytes or as a size (``"4G"``); default
        :data:`quiltpriv.utils.memory.DEFAULT_MAX_MEMORY`, half the machine's memory.

    Returns
    -------
    Influence
        ``value`` is ``+inf`` when a joint state of ``Q`` is possible under one value of
        ``phi_i`` and impossible under another; ``0`` for ``Q = {}``.

    Raises
    ------
    InfluenceTooExpensive
        When the exact computation would exceed ``max_table``, or ``deadline`` passed during
        it (callers fall back to a bound or drop the candidate; they never guess). The
        message names the memory needed and the budget.
    """
    max_table = table_limit(max_table, max_memory)
    theta = check_theta(theta)
    check_inference(inference)
    deadline = _check_deadline(deadline)
    node = theta.check_node(node, "sensitive attribute")
    q = theta.sort(theta.check_nodes(quilt, "quilt node"))
    if node in q:
        raise ParameterError(f"a quilt of {node!r} cannot contain {node!r} itself")
    if not q:
        return Influence(node, q, 0.0, None, None)
    best: tuple[float, int, Any, str] = (-1.0, 0, None, FLOAT64)
    cache = InferenceCache.of(theta)
    for m in range(len(theta.members)):
        key = (m, node, q, inference)
        hit = cache.influence.get(key)
        if hit is None:
            hit = _member_influence(theta, node, q, m, max_table, inference, deadline)
            cache.influence[key] = hit
        if hit[0] > best[0]:
            best = (hit[0], m, hit[1], hit[2])
    arithmetic = EXACT if any(
        (cache.influence.get((m, node, q, inference)) or (0, 0, FLOAT64))[2] == EXACT
        for m in range(len(theta.members))) else FLOAT64
    return Influence(node, q, best[0], best[1], best[2], arithmetic=arithmetic)


def _check_deadline(deadline: object) -> float | None:
    """A ``time.monotonic()`` deadline (any finite float: one already past stops at once)."""
    return None if deadline is None else check_scalar(deadline, "deadline")


def _member_influence(theta: Theta, node: str, q: tuple[str, ...], m: int, max_table: int,
                      inference: InferenceMethod, deadline: float | None = None,
                      ) -> tuple[float, tuple[Any, Any], str]:
    """Definition 8 under member ``m``, rounded upwards: ``(value, (a, b), arithmetic)``."""
    nodes = (node, *q)
    _check_output_size(theta, nodes, max_table)
    found = _float_influence(theta, nodes, m, max_table, inference, deadline)
    if found is None:
        # Exact rational tables, or float64 underflowed (or could have).
        if is_floating(theta, m):
            joint, _ = _exact_joint(theta, nodes, m, max_table)
        else:
            joint = _eliminate_if_it_fits(theta, nodes, m, max_table)
        value, a, b = _influence_exact(joint)
        arithmetic, bound = EXACT, 0.0
    else:
        value, a, b, terms = found
        arithmetic = FLOAT64
        # the network's size bounds the ancestral set's (no per-query walk on the fast path);
        # a conditioned joint sums `terms` eliminations: that many more roundings per entry
        bound = _rounding_bound(theta, math.prod(theta.cardinality[v] for v in nodes) + terms,
                                inference)
    if math.isfinite(value):
        # Raised even from 0: float64 equality is not exact equality, and a model's columns
        # sum to one only up to rounding, so "independent" holds only up to the margin too.
        value = value * (1 + ROUNDING_MARGIN) + max(ROUNDING_MARGIN, bound)
    states = theta.states[node]
    return value, (states[a], states[b]), arithmetic


def _float_influence(theta: Theta, nodes: tuple[str, ...], m: int, max_table: int,
                     inference: InferenceMethod, deadline: float | None = None,
                     ) -> tuple[float, int, int, int] | None:
    """Definition 8 of ``P(phi_nodes)`` in float64, unrounded, and the number of conditioned
    terms summed into the joint (0 unless :func:`_conditioned_joint` was needed); or None
    where float64 is not trusted: the member's tables are exact rationals, or an operation
    underflowed, or could.

    The compiled kernel reports whether any of its operations underflowed (the IEEE flag), so
    its result is trusted whenever none did; the pure-Python paths, which cannot read the flag,
    are trusted only where no intermediate can underflow (:func:`_float_safe`).
    """
    if not is_floating(theta, m):
        return None
    try:
        return _unconditioned_influence(theta, nodes, m, max_table, inference, deadline)
    except InfluenceTooExpensive:
        if inference != "auto":
            raise
        _check_deadline_now(deadline, "an elimination")
        conditioned = _conditioned_joint(theta, nodes, m, max_table, deadline)
        if conditioned is None:
            raise
    joint, terms = conditioned
    value, a, b = _influence_from_joint(np.ascontiguousarray(joint))
    return value, a, b, terms


def _unconditioned_influence(theta: Theta, nodes: tuple[str, ...], m: int, max_table: int,
                             inference: InferenceMethod, deadline: float | None = None,
                             ) -> tuple[float, int, int, int] | None:
    """:func:`_float_influence` by one elimination (or the junction tree), no conditioning."""
    where = [theta.index[v] for v in nodes]
    if _KERNEL is not None and inference == "auto":
        # joint and Definition 8 in one call; None: no order the kernel prices fits max_table
        found = _kernel_call(theta, m, "influence", where, max_table, deadline=deadline)
        if found == _KERNEL_LATE:
            raise _late(deadline, "an elimination")
        if found is not None:
            value, a, b, underflow = found
            if not underflow or _float_safe_for(theta, m, nodes, inference):
                return value, a, b, 0
            return None
        joint = _python_float_joint(theta, nodes, m, max_table, deadline)
        return None if joint is None else (*_influence_from_joint(joint), 0)
    if not _float_safe_for(theta, m, nodes, inference):
        return None
    return (*_influence_from_joint(_joint(theta, nodes, where, m, max_table, inference,
                                          deadline)), 0)


def _python_float_joint(theta: Theta, nodes: tuple[str, ...], member: int,
                        max_table: int, deadline: float | None = None) -> np.ndarray | None:
    """``P(phi_nodes)`` by the Python order, for a query no order of the kernel fits; None where
    float64 is not provably free of underflow (the caller then computes exactly).

    The order is priced first, so that a query too large is refused at once, naming its
    float64 limit (the exact path's smaller limit would refuse it too, less tellingly).
    """
    anc = theta.ancestral_set(nodes)
    _eliminate(theta, nodes, anc, member, max_table, price_only=True, deadline=deadline)
    if not (_float_safe(theta, member, theta.nodes) or _float_safe(theta, member, anc)):
        return None
    return _eliminate(theta, nodes, anc, member, max_table, deadline=deadline)


def _float_safe_for(theta: Theta, member: int, nodes: tuple[str, ...],
                    inference: InferenceMethod) -> bool:
    """Whether no float64 intermediate of the query over ``nodes`` can underflow.

    The whole member's bound (cached) settles most models at once; only a model with tiny
    probabilities needs the query's own ancestral set (the junction tree touches every CPD).
    """
    if _float_safe(theta, member, theta.nodes):
        return True
    return inference != "junction_tree" and _float_safe(
        theta, member, theta.ancestral_set(nodes))


def _log2_floors(theta: Theta, member: int) -> tuple[int, ...]:
    """Per node (index), an integer ``k`` with ``2**k <=`` its CPD's least positive entry.

    ``frexp`` gives ``x = f * 2**e`` with ``f`` in ``[0.5, 1)``, so ``e - 1`` is exact and
    never above ``log2(x)``, subnormal ``x`` included. Cached per member.
    """
    hit = InferenceCache.of(theta).log2_floors.get(member)
    if hit is None:
        out = []
        for v in theta.nodes:
            t = np.asarray(theta.members[member][v].table, dtype=np.float64)
            positive = t[t > 0]
            out.append(math.frexp(float(positive.min()))[1] - 1 if positive.size else 0)
        hit = InferenceCache.of(theta).log2_floors[member] = tuple(out)
    return hit


def _float_safe(theta: Theta, member: int, scope: Iterable[str]) -> bool:
    """Whether no float64 intermediate over the CPDs of ``scope`` can leave the normal range.

    Every intermediate is a sum of products (or, in the junction tree, a ratio of sums) of
    entries of those CPDs, all at most one, so none is below the product of their least positive
    entries; its exponent is summed exactly. The whole network's answer is cached.
    """
    floors = _log2_floors(theta, member)
    if scope is theta.nodes:
        safe = InferenceCache.of(theta).float_safe
        hit = safe.get(member)
        if hit is None:
            hit = safe[member] = sum(floors) >= SAFE_LOG2_FLOOR
        return hit
    index = theta.index
    return sum(floors[index[v]] for v in scope) >= SAFE_LOG2_FLOOR


def _rounding_bound(theta: Theta, out_size: int, inference: InferenceMethod) -> float:
    """Upper bound on ``|computed - exact|`` of a float64 Definition 8 (see the module text).

    ``K`` bounds the number of roundings on any path from a CPD entry to a joint entry: each
    elimination step multiplies its factors (at most two per eliminated variable, summed over
    the network's ``n`` nodes: ``2 n``) and sums at most ``max(MERGE_LIMIT, largest
    cardinality)`` terms; the
    row totals of Definition 8 sum at most ``out_size`` entries; the junction tree's Hugin
    passes touch each of its tables a bounded number of times (``_junction_tree_depth``).
    """
    depths = InferenceCache.of(theta).rounding_depth
    depth = depths.get(inference)
    if depth is None:  # the network's size bounds any ancestral set's
        depth = (_junction_tree_depth(theta, tree_structure(theta))
                 if inference == "junction_tree" else _elimination_depth(theta))
        depths[inference] = depth
    return _rounding_bound_k(depth + out_size)


def _elimination_depth(theta: Theta) -> int:
    """``K`` of variable elimination over any ancestral set of ``theta`` (module text)."""
    c_max = max(theta.cardinality.values())
    return len(theta.nodes) * (max(MERGE_LIMIT, c_max) + 2) + 16


def _junction_tree_depth(theta: Theta, structure: TreeStructure) -> int:
    """``K`` of a propagation over ``structure`` and a read of one clique.

    A path from a CPD entry to a result visits each clique at most twice (collect, then
    distribute). Per visit it sums at most the clique's entries, and multiplies at most once
    per CPD, evidence table and message entering the clique, with one division on the way
    down. Over all cliques that is at most twice the tables' entries plus four per clique
    (both below ``6 * size``), plus two per CPD and per attribute, which elimination's ``K``
    (:func:`_elimination_depth`, over 250 per node) covers; the two are added.
    """
    return _elimination_depth(theta) + 6 * structure.size + 16


def _rounding_bound_k(k: int) -> float:
    """Upper bound on ``|computed - exact|`` of a float64 log-ratio of two conditionals whose
    four entries were each computed with at most ``k`` roundings of non-negative numbers.

    Entries err by at most ``gamma_K``, a ratio of two conditionals (four entries) by ``4
    gamma_K``, and the two logs of values above ``2**-1000`` by ``2 * 745 u``.
    """
    if k * _U >= 0.25:
        return math.inf  # pragma: no cover - would need ~10**15 operations
    gamma = k * _U / (1 - k * _U)
    return 4 * gamma / (1 - 4 * gamma) + 1500 * _U


def _exact_tables(theta: Theta, member: int, nodes: Iterable[str]) -> dict[str, Any]:
    """Per node, its CPD as exact integers ``M`` and one exponent ``E``: ``table = M * 2**E``.

    Every float is ``f * 2**e`` with ``f * 2**53`` an integer (subnormals included), so the
    conversion is exact; cached per member and node.
    """
    cache = InferenceCache.of(theta).exact_tables.setdefault(member, {})
    out = {}
    for v in nodes:
        hit = cache.get(v)
        if hit is None:
            t = np.asarray(theta.members[member][v].table, dtype=np.float64)
            mant, expo = np.frexp(t)
            positive = t > 0
            base = int(expo[positive].min()) - 53 if positive.any() else 0
            ints = np.empty(t.shape, dtype=object)
            flat = ints.reshape(-1)
            for k, (f, e) in enumerate(zip(mant.reshape(-1).tolist(), expo.reshape(-1).tolist(),
                                           strict=True)):
                flat[k] = int(f * 2.0**53) << (e - 53 - base) if f > 0 else 0
            hit = cache[v] = (ints, base)
        out[v] = hit
    return out


def _exact_joint(theta: Theta, nodes: tuple[str, ...], member: int,
                 max_table: int) -> tuple[np.ndarray, int]:
    """``P(phi_nodes)`` exactly, as integers ``J`` and an exponent ``E``: ``P = J * 2**E``.

    Variable elimination on the integer tables of :func:`_exact_tables`; each CPD of the
    ancestral set is multiplied in exactly once, so the exponents add up. Intermediates are
    limited to :data:`EXACT_MAX_TABLE` entries (and ``max_table``).
    """
    anc = theta.ancestral_set(nodes)
    limit = min(max_table, EXACT_MAX_TABLE)
    # Price the order first: a query too large is refused before any big-integer arithmetic
    # (which took seconds to minutes a refusal on diabetes); the same order, same refusals.
    _eliminate(theta, nodes, anc, member, limit, price_only=True)
    exact = _exact_tables(theta, member, anc)
    tables = {v: t for v, (t, _) in exact.items()}
    joint = _eliminate(theta, nodes, anc, member, limit, tables)
    return np.asarray(joint, dtype=object), sum(e for _, e in exact.values())


def _ints_to_float(ints: np.ndarray, exponent: int) -> np.ndarray:
    """``ints * 2**exponent`` as float64, each entry correctly rounded (tiny ones to 0)."""
    from fractions import Fraction

    scale = Fraction(2) ** exponent
    return np.array([float(Fraction(int(x)) * scale) for x in ints.reshape(-1)],
                    dtype=np.float64).reshape(ints.shape)


def _influence_exact(joint: np.ndarray) -> tuple[float, int, int]:
    """Definition 8 on an exact joint (Python ints or Fractions; axis 0 is ``phi_i``).

    Conditionals are compared exactly by cross-multiplication; only the final log of the
    largest ratio is rounded (by :func:`_log_ratio`, a few ulps).
    """
    from fractions import Fraction

    rows = [list(r) for r in np.asarray(joint, dtype=object).reshape(joint.shape[0], -1)]
    totals = [sum(r, 0) for r in rows]
    valid = [a for a, t in enumerate(totals) if t > 0]
    if not valid:
        raise QuiltPrivError("the sensitive attribute has no value of positive probability")
    best: Fraction | None = None
    best_pair = (valid[0], valid[0])
    for col in range(len(rows[0])):
        hi_a = lo_a = valid[0]
        for a in valid[1:]:  # P(q | a) = rows[a][col] / totals[a], compared exactly
            if rows[a][col] * totals[hi_a] > rows[hi_a][col] * totals[a]:
                hi_a = a
            if rows[a][col] * totals[lo_a] < rows[lo_a][col] * totals[a]:
                lo_a = a
        hi_num = rows[hi_a][col] * totals[lo_a]
        lo_num = rows[lo_a][col] * totals[hi_a]
        if hi_num <= 0:
            continue
        if lo_num == 0:
            return math.inf, hi_a, lo_a
        ratio = Fraction(hi_num) / Fraction(lo_num)
        if best is None or ratio > best:
            best, best_pair = ratio, (hi_a, lo_a)
    if best is None or best <= 1:
        return 0.0, best_pair[0], best_pair[1]
    return _log_ratio(best.numerator, best.denominator), best_pair[0], best_pair[1]


def _log_ratio(num: int, den: int) -> float:
    """``log(num / den)`` for positive integers of any size, to a few ulps.

    The quotient is scaled by a power of two into ``[0.5, 2]`` (Python's int true division is
    correctly rounded), so neither overflow nor underflow can occur.
    """
    shift = num.bit_length() - den.bit_length()
    r = num / (den << shift) if shift >= 0 else (num << -shift) / den
    return math.log(r) + shift * math.log(2.0)


def influence_upper_bound(
    theta: Theta,
    node: str,
    quilt: Iterable[str],
    *,
    max_table: int | None = None,
    inference: InferenceMethod = "auto",
    deadline: float | None = None,
    max_memory: int | str | None = None,
) -> Influence:
    """``e_Theta(Q | node)`` exactly if affordable, else a proven upper bound.

    The bound is the data-processing inequality: if ``S`` d-separates ``node``
    from ``Q - S`` then ``e(Q | node) <= e(S | node)``. ``S`` is the set of neighbours of
    ``node`` in the moral graph of the ancestral set of ``{node} + Q``; every other node of
    that graph, ``Q`` included, is separated from ``node`` by it, and separation in that graph
    implies d-separation. The result's ``bound_via`` names ``S``. ``max_table``,
    ``inference`` and ``deadline`` are those of :func:`max_influence`, for both computations.

    Raises
    ------
    InfluenceTooExpensive
        When neither the exact value nor the bound is affordable, or ``deadline`` passed (the
        caller must then not use the quilt: never a guess).
    """
    from quiltpriv.graph.quilts import moral_ancestral_graph

    theta = check_theta(theta)
    quilt = theta.check_nodes(quilt, "quilt node")
    try:
        return max_influence(theta, node, quilt, max_table=max_table, inference=inference,
                             deadline=deadline)
    except InfluenceTooExpensive as exc:
        if deadline is not None and time.monotonic() > deadline:
            raise
        q = theta.sort(quilt)
        adj = moral_ancestral_graph(theta, {node, *q})
        sep = theta.sort(adj[node])
        if set(sep) >= set(q):
            raise
        try:
            bound = max_influence(theta, node, sep, max_table=max_table, inference=inference,
                                  deadline=deadline)
        except InfluenceTooExpensive:
            raise InfluenceTooExpensive(
                f"{exc}; the data-processing bound via {list(sep)} is too expensive too"
            ) from None
        return Influence(node, q, bound.value, bound.member, bound.pair, bound_via=sep)


#: A factor of bucket elimination: its variables (node indices) and its table (one axis each).
_Factor = tuple[tuple[int, ...], np.ndarray]


class _FoldedFactor(NamedTuple):
    """A node's CPD with its private ancestors folded in (see ``_folded_factors``)."""

    private: frozenset[int]
    """The private ancestors summed out (usable only when none of them is queried)."""
    scope: tuple[int, ...]
    table: np.ndarray
    order: tuple[int, ...]
    """The elimination positions of ``scope``, ascending."""
    parents: tuple[int, ...]
    """The folded factor's variables other than the node (where the ancestral walk goes on)."""


class _Prepared(NamedTuple):
    """Everything bucket elimination reads about one member, computed once per Theta."""

    position: tuple[int, ...]
    """Per variable, its step in the global elimination order."""
    elimination_order: tuple[int, ...]
    scopes: tuple[tuple[int, ...], ...]
    """Per node, its CPD's variables in increasing index (the table's axis order)."""
    tables: tuple[np.ndarray, ...]
    by_position: tuple[tuple[int, ...], ...]
    """Per node, the elimination positions of its CPD's variables, ascending."""
    parents: tuple[tuple[int, ...], ...]
    cards: tuple[int, ...]
    folded: tuple[_FoldedFactor | None, ...]


class _Item(NamedTuple):
    """A factor of one query's ancestral set, with its variables' elimination positions."""

    scope: tuple[int, ...]
    table: np.ndarray
    order: tuple[int, ...]


@dataclass
class _Schedule:
    """Factors placed in buckets: bucket ``p`` eliminates the variable ``var_at[p]``."""

    buckets: dict[int, list[_Factor]]
    final: list[_Factor]
    """Factors over queried nodes only (multiplied together at the end)."""
    rank: Mapping[int, int] | Sequence[int]
    """Per variable, its bucket."""
    var_at: Sequence[int]
    end: int
    """The rank past every bucket (a factor with no variable left to eliminate)."""


class _Step(NamedTuple):
    """One elimination step: the factors multiplied and the variables summed out."""

    factors: list[_Factor]
    gone: set[int]
    scope: set[int]
    size: int
    """Entries of the product of ``factors``."""
    next: int
    """The bucket that receives the result (``end``: the final factors)."""


def _bucket_eliminate(theta: Theta, nodes: Sequence[int], member: int,
                      max_table: int, *, greedy: bool = False,
                      merge_limit: int | None = None,
                      deadline: float | None = None) -> np.ndarray | None:
    """Bucket elimination of the ancestral set of ``nodes`` (indices).

    By default the order is the global min-weight elimination order of the whole moral graph
    (:func:`quiltpriv.inference.junction_tree.tree_structure`) restricted to the ancestral set: the
    ancestral set's moral graph is a subgraph of the whole one, on which the restricted order
    creates no fill edge the global one does not, and it costs no per-query ordering work.
    The query's own nodes stay to the end, which can still enlarge tables; ``greedy=True``
    orders this query's factors by greedy min-weight instead. A node whose private ancestors
    are not queried enters already folded (``_folded_factors``). Each bucket is one
    product-and-sum. Returns ``None`` when a bucket would exceed ``max_table`` entries;
    raises :class:`InfluenceTooExpensive` once ``deadline`` passed (looked at every bucket).
    """
    prepared = InferenceCache.of(theta).prepared.get(member)
    if prepared is None:  # everything a query reads, in one cache entry
        prepared = InferenceCache.of(theta).prepared[member] = _prepare(theta, member)
    keep = set(nodes)
    if merge_limit is None:
        merge_limit = MERGE_LIMIT
    items, seen = _ancestral_items(prepared, nodes, keep)
    if greedy or len(items) >= GREEDY_FROM:
        schedule = _greedy_schedule(items, keep, prepared.cards)
    else:
        schedule = _global_schedule(items, keep, prepared)
    buckets, final = schedule.buckets, schedule.final
    # One einsum label per variable of the query (einsum takes at most 52), else per step.
    label = {u: k for k, u in enumerate(seen)} if len(seen) <= len(_LETTERS) else None
    heap = list(buckets)
    heapq.heapify(heap)
    while heap:
        step = _merged_step(schedule, heapq.heappop(heap), heap, keep, prepared.cards,
                            merge_limit)
        if step.size > max_table:
            return None
        _check_deadline_now(deadline, "an elimination")
        out, table = _product_sum_step(step, label)
        if step.next == schedule.end:
            final.append((out, table))
        elif step.next in buckets:
            buckets[step.next].append((out, table))
        else:
            buckets[step.next] = [(out, table)]
            heapq.heappush(heap, step.next)
    if label is None:
        return _einsum(final, sorted(keep), nodes)
    return _labelled_einsum(final, label, nodes)


def _prepare(theta: Theta, member: int) -> _Prepared:
    """The per-member data of :func:`_bucket_eliminate` (the caller caches it)."""
    structure = tree_structure(theta)
    pos = structure.position
    folded = tuple(None if f is None else
                   _FoldedFactor(f[0], f[1], f[2], tuple(sorted(pos[w] for w in f[1])), f[3])
                   for f in _folded_factors(theta, member))
    scopes, tables = sorted_tables(theta, member)
    return _Prepared(pos, structure.elimination_order, scopes, tables,
                     _scopes_by_position(theta), parent_indices(theta), cardinalities(theta),
                     folded)


def _ancestral_items(prepared: _Prepared, nodes: Sequence[int],
                     keep: set[int]) -> tuple[list[_Item], set[int]]:
    """The factors of the ancestral set of ``nodes``, and the set of its variables.

    A node enters with its private ancestors folded in when none of them is queried.
    """
    items: list[_Item] = []
    seen: set[int] = set()
    stack = list(nodes)
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        f = prepared.folded[v]
        if f is not None and keep.isdisjoint(f.private):
            scope, table, order, ups = f.scope, f.table, f.order, f.parents
        else:
            scope, table = prepared.scopes[v], prepared.tables[v]
            order, ups = prepared.by_position[v], prepared.parents[v]
        stack.extend(ups)
        items.append(_Item(scope, table, order))
    return items, seen


def _greedy_schedule(items: Sequence[_Item], keep: set[int],
                     cards: Sequence[int]) -> _Schedule:
    """Buckets in this query's own greedy min-weight order."""
    buckets: dict[int, list[_Factor]] = {}
    final: list[_Factor] = []
    rank, var_at = _greedy_rank(items, keep, cards)
    n = len(var_at)
    for scope, table, _ in items:  # each factor goes to the bucket of its first variable
        first = min((rank[u] for u in scope if u not in keep), default=n)
        (final if first == n else buckets.setdefault(first, [])).append((scope, table))
    return _Schedule(buckets, final, rank, var_at, n)


def _global_schedule(items: Sequence[_Item], keep: set[int], prepared: _Prepared) -> _Schedule:
    """Buckets in the global elimination order restricted to the query's ancestral set."""
    buckets: dict[int, list[_Factor]] = {}
    final: list[_Factor] = []
    rank, var_at = prepared.position, prepared.elimination_order
    for scope, table, order in items:
        for p in order:
            if var_at[p] not in keep:
                buckets.setdefault(p, []).append((scope, table))
                break
        else:
            final.append((scope, table))
    return _Schedule(buckets, final, rank, var_at, len(rank))


def _next_bucket(scope: set[int], keep: set[int], gone: set[int], schedule: _Schedule) -> int:
    """The first bucket of a product over ``scope`` once ``gone`` is summed out."""
    rank = schedule.rank
    first = schedule.end
    for u in scope:
        if u not in keep and u not in gone and rank[u] < first:
            first = rank[u]
    return first


def _merged_step(schedule: _Schedule, p: int, heap: list[int], keep: set[int],
                 cards: Sequence[int], merge_limit: int) -> _Step:
    """Bucket ``p`` (removed from the schedule), chained with the buckets it feeds.

    Chain merging: when this step's result would go straight into the next bucket, eliminate
    both in one einsum (same output, one call and one placement fewer), while the product
    stays small. Merged buckets are popped from ``heap``.
    """
    buckets, var_at = schedule.buckets, schedule.var_at
    factors = buckets.pop(p)
    gone = {var_at[p]}
    scope_set: set[int] = set()
    size = 1
    for vs, _ in factors:
        scope_set.update(vs)
    for u in scope_set:
        size *= cards[u]
    first = _next_bucket(scope_set, keep, gone, schedule)
    while heap and heap[0] == first:
        extra: set[int] = set()
        for vs, _ in buckets[first]:
            extra.update(vs)
        extra -= scope_set
        grown = size
        for u in extra:
            grown *= cards[u]
        if grown > merge_limit:
            break
        heapq.heappop(heap)
        factors = factors + buckets.pop(first)
        gone.add(var_at[first])
        scope_set |= extra
        size = grown
        first = _next_bucket(scope_set, keep, gone, schedule)
    return _Step(factors, gone, scope_set, size, first)


def _product_sum_step(step: _Step, label: dict[int, int] | None) -> _Factor:
    """Multiply a step's factors and sum out its eliminated variables."""
    factors, gone = step.factors, step.gone
    if len(factors) == 1:
        vs, t = factors[0]
        (v,) = gone
        return tuple(u for u in vs if u != v), t.sum(axis=vs.index(v))
    scope = tuple(step.scope)  # any fixed axis order will do
    out = tuple(u for u in scope if u not in gone)
    if label is None:
        return out, _einsum(factors, scope, out)
    return out, _labelled_einsum(factors, label, out)


def _labelled_einsum(factors: Sequence[_Factor], label: dict[int, int],
                     out: Sequence[int]) -> np.ndarray:
    """Multiply ``factors`` and keep ``out``, with one fixed einsum label per variable."""
    operands: list[object] = []
    for vs, t in factors:
        operands.append(t)
        operands.append([label[u] for u in vs])
    return _c_einsum(*operands, [label[u] for u in out])


def _kernel_network(theta: Theta, member: int, folded: bool = True) -> Any:
    """The compiled kernel's copy of one member (cached): the tables it reads and an order.

    The kernel holds the arrays' buffers (no copy): each CPD with axes ``(v, *parents)``, and
    (``folded``) the folded CPDs of :func:`_folded_factors`; plus the cardinalities and, as its
    first candidate order, the network's topological order (ancestors first: marginals passed
    downwards, which suits ancestral sets). The kernel prices greedy orders of each query's
    own; the global min-weight order of the Python path won no more often than this one on
    the bundled networks and costs 11 ms to compute on munin, so the kernel does without it.
    """
    cache = InferenceCache.of(theta)
    nets = cache.kernel if folded else cache.kernel_unfolded
    net = nets.get(member)
    if net is None:
        parents = parent_indices(theta)
        cpds = theta.members[member]
        base = [((v, *ups), np.ascontiguousarray(cpds[name].table, dtype=np.float64), ups)
                for v, (name, ups) in enumerate(zip(theta.nodes, parents, strict=True))]
        folds = _folded_factors(theta, member) if folded else (None,) * len(theta.nodes)
        net = nets[member] = _KERNEL.Network(
            cardinalities(theta), range(len(theta.nodes)), base,
            [None if f is None else
             (tuple(f[0]), f[1], np.ascontiguousarray(f[2], dtype=np.float64), f[3])
             for f in folds])
    return net


def _kernel_call(theta: Theta, member: int, method: str, *args: Any,
                 deadline: float | None = None) -> Any:
    """``Network.joint`` or ``Network.influence`` of the member's kernel network; where no
    order fits, again without folded CPDs.

    A fold is an elimination step fixed in advance (a private parent summed into its child),
    and the larger scope it leaves can keep every order of a query above ``max_table`` where
    the unfolded CPDs have one: measured on diabetes, ``e({meal_2, cho_bal_8, renal_cl_11,
    ins_indep_util_13, cho_bal_15} | ins_dep_5)`` fits no folded order and takes 0.4 s
    unfolded. The second pricing costs milliseconds, and only queries the first refused.
    With ``deadline``, each call gets the time left (:func:`_budget`) and may return
    :data:`_KERNEL_LATE`.
    """
    if deadline is not None:
        args = (*args, 0, _budget(deadline))  # mode 0 (the cheapest order), the budget
    found = getattr(_kernel_network(theta, member), method)(*args)
    if (found is None or found == _KERNEL_NO_FIT) and any(
            f is not None for f in _folded_factors(theta, member)):
        if deadline is not None:
            args = (*args[:-1], _budget(deadline))
        found = getattr(_kernel_network(theta, member, folded=False), method)(*args)
    return found


def _greedy_rank(items: Sequence[tuple[tuple[int, ...], Any, Any]], keep: set[int],
                 cards: Sequence[int]) -> tuple[dict[int, int], list[int]]:
    """Greedy min-weight elimination order of one query's factors (symbolic, no tables).

    The weight of a variable is the size of the table its elimination builds (its own and its
    current neighbours' cardinalities); the query's nodes are never eliminated. Ties go to
    the lower node index, so the order is deterministic.
    """
    adj: dict[int, set[int]] = {}
    for scope, _, _ in items:
        for u in scope:
            adj.setdefault(u, set()).update(scope)
    for u, nb in adj.items():
        nb.discard(u)

    def weight(v: int) -> int:
        w = cards[v]
        for u in adj[v]:
            w *= cards[u]
        return w

    # Only the neighbours of an eliminated variable change weight, so the current weight is
    # kept per variable and a popped heap entry is stale exactly when it differs.
    current = {v: weight(v) for v in adj if v not in keep}
    heap = [(w, v) for v, w in current.items()]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        w, v = heapq.heappop(heap)
        if current.get(v) != w:
            continue
        del current[v]
        order.append(v)
        nb = adj.pop(v)
        for u in nb:
            au = adj[u]
            au.discard(v)
            au.update(nb)
            au.discard(u)
        for u in nb:
            if u not in keep:
                w = current[u] = weight(u)
                heapq.heappush(heap, (w, u))
    return {v: r for r, v in enumerate(order)}, order


def _folded_factors(theta: Theta, member: int) -> tuple[Any, ...]:
    """Per node ``c``, its CPD with its *private* ancestors summed out, or ``None``.

    A parent ``u`` whose only child is ``c`` reaches any query only through ``c`` (or is queried
    itself), so whenever no private ancestor is queried, ``sum_u P(u | pa u) P(c | pa c)``
    replaces both CPDs: it is the elimination of ``u``, done once per Theta instead of per query.
    Applied recursively (``u``'s own private parents first) while the folded table stays within
    :data:`FOLD_LIMIT` entries. Entries: ``(private, scope, table, parents)``.

    The folds run in numpy, which cannot report an underflow, and the kernel's underflow check
    starts after them; so a fold is made only where none of its intermediates can underflow:
    the product of the least positive entries of the CPDs it multiplies is at least
    ``2**SAFE_LOG2_FLOOR`` (see :func:`_float_safe`). Where it is not, the query eliminates the
    parent itself, under the kernel's check (or the Python path's own bound).
    """
    hit = InferenceCache.of(theta).folded.get(member)
    if hit is not None:
        return hit
    scopes, tables = sorted_tables(theta, member)
    parents = parent_indices(theta)
    cards = cardinalities(theta)
    floors = _log2_floors(theta, member) if is_floating(theta, member) else None
    single = [len(theta.children[v]) == 1 for v in theta.nodes]
    out: list[Any] = [None] * len(theta.nodes)
    # per node, the summed log2 floors of the CPDs its table (folded or not) multiplies
    depth = list(floors) if floors is not None else [0] * len(theta.nodes)
    for c in range(len(theta.nodes)):  # topological: a parent's fold is ready before its child's
        scope, table = scopes[c], tables[c]
        private: frozenset[int] = frozenset()
        for u in parents[c]:
            if not single[u] or depth[c] + depth[u] < SAFE_LOG2_FLOOR:
                continue
            fu = out[u]
            u_scope, u_table = (fu[1], fu[2]) if fu is not None else (scopes[u], tables[u])
            union = sorted(set(scope) | set(u_scope))
            if math.prod(cards[w] for w in union) > FOLD_LIMIT:
                continue
            depth[c] += depth[u]
            new_scope = tuple(w for w in union if w != u)
            table = _einsum([(scope, table), (u_scope, u_table)], union, new_scope)
            scope = new_scope
            private = private | {u} | (fu[0] if fu is not None else frozenset())
        if private:
            out[c] = (private, scope, table, tuple(w for w in scope if w != c))
    hit = InferenceCache.of(theta).folded[member] = tuple(out)
    return hit


def _scopes_by_position(theta: Theta) -> tuple[tuple[int, ...], ...]:
    """Per node, the elimination positions of its CPD's variables, ascending (cached)."""
    hit = InferenceCache.of(theta).scopes_by_position.get()
    if hit is None:
        pos = tree_structure(theta).position
        scopes, _ = sorted_tables(theta, 0)
        hit = InferenceCache.of(theta).scopes_by_position.set(tuple(
            tuple(sorted(pos[u] for u in sc)) for sc in scopes))
    return hit


def _einsum(factors: Sequence[tuple[tuple[int, ...], np.ndarray]], every: Sequence[int],
            out: Sequence[int]) -> np.ndarray:
    """Multiply ``factors`` and keep ``out`` (einsum's sublist form wants labels below 52)."""
    if len(every) > len(_LETTERS):
        raise InfluenceTooExpensive("an elimination step involves over 52 variables")
    label = {u: k for k, u in enumerate(every)}
    operands: list[Any] = []
    for vs, t in factors:
        operands += [t, [label[u] for u in vs]]
    return np.einsum(*operands, [label[u] for u in out])


def fmt_influence(value: float) -> str:
    """An influence for people: ``0 (+1e-10 rounding margin)`` for a quilt found independent.

    Every computed influence is raised by :data:`ROUNDING_MARGIN` (module docstring), so an
    influence computed as exactly 0 is stored and used as the margin itself; a person reading
    ``1e-10`` would look for a dependence that is not there. The value used for calibration is
    unchanged: only its text says what it is.
    """
    from quiltpriv.utils.format import fmt_number

    if not (isinstance(value, float) and value == math.inf):  # inf: no quilt keeps i apart
        value = check_scalar(value, "influence", min_val=0.0)
    if value == ROUNDING_MARGIN:
        return f"0 (+{ROUNDING_MARGIN:g} rounding margin)"
    return fmt_number(value)


def influence_html(infl: Influence) -> str:
    """HTML fragment for ``Influence._repr_html_``: the value and what attains it."""
    check_instance(infl, Influence, "infl")
    from quiltpriv.utils.format import escape, html_set, kv_table

    rows = [("max-influence e(Q | i)", escape(fmt_influence(infl.value))),
            ("sensitive attribute i", f"<code>{escape(infl.node)}</code>"),
            ("quilt Q", html_set(infl.quilt))]
    if infl.member is not None:
        rows.append(("attained under member", f"#{escape(infl.member)} of \u0398"))
    if infl.pair is not None:
        rows.append(("values of \u03c6<sub>i</sub>",
                     f"{escape(infl.pair[0])} vs {escape(infl.pair[1])}"))
    rows.append(("exact", "yes" if infl.bound_via is None else
                 f"NO: an upper bound via the separator {html_set(infl.bound_via)}"))
    rows.append(("arithmetic", escape(infl.arithmetic)))
    return f"<div class=\"quiltpriv-influence\">{kv_table(rows)}</div>"
