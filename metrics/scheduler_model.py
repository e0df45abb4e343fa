"""A small discrete-event batch scheduler: priority FIFO + EASY backfill over nodes × GPUs.

It replays recorded jobs (eligible time, GPUs, runtime, time limit) under a set of scheduler
settings, so a proposed change (a longer ``bf_window``, a recurring reservation, tighter time
limits) can be compared with the current settings on the same workload. It is deliberately
small, deterministic and free of I/O; the sample-fleet generator can reuse it.

Policy, per partition (nodes belong to one partition; overlapping partitions are not modelled):

- **Main pass**: pending jobs in priority order (priority descending, then eligible time, then
  submission order) start while they fit; the first job that does not fit stops the pass
  (Slurm's main scheduler stops at the first blocked job of a partition).
- **EASY backfill** [Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995; Mu'alem & Feitelson,
  IEEE TPDS 12(6), 2001]: the first blocked job (the *head*) gets a reservation at its *shadow
  time*: the earliest time its GPUs are free if every running job ends at its time limit. Later
  jobs (at most ``bf_max_job_test`` of them) start now if they fit and either end, by their time
  limit, before the shadow time or stay off the reserved nodes. Because runs are cut at their
  limits, backfilled jobs never delay the head's reservation.
- **bf_window**: a head whose shadow time lies more than ``bf_window_s`` ahead gets no
  reservation (Slurm's backfill plans only that far [slurm.conf(5), SchedulerParameters
  ``bf_window``]); every later job may then start wherever it fits, which is how large jobs starve
  when time limits exceed the window.
- **bf_min_age_reserve**: a blocked job younger than ``bf_min_age_reserve_s`` gets no
  reservation; jobs behind it start wherever they fit, and the first blocked job old enough
  gets the reservation (a pass is run when a young blocked job comes of age).
- **bf_resolution**: time limits and running jobs' ends are rounded up to multiples of
  ``bf_resolution_s`` when backfill compares them (Slurm's backfill time slots).
- **Recurring reservation** (optional): ``nodes`` nodes of a partition, during each occurrence of
  a daily (``period_s``) window, run only jobs of at least ``min_gpus`` GPUs; any other job may
  use them only if its time limit ends before the next occurrence starts (Slurm never lets a job
  run into a reservation it is not part of).

Jobs of more GPUs than a node holds take whole nodes (⌈GPUs ÷ GPUs per node⌉); smaller jobs take
one node (best fit: the node with the fewest free GPUs that suffices). A run ends at
``min(runtime, time limit)`` (OverTimeLimit = 0). A job with a ``cancel_s`` still pending then
leaves the queue. Times are seconds on any common axis (epoch seconds in :func:`replay_frame`).
"""

from __future__ import annotations

import datetime as dt
import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl

__all__ = [
    "JobOutcome",
    "Node",
    "RecurringReservation",
    "ReplayResult",
    "ReservationRecord",
    "SchedulerSettings",
    "SimJob",
    "estimate_starts",
    "jobs_from_frame",
    "nodes_from_frame",
    "replay_frame",
    "simulate",
    "wait_summary",
]

_EV_END, _EV_BOUNDARY, _EV_CANCEL, _EV_ELIGIBLE = 0, 1, 2, 3


@dataclass(frozen=True)
class Node:
    """One node: its name, partition and GPU count."""

    host: str
    partition: str
    gpus: int


@dataclass(frozen=True)
class SimJob:
    """One job to schedule.

    Attributes:
        job_id: unique id (also the final tie-break).
        partition: the partition it waits in.
        gpus: GPUs requested (whole GPUs; > 0).
        eligible_s: when it may start.
        runtime_s: how long it runs once started (cut at ``limit_s``).
        limit_s: its time limit (what the scheduler plans with).
        priority: higher starts first.
        cancel_s: when it is cancelled if still pending (None: never).
    """

    job_id: str
    partition: str
    gpus: int
    eligible_s: float
    runtime_s: float
    limit_s: float
    priority: int = 0
    cancel_s: float | None = None


