"""Incremental rebuild: a new day equals a full rebuild; re-running a day touches only its rows."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines._file_source import files_for_day, partitions_with_input
from pipelines.analytics import build as build_module
from pipelines.analytics import incremental
from pipelines.analytics.build import rebuild
from pipelines.analytics.incremental import BuildPlan, plan_build
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse, read_table
from tests.conftest import write_config

pytestmark = pytest.mark.slow

_KINDS = ("sacct", "slurm-state", "k8s-events", "k8s-pods", "dcgm")

#: Bookkeeping tables whose rows differ by construction between two builds.
_BOOKKEEPING = {"build_state", "build_log", "build_pending", "build_resolution"}

#: The stored wait spells counted as ``analytics.time_to_start_counts`` counts them.
_SPELLS_COUNTED = (
    "SELECT week, source, cluster, partition, team, bucket, duration_s, started,"
    " count(*) AS n FROM analytics.time_to_start_jobs GROUP BY ALL"
)


#: The columns of a spell count, less the count: its key.
_COUNT_KEYS = ["week", "source", "cluster", "partition", "team", "bucket", "duration_s", "started"]


def _load_day(con: duckdb.DuckDBPyConnection, cfg: Config, day: str) -> int:
    """Ingest every input file of ``day`` for every cluster; returns the files loaded."""
    n = 0
    for c in cfg.clusters:
        for kind in _KINDS:
            for f in files_for_day(cfg.inputs_dir / c.name, kind, day):
                opts = IngestOptions(cluster=c.name, tz=c.timezone,
                                     fields=c.sacct_fields or None, delimiter=None)  # fmt: skip
                ingest_file(con, kind, f, opts)
                n += 1
    return n


def _days(cfg: Config) -> list[str]:
    return sorted({d for _c, d in partitions_with_input(cfg.cluster_input_dirs())})


def _two_days(
    con: duckdb.DuckDBPyConnection,
    cfg: Config,
    between: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
) -> None:
    """Into the initialised warehouse ``con``: ``cfg``'s first day loaded and built (full),
    ``between`` run on the warehouse, then the second day loaded and built (incrementally)."""
    first, second = _days(cfg)[:2]
    _load_day(con, cfg, first)
    rebuild(con, cfg)
    if between is not None:
        between(con)
    _load_day(con, cfg, second)
    rebuild(con, cfg)


def _tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT schema_name || '.' || table_name FROM duckdb_tables()"
        " WHERE schema_name IN ('core', 'analytics') ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows if r[0].split(".")[1] not in _BOOKKEEPING]


def _assert_frames_close(a: pl.DataFrame, b: pl.DataFrame, table: str) -> None:
    assert a.columns == b.columns, table
    assert a.height == b.height, (table, a.height, b.height)
    floats = [c for c, t in a.schema.items() if t in (pl.Float32, pl.Float64)]
    others = [c for c in a.columns if c not in floats]

    # Sort by the non-float columns, rounded floats breaking ties: never by a raw float, whose
    # last bits (a held of 1e-12 GPU-s against another bucket's 0.0) differ between two sums of
    # the same seconds taken in another order.
    def ordered(df: pl.DataFrame) -> pl.DataFrame:
        cmp = df.with_columns(pl.col(c).round(6).alias(f"__cmp_{c}") for c in floats)
        keys = [c for c in others if not isinstance(df.schema[c], pl.List | pl.Struct | pl.Object)]
        return cmp.sort([*keys, *(f"__cmp_{c}" for c in floats)], nulls_last=True)

    sa, sb = ordered(a), ordered(b)
    assert sa.select(others).equals(sb.select(others)), table
    for c in floats:
        xy = pl.DataFrame({"x": sa[c], "y": sb[c]})
        assert (xy["x"].is_null() == xy["y"].is_null()).all(), (table, c)
        diff = xy.select(
            ((pl.col("x") - pl.col("y")).abs()
             / pl.max_horizontal(pl.col("x").abs(), pl.col("y").abs(), pl.lit(1.0))).max()
        ).item()  # fmt: skip
        assert diff is None or diff <= 1e-9, (table, c, diff)


def assert_equals_full_rebuild(cfg: Config, tmp_path: Path, db: Path | None = None) -> int:
    """``cfg``'s warehouse (or the warehouse ``db``), as built, equals a full rebuild of a copy
    of it (``full.duckdb`` in ``tmp_path``): the same core and analytics tables, each row for
    row (:func:`_assert_frames_close`). Returns how many tables were compared."""
    built = cfg.warehouse_path if db is None else db
    full = tmp_path / "full.duckdb"
    shutil.copyfile(built, full)
    with connect(full) as con:
        rebuild(con, cfg, full=True)
    with connect(built, read_only=True) as inc, connect(full, read_only=True) as ful:
        tables = _tables(inc)
        assert tables == _tables(ful)
        for t in tables:
            _assert_frames_close(inc.sql(f"SELECT * FROM {t}").pl(),
                                 ful.sql(f"SELECT * FROM {t}").pl(), t)  # fmt: skip
    return len(tables)


def delete_load(con: duckdb.DuckDBPyConnection, ingest_id: int) -> None:
    """Delete one load outside a re-load (as a lake load drops a load it does not own): its
    rows in every raw table that has an ``ingest_id``, ``raw.ingests`` among them."""
    tables = con.execute(
        "SELECT DISTINCT table_name FROM information_schema.columns"
        " WHERE table_schema = 'raw' AND column_name = 'ingest_id' ORDER BY 1"
    ).fetchall()
    for (table,) in tables:
        con.execute(f'DELETE FROM raw."{table}" WHERE ingest_id = $i', {"i": ingest_id})


@pytest.fixture(scope="module")
def two_builds(fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Config, Path]:
    """Day 1 loaded and built (full), then day 2 loaded and built incrementally; the same
    warehouse copied and rebuilt in full, beside it."""
    work = tmp_path_factory.mktemp("incremental")
    cfg = load_config(write_config(work, days_dir=fleet_dir))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _two_days(con, cfg)
    full = work / "full.duckdb"
    shutil.copyfile(cfg.warehouse_path, full)
    with connect(full) as con:
        rebuild(con, cfg, full=True)
    return cfg, full


def test_incremental_equals_full_rebuild_after_adding_a_day(
    two_builds: tuple[Config, Path],
) -> None:
    """After a day is added, every core and analytics table of the incremental build equals the
    full rebuild's, row for row (floats within 1e-9 relative)."""
    cfg, full = two_builds
    with connect(cfg.warehouse_path, read_only=True) as inc, connect(full, read_only=True) as ful:
        modes = inc.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
        assert [m for (m,) in modes] == ["full", "incremental"]
        tables = _tables(inc)
        assert tables == _tables(ful)
        assert "analytics.gpu_activity" in tables and "analytics.gpu_waterfall_hourly" in tables
        for t in tables:
            a = inc.sql(f"SELECT * FROM {t}").pl()
            b = ful.sql(f"SELECT * FROM {t}").pl()
            _assert_frames_close(a, b, t)


