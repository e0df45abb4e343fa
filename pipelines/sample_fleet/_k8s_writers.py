"""Kubernetes exports: ``kubectl get events|pods|workloads|localqueues -A -o json`` and
``kubectl get clusterqueues|nodes -o json``.

Events are core/v1 ``Event`` objects as kubectl prints them (keys sorted, four-space indent).
Repeating events (``FailedScheduling`` of a pending pod, Kueue ``Pending`` of a queued Workload)
are aggregated per day with ``count`` > 1, ``firstTimestamp`` and ``lastTimestamp``; each day's file
holds a fresh Event object for that day's share of the series (events expire long before a day
ends, so a daily collector sees new objects).

The pods file is a day-end snapshot of every pod that existed during the day, with its status as
of that moment (a pod deleted on eviction keeps its last status and its ``deletionTimestamp``).
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.sample_fleet._k8s_sim import K8sAttempt, K8sPod, K8sWorkload

__all__ = [
    "COHORT",
    "PROD_LENDING_LIMIT",
    "K8sEvent",
    "build_events",
    "write_cluster_queues_day",
    "write_events_day",
    "write_local_queues_day",
    "write_nodes_day",
    "write_pods_day",
    "write_workloads_day",
]

_NS = uuid.UUID("6f1c2a52-8a0e-4d55-9b7e-3c1f0d7a9e21")
_CONTAINER = "trainer"
_SCHED_RETRY_S = 300
_KUEUE_RETRY_S = 600


def rfc3339(ts: int) -> str:
    """``2026-11-02T09:15:00Z`` for epoch seconds."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class K8sEvent:
    """One event (or a series of identical ones over ``[first, last]``).

    Attributes:
        first: first occurrence (epoch s).
        last: last occurrence (epoch s).
        series: True when the event repeats every ``period`` seconds between first and last.
        period: seconds between repeats.
        namespace: namespace of the event and its object.
        kind: involved object kind (``Pod``, ``Workload``, ``Job``).
        api_version: involved object apiVersion.
        name: involved object name.
        uid: involved object uid.
        reason: event reason.
        message: event message.
        type: ``Normal`` or ``Warning``.
        component: source component.
        host: source host (kubelet events), else "".
        field_path: involvedObject.fieldPath for container events, else "".
    """

    first: int
    last: int
    series: bool
    period: int
    namespace: str
    kind: str
    api_version: str
    name: str
    uid: str
    reason: str
    message: str
    type: str
    component: str
    host: str = ""
    field_path: str = ""


def _pod_events(
    wl: K8sWorkload,
    att: K8sAttempt,
    pod: K8sPod,
    pools: dict[str, list[str]],
    n_nodes: int,
    win_end: int,
) -> list[K8sEvent]:
    ns = wl.namespace
    ev: list[K8sEvent] = []

    def pe(
        t: int,
        reason: str,
        msg: str,
        *,
        kind: str = "Normal",
        comp: str = "kubelet",
        container: bool = True,
    ) -> None:
        host = (pod.node or "") if comp == "kubelet" else ""
        ev.append(
            K8sEvent(
                t,
                t,
                False,
                0,
                ns,
                "Pod",
                "v1",
                pod.name,
                pod.uid,
                reason,
                msg,
                kind,
                comp,
                host,
                f"spec.containers{{{_CONTAINER}}}" if container else "",
            )
        )

    pending_until = pod.bound if pod.bound is not None else (pod.deleted or win_end)
    if pending_until - pod.created > 2:
        pool = len(pools[wl.cq])
        other = n_nodes - pool
        msg = (
            f"0/{n_nodes} nodes are available: {pool} Insufficient nvidia.com/gpu, {other} "
            f"node(s) didn't match Pod's node affinity/selector. preemption: 0/{n_nodes} nodes "
            f"are available: {pool} No preemption victims found for incoming pod, {other} "
            "Preemption is not helpful for scheduling."
        )
        ev.append(
            K8sEvent(
                pod.created + 1,
                pending_until - 1,
                True,
                _SCHED_RETRY_S,
                ns,
                "Pod",
                "v1",
                pod.name,
                pod.uid,
                "FailedScheduling",
                msg,
                "Warning",
                "default-scheduler",
            )
        )
    if pod.bound is None or pod.node is None:
        return ev
    pe(
        pod.bound,
        "Scheduled",
        f"Successfully assigned {ns}/{pod.name} to {pod.node}",
        comp="default-scheduler",
        container=False,
    )
    if pod.started is None:
        return ev
    pull_start = pod.bound + 2
    if pod.pull_s > 0:
        pe(pull_start, "Pulling", f'Pulling image "{wl.image}"')
        pe(
            pull_start + math.ceil(pod.pull_s),
            "Pulled",
            f'Successfully pulled image "{wl.image}" in {pod.pull_s:.3f}s '
            f"({pod.pull_s:.3f}s including waiting)",
        )
    else:
        pe(pull_start, "Pulled", f'Container image "{wl.image}" already present on machine')
    pe(pod.started - 1, "Created", f"Created container {_CONTAINER}")
    pe(pod.started, "Started", f"Started container {_CONTAINER}")
    if pod.killed is not None:
        pe(pod.killed, "Killing", f"Stopping container {_CONTAINER}")
    return ev


