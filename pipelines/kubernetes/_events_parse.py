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

import gzip
import json
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError, ParseResult

__all__ = [
    "K8S_EVENT_SCHEMA",
    "NOT_AN_OBJECT",
    "BadItem",
    "JsonItem",
    "all_foreign",
    "iter_rows",
    "parse_k8s_events",
    "parse_k8s_time",
    "read_json_items",
    "rejected_frame",
]

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
NOT_AN_OBJECT: Final = "item is not a JSON object"


class BadItem(ValueError):
    """One item cannot be turned into a row; ``field`` names the culprit."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


@dataclass(frozen=True)
class JsonItem:
    """One object of a JSON document or JSON-lines stream.

    Attributes:
        line_no: the item's 1-based index in the document's ``items`` (or top-level array), or its
            line in a JSON-lines stream.
        obj: the decoded object, or None when the line is not a JSON object.
        raw: the item's JSON text (the line itself for JSON lines).
        error: why ``obj`` is None.
    """

    line_no: int
    obj: dict[str, Any] | None
    raw: str
    error: str | None = None


def read_json_items(path: str | Path, *, list_kinds: frozenset[str]) -> tuple[list[JsonItem], str]:
    """The objects of a Kubernetes JSON export, whatever its framing.

    Accepts a list document (``{"kind": <one of list_kinds>, "items": [...]}``), a bare JSON
    array, a single object, or JSON lines (one object per line; blank lines are skipped). Watch
    events (``{"type": "ADDED", "object": {...}}``) are returned as they are. Gzip is detected by
    its magic bytes.

    Args:
        path: the file.
        list_kinds: the ``kind`` values of a list document that are accepted.

    Returns:
        The items and the framing found: ``list``, ``array``, ``object`` or ``jsonl``.

    Raises:
        InputFormatError: unreadable or not JSON at all, or a list document of another kind.
    """
    file = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputFormatError(file, f"cannot read: {exc}") from exc
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputFormatError(file, f"broken gzip stream: {exc}") from exc
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        return [], "empty"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            first = text.lstrip()[:1]
            if first not in ("{", "["):
                raise InputFormatError(file, "not JSON", line=exc.lineno) from exc
        return _json_stream(file, text), "jsonl"
    if isinstance(doc, list):
        return [_item(i, v) for i, v in enumerate(doc, 1)], "array"
    if not isinstance(doc, dict):
        raise InputFormatError(file, "not a Kubernetes object or list (a bare JSON value)")
    if "items" in doc:
        kind = doc.get("kind")
        if kind is not None and kind not in list_kinds:
            raise InputFormatError(
                file, f"a {kind}, expected one of {', '.join(sorted(list_kinds))}", field="kind"
            )
        items = doc["items"]
        if not isinstance(items, list):
            raise InputFormatError(file, "'items' is not a list", field="items")
        return [_item(i, v) for i, v in enumerate(items, 1)], "list"
    return [_item(1, doc)], "object"


def _item(line_no: int, value: object) -> JsonItem:
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if not isinstance(value, dict):
        return JsonItem(line_no, None, raw, NOT_AN_OBJECT)
    return JsonItem(line_no, value, raw)


def _json_stream(file: str, text: str) -> list[JsonItem]:
    """Objects written one after another: JSON lines, or pretty-printed objects as ``kubectl
    get -w -o json`` writes them. Text that does not decode is skipped to the end of its line."""
    decoder = json.JSONDecoder()
    items: list[JsonItem] = []
    decoded = 0
    pos, line_no, size = 0, 1, len(text)
    while pos < size:
        ws_end = pos
        while ws_end < size and text[ws_end] in " \t\r\n":
            ws_end += 1
        line_no += text.count("\n", pos, ws_end)
        pos = ws_end
        if pos >= size:
            break
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            nl = text.find("\n", pos)
            end = size if nl < 0 else nl
            items.append(
                JsonItem(line_no, None, text[pos:end].rstrip("\r"), f"not JSON: {exc.msg}")
            )
        else:
            decoded += 1
            item = _item(line_no, value)
            items.append(JsonItem(line_no, item.obj, text[pos:end], item.error))
        line_no += text.count("\n", pos, end)
        pos = end
    if decoded == 0:
        raise InputFormatError(file, "not JSON and not JSON lines")
    return items


def parse_k8s_time(value: object, field: str) -> datetime | None:
    """An RFC 3339 Kubernetes ``Time``/``MicroTime`` as an aware UTC datetime (None if absent).

    Nanosecond fractions are cut to microseconds.

    Raises:
        BadItem: the value is not an RFC 3339 time with a zone.
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadItem(field, f"time is not a string: {value!r}")
    try:
        ts = datetime.fromisoformat(value)
    except ValueError as exc:
        raise BadItem(field, f"not an RFC 3339 time: {value!r}") from exc
    if ts.tzinfo is None or "T" not in value:
        raise BadItem(field, f"time without a zone: {value!r}")
    return ts.astimezone(UTC)


def _get(obj: Mapping[str, Any] | None, *path: str) -> Any:
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _text(value: object) -> str | None:
    if value is None:
        return None
    s = str(value)
    return s if s != "" else None


