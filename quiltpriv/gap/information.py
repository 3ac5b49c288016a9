"""The MMSE adversary and the mutual-information privatizer of GAP ([HKCSR17, Sec. 2.2, 3.3]).

[HKCSR17, Sec. 2.2] derives the adversary each loss function gives:

* squared loss: the best estimator of ``Y`` from ``X^`` is the conditional mean
  ``h(x^) = E[Y | X^ = x^]`` and the game becomes ``max_g mmse(Y | g(X, Y))`` -- the
  **MMSE adversary** (:func:`mmse_adversary` for a finite output, :func:`mmse_two_gaussians` for
  the binary Gaussian mixture of Section 4);
* log-loss: the best belief is the posterior ``P(y | x^)`` and the game becomes
  ``min_g I(g(X, Y); Y)`` under the distortion budget -- **mutual-information privacy**
  ([HKCSR17, Sec. 2.2, Fig. 5c,d] for the binary data model).

The MI-optimal binary privatizers (:func:`binary_mi_pdd_optimum`, :func:`binary_mi_pdi_optimum`)
solve that convex programme. Write ``a_y = P(X^ = 1 | Y = y)`` and ``r_y = P(X = 1 | Y = y)``:
``I(X^; Y)`` depends on the mechanism only through ``(a_0, a_1)`` and is convex in them (mutual
information is convex in the channel for a fixed input law, and the channel is linear in the
mechanism). PDD: realising ``a_y`` costs at least ``P(y) |a_y - r_y|`` of Hamming distortion
(``P(X^ = 1 | y) - P(X = 1 | y) <= P(X^ != X | y)``), and one-way flips inside group ``y`` cost
exactly that, so the programme is ``min I(a)`` over ``sum_y P(y) |a_y - r_y| <= D``. PDI: the
mechanism ``(s_0, s_1)`` (``s_x = P(X^ = x | X = x)``) gives ``a_y = r_y s_1 + (1 - r_y)(1 - s_0)``
at distortion ``P(X=0)(1 - s_0) + P(X=1)(1 - s_1)``. Either is a convex function minimised over
a convex set of two variables: the partial minimum over the second variable is convex in the
first, so nested bounded one-dimensional minimisations find the optimum (the tests compare it
with a dense grid over all four flip probabilities).

GAP gives **no epsilon guarantee** (as for :mod:`quiltpriv.gap.privatizers`): these are
information and error figures along a distortion curve. A privatizer's output is a release:
:func:`binary_privatize` draws it through :mod:`quiltpriv.mechanisms.noise` (exact Bernoulli of
the mechanism's probabilities taken as exact rationals; secure by default, a seed for
experiments only).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, optimize

from quiltpriv.audit.adversary import Scorecard
from quiltpriv.errors import ParameterError
from quiltpriv.gap.privatizers import (
    BinaryModel,
    _check_budget,
    _check_flips,
    binary_pdd_score,
    binary_pdi_score,
)
from quiltpriv.mechanisms import noise
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import (
    check_array,
    check_instance,
    check_probability_vector,
    check_scalar,
)

__all__ = [
    "BinaryMIOptimum",
    "BinaryRelease",
    "MMSEAdversary",
    "binary_mi_pdd_optimum",
    "binary_mi_pdi_optimum",
    "binary_mutual_information",
    "binary_privatize",
    "mi_saturation_distortion",
    "mmse_adversary",
    "mmse_two_gaussians",
]

#: Tolerance of each bounded one-dimensional search (in the mechanism's probabilities).
_XTOL = 1e-10


# =========================================================================== the MMSE adversary


@dataclass(frozen=True)
class MMSEAdversary(JSONResult):
    """The MMSE adversary of [HKCSR17, Sec. 2.2] against a finite-output mechanism.

    Attributes
    ----------
    estimates : tuple of float
        ``E[Y | X^ = o]`` per output ``o`` (``nan`` for an output of probability 0).
    mmse : float
        ``E[(Y - E[Y | X^])^2]``, the adversary's mean squared error (what the privatizer
        maximises).
    prior_mmse : float
        ``Var(Y)``: the error of the best guess without seeing the output (``E[Y]``).
    """

    estimates: tuple[float, ...]
    mmse: float
    prior_mmse: float


def mmse_adversary(joint: ArrayLike, y_values: ArrayLike | None = None) -> MMSEAdversary:
    """The MMSE adversary for ``joint[y, o] = P(Y = y, X^ = o)`` ([HKCSR17, Sec. 2.2]).

    ``y_values[y]`` is the real value of the secret's ``y``-th state (default ``0, 1, ...``).
    The estimator is the conditional mean and ``mmse = sum_o P(o) Var(Y | X^ = o)``, computed as
    ``sum_{y, o} P(y, o) (y - E[Y | o])^2``.
    """
    p = check_array(joint, "joint")
    if p.ndim != 2 or p.size == 0 or np.any(p < 0):
        raise ParameterError("joint must be a non-empty 2-d array of probabilities [y, output]")
    if abs(p.sum() - 1) > 1e-9:
        raise ParameterError(f"joint sums to {_fmt(p.sum(), 12)}, not 1")
    p = p / p.sum()
    yv = (np.arange(p.shape[0], dtype=float) if y_values is None
          else check_array(y_values, "y_values", ndim=1))
    if yv.size != p.shape[0]:
        raise ParameterError(f"y_values has {yv.size} entries, joint has {p.shape[0]} rows")
    po = p.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = (yv[:, None] * p).sum(axis=0) / po
    resid = np.where(po > 0, est, 0.0)
    mmse = float((p * (yv[:, None] - resid[None, :]) ** 2).sum())
    py = p.sum(axis=1)
    mean = float((py * yv).sum())
    return MMSEAdversary(tuple(float(e) for e in est), mmse,
                         float((py * (yv - mean) ** 2).sum()))


def mmse_two_gaussians(prior1: float, means: ArrayLike, sds: ArrayLike) -> float:
    """MMSE of a binary ``Y`` from ``X^ | Y = y ~ N(means[y], sds[y]^2)``, ``P(Y = 1) = prior1``.

    ``E[Y | x] = P(Y = 1 | x)``, so ``mmse = E[P(1 | X^) P(0 | X^)] = int pi_0 f_0 pi_1 f_1 /
    (pi_0 f_0 + pi_1 f_1) dx`` ([HKCSR17, Sec. 4] model, squared loss of Sec. 2.2), by adaptive
    quadrature on the union of the two laws' 12-sd ranges (the integrand beyond them is below
    ``min(pi_0 f_0, pi_1 f_1) < 1e-32``).
    """
    pi1 = float(check_scalar(prior1, "prior1", min_val=0.0, max_val=1.0,
                             include_boundaries="neither"))
    m = check_array(means, "means", ndim=1)
    s = check_array(sds, "sds", ndim=1)
    if m.size != 2 or s.size != 2 or np.any(s <= 0):
        raise ParameterError("means and sds must have two entries, sds > 0")
    w = (1 - pi1, pi1)

    def dens(y: int, x: float) -> float:
        return w[y] * math.exp(-0.5 * ((x - m[y]) / s[y]) ** 2) / (s[y] * math.sqrt(2 * math.pi))

    def f(x: float) -> float:
        a, b = dens(0, x), dens(1, x)
        return a * b / (a + b) if a + b > 0 else 0.0

    lo = float(min(m - 12 * s))
    hi = float(max(m + 12 * s))
    pts = sorted({float(v) for v in m})
    val, _ = integrate.quad(f, lo, hi, points=pts, limit=500, epsabs=1e-13, epsrel=1e-11)
    return float(val)


# =========================================================================== MI privatizers


def binary_mutual_information(prior: ArrayLike, a: ArrayLike) -> float:
    """``I(X^; Y)`` in bits for ``P(Y = y) = prior[y]`` and ``a[y] = P(X^ = 1 | Y = y)``."""
    py = check_probability_vector(prior, "prior")
    av = check_array(a, "a", ndim=1)
    if py.size != 2 or av.size != 2 or np.any(av < 0) or np.any(av > 1):
        raise ParameterError("prior and a must have two entries, a in [0, 1]")
    return _mi_bits(py, av)


def _h(p: float) -> float:
    return 0.0 if p <= 0 or p >= 1 else -p * math.log2(p) - (1 - p) * math.log2(1 - p)


def _mi_bits(py: np.ndarray, a: np.ndarray) -> float:
    # I(X^; Y) = H(X^) - H(X^ | Y)
    a0, a1 = min(max(float(a[0]), 0.0), 1.0), min(max(float(a[1]), 0.0), 1.0)
    return max(0.0, _h(py[0] * a0 + py[1] * a1) - py[0] * _h(a0) - py[1] * _h(a1))


@dataclass(frozen=True)
class BinaryMIOptimum(JSONResult):
    """A mutual-information-optimal binary privatizer at one distortion budget.

    ``mechanism`` is ``(s00, s01, s10, s11)`` (PDD) or ``(s0, s1)`` (PDI) as in
    :class:`~quiltpriv.gap.privatizers.BinaryOptimum`. ``mutual_information_bits`` is
    ``I(X^; Y)`` of that mechanism (recomputed from it), ``map_accuracy`` the MAP adversary's
    accuracy against it and ``mmse`` the MMSE adversary's error (Y in {0, 1}); ``distortion``
    its exact expected Hamming distortion, ``budget`` the D asked for.
    """

    mutual_information_bits: float
    map_accuracy: float
    mmse: float
    mechanism: tuple[float, ...]
    distortion: float
    budget: float
    kind: str


def _nested_min(f: Callable[[float, float], float], outer: tuple[float, float],
                inner: Callable[[float], tuple[float, float]]) -> tuple[float, float]:
    """argmin of a jointly convex ``f(u, w)`` over ``u in outer``, ``w in inner(u)`` (convex)."""
    def best_w(u: float) -> tuple[float, float]:
        lo, hi = inner(u)
        if hi - lo <= _XTOL:
            return f(u, lo), lo
        r = optimize.minimize_scalar(lambda w: f(u, w), bounds=(lo, hi), method="bounded",
                                     options={"xatol": _XTOL})
        cands = [(float(r.fun), float(r.x)), (f(u, lo), lo), (f(u, hi), hi)]
        return min(cands)

    lo, hi = outer
    if hi - lo <= _XTOL:
        return lo, best_w(lo)[1]
    r = optimize.minimize_scalar(lambda u: best_w(u)[0], bounds=(lo, hi), method="bounded",
                                 options={"xatol": _XTOL})
    cands = [(best_w(u)[0], u) for u in (float(r.x), lo, hi)]
    u = min(cands)[1]
    return u, best_w(u)[1]


def _conditionals(model: BinaryModel) -> tuple[np.ndarray, np.ndarray]:
    p = model.array  # p[x, y]
    py = p.sum(axis=0)
    if np.any(py <= 0):
        raise ParameterError("both values of the private Y must have positive probability")
    return py, p[1, :] / py  # P(y), r_y = P(X = 1 | Y = y)


def mi_saturation_distortion(model: BinaryModel, kind: str = "PDD") -> float:
    """The least distortion at which ``I(X^; Y) = 0`` is reachable ([HKCSR17, Fig. 5c,d]).

    PDD: ``min_c sum_y P(y) |c - r_y|`` (both groups moved to a common ``P(X^ = 1 | y) = c``;
    the weighted median of the ``r_y`` is optimal). PDI: ``X^`` must be independent of ``X``
    (when ``r_0 != r_1``), cheapest as a constant output: ``min(P(X = 0), P(X = 1))``.
    """
    check_instance(model, BinaryModel, "model")
    py, r = _conditionals(model)
    if r[0] == r[1]:
        return 0.0
    if kind == "PDD":
        return float(min(sum(py[y] * abs(c - r[y]) for y in range(2)) for c in r))
    if kind == "PDI":
        px1 = float(model.array[1, :].sum())
        return min(px1, 1 - px1)
    raise ParameterError(f"kind must be 'PDD' or 'PDI', got {kind!r}")


@dataclass(frozen=True)
class _Scored:
    """A binary privatizer's flips (clipped to [0, 1]), its card, its exact distortion and
    ``a_y = P(X^ = 1 | Y = y)``: what the MI and the alpha-loss results are computed from."""

    flips: list[float]
    card: Scorecard
    distortion: float
    a: np.ndarray


def _score(model: BinaryModel, s: list[float], d: float, kind: str) -> _Scored:
    """Score the flips ``s`` found by :func:`_pdd_search` / :func:`_pdi_search`, checking the
    budget ``d`` (the searches stay inside it)."""
    flips = [min(max(v, 0.0), 1.0) for v in s]
    if kind == "PDI":
        card, dist = binary_pdi_score(model, flips)
        full = [flips[0], flips[0], flips[1], flips[1]]
    else:
        card, dist = binary_pdd_score(model, flips)
        full = flips
    if dist > d + 1e-9:  # pragma: no cover - the searches stay inside the budget
        raise ParameterError(f"privatizer exceeds the budget ({dist} > {d})")
    py, _ = _conditionals(model)
    fl = np.array(full).reshape(2, 2)
    p = model.array
    a = (p[0, :] * (1 - fl[0, :]) + p[1, :] * fl[1, :]) / py
    return _Scored(flips, card, dist, a)


def _result(model: BinaryModel, s: list[float], d: float, kind: str) -> BinaryMIOptimum:
    sc = _score(model, s, d, kind)
    py, _ = _conditionals(model)
    a = sc.a
    joint = np.array([[py[y] * (1 - a[y]), py[y] * a[y]] for y in range(2)])
    return BinaryMIOptimum(_mi_bits(py, a), sc.card.map_accuracy,
                           mmse_adversary(joint / joint.sum()).mmse,
                           tuple(float(v) for v in sc.flips), sc.distortion, d, kind)


def _pdd_search(model: BinaryModel, d: float,
                objective: Callable[[float, float], float]) -> list[float]:
    """The PDD flips ``(s00, s01, s10, s11)`` minimising a jointly convex ``objective(a_0, a_1)``
    of ``a_y = P(X^ = 1 | Y = y)`` at Hamming distortion <= ``d``.

    A PDD privatizer reaches ``a_y`` at least cost ``P(y) |a_y - r_y|`` by one-way flips inside
    group ``y``, so the search is over ``(a_0, a_1)`` in that budget (the module docstring's
    reduction); shared by the MI and the alpha-loss privatizers ([HKCSR17, Sec. 2.2]).
    """
    py, r = _conditionals(model)

    def inner(a0: float) -> tuple[float, float]:
        rem = max(0.0, d - py[0] * abs(a0 - r[0])) * (1 - 1e-12)
        return max(0.0, r[1] - rem / py[1]), min(1.0, r[1] + rem / py[1])

    span = d / py[0] * (1 - 1e-12)
    a0, a1 = _nested_min(objective, (max(0.0, r[0] - span), min(1.0, r[0] + span)), inner)
    s = np.ones((2, 2))
    for y, ay in enumerate((a0, a1)):  # one-way flips inside group y cost P(y) |a_y - r_y|
        if ay > r[y]:  # move mass from X = 0 to X^ = 1
            s[0, y] = 1 - (ay - r[y]) / (1 - r[y])
        elif ay < r[y]:
            s[1, y] = 1 - (r[y] - ay) / r[y]
    return [float(v) for v in s.ravel()]


def _pdi_search(model: BinaryModel, d: float,
                objective: Callable[[float, float], float]) -> list[float]:
    """The PDI flips ``(s0, s1)`` minimising ``objective(a_0, a_1)`` at distortion <= ``d``.

    With ``u = 1 - s1`` and ``w = 1 - s0``, ``a_y = r_y (1 - u) + (1 - r_y) w`` is linear and
    the distortion ``P(X = 1) u + P(X = 0) w``, so a convex objective stays convex in
    ``(u, w)``.
    """
    py, r = _conditionals(model)
    px1 = float(model.array[1, :].sum())
    px0 = 1 - px1

    def f(u: float, w: float) -> float:
        return objective(r[0] * (1 - u) + (1 - r[0]) * w, r[1] * (1 - u) + (1 - r[1]) * w)

    def inner(u: float) -> tuple[float, float]:
        if px0 == 0:
            return 0.0, 0.0
        return 0.0, min(1.0, max(0.0, (d - px1 * u) / px0 * (1 - 1e-12)))

    top = 1.0 if px1 == 0 else min(1.0, d / px1 * (1 - 1e-12))
    u, w = _nested_min(f, (0.0, top), inner)
    return [1 - w, 1 - u]


def binary_mi_pdd_optimum(model: BinaryModel, distortion: float) -> BinaryMIOptimum:
    """The PDD privatizer minimising ``I(X^; Y)`` at Hamming distortion <= D ([HKCSR17, Sec. 2.2,
    Fig. 5c,d]); see the module docstring for the reduction to ``(a_0, a_1)``."""
    check_instance(model, BinaryModel, "model")
    d = _check_budget(distortion)
    py, _ = _conditionals(model)
    flips = _pdd_search(model, d, lambda a0, a1: _mi_bits(py, np.array([a0, a1])))
    return _result(model, flips, d, "PDD")


def binary_mi_pdi_optimum(model: BinaryModel, distortion: float) -> BinaryMIOptimum:
    """The PDI privatizer (``X^`` from ``X`` only) minimising ``I(X^; Y)`` at distortion <= D."""
    check_instance(model, BinaryModel, "model")
    d = _check_budget(distortion)
    py, _ = _conditionals(model)
    flips = _pdi_search(model, d, lambda a0, a1: _mi_bits(py, np.array([a0, a1])))
    return _result(model, flips, d, "PDI")


# =========================================================================== release


@dataclass(frozen=True)
class BinaryRelease(JSONResult):
    """Privatized bits ``X^`` of a binary privatizer.

    ``secure`` is True iff drawn from ``secrets.SystemRandom``; ``seed`` the int seed of a
    reproducible, experiments-only draw (None otherwise).
    """

    values: tuple[int, ...]
    secure: bool
    seed: int | None


def binary_privatize(mechanism: ArrayLike, x: ArrayLike, y: ArrayLike | None = None, *,
                     seed: int | random.Random | None = None) -> BinaryRelease:
    """Release ``X^`` for rows ``(x_i, y_i)`` through a binary privatizer.

    ``mechanism``: ``(s00, s01, s10, s11)`` (PDD; needs ``y``) or ``(s0, s1)`` (PDI) with
    ``s = P(X^ = x | X = x, ...)``. Each bit is kept with probability exactly ``s`` (the float
    taken as an exact rational) by :func:`quiltpriv.mechanisms.noise.categorical`: secure
    randomness by default; ``seed`` for experiments only (recorded).
    """
    arr = check_array(mechanism, "mechanism").ravel()
    if arr.size not in (2, 4):
        raise ParameterError("mechanism must be (s0, s1) (PDI) or (s00, s01, s10, s11) (PDD)")
    flips = _check_flips(arr, arr.size)
    xs = np.asarray(x)
    if xs.ndim != 1 or not np.all(np.isin(xs, (0, 1))):
        raise ParameterError("x must be a 1-d sequence of bits 0/1")
    if arr.size == 4:
        if y is None:
            raise ParameterError("a PDD mechanism needs the private bits y")
        ys = np.asarray(y)
        if ys.shape != xs.shape or not np.all(np.isin(ys, (0, 1))):
            raise ParameterError("y must be bits 0/1, one per x")
        keep = [float(flips[2 * int(a) + int(b)]) for a, b in zip(xs, ys, strict=True)]
    else:
        keep = [float(flips[int(a)]) for a in xs]
    rng = noise.make_rng(seed)
    out = []
    for bit, s in zip(xs.tolist(), keep, strict=True):
        keep_p = Fraction(s)  # exact: P(keep) = s, P(flip) = 1 - s as rationals
        kept = noise.categorical([keep_p, 1 - keep_p], rng) == 0
        out.append(int(bit) if kept else 1 - int(bit))
    seed_rec = int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else None
    return BinaryRelease(tuple(out), isinstance(rng, random.SystemRandom), seed_rec)
