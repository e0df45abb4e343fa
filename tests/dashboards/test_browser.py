"""The dashboard in a real browser: Debian's headless Chromium driven by Selenium.

One ``streamlit run`` process on a free loopback port serves the materialized small fleet for
every test in this module; one Chromium opens each page of the ``st.navigation`` app by its URL
path and checks its heading, one value that equals the same number queried straight from the
serving copy, that no exception element and no error alert is shown, and saves a screenshot under
the test's temp dir. On the SQL page a query is typed into the editor and run (Ctrl+Enter).
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.conftest import REPO, Materialized

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
METRIC = '[data-testid="stMetricValue"]'
EXCEPTION = '[data-testid="stException"]'
ERROR_ALERT = '[data-testid="stAlertContentError"]'
RUNNING = '[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]'
CELL = '[data-testid="stDataFrame"] [role="gridcell"], [data-testid="stDataFrame"] td'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _view(serving: str, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(serving, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql).fetchall()


@pytest.fixture(scope="module")
def app_url(materialized: Materialized) -> Iterator[str]:
    """The Streamlit app serving the small fleet's serving copy; stopped after the module."""
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


@pytest.fixture(scope="module")
def driver(app_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium for every page of the module."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1400,2000", f"--user-data-dir={tmp_path_factory.mktemp('profile')}",
    ):  # fmt: skip
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    try:
        yield drv
    finally:
        drv.quit()


class _Page:
    """One page opened in the browser: its text, table cells and error elements."""

    def __init__(self, driver: Any) -> None:
        from selenium.webdriver.common.by import By

        self._driver = driver
        self._by = By

    def wait(self, ready: Callable[[_Page], bool], timeout: float = 60) -> None:
        """Wait until ``ready`` holds and the script has stopped running."""
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        # Streamlit replaces elements as it reruns: an element gone between find and read is
        # a page still painting, so poll again rather than fail.
        WebDriverWait(
            self._driver,
            timeout,
            poll_frequency=0.25,
            ignored_exceptions=(StaleElementReferenceException,),
        ).until(lambda _d: ready(self) and not self._find(RUNNING))
        time.sleep(0.5)  # let the last delta paint

    def _find(self, css: str) -> list[Any]:
        return list(self._driver.find_elements(self._by.CSS_SELECTOR, css))

    @property
    def headings(self) -> list[str]:
        return [e.text for e in self._find("h1")]

    @property
    def text(self) -> str:
        return str(self._driver.find_element(self._by.TAG_NAME, "body").text)

    @property
    def metrics(self) -> list[str]:
        return [e.text for e in self._find(METRIC)]

    @property
    def cells(self) -> list[str]:
        """Text of every rendered data-grid cell (Glide renders an accessible table)."""
        return [str(e.get_attribute("textContent")) for e in self._find(CELL)]

    def errors(self) -> list[str]:
        """Text of exception elements and error alerts (none expected)."""
        return [e.text for e in self._find(f"{EXCEPTION}, {ERROR_ALERT}")]

    def screenshot(self, path: Path) -> None:
        self._driver.save_screenshot(str(path))
        assert path.stat().st_size > 10_000


def _open(driver: Any, url: str) -> _Page:
    driver.get(url)
    return _Page(driver)


def _finish(page: _Page, tmp_path: Path, name: str) -> None:
    shot = tmp_path / f"{name}.png"
    page.screenshot(shot)
    assert page.errors() == []


def test_overview_page(
    app_url: str, driver: Any, materialized: Materialized, tmp_path: Path
) -> None:
    """Heading, four non-empty headline numbers; occupancy equals ``occupancy_hourly``'s."""
    serving = str(materialized.cfg.serving_path)
    ((occ,),) = _view(
        serving,
        "select sum(allocated_gpu_s) / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s)"
        " from occupancy_hourly",
    )
    page = _open(driver, app_url)
    page.wait(lambda p: len(p.metrics) == 4)
    assert page.headings == ["GPU fleet overview"]
    assert all(v.strip() for v in page.metrics)
    assert page.metrics[0] == f"{occ:.1%}"
    _finish(page, tmp_path, "overview")


def test_waste_page(app_url: str, driver: Any, materialized: Materialized, tmp_path: Path) -> None:
    """Heading; the lemon table shows the rank-1 node of ``node_reliability`` per cluster."""
    serving = str(materialized.cfg.serving_path)
    worst = {h for (h,) in _view(serving, "select host from node_reliability where lemon_rank = 1")}
    assert worst
    page = _open(driver, app_url + "waste")
    page.wait(lambda p: p.headings == ["Waste"] and worst <= set(p.cells))
    _finish(page, tmp_path, "waste")


def test_fairness_page(
    app_url: str, driver: Any, materialized: Materialized, tmp_path: Path
) -> None:
    """Heading; the first teams (by name) of the first week of ``fairness_weekly`` are shown."""
    serving = str(materialized.cfg.serving_path)
    teams = {
        t
        for (t,) in _view(
            serving,
            "with w as (select * from fairness_weekly where \"window\" = 'week'"
            " and cluster is null) select team from w where week = (select min(week) from w)"
            " order by team limit 3",
        )
    }
    assert teams
    page = _open(driver, app_url + "fairness")
    page.wait(lambda p: p.headings == ["Fairness"] and teams <= set(p.cells))
    _finish(page, tmp_path, "fairness")


