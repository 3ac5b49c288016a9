"""Learned GAP privatizers: the alternating minimax of [HKCSR17, Alg. 1].

The data holder does not know ``P(X, Y)``; it has rows ``(x_i, y_i)`` and learns a privatizer
``g(X, Y; theta_p)`` by playing against a learned adversary ``h(X^; theta_a)`` that minimises
the empirical log-loss (cross-entropy, Eq. (11)). Each iteration of [HKCSR17, Alg. 1] draws a batch,
takes ``adversary_steps`` gradient steps for the adversary, then one step for the privatizer on
the negated loss plus a distortion-constraint term:

* ``"penalty"`` (Eq. (13)): ``+ rho_t max(0, dist - D)``;
* ``"augmented_lagrangian"`` (Eq. (14)): ``+ rho_t/2 (dist + delta - D)^2 - lambda_t (dist +
  delta - D)`` with slack ``delta >= 0`` (minimised in closed form each step) and
  ``lambda_{t+1} = lambda_t - rho_t (dist + delta - D)``;

with ``rho_t`` growing geometrically to a cap. All gradients are explicit (numpy, no autodiff);
both players use Adam (the paper's optimiser, learning rate 0.01, minibatch 200).

Models (Sections 3.2 and 4.2)
    * binary: privatizer ``s`` (4 flips PDD or 2 flips PDI) through a logistic link; adversary
      ``theta_a = (P(Y=1 | X^=0), P(Y=1 | X^=1))`` through a logistic link. The privatizer's own
      coin is averaged out exactly (the loss is the expectation over ``X^`` given the row).
    * Gaussian mixture: privatizer ``(beta0, beta1, gamma0, gamma1)``,
      ``X^ = X + (1-Y) beta0 - Y beta1 + ((1-Y) gamma0 + Y gamma1) N``, reparametrised noise;
      adversary a logistic regression on ``(x^, x^2)`` (scaled). *Deviation from the paper*,
      which uses a three-layer leaky-ReLU network: the log-posterior of two Gaussians is exactly
      quadratic in ``x^``, so this family contains the Bayes adversary and trains without the
      noise of a network.

After training, the privatizer iterates of the last quarter are averaged and the result is
*repaired* to the budget if its exact distortion exceeds ``D`` (flips or shifts/noise shrunk
towards the identity), so the reported accuracy is never bought with excess distortion. The
reported accuracy is that of the exact MAP adversary against the learned mechanism under the
evaluation model (the true model if given, else the empirical law of the data) -- the
"P_detect" column of the paper's Tables 2-5. GAP gives no epsilon guarantee.

Randomness: training is an experiment, not a release; it uses ``numpy.random.default_rng(seed)``
and records the seed (a fresh one is drawn and recorded when ``seed`` is ``None``).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from quiltpriv.errors import ParameterError
from quiltpriv.gap.privatizers import (
    BinaryModel,
    GaussianMixtureModel,
    GaussianNoisePrivatizer,
    binary_pdd_score,
    gaussian_mechanism_accuracy,
)
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_array, check_positive, check_records

__all__ = [
    "LearnedBinaryPrivatizer",
    "LearnedGaussianPrivatizer",
    "MinimaxSettings",
    "learn_binary_privatizer",
    "learn_gaussian_privatizer",
    "sample_binary",
    "sample_gaussian",
]

#: How the distortion budget is enforced, and which binary privatizer is learned.
Constraint = Literal["penalty", "augmented_lagrangian"]
PrivatizerKind = Literal["PDD", "PDI"]
_CONSTRAINTS: tuple[Constraint, ...] = ("penalty", "augmented_lagrangian")


@dataclass(frozen=True)
class MinimaxSettings(JSONResult):
    """Knobs of [HKCSR17, Alg. 1] (defaults follow the paper where it gives them).

    ``iterations`` T; ``batch_size`` M (paper: 200); ``adversary_steps`` k adversary updates per
    privatizer update; learning rates of Adam (paper: 0.01); ``rho0``, ``rho_growth``,
    ``rho_max`` the penalty schedule ``rho_t = min(rho0 * rho_growth^t, rho_max)``;
    ``average_fraction`` the trailing share of privatizer iterates averaged into the result.
    """

    iterations: int = 3000
    batch_size: int = 200
    adversary_steps: int = 5
    lr_privatizer: float = 0.01
    lr_adversary: float = 0.05
    rho0: float = 0.1
    rho_growth: float = 1.0005
    rho_max: float = 10.0
    average_fraction: float = 0.25

    @classmethod
    def for_constraint(cls, constraint: str, **overrides: Any) -> MinimaxSettings:
        """Defaults tuned per constraint method (used when ``settings`` is ``None``).

        The penalty method wants a gentle, slowly growing ``rho`` (Adam normalises gradient
        magnitudes, so a large exact penalty keeps the iterate deep inside the budget); the
        augmented Lagrangian wants a larger ``rho`` so that its multiplier builds up quickly.
        """
        if constraint not in _CONSTRAINTS:
            raise ParameterError(f"constraint must be one of {_CONSTRAINTS}, got {constraint!r}")
        base = {} if constraint == "penalty" else dict(rho0=1.0, rho_growth=1.002, rho_max=100.0)
        return cls(**{**base, **overrides})

    def __post_init__(self) -> None:
        check_records(self.iterations, "iterations")
        check_records(self.batch_size, "batch_size")
        check_records(self.adversary_steps, "adversary_steps")
        for name in ("lr_privatizer", "lr_adversary", "rho0", "rho_max"):
            check_positive(getattr(self, name), name)
        if check_positive(self.rho_growth, "rho_growth") < 1:
            raise ParameterError("rho_growth must be >= 1")
        if not 0 < self.average_fraction <= 1:
            raise ParameterError("average_fraction must be in (0, 1]")


@dataclass(frozen=True)
class LearnedBinaryPrivatizer(JSONResult):
    """A binary privatizer learned by [HKCSR17, Alg. 1].

    ``mechanism``: ``(s00, s01, s10, s11)`` (PDD) or ``(s0, s1)`` (PDI), as in
    :class:`quiltpriv.gap.privatizers.BinaryOptimum`. ``accuracy`` and ``distortion`` are exact
    under the evaluation model; ``repaired`` says whether the averaged iterate exceeded the budget
    and was shrunk to it; ``final_cross_entropy`` is the learned adversary's last minibatch loss.
    """

    mechanism: tuple[float, ...]
    kind: str
    accuracy: float
    distortion: float
    budget: float
    constraint: str
    repaired: bool
    final_cross_entropy: float
    seed: int


@dataclass(frozen=True)
class LearnedGaussianPrivatizer(JSONResult):
    """A Gaussian-mixture privatizer learned by [HKCSR17, Alg. 1] (fields as in the binary case)."""

    mechanism: GaussianNoisePrivatizer
    accuracy: float
    distortion: float
    budget: float
    constraint: str
    repaired: bool
    final_cross_entropy: float
    seed: int


# --------------------------------------------------------------------------- helpers


class _Adam:
    """Adam (Kingma & Ba) on one parameter vector; ``step`` takes a gradient to descend."""

    def __init__(self, size: int, lr: float) -> None:
        self.m = np.zeros(size)
        self.v = np.zeros(size)
        self.t = 0
        self.lr = lr

    def step(self, params: np.ndarray, grad: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = 0.9 * self.m + 0.1 * grad
        self.v = 0.999 * self.v + 0.001 * grad * grad
        mh = self.m / (1 - 0.9**self.t)
        vh = self.v / (1 - 0.999**self.t)
        return params - self.lr * mh / (np.sqrt(vh) + 1e-8)


def _sigmoid(z):
    return 0.5 * (1 + np.tanh(0.5 * z))


def _xent(h, y):
    h = np.clip(h, 1e-12, 1 - 1e-12)
    return -(y * np.log(h) + (1 - y) * np.log(1 - h))


class _Constraint:
    """Penalty (Eq. (13)) or augmented-Lagrangian (Eq. (14)) term for ``dist <= D``."""

    def __init__(self, kind: str, budget: float, s: MinimaxSettings) -> None:
        if kind not in _CONSTRAINTS:
            raise ParameterError(f"constraint must be one of {_CONSTRAINTS}, got {kind!r}")
        self.kind, self.budget, self.s = kind, budget, s
        self.lam = 0.0
        self.t = 0

    @property
    def rho(self) -> float:
        return min(self.s.rho0 * self.s.rho_growth**self.t, self.s.rho_max)

    def grad_factor(self, dist: float) -> float:
        """d(term)/d(dist) at the current distortion."""
        rho = self.rho
        c = dist - self.budget
        if self.kind == "penalty":
            return rho if c > 0 else 0.0
        delta = max(0.0, self.lam / rho - c)  # slack minimising the AL term
        return rho * (c + delta) - self.lam

    def update(self, dist: float) -> None:
        if self.kind == "augmented_lagrangian":
            rho = self.rho
            c = dist - self.budget
            delta = max(0.0, self.lam / rho - c)
            self.lam -= rho * (c + delta)
        self.t += 1


def _resolve_seed(seed: int | None) -> int:
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ParameterError(f"seed must be a non-negative int or None, got {seed!r}")
    return int(seed)


def _check_rows(x: ArrayLike, y: ArrayLike, binary_x: bool) -> tuple[np.ndarray, np.ndarray]:
    xa = check_array(x, "x").ravel()
    ya = check_array(y, "y").ravel()
    if xa.size != ya.size or xa.size < 2:
        raise ParameterError("x and y must be 1-d arrays of the same length (>= 2 rows)")
    if not np.all((ya == 0) | (ya == 1)):
        raise ParameterError("the private variable y must be 0/1")
    if binary_x and not np.all((xa == 0) | (xa == 1)):
        raise ParameterError("the public variable x must be 0/1 in the binary model")
    if ya.min() == ya.max():
        raise ParameterError("the private variable y takes one value only: nothing to hide")
    return xa, ya


def sample_binary(model: BinaryModel, n: int, *,
                  seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` i.i.d. rows ``(x, y)`` from a binary model (synthetic data for experiments)."""
    n = check_records(n, "n")
    rng = np.random.default_rng(seed)
    cells = rng.choice(4, size=n, p=model.array.ravel())
    return (cells // 2).astype(float), (cells % 2).astype(float)


def sample_gaussian(model: GaussianMixtureModel, n: int, *,
                    seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` i.i.d. rows ``(x, y)`` from a binary Gaussian mixture (synthetic data)."""
    n = check_records(n, "n")
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < model.prior1).astype(float)
    mean = np.where(y == 1, model.mu, -model.mu)
    sd = np.where(y == 1, model.sigma1, model.sigma0)
    return mean + sd * rng.standard_normal(n), y


# --------------------------------------------------------------------------- binary


def learn_binary_privatizer(
    x: ArrayLike, y: ArrayLike, distortion: float, *, kind: PrivatizerKind = "PDD",
    constraint: Constraint = "penalty", settings: MinimaxSettings | None = None,
    model: BinaryModel | None = None, seed: int | None = None,
) -> LearnedBinaryPrivatizer:
    """Learn a binary PDD or PDI privatizer from rows ``(x_i, y_i)`` by [HKCSR17, Alg. 1].

    Parameters
    ----------
    x, y:
        Public and private bits of the rows.
    distortion:
        Budget ``D`` on the expected Hamming distortion ``P(X^ != X)``.
    kind:
        ``"PDD"`` (flips depend on ``(x, y)``) or ``"PDI"`` (on ``x`` only).
    constraint:
        ``"penalty"`` (Eq. (13), the paper's choice for this model) or
        ``"augmented_lagrangian"`` (Eq. (14)).
    model:
        Law under which the learned mechanism is evaluated (default: the empirical law).
    seed:
        Seed of the training randomness (minibatches); recorded in the result.
    """
    xa, ya = _check_rows(x, y, binary_x=True)
    d = check_positive(distortion, "distortion budget D", allow_zero=True)
    if kind not in ("PDD", "PDI"):
        raise ParameterError(f"kind must be 'PDD' or 'PDI', got {kind!r}")
    st = settings or MinimaxSettings.for_constraint(constraint)
    seed = _resolve_seed(seed)
    rng = np.random.default_rng(seed)
    if model is None:
        counts = np.array([[np.sum((xa == i) & (ya == j)) for j in (0, 1)] for i in (0, 1)])
        model = BinaryModel.from_joint(counts / counts.sum())
    con = _Constraint(constraint, d, st)

    # s[x, y] = sigmoid(u[x, y]) (PDI: u[x, 0] = u[x, 1]); start near the identity.
    u = np.full(4 if kind == "PDD" else 2, 2.0)
    a = np.zeros(2)  # adversary logits of P(Y=1 | X^=0), P(Y=1 | X^=1)
    opt_p, opt_a = _Adam(u.size, st.lr_privatizer), _Adam(2, st.lr_adversary)
    n = xa.size
    keep_from = int(st.iterations * (1 - st.average_fraction))
    s_sum, s_count = np.zeros(4), 0
    xent = math.nan

    def flips(u):
        s = _sigmoid(u)
        return s if kind == "PDD" else np.repeat(s, 2)

    for t in range(st.iterations):
        idx = rng.integers(0, n, size=min(st.batch_size, n))
        xb, yb = xa[idx].astype(int), ya[idx]
        cell = 2 * xb + yb.astype(int)  # index of s[x, y] in the flattened 2 x 2
        s = flips(u)
        # P(X^ = 1 | row): s[1, y] if x = 1, else 1 - s[0, y]
        pi1 = np.where(xb == 1, s[cell], 1 - s[cell])
        for _ in range(st.adversary_steps):
            h = _sigmoid(a)
            grad_a = np.array([np.mean((1 - pi1) * (h[0] - yb)), np.mean(pi1 * (h[1] - yb))])
            a = opt_a.step(a, grad_a)
        h = _sigmoid(a)
        l1, l0 = _xent(h[1], yb), _xent(h[0], yb)
        xent = float(np.mean(pi1 * l1 + (1 - pi1) * l0))
        # Privatizer: minimise -E[loss] + constraint(dist); dist = mean(1 - s[cell]).
        dloss_dpi = (l1 - l0) / idx.size
        dpi_ds = np.where(xb == 1, 1.0, -1.0)
        dist = float(np.mean(1 - s[cell]))
        factor = con.grad_factor(dist)
        grad_s = np.zeros(4)
        np.add.at(grad_s, cell, -dloss_dpi * dpi_ds - factor / idx.size)
        grad_s *= s * (1 - s)
        grad_u = grad_s if kind == "PDD" else grad_s.reshape(2, 2).sum(axis=1)
        u = opt_p.step(u, grad_u)
        con.update(dist)
        if t >= keep_from:
            s_sum += flips(u)
            s_count += 1

    s = s_sum / s_count
    card, dist = binary_pdd_score(model, s)
    repaired = dist > d
    if repaired:
        # Distortion is linear in (1 - s): shrink the flip probabilities onto the budget.
        s = 1 - (1 - s) * (d / dist)
        card, dist = binary_pdd_score(model, s)
    mech = tuple(float(v) for v in s) if kind == "PDD" else (float(s[0]), float(s[2]))
    return LearnedBinaryPrivatizer(mech, kind, card.map_accuracy, dist, d, constraint, repaired,
                                   xent, seed)


# --------------------------------------------------------------------------- Gaussian


def learn_gaussian_privatizer(
    x: ArrayLike, y: ArrayLike, distortion: float, *,
    constraint: Constraint = "augmented_lagrangian",
    settings: MinimaxSettings | None = None, model: GaussianMixtureModel | None = None,
    seed: int | None = None,
) -> LearnedGaussianPrivatizer:
    """Learn ``(beta0, beta1, gamma0, gamma1)`` of the PDD Gaussian privatizer by [HKCSR17, Alg. 1].

    Parameters as in :func:`learn_binary_privatizer`; ``distortion`` bounds ``E (X^ - X)^2``
    and ``constraint`` defaults to the augmented Lagrangian (the paper's choice for this model).
    ``model`` (default: a two-Gaussian fit of the data, ``mu`` the half-distance of the class
    means) is used to evaluate the learned mechanism with the exact MAP adversary.
    """
    xa, ya = _check_rows(x, y, binary_x=False)
    d = check_positive(distortion, "distortion budget D", allow_zero=True)
    st = settings or MinimaxSettings.for_constraint(constraint)
    seed = _resolve_seed(seed)
    rng = np.random.default_rng(seed)
    if model is None:
        x0, x1 = xa[ya == 0], xa[ya == 1]
        if x0.size < 2 or x1.size < 2:
            raise ParameterError("each value of y needs at least two rows to fit the model")
        centre = 0.5 * (x0.mean() + x1.mean())
        xa = xa - centre  # the model is centred; the privatizer is shift-equivariant
        model = GaussianMixtureModel(float(ya.mean()), abs(0.5 * (x1.mean() - x0.mean())),
                                     float(x0.std(ddof=1)), float(x1.std(ddof=1)))
    con = _Constraint(constraint, d, st)
    frac1 = float(ya.mean())
    scale = math.sqrt(float(np.mean(xa * xa)) + d)  # feature scaling for the adversary

    theta = np.array([0.0, 0.0, 0.1, 0.1])  # beta0, beta1, gamma0, gamma1
    w = np.zeros(3)  # adversary: logit = w0 + w1 u + w2 u^2, u = x^ / scale
    opt_p, opt_a = _Adam(4, st.lr_privatizer), _Adam(3, st.lr_adversary)
    n = xa.size
    keep_from = int(st.iterations * (1 - st.average_fraction))
    th_sum, th_count = np.zeros(4), 0
    xent = math.nan

    for t in range(st.iterations):
        idx = rng.integers(0, n, size=min(st.batch_size, n))
        xb, yb = xa[idx], ya[idx]
        noise = rng.standard_normal(idx.size)
        b0, b1, g0, g1 = theta
        xh = xb + (1 - yb) * b0 - yb * b1 + ((1 - yb) * g0 + yb * g1) * noise
        uh = xh / scale
        feats = np.stack([np.ones_like(uh), uh, uh * uh])
        for _ in range(st.adversary_steps):
            r = _sigmoid(w @ feats) - yb  # d(loss)/d(logit)
            w = opt_a.step(w, feats @ r / idx.size)
        z = w @ feats
        r = _sigmoid(z) - yb
        xent = float(np.mean(np.logaddexp(0.0, z) - yb * z))
        dl_dx = r * (w[1] + 2 * w[2] * uh) / scale / idx.size
        grad_loss = np.array([np.sum(dl_dx * (1 - yb)), -np.sum(dl_dx * yb),
                              np.sum(dl_dx * (1 - yb) * noise), np.sum(dl_dx * yb * noise)])
        # Expected distortion over the privatizer's own noise, empirical over the data.
        dist = float((1 - frac1) * (b0 * b0 + g0 * g0) + frac1 * (b1 * b1 + g1 * g1))
        grad_dist = 2 * theta * np.array([1 - frac1, frac1, 1 - frac1, frac1])
        theta = opt_p.step(theta, -grad_loss + con.grad_factor(dist) * grad_dist)
        con.update(dist)
        if t >= keep_from:
            th_sum += theta
            th_count += 1

    b0, b1, g0, g1 = th_sum / th_count
    mech = GaussianNoisePrivatizer(float(b0), float(b1), abs(float(g0)), abs(float(g1)))
    dist = mech.distortion(model)
    repaired = dist > d
    if repaired:
        # Distortion is quadratic in the parameters: scale them all onto the budget.
        f = math.sqrt(d / dist)
        mech = GaussianNoisePrivatizer(mech.beta0 * f, mech.beta1 * f, mech.gamma0 * f,
                                 mech.gamma1 * f)
        dist = mech.distortion(model)
    return LearnedGaussianPrivatizer(mech, gaussian_mechanism_accuracy(model, mech), dist, d,
                                     constraint, repaired, xent, seed)
