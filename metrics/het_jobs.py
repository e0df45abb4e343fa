"""Heterogeneous Slurm jobs as one waiting unit (METRICS.md "Time to start", het jobs).

Slurm allocates every component of a heterogeneous job at once, as a unit (SchedMD,
"Heterogeneous Job Support"): the components ``H+0``, ``H+1``, … wait together, so for time to
start and large-job waits they are one job asking the sum of their GPUs. As pending demand (the
waterfall's held, stranded shapes: ``demand``) a unit some of whose components already run asks
only the others' GPUs. Occupancy, the waterfall's allocated leaves and fairness count each
component's own GPUs and nodes and do not use this module.
"""

from __future__ import annotations

import polars as pl

from metrics._helpers import seconds_between
from metrics.schema import (
    ATTEMPT,
    CLUSTER,
    ELIGIBLE_AT,
    END_AT,
    GPU_S,
    GPUS,
    JOB_ID,
    REQ_GPUS,
    RUN_S,
    START_AT,
    SUBMIT_AT,
    WAIT_S,
)

__all__ = ["het_unit_id", "het_wait_units", "is_het_component"]

#: A het component's job id as sacct prints it (text ``JobID`` ``H+O``; ``sacct --json``'s
#: ``het.job_id`` and ``het.job_offset`` are read to the same form).
_HET_ID = r"^(\d+)\+\d+$"

_UNIT, _OFF, _IDX, _STARTED, _ASKED = "_unit", "_off", "_idx", "_started", "_asked"
_FROM_ATTEMPTS = "_from_attempts"


def is_het_component(job_id: pl.Expr) -> pl.Expr:
    """Whether ``job_id`` (String) names a het component ``H+O``."""
    return job_id.str.contains(_HET_ID)


def het_unit_id(job_id: pl.Expr) -> pl.Expr:
    """The waiting unit's id of ``job_id`` (String): the het leader ``H+0`` for a het component
    ``H+O``; any other id (a plain job, an array task ``A_T``, a Kubernetes ``ns/name``) is its
    own unit, unchanged."""
    return job_id.str.replace(_HET_ID, "${1}+0")


