"""Diagnostics of the record-level assumptions, computed while the records are in hand.

The guarantee assumes that records are independent given the parameters and that each
attribute depends only on its own parameter (docs/assumptions.md). Within a population the
parameters are fixed, so under the assumption two attributes of the same record are
independent given the population. :func:`record_diagnostics` tests that, pooled over
populations, for every pair of parameters, with two tests:

* **Linear:** the within-population correlation (each value minus its population's mean;
  population fixed effects) with a t-test on ``N - K - 1`` degrees of freedom (``N`` records,
  or Kish's effective number ``(sum w)^2 / sum w^2`` with weights; ``K`` populations).
* **Any form:** a conditional G-test of independence given the population. Each attribute is
  coded in a few categories (a share's 0/1 values; a mean's value minus its population's mean,
  cut at the pooled terciles), ``G = 2 sum O ln(O / E)`` is summed over the populations'
  tables, and its null law -- independence within each population, margins fixed -- is
  estimated by permuting one attribute within populations (a seeded, bounded number of
  times) and matching a scaled chi-square to its mean and variance (Satterthwaite), which
  stays calibrated where many small populations make the textbook chi-square law wrong. The
  effect size is the conditional mutual information in excess of its permutation mean, in
  bits. It sees what the correlation misses: a dependence through ``|x|`` (extreme ages vote
  one way) or of opposite signs in different populations.

Both are Bonferroni-corrected over every test run. Weights (survey weights, one positive
number per record) weight the population means, the correlation and the G-test's tables.
The work of the permutations is bounded by :data:`MAX_PERMUTATION_WORK` (records x
permutations x pairs): beyond it fewer permutations are drawn, and below
:data:`MIN_PERMUTATIONS` the G-test is not run, which the result and its warnings say. Tiny
populations (fewer than ``min_records`` records), whose parameters are estimated from a
handful of records but count as much as any other when Theta is learned, are counted.

The diagnostics only warn (:class:`~quiltpriv.errors.AssumptionWarning`); they never change
Theta.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.utils.format import fmt_number as _fmt

__all__ = ["DEFAULT_ALPHA", "DEFAULT_PERMUTATIONS", "MAX_PERMUTATION_WORK", "MIN_PERMUTATIONS",
           "TINY_POPULATION", "diagnostics_warnings", "record_diagnostics"]

#: Test level of the within-population dependence tests (before the Bonferroni correction).
DEFAULT_ALPHA = 0.01

#: A population with fewer records than this is flagged as tiny.
TINY_POPULATION = 5

#: Within-population permutations estimating the G-test's null law.
DEFAULT_PERMUTATIONS = 99

#: Fewest permutations for which the G-test is run (the null's variance needs a few).
MIN_PERMUTATIONS = 19

#: Most records x permutations x pairs the G-test may cost (about a second of numpy work).
MAX_PERMUTATION_WORK = 30_000_000

#: Categories of a mean's within-population deviation in the G-test (pooled quantiles).
MEAN_CATEGORIES = 3


def record_diagnostics(values: Mapping[str, np.ndarray], groups: np.ndarray, *,
                       alpha: float = DEFAULT_ALPHA,
                       tiny: int = TINY_POPULATION,
                       weights: np.ndarray | None = None,
                       permutations: int = DEFAULT_PERMUTATIONS,
                       seed: int = 0) -> dict[str, Any]:
    """Within-population dependence of every pair of parameters, and tiny populations.

    Parameters
    ----------
    values : mapping of str to array
        Per parameter, one number per record (0/1 for a share).
    groups : array
        Each record's population (any hashable labels), the same length.
    alpha : float
        Test level, Bonferroni-corrected over every test run (two per pair).
    tiny : int
        Populations with fewer records are flagged.
    weights : array, optional
        One positive finite weight per record (survey weights).
    permutations : int
        Within-population permutations for the G-test's null law (fewer when
        :data:`MAX_PERMUTATION_WORK` would be exceeded; 0 skips the G-test).
    seed : int
        Seeds the permutations (the diagnostics are reproducible; nothing secret is drawn).

    Returns
    -------
    dict
        JSON-ready: ``test``, ``alpha``, ``weighted``, ``effective_records``, ``pairs`` (per
        pair: ``attributes``, ``correlation`` (the effect size), ``t``, ``df``, ``p_value``,
        ``correlation_flagged``, ``dependence`` (the G-test: ``g``, ``p_value``,
        ``mutual_information_bits``, ``categories``, ``permutations``, ``flagged``, or None
        when not run) and ``flagged`` (either test)), ``dependence_test`` (how the G-test was
        run, or why not), ``populations`` (``count``, ``min``/``median``/``max`` records,
        ``tiny``: how many have fewer than ``tiny_threshold``) and ``flagged``.
    """
    if not (isinstance(alpha, float | int) and not isinstance(alpha, bool) and 0 < alpha < 1):
        raise ParameterError(f"alpha must be in (0, 1), got {alpha!r}")
    if isinstance(tiny, bool) or not isinstance(tiny, int) or tiny < 1:
        raise ParameterError(f"tiny must be a whole number >= 1, got {tiny!r}")
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 0:
        raise ParameterError(f"permutations must be a whole number >= 0, got {permutations!r}")
    if not isinstance(values, Mapping):
        raise ParameterError(f"values must be a mapping, got {type(values).__name__}")
    labels = pd.factorize(pd.Series(groups))[0]
    sizes = np.bincount(labels)
    n, k = len(labels), len(sizes)
    w = check_weights(weights, n)
    names = list(values)
    arrays = {a: np.asarray(values[a], dtype=float) for a in names}
    centred = {a: _within(arrays[a], labels, k, w) for a in names}
    pairs = list(combinations(names, 2))
    n_eff = n if w is None else float(w.sum() ** 2 / (w @ w))
    df = int(math.floor(n_eff)) - k - 1
    runs, why_not = _permutation_count(permutations, n, len(pairs))
    level = alpha / max(1, len(pairs) * (2 if runs else 1))
    codes = {a: _categories(arrays[a], centred[a]) for a in names} if runs else {}
    rng = np.random.default_rng(seed)
    rows = []
    for a, b in pairs:
        r, t, p = _correlation_test(centred[a], centred[b], df, w)
        row: dict[str, Any] = {"attributes": [a, b], "correlation": r, "t": t, "df": df,
                               "p_value": p, "correlation_flagged": bool(p < level)}
        dep = None
        if runs:
            dep = _g_test(codes[a], codes[b], labels, k, w, runs, rng)
            dep["flagged"] = bool(dep["p_value"] < level)
        row["dependence"] = dep
        row["flagged"] = row["correlation_flagged"] or bool(dep and dep["flagged"])
        rows.append(row)
    small = int(np.sum(sizes < tiny))
    return {
        "test": "within-population correlation (population fixed effects), t-test with "
                "N - K - 1 df; conditional G-test given the population, null law by "
                "within-population permutation (scaled chi-square matched to its moments); "
                "Bonferroni over every test",
        "alpha": float(alpha),
        "weighted": w is not None,
        "effective_records": float(n_eff),
        "dependence_test": {"run": bool(runs), "permutations": runs, "seed": seed,
                            "mean_categories": MEAN_CATEGORIES,
                            "work_limit": MAX_PERMUTATION_WORK, "not_run_because": why_not},
        "pairs": rows,
        "populations": {"count": int(k), "min": int(sizes.min()),
                        "median": float(np.median(sizes)), "max": int(sizes.max()),
                        "tiny": small, "tiny_threshold": tiny},
        "flagged": any(r["flagged"] for r in rows) or small > 0,
    }


def check_weights(weights: Any, records: int) -> np.ndarray | None:
    """Survey weights (untrusted): ``records`` positive finite numbers, scaled to mean 1; None
    stays None."""
    if weights is None:
        return None
    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError("weights must be numbers, one per record") from None
    if w.shape != (records,):
        raise ParameterError(f"weights must be one number per record ({records}), got shape "
                             f"{w.shape}")
    bad = ~np.isfinite(w) | (w <= 0)
    if np.any(bad):
        raise ParameterError(f"weights must be positive finite numbers; {int(bad.sum())} are "
                             f"not (e.g. {_fmt(float(w[bad][0]))})")
    return w / w.mean()


def _permutation_count(asked: int, n: int, pairs: int) -> tuple[int, str | None]:
    """Permutations to draw within the work limit, and why the G-test is not run (or None)."""
    if pairs == 0:
        return 0, "fewer than two parameters"
    if asked == 0:
        return 0, "permutations=0"
    runs = min(asked, MAX_PERMUTATION_WORK // max(1, n * pairs))
    if runs < MIN_PERMUTATIONS:
        return 0, (f"work limit: {n} records x {pairs} pairs x {MIN_PERMUTATIONS} permutations "
                   f"exceeds {MAX_PERMUTATION_WORK:,}")
    return runs, None


def _within(x: np.ndarray, labels: np.ndarray, k: int,
            w: np.ndarray | None = None) -> np.ndarray:
    """``x`` minus its population's (weighted) mean."""
    ww = np.ones_like(x) if w is None else w
    sums = np.bincount(labels, weights=ww * x, minlength=k)
    totals = np.bincount(labels, weights=ww, minlength=k)
    return x - (sums / totals)[labels]


