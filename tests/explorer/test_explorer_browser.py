"""The explorer as a person uses it: headless Chromium driven by Selenium.

Selenium drives Debian's ``chromium`` through Debian's ``chromium-driver`` (both installed by
``.ci/run``; Selenium from the ``browser`` extra). Both paths are given explicitly, so Selenium
downloads nothing. Without them the test is skipped with a message.

The page is loaded on the student model; epsilon and a table cell are changed as a person
would (typing, clicking a node); after each change the rendered quilt, scale and candidate
rows are compared with the Python planner on the same inputs. Save-as is read back with
``qp.load_model``, a bad predicate shows the server's message, and a screenshot is checked
for content and for the roles' colours.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import numpy as np
import pytest
import reference as ref

import quiltpriv as qp
from quiltpriv.model.loading import theta_to_dict
from quiltpriv.reporting.report import candidate_quilts

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed "
                                "(pip install '.[browser]')")

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"))
                 if p), None)
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="headless Chromium and its driver not installed (Debian packages 'chromium' and "
           "'chromium-driver'; .ci/run installs them)")

# Fill colours of the roles (quiltpriv.reporting.drawing.ROLE_FILL).
NEARBY, QUILT, REMOTE = (0xF5, 0xB0, 0x41), (0x5D, 0xAD, 0xE2), (0xD5, 0xD8, 0xDC)
TIMEOUT = 60


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    from quiltpriv.explorer.server import Explorer, ExplorerServer

    d = tmp_path_factory.mktemp("explorer")
    model = d / "student.json"
    model.write_text(json.dumps(theta_to_dict(qp.load_model("student"))), encoding="utf-8")
    theta = qp.load_model(str(model))
    initial = {"sensitive": "income", "epsilon": 1,
               "query": {"kind": "count", "attributes": "height,sat", "records": 1000}}
    server = ExplorerServer(Explorer(theta, str(model), sources=[model], initial=initial))
    server.start_in_thread()
    yield server, theta, d
    server.stop()


@pytest.fixture(scope="module")
def browser(explorer, tmp_path_factory):
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("profile")
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                "--window-size=1400,1600"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(TIMEOUT)
    yield driver
    driver.quit()


def _wait(driver, condition, what):
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # The page re-renders as plans arrive: an element found a moment ago may be replaced
    # before it is read, which only means "not yet", so the condition is polled again.
    return WebDriverWait(driver, TIMEOUT, poll_frequency=0.05,
                         ignored_exceptions=(StaleElementReferenceException,
                                             NoSuchElementException)).until(
        lambda d: condition(d), message=f"timed out waiting for {what}")


def _by(selector):
    from selenium.webdriver.common.by import By

    return By.CSS_SELECTOR, selector


def _shown(driver):
    """The plan the page shows: scale, epsilon, quilt and candidate rows (raw values)."""
    scale = driver.find_element(*_by("#overall-scale"))
    rows = [(json.loads(r.get_attribute("data-quilt")), r.get_attribute("data-scale"),
             r.get_attribute("data-influence"), "chosen" in (r.get_attribute("class") or ""))
            for r in driver.find_elements(*_by("#candidates tbody tr"))]
    return {"scale": float(scale.get_attribute("data-value")),
            "epsilon": float(scale.get_attribute("data-epsilon")),
            "quilt": json.loads(driver.find_element(*_by("#fact-quilt"))
                                .get_attribute("data-value")),
            "rows": rows}


def _expected(theta, query, eps):
    p = qp.plan(theta, query, ["income"], eps, time_limit=30)
    sp = p["income"]
    ranked, _ = candidate_quilts(theta, query, "income", eps)
    rows = [(list(c.quilt.quilt), repr(c.scale), repr(c.influence),
             c.quilt.quilt == sp.quilt) for c in ranked[:15]]
    return p, rows


def _matches(shown, p, rows):
    assert shown["scale"] == p.scale and shown["epsilon"] == p.epsilon
    assert shown["quilt"] == list(p["income"].quilt)
    assert len(shown["rows"]) == len(rows)
    for (q, s, e, chosen), (wq, ws, we, wchosen) in zip(shown["rows"], rows, strict=True):
        assert q == wq and chosen == wchosen
        # JavaScript prints a float with the shortest digits that read back the same.
        assert (s == "inf" and ws == "inf") or float(s) == float(ws)
        assert float(e) == float(we)


def _ready_with(driver, attr, value):
    def done(d):
        if d.find_element(*_by("body")).get_attribute("data-state") != "ready":
            return False
        els = d.find_elements(*_by("#overall-scale"))
        return bool(els) and els[0].get_attribute(attr) == value
    return done


# ~12 s (starting Chromium through its driver, then every edit): slow. By default the explorer's
# server and planner are checked over HTTP (test_explorer_api.py) and a page in a real browser
# by test_report_browser.py.
@pytest.mark.slow
def test_the_page_follows_the_python_planner(explorer, browser):
    server, theta, folder = explorer
    d = browser
    d.get(server.url)
    query = qp.CountQuery(["height", "sat"], 1000)
    _wait(d, _ready_with(d, "data-epsilon", "1"), "the first plan")
    _matches(_shown(d), *_expected(theta, query, 1.0))
    # The drawing is the server's: one box per node, the sensitive one outlined.
    nodes = d.find_elements(*_by("#drawing g.node"))
    assert sorted(n.get_attribute("data-node") for n in nodes) == sorted(theta.nodes)
    assert d.find_element(*_by("#drawing g.node.sensitive")).get_attribute(
        "data-node") == "income"

    # Epsilon, typed as a person does.
    eps = d.find_element(*_by("#eps"))
    eps.clear()
    eps.send_keys("2.5\t")
    _wait(d, _ready_with(d, "data-epsilon", "2.5"), "the plan at epsilon 2.5")
    shown = _shown(d)
    p, rows = _expected(theta, query, 2.5)
    _matches(shown, p, rows)
    assert shown["quilt"] != [] and shown["scale"] != 1000.0  # a real quilt now

    # A table cell: click the node, edit P(sat = first state | income = first state).
    d.find_element(*_by('#drawing g.node[data-node="sat"]')).click()
    _wait(d, lambda d: d.find_elements(*_by('#cpd input[data-row="0"][data-column="0"]')),
          "the table editor")
    cell = d.find_element(*_by('#cpd input[data-row="0"][data-column="0"]'))
    assert float(cell.get_attribute("title")) == theta.members[0]["sat"].table[0, 0]
    before = d.find_element(*_by("body")).get_attribute("data-result-fingerprint")
    cell.clear()
    cell.send_keys("0.45\t")
    _wait(d, lambda d: d.find_element(*_by("body")).get_attribute("data-result-fingerprint")
          not in (before, None) and d.find_element(*_by("body")).get_attribute(
              "data-state") == "ready", "the plan of the edited model")
    edited = server.app.state.theta
    assert d.find_element(*_by("body")).get_attribute(
        "data-result-fingerprint") == edited.fingerprint()
    col = theta.members[0]["sat"].table[:, 0]
    want = [0.45] + [float(v) * (0.55 / float(col[1:].sum())) for v in col[1:]]
    assert np.abs(edited.members[0]["sat"].table[:, 0] - want).max() <= 1e-16
    _matches(_shown(d), *_expected(edited, query, 2.5))
    assert not d.find_element(*_by("#edited")).get_attribute("hidden")

    # Save as: read back with qp.load_model.
    out = folder / "edited-by-browser.json"
    path = d.find_element(*_by("#save-path"))
    path.send_keys(str(out))
    d.find_element(*_by("#save")).click()
    _wait(d, lambda d: d.find_element(*_by("#file-status")).text.startswith("saved"),
          "the save")
    back = qp.load_model(str(out))
    for v in edited.nodes:
        assert np.abs(back.members[0][v].table - edited.members[0][v].table).max() <= 2e-16
    assert qp.plan(back, query, "income", 2.5).scale == pytest.approx(
        qp.plan(edited, query, "income", 2.5).scale, rel=1e-12)

    # The original file cannot be overwritten; the page shows why.
    path.clear()
    path.send_keys(str(folder / "student.json"))
    d.find_element(*_by("#save")).click()
    _wait(d, lambda d: "never modified" in d.find_element(*_by("#file-status")).text,
          "the refusal")

    # A bad predicate: the server's message is shown, and the last plan stays, visibly marked
    # out of date (dimmed under a notice) until a plan succeeds again.
    assert d.find_element(*_by("body")).get_attribute("data-stale") == "false"
    assert not d.find_element(*_by("#stale")).is_displayed()
    where = d.find_element(*_by("#q-where"))
    where.send_keys("height > 0.4 and @data.income == 1\t")
    _wait(d, lambda d: d.find_element(*_by("#error")).is_displayed(), "the error")
    assert "'@' names a Python variable" in d.find_element(*_by("#error")).text
    assert d.find_element(*_by("body")).get_attribute("data-stale") == "true"
    stale = d.find_element(*_by("#stale"))
    assert stale.is_displayed() and "Out of date" in stale.text and "2.5" in stale.text
    for part in d.find_elements(*_by(".plan-part")):
        assert float(part.value_of_css_property("opacity")) < 0.5
    where.clear()
    where.send_keys("\t")
    _wait(d, lambda d: not d.find_element(*_by("#error")).is_displayed()
          and d.find_element(*_by("body")).get_attribute("data-state") == "ready",
          "the error to clear")
    assert d.find_element(*_by("body")).get_attribute("data-stale") == "false"
    assert not d.find_element(*_by("#stale")).is_displayed()
    assert float(d.find_element(*_by("#summary")).value_of_css_property("opacity")) == 1.0

    # The mechanisms side by side: the same rows as quiltpriv.mechanisms.compare.
    from quiltpriv.mechanisms.compare import compare

    cmp = compare(edited, query, "income", 2.5)
    rows = d.find_elements(*_by("#comparison tbody tr"))
    assert [r.get_attribute("data-mechanism") for r in rows] == [m.mechanism for m in cmp.rows]
    best = d.find_element(*_by("#comparison tbody tr.best")).get_attribute("data-mechanism")
    assert best == cmp.best.mechanism

    # Undo brings back the file's model and its plan.
    d.find_element(*_by("#undo")).click()
    _wait(d, lambda d: d.find_element(*_by("body")).get_attribute(
        "data-result-fingerprint") == theta.fingerprint() and d.find_element(
        *_by("body")).get_attribute("data-state") == "ready", "the undo")
    _matches(_shown(d), *_expected(theta, query, 2.5))


@pytest.mark.slow  # ~4 s of CPU; the page's numbers are checked by the tests above
def test_screenshot_is_not_blank_and_shows_the_roles(explorer, browser, tmp_path):
    import matplotlib.image as mpimg

    server, theta, _ = explorer
    d = browser
    d.get(server.url)
    _wait(d, lambda d: d.find_element(*_by("body")).get_attribute("data-state") == "ready",
          "the page")
    # A count over gender, height and sat at epsilon 2.5: Q = {gender, sat}, N = {income},
    # R = {height, weight}, so every role is drawn.
    d.find_element(*_by('#attr-list input[value="gender"]')).click()
    eps = d.find_element(*_by("#eps"))
    eps.clear()
    eps.send_keys("2.5\t")
    sp = qp.plan(theta, qp.CountQuery(["gender", "height", "sat"], 1000), "income",
                 2.5)["income"]
    assert sp.quilt and sp.remote and sp.nearby
    _wait(d, lambda d: d.find_element(*_by("body")).get_attribute("data-state") == "ready"
          and json.loads(d.find_element(*_by("#fact-quilt")).get_attribute("data-value"))
          == list(sp.quilt), "the plan with every role")
    d.find_element(*_by('#drawing g.node[data-node="sat"]')).click()  # the table editor too
    _wait(d, lambda d: d.find_elements(*_by("#cpd input")), "the table editor")
    shot = tmp_path / "explorer.png"
    assert d.save_screenshot(str(shot))
    img = (mpimg.imread(shot)[..., :3] * 255).round().astype(int)
    assert img.shape[0] >= 1000 and img.std() > 10  # not a blank page
    pixels = img.reshape(-1, 3)

    def count(rgb):
        return int((np.abs(pixels - np.array(rgb)).sum(axis=1) <= 6).sum())

    assert count(NEARBY) > 500 and count(QUILT) > 500 and count(REMOTE) > 300
    if os.environ.get("QUILTPRIV_EXPLORER_SCREENSHOT"):  # docs/make_figures.py's hook
        shutil.copy(shot, os.environ["QUILTPRIV_EXPLORER_SCREENSHOT"])


def ensemble(n=21, seed=3):
    """The student model and ``n - 1`` members drawn around it: a stand-in for a learned Theta
    (a point estimate and its bootstrap resamples), so that members disagree on every entry."""
    return ref.student_ensemble(n, seed, concentration=200.0)


EVIL = "<script>alert(1)</script>"
PROVENANCE = {
    "source": "learned", "data_sha256": "ab" * 32, "data_public": True, "populations": 303,
    "population_column": None,
    "parameters": {v: {"kind": "share", "binning": "quantile", "edges": [0.0, 0.4, 1.0],
                       "states": ["0.2", "0.7"]} for v in ("income", "sat")},
    "structure": {"method": "hill_climb", "learned_edges": [["income", "sat"], ["gender", EVIL]],
                  "required_edges": []},
    EVIL: {"note": f"a {EVIL} & more", "deep": {"a": {"b": {"c": {"d": {"e": {"f": [1]}}}}}}},
}


@pytest.fixture(scope="module")
def ensemble_explorer():
    from quiltpriv.explorer.server import Explorer, ExplorerServer

    theta = ensemble().with_provenance(PROVENANCE)
    initial = {"sensitive": "income", "epsilon": 1,
               "query": {"kind": "count", "attributes": "sat", "records": 100}}
    server = ExplorerServer(Explorer(theta, "ensemble", initial=initial))
    server.start_in_thread()
    yield server, theta
    server.stop()


def _state(d):
    return d.find_element(*_by("body")).get_attribute("data-state")


def _value(d, selector):
    return d.find_element(*_by(selector)).get_attribute("value")


@pytest.mark.slow  # ~3 s
def test_categories_follow_the_attributes(explorer, browser):
    server, theta, _ = explorer
    d = browser
    d.get(server.url)
    _wait(d, lambda d: _state(d) == "ready", "the first plan")
    from selenium.webdriver.support.ui import Select

    Select(d.find_element(*_by("#q-kind"))).select_by_value("histogram")
    cats = d.find_element(*_by("#q-categories"))
    cats.send_keys("height=short|tall,sat=low|high\t")
    _wait(d, lambda d: _state(d) == "ready" and "--categories 'height=short|tall,sat=low|high'"
          in d.find_element(*_by("#command")).text, "the histogram over height and sat")
    # Unticking height takes its categories out (they would name an attribute no longer
    # queried: the server refuses that); the plan is the histogram over sat alone.
    d.find_element(*_by('#attr-list input[value="height"]')).click()
    _wait(d, lambda d: _value(d, "#q-categories") == "sat=low|high", "the categories of sat")
    note = d.find_element(*_by("#attr-note"))
    assert note.is_displayed() and "height" in note.text
    # The note lasts while height's entry is set aside, whatever else changes meanwhile.
    d.find_element(*_by('#attr-list input[value="weight"]')).click()
    d.find_element(*_by('#attr-list input[value="weight"]')).click()
    assert note.is_displayed() and "height" in note.text
    assert _value(d, "#q-categories") == "sat=low|high"
    _wait(d, lambda d: _state(d) == "ready" and "--attributes sat --records 1000" in
          d.find_element(*_by("#command")).text, "the histogram over sat")
    command = d.find_element(*_by("#command")).text
    assert "--categories 'sat=low|high'" in command and "height=" not in command
    assert not d.find_element(*_by("#error")).is_displayed()
    # Another attribute: its categories are its own to declare; height's come back with it.
    d.find_element(*_by('#attr-list input[value="height"]')).click()
    _wait(d, lambda d: _value(d, "#q-categories") == "sat=low|high,height=short|tall",
          "height's categories back")
    assert not d.find_element(*_by("#attr-note")).is_displayed()
    _wait(d, lambda d: _state(d) == "ready" and "--attributes sat,height" in
          d.find_element(*_by("#command")).text, "the histogram over both again")
    p = qp.plan(theta, qp.HistogramQuery(["sat", "height"], 1000, categories={
        "sat": ("low", "high"), "height": ("short", "tall")}), "income", 1.0)
    assert float(d.find_element(*_by("#overall-scale")).get_attribute("data-value")) == p.scale


def _cells(d):
    """The table editor's boxes: (row, column) -> (text shown, box cut off?)."""
    out = {}
    for i in d.find_elements(*_by("#cpd input")):
        cut = d.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", i)
        out[int(i.get_attribute("data-row")), int(i.get_attribute("data-column"))] = (
            i.get_attribute("value"), cut)
    return out


