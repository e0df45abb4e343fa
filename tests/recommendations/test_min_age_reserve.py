"""The ``backfill_min_age_reserve`` rule (METRICS.md "bf_min_age_reserve") on a hand-worked
workload, with its replay check and the cases where it must not fire.

The workload (times in hours after 01:00 of ``T0``; the window is ``T0`` … ``T0`` + 8 h):
partition ``gpu`` of two 8-GPU nodes; every job runs exactly its time limit, so the model's
limit-based shadow times are the real end times.

- R1: 8 GPUs, eligible and started −1:00, runs 1.5 h (ends 0:30, node 1);
- R2: 8 GPUs, eligible and started −0:30, runs 1.5 h (ends 1:00, node 2);
- L: the large job, 16 GPUs, eligible 0:00, runs 1 h;
- S1…S5: 8 GPUs, eligible 0:05, 0:35, 1:05, 1:35, 2:05, run 1 h.

Recorded, under ``bf_min_age_reserve=7200`` (2 h): L is too young for a reservation until
2:00, so S1 starts at 0:30 (R1's node), S2 at 1:00, S3 at 1:30; at 2:00 L comes of age and
reserves both nodes from 2:30 (S3's end), so S4 and S5 (1 h, past 2:30) wait; L runs 2:30–3:30,
S4 and S5 start at 3:30. L's wait: 2.5 h = 9000 s. Passes: smaller jobs started while L was
pending and younger than 2 h, i.e. in [0:00, 2:00): S1, S2, S3 = 3 (R1, R2 started before).

Candidates: ¾, ½, ¼ of 7200 and 0 = 5400, 3600, 1800, 0 s. Replayed:
- 5400: at 1:30 L reserves from 2:00 (S2's end); S3 cannot finish by then → L starts 2:00,
  wait 7200 s;
- 3600: at 1:00 L reserves from 1:30 (S1's end) → L starts 1:30, wait 5400 s;
- 1800: at 0:30 L reserves from 1:00 (R2's end); S1 (to 1:30) cannot pass → L starts 1:00,
  wait 3600 s;
- 0: L reserves at once, from 1:00 → wait 3600 s too.
1800 and 0 tie at the lowest large-job p90 (3600 s); the larger age (the smaller change) wins:
1800. Under it the smaller jobs start S1, S2 at 2:00, S3, S4 at 3:00, S5 at 4:00: waits (min)
R1 0, R2 0, S1 115, S2 85, S3 115, S4 85, S5 115, mean 515/7 = 73.57 min against the recorded
0, 0, 25, 25, 25, 115 (S4: 1:35 → 3:30), 85 (S5: 2:05 → 3:30), mean 275/7 = 39.29 min: +34.3
min, more than 10 % and 10 min, so the smaller jobs are harmed. Every candidate that helps
harms them (5400: S3 waits to 3:00, S4 to 3:00, S5 to 4:00 …), so the best one is proposed with
the harm stated. Severity: the replay cuts L's p90 from 9000 s to 3600 s, 60 % ≥ 30 % →
critical uncapped, capped at warning because another class is harmed.
"""

from __future__ import annotations

import json

import polars as pl

from metrics.recommendations.life import RULE_KPIS
from metrics.recommendations.min_age_reserve import (
    age_reserve_passes,
    min_age_reserve,
    parse_age_reserve,
)
from tests.recommendations._frames import H, at, job, jobs, pending, window

ZERO = H  # the workload's 0:00 is T0 + 1 h
CONFIG = {"SchedulerParameters": "bf_interval=30,bf_window=2880,bf_min_age_reserve=7200"}
NODES = pl.DataFrame(
    {
        "cluster": ["slurm-a", "slurm-a"],
        "host": ["n1", "n2"],
        "partition": ["gpu", "gpu"],
        "gpus": [8.0, 8.0],
    }
)


