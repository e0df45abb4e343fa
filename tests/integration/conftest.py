"""Fixtures for integration tests that need real services.

``slurm_cluster`` (session scope) starts a real Slurm 22.05 cluster with accounting, runs the
job mix of ``tests/integration/slurm/jobmix.py`` to completion, rolls the hour up and yields a
:class:`~tests.integration.slurm.ClusterRun`: the live cluster plus the hour's captured ``sacct``
text and ``sreport`` GPU numbers. It installs nothing: ``make test`` and CI run
``scripts/install-system-deps.sh`` first. Without the Slurm packages it skips, unless
``GOODPUT_REQUIRE_SLURM`` is set (as ``make test`` and CI do), in which case it fails.
Set ``GOODPUT_KEEP_SLURM_DIR=1`` to keep the cluster's folder (configs, logs) after the run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.slurm import ClusterRun, SlurmTestCluster, capture_run
from tests.integration.slurm.private import cluster_dir


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[ClusterRun]:
    """A started 4-node, 32-GPU Slurm cluster after the job mix, with the hour rolled up."""
    with cluster_dir("goodput-slurm-") as base:
        with SlurmTestCluster(base) as cluster:
            run = capture_run(cluster)
            yield run
        # shown with `pytest -s` (or -rP): what the run cost and what sreport said
        print(
            f"\nslurm_cluster: startup {cluster.startup_s:.0f} s (of which "
            f"{cluster.hour_margin_s:.0f} s waiting for the hour), mix {run.mix_wall_s:.0f} s, "
            f"rollup {run.rollup_wall_s:.1f} s, RSS {run.rss_mb:.0f} MiB; sreport {run.sreport}"
        )
