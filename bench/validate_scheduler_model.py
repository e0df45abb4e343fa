"""Validate the scheduler model against the recorded starts of the bundled fleet's Slurm cluster.

The bundled sample fleet (``pipelines.sample_fleet``, seed 7, 14 days) schedules its Slurm
cluster with its own priority FIFO + EASY backfill and writes every attempt to ``sacct`` files;
those attempts are the *recorded* jobs. This script replays them through
:func:`metrics.scheduler_model.simulate` (the model the backfill and time-limit rules use) and
compares simulated with recorded start times.

Replayed: every GPU attempt that became eligible from three days before the window (when the
generator's queue starts) to the window end, each with its recorded eligible time, GPUs,
partition, QOS priority, time limit and run time (end − start; still running: to the window end;
never started: its time limit, cancelled at its recorded cancel time); horizon = window end.
Compared: attempts that started inside the window in the recording.

Figures, per settings and per GPU size bucket (METRICS.md buckets):

- ``jobs``: attempts compared; ``started_share``: of those, started in the replay too;
- ``median_abs_error_min`` / ``p90_abs_error_min``: nearest-rank percentiles of |simulated −
  recorded start| in minutes, over attempts started in both;
- ``within_1h``: share of compared attempts with |error| ≤ 1 h (not started in the replay:
  counted as outside);
- ``within_10pct``: share with |error| ≤ max(10 % of the recorded wait, 60 s);
- ``order_agreement``: over pairs of compared attempts of one partition that were pending at the
  same time in the recording (each eligible before the other started), the share the replay
  starts in the same order (Kendall-style concordance of queue order; pairs one side of which
  did not start in the replay count as discordant when the started one started second in the
  recording).

Settings: ``generator`` = what the fleet's scheduler does (reservation for any head however far
ahead: ``bf_window`` of 60 days, exact times: ``bf_resolution`` 1 s, ``bf_max_job_test`` 120);
``slurm_defaults`` = what the backfill rule assumes when a cluster's settings are not given
(``bf_window`` 1440 min, ``bf_resolution`` 60 s, ``bf_max_job_test`` 500).

Known differences the figures include: the model does not take nodes out for DOWN/DRAIN events
(the lemon node, a maintenance drain), does not hold CPU-only jobs (they never block GPUs), and
places jobs on nodes by its own best fit, so later starts can drift once one placement differs.

Usage: ``python bench/validate_scheduler_model.py [--days 14] [--seed 7] [--json]``; prints a
markdown table (or one JSON object).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metrics.scheduler_model import (
    Node,
    RecurringReservation,
    SchedulerSettings,
    SimJob,
    simulate,
)
from metrics.schema import SIZE_BUCKETS
from pipelines.sample_fleet._generate import simulate_fleet
from pipelines.sample_fleet._slurm_sim import IDLE_RESERVATION

_PRIORITY = {"high": 2, "normal": 1, "low": 0}
DAY = 86400

#: The settings replayed (see the module docstring).
SETTINGS: dict[str, SchedulerSettings] = {
    "generator": SchedulerSettings(bf_window_s=60 * DAY, bf_resolution_s=1.0, bf_max_job_test=120),
    "slurm_defaults": SchedulerSettings(),
}


def recorded_jobs(seed: int, days: int) -> tuple[list[Node], list[SimJob], dict[str, float],
                                                 dict[str, float], tuple[int, int]]:  # fmt: skip
    """The fleet's Slurm nodes and GPU attempts as model jobs, with their recorded starts.

    Returns:
        (nodes, jobs, recorded start (epoch s) of attempts started in the window, recorded wait
        (s) of those, (window start, window end)).
    """
    fleet = simulate_fleet(seed, dt.date(2026, 11, 2), days)
    w0, w1 = fleet.slurm_window
    nodes = [Node(n.host, n.partition, n.gpus) for n in fleet.slurm_cluster.nodes if n.gpus > 0]
    jobs: list[SimJob] = []
    starts: dict[str, float] = {}
    waits: dict[str, float] = {}
    for job in fleet.slurm.jobs:
        if job.gpus <= 0:
            continue
        for att in job.attempts:
            if att.eligible is None or att.eligible >= w1:
                continue
            jid = f"{job.job_id}#{att.index}"
            if att.start is not None and att.start < w1:
                end = w1 if att.end is None else min(att.end, w1)
                runtime, cancel = float(end - att.start), None
            else:
                runtime = float(job.time_limit)
                cancel = float(att.end) if att.end is not None else None
            jobs.append(
                SimJob(jid, job.partition, job.gpus, float(att.eligible), runtime,
                       float(job.time_limit), _PRIORITY.get(job.qos, 1), cancel)
            )  # fmt: skip
            if att.start is not None and w0 <= att.start < w1:
                starts[jid] = float(att.start)
                waits[jid] = float(att.start - att.eligible)
    return nodes, jobs, starts, waits, (w0, w1)


def _reservations(w0: int, nodes: list[Node]) -> tuple[RecurringReservation, ...]:
    """The fleet's planted daily reservation as the model's: its nodes' partition, one node
    per reserved host, from the window's first local day, open to no job (no job uses it)."""
    r = IDLE_RESERVATION
    part = {n.host: n.partition for n in nodes}[r.hosts[0]]
    return (
        RecurringReservation(
            part, len(r.hosts), float(w0 + r.local_start_hour * 3600), r.hours * 3600.0, 10**9
        ),
    )


