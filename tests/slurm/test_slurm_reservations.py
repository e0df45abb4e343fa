"""Slurm reservations: ``scontrol show reservation``, ``sacctmgr show reservation``, wiring.

Inputs are literal text: real Slurm 22.05.8 output of the project's test cluster (``REAL_*``: a
MAINT reservation on 2 nodes, a user reservation on one node, a DAILY one; the history after
they were created), and a site-shaped user reservation whose TRES names ``gres/gpu`` (22.05
refuses creating one; later releases print it). Expected rows are read off the text by hand.
"""

from __future__ import annotations

import datetime as dt
import stat
from pathlib import Path

import polars as pl
import pytest

from pipelines._file_source import files_for_day
from pipelines._parse_result import InputFormatError
from pipelines.ingest import IngestOptions, ingest_file, parse_file, state_source
from pipelines.slurm._reservations import (
    RESERVATION_HISTORY_FIELDS,
    RESERVATION_SCHEMA,
    parse_sacctmgr_reservations,
    parse_scontrol_reservations,
)
from pipelines.slurm.resources import STATE_KINDS, SlurmStateCliSource
from pipelines.warehouse import RAW_TABLES, connect, init_warehouse, raw_table_schemas

#: ``scontrol show reservation`` (multi-line, ``TZ=UTC``) on the test cluster.
REAL_MULTI = """\
ReservationName=maint1 StartTime=2026-11-30T05:00:01 EndTime=2026-11-30T07:00:01 Duration=02:00:00
   Nodes=gpu-[001-002] NodeCnt=2 CoreCnt=64 Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES
   TRES=cpu=64
   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a
   MaxStartDelay=(null)

ReservationName=alice1 StartTime=2026-11-30T04:00:01 EndTime=2026-11-30T05:00:01 Duration=01:00:00
   Nodes=gpu-003 NodeCnt=1 CoreCnt=32 Features=(null) PartitionName=(null) Flags=SPEC_NODES
   TRES=cpu=32
   Users=alice Groups=(null) Accounts=team-a Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a
   MaxStartDelay=(null)

ReservationName=daily1 StartTime=2026-11-30T06:00:01 EndTime=2026-11-30T06:30:01 Duration=00:30:00
   Nodes=gpu-003 NodeCnt=1 CoreCnt=32 Features=(null) PartitionName=gpu Flags=DAILY
   TRES=cpu=32
   Users=bob Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a
   MaxStartDelay=(null)

"""  # noqa: E501

#: The same, ``--oneliner`` with ``SLURM_TIME_FORMAT=%s`` (as the live source runs it).
REAL_ONELINER = """\
ReservationName=maint1 StartTime=1796014801 EndTime=1796022001 Duration=02:00:00 Nodes=gpu-[001-002] NodeCnt=2 CoreCnt=64 Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES TRES=cpu=64 Users=root Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)
ReservationName=alice1 StartTime=1796011201 EndTime=1796014801 Duration=01:00:00 Nodes=gpu-003 NodeCnt=1 CoreCnt=32 Features=(null) PartitionName=(null) Flags=SPEC_NODES TRES=cpu=32 Users=alice Groups=(null) Accounts=team-a Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)
ReservationName=daily1 StartTime=1796018401 EndTime=1796020201 Duration=00:30:00 Nodes=gpu-003 NodeCnt=1 CoreCnt=32 Features=(null) PartitionName=gpu Flags=DAILY TRES=cpu=32 Users=bob Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)
"""  # noqa: E501

#: A site's user reservation whose TRES counts GPUs (one day, epoch times).
SITE_GPU = (
    "ReservationName=ml-team StartTime=1796011200 EndTime=1796097600 Duration=1-00:00:00 "
    "Nodes=gpu-[003-004] NodeCnt=2 CoreCnt=64 Features=(null) PartitionName=gpu Flags= "
    "TRES=cpu=64,gres/gpu=16 Users=alice,bob Groups=(null) Accounts=team-a,team-b "
    "Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n"
)

