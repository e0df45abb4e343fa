"""Pods asking accelerators not counted as GPUs, built end to end (one Kubernetes cluster ``k``,
no inventory): their GPUs stay 0 and each cluster gets one ``uncounted_accelerator_resource``
finding naming the resources (METRICS.md "Accelerators not counted as GPUs"); an incremental
build after a second export equals a full one. Nodes, Kueue Workloads and ClusterQueues naming
such resources get their own findings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipelines.analytics.build import rebuild
from pipelines.ingest import ingest_file, ingest_options
from pipelines.warehouse import connect, ensure_raw_tables
from tests.pipelines.test_incremental import assert_equals_full_rebuild
from tests.pipelines.test_k8s_failed_pods_build import _config, _load, _query

_FINDING = (
    "SELECT cluster, day, partition, value, detail FROM analytics.data_quality"
    " WHERE \"check\" = 'uncounted_accelerator_resource'"
)
_INTRO = "pods asked accelerator resources that are not counted as GPUs (0 GPUs here): "
#: Kueue issue #3108's ClusterQueue with ``habana.ai/gaudi`` quota 16 added, and a Workload of
#: 2 pods x 4 ``habana.ai/gaudi`` (tests/fixtures/kueue-uncounted/SOURCE.md).
_KUEUE_GAUDI = Path(__file__).resolve().parents[1] / "fixtures" / "kueue-uncounted" / "objects.json"
_KUEUE_FINDINGS = (
    'SELECT cluster, "check", value, detail FROM analytics.data_quality'
    " WHERE \"check\" IN ('uncounted_accelerator_workload_resource',"
    " 'uncounted_accelerator_cluster_queue_resource') ORDER BY \"check\" DESC"
)


def _pod(name: str, limits: dict[str, str], day: int = 3) -> dict[str, Any]:
    """A Succeeded pod bound 10:00 on 2024-05-``day`` whose one container ran 10:00 - 12:00."""
    d = f"2024-05-{day:02d}"
    return {
        "kind": "Pod",
        "metadata": {"uid": f"u-{name}", "name": name, "namespace": "ml",
                     "creationTimestamp": f"{d}T09:58:00Z"},
        "spec": {"nodeName": f"node-{name}", "containers": [{"name": "c", "resources": {
            "limits": limits, "requests": limits}}]},
        "status": {"phase": "Succeeded", "startTime": f"{d}T10:00:00Z",
                   "conditions": [{"type": "PodScheduled", "status": "True",
                                   "lastTransitionTime": f"{d}T10:00:00Z"}],
                   "containerStatuses": [{"name": "c", "restartCount": 0, "state": {
                       "terminated": {"exitCode": 0, "reason": "Completed",
                                      "startedAt": f"{d}T10:00:00Z",
                                      "finishedAt": f"{d}T12:00:00Z"}}}]},
    }  # fmt: skip


def _write(path: Path, *pods: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(pods)}))
    return path


def test_pods_of_uncounted_accelerators_are_a_finding_and_keep_the_gpus(tmp_path: Path) -> None:
    """nv asks ``nvidia.com/gpu: 8``, intel ``gpu.intel.com/i915: 1``, gaudi
    ``habana.ai/gaudi: 8`` and ``cpu: 4``, each 10:00 - 12:00. By hand: the GPU-seconds are
    nv's alone, 8 x 7,200 = 57,600 (28,800 in each hour), as before; the finding for k counts
    the 2 other pods and names both resources (was: no finding at all)."""
    cfg = _config(tmp_path)
    pods = _write(
        tmp_path / "pods_2024-05-03.json",
        _pod("nv", {"nvidia.com/gpu": "8"}),
        _pod("intel", {"gpu.intel.com/i915": "1"}),
        _pod("gaudi", {"habana.ai/gaudi": "8", "cpu": "4"}),
    )
    _load(cfg, pods)
    assert _query(cfg, "SELECT job_id, gpus, gpu_s FROM core.jobs WHERE job_id = 'ml/nv'") == [
        ("ml/nv", 8.0, 57_600.0)
    ]
    assert _query(
        cfg, "SELECT sum(allocated_gpu_s) FROM analytics.occupancy_hourly WHERE cluster = 'k'"
    ) == [(57_600.0,)]
    assert _query(cfg, _FINDING) == [
        ("k", None, None, 2.0,
         _INTRO + "gpu.intel.com/i915 (1 pod), habana.ai/gaudi (1 pod)"),
    ]  # fmt: skip
    # the published copy shows it too
    with_view = _query(
        cfg, "SELECT value FROM data_quality WHERE \"check\" = 'uncounted_accelerator_resource'"
    )
    assert with_view == [(2.0,)]


def test_pods_of_counted_gpus_only_give_no_finding(tmp_path: Path) -> None:
    """Pods asking ``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` and ``amd.com/gpu`` only: no
    ``uncounted_accelerator_resource`` row."""
    cfg = _config(tmp_path)
    pods = _write(
        tmp_path / "pods_2024-05-03.json",
        _pod("nv", {"nvidia.com/gpu": "8"}),
        _pod("shared", {"nvidia.com/gpu.shared": "1"}),
        _pod("amd", {"amd.com/gpu": "8"}),
    )
    _load(cfg, pods)
    assert _query(cfg, _FINDING) == []


def test_a_later_export_with_an_uncounted_pod_builds_as_a_full_build(tmp_path: Path) -> None:
    """A first export has nv (8 GPUs, 2024-05-03); a second adds intel (``gpu.intel.com/i915``,
    2024-05-04). The incremental build after the second equals the full build and its finding
    counts 1 pod."""
    rows = "".join(f"node-{n},8,h100,p,r1\n" for n in ("nv", "intel"))
    cfg = _config(tmp_path, "host,gpus,gpu_type,partition,rack\n" + rows)
    _load(cfg, _write(tmp_path / "pods_2024-05-03.json", _pod("nv", {"nvidia.com/gpu": "8"})))
    assert _query(cfg, _FINDING) == []
    second = _write(
        tmp_path / "pods_2024-05-04.json", _pod("intel", {"gpu.intel.com/i915": "1"}, day=4)
    )
    _load(cfg, second, full=False)
    ((mode,),) = _query(
        cfg, "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
    )
    assert mode == "incremental"
    assert [r[3] for r in _query(cfg, _FINDING)] == [1.0]
    assert assert_equals_full_rebuild(cfg, tmp_path) > 10


def test_nodes_of_uncounted_accelerators_are_a_finding(tmp_path: Path) -> None:
    """Two snapshots of node gaudi-1 (``habana.ai/gaudi: 8``) and one of node-nv (capacity
    ``nvidia.com/gpu: 8``), beside pod nv (8 GPUs). By hand: the node finding for k counts 1
    node (gaudi-1 once over its snapshots) naming ``habana.ai/gaudi``; nv keeps 57,600 GPU-s."""
    cfg = _config(tmp_path)

    def node(name: str, resources: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": f"uid-{name}",
                             "creationTimestamp": "2024-05-01T08:00:00Z"},
                "status": {"capacity": resources, "allocatable": resources}}  # fmt: skip

    with connect(cfg.warehouse_path) as con:
        for hour in ("09", "13"):
            f = _write(
                tmp_path / f"nodes_2024-05-03T{hour}00.json",
                node("gaudi-1", {"habana.ai/gaudi": "8"}),
                node("node-nv", {"nvidia.com/gpu": "8"}),
            )
            opts = ingest_options(cfg, "k8s-objects", "k")
            ingest_file(con, "k8s-objects", f, opts)
    _load(cfg, _write(tmp_path / "pods_2024-05-03.json", _pod("nv", {"nvidia.com/gpu": "8"})))
    assert _query(cfg, "SELECT gpu_s FROM core.jobs WHERE job_id = 'ml/nv'") == [(57_600.0,)]
    assert _query(
        cfg,
        "SELECT cluster, value, detail FROM analytics.data_quality"
        " WHERE \"check\" = 'uncounted_accelerator_node_resource'",
    ) == [
        ("k", 1.0, "nodes advertise accelerator resources that are not counted as GPUs (no GPU "
         "capacity): habana.ai/gaudi (1 node)"),
    ]  # fmt: skip
    assert _query(cfg, _FINDING) == []


def test_kueue_objects_of_uncounted_accelerators_are_findings(tmp_path: Path) -> None:
    """The ClusterQueue cluster-queue gives ``habana.ai/gaudi`` quota 16 (and cpu, memory); the
    Workload asks 2 pods x 4 ``habana.ai/gaudi`` = 8 Gaudi devices. By hand: no GPU quota row
    and 0 GPUs for the Workload (as before); the Workload finding for k counts 1 Workload and the
    ClusterQueue finding 1 ClusterQueue, each naming ``habana.ai/gaudi`` (was: no finding)."""
    cfg = _config(tmp_path)
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, "k8s-objects", _KUEUE_GAUDI, ingest_options(cfg, "k8s-objects", "k"))
    _load(cfg, _write(tmp_path / "pods_2024-05-03.json", _pod("nv", {"nvidia.com/gpu": "8"})))
    assert _query(cfg, "SELECT name, gpus, uncounted_resources FROM raw.k8s_workloads") == [
        ("job-sample-job-gaudi-5f2c1", 0.0, "habana.ai/gaudi")
    ]
    assert _query(cfg, "SELECT flavor, nominal_gpus FROM raw.kueue_cluster_queues") == [
        (None, None)
    ]
    assert _query(cfg, _KUEUE_FINDINGS) == [
        ("k", "uncounted_accelerator_workload_resource", 1.0,
         "Kueue workloads asked accelerator resources that are not counted as GPUs (0 GPUs "
         "here): habana.ai/gaudi (1 workload)"),
        ("k", "uncounted_accelerator_cluster_queue_resource", 1.0,
         "Kueue ClusterQueues give quota of accelerator resources that are not counted as GPUs "
         "(no GPU quota): habana.ai/gaudi (1 ClusterQueue)"),
    ]  # fmt: skip
    # the pod finding is not affected: nv asks a counted GPU
    assert _query(cfg, _FINDING) == []


def test_an_old_warehouse_gets_the_kueue_columns(tmp_path: Path) -> None:
    """A warehouse whose raw.k8s_workloads and raw.kueue_cluster_queues predate
    ``uncounted_resources``: opening it adds the column (NULL in the rows already loaded, so no
    finding), and loading the export again fills it (1 Workload, 1 ClusterQueue)."""
    cfg = _config(tmp_path)
    opts = ingest_options(cfg, "k8s-objects", "k")
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, "k8s-objects", _KUEUE_GAUDI, opts)
        con.execute("ALTER TABLE raw.k8s_workloads DROP COLUMN uncounted_resources")
        con.execute("ALTER TABLE raw.kueue_cluster_queues DROP COLUMN uncounted_resources")
        ensure_raw_tables(con)
        rebuild(con, cfg, full=True)
    assert _query(cfg, "SELECT uncounted_resources FROM raw.k8s_workloads") == [(None,)]
    assert _query(cfg, _KUEUE_FINDINGS) == []
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, "k8s-objects", _KUEUE_GAUDI, opts)
        rebuild(con, cfg, full=True)
    assert [r[2] for r in _query(cfg, _KUEUE_FINDINGS)] == [1.0, 1.0]
