"""A Slurm job holding GPU shards (``gres/shard``, Slurm ≥ 22.05) is not a CPU-only job: with its
node's ``scontrol show node`` state its shards are a fraction of a GPU, without it the build says
so in ``data_quality`` (METRICS.md "Units and identities").

One Slurm cluster ``spark`` (UTC), 2026-10-09, an inventory of ``dgx-spark`` (1 GPU) and ``g1``
(1 GPU): job 101 holds 40 shards on dgx-spark 10:00–12:00 (AllocTRES of a DGX Spark,
``gres/shard:nvidia_gb10=40,gres/shard=40``, no ``gres/gpu``); job 102 holds 1 GPU on g1
10:00–11:00; job 103 asks for 20 shards from 11:00 and still pends (ReqTRES ``gres/shard=20``).
The node state: ``Gres=gpu:nvidia_gb10:1,shard:nvidia_gb10:80``.

By hand, with the node state: 101 holds 40/80 = 0.5 GPU, 0.5 × 7,200 = 3,600 GPU-s; allocated
at 10:00 = 1,800 + 3,600 = 5,400 GPU-s, at 11:00 1,800; in time to start 101 is a 0.5-GPU
attempt that waited 0 s, 103 a 20/80 = 0.25-GPU wait censored at the cut-off 12:00 after
3,600 s (the cluster's only sharded node holds 1 GPU per 80 shards). Without it: 101 holds 0
GPUs and one ``gpu_shards_without_node_state`` finding counts it (value 1); allocated at 10:00 =
3,600, and no hour after; 101 and 103 are CPU-only to time to start (only 102 is there).
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import duckdb
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from pipelines.warehouse.tables import run_named
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild

_SACCT = """\
JobID|JobIDRaw|Cluster|Partition|Account|User|State|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|ReqTRES|NodeList
101|101|spark|spark|a|alice|COMPLETED|2026-10-09T10:00:00|2026-10-09T10:00:00|2026-10-09T10:00:00|2026-10-09T12:00:00|02:00:00|1|billing=10,cpu=10,gres/shard:nvidia_gb10=40,gres/shard=40,mem=50G,node=1|billing=10,cpu=10,gres/shard=40,mem=50G,node=1|dgx-spark
102|102|spark|spark|a|bob|COMPLETED|2026-10-09T10:00:00|2026-10-09T10:00:00|2026-10-09T10:00:00|2026-10-09T11:00:00|01:00:00|1|billing=4,cpu=4,gres/gpu=1,mem=10G,node=1|billing=4,cpu=4,gres/gpu=1,node=1|g1
103|103|spark|spark|a|carol|PENDING|2026-10-09T11:00:00|2026-10-09T11:00:00|Unknown|Unknown|00:00:00|1||billing=4,cpu=4,gres/shard=20,node=1|None assigned
"""  # noqa: E501

_NODES = (
    "NodeName=dgx-spark Arch=aarch64 CPUAlloc=10 CPUTot=20 "
    "Gres=gpu:nvidia_gb10:1,shard:nvidia_gb10:80 NodeAddr=dgx-spark RealMemory=120000 "
    "State=MIXED Partitions=spark CfgTRES=cpu=20,mem=120000M,billing=20,gres/gpu=1,gres/shard=80\n"
    "NodeName=g1 CPUTot=8 Gres=gpu:1 RealMemory=64000 State=MIXED Partitions=spark\n"
)

_JOB = "SELECT gpus, gpu_s FROM core.jobs WHERE job_id = '101'"
_ALLOCATED = "SELECT allocated_gpu_s FROM analytics.occupancy_hourly ORDER BY hour"
_WAITS = "SELECT job_id, size_gpus, wait_s, censored FROM time_to_start_jobs ORDER BY job_id"
_FINDING = (
    "SELECT cluster, value FROM analytics.data_quality"
    " WHERE \"check\" = 'gpu_shards_without_node_state'"
)


def _setup(tmp_path: Path) -> tuple[Config, Path, Path]:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "spark.csv").write_text(
        "host,gpus,gpu_type,partition,rack\ndgx-spark,1,nvidia_gb10,spark,r1\ng1,1,,spark,r1\n"
    )
    (tmp_path / "inputs").mkdir()
    sacct = tmp_path / "inputs" / "sacct_2026-10-09.psv"
    sacct.write_text(_SACCT)
    nodes = tmp_path / "inputs" / "nodes_2026-10-09.txt"
    nodes.write_text(_NODES)
    cfg = load_config(write_config(tmp_path, clusters=(("spark", "slurm", "UTC"),)))
    return cfg, sacct, nodes


def _read(con: duckdb.DuckDBPyConnection) -> tuple[object, list[float], list[object]]:
    job = con.execute(_JOB).fetchall()[0]
    allocated = [r[0] for r in con.execute(_ALLOCATED).fetchall()]
    return job, allocated, con.execute(_FINDING).fetchall()


def test_shards_count_their_share_of_the_nodes_gpu(tmp_path: Path) -> None:
    """0.5 GPU, 3,600 GPU-s; allocated 5,400 and 1,800 GPU-s; no finding; the waits."""
    cfg, sacct, nodes = _setup(tmp_path)
    opts = IngestOptions(cluster="spark", tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "slurm-state", nodes, opts)
        rebuild(con, cfg, full=True)
        job, allocated, finding = _read(con)
        assert job == (pytest.approx(0.5), pytest.approx(3600.0))
        assert allocated == pytest.approx([5400.0, 1800.0])
        assert finding == []
        assert con.execute(_WAITS).fetchall() == [
            ("101", 0.5, 0.0, False), ("102", 1.0, 0.0, False), ("103", 0.25, 3600.0, True)
        ]  # fmt: skip
        # the slurm_jobs view keeps sacct's record: 0 GPUs, and the shards AllocTRES names
        row = con.execute("SELECT gpus, shards FROM slurm_jobs WHERE job_id = '101'").fetchone()
    assert row == (0.0, 40.0)


def test_without_node_state_the_shards_are_a_finding(tmp_path: Path) -> None:
    """0 GPUs, allocated 3,600 GPU-s at 10:00 (job 102 alone; no GPU job reaches 11:00, so the
    hours end there), one finding of value 1."""
    cfg, sacct, _nodes = _setup(tmp_path)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", sacct, IngestOptions(cluster="spark", tz="UTC"))
        rebuild(con, cfg, full=True)
        job, allocated, finding = _read(con)
        waits = con.execute(_WAITS).fetchall()
    assert job == (0.0, 0.0)
    assert allocated == pytest.approx([3600.0])
    assert finding == [("spark", 1.0)]
    assert waits == [("102", 1.0, 0.0, False)]


def test_node_state_loaded_later_equals_a_full_rebuild(tmp_path: Path) -> None:
    """The sacct rows built first; the node state loaded later, built incrementally (the
    sacct rows unchanged, their resolution read back as stored): 0.5 GPU and 5,400 GPU-s at
    10:00, the finding gone, 103's 0.25-GPU wait, the same as a full rebuild."""
    cfg, sacct, nodes = _setup(tmp_path)
    opts = IngestOptions(cluster="spark", tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", sacct, opts)
        rebuild(con, cfg, slurm_part_rows=1)
        assert _read(con)[0] == (0.0, 0.0)
        ingest_file(con, "slurm-state", nodes, opts)
        rebuild(con, cfg, slurm_part_rows=1)
        job, allocated, finding = _read(con)
        waits = con.execute(_WAITS).fetchall()
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
    assert mode == "incremental"
    assert job == (pytest.approx(0.5), pytest.approx(3600.0))
    assert allocated == pytest.approx([5400.0, 1800.0])
    assert finding == []
    assert waits == [
        ("101", 0.5, 0.0, False), ("102", 1.0, 0.0, False), ("103", 0.25, 3600.0, True)
    ]  # fmt: skip
    assert_equals_full_rebuild(cfg, tmp_path)


def test_a_day_of_shards_alone_is_not_untracked_gpus(tmp_path: Path) -> None:
    """Job 101 alone, no node state: the GPU partition spark's day holds one allocation, which
    carries shards and no gres/gpu. GPU sharing was tracked, so no ``gpus_not_tracked`` finding
    (``AccountingStorageTRES`` lacking gres/gpu) is made; the one finding is the shards' own,
    value 1."""
    cfg, sacct, _nodes = _setup(tmp_path)
    sacct.write_text("\n".join(_SACCT.splitlines()[:2]) + "\n")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", sacct, IngestOptions(cluster="spark", tz="UTC"))
        rebuild(con, cfg, full=True)
        found = con.execute(
            'SELECT "check", value FROM analytics.data_quality'
            " WHERE \"check\" IN ('gpus_not_tracked', 'gpu_shards_without_node_state')"
        ).fetchall()
    assert found == [("gpu_shards_without_node_state", 1.0)]


def test_the_latest_snapshot_wins_whatever_the_load_order(tmp_path: Path) -> None:
    """The node state of 12:00 (80 shards) loaded first, an older one of 09:00 (before shards
    were configured: ``Gres=gpu:nvidia_gb10:1``) loaded after it: the node's state is the 12:00
    snapshot's, so 101 still holds 40/80 = 0.5 GPU, 3,600 GPU-s, and there is no finding (taking
    the last load, the old snapshot left 101 at 0 GPUs with a finding)."""
    cfg, sacct, nodes = _setup(tmp_path)
    old = tmp_path / "inputs" / "nodes_2026-10-08.txt"
    old.write_text(_NODES.replace(",shard:nvidia_gb10:80", ""))
    noon = dt.datetime(2026, 10, 9, 12, tzinfo=dt.UTC).timestamp()
    os.utime(nodes, (noon, noon))
    os.utime(old, (noon - 3 * 3600, noon - 3 * 3600))
    opts = IngestOptions(cluster="spark", tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "slurm-state", nodes, opts)
        ingest_file(con, "slurm-state", old, opts)
        rebuild(con, cfg, full=True)
        job, allocated, finding = _read(con)
    assert job == (pytest.approx(0.5), pytest.approx(3600.0))
    assert allocated == pytest.approx([5400.0, 1800.0])
    assert finding == []


#: Node n1 of cluster ``spark`` reconfigured: 1 GPU and 80 shards on 2026-01-05, 2 GPUs and 80
#: shards on 2026-03-01 (each snapshot at noon UTC).
_RESHARDED = {
    "2026-01-05": "NodeName=n1 CPUTot=20 Gres=gpu:1,shard:80 State=MIXED Partitions=spark\n",
    "2026-03-01": "NodeName=n1 CPUTot=20 Gres=gpu:2,shard:80 State=MIXED Partitions=spark\n",
}
_SHARDS = "billing=4,cpu=4,gres/shard=40,node=1"
#: Jobs of 40 shards on n1: 200 on 2026-01-02 10:00-11:00 (before n1's first snapshot), 201 on
#: 2026-01-10 10:00-12:00, 202 on 2026-03-10 10:00-11:00; 203 asks for 20 shards from
#: 2026-03-10 11:00 and still pends.
_RESHARDED_SACCT = f"""\
JobID|JobIDRaw|Cluster|Partition|Account|User|State|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|ReqTRES|NodeList
200|200|spark|spark|a|alice|COMPLETED|2026-01-02T10:00:00|2026-01-02T10:00:00|2026-01-02T10:00:00|2026-01-02T11:00:00|01:00:00|1|{_SHARDS}|{_SHARDS}|n1
201|201|spark|spark|a|alice|COMPLETED|2026-01-10T10:00:00|2026-01-10T10:00:00|2026-01-10T10:00:00|2026-01-10T12:00:00|02:00:00|1|{_SHARDS}|{_SHARDS}|n1
202|202|spark|spark|a|alice|COMPLETED|2026-03-10T10:00:00|2026-03-10T10:00:00|2026-03-10T10:00:00|2026-03-10T11:00:00|01:00:00|1|{_SHARDS}|{_SHARDS}|n1
203|203|spark|spark|a|carol|PENDING|2026-03-10T11:00:00|2026-03-10T11:00:00|Unknown|Unknown|00:00:00|1||billing=4,cpu=4,gres/shard=20,node=1|None assigned
"""  # noqa: E501
_RESHARDED_JOBS = "SELECT job_id, gpus, gpu_s FROM core.jobs ORDER BY job_id"


def _resharded(tmp_path: Path) -> tuple[Config, Path, dict[str, Path]]:
    """The inventory (n1, 2 GPUs), the sacct file and n1's two snapshot files, dated."""
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "spark.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nn1,2,,spark,r1\n"
    )
    (tmp_path / "inputs").mkdir()
    sacct = tmp_path / "inputs" / "sacct_2026-03-10.psv"
    sacct.write_text(_RESHARDED_SACCT)
    snapshots = {}
    for day, text in _RESHARDED.items():
        path = tmp_path / "inputs" / f"nodes_{day}.txt"
        path.write_text(text)
        noon = dt.datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
        os.utime(path, (noon, noon))
        snapshots[day] = path
    cfg = load_config(write_config(tmp_path, clusters=(("spark", "slurm", "UTC"),)))
    return cfg, sacct, snapshots


