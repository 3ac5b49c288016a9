"""The audit report as a person sees it: rendered by headless Chromium.

Chromium is Debian's ``chromium`` package, installed by ``.ci/run``; locally the test is skipped
with a message when it is absent.
"""

import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.reporting.report import audit_report

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"))
                 if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not installed (Debian package 'chromium'; "
                             ".ci/run installs it)")

# Fill colours of the drawing's roles (quiltpriv/reporting/report.py's inline CSS).
NEARBY, QUILT = (0xF5, 0xB0, 0x41), (0x5D, 0xAD, 0xE2)


def _chromium(tmp_path, *args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


class _Rows(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.rows, self.chosen, self.rects, self._in = 0, 0, 0, 0, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "candidates" in (a.get("class") or ""):
            self.tables += 1
            self._in = True
        elif tag == "tr" and self._in:
            self.rows += 1
            self.chosen += "chosen" in (a.get("class") or "")
        elif tag == "rect":
            self.rects += 1

    def handle_endtag(self, tag):
        if tag == "table":
            self._in = False


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    theta = qp.load_model("student")
    query = qp.CountQuery(["height", "sat"], 1000)
    plan = qp.plan(theta, query, ["income"], 1.0)
    rep = audit_report(theta, query, plan)
    rep.write(d / "report.html")
    return d / "report.html", plan


def test_rendered_dom_has_drawing_and_candidate_rows(report_file, tmp_path):
    path, plan = report_file
    out = _chromium(tmp_path, "--dump-dom", path.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    dom = _Rows()
    dom.feed(out.stdout)
    assert dom.tables == 1
    # 16 quilts of income (|Q| <= 2 covers 11 of them, every family falls inside): header
    # row + 11 candidates, exactly one highlighted.
    assert dom.rows == 1 + 11 and dom.chosen == 1
    assert dom.rects >= 5  # one box per node, plus the legend


@pytest.mark.slow  # ~2 s; the rendered page itself is checked by the test above by default
def test_screenshot_is_not_blank_and_shows_the_roles(report_file, tmp_path):
    import matplotlib.image as mpimg

    path, _ = report_file
    shot = tmp_path / "shot.png"
    out = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,1800",
                    "--hide-scrollbars", path.as_uri())
    assert out.returncode == 0 and shot.exists(), out.stderr[-2000:]
    img = (mpimg.imread(shot)[..., :3] * 255).round().astype(int)
    assert img.shape[0] >= 1000 and img.std() > 10  # not a blank page
    pixels = img.reshape(-1, 3)

    def count(rgb):
        return int((np.abs(pixels - np.array(rgb)).sum(axis=1) <= 6).sum())

    # The chosen quilt Q = {} puts every node in N: the nearby colour is drawn; the quilt
    # colour appears at least in the legend.
    assert count(NEARBY) > 500
    assert count(QUILT) > 50