def het_wait_units(
    attempts: pl.LazyFrame, pending: pl.LazyFrame | None = None, *, demand: bool = False
) -> tuple[pl.LazyFrame, pl.LazyFrame | None]:
    """The waiting units of ``attempts`` and ``pending``: every row as it is, except the rows of
    het components, which become one row per het job and attempt, keyed by the leader ``H+0``.

    The components of a het job (its ids ``H+O`` seen in either frame) wait as one unit. A
    component's attempt ``i`` (``attempt``, else its rank by start) belongs to the unit's
    attempt ``i``; a never-started row of a component with ``k`` attempts belongs to the
    unit's attempt ``k`` (its next start). Per unit attempt:

    - ``eligible_at`` / ``submit_at``: the earliest of its components';
    - ``req_gpus``: Σ of what each component asks (``req_gpus`` when > 0, else ``gpus``);
      ``gpus`` and ``gpu_s``: Σ;
    - started when every component with a row in it has started (a component without a row
      for attempt ``i``, e.g. one requeued fewer times, does not hold the unit back):
      ``start_at`` = the latest start (all components start together; if the rows differ,
      the unit has waited until the last), ``end_at`` the latest end (NULL while one runs),
      ``wait_s`` = start − eligible, ``submit_wait_s`` = start − submit, ``run_s`` = end −
      start; the row is one of the returned attempts, ``attempt`` = i;
    - else not started as one: a returned never-started row (``attempt`` NULL where the frame
      has it), ended (cancelled) at the latest end of its not-started components when each has
      one, else NULL (pending). Without ``pending``, such rows are returned among the attempts,
      with ``start_at`` NULL;
    - every other column: the lowest-offset component's.

    With ``demand``, a unit attempt not started as one is returned as the pending GPUs it asks,
    not its wait: the GPUs of a component that runs are allocated, not demand. Its span
    [``eligible_at``, ``end_at``) is cut at the starts and ends of its started components that
    fall inside it, one row per piece with ``eligible_at`` / ``end_at`` the piece's bounds
    (the last piece's ``end_at`` the unit's, NULL while pending) and ``req_gpus`` = ``gpus`` =
    Σ asked by its components not running over the piece (a started component runs over
    [its start, its end)); pieces asking 0 GPUs are dropped. For the pending demand readers
    (the waterfall's held, stranded shapes); time to start and waits keep the default.

    Args:
        attempts: rows with ``cluster, job_id, start_at`` and any of ``attempt, gpus,
            req_gpus, eligible_at, submit_at, end_at, wait_s, submit_wait_s, run_s, gpu_s`` and
            other columns (Slurm attempts, or any frame :func:`metrics.wait_spells` reads).
        pending: never-started rows with ``cluster, job_id, req_gpus, eligible_at`` and any
            other columns, or None.
        demand: return a not-started unit as its pieces of pending GPUs (above), not one wait.

    Returns:
        ``(attempts, pending)`` with the input frames' columns and types: the rows that are no
        het component in their order, then the het units.
    """
    a_schema = attempts.collect_schema()
    a_cols = a_schema.names()
    het = is_het_component(pl.col(JOB_ID).cast(pl.String))
    rest_a = attempts.filter(~het)

    def col(name: str, dtype: pl.DataType) -> pl.Expr:
        return pl.col(name) if name in a_cols else pl.lit(None, dtype)

    gpus, req = col(GPUS, pl.Float64()), col(REQ_GPUS, pl.Float64())
    idx = (
        pl.col(ATTEMPT).cast(pl.Int64)
        if ATTEMPT in a_cols
        else (pl.col(START_AT).rank("ordinal").over(CLUSTER, JOB_ID) - 1).cast(pl.Int64)
    )
    unit = het_unit_id(pl.col(JOB_ID).cast(pl.String))
    offset = pl.col(JOB_ID).cast(pl.String).str.extract(r"\+(\d+)$", 1).cast(pl.Int64)
    het_a = attempts.filter(het).with_columns(
        unit.alias(_UNIT),
        offset.alias(_OFF),
        idx.alias(_IDX),
        pl.col(START_AT).is_not_null().alias(_STARTED),
        pl.when(req > 0).then(req).otherwise(gpus).cast(pl.Float64).alias(_ASKED),
        pl.lit(value=True).alias(_FROM_ATTEMPTS),
    )
    members = [het_a]
    rest_p = None
    if pending is not None:
        p_schema = pending.collect_schema()
        p_het = is_het_component(pl.col(JOB_ID).cast(pl.String))
        rest_p = pending.filter(~p_het)
        counts = het_a.group_by(CLUSTER, JOB_ID).agg(pl.len().cast(pl.Int64).alias("_k"))
        members.append(
            pending.filter(p_het)
            .join(counts, on=[CLUSTER, JOB_ID], how="left")
            .with_columns(
                unit.alias(_UNIT),
                offset.alias(_OFF),
                pl.col("_k").fill_null(0).alias(_IDX),
                pl.lit(value=False).alias(_STARTED),
                pl.col(REQ_GPUS).cast(pl.Float64).alias(_ASKED),
                pl.lit(value=False).alias(_FROM_ATTEMPTS),
            )
            .drop("_k")
        )
    rows = pl.concat(members, how="diagonal_relaxed").sort(
        CLUSTER, _UNIT, _IDX, _OFF, nulls_last=True
    )
    all_started = pl.col(_STARTED).all()
    names = set(rows.collect_schema().names())
    own = {CLUSTER, _UNIT, _IDX, JOB_ID, ATTEMPT, GPUS, REQ_GPUS, GPU_S, SUBMIT_AT, ELIGIBLE_AT}
    own |= {START_AT, END_AT, WAIT_S, "submit_wait_s", RUN_S}
    firsts = [pl.col(c).first() for c in names if c not in own and not c.startswith("_")]
    ended_unstarted = pl.col(END_AT).filter(~pl.col(_STARTED))
    aggs = [
        all_started.alias("_all"),
        *firsts,
        pl.col(_ASKED).sum().alias(REQ_GPUS),
        pl.col(ELIGIBLE_AT).min(),
        *([pl.col(SUBMIT_AT).min()] if SUBMIT_AT in names else []),
        pl.col(START_AT).max(),
        pl.when(all_started)
        .then(pl.when(pl.col(END_AT).is_null().any()).then(None).otherwise(pl.col(END_AT).max()))
        .when(ended_unstarted.is_null().any())
        .then(None)
        .otherwise(ended_unstarted.max())
        .alias(END_AT),
        *([pl.col(GPUS).sum()] if GPUS in names else []),
        *([pl.col(GPU_S).sum()] if GPU_S in names else []),
    ]
    units = (
        rows.group_by(CLUSTER, _UNIT, _IDX, maintain_order=True)
        .agg(aggs)
        .with_columns(pl.col(_UNIT).alias(JOB_ID))
    )
    start = pl.when(pl.col("_all")).then(pl.col(START_AT))
    derived = {
        START_AT: start,
        ATTEMPT: pl.when(pl.col("_all")).then(pl.col(_IDX)),
        WAIT_S: seconds_between(start, pl.col(ELIGIBLE_AT)),
        "submit_wait_s": seconds_between(start, pl.col(SUBMIT_AT)) if SUBMIT_AT in names else None,
        RUN_S: seconds_between(pl.col(END_AT), start),
    }

    def shaped(frame: pl.LazyFrame, schema: pl.Schema) -> pl.LazyFrame:
        exprs = []
        for name, dtype in schema.items():
            d = derived.get(name)
            if d is not None:
                exprs.append(d.cast(dtype).alias(name))
            elif name in names or name == JOB_ID:
                exprs.append(pl.col(name).cast(dtype))
            else:
                exprs.append(pl.lit(None, dtype).alias(name))
        return frame.select(exprs)

    started = shaped(units.filter(pl.col("_all")), a_schema)
    waiting = units.filter(~pl.col("_all"))
    if demand:
        waiting = _demand_pieces(rows, waiting, has_gpus=GPUS in names)
    if pending is None or rest_p is None:
        return pl.concat([rest_a, started, shaped(waiting, a_schema)]), None
    return pl.concat([rest_a, started]), pl.concat([rest_p, shaped(waiting, p_schema)])


