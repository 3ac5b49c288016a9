"""The original Markov Quilt Mechanism ([SWC17]; [ZOC22, Alg. 5], in Appendix A of Zhang,
Ohrimenko and Cummings).

Individual-level Pufferfish privacy for a database ``Y = (Y_1, ..., Y_m)`` whose *entries* form a
Bayesian network: here the network's nodes are the record values ``Y_i`` and its states are the
values they take (not hyperparameters). Every ``Y_i`` is protected. For each ``i``::

    b(Q) = |N(Q)| / (eps - e^v(Q | Y_i))   for quilts with e^v < eps (else infinite)
    b_i  = min over the Markov quilts Q of Y_i of b(Q)
    release F(Y) + Lap(L * max_i b_i)       for an L-Lipschitz F

``e^v(Q | Y_i) = max_theta max_{a,b} max_{y_Q} log P(Y_Q = y_Q | Y_i = a) / P(Y_Q = y_Q | Y_i = b)``
is [ZOC22, Def. 10], the computation of [ZOC22, Def. 8] on the value network, so
:func:`quiltpriv.inference.influence.max_influence`
applies as it is; ``N(Q)`` is the nearby set of :func:`quiltpriv.graph.quilts.markov_quilt` (the
largest remote set for that ``Q``). The trivial quilt (``Q = R = {}``, ``N = V``) gives
``|V| / eps``.

Which quilts are searched (``QuiltFamily``)
-------------------------------------------
* ``"chain"`` -- for a directed chain ``Y_1 -> ... -> Y_m`` the standard SWC family: ``{}``,
  ``{Y_{i-a}}``, ``{Y_{i+b}}`` and ``{Y_{i-a}, Y_{i+b}}``. On a chain this family is *exact*:
  for any quilt ``Q`` the nearby set is the open interval between ``Q``'s nearest nodes to
  ``i`` on either side (no colliders), so the quilt ``Q'`` of those (at most two) nearest nodes
  has ``N(Q') = N(Q)`` and, as ``Q'`` is a subset of ``Q``, ``e(Q') <= e(Q)`` (monotonicity:
  influence never falls as a quilt grows). The tests check it against exhaustive enumeration.
* ``"hmm"`` -- chosen by ``"auto"`` for a hidden Markov model whose query reads its
  observations (``read``): the windows of observations around each entry, searched exactly
  in time linear in the series (:mod:`quiltpriv.mechanisms.hmm_quilts`, which proves they
  hold an optimal quilt).
* ``"all"`` -- every subset of the other nodes (:func:`quiltpriv.graph.quilts.enumerate_quilts`),
  ``2**(m-1)`` per node: exact, for small networks.
* ``"bounded"`` -- quilts with ``|Q| <= max_quilt_size`` only. Still private (every candidate
  is a valid quilt and the trivial quilt is always included) but possibly *suboptimal*; the
  result says so (``optimal=False``).

A candidate whose exact influence would need too large a table is skipped (never guessed),
which also clears ``optimal``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.graph.quilts import Quilt, enumerate_quilts, markov_quilt, trivial_quilt
from quiltpriv.inference.influence import InfluenceTooExpensive, max_influence
from quiltpriv.mechanisms.calibration import mul_up, scale_up
from quiltpriv.mechanisms.chain_quilts import chain_order
from quiltpriv.mechanisms.mqm_runs import NodeRun, NodeRuns, find_runs
from quiltpriv.model.network import Theta, as_theta, check_theta
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.format import fmt_set as _set
from quiltpriv.utils.memory import table_limit
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.time_limit import TimeLimit, check_time_limit
from quiltpriv.utils.validation import check_epsilon, check_positive

if TYPE_CHECKING:
    import os

    from quiltpriv.mechanisms.noise import Seed
    from quiltpriv.mechanisms.protocol import ReleaseRecord

__all__ = [
    "MQMPlan",
    "NodeScale",
    "chain_order",
    "chain_quilts",
    "markov_quilt_mechanism",
]

#: Networks with at most this many nodes get the exhaustive search under ``family="auto"``.
MAX_EXHAUSTIVE_NODES = 12

_FAMILIES = ("auto", "chain", "all", "bounded")


@dataclass(frozen=True)
class NodeScale(JSONResult):
    """The least-noise quilt found for one protected variable ``Y_i``.

    Attributes
    ----------
    node : str
        ``Y_i``.
    quilt : tuple of str
        ``Q`` of the chosen quilt.
    nearby, remote : tuple of str or None
        ``N`` and ``R`` of the chosen quilt, or None in a plan too large to list them (as
        :func:`quiltpriv.mechanisms.apmqm.plan` decides: ``list_sets``).
    influence : float
        ``e^v_Theta(Q | Y_i)`` (exact, rounded upwards).
    scale : float
        ``b_i = |N & read| / (eps - e)`` (rounded upwards), ``read`` the entries ``F`` reads
        (all by default); ``inf`` only if no quilt is feasible, which cannot happen (the
        trivial quilt gives ``|read| / eps``).
    quilts_considered : int
        Candidates whose influence was evaluated (the trivial quilt included).
    influence_member : str or None
        The member of Theta attaining the influence.
    influence_pair : tuple or None
        The values ``(a, b)`` of ``Y_i`` attaining it.
    nearby_read : int
        ``|N & read|``, the count the scale uses (-1: ``len(nearby)``, every entry read);
        :attr:`nearby_count` resolves it.
    """

    node: str
    quilt: tuple[str, ...]
    nearby: tuple[str, ...] | None
    remote: tuple[str, ...] | None
    influence: float
    scale: float
    quilts_considered: int
    influence_member: str | None = None
    influence_pair: tuple[Any, Any] | None = None
    nearby_read: int = -1

    @property
    def nearby_count(self) -> int:
        """``|N & read|``: the number of nearby entries the query reads."""
        if self.nearby_read >= 0 or self.nearby is None:
            return self.nearby_read
        return len(self.nearby)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node, "quilt": list(self.quilt),
            "nearby": None if self.nearby is None else list(self.nearby),
            "remote": None if self.remote is None else list(self.remote),
            "nearby_read": self.nearby_count,
            "influence": self.influence, "scale": self.scale,
            "quilts_considered": self.quilts_considered,
            "influence_member": self.influence_member,
            "influence_pair": None if self.influence_pair is None
            else [str(x) for x in self.influence_pair],
        }


@dataclass(frozen=True)
class MQMPlan:
    """Noise plan of the original Markov Quilt Mechanism ([ZOC22, Alg. 5]).

    Attributes
    ----------
    epsilon : float
        The guarantee: (epsilon, 0)-Pufferfish privacy of every ``Y_i`` (SWC17, Theorem 4.3).
    lipschitz : float
        ``L``: ``|F(Y) - F(Y')| <= L`` when ``Y`` and ``Y'`` differ in one entry.
    b_max : float
        ``max_i b_i``.
    scale : float
        The Laplace scale ``L * b_max`` (rounded upwards).
    binding : str
        The variable attaining ``b_max``.
    nodes : sequence of NodeScale
        Per protected variable, the chosen quilt: a tuple, or on a long chain or hidden
        Markov model (sets not listed) a :class:`~quiltpriv.mechanisms.mqm_runs.NodeRuns`,
        the same choices held as runs, each ``NodeScale`` made when it is asked for.
    family : str
        The quilt family searched: ``"chain"``, ``"hmm"``, ``"all"`` or ``"bounded"`` (see
        the module).
    optimal : bool
        True when every ``b_i`` is proven least over *all* quilts of ``Y_i``.
    notes : tuple of str
    """

    epsilon: float
    lipschitz: float
    b_max: float
    scale: float
    binding: str
    nodes: Sequence[NodeScale]
    family: str
    optimal: bool
    notes: tuple[str, ...] = field(default=())
    mechanism: str = field(default="MQM", init=False)

    @property
    def std(self) -> float:
        """Standard deviation of the noise, ``sqrt(2) * scale``."""
        return math.sqrt(2.0) * self.scale

    @property
    def protected(self) -> tuple[str, ...]:
        """The protected entries, in plan order (without making each one's ``NodeScale``)."""
        if isinstance(self.nodes, NodeRuns):
            return self.nodes.names
        return tuple(ns.node for ns in self.nodes)

    def __getitem__(self, node: str) -> NodeScale:
        if isinstance(self.nodes, NodeRuns):
            return self.nodes.node(node)
        for ns in self.nodes:
            if ns.node == node:
                return ns
        raise KeyError(node)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON: ``"nodes"``, one object per protected entry, where they list
        their sets; else (a long series: sets not listed) ``"node_runs"``, the entries as runs
        with the same numbers and the same quilt up to a shift (:func:`node_runs`), every
        number exact, linear in the runs rather than the entries."""
        d: dict[str, Any] = {
            "mechanism": self.mechanism, "epsilon": self.epsilon, "lipschitz": self.lipschitz,
            "b_max": self.b_max, "scale": self.scale, "binding": self.binding,
            "family": self.family, "optimal": self.optimal}
        if isinstance(self.nodes, NodeRuns) and len(self.nodes):
            d["node_runs"] = self.nodes.to_runs()
        elif self.nodes and all(ns.nearby is None for ns in self.nodes):
            d["node_runs"] = node_runs(tuple(self.nodes))
        else:
            d["nodes"] = [ns.to_dict() for ns in self.nodes]
        d["notes"] = list(self.notes)
        return d

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def release(self, value: float, *, seed: Seed = None,
                ledger: str | os.PathLike[str] | None = None, budget: float | None = None,
                allow_unproved: bool = False) -> ReleaseRecord:
        """``F(Y) + Lap(L * b_max)`` with exact discrete Laplace noise
        (:mod:`quiltpriv.mechanisms.noise`), as a
        :class:`~quiltpriv.mechanisms.protocol.ReleaseRecord` of mechanism ``"MQM"`` (its
        ``value`` is the noisy number).

        Secure randomness by default; ``seed`` is for reproducible experiments only (the
        returned record says the generator was not secure). The low-level form: no data checks
        (:func:`quiltpriv.mechanisms.protocol.release_value`, the one release flow; the grid
        is paid against ``L``, ``calibration.sampler_sensitivity``);
        :func:`quiltpriv.mechanisms.registry.mqm_mechanism` gives ``release(data)``.
        """
        from quiltpriv.mechanisms.protocol import Calibration, Guarantee, release_value

        try:  # by name: a plan held as runs makes only this entry's NodeScale
            b: NodeScale | None = self[self.binding]
        except KeyError:
            b = None
        nearby = 1 if b is None else b.nearby_count
        cal = Calibration("laplace", self.scale, mul_up(self.lipschitz, nearby),
                          f"[ZOC22, Alg. 5] ([SWC17]): b = L max_i |N(Q_i) & A| / (eps - "
                          f"e(Q_i|Y_i)) = {_fmt(self.scale, rounding='up')}, set by "
                          f"{self.binding!r}",
                          {"lipschitz": self.lipschitz, **({} if b is None else {
                              "binding": b.node, "binding_influence": b.influence,
                              "nearby": b.nearby_count})})
        g = Guarantee("pufferfish (Markov quilt)", self.epsilon, 0.0, (
            "the data are one realisation of the network's entries, drawn from it for some "
            "theta in Theta",
            f"F changes by at most L = {_fmt(self.lipschitz)} when one entry changes"),
            self.protected)
        return release_value(value, mechanism="MQM", guarantee=g, calibration=cal,
                             details=self.to_dict(), seed=seed, ledger=ledger, budget=budget,
                             allow_unproved=allow_unproved, sampler_sensitivity=self.lipschitz)

    def explain(self) -> str:
        lines = [
            f"Markov Quilt Mechanism ([ZOC22, Alg. 5]): epsilon = {_fmt(self.epsilon)}, L = "
            f"{_fmt(self.lipschitz)}, Laplace scale L * max_i b_i = "
            f"{_fmt(self.scale, rounding='up')} "
            f"(set by {self.binding!r})",
            f"quilt family searched: {self.family} "
            f"({'optimal over all quilts' if self.optimal else 'optimality NOT proven'})",
        ]
        for ns in self.nodes:
            lines.append(
                f"  {ns.node}: Q = {_set(ns.quilt)}, |N & read| = {ns.nearby_count}, "
                f"e = {_fmt(ns.influence)}, b = {_fmt(ns.scale, rounding='up')}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def node_runs(nodes: tuple[NodeScale, ...]) -> list[dict[str, Any]]:
    """``nodes`` (in order) as runs of entries with the same numbers and the same quilt up to
    a shift, every ``stride``-th entry from ``first`` to ``last`` (stride 2: the hidden
    states, or the readings, of an HMM whose entries alternate). Each run gives its quilt as
    offsets in the list of ``nodes`` (``quilt_offsets``; ``quilt`` by name where a quilt node
    is not in the list, and then the run is one entry) and the numbers, exactly."""
    pos = {ns.node: k for k, ns in enumerate(nodes)}
    runs: list[dict[str, Any]] = []
    last: dict[tuple[Any, ...], tuple[dict[str, Any], int]] = {}  # key -> (run, last index)
    for k, ns in enumerate(nodes):
        offs = [pos.get(q) for q in ns.quilt]
        shifted = None if any(o is None for o in offs) else tuple(
            int(o) - k for o in offs if o is not None)
        pair = None if ns.influence_pair is None else [str(x) for x in ns.influence_pair]
        key = (shifted, ns.nearby_count, ns.influence, ns.scale, ns.quilts_considered,
               ns.influence_member, None if pair is None else tuple(pair))
        hit = last.get(key) if shifted is not None else None
        if hit is not None:
            run, at = hit
            step = k - at
            if (run["count"] == 1 and step in (1, 2)) or step == run["stride"]:
                run["stride"], run["last"] = step, ns.node
                run["count"] += 1
                last[key] = (run, k)
                continue
        run = {"first": ns.node, "last": ns.node, "count": 1, "stride": 1}
        if shifted is None:
            run["quilt"] = list(ns.quilt)
        else:
            run["quilt_offsets"] = list(shifted)
        run.update({"nearby_read": ns.nearby_count, "influence": ns.influence,
                    "scale": ns.scale, "quilts_considered": ns.quilts_considered,
                    "influence_member": ns.influence_member, "influence_pair": pair})
        runs.append(run)
        if shifted is not None:
            last[key] = (run, k)
    return runs


def _quilt_scale(nearby: int, e: float, eps: float) -> float:
    """``|N| / (eps - e)``, exactly and rounded up; ``inf`` when ``e >= eps``."""
    if not e < eps:
        return math.inf
    return scale_up(nearby, eps, e)


def chain_quilts(theta: Theta, node: str, order: tuple[str, ...]) -> Iterator[Quilt]:
    """The SWC chain family of ``node``: {}, {Y_(i-a)}, {Y_(i+b)} and {Y_(i-a), Y_(i+b)}.

    ``order`` is :func:`chain_order` of ``theta`` (ParameterError otherwise).
    """
    theta = check_theta(theta)
    node = theta.check_node(node, "sensitive attribute")
    if isinstance(order, str) or tuple(theta.check_nodes(order, "chain node")) != \
            chain_order(theta):
        raise ParameterError("order must be the network's chain order (chain_order(theta))")
    k = order.index(node)
    left = [None, *order[:k][::-1]]     # None = no quilt node on that side
    right = [None, *order[k + 1:]]
    for lft in left:
        for rgt in right:
            yield markov_quilt(theta, node, [v for v in (lft, rgt) if v is not None])


def _count_read(nodes: Iterable[str], read: frozenset[str] | None) -> int:
    return sum(1 for v in nodes if v in read) if read is not None else len(tuple(nodes))


#: Said when the time limit stops a search (the node keeps its best quilt so far).
TIME_LIMIT_REASON = "the time limit was reached before the search finished"


def _search_node(
    theta: Theta, node: str, eps: float, candidates: Iterable[Quilt], max_table: int,
    read: frozenset[str] | None = None, deadline: float | None = None,
) -> tuple[NodeScale, list[str]]:
    """Least ``b(Q)`` over the trivial quilt and ``candidates`` (pruned by ``|N & read| /
    eps``); after ``deadline`` (``time.monotonic()``) the best so far, with a reason."""
    trivial = trivial_quilt(theta, node)
    best_q: Quilt = trivial
    best_e, best_member, best_pair = 0.0, None, None
    best_n = _count_read(trivial.nearby, read)
    best_s = _quilt_scale(best_n, 0.0, eps)
    best_key = (best_s, 0.0, 0, 1)
    considered = 1
    skipped: list[str] = []
    # Cheapest first: |N & read| / eps is a lower bound on b(Q), and it prunes most candidates.
    counted = []
    for q in candidates:  # the enumeration itself can be long: the deadline is seen here too
        if deadline is not None and time.monotonic() > deadline:
            skipped.append(f"{node!r}: {TIME_LIMIT_REASON}")
            break
        counted.append((_count_read(q.nearby, read), q))
    for n_read, q in sorted(counted, key=lambda c: (c[0], len(c[1].quilt))):
        if _quilt_scale(n_read, 0.0, eps) > best_s:
            continue
        if deadline is not None and time.monotonic() > deadline:
            if not skipped or skipped[-1] != f"{node!r}: {TIME_LIMIT_REASON}":
                skipped.append(f"{node!r}: {TIME_LIMIT_REASON}")
            break
        try:
            infl = max_influence(theta, node, q.quilt, max_table=max_table)
        except InfluenceTooExpensive as exc:
            skipped.append(f"quilt {_set(q.quilt)} of {node!r} skipped: {exc}")
            continue
        considered += 1
        s = _quilt_scale(n_read, infl.value, eps)
        key = (s, infl.value, len(q.quilt), 0)
        if key < best_key:
            best_key, best_q, best_s, best_e, best_n = key, q, s, infl.value, n_read
            best_member = theta.names[infl.member] if infl.member is not None else None
            best_pair = infl.pair
    ns = NodeScale(node=node, quilt=best_q.quilt, nearby=best_q.nearby, remote=best_q.remote,
                   influence=best_e, scale=best_s, quilts_considered=considered,
                   influence_member=best_member, influence_pair=best_pair, nearby_read=best_n)
    return ns, skipped


def _limit(deadline: float | None) -> TimeLimit | None:
    """The step searches' time limit from this module's ``time.monotonic()`` deadline."""
    return None if deadline is None else TimeLimit.ending_at(deadline)


def _chain_nodes(theta: Theta, order: tuple[str, ...], nodes: tuple[str, ...], eps: float,
                 read: frozenset[str] | None, deadline: float | None, progress: bool,
                 list_sets: bool) -> tuple[list[NodeScale], list[str]] | None:
    """The chain family searched exactly in time linear in the chain
    (:func:`quiltpriv.mechanisms.chain_quilts.chain_least_quilts`, the count ``|N & read|``
    as an additive weight); None where float64 cannot be trusted there."""
    import bisect

    from quiltpriv.mechanisms.chain_quilts import ChainNotApplicable, chain_least_quilts

    weights = [1.0 if read is None or v in read else 0.0 for v in order]
    index = theta.index
    positions = [index[v] for v in nodes]
    try:
        found = chain_least_quilts(theta, order, positions, weights, eps, progress=progress,
                                   time_limit=_limit(deadline))
    except ChainNotApplicable:
        return None
    read_pos = [k for k, w in enumerate(weights) if w]
    n_steps = len(order)
    out, skipped = [], []
    for j, node in enumerate(nodes):
        i, a, b = positions[j], int(found.a[j]), int(found.b[j])
        lo, hi = (i - a + 1 if a else 0), (i + b - 1 if b else n_steps - 1)
        quilt = tuple(order[x] for x in ((i - a) if a else -1, (i + b) if b else -1) if x >= 0)
        n_read = bisect.bisect_right(read_pos, hi) - bisect.bisect_left(read_pos, lo)
        e = float(found.influence[j])
        m = int(found.member[j])
        states = theta.states[node]
        nearby = remote = None
        if list_sets:
            nearby = order[lo:hi + 1]
            remote = tuple(v for k, v in enumerate(order) if (k < lo or k > hi)
                           and v not in quilt)
        out.append(NodeScale(
            node=node, quilt=quilt, nearby=nearby, remote=remote, influence=e,
            scale=_quilt_scale(n_read, e, eps), quilts_considered=int(found.considered[j]),
            influence_member=theta.names[m] if m >= 0 else None,
            influence_pair=None if m < 0 else (states[int(found.pair[j, 0])],
                                               states[int(found.pair[j, 1])]),
            nearby_read=n_read))
        if not found.optimal[j]:
            skipped.append(f"{node!r}: {TIME_LIMIT_REASON}")
    return out, skipped


def _hmm_nodes(theta: Theta, nodes: tuple[str, ...], eps: float, read: frozenset[str],
               deadline: float | None, progress: bool,
               list_sets: bool) -> tuple[list[NodeScale], list[str]] | None:
    """A hidden Markov model whose query reads exactly its observations: the windows of
    :func:`quiltpriv.mechanisms.hmm_quilts.hmm_search` (exact, linear in the series, the count
    ``|N & read|`` as a weight); None where it does not apply."""
    from quiltpriv.mechanisms.hmm_quilts import hmm_search

    found = hmm_search(theta, lambda v: 1.0 if v in read else 0.0, nodes, eps,
                       time_limit=_limit(deadline), progress=progress)
    if found is None:
        return None
    order, fq = found
    out, skipped = [], []
    scales: dict[tuple[int, float], float] = {}  # exact quotients, shared by equal steps
    for j, node in enumerate(nodes):
        quilt, n_read, e, m = (fq.quilt(j, order), int(fq.count[j]), float(fq.influence[j]),
                               int(fq.member[j]))
        scale = scales.get((n_read, e))
        if scale is None:
            scale = scales[n_read, e] = _quilt_scale(n_read, e, eps)
        part = markov_quilt(theta, node, quilt) if list_sets else None
        out.append(NodeScale(
            node=node, quilt=quilt, nearby=None if part is None else part.nearby,
            remote=None if part is None else part.remote, influence=e, scale=scale,
            quilts_considered=int(fq.considered[j]),
            influence_member=theta.names[m] if m >= 0 else None,
            influence_pair=fq.pair_states(j, theta.states[node]), nearby_read=n_read))
        if not fq.optimal[j]:
            skipped.append(f"{node!r}: {TIME_LIMIT_REASON}")
    return out, skipped


def _states_ids(theta: Theta, nodes: tuple[str, ...]) -> np.ndarray:
    """Per entry, an id of its tuple of states (equal ids: equal states), for run keys."""
    states = list(map(theta.states.__getitem__, nodes))
    if not states or states.count(states[0]) == len(states):
        return np.zeros(len(nodes))
    ids: dict[tuple[Any, ...], int] = {}
    return np.array([ids.setdefault(s, len(ids)) for s in states], dtype=np.float64)


def _expired(deadline: float | None) -> Callable[[], bool] | None:
    return None if deadline is None else (lambda: time.monotonic() > deadline)


def _trivial_run(total_read: int, eps: float) -> Callable[[int, int], NodeRun]:
    """The quilt ``{}`` for ``count`` entries (every read entry nearby): valid, more noise."""
    scale = _quilt_scale(total_read, 0.0, eps)

    def make(first: int, count: int) -> NodeRun:
        return NodeRun(first, count, 1, (), None, total_read, 0.0, scale, 1, None, None)

    return make


def _chain_runs(theta: Theta, order: tuple[str, ...], nodes: tuple[str, ...], eps: float,
                read: frozenset[str] | None, deadline: float | None,
                progress: bool) -> tuple[NodeRuns, int] | None:
    """:func:`_chain_nodes` held as runs (:mod:`quiltpriv.mechanisms.mqm_runs`): the same
    choices and numbers, found with array operations, no object per entry; with the number of
    entries not proven optimal. None where float64 cannot be trusted."""
    from quiltpriv.mechanisms.chain_quilts import ChainNotApplicable, chain_least_quilts

    n_steps = len(order)
    if read is None:
        weights = np.ones(n_steps)
    else:
        weights = np.fromiter((v in read for v in order), dtype=np.float64, count=n_steps)
    index = theta.index
    positions = np.fromiter(map(index.__getitem__, nodes), dtype=np.int64, count=len(nodes))
    try:
        found = chain_least_quilts(theta, order, positions, weights, eps, progress=progress,
                                   time_limit=_limit(deadline))
    except ChainNotApplicable:
        return None
    read_pos = np.flatnonzero(weights)
    n = len(nodes)
    j = np.arange(n)
    a, b = found.a.astype(np.int64), found.b.astype(np.int64)
    qa = np.where(a > 0, positions - a, 0)
    qb = np.where(b > 0, positions + b, 0)
    plan_of = np.full(n_steps, -1, dtype=np.int64)  # chain position -> plan index
    plan_of[positions] = j
    pa, pb = plan_of[qa], plan_of[qb]
    alone = ((a > 0) & (pa < 0)) | ((b > 0) & (pb < 0))  # a quilt node not protected
    oa = np.where((a > 0) & ~alone, pa - j, 0)
    ob = np.where((b > 0) & ~alone, pb - j, 0)
    lo = np.where(a > 0, positions - a + 1, 0)
    hi = np.where(b > 0, positions + b - 1, n_steps - 1)
    n_read = (np.searchsorted(read_pos, hi, side="right")
              - np.searchsorted(read_pos, lo, side="left"))
    e = found.influence.astype(np.float64)
    m = found.member.astype(np.int64)
    keys = np.column_stack([oa, ob, n_read, e, m, found.pair[:, 0], found.pair[:, 1],
                            found.considered, _states_ids(theta, nodes)]).astype(np.float64)
    scales: dict[tuple[int, float], float] = {}  # exact quotients, shared by equal runs

    def make(first: int, count: int) -> NodeRun:
        k, node = first, nodes[first]
        nr, ek, mk = int(n_read[k]), float(e[k]), int(m[k])
        scale = scales.get((nr, ek))
        if scale is None:
            scale = scales[nr, ek] = _quilt_scale(nr, ek, eps)
        states = theta.states[node]
        pair = None if mk < 0 else (states[int(found.pair[k, 0])],
                                    states[int(found.pair[k, 1])])
        if alone[k]:
            i = int(positions[k])
            quilt: tuple[str, ...] | None = tuple(
                order[x] for x in ((i - int(a[k])) if a[k] else -1,
                                   (i + int(b[k])) if b[k] else -1) if x >= 0)
            offs = None
        else:
            quilt, offs = None, tuple(int(o) for o in (oa[k], ob[k]) if o)
        return NodeRun(first, count, 1, offs, quilt, nr, ek, scale, int(found.considered[k]),
                       theta.names[mk] if mk >= 0 else None, pair)

    total = int(read_pos.size)
    runs, late = find_runs(NodeScale, nodes, 1, keys, alone, make, expired=_expired(deadline),
                           trivial=_trivial_run(total, eps))
    return runs, int(np.count_nonzero(~found.optimal.astype(bool) | late))


def _hmm_step_by_step(theta: Theta, nodes: tuple[str, ...]) -> bool:
    """Whether ``theta`` is a hidden Markov model listed ``H_1, X_1, H_2, X_2, ...`` (as
    :func:`quiltpriv.model.time_series.hidden_markov` builds it) and every entry is protected:
    where :func:`_hmm_runs` applies."""
    from quiltpriv.mechanisms.hmm_quilts import hmm_order

    if nodes != theta.nodes:
        return False
    order = hmm_order(theta)
    return (order is not None and order.hidden == theta.nodes[0::2]
            and order.observed == theta.nodes[1::2])


def _hmm_runs(theta: Theta, nodes: tuple[str, ...], eps: float, read: frozenset[str],
              deadline: float | None, progress: bool) -> tuple[NodeRuns, int] | None:
    """:func:`_hmm_nodes` held as runs where every entry is protected and the network lists
    them step by step (``H_1, X_1, H_2, X_2, ...``, as :func:`quiltpriv.model.time_series.
    hidden_markov` builds it): the same choices and numbers, no object per entry; with the
    number of entries not proven optimal. None where the HMM search does not apply (the
    general families then search)."""
    from quiltpriv.mechanisms.hmm_quilts import hmm_order, hmm_search

    order = hmm_order(theta)
    assert order is not None and _hmm_step_by_step(theta, nodes)
    found = hmm_search(theta, lambda v: 1.0 if v in read else 0.0, nodes, eps,
                       time_limit=_limit(deadline), progress=progress)
    if found is None:
        return None
    _, fq = found
    n_steps = len(order.hidden)
    t = fq.step.astype(np.int64)
    obs = fq.observed.astype(bool)
    # entry j is H_t (j = 2t) or X_t (j = 2t + 1): _hmm_step_by_step
    assert np.array_equal(2 * t + obs, np.arange(len(nodes)))
    left, right = fq.left.astype(np.int64), fq.right.astype(np.int64)
    lo, hi = fq.band_left.astype(np.int64), fq.band_right.astype(np.int64)
    has_l = left < t
    has_r = right < n_steps - 1 - t
    # the quilt relative to the entry's step (fq.quilt): a hidden state before the band, the
    # band's observations up to the window, the entry's own observation, the band after it
    # and a hidden state beyond; zero where that side has no quilt node
    keys = np.column_stack([
        obs, has_l, has_l & (lo > 0), np.where(has_l, t - lo, 0), np.where(has_l, left, 0),
        fq.center.astype(bool), has_r, has_r & (hi < n_steps - 1), np.where(has_r, hi - t, 0),
        np.where(has_r, right, 0), fq.influence, fq.count, fq.member, fq.pair,
        fq.considered, _states_ids(theta, nodes)]).astype(np.float64)
    index = theta.index
    scales: dict[tuple[int, float], float] = {}

    def make(first: int, count: int) -> NodeRun:
        k, node = first, nodes[first]
        nr, ek, mk = int(fq.count[k]), float(fq.influence[k]), int(fq.member[k])
        scale = scales.get((nr, ek))
        if scale is None:
            scale = scales[nr, ek] = _quilt_scale(nr, ek, eps)
        offs = tuple(index[q] - k for q in fq.quilt(k, order))
        return NodeRun(first, count, 1, offs, None, nr, ek, scale, int(fq.considered[k]),
                       theta.names[mk] if mk >= 0 else None,
                       fq.pair_states(k, theta.states[node]))

    total = sum(1 for v in order.observed if v in read)
    runs, late = find_runs(NodeScale, nodes, 2, keys, np.zeros(len(nodes), dtype=bool), make,
                           expired=_expired(deadline), trivial=_trivial_run(total, eps))
    return runs, int(np.count_nonzero(~fq.optimal.astype(bool) | late))


def _search_nodes(theta: Theta, nodes: tuple[str, ...], family: str,
                  order: tuple[str, ...] | None, eps: float, max_quilt_size: int,
                  max_table: int, read_set: frozenset[str] | None, deadline: float | None,
                  progress: bool, list_sets: bool) -> tuple[list[NodeScale], list[str]]:
    """Each protected entry searched over its family (the enumerating families), with the
    deadline seen per entry and per candidate; entries after it keep the trivial quilt."""
    plans: list[NodeScale] = []
    skipped: list[str] = []
    todo: Iterable[str] = nodes
    if progress:
        from quiltpriv.utils.progress import progress_bar

        todo = progress_bar(nodes, desc="quilts", unit="entry")
    for v in todo:
        if family == "chain":
            assert order is not None
            cands: Iterable[Quilt] = chain_quilts(theta, v, order)
        elif family == "all":
            cands = enumerate_quilts(theta, v)
        else:
            cands = enumerate_quilts(theta, v, max_size=max_quilt_size)
        if deadline is not None and time.monotonic() > deadline:
            skipped.append(f"{v!r}: {TIME_LIMIT_REASON}")
            if not list_sets:  # the trivial quilt, in O(1)
                n_read = len(read_set) if read_set is not None else len(theta.nodes)
                plans.append(NodeScale(node=v, quilt=(), nearby=None, remote=None,
                                       influence=0.0, scale=_quilt_scale(n_read, 0.0, eps),
                                       quilts_considered=1, nearby_read=n_read))
                continue
            cands = ()
        ns, sk = _search_node(theta, v, eps, cands, max_table, read_set, deadline)
        if not list_sets:
            ns = NodeScale(**{**ns.__dict__, "nearby": None, "remote": None})
        plans.append(ns)
        skipped += sk
    return plans, skipped


def _protected(theta: Theta, protected: str | Iterable[str] | None) -> tuple[str, ...]:
    """The protected entries in network order (all by default)."""
    if protected is None:
        return theta.nodes
    if isinstance(protected, str):
        protected = [protected]
    nodes = theta.sort(theta.check_nodes(protected, "protected entry"))
    if not nodes:
        raise ModelError("give at least one protected entry")
    return nodes


def _family(family: str, order: tuple[str, ...] | None, n_nodes: int,
            max_exhaustive_nodes: int) -> str:
    """The family ``"auto"`` stands for; ``"chain"`` only on a chain."""
    if family == "auto":
        if order is not None:
            return "chain"
        return "all" if n_nodes <= max_exhaustive_nodes else "bounded"
    if family == "chain" and order is None:
        raise ParameterError("family='chain' needs a directed chain Y_1 -> ... -> Y_m")
    return family


def _plans(theta: Theta, nodes: tuple[str, ...], family: str, requested: str,
           order: tuple[str, ...] | None, eps: float, max_quilt_size: int, max_table: int,
           read_set: frozenset[str] | None, deadline: float | None, progress: bool,
           list_sets: bool) -> tuple[Sequence[NodeScale], int, list[str], str]:
    """Each protected entry's least quilt: held as runs on a long chain or HMM (sets not
    listed), else one ``NodeScale`` each; with the number of entries the time limit left
    unproven, the other notes and the family searched."""
    plans: Sequence[NodeScale] | None = None
    late = 0
    skipped: list[str] = []
    if family == "chain":
        assert order is not None
        if list_sets:
            chained = _chain_nodes(theta, order, nodes, eps, read_set, deadline, progress,
                                   list_sets)
        else:  # a long chain: runs, no object per entry
            as_runs = _chain_runs(theta, order, nodes, eps, read_set, deadline, progress)
            chained = None
            if as_runs is not None:
                plans, late = as_runs
    elif requested == "auto" and read_set is not None:  # an HMM read at its observations
        if not list_sets and _hmm_step_by_step(theta, nodes):  # runs, no object per entry
            as_runs = _hmm_runs(theta, nodes, eps, read_set, deadline, progress)
            chained = None
            if as_runs is not None:
                plans, late = as_runs
                family = "hmm"
        else:
            chained = _hmm_nodes(theta, nodes, eps, read_set, deadline, progress, list_sets)
            family = family if chained is None else "hmm"
    else:
        chained = None
    if plans is None:
        if chained is not None:
            listed, skipped = chained
        else:
            listed, skipped = _search_nodes(theta, nodes, family, order, eps, max_quilt_size,
                                            max_table, read_set, deadline, progress,
                                            list_sets)
        plans = tuple(listed)
        late = sum(1 for x in skipped if x.endswith(TIME_LIMIT_REASON))
    return plans, late, skipped, family


@renamed_keywords(model="theta")
def markov_quilt_mechanism(
    theta: Any,
    epsilon: float,
    *,
    lipschitz: float = 1.0,
    protected: str | Iterable[str] | None = None,
    family: str = "auto",
    max_quilt_size: int = 2,
    max_exhaustive_nodes: int = MAX_EXHAUSTIVE_NODES,
    max_table: int | None = None,
    read: str | Iterable[str] | None = None,
    time_limit: float | TimeLimit | None = None,
    progress: bool = False,
    list_sets: bool | None = None,
    max_memory: int | str | None = None,
) -> MQMPlan:
    """Plan the original Markov Quilt Mechanism ([ZOC22, Alg. 5]) on a network over record values.

    Parameters
    ----------
    theta : Theta, pgmpy DiscreteBayesianNetwork or sequence of them
        The Bayesian network over the entries ``Y_i`` of the database (several networks with one
        DAG form Theta; every influence is a max over them).
    epsilon : float
        Privacy parameter, finite and > 0.
    lipschitz : float
        ``L``, the most ``F`` changes when one entry ``Y_i`` changes (1 for a count).
    protected : str or iterable of str, optional
        The entries whose values are secret; default all (as in [ZOC22, Alg. 5]). The noise
        depends only on the protected entries' ``b_i``.
    family : {"auto", "chain", "all", "bounded"}
        Quilts to search (see the module docstring). ``"auto"``: the chain family for a directed
        chain (exact), every quilt for at most ``max_exhaustive_nodes`` nodes (exact), else
        quilts with ``|Q| <= max_quilt_size`` (valid, optimality not proven).
    max_quilt_size : int
        Largest ``|Q|`` for ``family="bounded"``.
    max_exhaustive_nodes : int
        Node count up to which ``"auto"`` enumerates every quilt.
    max_table : int, optional
        Largest joint table (entries) an exact influence may build; a candidate beyond it is
        skipped. By default as many as ``max_memory`` holds, never more when both are given.
    read : str or iterable of str, optional
        The entries ``F`` reads (default all). An entry ``F`` does not read changes nothing,
        so ``b(Q)`` counts ``|N & read|`` ([SWC17]'s ``|N|`` for a query over every entry):
        on a hidden Markov model whose query reads the observations, the hidden states in
        ``N`` cost nothing.
    time_limit : float or TimeLimit, optional
        Seconds from this call, or a :class:`~quiltpriv.utils.time_limit.TimeLimit` that
        started earlier (the command line's); when it passes, every entry keeps the best quilt
        found so far (valid; ``optimal`` False, a note counts them). Entries not reached keep
        the trivial quilt.
    progress : bool
        A progress bar over the entries (or blocks of steps on a chain).
    list_sets : bool, optional
        List each entry's ``N`` and ``R`` (default: as :func:`quiltpriv.mechanisms.apmqm.plan`
        decides, by the network's size times the number of protected entries).
    max_memory : int or str, optional
        The memory budget in bytes or as a size (``"4G"``); default
        :data:`quiltpriv.utils.memory.DEFAULT_MAX_MEMORY`, half the machine's memory.

    Returns
    -------
    MQMPlan
        ``scale = L * max_i b_i``; release with :meth:`MQMPlan.release`.

    Raises
    ------
    ParameterError
        Bad epsilon, Lipschitz constant, family or sizes; ``"chain"`` on a non-chain.
    ModelError
        A protected entry not in the network.
    """
    max_table = table_limit(max_table, max_memory)
    theta = as_theta(theta)
    eps = check_epsilon(epsilon)
    lip = check_positive(lipschitz, "lipschitz constant L")
    if family not in _FAMILIES:
        raise ParameterError(f"family must be one of {', '.join(_FAMILIES)}, got {family!r}")
    if isinstance(max_quilt_size, bool) or not isinstance(max_quilt_size, int) \
            or max_quilt_size < 0:
        raise ParameterError(f"max_quilt_size must be an integer >= 0, got {max_quilt_size!r}")
    nodes = _protected(theta, protected)
    read_set = None if read is None else frozenset(
        theta.check_nodes([read] if isinstance(read, str) else read, "entry read"))
    limit = check_time_limit(time_limit)
    deadline = None if limit is None else limit.ends
    from quiltpriv.mechanisms.apmqm import LIST_SETS_LIMIT, LIST_SETS_MAX_NODES

    if list_sets is None:
        list_sets = (len(theta.nodes) <= LIST_SETS_MAX_NODES
                     and len(theta.nodes) * len(nodes) <= LIST_SETS_LIMIT)
    order = chain_order(theta)
    requested = family
    family = _family(family, order, len(theta.nodes), max_exhaustive_nodes)
    notes: list[str] = []
    plans, late, skipped, family = _plans(theta, nodes, family, requested, order, eps,
                                          max_quilt_size, max_table, read_set, deadline,
                                          progress, list_sets)
    optimal = not skipped and not late
    if family == "chain":
        notes.append("chain family {Y_(i-a), Y_(i+b)} (SWC): exact on a directed chain, since "
                     "N(Q) depends only on Q's nearest nodes to i and fewer quilt nodes never "
                     "raise the influence")
    elif family == "hmm":
        notes.append("hidden Markov model: the windows of observations around each entry "
                     "hold an optimal quilt (quiltpriv.mechanisms.hmm_quilts), searched exactly")
    elif family == "all":
        notes.append("every quilt enumerated (exact search)")
    else:
        optimal = optimal and max_quilt_size >= len(theta.nodes) - 1
        notes.append(f"RESTRICTED search: only quilts with |Q| <= {max_quilt_size}; the scale "
                     "is private (every candidate is a valid quilt) but may be larger than the "
                     "optimum over all quilts")
    if late:
        notes.append(f"the time limit of {_fmt(limit.seconds if limit else 0)} s was reached: "
                     f"{late} entr"
                     f"{'y keeps' if late == 1 else 'ies keep'} the best quilt found so "
                     "far (valid, optimality not proven)")
    notes += [x for x in skipped if not x.endswith(TIME_LIMIT_REASON)]
    if isinstance(plans, NodeRuns):
        binding = plans[plans.binding_index()]
    else:
        binding = max(plans, key=lambda ns: ns.scale)
    b_max = binding.scale
    scale = mul_up(lip, b_max) if math.isfinite(b_max) else math.inf
    return MQMPlan(epsilon=eps, lipschitz=lip, b_max=b_max, scale=scale, binding=binding.node,
                   nodes=plans, family=family, optimal=optimal, notes=tuple(notes))
