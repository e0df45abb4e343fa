"""Shared polars helpers for the metric functions."""

from __future__ import annotations

import polars as pl

from metrics.schema import SIZE_BUCKETS

HOUR_US = 3_600_000_000


def seconds_between(later: pl.Expr, earlier: pl.Expr) -> pl.Expr:
    """``later - earlier`` in seconds (Float64, microsecond precision); NULL if either is NULL."""
    return (later - earlier).dt.total_microseconds().cast(pl.Float64) / 1e6


def hour_ceil(ts: pl.Expr) -> pl.Expr:
    """The first hour start at or after ``ts`` (a datetime; ``ts`` itself when on the hour):
    the first hour start an interval from ``ts`` covers, as the hourly tables count hours."""
    floor = ts.dt.truncate("1h")
    return pl.when(floor == ts).then(floor).otherwise(floor + pl.duration(hours=1))


def size_bucket(gpus: pl.Expr) -> pl.Expr:
    """The METRICS.md size bucket label of a GPU count; NULL for 0 or NULL GPUs (CPU-only)."""
    expr: pl.Expr = pl.lit(None, dtype=pl.String())
    for label, lo, hi in reversed(SIZE_BUCKETS):
        cond = (gpus >= lo) & (gpus < hi) if lo > 0 else (gpus > 0) & (gpus < hi)
        expr = pl.when(cond).then(pl.lit(label)).otherwise(expr)
    return expr


def nearest_rank(values: pl.Expr, q: float) -> pl.Expr:
    """The nearest-rank ``q`` percentile of ``values`` in an aggregation context.

    The smallest value such that at least ``q`` of the values are ≤ it: the ``ceil(q·n)``-th
    smallest (1-based). It is the empirical counterpart of the Kaplan–Meier percentile
    (smallest t with S(t) ≤ 1 − q), so naive and censored percentiles are comparable.
    NULL values are ignored; NULL when there are none.
    """
    v = values.drop_nulls().sort()
    n = v.len()
    idx = (pl.lit(q) * n).ceil().cast(pl.Int64) - 1
    return v.get(idx.clip(0, None), null_on_oob=True)
