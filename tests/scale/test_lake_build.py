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

import dagster as dg
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
from pipelines.warehouse import connect, init_warehouse, lake_load, read_table
from pipelines.warehouse.delta import commit_partition, delta_table_url
from pipelines.warehouse.lake import DEFAULT_DELTA_TABLES, export_delta, read_lake
from pipelines.warehouse.lake_load import LakeLoad, load_raw_from_lake
from tests.conftest import write_config
from tests.scale.test_delta_lake import BUCKET as S3_BUCKET
from tests.scale.test_delta_lake import S3, s3  # noqa: F401 - the moto S3 fixture

DAYS = ("2026-11-02", "2026-11-03")
CLUSTERS = ("slurm-a", "k8s-b")
#: Bookkeeping of the build itself (when it ran, how long, which ingest mark, which build
#: resolved the stored Slurm rows): not data.
_BOOKKEEPING = {"analytics.build_log", "analytics.build_state", "analytics.build_resolution"}


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


@pytest.mark.slow
def test_build_from_the_lake_equals_the_build_from_the_files(built: Built) -> None:
    """Every raw, core and analytics table is equal, row for row; only the loads' times differ
    (``raw.ingests.loaded_at``: when each file was parsed, and the build's copy of them in
    ``analytics.build_slurm_ingests`` and ``analytics.build_ingests``)."""
    got = _snapshot(built.from_lake, ("raw", "core", "analytics"))
    want = _snapshot(built.straight, ("raw", "core", "analytics"))
    for side in (got, want):
        for table in ("raw.ingests", "analytics.build_slurm_ingests", "analytics.build_ingests"):
            side[table] = side[table].drop("loaded_at")
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


@pytest.mark.slow
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


# A lake made by hand: raw.ingests and raw.slurm_tres of three cluster-days.

_T0 = dt.datetime(2024, 1, 5, tzinfo=dt.UTC)


def _ingests(ids: list[int], cluster: str, day: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "ingest_id": ids,
            "source": ["slurm-tres"] * len(ids),
            "cluster": [cluster] * len(ids),
            "file": [f"/in/{cluster}/tres_{day}_{i}.txt" for i in ids],
            "sha256": [None] * len(ids),
            "loaded_at": [_T0] * len(ids),
            "rows_loaded": [1] * len(ids),
            "rows_rejected": [0] * len(ids),
            "info": ["{}"] * len(ids),
        },
        schema={
            "ingest_id": pl.Int64(), "source": pl.String(), "cluster": pl.String(),
            "file": pl.String(), "sha256": pl.String(), "loaded_at": pl.Datetime("us", "UTC"),
            "rows_loaded": pl.Int64(), "rows_rejected": pl.Int64(), "info": pl.String(),
        },
    )  # fmt: skip


def _tres(rows: list[tuple[int, str, int]], cluster: str) -> pl.DataFrame:
    """(tres_id, tres_name, ingest_id) rows of raw.slurm_tres."""
    return pl.DataFrame(
        [(cluster, tid, "gres", name, f"gres/{name}", "f", 1, i) for tid, name, i in rows],
        schema={
            "cluster": pl.String(), "tres_id": pl.Int64(), "tres_type": pl.String(),
            "tres_name": pl.String(), "tres": pl.String(), "file": pl.String(),
            "line_no": pl.Int64(), "ingest_id": pl.Int64(),
        },
        orient="row",
    )  # fmt: skip


def _commit(root: str, cluster: str, day: str, tres: list[tuple[int, str, int]]) -> None:
    ids = sorted({i for _t, _n, i in tres})
    commit_partition(root, "raw.ingests", _ingests(ids, cluster, day), cluster=cluster, day=day)
    commit_partition(root, "raw.slurm_tres", _tres(tres, cluster), cluster=cluster, day=day)


