"""The aggregate build reads the lake: raw tables loaded from the Delta tables, then the build.

Over the session's two-day, two-cluster sample fleet (four cluster-day partitions): each
partition is committed to a Delta lake on a local folder by the partition runs' own function
(:func:`pipelines.lake_assets.commit_raw_partition`, what each step of ``lake_raw_job`` calls),
loaded into an empty warehouse (:func:`pipelines.warehouse.lake_load.load_raw_from_lake`) and
built (:func:`pipelines.analytics.build.rebuild`); the same files ingested straight into a
second warehouse (``ingest_configured``, the path of ``goodput ingest`` and the raw assets, one
day after another) and built the same way give the same raw, core and analytics tables, row
for row. Then: a second load changes nothing; a re-committed partition is the only one
reloaded; the core tables exported to Delta read back as the warehouse holds them.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pytest
from deltalake import DeltaTable
from polars.testing import assert_frame_equal

from pipelines._file_source import files_for_day
from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import ingest_configured
from pipelines.kinds import input_kinds
from pipelines.lake_assets import commit_raw_partition
from pipelines.warehouse import connect, init_warehouse, read_table
from pipelines.warehouse.delta import delta_table_url
from pipelines.warehouse.lake import DEFAULT_DELTA_TABLES, export_delta, read_lake
from pipelines.warehouse.lake_load import LakeLoad, load_raw_from_lake
from tests.conftest import write_config

DAYS = ("2026-11-02", "2026-11-03")
CLUSTERS = ("slurm-a", "k8s-b")
#: Bookkeeping of the build itself (when it ran, how long, which ingest mark): not data.
_BOOKKEEPING = {"analytics.build_log", "analytics.build_state"}


def _tables(con: duckdb.DuckDBPyConnection, schemas: tuple[str, ...]) -> list[str]:
    rows = con.execute(
        "SELECT table_schema || '.' || table_name FROM information_schema.tables"
        " WHERE table_type = 'BASE TABLE' AND table_schema IN (SELECT unnest($s))"
        " ORDER BY 1",
        {"s": list(schemas)},
    ).fetchall()
    return [r[0] for r in rows if r[0] not in _BOOKKEEPING]


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows in one order: by every column that sorts (lists and structs do not)."""
    keys = [c for c, t in frame.schema.items() if not isinstance(t, pl.List | pl.Struct)]
    return frame.sort(keys, nulls_last=True) if keys else frame


def _snapshot(
    db: Path, schemas: tuple[str, ...], drop: tuple[str, ...] = ()
) -> dict[str, pl.DataFrame]:
    """Every base table of ``schemas`` in ``db``, rows sorted, ``drop`` columns left out."""
    with connect(db, read_only=True) as con:
        return {
            t: _sorted(read_table(con, t).drop(drop, strict=False)) for t in _tables(con, schemas)
        }


def _assert_same(got: dict[str, pl.DataFrame], want: dict[str, pl.DataFrame]) -> None:
    assert sorted(got) == sorted(want)
    differ = []
    for table in want:
        try:
            assert_frame_equal(got[table], want[table], check_column_order=False)
        except AssertionError as exc:
            differ.append(f"{table}: {exc}")
    assert not differ, "\n".join(differ)


@dataclass(frozen=True)
class Built:
    """Two warehouses over the same files: one built from the lake, one from straight ingests."""

    cfg: Config
    lake: Path
    from_lake: Path
    straight: Path
    load: LakeLoad


