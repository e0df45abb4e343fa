"""Slurm identity rules (METRICS.md "Units and identities") through the parser and the resolver."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from pipelines.core import in_resolution_order
from pipelines.core.registry import empty_registry
from pipelines.core.slurm_identity import resolve_slurm_jobs, slurm_attempts
from pipelines.slurm._sacct_parse import parse_sacct

HEADER = "JobID|JobIDRaw|Account|State|Submit|Eligible|Start|End|AllocTRES"


def _load(*files: str) -> pl.DataFrame:
    """Parse each text as its own export (ingest ids 1, 2, …) and resolve identities."""
    frames = []
    for i, text in enumerate(files, 1):
        rows = parse_sacct(f"export{i}.psv", text=text, cluster="c", tz="UTC").rows
        frames.append(rows.with_columns(pl.lit(i, dtype=pl.Int64()).alias("ingest_id")))
    _teams, mapping = empty_registry()
    acct = mapping.filter(pl.col("kind") == "slurm_account").lazy()
    return resolve_slurm_jobs(pl.concat(frames).lazy(), acct).collect()


def test_requeued_job_has_one_attempt_per_allocation() -> None:
    """`sacct -D` lists a requeued job twice: attempts 0 and 1 by start, each its own wait."""
    out = _load(
        HEADER + "\n"
        "7|7|a|REQUEUED|2026-11-02T00:00:00|2026-11-02T00:00:00|2026-11-02T00:10:00|"
        "2026-11-02T01:00:00|gres/gpu=4\n"
        "7|7|a|COMPLETED|2026-11-02T00:00:00|2026-11-02T01:02:00|2026-11-02T01:05:00|"
        "2026-11-02T02:05:00|gres/gpu=4\n"
    )
    att = slurm_attempts(out.lazy()).collect().sort("attempt")
    assert att["attempt"].to_list() == [0, 1]
    assert att["state"].to_list() == ["REQUEUED", "COMPLETED"]
    assert att["wait_s"].to_list() == [600.0, 180.0]
    assert att["gpu_s"].to_list() == [4 * 3000.0, 4 * 3600.0]


def test_pending_row_superseded_when_the_job_starts_later() -> None:
    """A job PENDING in Monday's export and COMPLETED in Tuesday's is one started row."""
    monday = HEADER + "\n8|8|a|PENDING|2026-11-02T23:00:00|2026-11-02T23:00:00|Unknown|Unknown|\n"
    tuesday = (
        HEADER + "\n8|8|a|COMPLETED|2026-11-02T23:00:00|2026-11-02T23:00:00|"
        "2026-11-03T01:00:00|2026-11-03T02:00:00|gres/gpu=1\n"
    )
    out = _load(monday, tuesday)
    assert out.height == 1
    assert out["state"].to_list() == ["COMPLETED"]
    assert out["attempt"].to_list() == [0]


def test_overlapping_exports_update_instead_of_duplicating() -> None:
    """RUNNING in one window and COMPLETED in the next: kept once, with the final state and end."""
    running = (
        HEADER + "\n9|9|a|RUNNING|2026-11-02T10:00:00|2026-11-02T10:00:00|"
        "2026-11-02T11:00:00|Unknown|gres/gpu=2\n"
    )
    done = (
        HEADER + "\n9|9|a|COMPLETED|2026-11-02T10:00:00|2026-11-02T10:00:00|"
        "2026-11-02T11:00:00|2026-11-03T01:00:00|gres/gpu=2\n"
    )
    for order in ((running, done), (done, running)):
        out = _load(*order)
        assert out.height == 1, order
        assert out["state"].to_list() == ["COMPLETED"]
        assert out["gpu_s"].to_list() == [2 * 14 * 3600.0]


def test_a_job_cancelled_while_pending_stays_cancelled_in_either_load_order() -> None:
    """PENDING in Monday's export, "CANCELLED by 1000" with no start and an end in Tuesday's:
    the row with the end (a final state) is kept whichever export was loaded last (a day
    loaded again, or loaded late, gets the higher ingest id), so job 500 pends 09:00–09:30 and
    never to the cut-off."""
    monday = (
        HEADER + "\n500|500|a|PENDING|2026-11-02T09:00:00|2026-11-02T09:00:00|Unknown|Unknown|\n"
    )
    tuesday = (
        HEADER + "\n500|500|a|CANCELLED by 1000|2026-11-02T09:00:00|2026-11-02T09:00:00|None|"
        "2026-11-02T09:30:00|\n"
    )
    for order in ((monday, tuesday), (tuesday, monday)):
        out = _load(*order)
        assert out.height == 1, order
        assert out["state"].to_list() == ["CANCELLED"], order
        assert out["end_at"].to_list() == [dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)]
        assert out["attempt"].to_list() == [None]


def test_job_requeued_and_pending_again_is_not_superseded() -> None:
    """After a requeue the job pends again: that pending row (eligible after the start) stays."""
    out = _load(
        HEADER + "\n"
        "10|10|a|REQUEUED|2026-11-02T00:00:00|2026-11-02T00:00:00|2026-11-02T00:10:00|"
        "2026-11-02T01:00:00|gres/gpu=1\n"
        "10|10|a|PENDING|2026-11-02T00:00:00|2026-11-02T01:02:00|Unknown|Unknown|\n"
    )
    assert sorted(out["state"].to_list()) == ["PENDING", "REQUEUED"]
    assert slurm_attempts(out.lazy()).collect().height == 1


def test_steps_never_add_gpu_seconds_and_take_their_allocation_attempt() -> None:
    """`.batch` and `.extern` repeat the TRES: gpu_s is NULL on them; attempt is the parent's."""
    out = _load(
        HEADER + "\n"
        "11|11|a|COMPLETED|2026-11-02T00:00:00|2026-11-02T00:00:00|2026-11-02T00:00:00|"
        "2026-11-02T01:00:00|gres/gpu=8\n"
        "11.batch|11.batch||COMPLETED|2026-11-02T00:00:00|2026-11-02T00:00:00|"
        "2026-11-02T00:00:00|2026-11-02T01:00:00|gres/gpu=8\n"
        "11.extern|11.extern||COMPLETED|2026-11-02T00:00:00|2026-11-02T00:00:00|"
        "2026-11-02T00:00:00|2026-11-02T01:00:00|gres/gpu=8\n"
    )
    assert out.height == 3
    alloc = out.filter(pl.col("step").is_null())
    steps = out.filter(pl.col("step").is_not_null())
    assert alloc["gpu_s"].to_list() == [8 * 3600.0]
    assert steps["gpu_s"].null_count() == 2
    assert steps["attempt"].to_list() == [0, 0]
    assert slurm_attempts(out.lazy()).collect().height == 1


