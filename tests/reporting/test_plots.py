"""Plots of quiltpriv.reporting.plots: the drawn data are the numbers of compare() and
candidate_quilts()."""

from __future__ import annotations

import builtins
import math

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.errors import ParameterError, QuiltPrivError
from quiltpriv.mechanisms.compare import compare
from quiltpriv.reporting.plots import (
    MissingDependency,
    iso_scale_levels,
    noise_curves,
    plot_noise_vs_epsilon,
    plot_quilt_tradeoff,
    quilt_tradeoff,
    save_figure,
)
from quiltpriv.reporting.report import candidate_quilts

EPS = [0.05, 0.1, 0.5, 1.0, 2.0, 3.0]


@pytest.fixture(scope="module")
def student_count(student_theta):
    return student_theta, qp.CountQuery(["height", "sat"], records=100)


def test_noise_curves_are_compare_scales(student_count):
    theta, q = student_count
    c = noise_curves(theta, q, "income", [3.0, 0.05, 1.0, 0.1, 0.5, 2.0, 1.0])
    assert c.epsilons == tuple(EPS)  # sorted, duplicates dropped
    assert list(c.scales) == ["APMQM", "group DP Laplace"]
    for k, e in enumerate(EPS):
        cmp = compare(theta, q, "income", e)
        for name, ys in c.scales.items():
            assert ys[k] == cmp[name].scale
    # Group DP: n Delta / eps with Delta = 1 per record, n = 100.
    assert c.scales["group DP Laplace"] == pytest.approx([100 / e for e in EPS], rel=1e-12)
    # APMQM: Q = {} (e = 0, Delta = 100) until eps exceeds e({sat, height}) ~ 1.957, the
    # quilt with both query attributes remote (Delta_{A and N} = 0, scale 0).
    e_sh = qp.max_influence(theta, "income", ("height", "sat")).value
    assert 1.0 < e_sh < 2.0 and e_sh == pytest.approx(1.9566892836, abs=1e-9)
    assert c.scales["APMQM"][:4] == pytest.approx([100 / e for e in EPS[:4]], rel=1e-12)
    assert c.scales["APMQM"][4:] == (0.0, 0.0)


def test_noise_figure_lines_hold_the_scales(student_count, tmp_path):
    pytest.importorskip("matplotlib")
    theta, q = student_count
    fig = plot_noise_vs_epsilon(theta, q, "income", EPS, path=tmp_path / "noise.png")
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["APMQM", "group DP Laplace"]
    for ln in lines:
        np.testing.assert_array_equal(ln.get_xdata(), EPS)
        want = [compare(theta, q, "income", e)[ln.get_label()].scale for e in EPS]
        np.testing.assert_array_equal(ln.get_ydata(), want)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    data = (tmp_path / "noise.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000


def test_noise_figure_with_wasserstein_as_svg(tmp_path):
    pytest.importorskip("matplotlib")
    # A count over the sensitive attribute itself: the Wasserstein Mechanism applies too.
    theta = qp.load_model("student:theta")
    q = qp.CountQuery(["income"], records=10)
    fig = plot_noise_vs_epsilon(theta, q, "income", [0.5, 1.0], path=tmp_path / "n.svg")
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert labels == ["APMQM", "group DP Laplace", "Wasserstein"]
    w = fig.axes[0].get_lines()[2]
    want = [compare(theta, q, "income", e)["Wasserstein"].scale for e in (0.5, 1.0)]
    np.testing.assert_array_equal(w.get_ydata(), want)
    assert all(math.isfinite(y) and y > 0 for y in want)
    svg = (tmp_path / "n.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


def test_tradeoff_points_are_report_candidates(student_count):
    theta, q = student_count
    t = quilt_tradeoff(theta, q, "income", 1.0)
    ranked, truncated = candidate_quilts(theta, q, "income", 1.0)
    assert t.unrated == 0 and not truncated
    assert [c.quilt for c in t.candidates] == [c.quilt for c in ranked]
    plan = qp.plan(theta, q, "income", 1.0)
    assert t.best.scale == plan.scale == 100.0
    assert t.best.quilt.quilt == plan["income"].quilt


def test_tradeoff_figure_points_and_iso_curves(student_count, tmp_path):
    pytest.importorskip("matplotlib")
    theta, q = student_count
    fig = plot_quilt_tradeoff(theta, q, "income", 1.0, levels=4, path=tmp_path / "t.png")
    (ax,) = fig.axes
    t = quilt_tradeoff(theta, q, "income", 1.0)
    lines = ax.get_lines()
    assert len(lines) == 4 + 1  # four iso-scale curves and e = eps
    levels = iso_scale_levels(t, 4)
    assert levels[0] == t.best.scale == 100.0
    assert levels[-1] == pytest.approx(max(c.scale for c in t.candidates
                                           if math.isfinite(c.scale)))
    for ln, b in zip(lines[:4], levels, strict=True):
        assert ln.get_label() == f"b = {b:.4g}"
        # Delta = b (eps - e): every point of the curve has Laplace scale b.
        x, y = np.asarray(ln.get_xdata()), np.asarray(ln.get_ydata())
        np.testing.assert_allclose(y, b * (1.0 - x))
    np.testing.assert_array_equal(lines[4].get_xdata(), [1.0, 1.0])
    points, ring = ax.collections
    np.testing.assert_array_equal(points.get_offsets(),
                                  [[c.influence, c.sensitivity] for c in t.candidates])
    np.testing.assert_array_equal(ring.get_offsets(), [[0.0, 100.0]])
    # Every finite-scale candidate lies on or above the least-scale curve.
    for c in t.candidates:
        if c.influence < 1.0:
            assert c.sensitivity >= levels[0] * (1.0 - c.influence) - 1e-9
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"


def test_bad_arguments(student_count, tmp_path):
    theta, q = student_count
    with pytest.raises(ParameterError, match="epsilons is empty"):
        noise_curves(theta, q, "income", [])
    with pytest.raises(ParameterError, match="epsilon"):
        noise_curves(theta, q, "income", [1.0, -1.0])
    with pytest.raises(ParameterError, match="sequence"):
        noise_curves(theta, q, "income", "1.0")
    with pytest.raises(QuiltPrivError, match="nope"):
        quilt_tradeoff(theta, q, "nope", 1.0)
    pytest.importorskip("matplotlib")
    with pytest.raises(ParameterError, match="levels"):
        plot_quilt_tradeoff(theta, q, "income", 1.0, levels=0)
    fig = plot_quilt_tradeoff(theta, q, "income", 1.0)
    with pytest.raises(ParameterError, match=r"\.png or \.svg"):
        save_figure(fig, tmp_path / "t.pdf")
    with pytest.raises(ParameterError, match="does not exist"):
        save_figure(fig, tmp_path / "missing" / "t.png")
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_missing_matplotlib_is_a_clear_error(student_count, monkeypatch):
    theta, q = student_count
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(MissingDependency, match=r"pip install 'quiltpriv\[plot\]'") as exc:
        plot_noise_vs_epsilon(theta, q, "income", [1.0])
    assert isinstance(exc.value, QuiltPrivError) and isinstance(exc.value, ImportError)
    # The numbers need no matplotlib.
    assert noise_curves(theta, q, "income", [1.0]).scales["APMQM"] == (100.0,)
