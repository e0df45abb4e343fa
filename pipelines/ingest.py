"""Parse-and-load of input files: one code path for ``goodput ingest`` and the Dagster assets."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult, empty_rejected
from pipelines.config import Config
from pipelines.kinds import (
    IngestOptions,
    InputKind,
    input_kind,
    input_kinds,
    raw_source,
    raw_sources,
)
from pipelines.warehouse import (
    LARGE_FILE_BYTES,
    IngestStats,
    load_parse_result,
    load_parse_results,
)
from pipelines.warehouse.sql import load_sql

__all__ = [
    "SOURCES",
    "IngestOptions",
    "file_day",
    "ingest_configured",
    "ingest_file",
    "ingest_options",
    "parse_file",
    "state_source",
]

#: The input kinds ``goodput ingest`` knows, as named on the command line (the registry's).
SOURCES = tuple(k.name for k in input_kinds())

_DAY_RE = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})")


def state_source(path: Path) -> str:
    """The raw source of a ``slurm-state`` file, from its name (``events_…``, ``nodes_…``, …).

    Raises:
        InputFormatError: the name does not start with a known kind.
    """
    return input_kind("slurm-state").source_of(path).name


def file_day(path: Path) -> str | None:
    """The ``YYYY-MM-DD`` day an input file's name carries (``sacct_2026-11-02.psv``), if any."""
    m = _DAY_RE.search(path.name)
    if not m:
        return None
    y, mo, d = m.groups()
    if not (1 <= int(mo) <= 12 and 1 <= int(d) <= 31):
        return None
    return f"{y}-{mo}-{d}"


def parse_file(source: str, path: Path, opts: IngestOptions) -> ParseResult:
    """Parse one input file with the parser of ``source`` (an input kind or a raw source).

    Raises:
        InputFormatError: the file cannot be read or is not of the named kind.
        ValueError: unknown ``source``, or a kind that splits into several tables.
    """
    if not path.exists():
        raise InputFormatError(str(path), "no such file")
    raw = raw_source(source) if source in raw_sources() else input_kind(source).source_of(path)
    assert raw.parse is not None
    return raw.parse(path, opts)


def ingest_file(
    con: duckdb.DuckDBPyConnection, source: str, path: Path, opts: IngestOptions
) -> IngestStats:
    """Parse one file and load it into its raw table (replacing an earlier load of it).

    A ``sacct`` text file is parsed and loaded in blocks of :data:`SACCT_CHUNK_BYTES` (one
    transaction still), and a single ``dcgm`` file (a scrape, or a Prometheus spool file) in
    blocks of :data:`DCGM_CHUNK_BYTES` of decompressed text, so memory stays bounded however
    large the file (two blocks for a file of :data:`LARGE_FILE_BYTES` or more: the next is
    parsed while the current one is stored); other inputs (and ``sacct --json``, a ``dcgm``
    folder) are parsed whole.

    Raises:
        InputFormatError: the file cannot be read or is not of the named kind.
    """
    kind = next((k for k in input_kinds() if k.name == source), None)
    if kind is not None and kind.split is not None:
        return _ingest_split(con, kind, path, opts)
    if kind is not None and kind.chunked is not None and path.is_file():
        # a large file's next block is parsed while DuckDB stores this one (on one thread):
        # 0.82–0.86 of the serial time at 250,000 allocations, 70–120 MB more (BENCHMARKS.md)
        return load_parse_results(
            con,
            source=source,
            cluster=opts.cluster,
            file=path,
            results=kind.chunked(path, opts),
            prefetch=path.stat().st_size >= LARGE_FILE_BYTES,
        )
    if kind is not None and kind.route is not None:
        source = kind.source_of(path).name
    result = parse_file(source, path, opts)
    return load_parse_result(con, source=source, cluster=opts.cluster, file=path, result=result)


def ingest_options(
    cfg: Config,
    kind: str,
    cluster: str | None = None,
    *,
    tz: str | None = None,
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
    scrape_time: dt.datetime | None = None,
) -> IngestOptions:
    """How to read a file of ``kind`` for ``cluster``: what is given, else the configured value.

    Args:
        cfg: configuration (the cluster's zone and sacct field list).
        kind: input kind, as ``goodput ingest`` names it.
        cluster: cluster of rows without a Cluster column; default the configured default.
        tz: IANA zone of naive times; default the cluster's configured ``timezone``.
        fields: sacct ``--format`` list of headerless files; default the cluster's
            ``sacct_fields`` (sacct only).
        delimiter: sacct delimiter (None: detected from a header, else ``|``).
        scrape_time: time (UTC) of DCGM samples that carry no timestamp.

    Returns:
        The options; ``fields`` as a tuple, or None when there are none.
    """
    name = cluster or cfg.default_cluster
    own = cfg.cluster(name)
    if fields is None and kind == "sacct" and own.sacct_fields:
        fields = own.sacct_fields
    return IngestOptions(
        cluster=name,
        tz=tz or own.timezone,
        fields=tuple(fields) if fields else None,
        delimiter=delimiter,
        scrape_time=scrape_time,
    )