def _recorded() -> pl.DataFrame:
    m = 60.0
    rows = [
        job("R1", eligible=ZERO - H, start=ZERO - H, run=1.5 * H, limit=1.5 * H),
        job("R2", eligible=ZERO - 0.5 * H, start=ZERO - 0.5 * H, run=1.5 * H, limit=1.5 * H),
        job("L", eligible=ZERO, start=ZERO + 2.5 * H, run=H, limit=H, gpus=16),
        job("S1", eligible=ZERO + 5 * m, start=ZERO + 0.5 * H, run=H, limit=H),
        job("S2", eligible=ZERO + 35 * m, start=ZERO + H, run=H, limit=H),
        job("S3", eligible=ZERO + 65 * m, start=ZERO + 1.5 * H, run=H, limit=H),
        job("S4", eligible=ZERO + 95 * m, start=ZERO + 3.5 * H, run=H, limit=H),
        job("S5", eligible=ZERO + 125 * m, start=ZERO + 3.5 * H, run=H, limit=H),
    ]
    return jobs(rows)


def _run(config: dict[str, str] | None, **kw: float) -> pl.DataFrame:
    return min_age_reserve(
        _recorded(), pending(), NODES, window(8 / 24), cluster_config=config,
        large_gpus=16, **{"min_p90_wait_s": 2 * H, **kw},
    )  # fmt: skip


def test_the_rule_proposes_the_replay_checked_age_with_its_trade_off() -> None:
    out = _run(CONFIG)
    assert out.height == 1
    r = out.row(0, named=True)
    assert r["rule"] == "backfill_min_age_reserve"
    assert r["scope"] == "cluster=slurm-a/partition=gpu"
    assert r["patch_kind"] == "slurm.conf"
    # The SchedulerParameters in force, only bf_min_age_reserve changed (7200 → 1800).
    assert r["patch_content"] == (
        "SchedulerParameters=bf_interval=30,bf_window=2880,bf_min_age_reserve=1800"
    )
    ev = json.loads(r["evidence"])
    assert ev["p90_wait_s"] == 9000.0
    assert ev["passes"] == 3
    assert ev["current_bf_min_age_reserve_s"] == 7200.0
    assert ev["proposed_bf_min_age_reserve_s"] == 1800.0
    assert [(c["bf_min_age_reserve_s"], c["large_p90_wait_s"]) for c in ev["candidates"]] == [
        (5400.0, 7200.0),
        (3600.0, 5400.0),
        (1800.0, 3600.0),
        (0.0, 3600.0),
    ]
    # The replay under the setting in force reproduces the record (model check 0 min).
    assert ev["model_check"]["median_abs_start_error_min"] == 0.0
    assert ev["replay"]["p90_wait_s_current"] == 9000.0
    assert ev["replay"]["p90_wait_s_proposed"] == 3600.0
    small = ev["trade_off"]["classes"]["smaller jobs"]["mean_wait_s"]
    assert round(small["current"] / 60, 2) == 39.29  # 275 / 7 min
    assert round(small["proposed"] / 60, 2) == 73.57  # 515 / 7 min
    assert ev["trade_off"]["harmed"] == ["smaller jobs' mean wait"]
    assert ev["trade_off"]["severity_uncapped"] == "critical"  # 60 % cut ≥ 30 %
    assert r["severity"] == "warning"  # capped: the smaller jobs are harmed
    assert "Ranked warning, not critical" in r["change_text"]
    # Mean large wait = p90 (one large job): 9000 − 3600 s saved.
    assert r["expected_wait_reduction_s"] == 5400.0
    assert r["confidence"] == 0.1  # one large job ÷ 10


def test_passes_count_smaller_starts_while_the_large_job_is_too_young() -> None:
    """L pending [0:00, 2:30), too young until 2:00: S1 0:30, S2 1:00, S3 1:30 → 3; with a
    1 h age only [0:00, 1:00): S1 → 1 (S2 at 1:00 is not before the end)."""
    att, pend, w = _recorded(), pending(), window(8 / 24)
    assert age_reserve_passes(att, pend, w, 16, 7200) == 3
    assert age_reserve_passes(att, pend, w, 16, 3600) == 1


def test_the_replay_check_drops_a_proposal_that_saves_too_little() -> None:
    """The best candidate saves 9000 − 3600 = 5400 s of p90: asking for 5401 s, no row."""
    assert _run(CONFIG, min_gain_s=5401).height == 0
    assert _run(CONFIG, min_gain_s=5400).height == 1


