"""Data-quality checks shown beside the numbers they qualify (METRICS.md "Reconciliation")."""

from __future__ import annotations

import polars as pl

from metrics._helpers import seconds_between
from metrics.hosts import host_matches
from metrics.schema import CLUSTER, END_AT, GPUS, PARTITION, START_AT, TEAM

__all__ = [
    "DATA_QUALITY_SCHEMA",
    "RUNAWAY_GRACE_S",
    "admitted_without_pods",
    "dcgm_hosts_without_node",
    "gpu_tracking_gaps",
    "open_attempts_ended_by_requeue",
    "pods_ended_without_time",
    "runaway_running_attempts",
    "unattributed_gpu_hours",
    "uncounted_accelerator_cluster_queues",
    "uncounted_accelerator_nodes",
    "uncounted_accelerator_pods",
    "uncounted_accelerator_workloads",
]

#: One row per finding: ``check`` names the rule, ``value`` its count or share.
DATA_QUALITY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "day": pl.Date(),
    "partition": pl.String(),
    "check": pl.String(),
    "value": pl.Float64(),
    "detail": pl.String(),
}

#: How far past its time limit an open allocation's Elapsed may run before it is a runaway job
#: (seconds; METRICS.md "Runaway Slurm attempts"), whose end the build then counts at start +
#: limit + this (:func:`pipelines.core.slurm_identity.is_runaway`). slurmctld ends a job at its
#: limit plus ``OverTimeLimit`` (slurm.conf, minutes, default 0), signalling SIGTERM and SIGKILL
#: ``KillWait`` (default 30 s) apart, and a step that will not die is given
#: ``UnkillableStepTimeout`` (default 60 s): one hour covers those defaults many times over and
#: an ``OverTimeLimit`` of up to 60 min, which goodput cannot read from the data.
RUNAWAY_GRACE_S = 3600


def gpu_tracking_gaps(attempts: pl.LazyFrame, gpu_partitions: pl.LazyFrame) -> pl.LazyFrame:
    """GPU partitions where, in a day, no allocation carries ``gres/gpu``.

    Such a day means GPUs were not tracked in ``AccountingStorageTRES`` then, not that the
    partition ran no GPU work; it is flagged instead of reported as 0 GPUs. An allocation
    holding GPU shards (``shards`` > 0, Slurm's ``gres/shard``) shows GPU sharing tracked: it
    counts as one carrying GPUs (whether its share of a GPU is known is the finding
    ``gpu_shards_without_node_state``'s).

    Args:
        attempts: Slurm allocation attempts with ``cluster, partition, start_at, gpus`` and,
            optionally, ``shards``.
        gpu_partitions: ``cluster, partition`` known to hold GPUs (from the inventory, or any
            allocation in the data that carried ``gres/gpu``).

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'gpus_not_tracked'`` and ``value`` = the
        number of allocations that started in that partition and UTC day, none carrying GPUs.
    """
    tracked = pl.col(GPUS) > 0
    if "shards" in attempts.collect_schema().names():
        tracked = tracked | (pl.col("shards") > 0).fill_null(value=False)
    per_day = (
        attempts.filter(pl.col(START_AT).is_not_null())
        .join(gpu_partitions.unique(), on=[CLUSTER, PARTITION], how="semi")
        .group_by(CLUSTER, pl.col(START_AT).dt.date().alias("day"), PARTITION)
        .agg(pl.len().alias("allocs"), tracked.sum().alias("with_gpus"))
    )
    return per_day.filter(pl.col("with_gpus") == 0).select(
        CLUSTER,
        "day",
        PARTITION,
        pl.lit("gpus_not_tracked").alias("check"),
        pl.col("allocs").cast(pl.Float64).alias("value"),
        pl.lit("GPUs not tracked in AccountingStorageTRES: no allocation carries gres/gpu").alias(
            "detail"
        ),
    )


