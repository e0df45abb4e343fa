"""An attempt RUNNING in one sacct export whose job a later export (plain sacct, no ``-D``) shows
requeued ends at the requeue time, the later record's Submit (METRICS.md "Open Slurm attempts
of a requeued job"), in a full build and alike in an incremental one.

One Slurm cluster ``c1`` of two 8-GPU nodes n1, n2 (57,600 GPU-s an hour), UTC. The 11-01
export shows job 20 (8 GPUs, team tB) RUNNING on n1 from 22:00, no end (Elapsed 30 min: the
export was taken at 22:30); Slurm requeued it at 23:00 (resetting its Submit), and the 11-02
export shows only its latest record:

- ``attempt``: Submit 23:00, Eligible 23:01, run 00:00–02:00 on n2 (COMPLETED). Job 21 (1 GPU,
  tA) waits 22:00–23:30 and runs 23:30–23:59 on n2; job 22 (1 GPU, tA) runs 01:00–02:00 on n1.
- ``pending``: Submit 23:00, Eligible 23:01, PENDING; job 81 (8 GPUs, tA) runs 01:00–02:00 on
  n1.

Cut-off 02:00 (the latest time loaded). By hand, attempt 0 ends at 23:00: REQUEUED, 8 × 3,600
= 28,800 GPU-s in the waterfall's preempted_work leaf at 22:00, none after (it ran on to the
cut-off before: 8 GPUs × 4 h, and in the ``pending`` case the job ran and waited at once).

- ``attempt``: allocated 28,800 | 1,740 (job 21's 29 min) | 57,600 / 2 = 28,800 (attempt 1) |
  28,800 + 3,600 = 32,400 at 22, 23, 00, 01 h (was 28,800 | 30,540 | 57,600 | 61,200,
  occupancy 1.0625 at 01 h); goodput 0 | 1,740 | 28,800 | 32,400. Attempt 1 waits 23:01–00:00
  = 3,540 s: 8 × 3,540 = 28,320 pending GPU-s for tB.
- ``pending``: allocated 28,800 | 0 | 0 | 28,800 (was 28,800 each hour, and 57,600 at 01 h);
  goodput 0 | 0 | 0 | 28,800. The job's censored wait 23:01–02:00 = 10,740 s, 8 × 10,740 =
  85,920 pending GPU-s for tB.

Each hour's 11 leaves sum to its 57,600 GPU-s of capacity; one ``open_attempts_ended_by_requeue``
finding (day 11-01, 1 attempt). Built day by day (11-01 full, 11-02 incrementally, then a
CPU-only job of 11-02 loaded late, job 20 read back from the stored resolution), the same
numbers, equal to a full rebuild.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild

_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
)
P, D = "2026-11-01T", "2026-11-02T"
_REGISTRY = (
    "teams:\n  - team: tA\n    share: 0.5\n    slurm_accounts: [aA]\n"
    "  - team: tB\n    share: 0.5\n    slurm_accounts: [aB]\n"
)


def _row(
    job: str, acct: str, submit: str, eligible: str, start: str, end: str, state: str,
    gpus: int, node: str, elapsed: str = "00:00:00",
) -> str:  # fmt: skip
    tres = f"billing=8,cpu=8,gres/gpu={gpus},mem=1000M,node=1" if gpus else "cpu=8,node=1"
    alloc = "" if start == "Unknown" else tres
    return "|".join([
        job, job, "c1", "gpu", "normal", acct, acct, "u1", "1001", submit, eligible, start, end,
        elapsed, "0:0", state, "1", "8", tres, alloc, "2-00:00:00",
        node if alloc else "None assigned", "job",
    ])  # fmt: skip


_RUNNING = _row("20", "aB", P + "22:00:00", P + "22:00:00", P + "22:00:00", "Unknown", "RUNNING",
                8, "n1", "00:30:00")  # fmt: skip
_DAYS = {
    "attempt": (
        [
            _RUNNING,
            _row("21", "aA", P + "22:00:00", P + "22:00:00", P + "23:30:00", P + "23:59:00",
                 "COMPLETED", 1, "n2"),
        ],
        [
            _row("20", "aB", P + "23:00:00", P + "23:01:00", D + "00:00:00", D + "02:00:00",
                 "COMPLETED", 8, "n2"),
            _row("22", "aA", D + "01:00:00", D + "01:00:00", D + "01:00:00", D + "02:00:00",
                 "COMPLETED", 1, "n1"),
        ],
    ),
    "pending": (
        [_RUNNING],
        [
            _row("20", "aB", P + "23:00:00", P + "23:01:00", "Unknown", "Unknown", "PENDING",
                 8, "n1"),
            _row("81", "aA", D + "01:00:00", D + "01:00:00", D + "01:00:00", D + "02:00:00",
                 "COMPLETED", 8, "n1"),
        ],
    ),
}  # fmt: skip
#: Per case: allocated GPU-s at 22, 23, 00 and 01 h; goodput alike; job 20's wait spells
#: (attempt, seconds, started); tB's pending GPU-s.
_EXPECTED = {
    "attempt": (
        [28800.0, 1740.0, 28800.0, 32400.0],
        [0.0, 1740.0, 28800.0, 32400.0],
        [(0, 0.0, True), (1, 3540.0, True)],
        28320.0,
    ),
    "pending": (
        [28800.0, 0.0, 0.0, 28800.0],
        [0.0, 0.0, 0.0, 28800.0],
        [(0, 0.0, True), (None, 10740.0, False)],
        85920.0,
    ),
}
_CAPACITY = 57600.0


def _figures(con: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """Allocated and occupancy per hour, the preempted_work and goodput leaves per hour, each
    hour's leaves summed and its capacity, job 20's attempts and wait spells, tB's pending
    GPU-s, and the requeue findings."""
    occ = con.execute(
        "SELECT allocated_gpu_s, occupancy, capacity_gpu_s FROM analytics.occupancy_hourly"
        " ORDER BY hour"
    ).fetchall()
    leaves = con.execute(
        "SELECT sum(gpu_s) FILTER (WHERE bucket = 'preempted_work'),"
        " sum(gpu_s) FILTER (WHERE bucket = 'goodput'), sum(gpu_s), max(capacity_gpu_s)"
        " FROM analytics.gpu_waterfall_hourly GROUP BY hour ORDER BY hour"
    ).fetchall()
    attempts = con.execute(
        "SELECT attempt, state, end_at, gpu_s FROM core.jobs WHERE job_id = '20' ORDER BY attempt"
    ).fetchall()
    spells = con.execute(
        "SELECT attempt, duration_s, started FROM analytics.time_to_start_jobs"
        " WHERE job_id = '20' ORDER BY attempt NULLS LAST"
    ).fetchall()
    (pending,) = con.execute(
        "SELECT coalesce(sum(pending_gpu_s), 0) FROM analytics.fair_share_hourly WHERE team = 'tB'"
    ).fetchone() or (None,)
    findings = con.execute(
        "SELECT day, partition, value FROM analytics.data_quality"
        " WHERE \"check\" = 'open_attempts_ended_by_requeue'"
    ).fetchall()
    return occ, leaves, attempts, spells, pending, findings


@pytest.mark.parametrize("case", ["attempt", "pending"])
def test_an_open_attempt_of_a_requeued_job_ends_at_the_requeue(tmp_path: Path, case: str) -> None:
    """See the module's docstring."""
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "c1.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nn1,8,a100,gpu,r1\nn2,8,a100,gpu,r1\n"
    )
    (tmp_path / "registry.yaml").write_text(_REGISTRY)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    cfg = load_config(write_config(tmp_path, clusters=(("c1", "slurm", "UTC"),)))
    files = []
    for day, rows in zip(("2026-11-01", "2026-11-02"), _DAYS[case], strict=True):
        files.append(inputs / f"c1_sacct_{day}.txt")
        files[-1].write_text(_HEADER + "\n" + "\n".join(rows) + "\n")
    late = inputs / "c1_sacct_late_2026-11-02.txt"
    late.write_text(
        _HEADER + "\n" + _row("30", "aA", D + "00:10:00", D + "00:10:00", D + "00:10:00",
                              D + "00:20:00", "COMPLETED", 0, "n2") + "\n"
    )  # fmt: skip
    allocated, goodput, spells, pending = _EXPECTED[case]
    requeued = (0, "REQUEUED", dt.datetime(2026, 11, 1, 23, tzinfo=dt.UTC), 28800.0)
    opts = IngestOptions(cluster="c1", tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", files[0], opts)
        rebuild(con, cfg, slurm_part_rows=1)
        for path in (files[1], late):
            ingest_file(con, "sacct", path, opts)
            rebuild(con, cfg, slurm_part_rows=1)
            (mode,) = con.execute(
                "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
            ).fetchall()[0]
            assert mode == "incremental", path
            occ, leaves, attempts, got_spells, got_pending, findings = _figures(con)
            assert [a for a, _o, _c in occ] == allocated, path
            assert [o for _a, o, _c in occ] == [a / _CAPACITY for a in allocated], path
            assert [c for _a, _o, c in occ] == [_CAPACITY] * 4
            assert [p for p, _g, _s, _c in leaves] == [28800.0, 0.0, 0.0, 0.0], path
            assert [g for _p, g, _s, _c in leaves] == goodput, path
            assert [(s, c) for _p, _g, s, c in leaves] == [(_CAPACITY, _CAPACITY)] * 4, path
            assert attempts[0] == requeued, path
            assert got_spells == spells, path
            assert got_pending == pending, path
            assert findings == [(dt.date(2026, 11, 1), "gpu", 1.0)], path
    assert_equals_full_rebuild(cfg, tmp_path)
