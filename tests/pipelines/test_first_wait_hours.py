"""The hour from which an incremental build reads the stored domain capacity for the large-job
wait causes it recomputes (:func:`pipelines.analytics.build._first_wait_hours`), on hand-made
rows."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import polars as pl

from pipelines.analytics.build import _first_wait_hours

UTC = pl.Datetime("us", "UTC")


def _at(h: int, m: int = 0) -> dt.datetime:
    return dt.datetime(2026, 3, 2, h, m, tzinfo=dt.UTC)


JOBS = pl.DataFrame(
    {
        "cluster": ["a", "a", "a", "b"],
        "job_id": ["1", "1", "2", "1"],
        "eligible_at": [_at(10, 20), _at(12, 5), _at(8, 59), None],
        "gpus": [64.0, 64.0, 64.0, 64.0],
    },
    schema_overrides={"eligible_at": UTC},
)
PENDING = pl.DataFrame(
    {"cluster": ["a"], "job_id": ["3"], "eligible_at": [_at(9, 30)]},
    schema_overrides={"eligible_at": UTC},
)
#: (b, 2) names a job id cluster a has: a's job 2 (08:59) must still be left out.
KEYS = pl.DataFrame({"cluster": ["a", "a", "b", "b", "c"], "job_id": ["1", "3", "1", "2", "9"]})


def test_the_earliest_eligible_hour_of_the_named_jobs_per_cluster() -> None:
    """Cluster a: job 1's two attempts became eligible at 10:20 and 12:05, the never-started
    job 3 at 09:30, so a is read from 09:00; a's job 2 (08:59) is not named (only b's job 2
    is). Cluster b's job 1 has no eligible time and c has no row: neither is read."""
    got = _first_wait_hours(KEYS, JOBS, PENDING)
    assert got.to_dicts() == [{"cluster": "a", "since": _at(9)}]
    assert got.schema["since"] == UTC
    # Without the never-started job, a's earliest wait is job 1's first attempt: 10:00.
    assert _first_wait_hours(KEYS, JOBS)["since"].to_list() == [_at(10)]
    assert _first_wait_hours(KEYS.clear(), JOBS, PENDING).height == 0


def test_times_in_another_zone_and_unit_are_converted_then_truncated() -> None:
    """Job 3 eligible at 14:45 in Kolkata (UTC+05:30, nanoseconds) is 09:15 UTC, so a is read
    from 09:00 UTC (truncating in Kolkata's zone would give 14:00 there, 08:30 UTC)."""
    kolkata = PENDING.with_columns(
        pl.lit(dt.datetime(2026, 3, 2, 14, 45, tzinfo=ZoneInfo("Asia/Kolkata")))
        .dt.cast_time_unit("ns")
        .alias("eligible_at")
    )
    got = _first_wait_hours(KEYS, JOBS, kolkata)
    assert got.to_dicts() == [{"cluster": "a", "since": _at(9)}]
