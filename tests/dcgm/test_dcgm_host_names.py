"""DCGM host names that are not the Slurm node names, end to end (ingest, a build).

dcgm-exporter labels ``Hostname`` with the machine's host name, often fully qualified
(``n1.hpc.example.edu``); Slurm's ``NodeName`` (sacct's ``NodeList``, the inventory) is usually
the short name. A DCGM host that names no node is the node its short name names, when exactly
one does (and a short host is the one node whose short name it is); otherwise it stays unmatched
and a data-quality finding says so (METRICS.md "Telemetry attribution", host names).

One hour, 2026-11-02 10:00-11:00 UTC, one sample a minute (hh:mm:30), cluster c1:

- n1 (4 GPUs): job 1 holds the whole node all hour, no ``hpc_job`` label; DCGM host
  ``n1.hpc.example.edu``, GPU_UTIL 3 % on each GPU.
- n2 (1 GPU): job 2 10:00-10:50 FAILED; DCGM host ``n2.hpc.example.edu``, GPU_UTIL 50 %, XID 79
  (``DCGM_FI_DEV_XID_ERRORS``) from 10:45:30.
- ``n4.hpc.example.edu`` (1 GPU, the node named by its FQDN): job 3 all hour; DCGM host ``n4``,
  GPU_UTIL 2 %.
- ``n3.a.example.org`` and ``n3.b.example.org`` (1 GPU each), no job; DCGM host ``n3``: both
  nodes' short name, ambiguous.
- DCGM host ``spare.hpc.example.edu``: no node.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from pipelines.warehouse.sql import load_sql
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild, delete_load

C = "c1"
T0 = dt.datetime(2026, 11, 2, 10, 0, tzinfo=dt.UTC)
HOUR = T0
_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|State|ExitCode|Submit|Eligible|Start|End|"
    "Elapsed|NNodes|AllocTRES|ReqTRES|NodeList"
)
_INVENTORY = (
    "host,gpus,gpu_type,partition,rack\n"
    "n1,4,a100,gpu,r1\n"
    "n2,1,a100,gpu,r1\n"
    "n4.hpc.example.edu,1,a100,gpu,r1\n"
    "n3.a.example.org,1,a100,gpu,r1\n"
    "n3.b.example.org,1,a100,gpu,r1\n"
)


def _job(job: str, state: str, end: str, elapsed: str, gpus: int, node: str) -> str:
    tres = f"billing={gpus},cpu={gpus},gres/gpu={gpus},mem=8G,node=1"
    return "|".join([
        job, job, C, "gpu", "acct1", "u1", state, "1:0" if state == "FAILED" else "0:0",
        "2026-11-02T09:50:00", "2026-11-02T09:50:00", "2026-11-02T10:00:00", end, elapsed,
        "1", tres, tres, node,
    ])  # fmt: skip


def _labels(host: str, gpu: int) -> str:
    return (
        f'gpu="{gpu}",UUID="GPU-{host}-{gpu}",device="nvidia{gpu}",'
        f'modelName="NVIDIA A100-SXM4-80GB",Hostname="{host}"'
    )


def _scrapes(path: Path) -> Path:
    util, xid = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"], ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for m in range(60):
        ms = int((T0 + dt.timedelta(seconds=30 + 60 * m)).timestamp() * 1000)
        for g in range(4):
            util.append(f"DCGM_FI_DEV_GPU_UTIL{{{_labels('n1.hpc.example.edu', g)}}} 3 {ms}")
        n2 = _labels("n2.hpc.example.edu", 0)
        if m < 50:
            util.append(f"DCGM_FI_DEV_GPU_UTIL{{{n2}}} 50 {ms}")
        xid.append(f"DCGM_FI_DEV_XID_ERRORS{{{n2}}} {79 if m >= 45 else 0} {ms}")
        util.append(f"DCGM_FI_DEV_GPU_UTIL{{{_labels('n4', 0)}}} 2 {ms}")
        util.append(f"DCGM_FI_DEV_GPU_UTIL{{{_labels('n3', 0)}}} 0 {ms}")
        util.append(f"DCGM_FI_DEV_GPU_UTIL{{{_labels('spare.hpc.example.edu', 0)}}} 0 {ms}")
    path.write_text("\n".join(util + xid) + "\n")
    return path


def _inputs(tmp_path: Path) -> tuple[Config, Path, Path]:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / f"{C}.csv").write_text(_INVENTORY)
    (tmp_path / "inputs").mkdir()
    cfg = load_config(write_config(tmp_path, clusters=((C, "slurm", "UTC"),)))
    sacct = tmp_path / "inputs" / "sacct.psv"
    jobs = [
        _job("1", "COMPLETED", "2026-11-02T11:00:00", "01:00:00", 4, "n1"),
        _job("2", "FAILED", "2026-11-02T10:50:00", "00:50:00", 1, "n2"),
        _job("3", "COMPLETED", "2026-11-02T11:00:00", "01:00:00", 1, "n4.hpc.example.edu"),
    ]
    sacct.write_text(_HEADER + "\n" + "\n".join(jobs) + "\n")
    return cfg, sacct, _scrapes(tmp_path / "inputs" / "dcgm.prom")


@pytest.fixture
def built(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    cfg, sacct, dcgm = _inputs(tmp_path)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm", dcgm, opts)
        rebuild(con, cfg)
        yield con


def test_fully_qualified_dcgm_hosts_are_the_slurm_nodes(built: duckdb.DuckDBPyConnection) -> None:
    """Hour 10:00, 8 GPUs = 28,800 GPU-s. Job 1 (n1.hpc.example.edu = n1, whole node, 4 GPUs at
    3 % < θ 5 %): allocated_idle 4 × 3,600 = 14,400. Job 3 (n4 = n4.hpc.example.edu, 1 GPU at
    2 %): allocated_idle 3,600. Job 2 (n2.hpc.example.edu = n2) FAILED at 10:50 with XID 79 at
    10:45:30, within its last 10 minutes: failed_work_infra 1 × 3,000. Idle: n2 10:50-11:00
    (600) and the two n3 nodes (7,200) = 7,800. Before, no DCGM host was a node: jobs 1 and 3
    were unobserved (goodput 18,000, allocated_idle 0) and job 2 a user failure."""
    leaves = dict(
        built.execute(
            "SELECT bucket, gpu_s FROM analytics.gpu_waterfall_hourly WHERE hour = $h",
            {"h": HOUR},
        ).fetchall()
    )
    assert leaves["allocated_idle"] == 18_000.0
    assert leaves["goodput"] == 0.0
    assert leaves["failed_work_infra"] == 3_000.0
    assert leaves["failed_work_user"] == 0.0
    assert leaves["idle"] == 7_800.0
    summary = built.execute(
        "SELECT job_id, observed_gpu_s, round(mean_activity, 6), xid_events"
        " FROM analytics.job_gpu_summary ORDER BY job_id"
    ).fetchall()
    assert summary == [
        ("1", 14_400.0, 0.03, 0),
        ("2", 3_000.0, 0.5, 1),
        ("3", 3_600.0, 0.02, 0),
    ]


def test_an_xid_on_a_fully_qualified_host_counts_on_its_node(
    built: duckdb.DuckDBPyConnection,
) -> None:
    """node_reliability: n2's one XID and its one infrastructure failure (job 2) count on n2;
    no row is named by a DCGM host name that is a node's FQDN."""
    rel = dict(
        (h, (x, i))
        for h, x, i in built.execute(
            "SELECT host, xid_events, infra_failed_attempts FROM analytics.node_reliability"
        ).fetchall()
    )
    assert rel["n2"] == (1, 1)
    assert "n2.hpc.example.edu" not in rel


