"""Parse Slurm reservations: live (``scontrol show reservation``) and history (``sacctmgr``).

Both parsers return a :class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow
:data:`RESERVATION_SCHEMA`, one row per reservation; a record that cannot be read goes to
``rejected`` with the reason:

- :func:`parse_scontrol_reservations`: ``scontrol --oneliner show reservation`` (or the
  multi-line form): the reservations slurmctld holds now (future, active, and the current
  occurrence of a ``DAILY``/``WEEKLY`` one);
- :func:`parse_sacctmgr_reservations`: ``sacctmgr --parsable2 show reservation`` with
  ``format=`` :data:`RESERVATION_HISTORY_FIELDS`: what slurmdbd recorded, with the wall time no
  job used (``UnusedWall``).

Seen on Slurm 22.05.8: ``sacctmgr`` has no ``Nodes`` format field (it is ``NodeNames``, printed
as ``NodeName``), and ``Start``/``End`` are printed as ``TimeStart``/``TimeEnd``. A reservation
deleted before it started is removed from slurmdbd; one deleted while active keeps its record
with the deletion time as its end. Reservation TRES name ``cpu``/``node``/``license``/``bb``
only (22.05 refuses ``TRES=gres/gpu=…``), so ``gpus`` is usually NULL there: join ``nodes`` with
the node inventory for the GPUs a reservation holds.

Times are naive in ``tz`` or epoch seconds (``SLURM_TIME_FORMAT=%s``, as the live source asks).
"""

from __future__ import annotations

import datetime as dt
import re
from functools import partial
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._sacct_values import expand_nodelist, gpus_from_tres
from pipelines.slurm._text import (
    UTC,
    BadValue,
    Collected,
    header_key,
    iter_records,
    key_tokens,
    psv_line,
    psv_names,
    read_text,
    slurm_time,
    time_zone,
    to_float,
    to_int,
)

__all__ = [
    "RESERVATION_HISTORY_FIELDS",
    "RESERVATION_SCHEMA",
    "parse_sacctmgr_reservations",
    "parse_scontrol_reservations",
]

#: The ``sacctmgr show reservation format=`` the live ``reservation_history`` kind asks for.
RESERVATION_HISTORY_FIELDS: Final = "Cluster,Name,ID,Start,End,NodeNames,Flags,TRES,UnusedWall"

#: One row per reservation. ``start_at``/``end_at`` are the (current occurrence's) bounds and
#: ``duration_s`` their difference (scontrol's ``Duration`` when a bound is missing); ``nodes``
#: is the expanded host list (empty for a reservation without nodes) and ``node_count``
#: scontrol's ``NodeCnt`` (else the number of ``nodes``). ``flags`` are upper-case as printed
#: (``MAINT``, ``IGNORE_JOBS``, ``DAILY``, ``WEEKLY``, ``SPEC_NODES``, …); ``maint`` is whether
#: ``MAINT`` is among them. ``state`` is scontrol's ``ACTIVE``/``INACTIVE`` (NULL in the
#: history). ``users``/``accounts`` are the lists as printed (a ``-name`` excludes; empty for
#: ``(null)``; NULL in the history, which prints association ids only). ``tres`` is the TRES
#: string; ``gpus`` its ``gres/gpu`` count, NULL when it names none. ``unused_s`` is the
#: history's ``UnusedWall`` (seconds no job used, CPU-weighted; NULL for scontrol);
#: ``reservation_id`` its ``ID``. ``snapshot_at`` is when the output was taken (given by the
#: caller; NULL when unknown).
RESERVATION_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "name": pl.String(),
    "reservation_id": pl.Int64(),
    "start_at": UTC,
    "end_at": UTC,
    "duration_s": pl.Int64(),
    "nodes": pl.List(pl.String()),
    "node_count": pl.Int64(),
    "flags": pl.List(pl.String()),
    "maint": pl.Boolean(),
    "state": pl.String(),
    "users": pl.List(pl.String()),
    "accounts": pl.List(pl.String()),
    "partition": pl.String(),
    "tres": pl.String(),
    "gpus": pl.Float64(),
    "unused_s": pl.Float64(),
    "snapshot_at": UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: What scontrol prints when slurmctld holds no reservation.
_NO_RESERVATIONS: Final = "No reservations in the system"
_NULLS: Final = frozenset({"", "(null)", "N/A", "n/a", "None"})
_DURATION: Final = re.compile(r"^(?:(?P<d>\d+)-)?(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+)$")


