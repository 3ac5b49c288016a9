"""The alpha-loss adversary of GAP and the privatizers that minimise Arimoto mutual information.

[HKCSR17, Sec. 2.2, Eq. (7)-(8)] interpolates between the belief-refining adversary of log-loss
and the guessing adversary of 0-1 loss with the **alpha-loss** (Liao, Kosut, Sankar, Calmon)

    ``l_alpha(P_h, y) = alpha / (alpha - 1) * (1 - P_h(y | x^)^(1 - 1/alpha))``,  ``alpha > 1``.

The best soft decision rule against it is the *alpha-tilted posterior*
``P_h(y | x^) = P(y | x^)^alpha / sum_y' P(y' | x^)^alpha``; its expected loss is
``alpha / (alpha - 1) * (1 - N_alpha)`` with

    ``N_alpha = sum_x^ (sum_y P(y, x^)^alpha)^(1/alpha)``

(substitute the tilted rule: ``sum_y P(y|x^) P_h(y|x^)^(1-1/alpha)`` is
``(sum_y P(y|x^)^alpha)^(1/alpha)``), and the game value is the Arimoto conditional entropy
``H_alpha^A(Y | X^) = alpha / (1 - alpha) * log N_alpha``. The privatizer minimises the Arimoto
mutual information ``I_alpha^A(X^; Y) = H_alpha(Y) - H_alpha^A(Y | X^)`` (``H_alpha`` the Renyi
entropy of the prior), i.e. it **minimises N_alpha** within the distortion budget.
``alpha -> 1`` recovers Shannon's mutual information (log-loss; :mod:`quiltpriv.gap.information`)
and ``alpha = inf`` the MAP adversary (``N_inf`` is the MAP accuracy; 0-1 loss;
:mod:`quiltpriv.gap.privatizers`). Here ``alpha = 1`` means log-loss and ``alpha = math.inf``
0-1 loss, so one function covers the whole family; every figure is in nats.

Convexity, which the searches rely on: ``N_alpha`` is a sum of alpha-norms of vectors affine in
the mechanism, hence convex in it, and ``I_alpha^A`` is an increasing function of it, so every
partial minimum is unimodal; the binary optima (the two-variable reduction of
:mod:`quiltpriv.gap.information`) are found by nested bounded minimisations and checked against
dense grids. For the Gaussian mixture the search runs on the distortion boundary of the
additive-Gaussian family as for MAP (:func:`~quiltpriv.gap.privatizers.gaussian_pdd_optimum`):
adding independent noise can only lower ``I_alpha^A`` (data processing) and moves a mechanism
out to the boundary within the family. The paper defines mutual-information privacy for the
binary model only (Fig. 5c,d) and calls the data-driven MI privatizer future work; the Gaussian
functions here apply its Sec. 2.2 definitions to its Sec. 4 model and family.

GAP gives **no epsilon guarantee**: these are information figures along a distortion curve.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, optimize, special

from quiltpriv.errors import ParameterError
from quiltpriv.gap.information import _conditionals, _pdd_search, _pdi_search, _score
from quiltpriv.gap.privatizers import (
    BinaryModel,
    GaussianMixtureModel,
    GaussianNoisePrivatizer,
    _boundary_mechanisms,
    _check_budget,
    _two_gaussian_accuracy,
    gaussian_mechanism_accuracy,
)
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_array, check_instance

__all__ = [
    "AlphaLossAdversary",
    "BinaryAlphaOptimum",
    "GaussianAlphaOptimum",
    "alpha_loss_adversary",
    "arimoto_mutual_information",
    "binary_alpha_pdd_optimum",
    "binary_alpha_pdi_optimum",
    "gaussian_alpha_pdd_optimum",
    "gaussian_arimoto_mutual_information",
]

#: Points of the fixed Simpson rule the Gaussian search evaluates its objective on (the value
#: reported for the mechanism found is recomputed by adaptive quadrature).
_SEARCH_POINTS = 2049


def _check_alpha(alpha: object) -> float:
    """``alpha`` in ``[1, inf]``: 1 is log-loss, ``math.inf`` is 0-1 loss."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise ParameterError(f"alpha must be a number in [1, inf], got {alpha!r}")
    a = float(alpha)
    if math.isnan(a) or a < 1:
        raise ParameterError(f"alpha must be in [1, inf] (1: log-loss, inf: 0-1 loss), got {a!r}")
    return a


