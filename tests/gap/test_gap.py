"""GAP optimal privatizers: [HKCSR17] oracles, the paper's Tables 2-5 theory columns, LP checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from marks import fast_and_full, fast_sample

from quiltpriv.audit.adversary import score_gaussian
from quiltpriv.errors import ParameterError
from quiltpriv.gap.privatizers import (
    BinaryModel,
    GaussianMixtureModel,
    GaussianNoisePrivatizer,
    binary_pdd_closed_form,
    binary_pdd_optimum,
    binary_pdd_score,
    binary_pdi_optimum,
    binary_pdi_score,
    binary_pdi_theorem1,
    gaussian_mechanism_accuracy,
    gaussian_mechanism_score,
    gaussian_pdd_optimum,
    gaussian_theorem2_pdi,
    gaussian_theorem3_pdd_shift,
    gaussian_theorem4_pdd_shift_noise,
    map_accuracy_equal_variance,
)

D_GRID = np.linspace(0.0, 1.0, 41)

# --------------------------------------------------------------------------- binary model


@pytest.mark.parametrize(
    ("p", "q", "pdi", "pdd"),
    [
        # [HKCSR17] oracles: (accuracy line, floor, D where the floor starts)
        (0.5, 0.25, (0.75, 0.5, 0.5, 0.5), (0.75, 1.0, 0.5, 0.25)),
        (0.75, 0.25, (0.75, 0.5, 0.625, 0.25), (0.75, 1.0, 0.625, 0.125)),
    ],
)
def test_binary_oracles(p, q, pdi, pdd):
    model = BinaryModel.from_xor(p, q)
    for d in D_GRID:
        a0, slope, floor, start = pdi
        expected = max(a0 - slope * d, floor)
        assert binary_pdi_theorem1(p, q, d).accuracy == pytest.approx(expected, abs=1e-12)
        assert binary_pdi_optimum(model, d).accuracy == pytest.approx(expected, abs=1e-9)
        if d >= start:
            assert expected == floor
        a0, slope, floor, start = pdd
        expected = max(a0 - slope * d, floor)
        assert binary_pdd_optimum(model, d).accuracy == pytest.approx(expected, abs=1e-9)
        assert binary_pdd_closed_form(model, d) == pytest.approx(expected, abs=1e-12)
        if d >= start:
            assert expected == floor


# The first 10 of the 40 seeded joints by default, all 40 slow.
@pytest.mark.parametrize("joints", fast_and_full(10, 40))
def test_binary_lp_matches_closed_form_on_random_joints(joints):
    rng = np.random.default_rng(3)
    for _ in range(joints):
        model = BinaryModel.from_joint(rng.dirichlet(np.ones(4) * 0.8).reshape(2, 2))
        for d in D_GRID[::4]:
            opt = binary_pdd_optimum(model, d)
            assert opt.accuracy == pytest.approx(binary_pdd_closed_form(model, d), abs=1e-9)
            assert opt.distortion <= d + 1e-9
            card, dist = binary_pdd_score(model, opt.mechanism)
            assert card.map_accuracy == pytest.approx(opt.accuracy, abs=1e-15)
            assert dist == pytest.approx(opt.distortion, abs=1e-15)


# A 6^4 grid by default (a sub-grid of the 11^4 one, which is slow: ~3 s).
@pytest.mark.parametrize("points", fast_and_full(6, 11))
def test_binary_pdd_lp_beats_brute_force_grid(points):
    # The LP optimum is no worse than any mechanism on a grid of flips within budget.
    model = BinaryModel.from_xor(0.6, 0.2)
    axis = np.linspace(0, 1, points)
    for d in (0.05, 0.15, 0.3):
        best = 1.0
        for s in np.array(np.meshgrid(axis, axis, axis, axis)).reshape(4, -1).T:
            card, dist = binary_pdd_score(model, s)
            if dist <= d:
                best = min(best, card.map_accuracy)
        assert binary_pdd_optimum(model, d).accuracy <= best + 1e-12


# A 5 x 5 grid of (p, q) by default (a sub-grid of the 9 x 9 one, which is slow).
@pytest.mark.parametrize("points", [5, pytest.param(9, marks=pytest.mark.slow)])
def test_theorem1_mechanism_is_optimal_over_grid_of_p_q_d(points):
    for p in np.linspace(0.0, 1.0, points):
        for q in np.linspace(0.0, 1.0, points):
            model = BinaryModel.from_xor(p, q)
            for d in D_GRID[::5]:
                thm = binary_pdi_theorem1(p, q, d)
                card, dist = binary_pdi_score(model, thm.mechanism)
                assert dist <= d + 1e-12
                # The symmetric flip achieves the formula, and the formula is the LP optimum.
                assert card.map_accuracy == pytest.approx(thm.accuracy, abs=1e-12)
                assert binary_pdi_optimum(model, d).accuracy == pytest.approx(thm.accuracy,
                                                                             abs=1e-9)
                assert binary_pdd_optimum(model, d).accuracy <= thm.accuracy + 1e-9


def test_binary_rejects_bad_input():
    with pytest.raises(ParameterError, match="sums to"):
        BinaryModel.from_joint([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ParameterError, match="2 x 2"):
        BinaryModel.from_joint([0.25] * 4)
    with pytest.raises(ParameterError, match="q"):
        BinaryModel.from_xor(0.5, 1.5)
    with pytest.raises(ParameterError, match="distortion budget"):
        binary_pdd_optimum(BinaryModel.from_xor(0.5, 0.25), -0.1)
    with pytest.raises(ParameterError, match="4 probabilities"):
        binary_pdd_score(BinaryModel.from_xor(0.5, 0.25), [1, 1])
    with pytest.raises(ParameterError, match=r"\[0, 1\]"):
        binary_pdi_score(BinaryModel.from_xor(0.5, 0.25), [1.2, 1])


# --------------------------------------------------------------------------- Gaussian model

THM2 = [.9987, .9831, .9584, .9332, .9101, .8897, .8716, .8556, .8413, .8286]  # D = 0..9
THM3 = [.9772, .9436, .8976, .8413, .7775, .7090, .6384, .5681]  # D = 1..8
TABLES = {  # theory columns, D = 1..9 ([HKCSR17]); Table 5 D = 6 is disputed
    "Table 2": (0.5, 1.0, [.9693, .9213, .8682, .8144, .7602, .7035, .6384, .5681, .5000]),
    "Table 3": (0.75, 1.0, [.9630, .9176, .8647, .8023, .7503, .7500, .7500, .7500, .7500]),
    "Table 4": (0.5, 2.0, [.9105, .8539, .8011, .7513, .7043, .6600, .6185, .5803, .5457]),
    "Table 5": (0.75, 2.0, [.9328, .8891, .8481, .8120, .7824, None, .7500, .7500, .7500]),
}


def test_theorem2_and_3_oracles():
    model = GaussianMixtureModel(0.5, 3.0)
    for d, v in enumerate(THM2):
        opt = gaussian_theorem2_pdi(model, d)
        assert opt.accuracy == pytest.approx(v, abs=5e-5)
        assert opt.mechanism.beta0 == 0 and opt.mechanism.gamma0 == pytest.approx(math.sqrt(d))
    for d, v in enumerate(THM3, start=1):
        opt = gaussian_theorem3_pdd_shift(model, d)
        assert opt.accuracy == pytest.approx(v, abs=5e-5)
        assert opt.mechanism.beta0 == pytest.approx(math.sqrt(d))
        assert opt.distortion == pytest.approx(d)


def test_theorem3_unequal_prior_shifts_and_cap():
    model = GaussianMixtureModel(0.75, 3.0)
    opt = gaussian_theorem3_pdd_shift(model, 2.0)
    assert opt.mechanism.beta0 == pytest.approx(math.sqrt(0.75 * 2 / 0.25))
    assert opt.mechanism.beta1 == pytest.approx(math.sqrt(0.25 * 2 / 0.75))
    # Past D = 4 mu^2 p(1-p) the shift is capped at 2 mu: the adversary is at the prior.
    big = gaussian_theorem3_pdd_shift(model, 20.0)
    assert big.mechanism.beta0 + big.mechanism.beta1 == pytest.approx(6.0)
    assert big.accuracy == pytest.approx(0.75, abs=1e-15)


def test_theorem4_is_table2_for_equal_priors_and_beats_theorem3():
    model = GaussianMixtureModel(0.5, 3.0)
    for d, v in enumerate(TABLES["Table 2"][2], start=1):
        t4 = gaussian_theorem4_pdd_shift_noise(model, d)
        assert t4.accuracy == pytest.approx(v, abs=1e-4)
        assert t4.distortion == pytest.approx(d)
        assert t4.accuracy <= gaussian_theorem3_pdd_shift(model, d).accuracy + 1e-15
    assert "interior" in gaussian_theorem4_pdd_shift_noise(model, 1).method
    assert "boundary" in gaussian_theorem4_pdd_shift_noise(model, 7).method


def test_equal_variance_formula_agrees_with_exact_regions():
    for p in (0.1, 0.5, 0.75):
        for alpha in (0.0, 0.3, 2.0, 6.0):
            card = score_gaussian([1 - p, p], [-alpha / 2, alpha / 2], [1.0, 1.0])
            assert map_accuracy_equal_variance(p, alpha) == pytest.approx(card.map_accuracy,
                                                                          abs=1e-13)


# The first 15 of the 60 seeded cases by default, all 60 slow (~2 s).
@pytest.mark.parametrize("cases", fast_and_full(15, 60))
def test_vectorised_two_gaussian_accuracy_matches_scorecard(cases):
    rng = np.random.default_rng(5)
    for _ in range(cases):
        model = GaussianMixtureModel(float(rng.uniform(0.05, 0.95)), float(rng.uniform(0, 4)),
                                     float(rng.uniform(0.3, 3)), float(rng.uniform(0.3, 3)))
        mech = GaussianNoisePrivatizer(*rng.normal(0, 2, 2), *rng.uniform(0, 2, 2))
        if rng.random() < 0.3:  # equal output variances: the linear case
            mech = GaussianNoisePrivatizer(mech.beta0, mech.beta1, 0.0, 0.0)
            model = GaussianMixtureModel(model.prior1, model.mu, model.sigma1, model.sigma1)
        assert gaussian_mechanism_accuracy(model, mech) == pytest.approx(
            gaussian_mechanism_score(model, mech).map_accuracy, abs=1e-12)


# Table 4 (largest gap to the paper) by default, the others slow (~1.2 s of CPU each).
@pytest.mark.parametrize("table", fast_sample(list(TABLES), (2,)))
def test_general_pdd_search_reproduces_theory_columns(table):
    p, s0, column = TABLES[table]
    model = GaussianMixtureModel(p, 3.0, sigma0=s0, sigma1=1.0)
    for d, v in enumerate(column, start=1):
        opt = gaussian_pdd_optimum(model, d)
        assert opt.distortion == pytest.approx(d, rel=1e-12)  # on the boundary
        assert opt.accuracy == pytest.approx(gaussian_mechanism_accuracy(model, opt.mechanism))
        if v is not None:
            # The paper's column is itself a grid search, 4 decimals; ours agrees to 2e-4
            # (largest gap 1.7e-4, Table 4 D = 9, where our refined search is lower).
            assert opt.accuracy == pytest.approx(v, abs=2e-4)


def test_table5_disputed_cell_is_above_the_prior():
    # The paper prints 0.7500 at D = 6; the search finds no mechanism below ~0.7606 (the paper's
    # own learned privatizer reached 0.7606 there too). Check that the searched value is a
    # genuine optimum-candidate: a finer search does not go lower by more than 1e-6.
    model = GaussianMixtureModel(0.75, 3.0, sigma0=2.0, sigma1=1.0)
    coarse = gaussian_pdd_optimum(model, 6.0)
    fine = gaussian_pdd_optimum(model, 6.0, grid=41, refine=12)
    assert coarse.accuracy == pytest.approx(0.7606, abs=1e-4)
    assert fine.accuracy >= coarse.accuracy - 1e-6


def test_general_search_never_worse_than_theorems():
    for p in (0.5, 0.75):
        model = GaussianMixtureModel(p, 3.0)
        for d in (0.5, 2.0, 5.0):
            gen = gaussian_pdd_optimum(model, d).accuracy
            assert gen <= gaussian_theorem4_pdd_shift_noise(model, d).accuracy + 1e-9
            assert gen <= gaussian_theorem2_pdi(model, d).accuracy + 1e-9


def test_gaussian_rejects_bad_input():
    with pytest.raises(ParameterError, match="prior1"):
        GaussianMixtureModel(1.0, 3.0)
    with pytest.raises(ParameterError, match="sigma0"):
        GaussianMixtureModel(0.5, 3.0, sigma0=0.0)
    with pytest.raises(ParameterError, match="sigma0 == sigma1"):
        gaussian_theorem4_pdd_shift_noise(GaussianMixtureModel(0.5, 3.0, 2.0, 1.0), 1.0)
    with pytest.raises(ParameterError, match="distortion budget"):
        gaussian_pdd_optimum(GaussianMixtureModel(0.5, 3.0), float("nan"))