def _text(value: str | None) -> str | None:
    return None if value is None or value.strip() in _NULLS else value.strip()


def _list(value: str | None) -> list[str]:
    text = _text(value)
    return [p.strip() for p in text.split(",") if p.strip()] if text else []


def _duration_s(value: str | None) -> int | None:
    """``[D-]HH:MM:SS`` / ``MM:SS`` → seconds; None for NULL or ``UNLIMITED``.

    Raises:
        BadValue: another form.
    """
    text = _text(value)
    if text is None or text.upper() in ("UNLIMITED", "INFINITE"):
        return None
    m = _DURATION.match(text)
    if m is None:
        raise BadValue("Duration", f"not a duration: {text!r}")
    days, hours = int(m.group("d") or 0), int(m.group("h") or 0)
    return ((days * 24 + hours) * 60 + int(m.group("m"))) * 60 + int(m.group("s"))


def _row(
    values: dict[str, str], *, cluster: str, zone: ZoneInfo, dst: list[int],
    snap: dt.datetime | None, file: str, line_no: int, history: bool,
) -> dict[str, Any]:  # fmt: skip
    """One reservation row from its values (scontrol keys; history columns mapped onto them).

    Raises:
        BadValue: no name, an unreadable time, duration, host list, count or TRES, or an end
            before the start.
    """
    name = _text(values.get("ReservationName"))
    if name is None:
        raise BadValue("ReservationName", "empty reservation name")
    start = slurm_time(values.get("StartTime", ""), zone, "StartTime", dst)
    end = slurm_time(values.get("EndTime", ""), zone, "EndTime", dst)
    if start is not None and end is not None:
        if end < start:
            raise BadValue("EndTime", f"end {end.isoformat()} before start {start.isoformat()}")
        duration: int | None = int((end - start).total_seconds())
    else:
        duration = _duration_s(values.get("Duration"))
    raw_nodes = _text(values.get("Nodes"))
    try:
        nodes = expand_nodelist(raw_nodes) if raw_nodes else []
    except ValueError as err:
        raise BadValue("Nodes", f"bad host list {raw_nodes!r}: {err}") from err
    count = to_int(values.get("NodeCnt", ""), "NodeCnt")
    flags = [f.upper() for f in _list(values.get("Flags"))]
    tres = _text(values.get("TRES"))
    try:
        gpus = gpus_from_tres(tres) if tres and "gres/gpu" in tres else None
    except ValueError as err:
        raise BadValue("TRES", f"bad TRES {tres!r}: {err}") from err
    rid = values.get("ID")
    return {
        "cluster": _text(values.get("Cluster")) or cluster,
        "name": name,
        "reservation_id": to_int(rid, "ID") if rid is not None else None,
        "start_at": start,
        "end_at": end,
        "duration_s": duration,
        "nodes": nodes,
        "node_count": count if count is not None else len(nodes),
        "flags": flags,
        "maint": "MAINT" in flags,
        "state": None if history else _text(values.get("State")),
        "users": None if history else _list(values.get("Users")),
        "accounts": None if history else _list(values.get("Accounts")),
        "partition": _text(values.get("PartitionName")),
        "tres": tres,
        "gpus": gpus,
        "unused_s": (
            to_float(values["UnusedWall"], "UnusedWall") if "UnusedWall" in values else None
        ),
        "snapshot_at": snap,
        "file": file,
        "line_no": line_no,
    }


