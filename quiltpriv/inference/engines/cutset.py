"""Cutset conditioning (Pearl 1986) for a query no elimination order fits ``max_table``: one
elimination per state of a small cutset, each checked for underflow (``engine="cutset"``,
:class:`CutsetEngine`; ``"kernel"`` and ``"python"`` hand it the queries no order of theirs
fits)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from quiltpriv.inference import compiled
from quiltpriv.inference.budget import InfluenceTooExpensive, _check_deadline_now, _late
from quiltpriv.inference.compiled import _KERNEL_LATE, _KERNEL_OK, _budget
from quiltpriv.inference.engines.base import DEFAULT_SETTINGS, Answer, EngineSettings, JointQuery
from quiltpriv.inference.engines.elimination import _eliminate
from quiltpriv.inference.junction_tree import cardinalities, parent_indices
from quiltpriv.inference.rounding import _elim_depth
from quiltpriv.inference.underflow import subnormals_kept
from quiltpriv.model.network import Theta
from quiltpriv.utils.format import fmt_number as _fmt


class NoCutset(InfluenceTooExpensive):
    """No cutset of at most ``settings.max_cutset_states`` states lets an order fit, or its
    eliminations would build more than ``settings.max_cutset_work`` entries in all."""


class _Cutset(NamedTuple):
    """What :func:`_conditioned_joint` conditions on and how each term is computed."""

    fixed: tuple[str, ...]  #: the cutset's variables, in the order they were chosen
    kernel: bool  #: terms by the compiled kernel (else by the Python order, numpy ufuncs)
    work: float  #: table entries one term builds
    position: tuple[int, ...] | None = None  #: the kernel's first candidate order, per node
    deadline: float | None = None  #: ``time.monotonic()`` by which every term must end


def _cutset(theta: Theta, nodes: tuple[str, ...], member: int, max_table: int,
            deadline: float | None = None, *, use_kernel: bool = True,
            settings: EngineSettings = DEFAULT_SETTINGS,
            allow_empty: bool = False) -> _Cutset | None:
    """The least cutset :func:`_conditioned_joint` finds for a query no order fits, priced
    symbolically (no arithmetic); None beyond ``settings.max_cutset_states``, and (unless
    ``allow_empty``) when the Python order fits with no variable fixed. The compiled
    kernel is used only with ``use_kernel`` (and when it is loaded).

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
    use_kernel = use_kernel and compiled._KERNEL is not None
    while True:
        _check_deadline_now(deadline, "the search for a cutset")
        if (fixed or allow_empty) and use_kernel:
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
            if math.prod(card[u] for u in (*fixed, pick)) > settings.max_cutset_states:
                return None
            fixed[pick] = 0
            continue
        if not fixed and not allow_empty:
            return None
        if use_kernel:
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
    return compiled._KERNEL.Network(
        cards, range(len(theta.nodes)) if position is None else position, base,
        [None] * len(theta.nodes))


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
                       deadline: float | None = None, *, use_kernel: bool = True,
                       settings: EngineSettings = DEFAULT_SETTINGS,
                       allow_empty: bool = False) -> tuple[np.ndarray, int, bool] | None:
    """``P(phi_nodes)`` for a query no elimination order fits ``max_table``: conditioning on
    a cutset (Pearl 1986) trades memory for time, ``P(nodes) = sum over states c of the
    cutset C of P(nodes, C = c)``, each term an elimination with ``C`` fixed.

    The cutset (:func:`_cutset`) has at most ``settings.max_cutset_states`` states, and its
    terms build at most ``settings.max_cutset_work`` (``max_cutset_kernel_work`` in the
    kernel, used only with ``use_kernel``) table entries in all, both priced before any
    arithmetic. Every term is checked for underflow (the compiled
    kernel's IEEE flag, or numpy's ufuncs under ``numpy.errstate(under="raise")`` with
    subnormals kept), so float64 is trusted at any magnitude; the sum of non-negative terms
    cannot underflow. Returns the joint, the number of terms summed (for the rounding bound)
    and whether the kernel computed them, or None when an operation underflowed (or the
    floating-point environment flushes subnormals). With ``allow_empty``, a query the Python
    order fits is one term, the empty cutset's.

    Raises
    ------
    NoCutset
        When no cutset fits (:class:`NoCutset`).
    InfluenceTooExpensive
        When ``deadline`` (``time.monotonic()``) passes: while the cutset is searched (each
        pricing sees it), between two terms or during one.
    """
    cutset = _cutset(theta, nodes, member, max_table, deadline, use_kernel=use_kernel,
                     settings=settings, allow_empty=allow_empty)
    if cutset is None:
        raise NoCutset(f"no cutset of at most {settings.max_cutset_states} joint states lets "
                       f"an elimination order fit max_table = {max_table}")
    if not (cutset.kernel or subnormals_kept()):
        return None
    cutset = cutset._replace(deadline=deadline)
    card = theta.cardinality
    n_terms = math.prod(card[u] for u in cutset.fixed)
    most = settings.max_cutset_kernel_work if cutset.kernel else settings.max_cutset_work
    if cutset.work * n_terms > most:
        raise NoCutset(f"conditioning on {list(cutset.fixed)} would build "
                       f"{_fmt(cutset.work * n_terms, 3)} table entries (limit {most})")
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
    return total, n_terms, cutset.kernel


class CutsetEngine:
    """``engine="cutset"`` (:class:`~quiltpriv.inference.engines.base.Engine`): conditioning
    on the least cutset :func:`_cutset` finds (none where an order fits the query as it is),
    each term by the compiled kernel when ``use_kernel`` and it is loaded
    (``"cutset+kernel"``), else by the Python order (``"cutset+python"``). The sum of ``n``
    terms adds ``n`` roundings to each entry (:attr:`Answer.depth
    <quiltpriv.inference.engines.base.Answer>`). ``"kernel"`` and ``"python"`` hand it the
    queries no order of theirs fits (``use_kernel`` as they run).
    """

    name = "cutset"

    def __init__(self, use_kernel: bool = True) -> None:
        self.use_kernel = use_kernel

    def joint(self, query: JointQuery, allow_empty: bool = True) -> Answer | None:
        theta = query.theta
        found = _conditioned_joint(theta, query.nodes, query.member, query.max_table,
                                   query.deadline, use_kernel=self.use_kernel,
                                   settings=query.settings, allow_empty=allow_empty)
        if found is None:
            return None
        table, terms, by_kernel = found
        return Answer(table, "cutset+kernel" if by_kernel else "cutset+python",
                      _elim_depth(theta, query.settings.merge_limit) + terms)
