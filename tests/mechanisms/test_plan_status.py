"""The planner's status as typed data (issue 32, part 3): each attribute's
:class:`~quiltpriv.mechanisms.plan_status.PlanStatus` and the plan's ``interrupted``, made by
real plans, written to and read from the plan file, and derived safely from older files."""

import json
import threading

import pytest

import quiltpriv as qp
import quiltpriv.mechanisms.apmqm.shared as shared_mod
from quiltpriv.mechanisms.apmqm import (
    INTERRUPTED_NOTE,
    PLAN_FORMAT,
    PLAN_FORMAT_2,
    Plan,
    PlanStatus,
    was_interrupted,
)
from quiltpriv.mechanisms.verification import check_plan

QUERY = qp.LinearQuery({"height": 1.0, "weight": -1.0, "sat": 0.5},
                       {"height": (0, 1), "weight": (0, 1), "sat": (0, 1)})


def _statuses(p: Plan) -> dict[str, PlanStatus]:
    return {sp.sensitive: sp.status for sp in p.sensitive}


def _round_trip(p: Plan) -> Plan:
    text = p.to_json()
    d = json.loads(text)
    assert d["format"] == PLAN_FORMAT and d["interrupted"] is p.interrupted
    assert {k: v["status"] for k, v in d["sensitive"].items()} == {
        k: s.value for k, s in _statuses(p).items()}
    back = Plan.from_json(text)
    assert back == p and _statuses(back) == _statuses(p)
    assert all(type(sp.status) is PlanStatus for sp in back.sensitive)
    return back


@pytest.fixture
def student():
    return qp.load_model("student")


