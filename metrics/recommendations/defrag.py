"""Defragmentation candidates: the few small jobs whose move would have freed a whole domain
for a large gang that waited on topology.

Evidence is ``large_job_wait_causes`` (large jobs with fragmentation delay: enough free GPUs by
count, no domain with room; METRICS.md "Domain capacity, stranded GPUs and large-job waits"),
``domain_capacity_hourly`` at the gang level and the attempts running at each hour start. For
each blocked job of n nodes (n ≤ the largest domain) and each hour start h of its wait at which
it was blocked (Σ free GPUs ≥ its GPUs, every domain < n whole free nodes), the domains whose
healthy nodes reach n are taken closest to whole first (deficit = n − whole free nodes); the
nodes of the domain held only by small jobs (fewer GPUs than ``large_gpus``) are freed, fewest
occupants and GPUs first, until the deficit is met, with at most ``max_moves`` jobs moved.

**Replay check** (the shared scheduler model places no topology, so the hour is replayed at
node level, as that model places small jobs): every moved job's per-node share of GPUs is put
back, best fit (the node with the fewest free GPUs that suffice, as
:mod:`metrics.scheduler_model` places jobs of at most one node), on the nodes outside the freed
domain: the free GPUs of nodes running attempts at h, and ``free_nodes`` whole nodes per other
domain. A candidate counts only when every share lands and the freed domain then holds n whole
free nodes. Of the candidates (every blocked hour of every job), the largest net gain is kept
first, each large job served once, each domain freed once an hour and each small job moved once
(a freed domain starts one gang).

Expected gain (GPU-hours a week) = Σ over kept jobs of GPUs asked × min(fragmentation delay, its
wait left after h) − the moved jobs' GPU-hours already run at h (work lost if requeued without
a checkpoint), over the window's weeks; expected wait reduction = the mean of the first term's
seconds. A patch (``scontrol requeue``) only where the blocked job is still pending at the
cut-off on a Slurm cluster; a past candidate is evidence for the practice, not a command.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import polars as pl

from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    grade,
    scope_key,
    to_frame,
)

__all__ = ["RULE", "defrag_candidates"]

RULE = "defrag_candidates"

_HOUR = dt.timedelta(hours=1)


def _running(jobs: pl.DataFrame, cluster: str, at: dt.datetime) -> list[dict[str, Any]]:
    """Attempts of ``cluster`` running at ``at`` (start ≤ at < end; an open end runs on)."""
    return (
        jobs.filter(
            (pl.col("cluster") == cluster)
            & pl.col("start_at").is_not_null()
            & (pl.col("start_at") <= at)
            & (pl.col("end_at").is_null() | (pl.col("end_at") > at))
            & (pl.col("node_list").list.len() > 0)
        )
        .select("job_id", "attempt", "gpus", "start_at", "node_list")
        .to_dicts()
    )


def _best_fit(slots: list[float], pieces: list[float]) -> bool:
    """Place each piece (largest first) on the slot with the least room that suffices."""
    room = sorted(slots)
    for piece in sorted(pieces, reverse=True):
        fits = [i for i, r in enumerate(room) if r + 1e-9 >= piece]
        if not fits:
            return False
        i = fits[0]
        room[i] -= piece
        room.sort()
    return True


def _candidate(
    *,
    n: int,
    hour: dt.datetime,
    cap: pl.DataFrame,
    domain_nodes: Mapping[str, list[str]],
    node_gpus: Mapping[str, float],
    running: list[dict[str, Any]],
    large_gpus: float,
    max_moves: int,
) -> list[dict[str, Any]]:
    """The replay-checked moves for one blocked job at one hour start, one per domain that
    passes, closest to whole first."""
    held: dict[str, list[dict[str, Any]]] = {}
    for job in running:
        for node in set(job["node_list"]):
            held.setdefault(node, []).append(job)
    free_whole = {str(r["domain"]): int(r["free_nodes"]) for r in cap.iter_rows(named=True)}
    rows = cap.filter(pl.col("healthy_nodes") >= n).with_columns(
        (n - pl.col("free_nodes")).alias("_deficit")
    )
    out: list[dict[str, Any]] = []
    for r in rows.sort("_deficit", "domain").iter_rows(named=True):
        domain, deficit = str(r["domain"]), int(r["_deficit"])
        nodes = domain_nodes.get(domain, [])
        mine = set(nodes)
        busy = [
            (node, held[node])
            for node in nodes
            if node in held and all(float(j["gpus"]) < large_gpus for j in held[node])
        ]
        busy.sort(key=lambda x: (len(x[1]), sum(float(j["gpus"]) for j in x[1]), x[0]))
        moves: dict[tuple[str, int], dict[str, Any]] = {}
        freed = 0
        for _, occupants in busy:
            if freed >= deficit:
                break
            for j in occupants:
                moves[(str(j["job_id"]), int(j["attempt"]))] = j
            freed = sum(
                1
                for node in nodes
                if node in held and all((str(j["job_id"]), int(j["attempt"])) in moves
                                        for j in held[node])
            )  # fmt: skip
        if freed < deficit or len(moves) > max_moves:
            continue
        slots = [
            node_gpus.get(node, 0.0) - sum(float(j["gpus"]) / len(set(j["node_list"]))
                                           for j in js)
            for node, js in held.items()
            if node not in mine and all((str(j["job_id"]), int(j["attempt"])) not in moves
                                        for j in js)
        ]  # fmt: skip
        gpn = max(node_gpus.values(), default=0.0)
        for other, k in free_whole.items():
            if other != domain:
                slots.extend([gpn] * k)  # whole free nodes: any k of the domain's, all alike
        pieces = [
            float(j["gpus"]) / len(set(j["node_list"])) for j in moves.values()
            for _ in set(j["node_list"])
        ]  # fmt: skip
        if not _best_fit([s for s in slots if s > 0], pieces):
            continue
        out.append({
            "hour": hour,
            "domain": domain,
            "whole_free_trays": int(r["free_nodes"]),
            "deficit_trays": deficit,
            "moves": [
                {
                    "job_id": str(j["job_id"]),
                    "attempt": int(j["attempt"]),
                    "gpus": float(j["gpus"]),
                    "gpu_h_run": float(j["gpus"]) * (hour - j["start_at"]).total_seconds() / 3600,
                }
                for j in sorted(moves.values(), key=lambda j: (str(j["job_id"]), j["attempt"]))
            ],
        })  # fmt: skip
    return out


def _one_each(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates kept, largest net gain first: each large job served once, each domain
    freed once an hour, each small job moved once (a freed domain starts one gang)."""
    served: set[str] = set()
    freed: set[tuple[dt.datetime, str]] = set()
    moved: set[tuple[str, int]] = set()
    kept = []
    for f in sorted(found, key=lambda f: (-f["net_gpu_h"], f["hour"], f["large_job"])):
        jobs = {(m["job_id"], m["attempt"]) for m in f["moves"]}
        if f["large_job"] in served or (f["hour"], f["domain"]) in freed or jobs & moved:
            continue
        served.add(f["large_job"])
        freed.add((f["hour"], f["domain"]))
        moved |= jobs
        kept.append(f)
    return kept


