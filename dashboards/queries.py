"""The dashboard's query layer: cached data over one shared read-only reader of the serving copy.

The *data* is cached (``st.cache_data``); underneath, every query of every rerun reads through
one read-only attachment of the serving copy per process (:func:`_reader`, an
``st.cache_resource`` keyed by the file's path that reopens when a publish replaces the file:
its mtime, inode or size changed). Opening the file costs 0.1–0.3 s (its catalog and first
blocks), which a page of twenty queries paid twenty times. Holding it blocks no writer: the
pipeline writes the warehouse and publishes the serving copy by renaming a new file over it
(:func:`pipelines.warehouse.publish_serving_copy`), which an open reader of the old file does
not stop. (So the dashboard reads the serving copy, never the warehouse: a reader held on
the warehouse would block the pipeline's writer.) The SQL page's ad hoc statements keep their
own locked-down, bounded connection
(:mod:`pipelines.warehouse.safe_sql`). Every query is a file in ``sql/dashboard/``; the
filters (:class:`Filters`) reach it as bound ``$start``, ``$end``, ``$cluster`` and ``$team``
parameters.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import streamlit as st

from dashboards import _auth
from metrics import nearest_rank, wait_percentiles_km
from metrics.headlines import MIN_KM_JOBS, WaitSummary, wait_summary
from metrics.periods import is_complete, mark_complete, scope_bounds
from metrics.schema import SIZE_BUCKETS, WATERFALL_LEAVES
from pipelines.config import Config, load_config
from pipelines.report.job_report import JobReport, job_report_on
from pipelines.warehouse import (
    attach_read_only,
    reader_cursor,
    run_named,
    statement_params,
    table_exists,
)
from pipelines.warehouse.safe_sql import run_query
from pipelines.warehouse.sql import load_sql

__all__ = [
    "BUCKET_ORDER",
    "FAILURE_LEAVES",
    "JOB_LIST_LIMIT",
    "K8S_STAGES",
    "QUEUE_HORIZON_S",
    "REC_EVIDENCE_SQL",
    "Filters",
    "Headline",
    "applied_recommendations",
    "change_effects",
    "change_marks",
    "data_quality_checks",
    "data_quality_findings",
    "data_quality_score",
    "failures_daily",
    "fairness_answer",
    "fairness_summary",
    "fairness_teams",
    "filter_bounds",
    "filter_values",
    "freshness",
    "headline",
    "headline_change",
    "idle_by_attempt",
    "idle_by_team",
    "idle_reconciliation",
    "job_gpu_series",
    "job_list",
    "job_report_of",
    "k8s_pending_reasons",
    "k8s_stage_percentiles",
    "large_job_p90_wait_s",
    "large_wait_summary",
    "lemon_nodes",
    "lost_work_by_team",
    "overview_occupancy",
    "overview_team_allocated",
    "policy_changes",
    "queue_estimates",
    "queue_pending",
    "recommendation_evidence",
    "recommendations",
    "registry_drift",
    "rejected_by_reason",
    "run_sql",
    "scheduler_fairshare",
    "serving_path",
    "slurm_on_k8s_rate",
    "top_idle_allocations",
    "top_recommendations",
    "topology_degraded",
    "topology_hours",
    "topology_nvlink",
    "topology_nvlink_unconstrained",
    "topology_placement_by_team",
    "topology_rack_grid",
    "topology_segment_slots",
    "topology_stranded_daily",
    "topology_wait_causes",
    "trends_daily",
    "view_columns",
    "wait_percentiles",
    "wait_percentiles_weekly",
    "waterfall_by_cluster",
    "waterfall_daily",
    "waterfall_totals",
    "window_filters",
]

Headline = dict[str, Any]
_TTL = 60

#: Size buckets in METRICS.md order, then ``all`` (every GPU spell of the group).
BUCKET_ORDER: tuple[str, ...] = (*(label for label, _lo, _hi in SIZE_BUCKETS), "all")
#: The two failure leaves of the waterfall: infrastructure first, then user.
FAILURE_LEAVES: tuple[str, ...] = ("failed_work_infra", "failed_work_user")

# Open bounds for an unset date filter: wider than any data the fleet can hold.
_EARLIEST = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LATEST = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Filters:
    """The dashboard's shared filters; ``None`` means "no restriction".

    Attributes:
        start: first UTC day shown (inclusive).
        end: last UTC day shown (inclusive).
        cluster: one cluster, or all.
        team: one team, or all (views without a team dimension ignore it).
    """

    start: dt.date | None = None
    end: dt.date | None = None
    cluster: str | None = None
    team: str | None = None

    def params(self) -> dict[str, object]:
        """The bound SQL parameters: ``start``/``end`` as UTC instants (end exclusive)."""
        start = _EARLIEST if self.start is None else _utc(self.start)
        end = _LATEST if self.end is None else _utc(self.end + dt.timedelta(days=1))
        return {"start": start, "end": end, "cluster": self.cluster, "team": self.team}

    def describe(self) -> str:
        """A one-line summary for captions."""
        if self.start and self.end:
            days = f"{self.start} – {self.end} (UTC days)"
        elif self.start or self.end:
            days = f"from {self.start} (UTC)" if self.start else f"up to {self.end} (UTC)"
        else:
            days = "all days"
        return f"{days} · cluster: {self.cluster or 'all'} · team: {self.team or 'all'}"


def _utc(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)


def serving_path() -> str:
    """The serving copy to read: ``$GOODPUT_SERVING_DB``, else the configured one.

    With sign-in on (``[dashboard] auth = "oidc"``) a visitor who is not signed in gets the
    sign-in prompt and the run stops here (:func:`dashboards._auth.gate`): every page asks for
    this path before it reads anything, and Streamlit can run a file of ``pages/`` without the
    entry point (its pages-folder mode, before any session has called ``st.navigation``).
    """
    _auth.gate()
    return os.environ.get("GOODPUT_SERVING_DB") or str(load_config().serving_path)


@dataclass
class _Attachment:
    """One opening of the serving copy: the file's identity then, and the cursors in use."""

    con: duckdb.DuckDBPyConnection
    identity: tuple[int, int, int]
    active: int = 0


