"""The GPU-time waterfall: where every GPU-second of capacity went, per cluster and hour.

METRICS.md "The GPU-time waterfall": every GPU-second of capacity lands in exactly one leaf bucket,
taken in order (the first rule that applies wins): down, planned_down, failed_work_infra,
failed_work_user, preempted_work, timeout_work, cancelled_work, allocated_idle, goodput, held,
idle. The leaves of a cluster-hour sum to its capacity (:func:`check_conservation`). Telemetry
coverage is an attribute of the allocated leaves, not a bucket.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from metrics._helpers import seconds_between
from metrics.het_jobs import het_wait_units
from metrics.holds import with_pieces
from metrics.schema import (
    ACTIVE_GPU_S,
    ACTIVITY,
    ALLOCATED_LEAVES,
    ATTEMPT,
    BUCKET,
    CANCELLED_STATES,
    CAPACITY_GPU_S,
    CLUSTER,
    DOWN_GPU_S,
    ELIGIBLE_AT,
    END_AT,
    GANG_GPU_S,
    GPU_S,
    GPUS,
    HOST,
    HOUR,
    INFRA_STATES,
    JOB_ID,
    LEAF,
    LOSS_LEAVES,
    NODE_LIST,
    OBSERVED_GPU_S,
    PARTITION,
    PLANNED_DOWN_GPU_S,
    PREEMPTED_STATES,
    REQ_GPUS,
    START_AT,
    STATE,
    TEAM,
    TIMEOUT_STATES,
    TS,
    USER_FAIL_STATES,
    WATERFALL_LEAVES,
)

__all__ = [
    "LEAF_DTYPE",
    "XID_COLLECT_S",
    "XID_GRACE_MAX_S",
    "XID_PREV_TS",
    "XID_RAISED_AFTER",
    "XID_SCRAPE_GRACE_S",
    "XID_WINDOW_S",
    "LossPolicy",
    "attempt_outcomes",
    "base_state",
    "check_conservation",
    "gpu_waterfall_hourly",
    "headline_ratios",
    "pending_demand_hourly",
]

#: The ``leaf`` column's dtype: an Enum whose order is the METRICS.md order, so sorting by it
#: gives the waterfall top to bottom.
LEAF_DTYPE = pl.Enum(list(WATERFALL_LEAVES))

#: Columns added by :func:`attempt_outcomes`.
COUNTED_END_AT = "counted_end_at"
LOST_FROM_AT = "lost_from_at"
RUNTIME_S = "runtime_s"
LOST_S = "lost_s"
INFRA_EVENT = "infra_event"

#: How long before a FAILED attempt's end an XID / health event on one of its nodes makes it an
#: infrastructure failure (METRICS.md: 10 minutes), seconds.
XID_WINDOW_S = 600.0

#: An XID event is seen at a scrape, after it was raised: dcgm-exporter reads DCGM every collect
#: interval (its ``-c``, 30 s by default) and Prometheus scrapes the exporter every 15–60 s, so
#: an XID that killed a job is often first scraped after Slurm's End. The event is taken as
#: raised in ``(r, ts]``: ``r`` = the scrape before it on its series (``XID_PREV_TS``) less
#: :data:`XID_COLLECT_S`, but no earlier than ``ts −`` :data:`XID_GRACE_MAX_S`; where the scrape
#: before is unknown, ``r = ts −`` :data:`XID_SCRAPE_GRACE_S` (METRICS.md, XID rule).
XID_COLLECT_S = 30.0

#: ``r`` of an event whose scrape before is unknown: ``ts`` less a 60-s scrape interval and
#: :data:`XID_COLLECT_S`, seconds.
XID_SCRAPE_GRACE_S = 90.0

#: The earliest ``r`` of any event: ``ts`` less a 5-minute sample interval (file snapshots every
#: 5 minutes) and :data:`XID_COLLECT_S`, seconds; a series not scraped for hours does not reach
#: further back.
XID_GRACE_MAX_S = 330.0

#: The optional column of XID events with the time of the scrape before the event on its
#: series (``sql/analytics/xid_events.sql``), UTC; NULL or absent: unknown.
XID_PREV_TS = "prev_ts"

#: The optional column of XID events with the event's earliest raise time ``r`` (exclusive),
#: UTC, where it is known otherwise than from a scrape before: an hourly DCGM aggregate's XID of
#: hour ``H`` is seen at ``ts = H + 1h`` and raised after ``H −`` :data:`XID_SCRAPE_GRACE_S`
#: (``pipelines.analytics.metrics_build._hourly_xid_events``; METRICS.md, XID rule). Where set
#: it is ``r`` as it stands, neither :data:`XID_PREV_TS` nor :data:`XID_GRACE_MAX_S` applies.
XID_RAISED_AFTER = "raised_after"

_FIVE_MIN = pl.duration(minutes=5)
_ONE_HOUR = pl.duration(hours=1)


@dataclass(frozen=True, slots=True)
class LossPolicy:
    """How much of a failed, preempted or timed-out attempt counts as lost work.

    ``whole_attempt`` (the default, as in the Acme and Philly studies): the whole runtime.
    ``checkpoint`` with interval Δ (``checkpoint_interval_s``) and restart overhead u0
    (``restart_overhead_s``): only min(runtime, Δ/2 + u0), the expected work since the last
    checkpoint plus the restart [Meta, "Revisiting Reliability in Large-Scale ML Research
    Clusters", 2024]; the rest falls through to allocated_idle / goodput. Cancelled work is always
    whole (it is neutral, not a failure).

    Raises:
        ValueError: ``checkpoint`` without a positive interval, or a negative restart overhead.
    """

    kind: Literal["whole_attempt", "checkpoint"] = "whole_attempt"
    checkpoint_interval_s: float | None = None
    restart_overhead_s: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("whole_attempt", "checkpoint"):
            raise ValueError(f"unknown loss policy {self.kind!r}")
        if self.kind == "checkpoint" and not (
            self.checkpoint_interval_s is not None and self.checkpoint_interval_s > 0
        ):
            raise ValueError("the checkpoint policy needs checkpoint_interval_s > 0")
        if self.restart_overhead_s < 0:
            raise ValueError("restart_overhead_s must be ≥ 0")

    def lost_seconds(self, runtime_s: pl.Expr) -> pl.Expr:
        """Seconds of a failed / preempted / timed-out attempt's ``runtime_s`` that are lost."""
        if self.kind == "whole_attempt" or self.checkpoint_interval_s is None:
            return runtime_s
        cap = self.checkpoint_interval_s / 2.0 + self.restart_overhead_s
        return pl.min_horizontal(runtime_s, pl.lit(cap))


def _utc_lit(ts: dt.datetime) -> pl.Expr:
    """A UTC microsecond literal; a naive ``ts`` is read as UTC."""
    ts = ts.replace(tzinfo=dt.UTC) if ts.tzinfo is None else ts.astimezone(dt.UTC)
    return pl.lit(ts).dt.cast_time_unit("us")


def _hour_pieces(spans: pl.LazyFrame, start: str, end: str) -> pl.LazyFrame:
    """Split each row's ``[start, end)`` at hour boundaries.

    Adds ``hour`` (UTC start of hour) and ``_sec`` (seconds of the span inside that hour); rows
    with a NULL bound or ``end <= start`` are dropped. One row per span and hour touched.
    """
    hour_end = pl.col(HOUR) + _ONE_HOUR
    first = pl.col(start).dt.truncate("1h")
    # Hours touched = (hour of the last microsecond − first hour) + 1; exploding a range of
    # integers and adding them as hours is cheaper than exploding a list of datetimes.
    touched = (
        (pl.col(end) - pl.duration(microseconds=1)).dt.truncate("1h") - first
    ).dt.total_hours()
    return (
        spans.filter(pl.col(end) > pl.col(start))
        .with_columns(pl.int_ranges(0, touched + 1).alias("_hour_k"))
        .explode("_hour_k")
        .with_columns((first + pl.duration(hours=pl.col("_hour_k"))).alias(HOUR))
        .drop("_hour_k")
        .with_columns(
            seconds_between(
                pl.min_horizontal(pl.col(end), hour_end),
                pl.max_horizontal(pl.col(start), pl.col(HOUR)),
            ).alias("_sec")
        )
    )


def base_state() -> pl.Expr:
    """The Slurm base state: first word, upper case (``CANCELLED by 123`` → ``CANCELLED``)."""
    return pl.col(STATE).str.strip_chars().str.split(" ").list.first().str.to_uppercase()


def attempt_outcomes(
    attempts: pl.LazyFrame,
    as_of: dt.datetime,
    *,
    xid_events: pl.LazyFrame | None = None,
    policy: LossPolicy | None = None,
    xid_window_s: float = XID_WINDOW_S,
) -> pl.LazyFrame:
    """Each started GPU attempt with its waterfall leaf and the part of its runtime that is lost.

    Rules 3–7 and 9 of the METRICS.md waterfall, per attempt: NODE_FAIL, BOOT_FAIL, or FAILED with
    an XID / health event on one of its nodes that may have been raised in
    ``[end − xid_window_s, end]`` (seen at ``ts ≥ end − xid_window_s`` and raised after
    ``r < end``, see :data:`XID_COLLECT_S`: an XID first scraped shortly after the end counts) →
    ``failed_work_infra``; FAILED otherwise, OUT_OF_MEMORY → ``failed_work_user``; PREEMPTED,
    REQUEUED → ``preempted_work``; TIMEOUT, DEADLINE → ``timeout_work``; CANCELLED, REVOKED →
    ``cancelled_work``; anything else (COMPLETED, RUNNING, SUSPENDED, unknown) → ``goodput``. An
    attempt still running at ``as_of`` (``end_at`` NULL or after ``as_of``) is ``goodput``.

    Args:
        attempts: one row per allocation attempt with ``cluster, state, gpus, start_at, end_at``
            and, for the XID rule, ``node_list`` (list of host names). Rows without a start, with
            a start after ``as_of``, or with 0 / NULL GPUs (CPU-only) are dropped.
        as_of: the data cut-off (UTC; naive is read as UTC).
        xid_events: ``cluster, host, ts`` (UTC) XID / health events, optionally
            :data:`XID_PREV_TS` (the scrape before on the event's series) and
            :data:`XID_RAISED_AFTER` (the earliest raise, exclusive, where known otherwise: an
            hourly aggregate's XID); None: FAILED is never infra.
        policy: :class:`LossPolicy`; default ``whole_attempt``.
        xid_window_s: the look-back before the attempt's end, seconds (METRICS.md: 10 minutes).

    Returns:
        The attempt rows plus ``leaf`` (:data:`LEAF_DTYPE`), ``infra_event`` (an XID matched),
        ``counted_end_at`` (end clipped to ``as_of``), ``runtime_s`` (start → counted end),
        ``lost_s`` (seconds of it in the loss leaf: whole runtime for cancelled work and under
        ``whole_attempt``; 0 for goodput) and ``lost_from_at`` (= counted end − lost: the lost
        part is the attempt's tail, the work since its last checkpoint).
    """
    policy = policy or LossPolicy()
    cut = _utc_lit(as_of)
    state = base_state()
    base = (
        attempts.filter(
            pl.col(START_AT).is_not_null() & (pl.col(START_AT) <= cut) & (pl.col(GPUS) > 0)
        )
        .with_row_index("_rid")
        .with_columns(
            pl.min_horizontal(pl.col(END_AT).fill_null(cut), cut).alias(COUNTED_END_AT),
            (pl.col(END_AT).is_null() | (pl.col(END_AT) > cut)).alias("_running"),
            state.alias("_state"),
        )
    )
    if xid_events is not None:
        failed = (
            base.filter((pl.col("_state") == "FAILED") & ~pl.col("_running"))
            .select("_rid", CLUSTER, END_AT, pl.col(NODE_LIST).alias(HOST))
            .explode(HOST)
            .filter(pl.col(HOST).is_not_null())
            .with_columns(pl.col(END_AT).dt.cast_time_unit("us"))
            .sort(END_AT)
        )
        # r, the event's earliest raise (exclusive): its scrape before less the collect interval,
        # no earlier than ts − XID_GRACE_MAX_S; unknown: ts − XID_SCRAPE_GRACE_S.
        ts = pl.col(TS).dt.cast_time_unit("us")
        raised = ts - pl.duration(seconds=XID_SCRAPE_GRACE_S)
        if XID_PREV_TS in xid_events.collect_schema().names():
            prev = pl.col(XID_PREV_TS).dt.cast_time_unit("us")
            # (max_horizontal skips a NULL: the unknown scrape before is tested first)
            raised = (
                pl.when(prev.is_not_null())
                .then(
                    pl.max_horizontal(
                        prev - pl.duration(seconds=XID_COLLECT_S),
                        ts - pl.duration(seconds=XID_GRACE_MAX_S),
                    )
                )
                .otherwise(raised)
            )
        if XID_RAISED_AFTER in xid_events.collect_schema().names():
            given = pl.col(XID_RAISED_AFTER).dt.cast_time_unit("us")
            raised = pl.when(given.is_not_null()).then(given).otherwise(raised)
        # An event counts where ts ≥ end − window and r < end: per node, the latest ts of the
        # events with r below each value (a running max in r order), found as of the end.
        events = (
            xid_events.filter(pl.col(TS).is_not_null())
            .group_by(CLUSTER, HOST, raised.alias("_raised"))
            .agg(ts.max().alias("_seen"))
            .sort("_raised")
            .with_columns(pl.col("_seen").cum_max().over(CLUSTER, HOST))
        )
        hit = (
            failed.join_asof(
                events,
                left_on=END_AT,
                right_on="_raised",
                by=[CLUSTER, HOST],
                strategy="backward",
                allow_exact_matches=False,
                check_sortedness=False,
            )
            .filter(pl.col("_seen") >= pl.col(END_AT) - pl.duration(seconds=xid_window_s))
            .select("_rid")
            .unique()
            .with_columns(pl.lit(True).alias(INFRA_EVENT))
        )
        base = base.join(hit, on="_rid", how="left").with_columns(
            pl.col(INFRA_EVENT).fill_null(False)
        )
    else:
        base = base.with_columns(pl.lit(False).alias(INFRA_EVENT))

    leaf = (
        pl.when(pl.col("_running"))
        .then(pl.lit("goodput"))
        .when(
            pl.col("_state").is_in(INFRA_STATES)
            | ((pl.col("_state") == "FAILED") & pl.col(INFRA_EVENT))
        )
        .then(pl.lit("failed_work_infra"))
        .when(pl.col("_state").is_in(USER_FAIL_STATES))
        .then(pl.lit("failed_work_user"))
        .when(pl.col("_state").is_in(PREEMPTED_STATES))
        .then(pl.lit("preempted_work"))
        .when(pl.col("_state").is_in(TIMEOUT_STATES))
        .then(pl.lit("timeout_work"))
        .when(pl.col("_state").is_in(CANCELLED_STATES))
        .then(pl.lit("cancelled_work"))
        .otherwise(pl.lit("goodput"))
        .cast(LEAF_DTYPE)
    )
    runtime = pl.max_horizontal(seconds_between(pl.col(COUNTED_END_AT), pl.col(START_AT)), 0.0)
    lost = (
        pl.when(pl.col(LEAF).is_in(LOSS_LEAVES))
        .then(policy.lost_seconds(pl.col(RUNTIME_S)))
        .when(pl.col(LEAF) == "cancelled_work")
        .then(pl.col(RUNTIME_S))
        .otherwise(0.0)
    )
    return (
        base.with_columns(leaf.alias(LEAF), runtime.alias(RUNTIME_S))
        .with_columns(lost.alias(LOST_S))
        .with_columns(
            (
                pl.col(COUNTED_END_AT)
                - pl.duration(microseconds=(pl.col(LOST_S) * 1e6).round().cast(pl.Int64))
            ).alias(LOST_FROM_AT)
        )
        .drop("_rid", "_running", "_state")
    )


def pending_demand_hourly(
    attempts: pl.LazyFrame,
    as_of: dt.datetime,
    *,
    pending: pl.LazyFrame | None = None,
    keys: Sequence[str] = (CLUSTER, PARTITION, TEAM),
) -> pl.LazyFrame:
    """Eligible pending demand in GPU-seconds per ``keys`` (cluster, partition, team) and hour.

    A job is pending demand from its eligible time until it starts, is cancelled or ends
    without starting, or until ``as_of``; it asks for its requested GPUs. Requeued attempts wait
    again from their re-eligible time (each attempt row counts its own wait).

    Args:
        attempts: started attempts with ``cluster, partition, team, req_gpus, gpus, eligible_at,
            start_at``: their wait [eligible, start) is pending demand. ``req_gpus`` NULL or 0
            falls back to ``gpus``.
        as_of: the data cut-off (UTC; naive is read as UTC); nothing after it counts.
        pending: optional never-started rows ``cluster, partition, team, req_gpus, eligible_at,
            end_at`` (cancel / end time; NULL while still pending).
        keys: the columns to keep and group by; both frames must have them.

    Returns:
        ``keys…, hour, pending_gpu_s`` (Σ GPUs × pending seconds in the hour).
        Rows with unknown eligible time, eligible after their start/end, or 0 GPUs add nothing.
    """
    spans = _pending_spans(attempts, as_of, pending, keys)
    return (
        _hour_pieces(spans, "_from", "_to")
        .group_by(*keys, HOUR)
        .agg((pl.col("_gpus") * pl.col("_sec")).sum().alias("pending_gpu_s"))
    )


def _pending_spans(
    attempts: pl.LazyFrame,
    as_of: dt.datetime,
    pending: pl.LazyFrame | None,
    keys: Sequence[str],
) -> pl.LazyFrame:
    """``keys…, _gpus, _from, _to``: one eligible-pending span per attempt wait / pending row."""
    cut = _utc_lit(as_of)
    gpus_asked = pl.when(pl.col(REQ_GPUS) > 0).then(pl.col(REQ_GPUS)).otherwise(pl.col(GPUS))
    spans = [
        attempts.filter(pl.col(START_AT).is_not_null()).select(
            *keys,
            gpus_asked.cast(pl.Float64).alias("_gpus"),
            pl.col(ELIGIBLE_AT).dt.cast_time_unit("us").alias("_from"),
            pl.min_horizontal(pl.col(START_AT), cut).dt.cast_time_unit("us").alias("_to"),
        )
    ]
    if pending is not None:
        spans.append(
            pending.select(
                *keys,
                pl.col(REQ_GPUS).cast(pl.Float64).alias("_gpus"),
                pl.col(ELIGIBLE_AT).dt.cast_time_unit("us").alias("_from"),
                pl.min_horizontal(pl.col(END_AT).fill_null(cut), cut)
                .dt.cast_time_unit("us")
                .alias("_to"),
            )
        )
    return pl.concat(spans).filter((pl.col("_gpus") > 0) & (pl.col("_to") > pl.col("_from")))


def _wait_units(
    attempts: pl.LazyFrame, pending: pl.LazyFrame | None
) -> tuple[pl.LazyFrame, pl.LazyFrame | None]:
    """The waits' rows of ``attempts`` and ``pending`` with a het job's components as one job
    (:func:`metrics.het_jobs.het_wait_units`: Slurm starts them together), so a het job wider
    than one node is a gang's wait whatever its components' sizes; a het job not started as one
    asks only its components' GPUs not running (``demand``: a running component's GPUs are
    allocated); only the columns the waits read. The frames as they are where one has no
    ``job_id``."""
    names = attempts.collect_schema().names()
    if JOB_ID not in names or (
        pending is not None and JOB_ID not in pending.collect_schema().names()
    ):
        return attempts, pending
    cols = (CLUSTER, JOB_ID, ATTEMPT, GPUS, REQ_GPUS, ELIGIBLE_AT, START_AT, END_AT)
    return het_wait_units(
        attempts.select(c for c in cols if c in names),
        None if pending is None else pending.select(CLUSTER, JOB_ID, REQ_GPUS, ELIGIBLE_AT, END_AT),
        demand=True,
    )


def _clipped(frame: pl.LazyFrame, start: str, end: str) -> pl.LazyFrame:
    """``frame`` with ``_from, _to`` = [start, end) cut to the cluster's window [_w0, _w1)."""
    return frame.with_columns(
        pl.max_horizontal(pl.col(start), pl.col("_w0")).alias("_from"),
        pl.min_horizontal(pl.col(end), pl.col("_w1")).alias("_to"),
    )


def _with_kept_and_lost(
    outcomes: pl.LazyFrame,
    holds: pl.LazyFrame | None,
    as_of: dt.datetime,
    node: str | None = None,
) -> pl.LazyFrame:
    """``outcomes`` (:func:`attempt_outcomes` rows), one row per piece of held GPUs
    (:func:`metrics.holds.with_pieces`) with ``_ps, _pe`` (the piece, its end clipped to
    ``as_of``), ``_pg`` (its GPUs), ``_kt`` (the end of its kept part [_ps, _kt)) and ``_lf``
    (the start of its lost part [_lf, _pe)): a goodput attempt's piece is kept whole; any
    other's is kept before the attempt's ``lost_from_at`` and lost from it on. An attempt
    without pieces is its own one piece [start_at, counted_end_at): kept [start, lost_from),
    lost [lost_from, counted_end), as :func:`attempt_outcomes` says. With ``node``, pieces per
    node stay per node, their ``host`` in that column (:func:`metrics.holds.with_pieces`)."""
    cut = _utc_lit(as_of).dt.replace_time_zone("UTC")
    good = pl.col(LEAF) == "goodput"
    lost_from = pl.col(LOST_FROM_AT).dt.cast_time_unit("us")
    return (
        with_pieces(outcomes, holds, node=node)
        .filter(pl.col("_pg") > 0)
        .with_columns(pl.min_horizontal(pl.col("_pe").fill_null(cut), cut).alias("_pe"))
        .with_columns(
            pl.when(good)
            .then(pl.col("_pe"))
            .otherwise(pl.min_horizontal(pl.col("_pe"), lost_from))
            .alias("_kt"),
            pl.when(good)
            .then(pl.col("_pe"))
            .otherwise(pl.max_horizontal(pl.col("_ps"), lost_from))
            .alias("_lf"),
        )
    )


def _held_in_time(
    cap: pl.LazyFrame,
    allocations: pl.LazyFrame,
    waits: pl.LazyFrame,
    bounds: pl.LazyFrame,
    as_of: dt.datetime,
    scale: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """``cluster, hour, _held_t, _gang_t``: per cluster-hour, ∫ min(free GPUs, pending GPUs) dt,
    the GPU-seconds that were free while eligible demand waited, on the time axis, and
    ∫ min(free GPUs, pending GPUs of gangs) dt, the part of it free while gangs waited (a
    gang's wait is one whose ``_gang`` is its GPUs; pending gang GPUs ≤ pending GPUs at every
    instant, so ``_gang_t`` ≤ ``_held_t``), in the same sweep.

    Free GPUs at time t = max(0, a − allocated(t)), with a = the hour's available GPU-seconds
    (capacity − down − planned_down) ÷ 3,600 (the hour's average available GPUs: down time
    inside the hour is spread over it; nothing is allocated or pending after the cut-off, so
    nothing is held there); allocated(t) and pending(t)
    are step functions of the attempts' spans and the waits' spans. Each hour is cut at its
    bounds and at every start and end, so between two cuts both are constant.

    Args:
        cap: ``cluster, hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s`` (nulls filled).
        allocations: ``cluster, _from, _to, gpus``: allocated spans (cut to the window).
        waits: ``cluster, _from, _to, _gpus, _gang``: pending-demand spans (cut to the
            window); ``_gang`` = ``_gpus`` for a gang's wait (wider than one node), else 0.
        bounds: ``cluster, _w0, _w1``: each cluster's window.
        as_of: the data cut-off (nothing after it is known).
        scale: ``cluster, hour, _f``: hours whose allocation counts ``_f`` of itself (a lent
            cluster's allocation cut to what it was lent); allocated(t) × ``_f`` there.

    Each capacity hour is cut at its start and its end, so time in no capacity hour (a gap
    between the days of an incremental build's unit) is no hour's."""
    cut = _utc_lit(as_of)
    zero = pl.lit(0.0)
    events = pl.concat(
        [
            allocations.select(CLUSTER, pl.col("_from").alias("_t"), pl.col(GPUS).alias("_da"),
                               zero.alias("_dp"), zero.alias("_dg")),
            allocations.select(CLUSTER, pl.col("_to").alias("_t"), (-pl.col(GPUS)).alias("_da"),
                               zero.alias("_dp"), zero.alias("_dg")),
            waits.select(CLUSTER, pl.col("_from").alias("_t"), zero.alias("_da"),
                         pl.col("_gpus").alias("_dp"), pl.col("_gang").alias("_dg")),
            waits.select(CLUSTER, pl.col("_to").alias("_t"), zero.alias("_da"),
                         (-pl.col("_gpus")).alias("_dp"), (-pl.col("_gang")).alias("_dg")),
            cap.select(CLUSTER, pl.col(HOUR).alias("_t"), zero.alias("_da"), zero.alias("_dp"),
                       zero.alias("_dg")),
            cap.select(CLUSTER, (pl.col(HOUR) + _ONE_HOUR).alias("_t"), zero.alias("_da"),
                       zero.alias("_dp"), zero.alias("_dg")),
            bounds.select(CLUSTER, pl.col("_w1").alias("_t"), zero.alias("_da"),
                          zero.alias("_dp"), zero.alias("_dg")),
            bounds.select(CLUSTER, pl.min_horizontal(cut, pl.col("_w1")).alias("_t"),
                          zero.alias("_da"), zero.alias("_dp"), zero.alias("_dg")),
        ],
        how="vertical_relaxed",
    )  # fmt: skip
    steps = (
        events.filter(pl.col("_t").is_not_null())
        .group_by(CLUSTER, "_t")
        .agg(pl.col("_da").sum(), pl.col("_dp").sum(), pl.col("_dg").sum())
        .sort(CLUSTER, "_t")
        .with_columns(
            pl.col("_da").cum_sum().over(CLUSTER).alias("_a"),
            pl.col("_dp").cum_sum().over(CLUSTER).alias("_p"),
            pl.col("_dg").cum_sum().over(CLUSTER).alias("_g"),
            seconds_between(pl.col("_t").shift(-1).over(CLUSTER), pl.col("_t")).alias("_dt"),
            pl.col("_t").dt.truncate("1h").alias(HOUR),
        )
        .filter((pl.col("_dt") > 0) & (pl.col("_t") < cut))
    )
    rate = cap.select(
        CLUSTER,
        HOUR,
        ((pl.col(CAPACITY_GPU_S) - pl.col(DOWN_GPU_S) - pl.col(PLANNED_DOWN_GPU_S)) / 3600.0).alias(
            "_avail"
        ),
    )
    if scale is not None:
        rate = rate.join(scale, on=[CLUSTER, HOUR], how="left")
    else:
        rate = rate.with_columns(pl.lit(None, dtype=pl.Float64()).alias("_f"))
    free = (pl.col("_avail") - pl.col("_a") * pl.col("_f").fill_null(1.0)).clip(lower_bound=0.0)
    return (
        steps.join(rate, on=[CLUSTER, HOUR], how="inner")
        .with_columns(free.alias("_free"))
        .with_columns(
            (pl.min_horizontal("_free", pl.col("_p").clip(lower_bound=0.0)) * pl.col("_dt")).alias(
                "_piece"
            ),
            (pl.min_horizontal("_free", pl.col("_g").clip(lower_bound=0.0)) * pl.col("_dt")).alias(
                "_gang_piece"
            ),
        )
        .group_by(CLUSTER, HOUR)
        .agg(pl.col("_piece").sum().alias("_held_t"), pl.col("_gang_piece").sum().alias("_gang_t"))
    )


def _observed(
    pieces: pl.LazyFrame,
    activity: pl.LazyFrame,
    idle_threshold: float,
    bucket_s: float = 300.0,
) -> pl.LazyFrame:
    """Observed and active GPU-seconds per cluster, hour and leaf from bucketed activity.

    ``pieces``: the attempts' pieces of held GPUs (:func:`_with_kept_and_lost`). Each activity
    bucket [b, b + ``bucket_s``) (5 minutes by default) is split, per piece of its attempt,
    into the piece's kept part [_ps, _kt) and lost part [_lf, _pe); observed GPUs =
    min(activity ``gpus``, the piece's GPUs) (the pieces of an attempt do not overlap, so
    no GPU is observed twice). Kept and observed time with activity < θ is
    ``allocated_idle``, the rest of the kept part ``goodput``; the lost part keeps the attempt's
    leaf.
    """
    att = pieces.select(
        CLUSTER,
        JOB_ID,
        ATTEMPT,
        pl.col("_pg").alias("_att_gpus"),
        "_ps",
        "_kt",
        "_lf",
        "_pe",
        LEAF,
    )
    b = pl.col(BUCKET)
    length = pl.duration(microseconds=round(bucket_s * 1e6))
    b_end = b + (_FIVE_MIN if bucket_s == 300.0 else length)
    kept_s = seconds_between(
        pl.min_horizontal(b_end, pl.col("_kt")), pl.max_horizontal(b, pl.col("_ps"))
    ).clip(lower_bound=0.0)
    lost_s = seconds_between(
        pl.min_horizontal(b_end, pl.col("_pe")), pl.max_horizontal(b, pl.col("_lf"))
    ).clip(lower_bound=0.0)
    joined = (
        activity.select(
            CLUSTER,
            JOB_ID,
            ATTEMPT,
            pl.col(BUCKET).dt.cast_time_unit("us"),
            pl.col(ACTIVITY).cast(pl.Float64),
            pl.col(GPUS).cast(pl.Float64).alias("_obs_gpus"),
        )
        .filter(pl.col(ACTIVITY).is_not_null())
        .join(att, on=[CLUSTER, JOB_ID, ATTEMPT], how="inner")
        .with_columns(
            b.dt.truncate("1h").alias(HOUR),
            pl.min_horizontal(pl.col("_obs_gpus").fill_null(pl.col("_att_gpus")), "_att_gpus")
            .clip(lower_bound=0.0)
            .alias("_g"),
            kept_s.alias("_kept_s"),
            lost_s.alias("_lost_s"),
        )
    )
    kept = joined.filter(pl.col("_kept_s") > 0).select(
        CLUSTER,
        HOUR,
        pl.when(pl.col(ACTIVITY) < idle_threshold)
        .then(pl.lit("allocated_idle"))
        .otherwise(pl.lit("goodput"))
        .cast(LEAF_DTYPE)
        .alias(LEAF),
        (pl.col("_g") * pl.col("_kept_s")).alias(OBSERVED_GPU_S),
        (pl.col("_g") * pl.col("_kept_s") * pl.col(ACTIVITY)).alias(ACTIVE_GPU_S),
    )
    lost = joined.filter(pl.col("_lost_s") > 0).select(
        CLUSTER,
        HOUR,
        LEAF,
        (pl.col("_g") * pl.col("_lost_s")).alias(OBSERVED_GPU_S),
        (pl.col("_g") * pl.col("_lost_s") * pl.col(ACTIVITY)).alias(ACTIVE_GPU_S),
    )
    return (
        pl.concat([kept, lost])
        .group_by(CLUSTER, HOUR, LEAF)
        .agg(pl.col(OBSERVED_GPU_S).sum(), pl.col(ACTIVE_GPU_S).sum())
    )


def gpu_waterfall_hourly(
    attempts: pl.LazyFrame,
    capacity: pl.LazyFrame,
    as_of: dt.datetime,
    *,
    pending: pl.LazyFrame | None = None,
    activity: pl.LazyFrame | None = None,
    xid_events: pl.LazyFrame | None = None,
    policy: LossPolicy | None = None,
    idle_threshold: float = 0.05,
    activity_bucket_s: float = 300.0,
    allocated_cap: pl.LazyFrame | None = None,
    nodes: pl.LazyFrame | None = None,
    holds: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """The GPU-time waterfall: one row per cluster, hour and leaf bucket (METRICS.md).

    Leaves, in order: ``down`` and ``planned_down`` (from ``capacity``); the loss leaves 3–7 and
    ``goodput`` per attempt (:func:`attempt_outcomes`, GPU-seconds clipped to each hour, running
    attempts up to ``as_of``); ``allocated_idle`` = kept (not lost) allocated time whose 5-minute
    activity < ``idle_threshold``, only where telemetry exists (unobserved time stays goodput);
    ``held`` = the GPUs free while eligible demand of the cluster waited, on the time axis
    (:func:`_held_in_time`), at most unallocated = max(0, capacity − down − planned_down −
    allocated); ``idle`` = the rest. On the ``held`` row, ``gang_gpu_s`` = **held for gangs**:
    min(held, ∫ min(free GPUs, pending GPUs of gangs) dt) from the same sweep, a gang's wait
    being one asking more GPUs than one node of its cluster has (the cluster's largest node in
    ``nodes``, as :func:`metrics.domains.stranded_hourly`; a het job's components are one wait
    of their summed GPUs, :func:`metrics.het_jobs.het_wait_units`); held − held for gangs =
    held other is ≥ 0 (METRICS.md "The split of the waterfall's leaves").

    When allocated time exceeds capacity − down − planned_down (a capacity or down-time error),
    nothing is clipped: the leaves then sum to more than capacity and
    :func:`check_conservation` reports the hour.

    Args:
        attempts: the ``jobs`` view: ``cluster, job_id, attempt, partition, team, state, gpus,
            req_gpus, eligible_at, start_at, end_at, node_list``; keys ``(cluster, job_id,
            attempt)`` unique (the activity join uses them).
        capacity: ``cluster, hour, capacity_gpu_s, down_gpu_s, planned_down_gpu_s`` (NULL down
            read as 0). Its rows define the output's cluster-hours: allocations outside them are
            not shown (pass a window's capacity rows to compute one window).
        as_of: the data cut-off (UTC; naive is read as UTC).
        pending: never-started rows for held demand (see :func:`pending_demand_hourly`); the
            waits of started attempts count as pending demand either way.
        activity: ``cluster, job_id, attempt, bucket (5-minute start, UTC), activity (0–1),
            gpus`` (GPUs observed in the bucket; NULL = all); None or empty: no telemetry.
        xid_events: ``cluster, host, ts`` for the FAILED → infra rule; None: none known.
        policy: :class:`LossPolicy` (default ``whole_attempt``).
        idle_threshold: θ, activity below which observed time is ``allocated_idle``.
        activity_bucket_s: the length of an ``activity`` bucket in seconds: 300 (5-minute
            buckets, the default) or any divisor of 3600 up to 3600 (hourly aggregates, e.g.
            one row per GPU and hour with ``gpus`` = 1, for long windows).
        allocated_cap: ``cluster, hour, allocated_gpu_s``: where a cluster-hour has a row and
            its attempts' allocated GPU-seconds exceed it, the allocated leaves 3–9 (and their
            ``observed_gpu_s``/``active_gpu_s``) are scaled by cap ÷ allocated before ``held``
            and ``idle`` are computed — the allocation a Slurm cluster run in slurmd pods was
            lent (METRICS.md "Slurm on Kubernetes", layer ownership in the fleet-wide tables);
            None: no cap.
        nodes: ``cluster, gpus`` (``core.nodes`` rows): g = each cluster's largest node; a wait
            asking more than g GPUs is a gang's. None, or a cluster without a row: no wait is
            a gang's (``gang_gpu_s`` 0).
        holds: the pieces of held GPUs of the attempts that did not hold ``gpus`` over their
            span (:func:`metrics.holds.with_pieces`): each attempt's leaves, ``held``'s
            allocation and its observed time are of its pieces (METRICS.md "GPU holding"):
            the kept part of a piece is before the attempt's ``lost_from_at``, the lost part
            from it on (a piece held past the attempt's end, as in an eviction's grace period,
            is of the attempt's leaf); None: every attempt holds ``gpus`` over its span.

    Returns:
        ``cluster, hour, leaf, gpu_s, observed_gpu_s, active_gpu_s, capacity_gpu_s,
        gang_gpu_s``: 11 rows per cluster-hour in leaf order. ``observed_gpu_s`` = GPU-seconds of
        the leaf with telemetry, ``active_gpu_s`` = Σ activity × observed GPU-seconds (both 0
        outside leaves 3–9); ``capacity_gpu_s`` repeats the hour's capacity so checks need no
        second input; ``gang_gpu_s`` = the GPU-seconds of ``held`` held for gangs (0 on every
        other leaf).

    Raises:
        ValueError: ``activity_bucket_s`` is not a positive divisor of 3600.
    """
    if not (0 < activity_bucket_s <= 3600 and (3600 / activity_bucket_s).is_integer()):
        raise ValueError(f"activity_bucket_s must divide 3600, got {activity_bucket_s}")
    cap = capacity.select(
        CLUSTER,
        pl.col(HOUR).dt.cast_time_unit("us"),
        pl.col(CAPACITY_GPU_S).cast(pl.Float64).fill_null(0.0),
        pl.col(DOWN_GPU_S).cast(pl.Float64).fill_null(0.0),
        pl.col(PLANNED_DOWN_GPU_S).cast(pl.Float64).fill_null(0.0),
    )
    bounds = cap.group_by(CLUSTER).agg(
        pl.col(HOUR).min().alias("_w0"), (pl.col(HOUR).max() + _ONE_HOUR).alias("_w1")
    )
    outcomes = attempt_outcomes(attempts, as_of, xid_events=xid_events, policy=policy).join(
        bounds, on=CLUSTER, how="inner"
    )
    # one row per piece of held GPUs (METRICS.md "GPU holding"), cut to the window
    pieces = _with_kept_and_lost(outcomes, holds, as_of).filter(
        (pl.col("_ps") < pl.col("_w1")) & (pl.col("_pe") > pl.col("_w0"))
    )
    lost_cols = [*LOSS_LEAVES, "cancelled_work"]
    # Spans are cut to the window first, so a month-long job adds 24 rows to a day, not 720.
    lost = (
        _hour_pieces(_clipped(pieces.filter(pl.col(LEAF) != "goodput"), "_lf", "_pe"),
                     "_from", "_to")
        .group_by(CLUSTER, HOUR)
        .agg(
            (pl.col("_pg") * pl.col("_sec")).filter(pl.col(LEAF) == leaf).sum().alias(leaf)
            for leaf in lost_cols
        )
    )  # fmt: skip
    kept = (
        _hour_pieces(_clipped(pieces, "_ps", "_kt"), "_from", "_to")
        .group_by(CLUSTER, HOUR)
        .agg((pl.col("_pg") * pl.col("_sec")).sum().alias("_kept"))
    )
    obs_schema = {
        CLUSTER: pl.String(),
        HOUR: pl.Datetime("us", "UTC"),
        LEAF: LEAF_DTYPE,
        OBSERVED_GPU_S: pl.Float64(),
        ACTIVE_GPU_S: pl.Float64(),
    }
    observed = (
        _observed(
            pieces,
            activity.join(bounds, on=CLUSTER, how="inner").filter(
                pl.col(BUCKET).dt.cast_time_unit("us").is_between("_w0", "_w1", closed="left")
            ),
            idle_threshold,
            activity_bucket_s,
        )
        if activity is not None
        else pl.LazyFrame(schema=obs_schema)
    )
    idle_obs = (
        observed.filter(pl.col(LEAF) == "allocated_idle")
        .group_by(CLUSTER, HOUR)
        .agg(pl.col(OBSERVED_GPU_S).sum().alias("allocated_idle"))
    )
    # a het job waits as one job (a gang's when wider than one node), held counts its GPUs
    waiting, waiting_pending = _wait_units(attempts, pending)
    waits = _clipped(
        _pending_spans(waiting, as_of, waiting_pending, (CLUSTER,)).join(bounds, on=CLUSTER),
        "_from",
        "_to",
    ).filter(pl.col("_to") > pl.col("_from"))
    # a gang's wait asks more GPUs than the cluster's largest node has (as metrics.domains)
    if nodes is not None:
        per_node = nodes.group_by(CLUSTER).agg(pl.col(GPUS).cast(pl.Float64).max().alias("_gpn"))
        waits = waits.join(per_node, on=CLUSTER, how="left")
        gang = pl.when(pl.col("_gpus") > pl.col("_gpn")).then(pl.col("_gpus")).otherwise(0.0)
    else:
        gang = pl.lit(0.0)
    waits = waits.with_columns(gang.alias("_gang"))
    spans = _clipped(pieces, "_ps", "_pe").filter(pl.col("_to") > pl.col("_from"))
    wide = (
        cap.join(lost, on=[CLUSTER, HOUR], how="left")
        .join(kept, on=[CLUSTER, HOUR], how="left")
        .join(idle_obs, on=[CLUSTER, HOUR], how="left")
        .with_columns(pl.col([*lost_cols, "_kept", "allocated_idle"]).fill_null(0.0))
    )
    scale = pl.LazyFrame(
        schema={CLUSTER: pl.String(), HOUR: pl.Datetime("us", "UTC"), "_f": pl.Float64()}
    )
    if allocated_cap is not None:
        raw = pl.sum_horizontal(*lost_cols, "_kept")
        capped = allocated_cap.select(
            CLUSTER,
            pl.col(HOUR).dt.cast_time_unit("us"),
            pl.col("allocated_gpu_s").cast(pl.Float64).clip(0.0).alias("_cap"),
        )
        wide = wide.join(capped, on=[CLUSTER, HOUR], how="left").with_columns(
            pl.when(pl.col("_cap").is_not_null() & (raw > pl.col("_cap")))
            .then(pl.col("_cap") / raw)
            .otherwise(1.0)
            .alias("_f")
        )
        scale = wide.filter(pl.col("_f") < 1.0).select(CLUSTER, HOUR, "_f")
        wide = wide.with_columns(
            pl.col([*lost_cols, "_kept", "allocated_idle"]) * pl.col("_f")
        ).drop("_cap", "_f")
    # held on the time axis, with the allocation scaled as the leaves are (a lent cluster's
    # GPUs its cap declares unallocated are free while demand waits)
    held_t = _held_in_time(
        cap,
        spans.select(CLUSTER, "_from", "_to", pl.col("_pg").alias(GPUS)),
        waits.select(CLUSTER, "_from", "_to", "_gpus", "_gang"),
        bounds,
        as_of,
        scale,
    )
    wide = wide.join(held_t, on=[CLUSTER, HOUR], how="left").with_columns(
        pl.col("_held_t", "_gang_t").fill_null(0.0)
    )
    allocated = pl.sum_horizontal(*lost_cols, "_kept")
    unallocated = (
        pl.col(CAPACITY_GPU_S) - pl.col(DOWN_GPU_S) - pl.col(PLANNED_DOWN_GPU_S) - allocated
    ).clip(lower_bound=0.0)
    wide = wide.with_columns(
        pl.col(DOWN_GPU_S).alias("down"),
        pl.col(PLANNED_DOWN_GPU_S).alias("planned_down"),
        (pl.col("_kept") - pl.col("allocated_idle")).alias("goodput"),
        pl.min_horizontal(unallocated, pl.col("_held_t")).alias("held"),
        unallocated.alias("_unalloc"),
    ).with_columns(
        (pl.col("_unalloc") - pl.col("held")).alias("idle"),
        pl.min_horizontal("held", "_gang_t").alias("_gang"),
    )
    long = wide.unpivot(
        on=list(WATERFALL_LEAVES),
        index=[CLUSTER, HOUR, CAPACITY_GPU_S, "_gang"],
        variable_name=LEAF,
        value_name=GPU_S,
    ).with_columns(
        pl.col(LEAF).cast(LEAF_DTYPE),
        pl.when(pl.col(LEAF) == "held").then(pl.col("_gang")).otherwise(0.0).alias(GANG_GPU_S),
    )
    observed = observed.join(scale, on=[CLUSTER, HOUR], how="left").with_columns(
        pl.col(OBSERVED_GPU_S, ACTIVE_GPU_S) * pl.col("_f").fill_null(1.0)
    )
    return (
        long.join(observed.drop("_f"), on=[CLUSTER, HOUR, LEAF], how="left")
        .with_columns(pl.col(OBSERVED_GPU_S, ACTIVE_GPU_S).fill_null(0.0))
        .select(
            CLUSTER, HOUR, LEAF, GPU_S, OBSERVED_GPU_S, ACTIVE_GPU_S, CAPACITY_GPU_S, GANG_GPU_S
        )
        .sort(CLUSTER, HOUR, LEAF)
    )


def check_conservation(waterfall: pl.LazyFrame, *, tolerance: float = 0.001) -> pl.LazyFrame:
    """Cluster-hours whose leaves do not sum to capacity within ``tolerance`` (relative).

    Args:
        waterfall: the output of :func:`gpu_waterfall_hourly`.
        tolerance: allowed |Σ leaves − capacity| as a fraction of capacity (METRICS.md: 0.1 %).
            With capacity 0, any non-zero leaf sum violates.

    Returns:
        ``cluster, hour, capacity_gpu_s, leaves_gpu_s, diff_gpu_s`` (Σ leaves − capacity), one row
        per violating cluster-hour; empty when the waterfall is conserved.
    """
    sums = waterfall.group_by(CLUSTER, HOUR).agg(
        pl.col(CAPACITY_GPU_S).first(), pl.col(GPU_S).sum().alias("leaves_gpu_s")
    )
    diff = pl.col("leaves_gpu_s") - pl.col(CAPACITY_GPU_S)
    return (
        sums.with_columns(diff.alias("diff_gpu_s"))
        .filter(pl.col("diff_gpu_s").abs() > tolerance * pl.col(CAPACITY_GPU_S).abs() + 1e-9)
        .select(CLUSTER, HOUR, CAPACITY_GPU_S, "leaves_gpu_s", "diff_gpu_s")
        .sort(CLUSTER, HOUR)
    )


def _ratio(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    return pl.when(den > 0).then(num / den).otherwise(None)


def headline_ratios(
    waterfall: pl.LazyFrame, by: Sequence[str | pl.Expr] = (CLUSTER,)
) -> pl.LazyFrame:
    """The METRICS.md headline ratios of a waterfall, per group.

    Args:
        waterfall: the output of :func:`gpu_waterfall_hourly` (extra columns, e.g. a ``day``
            derived from ``hour``, may be added to group by).
        by: group columns or expressions; ``()`` for the whole fleet.

    Returns:
        ``by…, capacity_gpu_s, down_gpu_s, planned_down_gpu_s, allocated_gpu_s, goodput_gpu_s,
        observed_allocated_gpu_s, occupancy, goodput_ratio, allocated_activity,
        telemetry_coverage, goodput_telemetry_coverage`` where occupancy = allocated / (capacity −
        down − planned_down); fleet goodput ratio = goodput / capacity; allocated activity =
        Σ activity × observed ÷ Σ observed over allocated leaves; telemetry coverage = observed
        allocated / allocated; goodput telemetry coverage = observed goodput / goodput (how much of
        the goodput is verified). A ratio with a 0 denominator is NULL.
    """
    leaf = pl.col(LEAF)
    alloc = leaf.is_in(ALLOCATED_LEAVES)
    aggs = [
        pl.col(CAPACITY_GPU_S).filter(leaf == "down").sum(),
        pl.col(GPU_S).filter(leaf == "down").sum().alias(DOWN_GPU_S),
        pl.col(GPU_S).filter(leaf == "planned_down").sum().alias(PLANNED_DOWN_GPU_S),
        pl.col(GPU_S).filter(alloc).sum().alias("allocated_gpu_s"),
        pl.col(GPU_S).filter(leaf == "goodput").sum().alias("goodput_gpu_s"),
        pl.col(OBSERVED_GPU_S).filter(alloc).sum().alias("observed_allocated_gpu_s"),
        pl.col(ACTIVE_GPU_S).filter(alloc).sum().alias("_active"),
        pl.col(OBSERVED_GPU_S).filter(leaf == "goodput").sum().alias("_obs_goodput"),
    ]
    sums = waterfall.group_by(*by).agg(aggs) if by else waterfall.select(aggs)
    avail = pl.col(CAPACITY_GPU_S) - pl.col(DOWN_GPU_S) - pl.col(PLANNED_DOWN_GPU_S)
    return sums.with_columns(
        _ratio(pl.col("allocated_gpu_s"), avail).alias("occupancy"),
        _ratio(pl.col("goodput_gpu_s"), pl.col(CAPACITY_GPU_S)).alias("goodput_ratio"),
        _ratio(pl.col("_active"), pl.col("observed_allocated_gpu_s")).alias("allocated_activity"),
        _ratio(pl.col("observed_allocated_gpu_s"), pl.col("allocated_gpu_s")).alias(
            "telemetry_coverage"
        ),
        _ratio(pl.col("_obs_goodput"), pl.col("goodput_gpu_s")).alias("goodput_telemetry_coverage"),
    ).drop("_active", "_obs_goodput")
