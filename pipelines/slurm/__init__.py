"""Slurm inputs: ``sacct`` accounting and the cluster state (nodes, TRES events, shares,
priorities, scheduler statistics, reservations), parsed without Dagster.

:data:`KINDS` is this package's rows of the input-kind registry (:mod:`pipelines.kinds`); the
Dagster edge (file and live twins) is :mod:`pipelines.slurm.resources`.

The parsers are private modules, one per command: ``_sacct_parse`` (``sacct``, with
``_sacct_layout``, ``_sacct_fields``, ``_sacct_values`` and ``_sacct_json``), ``_scontrol_nodes``
(``scontrol show nodes``), ``_scontrol_jobs`` (``scontrol show job -d``: the GPU index map),
``_sacctmgr_events`` (``sacctmgr show event``), ``_sshare``, ``_sprio``, ``_sdiag``,
``_reservations`` (``scontrol``/``sacctmgr show reservation``), ``_sacctmgr_transactions``
(``sacctmgr list transactions``), ``_sacctmgr_tres`` (``sacctmgr show tres``),
``_scontrol_config`` (``scontrol show config``), ``_scontrol_node_comments`` (polled
``scontrol show nodes``: each node's ``Comment``, the pod slurm-operator runs it in),
``_topology_conf``, ``_topology_yaml`` and ``_scontrol_topology``
(``topology.conf``/``topology.yaml``/``scontrol show topology``, input kind ``topology``),
``_squeue`` (polled ``squeue``, input kind ``slurm-squeue``); the cluster-state parsers share
the Slurm text helpers of ``_text``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from pipelines._parse_result import ParseResult
from pipelines.kinds import IngestOptions, InputKind, RawSource, route_by_prefix
from pipelines.slurm import _reservations as rs
from pipelines.slurm._sacct_fields import canonical_field
from pipelines.slurm._sacct_parse import SLURM_ROW_SCHEMA, iter_parse_sacct, parse_sacct
from pipelines.slurm._sacctmgr_events import EVENT_SCHEMA, parse_sacctmgr_events
from pipelines.slurm._sacctmgr_transactions import (
    TRANSACTION_SCHEMA,
    parse_sacctmgr_transactions,
)
from pipelines.slurm._sacctmgr_tres import TRES_SCHEMA, parse_sacctmgr_tres
from pipelines.slurm._scontrol_config import CONFIG_SCHEMA, parse_scontrol_config
from pipelines.slurm._scontrol_jobs import SCONTROL_JOB_SCHEMA, parse_scontrol_jobs
from pipelines.slurm._scontrol_node_comments import NODE_COMMENT_SCHEMA, parse_node_comments
from pipelines.slurm._scontrol_nodes import NODE_SCHEMA, gres_gpus, parse_scontrol_nodes
from pipelines.slurm._scontrol_topology import parse_scontrol_topology
from pipelines.slurm._sdiag import SDIAG_SCHEMA, parse_sdiag
from pipelines.slurm._sprio import SPRIO_SCHEMA, parse_sprio
from pipelines.slurm._squeue import SQUEUE_SCHEMA, parse_squeue
from pipelines.slurm._sshare import SSHARE_SCHEMA, parse_sshare
from pipelines.slurm._topology_conf import TOPOLOGY_SCHEMA, parse_topology_conf
from pipelines.slurm._topology_yaml import parse_topology_yaml

__all__ = [
    "KINDS",
    "SACCT",
    "SACCT_CHUNK_BYTES",
    "SLURM_STATE",
    "SQUEUE",
    "STATE_PREFIXES",
    "TOPOLOGY",
    "gres_gpus",
    "job_view_gaps",
    "topology_config",
]


def topology_config(folder: Path) -> dict[str, Any] | None:
    """The topology configuration in force from the latest ``topology*.conf`` or
    ``topology*.yaml``/``.yml`` in ``folder`` (by file name, so dated names order by day):
    ``form`` (``tree`` | ``block`` | ``flat``), ``block_sizes`` (node counts, None when not
    given) and ``file``; None when the folder holds none.

    A ``topology.yaml`` (Slurm 25.05+, topology.yaml(5)) may list several topologies; the one
    in force for jobs that name none is its ``cluster_default: true`` topology, else its first
    (:func:`parse_topology_yaml`'s ``info``)."""
    suffixes = {".conf", ".yaml", ".yml"}
    found = (
        sorted(p for p in folder.glob("topology*") if p.suffix.lower() in suffixes)
        if folder.is_dir()
        else []
    )
    if not found:
        return None
    latest = found[-1]
    if latest.suffix.lower() == ".conf":
        info = parse_topology_conf(latest).info
        return {"form": info.get("form"), "block_sizes": info.get("block_sizes"),
                "file": latest.name}  # fmt: skip
    info = parse_topology_yaml(latest).info
    kinds = cast("dict[str, str]", info.get("topologies") or {})
    name = cast("str | None", info.get("default")) or next(iter(kinds), "")
    sizes = cast("dict[str, list[int]]", info.get("block_sizes") or {}).get(name)
    return {"form": kinds.get(name), "block_sizes": sizes, "file": latest.name}


#: Bytes of a sacct text file parsed at a time (bounds the ingest's memory).
SACCT_CHUNK_BYTES = 64 << 20

#: ``slurm-state`` files (``<cluster>/slurm_state/<kind>_<day>.*``, as the live state source
#: spools them) by name prefix → the raw source they load into.
STATE_PREFIXES = {"events": "slurm-events", "nodes": "slurm-nodes", "sshare": "sshare",
                  "jobs": "slurm-jobs-gres", "reservation_history": "slurm-reservations",
                  "reservations": "slurm-reservations", "sprio": "slurm-sprio",
                  "sdiag": "slurm-sdiag", "transactions": "slurm-transactions",
                  "tres": "slurm-tres", "scontrol_config": "slurm-config",
                  "node_comments": "slurm-node-comments"}  # fmt: skip


#: sacct fields the job views need (canonical, lower case), each with any field that stands in
#: for it and what stays empty or wrong without it.
_JOB_VIEW_FIELDS = (
    (("start",), "no allocation starts: jobs, occupancy, the waterfall, fairness and "
     "reliability stay empty"),
    (("eligible", "planned", "reserved"), "no wait can be measured without Eligible or Planned "
     "(Reserved before Slurm 23.02; Submit alone gives none): time to start and pending demand "
     "stay empty"),
    (("end",), "every started job reads as still running up to the data cut-off"),
    (("alloctres", "allocgres", "reqtres", "reqgres"), "no GPU counts: every job counts 0 GPUs "
     "in occupancy, the waterfall and fairness"),
)  # fmt: skip


def job_view_gaps(fields: list[str] | None) -> list[str]:
    """What a sacct file's fields leave out of the job views, one sentence per missing field.

    Args:
        fields: the file's field names as parsed (``info["fields"]``: header or ``fields``).

    Returns:
        ``"missing Start: no allocation starts: …"`` sentences, empty when every field the
        views need (Start, Eligible or Planned/Reserved, End, AllocTRES or a stand-in) is
        present (Submit is no stand-in for Eligible: Submit alone measures no wait). sacct's
        default field set (JobID, JobName, Partition, Account, AllocCPUS, State, ExitCode)
        misses all four.
    """
    have = {canonical_field(f) for f in fields or []}
    out = []
    for names, what in _JOB_VIEW_FIELDS:
        if not have & set(names):
            label = " or ".join(n.capitalize() for n in names).replace("tres", "TRES")
            out.append(f"missing {label.replace('gres', 'GRES')}: {what}")
    return out


def _with_gaps(result: ParseResult) -> ParseResult:
    if result.info.get("format") != "json":
        fields = result.info.get("fields")
        names = [str(f) for f in fields] if isinstance(fields, list) else None
        result.info["warnings"] = job_view_gaps(names)
    return result


def _sacct(path: Path, o: IngestOptions) -> ParseResult:
    return _with_gaps(
        parse_sacct(path, fields=o.fields, delimiter=o.delimiter, cluster=o.cluster, tz=o.tz)
    )


def _sacct_blocks(path: Path, o: IngestOptions) -> Iterator[ParseResult]:
    blocks = iter_parse_sacct(
        path, fields=o.fields, delimiter=o.delimiter, cluster=o.cluster, tz=o.tz,
        chunk_bytes=SACCT_CHUNK_BYTES,
    )  # fmt: skip
    return (_with_gaps(b) for b in blocks)


def _scontrol_config(path: Path, o: IngestOptions) -> ParseResult:
    # Output without its `Configuration data as of` line is dated by the file's modification
    # time (when it was spooled).
    return parse_scontrol_config(path, cluster=o.cluster, tz=o.tz, snapshot_at=_mtime(path))


def _scontrol_jobs(path: Path, o: IngestOptions) -> ParseResult:
    # ``scontrol show job -d`` prints no time of its own: a snapshot is dated by the file's
    # modification time (when it was spooled), as a Kueue object dump is, so that the latest
    # snapshot of a job's GPU indices on a node wins (metrics.attribution.gres_holdings).
    return parse_scontrol_jobs(path, cluster=o.cluster, tz=o.tz, snapshot_at=_mtime(path))


def _scontrol_nodes(path: Path, o: IngestOptions) -> ParseResult:
    # ``scontrol show node`` prints no time of its own either: dated by the file's modification
    # time, kept within the UTC day its name carries (a down or drained node's snapshots give
    # its down time on clusters without sacctmgr node events,
    # pipelines.core.node_states.snapshot_node_events).
    return parse_scontrol_nodes(
        path, cluster=o.cluster, tz=o.tz, snapshot_at=snapshot_time(path, _mtime(path))
    )


def snapshot_time(path: Path, mtime: dt.datetime | None) -> dt.datetime | None:
    """When a spooled state listing was taken: its modification time ``mtime``, clamped into
    the UTC day its name carries (``nodes_2024-10-08.txt``: [2024-10-08 00:00, 2024-10-09
    00:00] UTC, as the collector names days; METRICS.md "Node states").

    A copy made without keeping the time (``cp``, ``scp``, an object store) moves the
    modification time; clamped, such a snapshot is off by at most its day, and two days' files
    keep their order whatever order they were copied in. (A later rewrite of the day's file
    holds the state at the rewrite: dated within the day, not mended.) A name without a day
    keeps ``mtime`` as it is; None stays None.
    """
    from pipelines.ingest import file_day  # here: pipelines.ingest imports this module's kinds

    day = file_day(path)
    if mtime is None or day is None:
        return mtime
    try:
        start = dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)
    except ValueError:  # 2024-02-31: a name that only looks like a day
        return mtime
    return min(max(mtime, start), start + dt.timedelta(days=1))


