"""A sacct file that cannot feed the job views says so (issue 14): sacct's default field set
(JobID, JobName, Partition, Account, AllocCPUS, State, ExitCode) loads its rows, and the load
names each missing field and what stays empty. Hand-made in the shape of ``sacct --parsable2``
with no ``--format`` (no public export with only the default fields was found)."""

from __future__ import annotations

from pathlib import Path

from pipelines.ingest import IngestOptions, ingest_file
from pipelines.slurm import job_view_gaps
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import XDMOD_FIELDS

DEFAULT_FIELDS = "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|"
ROWS = [
    "101|train|gpu|team-a|8|COMPLETED|0:0|",
    "101.batch|batch||team-a|8|COMPLETED|0:0|",
    "101.extern|extern||team-a|8|COMPLETED|0:0|",
    "102|eval|gpu|team-b|4|FAILED|1:0|",
    "102.batch|batch||team-b|4|FAILED|1:0|",
    "103|idle|gpu|team-a|2|RUNNING|0:0|",
    "104|queued|gpu|team-b|0|PENDING|0:0|",
]


def test_default_field_set_loads_and_names_the_gaps(tmp_path: Path) -> None:
    path = tmp_path / "sacct_default.txt"
    path.write_text("\n".join([DEFAULT_FIELDS, *ROWS]) + "\n")
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        stats = ingest_file(con, "sacct", path, IngestOptions(cluster="c1", tz="UTC"))
    assert (stats.rows_loaded, stats.rows_rejected) == (7, 0)
    assert [w.split(":")[0] for w in stats.warnings] == [
        "missing Start",
        "missing Eligible or Planned or Reserved",
        "missing End",
        "missing AllocTRES or AllocGRES or ReqTRES or ReqGRES",
    ]
    assert "jobs, occupancy" in stats.warnings[0]


def test_full_field_sets_have_no_gaps() -> None:
    """XDMoD's field set and a narrow set with stand-ins (ReqTRES for AllocTRES) leave nothing
    out."""
    assert job_view_gaps(XDMOD_FIELDS.split(",")) == []
    assert job_view_gaps(["JobID", "Eligible", "Start", "End", "ReqTRES"]) == []
    assert job_view_gaps(["JobID", "Start", "End", "AllocTRES"]) == [
        "missing Eligible or Planned or Reserved: no wait can be measured without Eligible or"
        " Planned (Reserved before Slurm 23.02; Submit alone gives none): time to start and"
        " pending demand stay empty"
    ]
