"""Every input kind once: the registry the ingest, the warehouse, the file sources, the runner,
the CLI, freshness and the raw Dagster assets are all derived from.

Two levels, as the warehouse has them:

* an :class:`InputKind` is what a person names: the ``goodput ingest KIND`` word, a folder of
  input files, one partitioned raw Dagster asset (``raw/<asset>``);
* a :class:`RawSource` is what a parse fills: one ``raw.*`` table, named in ``ingests.source``.
  Most kinds fill one source of the same name (``sacct`` → ``raw.slurm_rows``); ``k8s-objects``
  splits one file into four tables, and ``slurm-state`` routes each file to one source by its
  name (``nodes_<day>.txt`` → ``slurm-nodes``).

Each source package contributes its rows from its ``__init__`` (``pipelines.slurm.KINDS``,
``pipelines.kubernetes.KINDS``, ``pipelines.dcgm.KINDS``); :func:`input_kinds` gathers them in
a fixed order. Adding an input kind is one :class:`InputKind` row there plus its parser (README,
"Adding an input kind"). This module imports no source package at import time, so the packages
may import it.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult

__all__ = [
    "IngestOptions",
    "InputKind",
    "RawSource",
    "input_kind",
    "input_kinds",
    "raw_source",
    "raw_sources",
    "route_by_prefix",
]


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


#: A whole-file parser: ``(path, options) -> ParseResult``.
Parser = Callable[[Path, IngestOptions], ParseResult]
#: A bounded-memory parser: ``(path, options) -> ParseResult`` blocks, loaded as one ingest.
ChunkedParser = Callable[[Path, IngestOptions], Iterator[ParseResult]]


@dataclass(frozen=True)
class RawSource:
    """One raw table and the parse that fills it.

    Attributes:
        name: ``ingests.source`` value (``sacct``, ``slurm-nodes``, ``k8s-workloads``, …).
        table: the ``raw.*`` table its rows go to.
        schema: the parsed-row schema (the table's columns without ``ingest_id``).
        parse: whole-file parser, None where the kind's parse fills several sources at once
            (``k8s-objects``: :attr:`InputKind.split`).
        freshness: the freshness group (``[freshness] <group>_hours`` in goodput.toml).
        telemetry_time: for telemetry, the time column whose days a load affects (the
            incremental build rewrites those days); None for scheduler records.
        data_time: the columns whose newest value, not after the load, is a file's *data
            time* (how current its records are, for freshness); None = every time column of
            the schema; () = its rows carry no time of the data (a node list's ``reason_at``
            is when a reason was set), so freshness falls back to the load time.
    """

    name: str
    table: str
    schema: dict[str, pl.DataType]
    parse: Parser | None
    freshness: str
    telemetry_time: str | None = None
    data_time: tuple[str, ...] | None = None

    @property
    def data_time_columns(self) -> tuple[str, ...]:
        """:attr:`data_time`, with None resolved to the schema's Datetime columns."""
        if self.data_time is not None:
            return self.data_time
        return tuple(c for c, t in self.schema.items() if isinstance(t, pl.Datetime))


@dataclass(frozen=True)
class InputKind:
    """One input kind: a CLI word, a folder of files, a raw Dagster asset.

    Attributes:
        name: the ``goodput ingest`` word (also ``ingests.source`` when the kind fills one
            source of its own name).
        sources: the raw sources its files load into.
        folder: sub-folder of ``<inputs>/<cluster>/`` its files are read from.
        globs: file patterns in that folder.
        asset: raw asset name (``raw/<asset>``, the Dagster key).
        group: Dagster group (the source package: ``slurm``, ``kubernetes``, ``dcgm``).
        scheduler: only clusters of this scheduler have this input (None: every cluster).
        source_key: resource key of the asset's :class:`~pipelines._sources.InputSource`.
        description: the raw asset's description (what the table is).
        help: one phrase for ``goodput ingest --help``.
        chunked: a bounded-memory parser for a single file (sacct text, dcgm-exporter text).
        route: for a kind of several sources read one file at a time: the source of a file.
        split: for a kind whose one parse fills several sources: ``path, options`` → parse
            result per source name (a source missing from the result had no rows in the file).
        reads_folders: whether a folder is a valid input (dcgm snapshot folders).
    """

    name: str
    sources: tuple[RawSource, ...]
    folder: str
    globs: tuple[str, ...]
    asset: str
    group: str
    scheduler: str | None
    source_key: str
    description: str
    help: str = ""
    chunked: ChunkedParser | None = None
    route: Callable[[Path], str] | None = None
    split: Callable[[Path, IngestOptions], dict[str, ParseResult]] | None = None
    reads_folders: bool = False

    def source_of(self, path: Path) -> RawSource:
        """The raw source a file of this kind loads into.

        Raises:
            InputFormatError: the kind routes by file name and the name fits no source.
            ValueError: the kind splits a file into several sources (see :attr:`split`).
        """
        if self.split is not None:
            raise ValueError(f"{self.name} splits into several tables: use ingest_file")
        if self.route is not None:
            return raw_source(self.route(path))
        (only,) = self.sources
        return only


@functools.cache
def input_kinds() -> tuple[InputKind, ...]:
    """Every input kind, in the order the CLI, the assets and the file globs list them."""
    from pipelines.dcgm import KINDS as DCGM_KINDS
    from pipelines.kubernetes import KINDS as K8S_KINDS
    from pipelines.slurm import KINDS as SLURM_KINDS

    kinds = (*SLURM_KINDS, *K8S_KINDS, *DCGM_KINDS)
    names = [k.name for k in kinds]
    assert len(set(names)) == len(names), f"duplicate input kind in {names}"
    return kinds


def input_kind(name: str) -> InputKind:
    """The input kind named ``name`` (a CLI word).

    Raises:
        ValueError: no such kind.
    """
    for kind in input_kinds():
        if kind.name == name:
            return kind
    raise ValueError(
        f"unknown source {name!r}; expected one of {', '.join(k.name for k in input_kinds())}"
    )


@functools.cache
def raw_sources() -> dict[str, RawSource]:
    """Every raw source by ``ingests.source`` name, in registry order."""
    out: dict[str, RawSource] = {}
    for kind in input_kinds():
        for src in kind.sources:
            out.setdefault(src.name, src)
    return out


def raw_source(name: str) -> RawSource:
    """The raw source named ``name``.

    Raises:
        ValueError: no such source.
    """
    try:
        return raw_sources()[name]
    except KeyError:
        raise ValueError(
            f"unknown source {name!r}; expected one of {', '.join(raw_sources())}"
        ) from None


def route_by_prefix(prefixes: dict[str, str], what: str) -> Callable[[Path], str]:
    """A :attr:`InputKind.route` that picks a source by the file name's prefix.

    Args:
        prefixes: name prefix → raw source name, tried in order.
        what: what such a file is, for the error ("a Slurm state file").
    """

    def route(path: Path) -> str:
        for prefix, source in prefixes.items():
            if path.name.startswith(prefix):
                return source
        raise InputFormatError(
            str(path), f"not {what}: the name must start with {', '.join(prefixes)}"
        )

    return route