def build_events(
    workloads: Sequence[K8sWorkload], pools: dict[str, list[str]], n_nodes: int, win_end: int
) -> list[K8sEvent]:
    """Every event of the simulation, Pod, Workload and Job events alike.

    Args:
        workloads: the simulated workloads.
        pools: hosts per ClusterQueue.
        n_nodes: nodes in the cluster.
        win_end: window end (epoch s).

    Returns:
        Events (series included once each), in no particular order.
    """
    out: list[K8sEvent] = []
    for wl in workloads:
        ns = wl.namespace
        flavor = f"h100-{wl.cq.removeprefix('cq-')}"

        def we(
            t: int, reason: str, msg: str, comp: str = "kueue-admission", w: K8sWorkload = wl
        ) -> None:
            out.append(
                K8sEvent(
                    t,
                    t,
                    False,
                    0,
                    w.namespace,
                    "Workload",
                    "kueue.x-k8s.io/v1beta1",
                    w.wl_name,
                    w.wl_uid,
                    reason,
                    msg,
                    "Normal",
                    comp,
                )
            )

        def je(
            t: int,
            reason: str,
            msg: str,
            kind: str = "Normal",
            comp: str = "job-controller",
            w: K8sWorkload = wl,
        ) -> None:
            out.append(
                K8sEvent(
                    t,
                    t,
                    False,
                    0,
                    w.namespace,
                    "Job",
                    "batch/v1",
                    w.job_name,
                    w.job_uid,
                    reason,
                    msg,
                    kind,
                    comp,
                )
            )

        je(
            wl.created,
            "CreatedWorkload",
            f"Created Workload: {ns}/{wl.wl_name}",
            comp="kueue-job-controller",
        )
        for att in wl.attempts:
            waited_until = att.reserved if att.reserved is not None else win_end
            if waited_until - att.queued > 1:
                missing = max(att.missing_gpus, wl.gpus_per_pod)
                out.append(
                    K8sEvent(
                        att.queued + 1,
                        waited_until - 1,
                        True,
                        _KUEUE_RETRY_S,
                        ns,
                        "Workload",
                        "kueue.x-k8s.io/v1beta1",
                        wl.wl_name,
                        wl.wl_uid,
                        "Pending",
                        f"couldn't assign flavors to pod set main: insufficient unused quota for "
                        f"nvidia.com/gpu in flavor {flavor}, {missing} more needed",
                        "Normal",
                        "kueue-admission",
                    )
                )
            if att.reserved is None:
                continue
            we(
                att.reserved,
                "QuotaReserved",
                f"Quota reserved in ClusterQueue {wl.cq}, wait time "
                f"since queued was {att.reserved - att.queued}s",
            )
            we(
                att.reserved,
                "Admitted",
                f"Admitted by ClusterQueue {wl.cq}, wait time since reservation was 0s",
            )
            je(
                att.reserved,
                "Started",
                f"Admitted by clusterQueue {wl.cq}",
                comp="kueue-job-controller",
            )
            if att.index > 0:
                je(att.reserved, "Resumed", "Job resumed")
            for pod in att.pods:
                je(pod.created, "SuccessfulCreate", f"Created pod: {pod.name}")
                out.extend(_pod_events(wl, att, pod, pools, n_nodes, win_end))
            if att.outcome == "Evicted" and att.end is not None and att.preemptor is not None:
                p = att.preemptor
                msg = (
                    f"Preempted to accommodate a workload (UID: {p.wl_uid}, JobUID: "
                    f"{p.job_uid}) due to prioritization in the ClusterQueue"
                )
                we(att.end, "EvictedDueToPreempted", msg, comp="kueue-workload-controller")
                we(att.end, "Preempted", msg)
                je(att.end, "Stopped", msg, comp="kueue-job-controller")
                je(att.end, "Suspended", "Job suspended")
                for pod in att.pods:
                    je(att.end, "SuccessfulDelete", f"Deleted pod: {pod.name}")
            elif att.outcome == "Succeeded" and att.end is not None:
                je(att.end, "Completed", "Job completed")
            elif att.outcome == "Failed" and att.end is not None:
                je(
                    att.end,
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                    kind="Warning",
                )
    return out


