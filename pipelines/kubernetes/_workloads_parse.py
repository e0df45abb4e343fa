"""Kueue objects (``kubectl get workloads|clusterqueues|localqueues -o json``) into rows.

Three parsers, one per kind, over the same JSON framing as the Event and Pod parsers (list
document, bare array, single object or JSON lines; gzip detected):

- :func:`parse_k8s_workloads`: one row per Kueue ``Workload`` (``kueue.x-k8s.io/v1beta1`` and
  ``v1beta2``): its queue, ClusterQueue, priority, GPU request and the timestamps of its
  ``status.conditions``, and the accelerator resources it asks that count no GPU.
- :func:`parse_kueue_cluster_queues`: one row per ClusterQueue × flavor × GPU resource with the
  nominal quota, borrowing and lending limits and the cohort, and the accelerator resources it
  gives quota of that count no GPU.
- :func:`parse_kueue_local_queues`: one row per LocalQueue with the ClusterQueue it feeds.

Admission state comes from the Workload's conditions, never from event text. A condition keeps
only its latest transition: after a preempted workload is admitted again, Kueue turns ``Evicted``
and ``Preempted`` to ``False`` with the message prefixed ``Previously: ``, so the time of an
earlier eviction is only in the Events (see ``_attempts.py``); ``requeue_count`` and
``evictions`` say how many there were.

GPU worth of a resource (``nvidia.com/gpu`` and ``amd.com/gpu`` 1, MIG ``nvidia.com/mig-3g.40gb``
3/7, ``500m`` 0.5) follows :func:`pipelines.kubernetes._pods_parse.gpu_worth` (METRICS.md
"Units and identities").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import polars as pl

from metrics.schema import UTC_DATETIME
from pipelines._parse_result import ParseResult
from pipelines.kubernetes._json_items import (
    BadItem,
    RowsRead,
    get_path,
    int_or_none,
    parse_k8s_time,
    parse_result,
    read_rows,
    rows_frame,
    stamp,
    text_or_none,
)
from pipelines.kubernetes._pods_parse import (
    _pod_gpus,
    _uncounted_resources,
    gpu_worth,
    uncounted_accelerators,
)

__all__ = [
    "K8S_WORKLOAD_SCHEMA",
    "KUEUE_CLUSTER_QUEUE_SCHEMA",
    "KUEUE_LOCAL_QUEUE_SCHEMA",
    "KUEUE_WAIT_SENTINEL_S",
    "parse_k8s_workloads",
    "parse_kueue_cluster_queues",
    "parse_kueue_local_queues",
    "parse_quantity",
    "reported_wait_s",
]

_UTC = UTC_DATETIME

#: Columns of one Kueue Workload, in this order.
K8S_WORKLOAD_SCHEMA: dict[str, pl.DataType] = {
    "uid": pl.String(),
    "cluster": pl.String(),
    "namespace": pl.String(),
    "name": pl.String(),
    "api_version": pl.String(),
    "queue_name": pl.String(),
    "cluster_queue": pl.String(),
    "priority": pl.Int64(),
    "priority_class": pl.String(),
    "active": pl.Boolean(),
    "pod_sets": pl.Int64(),
    "pods": pl.Int64(),
    "pods_admitted": pl.Int64(),
    "gpus": pl.Float64(),
    "gpus_admitted": pl.Float64(),
    "gpu_resource": pl.String(),
    "gpu_flavors": pl.String(),
    "uncounted_resources": pl.String(),
    "max_execution_s": pl.Int64(),
    "owner_kind": pl.String(),
    "owner_name": pl.String(),
    "owner_uid": pl.String(),
    "created_at": _UTC,
    "deleted_at": _UTC,
    "quota_reserved_at": _UTC,
    "admitted_at": _UTC,
    "pods_ready_at": _UTC,
    "evicted_at": _UTC,
    "evicted_reason": pl.String(),
    "evicted_message": pl.String(),
    "preempted_at": _UTC,
    "preempted_reason": pl.String(),
    "preempted_message": pl.String(),
    "requeued_at": _UTC,
    "requeued_reason": pl.String(),
    "finished_at": _UTC,
    "finished_reason": pl.String(),
    "finished_message": pl.String(),
    "requeue_count": pl.Int64(),
    "requeue_at": _UTC,
    "evictions": pl.Int64(),
    "eviction_reasons": pl.String(),
    "past_execution_s": pl.Int64(),
    "conditions": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: Columns of one ClusterQueue × flavor × GPU resource, in this order.
KUEUE_CLUSTER_QUEUE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "name": pl.String(),
    "uid": pl.String(),
    "cohort": pl.String(),
    "flavor": pl.String(),
    "resource": pl.String(),
    "nominal_quota": pl.Float64(),
    "borrowing_limit": pl.Float64(),
    "lending_limit": pl.Float64(),
    "nominal_gpus": pl.Float64(),
    "usage_gpus": pl.Float64(),
    "borrowed_gpus": pl.Float64(),
    "uncounted_resources": pl.String(),
    "queueing_strategy": pl.String(),
    "preemption_within_cq": pl.String(),
    "reclaim_within_cohort": pl.String(),
    "fair_sharing_weight": pl.Float64(),
    "pending_workloads": pl.Int64(),
    "admitted_workloads": pl.Int64(),
    "created_at": _UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: Columns of one LocalQueue, in this order.
KUEUE_LOCAL_QUEUE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "namespace": pl.String(),
    "name": pl.String(),
    "uid": pl.String(),
    "cluster_queue": pl.String(),
    "stop_policy": pl.String(),
    "pending_workloads": pl.Int64(),
    "reserving_workloads": pl.Int64(),
    "admitted_workloads": pl.Int64(),
    "created_at": _UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: Kueue prints an unknown wait as ``math.MaxInt64`` nanoseconds in whole seconds ("wait time
#: since queued was 9223372037s", kueue release notes for PR #7646): unknown, not 292 years.
KUEUE_WAIT_SENTINEL_S: Final = 9_223_372_037

_KUEUE_GROUP: Final = "kueue.x-k8s.io"
_WAIT_RE: Final = re.compile(r"wait time since (?:queued|reservation) was (\d+)s")
_QUANTITY_RE: Final = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([a-zA-Z]*)\s*$")
_SUFFIX: Final[dict[str, float]] = {
    "": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}  # fmt: skip
# Condition type → column prefix; the reason/message columns that exist for each.
_CONDITIONS: Final = {
    "QuotaReserved": "quota_reserved",
    "Admitted": "admitted",
    "PodsReady": "pods_ready",
    "Evicted": "evicted",
    "Preempted": "preempted",
    "Requeued": "requeued",
    "Finished": "finished",
}


def parse_quantity(value: object, field: str) -> float:
    """A Kubernetes resource quantity as a number: ``8``, ``1.5``, ``500m``, ``2k``, ``4Gi``.

    Raises:
        BadItem: not a quantity.
    """
    if isinstance(value, bool):
        raise BadItem(field, f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    m = _QUANTITY_RE.match(str(value))
    if m is None or m[2] not in _SUFFIX:
        raise BadItem(field, f"not a quantity: {value!r}")
    return float(m[1]) * _SUFFIX[m[2]]


def reported_wait_s(message: str | None) -> int | None:
    """The wait Kueue reports in a ``QuotaReserved``/``Admitted`` message, in seconds.

    ``"Quota reserved in ClusterQueue cq, wait time since queued was 41s"`` → 41. Returns None
    when the message has no wait or carries Kueue's sentinel :data:`KUEUE_WAIT_SENTINEL_S`
    (unknown).
    """
    if not message:
        return None
    m = _WAIT_RE.search(message)
    if m is None:
        return None
    seconds = int(m[1])
    return None if seconds >= KUEUE_WAIT_SENTINEL_S else seconds


def _dict(value: object, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadItem(field, "not an object")
    return value


def _list(value: object, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadItem(field, "not a list")
    return value


def _check_kind(obj: Mapping[str, Any], kind: str) -> None:
    """Reject an item of another kind (``kind`` field ``kind``, so a foreign file is an error)."""
    got = obj.get("kind")
    api = str(obj.get("apiVersion") or "")
    if got is not None and got != kind:
        raise BadItem("kind", f"not a {kind} (kind {got!r})")
    if got is None and not api.startswith(_KUEUE_GROUP + "/"):
        raise BadItem("kind", f"not a {kind} (no kind, apiVersion {api!r})")
    if api and not api.startswith(_KUEUE_GROUP + "/"):
        raise BadItem("apiVersion", f"not a Kueue object (apiVersion {api!r})")


def _meta(obj: Mapping[str, Any], *, namespaced: bool) -> dict[str, Any]:
    meta = _dict(obj.get("metadata"), "metadata")
    for key in ("uid", "name"):
        if not meta.get(key):
            raise BadItem(f"metadata.{key}", f"object has no {key}")
    if namespaced and not meta.get("namespace"):
        raise BadItem("metadata.namespace", "object has no namespace")
    return meta


def _conditions(status: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The condition columns, and every condition as compact JSON."""
    out: dict[str, Any] = {}
    for prefix in _CONDITIONS.values():
        out[f"{prefix}_at"] = None
    for col in ("evicted", "preempted", "requeued", "finished"):
        out[f"{col}_reason"] = None
    for col in ("evicted", "preempted", "finished"):
        out[f"{col}_message"] = None
    kept: list[dict[str, Any]] = []
    for i, cond in enumerate(_list(status.get("conditions"), "status.conditions")):
        where = f"status.conditions[{i}]"
        cond = _dict(cond, where)
        ctype = text_or_none(cond.get("type"))
        when = parse_k8s_time(cond.get("lastTransitionTime"), f"{where}.lastTransitionTime")
        kept.append(
            {
                "type": ctype,
                "status": text_or_none(cond.get("status")),
                "reason": text_or_none(cond.get("reason")),
                "message": text_or_none(cond.get("message")),
                "lastTransitionTime": when.isoformat().replace("+00:00", "Z") if when else None,
            }
        )
        prefix = _CONDITIONS.get(ctype or "", "")
        # Only a condition that holds (status True) dates its state: a False Evicted means
        # "admitted again since", with the old message kept as "Previously: ...".
        if not prefix or cond.get("status") != "True":
            continue
        out[f"{prefix}_at"] = when
        if f"{prefix}_reason" in out:
            out[f"{prefix}_reason"] = text_or_none(cond.get("reason"))
        if f"{prefix}_message" in out:
            out[f"{prefix}_message"] = text_or_none(cond.get("message"))
    return out, json.dumps(kept, ensure_ascii=False, separators=(",", ":")) if kept else None


