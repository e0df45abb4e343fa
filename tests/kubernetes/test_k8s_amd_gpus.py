"""AMD GPUs on Kubernetes: the AMD GPU device plugin (ROCm/k8s-device-plugin, default
``resource_naming_strategy: single``) advertises every GPU as ``amd.com/gpu``; its node labeller
names the product in ``amd.com/gpu.product-name``. Pods, Nodes, Kueue Workloads and
ClusterQueues of ``amd.com/gpu`` count whole GPUs, as ``nvidia.com/gpu`` does; the NVIDIA-only
rules (MIG, time-slicing replicas, ``.shared``) do not touch them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.core.k8s_attempts import k8s_attempts
from pipelines.core.k8s_gpu_units import cluster_queues_in_gpus, nodes_in_gpus, pods_in_gpus
from pipelines.core.k8s_timings import (
    KUEUE_PENDING_REASONS,
    SCHEDULER_PENDING_REASONS,
    _categorised,
)
from pipelines.kubernetes._objects import parse_k8s_nodes, parse_k8s_objects
from pipelines.kubernetes._pods_parse import gpu_worth, parse_k8s_pods

UTC = dt.UTC
_MI300X = "AMD_Instinct_MI300X_OAM"


def _pod(name: str, limits: dict[str, str], node: str = "mi300-1") -> dict[str, Any]:
    """A Succeeded pod bound 10:00 whose one container ran 10:00 - 12:00 on ``node``."""
    return {
        "kind": "Pod",
        "metadata": {"uid": f"u-{name}", "name": name, "namespace": "ml",
                     "creationTimestamp": "2026-11-03T09:58:00Z"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {
            "limits": limits, "requests": limits}}]},
        "status": {"phase": "Succeeded", "startTime": "2026-11-03T10:00:00Z",
                   "conditions": [{"type": "PodScheduled", "status": "True",
                                   "lastTransitionTime": "2026-11-03T10:00:00Z"}],
                   "containerStatuses": [{"name": "c", "restartCount": 0, "state": {
                       "terminated": {"exitCode": 0, "reason": "Completed",
                                      "startedAt": "2026-11-03T10:00:00Z",
                                      "finishedAt": "2026-11-03T12:00:00Z"}}}]},
    }  # fmt: skip


def _node(name: str, resources: dict[str, str], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels,
                     "creationTimestamp": "2026-10-01T08:00:00Z"},
        "status": {"capacity": {"cpu": "192", **resources},
                   "allocatable": {"cpu": "190", **resources},
                   "conditions": [{"type": "Ready", "status": "True",
                                   "lastTransitionTime": "2026-11-03T08:00:00Z"}]},
    }  # fmt: skip


def _write(path: Path, items: list[Any]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


@pytest.mark.parametrize(
    ("resource", "worth"),
    [
        ("amd.com/gpu", 1.0),
        # the MIG and replica rules stay NVIDIA's: no such AMD resources exist
        ("amd.com/gpu.shared", None),
        ("amd.com/mig-1g.10gb", None),
        # another vendor's device resource is no GPU of this pipeline (left out, see METRICS.md)
        ("gpu.intel.com/i915", None),
    ],
)
def test_gpu_worth_of_amd_resources(resource: str, worth: float | None) -> None:
    """``amd.com/gpu`` is one GPU per unit; NVIDIA's sharing suffixes do not carry over."""
    assert gpu_worth(resource) == worth