#: By hand, each job by n1's snapshot in effect at its start:
#: - 200 started 2026-01-02, before n1's first snapshot: its earliest, 1 GPU / 80 shards:
#:   40 × 1/80 = 0.5 GPU, × 3,600 s = 1,800 GPU-s;
#: - 201 started 2026-01-10, under the 2026-01-05 snapshot: 40 × 1/80 = 0.5 GPU, × 7,200 s =
#:   3,600 GPU-s (by the latest snapshot, 2026-03-01's 2/80, it was 1.0 GPU, 7,200 GPU-s);
#: - 202 started 2026-03-10, under the 2026-03-01 snapshot: 40 × 2/80 = 1.0 GPU, 3,600 GPU-s.
_RESHARDED_EXPECTED = [
    ("200", pytest.approx(0.5), pytest.approx(1800.0)),
    ("201", pytest.approx(0.5), pytest.approx(3600.0)),
    ("202", pytest.approx(1.0), pytest.approx(3600.0)),
]


def test_an_attempt_counts_by_the_node_state_at_its_start(tmp_path: Path) -> None:
    """n1 reconfigured from 1 GPU / 80 shards to 2 GPUs / 80 shards: each job counts by the
    snapshot in effect at its start (:data:`_RESHARDED_EXPECTED`; the earliest before the first
    snapshot), no finding; the pending job 203 by n1's latest state: 20 × 2/80 = 0.5 GPU."""
    cfg, sacct, snapshots = _resharded(tmp_path)
    opts = IngestOptions(cluster="spark", tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", sacct, opts)
        for path in snapshots.values():
            ingest_file(con, "slurm-state", path, opts)
        rebuild(con, cfg, full=True)
        jobs = con.execute(_RESHARDED_JOBS).fetchall()
        finding = con.execute(_FINDING).fetchall()
        pending = con.execute(
            "SELECT size_gpus FROM time_to_start_jobs WHERE job_id = '203'"
        ).fetchall()
    assert jobs == _RESHARDED_EXPECTED
    assert finding == []
    assert pending == [(pytest.approx(0.5),)]


def test_an_older_snapshot_loaded_later_changes_the_attempts_it_precedes(tmp_path: Path) -> None:
    """Built first with n1's 2026-03-01 snapshot alone (every job 40 × 2/80 = 1.0 GPU: 3,600,
    7,200 and 3,600 GPU-s); the 2026-01-05 snapshot loaded after it and built incrementally (the
    sacct rows unchanged, read back as stored): 200 and 201 now count by it, 202 keeps March's
    (:data:`_RESHARDED_EXPECTED`), the same as a full rebuild."""
    cfg, sacct, snapshots = _resharded(tmp_path)
    opts = IngestOptions(cluster="spark", tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "slurm-state", snapshots["2026-03-01"], opts)
        rebuild(con, cfg, slurm_part_rows=1)
        assert con.execute(_RESHARDED_JOBS).fetchall() == [
            ("200", pytest.approx(1.0), pytest.approx(3600.0)),
            ("201", pytest.approx(1.0), pytest.approx(7200.0)),
            ("202", pytest.approx(1.0), pytest.approx(3600.0)),
        ]
        ingest_file(con, "slurm-state", snapshots["2026-01-05"], opts)
        rebuild(con, cfg, slurm_part_rows=1)
        jobs = con.execute(_RESHARDED_JOBS).fetchall()
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
    assert mode == "incremental"
    assert jobs == _RESHARDED_EXPECTED
    assert_equals_full_rebuild(cfg, tmp_path)


def test_a_node_held_only_by_shard_jobs_is_observed_when_its_part_is_stored(
    tmp_path: Path,
) -> None:
    """Without an inventory, n1 (held only by shard jobs) is a node seen in the data, with its
    partition ``spark``. Built with March's snapshot, then January's loaded and built
    incrementally: the sacct rows are read back as stored parts, whose hosts were taken from
    the attempts before their shards were converted (0 GPUs: no host), so ``core.nodes`` lost
    n1's partition (NULL) where a full rebuild has ``spark``. Now they are taken after, as a
    resolved part's: n1 keeps ``spark`` and the build equals a full rebuild."""
    cfg, sacct, snapshots = _resharded(tmp_path)
    (tmp_path / "inventory" / "spark.csv").unlink()
    opts = IngestOptions(cluster="spark", tz="UTC")
    nodes = "SELECT host, partition, capacity_source FROM core.nodes ORDER BY host"
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", sacct, opts)
        ingest_file(con, "slurm-state", snapshots["2026-03-01"], opts)
        rebuild(con, cfg, slurm_part_rows=1)
        assert con.execute(nodes).fetchall() == [("n1", "spark", "observed")]
        ingest_file(con, "slurm-state", snapshots["2026-01-05"], opts)
        rebuild(con, cfg, slurm_part_rows=1)
        assert con.execute(nodes).fetchall() == [("n1", "spark", "observed")]
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
        assert mode == "incremental"
    assert_equals_full_rebuild(cfg, tmp_path)


def test_the_node_states_read_one_per_time_and_change() -> None:
    """``sql/analytics/slurm_node_shards.sql`` on hand-made ``raw.slurm_nodes`` rows of node a:
    two undated loads (the last, 1/20, kept: older than every dated state), 2026-01-05 and
    2026-01-06 alike (one row, the first), two loads of 2026-03-01 (the last, 2/64, kept); node
    b, which never named shards, left out."""
    con = duckdb.connect()
    con.execute(
        "SET TimeZone = 'UTC'; CREATE SCHEMA raw; CREATE TABLE raw.slurm_nodes (cluster VARCHAR,"
        " host VARCHAR, gpus DOUBLE, gres VARCHAR, snapshot_at TIMESTAMPTZ, ingest_id BIGINT,"
        " line_no BIGINT)"
    )
    con.execute(
        "INSERT INTO raw.slurm_nodes VALUES"
        " ('c', 'a', 1, 'gpu:1,shard:40', NULL, 1, 1),"
        " ('c', 'a', 1, 'gpu:1,shard:20', NULL, 2, 1),"
        " ('c', 'a', 1, 'gpu:1,shard:80', '2026-01-05 12:00+00', 3, 1),"
        " ('c', 'a', 1, 'gpu:1,shard:80', '2026-01-06 12:00+00', 4, 1),"
        " ('c', 'a', 2, 'gpu:2,shard:80', '2026-03-01 12:00+00', 5, 1),"
        " ('c', 'a', 2, 'gpu:2,shard:64', '2026-03-01 12:00+00', 6, 1),"
        " ('c', 'b', 8, 'gpu:8', '2026-03-01 12:00+00', 6, 2)"
    )
    got = run_named(con, "analytics/slurm_node_shards")
    noon = dt.time(12, tzinfo=dt.UTC)
    assert got.rows() == [
        ("c", "a", 1.0, "gpu:1,shard:20", None),
        ("c", "a", 1.0, "gpu:1,shard:80", dt.datetime.combine(dt.date(2026, 1, 5), noon)),
        ("c", "a", 2.0, "gpu:2,shard:64", dt.datetime.combine(dt.date(2026, 3, 1), noon)),
    ]
