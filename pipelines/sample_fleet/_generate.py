"""``generate_sample_fleet``: simulate both clusters and write every input file."""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl

from pipelines.sample_fleet._dcgm import DcgmContext, write_dcgm_day
from pipelines.sample_fleet._k8s_sim import K8sResult, simulate_k8s
from pipelines.sample_fleet._k8s_writers import (
    COHORT,
    PROD_LENDING_LIMIT,
    build_events,
    rfc3339,
    write_cluster_queues_day,
    write_events_day,
    write_local_queues_day,
    write_nodes_day,
    write_pods_day,
    write_workloads_day,
)
from pipelines.sample_fleet._model import (
    LEMON_HOST,
    TEAMS,
    ClusterSpec,
    GpuAllocation,
    build_clusters,
    gpu_uuid,
)
from pipelines.sample_fleet._policy_plant import PLANTED_CHANGE_KEY, plant_bundled
from pipelines.sample_fleet._rackscale import (
    RACKSCALE_CLUSTER,
    build_rackscale_cluster,
    generate_rackscale,
)
from pipelines.sample_fleet._slurm_on_k8s import sok_files, write_slurm_on_k8s
from pipelines.sample_fleet._slurm_sim import SlurmResult, simulate_slurm
from pipelines.sample_fleet._writers import (
    LocalTime,
    write_inventory,
    write_node_events,
    write_planted,
    write_policy_history,
    write_registry,
    write_reservation_history,
    write_sacct_day,
    write_sshare,
)

__all__ = ["FleetSummary", "SampleFleet", "generate_sample_fleet", "simulate_fleet"]

DAY = 86400
LARGE_GPUS = 64
#: sshare RawShares per account: the registry share × 100, except ``speech`` (planted drift).
DRIFT_TEAM = "speech"
DRIFT_RAW_SHARES = 3
#: The ClusterQueue whose ``reclaimWithinCohort`` goes from ``Any`` to ``Never`` mid-window.
RECLAIM_CHANGE_QUEUE = "cq-prod"


@dataclass(frozen=True)
class FleetSummary:
    """What :func:`generate_sample_fleet` wrote.

    Attributes:
        out_dir: the folder written.
        seed: the seed used.
        start: first day of the window.
        days: days in the window.
        jobs: jobs per cluster that appear in the window (Slurm jobs and array tasks;
            Kubernetes Workloads).
        gpus: GPUs per cluster.
        files_written: number of files written.
        planted: the planted findings with their measured numbers (as in ``planted.json``).
    """

    out_dir: Path
    seed: int
    start: dt.date
    days: int
    jobs: dict[str, int]
    gpus: dict[str, int]
    files_written: int
    planted: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        """One line: jobs and GPUs per cluster, files written, planted finding names."""
        clusters = ", ".join(f"{c}: {self.jobs[c]} jobs on {self.gpus[c]} GPUs" for c in self.jobs)
        found = ", ".join(
            k for k, v in self.planted.items() if isinstance(v, dict) and k != "window"
        )
        return (
            f"{self.days} days from {self.start.isoformat()} (seed {self.seed}): {clusters}; "
            f"{self.files_written} files; planted: {found}"
        )


@dataclass(frozen=True)
class SampleFleet:
    """The simulated fleet before anything is written (used by the tests).

    Attributes:
        slurm_cluster: the Slurm cluster.
        k8s_cluster: the Kubernetes cluster.
        slurm: Slurm simulation result.
        k8s: Kubernetes simulation result.
        slurm_window: ``(start, end)`` epoch seconds, local midnights in the Slurm zone.
        k8s_window: ``(start, end)`` epoch seconds, UTC midnights.
        slurm_days: ``(date, start, end)`` of each local day of the Slurm cluster.
        k8s_days: ``(date, start, end)`` of each UTC day.
    """

    slurm_cluster: ClusterSpec
    k8s_cluster: ClusterSpec
    slurm: SlurmResult
    k8s: K8sResult
    slurm_window: tuple[int, int]
    k8s_window: tuple[int, int]
    slurm_days: tuple[tuple[dt.date, int, int], ...]
    k8s_days: tuple[tuple[dt.date, int, int], ...]

    @property
    def allocations(self) -> list[GpuAllocation]:
        """Every GPU allocation of both clusters."""
        return [*self.slurm.allocations, *self.k8s.allocations]


