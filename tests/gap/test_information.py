"""The MMSE adversary and the mutual-information privatizers of [HKCSR17, Sec. 2.2, Fig. 5c,d],
against brute force: dense grids over every flip probability, estimators searched on a grid,
50-digit quadrature."""

from __future__ import annotations

import math
import random

import mpmath
import numpy as np
import pytest

from quiltpriv.errors import ParameterError
from quiltpriv.gap.information import (
    binary_mi_pdd_optimum,
    binary_mi_pdi_optimum,
    binary_mutual_information,
    binary_privatize,
    mi_saturation_distortion,
    mmse_adversary,
    mmse_two_gaussians,
)
from quiltpriv.gap.privatizers import BinaryModel, binary_pdd_optimum, binary_pdi_theorem1


def grid_mi(p: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """I(X^; Y) in bits and the Hamming distortion for flips s[..., x, y] (any leading shape),
    straight from the definitions: joint P(y, x^) summed over x, then sum P log P / (P P)."""
    keep = s
    joint = np.zeros(s.shape[:-2] + (2, 2))  # [..., y, x^]
    for x in range(2):
        for y in range(2):
            joint[..., y, x] += p[x, y] * keep[..., x, y]
            joint[..., y, 1 - x] += p[x, y] * (1 - keep[..., x, y])
    py = joint.sum(axis=-1, keepdims=True)
    po = joint.sum(axis=-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log2(joint / (py * po)), 0.0)
    dist = (p * (1 - s)).sum(axis=(-1, -2))
    return terms.sum(axis=(-1, -2)), dist


def random_model(rng: np.random.Generator) -> BinaryModel:
    return BinaryModel.from_joint(rng.dirichlet(np.ones(4)).reshape(2, 2))


@pytest.mark.parametrize("seed", range(5))
def test_pdd_mi_optimum_matches_a_dense_grid(seed):
    rng = np.random.default_rng(seed)
    model = BinaryModel.from_xor(0.5, 0.25) if seed == 0 else random_model(rng)
    p = model.array
    g = np.linspace(0, 1, 26)
    s = np.stack(np.meshgrid(g, g, g, g, indexing="ij"), axis=-1).reshape(-1, 2, 2)
    mi, dist = grid_mi(p, s)
    for d in (0.02, 0.07, 0.15, 0.3):
        opt = binary_mi_pdd_optimum(model, d)
        assert opt.distortion <= d + 1e-9
        # the mechanism returned has the MI it claims
        mi_opt, dist_opt = grid_mi(p, np.array(opt.mechanism).reshape(2, 2))
        assert opt.mutual_information_bits == pytest.approx(float(mi_opt), abs=1e-12)
        assert opt.distortion == pytest.approx(float(dist_opt), abs=1e-12)
        # no grid mechanism within budget does better
        assert opt.mutual_information_bits <= mi[dist <= d].min() + 1e-9


@pytest.mark.parametrize("seed", range(5))
def test_pdi_mi_optimum_matches_a_dense_grid(seed):
    rng = np.random.default_rng(100 + seed)
    model = BinaryModel.from_xor(0.75, 0.25) if seed == 0 else random_model(rng)
    p = model.array
    g = np.linspace(0, 1, 401)
    s0, s1 = np.meshgrid(g, g, indexing="ij")
    s = np.stack([s0, s0, s1, s1], axis=-1).reshape(-1, 2, 2)
    mi, dist = grid_mi(p, s)
    for d in (0.03, 0.1, 0.2, 0.4):
        opt = binary_mi_pdi_optimum(model, d)
        assert opt.distortion <= d + 1e-9 and len(opt.mechanism) == 2
        assert opt.mutual_information_bits <= mi[dist <= d].min() + 1e-9
        # PDI is a restriction of PDD
        assert opt.mutual_information_bits >= \
            binary_mi_pdd_optimum(model, d).mutual_information_bits - 1e-9


def test_saturation_thresholds_and_figure_5_claim():
    # [HKCSR17, Sec. 3.3]: the MI curves saturate (X^ independent of Y) at distortions "very
    # close" to those of the MAP curves (Fig. 5a,b: PDD 0.25 / PDI 0.5 for (0.5, 0.25), PDD
    # 0.125 / PDI 0.25 for (0.75, 0.25)). Hand-derived MI thresholds: PDD = weighted median
    # distance of r_y = P(X = 1 | y): (0.5, 0.25): r = (0.25, 0.75), 0.5 * 0.5 = 0.25;
    # (0.75, 0.25): P(Y=1) = 0.625, r = (0.5, 0.9), 0.375 * 0.4 = 0.15. PDI: min(p, 1 - p).
    cases = {(0.5, 0.25): (0.25, 0.5), (0.75, 0.25): (0.15, 0.25)}
    for (p, q), (t_pdd, t_pdi) in cases.items():
        model = BinaryModel.from_xor(p, q)
        assert mi_saturation_distortion(model, "PDD") == pytest.approx(t_pdd, abs=1e-15)
        assert mi_saturation_distortion(model, "PDI") == pytest.approx(t_pdi, abs=1e-15)
        for t, solve in ((t_pdd, binary_mi_pdd_optimum), (t_pdi, binary_mi_pdi_optimum)):
            assert solve(model, t * 0.95).mutual_information_bits > 1e-5
            assert solve(model, t).mutual_information_bits < 1e-9
            assert solve(model, min(1.0, t + 0.1)).mutual_information_bits < 1e-9
        # the MAP thresholds of Fig. 5a,b, for comparison (the LP and Theorem 1)
        map_pdd = binary_pdd_optimum(model, 0.125 if p == 0.75 else 0.25).accuracy
        assert map_pdd == pytest.approx(model.prior_accuracy, abs=1e-9)
        assert binary_pdi_theorem1(p, q, t_pdi).accuracy == pytest.approx(model.prior_accuracy)


def test_mi_at_zero_distortion_is_i_x_y():
    model = BinaryModel.from_xor(0.5, 0.25)
    # I(X; Y) = 1 - h(0.25) bits for the xor model with p = 1/2
    h = -(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75))
    for solve in (binary_mi_pdd_optimum, binary_mi_pdi_optimum):
        assert solve(model, 0.0).mutual_information_bits == pytest.approx(1 - h, abs=1e-12)
    assert binary_mutual_information([0.5, 0.5], [0.25, 0.75]) == pytest.approx(1 - h)


