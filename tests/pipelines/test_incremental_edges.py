"""Incremental builds equal to a full rebuild at four edges a breaker's load sequences found:
a per-job GPU index map snapshot that names jobs running since earlier days, every squeue poll
deleted, the first cut-off after telemetry alone, and a day of telemetry alone after the
cut-off while a job is still open. One Slurm cluster, two 8-GPU nodes, 5-minute samples every
30 minutes on GPUs 0 and 1 of each node."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild, delete_load

X = "slurm-x"
_SACCT = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)


def _row(
    jid: str, submit: str, start: str, end: str, state: str, node: str, gpus: int, nodes: int = 1
) -> str:
    tres = f"billing=8,cpu=8,gres/gpu={gpus},mem=1000M,node={nodes}"
    alloc = f"billing=8,cpu=8,gres/gpu:a100={gpus},gres/gpu={gpus},mem=1000M,node={nodes}"
    return "|".join([jid, jid, X, "gpu", "normal", "nlp", "nlp", "u1", "1001", submit, submit,
                     start, end, "01:00:00", "0:0", state, str(nodes), "8", tres, alloc,
                     "2-00:00:00", node, "job"])  # fmt: skip


def _sacct(path: Path, rows: list[str]) -> Path:
    path.write_text(_SACCT + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _ms(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso).replace(tzinfo=dt.UTC).timestamp() * 1000)


def _dcgm(path: Path, samples: list[tuple[str, int, str | None, float, str]]) -> Path:
    """dcgm-exporter text: ``(host, gpu, hpc_job or None, gr engine active, ISO time UTC)``."""
    m = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    lines = [f"# HELP {m} x", f"# TYPE {m} gauge"]
    for host, g, job, value, at in samples:
        label = f',hpc_job="{job}"' if job else ""
        lines.append(
            f'{m}{{gpu="{g}",UUID="GPU-{host}-{g}",device="nvidia{g}",'
            f'modelName="NVIDIA A100-SXM4-80GB",Hostname="{host}"{label}}} {value} {_ms(at)}'
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _half_hours(day: str) -> Iterator[str]:
    t = dt.datetime.fromisoformat(day + "T00:00:00")
    for _ in range(48):
        yield t.isoformat()
        t += dt.timedelta(minutes=30)


def _gres(path: Path, jobs: list[tuple[str, str, str, str]], gres: str = "gpu:4") -> Path:
    """``scontrol show job -d`` records: ``(job id, start, node, GPU indices)``, running, each
    node's GRES ``<gres>(IDX:<indices>)``."""
    recs = [
        f"JobId={jid} JobName=job\n   UserId=u1(1001) GroupId=u1(1001) MCS_label=N/A\n"
        f"   Account=nlp QOS=normal\n   JobState=RUNNING Reason=None Dependency=(null)\n"
        f"   SubmitTime={start} EligibleTime={start}\n   StartTime={start} EndTime=Unknown\n"
        f"   Partition=gpu AllocNode:Sid=localhost:1\n   NodeList={node}\n   BatchHost={node}\n"
        f"   NumNodes=1 NumCPUs=8 NumTasks=1 CPUs/Task=1\n"
        f"   TRES=cpu=8,mem=1000M,node=1,billing=8,gres/gpu=4\n   JOB_GRES=gpu:4\n"
        f"     Nodes={node} CPU_IDs=0-7 Mem=1000 GRES={gres}(IDX:{idx})\n   MinCPUsNode=1\n"
        for jid, start, node, idx in jobs
    ]
    path.write_text("\n".join(recs), encoding="utf-8")
    return path


@pytest.fixture
def one_cluster(tmp_path: Path) -> tuple[Config, Path]:
    """slurm-x with an inventory of two 8-GPU nodes, x-001 and x-002, and an empty warehouse."""
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / f"{X}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nx-001,8,a100,gpu,r1\nx-002,8,a100,gpu,r1\n",
        encoding="utf-8",
    )
    (tmp_path / "inputs").mkdir()
    cfg = load_config(write_config(tmp_path, clusters=((X, "slurm", "UTC"),)))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
    return cfg, tmp_path


def _load(cfg: Config, kind: str, path: Path) -> int:
    with connect(cfg.warehouse_path) as con:
        return ingest_file(con, kind, path, IngestOptions(cluster=X, tz="UTC")).ingest_id


