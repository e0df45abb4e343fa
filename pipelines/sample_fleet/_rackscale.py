"""The bundled fleet's third cluster: ``slurm-nvl``, rack-scale NVLink domains.

Four NVL72-like domains (``nvl01`` … ``nvl04``: 18 trays × 4 GPUs each, 288 GPUs), two domains
per spine block (``topology/block`` with ``BlockSizes=18,36``), over the same window and teams
as the other clusters, in UTC. Its own random stream (``goodput-sample/<seed>/rackscale``), so
``slurm-a`` and ``k8s-b`` keep their bytes.

The scheduler here is topology-aware, as Slurm's ``topology/block`` with ``--segment`` equal to
the job's node count: priority FIFO over the queue; a job of one tray takes the tray with the
fewest free GPUs that suffices (packing); a gang of n trays starts only inside one domain with
n whole free healthy trays (best fit: the fullest such domain), and the first blocked gang
reserves the domain with the most free trays (no later job starts there until it fits, as a
backfill reservation protects the head job).

Planted findings (``planted_slurm-nvl.json``):

* ``spread_team``: ``multimodal`` submits without a topology constraint (no ``--segment``): its
  gangs take whole free trays round-robin across domains as soon as enough are free anywhere,
  so each spans two domains or more; every other team's gangs stay in one domain;
* ``fragmentation_period``: on days 5–6 of the window a parameter sweep of ``rl`` (one tray
  each, running about 30 h) is placed least-loaded across the domains (``CR_LLN``), leaving no
  domain with 16 free trays while enough GPUs are free by count: large jobs (16–18 trays) wait
  for topology, not quota;
* ``failed_trays``: in ``nvl03`` tray ``gb-041`` goes DOWN (a job on it ends NODE_FAIL) and
  ``gb-047`` is drained (XID 79) on day 3, both still out at the window's end: ``nvl03`` has 16
  healthy trays, so no 18-tray gang fits there.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.sample_fleet._model import TEAMS, ClusterSpec, NodeEvent, NodeSpec, gpu_uuid
from pipelines.sample_fleet._scale_writers import dcgm_hourly_day, sacct_day_frame
from pipelines.sample_fleet._writers import (
    SACCT_FIELDS,
    LocalTime,
    compress_hostlist,
    write_inventory,
    write_node_events,
)

__all__ = [
    "FAILED_RACK",
    "FAILED_TRAYS",
    "FRAGMENT_DAYS",
    "RACKSCALE_CLUSTER",
    "SPREAD_TEAM",
    "SWEEP_TEAM",
    "RackscaleResult",
    "build_rackscale_cluster",
    "generate_rackscale",
    "simulate_rackscale",
]

RACKSCALE_CLUSTER = "slurm-nvl"
RACKSCALE_TZ = "UTC"
DOMAINS = 4
TRAYS = 18
GPUS_PER_TRAY = 4
SPREAD_TEAM = "multimodal"
SWEEP_TEAM = "rl"
#: Days (from the window's first, inclusive–exclusive) of the planted sweep.
FRAGMENT_DAYS = (5, 7)
FAILED_RACK = "nvl03"
FAILED_TRAYS = ("gb-041", "gb-047")
#: Teams that submit large (16–18 tray) gangs.
LARGE_TEAMS = ("agents", "nlp", "vision", SPREAD_TEAM)
_DAY = 86400
_HOUR = 3600
_WARMUP_DAYS = 1


def build_rackscale_cluster() -> ClusterSpec:
    """``slurm-nvl``: hosts ``gb-001`` … ``gb-072``, 18 per rack ``nvl01`` … ``nvl04``."""
    nodes = tuple(
        NodeSpec(
            f"gb-{i + 1:03d}", GPUS_PER_TRAY, "gb200", "nvl", f"nvl{i // TRAYS + 1:02d}", 72, i
        )
        for i in range(DOMAINS * TRAYS)
    )
    return ClusterSpec(RACKSCALE_CLUSTER, "slurm", RACKSCALE_TZ, nodes)


@dataclass
class _Job:
    raw_id: int
    team: str
    user: str
    gpus: int
    nnodes: int
    submit: int
    runtime: int
    limit_s: int
    activity: float
    sweep: bool = False
    start: int | None = None
    end: int | None = None
    state: str = "PENDING"
    hosts: tuple[str, ...] = ()
    gpu_idx: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class RackscaleResult:
    """The simulated cluster: its jobs, node events and window."""

    cluster: ClusterSpec
    jobs: list[_Job]
    events: list[NodeEvent]
    window: tuple[int, int]
    days: tuple[tuple[dt.date, int, int], ...]


def _users() -> dict[str, tuple[str, int]]:
    """Team → (first user, uid) with the bundled uids (1001, … in registry order)."""
    out: dict[str, tuple[str, int]] = {}
    uid = 1001
    for t in TEAMS:
        out[t.name] = (t.users[0], uid)
        uid += len(t.users)
    return out


def _draw(rng: random.Random, t0: int, t1: int, w0: int) -> list[_Job]:
    """The submitted jobs, in submit order: single trays, medium gangs, large gangs, the sweep."""
    users = _users()
    teams = [t.name for t in TEAMS]
    weights = [t.slurm_weight for t in TEAMS]
    jobs: list[_Job] = []

    def add(team: str, gpus: int, nnodes: int, submit: int, runtime: int, sweep: bool) -> None:
        limit = min(7 * _DAY, max(_HOUR, math.ceil(runtime * 1.5 / _HOUR) * _HOUR))
        user, _uid = users[team]
        jobs.append(_Job(0, team, user, gpus, nnodes, submit, runtime, limit,
                         round(rng.uniform(0.35, 0.9), 3), sweep))  # fmt: skip

    t = t0
    while True:  # single trays: ~6 an hour, 1–4 GPUs, median 2 h
        t += int(rng.expovariate(6 / _HOUR)) + 1
        if t >= t1:
            break
        team = rng.choices(teams, weights)[0]
        add(team, rng.choice((1, 2, 4, 4)), 1, t, int(min(30 * _HOUR, rng.lognormvariate(
            math.log(2 * _HOUR), 1.0))) + 60, sweep=False)  # fmt: skip
    t = t0
    while True:  # medium gangs: one every 3 h, 2–8 trays, median 4 h
        t += int(rng.expovariate(1 / (3 * _HOUR))) + 1
        if t >= t1:
            break
        team = rng.choices(teams, weights)[0]
        n = rng.choice((2, 4, 4, 8))
        add(team, n * GPUS_PER_TRAY, n, t, int(min(24 * _HOUR, rng.lognormvariate(
            math.log(4 * _HOUR), 0.6))) + 60, sweep=False)  # fmt: skip
    t = t0
    i = 0
    while True:  # large gangs: about three a day, 16 or 18 trays, 4–9 h
        t += int(rng.expovariate(3 / _DAY)) + 1
        if t >= t1:
            break
        n = rng.choice((16, 18))
        add(LARGE_TEAMS[i % len(LARGE_TEAMS)], n * GPUS_PER_TRAY, n, t,
            rng.randint(4 * _HOUR, 9 * _HOUR), sweep=False)  # fmt: skip
        i += 1
    sweep_at = w0 + FRAGMENT_DAYS[0] * _DAY + 2 * _HOUR
    for k in range(24):  # the planted sweep: 24 one-tray jobs within an hour, ~30 h each
        add(SWEEP_TEAM, GPUS_PER_TRAY, 1, sweep_at + k * 150,
            rng.randint(28 * _HOUR, 32 * _HOUR), sweep=True)  # fmt: skip
    jobs.sort(key=lambda j: (j.submit, j.team, j.gpus))
    for k, j in enumerate(jobs):
        j.raw_id = 700001 + k
    return jobs


class _State:
    """Free GPUs per tray, trays per domain, health, and the jobs running."""

    def __init__(self, cluster: ClusterSpec) -> None:
        self.domain = {n.host: n.rack for n in cluster.nodes}
        self.hosts = [n.host for n in cluster.nodes]
        self.by_domain: dict[str, list[str]] = {}
        for n in cluster.nodes:
            self.by_domain.setdefault(n.rack, []).append(n.host)
        self.free = {h: list(range(GPUS_PER_TRAY)) for h in self.hosts}
        self.healthy = dict.fromkeys(self.hosts, True)
        self.reserved: str | None = None

    def whole(self, host: str) -> bool:
        return self.healthy[host] and len(self.free[host]) == GPUS_PER_TRAY

    def whole_in(self, dom: str) -> list[str]:
        return [h for h in self.by_domain[dom] if self.whole(h)]

    def open_domains(self) -> list[str]:
        return [d for d in sorted(self.by_domain) if d != self.reserved]

    def place(self, job: _Job) -> tuple[str, ...] | None:
        """Trays for ``job`` now (None: it does not fit)."""
        if job.nnodes == 1:
            cands = [h for d in self.open_domains() for h in self.by_domain[d]
                     if self.healthy[h] and len(self.free[h]) >= job.gpus]  # fmt: skip
            if not cands:
                return None
            load = {d: len(self.whole_in(d)) for d in self.by_domain}
            if job.sweep:  # least loaded: the domain with the most whole free trays
                best = min(cands, key=lambda h: (-load[self.domain[h]], len(self.free[h]), h))
            else:  # packing: the tray with fewest free GPUs, in the fullest domain
                best = min(cands, key=lambda h: (len(self.free[h]), load[self.domain[h]], h))
            return (best,)
        if job.team == SPREAD_TEAM:  # no segment: round-robin over the domains
            lists = [self.whole_in(d) for d in self.open_domains()]
            lists.sort(key=lambda hs: -len(hs))
            picked: list[str] = []
            k = 0
            while len(picked) < job.nnodes and any(lists):
                hs = lists[k % len(lists)]
                if hs:
                    picked.append(hs.pop(0))
                k += 1
            return tuple(sorted(picked)) if len(picked) == job.nnodes else None
        doms = self.open_domains() + ([self.reserved] if self.reserved else [])
        fits = [(len(self.whole_in(d)), d) for d in doms if len(self.whole_in(d)) >= job.nnodes]
        if not fits:
            return None
        _n, dom = min(fits)
        return tuple(self.whole_in(dom)[: job.nnodes])

    def take(self, job: _Job, hosts: tuple[str, ...]) -> None:
        per = job.gpus if job.nnodes == 1 else GPUS_PER_TRAY
        for h in hosts:
            job.gpu_idx[h] = tuple(self.free[h][:per])
            self.free[h] = self.free[h][per:]

    def release(self, job: _Job) -> None:
        for h, idx in job.gpu_idx.items():
            self.free[h] = sorted(self.free[h] + list(idx))


def simulate_rackscale(seed: int, start: dt.date, days: int) -> RackscaleResult:
    """Simulate ``slurm-nvl`` over ``days`` UTC days from ``start`` (one warm-up day before).

    Args:
        seed: the fleet's seed (the stream is ``goodput-sample/<seed>/rackscale``).
        start: first day of the window.
        days: days in the window.

    Returns:
        Jobs (started ones with trays, GPU indices, start and end), node events, the window.
    """
    rng = random.Random(f"goodput-sample/{seed}/rackscale")
    cluster = build_rackscale_cluster()
    w0 = int(dt.datetime.combine(start, dt.time(), dt.UTC).timestamp())
    w1 = w0 + days * _DAY
    day_list = tuple(
        (start + dt.timedelta(days=i), w0 + i * _DAY, w0 + (i + 1) * _DAY) for i in range(days)
    )
    jobs = _draw(rng, w0 - _WARMUP_DAYS * _DAY, w1, w0)
    fail_at = w0 + 3 * _DAY + 10 * _HOUR
    drain_at = w0 + 3 * _DAY + 16 * _HOUR
    events: list[NodeEvent] = []
    if days > 3:
        events = [
            NodeEvent(FAILED_TRAYS[0], fail_at, None, "DOWN", "Not responding", "slurm(0)"),
            NodeEvent(FAILED_TRAYS[1], drain_at, None, "DRAIN", "xid 79 tray replace",
                      "root(0)", xid=79, xid_gpu=2, xid_time=drain_at - 120),
        ]  # fmt: skip
    state = _State(cluster)
    # events: (time, order, kind, index): 0 end, 1 node failure/drain, 2 arrival
    heap: list[tuple[int, int, int, int]] = []
    for k, j in enumerate(jobs):
        heapq.heappush(heap, (j.submit, 2, 2, k))
    for k, e in enumerate(events):
        heapq.heappush(heap, (e.start, 1, 1, k))
    queue: list[int] = []
    running: set[int] = set()
    while heap:
        now = heap[0][0]
        if now >= w1:
            break
        while heap and heap[0][0] == now:
            _t, _o, kind, k = heapq.heappop(heap)
            if kind == 2:
                queue.append(k)
            elif kind == 0 and k in running:
                running.discard(k)
                jobs[k].state = "COMPLETED" if jobs[k].state == "RUNNING" else jobs[k].state
                state.release(jobs[k])
            elif kind == 1:
                ev = events[k]
                state.healthy[ev.host] = False
                if ev.state == "DOWN":
                    for r in sorted(running):
                        if ev.host in jobs[r].hosts:
                            jobs[r].end, jobs[r].state = now, "NODE_FAIL"
                            running.discard(r)
                            state.release(jobs[r])
        state.reserved = None
        for k in list(queue):
            job = jobs[k]
            hosts = state.place(job)
            if hosts is None:
                if job.nnodes > 1 and state.reserved is None and job.team != SPREAD_TEAM:
                    ok = [
                        d
                        for d in state.by_domain
                        if sum(state.healthy[h] for h in state.by_domain[d]) >= job.nnodes
                    ]
                    if ok:
                        state.reserved = max(ok, key=lambda d: (len(state.whole_in(d)), d))
                continue
            queue.remove(k)
            state.take(job, hosts)
            job.start, job.hosts, job.state = now, hosts, "RUNNING"
            job.end = now + min(job.runtime, job.limit_s)
            if job.runtime > job.limit_s:
                job.state = "TIMEOUT"
            running.add(k)
            heapq.heappush(heap, (job.end, 0, 0, k))
    for k in running:  # still running at the window's end
        jobs[k].state = "RUNNING"
    for j in jobs:
        if j.start is not None and j.end is not None and j.end > w1:
            j.end = None
    return RackscaleResult(cluster, jobs, events, (w0, w1), day_list)


def _jobs_frame(result: RackscaleResult) -> pl.DataFrame:
    """The work-table frame :func:`sacct_day_frame` reads."""
    users = _users()
    rows = [
        {
            "raw_id": j.raw_id, "partition": "nvl", "qos": "normal", "team": j.team,
            "user": j.user, "uid": users[j.team][1], "submit": j.submit, "eligible": j.submit,
            "start": j.start, "end": j.end,
            "state": "COMPLETED" if j.state == "RUNNING" else j.state,
            "exit_code": "0:1" if j.state == "NODE_FAIL" else "0:0", "gpus": j.gpus,
            "nnodes": j.nnodes, "limit_s": j.limit_s,
            "nodelist": compress_hostlist(j.hosts) if j.hosts else "None assigned",
        }
        for j in result.jobs
        if j.submit < result.window[1]
    ]  # fmt: skip
    return pl.DataFrame(rows, schema={
        "raw_id": pl.Int64, "partition": pl.String, "qos": pl.String, "team": pl.String,
        "user": pl.String, "uid": pl.Int64, "submit": pl.Int64, "eligible": pl.Int64,
        "start": pl.Int64, "end": pl.Int64, "state": pl.String, "exit_code": pl.String,
        "gpus": pl.Int64, "nnodes": pl.Int64, "limit_s": pl.Int64, "nodelist": pl.String,
    })  # fmt: skip


def _allocs_frame(result: RackscaleResult) -> pl.DataFrame:
    """One row per GPU held: ``raw_id, host, gpu, start, end, activity, team``."""
    w1 = result.window[1]
    rows = [
        (j.raw_id, h, g, j.start, j.end if j.end is not None else w1, j.activity, j.team)
        for j in result.jobs
        if j.start is not None
        for h, idx in sorted(j.gpu_idx.items())
        for g in idx
    ]
    return pl.DataFrame(rows, schema={
        "raw_id": pl.Int64, "host": pl.String, "gpu": pl.Int64, "start": pl.Int64,
        "end": pl.Int64, "activity": pl.Float64, "team": pl.String,
    }, orient="row")  # fmt: skip


def topology_conf(cluster: ClusterSpec) -> str:
    """``topology.conf`` in block form: one block per domain, two domains per spine block."""
    lines = [f"# {cluster.name}: NVL72-like domains of {TRAYS} trays, two per spine block"]
    for dom in sorted({n.rack for n in cluster.nodes}):
        hosts = [n.host for n in cluster.nodes if n.rack == dom]
        lines.append(f"BlockName={dom} Nodes={compress_hostlist(hosts)}")
    lines.append(f"BlockSizes={TRAYS},{2 * TRAYS}")
    return "\n".join(lines) + "\n"


def _planted(result: RackscaleResult) -> dict[str, Any]:
    w0 = result.window[0]
    spread = [j for j in result.jobs if j.team == SPREAD_TEAM and j.nnodes > 1 and j.hosts]
    rack = {n.host: n.rack for n in result.cluster.nodes}
    doms = {j.raw_id: len({rack[h] for h in j.hosts}) for j in spread}
    return {
        "cluster": result.cluster.name,
        "spread_team": {"team": SPREAD_TEAM, "gangs": len(spread),
                        "gangs_over_one_domain": sum(1 for v in doms.values() if v > 1)},
        "fragmentation_period": {
            "team": SWEEP_TEAM,
            "from": dt.datetime.fromtimestamp(w0 + FRAGMENT_DAYS[0] * _DAY, dt.UTC).isoformat(),
            "to": dt.datetime.fromtimestamp(w0 + FRAGMENT_DAYS[1] * _DAY, dt.UTC).isoformat(),
        },
        "failed_trays": {"rack": FAILED_RACK, "trays": list(FAILED_TRAYS)},
    }  # fmt: skip


def generate_rackscale(out: Path, *, seed: int, start: dt.date, days: int) -> tuple[int, int]:
    """Write ``slurm-nvl``'s inputs under ``out``: ``inventory/slurm-nvl.csv``,
    ``inputs/slurm-nvl/{sacct/sacct_D.psv, slurm_state/events_<last day>.psv,
    topology/topology_<first day>.conf, dcgm_hourly/date=D/dcgm_hourly_D.parquet}`` and
    ``planted_slurm-nvl.json``. Earlier generated files of those names are replaced.

    Returns:
        ``(jobs in the window, files written)``.
    """
    result = simulate_rackscale(seed, start, days)
    cl = result.cluster
    base = out / "inputs" / cl.name
    for sub in ("sacct", "slurm_state", "topology"):
        (base / sub).mkdir(parents=True, exist_ok=True)
        for p in (base / sub).glob("*"):
            if p.is_file():
                p.unlink()
    hourly_dir = base / "dcgm_hourly"
    if hourly_dir.exists():
        for p in sorted(hourly_dir.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
    (out / "inventory").mkdir(parents=True, exist_ok=True)
    write_inventory(out / "inventory" / f"{cl.name}.csv", cl)
    files = 1
    jobs = _jobs_frame(result)
    allocs = _allocs_frame(result)
    gpus = pl.DataFrame(
        [(n.host, g, gpu_uuid(seed, cl.name, n.host, g)) for n in cl.nodes for g in range(n.gpus)],
        schema={"hostname": pl.String, "gpu": pl.Int32, "uuid": pl.String}, orient="row",
    )  # fmt: skip
    header = "|".join(SACCT_FIELDS)
    for d, a, b in result.days:
        alive = jobs.filter(
            (pl.col("submit") < b) & (pl.col("end").is_null() | (pl.col("end") >= a))
        )
        lines = sacct_day_frame(alive, b, cl.name)["line"].to_list()
        (base / "sacct" / f"sacct_{d.isoformat()}.psv").write_text(
            header + "\n" + "\n".join(lines) + "\n", encoding="utf-8"
        )
        folder = hourly_dir / f"date={d.isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        dcgm_hourly_day(gpus, allocs, result.events, a, b, cl.name).write_parquet(
            folder / f"dcgm_hourly_{d.isoformat()}.parquet", statistics=True
        )
        files += 2
    w0, w1 = result.window
    write_node_events(
        base / "slurm_state" / f"events_{result.days[-1][0].isoformat()}.psv", cl.name,
        result.events, w0 - 30 * _DAY, w0, w1, LocalTime(RACKSCALE_TZ), cluster_gpus=cl.gpus,
        node_gpus=GPUS_PER_TRAY,
    )  # fmt: skip
    (base / "topology" / f"topology_{(start - dt.timedelta(days=30)).isoformat()}.conf").write_text(
        topology_conf(cl), encoding="utf-8"
    )
    (out / f"planted_{cl.name}.json").write_text(
        json.dumps(_planted(result), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    files += 3
    n_jobs = sum(1 for j in result.jobs if j.submit < w1 and (j.end is None or j.end >= w0))
    return n_jobs, files
