"""Time to start: how long allocation attempts wait between eligibility and start.

METRICS.md: **wait** = start − eligible; submit-based wait is kept beside it. This module gives
the naive (started-only) percentiles; the Kaplan–Meier estimate with censoring is added beside them.
"""

from __future__ import annotations

import polars as pl

from metrics._helpers import nearest_rank, size_bucket
from metrics.schema import BUCKET, CLUSTER, GPUS, SOURCE, WAIT_S

__all__ = ["naive_wait_percentiles", "size_bucket"]


def naive_wait_percentiles(attempts: pl.LazyFrame) -> pl.LazyFrame:
    """Naive wait percentiles per source, cluster and size bucket, over started GPU attempts.

    Args:
        attempts: one row per started attempt with ``source, cluster, gpus, wait_s`` (seconds,
            start − eligible; NULL when eligible time is unknown: excluded). CPU-only attempts
            (0 GPUs) are outside GPU time to start.

    Returns:
        ``source, cluster, bucket, jobs, naive_p50_s, naive_p90_s, naive_p99_s``; nearest-rank
        percentiles in seconds. A row with ``bucket`` NULL covers all buckets of that cluster.
    """
    started = attempts.filter((pl.col(GPUS) > 0) & pl.col(WAIT_S).is_not_null()).with_columns(
        size_bucket(pl.col(GPUS)).alias(BUCKET)
    )
    aggs = [
        pl.len().alias("jobs"),
        nearest_rank(pl.col(WAIT_S), 0.50).alias("naive_p50_s"),
        nearest_rank(pl.col(WAIT_S), 0.90).alias("naive_p90_s"),
        nearest_rank(pl.col(WAIT_S), 0.99).alias("naive_p99_s"),
    ]
    per_bucket = started.group_by(SOURCE, CLUSTER, BUCKET).agg(aggs)
    overall = (
        started.group_by(SOURCE, CLUSTER)
        .agg(aggs)
        .with_columns(pl.lit(None, dtype=pl.String()).alias(BUCKET))
    )
    cols = [SOURCE, CLUSTER, BUCKET, "jobs", "naive_p50_s", "naive_p90_s", "naive_p99_s"]
    return (
        pl.concat([per_bucket.select(cols), overall.select(cols)])
        .with_columns(pl.col("jobs").cast(pl.Int64))
        .sort(SOURCE, CLUSTER, BUCKET, nulls_last=True)
    )
