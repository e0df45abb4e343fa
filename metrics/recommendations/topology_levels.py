"""Topology settings per job class: where a team's gangs of one size are mostly placed over more
domains than they need, set the scheduler's topology knob for them.

Evidence is ``job_placement`` at the gang level (the finest level whose domains hold more than
one node; METRICS.md "Topology and gang placement"): per class (team × N nodes, N > 1) the share
of attempts placed on the fewest domains possible (``domains_used = domains_min``). When that
share is under ``max_optimal_share`` over at least ``min_attempts`` attempts, the rule proposes,
relative to the configuration in force:

- **Slurm ``topology/block``** [topology.conf(5) ``BlockSizes``; sbatch(1) ``--segment``]:
  a class that fits one block (N ≤ H, the base block) is spread because nothing kept it whole:
  submit it with ``--segment=N`` (a segment must lie in one block). A larger class needs a
  planning size that holds it: ``BlockSizes`` gains the power-of-two aggregate H·2^k ≥ N
  (Slurm's aggregates are power-of-two multiples of the base block) when the sizes in force lack
  it; if they have it, ``--segment=H`` keeps each block's share whole.
- **Slurm ``topology/tree``** (or a ``topology.yaml`` default topology that is ``flat``):
  ``TopologyPlugin=topology/block`` (a ``slurm.conf`` patch) with
  one block per gang domain and ``BlockSizes`` = H, 2H, … up to the class (tree keeps a job
  under one switch only with ``--switches``, which waits at most ``max_switch_wait``).
- **Kubernetes (Kueue TAS)**: the class's pod sets get the annotation
  ``kueue.x-k8s.io/podset-required-topology: <gang level's node label>`` (N ≤ H), or
  ``kueue.x-k8s.io/podset-slice-required-topology: <label>`` with
  ``kueue.x-k8s.io/podset-slice-size: H`` (N > H, whole domains per slice). With the cluster's
  Kueue ``Topology`` levels known (``spec.levels[].nodeLabel``), the annotation names the node
  label of the gang level (``nvlink`` → ``nvidia.com/gpu.clique``); when no Topology has that
  label as a level (TAS only places at a level that exists), the proposal first adds it to
  ``spec.levels`` [Kueue "Run Workloads with Topology-Aware Scheduling",
  https://kueue.sigs.k8s.io/docs/tasks/run/topology_aware_scheduling/].
- **Unknown configuration**: what to collect (``topology.conf`` or ``scontrol show topology``
  and ``slurm.conf``'s ``TopologyPlugin``; Kueue ``Topology`` objects and the Workloads'
  ``spec.podSets[].topologyRequest``).

No GPU-hour gain is claimed (locality speeds collectives by an amount no accounting record
shows): the evidence states the class's GPU-hours a week run over more domains than needed
(``spread_gpu_h_per_week``) and the mean excess domains; confidence = min(1, attempts ÷
(2 × ``min_attempts``)).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    scope_key,
    to_frame,
)

__all__ = ["RULE", "topology_levels"]

RULE = "topology_level"


def _aggregate(h: int, n: int) -> int:
    """The smallest power-of-two multiple of ``h`` holding ``n`` nodes."""
    return int(h * 2 ** max(0, math.ceil(math.log2(max(1.0, n / h)))))


def topology_levels(
    placement: pl.LazyFrame | pl.DataFrame,
    jobs: pl.LazyFrame | pl.DataFrame,
    window: Window,
    schedulers: Mapping[str, str],
    *,
    config: Mapping[str, Mapping[str, Any]] | None = None,
    max_optimal_share: float = 0.5,
    min_attempts: int = 3,
) -> pl.DataFrame:
    """One recommendation per cluster, team and gang size mostly placed over too many domains.

    Args:
        placement: ``job_placement`` rows (``cluster, job_id, attempt, level, nodes,
            domain_size, domains_used, domains_min``).
        jobs: attempts (``cluster, job_id, attempt, team, gpus, run_s``).
        window: the period measured.
        schedulers: cluster → ``slurm`` | ``kubernetes``.
        config: cluster → the topology configuration in force: ``form`` (``block`` |
            ``tree``, from ``topology.conf`` or ``topology.yaml``) and ``block_sizes`` (list
            of node counts) for Slurm; ``form`` ``kueue``, ``levels`` (the Kueue Topology
            levels' node labels, highest first) and ``level_labels`` (``job_placement`` level
            → node label) for Kubernetes; absent = unknown.
        max_optimal_share: the class fires under this share of optimally placed attempts.
        min_attempts: attempts of the class in the window, at least.

    Returns:
        :data:`~metrics.recommendations.RECOMMENDATION_SCHEMA` rows; severity warning,
        critical when no attempt of the class was placed optimally.
    """
    p = placement.lazy().collect()
    j = jobs.lazy().collect()
    if p.height == 0 or j.height == 0:
        return empty_recommendations()
    gang = (
        p.filter(pl.col("domain_size") > 1)
        .group_by("cluster", "level")
        .agg(pl.col("domain_size").max().alias("H"))
        .sort("cluster", "H", "level")
        .group_by("cluster", maintain_order=True)
        .first()
    )
    classes = (
        p.join(gang, on=["cluster", "level"])
        .filter(pl.col("nodes") > 1)
        .join(
            j.select(
                "cluster",
                pl.col("job_id").cast(pl.String),
                pl.col("attempt").cast(pl.Int64),
                "team",
                (pl.col("gpus") * pl.col("run_s").fill_null(0) / 3600).alias("_gpu_h"),
            ),
            on=["cluster", "job_id", "attempt"],
        )
        .with_columns((pl.col("domains_used") == pl.col("domains_min")).alias("_ok"))
        .group_by("cluster", "level", "H", "team", "nodes")
        .agg(
            pl.len().alias("attempts"),
            pl.col("_ok").sum().alias("optimal"),
            pl.col("_gpu_h").filter(~pl.col("_ok")).sum().alias("spread_gpu_h"),
            (pl.col("domains_used") - pl.col("domains_min")).mean().alias("excess"),
        )
        .with_columns((pl.col("optimal") / pl.col("attempts")).alias("share"))
        .filter((pl.col("attempts") >= min_attempts) & (pl.col("share") < max_optimal_share))
        .sort("cluster", "team", "nodes")
    )
    recs = []
    for r in classes.iter_rows(named=True):
        cluster, team, n, h = str(r["cluster"]), str(r["team"]), int(r["nodes"]), int(r["H"])
        level = str(r["level"])
        conf = (config or {}).get(cluster) or {}
        form = conf.get("form")
        sizes: Sequence[int] = list(conf.get("block_sizes") or [])
        patch_kind = patch = None
        in_force: str
        if schedulers.get(cluster) == "kubernetes":
            levels: Sequence[str] = list(conf.get("levels") or [])
            label = str((conf.get("level_labels") or {}).get(level, level))
            if form == "kueue":
                in_force = f"Kueue Topology levels {', '.join(levels)}"
            else:
                in_force = "unknown (collect the Kueue Topology object and the Workloads' "
                in_force += "spec.podSets[].topologyRequest)"
                label = level
            if n <= h:
                change = f"kueue.x-k8s.io/podset-required-topology: {label}"
            else:
                change = (
                    f"kueue.x-k8s.io/podset-slice-required-topology: {label} and "
                    f"kueue.x-k8s.io/podset-slice-size: {h}"
                )
            change = f"annotate the pod sets of {team}'s {n}-node jobs with {change}"
            if form == "kueue" and label not in levels:
                change = f"add nodeLabel {label} to the Kueue Topology's spec.levels, then {change}"
        elif form == "block":
            want = _aggregate(h, n)
            in_force = f"topology/block, BlockSizes={','.join(map(str, sizes)) or 'unset'}"
            if n <= h:
                change = f"submit {team}'s {n}-node jobs with --segment={n} (one block each)"
            elif sizes and want not in sizes:
                new = sorted({*sizes, *(h * 2**k for k in range(int(math.log2(want // h)) + 1))})
                change = f"set BlockSizes={','.join(map(str, new))} in topology.conf"
            else:
                change = f"submit {team}'s {n}-node jobs with --segment={h} (whole blocks)"
        elif form in ("tree", "flat"):
            want = _aggregate(h, n)
            new = [h * 2**k for k in range(int(math.log2(want // h)) + 1)]
            in_force = "topology/tree" if form == "tree" else "topology/flat (no topology)"
            change = (
                "switch to topology/block (TopologyPlugin=topology/block; one BlockName per "
                f"{level} domain, BlockSizes={','.join(map(str, new))})"
            )
            patch_kind, patch = "slurm.conf", "TopologyPlugin=topology/block"
        else:
            in_force = "unknown (collect topology.conf or `scontrol show topology`, and "
            in_force += "slurm.conf's TopologyPlugin)"
            change = "collect the topology configuration, then set BlockSizes or --segment"
        share = float(r["share"])
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=cluster,
                scope=scope_key(cluster=cluster, team=team, nodes=str(n)),
                severity="critical" if int(r["optimal"]) == 0 else "warning",
                window=window,
                evidence={
                    "team": team,
                    "nodes": n,
                    "level": level,
                    "domain_size": h,
                    "attempts": int(r["attempts"]),
                    "optimal_attempts": int(r["optimal"]),
                    "optimal_share": share,
                    "mean_excess_domains": float(r["excess"]),
                    "spread_gpu_h_per_week": float(r["spread_gpu_h"]) / window.weeks,
                    "config_in_force": in_force,
                },
                change_text=(
                    f"Only {share:.0%} of {team}'s {n}-node jobs on {cluster} were placed on the "
                    f"fewest {level} domains ({float(r['excess']):.1f} extra on average). "
                    f"In force: {in_force}. Proposed: {change}."
                ),
                confidence=min(1.0, int(r["attempts"]) / (2 * min_attempts)),
                patch_kind=patch_kind,
                patch_content=patch,
            )
        )
    return to_frame(recs) if recs else empty_recommendations()
