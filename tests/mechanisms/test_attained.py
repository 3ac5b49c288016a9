"""The epsilon each sensitive attribute attains at the published scale, against the exact audit."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import quiltpriv as qp
from quiltpriv.audit.exact import audit
from quiltpriv.errors import PlanError
from quiltpriv.mechanisms.attained import (
    NEAR_LIMIT_MARGIN,
    attained_epsilon,
    attained_epsilons,
    attained_table,
)
from quiltpriv.model.network import theta_from_tables
from quiltpriv.queries.query import CountQuery

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "audit"))
from test_audit import _random_case  # noqa: E402


def test_attained_epsilon_is_rounded_up_and_exact():
    # 0.1 + 1/3 is not a float: the result is the least float above the rational sum
    e = attained_epsilon(0.1, 1.0, 3.0)
    assert Fraction(e) >= Fraction(0.1) + Fraction(1, 3)
    assert Fraction(math.nextafter(e, 0)) < Fraction(0.1) + Fraction(1, 3)
    assert attained_epsilon(0.25, 0.0, 0.0) == 0.25
    assert math.isinf(attained_epsilon(0.0, 2.0, 0.0))
    with pytest.raises(PlanError):
        attained_epsilon(float("nan"), 1.0, 1.0)


def test_point_masses_attain_exactly_the_audited_loss():
    # phi_x in {0, 1}: F = 0 or n surely, the loss at scale b is exactly n / b = eps_x.
    x = theta_from_tables([], {"x": ("0", "1")}, {"x": [0.5, 0.5]})
    for n, eps in [(3, 1.0), (5, 0.5)]:
        q = CountQuery(("x",), n)
        p = qp.plan(x, q, "x", eps)
        (row,) = attained_epsilons(p, q)
        loss = audit(x, q, "x", eps, p.scale).loss
        assert row.epsilon == pytest.approx(loss, rel=1e-12) == pytest.approx(eps)
        assert row.binding and not row.near_limit


def test_attained_epsilon_bounds_the_exact_audit_per_attribute_on_random_networks():
    checked = slack = 0
    for seed in range(30):
        theta, q, sens, eps = _random_case(seed)
        sens = list(theta.nodes)[:3]  # several attributes, so most are not binding
        p = qp.plan(theta, q, sens, eps)
        if p.scale == 0:
            continue
        for row in attained_epsilons(p, q):
            assert row.epsilon <= eps * (1 + 1e-12), (seed, row)
            loss = audit(theta, q, row.sensitive, eps, p.scale).loss
            assert loss <= row.epsilon + 1e-9, (seed, row.sensitive, loss, row.epsilon)
            checked += 1
            slack += row.epsilon < eps * (1 - 1e-6)
    # every attribute checked; many get strictly less than the stated eps
    assert checked > 20 and slack > 5, (checked, slack)


def test_zero_noise_choice_near_the_limit_is_flagged():
    # y -> z -> x, the query reads x only: y's least-influence quilt needs no noise
    theta = theta_from_tables([("y", "z"), ("z", "x")],
                              {"x": ("0.2", "0.8"), "y": ("0.2", "0.8"), "z": ("0.2", "0.8")},
                              {"y": [0.5, 0.5], "z": [[0.7, 0.3], [0.3, 0.7]],
                               "x": [[0.9, 0.1], [0.1, 0.9]]})
    q = CountQuery(("x",), 10)
    roomy = qp.plan(theta, q, "y", 5.0)
    (row,) = attained_epsilons(roomy, q)
    assert row.sensitivity == 0 and roomy.scale == 0 and not row.near_limit
    e = row.influence
    tight = qp.plan(theta, q, "y", e / (1 - NEAR_LIMIT_MARGIN / 2))
    (row,) = attained_epsilons(tight, q)
    assert tight.scale == 0 and row.influence == e and row.epsilon == e
    assert row.near_limit and "Delta_A F / eps = " in row.why_near_limit
    text = "\n".join(attained_table((row,), tight.epsilon))
    # the margin flag is worded apart from the exact analysis, which alone says FRAGILE
    assert "y: near the limit (margin < 10% of eps): e(Q|i) = " in text and "FRAGILE" not in text
    assert row.to_dict()["near_limit"] is True and "fragile" not in row.to_dict()
    with pytest.warns(DeprecationWarning, match="'fragile' is deprecated, use 'near_limit'"):
        assert row.fragile  # type: ignore[attr-defined]