def _categories(x: np.ndarray, centred: np.ndarray) -> np.ndarray:
    """The G-test's codes of one attribute: 0/1 values as they are, anything else its
    within-population deviation cut at the pooled quantiles (ties fall in one category)."""
    if np.all((x == 0) | (x == 1)):
        return x.astype(np.int64)
    inner = np.quantile(centred, np.arange(1, MEAN_CATEGORIES) / MEAN_CATEGORIES)
    return np.searchsorted(np.unique(inner), centred, side="right").astype(np.int64)


def _correlation_test(x: np.ndarray, y: np.ndarray, df: int,
                      w: np.ndarray | None = None) -> tuple[float, float, float]:
    """(Weighted) correlation of the centred values, its t statistic and two-sided p-value."""
    from scipy import stats

    wx = x if w is None else w * x
    sxx, syy = float(wx @ x), float((y if w is None else w * y) @ y)
    if df < 1 or sxx <= 0 or syy <= 0:  # no within-population variation: nothing to test
        return 0.0, 0.0, 1.0
    r = float(np.clip((wx @ y) / math.sqrt(sxx * syy), -1.0, 1.0))
    if abs(r) >= 1.0:
        return r, math.inf, 0.0
    t = r * math.sqrt(df / (1.0 - r * r))
    return r, t, float(2.0 * stats.t.sf(abs(t), df))


