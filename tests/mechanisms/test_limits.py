"""Size and time limits: the plan stays private (a valid quilt) and says it is not proven."""

import pytest

import quiltpriv as qp
from quiltpriv.inference.influence import InfluenceTooExpensive


def _valid(theta, sp):
    q = qp.markov_quilt(theta, sp.sensitive, sp.quilt)
    assert (q.nearby, q.remote) == (sp.nearby, sp.remote)
    if sp.quilt:
        assert qp.max_influence(theta, sp.sensitive, sp.quilt).value <= sp.influence + 1e-12


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
    import time

    clock = iter([0.0] + [1e9] * 1000)  # the limit starts at 0; every later reading is past it
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    p = qp.plan(student, qp.CountQuery(["height", "weight"], 10), "income", 1.0,
                time_limit=1.0)
    assert not p.optimal
    assert "time limit" in p["income"].explanation
    _valid(student, p["income"])
    assert p.scale == pytest.approx(10.0)  # only the trivial quilt was evaluated


def test_bad_time_limit(student):
    with pytest.raises(qp.ParameterError, match="time_limit"):
        qp.plan(student, qp.CountQuery(["height"], 10), "income", 1.0, time_limit=0)


def test_data_processing_bound_when_exact_is_too_expensive():
    from quiltpriv.inference.influence import influence_upper_bound

    chain = qp.load_model("chain")
    q = ["x05", "x06", "x07"]
    exact = qp.max_influence(qp.load_model("chain"), "x01", q)
    b = influence_upper_bound(chain, "x01", q, max_table=27)  # joint of 4 nodes has 81
    assert not b.exact and b.bound_via == ("x02",)
    assert b.value >= exact.value
    assert b.value == qp.max_influence(chain, "x01", ["x02"]).value
    # The planner uses the bound (valid, more noise) and says so: i -> h -> {a, b}, a query
    # over a and b needs Q* = {a, b} (joint of 8), while the separator {h} needs only 4.
    import numpy as np

    states = {v: [0, 1] for v in "ihab"}
    tables = {"i": np.array([0.5, 0.5]), "h": np.array([[0.8, 0.3], [0.2, 0.7]]),
              "a": np.array([[0.9, 0.2], [0.1, 0.8]]), "b": np.array([[0.7, 0.4], [0.3, 0.6]])}
    edges = [("i", "h"), ("h", "a"), ("h", "b")]
    query = qp.LinearQuery({"a": 1.0, "b": 1.0}, {"a": (0, 1), "b": (0, 1)})
    p_exact = qp.plan(qp.theta_from_tables(edges, states, tables), query, "i", 3.0)
    p_bound = qp.plan(qp.theta_from_tables(edges, states, tables), query, "i", 3.0, max_table=4)
    assert p_exact.optimal and p_exact["i"].quilt == ("a", "b")
    sp = p_bound["i"]
    assert sp.quilt == ("a", "b") and sp.influence_bound_via == ("h",)
    assert sp.influence >= p_exact["i"].influence and p_bound.scale >= p_exact.scale
    assert "UPPER BOUND" in sp.explanation
    # Its scale is 0 (Delta = 0, the bound below eps): nothing can beat it, bound or not.
    assert p_bound.scale == 0.0 and p_bound.optimal
    # eps = 1.1 lies between e({a, b} | i) = 1.056 and its bound e({h} | i) = 1.253: the exact
    # plan needs no noise, the bounded one must add some and cannot prove that it is least.
    exact = qp.plan(qp.theta_from_tables(edges, states, tables), query, "i", 1.1)
    bound = qp.plan(qp.theta_from_tables(edges, states, tables), query, "i", 1.1, max_table=4)
    assert exact.optimal and exact.scale == 0.0 and exact["i"].quilt == ("a", "b")
    assert not bound.optimal and bound.scale > 0
    assert "the influence of {a, b} is an upper bound" in bound["i"].explanation
    assert "Optimality not proven" in bound["i"].explanation
    # Neither exact nor bound affordable: refused, never guessed.
    with pytest.raises(InfluenceTooExpensive, match="bound via"):
        influence_upper_bound(qp.load_model("chain"), "x01", q, max_table=4)


def test_time_limit_in_parallel_is_one_overall_budget(student, monkeypatch):
    """With n_jobs, the budget travels as a wall-clock deadline; a passed one stops every
    batch at once (threads here, so the patched clock is seen by the workers)."""
    import time

    import joblib

    start = time.time()
    clock = iter([start] + [start + 1e9] * 1000)  # the deadline has passed for every worker
    monkeypatch.setattr(time, "time", lambda: next(clock))
    query = qp.CountQuery(["height", "weight"], 10)
    with joblib.parallel_backend("threading"):
        p = qp.plan(student, query, student.nodes, 1.0, time_limit=5.0, n_jobs=2)
    assert not p.optimal
    for sp in p.sensitive:
        assert "time limit" in sp.explanation, sp.sensitive
        _valid(student, sp)
    exact = qp.plan(student, query, student.nodes, 1.0, n_jobs=2)
    assert exact.optimal and exact.to_dict()["sensitive"] == qp.plan(
        student, query, student.nodes, 1.0).to_dict()["sensitive"]


@pytest.mark.parametrize("entry", ["plan", "plan_node"])
def test_the_time_limit_reaches_a_conditioned_influence(entry, monkeypatch):
    """A candidate whose influence needs conditioning on a cutset (seconds of work on large
    networks) receives the plan's deadline, from plan and from plan_node (which plan's
    workers run); a plan without a time limit passes none."""
    import time

    import numpy as np
    import reference as ref

    from quiltpriv.inference.engines import cutset
    from quiltpriv.mechanisms.apmqm import plan_node

    # seed 58 at max_table=8: found by a search; one candidate needs a cutset
    net = ref.random_network(6158, min_nodes=5, max_nodes=9, edge_prob=0.6)
    node = str(np.random.default_rng(58).choice(net.nodes))
    query = qp.CountQuery([v for v in net.nodes if v != node][:3], 10)
    deadlines = []
    real = cutset._conditioned_joint
    monkeypatch.setattr(cutset, "_conditioned_joint",
                        lambda *a, **k: deadlines.append(a[-1]) or real(*a, **k))
    for limit in (None, 60.0):
        theta = net.to_theta()  # fresh: no cached influences
        deadlines.clear()
        start = time.monotonic()
        if entry == "plan_node":
            plan_node(theta, query, node, 1.0, max_table=8, time_limit=limit)
        else:
            qp.plan(theta, query, [node], 1.0, max_table=8, time_limit=limit)
        assert deadlines, "the query was meant to need a cutset"
        if limit is None:
            assert deadlines == [None] * len(deadlines)
        else:
            assert all(start < d <= time.monotonic() + limit for d in deadlines)
