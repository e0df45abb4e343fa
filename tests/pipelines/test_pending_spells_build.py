"""Pending-reason spells end to end: squeue polls ingested beside slurm-a's sacct files through
the ``slurm-squeue`` kind, and the build publishes their spells in ``pending_reason_spells``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

T0 = dt.datetime(2026, 11, 2, 10, tzinfo=dt.UTC)
HEADER = "JOBID|STATE|REASON|SCHEDNODES|START_TIME|REQ_SWITCH|WAIT4SWITCH|NODES|PARTITION|"


def _poll(at: int, *lines: str) -> str:
    return f"# poll_time={int(T0.timestamp()) + at}\n{HEADER}\n" + "".join(f"{x}\n" for x in lines)


#: Job 5001 waits for Priority at 0 s, for Resources (switch-bound, expected on
#: a100-[001-002]) at 60 s, and runs at 120 s; job 5002 pends for Dependency at 60 and 120 s
#: (the last poll).
POLLS = (
    _poll(0, "5001|PENDING|Priority|(null)|N/A|0|0:00|2|gpu|")
    + _poll(60, "5001|PENDING|Resources|a100-[001-002]|1793613600|1|5:00|2|gpu|",
            "5002|PENDING|Dependency|(null)|N/A|0|0:00|1|gpu|")
    + _poll(120, "5001|RUNNING|None|(null)|1793620920|1|5:00|2|gpu|",
            "5002|PENDING|Dependency|(null)|N/A|0|0:00|1|gpu|")
)  # fmt: skip


@pytest.fixture(scope="module")
def warehouse(fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """slurm-a's sacct files and the polls above loaded, built."""
    work = tmp_path_factory.mktemp("spells")
    cfg = load_config(write_config(work, days_dir=fleet_dir))
    polls = work / "squeue_2026-11-02.txt"
    polls.write_text(POLLS, encoding="utf-8")
    cluster = cfg.clusters[0]
    opts = IngestOptions(cluster=cluster.name, tz=cluster.timezone)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for f in sorted((fleet_dir / "inputs" / cluster.name / "sacct").glob("*.psv")):
            ingest_file(con, "sacct", f, opts)
        stats = ingest_file(con, "slurm-squeue", polls, opts)
        assert (stats.rows_loaded, stats.rows_rejected) == (5, 0)
        rebuild(con, cfg)
    return cfg.warehouse_path


def test_the_view_holds_each_spell_with_its_seconds(warehouse: Path) -> None:
    """5001: Priority 0 → 60 s (60 s, 1 poll), Resources 60 → 120 s (60 s, 1 poll, ReqSwitch
    1, SchedNodes a100-[001-002]); 5002: Dependency 60 → 120 s, the last poll (60 s, 2
    polls)."""
    with connect(warehouse, read_only=True) as con:
        rows = con.sql(
            "SELECT cluster, job_id, reason, epoch(spell_start) - epoch($t0),"
            " epoch(spell_end) - epoch($t0), seconds, sched_nodes, req_switch, polls"
            " FROM pending_reason_spells ORDER BY job_id, spell_start",
            params={"t0": T0},
        ).fetchall()
    assert rows == [
        ("slurm-a", "5001", "Priority", 0, 60, 60, None, 0, 1),
        ("slurm-a", "5001", "Resources", 60, 120, 60, "a100-[001-002]", 1, 1),
        ("slurm-a", "5002", "Dependency", 60, 120, 60, None, 0, 2),
    ]
