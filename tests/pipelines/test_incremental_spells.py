"""Incremental = full for the wait spells of a cluster whose spells a build does not compute.

The metric engine computes wait spells only for clusters with occupancy hours; an incremental
build rewrites only the spells that may differ (``wait_keys``) and keeps the others' stored
rows. A second Slurm cluster, ``slurm-z`` (two 8-GPU nodes, UTC), is added to
the two-day sample fleet with hand-written sacct files: once with a first file of queued jobs
only (a cut-off but no occupancy hour, so no spell stored), once losing its only started job
(its occupancy hours gone, its stored spells stale). Both cases were found by a review; before
the fix the incremental build missed a spell (``time_to_start_jobs``), or kept stale ones.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.pipelines.test_incremental import _days, _load_day, assert_equals_full_rebuild

pytestmark = pytest.mark.slow

_HEAD = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)
_OPTS = IngestOptions(cluster="slurm-z", tz="UTC")


def _row(job: int, submit: str, start: str, end: str, state: str, *, node: str = "z-001",
         elapsed: str = "00:00:00") -> str:  # fmt: skip
    """One 8-GPU allocation line of ``slurm-z`` (eligible at submit); a start of ``Unknown``
    or ``None`` is a job that never started (no nodes, no AllocTRES)."""
    started = start not in ("Unknown", "None")
    alloc = "billing=8,cpu=8,gres/gpu:a100=8,gres/gpu=8,mem=1000M,node=1" if started else ""
    return (
        f"{job}|{job}|slurm-z|gpu|normal|nlp|nlp|ivan|1009|{submit}|{submit}|{start}|{end}|"
        f"{elapsed}|0:0|{state}|1|8|billing=8,cpu=8,gres/gpu=8,mem=1000M,node=1|{alloc}|"
        f"2-00:00:00|{node if started else 'None assigned'}|review"
    )


_PENDING = _row(910003, "2026-11-02T09:30:00", "Unknown", "Unknown", "PENDING")
_CANCELLED = _row(910006, "2026-11-02T08:00:00", "None", "2026-11-02T09:45:00",
                  "CANCELLED by 1009")  # fmt: skip


def _with_slurm_z(fleet_dir: Path, tmp_path: Path) -> Config:
    fleet = tmp_path / "fleet"
    shutil.copytree(fleet_dir, fleet)
    (fleet / "inventory" / "slurm-z.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nz-001,8,a100,gpu,z1\nz-002,8,a100,gpu,z1\n"
    )
    clusters = (("slurm-a", "slurm", "America/New_York"), ("slurm-z", "slurm", "UTC"))
    return load_config(write_config(tmp_path, days_dir=fleet, clusters=clusters))


def _write(path: Path, *rows: str) -> Path:
    """A sacct file (named by its day, as an incremental plan reads it) with ``rows``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([_HEAD, *rows]) + "\n", encoding="utf-8")
    return path


def _modes(cfg: Config) -> list[str]:
    with connect(cfg.warehouse_path, read_only=True) as con:
        rows = con.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
    return [m for (m,) in rows]


def test_a_cluster_first_seen_with_queued_jobs_only(fleet_dir: Path, tmp_path: Path) -> None:
    """Day 1: slurm-z's file holds a pending and a cancelled-while-pending job (a cut-off, no
    allocation): its hours are those its jobs wait (METRICS.md "A cluster's hours"), and the
    first build stores both spells. Day 2 starts two jobs; the incremental build equals a full
    rebuild, the cancelled job's spell (eligible 08:00, cancelled 09:45: 6,300 s, not started;
    nothing in it reads the cut-off) included."""
    cfg = _with_slurm_z(fleet_dir, tmp_path)
    first, second = _days(cfg)[:2]
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_day(con, cfg, first)
        ingest_file(
            con,
            "sacct",
            _write(tmp_path / "z" / "sacct_2026-11-02.psv", _PENDING, _CANCELLED),
            _OPTS,
        )
        rebuild(con, cfg)
        assert con.execute(
            "SELECT count(*) FROM analytics.time_to_start_jobs WHERE cluster = 'slurm-z'"
        ).fetchone() == (2,)
        _load_day(con, cfg, second)
        day2 = _write(
            tmp_path / "z" / "sacct_2026-11-03.psv",
            _row(910004, "2026-11-03T00:30:00", "2026-11-03T01:00:00", "Unknown", "RUNNING",
                 elapsed="05:00:00"),
            _row(910005, "2026-11-03T00:40:00", "2026-11-03T01:10:00", "2026-11-03T05:00:00",
                 "COMPLETED", node="z-002", elapsed="03:50:00"),
        )  # fmt: skip
        ingest_file(con, "sacct", day2, _OPTS)
        rebuild(con, cfg)
        spell = con.execute(
            "SELECT duration_s, started FROM analytics.time_to_start_jobs"
            " WHERE cluster = 'slurm-z' AND job_id = '910006'"
        ).fetchall()
    assert _modes(cfg) == ["full", "incremental"]
    assert spell == [(6_300.0, False)]
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30


def test_a_cluster_that_loses_its_allocation_keeps_the_waits_spells(
    fleet_dir: Path, tmp_path: Path
) -> None:
    """slurm-z's file holds a started job and a cancelled one: built, both have spells. The
    file loaded again without the started job leaves slurm-z a cut-off and no allocation, its
    hours those the cancelled job waited; the incremental build then holds that job's spell
    only, as a full rebuild does."""
    cfg = _with_slurm_z(fleet_dir, tmp_path)
    first, second = _days(cfg)[:2]
    started = _row(910005, "2026-11-02T07:40:00", "2026-11-02T08:10:00", "2026-11-02T11:00:00",
                   "COMPLETED", node="z-002", elapsed="02:50:00")  # fmt: skip
    path = tmp_path / "z" / "sacct_2026-11-02.psv"
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_day(con, cfg, first)
        ingest_file(con, "sacct", _write(path, _CANCELLED, started), _OPTS)
        rebuild(con, cfg)
        spells = "SELECT count(*) FROM analytics.time_to_start_jobs WHERE cluster = 'slurm-z'"
        assert con.execute(spells).fetchone() == (2,)
        ingest_file(con, "sacct", _write(path, _CANCELLED), _OPTS)
        _load_day(con, cfg, second)
        rebuild(con, cfg)
        left = con.execute(spells).fetchone()
    assert _modes(cfg) == ["full", "incremental"]
    assert left == (1,)
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30
