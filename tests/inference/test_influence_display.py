"""A quilt found exactly independent shows influence 0 plus the rounding margin, stated as
such, wherever a person reads it; the value used for the scale keeps the margin."""

from __future__ import annotations

import json

import pytest

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.inference.influence import ROUNDING_MARGIN, fmt_influence
from quiltpriv.mechanisms.compare import compare

SHOWN = f"0 (+{ROUNDING_MARGIN:g} rounding margin)"


@pytest.fixture(scope="module")
def independent():
    """a -> b -> c where b's and c's rows do not depend on their parent: e({b} | a) is 0."""
    b = qp.NetworkBuilder("ind")
    b.attribute("a", [0.2, 0.5]).attribute("b", [0.3, 0.6]).attribute("c", [0.1, 0.9])
    b.edge("a", "b").edge("b", "c")
    b.table("a", [0.5, 0.5]).table("b", {0.2: [0.4, 0.6], 0.5: [0.4, 0.6]})
    b.table("c", {0.3: [0.3, 0.7], 0.6: [0.3, 0.7]})
    return b.to_theta()


def test_fmt_influence():
    assert fmt_influence(ROUNDING_MARGIN) == SHOWN
    assert fmt_influence(0.0) == "0"  # the trivial quilt: exactly 0, no margin
    assert fmt_influence(0.3158531) == "0.315853"
    assert fmt_influence(2 * ROUNDING_MARGIN) == "2e-10"  # a real (tiny) value stays a number
    assert fmt_influence(float("inf")) == "inf"


def test_independent_quilt_reads_zero_plus_margin(independent, tmp_path, capsys):
    infl = qp.max_influence(independent, "a", ["b"])
    assert infl.value == ROUNDING_MARGIN  # still used as is: the margin is never dropped
    assert SHOWN in infl._repr_html_()
    query = qp.CountQuery(["c"], records=10)
    plan = qp.plan(independent, query, "a", 1.0)
    assert plan["a"].influence == ROUNDING_MARGIN
    text = plan.explain()
    assert f"e(Q|a) = {SHOWN}" in text and "= 1e-10" not in text
    assert SHOWN in str(plan) and SHOWN in plan._repr_html_()
    assert json.loads(plan.to_json())["sensitive"]["a"]["influence"] == ROUNDING_MARGIN
    assert f"e = {SHOWN}" in compare(independent, query, "a", 1.0).explain()

    model = tmp_path / "ind.json"
    model.write_text(json.dumps(qp.theta_to_dict(independent)))
    assert main(["quilts", str(model), "--node", "a"]) == 0
    listing = capsys.readouterr().out
    assert SHOWN in listing and "1e-10 " not in listing.replace(SHOWN, "")
