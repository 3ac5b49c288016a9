"""Gaussian models of f_theta estimated from data by resampling (Chen and Ohrimenko, App. C.1).

[CO23, Sec. 5] (the Adult experiment). A theta is "the share of records with the sensitive property
is p"; under it a dataset is a subset of n records of which round(p n) have the property, drawn
without replacement from the records that have it and the rest from those that do not. F is a
linear query: F(subset) = weights * (sum over the subset of per-record features). For each p,
``n_samples`` subsets give samples of F, whose mean and covariance are the Gaussian model of
f_theta used by the mechanisms of :mod:`quiltpriv.distribution.distribution_privacy`.

Caveat (reported by every result): this is a *model*. The sample moments are estimates, f_theta
is not exactly Gaussian, and the covariances at the two proportions differ. The mechanisms'
guarantees hold for the model; Theorems 4.6/4.7 bound the loss from the approximation but the
divergence between the model and the true f_theta is not computed here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from quiltpriv.distribution import distribution_privacy as dp
from quiltpriv.errors import DataError, ParameterError, QueryError
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_records

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ADULT_QUERY_NAMES",
    "ADULT_QUERY_SENSITIVITIES",
    "PropertyModel",
    "adult_features",
    "estimate_property_model",
]

#: The five statistics of the Adult experiment ([CO23, Sec. 5]), for a subset of n records.
ADULT_QUERY_NAMES = ("average age", "average years of education", "number never married",
                     "number female", "average hours per week")

#: Per-record sensitivities for n = 100 ([CO23, Sec. 5]): range / n for averages, 1 for counts.
ADULT_QUERY_SENSITIVITIES = (0.73, 0.15, 1.0, 1.0, 0.98)


def adult_features(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per-record features and weights for the Adult query; F = weights * column sums.

    Returns (features (N, 5), weights_per_n) where weights_per_n[k] is 1 for an average (to be
    divided by n) and 0 for a count (weight 1); see :func:`estimate_property_model`.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise DataError(f"the Adult data must be a pandas DataFrame, got {type(df).__name__}")
    try:
        feats = np.column_stack([
            df["age"].to_numpy(float), df["education_num"].to_numpy(float),
            (df["marital_status"] == "Never-married").to_numpy(float),
            (df["sex"] == "Female").to_numpy(float), df["hours_per_week"].to_numpy(float)])
    except KeyError as e:
        raise QueryError(f"the Adult query needs column {e.args[0]!r}") from None
    return feats, np.array([1.0, 1.0, 0.0, 0.0, 1.0])


@dataclass(frozen=True)
class PropertyModel(JSONResult):
    """Estimated Gaussian model of F under each proportion of the sensitive property.

    ``means`` / ``covariances`` map each proportion p to the sample mean and covariance of F
    over ``n_samples`` subsets of ``subset_size`` records; ``pairs`` is Psi (both orders).
    """

    proportions: tuple[float, ...]
    subset_size: int
    n_samples: int
    seed: int | None
    means: dict
    covariances: dict
    pairs: tuple[tuple[float, float], ...]
    notes: tuple[str, ...] = field(default=())

    def pooled_covariance(self) -> np.ndarray:
        """Average of the covariances (a common covariance for Theorem 4.4, EigM and DauM)."""
        return sum(self.covariances.values()) / len(self.covariances)

    def pooled(self) -> dict:
        """Covariances with every theta given the pooled covariance."""
        c = self.pooled_covariance()
        return {k: c for k in self.covariances}

    def mechanism(self, name: str, epsilon: float, delta: float, *,
                  calibration: str = "classical") -> dp.DistributionPrivacyResult:
        """Run ExpM(G), EigM(G) or DauM(G) on the model (pooled covariance for EigM / DauM).

        The pooled covariance is an approximation of both f_theta (the estimated covariances
        differ); the result's notes say so.
        """
        if name == "ExpM(G)":
            res = dp.expm_gaussian(self.means, epsilon, delta, pairs=self.pairs,
                                   calibration=calibration)
        elif name == "EigM(G)":
            res = dp.eigm_gaussian(self.means, self.pooled(), epsilon, delta, pairs=self.pairs,
                                   calibration=calibration)
        elif name == "DauM(G)":
            res = dp.daum_gaussian(self.means, self.pooled(), epsilon, delta, pairs=self.pairs,
                                   calibration=calibration)
        else:
            raise ParameterError(f"unknown mechanism {name!r}; use ExpM(G), EigM(G) or DauM(G)")
        extra = self.notes + (("covariance pooled over the proportions (model approximation)",)
                              if name != "ExpM(G)" else ())
        return dataclasses.replace(
            res, assumptions=res.assumptions + ("f_theta modelled by resampling (estimated "
                                                "moments, Gaussian approximation)",),
            notes=res.notes + extra)


def estimate_property_model(
        df: pd.DataFrame, has_property: Sequence[bool] | np.ndarray | Callable,
        proportions: Sequence[float],
        subset_size: int, *, features: Callable = adult_features, n_samples: int = 1000,
        seed: int | None = None) -> PropertyModel:
    """Estimate mean and covariance of F under each proportion by resampling (App. C.1).

    Parameters
    ----------
    df
        pandas DataFrame of records.
    has_property
        Boolean mask over the rows, or a callable df -> mask (e.g.
        ``lambda d: d["income"] == ">50K"``).
    proportions
        The proportions p (e.g. (0.45, 0.55)); Psi is every ordered pair of distinct ones.
    subset_size
        n, the records per dataset; round(p n) of them have the property.
    features
        df -> (per-record features (N, m), is_average (m,)): F_k = sum / n for averages and
        the sum for counts. Default: the Adult query of [CO23, Sec. 5].
    n_samples
        Subsets per proportion (the paper: 1,000).
    seed
        For reproducible experiments; None draws fresh entropy (recorded as None).
    """
    n = check_records(subset_size, "subset_size")
    reps = check_records(n_samples, "n_samples")
    if reps < 2:
        raise ParameterError("n_samples must be at least 2 to estimate a covariance")
    mask = has_property(df) if callable(has_property) else has_property
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (len(df),):
        raise QueryError(f"has_property must give one boolean per row ({len(df)}), "
                         f"got shape {mask.shape}")
    props = []
    for p in proportions:
        p = float(p)
        if not 0 <= p <= 1:
            raise ParameterError(f"proportion must be in [0, 1], got {p}")
        props.append(p)
    if len(set(props)) < 2:
        raise ParameterError("give at least two distinct proportions")
    feats, is_avg = features(df)
    feats = np.asarray(feats, dtype=float)
    w = np.where(np.asarray(is_avg, dtype=float) > 0, 1.0 / n, 1.0)
    pos, neg = feats[mask], feats[~mask]
    rng = np.random.default_rng(seed)
    means, covs = {}, {}
    for p in props:
        k = int(round(p * n))
        if k > len(pos) or n - k > len(neg):
            raise ParameterError(f"not enough records for p = {p}: need {k} with and "
                                 f"{n - k} without the property")
        samples = np.empty((reps, feats.shape[1]))
        for i in range(reps):
            a = pos[rng.choice(len(pos), k, replace=False)].sum(axis=0)
            b = neg[rng.choice(len(neg), n - k, replace=False)].sum(axis=0)
            samples[i] = (a + b) * w
        means[p] = samples.mean(axis=0)
        covs[p] = np.cov(samples, rowvar=False)
    pairs = tuple((a, b) for a in props for b in props if a != b)
    return PropertyModel(tuple(props), n, reps, seed, means, covs, pairs,
                         (f"moments from {reps} subsets of {n} records per proportion"
                          + (f", seed {seed} (reproducible experiment)" if seed is not None
                             else ""),))
