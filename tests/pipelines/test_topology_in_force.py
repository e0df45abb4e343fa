"""The gang level's domain size H is the map in force at each hour's, not the largest of every
map ever loaded (a later file rewrote earlier hours).

Cluster slurm-t: nodes n01–n08 of 4 GPUs; large jobs are 16 GPUs (4 nodes). Slurm
``topology/block`` maps: blocks of 2 from 11-01 (b1 = n[01-02] … b4 = n[07-08]), blocks of 4
from 11-03 (c1 = n[01-04], c2 = n[05-08]).

- Job 1 (4 GPUs, n01) runs 11-01 22:00 → 11-02 02:00. Job 2 (16 GPUs) is eligible 11-02 00:00
  and starts at 02:00 on n[01-04]. By hand, hours 00 and 01 (blocks of 2): whole free nodes
  b1 = 1, b2 = b3 = b4 = 2; n = 4 > H = 2, so k = 2 blocks, and the two best hold 4 whole
  nodes: it fits, the wait is other (7,200 s, none fragmentation); the 16-GPU shape's stranded
  GPUs, pooled, (7 mod 4) × 4 = 12 (before: H = 4 from the later map, fragmentation 7,200 s with
  28 × 7,200 = 201,600 GPU-s blocked, 28 stranded).
- Jobs 3 and 4 (4 GPUs, n01 and n05) run 11-02 23:00 → 11-03 02:00; job 5 (16 GPUs) is eligible
  11-03 00:00 and starts at 02:00. Blocks of 4: c1 and c2 have 3 whole free nodes each, no
  block holds 4: fragmentation 7,200 s, 24 GPUs idle, 172,800 GPU-s; stranded 24.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

X = "slurm-t"
_SACCT = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)


def _row(jid: str, eligible: str, start: str, end: str, state: str, nodes_list: str,
         gpus: int, nodes: int) -> str:  # fmt: skip
    """Times as ``<day of November>T<HH:MM>``."""
    tres = f"billing=8,cpu=8,gres/gpu={gpus},mem=1000M,node={nodes}"
    eligible, start, end = (f"2026-11-0{t}:00" for t in (eligible, start, end))
    return "|".join([jid, jid, X, "gpu", "normal", "nlp", "nlp", "u1", "1001", eligible,
                     eligible, start, end, "01:00:00", "0:0", state, str(nodes), "8", tres,
                     tres, "2-00:00:00", nodes_list, "job"])  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("topology_in_force")
    (base / "inventory").mkdir()
    (base / "inputs").mkdir()
    hosts = [f"n{i:02d}" for i in range(1, 9)]
    (base / "inventory" / f"{X}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\n" + "".join(f"{h},4,a100,gpu,\n" for h in hosts)
    )
    config = write_config(base, clusters=((X, "slurm", "UTC"),))
    config.write_text(config.read_text() + "\n[thresholds]\nlarge_job_gpus = 16\n")
    cfg = load_config(config)
    files = {
        "topology_2026-11-01.conf": "BlockName=b1 Nodes=n[01-02]\nBlockName=b2 Nodes=n[03-04]\n"
        "BlockName=b3 Nodes=n[05-06]\nBlockName=b4 Nodes=n[07-08]\n",
        "topology_2026-11-03.conf": "BlockName=c1 Nodes=n[01-04]\nBlockName=c2 Nodes=n[05-08]\n",
    }
    done = "COMPLETED"
    days = {
        "sacct_2026-11-02.psv": [
            _row("1", "1T21:00", "1T22:00", "2T02:00", done, "n01", 4, 1),
            _row("2", "2T00:00", "2T02:00", "2T05:00", done, "n[01-04]", 16, 4),
        ],
        "sacct_2026-11-03.psv": [
            _row("3", "2T23:00", "2T23:00", "3T02:00", done, "n01", 4, 1),
            _row("4", "2T23:00", "2T23:00", "3T02:00", done, "n05", 4, 1),
            _row("5", "3T00:00", "3T02:00", "3T04:00", done, "n[01-04]", 16, 4),
        ],
    }  # fmt: skip
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster=X, tz="UTC")
        for name, text in files.items():
            (base / "inputs" / name).write_text(text)
            ingest_file(con, "topology", base / "inputs" / name, opts)
        for name, rows in days.items():
            (base / "inputs" / name).write_text(_SACCT + "\n" + "\n".join(rows) + "\n")
            ingest_file(con, "sacct", base / "inputs" / name, opts)
        rebuild(con, cfg)
    return cfg.warehouse_path


def _q(db: Path, sql: str) -> list[tuple[object, ...]]:
    with connect(db, read_only=True) as con:
        return con.execute(sql).fetchall()


def test_wait_causes_read_the_map_in_force(built: Path) -> None:
    assert _q(
        built,
        "SELECT job_id, wait_s, fragmentation_s, other_s, blocked_idle_gpu_s"
        " FROM analytics.large_job_wait_causes ORDER BY job_id",
    ) == [("2", 7200.0, 0.0, 7200.0, 0.0), ("5", 7200.0, 7200.0, 0.0, 172_800.0)]


def test_stranded_gpus_read_the_map_in_force(built: Path) -> None:
    rows = _q(
        built,
        "SELECT strftime(hour AT TIME ZONE 'UTC', '%m-%d %H'), stranded_gpus"
        " FROM stranded_gpu_hourly WHERE pending_jobs > 0 ORDER BY hour",
    )
    assert rows == [("11-02 00", 12.0), ("11-02 01", 12.0), ("11-03 00", 24.0), ("11-03 01", 24.0)]


_TREE = (
    "SwitchName=s0 Nodes=n[01-02]\nSwitchName=s1 Nodes=n[03-04]\nSwitchName=s2 Nodes=n[05-06]\n"
    "SwitchName=s3 Nodes=n[07-08]\nSwitchName=root Switches=s[0-3]\n"
)
_BLOCKS = (
    "BlockName=b1 Nodes=n[01-02]\nBlockName=b2 Nodes=n[03-04]\n"
    "BlockName=b3 Nodes=n[05-06]\nBlockName=b4 Nodes=n[07-08]\n"
)


def test_a_later_map_with_other_level_names_keeps_the_earlier_gang_level(
    tmp_path: Path,
) -> None:
    """A tree from 11-01 (leaves s0–s3 of 2 nodes, level switch-1), built; then the same pairs
    as blocks from 11-03 (level block) and a day of jobs, built incrementally and in full.
    Job 60 (16 GPUs) runs on n[01,03,05,07] 11-01 23:00 → 11-02 02:00; job 61 (8 GPUs = 2
    nodes, large at 8) is eligible 11-02 00:00 and starts at 02:00.

    Under the tree at 00:00 and 01:00 each leaf has 1 whole free node: 16 free GPUs ≥ 8, k = 1
    and 1 < 2: fragmentation 7,200 s, 16 × 7,200 = 115,200 GPU-s blocked; stranded for the
    8-GPU shape 4 × (1 mod 2) × 4 = 16 at switch-1. The same after the block file, in both
    builds (the block file moved every hour to level block: job 61 other 7,200 s, and no
    stranded row with a level before 11-03)."""
    hosts = [f"n{i:02d}" for i in range(1, 9)]
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inventory" / f"{X}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\n" + "".join(f"{h},4,a100,gpu,\n" for h in hosts)
    )
    config = write_config(tmp_path, clusters=((X, "slurm", "UTC"),))
    config.write_text(config.read_text() + "\n[thresholds]\nlarge_job_gpus = 8\n")
    cfg = load_config(config)
    done, opts = "COMPLETED", IngestOptions(cluster=X, tz="UTC")
    loads = [
        ("topology", "topology_2026-11-01.conf", _TREE),
        ("sacct", "sacct_2026-11-02.psv", [
            _row("60", "1T23:00", "1T23:00", "2T02:00", done, "n[01,03,05,07]", 16, 4),
            _row("61", "2T00:00", "2T02:00", "2T03:00", done, "n[01-02]", 8, 2),
        ]),
        ("topology", "topology_2026-11-03.conf", _BLOCKS),
        ("sacct", "sacct_2026-11-03.psv", [
            _row("62", "3T01:00", "3T01:00", "3T02:00", done, "n01", 4, 1),
        ]),
    ]  # fmt: skip
    causes = (
        "SELECT job_id, wait_s, fragmentation_s, other_s, blocked_idle_gpu_s"
        " FROM analytics.large_job_wait_causes ORDER BY job_id"
    )
    stranded = (
        "SELECT strftime(hour AT TIME ZONE 'UTC', '%m-%d %H'), level, free_gpus, pending_jobs,"
        " stranded_gpus FROM stranded_gpu_hourly WHERE pending_jobs > 0 ORDER BY hour"
    )
    want_causes = [("61", 7200.0, 7200.0, 0.0, 115_200.0)]
    want_stranded = [
        ("11-02 00", "switch-1", 16.0, 1, 16.0),
        ("11-02 01", "switch-1", 16.0, 1, 16.0),
    ]
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for i, (kind, name, body) in enumerate(loads):
            text = body if isinstance(body, str) else _SACCT + "\n" + "\n".join(body) + "\n"
            (tmp_path / "inputs" / name).write_text(text)
            ingest_file(con, kind, tmp_path / "inputs" / name, opts)
            if i == 1:
                rebuild(con, cfg)
                assert con.execute(causes).fetchall() == want_causes
        rebuild(con, cfg)
        mode = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchone()
        incremental = (con.execute(causes).fetchall(), con.execute(stranded).fetchall())
        rebuild(con, cfg, full=True)
        full = (con.execute(causes).fetchall(), con.execute(stranded).fetchall())
    assert mode == ("incremental",)
    assert incremental == full == (want_causes, want_stranded)
