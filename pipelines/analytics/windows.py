"""The time-keyed tables for a set of cluster-days: one path for the full and the incremental build.

:func:`window_tables` computes ``analytics.occupancy_hourly``, ``analytics.gpu_waterfall_hourly``,
``analytics.gpu_activity`` and ``analytics.job_gpu_summary``. A full build asks for every day
(``days=None``: the warehouse's telemetry is read once for all clusters); an incremental build
asks for the affected cluster-days of its plan (:func:`pipelines.analytics.incremental.plan_build`:
each cluster's telemetry is cut to the window those days and the attempts overlapping them
cover, :func:`telemetry_window`). Either way each cluster goes through the same steps: its
occupancy hours, the waterfall over them (with the one hourly-DCGM fallback rule), the
per-GPU activity, and the per-attempt telemetry summary.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import duckdb
import polars as pl

from metrics import LossPolicy, gpu_waterfall_hourly
from pipelines.analytics.chunks import (
    BUILD_CHUNK,
    ROW_CHUNK,
    by_hour_chunks,
    in_days,
    of_keys,
    reach_end,
    touching,
)
from pipelines.analytics.dcgm_hourly_metrics import hourly_activity, labelled_hours
from pipelines.analytics.incremental import with_spells
from pipelines.analytics.metrics_build import (
    _ONE_JOB,
    LossPolicyOf,
    _activity,
    _hourly_xid_hours,
    _xid_events,
    attributed_gpu_buckets,
    gpu_activity,
    hourly_xid_attempts,
    job_gpu_summary,
    job_gpu_summary_ranges,
)
from pipelines.core import with_as_of
from pipelines.core.slurm_on_k8s import LENT_CAPACITY_SOURCE
from pipelines.warehouse import release_memory, run_named, table_exists
from pipelines.warehouse.sql import load_sql

__all__ = [
    "WINDOW_TABLES",
    "WindowFrames",
    "affected_window",
    "attributed_activity_elsewhere",
    "in_days",
    "telemetry_window",
    "window_tables",
    "with_hourly_rule_days",
]

#: The time-keyed tables, in the order :func:`window_tables` returns them.
WINDOW_TABLES = (
    "analytics.occupancy_hourly",
    "analytics.gpu_waterfall_hourly",
    "analytics.gpu_activity",
    "analytics.job_gpu_summary",
)

_DAY = dt.timedelta(days=1)
#: The hour a build without any data cut-off computes on (so every table keeps its columns).
_PLACEHOLDER_HOUR = dt.datetime(2000, 1, 3, tzinfo=dt.UTC)


@dataclass
class WindowFrames:
    """What :func:`window_tables` computed.

    Attributes:
        tables: frames by table name (:data:`WINDOW_TABLES`), each with ``as_of``; with
            ``days``, only the rows of those cluster-days (``job_gpu_summary``: of ``job_keys``).
        job_keys: ``cluster, job_id`` whose ``job_gpu_summary`` rows ``tables`` holds in full;
            None for a full build (every job).
    """

    tables: dict[str, pl.DataFrame]
    job_keys: pl.DataFrame | None


def affected_window(days: set[dt.date]) -> tuple[dt.datetime, dt.datetime]:
    """[first affected day 00:00 UTC, last affected day + 1 day) as UTC datetimes."""
    lo, hi = min(days), max(days)
    return (
        dt.datetime(lo.year, lo.month, lo.day, tzinfo=dt.UTC),
        dt.datetime(hi.year, hi.month, hi.day, tzinfo=dt.UTC) + _DAY,
    )


def attributed_activity_elsewhere(
    con: duckdb.DuckDBPyConnection, cluster: str, days: set[dt.date]
) -> bool:
    """Whether the stored ``analytics.gpu_activity`` has 5-minute activity attributed to one
    attempt of ``cluster`` on a UTC day outside ``days`` (False when the table is absent).

    With the window's own activity this decides, for a set of days, the one hourly-DCGM
    fallback rule of :func:`window_tables`: a cluster whose attributed 5-minute activity is
    empty over all time takes its hourly aggregates (3600 s buckets).
    """
    if not table_exists(con, "analytics.gpu_activity"):
        return False
    found = run_named(
        con,
        "analytics/attributed_activity_outside_days",
        {"cluster": cluster, "one_job": list(_ONE_JOB), "days": sorted(days)},
    )
    return bool(found["n"][0])


def _partners(slurmd_maps: pl.DataFrame | None) -> dict[str, tuple[str, ...]]:
    """Slurm cluster → the Kubernetes clusters whose slurmd pods run it (their GPUs' samples
    are the Slurm cluster's), from the slurmd maps (``cluster, k8s_cluster``)."""
    out: dict[str, tuple[str, ...]] = {}
    if slurmd_maps is not None and slurmd_maps.height:
        pairs = slurmd_maps.select("cluster", "k8s_cluster").unique().sort("cluster", "k8s_cluster")
        for c, k in pairs.iter_rows():
            out[c] = (*out.get(c, ()), k)
    return out


def with_hourly_rule_days(
    con: duckdb.DuckDBPyConnection,
    days: Mapping[str, set[dt.date]],
    occupancy: pl.DataFrame,
    slurmd_maps: pl.DataFrame | None = None,
) -> dict[str, set[dt.date]]:
    """An incremental build's cluster-days (``days``), with every day of ``occupancy`` (``cluster,
    hour``) of each cluster whose hourly-DCGM rule may turn over.

    The rule (:func:`window_tables`) takes a cluster's hourly aggregates for its waterfall where
    its attributed 5-minute activity is empty over all time, so it holds for all of the
    cluster's days at once: where the stored activity of the days outside ``days`` is empty
    (:func:`attributed_activity_elsewhere`), what the build computes for ``days`` decides it for
    every day. It may then turn over when the cluster has labelled hourly rows and either the
    stored activity inside ``days`` is not empty (it may be gone now: a deleted or re-loaded
    5-minute load, a job no longer there to attribute it to) or 5-minute samples of the cluster
    (or of the Kubernetes clusters whose slurmd pods run it, ``slurmd_maps``) lie in the days'
    window (activity may be attributed now where there was none). Such a cluster's
    every day is rewritten; the waterfall of a day outside ``days`` is otherwise left as stored.
    """
    out = {c: set(ds) for c, ds in days.items()}
    partners = _partners(slurmd_maps)
    for c, ds in days.items():
        if not ds or not labelled_hours(con, c) or attributed_activity_elsewhere(con, c, ds):
            continue
        lo, hi = affected_window(ds)
        turns = attributed_activity_elsewhere(con, c, set()) or (
            table_exists(con, "raw.dcgm_samples")
            and bool(
                run_named(
                    con,
                    "analytics/dcgm_samples_in_window",
                    {"clusters": [c, *partners.get(c, ())], "lo": lo, "hi": hi},
                )["found"][0]
            )
        )
        if turns:
            hours = occupancy.filter(pl.col("cluster") == c)["hour"]
            out[c] |= set(hours.dt.convert_time_zone("UTC").dt.date().unique().to_list())
    return out


def telemetry_window(
    con: duckdb.DuckDBPyConnection,
    cluster: str,
    lo: dt.datetime,
    hi: dt.datetime,
    *,
    margin: dt.timedelta = _DAY,
    partners: tuple[str, ...] = (),
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose ``raw.dcgm_samples`` holds one cluster's samples in
    [lo − margin, hi), and whose ``raw.dcgm_hourly`` (when the warehouse has it) holds the
    cluster's labelled hourly aggregates with samples whose ``hour`` lies in the same window,
    with the columns :mod:`pipelines.analytics.dcgm_hourly_metrics` reads (``cluster, hour,
    hpc_job, samples, gr_engine_active_avg``: ``sql/analytics/dcgm_hourly_window.sql``) — the
    input the telemetry functions of :mod:`pipelines.analytics.metrics_build` and
    :func:`pipelines.analytics.dcgm_hourly_metrics.hourly_activity` read, cut to a window. The
    margin gives the XID change detection (``lag`` over each GPU's samples) the sample before
    the window; a last-XID series (``DCGM_FI_DEV_XID_ERRORS``) with no valued sample in the
    margin before ``lo`` also gets its last sample and last valued sample before the margin,
    however old (``sql/analytics/xid_samples_before.sql``), so a value held over days without
    a scrape is no new XID, as in a full build. Beside the hourly cut, its rows holding an XID
    (``sql/analytics/xid_hourly_rows.sql``, from an hour before the margin on: each is compared
    with the GPU's hour before) are the table
    :data:`pipelines.analytics.metrics_build.HOURLY_XID_TABLE`. ``partners``: Kubernetes
    clusters whose samples (slurmd pods' GPUs, moved to ``cluster``'s Slurm nodes by
    :func:`pipelines.core.slurm_on_k8s.rehome_slurmd_dcgm`) are read with ``cluster``'s."""
    frame: pl.DataFrame = (
        con.sql(
            "SELECT * FROM raw.dcgm_samples WHERE list_contains($cs, cluster) "
            "AND ts >= $lo AND ts < $hi",
            params={"cs": [cluster, *partners], "lo": lo - margin, "hi": hi},
        ).arrow()
        if partners
        else con.sql(
            "SELECT * FROM raw.dcgm_samples WHERE cluster = $c AND ts >= $lo AND ts < $hi",
            params={"c": cluster, "lo": lo - margin, "hi": hi},
        ).arrow()
    )
    mem = duckdb.connect()
    mem.execute("SET TimeZone = 'UTC'")
    mem.execute("CREATE SCHEMA raw")
    mem.register("_samples", frame)
    mem.execute("CREATE TABLE raw.dcgm_samples AS SELECT * FROM _samples")
    mem.unregister("_samples")
    # A last-XID series with no valued sample before lo is compared with its samples before the
    # margin, however old (a GPU not scraped for days still holds its last XID: no new event).
    gpus = run_named(mem, "analytics/xid_series_without_prior", {"lo": lo})["gpu_uuid"]
    if gpus.len():
        before = con.sql(
            load_sql("analytics/xid_samples_before"),
            params={"cs": [cluster, *partners], "gpus": gpus.to_list(), "before": lo - margin},
        ).arrow()
        mem.register("_before", before)
        mem.execute("INSERT INTO raw.dcgm_samples SELECT * FROM _before")
        mem.unregister("_before")
    if table_exists(con, "raw.dcgm_hourly"):  # hourly aggregates (the scale fleet's telemetry)
        # Only what the window's readers take: on the year of 10,000 GPUs' new day every row
        # and column of the window rose 229 MB and took 0.56 s, these 89 MB and 0.30 s
        # (BENCHMARKS.md, "The new day reads what it uses").
        hourly = con.sql(
            load_sql("analytics/dcgm_hourly_window"),
            params={"c": cluster, "lo": lo - margin, "hi": hi},
        ).arrow()
        mem.register("_hourly", hourly)
        mem.execute("CREATE TABLE raw.dcgm_hourly AS SELECT * FROM _hourly")
        mem.unregister("_hourly")
        # ... and its rows holding an XID (few), an hour earlier too: each hour's XID is compared
        # with the GPU's hour before (metrics_build._hourly_xid_events)
        xids = run_named(
            con,
            "analytics/xid_hourly_rows",
            {"cluster": cluster, "lo": lo - margin - dt.timedelta(hours=1), "hi": hi},
        )
        mem.register("_xids", xids)
        mem.execute("CREATE TABLE raw.dcgm_hourly_xid AS SELECT * FROM _xids")  # HOURLY_XID_TABLE
        mem.unregister("_xids")
    if table_exists(con, "raw.slurm_job_gres"):  # the per-job GPU index map (small)
        gres = con.sql(
            "SELECT * FROM raw.slurm_job_gres WHERE cluster = $c", params={"c": cluster}
        ).arrow()
        mem.register("_gres", gres)
        mem.execute("CREATE TABLE raw.slurm_job_gres AS SELECT * FROM _gres")
        mem.unregister("_gres")
    return mem


def _overlapping(
    jobs: pl.DataFrame,
    days: set[dt.date],
    cut: dt.datetime,
    *,
    from_col: str,
    holds: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Rows whose span [from_col (or earlier waits), end or ``cut``] touches one of ``days``
    (the span's end no earlier than ``start_at``: an attempt recorded as ending before it
    started still waited until its start), in ``jobs``' order. With ``holds`` (pieces of held
    GPUs, :attr:`pipelines.core.CoreFrames.holds`), an attempt's end is its reach
    (:func:`pipelines.analytics.chunks.reach_end`: a piece held past ``end_at``, as through an
    eviction's grace period, counts on its days).

    A span [lo, hi] (UTC dates) touches a day when the first of ``days`` on or after lo is no
    later than hi: one binary search per row over the sorted days, so no row's days are listed
    (a year of attempts spans tens of millions of days) and only the rows kept are copied."""
    starts = [c for c in ("submit_at", "eligible_at", "start_at") if c in jobs.columns]
    lo = pl.min_horizontal(*starts) if from_col == "wait" else pl.col(from_col)
    reached = (
        jobs
        if holds is None or holds.height == 0
        else reach_end(jobs.lazy(), holds.lazy()).collect()
    )
    hi = pl.coalesce(pl.col("end_at" if reached is jobs else "_reach_at"), pl.lit(cut))
    if "start_at" in jobs.columns:
        hi = pl.max_horizontal(hi, "start_at")
    ordered = pl.Series("_day", sorted(days), dtype=pl.Date())
    if ordered.len() == 0:
        return jobs.clear()
    span = reached.select(
        lo.dt.convert_time_zone("UTC").dt.date().alias("_lo"),
        hi.dt.convert_time_zone("UTC").dt.date().alias("_hi"),
    )
    at = ordered.search_sorted(span["_lo"], side="left")
    first = ordered.gather(at.clip(upper_bound=ordered.len() - 1))
    touches = span["_lo"].is_not_null() & (at < ordered.len()) & (first <= span["_hi"])
    return jobs.filter(touches.fill_null(False))


#: The end an open attempt's GPU summary reads to (:func:`_cluster_scope`): after every sample.
_OPEN_END = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)


def _days_end(days: set[dt.date]) -> dt.datetime:
    """The end (UTC midnight after) of the last of ``days``.

    Raises:
        ValueError: ``days`` is empty."""
    return dt.datetime.combine(max(days) + _DAY, dt.time(), tzinfo=dt.UTC)


@dataclass
class _Scope:
    """One read of the telemetry: the connection holding it, the clusters (with cut-off and
    days, None = every day) it serves, and the jobs and nodes attribution sees."""

    telemetry: duckdb.DuckDBPyConnection
    clusters: list[tuple[str, dt.datetime, set[dt.date] | None]]
    jobs: pl.DataFrame
    nodes: pl.DataFrame
    summary_jobs: pl.DataFrame
    keys: pl.DataFrame | None = None


def _concat(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()


def _hours_and_cuts(occupancy: pl.DataFrame, as_of: pl.DataFrame) -> list[tuple[str, dt.datetime]]:
    """``(cluster, cut-off)`` of the clusters with a cut-off (``as_of``: ``cluster, as_of``) and
    occupancy hours (``occupancy``: ``cluster, hour, …``), in ``as_of``'s order: a full build's
    window reads every sample once for them and keeps every cluster's activity; with none, it
    keeps nothing (:func:`_full_scope`'s placeholder). The plan's and the metric engine's rule
    (:func:`pipelines.analytics.incremental.with_spells`)."""
    return [
        (str(c), cut)
        for c, cut in with_spells(as_of, occupancy).select("cluster", "as_of").iter_rows()
    ]


def _full_scope(
    con: duckdb.DuckDBPyConnection,
    jobs: pl.DataFrame,
    occupancy: pl.DataFrame,
    as_of: pl.DataFrame,
    nodes: pl.DataFrame,
) -> tuple[_Scope, pl.DataFrame, bool]:
    """Every day of every cluster with a cut-off and occupancy hours (:func:`_hours_and_cuts`),
    read from ``con`` at once (with no such cluster: one placeholder hour, whose results are
    cleared)."""
    clusters: list[tuple[str, dt.datetime, set[dt.date] | None]] = [
        (c, cut, None) for c, cut in _hours_and_cuts(occupancy, as_of)
    ]
    placeholder = not clusters
    if placeholder:
        clusters = [("", _PLACEHOLDER_HOUR, None)]
        occupancy = pl.DataFrame(
            {"cluster": [""], "hour": [_PLACEHOLDER_HOUR], "capacity_gpu_s": [0.0],
             "down_gpu_s": [0.0], "planned_down_gpu_s": [0.0]}
        ).with_columns(pl.col("hour").dt.cast_time_unit("us"))  # fmt: skip
    return _Scope(con, clusters, jobs, nodes, jobs), occupancy, placeholder


def _cluster_scope(
    con: duckdb.DuckDBPyConnection,
    c: str,
    days: set[dt.date],
    cut: dt.datetime,
    jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    changed_keys: pl.DataFrame | None,
    partners: tuple[str, ...] = (),
) -> _Scope:
    """One cluster's affected ``days``: its telemetry cut to the window the days and the
    attempts overlapping them (and the changed jobs) cover."""
    w0, w1 = affected_window(days)
    jobs_c = jobs.filter(pl.col("cluster") == c)
    j = _overlapping(jobs_c, days, cut, from_col="wait")
    # An attempt still open at the cut-off owns its GPUs' samples after it too (a full build
    # attributes every sample), so its GPU summary can change on any later day: it runs, for
    # the summary, to no end.
    run = _overlapping(
        jobs_c.filter(pl.col("start_at").is_not_null()), days, _OPEN_END, from_col="start_at"
    )
    keys = run.select("cluster", "job_id")
    if changed_keys is not None:
        keys = pl.concat([keys, changed_keys.filter(pl.col("cluster") == c)])
    keys = keys.unique()
    summ_jobs = of_keys(jobs.lazy(), keys, ["cluster", "job_id"]).collect()
    ends = pl.concat(
        [
            j.select("start_at", pl.coalesce("end_at", pl.lit(cut)).alias("_end")),
            summ_jobs.select("start_at", pl.coalesce("end_at", pl.lit(_OPEN_END)).alias("_end")),
        ]
    ).select(pl.col("start_at").min().alias("lo"), pl.col("_end").max().alias("hi"))
    lo, hi = ends.row(0)
    t_lo = min(w0, lo.replace(minute=0, second=0, microsecond=0)) if lo else w0
    t_hi = max(w1, hi + dt.timedelta(minutes=5)) if hi else w1
    return _Scope(
        telemetry_window(con, c, t_lo, t_hi, partners=partners),
        [(c, cut, days)],
        jobs_c,
        nodes.filter(pl.col("cluster") == c),
        summ_jobs,
        keys,
    )


#: The activity buckets in [lo, hi) the waterfall of that window reads.
_Activity = Callable[[dt.datetime, dt.datetime], pl.LazyFrame]


def _in_window(activity: pl.DataFrame) -> _Activity:
    """``activity``'s buckets in a window."""
    return lambda lo, hi: activity.lazy().filter((pl.col("bucket") >= lo) & (pl.col("bucket") < hi))


def _hourly_in_window(con: duckdb.DuckDBPyConnection, starts: pl.DataFrame, c: str) -> _Activity:
    """Cluster ``c``'s hourly-aggregate activity in a window, read from ``con`` when asked
    (:func:`~pipelines.analytics.dcgm_hourly_metrics.hourly_activity`)."""

    def read(lo: dt.datetime, hi: dt.datetime) -> pl.LazyFrame:
        frame = hourly_activity(con, starts, cluster=c, window=(lo, hi))
        release_memory(con)  # the blocks just read, not kept while polars computes the unit
        return frame.lazy()

    return read


def _waterfall(
    jobs: pl.LazyFrame,
    occupancy: pl.DataFrame,
    cut: dt.datetime,
    *,
    pending: pl.LazyFrame,
    activity: _Activity,
    bucket_s: float,
    xid: pl.LazyFrame,
    idle_threshold: float,
    every: str,
    nodes: pl.LazyFrame,
    holds: pl.LazyFrame | None = None,
    policy: LossPolicy | None = None,
) -> pl.DataFrame:
    """:func:`metrics.gpu_waterfall_hourly` of one cluster's ``occupancy`` hours, one unit of
    hours at a time (:func:`pipelines.analytics.chunks.by_hour_chunks`): the waterfall of a
    window is computed from its capacity rows, the attempts and waits touching it and the
    activity buckets inside it (each attempt's outcome depends on that attempt alone). The
    hours of a Slurm cluster whose capacity its slurmd pods lend (``capacity_source`` =
    :data:`pipelines.core.slurm_on_k8s.LENT_CAPACITY_SOURCE`) have their allocated leaves cut
    to that occupancy row's ``allocated_gpu_s`` (``allocated_cap``). ``nodes`` (the cluster's
    ``core.nodes`` rows) sets its gang width: waits asking more GPUs than its largest node
    are gangs' (the ``held`` row's ``gang_gpu_s``). ``holds``: the cluster's pieces of held
    GPUs (:attr:`pipelines.core.CoreFrames.holds`; None: none)."""

    def unit(hours: pl.DataFrame, c: str, lo: dt.datetime, hi: dt.datetime) -> pl.DataFrame:
        return gpu_waterfall_hourly(
            touching(jobs, c, lo, hi, holds=holds),
            hours.select(
                "cluster", "hour", "capacity_gpu_s", "down_gpu_s", "planned_down_gpu_s"
            ).lazy(),
            cut,
            pending=touching(pending, c, lo, hi),
            activity=activity(lo, hi),
            activity_bucket_s=bucket_s,
            xid_events=xid,
            policy=policy,
            idle_threshold=idle_threshold,
            allocated_cap=lent,
            nodes=nodes,
            holds=holds,
        ).collect()

    # A Slurm cluster run in slurmd pods is allocated only what its pods lend it
    # (pipelines.core.slurm_on_k8s.lend_capacity): its waterfall is cut to that allocation.
    lent = (
        occupancy.filter(pl.col("capacity_source") == LENT_CAPACITY_SOURCE)
        .select("cluster", "hour", "allocated_gpu_s")
        .lazy()
        if "capacity_source" in occupancy.columns
        else None
    )
    return by_hour_chunks(occupancy, unit, every)


def window_tables(
    con: duckdb.DuckDBPyConnection,
    *,
    jobs: pl.DataFrame,
    pending: pl.DataFrame,
    occupancy: pl.DataFrame,
    as_of: pl.DataFrame,
    pod_jobs: pl.DataFrame,
    nodes: pl.DataFrame,
    idle_threshold: float,
    days: Mapping[str, set[dt.date]] | None = None,
    changed_keys: pl.DataFrame | None = None,
    slurmd_maps: pl.DataFrame | None = None,
    every: str = BUILD_CHUNK,
    rows: int = ROW_CHUNK,
    summary: Callable[[pl.DataFrame], None] | None = None,
    holds: pl.DataFrame | None = None,
    loss_policy: LossPolicyOf | None = None,
) -> WindowFrames:
    """The time-keyed tables (:data:`WINDOW_TABLES`) of the given cluster-days.

    Per cluster (with ``days``, each of its clusters; without, those with a cut-off and
    occupancy hours, the telemetry read once for all): ``occupancy_hourly`` is the cluster's
    hours of ``occupancy`` on the days; for a cluster with a cut-off, the waterfall is
    :func:`metrics.gpu_waterfall_hourly` over those hours (its
    capacity rows define the output hours) for the jobs whose span touches the days, with
    activity and XID events attributed among *all* the cluster's jobs (a sample's owner is
    decided among every job on its node); a cluster whose attributed 5-minute activity is
    empty over all time (the window's, and with ``days`` the stored other days',
    :func:`attributed_activity_elsewhere`) takes its hourly aggregates in 3600 s buckets
    (:func:`~pipelines.analytics.dcgm_hourly_metrics.hourly_activity`); ``gpu_activity`` is
    :func:`~pipelines.analytics.metrics_build.gpu_activity` on the days; ``job_gpu_summary``
    is :func:`~pipelines.analytics.metrics_build.job_gpu_summary` for every attempt of a job
    (cluster, job_id) with an attempt running on one of the days (one still open at the
    cut-off runs on every day after its start: it owns its GPUs' later samples too), or in
    ``changed_keys``.

    Args:
        con: the warehouse (``raw.dcgm_samples``, ``raw.dcgm_hourly``, ``raw.slurm_job_gres``
            and, with ``days``, the stored ``analytics.gpu_activity`` are read).
        jobs: ``core.jobs`` rows (attempts); pending: never-started rows.
        occupancy: ``analytics.occupancy_hourly`` of every hour, with ``as_of``.
        as_of: ``cluster, as_of`` (UTC cut-offs; NULL or absent: the cluster has no attempt,
            and with ``days`` its days are read up to their end, :func:`_days_end`, as long as
            some cluster has a cut-off and occupancy hours, :func:`_hours_and_cuts`).
        pod_jobs: ``cluster, namespace, pod, uid, job_id, pod_from``: the pod lives
            (:func:`metrics.attribution.attribute_samples`).
        nodes: ``core.nodes``.
        idle_threshold: θ for ``allocated_idle`` and ``idle_gpu_s``.
        days: cluster → UTC days; None: every day of every cluster (a full build).
        changed_keys: ``cluster, job_id`` whose summary rows are recomputed whatever their days.
        slurmd_maps: the slurmd node maps of Slurm clusters run in Kubernetes pods
            (:data:`pipelines.core.slurm_on_k8s.SLURMD_MAP_COLUMNS`): their pods' telemetry is
            the Slurm cluster's (a Slurm cluster's window also reads its Kubernetes cluster's
            samples; only rows of the window's own cluster are kept). ``jobs`` should not hold
            the slurmd pods' own Kubernetes jobs.
        every: the unit of hours the waterfall is computed in, one at a time
            (:func:`pipelines.analytics.chunks.by_hour_chunks`; default one cluster-month).
        rows: attempts per range of ``job_gpu_summary`` when ``summary`` is given.
        summary: in a full build (``days`` None), receives ``job_gpu_summary`` ``rows``
            attempts at a time (:func:`~pipelines.analytics.metrics_build.job_gpu_summary_ranges`,
            without ``as_of``), each range before the next is computed, and the returned tables
            leave that table out; ignored with ``days``.
        holds: the pieces of held GPUs of the attempts that did not hold ``gpus`` over their
            span (:attr:`pipelines.core.CoreFrames.holds`): the waterfall spreads them
            (METRICS.md "GPU holding"), ``job_gpu_summary`` clips its buckets to them;
            None: none.
        loss_policy: cluster → its :class:`~metrics.waterfall.LossPolicy` for the waterfall's
            leaves 3–6 (:func:`~pipelines.analytics.metrics_build.loss_policy_of`); None:
            ``whole_attempt`` everywhere.

    Returns:
        The frames by table, and the job keys the summary covers (None for a full build).
    """
    all_hours = occupancy
    cuts = {c: a for c, a in as_of.iter_rows() if a is not None}
    if days is None:
        scope, occupancy, placeholder = _full_scope(con, jobs, occupancy, as_of, nodes)
        scopes = iter([scope])
    else:
        placeholder = False
        partners = _partners(slurmd_maps)
        # A cluster with telemetry and no attempt has no cut-off, yet a full build keeps its
        # GPU activity (every sample read at once) when some cluster has a cut-off and hours
        # (none: its placeholder keeps nothing): its days are then read up to their end.
        any_hours = bool(_hours_and_cuts(occupancy, as_of))
        scopes = (
            _cluster_scope(
                con, c, ds, cuts.get(c) or _days_end(ds), jobs, nodes, changed_keys,
                partners.get(c, ()),
            )
            for c, ds in sorted(days.items())
            if ds and (c in cuts or any_hours)
        )  # fmt: skip
    ranged = summary if days is None else None
    occ_parts, wf_parts, act_parts, sum_parts, key_parts = [], [], [], [], []
    for scope in scopes:
        mem = scope.telemetry
        try:
            buckets = attributed_gpu_buckets(
                mem, scope.jobs, pod_jobs, scope.nodes, slurmd_maps=slurmd_maps
            )
            if days is not None:  # a window holds its own cluster's rows only
                buckets = buckets.filter(pl.col("cluster") == scope.clusters[0][0])
            activity = _activity(mem, scope.jobs, pod_jobs, buckets=buckets)
            # the hourly aggregates' XID hours, read once for the events and the GPU summary
            xid_hours = _hourly_xid_hours(mem)
            xid = _xid_events(mem, slurmd_maps, pod_jobs, scope.nodes, xid_hours=xid_hours)
            for c, cut, cdays in scope.clusters:
                occ_c = occupancy.filter(pl.col("cluster") == c)
                # Lazy: no copy of the cluster's attempts is held beside ``jobs``.
                jobs_c = scope.jobs.lazy().filter(pl.col("cluster") == c)
                j = jobs_c
                if cdays is not None:
                    occ_c = occ_c.filter(in_days("hour", cdays))
                    j = _overlapping(
                        jobs_c.collect(), cdays, cut, from_col="wait",
                        holds=None if holds is None else holds.filter(pl.col("cluster") == c),
                    ).lazy()  # fmt: skip
                occ_parts.append(occ_c)
                five = activity.filter(pl.col("cluster") == c)
                wf_activity = _in_window(five)
                bucket_s = 300.0
                # The one hourly-DCGM rule: hourly aggregates for a cluster whose attributed
                # 5-minute activity is empty over all time (the window's and the other days'),
                # read a unit of hours at a time. (A cluster whose labelled hourly rows match no
                # attempt has no activity either way: its waterfall is the same.)
                if (
                    five.height == 0
                    and (cdays is None or not attributed_activity_elsewhere(con, c, cdays))
                    and labelled_hours(mem, c)
                ):
                    starts = jobs_c.select("cluster", "job_id", "attempt", "start_at").collect()
                    wf_activity = _hourly_in_window(mem, starts, c)
                    bucket_s = 3600.0
                # a full build's waterfall is of the clusters with a cut-off (_full_scope, or
                # its placeholder); a planned cluster without one (capacity lent to a Slurm
                # cluster with no sacct row yet) keeps its hours and activity, and has no
                # waterfall in either build
                if occ_c.height and (cdays is None or c in cuts):
                    held = None if holds is None else holds.filter(pl.col("cluster") == c)
                    wf_parts.append(
                        _waterfall(
                            j, occ_c, cut, pending=pending.lazy().filter(pl.col("cluster") == c),
                            activity=wf_activity, bucket_s=bucket_s,
                            xid=xid.filter(pl.col("cluster") == c).lazy(),
                            idle_threshold=idle_threshold, every=every,
                            nodes=scope.nodes.lazy().filter(pl.col("cluster") == c),
                            holds=held.lazy() if held is not None and held.height else None,
                            policy=loss_policy(c) if loss_policy is not None else None,
                        )
                    )  # fmt: skip
            # the hourly aggregates' XIDs per attempt, their holders found among all the
            # cluster's jobs as the buckets' owners are
            hourly_xids = hourly_xid_attempts(mem, scope.jobs, scope.nodes, xid_hours=xid_hours)
            if days is not None:
                hourly_xids = hourly_xids.filter(pl.col("cluster") == scope.clusters[0][0])
            ga = gpu_activity(mem, scope.jobs, pod_jobs, buckets=buckets)
            if scope.clusters[0][2] is not None:
                ga = ga.filter(in_days("bucket", scope.clusters[0][2]))
            act_parts.append(ga)
            if ranged is not None:
                # A placeholder scope's rows are cleared: write the columns only.
                summary_jobs = scope.summary_jobs.clear() if placeholder else scope.summary_jobs
                for part in job_gpu_summary_ranges(
                    mem, summary_jobs, activity, pod_jobs, idle_threshold=idle_threshold,
                    rows=rows, buckets=buckets, hourly_xids=hourly_xids, holds=holds,
                ):  # fmt: skip
                    ranged(part)
            else:
                sum_parts.append(
                    job_gpu_summary(mem, scope.summary_jobs, activity, pod_jobs,
                                    idle_threshold=idle_threshold, buckets=buckets,
                                    hourly_xids=hourly_xids, holds=holds)
                )  # fmt: skip
            if scope.keys is not None:
                key_parts.append(scope.keys)
        finally:
            if mem is not con:
                mem.close()

    def _with_as_of(parts: list[pl.DataFrame]) -> pl.DataFrame:
        f = _concat(parts)
        return with_as_of(f.drop("as_of", strict=False), as_of) if f.width else f

    wf = _concat(wf_parts)
    if wf.width:
        wf = wf.with_columns(pl.col("leaf").cast(pl.String).alias("bucket")).drop("leaf")
    wf = _with_as_of([wf])
    tables = {
        "analytics.occupancy_hourly": all_hours if days is None else _concat(occ_parts),
        "analytics.gpu_waterfall_hourly": wf,
        "analytics.gpu_activity": _with_as_of(act_parts),
    }
    if ranged is None:
        tables["analytics.job_gpu_summary"] = _with_as_of(sum_parts)
    if placeholder:
        tables = {t: f if f is all_hours else f.clear() for t, f in tables.items()}
    keys = None
    if days is not None:
        # The changed jobs of a cluster read by no window (no cut-off left: every attempt of
        # it gone) are named too: their stored summary rows go, as a full build has none.
        if changed_keys is not None:
            key_parts.append(changed_keys.select(pl.col("cluster", "job_id").cast(pl.String())))
        keys = (
            pl.concat(key_parts, how="vertical_relaxed").unique()
            if key_parts
            else pl.DataFrame(schema={"cluster": pl.String(), "job_id": pl.String()})
        )
    return WindowFrames(tables, keys)
