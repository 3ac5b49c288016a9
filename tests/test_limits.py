"""Size and time limits: the plan stays private (a valid quilt) and says it is not proven."""

import pytest

import quiltpriv as qp
from quiltpriv.influence import InfluenceTooExpensive


@pytest.fixture(scope="module")
def student():
    return qp.load_model("student")


def _valid(theta, sp):
    q = qp.markov_quilt(theta, sp.node, sp.quilt)
    assert (q.nearby, q.remote) == (sp.nearby, sp.remote)
    if sp.quilt:
        assert qp.max_influence(theta, sp.node, sp.quilt).value <= sp.influence + 1e-12


def test_table_limit_drops_candidates_and_flags(student):
    query = qp.CountQuery(["height"], 100)
    exact = qp.plan(student, query, "income", 1.0)
    fresh = qp.load_model("student")  # no cached exact influences (those would be reused)
    limited = qp.plan(fresh, query, "income", 1.0, max_table=2)
    assert exact.optimal and not limited.optimal
    assert limited.scale >= exact.scale
    sp = limited["income"]
    assert "Optimality not proven" in sp.explanation and "skipped" in sp.explanation
    _valid(student, sp)
    with pytest.raises(InfluenceTooExpensive, match="limit 2"):
        qp.max_influence(fresh, "income", ["weight"], max_table=2)


def test_time_limit_flags(student, monkeypatch):
    import quiltpriv.mechanisms as mech

    clock = iter([0.0] + [1e9] * 1000)
    monkeypatch.setattr(mech.time, "monotonic", lambda: next(clock))
    p = qp.plan(student, qp.CountQuery(["height", "weight"], 10), "income", 1.0,
                time_limit=1.0)
    assert not p.optimal
    assert "time limit" in p["income"].explanation
    _valid(student, p["income"])
    assert p.scale == pytest.approx(10.0)  # only the trivial quilt was evaluated


def test_bad_time_limit(student):
    with pytest.raises(qp.ParameterError, match="time_limit"):
        qp.plan(student, qp.CountQuery(["height"], 10), "income", 1.0, time_limit=0)
