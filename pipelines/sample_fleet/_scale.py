"""A fleet simulator at scale: ``goodput generate --gpus N --days D --seed S``.

It writes the real input formats of one Slurm cluster of ``N`` GPUs (8 per node, 16 nodes per rack,
4 racks per partition) over ``D`` days: daily ``sacct --parsable2 --allocations`` files, the
``sacctmgr show event`` and ``sshare -a -l -P`` state files, the inventory and the registry, DCGM
telemetry as hourly per-GPU aggregates in Parquet (hive layout ``date=YYYY-MM-DD``) for the whole
window plus dcgm-exporter text at 5 minutes for the last ``dcgm_5min_days`` days, and
``planted.json``. The bundled two-week fleet (:mod:`pipelines.sample_fleet._generate`) is unchanged.

Calibration (published characteristics of production GPU clusters):

- **Job sizes**: most jobs ask for one GPU, most GPU-time goes to multi-GPU jobs. Philly
  (Jeon et al., "Analysis of large-scale multi-tenant GPU clusters for DNN training workloads",
  USENIX ATC'19) and Helios (Hu et al., "Characterization and prediction of deep learning
  workloads in large-scale GPU datacenters", SC'21) both report a majority of single-GPU jobs while
  jobs of ≥ 8 GPUs hold most GPU-time; Acme (Hu et al., "Characterization of large language model
  development in the datacenter", NSDI'24) shows the same skew sharper for LLM pretraining (few
  jobs of hundreds of GPUs). :data:`SIZE_PROBS` puts 72 % of jobs on one GPU; sizes reach 128 GPUs
  (a quarter of a partition).
- **Durations**: heavy-tailed (log-normal with σ = 2, medians of minutes for small jobs, hours for
  large ones), as in Philly, Helios and Alibaba PAI (Weng et al., "MLaaS in the wild: workload
  analysis and scheduling in large-scale heterogeneous GPU clusters", NSDI'22), where the median
  task runs minutes while the tail runs days. Runs are cut at the time limit (TIMEOUT).
- **Outcomes**: about a third of GPU jobs end unsuccessfully (Philly: failed and killed jobs;
  Helios similar): 68 % COMPLETED, 17 % FAILED, 12 % CANCELLED while running, 3 % cancelled while
  pending.
- **Diurnal submission**: arrivals follow a daily curve peaking in the afternoon and a lighter
  weekend (Philly, Helios: submission rates vary ~3× over a day).
- **Node failures**: hardware failures at a few per thousand node-days (Kokolis et al.,
  "Revisiting reliability in large-scale machine learning research clusters", arXiv 2410.21680,
  2024, report 2.3–6.5 failures per 1,000 node-days); :data:`FAIL_PER_NODE_DAY` is 4e-3. A failure
  ends every attempt on the node with NODE_FAIL and takes the node DOWN for a log-normal repair
  time (median 4 h), never past the next start the schedule placed on it, so no job runs on a
  down node.
- **Offered load**: arrival rate set so demand is :data:`LOAD` × capacity (busy clusters run at
  60–80 % allocation in these traces).

Scheduling: each partition is replayed with :func:`metrics.scheduler_model.simulate` (priority,
FIFO and EASY backfill over whole nodes, jobs of more than 8 GPUs on whole nodes), so the records
are internally consistent: no node is over capacity and no job starts before it is eligible. A
warm-up of :data:`WARMUP_DAYS` days runs before the window so the cluster is busy at its start.

Planted findings (recorded in ``planted.json``, as the bundled fleet does): the idle team
``recsys`` (DCGM activity 0.01–0.03), starved large jobs in partition ``p000`` (a backfill window
of 1 h while time limits run to days, so ≥ 64-GPU jobs wait far longer than elsewhere), a lemon
node (the first node of ``p000``, failing :data:`LEMON_FACTOR` × as often, with XID 79), and
registry drift (``speech`` has RawShares 3 in sshare against 0.08 in the registry).

Memory is bounded: partitions are simulated one at a time and written to a work folder
(``<out>/.scale_work``, Parquet sorted by submit/start); day files are then written in one sweep
that keeps only the records alive on the current day.
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from metrics.scheduler_model import SchedulerSettings, SimJob, simulate
from pipelines._progress import progress_bar
from pipelines.sample_fleet._model import TEAMS, ClusterSpec, NodeEvent, NodeSpec

__all__ = [
    "FAIL_PER_NODE_DAY",
    "LOAD",
    "SIZES",
    "SIZE_PROBS",
    "ScaleConfig",
    "ScaleSummary",
    "build_cluster",
    "draw_jobs",
    "generate_scale_fleet",
    "simulate_partition",
]

DAY = 86400
GPUS_PER_NODE = 8
NODES_PER_RACK = 16
RACKS_PER_PARTITION = 4
WARMUP_DAYS = 2
#: Job sizes (GPUs) and their probabilities.
SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
SIZE_PROBS = (0.72, 0.07, 0.07, 0.08, 0.025, 0.017, 0.011, 0.007)
#: Median run time (s) of a 1-GPU job; each doubling of the size multiplies it by 1.5.
MEDIAN_RUN_S = 900.0
RUN_SIGMA = 2.0
#: Time limits users pick from (s): the smallest that covers 1.2–3 × the run time.
LIMITS_S = (3600, 4 * 3600, 12 * 3600, DAY, 2 * DAY, 3 * DAY)
LOAD = 0.8
FAIL_PER_NODE_DAY = 4e-3
LEMON_FACTOR = 60.0
REPAIR_MEDIAN_S = 4 * 3600
STARVED_PARTITION = "p000"
STARVED_BF_WINDOW_S = 3600.0
IDLE_TEAM = "recsys"
DRIFT_TEAM = "speech"
DRIFT_RAW_SHARES = 3
_OUTCOMES = ("COMPLETED", "FAILED", "CANCELLED")
_OUTCOME_P = (0.70, 0.175, 0.125)
_PENDING_CANCEL_P = 0.03
_QOS = ("high", "normal", "low")
_QOS_P = (0.1, 0.8, 0.1)
_QOS_PRIO = {"high": 2, "normal": 1, "low": 0}
#: Relative submission rate per local hour (00–23), afternoon peak (Philly/Helios shape).
_DIURNAL = np.array(
    [
        0.45,
        0.35,
        0.3,
        0.3,
        0.3,
        0.35,
        0.5,
        0.7,
        1.0,
        1.3,
        1.5,
        1.6,
        1.5,
        1.6,
        1.7,
        1.7,
        1.6,
        1.4,
        1.2,
        1.0,
        0.9,
        0.8,
        0.7,
        0.55,
    ]
)
_WEEKEND = 0.6


@dataclass(frozen=True)
class ScaleConfig:
    """What to simulate.

    Attributes:
        gpus: GPUs in the cluster (rounded up to whole 8-GPU nodes).
        days: days in the window.
        seed: random seed (same seed → byte-identical text files and equal Parquet contents).
        start: first day of the window (UTC days; the cluster's zone is UTC). The default,
            a Monday, puts a whole year in the past: sacct ingest rejects times after now +
            1 day as implausible, so a window reaching into the future loses those rows.
        cluster: cluster name.
        dcgm_5min_days: last days of the window that also get 5-minute dcgm-exporter text.
    """

    gpus: int
    days: int
    seed: int = 7
    start: dt.date = dt.date(2025, 1, 6)
    cluster: str = "scale-a"
    dcgm_5min_days: int = 30

    @property
    def tz(self) -> str:
        """The cluster's IANA zone (UTC: naive sacct times are UTC)."""
        return "UTC"

    @property
    def window(self) -> tuple[int, int]:
        """``(start, end)`` epoch seconds of the window (UTC midnights)."""
        a = int(dt.datetime.combine(self.start, dt.time(), dt.UTC).timestamp())
        return a, a + self.days * DAY


@dataclass(frozen=True)
class ScaleSummary:
    """What :func:`generate_scale_fleet` wrote: counts and the planted findings."""

    out_dir: Path
    gpus: int
    nodes: int
    partitions: int
    days: int
    jobs: int
    attempts_in_window: int
    files_written: int
    planted: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        """One line for the CLI."""
        return (
            f"{self.days} days, {self.gpus} GPUs on {self.nodes} nodes in {self.partitions} "
            f"partitions: {self.jobs} jobs; {self.files_written} files"
        )


def build_cluster(cfg: ScaleConfig) -> ClusterSpec:
    """The cluster's nodes: ``n00001…`` (8 GPUs, h100), racks ``r0000…`` of 16 nodes,
    partitions ``p000…`` of 4 racks."""
    n = max(1, math.ceil(cfg.gpus / GPUS_PER_NODE))
    per_part = NODES_PER_RACK * RACKS_PER_PARTITION
    nodes = tuple(
        NodeSpec(
            f"n{i + 1:05d}",
            GPUS_PER_NODE,
            "h100",
            f"p{i // per_part:03d}",
            f"r{i // NODES_PER_RACK:04d}",
            192,
            i,
        )
        for i in range(n)
    )
    return ClusterSpec(cfg.cluster, "slurm", cfg.tz, nodes)


def _rng(cfg: ScaleConfig, *key: int) -> np.random.Generator:
    return np.random.default_rng([cfg.seed, *key])


def _run_medians(sizes: np.ndarray) -> np.ndarray:
    return np.asarray(MEDIAN_RUN_S * np.power(1.5, np.log2(sizes)))


def mean_gpu_seconds(max_gpus: int) -> float:
    """E[GPUs × min(run, limit)] of one job under the calibrated distributions (s), from a fixed
    sample of 400,000 draws (deterministic)."""
    rng = np.random.default_rng(12345)
    sizes, runs, limits = _draw_shapes(rng, 400_000, max_gpus)
    return float(np.mean(sizes * np.minimum(runs, limits)))


def _draw_shapes(
    rng: np.random.Generator, n: int, max_gpus: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    allowed = [i for i, s in enumerate(SIZES) if s <= max_gpus]
    p = np.array([SIZE_PROBS[i] for i in allowed])
    sizes = np.array([SIZES[i] for i in allowed])[rng.choice(len(allowed), n, p=p / p.sum())]
    runs = np.maximum(30.0, rng.lognormal(np.log(_run_medians(sizes)), RUN_SIGMA))
    want = runs * rng.uniform(1.2, 3.0, n)
    lim = np.array(LIMITS_S, dtype=np.float64)
    idx = np.minimum(np.searchsorted(lim, want), len(lim) - 1)
    return sizes, np.minimum(runs, 4 * DAY).round(), lim[idx]


def draw_jobs(cfg: ScaleConfig, part_index: int, part_gpus: int) -> pl.DataFrame:
    """Draw the jobs submitted to one partition over warm-up + window.

    Returns:
        One row per job, sorted by ``submit``: ``local, submit, gpus, runtime_s, limit_s, team,
        user, uid, qos, outcome, cancel_s`` (epoch seconds; ``cancel_s`` null unless the job is
        cancelled while pending; ``outcome`` the state it ends in if it runs to its end).
    """
    rng = _rng(cfg, 1, part_index)
    w0, w1 = cfg.window
    t0 = w0 - WARMUP_DAYS * DAY
    max_g = min(SIZES[-1], part_gpus // 4 if part_gpus >= 32 else part_gpus)
    rate = LOAD * part_gpus * DAY / mean_gpu_seconds(max_g)  # jobs per day
    if part_index == 0:
        rate *= 1.15  # the starved partition runs hotter
    days = (w1 - t0) // DAY
    # diurnal, weekly inhomogeneous Poisson: per (day, hour) Poisson counts
    day0 = dt.datetime.fromtimestamp(t0, dt.UTC).date()
    weights = np.concatenate(
        [
            _DIURNAL * (_WEEKEND if (day0 + dt.timedelta(days=d)).weekday() >= 5 else 1.0)
            for d in range(days)
        ]
    )
    weights = weights / weights.mean() * rate / 24.0
    counts = rng.poisson(weights)
    n = int(counts.sum())
    hour_start = t0 + 3600 * np.repeat(np.arange(days * 24), counts)
    submit = np.sort(hour_start + rng.integers(0, 3600, n))
    sizes, runs, limits = _draw_shapes(rng, n, max_g)
    team_w = np.array([t.slurm_weight for t in TEAMS])
    team_i = rng.choice(len(TEAMS), n, p=team_w / team_w.sum())
    user_pick = rng.random(n)
    users, uids = [], []
    uid_of: dict[str, int] = {}
    for t in TEAMS:
        for u in t.users:
            uid_of[u] = 1001 + len(uid_of)
    for ti, up in zip(team_i.tolist(), user_pick.tolist(), strict=True):
        us = TEAMS[ti].users
        u = us[int(up * len(us))]
        users.append(u)
        uids.append(uid_of[u])
    outcome = np.array(_OUTCOMES)[rng.choice(3, n, p=_OUTCOME_P)]
    # a failed or cancelled run stops early: a uniform fraction of its run time
    early = rng.uniform(0.02, 1.0, n)
    runs = np.where(outcome == "COMPLETED", runs, np.maximum(30.0, (runs * early).round()))
    pend_cancel = rng.random(n) < _PENDING_CANCEL_P
    cancel = np.where(pend_cancel, submit + rng.exponential(2 * 3600, n).round() + 60, -1)
    qos = np.array(_QOS)[rng.choice(3, n, p=_QOS_P)]
    frame = pl.DataFrame(
        {
            "local": np.arange(n, dtype=np.int64),
            "submit": submit.astype(np.int64),
            "gpus": sizes.astype(np.int64),
            "runtime_s": runs.astype(np.int64),
            "limit_s": limits.astype(np.int64),
            "team": np.array([t.name for t in TEAMS])[team_i],
            "user": users,
            "uid": np.array(uids, dtype=np.int64),
            "qos": qos,
            "outcome": outcome,
            "cancel_s": cancel.astype(np.int64),
        }
    )
    return frame.with_columns(
        pl.when(pl.col("cancel_s") >= 0).then(pl.col("cancel_s")).otherwise(None).alias("cancel_s")
    )


def simulate_partition(
    cfg: ScaleConfig, part_index: int, nodes: list[NodeSpec], n_parts: int
) -> tuple[pl.DataFrame, pl.DataFrame, list[NodeEvent]]:
    """Draw, schedule and fail one partition's jobs.

    Args:
        cfg: the run.
        part_index: partition number (``p{index:03d}``).
        nodes: its nodes.
        n_parts: partitions in the cluster (job ids interleave partitions: ``raw_id = 1000 +
            local × n_parts + part_index``, so ids rise with submit time across the cluster).

    Returns:
        ``(jobs, gpu_allocations, node_events)``: jobs (one attempt each) with ``raw_id,
        partition, submit, eligible, start, end, state, exit_code, gpus, nnodes, nodelist, …``
        (``start``/``end`` null when not started / not ended by the window end), GPU allocations
        ``raw_id, host, gpu, start, end, team, activity`` (``end`` capped at the window end), and
        the node DOWN intervals.
    """
    from metrics.scheduler_model import Node

    part = f"p{part_index:03d}"
    w0, w1 = cfg.window
    jobs = draw_jobs(cfg, part_index, sum(n.gpus for n in nodes))
    sim_nodes = [Node(n.host, part, n.gpus) for n in nodes]
    sim_jobs = [
        SimJob(
            str(r[0]),
            part,
            r[1],
            float(r[2]),
            float(r[3]),
            float(r[4]),
            _QOS_PRIO[r[5]],
            None if r[6] is None else float(r[6]),
        )
        for r in jobs.select(
            "local", "gpus", "submit", "runtime_s", "limit_s", "qos", "cancel_s"
        ).iter_rows()
    ]
    settings = SchedulerSettings(
        bf_window_s=STARVED_BF_WINDOW_S if part == STARVED_PARTITION else 1440 * 60.0
    )
    result = simulate(sim_nodes, sim_jobs, settings, horizon_s=float(w1))
    starts: list[int | None] = []
    ends: list[int | None] = []
    hosts: list[tuple[str, ...]] = []
    for j in sim_jobs:
        o = result.outcomes[j.job_id]
        starts.append(None if o.start_s is None else int(o.start_s))
        ends.append(None if o.end_s is None else int(o.end_s))
        hosts.append(o.hosts)
    # node failures (Poisson per node-day; the lemon node fails LEMON_FACTOR × as often)
    rng = _rng(cfg, 2, part_index)
    t0 = w0 - WARMUP_DAYS * DAY
    by_host: dict[str, list[int]] = {}
    for i, hs in enumerate(hosts):
        for h in hs:
            by_host.setdefault(h, []).append(i)
    failed: dict[int, int] = {}
    events: list[NodeEvent] = []
    for n in nodes:
        lemon = part_index == 0 and n.index == 0
        rate = FAIL_PER_NODE_DAY * (LEMON_FACTOR if lemon else 1.0)
        k = int(rng.poisson(rate * (w1 - t0) / DAY))
        times = np.sort(rng.integers(t0, w1, k)).tolist()
        repairs = rng.lognormal(math.log(REPAIR_MEDIAN_S), 0.8, k).round().tolist()
        gpu_of = rng.integers(0, n.gpus, k).tolist()
        idx = by_host.get(n.host, [])
        for t, rep, g in zip(times, repairs, gpu_of, strict=True):
            if events and events[-1].host == n.host and (events[-1].end or w1 + 1) > t:
                continue  # already down
            killed = False
            next_start = w1
            for i in idx:
                s, e = starts[i], ends[i]
                if s is None:
                    continue
                e_eff = failed.get(i, e if e is not None else w1 + 1)
                if s <= t < e_eff:
                    failed[i] = t
                    killed = True
                elif s > t:
                    next_start = min(next_start, s)
            end = min(t + int(rep), next_start)
            if end <= t or (not killed and end - t < 60):
                continue
            events.append(
                NodeEvent(
                    n.host,
                    t,
                    end if end < w1 else None,
                    "DOWN",
                    "Xid 79: GPU has fallen off the bus" if lemon else "Not responding",
                    "slurm(64030)",
                    xid=79 if lemon else 0,
                    xid_gpu=g if lemon else -1,
                    xid_time=t if lemon else 0,
                )
            )
    state: list[str] = []
    exit_code: list[str] = []
    end_out: list[int | None] = []
    outcomes = jobs["outcome"].to_list()
    runtimes = jobs["runtime_s"].to_list()
    limits = jobs["limit_s"].to_list()
    uids = jobs["uid"].to_list()
    cancels = jobs["cancel_s"].to_list()
    for i in range(len(sim_jobs)):
        s, e = starts[i], ends[i]
        if i in failed:
            e = failed[i]
            st, ec = "NODE_FAIL", "0:0"
        elif s is None:
            c = cancels[i]
            if c is not None and c < w1:
                st, ec, e = f"CANCELLED by {uids[i]}", "0:0", int(c)
            else:
                st, ec, e = "PENDING", "0:0", None
        elif runtimes[i] >= limits[i]:
            st, ec = "TIMEOUT", "0:0"
        elif outcomes[i] == "FAILED":
            st, ec = "FAILED", "1:0"
        elif outcomes[i] == "CANCELLED":
            st, ec = f"CANCELLED by {uids[i]}", "0:15"
        else:
            st, ec = "COMPLETED", "0:0"
        if s is not None and e is not None and e > w1:
            e = None  # still running at the window end
        state.append(st)
        exit_code.append(ec)
        end_out.append(e)
    from pipelines.sample_fleet._writers import compress_hostlist

    nodelist = [compress_hostlist(h) if len(h) > 1 else (h[0] if h else "") for h in hosts]
    out = (
        jobs.with_columns(
            (1000 + pl.col("local") * n_parts + part_index).alias("raw_id"),
            pl.lit(part).alias("partition"),
            pl.col("submit").alias("eligible"),
            pl.Series("start", starts, dtype=pl.Int64),
            pl.Series("end", end_out, dtype=pl.Int64),
            pl.Series("state", state, dtype=pl.String),
            pl.Series("exit_code", exit_code, dtype=pl.String),
            pl.Series(
                "nnodes",
                [
                    max(1, len(h)) if h else max(1, math.ceil(g / GPUS_PER_NODE))
                    for h, g in zip(hosts, jobs["gpus"].to_list(), strict=True)
                ],
                dtype=pl.Int64,
            ),
            pl.Series("nodelist", nodelist, dtype=pl.String),
        )
        .drop("outcome", "runtime_s")
        .sort("submit", "local")
    )
    allocs = _assign_gpus(out, hosts, w1)
    return out, allocs, events


def _assign_gpus(jobs: pl.DataFrame, hosts: list[tuple[str, ...]], horizon: int) -> pl.DataFrame:
    """GPU indices per node: a sweep by time giving each start the lowest free indices (ends
    before starts at equal times). ``hosts`` is indexed by the ``local`` column."""
    sweep: list[tuple[int, int, int, str, int]] = []  # (t, 0 end / 1 start, local, host, n)
    loc = jobs["local"].to_list()
    st = jobs["start"].to_list()
    en = jobs["end"].to_list()
    gp = jobs["gpus"].to_list()
    for i, s, e, g in zip(loc, st, en, gp, strict=True):
        if s is None:
            continue
        hs = hosts[i]
        per = g if len(hs) == 1 else GPUS_PER_NODE
        stop = horizon if e is None else e
        for h in hs:
            sweep.append((s, 1, i, h, per))
            sweep.append((stop, 0, i, h, per))
    sweep.sort()
    free: dict[str, list[int]] = {}
    held: dict[tuple[int, str], list[int]] = {}
    rows_id: list[int] = []
    rows_host: list[str] = []
    rows_gpu: list[int] = []
    rows_start: list[int] = []
    rows_end: list[int] = []
    start_of: dict[tuple[int, str], int] = {}
    for t, kind, i, h, per in sweep:
        if kind == 1:
            f = free.setdefault(h, list(range(GPUS_PER_NODE)))
            f.sort()
            take, free[h] = f[:per], f[per:]
            if len(take) < per:
                raise AssertionError(f"node {h} over capacity at {t}")
            held[(i, h)] = take
            start_of[(i, h)] = t
        else:
            take = held.pop((i, h))
            s = start_of.pop((i, h))
            free[h].extend(take)
            for g in take:
                rows_id.append(i)
                rows_host.append(h)
                rows_gpu.append(g)
                rows_start.append(s)
                rows_end.append(t)
    a = pl.DataFrame(
        {
            "local": rows_id,
            "host": rows_host,
            "gpu": rows_gpu,
            "start": rows_start,
            "end": rows_end,
        },
        schema={
            "local": pl.Int64,
            "host": pl.String,
            "gpu": pl.Int64,
            "start": pl.Int64,
            "end": pl.Int64,
        },
    )
    return a.join(jobs.select("local", "raw_id", "team"), on="local").sort("start", "host", "gpu")


def _activity(cfg: ScaleConfig, allocs: pl.DataFrame, part_index: int) -> pl.DataFrame:
    """Mean DCGM_FI_PROF_GR_ENGINE_ACTIVE per job: the idle team 0.01–0.03, others 0.25–0.9."""
    ids = allocs.select("raw_id", "team").unique("raw_id").sort("raw_id")
    rng = _rng(cfg, 3, part_index)
    u = rng.random(ids.height)
    act = np.where(ids["team"].to_numpy() == IDLE_TEAM, 0.01 + 0.02 * u, 0.25 + 0.65 * u)
    return ids.select("raw_id").with_columns(pl.Series("activity", act.round(4)))


def partitions_of(cluster: ClusterSpec) -> list[list[NodeSpec]]:
    """Nodes per partition, in partition order."""
    by: dict[str, list[NodeSpec]] = {}
    for n in cluster.nodes:
        by.setdefault(n.partition, []).append(n)
    return [by[k] for k in sorted(by)]


def generate_scale_fleet(
    out_dir: str | Path, cfg: ScaleConfig, *, progress: bool | None = None
) -> ScaleSummary:
    """Simulate ``cfg`` and write its inputs under ``out_dir`` (see the module docstring).

    Writes ``registry.yaml``, ``inventory/<cluster>.csv``,
    ``inputs/<cluster>/sacct/sacct_D.psv`` per day,
    ``inputs/<cluster>/slurm_state/{events,sshare}_<last day>.psv``,
    ``inputs/<cluster>/dcgm_hourly/date=D/dcgm_hourly_D.parquet`` per day,
    ``inputs/<cluster>/dcgm/dcgm_D.prom.gz`` for the last ``cfg.dcgm_5min_days`` days and
    ``planted.json``. Earlier generated files of these kinds are removed first.

    Args:
        out_dir: folder (created if needed).
        cfg: sizes, window and seed.
        progress: show a progress bar (default: when stderr is a terminal).

    Returns:
        Counts and planted findings.

    Raises:
        ValueError: ``gpus`` or ``days`` below 1.
    """
    from pipelines.sample_fleet import _scale_writers as sw

    if cfg.gpus < 1 or cfg.days < 1:
        raise ValueError("gpus and days must be at least 1")
    out = Path(out_dir)
    cluster = build_cluster(cfg)
    parts = partitions_of(cluster)
    work = out / ".scale_work"
    if work.exists():
        shutil.rmtree(work)
    (work / "jobs").mkdir(parents=True)
    (work / "allocs").mkdir(parents=True)
    events: list[NodeEvent] = []
    bar = progress_bar(len(parts) + cfg.days, f"simulate {cfg.gpus} GPUs", show=progress)
    n_jobs = 0
    for pi, nodes in enumerate(parts):
        jobs, allocs, evs = simulate_partition(cfg, pi, nodes, len(parts))
        allocs = allocs.join(_activity(cfg, allocs, pi), on="raw_id", how="left")
        jobs.drop("local").write_parquet(
            work / "jobs" / f"p{pi:03d}.parquet", row_group_size=50_000
        )
        allocs.drop("local").write_parquet(
            work / "allocs" / f"p{pi:03d}.parquet", row_group_size=100_000
        )
        events.extend(evs)
        n_jobs += jobs.height
        bar.update(1)
    events.sort(key=lambda e: (e.start, e.host))
    files, attempts, planted_acc = sw.write_days(out, cfg, cluster, work, events, bar)
    bar.close()
    files += sw.write_state(out, cfg, cluster, work, events)
    planted = sw.planted(cfg, cluster, work, events, planted_acc)
    sw.write_json(out / "planted.json", planted)
    files += 1
    shutil.rmtree(work)
    return ScaleSummary(
        out,
        cluster.gpus,
        len(cluster.nodes),
        len(parts),
        cfg.days,
        n_jobs,
        attempts,
        files,
        planted,
    )


def iter_days(cfg: ScaleConfig) -> Iterator[tuple[dt.date, int, int]]:
    """``(date, start, end)`` of each window day (UTC)."""
    w0, _ = cfg.window
    for i in range(cfg.days):
        yield cfg.start + dt.timedelta(days=i), w0 + i * DAY, w0 + (i + 1) * DAY
