"""The product's own rule on the bundled plant's pre-change days: ``backfill_min_age_reserve``
fires on slurm-p before the planted ``bf_min_age_reserve`` change, and proposes a shorter age.

Seed 7, window 2026-11-02 + 14 days (the bundled defaults): slurm-p's inputs start 28 days
earlier (2026-10-05), the change is made on 2026-11-04 10:00 UTC (57600 → 30960 s). The rule
runs on the 14 days before 2026-11-04 00:00 UTC (the recommendation pipeline's window, cut at
the change day's midnight as the generator-written proposal record is), with ``scontrol show
config`` as in force then (``bf_min_age_reserve=57600``)."""

from __future__ import annotations

import datetime as dt
import json

from pipelines.sample_fleet._plant_proposal import rule_proposal
from pipelines.sample_fleet._policy_plant import (
    BUNDLED_FRACTION,
    BUNDLED_HISTORY_DAYS,
    DAY,
    PlantSpec,
    simulate_plant,
)


def test_the_rule_fires_on_slurm_p_before_the_planted_change() -> None:
    """18 large (64-GPU) jobs in [2026-10-21, 2026-11-04): p90 wait 71244 s (19.8 h ≥ 6 h),
    1301 smaller jobs started while one of them was pending and younger than 57600 s (72.3 per
    large job ≥ 1). Replayed by the scheduler model (its start error on these jobs: median 0
    min, all 2991 within 1 h): candidates 43200, 28800, 14400, 0 s give large-job p90 waits of
    54254, 40768, 30845, 24357 s, none harming the smaller jobs (their p90 20456 → 15688 s
    under 0), so 0 is proposed; cut 71244 − 24357 = 46887 s = 65.8 % ≥ 30 % → critical. The
    planted change (57600 → 30960) goes the same way, less far: the life test
    (test_policy_plant_recommendation.py) still matches it to the generator-written record,
    because a ledger change applies a proposal only when it sets the proposed value."""
    spec = PlantSpec("backfill", "large_p90_wait", BUNDLED_FRACTION, BUNDLED_HISTORY_DAYS + 2)
    first = dt.date(2026, 11, 2) - dt.timedelta(days=BUNDLED_HISTORY_DAYS)
    run = simulate_plant(spec, seed=7, start=first, days=BUNDLED_HISTORY_DAYS + 14)
    cut = run.win_start + spec.day * DAY
    assert dt.datetime.fromtimestamp(cut, dt.UTC) == dt.datetime(2026, 11, 4, tzinfo=dt.UTC)
    out = rule_proposal(run, cut)
    assert out.height == 1
    r = out.row(0, named=True)
    assert (r["rule"], r["scope"]) == ("backfill_min_age_reserve", "cluster=slurm-p/partition=gpu")
    assert r["patch_content"] == (
        "SchedulerParameters=bf_interval=30,bf_window=2880,bf_min_age_reserve=0"
    )
    assert r["severity"] == "critical"
    ev = json.loads(r["evidence"])
    assert (ev["large_jobs"], ev["p90_wait_s"], ev["passes"]) == (18, 71244.0, 1301)
    assert [
        (c["bf_min_age_reserve_s"], c["large_p90_wait_s"], c["harmed"]) for c in ev["candidates"]
    ] == [
        (43200.0, 54254.0, []),
        (28800.0, 40768.0, []),
        (14400.0, 30845.0, []),
        (0.0, 24357.0, []),
    ]
    assert ev["trade_off"]["harmed"] == []
    small = ev["trade_off"]["classes"]["smaller jobs"]["p90_wait_s"]
    assert (small["current"], small["proposed"]) == (20456.0, 15688.0)
    assert ev["model_check"] == {
        "jobs": 2991.0,
        "median_abs_start_error_min": 0.0,
        "within_1h_share": 1.0,
    }
    assert spec.age_after == 30960  # the planted change: shorter, as proposed, not to 0
