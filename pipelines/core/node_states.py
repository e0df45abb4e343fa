"""Registered capacity and node-event GPU-seconds per cluster-hour (pure polars).

Over the rows of Slurm's ``sacctmgr show event`` (``raw.slurm_events``: ``event``, ``cluster``,
``node``, ``state``, ``start_at``, ``end_at``, ``gpus``):

- :func:`registered_gpu_seconds_hourly`: the cluster TRES registrations as GPU-seconds per hour
  (sreport's *Reported* capacity);
- :func:`node_event_gpu_seconds_hourly`: node down/drain intervals as GPU-seconds per state and
  hour;
- :func:`latest_node_events`: each event once over several exports (a closed copy wins);
- :func:`planned_reason`: whether a node event's reason names a planned outage;
- :func:`unallocated_node_events` (from :mod:`metrics.node_allocation`, one rule with the
  Kubernetes node states): the parts of the node events no allocation holds (allocated time on
  a node wins over its down / planned-down state, per node and instant).
- :func:`snapshot_node_events`: node events implied by ``scontrol show node`` snapshots
  (``raw.slurm_nodes``) of down or drained nodes, on clusters without ``sacctmgr`` node events;
- :func:`maint_reservation_node_events`: planned-down node events of the nodes in ``MAINT``
  reservations (``raw.slurm_reservations``), where no other node event covers them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import polars as pl

from metrics.node_allocation import unallocated_node_events

__all__ = [
    "EVENT_KEY",
    "MAINT_RESERVATION_STATE",
    "RECURRING_RESERVATION_FLAGS",
    "SLURM_DOWN_STATES",
    "SLURM_PLANNED_REASON",
    "SLURM_UNPLANNED_REASON",
    "latest_node_events",
    "maint_reservation_node_events",
    "node_event_gpu_seconds_hourly",
    "node_event_state",
    "planned_reason",
    "registered_gpu_seconds_hourly",
    "slurm_node_down",
    "snapshot_node_events",
    "unallocated_node_events",
]

#: A node event reason (lower-cased) naming a planned outage: maintenance, an upgrade, a reboot
#: an admin asked for (``scontrol reboot``: "reboot requested", "Reboot ASAP", ``REBOOT_ISSUED``).
SLURM_PLANNED_REASON = r"maint|planned|reboot|upgrade"

#: A reason (lower-cased) of an unplanned outage that :data:`SLURM_PLANNED_REASON` would match,
#: or that slurmctld or a node health check sets by itself: "Node unexpectedly rebooted
#: boot_time=…" (slurmctld, a node back from a crash), "Not responding", "Kill task failed",
#: "batch job complete failure", "reboot timed out" (a requested reboot that never came back),
#: "NHC: …" (Node Health Check). It wins over a planned word.
SLURM_UNPLANNED_REASON = (
    r"unexpected|not responding|kill task failed|batch job complete failure|reboot timed out"
    r"|\bnhc\b|health check"
)


#: ``scontrol show node`` state words (the base state or a ``+`` flag, ``*``-type marks already
#: split off by the parser) of a node that is down or drained, the states ``sacctmgr show event``
#: records as node events: ``DOWN``, ``DRAIN`` (``IDLE+DRAIN``: drained; ``MIXED+DRAIN``:
#: draining), ``FAIL`` (``FAILING``), and ``sinfo``'s ``DRAINED``/``DRAINING`` spellings.
#: ``NOT_RESPONDING`` alone (``IDLE*``) is not one: slurmctld sets such a node ``DOWN`` (reason
#: "Not responding") only after ``SlurmdTimeout``, and records no event before.
SLURM_DOWN_STATES = ("DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING")

#: The ``state`` of the node events :func:`maint_reservation_node_events` makes (``scontrol show
#: node`` prints a node in a ``MAINT`` reservation as ``IDLE+MAINT+RESERVED``): planned_down
#: whatever the reservation's name (:func:`node_event_state`).
MAINT_RESERVATION_STATE = "MAINT+RESERVED"

_FAR = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)

#: The identity of a ``sacctmgr show event`` row across exports: its kind (``cluster`` / ``node``),
#: cluster, node (NULL for a cluster registration) and start.
EVENT_KEY = ("cluster", "event", "node", "start_at")


def latest_node_events(events: pl.DataFrame) -> pl.DataFrame:
    """Each Slurm event once over several exports: per :data:`EVENT_KEY`, a copy with an end
    time over an open one (``TimeEnd`` Unknown), then the latest load (``ingest_id``, then
    ``line_no``), whatever order the exports were loaded in.

    slurmdbd closes an event once (its end, once known, is final), so an open copy of a closed
    event is an older export's view: a day loaded again, or late, after the day that closed it
    must not reopen the event to the cut-off (a node DOWN 20:00–01:00 seen open the day
    before is down 5 h, not until the data's end; a cluster registration closed at 10:00 no
    longer counts after it, beside the registration that replaced it).

    Args:
        events: ``raw.slurm_events`` rows (:data:`EVENT_KEY`, ``end_at``, ``ingest_id``,
            ``line_no`` and any other columns, kept).

    Returns:
        The kept rows, in the order of their copies' first rows; the same rows for the input in
        any order (no two copies of one event share an ingest id and a line number).
    """
    return events.sort(pl.col("end_at").is_not_null(), "ingest_id", "line_no").unique(
        list(EVENT_KEY), keep="last", maintain_order=True
    )


def planned_reason(reason: pl.Expr) -> pl.Expr:
    """True where a Slurm node event's ``reason`` names a planned outage (planned_down): it
    matches :data:`SLURM_PLANNED_REASON` and not :data:`SLURM_UNPLANNED_REASON`, both
    case-insensitive; NULL reason → False (down). "reboot requested" → True; "Node unexpectedly
    rebooted boot_time=…" → False (METRICS.md "Node states")."""
    r = reason.fill_null("").str.to_lowercase()
    return r.str.contains(SLURM_PLANNED_REASON) & ~r.str.contains(SLURM_UNPLANNED_REASON)


