"""The Attribute-Private Gaussian Mechanism (APGM) for dataset attribute privacy.

[ZOC22, Sec. 4] (Zhang, Ohrimenko and Cummings, "Attribute Privacy: Framework and Mechanisms"):
[ZOC22, Alg. 1] (APGM) with Theorems 1 and 2, the Section 4.3 instantiation for
multivariate Gaussian records, and [ZOC22, Alg. 2] (APGM for non-Gaussian data) with Theorem 3.

Public functions
----------------
* :func:`gaussian_sigma` -- the noise standard deviation for an L2 sensitivity under the
  classical [DR14] or the analytic [BW18] calibration (from
  :mod:`quiltpriv.mechanisms.calibration`, re-exported here).
* :func:`apgm` -- [ZOC22, Alg. 1] from user-supplied E[F | secret, theta] and Var(F | g_i, theta).
* :class:`GaussianRecordModel`, :func:`apgm_gaussian_columns` -- Section 4.3: records
  N(mu, V), F a (vector or weighted) column mean, g_i column means; closed-form sigma^2.
* :func:`smoothed_max_divergence`, :func:`apgm_non_gaussian` -- [ZOC22, Alg. 2, Thm. 3] for
  a discrete F (e.g. a binomial count) and Gaussian approximations of its conditional laws.

Deviations from the paper (each errs towards more noise or states a weaker guarantee)
--------------------------------------------------------------------------------------
* Classical calibration c = sqrt(2 ln(1.25/delta)) is only a theorem for eps < 1 (Dwork and
  Roth, Theorem A.1); for eps >= 1 it is used only once the exact Gaussian privacy profile
  [BW18, Thm. 8] confirms it, and refused otherwise (:mod:`quiltpriv.mechanisms.calibration`).
* Theorem 3: the paper's delta ``e^lambda delta + eta`` does not follow from its premises; chaining
  the three approximate-max-divergence bounds (true law a -> Gaussian a -> Gaussian b -> true
  law b) gives ``e^lambda delta + (1 + e^(eps + lambda)) eta``, which is what we report.
* Theorem 3 with a *discrete* F: the eta-approximate max-divergence between a finitely
  supported law and a Gaussian density is infinite (take T = the support). We therefore measure
  lambda_eta between the *released* laws, f * N(0, sigma^2) against N(mean, var + sigma^2).
  Adding the same independent noise is post-processing, and the proof of Theorem 3 only uses
  ratios of output probabilities, so this lambda is the one the guarantee needs. It is finite
  only when sigma > 0 (see ``min_sigma``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from quiltpriv.errors import ModelError, ParameterError, QueryError
from quiltpriv.mechanisms.calibration import (
    SAFETY_RTOL,
    add_up,
    check_calibration,
    exp_up,
    gaussian_sigma,
    mul_up,
    round_down,
    round_up,
    sqrt_up,
)
from quiltpriv.utils.serialize import JSONResult

if TYPE_CHECKING:
    import os
    import random

    import pandas as pd

    from quiltpriv.mechanisms.noise import Seed
    from quiltpriv.mechanisms.protocol import Calibration, Guarantee, ReleaseRecord
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.validation import (
    check_array,
    check_covariance,
    check_delta,
    check_epsilon,
    check_positive,
    check_probability_vector,
    check_records,
    check_scalar,
    check_vector,
)

__all__ = [
    "APGMNonGaussianResult",
    "APGMResult",
    "ConditionalMoments",
    "GaussianRecordModel",
    "apgm",
    "apgm_gaussian_columns",
    "apgm_non_gaussian",
    "gaussian_sigma",
    "query_weights",
    "smoothed_max_divergence",
]

# Outward rounding of floating-point variances (scaled down by this relative amount) so that a
# rounding error never reduces the noise; sensitivities are covered by the calibration's rule.
_SAFETY = SAFETY_RTOL


# ---------------------------------------------------------------------------------------------
# [ZOC22, Alg. 1]


@dataclass(frozen=True)
class ConditionalMoments(JSONResult):
    """Moments of F(X) for one protected attribute i under one distribution theta.

    Attributes
    ----------
    means
        Secret -> E[F(X) | s, theta] (a float, or a length-k vector for vector-valued F).
    variance
        Var(F(X) | g_i(X_i), theta): a float, or the k x k conditional covariance. Theorem 1
        needs it to be the same for every value of g_i (and F | g_i to be Gaussian).
    """

    means: Mapping[Hashable, ArrayLike]
    variance: ArrayLike


@dataclass(frozen=True)
class APGMResult(JSONResult):
    """Noise plan of the Attribute-Private Gaussian Mechanism ([ZOC22, Alg. 1]).

    Attributes
    ----------
    sigma2, sigma
        Variance and standard deviation of the added noise N(0, sigma2 I); 0 when the data's own
        conditional variance already hides every secret (F(X) is then released exactly).
    epsilon, delta
        The (epsilon, delta)-dataset attribute privacy guarantee (Theorem 1), valid under the
        Gaussian assumption stated in ``notes``.
    sensitivity
        Delta_i F per protected attribute (max over theta and secret pairs, L2 norm).
    min_variance
        min over theta of Var(F | g_i, theta) (smallest eigenvalue for a vector F).
    required_variance
        Total variance the Gaussian mechanism needs per attribute, (c Delta_i / eps)^2.
    binding_attribute
        The attribute that sets sigma2 (None if no noise is needed).
    dimension
        k, the dimension of F.
    calibration
        "classical" (the paper's c) or "analytic".
    notes
        Assumptions and remarks.
    """

    sigma2: float
    sigma: float
    epsilon: float
    delta: float
    sensitivity: Mapping[Hashable, float]
    min_variance: Mapping[Hashable, float]
    required_variance: Mapping[Hashable, float]
    binding_attribute: Hashable | None
    dimension: int
    calibration: str
    notes: tuple[str, ...] = field(default=())

    def accuracy(self, beta: float) -> float:
        """Theorem 2: with probability 1 - beta the added noise has norm at most alpha.

        alpha = sigma * Phi^{-1}(1 - beta/2) for a scalar F; for a k-vector the L2 norm of the
        noise is sigma * chi_k, so alpha = sigma * sqrt(chi2_k^{-1}(1 - beta)).
        """
        b = check_positive(beta, "beta")
        if b >= 1:
            raise ParameterError(f"beta must be in (0, 1), got {b}")
        if self.sigma == 0:
            return 0.0
        if self.dimension == 1:
            return float(self.sigma * stats.norm.ppf(1 - b / 2))
        return float(self.sigma * math.sqrt(stats.chi2.ppf(1 - b, self.dimension)))

    def _terms(self) -> tuple[Guarantee, Calibration, float]:
        """The guarantee, calibration and sensitivity of a release of this plan."""
        from quiltpriv.mechanisms.protocol import Calibration, Guarantee
        from quiltpriv.utils.format import fmt_number

        sens = max(self.sensitivity.values(), default=0.0)
        cal = Calibration("gaussian", self.sigma, sens,
                          f"[ZOC22, Alg. 1]: sigma^2 = max(0, max_i (c Delta_i / eps)^2 - min "
                          f"Var(F | g_i)) ({self.calibration} c), sigma = "
                          f"{fmt_number(self.sigma, rounding='up')}",
                          {"calibration": self.calibration})
        g = Guarantee("dataset attribute privacy", self.epsilon, self.delta, tuple(self.notes),
                      tuple(str(k) for k in self.sensitivity))
        return g, cal, sens

    def release(self, value: ArrayLike, *, seed: Seed = None,
                ledger: str | os.PathLike[str] | None = None, budget: float | None = None,
                allow_unproved: bool = False) -> ReleaseRecord:
        """Release F(X) + N(0, sigma2), or F(X) itself when sigma2 = 0, as a
        :class:`~quiltpriv.mechanisms.protocol.ReleaseRecord` of mechanism ``"APGM"``.

        The one release flow (:func:`quiltpriv.mechanisms.protocol.release_value`; ``ledger``
        and ``budget`` as there). Noise is exact discrete Gaussian noise from
        :mod:`quiltpriv.mechanisms.noise` (secure by default; a seed is for reproducible
        experiments only). A scalar gives a record whose ``value`` is the noisy number
        (:func:`~quiltpriv.mechanisms.noise.gaussian_release`; it returned that
        ``NoisyValue`` before), a vector a :class:`~quiltpriv.mechanisms.protocol.VectorRelease`
        (:func:`~quiltpriv.mechanisms.noise.gaussian_release_vector`; it returned a tuple of
        ``NoisyValue``, whose attributes each coordinate keeps, deprecated): every coordinate is
        snapped to one grid ``g`` and sigma is inflated for the vector's snapped L2 shift
        ``Delta + sqrt(d) g``, so the zCDP rho and the (eps, delta) of the plan hold for the
        whole vector (paying one grid step per coordinate instead would let the shift reach
        ``Delta + sqrt(d) g`` uncharged: rho 1.000059 times the promised one at d = 1024).
        """
        from quiltpriv.mechanisms import noise
        from quiltpriv.mechanisms.protocol import release_value
        from quiltpriv.mechanisms.release_flow import Drawn, drawn_values

        g, cal, sens = self._terms()
        arr = np.asarray(value, dtype=float)
        if arr.ndim == 0:
            if self.dimension != 1:
                raise QueryError(f"expected a vector of length {self.dimension}, got a scalar")
            return release_value(float(arr), mechanism="APGM", guarantee=g, calibration=cal,
                                 details=self.to_dict(), seed=seed, ledger=ledger,
                                 budget=budget, allow_unproved=allow_unproved)
        if arr.shape != (self.dimension,):
            raise QueryError(f"expected a value of shape ({self.dimension},), got {arr.shape}")

        def draw(rng: random.Random) -> Drawn:
            return drawn_values(noise.gaussian_release_vector(arr, self.sigma, sens, seed=rng))

        return release_value(arr, mechanism="APGM", guarantee=g, calibration=cal,
                             details=self.to_dict(), seed=seed, ledger=ledger, budget=budget,
                             allow_unproved=allow_unproved, draw=draw)


def _min_eigen_psd(cov: ArrayLike, k: int, name: str) -> float:
    """Smallest eigenvalue of a covariance (scalar or k x k), after checking it is PSD."""
    m = check_covariance(cov, name, k, error=ModelError)
    lam = float(np.linalg.eigvalsh((m + m.T) / 2).min())
    return max(0.0, lam)


def _plan(
    per_attr: Mapping[Hashable, tuple[float, float]],
    eps: float,
    dl: float,
    dimension: int,
    calibration: str,
    notes: list[str],
) -> APGMResult:
    """[ZOC22, Alg. 1]'s loop from (Delta_i, min_theta Var_i) per attribute."""
    sens: dict[Hashable, float] = {}
    mvar: dict[Hashable, float] = {}
    req: dict[Hashable, float] = {}
    sigma2, binding = 0.0, None
    for attr, (d_i, v_i) in per_attr.items():
        # the calibration's safety rule already covers the rounding of d_i; the variance is
        # subtracted from the required one, so it is rounded down here
        v_i = round_down(Fraction(v_i) * Fraction(1 - _SAFETY))
        s_tot = gaussian_sigma(d_i, eps, dl, calibration=calibration)
        need = mul_up(s_tot, s_tot)  # variances rounded up, the one subtracted rounded down
        sens[attr], mvar[attr], req[attr] = d_i, v_i, need
        gap = round_up(Fraction(need) - Fraction(v_i))
        if gap > sigma2:
            sigma2, binding = gap, attr
    if sigma2 == 0:
        notes.append("sigma^2 = 0: the conditional variance of F already hides every secret; "
                     "F(X) is released exactly")
    return APGMResult(
        sigma2=sigma2, sigma=sqrt_up(sigma2), epsilon=eps, delta=dl, sensitivity=sens,
        min_variance=mvar, required_variance=req, binding_attribute=binding,
        dimension=dimension, calibration=calibration, notes=tuple(notes))


def apgm(
    moments: Mapping[Hashable, Sequence[ConditionalMoments]],
    epsilon: float,
    delta: float,
    *,
    pairs: Mapping[Hashable, Sequence[tuple[Hashable, Hashable]]] | None = None,
    calibration: str = "classical",
) -> APGMResult:
    """Attribute-Private Gaussian Mechanism, [ZOC22, Alg. 1] (Theorems 1 and 2).

    For each protected attribute i: Delta_i = max over theta and secret pairs of
    ||E[F | s_a, theta] - E[F | s_b, theta]||_2, and
    sigma^2 = max_i [ (c Delta_i / eps)^2 - min_theta Var(F | g_i, theta) ], floored at 0.
    For a vector F the variance is the smallest eigenvalue of the conditional covariance: the
    noise then covers the mean shift in every direction (a sound form of the paper's remark).

    Guarantee: (epsilon, delta)-dataset attribute privacy (Definition 3) when, for every theta in
    Theta (a finite set, one entry per theta in each sequence) and every protected i, F(X) given
    g_i(X_i) is Gaussian with a covariance that does not depend on the value of g_i. That is an
    assumption about the model which this function cannot check. A secret that is a *set* of
    values makes F | s a mixture of such Gaussians; the guarantee still holds if the means of
    every value in the set are covered (the hockey-stick divergence is jointly convex), so give
    the extreme means.

    Parameters
    ----------
    moments
        Protected attribute -> one :class:`ConditionalMoments` per theta.
    epsilon, delta
        Privacy parameters; delta in (0, 1).
    pairs
        Optional attribute -> secret pairs to protect; default every pair of distinct secrets.
    calibration
        "classical" (the paper's c; for epsilon >= 1 only when the exact profile confirms
        it) or "analytic" (Balle-Wang, any epsilon).

    Returns
    -------
    APGMResult
        sigma^2, the guarantee, the per-attribute audit and Theorem 2's ``accuracy(beta)``.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    check_calibration(calibration)
    if not moments:
        raise ParameterError("no protected attribute given")
    dim: int | None = None
    per_attr: dict[Hashable, tuple[float, float]] = {}
    for attr, thetas in moments.items():
        if isinstance(thetas, ConditionalMoments):
            thetas = [thetas]
        if len(thetas) == 0:
            raise ParameterError(f"attribute {attr!r}: Theta is empty")
        d_max, v_min = 0.0, math.inf
        for t, cm in enumerate(thetas):
            if not isinstance(cm, ConditionalMoments):
                raise ParameterError(f"attribute {attr!r}, theta {t}: expected ConditionalMoments")
            if len(cm.means) == 0:
                raise ParameterError(f"attribute {attr!r}, theta {t}: the secret set is empty")
            means = {s: check_vector(m, f"E[F | {s!r}] (attribute {attr!r}, theta {t})")
                     for s, m in cm.means.items()}
            k = {v.size for v in means.values()}
            if len(k) != 1 or (dim is not None and k != {dim}):
                raise ParameterError("all conditional means must have the same dimension")
            dim = k.pop()
            v_min = min(v_min, _min_eigen_psd(
                cm.variance, dim, f"Var(F | g) for attribute {attr!r}, theta {t}"))
            attr_pairs = (pairs or {}).get(attr)
            if attr_pairs is None:
                attr_pairs = list(combinations(means, 2))
            for a, b in attr_pairs:
                if a not in means or b not in means:
                    raise ParameterError(
                        f"attribute {attr!r}, theta {t}: pair ({a!r}, {b!r}) names a secret "
                        "without a conditional mean")
                d_max = max(d_max, float(np.linalg.norm(means[a] - means[b])))
        per_attr[attr] = (d_max, v_min)
    notes = ["assumes F(X) | g_i(X_i) is Gaussian with a covariance independent of g_i "
             "(Theorem 1)"]
    if dim and dim > 1:
        notes.append("vector F: Delta in the L2 norm, variance = smallest eigenvalue of the "
                     "conditional covariance")
    return _plan(per_attr, eps, dl, dim or 1, calibration, notes)


# ---------------------------------------------------------------------------------------------
# Section 4.3: multivariate Gaussian records, column means


@dataclass(frozen=True)
class GaussianRecordModel(JSONResult):
    """Records i.i.d. N(mean, covariance) over named columns (one theta of Section 4.3)."""

    mean: np.ndarray
    covariance: np.ndarray
    columns: tuple[str, ...]

    def __post_init__(self) -> None:
        mean = check_array(self.mean, "mean", error=ModelError)
        cov = check_array(self.covariance, "covariance", error=ModelError)
        if isinstance(self.columns, str) or not isinstance(self.columns, Sequence):
            raise ModelError(f"columns must be a sequence of column names, got "
                             f"{type(self.columns).__name__}")
        m = len(self.columns)
        if m == 0 or len(set(self.columns)) != m:
            raise ModelError("columns must be non-empty and distinct")
        if mean.shape != (m,):
            raise ModelError(f"mean must have one entry per column ({m}), got shape {mean.shape}")
        if cov.shape != (m, m):
            raise ModelError(f"covariance must be {m}x{m}, got shape {cov.shape}")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
            raise ModelError("mean and covariance must be finite")
        cov = check_covariance(cov, "covariance", m, error=ModelError)
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "covariance", cov)
        object.__setattr__(self, "columns", tuple(str(c) for c in self.columns))

    @classmethod
    def from_dataframe(cls, df: pd.DataFrame,
                       columns: Sequence[str] | None = None) -> GaussianRecordModel:
        """Estimate mean and (unbiased) covariance from a pandas DataFrame.

        The estimate is itself computed from the data and is not private; the guarantee holds
        for the fitted distribution as a member of Theta. Put several fits (or a fit and its
        perturbations) in Theta to cover estimation error.
        """
        cols = list(df.columns if columns is None else columns)
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise QueryError(f"columns not in the data: {missing}")
        try:
            x = df[cols].to_numpy(dtype=float)
        except (TypeError, ValueError):
            raise QueryError("all chosen columns must be numeric") from None
        if x.shape[0] < 2:
            raise QueryError("need at least two records to estimate a covariance")
        if not np.all(np.isfinite(x)):
            raise QueryError("the data contain NaN or infinite values")
        return cls(x.mean(axis=0), np.atleast_2d(np.cov(x, rowvar=False)), tuple(cols))


def query_weights(query: str | Sequence[str] | Mapping[str, float],
                  columns: tuple[str, ...]) -> np.ndarray:
    """F = W @ column_means: a column name, a list of names (vector F) or {name: weight}."""
    if not isinstance(query, str | Sequence | Mapping):
        raise QueryError(f"query must be a column name, a list of names or {{name: weight}}, "
                         f"got {type(query).__name__}")
    if (isinstance(columns, str) or not isinstance(columns, Sequence)
            or not all(isinstance(c, str) for c in columns)):
        raise ParameterError(f"columns must be a sequence of column names, got "
                             f"{type(columns).__name__}")
    idx = {c: k for k, c in enumerate(columns)}

    def col(name: str) -> int:
        if not isinstance(name, str) or name not in idx:
            raise QueryError(f"query column {name!r} is not in the model {list(columns)}")
        return idx[name]

    if isinstance(query, str):
        w = np.zeros((1, len(columns)))
        w[0, col(query)] = 1.0
        return w
    if isinstance(query, Mapping):
        if not query:
            raise QueryError("the query weights are empty")
        w = np.zeros((1, len(columns)))
        for name, weight in query.items():
            w[0, col(name)] += check_scalar(weight, f"weight of {name!r}")
        return w
    names = list(query)
    if not names:
        raise QueryError("the query names no column")
    w = np.zeros((len(names), len(columns)))
    for r, name in enumerate(names):
        w[r, col(name)] = 1.0
    return w


@renamed_keywords(n_records="records")
def apgm_gaussian_columns(
    models: GaussianRecordModel | Sequence[GaussianRecordModel],
    records: int,
    query: str | Sequence[str] | Mapping[str, float],
    secrets: Mapping[str, Sequence[float]],
    epsilon: float,
    delta: float,
    *,
    calibration: str = "classical",
) -> APGMResult:
    """APGM for multivariate Gaussian records with column-mean queries (Section 4.3).

    Records are i.i.d. N(mu, V) under each theta in ``models``; F(X) is the mean of a column
    (or a vector of column means, or a weighted sum of column means, F = W xbar) and
    g_i(X_i) the mean of protected column i, whose secret values form the set U_i. Then
    F | g_i = a is N(W mu + W V e_i (a - mu_i) / V_ii, (W V W^T - W V e_i e_i^T V W^T / V_ii) / n),
    so in the scalar column case

        Delta_i F = |V_ij| / V_ii * d(U_i),  Var = (V_jj - V_ij^2 / V_ii) / n,
        sigma^2 = max(0, max_i [(c max_theta |V_ij| d(U_i) / (V_ii eps))^2 - min_theta Var])

    The absolute value |V_ij| (the paper writes V_ij) matters: a negative correlation leaks as
    much as a positive one. An uncorrelated column needs no noise.

    Guarantee: (epsilon, delta)-dataset attribute privacy (Theorem 1) for every theta in the
    finite set ``models``; exact here since F | g_i is Gaussian with constant variance.

    Parameters
    ----------
    models
        One model (|Theta| = 1) or several (Theta = that finite set); same columns in each.
    records
        n, the number of records.
    query
        Column name, list of names, or {name: weight}.
    secrets
        Protected column -> its secret values U_i (only the diameter max - min matters).
    epsilon, delta, calibration
        As in :func:`apgm`.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    check_calibration(calibration)
    n = check_records(records, "records")
    thetas = [models] if isinstance(models, GaussianRecordModel) else list(models)
    if not thetas:
        raise ParameterError("Theta is empty: give at least one GaussianRecordModel")
    cols = thetas[0].columns
    if any(t.columns != cols for t in thetas):
        raise ModelError("every model in Theta must have the same columns in the same order")
    if not secrets:
        raise ParameterError("no protected column given")
    w = query_weights(query, cols)
    per_attr: dict[Hashable, tuple[float, float]] = {}
    for name, values in secrets.items():
        if name not in cols:
            raise QueryError(f"protected column {name!r} is not in the model {list(cols)}")
        if np.size(values) == 0:
            raise ParameterError(f"the secret set of {name!r} is empty")
        vals = check_vector(values, f"secret values of {name!r}")
        diam = float(vals.max() - vals.min())
        i = cols.index(name)
        d_max, v_min = 0.0, math.inf
        for t, th in enumerate(thetas):
            v = th.covariance
            if v[i, i] <= 0:
                raise ModelError(f"theta {t}: protected column {name!r} has zero variance, so "
                                 "all but one of its secrets have probability zero")
            cross = w @ v[:, i]  # Cov(F record, column i)
            d_max = max(d_max, float(np.linalg.norm(cross)) / v[i, i] * diam)
            cond = (w @ v @ w.T - np.outer(cross, cross) / v[i, i]) / n
            v_min = min(v_min, max(0.0, float(np.linalg.eigvalsh((cond + cond.T) / 2).min())))
        per_attr[name] = (d_max, v_min)
    notes = ["Section 4.3: records i.i.d. Gaussian, F and g_i column means, so F | g_i is "
             "Gaussian with constant variance (Theorem 1 applies exactly)"]
    if w.shape[0] > 1:
        notes.append("vector F: Delta in the L2 norm, variance = smallest eigenvalue of the "
                     "conditional covariance")
    return _plan(per_attr, eps, dl, w.shape[0], calibration, notes)


# ---------------------------------------------------------------------------------------------
# [ZOC22, Alg. 2]: non-Gaussian data


#: Per-cell density bounds: upper, lower, mass per cell, and the mass outside the cells.
_CellBounds = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]


