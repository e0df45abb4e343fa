"""Partitions shared by every source: one partition per cluster and UTC day."""

from __future__ import annotations

import dagster as dg

from pipelines.config import Config

__all__ = ["cluster_day_partitions", "split_partition_key"]


def cluster_day_partitions(cfg: Config) -> dg.MultiPartitionsDefinition:
    """``cluster`` (the configured clusters) × ``date`` (daily from ``partitions_start``)."""
    names = [c.name for c in cfg.clusters] or [cfg.default_cluster]
    return dg.MultiPartitionsDefinition(
        {
            "cluster": dg.StaticPartitionsDefinition(names),
            "date": dg.DailyPartitionsDefinition(start_date=cfg.partitions_start),
        }
    )


def split_partition_key(key: str | dg.MultiPartitionKey) -> tuple[str, str]:
    """``(cluster, YYYY-MM-DD)`` of a cluster × day partition key."""
    if isinstance(key, dg.MultiPartitionKey):
        dims = key.keys_by_dimension
    else:
        dims = dg.MultiPartitionKey.from_str(key).keys_by_dimension  # type: ignore[attr-defined]
    return dims["cluster"], dims["date"]