def _ids(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    return con.execute(sql).fetchall()


@pytest.fixture
def small_lake(tmp_path: Path) -> tuple[str, Path]:
    """(lake root, warehouse): c1/2024-01-01 of two files, c1/2024-01-02 and c2/2024-01-01 of
    one; the warehouse holds a straight load of a slurm-tres file (ingest 1) and the
    recommendation history's rejects (ingest 2, not an input file)."""
    root = str(tmp_path / "lake")
    _commit(root, "c1", "2024-01-01", [(1, "a100", 1), (2, "h100", 2)])
    _commit(root, "c1", "2024-01-02", [(1, "a100", 1)])
    _commit(root, "c2", "2024-01-01", [(7, "b200", 1)])
    db = tmp_path / "w.duckdb"
    with connect(db) as con:
        init_warehouse(con)
        straight = _ingests([1], "c1", "2023-12-31")
        history = _ingests([2], "c1", "x").with_columns(source=pl.lit("recommendation-history"))
        _rows = pl.concat([straight, history])
        con.execute("INSERT INTO raw.ingests BY NAME SELECT * FROM _rows")
        _tres_rows = _tres([(9, "old", 1)], "c1")
        con.execute("INSERT INTO raw.slurm_tres BY NAME SELECT * FROM _tres_rows")
        con.execute(
            "INSERT INTO raw.rejected_rows (source, file, reason, ingest_id)"
            " VALUES ('recommendation-history', 'x', 'bad', 2)"
        )
    return root, db


def test_load_numbers_ingests_in_blocks_and_replaces_straight_loads(
    small_lake: tuple[str, Path],
) -> None:
    """Hand count: ids 1 and 2 are taken, so blocks start at 3, in (day, cluster) order:
    c1/01-01 (two files) → 3..4, c2/01-01 → 5..5, c1/01-02 → 6..6. The straight load (ingest 1,
    tres 9) is replaced; the recommendation history's load and reject (ingest 2) stay."""
    root, db = small_lake
    with connect(db) as con:
        load = load_raw_from_lake(con, root)
        blocks = _ids(
            con,
            "SELECT cluster, partition_date::VARCHAR, ingest_lo, ingest_hi"
            " FROM raw.lake_partitions ORDER BY ingest_lo",
        )
        tres = _ids(con, "SELECT cluster, tres_id, ingest_id FROM raw.slurm_tres ORDER BY 3, 2")
        ingests = _ids(con, "SELECT ingest_id, source FROM raw.ingests ORDER BY 1")
        rejected = _ids(con, "SELECT ingest_id FROM raw.rejected_rows")
    assert blocks == [
        ("c1", "2024-01-01", 3, 4),
        ("c2", "2024-01-01", 5, 5),
        ("c1", "2024-01-02", 6, 6),
    ]
    assert tres == [("c1", 1, 3), ("c1", 2, 4), ("c2", 7, 5), ("c1", 1, 6)]
    assert ingests == [(2, "recommendation-history")] + [(i, "slurm-tres") for i in (3, 4, 5, 6)]
    assert rejected == [(2,)]
    assert load.foreign_ingests == 1
    assert load.rows == {"raw.slurm_tres": 4, "raw.ingests": 4}


def test_a_partition_gone_from_the_lake_is_deleted(small_lake: tuple[str, Path]) -> None:
    """Emptying c2/2024-01-01 in the lake (empty commits) deletes its rows (ingest 5) at the
    next load; c1's days keep ids 3, 4 and 6."""
    root, db = small_lake
    with connect(db) as con:
        load_raw_from_lake(con, root)
    _commit(root, "c2", "2024-01-01", [])
    with connect(db) as con:
        load = load_raw_from_lake(con, root)
        tres = _ids(con, "SELECT cluster, tres_id, ingest_id FROM raw.slurm_tres ORDER BY 3")
        parts = _ids(con, "SELECT cluster FROM raw.lake_partitions ORDER BY ingest_lo")
    assert load.removed == [("c2", dt.date(2024, 1, 1))] and load.loaded == []
    assert load.unchanged == 2
    assert tres == [("c1", 1, 3), ("c1", 2, 4), ("c1", 1, 6)]
    assert parts == [("c1",), ("c1",)]


def test_a_failed_load_leaves_the_warehouse_as_it_was(
    small_lake: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load that fails after its deletes (the second table's read raises) rolls back: the
    rows, ids and recorded partitions are those of the previous load; the next load does it."""
    root, db = small_lake
    with connect(db) as con:
        load_raw_from_lake(con, root)
    before = _snapshot(db, ("raw",))
    _commit(root, "c1", "2024-01-02", [(1, "a100", 1), (3, "gb200", 1)])
    real = lake_load._scan
    calls: list[str] = []

    def failing(root_url: str, table: str, version: int, opts: object) -> pl.LazyFrame:
        calls.append(table)
        if table == "raw.slurm_tres" and calls.count(table) > 1:
            raise OSError("connection reset")
        return real(root_url, table, version, opts)  # type: ignore[arg-type]

    monkeypatch.setattr(lake_load, "_scan", failing)
    with connect(db) as con, pytest.raises(OSError, match="connection reset"):
        load_raw_from_lake(con, root)
    _assert_same(_snapshot(db, ("raw",)), before)
    monkeypatch.setattr(lake_load, "_scan", real)
    with connect(db) as con:
        load = load_raw_from_lake(con, root)
        tres = _ids(con, "SELECT tres_id, ingest_id FROM raw.slurm_tres WHERE ingest_id >= 7")
    assert load.loaded == [("c1", dt.date(2024, 1, 2))]
    assert sorted(tres) == [(1, 7), (3, 7)]  # the day's one file, in the next block: 7


def test_no_raw_table_in_the_lake_leaves_the_warehouse_alone(
    small_lake: tuple[str, Path], tmp_path: Path
) -> None:
    """A lake URL with nothing committed under it yet skips the load (a new deployment)."""
    _root, db = small_lake
    before = _snapshot(db, ("raw",))
    with connect(db) as con:
        load = load_raw_from_lake(con, str(tmp_path / "empty"))
    assert load.skipped is not None and "no raw Delta table" in load.skipped
    _assert_same(_snapshot(db, ("raw",)), before)


@pytest.mark.slow
def test_the_build_asset_loads_the_lake_and_the_export_asset_commits_core_tables(
    built: Built, fleet_dir: Path, tmp_path: Path
) -> None:
    """``core_and_analytics`` with a lake URL loads the lake into an empty warehouse before the
    build: its core.jobs equal the lake build's above; ``lake_export`` then commits the core
    tables to Delta, which read back as that warehouse holds them."""
    from dagster_duckdb import DuckDBResource

    from pipelines._raw_assets import SettingsResource
    from pipelines.analytics.assets import core_and_analytics
    from pipelines.lake_assets import LakeResource, lake_export

    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    lake = tmp_path / "lake"
    shutil.copytree(built.lake, lake)
    resources = {
        "duckdb": DuckDBResource(database=str(cfg.warehouse_path)),
        "settings": SettingsResource(config_path=str(cfg.path)),
        "lake": LakeResource(root_url=str(lake)),
    }
    with dg.instance_for_test() as instance:
        result = dg.materialize([core_and_analytics], resources=resources, instance=instance)
        assert result.success
        exported = dg.materialize([lake_export], resources=resources, instance=instance)
        assert exported.success
    got = _snapshot(cfg.warehouse_path, ("core",))
    want = _snapshot(built.from_lake, ("core",))
    assert_frame_equal(got["core.jobs"], want["core.jobs"])
    meta = exported.asset_materializations_for_node("analytics__lake_export")[0].metadata
    assert meta["tables"].value == len(meta["versions"].value) >= 4  # type: ignore[attr-defined]
    jobs = read_lake(str(lake), "core.jobs").collect().drop("date")
    assert_frame_equal(_sorted(jobs), want["core.jobs"], check_column_order=False)


def test_the_export_asset_skips_without_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``GOODPUT_LAKE_URL`` unset the export succeeds, writes nothing and says why."""
    from pipelines._raw_assets import SettingsResource
    from pipelines.lake_assets import LAKE_URL_ENV, LakeResource, lake_export

    monkeypatch.delenv(LAKE_URL_ENV, raising=False)
    result = lake_export(settings=SettingsResource(), lake=LakeResource())
    assert result.metadata is not None
    assert result.metadata["tables"] == 0 and LAKE_URL_ENV in str(result.metadata["skipped"])


def test_load_from_moto_s3(s3: S3, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    """The hand-made lake on ``s3://`` (moto, tests/scale/test_delta_lake.py's server): the same
    blocks as on a folder, c1/01-01 → 1..2, c2/01-01 → 3, c1/01-02 → 4, into an empty
    warehouse; a second load changes nothing."""
    opts = {"aws_endpoint_url": s3.endpoint, "aws_region": "us-east-1", "aws_allow_http": "true"}
    root = f"s3://{S3_BUCKET}/lake"
    rows = {
        ("c1", "2024-01-01"): [(1, "a100", 1), (2, "h100", 2)],
        ("c1", "2024-01-02"): [(1, "a100", 1)],
        ("c2", "2024-01-01"): [(7, "b200", 1)],
    }
    for (cluster, day), tres in rows.items():
        ids = sorted({i for _t, _n, i in tres})
        for table, frame in (
            ("raw.ingests", _ingests(ids, cluster, day)),
            ("raw.slurm_tres", _tres(tres, cluster)),
        ):
            commit_partition(root, table, frame, cluster=cluster, day=day, storage_options=opts)
    db = tmp_path / "w.duckdb"
    with connect(db) as con:
        init_warehouse(con)
        first = load_raw_from_lake(con, root, storage_options=opts)
        again = load_raw_from_lake(con, root, storage_options=opts)
        tres_ids = _ids(con, "SELECT cluster, tres_id, ingest_id FROM raw.slurm_tres ORDER BY 3, 2")
    assert len(first.loaded) == 3 and again.loaded == [] and again.unchanged == 3
    assert tres_ids == [("c1", 1, 1), ("c1", 2, 2), ("c2", 7, 3), ("c1", 1, 4)]


@pytest.mark.slow
def test_incremental_build_after_a_lake_reload_equals_a_full_build(
    built: Built, tmp_path: Path
) -> None:
    """A re-committed cluster-day, loaded, takes the incremental path (its files' new ingest
    ids mark its day affected), and the incremental build equals a full one, row for row."""
    lake = tmp_path / "lake"
    shutil.copytree(built.lake, lake)
    db = _copy(built.from_lake, tmp_path / "inc.duckdb")
    commit_raw_partition(built.cfg, "k8s-b", DAYS[1], str(lake))
    with connect(db) as con:
        assert load_raw_from_lake(con, str(lake)).loaded == [
            ("k8s-b", dt.date.fromisoformat(DAYS[1]))
        ]
        rebuild(con, built.cfg)
        mode = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
        days = con.execute(
            "SELECT days FROM analytics.build_log WHERE table_name = 'analytics.occupancy_hourly'"
            " ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
    assert mode == [("incremental",)]
    assert f'"k8s-b": ["{DAYS[1]}"' in str(days[0][0])
    full = _copy(db, tmp_path / "full.duckdb")
    with connect(full) as con:
        rebuild(con, built.cfg, full=True)
    _assert_same(_snapshot(db, ("core", "analytics")), _snapshot(full, ("core", "analytics")))


def test_a_core_column_added_since_the_last_export_is_merged_into_the_delta_table(
    tmp_path: Path,
) -> None:
    """A core table that gained a column since the lake's last export (an upgrade added
    ``core.k8s_pods.uncounted_resources``) exports again: the Delta table takes the new column.
    Before, the overwrite refused the wider schema ("number of fields does not match")."""
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE SCHEMA core")
    con.execute("CREATE TABLE core.k8s_pods (cluster VARCHAR, pod VARCHAR, created_at TIMESTAMPTZ)")
    con.execute("INSERT INTO core.k8s_pods VALUES ('k', 'p1', '2026-03-02 10:00:00+00')")
    con.close()
    root = str(tmp_path / "lake")
    export_delta(db, root, tables=["core.k8s_pods"])
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE core.k8s_pods ADD COLUMN uncounted_resources VARCHAR")
    con.execute("INSERT INTO core.k8s_pods VALUES ('k', 'p2', '2026-03-02 11:00:00+00', 'x/y')")
    con.close()
    assert export_delta(db, root, tables=["core.k8s_pods"]) == {"core.k8s_pods": 1}
    got = read_lake(root, "core.k8s_pods").collect().sort("pod")
    assert got["pod"].to_list() == ["p1", "p2"]
    assert got["uncounted_resources"].to_list() == [None, "x/y"]
