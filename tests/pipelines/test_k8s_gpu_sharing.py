"""A Kubernetes node's GPUs are physical GPUs whatever the device plugin advertises: under the MIG
"single" strategy each ``nvidia.com/gpu`` is one MIG slice of the profile the node's
``nvidia.com/gpu.product`` label names, under time-slicing with ``R`` replicas (label
``nvidia.com/gpu.replicas``) each ``nvidia.com/gpu`` (or, renamed, ``nvidia.com/gpu.shared``) is
``1/R`` of a GPU; a pod bound to such a node holds that fraction per unit it asks for (METRICS.md
"Units"). Fixtures: ``tests/fixtures/k8s-gpu-sharing`` (see its SOURCE.md); full builds, and an
incremental build equal to a full one when the Node snapshot is loaded after the pods."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.pipelines.test_incremental import assert_equals_full_rebuild

K = "k1"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s-gpu-sharing"
# the Node snapshots' time (file modification time; kubectl prints none)
_SNAPSHOT = dt.datetime(2024, 10, 8, 11, 0, tzinfo=dt.UTC).timestamp()


@pytest.fixture
def cfg(tmp_path: Path) -> Config:
    """Kubernetes cluster k1 (UTC), no inventory: capacity from the Node snapshots."""
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inputs").mkdir()
    (tmp_path / "goodput.toml").write_text(
        f'default_cluster = "{K}"\n[warehouse]\npath = "{tmp_path / "w.duckdb"}"\n'
        f'serving_path = "{tmp_path / "s.duckdb"}"\ninputs = "{tmp_path / "inputs"}"\n'
        f'inventory = "{tmp_path / "inventory"}"\nregistry = "{tmp_path / "registry.yaml"}"\n'
        f'partitions_start = "2010-01-01"\n[[clusters]]\nname = "{K}"\n'
        'scheduler = "kubernetes"\ntimezone = "UTC"\n',
        encoding="utf-8",
    )
    config = load_config(tmp_path / "goodput.toml")
    with connect(config.warehouse_path) as con:
        init_warehouse(con)
    return config


def _load(cfg: Config, kind: str, path: Path) -> None:
    """Copy ``path`` into the inputs (a Node file keeps its 11:00 snapshot time) and load it."""
    dest = cfg.warehouse_path.parent / "inputs" / path.name
    if path != dest:
        shutil.copyfile(path, dest)
    if kind == "k8s-objects":
        os.utime(dest, (_SNAPSHOT, _SNAPSHOT))
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, kind, dest, IngestOptions(cluster=K, tz="UTC"))


def _build(cfg: Config, *, full: bool = False) -> str:
    with connect(cfg.warehouse_path) as con:
        rebuild(con, cfg, full=full)
        ((mode,),) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
    return str(mode)


def _one(cfg: Config, sql: str) -> tuple[Any, ...]:
    with connect(cfg.warehouse_path, read_only=True) as con:
        rows = con.execute(sql).fetchall()
    assert len(rows) == 1, rows
    return tuple(rows[0])


def _hour(cfg: Config) -> tuple[Any, ...]:
    """``capacity_gpu_s, allocated_gpu_s`` of hour 10:00 and the pod's ``gpus, gpu_s``."""
    occ = _one(
        cfg,
        "SELECT capacity_gpu_s, allocated_gpu_s FROM occupancy_hourly"
        " WHERE hour = TIMESTAMPTZ '2024-10-08 10:00:00+00'",
    )
    job = _one(cfg, "SELECT gpus, gpu_s FROM jobs WHERE job_id = 'ml/nb-1'")
    return occ + job


def test_mig_single_strategy_counts_each_slice_as_its_fraction(cfg: Config) -> None:
    """k-m1: one A100-40GB advertised as 7 × ``nvidia.com/gpu`` (1g.5gb slices): capacity 1 GPU ×
    3,600 s = 3,600 GPU-s (was 7 GPUs, 25,200); pod nb-1 asks ``nvidia.com/gpu: 1`` = 1/7 GPU
    for 10:00–11:00: 3,600 / 7 = 514.29 GPU-s (was 3,600). Its slice reports every minute
    (GPU_I_PROFILE 1g.5gb, 1/7 GPU): observed 514.29, telemetry coverage 1.0 (was 0.143)."""
    _load(cfg, "k8s-pods", FIXTURES / "pods_mig_single_2024-10-08.json")
    _load(cfg, "k8s-objects", FIXTURES / "nodes_mig_single_2024-10-08.json")
    _load(cfg, "dcgm", FIXTURES / "dcgm_ms_2024-10-08.prom")
    _build(cfg, full=True)
    cap, alloc, gpus, gpu_s = _hour(cfg)
    assert cap == pytest.approx(3_600.0)
    assert alloc == pytest.approx(3_600.0 / 7)  # 514.29
    assert gpus == pytest.approx(1 / 7)
    assert gpu_s == pytest.approx(514.2857, abs=1e-3)
    obs, cov = _one(
        cfg,
        "SELECT observed_gpu_s, telemetry_coverage FROM telemetry_coverage_daily"
        " WHERE day = DATE '2024-10-08'",
    )
    assert obs == pytest.approx(3_600.0 / 7)
    assert cov == pytest.approx(1.0)


