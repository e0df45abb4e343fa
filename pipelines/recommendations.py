"""Scheduler-tuning recommendations: read the views, run the rules, write the changes.

``run_recommendations(cfg)`` reads the serving copy (read-only), calls the pure rules of
:mod:`metrics.recommendations`, and writes ``<data>/recommendations/``:

- ``latest.json``: ``{"as_of", "window", "recommendations": [{id, rule, cluster, scope,
  severity, evidence, expected_gain_gpu_h_per_week, expected_wait_reduction_s, confidence,
  change_text, patch: {kind, content} | null}]}``;
- one file per scheduler: ``slurm.conf.patch`` (lines to merge into each cluster's slurm.conf),
  ``sacctmgr.sh`` and ``scontrol.sh`` (commands), ``kueue-patches.yaml`` (merge patches, one
  YAML document each, with the ``kubectl patch`` line above it). Each file holds one merged patch
  per scheduler object (:func:`metrics.recommendations.merge.merge_patches_by_object`: every key
  set once, conflicts resolved by precedence and listed), so the files can be applied in any
  order; each merged patch names the findings it carries and quotes their own patches.

Findings that rest on the same evidence are folded into one first
(:func:`metrics.recommendations.merge.dedupe_findings`). The Slurm settings in force are read
from ``<inputs>/<cluster>/slurm_state/scontrol_config*.txt`` (``scontrol show config``; the
newest file by name) where present.

The files are published artefacts: user names in them are pseudonyms (:mod:`pipelines.privacy`)
unless ``GOODPUT_SHOW_USER_NAMES=1``. Patches address accounts, QOS, partitions and queues; one
that must name a user (a personal account) is written commented out, naming the pseudonym, with
a note that the real name is in the warehouse.

Kueue ClusterQueue and LocalQueue objects are read from ``<inputs>/<cluster>/k8s/
clusterqueues*.json`` / ``localqueues*.json`` (``kubectl get … -o json``; the newest file by
name), because a merge patch of ``resourceGroups`` needs the whole object.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from metrics.holds import HOLD_SCHEMA
from metrics.policy_replay import scheduler_settings
from metrics.recommendations import (
    RECOMMENDATION_SCHEMA,
    Window,
    backfill_tuning,
    cluster_queue_usage_hourly,
    defrag_candidates,
    fairness_drift,
    gang_window,
    idle_allocations,
    kueue_borrowing,
    kueue_quota_drift,
    lemon_nodes,
    preemption_churn,
    reservations_idle,
    segment_sizes,
    slurm_fairshare_drift,
    time_limits,
    topology_levels,
)
from metrics.recommendations.life import recommendation_life, rollback_patch
from metrics.recommendations.merge import (
    MergedPatch,
    annotate_merges,
    companion_rows,
    dedupe_findings,
    merge_patches_by_object,
)
from metrics.recommendations.min_age_reserve import min_age_reserve
from metrics.recommendations.slurm_config import (
    parse_scontrol_config,
    preempt_exempt_s,
    priority_settings,
)
from metrics.scheduler_model import SchedulerSettings
from pipelines._parse_result import REJECTED_SCHEMA, InputFormatError, ParseResult
from pipelines.config import Config
from pipelines.core import load_registry
from pipelines.core.k8s_gpu_units import cluster_gpu_units
from pipelines.core.topology import LABEL_LEVELS
from pipelines.privacy import (
    PSEUDONYM,
    SALT_FILE,
    SHOW_USER_NAMES_ENV,
    Pseudonyms,
    load_salt,
    show_user_names,
    user_names_of,
)
from pipelines.slurm import topology_config
from pipelines.warehouse import (
    UTC_DATETIME,
    connect,
    init_warehouse,
    record_rejected,
    run_named,
    table_exists,
)
from pipelines.warehouse.sql import load_sql

__all__ = [
    "ACTIVITY_METRIC",
    "OUTPUT_FILES",
    "PROPOSAL_HISTORY_GLOB",
    "PROPOSAL_HISTORY_SOURCE",
    "PROPOSAL_SCHEMA",
    "RULES",
    "RecommendationInputs",
    "evidence_user_names",
    "merge_proposals",
    "parse_proposal_history",
    "proposal_history_files",
    "proposal_record",
    "proposals_of",
    "read_inputs",
    "read_proposal_history",
    "recommendations_frame",
    "record_proposal_rejects",
    "run_recommendations",
    "settings_in_force",
    "with_history",
    "with_status",
    "write_outputs",
    "write_proposals",
    "write_recommendations_table",
]

#: The GPU activity signal (METRICS.md), 0–1.
ACTIVITY_METRIC = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"

#: Rule functions by the name their thresholds are configured under (``options[name]``).
RULES: tuple[str, ...] = (
    "idle_allocations",
    "time_limits",
    "backfill_tuning",
    "backfill_min_age_reserve",
    "fairness_drift",
    "slurm_fairshare_drift",
    "kueue_quota_drift",
    "kueue_borrowing",
    "preemption_churn",
    "lemon_nodes",
    "reservations_idle",
    "gang_window",
    "segment_sizes",
    "defrag_candidates",
    "topology_levels",
)

#: Files written by :func:`write_outputs`, by patch kind (``latest.json`` for all).
OUTPUT_FILES: dict[str, str] = {
    "slurm.conf": "slurm.conf.patch",
    "sacctmgr": "sacctmgr.sh",
    "scontrol": "scontrol.sh",
    "kubernetes-merge-patch": "kueue-patches.yaml",
}

log = logging.getLogger(__name__)

_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}

#: The ledger columns the status is matched on (``sql/recommendations/policy_changes.sql``).
_LEDGER: dict[str, pl.DataType] = {
    "change_id": pl.String(), "cluster": pl.String(), "object": pl.String(),
    "key": pl.String(), "old": pl.String(), "new": pl.String(), "changed_at": UTC_DATETIME,
}  # fmt: skip


#: ``analytics.recommendation_proposals``: every recommendation ever proposed, one row per id
#: (sql/README.md): its rule, cluster, scope, patch and text as last proposed, ``proposed_at``
#: the data cut-off of the first run that proposed it, ``last_seen_at`` of the latest.
PROPOSAL_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(), "rule": pl.String(), "cluster": pl.String(), "scope": pl.String(),
    "patch_kind": pl.String(), "patch_content": pl.String(), "change_text": pl.String(),
    "proposed_at": UTC_DATETIME, "last_seen_at": UTC_DATETIME,
}  # fmt: skip

#: Earlier runs' proposal records, under each cluster's input folder: files in the shape of
#: ``latest.json`` (``as_of`` and ``recommendations``), e.g. a copy of an earlier run's.
PROPOSAL_HISTORY_GLOB = "recommendations/*.json"


@dataclass(frozen=True)
class RecommendationInputs:
    """Everything the rules read, as frames (and the Kueue objects as read from the API).

    Attributes:
        as_of: the data cut-off (latest over clusters).
        window: the period the rules judge (the last ``window_days`` of data).
        schedulers: cluster → ``slurm`` | ``kubernetes``.
        timezones: cluster → IANA zone (for reservation start times).
        jobs: ``jobs`` rows overlapping the window.
        pending: Slurm allocations that never started (``cancel_at`` = their end).
        waterfall: ``gpu_waterfall_hourly`` rows of the window.
        nodes: ``nodes`` (``cluster, host, partition, gpus``).
        fairness_weekly: ``fairness_weekly`` weekly rows.
        node_reliability: ``node_reliability``.
        sshare: the latest ``sshare`` snapshot per cluster.
        activity: mean activity per attempt and 5-minute bucket.
        teams: registry ``team, share``.
        mapping: registry ``kind, key, team``.
        capacity_gpu_h_per_week: cluster → available GPU-hours a week in the window.
        cluster_queues: cluster → ClusterQueue objects.
        gpu_units: cluster → GPUs one unit of its ``nvidia.com/gpu`` quota is worth (its nodes'
            agreed unit, :func:`pipelines.core.k8s_gpu_units.cluster_gpu_units`: 1/R under
            time-slicing, the slice's fraction under the MIG single strategy); absent: 1 (no
            Node snapshot, or nodes that disagree: the quota stays in advertised units).
        local_queues: cluster → LocalQueue objects.
        reservations: ``raw.slurm_reservations`` rows overlapping the window (empty when the
            table is absent).
        slurm_config: cluster → ``scontrol show config`` settings (absent: not loaded).
        policy_changes: ``policy_changes`` rows (``change_id, cluster, object, key, old, new,
            changed_at``; empty when the ledger is absent), to find applied recommendations.
        impact: ``policy_change_impact`` rows (``change_id, kpi, method, verdict``); None when
            the view is absent (effects not measured yet).
        wait_causes: ``large_job_wait_causes`` rows eligible in the window (empty without the
            view).
        gang_domains: each cluster's gang-level domains at its last hour (``cluster, domain,
            healthy_nodes, healthy_gpus, nodes_list``; empty without the views).
        segment_efficiency: mean segment-capacity efficiency per cluster and segment size in
            the window (``cluster, segment_size, efficiency, domain_size, healthy_gpu_h``).
        gang_capacity: ``domain_capacity_hourly`` at the gang level in the window (``cluster,
            hour, domain, healthy_nodes, free_nodes, free_gpus``; empty without the views).
        gang_topology: the gang level's dated map (``cluster, domain, node, valid_from,
            valid_to``; empty without the views).
        placement: ``job_placement`` rows of attempts started in the window (empty without
            the view).
        topology_config: cluster → the topology configuration in force: Slurm's (``form``,
            ``block_sizes``) from its latest ``topology*.conf`` or ``topology*.yaml`` input;
            Kubernetes' (``form`` ``kueue``, ``levels``: the node labels of its Kueue
            ``Topology`` objects' ``spec.levels``, highest first, ``level_labels``: topology
            level → node label) from ``raw.kueue_topologies``; absent = unknown.
        proposals: the proposal record so far (:data:`PROPOSAL_SCHEMA`): the stored
            ``analytics.recommendation_proposals`` merged with the history files
            (:func:`read_proposal_history`); empty before the first run.
        holds: the pieces of held GPUs (:data:`metrics.holds.HOLD_SCHEMA`, the ``job_holds``
            view's stored pieces) of the attempts of ``jobs`` that did not hold ``gpus`` over
            their span (METRICS.md "GPU holding"); empty: none (or a warehouse without them).
    """

    as_of: dt.datetime
    window: Window
    schedulers: dict[str, str]
    timezones: dict[str, str]
    jobs: pl.DataFrame
    pending: pl.DataFrame
    waterfall: pl.DataFrame
    nodes: pl.DataFrame
    fairness_weekly: pl.DataFrame
    node_reliability: pl.DataFrame
    sshare: pl.DataFrame
    activity: pl.DataFrame
    teams: pl.DataFrame
    mapping: pl.DataFrame
    capacity_gpu_h_per_week: dict[str, float] = field(default_factory=dict)
    cluster_queues: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    gpu_units: dict[str, float] = field(default_factory=dict)
    local_queues: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    reservations: pl.DataFrame = field(default_factory=pl.DataFrame)
    slurm_config: dict[str, dict[str, str]] = field(default_factory=dict)
    policy_changes: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_LEDGER))
    impact: pl.DataFrame | None = None
    wait_causes: pl.DataFrame = field(default_factory=pl.DataFrame)
    gang_domains: pl.DataFrame = field(default_factory=pl.DataFrame)
    segment_efficiency: pl.DataFrame = field(default_factory=pl.DataFrame)
    gang_capacity: pl.DataFrame = field(default_factory=pl.DataFrame)
    gang_topology: pl.DataFrame = field(default_factory=pl.DataFrame)
    placement: pl.DataFrame = field(default_factory=pl.DataFrame)
    topology_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    proposals: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=PROPOSAL_SCHEMA))
    holds: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=HOLD_SCHEMA))


def _query(
    con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, Any] | None = None
) -> pl.DataFrame:
    return run_named(con, f"recommendations/{name}", params)


def _holds_or_none(holds: pl.DataFrame) -> pl.LazyFrame | None:
    """``holds`` (:data:`metrics.holds.HOLD_SCHEMA` rows) for :func:`metrics.holds.with_pieces`:
    None without a row (every attempt holds ``gpus`` over its span)."""
    return holds.cast(HOLD_SCHEMA).lazy() if holds.height else None  # type: ignore[arg-type]


def _query_where(
    con: duckdb.DuckDBPyConnection,
    table: str,
    name: str,
    params: Mapping[str, Any] | None = None,
    empty: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """``sql/recommendations/<name>.sql`` where ``table`` exists (a warehouse built before that
    table, or without its inputs); ``empty`` (an empty frame by default) otherwise."""
    if table_exists(con, table):
        return _query(con, name, params)
    return pl.DataFrame() if empty is None else empty


def _kueue_objects(folder: Path, prefix: str) -> list[dict[str, Any]]:
    """The Kueue objects of the newest ``<prefix>*.json`` of ``folder`` (``kubectl get … -o
    json``: a List's ``items``, one object, or a JSON array); [] without such a file.

    Raises:
        InputFormatError: the newest file is not JSON (empty, truncated, not UTF-8) or holds
            no object list (named, with the reason).
    """
    files = sorted(folder.glob(f"{prefix}*.json")) if folder.is_dir() else []
    if not files:
        return []
    name = str(files[-1])
    try:
        doc = json.loads(files[-1].read_text(encoding="utf-8-sig"))
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError both
        raise InputFormatError(name, f"not a kubectl JSON dump: {err}") from err
    items = doc.get("items", [doc]) if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise InputFormatError(name, f"'items' is not a list of objects: {items!r}"[:200])
    return [i for i in items if isinstance(i, dict)]


def _kueue_topology_config(levels: pl.DataFrame) -> dict[str, Any]:
    """``form`` ``kueue``, ``levels`` (node labels of the cluster's Kueue Topologies, highest
    first, each once) and ``level_labels`` (the topology level name ``job_placement`` uses →
    its node label: :data:`pipelines.core.topology.LABEL_LEVELS`, ``tier-N`` for
    ``fabric.topograph.run/tier-N``, else the label itself)."""
    labels = list(dict.fromkeys(levels.sort("name", "level_index")["node_label"].to_list()))
    named = {v: k for k, v in LABEL_LEVELS.items()}
    level_labels: dict[str, str] = {}
    for label in labels:
        tier = re.fullmatch(r"fabric\.topograph\.run/(tier-\d+)", label)
        level_labels[tier.group(1) if tier else LABEL_LEVELS.get(label, label)] = label
    for level, label in named.items():
        level_labels.setdefault(level, label)
    return {"form": "kueue", "levels": labels, "level_labels": level_labels}


def read_inputs(
    con: duckdb.DuckDBPyConnection, cfg: Config, *, window_days: int = 28
) -> RecommendationInputs:
    """Read the rules' inputs from a warehouse or serving connection.

    Args:
        con: a connection (read-only is enough) holding the stable views.
        cfg: configuration (clusters, registry and inputs paths).
        window_days: how far back from ``as_of`` the rules look (capped at the data's start).

    Returns:
        The inputs; with no data, ``as_of`` is now and every frame is empty.
    """
    row = _query(con, "data_window").row(0, named=True)
    as_of = row["as_of"] or dt.datetime.now(dt.UTC)
    first = row["first_at"] or as_of
    start = max(as_of - dt.timedelta(days=window_days), first)
    window = Window(start, as_of)
    params = {"start": start}
    jobs = _query(con, "jobs_in_window", params)
    sshare = (
        _query(con, "latest_sshare")
        if table_exists(con, "raw.sshare")
        else pl.DataFrame(
            schema={"cluster": pl.String(), "account": pl.String(), "user_name": pl.String(),
                    "raw_shares": pl.Int64(), "norm_shares": pl.Float64()}
        )
    )  # fmt: skip
    capacity = _query(con, "available_capacity", params)
    teams, mapping = load_registry(cfg.registry_path)
    cqs, lqs, confs, topo_confs = {}, {}, {}, {}
    kueue_levels = (
        _query(con, "kueue_topology_levels")
        if table_exists(con, "raw.kueue_topologies")
        else pl.DataFrame(schema={"cluster": pl.String(), "name": pl.String(),
                                  "level_index": pl.Int64(), "node_label": pl.String()})
    )  # fmt: skip
    for c in cfg.clusters:
        if c.scheduler == "slurm":
            topo = topology_config(cfg.cluster_input_dir(c.name) / "topology")
            if topo is not None:
                topo_confs[c.name] = topo
            state = cfg.cluster_input_dir(c.name) / "slurm_state"
            found = sorted(state.glob("scontrol_config*.txt")) if state.is_dir() else []
            if found:
                confs[c.name] = parse_scontrol_config(found[-1].read_text(encoding="utf-8"))
        if c.scheduler == "kubernetes":
            levels = kueue_levels.filter(pl.col("cluster") == c.name)
            if levels.height:
                topo_confs[c.name] = _kueue_topology_config(levels)
            folder = cfg.cluster_input_dir(c.name) / "k8s"
            cqs[c.name] = _kueue_objects(folder, "clusterqueues")
            lqs[c.name] = _kueue_objects(folder, "localqueues")
    return RecommendationInputs(
        as_of=as_of,
        window=window,
        schedulers={c.name: c.scheduler for c in cfg.clusters},
        timezones={c.name: c.timezone for c in cfg.clusters},
        jobs=jobs,
        holds=_query_where(
            con, "job_holds", "holds_in_window", params, pl.DataFrame(schema=HOLD_SCHEMA)
        ),
        pending=_query(con, "pending_jobs", params),
        waterfall=_query(con, "waterfall_in_window", params),
        nodes=_query(con, "nodes"),
        fairness_weekly=_query(con, "fairness_weeks"),
        node_reliability=_query(con, "node_reliability"),
        sshare=sshare,
        activity=_query(con, "attempt_activity", {**params, "metric": ACTIVITY_METRIC}),
        teams=teams,
        mapping=mapping,
        capacity_gpu_h_per_week={
            str(r["cluster"]): float(r["available_gpu_s"] or 0.0) / 3600 / window.weeks
            for r in capacity.iter_rows(named=True)
        },
        cluster_queues=cqs,
        gpu_units={
            str(c): float(u)
            for c, u in cluster_gpu_units(_query_where(con, "raw.k8s_nodes", "k8s_node_units"))
            .drop_nulls("gpu_unit")
            .select("cluster", "gpu_unit")
            .iter_rows()
        },
        reservations=_query_where(con, "raw.slurm_reservations", "reservations_in_window", params),
        local_queues=lqs,
        slurm_config=confs,
        policy_changes=_query_where(
            con, "policy_changes", "policy_changes", None, pl.DataFrame(schema=_LEDGER)
        ),
        impact=(
            _query(con, "policy_change_impact")
            if table_exists(con, "policy_change_impact")
            else None
        ),
        wait_causes=_query_where(con, "large_job_wait_causes", "large_job_wait_causes", params),
        gang_domains=_query_where(con, "stranded_gpu_hourly", "gang_domains"),
        segment_efficiency=_query_where(
            con, "segment_capacity_hourly", "segment_efficiency", params
        ),
        gang_capacity=_query_where(con, "stranded_gpu_hourly", "gang_capacity", params),
        gang_topology=_query_where(con, "stranded_gpu_hourly", "gang_topology"),
        placement=_query_where(con, "job_placement", "placement_in_window", params),
        topology_config=topo_confs,
        proposals=merge_proposals(
            _query(con, "proposals")
            if table_exists(con, "analytics.recommendation_proposals")
            else pl.DataFrame(schema=PROPOSAL_SCHEMA),
            read_proposal_history(cfg),
        ),
    )


def _utc(value: object, where: str) -> dt.datetime:
    if isinstance(value, dt.datetime):
        ts = value
    elif isinstance(value, str):
        try:
            ts = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as err:
            raise ValueError(f"{where}: not an ISO 8601 time: {value!r}") from err
    else:
        raise ValueError(f"{where}: missing or not a time: {value!r}")
    return ts.replace(tzinfo=dt.UTC) if ts.tzinfo is None else ts.astimezone(dt.UTC)


def parse_proposal_history(path: Path) -> ParseResult:
    """One earlier run's proposal record (:data:`PROPOSAL_HISTORY_GLOB`), record by record.

    The file has ``latest.json``'s shape: ``as_of`` and ``recommendations`` (each with ``id,
    rule, cluster, scope, change_text`` and ``patch: {kind, content} | null``; an optional
    ``proposed_at`` overrides ``as_of`` as its first proposal time). A record is a proposal as
    that run made it; ``last_seen_at`` is the file's ``as_of``.

    Returns:
        ``rows``: :data:`PROPOSAL_SCHEMA`, one per good record; ``rejected``: the records
        without ``id``, ``rule`` or ``cluster`` (or not an object), or with a ``proposed_at``
        or ``patch`` that cannot be read, with the record as JSON text (``raw``), ``line_no`` /
        ``line_end`` the record's index in ``recommendations``, ``field`` (e.g.
        ``recommendations[1].rule``) and the reason; the other records are still read.

    Raises:
        InputFormatError: a file of the wrong kind: not JSON, not an object, no readable
            ``as_of``, or ``recommendations`` not a list (naming the file and field).
    """
    name = str(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise InputFormatError(name, f"not a JSON proposal record: {err}") from err
    if not isinstance(doc, dict):
        raise InputFormatError(name, "expected an object with as_of and recommendations")
    try:
        as_of = _utc(doc.get("as_of"), "as_of")
    except ValueError as err:
        raise InputFormatError(name, str(err).removeprefix("as_of: "), field="as_of") from err
    recs = doc.get("recommendations")
    recs = [] if recs is None else recs
    if not isinstance(recs, list):
        raise InputFormatError(name, "not a list", field="recommendations")
    rows, rejected = [], []
    for i, rec in enumerate(recs):
        where = f"recommendations[{i}]"
        try:
            if not isinstance(rec, dict):
                raise _BadRecord(where, "not an object")
            for f in ("id", "rule", "cluster"):
                if not rec.get(f):
                    raise _BadRecord(f"{where}.{f}", "missing")
            patch = rec.get("patch") or {}
            if not isinstance(patch, dict):
                raise _BadRecord(f"{where}.patch", "not an object with kind and content")
            first = rec.get("proposed_at")
            try:
                proposed = _utc(first, f"{where}.proposed_at") if first else as_of
            except ValueError as err:
                raise _BadRecord(f"{where}.proposed_at", str(err)) from err
        except _BadRecord as bad:
            raw = json.dumps(rec, sort_keys=True, default=str)
            rejected.append((name, i, i, bad.field, raw, str(bad)))
            log.warning("%s: %s (record left out, see raw.rejected_rows)", name, bad)
            continue
        rows.append(
            (str(rec["id"]), str(rec["rule"]), str(rec["cluster"]), rec.get("scope"),
             patch.get("kind"), patch.get("content"), rec.get("change_text"), proposed, as_of)
        )  # fmt: skip
    return ParseResult(
        rows=pl.DataFrame(rows, schema=PROPOSAL_SCHEMA, orient="row"),
        rejected=pl.DataFrame(rejected, schema=REJECTED_SCHEMA, orient="row"),
        info={"records": len(recs)},
    )


class _BadRecord(Exception):
    """A proposal record that cannot be read: its field and the reason (``field: why``)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason if reason.startswith(f"{field}:") else f"{field}: {reason}")
        self.field = field