def _event_obj(ev: K8sEvent, first: int, last: int, count: int, seq: int) -> dict[str, Any]:
    name = f"{ev.name}.{first * 1_000_000_000 + seq:x}"
    involved: dict[str, Any] = {
        "apiVersion": ev.api_version,
        "kind": ev.kind,
        "name": ev.name,
        "namespace": ev.namespace,
        "resourceVersion": str(100_000 + first % 90_000_000),
        "uid": ev.uid,
    }
    if ev.field_path:
        involved["fieldPath"] = ev.field_path
    source: dict[str, Any] = {"component": ev.component}
    if ev.host:
        source["host"] = ev.host
    return {
        "apiVersion": "v1",
        "count": count,
        "eventTime": None,
        "firstTimestamp": rfc3339(first),
        "involvedObject": involved,
        "kind": "Event",
        "lastTimestamp": rfc3339(last),
        "message": ev.message,
        "metadata": {
            "creationTimestamp": rfc3339(first),
            "name": name,
            "namespace": ev.namespace,
            "resourceVersion": str(200_000_000 + last % 90_000_000 + seq),
            "uid": str(uuid.uuid5(_NS, f"{ev.uid}/{ev.reason}/{name}")),
        },
        "reason": ev.reason,
        "reportingComponent": ev.component,
        "reportingInstance": ev.host,
        "source": source,
        "type": ev.type,
    }


