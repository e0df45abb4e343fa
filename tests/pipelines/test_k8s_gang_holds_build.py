"""A Kueue gang whose pods hold their GPUs over different spans, built end to end: every hourly
table spreads the GPUs each pod held (METRICS.md "GPU holding"), not the attempt's GPUs over
its whole span, so each sums over hours to the attempt's ``gpu_s``. Fixtures:
``tests/fixtures/k8s-gang-holds/SOURCE.md``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from dashboards import queries
from dashboards.queries import Filters
from metrics.holds import HOLD_SCHEMA
from pipelines.analytics.build import rebuild
from pipelines.analytics.incremental import _held_days
from pipelines.config import Config
from pipelines.ingest import ingest_file, ingest_options
from pipelines.report.job_report import job_report_on
from pipelines.warehouse import connect, publish_serving_copy, run_named
from tests.pipelines.test_incremental import assert_equals_full_rebuild
from tests.pipelines.test_k8s_failed_pods_build import _config, _query

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s-gang-holds"
ALLOCATED = (
    "'failed_work_infra', 'failed_work_user', 'preempted_work', 'timeout_work', "
    "'cancelled_work', 'allocated_idle', 'goodput'"
)


def _load(cfg: Config, pods: Path, *, full: bool = True, workloads: Path | None = None) -> None:
    with connect(cfg.warehouse_path) as con:
        ingest_file(
            con,
            "k8s-objects",
            workloads or FIXTURES / "workloads_2026-11-02.json",
            ingest_options(cfg, "k8s-objects", "k"),
        )
        ingest_file(con, "k8s-pods", pods, ingest_options(cfg, "k8s-pods", "k"))
        rebuild(con, cfg, full=full)


def _h(hour: int) -> dt.datetime:
    return dt.datetime(2026, 11, 2, hour, tzinfo=dt.UTC)


def _hourly(cfg: Config) -> dict[str, list[tuple[Any, ...]]]:
    """Per hour: occupancy's allocated, the waterfall's allocated leaves, the waterfall's leaf
    sum and capacity; and the fairness tables' usage."""
    return {
        "occupancy": _query(
            cfg, "SELECT hour, allocated_gpu_s FROM analytics.occupancy_hourly ORDER BY hour"
        ),
        "waterfall": _query(
            cfg,
            f"SELECT hour, sum(gpu_s) FILTER (WHERE bucket IN ({ALLOCATED})),"
            " sum(gpu_s) - max(capacity_gpu_s)"
            " FROM analytics.gpu_waterfall_hourly GROUP BY hour ORDER BY hour",
        ),
        "fair_hourly": _query(
            cfg,
            "SELECT hour, sum(usage_gpu_s) FROM analytics.fair_share_hourly"
            " GROUP BY hour ORDER BY hour",
        ),
        "fairness_weekly": _query(
            cfg, "SELECT usage_gpu_s FROM analytics.fairness_weekly WHERE cluster = 'k'"
        ),
        "gpu_s": _query(cfg, "SELECT gpu_s FROM core.jobs"),
    }


def test_pods_bound_and_ended_apart_count_per_pod_each_hour(tmp_path: Path) -> None:
    """worker-0 (8 GPUs) holds 08:10 - 08:40, worker-1 (8 GPUs) 08:20 - 10:10, the launcher
    none. By hand: 08:10 - 08:20 8 GPUs, 08:20 - 08:40 16, 08:40 - 10:10 8, so hour 8 =
    8 x 600 + 16 x 1,200 + 8 x 1,200 = 33,600, hour 9 = 8 x 3,600 = 28,800, hour 10 =
    8 x 600 = 4,800; Σ = 67,200 = gpu_s (8 x 1,800 + 8 x 6,600). The attempt's 16 GPUs over
    08:10 - 10:10 gave 48,000 / 57,600 / 9,600 = 115,200. Capacity (observed: nodes a, b with
    8 GPUs each) = 57,600 an hour; the waterfall's leaves sum to it."""
    cfg = _config(tmp_path)
    _load(cfg, FIXTURES / "pods_staggered_2026-11-02.json")
    got = _hourly(cfg)
    assert got["gpu_s"] == [(67_200.0,)]
    assert got["occupancy"] == [(_h(8), 33_600.0), (_h(9), 28_800.0), (_h(10), 4_800.0)]
    assert got["waterfall"] == [
        (_h(8), 33_600.0, 0.0),
        (_h(9), 28_800.0, 0.0),
        (_h(10), 4_800.0, 0.0),
    ]
    assert got["fair_hourly"] == [(_h(8), 33_600.0), (_h(9), 28_800.0), (_h(10), 4_800.0)]
    assert got["fairness_weekly"] == [(67_200.0,)]