@dataclass
class _SharedReader:
    """The serving copy at ``path``, opened once per process and shared by every query.

    Each query takes a cursor (:func:`pipelines.warehouse.reader_cursor`). When the file's
    ``(mtime_ns, inode, size)`` changes (a publish renamed a new copy over it), the next query
    opens the new file; the old attachment is closed once its last cursor is (a query in flight
    finishes on the copy it started on). Rows already in the data cache are served until their
    TTL (60 s) runs out, as before. While the file is held, nothing else in this process may
    open it read-write (DuckDB refuses: "Unique file handle conflict"); the dashboard never does.
    """

    path: str
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _current: _Attachment | None = None
    _retired: list[_Attachment] = field(default_factory=list)

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on the newest copy, closed when the block ends.

        Raises:
            FileNotFoundError: the serving copy is gone.
            duckdb.IOException: it cannot be opened.
        """
        st_ = os.stat(self.path)
        identity = (st_.st_mtime_ns, st_.st_ino, st_.st_size)
        with self._lock:
            if self._current is None or self._current.identity != identity:
                if self._current is not None:
                    self._retired.append(self._current)
                self._current = _Attachment(attach_read_only(self.path), identity)
            held = self._current
            held.active += 1
            self._close_idle()
            try:
                cur = reader_cursor(held.con)
            except BaseException:
                held.active -= 1
                raise
        try:
            yield cur
        finally:
            cur.close()
            with self._lock:
                held.active -= 1
                self._close_idle()

    def _close_idle(self) -> None:
        """Close the retired attachments no cursor uses (the lock is held)."""
        for old in [a for a in self._retired if a.active == 0]:
            old.con.close()
            self._retired.remove(old)


@st.cache_resource(show_spinner=False)
def _shared_reader(path: str) -> _SharedReader:
    """The process's one :class:`_SharedReader` of ``path`` (kept for the server's life)."""
    return _SharedReader(path)


@contextmanager
def _reader(path: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only cursor of the serving copy at ``path``, zone UTC, for one query."""
    with _shared_reader(path).cursor() as cur:
        yield cur


def _frame(path: str, name: str, params: dict[str, object] | None = None) -> pl.DataFrame:
    """Run ``sql/dashboard/<name>.sql`` with the parameters it names (others are left out).

    Raises:
        KeyError: the statement names a parameter that ``params`` lacks.
    """
    if not Path(path).exists():
        return pl.DataFrame()
    missing = statement_params(load_sql(f"dashboard/{name}")) - (params or {}).keys()
    if missing:
        raise KeyError(f"sql/dashboard/{name}.sql needs parameters {sorted(missing)}")
    with _reader(path) as con:
        if not table_exists(con, "jobs"):
            return pl.DataFrame()  # a database the pipeline has not published views into yet
        return run_named(con, f"dashboard/{name}", params)


def _frame_if_exists(
    path: str, name: str, view: str, params: dict[str, object] | None = None
) -> pl.DataFrame | None:
    """Run ``sql/dashboard/<name>.sql``, or None when the serving copy or its ``view`` does not
    exist (:func:`pipelines.warehouse.table_exists`: a copy published before the view was)."""
    if not Path(path).exists():
        return None
    with _reader(path) as con:
        if not table_exists(con, view):
            return None
        return run_named(con, f"dashboard/{name}", params)


def _leaf_sorted(df: pl.DataFrame, *by: str) -> pl.DataFrame:
    """Sort by ``by`` then by leaf in METRICS.md order."""
    if df.height == 0:
        return df
    order = pl.col("leaf").replace_strict(
        {leaf: i for i, leaf in enumerate(WATERFALL_LEAVES)}, default=len(WATERFALL_LEAVES)
    )
    return df.sort([*by, order.alias("_order")]) if by else df.sort(order)


# --- filters ---------------------------------------------------------------------------------


@st.cache_data(ttl=_TTL)
def filter_bounds(path: str) -> tuple[dt.date, dt.date] | None:
    """First and last UTC day with data, or ``None`` when the serving copy is missing or empty."""
    df = _frame(path, "filter_bounds")
    if df.height == 0 or df["first_day"][0] is None:
        return None
    first, last = df.row(0)
    return first, last


def filter_values(path: str, kind: str) -> list[str]:
    """The values the ``kind`` filter offers (``cluster`` or ``team``), sorted."""
    df = _filter_values(path)
    if df.height == 0:
        return []
    return [str(v) for v in df.filter(pl.col("kind") == kind)["value"]]


@st.cache_data(ttl=_TTL)
def _filter_values(path: str) -> pl.DataFrame:
    """``kind, value`` of both filters: one query per rerun for the two lists."""
    return _frame(path, "filter_values")


# --- overview --------------------------------------------------------------------------------


@st.cache_data(ttl=_TTL)
def headline(path: str, f: Filters | None = None) -> Headline:
    """Occupancy, allocated and capacity GPU-hours, attempts, window and as-of."""
    df = _frame(path, "headline", (f or Filters()).params())
    return df.row(0, named=True) if df.height else {}


def _large_waits(path: str, min_gpus: float, f: Filters) -> pl.DataFrame:
    return _frame(path, "large_job_waits", {**f.params(), "min_gpus": min_gpus})


@st.cache_data(ttl=_TTL)
def large_job_p90_wait_s(path: str, min_gpus: float, f: Filters | None = None) -> float | None:
    """Naive nearest-rank p90 wait (seconds) of started attempts with ≥ ``min_gpus`` GPUs."""
    df = _large_waits(path, min_gpus, f or Filters())
    if df.height == 0:
        return None
    value = df.select(nearest_rank(pl.col("wait_s"), 0.9)).item()
    return float(value) if value is not None else None