def test_the_stored_spell_counts_are_the_stored_spells_counted(
    two_builds: tuple[Config, Path],
) -> None:
    """``analytics.time_to_start_counts`` of the incremental build (the stored counts, less the
    recomputed jobs' stored spells, plus their new ones) and of the full rebuild are each the
    spells of ``analytics.time_to_start_jobs`` counted per week, group, duration and outcome,
    no zero count among them."""
    cfg, full = two_builds
    for db in (cfg.warehouse_path, full):
        with connect(db, read_only=True) as con:
            stored = con.sql("SELECT * FROM analytics.time_to_start_counts").pl()
            spells = con.sql(_SPELLS_COUNTED).pl()
        assert stored.height > 100 and stored["n"].min() > 0  # type: ignore[operator]
        assert stored["n"].sum() == spells["n"].sum() > stored.height
        _assert_frames_close(stored, spells.select(stored.columns), "time_to_start_counts")


def test_stored_counts_that_disagree_with_the_stored_spells_are_counted_again(
    fleet_dir: Path, tmp_path: Path
) -> None:
    """Day 1 built; its stored spell counts then zeroed (they disagree with the stored spells);
    day 2 loaded and built incrementally. The spells of jobs still waiting at day 1's cut-off
    change with the cut-off, so taking their stored spells out of the zeroed counts leaves
    counts below zero: the build counts every spell again, and the stored counts are the
    stored spells counted, as a full build's are."""
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _two_days(con, cfg, lambda c: c.execute("UPDATE analytics.time_to_start_counts SET n = 0"))
        modes = con.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
        stored = con.sql("SELECT * FROM analytics.time_to_start_counts").pl()
        spells = con.sql(_SPELLS_COUNTED).pl()
    assert [m for (m,) in modes] == ["full", "incremental"]
    assert stored["n"].min() > 0 and stored["n"].sum() == spells["n"].sum()  # type: ignore[operator]
    _assert_frames_close(stored, spells.select(stored.columns), "time_to_start_counts")


@pytest.mark.parametrize(
    "at_12_digits",
    [None, "analytics.time_to_start_jobs", "analytics.time_to_start_counts"],
    ids=["bit-for-bit", "spells-at-12-digits", "counts-at-12-digits"],
)
def test_the_recomputed_spells_and_counts_are_written_bit_for_bit(
    fleet_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at_12_digits: str | None
) -> None:
    """Day 1 built; then every stored spell's duration, and its count's, moved by one part in
    10^14 (the stored spells and counts still agree, and each spell equals the one a build
    computes at 12 significant digits). Day 2 loaded and built incrementally: the jobs it
    recomputes take their counts at the durations just computed, so their spells and the
    counts of their weeks must be written bit for bit: the stored counts are then exactly the
    stored spells counted (no tolerance). Run again with the spells or the counts compared at
    12 digits (left out of ``_EXACT_TABLES``), the kept rows hold the moved durations and the
    counts disagree with the spells."""
    if at_12_digits is not None:
        exact = build_module._EXACT_TABLES - {at_12_digits}
        monkeypatch.setattr(build_module, "_EXACT_TABLES", exact)
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))

    def move(c: duckdb.DuckDBPyConnection) -> None:
        moved = "duration_s * (1 + 1e-14)"
        c.execute(f"UPDATE analytics.time_to_start_jobs SET duration_s = {moved}")
        c.execute(f"UPDATE analytics.time_to_start_counts SET duration_s = {moved}")
        stored = c.sql("SELECT * FROM analytics.time_to_start_counts").pl().sort(_COUNT_KEYS)
        assert c.sql(_SPELLS_COUNTED).pl().sort(_COUNT_KEYS).equals(stored)

    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _two_days(con, cfg, move)
        modes = con.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
        stored = con.sql("SELECT * FROM analytics.time_to_start_counts").pl().sort(_COUNT_KEYS)
        spells = con.sql(_SPELLS_COUNTED).pl().select(stored.columns).sort(_COUNT_KEYS)
    assert [m for (m,) in modes] == ["full", "incremental"]
    assert stored["n"].sum() == spells["n"].sum()
    assert stored.equals(spells) is (at_12_digits is None)