def parse_scontrol_reservations(
    path: str | Path,
    *,
    cluster: str = "default",
    tz: str = "UTC",
    text: str | None = None,
    snapshot_at: dt.datetime | None = None,
) -> ParseResult:
    """Read ``scontrol show reservation`` (``--oneliner`` or multi-line) into reservations.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster the reservations belong to (scontrol does not print it).
        tz: IANA zone of naive times; epoch seconds (``SLURM_TIME_FORMAT=%s``) need none.
        text: the output itself, instead of reading ``path``.
        snapshot_at: when the output was taken (aware); stored on every row.

    Returns:
        Rows with :data:`RESERVATION_SCHEMA`, in the order of the output (``unused_s`` and
        ``reservation_id`` NULL). A record is rejected whole when its name is empty, a time,
        ``Duration``, ``NodeCnt``, host list or TRES is unreadable, or it ends before it starts;
        a line outside a ``ReservationName=`` record is rejected too. "No reservations in the
        system" gives no row. ``info`` has ``reservations`` and ``dst_adjusted``.

    Raises:
        InputFormatError: the file cannot be read, ``tz`` is unknown, or the file holds neither
            a ``ReservationName=`` record nor "No reservations in the system" while not empty.
    """
    file, lines = read_text(path, text)
    zone = time_zone(tz, file)
    out = Collected(file)
    snap = snapshot_at.astimezone(dt.UTC) if snapshot_at else None
    dst = [0]
    head = "ReservationName="
    records = [
        (first, last, record)
        for first, last, record in iter_records(lines, head)
        if not (len(record) == 1 and record[0].strip() == _NO_RESERVATIONS)
    ]
    if records and not any(rec[0].startswith(head) for _f, _l, rec in records):
        raise InputFormatError(file, f"no {head!r} record: not `scontrol show reservation` output")
    for first, last, record in records:
        raw = "\n".join(record)
        if not record[0].startswith(head):
            out.reject(first, raw, "line outside a ReservationName= record", line_end=last)
            continue
        try:
            out.rows.append(
                _row(
                    key_tokens(record),
                    cluster=cluster,
                    zone=zone,
                    dst=dst,
                    snap=snap,
                    file=file,
                    line_no=first,
                    history=False,
                )
            )
        except BadValue as err:
            out.reject(first, raw, str(err), field_name=err.field_name, line_end=last)
    return out.result(RESERVATION_SCHEMA, {"reservations": len(out.rows), "dst_adjusted": dst[0]})


#: ``sacctmgr`` header (normalised) → the scontrol key the value is read as.
_HISTORY_COLUMNS: Final = {
    "cluster": "Cluster", "name": "ReservationName", "id": "ID", "timestart": "StartTime",
    "start": "StartTime", "timeend": "EndTime", "end": "EndTime", "nodename": "Nodes",
    "nodenames": "Nodes", "nodes": "Nodes", "flags": "Flags", "tres": "TRES",
    "unusedwall": "UnusedWall", "unused": "UnusedWall",
}  # fmt: skip


def parse_sacctmgr_reservations(
    path: str | Path,
    *,
    cluster: str = "default",
    tz: str = "UTC",
    text: str | None = None,
    snapshot_at: dt.datetime | None = None,
) -> ParseResult:
    """Read ``sacctmgr --parsable2 show reservation`` (slurmdbd's history) into reservations.

    The header names the columns (22.05 prints ``Cluster|Name|ID|TimeStart|TimeEnd|NodeName|
    Flags|TRES|UnusedWall`` for ``format=`` :data:`RESERVATION_HISTORY_FIELDS`; any subset in
    any order is read, ``Name`` is required; others, such as ``Assocs``, are ignored).

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: cluster for rows without a ``Cluster`` column.
        tz: IANA zone of naive times; epoch seconds need none.
        text: the output itself, instead of reading ``path``.
        snapshot_at: when the output was taken (aware); stored on every row.

    Returns:
        Rows with :data:`RESERVATION_SCHEMA` (``state``, ``users``, ``accounts``, ``partition``
        NULL; ``node_count`` the number of ``nodes``). Rows with the wrong field count, an
        unreadable time, ``ID``, ``UnusedWall``, host list or TRES, or an end before the start
        are rejected. ``info`` has ``fields`` and ``dst_adjusted``.

    Raises:
        InputFormatError: the file cannot be read, ``tz`` is unknown, or its first line is not a
            reservation header (no ``Name`` column).
    """
    file, lines = read_text(path, text)
    zone = time_zone(tz, file)
    out = Collected(file)
    snap = snapshot_at.astimezone(dt.UTC) if snapshot_at else None
    dst = [0]
    if not lines or not lines[0].strip():
        return out.result(RESERVATION_SCHEMA, {"fields": [], "dst_adjusted": 0})
    names = psv_names(lines[0])
    keys = [_HISTORY_COLUMNS.get(header_key(n)) for n in names]
    if "ReservationName" not in keys:
        raise InputFormatError(
            file, f"first line {lines[0]!r} is not a `sacctmgr show reservation` header"
        )
    for no, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        build = partial(
            _row,
            cluster=cluster,
            zone=zone,
            dst=dst,
            snap=snap,
            file=file,
            line_no=no,
            history=True,
        )
        psv_line(out, no, line, keys, build, width_reason=f"expected {len(names)} fields")
    return out.result(RESERVATION_SCHEMA, {"fields": names, "dst_adjusted": dst[0]})
