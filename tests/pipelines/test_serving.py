"""The serving copy at scale: aggregates whole, detail tables cut to the last N days."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.warehouse import (
    SERVING_DETAIL_FILTERS,
    SERVING_LEFT_OUT,
    connect,
    init_warehouse,
)
from pipelines.warehouse import publish_serving_copy as publish
from pipelines.warehouse.sql import load_sql
from tests.conftest import write_config
from tests.pipelines.test_incremental import _days, _load_day

pytestmark = pytest.mark.slow

#: Aggregate views the copy must hold whole.
_WHOLE = ("occupancy_hourly", "occupancy_daily", "gpu_waterfall_hourly",
          "telemetry_coverage_daily", "fairness_weekly", "fairness_summary_weekly",
          "time_to_start_summary", "node_reliability", "nodes", "ingests")  # fmt: skip


@pytest.fixture(scope="module")
def warehouse(fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("serving")
    cfg = load_config(write_config(work, days_dir=fleet_dir))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for day in _days(cfg):
            _load_day(con, cfg, day)
        rebuild(con, cfg)
    return cfg.warehouse_path


def _count(db: Path, sql: str, params: dict[str, object] | None = None) -> int:
    with connect(db, read_only=True) as con:
        return int(con.execute(sql, params or {}).fetchall()[0][0])


def test_zero_detail_days_copies_every_row(warehouse: Path, tmp_path: Path) -> None:
    """detail_days = 0: the copy holds every row of every view."""
    out = publish(warehouse, tmp_path / "s.duckdb", detail_days=0)
    for view in ("jobs", "dcgm_samples", "gpu_activity", *_WHOLE):
        q = f"SELECT count(*) FROM {view}"
        assert _count(out, q) == _count(warehouse, q), view


def test_recent_detail_keeps_aggregates_whole_and_cuts_detail(
    warehouse: Path, tmp_path: Path
) -> None:
    """detail_days = 1: aggregates equal the warehouse's; a detail view keeps exactly the rows
    its filter selects for cutoff = max(as_of) − 1 day (running and pending jobs included), and
    drops at least one row (the two-day fleet has jobs that ended earlier)."""
    out = publish(warehouse, tmp_path / "s.duckdb", detail_days=1)
    for view in _WHOLE:
        q = f"SELECT count(*) FROM {view}"
        assert _count(out, q) == _count(warehouse, q), view
    with connect(warehouse, read_only=True) as con:
        (cut,) = con.execute("SELECT max(as_of) FROM jobs").fetchall()[0]
    cutoff = cut - dt.timedelta(days=1)
    kept_jobs = _count(
        warehouse,
        "SELECT count(*) FROM jobs WHERE end_at IS NULL OR end_at >= $c",
        {"c": cutoff},
    )
    assert 0 < _count(out, "SELECT count(*) FROM jobs") == kept_jobs
    assert kept_jobs < _count(warehouse, "SELECT count(*) FROM jobs")
    assert _count(out, "SELECT count(*) FROM jobs WHERE end_at IS NULL") == _count(
        warehouse, "SELECT count(*) FROM jobs WHERE end_at IS NULL"
    )
    assert _count(out, "SELECT count(*) FROM dcgm_samples WHERE ts < $c", {"c": cutoff}) == 0
    assert _count(out, "SELECT count(*) FROM dcgm_samples") == _count(
        warehouse, "SELECT count(*) FROM dcgm_samples WHERE ts >= $c", {"c": cutoff}
    )
    assert _count(out, "SELECT count(*) FROM gpu_activity") == _count(
        warehouse, "SELECT count(*) FROM gpu_activity WHERE bucket >= $c", {"c": cutoff}
    )
    # Every view of the warehouse is in the copy and answers.
    with connect(warehouse, read_only=True) as con:
        views = [v for (v,) in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]  # fmt: skip
    for v in views:
        _count(out, f"SELECT count(*) FROM {v}")


def test_raw_inputs_no_reader_reads_are_left_out(warehouse: Path, tmp_path: Path) -> None:
    """The recent copy holds no ``raw.slurm_rows`` or ``raw.dcgm_hourly`` (a copy of the
    warehouse with an hourly row at the cut-off: rows of both, recent ones too), while every
    view answers (the test above); ``detail_days`` = 0 is the whole file, both tables with
    every row."""
    import shutil

    work = tmp_path / "w.duckdb"
    shutil.copyfile(warehouse, work)
    with connect(work) as con:
        (cut,) = con.execute("SELECT max(as_of) FROM jobs").fetchall()[0]
        con.execute(
            "INSERT INTO raw.dcgm_hourly (cluster, hostname, gpu, uuid, hour, samples,"
            " ingest_id) VALUES ('slurm-a', 'n1', 0, 'GPU-1', $h, 12, 1)",
            {"h": cut},
        )
    recent = publish(work, tmp_path / "s.duckdb", detail_days=1)
    whole = publish(work, tmp_path / "all.duckdb", detail_days=0)
    tables = (
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name || '.' || table_name"
        " IN ('raw.slurm_rows', 'raw.dcgm_hourly')"
    )
    assert _count(recent, tables) == 0
    assert _count(whole, tables) == 2
    for table in sorted(SERVING_LEFT_OUT):
        q = f"SELECT count(*) FROM {table}"
        assert _count(whole, q) == _count(work, q) > 0, table


#: Every reader of the serving copy: the views, the pages and their SQL, the report, the
#: recommendations and the command line (``goodput sql`` reads views only).
_READERS = ("sql/views", "sql/dashboard", "sql/report", "sql/recommendations", "dashboards",
            "pipelines/report", "pipelines/recommendations.py", "pipelines/cli")  # fmt: skip


def test_no_reader_of_the_serving_copy_names_a_table_it_leaves_out() -> None:
    """A view, page, report or recommendation that read a left-out table would find it missing
    in the published copy: none names one (by its table name, with or without the schema)."""
    root = Path(__file__).resolve().parents[2]
    names = {t.split(".", 1)[1] for t in SERVING_LEFT_OUT}
    files = [
        f
        for r in _READERS
        for f in ([root / r] if (root / r).is_file() else sorted((root / r).rglob("*")))
        if f.suffix in (".py", ".sql")
    ]
    assert len(files) > 100
    found = [(str(f.relative_to(root)), n) for f in files for n in names if n in f.read_text()]
    assert found == []


def test_placements_go_with_their_attempts_and_every_week_stays(
    warehouse: Path, tmp_path: Path
) -> None:
    """``job_placement`` in the recent copy holds exactly the rows whose attempt the copy's
    ``jobs`` holds (at least one row dropped, one kept), and ``nvlink_colocation_weekly``, which
    counted every placement, equals the warehouse's, row for row: a copy of the warehouse with
    two NVLink gangs, one on an attempt that ended before the cut-off and one running at it."""
    import shutil

    work = tmp_path / "w.duckdb"
    shutil.copyfile(warehouse, work)
    cut_sql = "SELECT max(as_of) - INTERVAL 1 DAY FROM jobs"
    with connect(work) as con:
        (cutoff,) = con.execute(cut_sql).fetchall()[0]
        old = con.execute(
            "SELECT cluster, job_id, attempt, start_at FROM jobs WHERE end_at < $c"
            " ORDER BY end_at LIMIT 1",
            {"c": cutoff},
        ).fetchall()
        new = con.execute(
            "SELECT cluster, job_id, attempt, start_at FROM jobs WHERE end_at IS NULL"
            " ORDER BY start_at LIMIT 1"
        ).fetchall()
        con.executemany(
            "INSERT INTO analytics.job_placement VALUES"
            " (?, ?, ?, 'nvlink', ?, 2, 4, 1, 1, 0, NULL)",
            [list(r) for r in old + new],
        )
        con.execute(
            "CREATE OR REPLACE TABLE analytics.nvlink_colocation_weekly AS "
            + load_sql("analytics/nvlink_colocation_weekly")
        )
    out = publish(work, tmp_path / "s.duckdb", detail_days=1)
    placed = "SELECT count(*) FROM job_placement"
    with_attempt = placed + " p WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.cluster = p.cluster"
    with_attempt += " AND j.job_id = p.job_id AND j.attempt = p.attempt)"
    assert _count(out, placed) == _count(out, with_attempt) < _count(work, placed)
    nvlink = "SELECT count(*) FROM job_placement WHERE level = 'nvlink'"
    assert (_count(work, nvlink), _count(out, nvlink)) == (2, 1)
    weeks = "SELECT * FROM nvlink_colocation_weekly ORDER BY ALL"
    with connect(work, read_only=True) as a, connect(out, read_only=True) as b:
        assert a.execute(weeks).fetchall() == b.execute(weeks).fetchall()
        assert sum(r[5] for r in a.execute(weeks).fetchall()) == 2  # multi_node_gangs


def test_placements_stay_whole_where_the_weekly_counts_are_not_stored(
    warehouse: Path, tmp_path: Path
) -> None:
    """A warehouse last built by code that counted ``nvlink_colocation_weekly`` from every
    placement (no ``analytics.nvlink_colocation_weekly`` table; the copy takes each view's SQL
    from the warehouse): its recent copy keeps every placement, so that view's weeks stay whole
    (a review found them counted from the recent rows only)."""
    import shutil

    work = tmp_path / "w.duckdb"
    shutil.copyfile(warehouse, work)
    with connect(work) as con:
        con.execute("DROP VIEW nvlink_colocation_weekly")
        con.execute("DROP TABLE analytics.nvlink_colocation_weekly")
    out = publish(work, tmp_path / "s.duckdb", detail_days=1)
    placed = "SELECT count(*) FROM analytics.job_placement"
    assert _count(out, placed) == _count(work, placed)
    cut = publish(warehouse, tmp_path / "cut.duckdb", detail_days=1)
    assert _count(cut, placed) < _count(warehouse, placed)


def test_every_detail_filter_names_a_table_of_the_warehouse(warehouse: Path) -> None:
    """A renamed table would silently be copied whole: each filtered table must exist."""
    with connect(warehouse, read_only=True) as con:
        names = {f"{s}.{t}" for s, t in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables()").fetchall()}  # fmt: skip
    assert set(SERVING_DETAIL_FILTERS) <= names