@dataclass(frozen=True)
class RecurringReservation:
    """Nodes set aside for large jobs in a recurring window (``scontrol create reservation``).

    Attributes:
        partition: the partition whose nodes are reserved.
        nodes: how many nodes (the first ``nodes`` host names of the partition, sorted).
        first_start_s: start of the first occurrence.
        duration_s: length of each occurrence.
        min_gpus: jobs of at least this many GPUs may use the reserved nodes at any time.
        period_s: time between occurrences (86400: ``Flags=DAILY``).
    """

    partition: str
    nodes: int
    first_start_s: float
    duration_s: float
    min_gpus: int
    period_s: float = 86400.0

    def overlaps(self, t0: float, t1: float) -> bool:
        """True when ``[t0, t1)`` overlaps an occurrence."""
        if t1 <= self.first_start_s:
            return False
        k = max(0, math.floor((t0 - self.first_start_s) / self.period_s))
        start = self.first_start_s + k * self.period_s
        if t0 < start + self.duration_s:
            return t1 > start
        return t1 > start + self.period_s

    def boundaries(self, t0: float, t1: float) -> list[float]:
        """Occurrence ends in ``[t0, t1]`` (when reserved nodes open up to every job)."""
        out: list[float] = []
        k = max(0, math.floor((t0 - self.first_start_s) / self.period_s))
        while True:
            end = self.first_start_s + k * self.period_s + self.duration_s
            if end > t1:
                return out
            if end >= t0:
                out.append(end)
            k += 1


@dataclass(frozen=True)
class SchedulerSettings:
    """The knobs the model honours (Slurm names; defaults are Slurm's).

    Attributes:
        backfill: run the backfill pass (``SchedulerType=sched/backfill``).
        bf_window_s: how far ahead backfill plans (Slurm default 1440 min).
        bf_resolution_s: backfill time-slot size (Slurm default 60 s).
        bf_max_job_test: jobs backfill tests per pass after the head (Slurm default 500).
        bf_continue: kept for the proposal text; the model tests the whole queue in one pass, so
            it has no effect here.
        reservations: recurring large-job reservations.
        bf_min_age_reserve_s: no reservation for a blocked job until it has been eligible this
            long (Slurm default 0); the first blocked job old enough gets it, and the jobs
            behind a younger one start wherever they fit [slurm.conf(5), SchedulerParameters
            ``bf_min_age_reserve``].
    """

    backfill: bool = True
    bf_window_s: float = 1440 * 60.0
    bf_resolution_s: float = 60.0
    bf_max_job_test: int = 500
    bf_continue: bool = False
    reservations: tuple[RecurringReservation, ...] = ()
    bf_min_age_reserve_s: float = 0.0


@dataclass(frozen=True)
class JobOutcome:
    """What happened to one job in a replay.

    Attributes:
        job_id: the job.
        start_s: start time, None if it never started before the horizon (or was cancelled).
        end_s: end time (None if never started).
        wait_s: start − eligible; for a job not started, horizon (or cancel time) − eligible.
        started: whether it started.
        backfilled: started by the backfill pass (ahead of a blocked head).
        hosts: the nodes it ran on.
    """

    job_id: str
    start_s: float | None
    end_s: float | None
    wait_s: float
    started: bool
    backfilled: bool
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class ReservationRecord:
    """A backfill reservation made for a blocked head job at ``at_s`` for ``shadow_s``."""

    at_s: float
    job_id: str
    shadow_s: float
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class ReplayResult:
    """The outcome of :func:`simulate`.

    Attributes:
        outcomes: per job id.
        reservations: every reservation made (one per pass with a reservable head).
        held_gpu_s: Σ min(free GPUs, pending GPUs) × time, per partition (METRICS.md ``held``).
        horizon_s: the end of the replay.
    """

    outcomes: dict[str, JobOutcome]
    reservations: list[ReservationRecord]
    held_gpu_s: float
    horizon_s: float


# ----------------------------------------------------------------------------------- internals


@dataclass
class _NodeState:
    spec: Node
    free: int
    running: dict[str, tuple[float, int]] = field(default_factory=dict)  # id → (limit end, gpus)


