"""The Wasserstein Mechanism for a count on a hyperparameter network ([ZOC22, Sec. 6, Alg. 4]).

``W = max over theta, sensitive i, and pairs a != b of values of phi_i of
W_inf(F | phi_i = a, F | phi_i = b)``; release ``F + Lap(W / eps)``. The laws of the count come
from :mod:`quiltpriv.queries.network_laws` (exact rationals up to
:data:`~quiltpriv.queries.network_laws.EXACT_RECORDS` records, certified float64 laws with proven
error bounds above, :mod:`quiltpriv.queries.law_bounds`); the supremum over the exact laws is
:func:`quiltpriv.mechanisms.wasserstein.wasserstein_mechanism`'s. This module is the mechanism
(it was ``quiltpriv.queries.network_laws.network_wasserstein``, a mechanism in the queries
layer; the old path still works, with a deprecation warning).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.mechanisms.wasserstein import (
    WassersteinResult,
    wasserstein_mechanism,
    wasserstein_scale,
)
from quiltpriv.model.network import Theta, as_theta
from quiltpriv.queries.law_bounds import (
    Budget,
    BudgetExceeded,
    cdf_bounds,
    cdf_key,
    mixture_log_pmf,
)
from quiltpriv.queries.network_laws import (
    EXACT_RECORDS,
    LOG_PMF_CACHE_FLOATS,
    MAX_RECORDS,
    CountLaws,
    CountSpec,
    LogPmfCache,
    count_spec,
    exact_count_laws,
    pi_mixtures,
    undeclared_domain_error,
)
from quiltpriv.queries.query import CountQuery
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.distances import w_inf_bracket
from quiltpriv.utils.memory import exact_table_limit
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_epsilon, check_positive, check_records

if TYPE_CHECKING:
    import os
    import random

    from quiltpriv.mechanisms.protocol import ReleaseRecord

__all__ = ["NetworkWassersteinResult", "network_wasserstein"]


@dataclass(frozen=True)
class NetworkWassersteinResult(JSONResult):
    """The Wasserstein Mechanism for a count on a hyperparameter network.

    Attributes
    ----------
    result : WassersteinResult
        Scale ``W / eps``, ``W`` and its audit (for the finite Theta given). ``result.exact``
        says whether ``W`` is exactly the supremum; otherwise it is a proven upper bound and
        ``result.sensitivity_lower`` a proven lower one.
    laws : tuple of CountLaws
        The exact conditional laws used, one per sensitive attribute; empty when the laws were
        certified float64 arrays (``n > EXACT_RECORDS``, see ``arithmetic``).
    arithmetic : str
        ``"exact"`` (rational laws) or ``"certified float64"``
        (:mod:`quiltpriv.queries.law_bounds`).
    """

    result: WassersteinResult
    laws: tuple[CountLaws, ...]
    arithmetic: str = "exact"

    @property
    def scale(self) -> float:
        return self.result.scale

    @property
    def sensitivity(self) -> float:
        return self.result.sensitivity

    def release(self, value: float, *, seed: int | random.Random | None = None,
                ledger: str | os.PathLike[str] | None = None, budget: float | None = None,
                allow_unproved: bool = False) -> ReleaseRecord:
        """``F(X) + Lap(W / eps)`` as a
        :class:`~quiltpriv.mechanisms.protocol.ReleaseRecord` of mechanism ``"Wasserstein"``
        (see :meth:`WassersteinResult.release`; the same noise)."""
        sensitive = tuple(str(c.sensitive) for c in self.laws) if self.laws else ()
        return self.result._release(
            "Wasserstein", sensitive, value, seed=seed, ledger=ledger, budget=budget,
            allow_unproved=allow_unproved,
            details={**self.result.to_dict(), "arithmetic": self.arithmetic})


@renamed_keywords(model="theta")
def network_wasserstein(
    theta: Any,
    query: CountQuery | str,
    sensitive: str | Iterable[str],
    epsilon: float,
    *,
    records: int | None = None,
    max_table: int | None = None,
    time_limit: float | None = None,
    progress: bool = False,
    exact_records: int = EXACT_RECORDS,
    max_memory: int | str | None = None,
) -> NetworkWassersteinResult:
    """Wasserstein Mechanism ([ZOC22, Alg. 4]) for a count on a core network.

    ``W = max over theta, sensitive i, and pairs a != b of values of phi_i (each of positive
    probability) of W_inf(F | phi_i = a, F | phi_i = b)``; release ``F + Lap(W / eps)``.
    Guarantee: (eps, 0)-distributional attribute privacy (Theorem 5) for the finite Theta given,
    assuming records i.i.d. given phi and ``X_j ~ Bernoulli(phi_j)``.

    Up to ``exact_records`` records the laws are exact rationals and ``W`` is exact. Above, the
    laws are float64 arrays with proven error bounds (:mod:`quiltpriv.queries.law_bounds`, ``O(n)``
    per distinct success probability and per secret): each ``W_inf`` is bracketed by integers
    ``lo <= W_inf <= hi`` and the mechanism uses ``hi``, which is never below the exact value
    (``result.exact`` when every bracket that matters is closed).

    Parameters
    ----------
    theta : Theta, pgmpy network or sequence of them
    query : CountQuery or str
        A count (or one attribute's name, with ``records``). A count with a predicate must
        declare ``domain`` (equal to the record categories) or ``record_states``, which say
        how the predicate reads the model's records (:func:`record_truth`).
    sensitive : str or iterable of str
    epsilon : float
    records : int, optional
        ``n`` when ``query`` is a name.
    max_table : int, optional
        Largest exact table (entries); by default as many as ``max_memory`` holds.
    time_limit : float, optional
        Seconds; past it :class:`~quiltpriv.queries.law_bounds.BudgetExceeded` is raised (no partial
        ``W``: a maximum over some of the pairs could be too small).
    progress : bool
        Show a progress bar (tqdm) when the computation takes more than half a second.
    exact_records : int
        Largest ``n`` computed in exact rationals.
    max_memory : int or str, optional
        Memory budget of the exact tables, in bytes or as a size (``"4G"``); default half the
        machine's memory (:func:`~quiltpriv.utils.memory.exact_table_limit`).

    Raises
    ------
    QueryError
        A query other than a count; a predicate with no declared domain or record states
        (:func:`undeclared_domain_error`), or one that :func:`record_truth` refuses. Raised
        before any law is computed.
    BudgetExceeded
        The time limit was reached, or ``n`` is above :data:`MAX_RECORDS`.
    InfluenceTooExpensive
        An exact table would not fit in the memory budget (the message names it).
    """
    max_table = exact_table_limit(max_table, max_memory)
    theta = as_theta(theta)
    eps = check_epsilon(epsilon)
    limit = _time_limit(time_limit)
    attr: str | tuple[str, ...]
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
    # One truth table for both paths, and every refusal before any law is computed.
    spec = count_spec(theta, attr, n, where, domain, states)
    budget = Budget(limit, progress, "the Wasserstein mechanism's laws")
    try:
        if n <= exact_records:
            return _exact_wasserstein(theta, spec, sens, eps, max_table, budget)
        return _certified_wasserstein(theta, spec, sens, eps, max_table, budget)
    finally:
        budget.close()


def _time_limit(time_limit: float | None) -> float | None:
    return None if time_limit is None else check_positive(time_limit, "time_limit")


def _exact_wasserstein(theta: Theta, spec: CountSpec, sens: tuple[str, ...], eps: float,
                       max_table: int, budget: Budget) -> NetworkWassersteinResult:
    budget.start(len(sens) + 1, "Wasserstein (exact laws)")
    all_laws = []
    for s in sens:
        all_laws.append(exact_count_laws(theta, spec, s, max_table))
        budget.tick()
    # Secrets are (i, value); only values of the same attribute are paired.
    per_theta = [{(cl.sensitive, a): law for cl in all_laws for a, law in cl.laws[m].items()}
                 for m in range(len(theta.members))]
    pairs = [((s, a), (s, b)) for s in sens
             for a, b in _pairs(theta.states[s])
             if any((s, a) in t and (s, b) in t for t in per_theta)]
    result = wasserstein_mechanism(per_theta, eps, pairs=pairs)
    budget.tick()
    return NetworkWassersteinResult(result, tuple(all_laws))


def _certified_wasserstein(theta: Theta, spec: CountSpec, sens: tuple[str, ...], eps: float,
                           max_table: int, budget: Budget) -> NetworkWassersteinResult:
    """``W`` from certified float64 laws: a proven bracket per pair (module law_bounds)."""
    n = spec.records
    if n > MAX_RECORDS:
        raise BudgetExceeded(
            f"n = {n} records is beyond the laws of the count quiltpriv can compute (at most "
            f"{MAX_RECORDS:,} records: each law is held as arrays of n + 1 floats)")
    mixtures = {}
    for s in sens:
        mixtures[s] = pi_mixtures(theta, spec.attributes, s, spec.probability, max_table)
    # Work: one CDF key per secret that has a pair with a different law, one bracket per pair.
    jobs = []
    for m in range(len(theta.members)):
        for s in sens:
            per = mixtures[s][m]
            pairs = [(a, b) for a, b in _pairs(theta.states[s]) if a in per and b in per]
            moving = [(a, b) for a, b in pairs if per[a] != per[b]]
            jobs.append((m, s, per, pairs, moving))
    steps = sum(len({x for p in moving for x in p}) + len(pairs)
                for _, _, _, pairs, moving in jobs)
    budget.start(steps, "Wasserstein (certified laws)")
    log_pmf = LogPmfCache(n, LOG_PMF_CACHE_FLOATS)
    best_lo, best_hi, worst, compared = 0, 0, "no pair of secrets", 0
    for m, s, per, pairs, moving in jobs:
        keys: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
        for a, b in pairs:
            if (a, b) in moving:
                for x in (a, b):
                    if x not in keys:
                        mix, err = mixture_log_pmf(list(per[x].items()), log_pmf,
                                                   budget.check)
                        keys[x] = cdf_bounds(*cdf_key(mix, err))
                        del mix
                        budget.tick()
                lo, hi = w_inf_bracket(keys[a], keys[b])
            else:
                lo = hi = 0  # the same mixture: the same law
            if hi > best_hi or compared == 0:
                best_hi, worst = hi, f"secrets {(s, a)!r} vs {(s, b)!r} under theta {m}"
            best_lo = max(best_lo, lo)
            compared += 1
            budget.tick()
    exact = best_lo == best_hi
    notes = ["(epsilon, 0) by Theorem 5 for the finite Theta given",
             f"laws of the count over n = {n} records in float64 with proven error bounds "
             f"(exact rationals up to {EXACT_RECORDS} records)",
             (f"W is exact: every bracket closes at {best_hi}" if exact else
              f"W_inf is in [{best_lo}, {best_hi}]; the mechanism uses {best_hi}, never below "
              "the exact value")]
    result = WassersteinResult(scale=wasserstein_scale(Fraction(best_hi), eps),
                               sensitivity=float(best_hi), sensitivity_lower=float(best_lo),
                               epsilon=eps, delta=0.0, exact=exact, worst_case=worst,
                               notes=tuple(notes))
    return NetworkWassersteinResult(result, (), "certified float64")


def _pairs(states: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    return [(states[a], states[b]) for a in range(len(states)) for b in range(a + 1, len(states))]
