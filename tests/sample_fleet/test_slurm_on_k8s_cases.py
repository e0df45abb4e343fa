"""Slurm on Kubernetes, built end to end from small hand-computable inputs
(:mod:`tests.sample_fleet._sok_cases`): each GPU-second once over the pair ``sc``/``kc``
(METRICS.md "Slurm on Kubernetes"). kc has 16 GPUs: 57 600 GPU-s an hour."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sample_fleet import _sok_cases as sk


def _by_hour(cfg, sql: str) -> dict:
    return {(r[0], r[1].hour): r[2:] for r in sk.q(cfg, sql).rows()}


def test_slurm_time_no_slurmd_pod_held_is_not_counted_twice(tmp_path: Path) -> None:
    """slurmd pod slinky-0-a (sok-0, kn1, 4 GPUs) runs 00:00–01:00 and its successor slinky-0-b
    01:05–04:00; job 401 holds 4 GPUs of sok-0 00:00–02:00.

    Hour 01 by hand: lent 4 × 3 300 = 13 200, so sc capacity 13 200 and kc 57 600 − 13 200 =
    44 400. The job is mapped for 13 200 GPU-s; its 1 200 unmapped GPU-s (the gap) are the
    finding ``sok_job_without_pod`` and kc's idle, not sc's allocation as well: sc allocated
    13 200, occupancy 1.0, sc's waterfall leaves 13 200 (goodput), the pair's 57 600."""
    root = sk.setup(tmp_path)
    items = [
        sk.pod("slurm", "slinky-0-a", "kn1", 4, 0, 1, slurm_node="sok-0"),
        sk.pod("slurm", "slinky-0-b", "kn1", 4, 1 + 5 / 60, 4, slurm_node="sok-0"),
        sk.pod("ml", "keep", "kn2", 1, 0, 4),
    ]
    pf = sk.pods_file(root, "pods_2026-11-02.json", items)
    sf = sk.write(root, "sacct_2026-11-02.psv",
                  sk.sacct([(401, "physics", 4, 0, 2, "sok-0", "COMPLETED")]))  # fmt: skip
    cfg = sk.load(root, [("sacct", sf), ("k8s-pods", pf)])
    occ = _by_hour(cfg, "SELECT cluster, hour, capacity_gpu_s, allocated_gpu_s, occupancy "
                        "FROM occupancy_hourly")  # fmt: skip
    assert occ["sc", 1] == (13200.0, 13200.0, 1.0)
    assert occ["kc", 1][0] == 44400.0
    wf = _by_hour(cfg, "SELECT cluster, hour, sum(gpu_s), sum(gpu_s) FILTER (bucket = 'goodput') "
                       "FROM gpu_waterfall_hourly GROUP BY ALL")  # fmt: skip
    assert wf["sc", 1] == (13200.0, 13200.0)
    assert wf["sc", 1][0] + wf["kc", 1][0] == 57600.0
    dq = sk.q(cfg, "SELECT value FROM data_quality WHERE \"check\" = 'sok_job_without_pod'")
    assert dq["value"].to_list() == [pytest.approx(1200.0)]