@dataclass
class _Running:
    job: SimJob
    start: float
    end: float
    hosts: tuple[str, ...]
    per_node: int
    backfilled: bool


def _ceil_to(t: float, step: float) -> float:
    return math.ceil(t / step) * step if step > 0 else t


class _Partition:
    def __init__(self, name: str, nodes: Sequence[Node], settings: SchedulerSettings) -> None:
        self.name = name
        self.nodes = [_NodeState(n, n.gpus) for n in sorted(nodes, key=lambda n: n.host)]
        self.by_host = {n.spec.host: n for n in self.nodes}
        self.gpn = max((n.gpus for n in nodes), default=0)
        self.queue: list[tuple[tuple[int, float, int], SimJob]] = []
        self.settings = settings
        self.reservations = [r for r in settings.reservations if r.partition == name]
        self.reserved_hosts: dict[int, set[str]] = {
            i: {n.spec.host for n in self.nodes[: r.nodes]} for i, r in enumerate(self.reservations)
        }

    def nodes_needed(self, job: SimJob) -> int:
        return 1 if job.gpus <= self.gpn else math.ceil(job.gpus / self.gpn)

    def allowed(self, job: SimJob, node: _NodeState, now: float) -> bool:
        """Recurring reservations: may ``job`` run on ``node`` from ``now`` to its limit?"""
        for i, res in enumerate(self.reservations):
            if (
                node.spec.host in self.reserved_hosts[i]
                and job.gpus < res.min_gpus
                and res.overlaps(now, now + job.limit_s)
            ):
                return False
        return True

    def fit(
        self, job: SimJob, now: float, exclude: frozenset[str] = frozenset()
    ) -> tuple[list[_NodeState], int] | None:
        k = self.nodes_needed(job)
        if k == 1:
            best: _NodeState | None = None
            for n in self.nodes:
                if (
                    n.free >= job.gpus
                    and n.spec.host not in exclude
                    and (best is None or n.free < best.free)
                    and self.allowed(job, n, now)
                ):
                    best = n
            return None if best is None else ([best], job.gpus)
        chosen = [
            n
            for n in self.nodes
            if n.free == n.spec.gpus and n.spec.host not in exclude and self.allowed(job, n, now)
        ][:k]
        return (chosen, self.gpn) if len(chosen) == k else None

    def shadow(self, job: SimJob, now: float) -> tuple[float, frozenset[str]] | None:
        """EASY reservation of a blocked head: (shadow time, reserved hosts), or None."""
        res = self.settings.bf_resolution_s
        usable = [n for n in self.nodes if self._may_reserve(job, n)]

        def ends(n: _NodeState) -> list[tuple[float, int]]:
            return sorted((max(_ceil_to(e, res), now), g) for e, g in n.running.values())

        if self.nodes_needed(job) == 1:
            best: tuple[float, str] | None = None
            for n in usable:
                if n.spec.gpus < job.gpus:
                    continue
                free, when = n.free, now
                for e, g in ends(n):
                    if free >= job.gpus:
                        break
                    free += g
                    when = e
                if free >= job.gpus and (best is None or when < best[0]):
                    best = (when, n.spec.host)
            return None if best is None else (best[0], frozenset({best[1]}))
        times = sorted(
            (max((e for e, _ in ends(n)), default=now), n.spec.host)
            for n in usable
            if n.spec.gpus == self.gpn
        )
        k = self.nodes_needed(job)
        if len(times) < k:
            return None
        chosen = times[:k]
        return chosen[-1][0], frozenset(h for _, h in chosen)

    def _may_reserve(self, job: SimJob, node: _NodeState) -> bool:
        # A job below a reservation's size never plans onto its nodes (conservative).
        return all(
            node.spec.host not in self.reserved_hosts[i] or job.gpus >= r.min_gpus
            for i, r in enumerate(self.reservations)
        )