def test_array_tasks_keyed_by_array_and_task() -> None:
    """A pending `A_[1-3]` row expands per task; when task 2 starts (own JobIDRaw) it supersedes."""
    out = _load(
        HEADER
        + "\n20_[1-3]|20|a|PENDING|2026-11-02T00:00:00|2026-11-02T00:00:00|Unknown|Unknown|\n",
        HEADER + "\n20_2|22|a|COMPLETED|2026-11-02T00:00:00|2026-11-02T00:00:00|"
        "2026-11-02T00:30:00|2026-11-02T01:00:00|gres/gpu=1\n"
        "20_[1,3]|20|a|PENDING|2026-11-02T00:00:00|2026-11-02T00:00:00|Unknown|Unknown|\n",
    )
    got = sorted(zip(out["job_key"].to_list(), out["state"].to_list(), strict=True))
    assert got == [("20_1", "PENDING"), ("20_2", "COMPLETED"), ("20_3", "PENDING")]


def _ordered_rows() -> pl.DataFrame:
    """Nine rows in the resolution's order, worked out by hand: cluster, then job key (strings
    by bytes: ``"10"`` before ``"9"``), then start, then step, each column's NULLs last."""
    t0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    t1 = dt.datetime(2025, 1, 2, tzinfo=dt.UTC)
    return pl.DataFrame(
        {
            "row": list(range(9)),
            "cluster": ["c1", "c1", "c1", "c1", "c1", "c1", "c1", "c2", None],
            "job_key": ["10", "10", "10", "10", "10", "9", None, "1", "1"],
            "start_at": [t0, t0, t0, t1, None, t0, t0, t0, t0],
            "step": ["0", "batch", None, None, None, None, None, None, None],
        }
    )


