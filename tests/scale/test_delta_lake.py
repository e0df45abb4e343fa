"""The lake's Delta tables: partition commits replace one cluster-day in one transaction, and
four partition runs committing at once leave the same tables as a serial run, row for row.

The fan-out is ``lake_raw_job`` run for real by Dagster: with the multiprocess executor (four
steps, four processes, at once) and with the in-process executor (one step after another),
over the two-day, two-cluster sample fleet (four cluster-day partitions), on a local folder and
on moto's S3 server.

About moto as the S3 stand-in: deltalake 1.x commits a version on S3 with a conditional PUT of
its log entry (``If-None-Match: *``, which AWS S3 honours atomically since 2024; 1.0 dropped the
DynamoDB lock). moto answers that header (412 when the key exists), so the commit protocol and
its conflict retries run against it as against S3, but its threaded server checks and then
writes without a lock: two PUTs of the same key in the same instant could both succeed there.
The S3 case therefore shows that the protocol and the results match the serial run; the
atomicity itself is AWS's (or MinIO's, Ceph RGW's) to give, and the folder case (atomic
create of the log entry on a local file system) is the one that proves it here.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from deltalake import DeltaTable
from polars.testing import assert_frame_equal

from pipelines.lake_job import lake_raw_job
from pipelines.warehouse import RAW_TABLES
from pipelines.warehouse.delta import (
    commit_partition,
    delta_table_exists,
    delta_table_url,
    read_delta,
)
from tests.conftest import write_config

BUCKET = "goodput-delta"
DAYS = ("2026-11-02", "2026-11-03")
CLUSTERS = ("slurm-a", "k8s-b")


def _keys() -> list[str]:
    return [str(dg.MultiPartitionKey({"cluster": c, "date": d})) for c in CLUSTERS for d in DAYS]


def _failures(result: dg.ExecuteJobResult) -> str:
    """The run's failure events with their errors, for the assertion message: a step child
    that died or raised says how (its exit code, its exception), not only ``success`` False."""
    lines = []
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None)
        if not (event.is_failure or event.is_run_failure or error is not None):
            continue
        lines.append(f"{event.event_type_value} {event.step_key}: {event.message}")
        if error is not None:
            lines.append(error.to_string())
    return "\n".join(lines)


def _run(
    config_path: Path, lake: dict[str, Any], *, parallel: bool, tmp: Path
) -> dg.ExecuteJobResult:
    """``lake_raw_job`` over the four partitions, on the multiprocess or in-process executor."""
    executor = {"multiprocess": {"max_concurrent": 4}} if parallel else {"in_process": {}}
    run_config = {
        "ops": {"lake_partitions": {"config": {"partitions": _keys()}}},
        "resources": {
            "settings": {"config": {"config_path": str(config_path)}},
            "lake": {"config": lake},
        },
        "execution": {"config": executor},
    }
    tmp.mkdir(parents=True, exist_ok=True)
    with dg.instance_for_test(temp_dir=str(tmp)) as instance:
        result = dg.execute_job(
            dg.reconstructable(lake_raw_job), instance=instance, run_config=run_config
        )
        assert result.success, _failures(result)
        if parallel:
            # four commit steps, each in a process of its own
            pids = {
                e.pid
                for e in result.all_events
                if e.event_type == dg.DagsterEventType.STEP_START
                and e.step_key is not None
                and e.step_key.startswith("lake_commit_partition")
            }
            assert len(pids) == 4
        return result


def _tables(root: str, storage_options: dict[str, str] | None = None) -> dict[str, pl.DataFrame]:
    """Every raw Delta table under ``root``, rows sorted by every column."""
    out: dict[str, pl.DataFrame] = {}
    for table in sorted(set(RAW_TABLES.values())):
        if not delta_table_exists(root, table, storage_options=storage_options):
            continue  # no partition had rows of it
        frame = read_delta(root, table, storage_options=storage_options).collect()
        sortable = [c for c, t in frame.schema.items() if not isinstance(t, pl.List | pl.Struct)]
        out[table] = frame.sort(sortable, nulls_last=True)
    return out


def _assert_same(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> None:
    assert sorted(a) == sorted(b)
    assert "raw.slurm_rows" in a and "raw.k8s_pods" in a and "raw.dcgm_samples" in a
    for table in a:
        assert_frame_equal(a[table], b[table], check_column_order=False)


@pytest.fixture(scope="module")
def fleet_config(fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """goodput.toml over the session's two-day sample fleet."""
    return write_config(tmp_path_factory.mktemp("delta_cfg"), days_dir=fleet_dir)


@pytest.mark.slow
def test_four_partitions_at_once_equal_a_serial_run_on_a_folder(
    fleet_config: Path, tmp_path: Path
) -> None:
    """Multiprocess (4 at once) and serial runs leave equal raw tables, row for row; every
    partition's rows are there (4 commits to ``raw.dcgm_samples``, one per partition), and a
    re-run of the same partitions changes nothing."""
    parallel, serial = tmp_path / "parallel", tmp_path / "serial"
    _run(fleet_config, {"root_url": str(parallel)}, parallel=True, tmp=tmp_path / "i1")
    _run(fleet_config, {"root_url": str(serial)}, parallel=False, tmp=tmp_path / "i2")
    got, want = _tables(str(parallel)), _tables(str(serial))
    _assert_same(got, want)
    dcgm = got["raw.dcgm_samples"]
    parts = dcgm.select("cluster", "partition_date").unique().sort("cluster", "partition_date")
    assert parts.rows() == [(c, dt.date.fromisoformat(d)) for c in sorted(CLUSTERS) for d in DAYS]
    history = DeltaTable(delta_table_url(str(parallel), "raw.dcgm_samples")).history()
    assert len(history) == 4  # one commit per partition, none lost to a race
    _run(fleet_config, {"root_url": str(parallel)}, parallel=True, tmp=tmp_path / "i3")
    _assert_same(_tables(str(parallel)), want)