@st.cache_data(ttl=_TTL)
def headline_change(path: str, f: Filters, min_gpus: float) -> pl.DataFrame:
    """The headline numbers over the last 7 days of the window and the 7 days before.

    The periods end at the window's end or the data cut-off (``as_of``), whichever is first.

    Returns:
        Two rows, older first: ``period, period_start, period_end, occupancy, allocated_gpu_h,
        hours`` (hours with data), ``attempts`` (started) and ``p90_large_wait_s`` (naive p90 of
        attempts with ≥ ``min_gpus`` GPUs eligible in the period).
    """
    periods = _frame(path, "headline_change", f.params())
    if periods.height == 0:
        return periods
    waits = _large_waits(path, min_gpus, f)
    p90: list[float | None] = []
    for lo, hi in periods.select("period_start", "period_end").iter_rows():
        inside = waits.filter((pl.col("eligible_at") >= lo) & (pl.col("eligible_at") < hi))
        value = inside.select(nearest_rank(pl.col("wait_s"), 0.9)).item() if inside.height else None
        p90.append(None if value is None else float(value))
    return periods.with_columns(pl.Series("p90_large_wait_s", p90, dtype=pl.Float64))


@st.cache_data(ttl=_TTL)
def waterfall_daily(path: str, f: Filters) -> pl.DataFrame:
    """``cluster, day, leaf, gpu_h, observed_gpu_h``, leaves in METRICS.md order."""
    return _leaf_sorted(_frame(path, "waterfall_daily", f.params()), "cluster", "day")


@st.cache_data(ttl=_TTL)
def trends_daily(path: str, f: Filters) -> pl.DataFrame:
    """``cluster, day, occupancy, goodput_ratio, goodput_telemetry_coverage``."""
    return _frame(path, "trends_daily", f.params())


@st.cache_data(ttl=_TTL)
def data_quality_checks(path: str, f: Filters) -> pl.DataFrame:
    """``cluster, check, findings, value``: one row per cluster and check (0 findings = clean)."""
    return _frame(path, "data_quality_checks", f.params())


def data_quality_score(checks: pl.DataFrame) -> tuple[int, int]:
    """(clean, total) (cluster × check) pairs of :func:`data_quality_checks`."""
    if checks.height == 0:
        return 0, 0
    return int((checks["findings"] == 0).sum()), checks.height


@st.cache_data(ttl=_TTL)
def data_quality_findings(path: str, f: Filters) -> pl.DataFrame:
    """``cluster, day, partition, check, value, detail`` in the window."""
    return _frame(path, "data_quality_findings", f.params())


@st.cache_data(ttl=_TTL)
def freshness(path: str) -> pl.DataFrame:
    """``source, cluster, last_loaded_at, files, rows_loaded, rows_rejected``."""
    return _frame(path, "freshness")


def recommendations(path: str) -> pl.DataFrame:
    """The ``recommendations`` view, most severe first; empty when the view does not exist.

    User names in it are pseudonyms: the serving copy is published so (``pipelines.privacy``).
    """
    return _recommendations(path)


@st.cache_data(ttl=_TTL)
def _recommendations(path: str) -> pl.DataFrame:
    # Checked up front: a missing table makes DuckDB look for a Python object of that name (a
    # replacement scan), which would find this function.
    views = view_columns(path)
    if views.height == 0 or "recommendations" not in set(views["view"]):
        return pl.DataFrame()
    return _frame(path, "recommendations")


#: Evidence query (``sql/dashboard/<name>.sql``) per recommendation rule; the scope's
#: ``key=value`` parts (``cluster``, ``team``, ``partition``, ``qos``, ``node`` as ``host``) and the
#: recommendation's window (``start``, ``end``) are its parameters.
REC_EVIDENCE_SQL: dict[str, str] = {
    "idle_allocations": "rec_team_activity_daily",
    "time_limits": "rec_run_to_limit",
    "backfill_tuning": "rec_large_waits_daily",
    "large_job_reservation": "rec_large_waits_daily",
    "fairness_drift": "rec_fairness_weeks",
    "lemon_node": "rec_node_failures_daily",
    "preempt_exempt_time": "rec_preempted_runs",
    "preemption_grace_time": "rec_preempted_runs",
}


@st.cache_data(ttl=_TTL)
def recommendation_evidence(
    path: str, rule: str, scope: str, start: dt.datetime, end: dt.datetime, min_gpus: float = 64
) -> pl.DataFrame:
    """The data behind one recommendation's evidence chart (:data:`REC_EVIDENCE_SQL`).

    Args:
        path: the serving copy.
        rule: the recommendation's rule.
        scope: its scope (``cluster=…/team=…``).
        start, end: its evidence window (UTC).
        min_gpus: "large" job threshold for the backfill rules (their evidence's ``large_gpus``).

    Returns:
        The query's rows (columns per file); empty for a rule without a query.
    """
    name = REC_EVIDENCE_SQL.get(rule)
    if name is None:
        return pl.DataFrame()
    parts = dict(p.split("=", 1) for p in scope.split("/") if "=" in p)
    params: dict[str, object] = {
        "start": start, "end": end, "min_gpus": min_gpus,
        "cluster": parts.get("cluster"), "team": parts.get("team"),
        "partition": parts.get("partition"), "host": parts.get("node"), "qos": parts.get("qos"),
    }  # fmt: skip
    return _frame(path, name, params)


@st.cache_data(ttl=_TTL)
def rejected_by_reason(path: str) -> pl.DataFrame:
    """``source, reason, rows`` (top 50)."""
    return _frame(path, "rejected_by_reason")


# --- waste -----------------------------------------------------------------------------------


@st.cache_data(ttl=_TTL)
def waterfall_by_cluster(path: str, f: Filters) -> pl.DataFrame:
    """``cluster, leaf, gpu_h, share_of_capacity`` over the window, leaves in METRICS.md order."""
    return _leaf_sorted(_frame(path, "waterfall_by_cluster", f.params()), "cluster")


@st.cache_data(ttl=_TTL)
def waterfall_totals(path: str, f: Filters) -> pl.DataFrame:
    """``leaf, gpu_h, share_of_capacity`` summed over the clusters in the window."""
    df = waterfall_by_cluster(path, f)
    if df.height == 0:
        return df
    totals = df.group_by("leaf").agg(pl.col("gpu_h").sum())
    share = pl.col("gpu_h") / pl.col("gpu_h").sum()
    return _leaf_sorted(totals.with_columns(share.alias("share_of_capacity")))