def _build(cfg: Config) -> str:
    with connect(cfg.warehouse_path) as con:
        rebuild(con, cfg)
        ((mode,),) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
    return str(mode)


def _q(cfg: Config, sql: str) -> list[tuple]:
    with connect(cfg.warehouse_path, read_only=True) as con:
        return con.execute(sql).fetchall()


def _delete_load(cfg: Config, ingest_id: int) -> None:
    """Delete one load outside a re-load (:func:`tests.pipelines.test_incremental.delete_load`)."""
    with connect(cfg.warehouse_path) as con:
        delete_load(con, ingest_id)


_ACTIVITY_BY_DAY = (
    "SELECT CAST(timezone('UTC', bucket) AS DATE)::VARCHAR AS day, attribution, count(*)"
    " FROM analytics.gpu_activity GROUP BY ALL ORDER BY ALL"
)


@pytest.mark.parametrize("rule", [True, False], ids=["planned", "without-the-rule"])
def test_a_gres_snapshot_replans_every_day_its_jobs_ran(
    one_cluster: tuple[Config, Path], monkeypatch: pytest.MonkeyPatch, rule: bool
) -> None:
    """Jobs 100 and 101 hold 4 GPUs each of x-001 from 11-02 06:00 and 07:00, still running;
    x-001's GPUs 0 and 1 report every 30 minutes on 11-02 and 11-03, with no job label: each
    sample is the node's jobs' as a flagged group (``node_group``). A snapshot of 11-03 (file
    ``jobs_2026-11-03.txt``) gives 100 GPUs 0-3 and 101 GPUs 4-7: a full build then attributes
    every sample of GPUs 0 and 1 from 06:00 of 11-02 on to job 100 (``gres_index``), 11-02's
    included. The plan takes the days of the jobs the snapshot names (11-02 and 11-03), and the
    build equals a full rebuild; deleting the snapshot's load again turns them back. Without
    the rule (``_gres_days`` finding nothing), only the file's day is rebuilt and 11-02 keeps
    ``node_group``."""
    from pipelines.analytics import incremental

    if not rule:
        monkeypatch.setattr(incremental, "_gres_days", lambda *args: {})
    cfg, base = one_cluster
    running = [
        _row("100", "2026-11-02T05:00:00", "2026-11-02T06:00:00", "Unknown", "RUNNING", "x-001", 4),
        _row("101", "2026-11-02T05:00:00", "2026-11-02T07:00:00", "Unknown", "RUNNING", "x-001", 4),
    ]  # fmt: skip
    for day in ("2026-11-02", "2026-11-03"):
        _load(cfg, "sacct", _sacct(base / "inputs" / f"sacct_{day}.psv", running))
        samples = [("x-001", g, None, 0.5, t) for t in _half_hours(day) for g in (0, 1)]
        _load(cfg, "dcgm", _dcgm(base / "inputs" / f"dcgm_{day}.prom", samples))
        _build(cfg)
    before = _q(cfg, _ACTIVITY_BY_DAY)
    snapshot = _gres(
        base / "inputs" / "jobs_2026-11-03.txt",
        [("100", "2026-11-02T06:00:00", "x-001", "0-3"),
         ("101", "2026-11-02T07:00:00", "x-001", "4-7")],
    )  # fmt: skip
    loaded = _load(cfg, "slurm-jobs-gres", snapshot)
    assert _build(cfg) == "incremental"
    # 11-02: 12 half-hours before 06:00 (no job yet) × 2 GPUs unattributed, 36 × 2 job 100's
    assert before == [("2026-11-02", "node_group", 72), ("2026-11-02", "unattributed", 24),
                      ("2026-11-03", "node_group", 96)]  # fmt: skip
    after = _q(cfg, _ACTIVITY_BY_DAY)
    if not rule:
        assert after[:2] == before[:2]  # 11-02 kept as it was
        with pytest.raises(AssertionError, match=r"analytics\.gpu_activity"):
            assert_equals_full_rebuild(cfg, base)
        return
    assert after == [("2026-11-02", "gres_index", 72), ("2026-11-02", "unattributed", 24),
                     ("2026-11-03", "gres_index", 96)]  # fmt: skip
    assert assert_equals_full_rebuild(cfg, base) > 30
    _delete_load(cfg, loaded)
    assert _build(cfg) == "incremental"
    assert _q(cfg, _ACTIVITY_BY_DAY) == before
    assert assert_equals_full_rebuild(cfg, base) > 30


