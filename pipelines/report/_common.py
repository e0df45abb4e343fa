"""Helpers shared by the reports: ISO weeks, named queries, number formatting."""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from pipelines.config import Config
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


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_pct(value: float | None, digits: int = 1) -> str:
    """``0.4969`` → ``49.7 %``; ``None`` → ``n/a``."""
    return "n/a" if _missing(value) else f"{value * 100:.{digits}f} %"  # type: ignore[operator]


def fmt_number(value: float | None, digits: int = 1) -> str:
    """``6548.1`` → ``6,548.1``; ``None`` → ``n/a``."""
    return "n/a" if _missing(value) else f"{value:,.{digits}f}"


def fmt_duration(seconds: float | None) -> str:
    """Seconds as Slurm prints elapsed time: ``[D-]HH:MM:SS``; ``None`` → ``n/a``."""
    if _missing(seconds):
        return "n/a"
    total = round(seconds)  # type: ignore[arg-type]
    sign = "-" if total < 0 else ""
    days, rest = divmod(abs(total), 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    head = f"{days}-" if days else ""
    return f"{sign}{head}{hours:02d}:{minutes:02d}:{secs:02d}"


def fmt_hours(seconds: float | None) -> str:
    """Seconds for a reader: ``45 min``, ``26.6 h``, ``3.2 d``; ``None`` → ``n/a``."""
    if _missing(seconds):
        return "n/a"
    s = float(seconds)  # type: ignore[arg-type]
    if abs(s) < 3_600:
        return f"{s / 60:.0f} min"
    if abs(s) < 3 * 86_400:
        return f"{s / 3_600:.1f} h"
    return f"{s / 86_400:.1f} d"
