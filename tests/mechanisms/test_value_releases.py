"""Every mechanism's low-level ``result.release(value)`` returns the one release shape.

Issue 32 ("one release shape"): group DP, Wasserstein (given laws and on a network), MQM,
APGM (scalar and vector), APGMnG and the distribution privacy mechanisms return a
:class:`~quiltpriv.mechanisms.protocol.ReleaseRecord` (a
:class:`~quiltpriv.mechanisms.protocol.VectorRelease` for a vector) made by the one release
flow: the record names the mechanism, its scale or sigma, its epsilon and delta, whether the
noise was seeded, and a ledger holds exactly that record. The values are those of the path
these methods took before (the noise module called directly with the same arguments), seed
by seed.
"""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
import schema_check

from quiltpriv.distribution import distribution_privacy as dp
from quiltpriv.distribution.vector_mechanisms import (
    coupling_bounds_mechanism,
    dirm_laplace_directions,
)
from quiltpriv.errors import ParameterError, SeededNoiseWarning, ZeroNoiseWarning
from quiltpriv.mechanisms import noise
from quiltpriv.mechanisms.apgm import APGMNonGaussianResult, APGMResult
from quiltpriv.mechanisms.group_dp import group_gaussian, group_laplace
from quiltpriv.mechanisms.mqm import markov_quilt_mechanism
from quiltpriv.mechanisms.network_wasserstein import network_wasserstein
from quiltpriv.mechanisms.protocol import ReleaseRecord, VectorRelease
from quiltpriv.mechanisms.wasserstein import WassersteinResult
from quiltpriv.model.time_series import markov_chain
from quiltpriv.releases import ledger as ledger_mod

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "release-record.schema.json").read_text())
SEEDS = (0, 1, 2, 3)


def _apgm(dimension: int) -> APGMResult:
    return APGMResult(0.04, 0.2, 1.0, 1e-6, {"a": 0.1}, {"a": 0.0}, {"a": 0.04}, "a",
                      dimension, "analytic")


def _old_gaussian_vector(res, sigma, sens):
    def old(v, seed):
        return [o.value for o in noise.gaussian_release_vector(np.asarray(v), sigma, sens,
                                                               seed=seed)]
    return old


