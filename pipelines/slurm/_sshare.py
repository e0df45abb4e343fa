"""Parse ``sshare --all --long --parsable2`` into the fair-share tree.

:func:`parse_sshare` reads one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow :data:`SSHARE_SCHEMA`; a line
that cannot be read goes to ``rejected`` with the reason.
"""

from __future__ import annotations

import datetime as dt
from functools import partial
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._text import (
    UTC,
    BadValue,
    Collected,
    header_key,
    psv_line,
    read_text,
    to_float,
    to_int,
)

__all__ = [
    "SSHARE_SCHEMA",
    "parse_sshare",
]

#: One row per association of the fair-share tree. ``depth`` is the indent of ``Account``
#: (0 = root); ``user_name`` is NULL on account rows. ``raw_shares`` is NULL for ``parent``.
#: ``raw_usage`` is Slurm's decayed, billing-weighted usage (not GPU-seconds unless the billing
#: weights make it so); ``level_fs`` may be ``inf``. ``snapshot_at`` is when it was taken (given
#: by the caller; NULL when unknown).
SSHARE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "account": pl.String(),
    "user_name": pl.String(),
    "depth": pl.Int64(),
    "raw_shares": pl.Int64(),
    "norm_shares": pl.Float64(),
    "raw_usage": pl.Float64(),
    "norm_usage": pl.Float64(),
    "effective_usage": pl.Float64(),
    "fair_share": pl.Float64(),
    "level_fs": pl.Float64(),
    "grp_tres_mins": pl.String(),
    "tres_run_mins": pl.String(),
    "snapshot_at": UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}

_SSHARE_COLUMNS: Final = {
    "cluster": "cluster", "account": "account", "user": "user", "rawshares": "raw_shares",
    "normshares": "norm_shares", "rawusage": "raw_usage", "normusage": "norm_usage",
    "effectvusage": "effective_usage", "fairshare": "fair_share", "levelfs": "level_fs",
    "grptresmins": "grp_tres_mins", "tresrunmins": "tres_run_mins",
}  # fmt: skip


def parse_sshare(
    path: str | Path,
    *,
    cluster: str = "default",
    snapshot_at: dt.datetime | None = None,
    text: str | None = None,
) -> ParseResult:
    """Read ``sshare --all --long --parsable2`` into the fair-share tree.

    Columns are matched by header name (with or without ``--long``); a ``CLUSTER: name`` line
    (``sshare -M``) sets the cluster of the rows after it.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: cluster of rows not preceded by a ``CLUSTER:`` line.
        snapshot_at: when the output was taken (aware); stored on every row.
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`SSHARE_SCHEMA`; rows with the wrong field count or a non-numeric value
        are rejected.

    Raises:
        InputFormatError: the file cannot be read, or has no ``Account|User|…`` header.
    """
    file, lines = read_text(path, text)
    out = Collected(file)
    snap = snapshot_at.astimezone(dt.UTC) if snapshot_at else None
    names: list[str] | None = None
    keys: list[str | None] = []
    current = cluster
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line.startswith("CLUSTER:"):
            current = line.partition(":")[2].strip() or cluster
            continue
        if names is None:
            if not line.startswith("Account|"):
                raise InputFormatError(
                    file, "no Account|User|… header: not `sshare -P` output", line=no
                )
            names = line.rstrip("|").split("|")
            keys = [_SSHARE_COLUMNS.get(header_key(n)) for n in names]
            continue
        if line.startswith("Account|"):
            continue  # the header again (one per cluster with -M)
        build = partial(_sshare_row, cluster=current, snap=snap, file=file, no=no)
        psv_line(out, no, line, keys, build)
    return out.result(SSHARE_SCHEMA, {"fields": names or []})


def _sshare_row(
    values: dict[str, str], cluster: str, snap: dt.datetime | None, file: str, no: int
) -> dict[str, Any]:
    account_raw = values.get("account", "")
    account = account_raw.strip()
    if not account:
        raise BadValue("Account", "empty Account")
    raw_shares = values.get("raw_shares", "").strip()
    return {
        "cluster": values.get("cluster", "").strip() or cluster,
        "account": account,
        "user_name": values.get("user", "").strip() or None,
        "depth": len(account_raw) - len(account_raw.lstrip(" ")),
        "raw_shares": None if raw_shares == "parent" else to_int(raw_shares, "RawShares"),
        "norm_shares": to_float(values.get("norm_shares", ""), "NormShares"),
        "raw_usage": to_float(values.get("raw_usage", ""), "RawUsage"),
        "norm_usage": to_float(values.get("norm_usage", ""), "NormUsage"),
        "effective_usage": to_float(values.get("effective_usage", ""), "EffectvUsage"),
        "fair_share": to_float(values.get("fair_share", ""), "FairShare"),
        "level_fs": to_float(values.get("level_fs", ""), "LevelFS"),
        "grp_tres_mins": values.get("grp_tres_mins", "").strip() or None,
        "tres_run_mins": values.get("tres_run_mins", "").strip() or None,
        "snapshot_at": snap,
        "file": file,
        "line_no": no,
    }
