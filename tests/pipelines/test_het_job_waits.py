"""A heterogeneous Slurm job waits as one job (METRICS.md "Time to start", het jobs).

Slurm allocates a het job's components at once, as a unit (SchedMD, "Heterogeneous Job
Support"), so for time to start and large-job waits they are one job asking their GPUs
together, keyed by the leader ``H+0``; occupancy keeps each component's own GPUs. 16 nodes of 8
GPUs (128), racks r1 = n1–n8 and r2 = n9–n16. Job 1 (team tB) holds 96 GPUs on n1–n12 from
00:00 to 02:00; het job 200 (team tA, share 0.5 → 64 GPUs) asks 48 + 48 GPUs, eligible at 00:00,
and starts both components at 02:00 on n1–n12 (6 nodes each), ending 03:00 (the cut-off).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild
from tests.slurm.test_sacct_json import _job, _n, _tres, _v40

_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)
_D = "2026-11-02T"
_REGISTRY = (
    "teams:\n  - team: tA\n    share: 0.5\n    slurm_accounts: [aA]\n"
    "  - team: tB\n    share: 0.3\n    slurm_accounts: [aB]\n"
    "  - team: tC\n    share: 0.2\n    slurm_accounts: [aC]\n"
)
_SPELLS = (
    "SELECT job_id, attempt, duration_s, started, size_gpus, bucket"
    " FROM analytics.time_to_start_jobs ORDER BY ALL"
)
_CAUSES = (
    "SELECT job_id, attempt, req_gpus, wait_s, quota_s, priority_s, fragmentation_s, other_s"
    " FROM large_job_wait_causes ORDER BY ALL"
)


def _row(job: str, raw: str, acct: str, start: str, end: str, state: str, gpus: int,
         nodes: str, nnodes: int, eligible: str = "00:00:00") -> str:  # fmt: skip
    req = f"billing=8,cpu=8,gres/gpu={gpus},mem=1000M,node={nnodes}"
    alloc = "" if start == "Unknown" else req
    node_list = nodes if alloc else "None assigned"
    return "|".join([job, raw, "c1", "gpu", "normal", acct, acct, "u1", "1001", _D + "00:00:00",
                     _D + eligible, start, end, "00:00:00", "0:0", state, str(nnodes), "8",
                     req, alloc, "2-00:00:00", node_list, "job"])  # fmt: skip


_BIG = _row("1", "1", "aB", _D + "00:00:00", _D + "02:00:00", "COMPLETED", 96, "n[1-12]", 12)
_HET = [
    _row("200+0", "200", "aA", _D + "02:00:00", _D + "03:00:00", "COMPLETED", 48, "n[1-6]", 6),
    _row("200+1", "201", "aA", _D + "02:00:00", _D + "03:00:00", "COMPLETED", 48, "n[7-12]", 6),
]


def _warehouse(tmp_path: Path) -> Config:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inputs").mkdir()
    (tmp_path / "registry.yaml").write_text(_REGISTRY, encoding="utf-8")
    (tmp_path / "inventory" / "c1.csv").write_text(
        "host,gpus,gpu_type,partition,rack\n"
        + "".join(f"n{i},8,h100,gpu,{'r1' if i <= 8 else 'r2'}\n" for i in range(1, 17)),
        encoding="utf-8",
    )
    cfg = load_config(write_config(tmp_path, clusters=(("c1", "slurm", "UTC"),)))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
    return cfg


def _load(cfg: Config, name: str, text: str) -> None:
    path = cfg.warehouse_path.parent / "inputs" / name
    path.write_text(text, encoding="utf-8")
    with connect(cfg.warehouse_path) as con:
        res = ingest_file(con, "sacct", path, IngestOptions(cluster="c1", tz="UTC"))
        assert res.rows_rejected == 0


def _build(cfg: Config) -> None:
    with connect(cfg.warehouse_path) as con:
        rebuild(con, cfg)


def _q(cfg: Config, sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(cfg.warehouse_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def _ts(hour: int) -> int:
    return int(dt.datetime(2026, 11, 2, hour, tzinfo=dt.UTC).timestamp())


def _json_job(raw: int, offset: int, nodes: str) -> dict[str, object]:
    """Het component ``200+offset`` as ``sacct --json`` (data_parser v0.0.40) gives it."""
    gpus = (("cpu", 8), ("gres/gpu", 48), ("node", 6))
    return _job(
        raw, "COMPLETED", account="aA", cluster="c1", nodes=nodes,
        het={"job_id": 200, "job_offset": _n(offset)},
        time={"elapsed": 3600, "eligible": _ts(0), "end": _ts(3), "planned": _n(7200),
              "start": _ts(2), "submission": _ts(0), "limit": _n(2880)},
        tres={"allocated": _tres(*gpus), "requested": _tres(*gpus)},
    )  # fmt: skip


#: One spell: 96 GPUs (64–255), eligible 00:00, started 02:00: 7,200 s; job 1 none.
_ONE_SPELL = [("1", 0, 0.0, True, 96.0, "64-255"), ("200+0", 0, 7200.0, True, 96.0, "64-255")]
#: Job 1 waited 0 s (no row). Het job 200 asks 96 GPUs: at 00:00 and 01:00 tA holds 0 < 64
#: (no quota), 128 − 96 = 32 free < 96: priority 2 × 3,600 = 7,200 s.
_ONE_CAUSE = [("200+0", 0, 96.0, 7200.0, 0.0, 7200.0, 0.0, 0.0)]


def test_a_het_job_waits_as_one_job_from_sacct_text(tmp_path: Path) -> None:
    """Before: two spells of 48 GPUs (9–63) of 7,200 s each and no large-job row."""
    cfg = _warehouse(tmp_path)
    _load(cfg, "c1_sacct_2026-11-02.txt", _HEADER + "\n" + "\n".join([_BIG, *_HET]) + "\n")
    _build(cfg)
    assert _q(cfg, _SPELLS) == _ONE_SPELL
    assert _q(cfg, _CAUSES) == _ONE_CAUSE
    # occupancy keeps each component's own GPUs: 96 GPUs × 3,600 s in hour 02
    assert _q(cfg, "SELECT job_id, gpus FROM jobs ORDER BY ALL") == [
        ("1", 96.0), ("200+0", 48.0), ("200+1", 48.0)
    ]  # fmt: skip


def test_a_het_job_waits_as_one_job_from_sacct_json(tmp_path: Path) -> None:
    """The same jobs as ``sacct --json``: ``het.job_id`` / ``het.job_offset`` name the
    components, ``job_id`` their distinct raw ids (200, 201)."""
    cfg = _warehouse(tmp_path)
    big = _job(
        1, "COMPLETED", account="aB", cluster="c1", nodes="n[1-12]",
        time={"elapsed": 7200, "eligible": _ts(0), "end": _ts(2), "planned": _n(0),
              "start": _ts(0), "submission": _ts(0), "limit": _n(2880)},
        tres={"allocated": _tres(("cpu", 8), ("gres/gpu", 96), ("node", 12)),
              "requested": _tres(("cpu", 8), ("gres/gpu", 96), ("node", 12))},
    )  # fmt: skip
    text = _v40(big, _json_job(200, 0, "n[1-6]"), _json_job(201, 1, "n[7-12]"))
    _load(cfg, "c1_sacct_2026-11-02.json", text)
    _build(cfg)
    assert _q(cfg, _SPELLS) == _ONE_SPELL
    assert _q(cfg, _CAUSES) == _ONE_CAUSE


def test_a_pending_het_job_is_one_censored_wait_and_incremental_equals_full(
    tmp_path: Path,
) -> None:
    """Day file 1 (cut-off 01:00, job 1 running): both components pending since 00:00 → one
    spell of 96 GPUs censored at the cut-off, 3,600 s, and one large-job row of 3,600 s
    priority. Day file 2 starts them at 02:00 (cut-off 03:00): the incremental build keeps one
    spell, 7,200 s, and equals a full rebuild."""
    cfg = _warehouse(tmp_path)
    running = _BIG.replace(_D + "02:00:00", "Unknown").replace("COMPLETED", "RUNNING")
    running = running.replace("|00:00:00|0:0|", "|01:00:00|0:0|")
    pending = [
        _row(j, r, "aA", "Unknown", "Unknown", "PENDING", 48, "", 6)
        for j, r in (("200+0", "200"), ("200+1", "201"))
    ]
    _load(cfg, "c1_sacct_2026-11-01.txt", _HEADER + "\n" + "\n".join([running, *pending]) + "\n")
    _build(cfg)
    assert _q(cfg, _SPELLS) == [
        ("1", 0, 0.0, True, 96.0, "64-255"), ("200+0", None, 3600.0, False, 96.0, "64-255")
    ]  # fmt: skip
    assert _q(cfg, _CAUSES) == [("200+0", None, 96.0, 3600.0, 0.0, 3600.0, 0.0, 0.0)]
    _load(cfg, "c1_sacct_2026-11-02.txt", _HEADER + "\n" + "\n".join([_BIG, *_HET]) + "\n")
    _build(cfg)
    with duckdb.connect(str(cfg.warehouse_path), read_only=True) as con:
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchone() or ("",)
    assert mode == "incremental"
    assert _q(cfg, _SPELLS) == _ONE_SPELL
    assert _q(cfg, _CAUSES) == _ONE_CAUSE
    assert assert_equals_full_rebuild(cfg, tmp_path) > 0


@pytest.mark.parametrize("offset", ["200+1"])
def test_only_the_leader_key_names_the_het_job(offset: str) -> None:
    """A component's key is its het job's leader ``H+0``; other ids are their own."""
    import polars as pl

    from metrics.het_jobs import het_unit_id

    ids = pl.Series([offset, "200+0", "12_3", "7", "ns/job-1"])
    got = pl.select(het_unit_id(pl.lit(ids))).to_series().to_list()
    assert got == ["200+0", "200+0", "12_3", "7", "ns/job-1"]


def test_one_component_seen_started_leaves_the_het_job_waiting(tmp_path: Path) -> None:
    """Day file 1 as above (both components pending since 00:00); day file 2 holds 200+1 alone,
    started 02:00 and ended 03:00 (the cut-off): 200+0 has not started, so the het job has not,
    one spell of 96 GPUs censored at 03:00, 10,800 s (before: 200+0 censored at 10,800 s and
    200+1 started at 7,200 s, both of 48 GPUs in 9–63). The changed component's key is its
    leader's, so the incremental build rewrites that spell and equals a full rebuild."""
    cfg = _warehouse(tmp_path)
    running = _BIG.replace(_D + "02:00:00", "Unknown").replace("COMPLETED", "RUNNING")
    running = running.replace("|00:00:00|0:0|", "|01:00:00|0:0|")
    pending = [
        _row(j, r, "aA", "Unknown", "Unknown", "PENDING", 48, "", 6)
        for j, r in (("200+0", "200"), ("200+1", "201"))
    ]
    _load(cfg, "c1_sacct_2026-11-01.txt", _HEADER + "\n" + "\n".join([running, *pending]) + "\n")
    _build(cfg)
    _load(cfg, "c1_sacct_2026-11-02.txt", _HEADER + "\n" + _HET[1] + "\n")
    _build(cfg)
    with duckdb.connect(str(cfg.warehouse_path), read_only=True) as con:
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchone() or ("",)
    assert mode == "incremental"
    assert _q(cfg, _SPELLS) == [
        ("1", 0, 0.0, True, 96.0, "64-255"), ("200+0", None, 10800.0, False, 96.0, "64-255")
    ]  # fmt: skip
    assert [r[:3] for r in _q(cfg, _CAUSES)] == [("200+0", None, 96.0)]
    assert assert_equals_full_rebuild(cfg, tmp_path) > 0


