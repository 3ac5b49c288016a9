"""Laws of a count on a hyperparameter network, for the Wasserstein Mechanism: exact or certified.

[ZOC22, Sec. 6, Alg. 4, Ex. 3] (Zhang, Ohrimenko and Cummings). On a hyperparameter
network whose states are Bernoulli parameters (state names that parse as numbers in [0, 1]),
records are i.i.d. given ``phi`` and ``X_j^r ~ Bernoulli(phi_j)``. For the count
``F = #{r : X_j^r = 1}`` over ``n`` records and the secret ``phi_i = a``::

    P(F = k | phi_i = a) = sum over phi_j of  P(phi_j | phi_i = a) * Binomial(n, phi_j)(k)

(``Binomial(n, a)`` itself when ``j = i``). These laws, one set per member of Theta, go to the
Wasserstein Mechanism on a network (:mod:`quiltpriv.mechanisms.network_wasserstein`), which
takes the sup of ``W_inf`` over secret pairs of the same attribute and over Theta.

Exactness (the conventions of :mod:`quiltpriv.mechanisms.wasserstein`): ``W_inf`` is discontinuous
in the probabilities, so everything is computed in :class:`fractions.Fraction`. Floats are read as
the decimals they print as (a state ``0.56`` is ``14/25``; a CPD entry ``0.35`` is ``7/20``), every
CPD column is renormalised exactly, and ``P(phi_i, phi_j)`` is obtained by exact variable
elimination (the core's :func:`quiltpriv.inference.influence.joint_marginal` run on the Fraction
tables).
The laws are thus the exact laws of the model as printed; no rounding can hide a sliver of mass.

Large n: the exact laws have ``O(n)``-digit probabilities and cost ``O(n^2)`` and more (seconds
at ``n = 1000``, hours at ``10^5``). The mechanism keeps them up to
:data:`EXACT_RECORDS` records; above, the same laws -- kept exactly as binomial mixtures
``{pi: weight}`` (:func:`count_mixtures`; configurations with equal ``pi`` merged) -- are
evaluated in float64 with proven error bounds in ``O(n)`` per distinct ``pi`` and per secret
(:mod:`quiltpriv.queries.law_bounds`), and each ``W_inf`` is bracketed by integers ``lo <= W_inf <=
hi``. The mechanism uses ``hi``, which the errors can only raise: never below the exact value
(a privacy failure), above it only where two CDFs tie exactly or within the error bounds
(typically by one). Two secrets with the same mixture are recognised exactly (``W_inf = 0``).
When every bracket that matters closes, ``W`` is exact and the result says so.

Predicate: for one binary attribute without a predicate the count is ``#{X_j = 1}``, the record
model's own meaning (any predicate over one 0/1 attribute is ``X_j = 1``, ``X_j = 0`` (``n - F``,
the same ``W_inf`` by reflection) or constant, so this ``W`` is exact or an over-estimate). With
a predicate (:mod:`quiltpriv.queries.predicate`), given ``phi`` a record satisfies it with
probability ``pi(phi_A) = sum over record states x with pred(x) of prod_j P(X_j = x_j | phi_j)``
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
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational
from typing import Any

import numpy as np

from quiltpriv.errors import ModelError, ParameterError, QueryError
from quiltpriv.inference.influence import InfluenceTooExpensive, joint_marginal
from quiltpriv.model.network import CPD, Theta, as_theta, check_theta
from quiltpriv.queries.law_bounds import (
    BinomialLogPmf,
)
from quiltpriv.queries.predicate import Predicate, parse_predicate
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.memory import EXACT_BYTES_PER_TABLE_ENTRY, describe_bytes, exact_table_limit
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import (
    check_instance,
    check_records,
    check_scalar,
)

__all__ = [
    "EXACT_RECORDS",
    "LOG_PMF_CACHE_FLOATS",
    "LogPmfCache",
    "MAX_EXACT_RECORDS",
    "MAX_RECORDS",
    "CountLaws",
    "record_categories",
    "record_truth",
    "bernoulli_parameters",
    "binomial_pmf",
    "count_laws",
    "count_mixtures",
    "mixture_weights",
    "pi_mixtures",
    "record_probability",
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
    node = check_theta(theta).check_node(node, "attribute")
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


def binomial_pmf(n: int, p: Fraction) -> list[Fraction]:
    """The exact pmf of Binomial(n, p) at 0..n (``n`` whole >= 0, ``p`` exact in [0, 1])."""
    n = int(check_scalar(n, "n", integer=True, min_val=0))
    if isinstance(p, bool) or not isinstance(p, Rational) or not 0 <= p <= 1:
        raise ParameterError(f"p must be an exact probability (a Fraction in [0, 1]), got {p!r}")
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
class CountLaws(JSONResult):
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
    node = check_theta(theta).check_node(node, "attribute")
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


def undeclared_domain_error(theta: Theta, attrs: Sequence[str], where: str | Predicate | None,
                            what: str) -> QueryError:
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
    keys: dict[int, Any] = {}
    integral = True
    for v in domain:
        if isinstance(v, str) or float(v) != int(float(v)):
            integral = False
            break
        keys[int(float(v))] = v
    if not integral or sorted(keys) != list(cats) or len(keys) != len(domain):
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
    attrs = check_theta(theta).check_nodes(attrs, "query attribute")
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


def record_probability(
    laws: Sequence[tuple[Fraction, ...]], truth: Mapping[tuple[int, ...], bool]
) -> Fraction:
    """P(a record satisfies the predicate) given each attribute's per-record law.

    ``laws[j]`` is attribute ``j``'s law (a sequence of probabilities by state index);
    ``truth`` maps each record (a tuple of state indices, one per law) to whether it satisfies
    the predicate.
    """
    if isinstance(laws, str) or not isinstance(laws, Sequence) or not all(
            isinstance(law, Sequence) and not isinstance(law, str) for law in laws):
        raise ParameterError(f"laws must be a sequence of per-attribute laws, got {laws!r}")
    if not isinstance(truth, Mapping):
        raise ParameterError(f"truth must map records (tuples of state indices) to bool, got "
                             f"{type(truth).__name__}")
    for x in truth:
        if (not isinstance(x, tuple) or len(x) != len(laws)
                or not all(isinstance(xj, int) and 0 <= xj < len(law)
                           for xj, law in zip(x, laws, strict=True))):
            raise ParameterError(f"truth: record {x!r} is not a tuple of {len(laws)} state "
                                 "indices within the laws")
    total = Fraction(0)
    for x, ok in truth.items():
        if ok:
            term = Fraction(1)
            for xj, law in zip(x, laws, strict=True):
                term *= law[xj]
            total += term
    return total


def mixture_weights(
    theta: Theta,
    attrs: Sequence[str],
    sensitive: str,
    *,
    max_table: int | None = None,
    max_memory: int | str | None = None,
) -> tuple[dict[Any, dict[tuple[int, ...], Fraction]], ...]:
    """Exact ``P(phi_A = key | phi_sensitive = a)``, per member of Theta.

    Keys are the state indices of ``attrs`` (in that order; the sensitive attribute's own
    index when it is among them); only keys of positive probability are listed. The weights
    come from exact variable elimination on the Fraction CPDs (module docstring). Values of
    ``phi_sensitive`` with probability zero are left out (their conditional is undefined).

    ``max_memory`` (bytes, or a size such as ``"4G"``; default half the machine's memory)
    bounds the exact tables of the elimination at
    :data:`~quiltpriv.utils.memory.EXACT_BYTES_PER_TABLE_ENTRY` bytes an entry
    (:func:`~quiltpriv.utils.memory.exact_table_limit`); ``max_table`` (entries) lowers it.

    Raises
    ------
    InfluenceTooExpensive
        A table of the exact elimination would not fit in the memory budget (the message
        names the budget).
    """
    limit = exact_table_limit(max_table, max_memory)
    attrs = check_theta(theta).check_nodes(attrs, "query attribute")
    sensitive = theta.check_node(sensitive, "sensitive attribute")
    others = tuple(a for a in theta.sort(attrs) if a != sensitive)
    out = []
    for m in range(len(theta.members)):
        exact = _exact_member(theta, m)
        joint = _exact_joint(exact, (sensitive, *others), limit)
        weights: dict[Any, dict[tuple[int, ...], Fraction]] = {}
        for ai, state in enumerate(theta.states[sensitive]):
            row = np.asarray(joint[ai], dtype=object)
            total = sum(np.ravel(row), Fraction(0))
            if total == 0:
                continue  # phi_i = state impossible under this member: not a secret here
            given: dict[tuple[int, ...], Fraction] = {}
            for idx in itertools.product(*(range(theta.cardinality[o]) for o in others)):
                w = row[idx]
                if not w:
                    continue
                pos = dict(zip(others, idx, strict=True))
                pos[sensitive] = ai
                key = tuple(pos[a] for a in attrs)
                given[key] = given.get(key, Fraction(0)) + w / total
            weights[state] = given
        out.append(weights)
    return tuple(out)


def _exact_joint(exact: Theta, nodes: tuple[str, ...], limit: int) -> np.ndarray:
    """The exact joint over ``nodes``, or a refusal naming the memory budget it is over.

    The elimination's own refusal counts float64 entries; its tables here hold Fractions,
    charged :data:`~quiltpriv.utils.memory.EXACT_BYTES_PER_TABLE_ENTRY` bytes each.
    """
    try:
        return joint_marginal(exact, nodes, 0, max_table=limit)
    except InfluenceTooExpensive as exc:
        shown = ", ".join(nodes[:6]) + (", ..." if len(nodes) > 6 else "")
        raise InfluenceTooExpensive(
            f"the exact (rational) joint of {shown} needs a table above {limit} entries, "
            f"the {describe_bytes(limit * EXACT_BYTES_PER_TABLE_ENTRY)} memory budget at "
            f"{EXACT_BYTES_PER_TABLE_ENTRY} bytes an exact entry (max_memory= or "
            "--max-memory raises it)") from exc


def parameter_mixture(
    theta: Theta,
    attrs: Sequence[str],
    sensitive: str,
    law_of: Callable[[tuple[int, ...]], Mapping[Any, Fraction]],
    *,
    max_table: int | None = None,
    max_memory: int | str | None = None,
) -> tuple[dict[Any, dict[Any, Fraction]], ...]:
    """Exact ``P(F | phi_sensitive = a) = sum_{phi_A} P(phi_A | phi_sensitive = a) P(F | phi_A)``.

    ``law_of`` receives the state indices of ``attrs`` (in that order; the sensitive
    attribute's own index when it is among them) and returns the law of ``F`` given those
    hyperparameters as ``{value: probability}``; it is called once per distinct tuple. The
    weights are :func:`mixture_weights` (``max_table`` and ``max_memory`` as there).

    Returns
    -------
    tuple of dict
        Per member of Theta: value of ``phi_sensitive`` with positive probability -> law of
        ``F``. Values with probability zero are left out (their law is undefined).
    """
    cache: dict[tuple[int, ...], Mapping[Any, Fraction]] = {}
    out = []
    for weights in mixture_weights(theta, attrs, sensitive, max_table=max_table,
                                   max_memory=max_memory):
        laws: dict[Any, dict[Any, Fraction]] = {}
        for state, given in weights.items():
            law: dict[Any, Fraction] = {}
            for key, wt in given.items():
                cond = cache.get(key)
                if cond is None:
                    cond = cache[key] = law_of(key)
                for f, pr in cond.items():
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
        return dict(enumerate(binomial_pmf(n, record_probability(key))))

    mixed = parameter_mixture(theta, attrs, i, law_of, max_table=max_table)
    return tuple({s: (support, tuple(law.get(k, Fraction(0)) for k in support))
                  for s, law in laws.items()} for laws in mixed)


#: Largest ``n`` for which :func:`count_laws` builds the exact rational laws (their cost grows
#: like ``n^2``: about 15 s at ``n = 2000`` on the student model).
MAX_EXACT_RECORDS = 2000
#: The network Wasserstein mechanism uses the exact laws up to this ``n`` and certified float64 laws
#: (:mod:`quiltpriv.queries.law_bounds`) above it.
EXACT_RECORDS = 200
#: Largest ``n`` of the certified float64 laws: each law is held as arrays of ``n + 1`` floats.
MAX_RECORDS = 10**7

RecordProbability = Callable[[tuple[int, ...]], Fraction]


@dataclass(frozen=True)
class CountSpec:
    """A checked count: its attributes, ``n``, ``P(a record is counted | phi_A)``, predicate.

    The record probability reads one truth table (:func:`record_truth`), computed once, so the
    exact and the certified laws count the same records.
    """

    attributes: tuple[str, ...]
    records: int
    probability: RecordProbability
    predicate: str | None

    def to_dict(self) -> dict[str, Any]:
        """The count as JSON: attributes, records and predicate (the probability is a
        function of the attributes' states, not data)."""
        return {"attributes": list(self.attributes), "records": self.records,
                "predicate": self.predicate}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)


def count_spec(theta: Theta, attribute: str | Sequence[str], records: int,
               where: str | Predicate | None,
               domain: Mapping[str, Sequence[Any]] | None = None,
               record_states: Mapping[str, Mapping[Any, int]] | None = None) -> CountSpec:
    """The checked count (attributes in the network, ``n``, predicate over record states)."""
    attrs = (attribute,) if isinstance(attribute, str) else tuple(attribute)
    check_theta(theta).check_nodes(attrs, "query attribute")
    n = check_records(records)
    if where is not None or len(attrs) != 1:
        if where is None:
            raise QueryError(
                f"a count over several attributes {list(attrs)} needs its predicate "
                "(where=...), because the laws of the count depend on it")
        truth = record_truth(theta, attrs, where, domain, record_states)
        params = {a: category_laws(theta, a) for a in attrs}
        return CountSpec(attrs, n, lambda key: record_probability(
            [params[a][k] for a, k in zip(attrs, key, strict=True)], truth),
            str(parse_predicate(where)))
    j = attrs[0]
    try:
        bernoulli_parameters(theta, j)
    except ModelError:
        category_laws(theta, j)  # raises if the states are not probability vectors either
        raise QueryError(f"a count over the categorical attribute {j!r} needs its predicate "
                         "(where=..., over category numbers 0..k-1)") from None
    phis = bernoulli_parameters(theta, j)
    return CountSpec(attrs, n, lambda key: phis[key[0]], None)


def _check_sensitive(theta: Theta, attribute: str | Sequence[str], sensitive: str) -> str:
    """``sensitive`` checked (after the count's attributes, so errors come in that order)."""
    if not isinstance(attribute, str | Iterable):
        raise QueryError(f"the count's attribute must be a name or a sequence of names, got "
                         f"{type(attribute).__name__}")
    attrs = (attribute,) if isinstance(attribute, str) else tuple(attribute)
    theta.check_nodes(attrs, "query attribute")
    (i,) = theta.check_nodes([sensitive], "sensitive attribute")
    return i


def exact_count_laws(theta: Theta, spec: CountSpec, sensitive: str,
                     max_table: int) -> CountLaws:
    """The exact laws of the count ``spec`` given each value of ``sensitive`` (see
    :func:`count_laws`)."""
    check_instance(spec, CountSpec, "spec")
    check_theta(theta).check_node(sensitive, "sensitive attribute")
    laws = _count_laws(theta, spec.attributes, sensitive, spec.records, spec.probability,
                       max_table)
    return CountLaws(spec.attributes[0], sensitive, spec.records, laws, spec.attributes,
                     spec.predicate)


@renamed_keywords(model="theta")
def count_laws(
    theta: Any, attribute: str | Sequence[str], sensitive: str, records: int, *,
    where: str | Predicate | None = None,
    domain: Mapping[str, Sequence[Any]] | None = None,
    record_states: Mapping[str, Mapping[Any, int]] | None = None,
    max_table: int | None = None,
    max_memory: int | str | None = None,
) -> CountLaws:
    """Exact law of the count given each value of ``phi_i``, per member of Theta.

    One attribute without ``where``: ``F = #{records with X_j = 1}`` and
    ``P(F = k | phi_i = a) = sum_s P(phi_j = s | phi_i = a) Binomial(n, s)(k)``. Several
    attributes (or any ``where``): the count of records satisfying the predicate ``where``
    (module docstring). Exact in rationals, so at most :data:`MAX_EXACT_RECORDS` records
    (:func:`count_mixtures` gives the same laws as mixtures, at any ``n``).

    ``where`` reads the record categories (0/1, or 0..k-1) unless ``domain`` (the data values
    of each attribute, equal to its categories) or ``record_states`` (data value -> category)
    say how it reads data values (:func:`record_truth`). ``max_memory`` and ``max_table``
    bound the exact tables as in :func:`mixture_weights`.

    Raises
    ------
    ModelError
        An attribute not in the network, or a state of ``attribute`` that is not a Bernoulli
        parameter.
    InfluenceTooExpensive
        The exact joint would not fit in the memory budget.
    QueryError
        A predicate that :func:`record_truth` refuses, or a count that needs one and has none.
    ParameterError
        ``records`` not a whole number >= 1, or above :data:`MAX_EXACT_RECORDS`.
    """
    theta = as_theta(theta)
    i = _check_sensitive(theta, attribute, sensitive)
    spec = count_spec(theta, attribute, records, where, domain, record_states)
    if spec.records > MAX_EXACT_RECORDS:
        raise ParameterError(
            f"exact rational laws of a count over n = {spec.records} records are too expensive "
            f"(at most {MAX_EXACT_RECORDS} records; their cost grows like n^2); "
            "network_wasserstein and audit use certified float64 laws at any n")
    return exact_count_laws(theta, spec, i, exact_table_limit(max_table, max_memory))


#: A law of the count as a binomial mixture: success probability ``pi`` -> weight.
Mixture = dict[Fraction, Fraction]


@renamed_keywords(model="theta")
def count_mixtures(
    theta: Any, attribute: str | Sequence[str], sensitive: str, *,
    where: str | Predicate | None = None,
    domain: Mapping[str, Sequence[Any]] | None = None,
    record_states: Mapping[str, Mapping[Any, int]] | None = None,
    max_table: int | None = None,
    max_memory: int | str | None = None,
) -> tuple[dict[Any, Mixture], ...]:
    """The law of the count given each value of ``phi_i`` as an exact binomial mixture.

    ``P(F = k | phi_i = a) = sum_pi w_pi Binomial(n, pi)(k)`` for every ``n``: per member of
    Theta, a mapping secret -> ``{pi: w_pi}`` (exact rationals, positive weights, parameter
    configurations with the same ``pi`` merged). Same arguments (but ``records``) and checks as
    :func:`count_laws`.
    """
    limit = exact_table_limit(max_table, max_memory)
    theta = as_theta(theta)
    i = _check_sensitive(theta, attribute, sensitive)
    spec = count_spec(theta, attribute, 1, where, domain, record_states)
    return pi_mixtures(theta, spec.attributes, i, spec.probability, limit)


def pi_mixtures(theta: Theta, attrs: tuple[str, ...], sensitive: str,
                 probability: RecordProbability,
                 max_table: int) -> tuple[dict[Any, Mixture], ...]:
    """Per value of each sensitive parameter, the mixture of per-record probabilities ``pi``
    of the count's predicate (exact rationals), over Theta's members."""
    pis: dict[tuple[int, ...], Fraction] = {}
    out = []
    for weights in mixture_weights(theta, attrs, sensitive, max_table=max_table):
        per: dict[Any, Mixture] = {}
        for state, given in weights.items():
            mix: Mixture = {}
            for key, w in given.items():
                pi = pis.get(key)
                if pi is None:
                    pi = pis[key] = probability(key)
                mix[pi] = mix.get(pi, Fraction(0)) + w
            per[state] = mix
        out.append(per)
    return tuple(out)


class LogPmfCache:
    """Binomial log-pmfs by ``pi``, kept while they fit in ``max_floats`` floats."""

    def __init__(self, n: int, max_floats: int) -> None:
        self.table = BinomialLogPmf(n)
        self.room = max_floats // (n + 1)
        self.cache: dict[Fraction, tuple[np.ndarray, float]] = {}

    def __call__(self, pi: Fraction) -> tuple[np.ndarray, float]:
        hit = self.cache.get(pi)
        if hit is None:
            hit = self.table(pi)
            if len(self.cache) < self.room:
                self.cache[pi] = hit
        return hit


#: Floats of binomial log-pmfs kept between secrets (256 MiB); beyond, they are recomputed.
#: Most floats :class:`LogPmfCache` keeps (256 MiB of float64).
LOG_PMF_CACHE_FLOATS = 1 << 25


def __getattr__(name: str) -> object:
    # The Wasserstein Mechanism on these laws is a mechanism: it moved to
    # quiltpriv.mechanisms.network_wasserstein (the old path warns until 0.3.0).
    from quiltpriv._compat import moved_attribute

    new = "quiltpriv.mechanisms.network_wasserstein"
    return moved_attribute(__name__, {"network_wasserstein": new,
                                      "NetworkWassersteinResult": new}, name)
