"""Topology domains over time: capacity per domain and hour, segment slots, stranded GPUs and
why large jobs wait (METRICS.md, "Domain capacity, stranded GPUs and large-job waits").

Everything here is read at the *start* of each hour (a snapshot, as
:func:`metrics.placement.fragmentation_hourly`): a node is *healthy* when no down or drain
interval covers the hour start; an attempt *holds* a node when ``start_at <= hour < end_at``
(NULL end: still running) and then ``gpus / nodes`` of its GPUs; a node is *whole free* when it
is healthy and no attempt (a CPU-only one included) runs on it, as in
:func:`metrics.placement.fragmentation_hourly`. A tray of a GB200 NVL72 rack is one node.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Final

import polars as pl

from metrics._helpers import hour_ceil
from metrics.het_jobs import het_unit_id, het_wait_units
from metrics.placement import DOMAIN, LEVEL, NODE, VALID_FROM, VALID_TO
from metrics.schema import (
    ATTEMPT,
    CLUSTER,
    ELIGIBLE_AT,
    END_AT,
    GPUS,
    HOST,
    HOUR,
    JOB_ID,
    REQ_GPUS,
    START_AT,
    TEAM,
    UTC_DATETIME,
)

__all__ = [
    "DOMAIN_CAPACITY_SCHEMA",
    "RESOURCES_REASON",
    "SEGMENT_CAPACITY_SCHEMA",
    "SEGMENT_SIZES",
    "STRANDED_SCHEMA",
    "WAIT_CAUSES_SCHEMA",
    "at_gang_level",
    "domain_capacity_hourly",
    "gang_level",
    "large_job_wait_causes",
    "segment_capacity_hourly",
    "stranded_hourly",
    "topology_reason",
]

#: Segment sizes (nodes = trays) counted by default: slots of s whole free nodes in one domain.
SEGMENT_SIZES: Final = (1, 2, 4, 8, 16, 18)
_HOUR: Final = dt.timedelta(hours=1)
_SINCE_EVER: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

#: Columns of :func:`domain_capacity_hourly`'s result, in order.
DOMAIN_CAPACITY_SCHEMA: dict[str, pl.DataType] = {
    CLUSTER: pl.String(),
    HOUR: UTC_DATETIME,
    LEVEL: pl.String(),
    DOMAIN: pl.String(),
    "nodes": pl.Int64(),
    "healthy_nodes": pl.Int64(),
    "degraded_nodes": pl.Int64(),
    "allocated_nodes": pl.Int64(),
    "free_nodes": pl.Int64(),
    "healthy_gpus": pl.Float64(),
    "allocated_gpus": pl.Float64(),
    "free_gpus": pl.Float64(),
    "largest_gang_nodes": pl.Int64(),
    "largest_segment": pl.Int64(),
}

#: Columns of :func:`segment_capacity_hourly`'s result, in order.
SEGMENT_CAPACITY_SCHEMA: dict[str, pl.DataType] = {
    CLUSTER: pl.String(),
    HOUR: UTC_DATETIME,
    LEVEL: pl.String(),
    "segment_size": pl.Int64(),
    "nodes": pl.Int64(),
    "healthy_nodes": pl.Int64(),
    "configured_slots": pl.Int64(),
    "healthy_slots": pl.Int64(),
    "free_slots": pl.Int64(),
    "usable_nodes": pl.Int64(),
    "efficiency": pl.Float64(),
}

#: Columns of :func:`stranded_hourly`'s result, in order.
STRANDED_SCHEMA: dict[str, pl.DataType] = {
    CLUSTER: pl.String(),
    HOUR: UTC_DATETIME,
    LEVEL: pl.String(),
    "free_gpus": pl.Float64(),
    "pending_jobs": pl.Int64(),
    "min_pending_gpus": pl.Float64(),
    "stranded_gpus": pl.Float64(),
    "expected_stranded_gpus": pl.Float64(),
    "gang_pending_gpu_s": pl.Float64(),
}

#: Columns of :func:`large_job_wait_causes`'s result, in order.
WAIT_CAUSES_SCHEMA: dict[str, pl.DataType] = {
    CLUSTER: pl.String(),
    JOB_ID: pl.String(),
    ATTEMPT: pl.Int64(),
    TEAM: pl.String(),
    "req_gpus": pl.Float64(),
    "req_nodes": pl.Int64(),
    ELIGIBLE_AT: UTC_DATETIME,
    START_AT: UTC_DATETIME,
    "wait_s": pl.Float64(),
    "quota_s": pl.Float64(),
    "priority_s": pl.Float64(),
    "fragmentation_s": pl.Float64(),
    "other_s": pl.Float64(),
    "blocked_idle_gpu_s": pl.Float64(),
    "basis": pl.String(),
}


def _maps(topology: pl.LazyFrame) -> pl.LazyFrame:
    return topology.select(
        CLUSTER,
        LEVEL,
        DOMAIN,
        NODE,
        pl.col(VALID_FROM).fill_null(_SINCE_EVER).cast(UTC_DATETIME),
        pl.col(VALID_TO).cast(UTC_DATETIME),
    ).unique()


def gang_level(topology: pl.LazyFrame) -> pl.LazyFrame:
    """``cluster, valid_from, valid_to, level``: per cluster and map (each ``valid_from``: a
    map holds to its ``valid_to``, NULL: still in force; a NULL ``valid_from``, in force since
    ever, as 1970-01-01) the level whose domains gangs are placed in: the finest (most domains
    in that map; ties: the first level by name), skipping levels of one node per domain. A
    ``topology/tree`` leaf switch, a ``topology/block`` block, an NVLink clique, a rack.

    Decided per map, not once per cluster: a later map with other level names (a
    ``topology.conf`` tree followed by a block file) does not move the earlier hours to a level
    their map lacks. Where ``topology`` has a ``source`` column, a ``topology.conf`` level named
    ``<topology>/…`` (a ``topology.yaml`` topology that is not the ``cluster_default`` one, which
    jobs naming no ``Topology=`` do not use: topology.yaml(5)) is taken only where the map has
    no other.
    """
    maps = _maps(topology)
    if "source" in topology.collect_schema().names():
        named = topology.select(
            CLUSTER,
            LEVEL,
            pl.col(VALID_FROM).fill_null(_SINCE_EVER).cast(UTC_DATETIME),
            (
                (pl.col("source") == "topology.conf")
                & pl.col(LEVEL).str.contains("/", literal=True)
            ).alias("_other"),
        ).unique([CLUSTER, LEVEL, VALID_FROM])
    else:
        named = maps.select(CLUSTER, LEVEL, VALID_FROM, pl.lit(value=False).alias("_other"))
    per_map = maps.group_by(CLUSTER, LEVEL, VALID_FROM, VALID_TO, DOMAIN).agg(pl.len().alias("_n"))
    levels = (
        per_map.group_by(CLUSTER, LEVEL, VALID_FROM, VALID_TO)
        .agg(pl.len().alias("_domains"), pl.col("_n").max().alias("_largest"))
        .filter(pl.col("_largest") > 1)
        .join(named.unique([CLUSTER, LEVEL, VALID_FROM]), on=[CLUSTER, LEVEL, VALID_FROM])
    )
    return (
        levels.sort(
            CLUSTER, VALID_FROM, "_other", "_domains", LEVEL,
            descending=[False, False, False, True, False],
        )
        .group_by(CLUSTER, VALID_FROM, maintain_order=True)
        .first()
        .select(CLUSTER, VALID_FROM, VALID_TO, LEVEL)
    )  # fmt: skip


def at_gang_level(frame: pl.LazyFrame, level: pl.LazyFrame, at: str = HOUR) -> pl.LazyFrame:
    """The rows of ``frame`` (``cluster, level`` and the time ``at``) at the gang level of the
    map in force at ``at`` (``level``: :func:`gang_level`)."""
    return (
        frame.join(level, on=[CLUSTER, LEVEL])
        .filter(
            (pl.col(VALID_FROM) <= pl.col(at))
            & (pl.col(VALID_TO).is_null() | (pl.col(at) < pl.col(VALID_TO)))
        )
        .drop(VALID_FROM, VALID_TO)
    )


def _held_per_node(jobs: pl.LazyFrame, hours: pl.LazyFrame) -> pl.LazyFrame:
    """``cluster, hour, node, _held, _attempts``: GPUs attempts hold on each node at each hour
    start (an attempt holds ``gpus / distinct nodes`` on each of its nodes) and how many."""
    horizon = hours.group_by(CLUSTER).agg((pl.col(HOUR).max() + _HOUR).alias("_horizon"))
    start = pl.col(START_AT)
    first = hour_ceil(start)
    spans = (
        jobs.filter(start.is_not_null() & (pl.col("node_list").list.len() > 0))
        .join(horizon, on=CLUSTER)
        .select(
            CLUSTER,
            pl.col("node_list").list.unique().alias(NODE),
            pl.datetime_ranges(
                first, pl.col(END_AT).fill_null(pl.col("_horizon")), "1h", closed="left"
            ).alias(HOUR),
            (pl.col(GPUS).cast(pl.Float64) / pl.col("node_list").list.unique().list.len()).alias(
                "_held"
            ),
        )
        .explode(HOUR)
        .filter(pl.col(HOUR).is_not_null())
        .explode(NODE)
    )
    return spans.group_by(CLUSTER, HOUR, NODE).agg(
        pl.col("_held").sum(), pl.len().alias("_attempts")
    )


def _down_per_node(down: pl.LazyFrame, hours: pl.LazyFrame) -> pl.LazyFrame:
    """``cluster, hour, node``: nodes down or drained at an hour start."""
    return (
        hours.join(down.select(CLUSTER, NODE, "start_at", "end_at"), on=CLUSTER)
        .filter(
            (pl.col("start_at") <= pl.col(HOUR))
            & (pl.col("end_at").is_null() | (pl.col(HOUR) < pl.col("end_at")))
        )
        .select(CLUSTER, HOUR, NODE)
        .unique()
    )


def hourly_node_states(
    topology: pl.LazyFrame,
    jobs: pl.LazyFrame,
    hours: pl.LazyFrame,
    nodes: pl.LazyFrame,
    down: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Each mapped node at each hour start, at every level of the map in force: what
    :func:`domain_capacity_hourly`, :func:`stranded_hourly` and
    :func:`metrics.placement.fragmentation_hourly` all read. A caller computing them for the
    same hours computes these once and passes them to each as ``states``.

    Args:
        topology, jobs, hours, nodes, down: as :func:`domain_capacity_hourly`.

    Returns:
        ``cluster, hour, level, domain, node, _gpus, _healthy, _held, _attempts, _free``:
        ``_gpus`` the node's GPUs (0 when the inventory lacks it), ``_healthy`` not down or
        drained, ``_held`` GPUs attempts hold on it (an attempt holds ``gpus / distinct
        nodes`` on each of its nodes), ``_attempts`` how many, ``_free`` free GPUs of a healthy
        node (0 on a node down).
    """
    hours = hours.select(CLUSTER, pl.col(HOUR).cast(UTC_DATETIME)).unique()
    placed = (
        hours.join(_maps(topology), on=CLUSTER)
        .filter(
            (pl.col(VALID_FROM) <= pl.col(HOUR))
            & (pl.col(VALID_TO).is_null() | (pl.col(HOUR) < pl.col(VALID_TO)))
        )
        .select(CLUSTER, HOUR, LEVEL, DOMAIN, NODE)
    )
    sizes = nodes.select(CLUSTER, pl.col(HOST).alias(NODE), pl.col(GPUS).cast(pl.Float64))
    out = (
        placed.join(sizes.unique([CLUSTER, NODE]), on=[CLUSTER, NODE], how="left")
        .join(_held_per_node(jobs, hours), on=[CLUSTER, HOUR, NODE], how="left")
        .with_columns(
            pl.col(GPUS).fill_null(0.0).alias("_gpus"),
            pl.col("_held").fill_null(0.0),
            pl.col("_attempts").fill_null(0),
            pl.lit(value=True).alias("_healthy"),
        )
    )
    if down is not None:
        out = out.join(
            _down_per_node(down, hours).with_columns(pl.lit(value=True).alias("_down")),
            on=[CLUSTER, HOUR, NODE],
            how="left",
        ).with_columns(pl.col("_down").is_null().alias("_healthy"))
    return out.with_columns(
        pl.when(pl.col("_healthy"))
        .then((pl.col("_gpus") - pl.col("_held")).clip(lower_bound=0.0))
        .otherwise(0.0)
        .alias("_free")
    ).select(CLUSTER, HOUR, LEVEL, DOMAIN, NODE, "_gpus", "_healthy", "_held", "_attempts", "_free")


