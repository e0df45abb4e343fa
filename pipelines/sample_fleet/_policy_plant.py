"""A planted policy change with a known effect, on a small Slurm cluster.

``goodput generate --plant-change backfill:large_p90_wait=-0.4@day30`` simulates one 64-GPU
Slurm cluster (8 nodes × 8 GPUs, partition ``gpu``) for the window and, from the stated day,
changes how it schedules: the backfill setting ``SchedulerParameters:bf_min_age_reserve``
(Slurm: no resources are reserved for a pending job until it has been eligible that long)
drops, so the large jobs (32 GPUs, four whole nodes) get their reservation sooner instead of
being overtaken by small jobs. The scheduler is :mod:`pipelines.sample_fleet._slurm_sim`'s
priority FIFO + EASY backfill with its ``bf_min_age_reserve`` setting, so the effect is the
schedule's, not painted on the output. The ledger sees the change in a pair of
``scontrol show config`` snapshots around it.

The effect that is known is the *realised* one: the same seed simulated again without the
change (the twin: same jobs, same random draws) gives the counterfactual, and the effect on a
daily KPI is the mean over the post-period days of (with − without). The stated fraction sets
the new ``bf_min_age_reserve``: it scales the old one, so a −0.4 stated is a cut of about that
fraction in the large jobs' p90 wait (the realised fraction is in ``planted.json``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from metrics import occupancy_hourly
from metrics.policy_impact import daily_kpis
from metrics.recommendations import recommendation_id, scope_key
from pipelines.sample_fleet._model import TEAMS, ClusterSpec, NodeSpec
from pipelines.sample_fleet._slurm_sim import SlurmJob, _JobFactory, _Scheduler
from pipelines.sample_fleet._writers import (
    LocalTime,
    write_inventory,
    write_planted,
    write_registry,
    write_sacct_day,
)

__all__ = [
    "PLANTED_CHANGE_KEY",
    "PLANT_CLUSTER",
    "PLANT_KPIS",
    "PLANT_LARGE_GPUS",
    "PlantRun",
    "PlantSpec",
    "generate_planted_fleet",
    "jobs_frame",
    "plant_bundled",
    "plant_cluster",
    "plant_kpis",
    "planted_change_finding",
    "planted_effect",
    "simulate_plant",
    "write_config_snapshots",
    "write_plant_inputs",
    "write_proposal_record",
]

HOUR = 3600
DAY = 86400
#: The small cluster's name.
PLANT_CLUSTER = "slurm-p"
#: GPUs of a large job on it (four whole nodes; size bucket 9-63).
PLANT_LARGE_GPUS = 64
#: ``bf_min_age_reserve`` before the change (seconds).
AGE_BEFORE = 16 * HOUR
#: The large jobs' typical drain time once reserved (s): the stated fraction f sets the new
#: age A' so that A' + D = (1 + f)(A + D).
DRAIN = 5 * HOUR // 2
#: Jobs submitted per day: small (1–8 GPUs) and large (16 or 32 GPUs).
SMALL_PER_DAY = 210.0
LARGE_PER_DAY = 1.2
_LIMITS = (HOUR, 2 * HOUR, 4 * HOUR)
#: KPIs a plant may name, and the ``policy_change_impact`` KPI each is.
PLANT_KPIS = {"large_p90_wait": "wait_p90_h[64-255]", "large_p50_wait": "wait_p50_h[64-255]"}
_SPEC = re.compile(r"^(?P<setting>backfill):(?P<kpi>\w+)=(?P<frac>[-+]?\d*\.?\d+)@day(?P<day>\d+)$")


@dataclass(frozen=True)
class PlantSpec:
    """What to plant: ``backfill:large_p90_wait=-0.4@day30``.

    Attributes:
        setting: the scheduler setting changed (``backfill``: ``bf_min_age_reserve``).
        kpi: the KPI the change is meant to move (a key of :data:`PLANT_KPIS`).
        fraction: the stated relative change of that KPI (−0.4: cut by 40 %), in (−1, 0).
        day: the window day (0-based) the change is made, at 10:00 UTC.
    """

    setting: str
    kpi: str
    fraction: float
    day: int

    @classmethod
    def parse(cls, text: str) -> PlantSpec:
        """Read ``SETTING:KPI=FRACTION@dayN``.

        Raises:
            ValueError: not of that form, an unknown setting or KPI, or a fraction outside
                (−1, 0) (the backfill change only shortens waits).
        """
        m = _SPEC.match(text.strip())
        if m is None:
            raise ValueError(
                f"--plant-change {text!r}: expected SETTING:KPI=FRACTION@dayN, "
                "e.g. backfill:large_p90_wait=-0.4@day30"
            )
        if m["kpi"] not in PLANT_KPIS:
            raise ValueError(
                f"--plant-change: unknown KPI {m['kpi']!r} (known: {sorted(PLANT_KPIS)})"
            )
        frac = float(m["frac"])
        if not -1.0 < frac < 0.0:
            raise ValueError(f"--plant-change: fraction {frac} is not in (-1, 0)")
        return cls(m["setting"], m["kpi"], frac, int(m["day"]))

    @property
    def age_after(self) -> int:
        """The new ``bf_min_age_reserve`` (s): A' = (1 + f)(A + D) − D, at least 0."""
        return max(0, round((1.0 + self.fraction) * (AGE_BEFORE + DRAIN) - DRAIN))

    def __str__(self) -> str:
        return f"{self.setting}:{self.kpi}={self.fraction:g}@day{self.day}"


