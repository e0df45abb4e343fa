"""The result every input parser returns: parsed rows plus rejected rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import polars as pl

__all__ = [
    "EARLIEST_PLAUSIBLE",
    "REJECTED_SCHEMA",
    "InputFormatError",
    "ParseResult",
    "empty_rejected",
    "latest_plausible",
]

#: Input times before this are implausible (Slurm dates from 2002, Kubernetes from 2014; a clock
#: reset to the epoch gives 1970). Every parser rejects such a row.
EARLIEST_PLAUSIBLE = datetime(1990, 1, 1, tzinfo=UTC)
#: How far past the ingest time an input time may lie (clock skew between hosts).
FUTURE_SLACK = timedelta(days=1)


def latest_plausible(now: datetime | None = None) -> datetime:
    """The latest plausible input time: ``now`` (default the wall clock, UTC) + 1 day. A later
    time (a year-9999 End, a pod created in the future) would stretch a cluster's data cut-off,
    and every hourly table with it, past the present; parsers reject it."""
    return (now or datetime.now(UTC)) + FUTURE_SLACK


#: Columns of a rejected input row, as stored in ``raw.rejected_rows`` (minus ``source`` and
#: ``ingest_id``, which the warehouse adds). ``line_no``/``line_end`` are 1-based and inclusive;
#: for JSON inputs they are the item's index (1-based) in the document's list.
REJECTED_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String(),
    "line_no": pl.Int64(),
    "line_end": pl.Int64(),
    "field": pl.String(),
    "raw": pl.String(),
    "reason": pl.String(),
}


def empty_rejected() -> pl.DataFrame:
    """An empty frame with :data:`REJECTED_SCHEMA`."""
    return pl.DataFrame(schema=REJECTED_SCHEMA)


class InputFormatError(ValueError):
    """A whole input file cannot be read, or is not of the kind asked for.

    Raised (never for a single bad row: those go to ``rejected``) with the file, and where known
    the line and field, in the message.
    """

    def __init__(
        self, file: str, message: str, *, line: int | None = None, field: str | None = None
    ) -> None:
        self.file = file
        self.line = line
        self.field = field
        where = file if line is None else f"{file}:{line}"
        if field is not None:
            where += f" (field {field})"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class ParseResult:
    """Rows parsed from one input file.

    Attributes:
        rows: the parsed rows; the schema is the parser's own (documented on each parser).
        rejected: rows that could not be parsed, with :data:`REJECTED_SCHEMA`.
        info: free-form facts about the file (format detected, delimiter, field list, counts).
    """

    rows: pl.DataFrame
    rejected: pl.DataFrame
    info: dict[str, object] = field(default_factory=dict)