def node_event_state() -> pl.Expr:
    """``'planned'`` for a Slurm node event of a ``MAINT`` reservation
    (:data:`MAINT_RESERVATION_STATE`) or whose ``reason`` names a planned outage
    (:func:`planned_reason`), else ``'down'``: the ``state`` :func:`unallocated_node_events`
    takes."""
    planned = planned_reason(pl.col("reason")) | (
        pl.col("state") == MAINT_RESERVATION_STATE
    ).fill_null(value=False)
    return pl.when(planned).then(pl.lit("planned")).otherwise(pl.lit("down"))


def _event_seconds_hourly(
    events: pl.LazyFrame, start: dt.datetime, end: dt.datetime, as_of: dt.datetime,
    by: Sequence[str],
) -> pl.LazyFrame:  # fmt: skip
    """Σ gpus × overlap(event, hour) per ``by`` and hour, over the whole hours of [start, end)."""
    lo = pl.lit(start).dt.cast_time_unit("us").dt.convert_time_zone("UTC")
    hi = pl.lit(end).dt.cast_time_unit("us").dt.convert_time_zone("UTC")
    cut = pl.lit(as_of).dt.cast_time_unit("us").dt.convert_time_zone("UTC")
    spans = (
        events.filter(pl.col("gpus").is_not_null() & (pl.col("gpus") > 0))
        .with_columns(
            _s=pl.max_horizontal(pl.col("start_at"), lo),
            _e=pl.min_horizontal(pl.col("end_at").fill_null(cut), cut, hi),
        )
        .filter(pl.col("_e") > pl.col("_s"))
        .with_columns(
            hour=pl.datetime_ranges(
                pl.col("_s").dt.truncate("1h"),
                pl.col("_e") - pl.duration(microseconds=1),
                interval="1h",
            )
        )
        .explode("hour")
    )
    overlap = (
        pl.min_horizontal(pl.col("_e"), pl.col("hour") + pl.duration(hours=1))
        - pl.max_horizontal(pl.col("_s"), pl.col("hour"))
    ).dt.total_microseconds() / 1e6
    return (
        spans.with_columns((pl.col("gpus") * overlap).alias("gpu_s"))
        .group_by(*by, "hour")
        .agg(pl.col("gpu_s").sum())
        .sort(*by, "hour")
    )