def write_events_day(path: Path, events: Sequence[K8sEvent], day_start: int, day_end: int) -> int:
    """Write one day's ``events_YYYY-MM-DD.json``; returns the number of items.

    Args:
        path: output file.
        events: every event of the simulation.
        day_start: the day's first second (epoch s, UTC).
        day_end: the next day's first second.

    Returns:
        Items written.
    """
    items: list[tuple[tuple[int, str, str, str], dict[str, Any]]] = []
    for seq, ev in enumerate(events):
        if ev.last < day_start or ev.first >= day_end:
            continue
        if ev.series:
            first = max(ev.first, day_start)
            last = min(ev.last, day_end - 1)
            # occurrences at first + k·period inside [first, last]
            k0 = -(-(first - ev.first) // ev.period)
            k1 = (last - ev.first) // ev.period
            if k1 < k0:
                continue
            count = k1 - k0 + 1
            first, last = ev.first + k0 * ev.period, ev.first + k1 * ev.period
        else:
            first, last, count = ev.first, ev.last, 1
        obj = _event_obj(ev, first, last, count, seq % 4096)
        items.append(((last, ev.namespace, ev.name, ev.reason), obj))
    items.sort(key=lambda kv: kv[0])
    doc = {
        "apiVersion": "v1",
        "items": [o for _, o in items],
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    path.write_text(json.dumps(doc, indent=4, sort_keys=True) + "\n", encoding="utf-8")
    return len(items)


def _pod_obj(wl: K8sWorkload, pod: K8sPod, now: int, pools: dict[str, list[str]]) -> dict[str, Any]:
    pool_label = wl.cq.removeprefix("cq-")
    gpus = str(wl.gpus_per_pod)
    labels = {
        "batch.kubernetes.io/controller-uid": wl.job_uid,
        "batch.kubernetes.io/job-completion-index": str(pod.index),
        "batch.kubernetes.io/job-name": wl.job_name,
        "controller-uid": wl.job_uid,
        "job-name": wl.job_name,
        "kueue.x-k8s.io/queue-name": wl.queue,
    }
    meta: dict[str, Any] = {
        "creationTimestamp": rfc3339(pod.created),
        "generateName": f"{wl.job_name}-{pod.index}-",
        "labels": labels,
        "name": pod.name,
        "namespace": wl.namespace,
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "Job",
                "name": wl.job_name,
                "uid": wl.job_uid,
            }
        ],
        "resourceVersion": str(300_000_000 + pod.created % 90_000_000),
        "uid": pod.uid,
    }
    if pod.deleted is not None and pod.deleted <= now:
        meta["deletionGracePeriodSeconds"] = 30
        meta["deletionTimestamp"] = rfc3339(pod.deleted)
    res = {
        "cpu": str(12 * wl.gpus_per_pod),
        "memory": f"{120 * wl.gpus_per_pod}Gi",
        "nvidia.com/gpu": gpus,
    }
    spec: dict[str, Any] = {
        "containers": [
            {
                "image": wl.image,
                "imagePullPolicy": "IfNotPresent",
                "name": _CONTAINER,
                "resources": {"limits": {"nvidia.com/gpu": gpus}, "requests": res},
            }
        ],
        "nodeSelector": {"cloud.example.com/gpu-pool": pool_label},
        "restartPolicy": "Never",
        "schedulerName": "default-scheduler",
        "tolerations": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}],
    }
    if wl.priority_class:
        spec["priorityClassName"] = wl.priority_class
        spec["priority"] = wl.priority
    bound = pod.bound is not None and pod.bound <= now and pod.node is not None
    status: dict[str, Any] = {"qosClass": "Burstable"}
    if not bound:
        status["phase"] = "Pending"
        status["conditions"] = [
            {
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(pod.created + 1),
                "message": "0/8 nodes are available: insufficient nvidia.com/gpu.",
                "reason": "Unschedulable",
                "status": "False",
                "type": "PodScheduled",
            }
        ]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
    assert pod.bound is not None
    spec["nodeName"] = pod.node
    conds = [
        {
            "lastProbeTime": None,
            "lastTransitionTime": rfc3339(pod.bound),
            "status": "True",
            "type": "PodScheduled",
        }
    ]
    started = pod.started is not None and pod.started <= now
    finished = pod.finished is not None and pod.finished <= now
    digest = uuid.uuid5(_NS, wl.image).hex * 2
    cs: dict[str, Any] = {
        "image": wl.image,
        "name": _CONTAINER,
        "restartCount": 0,
        "imageID": f"{wl.image.split(':')[0]}@sha256:{digest}",
    }
    if started:
        assert pod.started is not None
        cs["containerID"] = (
            f"containerd://{uuid.uuid5(_NS, pod.uid).hex}{uuid.uuid5(_NS, pod.name).hex}"
        )
    if finished:
        assert pod.finished is not None and pod.started is not None
        cs.update(
            ready=False,
            started=False,
            state={
                "terminated": {
                    "containerID": cs["containerID"],
                    "exitCode": pod.exit_code,
                    "finishedAt": rfc3339(pod.finished),
                    "reason": pod.reason,
                    "startedAt": rfc3339(pod.started),
                }
            },
        )
        phase = "Succeeded" if pod.exit_code == 0 else "Failed"
        conds.append(
            {
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(pod.finished),
                "reason": "PodCompleted" if phase == "Succeeded" else "PodFailed",
                "status": "False",
                "type": "Ready",
            }
        )
    elif started:
        assert pod.started is not None
        cs.update(ready=True, started=True, state={"running": {"startedAt": rfc3339(pod.started)}})
        phase = "Running"
        conds.append(
            {
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(pod.started),
                "status": "True",
                "type": "Ready",
            }
        )
    elif pod.deleted is not None and pod.deleted <= now:
        cs.update(
            ready=False,
            started=False,
            state={
                "terminated": {
                    "exitCode": 137,
                    "finishedAt": rfc3339(pod.deleted),
                    "reason": "ContainerStatusUnknown",
                    "startedAt": None,
                }
            },
        )
        phase = "Failed"
    else:
        cs.update(ready=False, started=False, state={"waiting": {"reason": "ContainerCreating"}})
        phase = "Pending"
    status.update(
        conditions=conds,
        containerStatuses=[cs],
        hostIP=_ip(pod.node or "", 0),
        phase=phase,
        podIP=_ip(pod.node or "", 1 + pod.index + 10 * (hash_small(pod.uid))),
        startTime=rfc3339(pod.bound + 1),
    )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def hash_small(text: str) -> int:
    """A small stable number from a string (for pod IPs)."""
    return int(uuid.uuid5(_NS, text).hex[:4], 16) % 20


