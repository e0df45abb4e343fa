"""The build's units of work for tables keyed by hour or by attempt: cluster-months of hours,
and ranges of attempts, computed one at a time so that a table's intermediate rows (attempts
exploded into node-hours, waits into pending hours) are those of one unit, not of the whole
history.

An hour-keyed table whose every hour depends only on the attempts and waits that overlap that
hour (the topology tables of :mod:`metrics.domains` and :func:`metrics.fragmentation_hourly`)
is the concatenation of the same function over the units, each given its unit's hours and the
rows that touch them (:func:`touching`); a table with one row per attempt
(:func:`metrics.job_placement`) is the concatenation over ranges of attempts. The build's tests
compare both against one computation over everything, row for row.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence

import polars as pl

__all__ = [
    "BUILD_CHUNK",
    "ROW_CHUNK",
    "by_hour_chunks",
    "cluster_days",
    "hour_chunks",
    "in_days",
    "of_keys",
    "on_days",
    "reach_end",
    "row_chunks",
    "touching",
]

#: The build's unit of hours, as a polars duration (``dt.truncate``): one cluster-month.
BUILD_CHUNK = "1mo"

#: Attempts per unit of a per-attempt table: two of DuckDB's row groups (122,880 rows each), so
#: where a unit writes a row per attempt, the units written one after another fill whole row
#: groups. (A unit writes other counts where ``job_gpu_summary`` leaves out attempts without
#: GPUs, ``time_to_start_jobs`` holds several clusters, or ``job_placement`` has several levels
#: or a map lacking an attempt's node; it then leaves a partial row group, as before.) With
#: 250,000 every unit left one behind (122,880 × 4 + 8,480 rows per two units), and the first
#: checkpoint after a build merged the last ones again (0.45–0.56 s on the year's built
#: warehouse, paid by the next new day's commit; BENCHMARKS.md "The large-job wait causes'
#: held GPUs by a sweep").
ROW_CHUNK = 2 * 122_880

_HOUR = dt.timedelta(hours=1)

#: The columns a row's life may start at (submitted, eligible, started), the earliest counting.
_STARTS = ("submit_at", "eligible_at", "start_at")


def hour_chunks(
    hours: pl.DataFrame, every: str = BUILD_CHUNK
) -> list[tuple[str, dt.datetime, dt.datetime, pl.DataFrame]]:
    """``hours`` cut into units of one cluster and one period of length ``every``.

    Args:
        hours: ``cluster, hour`` (UTC hour starts), other columns kept.
        every: a polars duration (``"1mo"``, ``"1d"``, ``"6h"``): hours whose ``hour``
            truncates to the same period form one unit.

    Returns:
        ``(cluster, lo, hi, rows)`` per unit, in ascending (cluster, period) order: ``rows`` the
        unit's rows in their order within ``hours``, ``lo`` its first hour, ``hi`` its last
        hour + 1 h (the unit covers [lo, hi)). Empty ``hours``: no unit.

    Raises:
        polars.exceptions.InvalidOperationError: ``every`` is not a duration.
    """
    if hours.is_empty():
        return []
    tagged = hours.with_columns(pl.col("hour").dt.truncate(every).alias("_unit"))
    units = tagged.partition_by("cluster", "_unit", maintain_order=True, as_dict=True)
    out = []
    for (c, _unit), rows in sorted(units.items(), key=lambda kv: kv[0]):
        lo, last = rows.select(pl.col("hour").min().alias("lo"), pl.col("hour").max()).row(0)
        out.append((str(c), lo, last + _HOUR, rows.drop("_unit")))
    return out


def cluster_days(days: Mapping[str, set[dt.date]]) -> pl.DataFrame:
    """``days`` (cluster → UTC days) as rows ``cluster, _day`` (String, Date)."""
    return pl.DataFrame(
        [(c, d) for c, ds in sorted(days.items()) for d in sorted(ds)],
        schema={"cluster": pl.String(), "_day": pl.Date()},
        orient="row",
    )


def on_days(
    frame: pl.DataFrame, days: Mapping[str, set[dt.date]] | None, *, col: str = "hour"
) -> pl.DataFrame:
    """``frame``'s rows whose ``col`` (a UTC datetime) falls on one of its cluster's ``days``
    (UTC dates), in ``frame``'s order; every row when ``days`` is None (a full build). An
    hour-keyed table restricted to an incremental plan's days is :func:`by_hour_chunks` over
    ``on_days(hours, days)``: its units then hold those hours alone."""
    if days is None:
        return frame
    return (
        frame.with_columns(pl.col(col).dt.convert_time_zone("UTC").dt.date().alias("_day"))
        .join(cluster_days(days), on=["cluster", "_day"], how="semi", maintain_order="left")
        .drop("_day")
    )


def in_days(col: str, days: set[dt.date]) -> pl.Expr:
    """``col`` (a zoned datetime) falls on one of ``days``, as UTC days."""
    return pl.col(col).dt.convert_time_zone("UTC").dt.date().is_in(sorted(days))


def of_keys(
    frame: pl.LazyFrame,
    keys: pl.DataFrame,
    on: Sequence[str],
    *,
    lookup: str = "job_id",
    nulls_equal: bool = False,
) -> pl.LazyFrame:
    """``frame``'s rows whose ``on`` columns equal one of ``keys``' rows (a semi join), in
    ``frame``'s order, for a few keys against many rows (a new day's changed jobs against the
    history's attempts or spells).

    The rows whose ``lookup`` column holds one of the keys' values (or NULL, where NULLs are
    equal and a key has one) are taken first, by a lookup of that one column; the join on every
    ``on`` column then reads those few. Joined alone, polars encodes all the ``on`` columns of
    every row of ``frame`` (the year's 2.15M attempts against 7,000 keys on four columns: 0.14 s
    and 101 MB above the build's, against 0.04 s and 1 MB this way; BENCHMARKS.md "The new day
    reads what it uses").

    Args:
        frame: rows with the ``on`` columns.
        keys: the keys, with the ``on`` columns in ``frame``'s types.
        on: the key columns; ``lookup`` among them.
        lookup: the column looked up first (the most selective: the job id).
        nulls_equal: whether NULL equals NULL in the join (polars' ``nulls_equal``).

    Returns:
        ``frame``'s columns, the rows kept.

    Raises:
        ValueError: ``lookup`` is not one of ``on``.
    """
    if lookup not in on:
        raise ValueError(f"lookup column {lookup!r} is not one of the keys {list(on)}")
    values = keys.get_column(lookup)
    near = pl.col(lookup).is_in(values.drop_nulls().unique().implode())
    if nulls_equal and values.null_count():
        near = near | pl.col(lookup).is_null()
    return frame.filter(near).join(
        keys.lazy().select(on),
        on=list(on),
        how="semi",
        nulls_equal=nulls_equal,
        maintain_order="left",
    )


def reach_end(frame: pl.LazyFrame, holds: pl.LazyFrame | None) -> pl.LazyFrame:
    """``frame`` with ``_reach_at``: how far each row holds GPUs (METRICS.md "GPU holding").

    An attempt with pieces of held GPUs (``holds``) can hold some past its ``end_at`` (its
    pods through an eviction's grace period): its reach is the later of ``end_at`` and its
    last piece's end, NULL (open) where either is; any other row reaches its ``end_at``.

    Args:
        frame: rows with ``end_at`` (UTC) and, with ``holds``, ``cluster, job_id, attempt``.
        holds: :data:`metrics.holds.HOLD_SCHEMA` rows; None: no attempt has pieces.

    Returns:
        ``frame``'s columns, in its order, plus ``_reach_at`` (``end_at``'s type).
    """
    if holds is None:
        return frame.with_columns(pl.col("end_at").alias("_reach_at"))
    schema = frame.collect_schema()
    end = schema["end_at"]
    last = (
        holds.select(
            *(pl.col(k).cast(schema[k]) for k in ("cluster", "job_id", "attempt")),
            pl.col("end_at").cast(end).alias("_held_to"),
        )
        .group_by("cluster", "job_id", "attempt")
        .agg(
            pl.when(pl.col("_held_to").is_null().any())
            .then(pl.lit(None, end))
            .otherwise(pl.col("_held_to").max())
            .alias("_held_to"),
            pl.lit(True).alias("_pieced"),
        )
    )
    open_ = pl.col("end_at").is_null() | pl.col("_held_to").is_null()
    return (
        frame.join(last, on=["cluster", "job_id", "attempt"], how="left", maintain_order="left")
        .with_columns(
            pl.when(pl.col("_pieced").fill_null(False))
            .then(
                pl.when(open_)
                .then(pl.lit(None, end))
                .otherwise(pl.max_horizontal("end_at", "_held_to"))
            )
            .otherwise(pl.col("end_at"))
            .alias("_reach_at")
        )
        .drop("_held_to", "_pieced")
    )


def touching(
    frame: pl.LazyFrame,
    cluster: str,
    lo: dt.datetime,
    hi: dt.datetime,
    *,
    holds: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """The rows of ``cluster`` whose life can touch [lo, hi): begun (the earliest of
    ``submit_at``, ``eligible_at``, ``start_at`` it has) before ``hi`` and not over before
    ``lo`` (the later of its reach and ``start_at``: an attempt recorded as ending before it
    started still waited until its start). A row with no start or no end is kept (open at that
    side).

    Args:
        frame: ``cluster``, ``end_at`` and any of ``submit_at, eligible_at, start_at``
            (UTC datetimes): attempts or never-started rows.
        cluster: the unit's cluster.
        lo, hi: the unit's hours [lo, hi) (UTC).
        holds: the pieces of held GPUs of ``frame``'s attempts that have some
            (:func:`reach_end`: an attempt reaches the later of its end and its last piece's
            end); None: every row reaches its ``end_at``.

    Returns:
        The same columns, the rows kept (a superset of those any hour of the unit reads: a
        function of the unit's hours alone gives the same rows on it as on ``frame``).
    """
    names = frame.collect_schema().names()
    starts = [c for c in _STARTS if c in names]
    begun = pl.min_horizontal(*starts) if starts else pl.lit(None, pl.Datetime("us", "UTC"))
    reach = "end_at" if holds is None else "_reach_at"
    over = pl.max_horizontal(reach, "start_at") if "start_at" in names else pl.col(reach)
    mine = frame.filter(pl.col("cluster") == cluster)
    if holds is not None:
        mine = reach_end(mine, holds.filter(pl.col("cluster") == cluster))
    return mine.filter(
        (begun.is_null() | (begun < hi)) & (pl.col(reach).is_null() | (over >= lo))
    ).select(names)


def by_hour_chunks(
    hours: pl.DataFrame,
    compute: Callable[[pl.DataFrame, str, dt.datetime, dt.datetime], pl.DataFrame],
    every: str = BUILD_CHUNK,
) -> pl.DataFrame:
    """An hour-keyed table computed one unit of :func:`hour_chunks` at a time:
    ``compute(rows, cluster, lo, hi)`` for each unit, concatenated in unit order (with no
    hour, ``compute`` of the empty ``hours`` on an empty hour range, for its columns).

    ``compute`` must return only rows of its unit's hours, sorted with ``cluster`` then
    ``hour`` leading, for the result to equal one computation over all hours.
    """
    units = hour_chunks(hours, every)
    if not units:
        epoch = dt.datetime(2000, 1, 3, tzinfo=dt.UTC)
        return compute(hours, "", epoch, epoch)
    return pl.concat([compute(rows, c, lo, hi) for c, lo, hi, rows in units])


def row_chunks(
    rows: pl.DataFrame, size: int = ROW_CHUNK, *, order: Sequence[str] = ()
) -> Iterator[pl.DataFrame]:
    """``rows`` in consecutive ranges of ``size`` rows (the last may be shorter; no row: one
    empty range, so a caller still sees the columns), yielded one at a time. With ``order``
    (columns) and more than one range, the ranges follow that order, each gathered by index
    (the whole frame is never sorted or copied); one range is ``rows`` as given. A per-row
    function applied to each range and sorted by those columns inside it, concatenated, is
    then sorted by them throughout.

    Raises:
        ValueError: ``size`` is not positive (when iteration starts).
    """
    if size < 1:
        raise ValueError(f"chunk size must be positive, got {size}")
    if rows.height <= size:
        yield rows
        return
    index = rows.select(pl.arg_sort_by(list(order)))[:, 0] if order else None
    for offset in range(0, rows.height, size):
        yield rows.slice(offset, size) if index is None else rows[index.slice(offset, size)]