def test_a_build_with_nothing_new_writes_no_row(
    two_builds: tuple[Config, Path], tmp_path: Path
) -> None:
    """A rebuild of the two-day warehouse (a copy) with nothing loaded since plans no day and
    writes no row of any table, though its policy change ledger is not empty (the policy impact
    reads the whole waterfall, which an incremental build with no day computes no frame of)."""
    cfg, _full = two_builds
    copy = tmp_path / "again.duckdb"
    shutil.copyfile(cfg.warehouse_path, copy)
    with connect(copy) as con:
        (changes,) = con.execute("SELECT count(*) FROM analytics.policy_changes").fetchall()[0]
        rebuild(con, cfg)
        ((build_id, mode),) = con.execute(
            "SELECT build_id, mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
        written = con.execute(
            "SELECT count(*), sum(rows_deleted), sum(rows_inserted), max(days)"
            " FROM analytics.build_log WHERE build_id = $b",
            {"b": build_id},
        ).fetchall()[0]
    assert changes > 0 and mode == "incremental"
    assert written[0] > 20 and written[1:3] == (0, 0)
    assert written[3] in (None, "{}")


def _k8s_b_rows_on(con: duckdb.DuckDBPyConnection, table: str, col: str, day: str) -> int:
    """The rows of ``analytics.<table>`` of cluster k8s-b whose ``col`` falls on ``day``."""
    return int(
        con.execute(
            f"SELECT count(*) FROM analytics.{table} WHERE cluster = 'k8s-b'"
            f" AND CAST({col} AS DATE) = $d",
            {"d": day},
        ).fetchall()[0][0]
    )


def test_rerunning_one_day_touches_only_that_days_rows(two_builds: tuple[Config, Path]) -> None:
    """Re-loading the Kubernetes cluster's last day (same files) and rebuilding rewrites exactly
    that cluster-day in the time-keyed tables, rewrites no row of the window tables, and leaves
    every table's content unchanged.

    Hand count: k8s-b runs in UTC, so its day D is 24 hours → 24 ``occupancy_hourly`` rows and
    24 × 11 leaves = 264 ``gpu_waterfall_hourly`` rows, deleted and inserted; ``gpu_activity``
    rewrites its rows whose bucket falls on D (n, counted before the re-run), and
    ``fair_share_hourly`` its rows of D (a row per team with demand in an hour, counted
    before), ``node_signals_daily`` its rows of D (a row per node that an attempt starting on
    D ran on, counted before); the hourly
    topology tables are computed and rewritten for D alone: k8s-b's map has two racks (r11,
    r12) and the rack is its gang level, so 24 × 2 ``domain_capacity_hourly`` rows, 24 × 6
    segment sizes ``segment_capacity_hourly`` rows, 24 ``topology_stranded_hourly`` rows and
    24 × 4 gang sizes (2, 4, 8 and 16 nodes, :data:`metrics.GANG_NODES`)
    ``topology_fragmentation_hourly`` rows; no other cluster or day is touched. The plan's
    days are exactly {k8s-b: [D, D + 1]}: the day after a DCGM load's samples is planned too
    (its XID events compare its first samples with the last ones before it), and k8s-b, whose
    data end on D, has no hour on it, so it adds no row to the counts above.
    """
    cfg, _full = two_builds
    day = _days(cfg)[1]
    k8s = next(c for c in cfg.clusters if c.name == "k8s-b")
    with connect(cfg.warehouse_path) as con:
        before = {t: con.sql(f"SELECT * FROM {t}").pl() for t in _tables(con)}
        n_act = _k8s_b_rows_on(con, "gpu_activity", "bucket", day)
        n_fair = _k8s_b_rows_on(con, "fair_share_hourly", "hour", day)
        n_nodes = _k8s_b_rows_on(con, "node_signals_daily", "day", day)
        assert n_act > 0 and n_fair > 0 and n_nodes > 0
        n_topology = {
            t: _k8s_b_rows_on(con, t, "hour", day)
            for t in ("topology_fragmentation_hourly", "domain_capacity_hourly",
                      "segment_capacity_hourly", "topology_stranded_hourly")
        }  # fmt: skip
        for kind in _KINDS:
            for f in files_for_day(cfg.inputs_dir / "k8s-b", kind, day):
                ingest_file(con, kind, f, IngestOptions(cluster="k8s-b", tz=k8s.timezone))
        rebuild(con, cfg)
        ((build_id, mode),) = con.execute(
            "SELECT build_id, mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
        assert mode == "incremental"
        log = {
            t: (m, d, i, days)
            for t, m, d, i, days in con.execute(
                "SELECT table_name, mode, rows_deleted, rows_inserted, days"
                " FROM analytics.build_log WHERE build_id = $b",
                {"b": build_id},
            ).fetchall()
        }
        assert log["analytics.occupancy_hourly"][:3] == ("days", 24, 24)
        assert log["analytics.gpu_waterfall_hourly"][:3] == ("days", 264, 264)
        assert log["analytics.gpu_activity"][:3] == ("days", n_act, n_act)
        assert log["analytics.fair_share_hourly"][:3] == ("days", n_fair, n_fair)
        assert log["analytics.node_signals_daily"][:3] == ("days", n_nodes, n_nodes)
        after_day = (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
        assert json.loads(log["analytics.occupancy_hourly"][3]) == {"k8s-b": [day, after_day]}
        hand = {"topology_fragmentation_hourly": 24 * 4, "domain_capacity_hourly": 24 * 2,
                "segment_capacity_hourly": 24 * 6, "topology_stranded_hourly": 24}  # fmt: skip
        for t, n in hand.items():
            assert n_topology[t] == n, (t, n_topology[t])
            assert log[f"analytics.{t}"][:3] == ("days", n, n), (t, log[f"analytics.{t}"])
        # Window and all-time tables are recomputed in memory but written as a row diff: the
        # same files give the same rows, so none is rewritten.
        for t in ("core.jobs", "core.slurm_jobs", "analytics.fairness_weekly",
                  "analytics.fairness_summary_weekly",
                  "analytics.time_to_start_summary", "analytics.time_to_start_jobs",
                  "analytics.time_to_start_counts", "analytics.node_reliability"):  # fmt: skip
            assert log[t][:3] == ("rows", 0, 0), (t, log[t])
        after = {t: con.sql(f"SELECT * FROM {t}").pl() for t in _tables(con)}
    assert after.keys() == before.keys()
    # the re-loaded files have new ingest ids (and in the build's copy of the loads, new load
    # times); everything else is unchanged
    for t in before:
        moved = ["ingest_id", *(["loaded_at"] if t == "analytics.build_ingests" else [])]
        _assert_frames_close(
            after[t].drop(moved, strict=False), before[t].drop(moved, strict=False), t
        )


def _scale_cluster(tmp_path: Path, *, dcgm_5min_days: int) -> tuple[Config, Path]:
    """One Slurm cluster of the scale fleet (16 GPUs, UTC, 2026-03-02 to 03-04, hourly DCGM
    aggregates every day, 5-minute samples on the last ``dcgm_5min_days``): its configuration
    and its input folder."""
    from pipelines.sample_fleet._scale import ScaleConfig, generate_scale_fleet

    out = tmp_path / "fleet"
    generate_scale_fleet(
        out,
        ScaleConfig(gpus=16, days=3, seed=3, start=dt.date(2026, 3, 2),
                    dcgm_5min_days=dcgm_5min_days),
        progress=False,
    )  # fmt: skip
    toml = write_config(tmp_path, days_dir=out, clusters=(("scale-a", "slurm", "UTC"),))
    return load_config(toml), out / "inputs" / "scale-a"


@pytest.mark.parametrize("unattributed_sample", [False, True])
def test_incremental_with_hourly_telemetry_equals_full_rebuild(
    tmp_path: Path, unattributed_sample: bool
) -> None:
    """A scale fleet whose only telemetry is hourly DCGM aggregates (``raw.dcgm_hourly``; no
    5-minute samples): days 1–2 built in full, day 3 loaded and built incrementally. The build
    is incremental (no full-rebuild fallback for hourly data), every core and analytics table
    equals a full rebuild's row for row (floats within 1e-9 relative), and the hourly tables
    rewrote exactly the planned cluster-days, day 3 among them.

    With ``unattributed_sample``, one 5-minute sample of a host no job ran on is loaded on day
    1: the cluster has 5-minute samples but no attributed 5-minute activity, so the one
    fallback rule (the full build's) still takes the hourly aggregates on both paths (the
    incremental path once chose "has a 5-minute sample" instead and observed nothing).

    Hand count: the cluster runs in UTC with 16 GPUs, so each planned day is 24
    ``occupancy_hourly`` rows, deleted and inserted; the waterfall rewrites the rows whose hour
    falls on the planned days (counted before and after), and its rows on the other days are
    unchanged."""
    from pipelines.ingest import file_day

    cfg, base = _scale_cluster(tmp_path, dcgm_5min_days=0)
    kinds = (("sacct", "sacct/*.psv"), ("slurm-state", "slurm_state/*.psv"),
             ("dcgm-hourly", "dcgm_hourly/date=*/*.parquet"))  # fmt: skip
    assert not list(base.glob("dcgm/**/*.*"))  # hourly telemetry only

    stray = tmp_path / "stray_scrape.prom"
    noon_ms = int(dt.datetime(2026, 3, 2, 12, tzinfo=dt.UTC).timestamp() * 1000)
    stray.write_text(
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000001",'
        f'Hostname="no-such-node"}} 50 {noon_ms}\n'
    )

    def load(con: duckdb.DuckDBPyConnection, days: set[str]) -> None:
        for kind, pattern in kinds:
            for f in sorted(base.glob(pattern)):
                if file_day(f) in days:
                    ingest_file(con, kind, f, IngestOptions(cluster="scale-a", tz="UTC"))
        if unattributed_sample and "2026-03-02" in days:
            st = ingest_file(con, "dcgm", stray, IngestOptions(cluster="scale-a", tz="UTC"))
            assert (st.rows_loaded, st.rows_rejected) == (1, 0)

    wf_on = (
        "SELECT count(*) FROM analytics.gpu_waterfall_hourly"
        " WHERE CAST(hour AS DATE) IN (SELECT unnest($d::DATE[]))"
    )
    with connect(cfg.warehouse_path) as con:
        con.execute("SET TimeZone = 'UTC'")
        init_warehouse(con)
        load(con, {"2026-03-02", "2026-03-03"})
        rebuild(con, cfg)
        assert con.execute("SELECT count(*) FROM raw.dcgm_hourly").fetchall()[0][0] > 0
        before = {t: con.sql(f"SELECT * FROM {t}").pl() for t in _tables(con)}
        load(con, {"2026-03-04"})
        rebuild(con, cfg)
        modes = con.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
        assert [m for (m,) in modes] == ["full", "incremental"]
        log = {
            t: (m, d, i, days)
            for t, m, d, i, days in con.execute(
                "SELECT table_name, mode, rows_deleted, rows_inserted, days"
                " FROM analytics.build_log WHERE build_id = 2"
            ).fetchall()
        }
        planned = json.loads(log["analytics.occupancy_hourly"][3])
        assert list(planned) == ["scale-a"] and "2026-03-04" in planned["scale-a"]
        days = planned["scale-a"]
        assert set(days) <= {"2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05"}
        for t in ("analytics.occupancy_hourly", "analytics.gpu_waterfall_hourly"):
            on_days = pl.col("hour").dt.convert_time_zone("UTC").dt.date().cast(pl.String)
            n_old = before[t].filter(on_days.is_in(days)).height
            n_new = con.execute(wf_on.replace("gpu_waterfall_hourly", t.split(".")[1]),
                                {"d": days}).fetchall()[0][0]  # fmt: skip
            assert n_new > n_old
            assert log[t][:3] == ("days", n_old, n_new), t
        # Rows of the days not planned are untouched (same content as before the day was added).
        kept = con.sql(
            "SELECT * FROM analytics.gpu_waterfall_hourly"
            " WHERE CAST(hour AS DATE) NOT IN (SELECT unnest($d::DATE[]))",
            params={"d": days},
        ).pl()
        prev = before["analytics.gpu_waterfall_hourly"].filter(
            ~pl.col("hour").dt.convert_time_zone("UTC").dt.date().cast(pl.String).is_in(days)
        )
        # (no row stores as_of: the rows of the other days are the same, every column)
        _assert_frames_close(kept, prev, "waterfall, other days")
        # The waterfall observed the allocated time from the hourly buckets (as a full build).
        observed = con.sql(
            "SELECT sum(observed_gpu_s) FROM analytics.gpu_waterfall_hourly"
            " WHERE CAST(hour AS DATE) = DATE '2026-03-04'"
        ).fetchall()[0][0]
        assert observed and observed > 0
    assert_equals_full_rebuild(cfg, tmp_path)


def test_a_new_day_rewrites_only_the_rows_that_changed(
    fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The data cut-off ``as_of`` is stored once per cluster (``core.build_cutoffs``), not in
    the rows: a new day that moves it rewrites only the ``core.jobs`` rows whose values changed,
    and the views still show each row its cluster's cut-off.

    Checked: after day 1 (full) and day 2 (incremental), no core or analytics table but
    ``core.build_cutoffs`` has an ``as_of`` column; ``core.build_cutoffs`` holds one row per
    cluster, equal to the build's recorded cut-offs (``build_state.as_of_json``); the
    incremental build's ``core.jobs`` diff deleted exactly the day-1 rows absent from the
    day-2 table and inserted the day-2 rows absent from the day-1 table (anti-joins counted
    here), fewer than a quarter of the day-1 rows (before, the moved cut-off was in every row,
    so every row was rewritten); and the ``jobs`` view's ``as_of`` of every row equals its
    cluster's new cut-off."""
    work = tmp_path_factory.mktemp("cutoffs")
    cfg = load_config(write_config(work, days_dir=fleet_dir))
    first, second = _days(cfg)[:2]
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_day(con, cfg, first)
        rebuild(con, cfg)
        old = con.sql("SELECT * FROM core.jobs").pl()
        old_cuts = dict(con.execute("SELECT cluster, as_of FROM core.build_cutoffs").fetchall())
        _load_day(con, cfg, second)
        rebuild(con, cfg)
        new = con.sql("SELECT * FROM core.jobs").pl()
        stored = con.execute(
            "SELECT table_schema || '.' || table_name FROM information_schema.columns"
            " WHERE column_name = 'as_of' AND table_schema IN ('core', 'analytics')"
        ).fetchall()
        cuts = dict(con.execute("SELECT cluster, as_of FROM core.build_cutoffs").fetchall())
        (recorded,) = con.execute(
            "SELECT as_of_json FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
        (deleted, inserted) = con.execute(
            "SELECT rows_deleted, rows_inserted FROM analytics.build_log"
            " WHERE table_name = 'core.jobs' ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
        view = con.execute("SELECT DISTINCT cluster, as_of FROM jobs ORDER BY 1").fetchall()
    assert [t for (t,) in stored] == ["core.build_cutoffs"]
    assert set(cuts) == {"slurm-a", "k8s-b"}
    assert {c: a.isoformat() for c, a in cuts.items()} == {
        c: dt.datetime.fromisoformat(a).isoformat() for c, a in json.loads(recorded).items()
    }
    assert all(cuts[c] > old_cuts[c] for c in cuts)  # the new day moved every cut-off
    gone = old.join(new, on=old.columns, how="anti", nulls_equal=True)
    added = new.join(old, on=old.columns, how="anti", nulls_equal=True)
    assert (deleted, inserted) == (gone.height, added.height)
    assert 0 < deleted < old.height // 4
    assert view == sorted(cuts.items())


def test_a_moved_node_interval_or_map_row_plans_its_days(
    two_builds: tuple[Config, Path], tmp_path: Path
) -> None:
    """The topology tables read node down intervals and the map node by node, so the plan
    compares them row by row (``core.topology``, ``analytics.build_node_down``):

    * the stored frames again: nothing to rewrite (no day);
    * slurm-a's node a100-013 down 2026-11-02 16:15:07–16:36:07 moved to a100-014 (the same
      GPUs: no cluster-hour's down GPU-seconds changes): both intervals' day, 2026-11-02;
    * a new ``topology.conf`` row valid from 2026-11-03 10:00 and open: its days to slurm-a's
      cut-off 2026-11-04 04:56:02, i.e. 2026-11-03 and 2026-11-04;
    * an inventory rack row (no start: it holds since before any day) moved to another rack: a
      full build.
    """
    cfg, _full = two_builds
    db = tmp_path / "plan.duckdb"
    shutil.copyfile(cfg.warehouse_path, db)
    utc = dt.UTC
    with connect(db) as con:
        stored = {
            t: read_table(con, t)
            for t in ("core.jobs", "analytics.build_pending", "analytics.occupancy_hourly",
                      "core.nodes", "core.build_cutoffs", "core.topology",
                      "analytics.build_node_down")
        }  # fmt: skip

        def plan(**changed: pl.DataFrame) -> BuildPlan:
            frames = {
                "jobs": stored["core.jobs"], "pending": stored["analytics.build_pending"],
                "occupancy": stored["analytics.occupancy_hourly"], "nodes": stored["core.nodes"],
                "as_of": stored["core.build_cutoffs"], "topology": stored["core.topology"],
                "node_down": stored["analytics.build_node_down"], **changed,
            }  # fmt: skip
            return plan_build(con, cfg, registry_path=cfg.registry_path, **frames)

        same = plan()
        assert (same.full, same.days) == (False, {})

        down = stored["analytics.build_node_down"]
        moved = pl.col("start_at") == dt.datetime(2026, 11, 2, 16, 15, 7, tzinfo=utc)
        assert down.filter(moved)["node"].to_list() == ["a100-013"]
        swapped = plan(
            node_down=down.with_columns(
                pl.when(moved).then(pl.lit("a100-014")).otherwise(pl.col("node")).alias("node")
            )
        )
        assert (swapped.full, swapped.days) == (False, {"slurm-a": {dt.date(2026, 11, 2)}})

        topo = stored["core.topology"]
        row = topo.head(1).with_columns(
            pl.lit("slurm-a").alias("cluster"),
            pl.lit("r99").alias("domain"),
            pl.lit(dt.datetime(2026, 11, 3, 10, tzinfo=utc)).alias("valid_from"),
            pl.lit("topology.conf").alias("source"),
        )
        added = plan(topology=pl.concat([topo, row]))
        assert (added.full, added.days) == (
            False,
            {"slurm-a": {dt.date(2026, 11, 3), dt.date(2026, 11, 4)}},
        )
        rack = plan(topology=topo.with_columns(pl.lit("r99").alias("domain")))
        assert (rack.full, rack.reason) == (True, "a topology map without a start changed")


def test_a_file_loaded_again_with_other_values_plans_its_day(
    fleet_dir: Path, tmp_path: Path
) -> None:
    """Day 1 of the fleet built, the Slurm cluster's DCGM file of that day loaded last (from a
    copy), then the same file loaded again with every sample's value halved (as many lines):
    its earlier load is deleted first, and the new load gets a new ingest id, above every id
    the last build saw (ids are never given twice, so the plan's "loaded since the last build"
    finds it). The incremental build plans that cluster-day, halves its GPU activity
    (``gpu_activity`` summed over the day), and equals a full rebuild of a copy, row for row."""
    import gzip

    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    day = _days(cfg)[0]
    (dcgm,) = files_for_day(cfg.inputs_dir / "slurm-a", "dcgm", day)
    copy = tmp_path / dcgm.name
    shutil.copyfile(dcgm, copy)
    opts = IngestOptions(cluster="slurm-a", tz="UTC")
    activity = (
        "SELECT sum(activity) FROM analytics.gpu_activity"
        " WHERE cluster = 'slurm-a' AND CAST(bucket AS DATE) = $d"
    )
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for c in cfg.clusters:
            for kind in _KINDS:
                for f in files_for_day(cfg.inputs_dir / c.name, kind, day):
                    if f != dcgm:
                        ingest_file(con, kind, f, IngestOptions(cluster=c.name, tz=c.timezone,
                                    fields=c.sacct_fields or None, delimiter=None))  # fmt: skip
        first = ingest_file(con, "dcgm", copy, opts)
        rebuild(con, cfg)
        (before,) = con.execute(activity, {"d": day}).fetchall()[0]
        lines = gzip.decompress(copy.read_bytes()).decode().splitlines()
        halved = [
            line if line.startswith("#") or not line else
            " ".join([*line.rsplit(" ", 2)[:1], str(float(line.rsplit(" ", 2)[1]) / 2),
                      line.rsplit(" ", 2)[2]])
            for line in lines
        ]  # fmt: skip
        copy.write_bytes(gzip.compress(("\n".join(halved) + "\n").encode()))
        second = ingest_file(con, "dcgm", copy, opts)
        rebuild(con, cfg)
        (after,) = con.execute(activity, {"d": day}).fetchall()[0]
        days = _planned_days(con)
    assert second.rows_loaded == first.rows_loaded > 0 and second.replaced_ingests == 1
    assert before > 0 and after == pytest.approx(before / 2, rel=1e-9)
    assert day in days["slurm-a"]
    assert second.ingest_id > first.ingest_id
    assert_equals_full_rebuild(cfg, tmp_path)


def _both_days_loaded_but(cfg: Config, con: duckdb.DuckDBPyConnection, *skip: Path) -> None:
    """Every input file of the fleet's two days loaded, except ``skip``."""
    for day in _days(cfg)[:2]:
        for c in cfg.clusters:
            for kind in _KINDS:
                for f in files_for_day(cfg.inputs_dir / c.name, kind, day):
                    if f not in skip:
                        ingest_file(con, kind, f, IngestOptions(cluster=c.name, tz=c.timezone,
                                    fields=c.sacct_fields or None, delimiter=None))  # fmt: skip


def _planned_days(con: duckdb.DuckDBPyConnection, build_id: int = 2) -> dict[str, list[str]]:
    """The cluster-days build ``build_id`` rewrote in the waterfall (its ``build_log`` row)."""
    (days,) = con.execute(
        "SELECT days FROM analytics.build_log WHERE build_id = $b"
        " AND table_name = 'analytics.gpu_waterfall_hourly'",
        {"b": build_id},
    ).fetchall()[0]
    out: dict[str, list[str]] = json.loads(days)
    return out


def _delete_dcgm_load(con: duckdb.DuckDBPyConnection, ingest_id: int) -> None:
    """Delete one 5-minute DCGM load outside a re-load (as a lake load drops a load it does not
    own): its samples and its ``raw.ingests`` row."""
    con.execute("DELETE FROM raw.dcgm_samples WHERE ingest_id = $i", {"i": ingest_id})
    con.execute("DELETE FROM raw.ingests WHERE ingest_id = $i", {"i": ingest_id})


_DAY_ACTIVITY = (
    "SELECT count(*) FROM analytics.gpu_activity"
    " WHERE cluster = 'slurm-a' AND CAST(bucket AS DATE) = $d"
)


def test_a_file_loaded_again_over_fewer_days_plans_the_days_it_left(
    fleet_dir: Path, tmp_path: Path
) -> None:
    """The Slurm cluster's DCGM samples of both fleet days loaded from one file and built; then
    the same file loaded again with day 2's samples only. Its earlier load is deleted, so day 1
    has no samples of that cluster any more: the incremental build plans day 1 (the days the
    replaced load covered, kept per load by the last build), not only day 2 (the days the new
    load covers), leaves day 1 without activity rows and equals a full rebuild, row for row."""
    import gzip

    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    first, second = _days(cfg)[:2]
    (one,) = files_for_day(cfg.inputs_dir / "slurm-a", "dcgm", first)
    (two,) = files_for_day(cfg.inputs_dir / "slurm-a", "dcgm", second)
    copy = tmp_path / one.name
    both = gzip.decompress(one.read_bytes()) + gzip.decompress(two.read_bytes())
    copy.write_bytes(gzip.compress(both))
    opts = IngestOptions(cluster="slurm-a", tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _both_days_loaded_but(cfg, con, one, two)
        ingest_file(con, "dcgm", copy, opts)
        rebuild(con, cfg)
        (before,) = con.execute(_DAY_ACTIVITY, {"d": first}).fetchall()[0]
        shutil.copyfile(two, copy)
        ingest_file(con, "dcgm", copy, opts)
        rebuild(con, cfg)
        (after,) = con.execute(_DAY_ACTIVITY, {"d": first}).fetchall()[0]
        days = _planned_days(con)
    assert before > 0 and after == 0
    assert {first, second} <= set(days["slurm-a"])
    assert_equals_full_rebuild(cfg, tmp_path)


def test_a_deleted_load_and_a_load_under_its_freed_id_plan_both_loads_days(
    fleet_dir: Path, tmp_path: Path
) -> None:
    """Both fleet days loaded and built, the Slurm cluster's day-1 DCGM file loaded last. Its
    load is then deleted outside a re-load (as a lake load drops loads it does not own), and
    the next file, day 2's samples from a copy, takes the freed id: ``raw.ingests``' highest id
    is what the last build saw, so a watermark on ids would see nothing new. The incremental
    build compares every load with the last build's copy, plans day 1 (the deleted load's
    days) and day 2 (the new load's) and equals a full rebuild, row for row."""
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    first, second = _days(cfg)[:2]
    (one,) = files_for_day(cfg.inputs_dir / "slurm-a", "dcgm", first)
    (two,) = files_for_day(cfg.inputs_dir / "slurm-a", "dcgm", second)
    copy = tmp_path / f"copy-{two.name}"
    shutil.copyfile(two, copy)
    opts = IngestOptions(cluster="slurm-a", tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _both_days_loaded_but(cfg, con, one)
        last = ingest_file(con, "dcgm", one, opts)
        rebuild(con, cfg)
        _delete_dcgm_load(con, last.ingest_id)
        again = ingest_file(con, "dcgm", copy, opts)
        rebuild(con, cfg)
        (after,) = con.execute(_DAY_ACTIVITY, {"d": first}).fetchall()[0]
        days = _planned_days(con)
    assert again.ingest_id == last.ingest_id
    assert {first, second} <= set(days["slurm-a"])
    assert after == 0
    assert_equals_full_rebuild(cfg, tmp_path)


@pytest.mark.parametrize("change", ["added", "deleted"])
def test_a_5_minute_load_that_turns_the_hourly_rule_over_plans_every_day(
    change: str, tmp_path: Path
) -> None:
    """A cluster with hourly aggregates on three days and 5-minute samples on the last only.
    ``added``: built from the hourly aggregates, then the 5-minute file loaded; ``deleted``:
    built with it, then its load deleted (as a lake load drops a load it does not own). Either
    way the cluster's attributed 5-minute activity turns from empty to not (or back), so the
    hourly-DCGM rule, which holds for all of a cluster's days at once, turns over: the plan
    rewrites every day of the cluster, not only the load's, and the build equals a full rebuild,
    row for row (planning the load's day alone left the other days' waterfall on the old rule)."""
    cfg, base = _scale_cluster(tmp_path, dcgm_5min_days=1)
    opts = IngestOptions(cluster="scale-a", tz="UTC")
    (five,) = sorted(base.glob("dcgm/*.prom.gz"))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, pattern in (("sacct", "sacct/*.psv"), ("slurm-state", "slurm_state/*.psv"),
                              ("dcgm-hourly", "dcgm_hourly/date=*/*.parquet")):  # fmt: skip
            for f in sorted(base.glob(pattern)):
                ingest_file(con, kind, f, opts)
        if change == "deleted":
            loaded = ingest_file(con, "dcgm", five, opts)
        rebuild(con, cfg)
        if change == "added":
            ingest_file(con, "dcgm", five, opts)
        else:
            _delete_dcgm_load(con, loaded.ingest_id)
        rebuild(con, cfg)
        days = _planned_days(con)
        every = con.execute(
            "SELECT DISTINCT CAST(hour AS DATE)::VARCHAR FROM analytics.occupancy_hourly ORDER BY 1"
        ).fetchall()
    assert len(every) >= 3 and every[-1] == ("2026-03-04",)
    # every day of the cluster, and the day after the 5-minute samples (its XID events compare
    # its first samples with the last ones before it)
    assert days == {"scale-a": [*(d for (d,) in every), "2026-03-05"]}
    assert_equals_full_rebuild(cfg, tmp_path)


def _load_scale_cluster(con: duckdb.DuckDBPyConnection, base: Path) -> None:
    """Every input file of :func:`_scale_cluster`'s folder ``base``, 5-minute samples included."""
    for kind, pattern in (("sacct", "sacct/*.psv"), ("slurm-state", "slurm_state/*.psv"),
                          ("dcgm-hourly", "dcgm_hourly/date=*/*.parquet"),
                          ("dcgm", "dcgm/*.prom.gz")):  # fmt: skip
        for f in sorted(base.glob(pattern)):
            ingest_file(con, kind, f, IngestOptions(cluster="scale-a", tz="UTC"))


def _xid_file(folder: Path, at: dt.datetime) -> Path:
    """A DCGM scrape with one sample: XID 79 on n00001's GPU 7 at ``at``."""
    folder.mkdir()
    path = folder / f"dcgm_{at.date().isoformat()}.prom"
    ms = int(at.timestamp() * 1000)
    path.write_text(
        "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
        f'DCGM_FI_DEV_XID_ERRORS{{gpu="7",UUID="GPU-xid-test",Hostname="n00001"}} 79 {ms}\n'
    )
    return path


def test_an_xid_load_turns_a_failed_attempt_of_the_day_before_into_infrastructure(
    tmp_path: Path,
) -> None:
    """The scale cluster with 5-minute samples on its last two days, built; then a DCGM file
    with one XID 79 on n00001 at 2026-03-04 00:01:00 UTC. Job 1131 FAILED on n00001, 1 GPU,
    2026-03-03 23:26:58 → 2026-03-04 00:03:42: the XID lies within the 10 minutes before its end,
    so the attempt is an infrastructure failure over every hour it ran (METRICS.md waterfall
    leaf 3, ``failed_work_infra``), not only on the XID's day. The plan covers 2026-03-03 too
    (the failed attempts ending within the window after the load's samples: their days from
    start to end).

    Hand count: hour 2026-03-03 23:00 holds 23:26:58 → 24:00:00 of it, 33 min 2 s = 1,982
    GPU-seconds, which move from ``failed_work_user`` to ``failed_work_infra``; hour 00:00 holds
    the other 222 s (to 00:03:42). The build equals a full rebuild, row for row."""
    cfg, base = _scale_cluster(tmp_path, dcgm_5min_days=2)
    opts = IngestOptions(cluster="scale-a", tz="UTC")
    xid = _xid_file(tmp_path / "xid", dt.datetime(2026, 3, 4, 0, 1, tzinfo=dt.UTC))
    leaf_s = (
        "SELECT bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly WHERE hour = $h"
        " AND bucket IN ('failed_work_user', 'failed_work_infra') GROUP BY 1 ORDER BY 1"
    )
    hour = dt.datetime(2026, 3, 3, 23, tzinfo=dt.UTC)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_scale_cluster(con, base)
        rebuild(con, cfg)
        job = con.execute(
            "SELECT state, gpus, start_at, end_at, node_list FROM core.jobs WHERE job_id = '1131'"
        ).fetchall()
        before = dict(con.execute(leaf_s, {"h": hour}).fetchall())
        ingest_file(con, "dcgm", xid, opts)
        rebuild(con, cfg)
        after = dict(con.execute(leaf_s, {"h": hour}).fetchall())
        days = _planned_days(con)
    assert job == [("FAILED", 1, dt.datetime(2026, 3, 3, 23, 26, 58, tzinfo=dt.UTC),
                    dt.datetime(2026, 3, 4, 0, 3, 42, tzinfo=dt.UTC), ["n00001"])]  # fmt: skip
    assert "2026-03-03" in days["scale-a"]
    assert after.get("failed_work_infra", 0.0) - before.get("failed_work_infra", 0.0) == 1982.0
    assert before["failed_work_user"] - after.get("failed_work_user", 0.0) == 1982.0
    assert_equals_full_rebuild(cfg, tmp_path)


def test_an_xid_load_that_moves_the_next_samples_event_plans_its_attempts_days(
    tmp_path: Path,
) -> None:
    """An XID event is a change of a GPU's value from its previous sample, so a load changes
    the event at the next sample after its own too. Job 1034 FAILED on n00001, 1 GPU,
    2026-03-01 12:44:16 → 2026-03-02 10:01:17. Built with a scrape holding XID 79 at 03-02 09:55
    (an event within 10 minutes before the end: infrastructure failure); then a scrape of 79 on
    the same GPU at 09:40 loaded: the event is at 09:40 now, 09:55 repeats the value, and no
    event lies in [09:51:17, 10:01:17]: the attempt is a user failure over all its hours. The
    plan covers 03-01 (the attempts ending within a day and the XID window after the load).

    Hand count: 2026-03-01 holds 12:44:16 → 24:00:00 of it, 11 h 15 min 44 s = 40,544
    GPU-seconds, which move from ``failed_work_infra`` to ``failed_work_user``. The build equals
    a full rebuild, row for row."""
    cfg, base = _scale_cluster(tmp_path, dcgm_5min_days=2)
    later = _xid_file(tmp_path / "y", dt.datetime(2026, 3, 2, 9, 55, tzinfo=dt.UTC))
    earlier = _xid_file(tmp_path / "x", dt.datetime(2026, 3, 2, 9, 40, tzinfo=dt.UTC))
    opts = IngestOptions(cluster="scale-a", tz="UTC")
    leaf_s = (
        "SELECT bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
        " WHERE CAST(hour AS DATE) = DATE '2026-03-01'"
        " AND bucket IN ('failed_work_user', 'failed_work_infra') GROUP BY 1 ORDER BY 1"
    )
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_scale_cluster(con, base)
        ingest_file(con, "dcgm", later, opts)
        rebuild(con, cfg)
        job = con.execute(
            "SELECT state, gpus, start_at, end_at, node_list FROM core.jobs WHERE job_id = '1034'"
        ).fetchall()
        before = dict(con.execute(leaf_s).fetchall())
        ingest_file(con, "dcgm", earlier, opts)
        rebuild(con, cfg)
        after = dict(con.execute(leaf_s).fetchall())
        days = _planned_days(con)
    assert job == [("FAILED", 1, dt.datetime(2026, 3, 1, 12, 44, 16, tzinfo=dt.UTC),
                    dt.datetime(2026, 3, 2, 10, 1, 17, tzinfo=dt.UTC), ["n00001"])]  # fmt: skip
    assert "2026-03-01" in days["scale-a"]
    assert before["failed_work_infra"] - after.get("failed_work_infra", 0.0) == 40544.0
    assert after["failed_work_user"] - before.get("failed_work_user", 0.0) == 40544.0
    assert_equals_full_rebuild(cfg, tmp_path)


def test_a_slurmd_pods_xid_plans_the_slurm_clusters_failed_attempts() -> None:
    """The XID attempt rule by hand. Attempts: slurm-x FAILED 03-01 22:00 → 03-02 01:00 (ends
    within the window after k8s-x's span 03-02 00:50–00:55), slurm-x COMPLETED at the same times
    (not FAILED), slurm-x FAILED 03-01 10:00 → 03-01 12:00 (ends before the span). A span of
    k8s-x, whose slurmd pods run slurm-x (their XIDs are slurm-x's): slurm-x's days 03-01 and
    03-02; without the pair, nothing (no attempt of k8s-x)."""
    from pipelines.analytics.incremental import _xid_attempt_days

    def t(day: int, h: int, m: int = 0) -> dt.datetime:
        return dt.datetime(2026, 3, day, h, m, tzinfo=dt.UTC)

    jobs = pl.DataFrame(
        {"cluster": ["slurm-x"] * 3, "state": ["FAILED", "COMPLETED", "failed "],
         "start_at": [t(1, 22), t(1, 22), t(1, 10)], "end_at": [t(2, 1), t(2, 1), t(1, 12)]}
    )  # fmt: skip
    spans = pl.DataFrame({"cluster": ["k8s-x"], "lo": [t(2, 0, 50)], "hi": [t(2, 0, 55)]})
    pairs = pl.DataFrame({"cluster": ["slurm-x"], "k8s_cluster": ["k8s-x"]})
    assert _xid_attempt_days(jobs, spans) == {}
    assert _xid_attempt_days(jobs, spans, pairs) == {
        "slurm-x": {dt.date(2026, 3, 1), dt.date(2026, 3, 2)}
    }


def test_an_xid_load_just_after_a_failed_end_plans_that_attempts_days() -> None:
    """An XID first scraped up to XID_GRACE_MAX_S (330 s) after a FAILED attempt's end may have
    killed it (metrics.waterfall). Attempt FAILED 03-01 20:00 → 23:58; a DCGM load of 03-02
    00:02–00:30 (its first sample 4 min after the end, its event's r as early as 23:56:30):
    day 03-01 is planned (before: nothing, the attempt ended before the load's first sample).
    An attempt ending 23:50 (12 min before) is not."""
    from pipelines.analytics.incremental import _xid_attempt_days

    def t(day: int, h: int, m: int = 0) -> dt.datetime:
        return dt.datetime(2026, 3, day, h, m, tzinfo=dt.UTC)

    spans = pl.DataFrame({"cluster": ["c"], "lo": [t(2, 0, 2)], "hi": [t(2, 0, 30)]})
    jobs = pl.DataFrame(
        {"cluster": ["c", "c"], "state": ["FAILED", "FAILED"],
         "start_at": [t(1, 20), t(1, 20)], "end_at": [t(1, 23, 58), t(1, 23, 50)]}
    )  # fmt: skip
    assert _xid_attempt_days(jobs, spans) == {"c": {dt.date(2026, 3, 1)}}
    assert _xid_attempt_days(jobs[1:], spans) == {}


def _pods_file(path: Path, items: list[dict[str, object]]) -> None:
    """Write a ``kubectl get pods -o json`` list holding ``items``."""
    doc = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}
    path.write_text(json.dumps(doc), encoding="utf-8")


def _pod_times(pod: dict[str, object]) -> list[str]:
    """Every RFC 3339 UTC time written anywhere in ``pod``'s JSON."""
    return re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", json.dumps(pod))


@pytest.mark.parametrize("rule", [True, False], ids=["planned", "without-the-rule"])
def test_a_kubernetes_attempt_ended_past_the_cutoff_replans_every_day_it_ran(
    fleet_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule: bool
) -> None:
    """A Kubernetes attempt whose end comes from its Job's terminal Event, later than the pods'
    latest time, is ended beyond its cluster's cut-off; when the next build's cut-off passes
    that end, its row is unchanged but it no longer runs at the cut-off, so every day it ran is
    planned, not only the days between the two cut-offs.

    The fleet's k8s-b alone (UTC). Job ``dlrm-shadow-fb9vb``'s one pod starts on 2026-11-02
    and is Running in that day's pods file; its Job's ``Completed`` Event is at 2026-11-03
    04:42:46. The pod is taken out of the 2026-11-03 pods file (deleted when its Job ended), so
    both builds see the same pod rows and the same Event: the attempt's row is the same. Build
    1 loads 2026-11-02, the 2026-11-03 Events and the 2026-11-03 pods whose every time is
    before 04:00 (a morning snapshot of the same file): the cut-off falls on 2026-11-03, before
    the end. Build 2 loads the whole 2026-11-03 pods file again: the cut-off passes the end.
    The days between the cut-offs are 2026-11-03 alone; the attempt ran on 2026-11-02 too, so
    that day is planned, and the build equals a full rebuild, row for row. Without the rule
    (``_cutoff_crossed_days`` finding nothing), 2026-11-02 is not planned and the build differs
    from a full rebuild: the test can fail for the reason it is there."""
    if not rule:
        monkeypatch.setattr(incremental, "_cutoff_crossed_days", lambda *_a, **_k: {})
    data = tmp_path / "data"
    shutil.copytree(fleet_dir / "inputs" / "k8s-b", data / "inputs" / "k8s-b")
    for extra in ("inventory", "registry.yaml"):
        src = fleet_dir / extra
        (shutil.copytree if src.is_dir() else shutil.copyfile)(src, data / extra)
    cfg = load_config(
        write_config(tmp_path, days_dir=data, clusters=(("k8s-b", "kubernetes", "UTC"),))
    )
    first, second = "2026-11-02", "2026-11-03"
    target = "dlrm-shadow-fb9vb"
    ended = dt.datetime(2026, 11, 3, 4, 42, 46, tzinfo=dt.UTC)
    (pods_path,) = files_for_day(data / "inputs" / "k8s-b", "k8s-pods", second)
    day2 = [
        p
        for p in json.loads(pods_path.read_text(encoding="utf-8"))["items"]
        if p["metadata"]["labels"].get("job-name") != target
    ]
    morning = [p for p in day2 if max(_pod_times(p)) < f"{second}T04:00:00Z"]
    assert 0 < len(morning) < len(day2)
    opts = IngestOptions(cluster="k8s-b", tz="UTC")
    query = (
        "SELECT state, start_at, end_at FROM core.jobs"
        " WHERE cluster = 'k8s-b' AND contains(job_id, $n)"
    )
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_day(con, cfg, first)
        for f in files_for_day(data / "inputs" / "k8s-b", "k8s-events", second):
            ingest_file(con, "k8s-events", f, opts)
        _pods_file(pods_path, morning)
        ingest_file(con, "k8s-pods", pods_path, opts)
        rebuild(con, cfg)
        before = con.execute(query, {"n": target}).fetchall()
        ((old_cut,),) = con.execute(
            "SELECT as_of FROM core.build_cutoffs WHERE cluster = 'k8s-b'"
        ).fetchall()
        _pods_file(pods_path, day2)
        _load_day(con, cfg, second)
        rebuild(con, cfg)
        after = con.execute(query, {"n": target}).fetchall()
        days = _planned_days(con)
    (row,) = before
    assert row[0] == "COMPLETED" and row[1].date().isoformat() == first and row[2] == ended
    assert old_cut.date().isoformat() == second and old_cut < ended
    assert after == before
    if not rule:
        assert first not in days["k8s-b"]
        with pytest.raises(AssertionError, match=r"analytics\.fair_share_hourly"):
            assert_equals_full_rebuild(cfg, tmp_path)
        return
    assert {first, second} <= set(days["k8s-b"])
    assert_equals_full_rebuild(cfg, tmp_path)
