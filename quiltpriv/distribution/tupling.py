"""The tupling mechanism of Kawamoto and Murakami (Section VI), with its exact privacy loss.

Given an input x, a base local mechanism A (a row-stochastic |X| x |Y| matrix) and k >= 1:
draw k dummies i.i.d. from a dummy law nu on Y (uniform in the theorem), draw the real report
s ~ A(x), insert s at a uniformly random position among the k + 1 slots and release the tuple.
The user's service quality loss is that of A (the user keeps the real element); the traffic is
k + 1 times that of A.

Guarantee ([KM19, Sec. VI], reconstructed; :func:`tupling_guarantee`): with mu = A#(lambda) for each
protected lambda, beta = the largest mu(y) over the protected distributions, m = |Y| and
0 < alpha < k/m, the mechanism is (eps_alpha, delta_alpha)-PDistP on them with

    eps_alpha   = ln((k + (alpha + beta) m) / (k - alpha m)),
    delta_alpha = 2 exp(-2 alpha^2 / (k beta^2)).

Re-derivation (which the exact computation below confirms on small domains): a tuple t with
counts c has probability proportional to sum_y c_y mu(y) (uniform nu), so the likelihood ratio
is (c . mu) / (c . mu'). Write c = D + e_s with D the dummy counts. As D . mu is a sum of k
terms in [0, beta] with mean 1/m each, Hoeffding gives P(D . mu > k/m + alpha) <=
exp(-2 alpha^2 / (k beta^2)), and likewise P(D . mu' < k/m - alpha). Outside these two events
c . mu <= k/m + alpha + beta and c . mu' >= k/m - alpha, which is the ratio e^{eps_alpha}; the
union of the two events has probability <= delta_alpha under either input distribution.

Exact loss (:func:`tupling_exact_privacy`): the output law depends on a tuple only through its
count vector, so the law is enumerated exactly over the C(k + m, m - 1) count vectors (each
weighted by its multinomial number of tuples) and the smallest eps for DistP / PDistP at a
given delta, and the smallest PDistP delta at a given eps, are computed with the exact
finite-space checkers of :mod:`quiltpriv.distribution.local_distribution_privacy`.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import gammaln, logsumexp

from quiltpriv.distribution.local_distribution_privacy import (
    _categorical,
    _delta,
    _distribution,
    _exact_row,
    _mechanism,
    _seed_record,
    approximate_max_divergence,
    probabilistic_epsilon,
)
from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.mechanisms.noise import make_rng, uniform_index
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_positive, check_probability_vector

__all__ = [
    "TuplingExactPrivacy",
    "TuplingGuarantee",
    "TuplingRelease",
    "tupling_exact_privacy",
    "tupling_guarantee",
    "tupling_output_law",
    "tupling_sample",
]

#: Refuse exact enumerations with more count vectors than this (memory and time).
MAX_TYPES = 2_000_000


def _k(k: object) -> int:
    # k: untrusted (any object); this is its check.
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ParameterError(f"k (the number of dummies) must be an integer >= 1, got {k!r}")
    return int(k)


def _dummy_law(dummy_law: ArrayLike | None, m: int) -> np.ndarray:
    if dummy_law is None:
        return np.full(m, 1.0 / m)
    nu = check_probability_vector(dummy_law, "dummy_law")
    if nu.size != m:
        raise ParameterError(f"dummy_law has {nu.size} entries, the base mechanism has {m} outputs")
    if np.any(nu == 0):
        raise ParameterError("dummy_law must give every output a positive probability")
    return nu


# ---------------------------------------------------------------------------------------------
# sampling


@dataclass(frozen=True)
class TuplingRelease(JSONResult):
    """One output of the tupling mechanism.

    Attributes
    ----------
    output : tuple of int
        k + 1 output indices; the real report's position is uniformly random and not recorded.
    secure : bool
        True iff drawn from ``secrets.SystemRandom``; False for a seeded experiment.
    seed : int or None
        The int seed used (None for the secure default or a ``random.Random`` stream).
    """

    output: tuple[int, ...]
    secure: bool
    seed: int | None


def tupling_sample(base: ArrayLike, x: int, k: int, *, dummy_law: ArrayLike | None = None,
                   seed: int | random.Random | None = None) -> TuplingRelease:
    """Release the tuple of the tupling mechanism for input index ``x`` (Section VI).

    ``base`` is the base mechanism A (rows: inputs). Every draw is exact
    (:mod:`quiltpriv.mechanisms.noise`): uniform dummies and the insertion slot by
    :func:`~quiltpriv.mechanisms.noise.uniform_index`, a ``dummy_law`` and the real report by
    :func:`~quiltpriv.mechanisms.noise.categorical` on the floats taken as exact rationals (or,
    for a :class:`~quiltpriv.distribution.local_distribution_privacy.MechanismMatrix` base, its
    exact law). Secure randomness by default; ``seed`` is for reproducible experiments only and
    is recorded in the result.
    """
    a = _mechanism(base)
    kk = _k(k)
    nu = _dummy_law(dummy_law, a.shape[1])
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or not 0 <= x < a.shape[0]:
        raise QueryError(f"input index x must be an integer in [0, {a.shape[0]}), got {x!r}")
    rng = make_rng(seed)
    if dummy_law is None:  # uniform dummies: exact integer draws
        dummies = [uniform_index(a.shape[1], rng) for _ in range(kk)]
    else:
        dummies = [_categorical(nu, rng) for _ in range(kk)]
    real = _categorical(a[int(x)], rng, _exact_row(base, a, int(x)))
    dummies.insert(uniform_index(kk + 1, rng), real)
    return TuplingRelease(tuple(dummies), isinstance(rng, random.SystemRandom),
                          _seed_record(seed))


# ---------------------------------------------------------------------------------------------
# the theorem's guarantee


@dataclass(frozen=True)
class TuplingGuarantee(JSONResult):
    """The (eps_alpha, delta_alpha)-PDistP guarantee of the tupling mechanism ([KM19, Sec. VI]).

    Attributes
    ----------
    epsilon, delta : float
        eps_alpha and delta_alpha (delta may exceed 1, in which case it says nothing).
    beta : float
        max_y A#(lambda)[y] over the protected distributions.
    alpha : float
        The concentration parameter, 0 < alpha < k / |Y|.
    k, n_outputs : int
        Number of dummies and |Y|.
    """

    epsilon: float
    delta: float
    beta: float
    alpha: float
    k: int
    n_outputs: int


def _lifted(a: np.ndarray, distributions: Sequence[ArrayLike]) -> list[np.ndarray]:
    try:
        items = list(distributions)
    except TypeError:
        raise ParameterError("distributions must be a sequence of input distributions") from None
    if not items:
        raise ParameterError("give at least one protected input distribution")
    return [_distribution(lam, a.shape[0], f"distributions[{i}]") @ a
            for i, lam in enumerate(items)]


def tupling_guarantee(base: ArrayLike, distributions: Sequence[ArrayLike], k: int,
                      alpha: float) -> TuplingGuarantee:
    """eps_alpha and delta_alpha for the protected input ``distributions`` (uniform dummies).

    eps_alpha = ln((k + (alpha + beta)|Y|) / (k - alpha |Y|)),
    delta_alpha = 2 exp(-2 alpha^2 / (k beta^2)), beta = max_y A#(lambda)[y] over the
    distributions, 0 < alpha < k/|Y|. Holds for every pair of the given distributions, in both
    directions. The constants are a reconstruction (see the module docstring);
    :func:`tupling_exact_privacy` computes the true loss on small domains.
    """
    a = _mechanism(base)
    kk = _k(k)
    m = a.shape[1]
    al = check_positive(alpha, "alpha")
    if al >= kk / m:
        raise ParameterError(f"alpha must be < k/|Y| = {_fmt(kk / m)}, got {al}")
    beta = max(float(mu.max()) for mu in _lifted(a, distributions))
    eps = math.log((kk + (al + beta) * m) / (kk - al * m))
    delta = 2.0 * math.exp(-2.0 * al * al / (kk * beta * beta))
    return TuplingGuarantee(eps, delta, beta, al, kk, m)


# ---------------------------------------------------------------------------------------------
# exact output law and privacy loss


def _count_vectors(total: int, m: int) -> np.ndarray:
    """All count vectors of ``total`` items in ``m`` bins (stars and bars), one per row."""
    n_types = math.comb(total + m - 1, m - 1)
    if n_types > MAX_TYPES:
        raise ParameterError(
            f"exact enumeration needs {n_types} count vectors (k + 1 = {total}, |Y| = {m}); "
            f"the limit is {MAX_TYPES}: use a smaller k or output set")
    bars = np.array(list(itertools.combinations(range(total + m - 1), m - 1)), dtype=np.int64)
    bars = bars.reshape(n_types, m - 1)
    edges = np.hstack([np.full((n_types, 1), -1), bars, np.full((n_types, 1), total + m - 1)])
    return np.diff(edges, axis=1) - 1


def tupling_output_law(base: ArrayLike, lam: ArrayLike, k: int, *,
                       dummy_law: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The exact output law of the tupling mechanism when x ~ lam, by count vector.

    Returns ``(counts, probs)``: ``counts[r]`` is a count vector over Y (summing to k + 1) and
    ``probs[r]`` the total probability of the tuples with those counts (each such tuple has
    probability ``probs[r] / multinomial(counts[r])``). A tuple t with counts c has probability
    prod_y nu_y^{c_y} * (sum_y c_y mu_y / nu_y) / (k + 1) with mu = A#(lam).
    """
    a = _mechanism(base)
    kk = _k(k)
    m = a.shape[1]
    nu = _dummy_law(dummy_law, m)
    mu = _distribution(lam, a.shape[0], "lambda") @ a
    counts = _count_vectors(kk + 1, m)
    log_multinomial = gammaln(kk + 2) - gammaln(counts + 1).sum(axis=1)
    weight = counts @ (mu / nu)  # sum_y c_y mu_y / nu_y
    with np.errstate(divide="ignore"):
        logp = log_multinomial + counts @ np.log(nu) + np.log(weight) - math.log(kk + 1)
    probs = np.exp(logp)
    # the law sums to one analytically; renormalise away the last bits of rounding
    probs /= np.exp(logsumexp(logp))
    return counts, probs


