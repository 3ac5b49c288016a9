"""The auditor's workflow in a real browser: load a published record, verify, audit, report.

Headless Chromium through Selenium, as in test_explorer_browser.py (skipped without them). The
page is opened on the student model as a BIF file; the publisher's record (made with the
command line) is chosen in the file input as a person would, verified with its data and
ledger, audited, and the signed report written; every number shown is compared with the
Python functions on the same files. Then the record is edited (its noise lowered) and loaded
by path: the page shows the refusal. A file that is not JSON is refused with the server's
message.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.mechanisms.attained import attained_epsilons
from quiltpriv.mechanisms.fragility import fragility
from quiltpriv.mechanisms.verification import query_from_dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_explorer_browser import CHROMEDRIVER, CHROMIUM, TIMEOUT, _by, _wait  # noqa: E402

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed "
                                "(pip install '.[browser]')")
pytestmark = [pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="headless Chromium and its driver not installed (Debian packages 'chromium' and "
           "'chromium-driver'; .ci/run installs them)"), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
QUERY = ["--query", "count", "--attributes", "income", "--where", "income == 1", "--domain",
         "income=0|1", "--records", "1000", "--epsilon", "1"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from selenium.webdriver.chrome.service import Service

    from quiltpriv.explorer.server import Explorer, ExplorerServer

    d = tmp_path_factory.mktemp("audit-browser")
    assert main(["release", "student", "--sensitive", "gender,income", *QUERY, "--data",
                 str(ROOT / "examples/data/students.csv"), "--ledger", str(d / "ledger.db"),
                 "-o", str(d / "record.json")]) == 0
    bif = ROOT / "models" / "student.bif"
    server = ExplorerServer(Explorer(qp.load_model(str(bif)), str(bif), sources=[bif]))
    server.start_in_thread()
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                f"--user-data-dir={tmp_path_factory.mktemp('profile')}",
                "--window-size=1400,1600"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(TIMEOUT)
    yield server, driver, d
    driver.quit()
    server.stop()


def _body(d, name):
    return d.find_element(*_by("body")).get_attribute(f"data-{name}")


def test_published_record_verify_audit_and_signed_report(setup):
    server, d, folder = setup
    record_path = folder / "record.json"
    record = json.loads(record_path.read_text())
    plan = qp.Plan.from_dict(record["plan"])
    query = query_from_dict(plan.query)
    theta = server.app.state.theta

    d.get(server.url)
    _wait(d, lambda d: _body(d, "state") == "ready", "the page")
    # choose the file as a person does (the file input), then verify with data and ledger
    d.find_element(*_by("#pub-file")).send_keys(str(record_path))
    _wait(d, lambda d: _body(d, "audit") == "loaded", "the record to load")
    assert "release record record.json" in d.find_element(*_by("#pub-doc")).text
    d.find_element(*_by("#pub-data")).send_keys(str(ROOT / "examples/data/students.csv"))
    d.find_element(*_by("#pub-ledger")).send_keys(str(folder / "ledger.db"))
    d.find_element(*_by("#pub-audit")).click()
    d.find_element(*_by("#pub-verify")).click()
    _wait(d, lambda d: _body(d, "audit") == "ready", "the verification")
    assert d.find_element(*_by("#pub-verdict")).get_attribute("data-verified") == "true"
    checks = {r.get_attribute("data-check"): r.text
              for r in d.find_elements(*_by("#pub-checks tbody tr"))}
    assert set(checks) == {"embedded plan", "model", "query", "guarantee", "calibration",
                           "noise drawn", "data", "ledger"}
    assert all(" OK " in t for t in checks.values())
    assert "noise actually added" in d.find_element(*_by("#pub-values")).text
    shown = {r.get_attribute("data-node"): float(r.get_attribute("data-epsilon"))
             for r in d.find_elements(*_by("#pub-attained tbody tr"))}
    assert shown == {a.node: a.epsilon for a in attained_epsilons(plan, query)}
    verdicts = {r.get_attribute("data-node"): r.get_attribute("data-verdict")
                for r in d.find_elements(*_by("#pub-fragility tbody tr"))}
    assert verdicts == {r.node: r.verdict for r in fragility(theta, plan, query).rows}
    assert d.find_element(*_by("#pub-audit")).get_attribute("data-verdict") == "MET"
    assert "300.15" in d.find_element(*_by("#pub-audit")).text  # the least sufficient scale
    for sp in plan.sensitive:
        sec = d.find_element(*_by(f'#pub-quilts section[data-node="{sp.sensitive}"]'))
        chosen = sec.find_elements(*_by("tr.chosen"))
        assert len(chosen) == 1 and json.loads(chosen[0].get_attribute("data-quilt")) == list(
            sp.quilt)
        assert sec.find_elements(*_by("svg g.node"))

    # the signed report, from the published plan and record
    out = folder / "signed.html"
    d.find_element(*_by("#pub-report-path")).send_keys(str(out))
    d.find_element(*_by("#pub-report")).click()
    _wait(d, lambda d: _body(d, "report") in ("done", "error"), "the report")
    assert _body(d, "report") == "done", d.find_element(*_by("#pub-status")).text
    att = json.loads(out.with_suffix(".json").read_text())["attestation"]
    assert att["verify"]["record"]["verified"] and att["ledger"]["entry"] == 0
    assert att["audit"]["verdict"] == "MET"
    assert json.loads(out.with_suffix(".json").read_text())["release"]["value"] == \
        record["value"]

    # an edited record (noise lowered), loaded by its path: refused, and the page says why
    edited = json.loads(json.dumps(record))
    edited["scale"] = edited["calibration"]["noise_scale_used"] = 10.0
    bad = folder / "edited.json"
    bad.write_text(json.dumps(edited))
    d.find_element(*_by("#pub-path")).send_keys(str(bad))
    d.find_element(*_by("#pub-load")).click()
    _wait(d, lambda d: "edited.json" in d.find_element(*_by("#pub-doc")).text, "the load")
    d.find_element(*_by("#pub-data")).clear()
    d.find_element(*_by("#pub-ledger")).clear()
    d.find_element(*_by("#pub-verify")).click()
    _wait(d, lambda d: d.find_element(*_by("#pub-verdict")).get_attribute(
        "data-verified") == "false", "the refusal")
    assert "noise of scale 10.0 was drawn, below" in d.find_element(*_by("#pub-verdict")).text

    # not JSON: the server's message, and the record loaded before is kept
    junk = folder / "junk.json"
    junk.write_text("this is not json")
    path = d.find_element(*_by("#pub-path"))
    path.clear()
    path.send_keys(str(junk))
    d.find_element(*_by("#pub-load")).click()
    _wait(d, lambda d: "not valid JSON" in d.find_element(*_by("#pub-status")).text,
          "the parse error")
    assert "edited.json" in d.find_element(*_by("#pub-doc")).text
