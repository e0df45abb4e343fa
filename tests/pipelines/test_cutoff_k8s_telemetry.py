"""A Kubernetes cluster's data cut-off reaches the latest moment its loaded inputs observed it:
its pods' times, its Events' last-seen times and the latest DCGM sample of a pod still running
(METRICS.md, "as_of"), as a running Slurm row's Elapsed moves a Slurm cluster's.

One Kubernetes cluster ``k8s-x`` with two 8-GPU nodes (UTC), 2026-11-02: pod ``prep-0`` (4 GPUs,
n2) ran 09:00–10:00; pod ``train-0`` (8 GPUs, n1) was created, bound and started at 10:00 and is
still ``Running`` in the only pod listing, whose latest time is therefore 10:00; dcgm-exporter
samples of its GPU 0, labelled with the pod, every 30 minutes from 10:00 to 12:30.

By hand: the cut-off is 12:30 (the pods alone: 10:00) and ``train-0`` holds 8 GPUs × 2.5 h =
72,000 GPU-s (the pods alone: 0), 28,800 in each of hours 10 and 11 and 14,400 in hour 12;
with ``prep-0``'s 4 × 3,600 = 14,400 in hour 09, 86,400 allocated in all. Built incrementally:
first the pods alone (cut-off 10:00, 14,400 GPU-s), then the samples: the days between the two
cut-offs are rebuilt, equal to a full rebuild."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from pipelines.analytics.build import rebuild
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect
from tests.pipelines.test_incremental import assert_equals_full_rebuild
from tests.pipelines.test_incremental_pods import K, _dcgm, _every_30_min, _pod, cluster

__all__ = ["cluster"]  # the fixture, used by name


def _running_pod(name: str, start: str) -> dict[str, Any]:
    """A pod of 8 GPUs on n1, bound and started at ``start``, still running."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "nlp", "uid": f"uid-{name}",
                     "creationTimestamp": start, "labels": {}},
        "spec": {"nodeName": "n1", "containers": [
            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
        "status": {"phase": "Running", "startTime": start,
                   "conditions": [{"type": "PodScheduled", "status": "True",
                                   "lastTransitionTime": start}],
                   "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                          "state": {"running": {"startedAt": start}}}]},
    }  # fmt: skip


def _figures(cfg_path: Path) -> tuple[dt.datetime, float, list[tuple[int, float]]]:
    with connect(cfg_path) as con:
        (cut,) = con.execute(
            "SELECT as_of FROM core.build_cutoffs WHERE cluster = ?", [K]
        ).fetchall()[0]
        hours = con.execute(
            "SELECT hour(timezone('UTC', hour)), allocated_gpu_s FROM analytics.occupancy_hourly "
            "WHERE cluster = ? AND allocated_gpu_s > 0 ORDER BY hour",
            [K],
        ).fetchall()
    return cut, sum(a for _, a in hours), hours


def test_running_pods_latest_sample_moves_the_cut_off(cluster: tuple[Any, Path]) -> None:
    """See the module's docstring: cut-off 10:00 and 14,400 GPU-s from the pods alone; with
    ``train-0``'s samples to 12:30, cut-off 12:30 and 14,400 + 72,000 (28,800 + 28,800 +
    14,400) = 86,400 GPU-s, incremental equal to full."""
    cfg, tmp = cluster
    pods = tmp / "inputs" / "pods_2026-11-02.json"
    pods.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List",
                    "items": [_pod("prep-0", "nlp", "prep", "n2", "2026-11-02T09:00:00Z",
                                   "2026-11-02T10:00:00Z"),
                              _running_pod("train-0", "2026-11-02T10:00:00Z")]}),
        "utf-8",
    )  # fmt: skip
    samples = _dcgm(
        tmp / "inputs" / "dcgm_2026-11-02.prom", "n1", 0, "nlp", "train-0",
        _every_30_min("2026-11-02T10:00:00", "2026-11-02T12:31:00"),
    )  # fmt: skip
    opts = IngestOptions(cluster=K, tz="UTC")
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, "k8s-pods", pods, opts)
        rebuild(con, cfg)
    cut1, alloc1, _ = _figures(cfg.warehouse_path)
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, "dcgm", samples, opts)
        rebuild(con, cfg)
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
    cut2, alloc2, hours = _figures(cfg.warehouse_path)
    at = dt.datetime(2026, 11, 2, 10, tzinfo=dt.UTC)
    assert (cut1, alloc1) == (at, 14_400.0)
    assert mode == "incremental"
    assert cut2 == dt.datetime(2026, 11, 2, 12, 30, tzinfo=dt.UTC)
    assert hours == [(9, 14_400.0), (10, 28_800.0), (11, 28_800.0), (12, 14_400.0)]
    assert alloc2 == 86_400.0
    assert_equals_full_rebuild(cfg, tmp)