def _hockey_stick_bound_tables(xs: np.ndarray, ps: np.ndarray, s: float, mu: float, tau: float,
                               cells: int) -> tuple[float, _CellBounds, _CellBounds]:
    """Per-cell bounds of the densities p = sum_k ps_k N(xs_k, s^2) and q = N(mu, tau^2)."""
    half = 14.0 * tau  # tails beyond [lo, hi] are charged in full (their mass is ~1e-44)
    lo = min(xs.min(), mu) - half
    hi = max(xs.max(), mu) + half
    grid = np.linspace(lo, hi, cells + 1)
    a, b = grid[:-1], grid[1:]
    p_up = np.zeros(cells)
    p_lo = np.zeros(cells)
    p_mass = np.zeros(cells)
    for x, w in zip(xs, ps, strict=True):
        da = stats.norm.pdf(a, x, s)
        db = stats.norm.pdf(b, x, s)
        inside = (a <= x) & (x <= b)
        p_up += w * np.where(inside, stats.norm.pdf(0.0, 0.0, s), np.maximum(da, db))
        p_lo += w * np.minimum(da, db)
        cdf = special.ndtr((grid - x) / s)
        p_mass += w * np.diff(cdf)
    qa = stats.norm.pdf(a, mu, tau)
    qb = stats.norm.pdf(b, mu, tau)
    q_inside = (a <= mu) & (mu <= b)
    q_up = np.where(q_inside, stats.norm.pdf(0.0, 0.0, tau), np.maximum(qa, qb))
    q_lo = np.minimum(qa, qb)
    q_mass = np.diff(special.ndtr((grid - mu) / tau))
    p_out = float(np.sum(ps * (special.ndtr((lo - xs) / s) + special.ndtr((xs - hi) / s))))
    q_out = float(special.ndtr((lo - mu) / tau) + special.ndtr((mu - hi) / tau))
    width = (hi - lo) / cells
    return width, (p_up, p_lo, p_mass, p_out), (q_up, q_lo, q_mass, q_out)


