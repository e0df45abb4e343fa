"""Idle allocations: teams that hold GPUs they do not use.

Per team (and per user within it), over the window: observed GPU-seconds = Σ over the
allocation's 5-minute activity buckets of min(GPUs in the sample, allocated GPUs) × the bucket's
overlap with the allocation; idle GPU-seconds = those of buckets with mean activity < θ (METRICS.md
``allocated_idle``, θ = 0.05; here over every allocated attempt, whatever its outcome). idle share
= idle ÷ observed. A team with idle share ≥ ``min_idle_share`` and at least
``min_idle_gpu_h_per_week`` idle GPU-hours a week gets an idle-job policy and, on Slurm, a cap
on the account's concurrent GPUs at its p95 *active* GPUs (allocated − idle, per hour) rounded
up to whole nodes, and never below the team's entitlement, ⌈registry share × the cluster's GPUs⌉
(METRICS.md Fairness: a cap below it would deny the team its fair part when it has work):
``sacctmgr -i modify account name=<a> set GrpTRES=gres/gpu=<N>`` [sacctmgr(1), GrpTRES]. The
recoverable GPU-hours are the idle ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import polars as pl

from metrics._helpers import seconds_between
from metrics.holds import with_pieces
from metrics.recommendations._model import (
    Recommendation,
    Window,
    ceil_to,
    empty_recommendations,
    grade,
    nearest_rank_value,
    scope_key,
    to_frame,
)
from metrics.waterfall import _hour_pieces, _utc_lit

__all__ = ["RULE", "idle_allocations"]

RULE = "idle_allocations"
_FIVE_MIN = pl.duration(minutes=5)


def _spans(
    attempts: pl.LazyFrame, window: Window, holds: pl.LazyFrame | None = None
) -> pl.LazyFrame:
    """One row per piece of GPUs each attempt held (:func:`metrics.holds.with_pieces`) cut to
    ``window``: ``gpus`` its GPUs, ``[_from, _to)`` its part in the window."""
    w0, w1 = _utc_lit(window.start), _utc_lit(window.end)
    return (
        with_pieces(attempts.filter(pl.col("gpus").fill_null(0) > 0), holds)
        .filter(pl.col("_pg") > 0)
        .with_columns(
            pl.coalesce(pl.col("user_name"), pl.col("account"), pl.lit("(unknown)")).alias("_user"),
            pl.coalesce(pl.col("account"), pl.col("team")).alias("_account"),
            pl.col("_pg").alias("gpus"),
            pl.max_horizontal(pl.col("_ps"), w0).alias("_from"),
            pl.min_horizontal(pl.col("_pe").fill_null(w1), w1).alias("_to"),
        )
        .filter(pl.col("_to") > pl.col("_from"))
    )


def idle_allocations(
    attempts: pl.LazyFrame | pl.DataFrame,
    activity: pl.LazyFrame | pl.DataFrame,
    window: Window,
    *,
    idle_threshold: float = 0.05,
    min_idle_share: float = 0.5,
    min_idle_gpu_h_per_week: float = 50.0,
    gpus_per_node: int = 8,
    top_n: int = 5,
    shares: Mapping[str, float] | None = None,
    pool_gpus: Mapping[str, float] | None = None,
    holds: pl.LazyFrame | None = None,
) -> pl.DataFrame:
    """Idle-allocation recommendations per cluster and team.

    Args:
        attempts: the ``jobs`` view (``source, cluster, job_id, attempt, team, account,
            user_name, gpus, start_at, end_at``).
        activity: mean GPU activity per attempt and 5-minute bucket: ``cluster, job_id,
            attempt, bucket, activity, gpus`` (GPUs seen in the bucket).
        window: the period considered; allocations are cut to it.
        idle_threshold: θ: a bucket with mean activity below it is idle.
        min_idle_share: idle ÷ observed at or above which a team is flagged.
        min_idle_gpu_h_per_week: and at least this many idle GPU-hours a week.
        gpus_per_node: the cap is rounded up to whole nodes of this size.
        top_n: users named as top offenders.
        shares: team → registry entitlement share (fraction of the pool).
        pool_gpus: cluster → its GPUs; with ``shares``, the cap is at least
            ⌈share × pool GPUs⌉ (the team's entitlement).
        holds: the pieces of held GPUs of the attempts that did not hold ``gpus`` over their
            span (:func:`metrics.holds.with_pieces`): allocated and observed GPU-seconds are
            of each piece (observed GPUs capped at the piece's), as the waterfall counts them
            (METRICS.md "GPU holding"); None: every attempt holds ``gpus`` over its span.

    Returns:
        One recommendation per flagged (cluster, team). Gain = idle GPU-hours a week;
        confidence = telemetry coverage (observed ÷ allocated GPU-seconds); severity critical
        at 4× the GPU-hour floor. Slurm teams get a ``sacctmgr`` patch when the cap is below
        their p95 allocated GPUs; Kubernetes teams get the policy text only.
    """
    spans = _spans(attempts.lazy(), window, holds)
    b = pl.col("bucket").dt.cast_time_unit("us")
    joined = (
        activity.lazy()
        .filter(pl.col("activity").is_not_null())
        .select(
            "cluster",
            "job_id",
            "attempt",
            b.alias("bucket"),
            "activity",
            pl.col("gpus").cast(pl.Float64).alias("_obs_gpus"),
        )
        .join(
            spans.select(
                "cluster",
                "job_id",
                "attempt",
                "source",
                "team",
                "_account",
                "_user",
                pl.col("gpus").alias("_gpus"),
                "_from",
                "_to",
            ),
            on=["cluster", "job_id", "attempt"],
            how="inner",
        )
        .with_columns(
            seconds_between(
                pl.min_horizontal(pl.col("bucket") + _FIVE_MIN, pl.col("_to")),
                pl.max_horizontal(pl.col("bucket"), pl.col("_from")),
            )
            .clip(lower_bound=0.0)
            .alias("_s"),
            pl.min_horizontal(
                pl.col("_obs_gpus").fill_null(pl.col("_gpus")), pl.col("_gpus")
            ).alias("_g"),
            (pl.col("activity") < idle_threshold).alias("_idle"),
        )
        .with_columns((pl.col("_s") * pl.col("_g")).alias("_obs_gpu_s"))
        .with_columns(
            pl.when(pl.col("_idle")).then(pl.col("_obs_gpu_s")).otherwise(0.0).alias("_idle_gpu_s")
        )
    ).collect()
    allocated = (
        spans.with_columns(
            (seconds_between(pl.col("_to"), pl.col("_from")) * pl.col("gpus")).alias("_alloc")
        )
        .group_by("cluster", "team")
        .agg(
            pl.col("_alloc").sum().alias("allocated_gpu_s"),
            pl.col("source").first().alias("source"),
        )
        .collect()
    )
    teams = (
        joined.group_by("cluster", "team")
        .agg(
            pl.col("_obs_gpu_s").sum().alias("observed_gpu_s"),
            pl.col("_idle_gpu_s").sum().alias("idle_gpu_s"),
        )
        .join(allocated, on=["cluster", "team"], how="left")
        .with_columns((pl.col("idle_gpu_s") / pl.col("observed_gpu_s")).alias("idle_share"))
        .filter(
            (pl.col("observed_gpu_s") > 0)
            & (pl.col("idle_share") >= min_idle_share)
            & (pl.col("idle_gpu_s") / 3600 / window.weeks >= min_idle_gpu_h_per_week)
        )
        .sort("cluster", "team")
    )
    if teams.height == 0:
        return empty_recommendations()
    users = joined.group_by("cluster", "team", "_user").agg(
        pl.col("_obs_gpu_s").sum().alias("observed_gpu_s"),
        pl.col("_idle_gpu_s").sum().alias("idle_gpu_s"),
        pl.col("job_id").n_unique().alias("jobs"),
    )
    # Hourly allocated and idle GPU-seconds per account, for the cap.
    alloc_h = (
        _hour_pieces(spans, "_from", "_to")
        .group_by("cluster", "team", "_account", "hour")
        .agg((pl.col("_sec") * pl.col("gpus")).sum().alias("_alloc_s"))
        .collect()
    )
    idle_h = (
        joined.with_columns(pl.col("bucket").dt.truncate("1h").alias("hour"))
        .group_by("cluster", "team", "_account", "hour")
        .agg(pl.col("_idle_gpu_s").sum().alias("_idle_s"))
    )
    hourly = alloc_h.join(
        idle_h, on=["cluster", "team", "_account", "hour"], how="left"
    ).with_columns(pl.col("_idle_s").fill_null(0.0))
    recs = []
    for t in teams.iter_rows(named=True):
        cluster, team = str(t["cluster"]), str(t["team"])
        idle_h_wk = float(t["idle_gpu_s"]) / 3600 / window.weeks
        top = (
            users.filter((pl.col("cluster") == cluster) & (pl.col("team") == team))
            .sort(["idle_gpu_s", "_user"], descending=[True, False])
            .head(top_n)
        )
        offenders = [
            {
                "user": u["_user"],
                "idle_gpu_h_per_week": float(u["idle_gpu_s"]) / 3600 / window.weeks,
                "idle_share": float(u["idle_gpu_s"]) / float(u["observed_gpu_s"])
                if u["observed_gpu_s"]
                else None,
                "jobs": int(u["jobs"]),
            }
            for u in top.iter_rows(named=True)
        ]
        lines, caps = [], {}
        if t["source"] == "slurm":
            mine = hourly.filter((pl.col("cluster") == cluster) & (pl.col("team") == team))
            for (account,), grp in mine.sort("_account").group_by("_account", maintain_order=True):
                active = [
                    max(0.0, a - i) / 3600
                    for a, i in zip(
                        grp["_alloc_s"].to_list(), grp["_idle_s"].to_list(), strict=True
                    )
                ]
                alloc = [a / 3600 for a in grp["_alloc_s"].to_list()]
                p95_active = nearest_rank_value(active, 0.95) or 0.0
                p95_alloc = nearest_rank_value(alloc, 0.95) or 0.0
                by_use = int(max(gpus_per_node, ceil_to(p95_active, gpus_per_node)))
                share = (shares or {}).get(team)
                pool = (pool_gpus or {}).get(cluster)
                entitled = math.ceil(share * pool - 1e-9) if share is not None and pool else None
                cap = max(by_use, entitled or 0)
                caps[str(account)] = {
                    "p95_active_gpus": p95_active,
                    "p95_allocated_gpus": p95_alloc,
                    "cap_by_use_gpus": by_use,
                    "entitled_gpus": entitled,
                    "registry_share": share,
                    "pool_gpus": pool,
                    "cap_gpus": cap,
                }
                if cap < p95_alloc:
                    lines.append(
                        f"sacctmgr -i modify account name={account} set GrpTRES=gres/gpu={cap}"
                    )
        names = ", ".join(
            f"{o['user']} ({o['idle_gpu_h_per_week']:.0f} GPU-h/wk idle)" for o in offenders
        )
        cap_text = (
            " and cap the account's concurrent GPUs at its p95 active GPUs, never below its "
            "entitlement ("
            + ", ".join(
                f"{a}: {c['cap_gpus']}"
                + (
                    f", entitled to {c['entitled_gpus']} = ⌈{c['registry_share']:g} × "
                    f"{c['pool_gpus']:g}⌉"
                    if c["entitled_gpus"] is not None
                    else ""
                )
                for a, c in caps.items()
            )
            + ")"
            if lines
            else ""
        )
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=cluster,
                scope=scope_key(cluster=cluster, team=team),
                severity=grade(idle_h_wk, min_idle_gpu_h_per_week, 4 * min_idle_gpu_h_per_week),
                window=window,
                evidence={
                    "team": team,
                    "idle_threshold": idle_threshold,
                    "observed_gpu_h": float(t["observed_gpu_s"]) / 3600,
                    "idle_gpu_h": float(t["idle_gpu_s"]) / 3600,
                    "allocated_gpu_h": float(t["allocated_gpu_s"] or 0.0) / 3600,
                    "idle_share": float(t["idle_share"]),
                    "idle_gpu_h_per_week": idle_h_wk,
                    "top_offenders": offenders,
                    "caps": caps,
                },
                change_text=(
                    f"Team {team} left {float(t['idle_share']):.0%} of its observed GPU time idle "
                    f"(activity < {idle_threshold:g}): {idle_h_wk:.0f} GPU-h a week recoverable. "
                    "Adopt an idle-job policy (warn, then cancel or requeue allocations whose "
                    f"GPUs stay below {idle_threshold:g} activity for 60 minutes){cap_text}. "
                    f"Top offenders: {names}."
                ),
                confidence=_coverage(t["observed_gpu_s"], t["allocated_gpu_s"]),
                expected_gain_gpu_h_per_week=idle_h_wk,
                patch_kind="sacctmgr" if lines else None,
                patch_content="\n".join(lines) if lines else None,
            )
        )
    return to_frame(recs)


def _coverage(observed: float | None, allocated: float | None) -> float:
    if not allocated or observed is None or not math.isfinite(observed):
        return 0.0
    return min(1.0, float(observed) / float(allocated))
