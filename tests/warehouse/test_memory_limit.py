"""DuckDB's memory limit set for a block and restored after."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import pipelines.warehouse._connection as connection
from pipelines.warehouse import memory_limit, release_memory


def _limit(con: duckdb.DuckDBPyConnection) -> str:
    return str(con.sql("SELECT current_setting('memory_limit')").fetchall()[0][0])


def test_the_limit_holds_in_the_block_and_the_old_one_comes_back() -> None:
    """A fresh connection's default limit: inside the block DuckDB reports 512 MiB as its own
    spelling of 512MB, '488.2 MiB' (512·10⁶ / 2²⁰ = 488.28); after it the default again,
    exactly, also when the block raises. A limit set before (3 GB, reported 2.7 GiB:
    3·10⁹ / 2³⁰ = 2.79, cut to 0.1) comes back within DuckDB's printed precision, 0.1 GiB."""
    con = duckdb.connect()
    default = _limit(con)
    with memory_limit(con, "512MB"):
        assert _limit(con) == "488.2 MiB"
    assert _limit(con) == default
    with pytest.raises(RuntimeError), memory_limit(con, "1GiB"):
        assert _limit(con) == "1.0 GiB"
        raise RuntimeError("inside")
    assert _limit(con) == default
    con.execute("SET memory_limit = '3GB'")
    assert _limit(con) == "2.7 GiB"
    with memory_limit(con, "1GB"):
        assert _limit(con) == "953.6 MiB"
    after = _limit(con)
    assert after.endswith(" GiB") and abs(float(after.split()[0]) - 2.7) < 0.1 + 1e-9


@pytest.mark.parametrize("bad", ["1GB'; SET threads=1; --", "lots", "", "1 GB extra"])
def test_a_limit_that_is_not_a_size_is_refused(bad: str) -> None:
    con = duckdb.connect()
    with pytest.raises(ValueError, match="memory limit"), memory_limit(con, bad):
        pass


def _threads(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.sql("SELECT current_setting('threads')").fetchall()[0][0])


@pytest.mark.parametrize(
    ("limit", "threads", "want"),
    [("512MB", 16, 4), ("512MB", 2, 2), ("1GB", 16, 8), ("2GiB", 32, 17), ("64MB", 8, 1),
     ("125MB", 3, 1), ("250MB", 3, 2)],
)  # fmt: skip
def test_threads_within_a_limit_give_each_duckdbs_minimum(
    limit: str, threads: int, want: int
) -> None:
    """At most one thread per 125 MB (10⁶ bytes to the MB, 2³⁰ to the GiB: 2 GiB is
    2,147,483,648 bytes, 17 times 125,000,000), never more than asked, never fewer than 1."""
    from pipelines.warehouse._connection import threads_within

    assert threads_within(limit, threads) == want


def test_the_block_runs_on_the_threads_its_limit_allows_and_gives_them_back() -> None:
    """16 threads under 512MB become 4 in the block (DuckDB's 125 MB each) and 16 again after,
    also when the block raises; a nested block under a larger limit does not raise them."""
    con = duckdb.connect()
    con.execute("SET threads = 16")
    with memory_limit(con, "512MB"):
        assert _threads(con) == 4
        with memory_limit(con, "4GB"):
            assert _threads(con) == 4
        assert _threads(con) == 4
    assert _threads(con) == 16
    with pytest.raises(RuntimeError), memory_limit(con, "250MB"):
        assert _threads(con) == 2
        raise RuntimeError("inside")
    assert _threads(con) == 16


def test_ad_hoc_sql_under_a_small_limit_runs_on_fewer_threads(tmp_path: Path) -> None:
    """The read-only connection of ad hoc SQL under 200MB runs on 1 thread (DuckDB's 125 MB
    each); without a limit, on DuckDB's default."""
    from pipelines.warehouse._connection import default_threads
    from pipelines.warehouse.safe_sql import open_readonly

    path = tmp_path / "s.duckdb"
    duckdb.connect(str(path)).close()
    with open_readonly(path, memory_limit="200MB") as con:
        assert _threads(con) == 1
    with open_readonly(path) as con:
        assert _threads(con) == default_threads()


def test_a_limit_under_the_external_threads_keeps_them_and_everything_comes_back() -> None:
    """A connection with 4 external threads (DuckDB refuses fewer threads than those) and 8
    threads: under 256MB (2 threads by the rule) the block runs on 4, and after it the default
    limit and the 8 threads are back."""
    con = duckdb.connect(config={"external_threads": 4, "threads": 8})
    default = _limit(con)
    with memory_limit(con, "256MB"):
        assert _threads(con) == 4 and _limit(con) == "244.1 MiB"
    assert _threads(con) == 8 and _limit(con) == default


@pytest.mark.parametrize("spelt", ["64mb", "1G", "50%"])
def test_ad_hoc_sql_takes_a_limit_duckdb_reads_in_its_own_spelling(
    tmp_path: Path, spelt: str
) -> None:
    """Sizes DuckDB reads but the thread rule does not parse still open a connection, on
    DuckDB's threads."""
    from pipelines.warehouse._connection import default_threads
    from pipelines.warehouse.safe_sql import open_readonly

    path = tmp_path / "s.duckdb"
    duckdb.connect(str(path)).close()
    with open_readonly(path, memory_limit=spelt) as con:
        assert _threads(con) == default_threads()
        assert con.sql("SELECT 41 + 1").fetchall() == [(42,)]


