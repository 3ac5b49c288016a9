"""Wasserstein Mechanism: the paper's Examples 2 and 3, provable suprema, bad inputs."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.group_dp import group_laplace
from quiltpriv.mechanisms.wasserstein import (
    Interval,
    two_binary_dataset_law,
    two_binary_dataset_mechanism,
    two_binary_distributional_law,
    two_binary_distributional_mechanism,
    wasserstein_mechanism,
)
from quiltpriv.utils.distances import wasserstein_inf_line

TABLE1_G0 = [0.0256, 0.1536, 0.3456, 0.3456, 0.1296]
TABLE1_G4 = [0.1296, 0.3456, 0.3456, 0.1536, 0.0256]
TABLE2_08 = [0.0983, 0.3091, 0.3643, 0.1908, 0.0375]
TABLE2_02 = [0.0375, 0.1908, 0.3643, 0.3091, 0.0983]


def test_example2_table():
    _, g0 = two_binary_dataset_law(4, 0, 0.4, 0.6)
    _, g4 = two_binary_dataset_law(4, 4, 0.4, 0.6)
    assert [round(float(v), 4) for v in g0] == TABLE1_G0
    assert [round(float(v), 4) for v in g4] == TABLE1_G4
    assert sum(g0) == 1 and all(isinstance(v, Fraction) for v in g0)


@pytest.mark.parametrize(("lo", "hi", "w"), [(0.4, 0.6, 1), (0.3, 0.7, 2), (0, 1, 4)])
def test_example2_interval_theta(lo, hi, w):
    res = two_binary_dataset_mechanism(4, Interval(lo, hi), Interval(lo, hi), epsilon=0.5)
    assert res.sensitivity == w and res.sensitivity_lower == w
    assert res.exact
    assert res.scale == pytest.approx(w / 0.5)
    assert res.delta == 0.0
    assert any("located provably" in n for n in res.notes)


def test_example2_worst_case_is_the_papers():
    res = two_binary_dataset_mechanism(4, 0.4, 0.6, epsilon=1.0, secrets=[0, 4])
    assert res.sensitivity == 1 and "g=0 vs g=4" in res.worst_case


def test_example2_group_dp_baseline_is_4():
    # F = count of X1 over 4 records: per-record sensitivity 1
    assert group_laplace(1, 4, 1.0).scale == 4.0
    full = two_binary_dataset_mechanism(4, Interval(0, 1), Interval(0, 1), 1.0)
    assert full.scale == group_laplace(1, 4, 1.0).scale  # the paper's remark


def test_example3_table_and_w():
    _, a = two_binary_distributional_law(4, 0.8, 0.4, 0.6)
    _, b = two_binary_distributional_law(4, 0.2, 0.4, 0.6)
    assert [round(float(v), 4) for v in a] == TABLE2_08
    assert [round(float(v), 4) for v in b] == TABLE2_02
    res = two_binary_distributional_mechanism(4, Interval(0.2, 0.8), 0.4, 0.6, epsilon=1.0)
    assert res.sensitivity == 1 and res.exact and res.scale == 1.0
    fin = two_binary_distributional_mechanism(4, [0.2, 0.5, 0.8], 0.4, 0.6, epsilon=1.0)
    assert fin.sensitivity == 1


def test_paper_tables_as_floats_through_generic_mechanism():
    laws = {"g=0": (range(5), TABLE1_G0), "g=4": (range(5), TABLE1_G4)}
    res = wasserstein_mechanism(laws, epsilon=2.0)
    assert res.sensitivity == 1 and res.scale == 0.5 and res.exact
    laws3 = {"0.8": (range(5), TABLE2_08), "0.2": (range(5), TABLE2_02)}
    assert wasserstein_mechanism(laws3, 1.0).sensitivity == 1


def _grid_max_example2(n, box1, box2, steps):
    best = Fraction(0)
    for p1 in np.linspace(*box1, steps):
        for p2 in np.linspace(*box2, steps):
            laws = [two_binary_dataset_law(n, a, float(p1), float(p2)) for a in range(n + 1)]
            for la, lb in itertools.combinations(laws, 2):
                best = max(best, Fraction(wasserstein_inf_line(la[0], la[1], lb[0], lb[1])))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_branch_and_bound_is_sound_against_a_grid(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    b1 = sorted(np.round(rng.uniform(0, 1, 2), 2))
    b2 = sorted(np.round(rng.uniform(0, 1, 2), 2))
    res = two_binary_dataset_mechanism(n, Interval(*b1), Interval(*b2), 1.0)
    grid = _grid_max_example2(n, b1, b2, 7)
    assert res.sensitivity >= grid  # never below any attained value
    assert res.sensitivity_lower >= grid or not res.exact


def test_identical_laws_need_no_noise():
    # p1 = p2: F is independent of g; exact arithmetic gives W = 0 (no float slivers)
    res = two_binary_dataset_mechanism(6, 0.45, 0.45, 1.0)
    assert res.sensitivity == 0 and res.scale == 0.0
    out = res.release(3.0, seed=1)
    assert out.value == 3.0


def test_grid_estimate_is_flagged():
    thetas = [{a: two_binary_dataset_law(4, a, p, 1 - p) for a in (0, 4)} for p in (0.4, 0.5)]
    res = wasserstein_mechanism(thetas, 1.0, theta_is_grid=True)
    assert not res.exact and "grid estimate" in res.notes[0]


def test_release_uses_laplace_noise():
    res = two_binary_dataset_mechanism(4, 0.4, 0.6, 1.0)
    vals = [res.release(2.0, seed=s).value for s in range(300)]
    # Laplace(1): mean 0, mean absolute deviation 1 (loose bounds, seeded)
    assert abs(np.mean(vals) - 2.0) < 0.3
    assert 0.8 < np.mean(np.abs(np.array(vals) - 2.0)) < 1.2


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: two_binary_dataset_mechanism(4, 0.4, 0.6, 1.0, secrets=[]), "empty"),
        (lambda: two_binary_dataset_mechanism(4, 0.4, 0.6, 1.0, secrets=[0, 5]),
         "probability zero"),
        (lambda: two_binary_dataset_mechanism(4, Interval(0.6, 0.4), 0.5, 1.0), "empty interval"),
        (lambda: two_binary_dataset_mechanism(4, 1.2, 0.5, 1.0), r"\[0, 1\]"),
        (lambda: two_binary_dataset_mechanism(4, 0.4, 0.6, 0.0), "epsilon"),
        (lambda: two_binary_distributional_mechanism(4, [], 0.4, 0.6, 1.0), "empty"),
        (lambda: wasserstein_mechanism({}, 1.0), "empty"),
        (lambda: wasserstein_mechanism([], 1.0), "Theta is empty"),
        (lambda: wasserstein_mechanism({"a": ([0], [1]), "b": ([1], [1])}, 1.0,
                                       secret_probabilities=[{"a": 0.5, "b": 0.0}]),
         "probability 0.0"),
        (lambda: wasserstein_mechanism({"a": ([0], [1]), "b": ([1], [1])}, 1.0,
                                       pairs=[("a", "typo")]), "no law under any theta"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ParameterError, match=match):
        call()
