"""Text writers for the Slurm exports, the registry, the inventory and ``planted.json``.

Slurm files mimic what the real commands print (see ``/work/shared/realdata/slurm-22.05-lab``):
``sacct --parsable2 --duplicates --allocations``-style rows plus ``.batch``/``.extern`` steps,
``sshare -a -l -P`` and ``sacctmgr show event -P``, with naive local times in the cluster's zone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pipelines.sample_fleet._model import TEAMS, ClusterSpec, NodeEvent
from pipelines.sample_fleet._slurm_sim import SlurmAttempt, SlurmJob, SlurmReservation

__all__ = [
    "SACCT_FIELDS",
    "SSHARE_FIELDS",
    "LocalTime",
    "compress_hostlist",
    "fmt_duration",
    "sacct_day_rows",
    "write_inventory",
    "write_node_events",
    "write_planted",
    "write_policy_history",
    "write_registry",
    "write_reservation_history",
    "write_sacct_day",
    "write_sshare",
]

SACCT_FIELDS = (
    "JobID",
    "JobIDRaw",
    "Cluster",
    "Partition",
    "QOS",
    "Account",
    "Group",
    "User",
    "UID",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Elapsed",
    "ExitCode",
    "State",
    "NNodes",
    "NCPUS",
    "ReqTRES",
    "AllocTRES",
    "Timelimit",
    "NodeList",
    "JobName",
)
SSHARE_FIELDS = (
    "Account",
    "User",
    "RawShares",
    "NormShares",
    "RawUsage",
    "NormUsage",
    "EffectvUsage",
    "FairShare",
    "LevelFS",
)
_GPU_TYPE = {"gpu": "a100", "h100": "h100"}
#: Step state and exit code per allocation state: (.batch state, .batch exit, .extern state,
#: .extern exit).
_STEPS: dict[str, tuple[str, str, str, str]] = {
    "COMPLETED": ("COMPLETED", "0:0", "COMPLETED", "0:0"),
    "TIMEOUT": ("CANCELLED", "0:15", "COMPLETED", "0:0"),
    "CANCELLED": ("CANCELLED", "0:15", "COMPLETED", "0:0"),
    "OUT_OF_MEMORY": ("OUT_OF_MEMORY", "0:125", "COMPLETED", "0:0"),
    "NODE_FAIL": ("CANCELLED", "0:15", "CANCELLED", "0:15"),
    "REQUEUED": ("CANCELLED", "0:15", "COMPLETED", "0:0"),
    "PREEMPTED": ("CANCELLED", "0:15", "COMPLETED", "0:0"),
}


class LocalTime:
    """Formats epoch seconds as naive local ISO times in one zone (cached)."""

    def __init__(self, tz: str) -> None:
        self.tz = ZoneInfo(tz)
        self._cache: dict[int, str] = {}

    def __call__(self, ts: int) -> str:
        """``2026-11-02T09:15:00`` for ``ts`` in this zone."""
        s = self._cache.get(ts)
        if s is None:
            s = datetime.fromtimestamp(ts, self.tz).strftime("%Y-%m-%dT%H:%M:%S")
            self._cache[ts] = s
        return s


def fmt_duration(seconds: int) -> str:
    """Slurm's ``[D-]HH:MM:SS`` notation for Elapsed and Timelimit."""
    seconds = max(0, int(seconds))
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def _ranges(nums: Sequence[int], width: int) -> str:
    parts: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        a, b = f"{nums[i]:0{width}d}", f"{nums[j]:0{width}d}"
        parts.append(a if i == j else f"{a}-{b}")
        i = j + 1
    return ",".join(parts)


def compress_hostlist(hosts: Iterable[str]) -> str:
    """Slurm's compressed hostlist: ``a100-[001-004,007]``; a single host stays bare.

    Args:
        hosts: host names of the form ``<prefix><zero-padded number>``.

    Returns:
        The compressed list, prefixes in first-seen order.
    """
    groups: dict[tuple[str, int], list[int]] = {}
    for host in hosts:
        k = len(host)
        while k > 0 and host[k - 1].isdigit():
            k -= 1
        prefix, digits = host[:k], host[k:]
        groups.setdefault((prefix, len(digits)), []).append(int(digits))
    out: list[str] = []
    for (prefix, width), nums in groups.items():
        nums = sorted(set(nums))
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
        else:
            out.append(f"{prefix}[{_ranges(nums, width)}]")
    return ",".join(out)