def test_rows_already_in_the_resolution_order_come_back_as_they_are() -> None:
    rows = _ordered_rows()
    assert in_resolution_order(rows) is rows
    assert in_resolution_order(rows.head(1)).equals(rows.head(1))
    assert in_resolution_order(rows.clear()).height == 0


def test_rows_out_of_the_resolution_order_are_sorted_into_it() -> None:
    """Reversed, and shuffled five ways, the rows come back in the hand-worked order; two rows
    equal on all four keys (0 and its copy 9) keep the order they came in."""
    rows = _ordered_rows()
    assert in_resolution_order(rows.reverse())["row"].to_list() == list(range(9))
    for seed in range(5):
        shuffled = rows.sample(fraction=1.0, shuffle=True, seed=seed)
        assert in_resolution_order(shuffled)["row"].to_list() == list(range(9))
    twin = pl.concat(
        [
            rows.slice(4),
            rows.head(1).with_columns(pl.lit(9, dtype=pl.Int64).alias("row")),
            rows.head(4),
        ]
    )
    assert in_resolution_order(twin)["row"].to_list() == [9, 0, 1, 2, 3, 4, 5, 6, 7, 8]


def test_rows_out_of_order_on_one_later_key_only_are_sorted_too() -> None:
    """Each pair of neighbouring rows swapped: the two rows differ on one key only, or first on
    a later key (0↔1 the step, 1↔2 a NULL step, 2↔3 the start, 3↔4 a NULL start, 4↔5 the job
    key ``"10"`` before ``"9"``, 5↔6 a NULL job key, 6↔7 the cluster, 7↔8 a NULL cluster), and
    every swap is found and sorted back."""
    rows = _ordered_rows()
    for i in range(8):
        order = list(range(9))
        order[i], order[i + 1] = i + 1, i
        swapped = rows[order]
        assert swapped["row"].to_list() != list(range(9))
        assert in_resolution_order(swapped)["row"].to_list() == list(range(9)), i


def test_the_resolution_order_needs_its_four_columns() -> None:
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        in_resolution_order(_ordered_rows().drop("step").reverse())


_RUNNING_20 = (
    HEADER + "\n20|20|a|RUNNING|2026-11-01T22:00:00|2026-11-01T22:00:00|2026-11-01T22:00:00|"
    "Unknown|gres/gpu=8\n"
)


def test_an_open_attempt_ends_at_the_submit_of_its_jobs_later_attempt() -> None:
    """RUNNING from 22:00 in one export; the next (plain sacct, no ``-D``) shows only the job's
    later record, Submit 23:00 (the requeue), run 00:00–02:00. Attempt 0 ends at 23:00:
    REQUEUED, 8 × 3,600 = 28,800 GPU-s (it ran on to the cut-off before), its end inferred;
    attempt 1 keeps its times, 8 × 7,200 = 57,600 GPU-s. Either load order."""
    later = (
        HEADER + "\n20|20|a|COMPLETED|2026-11-01T23:00:00|2026-11-01T23:01:00|"
        "2026-11-02T00:00:00|2026-11-02T02:00:00|gres/gpu=8\n"
    )
    for order in ((_RUNNING_20, later), (later, _RUNNING_20)):
        att = slurm_attempts(_load(*order).lazy()).collect().sort("attempt")
        assert att["attempt"].to_list() == [0, 1], order
        assert att["state"].to_list() == ["REQUEUED", "COMPLETED"]
        assert att["state_raw"].to_list() == ["RUNNING", "COMPLETED"]
        assert att["end_at"].to_list() == [
            dt.datetime(2026, 11, 1, 23, tzinfo=dt.UTC),
            dt.datetime(2026, 11, 2, 2, tzinfo=dt.UTC),
        ]
        assert att["run_s"].to_list() == [3600.0, 7200.0]
        assert att["gpu_s"].to_list() == [28800.0, 57600.0]
        assert att["end_inferred"].to_list() == [True, False]