def test_an_error_in_a_block_inside_a_transaction_comes_out_as_itself() -> None:
    """A statement that fails inside a nested block (1GB within the build's 512MB, in a
    transaction) aborts the transaction, and DuckDB then refuses the inner block's restore: the
    error raised is the statement's own conversion error, not "transaction is aborted"; after
    the rollback the outer block gives the connection its 8 threads and default limit back."""
    con = duckdb.connect()
    con.execute("SET threads = 8")
    default = _limit(con)
    with pytest.raises(duckdb.ConversionException), memory_limit(con, "512MB"):
        con.execute("BEGIN TRANSACTION")
        try:
            with memory_limit(con, "1GB"):
                con.execute("SELECT CAST('x' AS INTEGER)")
        finally:
            con.execute("ROLLBACK")
    assert _threads(con) == 8 and _limit(con) == default


_CACHED_MB = "SELECT sum(memory_usage_bytes) / 1e6 FROM duckdb_memory()"


def test_release_gives_back_duckdbs_cache_and_keeps_the_limit_in_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a transaction under the build's 512MB, a table of 6,000,000 rows written: DuckDB
    keeps its blocks cached (over 32 MB, the floor set for the test). The release evicts them to
    under its instant's 16 MB, the rows read back whole (count and sum of 0 … 5,999,999 =
    17,999,997,000,000) and commit. A second release finds DuckDB holding less than the floor
    and does nothing. With no floor, the limit in force is back exactly after 20 releases
    ('488.2 MiB', not read back rounded each time), and the default after the block."""
    monkeypatch.setattr(connection, "RELEASE_ABOVE", "32MB")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    default = _limit(con)
    with memory_limit(con, "512MB"):
        con.execute("BEGIN TRANSACTION")
        con.execute("CREATE TABLE t AS SELECT range AS a, 'row ' || range AS b FROM range(6000000)")
        assert con.sql(_CACHED_MB).fetchall()[0][0] > 32
        assert release_memory(con)
        assert con.sql(_CACHED_MB).fetchall()[0][0] < 16
        assert not release_memory(con)
        counted = con.sql("SELECT count(*), sum(a) FROM t").fetchall()
        assert counted == [(6_000_000, 17_999_997_000_000)]
        con.execute("COMMIT")
        monkeypatch.setattr(connection, "RELEASE_ABOVE", "0B")
        for _ in range(20):
            assert release_memory(con)
        assert _limit(con) == "488.2 MiB"
    assert _limit(con) == default
    assert con.sql("SELECT count(*) FROM t").fetchall() == [(6_000_000,)]


def test_release_inside_nested_blocks_and_after_use_keeps_each_blocks_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build's pattern: a 1GB block nested in the 512MB one. A release inside the inner
    block restores 1GB ('953.6 MiB'); after three inner blocks the outer one's 512MB is back
    exactly ('488.2 MiB', not read back rounded down each time: 488.2 → 488.1 → 488.0 MiB), and
    a release there keeps it. The same holds after the connection ``USE``s an attached database
    (the limit is the instance's, found through the file it was opened on). No floor on what
    DuckDB must hold for a release to act."""
    monkeypatch.setattr(connection, "RELEASE_ABOVE", "0B")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute(f"ATTACH '{tmp_path / 'other.duckdb'}' AS other")
    with memory_limit(con, "512MB"):
        for _ in range(3):
            with memory_limit(con, "1GB"):
                assert release_memory(con)
                assert _limit(con) == "953.6 MiB"
        assert _limit(con) == "488.2 MiB"
        assert release_memory(con)
        assert _limit(con) == "488.2 MiB"
        con.execute("USE other")
        with memory_limit(con, "256MB"):
            assert release_memory(con)
            assert _limit(con) == "244.1 MiB"
        assert release_memory(con)
        assert _limit(con) == "488.2 MiB"


def test_release_outside_a_block_does_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside any block the limit in force is known only as DuckDB reports it, rounded down
    (2GB as '1.8 GiB'): five releases change nothing (setting it back as read would have
    lowered it each time: 1.8, 1.7, 1.6 … GiB), whatever DuckDB holds."""
    monkeypatch.setattr(connection, "RELEASE_ABOVE", "0B")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("SET memory_limit = '2GB'")
    for _ in range(5):
        assert not release_memory(con)
    assert _limit(con) == "1.8 GiB"


def test_a_refused_release_changes_nothing_and_leaves_the_transaction_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another cursor's sorted read, partly fetched, pins more than 16 MB: DuckDB refuses the
    instant's limit, and the release says so (False). The refusal is the cursor's:
    the connection's own transaction, which any failed statement inside it would abort, goes on
    and commits, and the limit is the block's. No floor on what DuckDB must hold to act."""
    monkeypatch.setattr(connection, "RELEASE_ABOVE", "0B")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute(
        "CREATE TABLE big AS SELECT range AS a, repeat('x', 50) || range AS b FROM range(3000000)"
    )
    with memory_limit(con, "1GB"):
        reader = con.cursor()
        reader.execute("SELECT * FROM big ORDER BY b DESC").fetchmany(5)
        con.execute("BEGIN TRANSACTION")
        con.execute("CREATE TABLE t AS SELECT 1 AS a")
        assert not release_memory(con)
        con.execute("INSERT INTO t VALUES (2)")
        con.execute("COMMIT")
        reader.close()
        assert _limit(con) == "953.6 MiB"
    assert con.sql("SELECT sum(a) FROM t").fetchall() == [(3,)]


def test_an_in_memory_database_is_not_released() -> None:
    """An in-memory database would evict its tables to a spill folder in the working directory:
    the release leaves it alone (False) and its limit as it was."""
    con = duckdb.connect()
    before = _limit(con)
    assert not release_memory(con)
    assert _limit(con) == before
