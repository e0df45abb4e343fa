"""The core layer from the raw frames: one call, frames in, frames out (no I/O).

:func:`build_core` takes the raw tables (as polars frames, :class:`RawFrames`), the allocation
registry (:class:`RegistryFrames`) and the node inventory, and returns every frame the core layer
produces (:class:`CoreFrames`): identity-resolved Slurm jobs and attempts, Kubernetes attempts,
the unified ``jobs`` and ``pending`` attempts, workload timings and pending reasons, the nodes
and their registered / down GPU-seconds per hour, the registry's shares per cluster and the data
cut-off per cluster. Reading the warehouse and writing the tables is the caller's business
(:func:`pipelines.analytics.build.rebuild`).

A :class:`BuildUnit` names the part of the history to build; today the whole history is one
unit (:meth:`BuildUnit.everything`). Within it the Slurm rows, the largest raw table, may arrive
in parts (:attr:`RawFrames.slurm_parts`: ranges of job identities read one at a time), so the
whole history's raw rows are never in memory at once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace

import polars as pl

from metrics.holds import NODE_HOLD_SCHEMA
from metrics.hosts import host_matches
from metrics.k8s_node_states import K8S_NODE_STATE_COLUMNS, k8s_node_states_hourly
from metrics.placement import assignment_node_lists, topology_requests
from pipelines.core.gpu_shards import (
    latest_gpus_per_shard,
    node_shard_states,
    pending_shard_gpus,
    shard_gpus,
)
from pipelines.core.k8s_attempts import (
    K8sAttempts,
    k8s_attempts,
    pending_workload_attempts,
    pod_end,
    workload_attempts,
)
from pipelines.core.k8s_gpu_units import nodes_in_gpus, pods_in_gpus
from pipelines.core.k8s_timings import k8s_pending_reasons, k8s_workload_timings
from pipelines.core.kueue_tas import kueue_topology_spells
from pipelines.core.node_states import (
    latest_node_events,
    node_event_gpu_seconds_hourly,
    node_event_state,
    registered_gpu_seconds_hourly,
    slurm_node_down,
    unallocated_node_events,
)
from pipelines.core.pending_spells import SPELL_SCHEMA, pending_reason_spells
from pipelines.core.registry import UNATTRIBUTED, cluster_shares
from pipelines.core.slurm_identity import resolve_slurm_jobs, slurm_attempts
from pipelines.core.topology import k8s_label_topology, topology_intervals

__all__ = [
    "JOBS_COLUMNS",
    "OUTSIDE_INVENTORY",
    "BuildUnit",
    "CoreFrames",
    "RawFrames",
    "RegistryFrames",
    "StoredPart",
    "build_core",
    "resolve_slurm_parts",
    "resolved_slurm_schema",
    "with_as_of",
]

#: The ``jobs`` view's columns, in order (sql/README.md).
JOBS_COLUMNS = [
    "source", "cluster", "job_id", "job_id_raw", "attempt", "team", "account", "user_name",
    "partition", "qos", "state", "gpus", "req_gpus", "gpu_type", "submit_at", "eligible_at",
    "start_at", "end_at", "wait_s", "submit_wait_s", "run_s", "gpu_s", "node_list", "timelimit_s",
    "exit_code",
]  # fmt: skip

#: The columns of :attr:`CoreFrames.slurm_attempts`: what ``jobs``, the observed nodes, the
#: data-quality findings and the Slurm-on-Kubernetes map read (a narrow copy: the attempts are
#: nearly every row of ``slurm_jobs``, whose 56 columns would double the build's memory);
#: ``shards`` / ``req_shards``: the GPU shards AllocTRES / ReqTRES name
#: (:mod:`pipelines.core.gpu_shards`); ``end_inferred``: an open attempt ended by its job's
#: requeue or a runaway capped at its time limit (:func:`pipelines.core.slurm_identity.
#: resolve_slurm_jobs`, data-quality findings); ``elapsed_s``: sacct's Elapsed (a runaway's
#: recorded run, named by its finding).
_ATTEMPT_COLUMNS = [
    *JOBS_COLUMNS, "job_key", "extra", "shards", "req_shards", "end_inferred", "elapsed_s",
]  # fmt: skip

_PENDING_COLUMNS = ["cluster", "source", "job_id", "partition", "team", "req_gpus", "submit_at",
                    "eligible_at", "end_at", "state"]  # fmt: skip
#: The Slurm never-started rows' columns while the core is built: the pending columns, the
#: array's id and ``%N`` throttle (:func:`_throttled`) and the GPU shards ReqTRES names
#: (:func:`pipelines.core.gpu_shards.pending_shard_gpus`).
_SLURM_PENDING_COLUMNS = [
    *_PENDING_COLUMNS,
    "array_job_id",
    "array_task_id",
    "array_throttle",
    "req_shards",
]

#: The Slurm time columns whose latest value per cluster is that part's cut-off (:func:`_as_of`):
#: not ``eligible_at``, which a pending job's ``--begin`` sets ahead of the export (a plan, not
#: data: the cut-off went past the export, every open wait and running attempt with it);
#: ``run_to`` is an open row's start plus its Elapsed (:func:`_run_to`); a runaway's counted end
#: (its limit + 1 h, :func:`pipelines.core.slurm_identity.is_runaway`) is its ``end_at``.
_CUT_COLUMNS = ["submit_at", "start_at", "end_at", "run_to"]


#: The pod times whose latest value per Kubernetes cluster is part of its cut-off (:func:`_as_of`),
#: with its running pods' latest DCGM samples (:func:`_running_pod_samples`) and its Kueue
#: Workloads' creation and condition times (:func:`_workload_times`).
_POD_CUT_COLUMNS = ["created_at", "scheduled_at", "started_at", "finished_at", "deleted_at"]


def _running_pod_samples(pods: pl.DataFrame, samples: pl.DataFrame | None) -> pl.DataFrame:
    """``cluster, last_sample``: per pod still running (bound or started, no finish, no
    deletion, not ``Succeeded``/``Failed``: :func:`_newest_pod_state`'s rows), the latest DCGM
    sample labelled with its namespace and name at or after its start (bound, else started).

    dcgm-exporter labels a GPU's samples with the pod holding it, so such a sample says the pod
    still ran then, as a running Slurm row's Elapsed does (:func:`_run_to`): the cluster's data
    reach it. A sample before the pod's start is an earlier pod's of that name; a sample after a
    pod's end (an exporter's late mapping) moves nothing. Times past the plausible range were
    rejected when the samples were loaded (:func:`pipelines._parse_result.latest_plausible`).

    Args:
        pods: each pod's newest state (``cluster, namespace, name, phase`` and the pod times).
        samples: ``cluster, namespace, pod, last_sample`` (:attr:`RawFrames.pod_samples`), or
            None.
    """
    schema = {"cluster": pl.String(), "last_sample": pl.Datetime("us", "UTC")}
    if samples is None or samples.height == 0 or pods.height == 0:
        return pl.DataFrame(schema=schema)
    since = pl.coalesce("scheduled_at", "started_at")
    running = pods.filter(
        since.is_not_null()
        & pl.col("finished_at").is_null()
        & pl.col("deleted_at").is_null()
        & ~pl.col("phase").is_in(["Succeeded", "Failed"]).fill_null(value=False)
    ).select("cluster", "namespace", pl.col("name").alias("pod"), since.alias("_since"))
    return (
        running.join(samples, on=["cluster", "namespace", "pod"])
        .filter(pl.col("last_sample") >= pl.col("_since"))
        .select("cluster", pl.col("last_sample").cast(schema["last_sample"]))
    )


def _workload_times(workloads: pl.DataFrame) -> pl.DataFrame:
    """``cluster, wl_time``: every ``status.conditions[].lastTransitionTime`` of each Kueue
    Workload (``QuotaReserved``, ``Admitted``, ``PodsReady``, ``Evicted``, ``Preempted``,
    ``Requeued``, ``Finished`` …, whether it holds or not: a condition turned ``False`` changed
    then too) and its ``creationTimestamp``.

    Kueue stamps each transition when it makes it, so the cluster's data reach it: an eviction
    after the pods' latest time (the Workload listed after the pods) is data, as a pod time is.
    Not ``requeueState.requeueAt``, a backoff deadline ahead of the listing (a plan, as a Slurm
    job's ``--begin``). Every time was checked against the plausible range when loaded
    (``pipelines.kubernetes._json_items.parse_k8s_time``).

    Args:
        workloads: ``K8S_WORKLOAD_SCHEMA`` rows (``cluster, created_at, conditions``: the
            conditions as a JSON array of ``{type, status, reason, message,
            lastTransitionTime}``, ``lastTransitionTime`` RFC 3339 UTC).
    """
    ts = pl.Datetime("us", "UTC")
    if workloads.height == 0:
        return pl.DataFrame(schema={"cluster": pl.String(), "wl_time": ts})
    conds = pl.List(pl.Struct({"lastTransitionTime": pl.String()}))
    changed = (
        workloads.select("cluster", pl.col("conditions").str.json_decode(conds).alias("_c"))
        .explode("_c")
        .select(
            "cluster",
            pl.col("_c")
            .struct.field("lastTransitionTime")
            .str.to_datetime("%Y-%m-%dT%H:%M:%S%.fZ", time_zone="UTC", time_unit="us")
            .alias("wl_time"),
        )
    )
    created = workloads.select("cluster", pl.col("created_at").cast(ts).alias("wl_time"))
    return pl.concat([created, changed]).filter(pl.col("wl_time").is_not_null())


def _run_to() -> pl.Expr:
    """``run_to``: of a started row without an end (running at the export), ``start_at`` +
    ``elapsed_s`` (sacct's Elapsed of an open row is the time it has run when sacct was run, so
    the export was taken no earlier; a suspended job's Elapsed leaves its suspension out, so
    this is no later than the export); null otherwise, or without ``elapsed_s``. A runaway
    allocation (still running in slurmdbd more than an hour past its time limit) has an end by
    then, its limit + 1 h (:func:`pipelines.core.slurm_identity.is_runaway`): its Elapsed
    moves no cut-off."""
    return (
        pl.when(pl.col("end_at").is_null())
        .then(pl.col("start_at") + pl.duration(seconds=pl.col("elapsed_s")))
        .alias("run_to")
    )


@dataclass(frozen=True)
class BuildUnit:
    """The part of the history a build covers: one cluster (None = every cluster) and the days
    ``first_day`` … ``last_day`` (inclusive; None = unbounded)."""

    cluster: str | None
    first_day: dt.date | None
    last_day: dt.date | None

    @classmethod
    def everything(cls) -> BuildUnit:
        """Every cluster, all history (the one unit of today's build)."""
        return cls(cluster=None, first_day=None, last_day=None)


@dataclass(frozen=True)
class RawFrames:
    """The raw tables the core layer reads, as loaded (every export, overlapping ones too).

    ``k8s_nodes`` is None when the warehouse has no ``raw.k8s_nodes`` table, ``topology`` when
    it has no ``raw.topology``, ``kueue_topologies`` when it has no ``raw.kueue_topologies``,
    ``kueue_workload_topology`` when it has no ``raw.kueue_workload_topology``, ``slurm_squeue``
    when it has no ``raw.slurm_squeue``. ``slurm_node_shards``: ``cluster, host, gpus, gres,
    snapshot_at``, the ``scontrol show node`` states over time of each Slurm node whose Gres
    ever named GPU shards (``sql/analytics/slurm_node_shards.sql``), None without
    ``raw.slurm_nodes``.
    ``slurm_node_states``: the first and last dated ``scontrol show node`` snapshot of each run
    of like states of the nodes ever down with a reason time, on clusters without ``sacctmgr``
    node events (``sql/analytics/slurm_node_snapshots.sql``), whose down or drained states add
    node events (:func:`pipelines.core.node_states.snapshot_node_events`); None without
    ``raw.slurm_nodes``.
    ``slurm_reservations``: the loaded reservation rows (``cluster, name, reservation_id,
    start_at, end_at, nodes, flags, maint, state, snapshot_at, ingest_id, line_no``:
    ``sql/analytics/slurm_maint_reservations.sql``), whose ``MAINT`` ones (by each
    reservation's latest row) have their nodes planned down over their times where no other
    node event is
    (:func:`pipelines.core.node_states.maint_reservation_node_events`); None without
    ``raw.slurm_reservations``.

    ``pod_samples``, when given: ``cluster, namespace, pod, last_sample``, the latest DCGM
    sample labelled with each pod name (at least those after the pods' own cut-off,
    ``sql/analytics/pod_last_samples.sql``); the latest sample of a pod still running moves its
    cluster's cut-off (:func:`_running_pod_samples`). None: no samples loaded.

    ``slurm_parts``, when given, replaces ``slurm_rows`` (which then holds no rows, only the
    schema): a function returning the Slurm rows as an iterable of frames, each holding every
    row of the ``(cluster, job_key)`` identities it contains (:func:`pipelines.core.
    slurm_identity.resolve_slurm_jobs`' key), in ascending ranges of ``(cluster, job_key)``.
    Each part is resolved alone and dropped before the next is read
    (:func:`resolve_slurm_parts`); the result equals resolving all rows at once, row for row and
    in the same order. A part may instead be the stored result of an earlier resolution of the
    same raw rows (:class:`StoredPart`: identities none of whose raw rows changed since), taken
    as it is; it needs ``build_core``'s ``slurm_sink`` (its resolved rows are already stored).
    """

    slurm_rows: pl.DataFrame
    slurm_events: pl.DataFrame
    k8s_pods: pl.DataFrame
    k8s_events: pl.DataFrame
    k8s_workloads: pl.DataFrame
    kueue_local_queues: pl.DataFrame
    k8s_nodes: pl.DataFrame | None = None
    topology: pl.DataFrame | None = None
    kueue_topologies: pl.DataFrame | None = None
    kueue_workload_topology: pl.DataFrame | None = None
    slurm_squeue: pl.DataFrame | None = None
    slurm_node_shards: pl.DataFrame | None = None
    slurm_node_states: pl.DataFrame | None = None
    slurm_reservations: pl.DataFrame | None = None
    slurm_parts: Callable[[], Iterable[pl.DataFrame | StoredPart]] | None = None
    pod_samples: pl.DataFrame | None = None


@dataclass(frozen=True)
class StoredPart:
    """One part of the Slurm identities whose resolution is already stored (its raw rows did
    not change since it was resolved): what the core layer takes from a resolved part, read
    back instead of resolved again. Each frame in the resolution's order (``cluster, job_key,
    start_at, step``, nulls last) and with its types.

    Attributes:
        attempts: the started allocations (:func:`slurm_attempts`), :data:`_ATTEMPT_COLUMNS`.
        pending: the never-started allocations, :data:`_SLURM_PENDING_COLUMNS` (``req_gpus``
            falling back to ``gpus``).
        cuts: ``cluster, submit_at, eligible_at, start_at, end_at, run_to``: each column's
            latest value per cluster (the part's contribution to the data cut-off,
            :func:`_as_of`; ``run_to``: an open row's start + Elapsed, :func:`_run_to`).
    """

    attempts: pl.DataFrame
    pending: pl.DataFrame
    cuts: pl.DataFrame


@dataclass(frozen=True)
class RegistryFrames:
    """The allocation registry: ``mapping`` (kind, key, team) and the share ``history``
    (:func:`pipelines.core.registry.load_registry_history`)."""

    mapping: pl.DataFrame
    history: pl.DataFrame


@dataclass(frozen=True)
class CoreFrames:
    """Every frame of the core layer (the ``core.*`` tables and what the metrics read).

    Attributes:
        slurm_jobs: every Slurm row once, identity-resolved (:func:`resolve_slurm_jobs`).
        slurm_attempts: the started Slurm allocations (:func:`slurm_attempts`), with the
            columns later steps read: :data:`JOBS_COLUMNS`, ``job_key`` and ``extra``.
        k8s_pods: each pod's most advanced state over the loads (:func:`_newest_pod_state`).
        k8s_events: the latest record of each Event.
        k8s_attempts: the Kubernetes workload attempts (:func:`k8s_attempts`).
        k8s_jobs: the Kubernetes attempts as ``jobs`` rows (:func:`workload_attempts`).
        k8s_pending: the Kubernetes never-started attempts (:func:`pending_workload_attempts`).
        k8s_timings: the ``k8s_workloads`` frame (:func:`k8s_workload_timings`).
        k8s_pending_reasons: the ``k8s_pending_reasons`` frame (:func:`k8s_pending_reasons`).
        as_of: ``cluster, as_of``: the latest timestamp the data knows of, per cluster (the
            warehouse stores it once, in ``core.build_cutoffs``, not in the rows).
        jobs: every started attempt, Slurm and Kubernetes (:data:`JOBS_COLUMNS` + ``as_of``, the
            cut-off carried in memory for the metrics that censor at it).
        pending: never-started attempts (Slurm pending rows and Kubernetes pending attempts).
        nodes: the inventory, else the nodes seen in the data (``capacity_source``), and the
            nodes attempts used that their cluster's inventory lacks
            (:func:`_outside_inventory`).
        registered: ``cluster, hour, capacity_gpu_s`` (registered capacity per cluster-hour).
        down: ``cluster, hour, down_gpu_s, planned_down_gpu_s`` per cluster-hour.
        shares: the registry's share history per cluster (:func:`cluster_shares`).
        pod_jobs: ``cluster, namespace, pod, uid, job_id, pod_from, node``: which job each pod
            ran, on which node,
            one row per pod life (``uid``; ``pod_from``: when it was bound, else started, NULL
            for a pod never bound; a pod name is used again by a later pod).
        topology: node → domain per level and map (:func:`pipelines.core.topology.
            topology_intervals`: ``topology.conf``, else Node labels, else inventory racks).
        node_down: ``cluster, node, start_at, end_at``: Slurm node down/drain intervals.
        kueue_nodes: ``cluster, job_id, node_list``: the nodes Kueue's topology assignments
            gave each Workload (:func:`metrics.assignment_node_lists`); None without
            ``raw.kueue_workload_topology``.
        kueue_requests: ``cluster, job_id, topology_request``: the level each Workload's
            topology request names (:func:`metrics.topology_requests`); None without
            ``raw.kueue_workload_topology``.
        pending_spells: ``pending_reason_spells`` rows (:func:`pipelines.core.pending_spells.
            pending_reason_spells`) from polled ``squeue``, then Kueue Workloads' topology
            not-fit spells (:func:`pipelines.core.kueue_tas.kueue_topology_spells`).
        holds: ``cluster, job_id, attempt, start_at, end_at, gpus, host`` (:data:`metrics.
            holds.NODE_HOLD_SCHEMA`): the GPUs held over time by the Kubernetes attempts of
            ``jobs`` whose pods did not all hold theirs over the attempt's span, as pieces of
            constant GPUs per node ``host`` (:attr:`pipelines.core.k8s_attempts.K8sAttempts.
            holds`); every hourly table spreads them added up over the nodes, the node
            reliability table per node (METRICS.md "GPU holding"). No Slurm attempt has a row.
    """

    slurm_jobs: pl.DataFrame
    slurm_attempts: pl.DataFrame
    k8s_pods: pl.DataFrame
    k8s_events: pl.DataFrame
    k8s_attempts: K8sAttempts
    k8s_jobs: pl.DataFrame
    k8s_pending: pl.DataFrame
    k8s_timings: pl.DataFrame
    k8s_pending_reasons: pl.DataFrame
    as_of: pl.DataFrame
    jobs: pl.DataFrame
    pending: pl.DataFrame
    nodes: pl.DataFrame
    registered: pl.DataFrame
    down: pl.DataFrame
    shares: pl.DataFrame
    pod_jobs: pl.DataFrame
    topology: pl.DataFrame
    node_down: pl.DataFrame
    kueue_nodes: pl.DataFrame | None = None
    kueue_requests: pl.DataFrame | None = None
    pending_spells: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=SPELL_SCHEMA))
    holds: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=NODE_HOLD_SCHEMA))


