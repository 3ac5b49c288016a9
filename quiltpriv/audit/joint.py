"""Exact privacy auditor for the joint output of several Laplace releases on one dataset.

Releases ``M_k(X) = F_k(X) + Lap(s_k)``, ``k = 1..K``, with independent noise, are made on the
same dataset ``X`` (``n`` records). This module computes the exact worst-case privacy loss of
their *joint* output ``(M_1(X), ..., M_K(X))``

    L = max_theta max_i max_{a != b} sup_T log P((M_1..M_K) in T | phi_i = a)
                                               / P((M_1..M_K) in T | phi_i = b)

on a small hyperparameter network, under the record model of :mod:`quiltpriv.audit.exact` (given
``phi`` the records are i.i.d., the attributes of a record independent, ``X_j`` drawn from the
law its state names). It is what checks the guarantees
:func:`quiltpriv.releases.composition.composition` states and shows releases whose joint loss
exceeds the sum of their epsilons. Nothing is sampled.

Joint law of ``(F_1..F_K)`` given a secret
------------------------------------------
Let ``U`` be the union of the attributes the queries read. A record with categories ``x``
over ``U`` adds the vector ``v(x) = (c_1(x), ..., c_K(x))`` to ``(F_1..F_K)``: for a count,
``c_k(x) = 1`` when the record satisfies the predicate (read over the model's record
categories through the query's declared domain or ``record_states``, as the single-release
auditor does; without a predicate "every attribute of ``A_k`` equals 1"); for a linear query
``sum_j w_j mean_j``, ``c_k(x) = sum_j w_j x_j / n``. Given ``phi_U`` the record's law is the
product of the attributes' laws, so the law of ``(F_1..F_K) | phi_U`` is the ``n``-fold
convolution of the law of ``v``; the secret's law mixes it over
``P(phi_U | phi_i = a)`` (:func:`quiltpriv.queries.network_laws.parameter_mixture`, exact variable
elimination on the CPDs read as exact decimals). Everything is exact in rationals. Queries
that read the same columns are handled exactly (the same query twice gives ``F_1 = F_2``).

Supremum over outputs
---------------------
With densities taken against Lebesgue measure in the noisy coordinates and counting measure
in the noise-free ones (``s_k = 0``), ``p_a(w) = sum_f P(f | a) prod_k kern_k(w_k - f_k)``
with ``kern_k(t) = e^{-|t| / s_k}`` (the factor ``1 / 2 s_k`` cancels) or the indicator of
``t = 0``. Fix every coordinate but ``w_k`` (``s_k > 0``): between two consecutive values of
the support's ``k``-th coordinates ``S_k``, ``p_a = A e^{-w_k/s_k} + C e^{w_k/s_k}`` and the
ratio ``p_a / p_b`` is a Moebius function of ``e^{2 w_k / s_k}``, monotone on the interval, and
constant beyond the end points of ``S_k`` (the argument of :mod:`quiltpriv.audit.exact`, one
coordinate at a time). Moving the coordinates to ``S_1``, then ``S_2``, ... never lowers the
ratio, so the supremum is attained on the grid ``S_1 x ... x S_K``; a noise-free coordinate
lives on ``S_k`` anyway. Hence

    L = max over the grid of  log p_a(w) - log p_b(w)

(``+inf`` where ``p_a > 0 = p_b``), evaluated with log-sum-exp (exact rationals and one
logarithm when no release has noise). Like :mod:`quiltpriv.audit.exact`, this audits the ideal
continuous Laplace of each scale; the discrete noise
:func:`quiltpriv.mechanisms.apmqm_release.release` draws is at least as private at its recorded
(inflated) scale.

Cost: ``|S_1| ... |S_K|`` grid points times the support size, per secret pair and member of
Theta: small networks, few records and two or three releases. Larger problems are refused
(:data:`MAX_JOINT_WORK`).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.special import logsumexp

from quiltpriv.audit.exact import AUDIT_TOLERANCE, exact_pair_loss, log_fraction
from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.model.network import Theta, as_theta
from quiltpriv.queries.law_bounds import Budget
from quiltpriv.queries.network_laws import (
    bernoulli_parameters,
    category_laws,
    parameter_mixture,
    record_truth,
    undeclared_domain_error,
)
from quiltpriv.queries.query import CountQuery, LinearQuery, Query, check_query
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number
from quiltpriv.utils.memory import exact_table_limit
from quiltpriv.utils.validation import check_positive, check_records

__all__ = ["MAX_JOINT_OUTPUTS", "MAX_JOINT_WORK", "JointAuditResult", "joint_audit", "joint_laws"]

#: Most (grid points x support points) products per secret pair the auditor evaluates, and
#: most support points of a joint law; beyond it the problem is refused, not approximated.
MAX_JOINT_WORK = 20_000_000

#: Most output vectors a joint law may have.
MAX_JOINT_OUTPUTS = 200_000

#: A joint law: output vector (exact rationals) -> exact probability.
JointLaw = dict[tuple[Fraction, ...], Fraction]


@dataclass(frozen=True)
class JointAuditResult:
    """The exact worst-case privacy loss of ``(F_1(X) + Lap(s_1), ..., F_K(X) + Lap(s_K))``.

    Attributes
    ----------
    loss : float
        The audited joint loss ``L`` (module docstring); ``0`` when no pair of secrets exists,
        ``inf`` when some output is possible under one secret and impossible under another.
    scales : tuple of float
        ``s_k`` per release (0: released without noise).
    records : int
        ``n``, the records of the one dataset every release reads.
    queries : tuple of mapping
        Each query's ``to_dict()``.
    sensitive : tuple of str
        The sensitive attributes audited.
    worst_node, worst_member, worst_pair, worst_output
        Where the worst loss is attained (attribute, member of Theta, secret pair ``(a, b)``,
        output vector on the grid); ``None`` when no pair exists.
    pairs_audited : int
        Ordered secret pairs ``(member, i, a, b)`` examined.
    epsilon : float or None
        A claimed guarantee to check, if one was given.
    met : bool or None
        ``loss <= epsilon + tolerance`` when ``epsilon`` was given.
    tolerance : float
    """

    loss: float
    scales: tuple[float, ...]
    records: int
    queries: tuple[Mapping[str, Any], ...]
    sensitive: tuple[str, ...]
    worst_node: str | None
    worst_member: str | None
    worst_pair: tuple[Any, Any] | None
    worst_output: tuple[float, ...] | None
    pairs_audited: int
    epsilon: float | None = None
    met: bool | None = None
    tolerance: float = AUDIT_TOLERANCE

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scales"] = list(self.scales)
        d["queries"] = [dict(q) for q in self.queries]
        d["sensitive"] = list(self.sensitive)
        d["worst_pair"] = None if self.worst_pair is None else [str(x) for x in self.worst_pair]
        d["worst_output"] = None if self.worst_output is None else list(self.worst_output)
        if math.isinf(d["loss"]):
            d["loss"] = "inf"
        return d

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        loss = fmt_number(self.loss, 9)
        head = (f"joint audit of {len(self.scales)} releases (Laplace scales "
                f"{', '.join(fmt_number(s) for s in self.scales)}; n = {self.records}): "
                f"worst-case privacy loss {loss}")
        if self.epsilon is not None:
            head += (f" vs claimed epsilon {fmt_number(self.epsilon)}: "
                     f"{'MET' if self.met else 'VIOLATED'}")
        lines = [head, f"{self.pairs_audited} secret pairs audited"]
        if self.worst_pair is not None:
            lines.append(f"worst: {self.worst_node} = {self.worst_pair[0]} vs "
                         f"{self.worst_pair[1]} under {self.worst_member}, outputs "
                         f"{list(self.worst_output or ())}")
        return "\n".join(lines)


# -- per-record contributions -----------------------------------------------------------------


def _contribution(theta: Theta, query: Query, n: int,
                  attrs: tuple[str, ...]) -> Callable[[tuple[int, ...]], Fraction]:
    """A function: record categories over ``attrs`` -> this query's addend (a Fraction)."""
    pos = {a: k for k, a in enumerate(attrs)}
    if isinstance(query, CountQuery):
        own = tuple(query.attributes)
        at = [pos[a] for a in own]
        if query.predicate is None:
            for a in own:
                bernoulli_parameters(theta, a)  # "all equal 1" needs Bernoulli attributes

            def all_ones(x: tuple[int, ...]) -> Fraction:
                return Fraction(int(all(x[k] == 1 for k in at)))

            return all_ones
        if query.domain is None:
            raise undeclared_domain_error(theta, own, str(query.where), "joint audit")
        truth = record_truth(theta, own, query.predicate, query.domain, query.record_states)

        def satisfies(x: tuple[int, ...]) -> Fraction:
            return Fraction(int(truth[tuple(x[k] for k in at)]))

        return satisfies
    if isinstance(query, LinearQuery):
        terms = []
        for a in query.attributes:
            lo, hi = query.bounds[a]
            if lo > 0 or hi < 1:
                raise QueryError(f"joint audit: the bounds of {a!r} ({fmt_number(lo)}, "
                                 f"{fmt_number(hi)}) do not "
                                 "contain 0 and 1, the values of a Bernoulli attribute")
            bernoulli_parameters(theta, a)
            terms.append((pos[a], Fraction(query.weights[a]) / n))

        def linear(x: tuple[int, ...]) -> Fraction:
            return sum((w * x[k] for k, w in terms), Fraction(0))

        return linear
    raise QueryError("the joint auditor supports count queries and linear queries over means, "
                     f"not {getattr(query, 'kind', query)!r}")