#: ``sacctmgr -P show reservation format=`` RESERVATION_HISTORY_FIELDS ``,Associations``.
REAL_HISTORY = """\
Cluster|Name|ID|TimeStart|TimeEnd|NodeName|Flags|TRES|UnusedWall|Assocs
testgpu|alice1|2|1796011201|1796014801|gpu-003|SPEC_NODES|cpu=32|0.000000|6
testgpu|maint1|1|1796014801|1796022001|gpu-[001-002]|MAINT,IGNORE_JOBS,SPEC_NODES|cpu=64|0.000000|2,11
testgpu|daily1|3|1796018401|1796020201|gpu-003|DAILY|cpu=32|1800.500000|7
"""


def _utc(hour: int, minute: int = 0, second: int = 1, day: int = 30) -> dt.datetime:
    month = 11 if day == 30 else 12
    return dt.datetime(2026, month, day, hour, minute, second, tzinfo=dt.UTC)


EXPECTED_LIVE = [
    {"name": "maint1", "start_at": _utc(5), "end_at": _utc(7), "duration_s": 7200,
     "nodes": ["gpu-001", "gpu-002"], "node_count": 2,
     "flags": ["MAINT", "IGNORE_JOBS", "SPEC_NODES"], "maint": True, "state": "INACTIVE",
     "users": ["root"], "accounts": [], "partition": None, "tres": "cpu=64", "gpus": None},
    {"name": "alice1", "start_at": _utc(4), "end_at": _utc(5), "duration_s": 3600,
     "nodes": ["gpu-003"], "node_count": 1, "flags": ["SPEC_NODES"], "maint": False,
     "state": "ACTIVE", "users": ["alice"], "accounts": ["team-a"], "partition": None,
     "tres": "cpu=32", "gpus": None},
    {"name": "daily1", "start_at": _utc(6), "end_at": _utc(6, 30), "duration_s": 1800,
     "nodes": ["gpu-003"], "node_count": 1, "flags": ["DAILY"], "maint": False,
     "state": "INACTIVE", "users": ["bob"], "accounts": [], "partition": "gpu",
     "tres": "cpu=32", "gpus": None},
]  # fmt: skip


def _pick(rows: pl.DataFrame, keys: list[str]) -> list[dict[str, object]]:
    return [{k: row[k] for k in keys} for row in rows.to_dicts()]


def test_real_multiline_rows() -> None:
    """One row per record; MAINT on 2 expanded nodes, the user and the DAILY reservation."""
    result = parse_scontrol_reservations("r.txt", cluster="c1", text=REAL_MULTI)
    assert result.rejected.is_empty()
    assert result.rows.schema == pl.Schema(RESERVATION_SCHEMA)
    assert _pick(result.rows, list(EXPECTED_LIVE[0])) == EXPECTED_LIVE
    assert result.rows["line_no"].to_list() == [1, 7, 13]
    assert set(result.rows["cluster"]) == {"c1"}
    assert result.rows["unused_s"].null_count() == 3
    assert result.info["reservations"] == 3


def test_real_oneliner_epoch_equals_multiline() -> None:
    """Epoch ``--oneliner`` output gives the same rows, one line each."""
    snap = dt.datetime(2026, 11, 30, 4, 30, tzinfo=dt.UTC)
    result = parse_scontrol_reservations("r.txt", text=REAL_ONELINER, snapshot_at=snap)
    assert result.rejected.is_empty()
    assert _pick(result.rows, list(EXPECTED_LIVE[0])) == EXPECTED_LIVE
    assert result.rows["line_no"].to_list() == [1, 2, 3]
    assert result.rows["snapshot_at"].to_list() == [snap] * 3