def _two_days_of_jobs() -> tuple[list[str], list[str]]:
    """Day 1: job 200 on x-001 02:00–20:00, job 201 on x-002 from 10:00, running. Day 2: 201
    ended 11-03 03:00; job 202 on x-001 from 05:00, running."""
    d1 = [
        _row("200", "2026-11-02T01:00:00", "2026-11-02T02:00:00", "2026-11-02T20:00:00",
             "COMPLETED", "x-001", 8),
        _row("201", "2026-11-02T09:00:00", "2026-11-02T10:00:00", "Unknown", "RUNNING",
             "x-002", 8),
    ]  # fmt: skip
    d2 = [
        _row("201", "2026-11-02T09:00:00", "2026-11-02T10:00:00", "2026-11-03T03:00:00",
             "COMPLETED", "x-002", 8),
        _row("202", "2026-11-03T04:00:00", "2026-11-03T05:00:00", "Unknown", "RUNNING",
             "x-001", 8),
    ]  # fmt: skip
    return d1, d2


def _owner(host: str, at: str) -> str | None:
    if host == "x-001" and "2026-11-02T02:00" <= at < "2026-11-02T20:00":
        return "200"
    if host == "x-001" and at >= "2026-11-03T05:00":
        return "202"
    if host == "x-002" and "2026-11-02T10:00" <= at < "2026-11-03T03:00":
        return "201"
    return None


def _day_of_samples(base: Path, day: str) -> Path:
    """Both nodes' GPUs 0 and 1, every 30 minutes of ``day``, labelled with their job (0.7)
    or idle (0.0)."""
    rows = []
    for at in _half_hours(day):
        for host in ("x-001", "x-002"):
            job = _owner(host, at)
            rows += [(host, g, job, 0.7 if job else 0.0, at) for g in (0, 1)]
    return _dcgm(base / "inputs" / f"dcgm_{day}.prom", rows)


def test_the_first_cutoff_after_telemetry_alone_builds_every_telemetry_day(
    one_cluster: tuple[Config, Path],
) -> None:
    """Samples of 11-02 and 11-03 loaded and built before any job: no cluster has a cut-off,
    so the build keeps no window row. Day 1's sacct file then gives slurm-x its first cut-off:
    a full build writes the activity of every sample, both days (2 nodes × 2 GPUs × 48
    half-hours × 2 days = 384 rows), which an incremental plan of day 1 alone would not (it
    wrote 192). The plan runs in full, says why in ``analytics.build_state.reason``, and equals
    a full rebuild."""
    cfg, base = one_cluster
    for day in ("2026-11-02", "2026-11-03"):
        _load(cfg, "dcgm", _day_of_samples(base, day))
    assert _build(cfg) == "full"
    assert _q(cfg, "SELECT count(*) FROM analytics.gpu_activity") == [(0,)]
    d1, _d2 = _two_days_of_jobs()
    _load(cfg, "sacct", _sacct(base / "inputs" / "sacct_2026-11-02.psv", d1))
    assert _build(cfg) == "full"
    assert _q(cfg, "SELECT reason FROM analytics.build_state ORDER BY build_id") == [
        ("nothing built before",),
        ("the first cluster with a cut-off and occupancy hours",),
    ]
    assert _q(cfg, "SELECT count(*) FROM analytics.gpu_activity") == [(384,)]
    assert assert_equals_full_rebuild(cfg, base) > 30


