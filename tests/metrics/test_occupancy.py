"""Occupancy (METRICS.md) on literal frames with hand-computed values."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from metrics import allocated_gpu_seconds_hourly, occupancy_hourly

UTC = dt.UTC


def _t(h: int, m: int = 0, day: int = 1) -> dt.datetime:
    return dt.datetime(2026, 1, day, h, m, tzinfo=UTC)


def _attempts(
    rows: list[tuple[str, float, dt.datetime | None, dt.datetime | None]],
) -> pl.LazyFrame:
    return pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String(),
            "gpus": pl.Float64(),
            "start_at": pl.Datetime("us", "UTC"),
            "end_at": pl.Datetime("us", "UTC"),
        },
        orient="row",
    ).lazy()


def test_attempt_crossing_an_hour_is_clipped_to_each_hour() -> None:
    """2 GPUs from 00:30 to 02:00 → hour 0: 2×1800 = 3600 GPU-s; hour 1: 2×3600 = 7200."""
    out = allocated_gpu_seconds_hourly(_attempts([("c", 2.0, _t(0, 30), _t(2))]), _t(12)).collect()
    expected = pl.DataFrame(
        {"cluster": ["c", "c"], "hour": [_t(0), _t(1)], "allocated_gpu_s": [3600.0, 7200.0]}
    ).with_columns(pl.col("hour").dt.cast_time_unit("us"))
    assert_frame_equal(out, expected)


def test_attempt_crossing_midnight_counts_in_both_days() -> None:
    """1 GPU 23:30 → 00:15 next day: 1800 GPU-s on day 1 hour 23, 900 on day 2 hour 0."""
    out = allocated_gpu_seconds_hourly(
        _attempts([("c", 1.0, _t(23, 30), _t(0, 15, day=2))]), _t(12, day=2)
    ).collect()
    assert out["hour"].to_list() == [_t(23), _t(0, day=2)]
    assert out["allocated_gpu_s"].to_list() == [1800.0, 900.0]


def test_running_attempt_counts_until_as_of() -> None:
    """A running 4-GPU attempt started 01:00 with as_of 01:45 adds 4×2700 = 10800 GPU-s."""
    out = allocated_gpu_seconds_hourly(_attempts([("c", 4.0, _t(1), None)]), _t(1, 45)).collect()
    assert out["allocated_gpu_s"].to_list() == [10800.0]


def test_fractional_gpus_and_cpu_only_attempts() -> None:
    """A 3/7 MIG slice for one hour adds 3600×3/7; a 0-GPU attempt adds nothing."""
    out = allocated_gpu_seconds_hourly(
        _attempts([("c", 3 / 7, _t(0), _t(1)), ("c", 0.0, _t(0), _t(1))]), _t(5)
    ).collect()
    assert out["allocated_gpu_s"].to_list() == [pytest.approx(3600.0 * 3 / 7, rel=1e-12)]


def test_occupancy_divides_by_available_capacity() -> None:
    """8 GPUs of capacity; 2 GPUs 00:30–02:00 and 1 GPU from 01:00 (running, as_of 01:30).

    Hour 0: 3600 / (8×3600) = 0.125. Hour 1: (2×1800 + 1×1800) / 28800 = 0.1875.
    """
    nodes = pl.DataFrame(
        {"cluster": ["c", "c"], "host": ["n1", "n2"], "gpus": [4.0, 4.0],
         "capacity_source": ["inventory", "inventory"]}
    ).lazy()  # fmt: skip
    att = _attempts([("c", 2.0, _t(0, 30), _t(2)), ("c", 1.0, _t(1), None)])
    out = occupancy_hourly(att, nodes, _t(1, 30)).collect()
    assert out["capacity_gpu_s"].to_list() == [28800.0, 28800.0]
    assert out["allocated_gpu_s"].to_list() == [3600.0, 5400.0]
    assert out["occupancy"].to_list() == [0.125, 0.1875]
    assert out["down_gpu_s"].to_list() == [0.0, 0.0]


def test_occupancy_fills_hours_without_allocation() -> None:
    """Hours between two attempts appear with 0 allocated (occupancy 0, not missing)."""
    nodes = pl.DataFrame(
        {"cluster": ["c"], "host": ["n1"], "gpus": [1.0], "capacity_source": ["observed"]}
    ).lazy()
    att = _attempts([("c", 1.0, _t(0), _t(1)), ("c", 1.0, _t(3), _t(4))])
    out = occupancy_hourly(att, nodes, _t(5)).collect()
    assert out["occupancy"].to_list() == [1.0, 0.0, 0.0, 1.0]
    assert out["capacity_source"].unique().to_list() == ["observed"]


def test_a_gang_counts_the_gpus_its_pods_held_each_hour() -> None:
    """A Kueue gang of 16 GPUs, 08:10 - 10:10, whose pods held 8 GPUs 08:10 - 08:20, 16 GPUs
    08:20 - 08:40 and 8 GPUs 08:40 - 10:10 (worker-0 bound 08:10, ended 08:40; worker-1 bound
    08:20, ended 10:10). By hand: hour 8 = 8 x 600 + 16 x 1,200 + 8 x 1,200 = 33,600, hour 9 =
    28,800, hour 10 = 4,800 (Σ 67,200 = its gpu_s; 16 GPUs over its span gave 48,000 /
    57,600 / 9,600). A Slurm attempt beside it (no pieces: 2 GPUs 08:00 - 09:00) adds 7,200
    to hour 8. Running, the gang's last piece open: as_of 09:30 stops it there (hour 9 =
    8 x 1,800 = 14,400)."""
    att = pl.DataFrame(
        {
            "cluster": ["c", "c"],
            "job_id": ["team-a/train", "1234"],
            "attempt": [0, 0],
            "gpus": [16.0, 2.0],
            "start_at": [_t(8, 10), _t(8)],
            "end_at": [_t(10, 10), _t(9)],
        },
        schema_overrides={"start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC")},
    ).lazy()
    pieces = [
        (_t(8, 10), _t(8, 20), 8.0),
        (_t(8, 20), _t(8, 40), 16.0),
        (_t(8, 40), _t(10, 10), 8.0),
    ]
    holds = pl.DataFrame(
        {
            "cluster": ["c"] * 3,
            "job_id": ["team-a/train"] * 3,
            "attempt": [0] * 3,
            "start_at": [p[0] for p in pieces],
            "end_at": [p[1] for p in pieces],
            "gpus": [p[2] for p in pieces],
        },
        schema_overrides={"start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC")},
    ).lazy()
    out = allocated_gpu_seconds_hourly(att, _t(12), holds=holds).collect()
    assert out["hour"].to_list() == [_t(8), _t(9), _t(10)]
    assert out["allocated_gpu_s"].to_list() == [40_800.0, 28_800.0, 4_800.0]
    open_end = holds.with_columns(
        pl.when(pl.col("start_at") == _t(8, 40))
        .then(None)
        .otherwise(pl.col("end_at"))
        .alias("end_at")
    )
    still = att.with_columns(
        pl.when(pl.col("job_id") == "team-a/train")
        .then(None)
        .otherwise(pl.col("end_at"))
        .alias("end_at")
    )
    out = allocated_gpu_seconds_hourly(still, _t(9, 30), holds=open_end).collect()
    assert out["allocated_gpu_s"].to_list() == [40_800.0, 14_400.0]
