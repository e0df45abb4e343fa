"""The metric-engine tables (time to start, fairness, reliability) from core tables, and the
telemetry functions (attribution, activity, GPU summaries) the time-keyed tables of
:mod:`pipelines.analytics.windows` are computed with.

Each cluster is computed against its own data cut-off ``as_of``; the metric functions live in
:mod:`metrics` (pure polars). Telemetry is attributed through the identity table of
:mod:`metrics.attribution` (``hpc_job`` / pod labels, the Slurm GPU map, whole-node jobs, else
the node's jobs as a flagged group).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping

import duckdb
import polars as pl

from metrics import (
    SPELLS_N,
    LossPolicy,
    entitlement,
    fair_share_hourly,
    fairness_summary,
    node_reliability,
    node_signals,
    wait_percentiles_km,
    wait_spell_counts,
    wait_spells,
)
from metrics.attribution import attribute_samples, hour_holders, pod_lives
from metrics.het_jobs import het_unit_id, het_wait_units, is_het_component
from metrics.holds import with_pieces
from metrics.hosts import with_node_hosts
from metrics.survival import DURATION_S, STARTED
from metrics.waterfall import XID_RAISED_AFTER, XID_SCRAPE_GRACE_S
from pipelines.analytics.chunks import (
    BUILD_CHUNK,
    ROW_CHUNK,
    by_hour_chunks,
    in_days,
    of_keys,
    on_days,
    row_chunks,
    touching,
)
from pipelines.analytics.incremental import with_spells, with_stored_days
from pipelines.config import Config
from pipelines.core.node_states import (
    SLURM_DOWN_STATES,
    latest_node_events,
    maint_reservation_node_events,
    node_event_state,
    snapshot_node_events,
)
from pipelines.core.slurm_on_k8s import rehome_slurmd_dcgm
from pipelines.warehouse import as_utc, job_keys_table, read_table, run_named, table_exists
from pipelines.warehouse.sql import load_sql

__all__ = [
    "ACTIVITY_METRIC",
    "HOURLY_XID_TABLE",
    "LossPolicyOf",
    "attributed_gpu_buckets",
    "build_metric_tables",
    "gpu_activity",
    "hourly_xid_attempts",
    "job_gpu_summary",
    "job_gpu_summary_ranges",
    "loss_policy_of",
]

#: Cluster → the :class:`metrics.waterfall.LossPolicy` its lost time is computed under.
LossPolicyOf = Callable[[str], LossPolicy]


def loss_policy_of(cfg: Config) -> LossPolicyOf:
    """Cluster → its configured loss policy (``[waterfall]``, or the cluster's own in
    ``[[clusters]]``, :meth:`pipelines.config.Config.loss_policy_of`) as the metric engine's
    :class:`~metrics.waterfall.LossPolicy`: the one rule every table that counts lost time
    (the waterfall's leaves 3–6, node reliability's lost GPU-seconds) is built under."""

    def of(cluster: str) -> LossPolicy:
        p = cfg.loss_policy_of(cluster)
        if p.kind == "checkpoint":
            return LossPolicy("checkpoint", p.checkpoint_interval_s, p.restart_overhead_s)
        return LossPolicy()

    return of


#: The GPU activity signal (METRICS.md), 0–1.
ACTIVITY_METRIC = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"

_TTS_GROUPS: tuple[tuple[str, ...], ...] = (
    ("source", "cluster", "bucket"),
    ("source", "cluster"),
    ("week", "source", "cluster", "bucket"),
    ("source", "cluster", "partition", "bucket"),
    ("source", "cluster", "team", "bucket"),
)
_TTS_COLS = ["week", "source", "cluster", "partition", "team", "bucket"]


def _empty_gres() -> pl.DataFrame:
    return pl.DataFrame(
        schema={"cluster": pl.String(), "job_id": pl.String(), "start_at": pl.Datetime("us", "UTC"),
                "node": pl.String(), "gpu_indices": pl.List(pl.Int64()), "gres": pl.String(),
                "snapshot_at": pl.Datetime("us", "UTC")}
    )  # fmt: skip


def _gpu_map(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """``raw.slurm_job_gres`` (the per-job GPU index map), empty when not ingested."""
    if not table_exists(con, "raw.slurm_job_gres"):
        return _empty_gres()
    df: pl.DataFrame = con.sql(load_sql("analytics/slurm_job_gres")).pl()
    return df.with_columns(
        pl.col("start_at", "snapshot_at").dt.convert_time_zone("UTC")
    ) if df.height else _empty_gres()  # fmt: skip


def attributed_gpu_buckets(
    con: duckdb.DuckDBPyConnection,
    jobs: pl.DataFrame,
    pod_jobs: pl.DataFrame,
    nodes: pl.DataFrame | None = None,
    slurmd_maps: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per GPU (or MIG instance), 5-minute bucket and allocation: the bucket's DCGM sums.

    With ``slurmd_maps`` (Slurm run in slurmd pods), a bucket whose pod is a slurmd pod is first
    moved to the Slurm node the pod ran as, its pod cleared
    (:func:`pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm`): the Slurm rules below attribute it.

    Samples are grouped per GPU, label set and bucket (``sql/analytics/dcgm_gpu_buckets.sql``),
    their host matched to ``nodes`` first (a host naming no node whose short name names one is
    that node: :func:`metrics.hosts.with_node_hosts`), each group attributed at the middle of
    its samples' times through the identity table
    (:func:`metrics.attribution.attribute_samples`: labels, the Slurm GPU map, whole-node jobs,
    else the node's jobs as a flagged group), then summed per allocation.

    Returns:
        ``cluster, host, gpu_uuid, mig_instance, bucket`` (UTC), ``job_id, attempt, team,
        attribution, job_group, gpus`` (fraction of a GPU), ``gr_sum, gr_n, util_sum, util_n``
        (``util`` already /100), ``fb_max`` (MiB), ``xid_events``.
    """
    if nodes is None and table_exists(con, "core.nodes"):
        nodes = con.sql(load_sql("analytics/node_gpus")).pl()
    raw: pl.DataFrame = con.sql(load_sql("analytics/dcgm_gpu_buckets")).pl()
    raw = raw.with_columns(pl.col("bucket", "ts").dt.convert_time_zone("UTC"))
    if nodes is not None and nodes.height and raw.height:
        raw = with_node_hosts(raw.lazy(), nodes.lazy()).collect()
    if slurmd_maps is not None:
        raw = rehome_slurmd_dcgm(raw, slurmd_maps)
    if raw.height == 0:
        # No 5-minute samples (hourly aggregates only): nothing to attribute. The identity
        # table is built from every job before samples filter it (past 14 GB for 2.15M jobs),
        # so run the same plan on no jobs: the same empty result, with its column types.
        jobs, pod_jobs = jobs.clear(), pod_jobs.clear()
    node_gpus = (
        nodes.select("cluster", "host", "gpus") if nodes is not None and nodes.height else None
    )
    att = attribute_samples(
        raw.lazy(), jobs.lazy(), pod_jobs=pod_jobs.lazy(), gres=_gpu_map(con).lazy(),
        nodes=node_gpus.lazy() if node_gpus is not None else None,
    ).collect()  # fmt: skip
    keys = ["cluster", "host", "gpu_uuid", "mig_instance", "bucket", "job_id", "attempt", "team",
            "attribution", "job_group"]  # fmt: skip
    return att.group_by(keys, maintain_order=True).agg(
        pl.col("gpus").max(),
        pl.col("gr_sum").sum(), pl.col("gr_n").sum(), pl.col("util_sum").sum(),
        pl.col("util_n").sum(), pl.col("fb_max").max(), pl.col("xid_events").sum(),
    )  # fmt: skip


