"""A Kueue gang whose pods hold their GPUs over different spans, built end to end: every hourly
table spreads the GPUs each pod held (METRICS.md "GPU holding"), not the attempt's GPUs over
its whole span, so each sums over hours to the attempt's ``gpu_s``. Fixtures:
``tests/fixtures/k8s-gang-holds/SOURCE.md``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from pipelines.analytics.build import rebuild
from pipelines.config import Config
from pipelines.ingest import ingest_file, ingest_options
from pipelines.warehouse import connect
from tests.pipelines.test_incremental import assert_equals_full_rebuild
from tests.pipelines.test_k8s_failed_pods_build import _config, _query

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s-gang-holds"
ALLOCATED = (
    "'failed_work_infra', 'failed_work_user', 'preempted_work', 'timeout_work', "
    "'cancelled_work', 'allocated_idle', 'goodput'"
)


def _load(cfg: Config, pods: Path, *, full: bool = True, workloads: Path | None = None) -> None:
    with connect(cfg.warehouse_path) as con:
        ingest_file(
            con,
            "k8s-objects",
            workloads or FIXTURES / "workloads_2026-11-02.json",
            ingest_options(cfg, "k8s-objects", "k"),
        )
        ingest_file(con, "k8s-pods", pods, ingest_options(cfg, "k8s-pods", "k"))
        rebuild(con, cfg, full=full)


def _h(hour: int) -> dt.datetime:
    return dt.datetime(2026, 11, 2, hour, tzinfo=dt.UTC)


def _hourly(cfg: Config) -> dict[str, list[tuple[Any, ...]]]:
    """Per hour: occupancy's allocated, the waterfall's allocated leaves, the waterfall's leaf
    sum and capacity; and the fairness tables' usage."""
    return {
        "occupancy": _query(
            cfg, "SELECT hour, allocated_gpu_s FROM analytics.occupancy_hourly ORDER BY hour"
        ),
        "waterfall": _query(
            cfg,
            f"SELECT hour, sum(gpu_s) FILTER (WHERE bucket IN ({ALLOCATED})),"
            " sum(gpu_s) - max(capacity_gpu_s)"
            " FROM analytics.gpu_waterfall_hourly GROUP BY hour ORDER BY hour",
        ),
        "fair_hourly": _query(
            cfg,
            "SELECT hour, sum(usage_gpu_s) FROM analytics.fair_share_hourly"
            " GROUP BY hour ORDER BY hour",
        ),
        "fairness_weekly": _query(
            cfg, "SELECT usage_gpu_s FROM analytics.fairness_weekly WHERE cluster = 'k'"
        ),
        "gpu_s": _query(cfg, "SELECT gpu_s FROM core.jobs"),
    }


def test_pods_bound_and_ended_apart_count_per_pod_each_hour(tmp_path: Path) -> None:
    """worker-0 (8 GPUs) holds 08:10 - 08:40, worker-1 (8 GPUs) 08:20 - 10:10, the launcher
    none. By hand: 08:10 - 08:20 8 GPUs, 08:20 - 08:40 16, 08:40 - 10:10 8, so hour 8 =
    8 x 600 + 16 x 1,200 + 8 x 1,200 = 33,600, hour 9 = 8 x 3,600 = 28,800, hour 10 =
    8 x 600 = 4,800; Σ = 67,200 = gpu_s (8 x 1,800 + 8 x 6,600). The attempt's 16 GPUs over
    08:10 - 10:10 gave 48,000 / 57,600 / 9,600 = 115,200. Capacity (observed: nodes a, b with
    8 GPUs each) = 57,600 an hour; the waterfall's leaves sum to it."""
    cfg = _config(tmp_path)
    _load(cfg, FIXTURES / "pods_staggered_2026-11-02.json")
    got = _hourly(cfg)
    assert got["gpu_s"] == [(67_200.0,)]
    assert got["occupancy"] == [(_h(8), 33_600.0), (_h(9), 28_800.0), (_h(10), 4_800.0)]
    assert got["waterfall"] == [
        (_h(8), 33_600.0, 0.0),
        (_h(9), 28_800.0, 0.0),
        (_h(10), 4_800.0, 0.0),
    ]
    assert got["fair_hourly"] == [(_h(8), 33_600.0), (_h(9), 28_800.0), (_h(10), 4_800.0)]
    assert got["fairness_weekly"] == [(67_200.0,)]