def _count(value: object, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadItem(field, f"count is not an integer: {value!r}")
    return value


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
    if involved is not None and not isinstance(involved, dict):
        raise BadItem("involvedObject", "not an object")
    uid = _text(_get(ev, "metadata", "uid"))
    if uid is None:
        raise BadItem("metadata.uid", "event has no uid")
    series = ev.get("series") if isinstance(ev.get("series"), dict) else None
    event_time = parse_k8s_time(ev.get("eventTime"), "eventTime")
    created = parse_k8s_time(
        _get(ev, "metadata", "creationTimestamp"), "metadata.creationTimestamp"
    )
    first = parse_k8s_time(ev.get("firstTimestamp"), "firstTimestamp") or parse_k8s_time(
        ev.get("deprecatedFirstTimestamp"), "deprecatedFirstTimestamp"
    )
    last = parse_k8s_time(ev.get("lastTimestamp"), "lastTimestamp") or parse_k8s_time(
        ev.get("deprecatedLastTimestamp"), "deprecatedLastTimestamp"
    )
    observed = parse_k8s_time(_get(series, "lastObservedTime"), "series.lastObservedTime")
    first_seen = first or event_time or created or observed
    last_seen = last or observed or event_time or created
    if first_seen is None or last_seen is None:
        raise BadItem("lastTimestamp", "event has no time at all")
    counts = (
        _count(_get(series, "count"), "series.count"),
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
        "namespace": _text(_get(ev, "metadata", "namespace")),
        "involved_kind": _text(_get(involved, "kind")),
        "involved_name": _text(_get(involved, "name")),
        "involved_uid": _text(_get(involved, "uid")),
        "involved_namespace": _text(_get(involved, "namespace")),
        "reason": _text(ev.get("reason")),
        "type": _text(ev.get("type")),
        "message": _text(message),
        "count": count,
        "first_seen": first_seen,
        "last_seen": last_seen,
        "source_component": _text(_get(source, "component")),
        "reporting_controller": _text(ev.get("reportingController"))
        or _text(ev.get("reportingComponent")),
    }


def rejected_frame(file: str, rejects: list[tuple[int, str, str, str]]) -> pl.DataFrame:
    """Rejected items ``(line_no, field, raw, reason)`` of ``file``, as :data:`REJECTED_SCHEMA`."""
    return pl.DataFrame(
        {
            "file": [file] * len(rejects),
            "line_no": [r[0] for r in rejects],
            "line_end": [r[0] for r in rejects],
            "field": [r[1] for r in rejects],
            "raw": [r[2] for r in rejects],
            "reason": [r[3] for r in rejects],
        },
        schema=REJECTED_SCHEMA,
    )


def all_foreign(rejects: list[tuple[int, str, str, str]]) -> bool:
    """Whether every rejected item is of another kind (or no object at all), not a bad one."""
    return all(field == "kind" or reason == NOT_AN_OBJECT for _, field, _, reason in rejects)


def iter_rows(
    items: list[JsonItem], build: Callable[[dict[str, Any]], dict[str, Any]]
) -> Iterator[tuple[JsonItem, dict[str, Any] | None, tuple[str, str] | None]]:
    """Apply ``build`` to each item; yields ``(item, row, None)`` or ``(item, None, (field, why))``.

    ``build`` raises :class:`BadItem` for an item it cannot use; a field of an unexpected JSON
    type deep inside an item (a string where an object belongs) is rejected the same way, as
    field ``item``, rather than aborting the file.
    """
    for item in items:
        if item.obj is None:
            yield item, None, ("item", item.error or "not a JSON object")
            continue
        try:
            row = build(item.obj)
        except BadItem as exc:
            yield item, None, (exc.field, exc.reason)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            yield item, None, ("item", f"malformed object ({type(exc).__name__}: {exc})")
        else:
            yield item, row, None


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
    file = str(path)
    items, framing = read_json_items(path, list_kinds=_LIST_KINDS)
    rows: list[dict[str, Any]] = []
    rejects: list[tuple[int, str, str, str]] = []
    for item, row, err in iter_rows(items, _event_row):
        if row is not None:
            rows.append({**row, "line_no": item.line_no})
        else:
            assert err is not None
            rejects.append((item.line_no, err[0], item.raw, err[1]))
    if items and not rows and all_foreign(rejects):
        raise InputFormatError(file, "no item is a Kubernetes Event")
    frame = pl.DataFrame(
        rows, schema={c: t for c, t in K8S_EVENT_SCHEMA.items() if c not in ("cluster", "file")}
    )
    latest = (
        frame.with_row_index("_order")
        .with_columns(pl.col("first_seen").min().over("uid"))
        .sort(["uid", "count", "last_seen", "_order"], nulls_last=False)
        .unique("uid", keep="last", maintain_order=True)
        .sort("_order")
        .with_columns(pl.lit(cluster).alias("cluster"), pl.lit(file).alias("file"))
        .select([pl.col(c).cast(t) for c, t in K8S_EVENT_SCHEMA.items()])
    )
    info: dict[str, object] = {
        "framing": framing,
        "items": len(items),
        "duplicates": frame.height - latest.height,
    }
    return ParseResult(rows=latest, rejected=rejected_frame(file, rejects), info=info)
