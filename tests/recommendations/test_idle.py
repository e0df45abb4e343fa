"""Idle allocations: a team holding GPUs it does not use gets a policy and a GPU cap."""

from __future__ import annotations

import json

import polars as pl

from metrics.holds import HOLD_SCHEMA
from metrics.recommendations import idle_allocations
from tests.recommendations._frames import DAY, UTC, at, job, jobs, window

W = window(1)


def _fleet(recsys_activity: float, source: str = "slurm") -> tuple[pl.DataFrame, pl.DataFrame]:
    """One day: recsys runs two 8-GPU jobs (zoe, arthur), vision one; every 5-minute bucket
    has one activity sample per job."""
    cluster = "slurm-a" if source == "slurm" else "k8s-b"
    attempts = jobs(
        [
            job("1", eligible=0, start=0, run=DAY, team="recsys", user="zoe",
                cluster=cluster, source=source),
            job("2", eligible=0, start=0, run=DAY, team="recsys", user="arthur",
                cluster=cluster, source=source),
            job("3", eligible=0, start=0, run=DAY, team="vision", user="alice",
                cluster=cluster, source=source),
        ]
    )  # fmt: skip
    buckets = [at(300 * i) for i in range(288)]
    rows = [
        {"cluster": cluster, "job_id": j, "attempt": 0, "bucket": b, "activity": a, "gpus": 8.0}
        for j, a in (("1", recsys_activity), ("2", recsys_activity), ("3", 0.6))
        for b in buckets
    ]
    activity = pl.DataFrame(
        rows,
        schema={"cluster": pl.String(), "job_id": pl.String(), "attempt": pl.Int64(),
                "bucket": UTC, "activity": pl.Float64(), "gpus": pl.Float64()},
    )  # fmt: skip
    return attempts, activity


def test_idle_team_gets_policy_cap_and_offenders() -> None:
    """recsys kept 16 GPUs at 2 % activity all day: 16 × 24 GPU-h idle = 2688 GPU-h a week,
    capped at one node (its p95 active GPUs are 0), zoe and arthur named; vision is fine."""
    out = idle_allocations(*_fleet(0.02), W)
    assert out["scope"].to_list() == ["cluster=slurm-a/team=recsys"]
    rec = out.row(0, named=True)
    ev = json.loads(rec["evidence"])
    assert ev["idle_gpu_h"] == 384.0 and ev["idle_share"] == 1.0
    assert rec["expected_gain_gpu_h_per_week"] == 2688.0
    assert [o["user"] for o in ev["top_offenders"]] == ["arthur", "zoe"]
    assert rec["patch_kind"] == "sacctmgr"
    assert rec["patch_content"] == "sacctmgr -i modify account name=recsys set GrpTRES=gres/gpu=8"
    assert rec["confidence"] == 1.0
    assert rec["severity"] == "critical"
    assert "idle-job policy" in rec["change_text"]


def test_busy_team_does_not_fire() -> None:
    """At 60 % activity nobody is idle."""
    assert idle_allocations(*_fleet(0.6), W).height == 0


def test_threshold_is_an_argument() -> None:
    """With θ = 0.01, 2 % activity is not idle."""
    assert idle_allocations(*_fleet(0.02), W, idle_threshold=0.01).height == 0


def test_kubernetes_team_gets_the_policy_without_a_slurm_patch() -> None:
    """There is no sacctmgr on Kubernetes: the finding stands, the patch is None."""
    out = idle_allocations(*_fleet(0.02, source="kubernetes"), W)
    assert out["scope"].to_list() == ["cluster=k8s-b/team=recsys"]
    assert out["patch_kind"].to_list() == [None]


def test_cap_is_never_below_the_teams_entitlement() -> None:
    """recsys's p95 active GPUs (0) round to one node, 8 GPUs, but its registry share 0.10 of a
    192-GPU cluster entitles it to ⌈19.2⌉ = 20: the cap is 20, not below the 16 GPUs it holds,
    so no GrpTRES cap is proposed (the idle-job policy stays); on a 128-GPU cluster the
    entitlement is ⌈12.8⌉ = 13 < 16 held, and the cap is 13."""
    big = idle_allocations(*_fleet(0.02), W, shares={"recsys": 0.1}, pool_gpus={"slurm-a": 192})
    rec = big.row(0, named=True)
    cap = json.loads(rec["evidence"])["caps"]["recsys"]
    assert (cap["cap_by_use_gpus"], cap["entitled_gpus"], cap["cap_gpus"]) == (8, 20, 20)
    assert cap["cap_gpus"] >= 19
    assert rec["patch_kind"] is None and rec["patch_content"] is None
    small = idle_allocations(*_fleet(0.02), W, shares={"recsys": 0.1}, pool_gpus={"slurm-a": 128})
    assert small["patch_content"].to_list() == [
        "sacctmgr -i modify account name=recsys set GrpTRES=gres/gpu=13"
    ]
    assert "entitled to 13 = ⌈0.1 × 128⌉" in small["change_text"][0]


def test_a_gangs_idle_time_is_of_the_gpus_it_held() -> None:
    """recsys's Kubernetes gang (16 GPUs over the day) held 16 GPUs for 12 h, then 8 (one
    worker ended; METRICS.md "GPU holding"), at 2 % activity, its samples still naming 16
    GPUs. As the waterfall counts it, observed GPUs are capped at the piece's: idle =
    16 x 12 + 8 x 12 = 288 GPU-h (not 16 x 24 = 384), 2,016 a week; coverage 288 / 288."""
    attempts = jobs(
        [job("1", eligible=0, start=0, run=DAY, gpus=16, team="recsys", user="zoe",
             cluster="k8s-b", source="kubernetes")]
    )  # fmt: skip
    activity = pl.DataFrame(
        [("k8s-b", "1", 0, at(300 * i), 0.02, 16.0) for i in range(288)],
        schema={"cluster": pl.String(), "job_id": pl.String(), "attempt": pl.Int64(),
                "bucket": UTC, "activity": pl.Float64(), "gpus": pl.Float64()},
        orient="row",
    )  # fmt: skip
    holds = pl.DataFrame(
        [("k8s-b", "1", 0, at(0), at(DAY / 2), 16.0), ("k8s-b", "1", 0, at(DAY / 2), at(DAY), 8.0)],
        schema=HOLD_SCHEMA, orient="row",
    )  # fmt: skip
    rec = idle_allocations(attempts, activity, W, holds=holds.lazy()).row(0, named=True)
    assert json.loads(rec["evidence"])["idle_gpu_h"] == 288.0
    assert rec["expected_gain_gpu_h_per_week"] == 2016.0
    assert rec["confidence"] == 1.0
    before = idle_allocations(attempts, activity, W).row(0, named=True)
    assert json.loads(before["evidence"])["idle_gpu_h"] == 384.0
