"""Time limits far above elapsed time: partition DefaultTime / MaxTime, and who to ask.

Backfill plans with time limits, not runtimes: a job that asks for 2 days and runs 2 hours
blocks a reservation for 2 days and cannot slip into a 3-hour hole [Tsafrir, Etsion & Feitelson,
"Backfilling using system-generated predictions rather than user runtime estimates", IEEE TPDS
18(6), 2007]. Per Slurm partition, over attempts that ran to completion (``COMPLETED``): ratio =
run ÷ time limit; when the median ratio is below ``max_median_ratio`` the partition gets

- ``DefaultTime`` = the nearest-rank ``percentile`` run, rounded up to a standard duration
  (1 h, 2 h, 4 h, 8 h, 12 h, 1-3 d, 7 d, 14 d), for jobs that set no ``--time``;
- ``MaxTime`` = the longest completed run × 1.1, rounded up the same way, when that is below the
  longest limit seen (no completed job would have been cut);

and the users with the most over-requested GPU-hours (Σ GPUs × (limit − run)) are named. With
``nodes``, the recorded jobs are replayed through :mod:`metrics.scheduler_model` with each
completed job's limit lowered to min(limit, MaxTime, standard duration ≥ ``headroom`` × run)
(users following the advice) against the recorded limits: the mean-wait difference is the
expected wait reduction (an upper bound: not every user will follow). When the replay shows no
reduction, the field is None, the recommendation is ``info`` and the text says so.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    grade,
    ladder_ceil,
    nearest_rank_value,
    scope_key,
    slurm_duration,
    to_frame,
)
from metrics.scheduler_model import (
    SchedulerSettings,
    SimJob,
    jobs_from_frame,
    nodes_from_frame,
    simulate,
    wait_summary,
)
from metrics.waterfall import base_state

__all__ = ["RULE", "time_limits"]

RULE = "time_limits"


def time_limits(
    attempts: pl.LazyFrame | pl.DataFrame,
    window: Window,
    *,
    nodes: pl.DataFrame | None = None,
    settings: SchedulerSettings | Mapping[str, SchedulerSettings] | None = None,
    max_median_ratio: float = 0.3,
    min_jobs: int = 20,
    percentile: float = 0.95,
    headroom: float = 1.5,
    top_n: int = 5,
    current_max_time_s: Mapping[str, float] | None = None,
) -> pl.DataFrame:
    """DefaultTime / MaxTime recommendations per Slurm partition.

    Args:
        attempts: the ``jobs`` view (``source, cluster, job_id, attempt, partition, qos,
            user_name, state, gpus, eligible_at, start_at, end_at, run_s, timelimit_s``).
        window: the period considered.
        nodes: ``cluster, host, partition, gpus``; enables the replay.
        settings: the scheduler settings of the replay: one for every cluster, or cluster →
            its settings in force (a cluster absent: Slurm's defaults); default Slurm's. The
            evidence's ``replay.settings`` states those used.
        max_median_ratio: a partition whose median run ÷ limit is below this fires.
        min_jobs: completed GPU attempts with a limit a partition needs.
        percentile: the run percentile that sets DefaultTime.
        headroom: the replay's limits are a standard duration ≥ headroom × run.
        top_n: users named.
        current_max_time_s: partition → current MaxTime (default: the longest limit seen).

    Returns:
        One recommendation per flagged (cluster, partition), patch kind ``slurm.conf``.
        Confidence = min(1, jobs ÷ (5 · min_jobs)); severity critical below half the ratio.
    """
    frame = attempts.lazy().collect()
    done = frame.filter(
        (pl.col("source") == "slurm")
        & (pl.col("gpus").fill_null(0) > 0)
        & (pl.col("timelimit_s").fill_null(0) > 0)
        & pl.col("run_s").is_not_null()
        & (base_state() == "COMPLETED")
    ).with_columns(
        (pl.col("run_s") / pl.col("timelimit_s")).alias("_ratio"),
        (pl.col("gpus") * (pl.col("timelimit_s") - pl.col("run_s")).clip(lower_bound=0.0)).alias(
            "_over_gpu_s"
        ),
    )
    stats = (
        done.group_by("cluster", "partition")
        .agg(
            pl.len().alias("jobs"),
            pl.col("_ratio").median().alias("median_ratio"),
            pl.col("run_s").max().alias("max_run_s"),
            pl.col("_over_gpu_s").sum().alias("over_gpu_s"),
        )
        .filter((pl.col("jobs") >= min_jobs) & (pl.col("median_ratio") < max_median_ratio))
        .sort("cluster", "partition")
    )
    recs = []
    for s in stats.iter_rows(named=True):
        cluster, partition = str(s["cluster"]), str(s["partition"])
        mine = done.filter((pl.col("cluster") == cluster) & (pl.col("partition") == partition))
        all_limits = frame.filter(
            (pl.col("cluster") == cluster) & (pl.col("partition") == partition)
        )["timelimit_s"].drop_nulls()
        longest_limit = float(all_limits.max() or 0.0)  # type: ignore[arg-type]
        cur_max = (current_max_time_s or {}).get(partition, longest_limit)
        p_run = nearest_rank_value(mine["run_s"].to_list(), percentile) or 0.0
        default_s = ladder_ceil(p_run)
        max_s = ladder_ceil(float(s["max_run_s"]) * 1.1)
        settings_line = f"PartitionName={partition} DefaultTime={slurm_duration(default_s)}"
        lower_max = max_s < cur_max
        if lower_max:
            settings_line += f" MaxTime={slurm_duration(max(max_s, default_s))}"
        users = (
            mine.group_by("user_name")
            .agg(
                pl.len().alias("jobs"),
                pl.col("_ratio").median().alias("median_ratio"),
                pl.col("_over_gpu_s").sum().alias("over_gpu_s"),
            )
            .sort(["over_gpu_s", "user_name"], descending=[True, False])
            .head(top_n)
        )
        named = [
            {
                "user": u["user_name"],
                "jobs": int(u["jobs"]),
                "median_run_to_limit": float(u["median_ratio"]),
                "over_requested_gpu_h_per_week": float(u["over_gpu_s"]) / 3600 / window.weeks,
            }
            for u in users.iter_rows(named=True)
        ]
        evidence: dict[str, object] = {
            "partition": partition,
            "completed_jobs": int(s["jobs"]),
            "median_run_to_limit": float(s["median_ratio"]),
            f"p{round(percentile * 100)}_run_s": p_run,
            "max_run_s": float(s["max_run_s"]),
            "longest_limit_s": longest_limit,
            "current_max_time_s": cur_max,
            "proposed_default_time_s": default_s,
            "proposed_max_time_s": max(max_s, default_s) if lower_max else None,
            "over_requested_gpu_h_per_week": float(s["over_gpu_s"]) / 3600 / window.weeks,
            "users": named,
        }
        reduction = None
        if isinstance(settings, SchedulerSettings):
            in_force = settings
        else:
            in_force = (settings or {}).get(cluster) or SchedulerSettings()
        if nodes is not None:
            reduction = _replay_gain(
                frame.filter((pl.col("cluster") == cluster) & (pl.col("partition") == partition)),
                nodes.filter((pl.col("cluster") == cluster) & (pl.col("partition") == partition)),
                window,
                in_force,
                cap_s=max(max_s, default_s) if lower_max else None,
                headroom=headroom,
                evidence=evidence,
            )
        replay_note = ""
        if reduction is not None and reduction <= 0:
            replay_note = (
                f" The replay under the current backfill settings shows no wait reduction "
                f"({reduction / 3600:+.1f} h mean), so expect the gain in backfill accuracy "
                "rather than in waits."
            )
            reduction = None
        who = ", ".join(
            f"{u['user']} (median run/limit {u['median_run_to_limit']:.2f})" for u in named
        )
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=cluster,
                scope=scope_key(cluster=cluster, partition=partition),
                severity="info"
                if replay_note
                else grade(max_median_ratio - float(s["median_ratio"]), 0.0, max_median_ratio / 2),
                window=window,
                evidence=evidence,
                change_text=(
                    f"Jobs in partition {partition} run a median {float(s['median_ratio']):.0%} "
                    f"of their time limit ({int(s['jobs'])} completed GPU jobs), so backfill "
                    f"plans with limits far above reality. Set DefaultTime="
                    f"{slurm_duration(default_s)} (p{round(percentile * 100)} run)"
                    + (
                        f" and MaxTime={slurm_duration(max(max_s, default_s))} (longest run × 1.1)"
                        if lower_max
                        else ""
                    )
                    + f", and ask the users with the most over-requested GPU-hours to set "
                    f"--time closer to their runs: {who}." + replay_note
                ),
                confidence=min(1.0, int(s["jobs"]) / (5 * min_jobs)),
                expected_wait_reduction_s=reduction,
                patch_kind="slurm.conf",
                patch_content=settings_line,
            )
        )
    return to_frame(recs) if recs else empty_recommendations()


def _replay_gain(
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    window: Window,
    settings: SchedulerSettings,
    *,
    cap_s: float | None,
    headroom: float,
    evidence: dict[str, object],
) -> float | None:
    sim_nodes = nodes_from_frame(nodes)
    gpu_jobs = jobs.filter(pl.col("gpus").fill_null(0) > 0)
    if not sim_nodes or gpu_jobs.height == 0:
        return None
    recorded = jobs_from_frame(gpu_jobs, window.end)
    completed = set(
        gpu_jobs.filter(base_state() == "COMPLETED")
        .select(
            pl.when(pl.col("attempt").fill_null(0) > 0)
            .then(pl.col("job_id") + "#" + pl.col("attempt").cast(pl.String))
            .otherwise(pl.col("job_id"))
        )
        .to_series()
        .to_list()
    )
    advised: list[SimJob] = []
    for j in recorded:
        limit = j.limit_s
        if j.job_id in completed:
            limit = min(limit, float(ladder_ceil(headroom * max(j.runtime_s, 1.0))))
        if cap_s is not None:
            limit = min(limit, cap_s)
        advised.append(
            SimJob(
                j.job_id,
                j.partition,
                j.gpus,
                j.eligible_s,
                j.runtime_s,
                max(limit, 1.0),
                j.priority,
                j.cancel_s,
            )
        )
    horizon = window.end.timestamp()
    before = wait_summary(simulate(sim_nodes, recorded, settings, horizon_s=horizon), recorded)
    after = wait_summary(simulate(sim_nodes, advised, settings, horizon_s=horizon), advised)
    evidence["replay"] = {
        "jobs": before["jobs"],
        "mean_wait_s_recorded_limits": before["mean_wait_s"],
        "mean_wait_s_advised_limits": after["mean_wait_s"],
        "p90_wait_s_recorded_limits": before["p90_wait_s"],
        "p90_wait_s_advised_limits": after["p90_wait_s"],
        "assumption": f"completed jobs' limits lowered to a standard duration ≥ {headroom:g} × run",
        "settings": {
            "bf_window_s": settings.bf_window_s,
            "bf_resolution_s": settings.bf_resolution_s,
            "bf_max_job_test": settings.bf_max_job_test,
            "bf_min_age_reserve_s": settings.bf_min_age_reserve_s,
        },
    }
    return before["mean_wait_s"] - after["mean_wait_s"]
