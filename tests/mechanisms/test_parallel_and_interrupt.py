"""Parallel planning (joblib), pickling Theta, progress, and interruption."""

import pickle

import quiltpriv as qp
import quiltpriv.mechanisms.apmqm.shared as mech


def test_theta_pickles(student_theta):
    back = pickle.loads(pickle.dumps(student_theta))
    assert back.fingerprint() == student_theta.fingerprint() and back.names == student_theta.names
    assert qp.max_influence(back, "income", ["gender"]) == qp.max_influence(
        student_theta, "income", ["gender"])


def test_parallel_equals_serial(student_theta):
    q = qp.LinearQuery({"height": 1.0, "weight": -1.0, "sat": 0.5},
                       {"height": (0, 1), "weight": (0, 1), "sat": (0, 1)})
    serial = qp.plan(student_theta, q, student_theta.nodes, 1.5)
    parallel = qp.plan(student_theta, q, student_theta.nodes, 1.5, n_jobs=2)
    assert parallel.to_dict() == serial.to_dict()


def test_progress_bar(student_theta, capsys):
    p = qp.plan(student_theta, qp.CountQuery(["height"], 10), student_theta.nodes, 1.0,
                progress=True)
    assert p.optimal
    assert "planning" in capsys.readouterr().err


def test_interrupt_keeps_a_valid_plan(monkeypatch):
    theta = qp.load_model("chain")
    q = qp.LinearQuery({"x03": 1.0, "x09": 1.0}, {"x03": (0, 1), "x09": (0, 1)})
    exact = qp.plan(qp.load_model("chain"), q, ["x06", "x01"], 1.0)
    real = mech.influence_upper_bound_until
    calls = {"n": 0}

    def interrupting(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(mech, "influence_upper_bound_until", interrupting)
    p = qp.plan(theta, q, ["x06", "x01"], 1.0)
    assert not p.optimal and "interrupted" in " ".join(p.notes)
    first, second = p["x06"], p["x01"]
    assert "interrupted" in first.explanation and not first.optimal
    assert second.quilt == () and second.nearby == theta.nodes and not second.optimal
    for sp, ex in ((first, exact["x06"]), (second, exact["x01"])):
        assert sp.scale >= ex.scale  # never less noise than the exact plan
        assert qp.markov_quilt(theta, sp.sensitive, sp.quilt).remote == sp.remote


def test_cancel_stops_the_search_cooperatively(monkeypatch):
    """plan(cancel=event): set during the second influence, the search stops at its next
    candidate with the best quilt so far, the attributes not reached get the trivial quilt,
    and the plan says it was interrupted (no exception reaches the caller)."""
    import threading

    import pytest

    from quiltpriv.errors import ParameterError

    theta = qp.load_model("chain")
    q = qp.LinearQuery({"x03": 1.0, "x09": 1.0}, {"x03": (0, 1), "x09": (0, 1)})
    exact = qp.plan(theta, q, ["x06", "x01"], 1.0)
    real = mech.influence_upper_bound_until
    event = threading.Event()
    calls = []

    def cancelling(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            event.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(mech, "influence_upper_bound_until", cancelling)
    p = qp.plan(theta, q, ["x06", "x01"], 1.0, cancel=event)
    assert len(calls) == 2  # nothing evaluated once the event was set
    assert qp.mechanisms.apmqm.was_interrupted(p) and not p.optimal
    first, second = p["x06"], p["x01"]
    assert "cancelled" in first.explanation and not first.optimal
    assert second.quilt == () and second.nearby == theta.nodes and not second.optimal
    for sp, ex in ((first, exact["x06"]), (second, exact["x01"])):
        assert sp.scale >= ex.scale  # never less noise than the exact plan
    monkeypatch.setattr(mech, "influence_upper_bound_until", real)
    # an event already set: every attribute keeps the trivial quilt, in O(1) each
    done = threading.Event()
    done.set()
    p = qp.plan(theta, q, ["x06", "x01"], 1.0, cancel=done)
    assert qp.mechanisms.apmqm.was_interrupted(p)
    assert all(sp.quilt == () and not sp.optimal for sp in p.sensitive)
    # an event never set changes nothing
    assert qp.plan(theta, q, ["x06", "x01"], 1.0, cancel=threading.Event()).to_dict() == \
        exact.to_dict()
    with pytest.raises(ParameterError, match="cancel must be"):
        qp.plan(theta, q, ["x06", "x01"], 1.0, cancel=True)