def _tres(job: SlurmJob, *, cpus: int, gpus: int, nodes: int, billing: bool, typed: bool) -> str:
    mem = job.mem_mb if job.gpus == 0 else job.mem_mb * gpus // max(job.gpus, 1)
    parts = [f"billing={cpus}"] if billing else []
    parts.append(f"cpu={cpus}")
    if gpus:
        if typed:
            parts.append(f"gres/gpu:{_GPU_TYPE[job.partition]}={gpus}")
        parts.append(f"gres/gpu={gpus}")
    parts.append(f"mem={mem}M")
    parts.append(f"node={nodes}")
    return ",".join(parts)


def _req_tres(job: SlurmJob) -> str:
    return _tres(job, cpus=job.cpus, gpus=job.gpus, nodes=job.nodes, billing=True, typed=False)


def _alloc_tres(job: SlurmJob) -> str:
    return _tres(job, cpus=job.cpus, gpus=job.gpus, nodes=job.nodes, billing=True, typed=True)


def _row(values: Sequence[str]) -> str:
    return "|".join(values)


def _attempt_rows(
    job: SlurmJob, att: SlurmAttempt, now: int, cluster: str, lt: LocalTime
) -> list[str]:
    """The allocation row and its steps for one attempt, as sacct shows it at ``now``."""
    eligible = "Unknown" if att.eligible is None else lt(att.eligible)
    started = att.start is not None and att.start < now
    common_head = [
        job.job_id,
        str(job.raw_id),
        cluster,
        job.partition,
        job.qos,
        job.team,
        job.team,
        job.user,
        str(job.uid),
        lt(att.submit),
        eligible,
    ]
    if not started:
        ended = att.end is not None and att.end <= now
        if ended:
            assert att.end is not None
            start_s, end_s, state = "None", lt(att.end), att.state
        else:
            start_s, end_s, state = "Unknown", "Unknown", "PENDING"
        return [
            _row(
                [
                    *common_head,
                    start_s,
                    end_s,
                    "00:00:00",
                    "0:0",
                    state,
                    str(job.nodes),
                    "0",
                    _req_tres(job),
                    "",
                    fmt_duration(job.time_limit),
                    "None assigned",
                    job.name,
                ]
            )
        ]
    assert att.start is not None
    running = att.end is None or att.end > now
    if running:
        end_s, elapsed, state, exit_code = "Unknown", now - att.start, "RUNNING", "0:0"
    else:
        assert att.end is not None
        end_s, elapsed, state, exit_code = (
            lt(att.end),
            att.end - att.start,
            att.state,
            att.exit_code,
        )
    start_s = lt(att.start)
    nodelist = compress_hostlist(att.hosts)
    alloc = _alloc_tres(job)
    rows = [
        _row(
            [
                *common_head,
                start_s,
                end_s,
                fmt_duration(elapsed),
                exit_code,
                state,
                str(len(att.hosts)),
                str(sum(att.cpus)),
                _req_tres(job),
                alloc,
                fmt_duration(job.time_limit),
                nodelist,
                job.name,
            ]
        )
    ]
    if running:
        b_state, b_exit, e_state, e_exit = "RUNNING", "0:0", "RUNNING", "0:0"
    elif state == "FAILED":
        b_state, b_exit, e_state, e_exit = "FAILED", exit_code, "COMPLETED", "0:0"
    else:
        b_state, b_exit, e_state, e_exit = _STEPS[state.split(" ")[0]]
    per_node_gpus = job.gpus // max(len(att.hosts), 1) if job.gpus else 0
    batch_tres = (
        _tres(job, cpus=att.cpus[0], gpus=per_node_gpus, nodes=1, billing=False, typed=True)
        if job.gpus
        else f"cpu={att.cpus[0]},mem={job.mem_mb}M,node=1"
    )
    tail_time = [start_s, start_s, start_s, end_s, fmt_duration(elapsed)]
    rows.append(
        _row(
            [
                f"{job.job_id}.batch",
                f"{job.raw_id}.batch",
                cluster,
                "",
                "",
                job.team,
                "",
                "",
                "",
                *tail_time,
                b_exit,
                b_state,
                "1",
                str(att.cpus[0]),
                "",
                batch_tres,
                "",
                att.hosts[0],
                "batch",
            ]
        )
    )
    rows.append(
        _row(
            [
                f"{job.job_id}.extern",
                f"{job.raw_id}.extern",
                cluster,
                "",
                "",
                job.team,
                "",
                "",
                "",
                *tail_time,
                e_exit,
                e_state,
                str(len(att.hosts)),
                str(sum(att.cpus)),
                "",
                alloc,
                "",
                nodelist,
                "extern",
            ]
        )
    )
    return rows