def _pod_set_gpus(spec: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
    """Pods and GPUs requested (spec) and admitted (status.admission) over the pod sets."""
    sets = _list(spec.get("podSets"), "spec.podSets")
    assignments = {
        str(get_path(a, "name")): a
        for a in _list(get_path(status, "admission", "podSetAssignments"), "podSetAssignments")
        if isinstance(a, dict)
    }
    pods = pods_admitted = 0
    gpus = gpus_admitted = 0.0
    resources: set[str] = set()
    uncounted: set[str] = set()
    flavors: set[str] = set()
    admitted = bool(assignments)
    for i, ps in enumerate(sets):
        where = f"spec.podSets[{i}]"
        ps = _dict(ps, where)
        count = int_or_none(ps.get("count"), f"{where}.count")
        count = 1 if count is None else count
        pod_spec = _dict(get_path(ps, "template", "spec"), f"{where}.template.spec")
        try:
            per_pod, used = _pod_gpus(pod_spec)
        except BadItem as exc:
            raise BadItem(f"{where}.template.{exc.field}", exc.reason) from exc
        if used:
            resources.update(used.split(","))
        if count and (names := _uncounted_resources(pod_spec)):
            uncounted.update(names.split(","))
        pods += count
        gpus += count * per_pod
        a = assignments.get(str(ps.get("name") or "main"))
        if a is None:
            continue
        a_count = int_or_none(a.get("count"), f"podSetAssignments[{ps.get('name')}].count")
        a_count = count if a_count is None else a_count
        pods_admitted += a_count
        usage = _dict(a.get("resourceUsage"), "podSetAssignments.resourceUsage")
        gpu_usage = [
            parse_quantity(v, f"podSetAssignments.resourceUsage.{k}") * (gpu_worth(k) or 0.0)
            for k, v in usage.items()
            if gpu_worth(k) is not None
        ]
        # resourceUsage is the pod set's total; without it, count × the per-pod request.
        gpus_admitted += sum(gpu_usage) if gpu_usage else a_count * per_pod
        for res, flavor in _dict(a.get("flavors"), "podSetAssignments.flavors").items():
            if gpu_worth(res) is not None and flavor:
                flavors.add(str(flavor))
    return {
        "pod_sets": len(sets),
        "pods": pods,
        "pods_admitted": pods_admitted if admitted else None,
        "gpus": gpus,
        "gpus_admitted": gpus_admitted if admitted else None,
        "gpu_resource": ",".join(sorted(resources)) or None,
        "gpu_flavors": ",".join(sorted(flavors)) or None,
        "uncounted_resources": ",".join(sorted(uncounted)) or None,
    }


def _workload_row(obj: dict[str, Any]) -> dict[str, Any]:
    """The row of one Workload object (v1beta1 or v1beta2)."""
    _check_kind(obj, "Workload")
    meta = _meta(obj, namespaced=True)
    spec = _dict(obj.get("spec"), "spec")
    status = _dict(obj.get("status"), "status")
    created = parse_k8s_time(meta.get("creationTimestamp"), "metadata.creationTimestamp")
    if created is None:
        raise BadItem("metadata.creationTimestamp", "workload has no creationTimestamp")
    owners = [
        o for o in _list(meta.get("ownerReferences"), "ownerReferences") if isinstance(o, dict)
    ]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
    # v1beta1 names the class in spec.priorityClassName; v1beta2 in spec.priorityClassRef.name.
    prio_class = spec.get("priorityClassName") or get_path(spec, "priorityClassRef", "name")
    conds, cond_json = _conditions(status)
    requeue = _dict(status.get("requeueState"), "status.requeueState")
    evictions = _list(get_path(status, "schedulingStats", "evictions"), "schedulingStats.evictions")
    by_reason: dict[str, int] = {}
    for i, ev in enumerate(evictions):
        ev = _dict(ev, f"status.schedulingStats.evictions[{i}]")
        key = str(ev.get("reason") or "Unknown")
        if ev.get("underlyingCause"):
            key += f"/{ev['underlyingCause']}"
        n = int_or_none(ev.get("count"), f"status.schedulingStats.evictions[{i}].count") or 0
        by_reason[key] = by_reason.get(key, 0) + n
    # v1beta1 spells it "Exexcution" (a typo kept for compatibility); v1beta2 fixed it.
    past = status.get("accumulatedPastExecutionTimeSeconds")
    if past is None:
        past = status.get("accumulatedPastExexcutionTimeSeconds")
    active = spec.get("active")
    return {
        "uid": str(meta["uid"]),
        "namespace": str(meta["namespace"]),
        "name": str(meta["name"]),
        "api_version": text_or_none(obj.get("apiVersion")),
        "queue_name": text_or_none(spec.get("queueName")),
        "cluster_queue": text_or_none(get_path(status, "admission", "clusterQueue")),
        "priority": int_or_none(spec.get("priority"), "spec.priority"),
        "priority_class": text_or_none(prio_class),
        "active": True if active is None else bool(active),
        **_pod_set_gpus(spec, status),
        "max_execution_s": int_or_none(
            spec.get("maximumExecutionTimeSeconds"), "spec.maximumExecutionTimeSeconds"
        ),
        "owner_kind": text_or_none(owner.get("kind")),
        "owner_name": text_or_none(owner.get("name")),
        "owner_uid": text_or_none(owner.get("uid"))
        or text_or_none(get_path(meta, "labels", "kueue.x-k8s.io/job-uid")),
        "created_at": created,
        "deleted_at": parse_k8s_time(meta.get("deletionTimestamp"), "metadata.deletionTimestamp"),
        **conds,
        "requeue_count": int_or_none(requeue.get("count"), "status.requeueState.count"),
        "requeue_at": parse_k8s_time(requeue.get("requeueAt"), "status.requeueState.requeueAt"),
        "evictions": sum(by_reason.values()) if evictions else None,
        "eviction_reasons": json.dumps(by_reason, sort_keys=True) if by_reason else None,
        "past_execution_s": int_or_none(past, "status.accumulatedPastExecutionTimeSeconds"),
        "conditions": cond_json,
    }


def _parse(
    path: str | Path,
    *,
    cluster: str,
    kind: str,
    list_kinds: frozenset[str],
    build: Callable[[dict[str, Any]], list[dict[str, Any]]],
    schema: Mapping[str, pl.DataType],
    key: list[str],
) -> ParseResult:
    """Shared driver: items → rows (``build`` may give several rows per item), last uid wins."""
    read = read_rows(path, list_kinds=list_kinds, build=build, what=f"Kueue {kind}")
    return keep_last(read, schema=schema, key=key, cluster=cluster)


def keep_last(
    read: RowsRead, *, schema: Mapping[str, pl.DataType], key: list[str], cluster: str
) -> ParseResult:
    """The :class:`ParseResult` of ``read``: rows of ``schema``, the last item of a ``key[0]``
    winning (and its rows unique by ``key``), stamped with ``cluster`` and the file."""
    frame = rows_frame(read.rows, schema)
    last_item = frame.group_by(key[0]).agg(pl.col("line_no").max().alias("_last"))
    kept = stamp(
        frame.join(last_item, on=key[0], how="left")
        .filter(pl.col("line_no") == pl.col("_last"))
        .unique(key, keep="last", maintain_order=True)
        .sort("line_no", maintain_order=True),
        schema,
        cluster=cluster,
        file=read.file,
    )
    items_kept = kept.select(key[0]).n_unique() if kept.height else 0
    return parse_result(read, kept, duplicates=len(read.items) - len(read.rejects) - items_kept)


def parse_k8s_workloads(path: str | Path, *, cluster: str = "default") -> ParseResult:
    """Parse ``kubectl get workloads -A -o json`` into one row per Kueue Workload.

    Args:
        path: the file (``kind`` ``List`` or ``WorkloadList``; a bare array, a single Workload or
            JSON lines of Workloads or watch events also work; gzip detected).
        cluster: the value of the ``cluster`` column.

    Returns:
        ``rows`` with :data:`K8S_WORKLOAD_SCHEMA`, one per uid (the last item of a uid wins):

        - ``uid``, ``namespace``, ``name``, ``api_version``; ``queue_name`` (``spec.queueName``,
          the LocalQueue), ``cluster_queue`` (``status.admission.clusterQueue``; NULL while not
          admitted), ``priority``, ``priority_class`` (v1beta1 ``spec.priorityClassName``,
          v1beta2 ``spec.priorityClassRef.name``), ``active`` (``spec.active``, default true);
        - ``pod_sets``, ``pods`` (Σ ``count``), ``gpus``: Σ count × the pod template's GPU
          request (GPUs; MIG and milli-GPUs as fractions), ``gpu_resource``; ``pods_admitted``
          / ``gpus_admitted`` from ``status.admission.podSetAssignments`` (``resourceUsage`` of
          the GPU resources, else count × per-pod; NULL while not admitted; smaller than the
          request under partial admission), ``gpu_flavors`` (the flavors assigned to GPU
          resources); ``uncounted_resources``: the accelerator resources that count no GPU
          (:func:`pipelines.kubernetes._pods_parse.is_uncounted_accelerator`,
          ``habana.ai/gaudi``) the pod templates of its pod sets (``count`` > 0) ask, as for a
          pod (``raw.k8s_pods.uncounted_resources``), sorted and comma-separated, NULL when none;
        - ``max_execution_s`` (``spec.maximumExecutionTimeSeconds``), the controller owner
          (``owner_kind``/``owner_name``/``owner_uid``, the uid falling back to the label
          ``kueue.x-k8s.io/job-uid``);
        - times (UTC, µs): ``created_at``, ``deleted_at``; per condition that holds
          (``status: "True"``), its ``lastTransitionTime``: ``quota_reserved_at``,
          ``admitted_at``, ``pods_ready_at``, ``evicted_at`` (+ ``evicted_reason``:
          ``Preempted``, ``PodsReadyTimeout``, ``AdmissionCheck``, ``Deactivated`` …, and
          ``evicted_message``), ``preempted_at`` (+ reason ``InClusterQueue``,
          ``InCohortReclamation`` … and message), ``requeued_at`` (+ reason),
          ``finished_at`` (+ ``finished_reason`` ``Succeeded``/``Failed``, ``finished_message``).
          A condition that is False gives NULLs; ``conditions`` keeps every condition as JSON;
        - ``requeue_count`` (``status.requeueState.count``), ``requeue_at`` (backoff deadline),
          ``evictions`` (Σ ``status.schedulingStats.evictions[].count``) and
          ``eviction_reasons`` (JSON ``{"reason[/underlyingCause]": count}``),
          ``past_execution_s`` (``accumulatedPastExecutionTimeSeconds``, also v1beta1's
          misspelt ``...Exexcution...``); ``file``, ``line_no``.

        ``rejected``: items that are not Kueue Workloads or lack uid, name, namespace or
        creationTimestamp, or carry a malformed time, count or quantity. ``info``: ``framing``,
        ``items``, ``duplicates``.

    Raises:
        InputFormatError: the file is not JSON, is a list of another kind, or none of its items
            is a Workload.
    """
    return _parse(
        path,
        cluster=cluster,
        kind="Workload",
        list_kinds=frozenset({"List", "WorkloadList"}),
        build=lambda o: [_workload_row(_unwrap(o))],
        schema=K8S_WORKLOAD_SCHEMA,
        key=["uid"],
    )


def _unwrap(obj: dict[str, Any]) -> dict[str, Any]:
    """The object inside a watch event ``{"type": ..., "object": {...}}``, else ``obj``."""
    inner = obj.get("object")
    if isinstance(inner, dict) and "metadata" not in obj:
        if obj.get("type") == "ERROR":
            raise BadItem("type", "watch ERROR event (the object is a Status)")
        return inner
    return obj


def _quota(value: object, field: str) -> float | None:
    return None if value is None else parse_quantity(value, field)


def _usage(status: Mapping[str, Any], key: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(flavor, resource) → (total, borrowed) from ``status.flavorsUsage``-like lists."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for f in _list(status.get(key), f"status.{key}"):
        if not isinstance(f, dict):
            continue
        for r in _list(f.get("resources"), f"status.{key}.resources"):
            if not isinstance(r, dict):
                continue
            total = _quota(r.get("total"), f"status.{key}.total") or 0.0
            borrowed = _quota(r.get("borrowed"), f"status.{key}.borrowed") or 0.0
            out[(str(f.get("name")), str(r.get("name")))] = (total, borrowed)
    return out


def _cluster_queue_uncounted(spec: Mapping[str, Any]) -> str | None:
    """The uncounted accelerator resources (:func:`pipelines.kubernetes._pods_parse.
    uncounted_accelerators`) a ClusterQueue gives quota of: per flavor of each resource group,
    its resources with a non-zero ``nominalQuota`` (``borrowingLimit`` and ``lendingLimit`` bound
    that quota and add none); sorted and comma-separated, None when there are none. Kueue
    requires a flavor to list exactly its group's ``coveredResources``, so the flavors name them
    all. As for a container, a flavor that also gives quota of a counted GPU resource names none:
    beside ``nvidia.com/gpu`` HAMi's ``nvidia.com/gpumem`` is a share of that GPU."""
    names: set[str] = set()

    def listed(value: object) -> list[Any]:
        # a malformed list is left to the rows' reader, whose rejection names the field
        return value if isinstance(value, list) else []

    for group in listed(spec.get("resourceGroups")):
        for flavor in listed(group.get("flavors") if isinstance(group, Mapping) else None):
            resources = listed(flavor.get("resources") if isinstance(flavor, Mapping) else None)
            names |= uncounted_accelerators(
                {
                    str(r.get("name")): r.get("nominalQuota", 0)
                    for r in resources
                    if isinstance(r, Mapping)
                }
            )
    return ",".join(sorted(names)) or None


def _cluster_queue_rows(obj: dict[str, Any]) -> list[dict[str, Any]]:
    obj = _unwrap(obj)
    _check_kind(obj, "ClusterQueue")
    meta = _meta(obj, namespaced=False)
    spec = _dict(obj.get("spec"), "spec")
    status = _dict(obj.get("status"), "status")
    # v1beta1 spec.cohort; v1beta2 spec.cohortName.
    cohort = text_or_none(spec.get("cohort")) or text_or_none(spec.get("cohortName"))
    usage = _usage(status, "flavorsUsage")
    weight = get_path(spec, "fairSharing", "weight")
    base = {
        "name": str(meta["name"]),
        "uid": str(meta["uid"]),
        "cohort": cohort,
        "queueing_strategy": text_or_none(spec.get("queueingStrategy")),
        "preemption_within_cq": text_or_none(get_path(spec, "preemption", "withinClusterQueue")),
        "reclaim_within_cohort": text_or_none(get_path(spec, "preemption", "reclaimWithinCohort")),
        "fair_sharing_weight": None if weight is None else parse_quantity(weight, "weight"),
        "pending_workloads": int_or_none(status.get("pendingWorkloads"), "status.pendingWorkloads"),
        "admitted_workloads": int_or_none(
            status.get("admittedWorkloads"), "status.admittedWorkloads"
        ),
        "created_at": parse_k8s_time(meta.get("creationTimestamp"), "creationTimestamp"),
    }
    base["uncounted_resources"] = _cluster_queue_uncounted(spec)
    rows: list[dict[str, Any]] = []
    for g, group in enumerate(_list(spec.get("resourceGroups"), "spec.resourceGroups")):
        group = _dict(group, f"spec.resourceGroups[{g}]")
        for f, flavor in enumerate(_list(group.get("flavors"), f"resourceGroups[{g}].flavors")):
            flavor = _dict(flavor, f"spec.resourceGroups[{g}].flavors[{f}]")
            fname = str(flavor.get("name"))
            for r, res in enumerate(_list(flavor.get("resources"), "flavors.resources")):
                where = f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}]"
                res = _dict(res, where)
                rname = str(res.get("name"))
                worth = gpu_worth(rname)
                if worth is None:
                    continue
                nominal = _quota(res.get("nominalQuota"), f"{where}.nominalQuota")
                used, borrowed = usage.get((fname, rname), (0.0, 0.0))
                rows.append(
                    {
                        **base,
                        "flavor": fname,
                        "resource": rname,
                        "nominal_quota": nominal,
                        "borrowing_limit": _quota(
                            res.get("borrowingLimit"), f"{where}.borrowingLimit"
                        ),
                        "lending_limit": _quota(res.get("lendingLimit"), f"{where}.lendingLimit"),
                        "nominal_gpus": None if nominal is None else nominal * worth,
                        "usage_gpus": used * worth,
                        "borrowed_gpus": borrowed * worth,
                    }
                )
    if not rows:
        rows.append(
            {
                **base,
                "flavor": None,
                "resource": None,
                "nominal_quota": None,
                "borrowing_limit": None,
                "lending_limit": None,
                "nominal_gpus": None,
                "usage_gpus": None,
                "borrowed_gpus": None,
            }
        )
    return rows


