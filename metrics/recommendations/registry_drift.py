"""Registry vs scheduler drift: the schedulers' shares should be the allocation registry's.

Slurm: each top-level account's ``RawShares`` (``sshare``) should be the registry share of its
team × one scale (fair-share shares are relative, so only the ratio matters [Slurm "Classic
Fairshare Algorithm"]); the scale is the median RawShares ÷ share over the mapped accounts, so a
site that writes shares × 100 keeps doing so. An account off by more than ``tolerance``
(relative) gets ``sacctmgr -i modify account name=<acct> set fairshare=<N>``.

Kueue: within a cohort, a ClusterQueue's GPU ``nominalQuota`` should be its teams' part of the
cohort's GPU quota: Q_cq = Q_cohort × Σ share(teams of cq) ÷ Σ share(teams of the cohort), teams
found through their LocalQueues. A ClusterQueue off by more than ``tolerance`` gets a merge
patch of its ``resourceGroups`` (each GPU flavor scaled by the same factor, whole GPUs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from metrics.drift import (
    account_shares,
    cluster_queue_teams,
    kueue_quota_shares,
    slurm_share_drift,
)
from metrics.recommendations._kueue import (
    GPU_RESOURCES,
    gpu_quotas,
    merge_patch_document,
    resource_groups_patch,
)
from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    grade,
    scope_key,
    to_frame,
)

__all__ = ["KUEUE_RULE", "SLURM_RULE", "kueue_quota_drift", "slurm_fairshare_drift"]

SLURM_RULE = "registry_drift_slurm"
KUEUE_RULE = "registry_drift_kueue"


def slurm_fairshare_drift(
    teams: pl.DataFrame,
    mapping: pl.DataFrame,
    sshare: pl.LazyFrame | pl.DataFrame,
    window: Window,
    *,
    tolerance: float = 0.2,
    capacity_gpu_h_per_week: Mapping[str, float] | None = None,
) -> pl.DataFrame:
    """``sacctmgr`` fairshare changes for accounts whose RawShares drifted from the registry.

    Args:
        teams: registry ``team, share``.
        mapping: registry ``kind, key, team`` (``kind = slurm_account`` rows are used).
        sshare: ``sshare -a -l -P`` rows (``raw.sshare``: ``cluster, account, user_name,
            raw_shares, norm_shares``); account rows are those with NULL ``user_name``. The
            latest snapshot per cluster should be passed.
        window: the period of the snapshot (for the evidence).
        tolerance: relative drift that fires: |scheduler normalised share − registry
            normalised share| ÷ registry normalised share, the ``registry_drift`` view's
            measure (:func:`metrics.drift.slurm_share_drift`); the fairshare proposed is the
            registry share × the site's RawShares per unit of share (the accounts' median).
        capacity_gpu_h_per_week: cluster → available GPU-hours a week; with it the gain is the
            GPU-hours a week of entitlement the drift moves (|Δ normalised share| × capacity).

    Returns:
        One recommendation per drifted account; confidence 0.9 (a configuration fact, not a
        statistic); severity critical when the drift is ≥ 50 %.
    """
    acct = account_shares(teams, mapping, "slurm_account")
    rows = slurm_share_drift(acct, sshare.lazy()).collect()
    recs = []
    for (cluster,), part in rows.group_by("cluster", maintain_order=True):
        ratios = sorted((part["raw_shares"] / part["share"]).to_list())
        # RawShares per unit of registry share the site uses (median, lower middle): the
        # fairshare proposed leaves the other accounts as they are
        scale = ratios[(len(ratios) - 1) // 2]
        for r in part.iter_rows(named=True):
            reg_norm = float(r["registry_normalised_share"])
            sched_norm = float(r["scheduler_normalised_share"])
            expected = max(1, round(float(r["share"]) * scale))
            raw = int(r["raw_shares"])
            # the registry_drift view's measure (metrics.drift): the normalised configured
            # share against the normalised registry share (before: RawShares against the
            # lower-middle scale, which with two accounts always flagged the larger one)
            drift = abs(sched_norm - reg_norm) / reg_norm if reg_norm > 0 else 0.0
            if drift <= tolerance or raw == expected:
                continue
            cap = (capacity_gpu_h_per_week or {}).get(str(cluster))
            gain = abs(reg_norm - sched_norm) * cap if cap is not None else None
            account = str(r["account"])
            recs.append(
                Recommendation(
                    rule=SLURM_RULE,
                    cluster=str(cluster),
                    scope=scope_key(cluster=str(cluster), account=account),
                    severity=grade(drift, tolerance, 0.5),
                    window=window,
                    evidence={
                        "team": r["team"],
                        "registry_share": float(r["share"]),
                        "registry_normalised_share": reg_norm,
                        "raw_shares": raw,
                        "norm_shares": r.get("norm_shares"),
                        "scheduler_normalised_share": sched_norm,
                        "expected_raw_shares": expected,
                        "scale": scale,
                        "relative_drift": drift,
                    },
                    change_text=(
                        f"Slurm account {account} (team {r['team']}) has RawShares {raw}, "
                        f"{sched_norm:.1%} of the cluster's; the registry gives it "
                        f"{reg_norm:.1%}: share {float(r['share']):g} × {scale:g} = "
                        f"{expected}. Set it from the registry."
                    ),
                    confidence=0.9,
                    expected_gain_gpu_h_per_week=gain,
                    patch_kind="sacctmgr",
                    patch_content=(
                        f"sacctmgr -i modify account name={account} set fairshare={expected}"
                    ),
                )
            )
    return to_frame(recs) if recs else empty_recommendations()


def _largest_remainder(total: int, weights: Sequence[float]) -> list[int]:
    """Split ``total`` into integers proportional to ``weights`` (largest remainder)."""
    s = sum(weights)
    if s <= 0:
        return [0 for _ in weights]
    raw = [total * w / s for w in weights]
    out = [math.floor(x) for x in raw]
    order = sorted(range(len(raw)), key=lambda i: (out[i] - raw[i], i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def kueue_quota_drift(
    teams: pl.DataFrame,
    mapping: pl.DataFrame,
    cluster_queues: Sequence[Mapping[str, Any]],
    local_queues: Sequence[Mapping[str, Any]],
    window: Window,
    *,
    cluster: str,
    tolerance: float = 0.2,
    gpu_resources: Sequence[str] = GPU_RESOURCES,
) -> pl.DataFrame:
    """ClusterQueue ``nominalQuota`` merge patches that restore the registry's proportions.

    Args:
        teams: registry ``team, share``.
        mapping: registry ``kind, key, team``; a LocalQueue's team is its ``k8s_local_queue``
            entry, else its namespace's ``k8s_namespace`` entry.
        cluster_queues: ClusterQueue objects (``kubectl get clusterqueues -o json`` items).
        local_queues: LocalQueue objects (``namespace``, ``name``, ``spec.clusterQueue``).
        window: the period of the snapshot (for the evidence).
        cluster: the Kubernetes cluster they belong to.
        tolerance: relative drift |Q − expected| ÷ expected that fires.
        gpu_resources: resource names counted as GPUs.

    Returns:
        One recommendation per drifted ClusterQueue; gain = |Q − expected| GPUs × 168 h (the
        quota-hours a week moved between teams); confidence 0.9.
    """
    quotas = gpu_quotas(cluster_queues, gpu_resources)
    lq_rows = [
        {
            "namespace": (lq.get("metadata") or {}).get("namespace"),
            "name": (lq.get("metadata") or {}).get("name"),
            "cluster_queue": (lq.get("spec") or {}).get("clusterQueue"),
        }
        for lq in local_queues
    ]
    lq_frame = pl.DataFrame(
        lq_rows,
        schema={"namespace": pl.String(), "name": pl.String(), "cluster_queue": pl.String()},
    )
    cq_teams = cluster_queue_teams(lq_frame, mapping)
    objects = {str((o.get("metadata") or {}).get("name")): o for o in cluster_queues}
    per_cq = kueue_quota_shares(quotas.lazy(), cq_teams, teams).collect()
    recs = []
    for (cohort, resource), grp in per_cq.group_by("cohort", "resource", maintain_order=True):
        total = round(float(grp["quota"].sum()))
        expected = _largest_remainder(total, grp["weight"].to_list())
        weight_sum = float(grp["weight"].sum())
        for r, want in zip(grp.iter_rows(named=True), expected, strict=True):
            have = float(r["quota"])
            if want <= 0 or abs(have - want) / want <= tolerance:
                continue
            cq = str(r["cluster_queue"])
            flavors = quotas.filter(
                (pl.col("cluster_queue") == cq) & (pl.col("resource") == resource)
            ).sort("flavor")
            old = flavors["nominal_quota"].to_list()
            new = _largest_remainder(want, old) if sum(old) > 0 else [want] + [0] * (len(old) - 1)
            changes: dict[tuple[str, str], Mapping[str, float | None]] = {
                (str(f), str(resource)): {"nominalQuota": float(n)}
                for f, n in zip(flavors["flavor"].to_list(), new, strict=True)
            }
            patch = resource_groups_patch(objects[cq], changes)
            team_list = [str(t) for t in r["teams"]]
            drift = abs(have - want) / want
            recs.append(
                Recommendation(
                    rule=KUEUE_RULE,
                    cluster=cluster,
                    scope=scope_key(cluster=cluster, clusterqueue=cq, resource=str(resource)),
                    severity=grade(drift, tolerance, 0.5),
                    window=window,
                    evidence={
                        "cohort": cohort,
                        "teams": team_list,
                        "registry_share": float(r["weight"]),
                        "cohort_registry_share": weight_sum,
                        "cohort_nominal_gpus": total,
                        "nominal_gpus": have,
                        "expected_nominal_gpus": want,
                        "relative_drift": drift,
                        "flavors": dict(zip(flavors["flavor"].to_list(), new, strict=True)),
                    },
                    change_text=(
                        f"ClusterQueue {cq} (teams {', '.join(team_list)}) has {have:g} "
                        f"{resource} of cohort {cohort}'s {total}; the registry shares give "
                        f"{want}. Set nominalQuota from the registry."
                    ),
                    confidence=0.9,
                    expected_gain_gpu_h_per_week=abs(have - want) * 168.0,
                    patch_kind="kubernetes-merge-patch",
                    patch_content=merge_patch_document(
                        patch, comment=f"registry drift: {resource} nominalQuota {have:g} → {want}"
                    ),
                )
            )
    return to_frame(recs) if recs else empty_recommendations()
