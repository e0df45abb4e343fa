"""Kubernetes side of the sample fleet: Kueue admission plus kube-scheduler placement.

Two ClusterQueues (``cq-research`` over ``gpu-node-01..05``, ``cq-prod`` over ``gpu-node-06..08``)
admit Workloads by GPU quota in BestEffortFIFO order (priority, then creation time). An admitted
Job's pods are then bound one by one to a node of the queue's flavor with enough free GPUs; a pod
that fits nowhere stays Pending (``FailedScheduling``) until GPUs free up, so a gang can start
spread out. A workload runs once all its pods run.

Preemption follows Kueue's ``withinClusterQueue: LowerPriority``: only a workload of a higher
priority class preempts, choosing the lowest-priority, most recently admitted workloads and then
dropping every victim it does not need. The planted scenario: a 16-GPU ``genomics`` workload is
preempted twice by ``prod-critical`` infra workloads and finishes on its third admission.
"""

from __future__ import annotations

import heapq
import math
import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from pipelines.sample_fleet._model import TEAMS, ClusterSpec, GpuAllocation, TeamSpec

__all__ = ["K8sAttempt", "K8sPod", "K8sResult", "K8sWorkload", "simulate_k8s"]

HOUR = 3600
DAY = 86400
EVICT_GRACE_S = 20
PREEMPTOR_PRIORITY = 1000
_IMAGES = {
    "default": "nvcr.io/nvidia/pytorch:24.10-py3",
    "nlp": "nvcr.io/nvidia/nemo:24.07",
    "recsys": "registry.example.com/recsys/dlrm-serve:1.14.2",
    "climate": "nvcr.io/nvidia/jax:24.10-py3",
    "infra": "registry.example.com/infra/inference-gateway:3.2.0",
}
_KINDS: dict[str, tuple[str, ...]] = {
    "vision": ("vit-train", "detr-eval"),
    "nlp": ("llm-sft", "llm-eval", "tokenizer-train", "rm-train"),
    "speech": ("asr-train", "tts-eval"),
    "rl": ("ppo-train",),
    "robotics": ("policy-train",),
    "infra": ("canary-infer", "load-test"),
    "safety": ("redteam-eval",),
    "multimodal": ("vlm-train", "clip-eval"),
    "recsys": ("dlrm-shadow", "emb-serve"),
    "genomics": ("esm-fold", "variant-batch"),
    "climate": ("downscale", "forecast-ens"),
    "agents": ("rollout-gen", "agent-eval"),
}