def _check_joint(joint: ArrayLike) -> np.ndarray:
    p = check_array(joint, "joint")
    if p.ndim != 2 or p.size == 0 or np.any(p < 0):
        raise ParameterError("joint must be a non-empty 2-d array of probabilities [y, output]")
    if abs(p.sum() - 1) > 1e-9:
        raise ParameterError(f"joint sums to {_fmt(p.sum(), 12)}, not 1")
    return p / p.sum()


def _column_norms(p: np.ndarray, alpha: float) -> np.ndarray:
    """``(sum_y p[y, o]^alpha)^(1/alpha)`` per column ``o``, without overflow or underflow."""
    if math.isinf(alpha):
        return p.max(axis=0)
    with np.errstate(divide="ignore"):
        logs = np.log(p)
    return np.exp(special.logsumexp(alpha * logs, axis=0) / alpha)


def _renyi_entropy(py: np.ndarray, alpha: float) -> float:
    """``H_alpha(Y)`` in nats (Shannon at 1, min-entropy at inf)."""
    py = py[py > 0]
    if alpha == 1:
        return float(-(py * np.log(py)).sum())
    if math.isinf(alpha):
        return float(-math.log(py.max()))
    return float(special.logsumexp(alpha * np.log(py)) / (1 - alpha))


def _conditional_entropy(p: np.ndarray, alpha: float) -> float:
    """``H_alpha^A(Y | O)`` in nats for ``p[y, o]`` (Shannon's ``H(Y | O)`` at alpha = 1)."""
    if alpha == 1:
        po = p.sum(axis=0)
        nz = p > 0
        return float(-(p[nz] * np.log((p / np.where(po > 0, po, 1.0))[nz])).sum())
    n = float(_column_norms(p, alpha).sum())
    if math.isinf(alpha):
        return -math.log(n)
    return alpha / (1 - alpha) * math.log(n)


@dataclass(frozen=True)
class AlphaLossAdversary(JSONResult):
    """The alpha-loss adversary of [HKCSR17, Sec. 2.2, Eq. (8)] against a finite output.

    Attributes
    ----------
    alpha : float
        The order: 1 is log-loss, ``inf`` is 0-1 loss.
    beliefs : tuple of tuple of float
        ``beliefs[o][y]``, the alpha-tilted posterior ``P(y | o)^alpha / sum_y' P(y' | o)^alpha``
        (the posterior at alpha = 1, uniform over the MAP guesses at inf; ``nan`` for an output
        of probability 0).
    expected_loss : float
        The adversary's least expected alpha-loss: ``alpha/(alpha-1) (1 - N_alpha)``,
        ``H(Y | O)`` in nats at alpha = 1, ``1 - MAP accuracy`` at inf.
    conditional_entropy : float
        ``H_alpha^A(Y | O)``, Arimoto's conditional entropy (nats).
    mutual_information : float
        ``I_alpha^A(O; Y) = H_alpha(Y) - H_alpha^A(Y | O)`` (nats, >= 0): what the privatizer
        minimises.
    """

    alpha: float
    beliefs: tuple[tuple[float, ...], ...]
    expected_loss: float
    conditional_entropy: float
    mutual_information: float


def _tilted(p: np.ndarray, alpha: float) -> np.ndarray:
    po = p.sum(axis=0)
    out = np.full(p.shape, np.nan)
    for o in np.flatnonzero(po > 0):
        col = p[:, o] / po[o]
        if math.isinf(alpha):
            top = col == col.max()
            out[:, o] = top / top.sum()
        else:
            with np.errstate(divide="ignore"):
                lw = alpha * np.log(col)
            out[:, o] = np.exp(lw - special.logsumexp(lw))
    return out