def test_pods_bound_apart_ending_together(tmp_path: Path) -> None:
    """Both workers end at 10:10; worker-1 binds 10 minutes after worker-0. By hand: hour 8 =
    8 x 3,000 + 8 x 2,400 = 43,200 (not 16 x 3,000 = 48,000), hour 9 = 57,600, hour 10 =
    9,600; Σ = 110,400 = gpu_s (8 x 7,200 + 8 x 6,600)."""
    cfg = _config(tmp_path)
    _load(cfg, FIXTURES / "pods_same_end_2026-11-02.json")
    got = _hourly(cfg)
    assert got["gpu_s"] == [(110_400.0,)]
    assert got["occupancy"] == [(_h(8), 43_200.0), (_h(9), 57_600.0), (_h(10), 9_600.0)]
    assert got["waterfall"] == [
        (_h(8), 43_200.0, 0.0),
        (_h(9), 57_600.0, 0.0),
        (_h(10), 9_600.0, 0.0),
    ]
    assert got["fairness_weekly"] == [(110_400.0,)]


def _running_workloads(tmp_path: Path) -> Path:
    """The Workload seen at 08:40: admitted, not yet Finished (its Finished condition of 10:10
    would move the cluster's cut-off there: METRICS.md "as_of")."""
    doc = json.loads((FIXTURES / "workloads_2026-11-02.json").read_text(encoding="utf-8"))
    for item in doc["items"]:
        conds = item["status"]["conditions"]
        item["status"]["conditions"] = [c for c in conds if c["type"] != "Finished"]
    path = tmp_path / "workloads_2026-11-02.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _running_snapshot(tmp_path: Path) -> Path:
    """The staggered pods seen at 08:40: worker-0 over, the launcher and worker-1 running
    (no finish; the cluster's cut-off is then 08:40, worker-0's finish)."""
    doc = json.loads((FIXTURES / "pods_staggered_2026-11-02.json").read_text(encoding="utf-8"))
    for item in doc["items"]:
        if item["metadata"]["name"] == "train-worker-0":
            continue
        item["status"]["phase"] = "Running"
        for cs in item["status"]["containerStatuses"]:
            cs["ready"] = True
            cs["state"] = {"running": {"startedAt": cs["state"]["terminated"]["startedAt"]}}
    path = tmp_path / "pods_2026-11-02.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_running_gang_counts_its_pods_to_the_cutoff_and_incremental_equals_full(
    tmp_path: Path,
) -> None:
    """At the 08:40 snapshot the attempt runs: 8 GPUs 08:10 - 08:20 and 16 GPUs 08:20 - 08:40
    (worker-1 held on past the cut-off): hour 8 = 4,800 + 19,200 = 24,000, not 16 x 1,800 =
    28,800. The final snapshot, built incrementally on top, equals a full build."""
    cfg = _config(tmp_path)
    _load(cfg, _running_snapshot(tmp_path), workloads=_running_workloads(tmp_path))
    got = _hourly(cfg)
    assert got["occupancy"] == [(_h(8), 24_000.0)]
    assert got["waterfall"] == [(_h(8), 24_000.0, 0.0)]
    _load(cfg, FIXTURES / "pods_staggered_2026-11-02.json", full=False)
    assert _hourly(cfg)["occupancy"] == [
        (_h(8), 33_600.0),
        (_h(9), 28_800.0),
        (_h(10), 4_800.0),
    ]
    assert assert_equals_full_rebuild(cfg, tmp_path) > 10