def _rank(values: list[float], q: float) -> float | None:
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else None


def _figures(ids: list[str], rec: dict[str, float], rec_wait: dict[str, float],
             sim: dict[str, float | None]) -> dict[str, Any]:  # fmt: skip
    both = [i for i in ids if sim[i] is not None]
    err = {i: abs(float(sim[i]) - rec[i]) for i in both}  # type: ignore[arg-type]
    n = len(ids)
    med, p90 = _rank(list(err.values()), 0.5), _rank(list(err.values()), 0.9)
    return {
        "jobs": n,
        "started_share": len(both) / n if n else None,
        "median_abs_error_min": None if med is None else med / 60,
        "p90_abs_error_min": None if p90 is None else p90 / 60,
        "within_1h": sum(1 for e in err.values() if e <= 3600) / n if n else None,
        "within_10pct": (
            sum(1 for i, e in err.items() if e <= max(0.1 * rec_wait[i], 60.0)) / n if n else None
        ),
    }


def _order_agreement(ids: list[str], part: dict[str, str], elig: dict[str, float],
                     rec: dict[str, float], sim: dict[str, float | None], horizon: float,
                     ) -> dict[str, Any]:  # fmt: skip
    agree = total = 0
    for p in sorted(set(part[i] for i in ids)):
        mine = [i for i in ids if part[i] == p]
        e = np.array([elig[i] for i in mine])
        r = np.array([rec[i] for i in mine])
        s = np.array([horizon + 1 if sim[i] is None else sim[i] for i in mine])
        # pairs pending together in the recording: e_i < r_j and e_j < r_i, i < j, r_i != r_j
        comp = (e[:, None] < r[None, :]) & (e[None, :] < r[:, None]) & (r[:, None] != r[None, :])
        comp = np.triu(comp, 1)
        same = np.sign(r[:, None] - r[None, :]) == np.sign(s[:, None] - s[None, :])
        total += int(comp.sum())
        agree += int((comp & same).sum())
    return {"pairs": total, "order_agreement": agree / total if total else None}


def validate(seed: int = 7, days: int = 14) -> dict[str, Any]:
    """Replay the fleet under each of :data:`SETTINGS`; the figures of the module docstring."""
    nodes, jobs, rec, rec_wait, (_w0, w1) = recorded_jobs(seed, days)
    part = {j.job_id: j.partition for j in jobs}
    gpus = {j.job_id: j.gpus for j in jobs}
    elig = {j.job_id: j.eligible_s for j in jobs}
    ids = sorted(rec)
    out: dict[str, Any] = {"seed": seed, "days": days, "replayed_attempts": len(jobs)}
    resv = _reservations(_w0, nodes)
    for name, base in SETTINGS.items():
        settings = replace(base, reservations=resv)
        res = simulate(nodes, jobs, settings, horizon_s=float(w1))
        sim = {i: res.outcomes[i].start_s for i in ids}
        fig = {"all": {**_figures(ids, rec, rec_wait, sim),
                       **_order_agreement(ids, part, elig, rec, sim, float(w1))}}  # fmt: skip
        for label, lo, hi in SIZE_BUCKETS:
            mine = [i for i in ids if lo <= gpus[i] < hi]
            if mine:
                fig[label] = _figures(mine, rec, rec_wait, sim)
        out[name] = fig
    return out


def _fmt(x: Any, pct: bool = False) -> str:
    if x is None:
        return "–"
    return f"{100 * x:.1f} %" if pct else (f"{x:.1f}" if isinstance(x, float) else str(x))


def markdown(result: dict[str, Any]) -> str:
    """The figures as a markdown table (one row per settings × size bucket)."""
    lines = [
        "| settings | GPUs | jobs | started in replay | median abs error (min) | "
        "p90 abs error (min) | within 1 h | within 10 % of wait | queue-order agreement |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in SETTINGS:
        for bucket, f in result[name].items():
            order = _fmt(f.get("order_agreement"), True) if bucket == "all" else ""
            lines.append(
                f"| {name} | {bucket} | {f['jobs']} | {_fmt(f['started_share'], True)} | "
                f"{_fmt(f['median_abs_error_min'])} | {_fmt(f['p90_abs_error_min'])} | "
                f"{_fmt(f['within_1h'], True)} | {_fmt(f['within_10pct'], True)} | {order} |"
            )
    return "\n".join(lines)


def main() -> None:
    """Command line: ``--days``, ``--seed``, ``--json``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    result = validate(args.seed, args.days)
    print(json.dumps(result, indent=2) if args.json else markdown(result))


if __name__ == "__main__":
    main()
