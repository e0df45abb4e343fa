"""Polled ``squeue -O`` output: the real 22.05 capture, several polls in one file, empty polls
and bad lines."""

from __future__ import annotations

import datetime as dt
import stat
import time
from pathlib import Path

import polars as pl
import pytest

from pipelines._file_source import files_for_day
from pipelines._parse_result import InputFormatError
from pipelines.ingest import ingest_file
from pipelines.kinds import IngestOptions, input_kind
from pipelines.slurm._squeue import POLL_MARKER, SQUEUE_FORMAT, parse_squeue, wait_seconds
from pipelines.slurm.resources import SlurmStateCliSource
from pipelines.warehouse import connect, init_warehouse

FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "slurm-squeue" / "squeue_2026-12-03.txt"
)
POLL = dt.datetime.fromtimestamp(1796292012, dt.UTC)
HEADER = "JOBID|STATE|REASON|SCHEDNODES|START_TIME|REQ_SWITCH|WAIT4SWITCH|NODES|PARTITION|"


def test_real_22_05_poll_reads_reason_schednodes_and_switches() -> None:
    """Job 3 (--switches=1@5:00) pends for Resources, expected on gpu-[001-002] at
    1796292601 (10 min after the start of the cluster's hour), ReqSwitch 1, Wait4Switch
    5:00 = 300 s; running jobs have no SchedNodes."""
    res = parse_squeue(FIXTURE, cluster="testgpu")
    assert res.rejected.height == 0
    assert res.info["polls"] == 1
    rows = {r["job_id"]: r for r in res.rows.iter_rows(named=True)}
    assert set(rows) == {"1", "2", "3", "4"}
    three = rows["3"]
    assert (three["state"], three["reason"], three["sched_nodes"]) == (
        "PENDING", "Resources", "gpu-[001-002]",
    )  # fmt: skip
    assert three["expected_start"] == dt.datetime.fromtimestamp(1796292601, dt.UTC)
    assert (three["req_switch"], three["wait4switch_s"], three["nodes"]) == (1, 300, 2)
    assert rows["4"]["reason"] == "Priority"
    assert rows["1"]["sched_nodes"] is None
    assert res.rows["poll_at"].unique().to_list() == [POLL]


def test_several_polls_an_empty_one_and_the_cluster_line() -> None:
    """Three polls (60 s apart); the second had an empty queue and gives one row with no job;
    ``CLUSTER: c`` (squeue -M) is skipped: 1 + 1 + 1 rows."""
    text = (
        "# poll_time=1796292000\nCLUSTER: c\n"
        + HEADER
        + "\n7|PENDING|Priority|(null)|N/A|0|0:00|4|gpu|\n"
        "# poll_time=1796292060\nCLUSTER: c\n" + HEADER + "\n"
        "# poll_time=1796292120\n" + HEADER + "\n7|RUNNING|None|(null)|1796292100|0|0:00|4|gpu|\n"
    )
    res = parse_squeue("squeue.txt", cluster="c", text=text)
    assert res.info["polls"] == 3
    assert res.rows.select("poll_at", "job_id", "state").rows() == [
        (dt.datetime.fromtimestamp(1796292000, dt.UTC), "7", "PENDING"),
        (dt.datetime.fromtimestamp(1796292060, dt.UTC), None, None),
        (dt.datetime.fromtimestamp(1796292120, dt.UTC), "7", "RUNNING"),
    ]
    assert res.rows["expected_start"][0] is None


