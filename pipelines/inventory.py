"""The node inventory: ``<inventory folder>/<cluster>.csv``, one row per host, one host per line.

The columns are ``host,gpus,gpu_type,partition,rack`` (``host`` and ``gpus`` required, the others
optional, further columns ignored), as :func:`pipelines.slurm.inventory_from_nodes` writes them
from ``scontrol show nodes``. The inventory is the capacity of a Slurm cluster without TRES
registration events and of every cluster's topology tables, so a row is taken only when it can
be trusted, and every row that is not goes to ``rejected`` with its line, field, text and reason:

- a line that is not one CSV record (an unbalanced quote: each line is read on its own, so a
  stray quote cannot swallow the hosts after it);
- more fields than the header names;
- ``host`` empty;
- ``gpus`` empty or not a whole number of GPUs from 0 to :data:`MAX_GPUS_PER_HOST` written
  in ASCII digits (``8`` or ``8.0``; not ``8.5``, ``1e3``, ``1_000``, ``-8``);
- a host listed again in the same file (one host is counted once; the first row is kept, as
  Slurm keeps the first definition of a node: a node in two partitions listed once per
  partition would otherwise count its GPUs twice).

A file without a header naming ``host`` and ``gpus``, or not UTF-8 text, is not an inventory and
is refused whole (:class:`pipelines._parse_result.InputFormatError`). Blank lines are skipped;
values are stripped of surrounding blanks; a UTF-8 byte-order mark and CRLF or CR line ends are
allowed.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError, ParseResult

__all__ = ["INVENTORY_SCHEMA", "read_inventory", "read_inventory_folder"]

#: The inventory's columns as the build types them (``gpus`` per host, a number of GPUs).
INVENTORY_SCHEMA: dict[str, pl.DataType] = {
    "host": pl.String(),
    "gpus": pl.Float64(),
    "gpu_type": pl.String(),
    "partition": pl.String(),
    "rack": pl.String(),
}
_REQUIRED = ("host", "gpus")
#: The most GPUs one host may list (a whole GPU count; MIG slices or time-sliced replicas
#: advertised as ``nvidia.com/gpu`` stay far below it): a larger count is a typo, not a host.
MAX_GPUS_PER_HOST = 1024
_WHOLE = re.compile(r"[0-9]+(\.0*)?", re.ASCII)


def _gpus(text: str) -> float | str:
    """The GPU count of a ``gpus`` value, or the reason it is not one."""
    if not text:
        return "no GPU count"
    if not _WHOLE.fullmatch(text) or float(text) > MAX_GPUS_PER_HOST:
        return f"{text!r} is not a whole number of GPUs from 0 to {MAX_GPUS_PER_HOST}"
    return float(text)


def _record(line: str) -> list[str] | str:
    """The fields of one line, or the reason it is not one CSV record."""
    try:
        return next(csv.reader([line], strict=True))
    except csv.Error as err:
        return f"not one CSV record ({err})"


def read_inventory(path: Path) -> ParseResult:
    """Read one inventory file.

    Args:
        path: ``<cluster>.csv`` with a header line.

    Returns:
        ``rows``: :data:`INVENTORY_SCHEMA` columns in file order, one per host; ``rejected``:
        :data:`pipelines._parse_result.REJECTED_SCHEMA` rows (``line_no`` 1-based, the header
        is line 1);
        ``info``: ``rows``, ``rejected``.

    Raises:
        InputFormatError: the file is not UTF-8 text, is empty, or its header lacks ``host`` or
            ``gpus`` (the message names the file, line 1 and the field).
    """
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputFormatError(name, f"not UTF-8 text ({err.reason})") from err
    # One record per line, split at line ends only (str.splitlines also splits at form feeds
    # and other separators that may sit inside a field).
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    header = _record(lines[0]) if lines[0].strip() else []
    if isinstance(header, str) or not header:
        why = header if isinstance(header, str) else "empty: an inventory starts with a header"
        raise InputFormatError(name, why, line=1)
    columns = [h.strip().lower() for h in header]
    for need in _REQUIRED:
        if need not in columns:
            raise InputFormatError(
                name, f"the header names no {need!r} column: {lines[0]!r}", line=1, field=need
            )
    at = {c: columns.index(c) for c in INVENTORY_SCHEMA if c in columns}
    rows: dict[str, list[object]] = {c: [] for c in INVENTORY_SCHEMA}
    rejected: dict[str, list[object]] = {c: [] for c in REJECTED_SCHEMA}
    first_line: dict[str, int] = {}

    def reject(line: int, field: str | None, reason: str) -> None:
        for key, value in (
            ("file", name), ("line_no", line), ("line_end", line), ("field", field),
            ("raw", lines[line - 1]), ("reason", reason),
        ):  # fmt: skip
            rejected[key].append(value)

    for line, text_line in enumerate(lines[1:], start=2):
        if not text_line.strip():
            continue
        fields = _record(text_line)
        if isinstance(fields, str):
            reject(line, None, fields)
            continue
        if not any(f.strip() for f in fields):
            continue
        if len(fields) > len(columns):
            reject(line, None, f"{len(fields)} fields, the header names {len(columns)}")
            continue
        values = {c: (fields[i].strip() if i < len(fields) else "") for c, i in at.items()}
        host = values["host"]
        if not host:
            reject(line, "host", "no host name")
            continue
        gpus = _gpus(values["gpus"])
        if isinstance(gpus, str):
            reject(line, "gpus", gpus)
            continue
        if host in first_line:
            reject(line, "host", f"host {host!r} already listed on line {first_line[host]}")
            continue
        first_line[host] = line
        for c in INVENTORY_SCHEMA:
            value = gpus if c == "gpus" else values.get(c)
            rows[c].append(value if value != "" else None)
    frame = pl.DataFrame(rows, schema=INVENTORY_SCHEMA)
    bad = pl.DataFrame(rejected, schema=REJECTED_SCHEMA)
    return ParseResult(frame, bad, {"rows": frame.height, "rejected": bad.height})


def read_inventory_folder(
    folder: Path, clusters: Iterable[str] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every ``*.csv`` of ``folder`` (sorted by name), each the inventory of the cluster its
    file is named for (:func:`read_inventory`); with ``clusters``, only the files of those
    clusters are read (another file, even one that is not an inventory, is not opened).

    Returns:
        ``(nodes, rejected)``: ``cluster`` + :data:`INVENTORY_SCHEMA` + ``capacity_source``
        (``"inventory"``), and ``cluster`` + :data:`pipelines._parse_result.REJECTED_SCHEMA`;
        both empty when the folder does not exist.

    Raises:
        InputFormatError: as :func:`read_inventory`, for the first file that is not an
            inventory.
    """
    nodes, rejected = [], []
    files = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    if clusters is not None:
        wanted = set(clusters)
        files = [f for f in files if f.stem in wanted]
    for f in files:
        read = read_inventory(f)
        cluster = pl.lit(f.stem).alias("cluster")
        source = pl.lit("inventory").alias("capacity_source")
        nodes.append(read.rows.select(cluster, *INVENTORY_SCHEMA, source))
        rejected.append(read.rejected.select(cluster, *REJECTED_SCHEMA))
    node_schema = {"cluster": pl.String(), **INVENTORY_SCHEMA, "capacity_source": pl.String()}
    bad_schema = {"cluster": pl.String(), **REJECTED_SCHEMA}
    return (
        pl.concat(nodes) if nodes else pl.DataFrame(schema=node_schema),
        pl.concat(rejected) if rejected else pl.DataFrame(schema=bad_schema),
    )
