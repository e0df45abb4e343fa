"""Parse ``sacctmgr --parsable2 list transactions``: who changed which association, QOS or limit.

:func:`parse_sacctmgr_transactions` reads one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow :data:`TRANSACTION_SCHEMA`:
one row per transaction, object and key changed; a line that cannot be read goes to
``rejected`` with the reason.

slurmdbd records each change as ``Time|Action|Actor|Where|Info`` (``withassoc`` adds
``User|Account|Cluster``). ``Where`` and ``Info`` are fragments of the SQL slurmdbd ran, as
Slurm 22.05 prints them::

    1796284801|Modify Associations|root|(id_assoc=4)|shares=45
    1796284801|Modify QOS|root|(name='normal')|grp_tres = if (id=1, '1001=4', grp_tres)
    1796284771|Add Associations|root|id_assoc=2|mod_time=…, acct='root', user='root', shares=1, …

``Where`` names the objects (``id_assoc=N`` joined by `` || ``, read before the line is split
at ``|``, ``name='…'``, or a bare name for
an ``Add``); ``Info`` is ``key=value`` items split at top-level commas, a value quoted, ``NULL``
or a number, or the ``if (id=N, 'value', key)`` a QOS TRES limit is written as. TRES values
name TRES by id (``1001=4``); :mod:`pipelines.core.policy_changes` maps them to names.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import partial
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo

import polars as pl

from pipelines._parse_result import (
    EARLIEST_PLAUSIBLE,
    InputFormatError,
    ParseResult,
    latest_plausible,
)
from pipelines.slurm._text import (
    UTC,
    BadValue,
    Collected,
    header_key,
    psv_names,
    read_text,
    slurm_time,
    split_psv,
    time_zone,
)

__all__ = [
    "TRANSACTION_SCHEMA",
    "parse_sacctmgr_transactions",
]

#: One row per transaction, object and ``Info`` key. ``verb`` is ``add``, ``modify`` or
#: ``remove`` (others: the action's first word, lower case); ``key`` is NULL on the one row
#: of a transaction without ``Info`` (a ``Remove``); ``object_kind`` is what the action
#: is on (``association``, ``qos``, ``account``, ``user``, ``cluster``, ``tres``, …);
#: ``target`` the object as ``Where`` names it (an association's id, a QOS, account or user
#: name). ``value`` is the value unquoted, NULL for SQL ``NULL``. ``assoc_account`` and
#: ``assoc_user`` come from ``withassoc`` columns when the line names one association only.
TRANSACTION_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "changed_at": UTC,
    "action": pl.String(),
    "verb": pl.String(),
    "object_kind": pl.String(),
    "actor": pl.String(),
    "target": pl.String(),
    "key": pl.String(),
    "value": pl.String(),
    "assoc_account": pl.String(),
    "assoc_user": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

_COLUMNS: Final = {
    "time": "time", "action": "action", "actor": "actor", "where": "where", "info": "info",
    "user": "user", "account": "account", "cluster": "cluster",
}  # fmt: skip
#: The noun of an action (``Modify Associations``) → ``object_kind``.
_KINDS: Final = {
    "associations": "association", "association": "association", "qos": "qos",
    "accounts": "account", "account": "account", "users": "user", "user": "user",
    "clusters": "cluster", "cluster": "cluster", "tres": "tres", "wckeys": "wckey",
    "reservations": "reservation", "federations": "federation", "coordinators": "coordinator",
}  # fmt: skip
_PAIR: Final = re.compile(r"`?(?P<key>[A-Za-z_][A-Za-z0-9_]*)`?\s*=\s*(?P<value>.*)$", re.S)
_WHERE_PAIR: Final = re.compile(r"(?P<key>[a-z_]+)\s*=\s*(?P<value>'(?:[^']|'')*'|[^\s)|]+)")
_IF: Final = re.compile(
    r"^if\s*\(\s*id\s*=\s*(?P<id>\d+)\s*,\s*(?P<value>'(?:[^']|'')*'|[^,]+)\s*,"
)


def parse_sacctmgr_transactions(
    path: str | Path,
    *,
    cluster: str = "default",
    tz: str = "UTC",
    text: str | None = None,
) -> ParseResult:
    """Read ``sacctmgr --parsable2 list transactions`` into one row per object and key changed.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: cluster of rows without a ``Cluster`` column value.
        tz: IANA zone of naive times (the client's ``TZ``; epoch seconds need none).
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`TRANSACTION_SCHEMA`. A line with the wrong field count, an unreadable
        or implausible time (before 1990, more than a day after the ingest), no ``Where`` or an
        ``Info`` that is not ``key=value`` items is rejected.

    Raises:
        InputFormatError: the file cannot be read, or its first line is not a transactions
            header (``Time|Action|Actor|Where|Info``).
    """
    file, lines = read_text(path, text)
    zone = time_zone(tz, file)
    out = Collected(file)
    dst = [0]
    # the header is the first non-blank line (blank lines before it carry nothing)
    head = next((i for i, line in enumerate(lines) if line.strip()), None)
    if head is None:
        return out.result(TRANSACTION_SCHEMA, {"fields": []})
    names = psv_names(lines[head])
    keys = [_COLUMNS.get(header_key(n)) for n in names]
    if not {"time", "action", "where", "info"} <= set(keys):
        raise InputFormatError(
            file,
            "header lacks Time|Action|Where|Info: not `sacctmgr -P list transactions` output",
            line=head + 1,
        )
    latest = latest_plausible()
    for no, line in enumerate(lines[head + 1 :], head + 2):
        if not line.strip():
            continue
        # a Where of several associations joins them with SQL's ` || `, which is no field break
        parts = split_psv(line.replace(" || ", " OR "), len(keys))
        if parts is None:
            out.reject(no, line, f"{len(line.split('|'))} fields, header has {len(keys)}")
            continue
        values = {k: v for k, v in zip(keys, parts, strict=True) if k is not None}
        build = partial(_rows, cluster=cluster, zone=zone, dst=dst, file=file, no=no, latest=latest)
        try:
            out.rows.extend(build(values))
        except BadValue as err:
            out.reject(no, line, str(err), field_name=err.field_name)
    return out.result(TRANSACTION_SCHEMA, {"fields": names, "dst_adjusted": dst[0]})


def _rows(
    values: dict[str, str],
    cluster: str,
    zone: ZoneInfo,
    dst: list[int],
    file: str,
    no: int,
    latest: dt.datetime,
) -> list[dict[str, Any]]:
    at = slurm_time(values["time"], zone, "Time", dst)
    if at is None:
        raise BadValue("Time", f"no time: {values['time']!r}")
    if not EARLIEST_PLAUSIBLE <= at <= latest:
        raise BadValue(
            "Time",
            f"implausible time {at:%Y-%m-%dT%H:%M:%S} (outside {EARLIEST_PLAUSIBLE:%Y-%m-%d} .. "
            "a day after the ingest)",
        )
    action = values["action"].strip()
    verb, _, noun = action.partition(" ")
    kind = _KINDS.get(noun.strip().lower(), noun.strip().lower().replace(" ", "_") or "unknown")
    targets = _targets(values["where"])
    if not targets:
        raise BadValue("Where", f"names no object: {values['where']!r}")
    # a Remove may carry no Info: one row with no key still records it
    items = info_items(values["info"]) or [(None, None)]
    accounts = _single(values.get("account", ""))
    users = _single(values.get("user", ""))
    rows = []
    for target in targets:
        for key, value in items:
            rows.append(
                {
                    "cluster": values.get("cluster", "").strip() or cluster,
                    "changed_at": at,
                    "action": action,
                    "verb": verb.lower(),
                    "object_kind": kind,
                    "actor": values.get("actor", "").strip() or None,
                    "target": target,
                    "key": key,
                    "value": value,
                    "assoc_account": accounts if len(targets) == 1 else None,
                    "assoc_user": users if len(targets) == 1 else None,
                    "file": file,
                    "line_no": no,
                }
            )
    return rows


def _single(value: str) -> str | None:
    """A ``withassoc`` column's value when it names one object (not ``a,b,c``)."""
    value = value.strip()
    return value if value and "," not in value else None


def _targets(where: str) -> list[str]:
    """The objects a ``Where`` names: association ids, ``name=`` values or a bare name."""
    where = where.strip()
    pairs = [(m.group("key"), _unquote(m.group("value"))) for m in _WHERE_PAIR.finditer(where)]
    if pairs:
        return [v for k, v in pairs if k in ("id_assoc", "name", "id", "user", "acct")]
    bare = where.strip("()")
    return [t.strip() for t in bare.split(",") if t.strip()]


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'").replace("\\'", "'")
    return value


def _split_top(info: str) -> list[str]:
    """Split ``Info`` at commas outside quotes and parentheses."""
    parts: list[str] = []
    depth, quoted, start = 0, False, 0
    i = 0
    while i < len(info):
        ch = info[i]
        if ch == "\\" and quoted:
            i += 2
            continue
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth = max(0, depth - 1)
        elif not quoted and depth == 0 and ch == ",":
            parts.append(info[start:i])
            start = i + 1
        i += 1
    parts.append(info[start:])
    return [p.strip() for p in parts if p.strip()]


def info_items(info: str) -> list[tuple[str | None, str | None]]:
    """``Info``'s ``(key, value)`` items: values unquoted, ``NULL`` → None, a QOS's
    ``if (id=N, 'v', key)`` → ``v``.

    Raises:
        BadValue: an item is not ``key=value``.
    """
    items: list[tuple[str | None, str | None]] = []
    for part in _split_top(info):
        m = _PAIR.match(part)
        if m is None:
            raise BadValue("Info", f"not key=value: {part!r}")
        raw = m.group("value").strip()
        if cond := _IF.match(raw):
            raw = cond.group("value").strip()
        value = None if raw.upper() == "NULL" else _unquote(raw)
        items.append((m.group("key"), value))
    return items
