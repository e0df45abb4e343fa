"""Parse ``sprio --format`` :data:`SPRIO_FORMAT` output into pending jobs' priority factors.

:func:`parse_sprio` reads one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow :data:`SPRIO_SCHEMA`; a line
that cannot be read goes to ``rejected`` with the reason.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._text import UTC, BadValue, Collected, read_text, split_psv, to_float

__all__ = [
    "SPRIO_FORMAT",
    "SPRIO_SCHEMA",
    "parse_sprio",
]

#: The ``sprio --format`` the live source asks for (``sprio`` has no ``--parsable2``); the
#: weighted factors (capital letters). Its header names ``PARTITION`` twice (the partition, then
#: its weighted factor), so columns are matched by position against this format.
SPRIO_FORMAT: Final = "%i|%r|%u|%Y|%A|%F|%J|%P|%Q|%N|%T"

#: ``sprio`` format letter → (header it prints, column, type).
_SPRIO_FIELDS: Final[dict[str, tuple[str, str, pl.DataType]]] = {
    "i": ("JOBID", "job_id", pl.String()),
    "r": ("PARTITION", "partition", pl.String()),
    "u": ("USER", "user_name", pl.String()),
    "Y": ("PRIORITY", "priority", pl.Float64()),
    "A": ("AGE", "age", pl.Float64()),
    "B": ("ASSOC", "assoc", pl.Float64()),
    "F": ("FAIRSHARE", "fairshare", pl.Float64()),
    "J": ("JOBSIZE", "job_size", pl.Float64()),
    "P": ("PARTITION", "partition_prio", pl.Float64()),
    "Q": ("QOS", "qos_prio", pl.Float64()),
    "S": ("SITE", "site", pl.Float64()),
    "N": ("NICE", "nice", pl.Float64()),
    "T": ("TRES", "tres", pl.String()),
}

#: One row per pending job (per partition) from ``sprio -o`` :data:`SPRIO_FORMAT`: the job's
#: priority and its weighted factors (priority points). Factors the format did not ask for are
#: NULL.
SPRIO_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    **{name: dtype for _h, name, dtype in _SPRIO_FIELDS.values()},
    "snapshot_at": UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}


def _sprio_fields(fmt: str) -> list[tuple[str, str, pl.DataType]]:
    letters = [part.strip() for part in fmt.split("|")]
    fields = []
    for letter in letters:
        m = re.fullmatch(r"%\.?\d*([A-Za-z])", letter)
        if m is None or m.group(1) not in _SPRIO_FIELDS:
            raise ValueError(f"sprio format item {letter!r} is not one of {sorted(_SPRIO_FIELDS)}")
        fields.append(_SPRIO_FIELDS[m.group(1)])
    return fields


def parse_sprio(
    path: str | Path,
    *,
    cluster: str = "default",
    fmt: str = SPRIO_FORMAT,
    snapshot_at: dt.datetime | None = None,
    text: str | None = None,
) -> ParseResult:
    """Read ``sprio --format=<fmt>`` output (``|``-separated) into pending jobs' priority factors.

    Columns are taken by position from ``fmt`` (sprio's headers repeat ``PARTITION`` and
    ``PRIORITY``); the header line, when present, must be the one ``fmt`` prints.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster the jobs belong to.
        fmt: the ``--format`` string used, items among ``%i %r %u %Y %A %B %F %J %P %Q %S %N %T``
            (also ``%.15i``-style widths).
        snapshot_at: when the output was taken (aware); stored on every row.
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`SPRIO_SCHEMA`; rows with the wrong field count or a non-numeric factor
        are rejected. No pending jobs: the header alone, no rows.

    Raises:
        InputFormatError: the file cannot be read, or its header is not the one of ``fmt``.
        ValueError: ``fmt`` has an item this parser does not know.
    """
    fields = _sprio_fields(fmt)
    file, lines = read_text(path, text)
    out = Collected(file)
    snap = snapshot_at.astimezone(dt.UTC) if snapshot_at else None
    header = [h for h, _n, _t in fields]
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = split_psv(line, len(fields))
        if no == 1 and not line.strip()[:1].isdigit():
            if parts is None or [p.strip() for p in parts] != header:
                raise InputFormatError(
                    file, f"header {line!r} is not sprio's for format {fmt!r}", line=1
                )
            continue
        if parts is None:
            out.reject(no, line, f"{len(line.split('|'))} fields, format has {len(fields)}")
            continue
        row: dict[str, Any] = dict.fromkeys(SPRIO_SCHEMA)
        row.update(cluster=cluster, snapshot_at=snap, file=file, line_no=no)
        try:
            for (head, name, dtype), value in zip(fields, parts, strict=True):
                number = dtype == pl.Float64()
                row[name] = to_float(value, head) if number else value.strip() or None
        except BadValue as err:
            out.reject(no, line, str(err), field_name=err.field_name)
            continue
        out.rows.append(row)
    return out.result(SPRIO_SCHEMA, {"format": fmt})
