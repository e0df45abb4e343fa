"""Pending-reason spells from polled squeue rows, every figure computed by hand."""

from __future__ import annotations

import datetime as dt

import polars as pl

from pipelines.core.pending_spells import SPELL_COLUMNS, pending_reason_spells

T0 = dt.datetime(2026, 12, 3, 10, tzinfo=dt.UTC)
UTC = pl.Datetime("us", "UTC")


def _t(s: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=s)


def _polls(rows: list[tuple[int, str | None, str | None, str | None]]) -> pl.LazyFrame:
    return pl.DataFrame(
        {
            "cluster": ["c"] * len(rows),
            "poll_at": [_t(s) for s, *_ in rows],
            "job_id": [j for _, j, _, _ in rows],
            "state": [st for _, _, st, _ in rows],
            "reason": [r for *_, r in rows],
            "sched_nodes": [None] * len(rows),
            "expected_start": [None] * len(rows),
            "req_switch": [0] * len(rows),
        },
        schema_overrides={"poll_at": UTC, "expected_start": UTC, "sched_nodes": pl.String()},
    ).lazy()


def _spells(rows: list[tuple[int, str | None, str | None, str | None]], **kw: int) -> list[tuple]:
    out = pending_reason_spells(_polls(rows), **kw).collect()
    assert out.columns == SPELL_COLUMNS
    return [
        (j, r, (s - T0).total_seconds(), (e - T0).total_seconds(), sec, n)
        for j, r, s, e, sec, n in out.select(
            "job_id", "reason", "spell_start", "spell_end", "seconds", "polls"
        ).rows()
    ]


def test_a_reason_change_the_start_and_a_capped_gap() -> None:
    """Polls at 0, 60, 120, 180, 900, 960 s. Job 1: Priority at 0 and 60, Resources at 120
    and 180, running at 900. Priority: 0 → 120 (the poll where it changed) = 120 s, 2 polls.
    Resources: 120 → 180, then 180 → min(900, 180 + 600 = 780) = 780: 660 s, 2 polls."""
    rows = [
        (0, "1", "PENDING", "Priority"), (60, "1", "PENDING", "Priority"),
        (120, "1", "PENDING", "Resources"), (180, "1", "PENDING", "Resources"),
        (900, "1", "RUNNING", "None"), (960, None, None, None),
    ]  # fmt: skip
    assert _spells(rows) == [
        ("1", "Priority", 0, 120, 120, 2),
        ("1", "Resources", 120, 780, 660, 2),
    ]


def test_a_job_missing_from_a_poll_starts_a_new_spell() -> None:
    """Job 2 pending (Resources) at 0, absent at 60 (the poll saw only job 9), pending again
    at 120, absent at 180: two spells of 60 s each (0 → 60, 120 → 180)."""
    rows = [
        (0, "2", "PENDING", "Resources"), (60, "9", "RUNNING", "None"),
        (120, "2", "PENDING", "Resources"), (180, "9", "RUNNING", "None"),
    ]  # fmt: skip
    assert _spells(rows) == [
        ("2", "Resources", 0, 60, 60, 1),
        ("2", "Resources", 120, 180, 60, 1),
    ]


def test_an_empty_poll_ends_a_spell_and_the_last_poll_leaves_it_open() -> None:
    """Job 3 pending at 0; the poll at 30 had an empty queue (its NULL-job row): 0 → 30 = 30 s.
    Job 4 pending (Dependency) at 60 and 90, the last poll: 60 → 90 = 30 s, 2 polls."""
    rows = [
        (0, "3", "PENDING", "Priority"), (30, None, None, None),
        (60, "4", "PENDING", "Dependency"), (90, "4", "PENDING", "Dependency"),
    ]  # fmt: skip
    assert _spells(rows) == [
        ("3", "Priority", 0, 30, 30, 1),
        ("4", "Dependency", 60, 90, 30, 2),
    ]


def test_a_gap_past_the_cap_splits_a_spell() -> None:
    """With max_gap_s = 100: job 5 Resources at 0 and 300 (no poll between): 0 → 100 (capped)
    and 300 → 300 (the last poll): two spells, 100 s and 0 s."""
    rows = [(0, "5", "PENDING", "Resources"), (300, "5", "PENDING", "Resources")]
    assert _spells(rows, max_gap_s=100) == [
        ("5", "Resources", 0, 100, 100, 1),
        ("5", "Resources", 300, 300, 0, 1),
    ]


def test_the_same_poll_loaded_twice_counts_once() -> None:
    """Job 6's row at 0 appears twice (two overlapping files): one poll, 0 → 60 = 60 s."""
    rows = [
        (0, "6", "PENDING", "Priority"), (0, "6", "PENDING", "Priority"),
        (60, "6", "RUNNING", "None"),
    ]  # fmt: skip
    assert _spells(rows) == [("6", "Priority", 0, 60, 60, 1)]
