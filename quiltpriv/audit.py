"""Exact privacy auditor for Laplace releases on Bernoulli hyperparameter networks.

Distributional attribute privacy (Definition 4; spec 01, "The model") asks that for every
member ``theta`` of Theta, every sensitive ``i`` and every two values ``a, b`` of ``phi_i`` with
positive probability, ``P(M(X) in T | phi_i = a) <= e^eps P(M(X) in T | phi_i = b)``. For a
release ``M = F(X) + Lap(s)`` this module computes the *exact* worst-case privacy loss

    L = max_theta max_i max_{a != b} sup_T log P(M in T | a) / P(M in T | b)

and checks ``L <= eps``. Nothing is sampled.

Model assumed (spec 01): the states of every query attribute are Bernoulli parameters (state
names that read as numbers in [0, 1]; for a count with a predicate also categorical laws over
``0..k-1``, as in :mod:`quiltpriv.network_laws`); given ``phi`` the ``n`` records are i.i.d. and the
attributes of a record are independent, ``X_j ~ Bernoulli(phi_j)``.

Queries audited
---------------
* :class:`~quiltpriv.sensitivity.CountQuery` over ``A`` with a predicate (``where``): the
  predicate is read over the model's record categories through the query's declared domain or
  ``record_states`` (:func:`quiltpriv.network_laws.record_truth`; a predicate over undeclared
  data values is refused, never reinterpreted). A record satisfies it with probability
  ``pi(phi_A) = sum over satisfying record states of prod_j P(X_j = x_j | phi_j)``, so
  ``F | phi ~ Binomial(n, pi(phi_A))``; categorical attributes (``0..k-1``) are allowed.
* A CountQuery without a predicate counts the records whose attributes in ``A`` all equal 1
  (the record model's own meaning, as for one attribute in :mod:`quiltpriv.network_laws`):
  ``F | phi ~ Binomial(n, prod_{j in A} phi_j)``.
* :class:`~quiltpriv.sensitivity.LinearQuery` ``sum_j w_j mean_j`` over ``n`` records (bounds
  must contain {0, 1}): given ``phi`` the counts are independent ``Binomial(n, phi_j)``, so the
  law of ``F | phi`` is the convolution of the laws of ``w_j count_j / n``.

Law of ``F`` given a secret: ``P(F = f | phi_i = a) = sum_{phi_A} P(phi_A | phi_i = a)
P(F = f | phi_A)``, exact in rationals (the joint of ``(phi_i, phi_A)`` comes from
:func:`quiltpriv.influence.joint_marginal` on the member's CPDs read as exact decimals, as in
:mod:`quiltpriv.network_laws`).

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

The released noise of :func:`quiltpriv.mechanisms.release` is an exact discrete Laplace on a
fine grid; this auditor audits the ideal continuous Laplace of scale ``s`` that Theorem 4 is
about.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ._validation import check_epsilon, check_positive, check_records
from .errors import ParameterError, QueryError
from .influence import DEFAULT_MAX_TABLE
from .network import as_theta
from .network_laws import (
    _binomial,
    _record_probability,
    bernoulli_parameters,
    category_laws,
    parameter_mixture,
    record_truth,
    undeclared_domain_error,
)
from .sensitivity import CountQuery, LinearQuery, Query

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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["query"] = dict(self.query)
        d["sensitive"] = list(self.sensitive)
        d["worst_pair"] = None if self.worst_pair is None else [str(x) for x in self.worst_pair]
        for k in ("loss", "margin"):
            if math.isinf(d[k]):
                d[k] = "inf" if d[k] > 0 else "-inf"
        return d

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        verdict = "MET" if self.met else "VIOLATED"
        lines = [f"audit: worst-case privacy loss {_fmt(self.loss)} vs epsilon "
                 f"{self.epsilon:g}: {verdict} (margin {_fmt(self.margin)}, tolerance "
                 f"{self.tolerance:g})",
                 f"Laplace scale {self.scale:.6g}, n = {self.records}, "
                 f"{self.pairs_audited} secret pairs audited"]
        if self.worst_pair is not None:
            lines.append(f"worst: {self.worst_node} = {self.worst_pair[0]} vs "
                         f"{self.worst_pair[1]} under {self.worst_member}, output y = "
                         f"{self.worst_output}")
        return "\n".join(lines)


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) and x > 0 else ("-inf" if math.isinf(x) else f"{x:.9g}")


# -- laws of F ----------------------------------------------------------------------------


def _law_builder(query: Query, n: int):
    """Return (attributes, function phi_A -> law of F | phi) for a supported query."""
    if isinstance(query, CountQuery):
        attrs = tuple(query.attributes)

        def count_law(phis: tuple[Fraction, ...]) -> Law:
            p = math.prod(phis, start=Fraction(1))
            return {Fraction(k): pr for k, pr in enumerate(_binomial(n, p)) if pr}

        return attrs, count_law
    if isinstance(query, LinearQuery):
        attrs = tuple(query.attributes)
        for a in attrs:
            lo, hi = query.bounds[a]
            if lo > 0 or hi < 1:
                raise QueryError(f"audit: the bounds of {a!r} ({lo:g}, {hi:g}) do not contain "
                                 "0 and 1, the values of a Bernoulli attribute")
        weights = [Fraction(query.weights[a]) for a in attrs]

        def linear_law(phis: tuple[Fraction, ...]) -> Law:
            law: Law = {Fraction(0): Fraction(1)}
            for w, p in zip(weights, phis, strict=True):
                step = {w * k / n: pr for k, pr in enumerate(_binomial(n, p)) if pr}
                new: Law = {}
                for x, px in law.items():
                    for y, py in step.items():
                        new[x + y] = new.get(x + y, Fraction(0)) + px * py
                law = new
            return law

        return attrs, linear_law
    raise QueryError("the auditor supports count queries and linear queries over means, not "
                     f"{getattr(query, 'kind', query)!r}")


def query_laws(
    model: Any, query: Query, sensitive: str, records: int | None = None, *,
    max_table: int = DEFAULT_MAX_TABLE,
) -> tuple[dict[Any, Law], ...]:
    """Exact law of ``F`` given each value of ``phi_sensitive``, per member of Theta.

    Returns one mapping per member: state name of ``phi_i`` (with positive probability) ->
    law ``{support point: probability}`` (exact rationals). See the module docstring.

    Raises
    ------
    ModelError
        An attribute not in the network or a query attribute whose states are not Bernoulli
        parameters.
    QueryError
        A query kind the auditor does not support.
    ParameterError
        ``records`` missing (linear query) or not a whole number >= 1.
    """
    theta = as_theta(model)
    n = _records(query, records)
    if isinstance(query, CountQuery) and query.predicate is not None:
        return _predicate_laws(theta, query, sensitive, max_table)
    attrs, law_of = _law_builder(query, n)
    theta.check_nodes(attrs, "query attribute")
    (i,) = theta.check_nodes([sensitive], "sensitive attribute")
    params = {a: bernoulli_parameters(theta, a) for a in attrs}
    return parameter_mixture(
        theta, attrs, i,
        lambda key: law_of(tuple(params[a][k] for a, k in zip(attrs, key, strict=True))),
        max_table=max_table)


def _predicate_laws(theta: Any, query: CountQuery, sensitive: str,
                    max_table: int) -> tuple[dict[Any, Law], ...]:
    """Laws of a count with a predicate, read over the record categories (module docstring)."""
    attrs = tuple(query.attributes)
    theta.check_nodes(attrs, "query attribute")
    (i,) = theta.check_nodes([sensitive], "sensitive attribute")
    if query.domain is None:
        raise undeclared_domain_error(theta, attrs, str(query.where), "audit")
    truth = record_truth(theta, attrs, query.predicate, query.domain, query.record_states)
    params = {a: category_laws(theta, a) for a in attrs}
    n = query.records

    def law_of(key: tuple[int, ...]) -> Law:
        p = _record_probability([params[a][k] for a, k in zip(attrs, key, strict=True)], truth)
        return {Fraction(k): pr for k, pr in enumerate(_binomial(n, p)) if pr}

    return parameter_mixture(theta, attrs, i, law_of, max_table=max_table)


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


def _log_fraction(x: Fraction) -> float:
    # math.log takes arbitrary-size ints, so tiny rationals do not underflow.
    return math.log(x.numerator) - math.log(x.denominator)


def _log_densities(law: Law, points: list[Fraction], pts: np.ndarray, s: float) -> np.ndarray:
    """``log sum_k P(f_k) e^{-|y - f_k|/s}`` at every support point, then the two tails."""
    logp = np.array([_log_fraction(law[f]) if law.get(f) else -math.inf for f in points])
    dist = -np.abs(pts[:, None] - pts[None, :]) / s
    at_points = _logsumexp(logp[None, :] + dist, axis=1)
    left = _logsumexp(logp - pts / s, axis=0)
    right = _logsumexp(logp + pts / s, axis=0)
    return np.concatenate([at_points, [left, right]])


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis)


def _pair_loss_exact(pa: Law, pb: Law) -> tuple[float, Fraction | None]:
    """No noise: ``max_f log P(f|a)/P(f|b)`` exactly (``inf`` on a support mismatch)."""
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
    return _log_fraction(best), arg


def audit(
    model: Any,
    query: Query,
    sensitive: str | Iterable[str],
    epsilon: float,
    scale: float,
    *,
    records: int | None = None,
    tolerance: float = AUDIT_TOLERANCE,
    max_table: int = DEFAULT_MAX_TABLE,
) -> AuditResult:
    """Exact worst-case privacy loss of ``F(X) + Lap(scale)`` and whether it meets ``eps``.

    Parameters
    ----------
    model : Theta, pgmpy network or sequence of them
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

    Returns
    -------
    AuditResult
    """
    theta = as_theta(model)
    eps = check_epsilon(epsilon)
    s = check_positive(scale, "scale", allow_zero=True)
    tol = check_positive(tolerance, "tolerance", allow_zero=True)
    if isinstance(sensitive, str):
        sensitive = [sensitive]
    sens = tuple(dict.fromkeys(sensitive))
    if not sens:
        raise ParameterError("give at least one sensitive attribute")
    theta.check_nodes(sens, "sensitive attribute")
    n = _records(query, records)
    worst = (-math.inf, None, None, None, None)
    pairs = 0
    for i in sens:
        per_member = query_laws(theta, query, i, n, max_table=max_table)
        for m, laws in enumerate(per_member):
            states = list(laws)
            if len(states) < 2:
                continue
            if s == 0:
                for a in states:
                    for b in states:
                        if a == b:
                            continue
                        pairs += 1
                        loss, y = _pair_loss_exact(laws[a], laws[b])
                        if loss > worst[0]:
                            worst = (loss, i, m, (a, b), None if y is None else float(y))
                continue
            points = sorted(set().union(*(law.keys() for law in laws.values())))
            pts = np.array([float(f) for f in points])
            dens = np.array([_log_densities(laws[a], points, pts, s) for a in states])
            # The tails equal the end points (module docstring); label them as such.
            labels: list[float | str] = [*map(float, points), f"<= {float(points[0]):g}",
                                         f">= {float(points[-1]):g}"]
            for ka, a in enumerate(states):
                for kb, b in enumerate(states):
                    if ka == kb:
                        continue
                    pairs += 1
                    ratio = dens[ka] - dens[kb]
                    # A tail limit can be inf - inf for a vanishing scale; the support points
                    # carry the same value (module docstring), so drop it.
                    ratio = np.where(np.isnan(ratio), -math.inf, ratio)
                    k = int(np.argmax(ratio))
                    if ratio[k] > worst[0]:
                        worst = (float(ratio[k]), i, m, (a, b), labels[k])
    loss = max(worst[0], 0.0) if pairs else 0.0
    _, node, member, pair, out = worst
    return AuditResult(
        loss=loss, epsilon=eps, met=bool(loss <= eps + tol), margin=eps - loss,
        tolerance=tol, scale=s, records=n, query=query.to_dict(), sensitive=sens,
        worst_node=node, worst_member=None if member is None else theta.names[member],
        worst_pair=pair, worst_output=out, pairs_audited=pairs,
    )


def audit_plan(model: Any, query: Query, plan: Any, *, records: int | None = None,
               tolerance: float = AUDIT_TOLERANCE) -> AuditResult:
    """Audit an APMQM :class:`~quiltpriv.mechanisms.Plan`: its scale, eps and sensitive set."""
    return audit(model, query, [sp.node for sp in plan.sensitive], plan.epsilon, plan.scale,
                 records=records, tolerance=tolerance)


# -- command line -----------------------------------------------------------------------------


def _cmd_audit(args: argparse.Namespace) -> int:
    from ._cli_core import emit, query_from_args, sensitive_from_args, theta_from_args
    from .mechanisms import plan, was_interrupted

    query = query_from_args(args)
    if isinstance(query, LinearQuery) and args.records is None:
        raise ParameterError("auditing a linear query needs --records N (its number of records)")
    theta = theta_from_args(args)
    sens = sensitive_from_args(args)
    if args.scale is None:
        p = plan(theta, query, sens, args.epsilon)
        if was_interrupted(p):
            raise KeyboardInterrupt  # a partial plan is not the one to audit
        scale = p.scale
    else:
        scale = args.scale
    records = None if isinstance(query, CountQuery) else args.records
    result = audit(theta, query, sens, args.epsilon, scale, records=records)
    emit(result.to_json() if args.json else result.explain(), args.output)
    return 0 if result.met else 1


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv audit MODEL --sensitive S --query count|linear ... --epsilon E``."""
    from ._cli_core import add_model_arguments, add_privacy_arguments, add_query_arguments, number

    p = sub.add_parser(
        "audit", help="exact worst-case privacy loss of a Laplace release",
        description="Compute the exact worst-case privacy loss of F(X) + Lap(scale) on a "
                    "hyperparameter network (count: the --where predicate, read over the "
                    "model's record categories through --domain or --record-states, or "
                    "without --where 'all attributes = 1'; linear: sum of w_j * mean_j over "
                    "--records N) and compare it with epsilon. "
                    "Without --scale the APMQM plan's scale is audited. Exit status 0 when "
                    "the loss meets epsilon, 1 when it does not.")
    add_model_arguments(p)
    add_privacy_arguments(p)
    add_query_arguments(p)
    p.add_argument("--scale", type=number("--scale", min_val=0.0), default=None, metavar="B",
                   help="Laplace scale to audit (default: the APMQM plan's)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    p.set_defaults(func=_cmd_audit)
