"""The hour from which an incremental build reads the stored domain capacity for the large-job
wait causes it recomputes (:func:`pipelines.analytics.build.first_wait_hours`), on hand-made
rows."""

from __future__ import annotations

import datetime as dt

import polars as pl

from pipelines.analytics.build import first_wait_hours

UTC = pl.Datetime("us", "UTC")


def _at(h: int, m: int = 0) -> dt.datetime:
    return dt.datetime(2026, 3, 2, h, m, tzinfo=dt.UTC)


def test_the_earliest_eligible_hour_of_the_named_jobs_per_cluster() -> None:
    """Cluster a: job 1's two attempts became eligible at 10:20 and 12:05, the never-started
    job 3 at 09:30, so a is read from 09:00; job 2 (08:59) is not named. Cluster b's job 1 has
    no eligible time and c has no row: neither is read."""
    jobs = pl.DataFrame(
        {
            "cluster": ["a", "a", "a", "b"],
            "job_id": ["1", "1", "2", "1"],
            "eligible_at": [_at(10, 20), _at(12, 5), _at(8, 59), None],
            "gpus": [64.0, 64.0, 64.0, 64.0],
        },
        schema_overrides={"eligible_at": UTC},
    )
    pending = pl.DataFrame(
        {"cluster": ["a"], "job_id": ["3"], "eligible_at": [_at(9, 30)]},
        schema_overrides={"eligible_at": UTC},
    )
    keys = pl.DataFrame({"cluster": ["a", "a", "b", "c"], "job_id": ["1", "3", "1", "9"]})
    got = first_wait_hours(keys, jobs, pending)
    assert got.to_dicts() == [{"cluster": "a", "since": _at(9)}]
    assert got.schema["since"] == UTC
    # Without the never-started job, a's earliest wait is job 1's first attempt: 10:00.
    assert first_wait_hours(keys, jobs)["since"].to_list() == [_at(10)]
    assert first_wait_hours(keys.clear(), jobs, pending).height == 0
