"""A running job's Elapsed moves its cluster's data cut-off: sacct's Elapsed of a row still
running is the time it had run when sacct was run, so the export is no earlier than Start +
Elapsed (METRICS.md, "as_of").

One Slurm cluster ``slurm-r`` of one 8-GPU node (UTC), 2026-11-02:

- job 1 (1 GPU) runs 00:00–01:00 (COMPLETED, Elapsed 01:00:00);
- job 2 (2 GPUs) is submitted 08:30:00 and runs from 08:39:07, still RUNNING with Elapsed
  00:10:00: its start is the latest timestamp the file holds;
- job 3 (1 GPU) is submitted 08:35:00 and still pends.

By hand: the cut-off is 08:39:07 + 600 s = 08:49:07 (it was 08:39:07: job 2 had run 0 s and
held 0 GPU-s). Allocated GPU-s: 1 × 3,600 + 2 × 600 = 4,800. Job 3's censored wait: 08:49:07 −
08:35:00 = 847 s. A second, late file (job 4, 1 GPU, 02:00–03:00) built incrementally, job 2's
identity read back from the stored resolution: the cut-off stays 08:49:07, allocated
4,800 + 3,600 = 8,400 GPU-s, equal to a full rebuild.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

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
D = "2026-11-02T"


def _row(job: str, submit: str, start: str, end: str, elapsed: str, state: str, gpus: int) -> str:
    tres = f"billing=8,cpu=8,gres/gpu={gpus},mem=1000M,node=1"
    started = start != "Unknown"
    return "|".join([
        job, job, "slurm-r", "gpu", "normal", "aA", "aA", "u1", "1001", D + submit, D + submit,
        D + start if started else start, D + end if end != "Unknown" else end, elapsed, "0:0",
        state, "1", "8", tres, tres if started else "", "2-00:00:00",
        "r-001" if started else "None assigned", "job",
    ])  # fmt: skip


def test_a_running_jobs_elapsed_moves_the_cut_off(tmp_path: Path) -> None:
    """See the module's docstring: cut-off 08:49:07, 4,800 allocated GPU-s, job 3's censored
    wait 847 s; after a late file built incrementally, 08:49:07 and 8,400 GPU-s."""
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "slurm-r.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nr-001,8,a100,gpu,r1\n"
    )
    (tmp_path / "inputs").mkdir()
    cfg = load_config(write_config(tmp_path, clusters=(("slurm-r", "slurm", "UTC"),)))
    first = tmp_path / "inputs" / "sacct_2026-11-02.txt"
    first.write_text(_HEADER + "\n" + "\n".join([
        _row("1", "00:00:00", "00:00:00", "01:00:00", "01:00:00", "COMPLETED", 1),
        _row("2", "08:30:00", "08:39:07", "Unknown", "00:10:00", "RUNNING", 2),
        _row("3", "08:35:00", "Unknown", "Unknown", "00:00:00", "PENDING", 1),
    ]) + "\n")  # fmt: skip
    late = tmp_path / "inputs" / "sacct_late_2026-11-02.txt"
    late.write_text(
        _HEADER + "\n" + _row("4", "02:00:00", "02:00:00", "03:00:00", "01:00:00", "COMPLETED", 1)
        + "\n"
    )  # fmt: skip
    opts = IngestOptions(cluster="slurm-r", tz="UTC")
    cut = "SELECT as_of FROM core.build_cutoffs WHERE cluster = 'slurm-r'"
    allocated = "SELECT sum(allocated_gpu_s) FROM analytics.occupancy_hourly"
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", first, opts)
        rebuild(con, cfg, slurm_part_rows=1)
        (cut1,) = con.execute(cut).fetchall()[0]
        (alloc1,) = con.execute(allocated).fetchall()[0]
        (wait3,) = con.execute(
            "SELECT duration_s FROM analytics.time_to_start_jobs WHERE job_id = '3'"
        ).fetchall()[0]
        ingest_file(con, "sacct", late, opts)
        rebuild(con, cfg, slurm_part_rows=1)
        (cut2,) = con.execute(cut).fetchall()[0]
        (alloc2,) = con.execute(allocated).fetchall()[0]
        (mode,) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
    at = dt.datetime(2026, 11, 2, 8, 49, 7, tzinfo=dt.UTC)
    assert (cut1, alloc1, wait3) == (at, 4800.0, 847.0)
    assert (mode, cut2, alloc2) == ("incremental", at, 8400.0)
    assert_equals_full_rebuild(cfg, tmp_path)
