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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.graph.quilts import Quilt, enumerate_quilts, markov_quilt, trivial_quilt
from quiltpriv.inference.influence import DEFAULT_MAX_TABLE, InfluenceTooExpensive, max_influence
from quiltpriv.mechanisms.calibration import mul_up, scale_up
from quiltpriv.model.network import Theta, as_theta, check_theta
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_epsilon, check_positive

if TYPE_CHECKING:
    from quiltpriv.mechanisms.noise import NoisyValue, Seed

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
    quilt, nearby, remote : tuple of str
        ``Q``, ``N`` and ``R`` of the chosen quilt.
    influence : float
        ``e^v_Theta(Q | Y_i)`` (exact, rounded upwards).
    scale : float
        ``b_i = |N| / (eps - e)`` (rounded upwards); ``inf`` only if no quilt is feasible,
        which cannot happen (the trivial quilt gives ``|V| / eps``).
    quilts_considered : int
        Candidates whose influence was evaluated (the trivial quilt included).
    influence_member : str or None
        The member of Theta attaining the influence.
    influence_pair : tuple or None
        The values ``(a, b)`` of ``Y_i`` attaining it.
    """

    node: str
    quilt: tuple[str, ...]
    nearby: tuple[str, ...]
    remote: tuple[str, ...]
    influence: float
    scale: float
    quilts_considered: int
    influence_member: str | None = None
    influence_pair: tuple[Any, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node, "quilt": list(self.quilt), "nearby": list(self.nearby),
            "remote": list(self.remote), "influence": self.influence, "scale": self.scale,
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
    nodes : tuple of NodeScale
        Per protected variable, the chosen quilt.
    family : str
        The quilt family searched: ``"chain"``, ``"all"`` or ``"bounded"`` (see the module).
    optimal : bool
        True when every ``b_i`` is proven least over *all* quilts of ``Y_i``.
    notes : tuple of str
    """

    epsilon: float
    lipschitz: float
    b_max: float
    scale: float
    binding: str
    nodes: tuple[NodeScale, ...]
    family: str
    optimal: bool
    notes: tuple[str, ...] = field(default=())
    mechanism: str = field(default="MQM", init=False)

    @property
    def std(self) -> float:
        """Standard deviation of the noise, ``sqrt(2) * scale``."""
        return math.sqrt(2.0) * self.scale

    def __getitem__(self, node: str) -> NodeScale:
        for ns in self.nodes:
            if ns.node == node:
                return ns
        raise KeyError(node)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism, "epsilon": self.epsilon, "lipschitz": self.lipschitz,
            "b_max": self.b_max, "scale": self.scale, "binding": self.binding,
            "family": self.family, "optimal": self.optimal,
            "nodes": [ns.to_dict() for ns in self.nodes], "notes": list(self.notes),
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def release(self, value: float, *, seed: Seed = None) -> NoisyValue:
        """``F(Y) + Lap(L * b_max)`` with exact discrete Laplace noise
        (:mod:`quiltpriv.mechanisms.noise`).

        Secure randomness by default; ``seed`` is for reproducible experiments only (the
        returned record says the generator was not secure). The low-level form: no data checks
        and no release record; :func:`quiltpriv.mechanisms.registry.mqm_mechanism` gives
        ``release(data)``.
        """
        from quiltpriv.mechanisms import noise

        return noise.laplace_release(float(value), self.scale, self.lipschitz, seed=seed)

    def explain(self) -> str:
        lines = [
            f"Markov Quilt Mechanism ([ZOC22, Alg. 5]): epsilon = {self.epsilon:g}, L = "
            f"{self.lipschitz:g}, Laplace scale L * max_i b_i = {_fmt(self.scale)} "
            f"(set by {self.binding!r})",
            f"quilt family searched: {self.family} "
            f"({'optimal over all quilts' if self.optimal else 'optimality NOT proven'})",
        ]
        for ns in self.nodes:
            lines.append(
                f"  {ns.node}: Q = {_set(ns.quilt)}, |N| = {len(ns.nearby)}, "
                f"e = {_fmt(ns.influence)}, b = {_fmt(ns.scale)}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _set(xs: Iterable[str]) -> str:
    return "{" + ", ".join(xs) + "}"


def _quilt_scale(nearby: int, e: float, eps: float) -> float:
    """``|N| / (eps - e)``, exactly and rounded up; ``inf`` when ``e >= eps``."""
    if not e < eps:
        return math.inf
    return scale_up(nearby, eps, e)


def chain_order(theta: Theta) -> tuple[str, ...] | None:
    """The nodes in chain order if the DAG is one directed path ``Y_1 -> ... -> Y_m``, else None."""
    nodes = check_theta(theta).nodes
    if len(nodes) < 2:
        return None
    for v in nodes:
        if len(theta.parents[v]) > 1 or len(theta.children[v]) > 1:
            return None
    if sum(len(theta.parents[v]) for v in nodes) != len(nodes) - 1:
        return None
    # One root, <= 1 parent and child each, m - 1 edges: the topological order is the path.
    for a, b in zip(nodes[:-1], nodes[1:], strict=True):
        if theta.parents[b] != (a,):
            return None
    return nodes


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


def _search_node(
    theta: Theta, node: str, eps: float, candidates: Iterable[Quilt], max_table: int,
) -> tuple[NodeScale, list[str]]:
    """Least ``b(Q)`` over the trivial quilt and ``candidates`` (pruned by ``|N| / eps``)."""
    trivial = trivial_quilt(theta, node)
    best_q: Quilt = trivial
    best_e, best_member, best_pair = 0.0, None, None
    best_s = _quilt_scale(len(trivial.nearby), 0.0, eps)
    best_key = (best_s, 0.0, 0, 1)
    considered = 1
    skipped: list[str] = []
    # Cheapest first: |N| / eps is a lower bound on b(Q), and it prunes most candidates.
    for q in sorted(candidates, key=lambda c: (len(c.nearby), len(c.quilt))):
        if _quilt_scale(len(q.nearby), 0.0, eps) > best_s:
            continue
        try:
            infl = max_influence(theta, node, q.quilt, max_table=max_table)
        except InfluenceTooExpensive as exc:
            skipped.append(f"quilt {_set(q.quilt)} of {node!r} skipped: {exc}")
            continue
        considered += 1
        s = _quilt_scale(len(q.nearby), infl.value, eps)
        key = (s, infl.value, len(q.quilt), 0)
        if key < best_key:
            best_key, best_q, best_s, best_e = key, q, s, infl.value
            best_member = theta.names[infl.member] if infl.member is not None else None
            best_pair = infl.pair
    ns = NodeScale(node=node, quilt=best_q.quilt, nearby=best_q.nearby, remote=best_q.remote,
                   influence=best_e, scale=best_s, quilts_considered=considered,
                   influence_member=best_member, influence_pair=best_pair)
    return ns, skipped


def markov_quilt_mechanism(
    model: Any,
    epsilon: float,
    *,
    lipschitz: float = 1.0,
    protected: str | Iterable[str] | None = None,
    family: str = "auto",
    max_quilt_size: int = 2,
    max_exhaustive_nodes: int = MAX_EXHAUSTIVE_NODES,
    max_table: int = DEFAULT_MAX_TABLE,
) -> MQMPlan:
    """Plan the original Markov Quilt Mechanism ([ZOC22, Alg. 5]) on a network over record values.

    Parameters
    ----------
    model : Theta, pgmpy DiscreteBayesianNetwork or sequence of them
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
    max_table : int
        Largest joint table an exact influence may build; a candidate beyond it is skipped.

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
    theta = as_theta(model)
    eps = check_epsilon(epsilon)
    lip = check_positive(lipschitz, "lipschitz constant L")
    if family not in _FAMILIES:
        raise ParameterError(f"family must be one of {', '.join(_FAMILIES)}, got {family!r}")
    if isinstance(max_quilt_size, bool) or not isinstance(max_quilt_size, int) \
            or max_quilt_size < 0:
        raise ParameterError(f"max_quilt_size must be an integer >= 0, got {max_quilt_size!r}")
    if protected is None:
        nodes = theta.nodes
    else:
        if isinstance(protected, str):
            protected = [protected]
        nodes = theta.sort(theta.check_nodes(protected, "protected entry"))
        if not nodes:
            raise ModelError("give at least one protected entry")
    order = chain_order(theta)
    if family == "auto":
        if order is not None:
            family = "chain"
        elif len(theta.nodes) <= max_exhaustive_nodes:
            family = "all"
        else:
            family = "bounded"
    if family == "chain" and order is None:
        raise ParameterError("family='chain' needs a directed chain Y_1 -> ... -> Y_m")
    notes: list[str] = []
    skipped: list[str] = []
    plans = []
    for v in nodes:
        if family == "chain":
            assert order is not None
            cands: Iterable[Quilt] = chain_quilts(theta, v, order)
        elif family == "all":
            cands = enumerate_quilts(theta, v)
        else:
            cands = enumerate_quilts(theta, v, max_size=max_quilt_size)
        ns, sk = _search_node(theta, v, eps, cands, max_table)
        plans.append(ns)
        skipped += sk
    optimal = not skipped
    if family == "chain":
        notes.append("chain family {Y_(i-a), Y_(i+b)} (SWC): exact on a directed chain, since "
                     "N(Q) depends only on Q's nearest nodes to i and fewer quilt nodes never "
                     "raise the influence")
    elif family == "all":
        notes.append("every quilt enumerated (exact search)")
    else:
        optimal = optimal and max_quilt_size >= len(theta.nodes) - 1
        notes.append(f"RESTRICTED search: only quilts with |Q| <= {max_quilt_size}; the scale "
                     "is private (every candidate is a valid quilt) but may be larger than the "
                     "optimum over all quilts")
    notes += skipped
    binding = max(plans, key=lambda ns: ns.scale)
    b_max = binding.scale
    scale = mul_up(lip, b_max) if math.isfinite(b_max) else math.inf
    return MQMPlan(epsilon=eps, lipschitz=lip, b_max=b_max, scale=scale, binding=binding.node,
                   nodes=tuple(plans), family=family, optimal=optimal, notes=tuple(notes))
