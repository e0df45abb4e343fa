"""Large jobs starved while GPUs sit held: bf_window ≥ the longest limit, checked by replay."""

from __future__ import annotations

import json

import polars as pl

from metrics.recommendations import backfill_tuning, max_queue_depth
from metrics.scheduler_model import SchedulerSettings
from tests.recommendations._frames import UTC, H, at, job, jobs, pending, window

W = window(4)
NODES = pl.DataFrame(
    {"cluster": ["slurm-a"] * 4, "host": [f"n{i}" for i in range(1, 5)],
     "partition": ["gpu"] * 4, "gpus": [8.0] * 4}
)  # fmt: skip


def _recorded(small_limit: float) -> pl.DataFrame:
    """A stream of 24 one-node jobs (8 GPUs, 10 h runs, one every 2.5 h) keeps all four nodes
    busy; a 32-GPU job (2 h run, 4 h limit) eligible at 1 h only started at 67.5 h, when the
    stream ended."""
    rows = [
        job(f"s{i}", eligible=i * 2.5 * H, start=i * 2.5 * H, run=10 * H, limit=small_limit,
            user="bob")
        for i in range(24)
    ]  # fmt: skip
    rows.append(job("big", eligible=1 * H, start=67.5 * H, run=2 * H, gpus=32, limit=4 * H,
                    team="nlp", user="erin"))  # fmt: skip
    return jobs(rows)


def _waterfall(held_share: float) -> pl.DataFrame:
    """Four days of capacity (32 GPUs) with ``held_share`` of it held."""
    cap = 32 * H
    rows = []
    for h in range(96):
        rows.append({"cluster": "slurm-a", "hour": at(h * H), "bucket": "held",
                     "gpu_s": cap * held_share})  # fmt: skip
        rows.append({"cluster": "slurm-a", "hour": at(h * H), "bucket": "goodput",
                     "gpu_s": cap * (1 - held_share)})  # fmt: skip
    return pl.DataFrame(
        rows, schema={"cluster": pl.String(), "hour": UTC, "bucket": pl.String(),
                      "gpu_s": pl.Float64()}
    )  # fmt: skip


def _run(small_limit: float, held_share: float) -> pl.DataFrame:
    return backfill_tuning(
        _recorded(small_limit), pending(), _waterfall(held_share), NODES, W,
        large_gpus=32, min_p50_wait_s=6 * H, current=SchedulerSettings(),
    )  # fmt: skip


def test_starved_large_job_gets_bf_window_of_the_longest_limit() -> None:
    """Small jobs ask for 48 h (2880 min) but backfill plans 1440 min: the big job never gets a
    reservation and waits 66.5 h in the replay; with bf_window=2880 it is reserved at 48 h, the
    stream pauses, and it starts when the first small job ends at 10 h (wait 9 h). The pause
    costs the small jobs: their mean wait goes 0 → 5.67 h (Σ 136 h over 24 jobs) and p90 wait
    0 → 9.5 h, beyond the 10 % / 10 min tolerance, so the finding (critical by its 66.5 h p50
    wait) is ranked warning and says why."""
    out = _run(48 * H, 0.2)
    rec = out.filter(pl.col("rule") == "backfill_tuning").row(0, named=True)
    assert rec["scope"] == "cluster=slurm-a/partition=gpu"
    assert rec["patch_kind"] == "slurm.conf"
    assert rec["patch_content"] == (
        "SchedulerParameters=bf_window=2880,bf_resolution=120,bf_max_job_test=500,bf_continue"
    )
    ev = json.loads(rec["evidence"])
    assert ev["p50_wait_s"] == 66.5 * H
    assert ev["held_share_of_capacity"] == 0.2
    assert ev["longest_time_limit_s"] == 48 * H
    assert ev["replay"]["mean_wait_s_current"] == 66.5 * H
    assert ev["replay"]["mean_wait_s_proposed"] == 9 * H
    assert rec["expected_wait_reduction_s"] == 57.5 * H
    assert rec["severity"] == "warning"
    assert "smaller jobs" in rec["change_text"]
    trade = ev["trade_off"]
    assert trade["severity_uncapped"] == "critical"
    assert trade["classes"]["large jobs"]["p90_wait_s"] == {
        "current": 66.5 * H, "proposed": 9 * H, "change_s": -57.5 * H, "ratio": 0.1353
    }  # fmt: skip
    assert trade["classes"]["smaller jobs"]["p90_wait_s"]["proposed"] == 9.5 * H
    assert trade["classes"]["smaller jobs"]["mean_wait_s"]["proposed"] == 20400.0
    assert trade["harmed"] == ["smaller jobs' mean wait", "smaller jobs' p90 wait"]
    assert "large jobs' p90 wait 66.5 h → 9.0 h (-57.5 h)" in rec["change_text"]
    assert "Ranked warning, not critical: smaller jobs' mean wait" in rec["change_text"]


