"""The data cut-off, the time-to-start summary's groups, the dashboard's spells of a window and
the fleet rows' cut-off, each on a small case computed by hand.

Two Slurm clusters of one 8-GPU node each (UTC), teams tA (account aA) and tB (aB), share 0.5:

- ``slurm-h`` (2026-11-02): job 801 (4 GPUs) runs from 00:00 and is still running; 803 (1 GPU)
  pends from 00:30; 805 (1 GPU) runs 20:00–21:00; 802 (1 GPU) is submitted at 21:00 with
  ``--begin`` 11-03 12:00 (its Eligible), still pending. The newest thing the data know is
  21:00: the cut-off. 803's censored wait is 20.5 h = 73,800 s; allocated GPU-hours 4 × 21 + 1 = 85;
  802 is not yet eligible there (excluded).
- ``slurm-e`` (2026-11-02): job 901 (1 GPU) eligible 01:00, runs 01:20–02:00; job 902 (1 GPU)
  submitted 01:00, Eligible ``Unknown``, cancelled at 03:00 (never eligible: excluded); cut-off
  03:00.
- ``slurm-f`` (2026-11-02): 601 (tA, 8 GPUs) runs 02:00–03:00; 602 (tB, 4 GPUs) pends from
  02:00; 603 (tB, 2 GPUs) is submitted at 06:00 (the cut-off). After the last allocation tB's
  queue waits 03:00–06:00: those hours are the cluster's. Fair shares by hand: hour 02 water-
  fills 4 and 4 (tA uses 8, tB waits for 4), hours 03–05 give tB its 4: F(tA) = 4, F(tB) = 16
  GPU-hours (before: hour 02 only, F(tB) = 4).
- ``slurm-g`` (2026-11-02): every job still waits: 701 (tA, 8 GPUs) from 00:00, 702 (tA, 8 GPUs)
  from 03:00 (the cut-off). Two censored spells, 10,800 s and 0 s; F(tA) = 3 × 8 = 24
  GPU-hours, none used (before: no time-to-start and no fairness row for the cluster).
- ``slurm-k`` (2026-11-02, 16 GPUs): array 300 of tA with throttle ``%2``: tasks 300_1 and
  300_2 (4 GPUs each) run from 00:00 and still run; ``300_[3-4%2]`` pends, eligible 00:00; job
  310 of tB (8 GPUs) runs 00:00–03:00 (the cut-off). Tasks 3 and 4 wait for their array's
  slots, not for the scheduler: no eligible time (excluded), no demand. Per hour tA uses 8
  and tB 8 of 16, both all they ask: Jain 1.0, unmet 0 (before: 8 GPUs of tA pending every
  hour, Jain 0.9, unmet 0.333, and two censored 3-hour waits).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from dashboards.queries import Filters, wait_percentiles
from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)
D = "2026-11-02T"


def _row(cluster: str, job: str, acct: str, submit: str, eligible: str, start: str, end: str,
         state: str, gpus: int, node: str, raw: str | None = None) -> str:  # fmt: skip
    req = f"billing=8,cpu=8,gres/gpu={gpus},mem=1000M,node=1"
    alloc = "" if start == "Unknown" else req
    return "|".join([
        job, raw or job, cluster, "gpu", "normal", acct, acct, "u1", "1001", submit, eligible,
        start, end, "00:00:00", "0:0", state, "1", "8", req, alloc, "2-00:00:00",
        node if alloc else "None assigned", "job",
    ])  # fmt: skip


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("cutoffs")
    (base / "inventory").mkdir()
    (base / "registry.yaml").write_text(
        "teams:\n  - team: tA\n    share: 0.5\n    slurm_accounts: [aA]\n"
        "  - team: tB\n    share: 0.5\n    slurm_accounts: [aB]\n"
    )
    files = {
        "slurm-h": [
            _row("slurm-h", "801", "aA", D + "00:00:00", D + "00:00:00", D + "00:00:00",
                 "Unknown", "RUNNING", 4, "h-001"),
            _row("slurm-h", "803", "aA", D + "00:30:00", D + "00:30:00", "Unknown", "Unknown",
                 "PENDING", 1, "h-001"),
            _row("slurm-h", "805", "aA", D + "20:00:00", D + "20:00:00", D + "20:00:00",
                 D + "21:00:00", "COMPLETED", 1, "h-001"),
            _row("slurm-h", "802", "aA", D + "21:00:00", "2026-11-03T12:00:00", "Unknown",
                 "Unknown", "PENDING", 1, "h-001"),
        ],
        "slurm-e": [
            _row("slurm-e", "901", "aB", D + "01:00:00", D + "01:00:00", D + "01:20:00",
                 D + "02:00:00", "COMPLETED", 1, "e-001"),
            _row("slurm-e", "902", "aB", D + "01:00:00", "Unknown", "Unknown", D + "03:00:00",
                 "CANCELLED by 1001", 1, "e-001"),
        ],
        "slurm-f": [
            _row("slurm-f", "601", "aA", D + "02:00:00", D + "02:00:00", D + "02:00:00",
                 D + "03:00:00", "COMPLETED", 8, "f-001"),
            _row("slurm-f", "602", "aB", D + "02:00:00", D + "02:00:00", "Unknown", "Unknown",
                 "PENDING", 4, "f-001"),
            _row("slurm-f", "603", "aB", D + "06:00:00", D + "06:00:00", "Unknown", "Unknown",
                 "PENDING", 2, "f-001"),
        ],
        "slurm-g": [
            _row("slurm-g", "701", "aA", D + "00:00:00", D + "00:00:00", "Unknown", "Unknown",
                 "PENDING", 8, "g-001"),
            _row("slurm-g", "702", "aA", D + "03:00:00", D + "03:00:00", "Unknown", "Unknown",
                 "PENDING", 8, "g-001"),
        ],
        "slurm-k": [
            _row("slurm-k", "300_1", "aA", D + "00:00:00", D + "00:00:00", D + "00:00:00",
                 "Unknown", "RUNNING", 4, "k-001", raw="300"),
            _row("slurm-k", "300_2", "aA", D + "00:00:00", D + "00:00:00", D + "00:00:00",
                 "Unknown", "RUNNING", 4, "k-001", raw="301"),
            _row("slurm-k", "300_[3-4%2]", "aA", D + "00:00:00", D + "00:00:00", "Unknown",
                 "Unknown", "PENDING", 4, "k-001", raw="300"),
            _row("slurm-k", "310", "aB", D + "00:00:00", D + "00:00:00", D + "00:00:00",
                 D + "03:00:00", "COMPLETED", 8, "k-002"),
        ],
    }  # fmt: skip
    (base / "inputs").mkdir()
    cfg = load_config(write_config(base, clusters=tuple((c, "slurm", "UTC") for c in files)))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for cluster, rows in files.items():
            host = f"{cluster[-1]}-001"
            (base / "inventory" / f"{cluster}.csv").write_text(
                f"host,gpus,gpu_type,partition,rack\n{host},8,a100,gpu,r1\n"
                + ("k-002,8,a100,gpu,r1\n" if cluster == "slurm-k" else "")
            )
            path = base / "inputs" / f"{cluster}_sacct_2026-11-02.txt"
            path.write_text(_HEADER + "\n" + "\n".join(rows) + "\n")
            ingest_file(con, "sacct", path, IngestOptions(cluster=cluster, tz="UTC"))
        rebuild(con, cfg)
    return cfg.warehouse_path


def _q(db: Path, sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _utc(hour: int, day: int = 2) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, tzinfo=dt.UTC)


def test_a_begin_time_ahead_is_no_cut_off(warehouse: Path) -> None:
    """The cut-off is 21:00, not 802's begin time 11-03 12:00 (before: waits and running
    attempts ran on to it, 803's wait 127,800 s and 145 GPU-hours allocated)."""
    cuts = dict(_q(warehouse, "SELECT cluster, as_of FROM core.build_cutoffs"))
    assert cuts["slurm-h"] == _utc(21)
    waits = dict(
        _q(warehouse, "SELECT job_id, duration_s FROM analytics.time_to_start_jobs"
                      " WHERE cluster = 'slurm-h' AND NOT started")
    )  # fmt: skip
    assert waits["803"] == 73_800.0
    allocated = _q(
        warehouse,
        "SELECT sum(allocated_gpu_s) / 3600 FROM analytics.occupancy_hourly"
        " WHERE cluster = 'slurm-h'",
    )
    assert allocated == [(85.0,)]