def test_a_day_of_telemetry_alone_updates_the_open_jobs_gpu_summary(
    one_cluster: tuple[Config, Path],
) -> None:
    """Both days' sacct and samples built: job 202 runs on x-001 from 11-03 05:00 and is
    still open at the cut-off (the latest sacct time, 11-03 05:00). Then 11-04's samples alone:
    the cut-off does not move, but a full build gives the open attempt every later sample of
    its GPUs too, so its summary grows: observed GPU-seconds 2 GPUs × 38 samples × 300 s =
    22,800 → + 48 × 2 × 300 = 51,600. The summary of an attempt still open is recomputed for
    any planned day after its start, and the build equals a full rebuild."""
    cfg, base = one_cluster
    d1, d2 = _two_days_of_jobs()
    for day, rows in (("2026-11-02", d1), ("2026-11-03", d2)):
        _load(cfg, "sacct", _sacct(base / "inputs" / f"sacct_{day}.psv", rows))
        _load(cfg, "dcgm", _day_of_samples(base, day))
    _build(cfg)
    summary = "SELECT observed_gpu_s FROM analytics.job_gpu_summary WHERE job_id = '202'"
    assert _q(cfg, summary) == [(22_800.0,)]
    _load(cfg, "dcgm", _day_of_samples(base, "2026-11-04"))
    assert _build(cfg) == "incremental"
    assert _q(cfg, summary) == [(51_600.0,)]
    assert assert_equals_full_rebuild(cfg, base) > 30


def test_deleting_every_squeue_poll_leaves_no_spell_in_use(fleet_dir: Path, tmp_path: Path) -> None:
    """slurm-a's sacct files built; the first large job's wait causes stand on the
    counterfactual basis (no poll). Three polls of it while it waits (Resources, Resources,
    ReqNodeNotAvail) turn them ``exact``. Deleting the only squeue load must turn them back:
    a full build then has no spell, and the incremental one used to read the last build's
    stored spells instead."""
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    cluster = cfg.clusters[0]
    opts = IngestOptions(cluster=cluster.name, tz=cluster.timezone)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for f in sorted((fleet_dir / "inputs" / cluster.name / "sacct").glob("*.psv")):
            ingest_file(con, "sacct", f, opts)
        rebuild(con, cfg)
        job, eligible = _first_large_wait(con)
    at = int(eligible.timestamp()) + 60
    polls = tmp_path / f"squeue_{eligible.date().isoformat()}.txt"
    polls.write_text(
        "".join(
            f"# poll_time={at + s}\nJOBID|STATE|REASON|SCHEDNODES|START_TIME|REQ_SWITCH|"
            f"WAIT4SWITCH|NODES|NODELIST|\n{job}|PENDING|{reason}|(null)|0|0|0:00|16||\n"
            for s, reason in ((0, "Resources"), (600, "Resources"), (1200, "ReqNodeNotAvail"))
        ),
        encoding="utf-8",
    )
    basis = (
        "SELECT DISTINCT basis FROM analytics.large_job_wait_causes"
        f" WHERE job_id = '{job}' AND eligible_at = $e"
    )
    with connect(cfg.warehouse_path) as con:
        loaded = ingest_file(con, "slurm-squeue", polls, opts).ingest_id
        rebuild(con, cfg)
        assert con.execute(basis, {"e": eligible}).fetchall() == [("exact",)]
        con.execute("DELETE FROM raw.slurm_squeue WHERE ingest_id = $i", {"i": loaded})
        con.execute("DELETE FROM raw.ingests WHERE ingest_id = $i", {"i": loaded})
        rebuild(con, cfg)
        assert con.execute(basis, {"e": eligible}).fetchall() == [("counterfactual",)]
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30


def _first_large_wait(con: duckdb.DuckDBPyConnection) -> tuple[str, dt.datetime]:
    """The job id and eligible time of the first large job's wait (by eligible time) that
    lasts at least an hour."""
    rows = con.execute(
        "SELECT job_id, eligible_at FROM analytics.large_job_wait_causes"
        " WHERE basis = 'counterfactual' AND wait_s >= 3600 ORDER BY eligible_at, job_id LIMIT 1"
    ).fetchall()
    assert rows, "the fleet has no large job waiting an hour"
    job, eligible = rows[0]
    return str(job), eligible.astimezone(dt.UTC)


def _x001_days(base: Path, days: tuple[str, ...], job: str | None = None) -> list[Path]:
    """GPUs 0 and 1 of x-001 every 30 minutes of each day, activity 0.5, labelled ``job``."""
    return [
        _dcgm(base / "inputs" / f"dcgm_{d}.prom",
              [("x-001", g, job, 0.5, t) for t in _half_hours(d) for g in (0, 1)])
        for d in days
    ]  # fmt: skip


_J50 = _row("50", "2026-11-02T00:30:00", "2026-11-02T01:00:00", "2026-11-02T10:00:00",
            "COMPLETED", "x-002", 8)  # fmt: skip


