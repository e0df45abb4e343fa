"""Every dashboard page renders from the serving copy and shows the values the views hold.

One ``AppTest`` per page, through the ``st.navigation`` entry point (``switch_page``); each compares
a number on the page with the same number queried straight from the serving copy. The filters are
driven through the URL and the sidebar; the SQL page shows rows for a SELECT and an error element
(not an exception) for a write.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from dashboards import queries
from tests.conftest import REPO, Materialized

pytestmark = pytest.mark.slow

APP = str(REPO / "dashboards" / "app.py")


@pytest.fixture
def serving(materialized: Materialized, monkeypatch: pytest.MonkeyPatch) -> str:
    """The small fleet's serving copy, wired into the app through the environment."""
    path = str(materialized.cfg.serving_path)
    monkeypatch.setenv("GOODPUT_SERVING_DB", path)
    monkeypatch.setenv("GOODPUT_CONFIG", str(materialized.cfg.path))
    return path


def _view(serving: str, sql: str) -> pl.DataFrame:
    with duckdb.connect(serving, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        out: pl.DataFrame = con.sql(sql).pl()
        return out


def _page(page: str | None = None, **query_params: str) -> AppTest:
    """The app, run once on its default page (overview), then on ``pages/<page>.py``."""
    at = AppTest.from_file(APP, default_timeout=60)
    for name, value in query_params.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception
    if page is not None:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception
    return at


def _table(at: AppTest, *columns: str) -> pl.DataFrame:
    """The first table on the page with all of ``columns`` (AppTest does not expose table keys)."""
    for element in at.dataframe:
        if set(columns) <= set(element.value.columns):
            return pl.from_pandas(element.value)
    raise AssertionError(f"no table with columns {columns}")


def test_overview_page(serving: str) -> None:
    """Headline numbers, waterfall leaf totals and the data-quality score match the views."""
    at = _page()
    occ, gpu_h = _view(
        serving,
        "select sum(allocated_gpu_s) / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s),"
        " sum(allocated_gpu_s) / 3600 from occupancy_hourly",
    ).row(0)
    shown = {m.label: m.value for m in at.metric}
    assert list(shown) == [
        "Occupancy", "GPU-hours allocated", "Jobs (attempts)", "p90 wait, jobs ≥ 64 GPUs",
    ]  # fmt: skip
    assert shown["Occupancy"] == f"{occ:.1%}"
    assert shown["GPU-hours allocated"] == f"{gpu_h:,.0f}"
    assert [t.value for t in at.title] == ["GPU fleet overview"]

    totals = _table(at, "leaf", "gpu_h", "share_of_capacity")
    expected = _view(
        serving,
        "select bucket as leaf, sum(gpu_s) / 3600 as gpu_h from gpu_waterfall_hourly group by 1",
    )
    assert totals["leaf"].to_list() == [
        "down", "planned_down", "failed_work_infra", "failed_work_user", "preempted_work",
        "timeout_work", "cancelled_work", "allocated_idle", "goodput", "held", "idle",
    ]  # fmt: skip
    got = dict(zip(totals["leaf"], totals["gpu_h"], strict=True))
    for leaf, want in expected.iter_rows():
        assert got[leaf] == pytest.approx(want)
    assert totals["share_of_capacity"].sum() == pytest.approx(1.0)

    clusters = _view(serving, "select distinct cluster from occupancy_hourly")["cluster"]
    dq = _view(serving, 'select cluster, "check" from data_quality')
    checks = [
        "gpus_not_tracked", "dst_ambiguous_times", "dst_nonexistent_times", "rejected_rows",
        "capacity_from_observed_nodes",
    ]  # fmt: skip
    flagged = sum(
        1
        for c in clusters
        for k in checks
        if dq.filter(
            (pl.col("check") == k) & (pl.col("cluster").is_null() | (pl.col("cluster") == c))
        ).height
    )
    total = len(clusters) * len(checks)
    assert at.get("progress")[0].proto.text == (
        f"Data-quality score: {total - flagged} of {total} checks clean"
    )


def test_headline_change_compares_last_seven_days_with_the_seven_before(tmp_path: Path) -> None:
    """Week-over-week: the 7 days up to the data cut-off vs the 7 days before, from literal rows."""
    db = tmp_path / "tiny.duckdb"
    cut = dt.datetime(2026, 3, 15, tzinfo=dt.UTC)
    with duckdb.connect(str(db)) as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(
            "create table occupancy_hourly (cluster varchar, hour timestamptz,"
            " capacity_gpu_s double, down_gpu_s double, planned_down_gpu_s double,"
            " allocated_gpu_s double, as_of timestamptz)"
        )
        # One hour 10 days before the cut (25 % busy) and one 2 days before (75 % busy).
        for days_back, alloc in ((10, 900.0), (2, 2700.0)):
            con.execute(
                "insert into occupancy_hourly values ('c', ?, 3600, 0, 0, ?, ?)",
                [cut - dt.timedelta(days=days_back), alloc, cut],
            )
        con.execute(
            "create table jobs (source varchar, cluster varchar, job_id varchar, team varchar,"
            " gpus double, wait_s double, eligible_at timestamptz, start_at timestamptz)"
        )
        for i, days_back in enumerate((10, 2, 2)):
            start = cut - dt.timedelta(days=days_back)
            con.execute(
                "insert into jobs values ('slurm', 'c', ?, 't', 64, ?, ?, ?)",
                [str(i), 60.0 * (i + 1), start - dt.timedelta(seconds=60 * (i + 1)), start],
            )
    change = queries.headline_change(str(db), queries.Filters(), 64.0)
    assert change["period"].to_list() == ["previous 7 days", "last 7 days"]
    assert change["period_end"][1] == cut
    assert change["occupancy"].to_list() == [0.25, 0.75]
    assert change["allocated_gpu_h"].to_list() == [0.25, 0.75]
    assert change["hours"].to_list() == [1, 1]
    assert change["attempts"].to_list() == [1, 2]
    assert change["p90_large_wait_s"].to_list() == [60.0, 180.0]


def test_waste_page(serving: str) -> None:
    """Idle time per attempt reconciles with the waterfall; lemon nodes are the views'."""
    at = _page("waste")
    at.number_input(key="waste_idle_top").set_value(200).run()
    assert not at.exception
    leaf = _view(
        serving,
        "select cluster, sum(gpu_s) / 3600 as gpu_h from gpu_waterfall_hourly"
        " where bucket = 'allocated_idle' group by 1",
    )
    recon = _table(at, "waterfall_idle_gpu_h", "per_attempt_idle_gpu_h")
    assert dict(recon.select("cluster", "waterfall_idle_gpu_h").iter_rows()) == pytest.approx(
        dict(leaf.iter_rows())
    )
    # Slurm samples carry the job id (hpc_job): the per-attempt sum is the leaf, to the bit.
    idle = _table(at, "job_id", "idle_gpu_h")
    slurm = idle.filter(pl.col("cluster") == "slurm-a")
    want = leaf.filter(pl.col("cluster") == "slurm-a")["gpu_h"].item()
    assert want > 0
    assert slurm["idle_gpu_h"].sum() == pytest.approx(want, rel=1e-9)
    assert recon.filter(pl.col("cluster") == "slurm-a")["attempts"].item() == slurm.height

    lemons = _table(at, "lemon_rank", "host")
    worst = _view(serving, "select cluster, host from node_reliability where lemon_rank = 1")
    got = dict(lemons.filter(pl.col("lemon_rank") == 1).select("cluster", "host").iter_rows())
    assert got == dict(worst.iter_rows())
    assert lemons["lemon_rank"].max() == 10


def test_fairness_page(serving: str) -> None:
    """Fleet-wide fair-share debt per team and week equals ``fairness_weekly``."""
    at = _page("fairness")
    table = _table(at, "week", "team", "fair_share_debt_gpu_h")
    view = _view(
        serving,
        "select week, team, fair_share_debt_gpu_h from fairness_weekly"
        " where \"window\" = 'week' and cluster is null order by week, team",
    )
    assert table.height == view.height > 0
    assert table["team"].to_list() == view["team"].to_list()
    assert table["fair_share_debt_gpu_h"].to_list() == pytest.approx(
        view["fair_share_debt_gpu_h"].to_list()
    )
    assert table["received_share"].sum() == pytest.approx(view["week"].n_unique())


def test_time_to_start_page(serving: str) -> None:
    """KM and naive percentiles per cluster and size bucket equal ``time_to_start_summary``."""
    at = _page("time_to_start")
    table = _table(at, "cluster", "bucket", "p90_s")
    view = _view(
        serving,
        "select cluster, coalesce(bucket, 'all') as bucket, jobs, censored, p50_s, p90_s, p99_s,"
        " naive_p50_s, naive_p90_s, naive_p99_s from time_to_start_summary"
        " where week is null and partition is null and team is null and jobs > 0",
    )
    assert table.height == view.height > 0
    joined = view.join(table, on=["cluster", "bucket"], how="left", suffix="_page")
    assert (joined["spells"] == joined["jobs"]).all()
    for col in ("censored", "p50_s", "p90_s", "p99_s", "naive_p50_s", "naive_p90_s"):
        want, got = joined[col].to_list(), joined[f"{col}_page"].to_list()
        assert [None if v is None or v != v else v for v in got] == want, col


def test_sql_page_select_shows_rows(serving: str) -> None:
    """A SELECT over a view shows its rows in the result table."""
    at = _page("sql_query")
    views = _table(at, "view", "column", "type")
    assert {"jobs", "gpu_waterfall_hourly", "fairness_weekly"} <= set(views["view"])
    at.text_area(key="sql_text").input("select count(*) as n from jobs").run()
    assert not at.exception
    assert not at.error
    want = _view(serving, "select count(*) as n from jobs")["n"][0]
    assert _table(at, "n")["n"].to_list() == [want]


def test_sql_page_write_shows_an_error(serving: str) -> None:
    """A write is refused with an error element, not an exception."""
    at = _page("sql_query")
    at.text_area(key="sql_text").input("create table x(a int)").run()
    assert not at.exception
    assert at.error and "refused" in at.error[0].value
    assert [list(d.value.columns) for d in at.dataframe] == [["view", "column", "type"]]


def test_filters_persist_across_pages_and_in_the_url(serving: str) -> None:
    """A cluster from the URL filters the overview and stays chosen on the next page."""
    at = _page(cluster="k8s-b")
    occ = _view(
        serving,
        "select sum(allocated_gpu_s) / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s)"
        " from occupancy_hourly where cluster = 'k8s-b'",
    ).item()
    assert {m.label: m.value for m in at.metric}["Occupancy"] == f"{occ:.1%}"
    at.switch_page("pages/waste.py").run()
    assert not at.exception
    assert at.selectbox(key="cluster").value == "k8s-b"
    assert set(_table(at, "lemon_rank", "host")["cluster"]) == {"k8s-b"}
    at.selectbox(key="team").set_value("nlp").run()
    assert at.query_params["cluster"] == "k8s-b" and at.query_params["team"] == "nlp"
    at.selectbox(key="cluster").set_value("All").run()
    assert "cluster" not in at.query_params


def test_recommendations_page(serving: str) -> None:
    """One table row per row of the ``recommendations`` view, one detail expander each."""
    at = _page("recommendations")
    assert [t.value for t in at.title] == ["Recommendations"]
    want = _view(serving, "select count(*) as n from recommendations")["n"][0]
    table = _table(at, "severity", "rule", "scope", "change_text", "confidence")
    assert table.height == want > 0
    assert len(at.expander) == want
    files = {b.proto.label for b in at.get("download_button")}
    assert {"latest.json", "slurm.conf.patch", "kueue-patches.yaml"} <= files


def test_recommendations_page_without_the_view(
    serving: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A serving copy without the ``recommendations`` view shows an info message."""
    db = tmp_path / "serving.duckdb"
    shutil.copyfile(serving, db)
    with duckdb.connect(str(db)) as con:
        con.execute("drop view recommendations")
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(db))
    at = _page("recommendations")
    assert at.info and "No recommendations" in at.info[0].value
    assert not at.dataframe


def test_reports_page_lists_the_weeks_folder(
    tmp_path: Path, isolated_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A week folder under ``reports/`` beside the serving copy is listed with its files."""
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(tmp_path / "serving.duckdb"))
    at = _page("reports")
    assert at.info  # no reports folder yet
    week = tmp_path / "reports" / "2026-W45"
    week.mkdir(parents=True)
    (week / "report.html").write_text("<html></html>")
    (week / "report.json").write_text("{}")
    (tmp_path / "reports" / "not-a-week").mkdir()
    at.run()
    assert not at.exception
    assert [s.value for s in at.subheader] == ["2026-W45"]
    assert [b.proto.label for b in at.get("download_button")] == ["HTML", "JSON"]
