"""Parse ``scontrol --details --oneliner show job`` (or its multi-line form) into the GPU index map.

:func:`parse_scontrol_jobs` reads one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow :data:`SCONTROL_JOB_SCHEMA`:
which GPU indices of which node each job holds now, to attribute per-GPU telemetry to jobs. A
record that cannot be read goes to ``rejected`` whole, with the reason.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._sacct_values import expand_nodelist
from pipelines.slurm._text import (
    TOKEN_SPLIT,
    UTC,
    BadValue,
    Collected,
    iter_records,
    read_text,
    slurm_time,
    split_top,
    time_zone,
    to_int,
)

__all__ = [
    "SCONTROL_JOB_SCHEMA",
    "parse_scontrol_jobs",
]

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
#: NULL when untyped or several; ``gres`` the line's ``GRES=`` value as printed
#: (``GRES_IDX=``'s before Slurm 19.05: ``gpu(IDX:0,2-3,5)``).
#: ``snapshot_at`` is when the output was taken (given by the caller; NULL when unknown);
#: ``line_no`` is the line of the ``Nodes=`` entry (of the record, for ``--oneliner`` output).
SCONTROL_JOB_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id": pl.String(),
    "array_job_id": pl.String(),
    "array_task_id": pl.Int64(),
    "job_state": pl.String(),
    "start_at": UTC,
    "node": pl.String(),
    "gpu_type": pl.String(),
    "gpu_indices": pl.List(pl.Int64()),
    "gpus": pl.Int64(),
    "gres": pl.String(),
    "snapshot_at": UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}


#: What scontrol prints when slurmctld holds no job at all.
_NO_JOBS: Final = "No jobs in the system"
#: Keys of a ``Nodes=`` detail entry (``Nodes=… CPU_IDs=… Mem=… GRES=…``). Slurm before 19.05
#: printed the GPU indices as ``GRES_IDX=gpu(IDX:0,2-3,5)``, read as its ``GRES=``.
_DETAIL_KEYS: Final = frozenset({"CPU_IDs", "Mem", "GRES", "GRES_IDX"})
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

    An entry takes the ``CPU_IDs``/``Mem``/``GRES`` tokens that follow its ``Nodes=`` token
    (``GRES_IDX``, Slurm before 19.05, as its ``GRES``); any other key ends it (in
    ``--oneliner`` output the entries sit between the job's own keys).
    """
    tokens: dict[str, str] = {}
    details: list[_Detail] = []
    current: _Detail | None = None
    for offset, line in enumerate(record):
        for token in TOKEN_SPLIT.split(line.strip()):
            key, sep, value = token.partition("=")
            if not sep:
                continue
            value = value.strip()
            if key == "Nodes":
                current = _Detail(value, first + offset)
                details.append(current)
            elif current is not None and key in _DETAIL_KEYS:
                current.values.setdefault("GRES" if key == "GRES_IDX" else key, value)
            else:
                current = None
                tokens.setdefault(key, value)
    return tokens, details


def _idx_list(spec: str, item: str) -> list[int]:
    """``0-1,3`` → ``[0, 1, 3]``.

    Raises:
        BadValue: not a list of indices and ``a-b`` ranges (low ≤ high < 65536).
    """
    out: list[int] = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        low = int(m.group(1)) if m else 0
        high = int(m.group(2)) if m and m.group(2) is not None else low
        if m is None or high < low or high >= _MAX_GPU_INDEX:
            raise BadValue("GRES", f"bad GPU index list {spec!r} in {item!r}")
        out.extend(range(low, high + 1))
    return out


