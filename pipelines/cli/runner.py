"""Run the pipeline as real Dagster runs on the local instance (``goodput materialize``)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from pipelines._file_source import partitions_with_input
from pipelines._progress import progress_bar
from pipelines.config import Config, repo_root
from pipelines.kinds import input_kinds
from pipelines.run_monitor import free_dead_runs, run_tags

__all__ = ["RunSummary", "dagster_env", "materialize_all"]

#: Run config that keeps in-process runs quiet on the terminal (events still go to the instance).
_QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

#: Input kind → its raw asset's name (the kinds registry).
_KIND_ASSET = {k.name: k.asset for k in input_kinds()}


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


def _day_chunks(days: list[str], size: int) -> list[tuple[str, str]]:
    """Consecutive calendar-day ranges ``(first, last)`` covering ``days``, each at most ``size``
    days long (a gap in the days does not split a range: a day without input loads nothing)."""
    out: list[tuple[str, str]] = []
    if not days:
        return out
    first = dt.date.fromisoformat(days[0])
    last_day = dt.date.fromisoformat(days[-1])
    while first <= last_day:
        last = min(first + dt.timedelta(days=size - 1), last_day)
        out.append((first.isoformat(), last.isoformat()))
        first = last + dt.timedelta(days=1)
    return out


def materialize_all(
    cfg: Config,
    *,
    date_from: str | None = None,
    date_to: str | None = None,
    full: bool = False,
    instance: dg.DagsterInstance | None = None,
    log: Callable[[str], None] = print,
) -> RunSummary:
    """Materialize every cluster-day partition that has input, then core and analytics.

    The raw assets run as partition-range runs (a backfill): each run covers every cluster ×
    up to ``MAX_PARTITIONS_PER_RUN / clusters`` consecutive days and loops over them one file at
    a time, so a year is a handful of runs, not one per cluster-day. Then one run rebuilds core
    and analytics (incremental: only the affected days, unless ``full``) and publishes the
    serving copy.

    Args:
        cfg: configuration (clusters, inputs folder).
        date_from: first day (YYYY-MM-DD) to run, inclusive; default the first with input.
        date_to: last day to run, inclusive; default the last with input.
        full: rebuild core and analytics from all history instead of the affected days.
        instance: Dagster instance; default ``DagsterInstance.get()`` (``$DAGSTER_HOME``).
        log: progress printer.

    Returns:
        The partitions with input that were run, and the run counts.

    Raises:
        RuntimeError: a run failed (after all ranges were attempted).
    """
    from pipelines._raw_assets import MAX_PARTITIONS_PER_RUN
    from pipelines.definitions import build_defs

    defs = build_defs(cfg)
    instance = instance or dg.DagsterInstance.get()
    # A run a killed `goodput materialize` left STARTED holds the duckdb pool slot: free it
    # first, as Dagster's run monitoring does for daemon-launched runs.
    free_dead_runs(instance, log=log)
    resources = dict(defs.resources or {})
    assets_by_name = {}
    for a in defs.assets or []:
        if isinstance(a, dg.AssetsDefinition):
            for key in a.keys:
                assets_by_name["/".join(key.path)] = a
    clusters = [c.name for c in cfg.clusters] or [cfg.default_cluster]
    todo = partitions_with_input(cfg.cluster_input_dirs())
    keys = sorted(
        k
        for k in todo
        if (date_from is None or k[1] >= date_from) and (date_to is None or k[1] <= date_to)
    )
    kinds = sorted({kind for k in keys for kind in todo[k]})
    selected = [assets_by_name[f"raw/{_KIND_ASSET[kind]}"] for kind in kinds]
    days = sorted({d for _c, d in keys})
    chunks = _day_chunks(days, max(1, MAX_PARTITIONS_PER_RUN // len(clusters)))
    failed = runs = 0
    bar = progress_bar(len(chunks) + 1, "materialize", unit="run")
    if not bar.disable and log is print:
        log = bar.write
    for i, (first, last) in enumerate(chunks, 1):
        start = dg.MultiPartitionKey({"cluster": clusters[0], "date": first})
        end = dg.MultiPartitionKey({"cluster": clusters[-1], "date": last})
        result = dg.materialize(
            selected,
            instance=instance,
            resources=resources,
            raise_on_error=False,
            tags={
                "goodput/trigger": "goodput materialize",
                **run_tags(),
                ASSET_PARTITION_RANGE_START_TAG: str(start),
                ASSET_PARTITION_RANGE_END_TAG: str(end),
            },
            run_config=_QUIET,
        )
        runs += 1
        failed += 0 if result.success else 1
        bar.update(1)
        log(f"[{i}/{len(chunks)}] {first}..{last} × {len(clusters)} clusters: "
            f"{'ok' if result.success else 'FAILED'}")  # fmt: skip
    result = dg.materialize(
        [
            assets_by_name["core/jobs"],
            assets_by_name["analytics/recommendations"],
            assets_by_name["analytics/serving_copy"],
        ],
        instance=instance,
        resources=resources,
        raise_on_error=False,
        tags={"goodput/trigger": "goodput materialize", **run_tags()},
        run_config={**_QUIET, "ops": {"core_and_analytics": {"config": {"full": full}}}},
    )
    runs += 1
    failed += 0 if result.success else 1
    bar.update(1)
    bar.close()
    log(f"core + analytics ({'full' if full else 'incremental'}) + serving copy: "
        f"{'ok' if result.success else 'FAILED'}")  # fmt: skip
    if failed:
        raise RuntimeError(f"{failed} Dagster run(s) failed; see `make dev` → Runs for the logs")
    return RunSummary(partitions=keys, runs=runs, failed_runs=failed)