def registered_gpu_seconds_hourly(
    events: pl.LazyFrame, start: dt.datetime, end: dt.datetime, as_of: dt.datetime
) -> pl.LazyFrame:
    """GPU capacity per cluster and hour from the cluster TRES registrations (sreport *Reported*).

    A cluster event holds its registered GPUs from ``start_at`` until ``end_at`` (an open event
    until ``as_of``), so an hour in which the cluster registered at 02:38:23 has 32 GPUs ×
    1297 s, as sreport counts it; node events are ignored here.

    Args:
        events: ``raw.slurm_events`` rows (``event``, ``cluster``, ``start_at``,
            ``end_at``, ``gpus``); cluster events with NULL ``gpus`` (no TRES column) add nothing:
            fill them from the inventory first.
        start: start of the window (aware; normally a whole hour).
        end: end of the window (aware, exclusive).
        as_of: the data cut-off (aware): open events count up to it.

    Returns:
        ``cluster, hour, capacity_gpu_s`` (GPU-seconds), one row per cluster-hour with any
        registered GPUs.
    """
    cluster_events = events.filter(pl.col("event") == "cluster")
    return _event_seconds_hourly(cluster_events, start, end, as_of, ["cluster"]).rename(
        {"gpu_s": "capacity_gpu_s"}
    )


def node_event_gpu_seconds_hourly(
    events: pl.LazyFrame, start: dt.datetime, end: dt.datetime, as_of: dt.datetime
) -> pl.LazyFrame:
    """GPU-seconds of nodes in each event state (``DOWN``, ``DRAIN``, …) per cluster and hour.

    Args:
        events: ``raw.slurm_events`` rows; node events with their ``gpus`` (from the
            event's TRES, or filled from the inventory).
        start: start of the window (aware; normally a whole hour).
        end: end of the window (aware, exclusive).
        as_of: the data cut-off (aware): open events count up to it.

    Returns:
        ``cluster, state, hour, gpu_s``: every event's GPUs as they are; a drained node still
        running a job is counted here too unless the events are first passed through
        :func:`unallocated_node_events`.
    """
    node_events = events.filter(pl.col("event") == "node")
    return _event_seconds_hourly(node_events, start, end, as_of, ["cluster", "state"])


