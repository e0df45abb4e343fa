"""MIG profiles with an attribute (media extensions ``+me``, ``+me.all``, graphics ``+gfx``) as
the NVIDIA device plugin names them in Kubernetes: ``+`` is not allowed in a resource name, so the
plugin writes it as ``.`` (NVIDIA/k8s-device-plugin ``internal/rm/rm.go``:
``strings.ReplaceAll("mig-"+p.String(), "+", ".")``; its ``internal/plugin/server_test.go`` names
the resource ``nvidia.com/mig-1g.10gb.me``). The slice is still ``K`` of the GPU's compute slices.

Fixture: ``tests/fixtures/k8s-mig-me/`` (see its SOURCE.md): one H100 80GB node cut into
1g.10gb+me + 2g.20gb + 4g.40gb, and a pod on the 1g.10gb+me slice from 10:00 to 11:00."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.kubernetes._objects import parse_k8s_nodes
from pipelines.kubernetes._pods_parse import gpu_worth, is_uncounted_accelerator, parse_k8s_pods
from pipelines.kubernetes._workloads_parse import parse_kueue_cluster_queues

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s-mig-me"


@pytest.mark.parametrize(
    ("resource", "worth"),
    [
        # the device plugin's spelling of 1g.10gb+me (H100 80GB: 1 of 7 compute slices)
        ("nvidia.com/mig-1g.10gb.me", 1 / 7),
        # the same, time-sliced and renamed (renameByDefault: "<resource>.shared")
        ("nvidia.com/mig-1g.10gb.me.shared", 1 / 7),
        # B200 1g.23gb+me.all (1 of 7)
        ("nvidia.com/mig-1g.23gb.me.all", 1 / 7),
        # a graphics-capable GPU instance, 2g.20gb+gfx (2 of 7)
        ("nvidia.com/mig-2g.20gb.gfx", 2 / 7),
        # A30 1g.6gb+me (1 of 4)
        ("nvidia.com/mig-1g.6gb.me", 1 / 4),
        # an attribute the plugin never writes stays unknown
        ("nvidia.com/mig-1g.10gb.other", None),
    ],
)
def test_dotted_attribute_is_the_profile_fraction(resource: str, worth: float | None) -> None:
    """``mig-<profile>.<attribute>`` is worth the profile's fraction (before: None, 0 GPUs)."""
    assert gpu_worth(resource) == (pytest.approx(worth) if worth is not None else None)
    assert is_uncounted_accelerator(resource) is (worth is None)


def test_pod_on_a_media_extension_slice_holds_one_seventh() -> None:
    """The pod asks ``nvidia.com/mig-1g.10gb.me: 1``: 1 × 1/7 GPU = 0.142857 (before: 0.0, and
    the resource was reported as an uncounted accelerator)."""
    rows = parse_k8s_pods(FIXTURES / "pods_2025-06-02.json", cluster="k8s-m").rows
    ((gpus, resource, uncounted),) = rows.select(
        "gpus", "gpu_resource", "uncounted_resources"
    ).rows()
    assert gpus == pytest.approx(1 / 7)
    assert (resource, uncounted) == ("nvidia.com/mig-1g.10gb.me", None)


def test_node_with_a_media_extension_slice_is_one_gpu() -> None:
    """The node advertises mig-1g.10gb.me 1, mig-2g.20gb 1, mig-4g.40gb 1:
    1/7 + 2/7 + 4/7 = 7/7 = 1 GPU (before: 6/7 = 0.857, the +me slice left out)."""
    rows = parse_k8s_nodes(FIXTURES / "nodes_2025-06-02.json", cluster="k8s-m").rows
    ((cap, alloc),) = rows.select("gpu_capacity", "gpu_allocatable").rows()
    assert (cap, alloc) == (pytest.approx(1.0), pytest.approx(1.0))


def test_cluster_queue_quota_of_a_media_extension_slice(tmp_path: Path) -> None:
    """A ClusterQueue with nominalQuota 7 of ``nvidia.com/mig-1g.10gb.me``: 7 × 1/7 = 1 GPU
    (before: 0, the resource not a GPU)."""
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq-me", "uid": "uid-cq", "creationTimestamp": "2025-06-01T00:00:00Z"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/mig-1g.10gb.me"],
                    "flavors": [
                        {
                            "name": "h100-me",
                            "resources": [{"name": "nvidia.com/mig-1g.10gb.me", "nominalQuota": 7}],
                        }
                    ],
                }
            ]
        },
    }
    path = tmp_path / "clusterqueues.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [cq]}))
    rows = parse_kueue_cluster_queues(path, cluster="k8s-m").rows
    assert rows["nominal_gpus"].sum() == pytest.approx(1.0)
