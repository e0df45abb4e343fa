"""Idle reservations: Slurm reservations whose reserved GPUs the jobs inside them barely use.

A reservation sets nodes aside for some users during its window; while it is active no other job
may run there [Slurm, "Advanced Resource Reservation Guide"], so GPUs it holds that its own jobs
do not use are lost to everyone. Per reservation (``cluster``, ``name``), over its occurrences
inside the evidence window (a ``DAILY``/``WEEKLY`` reservation has one per day/week; ``MAINT``
reservations are skipped: they are meant to be empty):

- reserved GPU-seconds = Σ over occurrences of the occurrence's time in the window × the GPUs on
  its nodes (the node inventory's ``gpus``; the reservation's ``gres/gpu`` TRES when none of its
  nodes is known);
- used GPU-seconds = Σ over job attempts of the cluster that ran on a reserved node during an
  occurrence: overlap seconds × the attempt's GPUs × (its reserved nodes ÷ its nodes). Jobs on a
  reserved node during the occurrence are the reservation's jobs (nothing else may run there),
  so the ``jobs`` view's ``node_list`` is enough; its ``Reservation`` sacct field is not needed;
- idle share = 1 − used ÷ reserved.

A reservation with at least ``min_reserved_gpu_h`` reserved GPU-hours and an idle share of at
least ``min_idle_share`` gets a change [scontrol(1), ``update`` / ``delete`` of a
``ReservationName``]:

- **remove** (``scontrol delete reservationname=R``) when the idle share is at least
  ``remove_idle_share`` or no job used it; gain = its idle GPU-hours a week (the work it did hold
  still needs GPUs, elsewhere);
- **shrink** (``scontrol update reservationname=R nodes=<kept>``) otherwise, to N nodes = the
  most reserved nodes jobs touched in any one occurrence (so no occurrence seen would have lacked
  room), keeping the N nodes with the most used GPU-seconds (ties: host name); gain = the dropped
  nodes' reserved minus used GPU-hours a week. When N is not below the node count (use spread
  thin over every node) no change is proposed.

Confidence = min(1, reserved hours observed ÷ ``full_confidence_h``): one short occurrence says
little, two days of reserved time is a pattern.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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

__all__ = ["RULE", "reservation_usage", "reservations_idle"]

RULE = "reservation_idle"

#: Columns of :func:`reservation_usage`, one row per reservation occurrence in the window.
USAGE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "name": pl.String(),
    "start_at": pl.Datetime("us", "UTC"),
    "end_at": pl.Datetime("us", "UTC"),
    "flags": pl.List(pl.String()),
    "nodes": pl.List(pl.String()),
    "reserved_gpus": pl.Float64(),
    "reserved_gpu_s": pl.Float64(),
    "used_gpu_s": pl.Float64(),
    "nodes_used": pl.Int64(),
}

_USED_BY = pl.List(pl.Struct({"host": pl.String(), "used_gpu_s": pl.Float64()}))


def _occurrences(reservations: pl.DataFrame, window: Window) -> pl.DataFrame:
    """Distinct occurrences ``(cluster, name, start_at, end_at)`` overlapping the window, not
    MAINT, with nodes; the row with the most nodes wins when snapshot and history disagree."""
    if reservations.is_empty():
        return reservations
    w0, w1 = window.start, window.end
    return (
        reservations.filter(
            pl.col("start_at").is_not_null()
            & pl.col("end_at").is_not_null()
            & (pl.col("end_at") > w0)
            & (pl.col("start_at") < w1)
            & ~pl.col("maint").fill_null(False)
            & (pl.col("nodes").list.len() > 0)
        )
        .with_columns(pl.col("nodes").list.len().alias("_n"))
        .sort(["cluster", "name", "start_at", "end_at", "_n"], descending=[False] * 4 + [True])
        .unique(["cluster", "name", "start_at", "end_at"], keep="first", maintain_order=True)
        .drop("_n")
    )


def reservation_usage(
    reservations: pl.LazyFrame | pl.DataFrame,
    jobs: pl.LazyFrame | pl.DataFrame,
    nodes: pl.LazyFrame | pl.DataFrame,
    window: Window,
) -> pl.DataFrame:
    """Reserved and used GPU-seconds of each reservation occurrence inside ``window``.

    Args:
        reservations: ``raw.slurm_reservations`` rows (``cluster, name, start_at, end_at, nodes,
            flags, maint, gpus``); snapshot and history rows of one occurrence are merged.
        jobs: the ``jobs`` view (``cluster, gpus, start_at, end_at, node_list``); a NULL
            ``end_at`` runs to the window end.
        nodes: the node inventory (``cluster, host, gpus``).
        window: the evidence window; occurrences are clipped to it.

    Returns:
        :data:`USAGE_SCHEMA` rows sorted by ``cluster, name, start_at``: ``reserved_gpus`` the
        GPUs on the reservation's nodes, ``reserved_gpu_s`` those × the clipped occurrence
        seconds, ``used_gpu_s`` the module docstring's used GPU-seconds, ``nodes_used`` distinct
        reserved nodes any job ran on during the occurrence. Per-node used GPU-seconds are in a
        ``used_by_node`` struct list column (``host``, ``used_gpu_s``).
    """
    res = _occurrences(reservations.lazy().collect(), window)
    schema = {**USAGE_SCHEMA, "used_by_node": _USED_BY}
    if res.is_empty():
        return pl.DataFrame(schema=schema)
    inv = nodes.lazy().collect()
    gpus_of = {
        (str(r["cluster"]), str(r["host"])): float(r["gpus"] or 0.0)
        for r in inv.select("cluster", "host", "gpus").iter_rows(named=True)
    }
    job_rows = (
        jobs.lazy()
        .filter(pl.col("start_at").is_not_null() & (pl.col("gpus").fill_null(0) > 0))
        .select("cluster", "gpus", "start_at", "end_at", "node_list")
        .collect()
    )
    by_cluster: dict[str, list[dict[str, Any]]] = {}
    for j in job_rows.iter_rows(named=True):
        by_cluster.setdefault(str(j["cluster"]), []).append(j)
    rows = []
    for r in res.iter_rows(named=True):
        cluster = str(r["cluster"])
        hosts: list[str] = list(r["nodes"] or [])
        host_set = set(hosts)
        a = max(r["start_at"], window.start)
        b = min(r["end_at"], window.end)
        seconds = max(0.0, (b - a).total_seconds())
        known = [gpus_of[(cluster, h)] for h in hosts if (cluster, h) in gpus_of]
        reserved_gpus = sum(known) if known else float(r.get("gpus") or 0.0)
        used_by: dict[str, float] = {}
        for j in by_cluster.get(cluster, []):
            on = [h for h in (j["node_list"] or []) if h in host_set]
            if not on:
                continue
            end = j["end_at"] if j["end_at"] is not None else window.end
            overlap = (min(end, b) - max(j["start_at"], a)).total_seconds()
            if overlap <= 0:
                continue
            per_node = float(j["gpus"]) / len(j["node_list"])
            for h in on:
                used_by[h] = used_by.get(h, 0.0) + overlap * per_node
        rows.append(
            {
                "cluster": cluster,
                "name": str(r["name"]),
                "start_at": a,
                "end_at": b,
                "flags": list(r.get("flags") or []),
                "nodes": hosts,
                "reserved_gpus": reserved_gpus,
                "reserved_gpu_s": reserved_gpus * seconds,
                "used_gpu_s": sum(used_by.values()),
                "nodes_used": len(used_by),
                "used_by_node": [{"host": h, "used_gpu_s": s} for h, s in sorted(used_by.items())],
            }
        )
    return pl.DataFrame(rows, schema=schema).sort("cluster", "name", "start_at")


def _kept_nodes(hosts: Sequence[str], used: Mapping[str, float], n: int) -> list[str]:
    """The ``n`` hosts with the most used GPU-seconds (ties: host name), in host order."""
    ranked = sorted(hosts, key=lambda h: (-used.get(h, 0.0), h))[:n]
    return sorted(ranked)


def reservations_idle(
    reservations: pl.LazyFrame | pl.DataFrame,
    jobs: pl.LazyFrame | pl.DataFrame,
    nodes: pl.LazyFrame | pl.DataFrame,
    window: Window,
    *,
    min_idle_share: float = 0.5,
    remove_idle_share: float = 0.9,
    min_reserved_gpu_h: float = 8.0,
    full_confidence_h: float = 48.0,
) -> pl.DataFrame:
    """Shrink-or-remove recommendations for reservations whose GPUs sit mostly unused.

    Args:
        reservations: ``raw.slurm_reservations`` rows (see :func:`reservation_usage`).
        jobs: the ``jobs`` view (``cluster, gpus, start_at, end_at, node_list``).
        nodes: the node inventory (``cluster, host, gpus``).
        window: the evidence window.
        min_idle_share: idle share (0–1) at or above which a reservation is flagged.
        remove_idle_share: idle share at or above which removal, not shrinking, is proposed.
        min_reserved_gpu_h: reserved GPU-hours in the window at least (ignore tiny ones).
        full_confidence_h: reserved hours observed for confidence 1.

    Returns:
        One recommendation per flagged reservation
        (:data:`~metrics.recommendations.RECOMMENDATION_SCHEMA`), ``patch_kind`` ``scontrol``;
        evidence ``reserved_gpu_h, used_gpu_h, idle_share, occurrences, reserved_hours,
        node_count, gpus, peak_nodes_used, flags, action`` (+ ``kept_nodes`` when shrinking);
        severity critical at ``remove_idle_share``, warning from 0.75, else info.
    """
    usage = reservation_usage(reservations, jobs, nodes, window)
    if usage.is_empty():
        return empty_recommendations()
    recs = []
    for (cluster, name), occ in usage.group_by(["cluster", "name"], maintain_order=True):
        reserved_s = float(occ["reserved_gpu_s"].sum())
        used_s = float(occ["used_gpu_s"].sum())
        if reserved_s <= 0 or reserved_s / 3600 < min_reserved_gpu_h:
            continue
        idle = 1.0 - used_s / reserved_s
        if idle < min_idle_share:
            continue
        last = occ.row(occ.height - 1, named=True)
        hosts: list[str] = list(last["nodes"])
        gpus = float(last["reserved_gpus"])
        peak = int(occ.select(pl.col("nodes_used").max()).item() or 0)
        spans = zip(occ["start_at"], occ["end_at"], strict=True)
        hours = sum((e - s).total_seconds() for s, e in spans) / 3600
        used_by: dict[str, float] = {}
        for lst in occ["used_by_node"].to_list():
            for item in lst or []:
                used_by[item["host"]] = used_by.get(item["host"], 0.0) + float(item["used_gpu_s"])
        evidence: dict[str, Any] = {
            "reservation": str(name),
            "reserved_gpu_h": reserved_s / 3600,
            "used_gpu_h": used_s / 3600,
            "idle_share": idle,
            "occurrences": occ.height,
            "reserved_hours": hours,
            "node_count": len(hosts),
            "gpus": gpus,
            "peak_nodes_used": peak,
            "flags": list(last["flags"] or []),
        }
        if idle >= remove_idle_share or peak == 0:
            action = "remove"
            gain_s = reserved_s - used_s
            content = f"scontrol delete reservationname={name}"
            text = (
                f"Remove reservation {name}: its {len(hosts)} nodes ({gpus:.0f} GPUs) were "
                f"reserved for {reserved_s / 3600:.0f} GPU-h over {occ.height} occurrence(s) and "
                f"its jobs used {used_s / 3600:.1f} GPU-h ({idle:.0%} idle)."
            )
        elif peak < len(hosts):
            action = "shrink"
            kept = _kept_nodes(hosts, used_by, peak)
            per_host_s = {h: 0.0 for h in hosts}
            inv = nodes.lazy().collect()
            gpn = {
                str(r["host"]): float(r["gpus"] or 0.0)
                for r in inv.filter(pl.col("cluster") == cluster).iter_rows(named=True)
            }
            for s, e, occ_hosts in zip(occ["start_at"], occ["end_at"], occ["nodes"], strict=True):
                for h in occ_hosts:
                    per_host_s[h] = (
                        per_host_s.get(h, 0.0)
                        + gpn.get(h, gpus / max(1, len(hosts))) * (e - s).total_seconds()
                    )
            dropped = [h for h in hosts if h not in kept]
            gain_s = sum(per_host_s.get(h, 0.0) - used_by.get(h, 0.0) for h in dropped)
            content = f"scontrol update reservationname={name} nodes={','.join(kept)}"
            evidence["kept_nodes"] = kept
            text = (
                f"Shrink reservation {name} from {len(hosts)} to {peak} node(s) "
                f"({', '.join(kept)}): its jobs used {used_s / 3600:.1f} of "
                f"{reserved_s / 3600:.0f} reserved GPU-h ({idle:.0%} idle) and touched no more "
                f"than {peak} distinct nodes of it in any one occurrence (a bound on the nodes "
                "busy at once)."
            )
        else:
            continue
        evidence["action"] = action
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=str(cluster),
                scope=scope_key(cluster=str(cluster), reservation=str(name)),
                severity=grade(idle, 0.75, remove_idle_share),
                window=window,
                evidence=evidence,
                change_text=text,
                confidence=min(1.0, hours / full_confidence_h) if full_confidence_h > 0 else 1.0,
                expected_gain_gpu_h_per_week=max(0.0, gain_s) / 3600 / window.weeks,
                patch_kind="scontrol",
                patch_content=content,
            )
        )
    return to_frame(recs) if recs else empty_recommendations()
