"""DCGM assets: GPU telemetry samples, one partition per cluster and day."""

from __future__ import annotations

import dagster as dg

from pipelines._raw_assets import raw_ingest_asset

__all__ = ["build_dcgm_assets"]


def build_dcgm_assets(partitions_def: dg.MultiPartitionsDefinition) -> list[dg.AssetsDefinition]:
    """The DCGM raw assets over the cluster × day partitions."""
    return [
        raw_ingest_asset(
            name="dcgm_samples",
            kind="dcgm",
            source_key="dcgm_source",
            group="dcgm",
            scheduler=None,
            partitions_def=partitions_def,
            description=(
                "One row per DCGM sample (long format, labels normalised), from dcgm-exporter "
                "text dumps, one partition per cluster and day."
            ),
        )
    ]
