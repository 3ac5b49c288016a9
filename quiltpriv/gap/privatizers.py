"""Generative adversarial privacy (GAP): game-theoretically optimal privatizers.

Huang, Kairouz, Chen, Sankar, Rajagopal (2017), "Context-aware generative adversarial privacy",
Entropy 19(12):656 [HKCSR17]; the formulas were rebuilt from the paper and checked on its tables.

Rows ``(X, Y)`` are i.i.d.; ``X`` is public, ``Y`` private. A privatizer releases
``X^ = g(X, Y)`` under a distortion budget ``E d(X^, X) <= D``; the adversary guesses ``Y`` from
``X^``. Against 0-1 loss the best adversary is MAP and its accuracy is what the privatizer
minimises (Eq. (5)). **GAP gives no epsilon guarantee**: the result of every function here is an
adversary accuracy at a distortion, to be compared with other mechanisms along
accuracy-vs-distortion curves (see :mod:`quiltpriv.audit.adversary`), never read as an epsilon.

Binary data model (Section 3; Hamming distortion)
    * :func:`binary_pdd_optimum` -- private-data-dependent (PDD) optimum by the linear programme
      Eq. (21); :func:`binary_pdd_closed_form` its value
      ``max(sum_x max_y p_xy - D, max_y P(Y = y))``.
    * :func:`binary_pdi_optimum` -- private-data-independent (PDI) optimum, also a linear
      programme (any joint law); :func:`binary_pdi_theorem1` -- Theorem 1 for
      ``Y = X xor N`` with one optimal mechanism.

Binary Gaussian mixture (Section 4; squared-error distortion)
    ``Y ~ Bern(p~)``, ``X | Y=0 ~ N(-mu, s0^2)``, ``X | Y=1 ~ N(mu, s1^2)``, privatizer
    ``X^ = X + (1-Y) beta0 - Y beta1 + ((1-Y) gamma0 + Y gamma1) N`` with ``N ~ N(0, 1)``.
    * :func:`map_accuracy_equal_variance` -- Eq. (37);
    * :func:`gaussian_theorem2_pdi`, :func:`gaussian_theorem3_pdd_shift`,
      :func:`gaussian_theorem4_pdd_shift_noise` -- Theorems 2-4 (equal variances);
    * :func:`gaussian_pdd_optimum` -- the general PDD optimum, searched on the distortion
      boundary (Proposition 1) over a three-parameter cube, with exact MAP accuracies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from quiltpriv.audit.adversary import Scorecard, score_finite, score_gaussian
from quiltpriv.errors import ParameterError
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_array, check_instance, check_positive, check_scalar

__all__ = [
    "BinaryModel",
    "BinaryOptimum",
    "GaussianNoisePrivatizer",
    "GaussianMixtureModel",
    "GaussianOptimum",
    "binary_pdd_closed_form",
    "binary_pdd_optimum",
    "binary_pdd_score",
    "binary_pdi_optimum",
    "binary_pdi_score",
    "binary_pdi_theorem1",
    "gaussian_mechanism_accuracy",
    "gaussian_mechanism_score",
    "gaussian_pdd_optimum",
    "gaussian_theorem2_pdi",
    "gaussian_theorem3_pdd_shift",
    "gaussian_theorem4_pdd_shift_noise",
    "map_accuracy_equal_variance",
]

# Slack allowed on the distortion of a solver's mechanism (LP tolerance); results report the
# exact distortion of the mechanism returned.
_LP_TOL = 1e-9


# _check_unit and _check_budget take ``object``: they check untrusted input into a float.
def _check_unit(x: object, name: str, *, open_interval: bool = False) -> float:
    return float(check_scalar(x, name, min_val=0.0, max_val=1.0,
                              include_boundaries="neither" if open_interval else "both"))


def _check_budget(d: object) -> float:
    return check_positive(d, "distortion budget D", allow_zero=True)


# =========================================================================== binary data model


@dataclass(frozen=True)
class BinaryModel(JSONResult):
    """Joint law of a public bit ``X`` and a private bit ``Y``: ``joint[x, y] = P(X=x, Y=y)``."""

    joint: tuple[tuple[float, float], tuple[float, float]]

    @classmethod
    def from_joint(cls, joint: ArrayLike) -> BinaryModel:
        arr = np.asarray(joint, dtype=float)
        if arr.shape != (2, 2):
            raise ParameterError("the joint law of (X, Y) must be a 2 x 2 array joint[x, y]")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ParameterError("the joint law of (X, Y) must be finite and non-negative")
        if abs(arr.sum() - 1) > 1e-9:
            raise ParameterError(f"the joint law of (X, Y) sums to {_fmt(arr.sum(), 12)}, not 1")
        arr = arr / arr.sum()
        return cls(((float(arr[0, 0]), float(arr[0, 1])), (float(arr[1, 0]), float(arr[1, 1]))))

    @classmethod
    def from_xor(cls, p: float, q: float) -> BinaryModel:
        """``X ~ Bern(p)``, ``Y = X xor N`` with ``N ~ Bern(q)`` independent (Section 3.1.2)."""
        p = _check_unit(p, "p")
        q = _check_unit(q, "q")
        return cls.from_joint([[(1 - p) * (1 - q), (1 - p) * q], [p * q, p * (1 - q)]])

    @property
    def array(self) -> np.ndarray:
        return np.array(self.joint, dtype=float)

    @property
    def prior_accuracy(self) -> float:
        """``max_y P(Y = y)``: the MAP accuracy of a blind guess."""
        return float(self.array.sum(axis=0).max())

    @property
    def undistorted_accuracy(self) -> float:
        """``sum_x max_y p_xy``: the MAP accuracy from ``X`` itself (D = 0)."""
        return float(self.array.max(axis=1).sum())


@dataclass(frozen=True)
class BinaryOptimum(JSONResult):
    """An optimal binary privatizer at one distortion budget.

    ``mechanism`` is ``(s00, s01, s10, s11)`` with ``s_xy = P(X^ = x | X = x, Y = y)`` (PDD) or
    ``(s0, s1)`` with ``s_x = P(X^ = x | X = x)`` (PDI). ``accuracy`` is the exact MAP accuracy of
    that mechanism (recomputed from it, not read off the solver), ``distortion`` its exact
    expected Hamming distortion, ``budget`` the D asked for.
    """

    accuracy: float
    mechanism: tuple[float, ...]
    distortion: float
    budget: float
    kind: str
    method: str


def _pdd_output_joint(model: BinaryModel, s: np.ndarray) -> np.ndarray:
    """``out[y, xh] = P(Y = y, X^ = xh)`` for the PDD flips ``s[x, y]`` (Eqs. (16)-(19))."""
    p = model.array
    out = np.empty((2, 2))
    for y in range(2):
        out[y, 0] = p[0, y] * s[0, y] + p[1, y] * (1 - s[1, y])
        out[y, 1] = p[0, y] * (1 - s[0, y]) + p[1, y] * s[1, y]
    return out


def _check_flips(s: ArrayLike, n: int) -> np.ndarray:
    arr = check_array(s, "the mechanism").ravel()
    if arr.size != n:
        raise ParameterError(f"the mechanism must have {n} probabilities, got {arr.size}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ParameterError("mechanism probabilities must lie in [0, 1]")
    return arr


def binary_pdd_score(model: BinaryModel, s: ArrayLike) -> tuple[Scorecard, float]:
    """Scorecard and expected Hamming distortion of the PDD mechanism ``s = (s00, s01, s10, s11)``.

    ``s_xy = P(X^ = x | X = x, Y = y)``; distortion ``sum p_xy (1 - s_xy)`` (Eq. (20)).
    """
    check_instance(model, BinaryModel, "model")
    flips = _check_flips(s, 4).reshape(2, 2)
    out = _pdd_output_joint(model, flips)
    dist = float(np.sum(model.array * (1 - flips)))
    return score_finite(out / out.sum()), dist


def binary_pdi_score(model: BinaryModel, s: ArrayLike) -> tuple[Scorecard, float]:
    """Scorecard and distortion of the PDI mechanism ``s = (s0, s1)``, ``s_x = P(X^=x | X=x)``."""
    check_instance(model, BinaryModel, "model")
    s0, s1 = _check_flips(s, 2)
    return binary_pdd_score(model, [s0, s0, s1, s1])


def _solve_binary_lp(model: BinaryModel, d: float, pdi: bool) -> BinaryOptimum:
    p = model.array
    # Variables: s00, s01, s10, s11, t0, t1 (PDD); Eq. (21). PDI ties s_x0 = s_x1.
    a_ub, b_ub = [], []
    for y in range(2):
        # P(y, X^=0) = p0y s0y + p1y (1 - s1y) <= t0
        row = np.zeros(6)
        row[2 * 0 + y], row[2 * 1 + y], row[4] = p[0, y], -p[1, y], -1
        a_ub.append(row)
        b_ub.append(-p[1, y])
        # P(y, X^=1) = p0y (1 - s0y) + p1y s1y <= t1
        row = np.zeros(6)
        row[2 * 0 + y], row[2 * 1 + y], row[5] = -p[0, y], p[1, y], -1
        a_ub.append(row)
        b_ub.append(-p[0, y])
    # Distortion sum p_xy (1 - s_xy) <= D
    row = np.zeros(6)
    row[:4] = -p.ravel()
    a_ub.append(row)
    b_ub.append(d - 1)
    a_eq = b_eq = None
    if pdi:
        a_eq = np.array([[1, -1, 0, 0, 0, 0], [0, 0, 1, -1, 0, 0]], dtype=float)
        b_eq = np.zeros(2)
    res = optimize.linprog(
        c=[0, 0, 0, 0, 1, 1], A_ub=np.array(a_ub), b_ub=np.array(b_ub), A_eq=a_eq, b_eq=b_eq,
        bounds=[(0, 1)] * 4 + [(0, None)] * 2, method="highs",
    )
    if res.status != 0:  # pragma: no cover - the LP is always feasible (s = 1) and bounded
        raise ParameterError(f"the binary privatizer LP failed: {res.message}")
    s = np.clip(res.x[:4], 0.0, 1.0)
    card, dist = binary_pdd_score(model, s)
    if dist > d + _LP_TOL:  # pragma: no cover - HiGHS respects its feasibility tolerance
        raise ParameterError(f"LP mechanism exceeds the budget ({dist} > {d})")
    mech = (float(s[0]), float(s[2])) if pdi else tuple(float(v) for v in s)
    return BinaryOptimum(card.map_accuracy, mech, dist, d, "PDI" if pdi else "PDD",
                         "linear programme Eq. (21) (HiGHS); accuracy recomputed exactly")


def binary_pdd_optimum(model: BinaryModel, distortion: float) -> BinaryOptimum:
    """Optimal PDD binary privatizer at budget ``D`` by the linear programme Eq. (21)."""
    return _solve_binary_lp(model, _check_budget(distortion), pdi=False)


def binary_pdi_optimum(model: BinaryModel, distortion: float) -> BinaryOptimum:
    """Optimal PDI binary privatizer (``X^`` depends on ``X`` only) for any joint law.

    The MAP accuracy Eq. (29) is a sum of maxima of linear functions of ``(s0, s1)``, so the
    optimum is the same linear programme as Eq. (21) with ``s_x0 = s_x1``.
    """
    return _solve_binary_lp(model, _check_budget(distortion), pdi=True)


def binary_pdd_closed_form(model: BinaryModel, distortion: float) -> float:
    """Value of the PDD optimum: ``max(sum_x max_y p_xy - D, max_y P(Y = y))``."""
    d = _check_budget(distortion)
    return max(model.undistorted_accuracy - d, model.prior_accuracy)


def binary_pdi_theorem1(p: float, q: float, distortion: float) -> BinaryOptimum:
    """Theorem 1: optimal PDI privatizer for ``X ~ Bern(p)``, ``Y = X xor N``, ``N ~ Bern(q)``.

    Accuracy ``max(|1 - 2q| (1 - D) + min(q, 1 - q), max_y P(Y = y))``; one optimal mechanism is
    the symmetric flip ``s0 = s1 = 1 - min(D, min(p, 1 - p))``. If ``q = 1/2`` every mechanism
    within budget is optimal (``Y`` is independent of ``X``) and the same one is returned.
    """
    model = BinaryModel.from_xor(p, q)
    p, q, d = float(p), float(q), _check_budget(distortion)
    acc = max(abs(1 - 2 * q) * (1 - d) + min(q, 1 - q), model.prior_accuracy)
    s = 1 - min(d, min(p, 1 - p))
    card, dist = binary_pdi_score(model, [s, s])
    # The formula and the mechanism's exact accuracy agree up to rounding (checked by the
    # tests against the PDI linear programme); report the larger, never the smaller.
    return BinaryOptimum(max(acc, card.map_accuracy), (s, s), dist, d, "PDI",
                         "Theorem 1 (closed form), symmetric-flip mechanism")


# =========================================================================== Gaussian mixture


@dataclass(frozen=True)
class GaussianMixtureModel(JSONResult):
    """``Y ~ Bern(prior1)``, ``X | Y=0 ~ N(-mu, sigma0^2)``, ``X | Y=1 ~ N(mu, sigma1^2)``."""

    prior1: float
    mu: float
    sigma0: float = 1.0
    sigma1: float = 1.0

    def __post_init__(self) -> None:
        _check_unit(self.prior1, "prior1 = P(Y = 1)", open_interval=True)
        check_positive(self.mu, "mu", allow_zero=True)
        check_positive(self.sigma0, "sigma0")
        check_positive(self.sigma1, "sigma1")

    @property
    def prior_accuracy(self) -> float:
        return max(self.prior1, 1 - self.prior1)


@dataclass(frozen=True)
class GaussianNoisePrivatizer(JSONResult):
    """``X^ = X + (1-Y) beta0 - Y beta1 + ((1-Y) gamma0 + Y gamma1) N``, ``N ~ N(0, 1)``.

    A GAP privatizer (a shift and Gaussian noise that depend on the private ``Y``), not the
    Gaussian mechanism of differential privacy. Named ``GaussianMechanism`` before quiltpriv
    0.2; that name still works, with a :class:`DeprecationWarning`.
    """

    beta0: float
    beta1: float
    gamma0: float
    gamma1: float

    def distortion(self, model: GaussianMixtureModel) -> float:
        """``E (X^ - X)^2 = (1-p)(beta0^2 + gamma0^2) + p (beta1^2 + gamma1^2)``."""
        p = model.prior1
        return (1 - p) * (self.beta0**2 + self.gamma0**2) + p * (self.beta1**2 + self.gamma1**2)

    def output_laws(self, model: GaussianMixtureModel) -> tuple[tuple[float, float], ...]:
        """``((mean, sd) given Y=0, (mean, sd) given Y=1)`` of ``X^``."""
        return (
            (-model.mu + self.beta0, math.hypot(model.sigma0, self.gamma0)),
            (model.mu - self.beta1, math.hypot(model.sigma1, self.gamma1)),
        )


@dataclass(frozen=True)
class GaussianOptimum(JSONResult):
    """A (searched or closed-form) optimal Gaussian privatizer at one budget.

    ``accuracy`` is the exact MAP accuracy of ``mechanism``; ``distortion`` its exact expected
    squared error; ``budget`` the D asked for.
    """

    accuracy: float
    mechanism: GaussianNoisePrivatizer
    distortion: float
    budget: float
    method: str


def map_accuracy_equal_variance(prior1: float, alpha: float) -> float:
    """GAP Eq. (37): MAP accuracy between ``N(-a/2, 1)`` and ``N(a/2, 1)`` with prior ``p~``.

    ``P_d = p~ Q(-alpha/2 + eta/alpha) + (1 - p~) Q(-alpha/2 - eta/alpha)``,
    ``eta = ln((1 - p~)/p~)``, ``alpha`` the distance of the means in standard deviations
    (its sign is irrelevant; ``alpha = 0`` gives ``max(p~, 1 - p~)``).
    """
    p = _check_unit(prior1, "prior1", open_interval=True)
    a = abs(float(alpha))
    if not math.isfinite(a):
        raise ParameterError(f"alpha must be finite, got {alpha!r}")
    if a == 0:
        return max(p, 1 - p)
    eta = math.log((1 - p) / p)
    return float(p * special.ndtr(a / 2 - eta / a) + (1 - p) * special.ndtr(a / 2 + eta / a))


def _two_gaussian_accuracy(p1: ArrayLike, m0: ArrayLike, s0: ArrayLike, m1: ArrayLike,
                           s1: ArrayLike) -> np.ndarray:
    """Exact MAP accuracy of ``(1-p1) N(m0, s0^2)`` vs ``p1 N(m1, s1^2)``, vectorised.

    ``acc = (1-p1) + p1 P1(R) - (1-p1) P0(R)`` with ``R = {log w1 - log w0 > 0}``, the set where a
    quadratic ``a x^2 + b x + c`` is positive: a union of at most two half-lines or one interval
    with closed-form end points. Same regions as :func:`quiltpriv.audit.adversary.score_gaussian`.
    """
    p1, m0, s0, m1, s1 = np.broadcast_arrays(*(np.asarray(v, dtype=float)
                                               for v in (p1, m0, s0, m1, s1)))
    a = 0.5 / s0**2 - 0.5 / s1**2
    b = m1 / s1**2 - m0 / s0**2
    c = (np.log(p1 / s1) - np.log((1 - p1) / s0) - 0.5 * m1**2 / s1**2 + 0.5 * m0**2 / s0**2)

    def prob(m, s, lo, hi):  # P(lo < N(m, s^2) < hi), precise in either tail
        zl, zh = (lo - m) / s, (hi - m) / s
        return np.where(zl > 0, special.ndtr(-zl) - special.ndtr(-zh),
                        special.ndtr(zh) - special.ndtr(zl))

    inf = np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        disc = b * b - 4 * a * c
        sq = np.sqrt(np.maximum(disc, 0.0))
        qv = -0.5 * (b + np.where(b >= 0, sq, -sq))
        r_a = qv / a
        r_b = np.where(qv != 0, c / qv, 0.0)
        r_lo, r_hi = np.minimum(r_a, r_b), np.maximum(r_a, r_b)
        lin = -c / b

    def region_mass(m, s):
        quad_pos = np.where(disc > 0,
                            prob(m, s, -inf, r_lo) + prob(m, s, r_hi, inf), 1.0)  # a > 0
        quad_neg = np.where(disc > 0, prob(m, s, r_lo, r_hi), 0.0)  # a < 0
        linear = np.where(b > 0, prob(m, s, lin, inf),
                          np.where(b < 0, prob(m, s, -inf, lin), (c > 0).astype(float)))
        return np.where(a > 0, quad_pos, np.where(a < 0, quad_neg, linear))

    with np.errstate(invalid="ignore"):
        acc = (1 - p1) + p1 * region_mass(m1, s1) - (1 - p1) * region_mass(m0, s0)
    return np.clip(acc, np.maximum(p1, 1 - p1), 1.0)


def gaussian_mechanism_accuracy(model: GaussianMixtureModel,
                                mech: GaussianNoisePrivatizer) -> float:
    """Exact MAP accuracy of ``mech`` (any variances) against the model."""
    _check_gaussian(model, mech)
    (m0, s0), (m1, s1) = mech.output_laws(model)
    return float(_two_gaussian_accuracy(model.prior1, m0, s0, m1, s1))


def gaussian_mechanism_score(model: GaussianMixtureModel,
                             mech: GaussianNoisePrivatizer) -> Scorecard:
    """Full scorecard (MAP accuracy and mutual information) of ``mech``."""
    _check_gaussian(model, mech)
    (m0, s0), (m1, s1) = mech.output_laws(model)
    return score_gaussian([1 - model.prior1, model.prior1], [m0, m1], [s0, s1])


def _check_gaussian(model: object, mech: object = None) -> None:
    check_instance(model, GaussianMixtureModel, "model")
    if mech is not None:
        check_instance(mech, GaussianNoisePrivatizer, "mech")


def _require_equal_variances(model: GaussianMixtureModel, which: str) -> float:
    _check_gaussian(model)
    if model.sigma0 != model.sigma1:
        raise ParameterError(f"{which} assumes sigma0 == sigma1; use gaussian_pdd_optimum")
    return model.sigma0


def _optimum(model: GaussianMixtureModel, mech: GaussianNoisePrivatizer, d: float,
             method: str) -> GaussianOptimum:
    return GaussianOptimum(gaussian_mechanism_accuracy(model, mech), mech,
                           mech.distortion(model), d, method)


def gaussian_theorem2_pdi(model: GaussianMixtureModel, distortion: float) -> GaussianOptimum:
    """Theorem 2 (PDI ``X^ = X + beta + gamma N``): ``beta = 0``, ``gamma = sqrt(D)``.

    Accuracy Eq. (37) with ``alpha = 2 mu / sqrt(D + sigma^2)``.
    """
    _require_equal_variances(model, "Theorem 2")
    d = _check_budget(distortion)
    g = math.sqrt(d)
    return _optimum(model, GaussianNoisePrivatizer(0.0, 0.0, g, g), d, "Theorem 2")


def _shift_only(model: GaussianMixtureModel, d: float) -> GaussianNoisePrivatizer:
    p = model.prior1
    c = p * (1 - p)
    # Theorem 3's total shift sqrt(D / (p(1-p))), capped at 2 mu: past it the two laws would
    # cross over and move apart again (the theorem tacitly assumes D <= 4 mu^2 p(1-p)); at
    # 2 mu the adversary is already reduced to the prior.
    beta = min(math.sqrt(d / c), 2 * model.mu)
    return GaussianNoisePrivatizer(p * beta, (1 - p) * beta, 0.0, 0.0)


def gaussian_theorem3_pdd_shift(model: GaussianMixtureModel,
                                distortion: float) -> GaussianOptimum:
    """Theorem 3 (PDD shift only): ``beta0 = sqrt(p~ D/(1-p~))``, ``beta1 = sqrt((1-p~) D/p~)``.

    Accuracy Eq. (37) with ``alpha = (2 mu - beta0 - beta1) / sigma``. The total shift is capped
    at ``2 mu`` (see the source comment).
    """
    _require_equal_variances(model, "Theorem 3")
    d = _check_budget(distortion)
    return _optimum(model, _shift_only(model, d), d, "Theorem 3")


def gaussian_theorem4_pdd_shift_noise(model: GaussianMixtureModel,
                                      distortion: float) -> GaussianOptimum:
    """Theorem 4 (PDD shift + common noise ``gamma N``).

    Interior optimum when ``(D + s^2)/sqrt(p~(1-p~)) < 2 mu sqrt(D)``:
    ``beta = (D + s^2)/(2 mu p~(1-p~))``, ``beta0 = p~ beta``, ``beta1 = (1-p~) beta``,
    ``gamma = sqrt(D - p~(1-p~) beta^2)``; otherwise ``gamma = 0`` and Theorem 3 applies.
    (Stationary point of ``(2 mu - beta)/sqrt(D + s^2 - p~(1-p~) beta^2)``, a minimum since the
    derivative's sign goes from - to +.)
    """
    s = _require_equal_variances(model, "Theorem 4")
    d = _check_budget(distortion)
    p = model.prior1
    c = p * (1 - p)
    if d > 0 and (d + s * s) / math.sqrt(c) < 2 * model.mu * math.sqrt(d):
        beta = (d + s * s) / (2 * model.mu * c)
        gamma = math.sqrt(max(0.0, d - c * beta * beta))
        mech = GaussianNoisePrivatizer(p * beta, (1 - p) * beta, gamma, gamma)
        return _optimum(model, mech, d, "Theorem 4 (interior)")
    return _optimum(model, _shift_only(model, d), d, "Theorem 4 (boundary: Theorem 3)")


def _boundary_mechanisms(model: GaussianMixtureModel, d: float, theta: NDArray[np.float64],
                         phi0: NDArray[np.float64], phi1: NDArray[np.float64]
                         ) -> tuple[NDArray[np.float64], ...]:
    """Points of the distortion boundary ``(1-p) e0^2 + p e1^2 = D`` (Proposition 1).

    ``e0 = sqrt(D/(1-p)) sin(theta)``, ``e1 = sqrt(D/p) cos(theta)``,
    ``(beta_i, gamma_i) = e_i (cos(phi_i), sin(phi_i))``: the paper's cube
    ``(eps, w0, w1) in [0, 1]^3`` (Eq. (44)) is the rational parametrisation of the same quarter
    circles, ``eps = tan(theta/2)``, ``w_i = tan(phi_i/2)``.
    """
    p = model.prior1
    e0 = math.sqrt(d / (1 - p)) * np.sin(theta)
    e1 = math.sqrt(d / p) * np.cos(theta)
    return e0 * np.cos(phi0), e1 * np.cos(phi1), e0 * np.sin(phi0), e1 * np.sin(phi1)


def gaussian_pdd_optimum(model: GaussianMixtureModel, distortion: float, *,
                         grid: int = 25, refine: int = 6) -> GaussianOptimum:
    """General PDD optimum (Section 4.1.2) by search over the three-parameter boundary cube.

    By post-processing some optimum lies on the distortion boundary (adding independent noise to
    ``X^`` can only lower the MAP accuracy and moves a mechanism out to the boundary within the
    family), so the search runs over :func:`_boundary_mechanisms`: a ``grid^3`` sweep of
    ``(theta, phi0, phi1) in [0, pi/2]^3`` followed by Nelder-Mead from the ``refine`` best grid
    points. Every accuracy is the exact MAP accuracy of a concrete mechanism, so the result is an
    achievable accuracy: it can only over-state the true optimum (a search may miss the global
    minimum), never under-state it.
    """
    d = _check_budget(distortion)
    if grid < 2 or refine < 0:
        raise ParameterError("grid must be >= 2 and refine >= 0")
    if d == 0:
        return _optimum(model, GaussianNoisePrivatizer(0.0, 0.0, 0.0, 0.0), d, "no distortion")
    p, mu = model.prior1, model.mu

    def acc(theta, phi0, phi1):
        b0, b1, g0, g1 = _boundary_mechanisms(model, d, theta, phi0, phi1)
        return _two_gaussian_accuracy(p, -mu + b0, np.hypot(model.sigma0, g0),
                                      mu - b1, np.hypot(model.sigma1, g1))

    axis = np.linspace(0.0, math.pi / 2, grid)
    th, f0, f1 = np.meshgrid(axis, axis, axis, indexing="ij")
    values = acc(th, f0, f1).ravel()
    order = np.argsort(values, kind="stable")
    best_x = np.array([th.ravel()[order[0]], f0.ravel()[order[0]], f1.ravel()[order[0]]])
    best_v = float(values[order[0]])
    for idx in order[:refine]:
        x0 = np.array([th.ravel()[idx], f0.ravel()[idx], f1.ravel()[idx]])
        res = optimize.minimize(lambda x: float(acc(*x)), x0, method="Nelder-Mead",
                                options={"xatol": 1e-7, "fatol": 1e-12, "maxiter": 2000})
        if res.fun < best_v:
            best_v, best_x = float(res.fun), res.x
    b0, b1, g0, g1 = (float(v) for v in _boundary_mechanisms(model, d, *best_x))
    # Report non-negative noise scales (only gamma^2 matters).
    mech = GaussianNoisePrivatizer(b0, b1, abs(g0), abs(g1))
    return _optimum(model, mech, d, f"boundary search: {grid}^3 grid + Nelder-Mead x{refine}")


#: Names this module had before, for one release: old name -> (new name, why).
_RENAMED = {"GaussianMechanism": (
    "GaussianNoisePrivatizer",
    "a GAP privatizer, not the Gaussian mechanism of differential privacy")}


def __getattr__(name: str) -> object:
    from quiltpriv._compat import renamed_attribute

    return renamed_attribute(__name__, _RENAMED, name)
