"""Ad hoc SQL is bounded (issue 14): a statement time limit enforced by a watchdog that calls
``interrupt()`` (DuckDB has none of its own), a memory limit with no spilling, and a runtime
error as one line; the CLI exits 1 naming the limit."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.warehouse.safe_sql import SqlRefused, run_query

INFINITE = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "serving.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE VIEW jobs AS SELECT 1 AS job_id")
    con.close()
    return path


def test_time_limit_stops_an_infinite_recursive_cte(db: Path) -> None:
    """The recursive CTE never ends on its own; with a 1 s limit it stops within a few seconds
    and the message names the limit."""
    started = time.monotonic()
    with pytest.raises(SqlRefused, match=r"^query stopped: time limit of 1 s$"):
        run_query(db, INFINITE, time_limit_s=1.0)
    assert time.monotonic() - started < 20


def test_memory_limit_stops_a_huge_list(db: Path) -> None:
    """A 100-million-element ``list()`` needs far more than 64 MB: stopped, naming the limit."""
    with pytest.raises(SqlRefused, match=r"^query stopped: memory limit of 64MB$"):
        run_query(db, "SELECT list(range) FROM range(100000000)", memory_limit="64MB")


def test_memory_limit_stops_a_scalar_list_duckdb_does_not_count(db: Path) -> None:
    """A scalar ``range()`` of 300 million numbers is a 2.4 GB list that DuckDB's memory limit
    does not bound (it ran to a 4.8 GB peak at 600 million under 2GB): the query's process is
    stopped once its resident memory passes twice the limit and the process allowance (2 ×
    256 MB + 768 MB here), and the message names the limit."""
    with pytest.raises(SqlRefused, match=r"^query stopped: memory limit of 256MB$"):
        run_query(db, "SELECT len(range(300000000 + i)) AS n FROM range(1) t(i)",
                  memory_limit="256MB")  # fmt: skip


def test_a_query_past_the_progress_bar_delay_prints_only_its_rows(db: Path) -> None:
    """DuckDB draws a progress bar on standard output for a query running over 2 s: ``goodput
    sql --format csv`` of such a query prints its CSV and nothing else (a real process: the bar
    writes to the file descriptor, which an in-process runner would not see)."""
    query = "SELECT count(*) AS n FROM range(200000000) t(i) WHERE hash(i) % 7 = 0"
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "sql", query, "--db", str(db), "--format", "csv"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with duckdb.connect() as con:
        (n,) = con.execute(query).fetchone() or (None,)
    assert proc.stdout == f"n\n{n}\n"


def test_runtime_error_and_a_good_query(db: Path) -> None:
    """``'abc'::INTEGER`` fails at run time: one line, no traceback; a good query still runs
    under the default limits."""
    with pytest.raises(SqlRefused, match=r"^query failed: Conversion Error"):
        run_query(db, "SELECT 'abc'::INTEGER")
    assert run_query(db, "SELECT job_id FROM jobs")["job_id"].to_list() == [1]


def test_cli_names_the_limit_and_exits_1(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[sql] time_limit_s = 1`` in goodput.toml: ``goodput sql`` stops the query, prints one
    line naming the limit and exits 1."""
    toml = tmp_path / "goodput.toml"
    toml.write_text('[sql]\ntime_limit_s = 1\nmemory_limit = "1GB"\n')
    monkeypatch.setenv("GOODPUT_CONFIG", str(toml))
    result = CliRunner().invoke(app, ["sql", INFINITE, "--db", str(db)])
    assert result.exit_code == 1
    assert result.stderr.strip() == "goodput: error: query stopped: time limit of 1 s"
