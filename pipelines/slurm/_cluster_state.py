"""Parse Slurm's cluster-state commands: nodes, accounting events, fair share, priorities, sdiag.

One pure function per command, each reading one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow the schema constant beside it;
a line that cannot be read goes to ``rejected`` with the reason, never silently away:

- :func:`parse_scontrol_nodes`: ``scontrol --oneliner show nodes`` (or the multi-line form) →
  the node inventory (:data:`NODE_SCHEMA`);
- :func:`parse_scontrol_jobs`: ``scontrol --details --oneliner show job`` (or the multi-line
  form) → which GPU indices of which node each job holds now (:data:`SCONTROL_JOB_SCHEMA`);
- :func:`parse_sacctmgr_events`: ``sacctmgr --parsable2 show event`` → cluster TRES
  registrations (sreport's *Reported* capacity) and node down/drain intervals
  (:data:`EVENT_SCHEMA`);
- :func:`parse_sshare`: ``sshare --all --long --parsable2`` → the fair-share tree
  (:data:`SSHARE_SCHEMA`);
- :func:`parse_sprio`: ``sprio --format`` :data:`SPRIO_FORMAT` → priority factors of pending
  jobs (:data:`SPRIO_SCHEMA`);
- :func:`parse_sdiag`: ``sdiag`` → its statistics, one row per value (:data:`SDIAG_SCHEMA`).

Times: Slurm prints naive times in the client's ``TZ`` (read here in ``tz``), or epoch seconds
when ``SLURM_TIME_FORMAT=%s`` (as the live sources ask, so that spooled files are unambiguous);
both are accepted. ``Unknown``/``None`` are NULL (an event's open end).

:func:`pipelines.core.node_states.registered_gpu_seconds_hourly` and
:func:`pipelines.core.node_states.node_event_gpu_seconds_hourly` turn the events into
GPU-seconds per hour, the way ``sreport cluster utilization`` counts *Reported*.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError, ParseResult
from pipelines.slurm._sacct_values import expand_nodelist, gpus_from_tres

__all__ = [
    "EVENT_SCHEMA",
    "NODE_SCHEMA",
    "SCONTROL_JOB_SCHEMA",
    "SDIAG_SCHEMA",
    "SPRIO_FORMAT",
    "SPRIO_SCHEMA",
    "SSHARE_SCHEMA",
    "gres_gpus",
    "inventory_from_nodes",
    "parse_sacctmgr_events",
    "parse_scontrol_jobs",
    "parse_scontrol_nodes",
    "parse_sdiag",
    "parse_sprio",
    "parse_sshare",
]

_UTC: Final = pl.Datetime("us", "UTC")
_NULL_TIMES: Final = frozenset({"", "Unknown", "None", "N/A", "(null)", "0"})

#: One row per node, from ``scontrol show nodes``. ``gpus`` counts MIG slices as their fraction
#: of a GPU (METRICS.md); ``gpu_type`` is the one non-MIG GRES type named, else NULL;
#: ``partition`` is the first of ``partitions`` (slurm.conf order); ``state`` is Slurm's
#: ``IDLE+DRAIN`` as printed, ``base_state`` its first word without the ``*`` (not responding)
#: mark, ``state_flags`` the rest (``NOT_RESPONDING`` for ``*``); ``reason_user``/``reason_at``
#: come from the reason's ``[user@time]`` suffix.
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
    "reason_at": _UTC,
    "cpus": pl.Int64(),
    "real_memory_mb": pl.Int64(),
    "gres": pl.String(),
    "cfg_tres": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
    "line_end": pl.Int64(),
}

#: One row per (job, node) of each job that holds GPUs, from the detail lines of ``scontrol show
#: job -d`` (``Nodes=gpu-[001-002] CPU_IDs=0-1 Mem=4000 GRES=gpu:a100:2(IDX:0-1)``): which GPUs
#: of which node the job holds at ``snapshot_at``, to attribute per-GPU telemetry to jobs.
#:
#: ``job_id`` is scontrol's ``JobId``, the job's own number (for an array task too: sacct's
#: ``job_id_raw``, the job's ``SLURM_JOB_ID``, DCGM's ``hpc_job``); an array task also has
#: ``array_job_id``/``array_task_id`` (sacct's ``job_id`` is ``<array_job_id>_<array_task_id>``).
#: ``job_state`` is ``JobState`` as printed (``RUNNING``, ``SUSPENDED``, ``COMPLETING``);
#: ``start_at`` is ``StartTime``. ``node`` is one host of the line's ``Nodes=`` host list.
#: ``gpu_indices`` are the ``IDX`` of the node's GPUs held (sorted; GPU GRES of all types
#: together): positions in the node's GPU device list of gres.conf (``File=/dev/nvidia[0-7]``:
#: ``N`` is ``/dev/nvidiaN``; for a MIG type, its MIG devices), which is NVML's/DCGM's ``gpu``
#: index only where the two orders agree. ``gpu_indices`` is NULL when Slurm printed no index
#: for some of them (``IDX:N/A``, ``CNT:n``). ``gpus`` is the number of GPU devices held on the
#: node (a MIG slice counts as one); ``gpu_type`` the one type named (``a100``, ``1g.10gb``),
#: NULL when untyped or several; ``gres`` the line's ``GRES=`` value as printed.
#: ``snapshot_at`` is when the output was taken (given by the caller; NULL when unknown);
#: ``line_no`` is the line of the ``Nodes=`` entry (of the record, for ``--oneliner`` output).
SCONTROL_JOB_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id": pl.String(),
    "array_job_id": pl.String(),
    "array_task_id": pl.Int64(),
    "job_state": pl.String(),
    "start_at": _UTC,
    "node": pl.String(),
    "gpu_type": pl.String(),
    "gpu_indices": pl.List(pl.Int64()),
    "gpus": pl.Int64(),
    "gres": pl.String(),
    "snapshot_at": _UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: One row per accounting event. ``node`` is NULL for a cluster event (``event`` =
#: ``cluster``: the cluster registered ``tres``; it holds until ``end_at``, NULL = still open) and
#: names the node for a node event (``event`` = ``node``: the node was ``state`` — ``DOWN``,
#: ``DRAIN``, … — from ``start_at`` to ``end_at``). ``gpus`` is the ``gres/gpu`` count of
#: ``tres`` (NULL when the export has no TRES column). ``user_name``/``uid`` come from
#: ``root(0)``.
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "event": pl.String(),
    "node": pl.String(),
    "cluster_nodes": pl.String(),
    "start_at": _UTC,
    "end_at": _UTC,
    "state": pl.String(),
    "state_raw": pl.Int64(),
    "reason": pl.String(),
    "user_name": pl.String(),
    "uid": pl.Int64(),
    "tres": pl.String(),
    "gpus": pl.Float64(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

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
    "snapshot_at": _UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: The ``sprio --format`` the live source asks for (``sprio`` has no ``--parsable2``); the
#: weighted factors (capital letters). Its header names ``PARTITION`` twice (the partition, then
#: its weighted factor), so columns are matched by position against this format.
SPRIO_FORMAT: Final = "%i|%r|%u|%Y|%A|%F|%J|%P|%Q|%N|%T"

#: ``sprio`` format letter → (header it prints, column, type).
_SPRIO_FIELDS: Final[dict[str, tuple[str, str, pl.DataType]]] = {
    "i": ("JOBID", "job_id", pl.String()),
    "r": ("PARTITION", "partition", pl.String()),
    "u": ("USER", "user_name", pl.String()),
    "Y": ("PRIORITY", "priority", pl.Float64()),
    "A": ("AGE", "age", pl.Float64()),
    "B": ("ASSOC", "assoc", pl.Float64()),
    "F": ("FAIRSHARE", "fairshare", pl.Float64()),
    "J": ("JOBSIZE", "job_size", pl.Float64()),
    "P": ("PARTITION", "partition_prio", pl.Float64()),
    "Q": ("QOS", "qos_prio", pl.Float64()),
    "S": ("SITE", "site", pl.Float64()),
    "N": ("NICE", "nice", pl.Float64()),
    "T": ("TRES", "tres", pl.String()),
}

#: One row per pending job (per partition) from ``sprio -o`` :data:`SPRIO_FORMAT`: the job's
#: priority and its weighted factors (priority points). Factors the format did not ask for are
#: NULL.
SPRIO_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    **{name: dtype for _h, name, dtype in _SPRIO_FIELDS.values()},
    "snapshot_at": _UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: One row per ``sdiag`` value. ``section`` is ``general``, ``main_schedule``, ``backfill``,
#: ``rpc_by_type``, ``rpc_by_user`` or ``pending_rpc`` (others: the header, snake-cased);
#: ``key`` is the label snake-cased (``total_backfilled_jobs_since_last_slurm_start``; for RPC
#: lines ``count``/``ave_time``/``total_time``, with the message type or user in ``item`` and its
#: number in ``item_id``). ``value`` is the number (a time's epoch seconds); ``text`` the value as
#: printed. Times are in microseconds where sdiag says so (cycle statistics).
SDIAG_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "sdiag_at": _UTC,
    "data_since": _UTC,
    "section": pl.String(),
    "item": pl.String(),
    "item_id": pl.Int64(),
    "key": pl.String(),
    "value": pl.Float64(),
    "text": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}


# --------------------------------------------------------------------------- shared helpers


@dataclass
class _Out:
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


class _BadValue(ValueError):
    """One field's value cannot be read; the row is rejected with this message."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field_name = field_name
        super().__init__(message)


