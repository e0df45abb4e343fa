"""Kubernetes node states: down / planned-down GPU-seconds and registered capacity per hour.

METRICS.md "Node states": from successive core/v1 Node snapshots (``raw.k8s_nodes``) and, where
loaded, Node Events (``raw.k8s_events``), each node is a sequence of intervals in one state:

- ``down``: the ``Ready`` condition is not ``True`` (``False``, ``Unknown`` or absent);
- ``planned_down``: Ready but cordoned: ``spec.unschedulable`` true, or a taint whose key is
  ``node.kubernetes.io/unschedulable`` (the cordon taint) or contains ``maint`` / ``drain``
  (maintenance taints; matched case-insensitively on the key);
- ``up``: otherwise.

Its GPUs are the allocatable GPUs (``nvidia.com/gpu`` and MIG fractions, as parsed), else the
capacity, else 0. Registered capacity of a cluster-hour is every present node's GPUs × time,
whatever its state (METRICS.md capacity: "allocatable ``nvidia.com/gpu`` of Ready-or-not nodes
present"); down and planned_down are the parts of it in those states.

How intervals are formed from snapshots (a snapshot is the state *at* ``snapshot_at``):

1. **Held between snapshots**: a snapshot's state holds until the node's next change point.
   Change points are the node's snapshots, its Ready transitions and its Node Events.
2. **Ready transitions**: a snapshot's ``ready_since`` (the Ready condition's
   ``lastTransitionTime``) strictly after the node's previous snapshot (its creation for the
   first) and before this snapshot is when the readiness of this snapshot began; a transition at
   or before the previous snapshot adds nothing (that snapshot already told the state).
   Cordons carry no time in the Node object: they change at the snapshot that shows them,
   unless a ``NodeNotSchedulable`` / ``NodeSchedulable`` Event times them.
3. **Before the first snapshot**: the node counts from its creation (``created_at``; the first
   snapshot when unknown or later). Its first snapshot's cordon and GPUs hold back to it; its
   readiness too, except that a Ready transition inside that span means the node was up before
   it (a node that went NotReady was Ready; a node that became Ready was starting up, which is
   not counted as down).
4. **End**: a node in its cluster's latest snapshot holds to ``as_of``; a node missing from a
   later snapshot of its cluster ends at the first such snapshot; ``deletionTimestamp`` ends it
   earlier.
5. **Events** (``involved_kind = 'Node'``, matched on cluster and node name), at ``last_seen``
   (the latest occurrence; = ``first_seen`` for a single one): ``NodeNotReady`` → not Ready,
   ``NodeReady`` → Ready, ``NodeNotSchedulable`` → cordoned, ``NodeSchedulable`` → uncordoned.
   ``Rebooted`` changes no state: the kubelet reports it after the node is back, and the
   not-Ready span around a reboot arrives as NodeNotReady / NodeReady. At one instant a
   snapshot outranks an Event, an Event outranks a Ready transition.

With day-granularity snapshots and no Events, a cordon shows from the snapshot that first shows
it (up to a day late) and a NotReady spell from its ``lastTransitionTime`` (exact); a spell that
starts and ends between two snapshots is not seen at all. Snapshots after ``as_of`` are ignored.
Allocated time on a node wins over its down / planned-down state (see
:func:`k8s_node_states_hourly`, ``allocations``).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics.node_allocation import unallocated_node_events
from metrics.occupancy import allocated_gpu_seconds_hourly
from metrics.schema import CLUSTER, END_AT, GPUS, HOUR, START_AT, UTC_DATETIME

__all__ = [
    "CORDON_TAINT_PATTERN",
    "K8S_NODE_STATE_COLUMNS",
    "k8s_node_intervals",
    "k8s_node_states_hourly",
]

#: Columns read from the Node snapshots (``raw.k8s_nodes``).
K8S_NODE_STATE_COLUMNS = ("cluster", "name", "snapshot_at", "gpu_allocatable", "gpu_capacity",
                          "ready", "ready_since", "unschedulable", "taints", "created_at",
                          "deleted_at")  # fmt: skip

#: A taint (``key[=value]:effect`` inside the JSON list of ``raw.k8s_nodes.taints``) that makes a
#: Ready node planned_down: the cordon taint or a key naming maintenance or a drain.
CORDON_TAINT_PATTERN = r'(?i)"(node\.kubernetes\.io/unschedulable|[^"=:]*(maint|drain)[^"=:]*)[=:]'

_EVENT_STATES = {
    "NodeNotReady": ("_down", True),
    "NodeReady": ("_down", False),
    "NodeNotSchedulable": ("_cordon", True),
    "NodeSchedulable": ("_cordon", False),
}
_UTC = UTC_DATETIME
_NODE = [CLUSTER, "name"]
_POINT_SCHEMA = {CLUSTER: pl.String(), "name": pl.String(), "_at": _UTC, "_prio": pl.Int8(),
                 "_down": pl.Boolean(), "_cordon": pl.Boolean(), "_gpus": pl.Float64()}  # fmt: skip


def _utc(col: str) -> pl.Expr:
    return pl.col(col).cast(_UTC)


def k8s_node_intervals(
    snapshots: pl.LazyFrame, as_of: dt.datetime, *, events: pl.LazyFrame | None = None
) -> pl.LazyFrame:
    """Per node, the intervals of one state (rules in the module docstring).

    Args:
        snapshots: Node snapshot rows with :data:`K8S_NODE_STATE_COLUMNS` (``raw.k8s_nodes``;
            times UTC; ``gpu_*`` in GPUs; ``taints`` the parser's JSON list of
            ``key[=value]:effect``). Repeats of one ``(cluster, name, snapshot_at)`` keep the last.
        as_of: the data cut-off (UTC); nothing after it is counted.
        events: optional Kubernetes Events with ``cluster, involved_kind, involved_name, reason,
            last_seen``; other kinds and reasons are ignored.

    Returns:
        ``cluster, name, state ('up' | 'down' | 'planned_down'), gpus (GPUs), start_at, end_at``
        (UTC, ``start_at < end_at ≤ as_of``), sorted by cluster, name, start_at.
    """
    cut = pl.lit(as_of).cast(_UTC)
    taints = pl.col("taints").fill_null("")
    snap = (
        snapshots.select(
            CLUSTER,
            "name",
            _utc("snapshot_at").alias("_at"),
            pl.coalesce("gpu_allocatable", "gpu_capacity", pl.lit(0.0))
            .cast(pl.Float64)
            .alias("_gpus"),
            (pl.col("ready") != True).fill_null(True).alias("_down"),  # noqa: E712
            (
                pl.col("unschedulable").fill_null(False) | taints.str.contains(CORDON_TAINT_PATTERN)
            ).alias("_cordon"),
            _utc("ready_since").alias("_since"),
            _utc("created_at").alias("_created"),
            _utc("deleted_at").alias("_deleted"),
        )
        .filter(pl.col("_at").is_not_null() & (pl.col("_at") <= cut))
        .unique([*_NODE, "_at"], keep="last", maintain_order=True)
        .sort([*_NODE, "_at"])
        .with_columns(pl.col("_at").shift(1).over(_NODE).alias("_prev"))
    )
    # Node bounds: creation (rule 3) to the end (rule 4).
    first_at = pl.col("_at").min()
    created = pl.min_horizontal(pl.col("_created").min().fill_null(first_at), first_at)
    bounds = snap.group_by(_NODE).agg(
        created.alias("_start"), pl.col("_at").max().alias("_last"),
        pl.col("_deleted").min().alias("_deleted"),
    )  # fmt: skip
    cluster_snaps = snap.select(CLUSTER, pl.col("_at").alias("_next")).unique().sort("_next")
    gone = (
        bounds.sort("_last")
        .join_asof(cluster_snaps, left_on="_last", right_on="_next", by=CLUSTER,
                   strategy="forward", allow_exact_matches=False, check_sortedness=False)
    )  # fmt: skip
    bounds = gone.select(
        *_NODE, "_start",
        pl.min_horizontal(pl.col("_next").fill_null(cut), pl.col("_deleted").fill_null(cut), cut)
        .alias("_end"),
    )  # fmt: skip
    snap = snap.join(bounds.select(*_NODE, "_start"), on=_NODE, how="left")
    lower = pl.coalesce("_prev", "_start")
    transition = (pl.col("_since") > lower) & (pl.col("_since") < pl.col("_at"))
    points = [
        snap.select(*_NODE, "_at", pl.lit(3, pl.Int8).alias("_prio"), "_down", "_cordon", "_gpus"),
        snap.filter(transition.fill_null(False)).select(
            *_NODE, pl.col("_since").alias("_at"), pl.lit(1, pl.Int8).alias("_prio"), "_down",
            pl.lit(None, pl.Boolean).alias("_cordon"), pl.lit(None, pl.Float64).alias("_gpus"),
        ),
        snap.filter(pl.col("_prev").is_null()).select(
            *_NODE, pl.col("_start").alias("_at"), pl.lit(0, pl.Int8).alias("_prio"),
            (pl.col("_down") & ~transition.fill_null(False)).alias("_down"), "_cordon", "_gpus",
        ),
    ]  # fmt: skip
    if events is not None:
        ev = events.filter(
            (pl.col("involved_kind") == "Node") & pl.col("reason").is_in(list(_EVENT_STATES))
        ).select(CLUSTER, pl.col("involved_name").alias("name"), _utc("last_seen").alias("_at"),
                 "reason")  # fmt: skip
        for reason, (col, value) in _EVENT_STATES.items():
            other = "_cordon" if col == "_down" else "_down"
            points.append(
                ev.filter(pl.col("reason") == reason).select(
                    *_NODE, "_at", pl.lit(2, pl.Int8).alias("_prio"),
                    pl.lit(value).alias(col), pl.lit(None, pl.Boolean).alias(other),
                    pl.lit(None, pl.Float64).alias("_gpus"),
                ).select(list(_POINT_SCHEMA))
            )  # fmt: skip
    filled = (
        pl.concat([p.select(list(_POINT_SCHEMA)).cast(pl.Schema(_POINT_SCHEMA)) for p in points])
        .join(bounds, on=_NODE, how="inner")
        .filter((pl.col("_at") >= pl.col("_start")) & (pl.col("_at") < pl.col("_end")))
        .sort([*_NODE, "_at", "_prio"])
        .with_columns(pl.col("_down", "_cordon", "_gpus").forward_fill().over(_NODE))
        .with_columns(pl.col("_at").shift(-1).over(_NODE).alias("_to"))
    )
    state = (
        pl.when(pl.col("_down")).then(pl.lit("down"))
        .when(pl.col("_cordon")).then(pl.lit("planned_down"))
        .otherwise(pl.lit("up"))
    )  # fmt: skip
    return (
        filled.select(
            *_NODE,
            state.alias("state"),
            pl.col("_gpus").alias(GPUS),
            pl.col("_at").alias(START_AT),
            pl.col("_to").fill_null(pl.col("_end")).alias(END_AT),
        )
        .filter(pl.col(END_AT) > pl.col(START_AT))
        .sort([*_NODE, START_AT])
    )


def k8s_node_states_hourly(
    snapshots: pl.LazyFrame,
    as_of: dt.datetime,
    *,
    events: pl.LazyFrame | None = None,
    allocations: pl.LazyFrame | None = None,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Registered capacity and down / planned-down GPU-seconds per cluster-hour (Kubernetes).

    Args:
        snapshots, as_of, events: as for :func:`k8s_node_intervals`.
        allocations: optional attempts ``cluster, node_list (list of node names), gpus,
            start_at, end_at`` (the ``jobs`` view; GPUs split evenly over the nodes; NULL end =
            running until ``as_of``). Allocated time wins over a node's down or planned-down
            state, as for Slurm's drained-with-no-job rule (a cordon keeps running pods; a
            NotReady node's pods still hold their GPUs until they end): per node and instant
            (:func:`metrics.node_allocation.unallocated_node_events`), down = max(0, down −
            alloc) and planned_down = max(0, planned − max(0, alloc − down)), with each term the
            node's GPUs in that state (held by attempts) at that instant. None: nothing
            subtracted.

    Returns:
        ``(registered, down)``: ``registered`` = ``cluster, hour, capacity_gpu_s`` (Σ node GPUs ×
        seconds present in the hour, any state); ``down`` = ``cluster, hour, down_gpu_s,
        planned_down_gpu_s`` (the parts in those states, 0 where none), one row per cluster-hour
        a node is present — the frames :func:`metrics.occupancy_hourly` takes as ``registered``
        and ``down``. The intervals are computed (collected) once, inside.
    """
    # Collected once: the hourly sums below would each recompute the intervals.
    spans = k8s_node_intervals(snapshots, as_of, events=events).collect().lazy()

    def hourly(frame: pl.LazyFrame, name: str) -> pl.LazyFrame:
        # A cluster's GPUs as a step function first (+gpus at each start, -gpus at each end): a
        # few segments per change instead of one row per node and hour.
        steps = (
            pl.concat([frame.select(CLUSTER, pl.col(START_AT).alias("_t"), GPUS),
                       frame.select(CLUSTER, pl.col(END_AT).alias("_t"), -pl.col(GPUS))])
            .group_by(CLUSTER, "_t").agg(pl.col(GPUS).sum())
            .sort(CLUSTER, "_t")
            .select(CLUSTER, pl.col("_t").alias(START_AT),
                    pl.col("_t").shift(-1).over(CLUSTER).alias(END_AT),
                    pl.col(GPUS).cum_sum().over(CLUSTER).round(9).alias(GPUS))
            .filter(pl.col(END_AT).is_not_null())
        )  # fmt: skip
        return allocated_gpu_seconds_hourly(steps, as_of).rename({"allocated_gpu_s": name})

    reg = hourly(spans, "capacity_gpu_s")
    lost = spans.filter(pl.col("state") != "up").select(
        CLUSTER,
        pl.col("name").alias("node"),
        pl.when(pl.col("state") == "down").then(pl.lit("down")).otherwise(pl.lit("planned"))
        .alias("state"),
        START_AT, END_AT, GPUS,
    )  # fmt: skip
    if allocations is not None:
        # per node and instant, as for Slurm's node events (one rule: metrics.node_allocation)
        lost = unallocated_node_events(lost.collect(), allocations, as_of).lazy()
    per_state = (
        hourly(lost.filter(pl.col("state") == "down"), "_down")
        .join(hourly(lost.filter(pl.col("state") == "planned"), "_planned"),
              on=[CLUSTER, HOUR], how="full", coalesce=True)
    )  # fmt: skip
    down = (
        reg.select(CLUSTER, HOUR)
        .join(per_state.select(CLUSTER, HOUR, pl.col("_down").alias("down_gpu_s"),
                               pl.col("_planned").alias("planned_down_gpu_s")),
              on=[CLUSTER, HOUR], how="left")
        .with_columns(pl.col("down_gpu_s", "planned_down_gpu_s").fill_null(0.0))
        .sort(CLUSTER, HOUR)
    )  # fmt: skip
    return reg, down