def alpha_loss_adversary(joint: ArrayLike, alpha: float) -> AlphaLossAdversary:
    """The best adversary under alpha-loss for ``joint[y, o] = P(Y = y, O = o)``.

    Parameters
    ----------
    joint : array_like, shape (n_secrets, n_outputs)
        The joint law of the secret and the mechanism's output.
    alpha : float
        In ``[1, inf]``: 1 is log-loss (the posterior, Shannon's mutual information), ``inf``
        is 0-1 loss (the MAP adversary).

    Returns
    -------
    AlphaLossAdversary

    Examples
    --------
    >>> import math
    >>> from quiltpriv.gap.alpha_loss import alpha_loss_adversary
    >>> adv = alpha_loss_adversary([[0.4, 0.1], [0.1, 0.4]], alpha=math.inf)
    >>> round(1 - adv.expected_loss, 12)  # the MAP accuracy
    0.8
    """
    p = _check_joint(joint)
    a = _check_alpha(alpha)
    h_cond = _conditional_entropy(p, a)
    if a == 1:
        loss = h_cond
    elif math.isinf(a):
        loss = 1.0 - float(p.max(axis=0).sum())
    else:
        loss = a / (a - 1) * (1.0 - float(_column_norms(p, a).sum()))
    mi = max(0.0, _renyi_entropy(p.sum(axis=1), a) - h_cond)
    beliefs = _tilted(p, a).T
    return AlphaLossAdversary(a, tuple(tuple(float(v) for v in row) for row in beliefs),
                              float(loss), float(h_cond), float(mi))


def arimoto_mutual_information(joint: ArrayLike, alpha: float) -> float:
    """``I_alpha^A(O; Y)`` in nats for ``joint[y, o]`` ([HKCSR17, Eq. (8)]).

    Parameters
    ----------
    joint : array_like, shape (n_secrets, n_outputs)
        The joint law of the secret and the output.
    alpha : float
        In ``[1, inf]`` (1: Shannon's mutual information; inf: ``log(MAP accuracy / prior
        accuracy)``).

    Returns
    -------
    float

    Examples
    --------
    >>> import math
    >>> from quiltpriv.gap.alpha_loss import arimoto_mutual_information
    >>> round(arimoto_mutual_information([[0.25, 0.25], [0.25, 0.25]], 2.0), 12)
    0.0
    """
    return alpha_loss_adversary(joint, alpha).mutual_information


# =========================================================================== binary data model


@dataclass(frozen=True)
class BinaryAlphaOptimum(JSONResult):
    """An Arimoto-MI-optimal binary privatizer at one distortion budget.

    ``mechanism`` is ``(s00, s01, s10, s11)`` (PDD) or ``(s0, s1)`` (PDI) as in
    :class:`~quiltpriv.gap.privatizers.BinaryOptimum`; ``mutual_information`` is
    ``I_alpha^A(X^; Y)`` in nats recomputed from it, ``map_accuracy`` the MAP adversary's
    accuracy against it; ``distortion`` its exact expected Hamming distortion, ``budget`` the D
    asked for.
    """

    alpha: float
    mutual_information: float
    map_accuracy: float
    mechanism: tuple[float, ...]
    distortion: float
    budget: float
    kind: str


def _binary_joint(py: np.ndarray, a0: float, a1: float) -> np.ndarray:
    """``joint[y, x^]`` for ``a_y = P(X^ = 1 | Y = y)``."""
    a = (min(max(a0, 0.0), 1.0), min(max(a1, 0.0), 1.0))
    return np.array([[py[y] * (1 - a[y]), py[y] * a[y]] for y in range(2)])


def _binary_objective(py: np.ndarray, alpha: float) -> Callable[[float, float], float]:
    """What the privatizer minimises, as a function of ``(a_0, a_1)``: ``-H_alpha^A(Y | X^)``.

    A decreasing function of ``N_alpha`` (so the same minimiser), and better conditioned: at
    ``alpha = 1 + tiny``, ``N_alpha - 1`` is below float resolution.
    """
    return lambda a0, a1: -_conditional_entropy(_binary_joint(py, a0, a1), alpha)


def _binary_result(model: BinaryModel, flips: list[float], d: float, kind: str,
                   alpha: float) -> BinaryAlphaOptimum:
    sc = _score(model, flips, d, kind)
    py, _ = _conditionals(model)
    mi = arimoto_mutual_information(_binary_joint(py, float(sc.a[0]), float(sc.a[1])), alpha)
    return BinaryAlphaOptimum(alpha, mi, sc.card.map_accuracy, tuple(float(v) for v in sc.flips),
                              sc.distortion, d, kind)


