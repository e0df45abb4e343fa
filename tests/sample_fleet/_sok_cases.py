"""Hand-computable Slurm-on-Kubernetes inputs for the build tests: pod JSON as ``kubectl get
pods -o json`` writes it (slurmd pods labelled as slurm-operator NodeSet pods), sacct PSV,
``scontrol --oneliner show nodes`` lines with the operator's ``PodInfo`` comment, ``scontrol show
job -d`` text and dcgm-exporter text. A pair: Slurm ``sc`` run in slurmd pods of Kubernetes
``kc`` (kn1, kn2: 8 H100 each, 57 600 GPU-s an hour). Times are hours after 2026-11-02 00:00 UTC."""

# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse

D0 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
HOST_LABEL = "nodeset.slinky.slurm.net/pod-hostname"
SC, KC = "sc", "kc"


def t(h: float) -> dt.datetime:
    return D0 + dt.timedelta(hours=h)


def rfc(x: dt.datetime) -> str:
    return x.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    ns,
    name,
    node,
    gpus,
    start,
    end=None,
    *,
    slurm_node=None,
    created=None,
    uid=None,
    deleted=None,
    labels=None,
):
    """A pod object as `kubectl get pods -o json` gives it. start/end in hours."""
    lab = dict(labels or {})
    if slurm_node:
        lab[HOST_LABEL] = slurm_node
        lab["app.kubernetes.io/instance"] = "slurm-worker-slinky"
        lab["app.kubernetes.io/name"] = "slurmd"
    created = start - 1 / 60 if created is None else created
    meta = {
        "creationTimestamp": rfc(t(created)),
        "labels": lab,
        "name": name,
        "namespace": ns,
        "uid": uid or f"uid-{ns}-{name}-{start}",
    }
    if deleted is not None:
        meta["deletionTimestamp"] = rfc(t(deleted))
    spec = {
        "containers": [
            {
                "name": "main",
                "image": "x",
                "resources": {
                    "limits": {"nvidia.com/gpu": str(gpus)},
                    "requests": {"nvidia.com/gpu": str(gpus)},
                },
            }
        ]
    }
    if node is None:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": spec,
            "status": {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "lastTransitionTime": rfc(t(created)),
                    }
                ],
            },
        }
    spec["nodeName"] = node
    if end is not None:
        state = {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": rfc(t(start)),
                "finishedAt": rfc(t(end)),
            }
        }
        phase = "Succeeded"
    else:
        state = {"running": {"startedAt": rfc(t(start))}}
        phase = "Running"
    status = {
        "phase": phase,
        "startTime": rfc(t(start)),
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc(t(start))}
        ],
        "containerStatuses": [
            {
                "name": "main",
                "restartCount": 0,
                "state": state,
                "ready": end is None,
                "started": end is None,
            }
        ],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