@pytest.mark.parametrize("seed", range(4))
def test_mmse_adversary_against_grid_search_of_estimators(seed):
    rng = np.random.default_rng(seed)
    joint = rng.dirichlet(np.ones(3 * 4)).reshape(3, 4)
    yv = rng.normal(size=3)
    adv = mmse_adversary(joint, yv)
    # brute force: for each output the estimate h minimising sum_y P(y, o) (y - h)^2 on a grid
    hs = np.linspace(yv.min(), yv.max(), 20001)
    brute = sum(float(((joint[:, o][None, :] * (yv[None, :] - hs[:, None]) ** 2).sum(axis=1))
                      .min()) for o in range(4))
    assert adv.mmse <= brute + 1e-12
    assert adv.mmse >= brute - 1e-6  # grid step 1e-4 of the range: squared gap below 1e-8
    assert adv.mmse <= adv.prior_mmse + 1e-15
    # an output independent of Y: the MMSE is the prior variance
    flat = np.outer([0.2, 0.3, 0.5], [0.5, 0.5])
    ind = mmse_adversary(flat, [0, 1, 2])
    # Var(Y) = E[Y^2] - E[Y]^2 = (0.3 + 2.0) - 1.3^2 = 0.61
    assert ind.mmse == pytest.approx(0.61) and ind.prior_mmse == pytest.approx(0.61)


def test_mmse_two_gaussians_against_mpmath():
    for pi1, means, sds in ((0.5, (-3.0, 3.0), (1.0, 1.0)), (0.75, (-1.0, 2.0), (2.0, 1.0)),
                            (0.3, (0.0, 0.5), (1.0, 1.5))):
        got = mmse_two_gaussians(pi1, means, sds)
        with mpmath.workdps(30):
            def f(x, pi1=pi1, means=means, sds=sds):
                a = (1 - pi1) * mpmath.npdf(x, means[0], sds[0])
                b = pi1 * mpmath.npdf(x, means[1], sds[1])
                return a * b / (a + b)
            ref = mpmath.quad(f, [-mpmath.inf, *sorted(means), mpmath.inf])
        assert got == pytest.approx(float(ref), rel=1e-8, abs=1e-14)
        assert 0 <= got <= pi1 * (1 - pi1)


def test_binary_privatize_frequencies_and_record():
    n = 4000
    rng = random.Random(5)
    x = [1] * n
    rel = binary_privatize((0.7, 0.9), x, seed=rng)
    kept = sum(rel.values) / n
    assert abs(kept - 0.9) <= 5 * math.sqrt(0.9 * 0.1 / n)
    assert rel.seed is None and not rel.secure
    pdd = binary_privatize((1.0, 1.0, 0.0, 1.0), [1, 1, 0], [0, 1, 0], seed=3)
    assert pdd.values == (0, 1, 0) and pdd.seed == 3
    assert binary_privatize((1.0, 1.0), [0, 1]).secure
    with pytest.raises(ParameterError):
        binary_privatize((1.0, 1.0, 1.0, 1.0), [0, 1])
    with pytest.raises(ParameterError):
        binary_privatize((1.0, 1.0), [0, 2])