def binary_alpha_pdd_optimum(model: BinaryModel, distortion: float,
                             alpha: float) -> BinaryAlphaOptimum:
    """The PDD privatizer minimising ``I_alpha^A(X^; Y)`` at Hamming distortion <= D.

    [HKCSR17, Sec. 2.2, Eq. (8)] on the binary data model of Sec. 3: the reduction of
    :func:`~quiltpriv.gap.information.binary_mi_pdd_optimum` to ``a_y = P(X^ = 1 | Y = y)``
    at cost ``sum_y P(y) |a_y - r_y|``, with the Arimoto objective.

    Parameters
    ----------
    model : BinaryModel
        The joint law of ``(X, Y)``.
    distortion : float
        The budget D on ``P(X^ != X)``.
    alpha : float
        In ``[1, inf]``: 1 gives the mutual-information optimum, inf the MAP optimum.

    Returns
    -------
    BinaryAlphaOptimum

    Examples
    --------
    >>> import math
    >>> from quiltpriv.gap.privatizers import BinaryModel
    >>> from quiltpriv.gap.alpha_loss import binary_alpha_pdd_optimum
    >>> m = BinaryModel.from_xor(0.5, 0.25)
    >>> round(binary_alpha_pdd_optimum(m, 0.1, math.inf).map_accuracy, 6)
    0.65
    """
    check_instance(model, BinaryModel, "model")
    d = _check_budget(distortion)
    a = _check_alpha(alpha)
    py, _ = _conditionals(model)
    flips = _pdd_search(model, d, _binary_objective(py, a))
    return _binary_result(model, flips, d, "PDD", a)


def binary_alpha_pdi_optimum(model: BinaryModel, distortion: float,
                             alpha: float) -> BinaryAlphaOptimum:
    """The PDI privatizer (``X^`` from ``X`` only) minimising ``I_alpha^A(X^; Y)``.

    Parameters
    ----------
    model : BinaryModel
        The joint law of ``(X, Y)``.
    distortion : float
        The budget D on ``P(X^ != X)``.
    alpha : float
        In ``[1, inf]``.

    Returns
    -------
    BinaryAlphaOptimum

    Examples
    --------
    >>> import math
    >>> from quiltpriv.gap.privatizers import BinaryModel
    >>> from quiltpriv.gap.alpha_loss import binary_alpha_pdi_optimum
    >>> m = BinaryModel.from_xor(0.5, 0.25)
    >>> round(binary_alpha_pdi_optimum(m, 0.1, math.inf).map_accuracy, 6)
    0.7
    """
    check_instance(model, BinaryModel, "model")
    d = _check_budget(distortion)
    a = _check_alpha(alpha)
    py, _ = _conditionals(model)
    flips = _pdi_search(model, d, _binary_objective(py, a))
    return _binary_result(model, flips, d, "PDI", a)


# =========================================================================== Gaussian mixture


def _log_weights(x: np.ndarray, prior1: float, m0: Any, s0: Any, m1: Any,
                 s1: Any) -> tuple[np.ndarray, np.ndarray]:
    """``log((1-p) f_0(x))`` and ``log(p f_1(x))``."""
    c = 0.5 * math.log(2 * math.pi)
    l0 = math.log(1 - prior1) - np.log(s0) - c - 0.5 * ((x - m0) / s0) ** 2
    l1 = math.log(prior1) - np.log(s1) - c - 0.5 * ((x - m1) / s1) ** 2
    return l0, l1


def _gaussian_integrand(alpha: float, l0: np.ndarray, l1: np.ndarray) -> np.ndarray:
    """Per-point integrand: ``||(w0, w1)||_alpha`` (alpha > 1) or ``-sum w log posterior``."""
    lse = np.logaddexp(l0, l1)
    if alpha == 1:  # density of H(Y | X^): -sum_y w_y log(w_y / (w_0 + w_1))
        return -(np.exp(l0) * (l0 - lse) + np.exp(l1) * (l1 - lse))
    if math.isinf(alpha):
        return np.exp(np.maximum(l0, l1))
    return np.exp(np.logaddexp(alpha * l0, alpha * l1) / alpha)


