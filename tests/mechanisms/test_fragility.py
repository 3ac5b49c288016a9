"""The perturbation test of chosen quilts: a constructed flip, a constructed non-flip, and the
bound and witnesses against brute force on random networks."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

import quiltpriv as qp
from quiltpriv.errors import ParameterError, PlanError
from quiltpriv.inference.influence import joint_marginal, max_influence
from quiltpriv.mechanisms.fragility import (
    _greedy_max,
    _ratio_max,
    _with_column,
    fragility,
    influence_of_joint,
)
from quiltpriv.model.network import theta_from_tables
from quiltpriv.queries.query import CountQuery

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "audit"))
from test_audit import _random_case  # noqa: E402


def _two_nodes(p0: float, p1: float):
    """i -> x; P(phi_x = 0.8 | phi_i = 0.2) = p0, P(phi_x = 0.8 | phi_i = 0.8) = p1."""
    return theta_from_tables([("i", "x")], {"i": ["0.2", "0.8"], "x": ["0.2", "0.8"]},
                             {"i": np.array([0.5, 0.5]),
                              "x": np.array([[1 - p0, 1 - p1], [p0, p1]])})


Q = CountQuery(("x",), 1000)
EPS = 0.6


def test_a_zero_noise_quilt_that_flips_to_n_over_eps():
    # e({x}|i) = log(0.55 / 0.32) = 0.5416 < 0.6: zero noise. Lowering P(x = 0.8 | i = 0.2) by
    # t raises it to log((0.55 + t) / 0.32): eps from t = 0.32 e^0.6 - 0.55 = 0.0330781 on.
    theta = _two_nodes(0.45, 0.68)
    p = qp.plan(theta, Q, "i", EPS)
    assert p.scale == 0 and p["i"].quilt == ("x",)
    f = fragility(theta, p, Q)
    r = f.rows[0]
    assert r.verdict == "FLIPS" and r.fragile and f.fragile == ("i",) and f.complete
    w = r.witness
    assert w is not None and w.node == "x" and w.change <= 0.05 + 1e-15
    assert w.influence >= EPS
    changed = _with_column(theta, w.member, w.node, theta.states["i"].index(w.column[0][1]),
                           np.array(w.after))
    assert max_influence(changed, "i", ["x"]).value >= w.influence >= EPS
    least = 0.32 * math.exp(0.6) - 0.55
    assert least <= r.least_change <= least + 1e-6
    assert r.replanned_scale == pytest.approx(1000 / 0.6, rel=1e-12)  # 0 -> 1666.67
    text = f.explain()
    assert "FLIPS" in text and "from 0 to 1666.67" in text and "P(x | i = 0.2)" in text


def test_the_same_quilt_is_stable_against_smaller_changes():
    # Within 0.01 the worst change is P(x = 0.8 | i = 0.8): 0.68 -> 0.69, e = log(0.55/0.31).
    theta = _two_nodes(0.45, 0.68)
    p = qp.plan(theta, Q, "i", EPS)
    r = fragility(theta, p, Q, delta=0.01).rows[0]
    assert r.verdict == "STABLE" and not r.fragile and r.witness is None
    assert r.columns_checked == r.columns_total == 3   # P(i), and P(x | i) per state of i
    exact = math.log(0.55 / 0.31)
    assert exact <= r.bound <= exact + 1e-7  # widened by BOUND_MARGIN per conditional


def test_a_weak_dependency_is_stable_and_the_trivial_quilt_always():
    theta = _two_nodes(0.5, 0.52)
    p = qp.plan(theta, Q, "i", EPS)
    assert fragility(theta, p, Q).rows[0].verdict == "STABLE"
    theta = _two_nodes(0.45, 0.70)        # needs the trivial quilt: nothing to flip
    p = qp.plan(theta, Q, "i", EPS)
    assert p["i"].quilt == () and p.scale == pytest.approx(1000 / 0.6)
    r = fragility(theta, p, Q).rows[0]
    assert r.verdict == "STABLE" and r.columns_total == 0


def test_time_limit_flags_instead_of_clearing():
    theta = _two_nodes(0.5, 0.52)
    p = qp.plan(theta, Q, "i", EPS)
    f = fragility(theta, p, Q, time_limit=0)
    assert not f.complete and f.rows[0].verdict == "UNDECIDED" and f.rows[0].fragile
    assert "time limit" in f.explain()


def test_bad_inputs_are_refused():
    theta = _two_nodes(0.45, 0.68)
    p = qp.plan(theta, Q, "i", EPS)
    for bad in (0, -0.1, 1.5, float("nan"), "0.1", True):
        with pytest.raises(ParameterError):
            fragility(theta, p, Q, delta=bad)
    with pytest.raises(PlanError, match="another model"):
        fragility(_two_nodes(0.45, 0.69), p, Q)
    with pytest.raises(PlanError):
        fragility(theta, {"plan": 1}, Q)  # type: ignore[arg-type]


def _ball_lp(w, theta, delta, sign):
    """max (sign=1) or min of w . t over the simplex with TV(t, theta) <= delta, by an LP."""
    k = theta.size
    # variables t (k) and u (k) >= |t - theta|
    c = np.concatenate([-sign * w, np.zeros(k)])
    a_ub = np.block([[np.eye(k), -np.eye(k)], [-np.eye(k), -np.eye(k)],
                     [np.zeros((1, k)), np.ones((1, k))]])
    b_ub = np.concatenate([theta, -theta, [2 * delta]])
    a_eq = np.concatenate([np.ones(k), np.zeros(k)])[None]
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0],
                  bounds=[(0, None)] * (2 * k), method="highs")
    assert res.status == 0
    return sign * -res.fun


def test_greedy_linear_maximum_is_the_lp_optimum():
    rng = np.random.default_rng(7)
    for _ in range(200):
        k = int(rng.integers(2, 6))
        theta = rng.dirichlet(np.ones(k) * rng.choice([0.3, 1, 5]))
        w = rng.normal(size=(k, 1))
        delta = float(rng.choice([0.01, 0.05, 0.3, 1.0]))
        value, arg = _greedy_max(w, theta, delta)
        assert value[0] == pytest.approx(_ball_lp(w[:, 0], theta, delta, 1), abs=1e-9)
        t = arg[:, 0]
        assert t.min() >= 0 and abs(t.sum() - 1) <= 1e-12
        assert np.abs(t - theta).sum() / 2 <= delta + 1e-12


def test_dinkelbach_ratio_maximum_bounds_every_point_of_the_ball():
    rng = np.random.default_rng(11)
    for _ in range(100):
        k = int(rng.integers(2, 5))
        theta = rng.dirichlet(np.ones(k))
        d = rng.uniform(0.05, 1, size=(k, 1))
        c = d * rng.uniform(0, 1, size=(k, 1))
        delta = float(rng.choice([0.02, 0.1, 0.5]))
        hi, arg = _ratio_max(c, d, theta, delta)
        t = arg[:, 0]
        attained = float(c[:, 0] @ t / (d[:, 0] @ t))
        assert attained <= hi[0] <= attained * (1 + 1e-8) + 1e-15  # the max, attained
        for _ in range(200):  # random points of the ball never exceed it
            move = rng.dirichlet(np.ones(k)) - theta
            s = float(rng.uniform(0, 1))
            p = theta + move * min(1.0, 2 * delta / max(np.abs(move).sum(), 1e-300)) * s
            assert float(c[:, 0] @ p / (d[:, 0] @ p)) <= hi[0]


def test_random_networks_bound_and_witnesses_against_brute_force():
    rng = np.random.default_rng(3)
    verdicts = {"FLIPS": 0, "STABLE": 0, "UNDECIDED": 0}
    for seed in range(40):
        theta, q, sens, eps = _random_case(seed)
        p = qp.plan(theta, q, sens, eps)
        f = fragility(theta, p, q, delta=0.05)
        assert f.complete
        for sp, r in zip(p.sensitive, f.rows, strict=True):
            verdicts[r.verdict] += 1
            if not sp.quilt:
                continue
            nodes = (sp.sensitive, *sp.quilt)
            if r.verdict == "FLIPS":  # the witness is real
                w = r.witness
                assert w is not None and w.change <= 0.05 + 1e-12
                states = [len(theta.states[par]) for par, _ in w.column]
                idx = [theta.states[par].index(s) for par, s in w.column]
                col = int(np.ravel_multi_index(idx, states)) if idx else 0
                changed = _with_column(theta, w.member, w.node, col, np.array(w.after))
                assert max_influence(changed, sp.sensitive, sp.quilt).value >= eps
            # random changes of one column never exceed the bound
            for _ in range(30):
                m = int(rng.integers(len(theta.members)))
                anc = sorted(theta.ancestral_set(nodes))
                v = anc[int(rng.integers(len(anc)))]
                table = np.asarray(theta.members[m][v].table, dtype=float)
                k = table.shape[0]
                flat = table.reshape(k, -1)
                c = int(rng.integers(flat.shape[1]))
                th = flat[:, c]
                move = rng.dirichlet(np.ones(k)) - th
                new = th + move * min(1.0, 0.1 / max(np.abs(move).sum(), 1e-300))
                changed = _with_column(theta, m, v, c, new)
                e = influence_of_joint(joint_marginal(changed, nodes, m))
                assert e <= r.bound or r.verdict == "FLIPS" or math.isinf(r.bound), \
                    (seed, sp.sensitive, e, r.bound)
    print(verdicts)
    assert verdicts["FLIPS"] > 0 and verdicts["STABLE"] > 0


def test_cli_audit_fragility(tmp_path, capsys):
    from quiltpriv.cli import main

    model = tmp_path / "two.json"
    _two_nodes(0.45, 0.68).save(model)
    base = ["audit", str(model), "--sensitive", "i", "--attributes", "x", "--records", "1000",
            "--epsilon", "0.6", "--fragility"]
    assert main([*base, "--json"]) == 0
    out = __import__("json").loads(capsys.readouterr().out)
    row = out["fragility"]["rows"][0]
    assert row["verdict"] == "FLIPS" and row["replanned_scale"] == pytest.approx(1000 / 0.6)
    assert main([*base, "--delta", "0.01"]) == 0
    assert "i: quilt {x}, e(Q|i) = 0.541597: STABLE" in capsys.readouterr().out
    assert main([*base, "--delta", "0"]) == 2
    assert "--delta must be in (0, 1]" in capsys.readouterr().err
    assert main([*base, "--scale", "3"]) == 2
    assert "--fragility tests a plan's chosen quilts" in capsys.readouterr().err


def test_alarm_bound_is_tight_where_one_column_moves_both_conditionals():
    # P(HR | CATECHOL = HIGH) = (0.01, 0.09, 0.9) moves P(HR | KINKEDTUBE = a) for both values
    # a together: bounding the two conditionals apart gave 3.0; the coupled bound is within 4%
    # of the largest influence 20,000 random changes reach (0.542).
    import pathlib
    import warnings

    import pgmpy

    path = pathlib.Path(pgmpy.__file__).parent / "utils" / "example_models" / "alarm.bif.gz"
    if not path.is_file():
        pytest.skip("pgmpy bundles no alarm network")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theta = qp.load_model(str(path))
    q = CountQuery(("HR",), 1000, where="HR == 'HIGH'", domain={"HR": theta.states["HR"]})
    p = qp.plan(theta, q, "KINKEDTUBE", 2.0)
    assert p["KINKEDTUBE"].quilt == ("HR",) and p.scale == 0
    r = fragility(theta, p, q).rows[0]
    assert r.verdict == "STABLE" and 0.542 <= r.bound <= 0.5600 and r.columns_checked == 137
    p = qp.plan(theta, q, "KINKEDTUBE", 0.3)
    assert p["KINKEDTUBE"].quilt == ("HR",) and p.scale == 0
    r = fragility(theta, p, q).rows[0]
    assert r.verdict == "FLIPS" and r.witness.where() == "P(HR | CATECHOL = HIGH)"
    assert r.least_change < 0.01 and r.replanned_scale == pytest.approx(1000 / 0.3)
