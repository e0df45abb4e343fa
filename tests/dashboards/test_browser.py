"""The dashboard in a real browser: Debian's headless Chromium driven by Selenium.

One fleet is built for the module: eight days of the bundled sample fleet (seed 7, Monday
2026-11-02 to Monday 2026-11-09), so ISO week 2026-W45 is complete and 2026-W46 is partial (the
case where a page must not open on the latest week). It is materialized by real Dagster runs
(which also write the recommendations' patch files), and its latest complete week's report is
made (HTML, JSON and, with Chromium, the PDF) beside the serving copy, as ``make run`` does.

One ``streamlit run`` process on a free loopback port serves it for every test; one Chromium
opens **every page** of the ``st.navigation`` app (the Jobs page by a ``?cluster=…&job=…`` URL)
at 1440 px and at 390 px wide (Chrome's device-metrics override: a phone's viewport), and for
each checks its heading, that no exception or error alert is shown, that no real user name (the
*warehouse's* ``jobs.user_name``; the serving copy holds pseudonyms) is in its text, and writes a
screenshot to ``screenshots/<page>-<width>.png`` (git-ignored). At 1440 px each page's own
values are checked against the serving copy (the Overview's four answers with their scope and
counts, the Fairness page's default week by :mod:`metrics.periods`'s rule, …). Then the SQL page
runs ``SELECT user_name FROM jobs``, the report (HTML, ``pdftotext`` of the PDF, JSON) and the
patch files are searched for real names, and one team's colour is read from the figures' JSON
(plotly's ``data`` on the page, not pixels) on two pages and in the report the PDF prints.
No test tool downloads a browser: Chromium and chromedriver come from Debian's packages
(``scripts/install-system-deps.sh``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from metrics.periods import WEEK, latest_complete_week, scope_bounds
from pipelines.config import Config, load_config
from pipelines.privacy import PSEUDONYM
from pipelines.report import palette
from tests.conftest import REPO, write_config

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PDFTOTEXT = Path("/usr/bin/pdftotext")
#: Where the screenshots go (git-ignored); ``GOODPUT_SCREENSHOTS`` moves them.
SHOTS = Path(os.environ.get("GOODPUT_SCREENSHOTS", REPO / "screenshots"))
#: The widths every page is opened at: a laptop and a phone (CSS px).
WIDTHS = (1440, 390)
HEIGHT = 2000
METRIC = '[data-testid="stMetricValue"]'
EXCEPTION = '[data-testid="stException"]'
ERROR_ALERT = '[data-testid="stAlertContentError"]'
RUNNING = '[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]'
CELL = '[data-testid="stDataFrame"] [role="gridcell"], [data-testid="stDataFrame"] td'
#: Every plotly figure on the page: its traces' names and colours (plotly's own JSON).
FIGURES_JS = """return Array.from(document.querySelectorAll('.js-plotly-plot')).map(
  g => (g.data || []).map(t => ({name: t.name === undefined ? null : String(t.name),
    marker: t.marker && typeof t.marker.color === 'string' ? t.marker.color : null,
    line: t.line && typeof t.line.color === 'string' ? t.line.color : null})));"""


@dataclass(frozen=True)
class Fleet:
    """The module's fleet: its configuration, the report folder and the real user names."""

    cfg: Config
    report: Path
    real_names: frozenset[str]

    @property
    def serving(self) -> str:
        return str(self.cfg.serving_path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _view(serving: str, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(serving, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql).fetchall()


def _need_browser() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER, PDFTOTEXT) if not p.exists()]
    if missing:
        why = f"{', '.join(missing)} missing: run scripts/install-system-deps.sh"
        if os.environ.get("GOODPUT_REQUIRE_BROWSER"):
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Eight days of the bundled fleet, materialized, with W45's report and the patch files."""
    _need_browser()
    from pipelines.cli.runner import materialize_all
    from pipelines.report import build_weekly_report
    from pipelines.report.weekly import latest_complete_report_week
    from pipelines.sample_fleet import generate_sample_fleet

    days = tmp_path_factory.mktemp("fleet8")
    generate_sample_fleet(days, seed=7, days=8)
    work = tmp_path_factory.mktemp("warehouse8")
    cfg = load_config(write_config(work, days_dir=days))
    with dg.instance_for_test() as instance:
        materialize_all(cfg, instance=instance, log=lambda _m: None)
    week = latest_complete_report_week(cfg.serving_path)
    assert str(week) == "2026-W45"
    paths = build_weekly_report(
        cfg.serving_path, week, large_job_gpus=cfg.large_job_gpus, chromium=str(CHROMIUM)
    )
    assert paths.pdf is not None
    with duckdb.connect(str(cfg.warehouse_path), read_only=True) as con:
        names = {r[0] for r in con.execute("SELECT DISTINCT user_name FROM jobs").fetchall()}
    names.discard(None)
    assert len(names) > 10  # the fleet's users: alice, bob, …
    yield Fleet(cfg=cfg, report=paths.folder, real_names=frozenset(names))


