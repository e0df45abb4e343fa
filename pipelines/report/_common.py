"""Helpers shared by the reports: ISO weeks, named queries; number formatting is re-exported from
:mod:`pipelines.report.formatting`, its one home."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from pipelines.config import Config
from pipelines.report.formatting import fmt_duration, fmt_hours, fmt_number, fmt_pct
from pipelines.warehouse import run_named

__all__ = [
    "IsoWeek",
    "ReportError",
    "fmt_duration",
    "fmt_hours",
    "fmt_number",
    "fmt_pct",
    "query",
    "recommendations_path",
    "reports_dir",
]

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


class ReportError(RuntimeError):
    """A report cannot be made: an invalid week, no data for it, or no browser for the PDF."""


@dataclass(frozen=True, order=True)
class IsoWeek:
    """An ISO 8601 week (``2026-W45``): Monday 00:00 UTC to the next Monday 00:00 UTC."""

    year: int
    week: int

    @classmethod
    def parse(cls, text: str) -> IsoWeek:
        """Parse ``YYYY-Www``.

        Raises:
            ReportError: not of that form, or no such week in that ISO year.
        """
        m = _WEEK.match(text.strip())
        if not m:
            raise ReportError(f"week {text!r} is not of the form YYYY-Www (e.g. 2026-W45)")
        year, week = int(m.group(1)), int(m.group(2))
        try:
            dt.date.fromisocalendar(year, week, 1)
        except ValueError as exc:
            raise ReportError(f"week {text!r} does not exist ({exc})") from exc
        return cls(year, week)

    @classmethod
    def of(cls, when: dt.datetime | dt.date) -> IsoWeek:
        """The ISO week holding ``when`` (an aware datetime is read in UTC)."""
        if isinstance(when, dt.datetime):
            day = (when.astimezone(dt.UTC) if when.tzinfo else when).date()
        else:
            day = when
        iso = day.isocalendar()
        return cls(iso.year, iso.week)

    @property
    def start(self) -> dt.datetime:
        """Monday 00:00 UTC."""
        day = dt.date.fromisocalendar(self.year, self.week, 1)
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)

    @property
    def end(self) -> dt.datetime:
        """The next Monday 00:00 UTC (exclusive)."""
        return self.start + dt.timedelta(days=7)

    def previous(self) -> IsoWeek:
        """The week before."""
        return IsoWeek.of(self.start - dt.timedelta(days=1))

    def __str__(self) -> str:
        return f"{self.year:04d}-W{self.week:02d}"


def query(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pl.DataFrame:
    """Run ``sql/report/<name>.sql`` with bound ``$name`` parameters
    (:func:`pipelines.warehouse.run_named`: zoned timestamps come back in UTC).

    Args:
        con: a (read-only) connection to the serving copy.
        name: the statement's file name without suffix.
        **params: values of the statement's ``$`` parameters.

    Raises:
        KeyError: the statement names a parameter not given.
    """
    return run_named(con, f"report/{name}", params)


def reports_dir(cfg: Config) -> Path:
    """Where weekly reports are kept: ``reports/`` beside the serving copy (``data/reports``)."""
    return cfg.serving_path.parent / "reports"


def recommendations_path(cfg: Config) -> Path:
    """The recommendations file the report reads: ``recommendations/latest.json`` beside it."""
    return cfg.serving_path.parent / "recommendations" / "latest.json"
