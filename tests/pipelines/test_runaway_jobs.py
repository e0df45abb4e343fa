"""A Slurm attempt still RUNNING far past its time limit is a runaway job (slurmdbd holds it
running, slurmctld no longer has it; ``sacctmgr show runawayjobs``): it counts at most its time
limit + 1 h, its Elapsed moves no cut-off, and each cluster gets a ``runaway_running_attempts``
finding (METRICS.md "Runaway Slurm attempts").

Mila's real ``sacct --json`` (SARC, ``tests/fixtures/sarc-sacct-json``) holds one job: job 4,
2 GPUs, Submit = Eligible = Start 2021-02-19 09:00:09 UTC, RUNNING, time limit 7,200 min =
432,000 s, Elapsed 102,228,976 s (23.11.5; 83,853,331 s in 23.02.6). By hand: runaway, since
102,228,976 > 432,000 + 3,600; counted end = start + 435,600 s (5 d 1 h) = 2021-02-24 10:00:09;
2 × 435,600 = 871,200 GPU-s = 242 GPU-h: 2 × 53,991 s (09:00:09 → midnight) on 02-19,
2 × 86,400 on each of 02-20 … 02-23, 2 × 36,009 s on 02-24 (53,991 + 4 × 86,400 + 36,009 =
435,600). Its Elapsed no longer gives the cut-off (start + 102,228,976 s = 2024-05-17
13:56:25, which made 1,184 days and 2 × 102,228,976 / 3,600 = 56,793.88 GPU-h); the file's
other times are its Submit/Start, 2021-02-19 09:00:09, and its counted end, so the cut-off is
2021-02-24 10:00:09. Recorded GPU-h in the finding: 2 × 102,228,976 / 3,600 = 56,793.876 →
56,793.88 (23.11.5), 2 × 83,853,331 / 3,600 = 46,585.184 → 46,585.18 (23.02.6).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild

SARC = Path(__file__).resolve().parents[1] / "fixtures" / "sarc-sacct-json"
UTC = dt.UTC


@pytest.mark.parametrize(
    ("name", "recorded"),
    [("sacct_23.11.5.json", "56793.88"), ("sacct_23.02.6.json", "46585.18")],
)
def test_sarc_runaway_job_is_capped_at_its_limit(tmp_path: Path, name: str, recorded: str) -> None:
    """See the module's docstring."""
    cfg = load_config(write_config(tmp_path, clusters=(("mila", "slurm", "UTC"),)))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", SARC / name, IngestOptions(cluster="mila", tz="UTC"))
        rebuild(con, cfg)
        cut = con.execute("SELECT cluster, as_of FROM core.build_cutoffs").fetchall()
        job = con.execute(
            "SELECT state, end_at, gpu_s FROM core.jobs WHERE job_id = '4'"
        ).fetchall()
        inferred = con.execute(
            "SELECT end_inferred FROM core.slurm_jobs WHERE job_id = '4'"
        ).fetchall()
        days = con.execute(
            "SELECT count(*), sum(allocated_gpu_s) / 3600 FROM occupancy_daily"
            " WHERE cluster = 'mila'"
        ).fetchall()
        findings = con.execute(
            "SELECT cluster, day, partition, value, detail FROM analytics.data_quality"
            " WHERE \"check\" = 'runaway_running_attempts'"
        ).fetchall()
        requeue = con.execute(
            "SELECT count(*) FROM analytics.data_quality"
            " WHERE \"check\" = 'open_attempts_ended_by_requeue'"
        ).fetchall()
    end = dt.datetime(2021, 2, 24, 10, 0, 9, tzinfo=UTC)
    assert cut == [("mila", end)]
    assert job == [("RUNNING", end, 871_200.0)]
    assert inferred == [(True,)]
    assert days == [(6, 242.0)]
    assert requeue == [(0,)]
    ((cluster, day, partition, value, detail),) = findings
    assert (cluster, day, partition, value) == ("mila", None, None, 1.0)
    assert f"job 4 (2 GPUs): {recorded} recorded, 242.00 counted" in detail
    assert "sacctmgr show runawayjobs" in detail


_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)
P, D = "2026-11-01T", "2026-11-02T"


