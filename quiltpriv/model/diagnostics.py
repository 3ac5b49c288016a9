"""Diagnostics of the record-level assumptions, computed while the records are in hand.

The guarantee assumes that records are independent given the parameters and that each
attribute depends only on its own parameter (docs/assumptions.md). Within a population the
parameters are fixed, so under the assumption two attributes of the same record are
independent given the population. :func:`record_diagnostics` tests that, pooled over
populations: for every pair of parameters, the within-population correlation (each value minus
its population's mean; population fixed effects) with a t-test on ``N - K - 1`` degrees of
freedom (``N`` records, ``K`` populations), Bonferroni-corrected over the pairs. It also counts
tiny populations (fewer than ``min_records`` records), whose parameters are estimated from a
handful of records but count as much as any other when Theta is learned.

The diagnostics only warn (:class:`~quiltpriv.errors.AssumptionWarning`); they never change
Theta. The test sees linear dependence only (a dependence with zero correlation passes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from quiltpriv.errors import ModelError, ParameterError

__all__ = ["DEFAULT_ALPHA", "TINY_POPULATION", "diagnostics_warnings", "record_diagnostics"]

#: Test level of the within-population dependence test (before the Bonferroni correction).
DEFAULT_ALPHA = 0.01

#: A population with fewer records than this is flagged as tiny.
TINY_POPULATION = 5


def record_diagnostics(values: Mapping[str, np.ndarray], groups: np.ndarray, *,
                       alpha: float = DEFAULT_ALPHA,
                       tiny: int = TINY_POPULATION) -> dict[str, Any]:
    """Within-population dependence of every pair of parameters, and tiny populations.

    Parameters
    ----------
    values : mapping of str to array
        Per parameter, one number per record (0/1 for a share).
    groups : array
        Each record's population (any hashable labels), the same length.
    alpha : float
        Test level, Bonferroni-corrected over the pairs.
    tiny : int
        Populations with fewer records are flagged.

    Returns
    -------
    dict
        JSON-ready: ``test``, ``alpha``, ``pairs`` (per pair: ``attributes``, ``correlation``
        (the effect size), ``t``, ``df``, ``p_value``, ``flagged``), ``populations``
        (``count``, ``min``/``median``/``max`` records, ``tiny``: how many have fewer than
        ``tiny_threshold``) and ``flagged`` (whether anything was flagged).
    """
    if not (isinstance(alpha, float | int) and 0 < alpha < 1):
        raise ParameterError(f"alpha must be in (0, 1), got {alpha!r}")
    if isinstance(tiny, bool) or not isinstance(tiny, int) or tiny < 1:
        raise ParameterError(f"tiny must be a whole number >= 1, got {tiny!r}")
    if not isinstance(values, Mapping):
        raise ParameterError(f"values must be a mapping, got {type(values).__name__}")
    codes, sizes = np.unique(pd.factorize(pd.Series(groups))[0], return_counts=True)
    labels = pd.factorize(pd.Series(groups))[0]
    n, k = len(labels), len(codes)
    names = list(values)
    centred = {a: _within(np.asarray(values[a], dtype=float), labels, k) for a in names}
    pairs = list(combinations(names, 2))
    level = alpha / max(1, len(pairs))
    df = n - k - 1
    rows = []
    for a, b in pairs:
        r, t, p = _correlation_test(centred[a], centred[b], df)
        rows.append({"attributes": [a, b], "correlation": r, "t": t, "df": df,
                     "p_value": p, "flagged": bool(p < level)})
    small = int(np.sum(sizes < tiny))
    return {
        "test": "within-population correlation (population fixed effects), t-test with "
                "N - K - 1 df, Bonferroni over pairs",
        "alpha": float(alpha),
        "pairs": rows,
        "populations": {"count": int(k), "min": int(sizes.min()),
                        "median": float(np.median(sizes)), "max": int(sizes.max()),
                        "tiny": small, "tiny_threshold": tiny},
        "flagged": any(r["flagged"] for r in rows) or small > 0,
    }


def _within(x: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """``x`` minus its population's mean."""
    sums = np.bincount(labels, weights=x, minlength=k)
    counts = np.bincount(labels, minlength=k)
    return x - (sums / counts)[labels]


def _correlation_test(x: np.ndarray, y: np.ndarray, df: int) -> tuple[float, float, float]:
    """Correlation of the centred values, its t statistic and two-sided p-value."""
    from scipy import stats

    sxx, syy = float(x @ x), float(y @ y)
    if df < 1 or sxx <= 0 or syy <= 0:  # no within-population variation: nothing to test
        return 0.0, 0.0, 1.0
    r = float(np.clip((x @ y) / math.sqrt(sxx * syy), -1.0, 1.0))
    if abs(r) >= 1.0:
        return r, math.inf, 0.0
    t = r * math.sqrt(df / (1.0 - r * r))
    return r, t, float(2.0 * stats.t.sf(abs(t), df))


def diagnostics_warnings(diagnostics: Mapping[str, Any]) -> list[str]:
    """What the diagnostics flag, one plain sentence each (empty when nothing).

    ``diagnostics`` may come from a model file's provenance (untrusted): anything not shaped
    as :func:`record_diagnostics` writes it is a :class:`~quiltpriv.errors.ModelError`.
    """
    if not isinstance(diagnostics, Mapping):
        raise ParameterError(f"diagnostics must be a mapping (record_diagnostics' result), got "
                             f"{type(diagnostics).__name__}")
    try:
        return _warnings(diagnostics)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ModelError(f"the provenance's diagnostics are malformed ({type(exc).__name__}: "
                         f"{exc})") from None


def _warnings(diagnostics: Mapping[str, Any]) -> list[str]:
    out = []
    for row in diagnostics.get("pairs", ()):
        if row["flagged"]:
            a, b = row["attributes"]
            p = row["p_value"]
            shown = f"p = {p:.2g}" if p > 0 else "p < 1e-300"
            out.append(f"within populations, {a!r} and {b!r} are dependent (correlation "
                       f"{row['correlation']:.2f}, {shown}): the guarantee "
                       "assumes each attribute depends only on its own parameter; mechanisms "
                       "that use record-level count laws (Wasserstein, audit) rely on it")
    pops: Sequence[Any] | Mapping[str, Any] = diagnostics.get("populations", {})
    if isinstance(pops, Mapping) and pops.get("tiny"):
        out.append(f"{pops['tiny']} of {pops['count']} populations have fewer than "
                   f"{pops['tiny_threshold']} records (sizes {pops['min']} to {pops['max']}, "
                   f"median {pops['median']:g}); their parameters are noisy estimates that "
                   "count as much as any other (min_records= leaves them out)")
    return out
