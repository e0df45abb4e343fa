"""Reading Kubernetes JSON exports item by item, shared by the Event, Pod and Kueue parsers.

A file is read whatever its framing (list document, bare array, single object, JSON lines, gzip),
each item is turned into zero or more rows by a parser's ``build`` function, and items that
cannot be used become rejected rows instead of aborting the file.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipelines._json import LONE_SURROGATE, MAX_ITEM_DEPTH, loads_deep, lone_surrogate, too_deep
from pipelines._parse_result import (
    EARLIEST_PLAUSIBLE,
    REJECTED_SCHEMA,
    InputFormatError,
    ParseResult,
    latest_plausible,
)

__all__ = [
    "NOT_AN_OBJECT",
    "BadItem",
    "JsonItem",
    "RowsRead",
    "all_foreign",
    "get_path",
    "int_or_none",
    "iter_rows",
    "parse_k8s_time",
    "parse_result",
    "read_json_items",
    "read_rows",
    "rejected_frame",
    "rows_frame",
    "rows_from_items",
    "stamp",
    "text_or_none",
]

NOT_AN_OBJECT: Final = "item is not a JSON object"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


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
        raw: the item's JSON text (the line itself for JSON lines); empty for an object of a
            list document, whose text is only made (:meth:`text`) when the item is rejected.
        error: why ``obj`` is None.
    """

    line_no: int
    obj: dict[str, Any] | None
    raw: str
    error: str | None = None

    def text(self) -> str:
        """The item's JSON text: ``raw``, else the object serialised compactly."""
        if self.raw or self.obj is None:
            return self.raw
        return json.dumps(self.obj, ensure_ascii=False, separators=(",", ":"))


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
        InputFormatError: unreadable, empty (only whitespace) or not JSON at all, or a list
            document of another kind.
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
        raise InputFormatError(
            file, 'empty file (not JSON; an export with no objects is `{"items": []}`)'
        )
    try:
        doc = loads_deep(text)
    except RecursionError as exc:
        raise InputFormatError(file, "JSON nested deeper than 100,000 levels") from exc
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            start = len(text) - len(text.lstrip())
            first = text[start : start + 1]
            if first not in ("{", "["):
                raise InputFormatError(file, _not_json(text[start:]), line=exc.lineno) from exc
            first_line_end = text.find("\n", start)
            if first == "[" or (first_line_end >= 0 and exc.pos > first_line_end):
                # one document (an array, or an object spanning lines) that does not decode:
                # truncated or broken, not a stream of objects with one bad line
                raise InputFormatError(
                    file, f"invalid JSON document ({exc.msg}; truncated?)", line=exc.lineno
                ) from exc
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


def _item(line_no: int, value: object, raw: str = "") -> JsonItem:
    """One decoded item; an item nested deeper than :data:`MAX_ITEM_DEPTH` or holding a lone
    surrogate is rejected (its text escaped, so it can be stored)."""
    if too_deep(value):
        return JsonItem(line_no, None, "", f"nested deeper than {MAX_ITEM_DEPTH} levels")
    if lone_surrogate(value):
        escaped = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
        return JsonItem(line_no, None, escaped, LONE_SURROGATE)
    if not isinstance(value, dict):
        raw = raw or json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return JsonItem(line_no, None, raw, NOT_AN_OBJECT)
    return JsonItem(line_no, value, raw)  # a list item's text is made only if it is rejected


def _json_stream(file: str, text: str) -> list[JsonItem]:
    """Objects written one after another: JSON lines, or pretty-printed objects as ``kubectl
    get -w -o json`` writes them. Text that does not decode is skipped to the end of its line."""
    decoder = json.JSONDecoder()
    items: list[JsonItem] = []
    decoded = 0
    #: whether the objects span several lines each (pretty-printed, as ``kubectl get -w``)
    multiline = False
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
        except RecursionError:
            nl = text.find("\n", pos)
            end = size if nl < 0 else nl
            reason = f"nested deeper than {MAX_ITEM_DEPTH} levels"
            items.append(JsonItem(line_no, None, text[pos:end].rstrip("\r"), reason))
        except json.JSONDecodeError as exc:
            nl = text.find("\n", pos)
            end = size if nl < 0 else nl
            if multiline and exc.pos > end:
                # a pretty-printed object broken off (a truncated stream): the rest is one
                # rejected item, not a run of fragments decoded line by line
                items.append(JsonItem(line_no, None, text[pos:].rstrip(), f"not JSON: {exc.msg}"))
                break
            items.append(
                JsonItem(line_no, None, text[pos:end].rstrip("\r"), f"not JSON: {exc.msg}")
            )
        else:
            if decoded == 0:
                multiline = "\n" in text[pos:end]
            decoded += 1
            items.append(_item(line_no, value, text[pos:end]))
        line_no += text.count("\n", pos, end)
        pos = end
    if decoded == 0:
        raise InputFormatError(file, "not JSON and not JSON lines")
    return items


def _not_json(text: str) -> str:
    """The reason for a file that does not open as JSON: with a hint where it reads as
    ``kubectl get … -o yaml`` (``apiVersion:``, ``kind:`` or ``items:`` at the start of a
    line, or a ``---`` document marker)."""
    head = text[:4096]
    if re.search(r"(?m)^(---\s*$|apiVersion:|kind:|items:)", head):
        return "not JSON: this reads as YAML; export the objects with `kubectl get … -o json`"
    return "not JSON"


