"""DCGM telemetry inputs: dcgm-exporter scrapes (files, folders, Prometheus spools) and hourly
per-GPU aggregates, parsed without Dagster.

:data:`KINDS` is this package's rows of the input-kind registry (:mod:`pipelines.kinds`); the
Dagster edge (file and Prometheus twins) is :mod:`pipelines.dcgm.resources`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pipelines._parse_result import ParseResult
from pipelines.dcgm._dcgm_parse import (
    DCGM_SAMPLE_SCHEMA,
    iter_parse_dcgm,
    parse_dcgm,
    parse_dcgm_dir,
)
from pipelines.dcgm._hourly import DCGM_HOURLY_SCHEMA, parse_dcgm_hourly
from pipelines.kinds import IngestOptions, InputKind, RawSource

__all__ = ["DCGM", "DCGM_CHUNK_BYTES", "DCGM_HOURLY", "DCGM_HOURLY_SCHEMA", "KINDS"]

#: Bytes of decompressed dcgm-exporter text parsed at a time (bounds the ingest's memory).
DCGM_CHUNK_BYTES = 16 << 20


def _dcgm(path: Path, o: IngestOptions) -> ParseResult:
    if path.is_dir():
        return parse_dcgm_dir(path, cluster=o.cluster)
    return parse_dcgm(path, cluster=o.cluster, scrape_time=o.scrape_time)


def _dcgm_blocks(path: Path, o: IngestOptions) -> Iterator[ParseResult]:
    return iter_parse_dcgm(
        path, cluster=o.cluster, scrape_time=o.scrape_time, chunk_bytes=DCGM_CHUNK_BYTES
    )


DCGM = InputKind(
    name="dcgm",
    sources=(
        RawSource(
            "dcgm",
            "raw.dcgm_samples",
            DCGM_SAMPLE_SCHEMA,
            _dcgm,
            freshness="dcgm",
            telemetry_time="ts",
        ),
    ),
    folder="dcgm",
    globs=("*.prom", "*.prom.gz", "*.txt", "*.om", "*.om.gz"),
    asset="dcgm_samples",
    group="dcgm",
    scheduler=None,
    source_key="dcgm_source",
    description=(
        "One row per DCGM sample (long format, labels normalised), from dcgm-exporter "
        "text dumps, one partition per cluster and day."
    ),
    help="dcgm-exporter text/OpenMetrics (gzip allowed), files or snapshot folders",
    chunked=_dcgm_blocks,
    reads_folders=True,
)

DCGM_HOURLY = InputKind(
    name="dcgm-hourly",
    sources=(
        RawSource(
            "dcgm-hourly",
            "raw.dcgm_hourly",
            DCGM_HOURLY_SCHEMA,
            lambda p, o: parse_dcgm_hourly(p, cluster=o.cluster),
            freshness="dcgm",
            telemetry_time="hour",
        ),
    ),
    folder="dcgm_hourly",
    globs=("date=*/*.parquet",),
    asset="dcgm_hourly",
    group="dcgm",
    scheduler=None,
    source_key="dcgm_hourly_source",
    description=(
        "One row per GPU, UTC hour and job label: hourly DCGM aggregates (mean activity, "
        "max FB, last XID) from Parquet files, one partition per cluster and day."
    ),
    help="hourly per-GPU Parquet rollups",
)

#: This package's input kinds, in registry order.
KINDS: tuple[InputKind, ...] = (DCGM, DCGM_HOURLY)