def admitted_without_pods(jobs: pl.LazyFrame) -> pl.LazyFrame:
    """Kueue Workloads admitted (quota reserved) whose pods were not loaded.

    Such an attempt reads ``ADMITTED`` in ``jobs``: it no longer waits in the queue, but with no
    pod nothing says when it ran, so it adds no GPU-seconds. The usual cause is a pod export
    missing for the namespace or the time.

    Args:
        jobs: ``jobs`` rows with ``cluster, partition, state, eligible_at``.

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'admitted_without_pods'``, one per
        cluster, ClusterQueue (``partition``) and UTC day of eligibility, ``value`` = the
        attempts.
    """
    return (
        jobs.filter(pl.col("state") == "ADMITTED")
        .group_by(CLUSTER, pl.col("eligible_at").dt.date().alias("day"), PARTITION)
        .agg(pl.len().cast(pl.Float64).alias("value"))
        .select(
            CLUSTER,
            "day",
            PARTITION,
            pl.lit("admitted_without_pods").alias("check"),
            "value",
            pl.lit(
                "Kueue admitted the workload but none of its pods was loaded: not counted as "
                "running (check the pod export)"
            ).alias("detail"),
        )
    )


def open_attempts_ended_by_requeue(attempts: pl.LazyFrame) -> pl.LazyFrame:
    """Slurm attempts with no end whose end the build inferred from their job's requeue.

    An export taken while an attempt ran shows it with no End; when a later export without
    ``sacct -D`` shows only the job's next record (a later attempt, or the job pending again),
    nothing records the earlier attempt's end. The resolution ends it at the requeue time, the
    later record's Submit (:func:`pipelines.core.slurm_identity.resolve_slurm_jobs`, METRICS.md
    "Open Slurm attempts of a requeued job"), so its GPU-seconds stop there, an upper bound.

    Args:
        attempts: Slurm attempts with ``cluster, partition, end_at, end_inferred`` and, where
            given, ``state`` (an inferred end of a state other than ``REQUEUED`` is a
            runaway's, :func:`runaway_running_attempts`, and not counted here) and
            ``start_at, timelimit_s, elapsed_s`` (a requeued runaway whose end is its cap,
            earlier than its requeue, is the runaway finding's, :func:`_runaway_capped`).

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'open_attempts_ended_by_requeue'``,
        one per cluster, partition and UTC day of the inferred end, ``value`` = the attempts.
    """
    inferred = pl.col("end_inferred").fill_null(value=False)
    names = attempts.collect_schema().names()
    if "state" in names:
        inferred = inferred & _requeued()
    if set(names) >= _CAP_COLUMNS:
        inferred = inferred & ~_runaway_capped()
    return (
        attempts.filter(inferred)
        .group_by(CLUSTER, pl.col(END_AT).dt.date().alias("day"), PARTITION)
        .agg(pl.len().cast(pl.Float64).alias("value"))
        .select(
            CLUSTER,
            "day",
            PARTITION,
            pl.lit("open_attempts_ended_by_requeue").alias("check"),
            "value",
            pl.lit(
                "attempts with no End whose job was requeued (a later record, e.g. sacct without "
                "-D): ended at the requeue time (the later record's Submit), counted REQUEUED"
            ).alias("detail"),
        )
    )


def _requeued() -> pl.Expr:
    """An inferred end of an open attempt ended by its job's requeue (``state`` REQUEUED),
    not a runaway's (``state`` as printed)."""
    return (pl.col("state") == "REQUEUED").fill_null(value=False)


#: The columns :func:`_runaway_capped` reads besides ``end_inferred``.
_CAP_COLUMNS = {START_AT, END_AT, "timelimit_s", "elapsed_s"}


