"""The hour-keyed waterfall, topology and fair-share tables are computed one cluster-month at a time
and the placement table a range of attempts at a time: the same tables as one computation over all
hours and attempts."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl
import pytest

from metrics.holds import HOLD_SCHEMA
from pipelines.analytics.build import _placement_keys, rebuild
from pipelines.analytics.chunks import (
    ROW_CHUNK,
    by_hour_chunks,
    hour_chunks,
    on_days,
    reach_end,
    row_chunks,
    touching,
)
from pipelines.analytics.incremental import BuildPlan
from pipelines.config import load_config
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.pipelines.test_incremental import _assert_frames_close, _days, _load_day, _tables

UTC = dt.UTC


def _t(day: int, hour: int) -> dt.datetime:
    return dt.datetime(2026, 3, day, hour, tzinfo=UTC)


def test_hour_chunks_cut_per_cluster_and_period() -> None:
    """Hours 22:00–01:00 across two days of cluster a and one hour of b, cut by day: three
    units, a's first [22:00, 00:00) of day 1 (two hours), then [00:00, 02:00) of day 2 (two
    hours: 00:00, 01:00), then b's one hour [05:00, 06:00)."""
    hours = pl.DataFrame(
        {
            "cluster": ["a", "a", "b", "a", "a"],
            "hour": [_t(1, 22), _t(1, 23), _t(2, 5), _t(2, 0), _t(2, 1)],
        }
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))
    units = hour_chunks(hours, "1d")
    assert [(c, lo, hi, rows.height) for c, lo, hi, rows in units] == [
        ("a", _t(1, 22), _t(2, 0), 2),
        ("a", _t(2, 0), _t(2, 2), 2),
        ("b", _t(2, 5), _t(2, 6), 1),
    ]
    assert hour_chunks(hours.clear(), "1d") == []


def test_on_days_keeps_the_hours_of_each_clusters_days_in_order() -> None:
    """The hours of the test above (a: day 1 22:00, 23:00, day 2 00:00, 01:00; b: day 2 05:00,
    in the frame's order a, a, b, a, a) on the days {a: day 2, b: day 1}: a's two hours of day
    2 (b has no hour on day 1), in the frame's order; every row without days; none with no
    day."""
    hours = pl.DataFrame(
        {
            "cluster": ["a", "a", "b", "a", "a"],
            "hour": [_t(1, 22), _t(1, 23), _t(2, 5), _t(2, 1), _t(2, 0)],
        }
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))
    kept = on_days(hours, {"a": {_t(2, 0).date()}, "b": {_t(1, 0).date()}})
    assert kept.rows() == [("a", _t(2, 1)), ("a", _t(2, 0))]
    assert on_days(hours, None) is hours
    assert on_days(hours, {}).height == 0


def test_touching_keeps_rows_whose_life_meets_the_unit() -> None:
    """Unit [10:00, 12:00) of cluster a. Kept: submitted 09:00 and started 13:00 (waiting in
    the unit); running 08:00–10:00 (ends at lo: kept, the boundary is closed at lo); still
    running (no end); no start at all; submitted 08:00, started 11:00 but recorded as ending
    at 08:30, before its start (it waited through 10:00–11:00). Left out: ended 09:59;
    submitted at hi (12:00); another cluster."""
    rows = pl.DataFrame(
        {
            "cluster": ["a", "a", "a", "a", "a", "a", "a", "b"],
            "job_id": ["wait", "edge", "open", "nostart", "backwards", "before", "after",
                       "other"],
            "submit_at": [_t(1, 9), _t(1, 7), _t(1, 1), None, _t(1, 8), _t(1, 8), _t(1, 12),
                          _t(1, 9)],
            "start_at": [_t(1, 13), _t(1, 8), _t(1, 2), None, _t(1, 11), _t(1, 9), _t(1, 12),
                         _t(1, 10)],
            "end_at": [
                _t(1, 14), _t(1, 10), None, _t(1, 11),
                dt.datetime(2026, 3, 1, 8, 30, tzinfo=UTC),
                dt.datetime(2026, 3, 1, 9, 59, tzinfo=UTC), _t(1, 13), _t(1, 11),
            ],
        }
    )  # fmt: skip
    kept = touching(rows.lazy(), "a", _t(1, 10), _t(1, 12)).collect()
    assert kept["job_id"].to_list() == ["wait", "edge", "open", "nostart", "backwards"]


def _by_rows(
    frame: pl.DataFrame,
    compute: Callable[[pl.DataFrame], pl.DataFrame],
    size: int,
    order: tuple[str, ...] = (),
) -> pl.DataFrame:
    """``compute`` over :func:`row_chunks`, concatenated, as the build writes its parts."""
    return pl.concat([compute(part) for part in row_chunks(frame, size, order=order)])


