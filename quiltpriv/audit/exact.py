"""Privacy auditor for Laplace releases on Bernoulli hyperparameter networks (exact, or bounds).

Distributional attribute privacy ([ZOC22, Def. 4]) asks that for every
member ``theta`` of Theta, every sensitive ``i`` and every two values ``a, b`` of ``phi_i`` with
positive probability, ``P(M(X) in T | phi_i = a) <= e^eps P(M(X) in T | phi_i = b)``. For a
release ``M = F(X) + Lap(s)`` this module computes the *exact* worst-case privacy loss

    L = max_theta max_i max_{a != b} sup_T log P(M in T | a) / P(M in T | b)

and checks ``L <= eps``. Nothing is sampled. Up to 200 records ``L`` is exact; above, it is
bracketed by proven bounds ("Large n" below).

Model assumed ([ZOC22, Sec. 5]): the states of every query attribute are Bernoulli parameters (state
names that read as numbers in [0, 1]; for a count with a predicate also categorical laws over
``0..k-1``, as in :mod:`quiltpriv.queries.network_laws`); given ``phi`` the ``n`` records are
i.i.d. and the
attributes of a record are independent, ``X_j ~ Bernoulli(phi_j)``.

Queries audited
---------------
* :class:`~quiltpriv.queries.query.CountQuery` over ``A`` with a predicate (``where``): the
  predicate is read over the model's record categories through the query's declared domain or
  ``record_states`` (:func:`quiltpriv.queries.network_laws.record_truth`; a predicate over
  undeclared data values is refused, never reinterpreted). A record satisfies it with probability
  ``pi(phi_A) = sum over satisfying record states of prod_j P(X_j = x_j | phi_j)``, so
  ``F | phi ~ Binomial(n, pi(phi_A))``; categorical attributes (``0..k-1``) are allowed.
* A CountQuery without a predicate counts the records whose attributes in ``A`` all equal 1
  (the record model's own meaning, as for one attribute in :mod:`quiltpriv.queries.network_laws`):
  ``F | phi ~ Binomial(n, prod_{j in A} phi_j)``.
* :class:`~quiltpriv.queries.query.LinearQuery` ``sum_j w_j mean_j`` over ``n`` records (bounds
  must contain {0, 1}): given ``phi`` the counts are independent ``Binomial(n, phi_j)``, so the
  law of ``F | phi`` is the convolution of the laws of ``w_j count_j / n``.

Law of ``F`` given a secret: ``P(F = f | phi_i = a) = sum_{phi_A} P(phi_A | phi_i = a)
P(F = f | phi_A)``, exact in rationals (the joint of ``(phi_i, phi_A)`` comes from
:func:`quiltpriv.inference.influence.joint_marginal` on the member's CPDs read as exact decimals,
as in :mod:`quiltpriv.queries.network_laws`).

Supremum over outputs (no noise, ``s = 0``): the output is ``F`` itself, so
``L = max_f log P(f | a) / P(f | b)`` over ``f`` with ``P(f | a) > 0``; ``+inf`` if
``P(f | b) = 0`` for such an ``f``. Computed exactly in rationals, then one logarithm.

Supremum over outputs (``s > 0``): the loss of a continuous output is the supremum of the
density ratio ``g(y) = p_a(y) / p_b(y)``, ``p_a(y) = sum_k P(f_k | a) e^{-|y - f_k| / s}``
(the common factor ``1 / 2s`` cancels). Let ``f_0 < ... < f_K`` be the support points. On
``[f_j, f_{j+1}]`` every term with ``k <= j`` is ``e^{f_k/s} e^{-y/s}`` and every other term
is ``e^{-f_k/s} e^{y/s}``, so with ``v = e^{2y/s}``

    g(y) = (A_a + C_a v) / (A_b + C_b v),   A_x = sum_{k<=j} P(f_k|x) e^{f_k/s},
                                            C_x = sum_{k>j} P(f_k|x) e^{-f_k/s},

a Moebius function of ``v`` whose derivative has the constant sign of ``C_a A_b - A_a C_b``:
``g`` is monotone on the interval and its supremum there is attained at an endpoint. Left of
``f_0`` (right of ``f_K``) every term has the same form, ``g`` is constant and equals
``g(f_0)`` (``g(f_K)``); these tail limits are
``sum_k P(f_k|a) e^{-f_k/s} / sum_k P(f_k|b) e^{-f_k/s}`` and the same with ``e^{+f_k/s}``.
Hence ``L = max_k log g(f_k)``, evaluated with log-sum-exp; the tail limits are computed
separately as well (they must agree) and are reported if they attain the maximum.

Large n: proven bounds instead of exact values
----------------------------------------------
The exact laws have ``O(n)``-digit probabilities and cost ``O(n^2)`` and more; above
:data:`~quiltpriv.queries.network_laws.EXACT_RECORDS` records (200) a count is audited from
certified float64 laws (:mod:`quiltpriv.queries.law_bounds`): given a secret its law is the
binomial mixture ``sum_pi w_pi Binomial(n, pi)``, held as ``log P(k)`` for ``k = 0..n`` with a
proven bound on the error. On the support ``0..n`` the sums of the previous section are two
running sums, ``log sum_{j <= k} P(j) e^{-(k - j)/s}`` and ``log sum_{j > k} P(j) e^{-(j - k)/s}``,
each ``O(n)`` (:func:`~quiltpriv.queries.law_bounds.laplace_log_density`); ``L`` is the maximum
over ``k`` of their log-ratio, and its error is at most the sum of the two densities' bounds
(:func:`~quiltpriv.queries.law_bounds.pair_loss_bounds`). The audit therefore reports a bracket
``loss_lower <= L <= loss`` (about ``1e-6`` wide at ``n = 10^6``) and decides only what the
bracket proves: ``MET`` needs ``loss <= eps + tolerance``, ``VIOLATED`` needs
``loss_lower > eps + tolerance``, and anything in between is ``UNDECIDED`` -- never ``MET``.

* A linear query over one attribute, ``w C / n`` with ``C ~ Binomial(n, phi)``: ``w C / n +
  Lap(s)`` is a bijective image of ``C + Lap(s n / |w|)``, so it has that count's loss.
  Over several attributes the law lives on up to ``(n + 1)^|A|`` points: the exact path, up to
  :data:`MAX_EXACT_SUPPORT` points, and a refusal beyond.
* Scales below ``(n + 1) / 10^12`` would make the running sums lose their precision. There the
  loss is bracketed by monotonicity instead: for ``s < t``, ``Lap(t)`` is ``Lap(s)`` plus
  independent noise (a point mass at 0 with weight ``(s/t)^2``, else ``Lap(t)``), so the loss
  can only fall as the scale grows; ``L(0) >= L(s) >= L(s_min)`` with ``s_min = (n + 1) /
  10^12``.
* A time limit stops the audit between steps: the pairs audited so far give a lower bound
  (``VIOLATED`` if it already exceeds ``eps``), the upper bound is then unknown (``inf``) and
  the verdict ``UNDECIDED``.

The released noise of :func:`quiltpriv.mechanisms.apmqm_release.release` is an exact discrete
Laplace on a fine grid; this auditor audits the ideal continuous Laplace of scale ``s`` that
Theorem 4 is about.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.special import logsumexp

from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.mechanisms.apmqm import Plan
from quiltpriv.model.network import as_theta
from quiltpriv.queries.law_bounds import (
    Budget,
    BudgetExceeded,
    laplace_log_density,
    mixture_log_pmf,
    pair_loss_bounds,
)
from quiltpriv.queries.network_laws import (
    EXACT_RECORDS,
    LOG_PMF_CACHE_FLOATS,
    MAX_EXACT_RECORDS,
    MAX_RECORDS,
    LogPmfCache,
    RecordProbability,
    bernoulli_parameters,
    binomial_pmf,
    category_laws,
    parameter_mixture,
    pi_mixtures,
    record_probability,
    record_truth,
    undeclared_domain_error,
)
from quiltpriv.queries.query import CountQuery, LinearQuery, Query
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number
from quiltpriv.utils.memory import exact_table_limit
from quiltpriv.utils.validation import (
    check_epsilon,
    check_instance,
    check_positive,
    check_records,
)

__all__ = ["AUDIT_TOLERANCE", "AuditResult", "audit", "audit_plan", "query_laws"]

#: A release passes when its audited loss is at most ``eps + AUDIT_TOLERANCE``. The loss is
#: exact up to floating-point rounding of the final logarithms (relative error ~1e-15), and
#: the planner rounds influences up by 1e-10 relative, so 1e-9 separates rounding from a
#: real violation.
AUDIT_TOLERANCE = 1e-9

#: A law of F: support point -> exact probability (support points are exact rationals).
Law = dict[Fraction, Fraction]


@dataclass(frozen=True)
class AuditResult:
    """The exact worst-case privacy loss of ``F(X) + Lap(scale)``.

    Attributes
    ----------
    loss : float
        The audited loss ``L`` (module docstring); ``0`` when no pair of secrets exists,
        ``inf`` when some output is possible under one secret and impossible under another.
    epsilon : float
        The eps the release should meet.
    met : bool
        ``loss <= epsilon + tolerance``.
    margin : float
        ``epsilon - loss`` (negative for a violation).
    tolerance : float
        The numerical tolerance of ``met``.
    scale : float
        The Laplace scale audited (0: no noise).
    records : int
        ``n``.
    query : mapping
        The query's ``to_dict()``.
    sensitive : tuple of str
        The sensitive attributes audited.
    worst_node, worst_member, worst_pair, worst_output
        Where the worst loss is attained: sensitive attribute, member of Theta (its name),
        the secret pair ``(a, b)`` (state names; loss of ``a`` against ``b``) and the output
        ``y`` (a support point of ``F``, or ``"<= f_0"`` / ``">= f_K"`` for a tail). ``None``
        when no pair exists.
    pairs_audited : int
        Secret pairs ``(member, i, a, b)`` examined (ordered pairs).
    loss_lower : float
        A proven lower bound of the loss (``loss`` itself is a proven upper bound); equal to
        ``loss`` for the exact rational laws.
    verdict : str
        ``"MET"`` (``loss <= epsilon + tolerance``), ``"VIOLATED"`` (``loss_lower > epsilon +
        tolerance``) or ``"UNDECIDED"`` (neither is proven: the loss is within the audit's error
        bound of ``epsilon``, or the time limit stopped it before every pair was audited).
    arithmetic : str
        ``"exact"`` (rational laws, float logarithms at the end) or ``"certified float64"``
        (:mod:`quiltpriv.queries.law_bounds`, for ``n`` above ``EXACT_RECORDS``).
    complete : bool
        False when the time limit stopped the audit (``loss`` is then ``inf``: unknown).
    notes : tuple of str
    """

    loss: float
    epsilon: float
    met: bool
    margin: float
    tolerance: float
    scale: float
    records: int
    query: Mapping[str, Any]
    sensitive: tuple[str, ...]
    worst_node: str | None
    worst_member: str | None
    worst_pair: tuple[Any, Any] | None
    worst_output: float | str | None
    pairs_audited: int
    loss_lower: float = math.nan
    verdict: str = ""
    arithmetic: str = "exact"
    complete: bool = True
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if math.isnan(self.loss_lower):
            object.__setattr__(self, "loss_lower", self.loss)
        if not self.verdict:
            object.__setattr__(self, "verdict", "MET" if self.met else "VIOLATED")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["query"] = dict(self.query)
        d["sensitive"] = list(self.sensitive)
        d["worst_pair"] = None if self.worst_pair is None else [str(x) for x in self.worst_pair]
        d["notes"] = list(self.notes)
        for k in ("loss", "margin", "loss_lower"):
            if math.isinf(d[k]):
                d[k] = "inf" if d[k] > 0 else "-inf"
        return d

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        if self.loss_lower == self.loss:
            loss = fmt_number(self.loss, 9)
        else:
            loss = f"in [{fmt_number(self.loss_lower, 9)}, {fmt_number(self.loss, 9)}]"
        lines = [f"audit: worst-case privacy loss {loss} vs epsilon "
                 f"{fmt_number(self.epsilon)}: {self.verdict} (margin "
                 f"{fmt_number(self.margin, 9)}, "
                 "tolerance "
                 f"{fmt_number(self.tolerance)})",
                 f"Laplace scale {fmt_number(self.scale, rounding='up')}, n = {self.records}, "
                 f"{self.pairs_audited} secret pairs audited ({self.arithmetic} laws)"]
        if self.worst_pair is not None:
            lines.append(f"worst: {self.worst_node} = {self.worst_pair[0]} vs "
                         f"{self.worst_pair[1]} under {self.worst_member}, output y = "
                         f"{self.worst_output}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


# -- laws of F ----------------------------------------------------------------------------


def _law_builder(query: Query, n: int
                 ) -> tuple[tuple[str, ...], Callable[[tuple[Fraction, ...]], Law] | None]:
    """Return (attributes, function phi_A -> law of F | phi) for a supported query.

    For a count the function is None: its law is ``Binomial(n, pi(phi_A))`` with ``pi`` from
    :func:`_count_probability`.
    """
    if isinstance(query, CountQuery):
        # A count's law depends on its predicate: _count_probability, read once per audit.
        return tuple(query.attributes), None
    if isinstance(query, LinearQuery):
        attrs = tuple(query.attributes)
        for a in attrs:
            lo, hi = query.bounds[a]
            if lo > 0 or hi < 1:
                raise QueryError(f"audit: the bounds of {a!r} ({fmt_number(lo)}, "
                                 f"{fmt_number(hi)}) do not contain "
                                 "0 and 1, the values of a Bernoulli attribute")
        weights = [Fraction(query.weights[a]) for a in attrs]

        def linear_law(phis: tuple[Fraction, ...]) -> Law:
            law: Law = {Fraction(0): Fraction(1)}
            for w, p in zip(weights, phis, strict=True):
                step = {w * k / n: pr for k, pr in enumerate(binomial_pmf(n, p)) if pr}
                new: Law = {}
                for x, px in law.items():
                    for y, py in step.items():
                        new[x + y] = new.get(x + y, Fraction(0)) + px * py
                law = new
            return law

        return attrs, linear_law
    raise QueryError("the auditor supports count queries and linear queries over means, not "
                     f"{getattr(query, 'kind', query)!r}")


@renamed_keywords(model="theta")
def query_laws(
    theta: Any, query: Query, sensitive: str, records: int | None = None, *,
    max_table: int | None = None, max_memory: int | str | None = None,
) -> tuple[dict[Any, Law], ...]:
    """Exact law of ``F`` given each value of ``phi_sensitive``, per member of Theta.

    Returns one mapping per member: state name of ``phi_i`` (with positive probability) ->
    law ``{support point: probability}`` (exact rationals). See the module docstring.
    ``max_table`` and ``max_memory`` bound the exact tables as in :func:`audit`.

    Raises
    ------
    ModelError
        An attribute not in the network or a query attribute whose states are not Bernoulli
        parameters.
    QueryError
        A query kind the auditor does not support.
    ParameterError
        ``records`` missing (linear query), not a whole number >= 1, or above
        :data:`~quiltpriv.queries.network_laws.MAX_EXACT_RECORDS`.
    """
    theta = as_theta(theta)
    n = _records(query, records)
    if n > MAX_EXACT_RECORDS:
        raise ParameterError(
            f"exact rational laws over n = {n} records are too expensive (at most "
            f"{MAX_EXACT_RECORDS} records; their cost grows like n^2); audit uses certified "
            "float64 laws at any n")
    return _query_laws(theta, query, sensitive, n, exact_table_limit(max_table, max_memory),
                       None)


def _query_laws(theta: Any, query: Query, sensitive: str, n: int, max_table: int,
                probability: RecordProbability | None) -> tuple[dict[Any, Law], ...]:
    """:func:`query_laws` on checked arguments; a count may bring its record probability."""
    attrs, law_of = _law_builder(query, n)
    theta.check_nodes(attrs, "query attribute")
    (i,) = theta.check_nodes([sensitive], "sensitive attribute")
    if isinstance(query, CountQuery):
        pi = _count_probability(theta, query) if probability is None else probability

        def count_law(key: tuple[int, ...]) -> Law:
            return {Fraction(k): pr for k, pr in enumerate(binomial_pmf(n, pi(key))) if pr}

        return parameter_mixture(theta, attrs, i, count_law, max_table=max_table)
    assert law_of is not None  # _law_builder gives one for every query but a count
    params = {a: bernoulli_parameters(theta, a) for a in attrs}
    return parameter_mixture(
        theta, attrs, i,
        lambda key: law_of(tuple(params[a][k] for a, k in zip(attrs, key, strict=True))),
        max_table=max_table)


def _count_probability(theta: Any, query: Query) -> RecordProbability:
    """``P(a record is counted | phi_A)`` (module docstring), keyed by state indices of ``A``.

    A count with a predicate reads it over the record categories through the query's declared
    domain or record states (:func:`~quiltpriv.queries.network_laws.record_truth`), and is refused
    without them; a count without one, or a linear query over one attribute (whose count of
    ones this is), counts records whose attributes all equal 1.
    """
    attrs = tuple(query.attributes)
    if isinstance(query, CountQuery) and query.predicate is not None:
        if query.domain is None:
            raise undeclared_domain_error(theta, attrs, str(query.where), "audit")
        truth = record_truth(theta, attrs, query.predicate, query.domain, query.record_states)
        laws = {a: category_laws(theta, a) for a in attrs}

        def satisfied(key: tuple[int, ...]) -> Fraction:
            return record_probability([laws[a][k] for a, k in zip(attrs, key, strict=True)],
                                       truth)

        return satisfied
    params = {a: bernoulli_parameters(theta, a) for a in attrs}

    def all_ones(key: tuple[int, ...]) -> Fraction:
        return math.prod((params[a][k] for a, k in zip(attrs, key, strict=True)),
                         start=Fraction(1))

    return all_ones


def _records(query: Query, records: int | None) -> int:
    if isinstance(query, CountQuery):
        if records is not None and check_records(records) != query.records:
            raise ParameterError(f"records = {records} disagrees with the count query's "
                                 f"n = {query.records}")
        return query.records
    if not isinstance(query, LinearQuery):
        _law_builder(query, 1)  # raises the unsupported-query error
    if records is None:
        raise ParameterError("give records (n) to audit a linear query over means")
    return check_records(records)


# -- worst-case loss --------------------------------------------------------------------------


def log_fraction(x: Fraction) -> float:
    """``log(x)`` of a positive rational, with no underflow for tiny ``x``."""
    # math.log takes arbitrary-size ints, so tiny rationals do not underflow.
    return math.log(x.numerator) - math.log(x.denominator)


def _log_densities(law: Law, points: list[Fraction], pts: np.ndarray, s: float) -> np.ndarray:
    """``log sum_k P(f_k) e^{-|y - f_k|/s}`` at every support point, then the two tails."""
    logp = np.array([log_fraction(law[f]) if law.get(f) else -math.inf for f in points])
    dist = -np.abs(pts[:, None] - pts[None, :]) / s
    at_points = logsumexp(logp[None, :] + dist, axis=1)
    left = logsumexp(logp - pts / s, axis=0)
    right = logsumexp(logp + pts / s, axis=0)
    return np.concatenate([at_points, [left, right]])



def exact_pair_loss(pa: Mapping[Any, Fraction],
                    pb: Mapping[Any, Fraction]) -> tuple[float, Any]:
    """No noise: ``max_f log P(f|a)/P(f|b)`` exactly (``inf`` on a support mismatch).

    ``pa`` and ``pb`` map outputs ``f`` (a count, or a tuple of counts for several releases)
    to their exact probabilities; returns the loss and the ``f`` attaining it.
    """
    best: Fraction | None = None
    arg = None
    for f, p in pa.items():
        if not p:
            continue
        q = pb.get(f, Fraction(0))
        if not q:
            return math.inf, f
        r = p / q
        if best is None or r > best:
            best, arg = r, f
    if best is None:
        return -math.inf, None
    return log_fraction(best), arg


@renamed_keywords(model="theta")
def audit(
    theta: Any,
    query: Query,
    sensitive: str | Iterable[str],
    epsilon: float,
    scale: float,
    *,
    records: int | None = None,
    tolerance: float = AUDIT_TOLERANCE,
    max_table: int | None = None,
    time_limit: float | None = None,
    progress: bool = False,
    exact_records: int = EXACT_RECORDS,
    max_memory: int | str | None = None,
) -> AuditResult:
    """Worst-case privacy loss of ``F(X) + Lap(scale)`` and whether it meets ``eps``.

    Up to ``exact_records`` records the laws of ``F`` are exact rationals (module docstring).
    Above, a count's laws are certified float64 arrays and the loss is bracketed by proven
    bounds (:mod:`quiltpriv.queries.law_bounds`, ``O(n)`` per distinct success probability and per
    secret): the verdict is ``MET`` only when the upper bound meets ``eps + tolerance`` and
    ``VIOLATED`` only when the lower bound exceeds it; in between it is ``UNDECIDED``, never
    ``MET`` (module docstring, "Large n").

    Parameters
    ----------
    theta : Theta, pgmpy network or sequence of them
        A hyperparameter network whose query attributes have Bernoulli-parameter states.
    query : CountQuery or LinearQuery
        Count: its predicate over the record categories (a declared domain or record_states
        is required), or without one "every attribute in A equals 1". Linear:
        ``sum w_j mean_j``.
    sensitive : str or iterable of str
        The sensitive attributes ``C``.
    epsilon : float
        The eps the release should meet (Definition 4).
    scale : float
        Laplace scale ``s >= 0`` of the release (0: the exact value is released).
    records : int, optional
        ``n`` for a linear query (a count query carries its own).
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
        Seconds. When it is reached the audit stops: ``VIOLATED`` if the pairs audited so far
        already prove a violation, else ``UNDECIDED`` (``complete=False``), never ``MET``.
    progress : bool
        Progress bar (tqdm) when the audit takes more than half a second.
    exact_records : int
        Largest ``n`` audited with exact rational laws.

    Returns
    -------
    AuditResult

    Raises
    ------
    QueryError
        A count whose predicate has no declared domain or record states
        (:func:`~quiltpriv.queries.network_laws.undeclared_domain_error`) or that
        :func:`~quiltpriv.queries.network_laws.record_truth` refuses; raised before any law is
        computed.
    BudgetExceeded
        ``n`` beyond the certified laws (:data:`~quiltpriv.queries.network_laws.MAX_RECORDS`), or a
        linear query over several attributes with more than :data:`MAX_EXACT_SUPPORT`
        possible outputs.
    """
    max_table = exact_table_limit(max_table, max_memory)
    theta = as_theta(theta)
    eps = check_epsilon(epsilon)
    s = check_positive(scale, "scale", allow_zero=True)
    tol = check_positive(tolerance, "tolerance", allow_zero=True)
    limit = None if time_limit is None else check_positive(time_limit, "time_limit")
    if isinstance(sensitive, str):
        sensitive = [sensitive]
    sens = tuple(dict.fromkeys(sensitive))
    if not sens:
        raise ParameterError("give at least one sensitive attribute")
    theta.check_nodes(sens, "sensitive attribute")
    n = _records(query, records)
    attrs, _ = _law_builder(query, n)  # the query kind and a linear query's bounds
    theta.check_nodes(attrs, "query attribute")
    # One record probability (one truth table) for both paths; a predicate the model cannot
    # read is refused here, before any law is computed.
    probability = _count_probability(theta, query) if isinstance(query, CountQuery) else None
    exact = _exact_fits(query, n, exact_records)
    notes: list[str] = []
    budget = Budget(limit, progress, "the audit")
    if exact:
        found = _exact_pairs(theta, query, sens, n, s, max_table, budget, probability)
    else:
        found = _certified_pairs(theta, query, sens, n, s, max_table, budget, notes,
                                 probability or _count_probability(theta, query))
    best: tuple[float, float, str | None, int | None, Any, Any] = (
        -math.inf, -math.inf, None, None, None, None)
    pairs, complete = 0, True
    try:
        for lo, hi, node, member, pair, out in found:
            pairs += 1
            if hi > best[1] or best[2] is None:
                best = (best[0], hi, node, member, pair, out)
            best = (max(best[0], lo), *best[1:])
    except BudgetExceeded as exc:
        complete = False
        notes.append(f"stopped: {exc}")
    finally:
        budget.close()
    lower = max(best[0], 0.0) if pairs else 0.0
    loss = (max(best[1], 0.0) if pairs else 0.0) if complete else math.inf
    if loss <= eps + tol:
        verdict = "MET"
    elif lower > eps + tol:
        verdict = "VIOLATED"
    else:
        verdict = "UNDECIDED"
        if complete:
            notes.append(f"the loss is in [{fmt_number(lower, 9)}, {fmt_number(loss, 9)}]: "
                         "within the audit's "
                         f"error bound of epsilon + tolerance = {fmt_number(eps + tol, 9)}; "
                         "neither MET nor "
                         "VIOLATED is proven")
    _, _, worst_node, worst_member, pair, out = best
    return AuditResult(
        loss=loss, epsilon=eps, met=verdict == "MET", margin=eps - loss,
        tolerance=tol, scale=s, records=n, query=query.to_dict(), sensitive=sens,
        worst_node=worst_node,
        worst_member=None if worst_member is None else theta.names[worst_member],
        worst_pair=pair, worst_output=out, pairs_audited=pairs, loss_lower=lower,
        verdict=verdict, arithmetic="exact" if exact else "certified float64",
        complete=complete, notes=tuple(notes),
    )


#: Most output values of a linear query over several attributes the exact auditor handles
#: (its supremum builds a matrix of that size squared).
MAX_EXACT_SUPPORT = 4096
#: Below ``scale = n / _MAX_DECAY_SPAN`` the certified Laplace sums would lose all precision;
#: the loss is then bracketed by monotonicity instead (module docstring, "Large n").
_MAX_DECAY_SPAN = 1e12

#: One audited secret pair: (loss lower bound, upper bound, node, member, (a, b), output).
PairLoss = tuple[float, float, str, int, tuple[Any, Any], Any]


def _exact_fits(query: Query, n: int, exact_records: int) -> bool:
    """Whether the exact rational path audits ``query``; refuse what neither path can do."""
    if isinstance(query, LinearQuery) and len(query.attributes) > 1:
        size = (n + 1) ** len(query.attributes)
        if size > MAX_EXACT_SUPPORT:
            raise BudgetExceeded(
                f"audit: a linear query over {len(query.attributes)} attributes at n = {n} "
                f"has up to {size:,} possible values; the auditor handles at most "
                f"{MAX_EXACT_SUPPORT:,} (a count, or a linear query over one attribute, at any "
                f"n up to {MAX_RECORDS:,})")
        return True
    if n > exact_records and n > MAX_RECORDS:
        raise BudgetExceeded(
            f"audit: n = {n} records is beyond the laws of the count quiltpriv can compute "
            f"(at most {MAX_RECORDS:,} records: each law is held as arrays of n + 1 floats)")
    return n <= exact_records


def _exact_pairs(theta: Any, query: Query, sens: tuple[str, ...], n: int, s: float,
                 max_table: int, budget: Budget,
                 probability: RecordProbability | None) -> Iterator[PairLoss]:
    """Every ordered secret pair's loss from the exact rational laws (module docstring)."""
    budget.start(len(sens), "audit (exact laws)")
    for i in sens:
        per_member = _query_laws(theta, query, i, n, max_table, probability)
        for m, laws in enumerate(per_member):
            states = list(laws)
            if len(states) < 2:
                continue
            if s == 0:
                for a in states:
                    for b in states:
                        if a != b:
                            loss, y = exact_pair_loss(laws[a], laws[b])
                            yield loss, loss, i, m, (a, b), None if y is None else float(y)
                continue
            points = sorted(set().union(*(law.keys() for law in laws.values())))
            pts = np.array([float(f) for f in points])
            dens = np.array([_log_densities(laws[a], points, pts, s) for a in states])
            # The tails equal the end points (module docstring); label them as such.
            labels: list[float | str] = [*map(float, points), f"<= {fmt_number(float(points[0]))}",
                                         f">= {fmt_number(float(points[-1]))}"]
            for ka, a in enumerate(states):
                for kb, b in enumerate(states):
                    if ka == kb:
                        continue
                    ratio = dens[ka] - dens[kb]
                    # A tail limit can be inf - inf for a vanishing scale; the support points
                    # carry the same value (module docstring), so drop it.
                    ratio = np.where(np.isnan(ratio), -math.inf, ratio)
                    k = int(np.argmax(ratio))
                    yield float(ratio[k]), float(ratio[k]), i, m, (a, b), labels[k]
        budget.tick()