def _row(job: str, start: str, end: str, elapsed: str, state: str, gpus: int, limit: str) -> str:
    tres = f"billing=8,cpu=8,gres/gpu={gpus},mem=1000M,node=1" if gpus else "cpu=8,node=1"
    return "|".join([
        job, job, "c1", "gpu", "normal", "aA", "aA", "u1", "1001", start, start, start, end,
        elapsed, "0:0", state, "1", "8", tres, tres, limit, "n1", "job",
    ])  # fmt: skip


#: 11-01 export (taken 10:00): job 20 (4 GPUs, limit 1 h) RUNNING since 00:00, Elapsed 10 h: a
#: runaway (10 h > 1 h + 1 h); job 21 (2 GPUs) 02:00–06:00; job 22 (1 GPU, limit 1 h) RUNNING
#: since 04:00, Elapsed 1 h 30 min: 30 min over its limit, within the 1 h grace, not a runaway.
#: Job 20's open batch step (no limit of its own) ends with its allocation.
_DAY1 = [
    _row("20", P + "00:00:00", "Unknown", "10:00:00", "RUNNING", 4, "01:00:00"),
    _row("20.batch", P + "00:00:00", "Unknown", "10:00:00", "RUNNING", 4, ""),
    _row("21", P + "02:00:00", P + "06:00:00", "04:00:00", "COMPLETED", 2, "10:00:00"),
    _row("22", P + "04:00:00", "Unknown", "01:30:00", "RUNNING", 1, "01:00:00"),
]
#: 11-02 export (taken 02:00): job 20 still RUNNING (Elapsed 26 h), job 22 ended 06:00, job 23
#: (1 GPU) 01:00–02:00.
_DAY2 = [
    _row("20", P + "00:00:00", "Unknown", "1-02:00:00", "RUNNING", 4, "01:00:00"),
    _row("20.batch", P + "00:00:00", "Unknown", "1-02:00:00", "RUNNING", 4, ""),
    _row("22", P + "04:00:00", P + "06:00:00", "02:00:00", "TIMEOUT", 1, "01:00:00"),
    _row("23", D + "01:00:00", D + "02:00:00", "01:00:00", "COMPLETED", 1, "10:00:00"),
]