def ingest_configured(
    con: duckdb.DuckDBPyConnection,
    cfg: Config,
    kind: str,
    path: Path,
    *,
    cluster: str | None = None,
    tz: str | None = None,
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
    scrape_time: dt.datetime | None = None,
) -> IngestStats:
    """Load one file of ``kind`` with options from the config: ``goodput ingest`` and the raw
    Dagster assets both load through here.

    The file is read with :func:`ingest_options`. Unless ``tz`` is given, a sacct file whose
    rows all name one cluster (their Cluster column) is read in that cluster's configured zone
    (UTC for a cluster the configuration lacks): when it is not the zone it was read in, the
    file is read again, the second load replacing the first. Rows naming a cluster the
    configuration lacks are named in the stats' ``warnings``, with the zone they were read in.

    Args:
        con: warehouse connection (raw tables created).
        cfg: configuration.
        kind: input kind, as ``goodput ingest`` names it.
        path: the file (``dcgm``: a file or a snapshot folder).
        cluster: cluster of rows without a Cluster column; default the configured default.
        tz: IANA zone of naive times, overriding the configured ones.
        fields: sacct ``--format`` list; default the cluster's ``sacct_fields``.
        delimiter: sacct delimiter.
        scrape_time: time (UTC) of DCGM samples that carry no timestamp.

    Returns:
        The load's stats; ``replaced_ingests`` counts earlier loads of the file, not the first
        read a zone re-read replaces.

    Raises:
        InputFormatError: the file cannot be read or is not of the named kind.
    """
    opts = ingest_options(
        cfg, kind, cluster, tz=tz, fields=fields, delimiter=delimiter, scrape_time=scrape_time
    )
    stats = ingest_file(con, kind, path, opts)
    if kind == "sacct":
        named = con.execute(
            load_sql("raw/clusters_of_ingest"), {"ingest_id": stats.ingest_id}
        ).fetchall()
        used = tz or opts.tz
        if tz is None:
            own = cfg.cluster(named[0][0]).timezone if len(named) == 1 else opts.tz
            if own != opts.tz:
                again = ingest_file(con, kind, path, dataclasses.replace(opts, tz=own))
                stats = dataclasses.replace(again, replaced_ingests=stats.replaced_ingests)
                used = own
        configured = {c.name for c in cfg.clusters}
        unknown = sorted(str(c) for (c,) in named if c is not None and c not in configured)
        if configured and unknown:
            # A cluster the configuration lacks has no zone of its own (one named alone is
            # read as UTC): said, since a misspelt name shifts every time by the zone's offset.
            # sacct --json times are epoch seconds, which no zone shifts: not said of them.
            fmt = con.execute(
                load_sql("raw/ingest_format"), {"ingest_id": stats.ingest_id}
            ).fetchone()
            zone = (
                ": their times are epoch seconds (sacct --json), read without a zone"
                if fmt is not None and fmt[0] == "json"
                else f": their times were read as {used}"
            )
            stats = dataclasses.replace(
                stats,
                warnings=(
                    *stats.warnings,
                    f"rows name cluster(s) {', '.join(unknown)} that goodput.toml does not"
                    f" configure{zone}",
                ),
            )
    return stats


def _ingest_split(
    con: duckdb.DuckDBPyConnection, kind: InputKind, path: Path, opts: IngestOptions
) -> IngestStats:
    """Load a file that fills several raw tables (a Kueue/Node dump: ``k8s-workloads``, …),
    one load per raw source.

    A kind the file no longer holds has its earlier load of this file replaced by an empty one,
    so re-ingesting a changed file is idempotent too. The stats are the loads' sums.
    """
    if not path.exists():
        raise InputFormatError(str(path), "no such file")
    assert kind.split is not None
    found = kind.split(path, opts)
    loaded = rejected = replaced = 0
    last = None
    for raw in kind.sources:
        source = raw.name
        result = found.get(source)
        if result is None:
            if not con.execute(
                load_sql("raw/previous_ingests_of_file"),
                {"source": source, "file": str(path.resolve())},
            ).fetchall():
                continue
            result = ParseResult(rows=pl.DataFrame(schema=raw.schema), rejected=empty_rejected())
        last = load_parse_result(con, source=source, cluster=opts.cluster, file=path, result=result)
        loaded += last.rows_loaded
        rejected += last.rows_rejected
        replaced += last.replaced_ingests
    assert last is not None
    return IngestStats(
        ingest_id=last.ingest_id,
        source=kind.name,
        file=last.file,
        rows_loaded=loaded,
        rows_rejected=rejected,
        replaced_ingests=replaced,
    )
