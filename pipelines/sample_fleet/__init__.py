"""The bundled sample fleet: a seeded, deterministic three-cluster GPU fleet in real input formats.

``generate_sample_fleet(out_dir)`` simulates 14 days of a Slurm cluster (``slurm-a``, 192 GPUs,
priority FIFO + EASY backfill), a Kubernetes/Kueue cluster (``k8s-b``, 64 GPUs) and a Slurm
cluster of rack-scale NVLink domains (``slurm-nvl``, 4 × 18 trays × 4 GPUs, topology-aware gang
placement), then writes sacct/sshare/sacctmgr text, ``kubectl get events|pods -o json``, gzip'd
dcgm-exporter samples (hourly DCGM Parquet and a block ``topology.conf`` for ``slurm-nvl``), the
allocation registry, the node inventory and ``planted.json`` / ``planted_slurm-nvl.json`` (the
findings planted in the data).
"""

from __future__ import annotations

from pipelines.sample_fleet._generate import FleetSummary, generate_sample_fleet
from pipelines.sample_fleet._scale import ScaleConfig, generate_scale_fleet

__all__ = ["FleetSummary", "ScaleConfig", "generate_sample_fleet", "generate_scale_fleet"]
