"""Freshness of the sources: Dagster's last-update freshness checks on the raw assets, a sensor
that evaluates them, and the same rule over the ``ingests`` table for the dashboard.

A source is **stale** when its newest load is older than its lower bound: ``now − last load >
[freshness] <group>_hours`` (goodput.toml; default 26 h, a daily load plus slack). The groups:
``sacct`` (raw ``slurm_rows`` and ``slurm_state``: sacct, node and TRES events, sshare), ``k8s``
(``k8s_*``) and ``dcgm`` (``dcgm_samples``). In Dagster the check is
:func:`dagster.build_last_update_freshness_checks` (an asset is fresh when a materialization of
any of its partitions happened within the bound, evaluated at check time) and
:func:`dagster.build_sensor_for_freshness_checks` launches them when one could have gone
overdue. The dashboard reads the load times from ``ingests`` (one row per loaded file, with
``loaded_at``) and applies :func:`stale_sources`.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import polars as pl

from pipelines.config import FRESHNESS_GROUPS, Config
from pipelines.kinds import input_kinds, raw_sources

if TYPE_CHECKING:
    import dagster as dg

__all__ = [
    "FRESHNESS_SENSOR",
    "RAW_ASSETS",
    "SOURCE_GROUP",
    "build_freshness_checks",
    "build_freshness_sensor",
    "source_group",
    "stale_sources",
]

#: Name of the sensor that evaluates the freshness checks.
FRESHNESS_SENSOR = "source_freshness"

#: Raw asset name → freshness group (``slurm_rows`` → ``sacct``), from the kinds registry: an
#: asset's group is that of its raw sources.
RAW_ASSETS: dict[str, str] = {k.asset: k.sources[0].freshness for k in input_kinds()}

#: ``ingests.source`` (every raw source and input kind) → freshness group.
SOURCE_GROUP: dict[str, str] = {
    **{k.name: k.sources[0].freshness for k in input_kinds()},
    **{name: src.freshness for name, src in raw_sources().items()},
}

assert set(RAW_ASSETS.values()) == set(FRESHNESS_GROUPS)


def source_group(source: str) -> str | None:
    """The freshness group of an ``ingests.source`` value, ``None`` when it belongs to none."""
    return SOURCE_GROUP.get(source)


def build_freshness_checks(
    cfg: Config, raw_assets: Iterable[dg.AssetsDefinition]
) -> list[dg.AssetChecksDefinition]:
    """A last-update freshness check on each raw asset, with its group's lower bound.

    Args:
        cfg: configuration; ``cfg.freshness_hours[group]`` is the bound in hours.
        raw_assets: the ``raw/*`` assets; each is put in the group of its name's prefix
            (:data:`RAW_ASSETS`); assets of no group get no check.

    Returns:
        One checks definition per group, each with a check named ``freshness_check`` on every
        asset of the group; severity WARN (a stale source is a warning, not a failed run).
    """
    import dagster as dg  # here, not at the top: the dashboard imports this module (stale_sources)

    groups: dict[str, list[dg.AssetKey]] = {}
    for asset in raw_assets:
        for key in asset.keys:
            group = RAW_ASSETS.get(key.path[-1])
            if key.path[0] == "raw" and group is not None:
                groups.setdefault(group, []).append(key)
    checks: list[dg.AssetChecksDefinition] = []
    with warnings.catch_warnings():
        # Superseded by FreshnessPolicy, which the daemon evaluates out of process; these checks
        # run in any job or sensor and report pass/fail per asset, so they stay testable here.
        warnings.simplefilter("ignore", dg.SupersessionWarning)
        for group, keys in sorted(groups.items()):
            checks.extend(
                dg.build_last_update_freshness_checks(
                    assets=keys,
                    lower_bound_delta=dt.timedelta(hours=cfg.freshness_hours[group]),
                )
            )
    return checks


def build_freshness_sensor(
    checks: Sequence[dg.AssetChecksDefinition], *, minimum_interval_seconds: int = 600
) -> dg.SensorDefinition:
    """The sensor (:data:`FRESHNESS_SENSOR`) that runs ``checks`` when one could be overdue."""
    import dagster as dg  # see build_freshness_checks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.SupersessionWarning)  # see build_freshness_checks
        return dg.build_sensor_for_freshness_checks(
            freshness_checks=checks,
            minimum_interval_seconds=minimum_interval_seconds,
            name=FRESHNESS_SENSOR,
            default_status=dg.DefaultSensorStatus.RUNNING,
        )


def stale_sources(freshness: pl.DataFrame, cfg: Config, now: dt.datetime) -> pl.DataFrame:
    """Flag each source whose data are older than its group's lower bound.

    A source's **data age** is ``now − newest_data_at`` (the newest record time of its loaded
    files, not after their load); its **load age** ``now − last_loaded_at``. It is stale when its
    age exceeds the group's bound, the age being the data age where the rows carry a data time
    and the load age where they do not (a node list). Yesterday's load of data 15 days old is
    stale (METRICS.md, "Source freshness").

    Args:
        freshness: ``source, cluster, last_loaded_at`` (UTC), optionally ``newest_data_at``, and
            any other columns, as the dashboard's ``freshness`` query returns.
        cfg: configuration (``freshness_hours``).
        now: the time to judge at (UTC).

    Returns:
        ``freshness`` with ``data_age_h`` (NULL without a data time), ``load_age_h``, ``age_h``
        (data age, else load age), ``limit_h`` (the group's bound; NULL for a source outside
        every group) and ``stale`` (``age_h > limit_h``; False without a bound) appended.
    """
    if freshness.height == 0:
        return freshness
    if "newest_data_at" not in freshness.columns:
        freshness = freshness.with_columns(
            pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("newest_data_at")
        )
    limits = {
        source: cfg.freshness_hours[group]
        for source in freshness["source"].unique().to_list()
        if (group := source_group(source)) is not None
    }

    def hours_since(column: str) -> pl.Expr:
        return (pl.lit(now) - pl.col(column)).dt.total_microseconds() / 3.6e9

    limit = pl.col("source").replace_strict(limits, default=None, return_dtype=pl.Float64)
    return (
        freshness.with_columns(
            hours_since("newest_data_at").alias("data_age_h"),
            hours_since("last_loaded_at").alias("load_age_h"),
            limit.alias("limit_h"),
        )
        .with_columns(pl.coalesce("data_age_h", "load_age_h").alias("age_h"))
        .with_columns((pl.col("age_h") > pl.col("limit_h")).fill_null(False).alias("stale"))
    )
