"""Slurm job identity: de-duplication across overlapping exports, supersession and attempts.

Pure polars (METRICS.md "Units and identities"):

- ``job_key`` is the array task ``A_T`` for array tasks, the het component ``H+O`` for het jobs,
  else JobIDRaw (falling back to JobID).
- The same allocation or step seen in several exports (overlapping ``--starttime`` windows, a
  job that was RUNNING in one file and COMPLETED in a later one) is kept once: per
  ``(cluster, job_key, step, start_at)`` the row with an end time wins; of open rows, the one
  with the longest Elapsed (the latest look at the running job, whatever order the exports
  were loaded in), then the latest load.
- A pending row (no start) is superseded when the same job appears started at or after the
  pending row's eligible (else submit) time; otherwise one never-started row of the job is kept:
  one with an end time (cancelled while pending: a final state, which slurmdbd never reopens)
  over one without, then the latest load, whatever order the exports were loaded in.
- A started allocation row with no Eligible time but a ``Planned`` (``Reserved`` before
  23.02) is eligible at start − Planned (:func:`_eligible`); Eligible, where printed, wins.
- ``attempt`` numbers the started allocation rows of a job by start time (0, 1, 2, …), as
  ``sacct --duplicates`` lists a requeued job's allocations; steps take the attempt of the
  allocation they ran in.
- An allocation with no end (running when one export was taken) of a job that has a later
  record (a later attempt, or a never-started row: requeued and waiting again) was requeued:
  Slurm sets a requeued job's Submit to the requeue time, so the attempt ended no later than
  that record's Submit (:func:`_requeue_ends`). Its ``end_at`` is that time, its ``state``
  ``REQUEUED`` (``state_raw`` keeps the state printed) and ``end_inferred`` true.
- An allocation still open after that whose Elapsed exceeds its time limit by more than
  :data:`RUNAWAY_GRACE_S` is a runaway job (slurmdbd holds it running, slurmctld, which ends a
  job at its limit, no longer has it: ``sacctmgr show runawayjobs``): its ``end_at`` is start +
  limit + :data:`RUNAWAY_GRACE_S`, ``end_inferred`` true, its ``state`` as printed
  (:func:`_runaway_ends`).
"""

from __future__ import annotations

import polars as pl

from metrics import seconds_between
from metrics.data_quality import RUNAWAY_GRACE_S
from pipelines.core.gpu_shards import tres_shards
from pipelines.core.registry import UNATTRIBUTED

__all__ = [
    "RESOLUTION_ORDER",
    "RUNAWAY_GRACE_S",
    "in_resolution_order",
    "is_runaway",
    "resolve_slurm_jobs",
    "slurm_attempts",
]

_KEY = ["cluster", "job_key"]
_ROW = "_row"
#: An open attempt's requeue time (:func:`_requeue_ends`), while the rows are resolved.
_REQUEUED_AT = "_requeued_at"
#: A runaway allocation's counted end, and its open steps' (:func:`_runaway_ends`).
_RUNAWAY_END = "_runaway_end"
#: The order of :func:`resolve_slurm_jobs`' rows: ascending, each column's NULLs last. No two
#: started rows share all four (one per ``(cluster, job_key, step, start_at)``).
RESOLUTION_ORDER = (*_KEY, "start_at", "step")


def _job_key() -> pl.Expr:
    return (
        pl.when(pl.col("array_job_id").is_not_null() & pl.col("array_task_id").is_not_null())
        .then(pl.format("{}_{}", pl.col("array_job_id"), pl.col("array_task_id")))
        .when(pl.col("het_job_id").is_not_null() & pl.col("het_job_offset").is_not_null())
        .then(pl.format("{}+{}", pl.col("het_job_id"), pl.col("het_job_offset")))
        .otherwise(pl.coalesce(pl.col("job_id_raw"), pl.col("job_id")))
    )


