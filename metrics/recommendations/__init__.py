"""Scheduler-tuning recommendations: pure polars rules that turn findings into changes.

Each rule takes frames of the stable views (``jobs``, ``gpu_waterfall_hourly``,
``fairness_weekly``, ``node_reliability`` …), a :class:`Window` and thresholds as keyword
arguments with defaults, and returns a :data:`RECOMMENDATION_SCHEMA` frame: one row per finding
with its evidence, expected gain, confidence and a ready-to-apply patch (``slurm.conf`` lines,
``sacctmgr``/``scontrol`` commands, or Kubernetes merge patches). Ids hash ``(rule, scope)``, so
a finding keeps its id from run to run.
"""

from __future__ import annotations

from metrics.recommendations._kueue import (
    apply_merge_patch,
    gpu_quotas,
    parse_quantity,
)
from metrics.recommendations._model import (
    PATCH_KINDS,
    RECOMMENDATION_SCHEMA,
    SEVERITIES,
    Recommendation,
    Window,
    empty_recommendations,
    recommendation_id,
    scope_key,
    to_frame,
)
from metrics.recommendations.backfill import backfill_tuning, max_queue_depth
from metrics.recommendations.defrag import defrag_candidates
from metrics.recommendations.fairness_drift import fairness_drift
from metrics.recommendations.gang_window import gang_window
from metrics.recommendations.idle import idle_allocations
from metrics.recommendations.kueue_borrowing import cluster_queue_usage_hourly, kueue_borrowing
from metrics.recommendations.lemon import lemon_nodes
from metrics.recommendations.min_age_reserve import min_age_reserve
from metrics.recommendations.preemption import preemption_churn
from metrics.recommendations.registry_drift import kueue_quota_drift, slurm_fairshare_drift
from metrics.recommendations.reservations import reservation_usage, reservations_idle
from metrics.recommendations.segments import segment_sizes
from metrics.recommendations.time_limits import time_limits
from metrics.recommendations.topology_levels import topology_levels

__all__ = [
    "PATCH_KINDS",
    "RECOMMENDATION_SCHEMA",
    "SEVERITIES",
    "Recommendation",
    "Window",
    "apply_merge_patch",
    "backfill_tuning",
    "cluster_queue_usage_hourly",
    "defrag_candidates",
    "empty_recommendations",
    "fairness_drift",
    "gang_window",
    "gpu_quotas",
    "idle_allocations",
    "kueue_borrowing",
    "kueue_quota_drift",
    "lemon_nodes",
    "max_queue_depth",
    "min_age_reserve",
    "parse_quantity",
    "preemption_churn",
    "recommendation_id",
    "reservation_usage",
    "reservations_idle",
    "scope_key",
    "segment_sizes",
    "slurm_fairshare_drift",
    "time_limits",
    "to_frame",
    "topology_levels",
]
