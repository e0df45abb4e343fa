"""Accelerators not counted as GPUs (METRICS.md "Accelerators not counted as GPUs"): a pod asking
``gpu.intel.com/i915``, ``habana.ai/gaudi``, ``aws.amazon.com/neuroncore``, ``google.com/tpu``,
an AMD partition resource or an impossible MIG profile counts 0 GPUs for it, and its parsed row
names the resources (``uncounted_resources``), so the build reports it
(``uncounted_accelerator_resource``) instead of dropping it silently. Nodes, Kueue Workloads and
ClusterQueues likewise (``uncounted_accelerator_node_resource``,
``uncounted_accelerator_workload_resource``, ``uncounted_accelerator_cluster_queue_resource``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from metrics.data_quality import (
    DATA_QUALITY_SCHEMA,
    uncounted_accelerator_cluster_queues,
    uncounted_accelerator_nodes,
    uncounted_accelerator_pods,
    uncounted_accelerator_workloads,
)
from pipelines.kubernetes._objects import parse_k8s_nodes, parse_k8s_objects
from pipelines.kubernetes._pods_parse import is_uncounted_accelerator, parse_k8s_pods
from pipelines.kubernetes._workloads_parse import parse_kueue_cluster_queues
from tests.kubernetes.test_k8s_workloads import _schema_errors

#: A Kueue ClusterQueue (issue kubernetes-sigs/kueue#3108's, with ``habana.ai/gaudi`` quota 16
#: added), its LocalQueue and a Workload of 2 pods x 4 ``habana.ai/gaudi`` (see its SOURCE.md).
KUEUE_GAUDI = Path(__file__).resolve().parents[1] / "fixtures" / "kueue-uncounted" / "objects.json"


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


def test_kueue_gaudi_fixture_validates_against_the_kueue_crds() -> None:
    """The derived Kueue objects are valid under the CRD schema of the version they name."""
    plural = {"ClusterQueue": "clusterqueues", "LocalQueue": "localqueues",
              "Workload": "workloads"}  # fmt: skip
    items = json.loads(KUEUE_GAUDI.read_text())["items"]
    assert sorted(i["kind"] for i in items) == ["ClusterQueue", "LocalQueue", "Workload"]
    for obj in items:
        assert _schema_errors(obj, plural[obj["kind"]]) == [], obj["metadata"]["name"]


def test_kueue_workload_and_cluster_queue_name_uncounted_accelerators() -> None:
    """The ClusterQueue gives cpu 9, memory 36Gi and ``habana.ai/gaudi`` 16; the Workload asks
    2 pods x (cpu 1, memory 200Mi, ``habana.ai/gaudi`` 4). By hand: the Workload counts 2 pods
    and 2 x 0 = 0 GPUs (the 8 Gaudi devices count none), no GPU resource, and names
    ``habana.ai/gaudi``; the ClusterQueue has no GPU quota (its one row has NULL flavor and
    ``nominal_gpus``) and names ``habana.ai/gaudi`` (was: neither named anywhere)."""
    res = parse_k8s_objects(KUEUE_GAUDI, cluster="k")
    wl = res["k8s-workloads"].rows
    assert wl.select("name", "pods", "gpus", "gpu_resource", "uncounted_resources").rows() == [
        ("job-sample-job-gaudi-5f2c1", 2, 0.0, None, "habana.ai/gaudi")
    ]
    cq = res["kueue-cluster-queues"].rows
    assert cq.select("name", "flavor", "nominal_gpus", "uncounted_resources").rows() == [
        ("cluster-queue", None, None, "habana.ai/gaudi")
    ]
    assert all(r.rejected.height == 0 for r in res.values())


def _cluster_queue(name: str, *flavors: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name, "uid": f"uid-{name}",
                     "creationTimestamp": "2026-10-01T08:00:00Z"},
        "spec": {"resourceGroups": [
            {"coveredResources": [r["name"] for r in f["resources"]], "flavors": [f]}
            for f in flavors]},
    }  # fmt: skip


def _flavor(name: str, quota: dict[str, object]) -> dict[str, Any]:
    return {"name": name, "resources": [{"name": k, "nominalQuota": v} for k, v in quota.items()]}


def test_cluster_queue_uncounted_quota_per_flavor(tmp_path: Path) -> None:
    """mixed gives ``nvidia.com/gpu`` 8 in h100, ``gpu.intel.com/i915`` 4 in intel and
    ``google.com/tpu`` 0 in tpu; hami gives ``nvidia.com/gpu`` 8 with HAMi's
    ``nvidia.com/gpumem`` 80000 in one flavor; nic gives ``nvidia.com/hostdev`` 4. By hand:
    mixed names i915 only (the TPU quota is 0) and keeps its 8-GPU row; hami and nic name
    none (a GPU share beside a counted GPU, a NIC)."""
    path = tmp_path / "cqs.json"
    cqs = [
        _cluster_queue("mixed", _flavor("h100", {"nvidia.com/gpu": 8}),
                       _flavor("intel", {"gpu.intel.com/i915": "4"}),
                       _flavor("tpu", {"google.com/tpu": 0})),
        _cluster_queue("hami", _flavor("h100", {"nvidia.com/gpu": 8,
                                                "nvidia.com/gpumem": 80000})),
        _cluster_queue("nic", _flavor("nic", {"nvidia.com/hostdev": 4})),
    ]  # fmt: skip
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": cqs}))
    rows = parse_kueue_cluster_queues(path, cluster="k").rows
    assert rows.select("name", "resource", "nominal_gpus", "uncounted_resources").rows() == [
        ("mixed", "nvidia.com/gpu", 8.0, "gpu.intel.com/i915"),
        ("hami", "nvidia.com/gpu", 8.0, None),
        ("nic", None, None, None),
    ]


def test_workload_and_cluster_queue_findings_count_objects_per_cluster() -> None:
    """Cluster a: Workloads w1 (gaudi) and w2 (gaudi, i915), ClusterQueues cq1 and cq2 (gaudi);
    cluster b: nothing uncounted. By hand: a has 2 Workloads, gaudi in 2 and i915 in 1, and 2
    ClusterQueues, both gaudi; b has no finding."""
    workloads = pl.LazyFrame(
        {
            "cluster": ["a", "a", "b"],
            "uid": ["w1", "w2", "w3"],
            "uncounted_resources": ["habana.ai/gaudi", "gpu.intel.com/i915,habana.ai/gaudi", None],
        }
    )
    cqs = pl.LazyFrame(
        {"cluster": ["a", "a"], "name": ["cq1", "cq2"],
         "uncounted_resources": ["habana.ai/gaudi", "habana.ai/gaudi"]}
    )  # fmt: skip
    got = pl.concat(
        [uncounted_accelerator_workloads(workloads).collect(),
         uncounted_accelerator_cluster_queues(cqs).collect()]
    )  # fmt: skip
    assert got.schema == pl.Schema(DATA_QUALITY_SCHEMA)
    assert got.select("cluster", "day", "partition", "check", "value", "detail").rows() == [
        ("a", None, None, "uncounted_accelerator_workload_resource", 2.0,
         "Kueue workloads asked accelerator resources that are not counted as GPUs (0 GPUs "
         "here): gpu.intel.com/i915 (1 workload), habana.ai/gaudi (2 workloads)"),
        ("a", None, None, "uncounted_accelerator_cluster_queue_resource", 2.0,
         "Kueue ClusterQueues give quota of accelerator resources that are not counted as GPUs "
         "(no GPU quota): habana.ai/gaudi (2 ClusterQueues)"),
    ]  # fmt: skip


def test_a_cluster_queue_with_malformed_resource_groups_is_rejected_naming_the_field() -> None:
    """``spec.resourceGroups: 5``: the ClusterQueue is rejected naming ``spec.resourceGroups``
    (the uncounted-accelerator reading leaves malformed lists to the rows' reader, which names
    the field; it raised a bare TypeError first)."""
    import pytest

    from pipelines.kubernetes._json_items import BadItem
    from pipelines.kubernetes._workloads_parse import _cluster_queue_rows

    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq", "uid": "u1", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"resourceGroups": 5},
    }
    with pytest.raises(BadItem, match=r"spec\.resourceGroups: not a list"):
        _cluster_queue_rows(obj)
