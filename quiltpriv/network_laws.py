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

Predicate: for one binary attribute without a predicate the count is ``#{X_j = 1}``, the record
model's own meaning (any predicate over one 0/1 attribute is ``X_j = 1``, ``X_j = 0`` (``n - F``,
the same ``W_inf`` by reflection) or constant, so this ``W`` is exact or an over-estimate). With
a predicate (:mod:`quiltpriv.predicate`), given ``phi`` a record satisfies it with probability
``pi(phi_A) = sum over record states x with pred(x) of prod_j P(X_j = x_j | phi_j)``
(attributes are independent given ``phi``), so ``F | phi ~ Binomial(n, pi(phi_A))`` and
``P(F = k | phi_i = a) = sum over phi_A of P(phi_A | phi_i = a) Binomial(n, pi(phi_A))(k)``:
the per-record laws convolved over the ``n`` i.i.d. records, mixed over the hyperparameters.
Categorical attributes work the same way: a state listing ``k`` probabilities
(``"0.2/0.3/0.5"``) is the attribute's law over record categories ``0..k-1``
(:func:`category_laws`); a Bernoulli attribute's record categories are ``0`` and ``1``.

Data values and record states: a count query's predicate reads *data* values, the model
describes record *categories*. The link is explicit, never guessed (:func:`record_truth`):

* the query's declared domain of an attribute is exactly its record categories (``(0, 1)``,
  or ``0..k-1``): each value is its own category;