def test_text_runaway_is_capped_and_moves_no_cutoff_full_and_incremental(tmp_path: Path) -> None:
    """``sacct -P`` exports built by hand, cluster c1 of one 8-GPU node, UTC.

    Day 1 (11-01 export): job 20's counted end = 00:00 + 1 h + 1 h = 02:00, 4 × 7,200 = 28,800
    GPU-s (8.00 GPU-h; recorded 4 × 36,000 / 3,600 = 40.00), its batch step's end too. Their
    Elapsed (to 10:00) moves no cut-off: job 22's start + Elapsed = 05:30 and job 21's end 06:00
    do, so the cut-off is 06:00 (it was 10:00). Job 22 stays open, counted to the cut-off: 1 ×
    7,200 GPU-s. Job 21: 2 × 14,400 = 28,800. 11-01 allocated = 28,800 + 28,800 + 7,200 = 64,800
    GPU-s = 18 GPU-h (it was 4 × 36,000 + 2 × 14,400 + 1 × 21,600 = 194,400 = 54 GPU-h to a
    10:00 cut-off).

    Day 2 (11-02 export, incremental): cut-off 11-02 02:00 (job 23's end); job 20 again capped
    at 02:00 on 11-01 (recorded 4 × 93,600 / 3,600 = 104.00 GPU-h); job 22 ended 06:00, 7,200
    GPU-s; 11-01 still 18 GPU-h, 11-02 1 GPU-h. A late CPU-only job (job 30) then leaves job 20
    to the stored resolution; every build equals a full rebuild.
    """
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "c1.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nn1,8,a100,gpu,r1\n"
    )
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    cfg = load_config(write_config(tmp_path, clusters=(("c1", "slurm", "UTC"),)))
    day1, day2, late = (
        inputs / f"c1_sacct_{d}.txt" for d in ("2026-11-01", "2026-11-02", "late_2026-11-02")
    )
    day1.write_text(_HEADER + "\n" + "\n".join(_DAY1) + "\n")
    day2.write_text(_HEADER + "\n" + "\n".join(_DAY2) + "\n")
    late.write_text(
        _HEADER + "\n"
        + _row("30", D + "00:10:00", D + "00:20:00", "00:10:00", "COMPLETED", 0, "01:00:00")
        + "\n"
    )  # fmt: skip
    opts = IngestOptions(cluster="c1", tz="UTC")
    capped = ("RUNNING", dt.datetime(2026, 11, 1, 2, tzinfo=UTC), 28_800.0)
    expect = {
        day1: (dt.datetime(2026, 11, 1, 6, tzinfo=UTC), [18.0], 7_200.0, "40.00"),
        day2: (dt.datetime(2026, 11, 2, 2, tzinfo=UTC), [18.0, 1.0], 7_200.0, "104.00"),
        late: (dt.datetime(2026, 11, 2, 2, tzinfo=UTC), [18.0, 1.0], 7_200.0, "104.00"),
    }
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for path in (day1, day2, late):
            ingest_file(con, "sacct", path, opts)
            rebuild(con, cfg, slurm_part_rows=1)
            cut, daily, job22, recorded = expect[path]
            assert con.execute("SELECT as_of FROM core.build_cutoffs").fetchall() == [(cut,)]
            assert con.execute(
                "SELECT state, end_at, gpu_s FROM core.jobs WHERE job_id = '20'"
            ).fetchall() == [capped], path
            got = con.execute(
                "SELECT allocated_gpu_s / 3600 FROM occupancy_daily ORDER BY day"
            ).fetchall()
            assert [g for (g,) in got] == daily, path
            (got22,) = con.execute(
                "SELECT sum(allocated_gpu_s) FROM analytics.occupancy_hourly"
                " WHERE hour >= '2026-11-01 04:00:00+00' AND hour < '2026-11-01 07:00:00+00'"
            ).fetchone() or (None,)
            assert got22 == 2 * 14_400.0 / 2 + job22, path  # job 21's 04–06 h + job 22's
            assert con.execute(
                "SELECT step, end_at, end_inferred FROM core.slurm_jobs"
                " WHERE job_id = '20' AND step IS NOT NULL"
            ).fetchall() == [("batch", capped[1], True)], path
            ((value, detail),) = con.execute(
                "SELECT value, detail FROM analytics.data_quality"
                " WHERE \"check\" = 'runaway_running_attempts' AND cluster = 'c1'"
            ).fetchall()
            assert value == 1.0, path
            assert f"job 20 (4 GPUs): {recorded} recorded, 8.00 counted" in detail, path
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchone() or (None,)
        assert mode == "incremental"
    assert_equals_full_rebuild(cfg, tmp_path)


def test_a_requeued_runaway_ends_at_the_earlier_of_its_requeue_and_its_cap(tmp_path: Path) -> None:
    """Job 60 (4 GPUs, limit 1 h) RUNNING since 11-01 00:00 with Elapsed 10 h, and a later
    PENDING record of it submitted 05:00 (its requeue). The requeue alone ends the attempt at
    05:00 (4 × 18,000 = 72,000 GPU-s); the runaway cap is 00:00 + 1 h + 1 h = 02:00, earlier:
    4 × 7,200 = 28,800 GPU-s, state REQUEUED. Its end is the cap, not the requeue, so it is
    the runaway finding's (1 attempt), not the requeue finding's (this test expected the
    requeue finding's 1 before: an attempt that did not end at its requeue)."""
    cfg = load_config(write_config(tmp_path, clusters=(("c1", "slurm", "UTC"),)))
    pending = "|".join([
        "60", "60", "c1", "gpu", "normal", "aA", "aA", "u1", "1001", P + "05:00:00",
        P + "05:00:00", "Unknown", "Unknown", "00:00:00", "0:0", "PENDING", "1", "8",
        "billing=8,cpu=8,gres/gpu=4,mem=1000M,node=1", "", "01:00:00", "None assigned", "job",
    ])  # fmt: skip
    path = tmp_path / "c1_sacct_2026-11-01.txt"
    path.write_text(
        _HEADER + "\n"
        + _row("60", P + "00:00:00", "Unknown", "10:00:00", "RUNNING", 4, "01:00:00") + "\n"
        + pending + "\n"
    )  # fmt: skip
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", path, IngestOptions(cluster="c1", tz="UTC"))
        rebuild(con, cfg)
        got = con.execute(
            "SELECT state, end_at, gpu_s FROM core.jobs"
            " WHERE job_id = '60' AND start_at IS NOT NULL"
        ).fetchall()
        checks = dict(
            con.execute(
                'SELECT "check", value FROM analytics.data_quality WHERE "check" IN'
                " ('runaway_running_attempts', 'open_attempts_ended_by_requeue')"
            ).fetchall()
        )
    assert got == [("REQUEUED", dt.datetime(2026, 11, 1, 2, tzinfo=UTC), 28_800.0)]
    assert checks == {"runaway_running_attempts": 1.0}


