"""Two writers (issue 14): while another process holds the warehouse's write lock, a second
``goodput ingest`` waits a bounded time (``GOODPUT_LOCK_WAIT_S``) and then exits 1 with one line
naming the holder's PID, not a traceback; ``goodput sql --db`` on the locked file is refused in
one line too. The holder is a real second process."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from tests.conftest import FIXTURES

runner = CliRunner()


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    db = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(db)).close()
    code = (
        "import duckdb, sys, time\n"
        f"con = duckdb.connect({str(db)!r})\n"
        "print('held', flush=True)\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    try:
        yield db, proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_second_writer_waits_then_names_the_holder(
    held: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, pid = held
    monkeypatch.setenv("GOODPUT_LOCK_WAIT_S", "1")
    f = FIXTURES / "k8s-events" / "kspan_deploymentUpdateEvents.json"
    started = time.monotonic()
    result = runner.invoke(app, ["ingest", "k8s-events", str(f), "--db", str(db)])
    waited = time.monotonic() - started
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"goodput: error: {db} is locked by ")
    assert f"(PID {pid})" in lines[0] and "waited 1 s" in lines[0]
    assert waited >= 1.0


def test_sql_on_a_locked_warehouse_is_one_line(held: tuple[Path, int]) -> None:
    db, pid = held
    result = runner.invoke(app, ["sql", "SELECT 1", "--db", str(db)])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "is open for writing by" in result.stderr and f"(PID {pid})" in result.stderr