def test_user_reservation_with_gpu_tres() -> None:
    """``gres/gpu=16`` in TRES gives ``gpus``; a day's ``Duration`` and user/account lists."""
    result = parse_scontrol_reservations("r.txt", text=SITE_GPU)
    (row,) = result.rows.to_dicts()
    assert row["start_at"] == dt.datetime(2026, 11, 30, 4, 0, tzinfo=dt.UTC)
    assert row["end_at"] == dt.datetime(2026, 12, 1, 4, 0, tzinfo=dt.UTC)
    assert (row["duration_s"], row["gpus"], row["tres"]) == (86400, 16.0, "cpu=64,gres/gpu=16")
    assert (row["nodes"], row["node_count"]) == (["gpu-003", "gpu-004"], 2)
    assert (row["flags"], row["maint"]) == ([], False)
    assert (row["users"], row["accounts"]) == (["alice", "bob"], ["team-a", "team-b"])


def test_naive_times_in_zone_and_duration_without_end() -> None:
    """Naive times are read in ``tz``; without an end, ``Duration`` gives ``duration_s``."""
    text = (
        "ReservationName=r StartTime=2026-07-01T10:00:00 EndTime=Unknown Duration=1-02:03:04 "
        "Nodes=(null) NodeCnt=0 Flags=WEEKLY,MAINT State=INACTIVE\n"
    )
    (row,) = parse_scontrol_reservations("r", text=text, tz="Europe/Berlin").rows.to_dicts()
    assert row["start_at"] == dt.datetime(2026, 7, 1, 8, 0, tzinfo=dt.UTC)
    assert row["end_at"] is None
    assert row["duration_s"] == 93784
    assert (row["nodes"], row["node_count"], row["flags"], row["maint"]) == (
        [], 0, ["WEEKLY", "MAINT"], True)  # fmt: skip


def test_no_reservations_is_empty() -> None:
    """scontrol's "No reservations in the system" (and an empty file) give no row."""
    for text in ("No reservations in the system\n", ""):
        result = parse_scontrol_reservations("r", text=text)
        assert result.rows.is_empty() and result.rejected.is_empty()
        assert result.rows.schema == pl.Schema(RESERVATION_SCHEMA)


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ("ReservationName=a StartTime=1796014801 EndTime=1796011201 Duration=01:00:00", "EndTime"),
        ("ReservationName=a StartTime=yesterday EndTime=1796011201", "StartTime"),
        ("ReservationName=a StartTime=1796011201 EndTime=1796014801 Nodes=gpu-[3-", "Nodes"),
        ("ReservationName=a StartTime=1796011201 NodeCnt=two", "NodeCnt"),
        ("ReservationName=a StartTime=1796011201 Duration=soon", "Duration"),
        ("ReservationName= StartTime=1796011201", "ReservationName"),
    ],
)
def test_bad_record_is_rejected(record: str, field: str) -> None:
    """An unreadable record goes to ``rejected`` with its field; the others are kept."""
    result = parse_scontrol_reservations("r", text=f"{record}\n{SITE_GPU}")
    assert result.rows["name"].to_list() == ["ml-team"]
    (rej,) = result.rejected.to_dicts()
    assert (rej["line_no"], rej["field"], rej["raw"]) == (1, field, record)


def test_other_output_is_not_reservations() -> None:
    """A file without any ``ReservationName=`` record is refused."""
    with pytest.raises(InputFormatError):
        parse_scontrol_reservations("r", text="NodeName=gpu-001 State=IDLE\n")


def test_history_rows_with_unused_wall() -> None:
    """sacctmgr's history: cluster from the column, ids, unused wall seconds, Assocs ignored."""
    result = parse_sacctmgr_reservations("h.psv", cluster="other", text=REAL_HISTORY)
    assert result.rejected.is_empty()
    rows = result.rows.to_dicts()
    assert [r["name"] for r in rows] == ["alice1", "maint1", "daily1"]
    assert [r["reservation_id"] for r in rows] == [2, 1, 3]
    assert {r["cluster"] for r in rows} == {"testgpu"}
    assert [r["unused_s"] for r in rows] == [0.0, 0.0, 1800.5]
    maint = rows[1]
    assert (maint["start_at"], maint["end_at"], maint["duration_s"]) == (_utc(5), _utc(7), 7200)
    assert (maint["nodes"], maint["node_count"], maint["maint"]) == (
        ["gpu-001", "gpu-002"], 2, True)  # fmt: skip
    assert maint["flags"] == ["MAINT", "IGNORE_JOBS", "SPEC_NODES"]
    assert (maint["state"], maint["users"], maint["accounts"], maint["gpus"]) == (
        None, None, None, None)  # fmt: skip
    assert [r["line_no"] for r in rows] == [2, 3, 4]


