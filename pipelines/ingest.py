"""Parse-and-load of input files: one code path for ``goodput ingest`` and the Dagster assets."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult, empty_rejected
from pipelines.sql import load_sql
from pipelines.warehouse import IngestStats, load_parse_result, load_parse_results

__all__ = ["SOURCES", "IngestOptions", "file_day", "ingest_file", "parse_file"]

#: The input kinds ``goodput ingest`` knows, as named on the command line.
SOURCES = (
    "sacct", "k8s-events", "k8s-pods", "k8s-objects", "dcgm", "dcgm-hourly", "slurm-state"
)

#: ``slurm-state`` files (``<cluster>/slurm_state/<kind>_<day>.*``, as the live state source
#: spools them) by name prefix → the raw source they load into.
STATE_PREFIXES = {"events": "slurm-events", "nodes": "slurm-nodes", "sshare": "sshare",
                  "jobs": "slurm-jobs-gres", "reservation_history": "slurm-reservations",
                  "reservations": "slurm-reservations"}  # fmt: skip


def state_source(path: Path) -> str:
    """The raw source of a ``slurm-state`` file, from its name (``events_…``, ``nodes_…``, …).

    Raises:
        InputFormatError: the name does not start with a known kind.
    """
    for prefix, source in STATE_PREFIXES.items():
        if path.name.startswith(prefix):
            return source
    raise InputFormatError(
        str(path), f"not a Slurm state file: the name must start with {', '.join(STATE_PREFIXES)}"
    )


#: Bytes of a sacct text file :func:`ingest_file` parses at a time (bounds its memory).
SACCT_CHUNK_BYTES = 64 << 20

#: Bytes of decompressed dcgm-exporter text :func:`ingest_file` parses at a time.
DCGM_CHUNK_BYTES = 16 << 20

_DAY_RE = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})")


@dataclass(frozen=True)
class IngestOptions:
    """How to read one file.

    Attributes:
        cluster: cluster name for rows whose input does not carry one.
        tz: IANA zone of naive times (sacct).
        fields: sacct ``--format`` field list for headerless files.
        delimiter: sacct field delimiter (auto-detected from a header when None).
        scrape_time: time (UTC) of DCGM samples that carry no timestamp.
    """

    cluster: str = "default"
    tz: str = "UTC"
    fields: Sequence[str] | None = None
    delimiter: str | None = None
    scrape_time: dt.datetime | None = None


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
    """Parse one input file with the parser of ``source``.

    Raises:
        InputFormatError: the file cannot be read or is not of the named kind.
        ValueError: unknown ``source``.
    """
    if not path.exists():
        raise InputFormatError(str(path), "no such file")
    if source == "sacct":
        from pipelines.slurm._sacct_parse import parse_sacct

        return parse_sacct(
            path, fields=opts.fields, delimiter=opts.delimiter, cluster=opts.cluster, tz=opts.tz
        )
    if source == "k8s-events":
        from pipelines.kubernetes._events_parse import parse_k8s_events

        return parse_k8s_events(path, cluster=opts.cluster)
    if source == "k8s-pods":
        from pipelines.kubernetes._pods_parse import parse_k8s_pods

        return parse_k8s_pods(path, cluster=opts.cluster)
    if source in ("k8s-workloads", "kueue-cluster-queues", "kueue-local-queues", "k8s-nodes"):
        from pipelines.kubernetes._objects import parse_k8s_objects

        found = parse_k8s_objects(path, cluster=opts.cluster)
        if source not in found:
            raise InputFormatError(str(path), f"no {source} object in it")
        return found[source]
    if source == "k8s-objects":
        raise ValueError("k8s-objects splits into several tables: use ingest_file")
    if source == "dcgm-hourly":
        from pipelines.dcgm._hourly import parse_dcgm_hourly

        return parse_dcgm_hourly(path, cluster=opts.cluster)
    if source == "dcgm":
        from pipelines.dcgm._dcgm_parse import parse_dcgm, parse_dcgm_dir

        if path.is_dir():
            return parse_dcgm_dir(path, cluster=opts.cluster)
        return parse_dcgm(path, cluster=opts.cluster, scrape_time=opts.scrape_time)
    if source in ("slurm-events", "slurm-nodes", "sshare", "slurm-jobs-gres"):
        from pipelines.slurm import _cluster_state as cs

        if source == "slurm-jobs-gres":
            return cs.parse_scontrol_jobs(path, cluster=opts.cluster, tz=opts.tz)
        if source == "slurm-events":
            return cs.parse_sacctmgr_events(path, cluster=opts.cluster, tz=opts.tz)
        if source == "slurm-nodes":
            return cs.parse_scontrol_nodes(path, cluster=opts.cluster, tz=opts.tz)
        return cs.parse_sshare(path, cluster=opts.cluster)
    if source == "slurm-reservations":
        from pipelines.slurm import _reservations as rs

        if path.name.startswith("reservation_history"):
            return rs.parse_sacctmgr_reservations(path, cluster=opts.cluster, tz=opts.tz)
        return rs.parse_scontrol_reservations(path, cluster=opts.cluster, tz=opts.tz)
    if source == "slurm-state":
        return parse_file(state_source(path), path, opts)
    raise ValueError(f"unknown source {source!r}; expected one of {', '.join(SOURCES)}")


def ingest_file(
    con: duckdb.DuckDBPyConnection, source: str, path: Path, opts: IngestOptions
) -> IngestStats:
    """Parse one file and load it into its raw table (replacing an earlier load of it).

    A ``sacct`` text file is parsed and loaded in blocks of :data:`SACCT_CHUNK_BYTES` (one
    transaction still), and a single ``dcgm`` file (a scrape, or a Prometheus spool file) in
    blocks of :data:`DCGM_CHUNK_BYTES` of decompressed text, so memory stays bounded however
    large the file; other inputs (and ``sacct --json``, a ``dcgm`` folder) are parsed whole.

    Raises:
        InputFormatError: the file cannot be read or is not of the named kind.
    """
    if source == "slurm-state":
        source = state_source(path)
    if source == "k8s-objects":
        return _ingest_k8s_objects(con, path, opts)
    if source == "dcgm" and path.is_file():
        from pipelines.dcgm._dcgm_parse import iter_parse_dcgm

        blocks = iter_parse_dcgm(
            path, cluster=opts.cluster, scrape_time=opts.scrape_time, chunk_bytes=DCGM_CHUNK_BYTES
        )
        return load_parse_results(
            con, source=source, cluster=opts.cluster, file=path, results=blocks
        )
    if source == "sacct" and path.is_file():
        from pipelines.slurm._sacct_parse import iter_parse_sacct

        results = iter_parse_sacct(
            path,
            fields=opts.fields,
            delimiter=opts.delimiter,
            cluster=opts.cluster,
            tz=opts.tz,
            chunk_bytes=SACCT_CHUNK_BYTES,
        )
        return load_parse_results(
            con, source=source, cluster=opts.cluster, file=path, results=results
        )
    result = parse_file(source, path, opts)
    return load_parse_result(con, source=source, cluster=opts.cluster, file=path, result=result)


def _ingest_k8s_objects(
    con: duckdb.DuckDBPyConnection, path: Path, opts: IngestOptions
) -> IngestStats:
    """Load a Kueue/Node dump into its raw tables, one load per kind (``k8s-workloads``, …).

    A kind the file no longer holds has its earlier load of this file replaced by an empty one,
    so re-ingesting a changed file is idempotent too. The stats are the loads' sums.
    """
    from pipelines.kubernetes._objects import OBJECT_SOURCES, object_schema, parse_k8s_objects

    if not path.exists():
        raise InputFormatError(str(path), "no such file")
    found = parse_k8s_objects(path, cluster=opts.cluster)
    loaded = rejected = replaced = 0
    last = None
    for source in OBJECT_SOURCES:
        result = found.get(source)
        if result is None:
            if not con.execute(
                load_sql("raw/previous_ingests_of_file"),
                {"source": source, "file": str(path.resolve())},
            ).fetchall():
                continue
            result = ParseResult(
                rows=pl.DataFrame(schema=object_schema(source)), rejected=empty_rejected()
            )
        last = load_parse_result(con, source=source, cluster=opts.cluster, file=path, result=result)
        loaded += last.rows_loaded
        rejected += last.rows_rejected
        replaced += last.replaced_ingests
    assert last is not None
    return IngestStats(
        ingest_id=last.ingest_id,
        source="k8s-objects",
        file=last.file,
        rows_loaded=loaded,
        rows_rejected=rejected,
        replaced_ingests=replaced,
    )
