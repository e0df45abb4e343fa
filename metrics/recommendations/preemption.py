"""Preemption churn: jobs preempted soon after they start lose their work again and again.

Per Slurm cluster, over GPU attempts that ended ``PREEMPTED`` (METRICS.md leaf 5, whole attempt
lost under the default policy): when at least ``min_preemptions`` attempts were preempted, they
lost at least ``min_lost_gpu_h_per_week`` GPU-hours a week, and their median run before
preemption is at most ``max_median_run_s`` (churn: work barely started is thrown away), two
changes are proposed [slurm.conf(5) ``PreemptExemptTime``; sacctmgr(1) QOS ``GraceTime``]:

- ``PreemptExemptTime`` = the nearest-rank p75 run before preemption, rounded up to 5 minutes
  and kept within [10 min, 2 h]: a job is not preempted before it has run that long. Gain (an
  upper bound) = GPU-hours a week lost in preempted attempts that ran less than it.
- ``GraceTime`` = ``grace_s`` on each preempted QOS: preempted jobs get SIGTERM and that long to
  checkpoint before SIGKILL. Gain (an upper bound: jobs must checkpoint on SIGTERM) = the QOS's
  preempted GPU-hours a week.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import polars as pl

from metrics.recommendations._model import (
    Recommendation,
    Window,
    ceil_to,
    empty_recommendations,
    grade,
    nearest_rank_value,
    scope_key,
    slurm_duration,
    to_frame,
)

__all__ = ["EXEMPT_RULE", "GRACE_RULE", "preemption_basis", "preemption_churn"]

EXEMPT_RULE = "preempt_exempt_time"
GRACE_RULE = "preemption_grace_time"


def preemption_basis(attempts: pl.DataFrame) -> str:
    """A fingerprint of the preempted attempts a finding counts (cluster, job id, attempt):
    two findings with the same basis count the same preemptions (:mod:`.merge`)."""
    cols = [c for c in ("cluster", "job_id", "attempt") if c in attempts.columns]
    keys = sorted("\x1f".join(str(v) for v in row) for row in attempts.select(cols).iter_rows())
    digest = hashlib.sha256("\x1e".join(keys).encode()).hexdigest()[:16]
    return f"preempted:{len(keys)}:{digest}"


def preemption_churn(
    attempts: pl.LazyFrame | pl.DataFrame,
    window: Window,
    *,
    min_preemptions: int = 5,
    min_lost_gpu_h_per_week: float = 10.0,
    max_median_run_s: float = 3600.0,
    grace_s: int = 300,
    current_exempt_s: float | Mapping[str, float | None] | None = None,
) -> pl.DataFrame:
    """PreemptExemptTime and QOS GraceTime recommendations per Slurm cluster.

    Args:
        attempts: the ``jobs`` view (``source, cluster, qos, state, gpus, run_s``).
        window: the period considered.
        min_preemptions: preempted GPU attempts at least.
        min_lost_gpu_h_per_week: their GPU-hours a week at least.
        max_median_run_s: median run before preemption at most (churn, not rare late
            preemption).
        grace_s: proposed GraceTime (s).
        current_exempt_s: the PreemptExemptTime in force (s): one for every cluster, or
            cluster → its value (absent or None: unknown); no change is proposed where it is
            not below the proposed value, and the text states it where known.

    Returns:
        ``preempt_exempt_time`` (``slurm.conf``) per cluster and ``preemption_grace_time``
        (``sacctmgr``) per preempted QOS. Confidence = min(1, preemptions ÷ (4 ·
        min_preemptions)); severity critical at 4× the GPU-hour floor.
    """
    frame = (
        attempts.lazy()
        .filter(
            (pl.col("source") == "slurm")
            & (pl.col("gpus").fill_null(0) > 0)
            & pl.col("run_s").is_not_null()
            & (
                pl.col("state").str.strip_chars().str.split(" ").list.first().str.to_uppercase()
                == "PREEMPTED"
            )
        )
        .with_columns((pl.col("gpus") * pl.col("run_s")).alias("_lost_gpu_s"))
        .collect()
    )
    recs = []
    for (cluster,), grp in frame.sort("cluster").group_by("cluster", maintain_order=True):
        lost_wk = float(grp["_lost_gpu_s"].sum()) / 3600 / window.weeks
        runs = grp["run_s"].to_list()
        median = nearest_rank_value(runs, 0.5) or 0.0
        if (
            grp.height < min_preemptions
            or lost_wk < min_lost_gpu_h_per_week
            or median > max_median_run_s
        ):
            continue
        p75 = nearest_rank_value(runs, 0.75) or 0.0
        exempt = min(7200.0, max(600.0, ceil_to(p75, 300)))
        common = {
            "preempted_attempts": grp.height,
            "preempted_gpu_h_per_week": lost_wk,
            "median_run_before_preemption_s": median,
            "p75_run_before_preemption_s": p75,
            "basis": preemption_basis(grp),
        }
        severity = grade(lost_wk, min_lost_gpu_h_per_week, 4 * min_lost_gpu_h_per_week)
        confidence = min(1.0, grp.height / (4 * min_preemptions))
        in_force = (
            current_exempt_s.get(str(cluster))
            if isinstance(current_exempt_s, Mapping)
            else current_exempt_s
        )
        now = (
            f" (now {slurm_duration(in_force)})"
            if in_force is not None and in_force > 0
            else " (none now)"
            if in_force is not None
            else ""
        )
        if in_force is None or in_force < exempt:
            young = grp.filter(pl.col("run_s") < exempt)
            recs.append(
                Recommendation(
                    rule=EXEMPT_RULE,
                    cluster=str(cluster),
                    scope=scope_key(cluster=str(cluster)),
                    severity=severity,
                    window=window,
                    evidence={
                        **common,
                        "current_exempt_s": in_force,
                        "proposed_exempt_s": exempt,
                        "attempts_preempted_younger": young.height,
                        "gain_is_upper_bound": True,
                    },
                    change_text=(
                        f"{grp.height} GPU jobs were preempted after a median "
                        f"{median / 60:.0f} min of running, losing {lost_wk:.0f} GPU-h a week. "
                        f"Exempt jobs from preemption for their first {exempt / 60:.0f} min "
                        f"(PreemptExemptTime={slurm_duration(exempt)}{now})."
                    ),
                    confidence=confidence,
                    expected_gain_gpu_h_per_week=float(young["_lost_gpu_s"].sum())
                    / 3600
                    / window.weeks,
                    patch_kind="slurm.conf",
                    patch_content=f"PreemptExemptTime={slurm_duration(exempt)}",
                )
            )
        for (qos,), q in grp.sort("qos").group_by("qos", maintain_order=True):
            if qos is None:
                continue
            q_wk = float(q["_lost_gpu_s"].sum()) / 3600 / window.weeks
            recs.append(
                Recommendation(
                    rule=GRACE_RULE,
                    cluster=str(cluster),
                    scope=scope_key(cluster=str(cluster), qos=str(qos)),
                    severity=severity,
                    window=window,
                    evidence={
                        **common,
                        "qos": qos,
                        "qos_preempted_attempts": q.height,
                        "qos_preempted_gpu_h_per_week": q_wk,
                        "basis": preemption_basis(q),
                        "proposed_grace_s": grace_s,
                        "gain_is_upper_bound": True,
                    },
                    change_text=(
                        f"Jobs of QOS {qos} were preempted {q.height} times ({q_wk:.0f} GPU-h a "
                        f"week lost). Give them {grace_s} s to checkpoint on SIGTERM before they "
                        f"are killed (GraceTime={grace_s}); their jobs must trap SIGTERM and "
                        "checkpoint."
                    ),
                    confidence=confidence,
                    expected_gain_gpu_h_per_week=q_wk,
                    patch_kind="sacctmgr",
                    patch_content=f"sacctmgr -i modify qos name={qos} set GraceTime={grace_s}",
                )
            )
    return to_frame(recs) if recs else empty_recommendations()