def test_pods_bound_apart_ending_together(tmp_path: Path) -> None:
    """Both workers end at 10:10; worker-1 binds 10 minutes after worker-0. By hand: hour 8 =
    8 x 3,000 + 8 x 2,400 = 43,200 (not 16 x 3,000 = 48,000), hour 9 = 57,600, hour 10 =
    9,600; Σ = 110,400 = gpu_s (8 x 7,200 + 8 x 6,600)."""
    cfg = _config(tmp_path)
    _load(cfg, FIXTURES / "pods_same_end_2026-11-02.json")
    got = _hourly(cfg)
    assert got["gpu_s"] == [(110_400.0,)]
    assert got["occupancy"] == [(_h(8), 43_200.0), (_h(9), 57_600.0), (_h(10), 9_600.0)]
    assert got["waterfall"] == [
        (_h(8), 43_200.0, 0.0),
        (_h(9), 57_600.0, 0.0),
        (_h(10), 9_600.0, 0.0),
    ]
    assert got["fairness_weekly"] == [(110_400.0,)]


def _running_workloads(tmp_path: Path) -> Path:
    """The Workload seen at 08:40: admitted, not yet Finished (its Finished condition of 10:10
    would move the cluster's cut-off there: METRICS.md "as_of")."""
    doc = json.loads((FIXTURES / "workloads_2026-11-02.json").read_text(encoding="utf-8"))
    for item in doc["items"]:
        conds = item["status"]["conditions"]
        item["status"]["conditions"] = [c for c in conds if c["type"] != "Finished"]
    path = tmp_path / "workloads_2026-11-02.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _running_snapshot(tmp_path: Path) -> Path:
    """The staggered pods seen at 08:40: worker-0 over, the launcher and worker-1 running
    (no finish; the cluster's cut-off is then 08:40, worker-0's finish)."""
    doc = json.loads((FIXTURES / "pods_staggered_2026-11-02.json").read_text(encoding="utf-8"))
    for item in doc["items"]:
        if item["metadata"]["name"] == "train-worker-0":
            continue
        item["status"]["phase"] = "Running"
        for cs in item["status"]["containerStatuses"]:
            cs["ready"] = True
            cs["state"] = {"running": {"startedAt": cs["state"]["terminated"]["startedAt"]}}
    path = tmp_path / "pods_2026-11-02.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_running_gang_counts_its_pods_to_the_cutoff_and_incremental_equals_full(
    tmp_path: Path,
) -> None:
    """At the 08:40 snapshot the attempt runs: 8 GPUs 08:10 - 08:20 and 16 GPUs 08:20 - 08:40
    (worker-1 held on past the cut-off): hour 8 = 4,800 + 19,200 = 24,000, not 16 x 1,800 =
    28,800. The final snapshot, built incrementally on top, equals a full build."""
    cfg = _config(tmp_path)
    _load(cfg, _running_snapshot(tmp_path), workloads=_running_workloads(tmp_path))
    got = _hourly(cfg)
    assert got["occupancy"] == [(_h(8), 24_000.0)]
    assert got["waterfall"] == [(_h(8), 24_000.0, 0.0)]
    _load(cfg, FIXTURES / "pods_staggered_2026-11-02.json", full=False)
    assert _hourly(cfg)["occupancy"] == [
        (_h(8), 33_600.0),
        (_h(9), 28_800.0),
        (_h(10), 4_800.0),
    ]
    assert assert_equals_full_rebuild(cfg, tmp_path) > 10


def _published(cfg: Config) -> str:
    """The serving copy of ``cfg``'s warehouse, published (names pseudonymised)."""
    return str(publish_serving_copy(cfg.warehouse_path, cfg.serving_path))


