"""A raw table made before its parser's schema gained a column gets the column (NULL)."""

from __future__ import annotations

from pathlib import Path

from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse


def test_a_dcgm_table_without_the_xid_column_gets_it_and_loads(tmp_path: Path) -> None:
    """raw.dcgm_samples as made before ``xid`` (the count collector's code), one row in it:
    init_warehouse adds the column, the old row reads NULL, and a load with an ``xid`` label
    keeps its code (79)."""
    db = tmp_path / "w.duckdb"
    with connect(db) as con:
        init_warehouse(con)
        con.execute("ALTER TABLE raw.dcgm_samples DROP COLUMN xid")
        con.execute(
            "INSERT INTO raw.dcgm_samples (ts, cluster, host, metric, value)"
            " VALUES ('2026-11-02 10:00:00+00', 'c', 'old', 'DCGM_FI_DEV_GPU_UTIL', 1)"
        )
        init_warehouse(con)
        scrape = tmp_path / "dcgm-20261102T100500Z.prom"
        scrape.write_text(
            'DCGM_EXP_XID_ERRORS_COUNT{gpu="0",UUID="GPU-1",Hostname="n1",'
            'window_size_in_ms="300000",xid="79"} 1\n'
        )
        ingest_file(con, "dcgm", scrape, IngestOptions(cluster="c", tz="UTC"))
        rows = con.execute("SELECT host, xid FROM raw.dcgm_samples ORDER BY host").fetchall()
    assert rows == [("n1", 79), ("old", None)]


def test_a_rebuild_of_a_warehouse_without_the_xid_column_adds_it(
    fleet_dir: Path, tmp_path: Path
) -> None:
    """A warehouse loaded by earlier code (raw.dcgm_samples without ``xid``) rebuilt at once,
    with no ingest between (``goodput materialize --full``, a benchmark's copy): the build adds
    the column and binds its XID SQL (before: a Binder Error, "xid" not found), and its one
    sample row reads NULL there."""
    from pipelines.analytics.build import rebuild
    from pipelines.config import load_config
    from tests.conftest import write_config
    from tests.pipelines.test_incremental import _days, _load_day

    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_day(con, cfg, _days(cfg)[0])
        con.execute("ALTER TABLE raw.dcgm_samples DROP COLUMN xid")
        n = con.execute("SELECT count(*) FROM raw.dcgm_samples").fetchall()[0][0]
        rebuild(con, cfg, full=True)
        nulls = con.execute("SELECT count(*) FROM raw.dcgm_samples WHERE xid IS NULL").fetchall()[
            0
        ][0]
    assert n > 0
    assert nulls == n
