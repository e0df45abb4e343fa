"""``lake_raw_job``: cluster-day partitions committed to the lake's Delta tables, one step each.

One op lists the partitions; one mapped step per partition runs
:func:`pipelines.lake_assets.commit_raw_partition` (parse that cluster-day's files into a private
in-memory DuckDB, commit each raw table's rows in one Delta commit). The steps share nothing but
the lake, so the multiprocess executor (one machine) or ``k8s_job_executor`` (one pod per step,
``deploy/k8s/run_config.k8s.yaml``) runs them at once, and Delta's optimistic concurrency orders
the commits without a lock of ours.
"""

# ruff: noqa: I002 - no `from __future__ import annotations` here: Dagster resolves the op's
# config and context annotations from the objects themselves; postponed (string) ones fail.

import re
from collections.abc import Iterator

import dagster as dg
from pydantic import Field

from pipelines._raw_assets import SettingsResource
from pipelines.config import load_config
from pipelines.lake_assets import LakeResource, commit_raw_partition
from pipelines.partitions import split_partition_key

__all__ = ["LAKE_RAW_JOB", "LakeFanOutConfig", "lake_raw_job"]

#: Name of the fan-out job that commits raw cluster-days to the lake's Delta tables.
LAKE_RAW_JOB = "lake_raw_job"


class LakeFanOutConfig(dg.Config):
    """The cluster-day partitions ``lake_raw_job`` commits.

    Attributes:
        partitions: cluster × day partition keys (``cluster|YYYY-MM-DD``, Dagster's
            multi-partition key text), one step each.
    """

    partitions: list[str] = Field(default_factory=list)


def _mapping_key(key: str) -> str:
    """A Dagster mapping key (letters, digits, ``_``) naming a partition key, one to one."""
    return re.sub(r"[^A-Za-z0-9]", lambda m: f"_{ord(m.group(0)):02x}", key)


@dg.op(out=dg.DynamicOut(str))
def lake_partitions(config: LakeFanOutConfig) -> Iterator[dg.DynamicOutput[str]]:
    """One dynamic output per cluster-day partition key (each becomes its own step)."""
    for key in dict.fromkeys(config.partitions):
        split_partition_key(key)  # a malformed key fails here, before any step runs
        yield dg.DynamicOutput(key, mapping_key=_mapping_key(key))


@dg.op
def lake_commit_partition(
    context: dg.OpExecutionContext, key: str, settings: SettingsResource, lake: LakeResource
) -> dict[str, int]:
    """Commit one cluster-day's raw tables to the lake's Delta tables (see the module)."""
    root_url = lake.resolved_root_url()
    if root_url is None:
        raise dg.Failure(description=f"{lake.root_url_env} is not set: no lake to commit to")
    cluster, day = split_partition_key(key)
    done = commit_raw_partition(
        load_config(settings.config_path),
        cluster,
        day,
        root_url,
        storage_options=lake.storage_options(),
    )
    context.log.info(
        f"{cluster} {day}: {done.files} files, {sum(done.rows.values())} rows committed, "
        f"{done.rejected} rejected"
    )
    return done.rows


@dg.job(
    name=LAKE_RAW_JOB,
    resource_defs={"settings": SettingsResource(), "lake": LakeResource()},
    description="Commit cluster-day partitions of raw tables to the lake's Delta tables, one "
    "step per partition.",
)
def lake_raw_job() -> None:
    """List the partitions, then commit each in its own step.

    Settings and lake come from run config or the environment (``GOODPUT_LAKE_URL``); run it with
    ``dagster job execute -m pipelines.lake_job -j lake_raw_job -c run.yaml`` (multiprocess by
    default), or on Kubernetes with ``deploy/k8s/run_config.k8s.yaml``'s executor.
    """
    lake_partitions().map(lake_commit_partition)
