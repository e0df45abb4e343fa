"""Kubernetes pods that failed without a container finish time, built end to end (no inventory:
capacity is observed): pods rejected at kubelet admission hold no GPU and raise no node's
capacity; evicted pods end at their DisruptionTarget time as failed work, or, when nothing says
when, at their last known time with a data-quality finding; never goodput to the cut-off. An
incremental build over a second snapshot equals a full one. Fixtures:
``tests/fixtures/k8s-pods/SOURCE.md``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import ingest_file, ingest_options
from pipelines.warehouse import connect, init_warehouse
from tests.pipelines.test_incremental import assert_equals_full_rebuild

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s-pods"


def _config(tmp_path: Path, inventory: str = "") -> Config:
    """One Kubernetes cluster ``k``, UTC, no registry; ``inventory``: its CSV, else none."""
    if inventory:
        (tmp_path / "inventory").mkdir()
        (tmp_path / "inventory" / "k.csv").write_text(inventory, encoding="utf-8")
    (tmp_path / "goodput.toml").write_text(
        f'default_cluster = "k"\n[warehouse]\npath = "{tmp_path / "w.duckdb"}"\n'
        f'serving_path = "{tmp_path / "s.duckdb"}"\ninputs = "{tmp_path / "inputs"}"\n'
        f'inventory = "{tmp_path / "inventory"}"\nregistry = "{tmp_path / "registry.yaml"}"\n'
        'partitions_start = "2024-01-01"\n[[clusters]]\nname = "k"\n'
        'scheduler = "kubernetes"\ntimezone = "UTC"\n',
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "goodput.toml")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
    return cfg


def _load(cfg: Config, *paths: Path, full: bool = True) -> None:
    with connect(cfg.warehouse_path) as con:
        for p in paths:
            ingest_file(con, "k8s-pods", p, ingest_options(cfg, "k8s-pods", "k"))
        rebuild(con, cfg, full=full)


def _query(cfg: Config, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    with connect(cfg.warehouse_path, read_only=True) as con:
        return con.execute(sql, params).fetchall()


def _h(day: int, hour: int) -> dt.datetime:
    return dt.datetime(2024, 5, day, hour, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "file", ["pods_admission_2024-05-02.json", "pods_admission_sched_2024-05-02.json"]
)
def test_pods_rejected_at_admission_hold_nothing(tmp_path: Path, file: str) -> None:
    """train-0 (3 GPUs, node-11) runs from 08:00; five 1-GPU pods on node-11 were rejected
    (UnexpectedAdmissionError) at 09:00 - 09:04; late (1 GPU, node-12) runs 11:00 - 12:00.
    By hand, at 10:00: allocated = train-0 only = 3 x 3,600 = 10,800 GPU-s; node-11 held 3
    GPUs at most and node-12 1, so capacity = 4 x 3,600 = 14,400 and occupancy 0.75; goodput
    10,800. Each rejected pod is a FAILED attempt of 0 GPU-s ending where it began."""
    cfg = _config(tmp_path)
    _load(cfg, FIXTURES / file)
    assert _query(cfg, "SELECT host, gpus FROM core.nodes ORDER BY host") == [
        ("node-11", 3.0),
        ("node-12", 1.0),
    ]
    ((alloc, cap, occ),) = _query(
        cfg,
        "SELECT allocated_gpu_s, capacity_gpu_s, occupancy FROM analytics.occupancy_hourly"
        " WHERE hour = $h",
        h=_h(2, 10),
    )
    assert (alloc, cap, occ) == (10_800.0, 14_400.0, pytest.approx(0.75))
    ((goodput,),) = _query(
        cfg,
        "SELECT gpu_s FROM analytics.gpu_waterfall_hourly WHERE hour = $h AND bucket = 'goodput'",
        h=_h(2, 10),
    )
    assert goodput == 10_800.0
    rejected = _query(
        cfg,
        "SELECT state, gpu_s, end_at = start_at FROM core.jobs"
        " WHERE job_id LIKE 'ml/infer-7c9f-%' ORDER BY job_id",
    )
    assert rejected == [("FAILED", 0.0, True)] * 5


def test_evicted_pods_are_failed_work_not_goodput(tmp_path: Path) -> None:
    """two-ctr (2 GPUs, 10:00 - 11:00) and runner (1 GPU, from 09:00, running) are the only
    pods after the evictions. evicted-105467 (4 GPUs, bound 10:00) ends at its DisruptionTarget
    time 10:30:02: 4 x 1,802 = 7,208 GPU-s of failed work (FAILED, reason
    TerminationByKubelet). evicted (1 GPU) and evicted-new (2 GPUs) give no end: they end at
    their last known time, 10:00 (their binding), so 0 GPU-s, and the data-quality finding
    pods_ended_without_time counts 2 on 2024-05-01. By hand: allocated at 11:00 and 12:00 =
    runner only = 3,600 each; at 10:00 goodput = 7,200 + 3,600 = 10,800 and failed work 7,208."""
    cfg = _config(tmp_path)
    _load(cfg, FIXTURES / "pods_evicted_2024-05-01.json")
    jobs = _query(
        cfg,
        "SELECT job_id, state, end_at, gpu_s FROM core.jobs"
        " WHERE job_id LIKE 'ml/evicted%' ORDER BY job_id",
    )
    assert jobs == [
        ("ml/evicted", "FAILED", _h(1, 10), 0.0),
        ("ml/evicted-105467", "FAILED", _h(1, 10) + dt.timedelta(minutes=30, seconds=2), 7_208.0),
        ("ml/evicted-new", "FAILED", _h(1, 10), 0.0),
    ]
    alloc = _query(
        cfg,
        "SELECT hour, allocated_gpu_s FROM analytics.occupancy_hourly"
        " WHERE hour >= $h ORDER BY hour",
        h=_h(1, 10),
    )
    assert alloc == [(_h(1, 10), 18_008.0), (_h(1, 11), 3_600.0), (_h(1, 12), 3_600.0)]
    leaves = dict(
        _query(
            cfg,
            "SELECT bucket, gpu_s FROM analytics.gpu_waterfall_hourly WHERE hour = $h",
            h=_h(1, 10),
        )
    )
    assert leaves["goodput"] == 10_800.0
    assert leaves["failed_work_user"] + leaves["failed_work_infra"] == 7_208.0
    for hour in (11, 12):
        ((goodput,),) = _query(
            cfg,
            "SELECT gpu_s FROM analytics.gpu_waterfall_hourly"
            " WHERE hour = $h AND bucket = 'goodput'",
            h=_h(1, hour),
        )
        assert goodput == 3_600.0
    assert _query(
        cfg,
        "SELECT day, value FROM analytics.data_quality WHERE \"check\" = 'pods_ended_without_time'",
    ) == [(dt.date(2024, 5, 1), 2.0)]


def test_an_eviction_loaded_after_the_running_snapshot_equals_a_full_build(
    tmp_path: Path,
) -> None:
    """A first snapshot shows the three evicted pods still Running (bound 10:00); the second
    (the fixture) shows them Failed. The incremental build after the second load gives the
    full build's tables row for row, with evicted-105467's 7,208 GPU-s of failed work. (With an
    inventory: without one the nodes the evicted pods held change, and any such change builds
    in full.)"""
    rows = "".join(f"n{i},8,h100,p,r1\n" for i in range(1, 6))
    cfg = _config(tmp_path, "host,gpus,gpu_type,partition,rack\n" + rows)
    doc = json.loads((FIXTURES / "pods_evicted_2024-05-01.json").read_text("utf-8"))
    for item in doc["items"]:
        if item["metadata"]["name"].startswith("evicted"):
            item["status"] = {
                "phase": "Running",
                "startTime": "2024-05-01T10:00:00Z",
                "conditions": [{"type": "PodScheduled", "status": "True",
                                "lastTransitionTime": "2024-05-01T10:00:00Z"}],
                "containerStatuses": [{"name": "train", "restartCount": 0, "state": {
                    "running": {"startedAt": "2024-05-01T10:00:05Z"}}}],
            }  # fmt: skip
    first = tmp_path / "pods_2024-05-01T1100.json"
    first.write_text(json.dumps(doc), encoding="utf-8")
    _load(cfg, first)
    _load(cfg, FIXTURES / "pods_evicted_2024-05-01.json", full=False)
    ((mode,),) = _query(
        cfg, "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
    )
    assert mode == "incremental"
    assert _query(cfg, "SELECT gpu_s FROM core.jobs WHERE job_id = 'ml/evicted-105467'") == [
        (7_208.0,)
    ]
    assert assert_equals_full_rebuild(cfg, tmp_path) > 10