def _ip(host: str, k: int) -> str:
    n = int(host.rsplit("-", 1)[-1]) if host else 0
    return f"10.42.{n}.{k}" if k else f"10.0.1.{10 + n}"


def write_pods_day(
    path: Path,
    workloads: Sequence[K8sWorkload],
    pools: dict[str, list[str]],
    day_start: int,
    day_end: int,
) -> int:
    """Write one day's ``pods_YYYY-MM-DD.json`` (snapshot at ``day_end``); returns pods written.

    Args:
        path: output file.
        workloads: the simulated workloads.
        pools: hosts per ClusterQueue.
        day_start: the day's first second (epoch s, UTC).
        day_end: the next day's first second (the snapshot time).

    Returns:
        Pods written.
    """
    items: list[tuple[tuple[str, str], dict[str, Any]]] = []
    for wl in workloads:
        for att in wl.attempts:
            for pod in att.pods:
                if pod.created >= day_end:
                    continue
                gone = pod.deleted if pod.deleted is not None else pod.finished
                if gone is not None and gone < day_start:
                    continue
                items.append(((wl.namespace, pod.name), _pod_obj(wl, pod, day_end - 1, pools)))
    items.sort(key=lambda kv: kv[0])
    doc = {
        "apiVersion": "v1",
        "items": [o for _, o in items],
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    path.write_text(json.dumps(doc, indent=4, sort_keys=True) + "\n", encoding="utf-8")
    return len(items)


# -- Kueue and Node objects -----------------------------------------------------------------------

#: The cohort both ClusterQueues belong to.
COHORT = "gpu-fleet"
#: ``lendingLimit`` of ``cq-prod`` (planted finding: prod keeps its quota to itself, so research
#: pends beside prod's unused GPUs; the simulation admits without borrowing accordingly).
PROD_LENDING_LIMIT = 0
_KUEUE_API = "kueue.x-k8s.io/v1beta1"


def _list_doc(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def _write_json(path: Path, doc: dict[str, Any], snapshot: int) -> None:
    """Write ``doc`` as kubectl prints it; the file's modification time is the snapshot time
    (``goodput ingest k8s-objects`` reads it as ``snapshot_at``)."""
    path.write_text(json.dumps(doc, indent=4, sort_keys=True) + "\n", encoding="utf-8")
    os.utime(path, (snapshot, snapshot))


def _flavor(cq: str) -> str:
    return f"h100-{cq.removeprefix('cq-')}"


def _released(att: K8sAttempt) -> int | None:
    """When an admission gave its quota back: its finish, or an evicted one's last pod gone."""
    if att.end is None:
        return None
    if att.outcome == "Evicted":
        return max([att.end, *(p.deleted for p in att.pods if p.deleted is not None)])
    return att.end


def _cond(ctype: str, status: bool, t: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "lastTransitionTime": rfc3339(t),
        "message": message,
        "observedGeneration": 1,
        "reason": reason,
        "status": "True" if status else "False",
        "type": ctype,
    }


def _workload_obj(wl: K8sWorkload, now: int) -> dict[str, Any]:
    """The Workload as ``kubectl get workloads -o json`` shows it at ``now``.

    Conditions follow Kueue: ``QuotaReserved``/``Admitted`` at the admission, ``Evicted`` and
    ``Preempted`` at a preemption (turned ``False`` with a ``Previously:`` message once admitted
    again), ``Requeued`` when it re-entered the queue, ``Finished`` (``Succeeded``/``Failed``)
    at the end; ``schedulingStats.evictions`` counts the preemptions so far.
    """
    atts = [a for a in wl.attempts if a.queued <= now]
    cur = atts[-1]
    evicted = [a for a in atts if a.outcome == "Evicted" and a.end is not None and a.end <= now]
    conds: list[dict[str, Any]] = []
    reserved = cur.reserved is not None and cur.reserved <= now
    cur_evicted = cur.outcome == "Evicted" and cur.end is not None and cur.end <= now
    if reserved and not cur_evicted:
        assert cur.reserved is not None
        wait = cur.reserved - cur.queued
        conds.append(
            _cond(
                "QuotaReserved",
                True,
                cur.reserved,
                "QuotaReserved",
                f"Quota reserved in ClusterQueue {wl.cq}, wait time since queued was {wait}s",
            )
        )
        conds.append(
            _cond(
                "Admitted",
                True,
                cur.reserved,
                "Admitted",
                f"The workload is admitted by ClusterQueue {wl.cq}",
            )
        )
    else:
        since = cur.end if cur_evicted and cur.end is not None else cur.queued
        conds.append(
            _cond(
                "QuotaReserved",
                False,
                since,
                "Pending",
                f"couldn't assign flavors to pod set main: insufficient unused quota "
                f"for nvidia.com/gpu in flavor {_flavor(wl.cq)}, "
                f"{max(cur.missing_gpus, wl.gpus_per_pod)} more needed",
            )
        )
    if evicted:
        last = evicted[-1]
        assert last.end is not None and last.preemptor is not None
        p = last.preemptor
        msg = (
            f"Preempted to accommodate a workload (UID: {p.wl_uid}, JobUID: {p.job_uid}) due "
            f"to prioritization in the ClusterQueue"
        )
        holds = last is cur
        t = last.end if holds or cur.reserved is None or cur.reserved > now else cur.reserved
        prefix = "" if holds else "Previously: "
        conds.append(_cond("Evicted", holds, t, "Preempted", prefix + msg))
        conds.append(_cond("Preempted", holds, t, "InClusterQueue", prefix + msg))
        if not holds:
            conds.append(_cond("Requeued", True, cur.queued, "Preempted", "Requeued by Kueue"))
    if cur.outcome in ("Succeeded", "Failed") and cur.end is not None and cur.end <= now:
        ok = cur.outcome == "Succeeded"
        conds.append(
            _cond(
                "Finished",
                True,
                cur.end,
                "Succeeded" if ok else "Failed",
                "Job finished successfully"
                if ok
                else "Job has reached the specified backoff limit",
            )
        )
    gpp = str(wl.gpus_per_pod)
    spec: dict[str, Any] = {
        "active": True,
        "podSets": [
            {
                "count": wl.pods,
                "name": "main",
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "image": wl.image,
                                "name": _CONTAINER,
                                "resources": {
                                    "limits": {"nvidia.com/gpu": gpp},
                                    "requests": {
                                        "cpu": str(12 * wl.gpus_per_pod),
                                        "memory": f"{120 * wl.gpus_per_pod}Gi",
                                        "nvidia.com/gpu": gpp,
                                    },
                                },
                            }
                        ],
                        "restartPolicy": "Never",
                    }
                },
            }
        ],
        "priority": wl.priority,
        "queueName": wl.queue,
    }
    if wl.priority_class:
        spec["priorityClassName"] = wl.priority_class
        spec["priorityClassSource"] = "kueue.x-k8s.io/workloadpriorityclass"
    status: dict[str, Any] = {"conditions": sorted(conds, key=lambda c: c["type"])}
    if reserved and not cur_evicted:
        status["admission"] = {
            "clusterQueue": wl.cq,
            "podSetAssignments": [
                {
                    "count": wl.pods,
                    "flavors": {"nvidia.com/gpu": _flavor(wl.cq)},
                    "name": "main",
                    "resourceUsage": {"nvidia.com/gpu": str(wl.gpus)},
                }
            ],
        }
    if evicted:
        status["schedulingStats"] = {
            "evictions": [{"count": len(evicted), "reason": "Preempted", "underlyingCause": ""}]
        }
    return {
        "apiVersion": _KUEUE_API,
        "kind": "Workload",
        "metadata": {
            "creationTimestamp": rfc3339(wl.created),
            "generation": 1,
            "labels": {"kueue.x-k8s.io/job-uid": wl.job_uid},
            "name": wl.wl_name,
            "namespace": wl.namespace,
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "Job",
                    "name": wl.job_name,
                    "uid": wl.job_uid,
                }
            ],
            "resourceVersion": str(400_000_000 + wl.created % 90_000_000),
            "uid": wl.wl_uid,
        },
        "spec": spec,
        "status": status,
    }