class _Sim:
    def __init__(
        self, nodes: Sequence[Node], jobs: Sequence[SimJob], settings: SchedulerSettings
    ) -> None:
        by_part: dict[str, list[Node]] = {}
        for n in nodes:
            by_part.setdefault(n.partition, []).append(n)
        self.parts = {p: _Partition(p, ns, settings) for p, ns in sorted(by_part.items())}
        self.settings = settings
        self.jobs = list(jobs)
        self.heap: list[tuple[float, int, int, str]] = []
        self.seq = 0
        self.order: dict[str, int] = {}
        self.running: dict[str, _Running] = {}
        self.pending: dict[str, SimJob] = {}
        self.outcomes: dict[str, JobOutcome] = {}
        self.reservations: list[ReservationRecord] = []
        self.held = 0.0
        self.woken: set[str] = set()

    def push(self, t: float, kind: int, job_id: str) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, job_id))

    def run(self, horizon: float) -> ReplayResult:
        by_id: dict[str, SimJob] = {}
        for i, job in enumerate(self.jobs):
            if job.job_id in by_id:
                raise ValueError(f"duplicate job id {job.job_id!r}")
            if job.partition not in self.parts:
                raise ValueError(f"job {job.job_id!r}: no nodes in partition {job.partition!r}")
            by_id[job.job_id] = job
            self.order[job.job_id] = i
            self.push(job.eligible_s, _EV_ELIGIBLE, job.job_id)
            if job.cancel_s is not None:
                self.push(job.cancel_s, _EV_CANCEL, job.job_id)
        t0 = min((j.eligible_s for j in self.jobs), default=horizon)
        for part in self.parts.values():
            for res in part.reservations:
                for b in res.boundaries(t0, horizon):
                    self.push(b, _EV_BOUNDARY, part.name)
        last = t0
        while self.heap and self.heap[0][0] <= horizon:
            now = self.heap[0][0]
            self._account_held(last, now)
            last = now
            dirty: set[str] = set()
            while self.heap and self.heap[0][0] == now:
                _, kind, _, key = heapq.heappop(self.heap)
                self._handle(now, kind, key, by_id, dirty)
            for p in sorted(dirty):
                self._schedule(self.parts[p], now)
        self._account_held(last, horizon)
        for job_id, job in self.pending.items():
            self.outcomes[job_id] = JobOutcome(
                job_id, None, None, max(0.0, horizon - job.eligible_s), False, False, ()
            )
        for job in self.jobs:
            if job.job_id not in self.outcomes and job.job_id not in self.running:
                # never became eligible before the horizon
                self.outcomes[job.job_id] = JobOutcome(
                    job.job_id, None, None, 0.0, False, False, ()
                )
        for r in self.running.values():
            self.outcomes[r.job.job_id] = self._outcome(r)
        return ReplayResult(
            outcomes={j.job_id: self.outcomes[j.job_id] for j in self.jobs},
            reservations=self.reservations,
            held_gpu_s=self.held,
            horizon_s=horizon,
        )

    @staticmethod
    def _outcome(r: _Running) -> JobOutcome:
        return JobOutcome(
            r.job.job_id,
            r.start,
            r.end,
            r.start - r.job.eligible_s,
            True,
            r.backfilled,
            r.hosts,
        )

    def _handle(
        self, now: float, kind: int, key: str, by_id: dict[str, SimJob], dirty: set[str]
    ) -> None:
        if kind == _EV_BOUNDARY:
            dirty.add(key)
            return
        job = by_id[key]
        part = self.parts[job.partition]
        if kind == _EV_END:
            r = self.running.pop(key)
            for h in r.hosts:
                node = part.by_host[h]
                node.free += r.per_node
                node.running.pop(key, None)
            self.outcomes[key] = self._outcome(r)
            dirty.add(part.name)
        elif kind == _EV_ELIGIBLE:
            self.pending[key] = job
            part.queue.append(((-job.priority, job.eligible_s, self.order[key]), job))
            part.queue.sort(key=lambda e: e[0])
            dirty.add(part.name)
        elif kind == _EV_CANCEL and key in self.pending:
            del self.pending[key]
            part.queue = [e for e in part.queue if e[1].job_id != key]
            self.outcomes[key] = JobOutcome(
                key, None, None, max(0.0, now - job.eligible_s), False, False, ()
            )

    def _start(
        self, part: _Partition, job: SimJob, fit: tuple[list[_NodeState], int], now: float, bf: bool
    ) -> None:
        nodes, per_node = fit
        end = now + max(0.0, min(job.runtime_s, job.limit_s))
        for n in nodes:
            n.free -= per_node
            n.running[job.job_id] = (now + job.limit_s, per_node)
        hosts = tuple(n.spec.host for n in nodes)
        self.running[job.job_id] = _Running(job, now, end, hosts, per_node, bf)
        del self.pending[job.job_id]
        self.push(end, _EV_END, job.job_id)

    def _schedule(self, part: _Partition, now: float) -> None:
        started: set[str] = set()
        head: SimJob | None = None
        for _, job in part.queue:
            fit = part.fit(job, now)
            if fit is None:
                head = job
                break
            self._start(part, job, fit, now, False)
            started.add(job.job_id)
        if head is not None and self.settings.backfill:
            started |= self._backfill(part, head, now)
        if started:
            part.queue = [e for e in part.queue if e[1].job_id not in started]

    def _backfill(self, part: _Partition, head: SimJob, now: float) -> set[str]:
        s = self.settings
        started: set[str] = set()
        queue = [job for _, job in part.queue]
        k = queue.index(head)
        tested = 0
        free_total = sum(n.free for n in part.nodes)
        # bf_min_age_reserve: blocked jobs younger than it get no reservation; the jobs behind
        # them start wherever they fit until the first blocked job old enough (0: the head).
        resv: SimJob | None = None
        while k < len(queue):
            job = queue[k]
            k += 1
            if job is not head:
                tested += 1
                if tested > s.bf_max_job_test:
                    return started
                fit = part.fit(job, now) if 0 < job.gpus <= free_total else None
                if fit is not None:
                    self._start(part, job, fit, now, True)
                    started.add(job.job_id)
                    free_total -= fit[1] * len(fit[0])
                    continue
            age = s.bf_min_age_reserve_s
            if now - job.eligible_s >= age:
                resv = job
                break
            if job.job_id not in self.woken:  # a pass when it comes of age
                self.woken.add(job.job_id)
                self.push(job.eligible_s + age, _EV_BOUNDARY, part.name)
        if resv is None:
            return started
        plan = part.shadow(resv, now)
        if plan is not None and plan[0] - now > s.bf_window_s:
            plan = None  # beyond the backfill window: the job gets no reservation
        if plan is not None:
            self.reservations.append(
                ReservationRecord(now, resv.job_id, plan[0], tuple(sorted(plan[1])))
            )
        for job in queue[k:]:
            if free_total <= 0:
                continue
            tested += 1
            if tested > s.bf_max_job_test:
                break
            if job.gpus > free_total:
                continue
            if plan is None:
                fit = part.fit(job, now)
            else:
                shadow, reserved = plan
                fit = part.fit(job, now, reserved)
                if fit is None and _ceil_to(now + job.limit_s, s.bf_resolution_s) <= shadow:
                    fit = part.fit(job, now)
            if fit is not None:
                self._start(part, job, fit, now, True)
                started.add(job.job_id)
                free_total -= fit[1] * len(fit[0])
        return started

    def _account_held(self, t0: float, t1: float) -> None:
        if t1 <= t0:
            return
        for part in self.parts.values():
            if not part.queue:
                continue
            free = sum(n.free for n in part.nodes)
            want = sum(j.gpus for _, j in part.queue)
            self.held += min(free, want) * (t1 - t0)


