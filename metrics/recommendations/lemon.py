"""Lemon nodes: drain (Slurm) or cordon (Kubernetes) a node that keeps breaking the jobs it runs.

The lemon score is METRICS.md's: (infra failures on the node + 1) ÷ (expected + 1), expected =
attempts on the node × the cluster's infra failures per node-attempt (1 ≈ an average node)
[Meta, "Revisiting Reliability in Large-Scale ML Research Clusters", 2024]. A node at or above
``min_score`` with at least ``min_failures`` failures gets a drain: Slurm ``scontrol update
nodename=<n> state=drain reason="…"`` [scontrol(1)], Kubernetes a Node merge patch
``{"spec": {"unschedulable": true}}`` (what ``kubectl cordon`` writes).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from metrics.recommendations._kueue import merge_patch_document
from metrics.recommendations._model import (
    Recommendation,
    Window,
    empty_recommendations,
    grade,
    scope_key,
    to_frame,
)

__all__ = ["RULE", "lemon_nodes"]

RULE = "lemon_node"


def lemon_nodes(
    node_reliability: pl.LazyFrame | pl.DataFrame,
    window: Window,
    schedulers: Mapping[str, str],
    *,
    min_score: float = 2.0,
    min_failures: int = 3,
    max_nodes_per_cluster: int = 5,
) -> pl.DataFrame:
    """Drain recommendations for the worst nodes.

    Args:
        node_reliability: the ``node_reliability`` view (``cluster, host, attempts,
            node_fail_attempts, infra_failed_attempts, expected_infra_failures, xid_events,
            xid_codes, down_s, infra_lost_gpu_s, lemon_score, lemon_rank``).
        window: the period the view covers.
        schedulers: cluster → ``slurm`` | ``kubernetes`` (other clusters are skipped).
        min_score: lemon score at or above which a node is a lemon.
        min_failures: NODE_FAIL or infra-failed attempts at least (one bad day is not a lemon).
        max_nodes_per_cluster: at most this many nodes per cluster (worst rank first).

    Returns:
        One recommendation per node (:data:`~metrics.recommendations.RECOMMENDATION_SCHEMA`);
        expected gain = the node's infra-lost GPU-hours per week (work it stops destroying);
        confidence = min(1, failures ÷ (2 · min_failures)); severity critical from score 4.
    """
    frame = node_reliability.lazy().collect()
    failures = pl.max_horizontal(
        pl.col("node_fail_attempts").fill_null(0), pl.col("infra_failed_attempts").fill_null(0)
    )
    hits = (
        frame.with_columns(failures.alias("_fail"))
        .filter(
            pl.col("cluster").is_in(list(schedulers))
            & (pl.col("lemon_score") >= min_score)
            & (pl.col("_fail") >= min_failures)
        )
        .sort("cluster", "lemon_rank", "host")
        .group_by("cluster", maintain_order=True)
        .head(max_nodes_per_cluster)
    )
    recs = []
    for r in hits.iter_rows(named=True):
        cluster, host = str(r["cluster"]), str(r["host"])
        score = float(r["lemon_score"])
        codes = [int(c) for c in (r.get("xid_codes") or []) if c is not None]
        xid_text = ",".join(str(c) for c in codes) if codes else "none"
        reason = (
            f"goodput: lemon score {score:.1f}, {int(r['node_fail_attempts'] or 0)} NODE_FAIL, "
            f"XID {xid_text}"
        )
        lost_h = float(r.get("infra_lost_gpu_s") or 0.0) / 3600
        evidence = {
            "lemon_score": score,
            "lemon_rank": r.get("lemon_rank"),
            "attempts": r.get("attempts"),
            "node_fail_attempts": r.get("node_fail_attempts"),
            "infra_failed_attempts": r.get("infra_failed_attempts"),
            "expected_infra_failures": r.get("expected_infra_failures"),
            "xid_events": r.get("xid_events"),
            "xid_codes": codes,
            "down_h": float(r.get("down_s") or 0.0) / 3600,
            "infra_lost_gpu_h": lost_h,
        }
        if schedulers[cluster] == "slurm":
            kind = "scontrol"
            content = f'scontrol update nodename={host} state=drain reason="{reason}"'
            how = f"Drain {host}"
        else:
            kind = "kubernetes-merge-patch"
            patch = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": host},
                "spec": {"unschedulable": True},
            }
            content = merge_patch_document(patch, comment=f"cordon: {reason}")
            how = f"Cordon {host}"
        recs.append(
            Recommendation(
                rule=RULE,
                cluster=cluster,
                scope=scope_key(cluster=cluster, node=host),
                severity=grade(score, min_score, 2 * min_score),
                window=window,
                evidence=evidence,
                change_text=(
                    f"{how}: it broke {int(r['_fail'])} jobs "
                    f"(expected {float(r.get('expected_infra_failures') or 0):.1f} for an "
                    f"average node; lemon score {score:.1f}, XID {xid_text}); "
                    f"{lost_h:.0f} GPU-h of work lost to it. Run diagnostics (dcgmi diag -r 3) "
                    "before returning it to service."
                ),
                confidence=min(1.0, int(r["_fail"]) / (2 * min_failures)),
                expected_gain_gpu_h_per_week=lost_h / window.weeks,
                patch_kind=kind,
                patch_content=content,
            )
        )
    return to_frame(recs) if recs else empty_recommendations()