def _days(start: dt.date, days: int, tz: str) -> tuple[tuple[dt.date, int, int], ...]:
    zone = ZoneInfo(tz)
    out = []
    for i in range(days):
        d = start + dt.timedelta(days=i)
        a = dt.datetime.combine(d, dt.time(), zone)
        b = dt.datetime.combine(d + dt.timedelta(days=1), dt.time(), zone)
        out.append((d, int(a.timestamp()), int(b.timestamp())))
    return tuple(out)


def uid_map() -> dict[str, int]:
    """uid per user name (1001, 1002, … in registry order)."""
    uids: dict[str, int] = {}
    for team in TEAMS:
        for user in team.users:
            uids[user] = 1001 + len(uids)
    return uids


def simulate_fleet(
    seed: int = 7, start: dt.date = dt.date(2026, 11, 2), days: int = 14
) -> SampleFleet:
    """Simulate both clusters (no files written).

    Args:
        seed: random seed; the same seed gives the same fleet.
        start: first day of the window.
        days: days in the window.

    Returns:
        The simulated fleet.
    """
    if days < 1:
        raise ValueError("days must be at least 1")
    slurm_cluster, k8s_cluster = build_clusters()
    slurm_days = _days(start, days, slurm_cluster.tz)
    k8s_days = _days(start, days, k8s_cluster.tz)
    slurm_win = (slurm_days[0][1], slurm_days[-1][2])
    k8s_win = (k8s_days[0][1], k8s_days[-1][2])
    slurm = simulate_slurm(
        random.Random(f"goodput-sample/{seed}/slurm"),
        slurm_cluster,
        slurm_win[0],
        slurm_win[1],
        uid_map(),
    )
    k8s = simulate_k8s(
        random.Random(f"goodput-sample/{seed}/k8s"), k8s_cluster, k8s_win[0], k8s_win[1]
    )
    return SampleFleet(
        slurm_cluster, k8s_cluster, slurm, k8s, slurm_win, k8s_win, slurm_days, k8s_days
    )


def _clean(folder: Path, patterns: Sequence[str]) -> None:
    """Remove earlier generated files of these patterns, so a shorter run leaves no stale days."""
    if not folder.is_dir():
        return
    for pattern in patterns:
        for p in folder.glob(pattern):
            if p.is_file():
                p.unlink()