def _certified_pairs(theta: Any, query: Query, sens: tuple[str, ...], n: int, s: float,
                     max_table: int, budget: Budget, notes: list[str],
                     probability: RecordProbability) -> Iterator[PairLoss]:
    """Every ordered secret pair's loss bracket from certified float64 laws.

    A count is ``Binomial(n, pi)`` given the hyperparameters; a linear query over one
    attribute is ``w count / n`` with ``count ~ Binomial(n, phi)``, and ``w C / n + Lap(s)``
    is a bijective image of ``C + Lap(s n / |w|)``, so it has the same loss.
    """
    attrs = tuple(query.attributes)
    if isinstance(query, LinearQuery):
        w = Fraction(query.weights[attrs[0]])
        scale = math.inf if w == 0 else float(Fraction(s) * n / abs(w))

        def label(k: int) -> float:
            return float(w * k / n)
    else:
        scale = s

        def label(k: int) -> float:
            return float(k)

    mixtures = {i: pi_mixtures(theta, attrs, i, probability, max_table) for i in sens}
    sandwich = 0 < scale < math.inf and (n + 1) / scale > _MAX_DECAY_SPAN
    smallest = (n + 1) / _MAX_DECAY_SPAN
    notes.append(f"laws of the count over n = {n} records in float64 with proven error bounds "
                 f"(exact rationals up to {EXACT_RECORDS} records); the loss is bracketed")
    if scale == math.inf:
        notes.append("the query is constant (weight 0): every output law is the same")
    if sandwich:
        notes.append(f"the Laplace scale is below (n + 1) / {fmt_number(_MAX_DECAY_SPAN)}: the "
                     "loss is "
                     "bracketed between its value without noise (an upper bound) and its value "
                     f"at scale {fmt_number(smallest)} (a lower bound): a larger scale never "
                     "raises the "
                     "loss, Laplace(t) being Laplace(s) plus independent noise for s < t")
    jobs = [(i, m, per) for m in range(len(theta.members)) for i in sens
            for per in [mixtures[i][m]] if len(per) >= 2]
    budget.start(sum(len(per) + len(per) * (len(per) - 1) for _, _, per in jobs),
                 "audit (certified laws)")
    log_pmf = LogPmfCache(n, LOG_PMF_CACHE_FLOATS)
    for i, m, per in jobs:
        states = list(per)
        upper: dict[Any, tuple[np.ndarray, float]] = {}
        lower: dict[Any, tuple[np.ndarray, float]] = {}
        for a in states:
            if scale == math.inf:
                budget.tick()
                continue
            mix, err = mixture_log_pmf(list(per[a].items()), log_pmf, budget.check)
            if scale == 0:
                upper[a] = lower[a] = (mix, err)
            elif sandwich:
                upper[a] = (mix, err)
                lower[a] = laplace_log_density(mix, err, smallest)
            else:
                upper[a] = lower[a] = laplace_log_density(mix, err, scale)
            budget.tick()
        for a in states:
            for b in states:
                if a == b:
                    continue
                if scale == math.inf or per[a] == per[b]:
                    yield 0.0, 0.0, i, m, (a, b), 0.0 if scale == math.inf else None
                else:
                    lo, _, _ = pair_loss_bounds(*lower[a], *lower[b])
                    _, hi, k = pair_loss_bounds(*upper[a], *upper[b])
                    yield lo, hi, i, m, (a, b), None if k is None else label(k)
                budget.tick()


@renamed_keywords(model="theta")
def audit_plan(theta: Any, query: Query, plan: Any, *, records: int | None = None,
               tolerance: float = AUDIT_TOLERANCE,
               max_memory: int | str | None = None) -> AuditResult:
    """Audit an APMQM :class:`~quiltpriv.mechanisms.apmqm.Plan`: its scale, eps and sensitive
    set (``max_memory`` as in :func:`audit`)."""
    check_instance(plan, Plan, "plan")
    return audit(theta, query, [sp.sensitive for sp in plan.sensitive], plan.epsilon, plan.scale,
                 records=records, tolerance=tolerance, max_memory=max_memory)
