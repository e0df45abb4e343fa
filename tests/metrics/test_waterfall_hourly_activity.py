"""The waterfall fed with hourly per-GPU activity (``activity_bucket_s=3600``), hand-computed."""

from __future__ import annotations

import polars as pl
import pytest

from metrics import gpu_waterfall_hourly, headline_ratios
from tests.metrics.test_waterfall import TS, _attempts, _capacity, _leaves, _t


def _gpu_hours(rows: list[tuple[str, int, float]]) -> pl.LazyFrame:
    """One row per GPU and hour: (job_id, hour, activity), ``gpus`` = 1."""
    return pl.DataFrame(
        {
            "cluster": ["c"] * len(rows),
            "job_id": [r[0] for r in rows],
            "attempt": [0] * len(rows),
            "bucket": [_t(r[1]) for r in rows],
            "activity": [r[2] for r in rows],
            "gpus": [1.0] * len(rows),
        },
        schema_overrides={"bucket": TS},
    ).lazy()


def test_hourly_gpu_rows_split_allocated_idle_per_gpu_and_clip_to_the_attempt() -> None:
    """Capacity 4 GPUs (14400 GPU-s an hour). Job 1: 2 GPUs 00:30–01:30 (COMPLETED).
    Hour 00: GPU a activity 0.01 (< θ = 0.05), GPU b 0.6; each GPU row covers the job's
    overlap with [00:00, 01:00) = 1800 s → allocated_idle 1800, goodput 3600 − 1800 = 1800,
    observed 3600. Hour 01: one GPU row (the other GPU had no row), activity 0.8, overlap
    [01:00, 01:30) = 1800 s → observed goodput 1800; allocated 3600 → goodput 3600, idle
    14400 − 3600 = 10800. allocated activity = (0.01×1800 + 0.6×1800 + 0.8×1800) / 5400
    = 0.47; telemetry coverage = 5400 / 7200 = 0.75."""
    att = _attempts([("1", "COMPLETED", 2.0, _t(0, 30), _t(1, 30), ["n1"])])
    activity = _gpu_hours([("1", 0, 0.01), ("1", 0, 0.6), ("1", 1, 0.8)])
    wf = gpu_waterfall_hourly(
        att, _capacity([_t(0), _t(1)], 4.0), _t(2), activity=activity, activity_bucket_s=3600.0
    )
    h0, h1 = _leaves(wf, _t(0)), _leaves(wf, _t(1))
    assert (h0["allocated_idle"], h0["goodput"], h0["idle"]) == (1800.0, 1800.0, 10800.0)
    assert (h1["allocated_idle"], h1["goodput"], h1["idle"]) == (0.0, 3600.0, 10800.0)
    r = headline_ratios(wf).collect().row(0, named=True)
    assert r["allocated_activity"] == pytest.approx(0.47)
    assert r["telemetry_coverage"] == pytest.approx(0.75)


def test_hourly_rows_read_as_five_minute_buckets_by_default() -> None:
    """The same hour-00 rows read with the default 300 s bucket: each row covers only
    [00:00, 00:05), which lies before the job's start (00:30) → nothing observed, no
    allocated_idle; the job's hour-00 time (2 GPUs × 1800 s = 3600 GPU-s) is all goodput."""
    att = _attempts([("1", "COMPLETED", 2.0, _t(0, 30), _t(1, 30), ["n1"])])
    activity = _gpu_hours([("1", 0, 0.01), ("1", 0, 0.6)])
    wf = gpu_waterfall_hourly(att, _capacity([_t(0)], 4.0), _t(2), activity=activity)
    h0 = _leaves(wf, _t(0))
    assert (h0["allocated_idle"], h0["goodput"]) == (0.0, 3600.0)


@pytest.mark.parametrize("bucket_s", [0.0, 7200.0, 700.0])
def test_activity_bucket_must_divide_an_hour(bucket_s: float) -> None:
    att = _attempts([("1", "COMPLETED", 1.0, _t(0), _t(1), ["n1"])])
    with pytest.raises(ValueError, match="divide 3600"):
        gpu_waterfall_hourly(att, _capacity([_t(0)], 1.0), _t(1), activity_bucket_s=bucket_s)