def _records(queries: Sequence[Query], records: int | None) -> int:
    counts = {q.records for q in queries if isinstance(q, CountQuery)}
    if records is not None:
        counts.add(check_records(records))
    if len(counts) > 1:
        raise ParameterError(f"the releases read different numbers of records "
                             f"({sorted(counts)}): the joint auditor audits releases on one "
                             "dataset")
    if not counts:
        raise ParameterError("give records (n) to audit linear queries over means")
    return counts.pop()


def _convolve(a: JointLaw, b: JointLaw) -> JointLaw:
    out: JointLaw = {}
    for x, px in a.items():
        for y, py in b.items():
            z = tuple(u + v for u, v in zip(x, y, strict=True))
            out[z] = out.get(z, Fraction(0)) + px * py
    return out


def _n_fold(step: JointLaw, n: int, k: int, budget: Budget | None = None) -> JointLaw:
    """The law of the sum of ``n`` i.i.d. vectors of law ``step``, one record at a time.

    The number of distinct sums is bounded before any work (a sum of ``n`` draws from ``s``
    values takes at most ``C(n + s - 1, s - 1)`` values, and coordinate ``j`` at most that
    bound for its own ``s_j`` values), so a problem too large is refused at once.
    """
    def multisets(s: int) -> int:
        return math.comb(n + s - 1, s - 1)

    per_coordinate = math.prod(multisets(len({v[j] for v in step})) for j in range(k))
    _check_size(min(multisets(len(step)), per_coordinate))
    result: JointLaw = {(Fraction(0),) * k: Fraction(1)}
    if budget is not None:
        budget.start(n, "joint law")
    for _ in range(n):
        result = _convolve(result, step)
        if budget is not None:
            budget.tick()
    return result


