"""The dashboard's one shared reader of the serving copy (``dashboards.queries._SharedReader``).

A page's queries read through one read-only attachment of the serving copy per process instead
of opening the file once per query; a copy published over the path (``os.replace``, as
``publish_serving_copy`` does) is picked up by the next query, and the SQL page's locked-down
connections still open beside it.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import polars as pl
import pytest

from dashboards import queries
from pipelines.warehouse.safe_sql import SqlRefused, run_query


def _publish(path: Path, value: int) -> None:
    """Write a one-row copy holding ``value`` beside ``path`` and rename it over ``path``."""
    tmp = path.with_name(f"{path.name}.{value}.tmp")
    with duckdb.connect(str(tmp)) as con:
        con.execute("CREATE TABLE t AS SELECT $v AS x", {"v": value})
        # What filter_values reads: a cluster from the hourly view, a team from the attempts.
        con.execute("CREATE TABLE occupancy_hourly AS SELECT 'slurm-a' AS cluster")
        con.execute(
            "CREATE TABLE jobs AS SELECT 'slurm-a' AS cluster, $t AS team", {"t": f"t{value}"}
        )
        con.execute("CREATE TABLE fairness_weekly AS SELECT 'nlp' AS team")
    os.replace(tmp, path)


@pytest.fixture()
def copy(tmp_path: Path) -> Path:
    path = tmp_path / "serving.duckdb"
    _publish(path, 1)
    return path


def _x(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT x FROM t").fetchone()
    assert row is not None
    return int(row[0])


def test_queries_share_one_opening_until_a_new_copy_is_published(copy: Path) -> None:
    """Two queries on copy 1 use the same attachment; after a copy holding 2 is renamed over the
    path, the next query reads 2 through a new attachment and the old one is closed."""
    reader = queries._SharedReader(str(copy))
    with reader.cursor() as a:
        assert _x(a) == 1
    first = reader._current
    with reader.cursor() as b:
        assert _x(b) == 1
    assert reader._current is first
    _publish(copy, 2)
    with reader.cursor() as c:
        assert _x(c) == 2
    assert reader._current is not first
    assert reader._retired == []
    assert first is not None
    with pytest.raises(duckdb.ConnectionException):
        first.con.execute("SELECT 1")  # closed


def test_a_query_in_flight_finishes_on_the_copy_it_started_on(copy: Path) -> None:
    """A cursor opened on copy 1 still reads 1 after copy 2 is published and read; the old
    attachment is closed only when that cursor is."""
    reader = queries._SharedReader(str(copy))
    with reader.cursor() as old:
        _publish(copy, 2)
        with reader.cursor() as new:
            assert _x(new) == 2
        assert _x(old) == 1
        assert len(reader._retired) == 1
    assert reader._retired == []


def test_the_shared_reader_is_read_only_in_utc_and_locked(copy: Path, tmp_path: Path) -> None:
    """Writes, reading or attaching another file, attaching the copy read-write and settings
    are refused; the session zone is UTC."""
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    reader = queries._SharedReader(str(copy))
    with reader.cursor() as con:
        assert con.execute("SELECT current_setting('TimeZone')").fetchone() == ("UTC",)
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("CREATE TABLE z (a INTEGER)")
        with pytest.raises(duckdb.PermissionException):
            con.execute(f"SELECT * FROM read_csv('{other}')")
        with pytest.raises(duckdb.PermissionException):
            con.execute(f"ATTACH '{tmp_path / 'other.duckdb'}' AS other")
        with pytest.raises(duckdb.Error, match="already attached"):
            con.execute(f"ATTACH '{copy}' AS writable")  # the copy itself, read-write
        with pytest.raises(duckdb.InvalidInputException, match="locked"):
            con.execute("SET TimeZone = 'Europe/Paris'")


def test_sql_page_connections_open_beside_the_shared_reader(copy: Path) -> None:
    """While the shared reader holds copy 1 open, the SQL page's bounded connection (other
    settings: memory limit, external access off) opens and reads the same file, and its
    refusals still hold."""
    reader = queries._SharedReader(str(copy))
    with reader.cursor() as con:
        assert _x(con) == 1
        assert run_query(copy, "SELECT x FROM t", memory_limit="1GB")["x"].to_list() == [1]
        assert run_query(copy, "SELECT x FROM t", memory_limit="2GB")["x"].to_list() == [1]
        with pytest.raises(SqlRefused, match="read-only"):
            run_query(copy, "CREATE TABLE z (a INTEGER)")


def test_frame_reads_through_the_process_reader_and_sees_a_new_copy(copy: Path) -> None:
    """``_frame`` runs ``sql/dashboard/filter_values.sql`` through the process's one reader of
    the path (``st.cache_resource``): team t1 from copy 1, then t2 once copy 2 is published."""
    path = str(copy)
    values = queries._frame(path, "filter_values")
    assert values.filter(pl.col("kind") == "team")["value"].to_list() == ["nlp", "t1"]
    reader = queries._shared_reader(path)
    held = reader._current
    queries._frame(path, "filter_values")
    assert reader._current is held
    _publish(copy, 2)
    values = queries._frame(path, "filter_values")
    assert values.filter(pl.col("kind") == "team")["value"].to_list() == ["nlp", "t2"]
    assert reader._current is not held