def proposal_history_files(cfg: Config) -> list[tuple[str, Path, ParseResult]]:
    """Every cluster's :data:`PROPOSAL_HISTORY_GLOB` files, parsed
    (:func:`parse_proposal_history`): ``(cluster, path, result)`` in cluster and name order.

    Raises:
        InputFormatError: a file of the wrong kind.
    """
    out = []
    for cluster, folder in cfg.cluster_input_dirs().items():
        for path in sorted(folder.glob(PROPOSAL_HISTORY_GLOB)) if folder.is_dir() else ():
            out.append((cluster, path, parse_proposal_history(path)))
    return out


def read_proposal_history(cfg: Config) -> pl.DataFrame:
    """Earlier runs' proposals from ``<inputs>/<cluster>/`` :data:`PROPOSAL_HISTORY_GLOB`: the
    good records of every file (:func:`parse_proposal_history`; a bad record is logged and
    left out, :func:`record_proposal_rejects` stores it in ``raw.rejected_rows``).

    Returns:
        :data:`PROPOSAL_SCHEMA` rows, one per record (ids may repeat across files: see
        :func:`merge_proposals`).

    Raises:
        InputFormatError: a file of the wrong kind (not JSON, not an object, no ``as_of``),
            naming the file and the field.
    """
    parts = [r.rows for _, _, r in proposal_history_files(cfg)]
    return pl.concat(parts) if parts else pl.DataFrame(schema=PROPOSAL_SCHEMA)