def test_no_held_gpus_no_finding() -> None:
    """Long waits without held capacity are a full cluster, not a backfill problem."""
    assert _run(48 * H, 0.0).height == 0


def test_limits_within_the_window_need_no_change() -> None:
    """With 12 h limits the current bf_window already covers them: the replay shows no gain and
    no backfill change is proposed."""
    out = _run(12 * H, 0.2)
    assert "backfill_tuning" not in out["rule"].to_list()


def test_queue_depth_counts_overlapping_waits() -> None:
    """Three waits overlapping at one instant → depth 3; touching ends do not overlap."""
    spells = pl.DataFrame(
        {"_from": [at(0), at(10), at(20), at(100)], "_to": [at(50), at(60), at(100), at(200)]}
    )
    assert max_queue_depth(spells) == 3


def test_a_change_that_harms_no_class_may_stay_critical() -> None:
    """Hand-built replays: large jobs' p90 10 h → 2 h, smaller jobs' p90 1 h → 1.1 h
    (+6 min, within 10 min): nothing harmed, the severity is not capped; at 1 h → 3 h (×3) the
    smaller jobs are harmed and a critical finding becomes warning."""
    from metrics.recommendations.backfill import _capped, _Replay, trade_off

    def rep(large_p90: float, small_p90: float) -> _Replay:
        return _Replay(
            held_gpu_s=0.0,
            large={"jobs": 4.0, "mean_wait_s": large_p90, "p50_wait_s": 0.0,
                   "p90_wait_s": large_p90},
            others={"jobs": 40.0, "mean_wait_s": small_p90, "p50_wait_s": 0.0,
                    "p90_wait_s": small_p90},
        )  # fmt: skip

    _, harmed = trade_off(rep(10 * H, 1 * H), rep(2 * H, 1.1 * H), W, 32)
    assert harmed == [] and _capped("critical", harmed) == "critical"
    trade, harmed = trade_off(rep(10 * H, 1 * H), rep(2 * H, 3 * H), W, 32)
    assert harmed == ["smaller jobs' mean wait", "smaller jobs' p90 wait"]
    assert trade["classes"]["smaller jobs"]["p90_wait_s"]["ratio"] == 3.0
    assert _capped("critical", harmed) == "warning"
    assert _capped("info", harmed) == "info"


def test_the_forecast_is_stated_on_the_kpi_the_change_is_measured_by() -> None:
    """The 32-GPU job is the 9-63 bucket's one spell, eligible on day 0: its daily p90 (the
    measure of policy_change_impact) is its replayed wait, 66.5 h → 9.0 h."""
    rec = _run(48 * H, 0.2).filter(pl.col("rule") == "backfill_tuning").row(0, named=True)
    assert json.loads(rec["evidence"])["target_kpi"] == [
        {"kpi": "wait_p90_h[9-63]", "current_h": 66.5, "proposed_h": 9.0, "change_h": -57.5,
         "days": 1}
    ]  # fmt: skip
    assert "wait_p90_h[9-63] 66.5 h → 9.0 h (-57.5 h)" in rec["change_text"]


def test_a_het_job_is_one_large_job() -> None:
    """The recorded stream with the 32-GPU job submitted as het job 900 of two 16-GPU
    components (``900+0``, ``900+1``, both eligible at 1 h and started at 67.5 h). Slurm
    allocates them at once, so it is one 32-GPU (large) job: the finding of the 32-GPU job,
    p50 wait 67.5 − 1 = 66.5 h over 1 large job, replayed 66.5 h → 9 h. Before: two 16-GPU
    jobs, none ≥ 32 GPUs, so no finding at all. The queue depth counts the components (two
    job records): bf_max_job_test stays 500."""
    rows = _recorded(48 * H).to_dicts()
    big = next(r for r in rows if r["job_id"] == "big")
    het = [{**big, "job_id": f"900+{i}", "gpus": 16.0, "req_gpus": 16.0} for i in (0, 1)]
    recorded = jobs([r for r in rows if r["job_id"] != "big"] + het)
    out = backfill_tuning(
        recorded, pending(), _waterfall(0.2), NODES, W,
        large_gpus=32, min_p50_wait_s=6 * H, current=SchedulerSettings(),
    )  # fmt: skip
    rec = out.filter(pl.col("rule") == "backfill_tuning").row(0, named=True)
    ev = json.loads(rec["evidence"])
    assert (ev["large_jobs"], ev["p50_wait_s"]) == (1, 66.5 * H)
    assert ev["replay"]["mean_wait_s_current"] == 66.5 * H
    assert ev["replay"]["mean_wait_s_proposed"] == 9 * H
    assert rec["patch_content"] == (
        "SchedulerParameters=bf_window=2880,bf_resolution=120,bf_max_job_test=500,bf_continue"
    )
