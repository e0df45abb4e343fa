"""Data-quality checks on literal frames."""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics.data_quality import (
    DATA_QUALITY_SCHEMA,
    admitted_without_pods,
    gpu_tracking_gaps,
    open_attempts_ended_by_requeue,
    runaway_running_attempts,
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
    """Cluster c, cut-off 11-03 02:00 UTC. Unattributed: acct-x 2 GPUs 05:00-08:00 and 1 GPU
    10:00-12:00 on 11-01 (8 GPU-h); acct-y and acct-z 1 GPU 05:00-06:00 (1 h each); acct-w 1
    GPU 05:00-05:30 (0.5 h); acct-s 1 GPU 11-01 22:00 to 11-02 01:00 (2 h on 11-01, 1 h on
    11-02); acct-y 2 GPUs from 11-02 23:00, still running (2 GPU-h on 11-02, 4 on 11-03 up to
    the cut-off); acct-q 1 GPU from 11-03 00:00, its end 11-04 05:00 past the cut-off (2 GPU-h
    on 11-03, none after the cut-off); a CPU job of acct-v and a pending one of acct-u (no GPU
    time). Team t's 4 GPU-h are attributed."""
    utc = dt.UTC

    def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
        return dt.datetime(2026, 11, day, hour, minute, tzinfo=utc)

    rows = [
        ("unattributed", "acct-x", 2.0, at(1, 5), at(1, 8)),
        ("unattributed", "acct-x", 1.0, at(1, 10), at(1, 12)),
        ("unattributed", "acct-y", 1.0, at(1, 5), at(1, 6)),
        ("unattributed", "acct-z", 1.0, at(1, 5), at(1, 6)),
        ("unattributed", "acct-w", 1.0, at(1, 5), at(1, 5, 30)),
        ("unattributed", "acct-s", 1.0, at(1, 22), at(2, 1)),
        ("unattributed", "acct-y", 2.0, at(2, 23), None),
        ("unattributed", "acct-q", 1.0, at(3, 0), at(4, 5)),
        ("unattributed", "acct-v", 0.0, at(1, 5), at(1, 9)),
        ("unattributed", "acct-u", 8.0, None, None),
        ("t", "acct-t", 4.0, at(1, 5), at(1, 6)),
    ]
    return pl.DataFrame(
        [("c", *r, at(3, 2)) for r in rows],
        schema={
            "cluster": pl.String(),
            "team": pl.String(),
            "account": pl.String(),
            "gpus": pl.Float64(),
            "start_at": pl.Datetime("us", "UTC"),
            "end_at": pl.Datetime("us", "UTC"),
            "as_of": pl.Datetime("us", "UTC"),
        },
        orient="row",
    )


def test_unattributed_gpu_hours_per_cluster_day_name_the_largest_accounts() -> None:
    """11-01: 8 + 2 + 1 + 1 + 0.5 = 12.5 GPU-h, the three largest accounts named (acct-y
    before acct-z at 1 h each: by name), 2 more. 11-02: acct-y 2 + acct-s 1 = 3 GPU-h (the
    running attempt and the one across midnight split at it). 11-03: the running attempt's 4
    GPU-h and acct-q's 2 up to the cut-off, and no row for 11-04 (after it). The CPU and
    pending jobs and team t's hours are not counted."""
    out = unattributed_gpu_hours(
        _jobs_for_attribution().lazy(), unattributed="unattributed"
    ).collect()
    assert out.sort("day").rows() == [
        (
            "c", dt.date(2026, 11, 1), None, "unattributed_gpu_hours", 12.5,
            "not in the allocation registry: acct-x 8.0 h, acct-s 2.0 h, acct-y 1.0 h and 2 more",
        ),
        (
            "c", dt.date(2026, 11, 2), None, "unattributed_gpu_hours", 3.0,
            "not in the allocation registry: acct-y 2.0 h, acct-s 1.0 h",
        ),
        (
            "c", dt.date(2026, 11, 3), None, "unattributed_gpu_hours", 6.0,
            "not in the allocation registry: acct-y 4.0 h, acct-q 2.0 h",
        ),
    ]  # fmt: skip
    assert out.schema == pl.Schema(DATA_QUALITY_SCHEMA)


def test_unattributed_gpu_hours_without_a_registry_say_so() -> None:
    """No registry file: the same hours, the detail names the missing file."""
    out = unattributed_gpu_hours(
        _jobs_for_attribution().lazy(), unattributed="unattributed", missing_registry="reg.yaml"
    ).collect()
    missing = "no allocation registry (reg.yaml not found): no GPU-hour counts for a team"
    assert out.sort("day").select("value", "detail").rows() == [
        (12.5, missing),
        (3.0, missing),
        (6.0, missing),
    ]


def test_open_attempts_ended_by_requeue_are_counted_per_day_of_their_end() -> None:
    """Two inferred ends on 11-01 (one at 23:59:59 UTC) and one on 11-02 in partition gpu: counts
    2 and 1; an attempt whose end sacct gave (false) and one with no flag (NULL) are none."""
    utc = dt.UTC
    att = pl.DataFrame(
        {
            "cluster": ["c"] * 5,
            "partition": ["gpu"] * 5,
            "end_at": [
                dt.datetime(2026, 11, 1, 23, tzinfo=utc),
                dt.datetime(2026, 11, 1, 23, 59, 59, tzinfo=utc),
                dt.datetime(2026, 11, 2, 0, tzinfo=utc),
                dt.datetime(2026, 11, 1, 23, tzinfo=utc),
                None,
            ],
            "end_inferred": [True, True, True, False, None],
        }
    )
    out = open_attempts_ended_by_requeue(att.lazy()).collect().sort("day")
    assert out.schema == pl.Schema(DATA_QUALITY_SCHEMA)
    assert out.select("day", "partition", "check", "value").rows() == [
        (dt.date(2026, 11, 1), "gpu", "open_attempts_ended_by_requeue", 2.0),
        (dt.date(2026, 11, 2), "gpu", "open_attempts_ended_by_requeue", 1.0),
    ]


def test_runaway_attempts_are_one_finding_per_cluster_naming_the_largest() -> None:
    """Cluster c: five runaways (an inferred end, state as printed) and one requeue end (state
    REQUEUED, not a runaway); cluster d: none. By hand, recorded = GPUs × Elapsed, counted =
    gpu_s, GPU-h: job 1 8 × 360,000 / 3,600 = 800.00 recorded, 28,800 / 3,600 = 8.00 counted;
    job 2 2 × 72,000 / 3,600 = 40.00, 7,200 / 3,600 = 2.00; job 3 1.5 × 36,000 / 3,600 =
    15.00, 5,400 / 3,600 = 1.50; jobs 4 and 5 1 × 3,601 … = 1.00 (3,601 / 3,600 = 1.0003),
    counted 1 × 10 / 3,600 = 0.0028 → 0.00. Sums: 800 + 40 + 15 + 1.0003 × 2 = 857.0006 →
    857.00 recorded; 8 + 2 + 1.5 + 0.0056 = 11.5056 → 11.51 counted. The three largest named
    (jobs 1, 2, 3), 2 more; the requeue's in the requeue finding alone."""
    att = pl.DataFrame(
        {
            "cluster": ["c"] * 6 + ["d"],
            "partition": ["gpu"] * 7,
            "job_id": ["2", "1", "5", "3", "4", "9", "7"],
            "state": ["RUNNING"] * 5 + ["REQUEUED", "COMPLETED"],
            "gpus": [2.0, 8.0, 1.0, 1.5, 1.0, 4.0, 4.0],
            "gpu_s": [7200.0, 28800.0, 10.0, 5400.0, 10.0, 3600.0, 3600.0],
            "elapsed_s": [72_000, 360_000, 3_601, 36_000, 3_601, 900, 3600],
            "end_at": [dt.datetime(2026, 11, 1, tzinfo=dt.UTC)] * 7,
            "end_inferred": [True] * 6 + [False],
        }
    )
    out = runaway_running_attempts(att.lazy()).collect()
    assert out.schema == pl.Schema(DATA_QUALITY_SCHEMA)
    ((cluster, day, part, check, value, detail),) = out.rows()
    assert (cluster, day, part, check, value) == ("c", None, None, "runaway_running_attempts", 5.0)
    assert "11.51 of 857.00 recorded GPU-h" in detail
    assert detail.endswith(
        "job 1 (8 GPUs): 800.00 recorded, 8.00 counted; job 2 (2 GPUs): 40.00 recorded, 2.00"
        " counted; job 3 (1.5 GPUs): 15.00 recorded, 1.50 counted; and 2 more"
    )
    assert "sacctmgr show runawayjobs" in detail
    requeue = open_attempts_ended_by_requeue(att.lazy()).collect()
    assert requeue.select("cluster", "value").rows() == [("c", 1.0)]


def test_a_requeued_runaway_is_in_the_finding_of_the_rule_that_ended_it() -> None:
    """Three attempts with an inferred end, all state REQUEUED (a later record of their job),
    each running more than 1 h past its limit by its Elapsed (a runaway), resolved as
    ``resolve_slurm_jobs`` does (end = the earlier of requeue and start + limit + 1 h):

    - job 80 attempt 0: 4 GPUs, 00:00, limit 3,600 s, Elapsed 36,000 s, requeue 02:30; cap
      00:00 + 3,600 + 3,600 s = 02:00 < 02:30: ended by the cap, gpu_s 4 × 7,200 = 28,800;
    - job 80 attempt 1: 4 GPUs, 03:00, limit 3,600 s, Elapsed 25,200 s, requeue 09:00; cap
      05:00 < 09:00: ended by the cap, gpu_s 28,800;
    - job 90: 1 GPU, 00:00, limit 18,000 s, Elapsed 36,000 s (> 18,000 + 3,600), requeue 03:00
      < cap 06:00: ended by its requeue, gpu_s 10,800.

    Runaway finding: 2 attempts (job 80's), counted 2 × 28,800 / 3,600 = 16.00 GPU-h, recorded
    4 × 36,000 / 3,600 + 4 × 25,200 / 3,600 = 40 + 28 = 68.00 GPU-h; the requeue finding: 1
    (job 90; job 80's attempts did not end at their requeue). Before, the runaway finding was
    absent and the requeue finding counted 3."""
    utc = dt.UTC
    att = pl.DataFrame(
        {
            "cluster": ["c"] * 3,
            "partition": ["gpu"] * 3,
            "job_id": ["80", "80", "90"],
            "state": ["REQUEUED"] * 3,
            "gpus": [4.0, 4.0, 1.0],
            "gpu_s": [28_800.0, 28_800.0, 10_800.0],
            "elapsed_s": [36_000, 25_200, 36_000],
            "timelimit_s": [3_600, 3_600, 18_000],
            "start_at": [
                dt.datetime(2026, 11, 1, 0, tzinfo=utc),
                dt.datetime(2026, 11, 1, 3, tzinfo=utc),
                dt.datetime(2026, 11, 1, 0, tzinfo=utc),
            ],
            "end_at": [
                dt.datetime(2026, 11, 1, 2, tzinfo=utc),
                dt.datetime(2026, 11, 1, 5, tzinfo=utc),
                dt.datetime(2026, 11, 1, 3, tzinfo=utc),
            ],
            "end_inferred": [True] * 3,
        }
    )
    runaway = runaway_running_attempts(att.lazy()).collect()
    assert runaway.select("cluster", "value").rows() == [("c", 2.0)]
    assert "16.00 of 68.00 recorded GPU-h" in runaway["detail"][0]
    requeue = open_attempts_ended_by_requeue(att.lazy()).collect()
    assert requeue.select("cluster", "day", "value").rows() == [("c", dt.date(2026, 11, 1), 1.0)]
