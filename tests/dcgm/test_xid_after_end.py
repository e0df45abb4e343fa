"""An XID first scraped just after a FAILED job's End, end to end (ingest, builds).

dcgm-exporter reads DCGM every collect interval (30 s by default) and Prometheus scrapes it every
15-60 s, so the XID that killed a job is often first scraped after Slurm's End. The FAILED →
infra rule takes an event as raised after its series' scrape before less the collect interval
(METRICS.md, the XID rule; ``metrics.waterfall.XID_COLLECT_S``).

Cluster c1, nodes n1 and n2 (1 GPU each), scrapes every 15 s (hh:mm:05, :20, :35, :50):

- job 1 on n1, FAILED 2026-11-02 23:00:00-23:59:50; n1's GPU reads XID 79 from 00:00:05 on
  11-03, its scrape before at 23:59:50: raised after 23:59:20, before the end → infra.
- job 2 on n2, FAILED at the same times; n2's GPU reads XID 48 from 00:01:05, its scrape before
  at 00:00:50: raised after 00:00:20, after the end → user.

The samples come in two files: 11-02 23:00:05-23:59:50 (XID 0), then 11-03 00:00:05-00:10:05.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from pipelines.warehouse.sql import load_sql
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild

C = "c1"
HOUR = dt.datetime(2026, 11, 2, 23, 0, tzinfo=dt.UTC)
_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|"
    "Elapsed|NNodes|AllocTRES|ReqTRES|NodeList"
)


def _job(job: str, node: str) -> str:
    tres = "billing=1,cpu=1,gres/gpu=1,mem=8G,node=1"
    return "|".join([
        job, job, C, "gpu", "acct1", "u1", "FAILED", "1:0", "2026-11-02T22:50:00",
        "2026-11-02T22:50:00", "2026-11-02T23:00:00", "2026-11-02T23:59:50", "00:59:50", "1",
        tres, tres, node,
    ])  # fmt: skip


def _scrapes(path: Path, first: dt.datetime, n: int) -> Path:
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for k in range(n):
        t = first + dt.timedelta(seconds=15 * k)
        ms = int(t.timestamp() * 1000)
        x1 = 79 if t >= dt.datetime(2026, 11, 3, 0, 0, 5, tzinfo=dt.UTC) else 0
        x2 = 48 if t >= dt.datetime(2026, 11, 3, 0, 1, 5, tzinfo=dt.UTC) else 0
        for host, xid in (("n1", x1), ("n2", x2)):
            labels = f'gpu="0",UUID="GPU-{host}",device="nvidia0",Hostname="{host}"'
            lines.append(f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {xid} {ms}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _inputs(tmp_path: Path) -> tuple[Config, Path, Path, Path]:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / f"{C}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nn1,1,a100,gpu,r1\nn2,1,a100,gpu,r1\n"
    )
    (tmp_path / "inputs").mkdir()
    cfg = load_config(write_config(tmp_path, clusters=((C, "slurm", "UTC"),)))
    sacct = tmp_path / "inputs" / "sacct.psv"
    sacct.write_text(_HEADER + "\n" + _job("1", "n1") + "\n" + _job("2", "n2") + "\n")
    day1 = _scrapes(
        tmp_path / "inputs" / "dcgm-1.prom", dt.datetime(2026, 11, 2, 23, 0, 5, tzinfo=dt.UTC), 240
    )
    day2 = _scrapes(
        tmp_path / "inputs" / "dcgm-2.prom", dt.datetime(2026, 11, 3, 0, 0, 5, tzinfo=dt.UTC), 41
    )
    return cfg, sacct, day1, day2


def _leaves(con: duckdb.DuckDBPyConnection) -> dict[str, float]:
    return dict(
        con.execute(
            "SELECT bucket, gpu_s FROM analytics.gpu_waterfall_hourly WHERE hour = $h",
            {"h": HOUR},
        ).fetchall()
    )


def test_an_xid_scraped_after_a_failed_end_makes_it_infra_full_and_incremental(
    tmp_path: Path,
) -> None:
    """Hour 23:00 of 11-02, 2 GPUs = 7,200 GPU-s: job 1 failed_work_infra 3,590, job 2
    failed_work_user 3,590, idle 20 (before: failed_work_user 7,180, infra 0: only events at or
    before the end counted).
    node_reliability: n1 1 XID, 1 infrastructure failure; n2 1 XID, 0 (before: n1 0);
    job_gpu_summary.xid_events 0 and 0 (buckets after the end). The second day's samples
    loaded and built incrementally (the attempt's day 11-02 is planned though the load holds
    no sample of it): the same, and equal to a full build."""
    cfg, sacct, day1, day2 = _inputs(tmp_path)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm", day1, opts)
        rebuild(con, cfg)
        first = _leaves(con)
        ingest_file(con, "dcgm", day2, opts)
        rebuild(con, cfg)
        (mode, _reason) = con.execute(load_sql("analytics/last_build_mode")).fetchone() or (
            None,
            None,
        )
        leaves = _leaves(con)
        summary = con.execute(
            "SELECT job_id, xid_events FROM analytics.job_gpu_summary ORDER BY job_id"
        ).fetchall()
        rel = {
            h: (x, i)
            for h, x, i in con.execute(
                "SELECT host, xid_events, infra_failed_attempts FROM analytics.node_reliability"
            ).fetchall()
        }
    assert (first["failed_work_infra"], first["failed_work_user"]) == (0.0, 7_180.0)
    assert mode == "incremental"
    assert (leaves["failed_work_infra"], leaves["failed_work_user"], leaves["idle"]) == (
        3_590.0,
        3_590.0,
        20.0,
    )
    assert rel == {"n1": (1, 1), "n2": (1, 0)}
    # job_gpu_summary counts the XIDs of the buckets its GPUs were its (METRICS.md): none here
    assert summary == [("1", 0), ("2", 0)]
    assert_equals_full_rebuild(cfg, tmp_path)