def simulate(
    nodes: Sequence[Node],
    jobs: Sequence[SimJob],
    settings: SchedulerSettings | None = None,
    *,
    horizon_s: float | None = None,
) -> ReplayResult:
    """Replay ``jobs`` on ``nodes`` under ``settings``.

    Args:
        nodes: the nodes (host, partition, GPUs).
        jobs: the jobs; ids must be unique and every partition must have nodes.
        settings: scheduler settings (default: Slurm's defaults).
        horizon_s: stop here (default: when the last event has happened). Jobs still pending
            then are censored: their wait runs to the horizon.

    Returns:
        Per-job outcomes, the reservations made, and held GPU-seconds.

    Raises:
        ValueError: a duplicate job id, or a job in a partition without nodes.
    """
    settings = settings or SchedulerSettings()
    sim = _Sim(nodes, jobs, settings)
    if horizon_s is None:
        horizon_s = (
            max((j.eligible_s for j in jobs), default=0.0)
            + 2 * sum(max(0.0, min(j.runtime_s, j.limit_s)) for j in jobs)
            + 1.0
        )
    return sim.run(horizon_s)


# --------------------------------------------------------------------- polars adapters


def _epoch(col: str) -> pl.Expr:
    return pl.col(col).dt.epoch("us").cast(pl.Float64) / 1e6


