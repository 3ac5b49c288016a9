"""Reading a model within a time limit (``load_model(..., time_limit=)``, issue 36).

There is no plan without a model, so a limit that passes while the model is read refuses
the reading with a :class:`TimeLimitError` that names the limit and how far reading got;
every reader checks it between its passes. No test here sleeps or times anything: a limit
that has passed is one that started long ago, and a limit that passes at its k-th reading
(:class:`_PassesAt`) stands in for one that passes part-way through.
"""

from __future__ import annotations

import gzip
import json
import shutil
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import quiltpriv as qp
from quiltpriv.errors import QuiltPrivError, TimeLimitError
from quiltpriv.model.loading import load_model, load_theta
from quiltpriv.model.readers import read_bif, read_xmlbif
from quiltpriv.utils.time_limit import PACE, LimitCheck, TimeLimit

ROOT = Path(__file__).resolve().parents[2]
FLIP = [[0.9, 0.1], [0.1, 0.9]]


def _passed(seconds: float = 5.0) -> TimeLimit:
    """A limit of ``seconds`` that started long enough ago to have passed."""
    return TimeLimit(seconds, time.monotonic() - seconds - 10.0)


@dataclass(frozen=True)
class _PassesAt(TimeLimit):
    """A limit of an hour that counts its readings and has passed from its ``at``-th on
    (``at=0``: never): a limit passing part-way through reading, without a clock."""

    at: int = 0
    readings: list[int] = field(default_factory=list)

    def passed(self) -> bool:
        self.readings.append(1)
        return 0 < self.at <= len(self.readings)


def _xmlbif(tmp_path: Path) -> Path:
    from pgmpy.readwrite import BIFReader, XMLBIFWriter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = BIFReader(path=str(ROOT / "models" / "student.bif")).get_model()
        xml = tmp_path / "student.xml"
        XMLBIFWriter(model).write(str(xml))
    return xml