def test_pod_asking_amd_gpus_holds_them(tmp_path: Path) -> None:
    """A pod asking ``amd.com/gpu: 8``, bound 10:00, ended 12:00: 8 GPUs, and 8 × 7,200 s =
    57,600 GPU-s (was 0 GPUs, 0 GPU-s: the resource was not a GPU)."""
    pods = parse_k8s_pods(_write(tmp_path / "pods.json", [_pod("train", {"amd.com/gpu": "8"})]),
                          cluster="k-amd").rows  # fmt: skip
    row = pods.row(0, named=True)
    assert (row["gpus"], row["gpu_resource"]) == (8.0, "amd.com/gpu")
    # on its node (no NVIDIA labels) the unit stays 1
    nodes = parse_k8s_nodes(
        _write(tmp_path / "nodes.json",
               [_node("mi300-1", {"amd.com/gpu": "8"}, {"amd.com/gpu.product-name": _MI300X})]),
        cluster="k-amd", snapshot_at=dt.datetime(2026, 11, 3, 9, tzinfo=UTC),
    ).rows  # fmt: skip
    assert pods_in_gpus(pods, nodes)["gpus"].to_list() == [8.0]
    att = k8s_attempts(pods).attempts.row(0, named=True)
    assert (att["gpus"], att["req_gpus"]) == (8.0, 8.0)
    assert att["gpu_s"] == 8 * 2 * 3600 == 57_600


def test_amd_node_capacity_and_product(tmp_path: Path) -> None:
    """A node with capacity and allocatable ``amd.com/gpu: 8`` has 8 GPUs (was NULL: no GPU
    resource), also in physical GPUs, and its product is the labeller's
    ``amd.com/gpu.product-name``."""
    node = _node("mi300-1", {"amd.com/gpu": "8"}, {"amd.com/gpu.product-name": _MI300X})
    rows = parse_k8s_nodes(_write(tmp_path / "nodes.json", [node]), cluster="k-amd").rows
    got = rows.select("gpu_capacity", "gpu_allocatable", "gpu_resource", "gpu_product").row(0)
    assert got == (8.0, 8.0, "amd.com/gpu", _MI300X)
    assert nodes_in_gpus(rows).select("gpu_capacity", "gpu_allocatable").row(0) == (8.0, 8.0)


def _cq(resource: str, quota: str, borrowing: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq-mi300", "uid": "uid-cq", "creationTimestamp": "2026-10-01T08Z"},
        "spec": {"cohort": "all", "resourceGroups": [{"coveredResources": ["cpu", resource],
                 "flavors": [{"name": "mi300x", "resources": [
                     {"name": "cpu", "nominalQuota": "1000"},
                     {"name": resource, "nominalQuota": quota,
                      "borrowingLimit": borrowing}]}]}]},
        "status": {"flavorsUsage": [{"name": "mi300x", "resources": [
            {"name": resource, "total": "24", "borrowed": "0"}]}]},
    }  # fmt: skip


def test_cluster_queue_quota_of_amd_gpus(tmp_path: Path) -> None:
    """A ClusterQueue with ``amd.com/gpu`` nominalQuota 64, borrowingLimit 16, 24 in use: 64
    GPUs of quota and 24 used (was no GPU quota row: ``resource`` NULL, 0 GPUs); its cluster's
    time-sliced NVIDIA nodes (unit 1/4) do not scale it."""
    f = _write(tmp_path / "cq.json", [_cq("amd.com/gpu", "64", "16")])
    cqs = parse_k8s_objects(f, cluster="k-amd")["kueue-cluster-queues"].rows
    row = cqs.row(0, named=True)
    assert row["resource"] == "amd.com/gpu" and row["flavor"] == "mi300x"
    assert (row["nominal_quota"], row["borrowing_limit"]) == (64.0, 16.0)
    assert (row["nominal_gpus"], row["usage_gpus"], row["borrowed_gpus"]) == (64.0, 24.0, 0.0)
    sliced = {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.product": "NVIDIA-H100-SHARED"}
    nodes = parse_k8s_nodes(
        _write(tmp_path / "nodes.json", [_node("h1", {"nvidia.com/gpu": "32"}, sliced)]),
        cluster="k-amd",
    ).rows
    got, ambiguous = cluster_queues_in_gpus(cqs, nodes)
    assert got.select("nominal_gpus", "usage_gpus").row(0) == (64.0, 24.0)
    assert ambiguous.height == 0


def test_workload_of_amd_gpus(tmp_path: Path) -> None:
    """A Workload of 2 pods × ``amd.com/gpu: 4``, admitted with resourceUsage ``amd.com/gpu:
    8`` in flavor mi300x: 8 GPUs asked and 8 admitted (was 0 and 0)."""
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "job-a", "namespace": "ml", "uid": "uid-wl",
                     "creationTimestamp": "2026-11-03T09:00:00Z"},
        "spec": {"queueName": "lq-ml", "podSets": [{"name": "main", "count": 2, "template": {
            "spec": {"containers": [{"name": "c", "resources": {
                "requests": {"amd.com/gpu": "4"}}}]}}}]},
        "status": {"conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
             "lastTransitionTime": "2026-11-03T09:05:00Z", "message": "reserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted",
             "lastTransitionTime": "2026-11-03T09:05:00Z", "message": "admitted"}],
            "admission": {"clusterQueue": "cq-mi300", "podSetAssignments": [
                {"name": "main", "count": 2, "flavors": {"amd.com/gpu": "mi300x"},
                 "resourceUsage": {"amd.com/gpu": "8"}}]}},
    }  # fmt: skip
    rows = parse_k8s_objects(_write(tmp_path / "wl.json", [wl]), cluster="k-amd")
    row = rows["k8s-workloads"].rows.row(0, named=True)
    assert (row["gpus"], row["gpus_admitted"]) == (8.0, 8.0)


