"""Exact (epsilon, delta) auditor for the Attribute-Private Gaussian Mechanism ([ZOC22, Sec. 4]).

APGM ([ZOC22, Alg. 1]) releases ``F(X) + N(0, sigma^2 I)``. When Theta is finite and
``F(X) | s, theta`` is Gaussian (the setting of Theorem 1, e.g. the Section 4.3 model of
multivariate Gaussian records with column-mean queries), the released value given secret ``s``
under ``theta`` is exactly ``N(E[F | s, theta], Cov(F | s, theta) + sigma^2 I)``. Dataset
attribute privacy (Definition 3) at ``(eps, delta)`` asks, for every theta and every pair of
secrets, that ``sup_T P_a(T) - e^eps P_b(T) <= delta`` in both directions. This module computes
that supremum (the hockey-stick divergence ``int (p_a - e^eps p_b)_+``) exactly and checks it
against the mechanism's delta. Nothing is sampled.

Exact formulas
--------------
* Equal covariances ``S`` (the case Theorem 1 is about): the privacy loss is one-dimensional
  along the whitened mean shift, so with the Mahalanobis distance ``D = ||S^{-1/2}(m_a - m_b)||``
  the smallest delta is ([BW18, Thm. 8]; :func:`gaussian_delta`, from
  :mod:`quiltpriv.mechanisms.calibration`)

      delta = Phi(D/2 - eps/D) - e^eps Phi(-D/2 - eps/D),

  symmetric in the two directions. A singular ``S`` whose null space the shift leaves gives
  delta = 1 (the two laws live on different affine subspaces).
* Scalar F with different variances ``v_a != v_b``: ``log p_a - log p_b - eps`` is a quadratic
  in the output, so the set ``{p_a > e^eps p_b}`` is an interval or the complement of one
  whose end points are its real roots (found in closed form); the divergence is then a sum of
  normal-CDF differences ``P_a(I) - e^eps P_b(I)``. Both directions are computed.
  Unequal covariances of a *vector* F are not audited (refused).

The released noise of :meth:`quiltpriv.mechanisms.apgm.APGMResult.release` is an exact
discrete Gaussian on a fine grid; this auditor audits the ideal continuous Gaussian of standard
deviation ``sigma`` that Theorem 1 is about.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from quiltpriv.errors import ModelError, ParameterError, QueryError
from quiltpriv.mechanisms.apgm import (
    APGMResult,
    ConditionalMoments,
    GaussianRecordModel,
    query_weights,
)
from quiltpriv.mechanisms.calibration import gaussian_delta
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import (
    check_covariance,
    check_delta,
    check_epsilon,
    check_positive,
    check_records,
    check_vector,
)

__all__ = [
    "GAUSSIAN_AUDIT_TOLERANCE",
    "GaussianAuditResult",
    "audit_apgm",
    "audit_apgm_gaussian_columns",
    "audit_gaussian_release",
    "column_mean_laws",
    "gaussian_delta",
    "gaussian_hockey_stick",
]

#: A release passes when its audited delta is at most ``delta + GAUSSIAN_AUDIT_TOLERANCE``.
#: The audited delta is a closed form in ``log_ndtr``/``ndtr`` (absolute error ~1e-16 per
#: term) and the calibration adds ~1e-9 relative to sigma (its safety rule), so 1e-9 separates
#: rounding from a real violation.
GAUSSIAN_AUDIT_TOLERANCE = 1e-9

#: attribute -> one mapping per theta of secret -> (mean, covariance) of F given the secret.
GaussianLaws = Mapping[Any, Sequence[Mapping[Any, tuple[ArrayLike, ArrayLike]]]]


# ---------------------------------------------------------------------------------------------
# Exact hockey-stick divergences of Gaussians


def _interval_mass(lo: float, hi: float, m: float, s: float) -> float:
    """P(lo < N(m, s^2) < hi), from the tail that keeps precision."""
    zl, zh = (lo - m) / s, (hi - m) / s
    if zl > 0:  # both in the upper tail
        return float(special.ndtr(-zl) - special.ndtr(-zh))
    return float(special.ndtr(zh) - special.ndtr(zl))


def _one_direction(eps: float, m1: float, v1: float, m2: float, v2: float) -> float:
    """int (p1 - e^eps p2)_+ for p1 = N(m1, v1), p2 = N(m2, v2), v1 != v2, both > 0."""
    c = math.exp(eps)
    # log p1 - log p2 - eps = A x^2 + B x + C0
    a = 0.5 / v2 - 0.5 / v1
    b = m1 / v1 - m2 / v2
    c0 = m2 * m2 / (2 * v2) - m1 * m1 / (2 * v1) - 0.5 * math.log(v1 / v2) - eps
    disc = b * b - 4 * a * c0
    s1, s2 = math.sqrt(v1), math.sqrt(v2)
    if disc <= 0:
        # no sign change: the region is empty (a < 0) or the whole line (a > 0, impossible for
        # eps >= 0 since it would give 1 - e^eps < 0; kept for completeness).
        return 0.0 if a < 0 else max(0.0, 1.0 - c)
    sq = math.sqrt(disc)
    q = -0.5 * (b + math.copysign(sq, b))  # stable quadratic roots
    r1, r2 = sorted((q / a, c0 / q))  # q != 0 since disc > 0
    if a < 0:  # p1 > c p2 between the roots
        val = _interval_mass(r1, r2, m1, s1) - c * _interval_mass(r1, r2, m2, s2)
    else:  # outside the roots
        val = (_interval_mass(-math.inf, r1, m1, s1) + _interval_mass(r2, math.inf, m1, s1)
               - c * (_interval_mass(-math.inf, r1, m2, s2)
                      + _interval_mass(r2, math.inf, m2, s2)))
    return max(0.0, float(val))


def gaussian_hockey_stick(
    epsilon: float, mean1: float, var1: float, mean2: float, var2: float
) -> float:
    """Smallest delta making N(mean1, var1) and N(mean2, var2) (eps, delta)-indistinguishable.

    The maximum over both directions of ``sup_T P1(T) - e^eps P2(T) = int (p1 - e^eps p2)_+``.
    Equal variances use :func:`gaussian_delta`; otherwise the crossing points of the two
    log-densities (a quadratic) are found in closed form and the integral is a sum of normal
    CDF differences (module docstring). A zero variance is a point mass: delta = 1 unless
    both laws are the same point mass.
    """
    eps = check_positive(epsilon, "epsilon", allow_zero=True)
    m1, m2 = float(mean1), float(mean2)
    if not (math.isfinite(m1) and math.isfinite(m2)):
        raise ParameterError("means must be finite")
    v1 = check_positive(var1, "var1", allow_zero=True)
    v2 = check_positive(var2, "var2", allow_zero=True)
    if v1 == v2:
        return gaussian_delta(eps, abs(m1 - m2), math.sqrt(v1))
    if v1 == 0 or v2 == 0:
        return 1.0  # a point mass against a density: T = {the point} (or its complement)
    return max(_one_direction(eps, m1, v1, m2, v2), _one_direction(eps, m2, v2, m1, v1))


def _mvn_delta(eps: float, shift: np.ndarray, cov: np.ndarray) -> float:
    """Exact delta of N(m, S) against N(m + shift, S): whiten the shift (module docstring)."""
    if not np.any(shift):
        return 0.0
    lam, u = np.linalg.eigh((cov + cov.T) / 2)
    z = u.T @ shift
    scale = max(float(lam.max()), 0.0)
    null = lam <= 1e-12 * scale if scale > 0 else np.ones_like(lam, dtype=bool)
    if np.any(np.abs(z[null]) > 1e-12 * float(np.linalg.norm(shift))):
        return 1.0  # the laws sit on different affine subspaces
    dist = math.sqrt(float(np.sum(z[~null] ** 2 / lam[~null])))
    return gaussian_delta(eps, dist, 1.0)


# ---------------------------------------------------------------------------------------------
# The audit


@dataclass(frozen=True)
class GaussianAuditResult(JSONResult):
    """The exact worst-case delta of ``F(X) + N(0, sigma^2 I)`` at the mechanism's epsilon.

    Attributes
    ----------
    audited_delta : float
        max over attributes, theta and ordered secret pairs of ``sup_T P_a(T) - e^eps P_b(T)``
        (the smallest delta the release meets at ``epsilon``); 0 if no pair exists.
    epsilon, delta : float
        The guarantee the release claims.
    met : bool
        ``audited_delta <= delta + tolerance``.
    margin : float
        ``delta - audited_delta`` (negative for a violation).
    tolerance : float
        The numerical tolerance of ``met``.
    sigma : float
        The noise standard deviation audited.
    worst_attribute, worst_theta, worst_pair
        Where the audited delta is attained (``None`` if no pair exists).
    pairs_audited : int
        Unordered secret pairs ``(attribute, theta, a, b)`` examined (both directions each).
    closed_form : bool
        True when every pair had equal covariances (Theorem 8 closed form); False when some
        scalar pair needed the unequal-variance computation.
    notes : tuple of str
    """

    audited_delta: float
    epsilon: float
    delta: float
    met: bool
    margin: float
    tolerance: float
    sigma: float
    worst_attribute: Hashable | None
    worst_theta: int | None
    worst_pair: tuple[Hashable, Hashable] | None
    pairs_audited: int
    closed_form: bool
    notes: tuple[str, ...] = field(default=())


def _as_cov(x: ArrayLike, k: int, what: str) -> np.ndarray:
    return check_covariance(x, what, k, error=ModelError)


def audit_gaussian_release(
    laws: GaussianLaws,
    sigma: float,
    epsilon: float,
    delta: float,
    *,
    pairs: Mapping[Hashable, Sequence[tuple[Hashable, Hashable]]] | None = None,
) -> GaussianAuditResult:
    """Exact audit of ``F(X) + N(0, sigma^2 I)`` when ``F | s, theta`` is Gaussian.

    Parameters
    ----------
    laws
        Protected attribute -> one mapping per theta of secret -> (E[F | s, theta],
        Cov(F | s, theta)); the covariance may differ between secrets (then F must be scalar).
    sigma
        Noise standard deviation (0: F released exactly).
    epsilon, delta
        The guarantee to check (Definition 3).
    pairs
        Optional attribute -> secret pairs; default every pair of distinct secrets.
    """
    s = check_positive(sigma, "sigma", allow_zero=True)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    if not laws:
        raise ParameterError("no protected attribute given")
    worst: tuple[float, Hashable | None, int | None, tuple[Hashable, Hashable] | None] = (
        0.0, None, None, None)
    count, closed = 0, True
    for attr, thetas in laws.items():
        for t, secret_laws in enumerate(thetas):
            moments = {}
            for sec, (mean, cov) in secret_laws.items():
                m = check_vector(mean, f"E[F | {sec!r}] (attribute {attr!r}, theta {t})")
                c = _as_cov(cov, m.size, f"Cov(F | {sec!r}) (attribute {attr!r}, theta {t})")
                moments[sec] = (m, c + s * s * np.eye(m.size))
            if len({m.size for m, _ in moments.values()}) > 1:
                raise ParameterError("all conditional means must have the same dimension")
            attr_pairs = (pairs or {}).get(attr)
            if attr_pairs is None:
                attr_pairs = list(combinations(moments, 2))
            for a, b in attr_pairs:
                if a not in moments or b not in moments:
                    raise ParameterError(f"attribute {attr!r}, theta {t}: pair ({a!r}, {b!r}) "
                                         "names a secret without a law")
                (ma, ca), (mb, cb) = moments[a], moments[b]
                if np.array_equal(ca, cb):
                    d = _mvn_delta(eps, ma - mb, ca)
                elif ma.size == 1:
                    closed = False
                    d = gaussian_hockey_stick(eps, ma[0], ca[0, 0], mb[0], cb[0, 0])
                else:
                    raise ParameterError(
                        f"attribute {attr!r}, theta {t}: secrets {a!r} and {b!r} have different "
                        "covariances of a vector F; only a scalar F is audited in that case")
                count += 1
                if d > worst[0] or worst[1] is None:
                    worst = (d, attr, t, (a, b))
    audited = worst[0]
    notes = ["ideal continuous Gaussian noise audited; F | secret, theta taken as the given "
             "Gaussian laws (Theorem 1's setting)"]
    return GaussianAuditResult(
        audited_delta=audited, epsilon=eps, delta=dl,
        met=audited <= dl + GAUSSIAN_AUDIT_TOLERANCE, margin=dl - audited,
        tolerance=GAUSSIAN_AUDIT_TOLERANCE, sigma=s, worst_attribute=worst[1],
        worst_theta=worst[2], worst_pair=worst[3], pairs_audited=count, closed_form=closed,
        notes=tuple(notes))


def _check_result(result: object) -> APGMResult:  # untrusted: any object
    if not isinstance(result, APGMResult):
        raise ParameterError("result must be the APGMResult the mechanism returned")
    return result


def audit_apgm(
    moments: Mapping[Hashable, Sequence[ConditionalMoments]],
    result: APGMResult,
    *,
    pairs: Mapping[Hashable, Sequence[tuple[Hashable, Hashable]]] | None = None,
    variances: Mapping[Hashable, Sequence[Mapping[Hashable, ArrayLike]]] | None = None,
) -> GaussianAuditResult:
    """Audit the plan of :func:`quiltpriv.mechanisms.apgm.apgm` ([ZOC22, Alg. 1]) exactly.

    ``moments`` and ``pairs`` are what was passed to ``apgm``; ``result`` is its return value
    (its ``sigma``, ``epsilon`` and ``delta`` are audited). By default each secret's law is
    ``N(mean, variance)`` with the variance of its :class:`ConditionalMoments` (Theorem 1's
    assumption). ``variances`` (attribute -> per theta, secret -> the true conditional
    variance) replaces it per secret, to audit a model where that assumption fails.
    """
    res = _check_result(result)
    laws: dict[Hashable, list[dict[Hashable, tuple[ArrayLike, ArrayLike]]]] = {}
    for attr, thetas in moments.items():
        if isinstance(thetas, ConditionalMoments):
            thetas = [thetas]
        per = []
        for t, cm in enumerate(thetas):
            over = None
            if variances is not None and attr in variances:
                try:
                    over = variances[attr][t]
                except (IndexError, KeyError):
                    raise ParameterError(
                        f"no variances for attribute {attr!r}, theta {t}") from None
            if over is not None and set(over) != set(cm.means):
                raise ParameterError(f"variances for attribute {attr!r}, theta {t} must name "
                                     "exactly the secrets of its moments")
            per.append({sec: (m, cm.variance if over is None else over[sec])
                        for sec, m in cm.means.items()})
        laws[attr] = per
    return audit_gaussian_release(laws, res.sigma, res.epsilon, res.delta, pairs=pairs)


@renamed_keywords(n_records="records")
def column_mean_laws(
    models: GaussianRecordModel | Sequence[GaussianRecordModel],
    records: int,
    query: str | Sequence[str] | Mapping[str, float],
    secrets: Mapping[str, Sequence[float]],
) -> dict[str, list[dict[float, tuple[np.ndarray, np.ndarray]]]]:
    """Exact laws of F = W xbar given xbar_i = a, for each value a of each U_i (Section 4.3).

    With records i.i.d. N(mu, V), xbar ~ N(mu, V / n), and conditioning on the coordinate
    xbar_i = a gives mean ``mu + V e_i (a - mu_i) / V_ii`` and covariance
    ``(V - V e_i e_i^T V / V_ii) / n``; F = W xbar maps both linearly. Derived here from the
    model, independently of the mechanism's closed forms.
    """
    n = check_records(records, "records")
    thetas = [models] if isinstance(models, GaussianRecordModel) else list(models)
    if not thetas:
        raise ParameterError("Theta is empty")
    w = query_weights(query, thetas[0].columns)
    laws: dict[str, list[dict[float, tuple[np.ndarray, np.ndarray]]]] = {}
    for name, values in secrets.items():
        if name not in thetas[0].columns:
            raise QueryError(f"protected column {name!r} is not in the model")
        i = thetas[0].columns.index(name)
        per = []
        for th in thetas:
            mu, v = th.mean, th.covariance
            if v[i, i] <= 0:
                raise ModelError(f"protected column {name!r} has zero variance")
            col = v[:, i] / v[i, i]
            cond = (v - np.outer(v[:, i], v[:, i]) / v[i, i]) / n
            cov_f = w @ cond @ w.T
            per.append({float(a): (w @ (mu + col * (float(a) - mu[i])), cov_f)
                        for a in np.atleast_1d(np.asarray(values, dtype=float))})
        laws[name] = per
    return laws


@renamed_keywords(n_records="records")
def audit_apgm_gaussian_columns(
    models: GaussianRecordModel | Sequence[GaussianRecordModel],
    records: int,
    query: str | Sequence[str] | Mapping[str, float],
    secrets: Mapping[str, Sequence[float]],
    result: APGMResult,
) -> GaussianAuditResult:
    """Audit :func:`quiltpriv.mechanisms.apgm.apgm_gaussian_columns` (Section 4.3) exactly.

    Takes the mechanism's inputs and its result; every pair of values of each U_i under each
    theta is audited with the exact conditional laws of :func:`column_mean_laws` (the secret
    g_i = a is the event that the column mean equals a).
    """
    res = _check_result(result)
    laws = column_mean_laws(models, records, query, secrets)
    return audit_gaussian_release(laws, res.sigma, res.epsilon, res.delta)