def with_as_of(frame: pl.DataFrame, as_of: pl.DataFrame) -> pl.DataFrame:
    """``frame.join(as_of, on="cluster", how="left")`` (``as_of``: one row per cluster) without
    copying ``frame``'s columns: the cut-off is looked up per row and appended (a join gathers
    every column, a second copy of multi-million-row frames such as ``core.slurm_jobs``)."""
    if "as_of" in frame.columns or frame.height == 0:  # keep the join's own naming / typing
        return frame.join(as_of, on="cluster", how="left")
    return frame.with_columns(
        pl.col("cluster")
        .replace_strict(as_of["cluster"], as_of["as_of"], default=None,
                        return_dtype=as_of.schema["as_of"])
        .alias("as_of")
    )  # fmt: skip


def _latest(frame: pl.DataFrame, *order: str) -> pl.DataFrame:
    """The last row of each ``(cluster, uid)`` in ``order``."""
    return frame.sort(*order).unique(["cluster", "uid"], keep="last", maintain_order=True)


def _newest_pod_state(pods: pl.DataFrame) -> pl.DataFrame:
    """Each pod's (``cluster, uid``) most advanced state over every load, whatever the load
    order: a pod's life only moves forward (Pending → Running → Succeeded/Failed; a
    ``deletionTimestamp`` is never unset), so a row with its containers' finish time wins,
    then one that is being deleted or in phase ``Succeeded``/``Failed``, then a started row,
    then a scheduled one, then a pending one; the last loaded (``ingest_id``) among rows of the
    same stage. An older snapshot loaded last therefore never reopens a pod a newer one
    showed finished."""
    done = pl.col("deleted_at").is_not_null() | pl.col("phase").is_in(
        ["Succeeded", "Failed"]
    ).fill_null(value=False)
    stage = (
        pl.when(pl.col("finished_at").is_not_null())
        .then(4)
        .when(done)
        .then(3)
        .when(pl.col("started_at").is_not_null())
        .then(2)
        .when(pl.col("scheduled_at").is_not_null())
        .then(1)
        .otherwise(0)
    )
    return (
        pods.with_columns(stage.alias("_stage"))
        .sort("_stage", "ingest_id")
        .unique(["cluster", "uid"], keep="last", maintain_order=True)
        .drop("_stage")
    )