def resolve_slurm_jobs(raw_rows: pl.LazyFrame, account_teams: pl.LazyFrame) -> pl.LazyFrame:
    """Every Slurm row once, with identity, attempt, team and derived durations.

    Args:
        raw_rows: parsed sacct rows (``pipelines.slurm._sacct_parse.SLURM_ROW_SCHEMA``) plus
            ``ingest_id``, from any number of (overlapping) exports.
        account_teams: ``key`` (Slurm account) → ``team`` from the allocation registry.

    Returns:
        The rows of the ``slurm_jobs`` view: the input columns plus ``row_id`` (surrogate,
        ``<ingest_id>:<line_no>[:<array_task_id>]``), ``job_key``, ``source`` ('slurm'),
        ``attempt`` (NULL for rows that never started), ``team`` (``unattributed`` when the
        account is not in the registry), ``wait_s`` = start − eligible (``eligible_at``:
        Eligible, else start − Planned on a started allocation row, :func:`_eligible`),
        ``submit_wait_s`` = start − submit, ``run_s`` = end − start (NULL while running) and
        ``gpu_s`` = gpus × run_s on allocation rows (NULL on steps, which never add
        occupancy), and ``shards`` /
        ``req_shards``: the GPU shards AllocTRES / ReqTRES name
        (:func:`pipelines.core.gpu_shards.tres_shards`; NULL without the field; their GPUs are
        worked out where the jobs meet the node state, :func:`pipelines.core.gpu_shards.
        shard_gpus`), and ``end_inferred``: true on an attempt that had no end and was
        requeued (a later record of its job, :func:`_requeue_ends`), whose ``end_at`` is then
        the requeue time and ``state`` ``REQUEUED``, or that had no end and ran more than
        :data:`RUNAWAY_GRACE_S` past its time limit (:func:`is_runaway`), whose ``end_at``
        is then start + ``timelimit_s`` + :data:`RUNAWAY_GRACE_S`. Seconds throughout.
        The same rows in any order give the same frame: every choice is made on the rows'
        times, ingest ids and line numbers, and no two rows of one identity share an ingest id
        and a line number (the tasks one pending array line expands to are identities of their
        own), so no tie is left to the input's order.
    """
    names = raw_rows.collect_schema().names()
    rows = raw_rows.with_columns(
        _eligible(names).alias("eligible_at"),
        _job_key().alias("job_key"),
        pl.format(
            "{}:{}{}",
            pl.col("ingest_id"),
            pl.col("line_no"),
            pl.when(pl.col("array_task_id").is_not_null())
            .then(pl.format(":{}", pl.col("array_task_id")))
            .otherwise(pl.lit("")),
        ).alias("row_id"),
    ).with_row_index(_ROW)
    # Which rows are kept, their attempts and their order are decided on the few columns that
    # decide them (each sort, de-duplication and join until ``kept`` copies only those); the
    # rows' other columns are gathered once, in the final order. When every step copied every
    # column, resolving 250,000 raw rows of a year of 10,000 GPUs rose 439–444 MB above its
    # start; this way, 109–120 MB (BENCHMARKS.md, "The build gives DuckDB's cache back").
    limits = [c for c in ("elapsed_s", "timelimit_s") if c in names]
    keys = rows.select(_ROW, *_KEY, "step", "start_at", "end_at", "eligible_at", "submit_at",
                       "is_allocation", "ingest_id", "line_no", *limits)  # fmt: skip
    # Of an attempt's copies, one with an end wins; of open copies, the one with the longest
    # Elapsed (the latest look at it, whichever file was loaded last: a runaway's Elapsed decides
    # its end, :func:`is_runaway`), then the last loaded.
    seen_for = (
        pl.when(pl.col("end_at").is_null()).then(pl.col("elapsed_s"))
        if "elapsed_s" in limits
        else pl.lit(None, dtype=pl.Int64())
    )
    started = (
        keys.filter(pl.col("start_at").is_not_null())
        .sort(pl.col("end_at").is_not_null(), seen_for, "ingest_id", "line_no", nulls_last=False)
        .unique(subset=[*_KEY, "step", "start_at"], keep="last", maintain_order=True)
    )
    last_start = (
        started.filter(pl.col("is_allocation"))
        .group_by(_KEY)
        .agg(pl.col("start_at").max().alias("_last_start"))
    )
    pending = (
        keys.filter(pl.col("start_at").is_null())
        .join(last_start, on=_KEY, how="left")
        .filter(
            pl.col("_last_start").is_null()
            | (pl.col("_last_start") < pl.coalesce("eligible_at", "submit_at"))
        )
        .drop("_last_start")
        .sort(pl.col("end_at").is_not_null(), "ingest_id", "line_no")
        .unique(subset=[*_KEY, "step"], keep="last", maintain_order=True)
    )
    allocs = (
        started.filter(pl.col("is_allocation"))
        .sort("start_at")
        .with_columns(pl.int_range(pl.len()).over(_KEY).cast(pl.Int64).alias("attempt"))
    )
    allocs = _runaway_ends(
        _requeue_ends(allocs, keys.filter(pl.col("is_allocation") & pl.col("start_at").is_null())),
        runaway=len(limits) == 2,
    )
    steps = (
        started.filter(~pl.col("is_allocation"))
        .sort("start_at")
        .join_asof(
            allocs.select(
                *_KEY,
                pl.col("start_at").alias("_alloc_start"),
                "attempt",
                pl.when(pl.col(_RUNAWAY_END).is_not_null())
                .then(pl.min_horizontal(_REQUEUED_AT, _RUNAWAY_END))
                .alias("_alloc_runaway_end"),
            ).sort("_alloc_start"),
            left_on="start_at",
            right_on="_alloc_start",
            by=_KEY,
            strategy="backward",
            check_sortedness=False,
        )
        # an open step of a runaway allocation ends with it (no earlier than its own start)
        .with_columns(
            pl.when(pl.col("end_at").is_null() & pl.col("_alloc_runaway_end").is_not_null())
            .then(pl.max_horizontal("start_at", "_alloc_runaway_end"))
            .alias(_RUNAWAY_END)
        )
        .drop("_alloc_start", "_alloc_runaway_end")
    )
    pending = pending.with_columns(pl.lit(None, dtype=pl.Int64()).alias("attempt"))
    kept = (
        pl.concat([allocs, steps, pending], how="diagonal_relaxed")
        .sort(*RESOLUTION_ORDER, nulls_last=True)
        .select(_ROW, "attempt", _REQUEUED_AT, _RUNAWAY_END)
    )
    teams = account_teams.select(pl.col("key").alias("account"), "team").unique("account")
    out = (
        kept.join(rows, on=_ROW, how="left", maintain_order="left")
        .join(teams, on="account", how="left", maintain_order="left")
        .with_columns(
            # a requeued runaway ends at the earlier of its requeue and its cap
            pl.coalesce("end_at", pl.min_horizontal(_REQUEUED_AT, _RUNAWAY_END)).alias("end_at"),
            pl.when(pl.col(_REQUEUED_AT).is_not_null())
            .then(pl.lit("REQUEUED"))
            .otherwise(pl.col("state"))
            .alias("state"),
            (pl.col(_REQUEUED_AT).is_not_null() | pl.col(_RUNAWAY_END).is_not_null()).alias(
                "end_inferred"
            ),
        )
        .with_columns(
            pl.lit("slurm").alias("source"),
            pl.col("team").fill_null(UNATTRIBUTED),
            seconds_between(pl.col("start_at"), pl.col("eligible_at")).alias("wait_s"),
            seconds_between(pl.col("start_at"), pl.col("submit_at")).alias("submit_wait_s"),
            seconds_between(pl.col("end_at"), pl.col("start_at")).alias("run_s"),
        )
    )
    names = rows.collect_schema().names()
    columns = [c for c in names if c != _ROW]
    none = pl.lit(None, dtype=pl.String())
    alloc = pl.col("alloc_tres") if "alloc_tres" in names else none
    req = pl.col("req_tres") if "req_tres" in names else none
    return out.with_columns(
        pl.when(pl.col("is_allocation"))
        .then(pl.col("gpus") * pl.col("run_s"))
        .otherwise(None)
        .alias("gpu_s"),
        tres_shards(alloc).alias("shards"),
        tres_shards(req).alias("req_shards"),
    ).select(
        *columns, "attempt", "team", "source", "wait_s", "submit_wait_s", "run_s", "gpu_s",
        "shards", "req_shards", "end_inferred",
    )  # fmt: skip


