"""Registered capacity and node-event GPU-seconds per cluster-hour (pure polars).

Over the rows of Slurm's ``sacctmgr show event`` (``raw.slurm_events``: ``event``, ``cluster``,
``node``, ``state``, ``start_at``, ``end_at``, ``gpus``):

- :func:`registered_gpu_seconds_hourly`: the cluster TRES registrations as GPU-seconds per hour
  (sreport's *Reported* capacity);
- :func:`node_event_gpu_seconds_hourly`: node down/drain intervals as GPU-seconds per state and
  hour.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import polars as pl

__all__ = ["node_event_gpu_seconds_hourly", "registered_gpu_seconds_hourly"]


def _event_seconds_hourly(
    events: pl.LazyFrame, start: dt.datetime, end: dt.datetime, as_of: dt.datetime,
    by: Sequence[str],
) -> pl.LazyFrame:  # fmt: skip
    """Σ gpus × overlap(event, hour) per ``by`` and hour, over the whole hours of [start, end)."""
    lo = pl.lit(start).dt.cast_time_unit("us").dt.convert_time_zone("UTC")
    hi = pl.lit(end).dt.cast_time_unit("us").dt.convert_time_zone("UTC")
    cut = pl.lit(as_of).dt.cast_time_unit("us").dt.convert_time_zone("UTC")
    spans = (
        events.filter(pl.col("gpus").is_not_null() & (pl.col("gpus") > 0))
        .with_columns(
            _s=pl.max_horizontal(pl.col("start_at"), lo),
            _e=pl.min_horizontal(pl.col("end_at").fill_null(cut), cut, hi),
        )
        .filter(pl.col("_e") > pl.col("_s"))
        .with_columns(
            hour=pl.datetime_ranges(
                pl.col("_s").dt.truncate("1h"),
                pl.col("_e") - pl.duration(microseconds=1),
                interval="1h",
            )
        )
        .explode("hour")
    )
    overlap = (
        pl.min_horizontal(pl.col("_e"), pl.col("hour") + pl.duration(hours=1))
        - pl.max_horizontal(pl.col("_s"), pl.col("hour"))
    ).dt.total_microseconds() / 1e6
    return (
        spans.with_columns((pl.col("gpus") * overlap).alias("gpu_s"))
        .group_by(*by, "hour")
        .agg(pl.col("gpu_s").sum())
        .sort(*by, "hour")
    )


def registered_gpu_seconds_hourly(
    events: pl.LazyFrame, start: dt.datetime, end: dt.datetime, as_of: dt.datetime
) -> pl.LazyFrame:
    """GPU capacity per cluster and hour from the cluster TRES registrations (sreport *Reported*).

    A cluster event holds its registered GPUs from ``start_at`` until ``end_at`` (an open event
    until ``as_of``), so an hour in which the cluster registered at 02:38:23 has 32 GPUs ×
    1297 s, as sreport counts it; node events are ignored here.

    Args:
        events: ``raw.slurm_events`` rows (``event``, ``cluster``, ``start_at``,
            ``end_at``, ``gpus``); cluster events with NULL ``gpus`` (no TRES column) add nothing:
            fill them from the inventory first.
        start: start of the window (aware; normally a whole hour).
        end: end of the window (aware, exclusive).
        as_of: the data cut-off (aware): open events count up to it.

    Returns:
        ``cluster, hour, capacity_gpu_s`` (GPU-seconds), one row per cluster-hour with any
        registered GPUs.
    """
    cluster_events = events.filter(pl.col("event") == "cluster")
    return _event_seconds_hourly(cluster_events, start, end, as_of, ["cluster"]).rename(
        {"gpu_s": "capacity_gpu_s"}
    )


def node_event_gpu_seconds_hourly(
    events: pl.LazyFrame, start: dt.datetime, end: dt.datetime, as_of: dt.datetime
) -> pl.LazyFrame:
    """GPU-seconds of nodes in each event state (``DOWN``, ``DRAIN``, …) per cluster and hour.

    Args:
        events: ``raw.slurm_events`` rows; node events with their ``gpus`` (from the
            event's TRES, or filled from the inventory).
        start: start of the window (aware; normally a whole hour).
        end: end of the window (aware, exclusive).
        as_of: the data cut-off (aware): open events count up to it.

    Returns:
        ``cluster, state, hour, gpu_s``. A drained node still running a job is counted here
        too; sreport's *Down* leaves that time in *Allocated*.
    """
    node_events = events.filter(pl.col("event") == "node")
    return _event_seconds_hourly(node_events, start, end, as_of, ["cluster", "state"])
