"""Real Slurm 22.05 as Slurm on Kubernetes: node comments and external-job comments read back by
the live sources, then every GPU-second counted once.

The module starts a cluster of its own (as ``test_slurm_gres_map.py`` does: jobs submitted on the
session's ``slurm_cluster`` after its mix would enter the day ``test_slurm_pipeline.py`` compares
with sreport). On it:

* ``scontrol update NodeName=gpu-001|gpu-002 Comment=<PodInfo JSON>`` writes what Slinky's
  slurm-operator writes (``{"namespace","podName","node","nodeSetName","nodeSetUID"}``): the
  slurmd pods ``slurm/slurm-worker-gpu-00N`` run on Kubernetes nodes ``kn1``/``kn2``;
* job A (4 GPUs on gpu-001) is an ordinary Slurm job; job B (2 GPUs on gpu-002) is made an
  external-style job with ``scontrol update JobId=B AdminComment={"pods":["ml/ext-1"]}`` as
  slurm-bridge sets it;
* the live sources read them back: :class:`SlurmStateCliSource` ``kinds=["node_comments"]`` and
  :class:`SacctCliSource` (whose field list carries AdminComment and MCSLabel).

The pods are fixtures made to match: each slurmd pod holds 6 of its Kubernetes node's 8 GPUs from
before the jobs to the cut-off, and pod ``ml/ext-1`` (2 GPUs, label
``scheduler.slinky.slurm.net/slurm-jobid=B``) runs exactly while job B ran. Both layers' GPU-time
sums must balance to 1e-9 in every node-hour and the double-count rate must equal the one
computed by hand from the jobs' own times.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from pipelines._parse_result import ParseResult
from pipelines.core.slurm_on_k8s import (
    POD_HOSTNAME_LABEL,
    SLURM_JOBID_LABEL,
    SlurmOnK8s,
    sacct_notes,
    slurm_on_k8s_hourly,
)
from pipelines.slurm._sacct_parse import parse_sacct
from pipelines.slurm._scontrol_node_comments import parse_node_comments
from pipelines.slurm.resources import SacctCliSource, SlurmStateCliSource
from tests.integration.slurm import CLUSTER_NAME, SlurmTestCluster
from tests.integration.slurm.private import private_cluster

pytestmark = pytest.mark.slurm

_UTC = pl.Datetime("us", "UTC")
#: slurmd pod → (Slurm node, Kubernetes node); each pod holds 6 GPUs of an 8-GPU machine.
_SLURMD = {"slurm-worker-gpu-001": ("gpu-001", "kn1"), "slurm-worker-gpu-002": ("gpu-002", "kn2")}
_HOLD = 6.0


def _pod_info(pod: str, k8s_node: str) -> str:
    return json.dumps(
        {"namespace": "slurm", "podName": pod, "node": k8s_node,
         "nodeSetName": "slurm-worker", "nodeSetUID": "0b7e6c1a-5d2f-4e8b-9c3d-1f2a3b4c5d6e"},
        separators=(",", ":"),
    )  # fmt: skip


@dataclass(frozen=True)
class SokRun:
    """What the cluster said: the polled comments, sacct's rows, the pods and the cut-off."""

    comments: ParseResult
    sacct: pl.DataFrame
    job_a: str
    job_b: str
    pods_from: dt.datetime
    as_of: dt.datetime


