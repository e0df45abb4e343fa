"""An attempt's GPU holding: the pieces of constant held GPUs the hourly tables spread.

METRICS.md "GPU holding": an attempt holds ``gpus`` over ``[start_at, end_at)`` (one piece),
unless the core layer publishes its holding as pieces (``core`` ``holds``: a Kubernetes gang
whose pods bound or ended at different times, or that held its GPUs through an eviction's grace
period, or whose pods held alike but not evenly over its nodes: a CPU-only pod's node, nodes
holding different GPUs), each ``[start_at, end_at)`` with its own ``gpus``. Σ pieces' GPUs ×
seconds = the attempt's ``gpu_s``. Slurm attempts and Kubernetes attempts whose pods held alike,
evenly over their nodes, have no pieces: they pass through as they are, at no cost beyond one
anti-join on the few keys.

The core layer stores the pieces per node (:data:`NODE_HOLD_SCHEMA`: each ``host``'s own step
function of the GPUs the attempt's pods held on it), so the node reliability table can give each
node the GPU-seconds held on it; :func:`merged_pieces` adds them up into the attempt's pieces.
"""

from __future__ import annotations

import polars as pl

from metrics.schema import ATTEMPT, CLUSTER, END_AT, GPUS, HOST, JOB_ID, START_AT, UTC_DATETIME

__all__ = ["HOLD_KEYS", "HOLD_SCHEMA", "NODE_HOLD_SCHEMA", "merged_pieces", "with_pieces"]

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
#: The stored pieces (``core.job_holds``, ``pipelines.core``'s ``holds``): per node ``host``
#: (the pods' node) the constant GPUs the attempt held on it over ``[start_at, end_at)``; an
#: attempt's rows on one node do not overlap, its rows on different nodes may. An attempt whose
#: pods held nothing has one 0-GPU row with ``host`` NULL.
NODE_HOLD_SCHEMA: dict[str, pl.DataType] = {**HOLD_SCHEMA, HOST: pl.String()}

#: A held-GPU level at or below this is no hold (the residue of adding fractional GPUs).
_NO_GPUS = 1e-9


def merged_pieces(holds: pl.LazyFrame) -> pl.LazyFrame:
    """The attempts' pieces (:data:`HOLD_SCHEMA`) from their pieces per node.

    Args:
        holds: :data:`NODE_HOLD_SCHEMA` rows (``end_at`` NULL: held at the cut-off).

    Returns:
        :data:`HOLD_SCHEMA` rows: per attempt, the consecutive pieces of constant GPUs held on
        all its nodes together (Σ of the nodes' GPUs at each instant; no piece where none was
        held), and each 0-GPU row (an attempt that held nothing) as it is. Σ GPUs × seconds is
        the same as over ``holds``.
    """
    keyed = holds.select(
        pl.col(CLUSTER).cast(pl.String()),
        pl.col(JOB_ID).cast(pl.String()),
        pl.col(ATTEMPT).cast(pl.Int64()),
        pl.col(START_AT).cast(UTC_DATETIME),
        pl.col(END_AT).cast(UTC_DATETIME),
        pl.col(GPUS).cast(pl.Float64()),
    )
    held = keyed.filter(pl.col(GPUS) > 0)
    steps = (
        pl.concat(
            [
                held.select(*HOLD_KEYS, pl.col(START_AT).alias("_t"), pl.col(GPUS).alias("_d")),
                held.filter(pl.col(END_AT).is_not_null()).select(
                    *HOLD_KEYS, pl.col(END_AT).alias("_t"), (-pl.col(GPUS)).alias("_d")
                ),
            ]
        )
        .group_by(*HOLD_KEYS, "_t")
        .agg(pl.col("_d").sum())
        .sort(*HOLD_KEYS, "_t")
        .select(
            *HOLD_KEYS,
            pl.col("_t").alias(START_AT),
            pl.col("_t").shift(-1).over(HOLD_KEYS).alias(END_AT),
            pl.col("_d").cum_sum().over(HOLD_KEYS).alias(GPUS),
        )
        .filter(pl.col(GPUS) > _NO_GPUS)
    )
    return pl.concat([steps, keyed.filter(pl.col(GPUS) <= 0)], how="vertical_relaxed")


def with_pieces(
    attempts: pl.LazyFrame,
    holds: pl.LazyFrame | None,
    *,
    start: str = "_ps",
    end: str = "_pe",
    gpus: str = "_pg",
    node: str | None = None,
) -> pl.LazyFrame:
    """``attempts``, one row per piece of held GPUs, the piece in three added columns.

    Args:
        attempts: attempt rows with ``start_at, end_at, gpus`` and, when ``holds`` is given,
            the keys ``cluster, job_id, attempt``.
        holds: :data:`HOLD_SCHEMA` rows: the pieces of the attempts whose holding is not
            ``gpus`` over ``[start_at, end_at)`` (``end_at`` NULL: held on at the cut-off; a
            0-GPU piece: the attempt held nothing); None or no row: no such attempt. Pieces
            per node (:data:`NODE_HOLD_SCHEMA`) are first added up (:func:`merged_pieces`)
            unless ``node`` is given.
        start, end, gpus: the names of the added columns.
        node: with pieces per node, keep them per node and name their ``host`` so (NULL for
            an attempt without pieces or a 0-GPU piece); None: pieces as the attempt held them.

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
        *([] if node is None else [pl.lit(None, dtype=pl.String()).alias(node)]),
    )
    if holds is None:
        return own
    per_node = HOST in holds.collect_schema().names()
    if per_node and node is None:
        holds = merged_pieces(holds)
    pieces = holds.select(
        pl.col(CLUSTER).cast(pl.String()),
        pl.col(JOB_ID).cast(pl.String()),
        pl.col(ATTEMPT).cast(pl.Int64()),
        pl.col(START_AT).dt.cast_time_unit("us").alias(start),
        pl.col(END_AT).dt.cast_time_unit("us").alias(end),
        pl.col(GPUS).cast(pl.Float64).alias(gpus),
        *(
            []
            if node is None
            else [(pl.col(HOST) if per_node else pl.lit(None)).cast(pl.String()).alias(node)]
        ),
    )
    names = own.collect_schema().names()
    keys = pieces.select(HOLD_KEYS).unique()
    split = attempts.join(pieces, on=HOLD_KEYS, how="inner").select(names)
    return pl.concat([own.join(keys, on=HOLD_KEYS, how="anti"), split], how="vertical_relaxed")