def test_dcgm_hosts_that_are_no_node_or_several_are_findings(
    built: duckdb.DuckDBPyConnection,
) -> None:
    """spare.hpc.example.edu names no node (1 host); n3 is the short name of n3.a.example.org
    and n3.b.example.org (1 host, left unmatched)."""
    found = built.execute(
        'SELECT "check", value, detail FROM analytics.data_quality'
        " WHERE \"check\" LIKE 'dcgm_hosts%' ORDER BY 1"
    ).fetchall()
    assert found == [
        ("dcgm_hosts_ambiguous", 1.0, "DCGM hosts whose short name names several nodes: n3"),
        ("dcgm_hosts_without_node", 1.0, "DCGM hosts that match no node: spare.hpc.example.edu"),
    ]


def test_the_dcgm_load_built_incrementally_equals_a_full_build(tmp_path: Path) -> None:
    """sacct built first, then the DCGM file loaded and built incrementally: the same leaves
    (allocated_idle 18,000, failed_work_infra 3,000) and every table as a full rebuild."""
    cfg, sacct, dcgm = _inputs(tmp_path)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        rebuild(con, cfg)
        ingest_file(con, "dcgm", dcgm, opts)
        rebuild(con, cfg)
        (mode, _reason) = con.execute(load_sql("analytics/last_build_mode")).fetchone() or (
            None,
            None,
        )
        leaves = dict(
            con.execute(
                "SELECT bucket, gpu_s FROM analytics.gpu_waterfall_hourly WHERE hour = $h",
                {"h": HOUR},
            ).fetchall()
        )
    assert mode == "incremental"
    assert (leaves["allocated_idle"], leaves["failed_work_infra"]) == (18_000.0, 3_000.0)
    assert_equals_full_rebuild(cfg, tmp_path)