SACCT_FIELDS = (
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


def ep(h: float) -> int:
    return int(t(h).timestamp())


def sacct(jobs) -> str:
    """jobs: (id, account, gpus, start_h, end_h, nodelist, state)."""
    out = ["|".join(SACCT_FIELDS)]
    for jid, acct, gpus, s, e, nl, state in jobs:
        nn = nl.count(",") + 1
        tres = f"billing=8,cpu=8,gres/gpu={gpus},mem=64G,node={nn}"
        end = "Unknown" if e is None else ep(e)
        st = state if e is not None else "RUNNING"
        out.append(
            "|".join(
                str(v)
                for v in (
                    jid,
                    jid,
                    SC,
                    "sok",
                    acct,
                    "u",
                    ep(s) - 60,
                    ep(s) - 60,
                    ep(s),
                    end,
                    st,
                    nn,
                    8,
                    tres,
                    tres,
                    nl,
                    f"j{jid}",
                )
            )
        )
    return "\n".join(out) + "\n"


def comment_line(slurm_node, ns, podname, k8s_node, gpus=8):
    info = json.dumps(
        {
            "namespace": ns,
            "podName": podname,
            "node": k8s_node,
            "nodeSetName": "slurm-worker-slinky",
            "nodeSetUID": "3f1c2a4e-8b0d-4d6e-9a51-0c7e2b9d4f10",
        },
        separators=(",", ":"),
    )
    return (
        f"NodeName={slurm_node} Arch=x86_64 CPUTot=64 Gres=gpu:h100:{gpus} "
        f"NodeHostName={slurm_node} RealMemory=512000 State=IDLE Partitions=sok "
        f"CfgTRES=cpu=64,mem=500G,billing=64,gres/gpu={gpus} Comment={info}"
    )


METRIC = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


def dcgm(samples) -> str:
    """samples: (host, gpu, ns, pod, value, hour[, metric])."""
    lines = []
    by_metric: dict[str, list[str]] = {}
    for s in samples:
        host, g, ns, p, v, h = s[:6]
        metric = s[6] if len(s) > 6 else METRIC
        ms = int(t(h).timestamp() * 1000)
        by_metric.setdefault(metric, []).append(
            f'{metric}{{gpu="{g}",UUID="GPU-{host}-{g}",device="nvidia{g}",'
            f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",container="c",'
            f'namespace="{ns}",pod="{p}"}} {v} {ms}'
        )
    for metric, ls in by_metric.items():
        lines += [f"# HELP {metric} x", f"# TYPE {metric} gauge", *ls]
    return "\n".join(lines) + "\n"


REGISTRY = """teams:
  - team: physics
    share: 0.5
    slurm_accounts: [physics]
    k8s_namespaces: [physics]
  - team: ml
    share: 0.3
    slurm_accounts: [mlacct]
    k8s_namespaces: [ml]
  - team: platform
    share: 0.2
    slurm_accounts: [platform]
    k8s_namespaces: [slurm]
"""


def setup(root: Path, *, k8s_nodes=(("kn1", 8), ("kn2", 8))) -> Path:
    """A pair's ``goodput.toml``, registry and ``kc`` inventory under ``root``."""
    (root / "inventory").mkdir(parents=True)
    (root / "in").mkdir()
    (root / "inventory" / f"{KC}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\n"
        + "".join(f"{h},{g},h100,default,r1\n" for h, g in k8s_nodes)
    )
    (root / "registry.yaml").write_text(REGISTRY)
    (root / "goodput.toml").write_text(
        f'default_cluster = "{SC}"\n[warehouse]\npath = "w.duckdb"\n'
        'inputs = "inputs"\ninventory = "inventory"\nregistry = "registry.yaml"\n'
        f'[[clusters]]\nname = "{SC}"\nscheduler = "slurm"\nslurm_on_k8s = "A"\n'
        f'kubernetes_cluster = "{KC}"\n'
        f'[[clusters]]\nname = "{KC}"\nscheduler = "kubernetes"\n'
    )
    return root


def write(root: Path, fname: str, text: str) -> Path:
    p = root / "in" / fname
    p.write_text(text)
    return p


def pods_file(root: Path, fname: str, items) -> Path:
    return write(
        root,
        fname,
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": items,
                "metadata": {"resourceVersion": ""},
            },
            indent=1,
        ),
    )


KIND_CLUSTER = {"sacct": SC, "slurm-state": SC, "k8s-pods": KC, "dcgm": KC}


def load(root: Path, files, *, full=True, fresh=True):
    cfg = load_config(root / "goodput.toml")
    with connect(cfg.warehouse_path) as con:
        if fresh:
            init_warehouse(con)
        for kind, f in files:
            ingest_file(con, kind, f, IngestOptions(cluster=KIND_CLUSTER[kind]))
        rebuild(con, cfg, full=full)
    return cfg


def q(cfg, sql: str) -> pl.DataFrame:
    with connect(cfg.warehouse_path, read_only=True) as con:
        cur = con.execute("SET TimeZone='UTC'")
        cur = con.execute(sql)
        names = [d[0] for d in cur.description or []]
        return pl.DataFrame(cur.fetchall(), schema=names, orient="row")


def scontrol_job(jid, start_h, end_h, node, gpus, idx, acct="physics"):
    s = (D0 + dt.timedelta(hours=start_h)).strftime("%Y-%m-%dT%H:%M:%S")
    e = (D0 + dt.timedelta(hours=end_h)).strftime("%Y-%m-%dT%H:%M:%S")
    return f"""JobId={jid} JobName=j{jid}
   UserId=u(1) GroupId=u(1) MCS_label=N/A
   Priority=1 Nice=0 Account={acct} QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   SubmitTime={s} EligibleTime={s}
   StartTime={s} EndTime={e} Deadline=N/A
   Partition=sok AllocNode:Sid=x:1
   NodeList={node}
   BatchHost={node}
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=2000M,node=1,billing=1,gres/gpu={gpus}
   JOB_GRES=gpu:{gpus}
     Nodes={node} CPU_IDs=1 Mem=2000 GRES=gpu:{gpus}(IDX:{idx})
   TresPerNode=gres:gpu:{gpus}
"""