def _hockey_upper(width: float, num: _CellBounds, den: _CellBounds, c: float) -> float:
    """Upper bound on int (num - c den)_+ from per-cell density bounds (see module notes)."""
    n_up, n_lo, n_mass, n_out = num
    d_up, d_lo, d_mass, _ = den
    sure_in = n_lo - c * d_up >= 0  # num > c den on the whole cell: exact cell masses
    maybe = ~sure_in & (n_up - c * d_lo > 0)  # sign unknown: charge the sup bound
    total = np.sum(np.where(sure_in, n_mass - c * d_mass, 0.0))
    total += np.sum(np.where(maybe, width * (n_up - c * d_lo), 0.0))
    return float(total + n_out)


def smoothed_max_divergence(
    support: Sequence[float],
    probs: Sequence[float],
    approx_mean: float,
    approx_variance: float,
    noise_sigma: float,
    eta: float,
    *,
    cells: int = 40000,
) -> float:
    """Upper bound on the symmetric eta-approximate max-divergence of the released laws.

    Computes lambda >= 0 such that both D^eta(P || Q) <= lambda and D^eta(Q || P) <= lambda
    (Definition 6 and Eq. (3) of the paper), where P = f * N(0, s^2) is the released law of a
    discrete F with law f (``support``, ``probs``) and Q = N(approx_mean, approx_variance + s^2)
    the released law under its Gaussian approximation, s = ``noise_sigma`` > 0.

    D^eta(P||Q) <= lambda  iff  the hockey-stick divergence int (p - e^lambda q)_+ <= eta. We
    bound that integral from above on a grid: cells where p > e^lambda q everywhere contribute
    their exact (normal-CDF) mass difference, cells where the sign is unknown contribute
    width * (sup p - e^lambda inf q), and the mass outside the grid is charged in full. lambda is
    then found by bisection, returned from the safe side; the result is never below the true
    symmetric divergence (up to floating-point evaluation of normal densities). Returns
    ``math.inf`` if no lambda <= 60 satisfies the bound.
    """
    xs = check_vector(support, "support")
    ps = check_probability_vector(probs, "probs")
    if xs.shape != ps.shape:
        raise ParameterError("support and probs must be non-empty 1-d arrays of equal length")
    mu = float(check_scalar(approx_mean, "approx_mean"))
    v = check_positive(approx_variance, "approx_variance")
    s = check_positive(noise_sigma, "noise_sigma")
    e = check_positive(eta, "eta")
    if e >= 1:
        raise ParameterError(f"eta must be in (0, 1), got {e}")
    keep = ps > 0
    xs, ps = xs[keep], ps[keep] / ps[keep].sum()
    tau = math.sqrt(v + s * s)
    width, p, q = _hockey_stick_bound_tables(xs, ps, s, mu, tau, int(cells))

    def worst(lam: float) -> float:
        c = math.exp(lam)
        return max(_hockey_upper(width, p, q, c), _hockey_upper(width, q, p, c))

    if worst(0.0) <= e:
        return 0.0
    lo, hi = 0.0, 1.0
    while worst(hi) > e:
        lo, hi = hi, 2 * hi
        if hi > 60:
            return math.inf
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if worst(mid) > e:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9:
            break
    return hi