def test_no_age_gate_in_force_no_finding() -> None:
    """Control: SchedulerParameters without bf_min_age_reserve (Slurm's default 0) — nothing
    to shorten, although L waited 2.5 h."""
    assert parse_age_reserve({"SchedulerParameters": "bf_window=2880"}) == 0.0
    assert _run({"SchedulerParameters": "bf_window=2880"}).height == 0


def test_short_waits_or_too_few_passes_no_finding() -> None:
    """Control: p90 9000 s below a 3 h threshold (10800 s); or 3 passes for 1 large job
    below a demand of 4 per large job."""
    assert _run(CONFIG, min_p90_wait_s=3 * H).height == 0
    assert _run(CONFIG, min_passes_per_large_job=4).height == 0


def test_unknown_config_says_what_to_collect() -> None:
    out = _run(None)
    assert out.height == 1
    r = out.row(0, named=True)
    assert (r["severity"], r["patch_kind"], r["patch_content"]) == ("info", None, None)
    assert "scontrol show config" in json.loads(r["evidence"])["needs_input"]
    assert "Collect scontrol show config on slurm-a" in r["change_text"]
    assert parse_age_reserve(None) is None


def test_the_rule_targets_the_p90_wait() -> None:
    assert RULE_KPIS["backfill_min_age_reserve"] == "wait_p90_h"
    assert at(0) < at(1)


def test_the_forecast_is_stated_on_the_kpi_the_change_is_measured_by() -> None:
    """policy_change_impact judges the change by wait_p90_h of the large jobs' bucket (16 GPUs:
    9-63), a daily Kaplan–Meier p90 averaged over days, not the pooled p90 of the evidence. L is
    the bucket's one spell, eligible on day 0: its daily p90 is its wait, 2.5 h → 1.0 h
    (−1.5 h) over 1 day, and the text says it. Held GPU-hours a week, the gain backfill_tuning
    reports, are the same under both: a node held 0.5 h (2:00–2:30 now, 0:30–1:00 proposed),
    8 GPUs × 0.5 h in 8 h = 84 GPU-h a week each, so no gain (None, as that rule gives)."""
    r = _run(CONFIG).row(0, named=True)
    ev = json.loads(r["evidence"])
    assert ev["target_kpi"] == [
        {"kpi": "wait_p90_h[9-63]", "current_h": 2.5, "proposed_h": 1.0, "change_h": -1.5,
         "days": 1}
    ]  # fmt: skip
    assert "wait_p90_h[9-63] 2.5 h → 1.0 h (-1.5 h)" in r["change_text"]
    held = ev["replay"]
    assert held["held_gpu_h_per_week_current"] == held["held_gpu_h_per_week_proposed"] == 84.0
    assert r["expected_gain_gpu_h_per_week"] is None


def test_a_het_job_is_one_large_job() -> None:
    """The recorded workload with L (16 GPUs) submitted as het job 700 of two 8-GPU components
    (``700+0``, ``700+1``, both eligible 0:00, started 2:30). Slurm allocates them at once, so
    it is one 16-GPU job: the finding of L, p90 wait 2.5 h = 9,000 s, 3 passes (S1, S2, S3),
    7200 → 1800. Before: two 8-GPU jobs, none ≥ 16 GPUs, so no finding."""
    rows = _recorded().to_dicts()
    big = next(r for r in rows if r["job_id"] == "L")
    het = [{**big, "job_id": f"700+{i}", "gpus": 8.0, "req_gpus": 8.0} for i in (0, 1)]
    out = min_age_reserve(
        jobs([r for r in rows if r["job_id"] != "L"] + het), pending(), NODES, window(8 / 24),
        cluster_config=CONFIG, large_gpus=16, min_p90_wait_s=2 * H,
    )  # fmt: skip
    assert out.height == 1
    ev = json.loads(out.row(0, named=True)["evidence"])
    assert (ev["p90_wait_s"], ev["passes"], ev["large_jobs"]) == (9000.0, 3, 1)
    assert ev["proposed_bf_min_age_reserve_s"] == 1800.0