def write_workloads_day(
    path: Path, workloads: Sequence[K8sWorkload], day_start: int, day_end: int
) -> int:
    """Write one day's ``workloads_YYYY-MM-DD.json`` (``kubectl get workloads -A -o json`` at
    ``day_end - 1``): every Workload that existed during the day; returns the items written."""
    now = day_end - 1
    items = []
    for wl in workloads:
        if wl.created > now or not wl.attempts:
            continue
        gone = _released(wl.attempts[-1]) if wl.attempts[-1].outcome != "Evicted" else None
        if gone is not None and gone < day_start:
            continue
        items.append(((wl.namespace, wl.wl_name), _workload_obj(wl, now)))
    items.sort(key=lambda kv: kv[0])
    _write_json(path, _list_doc([o for _, o in items]), now)
    return len(items)


def _usage_at(workloads: Sequence[K8sWorkload], cq: str, now: int) -> tuple[int, int, int]:
    """(GPUs reserved, pending workloads, admitted workloads) of ``cq`` at ``now``."""
    used = pending = admitted = 0
    for wl in workloads:
        if wl.cq != cq:
            continue
        for att in wl.attempts:
            if att.queued > now:
                continue
            rel = _released(att)
            if att.reserved is not None and att.reserved <= now and (rel is None or rel > now):
                used += wl.gpus
                admitted += 1
            elif att.reserved is None or att.reserved > now:
                pending += 1
    return used, pending, admitted


