"""The hive-layout Parquet export: local and S3 round trips of the materialized warehouse,
idempotent re-exports; and the ``lake_export`` asset, which writes Delta tables instead.

The object-storage tests run against moto's S3 server (``moto.server.ThreadedMotoServer``) on
127.0.0.1: moto is a stand-in because no real S3-compatible server (MinIO, Ceph RGW) installs
here. It speaks the S3 REST API over HTTP, so polars' object_store client and s3fs exercise the
same requests they send to AWS. The tests skip only when moto cannot be imported and
``GOODPUT_REQUIRE_MOTO`` is unset (CI sets it, so a missing moto fails there).
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipelines.warehouse import RAW_TABLES, connect
from pipelines.warehouse.lake import (
    DEFAULT_DELTA_TABLES,
    DEFAULT_LAKE_TABLES,
    HIVE_NULL,
    LAKE_TIME_COLUMNS,
    PART_FILE,
    export_lake,
    read_lake,
)
from tests.conftest import Materialized

BUCKET = "goodput-lake"


def _counts(db: Path, tables: tuple[str, ...]) -> dict[str, int]:
    """Row counts of the tables that exist in ``db``."""
    out: dict[str, int] = {}
    with connect(db, read_only=True) as con:
        present = {
            f"{s}.{t}"
            for s, t in con.sql(
                "SELECT table_schema, table_name FROM information_schema.tables"
            ).fetchall()
        }
        for table in tables:
            if table in present:
                out[table] = int(con.sql(f"SELECT count(*) FROM {table}").fetchall()[0][0])
    return out


@pytest.fixture(scope="module")
def local_lake(
    materialized: Materialized, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[str]]:
    """The materialized warehouse exported once to a local folder: (root, files written)."""
    root = tmp_path_factory.mktemp("lake")
    return root, export_lake(materialized.cfg.warehouse_path, str(root))


def test_every_raw_table_is_a_lake_table() -> None:
    """Each raw table has a time-column entry and is exported by default."""
    assert set(RAW_TABLES.values()) <= set(DEFAULT_LAKE_TABLES)
    assert set(DEFAULT_LAKE_TABLES) <= set(LAKE_TIME_COLUMNS)


def test_local_round_trip_keeps_row_counts(
    materialized: Materialized, local_lake: tuple[Path, list[str]]
) -> None:
    """polars reads back as many rows per table as DuckDB holds, with cluster and date."""
    root, files = local_lake
    counts = _counts(materialized.cfg.warehouse_path, DEFAULT_LAKE_TABLES)
    assert counts["raw.dcgm_samples"] > 0 and counts["core.jobs"] > 0
    assert all(f.endswith(PART_FILE) for f in files)
    for table, n in counts.items():
        if n == 0:
            continue
        frame = read_lake(str(root), table).collect()
        assert frame.height == n, table
        assert frame.schema["cluster"] == pl.String and frame.schema["date"] == pl.Date


def test_duckdb_reads_the_local_lake(
    materialized: Materialized, local_lake: tuple[Path, list[str]]
) -> None:
    """DuckDB's own hive reader sees the same rows and partition values."""
    root, _files = local_lake
    counts = _counts(materialized.cfg.warehouse_path, DEFAULT_LAKE_TABLES)
    with duckdb.connect() as con:
        for table, n in counts.items():
            if n == 0:
                continue
            got = con.execute(
                "SELECT count(*), count(DISTINCT cluster) FROM read_parquet(?, "
                "hive_partitioning = true, hive_types = {'cluster': VARCHAR, 'date': DATE})",
                [f"{root}/{table}/*/*/*.parquet"],
            ).fetchall()[0]
            assert got[0] == n and got[1] >= 1, table


def test_date_is_the_utc_day_of_the_time_column(local_lake: tuple[Path, list[str]]) -> None:
    """dcgm samples land in the partition of their ``ts`` day in UTC."""
    root, _files = local_lake
    frame = read_lake(str(root), "raw.dcgm_samples").collect()
    assert frame.filter(
        pl.col("ts").dt.convert_time_zone("UTC").dt.date() != pl.col("date")
    ).is_empty()


def test_snapshot_tables_go_to_the_null_day(local_lake: tuple[Path, list[str]]) -> None:
    """core.nodes has no time column: one hive NULL ``date`` folder per cluster."""
    root, _files = local_lake
    folders = sorted(p.parent.name for p in (root / "core.nodes").glob(f"*/*/{PART_FILE}"))
    assert folders and set(folders) == {f"date={HIVE_NULL}"}
    assert read_lake(str(root), "core.nodes").collect()["date"].null_count() > 0