def _demand_pieces(rows: pl.LazyFrame, waiting: pl.LazyFrame, *, has_gpus: bool) -> pl.LazyFrame:
    """``waiting`` (not-started unit attempts, with their component ``rows``) cut into the pieces
    of pending GPUs :func:`het_wait_units` documents under ``demand``; a unit with no known
    eligible time as it is."""
    keys = [CLUSTER, _UNIT, _IDX]
    span = waiting.filter(pl.col(ELIGIBLE_AT).is_not_null()).select(
        *keys, pl.col(ELIGIBLE_AT).alias("_e0"), pl.col(END_AT).alias("_e1")
    )
    ran = rows.filter(pl.col(_STARTED)).select(*keys, START_AT, END_AT).join(span, on=keys)

    def inside(name: str) -> pl.Expr:
        c = pl.col(name)
        return (c > pl.col("_e0")) & (pl.col("_e1").is_null() | (c < pl.col("_e1")))

    cuts = (
        pl.concat(
            [
                span.select(*keys, pl.col("_e0").alias("_p0")),
                ran.filter(inside(START_AT)).select(*keys, pl.col(START_AT).alias("_p0")),
                ran.filter(inside(END_AT)).select(*keys, pl.col(END_AT).alias("_p0")),
            ],
            how="vertical_relaxed",
        )
        .unique()
        .sort(*keys, "_p0")
        .join(span, on=keys, maintain_order="left")
        .with_columns(pl.coalesce(pl.col("_p0").shift(-1).over(keys), pl.col("_e1")).alias("_p1"))
    )
    running = (
        pl.col(_STARTED)
        & (pl.col(START_AT) <= pl.col("_p0"))
        & (pl.col(END_AT).is_null() | (pl.col(END_AT) > pl.col("_p0")))
    )
    asked = (
        cuts.select(*keys, "_p0", "_p1")
        .join(rows.select(*keys, _ASKED, _STARTED, START_AT, END_AT), on=keys)
        .group_by(*keys, "_p0", "_p1", maintain_order=True)
        .agg(pl.when(running).then(0.0).otherwise(pl.col(_ASKED)).sum().alias("_ask"))
        .filter(pl.col("_ask") > 0)
    )
    pieces = (
        waiting.join(asked, on=keys)
        .sort(*keys, "_p0")
        .with_columns(
            pl.col("_p0").alias(ELIGIBLE_AT),
            pl.col("_p1").alias(END_AT),
            pl.col("_ask").alias(REQ_GPUS),
            *([pl.col("_ask").alias(GPUS)] if has_gpus else []),
        )
        .drop("_p0", "_p1", "_ask")
    )
    return pl.concat(
        [pieces, waiting.filter(pl.col(ELIGIBLE_AT).is_null())], how="vertical_relaxed"
    )