def is_runaway() -> pl.Expr:
    """True on a started allocation with no end (after :func:`_requeue_ends`) whose
    ``elapsed_s`` exceeds its ``timelimit_s`` (> 0) by more than :data:`RUNAWAY_GRACE_S`;
    false elsewhere, and where the limit (``UNLIMITED``, NULL) or Elapsed is unknown. Reads
    ``is_allocation, start_at, end_at, elapsed_s, timelimit_s``."""
    return (
        pl.col("is_allocation")
        & pl.col("start_at").is_not_null()
        & pl.col("end_at").is_null()
        & (pl.col("timelimit_s") > 0)
        & (pl.col("elapsed_s") > pl.col("timelimit_s") + RUNAWAY_GRACE_S)
    ).fill_null(value=False)


def _runaway_ends(allocs: pl.LazyFrame, *, runaway: bool) -> pl.LazyFrame:
    """``allocs`` plus :data:`_RUNAWAY_END`: of each runaway allocation (:func:`is_runaway`;
    one also ended by its requeue ends at the earlier of the two), start + ``timelimit_s`` +
    :data:`RUNAWAY_GRACE_S`; NULL
    elsewhere, and on every row when ``runaway`` is false (no ``elapsed_s`` or
    ``timelimit_s`` in the raw rows).

    A job slurmctld lost (a node or controller failure, a state file restored) stays running
    in slurmdbd for ever, and sacct prints its Elapsed as now − start: 2 GPUs "running" for 3
    years of a 5-day limit. Slurm would have ended it at its limit (+ ``OverTimeLimit``), so
    its end is counted there + the grace, an upper bound (it may have stopped any time before;
    ``sacctmgr show runawayjobs`` lists such jobs and offers to end them). Its ``state`` stays
    as printed.

    Args:
        allocs: started allocation rows with ``is_allocation, start_at, end_at, elapsed_s,
            timelimit_s`` (the last two only when ``runaway``) and :data:`_REQUEUED_AT`.
    """
    if not runaway:
        none = pl.when(pl.lit(value=False)).then("start_at")  # NULL of start_at's type
        return allocs.with_columns(none.alias(_RUNAWAY_END))
    capped = pl.col("start_at") + pl.duration(seconds=pl.col("timelimit_s") + RUNAWAY_GRACE_S)
    return allocs.with_columns(pl.when(is_runaway()).then(capped).alias(_RUNAWAY_END))