def test_a_component_changed_alone_rewrites_its_het_jobs_wait(tmp_path: Path) -> None:
    """Day file 1: both components eligible 01:00 (submitted 00:00), started 02:00, ended 03:00:
    one spell of 3,600 s. Day file 2 loads 200+1 again with Eligible 00:00 and a later job 2
    (8 GPUs, 04:00–05:00, moving the cut-off to 05:00): the leader 200+0 neither changed nor
    reads a cut-off, but the het job now waits from 00:00: 7,200 s. The incremental build keys
    the changed component by its leader, rewrites the spell (a key of 200+1 alone left the
    stored 3,600 s) and equals a full rebuild."""
    cfg = _warehouse(tmp_path)
    het = [
        _row(j, r, "aA", _D + "02:00:00", _D + "03:00:00", "COMPLETED", 48, n, 6, "01:00:00")
        for j, r, n in (("200+0", "200", "n[1-6]"), ("200+1", "201", "n[7-12]"))
    ]
    _load(cfg, "c1_sacct_2026-11-01.txt", _HEADER + "\n" + "\n".join(het) + "\n")
    _build(cfg)
    assert _q(cfg, _SPELLS) == [("200+0", 0, 3600.0, True, 96.0, "64-255")]
    later = _row(
        "2", "2", "aC", _D + "04:00:00", _D + "05:00:00", "COMPLETED", 8, "n16", 1, "04:00:00"
    )
    changed = het[1].replace("|" + _D + "01:00:00|", "|" + _D + "00:00:00|")
    _load(cfg, "c1_sacct_2026-11-02.txt", _HEADER + "\n" + changed + "\n" + later + "\n")
    _build(cfg)
    with duckdb.connect(str(cfg.warehouse_path), read_only=True) as con:
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchone() or ("",)
    assert mode == "incremental"
    assert _q(cfg, _SPELLS) == [
        ("2", 0, 0.0, True, 8.0, "2-8"), ("200+0", 0, 7200.0, True, 96.0, "64-255")
    ]  # fmt: skip
    assert assert_equals_full_rebuild(cfg, tmp_path) > 0
