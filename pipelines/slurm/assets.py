"""Slurm assets: parsed ``sacct`` rows, one partition per cluster and day."""

from __future__ import annotations

import dagster as dg

from pipelines._raw_assets import raw_ingest_asset

__all__ = ["build_slurm_assets"]


def build_slurm_assets(partitions_def: dg.MultiPartitionsDefinition) -> list[dg.AssetsDefinition]:
    """The Slurm raw assets over the cluster × day partitions."""
    return [
        raw_ingest_asset(
            name="slurm_rows",
            kind="sacct",
            source_key="sacct_source",
            group="slurm",
            scheduler="slurm",
            partitions_def=partitions_def,
            description=(
                "One row per sacct line (allocations, steps, pending rows; pending arrays expanded "
                "per task), from `sacct --parsable2` exports, one partition per cluster and day."
            ),
        )
    ]