def _g_statistics(x: np.ndarray, y: np.ndarray, labels: np.ndarray, k: int,
                  w: np.ndarray | None) -> np.ndarray:
    """``G = 2 sum O ln(O / E)`` of the population tables of ``x`` (codes, shape (N,)) by each
    row of ``y`` (shape (B, N)), summed over populations: one G per row."""
    r, c = int(x.max()) + 1, int(y.max()) + 1
    rows = y.shape[0]
    cell = (labels * r + x) * c
    idx = (cell[None, :] + y) + (np.arange(rows) * (k * r * c))[:, None]
    weights = None if w is None else np.broadcast_to(w, y.shape).ravel()
    obs = np.bincount(idx.ravel(), weights=weights, minlength=rows * k * r * c)
    obs = obs.reshape(rows, k, r, c).astype(float)
    total = obs.sum(axis=(2, 3))
    expected = obs.sum(axis=3)[:, :, :, None] * obs.sum(axis=2)[:, :, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = expected / total[:, :, None, None]
        terms = np.where(obs > 0, obs * np.log(obs / expected), 0.0)
    return 2.0 * terms.sum(axis=(1, 2, 3))


def _g_test(x: np.ndarray, y: np.ndarray, labels: np.ndarray, k: int, w: np.ndarray | None,
            runs: int, rng: np.random.Generator) -> dict[str, Any]:
    """The conditional G-test of ``x`` and ``y`` given the population, its null law from
    ``runs`` within-population permutations of ``y``."""
    from scipy import stats

    g = float(_g_statistics(x, y[None, :], labels, k, w)[0])
    order = np.argsort(labels, kind="stable")
    shuffled = np.empty((runs, len(y)), dtype=np.int64)
    for b in range(runs):
        # sorted by population, then at random: the same positions as ``order`` hold records
        # of the same population, so this moves each y within its population
        perm = np.lexsort((rng.random(len(y)), labels))
        shuffled[b, order] = y[perm]
    null = _g_statistics(x, shuffled, labels, k, w)
    mean, var = float(null.mean()), float(null.var(ddof=1))
    if mean <= 0 or var <= 0:  # no population has variation in both: nothing to test
        p = 1.0
    else:
        scale, dof = var / (2.0 * mean), 2.0 * mean * mean / var
        p = float(stats.chi2.sf(g / scale, dof))
    total = float(len(y) if w is None else w.sum())
    bits = max(0.0, g - mean) / (2.0 * total * math.log(2.0))
    return {"g": g, "p_value": p, "mutual_information_bits": bits,
            "null_mean": mean, "null_variance": var, "permutations": runs,
            "categories": [int(x.max()) + 1, int(y.max()) + 1]}


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
        if not row["flagged"]:
            continue
        a, b = row["attributes"]
        p = row["p_value"]
        dep = row.get("dependence")
        # models learned before the G-test have no "correlation_flagged": theirs was the test
        if row.get("correlation_flagged", dep is None):
            how = f"correlation {_fmt(row['correlation'], 2)}, {_p_text(p)}"
        else:
            how = (f"a dependence the correlation ({_fmt(row['correlation'], 2)}) misses: "
                   f"conditional G-test {_p_text(dep['p_value'])}, mutual information "
                   f"{_fmt(dep['mutual_information_bits'], 3)} bits")
        weighted = ", weighted" if diagnostics.get("weighted") else ""
        out.append(f"within populations, {a!r} and {b!r} are dependent ({how}{weighted}): the "
                   "guarantee assumes each attribute depends only on its own parameter; "
                   "mechanisms that use record-level count laws (Wasserstein, audit) rely on "
                   "it")
    test = diagnostics.get("dependence_test")
    if isinstance(test, Mapping) and not test.get("run") and test.get("not_run_because") \
            and str(test["not_run_because"]).startswith("work limit"):
        out.append(f"the within-population G-test was not run ({test['not_run_because']}): "
                   "only linear dependence between attributes was checked")
    pops: Sequence[Any] | Mapping[str, Any] = diagnostics.get("populations", {})
    if isinstance(pops, Mapping) and pops.get("tiny"):
        out.append(f"{pops['tiny']} of {pops['count']} populations have fewer than "
                   f"{pops['tiny_threshold']} records (sizes {pops['min']} to {pops['max']}, "
                   f"median {_fmt(pops['median'])}); their parameters are noisy estimates that "
                   "count as much as any other (min_records= leaves them out)")
    return out


def _p_text(p: float) -> str:
    return f"p = {_fmt(p, 2)}" if p > 0 else "p < 1e-300"
