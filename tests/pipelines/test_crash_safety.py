"""Kills at random moments (issue 14): ``goodput ingest`` is SIGKILLed a few times at random
points of its parse, load and rebuild; after each kill the warehouse opens, no partial load is
visible (an ingest row exists only with all its rows), and finally a re-run equals a clean run
row for row. ``GOODPUT_CRASH_KILLS`` sets the number of kills (3 here; 20 for the long run).
Real processes, a real DuckDB file; nothing is mocked."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl

from tests.conftest import FIXTURES, XDMOD_FIELDS

KILLS = int(os.environ.get("GOODPUT_CRASH_KILLS", "3"))
LOG = FIXTURES / "xdmod" / "shredder_slurm_input" / "accounting-logs.log"
LAB = FIXTURES / "slurm-22.05-lab" / "sacct_all.psv"


def _ingest(db: Path, *, kill_after: float | None = None) -> int | None:
    """Run ``goodput ingest sacct`` on two real files; SIGKILL it after ``kill_after`` s."""
    cmd = [sys.executable, "-m", "pipelines.cli", "ingest", "sacct", str(LAB), str(LOG),
           "--db", str(db), "--tz", "UTC", "--fields", XDMOD_FIELDS]  # fmt: skip
    env = {**os.environ, "GOODPUT_LOCK_WAIT_S": "5"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    if kill_after is None:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-2000:]
        return proc.returncode
    time.sleep(kill_after)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    return None


def _consistent(db: Path) -> None:
    """The warehouse opens; every recorded load has exactly its rows, none are orphans."""
    if not db.exists():
        return  # killed before the file was created: the old state
    with duckdb.connect(str(db), read_only=True) as con:
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "ingests" not in tables:
            return  # killed before the first commit: the old (empty) state
        loads = con.execute(
            "SELECT ingest_id, rows_loaded FROM raw.ingests WHERE source = 'sacct'"
        ).fetchall()
        counted = dict(
            con.execute("SELECT ingest_id, count(*) FROM raw.slurm_rows GROUP BY ALL").fetchall()
        )
        assert {i: n for i, n in loads if n} == counted, "a partial or orphan load is visible"
        files = con.execute("SELECT file, count(*) FROM raw.ingests GROUP BY ALL").fetchall()
        assert all(n == 1 for _, n in files), files


def _jobs(db: Path) -> pl.DataFrame:
    with duckdb.connect(str(db), read_only=True) as con:
        out = con.sql("SELECT * FROM core.jobs").pl()  # the cut-off lives in core.build_cutoffs
    return out.sort(out.columns)


def test_kills_leave_old_or_new_state_and_a_rerun_equals_a_clean_run(tmp_path: Path) -> None:
    clean = tmp_path / "clean.duckdb"
    started = time.monotonic()
    _ingest(clean)
    full_s = time.monotonic() - started
    rng = random.Random(20261202)
    db = tmp_path / "killed.duckdb"
    for _ in range(KILLS):
        _ingest(db, kill_after=rng.uniform(0.5, max(1.0, full_s)))
        _consistent(db)
        assert not list(tmp_path.glob("killed.duckdb.*.tmp"))
    _ingest(db)
    _consistent(db)
    assert _jobs(db).equals(_jobs(clean))
