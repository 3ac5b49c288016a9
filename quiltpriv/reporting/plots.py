"""Plots of the noise a release needs (optional: needs matplotlib).

Two figures:

* :func:`plot_noise_vs_epsilon` -- the Laplace scale of every applicable mechanism of
  :func:`quiltpriv.mechanisms.compare.compare` (APMQM, [ZOC22, Alg. 3]; group DP; the Wasserstein
  Mechanism, [ZOC22, Alg. 4]) for one query over a grid of epsilons.
* :func:`plot_quilt_tradeoff` -- the candidate Markov quilts of one sensitive attribute (the
  list of :func:`quiltpriv.reporting.report.candidate_quilts`) as points (max-influence ``e(Q|i)``,
  Definition 8; sensitivity ``Delta_{A and N} F``) with the iso-scale curves
  ``Delta / (eps - e) = b`` of [ZOC22, Alg. 3]: a candidate's Laplace scale is the ``b`` of the
  curve through it, so the planner's choice is the point on the lowest curve.

The numbers are computed without matplotlib (:func:`noise_curves`, :func:`quilt_tradeoff`);
only drawing imports it, lazily, and raises :class:`MissingDependency` (a
:class:`~quiltpriv.errors.QuiltPrivError` and an :class:`ImportError`) when it is absent.
Nothing here changes a plan or draws noise.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quiltpriv.errors import ParameterError, QuiltPrivError
from quiltpriv.model.network import as_theta
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_fields, renamed_keywords
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.io import check_output_path, write_bytes_atomic
from quiltpriv.utils.validation import check_epsilon, check_instance, check_path, check_scalar

__all__ = [
    "MissingDependency", "NoiseCurves", "QuiltTradeoff", "iso_scale_levels", "noise_curves",
    "plot_noise_vs_epsilon", "plot_quilt_tradeoff", "quilt_tradeoff", "save_figure",
]

#: File formats :func:`save_figure` writes.
FORMATS = ("png", "svg")
#: Most epsilons in one noise curve (each is a full :func:`~quiltpriv.mechanisms.compare.compare`).
MAX_EPSILONS = 200


class MissingDependency(QuiltPrivError, ImportError):
    """An optional dependency (here matplotlib) is not installed."""


def _matplotlib() -> Any:
    """Import matplotlib lazily. Figures are made with ``Figure`` directly (not pyplot), so no
    GUI backend is touched and nothing is kept in pyplot's global state."""
    try:
        import matplotlib
    except ImportError:
        raise MissingDependency(
            "plotting needs matplotlib, which is not installed: "
            "pip install 'quiltpriv[plot]' (or pip install matplotlib)") from None
    from matplotlib.figure import Figure

    return matplotlib, Figure


# -- data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoiseCurves:
    """Laplace scale per mechanism over a grid of epsilons.

    Attributes
    ----------
    epsilons : tuple of float
        Increasing.
    scales : dict of str to tuple of float
        Per applicable mechanism (in :func:`~quiltpriv.mechanisms.compare.compare`'s row order), the
        scale ``b`` at each epsilon; ``inf`` where no quilt gives finite noise (every
        candidate's influence is at least epsilon), ``nan`` where the mechanism does not apply
        at that epsilon.
    guarantees : dict of str to str
        What each mechanism's scale buys (from the last epsilon where it applies).
    """

    epsilons: tuple[float, ...]
    scales: dict[str, tuple[float, ...]]
    guarantees: dict[str, str]


@renamed_keywords(model="theta")
def noise_curves(theta: Any, query: Query, sensitive: str | Iterable[str],
                 epsilons: Iterable[float]) -> NoiseCurves:
    """Run :func:`quiltpriv.mechanisms.compare.compare` at every epsilon and collect the Laplace
    scales.

    Mechanisms that never apply (APGM, the original MQM on hyperparameter networks) are left
    out; a mechanism that applies at some epsilons only has ``nan`` elsewhere.

    Raises
    ------
    ParameterError
        No epsilon, more than :data:`MAX_EPSILONS`, or an epsilon that is not finite and > 0.
    """
    from quiltpriv.mechanisms.compare import compare

    grid = sorted({check_epsilon(e) for e in _as_list(epsilons, "epsilons")})
    if not grid:
        raise ParameterError("epsilons is empty: give at least one epsilon")
    if len(grid) > MAX_EPSILONS:
        raise ParameterError(f"{len(grid)} epsilons; at most {MAX_EPSILONS} per plot")
    theta = as_theta(theta)
    comparisons = [compare(theta, query, sensitive, e) for e in grid]
    names: list[str] = []
    for c in comparisons:
        names += [r.mechanism for r in c.rows if r.applicable and r.mechanism not in names]
    scales: dict[str, tuple[float, ...]] = {}
    guarantees: dict[str, str] = {}
    for name in names:
        ys = []
        for c in comparisons:
            row = c[name]
            ys.append(float(row.scale) if row.applicable and row.scale is not None
                      else math.nan)
            if row.applicable:
                guarantees[name] = row.guarantee
        scales[name] = tuple(ys)
    return NoiseCurves(tuple(grid), scales, guarantees)