def _check_size(size: int) -> None:
    if size > MAX_JOINT_OUTPUTS:
        raise ParameterError(f"the joint law has more than {MAX_JOINT_OUTPUTS} outputs: too large "
                             "for the exact joint auditor (fewer records or releases)")


def _query_sequence(queries: object) -> tuple[Query, ...]:
    """The queries as a tuple; a :class:`QueryError` for anything but a sequence of them."""
    if isinstance(queries, str) or not isinstance(queries, Iterable):
        raise QueryError("queries must be a sequence of quiltpriv queries, got "
                         f"{type(queries).__name__}")
    return tuple(queries)


@renamed_keywords(model="theta")
def joint_laws(
    theta: Any, queries: Sequence[Query], sensitive: str, records: int | None = None, *,
    max_table: int | None = None, budget: Budget | None = None,
    max_memory: int | str | None = None,
) -> tuple[dict[Any, JointLaw], ...]:
    """Exact law of ``(F_1, ..., F_K)`` given each value of ``phi_sensitive``, per member.

    Returns one mapping per member of Theta: state name of ``phi_i`` (with positive
    probability) -> ``{output vector: probability}`` (exact rationals). See the module
    docstring. ``max_table`` and ``max_memory`` bound the exact tables as in
    :func:`joint_audit`.

    Raises
    ------
    ModelError
        An attribute not in the network, or one whose states the query cannot read.
    QueryError
        A query kind the auditor does not support, or a predicate without a declared domain.
    ParameterError
        Queries on different numbers of records, ``records`` missing for linear queries only,
        or a joint law too large (:data:`MAX_JOINT_WORK`).
    """
    theta = as_theta(theta)
    queries = _query_sequence(queries)
    if not queries:
        raise ParameterError("give at least one query")
    for q in queries:
        check_query(q)
    n = _records(queries, records)
    (i,) = theta.check_nodes([sensitive], "sensitive attribute")
    attrs = theta.sort(a for q in queries for a in q.attributes)
    theta.check_nodes(attrs, "query attribute")
    adders = [_contribution(theta, q, n, attrs) for q in queries]
    laws = {a: category_laws(theta, a) for a in attrs}
    cats = [range(len(laws[a][0])) for a in attrs]
    vectors = {x: tuple(f(x) for f in adders) for x in itertools.product(*cats)}

    def law_of(key: tuple[int, ...]) -> JointLaw:
        step: JointLaw = {}
        per = [laws[a][s] for a, s in zip(attrs, key, strict=True)]
        for x, v in vectors.items():
            p = math.prod((law[c] for law, c in zip(per, x, strict=True)), start=Fraction(1))
            if p:
                step[v] = step.get(v, Fraction(0)) + p
        return _n_fold(step, n, len(queries), budget)

    return parameter_mixture(theta, attrs, i, law_of, max_table=max_table,
                             max_memory=max_memory)


