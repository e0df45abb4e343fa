"""Kubernetes exports: ``kubectl get events -A -o json`` and ``kubectl get pods -A -o json``.

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
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.sample_fleet._k8s_sim import K8sAttempt, K8sPod, K8sWorkload

__all__ = ["K8sEvent", "build_events", "write_events_day", "write_pods_day"]

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


def _pod_events(wl: K8sWorkload, att: K8sAttempt, pod: K8sPod, pools: dict[str, list[str]],
                n_nodes: int, win_end: int) -> list[K8sEvent]:
    ns = wl.namespace
    ev: list[K8sEvent] = []

    def pe(t: int, reason: str, msg: str, *, kind: str = "Normal", comp: str = "kubelet",
           container: bool = True) -> None:
        host = (pod.node or "") if comp == "kubelet" else ""
        ev.append(K8sEvent(t, t, False, 0, ns, "Pod", "v1", pod.name, pod.uid, reason, msg, kind,
                           comp, host, f"spec.containers{{{_CONTAINER}}}" if container else ""))

    pending_until = pod.bound if pod.bound is not None else (pod.deleted or win_end)
    if pending_until - pod.created > 2:
        pool = len(pools[wl.cq])
        other = n_nodes - pool
        msg = (f"0/{n_nodes} nodes are available: {pool} Insufficient nvidia.com/gpu, {other} "
               f"node(s) didn't match Pod's node affinity/selector. preemption: 0/{n_nodes} nodes "
               f"are available: {pool} No preemption victims found for incoming pod, {other} "
               "Preemption is not helpful for scheduling.")
        ev.append(K8sEvent(pod.created + 1, pending_until - 1, True, _SCHED_RETRY_S, ns, "Pod",
                           "v1", pod.name, pod.uid, "FailedScheduling", msg, "Warning",
                           "default-scheduler"))
    if pod.bound is None or pod.node is None:
        return ev
    pe(pod.bound, "Scheduled", f"Successfully assigned {ns}/{pod.name} to {pod.node}",
       comp="default-scheduler", container=False)
    if pod.started is None:
        return ev
    pull_start = pod.bound + 2
    if pod.pull_s > 0:
        pe(pull_start, "Pulling", f'Pulling image "{wl.image}"')
        pe(pull_start + math.ceil(pod.pull_s), "Pulled",
           f'Successfully pulled image "{wl.image}" in {pod.pull_s:.3f}s '
           f"({pod.pull_s:.3f}s including waiting)")
    else:
        pe(pull_start, "Pulled", f'Container image "{wl.image}" already present on machine')
    pe(pod.started - 1, "Created", f"Created container {_CONTAINER}")
    pe(pod.started, "Started", f"Started container {_CONTAINER}")
    if pod.killed is not None:
        pe(pod.killed, "Killing", f"Stopping container {_CONTAINER}")
    return ev


def build_events(workloads: Sequence[K8sWorkload], pools: dict[str, list[str]], n_nodes: int,
                 win_end: int) -> list[K8sEvent]:
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

        def we(t: int, reason: str, msg: str, comp: str = "kueue-admission",
               w: K8sWorkload = wl) -> None:
            out.append(K8sEvent(t, t, False, 0, w.namespace, "Workload", "kueue.x-k8s.io/v1beta1",
                                w.wl_name, w.wl_uid, reason, msg, "Normal", comp))

        def je(t: int, reason: str, msg: str, kind: str = "Normal",
               comp: str = "job-controller", w: K8sWorkload = wl) -> None:
            out.append(K8sEvent(t, t, False, 0, w.namespace, "Job", "batch/v1", w.job_name,
                                w.job_uid, reason, msg, kind, comp))

        je(wl.created, "CreatedWorkload", f"Created Workload: {ns}/{wl.wl_name}",
           comp="kueue-job-controller")
        for att in wl.attempts:
            waited_until = att.reserved if att.reserved is not None else win_end
            if waited_until - att.queued > 1:
                missing = max(att.missing_gpus, wl.gpus_per_pod)
                out.append(K8sEvent(
                    att.queued + 1, waited_until - 1, True, _KUEUE_RETRY_S, ns, "Workload",
                    "kueue.x-k8s.io/v1beta1", wl.wl_name, wl.wl_uid, "Pending",
                    f"couldn't assign flavors to pod set main: insufficient unused quota for "
                    f"nvidia.com/gpu in flavor {flavor}, {missing} more needed", "Normal",
                    "kueue-admission"))
            if att.reserved is None:
                continue
            we(att.reserved, "QuotaReserved", f"Quota reserved in ClusterQueue {wl.cq}, wait time "
                                              f"since queued was {att.reserved - att.queued}s")
            we(att.reserved, "Admitted", f"Admitted by ClusterQueue {wl.cq}, wait time since "
                                         "reservation was 0s")
            je(att.reserved, "Started", f"Admitted by clusterQueue {wl.cq}",
               comp="kueue-job-controller")
            if att.index > 0:
                je(att.reserved, "Resumed", "Job resumed")
            for pod in att.pods:
                je(pod.created, "SuccessfulCreate", f"Created pod: {pod.name}")
                out.extend(_pod_events(wl, att, pod, pools, n_nodes, win_end))
            if att.outcome == "Evicted" and att.end is not None and att.preemptor is not None:
                p = att.preemptor
                msg = (f"Preempted to accommodate a workload (UID: {p.wl_uid}, JobUID: "
                       f"{p.job_uid}) due to prioritization in the ClusterQueue")
                we(att.end, "EvictedDueToPreempted", msg, comp="kueue-workload-controller")
                we(att.end, "Preempted", msg)
                je(att.end, "Stopped", msg, comp="kueue-job-controller")
                je(att.end, "Suspended", "Job suspended")
                for pod in att.pods:
                    je(att.end, "SuccessfulDelete", f"Deleted pod: {pod.name}")
            elif att.outcome == "Succeeded" and att.end is not None:
                je(att.end, "Completed", "Job completed")
            elif att.outcome == "Failed" and att.end is not None:
                je(att.end, "BackoffLimitExceeded", "Job has reached the specified backoff limit",
                   kind="Warning")
    return out


def _event_obj(ev: K8sEvent, first: int, last: int, count: int, seq: int) -> dict[str, Any]:
    name = f"{ev.name}.{first * 1_000_000_000 + seq:x}"
    involved: dict[str, Any] = {"apiVersion": ev.api_version, "kind": ev.kind, "name": ev.name,
                                "namespace": ev.namespace,
                                "resourceVersion": str(100_000 + first % 90_000_000),
                                "uid": ev.uid}
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


def write_events_day(path: Path, events: Sequence[K8sEvent], day_start: int,
                     day_end: int) -> int:
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
    doc = {"apiVersion": "v1", "items": [o for _, o in items], "kind": "List",
           "metadata": {"resourceVersion": ""}}
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
        "ownerReferences": [{"apiVersion": "batch/v1", "blockOwnerDeletion": True,
                             "controller": True, "kind": "Job", "name": wl.job_name,
                             "uid": wl.job_uid}],
        "resourceVersion": str(300_000_000 + pod.created % 90_000_000),
        "uid": pod.uid,
    }
    if pod.deleted is not None and pod.deleted <= now:
        meta["deletionGracePeriodSeconds"] = 30
        meta["deletionTimestamp"] = rfc3339(pod.deleted)
    res = {"cpu": str(12 * wl.gpus_per_pod), "memory": f"{120 * wl.gpus_per_pod}Gi",
           "nvidia.com/gpu": gpus}
    spec: dict[str, Any] = {
        "containers": [{
            "image": wl.image,
            "imagePullPolicy": "IfNotPresent",
            "name": _CONTAINER,
            "resources": {"limits": {"nvidia.com/gpu": gpus}, "requests": res},
        }],
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
        status["conditions"] = [{
            "lastProbeTime": None, "lastTransitionTime": rfc3339(pod.created + 1),
            "message": "0/8 nodes are available: insufficient nvidia.com/gpu.",
            "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
                "status": status}
    assert pod.bound is not None
    spec["nodeName"] = pod.node
    conds = [{"lastProbeTime": None, "lastTransitionTime": rfc3339(pod.bound),
              "status": "True", "type": "PodScheduled"}]
    started = pod.started is not None and pod.started <= now
    finished = pod.finished is not None and pod.finished <= now
    digest = uuid.uuid5(_NS, wl.image).hex * 2
    cs: dict[str, Any] = {"image": wl.image, "name": _CONTAINER, "restartCount": 0,
                          "imageID": f"{wl.image.split(':')[0]}@sha256:{digest}"}
    if started:
        assert pod.started is not None
        cs["containerID"] = f"containerd://{uuid.uuid5(_NS, pod.uid).hex}" \
                            f"{uuid.uuid5(_NS, pod.name).hex}"
    if finished:
        assert pod.finished is not None and pod.started is not None
        cs.update(ready=False, started=False, state={"terminated": {
            "containerID": cs["containerID"], "exitCode": pod.exit_code,
            "finishedAt": rfc3339(pod.finished), "reason": pod.reason,
            "startedAt": rfc3339(pod.started)}})
        phase = "Succeeded" if pod.exit_code == 0 else "Failed"
        conds.append({"lastProbeTime": None, "lastTransitionTime": rfc3339(pod.finished),
                      "reason": "PodCompleted" if phase == "Succeeded" else "PodFailed",
                      "status": "False", "type": "Ready"})
    elif started:
        assert pod.started is not None
        cs.update(ready=True, started=True,
                  state={"running": {"startedAt": rfc3339(pod.started)}})
        phase = "Running"
        conds.append({"lastProbeTime": None, "lastTransitionTime": rfc3339(pod.started),
                      "status": "True", "type": "Ready"})
    elif pod.deleted is not None and pod.deleted <= now:
        cs.update(ready=False, started=False, state={"terminated": {
            "exitCode": 137, "finishedAt": rfc3339(pod.deleted),
            "reason": "ContainerStatusUnknown", "startedAt": None}})
        phase = "Failed"
    else:
        cs.update(ready=False, started=False,
                  state={"waiting": {"reason": "ContainerCreating"}})
        phase = "Pending"
    status.update(
        conditions=conds, containerStatuses=[cs], hostIP=_ip(pod.node or "", 0),
        phase=phase, podIP=_ip(pod.node or "", 1 + pod.index + 10 * (hash_small(pod.uid))),
        startTime=rfc3339(pod.bound + 1),
    )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def hash_small(text: str) -> int:
    """A small stable number from a string (for pod IPs)."""
    return int(uuid.uuid5(_NS, text).hex[:4], 16) % 20


def _ip(host: str, k: int) -> str:
    n = int(host.rsplit("-", 1)[-1]) if host else 0
    return f"10.42.{n}.{k}" if k else f"10.0.1.{10 + n}"


def write_pods_day(path: Path, workloads: Sequence[K8sWorkload], pools: dict[str, list[str]],
                   day_start: int, day_end: int) -> int:
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
    doc = {"apiVersion": "v1", "items": [o for _, o in items], "kind": "List",
           "metadata": {"resourceVersion": ""}}
    path.write_text(json.dumps(doc, indent=4, sort_keys=True) + "\n", encoding="utf-8")
    return len(items)
