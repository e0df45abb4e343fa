"""Kubernetes Events (``kubectl get events -A -o json``, events.k8s.io/v1, JSON lines) into rows.

Both Event APIs describe the same object with different field names:

============================  ===============================  ==================================
column                        core/v1 ``Event``                events.k8s.io/v1 ``Event``
============================  ===============================  ==================================
involved_*                    ``involvedObject``               ``regarding``
message                       ``message``                      ``note``
count                         ``count``                        ``series.count``, ``deprecatedCount``
first_seen                    ``firstTimestamp``               ``deprecatedFirstTimestamp``
last_seen                     ``lastTimestamp``                ``series.lastObservedTime``,
                                                               ``deprecatedLastTimestamp``
source_component              ``source.component``             ``deprecatedSource.component``
reporting_controller          ``reportingComponent``           ``reportingController``
============================  ===============================  ==================================

Both fall back to ``eventTime`` and then ``metadata.creationTimestamp`` for the times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import polars as pl

from pipelines._parse_result import ParseResult
from pipelines.kubernetes._json_items import (
    BadItem,
    get_path,
    int_or_none,
    parse_k8s_time,
    parse_result,
    read_rows,
    rows_frame,
    stamp,
    text_or_none,
)

__all__ = ["K8S_EVENT_SCHEMA", "parse_k8s_events"]

#: Columns of one Kubernetes Event, in this order.
K8S_EVENT_SCHEMA: dict[str, pl.DataType] = {
    "uid": pl.String(),
    "cluster": pl.String(),
    "namespace": pl.String(),
    "involved_kind": pl.String(),
    "involved_name": pl.String(),
    "involved_uid": pl.String(),
    "involved_namespace": pl.String(),
    "reason": pl.String(),
    "type": pl.String(),
    "message": pl.String(),
    "count": pl.Int64(),
    "first_seen": pl.Datetime("us", "UTC"),
    "last_seen": pl.Datetime("us", "UTC"),
    "source_component": pl.String(),
    "reporting_controller": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

_LIST_KINDS: Final = frozenset({"List", "EventList"})


def _count(value: object, field: str) -> int | None:
    """The occurrence count in ``value``; :class:`BadItem` if not an integer or negative."""
    count = int_or_none(value, field, what="count is not an integer")
    if count is not None and count < 0:
        raise BadItem(field, f"count {count} is negative")
    return count


def _unwrap_watch(obj: dict[str, Any]) -> dict[str, Any]:
    """The Event inside a watch event ``{"type": ..., "object": {...}}``, else ``obj``."""
    if isinstance(obj.get("object"), dict) and "metadata" not in obj:
        if obj.get("type") == "ERROR":
            raise BadItem("type", "watch ERROR event (the object is a Status, not an Event)")
        inner: dict[str, Any] = obj["object"]
        return inner
    return obj


def _event_row(obj: dict[str, Any]) -> dict[str, Any]:
    """The row of one Event object (either API)."""
    ev = _unwrap_watch(obj)
    kind = ev.get("kind")
    involved = ev.get("involvedObject")
    if involved is None:
        involved = ev.get("regarding")
    if (kind is not None and kind != "Event") or (kind is None and involved is None):
        raise BadItem("kind", f"not an Event (kind {kind!r})")
    if involved is None:
        field = (
            "regarding" if "events.k8s.io" in str(ev.get("apiVersion", "")) else ("involvedObject")
        )
        raise BadItem(field, "event has no involved object (what the event is about)")
    if not isinstance(involved, dict):
        raise BadItem("involvedObject", "not an object")
    uid = text_or_none(get_path(ev, "metadata", "uid"))
    if uid is None:
        raise BadItem("metadata.uid", "event has no uid")
    series = ev.get("series") if isinstance(ev.get("series"), dict) else None
    event_time = parse_k8s_time(ev.get("eventTime"), "eventTime")
    created = parse_k8s_time(
        get_path(ev, "metadata", "creationTimestamp"), "metadata.creationTimestamp"
    )
    first = parse_k8s_time(ev.get("firstTimestamp"), "firstTimestamp") or parse_k8s_time(
        ev.get("deprecatedFirstTimestamp"), "deprecatedFirstTimestamp"
    )
    last = parse_k8s_time(ev.get("lastTimestamp"), "lastTimestamp") or parse_k8s_time(
        ev.get("deprecatedLastTimestamp"), "deprecatedLastTimestamp"
    )
    observed = parse_k8s_time(get_path(series, "lastObservedTime"), "series.lastObservedTime")
    first_seen = first or event_time or created or observed
    last_seen = last or observed or event_time or created
    if first_seen is None or last_seen is None:
        raise BadItem("lastTimestamp", "event has no time at all")
    counts = (
        _count(get_path(series, "count"), "series.count"),
        _count(ev.get("count"), "count"),
        _count(ev.get("deprecatedCount"), "deprecatedCount"),
    )
    count = next((c for c in counts if c is not None), 1)
    message = ev.get("message")
    if message is None:
        message = ev.get("note")
    source = ev.get("source") if isinstance(ev.get("source"), dict) else ev.get("deprecatedSource")
    return {
        "uid": uid,
        "namespace": text_or_none(get_path(ev, "metadata", "namespace")),
        "involved_kind": text_or_none(get_path(involved, "kind")),
        "involved_name": text_or_none(get_path(involved, "name")),
        "involved_uid": text_or_none(get_path(involved, "uid")),
        "involved_namespace": text_or_none(get_path(involved, "namespace")),
        "reason": text_or_none(ev.get("reason")),
        "type": text_or_none(ev.get("type")),
        "message": text_or_none(message),
        "count": count,
        "first_seen": first_seen,
        "last_seen": last_seen,
        "source_component": text_or_none(get_path(source, "component")),
        "reporting_controller": text_or_none(ev.get("reportingController"))
        or text_or_none(ev.get("reportingComponent")),
    }


def parse_k8s_events(path: str | Path, *, cluster: str = "default") -> ParseResult:
    """Parse Kubernetes Events into one row per event uid.

    Accepts ``kubectl get events -A -o json`` (``kind`` ``List`` or ``EventList``; core/v1 or
    events.k8s.io/v1 items), a bare JSON array of events, or JSON lines (one Event per line, or
    watch events ``{"type": "ADDED", "object": {...}}`` as event exporters write them), each
    optionally gzipped.

    The same uid seen several times (a stream of updates) is kept once: the version with the
    highest ``count``, then the latest ``last_seen``, then the last in the file; its
    ``first_seen`` is the earliest of all versions.

    Args:
        path: the file.
        cluster: the value of the ``cluster`` column.

    Returns:
        ``rows`` with :data:`K8S_EVENT_SCHEMA`: ``uid`` (``metadata.uid``), ``namespace`` (the
        Event's), ``involved_kind``/``_name``/``_uid``/``_namespace`` (the object the event is
        about), ``reason``, ``type`` (Normal/Warning), ``message``, ``count`` (occurrences; 1
        when the event has none), ``first_seen`` / ``last_seen`` (UTC, µs; see the module table
        for the fields read), ``source_component``, ``reporting_controller``, ``file`` and
        ``line_no`` (the kept version's 1-based item index, or its line in JSON lines).
        ``rejected``: items that are not JSON objects or not Events, or lack a uid or any time,
        or have a malformed time or count (``raw`` = the item's JSON text). ``info``:
        ``framing``, ``items``, ``duplicates`` (versions folded into an earlier uid).

    Raises:
        InputFormatError: the file is not JSON / JSON lines, is a list of another kind, or holds
            items none of which is an Event.
    """
    read = read_rows(
        path, list_kinds=_LIST_KINDS, build=lambda o: [_event_row(o)], what="Kubernetes Event"
    )
    frame = rows_frame(read.rows, K8S_EVENT_SCHEMA)
    latest = stamp(
        frame.with_row_index("_order")
        .with_columns(pl.col("first_seen").min().over("uid"))
        .sort(["uid", "count", "last_seen", "_order"], nulls_last=False)
        .unique("uid", keep="last", maintain_order=True)
        .sort("_order"),
        K8S_EVENT_SCHEMA,
        cluster=cluster,
        file=read.file,
    )
    return parse_result(read, latest, duplicates=frame.height - latest.height)
