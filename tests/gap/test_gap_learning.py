"""[HKCSR17, Alg. 1] (alternating minimax) vs the game-theoretic optima, on reduced problems."""

from __future__ import annotations

import numpy as np
import pytest
from marks import fast_sample

from quiltpriv.errors import ParameterError
from quiltpriv.gap.learning import (
    MinimaxSettings,
    learn_binary_privatizer,
    learn_gaussian_privatizer,
    sample_binary,
    sample_gaussian,
)
from quiltpriv.gap.privatizers import (
    BinaryModel,
    GaussianMixtureModel,
    binary_pdd_optimum,
    binary_pdd_score,
    binary_pdi_optimum,
    gaussian_mechanism_accuracy,
    gaussian_pdd_optimum,
)

# ~1 s each. By default one model, each kind and each constraint once (PDD with the penalty,
# PDI with the augmented Lagrangian); the other six combinations are slow.
_BINARY = [(p, q, kind, constraint) for p, q in [(0.5, 0.25), (0.75, 0.25)]
           for kind in ["PDD", "PDI"] for constraint in ["penalty", "augmented_lagrangian"]]


@pytest.mark.parametrize(("p", "q", "kind", "constraint"), fast_sample(_BINARY, (0, 3),
                                                                       unpack=True))
def test_binary_learned_within_003_of_theory(p, q, kind, constraint):
    model = BinaryModel.from_xor(p, q)
    x, y = sample_binary(model, 4000, seed=11)
    optimum = binary_pdd_optimum if kind == "PDD" else binary_pdi_optimum
    for d in (0.1, 0.3):
        res = learn_binary_privatizer(x, y, d, kind=kind, constraint=constraint,
                                      settings=MinimaxSettings.for_constraint(
                                          constraint, iterations=1500),
                                      model=model, seed=3)
        theory = optimum(model, d).accuracy
        assert res.distortion <= d + 1e-12
        # Feasible, so it cannot beat the optimum; learned within 0.03 (paper: ~3 %).
        assert theory - 1e-9 <= res.accuracy <= theory + 0.03
        flips = res.mechanism if kind == "PDD" else (res.mechanism[0],) * 2 + (
            res.mechanism[1],) * 2
        card, dist = binary_pdd_score(model, flips)
        assert card.map_accuracy == pytest.approx(res.accuracy, abs=1e-15)


# ~1.4 s each: one by default (the binary tests above run both constraints), three slow.
_GAUSSIAN = [(p, s0, constraint) for p, s0 in [(0.5, 1.0), (0.75, 2.0)]
             for constraint in ["penalty", "augmented_lagrangian"]]


@pytest.mark.parametrize(("p", "s0", "constraint"), fast_sample(_GAUSSIAN, 1, unpack=True))
def test_gaussian_learned_within_006_of_theory(p, s0, constraint):
    model = GaussianMixtureModel(p, 3.0, sigma0=s0, sigma1=1.0)
    x, y = sample_gaussian(model, 8000, seed=5)
    for d in (1.0, 5.0):
        res = learn_gaussian_privatizer(x, y, d, constraint=constraint,
                                        settings=MinimaxSettings.for_constraint(
                                            constraint, iterations=2000),
                                        model=model, seed=2)
        theory = gaussian_pdd_optimum(model, d).accuracy
        assert res.distortion <= d * (1 + 1e-12)
        assert res.accuracy == pytest.approx(gaussian_mechanism_accuracy(model, res.mechanism))
        # The searched optimum is achievable, the learned one feasible: it cannot be much lower.
        assert theory - 1e-4 <= res.accuracy <= theory + 0.06


def test_learning_is_reproducible_and_records_its_seed():
    model = BinaryModel.from_xor(0.5, 0.25)
    x, y = sample_binary(model, 1000, seed=0)
    settings = MinimaxSettings(iterations=200)
    a = learn_binary_privatizer(x, y, 0.2, settings=settings, seed=9)
    b = learn_binary_privatizer(x, y, 0.2, settings=settings, seed=9)
    assert a == b and a.seed == 9
    c = learn_binary_privatizer(x, y, 0.2, settings=settings)
    assert isinstance(c.seed, int)
    assert learn_binary_privatizer(x, y, 0.2, settings=settings, seed=c.seed) == c


def test_gaussian_without_model_fits_the_data():
    model = GaussianMixtureModel(0.5, 3.0)
    x, y = sample_gaussian(model, 4000, seed=1)
    res = learn_gaussian_privatizer(x + 10.0, y, 3.0, settings=MinimaxSettings(iterations=800),
                                    seed=1)
    # Evaluated against the fitted (centred) model: close to the true-model optimum.
    assert res.accuracy == pytest.approx(gaussian_pdd_optimum(model, 3.0).accuracy, abs=0.06)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: learn_binary_privatizer([0, 1, 2], [0, 1, 1], 0.1), "0/1"),
        (lambda: learn_binary_privatizer([0, 1], [0, 1, 1], 0.1), "same length"),
        (lambda: learn_binary_privatizer([0, 1], [1, 1], 0.1), "one value"),
        (lambda: learn_binary_privatizer([0, 1], [0, 1], 0.1, kind="X"), "kind"),
        (lambda: learn_binary_privatizer([0, 1], [0, 1], 0.1, constraint="X"), "constraint"),
        (lambda: learn_binary_privatizer([0, 1], [0, 1], -1), "distortion budget"),
        (lambda: learn_binary_privatizer([0, 1], [0, 1], 0.1, seed=-1), "seed"),
        (lambda: learn_gaussian_privatizer([0.0, 1.0, np.nan], [0, 1, 1], 1.0), "finite"),
        (lambda: learn_gaussian_privatizer([0.0, 1.0, 2.0], [0, 1, 1], 1.0), "two rows"),
        (lambda: MinimaxSettings(iterations=0), "iterations"),
        (lambda: MinimaxSettings.for_constraint("lagrange"), "constraint"),
        (lambda: MinimaxSettings(rho_growth=0.5), "rho_growth"),
        (lambda: MinimaxSettings(average_fraction=0.0), "average_fraction"),
    ],
)
def test_rejects_bad_input(call, match):
    with pytest.raises(ParameterError, match=match):
        call()
