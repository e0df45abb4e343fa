"""Allocated time on a node wins over its down / planned-down state, per node and instant.

One rule for Slurm node events (:mod:`pipelines.core.node_states`) and Kubernetes node states
(:mod:`metrics.k8s_node_states`): METRICS.md "Node states", waterfall leaf 1 ("drained with no
job").
"""

from __future__ import annotations

import datetime as dt

import polars as pl

__all__ = ["unallocated_node_events"]


def unallocated_node_events(
    events: pl.DataFrame, allocations: pl.DataFrame | pl.LazyFrame, as_of: dt.datetime
) -> pl.DataFrame:
    """The node events' GPUs that no allocation holds, as pieces of constant GPUs.

    Allocated time on a node wins over its down / planned-down state (METRICS.md waterfall
    leaf 1, "drained with no job", and "Node states"): Slurm keeps the jobs of a node it drains
    (DRAINING) and only a node with no job left is drained for good; a DOWN node's jobs are
    killed or requeued, and while sacct still records one running its GPUs are its (never
    down and allocated at once). Per node and instant, with ``down`` / ``planned`` the GPUs of
    its events in each state and ``alloc`` the GPUs its attempts hold there:
    down' = max(0, down − alloc), planned' = max(0, planned − max(0, alloc − down)). Per GPU, as
    sreport counts a TRES: an 8-GPU node draining under a 4-GPU job has 4 GPUs allocated and 4
    down (no job can start on them); under an 8-GPU job, 0 down.

    Args:
        events: node events ``cluster, node, state ('down' | 'planned'), start_at, end_at
            (NULL: open), gpus``; rows with NULL or non-positive ``gpus`` are dropped.
        allocations: attempts ``cluster, node_list (list of node names), gpus, start_at,
            end_at`` (NULL end: running until ``as_of``); GPUs split evenly over the nodes.
            Only the attempts on a node with events, overlapping the span of its events, are
            split into nodes (a year's attempts are millions, the nodes with events few).
        as_of: the data cut-off (aware): open events and running attempts end there.

    Returns:
        ``event ('node'), cluster, node, state, start_at, end_at, gpus``: per node, the
        intervals in which a state keeps the same unallocated GPUs (> 0), the rows
        :func:`node_event_gpu_seconds_hourly` takes.
    """
    ts = pl.Datetime("us", "UTC")
    cut = pl.lit(as_of).cast(ts)
    ev = (
        events.filter(pl.col("gpus").is_not_null() & (pl.col("gpus") > 0))
        .select(
            "cluster", "node", "state",
            pl.col("start_at").cast(ts).alias("_s"),
            pl.min_horizontal(pl.col("end_at").cast(ts).fill_null(cut), cut).alias("_e"),
            pl.col("gpus").cast(pl.Float64),
        )
        .filter(pl.col("_e") > pl.col("_s"))
    )  # fmt: skip
    if ev.height == 0:
        text = pl.String()
        return pl.DataFrame(
            schema={"event": text, "cluster": text, "node": text, "state": text,
                    "start_at": ts, "end_at": ts, "gpus": pl.Float64()}
        )  # fmt: skip
    # only the attempts overlapping some event and naming one of its nodes are exploded into
    # nodes (a year's attempts are millions; the events and their nodes a few)
    lo, hi = pl.lit(ev["_s"].min()).cast(ts), pl.lit(ev["_e"].max()).cast(ts)
    names = ev["node"].unique().to_list()
    # per node, the span of its events: an attempt on the node outside it changes nothing
    windows = ev.group_by("cluster", "node").agg(
        pl.col("_s").min().alias("_ws"), pl.col("_e").max().alias("_we")
    )
    al = (
        allocations.lazy()
        .filter(
            pl.col("start_at").is_not_null()
            & (pl.col("gpus") > 0)
            & (pl.col("node_list").list.len() > 0)
            & (pl.col("start_at").cast(ts) < hi)
            & (pl.col("end_at").is_null() | (pl.col("end_at").cast(ts) > lo))
            & pl.col("node_list").list.eval(pl.element().is_in(names)).list.any()
        )
        .select(
            "cluster",
            pl.col("node_list").alias("node"),
            (pl.col("gpus").cast(pl.Float64) / pl.col("node_list").list.len()).alias("gpus"),
            pl.col("start_at").cast(ts).alias("_s"),
            pl.min_horizontal(pl.col("end_at").cast(ts).fill_null(cut), cut).alias("_e"),
        )
        .explode("node")
        .join(windows.lazy(), on=["cluster", "node"], how="inner")
        .filter(
            (pl.col("_e") > pl.col("_s"))
            & (pl.col("_s") < pl.col("_we"))
            & (pl.col("_e") > pl.col("_ws"))
        )
        .drop("_ws", "_we")
        .collect()
    )
    zero = pl.lit(0.0)

    def steps(frame: pl.DataFrame, col: str) -> pl.DataFrame:
        # +GPUs at each start, -GPUs at each end, into the column ``col`` (0 in the others)
        cols = {c: (pl.col("gpus") if c == col else zero) for c in ("_d", "_p", "_a")}
        up = frame.select("cluster", "node", pl.col("_s").alias("_t"), **cols)
        down = frame.select(
            "cluster", "node", pl.col("_e").alias("_t"), **{c: -v for c, v in cols.items()}
        )
        return pl.concat([up, down])

    key = ["cluster", "node"]
    seg = (
        pl.concat(
            [
                steps(ev.filter(pl.col("state") == "down"), "_d"),
                steps(ev.filter(pl.col("state") == "planned"), "_p"),
                steps(al, "_a"),
            ]
        )
        .group_by(*key, "_t")
        .agg(pl.col("_d", "_p", "_a").sum())
        .sort(*key, "_t")
        .with_columns(pl.col(c).cum_sum().over(key).round(9) for c in ("_d", "_p", "_a"))
        .with_columns(pl.col("_t").shift(-1).over(key).alias("end_at"))
        .filter(pl.col("end_at").is_not_null())
        .with_columns(
            (pl.col("_d") - pl.col("_a")).clip(0.0).alias("down"),
            (pl.col("_p") - (pl.col("_a") - pl.col("_d")).clip(0.0)).clip(0.0).alias("planned"),
        )
        .rename({"_t": "start_at"})
    )
    return (
        seg.unpivot(
            on=["down", "planned"],
            index=[*key, "start_at", "end_at"],
            variable_name="state",
            value_name="gpus",
        )
        .filter(pl.col("gpus") > 1e-9)
        .select(pl.lit("node").alias("event"), *key, "state", "start_at", "end_at", "gpus")
        .sort(*key, "state", "start_at")
    )
