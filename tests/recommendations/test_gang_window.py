"""The drain-for-gang window rule on literal frames (hand-computed)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from metrics.recommendations import Window
from metrics.recommendations.gang_window import gang_window
from pipelines.recommendations import read_inputs, recommendations_frame
from pipelines.warehouse import connect
from tests.rackscale import build_rackscale_warehouse

W = Window(dt.datetime(2026, 11, 2, tzinfo=dt.UTC), dt.datetime(2026, 11, 16, tzinfo=dt.UTC))
H = 3600.0


def _causes(frag_s: float = 10 * H) -> pl.DataFrame:
    """Cluster c: four large jobs waiting 12 h each (48 h); three (teams a, b, a) held by
    topology ``frag_s`` each, eligible at 09:xx, 09:xx and 14:xx UTC; 2 h quota each; idle while
    blocked 100 GPU-h each; 72, 72, 64 and 72 GPUs asked. Cluster k (Kubernetes): the same, but
    no Slurm patch applies."""
    t = [
        dt.datetime(2026, 11, d, h, m, tzinfo=dt.UTC)
        for d, h, m in ((3, 9, 0), (4, 9, 30), (5, 14, 0), (6, 1, 0))
    ]
    one = pl.DataFrame({
        "job_id": ["1", "2", "3", "4"], "team": ["a", "b", "a", "c"], "eligible_at": t,
        "req_gpus": [72.0, 72.0, 64.0, 72.0],
        "wait_s": [12 * H] * 4, "quota_s": [2 * H] * 4, "priority_s": [0.0] * 4,
        "fragmentation_s": [frag_s, frag_s, frag_s, 0.0],
        "blocked_idle_gpu_s": [100 * H, 100 * H, 100 * H, 0.0],
    })  # fmt: skip
    return pl.concat([one.with_columns(pl.lit(c).alias("cluster")) for c in ("c", "k")])


def _domains() -> pl.DataFrame:
    return pl.DataFrame({
        "cluster": ["c", "c", "k"], "domain": ["d1", "d2", "kd"], "healthy_nodes": [16, 18, 18],
        "healthy_gpus": [64.0, 72.0, 72.0],
        "nodes_list": ["n1,n2", "n3,n4", "k1"],
    })  # fmt: skip


def test_fires_where_fragmentation_dominates() -> None:
    """c: fragmentation 30 h of 48 h wait = 0.625 ≥ 0.3 (critical from 0.6); 3 blocked jobs;
    mean per large job 30/4 = 7.5 h. The healthiest domain is d2 (18 trays); accounts a, b; the
    most common eligible hour of blocked jobs is 09 UTC. Delayed GPU-hours (72 + 72 + 64) × 10
    = 2,080 over 2 weeks = 1,040 a week, under the window's 72 GPUs × 4 h × 7 = 2,016: gain
    1,040 GPU-h a week; wait reduction 7.5 h = 27,000 s; confidence min(1, 3/6) = 0.5. k is
    Kubernetes: nothing."""
    got = gang_window(_causes(), _domains(), W, {"c": "slurm", "k": "kubernetes"})
    assert got.height == 1
    r = got.row(0, named=True)
    assert (r["cluster"], r["rule"], r["severity"], r["patch_kind"]) == (
        "c",
        "gang_drain_window",
        "critical",
        "scontrol",
    )
    assert r["expected_gain_gpu_h_per_week"] == 1040.0
    assert r["expected_wait_reduction_s"] == 27_000.0
    assert r["confidence"] == 0.5
    assert "Nodes=n3,n4 Accounts=a,b" in r["patch_content"] and "Flags=DAILY" in r["patch_content"]
    ev = json.loads(r["evidence"])
    assert (ev["domain"], ev["start_hour_utc"], ev["fragmentation_share"]) == ("d2", 9, 0.625)


def test_gain_is_capped_by_what_the_window_offers() -> None:
    """Fragmentation 11 h each (33 of 48 h): delayed (72 + 72 + 64) × 11 = 2,288 GPU-h over
    2 weeks = 1,144 a week; a domain of 8 healthy GPUs offers 8 × 4 × 7 = 224 a week: gain
    224."""
    small = _domains().with_columns(pl.lit(8.0).alias("healthy_gpus"))
    got = gang_window(_causes(11 * H), small, W, {"c": "slurm"})
    assert got["expected_gain_gpu_h_per_week"].to_list() == [224.0]


def test_quiet_where_fragmentation_is_small() -> None:
    """Control: 3 h each → 9 h of 48 h = 0.1875 < 0.3: no recommendation."""
    assert gang_window(_causes(3 * H), _domains(), W, {"c": "slurm"}).height == 0


def test_the_rackscale_fleet_gets_a_window_for_its_fragmentation_period(
    tmp_path: Path,
) -> None:
    """Through the catalogue on nine days of slurm-nvl (tests/rackscale.py): one
    gang_drain_window recommendation for slurm-nvl, on a domain with 18 healthy trays (not
    nvl03, which has two trays out), for accounts among the large-job teams."""
    cfg = build_rackscale_warehouse(tmp_path)
    with connect(cfg.warehouse_path, read_only=True) as con:
        frame = recommendations_frame(read_inputs(con, cfg))
    got = frame.filter(pl.col("rule") == "gang_drain_window")
    assert got["cluster"].to_list() == ["slurm-nvl"]
    ev = json.loads(got["evidence"][0])
    assert ev["domain"] != "nvl03" and ev["healthy_trays"] == 18
    assert set(ev["accounts"]) <= {"agents", "nlp", "vision", "multimodal"}
    assert ev["fragmentation_share"] >= 0.3


def test_the_rackscale_fleet_gets_a_segment_for_full_rack_gangs(tmp_path: Path) -> None:
    """Through the catalogue on nine days of slurm-nvl: from day 3 nvl03 holds 16 healthy
    trays, so 18-node blocks keep less than 95 % of the healthy trays over the window; the rule
    proposes --segment=2 (the largest configured size dividing 18 with E ≥ 0.95) for the
    18-node class."""
    cfg = build_rackscale_warehouse(tmp_path)
    with connect(cfg.warehouse_path, read_only=True) as con:
        frame = recommendations_frame(read_inputs(con, cfg))
    got = frame.filter(pl.col("rule") == "segment_size")
    ev = {json.loads(e)["nodes"]: json.loads(e) for e in got["evidence"]}
    assert ev[18]["segment_size"] == 2
    assert ev[18]["efficiency_whole"] < 0.95 <= ev[18]["efficiency_segment"]
    assert set(got["cluster"]) == {"slurm-nvl"}


def test_the_patch_starts_at_the_chosen_hour_for_the_slurm_accounts() -> None:
    """The window ends 2026-11-16 00:00 UTC; the chosen hour is 09 UTC, so the first daily
    window is 2026-11-16 09:00 UTC, written in slurmctld's zone: 10:00 in Europe/Berlin (CET,
    UTC+1 in November). Accounts are the blocked jobs' Slurm accounts (team a's jobs run
    under proj-a, b's under proj-b), not the team names. Without the jobs' accounts or a zone:
    09:00 UTC, and the teams stand in for accounts (the evidence says so)."""
    bare = gang_window(_causes(), _domains(), W, {"c": "slurm"}).row(0, named=True)
    assert "StartTime=2026-11-16T09:00:00 Duration=04:00:00" in bare["patch_content"]
    assert json.loads(bare["evidence"])["accounts_from_teams"] is True
    jobs = pl.DataFrame(
        {"cluster": ["c"] * 4, "job_id": ["1", "2", "3", "4"],
         "account": ["proj-a", "proj-b", "proj-a", "proj-c"]}
    )  # fmt: skip
    got = gang_window(
        _causes(), _domains(), W, {"c": "slurm"}, jobs=jobs, timezones={"c": "Europe/Berlin"}
    )
    r = got.row(0, named=True)
    assert r["patch_content"] == (
        "scontrol create reservation ReservationName=goodput_gang_d2 "
        "StartTime=2026-11-16T10:00:00 Duration=04:00:00 Flags=DAILY Nodes=n3,n4 "
        "Accounts=proj-a,proj-b"
    )
    ev = json.loads(r["evidence"])
    assert (ev["accounts"], ev["teams"], ev["accounts_from_teams"]) == (
        ["proj-a", "proj-b"], ["a", "b"], False)  # fmt: skip