@pytest.mark.parametrize("rule", [True, False], ids=["planned", "without-the-rule"])
def test_an_open_attempt_ended_before_later_samples_replans_their_days(
    one_cluster: tuple[Config, Path], monkeypatch: pytest.MonkeyPatch, rule: bool
) -> None:
    """Job 100 runs on x-001 from 11-02 06:00, still open at the cut-off (11-02 10:00, job 50's
    end); x-001's samples of 11-02, 11-03 and 11-04 are its node's (``node_group``) from 06:00
    on, the later days too. 11-02's sacct is then loaded again with job 100 ended at 20:00: a
    full build leaves 11-03 and 11-04 ``unattributed``. The old row ran, open, to the latest
    sample loaded (11-04), not to the cut-off: the plan takes its days up to there, and the
    build equals a full rebuild. Without that (``_latest_times`` giving nothing), 11-03 and
    11-04 keep ``node_group``."""
    from pipelines.analytics import incremental

    if not rule:
        empty = incremental._latest_times(
            incremental.pl.DataFrame(schema={"cluster": incremental.pl.String(),
                                             "as_of": incremental.pl.Datetime("us", "UTC")}),
            incremental.pl.DataFrame(schema=incremental._SPANS_SCHEMA),
        )  # fmt: skip
        original = incremental._span_days
        monkeypatch.setattr(
            incremental, "_span_days",
            lambda rows, as_of, stable=None, latest=None: original(rows, as_of, stable, empty),
        )  # fmt: skip
    cfg, base = one_cluster
    open_100 = _row("100", "2026-11-02T05:00:00", "2026-11-02T06:00:00", "Unknown", "RUNNING",
                    "x-001", 4)  # fmt: skip
    _load(cfg, "sacct", _sacct(base / "inputs" / "sacct_2026-11-02.psv", [_J50, open_100]))
    for path in _x001_days(base, ("2026-11-02", "2026-11-03", "2026-11-04")):
        _load(cfg, "dcgm", path)
    assert _build(cfg) == "full"
    ended = _row("100", "2026-11-02T05:00:00", "2026-11-02T06:00:00", "2026-11-02T20:00:00",
                 "COMPLETED", "x-001", 4)  # fmt: skip
    _load(cfg, "sacct", _sacct(base / "inputs" / "sacct_2026-11-02.psv", [_J50, ended]))
    assert _build(cfg) == "incremental"
    later = _q(cfg, _ACTIVITY_BY_DAY)[-2:]
    if not rule:
        assert later == [("2026-11-03", "node_group", 96), ("2026-11-04", "node_group", 96)]
        with pytest.raises(AssertionError, match=r"analytics\.gpu_activity"):
            assert_equals_full_rebuild(cfg, base)
        return
    assert later == [("2026-11-03", "unattributed", 96), ("2026-11-04", "unattributed", 96)]
    assert assert_equals_full_rebuild(cfg, base) > 30


def test_the_last_cutoff_lost_makes_the_build_full(one_cluster: tuple[Config, Path]) -> None:
    """One sacct load (job 50, on x-002 00:30–10:00 of 11-02) and x-001's samples of 11-02 and
    11-03, built: 192 activity rows. Deleting the only sacct load leaves no cluster with a
    cut-off, and a full build then keeps no window row; the plan turns full (it said why) and
    keeps none either (the plan of the deleted job's days alone kept 11-03's 96 rows)."""
    cfg, base = one_cluster
    loaded = _load(cfg, "sacct", _sacct(base / "inputs" / "sacct_2026-11-02.psv", [_J50]))
    for path in _x001_days(base, ("2026-11-02", "2026-11-03")):
        _load(cfg, "dcgm", path)
    _build(cfg)
    assert _q(cfg, "SELECT count(*) FROM analytics.gpu_activity") == [(192,)]
    _delete_load(cfg, loaded)
    assert _build(cfg) == "full"
    assert _q(cfg, "SELECT reason FROM analytics.build_state ORDER BY build_id DESC LIMIT 1") == [
        ("no cluster has a cut-off and occupancy hours any more",)
    ]
    assert _q(cfg, "SELECT count(*) FROM analytics.gpu_activity") == [(0,)]
    assert assert_equals_full_rebuild(cfg, base) > 30


