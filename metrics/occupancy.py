"""Occupancy: allocated GPU-seconds against available capacity, per cluster and hour.

METRICS.md: **occupancy** = allocated / (capacity − down − planned_down); allocated is the
GPU-seconds of allocation attempts (steps never add occupancy), clipped to each hour, each
attempt by the pieces of GPUs it held (METRICS.md "GPU holding", :mod:`metrics.holds`); a running
attempt counts until the data cut-off ``as_of``.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics._helpers import HOUR_US, seconds_between
from metrics.holds import with_pieces
from metrics.schema import CLUSTER, GPUS, HOUR, START_AT

__all__ = ["allocated_gpu_seconds_hourly", "capacity_hourly", "occupancy_hourly"]


def allocated_gpu_seconds_hourly(
    attempts: pl.LazyFrame, as_of: dt.datetime, *, holds: pl.LazyFrame | None = None
) -> pl.LazyFrame:
    """Allocated GPU-seconds per cluster and hour.

    Args:
        attempts: one row per allocation attempt with ``cluster``, ``gpus`` (GPUs, may be
            fractional), ``start_at``, ``end_at`` (UTC; NULL while running). Rows without a start
            or with 0 GPUs add nothing.
        as_of: the data cut-off (UTC); running attempts are counted up to it, and nothing after
            it is counted.
        holds: the pieces of held GPUs of the attempts that did not hold ``gpus`` over their
            span (:func:`metrics.holds.with_pieces`; ``attempts`` then needs ``job_id,
            attempt``): each piece is spread instead (METRICS.md "GPU holding"); None: none.

    Returns:
        ``cluster, hour (UTC, start of hour), allocated_gpu_s`` — Σ gpus × overlap(piece, hour)
        in seconds over every attempt's pieces (an attempt without pieces is one), one row per
        cluster-hour touched by an attempt.
    """
    cut = pl.lit(as_of).dt.cast_time_unit("us").dt.replace_time_zone("UTC")
    first = pl.col("_ps").dt.truncate("1h")
    # Hours touched = (hour of the last microsecond − first hour) + 1; exploding a range of
    # integers and adding them as hours is cheaper than exploding a list of datetimes.
    touched = (
        (pl.col("_end") - pl.duration(microseconds=1)).dt.truncate("1h") - first
    ).dt.total_hours()
    spans = (
        with_pieces(attempts.filter(pl.col(START_AT).is_not_null() & (pl.col(GPUS) > 0)), holds)
        .filter(pl.col("_ps").is_not_null() & (pl.col("_pg") > 0))
        .with_columns(pl.min_horizontal(pl.col("_pe").fill_null(cut), cut).alias("_end"))
        .filter(pl.col("_end") > pl.col("_ps"))
        .select(CLUSTER, "_pg", "_ps", "_end", pl.int_ranges(0, touched + 1).alias("_hour_k"))
        .explode("_hour_k")
        .with_columns((first + pl.duration(hours=pl.col("_hour_k"))).alias(HOUR))
        .drop("_hour_k")
    )
    hour_end = pl.col(HOUR) + pl.duration(microseconds=HOUR_US)
    overlap = seconds_between(
        pl.min_horizontal(pl.col("_end"), hour_end),
        pl.max_horizontal(pl.col("_ps"), pl.col(HOUR)),
    )
    return (
        spans.with_columns((pl.col("_pg") * overlap).alias("allocated_gpu_s"))
        .group_by(CLUSTER, HOUR)
        .agg(pl.col("allocated_gpu_s").sum())
        .sort(CLUSTER, HOUR)
    )


def capacity_hourly(nodes: pl.LazyFrame, hours: pl.LazyFrame) -> pl.LazyFrame:
    """GPU capacity per cluster and hour from a node inventory.

    Args:
        nodes: one row per node: ``cluster, host, gpus`` (GPUs on the node), and
            ``capacity_source`` (``inventory`` or ``observed``).
        hours: ``cluster, hour`` rows to cover.

    Returns:
        ``cluster, hour, capacity_gpu_s, capacity_source`` with capacity = Σ node GPUs × 3600.
        A cluster whose nodes come from more than one source reports ``mixed``.
    """
    per_cluster = nodes.group_by(CLUSTER).agg(
        (pl.col(GPUS).sum() * 3600.0).alias("capacity_gpu_s"),
        pl.when(pl.col("capacity_source").n_unique() == 1)
        .then(pl.col("capacity_source").first())
        .otherwise(pl.lit("mixed"))
        .alias("capacity_source"),
    )
    return hours.join(per_cluster, on=CLUSTER, how="left").with_columns(
        pl.col("capacity_gpu_s").fill_null(0.0)
    )


def occupancy_hourly(
    attempts: pl.LazyFrame,
    nodes: pl.LazyFrame,
    as_of: dt.datetime,
    *,
    down: pl.LazyFrame | None = None,
    registered: pl.LazyFrame | None = None,
    demand: pl.LazyFrame | None = None,
    holds: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Hourly occupancy per cluster.

    Args:
        attempts: as for :func:`allocated_gpu_seconds_hourly`.
        nodes: as for :func:`capacity_hourly`.
        as_of: the data cut-off (UTC).
        down: optional ``cluster, hour, down_gpu_s, planned_down_gpu_s``; 0 where absent.
        registered: optional ``cluster, hour, capacity_gpu_s`` from the scheduler's own
            registration of its GPUs (Slurm TRES registration events, as sreport's *Reported*);
            where given it replaces the inventory capacity of that cluster
            (``capacity_source = 'registered'``).
        demand: optional ``cluster, _from, _to`` (UTC): spans of pending demand (eligible to
            start, or to the end of a job that never started; ``_to`` NULL: still pending, up
            to ``as_of``). The hours a queue waited after the cluster's last allocation, up to
            ``as_of``, are the cluster's too, as is every hour of a cluster whose jobs all
            still wait (from its first eligible hour): they have capacity, held GPUs and fair
            shares like any other. Not the hours before the first allocation of a cluster
            that has one: a job pending for weeks says nothing of the other jobs of those
            weeks, which an export of its own window does not hold.
        holds: the attempts' pieces of held GPUs, as :func:`allocated_gpu_seconds_hourly`
            takes them (None: every attempt holds ``gpus`` over its span).

    Returns:
        ``cluster, hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s, allocated_gpu_s,
        occupancy, capacity_source`` for every hour from the cluster's first allocation or
        pending demand to its last (or ``as_of``); occupancy = allocated / (capacity − down −
        planned_down), NULL when that denominator is 0.
    """
    alloc = allocated_gpu_seconds_hourly(attempts, as_of, holds=holds)
    spans = alloc.select(CLUSTER, pl.col(HOUR).alias("_first"), pl.col(HOUR).alias("_last"))
    if demand is not None:
        cut = pl.lit(as_of).dt.cast_time_unit("us").dt.replace_time_zone("UTC")
        waits = (
            demand.select(
                CLUSTER,
                pl.col("_from").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
                pl.min_horizontal(
                    pl.col("_to").dt.convert_time_zone("UTC").dt.cast_time_unit("us")
                    .fill_null(cut),
                    cut,
                ).alias("_to"),
            )
            .filter(pl.col("_from").is_not_null() & (pl.col("_to") > pl.col("_from")))
            .select(
                CLUSTER,
                pl.col("_from").dt.truncate("1h").alias("_first"),
                (pl.col("_to") - pl.duration(microseconds=1)).dt.truncate("1h").alias("_last"),
            )
        )  # fmt: skip
        spans = pl.concat([spans.with_columns(pl.lit(True).alias("_alloc")),
                           waits.with_columns(pl.lit(False).alias("_alloc"))])  # fmt: skip
    else:
        spans = spans.with_columns(pl.lit(True).alias("_alloc"))
    bounds = spans.group_by(CLUSTER).agg(
        # the first allocation hour where there is one, else the first eligible hour
        pl.col("_first").filter(pl.col("_alloc")).min().fill_null(pl.col("_first").min()),
        pl.col("_last").max().alias("_last"),
    )
    hours = bounds.select(
        CLUSTER, pl.datetime_ranges("_first", "_last", interval="1h").alias(HOUR)
    ).explode(HOUR)
    cap = capacity_hourly(nodes, hours)
    if registered is not None:
        reg = registered.select(CLUSTER, HOUR, pl.col("capacity_gpu_s").alias("_reg"))
        has_reg = reg.select(CLUSTER).unique().with_columns(pl.lit(True).alias("_has_reg"))
        cap = (
            cap.join(reg, on=[CLUSTER, HOUR], how="left")
            .join(has_reg, on=CLUSTER, how="left")
            .with_columns(
                pl.when(pl.col("_has_reg"))
                .then(pl.col("_reg").fill_null(0.0))
                .otherwise(pl.col("capacity_gpu_s"))
                .alias("capacity_gpu_s"),
                pl.when(pl.col("_has_reg"))
                .then(pl.lit("registered"))
                .otherwise(pl.col("capacity_source"))
                .alias("capacity_source"),
            )
            .drop("_reg", "_has_reg")
        )
    out = cap.join(alloc, on=[CLUSTER, HOUR], how="left").with_columns(
        pl.col("allocated_gpu_s").fill_null(0.0)
    )
    if down is not None:
        out = out.join(down, on=[CLUSTER, HOUR], how="left")
    else:
        out = out.with_columns(
            pl.lit(None, dtype=pl.Float64()).alias("down_gpu_s"),
            pl.lit(None, dtype=pl.Float64()).alias("planned_down_gpu_s"),
        )
    out = out.with_columns(
        pl.col("down_gpu_s").fill_null(0.0), pl.col("planned_down_gpu_s").fill_null(0.0)
    )
    avail = pl.col("capacity_gpu_s") - pl.col("down_gpu_s") - pl.col("planned_down_gpu_s")
    return out.select(
        CLUSTER,
        HOUR,
        "capacity_gpu_s",
        "down_gpu_s",
        "planned_down_gpu_s",
        "allocated_gpu_s",
        pl.when(avail > 0)
        .then(pl.col("allocated_gpu_s") / avail)
        .otherwise(None)
        .alias("occupancy"),
        "capacity_source",
    ).sort(CLUSTER, HOUR)
