"""sacct ``Planned`` (``Reserved`` before 23.02) gives a started allocation its eligible time
when the export has no ``Eligible`` field (METRICS.md "Time to start").

``tests/fixtures/slurm-planned/sacct_planned_no_eligible.psv`` (invented, in the shape of a
real university export; see its SOURCE.md) is read with Planned, Submit, Start and End but no
Eligible, in America/New_York (EDT in August: UTC−4). By hand:

- 7310021: Start 14:36:56 − Planned 00:00:32 = eligible 14:36:24 EDT = 18:36:24 UTC; wait 32 s
  (here equal to Start − Submit, 14:36:56 − 14:36:24).
- 7320455 attempt 0: Start 10:43:43 − Planned 00:00:10 = 10:43:33 EDT = 14:43:33 UTC; wait 10 s.
  Its requeued record never started: Planned 05:22:50 there is the time it pended, from an
  eligible time the export does not print, so it has no eligible time.

Before, ``wait_s`` and ``eligible_at`` were NULL for all three and 7310021 had no wait in
``time_to_start_jobs``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.core.slurm_identity import resolve_slurm_jobs
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.slurm import job_view_gaps
from pipelines.slurm._sacct_parse import SLURM_ROW_SCHEMA
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "slurm-planned"
    / "sacct_planned_no_eligible.psv"
)
FIELDS = [
    "JobID", "JobName", "Elapsed", "TotalCPU", "MaxRSS", "NNodes", "NCPUS", "NTasks", "ReqMem",
    "Partition", "Timelimit", "Planned", "AllocTRES", "NodeList", "TRESUsageInMax", "Submit",
    "Start", "End", "State",
]  # fmt: skip
UTC = dt.UTC


def planned_warehouse(folder: Path) -> Config:
    """The fixture loaded (cluster ``uva``, America/New_York) and built in ``folder``; its
    configuration (the serving copy at ``serving_path``)."""
    (folder / "inventory").mkdir()
    (folder / "inventory" / "uva.csv").write_text(
        "host,gpus,gpu_type,partition,rack\ngn-a07,8,a100,gpu-a100,r1\ngn-b02,8,a100,gpu,r1\n"
    )
    (folder / "registry.yaml").write_text("teams: []\n")
    cfg = load_config(write_config(folder, clusters=(("uva", "slurm", "America/New_York"),)))
    opts = IngestOptions(cluster="uva", tz="America/New_York", fields=FIELDS)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "sacct", FIXTURE, opts)
        rebuild(con, cfg)
    return cfg


def test_planned_gives_the_wait_without_eligible(tmp_path: Path) -> None:
    """See the module's docstring: the waits of core.jobs and time_to_start_jobs."""
    cfg = planned_warehouse(tmp_path)
    with connect(cfg.warehouse_path) as con:
        jobs = con.execute(
            "SELECT job_id, attempt, eligible_at, wait_s FROM core.slurm_jobs"
            " WHERE is_allocation ORDER BY job_id, attempt NULLS LAST"
        ).fetchall()
        spells = con.execute(
            "SELECT job_id, attempt, duration_s, started FROM analytics.time_to_start_jobs"
            " ORDER BY job_id, attempt"
        ).fetchall()
    assert jobs == [
        ("7310021", 0, dt.datetime(2026, 8, 11, 18, 36, 24, tzinfo=UTC), 32.0),
        ("7320455", 0, dt.datetime(2026, 8, 16, 14, 43, 33, tzinfo=UTC), 10.0),
        ("7320455", None, None, None),
    ]
    # 7320455 asks no GPU (AllocTRES cpu=8): outside GPU time to start.
    assert spells == [("7310021", 0, 32.0, True)]


def _raw(eligible: dt.datetime | None, start: dt.datetime | None, planned: int | None,
         allocation: bool = True) -> dict[str, object]:  # fmt: skip
    return {
        "ingest_id": "i1", "line_no": 1, "cluster": "c", "job_id": "9", "job_id_raw": "9",
        "step": None if allocation else "batch", "is_allocation": allocation, "gpus": 1.0,
        "submit_at": dt.datetime(2026, 1, 1, 0, 0, tzinfo=UTC), "eligible_at": eligible,
        "start_at": start, "planned_s": planned,
    }  # fmt: skip


def _resolved(rows: list[dict[str, object]]) -> pl.DataFrame:
    teams = pl.LazyFrame(schema={"key": pl.String(), "team": pl.String()})
    frame = pl.DataFrame(rows, schema={**SLURM_ROW_SCHEMA, "ingest_id": pl.String()})
    return resolve_slurm_jobs(frame.lazy(), teams).collect()


def test_eligible_wins_over_planned_and_unstarted_rows_take_none() -> None:
    """Eligible 00:05 printed with Planned 60 s and Start 00:10: wait 00:10 − 00:05 = 300 s (the
    Eligible), not 60 s. Never started with Planned 600 s: no eligible time, no wait."""
    t = dt.datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    start = dt.datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
    out = _resolved([_raw(t, start, 60)])
    assert out.select("eligible_at", "wait_s").row(0) == (t, 300.0)
    out = _resolved([_raw(None, None, 600)])
    assert out.select("eligible_at", "wait_s").row(0) == (None, None)
    # A step's Planned (sacct prints none; were it printed) gives no eligible time either.
    out = _resolved([_raw(None, start, 60, allocation=False)])
    assert out["eligible_at"].to_list() == [None]


def test_missing_eligible_and_planned_is_named() -> None:
    """Submit alone measures no wait: the gap names Eligible and Planned/Reserved."""
    gaps = job_view_gaps(["JobID", "Submit", "Start", "End", "AllocTRES"])
    assert gaps == [
        "missing Eligible or Planned or Reserved: no wait can be measured without Eligible or"
        " Planned (Reserved before Slurm 23.02; Submit alone gives none): time to start and"
        " pending demand stay empty"
    ]
    assert job_view_gaps(["JobID", "Submit", "Planned", "Start", "End", "AllocTRES"]) == []
    assert job_view_gaps(["JobID", "Reserved", "Start", "End", "AllocTRES"]) == []