def _latest_snapshot(frame: pl.DataFrame) -> pl.DataFrame:
    """Every row of the latest load (``snapshot_at``, then ``ingest_id``) of each
    ``(cluster, uid)``: a Workload's topology rows as last seen."""
    key = ["cluster", "uid"]
    newest = frame.filter(pl.col("snapshot_at") == pl.col("snapshot_at").max().over(key))
    return newest.filter(pl.col("ingest_id") == pl.col("ingest_id").max().over(key))


def _observed_hosts(attempts: pl.DataFrame, skip: Collection[str] = ()) -> pl.DataFrame:
    """``cluster, host, gpus, gpu_type, partition`` of the hosts some Slurm attempts ran on
    (one part's: :func:`_slurm_frames`): per host, the most GPUs one attempt held on it and the
    first GPU type and partition named, in the attempts' order (per host and part, so the
    history's attempts are never exploded into hosts at once). The attempts of the clusters
    ``skip`` (those with an inventory, whose observed nodes :func:`build_core` never keeps)
    are left out before any node list is exploded, and only the five columns read are taken
    from the others (a year's 2.15M attempts: 0.14 s of every build, most of it for nothing)."""
    kept = (pl.col("gpus") > 0) & (pl.col("node_list").list.len() > 0)
    if skip:
        kept = kept & ~pl.col("cluster").is_in(sorted(skip)).fill_null(value=False)
    return (
        attempts.lazy()
        .filter(kept)
        .select(
            "cluster",
            pl.col("node_list").alias("host"),
            (pl.col("gpus") / pl.col("node_list").list.len()).alias("gpus"),
            "gpu_type",
            "partition",
        )
        .explode("host")
        .group_by("cluster", "host", maintain_order=True)
        .agg(
            pl.col("gpus").max(),
            pl.col("gpu_type").drop_nulls().first(),
            pl.col("partition").drop_nulls().first(),
        )
        .collect(engine="in-memory")
    )