@st.cache_data(ttl=_TTL)
def failures_daily(path: str, f: Filters) -> pl.DataFrame:
    """``cluster, day, leaf, gpu_h`` of the two failure leaves (infrastructure, user)."""
    df = waterfall_daily(path, f)
    if df.height == 0:
        return df
    return df.filter(pl.col("leaf").is_in(FAILURE_LEAVES)).select("cluster", "day", "leaf", "gpu_h")


@st.cache_data(ttl=_TTL)
def lost_work_by_team(path: str, f: Filters) -> pl.DataFrame:
    """``team, gpu_type, end_state, attempts, gpu_h``: allocated time by end state (jobs)."""
    return _frame(path, "lost_work_by_team", f.params())


@st.cache_data(ttl=_TTL)
def idle_by_attempt(path: str, f: Filters, theta: float) -> pl.DataFrame:
    """Idle allocated GPU-hours per attempt (5-minute buckets with mean activity < ``theta``).

    Returns:
        ``cluster, job_id, attempt, team, partition, state, gpus, gpu_type, start_at,
        idle_gpu_h, observed_gpu_h, idle_share, mean_activity``, most idle first.
    """
    return _frame(path, "idle_by_attempt", {**f.params(), "theta": theta})


def top_idle_allocations(path: str, f: Filters, theta: float, top: int) -> pl.DataFrame:
    """The ``top`` attempts of :func:`idle_by_attempt`."""
    return idle_by_attempt(path, f, theta).head(top)


#: The loss policies as :func:`idle_by_team` takes them: (the clusters with their own policy,
#: each one's lost-time cap Δ/2 + u0 in seconds or None for ``whole_attempt``, the cap of every
#: other cluster or None).
LossCaps = tuple[tuple[str, ...], tuple[float | None, ...], float | None]


def loss_caps(cfg: Config) -> LossCaps:
    """The configured loss policies (``[waterfall]`` and the clusters' own,
    :meth:`pipelines.config.Config.loss_policy_of`) as :data:`LossCaps`: under ``checkpoint``
    an attempt of leaves 3–6 loses min(runtime, Δ/2 + u0) seconds (METRICS.md)."""

    def cap(name: str | None) -> float | None:
        p = cfg.loss_policy if name is None else cfg.loss_policy_of(name)
        if p.kind != "checkpoint" or p.checkpoint_interval_s is None:
            return None
        return p.checkpoint_interval_s / 2.0 + p.restart_overhead_s

    own = [c.name for c in cfg.clusters if c.loss_policy is not None]
    return tuple(own), tuple(cap(c) for c in own), cap(None)


@st.cache_data(ttl=_TTL)
def idle_by_team(
    path: str, f: Filters, theta: float, loss: LossCaps = ((), (), None)
) -> pl.DataFrame:
    """Allocated-idle GPU-hours per cluster, team and GPU type (waterfall leaf 8, METRICS.md).

    From ``gpu_activity`` and ``jobs`` as the waterfall counts the leaf: per attempt and 5-minute
    bucket, min(GPUs seen, GPUs allocated) × the bucket's part inside the attempt's kept time and
    the window, where the attempt's mean activity < ``theta``. Kept time: the whole attempt
    (running ones up to ``as_of``), but for attempts in leaves 3–6 under ``loss``
    (:func:`loss_caps`; default ``whole_attempt`` everywhere: left out) only their head, up to
    their end less min(runtime, cap); cancelled attempts (7) left out. Summed over teams, a
    cluster's total is its ``allocated_idle`` in ``gpu_waterfall_hourly`` when ``loss`` is the
    build's policy. A ``gpu_type`` filter applies when :class:`Filters` carries one.

    Returns:
        ``cluster, team, gpu_type ('untyped' when unknown), idle_gpu_h (GPU-hours), attempts``,
        most idle first.
    """
    clusters, caps, default = loss
    params: dict[str, object] = {
        "gpu_type": None, **f.params(), "theta": theta, "loss_clusters": list(clusters),
        "loss_caps": list(caps), "loss_cap_s": default,
    }  # fmt: skip
    return _frame(path, "idle_by_team", params)


@st.cache_data(ttl=_TTL)
def idle_reconciliation(path: str, f: Filters, theta: float) -> pl.DataFrame:
    """Per cluster: the waterfall's allocated_idle beside the part attributed to attempts.

    Returns:
        ``cluster, waterfall_idle_gpu_h, per_attempt_idle_gpu_h, attempts``.
    """
    wf = waterfall_by_cluster(path, f)
    if wf.height == 0:
        return pl.DataFrame()
    leaf = wf.filter(pl.col("leaf") == "allocated_idle").select(
        "cluster", pl.col("gpu_h").alias("waterfall_idle_gpu_h")
    )
    per = idle_by_attempt(path, f, theta)
    attributed = (
        per.group_by("cluster").agg(
            pl.col("idle_gpu_h").sum().alias("per_attempt_idle_gpu_h"),
            pl.len().cast(pl.Int64).alias("attempts"),
        )
        if per.height
        else pl.DataFrame(
            schema={
                "cluster": pl.String,
                "per_attempt_idle_gpu_h": pl.Float64,
                "attempts": pl.Int64,
            }
        )
    )
    return (
        leaf.join(attributed, on="cluster", how="left")
        .with_columns(
            pl.col("per_attempt_idle_gpu_h").fill_null(0.0), pl.col("attempts").fill_null(0)
        )
        .sort("cluster")
    )


@st.cache_data(ttl=_TTL)
def lemon_nodes(path: str, f: Filters, top: int) -> pl.DataFrame:
    """The ``top`` nodes per cluster by lemon rank, with their failure signals."""
    return _frame(path, "lemon_nodes", {**f.params(), "top": top})


# --- fairness --------------------------------------------------------------------------------


@st.cache_data(ttl=_TTL)
def fairness_teams(path: str, f: Filters) -> pl.DataFrame:
    """Per week and team: ``entitlement_share, received_share, fair_share``, GPU-hours, debt."""
    return _frame(path, "fairness_teams", f.params())