def test_time_slicing_replicas_count_a_quarter_of_a_gpu(cfg: Config) -> None:
    """k-ts1: 8 GPUs × 4 replicas advertised as 32 × ``nvidia.com/gpu``: capacity 8 × 3,600 =
    28,800 GPU-s (was 115,200); pod nb-1 holds one replica, 1/4 GPU, 10:00–11:00: 900 GPU-s
    (was 3,600)."""
    _load(cfg, "k8s-pods", FIXTURES / "pods_ts_2024-10-08.json")
    _load(cfg, "k8s-objects", FIXTURES / "nodes_ts_2024-10-08.json")
    _build(cfg, full=True)
    assert _hour(cfg) == pytest.approx((28_800.0, 900.0, 0.25, 900.0))


def _renamed(path: Path, out: Path, *, pod: bool) -> Path:
    """``path`` with ``nvidia.com/gpu`` renamed ``nvidia.com/gpu.shared`` (device plugin
    ``renameByDefault: true``) in the node's capacity/allocatable or the pod's requests."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    for item in doc["items"]:
        if pod:
            where = [c["resources"][k] for c in item["spec"]["containers"]
                     for k in ("limits", "requests")]  # fmt: skip
        else:
            where = [item["status"]["allocatable"], item["status"]["capacity"]]
        for amounts in where:
            amounts["nvidia.com/gpu.shared"] = amounts.pop("nvidia.com/gpu")
    out.write_text(json.dumps(doc), encoding="utf-8")
    return out


def test_renamed_time_slicing_replicas_are_gpus_too(cfg: Config, tmp_path: Path) -> None:
    """The same node and pod with the replicas renamed ``nvidia.com/gpu.shared`` (32 on the
    node, 1 asked): capacity 28,800 GPU-s and the pod 900 GPU-s, 1/4 GPU, as unrenamed (before,
    ``nvidia.com/gpu.shared`` was no GPU resource: no capacity and a pod of 0 GPUs)."""
    pods = _renamed(FIXTURES / "pods_ts_2024-10-08.json", tmp_path / "pods_ts_2024-10-08.json",
                    pod=True)  # fmt: skip
    nodes = _renamed(FIXTURES / "nodes_ts_2024-10-08.json",
                     tmp_path / "nodes_ts_2024-10-08.json", pod=False)  # fmt: skip
    _load(cfg, "k8s-pods", pods)
    _load(cfg, "k8s-objects", nodes)
    _build(cfg, full=True)
    assert _hour(cfg) == pytest.approx((28_800.0, 900.0, 0.25, 900.0))


def test_a_node_snapshot_loaded_after_its_pods_rewrites_them_incrementally(
    cfg: Config, tmp_path: Path
) -> None:
    """Inventory k-ts1: 8 GPUs. Pods first (no Node yet: nb-1 counts the 1 GPU it asks for,
    3,600 GPU-s), then the time-sliced Node snapshot: the incremental build gives the pod 1/4
    GPU (900 GPU-s; capacity 8 GPUs, 28,800, both times) and equals a full rebuild."""
    (tmp_path / "inventory" / f"{K}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nk-ts1,8,a100,,\n", encoding="utf-8"
    )
    _load(cfg, "k8s-pods", FIXTURES / "pods_ts_2024-10-08.json")
    assert _build(cfg) == "full"
    assert _hour(cfg) == pytest.approx((28_800.0, 3_600.0, 1.0, 3_600.0))
    _load(cfg, "k8s-objects", FIXTURES / "nodes_ts_2024-10-08.json")
    assert _build(cfg) == "incremental"
    assert _hour(cfg) == pytest.approx((28_800.0, 900.0, 0.25, 900.0))
    assert assert_equals_full_rebuild(cfg, tmp_path) > 10