def _gaussian_conditional_entropy(model: GaussianMixtureModel, mech: GaussianNoisePrivatizer,
                                  alpha: float) -> float:
    """``H_alpha^A(Y | X^)`` (nats) by adaptive quadrature over the laws' 12-sd ranges."""
    (m0, s0), (m1, s1) = mech.output_laws(model)
    if math.isinf(alpha):
        return -math.log(gaussian_mechanism_accuracy(model, mech))

    def f(x: float) -> float:
        l0, l1 = _log_weights(np.array([x]), model.prior1, m0, s0, m1, s1)
        return float(_gaussian_integrand(alpha, l0, l1)[0])

    lo = min(m0 - 12 * s0, m1 - 12 * s1)
    hi = max(m0 + 12 * s0, m1 + 12 * s1)
    val, _ = integrate.quad(f, lo, hi, points=sorted({m0, m1}), limit=500,
                            epsabs=1e-13, epsrel=1e-11)
    if alpha == 1:
        return float(val)
    return alpha / (1 - alpha) * math.log(val)


def gaussian_arimoto_mutual_information(model: GaussianMixtureModel,
                                        mech: GaussianNoisePrivatizer, alpha: float) -> float:
    """``I_alpha^A(X^; Y)`` in nats of a Gaussian privatizer on the mixture of [HKCSR17, Sec. 4].

    Parameters
    ----------
    model : GaussianMixtureModel
        The binary Gaussian mixture.
    mech : GaussianNoisePrivatizer
        The shift-and-noise privatizer.
    alpha : float
        In ``[1, inf]``: 1 is Shannon's mutual information, inf ``log(MAP acc / prior acc)``.

    Returns
    -------
    float

    Examples
    --------
    >>> import math
    >>> from quiltpriv.gap.privatizers import GaussianMixtureModel, GaussianNoisePrivatizer
    >>> from quiltpriv.gap.alpha_loss import gaussian_arimoto_mutual_information
    >>> m = GaussianMixtureModel(0.5, 3.0)
    >>> none = GaussianNoisePrivatizer(0.0, 0.0, 0.0, 0.0)
    >>> round(gaussian_arimoto_mutual_information(m, none, 1.0) / math.log(2), 4)  # bits
    0.9944
    """
    check_instance(model, GaussianMixtureModel, "model")
    check_instance(mech, GaussianNoisePrivatizer, "mech")
    a = _check_alpha(alpha)
    py = np.array([1 - model.prior1, model.prior1])
    return max(0.0, _renyi_entropy(py, a) - _gaussian_conditional_entropy(model, mech, a))


def _search_objective(model: GaussianMixtureModel, alpha: float, b0: np.ndarray, b1: np.ndarray,
                      g0: np.ndarray, g1: np.ndarray) -> np.ndarray:
    """What the privatizer minimises, for arrays of mechanisms: ``N_alpha`` (alpha > 1), the
    MAP accuracy (inf, exact) or ``-H(Y | X^)`` (alpha = 1), by a fixed Simpson rule."""
    p, mu = model.prior1, model.mu
    m0, m1 = -mu + b0, mu - b1
    s0, s1 = np.hypot(model.sigma0, g0), np.hypot(model.sigma1, g1)
    if math.isinf(alpha):
        return _two_gaussian_accuracy(p, m0, s0, m1, s1)
    lo = np.minimum(m0 - 12 * s0, m1 - 12 * s1)[..., None]
    hi = np.maximum(m0 + 12 * s0, m1 + 12 * s1)[..., None]
    t = np.linspace(0.0, 1.0, _SEARCH_POINTS)
    x = lo + (hi - lo) * t
    l0, l1 = _log_weights(x, p, m0[..., None], s0[..., None], m1[..., None], s1[..., None])
    val = integrate.simpson(_gaussian_integrand(alpha, l0, l1), x=x, axis=-1)
    return -val if alpha == 1 else val