def test_each_status_comes_from_a_real_plan_and_survives_the_file(student, monkeypatch):
    seen: set[PlanStatus] = set()
    nodes = student.nodes

    def record(p: Plan, expected: dict[str, PlanStatus], interrupted: bool = False) -> None:
        assert _statuses(p) == expected
        assert p.interrupted is interrupted and was_interrupted(p) is interrupted
        assert p.optimal is all(s is PlanStatus.OPTIMAL for s in expected.values())
        assert all(sp.optimal is (sp.status is PlanStatus.OPTIMAL) for sp in p.sensitive)
        assert check_plan(_round_trip(p), student, QUERY).ok
        seen.update(expected.values())

    exact = qp.plan(student, QUERY, nodes, 1.5)
    record(exact, dict.fromkeys(nodes, PlanStatus.OPTIMAL))
    # a time limit passed before the first candidate: every search stops at once
    timed = qp.plan(student, QUERY, nodes, 1.5, time_limit=1e-9)
    record(timed, dict.fromkeys(nodes, PlanStatus.TIME_LIMIT))
    assert any("time limit of 1e-09 s was reached" in n for n in timed.notes)
    # a budget of one candidate: the branch and bound needs more
    budget = qp.plan(student, QUERY, nodes, 1.5, max_candidates=1)
    record(budget, dict.fromkeys(nodes, PlanStatus.BUDGET))
    assert any("budget of 1 candidates was reached" in n for n in budget.notes)
    # a joint table limit of 2 entries: candidates skipped, the search itself finished
    count = qp.CountQuery(["height"], 100)
    limited = qp.plan(qp.load_model("student"), count, "income", 1.0, max_table=2)
    assert _statuses(limited) == {"income": PlanStatus.UNRESOLVED}
    assert not limited.interrupted and not any("was reached" in n for n in limited.notes)
    assert Plan.from_json(limited.to_json()) == limited
    seen.add(PlanStatus.UNRESOLVED)
    # cancelled before it starts: the first search stops, the others are not reached
    done = threading.Event()
    done.set()
    cancelled = qp.plan(student, QUERY, nodes, 1.5, cancel=done)
    record(cancelled, {nodes[0]: PlanStatus.CANCELLED}
           | dict.fromkeys(nodes[1:], PlanStatus.NOT_REACHED), interrupted=True)
    assert INTERRUPTED_NOTE in cancelled.notes
    # Ctrl-C during the first attribute's second influence
    real = shared_mod.influence_upper_bound_until
    calls = {"n": 0}

    def interrupting(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(shared_mod, "influence_upper_bound_until", interrupting)
    stopped = qp.plan(qp.load_model("student"), QUERY, nodes, 1.5)
    monkeypatch.setattr(shared_mod, "influence_upper_bound_until", real)
    record(stopped, {nodes[0]: PlanStatus.INTERRUPTED}
           | dict.fromkeys(nodes[1:], PlanStatus.NOT_REACHED), interrupted=True)
    # every status a plan can make was made (NOT_RECORDED only comes from old files)
    assert seen == set(PlanStatus) - {PlanStatus.NOT_RECORDED}
    # the text, JSON and HTML views show it
    text = budget.explain()
    assert "not proven (budget)" in text and "not proven (time limit)" in timed.explain()
    assert "not proven (not reached)" in cancelled._repr_html_()
    assert "candidate budget was reached" in budget.sensitive[0]._repr_html_()


def test_older_files_read_with_a_safe_status(student):
    timed = qp.plan(student, QUERY, ["income", "sat"], 1.5, time_limit=1e-9)
    exact = qp.plan(student, QUERY, ["income", "sat"], 1.5)
    for p in (timed, exact):
        d = p.to_dict()
        d["format"] = PLAN_FORMAT_2  # written before the status was data
        del d["interrupted"]
        for entry in d["sensitive"].values():
            del entry["status"]
        back = Plan.from_dict(d)
        # an optimal attribute's status is optimal; another's is not recorded (its
        # explanation still says why, in words, and is never parsed)
        want = PlanStatus.OPTIMAL if p.optimal else PlanStatus.NOT_RECORDED
        assert all(sp.status is want for sp in back.sensitive)
        assert back.scale == p.scale and not back.interrupted
        assert check_plan(back, student, QUERY).ok
        # written again, it is a /4 file with the derived status
        assert json.loads(back.to_json())["format"] == PLAN_FORMAT
    # an interrupted plan of /2 kept only its note: read as interrupted
    done = threading.Event()
    done.set()
    d = qp.plan(student, QUERY, ["income", "sat"], 1.5, cancel=done).to_dict()
    d["format"] = PLAN_FORMAT_2
    del d["interrupted"]
    for entry in d["sensitive"].values():
        del entry["status"]
    assert Plan.from_dict(d).interrupted


def test_the_file_refuses_a_bad_status(student):
    d = qp.plan(student, QUERY, ["income", "sat"], 1.5, max_candidates=1).to_dict()
    entry = d["sensitive"]["income"]
    for bad, match in (("done", "status must be one of"), (3, "status must be a string"),
                       (None, "status must be a string")):
        entry["status"] = bad
        with pytest.raises(qp.PlanError, match=match):
            Plan.from_dict(d)
    # claiming optimality while the status says the search stopped: refused
    entry["status"] = "budget"
    entry["optimal"] = True
    with pytest.raises(qp.PlanError, match="status is 'budget' but optimal is true"):
        Plan.from_dict(d)
    # withdrawing a claim of optimality by hand claims less: the status is then not recorded
    d = qp.plan(student, QUERY, ["income"], 1.5).to_dict()
    d["sensitive"]["income"]["optimal"] = False
    d["optimal"] = False
    assert Plan.from_dict(d)["income"].status is PlanStatus.NOT_RECORDED
    d["interrupted"] = "no"
    with pytest.raises(qp.PlanError, match="interrupted"):
        Plan.from_dict(d)


def test_pickles_keep_the_status_and_old_pickles_derive_it(student):
    import pickle

    done = threading.Event()
    done.set()
    p = qp.plan(student, QUERY, ["income", "sat"], 1.5, cancel=done)
    back = pickle.loads(pickle.dumps(p))
    assert back == p and back.interrupted and _statuses(back) == _statuses(p)
    # pickled before the fields existed: derived as from a /2 file
    state = dict(p.__getstate__())
    del state["interrupted"]
    old = Plan.__new__(Plan)
    old.__setstate__(state)
    assert old.interrupted  # its notes hold the interruption note
    sp = p["income"]
    sp_state = dict(vars(sp))
    del sp_state["status"]
    again = type(sp).__new__(type(sp))
    again.__setstate__(sp_state)
    assert again.status is PlanStatus.NOT_RECORDED and not again.optimal