def test_an_open_attempt_of_a_job_pending_again_ends_at_the_requeue() -> None:
    """RUNNING from 22:00; the next export shows the job PENDING again, Submit 23:00 (the
    requeue), Eligible 23:01. The attempt ends at 23:00 (REQUEUED, 28,800 GPU-s) and the
    pending row stays: the job waits from 23:01, it does not run and wait at once."""
    pending = (
        HEADER + "\n20|20|a|PENDING|2026-11-01T23:00:00|2026-11-01T23:01:00|Unknown|Unknown|\n"
    )
    out = _load(_RUNNING_20, pending).sort("attempt", nulls_last=True)
    assert out["attempt"].to_list() == [0, None]
    assert out["state"].to_list() == ["REQUEUED", "PENDING"]
    assert out["end_at"].to_list() == [dt.datetime(2026, 11, 1, 23, tzinfo=dt.UTC), None]
    assert out["gpu_s"].to_list() == [28800.0, None]
    assert out["end_inferred"].to_list() == [True, False]


def test_an_open_attempt_stays_open_beside_an_older_pending_copy_or_alone() -> None:
    """A PENDING copy taken before the start (Submit and Eligible 22:00, the start's second)
    is no requeue: the attempt stays RUNNING with no end. A job started at once after its
    submit is common; a requeue is a time after the start."""
    older = HEADER + "\n20|20|a|PENDING|2026-11-01T22:00:00|2026-11-01T22:00:00|Unknown|Unknown|\n"
    for files in ((older, _RUNNING_20), (_RUNNING_20,)):
        out = _load(*files)
        assert out["state"].to_list() == ["RUNNING"], files
        assert out["end_at"].to_list() == [None]
        assert out["end_inferred"].to_list() == [False]


def test_an_open_attempt_ends_at_the_first_later_record() -> None:
    """Two attempts with no end (22:00, and 00:00 submitted at 23:00) and a pending row
    submitted 01:00: attempt 0 ends 23:00, attempt 1 at 01:00, both REQUEUED, 8 × 3,600 and
    8 × 3,600 GPU-s. A later attempt with no Submit ends it at its Start: attempt 0 at
    00:00 when attempt 1's Submit and Eligible are missing."""
    rows = (
        "20|20|a|RUNNING|2026-11-01T23:00:00|2026-11-01T23:00:00|2026-11-02T00:00:00|"
        "Unknown|gres/gpu=8\n"
        "20|20|a|PENDING|2026-11-02T01:00:00|2026-11-02T01:00:00|Unknown|Unknown|\n"
    )
    att = slurm_attempts(_load(_RUNNING_20, HEADER + "\n" + rows).lazy()).collect()
    assert att.sort("attempt")["end_at"].to_list() == [
        dt.datetime(2026, 11, 1, 23, tzinfo=dt.UTC),
        dt.datetime(2026, 11, 2, 1, tzinfo=dt.UTC),
    ]
    assert att.sort("attempt")["gpu_s"].to_list() == [28800.0, 28800.0]
    assert att["state"].to_list() == ["REQUEUED", "REQUEUED"]
    no_submit = rows.replace(
        "RUNNING|2026-11-01T23:00:00|2026-11-01T23:00:00|", "RUNNING|Unknown|Unknown|"
    )
    att = slurm_attempts(_load(_RUNNING_20, HEADER + "\n" + no_submit).lazy()).collect()
    assert att.sort("attempt")["end_at"].to_list() == [
        dt.datetime(2026, 11, 2, 0, tzinfo=dt.UTC),
        dt.datetime(2026, 11, 2, 1, tzinfo=dt.UTC),
    ]


def test_a_pending_copy_with_a_later_begin_time_does_not_end_the_running_attempt() -> None:
    """A job submitted 08:00 with ``--begin`` 10:00 (its PENDING copy: Eligible 10:00), whose
    start time an admin moved up (``scontrol update StartTime=``), starts 09:10 and is RUNNING
    in the later export. The pending copy's Submit (08:00) is not after the start, so it is no
    requeue: the attempt stays RUNNING and open (taking its Eligible, it was ended REQUEUED at
    10:00, 24,000 GPU-s with 8 GPUs, while it ran on)."""
    out = _load(
        HEADER + "\n9|9|a|PENDING|2026-11-02T08:00:00|2026-11-02T10:00:00|Unknown|Unknown|\n",
        HEADER + "\n9|9|a|RUNNING|2026-11-02T08:00:00|2026-11-02T09:05:00|"
        "2026-11-02T09:10:00|Unknown|gres/gpu=8\n",
    )
    started = out.filter(pl.col("start_at").is_not_null())
    assert started["state"].to_list() == ["RUNNING"]
    assert started["end_at"].to_list() == [None]
    assert started["end_inferred"].to_list() == [False]
