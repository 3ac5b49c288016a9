"""A common adversary scorecard for mechanisms with a discrete secret.

Generative adversarial privacy (GAP; Huang, Kairouz, Chen, Sankar, Rajagopal 2017, Section 2.2)
compares mechanisms by what an adversary who knows everything except the secret can infer from
the output. Two scores are reported for any mechanism whose secret takes finitely many values:

* the accuracy of the MAP adversary (0-1 loss, Eq. (5)):
  ``sum over outputs o of max_y P(Y = y, O = o)`` (an integral over o for continuous outputs);
* the mutual information ``I(Y; O)`` (log-loss, Eq. (8)), in bits.

These are *context-aware* scores: they depend on the prior of the secret and on the law of the
output, and they are **not** an epsilon guarantee. They are the common yardstick along which GAP
mechanisms and epsilon-mechanisms can be compared (adversary accuracy against distortion).

Three kinds of output are scored:

* finite outputs (:func:`score_finite`, :func:`score_channel`): exact sums;
* one Gaussian output law per secret value (:func:`score_gaussian`): the MAP accuracy is exact,
  the decision regions being bounded by the roots of the quadratics where two weighted normal
  densities cross; the mutual information is integrated numerically;
* a discrete value (a count, say) plus Laplace noise (:func:`score_laplace_noised`): the
  weighted densities are mixtures of shifted Laplace densities; between two support points each
  is ``A exp(-u/b) + B exp(u/b)``, so two of them cross at most once there and the MAP accuracy
  is exact. The mutual information is integrated numerically between support points, the two
  tails are exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, special

from quiltpriv.errors import ParameterError
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_array, check_positive, check_probability_vector

if TYPE_CHECKING:
    from quiltpriv.queries.query import CountQuery

_LN2 = math.log(2.0)

__all__ = [
    "Scorecard",
    "score_channel",
    "score_finite",
    "score_gaussian",
    "score_laplace_noised",
]


@dataclass(frozen=True)
class Scorecard(JSONResult):
    """What the best adversary learns about a discrete secret from a mechanism's output.

    Attributes
    ----------
    map_accuracy:
        Probability that the MAP adversary guesses the secret (GAP Eq. (5)).
    prior_accuracy:
        ``max_y P(Y = y)``: the accuracy of guessing without seeing the output.
    advantage:
        ``map_accuracy - prior_accuracy`` (>= 0).
    mutual_information_bits:
        ``I(Y; O)`` in bits (GAP Eq. (8)).
    accuracy_error:
        Bound on the absolute error of ``map_accuracy`` beyond floating-point rounding (0 when
        it is computed exactly, which is the case for every scorer here).
    mi_error:
        Absolute error allowance of ``mutual_information_bits``: 0 for finite outputs; for
        continuous outputs the quadrature's own error estimate plus a rigorous bound on the
        truncated tails (an estimate, not a proof: see ``method``).
    method:
        How the numbers were obtained.
    """

    map_accuracy: float
    prior_accuracy: float
    advantage: float
    mutual_information_bits: float
    accuracy_error: float
    mi_error: float
    method: str


def _check_matrix(a: ArrayLike, name: str) -> np.ndarray:
    arr = check_array(a, name)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ParameterError(f"{name} must be a non-empty 2-d array (secret values x outputs)")
    if np.any(arr < 0):
        raise ParameterError(f"{name} has negative entries")
    return arr


def _card(map_acc: float, prior: np.ndarray, mi_bits: float, acc_err: float, mi_err: float,
          method: str) -> Scorecard:
    prior_acc = min(1.0, float(prior.max()))
    # Rounding can put an exact accuracy a hair outside [prior_acc, 1]; clamp to the truth's range.
    map_acc = min(1.0, max(prior_acc, float(map_acc)))
    return Scorecard(
        map_accuracy=map_acc,
        prior_accuracy=prior_acc,
        advantage=map_acc - prior_acc,
        mutual_information_bits=max(0.0, float(mi_bits)),
        accuracy_error=float(acc_err),
        mi_error=float(mi_err),
        method=method,
    )


# --------------------------------------------------------------------------- finite outputs


def score_finite(joint: ArrayLike) -> Scorecard:
    """Score a mechanism given the joint law ``joint[y, o] = P(Y = y, O = o)``.

    The MAP accuracy is ``sum_o max_y joint[y, o]`` (GAP Eq. (5)); the mutual information is
    ``sum joint log2(joint / (P(y) P(o)))``. Both are exact sums.
    """
    p = _check_matrix(joint, "joint")
    if abs(p.sum() - 1.0) > 1e-9:
        raise ParameterError(f"joint sums to {_fmt(p.sum(), 12)}, not 1")
    py = p.sum(axis=1)
    po = p.sum(axis=0)
    acc = float(p.max(axis=0).sum())
    nz = p > 0
    ratio = p[nz] / np.outer(py, po)[nz]
    mi = float(np.sum(p[nz] * np.log2(ratio)))
    return _card(acc, py, mi, 0.0, 0.0, "finite output: exact sums")


def score_channel(prior: ArrayLike, channel: ArrayLike) -> Scorecard:
    """Score a mechanism given ``prior[y] = P(Y = y)`` and ``channel[y, o] = P(O = o | Y = y)``."""
    pi = check_probability_vector(prior, "prior")
    ch = _check_matrix(channel, "channel")
    if ch.shape[0] != pi.size:
        raise ParameterError(
            f"channel has {ch.shape[0]} rows but the prior has {pi.size} secret values")
    bad = np.flatnonzero(np.abs(ch.sum(axis=1) - 1.0) > 1e-9)
    if bad.size:
        raise ParameterError(f"channel row {int(bad[0])} is not a probability vector")
    joint = pi[:, None] * ch
    return score_finite(joint / joint.sum())


# --------------------------------------------------------------------------- shared helpers


def _argmax_regions(points: list[float], log_weight: Callable[[float], np.ndarray],
                    lo: float = -math.inf,
                    hi: float = math.inf) -> list[tuple[float, float, int]]:
    """Split (lo, hi) at ``points`` and name the secret with the largest weighted density.

    ``log_weight(x)`` returns the log weighted densities of every secret at ``x``. Between two
    consecutive points no two weighted densities cross, so the argmax at one inner point holds on
    the whole piece.
    """
    pts = sorted({p for p in points if lo < p < hi})
    edges = [lo, *pts, hi]
    out = []
    for a, c in zip(edges[:-1], edges[1:], strict=True):
        if math.isinf(a) and math.isinf(c):
            x = 0.0
        elif math.isinf(a):
            x = c - 1.0
        elif math.isinf(c):
            x = a + 1.0
        else:
            x = 0.5 * (a + c)
        out.append((a, c, int(np.argmax(log_weight(x)))))
    return out


def _mi_integrand(log_w: np.ndarray, log_prior: np.ndarray) -> float:
    """``sum_y w_y log(w_y / (prior_y f))`` in nats, from the log weighted densities ``log_w``."""
    lf = special.logsumexp(log_w)
    if not np.isfinite(lf):
        return 0.0
    w = np.exp(log_w)
    ok = w > 0
    return float(np.sum(w[ok] * (log_w[ok] - log_prior[ok] - lf)))


# --------------------------------------------------------------------------- Gaussian outputs


def _gaussian_crossings(pi: np.ndarray, m: np.ndarray, s: np.ndarray) -> list[float]:
    """Roots of pi_i N(x; m_i, s_i^2) = pi_j N(x; m_j, s_j^2) over all pairs (a quadratic each)."""
    roots: list[float] = []
    k = pi.size
    for i in range(k):
        for j in range(i + 1, k):
            if pi[i] == 0 or pi[j] == 0:
                continue
            a = 0.5 / s[j] ** 2 - 0.5 / s[i] ** 2
            b = m[i] / s[i] ** 2 - m[j] / s[j] ** 2
            c = (math.log(pi[i] / s[i]) - math.log(pi[j] / s[j])
                 - 0.5 * m[i] ** 2 / s[i] ** 2 + 0.5 * m[j] ** 2 / s[j] ** 2)
            if a == 0.0:
                if b != 0.0:
                    roots.append(-c / b)
                continue
            disc = b * b - 4 * a * c
            if disc < 0:
                continue
            # Numerically stable pair of roots.
            qv = -0.5 * (b + math.copysign(math.sqrt(disc), b))
            if qv != 0.0:
                roots.extend([qv / a, c / qv])
            else:
                roots.append(0.0)
    return [r for r in roots if math.isfinite(r)]


def score_gaussian(prior: ArrayLike, means: ArrayLike, sds: ArrayLike) -> Scorecard:
    """Score an output that is ``N(means[y], sds[y]^2)`` when the secret is ``y``.

    The MAP accuracy is exact: the weighted densities ``prior[y] N(x; means[y], sds[y]^2)`` cross
    at the roots of quadratics (linear equations when the variances agree), the secret with the
    largest weighted density is constant between consecutive roots, and each piece contributes
    ``prior[y] (Phi((c - m_y)/s_y) - Phi((a - m_y)/s_y))``. For two secrets with equal variances
    this is GAP Eq. (37). The mutual information is integrated numerically (QUADPACK) over
    ``[min(m - 12 s), max(m + 12 s)]``, split at the crossings and the means; the mass outside is
    bounded rigorously and added to ``mi_error``.
    """
    pi = check_probability_vector(prior, "prior")
    m = check_array(means, "means")
    s = check_array(sds, "sds")
    if m.shape != pi.shape or s.shape != pi.shape:
        raise ParameterError("prior, means and sds must be 1-d arrays of the same length")
    if np.any(s <= 0):
        raise ParameterError("sds must be > 0")
    log_pi = np.log(np.where(pi > 0, pi, 1.0))
    log_pi[pi == 0] = -np.inf

    def log_weight(x: float) -> np.ndarray:
        z = (x - m) / s
        return log_pi - np.log(s) - 0.5 * math.log(2 * math.pi) - 0.5 * z * z

    crossings = _gaussian_crossings(pi, m, s)
    acc = 0.0
    for a, c, y in _argmax_regions(crossings, log_weight):
        za = (a - m[y]) / s[y]
        zc = (c - m[y]) / s[y]
        # Difference of tails on the far side keeps precision when both ends are in a tail.
        if za > 0:
            acc += pi[y] * (special.ndtr(-za) - special.ndtr(-zc))
        else:
            acc += pi[y] * (special.ndtr(zc) - special.ndtr(za))

    # Mutual information by quadrature on a window, with a rigorous tail allowance:
    # |integrand| <= f(x) (max_y log(1/pi_y) + 1/e) (see module docs), so the tails add at most
    # that constant times the mass of the output outside the window.
    live = pi > 0
    lo = float(np.min(m[live] - 12 * s[live]))
    hi = float(np.max(m[live] + 12 * s[live]))
    mass_out = float(np.sum(pi * (special.ndtr((lo - m) / s) + special.ndtr((m - hi) / s))))
    tail_bound = mass_out * (float(np.max(-log_pi[live])) + 1 / math.e) / _LN2
    cuts = sorted({lo, hi, *[x for x in crossings if lo < x < hi],
                   *[float(v) for v in m[live] if lo < v < hi]})
    mi = 0.0
    err = 0.0
    for a, c in zip(cuts[:-1], cuts[1:], strict=True):
        val, e = integrate.quad(lambda x: _mi_integrand(log_weight(x), log_pi), a, c,
                                epsabs=1e-13, epsrel=1e-11, limit=200)
        mi += val
        err += e
    return _card(acc, pi, mi / _LN2, 0.0, err / _LN2 + tail_bound,
                 "Gaussian outputs: exact MAP regions (normal CDF); MI by QUADPACK on "
                 "[min(m-12s), max(m+12s)] + rigorous tail bound")


# --------------------------------------------------------------------------- Laplace-noised


def score_laplace_noised(prior: ArrayLike, laws: ArrayLike, scale: float,
                         support: ArrayLike | None = None) -> Scorecard:
    """Score ``O = Z + Laplace(scale)`` where ``Z`` has law ``laws[y]`` given the secret ``y``.

    The typical use is attribute privacy: ``Z`` is a count over ``0..n`` (``support`` defaults
    to ``0, 1, ..., len(laws[y]) - 1``) whose exact law under each value of a private attribute
    is known, and the adversary tries to guess the attribute from the noised count.

    Parameters
    ----------
    prior:
        ``prior[y] = P(Y = y)``.
    laws:
        ``laws[y, k] = P(Z = support[k] | Y = y)``; each row a probability vector.
    scale:
        The Laplace scale ``b`` (> 0).
    support:
        Strictly increasing support points of ``Z`` (default ``0..m-1``).

    Notes
    -----
    Between two support points ``z_j < z_{j+1}`` (with ``u = x - z_j``, ``h = z_{j+1} - z_j``)
    the weighted density of secret ``y`` is ``L_y exp(-u/b) + R_y exp(-(h-u)/b)`` with
    ``L_y = sum_{k<=j} w_yk exp(-(z_j-z_k)/b)/(2b)`` and ``R_y`` the mirror image (computed by
    recurrences, so nothing overflows). Two such functions are equal at most once on the piece,
    at ``u = (h + b ln(-dL/dR))/2``; outside ``[z_0, z_m]`` the ratios are constant. The MAP
    accuracy is therefore a finite sum of exact Laplace integrals. The mutual information is
    integrated numerically between support points (QUADPACK; its error estimate is reported) and
    exactly on the two tails.
    """
    pi = check_probability_vector(prior, "prior")
    lw = _check_matrix(laws, "laws")
    if lw.shape[0] != pi.size:
        raise ParameterError(f"laws has {lw.shape[0]} rows but the prior has {pi.size} values")
    for y in range(lw.shape[0]):
        check_probability_vector(lw[y], f"laws[{y}]")
    b = check_positive(scale, "scale")
    m = lw.shape[1]
    if support is None:
        z = np.arange(m, dtype=float)
    else:
        z = check_array(support, "support")
        if z.shape != (m,):
            raise ParameterError(f"support must have {m} points, one per column of laws")
        if np.any(np.diff(z) <= 0):
            raise ParameterError("support must be finite and strictly increasing")
    w = pi[:, None] * lw  # joint weights P(Y = y, Z = z_k)
    k_sec = pi.size
    h = np.diff(z)
    decay = np.exp(-h / b)
    # L[:, j], R[:, j] for the piece [z_j, z_{j+1}] (j = 0..m-2).
    big_l = np.zeros((k_sec, max(m - 1, 0)))
    big_r = np.zeros((k_sec, max(m - 1, 0)))
    if m >= 2:
        big_l[:, 0] = w[:, 0] / (2 * b)
        for j in range(1, m - 1):
            big_l[:, j] = big_l[:, j - 1] * decay[j - 1] + w[:, j] / (2 * b)
        big_r[:, m - 2] = w[:, m - 1] / (2 * b)
        for j in range(m - 3, -1, -1):
            big_r[:, j] = big_r[:, j + 1] * decay[j + 1] + w[:, j + 1] / (2 * b)
        t_left = big_r[:, 0] * decay[0] + w[:, 0] / (2 * b)
        t_right = big_l[:, m - 2] * decay[m - 2] + w[:, m - 1] / (2 * b)
    else:
        t_left = t_right = w[:, 0] / (2 * b)
    # Tails: weighted density T_y exp(-|x - z_end|/b), mass T_y b, posterior constant.
    acc = b * (float(t_left.max()) + float(t_right.max()))

    with np.errstate(divide="ignore"):
        log_pi = np.log(pi)
    mi = 0.0
    for t in (t_left, t_right):
        tot = t.sum()
        ok = t > 0
        # sum_y T_y b log(T_y / (pi_y T)) in nats
        mi += float(np.sum(b * t[ok] * (np.log(t[ok]) - log_pi[ok] - math.log(tot))))
    mi_err = 0.0

    for j in range(m - 1):
        lj, rj, hj = big_l[:, j], big_r[:, j], float(h[j])
        with np.errstate(divide="ignore"):
            log_l, log_r = np.log(lj), np.log(rj)

        def log_weight(x: float, log_l: np.ndarray = log_l, log_r: np.ndarray = log_r,
                       hj: float = hj) -> np.ndarray:
            return np.logaddexp(log_l - x / b, log_r - (hj - x) / b)

        roots = []
        for y1 in range(k_sec):
            for y2 in range(y1 + 1, k_sec):
                dl, dr = lj[y1] - lj[y2], rj[y1] - rj[y2]
                if dl * dr < 0:
                    roots.append(0.5 * (hj + b * math.log(-dl / dr)))
        for a, c, y in _argmax_regions(roots, log_weight, 0.0, hj):
            # int_a^c L e^{-u/b} + R e^{-(h-u)/b} du, written with expm1 for precision.
            span = -math.expm1(-(c - a) / b)
            acc += b * span * (lj[y] * math.exp(-a / b) + rj[y] * math.exp(-(hj - c) / b))
        cuts = sorted({0.0, hj, *[r for r in roots if 0.0 < r < hj]})
        for a, c in zip(cuts[:-1], cuts[1:], strict=True):
            val, e = integrate.quad(lambda x, f=log_weight: _mi_integrand(f(x), log_pi), a, c,
                                    epsabs=1e-14, epsrel=1e-11, limit=100)
            mi += val
            mi_err += e
    return _card(acc, pi, mi / _LN2, 0.0, mi_err / _LN2,
                 "Laplace-noised discrete value: exact MAP regions (closed-form Laplace "
                 "integrals); MI by QUADPACK between support points, exact on the tails")


@renamed_keywords(model="theta")
def score_count_release(theta: object, query: CountQuery, sensitive: str, scale: float, *,
                        member: int = 0, max_memory: int | str | None = None) -> Scorecard:
    """Score a Laplace-noised count on a hyperparameter network: guessing ``phi_sensitive``.

    The secret is the value of ``phi_sensitive`` (its prior from the network), the output is
    ``F + Laplace(scale)`` with ``F`` the count of records satisfying the query's predicate,
    whose exact law given each value comes from :func:`quiltpriv.queries.network_laws.count_laws`
    (Bernoulli or categorical attributes). Use it on an APMQM or Wasserstein plan's scale to
    see what an adversary actually achieves under the guarantee; ``scale = 0`` scores the
    exact count.

    Parameters
    ----------
    theta : Theta or pgmpy network(s)
    query : CountQuery
    sensitive : str
    scale : float
        Laplace scale (>= 0).
    member : int
        Which member of Theta is the adversary's prior.
    max_memory : int or str, optional
        Memory budget of the exact tables (bytes or a size such as ``"4G"``), as in
        :func:`quiltpriv.queries.network_laws.count_laws`.
    """
    from quiltpriv.inference.influence import joint_marginal
    from quiltpriv.model.network import as_theta
    from quiltpriv.queries.network_laws import count_laws, undeclared_domain_error
    from quiltpriv.queries.query import CountQuery

    theta = as_theta(theta)  # model: untrusted (any object), checked here
    if not isinstance(query, CountQuery):
        raise ParameterError("score_count_release scores count queries")
    if not 0 <= member < len(theta.members):
        raise ParameterError(f"member must be in 0..{len(theta.members) - 1}, got {member}")
    b = check_positive(scale, "scale", allow_zero=True)
    if query.predicate is not None and query.domain is None:
        raise undeclared_domain_error(theta, query.attributes, str(query.where),
                                      "score_count_release")
    laws = count_laws(theta, query.attributes, sensitive, query.records,
                      where=query.predicate, domain=query.domain,
                      record_states=query.record_states, max_memory=max_memory)
    member_laws = laws.laws[member]
    marg = joint_marginal(theta, (sensitive,), member, max_memory=max_memory)
    states = list(theta.states[sensitive])
    secrets = [s for s in states if s in member_laws]
    prior = np.array([marg[states.index(s)] for s in secrets], dtype=float)
    prior = prior / prior.sum()
    rows = np.array([[float(p) for p in member_laws[s][1]] for s in secrets])
    rows = rows / rows.sum(axis=1, keepdims=True)
    if b == 0:
        return score_channel(prior, rows)
    return score_laplace_noised(prior, rows, b)