@pytest.fixture(scope="module")
def sok_cluster() -> Iterator[SlurmTestCluster]:
    """A started 4-node, 32-GPU cluster of this module's own, stopped when the module ends."""
    with private_cluster("goodput-slurm-sok-") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def sok_run(sok_cluster: SlurmTestCluster, tmp_path_factory: pytest.TempPathFactory) -> SokRun:
    """Write the node comments, run jobs A and B, read everything back through the live
    sources."""
    cluster = sok_cluster
    spool = tmp_path_factory.mktemp("sok-spool")
    for pod, (node, k8s_node) in _SLURMD.items():
        cluster.run(
            ["scontrol", "update", f"NodeName={node}", f"Comment={_pod_info(pod, k8s_node)}"]
        )
    pods_from = cluster.now().replace(microsecond=0)
    state = SlurmStateCliSource(
        spool_dir=str(spool), slurm_conf=str(cluster.slurm_conf), env=cluster.env(),
        kinds=["node_comments"],
    )  # fmt: skip
    (path,) = state.fetch(CLUSTER_NAME, pods_from.date().isoformat())
    comments = parse_node_comments(path, cluster=CLUSTER_NAME, polled_at=pods_from)
    job_a = cluster.sbatch("sleep 6", user="alice", job_name="sok-a", gpus_per_node=4,
                           extra=["--nodelist=gpu-001"])  # fmt: skip
    job_b = cluster.sbatch("sleep 6", user="bob", job_name="sok-b", gpus_per_node=2,
                           extra=["--nodelist=gpu-002", "--hold"])  # fmt: skip
    cluster.run(["scontrol", "update", f"JobId={job_b}", 'AdminComment={"pods":["ml/ext-1"]}'])
    cluster.run(["scontrol", "release", job_b])
    cluster.wait_all_done(timeout=120)
    as_of = cluster.now().replace(microsecond=0) + dt.timedelta(seconds=1)
    sacct = SacctCliSource(spool_dir=str(spool), slurm_conf=str(cluster.slurm_conf),
                           env=cluster.env())  # fmt: skip
    files: list[Path] = []
    for day in sorted({pods_from.date(), as_of.date()}):
        files += sacct.fetch(CLUSTER_NAME, day.isoformat())
    rows = pl.concat([parse_sacct(f, cluster=CLUSTER_NAME).rows for f in files])
    return SokRun(
        comments=comments,
        sacct=rows.unique(["job_id", "step"], keep="last"),
        job_a=job_a, job_b=job_b, pods_from=pods_from, as_of=as_of,
    )  # fmt: skip


def _attempts(run: SokRun) -> pl.DataFrame:
    return (
        run.sacct.filter(pl.col("is_allocation") & pl.col("job_id").is_in([run.job_a, run.job_b]))
        .select(
            "job_id",
            pl.lit(0).alias("attempt"),
            "gpus",
            "start_at",
            "end_at",
            "node_list",
            *sacct_notes(),
        )
        .sort("job_id")
    )


def _pods(run: SokRun, b_start: dt.datetime, b_end: dt.datetime) -> pl.DataFrame:
    rows = [
        {"namespace": "slurm", "name": pod, "node_name": k8s_node, "gpus": _HOLD,
         "labels": json.dumps({POD_HOSTNAME_LABEL: node}), "started_at": run.pods_from,
         "finished_at": None}
        for pod, (node, k8s_node) in _SLURMD.items()
    ] + [
        {"namespace": "ml", "name": "ext-1", "node_name": "kn2", "gpus": 2.0,
         "labels": json.dumps({SLURM_JOBID_LABEL: run.job_b}), "started_at": b_start,
         "finished_at": b_end},
    ]  # fmt: skip
    return pl.DataFrame(rows).with_columns(
        pl.lit("k8s-c").alias("cluster"),
        pl.col("started_at").cast(_UTC).alias("created_at"),
        pl.col("started_at").cast(_UTC).alias("scheduled_at"),
        pl.col("started_at").cast(_UTC),
        pl.col("finished_at").cast(_UTC),
        pl.lit(None, _UTC).alias("deleted_at"),
    )


