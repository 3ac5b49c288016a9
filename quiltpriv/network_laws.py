"""Exact laws of a count on a hyperparameter network, for the Wasserstein Mechanism.

Zhang, Ohrimenko and Cummings, Section 6 (Algorithm 4, Example 3; spec 02). On a hyperparameter
network whose states are Bernoulli parameters (state names that parse as numbers in [0, 1]),
records are i.i.d. given ``phi`` and ``X_j^r ~ Bernoulli(phi_j)``. For the count
``F = #{r : X_j^r = 1}`` over ``n`` records and the secret ``phi_i = a``::

    P(F = k | phi_i = a) = sum over phi_j of  P(phi_j | phi_i = a) * Binomial(n, phi_j)(k)

(``Binomial(n, a)`` itself when ``j = i``). These laws, one set per member of Theta, go to
:func:`quiltpriv.wasserstein.wasserstein_mechanism`, which takes the sup of ``W_inf`` over
secret pairs of the same attribute and over Theta.

Exactness (the conventions of :mod:`quiltpriv.wasserstein`): ``W_inf`` is discontinuous in the
probabilities, so everything is computed in :class:`fractions.Fraction`. Floats are read as the
decimals they print as (a state ``0.56`` is ``14/25``; a CPD entry ``0.35`` is ``7/20``), every
CPD column is renormalised exactly, and ``P(phi_i, phi_j)`` is obtained by exact variable
elimination (the core's :func:`quiltpriv.influence.joint_marginal` run on the Fraction tables).
The laws are thus the exact laws of the model as printed; no rounding can hide a sliver of mass.

Predicate: for one binary attribute any predicate is ``X_j = 1``, ``X_j = 0`` (``n - F``, the
same ``W_inf`` by reflection) or constant (``W_inf = 0``), so the law of ``X_j = 1`` gives a
``W`` that is exact or an over-estimate. Counts over several attributes need the per-record
joint law of the attributes and are refused here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ._validation import check_epsilon, check_records
from .errors import ModelError, ParameterError, QueryError
from .influence import DEFAULT_MAX_TABLE, joint_marginal
from .network import CPD, Theta, as_theta
from .sensitivity import CountQuery
from .wasserstein import WassersteinResult, wasserstein_mechanism

__all__ = [
    "CountLaws",
    "NetworkWassersteinResult",
    "bernoulli_parameters",
    "count_laws",
    "network_wasserstein",
]

#: A law of F: support 0..n and exact probabilities.
Law = tuple[tuple[int, ...], tuple[Fraction, ...]]


def _decimal(x: Any) -> Fraction:
    """A number as an exact rational, floats read as the decimal they print as."""
    if isinstance(x, bool):
        raise ValueError(x)
    if isinstance(x, Fraction | int | np.integer):
        return Fraction(int(x)) if not isinstance(x, Fraction) else x
    if isinstance(x, float | np.floating):
        if not math.isfinite(float(x)):
            raise ValueError(x)
        return Fraction(repr(float(x)))
    return Fraction(str(x).strip())


def bernoulli_parameters(theta: Theta, node: str) -> tuple[Fraction, ...]:
    """The states of ``node`` read as Bernoulli parameters (exact rationals in [0, 1]).

    Raises
    ------
    ModelError
        If a state name is not a number in [0, 1].
    """
    (node,) = theta.check_nodes([node], "attribute")
    out = []
    for s in theta.states[node]:
        try:
            p = _decimal(s)
        except (ValueError, ZeroDivisionError, TypeError):
            raise ModelError(
                f"state {s!r} of {node!r} is not a Bernoulli parameter (a number in [0, 1]); "
                "the count laws need states that are success probabilities") from None
        if not 0 <= p <= 1:
            raise ModelError(f"state {s!r} of {node!r} is outside [0, 1]: not a Bernoulli "
                             "parameter")
        out.append(p)
    return tuple(out)


def _binomial(n: int, p: Fraction) -> list[Fraction]:
    q = 1 - p
    return [math.comb(n, k) * p**k * q ** (n - k) for k in range(n + 1)]


def _exact_member(theta: Theta, member: int) -> Theta:
    """One member of Theta with exact Fraction CPDs (decimal reading, columns renormalised)."""
    tables = {}
    to_frac = np.vectorize(_decimal, otypes=[object])
    for v in theta.nodes:
        cpd = theta.members[member][v]
        t = to_frac(np.asarray(cpd.table, dtype=float))
        sums = t.sum(axis=0)
        tables[v] = CPD(v, cpd.parents, t / sums)
    return Theta(theta.nodes, theta.states, theta.parents, [tables], [theta.names[member]])


@dataclass(frozen=True)
class CountLaws:
    """Exact laws of a count given each value of a sensitive hyperparameter, per theta.

    Attributes
    ----------
    attribute : str
        ``j``, the counted attribute (``F = #{X_j = 1}``).
    sensitive : str
        ``i``; the secrets are its values with positive probability.
    records : int
        ``n``.
    laws : tuple of mapping
        Per member of Theta: secret value (state name) -> (support 0..n, probabilities).
        Secrets with probability zero under a member are left out (their law is undefined).
    """

    attribute: str
    sensitive: str
    records: int
    laws: tuple[Mapping[Any, Law], ...]


def count_laws(
    model: Any, attribute: str, sensitive: str, records: int, *,
    max_table: int = DEFAULT_MAX_TABLE,
) -> CountLaws:
    """Exact law of ``F = #{records with X_j = 1}`` given each value of ``phi_i``, per theta.

    ``P(F = k | phi_i = a) = sum_s P(phi_j = s | phi_i = a) Binomial(n, s)(k)`` (module
    docstring), exact in rationals.

    Raises
    ------
    ModelError
        An attribute not in the network, or a state of ``attribute`` that is not a Bernoulli
        parameter.
    ParameterError
        ``records`` not a whole number >= 1.
    """
    theta = as_theta(model)
    (j,) = theta.check_nodes([attribute], "query attribute")
    (i,) = theta.check_nodes([sensitive], "sensitive attribute")
    n = check_records(records)
    phis = bernoulli_parameters(theta, j)
    bins = [_binomial(n, p) for p in phis]
    support = tuple(range(n + 1))
    per_member = []
    for m in range(len(theta.members)):
        exact = _exact_member(theta, m)
        if i == j:
            marg = joint_marginal(exact, (i,), 0, max_table=max_table)
            laws = {s: (support, tuple(bins[k])) for k, s in enumerate(theta.states[i])
                    if marg[k] > 0}
        else:
            joint = joint_marginal(exact, (i, j), 0, max_table=max_table)
            laws = {}
            for a, s in enumerate(theta.states[i]):
                row = joint[a]
                total = sum(row, Fraction(0))
                if total == 0:
                    continue  # phi_i = s impossible under this member: not a secret here
                probs = [Fraction(0)] * (n + 1)
                for b, w in enumerate(row):
                    if w:
                        wb = w / total
                        for k in range(n + 1):
                            probs[k] += wb * bins[b][k]
                laws[s] = (support, tuple(probs))
        per_member.append(laws)
    return CountLaws(j, i, n, tuple(per_member))


@dataclass(frozen=True)
class NetworkWassersteinResult:
    """The Wasserstein Mechanism for a count on a hyperparameter network.

    Attributes
    ----------
    result : WassersteinResult
        Scale ``W / eps``, ``W`` and its audit (exact for the finite Theta given).
    laws : tuple of CountLaws
        The exact conditional laws used, one per sensitive attribute.
    """

    result: WassersteinResult
    laws: tuple[CountLaws, ...]

    @property
    def scale(self) -> float:
        return self.result.scale

    @property
    def sensitivity(self) -> float:
        return self.result.sensitivity

    def release(self, value: float, *, seed: Any = None):
        """``F(X) + Lap(W / eps)`` (see :meth:`WassersteinResult.release`)."""
        return self.result.release(value, seed=seed)


def network_wasserstein(
    model: Any,
    query: CountQuery | str,
    sensitive: str | Iterable[str],
    epsilon: float,
    *,
    records: int | None = None,
    max_table: int = DEFAULT_MAX_TABLE,
) -> NetworkWassersteinResult:
    """Wasserstein Mechanism (Algorithm 4) for a count over one attribute of a core network.

    ``W = max over theta, sensitive i, and pairs a != b of values of phi_i (each of positive
    probability) of W_inf(F | phi_i = a, F | phi_i = b)``; release ``F + Lap(W / eps)``.
    Guarantee: (eps, 0)-distributional attribute privacy (Theorem 5) for the finite Theta given,
    assuming records i.i.d. given phi and ``X_j ~ Bernoulli(phi_j)``.

    Parameters
    ----------
    model : Theta, pgmpy network or sequence of them
    query : CountQuery or str
        A count over exactly one attribute (or that attribute's name, with ``records``).
    sensitive : str or iterable of str
    epsilon : float
    records : int, optional
        ``n`` when ``query`` is a name.

    Raises
    ------
    QueryError
        A query other than a count over one attribute (not implemented: several attributes
        need the convolution of per-record joint laws).
    """
    theta = as_theta(model)
    eps = check_epsilon(epsilon)
    if isinstance(query, str):
        if records is None:
            raise ParameterError("give records (n) with an attribute name")
        attr, n = query, check_records(records)
    elif isinstance(query, CountQuery):
        if len(query.attributes) != 1:
            raise QueryError(
                "the Wasserstein mechanism on a network supports counts over ONE attribute "
                f"only; {list(query.attributes)} would need the convolution of per-record "
                "joint laws, which is not implemented")
        attr, n = query.attributes[0], query.records
    else:
        raise QueryError("the Wasserstein mechanism on a network supports count queries only, "
                         f"not {getattr(query, 'kind', type(query).__name__)}")
    sens = theta.check_sensitive(sensitive)
    all_laws = tuple(count_laws(theta, attr, s, n, max_table=max_table) for s in sens)
    # Secrets are (i, value); only values of the same attribute are paired.
    per_theta = [{(cl.sensitive, a): law for cl in all_laws for a, law in cl.laws[m].items()}
                 for m in range(len(theta.members))]
    pairs = [((s, a), (s, b)) for s in sens
             for a, b in _pairs(theta.states[s])
             if any((s, a) in t and (s, b) in t for t in per_theta)]
    if not pairs:
        result = wasserstein_mechanism(per_theta, eps, pairs=[])
    else:
        result = wasserstein_mechanism(per_theta, eps, pairs=pairs)
    return NetworkWassersteinResult(result, all_laws)


def _pairs(states: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    return [(states[a], states[b]) for a in range(len(states)) for b in range(a + 1, len(states))]