@renamed_fields(node="sensitive")
@dataclass(frozen=True)
class QuiltTradeoff:
    """Candidate quilts of one sensitive attribute as (influence, sensitivity, scale) points.

    Attributes
    ----------
    sensitive : str
        The sensitive attribute ``i`` (``node`` is its deprecated name).
    epsilon : float
    candidates : tuple of Candidate
        :func:`quiltpriv.reporting.report.candidate_quilts`, best first; the first is the least
        scale.
    unrated : int
        Candidates left out of the plot because their exact influence was too expensive.
    truncated : bool
        Whether the candidate family was cut (see
        :func:`~quiltpriv.reporting.report.candidate_quilts`).
    """

    sensitive: str
    epsilon: float
    candidates: tuple[Any, ...]
    unrated: int
    truncated: bool

    @property
    def best(self) -> Any:
        """The candidate of least Laplace scale (the planner's order on ties)."""
        return self.candidates[0] if self.candidates else None


@renamed_keywords(model="theta", node="sensitive")
def quilt_tradeoff(theta: Any, query: Query, sensitive: str, epsilon: float) -> QuiltTradeoff:
    """The candidate quilts of the sensitive attribute ``sensitive`` (``node`` is its deprecated
    name) with their influence, sensitivity and scale.

    Reuses :func:`quiltpriv.reporting.report.candidate_quilts` (the trivial quilt, ``Q = {}``, the
    least-influence quilt of every subset of the query attributes and, on small networks,
    every quilt with ``|Q| <= 2``); candidates whose influence is too expensive are counted in
    ``unrated`` and not plotted.
    """
    from quiltpriv.reporting.report import candidate_quilts

    theta = as_theta(theta)
    check_query(query)
    eps = check_epsilon(epsilon)
    (node,) = theta.check_sensitive([sensitive])
    ranked, truncated = candidate_quilts(theta, query, node, eps)
    rated = tuple(c for c in ranked if c.influence is not None and c.scale is not None)
    return QuiltTradeoff(node, eps, rated, len(ranked) - len(rated), truncated)


def _as_list(xs: Any, name: str) -> list[Any]:
    if isinstance(xs, str | bytes) or not isinstance(xs, Iterable):
        raise ParameterError(f"{name} must be a sequence of numbers, got {xs!r}")
    return list(xs)


# -- figures ---------------------------------------------------------------------------------