@st.cache_data(ttl=_TTL)
def period_bounds(path: str, f: Filters) -> tuple[dt.datetime | None, dt.datetime | None]:
    """``(as_of, data_from)`` of the filter's cluster scope (:func:`metrics.periods.scope_bounds`):
    the earliest data cut-off and the latest first hour over the clusters in scope."""
    df = _frame(path, "period_bounds", f.params())
    if df.height == 0:
        return None, None
    return scope_bounds(df["as_of"].to_list(), df["data_from"].to_list())


@st.cache_data(ttl=_TTL)
def fairness_summary(path: str, f: Filters) -> pl.DataFrame:
    """``week, teams, jain_index, unmet_entitlement`` (window ``week``)."""
    return _frame(path, "fairness_summary", f.params())


def _frame_if_view(path: str, name: str, f: Filters) -> pl.DataFrame:
    """:func:`_frame`, or an empty frame on a serving copy published before the view existed."""
    try:
        return _frame(path, name, f.params())
    except duckdb.CatalogException:
        return pl.DataFrame()


@st.cache_data(ttl=_TTL)
def registry_drift(path: str, f: Filters) -> pl.DataFrame:
    """``registry_drift`` rows (cluster and team filters; latest snapshot, no time filter):
    ``cluster, scheduler, team, objects, cohort, resource, configured_value, registry_share,
    configured_share, drift, relative_drift, tolerance, drifted, snapshot_at, as_of``."""
    return _frame_if_view(path, "registry_drift", f)


@st.cache_data(ttl=_TTL)
def slurm_on_k8s_rate(path: str, f: Filters) -> pl.DataFrame:
    """Per Slurm cluster run on Kubernetes, over the window (cluster filter matches it or its
    Kubernetes partner): ``cluster, k8s_cluster, pattern, naive_gpu_h, reconciled_gpu_h,
    double_count_rate, lent_gpu_h, slurmd_held_idle_gpu_h`` (METRICS.md "Slurm on Kubernetes";
    the rate is the ratio of the sums). Empty when the fleet has no such cluster or the serving
    copy predates the view."""
    return _frame_if_view(path, "slurm_on_k8s_rate", f)


@st.cache_data(ttl=_TTL)
def scheduler_fairshare(path: str, f: Filters) -> pl.DataFrame:
    """``scheduler_fairshare`` rows (cluster and team filters): sshare per Slurm account,
    Kueue nominal/usage/borrowed GPUs per ClusterQueue."""
    return _frame_if_view(path, "scheduler_fairshare", f)


# --- policy changes --------------------------------------------------------------------------


@st.cache_data(ttl=_TTL)
def policy_changes(path: str, f: Filters) -> pl.DataFrame | None:
    """``policy_changes`` rows changed in the filters' window on their cluster (the team filter
    does not apply), oldest first: ``change_id, cluster, scheduler, scope, object, key, old,
    new, actor, changed_at, changed_after, source``; None without the view. Actors are
    pseudonyms: the serving copy is published so (:mod:`pipelines.privacy`)."""
    return _frame_if_exists(path, "policy_changes", "policy_changes", f.params())


@st.cache_data(ttl=_TTL)
def change_effects(path: str, f: Filters) -> pl.DataFrame | None:
    """``policy_change_impact`` rows on the filters' cluster (columns in sql/README.md); None
    while the view does not exist (effects not measured yet)."""
    return _frame_if_exists(path, "policy_change_impact", "policy_change_impact", f.params())


@st.cache_data(ttl=_TTL)
def applied_recommendations(path: str) -> pl.DataFrame | None:
    """``change_id, id, rule, status`` of the recommendations a policy change applied; None when
    the copy has no ``recommendations`` view or one without ``change_id`` (published before
    the status existed)."""
    views = view_columns(path)
    if (
        views.height == 0
        or views.filter(
            (pl.col("view") == "recommendations") & (pl.col("column") == "change_id")
        ).height
        == 0
    ):
        return None
    return _frame(path, "applied_recommendations")


@st.cache_data(ttl=_TTL)
def change_marks(path: str) -> tuple[pl.DataFrame, pl.DataFrame | None] | None:
    """Every policy change and every measured effect, for the time charts' annotations
    (:func:`dashboards._charts.annotate_changes`): ``(ledger, effects)``; ``effects`` None
    while ``policy_change_impact`` does not exist; None without a ledger."""
    ledger = _frame_if_exists(path, "change_marks", "policy_changes")
    if ledger is None:
        return None
    effects = _frame_if_exists(
        path, "policy_change_impact", "policy_change_impact", Filters().params()
    )
    return ledger, effects


# --- time to start ---------------------------------------------------------------------------


def _renamed_percentiles(df: pl.DataFrame) -> pl.DataFrame:
    return df.rename({c: c.removeprefix("km_") for c in df.columns if c.startswith("km_")})


@st.cache_data(ttl=_TTL)
def wait_percentiles(path: str, f: Filters) -> pl.DataFrame:
    """Kaplan–Meier and naive wait percentiles per cluster and size bucket (``all`` = every size).

    Computed from the filtered spells of ``time_to_start_jobs`` with
    :func:`metrics.wait_percentiles_km` (the function that builds ``time_to_start_summary``).

    Returns:
        ``cluster, bucket, spells, events, censored, excluded``, then per p in 50/90/99
        ``p<p>_s`` (KM), ``p<p>_reason`` (why KM is NULL) and ``naive_p<p>_s``; buckets in
        METRICS.md order.
    """
    spells = _frame(path, "wait_spells", f.params())
    if spells.height == 0:
        return pl.DataFrame()
    lf = spells.lazy()
    by_bucket = wait_percentiles_km(lf, by=("cluster", "bucket")).collect()
    overall = wait_percentiles_km(lf, by=("cluster",)).collect().with_columns(bucket=pl.lit("all"))
    out = pl.concat([by_bucket, overall.select(by_bucket.columns)])
    order = pl.col("bucket").replace_strict(
        {b: i for i, b in enumerate(BUCKET_ORDER)}, default=len(BUCKET_ORDER)
    )
    return _renamed_percentiles(out.sort("cluster", order))


