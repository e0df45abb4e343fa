"""Parse ``scontrol show config``: the ``slurm.conf`` settings in force at one moment.

:func:`parse_scontrol_config` reads one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow :data:`CONFIG_SCHEMA`: one
row per setting. Slurm keeps no history of its configuration, so successive snapshots are what
:mod:`pipelines.core.policy_changes` diffs.

The output (Slurm 22.05) starts with ``Configuration data as of <time>`` (epoch seconds under
``SLURM_TIME_FORMAT=%s``, as the live source asks; else a naive time in the client's ``TZ``),
then ``Name = value`` lines; later sections (``Cgroup Support Configuration:``, plugin
sections) are headers ending in ``:`` with their own ``Name = value`` lines, and the output
ends with ``Slurmctld(primary) at host is UP``. A name printed again in a later section keeps
its first value.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Final

import polars as pl

from pipelines._parse_result import (
    EARLIEST_PLAUSIBLE,
    InputFormatError,
    ParseResult,
    latest_plausible,
)
from pipelines.slurm._text import UTC, BadValue, Collected, read_text, slurm_time, time_zone

__all__ = [
    "CONFIG_SCHEMA",
    "parse_scontrol_config",
]

#: One row per setting of one snapshot. ``snapshot_at`` is the ``Configuration data as of``
#: time, or (no such line) the time given by the caller, else NULL; ``value`` is the text as
#: printed, NULL for ``(null)``.
CONFIG_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "snapshot_at": UTC,
    "key": pl.String(),
    "value": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

_AS_OF: Final = re.compile(r"^Configuration data as of (?P<at>\S+)\s*$")
_SETTING: Final = re.compile(r"^(?P<key>[A-Za-z_][^\s=]*)\s*=\s?(?P<value>.*)$")
_DAEMON: Final = re.compile(r"^Slurmctld\(\w+\) at \S+ is \w+")


def parse_scontrol_config(
    path: str | Path,
    *,
    cluster: str = "default",
    tz: str = "UTC",
    snapshot_at: dt.datetime | None = None,
    text: str | None = None,
) -> ParseResult:
    """Read ``scontrol show config`` into one row per setting.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster it was taken on.
        tz: IANA zone of a naive ``as of`` time.
        snapshot_at: when it was taken, for output without the ``as of`` line (aware).
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`CONFIG_SCHEMA`; a line that is neither a setting, a section header
        nor the daemon status line is rejected, as is a setting repeated (the first stands)
        and an ``as of`` time that cannot be read or
        is implausible (before 1990, more than a day after the ingest: the caller's time
        stands). ``info`` has ``snapshot_at``.

    Raises:
        InputFormatError: the file cannot be read, or holds no setting and no ``as of`` line
            (not ``scontrol show config`` output).
    """
    file, lines = read_text(path, text)
    zone = time_zone(tz, file)
    out = Collected(file)
    at = snapshot_at.astimezone(dt.UTC) if snapshot_at else None
    seen: set[str] = set()
    settings: list[tuple[int, str, str | None]] = []
    dst = [0]
    latest = latest_plausible()
    for no, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or _DAEMON.match(stripped):
            continue
        if m := _AS_OF.match(stripped):
            try:
                when = slurm_time(m.group("at"), zone, "as of", dst)
            except BadValue as err:
                out.reject(no, line, str(err), field_name="as of")
                continue
            if when is not None and not EARLIEST_PLAUSIBLE <= when <= latest:
                out.reject(
                    no, line, f"implausible time {when:%Y-%m-%dT%H:%M:%S} (outside "
                    f"{EARLIEST_PLAUSIBLE:%Y-%m-%d} .. a day after the ingest)", field_name="as of",
                )  # fmt: skip
                continue
            at = when
            continue
        if m := _SETTING.match(stripped):
            key, value = m.group("key"), m.group("value").strip()
            if key in seen:
                out.reject(no, line, f"{key} repeated: the first value is kept", field_name=key)
            else:
                seen.add(key)
                settings.append((no, key, None if value == "(null)" else value))
            continue
        if stripped.endswith(":"):
            continue  # a section header
        out.reject(no, line, "neither 'Name = value' nor a section header")
    if not settings and at is None and any(line.strip() for line in lines):
        raise InputFormatError(file, "no 'Name = value' settings: not `scontrol show config`")
    for no, key, value in settings:
        out.rows.append(
            {"cluster": cluster, "snapshot_at": at, "key": key, "value": value,
             "file": file, "line_no": no}
        )  # fmt: skip
    return out.result(CONFIG_SCHEMA, {"snapshot_at": at})
