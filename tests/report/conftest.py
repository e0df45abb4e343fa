"""Fixtures of the report tests: the materialized small fleet's serving copy, read directly."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from tests.conftest import Materialized


@pytest.fixture(scope="session")
def serving(materialized: Materialized) -> Path:
    """The serving copy of the materialized 2-day fleet (starting Monday 2026-11-02, 2026-W45)."""
    return materialized.cfg.serving_path


class Direct:
    """The tests' own queries on the serving copy, one short read-only connection each.

    DuckDB refuses a second in-process connection to a file with another configuration while
    one is open, and the code under test opens its own locked-down one: never hold one here.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _con(self) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect(str(self.path), read_only=True)
        con.execute("SET TimeZone = 'UTC'")
        return con

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a query."""
        with self._con() as con:
            return con.execute(sql, list(params)).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...]:
        """The first row of a query (which must return one)."""
        rows = self.rows(sql, params)
        assert rows, sql
        return rows[0]

    def frame(self, sql: str, params: Sequence[Any] = ()) -> pl.DataFrame:
        """A query's result as a polars frame."""
        with self._con() as con:
            out: pl.DataFrame = con.sql(sql, params=list(params)).pl()
            return out


@pytest.fixture
def direct(serving: Path) -> Direct:
    """Direct queries on the serving copy."""
    return Direct(serving)
