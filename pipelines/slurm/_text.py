"""Text helpers the Slurm cluster-state parsers share (one module per command beside this one).

Reading a command's output (:func:`read_text`), the ``Key=value`` records of ``scontrol``
(:func:`iter_records`, :func:`key_tokens`, :func:`split_top`), the ``--parsable2`` lines of
``sacctmgr`` and ``sshare`` (:func:`psv_names`, :func:`split_psv`, :func:`psv_line`), values
(:func:`slurm_time`, :func:`to_int`, :func:`to_float`), and :class:`Collected`, the rows and
rejected rows of one file: a value that cannot be read raises :class:`BadValue`, and its row goes
to ``rejected`` with the message, never silently away.

Times: Slurm prints naive times in the client's ``TZ`` (read here in ``tz``), or epoch seconds
when ``SLURM_TIME_FORMAT=%s`` (as the live sources ask, so that spooled files are unambiguous);
both are accepted. ``Unknown``/``None`` are NULL (an event's open end).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from metrics.schema import UTC_DATETIME
from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError, ParseResult

__all__ = [
    "TOKEN_SPLIT",
    "UTC",
    "BadValue",
    "Collected",
    "header_key",
    "iter_records",
    "key_tokens",
    "psv_line",
    "psv_names",
    "read_text",
    "slurm_time",
    "slurm_time_readings",
    "split_psv",
    "split_top",
    "time_zone",
    "to_float",
    "to_int",
]

#: The dtype of every time column of the cluster-state rows.
UTC: Final = UTC_DATETIME
_NULL_TIMES: Final = frozenset({"", "Unknown", "None", "N/A", "(null)", "0"})

#: A ``Key=`` token starts where whitespace is followed by a capitalised key; free text (OS,
#: Reason: "maint ticket=42 …") keeps its lower-case ``key=value`` words.
TOKEN_SPLIT: Final = re.compile(r"\s+(?=[A-Z][A-Za-z0-9_/]*=)")


@dataclass
class Collected:
    """Rows and rejected rows collected while reading one file."""

    file: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)

    def reject(
        self, line_no: int, raw: str, reason: str, *, field_name: str | None = None,
        line_end: int | None = None,
    ) -> None:  # fmt: skip
        self.rejected.append(
            {
                "file": self.file,
                "line_no": line_no,
                "line_end": line_no if line_end is None else line_end,
                "field": field_name,
                "raw": raw,
                "reason": reason,
            }
        )

    def result(self, schema: dict[str, pl.DataType], info: dict[str, object]) -> ParseResult:
        info = {**info, "rows": len(self.rows), "rejected": len(self.rejected)}
        return ParseResult(
            rows=pl.DataFrame(self.rows, schema=schema)
            if self.rows
            else pl.DataFrame(schema=schema),
            rejected=pl.DataFrame(self.rejected, schema=REJECTED_SCHEMA)
            if self.rejected
            else pl.DataFrame(schema=REJECTED_SCHEMA),
            info=info,
        )


class BadValue(ValueError):
    """One field's value cannot be read; the row is rejected with this message."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field_name = field_name
        super().__init__(message)