def new_uid(rng: random.Random) -> str:
    """A deterministic RFC 4122 version-4 UUID drawn from ``rng``."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))


@dataclass
class K8sPod:
    """One pod of one admission of a workload.

    Attributes:
        name: pod name.
        uid: pod uid.
        index: completion index in the Job.
        created: creationTimestamp (epoch s).
        node: bound node, or None while Pending.
        gpu_idx: GPU indices on the node.
        bound: time the pod was bound (PodScheduled), or None.
        pull_s: image pull seconds (0 when the image was already present).
        started: container start time, or None.
        finished: container termination time, or None (may lie after the window end).
        exit_code: container exit code.
        reason: termination reason (``Completed``, ``Error``, ``OOMKilled``).
        killed: time the kubelet began stopping the container (eviction), or None.
        deleted: deletionTimestamp, or None.
    """

    name: str
    uid: str
    index: int
    created: int
    node: str | None = None
    gpu_idx: tuple[int, ...] = ()
    bound: int | None = None
    pull_s: float = 0.0
    started: int | None = None
    finished: int | None = None
    exit_code: int = 0
    reason: str = ""
    killed: int | None = None
    deleted: int | None = None


@dataclass
class K8sAttempt:
    """One admission of a workload (a new set of pods each time).

    Attributes:
        index: 0, 1, 2 …
        queued: time the workload (re)entered the queue.
        reserved: QuotaReserved/Admitted time, or None.
        pods: the pods created for this admission.
        gang_start: time the last pod started running, or None.
        end: time the admission ended (finished or evicted), or None.
        outcome: ``Succeeded``, ``Failed``, ``Evicted`` or "" while open.
        preemptor: the workload that preempted this one.
        missing_gpus: GPUs missing from the unused quota when queued (for the Pending message).
    """

    index: int
    queued: int
    reserved: int | None = None
    pods: list[K8sPod] = field(default_factory=list)
    gang_start: int | None = None
    end: int | None = None
    outcome: str = ""
    preemptor: K8sWorkload | None = None
    missing_gpus: int = 0


@dataclass
class K8sWorkload:
    """One batch/v1 Job and its Kueue Workload.

    Attributes:
        job_name: Job name.
        job_uid: Job uid.
        wl_name: Workload name (``job-<job>-<hash>``).
        wl_uid: Workload uid.
        team: owning team (= namespace).
        cq: ClusterQueue name.
        priority: Workload priority value.
        priority_class: WorkloadPriorityClass name ("" for the default).
        pods: parallelism (pods per admission).
        gpus_per_pod: ``nvidia.com/gpu`` requested per pod.
        created: creation time.
        runtime: run time once the gang is running (s).
        outcome: planned ``Succeeded``, ``Failed`` or ``OOMKilled``.
        image: container image.
        activity: mean GPU activity while running.
        kind: activity kind (``busy``, ``idle``, ``low``).
        fb_mib: framebuffer in use per GPU (MiB).
        attempts: the admissions so far.
        planted: True for the twice-preempted workload.
    """

    job_name: str
    job_uid: str
    wl_name: str
    wl_uid: str
    team: str
    cq: str
    priority: int
    priority_class: str
    pods: int
    gpus_per_pod: int
    created: int
    runtime: int
    outcome: str
    image: str
    activity: float
    kind: str
    fb_mib: int
    attempts: list[K8sAttempt] = field(default_factory=list)
    planted: bool = False

    @property
    def gpus(self) -> int:
        """Total GPUs of one admission."""
        return self.pods * self.gpus_per_pod

    @property
    def namespace(self) -> str:
        """Kubernetes namespace (the team)."""
        return self.team

    @property
    def queue(self) -> str:
        """LocalQueue name."""
        return f"lq-{self.team}"


@dataclass
class K8sResult:
    """What the Kubernetes simulation produced.

    Attributes:
        workloads: every workload, in creation order.
        allocations: one record per (pod, GPU, activity segment).
        quotas: nominal GPU quota per ClusterQueue.
        pools: hosts per ClusterQueue.
    """

    workloads: list[K8sWorkload]
    allocations: list[GpuAllocation]
    quotas: dict[str, int]
    pools: dict[str, list[str]]


def _diurnal(ts: int, tz: ZoneInfo) -> float:
    local = datetime.fromtimestamp(ts, tz)
    h = local.hour + local.minute / 60
    f = 0.3 + 0.7 * math.exp(-(((h - 13.0) / 5.0) ** 2))
    return f * (0.5 if local.weekday() >= 5 else 1.0)


def _activity(rng: random.Random, team: str) -> tuple[float, str, int]:
    if team == "recsys":
        return rng.uniform(0.012, 0.028), "idle", rng.randint(3000, 12000)
    if rng.random() < 0.06:
        return rng.uniform(0.08, 0.30), "low", rng.randint(5000, 40000)
    return rng.uniform(0.40, 0.95), "busy", rng.randint(30000, 78000)


class _Factory:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def make(
        self,
        created: int,
        team: TeamSpec,
        *,
        pods: int,
        gpus_per_pod: int,
        runtime: int,
        outcome: str = "Succeeded",
        priority: int = 0,
        priority_class: str = "",
        kind_name: str | None = None,
    ) -> K8sWorkload:
        rng = self.rng
        job = f"{kind_name or rng.choice(_KINDS[team.name])}-{_suffix(rng)}"
        act, kind, fb = _activity(rng, team.name)
        return K8sWorkload(
            job_name=job,
            job_uid=new_uid(rng),
            wl_name=f"job-{job}-{rng.getrandbits(20):05x}",
            wl_uid=new_uid(rng),
            team=team.name,
            cq=f"cq-{team.group}",
            priority=priority,
            priority_class=priority_class,
            pods=pods,
            gpus_per_pod=gpus_per_pod,
            created=created,
            runtime=runtime,
            outcome=outcome,
            image=_IMAGES.get(team.name, _IMAGES["default"]),
            activity=act,
            kind=kind,
            fb_mib=fb,
        )

    def regular(self, created: int) -> K8sWorkload:
        rng = self.rng
        team = rng.choices(TEAMS, weights=[t.k8s_weight for t in TEAMS])[0]
        if team.name == "recsys":
            return self.make(
                created,
                team,
                pods=1,
                gpus_per_pod=rng.choice((1, 2, 2, 4)),
                runtime=rng.randint(4 * HOUR, 20 * HOUR),
            )
        r = rng.random()
        if r < 0.10 and team.group == "research":
            pods, gpp = 4, 8
        elif r < 0.22:
            pods, gpp = 2, 8
        else:
            pods, gpp = 1, rng.choices((1, 2, 4, 8), weights=(35, 20, 25, 20))[0]
        runtime = int(rng.lognormvariate(math.log(1.3 * HOUR), 1.2))
        runtime = min(max(runtime, 180), 22 * HOUR)
        o = rng.random()
        outcome = "Failed" if o < 0.12 else "OOMKilled" if o < 0.16 else "Succeeded"
        if outcome != "Succeeded":
            runtime = max(60, int(runtime * rng.uniform(0.02, 0.5)))
        return self.make(
            created, team, pods=pods, gpus_per_pod=gpp, runtime=runtime, outcome=outcome
        )


_EV_RELEASE, _EV_FINISH, _EV_ARRIVE, _EV_POKE = 0, 1, 2, 3


class _Kueue:
    """Kueue admission, preemption and kube-scheduler binding."""

    def __init__(
        self, rng: random.Random, cluster: ClusterSpec, factory: _Factory, win_end: int
    ) -> None:
        self.rng = rng
        self.factory = factory
        self.win_end = win_end
        self.pools: dict[str, list[str]] = {}
        self.free: dict[str, list[bool]] = {}
        for node in cluster.nodes:
            self.pools.setdefault(node.partition, []).append(node.host)
            self.free[node.host] = [True] * node.gpus
        self.quota = {cq: 8 * len(hosts) for cq, hosts in self.pools.items()}
        self.used = dict.fromkeys(self.quota, 0)
        self.pending: dict[str, list[K8sWorkload]] = {cq: [] for cq in self.quota}
        self.admitted: dict[str, list[K8sWorkload]] = {cq: [] for cq in self.quota}
        self.images: dict[str, dict[str, int]] = {h: {} for h in self.free}
        self.heap: list[tuple[int, int, int, object]] = []
        self.seq = 0
        self.workloads: list[K8sWorkload] = []
        self.hooks: dict[tuple[int, int], tuple[int, K8sWorkload]] = {}

    def push(self, t: int, kind: int, obj: object) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, obj))

    # -- admission --------------------------------------------------------------------------------
    def arrive(self, wl: K8sWorkload, now: int) -> None:
        att = K8sAttempt(index=len(wl.attempts), queued=now)
        att.missing_gpus = max(0, wl.gpus - (self.quota[wl.cq] - self.used[wl.cq]))
        wl.attempts.append(att)
        self.pending[wl.cq].append(wl)

    def admit_pass(self, cq: str, now: int) -> None:
        order = sorted(self.pending[cq], key=lambda w: (-w.priority, w.created, w.job_name))
        for wl in order:
            free = self.quota[cq] - self.used[cq]
            if wl.gpus <= free:
                self.admit(wl, now)
            elif wl.priority > 0:
                self.preempt_for(wl, now)

    def admit(self, wl: K8sWorkload, now: int) -> None:
        att = wl.attempts[-1]
        self.pending[wl.cq].remove(wl)
        self.admitted[wl.cq].append(wl)
        self.used[wl.cq] += wl.gpus
        att.reserved = now
        rng = self.rng
        for i in range(wl.pods):
            att.pods.append(
                K8sPod(
                    name=f"{wl.job_name}-{i}-{_suffix(rng)}",
                    uid=new_uid(rng),
                    index=i,
                    created=now + 1,
                )
            )
        hook = self.hooks.get((id(wl), att.index))
        if hook is not None:
            delay, preemptor = hook
            preemptor.created = now + delay
            self.push(preemptor.created, _EV_ARRIVE, preemptor)

    def preempt_for(self, wl: K8sWorkload, now: int) -> None:
        cq = wl.cq
        in_flight = sum(w.gpus for w in self.admitted[cq] if w.attempts[-1].outcome == "Evicted")
        need = wl.gpus - (self.quota[cq] - self.used[cq]) - in_flight
        if need <= 0:
            return
        cands = [
            w
            for w in self.admitted[cq]
            if w.priority < wl.priority and w.attempts[-1].outcome == ""
        ]
        cands.sort(key=lambda w: (w.priority, -(w.attempts[-1].reserved or 0), w.job_name))
        targets: list[K8sWorkload] = []
        freed = 0
        for c in cands:
            targets.append(c)
            freed += c.gpus
            if freed >= need:
                break
        if freed < need:
            return
        for i in range(len(targets) - 2, -1, -1):
            if freed - targets[i].gpus >= need:
                freed -= targets[i].gpus
                del targets[i]
        for victim in targets:
            self.evict(victim, wl, now)

    def evict(self, wl: K8sWorkload, preemptor: K8sWorkload, now: int) -> None:
        att = wl.attempts[-1]
        att.outcome = "Evicted"
        att.end = now
        att.preemptor = preemptor
        last = now
        for pod in att.pods:
            pod.killed = now if pod.bound is not None else None
            term = now + self.rng.randint(5, EVICT_GRACE_S)
            if pod.bound is not None:
                if pod.started is None or pod.started > now:
                    pod.started = None
                pod.finished = term if pod.started is not None else None
                pod.exit_code, pod.reason = 143, "Error"
            pod.deleted = term
            last = max(last, term)
        self.push(last, _EV_RELEASE, (wl, att))

    # -- placement --------------------------------------------------------------------------------
    def bind_pass(self, cq: str, now: int) -> None:
        order = sorted(
            self.admitted[cq], key=lambda w: (-w.priority, w.attempts[-1].reserved or 0, w.job_name)
        )
        for wl in order:
            att = wl.attempts[-1]
            if att.outcome:
                continue
            newly = False
            for pod in att.pods:
                if pod.bound is not None or pod.created > now:
                    continue
                host = self._best_fit(cq, wl.gpus_per_pod)
                if host is None:
                    continue
                flags = self.free[host]
                idx = tuple(i for i, f in enumerate(flags) if f)[: wl.gpus_per_pod]
                for i in idx:
                    flags[i] = False
                pod.node, pod.gpu_idx, pod.bound = host, idx, now
                ready = self.images[host].get(wl.image)
                if ready is not None and ready <= now:
                    pod.pull_s = 0.0
                else:
                    pod.pull_s = round(self.rng.uniform(18.0, 140.0), 3)
                    self.images[host].setdefault(wl.image, now + 2 + int(pod.pull_s))
                pod.started = now + 2 + math.ceil(pod.pull_s) + 1
                newly = True
            if newly and all(p.bound is not None for p in att.pods):
                starts = [p.started for p in att.pods if p.started is not None]
                att.gang_start = max(starts)
                run = wl.runtime
                end = att.gang_start + run
                for p in att.pods:
                    p.finished = end + self.rng.randint(0, 4)
                    if wl.outcome == "Succeeded":
                        p.exit_code, p.reason = 0, "Completed"
                    elif wl.outcome == "OOMKilled" and p.index == 0:
                        p.exit_code, p.reason = 137, "OOMKilled"
                    elif p.index == 0:
                        p.exit_code, p.reason = 1, "Error"
                    else:
                        p.exit_code, p.reason = 143, "Error"
                finish = max(p.finished for p in att.pods if p.finished is not None)
                self.push(finish, _EV_FINISH, (wl, att))

    def _best_fit(self, cq: str, gpus: int) -> str | None:
        best: tuple[int, str] | None = None
        for host in self.pools[cq]:
            nfree = sum(self.free[host])
            if nfree >= gpus and (best is None or nfree < best[0]):
                best = (nfree, host)
        return None if best is None else best[1]

    def release(self, wl: K8sWorkload, att: K8sAttempt) -> None:
        for pod in att.pods:
            if pod.node is not None:
                flags = self.free[pod.node]
                for i in pod.gpu_idx:
                    if flags[i]:
                        raise AssertionError(f"GPU {pod.node}:{i} freed twice")
                    flags[i] = True
        self.used[wl.cq] -= wl.gpus
        self.admitted[wl.cq].remove(wl)

    # -- main loop --------------------------------------------------------------------------------
    def run(self, workloads: list[K8sWorkload]) -> None:
        for wl in workloads:
            self.push(wl.created, _EV_ARRIVE, wl)
        while self.heap and self.heap[0][0] <= self.win_end:
            now = self.heap[0][0]
            dirty: set[str] = set()
            while self.heap and self.heap[0][0] == now:
                _, kind, _, obj = heapq.heappop(self.heap)
                if kind == _EV_ARRIVE:
                    assert isinstance(obj, K8sWorkload)
                    self.workloads.append(obj)
                    self.arrive(obj, now)
                    dirty.add(obj.cq)
                elif kind == _EV_FINISH:
                    assert isinstance(obj, tuple)
                    wl, att = obj
                    if att.outcome:
                        continue
                    att.outcome = "Succeeded" if wl.outcome == "Succeeded" else "Failed"
                    att.end = now
                    self.release(wl, att)
                    dirty.add(wl.cq)
                elif kind == _EV_RELEASE:
                    assert isinstance(obj, tuple)
                    wl, att = obj
                    self.release(wl, att)
                    self.arrive(wl, now)
                    dirty.add(wl.cq)
                else:
                    assert isinstance(obj, str)
                    dirty.add(obj)
            for cq in sorted(dirty):
                self.admit_pass(cq, now)
                self.bind_pass(cq, now)
                if any(
                    p.bound is None and p.created > now
                    for w in self.admitted[cq]
                    for p in w.attempts[-1].pods
                ):
                    self.push(now + 1, _EV_POKE, cq)


def simulate_k8s(
    rng: random.Random,
    cluster: ClusterSpec,
    win_start: int,
    win_end: int,
) -> K8sResult:
    """Draw the Kubernetes workload mix and run it through Kueue and the scheduler.

    Args:
        rng: the generator's random source.
        cluster: the Kubernetes cluster.
        win_start: window start (epoch s, UTC midnight).
        win_end: window end (epoch s).

    Returns:
        Workloads with their admissions and pods, and the GPU allocations.
    """
    tz = ZoneInfo("America/New_York")
    factory = _Factory(rng)
    sim_start = win_start - 2 * DAY
    workloads: list[K8sWorkload] = []
    t = float(sim_start)
    peak_per_hour = 4.6
    while True:
        t += rng.expovariate(peak_per_hour / HOUR)
        if t >= win_end:
            break
        if rng.random() > _diurnal(int(t), tz):
            continue
        workloads.append(factory.regular(int(t)))
    kueue = _Kueue(rng, cluster, factory, win_end)
    team = {tm.name: tm for tm in TEAMS}
    days = (win_end - win_start) // DAY
    if days >= 5:
        planted_at = win_start + 3 * DAY + 4 * HOUR
        victim = factory.make(
            planted_at,
            team["genomics"],
            pods=2,
            gpus_per_pod=8,
            runtime=7 * HOUR,
            kind_name="esm-pretrain",
        )
        victim.planted = True
        workloads.append(victim)
        for k, (delay, run) in enumerate(((2 * HOUR, 3 * HOUR), (90 * 60, 2 * HOUR))):
            p = factory.make(
                win_end + DAY,
                team["infra"],
                pods=2,
                gpus_per_pod=8,
                runtime=run,
                priority=PREEMPTOR_PRIORITY,
                priority_class="prod-critical",
                kind_name="canary-rollout",
            )
            kueue.hooks[(id(victim), k)] = (delay, p)
    if days >= 1:
        # A Sunday-night burst of big research jobs: some are still queued at the window end.
        for k, (name, pods) in enumerate((("nlp", 4), ("nlp", 4), ("multimodal", 2))):
            workloads.append(
                factory.make(
                    win_end - 3 * HOUR + 600 * k,
                    team[name],
                    pods=pods,
                    gpus_per_pod=8,
                    runtime=rng.randint(6, 14) * HOUR,
                )
            )
    workloads.sort(key=lambda w: (w.created, w.job_name))
    kueue.run([w for w in workloads if w.created < win_end])
    allocations: list[GpuAllocation] = []
    for wl in kueue.workloads:
        for att in wl.attempts:
            for pod in att.pods:
                if pod.bound is None or pod.node is None:
                    continue
                release = pod.deleted if pod.deleted is not None else pod.finished
                end = win_end if release is None or release > win_end else release
                labels = (("container", "trainer"), ("namespace", wl.namespace), ("pod", pod.name))
                key = f"{wl.namespace}/{pod.name}"
                segs: list[tuple[int, int, str, float]] = []
                gang = att.gang_start
                if gang is None or gang > pod.bound:
                    segs.append(
                        (pod.bound, min(end, gang if gang is not None else end), "wait", 0.004)
                    )
                if gang is not None and gang < end:
                    segs.append((max(gang, pod.bound), end, wl.kind, wl.activity))
                for s, e, kind, act in segs:
                    if e <= s:
                        continue
                    for g in pod.gpu_idx:
                        allocations.append(
                            GpuAllocation(
                                cluster.name,
                                pod.node,
                                g,
                                s,
                                e,
                                key,
                                wl.team,
                                act,
                                kind,
                                wl.fb_mib if kind != "wait" else 900,
                                labels,
                            )
                        )
    return K8sResult(kueue.workloads, allocations, dict(kueue.quota), kueue.pools)
