"""An attempt's GPU holding: the pieces of constant held GPUs the hourly tables spread.

METRICS.md "GPU holding": an attempt holds ``gpus`` over ``[start_at, end_at)`` (one piece),
unless the core layer publishes its holding as pieces (``core`` ``holds``: a Kubernetes gang
whose pods bound or ended at different times, or that held its GPUs through an eviction's grace
period), each ``[start_at, end_at)`` with its own ``gpus``. Σ pieces' GPUs × seconds = the
attempt's ``gpu_s``. Slurm attempts and Kubernetes attempts whose pods held alike have no
pieces: they pass through as they are, at no cost beyond one anti-join on the few keys.
"""

from __future__ import annotations

import polars as pl

from metrics.schema import ATTEMPT, CLUSTER, END_AT, GPUS, JOB_ID, START_AT, UTC_DATETIME

__all__ = ["HOLD_KEYS", "HOLD_SCHEMA", "with_pieces"]

#: The key of an attempt that a piece belongs to.
HOLD_KEYS = [CLUSTER, JOB_ID, ATTEMPT]
#: The columns of the ``holds`` frame every consumer takes (``pipelines.core``'s ``holds``).
HOLD_SCHEMA: dict[str, pl.DataType] = {
    CLUSTER: pl.String(),
    JOB_ID: pl.String(),
    ATTEMPT: pl.Int64(),
    START_AT: UTC_DATETIME,
    END_AT: UTC_DATETIME,
    GPUS: pl.Float64(),
}


def with_pieces(
    attempts: pl.LazyFrame,
    holds: pl.LazyFrame | None,
    *,
    start: str = "_ps",
    end: str = "_pe",
    gpus: str = "_pg",
) -> pl.LazyFrame:
    """``attempts``, one row per piece of held GPUs, the piece in three added columns.

    Args:
        attempts: attempt rows with ``start_at, end_at, gpus`` and, when ``holds`` is given,
            the keys ``cluster, job_id, attempt``.
        holds: :data:`HOLD_SCHEMA` rows: the pieces of the attempts whose holding is not
            ``gpus`` over ``[start_at, end_at)`` (``end_at`` NULL: held on at the cut-off; a
            0-GPU piece: the attempt held nothing); None or no row: no such attempt.
        start, end, gpus: the names of the added columns.

    Returns:
        Every column of ``attempts`` plus ``start``, ``end`` (UTC, ``end`` NULL while held)
        and ``gpus``: an attempt without pieces is one row whose piece is its own
        ``start_at, end_at, gpus``; an attempt with pieces is one row per piece (its other
        columns repeated). Rows come in no particular order.
    """
    own = attempts.with_columns(
        pl.col(START_AT).dt.cast_time_unit("us").alias(start),
        pl.col(END_AT).dt.cast_time_unit("us").alias(end),
        pl.col(GPUS).cast(pl.Float64).alias(gpus),
    )
    if holds is None:
        return own
    pieces = holds.select(
        pl.col(CLUSTER).cast(pl.String()),
        pl.col(JOB_ID).cast(pl.String()),
        pl.col(ATTEMPT).cast(pl.Int64()),
        pl.col(START_AT).dt.cast_time_unit("us").alias(start),
        pl.col(END_AT).dt.cast_time_unit("us").alias(end),
        pl.col(GPUS).cast(pl.Float64).alias(gpus),
    )
    names = own.collect_schema().names()
    keys = pieces.select(HOLD_KEYS).unique()
    split = attempts.join(pieces, on=HOLD_KEYS, how="inner").select(names)
    return pl.concat([own.join(keys, on=HOLD_KEYS, how="anti"), split], how="vertical_relaxed")
