"""The table helpers of :mod:`pipelines.warehouse.tables`, each on a tiny in-memory table with
hand-checked values."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.warehouse import (
    UTC_DATETIME,
    apply_row_diff,
    count_rows,
    diff_job_rows,
    diff_replace,
    diff_replace_keys,
    ingest_time_spans,
    read_rows_since,
    read_table,
    refresh_as_of,
    replace_days,
    replace_job_rows,
    replace_table,
    row_diff,
    row_hashes,
    run_named,
    statement_params,
    table_exists,
)

T0 = dt.datetime(2026, 3, 1, 23, 0, tzinfo=dt.UTC)
H = dt.timedelta(hours=1)


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    c = duckdb.connect()
    # Another session zone than UTC: read_table must still hand back UTC.
    c.execute("SET TimeZone = 'Europe/Berlin'")
    c.execute("CREATE SCHEMA a")
    yield c
    c.close()


def _hours(con: duckdb.DuckDBPyConnection) -> None:
    """a.t: clusters x and y, hours 23:00 on 1 March and 00:00, 01:00 on 2 March (UTC)."""
    frame = pl.DataFrame(
        {
            "cluster": ["x", "x", "x", "y", "y", "y"],
            "hour": [T0, T0 + H, T0 + 2 * H] * 2,
            "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        }
    )
    replace_table(con, "a.t", frame)


def test_table_exists_sees_tables_and_views_by_schema(con: duckdb.DuckDBPyConnection) -> None:
    """A table is found in its schema only; a view counts; an unqualified name is any schema."""
    con.execute("CREATE TABLE a.t (x INT)")
    con.execute("CREATE VIEW v AS SELECT 1 AS x")
    assert table_exists(con, "a.t")
    assert not table_exists(con, "main.t")
    assert table_exists(con, "t")
    assert table_exists(con, "v")
    assert not table_exists(con, "a.missing")


def test_names_that_are_not_identifiers_are_refused(con: duckdb.DuckDBPyConnection) -> None:
    """Quotes, spaces and statements never reach the SQL text."""
    for bad in ("a.t; DROP TABLE a.t", "a.b.c", "'x'", "", "a t"):
        with pytest.raises(ValueError):
            table_exists(con, bad)
    with pytest.raises(ValueError):
        replace_days(con, "a.t", pl.DataFrame(), {}, time_col="hour) OR (1=1")


def test_read_table_is_utc_whatever_the_session_zone(con: duckdb.DuckDBPyConnection) -> None:
    """A TIMESTAMPTZ column comes back as ``Datetime(us, UTC)`` with the same instants."""
    _hours(con)
    df = read_table(con, "a.t")
    assert df.schema["hour"] == UTC_DATETIME
    assert df.sort("cluster", "hour")["hour"].to_list()[:3] == [T0, T0 + H, T0 + 2 * H]
    with_id = read_table(con, "a.t", with_rowid=True)
    assert with_id.columns == ["_rowid", "cluster", "hour", "v"]


def _since(clusters: list[str], starts: list[dt.datetime | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {"cluster": clusters, "since": starts},
        schema={"cluster": pl.String(), "since": UTC_DATETIME},
    )


def test_read_rows_since_reads_each_named_cluster_from_its_own_hour(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Cluster x from 00:00 on 2 March: its two last hours (v 2 and 3); y with a NULL start and
    z, which has no row, give nothing; times come back in UTC whatever the session zone. With
    y from 01:00 on 2 March and x from 23:00 on 1 March: x's three hours and y's last."""
    _hours(con)
    got = read_rows_since(
        con, "a.t", _since(["x", "y", "z"], [T0 + H, None, T0]), time_col="hour"
    ).sort("hour")
    assert got.columns == ["cluster", "hour", "v"]
    assert got.schema["hour"] == UTC_DATETIME
    assert got["cluster"].to_list() == ["x", "x"]
    assert got["hour"].to_list() == [T0 + H, T0 + 2 * H]
    assert got["v"].to_list() == [2.0, 3.0]
    both = read_rows_since(con, "a.t", _since(["x", "y"], [T0, T0 + 2 * H]), time_col="hour")
    assert sorted(both["v"].to_list()) == [1.0, 2.0, 3.0, 6.0]


