"""A real Slurm 22.05 test cluster (slurmctld, 4 slurmd, slurmdbd, MariaDB, munge) and its job mix.

Used by ``tests/integration/conftest.py``'s ``slurm_cluster`` fixture; needs the packages of
``scripts/install-system-deps.sh`` and root.
"""

from __future__ import annotations

from .cluster import (
    CLUSTER_NAME,
    DEFAULT_ACCOUNTS,
    DEFAULT_USERS,
    GPUS_PER_NODE,
    NODE_NAMES,
    ClusterUser,
    SlurmCommandError,
    SlurmTestCluster,
    missing_requirements,
    slurm_time,
)
from .jobmix import (
    SACCT_STATES,
    ClusterRun,
    JobMix,
    SubmittedJob,
    capture_run,
    run_job_mix,
    sacct_capture_args,
)

__all__ = [
    "CLUSTER_NAME",
    "DEFAULT_ACCOUNTS",
    "DEFAULT_USERS",
    "GPUS_PER_NODE",
    "NODE_NAMES",
    "SACCT_STATES",
    "ClusterRun",
    "ClusterUser",
    "JobMix",
    "SlurmCommandError",
    "SlurmTestCluster",
    "SubmittedJob",
    "capture_run",
    "missing_requirements",
    "run_job_mix",
    "sacct_capture_args",
    "slurm_time",
]