def test_history_rejects_and_header() -> None:
    """Wrong field counts and bad numbers are rejected; a non-reservation header is refused."""
    text = (
        "Cluster|Name|TimeStart|TimeEnd|UnusedWall\n"
        "c|a|1796011201|1796014801|12.5\n"
        "c|b|1796011201\n"
        "c|d|1796011201|1796014801|lots\n"
    )
    result = parse_sacctmgr_reservations("h", text=text)
    assert result.rows["name"].to_list() == ["a"]
    assert result.rejected["line_no"].to_list() == [3, 4]
    assert parse_sacctmgr_reservations("h", text="").rows.is_empty()
    with pytest.raises(InputFormatError):
        parse_sacctmgr_reservations("h", text="Cluster|NodeName|TimeStart\n")


def test_kinds_commands_and_default_kinds() -> None:
    """Both kinds have their commands and are fetched only on request."""
    assert {"reservations", "reservation_history"} <= set(STATE_KINDS)
    source = SlurmStateCliSource(
        spool_dir="/tmp/x", bin_dir="/b", kinds=["reservation_history", "reservations"]
    )
    assert source.commands("c1", "2026-11-30") == {
        "reservations": ["/b/scontrol", "-M", "c1", "--oneliner", "show", "reservation"],
        "reservation_history": [
            "/b/sacctmgr", "--parsable2", "show", "reservation", "Clusters=c1",
            "Start=2026-11-30T00:00:00", "End=2026-12-01T00:00:00",
            f"Format={RESERVATION_HISTORY_FIELDS}",
        ],
    }  # fmt: skip
    assert SlurmStateCliSource(spool_dir="/tmp/x").kinds == [
        "nodes", "events", "sshare", "sprio", "sdiag", "transactions", "tres",
        "scontrol_config"]  # fmt: skip


def test_files_are_spooled_found_and_loaded(tmp_path: Path) -> None:
    """Spooled ``reservations_*``/``reservation_history_*`` load into raw.slurm_reservations."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for prog, text in (("scontrol", REAL_ONELINER), ("sacctmgr", REAL_HISTORY)):
        sample = tmp_path / f"{prog}.txt"
        sample.write_text(text, encoding="utf-8")
        exe = bin_dir / prog
        exe.write_text(f'#!/bin/sh\ncat "{sample}"\n', encoding="utf-8")
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    spool = tmp_path / "inputs"
    source = SlurmStateCliSource(
        spool_dir=str(spool), bin_dir=str(bin_dir), kinds=["reservations", "reservation_history"]
    )
    live, history = source.fetch("c1", "2026-11-30")
    assert live.name == "reservations_2026-11-30.txt"
    assert history.name == "reservation_history_2026-11-30.txt"
    assert files_for_day(spool / "c1", "slurm-state", "2026-11-30") == sorted([live, history])
    assert state_source(live) == state_source(history) == "slurm-reservations"
    assert RAW_TABLES["slurm-reservations"] == "raw.slurm_reservations"
    assert "raw.slurm_reservations" in raw_table_schemas()
    opts = IngestOptions(cluster="c1")
    assert parse_file("slurm-state", history, opts).rows["unused_s"].null_count() == 0
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        for path in (live, history):
            stats = ingest_file(con, "slurm-state", path, opts)
            assert (stats.source, stats.rows_loaded, stats.rows_rejected) == (
                "slurm-reservations", 3, 0)  # fmt: skip
        loaded = con.sql(
            "SELECT name, count(*), bool_or(maint), max(unused_s) FROM raw.slurm_reservations "
            "GROUP BY name ORDER BY name"
        ).fetchall()
    assert loaded == [("alice1", 2, False, 0.0), ("daily1", 2, False, 1800.5),
                      ("maint1", 2, True, 0.0)]  # fmt: skip