#: ``raw.ingests.source`` / ``raw.rejected_rows.source`` of the proposal history files.
PROPOSAL_HISTORY_SOURCE = "recommendation-history"


def record_proposal_rejects(con: duckdb.DuckDBPyConnection, cfg: Config) -> int:
    """Store each proposal history file's rejected records in ``raw.rejected_rows`` (one
    ``raw.ingests`` row per file, source :data:`PROPOSAL_HISTORY_SOURCE`), replacing the file's
    earlier record; an unchanged file is not recorded again (idempotent).

    Returns:
        The rejected records of the files recorded now.

    Raises:
        InputFormatError: a file of the wrong kind.
    """
    if not table_exists(con, "raw.rejected_rows"):
        init_warehouse(con)
    n = 0
    for cluster, path, result in proposal_history_files(cfg):
        if record_rejected(
            con, source=PROPOSAL_HISTORY_SOURCE, cluster=cluster, file=path,
            rows_loaded=result.rows.height, rejected=result.rejected,
        ) is not None:  # fmt: skip
            n += result.rejected.height
    return n


def proposals_of(frame: pl.DataFrame, as_of: dt.datetime) -> pl.DataFrame:
    """``frame``'s recommendations (RECOMMENDATION_SCHEMA) as proposals of a run with data
    cut-off ``as_of`` (:data:`PROPOSAL_SCHEMA`: ``proposed_at`` = ``last_seen_at`` = as_of)."""
    ts = _utc(as_of, "as_of")
    return frame.select(
        *(pl.col(c).cast(t) for c, t in PROPOSAL_SCHEMA.items() if c in RECOMMENDATION_SCHEMA),
        pl.lit(ts).cast(UTC_DATETIME).alias("proposed_at"),
        pl.lit(ts).cast(UTC_DATETIME).alias("last_seen_at"),
    )