def nodes_from_frame(nodes: pl.DataFrame) -> list[Node]:
    """``cluster``-filtered ``nodes`` rows (``host, partition, gpus``) → :class:`Node` list.

    Nodes without a partition or with no GPUs are left out.
    """
    rows = nodes.filter(pl.col("partition").is_not_null() & (pl.col("gpus") > 0)).select(
        "host", "partition", "gpus"
    )
    return [
        Node(str(r["host"]), str(r["partition"]), int(r["gpus"]))
        for r in rows.unique("host", keep="first").sort("host").iter_rows(named=True)
    ]


def jobs_from_frame(
    frame: pl.DataFrame,
    as_of: dt.datetime,
    *,
    priority_by_qos: dict[str, int] | None = None,
    default_limit_s: float = 86400.0,
) -> list[SimJob]:
    """Recorded attempts and never-started jobs → :class:`SimJob` list.

    Args:
        frame: ``job_id, partition, gpus`` (allocated; ``req_gpus`` used when NULL or 0),
            ``eligible_at, start_at, end_at, timelimit_s`` and optional ``attempt, qos,
            cancel_at``. A started attempt runs ``end − start`` (``as_of − start`` while still
            running); a never-started job runs its time limit. Rows without eligible time or
            GPUs are left out.
        as_of: the data cut-off.
        priority_by_qos: QOS name → priority (default ``high`` 2, ``normal`` 1, ``low`` 0,
            anything else 1).
        default_limit_s: time limit where none is recorded (``UNLIMITED``).

    Returns:
        One job per row, id ``job_id`` or ``job_id#attempt`` for attempts after the first.
    """
    prio = priority_by_qos or {"high": 2, "normal": 1, "low": 0}
    cut = as_of.timestamp()
    names = frame.columns
    f = frame.with_columns(
        pl.when(pl.col("gpus").fill_null(0) > 0)
        .then(pl.col("gpus"))
        .otherwise(pl.col("req_gpus") if "req_gpus" in names else pl.lit(None))
        .alias("_gpus"),
        _epoch("eligible_at").alias("_el"),
        _epoch("start_at").alias("_st"),
        _epoch("end_at").alias("_en"),
        (_epoch("cancel_at") if "cancel_at" in names else pl.lit(None, pl.Float64)).alias("_cx"),
        (pl.col("attempt") if "attempt" in names else pl.lit(0)).alias("_att"),
        (pl.col("qos") if "qos" in names else pl.lit(None, pl.String)).alias("_qos"),
    ).filter(pl.col("_el").is_not_null() & (pl.col("_gpus").fill_null(0) > 0))
    out: list[SimJob] = []
    for r in f.sort("_el", "job_id", "_att").iter_rows(named=True):
        limit = float(r["timelimit_s"]) if r["timelimit_s"] else default_limit_s
        if r["_st"] is not None:
            end = r["_en"] if r["_en"] is not None else cut
            runtime = max(0.0, min(end, cut) - r["_st"])
            cancel = None
        else:
            runtime = limit
            cancel = r["_cx"]
        job_id = str(r["job_id"]) if not r["_att"] else f"{r['job_id']}#{r['_att']}"
        out.append(
            SimJob(
                job_id=job_id,
                partition=str(r["partition"]),
                gpus=math.ceil(float(r["_gpus"])),
                eligible_s=float(r["_el"]),
                runtime_s=runtime,
                limit_s=max(limit, 1.0),
                priority=prio.get(str(r["_qos"]), 1),
                cancel_s=cancel,
            )
        )
    return out