@pytest.fixture(scope="module")
def built(fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """Commit the four partitions to a folder lake, load + build; ingest + build straight."""
    work = tmp_path_factory.mktemp("lake_build")
    cfg = load_config(write_config(work, days_dir=fleet_dir))
    lake = work / "lake"
    for day in DAYS:
        for cluster in CLUSTERS:
            commit_raw_partition(cfg, cluster, day, str(lake))
    from_lake = work / "from_lake.duckdb"
    with connect(from_lake) as con:
        init_warehouse(con)
        load = load_raw_from_lake(con, str(lake))
        rebuild(con, cfg)
    straight = work / "straight.duckdb"
    with connect(straight) as con:
        init_warehouse(con)
        # one day after another, a day's clusters in name order: the load's order of blocks
        for day in DAYS:
            for cluster in sorted(CLUSTERS):
                ccfg = cfg.cluster(cluster)
                for kind in input_kinds():
                    if kind.scheduler and ccfg.scheduler != kind.scheduler:
                        continue
                    for path in files_for_day(cfg.cluster_input_dir(cluster), kind.name, day):
                        ingest_configured(con, cfg, kind.name, path, cluster=cluster)
        rebuild(con, cfg)
    yield Built(cfg, lake, from_lake, straight, load)


def test_build_from_the_lake_equals_the_build_from_the_files(built: Built) -> None:
    """Every raw, core and analytics table is equal, row for row; only the loads' times differ
    (``raw.ingests.loaded_at``: when each file was parsed)."""
    got = _snapshot(built.from_lake, ("raw", "core", "analytics"))
    want = _snapshot(built.straight, ("raw", "core", "analytics"))
    for side in (got, want):
        side["raw.ingests"] = side["raw.ingests"].drop("loaded_at")
        side.pop("raw.lake_partitions", None)
        side.pop("raw.lake_versions", None)
    _assert_same(got, want)
    # the comparison is not vacuous: both sides hold jobs, hourly occupancy and samples
    assert want["core.jobs"].height > 0 and want["raw.dcgm_samples"].height > 0
    assert want["analytics.occupancy_hourly"].height > 0
    assert any(t.startswith("analytics.") for t in want) and any(
        t.startswith("core.") for t in want
    )


def test_load_recorded_every_partition(built: Built) -> None:
    """Four cluster-days loaded, days in order and a day's clusters by name, in consecutive
    blocks of warehouse ingest ids from 1 up to the last load's id."""
    load = built.load
    assert isinstance(load, LakeLoad)
    assert load.loaded == [(c, dt.date.fromisoformat(d)) for d in DAYS for c in sorted(CLUSTERS)]
    assert load.removed == [] and load.unchanged == 0 and load.foreign_ingests == 0
    with connect(built.from_lake, read_only=True) as con:
        blocks = con.execute(
            "SELECT ingest_lo, ingest_hi FROM raw.lake_partitions ORDER BY partition_date, cluster"
        ).fetchall()
        top = con.execute("SELECT max(ingest_id) FROM raw.ingests").fetchall()[0][0]
        versions = dict(con.execute("SELECT table_name, version FROM raw.lake_versions").fetchall())
    assert len(blocks) == 4 and blocks[0][0] == 1 and blocks[-1][1] == top
    assert all(blocks[i + 1][0] == blocks[i][1] + 1 for i in range(3))
    # four commits per table (one per partition): versions 0..3
    assert versions["raw.dcgm_samples"] == 3 and versions["raw.ingests"] == 3
    assert versions == load.versions


def _copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    return dst


def test_a_second_load_changes_nothing(built: Built, tmp_path: Path) -> None:
    """Loading the same lake again reloads no cluster-day, and every raw table (ingest ids
    included) is as it was, row for row."""
    db = _copy(built.from_lake, tmp_path / "w.duckdb")
    before = _snapshot(db, ("raw",))
    with connect(db) as con:
        again = load_raw_from_lake(con, str(built.lake))
    assert again.loaded == [] and again.removed == [] and again.unchanged == 4
    assert again.rows == {}
    _assert_same(_snapshot(db, ("raw",)), before)


def test_a_recommitted_partition_is_the_only_one_reloaded(built: Built, tmp_path: Path) -> None:
    """Re-committing one cluster-day (its files parsed again) reloads it alone, with ingest ids
    above every earlier load (as a re-ingested file gets); the other days keep their rows and
    ids; and the raw tables equal a fresh load of the same lake but for the ids."""
    lake = tmp_path / "lake"
    shutil.copytree(built.lake, lake)
    db = _copy(built.from_lake, tmp_path / "w.duckdb")
    before = _snapshot(db, ("raw",))
    top = int(before["raw.ingests"]["ingest_id"].max())  # type: ignore[arg-type]
    commit_raw_partition(built.cfg, "slurm-a", DAYS[0], str(lake))
    with connect(db) as con:
        load = load_raw_from_lake(con, str(lake))
    assert load.loaded == [("slurm-a", dt.date.fromisoformat(DAYS[0]))] and load.unchanged == 3
    after = _snapshot(db, ("raw",))
    redone = after["raw.ingests"].filter(pl.col("ingest_id") > top)
    assert (
        redone.height
        == before["raw.ingests"]
        .filter((pl.col("cluster") == "slurm-a") & pl.col("file").str.contains(DAYS[0]))
        .height
    )
    assert set(redone["cluster"]) == {"slurm-a"}
    # the other days' rows, ids included, are untouched
    other = (pl.col("cluster") != "slurm-a") | ~pl.col("file").str.contains(DAYS[0])
    assert_frame_equal(
        _sorted(after["raw.dcgm_samples"].filter(pl.col("ingest_id") <= top)),
        _sorted(
            before["raw.dcgm_samples"].filter(
                pl.col("ingest_id").is_in(
                    before["raw.ingests"].filter(other)["ingest_id"].implode()
                )
            )
        ),
    )
    fresh = tmp_path / "fresh.duckdb"
    with connect(fresh) as con:
        init_warehouse(con)
        load_raw_from_lake(con, str(lake))
    no_ids = ("ingest_id", "loaded_at", "ingest_lo", "ingest_hi")
    _assert_same(_snapshot(db, ("raw",), drop=no_ids), _snapshot(fresh, ("raw",), drop=no_ids))


def test_core_tables_exported_to_delta_read_back_equal(built: Built, tmp_path: Path) -> None:
    """Every core table of the export reads back from its Delta table as the warehouse holds
    it (``date`` aside), one commit per table; exporting again replaces, not appends."""
    root = str(tmp_path / "lake")
    versions = export_delta(built.from_lake, root)
    want = _snapshot(built.from_lake, ("core",))
    exported = [t for t in DEFAULT_DELTA_TABLES if t in want and want[t].height]
    assert sorted(versions) == sorted(exported) and set(versions.values()) == {0}
    assert {"core.jobs", "core.slurm_jobs", "core.k8s_pods", "core.nodes"} <= set(exported)
    for table in exported:
        got = read_lake(root, table).collect()
        assert got.schema["date"] == pl.Date and got.schema["cluster"] == pl.String
        assert_frame_equal(_sorted(got.drop("date")), want[table], check_column_order=False)
    again = export_delta(built.from_lake, root)
    assert set(again.values()) == {1}
    for table in exported:
        assert read_lake(root, table).collect().height == want[table].height
    # core.jobs' date: the UTC day of start_at, else submit_at
    jobs = read_lake(root, "core.jobs").collect()
    day = pl.coalesce(pl.col("start_at").dt.date(), pl.col("submit_at").dt.date())
    assert jobs.filter(day != pl.col("date")).is_empty()


def test_delta_export_of_one_partition_replaces_only_it(built: Built, tmp_path: Path) -> None:
    """``partition=`` rewrites one cluster-day of a table: the rows of the other days stay."""
    root = str(tmp_path / "lake")
    export_delta(built.from_lake, root, tables=["core.k8s_events"])
    whole = read_lake(root, "core.k8s_events").collect()
    cluster, day = whole.select("cluster", "date").drop_nulls().row(0)
    export_delta(
        built.from_lake, root, tables=["core.k8s_events"], partition=(cluster, day.isoformat())
    )
    again = read_lake(root, "core.k8s_events").collect()
    assert_frame_equal(_sorted(again), _sorted(whole))
    history = DeltaTable(delta_table_url(root, "core.k8s_events")).history()
    assert len(history) == 2
    with pytest.raises(ValueError, match="raw tables are committed by the partition runs"):
        export_delta(built.from_lake, root, tables=["raw.k8s_events"])
