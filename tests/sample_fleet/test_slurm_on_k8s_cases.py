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


@pytest.mark.parametrize("order", ["12", "21"])
def test_two_slurmd_pods_of_one_slurm_node_are_one_node(tmp_path: Path, order: str) -> None:
    """Snapshot 01:00: slurmd pod slinky-0-a (sok-0, kn1, 4 GPUs) running since 00:00. Snapshot
    04:00: slinky-0-b (sok-0, kn1, 4 GPUs) running since 01:10, slinky-0-a gone (no record of
    its end). Job 501: 4 GPUs on sok-0, 01:15–03:00 (as_of 03:00). Either load order.

    sok-0 is one Slurm node: slinky-0-a ended when slinky-0-b started (01:10).
    Hour 01: lent 4 × 600 + 4 × 3 000 = 14 400, Slurm allocated 4 × 2 700 = 10 800.
    Hour 02: lent 14 400, allocated 14 400 (before: 28 800 each, the job counted once per pod).
    Capacity: hour 01 kc 57 600 − 14 400 = 43 200 and sc 14 400 (before 31 200 and 26 400),
    hour 02 sc 14 400 (kc's cut-off is its last pod event, 01:10).
    Finding ``sok_node_overlap``: slinky-0-a's 4 GPUs from 01:10 to the cut-off 03:00 =
    4 × 6 600 = 26 400 GPU-s cut."""
    root = sk.setup(tmp_path)
    p1 = sk.pods_file(root, "pods_2026-11-02T010000Z.json", [
        sk.pod("slurm", "slinky-0-a", "kn1", 4, 0, None, slurm_node="sok-0"),
        sk.pod("ml", "keep", "kn2", 1, 0, None),
    ])  # fmt: skip
    p2 = sk.pods_file(root, "pods_2026-11-02T040000Z.json", [
        sk.pod("slurm", "slinky-0-b", "kn1", 4, 1 + 10 / 60, None, slurm_node="sok-0"),
        sk.pod("ml", "keep", "kn2", 1, 0, None),
    ])  # fmt: skip
    sf = sk.write(root, "sacct_2026-11-02.psv",
                  sk.sacct([(501, "physics", 4, 1.25, 3, "sok-0", "COMPLETED")]))  # fmt: skip
    pods = [("k8s-pods", p1), ("k8s-pods", p2)]
    cfg = sk.load(root, [("sacct", sf), *(pods if order == "12" else pods[::-1])])
    sok = _by_hour(cfg, "SELECT k8s_node, hour, lent_to_slurm_gpu_s, slurm_allocated_gpu_s "
                        "FROM slurm_on_k8s_hourly")  # fmt: skip
    assert sok["kn1", 1] == (14400.0, 10800.0)
    assert sok["kn1", 2] == (14400.0, 14400.0)
    occ = _by_hour(cfg, "SELECT cluster, hour, capacity_gpu_s FROM occupancy_hourly")
    assert (occ["kc", 1], occ["sc", 1], occ["sc", 2]) == ((43200.0,), (14400.0,), (14400.0,))
    dq = sk.q(cfg, "SELECT value FROM data_quality WHERE \"check\" = 'sok_node_overlap'")
    assert dq["value"].to_list() == [pytest.approx(26400.0)]


def test_an_older_pods_snapshot_loaded_last_does_not_reopen_a_finished_pod(
    tmp_path: Path,
) -> None:
    """Day 1's pods file shows native pod ml/train-1 (kn1, 2 GPUs) running since 00:00; day
    2's shows it Succeeded at 02:00. Loaded day 2 first, then day 1: train-1 still ends at 02:00
    (a pod's life only moves forward), so kc allocated is train-1's 2 × 3 600 = 7 200 plus
    ml/keep's 3 600 (1 GPU, 00:00–04:00) = 10 800 at 00 and 01, and 3 600 at 02 and 03
    (before: 10 800 to the cut-off, the last load's Running state winning)."""
    root = sk.setup(tmp_path)
    p1 = sk.pods_file(root, "pods_2026-11-02T010000Z.json", [
        sk.pod("ml", "train-1", "kn1", 2, 0, None),
        sk.pod("ml", "keep", "kn2", 1, 0, None),
    ])  # fmt: skip
    p2 = sk.pods_file(root, "pods_2026-11-02T040000Z.json", [
        sk.pod("ml", "train-1", "kn1", 2, 0, 2),
        sk.pod("ml", "keep", "kn2", 1, 0, 4),
    ])  # fmt: skip
    cfg = sk.load(root, [("k8s-pods", p2), ("k8s-pods", p1)])
    ends = sk.q(cfg, "SELECT name, finished_at FROM core.k8s_pods ORDER BY name")
    assert [(n, e and e.hour) for n, e in ends.rows()] == [("keep", 4), ("train-1", 2)]
    occ = _by_hour(cfg, "SELECT cluster, hour, allocated_gpu_s FROM occupancy_hourly")
    assert [occ["kc", h][0] for h in range(4)] == [10800.0, 10800.0, 3600.0, 3600.0]


