"""One factory for the raw ingest assets of every source (one code path, parametrised)."""

# ruff: noqa: I002 - no `from __future__ import annotations` here: Dagster compares the `context`
# annotation object itself with AssetExecutionContext; a postponed (string) annotation fails.

import warnings
from typing import Any

import dagster as dg
from dagster import AssetExecutionContext
from dagster_duckdb import DuckDBResource
from polars.exceptions import PanicException

from pipelines._sources import InputSource
from pipelines.config import load_config
from pipelines.ingest import ingest_configured
from pipelines.kinds import InputKind, input_kinds
from pipelines.partitions import split_partition_key
from pipelines.warehouse import init_warehouse

__all__ = ["REJECTED_SHARE_CHECK", "SettingsResource", "build_raw_assets", "raw_ingest_asset"]

#: Name of the check on every raw asset: rejected rows stay below 1 % of the rows read.
REJECTED_SHARE_CHECK = "rejected_share_below_1pct"

#: A backfill of many cluster-days runs as few Dagster runs, each looping over up to this many
#: partitions one file at a time (bounded memory: one file is parsed and loaded at a time).
MAX_PARTITIONS_PER_RUN = 400


class SettingsResource(dg.ConfigurableResource):  # type: ignore[type-arg]  # Dagster idiom
    """Where ``goodput.toml`` is; resolved at run time, never at import."""

    config_path: str | None = None


def raw_ingest_asset(
    input_kind: InputKind, partitions_def: dg.PartitionsDefinition[Any]
) -> dg.AssetsDefinition:
    """Build the partitioned raw asset that loads one input kind for one cluster and day.

    Args:
        input_kind: the registry row (:mod:`pipelines.kinds`): asset name (``raw/<asset>``),
            group, scheduler (only clusters of it have this input; None: every cluster),
            resource key of the :class:`InputSource` to fetch files from, description.
        partitions_def: the cluster × day partitions.
    """
    name, kind, source_key = input_kind.asset, input_kind.name, input_kind.source_key
    group, scheduler, description = (
        input_kind.group, input_kind.scheduler, input_kind.description
    )  # fmt: skip

    with warnings.catch_warnings():
        # ``backfill_policy`` is a beta parameter of ``dg.asset`` in Dagster 1.13 (used as
        # documented); its warning would print on every load of the definitions.
        warnings.simplefilter("ignore", dg.BetaWarning)
        decorate = dg.asset(
            name=name,
            key_prefix=["raw"],
            group_name=group,
            partitions_def=partitions_def,
            pool="duckdb",
            kinds={"duckdb", "polars"},
            description=description,
            backfill_policy=dg.BackfillPolicy.multi_run(MAX_PARTITIONS_PER_RUN),
            required_resource_keys={"duckdb", "settings", source_key},
            check_specs=[
                dg.AssetCheckSpec(
                    REJECTED_SHARE_CHECK,
                    asset=dg.AssetKey(["raw", name]),
                    description="Rejected input rows are below 1 % of the rows read in this "
                    "partition (or partition range).",
                )
            ],
        )

    def _asset(context: AssetExecutionContext) -> dg.MaterializeResult:  # type: ignore[type-arg]  # Dagster matches the bare class
        settings: SettingsResource = getattr(context.resources, "settings")  # noqa: B009
        duck: DuckDBResource = getattr(context.resources, "duckdb")  # noqa: B009
        source: InputSource = getattr(context.resources, source_key)
        cfg = load_config(settings.config_path)
        # One partition (a daily run, the sensor) or a range (a backfill run): cluster-days in
        # order, each file parsed and loaded on its own, so memory stays that of one file.
        keys = [split_partition_key(k) for k in context.partition_keys]
        loaded = rejected = n_files = 0
        failed: list[str] = []
        with duck.get_connection() as con:
            init_warehouse(con)
            for cluster, day in sorted(keys, key=lambda k: (k[1], k[0])):
                ccfg = cfg.cluster(cluster)
                if scheduler and ccfg.scheduler != scheduler:
                    continue
                for f in source.fetch(cluster, day):
                    # The configured options, and the zone re-read, of `goodput ingest`; a file
                    # that fails rolls back alone and the batch goes on (as the CLI).
                    try:
                        stats = ingest_configured(con, cfg, kind, f, cluster=cluster)
                    except (Exception, PanicException) as exc:
                        failed.append(f"{f}: {type(exc).__name__}: {exc}")
                        context.log.error(f"{f}: not loaded: {type(exc).__name__}: {exc}")
                        continue
                    loaded += stats.rows_loaded
                    rejected += stats.rows_rejected
                    n_files += 1
                    context.log.info(
                        f"{f}: {stats.rows_loaded} rows loaded, {stats.rows_rejected} rejected"
                    )
                    for warning in stats.warnings:
                        context.log.warning(f"{f}: {warning}")
        if failed:
            # the other files are loaded (each in its own transaction); the run says which failed
            raise dg.Failure(
                description=f"{len(failed)} file(s) not loaded: " + "; ".join(failed[:5]),
                metadata={"failed_files": len(failed), "files_loaded": n_files},
            )
        first, last = min(keys, key=lambda k: k[1]), max(keys, key=lambda k: k[1])
        total = loaded + rejected
        share = rejected / total if total else 0.0
        return dg.MaterializeResult(
            metadata={
                "files": n_files,
                "row_count": loaded,
                "rejected_count": rejected,
                "partitions": len(keys),
                "cluster": ",".join(sorted({c for c, _d in keys})),
                "day": first[1] if first[1] == last[1] else f"{first[1]}..{last[1]}",
            },
            check_results=[
                dg.AssetCheckResult(
                    check_name=REJECTED_SHARE_CHECK,
                    passed=share < 0.01,
                    severity=dg.AssetCheckSeverity.WARN,
                    metadata={"rejected_share": share, "rejected_count": rejected},
                )
            ],
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return decorate(_asset)


def build_raw_assets(partitions_def: dg.PartitionsDefinition[Any]) -> list[dg.AssetsDefinition]:
    """One raw asset per input kind of the registry, over the cluster × day partitions."""
    return [raw_ingest_asset(k, partitions_def) for k in input_kinds()]