def _concurrent_gpus(jobs: pl.DataFrame, skip: Collection[str] = ()) -> pl.DataFrame:
    """``cluster, host, gpus``: per host the attempts of ``jobs`` ran on, the most GPUs they
    held on it at once (GPUs ÷ nodes of each attempt; a running attempt up to its cluster's
    cut-off ``as_of``). A sweep over each host's attempt starts (+GPUs) and ends (−GPUs), an end
    before a start at the same instant (back-to-back attempts do not overlap). Two 4-GPU jobs
    sharing an 8-GPU node at once give 8, where the most one attempt held gives 4.

    Args:
        jobs: ``cluster, gpus, start_at, end_at, node_list, as_of`` (the built ``core.jobs``).
        skip: clusters left out (those with an inventory: their nodes are known).

    Returns one row per host with a positive-length attempt holding GPUs on it."""
    kept = (
        pl.col("start_at").is_not_null()
        & (pl.col("gpus") > 0)
        & (pl.col("node_list").list.len() > 0)
    )
    if skip:
        kept = kept & ~pl.col("cluster").is_in(sorted(skip)).fill_null(value=False)
    end = pl.min_horizontal(pl.col("end_at").fill_null(pl.col("as_of")), pl.col("as_of"))
    spans = (
        jobs.lazy()
        .filter(kept)
        .select(
            "cluster",
            pl.col("node_list").alias("host"),
            (pl.col("gpus") / pl.col("node_list").list.len()).alias("_d"),
            pl.col("start_at").dt.epoch("us").alias("_s"),
            end.dt.epoch("us").alias("_e"),
        )
        .filter(pl.col("_e") > pl.col("_s"))
        .collect()
    )
    # Each host as a number, so that the sweep's rows hold no string: an exploded row per
    # attempt and host is its row number and host number, and the times join back to it.
    hosts = spans.select("cluster", "host").explode("host").unique().with_row_index("_h")
    keyed = (
        spans.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_r"), "cluster", "host")
        .explode("host")
        .join(hosts, on=["cluster", "host"], how="left", nulls_equal=True)
        .select("_r", "_h")
        .join(
            spans.select("_d", "_s", "_e").with_row_index("_r"),
            on="_r",
        )
        .lazy()
    )
    del spans
    steps = pl.concat(
        [
            keyed.select("_h", pl.col("_s").alias("_t"), "_d"),
            keyed.select("_h", pl.col("_e").alias("_t"), -pl.col("_d")),
        ]
    )
    # Per host, its steps in time order (an end before a start at the same instant) summed
    # as they come; sorted within each host's group, not as one sort of every step.
    most = steps.group_by("_h").agg(pl.col("_d").sort_by("_t", "_d").cum_sum().max().alias("gpus"))
    return (
        hosts.lazy()
        .join(most, on="_h")
        .select("cluster", "host", "gpus")
        .sort("cluster", "host")
        .collect()
    )


#: ``capacity_source`` of a node some attempt held GPUs on that its cluster's inventory lacks
#: (:func:`_outside_inventory`).
OUTSIDE_INVENTORY = "outside_inventory"


def _outside_inventory(held: pl.DataFrame, inventory: pl.DataFrame) -> pl.DataFrame:
    """The nodes the attempts of ``held`` used that their cluster's inventory lacks (a cluster
    with an inventory), as node rows: the job records prove such a node exists with at least
    the GPUs they held on it at once (:func:`_concurrent_gpus`, as a cluster without inventory
    counts its nodes), so it is capacity too (``capacity_source`` = :data:`OUTSIDE_INVENTORY`;
    the data-quality finding ``nodes_outside_inventory`` names it). Only the attempts touching
    such a node are swept; the usual case (every node in the inventory) explodes the node lists
    of the inventoried clusters and finds none.

    Args:
        held: ``cluster, gpus, start_at, end_at, node_list, as_of`` and, where present,
            ``gpu_type``, ``partition`` (the Slurm attempts and the pods' holds).
        inventory: the inventory's node rows (``cluster, host, …``).

    Returns:
        ``inventory``'s columns, one row per such node (``gpu_type`` and ``partition`` the
        first an attempt on it names; ``rack`` NULL).
    """
    empty = inventory.clear()
    clusters = sorted(inventory["cluster"].drop_nulls().unique().to_list())
    if not clusters or held.height == 0:
        return empty
    kept = (
        pl.col("cluster").is_in(clusters).fill_null(value=False)
        & pl.col("start_at").is_not_null()
        & (pl.col("gpus") > 0)
        & (pl.col("node_list").list.len() > 0)
    )
    rows = held.filter(kept).with_row_index("_r")
    # the distinct hosts first (a year's attempts name a few thousand): a host the inventory
    # names by its short or its full name is in it (metrics.hosts: `gpu001` and
    # `gpu001.hpc.example.org` are one node; two candidates: never guessed out)
    used = (
        rows.lazy()
        .select("cluster", pl.col("node_list").alias("host"))
        .explode("host")
        .drop_nulls("host")
        .unique()
    )
    matched = host_matches(used, inventory.lazy()).filter(pl.col("match") != "none")
    missing = used.join(matched.select("cluster", "host"), on=["cluster", "host"], how="anti")
    missing_hosts = missing.collect()
    if missing_hosts.height == 0:
        return empty
    unknown = (
        rows.select("_r", "cluster", pl.col("node_list").alias("host"))
        .explode("host")
        .join(missing_hosts, on=["cluster", "host"], how="semi")
    )
    touching = rows.join(unknown.select("_r").unique(), on="_r", how="semi")
    most = _concurrent_gpus(touching.drop("_r")).join(
        unknown.select("cluster", "host").unique(), on=["cluster", "host"], how="semi"
    )
    named = [c for c in ("gpu_type", "partition") if c in touching.columns]
    labels = (
        touching.select("cluster", pl.col("node_list").alias("host"), *named)
        .explode("host")
        .group_by("cluster", "host", maintain_order=True)
        .agg(pl.col(c).drop_nulls().first() for c in named)
    )
    out = most.join(labels, on=["cluster", "host"], how="left").with_columns(
        pl.lit(None, dtype=pl.String()).alias("rack"),
        pl.lit(OUTSIDE_INVENTORY).alias("capacity_source"),
        *(
            pl.lit(None, dtype=pl.String()).alias(c)
            for c in ("gpu_type", "partition")
            if c not in named
        ),
    )
    return out.select([pl.col(c).cast(t) for c, t in inventory.schema.items()]).sort(
        "cluster", "host"
    )