@dataclass(frozen=True)
class APGMNonGaussianResult(JSONResult):
    """[ZOC22, Alg. 2] (APGMnG) with the privacy loss of the Gaussian approximation accounted.

    Attributes
    ----------
    plan
        The APGM plan computed from the Gaussian approximations (sigma, Delta_i, variances).
    sigma
        Standard deviation of the noise actually added (max of the plan's and ``min_sigma``).
    lambda_eta
        Upper bound on the symmetric eta-approximate max-divergence between each released true
        law and its Gaussian counterpart, max over attributes, theta and secrets.
    eta
        The eta used.
    epsilon, delta
        The resulting guarantee: (eps0 + 2 lambda, e^lambda delta0 + (1 + e^(eps0+lambda)) eta)
        where (eps0, delta0) are the Algorithm-1 parameters. The paper states
        e^lambda delta0 + eta; see the module docstring for why that is not enough.
    approximations
        Per attribute and theta: secret -> (mean, variance) of the Gaussian used.
    notes
    """

    plan: APGMResult
    sigma: float
    lambda_eta: float
    eta: float
    epsilon: float
    delta: float
    approximations: Mapping[Hashable, tuple[Mapping[Hashable, tuple[float, float]], ...]]
    notes: tuple[str, ...]

    def release(self, value: float, *, seed: Seed = None,
                ledger: str | os.PathLike[str] | None = None, budget: float | None = None,
                allow_unproved: bool = False) -> ReleaseRecord:
        """F(X) + N(0, sigma^2) with exact discrete Gaussian noise from
        :mod:`quiltpriv.mechanisms.noise`, as a
        :class:`~quiltpriv.mechanisms.protocol.ReleaseRecord` of mechanism
        ``"APGM (non-Gaussian)"`` carrying this result's (epsilon, delta) (the one release
        flow, :func:`quiltpriv.mechanisms.protocol.release_value`).

        Raises
        ------
        ParameterError
            ``lambda_eta`` is infinite: the release would guarantee nothing (give
            ``min_sigma`` > 0); nothing is drawn.
        """
        from quiltpriv.mechanisms.protocol import Calibration, Guarantee, release_value
        from quiltpriv.utils.format import fmt_number

        if not math.isfinite(self.epsilon) or self.delta >= 1:
            raise ParameterError("APGMnG: lambda_eta is infinite, so the release would "
                                 "guarantee nothing; give min_sigma > 0 (nothing released)")
        sens = max(self.plan.sensitivity.values(), default=0.0)
        cal = Calibration("gaussian", self.sigma, sens,
                          f"[ZOC22, Alg. 2]: sigma of the Algorithm-1 plan on the Gaussian "
                          f"approximations (at least min_sigma) = "
                          f"{fmt_number(self.sigma, rounding='up')}, lambda_eta = "
                          f"{fmt_number(self.lambda_eta, rounding='up')}",
                          {"calibration": self.plan.calibration})
        g = Guarantee("dataset attribute privacy", self.epsilon, self.delta, tuple(self.notes),
                      tuple(str(k) for k in self.plan.sensitivity))
        return release_value(float(value), mechanism="APGM (non-Gaussian)", guarantee=g,
                             calibration=cal, details=self.to_dict(), seed=seed, ledger=ledger,
                             budget=budget, allow_unproved=allow_unproved)