def _read(path: str, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(path, read_only=True) as con:
        return con.execute(sql).fetchall()


def test_the_pieces_are_stored_and_every_reader_spreads_them(tmp_path: Path) -> None:
    """The staggered gang's pieces are stored per node (``core.job_holds``: 8 GPUs on a
    08:10 - 08:40, 8 GPUs on b 08:20 - 10:10; none on the launcher's c) and published in the
    serving copy, whose ``job_holds`` view adds them up (8 GPUs 08:10 - 08:20, 16 GPUs
    08:20 - 08:40, 8 GPUs 08:40 - 10:10), and every
    reader of stored attempts spreads them, as the waterfall does: by hand 8 x 600 +
    16 x 1,200 + 8 x 5,400 = 67,200 GPU-s = 18.667 GPU-h (the attempt's 16 GPUs over
    08:10 - 10:10 gave 115,200 GPU-s = 32 GPU-h): the day's allocated GPU-seconds of
    ``telemetry_coverage_team_daily`` (team and all-teams rows), the team's allocated
    GPU-hours on the Overview page, the Waste page's lost-work table, the job report's GPU-s
    so far; over 09:00 - 10:00 alone 8 x 3,600 = 28,800 GPU-s = 8 GPU-h (not 16)."""
    cfg = _config(tmp_path)
    _load(cfg, FIXTURES / "pods_staggered_2026-11-02.json")
    pieces = [(_h(8).replace(minute=10), _h(8).replace(minute=20), 8.0),
              (_h(8).replace(minute=20), _h(8).replace(minute=40), 16.0),
              (_h(8).replace(minute=40), _h(10).replace(minute=10), 8.0)]  # fmt: skip
    assert _query(
        cfg, "SELECT host, start_at, end_at, gpus FROM core.job_holds ORDER BY start_at"
    ) == [
        ("a", _h(8).replace(minute=10), _h(8).replace(minute=40), 8.0),
        ("b", _h(8).replace(minute=20), _h(10).replace(minute=10), 8.0),
    ]
    assert _query(cfg, "SELECT team, allocated_gpu_s FROM telemetry_coverage_team_daily") in (
        [("unattributed", 67_200.0), (None, 67_200.0)],
        [(None, 67_200.0), ("unattributed", 67_200.0)],
    )
    path = _published(cfg)
    assert _read(path, "SELECT start_at, end_at, gpus FROM job_holds ORDER BY start_at") == pieces
    assert _read(path, "SELECT sum(gpus * epoch(end_at - start_at)) FROM job_holds") == [
        (67_200.0,)
    ]
    every = Filters()
    team = queries.overview_team_allocated(path, every)
    assert team.select("team", "attempts").rows() == [("unattributed", 1)]
    assert team["allocated_gpu_h"].to_list() == pytest.approx([67_200 / 3600])
    lost = queries.lost_work_by_team(path, every)
    assert lost.select("end_state", "attempts").rows() == [("completed", 1)]
    assert lost["gpu_h"].to_list() == pytest.approx([67_200 / 3600])
    with duckdb.connect(path, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        report = job_report_on(con, "team-a/job-train-abc12")
    assert report.attempts["gpu_s_so_far"].to_list() == [67_200.0]
    # the 9 o'clock hour alone: worker-1's 8 GPUs
    hour9 = {"start": _h(9), "end": _h(10), "cluster": None, "team": None}
    with duckdb.connect(path, read_only=True) as con:
        got = run_named(con, "dashboard/overview_team_allocated", hour9)
        lost9 = run_named(con, "dashboard/lost_work_by_team", hour9)
    assert got["allocated_gpu_h"].to_list() == pytest.approx([8.0])
    assert lost9["gpu_h"].to_list() == pytest.approx([8.0])


def _running_workload(tmp_path: Path) -> Path:
    """The Workload as seen at 08:40: admitted, not finished."""
    doc = json.loads((FIXTURES / "workloads_2026-11-02.json").read_text(encoding="utf-8"))
    for item in doc["items"]:
        conds = item["status"]["conditions"]
        item["status"]["conditions"] = [c for c in conds if c["type"] != "Finished"]
    path = tmp_path / "workloads_2026-11-02.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_running_gangs_gpu_seconds_so_far_are_its_pieces(tmp_path: Path) -> None:
    """Seen at 08:40 (the Workload not finished, worker-1 running), the attempt has no gpu_s
    yet: the Jobs page and the job report count its pieces to the cut-off, 8 x 600 +
    16 x 1,200 = 24,000 GPU-s (worker-1's piece open: end NULL), not 16 GPUs x 1,800 s =
    28,800."""
    cfg = _config(tmp_path)
    with connect(cfg.warehouse_path) as con:
        ingest_file(
            con, "k8s-objects", _running_workload(tmp_path), ingest_options(cfg, "k8s-objects", "k")
        )
        ingest_file(
            con, "k8s-pods", _running_snapshot(tmp_path), ingest_options(cfg, "k8s-pods", "k")
        )
        rebuild(con, cfg, full=True)
    assert _query(cfg, "SELECT end_at, gpu_s FROM core.jobs") == [(None, None)]
    assert _query(cfg, "SELECT end_at, gpus FROM core.job_holds WHERE end_at IS NULL") == [
        (None, 8.0)
    ]
    path = _published(cfg)
    jobs = queries.job_list(path, Filters())
    assert jobs["gpu_s"].to_list() == [24_000.0]
    with duckdb.connect(path, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        report = job_report_on(con, "team-a/job-train-abc12")
    assert report.attempts["gpu_s_so_far"].to_list() == [24_000.0]


def test_the_incremental_plan_reaches_the_days_of_pieces_past_an_end() -> None:
    """Attempt t ran 03-01 20:00 - 23:55, its pods holding 8 GPUs until 03-02 00:05 (a grace
    period): its row changed (its state, say), its pieces not: the plan's days are those of
    its pieces, 03-01 and 03-02 (its row's span alone, 03-01, left the 8 x 300 GPU-s of
    03-02's 00:00 hour as the old leaf). Attempt u's row is the same but its last piece,
    03-05 22:00 - 03-06 01:00 before, is held at the cut-off (03-07 12:00) now: 03-05 to
    03-07 (the old piece's days among them). Attempt v, unchanged: no day."""
    ts = pl.Datetime("us", "UTC")

    def t(d: int, h: int, m: int = 0) -> dt.datetime:
        return dt.datetime(2026, 3, d, h, m, tzinfo=dt.UTC)

    old = pl.DataFrame(
        [("c", "t", 0, t(1, 20), t(1, 23, 55), 16.0), ("c", "t", 0, t(1, 23, 55), t(2, 0, 5), 8.0),
         ("c", "u", 0, t(5, 20), t(5, 22), 16.0), ("c", "u", 0, t(5, 22), t(6, 1), 8.0),
         ("c", "v", 0, t(9, 20), t(9, 22), 16.0), ("c", "v", 0, t(9, 22), t(10, 1), 8.0)],
        schema=HOLD_SCHEMA, orient="row",
    )  # fmt: skip
    new = old.with_columns(
        pl.when((pl.col("job_id") == "u") & (pl.col("start_at") == t(5, 22)))
        .then(None)
        .otherwise(pl.col("end_at"))
        .alias("end_at")
    )
    changed = pl.DataFrame({"cluster": ["c"], "job_id": ["t"], "attempt": [0]})
    cut = pl.DataFrame({"cluster": ["c"], "as_of": [t(7, 12)]}, schema_overrides={"as_of": ts})
    days = _held_days(old, new, changed, (cut,))
    assert days == {"c": {dt.date(2026, 3, d) for d in (1, 2, 5, 6, 7)}}
    assert _held_days(old, old, changed.clear(), (cut,)) == {}


def _failed_workloads(tmp_path: Path) -> Path:
    """The Workload finished ``Failed`` at 10:10 (the attempt ends FAILED)."""
    doc = json.loads((FIXTURES / "workloads_2026-11-02.json").read_text(encoding="utf-8"))
    for item in doc["items"]:
        for cond in item["status"]["conditions"]:
            if cond["type"] == "Finished":
                cond["reason"] = "Failed"
                cond["message"] = "Job failed"
    path = tmp_path / "workloads_2026-11-02.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_failed_gangs_lost_gpu_seconds_per_node_are_its_pieces(tmp_path: Path) -> None:
    """The staggered gang ending FAILED (no XID: ``failed_work_user``, whole attempt lost):
    the waterfall loses its pieces, 8 x 600 + 16 x 1,200 + 8 x 5,400 = 67,200 GPU-s, and so
    do ``node_signals_daily`` and ``node_reliability``, each node its own pieces: a
    (worker-0, 8 GPUs 08:10 - 08:40) 8 x 1,800 = 14,400, b (worker-1, 8 GPUs 08:20 - 10:10)
    8 x 6,600 = 52,800, c (the CPU-only launcher's) 0 (before: 67,200 split evenly, 22,400 on
    each of a, b, c; before that 16 GPUs x 7,200 s = 115,200, 38,400 a node). Each node still
    counts the attempt once."""
    cfg = _config(tmp_path)
    _load(cfg, FIXTURES / "pods_staggered_2026-11-02.json", workloads=_failed_workloads(tmp_path))
    assert _query(cfg, "SELECT state, gpu_s FROM core.jobs") == [("FAILED", 67_200.0)]
    assert _query(
        cfg,
        "SELECT sum(gpu_s) FROM analytics.gpu_waterfall_hourly WHERE bucket = 'failed_work_user'",
    ) == [(67_200.0,)]
    assert _query(cfg, "SELECT host, lost_gpu_s FROM analytics.node_reliability ORDER BY host") == [
        ("a", 14_400.0),
        ("b", 52_800.0),
        ("c", 0.0),
    ]
    assert _query(cfg, "SELECT host, attempts FROM analytics.node_reliability ORDER BY host") == [
        ("a", 1),
        ("b", 1),
        ("c", 1),
    ]
    assert _query(cfg, "SELECT sum(lost_gpu_s) FROM analytics.node_signals_daily") == [(67_200.0,)]


def _alike_pods(tmp_path: Path) -> Path:
    """The gang's pods all bound at 08:10 and ended at 10:10 (worker-1 bound with the others):
    its pods held alike, 16 GPUs over the attempt's span."""
    doc = json.loads((FIXTURES / "pods_same_end_2026-11-02.json").read_text(encoding="utf-8"))
    for item in doc["items"]:
        item["status"]["startTime"] = "2026-11-02T08:11:00Z"
        item["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-02T08:10:00Z"
        for cs in item["status"]["containerStatuses"]:
            cs["state"]["terminated"]["startedAt"] = "2026-11-02T08:11:00Z"
    path = tmp_path / "pods_alike_2026-11-02.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_failed_gang_held_alike_loses_its_gpu_seconds_on_its_gpu_pods_nodes(
    tmp_path: Path,
) -> None:
    """The gang ending FAILED with all its pods bound at 08:10 and ended at 10:10 (7,200 s):
    16 GPUs over its span, gpu_s 16 x 7,200 = 115,200, stored as pieces per node (8 GPUs on a
    and on b 08:10 - 10:10, none on the CPU-only launcher's c: its node list does not hold
    them evenly), so ``node_reliability`` loses a 8 x 7,200 = 57,600 GPU-s, b 57,600, c 0
    (before: no piece, 115,200 split evenly over a, b, c, 38,400 each). The hourly tables are
    the attempt's 16 GPUs over its span, as without pieces: hour 8 16 x 3,000 = 48,000, hour 9
    16 x 3,600 = 57,600, hour 10 16 x 600 = 9,600. Built incrementally over the staggered
    pods, it equals a full build."""
    cfg = _config(tmp_path)
    failed = _failed_workloads(tmp_path)
    _load(cfg, FIXTURES / "pods_staggered_2026-11-02.json", workloads=failed)
    _load(cfg, _alike_pods(tmp_path), full=False, workloads=failed)
    assert _query(cfg, "SELECT state, gpu_s FROM core.jobs") == [("FAILED", 115_200.0)]
    assert _query(cfg, "SELECT host, start_at, end_at, gpus FROM core.job_holds ORDER BY host") == [
        ("a", _h(8).replace(minute=10), _h(10).replace(minute=10), 8.0),
        ("b", _h(8).replace(minute=10), _h(10).replace(minute=10), 8.0),
    ]
    got = _hourly(cfg)
    assert got["occupancy"] == [(_h(8), 48_000.0), (_h(9), 57_600.0), (_h(10), 9_600.0)]
    assert got["waterfall"] == [
        (_h(8), 48_000.0, 0.0),
        (_h(9), 57_600.0, 0.0),
        (_h(10), 9_600.0, 0.0),
    ]
    assert got["fair_hourly"] == [(_h(8), 48_000.0), (_h(9), 57_600.0), (_h(10), 9_600.0)]
    assert got["fairness_weekly"] == [(115_200.0,)]
    assert _query(
        cfg,
        "SELECT sum(gpu_s) FROM analytics.gpu_waterfall_hourly WHERE bucket = 'failed_work_user'",
    ) == [(115_200.0,)]
    assert _query(
        cfg, "SELECT host, attempts, lost_gpu_s FROM analytics.node_reliability ORDER BY host"
    ) == [("a", 1, 57_600.0), ("b", 1, 57_600.0), ("c", 1, 0.0)]
    assert _query(cfg, "SELECT sum(lost_gpu_s) FROM analytics.node_signals_daily") == [(115_200.0,)]
    assert assert_equals_full_rebuild(cfg, tmp_path) > 10
