"""The ``policy_changes`` view after ``goodput ingest slurm-state``'s path (ingest, rebuild),
from the real Slurm 22.05 captures of ``tests/fixtures/slurm-policy/`` (README there)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import polars as pl

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import FIXTURES, Materialized, write_config

POLICY = FIXTURES / "slurm-policy"
#: Fixture file → the name the live state source spools it under.
SPOOLED = {
    "live_transactions_withassoc.psv": "transactions_2026-12-03.txt",
    "live_tres.psv": "tres_2026-12-03.txt",
    "live_scontrol_config_before.txt": "scontrol_config_2026-12-02.txt",
    "live_scontrol_config_after.txt": "scontrol_config_2026-12-03.txt",
}


def _view(tmp_path: Path) -> pl.DataFrame:
    cfg = load_config(write_config(tmp_path, clusters=(("testgpu", "slurm", "UTC"),)))
    state = tmp_path / "inputs" / "testgpu" / "slurm_state"
    state.mkdir(parents=True)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for fixture, name in SPOOLED.items():
            shutil.copy(POLICY / fixture, state / name)
            ingest_file(con, "slurm-state", state / name, IngestOptions(cluster="testgpu"))
        rebuild(con, cfg)
        return con.sql("SELECT * FROM policy_changes").pl()


def test_the_view_holds_the_captured_changes(tmp_path: Path) -> None:
    """The hand changes of the capture (fixture README): team-b shares 30 → 45, alice's
    max_jobs unset → 3, QOS normal gres/gpu unset → 4, QOS high gres/gpu 24 → 16 and cpu
    unset → 64 by root at slurmdbd's times; PriorityWeightFairShare 10000 → 20000 and the two
    backfill parameters between the snapshots (1796284801, 1796284804], no actor."""
    view = _view(tmp_path)
    late = view.filter(pl.col("changed_at").dt.epoch("s") >= 1796284801)
    got = late.select(
        "object", "key", "old", "new", "actor", pl.col("changed_at").dt.epoch("s"),
        pl.col("changed_after").dt.epoch("s"), "source",
    ).sort("changed_at", "object", "key").rows()  # fmt: skip
    tx, conf = "sacctmgr list transactions", "scontrol show config"
    assert got == [
        ("account=team-b", "shares", "30", "45", "root", 1796284801, None, tx),
        ("qos=normal", "grp_tres[gres/gpu]", None, "4", "root", 1796284801, None, tx),
        ("account=team-a user=alice", "max_jobs", None, "3", "root", 1796284802, None, tx),
        ("qos=high", "grp_tres[cpu]", None, "64", "root", 1796284802, None, tx),
        ("qos=high", "grp_tres[gres/gpu]", "24", "16", "root", 1796284802, None, tx),
        ("slurm.conf", "PriorityWeightFairShare", "10000", "20000", None, 1796284804,
         1796284801, conf),
        ("slurm.conf", "SchedulerParameters:bf_interval", "5", "10", None, 1796284804,
         1796284801, conf),
        ("slurm.conf", "SchedulerParameters:bf_window", None, "120", None, 1796284804,
         1796284801, conf),
    ]  # fmt: skip
    assert view["scheduler"].unique().to_list() == ["slurm"]
    assert view["change_id"].n_unique() == view.height


def test_the_sample_fleet_plants_a_change_on_each_cluster(materialized: Materialized) -> None:
    """slurm-a: root took speech's RawShares from its registry 8 to the planted 3 and set QOS
    normal's gres/gpu limit to 64 (transactions, exact times); k8s-b: cq-prod's
    reclaimWithinCohort went from Any to Never between the daily snapshots of the window's
    middle (an interval, no actor)."""
    with duckdb.connect(str(materialized.cfg.serving_path), read_only=True) as con:
        rows = con.execute(
            "SELECT cluster, scheduler, object, key, old, new, actor, changed_after IS NULL "
            "FROM policy_changes ORDER BY scheduler, object, key"
        ).fetchall()
    assert rows == [
        ("k8s-b", "kueue", "clusterqueue=cq-prod", "preemption.reclaimWithinCohort", "Any",
         "Never", None, False),
        ("slurm-a", "slurm", "account=speech", "shares", "8", "3", "root", True),
        ("slurm-a", "slurm", "qos=normal", "grp_tres[gres/gpu]", None, "64", "root", True),
    ]  # fmt: skip
