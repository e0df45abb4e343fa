"""Segment size per job class: where failed trays leave domains short of whole, ask gangs for a
segment that still fits.

A Slurm ``topology/block`` job without ``--segment`` needs its whole size inside one block (up to
the block's size); with ``--segment=s`` only each s nodes must share a block [Slurm
topology.conf(5), ``BlockSizes``; sbatch(1) ``--segment``]. The segment-capacity efficiency
``E(s) = Σ_d floor(h_d/s)·s ÷ Σ_d h_d`` (METRICS.md), averaged over the window's hours at the gang
level, is the share of healthy trays segments of s can use under the measured tray failures. For
each class of multi-node jobs (N nodes) the rule proposes the largest s dividing N with ``E(s) ≥
min_efficiency``, when the job's own size (``min(N, largest block)``) falls below it.

Expected gain = (E(s) − E(whole)) × the cluster's healthy GPU-hours a week (capacity such gangs
can use again), an upper bound; no scheduler setting applies (a submission option), so no patch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    grade,
    scope_key,
    to_frame,
)

__all__ = ["RULE", "segment_sizes"]

RULE = "segment_size"


def segment_sizes(
    efficiency: pl.LazyFrame | pl.DataFrame,
    jobs: pl.LazyFrame | pl.DataFrame,
    window: Window,
    schedulers: Mapping[str, str],
    *,
    sizes: Sequence[int] = (1, 2, 4, 8, 16, 18),
    min_efficiency: float = 0.95,
    min_attempts: int = 3,
) -> pl.DataFrame:
    """One recommendation per Slurm cluster and job class (nodes) whose whole-size segment
    wastes healthy trays.

    Args:
        efficiency: ``cluster, segment_size, efficiency`` (mean over the window's hours at the
            gang level), ``domain_size`` (the largest block, nodes) and ``healthy_gpu_h``
            (Σ healthy GPUs × hours in the window).
        jobs: attempts of the window with ``cluster, node_list``.
        window: the period measured.
        schedulers: cluster → scheduler (only ``slurm`` clusters).
        sizes: the segment sizes considered (``[topology] segment_sizes``).
        min_efficiency: E(s) at or above which a segment size is good enough.
        min_attempts: multi-node attempts of the class in the window, at least.

    Returns:
        :data:`~metrics.recommendations.RECOMMENDATION_SCHEMA` rows; severity by how far the
        whole-size efficiency is below ``min_efficiency`` (warning under it, critical under
        ``2·min_efficiency − 1``).
    """
    eff = efficiency.lazy().collect()
    j = jobs.lazy().collect()
    if eff.height == 0 or j.height == 0:
        return empty_recommendations()
    classes = (
        j.filter(pl.col("cluster").is_in([c for c, s in schedulers.items() if s == "slurm"]))
        .select("cluster", pl.col("node_list").list.unique().list.len().alias("nodes"))
        .filter(pl.col("nodes") > 1)
        .group_by("cluster", "nodes")
        .agg(pl.len().alias("attempts"))
        .filter(pl.col("attempts") >= min_attempts)
        .sort("cluster", "nodes")
    )
    recs = []
    for cluster, nodes, attempts in classes.iter_rows():
        e = eff.filter(pl.col("cluster") == cluster)
        if e.height == 0:
            continue
        by_s = dict(zip(e["segment_size"].to_list(), e["efficiency"].to_list(), strict=True))
        h = int(e["domain_size"][0])
        whole = min(int(nodes), h)
        cands = sorted(
            (s for s in sizes if s <= whole and nodes % s == 0 and by_s.get(s) is not None),
            reverse=True,
        )
        e_whole = by_s.get(whole)
        if e_whole is None or e_whole >= min_efficiency:
            continue
        good = [s for s in cands if float(by_s[s]) >= min_efficiency]
        if not good or good[0] >= whole:
            continue
        s = good[0]
        gain = (float(by_s[s]) - float(e_whole)) * float(e["healthy_gpu_h"][0]) / window.weeks
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=str(cluster),
                scope=scope_key(cluster=str(cluster), nodes=str(nodes)),
                severity=grade(min_efficiency - float(e_whole), 0.0, 1 - min_efficiency),
                window=window,
                evidence={
                    "nodes": int(nodes),
                    "attempts": int(attempts),
                    "domain_size": h,
                    "efficiency_whole": float(e_whole),
                    "segment_size": s,
                    "efficiency_segment": float(by_s[s]),
                    "efficiency_by_size": {str(k): v for k, v in sorted(by_s.items())},
                },
                change_text=(
                    f"Jobs of {nodes} nodes on {cluster}: submit with --segment={s}. Under the "
                    f"measured tray failures a {whole}-node block holds only "
                    f"{float(e_whole):.0%} of the healthy trays, {s}-node segments "
                    f"{float(by_s[s]):.0%}."
                ),
                confidence=min(1.0, int(attempts) / (2 * min_attempts)),
                expected_gain_gpu_h_per_week=gain,
                patch_kind=None,
                patch_content=None,
            )
        )
    return to_frame(recs) if recs else empty_recommendations()