def replay_frame(result: ReplayResult, jobs: Iterable[SimJob]) -> pl.DataFrame:
    """A replay's outcomes as a frame: ``job_id, partition, gpus, eligible_s, start_s, wait_s,
    started, backfilled``."""
    rows = [
        {
            "job_id": j.job_id,
            "partition": j.partition,
            "gpus": j.gpus,
            "eligible_s": j.eligible_s,
            "start_s": result.outcomes[j.job_id].start_s,
            "wait_s": result.outcomes[j.job_id].wait_s,
            "started": result.outcomes[j.job_id].started,
            "backfilled": result.outcomes[j.job_id].backfilled,
        }
        for j in jobs
    ]
    schema = {
        "job_id": pl.String(),
        "partition": pl.String(),
        "gpus": pl.Int64(),
        "eligible_s": pl.Float64(),
        "start_s": pl.Float64(),
        "wait_s": pl.Float64(),
        "started": pl.Boolean(),
        "backfilled": pl.Boolean(),
    }
    return pl.DataFrame(rows, schema=schema)


def wait_summary(
    result: ReplayResult, jobs: Iterable[SimJob], *, min_gpus: int = 0
) -> dict[str, float]:
    """Mean and nearest-rank p50/p90 wait (s) of the jobs of at least ``min_gpus`` GPUs.

    Waits of jobs not started are censored at the horizon (lower bounds), the same way under
    every setting, so two replays compare like with like. Returns ``jobs, mean_wait_s,
    p50_wait_s, p90_wait_s`` (0 when there are no such jobs).
    """
    waits = sorted(result.outcomes[j.job_id].wait_s for j in jobs if j.gpus >= min_gpus)
    if not waits:
        return {"jobs": 0.0, "mean_wait_s": 0.0, "p50_wait_s": 0.0, "p90_wait_s": 0.0}

    def rank(q: float) -> float:
        return waits[max(0, math.ceil(q * len(waits)) - 1)]

    return {
        "jobs": float(len(waits)),
        "mean_wait_s": sum(waits) / len(waits),
        "p50_wait_s": rank(0.5),
        "p90_wait_s": rank(0.9),
    }


#: Priority of the jobs running at the cut-off in :func:`estimate_starts`: above any QOS, so
#: the first pass puts each back on the nodes before a pending job is looked at.
_RUNNING_PRIORITY = 1_000_000