def _mtime(path: Path) -> dt.datetime | None:
    """The file's modification time (aware, UTC); None for a path that is not there."""
    return dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC) if path.exists() else None


def _reservations(path: Path, o: IngestOptions) -> ParseResult:
    if path.name.startswith("reservation_history"):
        return rs.parse_sacctmgr_reservations(path, cluster=o.cluster, tz=o.tz)
    return rs.parse_scontrol_reservations(path, cluster=o.cluster, tz=o.tz)


SACCT = InputKind(
    name="sacct",
    sources=(RawSource("sacct", "raw.slurm_rows", SLURM_ROW_SCHEMA, _sacct, freshness="sacct"),),
    folder="sacct",
    globs=("*.psv", "*.txt", "*.log", "*.sacct", "*.json"),
    asset="slurm_rows",
    group="slurm",
    scheduler="slurm",
    source_key="sacct_source",
    description=(
        "One row per sacct line (allocations, steps, pending rows; pending arrays expanded "
        "per task), from `sacct --parsable2` exports, one partition per cluster and day."
    ),
    help="sacct --parsable2 text or sacct --json",
    chunked=_sacct_blocks,
)

SLURM_STATE = InputKind(
    name="slurm-state",
    sources=(
        RawSource(
            "slurm-events",
            "raw.slurm_events",
            EVENT_SCHEMA,
            lambda p, o: parse_sacctmgr_events(p, cluster=o.cluster, tz=o.tz),
            freshness="sacct",
        ),
        RawSource(
            "slurm-nodes",
            "raw.slurm_nodes",
            NODE_SCHEMA,
            _scontrol_nodes,
            freshness="sacct",
            data_time=(),  # reason_at: when a reason was set, not how current the list is
        ),
        RawSource(
            "sshare",
            "raw.sshare",
            SSHARE_SCHEMA,
            lambda p, o: parse_sshare(p, cluster=o.cluster),
            freshness="sacct",
        ),
        RawSource(
            "slurm-jobs-gres",
            "raw.slurm_job_gres",
            SCONTROL_JOB_SCHEMA,
            _scontrol_jobs,
            freshness="sacct",
        ),
        RawSource(
            "slurm-reservations",
            "raw.slurm_reservations",
            rs.RESERVATION_SCHEMA,
            _reservations,
            freshness="sacct",
        ),
        RawSource(
            "slurm-sprio",
            "raw.slurm_sprio",
            SPRIO_SCHEMA,
            lambda p, o: parse_sprio(p, cluster=o.cluster),
            freshness="sacct",
        ),
        RawSource(
            "slurm-sdiag",
            "raw.slurm_sdiag",
            SDIAG_SCHEMA,
            lambda p, o: parse_sdiag(p, cluster=o.cluster),
            freshness="sacct",
        ),
        RawSource(
            "slurm-transactions",
            "raw.slurm_transactions",
            TRANSACTION_SCHEMA,
            lambda p, o: parse_sacctmgr_transactions(p, cluster=o.cluster, tz=o.tz),
            freshness="sacct",
        ),
        RawSource(
            "slurm-tres",
            "raw.slurm_tres",
            TRES_SCHEMA,
            lambda p, o: parse_sacctmgr_tres(p, cluster=o.cluster),
            freshness="sacct",
            data_time=(),  # a TRES list carries no time
        ),
        RawSource(
            "slurm-config",
            "raw.slurm_config",
            CONFIG_SCHEMA,
            _scontrol_config,
            freshness="sacct",
        ),
        RawSource(
            "slurm-node-comments",
            "raw.slurm_node_comments",
            NODE_COMMENT_SCHEMA,
            lambda p, o: parse_node_comments(p, cluster=o.cluster),
            freshness="sacct",
        ),
    ),
    folder="slurm_state",
    globs=tuple(f"{prefix}*" for prefix in STATE_PREFIXES),
    asset="slurm_state",
    group="slurm",
    scheduler="slurm",
    source_key="slurm_state_source",
    description=(
        "Slurm cluster state: `sacctmgr show event` (TRES registrations, node down/drain "
        "intervals) into raw.slurm_events, `scontrol show nodes` into raw.slurm_nodes, "
        "`sshare -a -l -P` into raw.sshare, `sacctmgr -P list transactions` into "
        "raw.slurm_transactions, `sacctmgr -P show tres` into raw.slurm_tres, `scontrol show "
        "config` into raw.slurm_config, polled `scontrol show nodes` (node Comment: the pod a "
        "node runs in) into raw.slurm_node_comments; one partition per cluster and day."
    ),
    help="scontrol/sacctmgr/sshare/sprio/sdiag output, routed by file name",
    route=route_by_prefix(STATE_PREFIXES, "a Slurm state file"),
)