@pytest.fixture(scope="module")
def app_url(fleet: Fleet) -> Iterator[str]:
    """The Streamlit app serving the fleet's serving copy; stopped after the module."""
    port = _free_port()
    env = {
        **os.environ,
        "GOODPUT_SERVING_DB": fleet.serving,
        "GOODPUT_CONFIG": str(fleet.cfg.path),
    }
    env.pop("GOODPUT_SHOW_USER_NAMES", None)
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
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--window-size={WIDTHS[0]},{HEIGHT}",
        f"--user-data-dir={tmp_path_factory.mktemp('profile')}",
    ):  # fmt: skip
        opts.add_argument(arg)
    drv = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield drv
    finally:
        drv.quit()


def _set_width(driver: Any, width: int) -> None:
    """The viewport ``width`` CSS px wide (a phone's below 500, where a headless window cannot
    shrink): Chrome's device-metrics override, as DevTools' device mode sets it."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": width < 500},
    )


class _Page:
    """One page opened in the browser: its text, table cells, figures and error elements."""

    def __init__(self, driver: Any) -> None:
        from selenium.webdriver.common.by import By

        self._driver = driver
        self._by = By

    def wait(self, ready: Callable[[_Page], bool], timeout: float = 90) -> None:
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
    def columns(self) -> list[str]:
        """Text of each ``st.columns`` column (a tile: label, value, caption)."""
        return [e.text for e in self._find('[data-testid="stColumn"]')]

    @property
    def cells(self) -> list[str]:
        """Text of every rendered data-grid cell (Glide renders an accessible table)."""
        return [str(e.get_attribute("textContent")) for e in self._find(CELL)]

    def selected(self, label: str) -> str:
        """The value shown in the select box labelled ``label``."""
        (box,) = self._find(f'[data-testid="stSelectbox"] input[aria-label="{label}"]')
        return str(box.get_attribute("value"))

    def figures(self) -> list[list[dict[str, str | None]]]:
        """Each plotly figure's traces: ``name``, ``marker`` and ``line`` colour."""
        out: list[list[dict[str, str | None]]] = self._driver.execute_script(FIGURES_JS)
        return out

    def errors(self) -> list[str]:
        """Text of exception elements and error alerts (none expected)."""
        return [e.text for e in self._find(f"{EXCEPTION}, {ERROR_ALERT}")]


def _real_names_in(text: str, names: frozenset[str]) -> set[str]:
    """The real user names that occur in ``text`` as whole words (case-sensitive, as stored)."""
    words = set(re.findall(r"[A-Za-z0-9_.-]+", text))
    return {n for n in names if n in words}


# ------------------------------------------------------------------------------------------
# What each page must show at 1440 px (the values, from the serving copy)


def _week_bounds(serving: str) -> tuple[dt.datetime | None, dt.datetime | None]:
    """``(as_of, data_from)`` of the fleet: the rule's inputs, from ``occupancy_hourly``."""
    rows = _view(serving, "select max(as_of), min(hour) from occupancy_hourly group by cluster")
    return scope_bounds([r[0] for r in rows], [r[1] for r in rows])