def _pod_holds(pods: pl.DataFrame, as_of: pl.DataFrame) -> pl.DataFrame:
    """``cluster, node_list, gpus, start_at, end_at, as_of``: each pod's hold of its node's GPUs
    (bound, else started, to its end :func:`pipelines.core.k8s_attempts.pod_end`: a pod
    rejected at kubelet admission holds nothing, one that is over without an end stops at its
    last known time), the rows :func:`_concurrent_gpus` sweeps for Kubernetes clusters (a
    workload's attempt spreads its GPUs evenly over its nodes; its pods say what each node
    held)."""
    return (
        pods.filter(pl.col("node_name").is_not_null() & (pl.col("gpus") > 0))
        .select(
            "cluster",
            pl.concat_list(pl.col("node_name")).alias("node_list"),
            pl.col("gpus").cast(pl.Float64),
            pl.coalesce("scheduled_at", "started_at").alias("start_at"),
            pod_end().alias("end_at"),
        )
        .join(as_of, on="cluster", how="left")
    )


def _pods_that_held(pods: pl.DataFrame) -> pl.DataFrame:
    """The pods whose hold of their node's GPUs is not empty (:func:`_pod_holds`' span): a pod
    rejected at kubelet admission (ended at its binding: no device was allocated) or one over
    without an end stopped where it was bound says nothing of its node's GPUs."""
    start = pl.coalesce("scheduled_at", "started_at")
    end = pod_end()
    return pods.filter(end.is_null() | start.is_null() | (end > start))


