"""Pending-reason spells: how long each Slurm job waited under each reason, from polled
``squeue`` (METRICS.md, "Pending-reason spells").

A *spell* is a run of consecutive polls in which a job is ``PENDING`` with the same reason. A
poll's reason holds from that poll until the next poll of the cluster (any poll, whether or not
it lists the job), but for at most ``max_gap_s``: when the poller was down longer, the time in
between is not known and is not counted. A spell ends at the first poll where the job's reason
changed, the job is no longer pending (running, or gone from the queue), or the gap cap cut
it; a job still pending at the last poll has a spell ending at that poll (its last stretch not
yet known). Pure polars, no I/O.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

import polars as pl

from metrics.schema import UTC_DATETIME

__all__ = ["MAX_GAP_S", "SPELL_COLUMNS", "SPELL_SCHEMA", "pending_reason_spells"]

#: The longest stretch (seconds) one poll's reason is held for: polls are meant to come every
#: minute or few, so a gap past 10 minutes is the poller being down, not the job's state.
MAX_GAP_S: Final = 600

#: Columns of the spells frame (the ``pending_reason_spells`` view), in order.
SPELL_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "job_id": pl.String(),
    "reason": pl.String(),
    "spell_start": UTC_DATETIME,
    "spell_end": UTC_DATETIME,
    "seconds": pl.Int64(),
    "sched_nodes": pl.String(),
    "req_switch": pl.Int64(),
    "expected_start": UTC_DATETIME,
    "polls": pl.Int64(),
}
SPELL_COLUMNS: Final = list(SPELL_SCHEMA)


def pending_reason_spells(polls: pl.LazyFrame, *, max_gap_s: int = MAX_GAP_S) -> pl.LazyFrame:
    """Time-weighted pending-reason spells per job.

    Args:
        polls: ``raw.slurm_squeue`` rows: ``cluster, poll_at, job_id, state, reason,
            sched_nodes, expected_start, req_switch`` (a row with NULL ``job_id`` marks a poll
            of an empty queue; the same poll loaded twice counts once, the last row kept).
        max_gap_s: the longest time one poll's reason is held for (seconds).

    Returns:
        :data:`SPELL_SCHEMA` rows, one per spell: ``spell_start`` = its first poll,
        ``spell_end`` = the next poll of the cluster after its last one, capped at that last
        poll + ``max_gap_s`` (the last poll itself when no poll followed), ``seconds`` =
        ``spell_end − spell_start``, ``polls`` = its polls; ``sched_nodes``, ``req_switch`` and
        ``expected_start`` as at its last poll. Sorted by cluster, job, start.
    """
    gap = dt.timedelta(seconds=max_gap_s)
    times = (
        polls.select("cluster", "poll_at")
        .unique()
        .sort("cluster", "poll_at")
        .with_columns(
            pl.col("poll_at").shift(-1).over("cluster").alias("_next"),
            pl.col("poll_at").shift(1).over("cluster").alias("_prev"),
        )
    )
    job = ["cluster", "job_id"]
    pending = (
        polls.filter(pl.col("job_id").is_not_null() & (pl.col("state") == "PENDING"))
        .unique(["cluster", "poll_at", "job_id"], keep="last", maintain_order=True)
        .join(times, on=["cluster", "poll_at"], how="left")
        .sort("cluster", "job_id", "poll_at")
        .with_columns(
            pl.when(pl.col("_next").is_null())
            .then(pl.col("poll_at"))
            .otherwise(pl.min_horizontal(pl.col("_next"), pl.col("poll_at") + gap))
            .alias("_cover_end")
        )
    )
    prev_reason = pl.col("reason").shift(1).over(job)
    prev_poll = pl.col("poll_at").shift(1).over(job)
    prev_end = pl.col("_cover_end").shift(1).over(job)
    new_spell = (
        prev_poll.is_null()
        | prev_reason.ne_missing(pl.col("reason"))
        | prev_poll.ne_missing(pl.col("_prev"))
        | (prev_end < pl.col("poll_at"))
    )
    return (
        pending.with_columns(new_spell.cast(pl.Int64).cum_sum().over(job).alias("_spell"))
        .group_by(*job, "_spell")
        .agg(
            pl.col("reason").first(),
            pl.col("poll_at").min().alias("spell_start"),
            pl.col("_cover_end").last().alias("spell_end"),
            pl.col("sched_nodes").last(),
            pl.col("req_switch").last().cast(pl.Int64),
            pl.col("expected_start").last(),
            pl.len().cast(pl.Int64).alias("polls"),
        )
        .with_columns(
            (pl.col("spell_end") - pl.col("spell_start")).dt.total_seconds().alias("seconds")
        )
        .select([pl.col(c).cast(t) for c, t in SPELL_SCHEMA.items()])
        .sort("cluster", "job_id", "spell_start")
    )
