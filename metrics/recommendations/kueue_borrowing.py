"""Kueue quota unused while other queues pend: cohort borrowing, ``borrowingLimit``,
``lendingLimit``.

A ClusterQueue may use unused ``nominalQuota`` of the other ClusterQueues in its cohort, up to
its ``borrowingLimit``, and each lends at most its ``lendingLimit`` [Kueue "Cluster Queue",
cohorts and borrowing]. Per hour: unused(L) = nominal(L) × 3600 − used(L) GPU-seconds (lendable
(L) = min(unused, lendingLimit × 3600) when a limit is set); a pending ClusterQueue B *missed*
min(pending(B), Σ_{L ≠ B} unused(L)) GPU-seconds. When B missed at least
``min_missed_gpu_h_per_week`` over at least ``min_hours`` hours, the knob that stopped it is
named and patched:

1. B and the lenders are not in one cohort → put them in one (``spec.cohort`` /
   ``spec.cohortName``);
2. B was at ``nominalQuota + borrowingLimit`` in those hours → raise B's ``borrowingLimit`` to the
   p90 of what it wanted above its quota (used + pending − nominal), split over its GPU flavors
   by nominal quota (the limit is per flavor; the parts add up to the wanted total);
3. the lenders' ``lendingLimit`` capped what they could give → raise it to the p50 of their unused
   GPUs in those hours (at most the nominal quota).

Patches are JSON merge patches of the ClusterQueues (complete ``resourceGroups`` where a limit
changes, see :mod:`metrics.recommendations._kueue`).

Usage is in physical GPUs; on a cluster whose nodes advertise MIG slices (single strategy) or
time-slicing replicas as ``nvidia.com/gpu``, quota and limits count advertised units, so they
are compared as units × ``gpu_unit`` (GPUs per unit, ``pipelines.core.k8s_gpu_units.
cluster_gpu_units``) and the patches set units again (METRICS.md "Shared ``nvidia.com/gpu``").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from metrics.holds import with_pieces
from metrics.recommendations._kueue import (
    GPU_RESOURCES,
    cohort_of,
    cohort_patch,
    gpu_quotas,
    merge_patch_document,
    merge_patches,
    resource_groups_patch,
)
from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    grade,
    nearest_rank_value,
    scope_key,
    to_frame,
)
from metrics.waterfall import _hour_pieces, _utc_lit

__all__ = ["RULE", "cluster_queue_usage_hourly", "kueue_borrowing"]

RULE = "kueue_borrowing"


def cluster_queue_usage_hourly(
    attempts: pl.LazyFrame | pl.DataFrame,
    pending: pl.LazyFrame | pl.DataFrame,
    window: Window,
    *,
    holds: pl.LazyFrame | None = None,
) -> pl.DataFrame:
    """Used and pending GPU-seconds per ClusterQueue and hour.

    Args:
        attempts: Kubernetes attempts: ``cluster, partition`` (the ClusterQueue), ``gpus,
            eligible_at, start_at, end_at`` (waits before a start count as pending).
        pending: workloads that never started: ``cluster, partition, req_gpus, eligible_at,
            cancel_at`` (NULL: still pending).
        window: spans are cut to it.
        holds: the pieces of held GPUs of the attempts that did not hold ``gpus`` over their
            span (:func:`metrics.holds.with_pieces`; ``attempts`` then needs ``job_id,
            attempt``): used GPU-seconds spread each piece (METRICS.md "GPU holding"), as the
            waterfall does; None: every attempt holds ``gpus`` over ``[start_at, end_at)``.

    Returns:
        ``cluster, cluster_queue, hour, used_gpu_s, pending_gpu_s``.
    """
    w0, w1 = _utc_lit(window.start), _utc_lit(window.end)

    def cut(frame: pl.LazyFrame, start: str, end: str, gpus: str) -> pl.LazyFrame:
        return frame.filter(pl.col("partition").is_not_null()).select(
            "cluster",
            pl.col("partition").alias("cluster_queue"),
            pl.col(gpus).cast(pl.Float64).alias("gpus"),
            pl.max_horizontal(pl.col(start).dt.cast_time_unit("us"), w0).alias("_s"),
            pl.min_horizontal(pl.col(end).dt.cast_time_unit("us").fill_null(w1), w1).alias("_e"),
        )

    a = attempts.lazy()
    used = cut(with_pieces(a, holds), "_ps", "_pe", "_pg").with_columns(pl.lit("used").alias("_k"))
    waited = cut(
        a.filter(pl.col("start_at").is_not_null()), "eligible_at", "start_at", "gpus"
    ).with_columns(pl.lit("pending").alias("_k"))
    never = cut(pending.lazy(), "eligible_at", "cancel_at", "req_gpus").with_columns(
        pl.lit("pending").alias("_k")
    )
    pieces = _hour_pieces(pl.concat([used, waited, never]), "_s", "_e")
    return (
        pieces.group_by("cluster", "cluster_queue", "hour")
        .agg(
            (pl.col("_sec") * pl.col("gpus"))
            .filter(pl.col("_k") == "used")
            .sum()
            .alias("used_gpu_s"),
            (pl.col("_sec") * pl.col("gpus"))
            .filter(pl.col("_k") == "pending")
            .sum()
            .alias("pending_gpu_s"),
        )
        .sort("cluster", "cluster_queue", "hour")
        .collect()
    )


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


@dataclass(frozen=True)
class _Cq:
    """A ClusterQueue's GPU quota summed over its GPU flavors, in the resource's units
    (``nominal``, the limits, as the object writes them) and in GPUs (``×`` ``unit``)."""

    nominal: float
    borrowing_limit: float | None
    lending_limit: float | None
    cohort: str | None
    flavors: list[tuple[str, str, float]]
    unit: float = 1.0

    @property
    def nominal_gpus(self) -> float:
        return self.nominal * self.unit

    @property
    def borrowing_limit_gpus(self) -> float | None:
        return None if self.borrowing_limit is None else self.borrowing_limit * self.unit

    @property
    def lending_limit_gpus(self) -> float | None:
        return None if self.lending_limit is None else self.lending_limit * self.unit


def _summarise(quotas: pl.DataFrame, obj: Mapping[str, Any], unit: float = 1.0) -> _Cq:
    """One ClusterQueue's GPU quota. Flavors with a zero nominal quota are placeholders (no
    hardware of that flavor for the queue) and leave the limits alone, unless all are zero."""
    real = quotas.filter(pl.col("nominal_quota") > 0)
    real = real if real.height else quotas
    return _Cq(
        nominal=float(quotas["nominal_quota"].sum()),
        borrowing_limit=_limit_sum(real["borrowing_limit"].to_list()),
        lending_limit=_limit_sum(real["lending_limit"].to_list()),
        cohort=cohort_of(obj),
        unit=unit,
        flavors=[
            (str(f), str(r), float(n))
            for f, r, n in real.select("flavor", "resource", "nominal_quota").rows()
        ],
    )


def _split(total: int, weights: list[float]) -> list[int]:
    """``total`` as whole parts in proportion to ``weights`` that add up to it (largest
    remainders first; equal parts where the weights are all 0)."""
    if not weights:
        return []
    w = weights if sum(weights) > 0 else [1.0] * len(weights)
    exact = [total * x / sum(w) for x in w]
    parts = [math.floor(e) for e in exact]
    order = sorted(range(len(w)), key=lambda i: exact[i] - parts[i], reverse=True)
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


def _limit_sum(values: list[float | None]) -> float | None:
    """Σ of per-flavor limits; None (no limit) if any flavor has none."""
    return None if any(v is None for v in values) else float(sum(v or 0.0 for v in values))


def kueue_borrowing(
    usage_hourly: pl.DataFrame,
    cluster_queues: Sequence[Mapping[str, Any]],
    window: Window,
    *,
    cluster: str,
    min_missed_gpu_h_per_week: float = 20.0,
    min_hours: int = 3,
    gpu_resources: Sequence[str] = GPU_RESOURCES,
    gpu_unit: float = 1.0,
) -> pl.DataFrame:
    """Borrowing / lending recommendations for ClusterQueues that pended beside unused quota.

    Args:
        usage_hourly: :func:`cluster_queue_usage_hourly` of the cluster.
        cluster_queues: the cluster's ClusterQueue objects (``kubectl get clusterqueues -o
            json`` items).
        window: the period considered.
        cluster: the Kubernetes cluster.
        min_missed_gpu_h_per_week: missed GPU-hours a week at or above which the rule fires.
        min_hours: and in at least this many hours.
        gpu_resources: resource names counted as GPUs.
        gpu_unit: GPUs one unit of quota is worth on the cluster's nodes (1; 1/R under
            time-slicing with R replicas, a MIG slice's fraction under the single strategy):
            quota and limits are compared with the GPU usage as units × ``gpu_unit``, and the
            patches set whole units (a wanted borrowing rounded up, a lendable spare down).

    Returns:
        One recommendation per pending ClusterQueue (patch ``kubernetes-merge-patch``, one
        YAML document per ClusterQueue changed); gain = missed GPU-hours a week; confidence =
        min(1, hours ÷ (4 · min_hours)); severity critical at 4× the floor.
    """
    quotas = gpu_quotas(cluster_queues, gpu_resources)
    if quotas.height == 0 or usage_hourly.height == 0:
        return empty_recommendations()
    objects = {str((o.get("metadata") or {}).get("name")): o for o in cluster_queues}
    per_cq = {
        str(cq): _summarise(g, objects[str(cq)], gpu_unit)
        for (cq,), g in quotas.group_by("cluster_queue")
    }
    usage = usage_hourly.filter(
        (pl.col("cluster") == cluster) & pl.col("cluster_queue").is_in(list(per_cq))
    )
    hours = usage.select("hour").unique().sort("hour")["hour"].to_list()
    grid = pl.DataFrame({"hour": hours}, schema={"hour": usage.schema["hour"]}).join(
        pl.DataFrame({"cluster_queue": sorted(per_cq)}), how="cross"
    )
    full = (
        grid.join(usage.drop("cluster"), on=["hour", "cluster_queue"], how="left")
        .with_columns(pl.col("used_gpu_s", "pending_gpu_s").fill_null(0.0))
        .with_columns(
            pl.col("cluster_queue")
            .replace_strict({k: v.nominal_gpus for k, v in per_cq.items()}, return_dtype=pl.Float64)
            .alias("_nominal")
        )
        .with_columns(
            (pl.col("_nominal") * 3600 - pl.col("used_gpu_s"))
            .clip(lower_bound=0.0)
            .alias("_unused")
        )
    )
    recs = []
    for b in sorted(per_cq):
        mine = full.filter((pl.col("cluster_queue") == b) & (pl.col("pending_gpu_s") > 0))
        if mine.height == 0:
            continue
        lenders = full.filter(pl.col("cluster_queue") != b)
        pool = lenders.group_by("hour").agg(pl.col("_unused").sum().alias("_pool"))
        missed = (
            mine.join(pool, on="hour", how="inner")
            .with_columns(pl.min_horizontal("pending_gpu_s", "_pool").alias("_missed"))
            .filter(pl.col("_missed") > 0)
        )
        missed_h = float(missed["_missed"].sum()) / 3600
        per_week = missed_h / window.weeks
        if per_week < min_missed_gpu_h_per_week or missed.height < min_hours:
            continue
        by_lender = (
            lenders.join(missed.select("hour"), on="hour", how="inner")
            .group_by("cluster_queue")
            .agg(pl.col("_unused").alias("_u"), pl.col("_unused").sum().alias("_tot"))
            .filter(pl.col("_tot") > 0)
            .sort("cluster_queue")
        )
        lender_names = by_lender["cluster_queue"].to_list()
        info = per_cq[b]
        patches: dict[str, list[dict[str, Any]]] = {}
        reasons: list[str] = []
        cohorts = {per_cq[n].cohort for n in lender_names}
        if info.cohort is None or any(per_cq[n].cohort != info.cohort for n in lender_names):
            shared = info.cohort or next(
                (c for c in sorted(str(x) for x in cohorts if x)), f"goodput-{cluster}"
            )
            for name in [b, *lender_names]:
                if per_cq[name].cohort != shared:
                    patches.setdefault(name, []).append(cohort_patch(objects[name], shared))
            reasons.append(f"put {b} and {', '.join(lender_names)} in cohort {shared}")
        wanted = [
            (u + p) / 3600 - info.nominal_gpus
            for u, p in zip(
                missed["used_gpu_s"].to_list(), missed["pending_gpu_s"].to_list(), strict=True
            )
        ]
        # in whole units of the resource, rounded up (1e-9: a want of exactly N units is N)
        want = math.ceil((nearest_rank_value(wanted, 0.9) or 0.0) / gpu_unit - 1e-9)
        used_over = [u / 3600 - info.nominal_gpus for u in missed["used_gpu_s"].to_list()]
        limit = info.borrowing_limit
        limit_gpus = info.borrowing_limit_gpus
        if (
            limit is not None
            and limit_gpus is not None
            and want > limit
            and max(used_over, default=0.0) >= limit_gpus - 1e-6
        ):
            # the limit is per flavor and the want is B's in all: split by nominal quota
            shares = _split(want, [float(n) for _, _, n in info.flavors])
            changes = {
                (str(f), str(r)): {"borrowingLimit": float(n)}
                for (f, r, _), n in zip(info.flavors, shares, strict=True)
            }
            patches.setdefault(b, []).append(resource_groups_patch(objects[b], changes))
            reasons.append(f"raise {b}'s borrowingLimit from {limit:g} to {want}")
        for row in by_lender.iter_rows(named=True):
            name = str(row["cluster_queue"])
            lend = per_cq[name].lending_limit
            spare = math.floor((nearest_rank_value(row["_u"], 0.5) or 0.0) / 3600 / gpu_unit + 1e-9)
            target = min(per_cq[name].nominal, float(spare))
            if lend is not None and target > lend:
                flav = per_cq[name].flavors
                total_nom = sum(float(n) for _, _, n in flav) or 1.0
                changes = {
                    (str(f), str(r)): {
                        "lendingLimit": float(math.floor(target * float(n) / total_nom))
                    }
                    for f, r, n in flav
                }
                patches.setdefault(name, []).append(resource_groups_patch(objects[name], changes))
                reasons.append(f"raise {name}'s lendingLimit from {lend:g} to {target:g}")
        if not patches:
            continue
        docs = [
            merge_patch_document(merge_patches(ps), comment=f"kueue borrowing for {b}")
            for _, ps in sorted(patches.items())
        ]
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=cluster,
                scope=scope_key(cluster=cluster, clusterqueue=b),
                severity=grade(per_week, min_missed_gpu_h_per_week, 4 * min_missed_gpu_h_per_week),
                window=window,
                evidence={
                    "cluster_queue": b,
                    "cohort": info.cohort,
                    "nominal_gpus": info.nominal_gpus,
                    "borrowing_limit": info.borrowing_limit,
                    "gpus_per_quota_unit": gpu_unit,
                    "pending_hours_beside_unused_quota": missed.height,
                    "missed_gpu_h": missed_h,
                    "missed_gpu_h_per_week": per_week,
                    "p90_wanted_above_quota_gpus": want * gpu_unit,
                    "lenders": {
                        str(r["cluster_queue"]): {
                            "cohort": per_cq[str(r["cluster_queue"])].cohort,
                            "nominal_gpus": per_cq[str(r["cluster_queue"])].nominal_gpus,
                            "lending_limit": per_cq[str(r["cluster_queue"])].lending_limit,
                            "unused_gpu_h_in_those_hours": float(r["_tot"]) / 3600,
                        }
                        for r in by_lender.iter_rows(named=True)
                    },
                },
                change_text=(
                    f"ClusterQueue {b} had work pending in {missed.height} hours while "
                    f"{', '.join(lender_names)} left GPU quota unused: {per_week:.0f} GPU-h a "
                    f"week could have run. {_sentence('; '.join(reasons))}."
                ),
                confidence=min(1.0, missed.height / (4 * min_hours)),
                expected_gain_gpu_h_per_week=per_week,
                patch_kind="kubernetes-merge-patch",
                patch_content="---\n".join(docs),
            )
        )
    return to_frame(recs) if recs else empty_recommendations()
