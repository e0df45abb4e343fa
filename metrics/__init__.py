"""goodput metrics: pure polars functions over LazyFrames (no Dagster, no Streamlit).

Every function implements a definition of ``METRICS.md``; column names come from
:mod:`metrics.schema`.
"""

from __future__ import annotations

from metrics._helpers import nearest_rank, seconds_between, size_bucket
from metrics.fairness import (
    entitlement,
    fair_share_hourly,
    fairness_summary,
    jain_index,
    wait_fairness,
    water_fill,
)
from metrics.occupancy import allocated_gpu_seconds_hourly, capacity_hourly, occupancy_hourly
from metrics.placement import (
    FRAGMENTATION_SCHEMA,
    GANG_NODES,
    PLACEMENT_SCHEMA,
    assignment_node_lists,
    domains_min,
    fragmentation_hourly,
    job_placement,
    topology_requests,
    with_assignment_nodes,
)
from metrics.reliability import (
    down_time_per_node,
    ettr_per_run,
    node_reliability,
    node_signals,
    rack_reliability,
)
from metrics.survival import (
    SPELLS_N,
    kaplan_meier,
    wait_percentiles_km,
    wait_spell_counts,
    wait_spells,
)
from metrics.time_to_start import naive_wait_percentiles
from metrics.waterfall import (
    LEAF_DTYPE,
    LossPolicy,
    attempt_outcomes,
    check_conservation,
    gpu_waterfall_hourly,
    headline_ratios,
    pending_demand_hourly,
)

__all__ = [
    "FRAGMENTATION_SCHEMA",
    "GANG_NODES",
    "LEAF_DTYPE",
    "PLACEMENT_SCHEMA",
    "SPELLS_N",
    "LossPolicy",
    "allocated_gpu_seconds_hourly",
    "assignment_node_lists",
    "attempt_outcomes",
    "capacity_hourly",
    "check_conservation",
    "domains_min",
    "down_time_per_node",
    "entitlement",
    "ettr_per_run",
    "fair_share_hourly",
    "fairness_summary",
    "fragmentation_hourly",
    "gpu_waterfall_hourly",
    "headline_ratios",
    "jain_index",
    "job_placement",
    "kaplan_meier",
    "naive_wait_percentiles",
    "nearest_rank",
    "node_reliability",
    "node_signals",
    "occupancy_hourly",
    "pending_demand_hourly",
    "rack_reliability",
    "seconds_between",
    "size_bucket",
    "topology_requests",
    "wait_fairness",
    "wait_percentiles_km",
    "wait_spell_counts",
    "wait_spells",
    "water_fill",
    "with_assignment_nodes",
]