@renamed_keywords(model="theta")
def plot_noise_vs_epsilon(theta: Any, query: Query, sensitive: str | Iterable[str],
                          epsilons: Sequence[float] | None = None, *,
                          path: str | os.PathLike[str] | None = None) -> Any:
    """Figure: Laplace scale ``b`` of each mechanism against epsilon (log-log axes).

    One line per applicable mechanism of :func:`quiltpriv.mechanisms.compare.compare`, in its row
    order, whose y data are exactly the scales :func:`noise_curves` returns, with ``inf`` drawn as
    ``nan`` (a break in the line); a scale of 0 (the query reads no nearby attribute) is kept
    in the data but cannot show on the log axis. The default grid is 25 epsilons from 0.1 to
    10, log-spaced.

    Parameters
    ----------
    path : path, optional
        Also save the figure there (:func:`save_figure`; ``.png`` or ``.svg``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    if epsilons is None:
        epsilons = [10 ** (-1 + 2 * k / 24) for k in range(25)]
    curves = noise_curves(theta, query, sensitive, epsilons)
    _, Figure = _matplotlib()
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for name, ys in curves.scales.items():
        # inf cannot be drawn on a log axis; nan breaks the line there instead.
        ax.plot(curves.epsilons, [y if math.isfinite(y) else math.nan for y in ys],
                marker="o", markersize=3, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("\u03b5")
    ax.set_ylabel("Laplace scale b")
    sens = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    ax.set_title(f"noise of {query.to_dict().get('kind', 'query')} query, "
                 f"sensitive: {', '.join(map(str, sens))}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if path is not None:
        save_figure(fig, path)
    return fig


@renamed_keywords(model="theta", node="sensitive")
def plot_quilt_tradeoff(theta: Any, query: Query, sensitive: str, epsilon: float, *,
                        levels: int = 5,
                        path: str | os.PathLike[str] | None = None) -> Any:
    """Figure: candidate quilts of ``sensitive`` (``node`` is its deprecated name) by influence
    and sensitivity, with iso-scale curves.

    Each candidate of :func:`quilt_tradeoff` is a point ``(e(Q|i), Delta_{A and N} F)``; the
    dashed lines are ``Delta = b (eps - e)`` ([ZOC22, Alg. 3]'s scale ``Delta / (eps - e) = b``) for
    ``levels`` values of ``b`` from the least candidate scale up to the largest finite one;
    the vertical line ``e = eps`` bounds the quilts that give finite noise. The least-scale
    candidate (the planner's choice) is ringed. Lines: the ``levels`` iso-scale curves first
    (label ``b = ...``), then ``e = eps``; the points are one scatter collection, the ring a
    second one.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if isinstance(levels, bool) or not isinstance(levels, int) or not 1 <= levels <= 20:
        raise ParameterError(f"levels must be an integer from 1 to 20, got {levels!r}")
    t = quilt_tradeoff(theta, query, sensitive, epsilon)
    _, Figure = _matplotlib()
    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    ax = fig.add_subplot()
    eps = t.epsilon
    xs = [float(c.influence) for c in t.candidates]
    ys = [float(c.sensitivity) for c in t.candidates]
    for b in iso_scale_levels(t, levels):
        # Delta = b (eps - e) for e in [0, eps]: every quilt on it has scale b.
        ax.plot([0.0, eps], [b * eps, 0.0], linestyle="--", linewidth=0.9, color="0.55",
                label=f"b = {_fmt(b, 4, rounding='up')}")
    ax.axvline(eps, color="#c0392b", linewidth=1.0, label="e = \u03b5 (infinite scale)")
    ax.scatter(xs, ys, s=28, color="#0072b2", zorder=3, label="candidate quilts")
    best = t.best
    if best is not None:
        ax.scatter([best.influence], [best.sensitivity], s=160, facecolors="none",
                   edgecolors="#e69f00", linewidths=2, zorder=4,
                   label=f"least scale: Q = {{{', '.join(best.quilt.quilt)}}}"
                         f" (b = {_fmt(best.scale, 4, rounding='up')})")
    ax.set_xlabel("max-influence e(Q | i)")
    ax.set_ylabel("sensitivity \u0394$_{A\u2229N}$ F")
    ax.set_title(f"candidate quilts of {t.sensitive}, \u03b5 = {_fmt(eps)}", fontsize=10)
    top = max([*ys, 1e-12])
    ax.set_ylim(0, top * 1.1)
    ax.set_xlim(0, max([*xs, eps]) * 1.05)
    ax.legend(fontsize=8)
    if t.unrated:
        ax.text(0.99, 0.01, f"{t.unrated} candidate(s) not rated (influence too expensive)",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=8)
    if path is not None:
        save_figure(fig, path)
    return fig


def iso_scale_levels(t: QuiltTradeoff, levels: int) -> list[float]:
    """The ``b`` of the iso-scale curves: from the least to the largest finite positive scale.

    When the least candidate scale is positive the first level is that scale, so its curve
    passes through the chosen quilt (a scale of 0 lies on the axis ``Delta = 0`` instead).
    Geometric spacing (scales span orders of magnitude); one level when all scales agree.
    """
    check_instance(t, QuiltTradeoff, "t")
    levels = int(check_scalar(levels, "levels", integer=True, min_val=1))
    finite = sorted({float(c.scale) for c in t.candidates
                     if math.isfinite(c.scale) and c.scale > 0})
    if not finite:
        return []
    lo, hi = finite[0], finite[-1]
    if levels == 1 or hi == lo:
        return [lo]
    r = (hi / lo) ** (1 / (levels - 1))
    return [lo * r ** k for k in range(levels)]


def save_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    """Save ``fig`` as PNG or SVG (chosen by the suffix), atomically.

    The image is rendered in memory first, so a failure never leaves a partial file.

    Raises
    ------
    ParameterError
        Unknown suffix, missing folder, or a path that is not a regular file.
    """
    target = Path(check_path(path))
    fmt = target.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ParameterError(f"{target}: save as .png or .svg, not {target.suffix or 'no suffix'}")
    check_output_path(target, "figure")  # before rendering: a folder, FIFO or missing folder
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=150)
    write_bytes_atomic(target, buf.getvalue())
    return target
