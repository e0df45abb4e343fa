"""XIDs of the hourly DCGM aggregates reach the FAILED → infra rule and node reliability.

``xid_last`` is ``last_over_time(DCGM_FI_DEV_XID_ERRORS[1h])`` (deploy/prometheus), the GPU's
last XID value of the hour, which does not reset: an event is a non-zero value the GPU did not
hold the hour before, known only to lie in its hour H: raised after H − 90 s, seen at H + 1h
(METRICS.md, XID rule, hourly aggregates).

Cluster c1 (UTC), nodes n1 and n2 with 8 GPUs each, hourly rows 08:00-11:00 of 2026-11-02 for
all 16 GPUs (XID 0 but for GPU-n1-0 and GPU-n2-0, unlabelled):

- job 1, 8 GPUs on n1, FAILED 09:25-10:25 (8 × 3,600 = 28,800 GPU-s); GPU-n1-0 reads XID 79 in
  hours 10:00 and 11:00 (0 before): one event, raised in (09:58:30, 11:00], the end 10:25 within
  it → failed_work_infra 28,800 (before: failed_work_user, the hourly XID read nowhere).
- job 2, 8 GPUs on n2, FAILED 08:40-09:40 (28,800 GPU-s); GPU-n2-0 reads XID 48 in hours 10:00
  and 11:00: raised after 09:58:30, after the end → failed_work_user 28,800.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import polars as pl

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from pipelines.warehouse.sql import load_sql
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild

C = "c1"
DAY = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|"
    "Elapsed|NNodes|AllocTRES|ReqTRES|NodeList"
)


def _job(job: str, node: str, start: str, end: str, state: str = "FAILED") -> str:
    tres = "billing=8,cpu=8,gres/gpu=8,mem=64G,node=1"
    code = "1:0" if state == "FAILED" else "0:0"
    return "|".join([
        job, job, C, "gpu", "acct1", "u1", state, code, start, start, start, end,
        "01:00:00", "1", tres, tres, node,
    ])  # fmt: skip


def _hourly(path: Path, first: dt.datetime, n: int, xid_from: dt.datetime) -> Path:
    """Hourly rows of every GPU of n1 and n2 for the ``n`` hours from ``first``: XID 79 on
    GPU-n1-0 and 48 on GPU-n2-0 from the hour ``xid_from``, 0 elsewhere."""
    rows = []
    for k in range(n):
        hour = first + dt.timedelta(hours=k)
        for node, code in (("n1", 79), ("n2", 48)):
            for g in range(8):
                rows.append({
                    "cluster": C, "hostname": node, "gpu": g, "uuid": f"GPU-{node}-{g}",
                    "hour": hour, "hpc_job": None, "samples": 12, "gr_engine_active_avg": 0.0,
                    "fb_used_max_mib": 0, "xid_last": code if g == 0 and hour >= xid_from else 0,
                })  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema_overrides={"hpc_job": pl.String()}).write_parquet(path)
    return path


def _setup(
    tmp_path: Path, times: tuple[str, str, str, str], state: str = "FAILED"
) -> tuple[Config, Path]:
    """c1's inventory and configuration, and job 1 on n1 (``times[0]`` to ``times[1]``) and
    job 2 on n2 (``times[2]`` to ``times[3]``), both ``state`` with 8 GPUs."""
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / f"{C}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nn1,8,a100,gpu,r1\nn2,8,a100,gpu,r1\n"
    )
    (tmp_path / "inputs").mkdir()
    cfg = load_config(write_config(tmp_path, clusters=((C, "slurm", "UTC"),)))
    sacct = tmp_path / "inputs" / "sacct.psv"
    sacct.write_text(
        "\n".join([
            _HEADER, _job("1", "n1", times[0], times[1], state),
            _job("2", "n2", times[2], times[3], state),
        ]) + "\n"
    )  # fmt: skip
    return cfg, sacct


def _failed(con: duckdb.DuckDBPyConnection) -> tuple[float, float]:
    got = dict(
        con.execute(
            "SELECT bucket, sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
            " WHERE bucket IN ('failed_work_infra', 'failed_work_user') GROUP BY bucket"
        ).fetchall()
    )
    return got.get("failed_work_infra", 0.0), got.get("failed_work_user", 0.0)


def _reliability(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, list[int], int]]:
    return {
        h: (x, list(codes), i)
        for h, x, codes, i in con.execute(
            "SELECT host, xid_events, xid_codes, infra_failed_attempts"
            " FROM analytics.node_reliability"
        ).fetchall()
    }


def _mode(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute(load_sql("analytics/last_build_mode")).fetchone()
    return None if row is None else row[0]


def test_an_hourly_xid_makes_a_failed_attempt_ending_in_its_hour_infra(tmp_path: Path) -> None:
    """Hours 08:00-09:00 loaded and built: failed_work_user 57,600, infra 0. Hours 10:00-11:00
    loaded and built incrementally: job 1 infra 28,800, job 2 user 28,800 (before: infra 0,
    user 57,600); node_reliability n1 1 XID [79], 1 infrastructure failure; n2 1 XID [48], 0
    (before: no XID anywhere; the 11:00 rows hold the same XIDs: no second event). The
    incremental build equals a full one."""
    cfg, sacct = _setup(
        tmp_path,
        ("2026-11-02T09:25:00", "2026-11-02T10:25:00", "2026-11-02T08:40:00",
         "2026-11-02T09:40:00"),
    )  # fmt: skip
    folder = tmp_path / "inputs" / C / "dcgm_hourly" / "date=2026-11-02"
    ten = DAY + dt.timedelta(hours=10)
    early = _hourly(folder / "early.parquet", DAY + dt.timedelta(hours=8), 2, ten)
    late = _hourly(folder / "late.parquet", ten, 2, ten)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm-hourly", early, opts)
        rebuild(con, cfg)
        first = _failed(con)
        ingest_file(con, "dcgm-hourly", late, opts)
        rebuild(con, cfg)
        mode = _mode(con)
        second = _failed(con)
        rel = _reliability(con)
        xids = _summary_xids(con)
    assert first == (0.0, 57_600.0)
    assert mode == "incremental"
    assert second == (28_800.0, 28_800.0)
    assert rel == {"n1": (1, [79], 1), "n2": (1, [48], 0)}
    # job_gpu_summary: job 1 held n1 (whole node) 09:25-10:25, which meets the event's hour
    # [10:00, 11:00) → 1; job 2 ended 09:40, before it → 0
    assert xids == {"1": 1, "2": 0}
    assert_equals_full_rebuild(cfg, tmp_path)


def _scrapes(path: Path) -> Path:
    """5-minute samples of GPU-n1-0 from 00:40:05 to 00:55:05 on 11-02: XID 0, then 79 from
    00:45:05."""
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for k in range(4):
        t = DAY + dt.timedelta(minutes=40 + 5 * k, seconds=5)
        xid = 79 if k >= 1 else 0
        labels = 'gpu="0",UUID="GPU-n1-0",device="nvidia0",Hostname="n1"'
        lines.append(f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {xid} {int(t.timestamp() * 1000)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_five_minute_samples_reading_the_hours_xid_stand_for_it(tmp_path: Path) -> None:
    """The same a day earlier, across midnight: job 1 on n1 FAILED 11-01 23:25 - 11-02 00:25,
    job 2 on n2 11-01 22:40 - 23:40, hourly rows 22:00-01:00 with the XIDs from 00:00 of 11-02.
    Built: job 1 infra 28,800, job 2 user 28,800. Then 5-minute samples of GPU-n1-0 loaded that
    read XID 79 from 00:45:05, 0 at 00:40:05: the 5-minute event (raised after 00:44:35, after
    job 1's end at 00:25) stands for hour 00:00's hourly XID 79, which is not counted again:
    infra 0, user 57,600; n1 1 XID (not 2), no infrastructure failure. The samples start at
    00:40:05, more than 5.5 minutes after the end: the incremental build plans job 1's days
    (11-01 among them) from the start of their hour, and equals a full one."""
    cfg, sacct = _setup(
        tmp_path,
        ("2026-11-01T23:25:00", "2026-11-02T00:25:00", "2026-11-01T22:40:00",
         "2026-11-01T23:40:00"),
    )  # fmt: skip
    folder = tmp_path / "inputs" / C / "dcgm_hourly" / "date=2026-11-01"
    hourly = _hourly(folder / "all.parquet", DAY - dt.timedelta(hours=2), 4, DAY)
    samples = _scrapes(tmp_path / "inputs" / "dcgm.prom")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm-hourly", hourly, opts)
        rebuild(con, cfg)
        first = _failed(con)
        first_xids = _summary_xids(con)
        ingest_file(con, "dcgm", samples, opts)
        rebuild(con, cfg)
        mode = _mode(con)
        second = _failed(con)
        rel = _reliability(con)
        second_xids = _summary_xids(con)
    assert first == (28_800.0, 28_800.0)
    assert mode == "incremental"
    assert second == (0.0, 57_600.0)
    assert rel == {"n1": (1, [79], 0), "n2": (1, [48], 0)}
    # job_gpu_summary: the hourly event of hour 00:00 is job 1's (whole n1 until 00:25) → 1;
    # once the samples read it (first at 00:45:05, after job 1 ended) it is theirs alone, in a
    # bucket no attempt holds → 0, never 1 + 1
    assert first_xids == {"1": 1, "2": 0}
    assert second_xids == {"1": 0, "2": 0}
    assert_equals_full_rebuild(cfg, tmp_path)


def test_an_hourly_load_replans_the_days_of_the_attempts_its_xids_decide(tmp_path: Path) -> None:
    """Job 1 on n1 FAILED 11-01 23:25 - 11-02 00:25, job 2 on n2 11-01 22:40 - 23:40; the hourly
    rows 22:00-23:00 of 11-01 (no XID) loaded and built: user 57,600. Then the rows 00:00-01:00
    of 11-02 (XID 79 on GPU-n1-0 from 00:00) loaded, built incrementally: job 1 infra 28,800,
    16,800 of it on 11-01 (23:25-24:00, 8 GPUs), a day the load holds no hour of (its XID's
    FAILED attempts' days are planned), job 2 user 28,800; equal to a full build."""
    cfg, sacct = _setup(
        tmp_path,
        ("2026-11-01T23:25:00", "2026-11-02T00:25:00", "2026-11-01T22:40:00",
         "2026-11-01T23:40:00"),
    )  # fmt: skip
    inputs = tmp_path / "inputs" / C / "dcgm_hourly"
    early = _hourly(inputs / "date=2026-11-01" / "h.parquet", DAY - dt.timedelta(hours=2), 2, DAY)
    late = _hourly(inputs / "date=2026-11-02" / "h.parquet", DAY, 2, DAY)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm-hourly", early, opts)
        rebuild(con, cfg)
        first = _failed(con)
        ingest_file(con, "dcgm-hourly", late, opts)
        rebuild(con, cfg)
        mode = _mode(con)
        second = _failed(con)
        day_before = con.execute(
            "SELECT sum(gpu_s) FROM analytics.gpu_waterfall_hourly"
            " WHERE bucket = 'failed_work_infra' AND hour < $d",
            {"d": DAY},
        ).fetchall()[0][0]
    assert first == (0.0, 57_600.0)
    assert mode == "incremental"
    assert second == (28_800.0, 28_800.0)
    assert day_before == 16_800.0
    assert_equals_full_rebuild(cfg, tmp_path)


def _summary_xids(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return dict(con.execute("SELECT job_id, xid_events FROM analytics.job_gpu_summary").fetchall())


def test_job_gpu_summary_counts_the_hourly_xid_of_an_hour_its_attempt_held_the_gpu(
    tmp_path: Path,
) -> None:
    """job_gpu_summary.xid_events on a cluster with hourly aggregates alone (METRICS.md, "A
    job's XIDs"). Job 1 holds all 8 GPUs of n1 10:00-13:00, job 2 all 8 of n2 08:40-09:40.
    Hours 08:00-09:00 loaded and built: 0 and 0. Hours 10:00-12:00 loaded (XID 79 on GPU-n1-0
    and 48 on GPU-n2-0 from hour 11:00, 0 before) and built incrementally: n1's event is hour
    11:00, which job 1 held GPU-n1-0 in (whole node, 10:00-13:00 meets [11:00, 12:00)) → 1
    (before the fix 0: only 5-minute buckets were read); hour 12:00 holds the same 79, no second
    event; n2's event of hour 11:00 comes after job 2 ended (09:40) → 0. Equal to a full
    build."""
    cfg, sacct = _setup(
        tmp_path,
        ("2026-11-02T10:00:00", "2026-11-02T13:00:00", "2026-11-02T08:40:00",
         "2026-11-02T09:40:00"),
    )  # fmt: skip
    folder = tmp_path / "inputs" / C / "dcgm_hourly" / "date=2026-11-02"
    eleven = DAY + dt.timedelta(hours=11)
    early = _hourly(folder / "early.parquet", DAY + dt.timedelta(hours=8), 2, eleven)
    late = _hourly(folder / "late.parquet", DAY + dt.timedelta(hours=10), 3, eleven)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm-hourly", early, opts)
        rebuild(con, cfg)
        first = _summary_xids(con)
        ingest_file(con, "dcgm-hourly", late, opts)
        rebuild(con, cfg)
        mode = _mode(con)
        second = _summary_xids(con)
        rel = _reliability(con)
    assert first == {"1": 0, "2": 0}
    assert mode == "incremental"
    assert second == {"1": 1, "2": 0}
    assert rel["n1"][:2] == (1, [79])
    assert_equals_full_rebuild(cfg, tmp_path)


def _summaries_around(
    cfg: Config, sacct: Path, hourly: Path, then: tuple[str, Path]
) -> tuple[dict[str, int], str | None, dict[str, int]]:
    """The sacct file and ``hourly`` loaded and built, then ``then`` (kind, file) loaded and
    built again: job_gpu_summary's XIDs after each build, and the second build's mode."""
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm-hourly", hourly, opts)
        rebuild(con, cfg)
        first = _summary_xids(con)
        ingest_file(con, then[0], then[1], opts)
        rebuild(con, cfg)
        return first, _mode(con), _summary_xids(con)


def test_an_earlier_hourly_load_moves_the_next_days_first_xid_event(tmp_path: Path) -> None:
    """An hourly XID event is a value the GPU did not read the hour before, so a load of hours
    [lo, hi] can change the event of the hour after hi, on the next day. Job 1 (COMPLETED, so
    no FAILED attempt's XID rule plans anything) holds all 8 GPUs of n1 11-02 00:00-02:00.
    Hours 11-02 00:00-01:00 loaded (79 on GPU-n1-0 from 11-01 19:00, i.e. in both hours) and
    built: 00:00 is the GPU's first row reading 79, an event in the hour job 1 held it → 1.
    Then hours 11-01 22:00-23:00 loaded, reading 79 already: the event moves to 22:00, before
    job 1 started, and 00:00 repeats it → 0. The load's days are 11-01 only; without the hour
    after its last (11-02 00:00) the incremental build kept 1 where a full build gives 0."""
    cfg, sacct = _setup(
        tmp_path,
        ("2026-11-02T00:00:00", "2026-11-02T02:00:00", "2026-11-01T20:00:00",
         "2026-11-01T21:00:00"),
        state="COMPLETED",
    )  # fmt: skip
    inputs = tmp_path / "inputs" / C / "dcgm_hourly"
    since = DAY - dt.timedelta(hours=5)
    late = _hourly(inputs / "date=2026-11-02" / "h.parquet", DAY, 2, since)
    early = _hourly(inputs / "date=2026-11-01" / "h.parquet", DAY - dt.timedelta(hours=2), 2, since)
    first, mode, second = _summaries_around(cfg, sacct, late, ("dcgm-hourly", early))
    assert first == {"1": 1, "2": 0}
    assert mode == "incremental"
    assert second == {"1": 0, "2": 0}
    assert_equals_full_rebuild(cfg, tmp_path)


def _scrapes_from(path: Path, first: dt.datetime, n: int, xid_from: int) -> Path:
    """``n`` 5-minute samples of GPU-n1-0 (no job label) from ``first``: XID 0, then 79 from
    the ``xid_from``-th on."""
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    labels = 'gpu="0",UUID="GPU-n1-0",device="nvidia0",Hostname="n1"'
    for k in range(n):
        t = first + dt.timedelta(minutes=5 * k)
        xid = 79 if k >= xid_from else 0
        lines.append(f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {xid} {int(t.timestamp() * 1000)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_job_gpu_summary_counts_an_xid_read_by_samples_and_hourly_rows_once(
    tmp_path: Path,
) -> None:
    """Job 1 holds all 8 GPUs of n1 10:00-13:00; the hourly rows 10:00-12:00 read XID 79 on
    GPU-n1-0 from hour 11:00, and 5-minute samples of GPU-n1-0 11:00:05-11:15:05 read 0, then
    79 from 11:10:05. The samples' event (bucket 11:10, whole node → job 1) stands for the
    hourly one of the same GPU, hour and value: xid_events 1, not 2 (the hourly event alone,
    before the samples were loaded: 1 too). Incremental equals full."""
    cfg, sacct = _setup(
        tmp_path,
        ("2026-11-02T10:00:00", "2026-11-02T13:00:00", "2026-11-02T08:40:00",
         "2026-11-02T09:40:00"),
    )  # fmt: skip
    folder = tmp_path / "inputs" / C / "dcgm_hourly" / "date=2026-11-02"
    eleven = DAY + dt.timedelta(hours=11)
    hourly = _hourly(folder / "all.parquet", DAY + dt.timedelta(hours=10), 3, eleven)
    samples = _scrapes_from(
        tmp_path / "inputs" / "dcgm.prom", eleven + dt.timedelta(seconds=5), 4, 2
    )
    first, mode, second = _summaries_around(cfg, sacct, hourly, ("dcgm", samples))
    assert first == {"1": 1, "2": 0}
    assert mode == "incremental"
    assert second == {"1": 1, "2": 0}
    assert_equals_full_rebuild(cfg, tmp_path)
