"""The lake export asset and its resource: the serving copy's raw and core tables as Parquet."""

from __future__ import annotations

from typing import Any

import dagster as dg

from pipelines._raw_assets import SettingsResource
from pipelines.config import load_config
from pipelines.warehouse.lake import DEFAULT_LAKE_TABLES, export_lake

__all__ = ["LAKE_EXPORT_KEY", "LAKE_URL_ENV", "LakeResource", "lake_export"]

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
    kinds={"parquet", "polars", "s3"},
)
def lake_export(settings: SettingsResource, lake: LakeResource) -> dg.MaterializeResult[Any]:
    """The raw and core tables as hive-partitioned Parquet (cluster × UTC day), one file each.

    Read from the published serving copy (read-only, so the writer is never blocked); skipped,
    with ``skipped`` metadata, when no lake URL is configured.
    """
    root_url = lake.resolved_root_url()
    if root_url is None:
        return dg.MaterializeResult(
            metadata={"skipped": f"{lake.root_url_env} is not set", "files": 0}
        )
    cfg = load_config(settings.config_path)
    files = export_lake(
        cfg.serving_path,
        root_url,
        tables=DEFAULT_LAKE_TABLES,
        storage_options=lake.storage_options(),
    )
    return dg.MaterializeResult(
        metadata={
            "root_url": dg.MetadataValue.url(root_url)
            if "://" in root_url
            else dg.MetadataValue.path(root_url),
            "files": len(files),
            "tables": dg.MetadataValue.json(list(DEFAULT_LAKE_TABLES)),
        }
    )
