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
        ),
        raw_ingest_asset(
            name="slurm_state",
            kind="slurm-state",
            source_key="slurm_state_source",
            group="slurm",
            scheduler="slurm",
            partitions_def=partitions_def,
            description=(
                "Slurm cluster state: `sacctmgr show event` (TRES registrations, node down/drain "
                "intervals) into raw.slurm_events, `scontrol show nodes` into raw.slurm_nodes, "
                "`sshare -a -l -P` into raw.sshare; one partition per cluster and day."
            ),
        ),
    ]