def _observed_nodes(
    slurm_hosts: pl.DataFrame, pods: pl.DataFrame, concurrent: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Nodes seen in the data, each with the most GPUs its attempts held on it at once
    (``concurrent``, :func:`_concurrent_gpus`), at least the most any one attempt held (the
    Slurm parts' :func:`_observed_hosts`, in part order, then the pods')."""
    k8s = pods.filter(pl.col("node_name").is_not_null() & (pl.col("gpus") > 0)).select(
        "cluster",
        pl.col("node_name").alias("host"),
        "gpus",
        pl.lit(None, dtype=pl.String()).alias("gpu_type"),
        pl.lit(None, dtype=pl.String()).alias("partition"),
    )
    parts = [slurm_hosts, k8s]
    if concurrent is not None and concurrent.height:
        parts.append(
            concurrent.select(
                "cluster",
                "host",
                "gpus",
                pl.lit(None, dtype=pl.String()).alias("gpu_type"),
                pl.lit(None, dtype=pl.String()).alias("partition"),
            )
        )
    both = pl.concat(parts, how="vertical_relaxed")
    return both.group_by("cluster", "host", maintain_order=True).agg(
        pl.col("gpus").max(),
        pl.col("gpu_type").drop_nulls().first(),
        pl.col("partition").drop_nulls().first(),
        pl.lit(None, dtype=pl.String()).alias("rack"),
        pl.lit("observed").alias("capacity_source"),
    )


def _node_states(
    raw: RawFrames,
    nodes: pl.DataFrame,
    as_of: pl.DataFrame,
    jobs: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Registered capacity and down / planned-down GPU-seconds per cluster-hour: Slurm clusters
    from their node events (:func:`_slurm_node_states`), Kubernetes clusters from their Node
    snapshots and Node Events (:func:`metrics.k8s_node_states.k8s_node_states_hourly`, ``jobs``
    as its ``allocations``; a cluster with Slurm events keeps those, ``jobs`` as theirs too)."""
    reg, down = _slurm_node_states(raw.slurm_events, nodes, as_of, jobs)
    if raw.k8s_nodes is None:
        return reg, down
    snaps = nodes_in_gpus(raw.k8s_nodes).sort("ingest_id").select(K8S_NODE_STATE_COLUMNS)
    events = raw.k8s_events
    regs, downs = [reg], [down]
    for c, cut in as_of.filter(pl.col("as_of").is_not_null()).iter_rows():
        if c in set(reg["cluster"]) | set(down["cluster"]):
            continue
        s = snaps.filter(pl.col("cluster") == c)
        if s.height == 0:
            continue
        e = events.filter(pl.col("cluster") == c).lazy()
        a = None if jobs is None else jobs.filter(pl.col("cluster") == c).lazy()
        r, d = k8s_node_states_hourly(s.lazy(), cut, events=e, allocations=a)
        regs.append(r.collect())
        downs.append(d.collect())
    return pl.concat(regs, how="vertical_relaxed"), pl.concat(downs, how="vertical_relaxed")


def _slurm_node_states(
    raw_events: pl.DataFrame,
    nodes: pl.DataFrame,
    as_of: pl.DataFrame,
    jobs: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Registered capacity and down / planned-down GPU-seconds per cluster-hour (Slurm events).

    Cluster TRES registrations give capacity (sreport *Reported*). Node events give down time:
    ``DOWN``/``FAIL``/``DRAIN`` → down, unless the reason names a planned outage
    (:func:`pipelines.core.node_states.planned_reason`: maintenance, an upgrade, a requested
    reboot; not "Node unexpectedly rebooted"), or the event is a ``MAINT`` reservation's →
    planned_down (:func:`pipelines.core.node_states.node_event_state`). ``raw_events`` holds
    the ``sacctmgr`` events, those the ``scontrol show node`` snapshots imply and those of the
    ``MAINT`` reservations (:func:`pipelines.core.node_states.slurm_node_down`, in
    :func:`build_core`). Event GPUs come
    from the event's TRES (a snapshot's Gres), else the node's inventory. Several exports of the
    same event are kept once, a closed copy over an open one whatever the load order
    (:func:`latest_node_events`). With ``jobs`` (``cluster, node_list, gpus, start_at,
    end_at``), the GPUs the attempts hold on a node are not down nor planned-down there
    (:func:`pipelines.core.node_states.unallocated_node_events`): a node drained under a
    running job is allocated until the job ends.
    """
    events = latest_node_events(raw_events)
    empty_reg = pl.DataFrame(
        schema={
            "cluster": pl.String(),
            "hour": pl.Datetime("us", "UTC"),
            "capacity_gpu_s": pl.Float64(),
        }
    )
    empty_down = pl.DataFrame(
        schema={"cluster": pl.String(), "hour": pl.Datetime("us", "UTC"),
                "down_gpu_s": pl.Float64(), "planned_down_gpu_s": pl.Float64()}
    )  # fmt: skip
    if events.height == 0:
        return empty_reg, empty_down
    node_gpus = nodes.select("cluster", pl.col("host").alias("node"), pl.col("gpus").alias("_ng"))
    cluster_gpus = nodes.group_by("cluster").agg(pl.col("gpus").sum().alias("_cg"))
    events = (
        events.join(node_gpus, on=["cluster", "node"], how="left")
        .join(cluster_gpus, on="cluster", how="left")
        .with_columns(
            pl.coalesce(
                "gpus", pl.when(pl.col("event") == "node").then("_ng").otherwise("_cg")
            ).alias("gpus")
        )
        .drop("_ng", "_cg")
    )
    regs, downs = [], []
    for row in as_of.filter(pl.col("as_of").is_not_null()).iter_rows(named=True):
        c, cut = row["cluster"], row["as_of"]
        ev = events.filter(pl.col("cluster") == c)
        if ev.height == 0:
            continue
        lo = ev["start_at"].min()
        assert isinstance(lo, dt.datetime)
        start = max(lo, cut - dt.timedelta(days=400)).replace(minute=0, second=0, microsecond=0)
        end = cut + dt.timedelta(hours=1)
        regs.append(registered_gpu_seconds_hourly(ev.lazy(), start, end, cut).collect())
        ev = ev.filter(pl.col("event") == "node").with_columns(node_event_state().alias("state"))
        if jobs is not None:
            ev = unallocated_node_events(ev, jobs.filter(pl.col("cluster") == c), cut)
        per = node_event_gpu_seconds_hourly(ev.lazy(), start, end, cut).collect()
        downs.append(
            per.pivot(
                on="state", index=["cluster", "hour"], values="gpu_s", aggregate_function="sum"
            )
        )
    reg = pl.concat(regs) if regs else empty_reg
    if not downs:
        return reg.select("cluster", "hour", "capacity_gpu_s"), empty_down
    down = pl.concat(downs, how="diagonal_relaxed")
    for col in ("down", "planned"):
        if col not in down.columns:
            down = down.with_columns(pl.lit(0.0).alias(col))
    down = down.select(
        "cluster",
        "hour",
        pl.col("down").fill_null(0.0).alias("down_gpu_s"),
        pl.col("planned").fill_null(0.0).alias("planned_down_gpu_s"),
    )
    return reg.select("cluster", "hour", "capacity_gpu_s"), down


def _as_of(frames: list[tuple[pl.DataFrame, list[str]]]) -> pl.DataFrame:
    """Per cluster, the latest timestamp the loaded data knows about (the data cut-off)."""
    parts = []
    for df, cols in frames:
        present = [c for c in cols if c in df.columns]
        if df.height and present:
            parts.append(
                df.group_by("cluster").agg(
                    pl.max_horizontal(*[pl.col(c).max() for c in present]).alias("as_of")
                )
            )
    if not parts:
        return pl.DataFrame(schema={"cluster": pl.String(), "as_of": pl.Datetime("us", "UTC")})
    return pl.concat(parts).group_by("cluster").agg(pl.col("as_of").max())


def _in_unit(
    raw: RawFrames, inventory: pl.DataFrame, unit: BuildUnit
) -> tuple[RawFrames, pl.DataFrame]:
    """The raw frames and inventory of ``unit``'s cluster (all of them for every cluster)."""
    if unit.first_day is not None or unit.last_day is not None:
        raise NotImplementedError("build_core: a unit bounded in days is not supported yet")
    if unit.cluster is None:
        return raw, inventory

    def one(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.filter(pl.col("cluster") == unit.cluster)

    def one_part(part: pl.DataFrame | StoredPart) -> pl.DataFrame | StoredPart:
        if isinstance(part, StoredPart):
            return StoredPart(one(part.attempts), one(part.pending), one(part.cuts))
        return one(part)

    parts = raw.slurm_parts
    return (
        RawFrames(
            slurm_rows=one(raw.slurm_rows),
            slurm_parts=None if parts is None else (lambda: (one_part(p) for p in parts())),
            slurm_events=one(raw.slurm_events),
            k8s_pods=one(raw.k8s_pods),
            k8s_events=one(raw.k8s_events),
            k8s_workloads=one(raw.k8s_workloads),
            kueue_local_queues=one(raw.kueue_local_queues),
            k8s_nodes=None if raw.k8s_nodes is None else one(raw.k8s_nodes),
            topology=None if raw.topology is None else one(raw.topology),
            kueue_topologies=None if raw.kueue_topologies is None else one(raw.kueue_topologies),
            kueue_workload_topology=None
            if raw.kueue_workload_topology is None
            else one(raw.kueue_workload_topology),
            slurm_squeue=None if raw.slurm_squeue is None else one(raw.slurm_squeue),
            pod_samples=None if raw.pod_samples is None else one(raw.pod_samples),
            slurm_node_shards=None if raw.slurm_node_shards is None else one(raw.slurm_node_shards),
            slurm_node_states=None if raw.slurm_node_states is None else one(raw.slurm_node_states),
            slurm_reservations=None
            if raw.slurm_reservations is None
            else one(raw.slurm_reservations),
        ),
        one(inventory),
    )


def build_core(
    raw: RawFrames,
    registry: RegistryFrames,
    inventory: pl.DataFrame,
    unit: BuildUnit,
    *,
    slurm_sink: Callable[[pl.DataFrame], None] | None = None,
) -> CoreFrames:
    """Every core frame of ``unit`` from the raw frames (see :class:`CoreFrames`).

    Args:
        raw: the raw tables, every zoned timestamp in ``UTC``.
        registry: the allocation registry (team mapping and share history).
        inventory: ``cluster, host, gpus, gpu_type, partition, rack, capacity_source`` (the
            inventory files); a cluster without inventory gets the nodes seen in the data.
        unit: the part of the history to build (:meth:`BuildUnit.everything`: all of it; a
            unit bounded in days raises :class:`NotImplementedError`).
        slurm_sink: when given, each part's resolved Slurm rows are handed to it (the caller
            stores them, e.g. appends them to ``core.slurm_jobs``) instead of being kept:
            ``CoreFrames.slurm_jobs`` is then empty (its schema only), and the whole history's
            resolved rows are never in memory at once. The attempts, never-started jobs and
            cut-offs are taken from each part first.
    """
    raw, inventory = _in_unit(raw, inventory, unit)
    # node events: sacctmgr's, those the down or drained `scontrol show node` snapshots
    # imply on clusters without sacctmgr node events, and the MAINT reservations' nodes where
    # no other event is (METRICS.md "Node states")
    raw = replace(
        raw,
        slurm_events=slurm_node_down(
            raw.slurm_events, raw.slurm_node_states, raw.slurm_reservations
        ),
    )
    mapping = registry.mapping
    account_teams = mapping.filter(pl.col("kind") == "slurm_account")
    ns_teams = mapping.filter(pl.col("kind") == "k8s_namespace")
    lq_teams = mapping.filter(pl.col("kind") == "k8s_local_queue")

    # clusters with an inventory keep its nodes: their observed hosts are not worked out
    inventoried = set(inventory["cluster"].drop_nulls().unique().to_list())
    slurm, s_att, slurm_pending, slurm_cuts, hosts = _slurm_frames(
        raw, account_teams, slurm_sink, inventoried
    )
    slurm_pending = _throttled(slurm_pending, s_att)
    # a pod's advertised GPUs in GPUs of its node (MIG single strategy, time-slicing replicas)
    pods = pods_in_gpus(_newest_pod_state(raw.k8s_pods), raw.k8s_nodes)
    events = raw.k8s_events.sort("count", "last_seen", "ingest_id", nulls_last=False).unique(
        ["cluster", "uid"], keep="last", maintain_order=True
    )
    # The latest snapshot of each Kueue Workload / LocalQueue (admission state from the
    # Workload's conditions; clusters without Workload objects keep the pods+events rebuild).
    workloads = _latest(raw.k8s_workloads, "snapshot_at", "ingest_id")
    local_queues = _latest(raw.kueue_local_queues, "snapshot_at", "ingest_id")
    k8s_att = k8s_attempts(
        pods.lazy(),
        events.lazy(),
        workloads.lazy() if workloads.height else None,
        local_queues.lazy() if local_queues.height else None,
    )
    k8s_jobs = workload_attempts(k8s_att, ns_teams.lazy(), lq_teams.lazy()).collect()
    k8s_pending = pending_workload_attempts(k8s_att, ns_teams.lazy(), lq_teams.lazy()).collect()
    k8s_timings = k8s_workload_timings(
        k8s_att, events.lazy(), ns_teams.lazy(), lq_teams.lazy()
    ).collect()
    k8s_reasons = k8s_pending_reasons(k8s_att, events.lazy()).collect()

    as_of = _as_of(
        [
            (slurm_cuts, ["as_of"]),
            (pods, _POD_CUT_COLUMNS),
            (_running_pod_samples(pods, raw.pod_samples), ["last_sample"]),
            (_workload_times(workloads), ["wl_time"]),
        ]
    )
    jobs = pl.concat(  # evenly chunked columns in, evenly chunked out (see _slurm_frames)
        [s_att.select(JOBS_COLUMNS), k8s_jobs.select(JOBS_COLUMNS).rechunk()],
        how="vertical_relaxed",
    ).with_columns(pl.col("team").fill_null(UNATTRIBUTED))
    jobs = with_as_of(jobs, as_of)

    held = pl.concat(
        [jobs.filter(pl.col("source") == "slurm"), _pod_holds(pods, as_of)], how="diagonal_relaxed"
    )
    observed = _observed_nodes(hosts, _pods_that_held(pods), _concurrent_gpus(held, inventoried))
    # the inventory, the observed nodes of a cluster without one, and the nodes an attempt
    # used that its cluster's inventory lacks (METRICS.md "Capacity without an inventory")
    nodes = pl.concat(
        [
            inventory,
            observed.join(inventory.select("cluster").unique(), on="cluster", how="anti").select(
                inventory.columns
            ),
            _outside_inventory(held, inventory),
        ],
        how="vertical_relaxed",
    )
    registered, down = _node_states(raw, nodes, as_of, jobs)
    pending = pl.concat(
        [
            slurm_pending,
            k8s_pending.select(_PENDING_COLUMNS),
        ],
        how="vertical_relaxed",
    )
    # the registry's share history per cluster: a share change mid-window applies per hour
    shares = cluster_shares(registry.history, nodes)
    # one row per pod life (uid), from when it was bound (scheduled; else started; NULL: never,
    # it held no GPU): a name used again by a later pod is that pod's from then on
    # (metrics.attribution.pod_lives)
    lives = pods.select(
        "cluster", "uid",
        pl.coalesce("scheduled_at", "started_at").cast(pl.Datetime("us", "UTC")).alias("pod_from"),
        pl.col("node_name").alias("node"),
    ).unique(["cluster", "uid"], keep="last", maintain_order=True)  # fmt: skip
    pod_jobs = k8s_att.pods.join(lives, on=["cluster", "uid"], how="left").select(
        "cluster", "namespace", pl.col("name").alias("pod"),
        "uid", pl.format("{}/{}", pl.col("namespace"), pl.col("group")).alias("job_id"),
        "pod_from", "node",
    )  # fmt: skip
    return CoreFrames(
        slurm_jobs=slurm,
        slurm_attempts=s_att,
        k8s_pods=pods,
        k8s_events=events,
        k8s_attempts=k8s_att,
        k8s_jobs=k8s_jobs,
        k8s_pending=k8s_pending,
        k8s_timings=k8s_timings,
        k8s_pending_reasons=k8s_reasons,
        as_of=as_of,
        jobs=jobs,
        pending=pending,
        nodes=nodes,
        registered=registered,
        down=down,
        shares=shares,
        pod_jobs=pod_jobs,
        topology=_topology(raw, nodes),
        node_down=latest_node_events(raw.slurm_events)
        .filter((pl.col("event") == "node") & pl.col("node").is_not_null())
        .select("cluster", "node", "start_at", "end_at"),
        kueue_nodes=None
        if raw.kueue_workload_topology is None
        else assignment_node_lists(_latest_snapshot(raw.kueue_workload_topology).lazy()).collect(),
        kueue_requests=None
        if raw.kueue_workload_topology is None
        else topology_requests(_latest_snapshot(raw.kueue_workload_topology).lazy()).collect(),
        pending_spells=_pending_spells(raw, events),
        holds=_holds(k8s_att),
    )


def _holds(attempts: K8sAttempts) -> pl.DataFrame:
    """:attr:`CoreFrames.holds` from the Kubernetes attempts' pieces (``job_id`` =
    ``<namespace>/<workload>``, as :func:`workload_attempts` names it)."""
    return attempts.holds.select(
        "cluster",
        pl.format("{}/{}", pl.col("namespace"), pl.col("group")).alias("job_id"),
        "attempt",
        "start_at",
        "end_at",
        "gpus",
        "host",
    ).cast(NODE_HOLD_SCHEMA)  # type: ignore[arg-type]


def _slurm_frames(
    raw: RawFrames,
    account_teams: pl.DataFrame,
    sink: Callable[[pl.DataFrame], None] | None,
    inventoried: Collection[str] = (),
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The Slurm side of the core, part by part (:func:`resolve_slurm_parts`): the resolved
    rows (empty, schema only, when ``sink`` takes each part), the attempts (narrow:
    :data:`_ATTEMPT_COLUMNS`; an attempt holding GPU shards and no GPU gets its GPUs from its
    nodes' shard counts in effect at its start, :func:`pipelines.core.gpu_shards.shard_gpus`,
    the resolved rows keep sacct's), the never-started allocations (:data:`_PENDING_COLUMNS`;
    one asking for shards counts by the nodes' latest state),
    ``cluster, as_of``: each part's latest submit, start or end time, or an open row's start +
    Elapsed, per cluster, and
    each part's :func:`_observed_hosts` (none of the clusters ``inventoried``). A
    :class:`StoredPart` gives its frames as they are."""
    parts = raw.slurm_parts() if raw.slurm_parts is not None else [raw.slurm_rows]
    kept, attempts, pending, cuts, hosts = [], [], [], [], []
    # the attempts count by each node's state at their start, the never-started by its latest
    states = (
        pl.DataFrame(
            schema={
                "cluster": pl.String(),
                "host": pl.String(),
                "snapshot_at": pl.Datetime("us", "UTC"),
                "gpus_per_shard": pl.Float64(),
            }
        )
        if raw.slurm_node_shards is None
        else node_shard_states(raw.slurm_node_shards)
    )
    per_shard = latest_gpus_per_shard(states)
    teams = account_teams.lazy()
    for part in parts:
        if isinstance(part, StoredPart):
            if sink is None:
                raise ValueError("build_core: a stored Slurm part needs a slurm_sink")
            attempts.append(shard_gpus(part.attempts, states))
            pending.append(pending_shard_gpus(part.pending, per_shard))
            cuts.append(_as_of([(part.cuts, _CUT_COLUMNS)]))
            # the hosts of the attempts with their shards converted, as a resolved part's
            hosts.append(_observed_hosts(attempts[-1], inventoried))
            continue
        slurm = _resolve(part, teams)
        # One chunk per column: the resolution's columns come in different chunkings (a
        # literal in one, the raw read's in others), and polars copies a whole frame whose
        # columns are chunked unevenly at its next filter or select (600 MB on a year's
        # attempts); a part is copied once here instead.
        attempts.append(
            shard_gpus(
                slurm_attempts(slurm.lazy()).select(*_ATTEMPT_COLUMNS).collect().rechunk(),
                states,
            )
        )
        hosts.append(_observed_hosts(attempts[-1], inventoried))
        pending.append(
            pending_shard_gpus(
                slurm.filter(pl.col("is_allocation") & pl.col("start_at").is_null())
                .with_columns(pl.coalesce("req_gpus", "gpus").alias("req_gpus"))
                .select(_SLURM_PENDING_COLUMNS),
                per_shard,
            )
        )
        opened = [_run_to()] if "elapsed_s" in slurm.columns else []
        cut_rows = slurm.select("cluster", "submit_at", "start_at", "end_at", *opened)
        cuts.append(_as_of([(cut_rows, _CUT_COLUMNS)]))
        if sink is None:
            kept.append(slurm)
        else:
            sink(slurm)
        # the raw part and its resolution, not held while the next part is read
        del slurm, part
    if not attempts:
        raise ValueError("build_core: no Slurm parts (an empty table is one empty part)")
    schema = pl.DataFrame(schema=resolved_slurm_schema(raw.slurm_rows))  # every part may be stored

    def cat(frames: list[pl.DataFrame]) -> pl.DataFrame:
        return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical_relaxed")

    return cat(kept) if kept else schema, cat(attempts), cat(pending), cat(cuts), cat(hosts)


def _throttled(pending: pl.DataFrame, attempts: pl.DataFrame) -> pl.DataFrame:
    """The never-started Slurm rows (:data:`_SLURM_PENDING_COLUMNS`) as :data:`_PENDING_COLUMNS`,
    the tasks of a throttled array (``%N``) not eligible while their array runs N tasks.

    A pending ``123_[5-50%4]`` row stands for 46 tasks of which at most 4 run at once (METRICS.md
    "Arrays"): a task waiting for one of those slots waits for its own array, not for the
    scheduler, and Slurm makes it eligible when a slot frees. With R of the array's tasks
    running at the cut-off (started, no end) and F = max(0, N − R) slots free, the F lowest
    pending tasks are eligible since the later of the row's eligible time and the last end of a
    task of the array (when the slot freed); the others have no eligible time (excluded from
    the time-to-start curves, reported there apart, and no pending demand).

    Args:
        pending: ``_SLURM_PENDING_COLUMNS`` rows (``array_job_id`` and ``array_task_id`` from
            the expanded row; ``array_throttle`` NULL or 0 where there is none).
        attempts: the started Slurm allocations (``cluster, job_id, end_at``; an array task's
            ``job_id`` is ``<array>_<task>``).
    """
    throttle = pl.col("array_throttle").fill_null(0)
    if pending.filter(throttle > 0).height == 0:
        return pending.select(_PENDING_COLUMNS)
    key = ["cluster", "array_job_id"]
    runs = (
        attempts.lazy()
        .select(
            "cluster",
            pl.col("job_id").str.extract(r"^(\d+)_\d+$", 1).alias("array_job_id"),
            "end_at",
        )
        .filter(pl.col("array_job_id").is_not_null())
        .group_by(key)
        .agg(
            pl.col("end_at").is_null().sum().alias("_running"),
            pl.col("end_at").max().alias("_freed"),
        )
    )
    rank = pl.col("array_task_id").rank("ordinal").over(key) - 1
    free = (throttle - pl.col("_running").fill_null(0)).clip(lower_bound=0)
    return (
        pending.lazy()
        .with_columns(pl.col("array_job_id").cast(pl.String))
        .join(runs, on=key, how="left", maintain_order="left")
        .with_columns(
            pl.when(throttle <= 0)
            .then(pl.col("eligible_at"))
            .when(rank < free)
            .then(pl.max_horizontal("eligible_at", "_freed"))
            .otherwise(None)
            .alias("eligible_at")
        )
        .select(_PENDING_COLUMNS)
        .collect()
    )


def _resolve(part: pl.DataFrame, teams: pl.LazyFrame) -> pl.DataFrame:
    """:func:`resolve_slurm_jobs` of one part of the raw Slurm rows (see
    :func:`resolve_slurm_parts`)."""
    # engine="in-memory": polars 2.1's default (streaming) engine panics on this plan with
    # "assertion failed: i < self.len()" (in a string expression of its select node) when the
    # raw frame arrives from DuckDB in 20 chunks (2.36M rows, a year of 10k GPUs); the same
    # rows in one chunk, or in 17, do not. The in-memory engine is also the faster here.
    return resolve_slurm_jobs(part.lazy(), teams).collect(engine="in-memory")


def resolved_slurm_schema(raw_rows: pl.DataFrame) -> pl.Schema:
    """The columns and types of :func:`resolve_slurm_jobs`' rows for raw rows of
    ``raw_rows``' schema (its rows are not read)."""
    teams = pl.LazyFrame(schema={"key": pl.String(), "team": pl.String()})
    return resolve_slurm_jobs(raw_rows.clear().lazy(), teams).collect_schema()


def resolve_slurm_parts(parts: Iterable[pl.DataFrame], account_teams: pl.DataFrame) -> pl.DataFrame:
    """:func:`resolve_slurm_jobs` of every part in turn, concatenated.

    Args:
        parts: raw Slurm rows (``raw.slurm_rows`` columns), each part holding every row of the
            ``(cluster, job_key)`` identities it contains, the parts in ascending ranges of
            ``(cluster, job_key)``; each is dropped once resolved (a generator's parts are never
            all in memory).
        account_teams: ``key`` (Slurm account) → ``team`` from the allocation registry.

    Returns:
        The ``slurm_jobs`` rows of all parts: resolution is per identity (dedup, supersession
        and attempts never look across two ``(cluster, job_key)``), and its output is sorted by
        ``cluster, job_key, start_at, step``, so parts in ascending key ranges concatenate to
        the same frame, in the same order, as one resolution of all rows.
    """
    teams = account_teams.lazy()
    out = [_resolve(part, teams) for part in parts]
    if not out:
        raise ValueError("resolve_slurm_parts: no parts (an empty table is one empty part)")
    return out[0] if len(out) == 1 else pl.concat(out, how="vertical_relaxed", rechunk=False)


def _pending_spells(raw: RawFrames, events: pl.DataFrame) -> pl.DataFrame:
    """The pending-reason spells: Slurm's from polled ``squeue``, then Kueue's topology
    not-fit statements (:func:`kueue_topology_spells`) from Workload conditions and events."""
    slurm = (
        pl.DataFrame(schema=SPELL_SCHEMA)
        if raw.slurm_squeue is None
        else pending_reason_spells(raw.slurm_squeue.sort("ingest_id").lazy()).collect()
    )
    kueue = kueue_topology_spells(
        raw.k8s_workloads.lazy() if raw.k8s_workloads.height else None,
        events.lazy() if events.height else None,
    ).collect()
    return pl.concat([slurm, kueue]) if kueue.height else slurm


def _topology(raw: RawFrames, nodes: pl.DataFrame) -> pl.DataFrame:
    """The topology map (:func:`topology_intervals`) from ``raw.topology``, the Node labels
    and the nodes' racks."""
    conf = raw.topology
    if conf is None:
        conf = pl.DataFrame(
            schema={"cluster": pl.String(), "level": pl.String(), "domain": pl.String(),
                    "node": pl.String(), "valid_from": pl.Datetime("us", "UTC")}
        )  # fmt: skip
    labels = k8s_label_topology(
        raw.k8s_nodes.select("cluster", "name", "labels", "snapshot_at")
        if raw.k8s_nodes is not None
        else pl.DataFrame(schema={"cluster": pl.String(), "name": pl.String(),
                                  "labels": pl.String(), "snapshot_at": pl.Datetime("us", "UTC")}),
        raw.kueue_topologies,
    )  # fmt: skip
    return topology_intervals(conf, labels, nodes.select("cluster", "host", "rack"))
