"""Parse ``sdiag`` text into its statistics, one row per value.

:func:`parse_sdiag` reads one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow :data:`SDIAG_SCHEMA`; a line
that is neither a section header nor ``label: value`` goes to ``rejected`` with the reason.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._text import UTC, Collected, read_text

__all__ = [
    "SDIAG_SCHEMA",
    "parse_sdiag",
]

#: One row per ``sdiag`` value. ``section`` is ``general``, ``main_schedule``, ``backfill``,
#: ``rpc_by_type``, ``rpc_by_user`` or ``pending_rpc`` (others: the header, snake-cased);
#: ``key`` is the label snake-cased (``total_backfilled_jobs_since_last_slurm_start``; for RPC
#: lines ``count``/``ave_time``/``total_time``, with the message type or user in ``item`` and its
#: number in ``item_id``). ``value`` is the number (a time's epoch seconds); ``text`` the value as
#: printed. Times are in microseconds where sdiag says so (cycle statistics).
SDIAG_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "sdiag_at": UTC,
    "data_since": UTC,
    "section": pl.String(),
    "item": pl.String(),
    "item_id": pl.Int64(),
    "key": pl.String(),
    "value": pl.Float64(),
    "text": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

_SDIAG_SECTIONS: Final = {
    "main schedule statistics": "main_schedule",
    "backfilling stats": "backfill",
    "remote procedure call statistics by message type": "rpc_by_type",
    "remote procedure call statistics by user": "rpc_by_user",
    "pending rpc statistics": "pending_rpc",
}
_SDIAG_AT: Final = re.compile(r"^sdiag output at .*\((?P<epoch>\d+)\)\s*$")
_SDIAG_SINCE: Final = re.compile(r"^Data since .*\((?P<epoch>\d+)\)\s*$")
_RPC_LINE: Final = re.compile(r"^(?P<item>\S+)\s+\(\s*(?P<id>\d+)\)\s+(?P<rest>\S.*)$")
_RPC_PAIR: Final = re.compile(r"(?P<key>[a-z_]+):(?P<value>\S+)")
_NUMBER: Final = re.compile(r"^-?\d+(?:\.\d+)?")
_EPOCH_IN_PARENS: Final = re.compile(r"\((?P<epoch>\d{9,})\)\s*$")


def _snake(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def _sdiag_section(line: str) -> str | None:
    low = line.strip().lower().rstrip(":")
    for prefix, name in _SDIAG_SECTIONS.items():
        if low.startswith(prefix):
            return name
    return None


def parse_sdiag(
    path: str | Path, *, cluster: str = "default", text: str | None = None
) -> ParseResult:
    """Read ``sdiag`` text into one row per statistic.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster it was taken on.
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`SDIAG_SCHEMA` (``sdiag_at``/``data_since`` from the banner, on every
        row). A ``label: value`` line whose value is not a number or a time is kept with
        ``value`` NULL; a line that is neither a section header nor ``label: value`` is
        rejected. ``info`` has ``sdiag_at`` and ``data_since``.

    Raises:
        InputFormatError: the file cannot be read, or has no ``sdiag output at`` banner.
    """
    file, lines = read_text(path, text)
    out = Collected(file)
    sdiag_at = since = None
    section = "general"
    pending: list[dict[str, Any]] = []
    for no, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or set(stripped) <= {"*"}:
            continue
        if m := _SDIAG_AT.match(stripped):
            sdiag_at = dt.datetime.fromtimestamp(int(m.group("epoch")), tz=dt.UTC)
            continue
        if m := _SDIAG_SINCE.match(stripped):
            since = dt.datetime.fromtimestamp(int(m.group("epoch")), tz=dt.UTC)
            continue
        indented = line[:1].isspace()
        if not indented:
            named = _sdiag_section(stripped)
            if named is not None:
                section = named
                continue
            section = "general"
        base = {"cluster": cluster, "file": file, "line_no": no, "item": None, "item_id": None}
        if indented and (m := _RPC_LINE.match(stripped)) and _RPC_PAIR.search(m.group("rest")):
            for pair in _RPC_PAIR.finditer(m.group("rest")):
                pending.append(
                    {
                        **base, "section": section, "item": m.group("item"),
                        "item_id": int(m.group("id")), "key": pair.group("key"),
                        "value": _sdiag_number(pair.group("value")), "text": pair.group("value"),
                    }
                )  # fmt: skip
            continue
        label, sep, value = stripped.partition(":")
        if not sep or not label.strip():
            if indented and section == "pending_rpc" and stripped.lower().startswith("no pending"):
                continue
            if not indented and not sep:
                section = _snake(stripped)  # a section header this parser does not know
                continue
            out.reject(no, line, "neither a section header nor 'label: value'")
            continue
        value = value.strip()
        pending.append(
            {
                **base, "section": section, "key": _snake(label),
                "value": _sdiag_number(value), "text": value,
            }
        )  # fmt: skip
    if sdiag_at is None and any(line.strip() for line in lines):
        raise InputFormatError(file, "no 'sdiag output at' banner: not sdiag output")
    for row in pending:
        out.rows.append({**row, "sdiag_at": sdiag_at, "data_since": since})
    return out.result(SDIAG_SCHEMA, {"sdiag_at": sdiag_at, "data_since": since})


def _sdiag_number(value: str) -> float | None:
    """A value's number: a time's epoch in parentheses, else its leading number."""
    if m := _EPOCH_IN_PARENS.search(value):
        return float(m.group("epoch"))
    if m := _NUMBER.match(value):
        return float(m.group(0))
    return None
