"""Parse-and-load of input files: one code path for ``goodput ingest`` and the Dagster assets."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.warehouse import IngestStats, load_parse_result, load_parse_results

__all__ = ["SOURCES", "IngestOptions", "file_day", "ingest_file", "parse_file"]

#: The input kinds ``goodput ingest`` knows, as named on the command line.
SOURCES = ("sacct", "k8s-events", "k8s-pods", "dcgm", "slurm-state")

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
    transaction still), so memory stays bounded however large the file; other inputs (and
    ``sacct --json``) are parsed whole.

    Raises:
        InputFormatError: the file cannot be read or is not of the named kind.
    """
    if source == "slurm-state":
        source = state_source(path)
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