def _array_bracket(tasks: list[SlurmJob], now: int, cluster: str, lt: LocalTime) -> str:
    first = tasks[0]
    assert first.array_id is not None
    idx = sorted(t.array_task for t in tasks if t.array_task is not None)
    spec = _ranges(idx, 0)
    if first.array_throttle:
        spec += f"%{first.array_throttle}"
    return _row(
        [
            f"{first.array_id}_[{spec}]",
            str(first.array_id),
            cluster,
            first.partition,
            first.qos,
            first.team,
            first.team,
            first.user,
            str(first.uid),
            lt(first.submit),
            lt(first.submit),
            "Unknown",
            "Unknown",
            "00:00:00",
            "0:0",
            "PENDING",
            "1",
            "0",
            _req_tres(first),
            "",
            fmt_duration(first.time_limit),
            "None assigned",
            first.name,
        ]
    )


def sacct_day_rows(
    jobs: Sequence[SlurmJob], day_start: int, day_end: int, cluster: str, lt: LocalTime
) -> list[str]:
    """Rows of one daily sacct export (``--starttime day --endtime day+1``), run at ``day_end``.

    Args:
        jobs: every job of the cluster.
        day_start: the day's first second (epoch s).
        day_end: the next day's first second; the export's "now".
        cluster: cluster name.
        lt: local-time formatter.

    Returns:
        Rows without the header, in the order sacct prints them (by record creation).
    """
    now = day_end
    keyed: list[tuple[tuple[int, int, int, int], list[str]]] = []
    brackets: dict[int, list[SlurmJob]] = {}
    for job in jobs:
        for att in job.attempts:
            if att.submit >= now:
                continue
            if att.end is not None and att.end < day_start:
                continue
            never_started = att.start is None or att.start >= now
            still_open = att.end is None or att.end > now
            if job.array_id is not None and att.index == 0 and never_started and still_open:
                brackets.setdefault(job.array_id, []).append(job)
                continue
            order = job.array_id if job.array_id is not None else job.raw_id
            key = (att.submit, order, job.array_task or 0, att.index)
            keyed.append((key, _attempt_rows(job, att, now, cluster, lt)))
    for array_id, tasks in brackets.items():
        tasks.sort(key=lambda j: j.array_task or 0)
        key = (tasks[0].submit, array_id, tasks[0].array_task or 0, 0)
        keyed.append((key, [_array_bracket(tasks, now, cluster, lt)]))
    keyed.sort(key=lambda kv: kv[0])
    return [row for _, rows in keyed for row in rows]


def write_sacct_day(
    path: Path, jobs: Sequence[SlurmJob], day_start: int, day_end: int, cluster: str, lt: LocalTime
) -> None:
    """Write one daily ``sacct --parsable2`` file with its header line."""
    rows = sacct_day_rows(jobs, day_start, day_end, cluster, lt)
    path.write_text("\n".join(["|".join(SACCT_FIELDS), *rows]) + "\n", encoding="utf-8")


