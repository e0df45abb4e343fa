"""Slurm on Kubernetes: one owner per GPU-second (METRICS.md "Slurm on Kubernetes").

Pure polars, frames in and frames out. Three deployment patterns (``goodput.toml``,
``[[clusters]] slurm_on_k8s``) put the same GPU-second in both schedulers' records:

* **A** — slurmd runs in pods that request GPUs (SchedMD Slinky ``slurm-operator`` NodeSets).
  Kubernetes sees the slurmd pod hold N GPUs for its whole life, Slurm sees the jobs inside.
  Join keys: the pod label :data:`POD_HOSTNAME_LABEL` (the Slurm node name; slurm-operator
  ``internal/controller/nodeset/utils``, label ``LabelNodeSetPodHostname``) and the Slurm node
  ``Comment`` the operator writes, the JSON of ``podinfo.PodInfo``
  ``{"namespace","podName","node","nodeSetName","nodeSetUID"}`` (SlinkyProject/slurm-operator
  ``internal/utils/podinfo/podinfo.go``, written by ``UpdateNodeWithPodInfo`` in
  ``internal/controller/nodeset/slurmcontrol/slurmcontrol.go``). In StatefulSet mode a Slurm
  node name can move between machines (the operator then resets the node to IDLE: "Kubernetes
  node migration" in the same function), so the map is dated.
* **B** — Slurm owns the GPUs and Kubernetes pods get placeholder Slurm jobs (CoreWeave SUNK
  Pod Scheduler, docs.coreweave.com "Schedule Kubernetes Pods with SUNK": "it creates a
  placeholder Slurm job so that Slurm manages Node placement, GPU allocation, and resource
  tracking for the Pod"). The pod and the placeholder job are the same work.
* **C** — Kubernetes pods become Slurm external jobs (SlinkyProject/slurm-bridge): the pod
  label :data:`SLURM_JOBID_LABEL` (``internal/wellknown``, ``LabelExternalJobId``) and the job's
  ``AdminComment`` = ``{"pods":["ns/name",…]}`` (``internal/utils/externaljobinfo/
  externaljob.go``, ``ExternalJobInfo``).

Placeholder and external jobs are *mirrors*: they keep their wait (Slurm scheduled them) but
contribute zero allocated GPU-seconds; the pod carries the work. A job is a mirror when its
``AdminComment`` names pods (``{"pods": […]}``) or a pod of the partner Kubernetes cluster
carries its id in :data:`SLURM_JOBID_LABEL`. SUNK's placeholder jobs are recognised the same
way where its deployment labels the pod with the job id; CoreWeave's public documentation does
not name a label, so an unlabelled SUNK placeholder is not recognised (METRICS.md).

Functions: :func:`slurmd_pods`, :func:`slurm_node_map`, :func:`map_attempt_nodes`,
:func:`mirror_jobs`, :func:`slurm_on_k8s_hourly`, :func:`slurm_on_k8s_findings`,
:func:`double_count_rate`, :func:`attribute_slurmd_dcgm` (telemetry of slurmd pods),
:func:`slurmd_job_keys` and :func:`lend_capacity` (the lent GPUs in the fleet-wide tables),
:func:`rehome_slurmd_dcgm` (slurmd pods' telemetry moved to the Slurm node before attribution).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import polars as pl

from pipelines.core.k8s_labels import k8s_label

__all__ = [
    "HOURLY_SCHEMA",
    "LENT_CAPACITY_SOURCE",
    "NODE_MAP_SCHEMA",
    "PATTERNS",
    "POD_HOSTNAME_LABEL",
    "SLURMD_MAP_COLUMNS",
    "SLURM_JOBID_LABEL",
    "SlurmOnK8s",
    "attribute_slurmd_dcgm",
    "double_count_rate",
    "lend_capacity",
    "map_attempt_nodes",
    "mirror_jobs",
    "rehome_slurmd_dcgm",
    "sacct_notes",
    "slurm_node_gpus",
    "slurm_node_map",
    "slurm_on_k8s_findings",
    "slurm_on_k8s_hourly",
    "slurmd_job_keys",
    "slurmd_overlaps",
    "slurmd_pods",
]

#: The deployment patterns a cluster may declare (module docstring).
PATTERNS: Final = ("A", "B", "C")
#: Pod label carrying the Slurm node name of a slurmd pod (slurm-operator NodeSet pods).
POD_HOSTNAME_LABEL: Final = "nodeset.slinky.slurm.net/pod-hostname"
#: Pod label carrying the Slurm job id of a pod that Slurm scheduled (slurm-bridge).
SLURM_JOBID_LABEL: Final = "scheduler.slinky.slurm.net/slurm-jobid"
#: Pod label naming the NodeSet of a slurmd pod (slurm-operator ``LabelNodeSetName``).
_NODESET_LABELS: Final = ("app.kubernetes.io/instance", "nodeset.slinky.slurm.net/name")

_UTC = pl.Datetime("us", "UTC")
_HOUR = dt.timedelta(hours=1)
#: GPU-seconds below which a balance is exact (float noise of sums of products).
_EPS: Final = 1e-6

#: ``slurm_node_map``: one row per interval during which a Slurm node name ran in one pod on one
#: Kubernetes node. ``valid_to`` NULL = still so at the cut-off. ``source``: ``pod`` (the slurmd
#: pod's label and life) or ``comment`` (polled node ``Comment`` only: the pod was not ingested).
NODE_MAP_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "slurm_node": pl.String(),
    "valid_from": _UTC,
    "valid_to": _UTC,
    "namespace": pl.String(),
    "pod": pl.String(),
    "k8s_node": pl.String(),
    "nodeset": pl.String(),
    "gpus": pl.Float64(),
    "source": pl.String(),
}

#: ``slurm_on_k8s_hourly``: one row per Slurm-on-Kubernetes cluster, Kubernetes node and hour
#: (GPU-seconds). Kubernetes side: ``capacity = lent_to_slurm + k8s_native + k8s_idle``;
#: Slurm side: ``lent_to_slurm = slurm_allocated + slurm_idle``; ``slurmd_held_idle`` is the part
#: of ``slurm_idle`` during which Kubernetes pods pended for the node's GPU type.
HOURLY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "k8s_cluster": pl.String(),
    "pattern": pl.String(),
    "k8s_node": pl.String(),
    "hour": _UTC,
    "capacity_gpu_s": pl.Float64(),
    "lent_to_slurm_gpu_s": pl.Float64(),
    "k8s_native_gpu_s": pl.Float64(),
    "k8s_idle_gpu_s": pl.Float64(),
    "slurm_allocated_gpu_s": pl.Float64(),
    "mirror_gpu_s": pl.Float64(),
    "slurm_idle_gpu_s": pl.Float64(),
    "slurmd_held_idle_gpu_s": pl.Float64(),
    "naive_slurm_gpu_s": pl.Float64(),
    "naive_k8s_gpu_s": pl.Float64(),
    "naive_gpu_s": pl.Float64(),
    "reconciled_gpu_s": pl.Float64(),
    "double_count_rate": pl.Float64(),
}


@dataclass(frozen=True)
class SlurmOnK8s:
    """One Slurm cluster run on Kubernetes (``goodput.toml``).

    Attributes:
        cluster: the Slurm cluster's name (its sacct rows and node comments carry it).
        k8s_cluster: the Kubernetes cluster its pods and nodes are ingested as.
        pattern: ``A``, ``B`` or ``C`` (module docstring).
    """

    cluster: str
    k8s_cluster: str
    pattern: str


def _pod_span(as_of: dt.datetime) -> tuple[pl.Expr, pl.Expr]:
    """A pod's running span: start (started, else scheduled) to end (finished, else deleted,
    else the cut-off)."""
    start = pl.coalesce("started_at", "scheduled_at")
    end = pl.coalesce("finished_at", "deleted_at", pl.lit(as_of, _UTC))
    return start, end


def slurmd_pods(pods: pl.DataFrame, k8s_cluster: str, as_of: dt.datetime) -> pl.DataFrame:
    """The slurmd pods of a Kubernetes cluster: pods labelled :data:`POD_HOSTNAME_LABEL`.

    Args:
        pods: ``core.k8s_pods`` rows (``cluster, namespace, name, node_name, gpus, labels``
            and the pod times).
        k8s_cluster: the Kubernetes cluster.
        as_of: the cut-off an open pod runs to.

    A Slurm node name runs in one slurmd pod at a time (slurm-operator names a NodeSet pod's
    Slurm node after its hostname, and a new pod of that name replaces the old one), so a pod
    still open, or ending later, when the next pod of the same Slurm node starts ended then:
    its ``end_at`` is cut to its successor's start (a pod that left the later snapshots without
    a recorded end, or a stale state); :func:`slurmd_overlaps` reports each such cut.

    Returns:
        ``namespace, pod, slurm_node, k8s_node, nodeset, gpus, start_at, end_at`` for pods that
        were scheduled on a node and ran (start before end), sorted by Slurm node and start.
    """
    spans = _slurmd_spans(pods, k8s_cluster, as_of)
    return (
        spans.with_columns(pl.min_horizontal("end_at", "_next").alias("end_at"))
        .filter(pl.col("start_at") < pl.col("end_at"))
        .drop("_next")
    )


def _slurmd_spans(pods: pl.DataFrame, k8s_cluster: str, as_of: dt.datetime) -> pl.DataFrame:
    """The slurmd pods' own spans (:func:`slurmd_pods` before the cut), ``end_at`` at most
    ``as_of``, with ``_next``: the start of the next pod of the same Slurm node (NULL for the
    last)."""
    start, end = _pod_span(as_of)
    cut = pl.lit(as_of, _UTC)
    return (
        pods.filter(
            (pl.col("cluster") == k8s_cluster) & k8s_label(POD_HOSTNAME_LABEL).is_not_null()
        )
        .select(
            "namespace",
            pl.col("name").alias("pod"),
            k8s_label(POD_HOSTNAME_LABEL).alias("slurm_node"),
            pl.col("node_name").alias("k8s_node"),
            pl.coalesce([k8s_label(k) for k in _NODESET_LABELS]).alias("nodeset"),
            pl.col("gpus").fill_null(0.0),
            start.alias("start_at"),
            pl.min_horizontal(end, cut).alias("end_at"),
        )
        .filter(
            pl.col("k8s_node").is_not_null()
            & pl.col("start_at").is_not_null()
            & (pl.col("start_at") < pl.col("end_at"))
        )
        .sort("slurm_node", "start_at", "end_at", "namespace", "pod")
        .with_columns(pl.col("start_at").shift(-1).over("slurm_node").alias("_next"))
    )


def slurmd_overlaps(
    pods: pl.DataFrame, k8s_cluster: str, cluster: str, as_of: dt.datetime
) -> pl.DataFrame:
    """The finding ``sok_node_overlap``: a slurmd pod whose span runs past the start of the
    next pod of the same Slurm node (two pods recorded as running one Slurm node at once);
    :func:`slurmd_pods` ends it at its successor's start, and the finding says how much was cut.

    Args:
        pods: ``core.k8s_pods`` rows.
        k8s_cluster: the Kubernetes cluster the slurmd pods run in.
        cluster: the Slurm cluster.
        as_of: the cut-off an open pod runs to.

    Returns:
        ``data_quality`` rows (``cluster, day, partition, check, value, detail``; value: the
        pod's GPU-seconds cut, GPUs × seconds), one per cut pod, day of the successor's start.
    """
    spans = _slurmd_spans(pods, k8s_cluster, as_of).filter(
        pl.col("_next").is_not_null() & (pl.col("end_at") > pl.col("_next"))
    )
    return spans.select(
        pl.lit(cluster).alias("cluster"),
        pl.col("_next").dt.date().alias("day"),
        pl.lit(None, pl.String).alias("partition"),
        pl.lit("sok_node_overlap").alias("check"),
        (
            (pl.col("end_at") - pl.max_horizontal("_next", "start_at")).dt.total_microseconds()
            / 1e6
            * pl.col("gpus")
        ).alias("value"),
        pl.format(
            "Slurm node {}: pod {}/{} still held {} GPUs when the next pod of the node started"
            " at {}; ended then",
            "slurm_node",
            "namespace",
            "pod",
            "gpus",
            pl.col("_next").dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
        ).alias("detail"),
    )


def slurm_node_map(
    slurmd: pl.DataFrame, comments: pl.DataFrame, cluster: str, as_of: dt.datetime
) -> pl.DataFrame:
    """The dated map Slurm node name → pod and Kubernetes node.

    Every slurmd pod gives one interval, its running span (``valid_to`` NULL while it runs at
    the cut-off). A polled node ``Comment`` naming a pod that was not ingested gives an interval
    from that poll to the next poll of the same Slurm node that names another pod (else open):
    the comment is what slurm-operator last wrote, so it holds until it changes. Its ``gpus``
    are the node's GPU GRES as the polls give it (``comments.gpus``, the last known in the
    interval; NULL when no poll gave it).

    Args:
        slurmd: :func:`slurmd_pods` of the partner Kubernetes cluster.
        comments: ``raw.slurm_node_comments`` rows (``cluster, slurm_node, polled_at,
            namespace, pod, k8s_node, nodeset``, optionally ``gpus``: the GPUs of the node's
            ``Gres=``).
        cluster: the Slurm cluster.
        as_of: the cut-off (pods still running then get ``valid_to`` NULL).

    Returns:
        Rows of :data:`NODE_MAP_SCHEMA`, sorted by Slurm node and ``valid_from``.
    """
    from_pods = slurmd.select(
        pl.lit(cluster).alias("cluster"),
        "slurm_node",
        pl.col("start_at").alias("valid_from"),
        pl.when(pl.col("end_at") < pl.lit(as_of, _UTC)).then("end_at").alias("valid_to"),
        "namespace",
        "pod",
        "k8s_node",
        "nodeset",
        "gpus",
        pl.lit("pod").alias("source"),
    )
    polled = comments.filter((pl.col("cluster") == cluster) & pl.col("pod").is_not_null())
    if "gpus" not in polled.columns:
        polled = polled.with_columns(pl.lit(None, pl.Float64).alias("gpus"))
    known = slurmd.select("namespace", "pod").unique()
    from_comments = (
        polled.sort("slurm_node", "polled_at")
        .with_columns(
            (
                pl.struct("namespace", "pod", "k8s_node")
                != pl.struct("namespace", "pod", "k8s_node").shift(1).over("slurm_node")
            )
            .fill_null(True)
            .alias("_new")
        )
        .with_columns(pl.col("_new").cum_sum().over("slurm_node").alias("_run"))
        .group_by("slurm_node", "_run", maintain_order=True)
        .agg(
            pl.col("polled_at").min().alias("valid_from"),
            pl.first("namespace", "pod", "k8s_node", "nodeset"),
            pl.col("gpus").drop_nulls().last(),
        )
        .sort("slurm_node", "valid_from")
        .with_columns(pl.col("valid_from").shift(-1).over("slurm_node").alias("valid_to"))
        .join(known, on=["namespace", "pod"], how="anti")
        .select(
            pl.lit(cluster).alias("cluster"),
            "slurm_node",
            "valid_from",
            "valid_to",
            "namespace",
            "pod",
            "k8s_node",
            "nodeset",
            pl.col("gpus").cast(pl.Float64),
            pl.lit("comment").alias("source"),
        )
    )
    # A Slurm node runs in one slurmd pod at a time: a comment's interval (a pod not ingested)
    # ends where the node's next interval of either source begins.
    following = (
        pl.col("valid_from").shift(-1).over("slurm_node", order_by=["valid_from", "_pod_first"])
    )
    return (
        pl.concat([from_pods, from_comments])
        .cast(NODE_MAP_SCHEMA)  # type: ignore[arg-type]
        .with_columns((pl.col("source") != "pod").alias("_pod_first"))
        .with_columns(
            pl.when((pl.col("source") == "comment") & following.is_not_null())
            .then(pl.min_horizontal(pl.col("valid_to").fill_null(following), following))
            .otherwise(pl.col("valid_to"))
            .alias("valid_to")
        )
        .drop("_pod_first")
        .filter(pl.col("valid_to").is_null() | (pl.col("valid_to") > pl.col("valid_from")))
        .sort("slurm_node", "valid_from")
    )


def _admin_pods() -> pl.Expr:
    """The ``pods`` list of a job's ``AdminComment`` JSON (slurm-bridge ``ExternalJobInfo``);
    NULL for a comment that is not such JSON (an administrator's free text never fails the
    build)."""
    return (
        pl.col("admin_comment")
        .str.json_path_match("$.pods")
        .str.extract_all(r'"[^"]*"')
        .list.eval(pl.element().str.strip_chars('"'))
    )


def mirror_jobs(attempts: pl.DataFrame, pods: pl.DataFrame, k8s_cluster: str) -> pl.DataFrame:
    """Slurm jobs that mirror Kubernetes pods (placeholder or external jobs).

    A job is a mirror when its ``AdminComment`` is ``{"pods": [...]}`` with at least one pod,
    or a pod of ``k8s_cluster`` carries its id in :data:`SLURM_JOBID_LABEL`.

    Args:
        attempts: Slurm attempts (``job_id`` and ``admin_comment``; a NULL or non-JSON comment
            is no mirror by itself).
        pods: ``core.k8s_pods`` rows (``cluster, namespace, name, labels``).
        k8s_cluster: the partner Kubernetes cluster.

    Returns:
        ``job_id, pods_named, pods_found``: one row per mirror job; ``pods_named`` the pods its
        comment or the labels name (``namespace/name``), ``pods_found`` how many of them were
        ingested.
    """
    k8s = pods.filter(pl.col("cluster") == k8s_cluster).select(
        pl.format("{}/{}", "namespace", "name").alias("pod_ref"),
        k8s_label(SLURM_JOBID_LABEL).alias("job_id"),
    )
    named = (
        attempts.filter(pl.col("admin_comment").str.starts_with("{"))
        .select("job_id", _admin_pods().alias("pod_ref"))
        .explode("pod_ref")
        .drop_nulls("pod_ref")
    )
    labelled = k8s.drop_nulls("job_id").select("job_id", "pod_ref")
    ids = attempts.select("job_id").unique()
    refs = pl.concat([named, labelled.join(ids, on="job_id", how="semi")]).unique()
    found = k8s.select("pod_ref").unique().with_columns(pl.lit(True).alias("_found"))
    return (
        refs.join(found, on="pod_ref", how="left")
        .group_by("job_id")
        .agg(
            pl.col("pod_ref").sort().alias("pods_named"),
            pl.col("_found").fill_null(False).sum().cast(pl.Int64).alias("pods_found"),
        )
        .sort("job_id")
    )


def map_attempt_nodes(attempts: pl.DataFrame, node_map: pl.DataFrame) -> pl.DataFrame:
    """Each Slurm attempt's nodes mapped through the dated map at their time.

    An attempt on ``n`` nodes holds ``gpus / n`` GPUs on each, except where the map knows
    every node's GPUs (``gpus`` of the intervals during the attempt, their most): then each node
    holds ``gpus × its GPUs ÷ Σ the nodes' GPUs`` (sacct gives no per-node split; a job over a
    4-GPU and an 8-GPU slurmd pod holding 12 holds 4 and 8). Each (attempt, Slurm node) is
    cut at the map's interval bounds: one row per piece that a map interval covers, and one row
    with ``k8s_node`` NULL per part no interval covers.

    Args:
        attempts: started Slurm attempts (``job_id, attempt, gpus, start_at, end_at,
            node_list``; ``end_at`` already closed at the cut-off).
        node_map: :func:`slurm_node_map` rows of the same cluster (``valid_to`` NULL = open).

    Returns:
        ``job_id, attempt, slurm_node, k8s_node, pod, gpus_per_node, start_at, end_at``
        (the piece), sorted.
    """
    nodes = (
        attempts.filter(pl.col("start_at") < pl.col("end_at"))
        .with_columns(
            (pl.col("gpus").fill_null(0.0) / pl.col("node_list").list.len().clip(1)).alias(
                "gpus_per_node"
            )
        )
        .explode("node_list")
        .rename({"node_list": "slurm_node"})
        .drop_nulls("slurm_node")
        .select(
            "job_id",
            "attempt",
            "slurm_node",
            "gpus_per_node",
            "start_at",
            "end_at",
            pl.col("gpus").fill_null(0.0).alias("_gpus"),
        )
    )
    far = pl.lit(dt.datetime(9999, 1, 1, tzinfo=dt.UTC), _UTC)
    # Nodes of different sizes: the attempt's GPUs split in proportion to each node's GPUs
    # (the most any map interval during the attempt knows), where every node's are known.
    keys = ["job_id", "attempt"]
    sizes = (
        nodes.join(node_map.select("slurm_node", "valid_from", "valid_to", "gpus"), on="slurm_node")
        .filter(
            (pl.col("valid_from") < pl.col("end_at"))
            & (pl.coalesce("valid_to", far) > pl.col("start_at"))
            & (pl.col("gpus").fill_null(0.0) > 0)
        )
        .group_by(*keys, "slurm_node")
        .agg(pl.col("gpus").max().alias("_w"))
    )
    known = pl.col("_w").is_not_null().all().over(keys)
    nodes = (
        nodes.join(sizes, on=[*keys, "slurm_node"], how="left")
        .with_columns(
            pl.when(known)
            .then(pl.col("_gpus") * pl.col("_w") / pl.col("_w").sum().over(keys))
            .otherwise(pl.col("gpus_per_node"))
            .alias("gpus_per_node")
        )
        .drop("_gpus", "_w")
    )
    mapped = (
        nodes.join(
            node_map.select("slurm_node", "valid_from", "valid_to", "k8s_node", "pod"),
            on="slurm_node",
        )
        .with_columns(
            pl.max_horizontal("start_at", "valid_from").alias("_s"),
            pl.min_horizontal("end_at", pl.coalesce("valid_to", far)).alias("_e"),
        )
        .filter(pl.col("_s") < pl.col("_e"))
        .select(
            "job_id",
            "attempt",
            "slurm_node",
            "k8s_node",
            "pod",
            "gpus_per_node",
            pl.col("_s").alias("start_at"),
            pl.col("_e").alias("end_at"),
        )
    )
    covered = mapped.group_by("job_id", "attempt", "slurm_node").agg(
        (pl.col("end_at") - pl.col("start_at")).dt.total_microseconds().sum().alias("_c")
    )
    gaps = (
        nodes.join(covered, on=["job_id", "attempt", "slurm_node"], how="left")
        .filter(
            pl.col("_c").fill_null(0)
            < (pl.col("end_at") - pl.col("start_at")).dt.total_microseconds()
        )
        .select(
            "job_id",
            "attempt",
            "slurm_node",
            pl.lit(None, pl.String).alias("k8s_node"),
            pl.lit(None, pl.String).alias("pod"),
            "gpus_per_node",
            "start_at",
            "end_at",
            "_c",
        )
    )
    # An uncovered part is reported whole-attempt long with its uncovered seconds carried as
    # GPU-seconds below; its time is not placed on any Kubernetes node.
    gaps = gaps.with_columns(
        (
            pl.col("start_at")
            + pl.duration(
                microseconds=(pl.col("end_at") - pl.col("start_at")).dt.total_microseconds()
                - pl.col("_c").fill_null(0)
            )
        ).alias("end_at")
    ).drop("_c")
    return pl.concat([mapped, gaps]).sort("job_id", "attempt", "slurm_node", "start_at")


def _by_hour(frame: pl.DataFrame, keys: Sequence[str], weight: str, out: str) -> pl.DataFrame:
    """Sum ``weight`` × seconds of each ``[start_at, end_at)`` interval per hour and ``keys``."""
    if frame.is_empty():
        schema = {k: frame.schema[k] for k in keys}
        return pl.DataFrame(schema={**schema, "hour": _UTC, out: pl.Float64()})
    return (
        frame.filter(pl.col("start_at") < pl.col("end_at"))
        .with_columns(
            pl.datetime_ranges(
                pl.col("start_at").dt.truncate("1h"),
                (pl.col("end_at") - pl.duration(microseconds=1)).dt.truncate("1h"),
                "1h",
            ).alias("hour")
        )
        .explode("hour")
        .with_columns(
            (
                (
                    pl.min_horizontal("end_at", pl.col("hour") + _HOUR)
                    - pl.max_horizontal("start_at", "hour")
                ).dt.total_microseconds()
                / 1e6
                * pl.col(weight)
            ).alias(out)
        )
        .group_by(*keys, "hour")
        .agg(pl.col(out).sum())
    )


def _pending_spans(pods: pl.DataFrame, k8s_cluster: str, as_of: dt.datetime) -> pl.DataFrame:
    """GPU pods of ``k8s_cluster`` while pending: created → scheduled (else finished, deleted,
    cut-off); ``gpu_type`` from the pod's ``nvidia.com/gpu.product`` node-selector label when
    it carries one, else NULL (any type)."""
    end = pl.coalesce("scheduled_at", "finished_at", "deleted_at", pl.lit(as_of, _UTC))
    return (
        pods.filter(
            (pl.col("cluster") == k8s_cluster)
            & (pl.col("gpus").fill_null(0.0) > 0)
            & k8s_label(POD_HOSTNAME_LABEL).is_null()
        )
        .select(
            pl.col("created_at").alias("start_at"),
            end.alias("end_at"),
            k8s_label("nvidia.com/gpu.product").alias("gpu_type"),
        )
        .filter(pl.col("start_at") < pl.col("end_at"))
    )


def _held_idle(
    holds: pl.DataFrame, alloc: pl.DataFrame, pending: pl.DataFrame, node_types: pl.DataFrame
) -> pl.DataFrame:
    """Slurm idle GPU-seconds during which a pod pended for the node's GPU type, per node-hour.

    Cuts each Kubernetes node's time at every bound of its holds, its Slurm allocations, the
    pending spans and the hours; on each piece idle = lent − allocated (≥ 0) while some pod of
    the node's GPU type (or of no stated type) pends."""
    if holds.is_empty():
        return pl.DataFrame(
            schema={"k8s_node": pl.String(), "hour": _UTC, "slurmd_held_idle_gpu_s": pl.Float64()}
        )
    typed = pending.join(node_types, how="cross").filter(
        pl.col("gpu_type").is_null()
        | pl.col("node_gpu_type").is_null()
        | (pl.col("gpu_type") == pl.col("node_gpu_type"))
    )
    bounds = pl.concat(
        [
            holds.select("k8s_node", pl.col("start_at").alias("t")),
            holds.select("k8s_node", pl.col("end_at").alias("t")),
            alloc.select("k8s_node", pl.col("start_at").alias("t")),
            alloc.select("k8s_node", pl.col("end_at").alias("t")),
            typed.select("k8s_node", pl.col("start_at").alias("t")),
            typed.select("k8s_node", pl.col("end_at").alias("t")),
            holds.select(
                "k8s_node",
                pl.datetime_ranges(
                    pl.col("start_at").dt.truncate("1h"), pl.col("end_at"), "1h"
                ).alias("t"),
            ).explode("t"),
        ]
    )
    span = holds.group_by("k8s_node").agg(
        pl.col("start_at").min().alias("_lo"), pl.col("end_at").max().alias("_hi")
    )
    pieces = (
        bounds.unique()
        .join(span, on="k8s_node")
        .filter((pl.col("t") >= pl.col("_lo")) & (pl.col("t") <= pl.col("_hi")))
        .sort("k8s_node", "t")
        .select(
            "k8s_node",
            pl.col("t").alias("p_s"),
            pl.col("t").shift(-1).over("k8s_node").alias("p_e"),
        )
        .filter(pl.col("p_e").is_not_null() & (pl.col("p_s") < pl.col("p_e")))
        .with_row_index("_piece")
    )

    def covering(frame: pl.DataFrame, value: pl.Expr, name: str) -> pl.DataFrame:
        return (
            pieces.join(frame, on="k8s_node")
            .filter((pl.col("start_at") <= pl.col("p_s")) & (pl.col("end_at") >= pl.col("p_e")))
            .group_by("_piece")
            .agg(value.alias(name))
        )

    lent = covering(holds, pl.col("gpus").sum(), "_lent")
    used = covering(alloc, pl.col("gpus_per_node").sum(), "_alloc")
    pend = covering(typed, pl.len() > 0, "_pend")
    return (
        pieces.join(lent, on="_piece", how="left")
        .join(used, on="_piece", how="left")
        .join(pend, on="_piece", how="left")
        .filter(pl.col("_pend").fill_null(False))
        .select(
            "k8s_node",
            pl.col("p_s").dt.truncate("1h").alias("hour"),
            (
                (pl.col("_lent").fill_null(0.0) - pl.col("_alloc").fill_null(0.0)).clip(0.0)
                * (pl.col("p_e") - pl.col("p_s")).dt.total_microseconds()
                / 1e6
            ).alias("slurmd_held_idle_gpu_s"),
        )
        .group_by("k8s_node", "hour")
        .agg(pl.col("slurmd_held_idle_gpu_s").sum())
    )