def merge_proposals(*frames: pl.DataFrame) -> pl.DataFrame:
    """Proposal records merged, one row per ``id``: ``proposed_at`` the earliest,
    ``last_seen_at`` the latest, the other fields as last seen (the row with the latest
    ``last_seen_at``). Merging a record with itself changes nothing (appending is idempotent).

    Returns:
        :data:`PROPOSAL_SCHEMA`, sorted by ``proposed_at`` then ``id``.
    """
    parts = [
        f.select(pl.col(c).cast(t) for c, t in PROPOSAL_SCHEMA.items()) for f in frames if f.height
    ]
    if not parts:
        return pl.DataFrame(schema=PROPOSAL_SCHEMA)
    both = pl.concat(parts).sort(["last_seen_at", "proposed_at"], nulls_last=False)
    last = [c for c in PROPOSAL_SCHEMA if c not in ("id", "proposed_at", "last_seen_at")]
    return (
        both.group_by("id", maintain_order=True)
        .agg(
            *(pl.col(c).last() for c in last),
            pl.col("proposed_at").min(),
            pl.col("last_seen_at").max(),
        )
        .select(list(PROPOSAL_SCHEMA))
        .sort(["proposed_at", "id"])
    )


def proposal_record(inputs: RecommendationInputs, frame: pl.DataFrame) -> pl.DataFrame:
    """The proposal record after this run: ``inputs.proposals`` merged with the run's current
    recommendations (``frame`` rows with ``is_current`` true, all rows without that column)."""
    cur = frame.filter(pl.col("is_current")) if "is_current" in frame.columns else frame
    return merge_proposals(inputs.proposals, proposals_of(cur, inputs.as_of))


