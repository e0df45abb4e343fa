"""Het job components as one waiting unit (:func:`metrics.het_jobs.het_wait_units`), through
:func:`metrics.wait_spells` (METRICS.md "Time to start", het jobs). Hand-computed."""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics import wait_spells
from metrics.het_jobs import het_wait_units

_T0 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
_CUT = _T0 + dt.timedelta(hours=5)


def _h(hours: float | None) -> dt.datetime | None:
    return None if hours is None else _T0 + dt.timedelta(hours=hours)


def _attempts(
    rows: list[tuple[str, int, float, float, float | None, float | None]],
) -> pl.LazyFrame:
    """``(job_id, attempt, gpus, eligible h, start h, end h)``."""
    return pl.LazyFrame(
        {
            "cluster": ["c"] * len(rows),
            "job_id": [r[0] for r in rows],
            "attempt": [r[1] for r in rows],
            "gpus": [r[2] for r in rows],
            "req_gpus": [r[2] for r in rows],
            "eligible_at": [_h(r[3]) for r in rows],
            "start_at": [_h(r[4]) for r in rows],
            "end_at": [_h(r[5]) for r in rows],
        },
        schema={
            "cluster": pl.String(), "job_id": pl.String(), "attempt": pl.Int64(),
            "gpus": pl.Float64(), "req_gpus": pl.Float64(), "eligible_at": pl.Datetime("us", "UTC"),
            "start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC"),
        },
    )  # fmt: skip


def _pending(rows: list[tuple[str, float, float, float | None]]) -> pl.LazyFrame:
    """``(job_id, req_gpus, eligible h, end h)``."""
    return pl.LazyFrame(
        {
            "cluster": ["c"] * len(rows),
            "job_id": [r[0] for r in rows],
            "req_gpus": [r[1] for r in rows],
            "eligible_at": [_h(r[2]) for r in rows],
            "end_at": [_h(r[3]) for r in rows],
        },
        schema={
            "cluster": pl.String(), "job_id": pl.String(), "req_gpus": pl.Float64(),
            "eligible_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC"),
        },
    )  # fmt: skip


def _spells(attempts: pl.LazyFrame, pending: pl.LazyFrame) -> list[tuple[object, ...]]:
    a, p = het_wait_units(attempts, pending)
    return (
        wait_spells(a, _CUT, pending=p)
        .select("job_id", "attempt", "duration_s", "started", "size_gpus", "bucket")
        .sort("job_id", "attempt", nulls_last=True)
        .collect()
        .rows()
    )


def test_components_started_apart_wait_to_the_last_start() -> None:
    """200+0 (48 GPUs) eligible 00:00, started 02:00; 200+1 (48) eligible 01:00, started 03:00:
    one spell of 96 GPUs from 00:00 to 03:00 = 10,800 s; plain job 7 (8 GPUs) as it was, 3,600 s.
    Before: two 48-GPU spells (7,200 s and 7,200 s) in 9–63."""
    attempts = _attempts([
        ("200+0", 0, 48.0, 0, 2, 4), ("200+1", 0, 48.0, 1, 3, 4), ("7", 0, 8.0, 0, 1, 2),
    ])  # fmt: skip
    assert _spells(attempts, _pending([])) == [
        ("200+0", 0, 10800.0, True, 96.0, "64-255"), ("7", 0, 3600.0, True, 8.0, "2-8"),
    ]  # fmt: skip


def test_a_component_not_started_censors_the_het_job_as_one() -> None:
    """200+0 (48) started at 02:00 but 200+1 (48) still pending since 01:00, and het job 300's
    two components (16 + 64) pending since 00:00, 300+1 cancelled at 04:00 and 300+0 not: one
    censored spell each at the cut-off 05:00: 200+0 from 00:00 (18,000 s, 96 GPUs),
    300+0 from 00:00 (18,000 s, 80 GPUs). Before: 200+0 started (7,200 s), 200+1 and the two
    300 components censored apart (14,400 s, 18,000 s and 14,400 s)."""
    attempts = _attempts([("200+0", 0, 48.0, 0, 2, None)])
    pending = _pending([
        ("200+1", 48.0, 1, None), ("300+0", 16.0, 0, None), ("300+1", 64.0, 0, 4),
    ])  # fmt: skip
    assert _spells(attempts, pending) == [
        ("200+0", None, 18000.0, False, 96.0, "64-255"),
        ("300+0", None, 18000.0, False, 80.0, "64-255"),
    ]