def _read_text(path: str | Path, text: str | None) -> tuple[str, list[str]]:
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
    return file, text.removeprefix("\ufeff").splitlines()


def _zone(tz: str, file: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise InputFormatError(file, f"unknown IANA time zone {tz!r}") from err


def _time(value: str, zone: ZoneInfo, field_name: str, dst: list[int]) -> dt.datetime | None:
    """A Slurm time: naive ``YYYY-MM-DDTHH:MM:SS`` in ``zone``, or epoch seconds; NULL → None.

    An ambiguous local time (DST fall-back) is read as the earlier instant; a non-existent one
    (spring-forward gap) with the offset before the jump (02:30 → 03:30 daylight time). Both are
    counted in ``dst``.

    Raises:
        _BadValue: neither form.
    """
    value = value.strip()
    if value in _NULL_TIMES:
        return None
    if value.isdigit():
        return dt.datetime.fromtimestamp(int(value), tz=dt.UTC)
    try:
        naive = dt.datetime.fromisoformat(value)
    except ValueError as err:
        raise _BadValue(field_name, f"not a time: {value!r}") from err
    if naive.tzinfo is not None:
        return naive.astimezone(dt.UTC)
    early = naive.replace(tzinfo=zone, fold=0)
    late = naive.replace(tzinfo=zone, fold=1)
    if early.utcoffset() != late.utcoffset():
        dst[0] += 1
    return early.astimezone(dt.UTC)


def _float(value: str, field_name: str) -> float | None:
    value = value.strip()
    if value == "":
        return None
    try:
        return float(value)  # accepts "inf"
    except ValueError as err:
        raise _BadValue(field_name, f"not a number: {value!r}") from err


def _int(value: str, field_name: str) -> int | None:
    value = value.strip()
    if value == "":
        return None
    if not re.fullmatch(r"-?\d+", value):
        raise _BadValue(field_name, f"not an integer: {value!r}")
    return int(value)


def _header_key(name: str) -> str:
    """``Cluster Nodes`` / ``ClusterNodes`` / ``TimeStart`` → ``clusternodes`` / ``timestart``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


# --------------------------------------------------------------------------- scontrol show nodes

# A ``Key=`` token starts where whitespace is followed by a capitalised key; free text (OS,
# Reason: "maint ticket=42 …") keeps its lower-case ``key=value`` words.
_TOKEN_SPLIT: Final = re.compile(r"\s+(?=[A-Z][A-Za-z0-9_/]*=)")
_REASON_SUFFIX: Final = re.compile(r"^(?P<text>.*?)\s*\[(?P<user>[^@\]]*)@(?P<at>[^\]]+)\]$")
_GRES_ITEM: Final = re.compile(
    r"^(?P<name>[^:()]+)(?P<mid>(?::[^:()]+)*?):(?P<count>\d+)(?P<unit>[KMGT]?)(?:\([^)]*\))?$"
)
_GRES_FLAGS: Final = frozenset({"no_consume"})
#: ``scontrol`` state words that mean the node is not usable (besides a ``DOWN`` base state).
_STATE_MARKS: Final = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP",
                       "%": "POWERING_DOWN", "!": "POWER_DOWN", "@": "REBOOT_REQUESTED",
                       "$": "MAINTENANCE", "^": "REBOOT_ISSUED", "-": "PLANNED"}  # fmt: skip


def _split_top(text: str) -> list[str]:
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


def gres_gpus(gres: str | None) -> tuple[float, str | None]:
    """GPUs and GPU type of a node's ``Gres=`` value.

    Each ``gpu[:TYPE]:N[(S:…)]`` item is read as the TRES ``gres/gpu[:TYPE]=N`` and counted by
    :func:`~pipelines.slurm._sacct_values.gpus_from_tres`, so MIG types count their fraction
    (``gpu:3g.40gb:2`` = 6/7) exactly as in sacct's AllocTRES. Other GRES (``mps``, ``shard``)
    and the ``no_consume`` flag are ignored.

    Args:
        gres: e.g. ``"gpu:8"``, ``"gpu:a100:8(S:0-1)"``, ``"(null)"``.

    Returns:
        ``(gpus, gpu_type)``: 0.0 and None when the node has no GPU GRES; the type only when
        exactly one non-MIG type is named.

    Raises:
        ValueError: a GPU item whose count is not a number.
    """
    if gres is None or gres.strip() in ("", "(null)", "N/A"):
        return 0.0, None
    tres: list[str] = []
    types: set[str] = set()
    for item in _split_top(gres):
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
            if not re.match(r"^\d+g\.", mid[0]):
                types.add(mid[0])
        else:
            tres.append(f"gres/gpu={count}")
    if not tres:
        return 0.0, None
    gpus = gpus_from_tres(",".join(tres)) or 0.0
    return gpus, next(iter(types)) if len(types) == 1 else None


def _records(lines: Sequence[str], head: str) -> Iterable[tuple[int, int, list[str]]]:
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


def _node_tokens(record: list[str]) -> dict[str, str]:
    tokens: dict[str, str] = {}
    for line in record:
        for token in _TOKEN_SPLIT.split(line.strip()):
            key, sep, value = token.partition("=")
            if sep and key not in tokens:
                tokens[key] = value.strip()
    return tokens


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
    path: str | Path, *, cluster: str = "default", tz: str = "UTC", text: str | None = None
) -> ParseResult:
    """Read ``scontrol --oneliner show nodes`` (or its multi-line form) into the node inventory.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster the nodes belong to (scontrol does not print it).
        tz: IANA zone of naive times (the reason's ``[user@time]``).
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`NODE_SCHEMA`; a record without ``NodeName``, or with an unreadable
        ``Gres``/``CPUTot``/``RealMemory``/reason time, is rejected. ``info`` has ``nodes``.

    Raises:
        InputFormatError: the file cannot be read, or holds no node record at all while not empty.
    """
    file, lines = _read_text(path, text)
    zone = _zone(tz, file)
    out = _Out(file)
    dst = [0]
    records = list(_records(lines, "NodeName="))
    if records and not any(rec[0].startswith("NodeName=") for _f, _l, rec in records):
        raise InputFormatError(file, "no 'NodeName=' record: not `scontrol show nodes` output")
    for first, last, record in records:
        raw = "\n".join(record)
        if not record[0].startswith("NodeName="):
            out.reject(first, raw, "line outside a NodeName= record", line_end=last)
            continue
        tokens = _node_tokens(record)
        try:
            out.rows.append(_node_row(tokens, cluster, zone, dst, file, first, last))
        except _BadValue as err:
            out.reject(first, raw, str(err), field_name=err.field_name, line_end=last)
    return out.result(NODE_SCHEMA, {"nodes": len(out.rows), "dst_adjusted": dst[0]})


def _node_row(
    tokens: dict[str, str], cluster: str, zone: ZoneInfo, dst: list[int], file: str,
    first: int, last: int,
) -> dict[str, Any]:  # fmt: skip
    host = tokens.get("NodeName", "")
    if not host:
        raise _BadValue("NodeName", "empty NodeName")
    try:
        gpus, gpu_type = gres_gpus(tokens.get("Gres"))
    except ValueError as err:
        raise _BadValue("Gres", str(err)) from err
    cfg_tres = tokens.get("CfgTRES") or None
    if gpus == 0.0 and cfg_tres:
        # a GPU node whose Gres line is empty still registers its GPUs as TRES
        gpus = gpus_from_tres(cfg_tres) or 0.0
    partitions = [p for p in tokens.get("Partitions", "").split(",") if p and p != "(null)"]
    state = tokens.get("State", "")
    base, flags = _state_parts(state)
    reason = tokens.get("Reason") or None
    reason_user = reason_at = None
    if reason:
        m = _REASON_SUFFIX.match(reason)
        if m:
            reason, reason_user = m.group("text"), m.group("user") or None
            reason_at = _time(m.group("at"), zone, "Reason", dst)
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
        "cpus": _int(tokens.get("CPUTot", ""), "CPUTot"),
        "real_memory_mb": _int(tokens.get("RealMemory", ""), "RealMemory"),
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


# --------------------------------------------------------------------------- scontrol show job -d

#: What scontrol prints when slurmctld holds no job at all.
_NO_JOBS: Final = "No jobs in the system"
#: Keys of a ``Nodes=`` detail entry (``Nodes=… CPU_IDs=… Mem=… GRES=…``).
_DETAIL_KEYS: Final = frozenset({"CPU_IDs", "Mem", "GRES"})
_GRES_DETAIL: Final = re.compile(r"^(?P<head>[^()]+?)(?:\((?P<kind>IDX|CNT):(?P<spec>[^()]*)\))?$")
#: Bound on a GRES device index (a garbled ``IDX:0-99999999`` must not build a huge list).
_MAX_GPU_INDEX: Final = 1 << 16


@dataclass
class _Detail:
    """One ``Nodes=`` entry of a job record: its host list, values, and the line it is on."""

    nodes: str
    line_no: int
    values: dict[str, str] = field(default_factory=dict)


def _job_tokens(record: Sequence[str], first: int) -> tuple[dict[str, str], list[_Detail]]:
    """The record's ``Key=value`` tokens (first occurrence wins) and its ``Nodes=`` entries.

    An entry takes the ``CPU_IDs``/``Mem``/``GRES`` tokens that follow its ``Nodes=`` token; any
    other key ends it (in ``--oneliner`` output the entries sit between the job's own keys).
    """
    tokens: dict[str, str] = {}
    details: list[_Detail] = []
    current: _Detail | None = None
    for offset, line in enumerate(record):
        for token in _TOKEN_SPLIT.split(line.strip()):
            key, sep, value = token.partition("=")
            if not sep:
                continue
            value = value.strip()
            if key == "Nodes":
                current = _Detail(value, first + offset)
                details.append(current)
            elif current is not None and key in _DETAIL_KEYS and key not in current.values:
                current.values[key] = value
            else:
                current = None
                tokens.setdefault(key, value)
    return tokens, details


def _idx_list(spec: str, item: str) -> list[int]:
    """``0-1,3`` → ``[0, 1, 3]``.

    Raises:
        _BadValue: not a list of indices and ``a-b`` ranges (low ≤ high < 65536).
    """
    out: list[int] = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        low = int(m.group(1)) if m else 0
        high = int(m.group(2)) if m and m.group(2) is not None else low
        if m is None or high < low or high >= _MAX_GPU_INDEX:
            raise _BadValue("GRES", f"bad GPU index list {spec!r} in {item!r}")
        out.extend(range(low, high + 1))
    return out


def _gres_gpu_items(gres: str) -> list[tuple[str | None, int, list[int] | None]]:
    """``(type, count, indices)`` of each GPU item of a job's per-node ``GRES=`` value.

    Items are ``gpu[:TYPE][:COUNT](IDX:0-1,3)``, ``gpu[:TYPE](CNT:COUNT)`` or a bare
    ``gpu[:TYPE]:COUNT``; indices are None when Slurm printed none (``IDX:N/A``, ``CNT:``, bare).
    Other GRES (``mps``, ``shard``, …) are left out.

    Raises:
        _BadValue: a GPU item without a count or indices, with an unreadable index list, or
            whose count is not its number of indices.
    """
    items: list[tuple[str | None, int, list[int] | None]] = []
    for item in _split_top(gres):
        if re.split(r"[:(]", item, maxsplit=1)[0] != "gpu":
            continue
        m = _GRES_DETAIL.match(item)
        if m is None:
            raise _BadValue("GRES", f"unreadable GPU GRES item {item!r}")
        _name, *parts = m.group("head").split(":")
        count = int(parts.pop()) if parts and parts[-1].isdigit() else None
        gpu_type = ":".join(parts) or None
        kind, spec = m.group("kind"), (m.group("spec") or "").strip()
        indices: list[int] | None = None
        if kind == "IDX" and spec not in ("", "N/A"):
            indices = _idx_list(spec, item)
        elif kind == "CNT":
            if not spec.isdigit() or (count is not None and count != int(spec)):
                raise _BadValue("GRES", f"bad GPU count in {item!r}")
            count = int(spec)
        if count is None:
            if indices is None:
                raise _BadValue("GRES", f"GPU item without a count or indices: {item!r}")
            count = len(indices)
        elif indices is not None and len(set(indices)) != count:
            raise _BadValue(
                "GRES", f"{item!r} counts {count} GPUs but lists {len(set(indices))} indices"
            )
        items.append((gpu_type, count, indices))
    return items


def _node_gpus(gres: str) -> tuple[int, str | None, list[int] | None]:
    """``(gpus, gpu_type, indices)`` a job holds on one node, from its ``GRES=`` value.

    Raises:
        _BadValue: a GPU item cannot be read (:func:`_gres_gpu_items`).
    """
    items = _gres_gpu_items(gres)
    gpus = sum(count for _t, count, _i in items)
    types = {gpu_type for gpu_type, _c, _i in items}
    indices: list[int] | None = []
    for _t, _c, idx in items:
        if idx is None or indices is None:
            indices = None
        else:
            indices.extend(idx)
    return (
        gpus,
        next(iter(types)) if len(types) == 1 else None,
        sorted(set(indices)) if indices is not None else None,
    )


def _job_id(value: str | None, field_name: str) -> str | None:
    """A job number as printed (``123``); None when absent.

    Raises:
        _BadValue: not a number.
    """
    if value is None or value in ("", "(null)", "N/A"):
        return None
    if not value.isdigit():
        raise _BadValue(field_name, f"not a job id: {value!r}")
    return value


def _job_rows(
    tokens: dict[str, str], details: list[_Detail], cluster: str, zone: ZoneInfo, dst: list[int],
    snap: dt.datetime | None, file: str,
) -> list[dict[str, Any]]:  # fmt: skip
    """The (job, node) rows of one job record; none when the job holds no GPU.

    Raises:
        _BadValue: see :func:`parse_scontrol_jobs` (what rejects a record).
    """
    job_id = _job_id(tokens.get("JobId"), "JobId")
    if job_id is None:
        raise _BadValue("JobId", "empty JobId")
    per_node: list[tuple[_Detail, str, int, str | None, list[int] | None]] = []
    seen: set[str] = set()
    for detail in details:
        gres = detail.values.get("GRES", "")
        gpus, gpu_type, indices = _node_gpus(gres)
        if gpus == 0:
            continue
        try:
            hosts = expand_nodelist(detail.nodes)
        except ValueError as err:
            raise _BadValue("Nodes", f"bad host list {detail.nodes!r}: {err}") from err
        if not hosts:
            raise _BadValue("Nodes", f"no host in Nodes={detail.nodes!r}")
        for host in hosts:
            if host in seen:
                raise _BadValue("Nodes", f"host {host} is listed twice")
            seen.add(host)
            per_node.append((detail, host, gpus, gpu_type, indices))
    if not per_node:
        return []
    array_job_id = _job_id(tokens.get("ArrayJobId"), "ArrayJobId")
    task = tokens.get("ArrayTaskId")
    array_task_id = _int(task, "ArrayTaskId") if task not in (None, "N/A") else None
    start = _time(tokens.get("StartTime", ""), zone, "StartTime", dst)
    return [
        {
            "cluster": cluster,
            "job_id": job_id,
            "array_job_id": array_job_id,
            "array_task_id": array_task_id,
            "job_state": tokens.get("JobState") or None,
            "start_at": start,
            "node": host,
            "gpu_type": gpu_type,
            "gpu_indices": indices,
            "gpus": gpus,
            "gres": detail.values.get("GRES") or None,
            "snapshot_at": snap,
            "file": file,
            "line_no": detail.line_no,
        }
        for detail, host, gpus, gpu_type, indices in per_node
    ]


def parse_scontrol_jobs(
    path: str | Path,
    *,
    cluster: str = "default",
    tz: str = "UTC",
    text: str | None = None,
    snapshot_at: dt.datetime | None = None,
) -> ParseResult:
    """Read ``scontrol show job -d`` (``--oneliner`` or multi-line) into per-node GPU indices.

    Only the ``--details`` output has the ``Nodes=… CPU_IDs=… Mem=… GRES=gpu:2(IDX:0-1)``
    entries this reads: one per group of nodes on which the job holds the same CPUs, memory and
    GRES (``Nodes=gpu-[001-002]`` gives two rows). Jobs that hold no GPU — pending, ended
    (their entries keep ``GRES=`` empty until slurmctld forgets them), CPU-only — give no row.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster the jobs belong to (scontrol does not print it).
        tz: IANA zone of naive times (``StartTime``); epoch seconds
            (``SLURM_TIME_FORMAT=%s``) need none.
        text: the output itself, instead of reading ``path``.
        snapshot_at: when the output was taken (aware); stored on every row.

    Returns:
        Rows with :data:`SCONTROL_JOB_SCHEMA`, in the order of the output. A record is rejected
        whole (raw text, line span) when its ``JobId`` is not a number, or, for a job holding
        GPUs, a ``GRES=`` GPU item cannot be read (no count nor index, a bad index list, a count
        that is not the number of indices), a ``Nodes=`` host list cannot be expanded or names a
        host twice, or ``ArrayJobId``/``ArrayTaskId``/``StartTime`` are unreadable; a line outside
        a ``JobId=`` record is rejected too. ``info`` has ``jobs`` (records read), ``gpu_jobs``
        (records with rows) and ``dst_adjusted``.

    Raises:
        InputFormatError: the file cannot be read, ``tz`` is unknown, or the file holds neither
            a ``JobId=`` record nor scontrol's "No jobs in the system" while not empty.
    """
    file, lines = _read_text(path, text)
    zone = _zone(tz, file)
    out = _Out(file)
    snap = snapshot_at.astimezone(dt.UTC) if snapshot_at else None
    dst = [0]
    records = [
        (first, last, record)
        for first, last, record in _records(lines, "JobId=")
        if not (len(record) == 1 and record[0].strip() == _NO_JOBS)
    ]
    if records and not any(rec[0].startswith("JobId=") for _f, _l, rec in records):
        raise InputFormatError(file, "no 'JobId=' record: not `scontrol show job` output")
    jobs = gpu_jobs = 0
    for first, last, record in records:
        raw = "\n".join(record)
        if not record[0].startswith("JobId="):
            out.reject(first, raw, "line outside a JobId= record", line_end=last)
            continue
        jobs += 1
        tokens, details = _job_tokens(record, first)
        try:
            rows = _job_rows(tokens, details, cluster, zone, dst, snap, file)
        except _BadValue as err:
            out.reject(first, raw, str(err), field_name=err.field_name, line_end=last)
            continue
        gpu_jobs += bool(rows)
        out.rows.extend(rows)
    info: dict[str, object] = {"jobs": jobs, "gpu_jobs": gpu_jobs, "dst_adjusted": dst[0]}
    return out.result(SCONTROL_JOB_SCHEMA, info)


# --------------------------------------------------------------------------- sacctmgr show event

_EVENT_COLUMNS: Final = {
    "cluster": "cluster", "clusternodes": "cluster_nodes", "nodename": "node",
    "timestart": "start", "start": "start", "timeend": "end", "end": "end",
    "state": "state", "stateraw": "state_raw", "event": "event", "reason": "reason",
    "user": "user", "tres": "tres",
}  # fmt: skip
_USER_UID: Final = re.compile(r"^(?P<name>.*?)\((?P<uid>\d+)\)$")


def _split_psv(line: str, n: int) -> list[str] | None:
    """Split a ``--parsable2`` line; a trailing ``|`` (``--parsable``) is tolerated."""
    parts = line.split("|")
    if len(parts) == n + 1 and parts[-1] == "":
        parts = parts[:-1]
    return parts if len(parts) == n else None


def _psv_names(header: str) -> list[str]:
    """The column names of a ``--parsable2`` header line (a trailing ``|`` is tolerated)."""
    names = header.split("|")
    if names and names[-1] == "":
        names = names[:-1]
    return names


def _psv_line(
    out: _Out,
    no: int,
    line: str,
    keys: Sequence[str | None],
    build: Callable[[dict[str, str]], dict[str, Any]],
    *,
    width_reason: str | None = None,
) -> None:
    """Add the row ``build`` makes of one ``--parsable2`` data line to ``out``, or reject it.

    ``keys`` names each column (None: not read). A line with another number of fields is
    rejected (``width_reason``, else the counts), as is one ``build`` raises :class:`_BadValue`
    for.
    """
    parts = _split_psv(line, len(keys))
    if parts is None:
        out.reject(
            no, line, width_reason or f"{len(line.split('|'))} fields, header has {len(keys)}"
        )
        return
    values = {k: v for k, v in zip(keys, parts, strict=True) if k is not None}
    try:
        out.rows.append(build(values))
    except _BadValue as err:
        out.reject(no, line, str(err), field_name=err.field_name)


def parse_sacctmgr_events(
    path: str | Path,
    *,
    cluster: str | None = None,
    tz: str = "UTC",
    text: str | None = None,
) -> ParseResult:
    """Read ``sacctmgr --parsable2 show event`` into cluster and node events.

    The header names the columns (``Cluster|Cluster Nodes|NodeName|TimeStart|TimeEnd|State|…``;
    ``format=`` may pick any of them, in any order); ``TimeStart`` is required. Without a
    ``TRES`` column ``gpus`` is NULL (the default format has none: ask for ``format=…,TRES``).

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: cluster for rows without a ``Cluster`` column.
        tz: IANA zone of naive times (the client's ``TZ``).
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`EVENT_SCHEMA`; rows with the wrong field count, an unreadable time or
        an end before the start are rejected.

    Raises:
        InputFormatError: the file cannot be read, or its first line is not an event header.
    """
    file, lines = _read_text(path, text)
    zone = _zone(tz, file)
    out = _Out(file)
    dst = [0]
    if not lines or not lines[0].strip():
        return out.result(EVENT_SCHEMA, {"fields": []})
    names = _psv_names(lines[0])
    keys = [_EVENT_COLUMNS.get(_header_key(n)) for n in names]
    if "start" not in keys:
        raise InputFormatError(
            file, "header has no TimeStart: not `sacctmgr -P show event` output", line=1
        )
    for no, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        build = partial(_event_row, cluster=cluster, zone=zone, dst=dst, file=file, no=no)
        _psv_line(out, no, line, keys, build)
    return out.result(EVENT_SCHEMA, {"fields": names, "dst_adjusted": dst[0]})


def _event_row(
    values: dict[str, str], cluster: str | None, zone: ZoneInfo, dst: list[int], file: str, no: int
) -> dict[str, Any]:
    node = values.get("node", "").strip() or None
    kind = values.get("event", "").strip().lower() or ("node" if node else "cluster")
    start = _time(values["start"], zone, "TimeStart", dst)
    if start is None:
        raise _BadValue("TimeStart", f"no start time: {values['start']!r}")
    end = _time(values.get("end", ""), zone, "TimeEnd", dst)
    if end is not None and end < start:
        raise _BadValue("TimeEnd", f"end {values['end']!r} before start {values['start']!r}")
    user = values.get("user", "").strip()
    m = _USER_UID.match(user)
    tres = values.get("tres", "").strip() or None
    return {
        "cluster": values.get("cluster", "").strip() or cluster,
        "event": kind,
        "node": node,
        "cluster_nodes": values.get("cluster_nodes", "").strip() or None,
        "start_at": start,
        "end_at": end,
        "state": values.get("state", "").strip() or None,
        "state_raw": _int(values.get("state_raw", ""), "StateRaw"),
        "reason": values.get("reason", "").strip() or None,
        "user_name": (m.group("name") if m else user) or None,
        "uid": int(m.group("uid")) if m else None,
        "tres": tres,
        "gpus": gpus_from_tres(tres) if "tres" in values else None,
        "file": file,
        "line_no": no,
    }


# --------------------------------------------------------------------------- sshare

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
    file, lines = _read_text(path, text)
    out = _Out(file)
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
            keys = [_SSHARE_COLUMNS.get(_header_key(n)) for n in names]
            continue
        if line.startswith("Account|"):
            continue  # the header again (one per cluster with -M)
        build = partial(_sshare_row, cluster=current, snap=snap, file=file, no=no)
        _psv_line(out, no, line, keys, build)
    return out.result(SSHARE_SCHEMA, {"fields": names or []})


def _sshare_row(
    values: dict[str, str], cluster: str, snap: dt.datetime | None, file: str, no: int
) -> dict[str, Any]:
    account_raw = values.get("account", "")
    account = account_raw.strip()
    if not account:
        raise _BadValue("Account", "empty Account")
    raw_shares = values.get("raw_shares", "").strip()
    return {
        "cluster": values.get("cluster", "").strip() or cluster,
        "account": account,
        "user_name": values.get("user", "").strip() or None,
        "depth": len(account_raw) - len(account_raw.lstrip(" ")),
        "raw_shares": None if raw_shares == "parent" else _int(raw_shares, "RawShares"),
        "norm_shares": _float(values.get("norm_shares", ""), "NormShares"),
        "raw_usage": _float(values.get("raw_usage", ""), "RawUsage"),
        "norm_usage": _float(values.get("norm_usage", ""), "NormUsage"),
        "effective_usage": _float(values.get("effective_usage", ""), "EffectvUsage"),
        "fair_share": _float(values.get("fair_share", ""), "FairShare"),
        "level_fs": _float(values.get("level_fs", ""), "LevelFS"),
        "grp_tres_mins": values.get("grp_tres_mins", "").strip() or None,
        "tres_run_mins": values.get("tres_run_mins", "").strip() or None,
        "snapshot_at": snap,
        "file": file,
        "line_no": no,
    }


# --------------------------------------------------------------------------- sprio


def _sprio_fields(fmt: str) -> list[tuple[str, str, pl.DataType]]:
    letters = [part.strip() for part in fmt.split("|")]
    fields = []
    for letter in letters:
        m = re.fullmatch(r"%\.?\d*([A-Za-z])", letter)
        if m is None or m.group(1) not in _SPRIO_FIELDS:
            raise ValueError(f"sprio format item {letter!r} is not one of {sorted(_SPRIO_FIELDS)}")
        fields.append(_SPRIO_FIELDS[m.group(1)])
    return fields


def parse_sprio(
    path: str | Path,
    *,
    cluster: str = "default",
    fmt: str = SPRIO_FORMAT,
    snapshot_at: dt.datetime | None = None,
    text: str | None = None,
) -> ParseResult:
    """Read ``sprio --format=<fmt>`` output (``|``-separated) into pending jobs' priority factors.

    Columns are taken by position from ``fmt`` (sprio's headers repeat ``PARTITION`` and
    ``PRIORITY``); the header line, when present, must be the one ``fmt`` prints.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster the jobs belong to.
        fmt: the ``--format`` string used, items among ``%i %r %u %Y %A %B %F %J %P %Q %S %N %T``
            (also ``%.15i``-style widths).
        snapshot_at: when the output was taken (aware); stored on every row.
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`SPRIO_SCHEMA`; rows with the wrong field count or a non-numeric factor
        are rejected. No pending jobs: the header alone, no rows.

    Raises:
        InputFormatError: the file cannot be read, or its header is not the one of ``fmt``.
        ValueError: ``fmt`` has an item this parser does not know.
    """
    fields = _sprio_fields(fmt)
    file, lines = _read_text(path, text)
    out = _Out(file)
    snap = snapshot_at.astimezone(dt.UTC) if snapshot_at else None
    header = [h for h, _n, _t in fields]
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = _split_psv(line, len(fields))
        if no == 1 and not line.strip()[:1].isdigit():
            if parts is None or [p.strip() for p in parts] != header:
                raise InputFormatError(
                    file, f"header {line!r} is not sprio's for format {fmt!r}", line=1
                )
            continue
        if parts is None:
            out.reject(no, line, f"{len(line.split('|'))} fields, format has {len(fields)}")
            continue
        row: dict[str, Any] = dict.fromkeys(SPRIO_SCHEMA)
        row.update(cluster=cluster, snapshot_at=snap, file=file, line_no=no)
        try:
            for (head, name, dtype), value in zip(fields, parts, strict=True):
                number = dtype == pl.Float64()
                row[name] = _float(value, head) if number else value.strip() or None
        except _BadValue as err:
            out.reject(no, line, str(err), field_name=err.field_name)
            continue
        out.rows.append(row)
    return out.result(SPRIO_SCHEMA, {"format": fmt})


# --------------------------------------------------------------------------- sdiag

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
    file, lines = _read_text(path, text)
    out = _Out(file)
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
