"""Location obfuscation on a finite set of places: the planar Laplace mechanism restricted to a
grid, its exact geo-indistinguishability, and the service-quality loss ([KM19, Sec. VII]).

[KM19, Sec. VII] obfuscates each user's location with the planar Laplace mechanism and hides
the real report among dummies (the tupling mechanism, :mod:`quiltpriv.distribution.tupling`),
then compares each mechanism's distribution privacy with its service-quality loss (SQL: the
expected distance between the true and the reported location). The continuous planar Laplace
draws a real-valued point (radius and angle in floats), which the package never releases
([Mir12]); here it is restricted to the finite set of places a service uses (cell centres):

    P(y | x) = exp(-gamma(x, y)) / Z(x),   gamma(x, y) = eps * d_up(x, y),

where ``d_up`` is the Euclidean distance rounded UP to a multiple of 2^-40 (an exact rational:
the squared distance of two float points is exact in rationals and its square root is bounded
by integer arithmetic). The law is exactly that, and :func:`planar_laplace_grid` returns it as a
:class:`~quiltpriv.distribution.local_distribution_privacy.MechanismMatrix`, so
:func:`~quiltpriv.distribution.local_distribution_privacy.sample_mechanism` and
:func:`~quiltpriv.distribution.tupling.tupling_sample` release it through the exact sampler of
:mod:`quiltpriv.mechanisms.noise` (uniform proposals and Bernoulli(exp(-gamma)), [CKS20, Alg. 1];
secure by default, a seed for experiments only).

Which guarantee: the continuous planar Laplace at eps is eps-geo-indistinguishable (P(y | x) <=
e^(eps d(x, x')) P(y | x')). Restricted to a finite set, the normaliser Z(x) depends on x:

    P(y | x) / P(y | x') = exp(gamma(x', y) - gamma(x, y)) * Z(x') / Z(x),

and both factors are at most exp(eps d_up(x, x')) (triangle inequality), so the restriction is
2 eps-geo-indistinguishable at worst (on d_up, which exceeds d by at most 2^-40). The exact least
eps_geo with P(y | x) <= exp(eps_geo d(x, x')) P(y | x') for all x, x', y is computed by
:func:`geo_indistinguishability_epsilon` (rounded up) and is what a report should state; it lies
in [eps, 2 eps] up to the 2^-40 rounding, close to eps on large grids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from quiltpriv.distribution.local_distribution_privacy import MechanismMatrix
from quiltpriv.errors import ParameterError
from quiltpriv.utils.rounding import div_up, mul_up
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_array, check_epsilon, check_probability_vector

__all__ = [
    "PlanarLaplaceGrid",
    "distance_bounds",
    "geo_indistinguishability_epsilon",
    "planar_laplace_grid",
    "service_quality_loss",
]

#: Distances are bounded on the grid 2^-DIST_BITS (below and above).
DIST_BITS = 40
#: Absolute allowance for the float evaluation of a log-ratio of the exact law (its terms are
#: at most eps times the diameter; float error is ~1e-15 relative): far above the error.
_LOG_MARGIN = 1e-12
#: Largest number of places accepted (the matrix has this many squared entries).
MAX_PLACES = 2_000


def _points(points: object) -> np.ndarray:
    pts = check_array(points, "points")
    if pts.ndim == 1:
        pts = pts.reshape(-1, 1)
    if pts.ndim != 2 or pts.shape[0] < 2:
        raise ParameterError("points must be a k x m array of at least two places")
    if pts.shape[0] > MAX_PLACES:
        raise ParameterError(f"{pts.shape[0]} places: at most {MAX_PLACES} are accepted")
    if not np.all(np.isfinite(pts)):
        raise ParameterError("points must be finite")
    if len({tuple(p) for p in pts.tolist()}) < pts.shape[0]:
        raise ParameterError("points must be distinct places")
    return pts.astype(float)


def _sqrt_bounds(q: Fraction) -> tuple[Fraction, Fraction]:
    """Multiples of 2^-DIST_BITS just below and just above sqrt(q), by integer square roots."""
    scale = 1 << (2 * DIST_BITS)
    low = math.isqrt(q.numerator * scale // q.denominator)  # floor(sqrt(floor(q s)))
    high = math.isqrt(-(-q.numerator * scale // q.denominator))
    if high * high < -(-q.numerator * scale // q.denominator):
        high += 1
    return Fraction(low, 1 << DIST_BITS), Fraction(high, 1 << DIST_BITS)


def distance_bounds(points: ArrayLike) -> tuple[list[list[Fraction]], list[list[Fraction]]]:
    """Exact rational bounds ``low <= d(x, y) <= high`` on the Euclidean distances.

    The squared distance of two float points is computed exactly in rationals; its square root
    is bracketed by integer square roots on the grid 2^-40 (0 exactly on the diagonal).
    """
    pts = _points(points)
    exact = [[Fraction(float(v)) for v in p] for p in pts.tolist()]
    n = len(exact)
    low = [[Fraction(0)] * n for _ in range(n)]
    high = [[Fraction(0)] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            d2 = sum(((a - b) ** 2 for a, b in zip(exact[i], exact[j], strict=True)),
                     Fraction(0))
            lo, hi = _sqrt_bounds(d2)
            low[i][j] = low[j][i] = lo
            high[i][j] = high[j][i] = hi
    return low, high


@dataclass(frozen=True)
class PlanarLaplaceGrid(JSONResult):
    """The planar Laplace mechanism restricted to a finite set of places.

    Attributes
    ----------
    matrix : MechanismMatrix
        ``P(y | x)`` (rows: true place, columns: reported place) with its exact law
        ``exp(-eps d_up(x, y)) / Z(x)``; sample it with
        :func:`~quiltpriv.distribution.local_distribution_privacy.sample_mechanism`.
    epsilon : float
        The planar Laplace parameter (per unit of distance).
    geo_epsilon : float
        The exact geo-indistinguishability of the restricted law, rounded up
        (:func:`geo_indistinguishability_epsilon`): in [eps, 2 eps].
    points : numpy.ndarray
        The places (k x m).
    """

    matrix: MechanismMatrix
    epsilon: float
    geo_epsilon: float
    points: np.ndarray

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "geo_epsilon": self.geo_epsilon,
                "points": self.points.tolist(), "matrix": np.asarray(self.matrix).tolist()}


def planar_laplace_grid(points: ArrayLike, epsilon: float) -> PlanarLaplaceGrid:
    """The planar Laplace mechanism of parameter ``epsilon`` restricted to ``points``.

    ``P(y | x)`` proportional to ``exp(-eps d_up(x, y))`` exactly (module docstring); eps is
    taken as the exact rational of its float. The result states the exact
    geo-indistinguishability of this law (rounded up), not the continuous mechanism's eps.
    """
    eps = check_epsilon(epsilon)
    pts = _points(points)
    _, high = distance_bounds(pts)
    e = Fraction(eps)
    gammas = tuple(tuple(e * d for d in row) for row in high)
    g = np.array([[float(x) for x in row] for row in gammas])
    w = np.exp(-(g - g.min(axis=1, keepdims=True)))
    matrix = MechanismMatrix.with_exact_law(w / w.sum(axis=1, keepdims=True), gammas)
    return PlanarLaplaceGrid(matrix, eps, geo_indistinguishability_epsilon(matrix, pts), pts)


def _log_law(mechanism: object) -> np.ndarray:
    """log P(y | x): from the exact gammas of a MechanismMatrix, else from the floats."""
    gammas = getattr(mechanism, "exact_gammas", None)
    if gammas is not None:
        g = np.array([[float(x) for x in row] for row in gammas])
        return -g - logsumexp(-g, axis=1)[:, None]
    a = np.asarray(mechanism, dtype=float)
    with np.errstate(divide="ignore"):
        return np.log(a / a.sum(axis=1, keepdims=True))


def geo_indistinguishability_epsilon(mechanism: ArrayLike, points: ArrayLike) -> float:
    """The least eps_geo with ``P(y | x) <= exp(eps_geo d(x, x')) P(y | x')`` for all places.

    ``d`` is the Euclidean distance between ``points`` (one place per row of ``mechanism``).
    Computed from the mechanism's exact law when it carries one (a
    :class:`~quiltpriv.distribution.local_distribution_privacy.MechanismMatrix`), else from its
    floats; every log-ratio is raised by 1e-12 (far above its float error) and divided by a
    lower bound of the distance, rounding up, so the result is never below the exact value.
    ``inf`` if some output is possible from one place and not from another.
    """
    pts = _points(points)
    logs = _log_law(mechanism)
    if logs.shape[0] != pts.shape[0]:
        raise ParameterError(f"the mechanism has {logs.shape[0]} inputs, there are "
                             f"{pts.shape[0]} points")
    low, _ = distance_bounds(pts)
    worst = 0.0
    n = pts.shape[0]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            finite = np.isfinite(logs[i])
            if np.any(finite & ~np.isfinite(logs[j])):
                return math.inf
            top = float(np.max(logs[i][finite] - logs[j][finite])) if np.any(finite) else 0.0
            if top <= 0:
                continue
            worst = max(worst, div_up(top + _LOG_MARGIN, low[i][j]))
    return mul_up(worst, 1 + 1e-12)


def service_quality_loss(mechanism: ArrayLike, lam: ArrayLike, points: ArrayLike) -> float:
    """Expected Euclidean distance between the true place (``x ~ lam``) and the report.

    ``sum_x lam(x) sum_y P(y | x) d(x, y)``, the service-quality loss of [KM19, Sec. VII]. A
    utility figure (not a privacy one): computed in floats.
    """
    pts = _points(points)
    a = np.asarray(mechanism, dtype=float)
    p = check_probability_vector(lam, "lam")
    if a.shape != (pts.shape[0], pts.shape[0]) or p.size != pts.shape[0]:
        raise ParameterError("mechanism must be k x k and lam of length k for k points")
    dist = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(axis=2))
    return float((p[:, None] * a * dist).sum())