def test_a_cancelled_het_job_is_censored_at_its_last_cancel() -> None:
    """Both components of 400 pending since 00:00, cancelled at 01:00 and 02:00: one spell
    censored at 02:00, 7,200 s, 2 + 2 = 4 GPUs."""
    pending = _pending([("400+0", 2.0, 0, 1), ("400+1", 2.0, 0, 2)])
    assert _spells(_attempts([]), pending) == [("400+0", None, 7200.0, False, 4.0, "2-8")]


def test_a_component_requeued_more_often_does_not_hold_back_the_unit() -> None:
    """7+0 (8 GPUs) has attempts 0 (eligible 00:00, ran 01:00–02:00) and 1 (eligible 03:00,
    ran 04:00–05:00); 7+1 (8 GPUs) only attempt 0 (eligible 00:00, ran 01:00–02:00). Unit
    attempt 0: 8 + 8 = 16 GPUs, 00:00 → 01:00 = 3,600 s; unit attempt 1 has only 7+0's row,
    which started: started at 04:00, 03:00 → 04:00 = 3,600 s of 8 GPUs. Before: attempt 1 was
    a never-started unit (7+1 has no row for it) censored at the cut-off 05:00, 7,200 s, and
    its run at 04:00 was lost."""
    attempts = _attempts([
        ("7+0", 0, 8.0, 0, 1, 2), ("7+0", 1, 8.0, 3, 4, 5), ("7+1", 0, 8.0, 0, 1, 2),
    ])  # fmt: skip
    assert _spells(attempts, _pending([])) == [
        ("7+0", 0, 3600.0, True, 16.0, "9-63"), ("7+0", 1, 3600.0, True, 8.0, "2-8"),
    ]  # fmt: skip


def _rows(frame: pl.LazyFrame | None, *cols: str) -> list[tuple[object, ...]]:
    assert frame is not None
    return frame.select(cols).collect().rows()


def test_a_partly_started_unit_asks_only_the_gpus_not_running() -> None:
    """7+0 (8 GPUs) eligible 00:00, started 01:00, still running; 7+1 (8 GPUs) eligible 00:00,
    still pending. As pending demand (``demand``), 7+0's GPUs are allocated from 01:00: 16 GPUs
    00:00–01:00, then 8 GPUs from 01:00 while pending (to the cut-off 05:00: 16 × 1 + 8 × 4 =
    48 GPU-h; before, one row of 16 GPUs from 00:00, 16 × 5 = 80 GPU-h). Time to start keeps the
    unit's wait: one censored spell 00:00 → 05:00 = 18,000 s of 16 GPUs."""
    attempts = _attempts([("7+0", 0, 8.0, 0, 1, None)])
    pending = _pending([("7+1", 8.0, 0, None)])
    a, p = het_wait_units(attempts, pending, demand=True)
    assert _rows(a, "job_id") == []
    assert _rows(p, "job_id", "req_gpus", "eligible_at", "end_at") == [
        ("7+0", 16.0, _h(0), _h(1)), ("7+0", 8.0, _h(1), None),
    ]  # fmt: skip
    assert _spells(attempts, pending) == [("7+0", None, 18000.0, False, 16.0, "9-63")]


def test_a_component_that_ran_and_ended_asks_again_while_the_unit_waits() -> None:
    """Partial rows: 8+0 (4 GPUs) ran 01:00–02:00; 8+1 (4 GPUs) pending since 00:00, cancelled
    at 03:00. As demand: 8 GPUs 00:00–01:00, 4 GPUs 01:00–02:00 (8+0 runs), 8 GPUs 02:00–03:00
    (8+0 no longer runs, the unit still waits for it to start with 8+1)."""
    attempts = _attempts([("8+0", 0, 4.0, 0, 1, 2)])
    pending = _pending([("8+1", 4.0, 0, 3)])
    _, p = het_wait_units(attempts, pending, demand=True)
    assert _rows(p, "job_id", "req_gpus", "eligible_at", "end_at") == [
        ("8+0", 8.0, _h(0), _h(1)), ("8+0", 4.0, _h(1), _h(2)), ("8+0", 8.0, _h(2), _h(3)),
    ]  # fmt: skip
