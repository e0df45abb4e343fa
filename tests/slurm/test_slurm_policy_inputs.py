"""The policy inputs: ``sacctmgr list transactions``, ``sacctmgr show tres`` and ``scontrol
show config``, read from real Slurm 22.05 output and hand-made bad lines
(``tests/fixtures/slurm-policy/README.md`` says which is which)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import InputFormatError
from pipelines.slurm import SLURM_STATE
from pipelines.slurm._sacctmgr_transactions import parse_sacctmgr_transactions
from pipelines.slurm._sacctmgr_tres import parse_sacctmgr_tres
from pipelines.slurm._scontrol_config import parse_scontrol_config

FIX = Path(__file__).parents[1] / "fixtures" / "slurm-policy"
UTC = dt.UTC


def test_modify_lines_give_one_row_per_object_and_key() -> None:
    """The fairshare change is ``shares=45`` on association 4, by root at 1796284801."""
    rows = parse_sacctmgr_transactions(FIX / "live_transactions.psv", cluster="testgpu").rows
    shares = rows.filter((pl.col("verb") == "modify") & (pl.col("key") == "shares"))
    assert shares.select("target", "value", "actor", "changed_at", "object_kind").rows() == [
        ("4", "45", "root", dt.datetime.fromtimestamp(1796284801, UTC), "association")
    ]


def test_qos_tres_limit_is_read_out_of_its_if_expression() -> None:
    """``grp_tres = if (id=1, '1001=4', grp_tres)`` is value ``1001=4`` for QOS normal."""
    rows = parse_sacctmgr_transactions(FIX / "live_transactions.psv", cluster="testgpu").rows
    tres = rows.filter((pl.col("object_kind") == "qos") & (pl.col("key") == "grp_tres"))
    assert tres.select("target", "value").rows() == [
        ("high", "1001=24"), ("normal", "1001=4"), ("high", "1=64,1001=16"),
    ]  # fmt: skip


def test_a_where_of_several_associations_gives_a_row_per_association() -> None:
    """``(id_assoc=1 || id_assoc=5 || id_assoc=4 || id_assoc=3)`` is not split at its pipes:
    four associations × three keys; with ``withassoc`` the comma list of accounts is not used."""
    for name in ("live_transactions.psv", "live_transactions_withassoc.psv"):
        result = parse_sacctmgr_transactions(FIX / name, cluster="testgpu")
        assert result.rejected.height == 0
        line = result.rows.filter(pl.col("line_no") == 13)
        assert line["target"].unique(maintain_order=True).to_list() == ["1", "5", "4", "3"]
        assert line.height == 12
        assert line["assoc_account"].null_count() == 12


def test_withassoc_names_a_single_association() -> None:
    """``withassoc`` gives association 6 its account and user."""
    rows = parse_sacctmgr_transactions(
        FIX / "live_transactions_withassoc.psv", cluster="x"
    ).rows.filter((pl.col("key") == "max_jobs") & (pl.col("verb") == "modify"))
    assert rows.select("target", "assoc_account", "assoc_user", "cluster", "value").rows() == [
        ("6", "team-a", "alice", "testgpu", "3")
    ]


def test_bad_transaction_lines_are_rejected_with_line_field_and_reason() -> None:
    """Hand-made: a bad time, a short line, a non-``key=value`` Info and a time in year 5138
    are rejected; a ``Remove`` without Info is kept as one row without a key."""
    result = parse_sacctmgr_transactions(FIX / "bad_transactions.psv", cluster="c")
    assert result.rejected.select("line_no", "field", "reason").rows() == [
        (3, "Time", "not a time: 'yesterday'"),
        (4, None, "4 fields, header has 5"),
        (5, "Info", "not key=value: 'this is not sql'"),
        (
            7,
            "Time",
            "implausible time 5138-11-16T09:46:39 (outside 1990-01-01 .. a day after the ingest)",
        ),
    ]
    assert result.rows.select("line_no", "verb", "actor", "target", "key").rows() == [
        (2, "modify", "root", "4", "shares"), (6, "remove", "admin", "9", None),
    ]  # fmt: skip


def test_transactions_without_their_header_are_refused() -> None:
    """A file whose first line is no transactions header is not this kind."""
    with pytest.raises(InputFormatError, match="Time\\|Action"):
        parse_sacctmgr_transactions("x.psv", text="Type|Name|ID\ngres|gpu|1001\n")


def test_tres_names_are_type_slash_name() -> None:
    """``gres|gpu|1001`` is ``gres/gpu``; ``cpu||1`` is ``cpu``."""
    rows = parse_sacctmgr_tres(FIX / "live_tres.psv", cluster="testgpu").rows
    assert rows.filter(pl.col("tres_id").is_in([1, 6, 1001]))["tres"].to_list() == [
        "cpu", "fs/disk", "gres/gpu",
    ]  # fmt: skip


def test_scontrol_config_is_dated_by_its_as_of_line() -> None:
    """The real snapshot: 207 settings, dated 1796284804, ``(null)`` read as NULL."""
    result = parse_scontrol_config(FIX / "live_scontrol_config_after.txt", cluster="testgpu")
    rows = result.rows
    assert result.rejected.height == 0
    assert rows.height == 207
    assert rows["snapshot_at"].unique().to_list() == [dt.datetime.fromtimestamp(1796284804, UTC)]
    got = dict(
        rows.filter(pl.col("key").str.starts_with("PriorityWeightF")).select("key", "value").rows()
    )
    assert got == {"PriorityWeightFairShare": "20000"}
    assert rows.filter(pl.col("key") == "AccountingStorageBackupHost")["value"].to_list() == [None]


def test_bad_config_lines_are_rejected_and_the_first_value_wins() -> None:
    """Hand-made: a naive ``as of`` time in the given zone; the garbage line is rejected; the
    cgroup section's repeat of a name does not replace the first, and is accounted for as a
    rejected line (nothing is dropped silently)."""
    result = parse_scontrol_config(FIX / "bad_scontrol_config.txt", cluster="c", tz="Europe/Berlin")
    assert result.rejected.select("line_no", "reason").rows() == [
        (5, "neither 'Name = value' nor a section header"),
        (8, "PriorityWeightFairShare repeated: the first value is kept"),
    ]
    assert result.rows.select("key", "value").rows() == [
        ("PriorityWeightFairShare", "10000"),
        ("SchedulerParameters", "bf_interval=5,bf_continue"),
        ("PriorityFlags", ""),
    ]
    assert result.info["snapshot_at"] == dt.datetime(2026, 12, 3, 7, tzinfo=UTC)


def test_state_files_route_to_the_new_sources() -> None:
    """``transactions_``, ``tres_`` and ``scontrol_config_`` files load into their tables."""
    routes = {
        name: SLURM_STATE.source_of(Path(f"{name}_2026-12-03.txt")).table
        for name in ("transactions", "tres", "scontrol_config")
    }
    assert routes == {
        "transactions": "raw.slurm_transactions",
        "tres": "raw.slurm_tres",
        "scontrol_config": "raw.slurm_config",
    }


def test_numbers_past_64_bits_and_dates_are_rejected_not_raised() -> None:
    """Found by the fuzzer: a TRES id past 64 bits and an epoch past year 9999 reject their
    line (the shared Slurm value helpers) instead of failing the file."""
    tres = parse_sacctmgr_tres(
        "t.psv", text="Type|Name|ID\ngres|gpu|99999999999999999999999\ncpu||1\n"
    )
    assert tres.rejected.select("line_no", "field", "reason").rows() == [
        (2, "ID", "integer past 64 bits: '99999999999999999999999'")
    ]
    tx = parse_sacctmgr_transactions(
        "x.psv", text="Time|Action|Actor|Where|Info\n99999999999999|Modify QOS|root|x|priority=1\n"
    )
    assert tx.rejected.select("line_no", "field", "reason").rows() == [
        (2, "Time", "not a time: '99999999999999' is out of range")
    ]