def _check_overview(page: _Page, fleet: Fleet) -> None:
    """The four answers, each with its scope (fleet), window (week 2026-W45, the latest complete
    one) and counts: clusters for occupancy and waste, teams for fairness, n jobs and censored
    for the large-job time to start, each count equal to the serving copy's."""
    serving = fleet.serving
    ((clusters,),) = _view(serving, "select count(distinct cluster) from occupancy_hourly")
    ((teams,),) = _view(
        serving,
        "select teams from fairness_summary_weekly where \"window\" = 'week' and cluster is null"
        " and week = timestamptz '2026-11-02 00:00:00+00'",
    )
    # Spells of ≥ 64 GPUs eligible in [Mon 2026-11-02, Mon 2026-11-09) UTC; censored = never
    # started by the cut-off.
    ((large, censored),) = _view(
        serving,
        "select count(*), count(*) filter (where not started) from time_to_start_jobs"
        " where size_gpus >= 64 and eligible_at >= timestamptz '2026-11-02 00:00:00+00'"
        " and eligible_at < timestamptz '2026-11-09 00:00:00+00'",
    )
    tiles = [c for c in page.columns if c.split("\n", 1)[0] in _TILES]
    assert [t.split("\n", 1)[0] for t in tiles] == list(_TILES)
    occupancy, waste, fairness, wait = tiles
    week = "2026-11-02 – 2026-11-08 UTC (week 2026-W45)"
    assert "fleet ·" in occupancy and week in occupancy and f"· {clusters} clusters" in occupancy
    assert re.search(r"\n\d+\.\d%\n", occupancy)
    assert "fleet ·" in waste and week in waste and f"· {clusters} clusters" in waste
    assert re.search(r"\n[\d,]+ GPU-h\n", waste) and "% of capacity" in waste
    assert "fleet (across teams)" in fairness and "week of 2026-11-02 ·" in fairness
    assert f"· {teams} teams ·" in fairness and "unmet entitlement" in fairness
    assert "partial" not in fairness and "most owed: team " in fairness
    assert "fleet ·" in wait and f"eligible in {week}" in wait
    assert f"n = {large} jobs, {censored} censored" in wait


_TILES = (
    "Occupancy",
    "Avoidable waste",
    "Fairness (Jain's index)",
    "Large-job time to start (≥ 64 GPUs)",
)


def _check_fairness(page: _Page, fleet: Fleet) -> None:
    """The default week is :func:`metrics.periods.latest_complete_week` of the serving copy's
    bounds (2026-W45, Monday 2026-11-02), not the latest week (2026-11-09, partial), and no
    partial banner is shown; the partial week is in the trend's left-out list instead."""
    as_of, data_from = _week_bounds(fleet.serving)
    want = latest_complete_week(as_of, data_from)
    assert want == dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    assert as_of is not None and as_of < want + 2 * WEEK  # the week after it is partial
    ((latest,),) = _view(fleet.serving, "select max(week) from fairness_weekly")
    assert latest == want + WEEK
    assert page.selected("Week") == f"{want:%Y-%m-%d}"
    assert "is partial" not in page.text
    assert f"{latest:%Y-%m-%d}." in page.text  # "Partial weeks left out of the trend: …"


def _check_waste(page: _Page, fleet: Fleet) -> None:
    """The lemon table shows the rank-1 node of ``node_reliability`` per cluster."""
    worst = {h for (h,) in _view(fleet.serving, "select host from node_reliability"
                                 " where lemon_rank = 1")}  # fmt: skip
    assert worst and worst <= set(page.cells)


def _check_time_to_start(page: _Page, fleet: Fleet) -> None:
    """Each cluster's ``all`` bucket shows the spells of ``time_to_start_summary``."""
    want = dict(
        _view(
            fleet.serving,
            "select cluster, jobs from time_to_start_summary where bucket is null and week is null"
            " and partition is null and team is null and jobs > 0",
        )
    )
    cells = page.cells
    shown = {c: cells[i + 2] for i, c in enumerate(cells[:-2]) if cells[i + 1] == "all"}
    assert want and {c: shown.get(c) for c in want} == {c: str(n) for c, n in want.items()}
    assert "Kubernetes stages" in page.text