def test_by_hour_chunks_and_row_chunks_concatenate_in_order() -> None:
    """A compute that reports its unit: three units give three rows in unit order; with no
    hour, the compute runs once on the empty frame. Rows in slices of 2 of 5: 3 slices, the
    rows in their order; a non-positive size raises; with an order, the units are taken in it."""
    hours = pl.DataFrame(
        {"cluster": ["a", "a", "b"], "hour": [_t(1, 0), _t(3, 0), _t(1, 0)]}
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))

    def unit(rows: pl.DataFrame, c: str, lo: dt.datetime, hi: dt.datetime) -> pl.DataFrame:
        return pl.DataFrame({"cluster": [c], "lo": [lo], "n": [rows.height]})

    out = by_hour_chunks(hours, unit, "1d")
    assert out.rows() == [("a", _t(1, 0), 1), ("a", _t(3, 0), 1), ("b", _t(1, 0), 1)]
    assert by_hour_chunks(hours.clear(), unit, "1d")["n"].to_list() == [0]
    seen: list[int] = []

    def per_row(part: pl.DataFrame) -> pl.DataFrame:
        seen.append(part.height)
        return part.with_columns(pl.col("x") * 10)

    frame = pl.DataFrame({"x": [1, 2, 3, 4, 5]})
    assert _by_rows(frame, per_row, 2)["x"].to_list() == [10, 20, 30, 40, 50]
    assert seen == [2, 2, 1]
    with pytest.raises(ValueError, match="positive"):
        _by_rows(frame, per_row, 0)
    # In key order: units {k=1: x=3, 1}, {k=2: x=5, 4}, {k=3: x=2}, each sorted by (k, x)
    # inside, concatenate to the whole frame sorted by (k, x).
    keyed = pl.DataFrame({"k": [2, 3, 1, 2, 1], "x": [5, 2, 3, 4, 1]})
    ordered = _by_rows(keyed, lambda part: part.sort("k", "x"), 2, order=("k",))
    assert ordered.rows() == [(1, 1), (1, 3), (2, 4), (2, 5), (3, 2)]


def test_the_build_in_units_equals_the_build_whole(fleet_dir: Path, tmp_path: Path) -> None:
    """Two days of the bundled fleet, fully rebuilt twice: with every hour in one unit and
    every attempt in one range, and with units of 3 hours and ranges of 7 attempts (so that
    attempts and waits straddle units). Every core and analytics table is the same, row for
    row; the unit-computed tables have rows."""
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for day in _days(cfg)[:2]:
            _load_day(con, cfg, day)
    parted = tmp_path / "units.duckdb"
    shutil.copyfile(cfg.warehouse_path, parted)
    with connect(cfg.warehouse_path) as con:
        rebuild(con, cfg, full=True, chunk="100y", chunk_rows=10**9)
    with connect(parted) as con:
        rebuild(con, cfg, full=True, chunk="3h", chunk_rows=7)
    with connect(cfg.warehouse_path, read_only=True) as a, connect(parted, read_only=True) as b:
        tables = _tables(a)
        assert tables == _tables(b)
        for t in (
            "analytics.domain_capacity_hourly",
            "analytics.segment_capacity_hourly",
            "analytics.topology_stranded_hourly",
            "analytics.topology_fragmentation_hourly",
            "analytics.job_placement",
            "analytics.fairness_weekly",
            "analytics.fair_share_hourly",
            "analytics.gpu_waterfall_hourly",
        ):
            n = a.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            assert n > 7, (t, n)
        for t in tables:
            _assert_frames_close(
                a.sql(f"SELECT * FROM {t}").pl(), b.sql(f"SELECT * FROM {t}").pl(), t
            )


