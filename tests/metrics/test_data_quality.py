"""Data-quality checks on literal frames."""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics.data_quality import (
    DATA_QUALITY_SCHEMA,
    admitted_without_pods,
    gpu_tracking_gaps,
    unattributed_gpu_hours,
)


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


def _jobs_for_attribution() -> pl.DataFrame:
    """Cluster c, day 1: unattributed acct-x 2 GPUs × 3 h and 1 GPU × 2 h (8 GPU-h), acct-y 1 h,
    acct-z 1 h, acct-w 0.5 h, a CPU job of acct-v (0 GPU-s), a pending one of acct-u; team t's
    4 GPU-h are attributed. Day 2: acct-y 2 GPU-h."""
    utc = dt.UTC
    d1, d2 = dt.datetime(2026, 11, 1, 5, tzinfo=utc), dt.datetime(2026, 11, 2, 23, tzinfo=utc)
    rows = [
        ("unattributed", "acct-x", d1, 6 * 3600.0),
        ("unattributed", "acct-x", d1, 2 * 3600.0),
        ("unattributed", "acct-y", d1, 3600.0),
        ("unattributed", "acct-z", d1, 3600.0),
        ("unattributed", "acct-w", d1, 1800.0),
        ("unattributed", "acct-v", d1, 0.0),
        ("unattributed", "acct-u", None, None),
        ("t", "acct-t", d1, 4 * 3600.0),
        ("unattributed", "acct-y", d2, 2 * 3600.0),
    ]
    return pl.DataFrame(
        [("c", *r) for r in rows],
        schema={
            "cluster": pl.String(),
            "team": pl.String(),
            "account": pl.String(),
            "start_at": pl.Datetime("us", "UTC"),
            "gpu_s": pl.Float64(),
        },
        orient="row",
    )


def test_unattributed_gpu_hours_per_cluster_day_name_the_largest_accounts() -> None:
    """Day 1: 8 + 1 + 1 + 0.5 = 10.5 GPU-h unattributed; the three largest accounts named
    (acct-y before acct-z at 1 h each: by name), one more; the CPU and pending jobs and team
    t's hours are not counted. Day 2: 2 GPU-h of acct-y."""
    out = unattributed_gpu_hours(
        _jobs_for_attribution().lazy(), unattributed="unattributed"
    ).collect()
    assert out.sort("day").rows() == [
        (
            "c", dt.date(2026, 11, 1), None, "unattributed_gpu_hours", 10.5,
            "not in the allocation registry: acct-x 8.0 h, acct-y 1.0 h, acct-z 1.0 h and 1 more",
        ),
        (
            "c", dt.date(2026, 11, 2), None, "unattributed_gpu_hours", 2.0,
            "not in the allocation registry: acct-y 2.0 h",
        ),
    ]  # fmt: skip
    assert out.schema == pl.Schema(DATA_QUALITY_SCHEMA)


def test_unattributed_gpu_hours_without_a_registry_say_so() -> None:
    """No registry file: the same hours, the detail names the missing file."""
    out = unattributed_gpu_hours(
        _jobs_for_attribution().lazy(), unattributed="unattributed", missing_registry="reg.yaml"
    ).collect()
    assert out.sort("day").select("value", "detail").rows() == [
        (10.5, "no allocation registry (reg.yaml not found): no GPU-hour counts for a team"),
        (2.0, "no allocation registry (reg.yaml not found): no GPU-hour counts for a team"),
    ]