def write_node_events(
    path: Path,
    cluster: str,
    events: Sequence[NodeEvent],
    registered: int,
    win_start: int,
    win_end: int,
    lt: LocalTime,
    *,
    cluster_gpus: int,
    node_gpus: int = 8,
) -> None:
    """Write ``sacctmgr -P show event format=...,TRES`` output for the window (times local,
    ``Unknown`` = open): the cluster's TRES registration, then node down/drain events."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|TRES",
        f"{cluster}||{lt(registered)}|Unknown||Cluster Registered TRES||"
        f"cpu={cluster_gpus * 8},gres/gpu={cluster_gpus},mem={cluster_gpus * 64}G,"
        f"node={cluster_gpus // node_gpus}",
    ]
    for ev in events:
        if ev.start >= win_end or (ev.end is not None and ev.end < win_start):
            continue
        end = "Unknown" if ev.end is None or ev.end > win_end else lt(ev.end)
        lines.append(
            f"{cluster}|{ev.host}|{lt(ev.start)}|{end}|{ev.state}|{ev.reason}|{ev.user}|"
            f"cpu=64,gres/gpu={node_gpus},mem=512G"
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_reservation_history(
    path: Path,
    cluster: str,
    reservations: Sequence[SlurmReservation],
    win_start: int,
    win_end: int,
    lt: LocalTime,
    *,
    cpus_per_node: int = 64,
) -> None:
    """Write ``sacctmgr -P show reservation format=Cluster,Name,ID,Start,End,NodeNames,Flags,
    TRES,UnusedWall`` output for the window: one row per occurrence (slurmdbd keeps a record per
    occurrence of a ``DAILY`` reservation), times local, as Slurm 22.05 prints it (``TRES`` has
    CPUs only; ``UnusedWall`` = the occurrence's seconds, as no job used it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["Cluster|Name|ID|TimeStart|TimeEnd|NodeName|Flags|TRES|UnusedWall"]
    for r in reservations:
        for start, end in r.occurrences:
            if start >= win_end or end <= win_start:
                continue
            lines.append(
                f"{cluster}|{r.name}|{r.reservation_id}|{lt(start)}|{lt(end)}|"
                f"{compress_hostlist(r.hosts)}|DAILY,SPEC_NODES|"
                f"cpu={cpus_per_node * len(r.hosts)}|{_f6(end - start)}"
            )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _f6(x: float) -> str:
    return f"{x:.6f}"


def write_sshare(
    path: Path,
    jobs: Sequence[SlurmJob],
    raw_shares: dict[str, int],
    now: int,
    half_life_s: int = 7 * 86400,
) -> dict[str, float]:
    """Write ``sshare -a -l -P`` output (Fair Tree), usage decayed to ``now``.

    RawUsage is billing-weighted CPU-seconds (billing = CPUs here), decayed with a half-life.
    Accounts and users are listed alphabetically; FairShare is the Fair Tree rank of each user
    association (accounts by LevelFS, then users by LevelFS), divided by the number of users.

    Args:
        path: output file.
        jobs: every Slurm job.
        raw_shares: RawShares per account.
        now: the time the command runs (epoch s).
        half_life_s: PriorityDecayHalfLife.

    Returns:
        NormShares per account as written.
    """
    lam = math.log(2) / half_life_s
    usage: dict[tuple[str, str], float] = {}
    for job in jobs:
        for att in job.attempts:
            if att.start is None or att.start >= now:
                continue
            end = now if att.end is None or att.end > now else att.end
            # ∫ billing · e^{-λ(now - t)} dt over [start, end]; billing = CPUs
            u = job.cpus * (math.exp(-lam * (now - end)) - math.exp(-lam * (now - att.start))) / lam
            usage[(job.team, job.user)] = usage.get((job.team, job.user), 0.0) + u
    total_raw = 1 + sum(raw_shares.values())
    total_usage = sum(usage.values())
    norm_shares = {acct: raw / total_raw for acct, raw in raw_shares.items()}
    teams = sorted(TEAMS, key=lambda t: t.name)
    acct_usage = {t.name: sum(usage.get((t.name, u), 0.0) for u in t.users) for t in teams}
    acct_norm = {a: (u / total_usage if total_usage else 0.0) for a, u in acct_usage.items()}
    acct_lfs = {a: (norm_shares[a] / n if n else math.inf) for a, n in acct_norm.items()}
    user_eff: dict[tuple[str, str], float] = {}
    user_lfs: dict[tuple[str, str], float] = {}
    for t in teams:
        for user in t.users:
            uu = usage.get((t.name, user), 0.0)
            eff = uu / acct_usage[t.name] if acct_usage[t.name] else 0.0
            user_eff[(t.name, user)] = eff
            user_lfs[(t.name, user)] = (1 / len(t.users)) / eff if eff else math.inf
    n_users = 1 + sum(len(t.users) for t in teams)
    fairshare: dict[tuple[str, str], float] = {}
    rank = n_users - 1
    for t in sorted(teams, key=lambda t: (-acct_lfs[t.name], t.name)):
        for user in sorted(t.users, key=lambda u: (-user_lfs[(t.name, u)], u)):
            fairshare[(t.name, user)] = rank / n_users
            rank -= 1
    lines = [
        "|".join(SSHARE_FIELDS),
        f"root|||0.000000|{round(total_usage)}||1.000000||",
        f" root|root|1|{_f6(1 / total_raw)}|0|0.000000|0.000000|1.000000|inf",
    ]
    for t in teams:
        a = t.name
        lines.append(
            f" {a}||{raw_shares[a]}|{_f6(norm_shares[a])}|{round(acct_usage[a])}|"
            f"{_f6(acct_norm[a])}|{_f6(acct_norm[a])}||{_lfs(acct_lfs[a])}"
        )
        for user in sorted(t.users):
            k = (a, user)
            uu = usage.get(k, 0.0)
            lines.append(
                f"  {a}|{user}|1|{_f6(1 / len(t.users))}|{round(uu)}|"
                f"{_f6(uu / total_usage if total_usage else 0.0)}|{_f6(user_eff[k])}|"
                f"{_f6(fairshare[k])}|{_lfs(user_lfs[k])}"
            )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return norm_shares


def _lfs(x: float) -> str:
    return "inf" if x == float("inf") else _f6(x)


def write_registry(path: Path) -> None:
    """Write ``registry.yaml``, the allocation system's export of team shares."""
    lines = [
        "# Allocation registry: the central allocation system's export (entitlement shares "
        "per team).",
        "teams:",
    ]
    for t in TEAMS:
        lines += [
            f"  - team: {t.name}",
            f"    share: {t.share:.2f}",
            f"    slurm_accounts: [{t.name}]",
            f"    k8s_namespaces: [{t.name}]",
            f"    k8s_local_queues: [lq-{t.name}]",
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_inventory(path: Path, cluster: ClusterSpec) -> None:
    """Write ``inventory/<cluster>.csv`` (``host,gpus,gpu_type,partition,rack``)."""
    lines = ["host,gpus,gpu_type,partition,rack"]
    lines += [f"{n.host},{n.gpus},{n.gpu_type},{n.partition},{n.rack}" for n in cluster.nodes]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_planted(path: Path, planted: dict[str, Any]) -> None:
    """Write ``planted.json`` (sorted keys, two-space indent)."""
    path.write_text(json.dumps(planted, indent=2, sort_keys=True) + "\n", encoding="utf-8")


#: ``sacctmgr -P show tres`` of the sample fleet's slurmdbd (Slurm 22.05's ids; gres/gpu 1001).
_TRES_LINES = ("Type|Name|ID", "cpu||1", "mem||2", "energy||3", "node||4", "billing||5",
               "fs|disk|6", "vmem||7", "pages||8", "gres|gpu|1001")  # fmt: skip


def write_policy_history(
    transactions_path: Path,
    tres_path: Path,
    cluster: str,
    raw_shares: dict[str, int],
    changed: dict[str, int],
    created: int,
    changed_at: int,
) -> None:
    """Write ``sacctmgr -P list transactions withassoc`` and ``sacctmgr -P show tres``.

    The transactions add each account's association at ``created`` with its registry RawShares
    (``raw_shares``), then, at ``changed_at``, root changes the accounts of ``changed`` to their
    new RawShares (the planted drift: sshare shows the new value) and sets QOS ``normal``'s
    ``GrpTRES=gres/gpu=64``, in Slurm 22.05's format (epoch times, ``SLURM_TIME_FORMAT=%s``).
    """
    lines = ["Time|Action|Actor|Where|Info|User|Account|Cluster"]
    ids: dict[str, int] = {}
    for i, account in enumerate(sorted(raw_shares), start=3):
        ids[account] = i
        lines.append(
            f"{created}|Add Associations|root|id_assoc={i}|mod_time={created}, "
            f"acct='{account}', parent_acct='root', user='', shares={raw_shares[account]}, "
            "grp_jobs=NULL, grp_submit_jobs=NULL, grp_wall=NULL, max_jobs=NULL, "
            f"max_submit_jobs=NULL, max_wall_pj=NULL, priority=NULL, def_qos_id=NULL, qos='', "
            f"delta_qos=''||{account}|{cluster}"
        )
    for account in sorted(changed):
        lines.append(
            f"{changed_at}|Modify Associations|root|(id_assoc={ids[account]})|"
            f"shares={changed[account]}||{account}|{cluster}"
        )
    lines.append(
        f"{changed_at + 60}|Modify QOS|root|(name='normal')|"
        "grp_tres = if (id=1, '1001=64', grp_tres)|||"
    )
    transactions_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tres_path.write_text("\n".join(_TRES_LINES) + "\n", encoding="utf-8")
