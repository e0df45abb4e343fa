"""A Kubernetes cluster's data cut-off reaches the latest Kueue Workload condition it loaded
(METRICS.md "as_of"): a preemption Kueue recorded after the pod listing is data the cluster
holds, as a pod time is.

One Kubernetes cluster ``k8s-x`` with two 8-GPU nodes (UTC), 2026-11-02: pod ``prep-0`` (4 GPUs,
n2) ran 09:00–10:00; pod ``train-0`` (8 GPUs, n1) of Workload ``job-train-1`` was created, bound
and started at 10:00 and is still ``Running`` in the only pod listing, whose latest time is
therefore 10:00. The Workload snapshot, taken later, says Kueue reserved quota and admitted it at
10:00 and evicted it at 12:00 (``Evicted`` reason ``Preempted``, ``Preempted`` reason
``InClusterQueue``): its attempt ran 10:00–12:00 and was PREEMPTED.

By hand: the cut-off is 12:00 (the pods alone: 10:00, and the attempt ending at 12:00 was cut
there: 0 GPU-s of it allocated), and ``train-0`` holds 8 GPUs × 2 h = 57,600 GPU-s, 28,800 in
each of hours 10 and 11; with ``prep-0``'s 4 × 3,600 = 14,400 in hour 09, 72,000 allocated in
all (the pods alone: 14,400). Built incrementally: first the pods alone, then the Workloads: the
days between the two cut-offs are rebuilt, equal to a full rebuild."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from pipelines.analytics.build import rebuild
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect
from tests.pipelines.test_cutoff_k8s_telemetry import _figures, _running_pod
from tests.pipelines.test_incremental import assert_equals_full_rebuild
from tests.pipelines.test_incremental_pods import K, _list, _pod, _workload, cluster

__all__ = ["cluster"]  # the fixture, used by name


def _preempted_workload() -> dict[str, Any]:
    """``job-train-1``: one pod set of 8 GPUs, admitted at 10:00, evicted (preempted) at 12:00."""
    wl = _workload("job-train-1", "train", "lq-nlp", "2026-11-02T10:00:00Z",
                   "2026-11-02T12:00:00Z")  # fmt: skip
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "8"}
    }
    wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] = {"nvidia.com/gpu": "8"}
    conds = [c for c in wl["status"]["conditions"] if c["type"] != "Finished"]
    at = "2026-11-02T12:00:00Z"
    wl["status"]["conditions"] = [
        *conds,
        {"type": "Evicted", "status": "True", "reason": "Preempted", "lastTransitionTime": at,
         "message": "Preempted to accommodate a workload due to prioritization"},
        {"type": "Preempted", "status": "True", "reason": "InClusterQueue",
         "lastTransitionTime": at, "message": "Preempted to accommodate a workload"},
    ]  # fmt: skip
    return wl


def test_a_workloads_eviction_after_the_pod_listing_moves_the_cut_off(
    cluster: tuple[Any, Path],
) -> None:
    """See the module's docstring: cut-off 10:00 and 14,400 GPU-s from the pods alone; with the
    Workload evicted at 12:00, cut-off 12:00 and 14,400 + 57,600 (28,800 + 28,800) = 72,000
    GPU-s, the attempt PREEMPTED 10:00–12:00, incremental equal to full."""
    cfg, tmp = cluster
    train = _running_pod("train-0", "2026-11-02T10:00:00Z")
    train["metadata"]["annotations"] = {"kueue.x-k8s.io/workload": "job-train-1"}
    pods = _list(tmp / "inputs" / "pods_2026-11-02.json", [
        _pod("prep-0", "nlp", "prep", "n2", "2026-11-02T09:00:00Z", "2026-11-02T10:00:00Z"),
        train,
    ])  # fmt: skip
    workloads = _list(tmp / "inputs" / "workloads_2026-11-02.json", [_preempted_workload()])
    opts = IngestOptions(cluster=K, tz="UTC")
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, "k8s-pods", pods, opts)
        rebuild(con, cfg)
    cut1, alloc1, _ = _figures(cfg.warehouse_path)
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, "k8s-objects", workloads, opts)
        rebuild(con, cfg)
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
        job = con.execute(
            "SELECT state, start_at, end_at, gpu_s FROM core.jobs WHERE cluster = ? "
            "AND job_id = 'nlp/job-train-1'",
            [K],
        ).fetchall()
    cut2, alloc2, hours = _figures(cfg.warehouse_path)
    at = dt.datetime(2026, 11, 2, 10, tzinfo=dt.UTC)
    assert (cut1, alloc1) == (at, 14_400.0)
    assert mode == "incremental"
    assert job == [("PREEMPTED", at, at + dt.timedelta(hours=2), 57_600.0)]
    assert cut2 == dt.datetime(2026, 11, 2, 12, tzinfo=dt.UTC)
    assert hours == [(9, 14_400.0), (10, 28_800.0), (11, 28_800.0)]
    assert alloc2 == 72_000.0
    assert_equals_full_rebuild(cfg, tmp)
