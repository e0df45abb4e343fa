"""Parse polled ``squeue`` output (``--Format`` :data:`SQUEUE_FORMAT`) into one row per job and
poll: the state and pending reason slurmctld gave each job at that moment.

sacct keeps a job's last reason only, and drops ``Resources``/``Priority`` once the job runs, so
the live source polls ``squeue`` on a schedule and appends each poll to the day's file, stamped
with the poll time on a line of its own::

    # poll_time=1796292012
    JOBID|STATE|REASON|SCHEDNODES|START_TIME|REQ_SWITCH|WAIT4SWITCH|NODES|PARTITION|
    3|PENDING|Resources|gpu-[001-002]|1796292601|1|5:00|2|gpu|

Fields (squeue(1) of Slurm 22.05, ``-O``/``--Format`` types, each ``Type:|``: no padding, ``|``
after each value): ``JobID`` (``123`` or ``123_4`` for an array task, as sacct's JobID),
``State`` (long form), ``Reason`` (``Resources``, ``Priority``, ``Dependency``, ``QOSMax…``;
``None`` for a running job), ``SchedNodes`` (for a pending job, the nodes the backfill
scheduler expects it to start on; ``(null)`` when none), ``StartTime`` (actual, or for a pending
job the expected start; epoch seconds with ``SLURM_TIME_FORMAT=%s``), ``ReqSwitch`` (the
``--switches`` count asked for; 0 for none), ``Wait4Switch`` (the longest wait for that switch
count, ``[D-]H:MM:SS`` or ``M:SS``), ``NumNodes`` and ``Partition``. Columns are matched by the
header squeue prints in each block; JobID, State and Reason are required.

A poll whose queue was empty still says a poll happened: it gives one row with NULL
``job_id`` (the spells need to know the job was gone by then). A block without a
``# poll_time=`` line (a capture by hand) takes the file's modification time. A line with the
wrong field count, an unreadable time or number goes to ``rejected`` with its line and field.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._text import UTC, BadValue, Collected, read_text, slurm_time, time_zone, to_int

__all__ = ["POLL_MARKER", "SQUEUE_FORMAT", "SQUEUE_SCHEMA", "parse_squeue", "wait_seconds"]

#: The ``squeue --Format`` the live source polls with (every type exists in Slurm 22.05).
SQUEUE_FORMAT: Final = (
    "JobID:|,State:|,Reason:|,SchedNodes:|,StartTime:|,ReqSwitch:|,Wait4Switch:|,NumNodes:|,"
    "Partition:|"
)
#: The line that starts each poll's block: ``# poll_time=<epoch seconds or ISO time>``.
POLL_MARKER: Final = "# poll_time="

#: squeue header → (column, kind).
_HEADERS: Final = {
    "JOBID": ("job_id", "text"),
    "STATE": ("state", "text"),
    "REASON": ("reason", "text"),
    "SCHEDNODES": ("sched_nodes", "text"),
    "START_TIME": ("expected_start", "time"),
    "REQ_SWITCH": ("req_switch", "int"),
    "WAIT4SWITCH": ("wait4switch_s", "wait"),
    "NODES": ("nodes", "int"),
    "PARTITION": ("partition", "text"),
}
_REQUIRED: Final = ("JOBID", "STATE", "REASON")
_NULL_TEXT: Final = frozenset({"", "(null)", "N/A"})

#: One row per job and poll (or one row with NULL ``job_id`` for a poll of an empty queue).
SQUEUE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "poll_at": UTC,
    "job_id": pl.String(),
    "state": pl.String(),
    "reason": pl.String(),
    "sched_nodes": pl.String(),
    "expected_start": UTC,
    "req_switch": pl.Int64(),
    "wait4switch_s": pl.Int64(),
    "nodes": pl.Int64(),
    "partition": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}


def wait_seconds(value: str, field_name: str) -> int | None:
    """``[D-]HH:MM:SS``, ``MM:SS`` (squeue's ``Wait4Switch``) or plain seconds → seconds.

    Raises:
        BadValue: another form.
    """
    value = value.strip()
    if value in _NULL_TEXT:
        return None
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)|(\d+)", value)
    if m is None:
        raise BadValue(field_name, f"not a duration: {value!r}")
    if m[5] is not None:
        return int(m[5])
    days, hours = int(m[1] or 0), int(m[2] or 0)
    return ((days * 24 + hours) * 60 + int(m[3])) * 60 + int(m[4])


def _cells(line: str) -> list[str]:
    """A ``|``-ended line's values (the one ``|`` after the last value dropped)."""
    return line.removesuffix("|").split("|")


def parse_squeue(
    path: str | Path,
    *,
    cluster: str = "default",
    tz: str = "UTC",
    text: str | None = None,
    poll_at: dt.datetime | None = None,
) -> ParseResult:
    """Read polled ``squeue -O`` output (one block per poll) into job × poll rows.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster the jobs belong to.
        tz: IANA zone of naive times (epoch seconds need none).
        text: the output, instead of reading ``path``.
        poll_at: the poll time of a block without a ``# poll_time=`` line; default the file's
            modification time.

    Returns:
        Rows with :data:`SQUEUE_SCHEMA`; ``info`` has ``polls`` (blocks read) and ``format``.

    Raises:
        InputFormatError: the file cannot be read, a block has no squeue header or its header
            lacks JOBID, STATE or REASON, or a poll time cannot be read.
    """
    file, lines = read_text(path, text)
    zone = time_zone(tz, file)
    out = Collected(file)
    dst = [0]
    polls = 0
    when: dt.datetime | None = None
    columns: list[tuple[str, str] | None] | None = None
    block_rows = 0
    marker_line = 0

    def close_block() -> None:
        if columns is not None and block_rows == 0 and when is not None:
            out.rows.append({**dict.fromkeys(SQUEUE_SCHEMA), "cluster": cluster, "poll_at": when,
                             "file": file, "line_no": marker_line})  # fmt: skip

    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("CLUSTER: "):  # squeue -M names the cluster first
            continue
        if line.startswith(POLL_MARKER):
            close_block()
            try:
                when = slurm_time(line.removeprefix(POLL_MARKER), zone, "poll_time", dst)
            except BadValue as err:
                raise InputFormatError(file, str(err), line=no) from err
            if when is None:
                raise InputFormatError(file, f"no poll time on {line!r}", line=no)
            columns, block_rows, marker_line = None, 0, no
            continue
        if line.startswith("JOBID"):
            new_poll = columns is None  # a second header without a marker: the same poll
            heads = [h.strip() for h in _cells(line)]
            missing = [h for h in _REQUIRED if h not in heads]
            if missing:
                raise InputFormatError(file, f"squeue header lacks {', '.join(missing)}", line=no)
            columns = [_HEADERS.get(h) for h in heads]
            if when is None:
                when = poll_at or _mtime(path, file)
            if not marker_line:
                marker_line = no
            polls += new_poll
            continue
        if columns is None or when is None:
            raise InputFormatError(file, "a job line before any squeue header", line=no)
        cells = _cells(raw.strip())
        if len(cells) != len(columns):
            out.reject(no, raw, f"{len(cells)} fields, the header has {len(columns)}")
            continue
        row: dict[str, Any] = {**dict.fromkeys(SQUEUE_SCHEMA), "cluster": cluster,
                               "poll_at": when, "file": file, "line_no": no}  # fmt: skip
        try:
            for col, value in zip(columns, cells, strict=True):
                if col is None:
                    continue
                name, kind = col
                if kind == "time":
                    row[name] = slurm_time(value, zone, name, dst)
                elif kind == "int":
                    row[name] = to_int(value, name)
                elif kind == "wait":
                    row[name] = wait_seconds(value, name)
                else:
                    row[name] = None if value.strip() in _NULL_TEXT else value.strip()
        except BadValue as err:
            out.reject(no, raw, str(err), field_name=err.field_name)
            block_rows += 1  # the poll saw a job, even if its line is unreadable
            continue
        if row["job_id"] is None:
            out.reject(no, raw, "no JobID", field_name="job_id")
            block_rows += 1
            continue
        out.rows.append(row)
        block_rows += 1
    close_block()
    if polls == 0:
        raise InputFormatError(
            file, "no squeue header (JOBID|STATE|REASON|…): not squeue -O output"
        )
    return out.result(SQUEUE_SCHEMA, {"polls": polls, "format": SQUEUE_FORMAT})


def _mtime(path: str | Path, file: str) -> dt.datetime:
    try:
        return dt.datetime.fromtimestamp(Path(path).stat().st_mtime, tz=dt.UTC)
    except OSError as err:
        raise InputFormatError(file, f"no poll time and no file to date it by: {err}") from err