def _past_rows(record: pl.DataFrame) -> pl.DataFrame:
    """Proposals the run no longer makes, in the recommendations' shape (severity ``info``,
    window = first proposed → last seen, no gain figures)."""
    rows = []
    for r in record.iter_rows(named=True):
        evidence = {
            "proposal": {"proposed_at": _iso(r["proposed_at"]),
                         "last_seen_at": _iso(r["last_seen_at"])},
            "note": "no longer proposed: its finding is absent from the latest data",
        }  # fmt: skip
        rows.append(
            {**{c: r[c] for c in PROPOSAL_SCHEMA if c in RECOMMENDATION_SCHEMA},
             "severity": "info", "window_start": r["proposed_at"],
             "window_end": r["last_seen_at"], "evidence": json.dumps(evidence, sort_keys=True),
             "expected_gain_gpu_h_per_week": None, "expected_wait_reduction_s": None,
             "confidence": None, "proposed_at": r["proposed_at"], "is_current": False}
        )  # fmt: skip
    schema = {**RECOMMENDATION_SCHEMA, "proposed_at": UTC_DATETIME, "is_current": pl.Boolean()}
    return pl.DataFrame(rows, schema=schema)


def recommendations_frame(
    inputs: RecommendationInputs,
    *,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    current_settings: Mapping[str, SchedulerSettings] | None = None,
    large_job_gpus: float = 64,
    idle_activity: float = 0.05,
) -> pl.DataFrame:
    """Every rule's recommendations, most urgent first, for the ``recommendations`` table.

    Args:
        inputs: from :func:`read_inputs`.
        options: rule name (:data:`RULES`) → keyword arguments overriding its thresholds.
        current_settings: cluster → its scheduler settings in force, overriding those read
            from its ``scontrol show config`` (:func:`settings_in_force`).
        large_job_gpus: "large" job threshold (config ``thresholds.large_job_gpus``).
        idle_activity: θ for idle GPUs (config ``thresholds.idle_activity``).

    Returns:
        :data:`~metrics.recommendations.RECOMMENDATION_SCHEMA` plus ``proposed_at`` (first
        proposal time, from ``inputs.proposals``; this run's cut-off for a new one),
        ``is_current`` (this run proposes it), ``status``, ``change_id`` (:func:`with_status`)
        and ``as_of``: this run's recommendations, then earlier proposals that are no longer
        made but were applied (status other than ``proposed``); sorted by ``is_current``
        (current first), severity, expected GPU-hour gain, id.
    """
    opt = {name: dict((options or {}).get(name, {})) for name in RULES}
    w = inputs.window
    slurm = [c for c, s in inputs.schedulers.items() if s == "slurm"]
    in_force = settings_in_force(inputs.slurm_config, current_settings)
    jobs = inputs.jobs
    shares = {
        str(r["team"]): float(r["share"])
        for r in inputs.teams.iter_rows(named=True)
        if r.get("share") is not None
    }
    pool_gpus = {
        str(r["cluster"]): float(r["gpus"])
        for r in inputs.nodes.group_by("cluster").agg(pl.col("gpus").sum()).iter_rows(named=True)
        if r["gpus"] is not None
    }
    frames = [
        idle_allocations(
            jobs, inputs.activity, w, holds=_holds_or_none(inputs.holds),
            **{"idle_threshold": idle_activity, "shares": shares, "pool_gpus": pool_gpus,
               **opt["idle_allocations"]},
        ),
        time_limits(
            jobs, w, nodes=inputs.nodes, **{"settings": in_force, **opt["time_limits"]}
        ),
        *(
            fairness_drift(
                inputs.fairness_weekly, w, {cluster: "slurm"},
                **{**_priority_options(inputs.slurm_config.get(cluster)),
                   **opt["fairness_drift"]},
            )
            for cluster in sorted(slurm)
        ),
        slurm_fairshare_drift(
            inputs.teams, inputs.mapping, inputs.sshare, w,
            capacity_gpu_h_per_week=inputs.capacity_gpu_h_per_week,
            **opt["slurm_fairshare_drift"],
        ),
        preemption_churn(
            jobs, w,
            **{"current_exempt_s": {c: preempt_exempt_s(conf)
                                    for c, conf in inputs.slurm_config.items()},
               **opt["preemption_churn"]},
        ),
        lemon_nodes(inputs.node_reliability, w, inputs.schedulers, **opt["lemon_nodes"]),
        reservations_idle(
            inputs.reservations.filter(pl.col("cluster").is_in(slurm))
            if inputs.reservations.width
            else inputs.reservations,
            jobs, inputs.nodes, w, **opt["reservations_idle"],
        ),
    ]  # fmt: skip
    if inputs.wait_causes.height and inputs.gang_domains.height:
        frames.append(
            gang_window(
                inputs.wait_causes, inputs.gang_domains, w, inputs.schedulers,
                **{"jobs": jobs, "timezones": inputs.timezones, **opt["gang_window"]},
            )
        )  # fmt: skip
    if inputs.wait_causes.height and inputs.gang_capacity.height and inputs.gang_topology.height:
        frames.append(
            defrag_candidates(
                inputs.wait_causes, inputs.gang_capacity, inputs.gang_topology, jobs,
                inputs.nodes, w, inputs.schedulers, as_of=inputs.as_of,
                **{"large_gpus": large_job_gpus, **opt["defrag_candidates"]},
            )
        )  # fmt: skip
    if inputs.placement.height:
        frames.append(
            topology_levels(
                inputs.placement, jobs, w, inputs.schedulers, config=inputs.topology_config,
                **opt["topology_levels"],
            )
        )  # fmt: skip
    if inputs.segment_efficiency.height:
        frames.append(
            segment_sizes(
                inputs.segment_efficiency, jobs, w, inputs.schedulers, **opt["segment_sizes"]
            )
        )
    for cluster in slurm:
        frames.append(
            backfill_tuning(
                jobs.filter(pl.col("cluster") == cluster),
                inputs.pending.filter(pl.col("cluster") == cluster),
                inputs.waterfall.filter(pl.col("cluster") == cluster),
                inputs.nodes,
                w,
                current=in_force.get(cluster),
                cluster_config=inputs.slurm_config.get(cluster),
                timezones=inputs.timezones,
                **{"large_gpus": large_job_gpus, **opt["backfill_tuning"]},
            )
        )
        frames.append(
            min_age_reserve(
                jobs.filter(pl.col("cluster") == cluster),
                inputs.pending.filter(pl.col("cluster") == cluster),
                inputs.nodes,
                w,
                cluster_config=inputs.slurm_config.get(cluster),
                current=in_force.get(cluster),
                **{"large_gpus": large_job_gpus, **opt["backfill_min_age_reserve"]},
            )
        )
    for cluster, cqs in inputs.cluster_queues.items():
        if not cqs:
            continue
        frames.append(
            kueue_quota_drift(
                inputs.teams, inputs.mapping, cqs, inputs.local_queues.get(cluster, []), w,
                cluster=cluster, **opt["kueue_quota_drift"],
            )
        )  # fmt: skip
        k8s = jobs.filter((pl.col("cluster") == cluster) & (pl.col("source") == "kubernetes"))
        usage = cluster_queue_usage_hourly(
            k8s,
            inputs.pending.filter(pl.col("cluster") == cluster),
            w,
            holds=_holds_or_none(inputs.holds.filter(pl.col("cluster") == cluster)),
        )
        unit = inputs.gpu_units.get(cluster, 1.0)
        frames.append(
            kueue_borrowing(usage, cqs, w, cluster=cluster, gpu_unit=unit, **opt["kueue_borrowing"])
        )
    out = (
        pl.concat([f for f in frames if f.height], how="vertical")
        if any(f.height for f in frames)
        else pl.DataFrame(schema=RECOMMENDATION_SCHEMA)
    )
    out = dedupe_findings(out)
    as_of = inputs.as_of if inputs.as_of.tzinfo else inputs.as_of.replace(tzinfo=dt.UTC)
    both = with_history(
        out, inputs.proposals, as_of, inputs.policy_changes, inputs.impact, large_job_gpus,
        inputs.slurm_config,
    )  # fmt: skip
    both = annotate_merges(both, merged_patches(_published(both), inputs.cluster_queues))
    return (
        both.with_columns(
            pl.col("severity").replace_strict(_SEVERITY_ORDER, return_dtype=pl.Int8).alias("_o"),
            pl.lit(as_of).cast(UTC_DATETIME).alias("as_of"),
        )
        .sort(
            ["is_current", "_o", "expected_gain_gpu_h_per_week", "id"],
            descending=[True, False, True, False],
            nulls_last=True,
        )
        .drop("_o")
    )