_LAST_ACTIVITY_DAYS = (
    "SELECT days FROM analytics.build_log WHERE table_name = 'analytics.gpu_activity'"
    " ORDER BY build_id DESC LIMIT 1"
)


def test_a_daily_snapshot_with_the_indices_it_had_plans_no_earlier_day(
    one_cluster: tuple[Config, Path],
) -> None:
    """Job 100 runs on x-001 from 11-02 06:00 through 11-05, GPUs 0-3 in a snapshot of every day
    from 11-03 on (as a daily ``scontrol show job -d`` names every running job). The first
    snapshot plans every day the job ran (11-02 on); each later one names it with the same
    indices and plans only its own days (the sacct and DCGM files' day, the day before for the
    XID comparison and the day after for the moved cut-off), not the job's whole run."""
    cfg, base = one_cluster
    open_100 = _row("100", "2026-11-02T05:00:00", "2026-11-02T06:00:00", "Unknown", "RUNNING",
                    "x-001", 4)  # fmt: skip
    planned = []
    for i, day in enumerate(("2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05")):
        other = _row(f"9{i}", f"{day}T10:00:00", f"{day}T11:00:00", f"{day}T23:00:00",
                     "COMPLETED", "x-002", 8)  # fmt: skip
        _load(cfg, "sacct", _sacct(base / "inputs" / f"sacct_{day}.psv", [open_100, other]))
        for path in _x001_days(base, (day,)):
            _load(cfg, "dcgm", path)
        if i:
            snapshot = [("100", "2026-11-02T06:00:00", "x-001", "0-3")]
            _load(cfg, "slurm-jobs-gres", _gres(base / "inputs" / f"jobs_{day}.txt", snapshot))
        _build(cfg)
        days = _q(cfg, _LAST_ACTIVITY_DAYS)[0][0]
        planned.append(None if days is None else [d[5:] for d in json.loads(days)[X]])
    assert planned == [None, ["11-02", "11-03", "11-04"], ["11-03", "11-04", "11-05"],
                       ["11-04", "11-05", "11-06"]]  # fmt: skip
    assert assert_equals_full_rebuild(cfg, base) > 30


def test_an_open_jobs_summary_reads_its_samples_after_the_planned_days(
    one_cluster: tuple[Config, Path],
) -> None:
    """Job 100 open on x-001 since 11-02 06:00 (cut-off 11-02 10:00), its GPUs 0 and 1 labelled
    with it on 11-02, 11-03 and 11-04: observed 2 GPUs × (36 + 48 + 48) samples × 300 s =
    79,200 GPU-seconds. 11-02's sacct is loaded again (job 50 ends at 09:00): only 11-02's days
    are planned, and job 100's summary, recomputed there, must still read its samples of 11-03
    and 11-04 (a window cut at the cut-off gave 21,600)."""
    cfg, base = one_cluster
    open_100 = _row("100", "2026-11-02T05:00:00", "2026-11-02T06:00:00", "Unknown", "RUNNING",
                    "x-001", 4)  # fmt: skip
    _load(cfg, "sacct", _sacct(base / "inputs" / "sacct_2026-11-02.psv", [_J50, open_100]))
    for d in ("2026-11-02", "2026-11-03", "2026-11-04"):
        rows = [("x-001", g, "100" if t >= "2026-11-02T06:00" else None, 0.5, t)
                for t in _half_hours(d) for g in (0, 1)]  # fmt: skip
        _load(cfg, "dcgm", _dcgm(base / "inputs" / f"dcgm_{d}.prom", rows))
    _build(cfg)
    summary = "SELECT observed_gpu_s FROM analytics.job_gpu_summary WHERE job_id = '100'"
    assert _q(cfg, summary) == [(79_200.0,)]
    earlier = _row("50", "2026-11-02T00:30:00", "2026-11-02T01:00:00", "2026-11-02T09:00:00",
                   "COMPLETED", "x-002", 8)  # fmt: skip
    _load(cfg, "sacct", _sacct(base / "inputs" / "sacct_2026-11-02.psv", [earlier, open_100]))
    assert _build(cfg) == "incremental"
    assert _q(cfg, summary) == [(79_200.0,)]
    assert assert_equals_full_rebuild(cfg, base) > 30


