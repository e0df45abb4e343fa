"""Time limits far above elapsed: DefaultTime / MaxTime for the partition, users named."""

from __future__ import annotations

import json

import polars as pl

from metrics.recommendations import time_limits
from tests.recommendations._frames import H, job, jobs, window

W = window(7)


def _partition(carol_limit: float) -> pl.DataFrame:
    """30 jobs of carol run 2 h under ``carol_limit``; 10 jobs of bob run 3 h under 4 h."""
    rows = [
        job(f"c{i}", eligible=i * H, start=i * H, run=2 * H, limit=carol_limit, user="carol")
        for i in range(30)
    ] + [
        job(f"b{i}", eligible=i * H, start=i * H, run=3 * H, limit=4 * H, user="bob")
        for i in range(10)
    ]
    return jobs(rows)


def test_generous_limits_get_default_and_max_time() -> None:
    """Median run/limit 2/24: DefaultTime = p95 run (3 h) → 4 h, MaxTime = 3 h × 1.1 → 4 h
    (below the longest limit, 24 h); carol over-requested most and is named first."""
    out = time_limits(_partition(24 * H), W)
    assert out["scope"].to_list() == ["cluster=slurm-a/partition=gpu"]
    rec = out.row(0, named=True)
    assert rec["patch_kind"] == "slurm.conf"
    assert rec["patch_content"] == "PartitionName=gpu DefaultTime=04:00:00 MaxTime=04:00:00"
    ev = json.loads(rec["evidence"])
    assert ev["completed_jobs"] == 40
    assert ev["median_run_to_limit"] == round(2 / 24, 4)
    assert [u["user"] for u in ev["users"]] == ["carol", "bob"]
    # carol: 30 jobs × 8 GPUs × 22 h over-requested in one week
    assert ev["users"][0]["over_requested_gpu_h_per_week"] == 30 * 8 * 22
    assert "carol" in rec["change_text"]
    assert rec["expected_wait_reduction_s"] is None  # no nodes given: no replay


def test_tight_limits_do_not_fire() -> None:
    """Limits of 2.5 h for 2 h runs (ratio 0.8) are fine."""
    assert time_limits(_partition(2.5 * H), W).height == 0


def test_too_few_jobs_do_not_fire() -> None:
    """Below ``min_jobs`` completed jobs a median says little."""
    assert time_limits(_partition(24 * H), W, min_jobs=50).height == 0


def test_replay_is_reported_with_nodes() -> None:
    """With the partition's nodes the recorded jobs are replayed with advised limits."""
    nodes = pl.DataFrame(
        {"cluster": ["slurm-a"] * 2, "host": ["n1", "n2"], "partition": ["gpu"] * 2,
         "gpus": [8.0, 8.0]}
    )  # fmt: skip
    out = time_limits(_partition(24 * H), W, nodes=nodes)
    ev = json.loads(out["evidence"][0])
    assert ev["replay"]["jobs"] == 40
    assert ev["replay"]["mean_wait_s_advised_limits"] <= ev["replay"]["mean_wait_s_recorded_limits"]