def settings_in_force(
    slurm_config: Mapping[str, Mapping[str, str]],
    current_settings: Mapping[str, SchedulerSettings] | None = None,
) -> dict[str, SchedulerSettings]:
    """Each Slurm cluster's scheduler settings in force, for the rules that replay its queue
    (backfill, large-job reservation, ``bf_min_age_reserve``, time limits).

    Args:
        slurm_config: cluster → its ``scontrol show config`` (:attr:`RecommendationInputs.
            slurm_config`), read by :func:`metrics.policy_replay.scheduler_settings`
            (``SchedulerParameters`` item by item; an item it does not set is Slurm's default).
        current_settings: cluster → settings given by the caller; they win over the config.

    Returns:
        cluster → settings, for every cluster of either; a cluster in neither is absent (the
        rules then replay Slurm's defaults, and say so).

    Raises:
        ValueError: a replayed ``SchedulerParameters`` item of a config is not a number.
    """
    out = {c: scheduler_settings(conf) for c, conf in slurm_config.items()}
    out.update(current_settings or {})
    return out


def with_history(
    current: pl.DataFrame,
    proposals: pl.DataFrame,
    as_of: dt.datetime,
    changes: pl.DataFrame,
    impact: pl.DataFrame | None,
    large_job_gpus: float = 64.0,
    slurm_config: Mapping[str, Mapping[str, str]] | None = None,
) -> pl.DataFrame:
    """This run's recommendations and the earlier proposals that were applied, with status.

    The proposal record (``proposals`` merged with ``current`` as proposed at ``as_of``,
    :func:`merge_proposals`) gives each recommendation its first ``proposed_at``; the status
    (:func:`with_status`) is matched from that time on. Earlier proposals that ``current`` no
    longer holds are kept when applied (status other than ``proposed``), in the
    recommendations' shape (:func:`_past_rows`).

    Args:
        current: this run's recommendations (RECOMMENDATION_SCHEMA).
        proposals: the proposal record before this run (:data:`PROPOSAL_SCHEMA`).
        as_of: this run's data cut-off.
        changes: ``policy_changes`` rows (``change_id, cluster, object, key, old, new,
            changed_at``).
        impact: ``policy_change_impact`` rows (``change_id, kpi, verdict``), or None.
        large_job_gpus: the large-job threshold (:func:`with_status`).
        slurm_config: cluster → its ``scontrol show config`` (:func:`with_status`).

    Returns:
        ``current``'s columns plus ``proposed_at``, ``is_current``, ``status``, ``change_id``;
        current rows first, in their order.
    """
    record = merge_proposals(proposals, proposals_of(current, as_of))
    out = current.join(
        record.select("id", "proposed_at"), on="id", how="left", maintain_order="left"
    ).with_columns(pl.lit(True).alias("is_current"))
    past = _past_rows(record.filter(~pl.col("id").is_in(out["id"].implode())))
    both = pl.concat([out, past.select(out.columns)], how="vertical")
    return with_status(both, changes, impact, large_job_gpus, slurm_config).filter(
        pl.col("is_current") | (pl.col("status") != "proposed")
    )