def estimate_starts(
    nodes: Sequence[Node],
    running: pl.DataFrame,
    pending: pl.DataFrame,
    as_of: dt.datetime,
    settings: SchedulerSettings | None = None,
    *,
    horizon_s: float = 7 * 86400.0,
    priority_by_qos: dict[str, int] | None = None,
    default_limit_s: float = 86400.0,
) -> pl.DataFrame:
    """Estimated start of each job pending at the cut-off: the model replayed forward from it.

    The state at ``as_of`` is rebuilt: each running job is put back on the nodes of its
    partition (ahead of every pending job) for what is left of its time limit, ``start + limit
    − as_of`` (0 when past it); each pending job becomes eligible at ``max(eligible, as_of)``
    and, as Slurm's own ``squeue --start`` assumes, runs its whole time limit. The replay
    (:func:`simulate`: priority by QOS, then eligible time; EASY backfill) then gives each
    pending job its start, or none within ``horizon_s`` after the cut-off.

    Limits (docs/scheduler-model.md): the model places jobs by best fit, not on the nodes
    they hold; it knows no reservations, dependencies, job-array throttles or Slurm's
    multifactor priority, and jobs submitted after the cut-off are unknown, so a start is an
    estimate under the recorded time limits, not a promise.

    Args:
        nodes: the cluster's nodes (:func:`nodes_from_frame`).
        running: ``job_id, partition, gpus, start_at, timelimit_s`` of the allocations running
            at ``as_of``; rows without a partition of ``nodes`` or GPUs are left out.
        pending: ``job_id, partition, gpus, eligible_at, timelimit_s`` and optional ``qos``
            (priority: ``priority_by_qos``, default ``high`` 2, ``normal`` 1, ``low`` 0).
        as_of: the data cut-off (aware or naive UTC).
        settings: scheduler settings (default: Slurm's defaults).
        horizon_s: how far after ``as_of`` to replay (seconds).
        priority_by_qos: QOS name → priority.
        default_limit_s: time limit where none is recorded (``UNLIMITED``).

    Returns:
        One row per ``pending`` row: ``job_id``, ``estimated_start`` (Datetime UTC; null when
        not started within the horizon or not modelled: no eligible time, no GPUs or a
        partition without nodes), ``backfilled`` (Boolean, null when not started) and
        ``modelled`` (Boolean: whether the job was in the replay).
    """
    cut = as_of.replace(tzinfo=dt.UTC) if as_of.tzinfo is None else as_of
    t0 = cut.timestamp()
    prio = priority_by_qos or {"high": 2, "normal": 1, "low": 0}
    parts = {n.partition for n in nodes}

    def limit_of(value: object) -> float:
        return float(value) if value else default_limit_s  # type: ignore[arg-type]

    def stamp(value: dt.datetime) -> float:
        return (value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value).timestamp()

    jobs: list[SimJob] = []
    for r in running.iter_rows(named=True):
        if r["partition"] not in parts or not r["gpus"] or r["start_at"] is None:
            continue
        left = max(0.0, stamp(r["start_at"]) + limit_of(r["timelimit_s"]) - t0)
        jobs.append(SimJob(f"running:{r['job_id']}", str(r["partition"]),
                           math.ceil(float(r["gpus"])), t0, left, max(left, 1.0),
                           priority=_RUNNING_PRIORITY))  # fmt: skip
    ids: list[str | None] = []
    queued: list[tuple[float, int, SimJob]] = []
    for i, r in enumerate(pending.iter_rows(named=True)):
        if r["partition"] not in parts or not r["gpus"] or r["eligible_at"] is None:
            ids.append(None)
            continue
        limit = limit_of(r["timelimit_s"])
        job_id = f"pending:{r['job_id']}"
        ids.append(job_id)
        eligible = stamp(r["eligible_at"])
        job = SimJob(job_id, str(r["partition"]), math.ceil(float(r["gpus"])),
                     max(t0, eligible), limit, max(limit, 1.0),
                     priority=prio.get(str(r.get("qos")), 1))  # fmt: skip
        queued.append((eligible, i, job))
    # Everything already waiting becomes eligible at the cut-off: the queue keeps the order of
    # the real eligible times (the model's tie-break after priority is the input order).
    jobs += [job for _e, _i, job in sorted(queued, key=lambda q: (q[0], q[1]))]
    outcomes = simulate(nodes, jobs, settings, horizon_s=t0 + horizon_s).outcomes if jobs else {}
    starts: list[dt.datetime | None] = []
    backfilled: list[bool | None] = []
    for key in ids:
        o = outcomes.get(key) if key else None
        if o is not None and o.started and o.start_s is not None:
            starts.append(dt.datetime.fromtimestamp(o.start_s, dt.UTC))
            backfilled.append(o.backfilled)
        else:
            starts.append(None)
            backfilled.append(None)
    return pl.DataFrame(
        {
            "job_id": pending["job_id"].cast(pl.String) if pending.height else [],
            "estimated_start": starts,
            "backfilled": backfilled,
            "modelled": [i is not None for i in ids],
        },
        schema={
            "job_id": pl.String(),
            "estimated_start": pl.Datetime("us", "UTC"),
            "backfilled": pl.Boolean(),
            "modelled": pl.Boolean(),
        },
    )