@dataclass(frozen=True)
class GaussianAlphaOptimum(JSONResult):
    """A searched Arimoto-MI-optimal Gaussian privatizer at one budget.

    ``mutual_information`` is ``I_alpha^A(X^; Y)`` in nats of ``mechanism`` (adaptive quadrature),
    ``map_accuracy`` the MAP adversary's exact accuracy against it, ``distortion`` its exact
    expected squared error, ``budget`` the D asked for.
    """

    alpha: float
    mutual_information: float
    map_accuracy: float
    mechanism: GaussianNoisePrivatizer
    distortion: float
    budget: float
    method: str


def gaussian_alpha_pdd_optimum(model: GaussianMixtureModel, distortion: float, alpha: float, *,
                               grid: int = 13, refine: int = 4) -> GaussianAlphaOptimum:
    """The PDD Gaussian privatizer minimising ``I_alpha^A(X^; Y)`` within squared error D.

    Searched on the distortion boundary (see the module docstring) like
    :func:`~quiltpriv.gap.privatizers.gaussian_pdd_optimum`: a ``grid^3`` sweep of the boundary's
    angles, then Nelder-Mead from the ``refine`` best points. The figure reported is that of a
    concrete mechanism, so it can only over-state the optimum, never under-state it.

    Parameters
    ----------
    model : GaussianMixtureModel
        The binary Gaussian mixture of [HKCSR17, Sec. 4].
    distortion : float
        The budget D on ``E (X^ - X)^2``.
    alpha : float
        In ``[1, inf]``: 1 is mutual-information privacy, inf the MAP adversary.
    grid, refine : int
        Size of the sweep and number of local refinements.

    Returns
    -------
    GaussianAlphaOptimum

    Examples
    --------
    >>> import math
    >>> from quiltpriv.gap.privatizers import GaussianMixtureModel
    >>> from quiltpriv.gap.alpha_loss import gaussian_alpha_pdd_optimum
    >>> opt = gaussian_alpha_pdd_optimum(GaussianMixtureModel(0.5, 3.0), 4.0, math.inf)
    >>> round(opt.map_accuracy, 3)  # [HKCSR17, Table 2], theory column at D = 4
    0.814
    """
    check_instance(model, GaussianMixtureModel, "model")
    d = _check_budget(distortion)
    a = _check_alpha(alpha)
    if grid < 2 or refine < 0:
        raise ParameterError("grid must be >= 2 and refine >= 0")
    if d == 0:
        mech = GaussianNoisePrivatizer(0.0, 0.0, 0.0, 0.0)
        return _alpha_optimum(model, mech, d, a, "no distortion")

    def objective(theta, phi0, phi1):
        return _search_objective(model, a, *_boundary_mechanisms(model, d, theta, phi0, phi1))

    axis = np.linspace(0.0, math.pi / 2, grid)
    th, f0, f1 = (v.ravel() for v in np.meshgrid(axis, axis, axis, indexing="ij"))
    values = np.concatenate([objective(th[i:i + 256], f0[i:i + 256], f1[i:i + 256])
                             for i in range(0, th.size, 256)])
    order = np.argsort(values, kind="stable")
    best_x = np.array([th[order[0]], f0[order[0]], f1[order[0]]])
    best_v = float(values[order[0]])
    for idx in order[:refine]:
        x0 = np.array([th[idx], f0[idx], f1[idx]])
        res = optimize.minimize(lambda x: float(objective(*(np.atleast_1d(v) for v in x))[0]),
                                x0, method="Nelder-Mead",
                                options={"xatol": 1e-7, "fatol": 1e-13, "maxiter": 2000})
        if res.fun < best_v:
            best_v, best_x = float(res.fun), res.x
    b0, b1, g0, g1 = (float(np.asarray(v).ravel()[0])
                      for v in _boundary_mechanisms(model, d, *best_x))
    mech = GaussianNoisePrivatizer(b0, b1, abs(g0), abs(g1))
    return _alpha_optimum(model, mech, d, a,
                          f"boundary search: {grid}^3 grid + Nelder-Mead x{refine}")


def _alpha_optimum(model: GaussianMixtureModel, mech: GaussianNoisePrivatizer, d: float,
                   alpha: float, method: str) -> GaussianAlphaOptimum:
    return GaussianAlphaOptimum(alpha, gaussian_arimoto_mutual_information(model, mech, alpha),
                                gaussian_mechanism_accuracy(model, mech), mech,
                                mech.distortion(model), d, method)