def test_time_to_start_page(
    app_url: str, driver: Any, materialized: Materialized, tmp_path: Path
) -> None:
    """Heading; each cluster's ``all`` bucket shows the spells of ``time_to_start_summary``."""
    serving = str(materialized.cfg.serving_path)
    want = dict(
        _view(
            serving,
            "select cluster, jobs from time_to_start_summary where bucket is null and week is null"
            " and partition is null and team is null and jobs > 0",
        )
    )
    assert want

    def shown(p: _Page) -> dict[str, str]:
        cells = p.cells
        return {c: cells[i + 2] for i, c in enumerate(cells[:-2]) if cells[i + 1] == "all"}

    page = _open(driver, app_url + "time_to_start")
    page.wait(lambda p: p.headings == ["Time to start"] and set(want) <= set(shown(p)))
    assert {c: shown(page)[c] for c in want} == {c: str(n) for c, n in want.items()}
    assert "Kubernetes stages" in page.text
    _finish(page, tmp_path, "time_to_start")


def test_queue_page(app_url: str, driver: Any, materialized: Materialized, tmp_path: Path) -> None:
    """Heading; the first number counts what is pending at the cut-off (Slurm and Kueue)."""
    serving = str(materialized.cfg.serving_path)
    ((n,),) = _view(
        serving,
        "select (select count(*) from slurm_jobs where step is null and start_at is null"
        " and state = 'PENDING') + (select count(*) from k8s_workloads where state = 'PENDING')",
    )
    page = _open(driver, app_url + "queue")
    page.wait(lambda p: p.headings == ["Queue now"] and len(p.metrics) == 3)
    assert page.metrics[0] == f"{n:,}"
    _finish(page, tmp_path, "queue")


def test_topology_page(
    app_url: str, driver: Any, materialized: Materialized, tmp_path: Path
) -> None:
    """Heading; the first number is the stranded GPU-hours of ``stranded_gpu_hourly`` over the
    clusters with a map (the small fleet's inventory racks), whole hours."""
    serving = str(materialized.cfg.serving_path)
    ((gpu_s,),) = _view(
        serving, "select sum(stranded_gpu_s) from stranded_gpu_hourly where level is not null"
    )
    page = _open(driver, app_url + "topology")
    page.wait(lambda p: p.headings == ["Topology"] and len(p.metrics) == 3)
    assert page.metrics[0] == f"{gpu_s / 3600:,.0f}"
    assert "Rack grid" in page.text and "Why large jobs waited" in page.text
    _finish(page, tmp_path, "topology")


def test_jobs_page_opens_a_job_by_url(
    app_url: str, driver: Any, materialized: Materialized, tmp_path: Path
) -> None:
    """Heading; ``?cluster=&job=`` opens that Kubernetes job's view with its telemetry."""
    from urllib.parse import urlencode

    serving = str(materialized.cfg.serving_path)
    ((cluster, job_id),) = _view(
        serving,
        "select cluster, job_id from job_gpu_summary where source = 'kubernetes'"
        " and observed_gpu_s > 0 order by idle_gpu_s desc, job_id limit 1",
    )
    page = _open(driver, app_url + "jobs?" + urlencode({"cluster": cluster, "job": job_id}))
    page.wait(lambda p: p.headings == ["Jobs"] and f"{job_id} on {cluster}" in p.text)
    assert "No DCGM telemetry tied to this job" not in page.text
    _finish(page, tmp_path, "jobs")


def test_recommendations_page(
    app_url: str, driver: Any, materialized: Materialized, tmp_path: Path
) -> None:
    """Heading; the caption counts the rows of the ``recommendations`` view."""
    serving = str(materialized.cfg.serving_path)
    ((n,),) = _view(serving, "select count(*) from recommendations")
    page = _open(driver, app_url + "recommendations")
    page.wait(lambda p: p.headings == ["Recommendations"] and "recommendation(s)" in p.text)
    assert f"{n} recommendation(s) from data" in page.text
    _finish(page, tmp_path, "recommendations")


def test_reports_page(
    app_url: str, driver: Any, materialized: Materialized, tmp_path: Path
) -> None:
    """Heading; the reports folder beside the serving copy is named (no report made here)."""
    folder = materialized.cfg.serving_path.parent / "reports"
    page = _open(driver, app_url + "reports")
    page.wait(lambda p: p.headings == ["Weekly reports"] and str(folder) in p.text)
    _finish(page, tmp_path, "reports")


def test_sql_page_runs_a_query(
    app_url: str, driver: Any, materialized: Materialized, tmp_path: Path
) -> None:
    """The default query shows ``occupancy_daily``'s row count; a typed query shows its result."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    serving = str(materialized.cfg.serving_path)
    ((days,),) = _view(serving, "select count(*) from occupancy_daily")
    ((jobs,),) = _view(serving, "select count(*) from jobs")
    page = _open(driver, app_url + "sql")
    page.wait(lambda p: p.headings == ["SQL"] and "rows ×" in p.text)
    assert f"{days:,} rows × 4 columns" in page.text
    _finish(page, tmp_path, "sql_default")

    editor = driver.find_element(By.CSS_SELECTOR, '[data-testid="stTextArea"] textarea')
    editor.click()
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys(Keys.DELETE)
    editor.send_keys("select count(*) as n_jobs from jobs")
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    page.wait(lambda p: "1 rows × 1 columns" in p.text and str(jobs) in p.cells)
    _finish(page, tmp_path, "sql_query")
