"""The core layer: the raw tables turned into the unified job, attempt and node frames.

Pure polars, frames in and frames out: no Dagster, Streamlit or DuckDB here (reading the
warehouse and writing the ``core.*`` tables is :mod:`pipelines.analytics.build`'s business).

- :mod:`~pipelines.core.slurm_identity`: Slurm rows with identity, attempt and team;
- :mod:`~pipelines.core.k8s_attempts`: Kubernetes workloads as allocation attempts;
- :mod:`~pipelines.core.k8s_timings`: Kubernetes time to start by stage, and pending reasons;
- :mod:`~pipelines.core.node_states`: Slurm registered capacity and node-event GPU-seconds per
  hour;
- :mod:`~pipelines.core.topology`: the topology map (``topology.conf``, Node labels, racks)
  with the interval each map was in force;
- :mod:`~pipelines.core.registry`: the allocation registry (teams, shares, their history);
- :mod:`~pipelines.core.policy_changes`: the policy-change ledger (Slurm transactions and
  successive configuration and share snapshots);
- :mod:`~pipelines.core.build`: :func:`build_core`, every core frame of a :class:`BuildUnit` in
  one call.
"""

from __future__ import annotations

from pipelines.core.build import (
    JOBS_COLUMNS,
    OUTSIDE_INVENTORY,
    BuildUnit,
    CoreFrames,
    RawFrames,
    RegistryFrames,
    StoredPart,
    build_core,
    resolve_slurm_parts,
    resolved_slurm_schema,
    with_as_of,
)
from pipelines.core.k8s_attempts import (
    K8S_ATTEMPT_SCHEMA,
    K8sAttempts,
    k8s_attempts,
    pending_workload_attempts,
    pod_attempts,
    workload_attempts,
)
from pipelines.core.k8s_timings import (
    K8S_PENDING_REASON_SCHEMA,
    K8S_WORKLOAD_TIMING_SCHEMA,
    KUEUE_PENDING_REASONS,
    SCHEDULER_PENDING_REASONS,
    image_pull_seconds,
    k8s_pending_reasons,
    k8s_workload_timings,
)
from pipelines.core.node_states import node_event_gpu_seconds_hourly, registered_gpu_seconds_hourly
from pipelines.core.policy_changes import (
    POLICY_CHANGE_SCHEMA,
    cluster_queue_changes,
    config_changes,
    policy_changes,
    share_changes,
    transaction_changes,
)
from pipelines.core.registry import (
    ALL_POOLS,
    HISTORY_SCHEMA,
    UNATTRIBUTED,
    RegistryError,
    cluster_shares,
    empty_registry,
    load_registry,
    load_registry_history,
    share_in_effect,
    shares_at_window_start,
    unmatched_pools,
)
from pipelines.core.slurm_identity import (
    RESOLUTION_ORDER,
    in_resolution_order,
    resolve_slurm_jobs,
    slurm_attempts,
)
from pipelines.core.topology import (
    TOPOLOGY_COLUMNS,
    k8s_label_topology,
    topology_intervals,
)

__all__ = [
    "ALL_POOLS",
    "HISTORY_SCHEMA",
    "JOBS_COLUMNS",
    "K8S_ATTEMPT_SCHEMA",
    "K8S_PENDING_REASON_SCHEMA",
    "K8S_WORKLOAD_TIMING_SCHEMA",
    "KUEUE_PENDING_REASONS",
    "OUTSIDE_INVENTORY",
    "POLICY_CHANGE_SCHEMA",
    "RESOLUTION_ORDER",
    "SCHEDULER_PENDING_REASONS",
    "TOPOLOGY_COLUMNS",
    "UNATTRIBUTED",
    "BuildUnit",
    "CoreFrames",
    "K8sAttempts",
    "RawFrames",
    "RegistryError",
    "RegistryFrames",
    "StoredPart",
    "build_core",
    "cluster_queue_changes",
    "cluster_shares",
    "config_changes",
    "empty_registry",
    "image_pull_seconds",
    "in_resolution_order",
    "k8s_attempts",
    "k8s_label_topology",
    "k8s_pending_reasons",
    "k8s_workload_timings",
    "load_registry",
    "load_registry_history",
    "node_event_gpu_seconds_hourly",
    "pending_workload_attempts",
    "pod_attempts",
    "policy_changes",
    "registered_gpu_seconds_hourly",
    "resolve_slurm_jobs",
    "resolve_slurm_parts",
    "resolved_slurm_schema",
    "share_changes",
    "share_in_effect",
    "shares_at_window_start",
    "slurm_attempts",
    "topology_intervals",
    "transaction_changes",
    "unmatched_pools",
    "with_as_of",
    "workload_attempts",
]