def test_a_spell_without_eligible_time_is_no_week_of_its_own(warehouse: Path) -> None:
    """902 never became eligible (excluded; ``jobs`` counts the others: 901). The summary has
    one row per cluster and bucket for all weeks (before: a second one, its week NULL from the
    unknown eligible time, counting 902 as excluded again)."""
    rows = _q(
        warehouse,
        "SELECT jobs, excluded FROM analytics.time_to_start_summary WHERE cluster = 'slurm-e'"
        " AND week IS NULL AND partition IS NULL AND team IS NULL AND bucket = '1'",
    )
    assert rows == [(1, 1)]


def test_a_never_eligible_spell_is_in_the_window_it_ended_in(warehouse: Path) -> None:
    """The dashboard's spells of 11-03 hold none of 11-02's (before: 902, never eligible, was
    counted as excluded in every window); those of 11-02 hold 901 (a spell) and 902
    (excluded)."""
    later = wait_percentiles(
        str(warehouse), Filters(start=dt.date(2026, 11, 3), end=dt.date(2026, 11, 3),
                                cluster="slurm-e")
    )  # fmt: skip
    assert later.height == 0 or later["excluded"].sum() == 0
    same = wait_percentiles(
        str(warehouse), Filters(start=dt.date(2026, 11, 2), end=dt.date(2026, 11, 2),
                                cluster="slurm-e")
    )  # fmt: skip
    every = same.filter(same["bucket"] == "all")
    assert every.select("spells", "excluded").rows() == [(1, 1)]