def _published(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows whose patches go to the patch files: current ones, and past ones that propose
    their rollback (regressed)."""
    if "is_current" not in frame.columns:
        return frame
    keep = pl.col("is_current")
    if "status" in frame.columns:
        keep = keep | (pl.col("status") == "regressed")
    return frame.filter(keep)


def with_status(
    frame: pl.DataFrame,
    changes: pl.DataFrame,
    impact: pl.DataFrame | None,
    large_job_gpus: float = 64.0,
    slurm_config: Mapping[str, Mapping[str, str]] | None = None,
) -> pl.DataFrame:
    """``frame`` with each recommendation's ``status`` and ``change_id``
    (:func:`metrics.recommendations.life.recommendation_life`, METRICS.md "Recommendation
    status"); a **regressed** one proposes its rollback instead of its change: its patch puts
    the change's old value back (:func:`~metrics.recommendations.life.rollback_patch`), its
    text says so, and it is ranked at least ``warning``.

    Args:
        frame: recommendations (:data:`~metrics.recommendations.RECOMMENDATION_SCHEMA`).
        changes: ``policy_changes`` rows (``change_id, cluster, object, key, old, new,
            changed_at``).
        impact: ``policy_change_impact`` rows (``change_id, kpi, verdict``), or None.
        large_job_gpus: the large-job threshold: the target of a rule for large jobs
            (:data:`~metrics.recommendations.life.LARGE_JOB_RULES`) is its KPI in the buckets
            that hold them.
        slurm_config: cluster → its ``scontrol show config``: a ``SchedulerParameters``
            rollback is the whole line in force with the item put back.
    """
    life = recommendation_life(frame, changes, impact, large_job_gpus)
    out = frame.join(life, on="id", how="left", maintain_order="left")
    regressed = out.filter(pl.col("status") == "regressed")
    if regressed.height == 0:
        return out
    by_id = {str(c["change_id"]): c for c in changes.iter_rows(named=True)}
    rows = out.to_dicts()
    for r in rows:
        change = by_id.get(str(r["change_id"])) if r["status"] == "regressed" else None
        config = (slurm_config or {}).get(str(change["cluster"])) if change is not None else None
        back = rollback_patch(change, config) if change is not None else None
        if change is None or back is None:
            continue
        old = change["old"] if change["old"] is not None else "unset"
        r["change_text"] = (
            f"ROLLBACK: the change that applied this recommendation ({change['object']} "
            f"{change['key']} {change['old']} → {change['new']}, {change['changed_at']:%Y-%m-%d}) "
            f"made its target KPI worse; put {old} back. Was: {r['change_text']}"
        )
        r["patch_kind"], r["patch_content"] = back
        if r["severity"] == "info":  # a measured harm on the change's own target
            r["severity"] = "warning"
    return pl.DataFrame(rows, schema=out.schema)


def _priority_options(config: Mapping[str, str] | None) -> dict[str, Any]:
    """The fairness rule's ``current_*`` arguments from a cluster's loaded config."""
    if not config:
        return {}
    p = priority_settings(config)
    return {
        "current_weight_fairshare": p.weight_fairshare,
        "current_other_weights": p.other_weights,
        "current_decay_half_life_s": p.decay_half_life_s,
    }


def merged_patches(
    frame: pl.DataFrame, cluster_queues: Mapping[str, list[dict[str, Any]]] | None = None
) -> list[MergedPatch]:
    """One patch per scheduler object from ``frame``'s patches and the companion patches of
    folded findings (:mod:`metrics.recommendations.merge`)."""
    base = frame.select(list(RECOMMENDATION_SCHEMA))
    rows = pl.concat([base, companion_rows(base)])
    return merge_patches_by_object(rows, cluster_queues)


def _atomic_write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _iso(ts: dt.datetime) -> str:
    aware = ts if ts.tzinfo else ts.replace(tzinfo=dt.UTC)
    return aware.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _comment(rec: Mapping[str, Any]) -> str:
    return f"# {rec['id']} {rec['rule']} {rec['scope']} ({rec['severity']})\n" + "".join(
        f"#   {line}\n" for line in _wrap(str(rec["change_text"]), 96)
    )


def _merged_comment(
    m: MergedPatch, info: Mapping[str, Mapping[str, Any]], *, quote: bool = True
) -> str:
    """Comments above a merged patch: its object, each finding it carries (with that finding's
    own patch unless ``quote`` is off), and each conflict and how it was resolved."""
    lines = [f"# {m.target}: {len(m.sources)} finding(s)"]
    for rid in m.sources:
        rec = info.get(rid)
        lines.append(_comment(rec).rstrip("\n") if rec is not None else f"# {rid}")
        if quote:
            lines += [f"#   its patch: {x}" for x in m.source_patches.get(rid, "").splitlines()]
    for c in m.conflicts:
        if "kept" in c:
            dropped = "; ".join(f"{d['value']} from {d['from']}" for d in c["dropped"])
            lines.append(
                f"# conflict on {c['key']}: kept {c['kept']} from {c['kept_from']} (the more "
                f"severe finding, then the larger gain); dropped {dropped}"
            )
        else:
            lines.append(f"# adjusted {c['key']} to {c['adjusted']}: {c['reason']}")
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int) -> list[str]:
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return [*lines, cur] if cur else lines


#: Evidence keys whose string values (or lists of strings) are user names.
_USER_KEYS = frozenset({"user", "user_name", "users"})
#: The recommendation fields that are text a user name can appear in.
_TEXT_FIELDS = ("scope", "evidence", "change_text", "patch_content")


def _evidence_names(value: object, into: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _USER_KEYS and isinstance(item, str):
                into.add(item)
            elif key in _USER_KEYS and isinstance(item, list):
                into.update(i for i in item if isinstance(i, str))
                _evidence_names([i for i in item if not isinstance(i, str)], into)
            else:
                _evidence_names(item, into)
    elif isinstance(value, list):
        for item in value:
            _evidence_names(item, into)


def evidence_user_names(frame: pl.DataFrame) -> set[str]:
    """The user names the rules put in the evidence (``user``, ``user_name`` and ``users``
    keys), less system logins and values that already are pseudonyms."""
    names: set[str] = set()
    for text in frame["evidence"].drop_nulls() if "evidence" in frame.columns else []:
        try:
            _evidence_names(json.loads(text), names)
        except ValueError:
            continue
    return set(Pseudonyms.of_names("", names).names)


def _patch(rec: Mapping[str, Any]) -> str:
    """The patch as written to its file; one naming a pseudonymised user is commented out."""
    content = str(rec["patch_content"]).rstrip("\n")
    named = sorted(set(PSEUDONYM.findall(content)))
    if not named:
        return content + "\n"
    return (
        f"# NOT APPLICABLE AS IS: this patch names user {', '.join(named)} by pseudonym. Take the\n"
        "# real name from the warehouse (an admin's `goodput sql --db <warehouse>`), or publish\n"
        f"# with {SHOW_USER_NAMES_ENV}=1 and write the patches again.\n"
        + "".join(f"# {line}\n" for line in content.split("\n"))
    )


def write_outputs(
    frame: pl.DataFrame,
    out_dir: str | Path,
    as_of: dt.datetime,
    *,
    pseudonyms: Pseudonyms | None = None,
    show_names: bool | None = None,
    cluster_queues: Mapping[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Path]:
    """Write ``latest.json`` and the four per-scheduler patch files (atomically).

    Each patch file holds one merged patch per scheduler object (:func:`merged_patches`),
    preceded by comments naming the findings it carries, their own patches and any conflict.
    User names in the scope, evidence, text and patches are replaced by their pseudonyms, as in
    the serving copy, before the patches are merged; a merged patch that then names a pseudonym
    is commented out (:func:`_patch`).

    Args:
        frame: :func:`recommendations_frame` output.
        out_dir: the folder (created).
        as_of: the data cut-off the recommendations are based on.
        pseudonyms: the names to replace and the salt; default the evidence's user names
            (:func:`evidence_user_names`) with the salt of the data folder, ``out_dir``'s parent
            (where the warehouse and its salt file lie, :func:`pipelines.privacy.load_salt`).
        show_names: keep the real names; default ``$GOODPUT_SHOW_USER_NAMES``.
        cluster_queues: cluster → Kueue objects as read (the base of merged Kueue patches).

    Returns:
        File name → path of every file written (all five, also when empty).
    """
    out = Path(out_dir)
    recs = frame.to_dicts()
    if not (show_user_names() if show_names is None else show_names):
        if pseudonyms is None:
            names = evidence_user_names(frame)
            # load_salt takes a file in the data folder: the salt file itself is one.
            salt = load_salt(out.resolve().parent / SALT_FILE) if names else ""
            pseudonyms = Pseudonyms.of_names(salt, names)
        recs = [{**r, **{f: pseudonyms.scrub(r[f]) for f in _TEXT_FIELDS if f in r}} for r in recs]
        if recs:  # the patches are merged from the scrubbed findings
            frame = pl.DataFrame(recs, schema=frame.schema)
    window = (
        {"start": _iso(recs[0]["window_start"]), "end": _iso(recs[0]["window_end"])}
        if recs
        else None
    )
    doc = {
        "as_of": _iso(as_of),
        "window": window,
        "recommendations": [
            {
                "id": r["id"],
                "rule": r["rule"],
                "cluster": r["cluster"],
                "scope": r["scope"],
                "severity": r["severity"],
                "evidence": json.loads(r["evidence"]),
                "expected_gain_gpu_h_per_week": r["expected_gain_gpu_h_per_week"],
                "expected_wait_reduction_s": r["expected_wait_reduction_s"],
                "confidence": r["confidence"],
                "change_text": r["change_text"],
                "patch": {"kind": r["patch_kind"], "content": r["patch_content"]}
                if r["patch_kind"]
                else None,
                "status": r.get("status") or "proposed",
                "change_id": r.get("change_id"),
                "proposed_at": _iso(r["proposed_at"]) if r.get("proposed_at") else None,
                "is_current": r.get("is_current", True),
            }
            for r in recs
        ],
    }
    written = {"latest.json": out / "latest.json"}
    _atomic_write(written["latest.json"], json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    header = f"generated by goodput from data up to {_iso(as_of)}; review before applying"
    frame = _published(frame)
    merged = merged_patches(frame, cluster_queues)
    info = {str(r["id"]): r for r in recs}
    for r in companion_rows(frame.select(list(RECOMMENDATION_SCHEMA))).to_dicts() if recs else []:
        info.setdefault(str(r["id"]), r)
    for kind, name in OUTPUT_FILES.items():
        mine = [m for m in merged if m.kind == kind]
        if kind == "kubernetes-merge-patch":
            docs = [f"# {header}\n# {len(mine)} patch(es), one per object; apply in any order.\n"]
            for m in mine:
                obj_kind, _, obj_name = m.target.partition("/")
                docs.append(
                    f"# kubectl patch {obj_kind.lower()} {obj_name} --type merge "
                    "--patch-file <this document>\n"
                    + _merged_comment(m, info, quote=False)
                    + _patch({"patch_content": m.content})
                )
            text = "---\n".join(docs)
            mode = 0o644
        else:
            if kind == "slurm.conf":
                parts = [
                    f"# {header}\n# Merge each line into the named cluster's slurm.conf; "
                    "each setting appears once per cluster.\n"
                ]
            else:
                parts = [f"#!/bin/sh\n# {header}\n# One command per object.\nset -eu\n"]
            for cluster in sorted({m.cluster for m in mine}):
                parts.append(f"\n## cluster {cluster}\n")
                for m in (m for m in mine if m.cluster == cluster):
                    parts.append(_merged_comment(m, info) + _patch({"patch_content": m.content}))
            text = "".join(parts)
            mode = 0o644 if kind == "slurm.conf" else 0o755
        written[name] = out / name
        _atomic_write(written[name], text, mode)
    return written


def write_recommendations_table(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> int:
    """Replace ``analytics.recommendations`` with ``frame`` and (re)create the view.

    Args:
        con: a read-write warehouse connection.
        frame: :func:`recommendations_frame` output.

    Returns:
        Rows written.
    """
    _recommendations = frame
    con.execute("CREATE SCHEMA IF NOT EXISTS analytics")
    con.execute(load_sql("recommendations/create_recommendations"))
    con.execute(load_sql("recommendations/recommendations_view"))
    del _recommendations
    return frame.height


def write_proposals(con: duckdb.DuckDBPyConnection, record: pl.DataFrame) -> int:
    """Replace ``analytics.recommendation_proposals`` with ``record`` (:func:`proposal_record`:
    the stored record merged with this run's proposals, so the table only grows and a rerun on
    the same data leaves it as it was).

    Returns:
        Rows written.
    """
    _proposals = record.select(list(PROPOSAL_SCHEMA))
    con.execute("CREATE SCHEMA IF NOT EXISTS analytics")
    con.execute(load_sql("recommendations/create_proposals"))
    del _proposals
    return record.height


def run_recommendations(
    cfg: Config,
    *,
    out_dir: str | Path | None = None,
    db: str | Path | None = None,
    window_days: int = 28,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    current_settings: Mapping[str, SchedulerSettings] | None = None,
) -> dict[str, Path]:
    """Read the serving copy, compute the recommendations and write the output files.

    Args:
        cfg: configuration.
        out_dir: where to write (default ``<warehouse folder>/recommendations``).
        db: the DuckDB file to read (default the serving copy), opened read-only.
        window_days: how far back the rules look.
        options: per-rule threshold overrides (see :func:`recommendations_frame`).
        current_settings: per-cluster current scheduler settings.

    Returns:
        File name → path of every file written.
    """
    with connect(db or cfg.serving_path, read_only=True) as con:
        inputs = read_inputs(con, cfg, window_days=window_days)
        shown = {"shown": True, "pseudonymised": False}.get(user_names_of(con))
    frame = recommendations_frame(
        inputs,
        options=options,
        current_settings=current_settings,
        large_job_gpus=cfg.large_job_gpus,
        idle_activity=cfg.idle_activity,
    )
    target = Path(out_dir) if out_dir is not None else cfg.warehouse_path.parent / "recommendations"
    # The copy read is already pseudonymised, or holds the names by the publish's opt-in.
    return write_outputs(
        frame, target, inputs.as_of, show_names=shown, cluster_queues=inputs.cluster_queues
    )


if __name__ == "__main__":  # python -m pipelines.recommendations: write the files, print paths
    from pipelines.config import load_config

    for written_path in run_recommendations(load_config()).values():
        print(written_path)