def test_commit_replaces_one_partition_in_one_version(tmp_path: Path) -> None:
    """A commit removes the partition's old rows and adds the new ones in one version; other
    partitions stay; an empty frame removes the partition.

    Hand count: c1/2024-01-01 gets 3 rows (v0), c1/2024-01-02 2 rows (v1); recommitting
    c1/2024-01-01 with 1 row (v2) leaves 1 + 2 = 3 rows; emptying c1/2024-01-02 (v3) leaves 1.
    """
    root = str(tmp_path)

    def frame(xs: list[int]) -> pl.DataFrame:
        return pl.DataFrame(
            {"cluster": ["x"] * len(xs), "x": xs}, schema={"cluster": pl.String, "x": pl.Int64}
        )

    assert commit_partition(root, "raw.t", frame([1, 2, 3]), cluster="c1", day="2024-01-01") == 0
    assert commit_partition(root, "raw.t", frame([4, 5]), cluster="c1", day="2024-01-02") == 1
    assert commit_partition(root, "raw.t", frame([9]), cluster="c1", day="2024-01-01") == 2
    rows = read_delta(root, "raw.t").collect().sort("x")
    assert rows["x"].to_list() == [4, 5, 9]
    assert rows["cluster"].unique().to_list() == ["c1"]  # the partition's cluster wins
    assert commit_partition(root, "raw.t", frame([]), cluster="c1", day="2024-01-02") == 3
    assert read_delta(root, "raw.t").collect()["x"].to_list() == [9]
    # version 1 still holds the state before the re-commit (time travel), so the commit at v2
    # replaced the old rows in one step
    v1 = pl.read_delta(delta_table_url(root, "raw.t"), version=1).sort("x")
    assert v1["x"].to_list() == [1, 2, 3, 4, 5]


def test_a_column_the_table_lacks_is_added_by_the_commit(tmp_path: Path) -> None:
    """A lake written before a raw table gained a column (``raw.dcgm_samples.xid``) takes a
    partition with it: c1/2024-01-01 with x = 1, 2 (v0), then c1/2024-01-02 with x = 3 and
    xid = 79 (v1, the column added). Read back: 3 rows, xid NULL, NULL, 79."""
    root = str(tmp_path)
    old = pl.DataFrame({"cluster": ["c1", "c1"], "x": [1, 2]})
    new = pl.DataFrame({"cluster": ["c1"], "x": [3], "xid": [79]})
    assert commit_partition(root, "raw.t", old, cluster="c1", day="2024-01-01") == 0
    assert commit_partition(root, "raw.t", new, cluster="c1", day="2024-01-02") == 1
    rows = read_delta(root, "raw.t").collect().sort("x")
    assert rows.select("x", "xid").rows() == [(1, None), (2, None), (3, 79)]


def test_commit_refuses_names_that_would_reach_the_predicate(tmp_path: Path) -> None:
    """Cluster and table names are validated before any predicate is built."""
    one = pl.DataFrame({"x": [1]})
    with pytest.raises(ValueError, match="cannot be a Delta partition value"):
        commit_partition(str(tmp_path), "raw.t", one, cluster="c1' OR '1'='1", day="2024-01-01")
    with pytest.raises(ValueError, match="not a lake table name"):
        commit_partition(str(tmp_path), "raw.t; DROP", one, cluster="c1", day="2024-01-01")


@dataclass(frozen=True)
class S3:
    """A moto S3 endpoint with one empty bucket."""

    endpoint: str


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3]:
    """moto's S3 server (``moto_server``) in a process of its own on 127.0.0.1, with the bucket;
    credentials in the environment, which the executor's step processes inherit.

    Not moto's in-process ``ThreadedMotoServer``: deltalake's Python calls keep the GIL while
    they wait on HTTP, so a server thread in the same process would never answer them.
    """
    moto_server = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    if moto_server is None:
        if os.environ.get("GOODPUT_REQUIRE_MOTO"):
            raise RuntimeError("moto_server is not installed")
        pytest.skip("moto is not installed (set GOODPUT_REQUIRE_MOTO to make this an error)")
    import boto3

    for var in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [moto_server, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket=BUCKET
        )
        yield S3(endpoint)
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_four_partitions_at_once_equal_a_serial_run_on_moto_s3(
    fleet_config: Path, s3: S3, tmp_path: Path
) -> None:
    """The same comparison on ``s3://`` (moto): equal tables, one commit per partition (see the
    module docstring for what moto's conditional PUT does and does not prove)."""
    lake = {"endpoint_url": s3.endpoint, "region": "us-east-1", "allow_http": True}
    parallel, serial = f"s3://{BUCKET}/parallel", f"s3://{BUCKET}/serial"
    _run(fleet_config, {"root_url": parallel, **lake}, parallel=True, tmp=tmp_path / "i1")
    _run(fleet_config, {"root_url": serial, **lake}, parallel=False, tmp=tmp_path / "i2")
    opts = {"aws_endpoint_url": s3.endpoint, "aws_region": "us-east-1", "aws_allow_http": "true"}
    _assert_same(_tables(parallel, opts), _tables(serial, opts))
    history = DeltaTable(delta_table_url(parallel, "raw.dcgm_samples"), storage_options=opts)
    assert len(history.history()) == 4