def _runaway_capped() -> pl.Expr:
    """An inferred end that is a runaway's cap: the attempt's Elapsed exceeds its time limit
    (> 0) by more than :data:`RUNAWAY_GRACE_S` and its end is start + limit +
    :data:`RUNAWAY_GRACE_S`, whatever its ``state``. A requeued runaway ends at the earlier of
    its requeue and its cap (``REQUEUED`` either way): the cap decides which finding it is
    in."""
    limit = pl.col("timelimit_s")
    cap = pl.col(START_AT) + pl.duration(seconds=limit + RUNAWAY_GRACE_S)
    return (
        pl.col("end_inferred")
        & (limit > 0)
        & (pl.col("elapsed_s") > limit + RUNAWAY_GRACE_S)
        & (pl.col(END_AT) == cap)
    ).fill_null(value=False)


#: How many runaway attempts :func:`runaway_running_attempts` names per cluster.
_RUNAWAYS_NAMED = 3


def _gpu_h(expr: pl.Expr) -> pl.Expr:
    """GPU-seconds as GPU-hours with two decimals (``56793.88``, ``242.00``), a string."""
    cents = (expr / 36).round(0).cast(pl.Int64)
    return pl.format("{}.{}", cents // 100, (cents % 100).cast(pl.String).str.zfill(2))


def runaway_running_attempts(attempts: pl.LazyFrame) -> pl.LazyFrame:
    """Slurm attempts still running in the data more than 1 h past their time limit (runaway
    jobs), counted to start + limit + 1 h.

    slurmctld ends a job at its time limit (+ ``OverTimeLimit``); a job it lost (node or
    controller failure) stays running in slurmdbd for ever, with Elapsed growing to the export.
    The resolution ends it at start + limit + 1 h (:func:`pipelines.core.slurm_identity.
    is_runaway`, METRICS.md "Runaway Slurm attempts"), an upper bound; its recorded Elapsed
    moves no cut-off. ``sacctmgr show runawayjobs`` lists such jobs and offers to end them.

    Args:
        attempts: Slurm attempts with ``cluster, job_id, state, gpus, gpu_s, elapsed_s,
            end_inferred`` (``gpu_s`` = GPUs × the counted run, seconds) and, where given,
            ``start_at, end_at, timelimit_s``: a ``REQUEUED`` attempt whose end is its cap
            (earlier than its requeue, :func:`_runaway_capped`) is counted here too; without
            them, only the inferred ends of a state other than ``REQUEUED``.

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'runaway_running_attempts'``, one per
        cluster (``day`` and ``partition`` NULL), ``value`` = the attempts, ``detail`` = their
        counted and recorded (GPUs × Elapsed) GPU-hours summed, then the
        ``_RUNAWAYS_NAMED`` with most recorded GPU-hours (ties by job id), each as
        ``job 4 (2 GPUs): 56793.88 recorded, 242.00 counted`` (GPU-h), and how many more.
    """
    inferred = pl.col("end_inferred").fill_null(value=False)
    if set(attempts.collect_schema().names()) >= _CAP_COLUMNS:
        # ended by the cap, requeued or not (one whose requeue came first: the requeue's)
        inferred = inferred & (~_requeued() | _runaway_capped())
    else:
        inferred = inferred & ~_requeued()
    runaway = attempts.filter(inferred)
    recorded = pl.col(GPUS) * pl.col("elapsed_s")
    named = (
        runaway.with_columns(recorded.alias("_rec"))
        .sort(CLUSTER, pl.col("_rec"), "job_id", descending=[False, True, False], nulls_last=True)
        .group_by(CLUSTER, maintain_order=True)
        .agg(
            pl.format(
                "job {} ({} {}): {} recorded, {} counted",
                "job_id",
                pl.when(pl.col(GPUS) == pl.col(GPUS).floor())
                .then(pl.col(GPUS).cast(pl.Int64).cast(pl.String))
                .otherwise(pl.col(GPUS).round(2).cast(pl.String)),
                pl.when(pl.col(GPUS) == 1).then(pl.lit("GPU")).otherwise(pl.lit("GPUs")),
                _gpu_h(pl.col("_rec")),
                _gpu_h(pl.col("gpu_s")),
            )
            .head(_RUNAWAYS_NAMED)
            .str.join("; ")
            .alias("_names"),
            pl.len().alias("_n"),
            _gpu_h(pl.col("_rec").sum()).alias("_rec_h"),
            _gpu_h(pl.col("gpu_s").sum()).alias("_counted_h"),
        )
    )
    more = pl.when(pl.col("_n") > _RUNAWAYS_NAMED).then(
        pl.format("; and {} more", pl.col("_n") - _RUNAWAYS_NAMED)
    )
    return named.sort(CLUSTER, nulls_last=True).select(
        CLUSTER,
        pl.lit(None, dtype=pl.Date()).alias("day"),
        pl.lit(None, dtype=pl.String()).alias("partition"),
        pl.lit("runaway_running_attempts").alias("check"),
        pl.col("_n").cast(pl.Float64).alias("value"),
        pl.format(
            "attempts RUNNING more than 1 h past their time limit (runaway jobs: slurmdbd still "
            "holds them, slurmctld ended or lost them; list and fix them with `sacctmgr show "
            "runawayjobs`): counted to start + limit + 1 h, {} of {} recorded GPU-h (GPUs × "
            "Elapsed): {}{}",
            "_counted_h",
            "_rec_h",
            "_names",
            more.otherwise(pl.lit("")),
        ).alias("detail"),
    )


def uncounted_accelerator_pods(pods: pl.LazyFrame) -> pl.LazyFrame:
    """Kubernetes pods that asked accelerator resources not counted as GPUs.

    A pod asking ``gpu.intel.com/i915``, ``habana.ai/gaudi``, ``aws.amazon.com/neuroncore``,
    ``google.com/tpu``, an AMD partition resource (``amd.com/cpx_nps4``) or an impossible MIG
    profile counts 0 GPUs for them (:func:`pipelines.kubernetes._pods_parse.
    is_uncounted_accelerator`, METRICS.md "Accelerators not counted as GPUs"): each such pod is
    named here instead of dropped silently.

    Args:
        pods: ``core.k8s_pods`` rows with ``cluster, uncounted_resources`` (the resource names,
            comma-separated; NULL when none), one row per pod.

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'uncounted_accelerator_resource'``, one
        per cluster (``day`` and ``partition`` NULL), ``value`` = the pods, ``detail`` = each
        resource with its pods (``gpu.intel.com/i915 (1 pod), habana.ai/gaudi (1 pod)``), by
        name.
    """
    return _uncounted_findings(
        pods,
        "uncounted_accelerator_resource",
        "pod",
        "pods asked accelerator resources that are not counted as GPUs (0 GPUs here)",
    )


def uncounted_accelerator_nodes(nodes: pl.LazyFrame) -> pl.LazyFrame:
    """Kubernetes Nodes whose capacity or allocatable names accelerator resources not counted
    as GPUs (as :func:`uncounted_accelerator_pods`): their devices add no GPU capacity.

    Args:
        nodes: ``cluster, uncounted_resources`` (comma-separated), one row per node.

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'uncounted_accelerator_node_resource'``,
        one per cluster (``day`` and ``partition`` NULL), ``value`` = the nodes, ``detail`` =
        each resource with its nodes (``habana.ai/gaudi (2 nodes)``).
    """
    return _uncounted_findings(
        nodes,
        "uncounted_accelerator_node_resource",
        "node",
        "nodes advertise accelerator resources that are not counted as GPUs (no GPU capacity)",
    )


def uncounted_accelerator_workloads(workloads: pl.LazyFrame) -> pl.LazyFrame:
    """Kueue Workloads whose pod sets ask accelerator resources not counted as GPUs (as
    :func:`uncounted_accelerator_pods`): Kueue admits them, but they count 0 GPUs for them.

    Args:
        workloads: ``cluster, uncounted_resources`` (comma-separated), one row per Workload.

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with
        ``check = 'uncounted_accelerator_workload_resource'``, one per cluster (``day`` and
        ``partition`` NULL), ``value`` = the Workloads, ``detail`` = each resource with its
        Workloads (``habana.ai/gaudi (1 workload)``).
    """
    return _uncounted_findings(
        workloads,
        "uncounted_accelerator_workload_resource",
        "workload",
        "Kueue workloads asked accelerator resources that are not counted as GPUs (0 GPUs here)",
    )


def uncounted_accelerator_cluster_queues(cluster_queues: pl.LazyFrame) -> pl.LazyFrame:
    """Kueue ClusterQueues giving quota of accelerator resources not counted as GPUs (as
    :func:`uncounted_accelerator_pods`): that quota adds no GPU quota.

    Args:
        cluster_queues: ``cluster, uncounted_resources`` (comma-separated), one row per
            ClusterQueue.

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with
        ``check = 'uncounted_accelerator_cluster_queue_resource'``, one per cluster (``day`` and
        ``partition`` NULL), ``value`` = the ClusterQueues, ``detail`` = each resource with its
        ClusterQueues (``habana.ai/gaudi (2 ClusterQueues)``).
    """
    return _uncounted_findings(
        cluster_queues,
        "uncounted_accelerator_cluster_queue_resource",
        "ClusterQueue",
        "Kueue ClusterQueues give quota of accelerator resources that are not counted as GPUs"
        " (no GPU quota)",
    )


def _uncounted_findings(frame: pl.LazyFrame, check: str, noun: str, intro: str) -> pl.LazyFrame:
    """Per cluster, the rows of ``frame`` (one per object) naming ``uncounted_resources``:
    ``value`` = those rows, ``detail`` = ``intro`` then each resource with its ``noun`` count."""
    asking = frame.filter(pl.col("uncounted_resources").is_not_null()).select(
        CLUSTER, pl.col("uncounted_resources").str.split(",").alias("_res")
    )
    per_resource = (
        asking.explode("_res")
        .group_by(CLUSTER, "_res")
        .agg(pl.len().alias("_n"))
        .sort(CLUSTER, "_res", nulls_last=True)
        .group_by(CLUSTER, maintain_order=True)
        .agg(
            pl.format(
                "{} ({} {}{})",
                "_res",
                "_n",
                pl.lit(noun),
                pl.when(pl.col("_n") == 1).then(pl.lit("")).otherwise(pl.lit("s")),
            )
            .str.join(", ")
            .alias("_names")
        )
    )
    return (
        asking.group_by(CLUSTER)
        .agg(pl.len().cast(pl.Float64).alias("value"))
        .join(per_resource, on=CLUSTER, how="left", nulls_equal=True)
        .sort(CLUSTER, nulls_last=True)
        .select(
            CLUSTER,
            pl.lit(None, dtype=pl.Date()).alias("day"),
            pl.lit(None, dtype=pl.String()).alias("partition"),
            pl.lit(check).alias("check"),
            "value",
            pl.format("{}: {}", pl.lit(intro), "_names").alias("detail"),
        )
    )


def pods_ended_without_time(pods: pl.LazyFrame) -> pl.LazyFrame:
    """Kubernetes GPU pods that are over but whose object says nothing of when they ended.

    A pod in phase ``Succeeded``/``Failed`` with no end (``finished_at`` NULL: no container
    ``finishedAt``, no ``DisruptionTarget``/``Ready=False`` time), such as an evicted pod of an
    older kubelet (``reason: Evicted``, no container statuses) or one whose container reads
    ``ContainerStatusUnknown`` with null times. The build ends it at its last known time
    (METRICS.md "Kubernetes pods that are over without an end"), so its GPU-seconds after that
    are unknown, not counted.

    Args:
        pods: ``core.k8s_pods`` rows with ``cluster, phase, gpus, created_at, scheduled_at,
            started_at, finished_at``.

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'pods_ended_without_time'``, one per
        cluster and UTC day of the pod's last known time, ``value`` = the pods (GPU pods only).
    """
    last_known = pl.max_horizontal("created_at", "scheduled_at", "started_at")
    return (
        pods.filter(
            pl.col("finished_at").is_null()
            & pl.col("phase").is_in(["Succeeded", "Failed"]).fill_null(value=False)
            & (pl.col("gpus").fill_null(0.0) > 0)
        )
        .group_by(CLUSTER, last_known.dt.date().alias("day"))
        .agg(pl.len().cast(pl.Float64).alias("value"))
        .select(
            CLUSTER,
            "day",
            pl.lit(None, dtype=pl.String()).alias("partition"),
            pl.lit("pods_ended_without_time").alias("check"),
            "value",
            pl.lit(
                "GPU pods over (Succeeded/Failed) with no container finish or end condition: "
                "ended at their last known time, their later GPU-seconds unknown"
            ).alias("detail"),
        )
    )


#: How many accounts (or namespaces) an ``unattributed_gpu_hours`` finding names, largest first.
UNATTRIBUTED_NAMED = 3


def unattributed_gpu_hours(
    jobs: pl.LazyFrame, *, unattributed: str, missing_registry: str | None = None
) -> pl.LazyFrame:
    """GPU-hours that count for no team: allocated time of attempts whose account or namespace
    the allocation registry does not map (team ``unattributed``), per cluster and UTC day.

    Fairness, shares and every per-team number leave such work out of every team (it stays in
    the fleet's totals), so a registry that misses an account, or no registry at all, changes
    the split between teams without a word; this finding says it.

    Each attempt's allocated time up to the cluster's cut-off, [``start_at``, min(``end_at``,
    ``as_of``)) as the hourly occupancy counts it (a running attempt, ``end_at`` NULL, up to
    ``as_of``), is split at UTC midnights: ``gpus`` × the seconds of it in each day.

    Args:
        jobs: ``jobs`` rows with ``cluster, team, account, gpus, start_at, end_at, as_of``
            (the slurmd pods of a Slurm cluster run on Kubernetes left out: their GPUs are the
            Slurm cluster's capacity, not a team's work).
        unattributed: the team value of unmapped work
            (:data:`pipelines.core.registry.UNATTRIBUTED`).
        missing_registry: the registry file's base name when there is no such file (every
            account is then unattributed, and the detail says so).

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows with ``check = 'unattributed_gpu_hours'``, one per
        cluster and UTC day with unattributed GPU-seconds > 0, no partition, ``value`` = those
        GPU-seconds ÷ 3600 (GPU-hours), ``detail`` = why: the registry file is missing, or the
        :data:`UNATTRIBUTED_NAMED` accounts with most of the day's GPU-hours (``account
        12.0 h``, ties by name) and how many more.
    """
    # min_horizontal skips NULLs: the end, else the cut-off, and never past the cut-off
    end = pl.min_horizontal(pl.col(END_AT), pl.col("as_of"))
    spans = (
        jobs.filter((pl.col(TEAM) == unattributed) & (pl.col(GPUS) > 0))
        .select(CLUSTER, "account", GPUS, pl.col(START_AT).alias("_s"), end.alias("_e"))
        .filter(pl.col("_s").is_not_null() & pl.col("_e").is_not_null())
        .filter(pl.col("_e") > pl.col("_s"))
        .with_columns(
            pl.date_ranges(
                pl.col("_s").dt.date(), (pl.col("_e") - pl.duration(microseconds=1)).dt.date()
            ).alias("day")
        )
        .explode("day")
    )
    midnight = pl.col("day").cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    seconds = seconds_between(
        pl.min_horizontal(pl.col("_e"), midnight + pl.duration(days=1)),
        pl.max_horizontal(pl.col("_s"), midnight),
    )
    per_account = (
        spans.with_columns((pl.col(GPUS) * seconds).alias("_gpu_s"))
        .group_by(CLUSTER, "day", "account")
        .agg((pl.col("_gpu_s").sum() / 3600.0).alias("gpu_h"))
    )
    per_day = (
        per_account.sort("gpu_h", "account", descending=[True, False], nulls_last=True)
        .group_by(CLUSTER, "day")
        .agg(
            pl.col("gpu_h").sum().alias("value"),
            pl.format("{} {} h", pl.col("account").fill_null("(none)"), pl.col("gpu_h").round(1))
            .head(UNATTRIBUTED_NAMED)
            .str.join(", ")
            .alias("_top"),
            (pl.len().cast(pl.Int64) - UNATTRIBUTED_NAMED).alias("_more"),
        )
    )
    if missing_registry is not None:
        detail = pl.lit(
            f"no allocation registry ({missing_registry} not found): no GPU-hour counts for a team"
        )
    else:
        detail = pl.format("not in the allocation registry: {}", pl.col("_top")) + pl.when(
            pl.col("_more") > 0
        ).then(pl.format(" and {} more", pl.col("_more"))).otherwise(pl.lit(""))
    return per_day.select(
        CLUSTER,
        "day",
        pl.lit(None, dtype=pl.String()).alias(PARTITION),
        pl.lit("unattributed_gpu_hours").alias("check"),
        "value",
        detail.alias("detail"),
    )


#: How many host names a ``dcgm_hosts_*`` finding names, first by name.
HOSTS_NAMED = 5


def dcgm_hosts_without_node(hosts: pl.LazyFrame, nodes: pl.LazyFrame) -> pl.LazyFrame:
    """DCGM hosts that are no node of their cluster (:func:`metrics.hosts.host_matches`).

    Their samples reach no job through the GPU map or the whole node, and their XIDs decide no
    failed attempt and count on a node the cluster does not have; this finding says so.

    Args:
        hosts: ``cluster, host``: the DCGM samples' hosts (the exporter's own pod names, which
            the pods' lives place, left out).
        nodes: ``cluster, host`` of the nodes (``core.nodes``).

    Returns:
        :data:`DATA_QUALITY_SCHEMA` rows, per cluster with such hosts, no day, no partition:
        ``check = 'dcgm_hosts_without_node'``, ``value`` = the hosts that match no node by
        name or by short name; ``check = 'dcgm_hosts_ambiguous'``, ``value`` = the hosts
        whose short name names more than one node (left unmatched). ``detail``: the first
        :data:`HOSTS_NAMED` host names and how many more.
    """
    named = pl.col("host").sort().head(HOSTS_NAMED).str.join(", ")
    more = pl.len().cast(pl.Int64) - HOSTS_NAMED
    parts = []
    for match, check, what in (
        ("none", "dcgm_hosts_without_node", "DCGM hosts that match no node"),
        ("ambiguous", "dcgm_hosts_ambiguous", "DCGM hosts whose short name names several nodes"),
    ):
        parts.append(
            host_matches(hosts, nodes)
            .filter(pl.col("match") == match)
            .group_by(CLUSTER)
            .agg(
                pl.len().cast(pl.Float64).alias("value"), named.alias("_named"), more.alias("_more")
            )
            .select(
                CLUSTER,
                pl.lit(None, dtype=pl.Date()).alias("day"),
                pl.lit(None, dtype=pl.String()).alias(PARTITION),
                pl.lit(check).alias("check"),
                "value",
                (
                    pl.format("{}: {}", pl.lit(what), pl.col("_named"))
                    + pl.when(pl.col("_more") > 0)
                    .then(pl.format(" and {} more", pl.col("_more")))
                    .otherwise(pl.lit(""))
                ).alias("detail"),
            )
        )
    return pl.concat(parts)
