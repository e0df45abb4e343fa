"""The fleet simulator at scale (``goodput generate --gpus``): determinism, calibration,
consistency of the schedule, and that its files ingest with zero rejected rows.

One small fleet (512 GPUs = one partition of 64 nodes, 4 days, seed 3) is generated per module.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.sample_fleet._scale import (
    GPUS_PER_NODE,
    SIZE_PROBS,
    ScaleConfig,
    build_cluster,
    generate_scale_fleet,
    partitions_of,
    simulate_partition,
)
from pipelines.sample_fleet._scale_writers import HOURLY_SCHEMA, dcgm_hourly_day
from tests.conftest import write_config

CFG = ScaleConfig(gpus=1024, days=4, seed=3, start=dt.date(2026, 3, 2), dcgm_5min_days=1)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    out = tmp_path_factory.mktemp("scale")
    return out, generate_scale_fleet(out, CFG, progress=False)


@pytest.fixture(scope="module")
def part0() -> tuple[pl.DataFrame, pl.DataFrame, list[Any]]:
    cluster = build_cluster(CFG)
    parts = partitions_of(cluster)
    return simulate_partition(CFG, 0, parts[0], len(parts))


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".parquet"
    }


def test_layout(fleet: tuple[Path, Any]) -> None:
    out, summary = fleet
    base = out / "inputs" / "scale-a"
    assert len(list((base / "sacct").glob("sacct_*.psv"))) == 4
    assert len(list((base / "dcgm").glob("dcgm_*.prom.gz"))) == 1
    assert sorted(p.name for p in (base / "dcgm_hourly").iterdir()) == [
        f"date=2026-03-0{d}" for d in range(2, 6)
    ]
    assert (out / "registry.yaml").is_file() and (out / "inventory" / "scale-a.csv").is_file()
    assert not (out / ".scale_work").exists()
    assert summary.gpus == 1024 and summary.nodes == 128 and summary.partitions == 2


def test_same_seed_same_files(fleet: tuple[Path, Any], tmp_path: Path) -> None:
    """Same seed → byte-identical text files and equal Parquet contents; another seed differs."""
    out, _ = fleet
    generate_scale_fleet(tmp_path / "a", CFG, progress=False)
    assert _files(out) == _files(tmp_path / "a")
    day = "inputs/scale-a/dcgm_hourly/date=2026-03-03/dcgm_hourly_2026-03-03.parquet"
    assert pl.read_parquet(out / day).equals(pl.read_parquet(tmp_path / "a" / day))
    other = ScaleConfig(gpus=1024, days=4, seed=4, start=CFG.start, dcgm_5min_days=0)
    generate_scale_fleet(tmp_path / "b", other, progress=False)
    sacct = "inputs/scale-a/sacct/sacct_2026-03-03.psv"
    assert (out / sacct).read_bytes() != (tmp_path / "b" / sacct).read_bytes()


def test_most_jobs_small_most_gpu_time_large(part0: tuple[pl.DataFrame, Any, Any]) -> None:
    """Drawn shares against the calibration: P(1 GPU) = 0.72, so over n ≈ 1,900 jobs the share
    lies within 0.72 ± 4σ (σ = √(0.72·0.28/n) ≈ 0.010) → (0.68, 0.76). GPU-time: a job of g GPUs
    has median run 900 s × 1.5^log2(g), so E[g·run] grows ~3× per doubling of g; jobs of ≥ 8 GPUs
    (20 % of jobs) must hold well over half of the GPU-seconds (asserted > 0.6)."""
    jobs, _, _ = part0
    n = jobs.height
    share1 = float((jobs["gpus"] == 1).sum()) / n
    sigma = math.sqrt(SIZE_PROBS[0] * (1 - SIZE_PROBS[0]) / n)
    assert abs(share1 - SIZE_PROBS[0]) < 4 * sigma
    started = jobs.filter(pl.col("start").is_not_null())
    w1 = CFG.window[1]
    gpu_s = started.with_columns(
        ((pl.col("end").fill_null(w1) - pl.col("start")) * pl.col("gpus")).alias("gs")
    )
    big = float(gpu_s.filter(pl.col("gpus") >= 8)["gs"].sum()) / float(gpu_s["gs"].sum())
    assert big > 0.6
    # heavy tail: the longest run is > 50 × the median run
    runs = gpu_s.filter(pl.col("end").is_not_null()).select(pl.col("end") - pl.col("start"))
    assert runs.max().item() > 50 * runs.median().item()


def test_schedule_consistent(part0: tuple[pl.DataFrame, pl.DataFrame, list[Any]]) -> None:
    """No GPU held twice, no node over 8 GPUs, start ≥ eligible, no job on a down node."""
    jobs, allocs, events = part0
    assert jobs.filter(pl.col("start") < pl.col("eligible")).height == 0
    # each (host, gpu): intervals sorted by start never overlap
    overlap = (
        allocs.sort("host", "gpu", "start")
        .with_columns(pl.col("end").shift(1).over("host", "gpu").alias("prev_end"))
        .filter(pl.col("start") < pl.col("prev_end"))
    )
    assert overlap.height == 0
    assert allocs["gpu"].is_between(0, GPUS_PER_NODE - 1).all()
    # GPU-seconds per job equal gpus × run on its nodes
    per_job = allocs.group_by("raw_id").agg(pl.len().alias("n"))
    joined = per_job.join(jobs.select("raw_id", "gpus"), on="raw_id")
    assert (joined["n"] == joined["gpus"]).all()
    for ev in events:
        on = allocs.filter(
            (pl.col("host") == ev.host)
            & (pl.col("start") < (ev.end or 2**62))
            & (pl.col("end") > ev.start)
        )
        assert on.height == 0, ev
    assert jobs.filter(pl.col("state") == "NODE_FAIL").height >= 0


def test_hourly_aggregates_hand_computed() -> None:
    """One GPU, one job from 00:10 to 01:30 at activity 0.5, node down 02:00–02:30:
    hour 0 → job 10 samples (00:10…00:55) + free 2; hour 1 → job 6 (01:00…01:25) + free 6;
    hour 2 → free 12 − 6 down = 6; hours 3–23 free 12."""
    from pipelines.sample_fleet._model import NodeEvent

    a = 1_767_225_600  # 2026-01-01T00:00Z
    gpus = pl.DataFrame(
        {"hostname": ["n1"], "gpu": [0], "uuid": ["GPU-x"]},
        schema={"hostname": pl.String, "gpu": pl.Int32, "uuid": pl.String},
    )
    allocs = pl.DataFrame(
        {
            "raw_id": [42],
            "host": ["n1"],
            "gpu": [0],
            "start": [a + 600],
            "end": [a + 5400],
            "activity": [0.5],
        }
    )
    ev = [NodeEvent("n1", a + 7200, a + 9000, "DOWN", "x", "slurm")]
    out = dcgm_hourly_day(gpus, allocs, ev, a, a + 86400, "c")
    assert out.schema == pl.Schema(HOURLY_SCHEMA)
    rows = {(r["hour"].hour, r["hpc_job"]): r["samples"] for r in out.iter_rows(named=True)}
    assert rows[(0, "42")] == 10 and rows[(0, None)] == 2
    assert rows[(1, "42")] == 6 and rows[(1, None)] == 6
    assert rows[(2, None)] == 6 and rows[(3, None)] == 12
    assert out["samples"].sum() == 24 * 12 - 6


def test_planted(fleet: tuple[Path, Any]) -> None:
    _, summary = fleet
    p = summary.planted
    assert p["idle_team"]["mean_activity"] < 0.03
    assert p["idle_team"]["min_mean_activity_of_other_teams"] > 0.25
    assert p["registry_drift"]["sshare_raw_shares"] == 3


def test_ingests_with_zero_rejects(fleet: tuple[Path, Any], tmp_path: Path) -> None:
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse

    out, summary = fleet
    base = out / "inputs" / "scale-a"
    opts = IngestOptions(cluster="scale-a", tz="UTC")
    loaded = rejected = 0
    with connect(tmp_path / "warehouse.duckdb") as con:
        init_warehouse(con)
        for kind, pattern in (
            ("sacct", "sacct/*.psv"),
            ("slurm-state", "slurm_state/*.psv"),
            ("dcgm", "dcgm/*.prom.gz"),
            ("dcgm-hourly", "dcgm_hourly/date=*/*.parquet"),
        ):
            for f in sorted(base.glob(pattern)):
                st = ingest_file(con, kind, f, opts)
                loaded += st.rows_loaded
                rejected += st.rows_rejected
        n = con.sql("select count(distinct job_id_raw) from raw.slurm_rows").fetchall()[0][0]
        hourly = con.sql("select count(*), sum(samples) from raw.dcgm_hourly").fetchall()[0]
    assert rejected == 0
    ids: set[str] = set()
    for f in base.glob("sacct/*.psv"):
        ids |= {line.split("|", 2)[1] for line in f.read_text().splitlines()[1:]}
    assert n == len(ids) > 1000
    assert loaded >= summary.attempts_in_window
    # 1,024 GPUs × 96 hours × 12 samples, less the samples of down nodes (a few node-hours)
    assert hourly[0] >= 1024 * 96 and 0.99 * 1024 * 96 * 12 < hourly[1] <= 1024 * 96 * 12


def test_dcgm_hourly_rejects_and_is_idempotent(tmp_path: Path) -> None:
    """Row 2 has 13 samples (> 12 in an hour), row 3 no hostname: both rejected with their row
    number, field and reason; row 1 loads. Loading the file again replaces the first load."""
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse

    hour = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    f = tmp_path / "date=2026-01-01" / "dcgm_hourly_2026-01-01.parquet"
    f.parent.mkdir()
    pl.DataFrame(
        {
            "cluster": ["c"] * 3,
            "hostname": ["n1", "n1", None],
            "gpu": [0, 1, 0],
            "uuid": ["GPU-a", "GPU-b", "GPU-c"],
            "hour": [hour] * 3,
            "hpc_job": ["7", None, None],
            "samples": [12, 13, 12],
            "gr_engine_active_avg": [0.5, 0.0, 0.0],
            "fb_used_max_mib": [1, 0, 0],
            "xid_last": [0, 0, 0],
        }
    ).write_parquet(f)
    with connect(tmp_path / "warehouse.duckdb") as con:
        init_warehouse(con)
        for _ in range(2):
            st = ingest_file(con, "dcgm-hourly", f, IngestOptions(cluster="c"))
        assert (st.rows_loaded, st.rows_rejected, st.replaced_ingests) == (1, 2, 1)
        assert con.sql("select count(*) from raw.dcgm_hourly").fetchall()[0][0] == 1
        rej = con.sql(
            "select line_no, field, reason from raw.rejected_rows "
            "where source = 'dcgm-hourly' order by line_no"
        ).fetchall()
    assert rej == [(2, "samples", "samples outside 0-12"), (3, "hostname", "missing hostname")]


def test_hourly_activity_hand_computed(tmp_path: Path) -> None:
    """Job 7 in hour 10:00 on two GPUs: 12 samples at 0.5 and 6 at 0.2 → activity =
    (12·0.5 + 6·0.2) / 18 = 7.2 / 18 = 0.4 over gpus = 2; attempt 1 (started 09:30) is the one
    running, not attempt 0 (started 08:00); the unlabelled row is left out."""
    import duckdb

    from pipelines.analytics.dcgm_hourly_metrics import hourly_activity

    h = dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC)
    raw = pl.DataFrame(
        {
            "cluster": ["c"] * 3,
            "hostname": ["n1", "n1", "n1"],
            "gpu": [0, 1, 2],
            "hour": [h] * 3,
            "hpc_job": ["7", "7", None],
            "samples": [12, 6, 12],
            "gr_engine_active_avg": [0.5, 0.2, 0.0],
        }
    )
    con = duckdb.connect()
    con.execute("create schema raw")
    con.register("hourly_rows", raw)
    con.execute("create table raw.dcgm_hourly as select * from hourly_rows")
    jobs = pl.DataFrame(
        {
            "cluster": ["c", "c"],
            "job_id": ["7", "7"],
            "attempt": [0, 1],
            "start_at": [h.replace(hour=8), h.replace(hour=9, minute=30)],
        }
    )
    out = hourly_activity(con, jobs)
    assert out.height == 1
    row = out.row(0, named=True)
    assert row["attempt"] == 1 and row["gpus"] == 2.0
    assert abs(row["activity"] - 0.4) < 1e-12


def test_hourly_activity_takes_the_later_of_two_attempts_started_in_one_hour() -> None:
    """Job 9's attempts 1 (09:10) and 2 (09:40) both start in hour 09:00, so both are the
    latest started before hour 10:00 ends by the hour; the later, attempt 2, is the one
    running. Attempts of jobs no row names (job 5) are never matched: the result is the same
    with them left out."""
    import duckdb

    from pipelines.analytics.dcgm_hourly_metrics import hourly_activity

    h = dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC)
    raw = pl.DataFrame(
        {"cluster": ["c"], "hostname": ["n1"], "gpu": [0], "hour": [h], "hpc_job": ["9"],
         "samples": [12], "gr_engine_active_avg": [0.3]}
    )  # fmt: skip
    con = duckdb.connect()
    con.execute("create schema raw")
    con.register("hourly_rows", raw)
    con.execute("create table raw.dcgm_hourly as select * from hourly_rows")
    jobs = pl.DataFrame(
        {"cluster": ["c"] * 4, "job_id": ["9", "9", "5", "5"], "attempt": [2, 1, 1, 2],
         "start_at": [h.replace(hour=9, minute=40), h.replace(hour=9, minute=10),
                      h.replace(hour=9), h.replace(hour=9, minute=59)]}
    )  # fmt: skip
    out = hourly_activity(con, jobs)
    assert out.select("job_id", "attempt", "gpus").rows() == [("9", 2, 1.0)]
    assert abs(out["activity"][0] - 0.3) < 1e-12
    assert hourly_activity(con, jobs.filter(pl.col("job_id") == "9")).equals(out)


def test_rebuild_from_hourly_aggregates(fleet: tuple[Path, Any], tmp_path: Path) -> None:
    """Only hourly aggregates (no 5-minute samples): the waterfall observes the allocated time
    (coverage > 0.99 on window days: every allocated GPU-hour has its labelled row) and
    ``allocated_idle`` is the idle team's time (activity 0.01–0.03 < θ = 0.05; every other team
    ≥ 0.25)."""
    from pipelines.analytics.build import rebuild
    from pipelines.config import load_config
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse

    out, _ = fleet
    base = out / "inputs" / "scale-a"
    toml = write_config(tmp_path, days_dir=out, clusters=(("scale-a", "slurm", "UTC"),))
    opts = IngestOptions(cluster="scale-a", tz="UTC")
    with connect(tmp_path / "warehouse.duckdb") as con:
        init_warehouse(con)
        for kind, pattern in (
            ("sacct", "sacct/*.psv"),
            ("slurm-state", "slurm_state/*.psv"),
            ("dcgm-hourly", "dcgm_hourly/date=*/*.parquet"),
        ):
            for f in sorted(base.glob(pattern)):
                ingest_file(con, kind, f, opts)
        rebuild(con, load_config(toml), full=True)
        con.execute("SET TimeZone='UTC'")
        cov = con.sql(
            "select min(telemetry_coverage) from telemetry_coverage_daily "
            "where day >= DATE '2026-03-02'"
        ).fetchall()[0][0]
        idle = con.sql(
            "select sum(gpu_s) from gpu_waterfall_hourly where bucket = 'allocated_idle'"
        ).fetchall()[0][0]
        recsys = con.sql("select sum(gpu_s) from jobs where team = 'recsys'").fetchall()[0][0]
    assert cov > 0.99
    assert 0 < idle <= recsys


def test_default_window_of_a_year_lies_in_the_past() -> None:
    """The default start (a Monday) + 365 days ends before 2026-12-01, the day this default was
    set: a year generated with it ingests without rows rejected as times in the future."""
    first = ScaleConfig(gpus=8, days=365).start
    assert first.weekday() == 0
    assert first + dt.timedelta(days=364) < dt.date(2026, 12, 1)


def test_generate_warns_when_the_window_reaches_today(tmp_path: Path) -> None:
    """``goodput generate --gpus`` with a window ending in the future says so on stderr (its
    sacct rows would be rejected as implausible times); the files are still written."""
    from typer.testing import CliRunner

    from pipelines.cli import app

    future = (dt.datetime.now(dt.UTC).date() + dt.timedelta(days=30)).isoformat()
    result = CliRunner().invoke(
        app,
        ["generate", "--gpus", "8", "--days", "1", "--start", future, "--out", str(tmp_path),
         "--dcgm-5min-days", "0"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning: the window ends" in result.stderr
    assert (tmp_path / "planted.json").exists()