def _extra_scrape(path: Path) -> Path:
    """One scrape at 11:00:30 of a host that is no node: ``extra.hpc.example.edu``."""
    ms = int((T0 + dt.timedelta(hours=1, seconds=30)).timestamp() * 1000)
    labels = _labels("extra.hpc.example.edu", 0)
    path.write_text(f"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{{labels}}} 0 {ms}\n")
    return path


def _host_findings(con: duckdb.DuckDBPyConnection) -> list[tuple[str, float, str]]:
    return con.execute(
        'SELECT "check", value, detail FROM analytics.data_quality'
        " WHERE \"check\" = 'dcgm_hosts_without_node'"
    ).fetchall()


def test_an_incremental_build_reads_the_hosts_of_its_new_loads_only(tmp_path: Path) -> None:
    """The hosts of the stored samples are kept per load (``analytics.build_dcgm_hosts``), so
    an incremental build reads only its new loads' samples for the host findings. Built once,
    spare.hpc.example.edu's row of that table then removed by hand, a second load of
    extra.hpc.example.edu built incrementally: the finding names extra.hpc.example.edu alone
    (1 host; before: 2, extra and spare, every sample read again on each build)."""
    cfg, sacct, dcgm = _inputs(tmp_path)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm", dcgm, opts)
        rebuild(con, cfg)
        con.execute("DELETE FROM analytics.build_dcgm_hosts WHERE host = 'spare.hpc.example.edu'")
        ingest_file(con, "dcgm", _extra_scrape(tmp_path / "inputs" / "extra.prom"), opts)
        rebuild(con, cfg)
        (mode, _reason) = con.execute(load_sql("analytics/last_build_mode")).fetchone() or (
            None,
            None,
        )
        found = _host_findings(con)
    assert mode == "incremental"
    assert found == [
        ("dcgm_hosts_without_node", 1.0, "DCGM hosts that match no node: extra.hpc.example.edu")
    ]


def test_the_host_findings_follow_loads_added_and_deleted(tmp_path: Path) -> None:
    """A second load of extra.hpc.example.edu built incrementally: 2 hosts without a node
    (extra, spare); that load deleted and built again: spare alone, 1; equal to a full build."""
    cfg, sacct, dcgm = _inputs(tmp_path)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=C, tz="UTC")
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "dcgm", dcgm, opts)
        rebuild(con, cfg)
        ingest_file(con, "dcgm", _extra_scrape(tmp_path / "inputs" / "extra.prom"), opts)
        rebuild(con, cfg)
        added = _host_findings(con)
        (extra_id,) = con.execute(
            "SELECT max(ingest_id) FROM raw.ingests WHERE source = 'dcgm'"
        ).fetchone() or (None,)
        assert extra_id is not None
        delete_load(con, extra_id)
        rebuild(con, cfg)
        (mode, _reason) = con.execute(load_sql("analytics/last_build_mode")).fetchone() or (
            None,
            None,
        )
        deleted = _host_findings(con)
    assert added == [
        (
            "dcgm_hosts_without_node",
            2.0,
            "DCGM hosts that match no node: extra.hpc.example.edu, spare.hpc.example.edu",
        )
    ]
    assert mode == "incremental"
    assert deleted == [
        ("dcgm_hosts_without_node", 1.0, "DCGM hosts that match no node: spare.hpc.example.edu")
    ]
    assert_equals_full_rebuild(cfg, tmp_path)