def defrag_candidates(
    causes: pl.LazyFrame | pl.DataFrame,
    capacity: pl.LazyFrame | pl.DataFrame,
    topology: pl.LazyFrame | pl.DataFrame,
    jobs: pl.LazyFrame | pl.DataFrame,
    nodes: pl.LazyFrame | pl.DataFrame,
    window: Window,
    schedulers: Mapping[str, str],
    *,
    as_of: dt.datetime | None = None,
    large_gpus: float = 64.0,
    max_moves: int = 3,
    min_gain_gpu_h_per_week: float = 1.0,
    top: int = 5,
) -> pl.DataFrame:
    """One recommendation per cluster where moving a few small jobs would have freed a whole
    domain for large gangs held by topology.

    Args:
        causes: ``large_job_wait_causes`` rows (``cluster, job_id, attempt, team, req_gpus,
            req_nodes, eligible_at, start_at, wait_s, fragmentation_s``).
        capacity: ``domain_capacity_hourly`` rows at the gang level (``cluster, hour, domain,
            healthy_nodes, free_nodes, free_gpus``).
        topology: the gang level's map (``cluster, domain, node, valid_from, valid_to``).
        jobs: attempts (``cluster, job_id, attempt, gpus, start_at, end_at, node_list``).
        nodes: ``cluster, host, gpus`` (GPUs per node).
        window: the period the evidence covers.
        schedulers: cluster → ``slurm`` | ``kubernetes``.
        as_of: the data cut-off (a still-pending blocked job gets a ``scontrol requeue`` patch
            on Slurm); None = the window's end.
        large_gpus: jobs at or above this many GPUs are never moved.
        max_moves: most jobs moved to free one domain.
        min_gain_gpu_h_per_week: net expected gain below which the rule stays silent.
        top: candidates listed in the evidence (largest gain first).

    Returns:
        :data:`~metrics.recommendations.RECOMMENDATION_SCHEMA` rows (scope: the cluster);
        severity warning, critical when the gain reaches 10 × ``min_gain_gpu_h_per_week``.
    """
    c = causes.lazy().collect()
    cap = capacity.lazy().collect()
    topo = topology.lazy().collect()
    j = jobs.lazy().collect()
    if c.height == 0 or cap.height == 0 or topo.height == 0:
        return empty_recommendations()
    cut = as_of or window.end
    blocked = c.filter((pl.col("fragmentation_s") > 0) & pl.col("req_nodes").is_not_null()).sort(
        "cluster", "eligible_at", "job_id"
    )
    inv = nodes.lazy().collect()
    recs = []
    for cluster in sorted(set(blocked["cluster"].to_list())):
        ccap = cap.filter(pl.col("cluster") == cluster)
        biggest = int(ccap.select(pl.col("healthy_nodes").max().fill_null(0)).item())
        ctopo = topo.filter(pl.col("cluster") == cluster)
        node_gpus = {
            str(h): float(g or 0)
            for h, g in inv.filter(pl.col("cluster") == cluster).select("host", "gpus").iter_rows()
        }
        cj = j.filter(pl.col("cluster") == cluster)
        state: dict[dt.datetime, tuple[dict[str, list[str]], list[dict[str, Any]]]] = {}
        found: list[dict[str, Any]] = []
        for b in blocked.filter(pl.col("cluster") == cluster).iter_rows(named=True):
            n = int(b["req_nodes"])
            if n > biggest:
                continue
            end = b["start_at"] or (b["eligible_at"] + dt.timedelta(seconds=float(b["wait_s"])))
            h = b["eligible_at"].replace(minute=0, second=0, microsecond=0)
            while h < end:
                at = ccap.filter(pl.col("hour") == h)
                if (
                    at.height
                    and float(at["free_gpus"].sum()) >= float(b["req_gpus"])
                    and int(at.select(pl.col("free_nodes").max()).item()) < n
                ):
                    if h not in state:  # the map and running attempts, once an hour
                        valid = ctopo.filter(
                            (pl.col("valid_from").is_null() | (pl.col("valid_from") <= h))
                            & (pl.col("valid_to").is_null() | (pl.col("valid_to") > h))
                        )
                        nodes_of: dict[str, list[str]] = {}
                        for d, node in valid.select("domain", "node").sort("node").iter_rows():
                            nodes_of.setdefault(str(d), []).append(str(node))
                        state[h] = (nodes_of, _running(cj, cluster, h))
                    domain_nodes, running = state[h]
                    for cand in _candidate(
                        n=n, hour=h, cap=at, domain_nodes=domain_nodes, node_gpus=node_gpus,
                        running=running, large_gpus=large_gpus,
                        max_moves=max_moves,
                    ):  # fmt: skip
                        left = (end - max(h, b["eligible_at"])).total_seconds()
                        saved = min(float(b["fragmentation_s"]), left)
                        gain = float(b["req_gpus"]) * saved / 3600
                        cost = sum(m["gpu_h_run"] for m in cand["moves"])
                        found.append(
                            {
                                **cand,
                                "large_job": str(b["job_id"]),
                                "team": b["team"],
                                "req_gpus": float(b["req_gpus"]),
                                "req_trays": n,
                                "saved_s": saved,
                                "gain_gpu_h": gain,
                                "moved_gpu_h_run": cost,
                                "net_gpu_h": gain - cost,
                                "pending_now": b["start_at"] is None and end >= cut,
                            }
                        )
                h += _HOUR
        kept = _one_each([f for f in found if f["net_gpu_h"] > 0])
        if not kept:
            continue
        net = sum(f["net_gpu_h"] for f in kept) / window.weeks
        if net < min_gain_gpu_h_per_week:
            continue
        shown = kept[:top]
        first = shown[0]
        moved = ", ".join(m["job_id"] for m in first["moves"])
        live = [f for f in kept if f["pending_now"]]
        patch = None
        if live and schedulers.get(cluster) == "slurm":
            f = live[0]
            patch = (
                "scontrol requeue " + ",".join(m["job_id"] for m in f["moves"])
                + f"  # frees domain {f['domain']} for job {f['large_job']} "
                f"({f['req_trays']} trays); hold the domain for it until it starts"
            )  # fmt: skip
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=cluster,
                scope=scope_key(cluster=cluster),
                severity=grade(net, min_gain_gpu_h_per_week, 10 * min_gain_gpu_h_per_week),
                window=window,
                evidence={
                    "blocked_large_jobs": blocked.filter(pl.col("cluster") == cluster).height,
                    "jobs_freed_by_moves": len(kept),
                    "gain_gpu_h": sum(f["gain_gpu_h"] for f in kept),
                    "moved_gpu_h_run": sum(f["moved_gpu_h_run"] for f in kept),
                    "replay": "node-level best fit of the moved jobs outside the freed domain",
                    "candidates": [
                        {k: v for k, v in f.items() if k != "pending_now"} for f in shown
                    ],
                },
                change_text=(
                    f"{len(kept)} large job(s) on {cluster} waited on topology while a domain "
                    f"was a few trays short of whole, held by at most {max_moves} small jobs "
                    f"that fit elsewhere. E.g. at {first['hour']:%Y-%m-%d %H:%M} UTC moving "
                    f"{moved} ({sum(m['gpus'] for m in first['moves']):.0f} GPUs) frees "
                    f"domain {first['domain']} for {first['large_job']} "
                    f"({first['req_trays']} trays, {first['saved_s'] / 3600:.1f} h sooner). "
                    "Requeue such jobs (or pin small jobs to already-fragmented domains) when a "
                    "gang waits on topology."
                ),
                confidence=min(1.0, len(kept) / 3),
                expected_gain_gpu_h_per_week=net,
                expected_wait_reduction_s=sum(f["saved_s"] for f in kept) / len(kept),
                patch_kind="scontrol" if patch else None,
                patch_content=patch,
            )
        )
    return to_frame(recs) if recs else empty_recommendations()