def test_live_sources_read_back_the_comments(sok_run: SokRun) -> None:
    """The polled node list carries each slurmd pod's PodInfo; sacct's AdminComment of job B is
    slurm-bridge's ``{"pods":["ml/ext-1"]}``, job A has none."""
    got = sok_run.comments.rows.filter(pl.col("pod").is_not_null()).select(
        "slurm_node", "namespace", "pod", "k8s_node", "nodeset"
    )
    assert got.sort("slurm_node").rows() == [
        ("gpu-001", "slurm", "slurm-worker-gpu-001", "kn1", "slurm-worker"),
        ("gpu-002", "slurm", "slurm-worker-gpu-002", "kn2", "slurm-worker"),
    ]
    assert sok_run.comments.rejected.height == 0
    notes = dict(_attempts(sok_run).select("job_id", "admin_comment").iter_rows())
    assert notes == {sok_run.job_a: None, sok_run.job_b: '{"pods":["ml/ext-1"]}'}


def test_layers_balance_and_the_rate_is_the_hand_computed_one(sok_run: SokRun) -> None:
    """Every node-hour: lent + native + k8s idle = 8 × 3600, allocated + Slurm idle = lent.

    By hand, with a = job A's seconds, b = job B's, p = the pods' span (from before the jobs
    to the cut-off): naive = Slurm (4a + 2b) + pods (6p + 6p + 2b); reconciled = ext-1's pod
    2b + job A 4a (B is a mirror: its 2b count once, in the pod); rate = (naive − reconciled)
    ÷ reconciled = (12p + 2b) ÷ (4a + 2b)."""
    att = _attempts(sok_run)
    a_row = att.filter(pl.col("job_id") == sok_run.job_a).row(0, named=True)
    b_row = att.filter(pl.col("job_id") == sok_run.job_b).row(0, named=True)
    assert (a_row["gpus"], a_row["node_list"], b_row["gpus"], b_row["node_list"]) == (
        4.0, ["gpu-001"], 2.0, ["gpu-002"],
    )  # fmt: skip
    pods = _pods(sok_run, b_row["start_at"], b_row["end_at"])
    nodes = pl.DataFrame(
        {"cluster": ["k8s-c"] * 2, "host": ["kn1", "kn2"], "gpus": [8.0, 8.0],
         "gpu_type": [None, None]},
        schema_overrides={"gpu_type": pl.String},
    )  # fmt: skip
    setting = SlurmOnK8s(cluster=CLUSTER_NAME, k8s_cluster="k8s-c", pattern="A")
    hourly, node_map, _pieces, mirrors = slurm_on_k8s_hourly(
        setting, att, pods, sok_run.comments.rows, nodes, sok_run.as_of
    )
    assert set(node_map["k8s_node"]) == {"kn1", "kn2"}
    assert mirrors["job_id"].to_list() == [sok_run.job_b]
    k8s_side = hourly["lent_to_slurm_gpu_s"] + hourly["k8s_native_gpu_s"] + hourly["k8s_idle_gpu_s"]
    assert (k8s_side - hourly["capacity_gpu_s"]).abs().max() <= 1e-9
    slurm_side = hourly["slurm_allocated_gpu_s"] + hourly["slurm_idle_gpu_s"]
    assert (slurm_side - hourly["lent_to_slurm_gpu_s"]).abs().max() <= 1e-9
    assert (hourly["k8s_idle_gpu_s"].min() or 0) >= 0 and (
        hourly["slurm_idle_gpu_s"].min() or 0
    ) >= 0

    def secs(row: dict[str, dt.datetime]) -> float:
        return (row["end_at"] - row["start_at"]).total_seconds()

    a, b, p = secs(a_row), secs(b_row), (sok_run.as_of - sok_run.pods_from).total_seconds()
    assert a > 0 and b > 0
    naive, rec = hourly["naive_gpu_s"].sum(), hourly["reconciled_gpu_s"].sum()
    assert naive == pytest.approx(4 * a + 2 * b + 12 * p + 2 * b, abs=1e-6)
    assert rec == pytest.approx(2 * b + 4 * a, abs=1e-6)
    assert (naive - rec) / rec == pytest.approx((12 * p + 2 * b) / (4 * a + 2 * b), rel=1e-12)
    print(f"\nslurm on k8s: a={a:.0f}s b={b:.0f}s p={p:.0f}s rate={(naive - rec) / rec:.4f}")