@dataclass(frozen=True)
class TuplingExactPrivacy(JSONResult):
    """The exact privacy loss of the tupling mechanism on a pair of input distributions.

    Both directions are taken (the max of (lambda0, lambda1) and (lambda1, lambda0)).

    Attributes
    ----------
    max_divergence : float
        Pure D_inf of the lifted output laws (the eps of (eps, 0)-DistP).
    distp_epsilon : float
        Smallest eps of (eps, delta)-DistP at ``delta``.
    pdistp_epsilon : float
        Smallest eps of (eps, delta)-PDistP at ``delta``.
    delta : float
        The delta those two were computed at.
    pdistp_delta : float or None
        Smallest delta of (epsilon, delta)-PDistP at ``epsilon`` (when an epsilon was given):
        the larger of the masses, under either law, of the outputs whose ratio exceeds e^eps.
    epsilon : float or None
        The eps ``pdistp_delta`` was computed at.
    n_types : int
        Number of count vectors enumerated.
    """

    max_divergence: float
    distp_epsilon: float
    pdistp_epsilon: float
    delta: float
    pdistp_delta: float | None
    epsilon: float | None
    n_types: int


def _pdistp_delta(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    # Definition 13: one excluded set for both directions, the outputs whose likelihood ratio
    # leaves [e^-eps, e^eps]; delta is its larger mass.
    t = math.exp(eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        violating = (p > t * q) | (q > t * p)
    return float(max(p[violating].sum(), q[violating].sum()))


def tupling_exact_privacy(base: ArrayLike, lam0: ArrayLike, lam1: ArrayLike, k: int, *,
                          delta: float = 0.0, epsilon: float | None = None,
                          dummy_law: ArrayLike | None = None) -> TuplingExactPrivacy:
    """Exact DistP and PDistP parameters of the tupling mechanism for (lam0, lam1).

    Enumerates the output law over count vectors (:func:`tupling_output_law`); since every
    tuple of a count vector has the same likelihood ratio, the finite-space checkers applied to
    the count-vector laws give exactly the tuple-level values.
    """
    d = _delta(delta)
    counts, p = tupling_output_law(base, lam0, k, dummy_law=dummy_law)
    _, q = tupling_output_law(base, lam1, k, dummy_law=dummy_law)
    dmax = max(approximate_max_divergence(p, q), approximate_max_divergence(q, p))
    distp = max(approximate_max_divergence(p, q, d), approximate_max_divergence(q, p, d))
    pdistp = max(probabilistic_epsilon(p, q, d), probabilistic_epsilon(q, p, d))
    pd = None
    eps = None
    if epsilon is not None:
        eps = check_positive(epsilon, "epsilon", allow_zero=True)
        pd = max(_pdistp_delta(p, q, eps), _pdistp_delta(q, p, eps))
    return TuplingExactPrivacy(dmax, distp, pdistp, d, pd, eps, int(counts.shape[0]))
