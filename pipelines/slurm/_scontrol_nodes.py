"""Parse ``scontrol --oneliner show nodes`` (or its multi-line form) into the node inventory.

:func:`parse_scontrol_nodes` reads one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow :data:`NODE_SCHEMA`; a
record that cannot be read goes to ``rejected`` with the reason, never silently away.
:func:`gres_gpus` counts the GPUs of a ``Gres=`` value; :func:`inventory_from_nodes` turns the
rows into the node inventory CSV's columns.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo

import polars as pl

from metrics.mig import mig_fraction
from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._sacct_values import gpus_from_tres
from pipelines.slurm._text import (
    UTC,
    BadValue,
    Collected,
    iter_records,
    key_tokens,
    read_text,
    slurm_time,
    split_top,
    time_zone,
    to_int,
)

__all__ = [
    "NODE_SCHEMA",
    "gres_gpus",
    "inventory_from_nodes",
    "parse_scontrol_nodes",
]

#: One row per node, from ``scontrol show nodes``. ``gpus`` counts MIG slices as their fraction
#: of a GPU (METRICS.md); ``gpu_type`` is the one non-MIG GRES type named (in ``Gres``, or in
#: ``CfgTRES`` when the GPUs are counted from it), else NULL;
#: ``partition`` is the first of ``partitions`` (slurm.conf order); ``state`` is Slurm's
#: ``IDLE+DRAIN`` as printed, ``base_state`` its first word without the ``*`` (not responding)
#: mark, ``state_flags`` the rest (``NOT_RESPONDING`` for ``*``); ``reason_user``/``reason_at``
#: come from the reason's ``[user@time]`` suffix; ``snapshot_at`` is when the output was taken
#: (given by the caller: ``scontrol show node`` prints no time of its own), NULL when unknown.
NODE_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "host": pl.String(),
    "gpus": pl.Float64(),
    "gpu_type": pl.String(),
    "partition": pl.String(),
    "partitions": pl.List(pl.String()),
    "state": pl.String(),
    "base_state": pl.String(),
    "state_flags": pl.List(pl.String()),
    "reason": pl.String(),
    "reason_user": pl.String(),
    "reason_at": UTC,
    "cpus": pl.Int64(),
    "real_memory_mb": pl.Int64(),
    "gres": pl.String(),
    "cfg_tres": pl.String(),
    "snapshot_at": UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
    "line_end": pl.Int64(),
}

_REASON_SUFFIX: Final = re.compile(r"^(?P<text>.*?)\s*\[(?P<user>[^@\]]*)@(?P<at>[^\]]+)\]$")
_GRES_ITEM: Final = re.compile(
    r"^(?P<name>[^:()]+)(?P<mid>(?::[^:()]+)*?):(?P<count>\d+)(?P<unit>[KMGT]?)(?:\([^)]*\))?$"
)
_GRES_FLAGS: Final = frozenset({"no_consume"})
#: ``scontrol`` state words that mean the node is not usable (besides a ``DOWN`` base state).
_STATE_MARKS: Final = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP",
                       "%": "POWERING_DOWN", "!": "POWER_DOWN", "@": "REBOOT_REQUESTED",
                       "$": "MAINTENANCE", "^": "REBOOT_ISSUED", "-": "PLANNED"}  # fmt: skip


def gres_gpus(gres: str | None) -> tuple[float, str | None]:
    """GPUs and GPU type of a node's ``Gres=`` value.

    Each ``gpu[:TYPE]:N[(S:…)]`` item is read as the TRES ``gres/gpu[:TYPE]=N`` and counted by
    :func:`~pipelines.slurm._sacct_values.gpus_from_tres`, so MIG types count their fraction
    (``gpu:3g.40gb:2`` = 6/7) exactly as in sacct's AllocTRES. Other GRES (``mps``, ``shard``)
    and the ``no_consume`` flag are not GPUs and are ignored here; the node's ``gres`` column
    keeps them, from which the core layer turns a job's shards into its share of the node's
    GPUs (:mod:`pipelines.core.gpu_shards`).

    Args:
        gres: e.g. ``"gpu:8"``, ``"gpu:a100:8(S:0-1)"``, ``"(null)"``.

    Returns:
        ``(gpus, gpu_type)``: 0.0 and None when the node has no GPU GRES; the type only when
        exactly one non-MIG type is named (a MIG slice's type, ``3g.40gb`` or ``a100_3g.40gb``,
        is :func:`metrics.mig.mig_fraction`'s: a profile token anywhere in the name).

    Raises:
        ValueError: a GPU item whose count is not a number.
    """
    if gres is None or gres.strip() in ("", "(null)", "N/A"):
        return 0.0, None
    tres: list[str] = []
    types: set[str] = set()
    for item in split_top(gres):
        m = _GRES_ITEM.match(item)
        name = item.split(":", 1)[0].split("(", 1)[0]
        if name != "gpu":
            continue
        if m is None:
            raise ValueError(f"GPU GRES item without a count: {item!r}")
        mid = [p for p in m.group("mid").split(":") if p and p not in _GRES_FLAGS]
        scale = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}[m.group("unit")]
        count = int(m.group("count")) * scale
        if mid:
            tres.append(f"gres/gpu:{mid[0]}={count}")
            if mig_fraction(mid[0]) is None:
                types.add(mid[0])
        else:
            tres.append(f"gres/gpu={count}")
    if not tres:
        return 0.0, None
    gpus = gpus_from_tres(",".join(tres)) or 0.0
    return gpus, next(iter(types)) if len(types) == 1 else None


def _tres_gpu_type(tres: str) -> str | None:
    """The GPU type of a node's ``CfgTRES`` as :func:`gres_gpus` reads it from ``Gres``: the one
    non-MIG type among its ``gres/gpu:TYPE=N`` entries (``gres/gpu=2,gres/gpu:mi300a=2`` →
    ``mi300a``), else None (none typed, or several types)."""
    types = set()
    for item in tres.split(","):
        key = item.partition("=")[0].strip()
        if key.startswith("gres/gpu:") and len(key) > len("gres/gpu:"):
            kind = key[len("gres/gpu:") :]
            if mig_fraction(kind) is None:
                types.add(kind)
    return next(iter(types)) if len(types) == 1 else None


def _state_parts(state: str) -> tuple[str, list[str]]:
    words = [w for w in state.split("+") if w]
    if not words:
        return "", []
    base, flags = words[0], words[1:]
    while base and base[-1] in _STATE_MARKS:
        flags.insert(0, _STATE_MARKS[base[-1]])
        base = base[:-1]
    return base, flags


def parse_scontrol_nodes(
    path: str | Path,
    *,
    cluster: str = "default",
    tz: str = "UTC",
    text: str | None = None,
    snapshot_at: dt.datetime | None = None,
) -> ParseResult:
    """Read ``scontrol --oneliner show nodes`` (or its multi-line form) into the node inventory.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster the nodes belong to (scontrol does not print it).
        tz: IANA zone of naive times (the reason's ``[user@time]``).
        text: the output itself, instead of reading ``path``.
        snapshot_at: when the output was taken (aware); stored on every row. A down or
            drained node's snapshots give its down time where ``sacctmgr`` events do not
            (:func:`pipelines.core.node_states.snapshot_node_events`); undated ones do not.

    Returns:
        Rows with :data:`NODE_SCHEMA`; a record without ``NodeName``, or with an unreadable
        ``Gres``/``CPUTot``/``RealMemory``/reason time, is rejected. ``info`` has ``nodes``.

    Raises:
        InputFormatError: the file cannot be read, or holds no node record at all while not empty.
    """
    file, lines = read_text(path, text)
    zone = time_zone(tz, file)
    out = Collected(file)
    dst = [0]
    snap = snapshot_at.astimezone(dt.UTC) if snapshot_at else None
    records = list(iter_records(lines, "NodeName="))
    if records and not any(rec[0].startswith("NodeName=") for _f, _l, rec in records):
        raise InputFormatError(file, "no 'NodeName=' record: not `scontrol show nodes` output")
    for first, last, record in records:
        raw = "\n".join(record)
        if not record[0].startswith("NodeName="):
            out.reject(first, raw, "line outside a NodeName= record", line_end=last)
            continue
        tokens = key_tokens(record)
        try:
            out.rows.append(
                _node_row(tokens, cluster, zone, dst, file, first, last) | {"snapshot_at": snap}
            )
        except BadValue as err:
            out.reject(first, raw, str(err), field_name=err.field_name, line_end=last)
    return out.result(NODE_SCHEMA, {"nodes": len(out.rows), "dst_adjusted": dst[0]})


def _node_row(
    tokens: dict[str, str], cluster: str, zone: ZoneInfo, dst: list[int], file: str,
    first: int, last: int,
) -> dict[str, Any]:  # fmt: skip
    host = tokens.get("NodeName", "")
    if not host:
        raise BadValue("NodeName", "empty NodeName")
    try:
        gpus, gpu_type = gres_gpus(tokens.get("Gres"))
    except ValueError as err:
        raise BadValue("Gres", str(err)) from err
    cfg_tres = tokens.get("CfgTRES") or None
    if gpus == 0.0 and cfg_tres:
        # a GPU node whose Gres line is empty still registers its GPUs as TRES, with their
        # type when typed (``gres/gpu=2,gres/gpu:mi300a=2``)
        gpus = gpus_from_tres(cfg_tres) or 0.0
        gpu_type = _tres_gpu_type(cfg_tres) if gpus else None
    partitions = [p for p in tokens.get("Partitions", "").split(",") if p and p != "(null)"]
    state = tokens.get("State", "")
    base, flags = _state_parts(state)
    reason = tokens.get("Reason") or None
    reason_user = reason_at = None
    if reason:
        m = _REASON_SUFFIX.match(reason)
        if m:
            reason, reason_user = m.group("text"), m.group("user") or None
            reason_at = slurm_time(m.group("at"), zone, "Reason", dst)
    return {
        "cluster": cluster,
        "host": host,
        "gpus": gpus,
        "gpu_type": gpu_type,
        "partition": partitions[0] if partitions else None,
        "partitions": partitions,
        "state": state or None,
        "base_state": base or None,
        "state_flags": flags,
        "reason": reason,
        "reason_user": reason_user,
        "reason_at": reason_at,
        "cpus": to_int(tokens.get("CPUTot", ""), "CPUTot"),
        "real_memory_mb": to_int(tokens.get("RealMemory", ""), "RealMemory"),
        "gres": tokens.get("Gres") or None,
        "cfg_tres": cfg_tres,
        "file": file,
        "line_no": first,
        "line_end": last,
    }


def inventory_from_nodes(nodes: pl.DataFrame) -> pl.DataFrame:
    """The node inventory CSV's columns (``host,gpus,gpu_type,partition,rack``) from parsed nodes.

    Args:
        nodes: rows of :func:`parse_scontrol_nodes` (one cluster).

    Returns:
        One row per host, sorted; ``rack`` is NULL (scontrol does not know it).
    """
    return (
        nodes.select("host", "gpus", "gpu_type", "partition")
        .unique("host", keep="last", maintain_order=True)
        .with_columns(pl.lit(None, dtype=pl.String()).alias("rack"))
        .sort("host")
    )