def test_whole_node_rule_reads_the_slurmd_pods_gpus(tmp_path: Path) -> None:
    """slurmd pod slinky-2 (Slurm node sok-2) holds all 8 GPUs of kn2, 00:00–04:00. The only
    job, 303, holds 4 of them 00:00–02:00 (no GPU index map). At 00:30 physical GPUs 0–3 read
    activity 1.0 and 4–7 read 0.0. sok-2 has 8 GPUs (the pod's), so 303 is not whole-node and
    the 8 samples are ``node_group`` (no job), 303 observes 0 GPU-s (before: sok-2 had 4 GPUs,
    the most one observed job held, and all 8 samples went to 303 ``whole_node``, mean 0.5)."""
    root = sk.setup(tmp_path)
    slinky = sk.pod("slurm", "slinky-2", "kn2", 8, 0, 4, slurm_node="sok-2")
    pf = sk.pods_file(root, "pods_2026-11-02.json", [slinky])
    sf = sk.write(root, "sacct_2026-11-02.psv",
                  sk.sacct([(303, "physics", 4, 0, 2, "sok-2", "COMPLETED")]))  # fmt: skip
    df = sk.write(root, "dcgm_kc.prom", sk.dcgm(
        [("kn2", g, "slurm", "slinky-2", 1.0 if g < 4 else 0.0, 0.5) for g in range(8)]
    ))  # fmt: skip
    cfg = sk.load(root, [("sacct", sf), ("k8s-pods", pf), ("dcgm", df)])
    ga = sk.q(cfg, "SELECT attribution, job_id, count(*) n FROM gpu_activity "
                   "WHERE host = 'sok-2' GROUP BY ALL")  # fmt: skip
    assert ga.rows() == [("node_group", None, 8)]
    summ = sk.q(cfg, "SELECT observed_gpu_s, mean_activity FROM job_gpu_summary "
                     "WHERE job_id = '303'")  # fmt: skip
    assert summ.rows() == [(0.0, None)]


def test_a_slurm_node_known_only_from_its_comment_lends_its_gpus(tmp_path: Path) -> None:
    """Node comment polled 00:00: Slurm node sok-3 runs in pod slurm/slinky-3 on kn2 with
    ``Gres=gpu:h100:8``; the pod was not ingested. Job 403: 8 GPUs on sok-3, 00:00–02:00;
    native ml/keep: 1 GPU on kn1, 00:00–04:00.

    kn2's 8 GPUs are Slurm's while the comment holds: per hour kc 57 600 − 28 800 = 28 800, sc
    28 800 (lent), the pair 57 600; sc allocated 28 800 at 00 and 01 (occupancy 1.0); no
    ``capacity_from_observed_nodes`` for sc (before: sc kept its observed 28 800, kc its 57 600:
    86 400 an hour on 57 600 physical)."""
    root = sk.setup(tmp_path)
    pf = sk.pods_file(root, "pods_2026-11-02.json", [sk.pod("ml", "keep", "kn1", 1, 0, 4)])
    sf = sk.write(root, "sacct_2026-11-02.psv",
                  sk.sacct([(403, "physics", 8, 0, 2, "sok-3", "COMPLETED")]))  # fmt: skip
    cf = sk.write(root, "node_comments_2026-11-02T000000Z.txt",
                  sk.comment_line("sok-3", "slurm", "slinky-3", "kn2", 8) + "\n")  # fmt: skip
    cfg = sk.load(root, [("sacct", sf), ("k8s-pods", pf), ("slurm-state", cf)])
    occ = _by_hour(cfg, "SELECT cluster, hour, capacity_gpu_s, allocated_gpu_s "
                        "FROM occupancy_hourly")  # fmt: skip
    for h in range(4):
        assert occ["kc", h][0] == 28800.0 and occ["sc", h][0] == 28800.0
    assert [occ["sc", h][1] for h in range(4)] == [28800.0, 28800.0, 0.0, 0.0]
    dq = sk.q(cfg, "SELECT \"check\" FROM data_quality WHERE cluster = 'sc'")
    assert "capacity_from_observed_nodes" not in dq["check"].to_list()