def write_cluster_queues_day(
    path: Path,
    workloads: Sequence[K8sWorkload],
    quotas: dict[str, int],
    created: int,
    day_end: int,
    reclaim_any: frozenset[str] = frozenset(),
) -> int:
    """Write ``clusterqueues_YYYY-MM-DD.json`` (``kubectl get clusterqueues -o json`` at
    ``day_end - 1``): one ClusterQueue per queue of the simulation, ``nominalQuota`` = the
    quota it admitted by, both in cohort :data:`COHORT`; ``cq-prod`` lends nothing
    (:data:`PROD_LENDING_LIMIT`). Queues in ``reclaim_any`` have
    ``preemption.reclaimWithinCohort: Any`` (the others ``Never``). Returns the items written."""
    now = day_end - 1
    items = []
    for cq in sorted(quotas):
        q = quotas[cq]
        used, pending, admitted = _usage_at(workloads, cq, now)
        gpu: dict[str, Any] = {"name": "nvidia.com/gpu", "nominalQuota": q}
        if cq == "cq-prod":
            gpu["lendingLimit"] = PROD_LENDING_LIMIT
        flavor = _flavor(cq)
        items.append(
            {
                "apiVersion": _KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": {
                    "creationTimestamp": rfc3339(created),
                    "generation": 1,
                    "name": cq,
                    "resourceVersion": str(500_000_000 + now % 90_000_000),
                    "uid": str(uuid.uuid5(_NS, f"clusterqueue/{cq}")),
                },
                "spec": {
                    "cohort": COHORT,
                    "flavorFungibility": {
                        "whenCanBorrow": "Borrow",
                        "whenCanPreempt": "TryNextFlavor",
                    },
                    "namespaceSelector": {},
                    "preemption": {
                        "borrowWithinCohort": {"policy": "Never"},
                        "reclaimWithinCohort": "Any" if cq in reclaim_any else "Never",
                        "withinClusterQueue": "LowerPriority",
                    },
                    "queueingStrategy": "BestEffortFIFO",
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                            "flavors": [
                                {
                                    "name": flavor,
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": str(12 * q)},
                                        {"name": "memory", "nominalQuota": f"{120 * q}Gi"},
                                        gpu,
                                    ],
                                }
                            ],
                        }
                    ],
                    "stopPolicy": "None",
                },
                "status": {
                    "admittedWorkloads": admitted,
                    "conditions": [
                        _cond("Active", True, created, "Ready", "Can admit new workloads")
                    ],
                    "flavorsReservation": [
                        {
                            "name": flavor,
                            "resources": [
                                {"borrowed": "0", "name": "nvidia.com/gpu", "total": str(used)}
                            ],
                        }
                    ],
                    "flavorsUsage": [
                        {
                            "name": flavor,
                            "resources": [
                                {"borrowed": "0", "name": "nvidia.com/gpu", "total": str(used)}
                            ],
                        }
                    ],
                    "pendingWorkloads": pending,
                    "reservingWorkloads": admitted,
                },
            }
        )
    _write_json(path, _list_doc(items), day_end - 1)
    return len(items)


