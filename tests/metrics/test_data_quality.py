"""Data-quality checks on literal frames."""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics.data_quality import DATA_QUALITY_SCHEMA, admitted_without_pods, gpu_tracking_gaps


def test_gpu_partition_day_without_gres_is_flagged_not_zero() -> None:
    """Partition `gpu` has GPUs on day 1 but 2 allocations and no gres/gpu on day 2: day 2 flagged.

    The CPU partition `cpu` is not a GPU partition, so its 0-GPU allocations are not flagged.
    """
    utc = dt.UTC
    att = pl.DataFrame(
        {
            "cluster": ["c"] * 5,
            "partition": ["gpu", "gpu", "gpu", "cpu", "gpu"],
            "start_at": [
                dt.datetime(2026, 11, 1, 10, tzinfo=utc),
                dt.datetime(2026, 11, 2, 10, tzinfo=utc),
                dt.datetime(2026, 11, 2, 11, tzinfo=utc),
                dt.datetime(2026, 11, 2, 12, tzinfo=utc),
                None,
            ],
            "gpus": [4.0, 0.0, 0.0, 0.0, 0.0],
        }
    )
    parts = pl.DataFrame({"cluster": ["c"], "partition": ["gpu"]})
    out = gpu_tracking_gaps(att.lazy(), parts.lazy()).collect()
    assert out.select("day", "partition", "check", "value").rows() == [
        (dt.date(2026, 11, 2), "gpu", "gpus_not_tracked", 2.0)
    ]


def test_admitted_without_pods_is_a_finding() -> None:
    """Two ADMITTED attempts on one ClusterQueue and day, one on another day: two findings with
    counts 2 and 1; PENDING and RUNNING attempts are not findings."""
    t = dt.datetime(2026, 11, 7, 4, tzinfo=dt.UTC)
    jobs = pl.DataFrame(
        {
            "cluster": ["k1"] * 5,
            "partition": ["cq-research"] * 5,
            "state": ["ADMITTED", "ADMITTED", "ADMITTED", "PENDING", "RUNNING"],
            "eligible_at": [t, t, t + dt.timedelta(days=1), t, t],
        }
    )
    out = admitted_without_pods(jobs.lazy()).collect().sort("day")
    assert out.schema == pl.Schema(DATA_QUALITY_SCHEMA)
    assert out.select("day", "check", "value").rows() == [
        (dt.date(2026, 11, 7), "admitted_without_pods", 2.0),
        (dt.date(2026, 11, 8), "admitted_without_pods", 1.0),
    ]
