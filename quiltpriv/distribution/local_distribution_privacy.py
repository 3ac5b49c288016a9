"""Distribution privacy of local obfuscation mechanisms (Kawamoto and Murakami, ESORICS 2019).

A *local mechanism* is a row-stochastic matrix ``A`` (rows: inputs x in a finite X, columns:
outputs y in a finite Y). Its *lifting* maps an input distribution lambda to the output law
``A#(lambda) = lambda @ A`` (Section II-A of the paper). Distribution privacy (DistP, Definition
11) is differential privacy of ``A#`` on a set Psi of pairs of input distributions; this module
computes, exactly, the smallest parameters for which a given mechanism satisfies it:

* :func:`distp_epsilon` -- (eps, delta)-DistP: eps = max over pairs of the delta-approximate
  max-divergence (Definition 1), computed exactly from the hockey-stick divergence;
* :func:`xdistp_epsilon` -- XDistP (Definition 12): eps per unit of W_inf,d;
* :func:`pdistp_epsilon` -- probabilistic DistP (Definition 13);
* :func:`f_distp_epsilon` -- f-divergence DistP (Definition 16) for KL, reverse KL, total
  variation, chi-square and (squared) Hellinger (Table I).

Distances between input distributions on a finite metric space [KM19, Sec. II-G] live in
:mod:`quiltpriv.utils.distances` with the other Wasserstein distances: ``wasserstein_inf``,
``wasserstein_1``, ``lifted_relation``, ``line_metric`` and ``Transport`` (importing them from
here still works, with a DeprecationWarning).

Calibration: :func:`laplace_scale_for_distp` (scale W_inf / eps), :func:`laplace_max_divergence`
(exact D_inf between two lifted Laplace laws on the line), :func:`randomised_response_matrix`
and :func:`exponential_mechanism_matrix`, with :func:`sample_mechanism` to release one output.

Direction and symmetry. The checkers treat each given pair (lambda, lambda') as ordered, as in
the definitions; ``symmetric=True`` (the default) also checks (lambda', lambda), which is what
"hide which of the two distributions the input came from" means and never gives a smaller eps.
Epsilons are the smallest eps >= 0.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from quiltpriv._compat import moved_attribute
from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.mechanisms import noise
from quiltpriv.mechanisms.calibration import laplace_scale
from quiltpriv.mechanisms.noise import Seed, make_rng
from quiltpriv.utils import distances
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import (
    check_cost_matrix,
    check_delta,
    check_epsilon,
    check_positive,
    check_probability_vector,
    check_relation_matrix,
)

__all__ = [
    "DistributionPrivacy",
    "F_DIVERGENCES",
    "LaplaceCalibration",
    "LocalRelease",
    "MechanismMatrix",
    "approximate_max_divergence",
    "distp_epsilon",
    "exponential_mechanism_matrix",
    "f_distp_epsilon",
    "f_divergence",
    "laplace_max_divergence",
    "laplace_scale_for_distp",
    "lift",
    "pdistp_epsilon",
    "point_privacy_epsilon",
    "probabilistic_epsilon",
    "randomised_response_matrix",
    "sample_mechanism",
    "xdistp_epsilon",
]

#: The f-divergences of Table I, by name.
F_DIVERGENCES: tuple[str, ...] = ("kl", "reverse_kl", "total_variation", "chi_square", "hellinger")

_ROW_ATOL = 1e-9


# ---------------------------------------------------------------------------------------------
# validation


def _mechanism(mechanism: ArrayLike) -> np.ndarray:
    """Return the mechanism as a float matrix whose rows are probability vectors."""
    try:
        a = np.asarray(mechanism, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError("mechanism must be a 2-d array of numbers") from None
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ParameterError(
            f"mechanism must be a non-empty 2-d matrix (inputs x outputs), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ParameterError("mechanism contains NaN or infinite entries")
    if np.any(a < 0):
        raise ParameterError("mechanism has negative entries")
    sums = a.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > _ROW_ATOL)
    if bad.size:
        raise ParameterError(
            f"mechanism row {int(bad[0])} sums to {_fmt(sums[bad[0]], 12)}, not 1 (rows are "
            "inputs)")
    # A row accepted within _ROW_ATOL is sampled renormalised exactly (sample_mechanism): analyse
    # that law, not the row as given, or a ratio of two rows' sums (up to 1 + 2e-9) would be
    # missing from the reported eps. Dividing leaves each entry within one rounding of it.
    off = sums != 1.0
    if np.any(off):
        a = a.copy()
        a[off] /= sums[off, None]
    return a


def _distribution(lam: ArrayLike, size: int, name: str) -> np.ndarray:
    p = check_probability_vector(lam, name)
    if p.size != size:
        raise ParameterError(f"{name} has {p.size} entries, the mechanism has {size} inputs")
    return p


def _pairs(pairs: object, size: int, symmetric: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    # pairs: untrusted (any object); this is its check.
    try:
        items = list(pairs)  # type: ignore[call-overload]
    except TypeError:
        raise ParameterError("pairs must be a sequence of (lambda, lambda') pairs") from None
    if not items:
        raise ParameterError("pairs is empty: give at least one (lambda, lambda') pair")
    out = []
    for k, pair in enumerate(items):
        try:
            lam0, lam1 = pair
        except (TypeError, ValueError):
            raise ParameterError(f"pairs[{k}] is not a pair (lambda, lambda')") from None
        a = _distribution(lam0, size, f"pairs[{k}][0]")
        b = _distribution(lam1, size, f"pairs[{k}][1]")
        out.append((a, b))
        if symmetric:
            out.append((b, a))
    return out


def _delta(delta: object) -> float:
    return check_delta(delta, allow_zero=True)


def _output_pair(p: ArrayLike, q: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a = check_probability_vector(p, "p")
    b = check_probability_vector(q, "q")
    if a.size != b.size:
        raise ParameterError(f"p and q have different lengths ({a.size} and {b.size})")
    return a, b


# ---------------------------------------------------------------------------------------------
# lifting and divergences


def lift(mechanism: ArrayLike, lam: ArrayLike) -> np.ndarray:
    """The lifting A#(lambda) = sum_x lambda[x] A(x), the output law when x ~ lambda.

    Section II-A of Kawamoto and Murakami; ``mechanism`` has one row per input.
    """
    a = _mechanism(mechanism)
    return _distribution(lam, a.shape[0], "lambda") @ a


def approximate_max_divergence(p: ArrayLike, q: ArrayLike, delta: float = 0.0) -> float:
    """The delta-approximate max-divergence D_inf^delta(p || q) on a finite space, exactly.

    Definition 1: the smallest eps >= 0 with p(R) <= e^eps q(R) + delta for every R. On a finite
    space the worst R for a threshold t = e^eps is {y : p(y) > t q(y)}, so eps is the root of
    the hockey-stick divergence ``sum_y max(0, p(y) - t q(y)) = delta``, which is piecewise linear
    in t with breakpoints at the ratios p(y)/q(y); it is solved segment by segment (no sampling,
    no search). ``inf`` when q misses more than delta of p's mass.
    """
    a, b = _output_pair(p, q)
    d = _delta(delta)
    pos = a > 0
    a, b = a[pos], b[pos]  # outputs p cannot produce never enter a worst R
    infinite = b == 0
    mass_inf = float(a[infinite].sum())
    if mass_inf > d:
        return math.inf
    d -= mass_inf  # outputs q cannot produce are always in R and use up part of delta
    a, b = a[~infinite], b[~infinite]
    if a.size == 0 or np.maximum(a - b, 0.0).sum() <= d:
        return 0.0  # already holds at t = 1
    ratio = a / b
    order = np.argsort(-ratio, kind="stable")
    r, pa, qb = ratio[order], np.cumsum(a[order]), np.cumsum(b[order])
    # On [r[k+1], r[k]] the hockey stick is P_k - t Q_k with P_k, Q_k over the top k+1 ratios.
    for k in range(r.size):
        t = (pa[k] - d) / qb[k]
        lower = r[k + 1] if k + 1 < r.size else 0.0
        if t >= lower:
            return max(0.0, math.log(t)) if t > 0 else 0.0
    return 0.0  # pragma: no cover - the last segment always has a root (t >= 0)


def probabilistic_epsilon(p: ArrayLike, q: ArrayLike, delta: float) -> float:
    """The smallest eps >= 0 of probabilistic DP for one pair of output laws (Definition 13).

    There must be ONE output set Omega with p(Omega) <= delta and q(Omega) <= delta such that
    outside Omega both p(R) <= e^eps q(R) and q(R) <= e^eps p(R) (the definition constrains
    Omega's mass under both laws, so one set serves both directions; choosing a set per
    direction would allow up to 2 delta of unbounded outputs and can report 0 where the
    answer is ln 2). This is the safe reading: it is never below the per-direction values,
    and it is symmetric in p and q.

    For a given eps the least Omega is the set of outputs with |ln p(y)/q(y)| > eps, which
    grows as eps falls; so eps is the log-ratio at which excluding the outputs of largest
    |log-ratio| (whole tie groups) would exceed delta under p or q.
    """
    a, b = _output_pair(p, q)
    d = _delta(delta)
    keep = (a > 0) | (b > 0)
    a, b = a[keep], b[keep]
    level = np.full(a.size, math.inf)  # max(p/q, q/p) >= 1; inf where one law is 0
    both = (a > 0) & (b > 0)
    level[both] = np.maximum(a[both] / b[both], b[both] / a[both])
    cum_p = cum_q = 0.0
    for lv in np.unique(level)[::-1]:  # distinct levels, largest first
        group = level == lv
        cum_p += float(a[group].sum())
        cum_q += float(b[group].sum())
        if cum_p > d or cum_q > d:
            # this tie group cannot all go into Omega: eps must cover its log-ratio
            return max(0.0, math.log(lv))
    return 0.0


def f_divergence(p: ArrayLike, q: ArrayLike, divergence: str = "kl") -> float:
    """The f-divergence D_f(p || q) of Definition 2 / Table I.

    ``divergence`` is one of :data:`F_DIVERGENCES`: ``kl`` (f = t ln t), ``reverse_kl``
    (f = -ln t), ``total_variation`` (f = |t - 1| / 2, i.e. half the L1 distance),
    ``chi_square`` (f = (t - 1)^2) and ``hellinger`` (f = (sqrt t - 1)^2, i.e.
    sum (sqrt p - sqrt q)^2, twice the squared Hellinger distance in the 1/2-normalised
    convention). Natural logarithms. ``inf`` when the divergence is infinite (support mismatch).
    """
    a, b = _output_pair(p, q)
    if divergence == "kl":
        if np.any((a > 0) & (b == 0)):
            return math.inf
        m = a > 0
        return max(0.0, float(np.sum(a[m] * (np.log(a[m]) - np.log(b[m])))))
    if divergence == "reverse_kl":
        return f_divergence(b, a, "kl")
    if divergence == "total_variation":
        return 0.5 * float(np.abs(a - b).sum())
    if divergence == "chi_square":
        if np.any((a > 0) & (b == 0)):
            return math.inf
        m = b > 0
        return float(np.sum((a[m] - b[m]) ** 2 / b[m]))
    if divergence == "hellinger":
        return float(np.sum((np.sqrt(a) - np.sqrt(b)) ** 2))
    raise ParameterError(f"unknown divergence {divergence!r}; choose one of {F_DIVERGENCES}")


# ---------------------------------------------------------------------------------------------
# the checkers


@dataclass(frozen=True)
class DistributionPrivacy(JSONResult):
    """The smallest privacy parameter of a mechanism on a set of pairs of input distributions.

    Attributes
    ----------
    notion : str
        ``"DistP"``, ``"PDistP"``, ``"XDistP"`` or ``"<divergence>-DistP"``.
    epsilon : float
        The smallest eps (>= 0) for which the notion holds at ``delta`` on every checked pair;
        for XDistP it multiplies W_inf,d. ``inf`` if no finite eps works.
    delta : float
        The delta it was computed at (0 for f-divergence DistP).
    pair_epsilons : tuple of float
        eps per checked ordered pair (with ``symmetric=True``: pair k is at 2k, its reverse at
        2k + 1).
    worst_pair : int
        Index into ``pair_epsilons`` of a pair attaining ``epsilon``.
    distances : tuple of float
        For XDistP, W_inf,d of each checked pair; empty otherwise.
    """

    notion: str
    epsilon: float
    delta: float
    pair_epsilons: tuple[float, ...]
    worst_pair: int
    distances: tuple[float, ...] = ()


def _result(notion: str, values: list[float], delta: float,
            distances: tuple[float, ...] = ()) -> DistributionPrivacy:
    worst = int(np.argmax(values))
    return DistributionPrivacy(notion, float(values[worst]), delta, tuple(values), worst,
                               distances)


def distp_epsilon(mechanism: ArrayLike, pairs: Sequence[tuple[object, object]],
                  delta: float = 0.0, *, symmetric: bool = True) -> DistributionPrivacy:
    """Smallest eps for which ``mechanism`` is (eps, delta)-DistP on ``pairs`` (Definition 11).

    eps = max over pairs of D_inf^delta(A#lambda || A#lambda'), computed exactly by
    :func:`approximate_max_divergence`.
    """
    a = _mechanism(mechanism)
    d = _delta(delta)
    vals = [approximate_max_divergence(l0 @ a, l1 @ a, d)
            for l0, l1 in _pairs(pairs, a.shape[0], symmetric)]
    return _result("DistP", vals, d)


def pdistp_epsilon(mechanism: ArrayLike, pairs: Sequence[tuple[object, object]],
                   delta: float, *, symmetric: bool = True) -> DistributionPrivacy:
    """Smallest eps for which ``mechanism`` is (eps, delta)-PDistP on ``pairs`` (Definition 13).

    One excluded set Omega per pair serves both directions (:func:`probabilistic_epsilon`, the
    safe reading of the definition). PDistP implies DistP with the same (eps, delta), so this
    is never below :func:`distp_epsilon` at the same delta.
    """
    a = _mechanism(mechanism)
    d = _delta(delta)
    vals = [probabilistic_epsilon(l0 @ a, l1 @ a, d)
            for l0, l1 in _pairs(pairs, a.shape[0], symmetric)]
    return _result("PDistP", vals, d)


def xdistp_epsilon(mechanism: ArrayLike, metric: ArrayLike, pairs: Sequence[tuple[object, object]],
                   delta: float = 0.0, *, symmetric: bool = True) -> DistributionPrivacy:
    """Smallest eps for which ``mechanism`` is (eps, d, delta)-XDistP on ``pairs`` (Def. 12).

    A#lambda[R] <= exp(eps W_inf,d(lambda, lambda')) A#lambda'[R] + delta, so
    eps = max over pairs of D_inf^delta(A#lambda || A#lambda') / W_inf,d(lambda, lambda').
    ``metric`` is the |X| x |X| matrix of d(x, x'). Pairs with W_inf = 0 (equal distributions)
    need no eps. W_inf is exact (:func:`wasserstein_inf`).
    """
    a = _mechanism(mechanism)
    d = _delta(delta)
    cost = check_cost_matrix(metric, a.shape[0], a.shape[0])
    vals, dists = [], []
    for l0, l1 in _pairs(pairs, a.shape[0], symmetric):
        w = distances.wasserstein_inf(cost, l0, l1).distance
        div = approximate_max_divergence(l0 @ a, l1 @ a, d)
        dists.append(w)
        if div == 0.0:
            vals.append(0.0)
        elif w == 0.0:
            vals.append(math.inf)
        else:
            vals.append(div / w)
    return _result("XDistP", vals, d, tuple(dists))


def f_distp_epsilon(mechanism: ArrayLike, pairs: Sequence[tuple[object, object]],
                    divergence: str = "kl", *, symmetric: bool = True) -> DistributionPrivacy:
    """Smallest eps with D_f(A#lambda || A#lambda') <= eps on every pair (Definition 16)."""
    if divergence not in F_DIVERGENCES:
        raise ParameterError(f"unknown divergence {divergence!r}; choose one of {F_DIVERGENCES}")
    a = _mechanism(mechanism)
    vals = [f_divergence(l0 @ a, l1 @ a, divergence)
            for l0, l1 in _pairs(pairs, a.shape[0], symmetric)]
    return _result(f"{divergence}-DistP", vals, 0.0)


def point_privacy_epsilon(mechanism: ArrayLike, adjacency: ArrayLike | None = None,
                          delta: float = 0.0) -> float:
    """Smallest eps for which ``mechanism`` is (eps, delta)-DP on inputs (Definition 3).

    ``adjacency`` is a boolean |X| x |X| matrix Phi (default: every pair of inputs). By the
    coupling argument of the paper, (eps, delta)-DP on Phi implies (eps, delta)-DistP on the
    lifted relation Phi#.
    """
    a = _mechanism(mechanism)
    n = a.shape[0]
    phi = (np.ones((n, n), dtype=bool) if adjacency is None
           else check_relation_matrix(adjacency, n, n, name="adjacency"))
    d = _delta(delta)
    best = 0.0
    for i, j in zip(*np.nonzero(phi), strict=True):
        if i != j:
            best = max(best, approximate_max_divergence(a[i], a[j], d))
    return best


# ---------------------------------------------------------------------------------------------
# calibration and mechanisms


@dataclass(frozen=True)
class LaplaceCalibration(JSONResult):
    """Laplace scale giving eps-DistP for a pair of distributions on the line.

    Attributes
    ----------
    scale : float
        W_inf(lambda0, lambda1) / eps (Laplace with scale b is (1/b, |.|)-XDP, hence XDistP
        with D_inf <= W_inf / b).
    w_inf : float
        The exact W_inf between the two distributions (rounded up).
    epsilon : float
        The target eps.
    """

    scale: float
    w_inf: float
    epsilon: float


def _line_law(xs: ArrayLike, lam: ArrayLike, name: str) -> tuple[np.ndarray, np.ndarray]:
    p = check_probability_vector(lam, name)
    x = np.asarray(xs, dtype=float)
    if x.shape != p.shape:
        raise ParameterError(f"support of {name} has {x.size} points, {name} has {p.size}")
    if not np.all(np.isfinite(x)):
        raise ParameterError(f"support of {name} must be finite numbers")
    return x, p


def laplace_scale_for_distp(xs0: ArrayLike, lam0: ArrayLike, xs1: ArrayLike, lam1: ArrayLike,
                            epsilon: float) -> LaplaceCalibration:
    """The Laplace scale W_inf(lambda0, lambda1) / eps that gives eps-DistP for the pair.

    Kawamoto and Murakami: a (eps, d)-XDP mechanism (Laplace with scale 1/eps on the line) is
    XDistP with W_inf,d, so hiding lambda0 from lambda1 at level eps needs scale
    W_inf / eps -- in both directions, since W_inf is symmetric. W_inf is exact
    (:func:`quiltpriv.utils.distances.wasserstein_inf_line`).
    """
    eps = check_epsilon(epsilon)
    _line_law(xs0, lam0, "lambda0")
    _line_law(xs1, lam1, "lambda1")
    # lam0 and lam1 as given (Fractions stay exact); _line_law has checked them.
    p0, p1 = list(cast(Iterable[Any], lam0)), list(cast(Iterable[Any], lam1))
    w = float(distances.wasserstein_inf_line(list(np.asarray(xs0, dtype=float)), p0,
                                             list(np.asarray(xs1, dtype=float)), p1))
    return LaplaceCalibration(laplace_scale(w, eps), w, eps)


def laplace_max_divergence(xs0: ArrayLike, lam0: ArrayLike, xs1: ArrayLike, lam1: ArrayLike,
                           scale: float) -> float:
    """Exact D_inf(A#lambda0 || A#lambda1) for the Laplace mechanism of ``scale`` on the line.

    Between consecutive atoms both lifted densities have the form A e^{y/b} + B e^{-y/b}, so
    their ratio is a Moebius function of e^{2y/b}, monotone on the interval; beyond the extreme
    atoms it is constant. The supremum is therefore attained at an atom and is computed exactly
    (log-sum-exp) by evaluating the log-ratio at every atom.
    """
    b = check_positive(scale, "scale")
    x0, p0 = _line_law(xs0, lam0, "lambda0")
    x1, p1 = _line_law(xs1, lam1, "lambda1")
    x0, p0 = x0[p0 > 0], p0[p0 > 0]
    x1, p1 = x1[p1 > 0], p1[p1 > 0]
    ys = np.union1d(x0, x1)
    log0 = logsumexp(np.log(p0)[None, :] - np.abs(ys[:, None] - x0[None, :]) / b, axis=1)
    log1 = logsumexp(np.log(p1)[None, :] - np.abs(ys[:, None] - x1[None, :]) / b, axis=1)
    return max(0.0, float(np.max(log0 - log1)))


def randomised_response_matrix(k: int, epsilon: float) -> MechanismMatrix:
    """k-ary randomised response: keep the input w.p. e^eps / (e^eps + k - 1).

    eps-DP on every pair of inputs (hence eps-DistP on every pair of distributions). The
    result is a :class:`MechanismMatrix`: the floats for analysis, and the exact law
    (``P(y | x)`` proportional to ``exp(-eps [y != x])``, eps taken exactly) that
    :func:`sample_mechanism` samples, so the ratio ``e^eps`` holds exactly at any eps (the
    floats alone round ``1 / (e^eps + k - 1)`` at every eps and lose all precision of the
    keep probability from about eps 37).
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise ParameterError(f"k must be an integer >= 2, got {k!r}")
    eps = check_epsilon(epsilon)
    e = Fraction(eps)
    gammas = tuple(tuple(Fraction(0) if y == x else e for y in range(int(k)))
                   for x in range(int(k)))
    # keep 1 / (1 + (k-1) e^-eps), others e^-eps / (1 + (k-1) e^-eps): no overflow at any eps
    return MechanismMatrix.with_exact_law(_rounded_law(gammas), gammas)


def exponential_mechanism_matrix(utility: ArrayLike, epsilon: float,
                                 sensitivity: float | None = None,
                                 adjacency: ArrayLike | None = None) -> MechanismMatrix:
    """The exponential mechanism P(y | x) proportional to exp(eps u(x, y) / (2 Delta u)).

    Example 1 of the paper. ``utility`` is the |X| x |Y| matrix u(x, y). ``sensitivity`` is
    Delta u w.r.t. ``adjacency`` (Definition 5: max over adjacent x, x' and all y of
    |u(x, y) - u(x', y)|); if omitted it is computed from ``adjacency`` (default: every pair of
    inputs), exactly. The result is eps-DP on the adjacency relation: a
    :class:`MechanismMatrix` whose exact law (the utilities, eps and Delta u as exact
    rationals) is what :func:`sample_mechanism` samples, so the ratio bound ``e^eps`` holds
    exactly even where the floats round a probability (e.g. ``[[74.4, 0], [73.4, 1]]`` at eps 1,
    whose smallest entries are about 1e-16).
    """
    eps = check_epsilon(epsilon)
    try:
        u = np.asarray(utility, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError("utility must be a 2-d array of numbers") from None
    if u.ndim != 2 or u.size == 0 or not np.all(np.isfinite(u)):
        raise ParameterError("utility must be a non-empty 2-d matrix of finite numbers")
    n = u.shape[0]
    phi = (np.ones((n, n), dtype=bool) if adjacency is None
           else check_relation_matrix(adjacency, n, n, name="adjacency"))
    sens = None if sensitivity is None else check_positive(sensitivity, "sensitivity")
    gammas = _exponential_gammas(u, Fraction(eps), phi, sens)
    return MechanismMatrix.with_exact_law(_rounded_law(gammas), gammas)


def _rounded_law(gammas: tuple[tuple[Fraction, ...], ...]) -> np.ndarray:
    """The floats of the law ``exp(-gamma)`` per row (each row's least gamma is 0)."""
    # beyond 1e4, exp(-gamma) is 0 in floats; min() keeps a huge Fraction from overflowing
    g = np.array([[float(min(x, Fraction(10_000))) for x in row] for row in gammas])
    w = np.exp(-g)
    return w / w.sum(axis=1, keepdims=True)


def _exact_sensitivity(u: np.ndarray, phi: np.ndarray) -> Fraction:
    """max |u(x, y) - u(x', y)| over adjacent x, x' and all y, exactly.

    The float differences are within a relative 2**-52 of the exact ones (or overflow to inf),
    so only the entries within 2**-50 of the float maximum can be the exact maximum: those
    are recomputed in rationals.
    """
    xs, x2s = np.nonzero(phi)
    if xs.size == 0:
        return Fraction(0)
    with np.errstate(over="ignore", invalid="ignore"):
        diffs = np.abs(u[xs] - u[x2s])  # pairs x columns
    top = float(diffs.max())
    if top == 0:
        return Fraction(0)
    cand = np.argwhere(diffs >= top * (1 - 2.0 ** -50))
    return max(abs(Fraction(float(u[xs[p], y])) - Fraction(float(u[x2s[p], y])))
               for p, y in cand)


def _exponential_gammas(u: np.ndarray, eps: Fraction, phi: np.ndarray,
                        sensitivity: float | None) -> tuple[tuple[Fraction, ...], ...]:
    """Exact log-weights of the exponential mechanism: ``gamma(x, y) = c (max_y u(x) - u(x, y))``.

    ``c = eps / (2 Delta u)`` with ``Delta u`` the exact maximum of ``|u(x, y) - u(x', y)|``
    over adjacent inputs, computed in rationals (a float subtraction could round it down, or
    overflow), or the caller's ``sensitivity`` taken exactly. Then ``P(y | x) / P(y | x')`` is
    at most ``exp(2 c Delta u) = e^eps`` exactly.
    """
    if sensitivity is None:
        du = _exact_sensitivity(u, phi)
        if du == 0:
            du = Fraction(1)  # the output ignores the input: any positive sensitivity is exact
    else:
        du = Fraction(float(sensitivity))
    c = eps / (2 * du)
    exact = [[Fraction(float(v)) for v in row] for row in u]
    return tuple(tuple(c * (max(row) - v) for v in row) for row in exact)


class MechanismMatrix(np.ndarray):
    """A local mechanism's row-stochastic float matrix that also carries its exact law.

    It is an ordinary read-only ``numpy.ndarray`` of floats (every function of this module
    accepts it); :func:`sample_mechanism` and
    :func:`~quiltpriv.distribution.tupling.tupling_sample` sample its *exact* law instead of
    the rounded floats: ``P(y | x)`` proportional to ``exp(-gamma[x][y])`` with rational
    ``gamma`` (:func:`quiltpriv.mechanisms.noise.exponential_categorical`). Any array derived
    from it (a slice, a copy, arithmetic) is plain floats.
    """

    exact_gammas: tuple[tuple[Fraction, ...], ...] | None

    def __new__(cls, floats: ArrayLike,
                gammas: Sequence[Sequence[Fraction | int]]) -> MechanismMatrix:
        a = _mechanism(floats)
        try:
            rows = tuple(tuple(Fraction(g) for g in row) for row in gammas)
        except (TypeError, ValueError):
            raise ParameterError("gammas must be a matrix of exact rationals (Fraction or int)"
                                 ) from None
        if len(rows) != a.shape[0] or any(len(r) != a.shape[1] for r in rows):
            raise ParameterError(f"gammas must have the matrix's shape {a.shape}")
        for x, row in enumerate(rows):
            low = min(row)
            w = np.exp(-np.array([float(g - low) for g in row]))
            if not np.allclose(a[x], w / w.sum(), rtol=1e-9, atol=1e-300):
                raise ParameterError(f"row {x} of the matrix is not the rounding of its exact "
                                     "law exp(-gamma) (the analysis and the sampler would "
                                     "differ)")
        obj = np.array(a, dtype=float).view(cls)
        obj.exact_gammas = rows
        obj.flags.writeable = False  # the floats stay the rounding of the exact law
        return obj

    @classmethod
    def with_exact_law(cls, floats: np.ndarray,
                       gammas: tuple[tuple[Fraction, ...], ...]) -> MechanismMatrix:
        """The matrix ``floats`` (rows sum to 1) with the exact law ``exp(-gammas)`` per row."""
        return cls(floats, gammas)

    def __array_finalize__(self, obj: object) -> None:
        self.exact_gammas = None  # derived arrays are plain floats

    def __reduce__(self) -> Any:
        return (np.array, (np.asarray(self),))  # pickles (e.g. to workers) as plain floats


@dataclass(frozen=True)
class LocalRelease(JSONResult):
    """One output of a local mechanism.

    Attributes
    ----------
    output : int
        The index of the released output.
    secure : bool
        True iff drawn from ``secrets.SystemRandom``; False for a seeded, reproducible,
        experiments-only draw.
    seed : int or None
        The int seed used (None for the secure default or a ``random.Random`` stream).
    """

    output: int
    secure: bool
    seed: int | None


def _categorical(row: np.ndarray, rng: noise.RandomBits,
                 gammas: tuple[Fraction, ...] | None = None) -> int:
    """One output index from a mechanism row, sampled exactly by the noise module.

    With ``gammas`` (a :class:`MechanismMatrix` row) the exact law ``exp(-gamma)``; otherwise
    the row's floats taken as exact rationals (``P(y) = a_y / sum a``, no float cumulative sum:
    every positive entry is possible with exactly its weight, every zero entry impossible).
    """
    if gammas is not None:
        return noise.exponential_categorical(gammas, rng)
    return noise.categorical(row.tolist(), rng)


def _exact_row(mechanism: object, a: np.ndarray, x: int) -> tuple[Fraction, ...] | None:
    """The exact law of row ``x`` if ``mechanism`` is an intact :class:`MechanismMatrix`."""
    if isinstance(mechanism, MechanismMatrix) and mechanism.exact_gammas is not None \
            and mechanism.shape == a.shape:
        return mechanism.exact_gammas[x]
    return None


def _seed_record(seed: Seed) -> int | None:
    """The int seed to record (None for the secure default or a caller-supplied stream)."""
    return int(seed) if isinstance(seed, int | np.integer) and not isinstance(seed, bool) \
        else None


def sample_mechanism(mechanism: ArrayLike, x: int, *,
                     seed: int | random.Random | None = None) -> LocalRelease:
    """Release one output of ``mechanism`` on input index ``x``.

    Sampled exactly (:mod:`quiltpriv.mechanisms.noise`, integers from ``getrandbits`` only):
    a :class:`MechanismMatrix` (from :func:`randomised_response_matrix` or
    :func:`exponential_mechanism_matrix`) by its exact law; any other matrix with
    ``P(y | x) = a[x, y] / sum_y a[x, y]`` exactly, the floats taken as exact rationals (the
    row is renormalised exactly: it may sum to 1 within 1e-9). No output's probability is
    rounded, so the privacy loss is exactly that of the law sampled.

    Secure by default (``secrets.SystemRandom``); ``seed`` (an int, or a ``random.Random``
    stream) makes the draw reproducible for experiments only, and the result records it.
    """
    a = _mechanism(mechanism)
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or not 0 <= x < a.shape[0]:
        raise QueryError(f"input index x must be an integer in [0, {a.shape[0]}), got {x!r}")
    rng = make_rng(seed)
    out = _categorical(a[int(x)], rng, _exact_row(mechanism, a, int(x)))
    return LocalRelease(out, isinstance(rng, random.SystemRandom), _seed_record(seed))


#: Distances moved to :mod:`quiltpriv.utils.distances` (old names still work, with a warning).
_MOVED = {name: "quiltpriv.utils.distances" for name in (
    "LiftedRelation", "Transport", "lifted_relation", "line_metric", "wasserstein_1",
    "wasserstein_inf")}


def __getattr__(name: str) -> object:
    return moved_attribute(__name__, _MOVED, name)
