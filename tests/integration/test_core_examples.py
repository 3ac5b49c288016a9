"""The paper's worked examples and the bundled models, end to end."""

import math

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.inference.influence import ROUNDING_MARGIN


def test_example1_quilt_found(student):
    # Example 1: Q = {g}, N = {i, s}, R = {h, w}.
    q = qp.markov_quilt(student, "income", ["gender"])
    assert q.quilt == ("gender",)
    assert set(q.nearby) == {"income", "sat"}
    assert set(q.remote) == {"height", "weight"}
    listed = [x for x in qp.enumerate_quilts(student, "income") if x.quilt == ("gender",)]
    assert listed == [q]


def test_example1_count_over_height_needs_no_noise(student):
    p = qp.plan(student, qp.CountQuery(["height"], 1000), "income", 1.0)
    assert p.scale == 0.0 and p.optimal
    sp = p["income"]
    assert "height" not in sp.nearby and sp.sensitivity == 0.0
    # The paper's quilt {g} also gives zero noise; the planner prefers the quilt of least
    # influence among equal scales, which is {height} by the data-processing inequality.
    e_g = qp.max_influence(student, "income", ["gender"]).value
    assert sp.influence <= e_g
    assert sp.quilt == ("height",)


def test_example1_count_over_height_and_sat(student):
    # sat is a child of income: every quilt keeping it out of N has influence >= e(sat|i) > eps,
    # and for a count every nearby attribute costs n, so Q = {} (scale n / eps) is optimal.
    e_s = qp.max_influence(student, "income", ["sat"]).value
    assert e_s > 1.0
    p = qp.plan(student, qp.CountQuery(["height", "sat"], 1000), "income", 1.0)
    assert p.scale == pytest.approx(1000.0, rel=1e-12)
    assert p.optimal
    # With that quilt, Example 1's formula Delta_s F / (eps - e(g|i)) is larger.
    e_g = qp.max_influence(student, "income", ["gender"]).value
    assert 1000 / (1.0 - e_g) > p.scale
    # With eps above e({sat, height}) the query set itself is a quilt: no noise at all.
    e_a = qp.max_influence(student, "income", ["sat", "height"]).value
    p2 = qp.plan(student, qp.CountQuery(["height", "sat"], 1000), "income", e_a + 0.01)
    assert p2.scale == 0.0 and set(p2["income"].quilt) <= {"sat", "height"}


def test_student_influences_by_hand(student):
    # e(gender | income) from the CPDs directly: P(g | i) by Bayes, then Definition 8.
    pg = np.array([0.3, 0.4, 0.3])
    pig = np.array([[0.40, 0.35, 0.30], [0.35, 0.35, 0.35], [0.25, 0.30, 0.35]])  # [i, g]
    joint = pig * pg  # P(i, g)
    cond = joint / joint.sum(axis=1, keepdims=True)  # P(g | i), rows i
    expected = max(math.log(cond[:, g].max() / cond[:, g].min()) for g in range(3))
    got = qp.max_influence(student, "income", ["gender"]).value
    assert got == pytest.approx(expected, rel=1e-9)
    assert got >= expected


def test_linear_query_uses_a_quilt(student):
    # Means of height and weight: Q = {gender} puts both in R; the alternative quilts keep a
    # weight in N. Check the planner's choice against the closed form.
    q = qp.LinearQuery({"height": 1.0, "weight": 1.0, "sat": 0.1},
                       {"height": (0, 1), "weight": (0, 1), "sat": (0, 1)})
    p = qp.plan(student, q, "income", 2.5)
    sp = p["income"]
    delta = q.sensitivity(set(q.attributes) & set(sp.nearby))
    assert sp.sensitivity == delta
    assert sp.scale == pytest.approx(delta / (2.5 - sp.influence))
    assert sp.scale < q.sensitivity(q.attributes) / 2.5


def test_theta_two_members_takes_the_max(student):
    theta = qp.load_model("student:theta")
    assert len(theta) == 2
    one = qp.max_influence(student, "income", ["gender"]).value
    two = qp.max_influence(theta, "income", ["gender"])
    assert two.value > one
    assert two.member == 1


def test_example3_deterministic_dependence_is_infinite():
    t = qp.load_model("example3")
    assert qp.max_influence(t, "x2", ["x1"]).value == math.inf
    p = qp.plan(t, qp.CountQuery(["x1"], 4), "x2", 1.0)
    assert p.scale == pytest.approx(4.0)
    assert p["x2"].quilt == ()