def test_a_pod_of_both_vendors_counts_both_unscaled(tmp_path: Path) -> None:
    """A pod asking ``nvidia.com/gpu: 1`` and ``amd.com/gpu: 2`` counts 1 + 2 = 3 GPUs; on a
    node whose NVIDIA GPUs are time-sliced in 4 replicas it keeps 3 (its one total cannot be
    split back per resource, so the NVIDIA unit 1/4 is not applied: METRICS.md)."""
    pod = _pod("both", {"nvidia.com/gpu": "1", "amd.com/gpu": "2"}, node="mixed-1")
    pods = parse_k8s_pods(_write(tmp_path / "pods.json", [pod]), cluster="k").rows
    assert pods.select("gpus", "gpu_resource").row(0) == (3.0, "amd.com/gpu,nvidia.com/gpu")
    labels = {"nvidia.com/gpu.replicas": "4"}
    node = _node("mixed-1", {"nvidia.com/gpu": "4", "amd.com/gpu": "2"}, labels)
    nodes = parse_k8s_nodes(_write(tmp_path / "nodes.json", [node]), cluster="k",
                            snapshot_at=dt.datetime(2026, 11, 3, 9, tzinfo=UTC)).rows  # fmt: skip
    assert nodes.select("gpu_allocatable", "gpu_resource").row(0) == (
        6.0, "amd.com/gpu,nvidia.com/gpu")  # fmt: skip
    assert pods_in_gpus(pods, nodes)["gpus"].to_list() == [3.0]
    assert nodes_in_gpus(nodes)["gpu_allocatable"].to_list() == [6.0]


def test_pending_reasons_name_amd_gpus() -> None:
    """kube-scheduler's ``4 Insufficient amd.com/gpu`` is ``insufficient_gpu`` on 4 nodes, and
    Kueue's ``insufficient quota for amd.com/gpu`` is ``quota_gpu`` (were both ``other``)."""
    msg = (
        "0/6 nodes are available: 4 Insufficient amd.com/gpu, 2 node(s) were unschedulable. "
        "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."
    )
    sched = pl.LazyFrame({"reason": ["FailedScheduling"], "message": [msg]})
    got = _categorised(sched, SCHEDULER_PENDING_REASONS, pl.col("message")).collect()
    assert sorted(got.select("reason", "nodes").rows()) == [
        ("insufficient_gpu", 4), ("node_unschedulable", 2)]  # fmt: skip
    msg = (
        "couldn't assign flavors to pod set main: insufficient quota for amd.com/gpu in "
        "flavor mi300x, 8 more needed"
    )
    kueue = pl.LazyFrame({"reason": ["Pending"], "message": [msg]})
    got = _categorised(kueue, KUEUE_PENDING_REASONS, pl.col("message")).collect()
    assert got["reason"].to_list() == ["quota_gpu"]
