"""Does the replay counterfactual find the planted effect, and nothing where there is none?

The planted change of ``goodput generate --plant-change backfill:large_p90_wait=-0.4@day30`` (a
64-GPU Slurm cluster, 60 days, ``bf_min_age_reserve`` 57600 → 30960 s on day 30;
:mod:`pipelines.sample_fleet._policy_plant`). For each seed:

- the planted run and its twin (same jobs, no change) are simulated; the realised effect on the
  large jobs' daily p90 wait (``wait_p90_h[64-255]``) is the mean over the post days of
  (planted − twin);
- :func:`metrics.policy_replay.replay_impact` (method ``replay`` of ``policy_change_impact``)
  replays the planted run's post-change jobs under the old setting: **covered** when its
  interval holds the realised effect;
- the same replay on the twin's jobs with the same ledger change (which did not happen there)
  is a **placebo**: counted a false alarm when its verdict is not ``no detectable effect``.

Prints one JSON line; ``--seeds N`` (default 10).

    python bench/bench_policy_replay.py [--seeds 10]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polars as pl

from metrics.policy_replay import replay_impact
from pipelines.sample_fleet import PlantSpec, plant_kpis, planted_effect, simulate_plant
from pipelines.sample_fleet._policy_plant import PlantRun

SPEC = "backfill:large_p90_wait=-0.4@day30"
START = dt.date(2026, 9, 1)
DAYS = 60
KPI = "wait_p90_h[64-255]"
CONFIG = "bf_interval=30,bf_window=2880,bf_min_age_reserve=57600"
_TS = pl.Datetime("us", "UTC")


def _frames(run: PlantRun) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The run's attempts and never-started jobs as the ``jobs`` and ``pending`` views would
    hold them at the window end."""
    rows = []
    for j in run.jobs:
        for a in j.attempts:
            if a.eligible is None or a.eligible >= run.win_end:
                continue
            st = a.start if a.start is not None and a.start < run.win_end else None
            en = a.end if a.end is not None and a.end <= run.win_end else None
            rows.append((run.cluster.name, j.job_id, a.index, "gpu", j.qos,
                         float(j.gpus) if st is not None else 0.0, float(j.gpus), a.eligible,
                         st, en, j.time_limit))  # fmt: skip
    cols = ["cluster", "job_id", "attempt", "partition", "qos", "gpus", "req_gpus",
            "eligible_at", "start_at", "end_at", "timelimit_s"]  # fmt: skip
    frame = pl.DataFrame(rows, schema=cols, orient="row").with_columns(
        (pl.col(c) * 1_000_000).cast(_TS) for c in ("eligible_at", "start_at", "end_at")
    )
    started = frame.filter(pl.col("start_at").is_not_null())
    pending = frame.filter(pl.col("start_at").is_null()).select(
        "cluster", "job_id", "partition", "req_gpus", "eligible_at", "end_at"
    )
    return started, pending


def _replay(data: PlantRun, change_at: int, age_after: int) -> dict[str, object]:
    jobs, pending = _frames(data)
    name = data.cluster.name
    at = dt.datetime.fromtimestamp(change_at, dt.UTC)
    change = pl.DataFrame({
        "change_id": ["planted"], "cluster": [name], "scope": ["config"],
        "key": ["SchedulerParameters:bf_min_age_reserve"], "old": ["57600"],
        "new": [str(age_after)], "changed_at": [at],
        "changed_after": [at - dt.timedelta(hours=10)],
    })  # fmt: skip
    nodes = pl.DataFrame({
        "cluster": [name] * len(data.cluster.nodes), "host": [n.host for n in data.cluster.nodes],
        "partition": [n.partition for n in data.cluster.nodes],
        "gpus": [float(n.gpus) for n in data.cluster.nodes],
    })  # fmt: skip
    cut = pl.DataFrame(
        {"cluster": [name], "as_of": [dt.datetime.fromtimestamp(data.win_end, dt.UTC)]}
    )
    out = replay_impact(change, jobs, nodes, cut, configs={name: {"SchedulerParameters": CONFIG}},
                        pending=pending)  # fmt: skip
    return out.filter(pl.col("kpi") == KPI).row(0, named=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    spec = PlantSpec.parse(SPEC)
    t0 = time.perf_counter()
    covered, alarms, errors = 0, 0, []
    for seed in range(1, args.seeds + 1):
        run = simulate_plant(spec, seed=seed, start=START, days=DAYS)
        twin = simulate_plant(spec, seed=seed, start=START, days=DAYS, apply=False)
        assert run.change_at is not None
        row = _replay(run, run.change_at, spec.age_after)
        post = dt.datetime.fromtimestamp(run.change_at, dt.UTC).replace(hour=0) + dt.timedelta(
            days=1
        )
        truth = planted_effect(plant_kpis(run), plant_kpis(twin), KPI, post)
        assert truth is not None
        covered += row["ci_low"] <= truth[0] <= row["ci_high"]  # type: ignore[operator]
        errors.append(abs(float(row["estimate"]) - truth[0]))  # type: ignore[arg-type]
        placebo = _replay(twin, run.change_at, spec.age_after)
        alarms += placebo["verdict"] != "no detectable effect"
    print(json.dumps({
        "seeds": args.seeds, "covered": covered, "placebo_alarms": alarms,
        "max_abs_error_h": round(max(errors), 3), "seconds": round(time.perf_counter() - t0, 1),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
