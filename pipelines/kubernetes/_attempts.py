"""Kubernetes pods as allocation attempts in the unified ``jobs`` model (pure polars).

At this stage one pod is one attempt: start = bound to a node (PodScheduled), end = all
containers terminated (else deletion), GPUs from the pod's ``nvidia.com/gpu`` (and MIG) requests.
Kueue Workloads group pods into gang attempts once they are ingested.
"""

from __future__ import annotations

import polars as pl

from metrics._helpers import seconds_between
from pipelines.registry import UNATTRIBUTED

__all__ = ["pod_attempts", "pod_state"]


def pod_state() -> pl.Expr:
    """Slurm-style final state of a pod from its phase and termination reason.

    Succeeded → COMPLETED; Failed with OOMKilled → OUT_OF_MEMORY; evicted or preempted →
    PREEMPTED; other Failed → FAILED; Running → RUNNING; Pending → PENDING; else the phase in
    capitals.
    """
    reason = pl.col("termination_reason").fill_null("")
    phase = pl.col("phase").fill_null("Unknown")
    return (
        pl.when(phase == "Succeeded")
        .then(pl.lit("COMPLETED"))
        .when(reason == "OOMKilled")
        .then(pl.lit("OUT_OF_MEMORY"))
        .when(reason.is_in(["Evicted", "Preempted", "PreemptionByScheduler"]))
        .then(pl.lit("PREEMPTED"))
        .when(phase == "Failed")
        .then(pl.lit("FAILED"))
        .otherwise(phase.str.to_uppercase())
    )


def pod_attempts(
    pods: pl.LazyFrame, namespace_teams: pl.LazyFrame, queue_teams: pl.LazyFrame
) -> pl.LazyFrame:
    """One ``jobs`` row per pod that was bound to a node.

    Args:
        pods: ``pipelines.kubernetes._pods_parse.K8S_POD_SCHEMA`` rows, one per pod uid.
        namespace_teams: ``key`` (namespace) → ``team``.
        queue_teams: ``key`` (Kueue LocalQueue) → ``team``; wins over the namespace.

    Returns:
        Rows with the ``jobs`` columns; ``job_id`` = ``<namespace>/<pod>``, submit = eligible =
        creation, start = scheduled (bound), end = finished or deleted (NULL while running),
        seconds for waits and runs, ``gpu_s`` = gpus × run_s.
    """
    ns = namespace_teams.select(pl.col("key").alias("namespace"), pl.col("team").alias("_ns_team"))
    lq = queue_teams.select(pl.col("key").alias("queue_name"), pl.col("team").alias("_lq_team"))
    start = pl.coalesce("scheduled_at", "started_at")
    end = pl.coalesce("finished_at", "deleted_at")
    running = pl.col("phase").is_in(["Running", "Pending"])
    return (
        pods.filter(start.is_not_null())
        .join(ns.unique("namespace"), on="namespace", how="left")
        .join(lq.unique("queue_name"), on="queue_name", how="left")
        .select(
            pl.lit("kubernetes").alias("source"),
            "cluster",
            pl.format("{}/{}", pl.col("namespace"), pl.col("name")).alias("job_id"),
            pl.col("uid").alias("job_id_raw"),
            pl.lit(0, dtype=pl.Int64()).alias("attempt"),
            pl.coalesce("_lq_team", "_ns_team", pl.lit(UNATTRIBUTED)).alias("team"),
            pl.col("namespace").alias("account"),
            pl.lit(None, dtype=pl.String()).alias("user_name"),
            pl.lit(None, dtype=pl.String()).alias("partition"),
            pl.col("queue_name").alias("qos"),
            pod_state().alias("state"),
            pl.col("gpus").fill_null(0.0),
            pl.col("gpus").fill_null(0.0).alias("req_gpus"),
            pl.lit(None, dtype=pl.String()).alias("gpu_type"),
            pl.col("created_at").alias("submit_at"),
            pl.col("created_at").alias("eligible_at"),
            start.alias("start_at"),
            pl.when(running).then(None).otherwise(end).alias("end_at"),
            seconds_between(start, pl.col("created_at")).alias("wait_s"),
            seconds_between(start, pl.col("created_at")).alias("submit_wait_s"),
            seconds_between(pl.when(running).then(None).otherwise(end), start).alias("run_s"),
            pl.concat_list(pl.col("node_name")).alias("node_list"),
            pl.lit(None, dtype=pl.Int64()).alias("timelimit_s"),
            pl.col("exit_code"),
        )
        .with_columns((pl.col("gpus") * pl.col("run_s")).alias("gpu_s"))
    )
