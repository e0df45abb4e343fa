"""Frequent polls of a live Slurm cluster's state: ``squeue`` (pending reasons) and, on Slurm run
by Slinky's slurm-operator, ``node_comments`` (the Slurm node → pod map).

The daily live source fetches snapshots once a day; these kinds are worth something only when
polled every minute or few (the reason spells are as fine as the polls). Two callers share this
module: the Dagster schedule ``slurm_live_poll`` (:mod:`pipelines.automation`, defined only
where ``[sources] sacct = "cli"``) and ``goodput poll slurm`` (for cron). Both spool through
:class:`~pipelines.slurm.resources.SlurmStateCliSource` into the inputs folder, where the file
sources and the new-files sensor find them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipelines.config import ClusterConfig, Config
from pipelines.slurm.resources import SlurmStateCliSource

__all__ = ["POLL_CRON", "POLL_KINDS", "live_poll_clusters", "poll_kinds", "poll_slurm"]

#: Every two minutes: pending-reason spells are cut at gaps over 600 s
#: (:func:`pipelines.core.pending_spells.pending_reason_spells`), so a poll or two may fail
#: without breaking a spell.
POLL_CRON = "*/2 * * * *"
#: The kinds polled on the schedule (the rest of the live state is fetched daily).
POLL_KINDS = ("squeue", "node_comments")


def poll_kinds(cluster: ClusterConfig) -> list[str]:
    """The kinds polled for ``cluster``: ``squeue`` always; ``node_comments`` too when the
    cluster is Slurm run on Kubernetes (``slurm_on_k8s`` set), whose nodes' ``Comment`` names
    the pod and Kubernetes node."""
    return ["squeue", *(["node_comments"] if cluster.slurm_on_k8s else [])]


def live_poll_clusters(cfg: Config) -> list[ClusterConfig]:
    """The clusters polled on the schedule: Slurm clusters, and only when the Slurm source is
    live (``[sources] sacct = "cli"``); none otherwise (exported files have no live state)."""
    if cfg.sources.get("sacct") != "cli":
        return []
    clusters = cfg.clusters or (cfg.cluster(cfg.default_cluster),)
    return [c for c in clusters if c.scheduler == "slurm"]


def poll_slurm(
    spool_dir: str | Path,
    cluster: str,
    kinds: Sequence[str],
    *,
    slurm_conf: str | None = None,
    bin_dir: str | None = None,
    env: Mapping[str, str] | None = None,
    clock_offset_s: float = 0.0,
) -> list[Path]:
    """Poll ``kinds`` of ``cluster`` once, now, and spool them as the live source does
    (``<spool_dir>/<cluster>/squeue/squeue_<day>.txt``, appended;
    ``<spool_dir>/<cluster>/slurm_state/node_comments_<stamp>.txt``).

    Args:
        spool_dir: the inputs folder.
        cluster: the Slurm cluster name (``-M``).
        kinds: a subset of :data:`POLL_KINDS`.
        slurm_conf, bin_dir, env, clock_offset_s: as :class:`SlurmStateCliSource`.

    Returns:
        The spooled files, in :data:`~pipelines.slurm.resources.STATE_KINDS` order.

    Raises:
        ValueError: a kind outside :data:`POLL_KINDS`.
        RuntimeError: a Slurm client is missing, timed out or failed.
    """
    wrong = sorted(set(kinds) - set(POLL_KINDS))
    if wrong:
        raise ValueError(f"kinds {wrong} are not polled; expected some of {list(POLL_KINDS)}")
    source = SlurmStateCliSource(
        spool_dir=str(spool_dir), slurm_conf=slurm_conf, bin_dir=bin_dir, env=dict(env or {}),
        kinds=list(kinds), clock_offset_s=clock_offset_s,
    )  # fmt: skip
    now = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=clock_offset_s)
    return source.fetch(cluster, now.date().isoformat())