def _eligible(names: list[str]) -> pl.Expr:
    """A row's eligible time: ``eligible_at``, else, on a started allocation row,
    ``start_at`` − ``planned_s`` (sacct ``Planned``, ``Reserved`` before 23.02: eligible →
    start, seconds); NULL elsewhere. A never-started row's Planned is the time it had pended
    when sacct ran (or until it was cancelled, from an eligible time sacct may not print), so
    no eligible time is taken from it. ``names``: the raw rows' columns (``planned_s`` may be
    absent: then ``eligible_at`` as it is)."""
    if "planned_s" not in names:
        return pl.col("eligible_at")
    derived = (
        pl.when(pl.col("is_allocation") & pl.col("start_at").is_not_null())
        .then(pl.col("start_at") - pl.duration(seconds=pl.col("planned_s")))
        .otherwise(None)
    )
    return pl.coalesce(pl.col("eligible_at"), derived)


def _requeue_ends(allocs: pl.LazyFrame, unstarted: pl.LazyFrame) -> pl.LazyFrame:
    """``allocs`` plus :data:`_REQUEUED_AT`: for an allocation with no end, the time a later
    record of its job says it was requeued; NULL elsewhere.

    A later record is another allocation row of the same ``(cluster, job_key)`` that started
    after it (a later attempt) or never started (requeued and waiting again, or cancelled
    while waiting), with a time after the open attempt's start. Slurm resets a requeued job's
    Submit to the requeue time (``tests/fixtures/slurm-22.05-lab``: job 3's REQUEUED attempt
    ends at 02:38:35, its next record's Submit), and plain ``sacct`` (without ``-D``) shows
    only that latest record, so an export taken while the earlier attempt ran leaves it open
    for ever. The requeue time is, for a later attempt, the earliest of its Submit, Eligible
    and Start that is after the open attempt's start; for a never-started row, its Submit if
    after that start (Slurm resets Submit on a requeue, where an Eligible after the start is
    a ``--begin`` time an admin may have moved with ``scontrol update StartTime=``, and says
    nothing of a requeue); the least over the job's later records. A never-started row whose
    Submit is not after the start (an older copy of the pending job, taken before it started)
    is no later record.

    Args:
        allocs: started allocation rows (``_row``, ``cluster``, ``job_key``, ``submit_at``,
            ``eligible_at``, ``start_at``, ``end_at``), one per attempt.
        unstarted: never-started allocation rows of the same columns (every copy: which one
            the resolution keeps does not move the requeue time).

    Returns:
        ``allocs`` in its order, with :data:`_REQUEUED_AT` (UTC; NULL where the attempt has
        an end or its job no later record).
    """
    cols = [*_KEY, "submit_at", "eligible_at", "start_at"]
    opened = allocs.filter(pl.col("end_at").is_null()).select(
        _ROW, *_KEY, pl.col("start_at").alias("_open_start")
    )
    records = pl.concat([allocs.select(cols), unstarted.select(cols)], how="vertical_relaxed")

    def after(col: str) -> pl.Expr:
        return pl.when(pl.col(col) > pl.col("_open_start")).then(pl.col(col))

    ends = (
        opened.join(records, on=_KEY, how="inner")
        .filter(pl.col("start_at").is_null() | (pl.col("start_at") > pl.col("_open_start")))
        .select(
            _ROW,
            # a never-started record is a requeue by its Submit alone: its Eligible may be a
            # --begin time an admin moved (scontrol update StartTime=), not a requeue
            pl.when(pl.col("start_at").is_null())
            .then(after("submit_at"))
            .otherwise(
                pl.min_horizontal(after("submit_at"), after("eligible_at"), after("start_at"))
            )
            .alias(_REQUEUED_AT),
        )
        .filter(pl.col(_REQUEUED_AT).is_not_null())
        .group_by(_ROW)
        .agg(pl.col(_REQUEUED_AT).min())
    )
    return allocs.join(ends, on=_ROW, how="left", maintain_order="left")