def apgm_non_gaussian(
    laws: Mapping[Hashable, Sequence[Mapping[Hashable, tuple[Sequence[float], Sequence[float]]]]],
    epsilon: float,
    delta: float,
    eta: float,
    *,
    approximations: Mapping[Hashable, Sequence[Mapping[Hashable, tuple[float, float]]]]
    | None = None,
    min_sigma: float = 0.0,
    pairs: Mapping[Hashable, Sequence[tuple[Hashable, Hashable]]] | None = None,
    calibration: str = "classical",
    cells: int = 40000,
) -> APGMNonGaussianResult:
    """Attribute-Private Gaussian Mechanism for non-Gaussian data ([ZOC22, Alg. 2, Thm. 3]).

    For a scalar F with finitely supported conditional laws f_{s,theta} (``laws``: attribute ->
    one mapping per theta of secret -> (support, probabilities)), choose Gaussian
    approximations f~ (``approximations``: same shape, secret -> (mean, variance), the variance
    constant over the secrets of one attribute and theta, as [ZOC22, Alg. 2] requires; by default
    the true means and the average of the true variances), run [ZOC22, Alg. 1] on them, then bound
    lambda_eta between each released true law and its Gaussian counterpart
    (:func:`smoothed_max_divergence`).

    Guarantee: (eps + 2 lambda, e^lambda delta + (1 + e^(eps + lambda)) eta)-dataset attribute
    privacy for the finite Theta given. This chains three (eps, delta) statements exactly
    (true a ~ Gaussian a ~ Gaussian b ~ true b); it corrects the paper's delta, which omits
    the e^(eps+lambda) eta term. With no noise (sigma = 0) the output is the discrete F itself,
    whose divergence from any Gaussian is infinite: set ``min_sigma`` > 0 to force some noise.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    e = check_positive(eta, "eta")
    if e >= 1:
        raise ParameterError(f"eta must be in (0, 1), got {e}")
    ms = check_positive(min_sigma, "min_sigma", allow_zero=True)
    if not laws:
        raise ParameterError("no protected attribute given")
    moments: dict[Hashable, list[ConditionalMoments]] = {}
    approx_used: dict[Hashable, tuple[Mapping[Hashable, tuple[float, float]], ...]] = {}
    for attr, thetas in laws.items():
        if len(thetas) == 0:
            raise ParameterError(f"attribute {attr!r}: Theta is empty")
        per_theta = []
        for t, secret_laws in enumerate(thetas):
            if not secret_laws:
                raise ParameterError(f"attribute {attr!r}, theta {t}: the secret set is empty")
            true_mv = {}
            for sec, (xs, ps) in secret_laws.items():
                xa = np.asarray(xs, dtype=float)
                pa = np.asarray(ps, dtype=float)
                if xa.shape != pa.shape or xa.ndim != 1 or xa.size == 0:
                    raise ParameterError(f"law of secret {sec!r}: support and probabilities "
                                         "must be non-empty and of equal length")
                if np.any(pa < 0) or abs(pa.sum() - 1) > 1e-9:
                    raise ParameterError(f"law of secret {sec!r} is not a probability vector")
                m = float(pa @ xa)
                true_mv[sec] = (m, float(pa @ (xa - m) ** 2))
            if approximations is not None:
                try:
                    chosen = dict(approximations[attr][t])
                except (KeyError, IndexError):
                    raise ParameterError(
                        f"no Gaussian approximation for attribute {attr!r}, theta {t}") from None
                if set(chosen) != set(true_mv):
                    raise ParameterError(f"attribute {attr!r}, theta {t}: approximations must "
                                         "cover exactly the secrets of the laws")
                variances = {float(vv) for _, vv in chosen.values()}
                if len(variances) != 1:
                    raise ParameterError(
                        f"attribute {attr!r}, theta {t}: Algorithm 2 needs one variance for all "
                        f"secrets, got {sorted(variances)}")
            else:
                common = float(np.mean([vv for _, vv in true_mv.values()]))
                if common <= 0:
                    raise ParameterError(f"attribute {attr!r}, theta {t}: every law is a point "
                                         "mass; give approximations with a positive variance")
                chosen = {sec: (mm, common) for sec, (mm, _) in true_mv.items()}
            var = next(iter(chosen.values()))[1]
            check_positive(var, "approximation variance")
            per_theta.append(chosen)
            moments.setdefault(attr, []).append(
                ConditionalMoments({sec: mm for sec, (mm, _) in chosen.items()}, var))
        approx_used[attr] = tuple(per_theta)
    plan = apgm(moments, eps, dl, pairs=pairs, calibration=calibration)
    sigma = max(plan.sigma, ms)
    notes = ["Theorem 3 (corrected delta); lambda_eta measured between released laws "
             "f * N(0, sigma^2) and N(mean, var + sigma^2)"]
    if sigma == 0:
        lam = math.inf
        notes.append("sigma = 0: F is released exactly and its discrete law is not within any "
                     "finite max-divergence of a Gaussian; no guarantee (set min_sigma > 0)")
    else:
        lam = 0.0
        for attr, thetas in laws.items():
            for t, secret_laws in enumerate(thetas):
                for sec, (xs, ps) in secret_laws.items():
                    mu, var = approx_used[attr][t][sec]
                    lam = max(lam, smoothed_max_divergence(xs, ps, mu, var, sigma, e,
                                                           cells=cells))
    if math.isinf(lam):
        eps_out, delta_out = math.inf, 1.0
    else:
        eps_out = add_up(eps, lam, lam)  # budgets rounded up
        delta_out = min(1.0, add_up(mul_up(exp_up(lam), dl),
                                    mul_up(add_up(1, exp_up(add_up(eps, lam))), e)))
    return APGMNonGaussianResult(plan=plan, sigma=sigma, lambda_eta=lam, eta=e, epsilon=eps_out,
                                 delta=delta_out, approximations=approx_used, notes=tuple(notes))