def test_partition_export_replaces_one_partition(
    materialized: Materialized, tmp_path: Path
) -> None:
    """Re-exporting one cluster-day rewrites only it and removes stray files there."""
    table = "raw.dcgm_samples"
    first = export_lake(materialized.cfg.warehouse_path, str(tmp_path), tables=[table])
    target = Path(first[0]).parent
    stray = target / "part-1.parquet"
    stray.write_bytes(b"stale")
    cluster = target.parent.name.removeprefix("cluster=")
    day = target.name.removeprefix("date=")
    again = export_lake(
        materialized.cfg.warehouse_path, str(tmp_path), tables=[table], partition=(cluster, day)
    )
    assert again == [str(target / PART_FILE)]
    assert not stray.exists()
    assert sorted(map(str, tmp_path.rglob("*.parquet"))) == sorted(first)


def test_full_export_deletes_stale_partitions(materialized: Materialized, tmp_path: Path) -> None:
    """A partition the warehouse no longer has is deleted by the next full export."""
    table = "core.jobs"
    gone = tmp_path / table / "cluster=gone" / "date=2020-01-01" / PART_FILE
    gone.parent.mkdir(parents=True)
    pl.DataFrame({"x": [1]}).write_parquet(gone)
    files = export_lake(materialized.cfg.warehouse_path, str(tmp_path), tables=[table])
    assert not gone.exists()
    assert sorted(map(str, tmp_path.rglob("*.parquet"))) == sorted(files)


@dataclass(frozen=True)
class S3:
    """A moto S3 endpoint with one empty bucket, and polars storage options for it."""

    client: Any
    storage_options: dict[str, str]


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3]:
    """moto's S3 server on 127.0.0.1 (a free port) with the ``goodput-lake`` bucket."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        if os.environ.get("GOODPUT_REQUIRE_MOTO"):
            raise
        pytest.skip("moto is not installed (set GOODPUT_REQUIRE_MOTO to make this an error)")
    import boto3

    for var in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        # moto keeps its state in process-wide backends: start each test from an empty store.
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"))
        creds = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **creds)
        client.create_bucket(Bucket=BUCKET)
        yield S3(
            client=client,
            storage_options={
                "aws_endpoint_url": endpoint,
                "aws_region": "us-east-1",
                "aws_allow_http": "true",
                **creds,
            },
        )
    finally:
        server.stop()


def _keys(s3: S3) -> list[str]:
    pages = s3.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def test_s3_round_trip(materialized: Materialized, s3: S3) -> None:
    """Export to ``s3://`` and read back through polars' object_store client."""
    tables = ("raw.dcgm_samples", "core.jobs", "core.nodes")
    url = f"s3://{BUCKET}/fleet"
    files = export_lake(
        materialized.cfg.warehouse_path, url, tables=tables, storage_options=s3.storage_options
    )
    assert files and all(f.startswith(f"{url}/") for f in files)
    assert _keys(s3) == sorted(f.removeprefix(f"s3://{BUCKET}/") for f in files)
    counts = _counts(materialized.cfg.warehouse_path, tables)
    for table in tables:
        got = read_lake(url, table, storage_options=s3.storage_options).collect()
        assert got.height == counts[table], table


def test_s3_re_export_is_idempotent(materialized: Materialized, s3: S3) -> None:
    """Exporting twice, after a stray object lands in a partition, leaves one object each."""
    table = "raw.dcgm_samples"
    url = f"s3://{BUCKET}/fleet"
    db = materialized.cfg.warehouse_path
    first = export_lake(db, url, tables=[table], storage_options=s3.storage_options)
    stray = first[0].removeprefix(f"s3://{BUCKET}/").replace(PART_FILE, "part-1.parquet")
    s3.client.put_object(Bucket=BUCKET, Key=stray, Body=b"stale")
    second = export_lake(db, url, tables=[table], storage_options=s3.storage_options)
    assert second == first
    keys = _keys(s3)
    assert all(k.endswith(f"/{PART_FILE}") for k in keys)
    assert len({k.rsplit("/", 1)[0] for k in keys}) == len(keys) == len(first)


def test_lake_export_asset_reads_the_url_from_the_env(
    materialized: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The asset commits the warehouse's core tables as Delta tables to the folder named by
    ``GOODPUT_LAKE_URL`` (one commit each, no hive files), with the warehouse's row counts.
    (Without the variable it skips: tests/scale/test_lake_build.py.)"""
    from pipelines._raw_assets import SettingsResource
    from pipelines.lake_assets import LAKE_URL_ENV, LakeResource, lake_export

    monkeypatch.setenv(LAKE_URL_ENV, str(tmp_path))
    settings = SettingsResource(config_path=str(materialized.cfg.path))
    result = lake_export(settings=settings, lake=LakeResource())
    assert result.metadata is not None
    assert not list(tmp_path.rglob(PART_FILE))
    counts = _counts(materialized.cfg.warehouse_path, DEFAULT_DELTA_TABLES)
    exported = {t for t, n in counts.items() if n}
    assert "core.jobs" in exported and result.metadata["tables"] == len(exported)
    for table in exported:
        assert (tmp_path / table / "_delta_log").is_dir(), table
        assert read_lake(str(tmp_path), table).collect().height == counts[table], table
