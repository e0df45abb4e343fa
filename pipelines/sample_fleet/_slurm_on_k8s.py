"""The sample fleet's Slurm-on-Kubernetes pair: Slurm cluster ``sok-c`` run in slurm-operator
NodeSet pods (pattern A) on Kubernetes cluster ``k8s-c``, with planted findings.

Its own RNG stream (``random.Random("goodput-sample/<seed>/slurm-on-k8s")``), so the other
clusters' inputs stay byte-identical. Written under ``out_dir``:

- ``inventory/k8s-c.csv``: 4 Kubernetes nodes × 8 h100 (the machines);
- ``inputs/k8s-c/k8s/pods_<day>.json``: the slurmd pods (label
  ``nodeset.slinky.slurm.net/pod-hostname``), native pods on ``kc-node-04`` and pods pending for
  GPUs, as ``kubectl get pods -o json`` snapshots at each UTC day's end;
- ``inputs/sok-c/sacct/sacct_<day>.psv``: the Slurm jobs inside the slurmd pods (epoch times);
- ``inputs/sok-c/slurm_state/node_comments_<stamp>.txt``: ``scontrol show nodes`` polled every 6
  hours, each node's ``Comment`` the PodInfo JSON slurm-operator writes;
- ``planted_slurm_on_k8s.json``: the planted findings and the naive and reconciled GPU-seconds.

Planted (by name): ``slurmd_held_idle`` (sok-0 kept empty 10:00–14:00 on the first day while
two GPU pods pend), ``gres_mismatch`` (a job with 8 GPUs on sok-1, whose pod holds 6),
``node_migration`` (sok-2's StatefulSet pod recreated on kc-node-04 at 12:00 on the second day
while a job runs on sok-2).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["K8S_CLUSTER", "SOK_CLUSTER", "sok_files", "write_slurm_on_k8s"]

SOK_CLUSTER = "sok-c"
K8S_CLUSTER = "k8s-c"
_NS = uuid.UUID("6a1f3c2e-9d4b-4c8e-a7f0-2b5d8e1c3f90")
_HOSTNAME = "nodeset.slinky.slurm.net/pod-hostname"
_NODESET = "slurm-worker-sok"
_NODESET_UID = str(uuid.uuid5(_NS, _NODESET))
_K8S_NODES = ("kc-node-01", "kc-node-02", "kc-node-03", "kc-node-04")
_GPUS = 8
#: The fewest days the pair simulates: its planted findings lie on its first two days.
MIN_DAYS = 2


def sok_files(days: int) -> int:
    """Files :func:`write_slurm_on_k8s` writes for a ``days``-day window: the inventory, per
    day (at least :data:`MIN_DAYS`) the pods, sacct and 4 polls, and the planted file."""
    return 1 + max(days, MIN_DAYS) * (1 + 1 + 4) + 1


_SACCT_FIELDS = (
    "JobID",
    "JobIDRaw",
    "Cluster",
    "Partition",
    "Account",
    "User",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "State",
    "NNodes",
    "NCPUS",
    "ReqTRES",
    "AllocTRES",
    "NodeList",
    "JobName",
)


@dataclass(frozen=True)
class _Pod:
    namespace: str
    name: str
    node: str | None
    gpus: int
    created: int
    start: int | None
    end: int | None
    labels: dict[str, str]


@dataclass(frozen=True)
class _Job:
    job_id: int
    node: str
    gpus: int
    submit: int
    start: int
    end: int
    account: str
    user: str


def _rfc(t: int) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod_obj(p: _Pod, now: int) -> dict[str, Any]:
    uid = str(uuid.uuid5(_NS, f"{p.namespace}/{p.name}/{p.created}"))
    meta = {
        "creationTimestamp": _rfc(p.created),
        "labels": p.labels,
        "name": p.name,
        "namespace": p.namespace,
        "uid": uid,
    }
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "ghcr.io/slinkyproject/slurmd:25.05",
                        "resources": {"limits": {"nvidia.com/gpu": str(p.gpus)},
                                      "requests": {"nvidia.com/gpu": str(p.gpus)}}}],
    }  # fmt: skip
    if p.start is None or p.start > now:
        status = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": _rfc(p.created + 1),
                    "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
                }
            ],
        }
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
    spec["nodeName"] = p.node
    done = p.end is not None and p.end <= now
    state = (
        {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": _rfc(p.start),
                "finishedAt": _rfc(p.end),
            }
        }
        if done and p.end is not None
        else {"running": {"startedAt": _rfc(p.start)}}
    )
    status = {
        "phase": "Succeeded" if done else "Running",
        "startTime": _rfc(p.start),
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": _rfc(p.start)}
        ],
        "containerStatuses": [
            {
                "name": "main",
                "restartCount": 0,
                "state": state,
                "ready": not done,
                "started": not done,
            }
        ],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _slurmd(name: str, node: str, gpus: int, start: int, end: int) -> _Pod:
    host = name.removeprefix(f"{_NODESET}-")
    labels = {
        _HOSTNAME: f"sok-{host}",
        "app.kubernetes.io/instance": _NODESET,
        "app.kubernetes.io/name": "slurmd",
    }
    return _Pod("slurm", name, node, gpus, start - 60, start, end, labels)


def _simulate(seed: int, t0: int, days: int) -> tuple[list[_Pod], list[_Job], dict[str, Any]]:
    rng = random.Random(f"goodput-sample/{seed}/slurm-on-k8s")
    # the slurmd pods stop 10 minutes before the last snapshot, so every span is closed in it
    t1 = t0 + days * 86400 - 600
    mig = t0 + 86400 + 12 * 3600  # sok-2's pod is recreated on kc-node-04 then
    pods = [
        _slurmd(f"{_NODESET}-0", "kc-node-01", 8, t0, t1),
        _slurmd(f"{_NODESET}-1", "kc-node-02", 6, t0, t1),
        _slurmd(f"{_NODESET}-2", "kc-node-03", 8, t0, mig),
        _slurmd(f"{_NODESET}-2", "kc-node-04", 8, mig, t1),
    ]
    # native pods on kc-node-04 until sok-2 moves there (each 1-4 GPUs, 1-3 h, back to back)
    t, i = t0, 0
    while t < mig - 3600:
        dur = rng.randrange(3600, 3 * 3600, 300)
        end = min(t + dur, mig)
        pods.append(
            _Pod(
                "infra",
                f"serve-{i}",
                "kc-node-04",
                rng.choice((1, 2, 4)),
                t,
                t,
                end,
                {"app": "serve"},
            )
        )
        t, i = end + rng.randrange(0, 1800, 300), i + 1
    # planted: two GPU pods pend 10:00-14:00 on the first day (kc-node-04 is busy), while sok-0
    # is kept empty then; they are scheduled on kc-node-04 at 14:00 for an hour
    held_from, held_to = t0 + 10 * 3600, t0 + 14 * 3600
    for k in range(2):
        pods.append(
            _Pod("infra", f"burst-{k}", "kc-node-04", 1, held_from, None, None, {"app": "burst"})
        )
    jobs: list[_Job] = []
    jid = 5000
    caps = {"sok-0": 8, "sok-1": 6, "sok-2": 8}
    for node, cap in caps.items():
        t = t0 + rng.randrange(0, 1800, 60)
        while True:
            dur = rng.randrange(1800, 5 * 3600, 60)
            if node == "sok-0" and t < held_to and t + dur > held_from:
                t = held_to + rng.randrange(0, 900, 60)  # planted idle window stays empty
                continue
            if t + dur > t1 - 600:
                break
            gpus = rng.choice(tuple(g for g in (2, 4, 6, 8) if g <= cap))
            jid += 1
            # accounts of the registry's teams (the sample registry maps account = team)
            team = rng.choice((("vision", "alice"), ("recsys", "zoe")))
            jobs.append(_Job(jid, node, gpus, t - rng.randrange(60, 1800, 60), t, t + dur, *team))
            t = t + dur + rng.randrange(0, 3600, 300)
    # planted GRES mismatch: 8 GPUs on sok-1 (pod holds 6), on the second day 02:00-04:00, with
    # sok-1's own jobs then moved out of the way
    g0, g1 = t0 + 86400 + 2 * 3600, t0 + 86400 + 4 * 3600
    jobs = [j for j in jobs if not (j.node == "sok-1" and j.start < g1 and j.end > g0)]
    jobs.append(_Job(6001, "sok-1", 8, g0 - 300, g0, g1, "vision", "alice"))
    # planted migration: a job on sok-2 runs across the pod's move (11:00-13:00, second day)
    jobs = [
        j for j in jobs if not (j.node == "sok-2" and j.start < mig + 3600 and j.end > mig - 3600)
    ]
    jobs.append(_Job(6002, "sok-2", 4, mig - 3900, mig - 3600, mig + 3600, "recsys", "zoe"))
    jobs.sort(key=lambda j: (j.start, j.job_id))
    planted = {
        "slurmd_held_idle": {"k8s_node": "kc-node-01", "slurm_node": "sok-0",
                             "from": _rfc(held_from), "to": _rfc(held_to)},
        "gres_mismatch": {"job_id": "6001", "slurm_node": "sok-1", "k8s_node": "kc-node-02",
                          "excess_gpu_s": 2 * (g1 - g0)},
        "node_migration": {"job_id": "6002", "slurm_node": "sok-2",
                           "k8s_nodes": ["kc-node-03", "kc-node-04"], "at": _rfc(mig)},
    }  # fmt: skip
    # the burst pods then run 14:00-15:00 on kc-node-04 (serve pods hold at most 4 of its 8)
    pods = [
        _Pod(p.namespace, p.name, p.node, p.gpus, p.created, held_to, held_to + 3600, p.labels)
        if p.name.startswith("burst-")
        else p
        for p in pods
    ]
    naive_slurm = sum(j.gpus * (j.end - j.start) for j in jobs)
    pod_s = [(p, p.gpus * ((p.end or t1) - p.start)) for p in pods if p.start is not None]
    naive_k8s = sum(s for _p, s in pod_s)
    native = sum(s for p, s in pod_s if _HOSTNAME not in p.labels)
    planted["gpu_seconds"] = {
        "naive": naive_slurm + naive_k8s,
        "reconciled": native + naive_slurm,
        "double_count_rate": (naive_slurm + naive_k8s - native - naive_slurm)
        / (native + naive_slurm),
    }
    return pods, jobs, planted


def _node_comments(pods: list[_Pod], at: int) -> str:
    lines = []
    for p in sorted(pods, key=lambda p: p.labels.get(_HOSTNAME, "")):
        host = p.labels.get(_HOSTNAME)
        if host is None or p.start is None or not (p.start <= at < (p.end or at + 1)):
            continue
        info = json.dumps(
            {
                "namespace": p.namespace,
                "podName": p.name,
                "node": p.node,
                "nodeSetName": _NODESET,
                "nodeSetUID": _NODESET_UID,
            },
            separators=(",", ":"),
        )
        lines.append(
            f"NodeName={host} Arch=x86_64 CPUTot=64 Gres=gpu:h100:{p.gpus} "
            f"NodeHostName={host} RealMemory=512000 State=IDLE Partitions=sok "
            f"CfgTRES=cpu=64,mem=500G,billing=64,gres/gpu={p.gpus} Comment={info}"
        )
    return "\n".join(lines) + "\n"


def _sacct_day(jobs: list[_Job], a: int, b: int) -> str:
    out = ["|".join(_SACCT_FIELDS)]
    for j in jobs:
        if not (j.start < b and j.end >= a) or not (a <= j.end < b):
            continue  # a job is written on the UTC day it ended
        tres = f"billing=8,cpu=8,gres/gpu={j.gpus},mem=64G,node=1"
        out.append("|".join(str(v) for v in (
            j.job_id, j.job_id, SOK_CLUSTER, "sok", j.account, j.user, j.submit, j.submit,
            j.start, j.end, "COMPLETED", 1, 8, tres, tres, j.node, f"sok-{j.job_id}",
        )))  # fmt: skip
    return "\n".join(out) + "\n"


def write_slurm_on_k8s(
    out_dir: str | Path, *, seed: int, start: dt.date, days: int = MIN_DAYS
) -> dict[str, Any]:
    """Write the ``sok-c`` / ``k8s-c`` inputs (module docstring) for ``days`` UTC days (at
    least :data:`MIN_DAYS`), so the pair covers the fleet's window like its other clusters.

    Args:
        out_dir: the sample fleet's folder.
        seed: the fleet's seed (this pair draws from its own stream of it).
        start: the first UTC day.
        days: the fleet's window in days.

    Returns:
        The planted findings with the naive and reconciled GPU-seconds (also written to
        ``planted_slurm_on_k8s.json``).
    """
    out = Path(out_dir)
    t0 = int(dt.datetime.combine(start, dt.time(), dt.UTC).timestamp())
    days = max(days, MIN_DAYS)
    pods, jobs, planted = _simulate(seed, t0, days)
    k_dir, s_dir = out / "inputs" / K8S_CLUSTER / "k8s", out / "inputs" / SOK_CLUSTER
    for folder in (out / "inventory", k_dir, s_dir / "sacct", s_dir / "slurm_state"):
        folder.mkdir(parents=True, exist_ok=True)
    (out / "inventory" / f"{K8S_CLUSTER}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\n"
        + "".join(f"{n},{_GPUS},h100,default,rack-1\n" for n in _K8S_NODES),
        encoding="utf-8",
    )
    for d in range(days):
        a, b = t0 + d * 86400, t0 + (d + 1) * 86400
        day = (start + dt.timedelta(days=d)).isoformat()
        items = [
            _pod_obj(p, b - 1)
            for p in sorted(pods, key=lambda p: (p.namespace, p.name, p.created))
            if p.created < b and ((p.end or b) >= a)
        ]
        doc = {
            "apiVersion": "v1",
            "items": items,
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }
        (k_dir / f"pods_{day}.json").write_text(
            json.dumps(doc, indent=4, sort_keys=True) + "\n", encoding="utf-8"
        )
        (s_dir / "sacct" / f"sacct_{day}.psv").write_text(_sacct_day(jobs, a, b), encoding="utf-8")
        for h in range(0, 24, 6):
            at = a + h * 3600
            stamp = dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H%M%SZ")
            (s_dir / "slurm_state" / f"node_comments_{stamp}.txt").write_text(
                _node_comments(pods, at), encoding="utf-8"
            )
    (out / "planted_slurm_on_k8s.json").write_text(
        json.dumps(planted, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return planted
