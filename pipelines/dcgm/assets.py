"""DCGM assets: GPU telemetry samples and hourly aggregates, one partition per cluster and day."""

from __future__ import annotations

import dagster as dg

from pipelines._raw_assets import raw_ingest_asset

__all__ = ["build_dcgm_assets"]


def build_dcgm_assets(partitions_def: dg.MultiPartitionsDefinition) -> list[dg.AssetsDefinition]:
    """The DCGM raw assets (samples, hourly aggregates) over the cluster × day partitions."""
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
        ),
        raw_ingest_asset(
            name="dcgm_hourly",
            kind="dcgm-hourly",
            source_key="dcgm_hourly_source",
            group="dcgm",
            scheduler=None,
            partitions_def=partitions_def,
            description=(
                "One row per GPU, UTC hour and job label: hourly DCGM aggregates (mean activity, "
                "max FB, last XID) from Parquet files, one partition per cluster and day."
            ),
        ),
    ]