def _topology(path: Path, o: IngestOptions) -> ParseResult:
    if path.suffix.lower() in {".yaml", ".yml"}:
        return parse_topology_yaml(path, cluster=o.cluster)
    if path.suffix.lower() == ".txt":
        return parse_scontrol_topology(path, cluster=o.cluster)
    return parse_topology_conf(path, cluster=o.cluster)


TOPOLOGY = InputKind(
    name="topology",
    sources=(
        RawSource(
            "topology",
            "raw.topology",
            TOPOLOGY_SCHEMA,
            _topology,
            freshness="sacct",
            data_time=(),  # valid_from: when the map took effect, not how current it is
        ),
    ),
    folder="topology",
    globs=("topology*.conf", "topology*.yaml", "topology*.yml", "topology*.txt"),
    asset="topology",
    group="slurm",
    scheduler="slurm",
    source_key="topology_source",
    description=(
        "One row per topology level, domain and node, from Slurm's `topology.conf` "
        "(`topology/tree` switches, `topology/block` blocks), `topology.yaml` or `scontrol show "
        "topology` output (`topology*.txt`), valid from the file's day; one partition per "
        "cluster and day."
    ),
    help="Slurm topology.conf (tree or block form), topology.yaml or scontrol show topology",
)

SQUEUE = InputKind(
    name="slurm-squeue",
    sources=(
        RawSource(
            "slurm-squeue",
            "raw.slurm_squeue",
            SQUEUE_SCHEMA,
            lambda p, o: parse_squeue(p, cluster=o.cluster, tz=o.tz),
            freshness="sacct",
            data_time=("poll_at",),  # expected_start lies in the future
        ),
    ),
    folder="squeue",
    globs=("squeue*",),
    asset="slurm_squeue",
    group="slurm",
    scheduler="slurm",
    source_key="slurm_squeue_source",
    description=(
        "One row per job and `squeue` poll (state, pending reason, SchedNodes, expected start, "
        "ReqSwitch), from the live source's polls (`squeue -O`, one block per poll stamped "
        "with its time), one partition per cluster and day."
    ),
    help="polled squeue -O output (JobID|State|Reason|SchedNodes|StartTime|ReqSwitch|…)",
)

#: This package's input kinds, in registry order.
KINDS: tuple[InputKind, ...] = (SACCT, SLURM_STATE, TOPOLOGY, SQUEUE)
