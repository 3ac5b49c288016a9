"""The alpha-loss adversary and Arimoto-MI privatizers of GAP ([HKCSR17, Sec. 2.2, Eq. (7)-(8)]).

References: the closed forms of the alpha = 1 (Shannon) and alpha = inf (MAP) ends, computed by
the modules that implement those ends independently; brute force over soft decision rules and
over dense grids of mechanisms; an independent mutual-information formula for the Gaussian
mixture (mixture entropy minus the closed-form conditional entropies).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize

from quiltpriv.audit.adversary import score_finite, score_gaussian
from quiltpriv.errors import ParameterError
from quiltpriv.gap.alpha_loss import (
    alpha_loss_adversary,
    arimoto_mutual_information,
    binary_alpha_pdd_optimum,
    binary_alpha_pdi_optimum,
    gaussian_alpha_pdd_optimum,
    gaussian_arimoto_mutual_information,
)
from quiltpriv.gap.information import binary_mi_pdd_optimum, binary_mi_pdi_optimum
from quiltpriv.gap.privatizers import (
    BinaryModel,
    GaussianMixtureModel,
    GaussianNoisePrivatizer,
    binary_pdd_closed_form,
    binary_pdi_optimum,
    gaussian_theorem2_pdi,
    gaussian_theorem4_pdd_shift_noise,
)

LN2 = math.log(2)


def _random_joint(rng: np.random.Generator, ny: int, no: int) -> np.ndarray:
    p = rng.dirichlet(np.ones(ny * no)).reshape(ny, no)
    return p / p.sum()


def _alpha_loss(beliefs: np.ndarray, p: np.ndarray, alpha: float) -> float:
    """Expected alpha-loss of soft rule ``beliefs[o][y]`` straight from Eq. (7)."""
    loss = 0.0
    for o in range(p.shape[1]):
        for y in range(p.shape[0]):
            if p[y, o] > 0:
                q = beliefs[o][y]
                loss += p[y, o] * alpha / (alpha - 1) * (1 - q ** (1 - 1 / alpha))
    return loss


@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0, 30.0])
def test_tilted_posterior_beats_every_soft_rule(alpha: float) -> None:
    rng = np.random.default_rng(7)
    for _ in range(10):
        p = _random_joint(rng, 3, 4)
        adv = alpha_loss_adversary(p, alpha)
        best = np.array(adv.beliefs)
        assert _alpha_loss(best, p, alpha) == pytest.approx(adv.expected_loss, abs=1e-12)
        for _ in range(200):  # random soft rules never do better
            rule = rng.dirichlet(np.ones(3), size=4)
            assert _alpha_loss(rule, p, alpha) >= adv.expected_loss - 1e-12
        # and a numerical optimiser over the rules never beats it either
        def f(z: np.ndarray, p: np.ndarray = p) -> float:
            rule = np.exp(z.reshape(4, 3))
            return _alpha_loss(rule / rule.sum(axis=1, keepdims=True), p, alpha)

        res = optimize.minimize(f, np.zeros(12), method="BFGS", options={"gtol": 1e-10})
        assert res.fun >= adv.expected_loss - 1e-12


def test_ends_of_the_family_are_shannon_and_map() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        p = _random_joint(rng, 2 + int(rng.integers(3)), 2 + int(rng.integers(4)))
        card = score_finite(p)
        shannon = alpha_loss_adversary(p, 1.0)
        assert shannon.mutual_information / LN2 == pytest.approx(card.mutual_information_bits,
                                                                 abs=1e-12)
        near_one = alpha_loss_adversary(p, 1 + 1e-7)
        assert near_one.mutual_information == pytest.approx(shannon.mutual_information, abs=1e-6)
        assert near_one.expected_loss == pytest.approx(shannon.expected_loss, abs=1e-6)
        inf = alpha_loss_adversary(p, math.inf)
        assert 1 - inf.expected_loss == pytest.approx(card.map_accuracy, abs=1e-15)
        assert inf.mutual_information == pytest.approx(
            math.log(card.map_accuracy / card.prior_accuracy), abs=1e-12)
        big = alpha_loss_adversary(p, 1e4)
        assert big.expected_loss == pytest.approx(inf.expected_loss, abs=2e-3)


def test_arimoto_information_is_zero_iff_independent_and_processing_lowers_it() -> None:
    rng = np.random.default_rng(3)
    for alpha in (1.0, 1.5, 3.0, math.inf):
        py, po = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(4))
        assert arimoto_mutual_information(np.outer(py, po), alpha) == pytest.approx(0, abs=1e-12)
        for _ in range(20):
            p = _random_joint(rng, 3, 4)
            k = rng.dirichlet(np.ones(2), size=4)  # post-processing channel o -> o'
            assert (arimoto_mutual_information(p @ k, alpha)
                    <= arimoto_mutual_information(p, alpha) + 1e-12)


def test_bad_alpha_and_joint_are_refused() -> None:
    for bad in (0.5, float("nan"), -1, "2", True):
        with pytest.raises(ParameterError, match="alpha"):
            alpha_loss_adversary([[0.5, 0.5]], bad)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="sums to"):
        alpha_loss_adversary([[0.5, 0.6]], 2.0)


# ------------------------------------------------------------------------- binary data model

MODELS = [BinaryModel.from_xor(0.5, 0.25), BinaryModel.from_xor(0.75, 0.25),
          BinaryModel.from_joint([[0.1, 0.35], [0.4, 0.15]])]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("d", [0.0, 0.05, 0.15, 0.3])
def test_binary_map_end_is_the_linear_programme(model: BinaryModel, d: float) -> None:
    pdd = binary_alpha_pdd_optimum(model, d, math.inf)
    assert pdd.map_accuracy == pytest.approx(binary_pdd_closed_form(model, d), abs=1e-8)
    pdi = binary_alpha_pdi_optimum(model, d, math.inf)
    assert pdi.map_accuracy == pytest.approx(binary_pdi_optimum(model, d).accuracy, abs=1e-8)
    assert pdd.distortion <= d + 1e-9 and pdi.distortion <= d + 1e-9


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("d", [0.05, 0.15])
def test_binary_shannon_end_is_the_mi_privatizer(model: BinaryModel, d: float) -> None:
    assert (binary_alpha_pdd_optimum(model, d, 1.0).mutual_information / LN2
            == pytest.approx(binary_mi_pdd_optimum(model, d).mutual_information_bits, abs=1e-8))
    assert (binary_alpha_pdi_optimum(model, d, 1.0).mutual_information / LN2
            == pytest.approx(binary_mi_pdi_optimum(model, d).mutual_information_bits, abs=1e-8))


def _grid_min(model: BinaryModel, d: float, alpha: float, pdi: bool, n: int = 41) -> float:
    """Least I_alpha^A over a dense grid of all flip probabilities within the budget.

    Written from the definitions, vectorised over the grid: ``H_alpha(Y) - alpha/(1 - alpha)
    log sum_o ||P(., o)||_alpha`` (Shannon's ``H(Y) - H(Y | O)`` at alpha = 1).
    """
    p = model.array  # p[x, y]
    g = np.linspace(0.0, 1.0, n)
    if pdi:
        s0, s1 = (v.ravel() for v in np.meshgrid(g, g, indexing="ij"))
        s = np.stack([s0, s0, s1, s1], axis=1).reshape(-1, 2, 2)
    else:
        s = np.stack([v.ravel() for v in np.meshgrid(g, g, g, g, indexing="ij")],
                     axis=1).reshape(-1, 2, 2)  # s[k, x, y] = P(X^ = x | X = x, Y = y)
    s = s[(p * (1 - s)).sum(axis=(1, 2)) <= d]
    out0 = p[0] * s[:, 0] + p[1] * (1 - s[:, 1])  # P(Y = y, X^ = 0), shape (k, y)
    out1 = p[0] * (1 - s[:, 0]) + p[1] * s[:, 1]
    joint = np.stack([out0, out1], axis=2)  # [k, y, o]
    py = p.sum(axis=0)
    if alpha == 1:
        po = joint.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(joint > 0, joint * np.log(joint / (py[None, :, None] * po)), 0.0)
        return float(terms.sum(axis=(1, 2)).min())
    norms = ((joint ** alpha).sum(axis=1) ** (1 / alpha)).sum(axis=1)
    h = math.log((py ** alpha).sum()) / (1 - alpha)
    return float((h - alpha / (1 - alpha) * np.log(norms)).min())


@pytest.mark.parametrize("alpha", [1.0, 2.0, 8.0])
def test_binary_optima_match_a_dense_grid(alpha: float) -> None:
    model, d = MODELS[2], 0.12
    pdd = binary_alpha_pdd_optimum(model, d, alpha)
    assert pdd.mutual_information <= _grid_min(model, d, alpha, pdi=False, n=31) + 1e-9
    pdi = binary_alpha_pdi_optimum(model, d, alpha)
    grid = _grid_min(model, d, alpha, pdi=True, n=401)
    assert pdi.mutual_information <= grid + 1e-9
    assert pdi.mutual_information >= grid - 2e-3  # the grid's own resolution


# ------------------------------------------------------------------------- Gaussian mixture


def _mi_by_entropies(model: GaussianMixtureModel, mech: GaussianNoisePrivatizer) -> float:
    """I(X^; Y) = h(X^) - sum_y P(y) h(X^ | y), the conditional entropies in closed form."""
    (m0, s0), (m1, s1) = mech.output_laws(model)
    w = (1 - model.prior1, model.prior1)

    def dens(x: float) -> float:
        return sum(wy * math.exp(-0.5 * ((x - m) / s) ** 2) / (s * math.sqrt(2 * math.pi))
                   for wy, m, s in zip(w, (m0, m1), (s0, s1), strict=True))

    def neg_f_log_f(x: float) -> float:
        v = dens(x)
        return -v * math.log(v) if v > 0 else 0.0

    lo, hi = min(m0 - 15 * s0, m1 - 15 * s1), max(m0 + 15 * s0, m1 + 15 * s1)
    h_mix, _ = integrate.quad(neg_f_log_f, lo, hi, points=[m0, m1], limit=500, epsabs=1e-13)
    h_cond = sum(wy * 0.5 * math.log(2 * math.pi * math.e * s * s)
                 for wy, s in zip(w, (s0, s1), strict=True))
    return h_mix - h_cond


def test_gaussian_information_against_independent_formulas() -> None:
    rng = np.random.default_rng(5)
    for _ in range(8):
        model = GaussianMixtureModel(float(rng.uniform(0.2, 0.8)), float(rng.uniform(0.5, 3)),
                                     float(rng.uniform(0.5, 2)), float(rng.uniform(0.5, 2)))
        mech = GaussianNoisePrivatizer(*(float(v) for v in rng.uniform(0, 1.5, 4)))
        shannon = gaussian_arimoto_mutual_information(model, mech, 1.0)
        assert shannon == pytest.approx(_mi_by_entropies(model, mech), abs=1e-9)
        (m0, s0), (m1, s1) = mech.output_laws(model)
        card = score_gaussian([1 - model.prior1, model.prior1], [m0, m1], [s0, s1])
        assert shannon / LN2 == pytest.approx(card.mutual_information_bits, abs=1e-9)
        inf = gaussian_arimoto_mutual_information(model, mech, math.inf)
        assert inf == pytest.approx(math.log(card.map_accuracy / card.prior_accuracy),
                                    abs=1e-12)
        # continuous at both ends (Arimoto's I_alpha is not monotone in alpha in general)
        assert gaussian_arimoto_mutual_information(model, mech, 1 + 1e-7) == pytest.approx(
            shannon, abs=1e-5)
        assert gaussian_arimoto_mutual_information(model, mech, 1e4) == pytest.approx(
            inf, abs=2e-3)


def test_gaussian_map_end_reproduces_table_2() -> None:
    # [HKCSR17, Table 2] theory column (p~ = 0.5, mu = 3, s0 = s1 = 1) at D = 2, 5, 8
    model = GaussianMixtureModel(0.5, 3.0)
    for d, paper in ((2, 0.9213), (5, 0.7602), (8, 0.5681)):
        assert gaussian_alpha_pdd_optimum(model, d, math.inf).map_accuracy == pytest.approx(
            paper, abs=5e-4)


@pytest.mark.parametrize("alpha", [1.0, 2.0])
def test_gaussian_search_beats_the_closed_form_mechanisms(alpha: float) -> None:
    model = GaussianMixtureModel(0.75, 3.0)
    for d in (2.0, 5.0):
        opt = gaussian_alpha_pdd_optimum(model, d, alpha)
        assert opt.distortion <= d * (1 + 1e-9)
        assert opt.mutual_information == pytest.approx(
            gaussian_arimoto_mutual_information(model, opt.mechanism, alpha), abs=1e-12)
        closed_forms = (gaussian_theorem2_pdi(model, d),
                        gaussian_theorem4_pdd_shift_noise(model, d))
        for closed in closed_forms:
            assert opt.mutual_information <= gaussian_arimoto_mutual_information(
                model, closed.mechanism, alpha) + 1e-7