def double_count_rate(naive: pl.Expr, reconciled: pl.Expr) -> pl.Expr:
    """(naive − reconciled) ÷ reconciled, NULL where reconciled is 0 (METRICS.md)."""
    return pl.when(reconciled != 0).then((naive - reconciled) / reconciled)


def slurm_on_k8s_hourly(
    setting: SlurmOnK8s,
    attempts: pl.DataFrame,
    pods: pl.DataFrame,
    comments: pl.DataFrame,
    k8s_nodes: pl.DataFrame,
    as_of: dt.datetime,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Layer ownership per Kubernetes node and hour for one Slurm-on-Kubernetes cluster.

    Kubernetes side: slurmd pods' GPUs are *lent to Slurm*; the other pods (mirrored pods
    included: they carry the work) are ``k8s_native``; the rest of the node's capacity is
    ``k8s_idle``. Slurm side: the lent GPUs are Slurm's capacity; Slurm jobs mapped onto the node
    through :func:`slurm_node_map` at their time are ``slurm_allocated`` (mirror jobs excluded:
    their GPU-seconds are ``mirror_gpu_s`` and count nowhere); the rest is ``slurm_idle``
    (negative when Slurm allocated more than the pod holds: a GRES mismatch).

    Args:
        setting: the cluster's pattern and partner.
        attempts: the cluster's started Slurm attempts (``job_id, attempt, gpus, start_at,
            end_at, node_list, admin_comment``; ``end_at`` NULL = running at ``as_of``).
        pods: ``core.k8s_pods`` rows (every cluster; the partner's are used).
        comments: ``raw.slurm_node_comments`` rows.
        k8s_nodes: ``cluster, host, gpus, gpu_type`` (the inventory; capacity per node).
        as_of: the cut-off.

    Returns:
        ``(hourly, node_map, pieces, mirrors)``: rows of :data:`HOURLY_SCHEMA`; the cluster's
        :data:`NODE_MAP_SCHEMA` rows; :func:`map_attempt_nodes` pieces with ``mirror``;
        :func:`mirror_jobs` rows.
    """
    c, k = setting.cluster, setting.k8s_cluster
    cut = pl.lit(as_of, _UTC)
    att = attempts.with_columns(
        pl.min_horizontal(pl.coalesce("end_at", cut), cut).alias("end_at")
    ).filter(pl.col("start_at").is_not_null())
    slurmd = slurmd_pods(pods, k, as_of)
    node_map = slurm_node_map(slurmd, comments, c, as_of)
    mirrors = mirror_jobs(att, pods, k)
    pieces = (
        map_attempt_nodes(att, node_map)
        .join(mirrors.select("job_id", pl.lit(True).alias("mirror")), on="job_id", how="left")
        .with_columns(pl.col("mirror").fill_null(False))
    )
    on_node = pieces.filter(pl.col("k8s_node").is_not_null())
    start, end = _pod_span(as_of)
    k8s_pods = (
        pods.filter(pl.col("cluster") == k)
        .with_columns(
            start.alias("start_at"),
            pl.min_horizontal(end, cut).alias("end_at"),
            k8s_label(POD_HOSTNAME_LABEL).is_not_null().alias("slurmd"),
            pl.col("gpus").fill_null(0.0),
        )
        .filter(pl.col("node_name").is_not_null() & (pl.col("gpus") > 0))
        .rename({"node_name": "k8s_node"})
    )
    # A Slurm node known only from its polled comment lends its GRES GPUs while the comment
    # holds (its slurmd pod was not ingested; without the GRES nothing is known to be lent).
    holds = pl.concat(
        [
            slurmd.select("k8s_node", "gpus", "start_at", "end_at"),
            node_map.filter(
                (pl.col("source") == "comment") & (pl.col("gpus").fill_null(0.0) > 0)
            ).select(
                "k8s_node",
                "gpus",
                pl.col("valid_from").alias("start_at"),
                pl.min_horizontal(pl.coalesce("valid_to", cut), cut).alias("end_at"),
            ),
        ]
    ).filter(pl.col("start_at") < pl.col("end_at"))
    lent = _by_hour(holds, ["k8s_node"], "gpus", "lent_to_slurm_gpu_s")
    native = _by_hour(k8s_pods.filter(~pl.col("slurmd")), ["k8s_node"], "gpus", "k8s_native_gpu_s")
    alloc = _by_hour(
        on_node.filter(~pl.col("mirror")), ["k8s_node"], "gpus_per_node", "slurm_allocated_gpu_s"
    )
    mirror = _by_hour(on_node.filter("mirror"), ["k8s_node"], "gpus_per_node", "mirror_gpu_s")
    # A mirror job's pieces that map onto no node still count in the naive Slurm sum.
    naive_slurm_all = _by_hour(pieces, ["k8s_node"], "gpus_per_node", "naive_slurm_gpu_s")
    capacity = k8s_nodes.filter(pl.col("cluster") == k).select(
        pl.col("host").alias("k8s_node"),
        pl.col("gpus").alias("_node_gpus"),
        pl.col("gpu_type").alias("node_gpu_type"),
    )
    held_nodes = holds.select("k8s_node").unique()
    node_types = held_nodes.join(capacity, on="k8s_node", how="left").select(
        "k8s_node", "node_gpu_type"
    )
    held = _held_idle(
        holds,
        on_node.filter(~pl.col("mirror")).select("k8s_node", "gpus_per_node", "start_at", "end_at"),
        _pending_spans(pods, k, as_of),
        node_types,
    )
    keys = (
        pl.concat([f.select("k8s_node", "hour") for f in (lent, native, alloc, mirror)])
        .unique()
        .join(held_nodes, on="k8s_node", how="semi")
    )
    z = 0.0
    hourly = (
        keys.join(lent, on=["k8s_node", "hour"], how="left")
        .join(native, on=["k8s_node", "hour"], how="left")
        .join(alloc, on=["k8s_node", "hour"], how="left")
        .join(mirror, on=["k8s_node", "hour"], how="left")
        .join(naive_slurm_all, on=["k8s_node", "hour"], how="left")
        .join(held, on=["k8s_node", "hour"], how="left")
        .join(capacity, on="k8s_node", how="left")
        .with_columns(
            pl.col(
                "lent_to_slurm_gpu_s",
                "k8s_native_gpu_s",
                "slurm_allocated_gpu_s",
                "mirror_gpu_s",
                "naive_slurm_gpu_s",
                "slurmd_held_idle_gpu_s",
            ).fill_null(z),
            (pl.col("_node_gpus") * 3600.0).alias("capacity_gpu_s"),
        )
        .with_columns(
            (
                pl.col("capacity_gpu_s")
                - pl.col("lent_to_slurm_gpu_s")
                - pl.col("k8s_native_gpu_s")
            ).alias("k8s_idle_gpu_s"),
            (pl.col("lent_to_slurm_gpu_s") - pl.col("slurm_allocated_gpu_s")).alias(
                "slurm_idle_gpu_s"
            ),
            (pl.col("lent_to_slurm_gpu_s") + pl.col("k8s_native_gpu_s")).alias("naive_k8s_gpu_s"),
            (pl.col("k8s_native_gpu_s") + pl.col("slurm_allocated_gpu_s")).alias(
                "reconciled_gpu_s"
            ),
        )
        .with_columns(
            (pl.col("naive_slurm_gpu_s") + pl.col("naive_k8s_gpu_s")).alias("naive_gpu_s"),
        )
        .with_columns(
            double_count_rate(pl.col("naive_gpu_s"), pl.col("reconciled_gpu_s")).alias(
                "double_count_rate"
            ),
            pl.lit(c).alias("cluster"),
            pl.lit(k).alias("k8s_cluster"),
            pl.lit(setting.pattern).alias("pattern"),
        )
        .select(list(HOURLY_SCHEMA))
        .cast(HOURLY_SCHEMA)  # type: ignore[arg-type]
        .sort("k8s_node", "hour")
    )
    return hourly, node_map, pieces, mirrors


def slurm_on_k8s_findings(
    cluster: str,
    hourly: pl.DataFrame,
    pieces: pl.DataFrame,
    mirrors: pl.DataFrame,
) -> pl.DataFrame:
    """The data-quality findings of one Slurm-on-Kubernetes cluster (``data_quality`` rows).

    Checks (METRICS.md):

    - ``sok_gres_mismatch``: a node-hour where Slurm allocated more GPU-seconds than the slurmd
      pod held (value: the excess GPU-seconds);
    - ``sok_job_without_pod``: a Slurm attempt on a node that no pod held at that time (value:
      its unmapped GPU-seconds);
    - ``sok_node_migration``: an attempt whose Slurm node ran on two or more Kubernetes nodes
      during it (value: the number of Kubernetes nodes);
    - ``sok_mirror_without_pod``: a mirror job naming a pod that was not ingested (value: the
      number of pods missing);
    - ``sok_layer_imbalance``: a node-hour whose Kubernetes-side leaves do not sum to its
      capacity (lent + native > capacity; value: the excess).

    Args:
        cluster: the Slurm cluster.
        hourly: its :func:`slurm_on_k8s_hourly` rows.
        pieces: its mapped attempt pieces (with ``mirror``).
        mirrors: its :func:`mirror_jobs` rows.

    Returns:
        Rows of ``cluster, day, partition, check, value, detail`` (partition NULL).
    """
    day = pl.col("hour").dt.date().alias("day")
    gres = hourly.filter(pl.col("slurm_idle_gpu_s") < -_EPS).select(
        day,
        pl.lit("sok_gres_mismatch").alias("check"),
        (-pl.col("slurm_idle_gpu_s")).alias("value"),
        pl.format(
            "{} {}: Slurm allocated {} GPU-s above what its slurmd pod held",
            "k8s_node",
            pl.col("hour").dt.strftime("%Y-%m-%dT%H:00Z"),
            (-pl.col("slurm_idle_gpu_s")).round(1),
        ).alias("detail"),
    )
    over = hourly.filter(
        pl.col("capacity_gpu_s").is_not_null() & (pl.col("k8s_idle_gpu_s") < -_EPS)
    ).select(
        day,
        pl.lit("sok_layer_imbalance").alias("check"),
        (-pl.col("k8s_idle_gpu_s")).alias("value"),
        pl.format(
            "{} {}: pods hold more GPU-s than the node has",
            "k8s_node",
            pl.col("hour").dt.strftime("%Y-%m-%dT%H:00Z"),
        ).alias("detail"),
    )
    orphan = (
        pieces.filter(pl.col("k8s_node").is_null() & ~pl.col("mirror"))
        .group_by("job_id", "attempt", "slurm_node")
        .agg(
            pl.col("start_at").min(),
            (
                (pl.col("end_at") - pl.col("start_at")).dt.total_microseconds()
                / 1e6
                * pl.col("gpus_per_node")
            )
            .sum()
            .alias("value"),
        )
        .select(
            pl.col("start_at").dt.date().alias("day"),
            pl.lit("sok_job_without_pod").alias("check"),
            "value",
            pl.format(
                "job {} attempt {} on {}: no slurmd pod held the node",
                "job_id",
                "attempt",
                "slurm_node",
            ).alias("detail"),
        )
    )
    moved = (
        pieces.drop_nulls("k8s_node")
        .group_by("job_id", "attempt", "slurm_node")
        .agg(
            pl.col("start_at").min(),
            pl.col("k8s_node").unique(maintain_order=True).alias("_k"),
        )
        .filter(pl.col("_k").list.len() > 1)
        .select(
            pl.col("start_at").dt.date().alias("day"),
            pl.lit("sok_node_migration").alias("check"),
            pl.col("_k").list.len().cast(pl.Float64).alias("value"),
            pl.format(
                "job {} attempt {}: Slurm node {} moved between Kubernetes nodes {}",
                "job_id",
                "attempt",
                "slurm_node",
                pl.col("_k").list.join(" → "),
            ).alias("detail"),
        )
    )
    missing = mirrors.filter(pl.col("pods_found") < pl.col("pods_named").list.len()).select(
        pl.lit(None, pl.Date).alias("day"),
        pl.lit("sok_mirror_without_pod").alias("check"),
        (pl.col("pods_named").list.len() - pl.col("pods_found")).cast(pl.Float64).alias("value"),
        pl.format(
            "mirror job {} names pods {} not all ingested",
            "job_id",
            pl.col("pods_named").list.join(","),
        ).alias("detail"),
    )
    schema = {"day": pl.Date(), "check": pl.String(), "value": pl.Float64(), "detail": pl.String()}
    parts = [p.cast(schema) for p in (gres, over, orphan, moved, missing)]  # type: ignore[arg-type]
    return (
        pl.concat(parts)
        .select(
            pl.lit(cluster).alias("cluster"),
            "day",
            pl.lit(None, pl.String).alias("partition"),
            "check",
            "value",
            "detail",
        )
        .sort("check", "day", "detail", nulls_last=True)
    )


def sacct_notes(extra: str = "extra") -> list[pl.Expr]:
    """``admin_comment`` and ``mcs_label`` of sacct rows, from the ``extra`` JSON the parser
    keeps fields without a column in (``AdminComment``/``MCSLabel`` as sacct's header spells
    them, or as a headerless file's ``--fields`` list does in lower case); NULL when absent."""

    def field(*names: str) -> pl.Expr:
        return pl.coalesce([pl.col(extra).str.json_path_match(f"$.{n}") for n in names])

    return [
        field("AdminComment", "admincomment", "Admincomment").alias("admin_comment"),
        field("MCSLabel", "McsLabel", "mcslabel").alias("mcs_label"),
    ]


def attribute_slurmd_dcgm(
    samples: pl.DataFrame, cluster: str, node_map: pl.DataFrame, pieces: pl.DataFrame
) -> pl.DataFrame:
    """DCGM samples whose pod is a slurmd pod, attributed through the mapped Slurm node.

    dcgm-exporter's pod mapping names the slurmd pod as the owner of every GPU it holds; such a
    sample belongs to the Slurm node the pod ran at the sample's time (:func:`slurm_node_map`)
    and, where exactly one Slurm attempt ran on that node then, to that attempt (whole-node
    attribution; with several, the GPU index map of ``scontrol show job -d`` decides, so the
    attempt is left NULL here). Its ``pod`` and ``namespace`` are cleared: a slurmd pod is
    never a Kubernetes workload's telemetry.

    Args:
        samples: ``raw.dcgm_samples`` rows (``ts, pod, namespace`` and the rest).
        cluster: the Slurm cluster the map belongs to.
        node_map: its :data:`NODE_MAP_SCHEMA` rows.
        pieces: its :func:`map_attempt_nodes` pieces (``job_id, attempt, slurm_node, start_at,
            end_at``).

    Returns:
        The samples of slurmd pods only, with ``slurm_cluster, slurm_node, job_id, attempt``
        added and ``pod``/``namespace`` NULL.
    """
    far = pl.lit(dt.datetime(9999, 1, 1, tzinfo=dt.UTC), _UTC)
    owned = (
        samples.with_row_index("_row")
        .join(
            node_map.select("namespace", "pod", "slurm_node", "valid_from", "valid_to"),
            on=["namespace", "pod"],
        )
        .filter(
            (pl.col("ts") >= pl.col("valid_from")) & (pl.col("ts") < pl.coalesce("valid_to", far))
        )
        .drop("valid_from", "valid_to")
    )
    jobs = (
        owned.select("_row", "ts", "slurm_node")
        .join(
            pieces.select("job_id", "attempt", "slurm_node", "start_at", "end_at"), on="slurm_node"
        )
        .filter((pl.col("ts") >= pl.col("start_at")) & (pl.col("ts") < pl.col("end_at")))
        .group_by("_row")
        .agg(pl.col("job_id").unique(), pl.col("attempt").first())
        .filter(pl.col("job_id").list.len() == 1)
        .select("_row", pl.col("job_id").list.first(), "attempt")
    )
    return (
        owned.join(jobs, on="_row", how="left")
        .with_columns(
            pl.lit(cluster).alias("slurm_cluster"),
            pl.lit(None, pl.String).alias("pod"),
            pl.lit(None, pl.String).alias("namespace"),
        )
        .sort("_row")
        .drop("_row")
    )


def slurm_node_gpus(nodes: pl.DataFrame, node_map: pl.DataFrame) -> pl.DataFrame:
    """``nodes`` with the GPUs of each Slurm node run in slurmd pods taken from the map: the
    most GPUs any of its intervals knows (the slurmd pod's hold, else the polled ``Gres=``), so
    the whole-node rule (:func:`metrics.attribution.node_holdings`) reads the node's own GPUs,
    not the most that one observed job held. Nodes the map knows no GPUs of are unchanged.

    Args:
        nodes: ``cluster, host, gpus`` and any other columns (kept).
        node_map: :data:`NODE_MAP_SCHEMA` rows (``cluster`` the Slurm cluster).

    Returns:
        ``nodes``, same columns and rows.
    """
    known = (
        node_map.filter(pl.col("gpus").fill_null(0.0) > 0)
        .group_by(pl.col("cluster"), pl.col("slurm_node").alias("host"))
        .agg(pl.col("gpus").max().alias("_map_gpus"))
    )
    if known.is_empty():
        return nodes
    return (
        nodes.join(known, on=["cluster", "host"], how="left")
        .with_columns(
            pl.coalesce(pl.col("_map_gpus").cast(nodes.schema["gpus"]), "gpus").alias("gpus")
        )
        .select(nodes.columns)
    )


#: ``occupancy_hourly.capacity_source`` of a Slurm cluster whose capacity is what its slurmd
#: pods hold (:func:`lend_capacity`).
LENT_CAPACITY_SOURCE: Final = "lent_by_kubernetes"


def slurmd_job_keys(pods: pl.DataFrame, pod_jobs: pl.DataFrame, k8s_cluster: str) -> pl.DataFrame:
    """The Kubernetes jobs that are slurmd pods: jobs of ``k8s_cluster`` that ran a pod labelled
    :data:`POD_HOSTNAME_LABEL` (their GPUs are lent to Slurm, never Kubernetes allocated).

    Args:
        pods: ``core.k8s_pods`` rows (``cluster, namespace, name, labels``).
        pod_jobs: ``core.pod_jobs`` (``cluster, namespace, pod, job_id``).
        k8s_cluster: the Kubernetes cluster.

    Returns:
        ``cluster, job_id``, unique.
    """
    slurmd = pods.filter(
        (pl.col("cluster") == k8s_cluster) & k8s_label(POD_HOSTNAME_LABEL).is_not_null()
    ).select("cluster", "namespace", pl.col("name").alias("pod"))
    return (
        pod_jobs.join(slurmd, on=["cluster", "namespace", "pod"], how="semi")
        .select("cluster", "job_id")
        .unique()
        .sort("cluster", "job_id")
    )


def lend_capacity(occupancy: pl.DataFrame, hourly: pl.DataFrame) -> pl.DataFrame:
    """``occupancy_hourly`` with the GPUs slurmd pods hold moved from the Kubernetes cluster to
    the Slurm cluster, so the fleet counts each GPU-second once (METRICS.md "Slurm on
    Kubernetes", layer ownership).

    Per hour, ``lent`` = Σ ``lent_to_slurm_gpu_s`` of ``slurm_on_k8s_hourly`` over the
    Kubernetes nodes. The Kubernetes cluster's ``capacity_gpu_s`` loses ``lent``; the Slurm
    cluster's ``capacity_gpu_s`` *is* ``lent`` (``capacity_source`` =
    :data:`LENT_CAPACITY_SOURCE`; 0 in an hour no slurmd pod ran), with a row added (nothing
    down) for an hour with ``lent > 0`` outside its allocation hours. Its ``allocated_gpu_s``
    is what the pods lend it: Σ over the Kubernetes nodes of min(``slurm_allocated_gpu_s``,
    ``lent_to_slurm_gpu_s``), so Slurm time no slurmd pod held (``sok_job_without_pod``) or
    above what the pod held (``sok_gres_mismatch``) is reported, not counted again on GPUs
    that were Kubernetes' (sacct's own allocation of the cluster is replaced). The
    Kubernetes cluster's ``allocated_gpu_s`` must already leave the slurmd pods out
    (:func:`slurmd_job_keys`). ``occupancy`` = allocated ÷ (capacity − down − planned_down) is
    recomputed (NULL where that is not positive). Clusters of no pair are returned unchanged.

    Args:
        occupancy: ``cluster, hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s,
            allocated_gpu_s, occupancy, capacity_source`` (GPU-seconds).
        hourly: :data:`HOURLY_SCHEMA` rows (``cluster`` the Slurm cluster, ``k8s_cluster``,
            ``lent_to_slurm_gpu_s``, ``slurm_allocated_gpu_s``), computed up to the later of the
            pair's two cut-offs.

    Returns:
        The same columns, sorted by ``cluster, hour``.
    """
    if hourly.is_empty():
        return occupancy
    cols = occupancy.columns
    lent = hourly.group_by("cluster", "k8s_cluster", "hour").agg(
        pl.col("lent_to_slurm_gpu_s").sum().alias("_lent"),
        pl.min_horizontal("slurm_allocated_gpu_s", "lent_to_slurm_gpu_s")
        .clip(0.0)
        .sum()
        .alias("_alloc"),
    )
    slurm = set(lent["cluster"].to_list())
    k8s = lent.group_by(pl.col("k8s_cluster").alias("cluster"), "hour").agg(pl.col("_lent").sum())
    hour_t = occupancy.schema["hour"]
    k8s = k8s.with_columns(pl.col("hour").cast(hour_t))
    lent_s = lent.group_by("cluster", "hour").agg(pl.col("_lent", "_alloc").sum())
    lent_s = lent_s.with_columns(pl.col("hour").cast(hour_t))
    rest = occupancy.filter(~pl.col("cluster").is_in(sorted(slurm)))
    rest = rest.join(k8s, on=["cluster", "hour"], how="left").with_columns(
        (pl.col("capacity_gpu_s") - pl.col("_lent").fill_null(0.0)).alias("capacity_gpu_s")
    )
    own = occupancy.filter(pl.col("cluster").is_in(sorted(slurm)))
    own = own.join(lent_s, on=["cluster", "hour"], how="full", coalesce=True).with_columns(
        pl.col("_lent").fill_null(0.0).alias("capacity_gpu_s"),
        pl.col("_alloc").fill_null(0.0).alias("allocated_gpu_s"),
        *[pl.col(c).fill_null(0.0) for c in ("down_gpu_s", "planned_down_gpu_s")],
        pl.lit(LENT_CAPACITY_SOURCE).alias("capacity_source"),
    )
    avail = pl.col("capacity_gpu_s") - pl.col("down_gpu_s") - pl.col("planned_down_gpu_s")
    return (
        pl.concat([rest.select(cols), own.select(cols)])
        .with_columns(
            pl.when(avail > 0)
            .then(pl.col("allocated_gpu_s") / avail)
            .otherwise(None)
            .alias("occupancy")
        )
        .sort("cluster", "hour")
    )


#: The columns of the slurmd node maps :func:`rehome_slurmd_dcgm` reads: the Slurm cluster's
#: :data:`NODE_MAP_SCHEMA` rows with the Kubernetes cluster they were read from.
SLURMD_MAP_COLUMNS: Final = (
    "cluster", "k8s_cluster", "slurm_node", "valid_from", "valid_to", "namespace", "pod", "gpus",
)  # fmt: skip


def _slurm_gres_index(own: pl.DataFrame, maps: pl.DataFrame) -> pl.DataFrame:
    """``own`` (:func:`attribute_slurmd_dcgm` rows, ``_sample`` kept) with ``_idx``: the GPU's
    index in the Slurm node's own GRES list, as ``scontrol show job -d`` ``IDX`` numbers it.

    A slurmd pod sees only the GPUs the device plugin gave it, numbered 0…N−1 in the host's
    order (NVML and ``/dev/nvidiaN`` enumerate by PCI bus id on both sides), so the Slurm index
    of a physical GPU is its rank among the physical GPUs the pod's rows carry during one map
    interval (``device="nvidiaN"``, else the ``gpu`` label). Where the map knows the pod's GPU
    count and the rows carry another number of GPUs (a GPU never sampled, or more than the pod
    holds) the rank is not the Slurm index: ``_idx`` is NULL and the GPU map does not match.
    Rows without ``device``/``gpu_index`` columns (XID events) get ``_idx`` NULL."""
    if "device" not in own.columns and "gpu_index" not in own.columns:
        return own.with_columns(pl.lit(None, pl.Int64).alias("_idx"))
    from metrics.attribution import device_index

    far = pl.lit(dt.datetime(9999, 1, 1, tzinfo=dt.UTC), _UTC)
    dev = device_index(
        pl.col("device") if "device" in own.columns else pl.lit(None, pl.String),
        pl.col("gpu_index") if "gpu_index" in own.columns else pl.lit(None, pl.Int64),
    )
    tagged = (
        own.with_columns(dev.alias("_phys"))
        .join(
            maps.select("_interval", "slurm_node", "valid_from", "valid_to", "gpus"),
            on="slurm_node",
        )
        .filter(
            (pl.col("ts") >= pl.col("valid_from")) & (pl.col("ts") < pl.coalesce("valid_to", far))
        )
        .unique("_sample")
    )
    order = (
        tagged.drop_nulls("_phys")
        .group_by("_interval", "host", "_phys")
        .agg(pl.col("gpus").first())
        .with_columns(
            (pl.col("_phys").rank("dense").over("_interval", "host") - 1)
            .cast(pl.Int64)
            .alias("_r"),
            pl.len().over("_interval", "host").alias("_n"),
        )
        .select(
            "_interval",
            "host",
            "_phys",
            pl.when(pl.col("gpus").is_null() | (pl.col("gpus") == pl.col("_n")))
            .then(pl.col("_r"))
            .alias("_idx"),
        )
    )
    idx = tagged.join(order, on=["_interval", "host", "_phys"], how="left").select(
        "_sample", "_idx"
    )
    return own.join(idx, on="_sample", how="left")


def rehome_slurmd_dcgm(samples: pl.DataFrame, maps: pl.DataFrame) -> pl.DataFrame:
    """DCGM rows of slurmd pods moved to the Slurm node they ran as, so the Slurm attribution
    (GPU index map, whole node, node group: :func:`metrics.attribution.attribute_samples`)
    decides their job, never a Kubernetes workload (METRICS.md "Slurm on Kubernetes",
    telemetry).

    A row of a Kubernetes cluster whose ``namespace``/``pod`` is a slurmd pod that the map
    places on a Slurm node at the row's ``ts`` (:func:`attribute_slurmd_dcgm`) gets ``cluster``
    = the Slurm cluster and ``host`` = the Slurm node name; a slurmd pod's row the map does not
    place stays on its Kubernetes host. Either way its ``pod`` and ``namespace`` are cleared.
    A moved row's ``gpu_index`` and ``device`` become the GPU's index in the Slurm node's own
    GRES list (the rank among the pod's GPUs, :func:`_slurm_gres_index`), the numbering of
    ``scontrol show job -d`` ``IDX``; ``gpu_uuid`` keeps the physical GPU.
    Every other row is returned unchanged, in the input order. The one re-homing rule for
    everything read per GPU from DCGM: samples, 5-minute buckets and XID events
    (``sql/analytics/xid_events.sql``, so the reliability tables count a slurmd pod's XID on
    the Slurm node and job).

    Args:
        samples: DCGM rows (samples, 5-minute buckets or XID events): ``cluster, host,
            namespace, pod, ts`` and any other columns (kept).
        maps: :data:`SLURMD_MAP_COLUMNS` rows (``cluster`` the Slurm cluster); empty: nothing
            moves.

    Returns:
        ``samples`` with the same columns and rows.
    """
    if maps.is_empty() or samples.is_empty():
        return samples
    cols = samples.columns
    ts_t = samples.schema["ts"]
    tagged = samples.with_row_index("_sample")
    moved = []
    for (c, k), m in maps.group_by("cluster", "k8s_cluster", maintain_order=True):
        m = m.with_row_index("_interval")
        if "gpus" not in m.columns:
            m = m.with_columns(pl.lit(None, pl.Float64).alias("gpus"))
        own = attribute_slurmd_dcgm(
            tagged.filter(pl.col("cluster") == k).with_columns(
                pl.col("ts").dt.convert_time_zone("UTC").dt.cast_time_unit("us")
            ),
            str(c),
            m,
            pl.DataFrame(schema={"job_id": pl.String(), "attempt": pl.Int64(),
                                 "slurm_node": pl.String(), "start_at": _UTC, "end_at": _UTC}),
        )  # fmt: skip
        moved.append(_slurm_gres_index(own, m).select(
            "_sample", pl.col("slurm_cluster").alias("_c"), pl.col("slurm_node").alias("_h"),
            "_idx",
        ))  # fmt: skip
    pods = maps.select(
        pl.col("k8s_cluster").alias("cluster"), "namespace", "pod", pl.lit(True).alias("_slurmd")
    ).unique()
    renumber = []
    if "gpu_index" in cols:
        renumber.append(
            pl.when(pl.col("_c").is_not_null())
            .then(pl.col("_idx").cast(samples.schema["gpu_index"]))
            .otherwise(pl.col("gpu_index"))
            .alias("gpu_index")
        )
    if "device" in cols:
        renumber.append(
            pl.when(pl.col("_c").is_not_null())
            .then(pl.format("nvidia{}", "_idx"))
            .otherwise(pl.col("device"))
            .alias("device")
        )
    return (
        tagged.join(pl.concat(moved).unique("_sample"), on="_sample", how="left")
        .join(pods, on=["cluster", "namespace", "pod"], how="left")
        .with_columns(*renumber)
        .with_columns(
            pl.coalesce("_c", "cluster").alias("cluster"),
            pl.coalesce("_h", "host").alias("host"),
            *[
                pl.when(pl.col("_slurmd")).then(None).otherwise(pl.col(n)).alias(n)
                for n in ("namespace", "pod")
            ],
        )
        .sort("_sample")
        .select(cols)
        .with_columns(pl.col("ts").cast(ts_t))
    )