def slurm_attempts(slurm_jobs: pl.LazyFrame) -> pl.LazyFrame:
    """Allocation attempts (the ``jobs`` grain) from :func:`resolve_slurm_jobs` output.

    Returns:
        Started allocation rows only (jobs that never started are not attempts).
    """
    return slurm_jobs.filter(pl.col("is_allocation") & pl.col("start_at").is_not_null())


def in_resolution_order(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` (resolved Slurm rows, with the :data:`RESOLUTION_ORDER` columns) in the
    resolution's order: the frame itself where its rows already come in that order, else
    sorted (stable: rows equal on all four keep their order).

    The stored resolution read back in the table's own order (``core.slurm_jobs`` is written
    part by part, each part in this order) needs no sort; where an incremental build deleted and
    appended some identities' rows, the rows of their range come out of order and are sorted
    here. Checking costs one pass over the four columns: on the year of 10,000 GPUs' 2.15M
    stored attempts 0.04 s, where DuckDB's ``ORDER BY`` cost 0.8 s of a 1.6 s read
    (BENCHMARKS.md, "The stored resolution read 2 ranges at a time, in its own order").

    Raises:
        polars.exceptions.ColumnNotFoundError: a column of :data:`RESOLUTION_ORDER` is missing.
    """
    # Row i is at or before row i+1: lexicographically over the keys, NULL after every value.
    at_or_before: pl.Expr | None = None
    for name in reversed(RESOLUTION_ORDER):
        this, after = pl.col(name), pl.col(name).shift(-1)
        before = ((this < after) | (this.is_not_null() & after.is_null())).fill_null(False)
        same = this.eq_missing(after)
        at_or_before = before | same if at_or_before is None else before | (same & at_or_before)
    assert at_or_before is not None
    if rows.select(at_or_before.head(max(rows.height - 1, 0)).all()).item():
        return rows
    return rows.sort(*RESOLUTION_ORDER, nulls_last=True, maintain_order=True)