def _check_queue(page: _Page, fleet: Fleet) -> None:
    """The first number counts what is pending at the cut-off (Slurm and Kueue)."""
    ((n,),) = _view(
        fleet.serving,
        "select (select count(*) from slurm_jobs where step is null and start_at is null"
        " and state = 'PENDING') + (select count(*) from k8s_workloads where state = 'PENDING')",
    )
    assert n > 0 and page.metrics[0] == f"{n:,}"


def _check_jobs(page: _Page, fleet: Fleet) -> None:
    """The Kubernetes job opened by URL shows its telemetry."""
    assert "No DCGM telemetry tied to this job" not in page.text


def _check_topology(page: _Page, fleet: Fleet) -> None:
    """The first number is the stranded GPU-hours of ``stranded_gpu_hourly`` over the clusters
    with a map, whole hours; the rack grid and the wait decomposition are shown."""
    ((gpu_s,),) = _view(
        fleet.serving,
        "select sum(stranded_gpu_s) from stranded_gpu_hourly where level is not null",
    )
    assert page.metrics[0] == f"{(gpu_s or 0) / 3600:,.0f}"
    assert "Rack grid" in page.text and "Why large jobs waited" in page.text


def _check_changes(page: _Page, fleet: Fleet) -> None:
    """The serving copy has the ledger, so the page shows its two sections (not the "no
    ledger" warning), and the window's changes as a table or the "nothing changed" line."""
    ((n,),) = _view(fleet.serving, "select count(*) from policy_changes")
    assert n > 0
    assert "No policy-change ledger" not in page.text
    assert "What changed" in page.text and "What it did" in page.text
    assert len(page.cells) > 0 or "No scheduler setting changed in this window." in page.text


def _check_recommendations(page: _Page, fleet: Fleet) -> None:
    """The caption counts the rows of the ``recommendations`` view."""
    ((n,),) = _view(fleet.serving, "select count(*) from recommendations")
    assert f"{n} recommendation(s) from data" in page.text


def _check_reports(page: _Page, fleet: Fleet) -> None:
    """The week's report made beside the serving copy is listed with its three files."""
    assert "2026-W45" in page.text
    for label in ("HTML", "PDF", "JSON"):
        assert label in page.text.split("2026-W45", 1)[1]


def _check_sql(page: _Page, fleet: Fleet) -> None:
    """The default query shows ``occupancy_daily``'s row count."""
    ((days,),) = _view(fleet.serving, "select count(*) from occupancy_daily")
    assert f"{days:,} rows × 4 columns" in page.text


def _the_job(fleet: Fleet) -> tuple[str, str]:
    """The Kubernetes attempt with the most idle GPU-seconds: ``(cluster, job_id)``."""
    ((cluster, job_id),) = _view(
        fleet.serving,
        "select cluster, job_id from job_gpu_summary where source = 'kubernetes'"
        " and observed_gpu_s > 0 order by idle_gpu_s desc, job_id limit 1",
    )
    return str(cluster), str(job_id)


def _jobs_url(fleet: Fleet) -> str:
    from urllib.parse import urlencode

    cluster, job_id = _the_job(fleet)
    return "jobs?" + urlencode({"cluster": cluster, "job": job_id})


def _job_shown(page: _Page, fleet: Fleet) -> bool:
    cluster, job_id = _the_job(fleet)
    return f"{job_id} on {cluster}" in page.text


