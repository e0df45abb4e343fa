"""The lake: the Delta partition commits (raw tables, one cluster-day at a time) and the Delta
export of the core tables, with their resource.

With a lake URL set, raw tables reach the lake's Delta tables (:mod:`pipelines.warehouse.delta`)
through :func:`commit_raw_partition`, one cluster-day at a time: ``lake_raw_job``
(:mod:`pipelines.lake_job`) runs one step per partition, and steps share nothing but the lake,
so they commit at once. The aggregate build (``core_and_analytics``) loads them into the
warehouse first (:func:`pipelines.warehouse.lake_load.load_raw_from_lake`), and
:func:`lake_export` commits the core tables it built back to the lake.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg
import duckdb
import polars as pl

from pipelines._file_source import files_for_day
from pipelines._raw_assets import SettingsResource
from pipelines.config import Config, load_config
from pipelines.ingest import ingest_configured
from pipelines.kinds import input_kinds
from pipelines.warehouse import init_warehouse
from pipelines.warehouse.delta import commit_partition
from pipelines.warehouse.lake import DEFAULT_DELTA_TABLES, export_delta
from pipelines.warehouse.lake_load import LAKE_RAW_TABLES
from pipelines.warehouse.tables import read_table, table_exists

__all__ = [
    "LAKE_EXPORT_KEY",
    "LAKE_URL_ENV",
    "LakeResource",
    "PartitionCommit",
    "commit_raw_partition",
    "lake_export",
]

#: The environment variable holding the lake's root URL (``s3://bucket/prefix`` or a folder).
LAKE_URL_ENV = "GOODPUT_LAKE_URL"

LAKE_EXPORT_KEY = dg.AssetKey(["analytics", "lake_export"])


class LakeResource(dg.ConfigurableResource):  # type: ignore[type-arg]  # Dagster idiom
    """Where the Parquet lake is; the URL is resolved at run time, never at import.

    ``root_url`` wins when set; else the ``root_url_env`` environment variable is read through
    ``dg.EnvVar`` when the asset runs, and an unset variable means "no lake" (the export is
    skipped) rather than a failed run. Credentials are not config: polars and s3fs take them
    from the usual ``AWS_*`` variables (or the pod's service account on Kubernetes).
    """

    root_url: str | None = None
    root_url_env: str = LAKE_URL_ENV
    endpoint_url: str | None = None
    region: str | None = None
    allow_http: bool = False

    def resolved_root_url(self) -> str | None:
        """The lake root for this run, or None when none is configured."""
        return self.root_url or dg.EnvVar(self.root_url_env).get_value() or None

    def storage_options(self) -> dict[str, Any] | None:
        """object_store options for polars (endpoint, region, plain HTTP), or None."""
        opts: dict[str, Any] = {}
        if self.endpoint_url:
            opts["aws_endpoint_url"] = self.endpoint_url
        if self.region:
            opts["aws_region"] = self.region
        if self.allow_http:
            opts["aws_allow_http"] = "true"
        return opts or None


@dg.asset(
    key=LAKE_EXPORT_KEY,
    deps=[dg.AssetKey(["analytics", "serving_copy"])],
    group_name="analytics",
    pool="duckdb",
    kinds={"delta", "polars", "s3"},
)
def lake_export(settings: SettingsResource, lake: LakeResource) -> dg.MaterializeResult[Any]:
    """The core tables as Delta tables in the lake, partitioned by cluster × UTC day, one commit
    per table replacing the partitions of the clusters the warehouse holds
    (:func:`~pipelines.warehouse.lake.export_delta`).

    Read from the warehouse (read-only; the asset runs in the ``duckdb`` pool, after the build
    and the serving copy), so the lake holds every row with its real names, like the raw tables
    the partition runs commit; skipped, with ``skipped`` metadata, when no lake URL is
    configured.
    """
    root_url = lake.resolved_root_url()
    if root_url is None:
        return dg.MaterializeResult(
            metadata={"skipped": f"{lake.root_url_env} is not set", "tables": 0}
        )
    cfg = load_config(settings.config_path)
    versions = export_delta(
        cfg.warehouse_path,
        root_url,
        tables=DEFAULT_DELTA_TABLES,
        storage_options=lake.storage_options(),
    )
    return dg.MaterializeResult(
        metadata={
            "root_url": dg.MetadataValue.url(root_url)
            if "://" in root_url
            else dg.MetadataValue.path(root_url),
            "tables": len(versions),
            "versions": dg.MetadataValue.json(versions),
        }
    )


@dataclass(frozen=True)
class PartitionCommit:
    """What one cluster-day's commit did.

    Attributes:
        cluster: the partition's cluster.
        day: the partition's UTC day (YYYY-MM-DD).
        files: input files parsed.
        rows: table → rows committed (every raw table of the registry, ``raw.ingests`` and
            ``raw.rejected_rows``; 0 included).
        rejected: input rows rejected by the parsers.
        versions: table → the Delta version its commit created (-1: nothing to remove).
    """

    cluster: str
    day: str
    files: int
    rows: dict[str, int]
    rejected: int
    versions: dict[str, int]


def commit_raw_partition(
    cfg: Config,
    cluster: str,
    day: str,
    root_url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> PartitionCommit:
    """Parse one cluster-day's input files and commit every raw table's rows to the lake.

    The files are those the file sources would fetch (``<cluster input dir>/<kind folder>/``,
    the day in the name; a live source's spooled files included), of every input kind whose
    scheduler matches the cluster's, loaded in registry and file order into an in-memory DuckDB
    that only this call sees; then each raw table of the registry is committed with
    :func:`~pipelines.warehouse.delta.commit_partition`, replacing that cluster-day's rows
    (an empty table removes them); ``raw.ingests`` (one row per file) and ``raw.rejected_rows``
    are committed the same way, so a warehouse loaded from the lake
    (:func:`pipelines.warehouse.lake_load.load_raw_from_lake`) has the same loads and rejects as
    one the files were ingested into. ``ingest_id`` counts this partition's files from 1.

    Args:
        cfg: configuration (clusters, zones, input folders).
        cluster: the partition's cluster.
        day: the partition's UTC day, YYYY-MM-DD.
        root_url: the lake root.
        storage_options: object_store options for the lake.

    Raises:
        InputFormatError: an input file cannot be read (nothing of this partition is committed).
    """
    ccfg = cfg.cluster(cluster)
    folder = cfg.cluster_input_dir(cluster)
    files = rejected = 0
    frames: dict[str, pl.DataFrame] = {}
    with duckdb.connect(":memory:") as con:
        init_warehouse(con)
        for kind in input_kinds():
            if kind.scheduler and ccfg.scheduler != kind.scheduler:
                continue
            for path in files_for_day(folder, kind.name, day):
                stats = ingest_configured(con, cfg, kind.name, path, cluster=cluster)
                files += 1
                rejected += stats.rows_rejected
        for table in LAKE_RAW_TABLES:
            if table_exists(con, table):
                frames[table] = read_table(con, table)
    rows: dict[str, int] = {}
    versions: dict[str, int] = {}
    for table, frame in frames.items():
        versions[table] = commit_partition(
            root_url, table, frame, cluster=cluster, day=day, storage_options=storage_options
        )
        rows[table] = frame.height
    return PartitionCommit(cluster, day, files, rows, rejected, versions)