# -- worst-case loss --------------------------------------------------------------------------



def _grid_log_densities(laws: Mapping[Any, JointLaw], states: list[Any],
                        scales: tuple[float, ...]) -> tuple[np.ndarray, list[tuple[float, ...]]]:
    """``log p_a(w)`` for every state ``a`` (rows) and every grid point ``w`` (columns)."""
    support = sorted(set().union(*(law.keys() for law in laws.values())))
    k = len(scales)
    coords = [sorted({f[j] for f in support}) for j in range(k)]
    grid_size = math.prod(len(c) for c in coords)
    if grid_size * len(support) > MAX_JOINT_WORK:
        raise ParameterError(f"{grid_size} grid points x {len(support)} joint outputs is too "
                             "much for the exact joint auditor (fewer records or releases)")
    index = [{v: t for t, v in enumerate(c)} for c in coords]
    # kernel[j][grid coordinate, support point]: the log Laplace factor of release j.
    logk = np.zeros((grid_size, len(support)))
    grid_idx = np.indices([len(c) for c in coords]).reshape(k, -1)
    for j in range(k):
        sup_pos = np.array([index[j][f[j]] for f in support])
        if scales[j] > 0:
            vals = np.array([float(v) for v in coords[j]])
            logk += -np.abs(vals[grid_idx[j]][:, None] - vals[sup_pos][None, :]) / scales[j]
        else:
            logk += np.where(grid_idx[j][:, None] == sup_pos[None, :], 0.0, -math.inf)
    out = np.empty((len(states), grid_size))
    for r, a in enumerate(states):
        logp = np.array([log_fraction(laws[a][f]) if laws[a].get(f) else -math.inf
                         for f in support])
        out[r] = logsumexp(logp[None, :] + logk, axis=1)
    points = [tuple(float(coords[j][grid_idx[j][g]]) for j in range(k))
              for g in range(grid_size)]
    return out, points