@pytest.mark.slow  # ~4 s
def test_table_editor_shows_every_digit_and_edits_all_members(ensemble_explorer, browser):
    server, theta = ensemble_explorer
    d = browser
    d.get(server.url)
    _wait(d, lambda d: _state(d) == "ready", "the first plan")
    d.find_element(*_by('#drawing g.node[data-node="sat"]')).click()
    _wait(d, lambda d: len(d.find_elements(*_by("#cpd input"))) == 9, "the table editor")
    from selenium.webdriver.support.ui import Select

    member = Select(d.find_element(*_by("#member")))
    assert len(member.options) == 21 and member.options[3].text == "3: bootstrap-3"
    member.select_by_value("3")
    _wait(d, lambda d: _cells(d)[0, 0][0] == repr(float(theta.members[3]["sat"].table[0, 0])),
          "member 3's table")
    # Every entry in full (the shortest text that reads back exactly), in a box wide enough.
    table = theta.members[3]["sat"].table.reshape(3, -1)
    every = np.stack([m["sat"].table.reshape(3, -1) for m in theta.members])
    for (r, c), (text, cut) in _cells(d).items():
        assert float(text) == table[r, c] and not cut, (r, c, text)
        assert len(text) >= 15  # Dirichlet draws: no short decimals to hide a cut
    ranges = d.find_elements(*_by("#cpd small.range"))
    assert len(ranges) == 9
    assert {(float(x.get_attribute("data-min")), float(x.get_attribute("data-max")))
            for x in ranges} == {(every[:, r, c].min(), every[:, r, c].max())
                                 for r in range(3) for c in range(3)}

    # All members: one edit sets the entry in each of the 21 members.
    box = d.find_element(*_by("#all-members"))
    assert box.is_displayed() and "all 21 members" in d.find_element(
        *_by("#all-members-choice")).text
    box.click()
    value = "0.123456789012345"
    cell = d.find_element(*_by('#cpd input[data-row="0"][data-column="1"]'))
    cell.clear()
    cell.send_keys(value + "\t")
    _wait(d, lambda d: server.app.state.undo_depth == 1 and _state(d) == "ready"
          and d.find_element(*_by("body")).get_attribute("data-result-fingerprint")
          == server.app.state.theta.fingerprint(), "the plan of the edited model")
    edited = server.app.state.theta
    assert server.app.state.history[-1].endswith("in all 21 members")
    for k in range(21):
        col = theta.members[k]["sat"].table[:, 1]
        want = [col[0] * 0 + float(value)] + [float(v) * ((1 - float(value)) / float(
            col[1:].sum())) for v in col[1:]]
        got = edited.members[k]["sat"].table[:, 1]
        assert got[0] == float(value) and np.abs(got - want).max() <= 2e-16
        assert np.array_equal(edited.members[k]["sat"].table[:, [0, 2]],
                              theta.members[k]["sat"].table[:, [0, 2]])
    assert _cells(d)[0, 1][0] == value  # shown exactly as typed
    assert "has been edited" in d.find_element(*_by("#provenance-note")).text
    assert float(d.find_element(*_by("#overall-scale")).get_attribute("data-value")) == qp.plan(
        edited, qp.CountQuery(["sat"], 100), "income", 1.0).scale
    # The range under the edited entry closes: the members now agree on it.
    assert not d.find_elements(*_by('#cpd td:has(input[data-row="0"][data-column="1"]) '
                                    "small.range"))

    # Unticked again: an edit changes the member shown only.
    box.click()
    cell = d.find_element(*_by('#cpd input[data-row="1"][data-column="0"]'))
    cell.clear()
    cell.send_keys("0.5\t")
    _wait(d, lambda d: server.app.state.undo_depth == 2 and _state(d) == "ready"
          and d.find_element(*_by("body")).get_attribute("data-result-fingerprint")
          == server.app.state.theta.fingerprint(), "the one-member edit")
    again = server.app.state.theta
    assert server.app.state.history[-1].endswith("in member 3")
    assert [k for k in range(21) if not np.array_equal(
        again.members[k]["sat"].table, edited.members[k]["sat"].table)] == [3]
    for _ in range(2):
        d.find_element(*_by("#undo")).click()
        time.sleep(0.3)
    _wait(d, lambda d: server.app.state.undo_depth == 0 and _state(d) == "ready",
          "the undo")


