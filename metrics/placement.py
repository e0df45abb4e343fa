"""Gang placement: how many topology domains an attempt spread over, against the fewest it
could have used (METRICS.md, "Topology and gang placement").

A *topology map* holds one row per level, domain and node with the interval it was in force
(``valid_from``/``valid_to``, NULL: open); an attempt is placed with the map in force at its
start. Per attempt and level, with N its nodes and H the level's domain size (the largest
domain of the map; its healthy size when node down intervals are given):

* ``domains_used``: distinct domains its nodes are in;
* ``domains_min = ceil(N / H)``, or with a segment size s (Slurm ``--segment``)
  ``ceil(ceil(N / s) / floor(H / s))`` (NULL when a segment does not fit a domain);
* ``spread = domains_used − domains_min``.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

import polars as pl

from metrics._helpers import hour_ceil
from metrics.schema import ATTEMPT, CLUSTER, JOB_ID, START_AT, UTC_DATETIME

__all__ = [
    "FRAGMENTATION_SCHEMA",
    "GANG_NODES",
    "HOSTNAME_LABEL",
    "PLACEMENT_SCHEMA",
    "assignment_node_lists",
    "domains_min",
    "fragmentation_hourly",
    "job_placement",
    "topology_requests",
    "with_assignment_nodes",
]

LEVEL: Final = "level"
DOMAIN: Final = "domain"
NODE: Final = "node"
VALID_FROM: Final = "valid_from"
VALID_TO: Final = "valid_to"
SEGMENT_SIZE: Final = "segment_size"

#: Columns of :func:`job_placement`'s result, in order.
PLACEMENT_SCHEMA: dict[str, pl.DataType] = {
    CLUSTER: pl.String(),
    JOB_ID: pl.String(),
    ATTEMPT: pl.Int64(),
    LEVEL: pl.String(),
    START_AT: UTC_DATETIME,
    "nodes": pl.Int64(),
    "domain_size": pl.Int64(),
    "domains_used": pl.Int64(),
    "domains_min": pl.Int64(),
    "spread": pl.Int64(),
}

#: Stands in for a NULL ``valid_from`` (a map in force since ever) in joins and as-of joins.
_SINCE_EVER: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MAP_KEYS: Final = [CLUSTER, LEVEL, VALID_FROM]


def _ceil_div(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    return (a + b - 1) // b


def domains_min(nodes: pl.Expr, size: pl.Expr, segment: pl.Expr) -> pl.Expr:
    """The fewest domains of ``size`` nodes that hold ``nodes`` nodes: ``ceil(N/H)``, or with
    a segment size s ``ceil(ceil(N/s) / floor(H/s))``; NULL where ``floor(H/s)`` is 0."""
    per_domain = size // segment
    segmented = (
        pl.when(per_domain > 0)
        .then(_ceil_div(_ceil_div(nodes, segment), per_domain))
        .otherwise(None)
    )
    return pl.when(segment.is_null()).then(_ceil_div(nodes, size)).otherwise(segmented)


def _maps(topology: pl.LazyFrame) -> pl.LazyFrame:
    return topology.select(
        CLUSTER, LEVEL, DOMAIN, NODE,
        pl.col(VALID_FROM).fill_null(_SINCE_EVER).cast(UTC_DATETIME),
        pl.col(VALID_TO).cast(UTC_DATETIME),
    ).unique()  # fmt: skip


def _healthy_size(maps: pl.LazyFrame, sizes: pl.LazyFrame, down: pl.LazyFrame) -> pl.LazyFrame:
    """``cluster, level, valid_from, at, healthy_size``: from ``at`` on (to the next ``at``),
    the largest number of nodes one domain of the map has up, where ``down`` says which nodes
    were down (``cluster, node, start_at, end_at``; NULL end: still down)."""
    down_nodes = (
        down.select(CLUSTER, NODE, pl.col("start_at").alias("_s"), pl.col("end_at").alias("_e"))
        .join(maps, on=[CLUSTER, NODE])
        .filter(pl.col(VALID_TO).is_null() | (pl.col("_s") < pl.col(VALID_TO)))
    )
    ends = down_nodes.filter(pl.col("_e").is_not_null())
    points = pl.concat(
        [
            down_nodes.select(*_MAP_KEYS, pl.col("_s").alias("at")),
            ends.select(*_MAP_KEYS, pl.col("_e").alias("at")),
        ]
    ).unique()
    # Each interval meets the points `_s <= at < _e` of its map: with the map's points numbered
    # in time order, the run from the index of `_s` to the index of `_e` (every start and end is
    # a point; no end: to the map's last point). Only the pairs that meet are formed, not every
    # point with every interval of the map (which grows with the square of the history).
    numbered = points.filter(pl.col("at").is_not_null()).sort(*_MAP_KEYS, "at")
    numbered = numbered.with_row_index("_i").with_columns(pl.col("_i").cast(pl.Int64))
    last = numbered.group_by(_MAP_KEYS).agg((pl.col("_i").max() + 1).alias("_last"))
    first_at = numbered.rename({"at": "_s", "_i": "_lo"})
    end_at = numbered.rename({"at": "_e", "_i": "_hi"})
    hit = (
        down_nodes.join(first_at, on=[*_MAP_KEYS, "_s"])
        .join(end_at, on=[*_MAP_KEYS, "_e"], how="left")
        .join(last, on=_MAP_KEYS)
        .select(
            *_MAP_KEYS,
            DOMAIN,
            NODE,
            pl.int_ranges("_lo", pl.col("_hi").fill_null(pl.col("_last"))).alias("_i"),
        )
        .explode("_i")
        .drop_nulls("_i")
        .join(numbered.select("_i", "at"), on="_i")
        .group_by(*_MAP_KEYS, "at", DOMAIN)
        .agg(pl.col(NODE).n_unique().alias("_down"))
    )
    affected = hit.group_by(*_MAP_KEYS, "at").agg(pl.len().alias("_n_hit"))
    ranked = sizes.with_columns(
        pl.col("_size").rank("ordinal", descending=True).over(_MAP_KEYS).alias("_rank")
    )
    # The largest domain with no node down is among the (domains hit + 1) largest domains.
    clean = (
        points.join(affected, on=[*_MAP_KEYS, "at"], how="left")
        .join(ranked, on=_MAP_KEYS)
        .filter(pl.col("_rank") <= pl.col("_n_hit").fill_null(0) + 1)
        .join(hit, on=[*_MAP_KEYS, "at", DOMAIN], how="anti")
        .select(*_MAP_KEYS, "at", "_size")
    )
    reduced = hit.join(sizes, on=[*_MAP_KEYS, DOMAIN]).select(
        *_MAP_KEYS, "at", (pl.col("_size") - pl.col("_down")).alias("_size")
    )
    return (
        pl.concat([clean, reduced])
        .group_by(*_MAP_KEYS, "at")
        .agg(pl.col("_size").max().alias("healthy_size"))
    )


def job_placement(
    jobs: pl.LazyFrame, topology: pl.LazyFrame, *, down: pl.LazyFrame | None = None
) -> pl.LazyFrame:
    """Per started attempt and topology level: domains used, the fewest possible, the spread.

    Args:
        jobs: ``cluster, job_id, attempt, start_at, node_list`` (List[String]) and optionally
            ``segment_size`` (nodes per segment; NULL: none). Attempts without a start or
            without nodes are left out.
        topology: ``cluster, level, domain, node, valid_from, valid_to`` (NULL ``valid_from``:
            in force since ever; NULL ``valid_to``: still in force).
        down: ``cluster, node, start_at, end_at``: when nodes were down or drained. Given, a
            level's domain size at an attempt's start is the most nodes one domain had up
            (never less than the attempt itself had in one domain); else the largest domain's
            configured size.

    Returns:
        :data:`PLACEMENT_SCHEMA` rows: one per attempt and level of the map in force at its
        start whose every node the map places (an attempt with a node the map lacks has no row
        for that level).
    """
    maps = _maps(topology)
    segment = pl.col(SEGMENT_SIZE) if SEGMENT_SIZE in jobs.collect_schema().names() else None
    attempts = (
        jobs.filter(pl.col(START_AT).is_not_null() & (pl.col("node_list").list.len() > 0))
        .select(
            CLUSTER, JOB_ID, ATTEMPT, START_AT,
            (segment if segment is not None else pl.lit(None)).cast(pl.Int64).alias(SEGMENT_SIZE),
            pl.col("node_list").list.unique().alias(NODE),
        )
        .with_columns(pl.col(NODE).list.len().cast(pl.Int64).alias("nodes"))
        .explode(NODE)
    )  # fmt: skip
    keys = [CLUSTER, JOB_ID, ATTEMPT, START_AT, LEVEL, VALID_FROM]
    per_domain = (
        attempts.join(maps, on=[CLUSTER, NODE])
        .filter(
            (pl.col(VALID_FROM) <= pl.col(START_AT))
            & (pl.col(VALID_TO).is_null() | (pl.col(START_AT) < pl.col(VALID_TO)))
        )
        .group_by(*keys, DOMAIN)
        .agg(
            pl.col("nodes").first(),
            pl.col(SEGMENT_SIZE).first(),
            pl.col(NODE).n_unique().cast(pl.Int64).alias("_on_domain"),
        )
    )
    per_level = (
        per_domain.group_by(keys)
        .agg(
            pl.col("nodes").first(),
            pl.col(SEGMENT_SIZE).first(),
            pl.col("_on_domain").sum().alias("_mapped"),
            pl.len().cast(pl.Int64).alias("domains_used"),
            pl.col("_on_domain").max().alias("_most_in_one"),
        )
        .filter(pl.col("_mapped") == pl.col("nodes"))
    )
    sizes = maps.group_by(*_MAP_KEYS, DOMAIN).agg(pl.len().cast(pl.Int64).alias("_size"))
    configured = sizes.group_by(_MAP_KEYS).agg(pl.col("_size").max().alias("_configured"))
    placed = per_level.join(configured, on=_MAP_KEYS)
    if down is None:
        size = pl.col("_configured")
    else:
        steps = _healthy_size(maps, sizes, down).sort("at")
        placed = placed.sort(START_AT).join_asof(
            steps,
            left_on=START_AT,
            right_on="at",
            by=_MAP_KEYS,
            strategy="backward",
            check_sortedness=False,  # sorted above, within each map
        )
        healthy = pl.col("healthy_size").fill_null(pl.col("_configured"))
        size = pl.max_horizontal(healthy, pl.col("_most_in_one"))
    placed = placed.with_columns(size.cast(pl.Int64).alias("domain_size"))
    return placed.select(
        CLUSTER, JOB_ID, ATTEMPT, LEVEL, START_AT, "nodes", "domain_size", "domains_used",
        domains_min(pl.col("nodes"), pl.col("domain_size"), pl.col(SEGMENT_SIZE))
        .cast(pl.Int64).alias("domains_min"),
    ).with_columns(
        (pl.col("domains_used") - pl.col("domains_min")).alias("spread")
    ).sort(CLUSTER, JOB_ID, ATTEMPT, LEVEL)  # fmt: skip


#: The Kueue topology level whose domains are single nodes.
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"


def assignment_node_lists(assignments: pl.LazyFrame) -> pl.LazyFrame:
    """The nodes Kueue's topology-aware scheduling assigned each Workload, per job.

    Args:
        assignments: ``raw.kueue_workload_topology`` rows: ``cluster, namespace, name,
            levels`` (List[String], highest level first), ``values`` (List[String], one per
            level), ``pods``. Only domains whose lowest level is ``kubernetes.io/hostname``
            name nodes (Kueue keeps only that level when the Topology has it); others, and pod
            sets not yet placed (NULL ``levels``), are left out.

    Returns:
        ``cluster, job_id, node_list``: ``job_id`` = ``<namespace>/<name>`` (the ``jobs`` key
        of a Kubernetes workload), ``node_list`` the distinct assigned nodes, sorted.
    """
    return (
        assignments.filter(pl.col("levels").list.last() == HOSTNAME_LABEL)
        .group_by(CLUSTER, pl.format("{}/{}", "namespace", "name").alias(JOB_ID))
        .agg(pl.col("values").list.last().unique().sort().alias("node_list"))
    )


def topology_requests(assignments: pl.LazyFrame) -> pl.LazyFrame:
    """The topology constraint each Kueue Workload asked for, per job.

    Kueue copies a pod template's ``kueue.x-k8s.io/podset-required-topology``,
    ``podset-preferred-topology`` and ``podset-slice-required-topology`` annotations into the
    Workload's ``spec.podSets[].topologyRequest`` (``required``, ``preferred``,
    ``podSetSliceRequiredTopology``; Kueue's "Run Workloads with Topology-Aware Scheduling",
    https://kueue.sigs.k8s.io/docs/tasks/run/topology_aware_scheduling/, and KEP-2724,
    kubernetes-sigs/kueue ``keps/2724-topology-aware-scheduling/README.md``), so the Workload
    is where every form of the request is read. ``unconstrained: true``
    (``kueue.x-k8s.io/podset-unconstrained-topology``: TAS with no level) is no domain
    constraint. Not seen here: a pod's node affinity on ``nvidia.com/gpu.clique`` and a
    ComputeDomain's IMEX-channel resource claim (NVIDIA DRA Driver for GPUs,
    https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/dra-cds.html): the pod
    parser keeps neither.

    Args:
        assignments: ``raw.kueue_workload_topology`` rows of one snapshot: ``cluster,
            namespace, name, pod_set, required, preferred, slice_required``.

    Returns:
        ``cluster, job_id, topology_request``: one row per Workload with at least one pod set
        that names a level; ``topology_request`` = ``required: <level>`` (else
        ``slice-required: <level>``, else ``preferred: <level>``) of its first such pod set
        by name. ``job_id`` = ``<namespace>/<name>`` (the ``jobs`` key).
    """
    request = (
        pl.when(pl.col("required").is_not_null())
        .then(pl.format("required: {}", "required"))
        .when(pl.col("slice_required").is_not_null())
        .then(pl.format("slice-required: {}", "slice_required"))
        .when(pl.col("preferred").is_not_null())
        .then(pl.format("preferred: {}", "preferred"))
    )
    return (
        assignments.select(
            CLUSTER,
            pl.format("{}/{}", "namespace", "name").alias(JOB_ID),
            "pod_set",
            request.alias("topology_request"),
        )
        .filter(pl.col("topology_request").is_not_null())
        .sort(CLUSTER, JOB_ID, "pod_set")
        .group_by(CLUSTER, JOB_ID, maintain_order=True)
        .agg(pl.col("topology_request").first())
    )


def with_assignment_nodes(jobs: pl.LazyFrame, assigned: pl.LazyFrame) -> pl.LazyFrame:
    """``jobs`` with the latest attempt of a Kubernetes job that has no nodes (its pods were
    never seen) given the nodes of its Workload's topology assignment
    (:func:`assignment_node_lists`); every other row as it was.

    Args:
        jobs: ``cluster, job_id, attempt, node_list`` (+ any columns, kept).
        assigned: ``cluster, job_id, node_list`` from :func:`assignment_node_lists`.
    """
    latest = pl.col(ATTEMPT) == pl.col(ATTEMPT).max().over(CLUSTER, JOB_ID)
    empty = pl.col("node_list").is_null() | (pl.col("node_list").list.len() == 0)
    return (
        jobs.join(assigned.rename({"node_list": "_assigned"}), on=[CLUSTER, JOB_ID], how="left")
        .with_columns(
            pl.when(empty & latest & pl.col("_assigned").is_not_null())
            .then(pl.col("_assigned"))
            .otherwise(pl.col("node_list"))
            .alias("node_list")
        )
        .drop("_assigned")
    )


#: Gang sizes (nodes) :func:`fragmentation_hourly` counts whole-domain slots for by default.
GANG_NODES: Final = (2, 4, 8, 16)
_HOUR: Final = dt.timedelta(hours=1)

#: Columns of :func:`fragmentation_hourly`'s result, in order.
FRAGMENTATION_SCHEMA: dict[str, pl.DataType] = {
    CLUSTER: pl.String(),
    "hour": UTC_DATETIME,
    LEVEL: pl.String(),
    "gang_nodes": pl.Int64(),
    "free_nodes": pl.Int64(),
    "domain_slots": pl.Int64(),
    "unfragmented_slots": pl.Int64(),
    "stranded_slots": pl.Int64(),
}


def _hours_covered(
    intervals: pl.LazyFrame, horizon: pl.LazyFrame, start: str, end: str
) -> pl.LazyFrame:
    """``cluster, node, hour``: the hour starts h with ``start <= h < end`` of each interval
    (an open end runs to the cluster's ``horizon``)."""
    first = hour_ceil(pl.col(start))
    return (
        intervals.join(horizon, on=CLUSTER)
        .select(
            CLUSTER,
            NODE,
            pl.datetime_ranges(
                first, pl.col(end).fill_null(pl.col("_horizon")), "1h", closed="left"
            ).alias("hour"),
        )
        .explode("hour")
        .filter(pl.col("hour").is_not_null())
    )


def fragmentation_hourly(
    topology: pl.LazyFrame,
    jobs: pl.LazyFrame,
    hours: pl.LazyFrame,
    *,
    down: pl.LazyFrame | None = None,
    gang_nodes: tuple[int, ...] = GANG_NODES,
    states: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Per cluster, hour and level: whole-domain slots for a gang of G free nodes, against the
    slots the same free nodes would give unfragmented (METRICS.md, "Fragmentation").

    A node is *free* at the start of an hour when the map in force then places it, no attempt
    holds it (any share of it: a gang needs whole nodes) and it is not down. With f_d the free
    nodes of domain d: ``domain_slots = Σ_d floor(f_d / G)``, ``unfragmented_slots =
    floor(Σ_d f_d / G)``, ``stranded_slots`` the difference.

    Args:
        topology: ``cluster, level, domain, node, valid_from, valid_to`` (as :func:`job_placement`).
        jobs: ``cluster, start_at, end_at, node_list`` (NULL end: still running).
        hours: ``cluster, hour``: the hour starts to compute.
        down: ``cluster, node, start_at, end_at``: node down or drained intervals.
        gang_nodes: the gang sizes G.
        states: :func:`metrics.domains.hourly_node_states` of the same arguments, when the
            caller has them: a node is free where it is healthy and no attempt holds it
            (``_healthy`` and ``_attempts == 0``), the same rule (None: computed here).

    Returns:
        :data:`FRAGMENTATION_SCHEMA` rows, one per hour, level of the map in force and G.
    """
    if states is not None:
        placed = states.select(CLUSTER, "hour", LEVEL, DOMAIN, NODE)
        free = states.filter(pl.col("_healthy") & (pl.col("_attempts") == 0))
    else:
        maps = _maps(topology)
        hours = hours.select(CLUSTER, pl.col("hour").cast(UTC_DATETIME)).unique()
        horizon = hours.group_by(CLUSTER).agg((pl.col("hour").max() + _HOUR).alias("_horizon"))
        placed = hours.join(maps, on=CLUSTER).filter(
            (pl.col(VALID_FROM) <= pl.col("hour"))
            & (pl.col(VALID_TO).is_null() | (pl.col("hour") < pl.col(VALID_TO)))
        )
        held = jobs.filter(pl.col(START_AT).is_not_null()).select(
            CLUSTER, START_AT, "end_at", pl.col("node_list").alias(NODE)
        ).explode(NODE)  # fmt: skip
        busy = [_hours_covered(held, horizon, START_AT, "end_at")]
        if down is not None:
            busy.append(_hours_covered(down, horizon, "start_at", "end_at"))
        free = placed.join(pl.concat(busy).unique(), on=[CLUSTER, NODE, "hour"], how="anti")
    per_domain = free.group_by(CLUSTER, "hour", LEVEL, DOMAIN).agg(
        pl.len().cast(pl.Int64).alias("_free")
    )
    gangs = pl.LazyFrame({"gang_nodes": list(gang_nodes)}, schema={"gang_nodes": pl.Int64()})
    slots = (
        per_domain.join(gangs, how="cross")
        .group_by(CLUSTER, "hour", LEVEL, "gang_nodes")
        .agg(
            pl.col("_free").sum().alias("free_nodes"),
            (pl.col("_free") // pl.col("gang_nodes")).sum().alias("domain_slots"),
        )
    )
    keys = [CLUSTER, "hour", LEVEL, "gang_nodes"]
    return (
        placed.select(CLUSTER, "hour", LEVEL)
        .unique()
        .join(gangs, how="cross")
        .join(slots, on=keys, how="left")
        .with_columns(pl.col("free_nodes", "domain_slots").fill_null(0))
        .with_columns(
            (pl.col("free_nodes") // pl.col("gang_nodes")).alias("unfragmented_slots"),
        )
        .with_columns(
            (pl.col("unfragmented_slots") - pl.col("domain_slots")).alias("stranded_slots")
        )
        .select(list(FRAGMENTATION_SCHEMA))
        .cast(pl.Schema(FRAGMENTATION_SCHEMA))
        .sort(keys)
    )
