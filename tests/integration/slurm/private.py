"""Starting a private Slurm test cluster for a fixture: the requirement check and its folder.

Without the Slurm packages (or root) a fixture using :func:`cluster_dir` skips, unless
``GOODPUT_REQUIRE_SLURM`` is set (as ``make test`` and CI do), in which case it fails. Set
``GOODPUT_KEEP_SLURM_DIR=1`` to keep the cluster's folder (configs, logs) after the run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .cluster import SlurmTestCluster, missing_requirements

#: Set, a missing Slurm fails the test instead of skipping it.
REQUIRE_SLURM_ENV = "GOODPUT_REQUIRE_SLURM"
#: Set, the cluster's folder is kept (and its path printed) instead of removed.
KEEP_DIR_ENV = "GOODPUT_KEEP_SLURM_DIR"


def require_slurm() -> None:
    """Skip (or fail, with ``GOODPUT_REQUIRE_SLURM`` set) unless a cluster can be started here."""
    problems = [f"missing {name}" for name in missing_requirements()]
    if os.geteuid() != 0:
        problems.append("not root (the daemons run jobs as other users)")
    if problems:
        message = (
            f"real Slurm cluster unavailable: {', '.join(problems)}; "
            "run `sudo scripts/install-system-deps.sh` (as `make test` does)"
        )
        if os.environ.get(REQUIRE_SLURM_ENV):
            pytest.fail(f"{message} [{REQUIRE_SLURM_ENV} is set]", pytrace=False)
        pytest.skip(message)


@contextmanager
def cluster_dir(prefix: str) -> Iterator[Path]:
    """A fresh folder for a cluster, after :func:`require_slurm`; removed (or kept) on exit.

    Not pytest's ``tmp_path``: jobs run as other uids and must traverse the folder's parents.
    """
    require_slurm()
    base = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield base
    finally:
        if os.environ.get(KEEP_DIR_ENV):
            print(f"\nSlurm test cluster folder kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


@contextmanager
def private_cluster(prefix: str) -> Iterator[SlurmTestCluster]:
    """A started 4-node, 32-GPU cluster in a :func:`cluster_dir` of its own, stopped on exit."""
    with cluster_dir(prefix) as base, SlurmTestCluster(base) as cluster:
        yield cluster