def test_goodput_job_says_a_runaway_is_counted_to_its_limit(tmp_path: Path) -> None:
    """``goodput job 4`` on Mila's file: the attempt's end is the counted 2021-02-24 10:00:09
    and its outcome says it is a runaway counted to its limit + 1 h (it said "still running"
    beside that end); 242.00 GPU-hours (2 × 435,600 / 3,600)."""
    from typer.testing import CliRunner

    from pipelines.cli.report import report_app
    from pipelines.warehouse import publish_serving_copy

    cfg = load_config(write_config(tmp_path, clusters=(("mila", "slurm", "UTC"),)))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(
            con, "sacct", SARC / "sacct_23.11.5.json", IngestOptions(cluster="mila", tz="UTC")
        )
        rebuild(con, cfg)
    serving = publish_serving_copy(cfg.warehouse_path, cfg.serving_path)
    result = CliRunner().invoke(report_app, ["job", "4", "--db", str(serving)])
    assert result.exit_code == 0, result.output
    assert "a runaway job: counted to its time limit + 1 h" in result.stdout
    assert "still running\n" not in result.stdout
    assert "2021-02-24 10:00:09 UTC" in result.stdout
    assert "242.00" in result.stdout


@pytest.mark.parametrize("later_first", [False, True])
def test_a_runaway_is_capped_whichever_export_is_loaded_last(
    tmp_path: Path, *, later_first: bool
) -> None:
    """Job 20 (4 GPUs, limit 1 h) RUNNING since 11-01 00:00: the 11-01 export shows Elapsed
    1 h 30 min (within the grace, not yet a runaway), the 11-02 export Elapsed 26 h (a runaway),
    with job 23 (1 GPU) 11-02 01:00–02:00. The copy with the longer Elapsed is the later look at
    the same running attempt, whichever file was loaded last (an older export backfilled after
    a newer one). By hand: capped at 00:00 + 1 h + 1 h = 02:00, 4 × 7,200 = 28,800 GPU-s =
    8 GPU-h on 11-01; 11-02 job 23's 1 GPU-h; cut-off 11-02 02:00. Loading the 11-02 export
    first kept the 11-01 copy (the last loaded): not a runaway, counted to the cut-off, 4 × 24 =
    96 GPU-h on 11-01 and 4 × 2 + 1 = 9 on 11-02."""
    cfg = load_config(write_config(tmp_path, clusters=(("c1", "slurm", "UTC"),)))
    day1, day2 = (tmp_path / f"c1_sacct_{d}.txt" for d in ("2026-11-01", "2026-11-02"))
    day1.write_text(
        _HEADER + "\n"
        + _row("20", P + "00:00:00", "Unknown", "01:30:00", "RUNNING", 4, "01:00:00") + "\n"
    )  # fmt: skip
    day2.write_text(
        _HEADER + "\n"
        + _row("20", P + "00:00:00", "Unknown", "1-02:00:00", "RUNNING", 4, "01:00:00") + "\n"
        + _row("23", D + "01:00:00", D + "02:00:00", "01:00:00", "COMPLETED", 1, "10:00:00")
        + "\n"
    )  # fmt: skip
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for path in (day2, day1) if later_first else (day1, day2):
            ingest_file(con, "sacct", path, IngestOptions(cluster="c1", tz="UTC"))
        rebuild(con, cfg)
        job = con.execute(
            "SELECT state, end_at, gpu_s FROM core.jobs WHERE job_id = '20'"
        ).fetchall()
        daily = con.execute(
            "SELECT allocated_gpu_s / 3600 FROM occupancy_daily ORDER BY day"
        ).fetchall()
        cut = con.execute("SELECT as_of FROM core.build_cutoffs").fetchall()
    assert job == [("RUNNING", dt.datetime(2026, 11, 1, 2, tzinfo=UTC), 28_800.0)]
    assert [g for (g,) in daily] == [8.0, 1.0]
    assert cut == [(dt.datetime(2026, 11, 2, 2, tzinfo=UTC),)]