def test_chain_influence_decays_with_distance():
    t = qp.load_model("chain")
    node = "x06"
    vals = [qp.max_influence(t, node, [f"x{k:02d}"]).value for k in (7, 8, 9, 10)]
    assert all(a > b for a, b in zip(vals, vals[1:], strict=False))
    # Two-state-like closed form for the symmetric 3-state chain: P(x_{t+d} | x_t) has
    # diagonal (1 + 2 l^d)/3 and off-diagonal (1 - l^d)/3 with l = stay - move = 0.7.
    lam = 0.8 - 0.1
    for d, v in zip((1, 2, 3, 4), vals, strict=True):
        expected = math.log((1 + 2 * lam**d) / (1 - lam**d))
        assert v == pytest.approx(expected, rel=1e-9)
        assert v <= expected * (1 + 2 * ROUNDING_MARGIN) + 2 * ROUNDING_MARGIN
    # A mean over far periods is released with little noise; over the node itself, full noise.
    far = qp.MeanQuery("x12", lower=0, upper=1)
    p = qp.plan(t, far, node, 1.0)
    assert p.scale == 0.0


def test_release_uses_plan_scale_and_is_secure(student):
    q = qp.CountQuery(["height", "sat"], 50, where="height > 66 and sat > 1300")
    p = qp.plan(student, q, "income", 1.0)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"height": rng.normal(66, 4, 50), "sat": rng.normal(1250, 100, 50)})
    r = qp.release(p, q, df)
    assert r.secure and r.seed is None and r.scale >= p.scale
    assert r.scale <= p.scale * (1 + 2**-19)
    assert r.plan is p
    # Seeded: reproducible and labelled.
    a = qp.release(p, q, df, seed=7)
    b = qp.release(p, q, df, seed=7)
    assert a.value == b.value and not a.secure and a.seed == 7
    # Zero-noise plan returns the exact value.
    q0 = qp.CountQuery(["height"], 50, where="height > 66")
    p0 = qp.plan(student, q0, "income", 1.0)
    assert qp.release(p0, q0, df).value == float((df["height"] > 66).sum())


@pytest.mark.filterwarnings("ignore::quiltpriv.errors.RepeatedReleaseWarning",
                            "ignore::quiltpriv.errors.SeededNoiseWarning")
@pytest.mark.slow  # ~5 s; test_noise checks the release noise law by default
def test_release_noise_statistics(student):  # 4000 seeded releases of one query, on purpose
    # The released noise has the Laplace variance 2 b^2 (seeded, bounded test).
    q = qp.CountQuery(["sat"], 20, where="sat > 1300")
    p = qp.plan(student, q, "income", 1.0)
    assert p.scale == pytest.approx(20.0)  # e(sat|income) > 1: no quilt helps
    df = pd.DataFrame({"sat": [1400.0] * 10 + [1200.0] * 10})
    import random

    rng = random.Random(11)
    noise = np.array([qp.release(p, q, df, seed=rng).value - 10.0 for _ in range(4000)])
    b = p.scale
    assert abs(noise.mean()) < 5 * math.sqrt(2) * b / math.sqrt(4000)
    assert noise.var() == pytest.approx(2 * b * b, rel=0.1)


def test_release_refuses_more_records_than_planned(student):
    q = qp.CountQuery(["height"], 3, where="height > 1")
    p = qp.plan(student, q, "income", 1.0)
    with pytest.raises(qp.QueryError, match="planned for at most 3"):
        qp.release(p, q, pd.DataFrame({"height": [1.0, 2.0, 3.0, 4.0]}))


def test_plan_json_round_trip_and_contract(student):
    import json

    p = qp.plan(student, qp.CountQuery(["height", "sat"], 100), ["income", "gender"], 0.5)
    d = json.loads(p.to_json())
    assert set(d) >= {"epsilon", "scale", "optimal", "sensitive"}
    for s in ("income", "gender"):
        assert set(d["sensitive"][s]) >= {"scale", "quilt", "nearby", "remote", "influence",
                                          "sensitivity", "quilts_considered"}
    assert d["scale"] == max(v["scale"] for v in d["sensitive"].values())
    assert qp.Plan.from_dict(d).to_dict() == p.to_dict()