@st.cache_data(ttl=_TTL)
def wait_percentiles_weekly(path: str, f: Filters, min_gpus: float) -> pl.DataFrame:
    """KM and naive percentiles per week of eligible time, all GPU jobs and ≥ ``min_gpus`` GPUs.

    Returns:
        ``jobs`` (``all GPU jobs`` or ``≥ N GPUs``), ``week``, then the columns of
        :func:`wait_percentiles` (no ``cluster``/``bucket``); spells without an eligible week are
        left out.
    """
    spells = _frame(path, "wait_spells", f.params())
    if spells.height == 0:
        return pl.DataFrame()
    dated = spells.filter(pl.col("week").is_not_null())
    parts = []
    for label, frame in (
        ("all GPU jobs", dated),
        (f"≥ {min_gpus:g} GPUs", dated.filter(pl.col("size_gpus") >= min_gpus)),
    ):
        if frame.height:
            pct = wait_percentiles_km(frame.lazy(), by=("week",)).collect()
            parts.append(pct.select(pl.lit(label).alias("jobs"), pl.all()))
    if not parts:
        return pl.DataFrame()
    return _renamed_percentiles(pl.concat(parts).sort("jobs", "week"))


#: Kubernetes stage durations of ``k8s_workloads`` (column → label), in stage order (METRICS.md).
K8S_STAGES: dict[str, str] = {
    "quota_wait_s": "quota wait",
    "admission_check_s": "admission checks",
    "scheduling_s": "scheduling",
    "pod_startup_s": "pod startup",
    "time_to_running_s": "time to running",
    "gang_start_spread_s": "gang start spread",
    "image_pull_s": "image pull",
}


@st.cache_data(ttl=_TTL)
def k8s_stage_percentiles(path: str, f: Filters) -> pl.DataFrame:
    """Nearest-rank p50/p90 of each Kubernetes stage duration per ClusterQueue and week.

    Over the workload attempts of ``k8s_workloads`` eligible in the filter window whose stage
    completed (a stage still in progress has no duration and is left out: these are naive,
    started-only percentiles, as METRICS.md labels them); ``week`` is the Monday 00:00 UTC week
    of eligible time. Percentiles by :func:`metrics.nearest_rank` (METRICS.md "Time to start").

    Returns:
        ``cluster, cluster_queue, week, stage`` (a :data:`K8S_STAGES` column name), ``label``,
        ``workloads`` (attempts with the stage's duration), ``p50_s, p90_s`` (seconds); stages
        in :data:`K8S_STAGES` order. Empty when no Kubernetes workload is in the window.
    """
    rows = _frame(path, "k8s_stages", f.params())
    if rows.height == 0:
        return pl.DataFrame()
    long = rows.unpivot(
        index=["cluster", "cluster_queue", "week"],
        on=list(K8S_STAGES),
        variable_name="stage",
        value_name="duration_s",
    ).drop_nulls("duration_s")
    order = {name: i for i, name in enumerate(K8S_STAGES)}
    return (
        long.group_by("cluster", "cluster_queue", "week", "stage")
        .agg(
            pl.len().cast(pl.Int64).alias("workloads"),
            nearest_rank(pl.col("duration_s"), 0.5).alias("p50_s"),
            nearest_rank(pl.col("duration_s"), 0.9).alias("p90_s"),
        )
        .with_columns(pl.col("stage").replace_strict(K8S_STAGES).alias("label"))
        .sort("cluster", "cluster_queue", "week", pl.col("stage").replace_strict(order))
        .select("cluster", "cluster_queue", "week", "stage", "label", "workloads", "p50_s", "p90_s")
    )


@st.cache_data(ttl=_TTL)
def k8s_pending_reasons(path: str, f: Filters) -> pl.DataFrame:
    """Why Kubernetes workloads pended, for attempts eligible in the filter window.

    Returns:
        ``cluster, component`` (``kube-scheduler`` | ``kueue``), ``reason``, ``events`` (Σ event
        counts, ``(x4 over 43m)`` = 4), ``workloads`` (attempts with the reason), most events first.
    """
    return _frame(path, "k8s_pending_reasons", f.params())


# --- SQL -------------------------------------------------------------------------------------


@st.cache_data(ttl=_TTL)
def view_columns(path: str) -> pl.DataFrame:
    """``view, column, type`` of every view in the serving copy's ``main`` schema."""
    return _frame(path, "view_columns")


@st.cache_data(ttl=_TTL, max_entries=32)
def run_sql(path: str, query: str, row_limit: int) -> pl.DataFrame:
    """Ad hoc read-only SQL through :func:`pipelines.warehouse.safe_sql.run_query`
    (at most ``row_limit``
    rows), bounded by the configured time and memory limits (``[sql]`` in ``goodput.toml``).

    Raises:
        SqlRefused: the query writes, reads files, attaches, changes settings or fails, or a
            limit stopped it (the message names the limit).
        FileNotFoundError: no serving copy.
    """
    cfg = load_config()
    return run_query(
        path,
        query,
        row_limit=row_limit,
        time_limit_s=cfg.sql_time_limit_s,
        memory_limit=cfg.sql_memory_limit,
    )


# --- overview: the four answers ----------------------------------------------------------------


def window_filters(f: Filters, start: dt.datetime, end: dt.datetime) -> Filters:
    """``f`` with its dates set to the UTC days of ``[start, end)`` (``end`` a midnight)."""
    return replace(f, start=start.date(), end=(end - dt.timedelta(days=1)).date())


@st.cache_data(ttl=_TTL)
def overview_occupancy(path: str, f: Filters) -> pl.DataFrame:
    """Per cluster in the window: ``cluster, allocated_gpu_h, available_gpu_h, capacity_gpu_h,
    hours`` (hours with data); their sums give the fleet's occupancy (METRICS.md)."""
    return _frame(path, "overview_occupancy", f.params())


@st.cache_data(ttl=_TTL)
def overview_team_allocated(path: str, f: Filters) -> pl.DataFrame:
    """Per team: ``team, allocated_gpu_h`` (GPUs × the part of each attempt inside the window,
    running attempts up to ``as_of``) and ``attempts`` started in the window; the team filter is
    not applied (the rows are the components of the scope's occupancy)."""
    return _frame(path, "overview_team_allocated", f.params())