@pytest.mark.slow  # ~4 s
@pytest.mark.parametrize("width", [360, 420, 500])
def test_narrow_screens_keep_everything_inside_the_window(ensemble_explorer, browser, width):
    server, _ = ensemble_explorer
    d = browser
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})
    try:
        d.get(server.url)
        _wait(d, lambda d: _state(d) == "ready", "the first plan")
        d.find_element(*_by('#drawing g.node[data-node="sat"]')).click()
        _wait(d, lambda d: d.find_elements(*_by("#cpd input")), "the table editor")
        assert d.execute_script("return window.innerWidth") == width
        # Nothing makes the page wider than the window (wide tables scroll inside themselves).
        assert d.execute_script("return document.documentElement.scrollWidth") <= width
        for sel in ("header", "#controls", "#results", "#summary", "#drawing", "#editor",
                    "#cpd-wrap", "#candidates", "#comparison", "#command", "#eps", "#save",
                    "#q-where"):
            left, right = d.execute_script(
                "const r = document.querySelector(arguments[0]).closest('.table-wrap, "
                "section, aside, header, figure, pre, div, label, button, input')"
                ".getBoundingClientRect(); return [r.left, r.right];", sel)
            assert left >= 0 and right <= width + 0.5, (sel, left, right)
        # One column: the inputs above the results.
        controls = d.find_element(*_by("#controls")).rect
        results = d.find_element(*_by("#results")).rect
        assert controls["y"] + controls["height"] <= results["y"]
        # The inputs still work: a new epsilon re-plans.
        eps = d.find_element(*_by("#eps"))
        eps.clear()
        eps.send_keys("2\t")
        _wait(d, _ready_with(d, "data-epsilon", "2"), "the plan at epsilon 2")
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.mark.slow  # ~2 s
def test_provenance_is_shown_for_a_person(ensemble_explorer, browser):
    server, theta = ensemble_explorer
    d = browser
    d.get(server.url)
    _wait(d, lambda d: _state(d) == "ready", "the first plan")
    box = d.find_element(*_by("#provenance"))
    terms = [t.text for t in box.find_elements(*_by("dt"))]
    for label in ("source", "data sha256", "data public", "population column", "parameters",
                  "structure", "method", "learned edges", "required edges", EVIL, "note",
                  "deep"):
        assert label in terms, label
    text = box.text
    assert "income \u2192 sat" in text and f"gender \u2192 {EVIL}" in text
    assert box.find_element(*_by("code")).text == "ab" * 32
    # The learned parameters' bins: one table, a row per parameter, a column per field.
    rows = box.find_elements(*_by("table.prov tbody tr"))
    assert [r.find_element(*_by("th")).text for r in rows] == ["income", "sat"]
    assert [h.text for h in box.find_elements(*_by("table.prov thead th"))] == [
        "", "kind", "binning", "edges", "states"]
    assert rows[0].find_elements(*_by("td"))[2].text == "0, 0.4, 1"
    # A model file's text is text: nothing in it became markup; JSON only past 6 levels.
    assert not box.find_elements(*_by("script"))
    assert f"a {EVIL} & more" in text
    assert text.count("{") == 1 and '{"f":[1]}' in text
    assert not d.find_element(*_by("#provenance-note")).text