def test_the_build_checkpoints_under_its_memory_limit(
    fleet_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After a rebuild the write-ahead log is empty (the build checkpointed what it committed,
    under its memory limit) and the connection's default memory limit is back; with another
    transaction of the database open, the checkpoint is left to DuckDB (logged) and the build
    still commits: its tables are there and the log holds the WAL's rows until that
    transaction ends."""
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    wal = Path(f"{cfg.warehouse_path}.wal")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_day(con, cfg, _days(cfg)[0])
        default = con.sql("SELECT current_setting('memory_limit')").fetchall()[0][0]
        rebuild(con, cfg, full=True)
        assert not wal.exists() or wal.stat().st_size == 0
        assert con.sql("SELECT current_setting('memory_limit')").fetchall()[0][0] == default
        other = con.cursor()
        other.execute("BEGIN TRANSACTION")
        other.execute("SELECT count(*) FROM core.jobs").fetchall()
        with caplog.at_level("INFO", logger="pipelines.analytics.build"):
            rebuild(con, cfg, full=True)
        assert "checkpoint after the build left to DuckDB" in caplog.text
        assert wal.stat().st_size > 0
        other.execute("ROLLBACK")
        assert con.execute("SELECT count(*) FROM core.jobs").fetchall()[0][0] > 100


def test_the_build_runs_duckdb_on_the_threads_its_memory_limit_allows(
    fleet_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a connection of 16 threads the build's DuckDB work runs on 4 (its 512MB limit ÷
    DuckDB's 125 MB minimum per thread, read inside the build's transaction), and the
    connection has its 16 threads and its own memory limit (3 GB) back after."""
    import pipelines.analytics.build as build_mod

    seen: list[tuple[int, str]] = []
    inner = build_mod._build

    def spy(con: duckdb.DuckDBPyConnection, *args: object, **kwargs: object) -> object:
        setting = "SELECT current_setting('threads'), current_setting('memory_limit')"
        threads, limit = con.sql(setting).fetchall()[0]
        seen.append((int(threads), str(limit)))
        return inner(con, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(build_mod, "_build", spy)
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_day(con, cfg, _days(cfg)[0])
        con.execute("SET threads = 16")
        con.execute("SET memory_limit = '3GB'")
        rebuild(con, cfg, full=True)
        after = con.sql("SELECT current_setting('threads'), current_setting('memory_limit')")
        threads, limit = after.fetchall()[0]
        # the caller's 3 GB (reported 2.7 GiB) back within DuckDB's printed precision, 0.1 GiB
        assert int(threads) == 16 and limit.endswith(" GiB")
        assert abs(float(limit.split()[0]) - 2.7) < 0.1 + 1e-9
        assert con.execute("SELECT count(*) FROM core.jobs").fetchall()[0][0] > 100
    assert seen == [(4, "488.2 MiB")] and build_mod.BUILD_QUERY_MEMORY == "512MB"


def test_a_wait_recorded_as_ending_before_its_start_counts_in_every_unit_it_spans() -> None:
    """One 8-GPU attempt eligible 2026-02-28 23:00, started 2026-03-01 02:00, its end recorded
    at 02-28 23:30 (before its start); 16 GPUs of capacity from 02-28 22:00 to 03-01 03:00. Its
    wait is pending demand 8 GPUs × 3600 s = 28,800 GPU-s in each of the hours 23:00, 00:00 and
    01:00, so ``held`` is 28,800 there in the waterfall computed one month at a time as in the
    waterfall computed whole (the March unit must keep the attempt, though it "ended" in
    February)."""
    from metrics import gpu_waterfall_hourly

    def at(day: int, hour: int) -> dt.datetime:
        return dt.datetime(2026, 2, 28, hour, tzinfo=UTC) + dt.timedelta(days=day)

    attempts = pl.DataFrame(
        {"cluster": ["c"], "job_id": ["1"], "attempt": [0], "partition": ["gpu"], "team": ["t"],
         "state": ["COMPLETED"], "gpus": [8.0], "req_gpus": [8.0],
         "submit_at": [at(0, 23)], "eligible_at": [at(0, 23)], "start_at": [at(1, 2)],
         "end_at": [at(0, 23) + dt.timedelta(minutes=30)], "node_list": [["n1"]]},
        schema_overrides={c: pl.Datetime("us", "UTC")
                          for c in ("submit_at", "eligible_at", "start_at", "end_at")},
    )  # fmt: skip
    hours = [at(0, 22) + dt.timedelta(hours=i) for i in range(6)]
    capacity = pl.DataFrame(
        {"cluster": ["c"] * 6, "hour": hours, "capacity_gpu_s": [16 * 3600.0] * 6,
         "down_gpu_s": [0.0] * 6, "planned_down_gpu_s": [0.0] * 6},
        schema_overrides={"hour": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    cut = at(2, 0)
    whole = gpu_waterfall_hourly(attempts.lazy(), capacity.lazy(), cut).collect()
    units = by_hour_chunks(
        capacity,
        lambda h, c, lo, hi: gpu_waterfall_hourly(
            touching(attempts.lazy(), c, lo, hi), h.lazy(), cut
        ).collect(),
        "1mo",
    )
    held = units.filter(pl.col("leaf") == "held").sort("hour")["gpu_s"].to_list()
    assert held == [0.0, 28_800.0, 28_800.0, 28_800.0, 0.0, 0.0]
    assert units.equals(whole)


def test_an_incremental_build_places_the_jobs_its_days_and_changes_reach() -> None:
    """The jobs whose placements an incremental build recomputes, on the plan {a: day 2}: a's
    job 1 (an attempt starting day 2 10:00; its other attempt started day 1), not a's job 2
    (started day 1 only) nor b's job 3 (started day 2, but b has no day), nor a's never-started
    job 4; the changed job a/5 (its rows changed: old and new keys) and the Kueue-assigned job
    b/6 whatever their days. Each key once."""
    jobs = pl.DataFrame(
        {
            "cluster": ["a", "a", "a", "b", "a"],
            "job_id": ["1", "1", "2", "3", "4"],
            "start_at": [_t(1, 9), _t(2, 10), _t(1, 23), _t(2, 3), None],
        }
    ).with_columns(pl.col("start_at").dt.cast_time_unit("us"))
    changed = pl.DataFrame({"cluster": ["a", "a"], "job_id": ["5", "5"]})
    plan = BuildPlan(False, "incremental", {"a": {_t(2, 0).date()}}, changed_keys=changed)
    kueue = pl.DataFrame({"cluster": ["b"], "job_id": ["6"], "node_list": [["n1"]]})
    keys = _placement_keys(jobs, plan, kueue, None)
    assert sorted(keys.rows()) == [("a", "1"), ("a", "5"), ("b", "6")]


def test_row_chunk_is_whole_duckdb_row_groups(tmp_path: Path) -> None:
    """A unit of a per-attempt table is a whole number of DuckDB's row groups, so units written
    one after another leave no partial row group behind: a table of ROW_CHUNK + 1 rows written
    as two inserts (ROW_CHUNK, then 1) is stored as full row groups and one of 1 row. DuckDB's
    row-group size is read from the storage (122,880 rows in the versions this project uses)."""
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        con.execute("CREATE TABLE t (a BIGINT)")
        con.execute("INSERT INTO t SELECT range FROM range($n)", {"n": ROW_CHUNK})
        con.execute("INSERT INTO t VALUES (-1)")
        con.execute("CHECKPOINT")
        counts = [
            n
            for (n,) in con.execute(
                "SELECT max(count) FROM pragma_storage_info('t') WHERE column_id = 0 "
                "AND segment_type <> 'VALIDITY' GROUP BY row_group_id ORDER BY row_group_id"
            ).fetchall()
        ]
    group = counts[0]
    assert ROW_CHUNK % group == 0
    assert counts == [group] * (ROW_CHUNK // group) + [1]


def test_touching_reaches_an_attempts_pieces_held_past_its_end() -> None:
    """Unit [03-02 00:00, 03-02 02:00) of cluster a (a new day, or a new month's unit).
    ``tail`` ran 03-01 22:00 - 23:50 but its pods held 8 GPUs until 03-02 00:10 (an
    eviction's grace period: its pieces, METRICS.md "GPU holding"): with its pieces it is
    kept (the waterfall and fair share spread 8 x 600 GPU-s into 00:00), without them it
    ended before the unit; ``open`` ended 23:00 but a piece is held at the cut-off (end NULL):
    kept; ``plain`` (no pieces, ended 23:00): left out either way. Columns are kept as given."""
    ts = pl.Datetime("us", "UTC")
    late = dt.datetime(2026, 3, 1, 23, 50, tzinfo=UTC)
    rows = pl.DataFrame(
        {"cluster": ["a"] * 3, "job_id": ["tail", "open", "plain"], "attempt": [0, 0, 0],
         "start_at": [_t(1, 22)] * 3, "end_at": [late, _t(1, 23), _t(1, 23)]},
        schema_overrides={"start_at": ts, "end_at": ts},
    )  # fmt: skip
    holds = pl.DataFrame(
        [("a", "tail", 0, _t(1, 22), late, 16.0),
         ("a", "tail", 0, late, dt.datetime(2026, 3, 2, 0, 10, tzinfo=UTC), 8.0),
         ("a", "open", 0, _t(1, 22), None, 8.0)],
        schema=HOLD_SCHEMA, orient="row",
    )  # fmt: skip
    lo, hi = dt.datetime(2026, 3, 2, tzinfo=UTC), dt.datetime(2026, 3, 2, 2, tzinfo=UTC)
    kept = touching(rows.lazy(), "a", lo, hi, holds=holds.lazy()).collect()
    assert kept.columns == rows.columns
    assert kept["job_id"].to_list() == ["tail", "open"]
    assert touching(rows.lazy(), "a", lo, hi).collect().height == 0
    reach = reach_end(rows.lazy(), holds.lazy()).collect()["_reach_at"].to_list()
    assert reach == [dt.datetime(2026, 3, 2, 0, 10, tzinfo=UTC), None, _t(1, 23)]