def test_read_rows_since_reads_a_cluster_named_twice_once_and_naive_times_as_utc(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """x named from 23:00 and from 00:00: its three rows once each (from the earlier). A naive
    00:00 is 00:00 UTC (x's 00:00 and 01:00), not 00:00 in the session's Berlin (23:00 UTC)."""
    _hours(con)
    twice = read_rows_since(con, "a.t", _since(["x", "x"], [T0, T0 + H]), time_col="hour")
    assert sorted(twice["v"].to_list()) == [1.0, 2.0, 3.0]
    naive = pl.DataFrame({"cluster": ["x"], "since": [dt.datetime(2026, 3, 2, 0, 0)]})
    got = read_rows_since(con, "a.t", naive, time_col="hour")
    assert sorted(got["v"].to_list()) == [2.0, 3.0]


def test_read_rows_since_of_no_cluster_and_bad_names(con: duckdb.DuckDBPyConnection) -> None:
    """No cluster named: no row, the table's columns; a column name that is not a plain
    identifier is refused before any SQL runs."""
    _hours(con)
    nothing = read_rows_since(con, "a.t", _since([], []), time_col="hour")
    assert nothing.height == 0
    assert nothing.columns == ["cluster", "hour", "v"]
    for bad in ("hour) OR (1=1", "a.hour"):
        with pytest.raises(ValueError):
            read_rows_since(con, "a.t", _since(["x"], [T0]), time_col=bad)


def test_replace_table_and_count_rows(con: duckdb.DuckDBPyConnection) -> None:
    """The table holds exactly the frame; a frame without columns is refused."""
    _hours(con)
    assert count_rows(con, "a.t") == 6
    replace_table(con, "a.t", pl.DataFrame({"z": [1, 2]}))
    assert count_rows(con, "a.t") == 2
    with pytest.raises(ValueError, match="no columns"):
        replace_table(con, "a.t", pl.DataFrame())


def test_replace_days_deletes_exactly_the_given_cluster_days(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Replacing cluster x, 2 March (UTC) deletes x's 00:00 and 01:00 rows only (2 rows, though
    in Berlin time 23:00 UTC is 2 March too), and inserts the new row."""
    _hours(con)
    new = pl.DataFrame({"cluster": ["x"], "hour": [T0 + H], "v": [20.0]})
    deleted, inserted = replace_days(con, "a.t", new, {"x": {dt.date(2026, 3, 2)}}, time_col="hour")
    assert (deleted, inserted) == (2, 1)
    got = read_table(con, "a.t").sort("cluster", "hour")
    assert got["v"].to_list() == [1.0, 20.0, 4.0, 5.0, 6.0]


def test_replace_job_rows_deletes_the_keys_rows(con: duckdb.DuckDBPyConnection) -> None:
    """Rows of (x, 1) go (two attempts), (x, 2) and (y, 1) stay; the frame is inserted."""
    replace_table(
        con,
        "a.j",
        pl.DataFrame({"cluster": ["x", "x", "x", "y"], "job_id": ["1", "1", "2", "1"],
                      "attempt": [0, 1, 0, 0]}),
    )  # fmt: skip
    keys = pl.DataFrame({"cluster": ["x", "x"], "job_id": ["1", "1"]})
    new = pl.DataFrame({"cluster": ["x"], "job_id": ["1"], "attempt": [0]})
    assert replace_job_rows(con, "a.j", new, keys) == (2, 1)
    got = read_table(con, "a.j").sort("cluster", "job_id", "attempt")
    assert got.rows() == [("x", "1", 0), ("x", "2", 0), ("y", "1", 0)]


def test_refresh_as_of_sets_only_moved_cut_offs(con: duckdb.DuckDBPyConnection) -> None:
    """x's cut-off moves (2 rows set), y's is unchanged (0 rows)."""
    replace_table(
        con,
        "a.s",
        pl.DataFrame({"cluster": ["x", "x", "y"], "as_of": [T0, T0, T0]}),
    )
    as_of = pl.DataFrame({"cluster": ["x", "y"], "as_of": [T0 + H, T0]})
    assert refresh_as_of(con, "a.s", as_of) == 2
    got = read_table(con, "a.s").sort("cluster")
    assert got["as_of"].to_list() == [T0 + H, T0 + H, T0]


def test_diff_replace_rewrites_only_changed_rows(con: duckdb.DuckDBPyConnection) -> None:
    """Old rows v = 1, 2, 2; new rows v = 2, 3 (+1e-15 noise on 2): one 2 and the 1 go, 3 comes.
    A frame with other columns gives None (the caller replaces the table)."""
    replace_table(con, "a.d", pl.DataFrame({"k": ["a", "b", "b"], "v": [1.0, 2.0, 2.0]}))
    new = pl.DataFrame({"k": ["b", "c"], "v": [2.0 + 1e-15, 3.0]})
    assert diff_replace(con, "a.d", new) == (2, 1)
    assert sorted(read_table(con, "a.d").rows()) == [("b", 2.0), ("c", 3.0)]
    assert diff_replace(con, "a.d", pl.DataFrame({"other": [1]})) is None
    assert diff_replace(con, "a.missing", new) is None


def test_ingest_time_spans_per_ingest_and_cluster(con: duckdb.DuckDBPyConnection) -> None:
    """Ingest 7's rows span 23:00-01:00 for x and 23:00 for y; ingest 8's rows 08:00; asked for
    ingest 7 only, ingest 8 is left out; a bad time column is refused."""
    replace_table(
        con,
        "a.r",
        pl.DataFrame({"cluster": ["x", "x", "y", "x"], "ingest_id": [7, 7, 7, 8],
                      "ts": [T0, T0 + 2 * H, T0, T0 + 9 * H]}),
    )  # fmt: skip
    every = ingest_time_spans(con, "a.r", "ts")
    assert every.columns == ["ingest_id", "cluster", "lo", "hi"]
    assert every.schema["lo"] == pl.Datetime("us", "UTC")
    assert every.rows() == [
        (7, "x", T0, T0 + 2 * H),
        (7, "y", T0, T0),
        (8, "x", T0 + 9 * H, T0 + 9 * H),
    ]
    assert ingest_time_spans(con, "a.r", "ts", [7]).rows() == every.rows()[:2]
    assert ingest_time_spans(con, "a.r", "ts", []).height == 0
    with pytest.raises(ValueError, match="not a column name"):
        ingest_time_spans(con, "a.r", "ts; DROP TABLE a.r")


def test_statement_params_ignore_comments() -> None:
    """A ``$name`` in a comment is not a parameter."""
    assert statement_params("-- uses $nope\nSELECT $a + $b_2 -- and $c") == {"a", "b_2"}


def test_run_named_binds_the_named_parameters(con: duckdb.DuckDBPyConnection) -> None:
    """Extra parameters are left out; a missing one is a KeyError naming it."""
    _hours(con)
    con.execute("CREATE SCHEMA raw")
    replace_table(
        con,
        "raw.ingests",
        pl.DataFrame({"ingest_id": [1, 2, 3], "source": ["s"] * 3, "cluster": ["x"] * 3,
                      "file": ["f1", "f2", "f3"]}),
    )  # fmt: skip
    got = run_named(con, "raw/previous_ingests_of_file", {"source": "s", "file": "f2", "unused": 5})
    assert_frame_equal(got, pl.DataFrame({"ingest_id": [2]}))
    with pytest.raises(KeyError, match="file"):
        run_named(con, "raw/previous_ingests_of_file", {"source": "s"})
    with pytest.raises(FileNotFoundError):
        run_named(con, "analytics/no_such_statement")


def test_row_hashes_ignore_float_noise_past_12_digits() -> None:
    """2.0 and 2.0 + 1e-15 agree in 12 significant digits (the same hash); 2.0 and 2.000001
    differ in the 7th (different hashes)."""
    h = row_hashes(pl.DataFrame({"v": [2.0, 2.0 + 1e-15, 2.000001]})).to_list()
    assert h[0] == h[1] != h[2]


def test_diff_replace_counts_duplicates_nulls_and_instants(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Stored rows (session zone Berlin): (x, 1.0, T0) three times, (y, NULL, T0), (z, 5.0, T0).
    New rows: (x, 1.0, T0) once, (y, NULL, T0), (z, 5.0 + 1e-13, T0) and (z, 6.0, T0 + H).

    Hand count: x occurs 3 times stored and once new → 2 deleted; (y, NULL) is the same row
    (NULLs compare equal) → kept; 5.0 + 1e-13 agrees with 5.0 in 12 significant digits → kept
    (the stored 5.0 stays); (z, 6.0) is new → 1 inserted. So (2, 1), and the table holds x once,
    y, z 5.0 and z 6.0. The same instant read in another zone is the same row."""
    ts = pl.Series([T0] * 5, dtype=UTC_DATETIME)
    replace_table(
        con,
        "a.m",
        pl.DataFrame({"k": ["x", "x", "x", "y", "z"], "v": [1.0, 1.0, 1.0, None, 5.0], "t": ts}),
    )
    new = pl.DataFrame(
        {"k": ["x", "y", "z", "z"], "v": [1.0, None, 5.0 + 1e-13, 6.0],
         "t": pl.Series([T0, T0, T0, T0 + H], dtype=UTC_DATETIME)}
    )  # fmt: skip
    assert diff_replace(con, "a.m", new) == (2, 1)
    got = read_table(con, "a.m").sort("k", "v", nulls_last=True)
    assert got.select("k", "v").rows() == [("x", 1.0), ("y", None), ("z", 5.0), ("z", 6.0)]
    assert got["t"].to_list() == [T0, T0, T0, T0 + H]
    # Nothing changed: nothing is deleted or inserted.
    assert diff_replace(con, "a.m", got) == (0, 0)


def test_diff_replace_gives_none_for_other_column_types(con: duckdb.DuckDBPyConnection) -> None:
    """The same column names with another type (INTEGER stored, BIGINT new) are not diffed:
    None, and the table is left as it was (the caller replaces it)."""
    replace_table(con, "a.i", pl.DataFrame({"n": pl.Series([1, 2], dtype=pl.Int32)}))
    assert diff_replace(con, "a.i", pl.DataFrame({"n": pl.Series([1, 3], dtype=pl.Int64)})) is None
    assert sorted(read_table(con, "a.i")["n"].to_list()) == [1, 2]


def test_row_diff_compares_in_duckdb_then_applies_without_comparing_again(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Stored rows: (x, 1.0, [n1], T0) twice, (y, NULL, [n2], T0), (z, 5.0, [n3], T0). New rows:
    (x, 1.0, [n1], T0) once, (y, NULL, [n2], T0), (z, 5.0 + 1e-13, [n3], T0), (w, 2.0, [n1, n2],
    T0 + H).

    Hand result, duplicates counted as :func:`diff_replace` counts them: one stored x is matched,
    the other (rowid 1) is gone; (y, NULL) is the same row (NULLs equal); 5.0 + 1e-13 agrees with
    5.0 in 12 significant digits; w (position 3) is added. Rows: w, then the stored x. Nothing is
    written. With z's stored value 5.5 instead: added positions 2 and 3 (z, w), gone rowids 1 and
    3 (x, z), the rows new first then stored, with the frame's types (timestamps zoned UTC);
    applied, the table holds exactly the new rows (2 deleted, 2 inserted). A frame of another
    height is refused; other columns or a missing table: None."""
    ts = pl.Series([T0] * 4, dtype=UTC_DATETIME)
    stored = pl.DataFrame(
        {"k": ["x", "x", "y", "z"], "v": [1.0, 1.0, None, 5.0],
         "nodes": [["n1"], ["n1"], ["n2"], ["n3"]], "t": ts}
    )  # fmt: skip
    replace_table(con, "a.c", stored)
    new = pl.DataFrame(
        {"k": ["x", "y", "z", "w"], "v": [1.0, None, 5.0 + 1e-13, 2.0],
         "nodes": [["n1"], ["n2"], ["n3"], ["n1", "n2"]],
         "t": pl.Series([T0, T0, T0, T0 + H], dtype=UTC_DATETIME)}
    )  # fmt: skip
    got = row_diff(con, "a.c", new)
    assert got is not None
    assert (got.gone.to_list(), got.added.to_list(), got.height) == ([1], [3], 4)
    assert got.rows.rows() == [("w", 2.0, ["n1", "n2"], T0 + H), ("x", 1.0, ["n1"], T0)]
    assert count_rows(con, "a.c") == 4
    replace_table(con, "a.c", stored.with_columns(pl.Series("v", [1.0, 1.0, None, 5.5])))
    got = row_diff(con, "a.c", new)
    assert got is not None and got.rows.schema == new.schema
    assert (got.gone.to_list(), got.added.to_list()) == ([1, 3], [2, 3])
    assert got.rows.rows() == [
        ("z", 5.0 + 1e-13, ["n3"], T0),
        ("w", 2.0, ["n1", "n2"], T0 + H),
        ("x", 1.0, ["n1"], T0),
        ("z", 5.5, ["n3"], T0),
    ]
    assert count_rows(con, "a.c") == 4
    with pytest.raises(ValueError, match="3 rows, the difference was found for 4"):
        apply_row_diff(con, new.head(3), got)
    assert apply_row_diff(con, new, got) == (2, 2)
    assert read_table(con, "a.c").sort("k").rows() == new.sort("k").rows()
    assert row_diff(con, "a.c", pl.DataFrame({"other": [1]})) is None
    assert row_diff(con, "a.missing", new) is None


def test_row_diff_in_a_scope_compares_only_that_slice_and_keeps_whole_frame_positions(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Stored (k, v): (a, 1), (b, 2), (c, 3), (d, 4); new: (a, 1), (b, 20), (c, 30), (d, 4),
    (e, 5). Scoped to k in {b, e} on both sides (``WHERE k IN ('b', 'e')``, the mask over the
    new rows), c's change is outside the scope and not seen: gone is b's stored row (rowid 1),
    added are positions 1 (b) and 4 (e) of the whole frame, so applied the table holds a, b=20,
    c=3, d, e (the caller vouches for the rows outside the scope). Unscoped, c is seen too. A
    mask of another length is refused."""
    replace_table(con, "a.s", pl.DataFrame({"k": ["a", "b", "c", "d"], "v": [1, 2, 3, 4]}))
    new = pl.DataFrame({"k": ["a", "b", "c", "d", "e"], "v": [1, 20, 30, 4, 5]})
    scope = new["k"].is_in(["b", "e"])
    got = row_diff(con, "a.s", new, where="WHERE k IN ('b', 'e')", scope=scope)
    assert got is not None
    assert (got.gone.to_list(), got.added.to_list(), got.height) == ([1], [1, 4], 5)
    assert got.rows.rows() == [("b", 20), ("e", 5), ("b", 2)]
    whole = row_diff(con, "a.s", new)
    assert whole is not None and whole.added.to_list() == [1, 2, 4]
    assert apply_row_diff(con, new, got) == (1, 2)
    assert read_table(con, "a.s").sort("k").rows() == [
        ("a", 1), ("b", 20), ("c", 3), ("d", 4), ("e", 5)
    ]  # fmt: skip
    with pytest.raises(ValueError, match="a scope of 2 rows for 5 rows"):
        row_diff(con, "a.s", new, scope=scope.head(2))


def test_diff_replace_keys_names_the_jobs_of_the_rows_written(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Stored (cluster, job_id, v): (x, 1, 1.0), (x, 2, 2.0), (y, 1, 3.0). New: (x, 1, 1.0),
    (x, 2, 2.5), (y, 3, 4.0). Written: x/2's row replaced, y/1's deleted, y/3's inserted:
    (2 deleted, 2 inserted) and the jobs x/2 (both sides), y/3 (inserted), y/1 (deleted);
    x/1 is not named. Without keys: no key columns."""
    stored = pl.DataFrame({"cluster": ["x", "x", "y"], "job_id": ["1", "2", "1"],
                           "v": [1.0, 2.0, 3.0]})  # fmt: skip
    replace_table(con, "a.j", stored)
    new = pl.DataFrame({"cluster": ["x", "x", "y"], "job_id": ["1", "2", "3"],
                        "v": [1.0, 2.5, 4.0]})  # fmt: skip
    got = diff_replace_keys(con, "a.j", new, ("cluster", "job_id"))
    assert got is not None and got[:2] == (2, 2)
    assert sorted(got[2].rows()) == [("x", "2"), ("y", "1"), ("y", "3")]
    assert read_table(con, "a.j").sort("cluster", "job_id").rows() == new.rows()
    again = diff_replace_keys(con, "a.j", new, ())
    assert again is not None and again[:2] == (0, 0) and again[2].width == 0


def test_diff_job_rows_writes_only_the_differing_rows_of_the_named_jobs(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Stored (cluster, job_id, v): (x, 1, 1), (x, 2, 2), (x, 3, 3). Jobs x/1 and x/2 named,
    their new rows (x, 1, 1), (x, 2, 20): only x/2's row is rewritten (1 deleted, 1 inserted),
    x/3's row (not named) stays though the frame lacks it, and the temporary key table is gone
    after. Named again with the same rows: nothing written."""
    replace_table(con, "a.k", pl.DataFrame({"cluster": ["x"] * 3, "job_id": ["1", "2", "3"],
                                            "v": [1, 2, 3]}))  # fmt: skip
    keys = pl.DataFrame({"cluster": ["x", "x"], "job_id": ["1", "2"]})
    new = pl.DataFrame({"cluster": ["x", "x"], "job_id": ["1", "2"], "v": [1, 20]})
    assert diff_job_rows(con, "a.k", new, keys) == (1, 1)
    assert read_table(con, "a.k").sort("job_id")["v"].to_list() == [1, 20, 3]
    left = "SELECT count(*) FROM duckdb_tables() WHERE table_name = '_diff_job_keys'"
    assert con.execute(left).fetchall() == [(0,)]
    assert diff_job_rows(con, "a.k", new, keys) == (0, 0)


def test_diff_job_rows_compares_floats_bit_for_bit_when_exact(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Stored (x, 1, 1,000,000.0); new (x, 1, 1,000,000.000001): the two differ in the 13th
    significant digit. By default they are equal (12 digits) and the stored row stays,
    1,000,000.0; with ``exact`` the row is rewritten (1 deleted, 1 inserted) and holds the new
    value bit for bit; compared again, exactly, nothing is written."""
    replace_table(con, "a.f", pl.DataFrame({"cluster": ["x"], "job_id": ["1"], "v": [1e6]}))
    keys = pl.DataFrame({"cluster": ["x"], "job_id": ["1"]})
    new = pl.DataFrame({"cluster": ["x"], "job_id": ["1"], "v": [1_000_000.000001]})
    assert diff_job_rows(con, "a.f", new, keys) == (0, 0)
    assert read_table(con, "a.f")["v"].to_list() == [1e6]
    assert diff_job_rows(con, "a.f", new, keys, exact=True) == (1, 1)
    assert read_table(con, "a.f")["v"].to_list() == [1_000_000.000001]
    assert diff_job_rows(con, "a.f", new, keys, exact=True) == (0, 0)


def test_an_empty_list_is_not_a_null_list(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB's ``hash`` gives ``[]`` and a NULL list the same value; the row comparisons do
    not. Stored: (a, NULL), (b, [n1]); new: (a, []), (b, [n1]). ``row_diff``: the new
    (a, []) then the stored (a, NULL); ``diff_replace``: 1 deleted, 1 inserted, and the table
    then holds (a, [])."""
    nodes = pl.List(pl.String())
    stored = pl.DataFrame(
        {"k": ["a", "b"], "nodes": [None, ["n1"]]}, schema={"k": pl.String(), "nodes": nodes}
    )
    replace_table(con, "a.e", stored)
    new = stored.with_columns(pl.Series("nodes", [[], ["n1"]], dtype=nodes))
    got = row_diff(con, "a.e", new)
    assert got is not None and got.rows.rows() == [("a", []), ("a", None)]
    assert diff_replace(con, "a.e", new) == (1, 1)
    assert sorted(read_table(con, "a.e").rows()) == [("a", []), ("b", ["n1"])]