def domain_capacity_hourly(
    topology: pl.LazyFrame,
    jobs: pl.LazyFrame,
    hours: pl.LazyFrame,
    nodes: pl.LazyFrame,
    *,
    down: pl.LazyFrame | None = None,
    segment_sizes: Sequence[int] = SEGMENT_SIZES,
    states: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Per cluster, hour, level and domain: healthy, allocated and free nodes (trays) and GPUs,
    and the largest gang that still fits in the domain.

    Args:
        topology: ``cluster, level, domain, node, valid_from, valid_to`` (``core.topology``).
        jobs: ``cluster, start_at, end_at, gpus, node_list`` (List[String]; NULL end: running).
        hours: ``cluster, hour``: the hour starts to compute.
        nodes: ``cluster, host, gpus``: GPUs per node (the inventory).
        down: ``cluster, node, start_at, end_at``: node down or drained intervals.
        segment_sizes: the segment sizes s (nodes); ``largest_segment`` is the largest s with
            s <= the domain's whole free nodes.
        states: :func:`hourly_node_states` of the same arguments, when the caller has them
            (None: computed here).

    Returns:
        :data:`DOMAIN_CAPACITY_SCHEMA` rows, one per hour, level and domain of the map in force.
        ``nodes``: the domain's nodes in the map; ``healthy_nodes``: not down;
        ``degraded_nodes`` = nodes − healthy; ``allocated_nodes``: healthy and held by some
        attempt; ``free_nodes``: healthy and whole free; GPUs likewise (``free_gpus`` counts
        the free GPUs of partly held nodes too); ``largest_gang_nodes`` = ``free_nodes``;
        ``largest_segment``: NULL when not even the smallest s fits.
    """
    nh = states if states is not None else hourly_node_states(topology, jobs, hours, nodes, down)
    healthy = pl.col("_healthy")
    per = nh.group_by(CLUSTER, HOUR, LEVEL, DOMAIN).agg(
        pl.len().cast(pl.Int64).alias("nodes"),
        healthy.sum().cast(pl.Int64).alias("healthy_nodes"),
        (healthy & (pl.col("_attempts") > 0)).sum().cast(pl.Int64).alias("allocated_nodes"),
        (healthy & (pl.col("_attempts") == 0)).sum().cast(pl.Int64).alias("free_nodes"),
        pl.col("_gpus").filter(healthy).sum().alias("healthy_gpus"),
        pl.col("_free").sum().alias("free_gpus"),
    )
    sizes = sorted(set(segment_sizes), reverse=True)
    largest: pl.Expr = pl.lit(None, dtype=pl.Int64)
    for s in reversed(sizes):  # ascending: the last s that fits wins
        largest = pl.when(pl.col("free_nodes") >= s).then(pl.lit(s, pl.Int64)).otherwise(largest)
    return (
        per.with_columns(
            (pl.col("nodes") - pl.col("healthy_nodes")).alias("degraded_nodes"),
            (pl.col("healthy_gpus") - pl.col("free_gpus")).alias("allocated_gpus"),
            pl.col("free_nodes").alias("largest_gang_nodes"),
            largest.alias("largest_segment"),
        )
        .select(list(DOMAIN_CAPACITY_SCHEMA))
        .cast(pl.Schema(DOMAIN_CAPACITY_SCHEMA))
        .sort(CLUSTER, HOUR, LEVEL, DOMAIN)
    )


def segment_capacity_hourly(
    capacity: pl.LazyFrame, segment_sizes: Sequence[int] = SEGMENT_SIZES
) -> pl.LazyFrame:
    """Per cluster, hour, level and segment size s: slots of s nodes in one domain, and the
    segment-capacity efficiency ``Σ_d floor(h_d/s)·s ÷ Σ_d h_d``.

    Args:
        capacity: :func:`domain_capacity_hourly` rows.
        segment_sizes: the segment sizes s (nodes).

    Returns:
        :data:`SEGMENT_CAPACITY_SCHEMA` rows. With n_d, h_d, f_d the domain's nodes, healthy and
        whole free nodes: ``configured_slots = Σ floor(n_d/s)``, ``healthy_slots = Σ
        floor(h_d/s)``, ``free_slots = Σ floor(f_d/s)``, ``usable_nodes = healthy_slots``-worth
        of nodes ``Σ floor(h_d/s)·s``, ``efficiency = usable_nodes / Σ h_d`` (NULL with no
        healthy node). Source: the segment rule of Slurm ``--segment`` (a segment does not
        straddle domains).
    """
    seg = pl.LazyFrame({"segment_size": list(segment_sizes)}, schema={"segment_size": pl.Int64()})
    s = pl.col("segment_size")
    out = (
        capacity.join(seg, how="cross")
        .group_by(CLUSTER, HOUR, LEVEL, "segment_size")
        .agg(
            pl.col("nodes").sum(),
            pl.col("healthy_nodes").sum(),
            (pl.col("nodes") // s).sum().alias("configured_slots"),
            (pl.col("healthy_nodes") // s).sum().alias("healthy_slots"),
            (pl.col("free_nodes") // s).sum().alias("free_slots"),
        )
        .with_columns((pl.col("healthy_slots") * s).alias("usable_nodes"))
        .with_columns(
            pl.when(pl.col("healthy_nodes") > 0)
            .then(pl.col("usable_nodes") / pl.col("healthy_nodes"))
            .otherwise(None)
            .alias("efficiency")
        )
    )
    return (
        out.select(list(SEGMENT_CAPACITY_SCHEMA))
        .cast(pl.Schema(SEGMENT_CAPACITY_SCHEMA))
        .sort(CLUSTER, HOUR, LEVEL, "segment_size")
    )


def _waits(
    jobs: pl.LazyFrame,
    pending: pl.LazyFrame | None,
    as_of: pl.LazyFrame,
    min_gpus: float | None = None,
) -> pl.LazyFrame:
    """``cluster, job_id, attempt, team, req_gpus, _from, _to``: one eligible-pending span per
    started attempt (eligible → start) and never-started row (eligible → end, else as_of); with
    ``min_gpus``, only those asking for at least that many GPUs, chosen before anything else is
    computed (the large-job wait causes of a year read 18,000 of 2.1 M attempts)."""
    asked = pl.when(pl.col(REQ_GPUS) > 0).then(pl.col(REQ_GPUS)).otherwise(pl.col(GPUS))
    large = pl.lit(value=True) if min_gpus is None else asked >= min_gpus
    parts = [
        jobs.filter(pl.col(START_AT).is_not_null() & pl.col(ELIGIBLE_AT).is_not_null() & large)
        .join(as_of, on=CLUSTER)
        .select(
            CLUSTER,
            JOB_ID,
            pl.col(ATTEMPT).cast(pl.Int64),
            TEAM,
            asked.cast(pl.Float64).alias(REQ_GPUS),
            pl.col(ELIGIBLE_AT).cast(UTC_DATETIME).alias("_from"),
            pl.min_horizontal(START_AT, "as_of").cast(UTC_DATETIME).alias("_to"),
            pl.col(START_AT).cast(UTC_DATETIME),
        )
    ]
    if pending is not None:
        parts.append(
            pending.filter(
                pl.col(ELIGIBLE_AT).is_not_null()
                & (pl.lit(value=True) if min_gpus is None else pl.col(REQ_GPUS) >= min_gpus)
            )
            .join(as_of, on=CLUSTER)
            .select(
                CLUSTER,
                JOB_ID,
                pl.lit(None, pl.Int64).alias(ATTEMPT),
                TEAM,
                pl.col(REQ_GPUS).cast(pl.Float64),
                pl.col(ELIGIBLE_AT).cast(UTC_DATETIME).alias("_from"),
                pl.min_horizontal(pl.col(END_AT).fill_null(pl.col("as_of")), "as_of")
                .cast(UTC_DATETIME)
                .alias("_to"),
                pl.lit(None, UTC_DATETIME).alias(START_AT),
            )
        )
    return pl.concat(parts).filter((pl.col(REQ_GPUS) > 0) & (pl.col("_to") > pl.col("_from")))


def _node_gpus(nodes: pl.LazyFrame) -> pl.LazyFrame:
    """``cluster, _gpn``: GPUs per node of each cluster (its largest node)."""
    return nodes.group_by(CLUSTER).agg(pl.col(GPUS).cast(pl.Float64).max().alias("_gpn"))


def _domain_size(per_domain: pl.LazyFrame) -> pl.LazyFrame:
    """``cluster, hour, _h``: H at each hour of ``per_domain`` (``cluster, hour, domain,
    healthy_nodes``: the gang level's domains of the map in force at the hour start): the most
    healthy nodes one domain has then, at least 1 (every node down: no gang fits, and the free
    GPUs are 0). The healthy size, as :func:`metrics.placement.job_placement`'s: a domain with a
    node drained cannot hold its configured size, so counting that size made fragmentation no
    placement could fix. (The configured size of every map ever loaded made a later map with
    larger blocks turn earlier hours' waits into fragmentation.)"""
    return per_domain.group_by(CLUSTER, HOUR).agg(
        pl.col("healthy_nodes").max().clip(lower_bound=1).cast(pl.Int64).alias("_h")
    )


def stranded_hourly(
    topology: pl.LazyFrame,
    jobs: pl.LazyFrame,
    hours: pl.LazyFrame,
    nodes: pl.LazyFrame,
    as_of: pl.LazyFrame,
    *,
    pending: pl.LazyFrame | None = None,
    down: pl.LazyFrame | None = None,
    states: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Per cluster and hour: free GPUs no pending job shape can use, at the gang level.

    At each hour start, with the cluster's pending jobs (eligible and not yet started) and
    g GPUs per node, a shape of r GPUs needs n = ceil(r/g) nodes. Free GPUs a shape cannot use:

    * n = 1 (fits one node): the free GPUs of every node with fewer than r free;
    * 1 < n <= H (H: the most healthy nodes one domain has, :func:`_domain_size`): the free
      GPUs of partly held nodes (a gang takes whole nodes) plus, per domain, ``(W_d mod n)·g``
      for W_d whole free nodes (what is left after packing gangs of n into the domain);
    * n > H: the free GPUs of partly held nodes plus ``(Σ_d W_d mod n)·g``.

    ``stranded_gpus`` is that count for the smallest pending shape r_min (what not even the
    smallest waiting job can use), ``expected_stranded_gpus`` its mean over the pending jobs'
    shapes, each weighted by its number of pending jobs (the fragmentation measure of FGD:
    Weng et al., "Beware of Fragmentation", USENIX ATC 2023). Both are 0 with nothing pending.

    A het job's components (``H+O``) are one pending job and one shape, the sum of their GPUs,
    waiting from the earliest eligible time to the latest start
    (:func:`metrics.het_jobs.het_wait_units`: Slurm starts the components together, so free
    GPUs one component could use stay unused until all fit); while some of its components
    already run (partial rows), the shape is the sum of the others' GPUs (``demand``: running
    GPUs are allocated, not pending); the node states (free, held) count each component's own
    GPUs.

    Args:
        topology, jobs, hours, nodes, down: as :func:`domain_capacity_hourly`; ``jobs`` also
            with ``job_id, attempt, team, req_gpus, eligible_at``.
        as_of: ``cluster, as_of``: the data cut-off (pending rows end there).
        pending: never-started rows ``cluster, job_id, team, req_gpus, eligible_at, end_at``.
        states: :func:`hourly_node_states` of the same arguments, when the caller has them
            (None: computed here).

    Returns:
        :data:`STRANDED_SCHEMA` rows, one per cluster and hour with a gang level;
        ``gang_pending_gpu_s``: GPU-seconds of pending demand in the hour from jobs wider than
        one node (the hour's gang demand; the ``held`` leaf's part held for gangs is measured on
        the time axis by :func:`metrics.waterfall.gpu_waterfall_hourly`, ``gang_gpu_s``).
    """
    level = gang_level(topology)
    # The node states are read four times below (free GPUs per node, partly held, whole free
    # per domain, free per level). Left lazy, polars computed them once per read: on a month of
    # a 10,000-GPU cluster, 0.76 s against 0.13 s computed once (BENCHMARKS.md, "The topology
    # tables' node-hour states computed once").
    if states is None:
        states = hourly_node_states(topology, jobs, hours, nodes, down)
    nh = at_gang_level(states, level).collect().lazy()
    gpn = _node_gpus(nodes)
    size = _domain_size(
        nh.group_by(CLUSTER, HOUR, DOMAIN).agg(pl.col("_healthy").sum().alias("healthy_nodes"))
    )
    # A het job's components wait as one job asking their GPUs together (metrics.het_jobs):
    # one pending shape of the summed GPUs of its components not running (demand: a running
    # component's GPUs are allocated); the node states above keep each component's own.
    # Collected once: the waits are read by each shape rule below, and left lazy polars
    # recomputed the het units (a group-by and a join over every attempt) for each read: the
    # year of 10,000 GPUs' topology tables 35.8 s of CPU against 20.6 s before the het units.
    units, pending_units = het_wait_units(jobs, pending, demand=True)
    waits = _waits(units, pending_units, as_of).collect().lazy()
    hrs = hours.select(CLUSTER, pl.col(HOUR).cast(UTC_DATETIME)).unique()
    first = hour_ceil(pl.col("_from"))
    snapshot = (
        waits.select(
            CLUSTER,
            REQ_GPUS,
            pl.datetime_ranges(first, pl.col("_to"), "1h", closed="left").alias(HOUR),
        )
        .explode(HOUR)
        .filter(pl.col(HOUR).is_not_null())
        .join(hrs, on=[CLUSTER, HOUR])
        .group_by(CLUSTER, HOUR, REQ_GPUS)
        .agg(pl.len().cast(pl.Int64).alias("_count"))
        .join(gpn, on=CLUSTER)
        .join(size, on=[CLUSTER, HOUR])
        .with_columns(((pl.col(REQ_GPUS) / pl.col("_gpn")).ceil().cast(pl.Int64)).alias("_n"))
    )
    whole = pl.col("_attempts") == 0
    per_node = nh.filter(pl.col("_healthy")).join(gpn, on=CLUSTER)
    partial = per_node.filter(~whole).group_by(CLUSTER, HOUR).agg(pl.col("_free").sum().alias("_p"))
    whole_d = per_node.filter(whole).group_by(CLUSTER, HOUR, DOMAIN).agg(pl.len().alias("_w"))
    # n = 1: nodes with fewer free GPUs than r
    single = (
        snapshot.filter(pl.col("_n") == 1)
        .join(per_node.select(CLUSTER, HOUR, "_free"), on=[CLUSTER, HOUR])
        .filter(pl.col("_free") < pl.col(REQ_GPUS))
        .group_by(CLUSTER, HOUR, REQ_GPUS)
        .agg(pl.col("_free").sum().alias("_strand"))
    )
    in_domain = (
        snapshot.filter((pl.col("_n") > 1) & (pl.col("_n") <= pl.col("_h")))
        .join(whole_d, on=[CLUSTER, HOUR], how="left")
        .group_by(CLUSTER, HOUR, REQ_GPUS)
        .agg(((pl.col("_w").fill_null(0) % pl.col("_n")) * pl.col("_gpn")).sum().alias("_rem"))
    )
    pooled = (
        snapshot.filter(pl.col("_n") > pl.col("_h"))
        .join(
            whole_d.group_by(CLUSTER, HOUR).agg(pl.col("_w").sum()), on=[CLUSTER, HOUR], how="left"
        )
        .select(
            CLUSTER,
            HOUR,
            REQ_GPUS,
            ((pl.col("_w").fill_null(0) % pl.col("_n")) * pl.col("_gpn")).alias("_rem"),
        )
    )
    gang = (
        pl.concat([in_domain, pooled])
        .join(partial, on=[CLUSTER, HOUR], how="left")
        .select(
            CLUSTER, HOUR, REQ_GPUS, (pl.col("_rem") + pl.col("_p").fill_null(0.0)).alias("_strand")
        )
    )
    shapes = snapshot.join(
        pl.concat([single, gang]), on=[CLUSTER, HOUR, REQ_GPUS], how="left"
    ).with_columns(pl.col("_strand").fill_null(0.0).cast(pl.Float64))
    per_hour = shapes.group_by(CLUSTER, HOUR).agg(
        pl.col("_count").sum().alias("pending_jobs"),
        pl.col(REQ_GPUS).min().alias("min_pending_gpus"),
        pl.col("_strand").sort_by(REQ_GPUS).first().alias("stranded_gpus"),
        ((pl.col("_strand") * pl.col("_count")).sum() / pl.col("_count").sum()).alias(
            "expected_stranded_gpus"
        ),
    )
    free = nh.group_by(CLUSTER, HOUR, LEVEL).agg(pl.col("_free").sum().alias("free_gpus"))
    gangs = waits.join(gpn, on=CLUSTER).filter(pl.col(REQ_GPUS) > pl.col("_gpn"))
    demand = (
        _pieces(gangs)
        .group_by(CLUSTER, HOUR)
        .agg((pl.col(REQ_GPUS) * pl.col("_sec")).sum().alias("gang_pending_gpu_s"))
    )
    return (
        free.join(per_hour, on=[CLUSTER, HOUR], how="left")
        .join(demand, on=[CLUSTER, HOUR], how="left")
        .with_columns(
            pl.col("pending_jobs").fill_null(0),
            pl.col("stranded_gpus", "expected_stranded_gpus", "gang_pending_gpu_s").fill_null(0.0),
        )
        .select(list(STRANDED_SCHEMA))
        .cast(pl.Schema(STRANDED_SCHEMA))
        .sort(CLUSTER, HOUR)
    )


def _pieces(waits: pl.LazyFrame) -> pl.LazyFrame:
    """The spans ``_from``–``_to`` cut at hour boundaries: ``hour`` and ``_sec`` per piece."""
    return (
        waits.with_columns(
            pl.datetime_ranges(
                pl.col("_from").dt.truncate("1h"), pl.col("_to"), "1h", closed="left"
            ).alias(HOUR)
        )
        .explode(HOUR)
        .with_columns(
            (
                (
                    pl.min_horizontal(pl.col(HOUR) + _HOUR, pl.col("_to"))
                    - pl.max_horizontal(pl.col(HOUR), pl.col("_from"))
                ).dt.total_microseconds()
                / 1e6
            ).alias("_sec")
        )
        .filter(pl.col("_sec") > 0)
    )


#: Pending reasons that state a topology cause (Slurm job_state_reason strings and Kueue's
#: TAS message "… topology … allows to fit only N out of M …"), case-insensitive.
_TOPOLOGY_REASON: Final = r"(?i)topolog|switch|segment|\bblock|fit only"


def topology_reason(reason: pl.Expr) -> pl.Expr:
    """True where a pending reason states a topology cause (:data:`_TOPOLOGY_REASON`)."""
    return reason.str.contains(_TOPOLOGY_REASON)


#: :func:`_team_held` sums GPUs in integer units of 1/7,340,032,000 GPU (7,000 × 2**20), and the
#: quota rule of :func:`large_job_wait_causes` compares held GPUs with a team's entitlement in
#: those units. Every GPU count the inputs give is a whole number of units: whole GPUs,
#: Kubernetes milli-quantities (``500m``, ``200m``), the MIG slices (sevenths, and the A30's
#: quarters: :mod:`metrics.mig`). So the sums are exact whatever their order, and a team holding
#: exactly its entitlement is over it, which a float sum decides by its rounding (five pods of
#: 0.2 GPU sum to 1.0 as floats, ten of 0.1 to 0.9999999999999999). The largest sum it holds
#: is 1.2 billion GPUs.
_HELD_UNITS: Final = 7_000 * 2**20


def _team_held(jobs: pl.LazyFrame, wanted: pl.DataFrame) -> pl.LazyFrame:
    """``cluster, hour, team, _held``: GPUs the team's attempts hold at each hour start ``h``
    (Σ ``gpus`` of the attempts with ``start_at <= h < end_at``, a running attempt to the end of
    time), in integer units of :data:`_HELD_UNITS` (what the quota rule compares), for the
    ``wanted`` rows (``cluster, hour, team``) only.

    A sweep, not a count per hour: each attempt adds its GPUs at the first hour start at or
    after ``start_at`` and takes them away at the first at or after ``end_at``; the running sum
    of those steps per cluster and team, read at each wanted hour (as-of join), is the held
    GPUs there. The memory follows the attempts (two steps each), not the attempt-hours: a year
    of 10,000 GPUs' 2.1 M attempts cut into the 4.5 M hours they span set the year's build peak
    (BENCHMARKS.md, "The large-job wait causes' held GPUs by a sweep"). Summed in integer
    units, a sum is exact and does not depend on its order; a GPU count that is not a finite
    number counts as none. A wanted row whose team holds nothing has 0."""
    start, end = pl.col(START_AT), pl.col(END_AT)
    # only the attempts that end after a cluster's first wanted hour and start before its last
    # one ends take a step that counts (an incremental build wants a day's hours), chosen as
    # they are read; one that spans no hour start (within one hour, or ending before it
    # starts) holds none
    meets = [
        (pl.col(CLUSTER) == c) & (start < hi + _HOUR) & (end.is_null() | (end > lo))
        for c, lo, hi in wanted.group_by(CLUSTER)
        .agg(pl.col(HOUR).min(), pl.col(HOUR).max().alias("_hi"))
        .iter_rows()
    ]
    spans = (
        jobs.filter(start.is_not_null() & pl.any_horizontal(pl.lit(value=False), *meets))
        .select(
            CLUSTER,
            TEAM,
            _held_units(pl.col(GPUS).cast(pl.Float64)).fill_null(0).alias("_d"),
            hour_ceil(start).cast(UTC_DATETIME).alias("_on"),
            hour_ceil(end).cast(UTC_DATETIME).alias("_off"),
        )
        .filter(pl.col("_off").is_null() | (pl.col("_off") > pl.col("_on")))
    )
    steps = (
        pl.concat(
            [
                spans.select(CLUSTER, TEAM, pl.col("_on").alias("_at"), "_d"),
                spans.filter(pl.col("_off").is_not_null()).select(
                    CLUSTER, TEAM, pl.col("_off").alias("_at"), -pl.col("_d")
                ),
            ]
        )
        .group_by(CLUSTER, TEAM, "_at")
        .agg(pl.col("_d").sum())
        .sort(CLUSTER, TEAM, "_at")
        .with_columns(pl.col("_d").cum_sum().over(CLUSTER, TEAM).alias("_held"))
        .sort("_at")
    )
    return (
        wanted.lazy()
        .select(CLUSTER, pl.col(HOUR).cast(UTC_DATETIME), TEAM)
        .unique()
        .sort(HOUR)
        .join_asof(
            steps.select(CLUSTER, TEAM, "_at", "_held"),
            left_on=HOUR,
            right_on="_at",
            by=[CLUSTER, TEAM],
            strategy="backward",
            check_sortedness=False,
        )
        .select(CLUSTER, HOUR, TEAM, pl.col("_held").fill_null(0))
    )


def _held_units(gpus: pl.Expr) -> pl.Expr:
    """``gpus`` (GPUs, Float64) as an Int64 count of :data:`_HELD_UNITS`, rounded to the nearest
    unit; NULL where it is not a finite number or is too large to count (over 600 million GPUs)."""
    scaled = (gpus * _HELD_UNITS).round(0)
    return (
        pl.when(scaled.is_finite() & (scaled.abs() < 2.0**62))
        .then(scaled)
        .otherwise(None)
        .cast(pl.Int64)
    )


#: The pending reason a scheduler gives when it found no resources, whatever the cause
#: (Slurm's ``Resources``: 22.05 gives it to a gang held by ``--switches`` too). Its spells are
#: split by the rules at each poll instant (counterfactual), not read as a stated cause.
RESOURCES_REASON: Final = "Resources"
#: Pending reasons that state nothing yet (Slurm's ``None``: the scheduler has not looked at the
#: job since it was submitted): their seconds take the hour-start rules.
_UNSTATED_REASONS: Final = ("None",)


def _poll_state(
    at: pl.LazyFrame,
    jobs: pl.LazyFrame,
    topology: pl.LazyFrame,
    level: pl.LazyFrame,
    capacity: pl.LazyFrame,
    nodes: pl.LazyFrame,
    down: pl.LazyFrame | None,
) -> pl.LazyFrame:
    """``cluster, _at, _k, _pfree, _ptop``: the state at poll instants ``_at`` (rows of ``at``:
    ``cluster, _at, _k``), from the attempts' own allocations rather than an hour's snapshot.

    Node by node, as :func:`hourly_node_states` at an hour start, over the nodes of the gang
    level's domains in the map in force at ``_at`` (hours ``capacity`` has a row of the gang
    level for only): a node is healthy when no ``down`` interval covers the instant's hour start;
    attempts running at ``_at`` (``start_at ≤ _at < end_at``; an open end runs on) hold ``gpus /
    distinct nodes`` on each of their nodes. ``_pfree`` = Σ free GPUs of the healthy nodes (their
    GPUs less those held, at least 0; a node down or drained has none, whatever runs on it, and
    an attempt on a node the map does not place takes nothing from the level);
    ``_ptop`` = the whole free nodes (healthy, no attempt running on them) of the ``_k``
    domains with the most of them. Each node is counted once, as at the hour start: a node
    drained while an attempt still runs on it is not free, once.
    """
    instants = at.select(CLUSTER, pl.col("_at").cast(UTC_DATETIME)).unique()
    inst_hours = instants.select(CLUSTER, pl.col("_at").dt.truncate("1h").alias(HOUR)).unique()
    far = pl.lit(dt.datetime(9999, 1, 1, tzinfo=dt.UTC)).cast(UTC_DATETIME)
    running = (
        jobs.filter(pl.col(START_AT).is_not_null())
        .select(
            CLUSTER,
            JOB_ID,
            ATTEMPT,
            pl.col(GPUS).cast(pl.Float64),
            "node_list",
            pl.col(START_AT).cast(UTC_DATETIME).alias("_s"),
            pl.col(END_AT).cast(UTC_DATETIME).fill_null(far).alias("_e"),
        )
        .join(
            inst_hours.group_by(CLUSTER).agg(
                pl.col(HOUR).min().alias("_h0"), pl.col(HOUR).max().alias("_h1")
            ),
            on=CLUSTER,
        )
        .filter((pl.col("_e") > pl.col("_h0")) & (pl.col("_s") < pl.col("_h1") + _HOUR))
        .with_columns(
            pl.datetime_ranges(
                pl.max_horizontal(pl.col("_s").dt.truncate("1h"), "_h0"),
                pl.min_horizontal("_e", pl.col("_h1") + _HOUR),
                "1h",
                closed="left",
            ).alias(HOUR)
        )
        .explode(HOUR)
        .join(inst_hours, on=[CLUSTER, HOUR], how="semi")
    )
    busy = (
        instants.with_columns(pl.col("_at").dt.truncate("1h").alias(HOUR))
        .join(running, on=[CLUSTER, HOUR])
        .filter((pl.col("_s") <= pl.col("_at")) & (pl.col("_at") < pl.col("_e")))
        .unique([CLUSTER, "_at", JOB_ID, ATTEMPT])
    )
    held = (
        busy.select(
            CLUSTER,
            "_at",
            pl.col(GPUS).cast(pl.Float64),
            pl.col("node_list").list.unique().alias(NODE),
        )
        .filter(pl.col(NODE).list.len() > 0)
        .with_columns((pl.col(GPUS) / pl.col(NODE).list.len()).alias("_held"))
        .explode(NODE)
        .group_by(CLUSTER, "_at", NODE)
        .agg(pl.col("_held").sum(), pl.len().alias("_attempts"))
    )
    maps = _maps(topology).join(level.drop(VALID_TO), on=[CLUSTER, LEVEL, VALID_FROM])
    gang_hours = capacity.select(CLUSTER, HOUR, LEVEL).unique()
    sizes = nodes.select(CLUSTER, pl.col(HOST).alias(NODE), pl.col(GPUS).cast(pl.Float64))
    mapped = (
        instants.join(maps, on=CLUSTER)
        .filter(
            (pl.col(VALID_FROM) <= pl.col("_at"))
            & (pl.col(VALID_TO).is_null() | (pl.col("_at") < pl.col(VALID_TO)))
        )
        .with_columns(pl.col("_at").dt.truncate("1h").alias(HOUR))
        .join(gang_hours, on=[CLUSTER, HOUR, LEVEL], how="semi")
    )
    per_node = (
        mapped.join(sizes.unique([CLUSTER, NODE]), on=[CLUSTER, NODE], how="left")
        .join(held, on=[CLUSTER, "_at", NODE], how="left")
        .with_columns(pl.lit(value=True).alias("_healthy"))
    )
    if down is not None:
        # the instants' mapped nodes met with their own intervals (not every hour with every
        # interval of the cluster: a year's hours times its intervals)
        out = (
            mapped.select(CLUSTER, HOUR, NODE)
            .unique()
            .join(down.select(CLUSTER, NODE, "start_at", "end_at"), on=[CLUSTER, NODE])
            .filter(
                (pl.col("start_at") <= pl.col(HOUR))
                & (pl.col("end_at").is_null() | (pl.col(HOUR) < pl.col("end_at")))
            )
            .select(CLUSTER, HOUR, NODE)
            .unique()
            .with_columns(pl.lit(value=True).alias("_down"))
        )
        per_node = per_node.join(out, on=[CLUSTER, HOUR, NODE], how="left").with_columns(
            pl.col("_down").is_null().alias("_healthy")
        )
    healthy = pl.col("_healthy")
    per_domain = (
        per_node.group_by(CLUSTER, "_at", LEVEL, DOMAIN)
        .agg(
            (healthy & pl.col("_attempts").is_null()).sum().cast(pl.Int64).alias("_wf"),
            pl.when(healthy)
            .then((pl.col(GPUS).fill_null(0.0) - pl.col("_held").fill_null(0.0)).clip(0.0))
            .otherwise(0.0)
            .sum()
            .alias("_f"),
        )
        .with_columns(
            pl.col("_wf").rank("ordinal", descending=True).over(CLUSTER, "_at").alias("_rank")
        )
    )
    free = per_domain.group_by(CLUSTER, "_at").agg(pl.col("_f").sum().alias("_pfree"))
    top = (
        at.select(CLUSTER, pl.col("_at").cast(UTC_DATETIME), "_k")
        .unique()
        .join(per_domain, on=[CLUSTER, "_at"])
        .group_by(CLUSTER, "_at", "_k")
        .agg(pl.col("_wf").filter(pl.col("_rank") <= pl.col("_k")).sum().alias("_ptop"))
    )
    return top.join(free, on=[CLUSTER, "_at"]).select(CLUSTER, "_at", "_k", "_pfree", "_ptop")


def _resource_spells(
    state: pl.LazyFrame,
    spells: pl.LazyFrame,
    jobs: pl.LazyFrame,
    topology: pl.LazyFrame,
    level: pl.LazyFrame,
    capacity: pl.LazyFrame,
    *,
    nodes: pl.LazyFrame,
    down: pl.LazyFrame | None,
) -> pl.LazyFrame:
    """``state`` with ``_res`` (seconds of each piece under :data:`RESOURCES_REASON` spells)
    split into ``_rquota`` (the team over its entitlement at the hour start), ``_rprio``,
    ``_rfrag`` and ``_rother`` by the rules at each spell's first instant in the piece
    (:func:`_poll_state`), and ``_ridle`` = free GPUs × the fragmentation seconds."""
    keys = [CLUSTER, JOB_ID, ATTEMPT, HOUR]
    res = (
        state.select(*keys, "_from", "_to", "_n", "_k", "_q", REQ_GPUS)
        .join(spells.filter(pl.col("reason") == RESOURCES_REASON), on=[CLUSTER, JOB_ID])
        .with_columns(pl.max_horizontal(HOUR, "_from", "_ss").alias("_at"))
        .with_columns(
            (
                (
                    pl.min_horizontal(
                        pl.col(HOUR) + _HOUR, "_to", pl.col("_se").fill_null(pl.col("_to"))
                    )
                    - pl.col("_at")
                ).dt.total_microseconds()
                / 1e6
            ).alias("_t")
        )
        .filter(pl.col("_t") > 0)
    )
    poll = _poll_state(
        res.select(CLUSTER, "_at", "_k"), jobs, topology, level, capacity, nodes, down
    )
    rule = (
        pl.when(pl.col("_q"))
        .then(pl.lit("quota"))
        .when(pl.col("_pfree").is_null())
        .then(pl.lit("other"))
        .when(pl.col("_pfree") < pl.col(REQ_GPUS))
        .then(pl.lit("priority"))
        .when(pl.col("_ptop") < pl.col("_n"))
        .then(pl.lit("fragmentation"))
        .otherwise(pl.lit("other"))
    )

    def spent(name: str) -> pl.Expr:
        return pl.when(pl.col("_rc") == name).then(pl.col("_t")).otherwise(0.0).sum()

    split = (
        res.join(poll, on=[CLUSTER, "_at", "_k"], how="left")
        .with_columns(rule.alias("_rc"))
        .group_by(keys)
        .agg(
            pl.col("_t").sum().alias("_res"),
            spent("fragmentation").alias("_rfrag"),
            spent("quota").alias("_rquota"),
            spent("priority").alias("_rprio"),
            spent("other").alias("_rother"),
            pl.when(pl.col("_rc") == "fragmentation")
            .then(pl.col("_pfree") * pl.col("_t"))
            .otherwise(0.0)
            .sum()
            .alias("_ridle"),
        )
    )
    cols = ("_res", "_rquota", "_rfrag", "_rprio", "_rother", "_ridle")
    return state.join(split, on=keys, how="left", nulls_equal=True).with_columns(
        pl.col(c).fill_null(0.0) for c in cols
    )


def large_job_wait_causes(
    capacity: pl.LazyFrame,
    jobs: pl.LazyFrame,
    nodes: pl.LazyFrame,
    as_of: pl.LazyFrame,
    *,
    topology: pl.LazyFrame,
    pending: pl.LazyFrame | None = None,
    shares: pl.LazyFrame | None = None,
    reasons: pl.LazyFrame | None = None,
    min_gpus: float = 64.0,
    only: pl.LazyFrame | None = None,
    down: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Per large job: its eligible wait split into fair-share/quota, priority, fragmentation
    and other delay (after Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for
    DNN Training Workloads", USENIX ATC 2019, the Philly study).

    The wait ``[eligible_at, min(start_at, as_of))`` (never started: to its end or ``as_of``) is
    cut at hour boundaries; each piece takes the state at its hour's start (from ``capacity``
    at the gang level), checked in this order:

    1. **quota**: the job's team held at least its entitled GPUs (share × the cluster's GPUs);
    2. **priority**: fewer free GPUs (``free_gpus``, healthy) than the job asks for;
    3. **fragmentation**: enough free GPUs by count, but no placement satisfying the
       topology: with n = ceil(r/g) nodes and H the most healthy nodes one domain has
       (:func:`_domain_size`), the k = ceil(n/H) domains
       with the most whole free nodes hold fewer than n;
    4. **other**: it would have fit (scheduler cycle, backfill, reservation), or no capacity
       snapshot covers the hour.

    A het job's components (``H+O``) are one job here, keyed by its leader ``H+0``: it asks the
    sum of their GPUs and waits from the earliest eligible time to the latest start
    (:func:`metrics.het_jobs.het_wait_units`; Slurm starts the components together).

    With ``reasons`` (``pending_reason_spells``): the seconds of the job's spells whose reason
    states a topology cause (:func:`topology_reason`) are fragmentation; the seconds of its
    :data:`RESOURCES_REASON` spells (a reason that names no cause: Slurm 22.05 gives it to a
    gang held by ``--switches``) take the rules at the spell's first instant in each piece
    (:func:`_poll_state`: running attempts' own nodes at that instant, health and quota at the
    hour start), so a wait shorter than an hour is seen at the polls' resolution; the rest of
    each piece takes the rules at the hour start, with 3 read as other when a spell of the job
    with a stated reason (not :data:`RESOURCES_REASON` nor Slurm's ``None``) overlaps the
    wait. ``basis`` is ``exact`` where such a stated spell overlaps the wait and no
    fragmentation came from its ``Resources`` spells; else ``counterfactual`` (a stated spell
    outside the wait, a stale poll's or another wait's, states nothing of it).

    Args:
        capacity: :func:`domain_capacity_hourly` rows.
        jobs: started attempts ``cluster, job_id, attempt, team, gpus, req_gpus, eligible_at,
            start_at, end_at, node_list``.
        nodes: ``cluster, host, gpus``.
        as_of: ``cluster, as_of``.
        topology: the map (for the gang level of each map, :func:`gang_level`; H is read from
            ``capacity``).
        pending: never-started rows ``cluster, job_id, team, req_gpus, eligible_at, end_at``.
        shares: ``team, pool, share, valid_from`` (pool = cluster; the latest row at or before
            the hour applies).
        reasons: ``cluster, job_id, reason, spell_start, spell_end``; ``jobs`` then also needs
            ``node_list`` (list of hosts) for the state at poll instants.
        min_gpus: a job is large when it asks for at least this many GPUs.
        only: ``cluster, job_id`` (a het component names its het job): the waits of these
            jobs only (an incremental build's jobs whose waits touch its affected days);
            ``jobs`` still gives every attempt for the teams' held GPUs and the state at poll
            instants. None: every large job.
        down: ``cluster, node, start_at, end_at``: the node down or drained intervals
            ``capacity`` was computed with; which nodes are healthy at a poll instant's hour
            start (None: every node).

    Returns:
        :data:`WAIT_CAUSES_SCHEMA` rows; ``quota_s + priority_s + fragmentation_s + other_s =
        wait_s`` (seconds), ``blocked_idle_gpu_s`` = Σ free GPUs × seconds of the fragmentation
        pieces (GPU-seconds idle while the job was held by topology).
    """
    level = gang_level(topology)
    gpn = _node_gpus(nodes)
    # A het job's components wait as one job asking their GPUs together (metrics.het_jobs); the
    # teams' held GPUs and the running attempts' nodes below still read each component's own.
    units, pending_units = het_wait_units(jobs, pending)
    waits = _waits(units, pending_units, as_of, min_gpus)
    if only is not None:
        named = only.select(CLUSTER, het_unit_id(pl.col(JOB_ID).cast(pl.String))).unique()
        waits = waits.join(named, on=[CLUSTER, JOB_ID], how="semi")
    # a cluster with no gang level has no rows; an hour with no capacity row has no H (other)
    pieces = _pieces(waits).join(level.select(CLUSTER).unique(), on=CLUSTER, how="semi")
    cap = at_gang_level(capacity, level)
    size = _domain_size(cap)
    pieces = pieces.join(gpn, on=CLUSTER).join(size, on=[CLUSTER, HOUR], how="left")
    ranked = cap.select(
        CLUSTER,
        HOUR,
        "free_gpus",
        "free_nodes",
        pl.col("free_nodes").rank("ordinal", descending=True).over(CLUSTER, HOUR).alias("_rank"),
    )
    state = pieces.with_columns(
        (pl.col(REQ_GPUS) / pl.col("_gpn")).ceil().cast(pl.Int64).alias("_n")
    ).with_columns(((pl.col("_n") + pl.col("_h") - 1) // pl.col("_h")).alias("_k"))
    fit = (
        state.select(CLUSTER, HOUR, "_k")
        .unique()
        .join(ranked, on=[CLUSTER, HOUR])
        .group_by(CLUSTER, HOUR, "_k")
        .agg(
            pl.col("free_gpus").sum().alias("_free"),
            pl.col("free_nodes").filter(pl.col("_rank") <= pl.col("_k")).sum().alias("_top"),
        )
    )
    # the waits' hour pieces, held (a year's large waits: 237,579 rows) so the GPUs their teams
    # hold are summed over only the attempts that meet their hours
    pieces_held = (
        state.join(fit, on=[CLUSTER, HOUR, "_k"], how="left")
        .with_columns(pl.col("_free").is_not_null().alias("_seen"))
        .with_columns(pl.col("_free", "_top").fill_null(0))
        .collect()
    )
    cluster_gpus = nodes.group_by(CLUSTER).agg(pl.col(GPUS).cast(pl.Float64).sum().alias("_cap"))
    held = _team_held(jobs, pieces_held.select(CLUSTER, HOUR, TEAM))
    state = (
        pieces_held.lazy()
        .join(held, on=[CLUSTER, HOUR, TEAM], how="left")
        .join(cluster_gpus, on=CLUSTER)
    )
    if shares is not None:
        sh = shares.select(
            pl.col("pool").alias(CLUSTER),
            TEAM,
            pl.col("share").cast(pl.Float64),
            pl.col("valid_from").cast(UTC_DATETIME).alias("_sf"),
        ).sort("_sf")
        state = state.sort(HOUR).join_asof(
            sh,
            left_on=HOUR,
            right_on="_sf",
            by=[CLUSTER, TEAM],
            strategy="backward",
            check_sortedness=False,
        )
    else:
        state = state.with_columns(pl.lit(None, pl.Float64).alias("share"))
    # compared in whole units (_HELD_UNITS): a team holding exactly its entitlement is over it,
    # whatever the rounding of the floats it is summed from
    over_quota = pl.col("share").is_not_null() & (
        pl.col("_held").fill_null(0) >= _held_units(pl.col("share") * pl.col("_cap"))
    )
    cause = (
        pl.when(~pl.col("_seen"))
        .then(pl.lit("other"))
        .when(over_quota)
        .then(pl.lit("quota"))
        .when(pl.col("_free") < pl.col(REQ_GPUS))
        .then(pl.lit("priority"))
        .when(pl.col("_top") < pl.col("_n"))
        .then(pl.lit("fragmentation"))
        .otherwise(pl.lit("other"))
    )
    state = state.with_columns(
        cause.alias("_cause"), over_quota.alias("_q"), pl.lit(0.0).alias("_topo")
    )
    keys = [CLUSTER, JOB_ID]
    if reasons is not None:
        spells = reasons.select(
            CLUSTER,
            pl.col(JOB_ID).cast(pl.String),
            "reason",
            pl.col("spell_start").cast(UTC_DATETIME).alias("_ss"),
            pl.col("spell_end").cast(UTC_DATETIME).alias("_se"),
        )
        # A wait is stated by a spell of its own job that overlaps it ([eligible, start or
        # cut-off)), not by one outside it: a stale poll of a job long started, or a later
        # wait's (a requeued attempt's) spells, say nothing of this wait.
        waits = state.group_by(*keys, ATTEMPT, "_from").agg(pl.col("_to").max().alias("_wend"))
        stated = (
            spells.filter(~pl.col("reason").is_in([RESOURCES_REASON, *_UNSTATED_REASONS]))
            .join(waits, on=keys)
            .filter(
                (pl.col("_ss") < pl.col("_wend"))
                & (pl.col("_se").is_null() | (pl.col("_se") > pl.col("_from")))
            )
            .select(*keys, ATTEMPT, "_from")
            .unique()
            .with_columns(pl.lit(value=True).alias("_exact"))
        )
        topo = (
            state.select(*keys, ATTEMPT, HOUR, "_from", "_to")
            .join(spells.filter(topology_reason(pl.col("reason"))), on=keys)
            .with_columns(
                (
                    (
                        pl.min_horizontal(
                            pl.col(HOUR) + _HOUR, "_to", pl.col("_se").fill_null(pl.col("_to"))
                        )
                        - pl.max_horizontal(HOUR, "_from", "_ss")
                    ).dt.total_microseconds()
                    / 1e6
                )
                .clip(lower_bound=0.0)
                .alias("_t")
            )
            .group_by(*keys, ATTEMPT, HOUR)
            .agg(pl.col("_t").sum())
        )
        state = (
            state.drop("_topo")
            .join(stated, on=[*keys, ATTEMPT, "_from"], how="left", nulls_equal=True)
            .join(topo, on=[*keys, ATTEMPT, HOUR], how="left", nulls_equal=True)
            .with_columns(
                pl.col("_exact").fill_null(value=False),
                pl.min_horizontal(pl.col("_t").fill_null(0.0), "_sec").alias("_topo"),
            )
            .with_columns(
                pl.when(pl.col("_exact") & (pl.col("_cause") == "fragmentation"))
                .then(pl.lit("other"))
                .otherwise(pl.col("_cause"))
                .alias("_cause")
            )
        )
        state = _resource_spells(
            state, spells, jobs, topology, level, capacity, nodes=nodes, down=down
        )
    else:
        state = state.with_columns(
            pl.lit(value=False).alias("_exact"),
            *(
                pl.lit(0.0).alias(c)
                for c in ("_res", "_rquota", "_rfrag", "_rprio", "_rother", "_ridle")
            ),
        )
    rest = pl.col("_sec") - pl.col("_topo") - pl.col("_res")

    def part(name: str) -> pl.Expr:
        return pl.when(pl.col("_cause") == name).then(rest).otherwise(0.0).sum()

    return (
        state.group_by(*keys, ATTEMPT, TEAM, REQ_GPUS, "_n", "_from", START_AT)
        .agg(
            pl.col("_sec").sum().alias("wait_s"),
            (part("quota") + pl.col("_rquota").sum()).alias("quota_s"),
            (part("priority") + pl.col("_rprio").sum()).alias("priority_s"),
            (part("fragmentation") + pl.col("_topo").sum() + pl.col("_rfrag").sum()).alias(
                "fragmentation_s"
            ),
            (part("other") + pl.col("_rother").sum()).alias("other_s"),
            (
                pl.when(pl.col("_cause") == "fragmentation")
                .then(pl.col("_free") * rest)
                .otherwise(0.0)
                + pl.when(pl.col("_exact")).then(pl.col("_free") * pl.col("_topo")).otherwise(0.0)
                + pl.col("_ridle")
            )
            .sum()
            .alias("blocked_idle_gpu_s"),
            (pl.col("_exact").any() & (pl.col("_rfrag").sum() == 0)).alias("_exact"),
        )
        .select(
            *keys,
            ATTEMPT,
            TEAM,
            REQ_GPUS,
            pl.col("_n").alias("req_nodes"),
            pl.col("_from").alias(ELIGIBLE_AT),
            START_AT,
            "wait_s",
            "quota_s",
            "priority_s",
            "fragmentation_s",
            "other_s",
            "blocked_idle_gpu_s",
            pl.when(pl.col("_exact"))
            .then(pl.lit("exact"))
            .otherwise(pl.lit("counterfactual"))
            .alias("basis"),
        )
        .cast(pl.Schema(WAIT_CAUSES_SCHEMA))
        .sort(CLUSTER, JOB_ID, ATTEMPT, nulls_last=True)
    )
