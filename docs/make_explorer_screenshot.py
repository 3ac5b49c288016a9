"""Take docs/explorer-screenshot.png: the explorer on the bundled student model.

Needs Debian's chromium and chromium-driver and the ``browser`` extra (Selenium)::

    python docs/make_explorer_screenshot.py

The page shows the student network with income sensitive, a count over gender, height and
sat at epsilon 2.5 (the chosen quilt Q = {gender, sat}, N = {income}, R = {height, weight})
and the conditional table of sat open for editing.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    import quiltpriv as qp
    from quiltpriv.explorer.server import Explorer, ExplorerServer

    initial = {"sensitive": "income", "epsilon": 2.5,
               "query": {"kind": "count", "attributes": "gender,height,sat", "records": 1000}}
    server = ExplorerServer(Explorer(qp.load_model("student"), "student", initial=initial))
    server.start_in_thread()
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as profile:
        for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={profile}", "--window-size=1400,1180",
                    "--hide-scrollbars"):
            opts.add_argument(arg)
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
        try:
            driver.get(server.url)
            wait = WebDriverWait(driver, 60, poll_frequency=0.05)
            wait.until(lambda d: d.find_element(By.TAG_NAME, "body")
                       .get_attribute("data-state") == "ready")
            driver.find_element(By.CSS_SELECTOR, '#drawing g.node[data-node="sat"]').click()
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#cpd input"))
            out = ROOT / "docs" / "explorer-screenshot.png"
            driver.save_screenshot(str(out))
            print(f"wrote {out}")
        finally:
            driver.quit()
            server.stop()


if __name__ == "__main__":
    main()
