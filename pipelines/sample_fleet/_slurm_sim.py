"""Slurm side of the sample fleet: draw a job mix and schedule it.

The scheduler is a small but real policy: per partition, jobs are taken in priority order (QOS
priority, then eligible time, then job id); the first job that does not fit gets a reservation at
its *shadow time* (computed from the time limits of running jobs, as Slurm's backfill does), and
later jobs may start only if they fit now and either end (by their time limit) before the shadow
time or stay off the reserved nodes (EASY backfill). Jobs of more than 8 GPUs take whole nodes.
Every GPU is tracked by index, so no GPU is ever held by two jobs at once.

Node failures are events: the lemon node ``a100-013`` raises XID 79 under load a few times; Slurm
notices five minutes later, the jobs on it end ``NODE_FAIL`` and are requeued, and the node stays
``DOWN`` then ``DRAIN`` for a few hours.

One recurring reservation is planted idle: ``safety-eval`` holds ``h100-008`` daily 02:00-06:00
(local) for the safety team, whose jobs never ask for it; no other job may run into an occurrence
(a job starts there only if its time limit ends before the next one begins).
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from pipelines.sample_fleet._model import (
    LEMON_HOST,
    TEAMS,
    ClusterSpec,
    GpuAllocation,
    NodeEvent,
    NodeSpec,
    TeamSpec,
)

__all__ = [
    "IDLE_RESERVATION",
    "SlurmAttempt",
    "SlurmJob",
    "SlurmReservation",
    "SlurmResult",
    "simulate_slurm",
]

HOUR = 3600
DAY = 86400
#: Standard time limits users pick (seconds).
_LIMITS = (1800, 3600, 7200, 14400, 28800, 43200, 86400, 129600, 172800)
_PARTITION_MAX = 172800
#: Partition settings: CPUs and memory (MB) per GPU.
_CPUS_PER_GPU = {"gpu": 8, "h100": 12}
_MEM_PER_GPU = {"gpu": 125000, "h100": 240000}
_QOS_PRIORITY = {"high": 2, "normal": 1, "low": 0}
_REQUEUE_STATES = frozenset({"REQUEUED", "PREEMPTED", "NODE_FAIL"})
_BF_MAX_JOB_TEST = 120
_TEAM = {t.name: t for t in TEAMS}
_LEMON_XID_GPU = 5

_NAMES: dict[str, tuple[str, ...]] = {
    "vision": ("train-vit-l", "train-detr", "eval-imagenet", "seg-finetune", "jupyter"),
    "nlp": ("pretrain-7b", "sft-13b", "eval-mmlu", "tokenize-shards", "rlhf-ppo", "dpo-sweep"),
    "speech": ("asr-conformer", "tts-train", "eval-wer", "align-ctc"),
    "rl": ("ppo-atari", "impala-run", "eval-policy"),
    "robotics": ("sim2real", "bc-train", "diffusion-policy"),
    "infra": ("nccl-test", "burnin", "perf-regress", "dcgm-diag"),
    "safety": ("redteam-eval", "probe-train", "interp-sweep"),
    "multimodal": ("clip-train", "vlm-sft", "caption-eval", "video-pretrain"),
    "recsys": ("emb-notebook", "dlrm-serve-test", "feature-explore", "jupyter"),
    "genomics": ("alphafold-batch", "variant-call", "esm-embed"),
    "climate": ("era5-downscale", "graphcast-ft", "ens-forecast"),
    "agents": ("agent-rollouts", "toolformer-sft", "swe-eval", "planner-train"),
}


@dataclass
class SlurmAttempt:
    """One allocation of a job (``sacct -D`` prints one row per attempt).

    Attributes:
        job: the job.
        index: 0 for the first attempt, 1, 2 … after requeues.
        submit: Submit time of this attempt (the requeue time for index > 0).
        eligible: Eligible time, or None if the job never became eligible.
        start: Start time, or None if it never started.
        end: End time, or None while open; may lie after the window end (then the attempt is
            still running at the window end).
        state: final state (``COMPLETED``, ``FAILED``, ``CANCELLED by 1003``, ``NODE_FAIL`` …),
            or ``PENDING`` if it never started nor ended.
        exit_code: ``rc:signal`` of the allocation.
        hosts: hosts allocated, in order.
        gpu_idx: GPU indices used on each host (parallel to ``hosts``).
        cpus: CPUs allocated per host (parallel to ``hosts``).
        done: set once the attempt has ended (simulation bookkeeping).
    """

    job: SlurmJob
    index: int
    submit: int
    eligible: int | None
    start: int | None = None
    end: int | None = None
    state: str = "PENDING"
    exit_code: str = "0:0"
    hosts: tuple[str, ...] = ()
    gpu_idx: tuple[tuple[int, ...], ...] = ()
    cpus: tuple[int, ...] = ()
    done: bool = False


@dataclass
class SlurmJob:
    """One Slurm job (or one array task) and the plan that drives its outcome.

    Attributes:
        job_id: the printed JobID (``1234`` or ``1230_4``).
        raw_id: JobIDRaw.
        array_id: array master id, for array tasks.
        array_task: task index, for array tasks.
        array_throttle: the array's ``%N`` throttle (0 if none).
        name: JobName.
        team: owning team (= Slurm account).
        user: user name.
        uid: numeric uid.
        qos: QOS name.
        partition: partition.
        gpus: GPUs requested (0 for CPU-only jobs).
        nodes: nodes requested.
        cpus: CPUs requested.
        mem_mb: memory requested (MB).
        time_limit: Timelimit (s).
        submit: first submit time.
        begin: time the job first becomes eligible (``--begin``), or None if a dependency is
            never satisfied.
        runtime: planned run time of a full attempt (s).
        outcome: planned final state of a full attempt.
        exit_rc: planned exit code for FAILED.
        cancel_at: time of ``scancel``, if any.
        cancel_uid: uid that cancels.
        interrupt: ``REQUEUED``/``PREEMPTED`` if the first attempt is cut short, else "".
        interrupt_frac: fraction of ``runtime`` the interrupted attempt runs.
        activity: mean GPU activity while running.
        kind: activity kind (``busy``, ``idle``, ``low``).
        fb_mib: framebuffer in use per GPU (MiB).
        attempts: the attempts so far.
    """

    job_id: str
    raw_id: int
    array_id: int | None
    array_task: int | None
    array_throttle: int
    name: str
    team: str
    user: str
    uid: int
    qos: str
    partition: str
    gpus: int
    nodes: int
    cpus: int
    mem_mb: int
    time_limit: int
    submit: int
    begin: int | None
    runtime: int
    outcome: str
    exit_rc: int
    cancel_at: int | None
    cancel_uid: int
    interrupt: str
    interrupt_frac: float
    activity: float
    kind: str
    fb_mib: int
    attempts: list[SlurmAttempt] = field(default_factory=list)

    @property
    def large(self) -> bool:
        """True for a job of 64 GPUs or more."""
        return self.gpus >= 64


@dataclass(frozen=True)
class SlurmReservation:
    """A recurring Slurm reservation (``scontrol create reservation … Flags=DAILY``).

    Attributes:
        name: ReservationName.
        hosts: reserved nodes.
        account: the account it is for (its jobs would name ``--reservation``).
        local_start_hour: daily start (local hour in the cluster's zone).
        hours: length of each occurrence.
        reservation_id: slurmdbd's id.
        occurrences: ``(start, end)`` epoch seconds of each occurrence the simulation covered.
    """

    name: str
    hosts: tuple[str, ...]
    account: str
    local_start_hour: int
    hours: int
    reservation_id: int = 1
    occurrences: tuple[tuple[int, int], ...] = ()


#: The planted idle reservation: one H100 node set aside daily 02:00-06:00 (local) for the safety
#: team, whose jobs never ask for it; while an occurrence is on, no other job may run there.
IDLE_RESERVATION = SlurmReservation("safety-eval", ("h100-008",), "safety", 2, 4)


@dataclass
class SlurmResult:
    """What the Slurm simulation produced.

    Attributes:
        jobs: every job, in submission order (array tasks in task order).
        node_events: down/drain intervals (``sacctmgr show event``).
        allocations: one record per (attempt, GPU) held.
        held_gpu_s: GPU-seconds idle on available ``gpu`` nodes while a ≥ 64-GPU job was
            eligible and pending, inside the window.
        uids: uid per user name.
        reservations: the recurring reservations, with their occurrences.
    """

    jobs: list[SlurmJob]
    node_events: list[NodeEvent]
    allocations: list[GpuAllocation]
    held_gpu_s: int
    uids: dict[str, int]
    reservations: list[SlurmReservation] = field(default_factory=list)


class _Node:
    """Scheduler-side state of one node."""

    def __init__(self, spec: NodeSpec) -> None:
        self.spec = spec
        self.free = [True] * spec.gpus
        self.nfree = spec.gpus
        self.spare_cpus = spec.cpus - spec.gpus * _CPUS_PER_GPU[spec.partition]
        self.avail = True
        self.running: dict[int, tuple[SlurmAttempt, int]] = {}

    def take(self, n: int) -> tuple[int, ...]:
        idx = [i for i, f in enumerate(self.free) if f][:n]
        for i in idx:
            self.free[i] = False
        self.nfree -= n
        return tuple(idx)

    def give(self, idx: tuple[int, ...]) -> None:
        for i in idx:
            if self.free[i]:
                raise AssertionError(f"GPU {self.spec.host}:{i} freed twice")
            self.free[i] = True
        self.nfree += len(idx)


@dataclass
class _Array:
    throttle: int
    running: int = 0
    waiting: deque[SlurmAttempt] = field(default_factory=deque)


# ----------------------------------------------------------------------------------------------
# Job mix
# ----------------------------------------------------------------------------------------------


def _diurnal(ts: int, tz: ZoneInfo) -> float:
    local = datetime.fromtimestamp(ts, tz)
    h = local.hour + local.minute / 60
    f = 0.22 + 0.78 * math.exp(-(((h - 14.0) / 4.5) ** 2))
    if local.weekday() >= 5:
        f *= 0.45
    return f


def _pick_limit(rng: random.Random, runtime: int) -> int:
    if rng.random() < 0.35:
        return _PARTITION_MAX
    want = runtime * rng.uniform(1.3, 4.0)
    for lim in _LIMITS:
        if lim >= want:
            return lim
    return _PARTITION_MAX


def _pick_team(rng: random.Random) -> TeamSpec:
    return rng.choices(TEAMS, weights=[t.slurm_weight for t in TEAMS])[0]


def _activity(rng: random.Random, team: str) -> tuple[float, str, int]:
    if team == "recsys":
        return rng.uniform(0.012, 0.028), "idle", rng.randint(2000, 9000)
    if rng.random() < 0.07:
        return rng.uniform(0.08, 0.30), "low", rng.randint(5000, 40000)
    return rng.uniform(0.40, 0.95), "busy", rng.randint(30000, 78000)


class _JobFactory:
    """Draws jobs with increasing job ids."""

    def __init__(self, rng: random.Random, uids: dict[str, int], first_id: int) -> None:
        self.rng = rng
        self.uids = uids
        self.next_id = first_id

    def new_id(self, n: int = 1) -> int:
        jid = self.next_id
        self.next_id += n
        return jid

    def outcome(self, runtime: int) -> tuple[str, int, int, int | None, str, float, int]:
        """Outcome, exit rc, runtime, cancel offset, interrupt, interrupt fraction, limit."""
        rng = self.rng
        r = rng.random()
        if r < 0.11:
            rc = rng.choices((1, 2, 127), weights=(85, 10, 5))[0]
            return "FAILED", rc, max(60, int(runtime * rng.uniform(0.02, 0.6))), None, "", 0.0, 0
        if r < 0.16:
            limit = rng.choice(_LIMITS[1:7])
            return "TIMEOUT", 0, limit, None, "", 0.0, limit
        if r < 0.25:
            if rng.random() < 0.3:
                offset = rng.randint(600, 4 * HOUR)
            else:
                offset = int(runtime * rng.uniform(0.1, 0.9)) + rng.randint(60, 2 * HOUR)
            return "CANCELLED", 0, runtime, offset, "", 0.0, 0
        if r < 0.275:
            run = max(60, int(runtime * rng.uniform(0.01, 0.3)))
            return "OUT_OF_MEMORY", 0, run, None, "", 0.0, 0
        if r < 0.295:
            kind = rng.choice(("REQUEUED", "PREEMPTED"))
            return "COMPLETED", 0, runtime, None, kind, rng.uniform(0.15, 0.7), 0
        return "COMPLETED", 0, runtime, None, "", 0.0, 0

    def gpu_job(
        self,
        submit: int,
        team: TeamSpec,
        partition: str,
        gpus: int,
        runtime: int,
        *,
        outcome: tuple[str, int, int, int | None, str, float, int] | None = None,
        qos: str | None = None,
        name: str | None = None,
        begin: int | None = None,
        limit: int | None = None,
    ) -> SlurmJob:
        rng = self.rng
        user = rng.choice(team.users)
        out = outcome if outcome is not None else self.outcome(runtime)
        state, rc, run, cancel_off, interrupt, frac, fixed_limit = out
        if fixed_limit:
            time_limit = fixed_limit
        elif limit is not None:
            time_limit = limit
        else:
            time_limit = _pick_limit(rng, run)
        if state != "TIMEOUT":
            run = min(run, time_limit - 60)
        if qos is None:
            if team.name == "infra":
                qos = "high" if rng.random() < 0.7 else "normal"
            else:
                qos = "low" if rng.random() < 0.06 else "normal"
        nodes = 1 if gpus <= 8 else gpus // 8
        act, kind, fb = _activity(rng, team.name)
        jid = self.new_id()
        return SlurmJob(
            job_id=str(jid),
            raw_id=jid,
            array_id=None,
            array_task=None,
            array_throttle=0,
            name=name or rng.choice(_NAMES[team.name]),
            team=team.name,
            user=user,
            uid=self.uids[user],
            qos=qos,
            partition=partition,
            gpus=gpus,
            nodes=nodes,
            cpus=gpus * _CPUS_PER_GPU[partition],
            mem_mb=gpus * _MEM_PER_GPU[partition],
            time_limit=time_limit,
            submit=submit,
            begin=submit if begin is None else begin,
            runtime=run,
            outcome=state,
            exit_rc=rc,
            cancel_at=None if cancel_off is None else submit + cancel_off,
            cancel_uid=self.uids[user] if rng.random() < 0.88 else 0,
            interrupt=interrupt,
            interrupt_frac=frac,
            activity=act,
            kind=kind,
            fb_mib=fb,
        )

    def cpu_job(self, submit: int, team: TeamSpec) -> SlurmJob:
        rng = self.rng
        user = rng.choice(team.users)
        cpus = rng.choice((4, 8, 16, 32))
        run = rng.randint(300, 3 * HOUR)
        jid = self.new_id()
        return SlurmJob(
            job_id=str(jid),
            raw_id=jid,
            array_id=None,
            array_task=None,
            array_throttle=0,
            name=rng.choice(("preprocess-cpu", "etl-cpu", "tar-shards")),
            team=team.name,
            user=user,
            uid=self.uids[user],
            qos="normal",
            partition="gpu",
            gpus=0,
            nodes=1,
            cpus=cpus,
            mem_mb=cpus * 4000,
            time_limit=_pick_limit(rng, run),
            submit=submit,
            begin=submit,
            runtime=run,
            outcome="COMPLETED",
            exit_rc=0,
            cancel_at=None,
            cancel_uid=self.uids[user],
            interrupt="",
            interrupt_frac=0.0,
            activity=0.0,
            kind="busy",
            fb_mib=0,
        )

    def array(
        self,
        submit: int,
        team: TeamSpec,
        *,
        ntasks: int = 0,
        throttle: int = -1,
        partition: str = "",
    ) -> list[SlurmJob]:
        rng = self.rng
        user = rng.choice(team.users)
        ntasks = ntasks or rng.randint(4, 14)
        if throttle < 0:
            throttle = 4 if rng.random() < 0.5 else 0
        partition = partition or ("h100" if rng.random() < team.h100_frac else "gpu")
        master = self.new_id(ntasks)
        limit = rng.choice((3600, 7200, 14400))
        act, kind, fb = _activity(rng, team.name)
        name = "hparam-sweep" if rng.random() < 0.5 else "eval-shards"
        jobs = []
        for task in range(ntasks):
            raw = master if task == ntasks - 1 else master + 1 + task
            run = min(limit - 120, int(rng.lognormvariate(math.log(35 * 60), 0.6)))
            failed = rng.random() < 0.08
            jobs.append(
                SlurmJob(
                    job_id=f"{master}_{task}",
                    raw_id=raw,
                    array_id=master,
                    array_task=task,
                    array_throttle=throttle,
                    name=name,
                    team=team.name,
                    user=user,
                    uid=self.uids[user],
                    qos="low",
                    partition=partition,
                    gpus=1,
                    nodes=1,
                    cpus=_CPUS_PER_GPU[partition],
                    mem_mb=_MEM_PER_GPU[partition],
                    time_limit=limit,
                    submit=submit,
                    begin=submit,
                    runtime=max(120, run if not failed else run // 4),
                    outcome="FAILED" if failed else "COMPLETED",
                    exit_rc=1,
                    cancel_at=None,
                    cancel_uid=self.uids[user],
                    interrupt="",
                    interrupt_frac=0.0,
                    activity=act,
                    kind=kind,
                    fb_mib=fb,
                )
            )
        return jobs


def _draw_jobs(
    rng: random.Random,
    uids: dict[str, int],
    sim_start: int,
    win_start: int,
    win_end: int,
    tz: ZoneInfo,
) -> list[SlurmJob]:
    factory = _JobFactory(rng, uids, first_id=418200)
    events: list[tuple[int, int, str]] = []
    # Large (≥ 64-GPU) jobs on the `gpu` partition: a steady trickle.
    days = (win_end - win_start) / DAY
    n_large = max(2, round(days * 0.7))
    n_hero = max(1, int(days // 7))
    hero = set(rng.sample(range(2, n_large + 2), n_hero))
    for i in range(n_large + 2):
        base = (
            sim_start
            + DAY
            + (win_end - 10 * HOUR - sim_start - DAY) * (i + rng.random()) / (n_large + 2)
        )
        events.append((int(base), 2, "hero" if i in hero else "large"))
    t = float(sim_start)
    peak_per_hour = 13.5
    while True:
        t += rng.expovariate(peak_per_hour / HOUR)
        if t >= win_end:
            break
        if rng.random() > _diurnal(int(t), tz):
            continue
        events.append((int(t), 1, "job"))
    # Throttled sweeps submitted late in the evening of the first and the last day: their
    # tasks are still queued at midnight (a pending ``A_[i-j%2]`` row in that day's export).
    for day_start in (win_start, win_end - DAY):
        local = datetime.fromtimestamp(day_start + 12 * HOUR, tz).replace(hour=23, minute=10)
        events.append((int(local.timestamp()), 4, "sweep"))
    # Two "dependency never satisfied" jobs, cancelled hours later.
    for frac in (0.3, 0.7):
        events.append((int(win_start + (win_end - win_start) * frac), 3, "nodep"))
    events.sort()
    jobs: list[SlurmJob] = []
    for ts, _, what in events:
        if what in ("large", "hero"):
            team = _TEAM[rng.choice(("nlp", "multimodal", "vision", "agents", "nlp"))]
            gpus = 128 if what == "hero" else 64
            run = rng.randint(3 * HOUR, 12 * HOUR)
            out = ("COMPLETED", 0, run, None, "", 0.0, 0)
            if rng.random() < 0.12:
                out = ("FAILED", 1, run // 3, None, "", 0.0, 0)
            jobs.append(
                factory.gpu_job(
                    ts,
                    team,
                    "gpu",
                    gpus,
                    run,
                    outcome=out,
                    qos="normal",
                    name=rng.choice(("pretrain-70b", "video-pretrain", "moe-scale")),
                    limit=rng.choice((129600, 172800)),
                )
            )
            continue
        team = _pick_team(rng)
        if what == "sweep":
            jobs.extend(factory.array(ts, _TEAM["speech"], ntasks=16, throttle=2, partition="gpu"))
            continue
        if what == "nodep":
            job = factory.gpu_job(
                ts,
                team,
                "gpu",
                4,
                HOUR,
                outcome=("CANCELLED", 0, HOUR, rng.randint(2, 9) * HOUR, "", 0.0, 0),
                name="after-preprocess",
            )
            job.begin = None
            jobs.append(job)
            continue
        r = rng.random()
        if r < 0.02:
            jobs.append(factory.cpu_job(ts, team))
            continue
        if r < 0.032:
            jobs.extend(factory.array(ts, team))
            continue
        partition = "h100" if rng.random() < team.h100_frac else "gpu"
        gpus = rng.choices((1, 2, 4, 8, 16, 32), weights=(30, 14, 20, 24, 7, 5))[0]
        run = int(rng.lognormvariate(math.log(1.1 * HOUR), 1.35) * (1 + math.log2(gpus) / 8))
        run = min(max(run, 120), 26 * HOUR)
        begin = None
        if rng.random() < 0.02:
            begin = ts + rng.randint(1, 10) * HOUR
        job = factory.gpu_job(ts, team, partition, gpus, run, begin=begin)
        jobs.append(job)
    return jobs


# ----------------------------------------------------------------------------------------------
# Scheduler
# ----------------------------------------------------------------------------------------------

_EV_END, _EV_NODE, _EV_CANCEL, _EV_ELIGIBLE = 0, 1, 2, 3


@dataclass
class _Fit:
    nodes: list[_Node]
    per_node: int


class _Scheduler:
    """Priority FIFO + EASY backfill over whole GPUs and whole nodes, per partition.

    ``bf_min_age_reserve`` is Slurm's ``SchedulerParameters`` setting of that name
    [slurm.conf(5)]: a blocked job gets its EASY reservation only once it has been eligible
    that many seconds; until then later jobs start wherever they fit, and the first blocked job
    old enough takes the reservation. It is given as ``(from, seconds)`` steps in time order,
    so a setting changed mid-run applies from its time on; none (the default) is Slurm's
    default of 0, and the pass is then the plain EASY backfill.
    """

    def __init__(
        self,
        rng: random.Random,
        cluster: ClusterSpec,
        win_start: int,
        win_end: int,
        *,
        bf_min_age_reserve: Sequence[tuple[int, int]] = (),
    ) -> None:
        self.rng = rng
        self.age_steps = tuple(bf_min_age_reserve)
        #: attempts already given a pass at the time they come of age
        self.woken: set[int] = set()
        self.any_host = cluster.nodes[0].host
        self.nodes = {n.host: _Node(n) for n in cluster.nodes}
        self.parts: dict[str, list[_Node]] = {}
        for node in self.nodes.values():
            self.parts.setdefault(node.spec.partition, []).append(node)
        self.queue: dict[str, list[tuple[tuple[int, int, int, int], SlurmAttempt]]] = {
            p: [] for p in self.parts
        }
        self.heap: list[tuple[int, int, int, object]] = []
        self.seq = 0
        self.arrays: dict[int, _Array] = {}
        self.node_events: list[NodeEvent] = []
        self.win_start = win_start
        self.win_end = win_end
        self.held_gpu_s = 0
        #: host → reservation occurrences (start, end) no job may overlap; ``now`` of the pass.
        self.blocked: dict[str, list[tuple[int, int]]] = {}
        self.now = win_start

    # -- events -------------------------------------------------------------------------------
    def push(self, t: int, kind: int, obj: object) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, obj))

    def submit(self, job: SlurmJob) -> None:
        att = SlurmAttempt(job=job, index=0, submit=job.submit, eligible=job.begin)
        job.attempts.append(att)
        if job.cancel_at is not None:
            self.push(job.cancel_at, _EV_CANCEL, job)
        if job.begin is None:
            return
        if job.array_id is not None and job.array_throttle:
            arr = self.arrays.setdefault(job.array_id, _Array(job.array_throttle))
            if arr.running >= arr.throttle:
                arr.waiting.append(att)
                return
            arr.running += 1
        self.push(job.begin, _EV_ELIGIBLE, att)

    def enqueue(self, att: SlurmAttempt) -> None:
        job = att.job
        assert att.eligible is not None
        key = (
            -_QOS_PRIORITY[job.qos],
            att.eligible,
            job.raw_id if job.array_id is None else job.array_id,
            job.array_task or 0,
        )
        bisect.insort(self.queue[job.partition], (key, att), key=lambda e: e[0])

    def dequeue(self, att: SlurmAttempt) -> bool:
        q = self.queue[att.job.partition]
        for i, (_, a) in enumerate(q):
            if a is att:
                del q[i]
                return True
        return False

    # -- placement ------------------------------------------------------------------------------
    def open_for(self, host: str, job: SlurmJob) -> bool:
        """Would ``job`` started now (to its time limit) stay out of every reservation occurrence
        on ``host``? (Slurm never lets a job run into a reservation it is not part of.)"""
        t0, t1 = self.now, self.now + job.time_limit
        return not any(a < t1 and t0 < b for a, b in self.blocked.get(host, ()))

    def fit(self, job: SlurmJob, part: list[_Node], exclude: set[str]) -> _Fit | None:
        if self.blocked:
            exclude = exclude | {h for h in self.blocked if not self.open_for(h, job)}
        if job.gpus == 0:
            for node in part:
                if node.avail and node.spare_cpus >= job.cpus and node.spec.host not in exclude:
                    return _Fit([node], 0)
            return None
        if job.nodes == 1:
            best: _Node | None = None
            for node in part:
                if (
                    node.avail
                    and node.nfree >= job.gpus
                    and node.spec.host not in exclude
                    and (best is None or node.nfree < best.nfree)
                ):
                    best = node
            return None if best is None else _Fit([best], job.gpus)
        chosen = [
            n for n in part if n.avail and n.nfree == n.spec.gpus and n.spec.host not in exclude
        ][: job.nodes]
        return _Fit(chosen, 8) if len(chosen) == job.nodes else None

    def reservation(
        self, job: SlurmJob, part: list[_Node], now: int
    ) -> tuple[int, set[str]] | None:
        """EASY reservation for a blocked job: (shadow time, reserved hosts), or None."""

        def exp_end(a: SlurmAttempt) -> int:
            assert a.start is not None
            return max(a.start + a.job.time_limit, now + 1)

        if job.nodes == 1:
            best: tuple[int, str] | None = None
            for node in part:
                if not node.avail:
                    continue
                free = node.nfree
                when = now
                if free < job.gpus:
                    ends = sorted((exp_end(a), g) for a, g in node.running.values() if g)
                    for e, g in ends:
                        free += g
                        when = e
                        if free >= job.gpus:
                            break
                    if free < job.gpus:
                        continue
                if best is None or when < best[0]:
                    best = (when, node.spec.host)
            return None if best is None else (best[0], {best[1]})
        times = []
        for node in part:
            if not node.avail:
                continue
            node_ends = [exp_end(a) for a, g in node.running.values() if g]
            times.append((max(node_ends) if node_ends else now, node.spec.host))
        if len(times) < job.nodes:
            return None
        times.sort()
        chosen = times[: job.nodes]
        return chosen[-1][0], {h for _, h in chosen}

    def start(self, att: SlurmAttempt, fit: _Fit, now: int) -> None:
        job = att.job
        self.dequeue(att)
        att.start = now
        hosts: list[str] = []
        idx: list[tuple[int, ...]] = []
        cpus: list[int] = []
        for node in fit.nodes:
            hosts.append(node.spec.host)
            if job.gpus == 0:
                node.spare_cpus -= job.cpus
                idx.append(())
                cpus.append(job.cpus)
            else:
                idx.append(node.take(fit.per_node))
                cpus.append(fit.per_node * _CPUS_PER_GPU[job.partition])
            node.running[id(att)] = (att, fit.per_node)
        att.hosts, att.gpu_idx, att.cpus = tuple(hosts), tuple(idx), tuple(cpus)
        rng = self.rng
        if att.index == 0 and job.interrupt:
            run = max(300, int(job.runtime * job.interrupt_frac))
            state = job.interrupt
        elif job.outcome == "TIMEOUT":
            run = job.time_limit + rng.randint(20, 110)
            state = "TIMEOUT"
        else:
            run = max(30, job.runtime)
            state = "CANCELLED" if job.outcome == "CANCELLED" else job.outcome
        end = now + run
        if job.cancel_at is not None and job.cancel_at < end:
            end = max(job.cancel_at, now + 1)
            state = f"CANCELLED by {job.cancel_uid}"
        elif state == "CANCELLED":
            state = "COMPLETED"
        att.end = end
        att.state = state
        att.exit_code = {"FAILED": f"{job.exit_rc}:0", "OUT_OF_MEMORY": "0:125"}.get(state, "0:0")
        self.push(end, _EV_END, att)

    def release(self, att: SlurmAttempt) -> None:
        for host, idx in zip(att.hosts, att.gpu_idx, strict=True):
            node = self.nodes[host]
            if att.job.gpus == 0:
                node.spare_cpus += att.job.cpus
            else:
                node.give(idx)
            node.running.pop(id(att), None)

    def finish(self, att: SlurmAttempt, now: int) -> None:
        """Bookkeeping when an attempt has ended at ``now`` (requeue, array throttle)."""
        att.done = True
        job = att.job
        if att.state in _REQUEUE_STATES:
            nxt = SlurmAttempt(
                job=job, index=att.index + 1, submit=now, eligible=now + self.rng.randint(60, 130)
            )
            job.attempts.append(nxt)
            assert nxt.eligible is not None
            self.push(nxt.eligible, _EV_ELIGIBLE, nxt)
            return
        if job.array_id is not None and job.array_throttle:
            arr = self.arrays[job.array_id]
            arr.running -= 1
            if arr.waiting:
                w = arr.waiting.popleft()
                w.eligible = now
                arr.running += 1
                self.push(now, _EV_ELIGIBLE, w)

    # -- node failures --------------------------------------------------------------------------
    def node_fail(self, host: str, now: int, xid: int, gpu: int, tries: int) -> None:
        node = self.nodes[host]
        busy = any(g for _, g in node.running.values())
        if (not busy or not node.avail) and tries < 48:
            self.push(now + 1200, _EV_NODE, ("fail", host, xid, gpu, tries + 1))
            return
        node.avail = False
        detect = now + 300
        self.push(detect, _EV_NODE, ("detect", host, xid, gpu, now))

    def node_detect(self, host: str, now: int, xid: int, gpu: int, xid_time: int) -> None:
        node = self.nodes[host]
        for att, _ in list(node.running.values()):
            if att.done:
                continue
            self.release(att)
            att.end = now
            att.state = "NODE_FAIL"
            att.exit_code = "0:0"
            self.finish(att, now)
        rng = self.rng
        down_end = now + rng.randint(20, 45) * 60
        drain_end = down_end + rng.randint(90, 360) * 60
        self.node_events.append(
            NodeEvent(
                host, now, down_end, "DOWN", "Not responding", "slurm(64030)", xid, gpu, xid_time
            )
        )
        reason = {79: "xid 79 GPU fell off bus, reseat", 48: "xid 48 DBE, run dcgmi diag"}[xid]
        self.node_events.append(NodeEvent(host, down_end, drain_end, "DRAIN", reason, "root(0)"))
        self.push(drain_end, _EV_NODE, ("up", host, 0, 0, 0))

    # -- main loop ------------------------------------------------------------------------------
    def run(
        self,
        jobs: list[SlurmJob],
        failures: list[tuple[int, str, int, int]],
        drains: list[tuple[int, int, str, str]],
    ) -> None:
        for job in jobs:
            self.submit(job)
        for ts, host, xid, gpu in failures:
            self.push(ts, _EV_NODE, ("fail", host, xid, gpu, 0))
        for ts, end, host, reason in drains:
            self.push(ts, _EV_NODE, ("drain", host, 0, 0, 0))
            self.push(end, _EV_NODE, ("up", host, 0, 0, 0))
            self.node_events.append(NodeEvent(host, ts, end, "DRAIN", reason, "root(0)"))
        last = self.heap[0][0] if self.heap else self.win_end
        while self.heap and self.heap[0][0] <= self.win_end:
            now = self.heap[0][0]
            self._account_held(last, now)
            last = now
            dirty: set[str] = set()
            while self.heap and self.heap[0][0] == now:
                _, kind, _, obj = heapq.heappop(self.heap)
                self._handle(now, kind, obj, dirty)
            for part in sorted(dirty):
                self.schedule(part, now)
        self._account_held(last, self.win_end)

    def _handle(self, now: int, kind: int, obj: object, dirty: set[str]) -> None:
        if kind == _EV_END:
            assert isinstance(obj, SlurmAttempt)
            if obj.done or obj.end != now:
                return
            self.release(obj)
            self.finish(obj, now)
            dirty.add(obj.job.partition)
        elif kind == _EV_ELIGIBLE:
            assert isinstance(obj, SlurmAttempt)
            if obj.done:
                return
            self.enqueue(obj)
            dirty.add(obj.job.partition)
        elif kind == _EV_CANCEL:
            assert isinstance(obj, SlurmJob)
            att = obj.attempts[-1]
            if att.start is None and not att.done:
                self.dequeue(att)
                att.end = now
                att.state = f"CANCELLED by {obj.cancel_uid}"
                att.done = True
                if obj.array_id is not None and obj.array_throttle:
                    arr = self.arrays[obj.array_id]
                    if att in arr.waiting:
                        arr.waiting.remove(att)
        else:
            assert isinstance(obj, tuple)
            what, host, xid, gpu, extra = obj
            node = self.nodes[host]
            if what == "fail":
                self.node_fail(host, now, xid, gpu, extra)
            elif what == "detect":
                self.node_detect(host, now, xid, gpu, extra)
            elif what == "drain":
                node.avail = False
            elif what == "up":
                node.avail = True
            # "wake": a pending job comes of age for its reservation (bf_min_age_reserve)
            for part in self.parts:
                dirty.add(part)

    def min_age_reserve(self, now: int) -> int:
        """``bf_min_age_reserve`` (s) in force at ``now``: the last step at or before it."""
        age = 0
        for since, value in self.age_steps:
            if now >= since:
                age = value
        return age

    def schedule(self, part_name: str, now: int) -> None:
        self.now = now
        part = self.parts[part_name]
        queue = self.queue[part_name]
        if not queue:
            return
        res: tuple[int, set[str]] | None = None
        tested = 0
        age = self.min_age_reserve(now)
        for _, att in list(queue):
            job = att.job
            if job.gpus == 0:
                f = self.fit(job, part, set())
                if f is not None:
                    self.start(att, f, now)
                continue
            if res is None:
                f = self.fit(job, part, set())
                if f is not None:
                    self.start(att, f, now)
                    continue
                assert att.eligible is not None
                if age and now - att.eligible < age:
                    # too young for a reservation: later jobs may pass it; look again when it
                    # comes of age
                    if id(att) not in self.woken:
                        self.woken.add(id(att))
                        self.push(att.eligible + age, _EV_NODE, ("wake", self.any_host, 0, 0, 0))
                    continue
                res = self.reservation(job, part, now)
                continue
            tested += 1
            if tested > _BF_MAX_JOB_TEST:
                break
            f = self.fit(job, part, res[1])
            if f is None and now + job.time_limit <= res[0]:
                f = self.fit(job, part, set())
            if f is not None:
                self.start(att, f, now)

    def _account_held(self, t0: int, t1: int) -> None:
        a, b = max(t0, self.win_start), min(t1, self.win_end)
        if b <= a:
            return
        if any(att.job.large for _, att in self.queue["gpu"]):
            idle = sum(n.nfree for n in self.parts["gpu"] if n.avail)
            self.held_gpu_s += idle * (b - a)


def _failure_plan(
    rng: random.Random, win_start: int, win_end: int, tz: ZoneInfo
) -> tuple[list[tuple[int, str, int, int]], list[tuple[int, int, str, str]]]:
    days = (win_end - win_start) / DAY
    n = 7 if days >= 7 else max(1, int(days))
    fails = []
    for i in range(n):
        ts = win_start + (win_end - win_start) * (i + 0.35 + 0.3 * rng.random()) / n
        fails.append((int(ts), LEMON_HOST, 79, _LEMON_XID_GPU))
    if days >= 7:
        fails.append((int(win_start + 5.4 * DAY), "h100-006", 48, 2))
        local = datetime.fromtimestamp(win_start + 8 * DAY, tz).replace(hour=9, minute=0)
        t = int(local.timestamp())
        drains = [(t, t + 4 * HOUR, "a100-004", "scheduled maintenance: BMC firmware")]
    else:
        drains = []
    return fails, drains


def simulate_slurm(
    rng: random.Random,
    cluster: ClusterSpec,
    win_start: int,
    win_end: int,
    uids: dict[str, int],
) -> SlurmResult:
    """Draw the Slurm job mix and schedule it.

    Args:
        rng: the generator's random source (consumed in a fixed order).
        cluster: the Slurm cluster.
        win_start: window start (epoch s): local midnight of the first day.
        win_end: window end (epoch s); the simulation's "now".
        uids: uid per user.

    Returns:
        Jobs with their attempts, node events, GPU allocations and the held GPU-seconds.
    """
    tz = ZoneInfo(cluster.tz)
    sim_start = win_start - 3 * DAY
    jobs = _draw_jobs(rng, uids, sim_start, win_start, win_end, tz)
    fails, drains = _failure_plan(rng, win_start, win_end, tz)
    sched = _Scheduler(rng, cluster, win_start, win_end)
    resv = _occurrences(IDLE_RESERVATION, sim_start, win_end, tz)
    for host in resv.hosts:
        sched.blocked[host] = list(resv.occurrences)
        for _start, end in resv.occurrences:  # reserved nodes open up again: schedule then
            sched.push(end, _EV_NODE, ("resv_end", host, 0, 0, 0))
    sched.run(jobs, fails, drains)
    allocations: list[GpuAllocation] = []
    for job in jobs:
        if job.gpus == 0:
            continue
        for att in job.attempts:
            if att.start is None or att.start >= win_end:
                continue
            end = win_end if att.end is None or att.end > win_end else att.end
            for host, idx in zip(att.hosts, att.gpu_idx, strict=True):
                for g in idx:
                    allocations.append(
                        GpuAllocation(
                            cluster.name,
                            host,
                            g,
                            att.start,
                            end,
                            str(job.raw_id),
                            job.team,
                            job.activity,
                            job.kind,
                            job.fb_mib,
                            (("hpc_job", str(job.raw_id)),),
                        )
                    )
    sched.node_events.sort(key=lambda e: (e.start, e.host))
    return SlurmResult(jobs, sched.node_events, allocations, sched.held_gpu_s, uids, [resv])


def _occurrences(resv: SlurmReservation, t0: int, t1: int, tz: ZoneInfo) -> SlurmReservation:
    """``resv`` with its daily occurrences that start in ``[t0 - 1 day, t1)`` (local hours)."""
    day = datetime.fromtimestamp(t0 - DAY, tz).date()
    occ = []
    while True:
        start = datetime(day.year, day.month, day.day, resv.local_start_hour, tzinfo=tz)
        a = int(start.timestamp())
        if a >= t1:
            break
        occ.append((a, a + resv.hours * HOUR))
        day = day.fromordinal(day.toordinal() + 1)
    return SlurmReservation(
        resv.name,
        resv.hosts,
        resv.account,
        resv.local_start_hour,
        resv.hours,
        resv.reservation_id,
        tuple(occ),
    )