@st.cache_data(ttl=_TTL)
def large_wait_summary(
    path: str, f: Filters, min_gpus: float, min_jobs: int = MIN_KM_JOBS
) -> WaitSummary:
    """Kaplan–Meier p50/p90 with 95 % CIs, job and censored counts of the waiting spells with
    ≥ ``min_gpus`` GPUs eligible in the window (cluster and team filters applied)
    (:func:`metrics.headlines.wait_summary`)."""
    spells = _frame(path, "wait_spells", f.params())
    if spells.height == 0:
        empty = pl.LazyFrame(schema={"duration_s": pl.Float64, "started": pl.Boolean})
        return wait_summary(empty, min_jobs)
    large = spells.filter(pl.col("size_gpus") >= min_gpus)
    return wait_summary(large.lazy(), min_jobs)


@st.cache_data(ttl=_TTL)
def fairness_answer(path: str, f: Filters) -> dict[str, Any] | None:
    """The fairness answer of the latest complete week overlapping the window (else the latest
    week, marked partial), for the filter's cluster (``None`` = the fleet).

    Returns:
        ``week, complete, covered_h, teams, jain_index, unmet_entitlement``, the previous week's
        ``jain_before, unmet_before`` (``None`` unless both weeks are complete), and
        ``team_rows``: the week's :func:`fairness_teams` rows of every team; ``None`` when no
        week has fairness rows.
    """
    summary = fairness_summary(path, f)
    if summary.height == 0:
        return None
    as_of, data_from = period_bounds(path, f)
    marked = mark_complete(summary, as_of=as_of, data_from=data_from)
    done = marked.filter(pl.col("complete"))
    row = (done if done.height else marked).sort("week").row(-1, named=True)
    week: dt.datetime = row["week"]
    before = fairness_summary(path, window_filters(f, week - dt.timedelta(days=7), week))
    prev = before.filter(pl.col("week") == week - dt.timedelta(days=7))
    prev_ok = prev.height == 1 and is_complete(
        week - dt.timedelta(days=7), week, as_of=as_of, data_from=data_from
    )
    wk = window_filters(replace(f, team=None), week, week + dt.timedelta(days=7))
    teams = fairness_teams(path, wk).filter(pl.col("week") == week)
    compare = row["complete"] and prev_ok
    return {
        **row,
        "jain_before": prev["jain_index"][0] if compare else None,
        "unmet_before": prev["unmet_entitlement"][0] if compare else None,
        "team_rows": teams.to_dicts(),
    }


def top_recommendations(path: str, f: Filters, n: int = 3) -> tuple[pl.DataFrame, str, int]:
    """The ``n`` most severe recommendations in the filter's scope, the scope's label, and how
    many the scope holds.

    The cluster filter keeps that cluster's; with a team, those whose scope is ``team=<team>``
    or whose text names ``team <team>`` (else the cluster's, and the label says so).
    """
    recs = recommendations(path)
    if recs.height == 0:
        return recs, "none", 0
    label = f"cluster {f.cluster}" if f.cluster else "fleet"
    if f.cluster:
        recs = recs.filter(pl.col("cluster") == f.cluster)
    if f.team:
        word = re.escape(f.team)
        named = recs.filter(
            pl.col("scope").str.contains(rf"(^|/)team={word}(/|$)")
            | pl.col("change_text").str.contains(rf"\bteam {word}\b")
        )
        if named.height:
            return named.head(n), f"team {f.team}", named.height
        label += f" (none names team {f.team})"
    return recs.head(n), label, recs.height


# --- jobs and queue --------------------------------------------------------------------------

#: Attempts the Jobs page lists at most (newest first).
JOB_LIST_LIMIT = 2000


@st.cache_data(ttl=_TTL)
def job_list(path: str, f: Filters, text: str = "", limit: int = JOB_LIST_LIMIT) -> pl.DataFrame:
    """Job attempts running in the filter window whose ids, user, team, account, partition or
    state contain ``text`` (case-insensitive), newest first, at most ``limit``.

    Returns:
        ``cluster, job_id, attempt, user_name, team, account, partition, state, gpus,
        elapsed_s, gpu_s`` (so far while running), ``mean_activity, observed_gpu_s,
        idle_gpu_s`` (``job_gpu_summary``), ``start_at, end_at, source``.
    """
    return _frame(path, "job_list", {**f.params(), "text": text.strip(), "limit": limit})


@st.cache_data(ttl=_TTL)
def job_gpu_series(path: str, cluster: str, job_id: str) -> pl.DataFrame:
    """One job's GPUs over time (``sql/dashboard/job_gpu_series.sql``).

    Returns:
        ``attempt, host, gpu_uuid, mig_instance, bucket, activity, signal, gpus,
        fb_used_mib``: one row per GPU (or MIG instance) and 5-minute bucket of ``gpu_activity``
        tied to one attempt of the job.
    """
    return _frame(path, "job_gpu_series", {"cluster": cluster, "job_id": job_id})


@st.cache_data(ttl=_TTL)
def job_report_of(
    path: str, cluster: str | None, job_id: str, idle_below: float
) -> JobReport | None:
    """``goodput job``'s report (:func:`pipelines.report.job_report.job_report`), or ``None``
    when the serving copy is missing."""
    if not Path(path).exists():
        return None
    with _reader(path) as con:
        return job_report_on(con, job_id, cluster=cluster, idle_below=idle_below)


@st.cache_data(ttl=_TTL)
def queue_pending(path: str, f: Filters) -> pl.DataFrame:
    """Pending Slurm jobs and Kueue workloads at each cluster's data cut-off (cluster and team
    filters only: the queue is the state at the cut-off, not a window).

    Returns:
        ``source, cluster, job_id, attempt, user_name, team, account, partition, queue, gpus,
        submit_at, eligible_at, wait_s`` (cut-off − eligible), ``reason, reason_detail,
        as_of``, longest wait first.
    """
    return _frame(path, "queue_pending", {"cluster": f.cluster, "team": f.team})


#: How far after the cut-off the Queue page replays the scheduler model (seconds).
QUEUE_HORIZON_S = 7 * 86400.0