_Ready = Callable[[_Page, Fleet], bool]
#: page → (URL path, heading, ready-when, the 1440 px check).
PAGES: dict[str, tuple[Callable[[Fleet], str], str, _Ready, Callable[[_Page, Fleet], None]]] = {
    "overview": (lambda _f: "", "GPU fleet overview", lambda p, _f: len(p.metrics) == 4,
                 _check_overview),
    "waste": (lambda _f: "waste", "Waste", lambda p, _f: len(p.cells) > 0, _check_waste),
    "fairness": (lambda _f: "fairness", "Fairness", lambda p, _f: "Fair-share debt" in p.text,
                 _check_fairness),
    "time_to_start": (lambda _f: "time_to_start", "Time to start",
                      lambda p, _f: "Kubernetes stages" in p.text and len(p.cells) > 0,
                      _check_time_to_start),
    "queue": (lambda _f: "queue", "Queue now", lambda p, _f: len(p.metrics) == 3,
              _check_queue),
    "jobs": (_jobs_url, "Jobs", _job_shown, _check_jobs),
    "topology": (lambda _f: "topology", "Topology", lambda p, _f: len(p.metrics) == 3,
                 _check_topology),
    "changes": (lambda _f: "changes", "Changes", lambda p, _f: "change" in p.text.lower(),
                _check_changes),
    "recommendations": (lambda _f: "recommendations", "Recommendations",
                        lambda p, _f: "recommendation(s)" in p.text and "Patch files" in p.text,
                        _check_recommendations),
    "reports": (lambda _f: "reports", "Weekly reports", lambda p, _f: "2026-W45" in p.text,
                _check_reports),
    "sql": (lambda _f: "sql", "SQL", lambda p, _f: "rows ×" in p.text, _check_sql),
}  # fmt: skip


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(PAGES))
def test_page(name: str, width: int, app_url: str, driver: Any, fleet: Fleet) -> None:
    """The page opens at ``width`` with its heading, no error, no real user name; its
    screenshot is written; at 1440 px its values equal the serving copy's."""
    url, heading, ready, check = PAGES[name]
    _set_width(driver, width)
    driver.get(app_url + url(fleet))
    page = _Page(driver)
    page.wait(lambda p: p.headings == [heading] and ready(p, fleet))
    assert driver.execute_script("return window.innerWidth") == width
    shot = SHOTS / f"{name}-{width}.png"
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    assert page.errors() == []
    assert _real_names_in(page.text, fleet.real_names) == set()
    if width == WIDTHS[0]:
        check(page, fleet)


