"""Numbers, durations and dates for a reader: one home for the dashboard, the reports and the CLI.

Every function takes ``None`` (or NaN) and returns ``n/a``. The ``*_FORMAT`` constants are the
same forms as Streamlit ``column_config`` format strings, so a table cell and a sentence agree.
"""

from __future__ import annotations

import datetime as dt
import math

__all__ = [
    "DATETIME_FORMAT",
    "DATE_FORMAT",
    "GPU_H_FORMAT",
    "HOURS_FORMAT",
    "fmt_date",
    "fmt_duration",
    "fmt_gpu_h",
    "fmt_hours",
    "fmt_number",
    "fmt_pct",
]

#: ``column_config`` format of GPU-hours: thousands separators, no decimals (``21,728``).
GPU_H_FORMAT = "localized"
#: ``column_config`` format of a duration converted to hours (``26.6 h``).
HOURS_FORMAT = "%.1f h"
#: ``DatetimeColumn`` format of a day or a week (its Monday): ``2026-11-09``.
DATE_FORMAT = "YYYY-MM-DD"
#: ``DatetimeColumn`` format of an instant (UTC): ``2026-11-09 14:05``.
DATETIME_FORMAT = "YYYY-MM-DD HH:mm"


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_pct(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage: ``0.4969`` → ``49.7 %``; ``None`` → ``n/a``."""
    return "n/a" if _missing(value) else f"{value * 100:.{digits}f} %"  # type: ignore[operator]


def fmt_number(value: float | None, digits: int = 1) -> str:
    """``6548.1`` → ``6,548.1``; ``None`` → ``n/a``."""
    return "n/a" if _missing(value) else f"{value:,.{digits}f}"


def fmt_gpu_h(value: float | None) -> str:
    """GPU-hours with thousands separators, whole hours: ``21728.4`` → ``21,728``; ``None`` →
    ``n/a``. Below 10 GPU-hours one decimal is kept (``0.4`` → ``0.4``) so small values do not
    read as zero."""
    if _missing(value):
        return "n/a"
    v = float(value)  # type: ignore[arg-type]
    return f"{v:,.1f}" if abs(v) < 10 else f"{v:,.0f}"


def fmt_duration(seconds: float | None) -> str:
    """Seconds as Slurm prints elapsed time: ``[D-]HH:MM:SS`` (``90000`` → ``1-01:00:00``);
    ``None`` → ``n/a``. For a reader, :func:`fmt_hours` is shorter."""
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
    """Seconds for a reader: ``2700`` → ``45 min``, ``90000`` → ``25.0 h``, ``302400`` →
    ``3.5 d`` (days from 3 days up); ``None`` → ``n/a``."""
    if _missing(seconds):
        return "n/a"
    s = float(seconds)  # type: ignore[arg-type]
    if abs(s) < 3_600:
        return f"{s / 60:.0f} min"
    if abs(s) < 3 * 86_400:
        return f"{s / 3_600:.1f} h"
    return f"{s / 86_400:.1f} d"


def fmt_date(value: dt.date | dt.datetime | None) -> str:
    """A day or a week (its Monday) as a date, never a timestamp: ``2026-11-09``; an aware
    datetime is read in UTC; ``None`` → ``n/a``."""
    if value is None:
        return "n/a"
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    return f"{value:%Y-%m-%d}"