def _quantile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank quantile (None for no values)."""
    if not values:
        return None
    s = sorted(values)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def _usage_by_team(
    allocs: Sequence[GpuAllocation], windows: dict[str, tuple[int, int]]
) -> dict[str, float]:
    out: dict[str, float] = {}
    for a in allocs:
        w0, w1 = windows[a.cluster]
        s, e = max(a.start, w0), min(a.end, w1)
        if e > s:
            out[a.team] = out.get(a.team, 0.0) + (e - s)
    return out


def _planted(
    fleet: SampleFleet, seed: int, activity: pl.DataFrame, sshare_norm: dict[str, float]
) -> dict[str, Any]:
    slurm, k8s = fleet.slurm, fleet.k8s
    w0, w1 = fleet.slurm_window
    lt = LocalTime(fleet.slurm_cluster.tz)
    # (1) idle team
    team_act = activity.filter(pl.col("team") == "recsys")
    idle: dict[str, Any] = {"team": "recsys", "metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}
    if team_act.height:
        row = team_act.row(0, named=True)
        idle.update(
            mean_activity=round(row["mean"], 4),
            share_of_samples_between_0_01_and_0_03=round(row["low_share"], 4),
            allocated_gpu_hours=round(row["samples"] * 300 / 3600, 1),
        )
    others = activity.filter(pl.col("team") != "recsys")
    if others.height:
        idle["min_mean_activity_of_other_teams"] = round(min(others["mean"].to_list()), 4)
    # (2) starved large-job queue
    waits: list[float] = []
    jobs: list[dict[str, Any]] = []
    for job in slurm.jobs:
        if job.gpus < LARGE_GPUS or job.partition != "gpu":
            continue
        for att in job.attempts:
            if att.eligible is None or att.eligible < w0 or att.eligible >= w1:
                continue
            started = att.start is not None and att.start < w1
            end = att.start if started and att.start is not None else w1
            wait_h = (end - att.eligible) / 3600
            waits.append(wait_h)
            jobs.append(
                {
                    "job_id": job.job_id,
                    "attempt": att.index,
                    "gpus": job.gpus,
                    "eligible": lt(att.eligible),
                    "wait_hours": round(wait_h, 2),
                    "started": started,
                }
            )
    starved = {
        "cluster": slurm_name(fleet),
        "partition": "gpu",
        "min_gpus": LARGE_GPUS,
        "attempts": len(waits),
        "p50_wait_hours": _round(_quantile(waits, 0.5)),
        "p90_wait_hours": _round(_quantile(waits, 0.9)),
        "max_wait_hours": _round(max(waits) if waits else None),
        "note": "waits of attempts still pending at the window end are counted up to the end "
        "(lower bounds), so the true percentiles are at least these",
        "held_idle_gpu_hours": round(slurm.held_gpu_s / 3600, 1),
        "jobs": jobs,
    }
    # (3) lemon node
    nf = [
        att
        for job in slurm.jobs
        for att in job.attempts
        if att.state == "NODE_FAIL" and LEMON_HOST in att.hosts
    ]
    xids = [e for e in slurm.node_events if e.host == LEMON_HOST and e.xid]
    down_s = sum(
        max(0, min(e.end or w1, w1) - max(e.start, w0))
        for e in slurm.node_events
        if e.host == LEMON_HOST
    )
    lemon = {
        "cluster": slurm_name(fleet),
        "host": LEMON_HOST,
        "node_fail_attempts": len(nf),
        "node_fail_jobs": sorted({att.job.job_id for att in nf}),
        "xid": 79,
        "xid_gpu_index": xids[0].xid_gpu if xids else None,
        "xid_gpu_uuid": gpu_uuid(seed, slurm_name(fleet), LEMON_HOST, xids[0].xid_gpu)
        if xids
        else None,
        "xid_times_utc": [rfc3339(e.xid_time) for e in xids],
        "down_or_drained_hours": round(down_s / 3600, 1),
    }
    # (4) team over its share
    windows = {slurm_name(fleet): fleet.slurm_window, fleet.k8s_cluster.name: fleet.k8s_window}
    usage = _usage_by_team(fleet.allocations, windows)
    total = sum(usage.values())
    share = {t.name: t.share for t in TEAMS}
    nlp_frac = usage.get("nlp", 0.0) / total if total else 0.0
    over = {
        "team": "nlp",
        "registry_share": share["nlp"],
        "usage_share_of_allocated_gpu_seconds": round(nlp_frac, 4),
        "ratio_to_share": round(nlp_frac / share["nlp"], 2),
        "allocated_gpu_hours": round(usage.get("nlp", 0.0) / 3600, 1),
        "fleet_allocated_gpu_hours": round(total / 3600, 1),
    }
    # (5) registry drift
    drift = {
        "team": DRIFT_TEAM,
        "registry_share": share[DRIFT_TEAM],
        "sshare_file": f"inputs/{slurm_name(fleet)}/slurm_state/sshare_"
        f"{fleet.slurm_days[-1][0].isoformat()}.psv",
        "sshare_raw_shares": DRIFT_RAW_SHARES,
        "sshare_norm_shares": round(sshare_norm[DRIFT_TEAM], 6),
        "other_teams_raw_shares": "registry share × 100",
    }
    # (6) the twice-preempted Kueue workload
    preempted: dict[str, Any] | None = None
    for wl in k8s.workloads:
        if not wl.planted:
            continue
        evictions = [a for a in wl.attempts if a.outcome == "Evicted"]
        preempted = {
            "cluster": fleet.k8s_cluster.name,
            "namespace": wl.namespace,
            "job": wl.job_name,
            "workload": wl.wl_name,
            "workload_uid": wl.wl_uid,
            "gpus": wl.gpus,
            "attempts": len(wl.attempts),
            "evictions": len(evictions),
            "evicted_at_utc": [rfc3339(a.end) for a in evictions if a.end is not None],
            "preemptors": [a.preemptor.wl_name for a in evictions if a.preemptor is not None],
            "final_outcome": wl.attempts[-1].outcome or "Running",
        }
    # (7) Kueue quota unused while another queue of the cohort pends (cq-prod lends nothing)
    kueue_unused = {
        "cluster": fleet.k8s_cluster.name,
        "cohort": COHORT,
        "lender": "cq-prod",
        "lender_nominal_gpus": k8s.quotas.get("cq-prod"),
        "lender_lending_limit": PROD_LENDING_LIMIT,
        "pending_queue": "cq-research",
        "pending_queue_nominal_gpus": k8s.quotas.get("cq-research"),
        # cq-prod's quota also drifts from the registry: its teams' share × the cohort's GPUs
        "lender_registry_share": round(sum(t.share for t in TEAMS if t.group == "prod"), 4),
        "cohort_nominal_gpus": sum(k8s.quotas.values()),
        "clusterqueues_file": f"inputs/{fleet.k8s_cluster.name}/k8s/clusterqueues_"
        f"{fleet.k8s_days[-1][0].isoformat()}.json",
    }
    return {
        "seed": seed,
        "window": {
            "start": fleet.slurm_days[0][0].isoformat(),
            "days": len(fleet.slurm_days),
            "slurm_a_days_are_local_days_in": fleet.slurm_cluster.tz,
            "k8s_b_days_are_local_days_in": fleet.k8s_cluster.tz,
        },
        "idle_team": idle,
        "starved_large_jobs": starved,
        "lemon_node": lemon,
        "over_share_team": over,
        "registry_drift": drift,
        "preempted_workload": preempted,
        "kueue_unused_quota": kueue_unused,
        "idle_reservation": _idle_reservation(fleet),
    }


def _idle_reservation(fleet: SampleFleet) -> dict[str, Any]:
    """(8) the recurring reservation no job uses: its occurrences and reserved GPU-hours."""
    w0, w1 = fleet.slurm_window
    gpus = {n.host: n.gpus for n in fleet.slurm_cluster.nodes}
    out: dict[str, Any] = {}
    for r in fleet.slurm.reservations:
        occ = [(max(a, w0), min(b, w1)) for a, b in r.occurrences if a < w1 and b > w0]
        out = {
            "cluster": slurm_name(fleet),
            "reservation": r.name,
            "nodes": list(r.hosts),
            "account": r.account,
            "daily_local_hours": f"{r.local_start_hour:02d}:00-"
            f"{r.local_start_hour + r.hours:02d}:00",
            "occurrences_in_window": len(occ),
            "reserved_gpu_hours": round(
                sum(b - a for a, b in occ) / 3600 * sum(gpus[h] for h in r.hosts), 1
            ),
            "used_gpu_hours": 0.0,
            "history_file": f"inputs/{slurm_name(fleet)}/slurm_state/reservation_history_"
            f"{fleet.slurm_days[-1][0].isoformat()}.psv",
        }
    return out


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def slurm_name(fleet: SampleFleet) -> str:
    """Name of the fleet's Slurm cluster."""
    return fleet.slurm_cluster.name


