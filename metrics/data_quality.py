"""Data-quality checks shown beside the numbers they qualify (METRICS.md "Reconciliation")."""

from __future__ import annotations

import polars as pl

from metrics.schema import CLUSTER, GPUS, PARTITION, START_AT

__all__ = ["DATA_QUALITY_SCHEMA", "admitted_without_pods", "gpu_tracking_gaps"]

#: One row per finding: ``check`` names the rule, ``value`` its count or share.
DATA_QUALITY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "day": pl.Date(),
    "partition": pl.String(),
    "check": pl.String(),
    "value": pl.Float64(),
    "detail": pl.String(),
}


def gpu_tracking_gaps(attempts: pl.LazyFrame, gpu_partitions: pl.LazyFrame) -> pl.LazyFrame:
    """GPU partitions where, in a day, no allocation carries ``gres/gpu``.

    Such a day means GPUs were not tracked in ``AccountingStorageTRES`` then, not that the
    partition ran no GPU work; it is flagged instead of reported as 0 GPUs.

    Args:
        attempts: Slurm allocation attempts with ``cluster, partition, start_at, gpus``.
        gpu_partitions: ``cluster, partition`` known to hold GPUs (from the inventory, or any
            allocation in the data that carried ``gres/gpu``).

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'gpus_not_tracked'`` and ``value`` = the
        number of allocations that started in that partition and UTC day, none carrying GPUs.
    """
    per_day = (
        attempts.filter(pl.col(START_AT).is_not_null())
        .join(gpu_partitions.unique(), on=[CLUSTER, PARTITION], how="semi")
        .group_by(CLUSTER, pl.col(START_AT).dt.date().alias("day"), PARTITION)
        .agg(pl.len().alias("allocs"), (pl.col(GPUS) > 0).sum().alias("with_gpus"))
    )
    return per_day.filter(pl.col("with_gpus") == 0).select(
        CLUSTER,
        "day",
        PARTITION,
        pl.lit("gpus_not_tracked").alias("check"),
        pl.col("allocs").cast(pl.Float64).alias("value"),
        pl.lit("GPUs not tracked in AccountingStorageTRES: no allocation carries gres/gpu").alias(
            "detail"
        ),
    )


def admitted_without_pods(jobs: pl.LazyFrame) -> pl.LazyFrame:
    """Kueue Workloads admitted (quota reserved) whose pods were not loaded.

    Such an attempt reads ``ADMITTED`` in ``jobs``: it no longer waits in the queue, but with no
    pod nothing says when it ran, so it adds no GPU-seconds. The usual cause is a pod export
    missing for the namespace or the time.

    Args:
        jobs: ``jobs`` rows with ``cluster, partition, state, eligible_at``.

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'admitted_without_pods'``, one per
        cluster, ClusterQueue (``partition``) and UTC day of eligibility, ``value`` = the
        attempts.
    """
    return (
        jobs.filter(pl.col("state") == "ADMITTED")
        .group_by(CLUSTER, pl.col("eligible_at").dt.date().alias("day"), PARTITION)
        .agg(pl.len().cast(pl.Float64).alias("value"))
        .select(
            CLUSTER,
            "day",
            PARTITION,
            pl.lit("admitted_without_pods").alias("check"),
            "value",
            pl.lit(
                "Kueue admitted the workload but none of its pods was loaded: not counted as "
                "running (check the pod export)"
            ).alias("detail"),
        )
    )
