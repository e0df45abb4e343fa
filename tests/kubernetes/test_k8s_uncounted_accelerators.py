"""Accelerators not counted as GPUs (METRICS.md "Accelerators not counted as GPUs"): a pod asking
``gpu.intel.com/i915``, ``habana.ai/gaudi``, ``aws.amazon.com/neuroncore``, ``google.com/tpu``,
an AMD partition resource or an impossible MIG profile counts 0 GPUs for it, and its parsed row
names the resources (``uncounted_resources``), so the build reports it
(``uncounted_accelerator_resource``) instead of dropping it silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from metrics.data_quality import (
    DATA_QUALITY_SCHEMA,
    uncounted_accelerator_nodes,
    uncounted_accelerator_pods,
)
from pipelines.kubernetes._objects import parse_k8s_nodes
from pipelines.kubernetes._pods_parse import is_uncounted_accelerator, parse_k8s_pods


def _pod(
    name: str, *containers: dict[str, str], init: tuple[dict[str, str], ...] = ()
) -> dict[str, Any]:
    """A pending pod whose containers (and init containers ``init``) ask these limits."""

    def ctr(i: int, limits: dict[str, str]) -> dict[str, Any]:
        return {"name": f"c{i}", "resources": {"limits": limits, "requests": limits}}

    return {
        "kind": "Pod",
        "metadata": {"uid": f"u-{name}", "name": name, "namespace": "ml",
                     "creationTimestamp": "2026-11-03T09:58:00Z"},
        "spec": {"containers": [ctr(i, c) for i, c in enumerate(containers)],
                 "initContainers": [ctr(i, c) for i, c in enumerate(init)]},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def _parse(tmp_path: Path, *pods: dict[str, Any]) -> pl.DataFrame:
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(pods)}))
    return parse_k8s_pods(path, cluster="k").rows


@pytest.mark.parametrize(
    ("resource", "uncounted"),
    [
        # counted as GPUs: never flagged
        ("nvidia.com/gpu", False),
        ("nvidia.com/gpu.shared", False),
        ("nvidia.com/mig-3g.40gb", False),
        ("nvidia.com/mig-1g.10gb.shared", False),
        ("amd.com/gpu", False),
        # accelerators of a known vendor's prefix that count no GPU
        ("amd.com/cpx_nps4", True),
        ("gpu.intel.com/i915", True),
        ("gpu.intel.com/xe", True),
        ("habana.ai/gaudi", True),
        ("aws.amazon.com/neuron", True),
        ("aws.amazon.com/neuroncore", True),
        ("google.com/tpu", True),
        ("xilinx.com/fpga-xilinx_u30_gen3x4_base_2-0", True),
        ("qualcomm.com/qaic", True),
        # an impossible MIG profile (gpu_worth None): flagged
        ("nvidia.com/mig-8g.80gb", True),
        # another vendor's resource naming a GPU
        ("aliyun.com/gpu-mem", True),
        # an accelerator vendor's NIC, core resources, Kubernetes' own domains: no accelerator
        ("nvidia.com/rdma_shared_device_a", False),
        ("nvidia.com/hostdev", False),
        ("nvidia.com/mlnxnics", False),
        ("vpc.amazonaws.com/efa", False),
        ("cpu", False),
        ("memory", False),
        ("ephemeral-storage", False),
        ("hugepages-2Mi", False),
        ("example.kubernetes.io/gpu", False),
        ("k8s.io/gpu", False),
    ],
)
def test_which_resources_are_uncounted_accelerators(resource: str, uncounted: bool) -> None:
    """An extended resource that counts no GPU is an accelerator by its vendor's prefix or a
    ``gpu`` in its name; counted GPU resources, NICs and core resources are not."""
    assert is_uncounted_accelerator(resource) is uncounted


def test_pods_asking_other_accelerators_name_them_and_keep_their_gpus(tmp_path: Path) -> None:
    """nv asks ``nvidia.com/gpu: 8``, intel ``gpu.intel.com/i915: 1``, gaudi
    ``habana.ai/gaudi: 8`` and ``cpu: 4``. By hand: GPUs 8, 0, 0 (as before); the uncounted
    resources NULL, ``gpu.intel.com/i915``, ``habana.ai/gaudi`` (cpu is no accelerator)."""
    rows = _parse(
        tmp_path,
        _pod("nv", {"nvidia.com/gpu": "8"}),
        _pod("intel", {"gpu.intel.com/i915": "1"}),
        _pod("gaudi", {"habana.ai/gaudi": "8", "cpu": "4"}),
    )
    assert rows.select("name", "gpus", "gpu_resource", "uncounted_resources").rows() == [
        ("nv", 8.0, "nvidia.com/gpu", None),
        ("intel", 0.0, None, "gpu.intel.com/i915"),
        ("gaudi", 0.0, None, "habana.ai/gaudi"),
    ]


def test_uncounted_resources_of_every_container_sorted(tmp_path: Path) -> None:
    """A pod whose main container asks ``habana.ai/gaudi: 8``, a second container
    ``aws.amazon.com/neuroncore: 2`` and an init container ``google.com/tpu: 4`` names the three,
    sorted; an impossible MIG profile is named too (it counts no GPU)."""
    rows = _parse(
        tmp_path,
        _pod("mixed", {"habana.ai/gaudi": "8"}, {"aws.amazon.com/neuroncore": "2"},
             init=({"google.com/tpu": "4"},)),
        _pod("mig", {"nvidia.com/mig-8g.80gb": "1"}),
    )  # fmt: skip
    assert rows.select("name", "gpus", "uncounted_resources").rows() == [
        ("mixed", 0.0, "aws.amazon.com/neuroncore,google.com/tpu,habana.ai/gaudi"),
        ("mig", 0.0, "nvidia.com/mig-8g.80gb"),
    ]


def test_pods_asking_only_counted_resources_name_none(tmp_path: Path) -> None:
    """Counted GPUs (``nvidia.com/gpu``, ``.shared``, MIG, ``amd.com/gpu``), GPU shares asked
    beside a counted GPU in the same container (HAMi's ``nvidia.com/gpumem`` /
    ``nvidia.com/gpucores``), a NIC (``nvidia.com/rdma_shared_device_a``), a zero request
    (``habana.ai/gaudi: 0``) and CPU pods name no uncounted resource."""
    rows = _parse(
        tmp_path,
        _pod("nv", {"nvidia.com/gpu": "1", "nvidia.com/rdma_shared_device_a": "1"}),
        _pod("shared", {"nvidia.com/gpu.shared": "1"}),
        _pod("mig", {"nvidia.com/mig-3g.40gb": "2"}),
        _pod("amd", {"amd.com/gpu": "8"}),
        _pod("hami", {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000",
                      "nvidia.com/gpucores": "30"}),
        _pod("zero", {"habana.ai/gaudi": "0", "cpu": "2"}),
        _pod("cpu", {"cpu": "4", "memory": "8Gi", "hugepages-2Mi": "1Gi"}),
    )  # fmt: skip
    assert rows["uncounted_resources"].to_list() == [None] * 7
    # the GPUs are unchanged: 1, 1, 2 x 3/7, 8, 1, 0, 0
    assert rows["gpus"].to_list() == pytest.approx([1.0, 1.0, 6 / 7, 8.0, 1.0, 0.0, 0.0])


def test_finding_counts_pods_per_cluster_and_names_each_resource() -> None:
    """Cluster a: p1 asks i915, p2 i915 and gaudi, p3 nothing; cluster b: p4 asks a TPU. By
    hand: a has 2 pods (p1, p2), i915 asked by 2 and gaudi by 1; b has 1 pod."""
    pods = pl.LazyFrame(
        {
            "cluster": ["a", "a", "a", "b"],
            "uid": ["p1", "p2", "p3", "p4"],
            "uncounted_resources": [
                "gpu.intel.com/i915",
                "gpu.intel.com/i915,habana.ai/gaudi",
                None,
                "google.com/tpu",
            ],
        }
    )
    intro = "pods asked accelerator resources that are not counted as GPUs (0 GPUs here): "
    expected = pl.DataFrame(
        {
            "cluster": ["a", "b"],
            "day": [None, None],
            "partition": [None, None],
            "check": ["uncounted_accelerator_resource"] * 2,
            "value": [2.0, 1.0],
            "detail": [
                intro + "gpu.intel.com/i915 (2 pods), habana.ai/gaudi (1 pod)",
                intro + "google.com/tpu (1 pod)",
            ],
        },
        schema=DATA_QUALITY_SCHEMA,
    )
    assert_frame_equal(uncounted_accelerator_pods(pods).collect(), expected)


def test_no_finding_without_uncounted_resources() -> None:
    """Pods that ask only counted GPUs (``uncounted_resources`` NULL) give no finding."""
    pods = pl.LazyFrame(
        {"cluster": ["a"], "uid": ["p1"], "uncounted_resources": [None]},
        schema={"cluster": pl.String, "uid": pl.String, "uncounted_resources": pl.String},
    )
    assert uncounted_accelerator_pods(pods).collect().height == 0


def _node(name: str, resources: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}",
                     "creationTimestamp": "2026-10-01T08:00:00Z"},
        "status": {"capacity": {"cpu": "192", **resources},
                   "allocatable": {"cpu": "190", **resources}},
    }  # fmt: skip


def test_nodes_name_uncounted_accelerators_and_keep_their_gpus(tmp_path: Path) -> None:
    """gaudi advertises ``habana.ai/gaudi: 8``; tpu ``google.com/tpu: 4``; h100
    ``nvidia.com/gpu: 8`` and ``nvidia.com/hostdev: 4`` (a NIC). By hand: GPU capacity NULL,
    NULL, 8 (as before); uncounted resources ``habana.ai/gaudi``, ``google.com/tpu``, none."""
    path = tmp_path / "nodes.json"
    nodes = [
        _node("gaudi", {"habana.ai/gaudi": "8"}),
        _node("tpu", {"google.com/tpu": "4"}),
        _node("h100", {"nvidia.com/gpu": "8", "nvidia.com/hostdev": "4"}),
    ]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    rows = parse_k8s_nodes(path, cluster="k").rows
    assert rows.select("name", "gpu_capacity", "uncounted_resources").rows() == [
        ("gaudi", None, "habana.ai/gaudi"),
        ("tpu", None, "google.com/tpu"),
        ("h100", 8.0, None),
    ]


def test_node_finding_counts_nodes_per_cluster() -> None:
    """Cluster a: n1 and n2 advertise gaudi, n2 a TPU too. By hand: 2 nodes, gaudi on 2, the
    TPU on 1."""
    nodes = pl.LazyFrame(
        {
            "cluster": ["a", "a"],
            "name": ["n1", "n2"],
            "uncounted_resources": ["habana.ai/gaudi", "google.com/tpu,habana.ai/gaudi"],
        }
    )
    got = uncounted_accelerator_nodes(nodes).collect()
    assert got.select("cluster", "check", "value", "detail").rows() == [
        ("a", "uncounted_accelerator_node_resource", 2.0,
         "nodes advertise accelerator resources that are not counted as GPUs (no GPU "
         "capacity): google.com/tpu (1 node), habana.ai/gaudi (2 nodes)"),
    ]  # fmt: skip