def cases():
    """name -> (result, value, mechanism, noise, scale, epsilon, delta, old path)."""
    gl = group_laplace(1.0, 10, 0.7)
    gg = group_gaussian(1.0, 10, 0.7, 1e-5)
    w = WassersteinResult(2.5, 1.25, 1.0, 0.5, 0.0, True, "x")
    theta = markov_chain(6, [[0.8, 0.2], [0.3, 0.7]], [0.5, 0.5])
    mqm = markov_quilt_mechanism(theta, 2.0, lipschitz=1.0)
    a1, a3 = _apgm(1), _apgm(3)
    ng = APGMNonGaussianResult(a1, 0.25, 0.01, 1e-4, 1.5, 1e-3, {}, ())
    expl = dp.expm_laplace({1: [0.15, 1.0], 2: [0.25, 1.05]}, 1.0)
    dirl = dp.dirm_laplace({1: [0.0, 0.0], 2: [0.1, 0.1]}, 1.0)
    eig = dp.eigm_gaussian({1: [0.15, 1.0], 2: [0.25, 1.05]},
                           {1: np.diag([0.01, 0.02]), 2: np.diag([0.01, 0.02])}, 1.0, 1e-3)
    coord = coupling_bounds_mechanism([0.1, 0.3], 1.0)
    dirs = dirm_laplace_directions({1: [0.0, 0.0, 0.0], 2: [0.1, 0.0, 0.05],
                                    3: [0.0, 0.1, 0.0]}, 1.0)
    d_scale, d_sens = dirl._direction_l1_plan()
    s_scale, s_sens = dirs._direction_l1_plan()

    def lap(scale, sens):
        return lambda v, seed: noise.laplace_release(float(v), scale, sens, seed=seed).value

    def gauss(sigma, sens):
        return lambda v, seed: noise.gaussian_release(float(v), sigma, sens, seed=seed).value

    def lap_vec(scale, sens, weights=None):
        def old(v, seed):
            x = np.asarray(v, dtype=float) * (1 if weights is None else np.asarray(weights))
            out = [o.value for o in noise.laplace_release_vector(x, scale, sens,
                                                                 seed=noise.make_rng(seed))]
            return list(np.asarray(out) / (1 if weights is None else np.asarray(weights)))
        return old

    return {
        "group DP Laplace": (gl, 3.3, "group DP Laplace", "laplace", gl.scale, 0.7, 0.0,
                             lap(gl.scale, gl.group_sensitivity)),
        "group DP Gaussian": (gg, 3.3, "group DP Gaussian", "gaussian", gg.scale, 0.7, 1e-5,
                              gauss(gg.scale, gg.group_sensitivity)),
        "Wasserstein": (w, 0.3, "Wasserstein (given laws)", "laplace", 2.5, 0.5, 0.0,
                        lap(2.5, 1.25)),
        "MQM": (mqm, 3.0, "MQM", "laplace", mqm.scale, 2.0, 0.0,
                lap(mqm.scale, mqm.lipschitz)),
        "APGM": (a1, 0.123, "APGM", "gaussian", 0.2, 1.0, 1e-6, gauss(0.2, 0.1)),
        "APGM vector": (a3, [0.1, 0.2, 0.3], "APGM", "gaussian", 0.2, 1.0, 1e-6,
                        _old_gaussian_vector(a3, 0.2, 0.1)),
        "APGMnG": (ng, 0.7, "APGM (non-Gaussian)", "gaussian", 0.25, 1.5, 1e-3,
                   gauss(0.25, 0.1)),
        "ExpM(L)": (expl, [0.2, 1.0], "distribution privacy", "laplace", expl.laplace_scale,
                    1.0, 0.0, lap_vec(expl.laplace_scale, expl.sensitivity)),
        "DirM(L)": (dirl, [0.2, 1.0], "distribution privacy", "laplace", d_scale, 1.0, 0.0,
                    lap_vec(d_scale, d_sens)),
        "EigM(G)": (eig, [0.2, 1.0], "distribution privacy", "gaussian",
                    eig.gaussian_release_sigma(), 1.0, 1e-3,
                    _old_gaussian_vector(eig, eig.gaussian_release_sigma(), eig.sensitivity)),
        "coupling bounds": (coord, [0.2, 1.0], "distribution privacy", "laplace",
                            coord.laplace_scale, 1.0, 0.0,
                            lap_vec(coord.laplace_scale, coord.sensitivity, coord.weights)),
        "DirM(L) directions": (dirs, [0.1, 1.3, -2.7], "distribution privacy", "laplace",
                               s_scale, 1.0, 0.0, lap_vec(s_scale, s_sens)),
    }


CASES = cases()


def _release(res, value, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        return res.release(value, **kw)


@pytest.mark.parametrize("name", list(CASES))
def test_release_is_a_release_record_with_the_results_terms(name):
    res, value, mech, kind, scale, eps, delta, _ = CASES[name]
    rec = _release(res, value, seed=5)
    vector = np.ndim(value) > 0
    assert isinstance(rec, ReleaseRecord)
    assert isinstance(rec, VectorRelease) == vector
    assert rec.mechanism == mech
    assert rec.calibration.noise == kind and rec.calibration.scale == scale
    assert rec.noise_scale_used >= scale  # the grid is paid for, never less noise
    assert (rec.guarantee.epsilon, rec.guarantee.delta) == (eps, delta)
    assert rec.seed == 5 and not rec.secure and rec.source == "seeded"
    assert rec.data is None and rec.query == {"kind": "value", "dimension": np.size(value)}
    assert _power_of_two_or_zero(rec.granularity)
    d = rec.to_dict()
    assert schema_check.errors(d, SCHEMA) == []
    assert d["noise"] == {"source": "seeded", "seed": 5, "secure": False,
                          "sampler": rec.sampler}
    if vector:
        assert len(rec) == np.size(value) and np.asarray(rec).shape == (np.size(value),)
        assert list(np.asarray(rec)) == list(rec.value) == d["value"]
    else:
        assert isinstance(rec.value, float) and d["value"] == rec.value


def _power_of_two_or_zero(g: float) -> bool:
    """A grid step is a power of two (or 0 without noise)."""
    from fractions import Fraction

    f = Fraction(g)
    return g == 0 or (f.numerator & (f.numerator - 1) == 0 and f.denominator &
                      (f.denominator - 1) == 0)


@pytest.mark.parametrize("name", list(CASES))
def test_seeded_values_are_those_of_the_old_path(name):
    res, value, *_, old = CASES[name]
    for seed in SEEDS:
        rec = _release(res, value, seed=seed)
        new = list(np.asarray(rec)) if isinstance(rec, VectorRelease) else rec.value
        assert new == old(value, seed), seed
    # a random.Random stream: the same draws as the old path given the same stream
    rec = _release(res, value, seed=random.Random(9))
    new = list(np.asarray(rec)) if isinstance(rec, VectorRelease) else rec.value
    assert new == old(value, random.Random(9))
    assert rec.seed is None and not rec.secure


@pytest.mark.parametrize("name", ["group DP Laplace", "MQM", "APGM vector", "EigM(G)"])
def test_secure_by_default_and_seed_warns(name):
    res, value, *_ = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededNoiseWarning)
        rec = res.release(value)
    assert rec.secure and rec.seed is None and rec.source == "secure"
    assert "SystemRandom" in rec.sampler
    with pytest.warns(SeededNoiseWarning):
        res.release(value, seed=1)