def test_a_whole_gpu_snapshot_after_a_mig_one_with_the_same_indices_plans_the_jobs_run(
    one_cluster: tuple[Config, Path],
) -> None:
    """Job 100 open on x-001 since 11-02 06:00, samples of 11-02 … 11-04, and a snapshot of 11-03
    naming it with MIG GRES ``gpu:1g.10gb:4(IDX:0-3)``: the map drops MIG rows, so the samples
    stay the node's (``node_group``). A snapshot of 11-04 names the same job, start and node with
    ``gpu:a100:4(IDX:0-3)``: the same indices, but now a map row, so every day of the run turns
    ``gres_index``. The new load's rows are compared with the other loads' GRES too, so the
    job's whole run is planned, and the build equals a full rebuild."""
    cfg, base = one_cluster
    j50 = _row("50", "2026-11-04T00:30:00", "2026-11-04T01:00:00", "2026-11-04T10:00:00",
               "COMPLETED", "x-002", 8)  # fmt: skip
    open_100 = _row("100", "2026-11-02T05:00:00", "2026-11-02T06:00:00", "Unknown", "RUNNING",
                    "x-001", 4)  # fmt: skip
    _load(cfg, "sacct", _sacct(base / "inputs" / "sacct_2026-11-04.psv", [j50, open_100]))
    for path in _x001_days(base, ("2026-11-02", "2026-11-03", "2026-11-04")):
        _load(cfg, "dcgm", path)
    held = [("100", "2026-11-02T06:00:00", "x-001", "0-3")]
    _load(cfg, "slurm-jobs-gres", _gres(base / "inputs" / "jobs_2026-11-03.txt", held,
                                        gres="gpu:1g.10gb:4"))  # fmt: skip
    _build(cfg)
    assert {a for _d, a, _n in _q(cfg, _ACTIVITY_BY_DAY)} == {"node_group", "unattributed"}
    _load(cfg, "slurm-jobs-gres", _gres(base / "inputs" / "jobs_2026-11-04.txt", held,
                                        gres="gpu:a100:4"))  # fmt: skip
    assert _build(cfg) == "incremental"
    assert _q(cfg, _ACTIVITY_BY_DAY) == [
        ("2026-11-02", "gres_index", 72), ("2026-11-02", "unattributed", 24),
        ("2026-11-03", "gres_index", 96), ("2026-11-04", "gres_index", 96),
    ]  # fmt: skip
    assert assert_equals_full_rebuild(cfg, base) > 30


def test_a_slurm_cluster_in_slurmd_pods_reaches_its_kubernetes_clusters_latest_sample() -> None:
    """slurm-x's cut-off is 11-02 10:00; its GPUs' samples are loaded under its Kubernetes
    cluster k8s-x, the last at 11-04 23:30 (and another cluster's at 11-05). With the pair,
    slurm-x's open attempts own samples up to 11-04 23:30 (they are moved onto its nodes);
    without it, only to its cut-off; k8s-x keeps its own."""
    from pipelines.analytics.incremental import _latest_times

    utc = dt.UTC
    as_of = pl.DataFrame(
        {"cluster": ["slurm-x"], "as_of": [dt.datetime(2026, 11, 2, 10, tzinfo=utc)]}
    )
    spans = pl.DataFrame(
        {"ingest_id": [1, 2, 3], "cluster": ["k8s-x", "k8s-x", "other"],
         "lo": [dt.datetime(2026, 11, 2, tzinfo=utc), dt.datetime(2026, 11, 4, tzinfo=utc),
                dt.datetime(2026, 11, 5, tzinfo=utc)],
         "hi": [dt.datetime(2026, 11, 3, 23, 30, tzinfo=utc),
                dt.datetime(2026, 11, 4, 23, 30, tzinfo=utc),
                dt.datetime(2026, 11, 5, 12, tzinfo=utc)]},
    )  # fmt: skip
    pairs = pl.DataFrame({"cluster": ["slurm-x"], "k8s_cluster": ["k8s-x"]})
    paired = dict(_latest_times(as_of, spans, pairs).iter_rows())
    alone = dict(_latest_times(as_of, spans).iter_rows())
    assert paired["slurm-x"] == dt.datetime(2026, 11, 4, 23, 30, tzinfo=utc)
    assert alone["slurm-x"] == dt.datetime(2026, 11, 2, 10, tzinfo=utc)
    assert paired["k8s-x"] == alone["k8s-x"] == dt.datetime(2026, 11, 4, 23, 30, tzinfo=utc)
    assert paired["other"] == dt.datetime(2026, 11, 5, 12, tzinfo=utc)