def parse_k8s_time(value: object, field: str) -> datetime | None:
    """An RFC 3339 Kubernetes ``Time``/``MicroTime`` as an aware UTC datetime (None if absent).

    Nanosecond fractions are cut to microseconds.

    Raises:
        BadItem: the value is not an RFC 3339 time with a zone, or is implausible: before
            1990-01-01 or more than a day after now (the ingest time).
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadItem(field, f"time is not a string: {value!r}")
    ts, error = _utc_time(value)
    if error is not None:
        raise BadItem(field, error)
    assert ts is not None
    if not EARLIEST_PLAUSIBLE <= ts <= latest_plausible():
        raise BadItem(field, f"implausible time {value} (before 1990 or after now + 1 day)")
    return ts


@lru_cache(maxsize=1 << 16)
def _utc_time(value: str) -> tuple[datetime | None, str | None]:
    """``(time in UTC, None)`` or ``(None, why not)``; cached: a stream repeats its seconds."""
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        return None, f"not an RFC 3339 time: {value!r}"
    if ts.tzinfo is None or "T" not in value:
        return None, f"time without a zone: {value!r}"
    return ts.astimezone(UTC), None


def get_path(obj: Mapping[str, Any] | None, *path: str) -> Any:
    """``obj[path[0]][path[1]]...``, or None where a step is missing or not a mapping."""
    cur: Any = obj
    for key in path:
        if type(cur) is not dict and not isinstance(cur, Mapping):  # dict first: no ABC check
            return None
        cur = cur.get(key)
    return cur


def text_or_none(value: object) -> str | None:
    """``value`` as a string; None for None or an empty string."""
    if value is None or value == "":
        return None
    return str(value)


def int_or_none(value: object, field: str, *, what: str = "not an integer") -> int | None:
    """An integer field (None if absent).

    Raises:
        BadItem: the value is not a JSON integer (``what`` is the reason given), or does not
            fit in 64 bits.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadItem(field, f"{what}: {value!r}")
    if not _INT64_MIN <= value <= _INT64_MAX:
        # Kubernetes integers are int32/int64; larger ones cannot be stored (BIGINT columns)
        raise BadItem(field, f"integer out of the 64-bit range: {value}")
    return value


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


@dataclass(frozen=True)
class RowsRead:
    """What :func:`read_rows` found in one file.

    Attributes:
        file: the path as given.
        items: every item of the file.
        framing: ``list``, ``array``, ``object`` or ``jsonl``.
        rows: the rows built, each with the ``line_no`` of its item.
        rejects: ``(line_no, field, raw, reason)`` of the items that gave no rows.
    """

    file: str
    items: list[JsonItem]
    framing: str
    rows: list[dict[str, Any]]
    rejects: list[tuple[int, str, str, str]]


def read_rows(
    path: str | Path,
    *,
    list_kinds: frozenset[str],
    build: Callable[[dict[str, Any]], list[dict[str, Any]]],
    what: str,
) -> RowsRead:
    """Read ``path`` and build the rows of its items (``build`` may give several per item).

    Raises:
        InputFormatError: as :func:`read_json_items`, or no item is ``what`` (every item was
            rejected as another kind or not an object).
    """
    items, framing = read_json_items(path, list_kinds=list_kinds)
    return rows_from_items(str(path), items, framing, build=build, what=what)


def rows_from_items(
    file: str,
    items: list[JsonItem],
    framing: str,
    *,
    build: Callable[[dict[str, Any]], list[dict[str, Any]]],
    what: str,
) -> RowsRead:
    """Build the rows of already-read ``items`` of ``file`` (as :func:`read_rows` does).

    Raises:
        InputFormatError: no item is ``what`` (every item was rejected as another kind or not an
            object).
    """
    rows: list[dict[str, Any]] = []
    rejects: list[tuple[int, str, str, str]] = []
    for item, built, err in iter_rows(items, lambda o: {"rows": build(o)}):
        if built is not None:
            rows.extend({**r, "line_no": item.line_no} for r in built["rows"])
        else:
            assert err is not None
            rejects.append((item.line_no, err[0], item.text(), err[1]))
    if items and not rows and all_foreign(rejects):
        raise InputFormatError(file, f"no item is a {what}")
    return RowsRead(file, items, framing, rows, rejects)


def rows_frame(rows: list[dict[str, Any]], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """The built rows as a frame of ``schema`` less the ``cluster`` and ``file`` columns."""
    return pl.DataFrame(
        rows, schema={c: t for c, t in schema.items() if c not in ("cluster", "file")}
    )


def stamp(
    frame: pl.DataFrame, schema: Mapping[str, pl.DataType], *, cluster: str, file: str
) -> pl.DataFrame:
    """``frame`` with the ``cluster`` and ``file`` columns, in ``schema``'s order and types."""
    return frame.with_columns(pl.lit(cluster).alias("cluster"), pl.lit(file).alias("file")).select(
        [pl.col(c).cast(t) for c, t in schema.items()]
    )


def parse_result(read: RowsRead, rows: pl.DataFrame, *, duplicates: int) -> ParseResult:
    """The :class:`ParseResult` of a file: its kept ``rows``, rejects and ``info``."""
    info: dict[str, object] = {
        "framing": read.framing,
        "items": len(read.items),
        "duplicates": duplicates,
    }
    return ParseResult(rows=rows, rejected=rejected_frame(read.file, read.rejects), info=info)
