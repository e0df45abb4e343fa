"""A publish killed mid-copy leaves ``serving.duckdb.<pid>.<random>.tmp`` and its ``.wal``; the
next publish removes them when their process is gone, and keeps a live publisher's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import duckdb

from pipelines.warehouse import publish_serving_copy, remove_stale_copies


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_killed_publish_leftovers_are_removed(tmp_path: Path) -> None:
    wh = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(wh))
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.close()
    serving = tmp_path / "serving.duckdb"
    dead = _dead_pid()
    stale = tmp_path / f"serving.duckdb.{dead}.abc123.tmp"
    stale_wal = tmp_path / f"serving.duckdb.{dead}.abc123.tmp.wal"
    live = tmp_path / f"serving.duckdb.{os.getpid()}.zzz999.tmp"
    for f in (stale, stale_wal, live):
        f.write_bytes(b"x" * 64)
    assert set(remove_stale_copies(serving)) == {stale, stale_wal}
    assert live.exists()
    live.unlink()
    stale.write_bytes(b"x")
    publish_serving_copy(wh, serving)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["serving.duckdb", "warehouse.duckdb"]
    with duckdb.connect(str(serving), read_only=True) as ro:
        assert ro.execute("SELECT x FROM t").fetchall() == [(1,)]