def test_sql_page_shows_pseudonyms_only(app_url: str, driver: Any, fleet: Fleet) -> None:
    """``SELECT user_name FROM jobs`` on the SQL page returns every job's pseudonym (``user-`` +
    12 hex digits), never a real name: the serving copy was published with pseudonyms."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    ((jobs,),) = _view(fleet.serving, "select count(*) from jobs")
    _set_width(driver, WIDTHS[0])
    driver.get(app_url + "sql")
    page = _Page(driver)
    page.wait(lambda p: p.headings == ["SQL"] and "rows ×" in p.text)
    editor = driver.find_element(By.CSS_SELECTOR, '[data-testid="stTextArea"] textarea')
    editor.click()
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys(Keys.DELETE)
    editor.send_keys("SELECT user_name FROM jobs ORDER BY user_name NULLS LAST")
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    page.wait(lambda p: f"{jobs:,} rows × 1 columns" in p.text and len(p.cells) > 5)
    # The grid renders the rows in view (the first ones: pseudonyms sort before NULLs).
    shown = [c for c in page.cells if c and not c.isdigit()]
    assert len(shown) > 5 and all(PSEUDONYM.fullmatch(c) for c in shown), shown[:5]
    assert _real_names_in(page.text, fleet.real_names) == set()
    assert page.errors() == []


def _report_page_without_plotly_js(html: Path) -> str:
    """The report page less the inlined plotly.js library (its source, not the report's words)."""
    from plotly.offline import get_plotlyjs

    page = html.read_text(encoding="utf-8")
    lib = get_plotlyjs().replace("</script", "<\\/script")
    assert lib in page
    return page.replace(lib, "")


def test_report_and_patch_files_carry_no_real_names(fleet: Fleet) -> None:
    """The weekly report (HTML, the PDF's text, JSON) and every file the recommendations wrote
    name users by pseudonym only; the report does name some (the recommendations' offenders)."""
    html = _report_page_without_plotly_js(fleet.report / "report.html")
    pdf_text = subprocess.run(
        [str(PDFTOTEXT), "-layout", str(fleet.report / "report.pdf"), "-"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    sidecar = (fleet.report / "report.json").read_text(encoding="utf-8")
    data = json.loads(sidecar)
    assert data["user_names"] == "pseudonymised"
    # Kubernetes workloads carry no user (None); every named one is a pseudonym.
    assert all(PSEUDONYM.fullmatch(w["user"]) for w in data["longest_waits"] if w["user"])
    # Users are named (the idle-allocation recommendation's top offenders), as pseudonyms.
    assert PSEUDONYM.search(html) and PSEUDONYM.search(pdf_text)
    for what, text in (("report.html", html), ("report.pdf", pdf_text),
                       ("report.json", sidecar)):  # fmt: skip
        assert _real_names_in(text, fleet.real_names) == set(), what
    folder = fleet.cfg.warehouse_path.parent / "recommendations"
    files = sorted(p for p in folder.iterdir() if p.is_file())
    assert {p.name for p in files} >= {"latest.json", "sacctmgr.sh", "kueue-patches.yaml"}
    for file in files:
        assert _real_names_in(file.read_text(encoding="utf-8"), fleet.real_names) == set(), file


def _team_colours(figure: list[dict[str, str | None]]) -> dict[str, str]:
    """Team → colour of a figure coloured by team (plotly express names a trace ``team`` or
    ``team, series`` when a second property splits it)."""
    out: dict[str, str] = {}
    for trace in figure:
        colour = trace["marker"] or trace["line"]
        if trace["name"] and colour:
            team = trace["name"].split(",")[0]
            assert out.setdefault(team, colour) == colour, (team, out[team], colour)
    return out


def test_a_team_has_one_colour_on_two_pages_and_in_the_pdf(
    app_url: str, driver: Any, fleet: Fleet
) -> None:
    """Fairness page (fair-share debt, every team), Recommendations page (the fairness-drift
    evidence, the named teams only) and the report the PDF prints (fair-share debt) colour each
    team alike, read from plotly's figure JSON; the colour is the palette's over every team."""
    ((universe,),) = _view(
        fleet.serving,
        "select list(distinct team order by team) from (select team from jobs union all"
        " select team from fairness_weekly) where team is not null",
    )
    expected = palette.team_colors(universe)
    _set_width(driver, WIDTHS[0])

    driver.get(app_url + "fairness")
    page = _Page(driver)
    page.wait(lambda p: p.headings == ["Fairness"] and len(p.figures()) >= 3)
    debt = [f for f in page.figures() if len(f) > 1 and {t["name"] for t in f} <= set(universe)]
    assert len(debt) == 1
    on_fairness = _team_colours(debt[0])

    driver.get(app_url + "recommendations")
    page = _Page(driver)
    page.wait(lambda p: p.headings == ["Recommendations"] and any(
        any(", used_gpu_h" in str(t["name"]) for t in f) for f in p.figures()))  # fmt: skip
    drift = [f for f in page.figures() if any(", used_gpu_h" in str(t["name"]) for t in f)]
    on_recommendations = _team_colours(drift[0])

    driver.get((fleet.report / "report.html").as_uri())
    page = _Page(driver)
    page.wait(lambda p: bool(driver.execute_script(
        "return document.getElementById('chart-debt') && document.getElementById('chart-debt')"
        ".data")))  # fmt: skip
    in_report = _team_colours(driver.execute_script(
        FIGURES_JS.replace("document.querySelectorAll('.js-plotly-plot')",
                           "[document.getElementById('chart-debt')]"))[0])  # fmt: skip
    pdf_text = subprocess.run(
        [str(PDFTOTEXT), str(fleet.report / "report.pdf"), "-"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert "Fair-share debt per team" in pdf_text  # the figure is printed in the PDF

    both = set(on_recommendations) & set(on_fairness) & set(in_report)
    assert both, (on_recommendations, on_fairness, in_report)
    for team in both:
        assert on_fairness[team] == on_recommendations[team] == in_report[team] == expected[team]
    assert on_fairness == {t: expected[t] for t in on_fairness}
    assert in_report == {t: expected[t] for t in in_report}
    # Twelve teams in twelve colours: none shares one.
    assert len(set(on_fairness.values())) == len(on_fairness)