def generate_sample_fleet(
    out_dir: str | Path,
    *,
    seed: int = 7,
    start: dt.date = dt.date(2026, 11, 2),
    days: int = 14,
    rackscale: bool = True,
) -> FleetSummary:
    """Simulate the two-cluster sample fleet and write its inputs in the real formats.

    Writes ``registry.yaml``, ``inventory/<cluster>.csv``, ``inputs/slurm-a/sacct/sacct_D.psv``,
    ``inputs/slurm-a/slurm_state/{sshare,events,reservation_history,transactions,tres}_<last
    day>.psv``,
    ``inputs/k8s-b/k8s/{events,pods,workloads,clusterqueues,localqueues,nodes}_D.json``,
    ``inputs/<cluster>/dcgm/dcgm_D.prom.gz``, for windows of 7 days or more the planted policy
    change's cluster (``inventory/slurm-p.csv``, ``inputs/slurm-p/sacct/sacct_D.psv`` from 28
    days before ``start``, ``inputs/slurm-p/slurm_state/scontrol_config_D.txt``) and
    ``planted.json`` under ``out_dir``, and (``rackscale``) the files of ``slurm-nvl``
    (:func:`pipelines.sample_fleet._rackscale.generate_rackscale`). Earlier generated day files
    in those folders are removed first. Same seed, start and days give byte-identical files;
    nothing reads the clock.

    Args:
        out_dir: folder to write into (created if needed).
        seed: random seed.
        start: first day of the window (Slurm days are local days in America/New_York,
            Kubernetes days UTC days).
        days: number of days.
        rackscale: also write the third cluster, ``slurm-nvl`` (rack-scale NVLink domains,
            :mod:`pipelines.sample_fleet._rackscale`; its own random stream, so the other two
            clusters' files are the same with or without it).

    Returns:
        Counts and the planted findings.
    """
    out = Path(out_dir)
    fleet = simulate_fleet(seed, start, days)
    sl, kc = fleet.slurm_cluster, fleet.k8s_cluster
    s_in = out / "inputs" / sl.name
    k_in = out / "inputs" / kc.name
    for folder in (out / "inventory", s_in / "sacct", s_in / "dcgm", k_in / "k8s", k_in / "dcgm"):
        folder.mkdir(parents=True, exist_ok=True)
    _clean(s_in / "sacct", ["sacct_*.psv"])
    _clean(s_in / "dcgm", ["dcgm_*.prom.gz"])
    _clean(
        k_in / "k8s",
        [
            "events_*.json",
            "pods_*.json",
            "workloads_*.json",
            "clusterqueues_*.json",
            "localqueues_*.json",
            "nodes_*.json",
        ],
    )
    _clean(k_in / "dcgm", ["dcgm_*.prom.gz"])
    files = 0

    write_registry(out / "registry.yaml")
    write_inventory(out / "inventory" / f"{sl.name}.csv", sl)
    write_inventory(out / "inventory" / f"{kc.name}.csv", kc)
    files += 3

    lt = LocalTime(sl.tz)
    for d, a, b in fleet.slurm_days:
        write_sacct_day(
            s_in / "sacct" / f"sacct_{d.isoformat()}.psv", fleet.slurm.jobs, a, b, sl.name, lt
        )
        files += 1
    raw_shares = {t.name: round(t.share * 100) for t in TEAMS}
    raw_shares[DRIFT_TEAM] = DRIFT_RAW_SHARES
    last_day = fleet.slurm_days[-1][0].isoformat()
    state_dir = s_in / "slurm_state"
    state_dir.mkdir(parents=True, exist_ok=True)
    norm = write_sshare(
        state_dir / f"sshare_{last_day}.psv", fleet.slurm.jobs, raw_shares, fleet.slurm_window[1]
    )
    registered = int(
        dt.datetime.combine(
            start - dt.timedelta(days=49), dt.time(10, 12, 3), ZoneInfo(sl.tz)
        ).timestamp()
    )
    write_node_events(
        state_dir / f"events_{last_day}.psv",
        sl.name,
        fleet.slurm.node_events,
        registered,
        fleet.slurm_window[0],
        fleet.slurm_window[1],
        lt,
        cluster_gpus=sum(n.gpus for n in sl.nodes),
    )
    write_reservation_history(
        state_dir / f"reservation_history_{last_day}.psv",
        sl.name,
        fleet.slurm.reservations,
        *fleet.slurm_window,
        lt,
    )
    # the policy ledger's history: the registry's shares as first set, then the planted drift
    first_shares = {t.name: round(t.share * 100) for t in TEAMS}
    write_policy_history(
        state_dir / f"transactions_{last_day}.psv",
        state_dir / f"tres_{last_day}.psv",
        sl.name,
        first_shares,
        {DRIFT_TEAM: DRIFT_RAW_SHARES},
        registered,
        fleet.slurm_window[0] + 3 * 86400 + 14 * 3600 + 5 * 60,
    )
    files += 5

    events = build_events(fleet.k8s.workloads, fleet.k8s.pools, len(kc.nodes), fleet.k8s_window[1])
    k8s_born = fleet.k8s_window[0] - 30 * 86400  # when the queues and nodes were created
    for d, a, b in fleet.k8s_days:
        write_events_day(k_in / "k8s" / f"events_{d.isoformat()}.json", events, a, b)
        write_pods_day(
            k_in / "k8s" / f"pods_{d.isoformat()}.json", fleet.k8s.workloads, fleet.k8s.pools, a, b
        )
        # Kueue and Node snapshots at the day's end (file time = snapshot time)
        k_day = d.isoformat()
        write_workloads_day(k_in / "k8s" / f"workloads_{k_day}.json", fleet.k8s.workloads, a, b)
        # the first half of the window one queue reclaimed within its cohort (a policy change
        # the ledger finds between two daily snapshots)
        early = (d - fleet.k8s_days[0][0]).days < len(fleet.k8s_days) // 2
        write_cluster_queues_day(
            k_in / "k8s" / f"clusterqueues_{k_day}.json",
            fleet.k8s.workloads,
            fleet.k8s.quotas,
            k8s_born,
            b,
            reclaim_any=frozenset({RECLAIM_CHANGE_QUEUE}) if early else frozenset(),
        )
        write_local_queues_day(
            k_in / "k8s" / f"localqueues_{k_day}.json", fleet.k8s.workloads, TEAMS, k8s_born, b
        )
        write_nodes_day(k_in / "k8s" / f"nodes_{k_day}.json", kc.nodes, k8s_born, b)
        files += 6

    stats: list[pl.DataFrame] = []
    for ci, (cluster, result_allocs, node_events, day_list, folder) in enumerate(
        (
            (sl, fleet.slurm.allocations, fleet.slurm.node_events, fleet.slurm_days, s_in / "dcgm"),
            (kc, fleet.k8s.allocations, [], fleet.k8s_days, k_in / "dcgm"),
        )
    ):
        ctx = DcgmContext.build(seed, ci, cluster, result_allocs, node_events)
        for di, (d, a, b) in enumerate(day_list):
            frame = write_dcgm_day(folder / f"dcgm_{d.isoformat()}.prom.gz", ctx, seed, di, a, b)
            files += 1
            stats.append(
                frame.filter(pl.col("team").is_not_null() & (pl.col("kind") != "wait"))
                .group_by("team")
                .agg(
                    pl.col("activity").sum().alias("act_sum"),
                    pl.len().alias("samples"),
                    pl.col("activity").is_between(0.01, 0.03).sum().alias("low"),
                )
            )
    activity = (
        pl.concat(stats)
        .group_by("team")
        .agg(pl.col("act_sum").sum(), pl.col("samples").sum(), pl.col("low").sum())
        .with_columns(
            (pl.col("act_sum") / pl.col("samples")).alias("mean"),
            (pl.col("low") / pl.col("samples")).alias("low_share"),
        )
        .sort("team")
    )
    planted = _planted(fleet, seed, activity, norm)
    # a third, small cluster with a policy change of known effect (its own random stream)
    plant_files, change = plant_bundled(out, seed=seed, start=start, days=days)
    if change is not None:
        planted[PLANTED_CHANGE_KEY] = change
    files += plant_files
    write_planted(out / "planted.json", planted)
    files += 1
    # Slurm on Kubernetes (sok-c in NodeSet pods on k8s-c): its own RNG stream and files
    write_slurm_on_k8s(out, seed=seed, start=start, days=days)
    files += sok_files(days)

    s0, s1 = fleet.slurm_window
    k0, k1 = fleet.k8s_window
    n_slurm = sum(
        1
        for j in fleet.slurm.jobs
        if any(att.submit < s1 and (att.end is None or att.end >= s0) for att in j.attempts)
    )
    n_k8s = sum(
        1
        for w in fleet.k8s.workloads
        if w.created < k1 and any(att.end is None or att.end >= k0 for att in w.attempts)
    )
    jobs, gpus = {sl.name: n_slurm, kc.name: n_k8s}, {sl.name: sl.gpus, kc.name: kc.gpus}
    if rackscale:
        jobs[RACKSCALE_CLUSTER], n_files = generate_rackscale(
            out, seed=seed, start=start, days=days
        )
        gpus[RACKSCALE_CLUSTER] = build_rackscale_cluster().gpus
        files += n_files
    return FleetSummary(
        out_dir=out,
        seed=seed,
        start=start,
        days=days,
        jobs=jobs,
        gpus=gpus,
        files_written=files,
        planted=planted,
    )
