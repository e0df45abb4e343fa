"""The dashboard in a real browser: Debian's headless Chromium driven by Selenium.

The app is started with ``streamlit run`` on a free loopback port against the materialized small
fleet; the page must show its title and four non-empty headline numbers and no error element.
No test tool downloads a browser: Chromium and chromedriver come from Debian's packages
(``scripts/install-system-deps.sh``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, Materialized

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def app_url(materialized: Materialized) -> Iterator[str]:
    """The Streamlit app serving the small fleet's serving copy; stopped after the test."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        if os.environ.get("GOODPUT_REQUIRE_BROWSER"):
            pytest.fail("chromium / chromium-driver missing: run scripts/install-system-deps.sh")
        pytest.skip("chromium / chromium-driver not installed (scripts/install-system-deps.sh)")
    port = _free_port()
    env = {
        **os.environ,
        "GOODPUT_SERVING_DB": str(materialized.cfg.serving_path),
        "GOODPUT_CONFIG": str(materialized.cfg.path),
    }
    argv = [
        sys.executable, "-m", "streamlit", "run", str(REPO / "dashboards" / "app.py"),
        "--server.address", "127.0.0.1", "--server.port", str(port),
        "--server.headless", "true", "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_overview_in_headless_chromium(app_url: str, tmp_path: Path) -> None:
    """Title, four headline numbers (non-zero occupancy), no exception element; screenshot saved."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    metric = '[data-testid="stMetricValue"]'
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1400,2000", f"--user-data-dir={tmp_path / 'profile'}",
    ):  # fmt: skip
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    try:
        driver.get(app_url)
        WebDriverWait(driver, 60).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, metric)) == 4
        )
        time.sleep(1)
        values = [e.text for e in driver.find_elements(By.CSS_SELECTOR, metric)]
        body = driver.find_element(By.TAG_NAME, "body").text
        driver.save_screenshot(str(tmp_path / "overview.png"))
        errors = driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
    finally:
        driver.quit()
    assert "GPU fleet overview" in body
    assert not errors
    assert all(v.strip() for v in values)
    assert values[0].endswith("%") and float(values[0].rstrip("%")) > 0
    assert (tmp_path / "overview.png").stat().st_size > 10_000