def snapshot_node_events(snapshots: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Node events implied by ``scontrol show node`` snapshots, on clusters without sacctmgr's.

    ``sacctmgr show event`` is the system of record wherever it is loaded (sreport reads it
    alone): a cluster with any ``sacctmgr`` node event in ``events`` takes its down time from
    those only, and its snapshots add nothing (a snapshot is dated by when its file was written,
    not by when the state changed, so it cannot extend or cut an event slurmdbd recorded).

    On the other clusters, a snapshot (the node's state *at* ``snapshot_at``) whose base state
    or a flag is one of :data:`SLURM_DOWN_STATES` and whose reason carries its ``[user@time]``
    (``reason_at``) says the node has been down or drained since ``reason_at``. Per node,
    snapshots in time order (then ``ingest_id``, ``line_no``): consecutive ones of the same
    ``reason_at`` and reason are one event, from ``reason_at`` (not before the node's previous
    snapshot, which said otherwise, nor after the event's first snapshot) to the node's next
    snapshot that is not in it: up (the state held until that snapshot, as for Kubernetes Node
    snapshots, METRICS.md "Node states"), or down or drained anew (ending where that event
    starts); open (NULL end: to the cut-off) when no later snapshot is. A down snapshot without
    a reason time, or without ``snapshot_at`` (loaded before snapshots were dated), starts and
    ends nothing. Only the first and last snapshot of each run of like states matter, so the
    result is the same over ``sql/analytics/slurm_node_snapshots.sql``'s state changes.

    Args:
        snapshots: ``raw.slurm_nodes`` rows: ``cluster, host, gpus, state, base_state,
            state_flags (list), reason, reason_at, snapshot_at, ingest_id, line_no``.
        events: ``sacctmgr`` node events: ``cluster, node, start_at`` (others ignored); an
            ``event`` column, where present, keeps its ``'node'`` rows.

    Returns:
        ``cluster, event ('node'), node, start_at, end_at (NULL: open), state (the snapshot's,
        e.g. ``IDLE+DRAIN``), reason, gpus`` (the snapshot's GPUs, NULL where 0: the
        inventory's then), sorted; classified down / planned_down by
        :func:`planned_reason` as sacctmgr events are.
    """
    ts = pl.Datetime("us", "UTC")
    out_schema = {"cluster": pl.String(), "event": pl.String(), "node": pl.String(),
                  "start_at": ts, "end_at": ts, "state": pl.String(), "reason": pl.String(),
                  "gpus": pl.Float64()}  # fmt: skip
    ev = events.filter(pl.col("event") == "node") if "event" in events.columns else events
    recorded = ev.filter(pl.col("node").is_not_null() & pl.col("start_at").is_not_null())
    words = pl.concat_list(pl.col("base_state").cast(pl.String), pl.col("state_flags"))
    is_down = words.list.eval(pl.element().is_in(SLURM_DOWN_STATES)).list.any().fill_null(False)
    snap = (
        snapshots.filter(pl.col("snapshot_at").is_not_null())
        .join(recorded.select("cluster").unique(), on="cluster", how="anti")
        .with_columns(
            pl.col("snapshot_at", "reason_at").cast(ts),
            (is_down & pl.col("reason_at").is_not_null()).alias("_down"),
            (is_down & pl.col("reason_at").is_null()).alias("_silent"),
        )
        .filter(~pl.col("_silent"))
        .sort("cluster", "host", "snapshot_at", "ingest_id", "line_no")
    )
    if snap.height == 0 or not snap["_down"].any():
        return pl.DataFrame(schema=out_schema)
    key = ["cluster", "host"]
    # a run: consecutive snapshots of one node with the same down key (an up one: its own run)
    runs = snap.with_columns(
        pl.when("_down").then(pl.struct("reason_at", "reason")).alias("_key"),
        pl.col("snapshot_at").shift(1).over(key).alias("_prev_t"),
    ).with_columns(
        (
            ~pl.col("_down") | (pl.col("_key") != pl.col("_key").shift(1).over(key)).fill_null(True)
        ).alias("_new")
    )
    runs = runs.with_columns(pl.col("_new").cum_sum().over(key).alias("_run"))
    per_run = (
        runs.group_by(*key, "_run", maintain_order=True)
        .agg(
            pl.col("_down").first(),
            pl.col("reason_at").first(),
            pl.col("reason").first(),
            pl.col("state").last(),
            pl.col("gpus").last(),
            pl.col("snapshot_at").first().alias("_first_t"),
            pl.col("snapshot_at").last().alias("_last_t"),
            pl.col("_prev_t").first(),
        )
        .with_columns(
            pl.min_horizontal(pl.max_horizontal("reason_at", "_prev_t"), "_first_t").alias("_start")
        )
        .with_columns(
            # the next run's own start where it is down too, else its first snapshot
            pl.when(pl.col("_down").shift(-1).over(key))
            .then(pl.max_horizontal(pl.col("_start").shift(-1).over(key), "_last_t"))
            .otherwise(pl.col("_first_t").shift(-1).over(key))
            .alias("_end")
        )
        .filter(pl.col("_down"))
    )
    return (
        per_run.filter(pl.col("_end").is_null() | (pl.col("_end") > pl.col("_start")))
        .select(
            "cluster",
            pl.lit("node").alias("event"),
            pl.col("host").alias("node"),
            pl.col("_start").cast(ts).alias("start_at"),
            pl.col("_end").cast(ts).alias("end_at"),
            "state",
            "reason",
            pl.when(pl.col("gpus") > 0).then(pl.col("gpus").cast(pl.Float64)).alias("gpus"),
        )
        .sort("cluster", "node", "start_at")
    )


#: The flags of a recurring Slurm reservation (``scontrol create reservation``): after each
#: occurrence slurmctld moves it on to the next, which has its own start.
RECURRING_RESERVATION_FLAGS = ("HOURLY", "DAILY", "WEEKDAY", "WEEKEND", "WEEKLY")


def _current_reservations(reservations: pl.DataFrame) -> pl.DataFrame:
    """The reservation rows that count: per reservation, its latest load's row, and for a
    recurring one (:data:`RECURRING_RESERVATION_FLAGS` on that row) also its past occurrences.

    A reservation is its ``cluster, name`` and ``reservation_id`` (a row without an id, as
    ``scontrol`` prints none, is the reservation of that name whose latest row has one). Its
    latest row (``ingest_id``, then ``start_at``, as one history listing may hold several
    occurrences, then ``line_no``; rows without ``start_at`` left out) decides its
    times and flags: an older load's row of it (a reservation since moved, or its ``MAINT`` flag
    since removed) counts no more. An occurrence of a recurring one is its latest row per
    ``start_at``; besides the latest row's, an occurrence counts where a row showed it started:
    ``state`` ``ACTIVE`` (``scontrol``), or, for a history row (``state`` NULL), ``start_at`` at
    or before its ``snapshot_at``, or, without one, before the latest row's start (slurmdbd
    keeps a record per occurrence that started, and moves one not started in place). An
    occurrence seen only before it started, and not in the latest row, was moved or deleted.

    Columns missing from ``reservations`` (``reservation_id``, ``flags``, ``state``,
    ``snapshot_at``, ``ingest_id``, ``line_no``) read as NULL. Returns the counting rows, in
    ``reservations``' columns.
    """
    ts = pl.Datetime("us", "UTC")
    optional = {"reservation_id": pl.Int64(), "flags": pl.List(pl.String()),
                "state": pl.String(), "snapshot_at": ts, "ingest_id": pl.Int64(),
                "line_no": pl.Int64()}  # fmt: skip
    cols = reservations.columns
    res = (
        reservations.with_columns(
            **{c: pl.lit(None, dtype=t) for c, t in optional.items() if c not in cols}
        )
        .filter(pl.col("start_at").is_not_null())
        .sort("ingest_id", "start_at", "line_no", nulls_last=False, maintain_order=True)
        .with_row_index("_ord")
    )
    rid = pl.col("reservation_id")
    res = res.with_columns(
        rid.fill_null(rid.filter(rid.is_not_null()).last().over("cluster", "name")).alias("_rid")
    )
    rkey = ["cluster", "name", "_rid"]
    last = pl.col("_ord") == pl.col("_ord").max().over(rkey)
    rec = (
        pl.col("flags")
        .list.set_intersection(pl.lit(list(RECURRING_RESERVATION_FLAGS)))
        .list.len()
        .gt(0)
        .fill_null(value=False)
    )
    # whether the row shows the occurrence started (a history row: see the docstring)
    started = (
        pl.when(pl.col("state").is_not_null())
        .then(pl.col("state").str.to_uppercase() == "ACTIVE")
        .when(pl.col("snapshot_at").is_not_null())
        .then(pl.col("start_at") <= pl.col("snapshot_at"))
        .otherwise(pl.col("start_at") < pl.col("_last_start"))
        .fill_null(value=False)
    )
    return (
        res.with_columns(
            last.alias("_last"),
            rec.filter(last).first().over(rkey).alias("_rec"),
            pl.col("start_at").filter(last).first().over(rkey).alias("_last_start"),
        )
        .with_columns(started.any().over(*rkey, "start_at").alias("_past"))
        .filter(pl.col("_ord") == pl.col("_ord").max().over(*rkey, "start_at"))
        .filter(pl.col("_last") | (pl.col("_rec") & pl.col("_past")))
        .sort("_ord")
        .select(cols)
    )


def maint_reservation_node_events(reservations: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Planned-down node events of the nodes in ``MAINT`` reservations, where no other node
    event is.

    A reservation with the ``MAINT`` flag holds its nodes for maintenance from ``start_at`` to
    ``end_at``: slurmdbd's hourly rollup (``as_mysql_rollup.c``) books its time as planned
    down, as METRICS.md waterfall leaf 2 does. Each node of it (``nodes``, the host list as
    loaded, expanded) is one event over those times, state :data:`MAINT_RESERVATION_STATE`,
    reason ``MAINT reservation <name>``, its GPUs the inventory's (NULL here). A reservation
    seen in several loads (``scontrol`` snapshots, the ``sacctmgr`` history) is the row of its
    latest load (``ingest_id``, then ``line_no``), which decides its times and its ``MAINT``
    flag (one moved, or whose flag was removed, counts as that row says; the flag is looked at
    after choosing the row); a recurring one (``DAILY``, ``WEEKLY``, …) keeps its past
    occurrences besides (:func:`_current_reservations`). Overlapping reservations on one
    node are one event (their union), never counted twice. ``IGNORE_JOBS`` changes nothing
    here: the jobs left running on a reserved node are allocated there and win over its
    planned state per instant (:func:`unallocated_node_events`), where slurmdbd, lacking that
    split, leaves such a reservation out of the cluster's rollup. A reservation without nodes
    (a license or burst-buffer one) adds nothing.

    Where a node event of ``events`` (``sacctmgr``'s, or a snapshot's) covers a part of the
    same node, that part is the event's alone (its own down / planned state).

    Args:
        reservations: ``raw.slurm_reservations`` rows, all of them (not only the ``MAINT``
            ones): ``cluster, name, start_at, end_at (NULL: open), nodes (list), maint``, and
            where present ``reservation_id, flags, state, snapshot_at, ingest_id, line_no``.
        events: node events ``cluster, node, start_at, end_at`` (NULL: open); an ``event``
            column, where present, keeps its ``'node'`` rows.

    Returns:
        ``cluster, event ('node'), node, start_at, end_at (NULL: open), state, reason, gpus``
        (NULL), sorted by ``cluster, node, start_at``.
    """
    ts = pl.Datetime("us", "UTC")
    out_schema = {"cluster": pl.String(), "event": pl.String(), "node": pl.String(),
                  "start_at": ts, "end_at": ts, "state": pl.String(), "reason": pl.String(),
                  "gpus": pl.Float64()}  # fmt: skip
    res = _current_reservations(reservations).filter(
        pl.col("maint").fill_null(value=False)
        & (pl.col("nodes").list.len() > 0).fill_null(value=False)
    )
    if res.height == 0:
        return pl.DataFrame(schema=out_schema)
    key = ["cluster", "node"]
    spans = (
        res.select(
            "cluster",
            "name",
            pl.col("nodes").alias("node"),
            pl.col("start_at").cast(ts).alias("_s"),
            pl.col("end_at").cast(ts).fill_null(_FAR).alias("_e"),
        )
        .explode("node")
        .filter(pl.col("node").is_not_null() & (pl.col("_e") > pl.col("_s")))
        .sort(*key, "_s", "_e", "name")
    )
    # overlapping (or touching) spans of a node: one event, named by its first reservation
    reach = pl.col("_e").cum_max().shift(1).over(key)
    merged = (
        spans.with_columns(
            (pl.col("_s") > reach).fill_null(value=True).cum_sum().over(key).alias("_g")
        )
        .group_by(*key, "_g", maintain_order=True)
        .agg(pl.col("name").first(), pl.col("_s").min(), pl.col("_e").max())
        .with_row_index("_id")
    )
    pieces = _uncovered(merged, events)
    return (
        pieces.join(merged.select("_id", "cluster", "node", "name"), on="_id", how="inner")
        .select(
            "cluster",
            pl.lit("node").alias("event"),
            "node",
            pl.col("_t").alias("start_at"),
            pl.when(pl.col("_u") < _FAR).then(pl.col("_u")).alias("end_at"),
            pl.lit(MAINT_RESERVATION_STATE).alias("state"),
            pl.format("MAINT reservation {}", pl.col("name")).alias("reason"),
            pl.lit(None, dtype=pl.Float64()).alias("gpus"),
        )
        .sort("cluster", "node", "start_at")
    )


def _uncovered(spans: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """``_id, _t, _u``: the pieces [_t, _u) of each span (``_id, cluster, node, _s, _e``; an
    open end is :data:`_FAR`) that no node event in ``events`` of the same cluster and node
    covers (``cluster, node, start_at, end_at``, NULL end: open to the end of time; an
    ``event`` column, where present, keeps its ``'node'`` rows). Each span is cut at the
    events' bounds inside it, and a piece any of them covers is left out."""
    ts = pl.Datetime("us", "UTC")
    ev = events.filter(pl.col("event") == "node") if "event" in events.columns else events
    sac = ev.filter(pl.col("node").is_not_null() & pl.col("start_at").is_not_null()).select(
        "cluster", "node", pl.col("start_at").cast(ts).alias("_ss"),
        pl.col("end_at").cast(ts).fill_null(_FAR).alias("_se"),
    )  # fmt: skip
    over = (
        spans.select("_id", "cluster", "node", "_s", "_e")
        .join(sac, on=["cluster", "node"], how="inner")
        .filter((pl.col("_ss") < pl.col("_e")) & (pl.col("_se") > pl.col("_s")))
    )
    # each span cut at the events' bounds inside it; a piece any of them covers goes
    cuts = (
        pl.concat(
            [
                spans.select("_id", pl.col("_s").alias("_t")),
                spans.select("_id", pl.col("_e").alias("_t")),
                over.select("_id", pl.max_horizontal("_ss", "_s").alias("_t")),
                over.select("_id", pl.min_horizontal("_se", "_e").alias("_t")),
            ]
        )
        .unique()
        .sort("_id", "_t")
        .with_columns(pl.col("_t").shift(-1).over("_id").alias("_u"))
        .filter(pl.col("_u").is_not_null())
    )
    covered = cuts.join(over.select("_id", "_ss", "_se"), on="_id", how="inner").filter(
        (pl.col("_ss") <= pl.col("_t")) & (pl.col("_se") >= pl.col("_u"))
    )
    pieces = cuts.join(covered.select("_id", "_t").unique(), on=["_id", "_t"], how="anti")
    return pieces.select("_id", "_t", "_u")


def slurm_node_down(
    events: pl.DataFrame,
    snapshots: pl.DataFrame | None,
    reservations: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """``events`` (``raw.slurm_events`` rows) with the node events of
    :func:`snapshot_node_events` added (on clusters without sacctmgr node events), then those
    of :func:`maint_reservation_node_events` where no other event covers the node (``event``
    = ``'node'``; the columns they lack, such as ``ingest_id`` and ``tres``, NULL); ``events``
    as they are without snapshots or reservations."""
    if snapshots is not None and snapshots.height:
        # only on clusters without sacctmgr node events (any copy names its cluster)
        events = _appended(events, snapshot_node_events(snapshots, events))
    if reservations is not None and reservations.height:
        events = _appended(
            events, maint_reservation_node_events(reservations, latest_node_events(events))
        )
    return events


def _appended(events: pl.DataFrame, extra: pl.DataFrame) -> pl.DataFrame:
    """``events`` with the rows of ``extra`` in its columns and types (NULL where missing)."""
    if extra.height == 0:
        return events
    cols = {c: pl.lit(None, dtype=t) for c, t in events.schema.items() if c not in extra.columns}
    extra = extra.with_columns(**cols).select([pl.col(c).cast(t) for c, t in events.schema.items()])
    return pl.concat([events, extra], how="vertical")