def plant_cluster(name: str = PLANT_CLUSTER) -> ClusterSpec:
    """The small cluster: 8 A100 nodes × 8 GPUs in partition ``gpu`` (UTC)."""
    nodes = tuple(
        NodeSpec(f"p-a100-{i:02d}", 8, "a100", "gpu", "r21", 128, i - 1) for i in range(1, 9)
    )
    return ClusterSpec(name, "slurm", "UTC", nodes)


@dataclass(frozen=True)
class PlantRun:
    """One simulation of the small cluster.

    Attributes:
        spec: the plant.
        cluster: the cluster.
        jobs: every job with its attempts.
        win_start: window start (epoch s, UTC midnight).
        win_end: window end (epoch s).
        change_at: when the setting changed (None: the twin without the change).
    """

    spec: PlantSpec
    cluster: ClusterSpec
    jobs: list[SlurmJob]
    win_start: int
    win_end: int
    change_at: int | None


def _limit(rng: random.Random, run: int) -> int:
    """A time limit a user picks: the first standard limit above 1.3–3 × the run time."""
    want = run * rng.uniform(1.3, 3.0)
    return next((lim for lim in _LIMITS if lim >= want), _LIMITS[-1])


def _draw(rng: random.Random, sim_start: int, win_end: int) -> list[SlurmJob]:
    """The job mix: about 6 large (16- or 32-GPU) jobs a day and small 1–8 GPU jobs."""
    uids = {u: 1001 + i for i, u in enumerate(u for t in TEAMS for u in t.users)}
    factory = _JobFactory(rng, uids, first_id=700000)
    teams = list(TEAMS)
    weights = [t.slurm_weight for t in TEAMS]
    events: list[tuple[int, str]] = []
    for what, per_day in (("small", SMALL_PER_DAY), ("large", LARGE_PER_DAY)):
        t = float(sim_start)
        while True:
            t += rng.expovariate(per_day / DAY)
            if t >= win_end:
                break
            events.append((int(t), what))
    events.sort()
    jobs = []
    for ts, what in events:
        team = rng.choices(teams, weights=weights)[0]
        done = ("COMPLETED", 0, 0, None, "", 0.0, 0)
        if what == "large":
            run = rng.randint(HOUR + HOUR // 2, 3 * HOUR)
            jobs.append(
                factory.gpu_job(
                    ts, team, "gpu", PLANT_LARGE_GPUS, run,
                    outcome=(*done[:2], run, *done[3:]), qos="normal",  # type: ignore[arg-type]
                    name="pretrain-70b", limit=4 * HOUR,
                )
            )  # fmt: skip
            continue
        gpus = rng.choices((1, 2, 4, 8), weights=(30, 20, 25, 25))[0]
        run = min(max(int(rng.lognormvariate(math.log(HOUR), 0.7)), 300), 3 * HOUR)
        jobs.append(
            factory.gpu_job(
                ts, team, "gpu", gpus, run, outcome=(*done[:2], run, *done[3:]),  # type: ignore[arg-type]
                qos="normal", limit=_limit(rng, run),
            )
        )  # fmt: skip
    return jobs


def simulate_plant(
    spec: PlantSpec,
    *,
    seed: int,
    start: dt.date,
    days: int,
    apply: bool = True,
    cluster: ClusterSpec | None = None,
) -> PlantRun:
    """Simulate the small cluster over ``days`` from ``start`` (UTC days), the change applied
    on day ``spec.day`` at 10:00 (or not: ``apply=False`` is the twin, same jobs and draws).

    The random stream is ``goodput-plant/<seed>`` (its own: the other clusters' streams are
    untouched). The simulation starts two days before the window, so the queue is warm.

    Raises:
        ValueError: the change day is not inside the window.
    """
    if not 0 < spec.day < days:
        raise ValueError(f"--plant-change day {spec.day} is not inside the {days}-day window")
    cl = cluster or plant_cluster()
    w0 = int(dt.datetime.combine(start, dt.time(), dt.UTC).timestamp())
    w1 = w0 + days * DAY
    rng = random.Random(f"goodput-plant/{seed}")
    jobs = _draw(rng, w0 - 2 * DAY, w1)
    change_at = w0 + spec.day * DAY + 10 * HOUR
    steps = [(w0 - 2 * DAY, AGE_BEFORE)] + ([(change_at, spec.age_after)] if apply else [])
    sched = _Scheduler(rng, cl, w0, w1, bf_min_age_reserve=steps)
    sched.run(jobs, [], [])
    return PlantRun(spec, cl, jobs, w0, w1, change_at if apply else None)


def jobs_frame(run: PlantRun) -> pl.DataFrame:
    """The run's attempts in the ``jobs`` view's shape (``cluster, team, gpus, req_gpus,
    eligible_at, start_at, end_at, run_s, timelimit_s``), as sacct would report them at the
    window end (a start or end after it is not known yet)."""
    rows = []
    for job in run.jobs:
        for att in job.attempts:
            if att.eligible is None or att.eligible >= run.win_end:
                continue
            start = att.start if att.start is not None and att.start < run.win_end else None
            end = att.end if att.end is not None and att.end <= run.win_end else None
            rows.append(
                (run.cluster.name, job.team, float(job.gpus) if start is not None else 0.0,
                 float(job.gpus), att.eligible, start, end,
                 float(end - start) if start is not None and end is not None else None,
                 float(job.time_limit))
            )  # fmt: skip
    ts = pl.Datetime("us", "UTC")
    frame = pl.DataFrame(
        rows,
        schema={
            "cluster": pl.String(), "team": pl.String(), "gpus": pl.Float64(),
            "req_gpus": pl.Float64(), "eligible_at": pl.Int64(), "start_at": pl.Int64(),
            "end_at": pl.Int64(), "run_s": pl.Float64(), "timelimit_s": pl.Float64(),
        },
        orient="row",
    )  # fmt: skip
    return frame.with_columns(
        (pl.col(c) * 1_000_000).cast(ts) for c in ("eligible_at", "start_at", "end_at")
    )


def _config_text(cluster: str, at: int, age_reserve: int) -> str:
    settings = {
        "ClusterName": cluster,
        "PriorityDecayHalfLife": "7-00:00:00",
        "PriorityType": "priority/multifactor",
        "PriorityWeightAge": "1000",
        "PriorityWeightFairShare": "10000",
        "PriorityWeightJobSize": "0",
        "PriorityWeightQOS": "2000",
        "SchedulerParameters": f"bf_interval=30,bf_window=2880,bf_min_age_reserve={age_reserve}",
        "SchedulerType": "sched/backfill",
        "SelectType": "select/cons_tres",
    }
    lines = [f"Configuration data as of {at}"]
    lines += [f"{k:<23} = {v}" for k, v in settings.items()]
    return "\n".join(lines) + "\n"


def write_config_snapshots(state_dir: Path, run: PlantRun) -> list[Path]:
    """The ledger's input: ``scontrol show config`` as the live source spools it at 00:05 UTC
    of the change's day and of the next day (``scontrol_config_<day>.txt``), the first with the
    old ``bf_min_age_reserve``, the second with the new one. Returns the files written."""
    assert run.change_at is not None
    state_dir.mkdir(parents=True, exist_ok=True)
    day0 = run.win_start + run.spec.day * DAY
    out = []
    for at, age in (
        (day0 + 300, AGE_BEFORE),
        (day0 + DAY + 300, run.spec.age_after),
    ):
        d = dt.datetime.fromtimestamp(at, dt.UTC).date().isoformat()
        path = state_dir / f"scontrol_config_{d}.txt"
        path.write_text(_config_text(run.cluster.name, at, age), encoding="utf-8")
        out.append(path)
    return out


def plant_kpis(run: PlantRun) -> pl.DataFrame:
    """The run's daily KPIs (:func:`metrics.policy_impact.daily_kpis`) over its window, from
    :func:`jobs_frame` and the inventory's capacity (no node is ever down here)."""
    jobs = jobs_frame(run)
    as_of = dt.datetime.fromtimestamp(run.win_end, dt.UTC)
    nodes = pl.DataFrame(
        {
            "cluster": [run.cluster.name] * len(run.cluster.nodes),
            "host": [n.host for n in run.cluster.nodes],
            "gpus": [float(n.gpus) for n in run.cluster.nodes],
            "capacity_source": ["inventory"] * len(run.cluster.nodes),
        }
    )
    occ = occupancy_hourly(
        jobs.filter(pl.col("start_at").is_not_null()).lazy(), nodes.lazy(), as_of
    ).collect()
    kpis = daily_kpis(jobs, occ, pl.DataFrame({"cluster": [run.cluster.name], "as_of": [as_of]}))
    first = dt.datetime.fromtimestamp(run.win_start, dt.UTC)
    return kpis.filter(pl.col("day") >= first)


def planted_effect(
    run_kpis: pl.DataFrame, twin_kpis: pl.DataFrame, kpi: str, post_from: dt.datetime
) -> tuple[float, float] | None:
    """The realised effect on ``kpi``: the mean over the days from ``post_from`` on of the
    run's value minus the twin's (:func:`plant_kpis` of the run and of its twin, the same jobs
    without the change), and that as a fraction of the twin's mean over those days. None when
    no day has both."""
    sel = (pl.col("kpi") == kpi) & (pl.col("day") >= post_from)
    both = run_kpis.filter(sel).join(twin_kpis.filter(sel), on="day", suffix="_twin")
    if both.height == 0:
        return None
    effect = float((both["value"] - both["value_twin"]).mean())  # type: ignore[arg-type]
    return effect, effect / float(both["value_twin"].mean())  # type: ignore[arg-type]


#: The planted-findings key of a planted backfill change (``planted.json``).
PLANTED_CHANGE_KEY = "planted_change_backfill"


def planted_change_finding(run: PlantRun, twin: PlantRun) -> dict[str, object]:
    """The planted change as ``planted.json`` states it: what changed, when, and the realised
    effect on the KPI over the days from the second midnight after the change (the first day
    the ledger's snapshot pair lets the estimate use)."""
    assert run.change_at is not None
    kpi = PLANT_KPIS[run.spec.kpi]
    post_from = dt.datetime.fromtimestamp(run.win_start, dt.UTC) + dt.timedelta(
        days=run.spec.day + 2
    )
    effect = planted_effect(plant_kpis(run), plant_kpis(twin), kpi, post_from)
    return {
        "cluster": run.cluster.name,
        "spec": str(run.spec),
        "object": "slurm.conf",
        "key": "SchedulerParameters:bf_min_age_reserve",
        "old": str(AGE_BEFORE),
        "new": str(run.spec.age_after),
        "changed_at_utc": dt.datetime.fromtimestamp(run.change_at, dt.UTC).isoformat(),
        "kpi": kpi,
        "stated_fraction": run.spec.fraction,
        "effect_from_utc": post_from.isoformat(),
        "realised_effect_h": None if effect is None else round(effect[0], 3),
        "realised_fraction": None if effect is None else round(effect[1], 3),
        "note": "the realised effect is the mean over the post-period days of the run minus "
        "its twin (the same seed and jobs without the change)",
    }


def write_plant_inputs(out: Path, run: PlantRun) -> int:
    """Write the cluster's inputs under ``out``: ``inventory/<cluster>.csv``,
    ``inputs/<cluster>/sacct/sacct_<day>.psv`` per UTC day and the ``scontrol show config``
    pair (:func:`write_config_snapshots`). Earlier sacct day files there are removed first.
    Returns the number of files written."""
    name = run.cluster.name
    (out / "inventory").mkdir(parents=True, exist_ok=True)
    write_inventory(out / "inventory" / f"{name}.csv", run.cluster)
    sacct = out / "inputs" / name / "sacct"
    sacct.mkdir(parents=True, exist_ok=True)
    for old in sacct.glob("sacct_*.psv"):
        old.unlink()
    state = out / "inputs" / name / "slurm_state"
    if state.is_dir():
        for old in state.glob("scontrol_config_*.txt"):
            old.unlink()
    lt = LocalTime("UTC")
    files = 1
    for a in range(run.win_start, run.win_end, DAY):
        d = dt.datetime.fromtimestamp(a, dt.UTC).date().isoformat()
        write_sacct_day(sacct / f"sacct_{d}.psv", run.jobs, a, a + DAY, name, lt)
        files += 1
    files += len(write_config_snapshots(state, run))
    return files


def generate_planted_fleet(
    out_dir: str | Path, spec: PlantSpec, *, seed: int = 7, start: dt.date, days: int = 60
) -> dict[str, object]:
    """``goodput generate --plant-change``: the small cluster with the planted change, its
    registry and ``planted.json`` (:data:`PLANTED_CHANGE_KEY`) under ``out_dir``.

    Returns:
        The planted findings written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run = simulate_plant(spec, seed=seed, start=start, days=days)
    twin = simulate_plant(spec, seed=seed, start=start, days=days, apply=False)
    write_registry(out / "registry.yaml")
    files = 1 + write_plant_inputs(out, run)
    planted: dict[str, object] = {
        "seed": seed,
        "window": {"start": start.isoformat(), "days": days, "days_are_utc_days": True},
        PLANTED_CHANGE_KEY: planted_change_finding(run, twin),
        "files_written": files + 1,
    }
    write_planted(out / "planted.json", planted)
    return planted


#: The bundled fleet's plant: ``slurm-p`` with this many days of history before the window,
#: the change on the window's third day (so both sides have days to tell), planted only in
#: windows of at least :data:`BUNDLED_MIN_DAYS` days.
BUNDLED_HISTORY_DAYS = 28
BUNDLED_MIN_DAYS = 7
BUNDLED_FRACTION = -0.4


def plant_bundled(
    out: Path, *, seed: int, start: dt.date, days: int
) -> tuple[int, dict[str, object] | None]:
    """The bundled fleet's planted change (``goodput generate`` defaults): ``slurm-p``'s
    inputs from :data:`BUNDLED_HISTORY_DAYS` days before ``start`` to the window's end, its
    ``bf_min_age_reserve`` cut on the window's third day. Windows shorter than
    :data:`BUNDLED_MIN_DAYS` get no plant (and lose an earlier one's files).

    Returns:
        ``(files written, the planted finding or None)``.
    """
    if days < BUNDLED_MIN_DAYS:
        for sub in ("sacct", "slurm_state", "recommendations"):
            folder = out / "inputs" / PLANT_CLUSTER / sub
            for p in folder.glob("*") if folder.is_dir() else ():
                p.unlink()
        inv = out / "inventory" / f"{PLANT_CLUSTER}.csv"
        if inv.exists():
            inv.unlink()
        return 0, None
    spec = PlantSpec("backfill", "large_p90_wait", BUNDLED_FRACTION, BUNDLED_HISTORY_DAYS + 2)
    first = start - dt.timedelta(days=BUNDLED_HISTORY_DAYS)
    total = BUNDLED_HISTORY_DAYS + days
    run = simulate_plant(spec, seed=seed, start=first, days=total)
    twin = simulate_plant(spec, seed=seed, start=first, days=total, apply=False)
    files = write_plant_inputs(out, run) + 1
    write_proposal_record(out, run)
    return files, planted_change_finding(run, twin)


#: The rule and partition of the proposal the planted change applies.
PROPOSAL_RULE = "backfill_tuning"
PROPOSAL_PARTITION = "gpu"


def write_proposal_record(out: Path, run: PlantRun) -> Path:
    """The proposal the planted change applies, as an earlier run's record:
    ``inputs/<cluster>/recommendations/proposals_<day>.json`` in ``latest.json``'s shape
    (``pipelines.recommendations.read_proposal_history``), ``as_of`` the change day's midnight
    UTC (a run on the data before the change), one ``backfill_tuning`` recommendation on
    partition ``gpu`` whose patch sets ``bf_min_age_reserve`` to the value the change then
    set. The record is written by the generator, not computed: the ``backfill_tuning`` rule
    does not propose ``bf_min_age_reserve``; the ``backfill_min_age_reserve`` rule does, on
    these pre-change days (:func:`pipelines.sample_fleet._plant_proposal.rule_proposal`), but
    0 s rather than the value planted, which the ledger would not match; the file says it is
    generator-written in its ``note``.

    Returns:
        The file written (an earlier one of another day is removed).
    """
    assert run.change_at is not None
    folder = out / "inputs" / run.cluster.name / "recommendations"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("proposals_*.json"):
        old.unlink()
    as_of = dt.datetime.fromtimestamp(run.win_start + run.spec.day * DAY, dt.UTC)
    scope = scope_key(cluster=run.cluster.name, partition=PROPOSAL_PARTITION)
    new = run.spec.age_after
    line = f"SchedulerParameters=bf_interval=30,bf_window=2880,bf_min_age_reserve={new}"
    rec = {
        "id": recommendation_id(PROPOSAL_RULE, scope),
        "rule": PROPOSAL_RULE,
        "cluster": run.cluster.name,
        "scope": scope,
        "severity": "warning",
        "change_text": (
            f"Large jobs ({PLANT_LARGE_GPUS} GPUs) in partition {PROPOSAL_PARTITION} wait about "
            f"{(AGE_BEFORE + DRAIN) / HOUR:.1f} h: backfill reserves nothing for a pending job "
            f"until it has been eligible bf_min_age_reserve = {AGE_BEFORE} s. Set {line}."
        ),
        "patch": {"kind": "slurm.conf", "content": line},
        "status": "proposed",
        "change_id": None,
    }
    doc = {
        "as_of": as_of.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "note": "sample fleet: the proposal record of a run before the planted change, written "
        "by the generator (the backfill rule does not propose bf_min_age_reserve)",
        "recommendations": [rec],
    }
    path = folder / f"proposals_{as_of.date().isoformat()}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path