def _gres_gpu_items(gres: str) -> list[tuple[str | None, int, list[int] | None]]:
    """``(type, count, indices)`` of each GPU item of a job's per-node ``GRES=`` value.

    Items are ``gpu[:TYPE][:COUNT](IDX:0-1,3)``, ``gpu[:TYPE](CNT:COUNT)`` or a bare
    ``gpu[:TYPE]:COUNT``; indices are None when Slurm printed none (``IDX:N/A``, ``CNT:``, bare).
    Other GRES (``mps``, ``shard``, …) are left out (a shard is no GPU index; sacct's AllocTRES
    gives a job's shards, :mod:`pipelines.core.gpu_shards`).

    Raises:
        BadValue: a GPU item without a count or indices, with an unreadable index list, or
            whose count is not its number of indices.
    """
    items: list[tuple[str | None, int, list[int] | None]] = []
    for item in split_top(gres):
        if re.split(r"[:(]", item, maxsplit=1)[0] != "gpu":
            continue
        m = _GRES_DETAIL.match(item)
        if m is None:
            raise BadValue("GRES", f"unreadable GPU GRES item {item!r}")
        _name, *parts = m.group("head").split(":")
        count = int(parts.pop()) if parts and parts[-1].isdigit() else None
        gpu_type = ":".join(parts) or None
        kind, spec = m.group("kind"), (m.group("spec") or "").strip()
        indices: list[int] | None = None
        if kind == "IDX" and spec not in ("", "N/A"):
            indices = _idx_list(spec, item)
        elif kind == "CNT":
            if not spec.isdigit() or (count is not None and count != int(spec)):
                raise BadValue("GRES", f"bad GPU count in {item!r}")
            count = int(spec)
        if count is None:
            if indices is None:
                raise BadValue("GRES", f"GPU item without a count or indices: {item!r}")
            count = len(indices)
        elif indices is not None and len(set(indices)) != count:
            raise BadValue(
                "GRES", f"{item!r} counts {count} GPUs but lists {len(set(indices))} indices"
            )
        items.append((gpu_type, count, indices))
    return items


def _node_gpus(gres: str) -> tuple[int, str | None, list[int] | None]:
    """``(gpus, gpu_type, indices)`` a job holds on one node, from its ``GRES=`` value.

    Raises:
        BadValue: a GPU item cannot be read (:func:`_gres_gpu_items`).
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
        BadValue: not a number.
    """
    if value is None or value in ("", "(null)", "N/A"):
        return None
    if not value.isdigit():
        raise BadValue(field_name, f"not a job id: {value!r}")
    return value


def _job_rows(
    tokens: dict[str, str], details: list[_Detail], cluster: str, zone: ZoneInfo, dst: list[int],
    snap: dt.datetime | None, file: str,
) -> list[dict[str, Any]]:  # fmt: skip
    """The (job, node) rows of one job record; none when the job holds no GPU.

    Raises:
        BadValue: see :func:`parse_scontrol_jobs` (what rejects a record).
    """
    job_id = _job_id(tokens.get("JobId"), "JobId")
    if job_id is None:
        raise BadValue("JobId", "empty JobId")
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
            raise BadValue("Nodes", f"bad host list {detail.nodes!r}: {err}") from err
        if not hosts:
            raise BadValue("Nodes", f"no host in Nodes={detail.nodes!r}")
        for host in hosts:
            if host in seen:
                raise BadValue("Nodes", f"host {host} is listed twice")
            seen.add(host)
            per_node.append((detail, host, gpus, gpu_type, indices))
    if not per_node:
        return []
    array_job_id = _job_id(tokens.get("ArrayJobId"), "ArrayJobId")
    task = tokens.get("ArrayTaskId")
    array_task_id = to_int(task, "ArrayTaskId") if task not in (None, "N/A") else None
    start = slurm_time(tokens.get("StartTime", ""), zone, "StartTime", dst)
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
    entries this reads (before Slurm 19.05 ``GRES_IDX=gpu(IDX:0-1)``, read the same way): one
    per group of nodes on which the job holds the same CPUs, memory and GRES
    (``Nodes=gpu-[001-002]`` gives two rows). Jobs that hold no GPU — pending, ended
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
    file, lines = read_text(path, text)
    zone = time_zone(tz, file)
    out = Collected(file)
    snap = snapshot_at.astimezone(dt.UTC) if snapshot_at else None
    dst = [0]
    records = [
        (first, last, record)
        for first, last, record in iter_records(lines, "JobId=")
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
        except BadValue as err:
            out.reject(first, raw, str(err), field_name=err.field_name, line_end=last)
            continue
        gpu_jobs += bool(rows)
        out.rows.extend(rows)
    info: dict[str, object] = {"jobs": jobs, "gpu_jobs": gpu_jobs, "dst_adjusted": dst[0]}
    return out.result(SCONTROL_JOB_SCHEMA, info)
