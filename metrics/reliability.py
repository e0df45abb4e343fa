"""Reliability and health: per-node failure signals, lemon nodes, and ETTR per run.

METRICS.md "Reliability and health": per node, attempts ended NODE_FAIL, XID events, down/drain
time, the infrastructure share of lost GPU time, and a lemon-node ranking; **ETTR** per run (a job
and its requeues) = productive runtime ÷ (queue + productive + unproductive), queue = every
eligible wait of the run [Meta, "Revisiting Reliability in Large-Scale ML Research Clusters",
2024].
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics._helpers import seconds_between
from metrics.holds import HOLD_KEYS
from metrics.schema import (
    ATTEMPT,
    CLUSTER,
    ELIGIBLE_AT,
    END_AT,
    GPUS,
    HOST,
    JOB_ID,
    LEAF,
    LOSS_LEAVES,
    NODE_LIST,
    PLANNED,
    RACK,
    START_AT,
    STATE,
    TEAM,
    XID,
)
from metrics.waterfall import (
    LOST_FROM_AT,
    LOST_S,
    RUNTIME_S,
    LossPolicy,
    _utc_lit,
    _with_kept_and_lost,
    attempt_outcomes,
)

__all__ = [
    "NODE_SIGNAL_COUNTS",
    "NODE_SIGNAL_GPU_S",
    "NODE_SIGNAL_SUMS",
    "down_time_per_node",
    "ettr_per_run",
    "node_reliability",
    "node_signals",
    "rack_reliability",
]

_NODE = [CLUSTER, HOST]

#: The per-node counts :func:`node_signals` gives, which add up over days.
NODE_SIGNAL_COUNTS = ["attempts", "node_fail_attempts", "infra_failed_attempts"]
#: The per-node GPU-seconds :func:`node_signals` gives, which add up over days (exactly:
#: :func:`_exact_sum`).
NODE_SIGNAL_GPU_S = ["lost_gpu_s", "infra_lost_gpu_s"]
#: Every per-node sum :func:`node_signals` gives: a node's row of :func:`node_reliability`
#: takes the sum of its days' rows.
NODE_SIGNAL_SUMS = [*NODE_SIGNAL_COUNTS, *NODE_SIGNAL_GPU_S]
#: The UTC day (midnight, a UTC timestamp) of an attempt's start: the key of the daily signals.
DAY = "day"


def down_time_per_node(down_intervals: pl.LazyFrame, as_of: dt.datetime) -> pl.LazyFrame:
    """Seconds each node spent down or drained, overlapping intervals counted once.

    Args:
        down_intervals: ``cluster, host, start_at, end_at`` (UTC; NULL end: still down),
            ``planned`` (bool; NULL read as unplanned). Any state (DOWN, DRAIN, …) counts.
        as_of: the data cut-off (UTC; naive is read as UTC); open intervals end there.

    Returns:
        ``cluster, host, down_s, planned_down_s, down_episodes`` (the union of the unplanned,
        resp. planned, intervals; episodes = merged unplanned intervals).
    """
    cut = _utc_lit(as_of)
    keys = [*_NODE, PLANNED]
    iv = (
        down_intervals.select(
            CLUSTER,
            HOST,
            pl.col(PLANNED).fill_null(False),
            pl.col(START_AT).dt.cast_time_unit("us").alias("_s"),
            pl.min_horizontal(pl.col(END_AT).fill_null(cut), cut)
            .dt.cast_time_unit("us")
            .alias("_e"),
        )
        .filter(pl.col("_e") > pl.col("_s"))
        .with_columns(pl.col("_e").cum_max().shift(1).over(keys, order_by="_s").alias("_prev_end"))
        .with_columns(
            (pl.col("_prev_end").is_null() | (pl.col("_s") > pl.col("_prev_end")))
            .cum_sum()
            .over(keys, order_by="_s")
            .alias("_episode")
        )
    )
    merged = (
        iv.group_by(*keys, "_episode")
        .agg(pl.col("_s").min(), pl.col("_e").max())
        .with_columns(seconds_between(pl.col("_e"), pl.col("_s")).alias("_dur"))
    )
    return merged.group_by(_NODE).agg(
        pl.col("_dur").filter(~pl.col(PLANNED)).sum().alias("down_s"),
        pl.col("_dur").filter(pl.col(PLANNED)).sum().alias("planned_down_s"),
        (~pl.col(PLANNED)).sum().cast(pl.Int64).alias("down_episodes"),
    )


def _exact_sum(col: str) -> pl.Expr:
    """The group's values of ``col`` (GPU-seconds) rounded to 1e-6 and added exactly (as
    decimals, then back to a float; NULLs and non-finite values skipped, 0.0 for none). A float
    sum depends on the rows' order and, for a large group, on how polars splits the frame it is
    computed in, so a day computed among a year's attempts and the same day computed alone
    could differ in the last bits; an exact sum does not (0.02 s and 20 MB more on a year's 2.1M
    attempts)."""
    # A non-finite value has no decimal (the cast would fail the build): it is left out. The
    # core layer's GPU counts and times are finite, so none arises from them.
    finite = pl.when(pl.col(col).is_finite()).then(pl.col(col))
    return finite.cast(pl.Decimal(38, 6)).sum().cast(pl.Float64)


def _lost_gpu_s(
    outcomes: pl.LazyFrame, holds: pl.LazyFrame | None, as_of: dt.datetime
) -> tuple[pl.LazyFrame, pl.LazyFrame | None]:
    """``outcomes`` (:func:`metrics.waterfall.attempt_outcomes` rows) plus ``_lost_all``: the
    attempt's lost GPU-seconds to split evenly over its nodes, whatever its leaf (the caller
    keeps those of leaves 3–6); and, for pieces per node (``holds`` with ``host``,
    :data:`metrics.holds.NODE_HOLD_SCHEMA`), ``cluster, job_id, attempt, host, _lost``: the
    lost GPU-seconds of an attempt's pieces on each node (None: ``holds`` has no ``host``).

    An attempt without pieces of held GPUs: ``gpus × lost_s``. An attempt with pieces
    (``holds``, :func:`metrics.holds.with_pieces`): Σ over its pieces of the piece's GPUs ×
    its seconds from max(piece start, ``lost_from_at``) to its end (clipped to ``as_of``), the
    lost part the waterfall spreads (:func:`metrics.waterfall._with_kept_and_lost`), so the
    two agree GPU-second for GPU-second; pieces per node give that sum per node, and only the
    pieces on no known node (``host`` NULL) go to ``_lost_all``. Without ``holds`` nothing is
    joined."""
    own = pl.col(GPUS) * pl.col(LOST_S)
    if holds is None:
        return outcomes.with_columns(own.alias("_lost_all")), None
    per_node = HOST in holds.collect_schema().names()
    # the attempt keys in one type on both sides, then the span, GPUs (and node)
    keyed: list[pl.Expr | str] = [
        pl.col(CLUSTER).cast(pl.String()),
        pl.col(JOB_ID).cast(pl.String()),
        pl.col(ATTEMPT).cast(pl.Int64()),
        START_AT,
        END_AT,
        GPUS,
    ]
    held = holds.select(*keyed, *([pl.col(HOST).cast(pl.String())] if per_node else []))
    keys = outcomes.select(*keyed, LEAF, LOST_FROM_AT).join(
        held.select(HOLD_KEYS).unique(), on=HOLD_KEYS, how="semi"
    )
    secs = seconds_between(pl.col("_pe"), pl.col("_lf")).clip(lower_bound=0.0)
    pieces = _with_kept_and_lost(keys, held, as_of, node="_host" if per_node else None)
    lost = pl.col("_pg") * secs
    nowhere = pl.col("_host").is_null() if per_node else pl.lit(True)
    sums = pieces.group_by(HOLD_KEYS).agg(lost.filter(nowhere).sum().alias("_held_lost"))
    # an attempt whose only piece is empty (its pods held nothing) lost nothing, not gpus × lost_s
    per_attempt = (
        keys.select(HOLD_KEYS)
        .unique()
        .join(sums, on=HOLD_KEYS, how="left")
        .with_columns(pl.col("_held_lost").fill_null(0.0))
    )
    out = (
        outcomes.with_columns(
            pl.col(CLUSTER).cast(pl.String()),
            pl.col(JOB_ID).cast(pl.String()),
            pl.col(ATTEMPT).cast(pl.Int64()),
        )
        .join(per_attempt, on=HOLD_KEYS, how="left")
        .with_columns(pl.coalesce(pl.col("_held_lost"), own).alias("_lost_all"))
        .drop("_held_lost")
    )
    if not per_node:
        return out, None
    on_nodes = (
        pieces.filter(pl.col("_host").is_not_null())
        .group_by(*HOLD_KEYS, "_host")
        .agg(lost.sum().alias("_lost"))
        .rename({"_host": HOST})
    )
    return out, on_nodes


def node_signals(
    attempts: pl.LazyFrame,
    as_of: dt.datetime,
    *,
    xid_events: pl.LazyFrame | None = None,
    policy: LossPolicy | None = None,
    daily: bool = False,
    holds: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """The attempts' failure signals per node (and per UTC day of the attempt's start).

    Lost GPU time of an attempt (leaves 3–6 of the waterfall, under ``policy``) is split evenly
    over its nodes (its lost GPU-seconds ÷ nodes per node); an attempt counts once on each of
    its nodes. The lost GPU-seconds are the waterfall's (METRICS.md "GPU holding"): ``gpus ×
    lost_s``, or for an attempt with pieces of held GPUs (``holds``) Σ pieces' GPUs × their
    seconds from the attempt's ``lost_from_at`` on (:func:`_lost_gpu_s`). Pieces per node
    (``holds`` with ``host``) give each node the lost GPU-seconds of the pieces on it, not an
    even share (a CPU-only pod's node gets none; a piece on no known node is split evenly);
    pieces without ``host`` are split evenly over the attempt's nodes. Each
    attempt's signals are decided by its own row, the XID events on its nodes near its end and
    ``as_of`` (:func:`metrics.waterfall.attempt_outcomes`: an attempt ending after ``as_of`` is
    still running, with nothing lost), so with ``daily`` the rows of a day change only where an
    attempt that started that day changed, an XID event near its end changed, or the cut-off
    passed its end. The GPU-seconds are added exactly (:func:`_exact_sum`): a day's row is the
    same, bit for bit, whether it is computed among every attempt or among that day's alone.

    Args:
        attempts: the ``jobs`` view (``cluster, state, gpus, start_at, end_at, node_list``).
        as_of: the data cut-off (UTC; naive is read as UTC).
        xid_events: ``cluster, host, ts, xid``: the FAILED → infra rule.
        policy: :class:`~metrics.waterfall.LossPolicy` for lost time (default whole attempt).
        daily: also keyed by ``day``, the UTC midnight of the attempt's start (a UTC
            timestamp, microseconds).
        holds: :data:`metrics.holds.NODE_HOLD_SCHEMA` (per node) or
            :data:`metrics.holds.HOLD_SCHEMA` pieces of the attempts that did not hold
            ``gpus`` over their span (``attempts`` then need ``job_id, attempt``); None: every
            attempt held ``gpus`` over its span (no join, as for Slurm).

    Returns:
        ``cluster, host[, day]``, then :data:`NODE_SIGNAL_SUMS`: ``attempts`` (node-attempts:
        the attempt's ``node_list``; a node only a piece names gets its GPU-seconds, no attempt),
        ``node_fail_attempts`` (state NODE_FAIL…), ``infra_failed_attempts`` (leaf
        ``failed_work_infra``), ``lost_gpu_s`` and ``infra_lost_gpu_s`` (GPU-seconds).
    """
    out, on_nodes = _lost_gpu_s(
        attempt_outcomes(attempts, as_of, xid_events=xid_events, policy=policy), holds, as_of
    )
    keys = [*_NODE, DAY] if daily else _NODE
    day = pl.col(START_AT).dt.convert_time_zone("UTC").dt.truncate("1d").dt.cast_time_unit("us")
    # Each attempt's signals are reduced to numbers before its node list is exploded, so the
    # explode copies four numeric columns per node-attempt, not the attempt's strings.
    infra = pl.col(LEAF) == "failed_work_infra"
    rows = (
        out.with_columns(pl.col(NODE_LIST).list.len().alias("_n"))
        .filter(pl.col("_n") > 0)
        .with_columns((pl.col("_lost_all") / pl.col("_n")).alias("_lost"))
        .select(
            CLUSTER,
            NODE_LIST,
            *([day.alias(DAY)] if daily else []),
            pl.lit(1, dtype=pl.Int64()).alias("_attempt"),
            pl.col(STATE)
            .str.to_uppercase()
            .str.starts_with("NODE_FAIL")
            .cast(pl.Int64)
            .alias("_node_fail"),
            infra.cast(pl.Int64).alias("_infra"),
            pl.when(pl.col(LEAF).is_in(LOSS_LEAVES)).then(pl.col("_lost")).alias("_lost"),
            pl.when(infra).then(pl.col("_lost")).alias("_infra_lost"),
        )
        .explode(NODE_LIST)
        .rename({NODE_LIST: HOST})
    )
    if on_nodes is not None:
        # a gang's lost GPU-seconds on each node its pieces were on (the node counts the
        # attempt through its node list above, not again here)
        held = on_nodes.join(
            out.select(*HOLD_KEYS, START_AT, LEAF), on=HOLD_KEYS, how="inner"
        ).select(
            CLUSTER,
            HOST,
            *([day.alias(DAY)] if daily else []),
            pl.lit(0, dtype=pl.Int64()).alias("_attempt"),
            pl.lit(0, dtype=pl.Int64()).alias("_node_fail"),
            pl.lit(0, dtype=pl.Int64()).alias("_infra"),
            pl.when(pl.col(LEAF).is_in(LOSS_LEAVES)).then(pl.col("_lost")).alias("_lost"),
            pl.when(infra).then(pl.col("_lost")).alias("_infra_lost"),
        )
        rows = pl.concat([rows, held], how="vertical_relaxed")
    return (
        rows.filter(pl.col(HOST).is_not_null())
        .group_by(keys)
        .agg(
            pl.col("_attempt").sum().alias("attempts"),
            pl.col("_node_fail").sum().alias("node_fail_attempts"),
            pl.col("_infra").sum().alias("infra_failed_attempts"),
            _exact_sum("_lost").alias("lost_gpu_s"),
            _exact_sum("_infra_lost").alias("infra_lost_gpu_s"),
        )
    )


def node_reliability(
    attempts: pl.LazyFrame | None,
    as_of: dt.datetime,
    *,
    xid_events: pl.LazyFrame | None = None,
    down_intervals: pl.LazyFrame | None = None,
    nodes: pl.LazyFrame | None = None,
    policy: LossPolicy | None = None,
    signals: pl.LazyFrame | None = None,
    holds: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Failure signals per node, with a lemon-node score and rank.

    Lost GPU time of an attempt (leaves 3–6 of the waterfall, under ``policy``; of its pieces
    of held GPUs where it has them, :func:`node_signals`) is split evenly over its nodes, or,
    for pieces per node, goes to the node each piece was on. The
    **lemon score** asks "does this node break the jobs it runs more often than its cluster's
    average node?": (infra failures on the node + 1) ÷ (expected + 1), where expected =
    attempts run on the node × the cluster's infra failures per node-attempt. 1 ≈ average;
    the +1 keeps a single failure on a lightly used node from dominating. Nodes rank by score,
    then XID events, then down time (rank 1 = worst).

    Args:
        attempts: the ``jobs`` view (``cluster, state, gpus, start_at, end_at, node_list``);
            not read when ``signals`` is given (then it may be None).
        as_of: the data cut-off (UTC; naive is read as UTC).
        xid_events: ``cluster, host, ts, xid``: counted per node, and (without ``signals``)
            the FAILED → infra rule.
        down_intervals: node down / drain intervals (see :func:`down_time_per_node`).
        nodes: optional inventory ``cluster, host[, rack]``: lists nodes with no signals and
            adds ``rack`` (NULL without it).
        policy: :class:`~metrics.waterfall.LossPolicy` for lost time (default whole attempt;
            not read with ``signals``, which were reduced under a policy already).
        signals: the attempts' signals already reduced (:func:`node_signals`: rows of
            ``cluster, host``, any other key columns such as ``day``, and
            :data:`NODE_SIGNAL_SUMS`; e.g. stored days read back beside days computed again):
            each node's rows are added up, the GPU-seconds exactly, so the same rows give the
            same bits whatever order they come in.
        holds: the attempts' pieces of held GPUs (:func:`node_signals`; not read with
            ``signals``).

    Returns:
        ``cluster, host, rack, attempts, node_fail_attempts, infra_failed_attempts,
        expected_infra_failures, xid_events, xid_codes (sorted distinct), down_s,
        planned_down_s, down_episodes, lost_gpu_s, infra_lost_gpu_s, infra_share (infra lost ÷
        lost; NULL when nothing was lost), lemon_score, lemon_rank`` (rank within the cluster).

    Raises:
        ValueError: neither ``attempts`` nor ``signals`` is given.
    """
    if signals is None:
        if attempts is None:
            raise ValueError("node_reliability needs attempts or their signals")
        signals = node_signals(attempts, as_of, xid_events=xid_events, policy=policy, holds=holds)
    # A node's rows (its days, or one) added up, the GPU-seconds exactly: the same days' rows
    # give the same bits whatever order they come in (stored days, then days computed again).
    per_node = signals.group_by(_NODE).agg(
        *(pl.col(c).sum() for c in NODE_SIGNAL_COUNTS),
        *(_exact_sum(c) for c in NODE_SIGNAL_GPU_S),
    )
    frames = [per_node]
    if xid_events is not None:
        frames.append(
            xid_events.group_by(_NODE).agg(
                pl.len().cast(pl.Int64).alias("xid_events"),
                pl.col(XID).drop_nulls().unique().sort().alias("xid_codes"),
            )
        )
    if down_intervals is not None:
        frames.append(down_time_per_node(down_intervals, as_of))
    if nodes is not None:
        schema = nodes.collect_schema()
        rack = pl.col(RACK) if RACK in schema else pl.lit(None, dtype=pl.String())
        frames.append(nodes.select(CLUSTER, HOST, rack.alias(RACK)).unique(_NODE))
    table = frames[0]
    for frame in frames[1:]:
        table = table.join(frame, on=_NODE, how="full", coalesce=True)
    names = table.collect_schema().names()
    defaults: dict[str, pl.Expr] = {
        RACK: pl.lit(None, dtype=pl.String()),
        "xid_events": pl.lit(0, dtype=pl.Int64()),
        "xid_codes": pl.lit([], dtype=pl.List(pl.Int64())),
        "down_s": pl.lit(0.0),
        "planned_down_s": pl.lit(0.0),
        "down_episodes": pl.lit(0, dtype=pl.Int64()),
    }
    table = table.with_columns(e.alias(c) for c, e in defaults.items() if c not in names)
    codes_dtype = table.collect_schema()["xid_codes"]
    counts = ["attempts", "node_fail_attempts", "infra_failed_attempts", "xid_events"]
    floats = ["lost_gpu_s", "infra_lost_gpu_s", "down_s", "planned_down_s"]
    table = table.with_columns(
        *(pl.col(c).fill_null(0) for c in [*counts, "down_episodes"]),
        *(pl.col(c).fill_null(0.0) for c in floats),
        pl.col("xid_codes").fill_null(pl.lit([], dtype=codes_dtype)),
    )
    rate = pl.col("infra_failed_attempts").sum().over(CLUSTER) / pl.col("attempts").sum().over(
        CLUSTER
    )
    table = table.with_columns(
        (pl.col("attempts") * pl.when(rate.is_nan()).then(0.0).otherwise(rate)).alias(
            "expected_infra_failures"
        )
    ).with_columns(
        ((pl.col("infra_failed_attempts") + 1.0) / (pl.col("expected_infra_failures") + 1.0)).alias(
            "lemon_score"
        ),
        pl.when(pl.col("lost_gpu_s") > 0)
        .then(pl.col("infra_lost_gpu_s") / pl.col("lost_gpu_s"))
        .otherwise(None)
        .alias("infra_share"),
    )
    # rank 1 = worst: highest score, then most XID events, then most down time; host breaks ties
    rank = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(
        CLUSTER,
        order_by=[-pl.col("lemon_score"), -pl.col("xid_events"), -pl.col("down_s"), HOST],
    )
    return (
        table.with_columns(rank.alias("lemon_rank"))
        .select(
            CLUSTER,
            HOST,
            RACK,
            "attempts",
            "node_fail_attempts",
            "infra_failed_attempts",
            "expected_infra_failures",
            "xid_events",
            "xid_codes",
            "down_s",
            "planned_down_s",
            "down_episodes",
            "lost_gpu_s",
            "infra_lost_gpu_s",
            "infra_share",
            "lemon_score",
            "lemon_rank",
        )
        .sort(CLUSTER, "lemon_rank")
    )


def rack_reliability(node_table: pl.LazyFrame) -> pl.LazyFrame:
    """The node signals summed per rack, with the rack's own infra share and lemon score.

    Args:
        node_table: :func:`node_reliability` output (nodes without a rack form a NULL rack).

    Returns:
        ``cluster, rack, nodes, attempts, node_fail_attempts, infra_failed_attempts,
        expected_infra_failures, xid_events, down_s, planned_down_s, lost_gpu_s,
        infra_lost_gpu_s, infra_share, lemon_score`` (same formulas as per node, on the sums).
    """
    sums = [
        "attempts",
        "node_fail_attempts",
        "infra_failed_attempts",
        "expected_infra_failures",
        "xid_events",
        "down_s",
        "planned_down_s",
        "lost_gpu_s",
        "infra_lost_gpu_s",
    ]
    return (
        node_table.group_by(CLUSTER, RACK)
        .agg(pl.len().cast(pl.Int64).alias("nodes"), *(pl.col(c).sum() for c in sums))
        .with_columns(
            pl.when(pl.col("lost_gpu_s") > 0)
            .then(pl.col("infra_lost_gpu_s") / pl.col("lost_gpu_s"))
            .otherwise(None)
            .alias("infra_share"),
            (
                (pl.col("infra_failed_attempts") + 1.0) / (pl.col("expected_infra_failures") + 1.0)
            ).alias("lemon_score"),
        )
        .sort(CLUSTER, "lemon_score", descending=[False, True], nulls_last=True)
    )


def ettr_per_run(
    attempts: pl.LazyFrame,
    as_of: dt.datetime,
    *,
    pending: pl.LazyFrame | None = None,
    xid_events: pl.LazyFrame | None = None,
    policy: LossPolicy | None = None,
) -> pl.LazyFrame:
    """Effective training time ratio per run (a job and its requeues) [Meta 2024].

    ETTR = productive ÷ (queue + productive + unproductive), where queue = every eligible wait
    of the run (each attempt's start − eligible, and the current wait of a requeued run pending
    again), unproductive = the lost part of attempts ending in loss leaves 3–6 under ``policy``
    (whole attempt by default; ``checkpoint``: min(runtime, Δ/2 + u0)), productive = the rest of
    the runtime (cancelled attempts' runtime is productive: not a failure). Running attempts
    count up to ``as_of``.

    Args:
        attempts: the ``jobs`` view (``cluster, job_id, attempt, team, state, gpus,
            eligible_at, start_at, end_at, node_list``); CPU-only attempts are left out.
        as_of: the data cut-off (UTC; naive is read as UTC).
        pending: never-started rows ``cluster, job_id, eligible_at, end_at``; only rows of runs
            that have a started attempt count (their wait since re-eligibility).
        xid_events: for the FAILED → infra rule (affects only which leaf, not the ETTR).
        policy: :class:`~metrics.waterfall.LossPolicy`.

    Returns:
        ``cluster, job_id, team, attempts, gpus (max), queue_s, productive_s, unproductive_s,
        ettr, waits_unknown`` (attempts whose eligible time is unknown or after their start:
        their wait counts as 0), ``running`` (an attempt still running at ``as_of``).
        ``ettr`` is NULL when the denominator is 0.
    """
    cut = _utc_lit(as_of)
    out = attempt_outcomes(attempts, as_of, xid_events=xid_events, policy=policy)
    wait = seconds_between(pl.col(START_AT), pl.col(ELIGIBLE_AT))
    lost = pl.when(pl.col(LEAF).is_in(LOSS_LEAVES)).then(pl.col(LOST_S)).otherwise(0.0)
    runs = out.group_by(CLUSTER, JOB_ID).agg(
        pl.col(TEAM).first(),
        pl.len().cast(pl.Int64).alias("attempts"),
        pl.col(GPUS).max(),
        wait.filter(wait >= 0).sum().alias("_queue"),
        (wait.is_null() | (wait < 0)).sum().cast(pl.Int64).alias("waits_unknown"),
        (pl.col(RUNTIME_S) - lost).sum().alias("productive_s"),
        lost.sum().alias("unproductive_s"),
        (pl.col(END_AT).is_null() | (pl.col(END_AT) > cut)).any().alias("running"),
    )
    if pending is not None:
        again = (
            pending.select(
                CLUSTER,
                JOB_ID,
                seconds_between(
                    pl.min_horizontal(pl.col(END_AT).fill_null(cut), cut),
                    pl.col(ELIGIBLE_AT).dt.cast_time_unit("us"),
                ).alias("_w"),
            )
            .filter(pl.col("_w") > 0)
            .group_by(CLUSTER, JOB_ID)
            .agg(pl.col("_w").sum().alias("_requeued_wait"))
        )
        runs = runs.join(again, on=[CLUSTER, JOB_ID], how="left")
    else:
        runs = runs.with_columns(pl.lit(0.0).alias("_requeued_wait"))
    queue = pl.col("_queue") + pl.col("_requeued_wait").fill_null(0.0)
    total = pl.col("queue_s") + pl.col("productive_s") + pl.col("unproductive_s")
    return (
        runs.with_columns(queue.alias("queue_s"))
        .with_columns(
            pl.when(total > 0).then(pl.col("productive_s") / total).otherwise(None).alias("ettr")
        )
        .select(
            CLUSTER,
            JOB_ID,
            TEAM,
            "attempts",
            GPUS,
            "queue_s",
            "productive_s",
            "unproductive_s",
            "ettr",
            "waits_unknown",
            "running",
        )
        .sort(CLUSTER, JOB_ID)
    )