* or the query maps every declared value to a category (``record_states``); several values
  may share one, every category must be reached (the model gives each one positive
  probability), and the predicate must have the same truth on all values of a category
  (otherwise it has no meaning on the model's records);
* otherwise the mechanism refuses and says what to declare. :func:`count_laws` called with a
  bare predicate (no domain) reads it over the record categories themselves, and refuses a
  literal that is not one of them (``height > 66`` over ``{0, 1}``).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ._validation import check_epsilon, check_records
from .errors import ModelError, ParameterError, QueryError
from .influence import DEFAULT_MAX_TABLE, joint_marginal
from .network import CPD, Theta, as_theta
from .predicate import Predicate, parse_predicate
from .sensitivity import CountQuery
from .wasserstein import WassersteinResult, wasserstein_mechanism

__all__ = [
    "CountLaws",
    "record_categories",
    "record_truth",
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
    return bernoulli_parameters_of_states(node, theta.states[node])


def bernoulli_parameters_of_states(node: str, states: Sequence[Any]) -> tuple[Fraction, ...]:
    """``states`` read as Bernoulli parameters (see :func:`bernoulli_parameters`)."""
    out = []
    for s in states:
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
    attributes: tuple[str, ...] = ()
    predicate: str | None = None


def category_laws(theta: Theta, node: str) -> tuple[tuple[Fraction, ...], ...]:
    """Per state of ``node``, the per-record law of ``X_node`` over its categories 0..k-1.

    A state that is one number ``p`` is a Bernoulli parameter: law ``(1 - p, p)`` over
    ``{0, 1}``. A state that lists ``k`` numbers (``"0.2/0.3/0.5"``, ``"(0.2, 0.3, 0.5)"``,
    ``"0.2|0.3|0.5"``) is a categorical parameter over categories ``0..k-1``; the numbers must be
    non-negative and sum to exactly one (read as decimals). Every state of a node has the same
    ``k``.

    Raises
    ------
    ModelError
        A state that is neither, or states of different lengths.
    """
    (node,) = theta.check_nodes([node], "attribute")
    out: list[tuple[Fraction, ...]] = []
    for s in theta.states[node]:
        text = str(s).strip().strip("()[]{} ")
        parts = [x for x in re.split(r"[/,;|]", text) if x.strip()]
        if len(parts) <= 1:
            (p,) = bernoulli_parameters_of_states(node, (s,))
            out.append((1 - p, p))
            continue
        try:
            vec = tuple(_decimal(x) for x in parts)
        except (ValueError, ZeroDivisionError, TypeError):
            raise ModelError(f"state {s!r} of {node!r} is not a probability vector") from None
        if any(v < 0 for v in vec) or sum(vec) != 1:
            raise ModelError(f"state {s!r} of {node!r} is not a probability vector (entries "
                             "must be >= 0 and sum to exactly 1)")
        out.append(vec)
    if len({len(v) for v in out}) != 1:
        raise ModelError(f"the states of {node!r} have different numbers of categories")
    return tuple(out)


#: Most combinations of declared values enumerated to read a predicate over record states.
MAX_TRUTH_TABLE = 1 << 20


def record_categories(theta: Theta, node: str) -> int:
    """Number of record categories of ``node`` (2 for a Bernoulli parameter, else ``k``)."""
    return len(category_laws(theta, node)[0])


def _fmt_values(values: Sequence[Any], limit: int = 8) -> str:
    shown = ", ".join(repr(v) for v in list(values)[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def undeclared_domain_error(theta: Theta, attrs: Sequence[str], where: str, what: str
                            ) -> QueryError:
    """The refusal for a predicate over data values with no declared link to the model."""
    cats = ", ".join(f"{a}: {_fmt_values(range(record_categories(theta, a)))}" for a in attrs)
    first = attrs[0]
    return QueryError(
        f"{what}: the predicate {where!r} reads data values, but the query declares no domain, "
        f"so its meaning on the model's records is undefined (record categories: {cats}); "
        f"declare domain={{{first!r}: (0, 1), ...}} if the data hold exactly those categories, "
        f"or record_states={{{first!r}: {{data value: category, ...}}}} "
        "(command line: --domain / --record-states)")


def _category_map(theta: Theta, a: str, domain: tuple[Any, ...] | None,
                  states: Mapping[Any, int] | None) -> tuple[tuple[Any, ...], tuple[int, ...]]:
    """(declared values of ``a``, record category of each), checked against the model."""
    k = record_categories(theta, a)
    cats = tuple(range(k))
    if states is not None:
        values = tuple(states)
        mapped = tuple(states[v] for v in values)
        bad = sorted({c for c in mapped if c >= k})
        if bad:
            raise QueryError(f"record_states of {a!r} maps to categories {bad}, but the model's "
                             f"records of {a!r} have categories {list(cats)}")
        unreached = [c for c in cats if c not in set(mapped)]
        if unreached:
            raise QueryError(
                f"record_states of {a!r} reaches no data value for record categories "
                f"{unreached}, which the model's records can take: map a declared value to "
                "every category")
        return values, mapped
    if domain is None:
        return cats, cats
    keys = {}
    for v in domain:
        if isinstance(v, str) or float(v) != int(float(v)):
            keys = None
            break
        keys[int(float(v))] = v
    if keys is None or sorted(keys) != list(cats) or len(keys) != len(domain):
        raise QueryError(
            f"the declared domain of {a!r} {_fmt_values(domain)} is not the model's record "
            f"categories {list(cats)}: map each declared value to a category with "
            f"record_states={{{a!r}: {{value: category, ...}}}} (--record-states)")
    return tuple(domain), tuple(int(float(v)) for v in domain)


def record_truth(
    theta: Theta, attrs: Sequence[str], predicate: str | Predicate,
    domain: Mapping[str, Sequence[Any]] | None = None,
    record_states: Mapping[str, Mapping[Any, int]] | None = None,
) -> dict[tuple[int, ...], bool]:
    """The predicate over the record categories of ``attrs`` (module docstring).

    Returns
    -------
    dict
        Record categories (one per attribute, in ``attrs`` order) -> truth.

    Raises
    ------
    QueryError
        A predicate outside the language or reading other attributes, a literal that is not a
        declared value, a domain that is neither the record categories nor mapped onto them,
        a mapping that misses a category, or a predicate whose truth differs between values
        of one category.
    """
    attrs = tuple(attrs)
    pred = parse_predicate(predicate, attrs)
    records = record_states or {}
    per = [_category_map(theta, a, None if domain is None else tuple(domain[a]),
                         records.get(a)) for a in attrs]
    values = {a: v for a, (v, _) in zip(attrs, per, strict=True)}
    pred.check_domain(values)
    size = math.prod(len(v) for v, _ in per)
    if size > MAX_TRUTH_TABLE:
        raise QueryError(f"the predicate would be read on {size} combinations of declared "
                         f"values (at most {MAX_TRUTH_TABLE}); declare fewer values")
    idx = np.indices([len(v) for v, _ in per]).reshape(len(attrs), -1)
    columns = {a: np.asarray(v, dtype=object)[idx[j]] for j, (a, (v, _)) in
               enumerate(zip(attrs, per, strict=True))}
    truth_rows = pred.evaluate(columns)
    cat_rows = np.stack([np.asarray(c)[idx[j]] for j, (_, c) in enumerate(per)], axis=1)
    truth: dict[tuple[int, ...], bool] = {}
    first: dict[tuple[int, ...], int] = {}
    for pos, (row, ok) in enumerate(zip(map(tuple, cat_rows.tolist()), truth_rows.tolist(),
                                        strict=True)):
        prev = truth.setdefault(row, ok)
        first.setdefault(row, pos)
        if prev != ok:
            ex = [{a: columns[a][p] for a in attrs} for p in (first[row], pos)]
            raise QueryError(
                f"the predicate {str(pred)!r} has no meaning on the model's records: record "
                f"categories {dict(zip(attrs, row, strict=True))} hold data values on which it "
                f"is true and false ({ex[0]} and {ex[1]}); map values to categories so that the "
                "predicate is decided by the categories")
    return truth


def _record_probability(
    laws: Sequence[tuple[Fraction, ...]], truth: Mapping[tuple[int, ...], bool]
) -> Fraction:
    """P(a record satisfies the predicate) given each attribute's per-record law."""
    total = Fraction(0)
    for x, ok in truth.items():
        if ok:
            term = Fraction(1)
            for xj, law in zip(x, laws, strict=True):
                term *= law[xj]
            total += term
    return total


def parameter_mixture(
    theta: Theta,
    attrs: Sequence[str],
    sensitive: str,
    law_of: Callable[[tuple[int, ...]], Mapping[Any, Fraction]],
    *,
    max_table: int = DEFAULT_MAX_TABLE,
) -> tuple[dict[Any, dict[Any, Fraction]], ...]:
    """Exact ``P(F | phi_sensitive = a) = sum_{phi_A} P(phi_A | phi_sensitive = a) P(F | phi_A)``.

    ``law_of`` receives the state indices of ``attrs`` (in that order; the sensitive
    attribute's own index when it is among them) and returns the law of ``F`` given those
    hyperparameters as ``{value: probability}``; it is called once per distinct tuple. The
    weights come from exact variable elimination on the Fraction CPDs (module docstring).

    Returns
    -------
    tuple of dict
        Per member of Theta: value of ``phi_sensitive`` with positive probability -> law of
        ``F``. Values with probability zero are left out (their law is undefined).
    """
    attrs = tuple(attrs)
    others = tuple(a for a in theta.sort(attrs) if a != sensitive)
    cache: dict[tuple[int, ...], Mapping[Any, Fraction]] = {}
    out = []
    for m in range(len(theta.members)):
        exact = _exact_member(theta, m)
        joint = joint_marginal(exact, (sensitive, *others), 0, max_table=max_table)
        laws: dict[Any, dict[Any, Fraction]] = {}
        for ai, state in enumerate(theta.states[sensitive]):
            row = np.asarray(joint[ai], dtype=object)
            total = sum(np.ravel(row), Fraction(0))
            if total == 0:
                continue  # phi_i = state impossible under this member: not a secret here
            law: dict[Any, Fraction] = {}
            for idx in itertools.product(*(range(theta.cardinality[o]) for o in others)):
                w = row[idx]
                if not w:
                    continue
                pos = dict(zip(others, idx, strict=True))
                pos[sensitive] = ai
                key = tuple(pos[a] for a in attrs)
                given = cache.get(key)
                if given is None:
                    given = cache[key] = law_of(key)
                wt = w / total
                for f, pr in given.items():
                    law[f] = law.get(f, Fraction(0)) + wt * pr
            laws[state] = law
        out.append(laws)
    return tuple(out)


def _count_laws(theta: Theta, attrs: tuple[str, ...], i: str, n: int,
                record_probability: Callable[[tuple[int, ...]], Fraction],
                max_table: int) -> tuple[Mapping[Any, Law], ...]:
    """Laws of a count whose records satisfy the predicate with the given probability."""
    support = tuple(range(n + 1))

    def law_of(key: tuple[int, ...]) -> dict[int, Fraction]:
        return dict(enumerate(_binomial(n, record_probability(key))))

    mixed = parameter_mixture(theta, attrs, i, law_of, max_table=max_table)
    return tuple({s: (support, tuple(law.get(k, Fraction(0)) for k in support))
                  for s, law in laws.items()} for laws in mixed)


def count_laws(
    model: Any, attribute: str | Sequence[str], sensitive: str, records: int, *,
    where: str | Predicate | None = None,
    domain: Mapping[str, Sequence[Any]] | None = None,
    record_states: Mapping[str, Mapping[Any, int]] | None = None,
    max_table: int = DEFAULT_MAX_TABLE,
) -> CountLaws:
    """Exact law of the count given each value of ``phi_i``, per member of Theta.

    One attribute without ``where``: ``F = #{records with X_j = 1}`` and
    ``P(F = k | phi_i = a) = sum_s P(phi_j = s | phi_i = a) Binomial(n, s)(k)``. Several
    attributes (or any ``where``): the count of records satisfying the predicate ``where``
    (module docstring). Exact in rationals.

    ``where`` reads the record categories (0/1, or 0..k-1) unless ``domain`` (the data values
    of each attribute, equal to its categories) or ``record_states`` (data value -> category)
    say how it reads data values (:func:`record_truth`).

    Raises
    ------
    ModelError
        An attribute not in the network, or a state of ``attribute`` that is not a Bernoulli
        parameter.
    ParameterError
        ``records`` not a whole number >= 1.
    """
    theta = as_theta(model)
    attrs = (attribute,) if isinstance(attribute, str) else tuple(attribute)
    theta.check_nodes(attrs, "query attribute")
    (i,) = theta.check_nodes([sensitive], "sensitive attribute")
    n = check_records(records)
    if where is not None or len(attrs) != 1:
        if where is None:
            raise QueryError(
                f"a count over several attributes {list(attrs)} needs its predicate "
                "(where=...), because the laws of the count depend on it")
        truth = record_truth(theta, attrs, where, domain, record_states)
        params = {a: category_laws(theta, a) for a in attrs}
        laws = _count_laws(
            theta, attrs, i, n,
            lambda key: _record_probability(
                [params[a][k] for a, k in zip(attrs, key, strict=True)], truth),
            max_table)
        return CountLaws(attrs[0], i, n, laws, attrs, str(parse_predicate(where)))
    j = attrs[0]
    try:
        bernoulli_parameters(theta, j)
    except ModelError:
        category_laws(theta, j)  # raises if the states are not probability vectors either
        raise QueryError(f"a count over the categorical attribute {j!r} needs its predicate "
                         "(where=..., over category numbers 0..k-1)") from None
    phis = bernoulli_parameters(theta, j)
    laws = _count_laws(theta, (j,), i, n, lambda key: phis[key[0]], max_table)
    return CountLaws(j, i, n, laws, (j,), None)


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
        attr, n = query.attributes, query.records
    else:
        raise QueryError("the Wasserstein mechanism on a network supports count queries only, "
                         f"not {getattr(query, 'kind', type(query).__name__)}")
    sens = theta.check_sensitive(sensitive)
    where, domain, states = None, None, None
    if isinstance(query, CountQuery) and query.predicate is not None:
        if query.domain is None:
            raise undeclared_domain_error(theta, query.attributes, query.where,
                                          "the Wasserstein mechanism on a network")
        where, domain, states = query.predicate, query.domain, query.record_states
    all_laws = tuple(count_laws(theta, attr, s, n, where=where, domain=domain,
                                record_states=states, max_table=max_table)
                     for s in sens)
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
