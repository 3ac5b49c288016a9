"""``quiltpriv report`` on a published plan or release record: read and verified, never made
again (no planning, no noise drawn), and refused when it does not verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import reference as ref

import quiltpriv.cli.core as cli_core
from quiltpriv.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUERY = ref.PUBLISHED_QUERY


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return ref.publish_student_files(tmp_path_factory.mktemp("published"))


@pytest.fixture
def no_planning(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the report planned again")

    monkeypatch.setattr(cli_core, "plan", refuse)
    monkeypatch.setattr("quiltpriv.mechanisms.apmqm.plan", refuse)


def test_a_record_is_reported_as_published_without_planning(files, tmp_path, no_planning,
                                                            capsys):
    out = tmp_path / "r.html"
    record = json.loads((files / "record.json").read_text())
    assert main(["report", str(ROOT / "models/student.bif"), "--record",
                 str(files / "record.json"), "--check-ledger", str(files / "ledger.db"),
                 "-o", str(out)]) == 0
    rep = json.loads(out.with_suffix(".json").read_text())
    assert rep["plan"] == record["plan"] and rep["release"]["value"] == record["value"]
    assert rep["attestation"]["verify"]["record"]["verified"]
    assert rep["attestation"]["ledger"]["entry"] == 0
    # the requirements, when given, are checked as verify checks them
    assert main(["report", "student", "--record", str(files / "record.json"), "--sensitive",
                 "gender,income", "--epsilon", "1", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", "student", "--record", str(files / "record.json"), "--sensitive",
                 "gender,income,sat", "-o", str(out)]) == 2
    assert "sat" in capsys.readouterr().err
    assert main(["report", "student", "--record", str(files / "record.json"), "--epsilon",
                 "0.5", "-o", str(out)]) == 2
    assert "epsilon" in capsys.readouterr().err


def test_a_published_plan_is_reported_without_planning(files, tmp_path, no_planning, capsys):
    out = tmp_path / "p.html"
    plan = json.loads((files / "plan.json").read_text())
    assert main(["report", str(ROOT / "models/student.bif"), "--plan",
                 str(files / "plan.json"), "--audit", "-o", str(out)]) == 0
    rep = json.loads(out.with_suffix(".json").read_text())
    assert rep["plan"] == plan and rep["attestation"]["verify"]["record"] is None
    assert rep["attestation"]["audit"]["verdict"] == "MET"
    # an edited plan is refused, and nothing is written
    plan["sensitive"]["income"]["scale"] = 10.0
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(plan))
    out2 = tmp_path / "q.html"
    capsys.readouterr()
    assert main(["report", "student", "--plan", str(bad), "-o", str(out2)]) == 2
    err = capsys.readouterr().err
    assert "does not verify" in err and len(err.splitlines()) == 1
    assert not out2.exists() and not out2.with_suffix(".json").exists()


@pytest.mark.parametrize("extra, words", [
    (["--plan", "PLAN", "--record", "RECORD"], "--plan reports a published plan"),
    (["--plan", "PLAN", "--data", "x.csv", "--ledger", "l.db"], "--plan reports"),
    ([], "give --sensitive and --epsilon (or report a published plan"),
    (["--plan", "/no/such/plan.json"], "cannot read plan /no/such/plan.json"),
])
def test_clashing_or_missing_sources_are_refused(files, tmp_path, capsys, extra, words):
    extra = [str(files / "plan.json") if x == "PLAN" else
             str(files / "record.json") if x == "RECORD" else x for x in extra]
    out = tmp_path / "r.html"
    assert main(["report", "student", *extra, "-o", str(out)]) == 2
    assert words in capsys.readouterr().err
    assert not out.exists()
