"""Partitions shared by every source: one partition per cluster and UTC day."""

from __future__ import annotations

import datetime as dt

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
    """``(cluster, YYYY-MM-DD)`` of a cluster × day partition key.

    A key given as text is Dagster's multi-partition key text, the dimension values joined by
    ``|`` in the order of the dimension names (``cluster|date``).

    Raises:
        ValueError: text that is not ``<cluster>|<YYYY-MM-DD>``.
    """
    if isinstance(key, dg.MultiPartitionKey):
        dims = key.keys_by_dimension
        return dims["cluster"], dims["date"]
    cluster, sep, day = str(key).partition("|")
    try:
        dt.date.fromisoformat(day)
    except ValueError:
        sep = ""
    if not sep or not cluster:
        raise ValueError(f"not a cluster|YYYY-MM-DD partition key: {key!r}")
    return cluster, day