def _spec(kind: str, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A model spec of each reader :func:`load_model` dispatches to, and its keywords."""
    student = qp.load_model("student")
    if kind == "bundled":
        return "student", {}
    if kind == "bundled:function":
        return "student:theta", {}
    if kind == "module":
        return str(ROOT / "models" / "student.py"), {}
    if kind in ("bif", "bif-pgmpy"):
        return str(ROOT / "models" / "student.bif"), {"reader": "pgmpy"} if "pgmpy" in kind \
            else {}
    if kind == "bif.gz":
        path = tmp_path / "student.bif.gz"
        with open(ROOT / "models" / "student.bif", "rb") as src, gzip.open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return str(path), {}
    if kind in ("xmlbif", "xmlbif-pgmpy"):
        return str(_xmlbif(tmp_path)), {"reader": "pgmpy"} if "pgmpy" in kind else {}
    if kind == "json/2":
        return student.save(tmp_path / "student.json"), {}
    if kind == "json/1":
        path = tmp_path / "student1.json"
        path.write_text(json.dumps(qp.theta_to_dict(student, version=1)))
        return str(path), {}
    assert kind == "json.gz"
    path = tmp_path / "student.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(qp.theta_to_dict(student), fh)
    return str(path), {}


KINDS = ["bundled", "bundled:function", "module", "bif", "bif-pgmpy", "bif.gz", "xmlbif",
         "xmlbif-pgmpy", "json/2", "json/1", "json.gz"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_passed_limit_refuses_every_reader_and_a_running_one_reads(tmp_path, kind):
    spec, kw = _spec(kind, tmp_path)
    with pytest.raises(TimeLimitError) as err:
        load_model(spec, time_limit=_passed(), **kw)
    message = str(err.value)
    assert message.startswith(f"the time limit of 5 s was reached while reading the model "
                              f"{spec} ("), message
    assert "\n" not in message and isinstance(err.value, QuiltPrivError)
    with pytest.raises(TimeLimitError, match="the time limit of 5 s was reached"):
        load_theta([spec], time_limit=_passed(), **kw)
    # a limit that has not passed changes nothing: the same model as without one
    want = load_model(spec, **kw)
    for limit in (TimeLimit.starting_now(3600), 3600, 3600.0, _PassesAt(3600, time.monotonic())):
        got = load_model(spec, time_limit=limit, **kw)
        assert got.fingerprint() == want.fingerprint() and got.names == want.names


@pytest.mark.parametrize("kind", ["module", "bif", "bif-pgmpy", "xmlbif", "xmlbif-pgmpy",
                                  "json/2", "json/1", "json.gz"])
def test_a_limit_passing_at_any_check_refuses_cleanly(tmp_path, kind):
    # every place reading looks at the limit refuses with the limit and how far it got
    # (never another error, never a model): the k-th reading of the limit is the first past it
    spec, kw = _spec(kind, tmp_path)
    counted = _PassesAt(3600, time.monotonic())
    want = load_model(spec, time_limit=counted, **kw)
    checks = len(counted.readings)
    assert checks >= (8 if kind.startswith("json") else 3), checks
    stages = set()
    for k in range(1, checks + 1):
        with pytest.raises(TimeLimitError) as err:
            load_model(spec, time_limit=_PassesAt(3600, time.monotonic(), at=k), **kw)
        message = str(err.value)
        assert message.startswith(f"the time limit of 3600 s was reached while reading the "
                                  f"model {spec} (") and message.endswith(")"), message
        stages.add(message)
    assert len(stages) >= 3, stages  # the messages say how far reading got
    assert load_model(spec, **kw).fingerprint() == want.fingerprint()


def test_json_reading_checks_the_limit_within_its_passes(tmp_path):
    # a long series: the JSON reader looks at the limit between each pass over its nodes
    # (decompressing, parsing, checking states and parents, ordering, tables, building),
    # the node count in its messages
    n = 3000
    path = tmp_path / "series.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(qp.theta_to_dict(qp.markov_chain(n, FLIP, [0.5, 0.5])), fh)
    counted = _PassesAt(3600, time.monotonic())
    load_model(path, time_limit=counted)
    messages = []
    for k in range(1, len(counted.readings) + 1):
        with pytest.raises(TimeLimitError) as err:
            load_model(path, time_limit=_PassesAt(3600, time.monotonic(), at=k))
        messages.append(str(err.value))
    assert any("before it was opened" in m for m in messages)
    assert any("bytes of its text decompressed" in m for m in messages)
    assert any("its text parsed" in m for m in messages)
    assert any(f"states and parents of {n:,} nodes" in m for m in messages)
    assert any(f"building Theta of {n:,} nodes" in m for m in messages)
    assert any(f"{n:,} nodes read, their states not yet looked at" in m for m in messages)


def test_paced_passes_check_every_pace_items():
    items = list(range(2 * PACE + 5))
    counted = _PassesAt(3600, time.monotonic())
    check = LimitCheck(counted, "reading the model m.json")
    assert list(check.paced(items, "{done:,} of {total:,} nodes")) == items
    assert len(counted.readings) == 3  # before each slice of PACE items
    seen: list[int] = []
    stopped = LimitCheck(_PassesAt(3600, time.monotonic(), at=3), "reading the model m.json")
    with pytest.raises(TimeLimitError) as err:
        seen.extend(stopped.paced(items, "{done:,} of {total:,} nodes checked"))
    assert seen == items[:2 * PACE]  # the items before the check that found it passed
    assert str(err.value) == (f"the time limit of 3600 s was reached while reading the model "
                              f"m.json ({2 * PACE:,} of {len(items):,} nodes checked)")
    # without a limit: the items themselves, never a check
    assert LimitCheck(None, "x").paced(items, "{done}") is items
    LimitCheck(None, "x")("anything")


def test_bif_and_xmlbif_readers_take_a_time_limit(tmp_path):
    text = (ROOT / "models" / "student.bif").read_text(encoding="utf-8")
    with pytest.raises(TimeLimitError, match=r"reading the model s\.bif \(before its text"):
        read_bif(text, "s.bif", time_limit=_passed())
    assert read_bif(text, "s.bif", time_limit=60).fingerprint() == \
        read_bif(text, "s.bif").fingerprint()
    xml = _xmlbif(tmp_path).read_text(encoding="utf-8")
    with pytest.raises(TimeLimitError, match=r"reading the model s\.xml \(before its text"):
        read_xmlbif(xml, "s.xml", time_limit=_passed())
    counted = _PassesAt(3600, time.monotonic())
    read_xmlbif(xml, "s.xml", time_limit=counted)
    with pytest.raises(TimeLimitError, match=r"of 5 variables read"):
        read_xmlbif(xml, "s.xml", time_limit=_PassesAt(3600, time.monotonic(), at=3))
