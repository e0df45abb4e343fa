"""Parse ``sacctmgr --parsable2 show event``: TRES registrations and node down/drain intervals.

:func:`parse_sacctmgr_events` reads one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow :data:`EVENT_SCHEMA`: the
cluster's TRES registrations (sreport's *Reported* capacity) and its nodes' down/drain
intervals; a line that cannot be read goes to ``rejected`` with the reason.

:func:`pipelines.core.node_states.registered_gpu_seconds_hourly` and
:func:`pipelines.core.node_states.node_event_gpu_seconds_hourly` turn the events into
GPU-seconds per hour, the way ``sreport cluster utilization`` counts *Reported*.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._sacct_values import gpus_from_tres
from pipelines.slurm._text import (
    UTC,
    BadValue,
    Collected,
    header_key,
    psv_line,
    psv_names,
    read_text,
    slurm_time_readings,
    time_zone,
    to_int,
)

__all__ = [
    "EVENT_SCHEMA",
    "parse_sacctmgr_events",
]

#: One row per accounting event. ``node`` is NULL for a cluster event (``event`` =
#: ``cluster``: the cluster registered ``tres``; it holds until ``end_at``, NULL = still open) and
#: names the node for a node event (``event`` = ``node``: the node was ``state`` — ``DOWN``,
#: ``DRAIN``, … — from ``start_at`` to ``end_at``). ``gpus`` is the ``gres/gpu`` count of
#: ``tres`` (NULL when the export has no TRES column). ``user_name``/``uid`` come from
#: ``root(0)``.
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "event": pl.String(),
    "node": pl.String(),
    "cluster_nodes": pl.String(),
    "start_at": UTC,
    "end_at": UTC,
    "state": pl.String(),
    "state_raw": pl.Int64(),
    "reason": pl.String(),
    "user_name": pl.String(),
    "uid": pl.Int64(),
    "tres": pl.String(),
    "gpus": pl.Float64(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

_EVENT_COLUMNS: Final = {
    "cluster": "cluster", "clusternodes": "cluster_nodes", "nodename": "node",
    "timestart": "start", "start": "start", "timeend": "end", "end": "end",
    "state": "state", "stateraw": "state_raw", "event": "event", "reason": "reason",
    "user": "user", "tres": "tres",
}  # fmt: skip
_USER_UID: Final = re.compile(r"^(?P<name>.*?)\((?P<uid>\d+)\)$")


def parse_sacctmgr_events(
    path: str | Path,
    *,
    cluster: str | None = None,
    tz: str = "UTC",
    text: str | None = None,
) -> ParseResult:
    """Read ``sacctmgr --parsable2 show event`` into cluster and node events.

    The header names the columns (``Cluster|Cluster Nodes|NodeName|TimeStart|TimeEnd|State|…``;
    ``format=`` may pick any of them, in any order); ``TimeStart`` is required. Without a
    ``TRES`` column ``gpus`` is NULL (the default format has none: ask for ``format=…,TRES``).

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: cluster for rows without a ``Cluster`` column.
        tz: IANA zone of naive times (the client's ``TZ``).
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`EVENT_SCHEMA`; rows with the wrong field count, an unreadable time or
        an end before the start are rejected. A naive time of the repeated hour of a DST
        fall-back names two instants: ``TimeStart`` takes the earlier, ``TimeEnd`` the earliest
        not before the start (the shortest non-negative span; both earlier where that is
        consistent, as sacct's times without Elapsed); only an end every reading of which lies
        before the start's earlier reading is rejected (METRICS.md "Node states").

    Raises:
        InputFormatError: the file cannot be read, or its first line is not an event header.
    """
    file, lines = read_text(path, text)
    zone = time_zone(tz, file)
    out = Collected(file)
    dst = [0]
    if not lines or not lines[0].strip():
        return out.result(EVENT_SCHEMA, {"fields": []})
    names = psv_names(lines[0])
    keys = [_EVENT_COLUMNS.get(header_key(n)) for n in names]
    if "start" not in keys:
        raise InputFormatError(
            file, "header has no TimeStart: not `sacctmgr -P show event` output", line=1
        )
    for no, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        build = partial(_event_row, cluster=cluster, zone=zone, dst=dst, file=file, no=no)
        psv_line(out, no, line, keys, build)
    return out.result(EVENT_SCHEMA, {"fields": names, "dst_adjusted": dst[0]})


def _event_row(
    values: dict[str, str], cluster: str | None, zone: ZoneInfo, dst: list[int], file: str, no: int
) -> dict[str, Any]:
    node = values.get("node", "").strip() or None
    kind = values.get("event", "").strip().lower() or ("node" if node else "cluster")
    starts = slurm_time_readings(values["start"], zone, "TimeStart", dst)
    if starts is None:
        raise BadValue("TimeStart", f"no start time: {values['start']!r}")
    start = starts[0]
    ends = slurm_time_readings(values.get("end", ""), zone, "TimeEnd", dst)
    end = None
    if ends is not None:
        # the repeated hour of a DST fall-back: the start is its earlier reading, the end its
        # earliest reading not before the start (01:40 → 01:20 spans the change: 40 minutes)
        end = next((e for e in ends if e >= start), None)
        if end is None:
            raise BadValue("TimeEnd", f"end {values['end']!r} before start {values['start']!r}")
    user = values.get("user", "").strip()
    m = _USER_UID.match(user)
    tres = values.get("tres", "").strip() or None
    return {
        "cluster": values.get("cluster", "").strip() or cluster,
        "event": kind,
        "node": node,
        "cluster_nodes": values.get("cluster_nodes", "").strip() or None,
        "start_at": start,
        "end_at": end,
        "state": values.get("state", "").strip() or None,
        "state_raw": to_int(values.get("state_raw", ""), "StateRaw"),
        "reason": values.get("reason", "").strip() or None,
        "user_name": (m.group("name") if m else user) or None,
        "uid": int(m.group("uid")) if m else None,
        "tres": tres,
        "gpus": gpus_from_tres(tres) if "tres" in values else None,
        "file": file,
        "line_no": no,
    }
