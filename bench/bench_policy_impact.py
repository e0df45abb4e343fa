"""Does the policy-change estimate find a planted effect, and only where there is one?

``goodput generate --plant-change backfill:large_p90_wait=-0.4@day30`` simulates a 64-GPU Slurm
cluster for 60 days whose ``bf_min_age_reserve`` drops on day 30 (the scheduler then reserves
whole-cluster jobs sooner; :mod:`pipelines.sample_fleet._policy_plant`). For each of 20 seeds:

- the planted run and its twin (same seed and jobs, no change) are simulated; the realised
  effect on the large jobs' daily p90 wait (``wait_p90_h[64-255]``) is the mean over the
  post-period days of (planted − twin);
- the interrupted time series (:func:`metrics.policy_impact.its_estimate`, the engine of the
  ``policy_change_impact`` view) is fitted to the planted run's daily KPI: **covered** when its
  95 % interval holds the realised effect;
- the same estimate on the twin at the same date is a **placebo** (no change there): counted
  significant when p < 0.05.

Targets: covered in at least 17 of 20, significant placebos at most 2 of 20. Prints one JSON
line with the figures; ``--seeds N`` for fewer.

    python bench/bench_policy_impact.py [--seeds 20]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metrics.policy_impact import its_estimate
from pipelines.sample_fleet import PlantSpec, plant_kpis, planted_effect, simulate_plant
from pipelines.sample_fleet._policy_plant import PLANT_KPIS

SPEC = "backfill:large_p90_wait=-0.4@day30"
START = dt.date(2026, 9, 1)
DAYS = 60


def one_seed(seed: int, spec: PlantSpec) -> dict[str, object]:
    """Simulate seed's planted run and twin, estimate both; the figures of that seed."""
    t0 = time.perf_counter()
    run = simulate_plant(spec, seed=seed, start=START, days=DAYS)
    twin = simulate_plant(spec, seed=seed, start=START, days=DAYS, apply=False)
    t_sim = time.perf_counter() - t0
    kpi = PLANT_KPIS[spec.kpi]
    change = dt.datetime.combine(START, dt.time(), dt.UTC) + dt.timedelta(days=spec.day)
    post = change + dt.timedelta(days=1)
    t1 = time.perf_counter()
    run_kpis, twin_kpis = plant_kpis(run), plant_kpis(twin)
    t_kpis = time.perf_counter() - t1
    t2 = time.perf_counter()
    est = its_estimate(run_kpis.filter(run_kpis["kpi"] == kpi), change, transition_end=post)
    placebo = its_estimate(twin_kpis.filter(twin_kpis["kpi"] == kpi), change, transition_end=post)
    t_est = time.perf_counter() - t2
    truth = planted_effect(run_kpis, twin_kpis, kpi, post)
    assert est is not None and placebo is not None and truth is not None
    return {
        "seed": seed,
        "effect": round(truth[0], 3),
        "effect_fraction": round(truth[1], 3),
        "estimate": round(est.estimate, 3),
        "ci": [round(est.ci_low, 3), round(est.ci_high, 3)],
        "covered": est.ci_low <= truth[0] <= est.ci_high,
        "p_value": est.p_value,
        "mde": round(est.mde, 3),
        "n_pre": est.n_pre,
        "n_post": est.n_post,
        "placebo_estimate": round(placebo.estimate, 3),
        "placebo_p": round(placebo.p_value, 4),
        "placebo_significant": placebo.p_value < 0.05,
        "simulate_s": round(t_sim, 2),
        "kpis_s": round(t_kpis, 2),
        "estimate_s": round(t_est, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()
    spec = PlantSpec.parse(SPEC)
    t0 = time.perf_counter()
    rows = [one_seed(s, spec) for s in range(args.seeds)]
    for r in rows:
        print(json.dumps(r), file=sys.stderr)
    n = len(rows)
    out = {
        "spec": SPEC,
        "seeds": n,
        "covered": sum(bool(r["covered"]) for r in rows),
        "placebo_significant": sum(bool(r["placebo_significant"]) for r in rows),
        "mean_effect_h": round(sum(float(r["effect"]) for r in rows) / n, 3),  # type: ignore[arg-type]
        "mean_effect_fraction": round(sum(float(r["effect_fraction"]) for r in rows) / n, 3),  # type: ignore[arg-type]
        "mean_estimate_h": round(sum(float(r["estimate"]) for r in rows) / n, 3),  # type: ignore[arg-type]
        "mean_abs_error_h": round(
            sum(abs(float(r["estimate"]) - float(r["effect"])) for r in rows) / n,
            3,  # type: ignore[arg-type]
        ),
        "mean_mde_h": round(sum(float(r["mde"]) for r in rows) / n, 3),  # type: ignore[arg-type]
        "detected": sum(float(r["p_value"]) < 0.05 for r in rows),  # type: ignore[arg-type]
        "simulate_s": round(sum(float(r["simulate_s"]) for r in rows), 1),  # type: ignore[arg-type]
        "kpis_s": round(sum(float(r["kpis_s"]) for r in rows), 1),  # type: ignore[arg-type]
        "estimate_s": round(sum(float(r["estimate_s"]) for r in rows), 2),  # type: ignore[arg-type]
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
