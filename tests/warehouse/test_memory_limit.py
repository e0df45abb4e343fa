"""DuckDB's memory limit set for a block and restored after."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.warehouse import memory_limit


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