@pytest.mark.slow  # ~2 s
def test_a_cancelled_plan_leaves_the_last_one_marked_stale(explorer, browser, monkeypatch):
    import quiltpriv.explorer.server as server_module

    server, theta, _ = explorer
    d = browser
    d.get(server.url)
    _wait(d, lambda d: _state(d) == "ready", "the first plan")
    real = server_module.plan_payload

    def endless(theta, req, theta_name, progress, check, cancel):  # waits to be cancelled
        while True:
            progress("planning", 0, 1)
            check()
            time.sleep(0.02)

    monkeypatch.setattr(server_module, "plan_payload", endless)
    eps = d.find_element(*_by("#eps"))
    eps.clear()
    eps.send_keys("3\t")
    _wait(d, lambda d: _state(d) == "busy" and d.find_element(*_by("#cancel")).is_displayed(),
          "the plan to start")
    assert d.find_element(*_by("body")).get_attribute("data-stale") == "false"
    d.find_element(*_by("#cancel")).click()
    _wait(d, lambda d: d.find_element(*_by("body")).get_attribute("data-stale") == "true",
          "the plan shown marked out of date")
    stale = d.find_element(*_by("#stale"))
    assert stale.is_displayed() and "cancelled" in stale.text and "\u03b5 = 1" in stale.text
    assert d.find_element(*_by("#phase")).text == "cancelled"
    # The plan shown is still the one at epsilon 1 (not mixed with the new inputs).
    assert d.find_element(*_by("#overall-scale")).get_attribute("data-epsilon") == "1"
    monkeypatch.setattr(server_module, "plan_payload", real)
    eps.clear()
    eps.send_keys("2\t")
    _wait(d, _ready_with(d, "data-epsilon", "2"), "the plan at epsilon 2")
    assert d.find_element(*_by("body")).get_attribute("data-stale") == "false"
    assert not d.find_element(*_by("#stale")).is_displayed()