def _squeue(path: Path, polls: list[tuple[str, list[tuple[str, str, str]]]]) -> Path:
    """squeue polls: ``(ISO time UTC, [(job id, state, reason), ...])``."""
    text = ""
    for at, rows in polls:
        epoch = int(dt.datetime.fromisoformat(at).replace(tzinfo=dt.UTC).timestamp())
        text += f"# poll_time={epoch}\nJOBID|STATE|REASON|SCHEDNODES|START_TIME|REQ_SWITCH|"
        text += "WAIT4SWITCH|NODES|NODELIST|\n"
        text += "".join(f"{j}|{st}|{rs}|(null)|0|0|0:00|2||\n" for j, st, rs in rows)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("rule", [True, False], ids=["recomputed", "without-the-rule"])
def test_the_next_days_first_poll_ends_a_spell_of_the_day_before(
    one_cluster: tuple[Config, Path], rule: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Job 100 (16 GPUs, both nodes) is eligible on 11-02 at 23:40 and starts at 23:59:30:
    a 1,170 s wait. The polls of 11-02 (23:45, 23:50, 23:55, 23:59) say Topology, so its spell
    runs 23:45–23:59 (a poll's reason holds to the cluster's next poll): 840 s fragmentation,
    330 s other, exact. The first poll of 11-03 (00:00, job 100 running) ends that spell at
    00:00 instead, past the start: 870 s fragmentation (23:45–23:59:30), 300 s other. The new
    file plans 11-03 only, and the job's wait lies on 11-02; its causes are recomputed because
    its spells changed (``changed_spell_jobs``). Without that rule the build keeps 840 s."""
    cfg, base = one_cluster
    config = base / "goodput.toml"
    config.write_text(
        config.read_text(encoding="utf-8") + "[thresholds]\nlarge_job_gpus = 16\n",
        encoding="utf-8",
    )
    cfg = load_config(config)
    if not rule:
        import pipelines.analytics.build as build_module

        monkeypatch.setattr(
            build_module, "changed_spell_jobs", lambda _con, spells, *_a: spells.clear()
        )
    inputs = base / "inputs"
    _load(cfg, "sacct", _sacct(inputs / "sacct_2026-11-02.psv", [
        _row("100", "2026-11-02T23:40:00", "2026-11-02T23:59:30", "2026-11-03T02:00:00",
             "COMPLETED", "x-[001-002]", 16, nodes=2)]))  # fmt: skip
    _load(cfg, "sacct", _sacct(inputs / "sacct_2026-11-03.psv", [
        _row("102", "2026-11-03T05:00:00", "2026-11-03T05:10:00", "2026-11-03T12:00:00",
             "COMPLETED", "x-001", 8)]))  # fmt: skip
    assert _build(cfg) == "full"
    day1 = [(f"2026-11-02T23:{m}:00", [("100", "PENDING", "Topology")]) for m in (45, 50, 55, 59)]
    _load(cfg, "slurm-squeue", _squeue(inputs / "squeue_2026-11-02.txt", day1))
    assert _build(cfg) == "incremental"
    causes = ("SELECT job_id, wait_s, fragmentation_s, other_s, basis"
              " FROM analytics.large_job_wait_causes")  # fmt: skip
    assert _q(cfg, causes) == [("100", 1170.0, 840.0, 330.0, "exact")]
    day2 = [("2026-11-03T00:00:00", [("100", "RUNNING", "None")])]
    _load(cfg, "slurm-squeue", _squeue(inputs / "squeue_2026-11-03.txt", day2))
    assert _build(cfg) == "incremental"
    if not rule:
        assert _q(cfg, causes) == [("100", 1170.0, 840.0, 330.0, "exact")]
        with pytest.raises(AssertionError, match="large_job_wait_causes"):
            assert_equals_full_rebuild(cfg, base)
        return
    assert _q(cfg, causes) == [("100", 1170.0, 870.0, 300.0, "exact")]
    assert assert_equals_full_rebuild(cfg, base) > 30
