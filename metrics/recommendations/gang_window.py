"""Drain-for-gang window: where fragmentation, not quota, holds large jobs, set one topology
domain aside for them each day.

Evidence is ``large_job_wait_causes`` (METRICS.md "Domain capacity, stranded GPUs and large-job
waits"): large jobs eligible in the window, their fragmentation delay (enough free GPUs by count,
no placement in one domain) and the free GPU-hours that sat idle meanwhile. When fragmentation is
at least ``min_share`` of their wait, the rule proposes a daily Slurm reservation
[scontrol(1), ``create reservation … Flags=DAILY``] over the healthiest domain of the gang level,
from the UTC hour when most fragmentation delay began (``StartTime`` its next occurrence after
the window, in slurmctld's zone), for the Slurm accounts whose large jobs waited on topology:
small jobs stop refilling that domain, so a gang finds it whole.

Expected gain = the GPU-hours per week the blocked large jobs were kept from running by topology
(Σ GPUs asked × fragmentation delay), at most what the reserved domain offers in its windows
(healthy GPUs × hours × 7); expected wait reduction = the mean fragmentation delay per large job.
The idle GPU-hours while blocked are evidence only: jobs blocked at the same time count the same
free GPUs. Not replay-checked (the shared scheduler model has no topology).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from zoneinfo import ZoneInfo

import polars as pl

from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    grade,
    scope_key,
    to_frame,
)

__all__ = ["RULE", "gang_window"]

RULE = "gang_drain_window"


def gang_window(
    causes: pl.LazyFrame | pl.DataFrame,
    domains: pl.LazyFrame | pl.DataFrame,
    window: Window,
    schedulers: dict[str, str],
    *,
    min_share: float = 0.3,
    min_jobs: int = 3,
    min_mean_fragmentation_s: float = 3600.0,
    hours: int = 4,
    jobs: pl.DataFrame | None = None,
    timezones: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """One reservation per Slurm cluster whose large jobs waited mostly on topology.

    Args:
        causes: ``large_job_wait_causes`` rows of the window (``cluster, job_id, team,
            req_gpus, eligible_at, wait_s, quota_s, priority_s, fragmentation_s,
            blocked_idle_gpu_s``).
        domains: ``cluster, domain, healthy_nodes, healthy_gpus, nodes_list`` (comma-separated
            hosts) of each cluster's gang level at its last hour.
        window: the period the evidence covers.
        schedulers: cluster → ``slurm`` | ``kubernetes`` (only Slurm clusters get a patch).
        min_share: fragmentation ÷ wait at or above which the rule fires.
        min_jobs: large jobs with fragmentation delay, at least.
        min_mean_fragmentation_s: mean fragmentation delay per large job, at least (seconds).
        hours: the reservation's daily duration.
        jobs: ``cluster, job_id, account`` (the ``jobs`` view): the reservation's
            ``Accounts=`` are the Slurm accounts of the blocked large jobs. Without it (or for
            a job without an account) their teams stand in, and the evidence says so.
        timezones: cluster → IANA zone of slurmctld (default UTC): ``StartTime`` is the next
            start hour after the window's end, written in that zone (scontrol reads local
            time), so the daily window starts at the hour the evidence chose.

    Returns:
        :data:`~metrics.recommendations.RECOMMENDATION_SCHEMA` rows; severity by the
        fragmentation share (warning from ``min_share``, critical from twice it).
    """
    c = causes.lazy().collect()
    d = domains.lazy().collect()
    if c.height == 0 or d.height == 0:
        return empty_recommendations()
    if jobs is not None and {"cluster", "job_id", "account"} <= set(jobs.columns):
        acct = (
            jobs.select("cluster", "job_id", "account")
            .drop_nulls("account")
            .unique(["cluster", "job_id"], keep="first")
        )
        c = c.join(acct, on=["cluster", "job_id"], how="left")
    else:
        c = c.with_columns(pl.lit(None, dtype=pl.String()).alias("account"))
    c = c.with_columns(
        pl.col("account").is_null().alias("_team_for_account"),
        pl.coalesce("account", "team").alias("account"),
    )
    per = (
        c.filter(pl.col("cluster").is_in([k for k, v in schedulers.items() if v == "slurm"]))
        .group_by("cluster")
        .agg(
            pl.len().alias("jobs"),
            (pl.col("fragmentation_s") > 0).sum().alias("blocked_jobs"),
            pl.col("wait_s").sum(),
            pl.col("fragmentation_s").sum(),
            pl.col("quota_s").sum(),
            pl.col("blocked_idle_gpu_s").sum(),
            (pl.col("req_gpus") * pl.col("fragmentation_s")).sum().alias("_delayed_gpu_s"),
            pl.col("team").filter(pl.col("fragmentation_s") > 0).unique().sort().alias("teams"),
            pl.col("account")
            .filter(pl.col("fragmentation_s") > 0)
            .unique()
            .sort()
            .alias("accounts"),
            pl.col("_team_for_account").filter(pl.col("fragmentation_s") > 0).any().alias("_tfa"),
            pl.col("eligible_at")
            .filter(pl.col("fragmentation_s") > 0)
            .dt.hour()
            .mode()
            .min()
            .alias("start_hour"),
        )
        .filter(pl.col("wait_s") > 0)
        .with_columns((pl.col("fragmentation_s") / pl.col("wait_s")).alias("share"))
        .filter(
            (pl.col("share") >= min_share)
            & (pl.col("blocked_jobs") >= min_jobs)
            & (pl.col("fragmentation_s") / pl.col("jobs") >= min_mean_fragmentation_s)
        )
        .sort("cluster")
    )
    best = d.sort("cluster", "healthy_nodes", "domain", descending=[False, True, False]).group_by(
        "cluster", maintain_order=True
    ).first()  # fmt: skip
    recs = []
    for r in per.join(best, on="cluster").iter_rows(named=True):
        cluster, domain = str(r["cluster"]), str(r["domain"])
        share = float(r["share"])
        mean_frag = float(r["fragmentation_s"]) / int(r["jobs"])
        idle_h = float(r["blocked_idle_gpu_s"]) / 3600
        delayed_h = float(r["_delayed_gpu_s"]) / 3600
        cap_h = float(r["healthy_gpus"]) * hours * 7
        gain = min(delayed_h / window.weeks, cap_h)
        accounts = ",".join(r["accounts"])
        hour = int(r["start_hour"] or 0)
        # The next {hour}:00 UTC after the window, in slurmctld's local time.
        end = window.end.astimezone(dt.UTC)
        nxt = end.replace(hour=hour, minute=0, second=0, microsecond=0)
        if nxt <= end:
            nxt += dt.timedelta(days=1)
        local = nxt.astimezone(ZoneInfo((timezones or {}).get(cluster, "UTC")))
        content = (
            f"scontrol create reservation ReservationName=goodput_gang_{domain} "
            f"StartTime={local.strftime('%Y-%m-%dT%H:%M:%S')} Duration={hours:02d}:00:00 "
            f"Flags=DAILY Nodes={r['nodes_list']} Accounts={accounts}"
        )
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=cluster,
                scope=scope_key(cluster=cluster, domain=domain),
                severity=grade(share, min_share, 2 * min_share),
                window=window,
                evidence={
                    "large_jobs": int(r["jobs"]),
                    "blocked_jobs": int(r["blocked_jobs"]),
                    "wait_h": float(r["wait_s"]) / 3600,
                    "fragmentation_h": float(r["fragmentation_s"]) / 3600,
                    "quota_h": float(r["quota_s"]) / 3600,
                    "fragmentation_share": share,
                    "blocked_idle_gpu_h": idle_h,
                    "delayed_gpu_h": delayed_h,
                    "window_gpu_h_per_week": cap_h,
                    "domain": domain,
                    "healthy_trays": int(r["healthy_nodes"]),
                    "start_hour_utc": hour,
                    "accounts": list(r["accounts"]),
                    "teams": list(r["teams"]),
                    "accounts_from_teams": bool(r["_tfa"]),
                },
                change_text=(
                    f"Large jobs on {cluster} waited {share:.0%} of their time for topology "
                    f"(enough free GPUs, no domain with room; {mean_frag / 3600:.1f} h a job, "
                    f"{idle_h:.0f} GPU-h idle meanwhile). Reserve domain {domain} "
                    f"({int(r['healthy_nodes'])} healthy trays) daily for {hours} h from "
                    f"{hour:02d}:00 UTC for {accounts}, so small jobs stop refilling it."
                ),
                confidence=min(1.0, int(r["blocked_jobs"]) / (2 * min_jobs)),
                expected_gain_gpu_h_per_week=gain,
                expected_wait_reduction_s=mean_frag,
                patch_kind="scontrol",
                patch_content=content,
            )
        )
    return to_frame(recs) if recs else empty_recommendations()