def test_the_fleet_rows_cut_off_is_the_earliest_clusters(warehouse: Path) -> None:
    """The fleet rows (cluster NULL) of the fairness views carry the earliest cluster cut-off,
    03:00 (METRICS.md "Complete periods"), not the latest, 21:00."""
    for view in ("fairness_weekly", "fairness_summary_weekly"):
        cuts = _q(warehouse, f"SELECT DISTINCT as_of FROM {view} WHERE cluster IS NULL")
        assert cuts == [(_utc(3),)], view


def test_a_queue_after_the_last_allocation_has_its_hours(warehouse: Path) -> None:
    """slurm-f's hours run to the cut-off while tB waits: 02:00–05:00, and the week's fair
    shares are F(tA) = 4, F(tB) = 16 GPU-hours."""
    hours = _q(
        warehouse,
        "SELECT min(hour), max(hour) FROM analytics.occupancy_hourly WHERE cluster = 'slurm-f'",
    )
    assert hours == [(_utc(2), _utc(5))]
    fair = _q(
        warehouse,
        "SELECT team, fair_gpu_s / 3600, used_gpu_s / 3600 FROM fairness_weekly"
        " WHERE cluster = 'slurm-f' AND \"window\" = 'week' ORDER BY team",
    )
    assert fair == [("tA", 4.0, 8.0), ("tB", 16.0, 0.0)]


def test_a_cluster_whose_jobs_all_wait_has_its_waits_and_shares(warehouse: Path) -> None:
    """slurm-g: its hours 00:00–02:00 (to the cut-off 03:00), two censored spells of 10,800 s
    and 0 s, and tA's fair share 24 GPU-hours with nothing used (ratio 0)."""
    spells = _q(
        warehouse,
        "SELECT job_id, duration_s, started FROM analytics.time_to_start_jobs"
        " WHERE cluster = 'slurm-g' ORDER BY job_id",
    )
    assert spells == [("701", 10_800.0, False), ("702", 0.0, False)]
    fair = _q(
        warehouse,
        "SELECT team, fair_gpu_s / 3600, used_gpu_s, entitlement_ratio FROM fairness_weekly"
        " WHERE cluster = 'slurm-g' AND \"window\" = 'week'",
    )
    assert fair == [("tA", 24.0, 0.0, 0.0)]


def test_tasks_waiting_for_their_arrays_throttle_are_no_scheduler_wait(warehouse: Path) -> None:
    """slurm-k: 300_3 and 300_4 have no eligible time while 300_1 and 300_2 fill the
    array's 2 slots; the week's Jain 1.0, unmet 0."""
    spells = _q(
        warehouse,
        "SELECT job_id, eligible_at, started FROM analytics.time_to_start_jobs"
        " WHERE cluster = 'slurm-k' AND job_id LIKE '300_%' ORDER BY job_id",
    )
    assert spells == [
        ("300_1", _utc(0), True),
        ("300_2", _utc(0), True),
        ("300_3", None, None),  # excluded: neither started nor censored
        ("300_4", None, None),
    ]
    summary = _q(
        warehouse,
        "SELECT jain_index, unmet_entitlement FROM fairness_summary_weekly"
        " WHERE cluster = 'slurm-k' AND \"window\" = 'week'",
    )
    assert summary == [(1.0, 0.0)]