def parse_kueue_cluster_queues(path: str | Path, *, cluster: str = "default") -> ParseResult:
    """Parse ``kubectl get clusterqueues -o json`` into GPU quota rows.

    Args:
        path: the file (``List`` or ``ClusterQueueList``, array, object or JSON lines).
        cluster: the value of the ``cluster`` column.

    Returns:
        ``rows`` with :data:`KUEUE_CLUSTER_QUEUE_SCHEMA`: one row per ClusterQueue × flavor ×
        GPU resource (``nvidia.com/gpu``, ``amd.com/gpu``, MIG profiles; other resources are left
        out), and one row with NULL ``flavor``/``resource`` for a ClusterQueue without GPU
        quota, so its cohort is still known. ``nominal_quota``, ``borrowing_limit`` (NULL = no
        limit), ``lending_limit`` (NULL = no limit) are in units of the resource; ``nominal_gpus``,
        ``usage_gpus`` and ``borrowed_gpus`` (``status.flavorsUsage``) in GPUs (a MIG slice
        counts its fraction). ``cohort`` is v1beta1 ``spec.cohort`` or v1beta2
        ``spec.cohortName``. ``uncounted_resources`` (on each row of the ClusterQueue): the
        accelerator resources that count no GPU (``habana.ai/gaudi``) it gives a non-zero
        ``nominalQuota`` of (:func:`_cluster_queue_uncounted`), sorted and comma-separated, NULL
        when none; such quota has no GPU row. ``rejected``/``info`` as for the other parsers.

    Raises:
        InputFormatError: not JSON, a list of another kind, or no ClusterQueue in it.
    """
    return _parse(
        path,
        cluster=cluster,
        kind="ClusterQueue",
        list_kinds=frozenset({"List", "ClusterQueueList"}),
        build=_cluster_queue_rows,
        schema=KUEUE_CLUSTER_QUEUE_SCHEMA,
        key=["uid", "flavor", "resource"],
    )