#: Attributions that name one allocation (the others add to no job's activity).
_ONE_JOB = ("label_hpc_job", "pod", "gres_index", "whole_node")


def _bucket_activity() -> list[pl.Expr]:
    gr = pl.when(pl.col("gr_n") > 0).then(pl.col("gr_sum") / pl.col("gr_n"))
    util = pl.when(pl.col("util_n") > 0).then(pl.col("util_sum") / pl.col("util_n"))
    return [
        pl.coalesce(gr, util).alias("activity"),
        pl.when(gr.is_not_null()).then(pl.lit(ACTIVITY_METRIC))
        .when(util.is_not_null()).then(pl.lit("DCGM_FI_DEV_GPU_UTIL")).alias("signal"),
    ]  # fmt: skip


def _activity(
    con: duckdb.DuckDBPyConnection,
    jobs: pl.DataFrame,
    pod_jobs: pl.DataFrame,
    *,
    nodes: pl.DataFrame | None = None,
    buckets: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Mean activity per allocation attempt and 5-minute bucket: ``cluster, job_id, attempt,
    bucket, activity, gpus``. ``gpus`` = Σ GPU fractions of the allocation's GPUs seen;
    activity is their fraction-weighted mean (a MIG slice weighs K/7). Only rows attributed to
    one attempt count (labels, GPU map, whole node). ``buckets``: :func:`attributed_gpu_buckets`
    already computed (else computed from ``con``, ``jobs``, ``pod_jobs``, ``nodes``)."""
    if buckets is None:
        buckets = attributed_gpu_buckets(con, jobs, pod_jobs, nodes)
    one = buckets.filter(
        pl.col("attribution").is_in(_ONE_JOB) & pl.col("attempt").is_not_null()
    ).with_columns(_bucket_activity())
    return (
        one.filter(pl.col("activity").is_not_null())
        .group_by("cluster", "job_id", "attempt", "bucket")
        .agg(
            ((pl.col("activity") * pl.col("gpus")).sum() / pl.col("gpus").sum()).alias("activity"),
            pl.col("gpus").sum(),
        )
        .with_columns(pl.col("attempt").cast(pl.Int64))
        .select("cluster", "job_id", "attempt", "bucket", "activity", "gpus")
    )


def _xid_events(
    con: duckdb.DuckDBPyConnection,
    slurmd_maps: pl.DataFrame | None = None,
    pod_jobs: pl.DataFrame | None = None,
    nodes: pl.DataFrame | None = None,
    xid_hours: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """XID events: each change of ``DCGM_FI_DEV_XID_ERRORS`` to a non-zero value (it holds the
    last XID, not a count), plus non-zero ``DCGM_EXP_XID_ERRORS_COUNT`` samples:
    ``cluster, host, ts`` (UTC), ``xid, gpu_uuid, namespace, pod``, ``prev_ts`` (UTC: the scrape
    before on the event's series, NULL for its first; the FAILED → infra rule's
    :data:`metrics.waterfall.XID_PREV_TS`).

    With ``slurmd_maps`` an XID on a GPU a slurmd pod holds is moved to the Slurm cluster and
    the Slurm node the pod ran as at ``ts``, its pod cleared — the same rule as the pods'
    telemetry (:func:`pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm`, METRICS.md "Slurm on
    Kubernetes", telemetry and XID events); the change is detected on the physical GPU first.

    With ``pod_jobs`` (the pod lives with their ``node``), an event whose host is the
    exporter's own pod name (dcgm-exporter in a pod without ``hostNetwork`` labels its series
    ``Hostname=<its pod>``, ``host_is_exporter_pod``) and whose GPU a pod held is the node of
    that pod's life at ``ts`` (:func:`metrics.attribution.pod_lives`): the XID rule matches an
    attempt's node, and a node that does not exist gets no event.

    With ``nodes`` (``cluster, host``: ``core.nodes``), a host that names no node but whose
    short name names one (``n1.hpc.example.edu`` and the node ``n1``) is that node
    (:func:`metrics.hosts.with_node_hosts`), first, as the samples' buckets
    (:func:`attributed_gpu_buckets`).

    The XIDs of the hourly aggregates (``raw.dcgm_hourly``, :func:`_hourly_xid_events`) come
    along, with :data:`metrics.waterfall.XID_RAISED_AFTER` set (NULL on the samples' events);
    ``xid_hours``: :func:`_hourly_xid_hours` of ``con`` already read (else read here)."""
    df: pl.DataFrame = con.sql(load_sql("analytics/xid_events")).pl()
    df = df.with_columns(pl.col("ts", "prev_ts").dt.convert_time_zone("UTC"))
    hourly = _hourly_xid_events(con, xid_hours)
    if hourly.height:
        df = pl.concat([df, hourly], how="diagonal_relaxed")
    if nodes is not None and nodes.height and df.height:
        df = with_node_hosts(df.lazy(), nodes.lazy()).collect()
    if pod_jobs is not None and "node" in pod_jobs.columns and df["host_is_exporter_pod"].any():
        df = _exporter_pod_hosts(df, pod_jobs)
    df = df.drop("host_is_exporter_pod")
    return rehome_slurmd_dcgm(df, slurmd_maps) if slurmd_maps is not None else df


#: The window's copy of the hourly aggregates' XID rows (``analytics/xid_hourly_rows.sql``),
#: which :func:`pipelines.analytics.windows.telemetry_window` puts beside its cut of
#: ``raw.dcgm_hourly`` (that cut keeps the columns the activity reads, not the XIDs).
HOURLY_XID_TABLE = "raw.dcgm_hourly_xid"

#: The hours of all time (the rows :func:`_hourly_xid_events` reads from a warehouse).
_ALL_HOURS = (dt.datetime(1, 1, 2, tzinfo=dt.UTC), dt.datetime(9999, 12, 30, tzinfo=dt.UTC))


def _hourly_xid_hours(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The hourly DCGM aggregates' XID events, one row per GPU, hour and value (METRICS.md, XID
    rule, hourly aggregates; :func:`_hourly_xid_events` gives them as events).

    ``xid_last`` is ``last_over_time(DCGM_FI_DEV_XID_ERRORS[1h])``: the GPU's last XID value of
    the hour, not a count, and dcgm-exporter's value does not reset (NVIDIA/dcgm-exporter#500),
    so a GPU reads the same XID every hour after it. An event is a GPU's (``cluster, uuid``)
    non-zero value ``v`` in hour ``H`` that the GPU did not hold in hour ``H − 1h`` (one per
    GPU, hour and value; a GPU without a row holding ``v`` in ``H − 1h``, one not scraped
    then included, reads as a new XID). Only rows with ``xid_last > 0`` are read
    (``sql/analytics/xid_hourly_rows.sql``; in an incremental window the copy
    :data:`HOURLY_XID_TABLE`). Where the GPU's 5-minute samples read ``v`` in ``H``
    (``DCGM_FI_DEV_XID_ERRORS = v`` or a ``DCGM_EXP_XID_ERRORS_COUNT`` of code ``v`` above 0:
    ``sql/analytics/xid_sample_hours.sql``) their events, more precise in time, stand for it
    and the hourly event is left out, so one XID is never counted twice.

    Returns:
        ``cluster, host`` (the least of the GPU's host names in the hour), ``gpu_uuid, xid``
        (Int64), ``hour`` (UTC, the hour's start), ``gpu_index`` (Int64: the least of the
        GPU's indices in the hour), ``hpc_jobs`` (the job labels of the GPU's rows holding
        ``v`` in the hour, sorted, NULL for an unlabelled row); empty without hourly
        aggregates. Sorted by ``cluster, host, hour, gpu_uuid, xid``.
    """
    utc = pl.Datetime("us", "UTC")
    schema = {
        "cluster": pl.String(), "host": pl.String(), "gpu_uuid": pl.String(), "xid": pl.Int64(),
        "hour": utc, "gpu_index": pl.Int64(), "hpc_jobs": pl.List(pl.String()),
    }  # fmt: skip
    if table_exists(con, HOURLY_XID_TABLE):
        rows = read_table(con, HOURLY_XID_TABLE)
    elif table_exists(con, "raw.dcgm_hourly"):
        lo, hi = _ALL_HOURS
        rows = run_named(con, "analytics/xid_hourly_rows", {"cluster": None, "lo": lo, "hi": hi})
    else:
        return pl.DataFrame(schema=schema)
    if rows.is_empty():
        return pl.DataFrame(schema=schema)
    gpu = ["cluster", "gpu_uuid", "xid"]
    rows = rows.with_columns(pl.col("hour").dt.cast_time_unit("us"))
    held = rows.select(*gpu, (pl.col("hour") + pl.duration(hours=1)).alias("hour")).unique()
    new = (
        rows.join(held, on=[*gpu, "hour"], how="anti")
        .group_by(*gpu, "hour")
        .agg(
            pl.col("host").min(),  # a GPU under two host names in one hour: one event
            pl.col("gpu_index").min(),
            pl.col("hpc_job").unique().sort(nulls_last=True).alias("hpc_jobs"),
        )
    )
    if table_exists(con, "raw.dcgm_samples"):
        seen = run_named(
            con,
            "analytics/xid_sample_hours",
            {
                "cs": new["cluster"].unique().to_list(),
                "gpus": new["gpu_uuid"].unique().to_list(),
            },
        ).with_columns(pl.col("hour").dt.cast_time_unit("us"))
        new = new.join(seen, on=[*gpu, "hour"], how="anti")
    out = new.sort("cluster", "host", "hour", "gpu_uuid", "xid").select(*schema)
    return out.cast(schema)  # type: ignore[arg-type]


def _hourly_xid_events(
    con: duckdb.DuckDBPyConnection, xid_hours: pl.DataFrame | None = None
) -> pl.DataFrame:
    """XID events of the hourly DCGM aggregates (:func:`_hourly_xid_hours`; METRICS.md, XID
    rule, hourly aggregates).

    The event is known only to lie in the hour: it is seen at ``ts = H + 1h`` (the recording
    rule's evaluation, the hour's last scrape before it) and raised after ``H −``
    :data:`metrics.waterfall.XID_SCRAPE_GRACE_S` (a scrape just after ``H`` may read an XID
    raised up to a scrape and a collect interval before it):
    :data:`metrics.waterfall.XID_RAISED_AFTER`.

    ``xid_hours``: :func:`_hourly_xid_hours` of ``con`` already read (else read here).

    Returns:
        ``cluster, host, ts, xid, gpu_uuid, namespace, pod`` (NULL), ``host_is_exporter_pod``
        (false), ``prev_ts`` (NULL), ``raised_after`` (UTC); empty without hourly aggregates.
    """
    utc = pl.Datetime("us", "UTC")
    hours = _hourly_xid_hours(con) if xid_hours is None else xid_hours
    return hours.select(
        "cluster",
        "host",
        (pl.col("hour") + pl.duration(hours=1)).alias("ts"),
        "xid",
        "gpu_uuid",
        pl.lit(None, pl.String()).alias("namespace"),
        pl.lit(None, pl.String()).alias("pod"),
        pl.lit(False).alias("host_is_exporter_pod"),
        pl.lit(None, utc).alias("prev_ts"),
        (pl.col("hour") - pl.duration(seconds=XID_SCRAPE_GRACE_S)).alias(XID_RAISED_AFTER),
    )


def hourly_xid_attempts(
    con: duckdb.DuckDBPyConnection,
    jobs: pl.DataFrame,
    nodes: pl.DataFrame | None = None,
    xid_hours: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The hourly aggregates' XID events per allocation attempt: ``job_gpu_summary``'s share
    of them (METRICS.md, "A job's XIDs").

    Each event of :func:`_hourly_xid_hours` (so never one the 5-minute samples read: those
    count through their buckets) counts once for each attempt that held its GPU during the
    event's hour ``[H, H + 1h)`` (:func:`metrics.attribution.hour_holders`: the row's job
    label, the Slurm GPU map, the whole node), its host first matched to ``nodes`` as the
    samples' (:func:`metrics.hosts.with_node_hosts`).

    Args:
        con: connection holding ``raw.dcgm_hourly`` (or :data:`HOURLY_XID_TABLE`), and
            ``raw.dcgm_samples``, ``raw.slurm_job_gres`` where present.
        jobs: ``core.jobs`` rows among which the holders are found (all the cluster's attempts:
            the whole-node rule looks at every job on the node).
        nodes: ``cluster, host, gpus`` (``core.nodes``); None: ``core.nodes`` when ``con``
            has it.
        xid_hours: :func:`_hourly_xid_hours` of ``con`` already read (the window reads it
            once for its XID events and for this); None: read here.

    Returns:
        ``cluster, job_id, attempt`` (Int64), ``xid_events`` (Int64, ≥ 1): one row per attempt
        with an hourly XID.
    """
    schema = {"cluster": pl.String(), "job_id": pl.String(), "attempt": pl.Int64(),
              "xid_events": pl.Int64()}  # fmt: skip
    events = _hourly_xid_hours(con) if xid_hours is None else xid_hours
    if events.is_empty() or jobs.is_empty():
        return pl.DataFrame(schema=schema)
    if nodes is None and table_exists(con, "core.nodes"):
        nodes = con.sql(load_sql("analytics/node_gpus")).pl()
    if nodes is not None and nodes.height:
        events = with_node_hosts(events.lazy(), nodes.lazy()).collect()
    rows = events.with_row_index("_event").explode("hpc_jobs").rename({"hpc_jobs": "hpc_job"})
    held = hour_holders(
        rows.lazy(), jobs.lazy(), gres=_gpu_map(con).lazy(),
        nodes=nodes.select("cluster", "host", "gpus").lazy()
        if nodes is not None and nodes.height else None,
    ).collect()  # fmt: skip
    out = (
        held.unique(["_event", "job_id", "attempt"])
        .group_by("cluster", "job_id", "attempt")
        .agg(pl.len().alias("xid_events"))
    )
    return out.cast(schema).select(*schema)  # type: ignore[arg-type]


def _exporter_pod_hosts(events: pl.DataFrame, pod_jobs: pl.DataFrame) -> pl.DataFrame:
    """``events`` with the host of each event named by the exporter's pod, on a pod-labelled
    GPU, replaced by the node of that pod's life at the event (kept where the life has none)."""
    indexed = events.with_row_index("_i")
    mine = indexed.filter(
        pl.col("host_is_exporter_pod") & pl.col("pod").is_not_null()
        & pl.col("namespace").is_not_null()
    ).select("_i", "cluster", "namespace", "pod", "ts")  # fmt: skip
    nodes = (
        pod_lives(mine.lazy(), pod_jobs.lazy(), value="node")
        .select("_i", pl.col("_pod_job").alias("_node"))
        .collect()
    )
    return (
        indexed.join(nodes, on="_i", how="left", maintain_order="left")
        .with_columns(pl.coalesce("_node", "host").alias("host"))
        .drop("_i", "_node")
    )


def _down_intervals(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """``cluster, host, start_at, end_at, state, reason, planned``: each Slurm node event once
    (:func:`pipelines.core.node_states.latest_node_events`: a closed copy over an open one,
    then the latest load), those the down or drained ``scontrol show node`` snapshots imply
    on clusters without sacctmgr node events
    (:func:`pipelines.core.node_states.snapshot_node_events`), and the ``MAINT`` reservations'
    nodes where no other event is (:func:`pipelines.core.node_states.
    maint_reservation_node_events`), as the core layer's down time; ``planned`` as there
    (:func:`pipelines.core.node_states.node_event_state`)."""
    raw: pl.DataFrame = con.sql(load_sql("analytics/node_down_events")).pl()
    events = latest_node_events(raw).select(
        "cluster",
        "node",
        pl.col("start_at", "end_at").dt.convert_time_zone("UTC"),
        "state",
        "reason",
    )
    implied = []
    if table_exists(con, "raw.slurm_nodes"):
        snaps = run_named(
            con, "analytics/slurm_node_snapshots", {"down_states": list(SLURM_DOWN_STATES)}
        )
        implied.append(snapshot_node_events(snaps, events))
    if table_exists(con, "raw.slurm_reservations"):
        known = pl.concat(
            [events.select("cluster", "node", "start_at", "end_at"),
             *(i.select("cluster", "node", "start_at", "end_at") for i in implied)],
            how="vertical_relaxed",
        )  # fmt: skip
        maint = run_named(con, "analytics/slurm_maint_reservations")
        implied.append(maint_reservation_node_events(maint, known))
    for extra in implied:
        if extra.height:
            events = pl.concat([events, extra.select(events.columns)], how="vertical_relaxed")
    return events.select(
        "cluster",
        pl.col("node").alias("host"),
        "start_at",
        "end_at",
        "state",
        "reason",
        (node_event_state() == "planned").alias("planned"),
    )


def job_gpu_summary(
    con: duckdb.DuckDBPyConnection,
    jobs: pl.DataFrame,
    activity: pl.DataFrame,
    pod_jobs: pl.DataFrame,
    *,
    idle_threshold: float,
    bucket_s: float = 300.0,
    nodes: pl.DataFrame | None = None,
    buckets: pl.DataFrame | None = None,
    hourly_xids: pl.DataFrame | None = None,
    holds: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per allocation attempt with its telemetry summary (persisted beyond retention).

    ``observed_gpu_s`` = Σ over the attempt's 5-minute buckets ``[b, b + bucket_s)`` and the
    pieces of GPUs it held (:func:`metrics.holds.with_pieces`; without pieces its own
    ``gpus`` over ``[start_at, end_at)``, ``[start_at, ∞)`` while open at the cut-off, as the
    attribution holds it) of min(GPUs seen, the piece's GPUs) × the seconds of the bucket
    inside the piece — as the waterfall counts observed time, never the whole bucket of a
    partly held one (METRICS.md: a 120-s job in one bucket observes 120 GPU-s, not 300);
    ``mean_activity`` = mean activity weighted by those GPU-seconds (NULL without any);
    ``idle_gpu_s`` = those GPU-seconds of buckets with activity < θ; ``peak_fb_used_mib`` =
    max ``DCGM_FI_DEV_FB_USED``; ``xid_events`` = XID changes on the attempt's GPUs: those of
    its 5-minute buckets, plus the hourly aggregates' events of the hours it held the GPU in
    (:func:`hourly_xid_attempts`, never one the samples read). Only samples attributed to the
    attempt itself count (labels, GPU map, whole node; not ``node_group``). Attempts without
    telemetry have 0 observed GPU-seconds and NULL activity. The whole of
    :func:`job_gpu_summary_ranges` in one range.

    Args:
        con: connection holding ``raw.dcgm_samples`` (read unless ``buckets`` is given).
        jobs: ``core.jobs`` rows.
        activity: :func:`_activity` rows.
        pod_jobs: ``cluster, namespace, pod, job_id`` and the lives' ``uid, pod_from`` (see
            :func:`attributed_gpu_buckets`).
        idle_threshold: θ.
        bucket_s: bucket length, s.
        nodes: ``cluster, host, gpus`` for the whole-node rule.
        buckets: :func:`attributed_gpu_buckets` rows already computed.
        hourly_xids: :func:`hourly_xid_attempts` rows already computed (else computed from
            ``con``, ``jobs``, ``nodes``).
        holds: the pieces of held GPUs of the attempts that did not hold ``gpus`` over their
            span (:attr:`pipelines.core.CoreFrames.holds`, per node or not); None: every
            attempt holds ``gpus`` over ``[start_at, end_at)``.

    Returns:
        ``source, cluster, job_id, attempt`` (Int64), ``team, gpus, gpu_s``,
        ``observed_gpu_s`` (GPU-s), ``mean_activity`` (0–1), ``idle_gpu_s`` (GPU-s),
        ``peak_fb_used_mib`` (MiB), ``xid_events`` (Int64): one row per attempt of ``jobs``
        with ``gpus`` > 0.
    """
    (whole,) = job_gpu_summary_ranges(
        con, jobs, activity, pod_jobs, idle_threshold=idle_threshold, rows=max(jobs.height, 1),
        bucket_s=bucket_s, nodes=nodes, buckets=buckets, hourly_xids=hourly_xids, holds=holds,
    )  # fmt: skip
    return whole


def job_gpu_summary_ranges(
    con: duckdb.DuckDBPyConnection,
    jobs: pl.DataFrame,
    activity: pl.DataFrame,
    pod_jobs: pl.DataFrame,
    *,
    idle_threshold: float,
    rows: int = ROW_CHUNK,
    bucket_s: float = 300.0,
    nodes: pl.DataFrame | None = None,
    buckets: pl.DataFrame | None = None,
    hourly_xids: pl.DataFrame | None = None,
    holds: pl.DataFrame | None = None,
) -> Iterator[pl.DataFrame]:
    """:func:`job_gpu_summary` ``rows`` attempts of ``jobs`` at a time
    (:func:`pipelines.analytics.chunks.row_chunks`, in ``jobs``' order), yielded one range at a
    time so that the caller writes each before the next is computed: the per-attempt telemetry
    aggregates (one row per attempt with telemetry) are computed once, over all of ``activity``
    and ``buckets``, and each range of attempts is joined to them (a row depends on its attempt
    alone, so the ranges concatenate to the whole). Arguments as :func:`job_gpu_summary`; no
    attempt: one empty range with the columns.

    Raises:
        ValueError: ``rows`` is not positive (when iteration starts).
    """
    if buckets is None:
        buckets = attributed_gpu_buckets(con, jobs, pod_jobs, nodes)
    if hourly_xids is None:
        hourly_xids = hourly_xid_attempts(con, jobs, nodes)
    hourly = hourly_xids.select(
        "cluster", "job_id", pl.col("attempt").cast(pl.Int64), pl.col("xid_events").alias("_hx")
    )
    # Lazy: with polars 2.1 the eager left join of an empty ``activity`` with a year of 10,000
    # GPUs' 2.1M attempts took 0.28 s and raised the process's peak by 532 MiB, the lazy plan
    # 0.02 s and 21 MiB (BENCHMARKS.md, "Where the year's builds reach their peaks").
    # Each bucket [b, b + bucket_s) counts only where it overlaps a piece of the attempt's held
    # GPUs (its own [start_at, end_at) without pieces; an open one [start_at, ∞)), as the
    # waterfall's observed time (metrics.waterfall._observed).
    alloc = (
        with_pieces(
            jobs.lazy().select(
                "cluster", "job_id", pl.col("attempt").cast(pl.Int64), "start_at", "end_at", "gpus"
            ),
            None if holds is None or holds.height == 0 else holds.lazy(),
        )
        .filter(pl.col("_pg") > 0)
        .select("cluster", "job_id", "attempt", "_ps", "_pe", "_pg")
    )
    b = pl.col("bucket").dt.cast_time_unit("us")
    b_end = b + pl.duration(microseconds=round(bucket_s * 1e6))
    inside = pl.min_horizontal(b_end, pl.col("_pe")) - pl.max_horizontal(b, pl.col("_ps"))
    # (min/max_horizontal skip a NULL: an open piece runs to the bucket's end)
    overlap_s = (inside.dt.total_microseconds().cast(pl.Float64) / 1e6).clip(lower_bound=0.0)
    obs = pl.col("_obs")
    per = (
        activity.lazy()
        .join(alloc, on=["cluster", "job_id", "attempt"], how="inner")
        .with_columns(
            (pl.min_horizontal(pl.col("gpus").fill_null(pl.col("_pg")), pl.col("_pg"))
             * overlap_s).alias("_obs")
        )
        .group_by("cluster", "job_id", "attempt")
        .agg(
            obs.sum().alias("observed_gpu_s"),
            pl.when(obs.sum() > 0)
            .then((pl.col("activity") * obs).sum() / obs.sum())
            .alias("mean_activity"),
            obs.filter(pl.col("activity") < idle_threshold).sum().alias("idle_gpu_s"),
        )
        .collect()
    )  # fmt: skip
    hw = (
        buckets.filter(pl.col("attribution").is_in(_ONE_JOB) & pl.col("attempt").is_not_null())
        .group_by("cluster", "job_id", "attempt")
        .agg(
            pl.col("fb_max").max().alias("peak_fb_used_mib"),
            pl.col("xid_events").sum().alias("xid_events"),
        )
        .with_columns(pl.col("attempt").cast(pl.Int64))
    )
    keys = ["cluster", "job_id", "attempt"]
    for part in row_chunks(jobs, rows):
        base = part.filter(pl.col("gpus") > 0).select(
            "source", "cluster", "job_id", pl.col("attempt").cast(pl.Int64), "team", "gpus",
            "gpu_s",
        )  # fmt: skip
        yield (
            base.join(per, on=keys, how="left", maintain_order="left")
            .join(hw, on=keys, how="left", maintain_order="left")
            .join(hourly, on=keys, how="left", maintain_order="left")
            .with_columns(
                pl.col("observed_gpu_s").fill_null(0.0),
                pl.col("idle_gpu_s").fill_null(0.0),
                (pl.col("xid_events").fill_null(0) + pl.col("_hx").fill_null(0))
                .cast(pl.Int64)
                .alias("xid_events"),
            )
            .drop("_hx")
        )


def gpu_activity(
    con: duckdb.DuckDBPyConnection,
    jobs: pl.DataFrame,
    pod_jobs: pl.DataFrame,
    *,
    nodes: pl.DataFrame | None = None,
    buckets: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per GPU (or MIG instance), 5-minute bucket and allocation: activity, signal, attribution.

    Activity is the mean of ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0–1) where present, else of
    ``DCGM_FI_DEV_GPU_UTIL`` / 100 (METRICS.md); ``signal`` names the one used. One row per
    allocation that held the GPU in the bucket (a GPU whose pod changed mid-bucket has two);
    two jobs on one GPU are never summed. ``attribution`` says how the row was attributed
    (:data:`metrics.attribution.ATTRIBUTIONS`); ``job_group`` lists the jobs of a
    ``node_group`` row; ``gpus`` is the fraction of a GPU (MIG slice K/7, else 1).
    ``buckets``: :func:`attributed_gpu_buckets` already computed (else computed from the other
    arguments).
    """
    if buckets is None:
        buckets = attributed_gpu_buckets(con, jobs, pod_jobs, nodes)
    return buckets.with_columns(_bucket_activity()).select(
        "cluster", "host", "gpu_uuid", "mig_instance", "bucket", "activity", "signal",
        "job_id", pl.col("attempt").cast(pl.Int64), "team", "attribution", "job_group", "gpus",
    )  # fmt: skip


def _concat(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()


def _fair_share_hourly(
    jobs: pl.LazyFrame,
    pending: pl.LazyFrame,
    capacity: pl.DataFrame,
    shares: pl.DataFrame,
    cut: dt.datetime,
    every: str,
    holds: pl.LazyFrame | None = None,
) -> pl.DataFrame:
    """:func:`metrics.fair_share_hourly` of one cluster, one unit of its capacity hours at a
    time (each hour's water-filling reads only the attempts and waits touching it, and its
    output hours are the capacity's); ``holds``: the cluster's pieces of held GPUs
    (:attr:`pipelines.core.CoreFrames.holds`, None: none)."""
    return by_hour_chunks(
        capacity,
        lambda hours, c, lo, hi: fair_share_hourly(
            touching(jobs, c, lo, hi, holds=holds),
            hours.lazy(),
            shares.lazy(),
            cut,
            pending=touching(pending, c, lo, hi),
            holds=holds,
        ).collect(),
        every,
    )


#: The attempts' failure signals per node and UTC day of their start, as stored
#: (:func:`metrics.node_signals` with ``daily``): what ``analytics.node_reliability`` sums. An
#: incremental build computes the rows of its plan's days only (the attempts that started on
#: them) and reads the other days' back
#: (:func:`pipelines.analytics.incremental.with_stored_days`): an attempt's signals change with
#: its own row, which puts every day it spans in the plan, with an XID event near its end,
#: which puts the days of the FAILED attempts ending near it there (``_xid_attempt_days``), or
#: with the cut-off passing its end (``_cutoff_crossed_days``); an XID event that a changed
#: slurmd map places on another node counts as one near the ends of the FAILED attempts ending
#: in or soon after the times the map changed (``_moved_map_spans``).
NODE_SIGNALS_TABLE = "analytics.node_signals_daily"

#: The hourly fair shares as stored: :func:`metrics.fair_share_hourly`'s rows of each cluster
#: (its pool), ``pool`` named ``cluster``, sorted by ``cluster, hour, team``. Time-keyed: an
#: incremental build computes the hours of its plan's days only and reads the others back for
#: the weekly and rolling windows (:data:`pipelines.analytics.incremental.INCREMENTAL_TABLES`).
FAIR_SHARE_TABLE = "analytics.fair_share_hourly"

_FAIR_ORDER = ("cluster", "hour", "team")

#: The wait spells' counts as stored (:func:`metrics.survival.wait_spell_counts` by
#: :data:`_TTS_COLS`: one row per week of eligible time, group, duration and outcome, ``n``
#: spells), the compact input of the Kaplan–Meier percentiles: a year of 10,000 GPUs' 2.15M
#: spells are 204,264 rows. Counts add up, so an incremental build computes the spells of the
#: jobs whose spells may differ only (the plan's wait keys) and adds their counts to the stored
#: ones less the counts of those jobs' stored spells (``analytics.time_to_start_jobs``): the
#: same counts as a full build's, integers, exactly.
TTS_COUNTS_TABLE = "analytics.time_to_start_counts"

_TTS_COUNT_COLS = [*_TTS_COLS, DURATION_S, STARTED, SPELLS_N]

#: Not a table: with the plan's wait keys, the ``cluster, week`` of :data:`TTS_COUNTS_TABLE`
#: whose rows may differ from the stored ones (the weeks of the keys' new and stored spells),
#: for a write that compares those weeks' rows only.
TTS_COUNT_WEEKS = "time_to_start_count_weeks"


def _cluster_spell_counts(
    cluster: str,
    cut: dt.datetime,
    jobs: pl.DataFrame,
    pending: pl.DataFrame,
    rows: int,
    emit: Callable[[pl.DataFrame], None] | None = None,
) -> pl.DataFrame:
    """The wait spells of ``cluster``'s rows of ``jobs`` and ``pending`` at cut-off ``cut``,
    counted (:func:`metrics.survival.wait_spell_counts` by :data:`_TTS_COLS`), computed
    ``rows`` attempts at a time; each part of the spells goes to ``emit`` (when given) as it is
    computed, row for row as ``wait_spells(jobs, cut, pending=pending)`` gives them (the
    attempts' in order, then the never-started jobs'). An empty frame of the other kind keeps
    every part's columns and types those of the whole; a range with none of the cluster's
    spells is not emitted (the last part always is). The counts add up over the parts, so the
    cluster's spells are never held at once."""
    counts = []
    own_pending = pending.lazy().filter(pl.col("cluster") == cluster)
    for part in row_chunks(jobs, rows):
        own = part.lazy().filter(pl.col("cluster") == cluster)
        sp = wait_spells(own, cut, pending=own_pending.clear()).collect()
        if sp.height:
            if emit is not None:
                emit(sp)
            counts.append(wait_spell_counts(sp.lazy(), _TTS_COLS).collect())
    no_jobs = jobs.lazy().filter(pl.col("cluster") == cluster).clear()
    sp = wait_spells(no_jobs, cut, pending=own_pending).collect()
    if emit is not None:
        emit(sp)
    counts.append(wait_spell_counts(sp.lazy(), _TTS_COLS).collect())
    return wait_spell_counts(pl.concat(counts).lazy(), _TTS_COLS).collect()


def _of_wait_units(frame: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """``frame``'s rows of the waiting units ``keys`` (``cluster, job_id`` String; a het job
    by its leader ``H+0``, :func:`pipelines.analytics.incremental.wait_keys`): every component
    of a named het job, each other job's own rows."""
    on = ["cluster", "job_id"]
    if keys.filter(is_het_component(pl.col("job_id"))).height == 0:
        return of_keys(frame.lazy(), keys, on).collect()
    # only with a het job among the keys: the unit of every row looked up (a pass over the ids)
    units = frame.lazy().with_columns(het_unit_id(pl.col("job_id").cast(pl.String)).alias("_u"))
    named = keys.rename({"job_id": "_u"})
    return of_keys(units, named, ["cluster", "_u"], lookup="_u").drop("_u").collect()


def _wait_units(jobs: pl.DataFrame, pending: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``jobs`` and ``pending`` with each het job's components as one waiting unit
    (:func:`metrics.het_jobs.het_wait_units`); the frames themselves when neither holds a het
    component (no copy)."""
    # a literal '+' first (a het id has one; a plain pass over the ids, no pattern)
    het = pl.col("job_id").cast(pl.String).str.contains("+", literal=True).any()
    if not (jobs.select(het).item() or pending.select(het).item()):
        return jobs, pending
    units, pending_units = het_wait_units(jobs.lazy(), pending.lazy())
    assert pending_units is not None
    return units.collect(), pending_units.collect()


def _spell_counts(
    con: duckdb.DuckDBPyConnection, fresh: list[pl.DataFrame], wait_keys: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """:data:`TTS_COUNTS_TABLE`'s rows, sorted by every column (NULLs last) and without a zero
    count: the counts of the spells just computed (``fresh``: :func:`metrics.survival.
    wait_spell_counts` frames by :data:`_TTS_COLS`); with ``wait_keys`` (an incremental
    build, whose ``fresh`` spells are those jobs' alone), plus the stored counts, less the
    counts of those jobs' stored spells (``sql/analytics/spell_counts_of_keys.sql``).

    Returns:
        The rows, and with ``wait_keys`` the ``cluster, week`` whose counts may differ from
        the stored ones (those of the keys' new and stored spells; every other week's rows
        are the stored ones), else None."""
    schema = {
        "week": pl.Datetime("us", "UTC"), "source": pl.String(), "cluster": pl.String(),
        "partition": pl.String(), "team": pl.String(), "bucket": pl.String(),
        DURATION_S: pl.Float64(), STARTED: pl.Boolean(), SPELLS_N: pl.Int64(),
    }  # fmt: skip
    parts = [f.select(_TTS_COUNT_COLS).cast(schema) for f in fresh if f.height]  # type: ignore[arg-type]
    weeks = None
    if wait_keys is not None:
        stored = read_table(con, TTS_COUNTS_TABLE).select(_TTS_COUNT_COLS).cast(schema)  # type: ignore[arg-type]
        with job_keys_table(con, wait_keys):
            old = as_utc(run_named(con, "analytics/spell_counts_of_keys")).cast(schema)  # type: ignore[arg-type]
        weeks = pl.concat([p.select("cluster", "week") for p in [*parts, old]]).unique()
        parts += [stored, old.with_columns(-pl.col(SPELLS_N))]
    if not parts:
        return pl.DataFrame(schema=schema), weeks
    total = (
        wait_spell_counts(pl.concat(parts).lazy(), _TTS_COLS)
        .filter(pl.col(SPELLS_N) != 0)
        .select(_TTS_COUNT_COLS)
        .collect()
        .sort(_TTS_COUNT_COLS, nulls_last=True)
    )
    return total, weeks


def build_metric_tables(
    con: duckdb.DuckDBPyConnection,
    *,
    jobs: pl.DataFrame,
    pending: pl.DataFrame,
    occupancy: pl.DataFrame,
    shares: pl.DataFrame,
    nodes: pl.DataFrame,
    as_of: pl.DataFrame,
    slurmd_maps: pl.DataFrame | None = None,
    pod_jobs: pl.DataFrame | None = None,
    every: str = BUILD_CHUNK,
    rows: int = ROW_CHUNK,
    spells: Callable[[pl.DataFrame], None] | None = None,
    days: Mapping[str, set[dt.date]] | None = None,
    wait_keys: pl.DataFrame | None = None,
    holds: pl.DataFrame | None = None,
    loss_policy: LossPolicyOf | None = None,
) -> dict[str, pl.DataFrame]:
    """Compute the metric-engine tables that are not time-keyed, for every cluster with data.

    The time-keyed tables (waterfall, GPU activity, telemetry summaries) come from
    :func:`pipelines.analytics.windows.window_tables`, for a full and an incremental build alike.

    Args:
        con: warehouse connection (DCGM samples and Slurm node events are read from it).
        jobs: ``core.jobs`` rows (attempts).
        pending: never-started rows: ``cluster, source, job_id, partition, team, req_gpus,
            submit_at, eligible_at, end_at, state``.
        occupancy: ``analytics.occupancy_hourly`` rows (capacity and down per cluster-hour).
        shares: registry ``team, share``.
        nodes: ``core.nodes`` (for racks).
        as_of: ``cluster, as_of``.
        slurmd_maps: the slurmd node maps (:data:`pipelines.core.slurm_on_k8s.SLURMD_MAP_COLUMNS`)
            of Slurm clusters run in Kubernetes pods: an XID on a slurmd pod's GPU counts on
            the mapped Slurm node (:func:`_xid_events`), never on the Kubernetes host.
        pod_jobs: the pod lives with their nodes: an XID named by the exporter's pod is its
            GPU's pod's node (:func:`_xid_events`).
        every: the unit of hours the hourly fair shares are computed in
            (:func:`pipelines.analytics.chunks.by_hour_chunks`; default one cluster-month).
        rows: attempts per part of ``analytics.time_to_start_jobs`` (one wait spell per
            attempt, :func:`metrics.wait_spells`: each spell depends on its own row alone; a
            het job's components are first made one row, :func:`metrics.het_jobs.
            het_wait_units`, after the Slurm allocation of the components as a unit).
        spells: where the parts of ``analytics.time_to_start_jobs`` go, in table order (per
            cluster: its attempts' spells ``rows`` attempts at a time, then its never-started
            jobs' spells), each as soon as it is computed; the rows are then not returned.
            None: they are concatenated and returned.
        days: an incremental plan's cluster-days (None: a full build): the hourly fair shares
            (water-filling, hour by hour) are computed for the hours on those days only, and
            the stored rows of every other day are read back (:data:`FAIR_SHARE_TABLE`): each
            hour's shares read only the attempts and waits touching it and the cut-off, and
            the plan's days hold every hour where any of them changed. Likewise the daily
            node signals (:data:`NODE_SIGNALS_TABLE`) of the attempts that started on those
            days.
        wait_keys: with ``days``, ``cluster, job_id`` of the jobs whose wait spells may differ
            from the stored ones (:func:`pipelines.analytics.incremental.wait_keys`; a het job
            by its leader ``H+0``, whose components wait as one spell): only
            their spells are computed (and given to ``spells``), and the spell counts
            (:data:`TTS_COUNTS_TABLE`) are the stored ones with those jobs' stored spells
            taken out and their new ones put in (where those disagree, a count below zero,
            every spell is counted again). None: every spell is computed and counted.
        holds: the pieces of held GPUs of the attempts that did not hold ``gpus`` over their
            span (:attr:`pipelines.core.CoreFrames.holds`): the hourly fair shares' usage
            spreads them (METRICS.md "GPU holding"); None: none.
        loss_policy: cluster → its :class:`~metrics.waterfall.LossPolicy`, for the lost
            GPU-seconds of the node signals (:func:`loss_policy_of`; the waterfall's must be
            the same). None: ``whole_attempt`` everywhere.

    Returns:
        Frames by table name: ``analytics.time_to_start_jobs`` (unless ``spells`` is given),
        ``analytics.time_to_start_km``, :data:`TTS_COUNTS_TABLE` (with ``wait_keys``, also
        :data:`TTS_COUNT_WEEKS`, not a table: the weeks whose counts may have changed),
        ``analytics.fairness_weekly``,
        ``analytics.fairness_summary_weekly``, ``analytics.node_reliability``,
        :data:`FAIR_SHARE_TABLE` (the hours computed: every hour, or those on ``days``),
        :data:`NODE_SIGNALS_TABLE` (the days computed: every day, or ``days``); and
        ``fair_share_hourly`` (not a table: the :func:`metrics.fairness.fair_share_hourly` rows
        of every hour, ``pool`` keyed, behind the fairness tables, which the policy-impact KPIs
        read).

    Raises:
        ValueError: ``wait_keys`` and ``days`` without ``spells`` (the table would hold the
            keys' spells alone).
    """
    xid = _xid_events(con, slurmd_maps, pod_jobs, nodes)
    down = _down_intervals(con)
    spell_parts: list[pl.DataFrame] = []
    emit = spells or spell_parts.append
    tts, fair_hourly, rel, signals, spell_counts = [], [], [], [], []
    reliable: list[tuple[str, dt.datetime]] = []
    counted: list[str] = []
    keyed = wait_keys is not None and days is not None
    if keyed:
        # the spells of the keys alone: they must go to ``spells``, never returned as the table
        if wait_keys is None or spells is None:
            raise ValueError("build_metric_tables: wait_keys needs spells (the keys' rows)")
        keys = wait_keys.select(pl.col("cluster", "job_id").cast(pl.String())).unique()

        # only the rows of the jobs whose spells may differ: a spell is a function of its own
        # row (a het job's: its components') and the cut-off alone (the others' are in the
        # stored counts). Not an eager semi join: with polars 2.1 that of a year's 2.15M
        # attempts with 30,000 keys raised the process's peak by 188 MiB, a lookup of the job
        # ids first by 30.
        spell_jobs, spell_pending = _of_wait_units(jobs, keys), _of_wait_units(pending, keys)
    else:
        spell_jobs, spell_pending = jobs, pending
    # a het job's components wait as one job (METRICS.md "Time to start"): one spell, its
    # leader's key, before the attempts are cut into ranges (its rows may lie in two)
    spell_jobs, spell_pending = _wait_units(spell_jobs, spell_pending)
    cuts = [
        (str(c), cut)
        for c, cut in with_spells(as_of, occupancy).select("cluster", "as_of").iter_rows()
    ]
    placeholder = not cuts
    if placeholder:
        # Nothing to compute: run once on one empty hour so every table keeps its columns.
        epoch = dt.datetime(2000, 1, 3, tzinfo=dt.UTC)
        cuts = [("", epoch)]
        occupancy = pl.DataFrame(
            {"cluster": [""], "hour": [epoch], "capacity_gpu_s": [0.0], "down_gpu_s": [0.0],
             "planned_down_gpu_s": [0.0]}
        ).with_columns(pl.col("hour").dt.cast_time_unit("us"))  # fmt: skip
    for c, cut in cuts:
        assert isinstance(cut, dt.datetime)
        # Lazy filters: no copy of the cluster's attempts is held beside ``jobs``.
        j = jobs.lazy().filter(pl.col("cluster") == c)
        p = pending.lazy().filter(pl.col("cluster") == c)
        cap = occupancy.filter(pl.col("cluster") == c).select(
            "cluster", "hour", "capacity_gpu_s", "down_gpu_s", "planned_down_gpu_s"
        )
        if cap.height == 0:
            continue
        held = None if holds is None else holds.filter(pl.col("cluster") == c)
        # the cluster's pieces of held GPUs; None where it has none (Slurm): nothing is joined
        pieces = held.lazy() if held is not None and held.height else None
        fair_hourly.append(
            _fair_share_hourly(j, p, on_days(cap, days), shares, cut, every, pieces)
        )  # fmt: skip
        started = j if days is None else j.filter(in_days("start_at", days.get(c, set())))
        signals.append(
            node_signals(
                started,
                cut,
                xid_events=xid.filter(pl.col("cluster") == c).lazy(),
                policy=loss_policy(c) if loss_policy is not None else None,
                daily=True,
                holds=pieces,
            ).collect()
        )
        reliable.append((c, cut))
        # The Kaplan–Meier percentiles read the spells' counts only: the cluster's spells are
        # emitted a range of attempts at a time and never held at once.
        spell_counts.append(_cluster_spell_counts(c, cut, spell_jobs, spell_pending, rows, emit))
        counted.append(c)
    compact, count_weeks = _spell_counts(con, spell_counts, wait_keys if keyed else None)
    if count_weeks is not None and compact.height and compact[SPELLS_N].min() < 0:  # type: ignore[operator]
        # The stored counts disagree with the stored spells (a guard: both are written bit for
        # bit, pipelines.analytics.build._EXACT_TABLES, so only a table changed outside the
        # build gets here): every spell counted again, as a full build counts them.
        all_jobs, all_pending = _wait_units(jobs, pending)
        compact = _spell_counts(
            con,
            [
                _cluster_spell_counts(c, cut, all_jobs, all_pending, rows)
                for c, cut in cuts
                if c in counted
            ],
            None,
        )[0]
        count_weeks = None
    for c in counted:
        own_counts = compact.lazy().filter(pl.col("cluster") == c)
        for by in _TTS_GROUPS:
            # A NULL partition or team is its own group, labelled, so that NULL keeps meaning
            # "all" in the summary.
            labelled = own_counts.with_columns(
                pl.col(g).cast(pl.String).fill_null("(none)")
                for g in by
                if g in ("partition", "team")
            )
            if "week" in by:
                # A spell without an eligible time has no week: it is counted (excluded) in
                # the groups without weeks, not as a week of its own, whose NULL reads "all".
                labelled = labelled.filter(pl.col("week").is_not_null())
            tts.append(wait_percentiles_km(labelled, by=by, weight=SPELLS_N).collect())
    # Node reliability sums each node's days: those just computed, and in an incremental
    # build the stored rows of the other days.
    fresh_signals = _concat(signals)
    if fresh_signals.width:
        fresh_signals = fresh_signals.sort("cluster", "host", "day")
    every_day = with_stored_days(con, NODE_SIGNALS_TABLE, fresh_signals, days, time_col="day")
    for c, cut in reliable:
        rel.append(
            node_reliability(
                None, cut,
                signals=every_day.lazy().filter(pl.col("cluster") == c),
                xid_events=xid.filter(pl.col("cluster") == c).lazy(),
                down_intervals=down.filter(pl.col("cluster") == c).lazy(),
                nodes=nodes.filter(pl.col("cluster") == c).select("cluster", "host", "rack").lazy(),
            ).collect()
        )  # fmt: skip
    del every_day
    out: dict[str, pl.DataFrame] = {}
    out[NODE_SIGNALS_TABLE] = fresh_signals
    if spells is None:
        out["analytics.time_to_start_jobs"] = _concat(spell_parts)
    km = _concat(tts)
    for col in _TTS_COLS:
        if col not in km.columns and km.width:
            km = km.with_columns(pl.lit(None).alias(col))
    out["analytics.time_to_start_km"] = km
    out[TTS_COUNTS_TABLE] = compact
    if count_weeks is not None:
        out[TTS_COUNT_WEEKS] = count_weeks
    fresh = _concat(fair_hourly)
    if fresh.width:
        fresh = fresh.rename({"pool": "cluster"}).sort(_FAIR_ORDER)
    out[FAIR_SHARE_TABLE] = fresh
    fh = with_stored_days(con, FAIR_SHARE_TABLE, fresh, days, order=_FAIR_ORDER)
    if fh.width:
        fh = fh.rename({"cluster": "pool"})
    weekly, summary = [], []
    if fh.width:
        for window in ("week", "rolling_28d"):
            per_cluster = entitlement(fh.lazy(), window=window, by_pool=True).collect()  # type: ignore[arg-type]
            fleet = entitlement(fh.lazy(), window=window, by_pool=False).collect()  # type: ignore[arg-type]
            if window == "rolling_28d":  # one rolling window per week end (Monday 00:00 UTC)
                per_cluster = per_cluster.filter(pl.col("window_end").dt.weekday() == 1)
                fleet = fleet.filter(pl.col("window_end").dt.weekday() == 1)
            per_cluster = per_cluster.rename({"pool": "cluster"})
            fleet = fleet.with_columns(pl.lit(None, dtype=pl.String()).alias("cluster"))
            for ent in (per_cluster, fleet):
                weekly.append(ent.with_columns(pl.lit(window).alias("window")))
            summary.append(
                fairness_summary(per_cluster.rename({"cluster": "pool"}).lazy())
                .collect()
                .rename({"pool": "cluster"})
                .with_columns(pl.lit(window).alias("window"))
            )
            summary.append(
                fairness_summary(fleet.drop("cluster").lazy())
                .collect()
                .with_columns(
                    pl.lit(None, dtype=pl.String()).alias("cluster"), pl.lit(window).alias("window")
                )
            )
    out["analytics.fairness_weekly"] = _concat(weekly)
    out["analytics.fairness_summary_weekly"] = _concat(summary)
    out["analytics.node_reliability"] = _concat(rel)
    out["fair_share_hourly"] = fh
    if placeholder:
        # No cluster left to count: every stored count goes (the whole table compared with
        # none), not only those of the weeks the keys' spells touch.
        out.pop(TTS_COUNT_WEEKS, None)
        out = {table: frame.clear() for table, frame in out.items()}
    return out
