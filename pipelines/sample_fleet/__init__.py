"""The bundled sample fleet: a seeded, deterministic three-cluster GPU fleet in real input formats.

``generate_sample_fleet(out_dir)`` simulates 14 days of a Slurm cluster (``slurm-a``, 192 GPUs,
priority FIFO + EASY backfill), a Kubernetes/Kueue cluster (``k8s-b``, 64 GPUs) and a Slurm
cluster of rack-scale NVLink domains (``slurm-nvl``, 4 × 18 trays × 4 GPUs, topology-aware gang
placement), then writes sacct/sshare/sacctmgr text, ``kubectl get events|pods -o json``, gzip'd
dcgm-exporter samples (hourly DCGM Parquet and a block ``topology.conf`` for ``slurm-nvl``), the
allocation registry, the node inventory and ``planted.json`` / ``planted_slurm-nvl.json`` (the
findings planted in the data). Windows of 7 days or more also get ``slurm-p`` (64 GPUs, 28 days
of history before the window) with a planted policy change of known effect,
``planted_change_backfill`` (``_policy_plant.py``; alone: ``generate_planted_fleet``,
``goodput generate --plant-change``).
"""

from __future__ import annotations

from pipelines.sample_fleet._generate import FleetSummary, generate_sample_fleet
from pipelines.sample_fleet._policy_plant import (
    PLANT_KPIS,
    PLANTED_CHANGE_KEY,
    PlantSpec,
    generate_planted_fleet,
    plant_kpis,
    planted_effect,
    simulate_plant,
)
from pipelines.sample_fleet._scale import ScaleConfig, generate_scale_fleet

__all__ = [
    "PLANTED_CHANGE_KEY",
    "PLANT_KPIS",
    "FleetSummary",
    "PlantSpec",
    "ScaleConfig",
    "generate_planted_fleet",
    "generate_sample_fleet",
    "generate_scale_fleet",
    "plant_kpis",
    "planted_effect",
    "simulate_plant",
]