def _local_queue_row(obj: dict[str, Any]) -> list[dict[str, Any]]:
    obj = _unwrap(obj)
    _check_kind(obj, "LocalQueue")
    meta = _meta(obj, namespaced=True)
    spec = _dict(obj.get("spec"), "spec")
    status = _dict(obj.get("status"), "status")
    return [
        {
            "namespace": str(meta["namespace"]),
            "name": str(meta["name"]),
            "uid": str(meta["uid"]),
            "cluster_queue": text_or_none(spec.get("clusterQueue")),
            "stop_policy": text_or_none(spec.get("stopPolicy")),
            "pending_workloads": int_or_none(
                status.get("pendingWorkloads"), "status.pendingWorkloads"
            ),
            "reserving_workloads": int_or_none(
                status.get("reservingWorkloads"), "status.reservingWorkloads"
            ),
            "admitted_workloads": int_or_none(
                status.get("admittedWorkloads"), "status.admittedWorkloads"
            ),
            "created_at": parse_k8s_time(meta.get("creationTimestamp"), "creationTimestamp"),
        }
    ]


def parse_kueue_local_queues(path: str | Path, *, cluster: str = "default") -> ParseResult:
    """Parse ``kubectl get localqueues -A -o json`` into one row per LocalQueue.

    Args:
        path: the file (``List`` or ``LocalQueueList``, array, object or JSON lines).
        cluster: the value of the ``cluster`` column.

    Returns:
        ``rows`` with :data:`KUEUE_LOCAL_QUEUE_SCHEMA`: ``namespace``, ``name``, ``uid``,
        ``cluster_queue`` (``spec.clusterQueue``), ``stop_policy``, the status counters and
        ``created_at``. ``rejected``/``info`` as for the other parsers.

    Raises:
        InputFormatError: not JSON, a list of another kind, or no LocalQueue in it.
    """
    return _parse(
        path,
        cluster=cluster,
        kind="LocalQueue",
        list_kinds=frozenset({"List", "LocalQueueList"}),
        build=_local_queue_row,
        schema=KUEUE_LOCAL_QUEUE_SCHEMA,
        key=["uid"],
    )