def test_bad_lines_are_rejected_with_line_and_field() -> None:
    """A short line (line 3), a bad time (line 4) and a bad ReqSwitch (line 5) are rejected;
    line 6 loads."""
    text = (
        "# poll_time=1796292000\n" + HEADER + "\n"
        "8|PENDING|Resources\n"
        "9|PENDING|Resources|(null)|tomorrow|0|0:00|1|gpu|\n"
        "10|PENDING|Resources|(null)|N/A|one|0:00|1|gpu|\n"
        "11|PENDING|Resources|(null)|N/A|0|1-02:03:04|1|gpu|\n"
    )
    res = parse_squeue("squeue.txt", cluster="c", text=text)
    assert res.rows["job_id"].to_list() == ["11"]
    assert res.rows["wait4switch_s"].to_list() == [((24 + 2) * 60 + 3) * 60 + 4]
    bad = {r["line_no"]: r["field"] for r in res.rejected.iter_rows(named=True)}
    assert bad == {3: None, 4: "expected_start", 5: "req_switch"}


def test_output_without_a_header_is_an_error() -> None:
    """Job lines with no squeue header: the error names the file and line."""
    with pytest.raises(InputFormatError, match="before any squeue header"):
        parse_squeue("q.txt", text="3|PENDING|Resources|\n", poll_at=POLL)


def test_durations() -> None:
    """``5:00`` = 300 s, ``1:00:00`` = 3600 s, ``2-00:00:00`` = 172800 s, ``N/A`` = NULL."""
    assert [wait_seconds(v, "w") for v in ("5:00", "1:00:00", "2-00:00:00", "N/A")] == [
        300, 3600, 172800, None,
    ]  # fmt: skip


def test_the_squeue_kind_reads_the_spooled_file(tmp_path: Path) -> None:
    """``squeue/squeue_<day>.txt`` goes through the ``slurm-squeue`` kind into raw.slurm_squeue."""
    kind = input_kind("slurm-squeue")
    path = tmp_path / "squeue_2026-12-03.txt"
    path.write_text(FIXTURE.read_text())
    assert any(path.match(g) for g in kind.globs)
    src = kind.source_of(path)
    assert src.table == "raw.slurm_squeue"
    assert src.parse is not None
    assert src.parse(path, IngestOptions(cluster="testgpu")).rows.height == 4
    assert isinstance(src.schema["poll_at"], pl.Datetime)


def test_the_live_source_appends_stamped_polls_that_load(tmp_path: Path) -> None:
    """Two polls by :class:`SlurmStateCliSource` (kinds ["squeue"], a stand-in squeue printing
    the real capture) append two stamped blocks to ``squeue/squeue_<day>.txt``; the file is a
    ``slurm-squeue`` input of that day and loads 2 polls × 4 jobs = 8 rows, idempotently."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sample = tmp_path / "sample.txt"
    sample.write_text("CLUSTER: c1\n" + "\n".join(FIXTURE.read_text().splitlines()[1:]) + "\n")
    squeue = bin_dir / "squeue"
    squeue.write_text(f'#!/bin/sh\ncat "{sample}"\n', encoding="utf-8")
    squeue.chmod(squeue.stat().st_mode | stat.S_IXUSR)
    spool = tmp_path / "inputs"
    offset = 1796292012 - time.time()  # the poll stamps the source's clock: pin it
    source = SlurmStateCliSource(
        spool_dir=str(spool), bin_dir=str(bin_dir), kinds=["squeue"], clock_offset_s=offset
    )
    argv = source.commands("c1", "2026-12-03")["squeue"]
    assert argv[-2:] == ["-O", SQUEUE_FORMAT]
    assert "--states=PENDING,RUNNING,COMPLETING" in argv
    (first,) = source.fetch("c1", "2026-12-03")
    (second,) = source.fetch("c1", "2026-12-03")
    assert first == second == spool / "c1" / "squeue" / "squeue_2026-12-03.txt"
    assert files_for_day(spool / "c1", "slurm-squeue", "2026-12-03") == [first]
    assert first.read_text().count(POLL_MARKER) == 2
    opts = IngestOptions(cluster="c1")
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        for _ in range(2):
            stats = ingest_file(con, "slurm-squeue", first, opts)
        assert (stats.source, stats.rows_loaded, stats.rows_rejected) == ("slurm-squeue", 8, 0)
        loaded = con.sql("SELECT count(*) FROM raw.slurm_squeue").fetchall()
    assert loaded == [(8,)]