@renamed_keywords(model="theta")
def joint_audit(
    theta: Any,
    queries: Sequence[Query],
    scales: Sequence[float],
    sensitive: str | Iterable[str],
    *,
    records: int | None = None,
    epsilon: float | None = None,
    tolerance: float = AUDIT_TOLERANCE,
    max_table: int | None = None,
    time_limit: float | None = None,
    max_memory: int | str | None = None,
) -> JointAuditResult:
    """Exact worst-case privacy loss of the joint output of Laplace releases on one dataset.

    Parameters
    ----------
    theta : Theta, pgmpy network or sequence of them
        A small hyperparameter network whose query attributes have record laws the queries
        can read (Bernoulli parameters, or categorical laws for counts with a predicate).
    queries : sequence of CountQuery or LinearQuery
        ``F_1..F_K``, all on the same ``n`` records (a count carries its ``n``).
    scales : sequence of float
        Laplace scale ``s_k >= 0`` of each release (0: released without noise).
    sensitive : str or iterable of str
        The sensitive attributes.
    records : int, optional
        ``n`` when only linear queries are given.
    epsilon : float, optional
        A claimed joint guarantee: ``met`` says whether the loss is within it.
    tolerance : float
        ``met`` is ``loss <= epsilon + tolerance``.
    max_table : int, optional
        Largest exact table (entries); by default as many as ``max_memory`` holds.
    max_memory : int or str, optional
        Memory budget of the exact tables, in bytes or as a size (``"4G"``); default half the
        machine's memory, at :data:`~quiltpriv.utils.memory.EXACT_BYTES_PER_TABLE_ENTRY`
        bytes an entry (:func:`~quiltpriv.utils.memory.exact_table_limit`). A table above it
        is refused with :class:`~quiltpriv.inference.influence.InfluenceTooExpensive`
        naming the budget.
    time_limit : float, optional
        Seconds; past them the audit stops with
        :class:`~quiltpriv.queries.law_bounds.BudgetExceeded` (checked after every record's
        convolution and every secret pair), never a partial number.

    Returns
    -------
    JointAuditResult

    Raises
    ------
    ParameterError
        A problem beyond :data:`MAX_JOINT_OUTPUTS` or :data:`MAX_JOINT_WORK` (refused, not
        approximated).
    BudgetExceeded
        ``time_limit`` was reached.
    """
    max_table = exact_table_limit(max_table, max_memory)
    theta = as_theta(theta)
    queries = _query_sequence(queries)
    scales = tuple(check_positive(s, "scale", allow_zero=True) for s in scales)
    if len(scales) != len(queries):
        raise ParameterError(f"give one scale per query ({len(queries)} queries, "
                             f"{len(scales)} scales)")
    tol = check_positive(tolerance, "tolerance", allow_zero=True)
    eps = None if epsilon is None else check_positive(epsilon, "epsilon", allow_zero=True)
    sens = theta.check_sensitive(sensitive)
    n = _records(queries, records)
    budget = None if time_limit is None else Budget(
        check_positive(time_limit, "time_limit"), what="the exact joint audit")
    worst: tuple[float, Any, Any, Any, Any] = (-math.inf, None, None, None, None)
    pairs = 0
    noise_free = all(s == 0 for s in scales)
    for i in sens:
        for m, laws in enumerate(joint_laws(theta, queries, i, n, max_table=max_table,
                                            budget=budget, max_memory=max_memory)):
            states = list(laws)
            if len(states) < 2:
                continue
            if noise_free:
                for a, b in itertools.permutations(states, 2):
                    pairs += 1
                    loss, f = exact_pair_loss(laws[a], laws[b])
                    if loss > worst[0]:
                        out = None if f is None else tuple(float(x) for x in f)
                        worst = (loss, i, m, (a, b), out)
                continue
            dens, points = _grid_log_densities(laws, states, scales)
            if budget is not None:
                budget.start(len(states) * (len(states) - 1), "secret pairs")
            for ka, kb in itertools.permutations(range(len(states)), 2):
                if budget is not None:
                    budget.tick()
                pairs += 1
                with np.errstate(invalid="ignore"):
                    ratio = dens[ka] - dens[kb]
                # -inf - -inf: an output impossible under both secrets says nothing.
                ratio = np.where(np.isnan(ratio), -math.inf, ratio)
                g = int(np.argmax(ratio))
                if ratio[g] > worst[0]:
                    worst = (float(ratio[g]), i, m, (states[ka], states[kb]), points[g])
    loss = max(worst[0], 0.0) if pairs else 0.0
    _, node, member, pair, output = worst
    return JointAuditResult(
        loss=loss, scales=scales, records=n, queries=tuple(q.to_dict() for q in queries),
        sensitive=sens, worst_node=node,
        worst_member=None if member is None else theta.names[member], worst_pair=pair,
        worst_output=output, pairs_audited=pairs, epsilon=eps,
        met=None if eps is None else bool(loss <= eps + tol), tolerance=tol,
    )