def read_text(path: str | Path, text: str | None) -> tuple[str, list[str]]:
    """The file label and the file's lines (``text`` wins over reading ``path``).

    Raises:
        InputFormatError: the file cannot be read.
    """
    file = str(path)
    if text is None:
        try:
            data = Path(path).read_bytes()
        except OSError as err:
            raise InputFormatError(file, f"cannot read the file: {err}") from err
        if b"\x00" in data[:65536]:
            raise InputFormatError(file, "binary data (NUL bytes), not command output")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
    # Lines end at "\n" only (a CRLF's "\r" is dropped), so line numbers are those of `wc -l`
    # and `sed -n`: str.splitlines would also break at a lone "\r", "\f" or "\x1c" inside a line.
    lines = [ln.removesuffix("\r") for ln in text.removeprefix("\ufeff").split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    return file, lines


def time_zone(tz: str, file: str) -> ZoneInfo:
    """The IANA zone ``tz`` naive times of ``file`` are read in.

    Raises:
        InputFormatError: ``tz`` is not a known zone.
    """
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise InputFormatError(file, f"unknown IANA time zone {tz!r}") from err


def slurm_time(value: str, zone: ZoneInfo, field_name: str, dst: list[int]) -> dt.datetime | None:
    """A Slurm time: naive ``YYYY-MM-DDTHH:MM:SS`` in ``zone``, or epoch seconds; NULL → None.

    An ambiguous local time (DST fall-back) is read as the earlier instant; a non-existent one
    (spring-forward gap) with the offset before the jump (02:30 → 03:30 daylight time). Both are
    counted in ``dst``.

    Raises:
        BadValue: neither form, or epoch seconds past what a date can hold.
    """
    readings = slurm_time_readings(value, zone, field_name, dst)
    return None if readings is None else readings[0]


def slurm_time_readings(
    value: str, zone: ZoneInfo, field_name: str, dst: list[int]
) -> tuple[dt.datetime, ...] | None:
    """Every UTC instant a Slurm time may name, earliest first; NULL → None.

    One instant, except a naive time of the repeated hour of a DST fall-back (01:30 on
    2024-11-03 in America/New_York: 05:30 UTC and 06:30 UTC), which gives both. A non-existent
    one (spring-forward gap) takes the offset before the jump, as :func:`slurm_time`. DST-odd
    values are counted in ``dst``.

    Raises:
        BadValue: neither form, or epoch seconds past what a date can hold.
    """
    value = value.strip()
    if value in _NULL_TIMES:
        return None
    if value.isdigit():
        try:
            return (dt.datetime.fromtimestamp(int(value), tz=dt.UTC),)
        except (OverflowError, OSError, ValueError) as err:  # past year 9999 or time_t
            raise BadValue(field_name, f"not a time: {value!r} is out of range") from err
    try:
        naive = dt.datetime.fromisoformat(value)
    except ValueError as err:
        raise BadValue(field_name, f"not a time: {value!r}") from err
    if naive.tzinfo is not None:
        return (naive.astimezone(dt.UTC),)
    early = naive.replace(tzinfo=zone, fold=0)
    late = naive.replace(tzinfo=zone, fold=1)
    if early.utcoffset() == late.utcoffset():
        return (early.astimezone(dt.UTC),)
    dst[0] += 1
    first, second = early.astimezone(dt.UTC), late.astimezone(dt.UTC)
    # fold=0 is the earlier instant of a repeated hour, but the later one of a skipped hour
    # (02:30 read with the offset before the jump): the gap keeps one reading, fold=0's
    return (first, second) if first < second else (first,)


def to_float(value: str, field_name: str) -> float | None:
    value = value.strip()
    if value == "":
        return None
    try:
        return float(value)  # accepts "inf"
    except ValueError as err:
        raise BadValue(field_name, f"not a number: {value!r}") from err


def to_int(value: str, field_name: str) -> int | None:
    value = value.strip()
    if value == "":
        return None
    if not re.fullmatch(r"-?\d+", value):
        raise BadValue(field_name, f"not an integer: {value!r}")
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise BadValue(field_name, f"integer past 64 bits: {value!r}")
    return number


def header_key(name: str) -> str:
    """``Cluster Nodes`` / ``ClusterNodes`` / ``TimeStart`` → ``clusternodes`` / ``timestart``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def split_top(text: str) -> list[str]:
    """Split on commas outside parentheses (``gpu:a100:4(S:0-1),gpu:v100:2(S:0)``)."""
    parts: list[str] = []
    depth = start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def iter_records(lines: Sequence[str], head: str) -> Iterable[tuple[int, int, list[str]]]:
    """(first line, last line, lines) of each ``head`` record, one-line or multi-line form.

    A record starts at a line beginning with ``head`` (``NodeName=``, ``JobId=``) and goes on
    over indented lines up to a blank one; any other line is a record of its own.
    """
    current: list[str] = []
    first = last = 0
    for no, line in enumerate(lines, 1):
        if line.startswith(head):
            if current:
                yield first, last, current
            current, first, last = [line], no, no
        elif line.strip() and current and line[:1].isspace():
            current.append(line)
            last = no
        elif line.strip():
            if current:
                yield first, last, current
                current = []
            yield no, no, [line]  # not part of a node record: rejected by the caller
        elif current:
            yield first, last, current
            current = []
    if current:
        yield first, last, current


def key_tokens(record: list[str]) -> dict[str, str]:
    """A record's ``Key=value`` tokens (split at :data:`TOKEN_SPLIT`; a key's first wins)."""
    tokens: dict[str, str] = {}
    for line in record:
        for token in TOKEN_SPLIT.split(line.strip()):
            key, sep, value = token.partition("=")
            if sep and key not in tokens:
                tokens[key] = value.strip()
    return tokens


def split_psv(line: str, n: int) -> list[str] | None:
    """Split a ``--parsable2`` line; a trailing ``|`` (``--parsable``) is tolerated."""
    parts = line.split("|")
    if len(parts) == n + 1 and parts[-1] == "":
        parts = parts[:-1]
    return parts if len(parts) == n else None


def psv_names(header: str) -> list[str]:
    """The column names of a ``--parsable2`` header line (a trailing ``|`` is tolerated)."""
    names = header.split("|")
    if names and names[-1] == "":
        names = names[:-1]
    return names


def psv_line(
    out: Collected,
    no: int,
    line: str,
    keys: Sequence[str | None],
    build: Callable[[dict[str, str]], dict[str, Any]],
    *,
    width_reason: str | None = None,
) -> None:
    """Add the row ``build`` makes of one ``--parsable2`` data line to ``out``, or reject it.

    ``keys`` names each column (None: not read). A line with another number of fields is
    rejected (``width_reason``, else the counts), as is one ``build`` raises :class:`BadValue`
    for.
    """
    parts = split_psv(line, len(keys))
    if parts is None:
        out.reject(
            no, line, width_reason or f"{len(line.split('|'))} fields, header has {len(keys)}"
        )
        return
    values = {k: v for k, v in zip(keys, parts, strict=True) if k is not None}
    try:
        out.rows.append(build(values))
    except BadValue as err:
        out.reject(no, line, str(err), field_name=err.field_name)
