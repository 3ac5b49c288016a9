"""Distribution privacy mechanisms for global properties (Chen and Ohrimenko, AISTATS 2023).

[CO23]. Theta is a finite set of data distributions, given here by a key per theta; Psi is a
list of ordered pairs of keys (the property to hide); F(Data) is a vector in R^m and f_theta its
law under theta. A mechanism is (eps, delta)-distribution private w.r.t. Psi if for every pair
(i, j) and every set S, P(M(Data) in S | theta_i) <= e^eps P(M(Data) in S | theta_j) + delta.

Mechanisms (each returns a :class:`DistributionPrivacyResult` that states its guarantee and the
assumptions it relies on, and refuses with a :class:`~quiltpriv.errors.QuiltPrivError` when a
checkable assumption fails):

* :func:`wasserstein_mechanism_1d` -- Theorem 3.1 (scalar F, finite laws, exact W_inf);
* :func:`approximate_wasserstein_mechanism_1d` -- Theorem 3.2 from (W, delta)-closeness
  (Definition 3.2), certified by the quantile coupling; :func:`closeness_1d`;
* :func:`bounded_query_mechanism` -- [CO23, Thm. 3.3] (+ Theorem 3.2);
* :func:`expm_laplace`, :func:`expm_gaussian` -- ExpM(L), ExpM(G), Theorems 4.1 and 4.2;
* :func:`dirm_laplace`, :func:`dirm_gaussian` -- DirM(L), Theorem 4.3, and its Gaussian form;
* :func:`no_noise_check`, :func:`gaussian_noise_check` -- Theorem 4.4, Corollaries A.1 / A.2;
* :func:`eigm_gaussian` -- EigM(G), Theorem 4.5;
* :func:`daum_gaussian` -- DauM(G), [CO23, Alg. 1, Thm. A.1], closed form by the matrix
  determinant lemma (:func:`daum_variance_bisection` is the paper's bisection, for checking);
* :func:`group_dp_gaussian`, :func:`group_dp_laplace` -- the group-DP baselines of Table 2;
* :func:`relaxed_max_divergence`, :func:`relaxed_wasserstein` -- Theorems 4.6 and 4.7.

Gaussian calibration
--------------------
Every Gaussian mechanism here reduces to one scalar: the largest Mahalanobis distance
r = sqrt(d^T A^-1 d) between two Gaussians N(mu, A), N(mu + d, A) that still leaves them
(eps, delta)-indistinguishable. The paper uses r = eps / c_G with c_G = sqrt(2 ln(1.25/delta))
(``calibration="classical"``). That constant is Dwork and Roth's Theorem A.1, proved for
eps < 1 only; the paper also uses it at eps = 1 and eps = 5 (worked example, Table 2). For two
equal-covariance Gaussians the privacy loss is exactly that of the one-dimensional Gaussian
mechanism with sensitivity/sigma = r, so for eps >= 1 we *verify* the classical r with the exact
privacy profile of Balle and Wang (2018, Theorem 8) and refuse when it fails (it holds for the
paper's settings eps in {1, 5}, delta = 1e-3; it fails e.g. at eps = 20). ``"analytic"`` uses
the largest r the exact profile allows (less noise, valid for every eps).
Translation (ExpM(G), DirM(G)) is a mixture of such pairs and has the same calibration.

The budget comes from :mod:`quiltpriv.mechanisms.calibration`, shared with every Gaussian
mechanism of the package (its safety rule shrinks r by a relative 2e-9 and meets delta with a
relative 1e-9 to spare). Sensitivities and required variances are in addition inflated here by
a relative 1e-9, so floating-point rounding never reduces the noise.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from quiltpriv.distribution.results import (
    DistributionPrivacyResult,
    MechanismCheck,
    expected_l2_norm_gaussian,
)
from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.mechanisms.calibration import (
    SAFETY_RTOL,
    add_up,
    c_gaussian,
    div_up,
    exp_up,
    gaussian_budget,
    mul_up,
    sqrt_up,
)
from quiltpriv.mechanisms.group_dp import group_gaussian, group_laplace
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.distances import NumbersLike, wasserstein_line
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import (
    check_array,
    check_covariance,
    check_delta,
    check_epsilon,
    check_positive,
    check_records,
    check_square_matrix,
    check_vector,
)

#: Per theta (any hashable label), the mean vector of F (or a covariance matrix: ArrayLike).
#: The private ``_matrix``, ``_matrix_any``, ``_check_probability`` and ``_unit_direction``
#: check such untrusted input.
PerTheta = Mapping[Any, ArrayLike]
#: A mean difference per pair of thetas: the dict ``_means`` builds, and the pairs of Psi.
_Vectors = Mapping[Any, NDArray[np.float64]]
_Pairs = Sequence[tuple[Any, Any]]

__all__ = [
    "DistributionPrivacyResult",
    "MechanismCheck",
    "RelaxedGuarantee",
    "approximate_wasserstein_mechanism_1d",
    "bounded_query_mechanism",
    "c_gaussian",
    "closeness_1d",
    "daum_gaussian",
    "daum_variance_bisection",
    "dirm_gaussian",
    "dirm_laplace",
    "eigm_gaussian",
    "expected_l2_norm_gaussian",
    "expm_gaussian",
    "expm_laplace",
    "gaussian_noise_check",
    "group_dp_gaussian",
    "group_dp_laplace",
    "mahalanobis_budget",
    "mean_difference_norm",
    "no_noise_check",
    "relaxed_max_divergence",
    "relaxed_wasserstein",
    "wasserstein_mechanism_1d",
]

_SAFETY = SAFETY_RTOL


def _scale(w: float, eps: float) -> float:
    """``w (1 + rho) / eps`` rounded up: a distance computed in floats, inflated by the safety
    margin, over epsilon."""
    return div_up(mul_up(w, 1 + _SAFETY), eps)


def _square_up(x: float) -> float:
    """``x^2`` rounded up (a variance from a standard deviation)."""
    return mul_up(x, x)


# ---------------------------------------------------------------------------------------------
# input handling


def _matrix(x: object, name: str, m: int) -> np.ndarray:
    a = check_array(x, name)
    if m == 1 and a.ndim < 2:
        a = a.reshape(1, 1)
    a = check_square_matrix(a, name, m)
    a = check_covariance(a, name, m, error=ModelError, psd=False)  # symmetric: a model error
    return 0.5 * (a + a.T)


def _means(means: PerTheta) -> tuple[dict[Any, NDArray[np.float64]], int]:
    if not isinstance(means, Mapping) or len(means) < 1:
        raise ParameterError("means must be a non-empty mapping theta -> mean vector of F")
    out = {}
    m = None
    for k, v in means.items():
        out[k] = check_vector(v, f"mean of F under theta {k!r}", m)
        m = out[k].size
    assert m is not None  # means is not empty
    return out, m


def _pairs(pairs: Sequence[tuple[Hashable, Hashable]] | None,
           keys: Iterable[Any]) -> list[tuple[Any, Any]]:
    """Psi; default every ordered pair of distinct thetas."""
    if pairs is None:
        ps = list(permutations(keys, 2))
    else:
        ps = []
        for p in pairs:
            try:
                a, b = p
            except (TypeError, ValueError):
                raise ParameterError(f"each pair in Psi must be (theta_i, theta_j), got {p!r}"
                                     ) from None
            for t in (a, b):
                if t not in keys:
                    raise ParameterError(f"pair {p!r} names theta {t!r}, which has no model")
            ps.append((a, b))
    if not ps:
        raise ParameterError("Psi is empty: give at least one pair of distinct thetas")
    return ps


def _covariances(covariances: PerTheta, keys: Iterable[Any],
                 m: int) -> dict[Any, NDArray[np.float64]]:
    if not isinstance(covariances, Mapping):
        raise ParameterError("covariances must be a mapping theta -> covariance of F")
    out = {}
    for k in keys:
        if k not in covariances:
            raise ParameterError(f"no covariance for theta {k!r}")
        c = _matrix(covariances[k], f"covariance of F under theta {k!r}", m)
        lo = float(np.linalg.eigvalsh(c)[0])
        if lo < -1e-10 * max(1.0, float(np.abs(c).max())):
            raise ModelError(f"covariance of F under theta {k!r} is not positive semidefinite "
                             f"(smallest eigenvalue {_fmt(lo, 3)})")
        out[k] = c
    return out


def _check_equal_covariance(cov: _Vectors, pairs: _Pairs, rtol: float) -> None:
    """Theorem 4.4 assumes Sigma_i = Sigma_j within each pair of Psi."""
    for a, b in pairs:
        ca, cb = cov[a], cov[b]
        scale = max(float(np.linalg.norm(ca)), float(np.linalg.norm(cb)), 1e-300)
        if float(np.linalg.norm(ca - cb)) > rtol * scale:
            raise ModelError(
                f"thetas {a!r} and {b!r} have different covariances of F (relative difference "
                f"{_fmt(np.linalg.norm(ca - cb) / scale, 3)} > {_fmt(rtol)}); Theorem 4.4 (and "
                "EigM, "
                f"DauM) assume equal covariances within each pair. Pass a common covariance "
                f"(e.g. pooled) and account for the approximation with Theorem 4.6/4.7")


def mean_difference_norm(means: PerTheta,
                         pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                         ord: float = 2) -> float:
    """Delta_E,p = max over Psi of ||E f_theta_i - E f_theta_j||_p (Section 4.1), rounded up."""
    mu, _ = _means(means)
    ps = _pairs(pairs, mu.keys())
    d = max(float(np.linalg.norm(mu[a] - mu[b], ord)) for a, b in ps)
    return mul_up(d, 1 + _SAFETY)


# ---------------------------------------------------------------------------------------------
# Gaussian calibration


def mahalanobis_budget(epsilon: float, delta: float, calibration: str = "classical"
                       ) -> tuple[float, str]:
    """The largest Mahalanobis distance r between equal-covariance Gaussians that is allowed.

    Returns (r, note), from :func:`quiltpriv.mechanisms.calibration.gaussian_budget`.
    ``classical``: r = eps / c_G (the paper's constant), valid by Dwork and Roth for eps < 1
    and, for eps >= 1, only after the exact privacy profile confirms it (else
    ParameterError). ``analytic``: the largest r with exact delta(eps) <= delta (bisection,
    returned from below).
    """
    budget = gaussian_budget(epsilon, delta, calibration)
    return budget.ratio, budget.note


# ---------------------------------------------------------------------------------------------
# Section 3: Wasserstein mechanisms (scalar F with finitely supported laws)


def _laws_1d(laws: Mapping[Any, tuple[NumbersLike, NumbersLike]]
             ) -> dict[Any, tuple[NumbersLike, NumbersLike]]:
    if not isinstance(laws, Mapping) or len(laws) < 2:
        raise ParameterError("laws must map at least two thetas to (support, probabilities)")
    out = {}
    for k, law in laws.items():
        try:
            xs, p = law
        except (TypeError, ValueError):
            raise ParameterError(f"law of F under theta {k!r} must be (support, probabilities)"
                                 ) from None
        out[k] = (xs, p)
    return out


def wasserstein_mechanism_1d(laws: Mapping[Any, tuple[NumbersLike, NumbersLike]],
                             epsilon: float, *,
                             pairs: Sequence[tuple[Hashable, Hashable]] | None = None
                             ) -> DistributionPrivacyResult:
    """Wasserstein Mechanism (Theorem 3.1): F + Lap(Delta_W / eps), (eps, 0).

    ``laws`` maps each theta to the exact finite law (support, probabilities) of the scalar F;
    Delta_W = max over Psi of W_inf, computed exactly (:mod:`quiltpriv.utils.distances`,
    rounded up).
    """
    eps = check_epsilon(epsilon)
    lw = _laws_1d(laws)
    ps = _pairs(pairs, lw.keys())
    w = max(wasserstein_line(*lw[a], *lw[b]).w_inf for a, b in ps)
    return DistributionPrivacyResult(
        "Wasserstein", "laplace", 1, eps, 0.0, laplace_scale=_scale(w, eps),
        sensitivity=w, assumptions=("the given laws are the exact laws of F under each theta",),
        notes=(f"Delta_W = max W_inf over {len(ps)} pairs = {_fmt(w, rounding='up')} (exact, "
               "rounded up)",))


def closeness_1d(xs: NumbersLike, p: NumbersLike, ys: NumbersLike, q: NumbersLike,
                 delta: float) -> float:
    """A W such that the two laws are (W, delta)-close (Definition 3.2), via the quantile coupling.

    The quantile coupling is a valid coupling, so the W it certifies (the smallest W with at
    most mass delta moved farther than W) is sound; it is optimal for W_inf but for a positive
    delta another coupling may certify a smaller W -- this errs towards more noise.
    """
    dl = _check_probability(delta)
    if dl == 0:
        return wasserstein_line(xs, p, ys, q).w_inf
    return wasserstein_line(xs, p, ys, q, tolerance=dl).w_inf_within_tolerance


def _check_probability(x: object, name: str = "delta") -> float:
    return check_delta(x, name, allow_zero=True)


def approximate_wasserstein_mechanism_1d(
        laws: Mapping[Any, tuple[NumbersLike, NumbersLike]], epsilon: float,
        delta: float, *, pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
) -> DistributionPrivacyResult:
    """Approximate Wasserstein Mechanism (Theorem 3.2): F + Lap(W / eps), (eps, delta).

    W = max over Psi of the closeness certified by :func:`closeness_1d` at this delta.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    lw = _laws_1d(laws)
    ps = _pairs(pairs, lw.keys())
    w = max(closeness_1d(*lw[a], *lw[b], dl) for a, b in ps)
    return DistributionPrivacyResult(
        "approximate Wasserstein", "laplace", 1, eps, dl, laplace_scale=_scale(w, eps),
        sensitivity=w, assumptions=("the given laws are the exact laws of F under each theta",),
        notes=(f"every pair is ({_fmt(w)}, {_fmt(dl)})-close, certified by the quantile coupling "
               "(an "
               f"upper bound on the least such W)",))


def bounded_query_mechanism(means: PerTheta, bound: float, epsilon: float,
                            delta: float, *,
                            pairs: Sequence[tuple[Hashable, Hashable]] | None = None
                            ) -> DistributionPrivacyResult:
    """[CO23, Thm. 3.3] with Theorem 3.2: F + Lap((Delta_E,1 + 2c) / eps) per coordinate.

    Assumption (the caller's): ||F - E F||_1 <= c = ``bound`` with probability >= 1 - delta/2
    under every theta. Then every pair is (Delta_E,1 + 2c, delta)-close.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    c = check_positive(bound, "bound", allow_zero=True)
    mu, m = _means(means)
    d1 = mean_difference_norm(mu, pairs, 1)
    w = mul_up(add_up(d1, c, c), 1 + _SAFETY)
    return DistributionPrivacyResult(
        "bounded query (Prop 3.3)", "laplace", m, eps, dl, laplace_scale=div_up(w, eps),
        sensitivity=w,
        assumptions=(f"||F - E F||_1 <= {_fmt(c)} with probability >= 1 - delta/2 = "
                     f"{_fmt(1 - dl / 2)} "
                     f"under every theta",),
        notes=(f"Delta_E,1 = {_fmt(d1)}; W = Delta_E,1 + 2c = {_fmt(w, rounding='up')}",))


# ---------------------------------------------------------------------------------------------
# Section 4.1-4.2: Expected Value Mechanisms


def _translation_assumption(covariances: PerTheta | None, mu: _Vectors, ps: _Pairs,
                            m: int) -> tuple[str, ...]:
    if covariances is None:
        return ("f_theta_i is a translation of f_theta_j for every pair (not checked: no "
                "covariances given)",)
    cov = _covariances(covariances, mu.keys(), m)
    _check_equal_covariance(cov, ps, 1e-9)
    return ("f_theta_i is a translation of f_theta_j for every pair (necessary condition "
            "checked: equal covariances within pairs)",)


def expm_laplace(means: PerTheta, epsilon: float, *,
                 pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                 covariances: PerTheta | None = None
                 ) -> DistributionPrivacyResult:
    """ExpM(L), Theorem 4.1: F + Lap(Delta_E,1 / eps) per coordinate, (eps, 0).

    Assumes translation (f_theta_i(t) = f_theta_j(t + c)); with ``covariances`` its
    necessary condition (equal covariances within each pair) is checked.
    """
    eps = check_epsilon(epsilon)
    mu, m = _means(means)
    ps = _pairs(pairs, mu.keys())
    assumptions = _translation_assumption(covariances, mu, ps, m)
    d1 = mean_difference_norm(mu, ps, 1)
    return DistributionPrivacyResult("ExpM(L)", "laplace", m, eps, 0.0,
                                     laplace_scale=div_up(d1, eps), sensitivity=d1,
                                     assumptions=assumptions,
                                     notes=(f"Delta_E,1 = {_fmt(d1)}",))


def expm_gaussian(means: PerTheta, epsilon: float, delta: float, *,
                  pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                  covariances: PerTheta | None = None,
                  calibration: str = "classical") -> DistributionPrivacyResult:
    """ExpM(G), Theorem 4.2: F + N(0, sigma^2 I), sigma = c_G Delta_E,2 / eps, (eps, delta).

    The paper states eps < 1 (the classical constant); for eps >= 1 the classical constant is
    used only when the exact Gaussian privacy profile confirms it (see module notes), else the
    call is refused.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    mu, m = _means(means)
    ps = _pairs(pairs, mu.keys())
    assumptions = _translation_assumption(covariances, mu, ps, m)
    r, note = mahalanobis_budget(eps, dl, calibration)
    d2 = mean_difference_norm(mu, ps, 2)
    sigma = div_up(d2, r)
    return DistributionPrivacyResult("ExpM(G)", "gaussian", m, eps, dl,
                                     covariance=mul_up(sigma, sigma) * np.eye(m), sensitivity=d2,
                                     assumptions=assumptions,
                                     notes=(f"Delta_E,2 = {_fmt(d2)}, sigma = "
                                            f"{_fmt(sigma, rounding='up')}", note))


def _unit_direction(direction: object, m: int) -> np.ndarray:
    v = check_vector(direction, "direction", m)
    n = float(np.linalg.norm(v))
    if n == 0:
        raise ParameterError("direction must be a non-zero vector")
    return v / n


def _check_direction(mu: _Vectors, ps: _Pairs, v: NDArray[np.float64], rtol: float) -> float:
    """All mean differences parallel to v (Theorem 4.3); returns max |alpha| = |d . v|."""
    worst = 0.0
    for a, b in ps:
        d = mu[a] - mu[b]
        alpha = float(d @ v)
        resid = float(np.linalg.norm(d - alpha * v))
        if resid > rtol * max(float(np.linalg.norm(d)), 1e-300) and resid > 0:
            raise ModelError(
                f"the means of thetas {a!r} and {b!r} differ outside the declared direction "
                f"(component orthogonal to it has norm {_fmt(resid, 3)}, "
                f"{_fmt(resid / np.linalg.norm(d), 3)} of the difference)")
        worst = max(worst, abs(alpha), float(np.linalg.norm(d)))
    return mul_up(worst, 1 + _SAFETY)


def _default_direction(mu: _Vectors, ps: _Pairs) -> np.ndarray:
    for a, b in ps:
        d = mu[a] - mu[b]
        if np.linalg.norm(d) > 0:
            return d / np.linalg.norm(d)
    raise ParameterError("all pairs have equal means: no direction to infer; pass direction=")


def dirm_laplace(means: PerTheta, epsilon: float, *,
                 direction: ArrayLike | None = None,
                 pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                 covariances: PerTheta | None = None,
                 direction_rtol: float = 1e-9) -> DistributionPrivacyResult:
    """DirM(L), Theorem 4.3: F + Y v, Y ~ Lap(Delta_E,2 / eps), (eps, 0).

    Every mean difference must be parallel to the unit vector v (checked, relative tolerance
    ``direction_rtol``; the default direction is that of the first non-zero difference).
    Translation is assumed as for ExpM.
    """
    eps = check_epsilon(epsilon)
    mu, m = _means(means)
    ps = _pairs(pairs, mu.keys())
    assumptions = _translation_assumption(covariances, mu, ps, m)
    v = _default_direction(mu, ps) if direction is None else _unit_direction(direction, m)
    d2 = _check_direction(mu, ps, v, direction_rtol)
    return DistributionPrivacyResult("DirM(L)", "laplace-direction", m, eps, 0.0,
                                     laplace_scale=div_up(d2, eps), direction=v, sensitivity=d2,
                                     assumptions=assumptions,
                                     notes=(f"Delta_E,2 = {_fmt(d2)}; all mean differences "
                                            f"parallel to v (checked)",))


def dirm_gaussian(means: PerTheta, epsilon: float, delta: float, *,
                  direction: ArrayLike | None = None,
                  pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                  covariances: PerTheta | None = None,
                  calibration: str = "classical",
                  direction_rtol: float = 1e-9) -> DistributionPrivacyResult:
    """DirM(G) (Gaussian form of Theorem 4.3): F + Y v, Y ~ N(0, (c_G Delta_E,2 / eps)^2)."""
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    mu, m = _means(means)
    ps = _pairs(pairs, mu.keys())
    assumptions = _translation_assumption(covariances, mu, ps, m)
    v = _default_direction(mu, ps) if direction is None else _unit_direction(direction, m)
    d2 = _check_direction(mu, ps, v, direction_rtol)
    r, note = mahalanobis_budget(eps, dl, calibration)
    s2 = _square_up(div_up(d2, r))
    return DistributionPrivacyResult("DirM(G)", "gaussian", m, eps, dl,
                                     covariance=s2 * np.outer(v, v), direction=v,
                                     sensitivity=d2, assumptions=assumptions,
                                     notes=(f"Delta_E,2 = {_fmt(d2)}, variance {_fmt(s2)} along v",
                                            note))


# ---------------------------------------------------------------------------------------------
# Section 4.3 and Appendix A: adversarial uncertainty (Gaussian f_theta)


def _gaussian_model(means, covariances, pairs, covariance_rtol):
    mu, m = _means(means)
    ps = _pairs(pairs, mu.keys())
    cov = _covariances(covariances, mu.keys(), m)
    _check_equal_covariance(cov, ps, covariance_rtol)
    return mu, m, ps, cov


_GAUSSIAN_ASSUMPTION = ("F(Data) ~ N(mu_theta, Sigma_theta) under every theta (Gaussian model "
                        "of f_theta; equal covariances within each pair checked)",)


def _mahalanobis(d: np.ndarray, a: np.ndarray) -> float:
    """d^T a^-1 d for a symmetric PSD a; infinite when d leaves the range of a."""
    lam, u = np.linalg.eigh(a)
    z = u.T @ d
    tiny = 1e-12 * max(float(lam.max()), 1e-300)
    pos = lam > tiny
    if np.any(np.abs(z[~pos]) > 1e-12 * max(float(np.linalg.norm(d)), 1e-300)):
        return math.inf  # the two Gaussians have disjoint supports along a null direction
    return float(np.sum(z[pos] ** 2 / lam[pos]))


def gaussian_noise_check(means: PerTheta,
                         covariances: PerTheta, epsilon: float, delta: float,
                         noise_covariance: ArrayLike | None = None, *,
                         pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                         calibration: str = "classical",
                         covariance_rtol: float = 1e-9) -> MechanismCheck:
    """Corollary A.1 (Theorem 4.4 when ``noise_covariance`` is None): is F + N(0, S) private?

    Holds when (mu_i - mu_j)^T (Sigma_i + S)^-1 (mu_i - mu_j) <= r^2 = (eps / c_G)^2 for every
    pair of Psi, with f_theta Gaussian and Sigma_i = Sigma_j within pairs (checked).
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    mu, m, ps, cov = _gaussian_model(means, covariances, pairs, covariance_rtol)
    s = np.zeros((m, m)) if noise_covariance is None else _matrix(noise_covariance,
                                                                  "noise_covariance", m)
    if float(np.linalg.eigvalsh(s)[0]) < -1e-12 * max(1.0, float(np.abs(s).max())):
        raise ModelError("noise_covariance is not positive semidefinite")
    r, note = mahalanobis_budget(eps, dl, calibration)
    worst, worst_pair = -1.0, ps[0]
    for a, b in ps:
        v = _mahalanobis(mu[a] - mu[b], cov[a] + s)
        if v > worst:
            worst, worst_pair = v, (a, b)
    return MechanismCheck(worst <= r * r, worst, r * r, worst_pair, eps, dl,
                          (note, "Theorem 4.4" if noise_covariance is None else
                           "Corollary A.1"))


def no_noise_check(means: PerTheta, covariances: PerTheta,
                   epsilon: float, delta: float, **kwargs: Any) -> MechanismCheck:
    """Theorem 4.4: is releasing F with no noise (eps, delta)-distribution private?"""
    return gaussian_noise_check(means, covariances, epsilon, delta, None, **kwargs)


def _release_checked(result: DistributionPrivacyResult, mu: _Vectors, cov: _Vectors,
                     ps: _Pairs, r: float) -> DistributionPrivacyResult:
    """Re-verify a Gaussian plan with Corollary A.1 (defence in depth); refuse if it fails."""
    noise_cov = cast(np.ndarray, result.covariance)  # a Gaussian plan has one
    worst = max(_mahalanobis(mu[a] - mu[b], cov[a] + noise_cov) for a, b in ps)
    if not worst <= r * r:
        raise ModelError(f"{result.mechanism}: internal check of Corollary A.1 failed "
                         f"({_fmt(worst)} > {_fmt(r * r)}); not releasing")
    return dataclasses.replace(
        result, notes=result.notes + (f"Corollary A.1 re-checked: max Mahalanobis term "
                                      f"{_fmt(worst)} <= (eps/c)^2 = {_fmt(r * r)}",))


def eigm_gaussian(means: PerTheta, covariances: PerTheta,
                  epsilon: float, delta: float, *,
                  pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                  eigenvectors: ArrayLike | None = None, calibration: str = "classical",
                  covariance_rtol: float = 1e-9,
                  eigenvector_rtol: float = 1e-8) -> DistributionPrivacyResult:
    """EigM(G), Theorem 4.5: F + N(0, sum_k s_k^2 v_k v_k^T).

    lambda2_{theta,k} = v_k^T Sigma_theta v_k; s_k^2 = max_theta max(0, (c_G Delta_E,2/eps)^2
    - lambda2_{theta,k}). Every Sigma_theta must be diagonal in the shared orthonormal basis v
    (columns of ``eigenvectors``; default: eigenvectors of the mean covariance), checked to
    ``eigenvector_rtol``; otherwise refused.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    mu, m, ps, cov = _gaussian_model(means, covariances, pairs, covariance_rtol)
    if eigenvectors is None:
        _, vecs = np.linalg.eigh(sum(cov.values()) / len(cov))
    else:
        vecs = _matrix_any(eigenvectors, "eigenvectors", m)
        if not np.allclose(vecs.T @ vecs, np.eye(m), atol=1e-9):
            raise ParameterError("eigenvectors must be an orthonormal basis (as columns)")
    lam = {}
    for k, c in cov.items():
        rot = vecs.T @ c @ vecs
        off = rot - np.diag(np.diag(rot))
        scale = max(float(np.linalg.norm(c)), 1e-300)
        if float(np.linalg.norm(off)) > eigenvector_rtol * scale:
            raise ModelError(
                f"the covariances do not share eigenvectors (theta {k!r}: off-diagonal part "
                f"{_fmt(np.linalg.norm(off) / scale, 3)} of its norm in the shared basis); EigM "
                f"(Theorem 4.5) does not apply -- use DauM, ExpM(G) or a common covariance")
        lam[k] = np.diag(rot)
    r, note = mahalanobis_budget(eps, dl, calibration)
    d2 = mean_difference_norm(mu, ps, 2)
    target = _square_up(div_up(d2, r))
    s2 = np.max([np.maximum(0.0, target - lam[k]) for k in cov], axis=0) * (1 + _SAFETY)
    s = (vecs * s2) @ vecs.T
    s = 0.5 * (s + s.T)
    res = DistributionPrivacyResult(
        "EigM(G)", "gaussian", m, eps, dl, covariance=s, sensitivity=d2,
        release_sigma=_coupling_sigma(d2, r, s), assumptions=_GAUSSIAN_ASSUMPTION,
        notes=(f"Delta_E,2 = {_fmt(d2)}; (c Delta_E,2/eps)^2 = {_fmt(target, 8)}",
               "s_k^2 per eigenvector: " + ", ".join(f"{_fmt(x)}" for x in s2), note,
               "shared eigenvectors checked"))
    return _release_checked(res, mu, cov, ps, r)


def _coupling_sigma(sensitivity: float, r: float, covariance: np.ndarray) -> float:
    """The isotropic sigma an exact release of EigM(G) / DauM(G) adds (rounded up).

    ``sensitivity / r``: F' = F + (mu_j - mu_i) couples the two Gaussian laws of F (equal
    covariances), a shift of L2 norm at most ``sensitivity``, which isotropic noise of this
    sigma hides at (eps, delta) without using F's own variance. Never below the plan's largest
    noise standard deviation.
    """
    top = max(0.0, float(np.linalg.eigvalsh(covariance)[-1]))
    return mul_up(max(div_up(sensitivity, r), sqrt_up(top)), 1 + _SAFETY)


def _matrix_any(x: object, name: str, m: int) -> np.ndarray:
    a = check_array(x, name)
    if a.shape != (m, m):
        raise ParameterError(f"{name} must be a finite {m}x{m} matrix, got shape {a.shape}")
    return a


def _inverse_quadratic(c: np.ndarray, v: np.ndarray) -> float:
    """1 / (v^T c^-1 v), rounded down (0 when v is not in the range of c or c is singular)."""
    lam, u = np.linalg.eigh(c)
    if float(lam[0]) <= 1e-12 * max(float(lam[-1]), 1e-300):
        return 0.0  # safe: subtracting less from the required variance adds more noise
    z = u.T @ v
    return (1.0 / float(np.sum(z * z / lam))) * (1 - _SAFETY)


def daum_gaussian(means: PerTheta, covariances: PerTheta,
                  epsilon: float, delta: float, *, direction: ArrayLike | None = None,
                  pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                  calibration: str = "classical", covariance_rtol: float = 1e-9,
                  direction_rtol: float = 1e-9) -> DistributionPrivacyResult:
    """DauM(G), [CO23, Alg. 1, Thm. A.1]: F + N(0, s^2 v v^T).

    For each pair, alpha = (mu_i - mu_j)^T v; Sigma_i + t v v^T is positive definite iff
    1 + t v^T Sigma_i^-1 v > 0 (matrix determinant lemma), so the least s^2 of line 1 of
    [CO23, Alg. 1] is (alpha c_G / eps)^2 - 1 / (v^T Sigma_i^-1 v), clipped at 0 -- and by
    Sherman-Morrison exactly this s^2 makes the Corollary A.1 term equal (eps/c_G)^2. s^2 is the
    maximum over Psi. Mean differences must be parallel to v (checked).
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    mu, m, ps, cov = _gaussian_model(means, covariances, pairs, covariance_rtol)
    v = _default_direction(mu, ps) if direction is None else _unit_direction(direction, m)
    _check_direction(mu, ps, v, direction_rtol)
    r, note = mahalanobis_budget(eps, dl, calibration)
    s2 = 0.0
    for a, b in ps:
        d = mu[a] - mu[b]
        alpha = mul_up(float(np.linalg.norm(d)), 1 + _SAFETY)  # |alpha| <= ||d||, parallel
        s2 = max(s2, _square_up(div_up(alpha, r)) - _inverse_quadratic(cov[a], v))
    s2 = mul_up(max(0.0, s2), 1 + _SAFETY)
    d2 = mean_difference_norm(mu, ps, 2)
    res = DistributionPrivacyResult(
        "DauM(G)", "gaussian", m, eps, dl, covariance=s2 * np.outer(v, v), direction=v,
        sensitivity=d2, release_sigma=_coupling_sigma(d2, r, s2 * np.outer(v, v)),
        assumptions=_GAUSSIAN_ASSUMPTION,
        notes=(f"variance {_fmt(s2, 8)} along v (matrix determinant lemma closed form)", note,
               "mean differences parallel to v checked"))
    return _release_checked(res, mu, cov, ps, r)


def daum_variance_bisection(covariance: ArrayLike, direction: ArrayLike, alpha: float,
                            epsilon: float, delta: float, *, calibration: str = "classical",
                            iterations: int = 200) -> float:
    """Reference for DauM: the least s^2 >= 0 with Sigma + (s^2 - (alpha/r)^2) v v^T positive
    definite, by bisection on the smallest eigenvalue (as the paper's code does). Slow and
    obviously correct; :func:`daum_gaussian` uses the closed form."""
    v = _unit_direction(direction, np.asarray(direction).size)
    m = v.size
    c = _matrix(covariance, "covariance", m)
    r, _ = mahalanobis_budget(epsilon, delta, calibration)
    base = (float(alpha) / r) ** 2

    def pd(s2: float) -> bool:
        return float(np.linalg.eigvalsh(c + (s2 - base) * np.outer(v, v))[0]) > 0

    if pd(0.0):
        return 0.0
    lo, hi = 0.0, base
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if pd(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------------------------------------
# group DP baselines (Table 2)


@renamed_keywords(n_records="records")
def group_dp_gaussian(sensitivity_l2: float, records: int, dimension: int, epsilon: float,
                      delta: float, *, calibration: str = "classical"
                      ) -> DistributionPrivacyResult:
    """GroupDP(G): F + N(0, sigma^2 I), sigma = c_G n Delta_2 / eps (group of all n records).

    ``sensitivity_l2`` is the per-record L2 sensitivity of F. No assumption on Theta. The
    noise is :func:`quiltpriv.mechanisms.group_dp.group_gaussian`'s (the one group-DP
    baseline), applied to each of the ``dimension`` coordinates.
    """
    m = check_records(dimension, "dimension")
    res = group_gaussian(sensitivity_l2, records, epsilon, delta, calibration=calibration)
    return DistributionPrivacyResult(
        "GroupDP(G)", "gaussian", m, res.epsilon, res.delta,
        covariance=res.scale ** 2 * np.eye(m), sensitivity=res.group_sensitivity,
        notes=(f"group sensitivity n Delta_2 = {_fmt(res.group_sensitivity)}, sigma = "
               f"{_fmt(res.scale, rounding='up')}", *res.notes[1:]))


@renamed_keywords(n_records="records")
def group_dp_laplace(sensitivity_l1: float, records: int, dimension: int, epsilon: float
                     ) -> DistributionPrivacyResult:
    """GroupDP(L): F + Lap(n Delta_1 / eps) per coordinate, (eps, 0) for any property.

    The scale is :func:`quiltpriv.mechanisms.group_dp.group_laplace`'s.
    """
    m = check_records(dimension, "dimension")
    res = group_laplace(sensitivity_l1, records, epsilon)
    return DistributionPrivacyResult("GroupDP(L)", "laplace", m, res.epsilon, 0.0,
                                     laplace_scale=res.scale, sensitivity=res.group_sensitivity,
                                     notes=(f"group sensitivity n Delta_1 = "
                                            f"{_fmt(res.group_sensitivity)}",))


# ---------------------------------------------------------------------------------------------
# Section 4.4: relaxed assumptions


@dataclass(frozen=True)
class RelaxedGuarantee(JSONResult):
    """Privacy of a mechanism run on approximations f~ of the true f_theta (Thms 4.6, 4.7).

    ``extra_laplace_scale`` is the per-coordinate Laplace noise to add on top of the base
    mechanism (Theorem 4.7; 0 for Theorem 4.6).
    """

    epsilon: float
    delta: float
    extra_laplace_scale: float
    theorem: str
    notes: tuple[str, ...] = field(default=())


def relaxed_max_divergence(epsilon: float, delta: float, lam: float, eta: float
                           ) -> RelaxedGuarantee:
    """Theorem 4.6: base (eps, delta) on f~; symmetric eta-approximate max-divergence between
    f~_theta and f_theta at most lambda for every theta (noise independent of Data) gives
    (eps + 2 lambda, (1 + e^(eps + lambda)) eta + e^lambda delta)."""
    eps = check_epsilon(epsilon)
    dl = _check_probability(delta)
    la = check_positive(lam, "lambda", allow_zero=True)
    et = _check_probability(eta, "eta")
    new_delta = add_up(mul_up(add_up(1, exp_up(add_up(eps, la))), et), mul_up(exp_up(la), dl))
    return RelaxedGuarantee(add_up(eps, la, la), new_delta, 0.0, "Theorem 4.6",
                            (f"lambda = {_fmt(la)}, eta = {_fmt(et)}",))


def relaxed_wasserstein(epsilon: float, delta: float, wasserstein: float, lam: float
                        ) -> RelaxedGuarantee:
    """Theorem 4.7: with W = sup_theta W_inf(f_theta, f~_theta) (L1 ground norm), adding
    Lap(W / lambda) per coordinate to a mechanism that is (eps, delta) on f~ gives
    (eps + 2 lambda, e^lambda delta) on the true f."""
    eps = check_epsilon(epsilon)
    dl = _check_probability(delta)
    w = check_positive(wasserstein, "wasserstein", allow_zero=True)
    la = check_epsilon(lam, "lambda")
    return RelaxedGuarantee(add_up(eps, la, la), mul_up(exp_up(la), dl), _scale(w, la),
                            "Theorem 4.7", (f"W = {_fmt(w)}, lambda = {_fmt(la)}",))
