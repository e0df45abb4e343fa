"""`goodput ingest sacct` + `goodput sql` on XDMoD's real shredder inputs give XDMoD's values.

XDMoD skips running, pending and unknown-state rows by its own policy; we keep running and
pending rows and reject unknown states with a reason. XDMoD's resource name (``testresource``) is
its own configuration; we keep the Cluster column.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from tests.conftest import FIXTURES, XDMOD_FIELDS

XDMOD = FIXTURES / "xdmod"
runner = CliRunner()


def _ingest(db: Path, *files: Path, exit_code: int = 0) -> str:
    result = runner.invoke(
        app, ["ingest", "sacct", *map(str, files), "--db", str(db), "--fields", XDMOD_FIELDS]
    )
    assert result.exit_code == exit_code, result.output
    return result.output


def _sql(db: Path, query: str) -> list[dict[str, str]]:
    result = runner.invoke(app, ["sql", query, "--db", str(db), "--format", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.mark.usefixtures("isolated_config")
def test_accounting_logs_match_xdmod_expected_values(tmp_path: Path) -> None:
    """Times, elapsed, time limit, state, GPUs and node list of the 4 jobs as XDMoD expects."""
    db = tmp_path / "x.duckdb"
    out = _ingest(db, XDMOD / "shredder_slurm_input" / "accounting-logs.log")
    assert "4 rows loaded, 0 rejected" in out
    expected = json.loads((XDMOD / "shredder_slurm_output" / "accounting-logs.json").read_text())
    rows = _sql(
        db,
        "select job_id, job_id_raw, epoch(submit_at)::bigint as submit, "
        "epoch(eligible_at)::bigint as eligible, epoch(start_at)::bigint as start, "
        "epoch(end_at)::bigint as end_, elapsed_s, timelimit_s, state_raw, gpus, node_list_raw, "
        "job_name, partition, account, user_name from slurm_jobs order by job_id",
    )
    assert len(rows) == len(expected) == 4
    by_id = {r["job_id"]: r for r in rows}
    for exp in expected:
        got = by_id[exp["job_id"]]
        assert got["job_id_raw"] == exp["job_id_raw"]
        assert int(got["submit"]) == exp["submit_time"]
        assert (int(got["eligible"]) if got["eligible"] else None) == exp["eligible_time"]
        assert int(got["start"]) == exp["start_time"]
        assert int(got["end_"]) == exp["end_time"]
        assert int(got["elapsed_s"]) == exp["elapsed"]
        assert (int(got["timelimit_s"]) if got["timelimit_s"] else None) == exp["timelimit"]
        assert got["state_raw"] == exp["state"]
        assert float(got["gpus"]) == exp["ngpus"]
        assert got["node_list_raw"] == exp["node_list"]
        assert got["job_name"] == exp["job_name"]
        assert got["partition"] == exp["partition_name"]
        assert got["account"] == exp["account_name"]
        assert got["user_name"] == exp["user_name"]


@pytest.mark.usefixtures("isolated_config")
def test_array_task_lists_match_xdmod(tmp_path: Path) -> None:
    """Bracketed array rows expand to XDMoD's task lists; a task in several rows is kept once."""
    db = tmp_path / "x.duckdb"
    _ingest(db, XDMOD / "shredder_slurm_input" / "accounting-logs-with-job-arrays.log")
    expected = json.loads(
        (XDMOD / "shredder_slurm_output" / "accounting-logs-with-job-arrays.json").read_text()
    )
    rows = _sql(
        db, "select array_job_id, array_task_id, state from slurm_jobs order by array_task_id"
    )
    tasks = [int(r["array_task_id"]) for r in rows]
    assert tasks == sorted({t for lst in expected for t in lst})
    assert {r["array_job_id"] for r in rows} == {"4103947"}
    assert {r["state"] for r in rows} == {"TIMEOUT"}


@pytest.mark.usefixtures("isolated_config")
def test_running_and_pending_kept_unknown_states_rejected(tmp_path: Path) -> None:
    """Non-ended rows are kept (RUNNING has no end; PENDING has no start); FOO/BAR are rejected."""
    db = tmp_path / "x.duckdb"
    _ingest(db, XDMOD / "shredder_slurm_input" / "non-ended-job-state.log")
    rows = _sql(db, "select job_id, state, start_at, end_at from slurm_jobs order by job_id")
    assert [(r["job_id"], r["state"]) for r in rows] == [
        ("3451067", "RUNNING"),
        ("3483276", "PENDING"),
    ]
    assert rows[0]["start_at"] != "" and rows[0]["end_at"] == ""
    assert rows[1]["start_at"] == "" and rows[1]["end_at"] == ""
    jobs = _sql(db, "select job_id from jobs")
    assert [r["job_id"] for r in jobs] == ["3451067"]  # a pending job is not an attempt

    db2 = tmp_path / "y.duckdb"
    # every row of the file is rejected: loaded into rejected_rows, and the command exits 1
    _ingest(db2, XDMOD / "shredder_slurm_input" / "unknown-job-state.log", exit_code=1)
    rej = _sql(db2, "select line_no, field, reason, raw from rejected_rows order by line_no")
    assert [int(r["line_no"]) for r in rej] == [1, 2]
    assert all(r["field"].lower() == "state" for r in rej)
    assert "FOO" in rej[0]["raw"] and "BAR" in rej[1]["raw"]
    assert _sql(db2, "select count(*) as n from slurm_jobs") == [{"n": "0"}]


@pytest.mark.usefixtures("isolated_config")
def test_utf8_job_name(tmp_path: Path) -> None:
    """A multi-byte job name survives as XDMoD expects."""
    db = tmp_path / "x.duckdb"
    _ingest(db, XDMOD / "shredder_slurm_input" / "utf8-multibyte-chars.log")
    assert _sql(db, "select job_name from slurm_jobs") == [{"job_name": "aàb"}]


@pytest.mark.usefixtures("isolated_config")
def test_reingest_is_idempotent(tmp_path: Path) -> None:
    """Loading the same file twice leaves one copy of each row and one ingest record."""
    db = tmp_path / "x.duckdb"
    f = XDMOD / "shredder_slurm_input" / "accounting-logs.log"
    first = _ingest(db, f)
    assert "replaced an earlier load" not in first
    out = _ingest(db, f)
    assert "replaced an earlier load" in out
    assert _sql(db, "select count(*) as n from slurm_jobs") == [{"n": "4"}]
    assert _sql(db, "select count(*) as n from ingests") == [{"n": "1"}]
