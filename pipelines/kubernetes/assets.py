"""Kubernetes assets: events, pod and Kueue/Node object snapshots, per cluster and day."""

from __future__ import annotations

import dagster as dg

from pipelines._raw_assets import raw_ingest_asset

__all__ = ["build_kubernetes_assets"]


def build_kubernetes_assets(
    partitions_def: dg.MultiPartitionsDefinition,
) -> list[dg.AssetsDefinition]:
    """The Kubernetes raw assets over the cluster × day partitions."""
    return [
        raw_ingest_asset(
            name="k8s_events",
            kind="k8s-events",
            source_key="k8s_events_source",
            group="kubernetes",
            scheduler="kubernetes",
            partitions_def=partitions_def,
            description=(
                "One row per Kubernetes event uid per load, from `kubectl get events -A -o json` "
                "dumps, one partition per cluster and day."
            ),
        ),
        raw_ingest_asset(
            name="k8s_pods",
            kind="k8s-pods",
            source_key="k8s_pods_source",
            group="kubernetes",
            scheduler="kubernetes",
            partitions_def=partitions_def,
            description=(
                "One row per pod per snapshot, from `kubectl get pods -A -o json`, one partition "
                "per cluster and day."
            ),
        ),
        raw_ingest_asset(
            name="k8s_objects",
            kind="k8s-objects",
            source_key="k8s_objects_source",
            group="kubernetes",
            scheduler="kubernetes",
            partitions_def=partitions_def,
            description=(
                "Kueue Workload, ClusterQueue and LocalQueue and core/v1 Node snapshots "
                "(`kubectl get workloads|clusterqueues|localqueues|nodes -o json`), split by kind "
                "into raw.k8s_workloads, raw.kueue_cluster_queues, raw.kueue_local_queues and "
                "raw.k8s_nodes, one partition per cluster and day."
            ),
        ),
    ]
