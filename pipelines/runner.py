"""Run the pipeline as real Dagster runs on the local instance (``goodput materialize``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from pipelines._file_source import partitions_with_input
from pipelines.config import Config, repo_root

__all__ = ["RunSummary", "dagster_env", "materialize_all"]

#: Run config that keeps in-process runs quiet on the terminal (events still go to the instance).
_QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

_KIND_ASSET = {
    "sacct": "slurm_rows",
    "k8s-events": "k8s_events",
    "k8s-pods": "k8s_pods",
    "dcgm": "dcgm_samples",
    "slurm-state": "slurm_state",
}


@dataclass(frozen=True)
class RunSummary:
    """What ``materialize_all`` ran."""

    partitions: list[tuple[str, str]]
    runs: int
    failed_runs: int


def dagster_env(root: Path | None = None) -> None:
    """Point Dagster at the repo's ``dagster.yaml`` and git-ignored ``.dagster/`` unless set."""
    root = root or repo_root()
    os.environ.setdefault("DAGSTER_HOME", str(root))
    os.environ.setdefault("GOODPUT_DAGSTER_DIR", str(root / ".dagster"))
    os.environ.setdefault("GOODPUT_DAGSTER_LOGS", str(root / ".dagster" / "logs"))
    Path(os.environ["GOODPUT_DAGSTER_DIR"]).mkdir(parents=True, exist_ok=True)


def materialize_all(
    cfg: Config,
    *,
    date_from: str | None = None,
    date_to: str | None = None,
    instance: dg.DagsterInstance | None = None,
    log: Callable[[str], None] = print,
) -> RunSummary:
    """Materialize every cluster-day partition that has input, then core and analytics.

    One Dagster run per partition (only the raw assets whose input kind has files that day), then
    one run for the unpartitioned core/analytics assets and the serving copy.

    Args:
        cfg: configuration (clusters, inputs folder).
        date_from: first day (YYYY-MM-DD) to run, inclusive; default the first with input.
        date_to: last day to run, inclusive; default the last with input.
        instance: Dagster instance; default ``DagsterInstance.get()`` (``$DAGSTER_HOME``).
        log: progress printer.

    Returns:
        The partitions run and the run counts.

    Raises:
        RuntimeError: a run failed (after all partitions were attempted).
    """
    from pipelines.definitions import build_defs

    defs = build_defs(cfg)
    instance = instance or dg.DagsterInstance.get()
    resources = dict(defs.resources or {})
    assets_by_name = {}
    for a in defs.assets or []:
        if isinstance(a, dg.AssetsDefinition):
            for key in a.keys:
                assets_by_name["/".join(key.path)] = a
    clusters = [c.name for c in cfg.clusters] or [cfg.default_cluster]
    todo = partitions_with_input(cfg.inputs_dir, clusters)
    keys = sorted(
        k
        for k in todo
        if (date_from is None or k[1] >= date_from) and (date_to is None or k[1] <= date_to)
    )
    failed = 0
    for i, (cluster, day) in enumerate(keys, 1):
        selected = [
            assets_by_name[f"raw/{_KIND_ASSET[kind]}"] for kind in sorted(todo[(cluster, day)])
        ]
        result = dg.materialize(
            selected,
            partition_key=dg.MultiPartitionKey({"cluster": cluster, "date": day}),
            instance=instance,
            resources=resources,
            raise_on_error=False,
            tags={"goodput/trigger": "goodput materialize"},
            run_config=_QUIET,
        )
        failed += 0 if result.success else 1
        log(f"[{i}/{len(keys)}] {cluster} {day}: {'ok' if result.success else 'FAILED'}")
    result = dg.materialize(
        [
            assets_by_name["core/jobs"],
            assets_by_name["analytics/recommendations"],
            assets_by_name["analytics/serving_copy"],
        ],
        instance=instance,
        resources=resources,
        raise_on_error=False,
        tags={"goodput/trigger": "goodput materialize"},
        run_config=_QUIET,
    )
    failed += 0 if result.success else 1
    log(f"core + analytics + serving copy: {'ok' if result.success else 'FAILED'}")
    if failed:
        raise RuntimeError(f"{failed} Dagster run(s) failed; see `make dev` → Runs for the logs")
    return RunSummary(partitions=keys, runs=len(keys) + 1, failed_runs=failed)
