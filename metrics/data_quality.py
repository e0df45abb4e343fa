"""Data-quality checks shown beside the numbers they qualify (METRICS.md "Reconciliation")."""

from __future__ import annotations

import polars as pl

from metrics.schema import CLUSTER, GPUS, PARTITION, START_AT

__all__ = ["DATA_QUALITY_SCHEMA", "gpu_tracking_gaps"]

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
