"""Dagster assets materialized for real against temporary DuckDB files."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster_duckdb import DuckDBResource

from pipelines._raw_assets import SettingsResource
from pipelines.config import load_config
from pipelines.definitions import build_defs
from pipelines.ingest import IngestOptions, parse_file
from tests.conftest import Materialized, write_config

pytestmark = pytest.mark.slow


def _one(db: Path | str, query: str) -> object:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(query).fetchall()
    assert rows
    return rows[0][0]


def test_raw_asset_loads_one_partition_and_is_idempotent(fleet_dir: Path, tmp_path: Path) -> None:
    """The sacct asset for one cluster-day loads exactly the parsed rows; a re-run replaces them."""
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    defs = build_defs(cfg)
    asset = defs.get_assets_def(dg.AssetKey(["raw", "slurm_rows"]))
    day_file = sorted((fleet_dir / "inputs" / "slurm-a" / "sacct").glob("*.psv"))[0]
    day = day_file.stem.split("_")[-1]
    expected = parse_file(
        "sacct", day_file, IngestOptions(cluster="slurm-a", tz="America/New_York")
    ).rows.height
    key = dg.MultiPartitionKey({"cluster": "slurm-a", "date": day})
    resources = dict(defs.resources or {})
    resources["duckdb"] = DuckDBResource(database=str(cfg.warehouse_path))
    resources["settings"] = SettingsResource(config_path=str(cfg.path))
    for _ in range(2):
        result = dg.materialize([asset], partition_key=key, resources=resources)
        assert result.success
        mats = result.asset_materializations_for_node(asset.node_def.name)
        assert mats[0].metadata["row_count"].value == expected
        checks = result.get_asset_check_evaluations()
        assert [c.passed for c in checks] == [True]
    assert _one(cfg.warehouse_path, "select count(*) from raw.slurm_rows") == expected
    assert _one(cfg.warehouse_path, "select count(*) from raw.ingests") == 1


def test_full_graph_builds_views_and_serving_copy(materialized: Materialized) -> None:
    """The raw partitions ran as one partition-range run (a backfill), every cluster-day with
    input is materialized, then one core/analytics run; the serving copy holds every view."""
    from pipelines._file_source import partitions_with_input

    cfg = materialized.cfg
    runs = materialized.instance.get_runs()
    assert len(runs) == 2 and all(r.is_success for r in runs)
    todo = partitions_with_input(cfg.cluster_input_dirs())
    done = materialized.instance.get_materialized_partitions(dg.AssetKey(["raw", "slurm_rows"]))
    want = {str(dg.MultiPartitionKey({"cluster": c, "date": d})) for c, d in todo if c == "slurm-a"}
    assert want and want <= done
    serving = cfg.serving_path
    assert serving.exists()
    for view in (
        "jobs",
        "slurm_jobs",
        "rejected_rows",
        "occupancy_hourly",
        "time_to_start_summary",
        "k8s_events",
        "k8s_pods",
        "dcgm_samples",
        "ingests",
    ):
        _one(serving, f"select count(*) from {view}")  # fmt: skip
    assert _one(serving, "select count(*) from jobs where source = 'slurm'") > 0
    assert _one(serving, "select count(*) from jobs where source = 'kubernetes'") > 0
    assert _one(serving, "select count(*) from dcgm_samples") > 0
    assert _one(serving, "select max(occupancy) from occupancy_hourly") <= 1.0 + 1e-9
    assert _one(serving, "select min(occupancy) from occupancy_hourly") >= 0.0


def test_same_gpu_hours_whichever_way_summed(materialized: Materialized) -> None:
    """Σ allocated GPU-s over hours equals Σ over attempts of the GPUs they held × (clipped) time:
    each attempt's pieces of held GPUs (view ``job_holds``: one piece, ``gpus`` over its run,
    for an attempt whose pods held alike; METRICS.md "GPU holding")."""
    serving = materialized.cfg.serving_path
    by_hour = _one(serving, "select sum(allocated_gpu_s) from occupancy_hourly")
    by_job = _one(
        serving,
        "select sum(h.gpus * epoch(least(coalesce(h.end_at, j.as_of), j.as_of) - h.start_at))"
        " from job_holds h join jobs j using (cluster, job_id, attempt)"
        " where j.gpus > 0 and h.gpus > 0 and h.start_at < j.as_of",
    )
    assert isinstance(by_hour, float) and isinstance(by_job, float)
    assert by_hour == pytest.approx(by_job, rel=1e-9)


def test_asset_checks_pass_on_the_fleet(materialized: Materialized) -> None:
    """The data rules (end ≥ start, unique attempt keys, allocated ≤ capacity) pass."""
    instance = materialized.instance
    defs = build_defs(materialized.cfg)
    for key in defs.resolve_asset_graph().asset_check_keys:
        if key.asset_key.path[0] == "raw":
            continue
        ev = instance.event_log_storage.get_latest_asset_check_execution_by_key([key])[key]
        assert ev is not None and ev.evaluation is not None, key
        assert ev.evaluation.passed, key


def test_planted_idle_team_shows_in_job_gpu_summary(materialized: Materialized) -> None:
    """The generator's idle team (recsys, activity 0.01–0.03) has a GPU-second-weighted mean
    activity below θ = 0.05 and most of its observed GPU-seconds idle; other teams are busy."""
    serving = materialized.cfg.serving_path
    with duckdb.connect(str(serving), read_only=True) as con:
        rows = con.execute(
            "select team, sum(observed_gpu_s * mean_activity) / sum(observed_gpu_s),"
            " sum(idle_gpu_s) / sum(observed_gpu_s) from job_gpu_summary"
            " where observed_gpu_s > 0 group by 1"
        ).fetchall()
    by_team = {t: (act, idle) for t, act, idle in rows}
    act, idle_share = by_team["recsys"]
    assert act < 0.05 and idle_share > 0.8
    assert min(a for t, (a, _i) in by_team.items() if t != "recsys") > 0.3


def test_waterfall_conserves_capacity_and_matches_occupancy(materialized: Materialized) -> None:
    """Each cluster-hour's 11 leaves sum to capacity; leaves 3-9 sum to occupancy's allocated."""
    serving = materialized.cfg.serving_path
    worst = _one(
        serving,
        "select max(abs(s - c)) from (select cluster, hour, sum(gpu_s) s,"
        " any_value(capacity_gpu_s) c"
        " from gpu_waterfall_hourly group by all)",
    )
    assert isinstance(worst, float) and worst < 1e-6
    alloc_wf = _one(
        serving,
        "select sum(gpu_s) from gpu_waterfall_hourly"
        " where bucket not in ('down', 'planned_down', 'held', 'idle')",
    )
    alloc_occ = _one(serving, "select sum(allocated_gpu_s) from occupancy_hourly")
    assert alloc_wf == pytest.approx(alloc_occ, rel=1e-6)


#: Views of one scheduler only (their rows are that scheduler's objects), data_quality, which
#: has rows only for findings, large_job_wait_causes, only for jobs of >= 64 GPUs (k8s-b has 64
#: GPUs in all and none waits in the two-day fleet), nvlink_colocation_weekly, only for
#: clusters whose Nodes carry NVLink clique labels (none in this fleet), and the
#: Slurm-on-Kubernetes views (rows only for a Slurm cluster configured to run on Kubernetes;
#: tests/sample_fleet/test_slurm_on_k8s_fleet.py).
_ONE_SCHEDULER_VIEWS = {
    "slurm_jobs", "k8s_events", "k8s_pending_reasons", "k8s_pods", "k8s_workloads",
    "kueue_cluster_queues", "kueue_local_queues", "data_quality", "pending_reason_spells",
    "large_job_wait_causes", "nvlink_colocation_weekly", "slurm_node_map", "slurm_on_k8s_hourly",
}  # fmt: skip


def test_kubernetes_cluster_is_beside_slurm_in_every_view(materialized: Materialized) -> None:
    """Every published view with a ``cluster`` column, but the scheduler-specific ones, has
    rows for both the Slurm cluster (slurm-a) and the Kubernetes cluster (k8s-b) of the fleet:
    one set of metric definitions for both schedulers."""
    serving = materialized.cfg.serving_path
    with duckdb.connect(str(serving), read_only=True) as con:
        views = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT table_name FROM information_schema.columns"
                " WHERE column_name = 'cluster' AND table_schema = 'main' ORDER BY 1"
            ).fetchall()
        ]
        seen = {
            v: {r[0] for r in con.execute(f"SELECT DISTINCT cluster FROM {v}").fetchall()}
            for v in views
            if v not in _ONE_SCHEDULER_VIEWS
        }
    assert len(seen) >= 15, sorted(seen)
    missing = {v: sorted(map(str, c)) for v, c in seen.items() if not {"slurm-a", "k8s-b"} <= c}
    assert not missing, missing