def write_local_queues_day(
    path: Path, workloads: Sequence[K8sWorkload], teams: Sequence[Any], created: int, day_end: int
) -> int:
    """Write ``localqueues_YYYY-MM-DD.json`` (``kubectl get localqueues -A -o json`` at
    ``day_end - 1``): ``lq-<team>`` in each team's namespace, feeding ``cq-<group>``. Returns
    the items written."""
    now = day_end - 1
    items = []
    for team in sorted(teams, key=lambda t: t.name):
        pending = admitted = 0
        for wl in workloads:
            if wl.team != team.name or not wl.attempts or wl.attempts[0].queued > now:
                continue
            att = [a for a in wl.attempts if a.queued <= now][-1]
            rel = _released(att)
            if att.reserved is not None and att.reserved <= now and (rel is None or rel > now):
                admitted += 1
            elif att.reserved is None or att.reserved > now:
                pending += 1
        items.append(
            {
                "apiVersion": _KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {
                    "creationTimestamp": rfc3339(created),
                    "generation": 1,
                    "name": f"lq-{team.name}",
                    "namespace": team.name,
                    "resourceVersion": str(600_000_000 + now % 90_000_000),
                    "uid": str(uuid.uuid5(_NS, f"localqueue/{team.name}")),
                },
                "spec": {"clusterQueue": f"cq-{team.group}", "stopPolicy": "None"},
                "status": {
                    "admittedWorkloads": admitted,
                    "pendingWorkloads": pending,
                    "reservingWorkloads": admitted,
                    "conditions": [
                        _cond(
                            "Active",
                            True,
                            created,
                            "Ready",
                            "Can submit new workloads to localQueue",
                        )
                    ],
                },
            }
        )
    _write_json(path, _list_doc(items), day_end - 1)
    return len(items)


def write_nodes_day(path: Path, nodes: Sequence[Any], created: int, day_end: int) -> int:
    """Write ``nodes_YYYY-MM-DD.json`` (``kubectl get nodes -o json`` at ``day_end - 1``): the
    cluster's GPU nodes with GPU feature discovery labels, the pool label and taint the pods
    select and tolerate, and ``nvidia.com/gpu`` capacity/allocatable. Returns nodes written."""
    items = []
    for n in sorted(nodes, key=lambda n: n.host):
        gpus = str(n.gpus)
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "creationTimestamp": rfc3339(created),
                    "labels": {
                        "cloud.example.com/gpu-pool": n.partition.removeprefix("cq-"),
                        "kubernetes.io/hostname": n.host,
                        "kubernetes.io/os": "linux",
                        "nvidia.com/gpu.count": gpus,
                        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                        "topology.kubernetes.io/rack": n.rack,
                    },
                    "name": n.host,
                    "resourceVersion": str(700_000_000 + (day_end - 1) % 90_000_000),
                    "uid": str(uuid.uuid5(_NS, f"node/{n.host}")),
                },
                "spec": {
                    "taints": [
                        {"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}
                    ]
                },
                "status": {
                    "allocatable": {"cpu": str(n.cpus), "memory": "1900Gi", "nvidia.com/gpu": gpus},
                    "capacity": {"cpu": str(n.cpus), "memory": "2000Gi", "nvidia.com/gpu": gpus},
                    "conditions": [
                        {
                            "lastHeartbeatTime": rfc3339(day_end - 30),
                            "lastTransitionTime": rfc3339(created + 120),
                            "message": "kubelet is posting ready status",
                            "reason": "KubeletReady",
                            "status": "True",
                            "type": "Ready",
                        }
                    ],
                    "nodeInfo": {
                        "architecture": "amd64",
                        "kubeletVersion": "v1.31.4",
                        "operatingSystem": "linux",
                    },
                },
            }
        )
    _write_json(path, _list_doc(items), day_end - 1)
    return len(items)
