"""Implausible sacct values are rejected row by row, naming the field; the good rows still load."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.slurm._sacct_parse import SacctFormatError, parse_sacct

#: A fixed ingest time: times later than 2026-12-01T12:00:00Z are in the future.
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HEADER = "JobID|State|Submit|Eligible|Start|End|AllocTRES|ReqTRES|NNodes|JobName"
GOOD = (
    "1|COMPLETED|2026-11-30T02:00:00|2026-11-30T02:00:00|2026-11-30T02:00:01|"
    "2026-11-30T03:00:00|cpu=1,gres/gpu=2|cpu=1,gres/gpu=2|1|ok"
)


def _parse(bad: str) -> tuple[list[str], list[tuple[int, str | None, str]]]:
    """Parse a file of the good row, ``bad`` and the good row again (job 3); returns the kept
    job ids and the rejected ``(line_no, field, reason)``."""
    text = f"{HEADER}\n{GOOD}\n{bad}\n{GOOD.replace('1|', '3|', 1)}\n"
    res = parse_sacct("bad.psv", text=text, now=NOW)
    rejected = res.rejected.select("line_no", "field", "reason").rows()
    assert res.rejected["raw"].to_list() == [bad] * len(rejected)
    return res.rows["job_id"].to_list(), rejected


def _row(**values: str) -> str:
    fields = dict(
        zip(
            HEADER.split("|"),
            GOOD.replace("1|", "2|", 1).split("|"),
            strict=True,
        )
    )
    fields.update(values)
    return "|".join(fields.values())


@pytest.mark.parametrize(
    ("values", "field", "needle"),
    [
        ({"End": "9999-12-31T23:59:59"}, "End", "implausible End time 9999-12-31T23:59:59Z"),
        ({"End": "2030-01-01T00:00:00"}, "End", "implausible End time 2030-01-01"),
        (
            {"Submit": "1971-01-01T00:00:00", "Eligible": "1971-01-01T00:00:00"},
            "Submit",
            "implausible Submit time 1971-01-01",
        ),
        ({"Start": "1989-12-31T23:59:59"}, "Start", "outside 1990-01-01 .. 2026-12-01T12:00:00Z"),
        ({"Eligible": "2026-12-01T12:00:01"}, "Eligible", "implausible Eligible time"),
        (
            {"End": "2026-11-30T01:00:00"},
            "End",
            "End 2026-11-30T01:00:00Z is before Start 2026-11-30T02:00:01Z",
        ),
        (
            {"Submit": "2026-11-30T05:00:00"},
            "Start",
            "Start 2026-11-30T02:00:01Z is before Submit 2026-11-30T05:00:00Z",
        ),
        ({"AllocTRES": "cpu=1,gres/gpu=-4"}, "AllocTRES", "GPU count '-4' in AllocTRES"),
        ({"AllocTRES": "cpu=1,gres/gpu=abc"}, "AllocTRES", "GPU count 'abc'"),
        ({"AllocTRES": "cpu=1,gres/gpu=1.5"}, "AllocTRES", "GPU count '1.5'"),
        ({"AllocTRES": "gres/gpu=99999999999999999999"}, "AllocTRES", "from 0 to 100000"),
        ({"ReqTRES": "gres/gpu:a100=100001"}, "ReqTRES", "GPU count '100001' in ReqTRES"),
        ({"NNodes": "-3"}, "NNodes", "negative NNodes '-3'"),
    ],
)
def test_implausible_value_rejected_naming_field(
    values: dict[str, str], field: str, needle: str
) -> None:
    """The bad row (line 3) is rejected with its field named; jobs 1 and 3 still load."""
    kept, rejected = _parse(_row(**values))
    assert kept == ["1", "3"]
    assert len(rejected) == 1
    line_no, got_field, reason = rejected[0]
    assert (line_no, got_field) == (3, field)
    assert needle in reason


@pytest.mark.parametrize(
    "values",
    [
        {"Start": "Unknown", "End": "Unknown"},  # pending: unset times are NULL, not rejects
        {"Start": "None", "End": "None", "Eligible": "Unknown"},
        {"End": "2026-12-01T12:00:00"},  # exactly now + 1 day: still plausible
        {"Start": "2026-11-30T02:00:00"},  # Start == Submit
        {"End": "2026-11-30T02:00:01"},  # End == Start (cancelled at start)
        {"Eligible": "2026-11-30T01:00:00"},  # Eligible is not ordered against Submit
        {"AllocTRES": "cpu=1,gres/gpu:3g.40gb=1,gres/gpumem=40G", "ReqTRES": ""},
        {"AllocTRES": "gres/gpu=100000"},
        {"NNodes": "0"},
    ],
)
def test_plausible_values_kept(values: dict[str, str]) -> None:
    """Unset times, boundary values and MIG/gpumem TRES items are not rejected."""
    kept, rejected = _parse(_row(**values))
    assert rejected == []
    assert kept == ["1", "2", "3"]


def test_unknown_times_are_null() -> None:
    """``Unknown``/``None`` times stay NULL on the kept row."""
    text = f"{HEADER}\n{_row(Start='Unknown', End='None', State='PENDING')}\n"
    row = parse_sacct("p.psv", text=text, now=NOW).rows.row(0, named=True)
    assert (row["start_at"], row["end_at"]) == (None, None)
    assert row["submit_at"] == datetime(2026, 11, 30, 2, 0, tzinfo=UTC)


def test_now_defaults_to_current_time() -> None:
    """Without ``now`` the check uses the current time: a 2024 job is kept, a 9999 one not."""
    text = (
        f"{HEADER}\n{_row(Submit='2024-01-01T00:00:00', Eligible='2024-01-01T00:00:00')}\n"
        f"{_row(End='9999-12-31T23:59:59').replace('2|', '4|', 1)}\n"
    )
    res = parse_sacct("d.psv", text=text)
    assert res.rows["job_id"].to_list() == ["2"]
    assert res.rejected["field"].to_list() == ["End"]


def test_more_fields_than_header_rejected() -> None:
    """A line with two surplus fields (last field Reason, Slurm's own token) is rejected."""
    text = "JobID|State|Reason\n1|COMPLETED|None\n2|COMPLETED|None|extra|x\n3|PENDING|Resources\n"
    res = parse_sacct("m.psv", text=text, now=NOW)
    assert res.rows["job_id"].to_list() == ["1", "3"]
    assert res.rejected.select("line_no", "reason").rows() == [(3, "expected 3 fields, found 5")]


def test_duplicate_header_column_is_file_error() -> None:
    """A header naming State twice cannot be read: a file-level error naming the column."""
    text = "JobID|State|End|State\n1|COMPLETED|2026-11-30T03:00:00|FAILED\n"
    with pytest.raises(SacctFormatError, match=r"dup\.psv:1: .*'State' twice \(fields 2 and 4\)"):
        parse_sacct("dup.psv", text=text, now=NOW)


@pytest.mark.usefixtures("isolated_config")
def test_cli_unknown_tz_is_one_clear_line(tmp_path: Path) -> None:
    """``--tz Mars/Olympus``: exit code 2 and one error line, no traceback."""
    f = tmp_path / "s.psv"
    f.write_text(f"{HEADER}\n{GOOD}\n", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["ingest", "sacct", str(f), "--db", str(tmp_path / "w.db"), "--tz", "Mars/Olympus"]
    )
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stderr.strip() == (
        "goodput: error: unknown time zone 'Mars/Olympus' (--tz); use an IANA name"
    )


@pytest.mark.usefixtures("isolated_config")
def test_cli_year_9999_end_rejected_and_rebuild_finishes(tmp_path: Path) -> None:
    """End=9999-12-31 goes to rejected_rows (field End, raw text kept); job 1 loads."""
    f = tmp_path / "s.psv"
    bad = _row(End="9999-12-31T23:59:59")
    f.write_text(f"{HEADER}\n{GOOD}\n{bad}\n", encoding="utf-8")
    db = tmp_path / "w.db"
    result = CliRunner().invoke(app, ["ingest", "sacct", str(f), "--db", str(db), "--tz", "UTC"])
    assert result.exit_code == 0, result.output
    assert "1 rows loaded, 1 rejected" in result.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute("SELECT line_no, field, raw FROM raw.rejected_rows").fetchall()
    assert got == [(3, "End", bad)]


@pytest.mark.usefixtures("isolated_config")
def test_a_nul_byte_or_an_impossible_elapsed_rejects_its_row_only(tmp_path: Path) -> None:
    """Six rows, job 1 to 6, each started 02:00:01 and ended 03:00:00 (End − Start 3,599 s):
    job 2's JobName holds a NUL byte (the file was refused whole: "binary content"), job 3's
    Elapsed is ``1-25:00:00`` (Slurm prints hours below 24 after a day count; it loaded as
    176,400 s), job 4's Elapsed 01:00:00 = 3,600 s is longer than End − Start (sacct's Elapsed
    is End − Start − Suspended; it loaded). Each goes to rejected_rows with its file, line,
    field and reason; jobs 1, 5 (Elapsed 00:59:59 = 3,599 s) and 6 (00:30:00, a suspended
    half hour) load."""
    f = tmp_path / "s.psv"
    header = HEADER + "|Elapsed"
    rows = [
        GOOD + "|00:59:59",
        _row(JobName="o\x00k") + "|00:59:59",
        GOOD.replace("1|", "3|", 1) + "|1-25:00:00",
        GOOD.replace("1|", "4|", 1) + "|01:00:00",
        GOOD.replace("1|", "5|", 1) + "|00:59:59",
        GOOD.replace("1|", "6|", 1) + "|00:30:00",
    ]
    f.write_bytes(("\n".join([header, *rows]) + "\n").encode())
    db = tmp_path / "w.db"
    result = CliRunner().invoke(app, ["ingest", "sacct", str(f), "--db", str(db), "--tz", "UTC"])
    assert result.exit_code == 0, result.output
    assert "3 rows loaded, 3 rejected" in result.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute(
            "SELECT file, line_no, field, reason FROM raw.rejected_rows ORDER BY line_no"
        ).fetchall()
        kept = con.execute(
            "SELECT job_id, elapsed_s FROM raw.slurm_rows ORDER BY job_id"
        ).fetchall()
    assert [(line, field) for _, line, field, _ in got] == [
        (3, "JobName"), (4, "Elapsed"), (5, "Elapsed")
    ]  # fmt: skip
    assert {file for file, *_ in got} == {str(f)}
    assert got[0][3] == "NUL byte in JobName (binary data in a text export)"
    assert got[1][3] == "unparseable Elapsed '1-25:00:00'"
    assert got[2][3] == "Elapsed 3600 s is longer than End − Start 3599 s"
    assert kept == [("1", 3599), ("5", 3599), ("6", 1800)]