@st.cache_data(ttl=_TTL)
def queue_estimates(path: str, f: Filters) -> pl.DataFrame:
    """Estimated start of each Slurm job pending at its cluster's cut-off: the scheduler model
    (:func:`metrics.scheduler_model.estimate_starts`, Slurm's default backfill settings, as the
    recommendations assume) replayed from the cut-off with the running allocations' remaining
    time limits and every pending job of the cluster (whatever the team filter), each running
    its time limit; ``QUEUE_HORIZON_S`` ahead.

    Returns:
        ``cluster, job_id, estimated_start`` (UTC; null = not within the horizon or not
        modelled), ``backfilled``, ``modelled``; Kueue workloads are not modelled (no rows).
    """
    from metrics.scheduler_model import estimate_starts, nodes_from_frame

    scope: dict[str, object] = {"cluster": f.cluster}
    pending = _frame(path, "queue_pending", {**scope, "team": None})
    schema = {
        "cluster": pl.String(),
        "job_id": pl.String(),
        "estimated_start": pl.Datetime("us", "UTC"),
        "backfilled": pl.Boolean(),
        "modelled": pl.Boolean(),
    }
    if pending.height == 0:
        return pl.DataFrame(schema=schema)
    slurm = pending.filter(pl.col("source") == "slurm")
    running = _frame(path, "queue_running", scope)
    nodes = _frame(path, "queue_nodes", scope)
    parts = []
    for (cluster,), queued in slurm.group_by("cluster", maintain_order=True):
        as_of = queued["as_of"].max()
        if as_of is None:
            continue
        est = estimate_starts(
            nodes_from_frame(nodes.filter(pl.col("cluster") == cluster)),
            running.filter(pl.col("cluster") == cluster) if running.height else running,
            queued.select(
                "job_id", "partition", "gpus", "eligible_at", "timelimit_s",
                pl.col("queue").alias("qos"),
            ),
            as_of,  # type: ignore[arg-type]
            horizon_s=QUEUE_HORIZON_S,
        )  # fmt: skip
        parts.append(est.with_columns(pl.lit(cluster, pl.String).alias("cluster")))
    return pl.concat(parts).select(list(schema)) if parts else pl.DataFrame(schema=schema)


# --- topology --------------------------------------------------------------------------------


@st.cache_data(ttl=_TTL)
def topology_hours(path: str, f: Filters) -> list[dt.datetime]:
    """The hours of ``domain_capacity_hourly`` in the window (cluster filter), oldest first."""
    df = _frame_if_view(path, "topology_hours", f)
    return df["hour"].to_list() if df.height else []


@st.cache_data(ttl=_TTL)
def topology_rack_grid(path: str, f: Filters, hour: dt.datetime) -> pl.DataFrame:
    """One row per domain of each cluster's gang level at ``hour``: ``cluster, level, domain,
    nodes, healthy_nodes, degraded_nodes, allocated_nodes, free_nodes, free_gpus,
    largest_segment`` (``domain_capacity_hourly``)."""
    try:
        return _frame(path, "topology_rack_grid", {**f.params(), "hour": hour})
    except duckdb.CatalogException:
        return pl.DataFrame()


@st.cache_data(ttl=_TTL)
def topology_segment_slots(path: str, f: Filters) -> pl.DataFrame:
    """``cluster, hour, segment_size, free_slots, healthy_slots, configured_slots, efficiency``
    at the gang level (``segment_capacity_hourly``), window and cluster filters."""
    return _frame_if_view(path, "topology_segment_slots", f)


@st.cache_data(ttl=_TTL)
def topology_stranded_daily(path: str, f: Filters) -> pl.DataFrame:
    """Per UTC day: ``idle_gpu_h, idle_stranded_gpu_h, held_gpu_h, held_for_gangs_gpu_h,
    stranded_gpu_h, stranded_share`` (``stranded_gpu_hourly``, clusters with a map)."""
    return _frame_if_view(path, "topology_stranded_daily", f)


@st.cache_data(ttl=_TTL)
def topology_placement_by_team(path: str, f: Filters, min_gpus: float) -> pl.DataFrame:
    """Per team, multi-node gangs started in the window: ``team, gangs, gpu_h, optimal_share,
    mean_spread, large_gangs, large_optimal_share`` (``job_placement`` at the gang level; large
    = at least ``min_gpus`` GPUs)."""
    try:
        return _frame(path, "topology_placement_by_team", {**f.params(), "min_gpus": min_gpus})
    except duckdb.CatalogException:
        return pl.DataFrame()


@st.cache_data(ttl=_TTL)
def topology_wait_causes(path: str, f: Filters) -> pl.DataFrame:
    """Per team, large jobs eligible in the window: ``team, jobs, wait_h, quota_h, priority_h,
    fragmentation_h, other_h, blocked_idle_gpu_h, exact_jobs`` (``large_job_wait_causes``)."""
    return _frame_if_view(path, "topology_wait_causes", f)


@st.cache_data(ttl=_TTL)
def topology_nvlink(path: str, f: Filters) -> pl.DataFrame:
    """Per cluster and UTC week overlapping the window: ``cluster, week, gangs, colocated,
    colocation_share, multi_node_gangs, unconstrained, unconstrained_share``
    (``nvlink_colocation_weekly``: multi-node gangs that fit one NVLink clique and how many ran
    inside one; multi-node gangs on clique nodes and how many had no topology request; cluster
    filter, no team filter)."""
    return _frame_if_view(path, "topology_nvlink", f)


@st.cache_data(ttl=_TTL)
def topology_nvlink_unconstrained(path: str, f: Filters) -> pl.DataFrame:
    """Multi-node gangs on NVLink clique nodes started in the window with no topology request:
    ``cluster, job_id, start_at, nodes, domain_size, domains_used`` (``job_placement`` at level
    ``nvlink`` with ``topology_request`` NULL; cluster filter, no team filter)."""
    return _frame_if_view(path, "topology_nvlink_unconstrained", f)


@st.cache_data(ttl=_TTL)
def topology_degraded(path: str, f: Filters) -> pl.DataFrame:
    """Domains with a tray down or drained in the window: ``cluster, domain, trays,
    hours_degraded, max_trays_out, first_degraded, last_degraded, healthy_now``."""
    return _frame_if_view(path, "topology_degraded", f)
