"""Kubernetes assets: events and pod snapshots, one partition per cluster and day."""

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
    ]