@pytest.mark.parametrize("name", list(CASES))
def test_the_ledger_holds_the_record_returned(name, tmp_path):
    res, value, *_ = CASES[name]
    path = tmp_path / "ledger.db"
    rec = _release(res, value, seed=2, ledger=path)
    entries, _ = ledger_mod.read(path)
    assert len(entries) == 1
    assert dict(entries[0].record) == json.loads(json.dumps(rec.to_dict()))
    assert ledger_mod.table(entries)  # ledger show reads a record without data


def test_a_budget_counts_value_releases_and_needs_a_ledger(tmp_path):
    res = CASES["group DP Laplace"][0]
    with pytest.raises(ParameterError, match="ledger"):
        _release(res, 1.0, seed=1, budget=1.0)
    path = tmp_path / "ledger.db"
    _release(res, 1.0, seed=1, ledger=path, budget=1.0)
    from quiltpriv.errors import BudgetError

    with pytest.raises(BudgetError):  # 0.7 + 0.7 > 1: refused before anything is drawn
        _release(res, 1.0, seed=1, ledger=path, budget=1.0)
    assert len(ledger_mod.read(path)[0]) == 1


def test_network_wasserstein_release_is_named_wasserstein():
    import quiltpriv as qp

    theta = qp.load_model("student")
    nw = network_wasserstein(theta, "height", "income", 1.0, records=4)
    rec = _release(nw, 2.0, seed=3)
    assert rec.mechanism == "Wasserstein" and rec.calibration.scale == nw.scale
    assert rec.details is not None and rec.details["arithmetic"] == nw.arithmetic
    assert rec.value == noise.laplace_release(2.0, nw.scale, nw.sensitivity, seed=3).value
    assert schema_check.errors(rec.to_dict(), SCHEMA) == []


def test_zero_noise_value_release_is_exact_and_warns():
    res = APGMResult(0.0, 0.0, 1.0, 1e-6, {"a": 0.1}, {"a": 1.0}, {"a": 0.0}, None, 1,
                     "classical")
    with pytest.warns(ZeroNoiseWarning):
        rec = res.release(7.25)
    assert rec.value == 7.25 and rec.source == "none" and rec.noise_scale_used == 0


def test_vector_release_reads_as_the_old_array_and_tuple():
    res = CASES["APGM vector"][0]
    rec = _release(res, [0.1, 0.2, 0.3], seed=4)
    assert rec.shape == (3,) and rec.values.tolist() == list(rec.value)
    assert float(rec[1]) == rec.value[1] and list(rec[1:]) == list(rec.value[1:])
    assert [float(x) for x in rec] == list(rec.value)
    assert np.allclose(rec - np.array(rec.value), 0)
    # the old tuple of NoisyValue: each coordinate's attributes, deprecated
    with pytest.warns(DeprecationWarning, match="granularity"):
        assert rec[0].granularity == rec.granularity
    with pytest.warns(DeprecationWarning, match="value"):
        assert rec[2].value == rec.value[2]


def test_apgm_non_gaussian_without_a_guarantee_releases_nothing(monkeypatch):
    drawn = []
    monkeypatch.setattr(noise, "_discrete_gaussian", lambda *a: drawn.append(a) or 0)
    bad = APGMNonGaussianResult(_apgm(1), 0.2, float("inf"), 1e-4, float("inf"), 1.0, {}, ())
    with pytest.raises(ParameterError, match="guarantee nothing"):
        bad.release(0.5, seed=1)
    assert drawn == []
