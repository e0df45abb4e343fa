"""Idle reservations: shrink a mostly idle recurring one, remove an unused one, keep a busy one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from metrics.recommendations import RECOMMENDATION_SCHEMA, reservation_usage, reservations_idle
from pipelines.recommendations import read_inputs, recommendations_frame
from pipelines.warehouse import connect
from tests.conftest import Materialized
from tests.recommendations._frames import DAY, UTC, H, at, window

W = window(4)  # four days: 4/7 of a week

RES_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "name": pl.String(),
    "start_at": UTC,
    "end_at": UTC,
    "nodes": pl.List(pl.String()),
    "flags": pl.List(pl.String()),
    "maint": pl.Boolean(),
    "gpus": pl.Float64(),
}
JOBS_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "gpus": pl.Float64(),
    "start_at": UTC,
    "end_at": UTC,
    "node_list": pl.List(pl.String()),
}
NODES = pl.DataFrame(
    {
        "cluster": ["slurm-a"] * 8,
        "host": [f"n{i}" for i in range(1, 9)],
        "partition": ["gpu"] * 8,
        "gpus": [8] * 8,
    }
)


def _res(name: str, start: float, end: float, nodes: list[str], flags: list[str] | None = None,
         ) -> dict[str, Any]:  # fmt: skip
    flags = flags or []
    return {"cluster": "slurm-a", "name": name, "start_at": at(start), "end_at": at(end),
            "nodes": nodes, "flags": flags, "maint": "MAINT" in flags, "gpus": None}  # fmt: skip


def _job(start: float, run: float | None, gpus: float, nodes: list[str],
         cluster: str = "slurm-a") -> dict[str, Any]:  # fmt: skip
    return {"cluster": cluster, "gpus": gpus, "start_at": at(start),
            "end_at": None if run is None else at(start + run), "node_list": nodes}  # fmt: skip


def _planted() -> tuple[pl.DataFrame, pl.DataFrame]:
    """``train-daily``: DAILY 00:00–06:00 on n1–n4 (32 GPUs), four occurrences, the first seen
    twice (scontrol snapshot and slurmdbd history); ``demo``: one-off 10 h on n5, unused;
    ``maint``: a MAINT reservation on n6, unused (skipped); ``busy``: 10 h on n7–n8 used 9 h by
    a 16-GPU job. Jobs: an 8-GPU job on n1 for 3 h in occurrences 1 and 2, a 16-GPU job on n1+n2
    for 2 h in occurrence 3, an 8-GPU job on n3 outside any occurrence (10:00–12:00 day 0), and a
    job on another cluster's n4 (not counted)."""
    nodes4 = ["n1", "n2", "n3", "n4"]
    res = [_res("train-daily", d * DAY, d * DAY + 6 * H, nodes4, ["DAILY"]) for d in range(4)]
    res.append(_res("train-daily", 0, 6 * H, nodes4, ["DAILY"]))  # history row of occurrence 1
    res += [
        _res("demo", 1 * DAY + 8 * H, 1 * DAY + 18 * H, ["n5"]),
        _res("maint", 2 * DAY, 2 * DAY + 12 * H, ["n6"], ["MAINT", "IGNORE_JOBS"]),
        _res("busy", 3 * DAY, 3 * DAY + 10 * H, ["n7", "n8"]),
    ]
    jobs = [
        _job(1 * H, 3 * H, 8, ["n1"]),
        _job(1 * DAY + 2 * H, 3 * H, 8, ["n1"]),
        _job(2 * DAY, 2 * H, 16, ["n1", "n2"]),
        _job(10 * H, 2 * H, 8, ["n3"]),
        _job(3 * DAY, 5 * H, 8, ["n4"], cluster="other"),
        _job(3 * DAY, 9 * H, 16, ["n7", "n8"]),
    ]
    return pl.DataFrame(res, schema=RES_SCHEMA), pl.DataFrame(jobs, schema=JOBS_SCHEMA)


def _by_name(out: pl.DataFrame) -> dict[str, dict[str, Any]]:
    return {json.loads(r["evidence"])["reservation"]: r for r in out.iter_rows(named=True)}


def test_mostly_idle_recurring_reservation_is_shrunk() -> None:
    """train-daily: reserved 32 GPUs × 6 h × 4 = 768 GPU-h (the duplicate history row of
    occurrence 1 is not counted twice); used 8×3 + 8×3 + 16×2 = 80 GPU-h (the n3 job ran outside
    the occurrences, the other cluster's n4 is another node); idle = 1 − 80/768 = 0.8958 (< 0.9:
    shrink, ≥ 0.75: warning). At most 2 nodes in one occurrence (n1+n2 in the third), so keep
    n1 (64 GPU-h used) and n2 (16); n3 and n4 held 2 × 8 × 6 × 4 = 384 GPU-h, none used:
    gain 384 ÷ (4/7) = 672 GPU-h a week. Confidence 24 h observed ÷ 48 = 0.5."""
    res, jobs = _planted()
    out = reservations_idle(res, jobs, NODES, W)
    assert list(out.schema) == list(RECOMMENDATION_SCHEMA)
    r = _by_name(out)["train-daily"]
    assert r["patch_kind"] == "scontrol"
    assert r["patch_content"] == "scontrol update reservationname=train-daily nodes=n1,n2"
    assert r["scope"] == "cluster=slurm-a/reservation=train-daily"
    assert r["severity"] == "warning"
    ev = json.loads(r["evidence"])
    assert ev["reserved_gpu_h"] == 768.0
    assert ev["used_gpu_h"] == 80.0
    assert ev["idle_share"] == pytest.approx(1 - 80 / 768, abs=1e-4)
    assert (ev["occurrences"], ev["reserved_hours"], ev["peak_nodes_used"]) == (4, 24.0, 2)
    assert ev["kept_nodes"] == ["n1", "n2"] and ev["action"] == "shrink"
    assert ev["window"] == {"start": "2026-01-05T00:00:00Z", "end": "2026-01-09T00:00:00Z"}
    assert r["expected_gain_gpu_h_per_week"] == 672.0
    assert r["confidence"] == 0.5
    # 2 counts the distinct reserved nodes touched in an occurrence, not the nodes at once.
    assert "touched no more than 2 distinct nodes of it in any one occurrence" in r["change_text"]


def test_unused_reservation_is_removed_and_maint_and_busy_are_not() -> None:
    """demo: 8 GPUs × 10 h = 80 GPU-h, none used: delete; gain 80 ÷ (4/7) = 140 GPU-h a week,
    critical, confidence 10/48 = 0.208. maint is MAINT (meant to be empty); busy used
    16 × 9 = 144 of 16 × 10 = 160 GPU-h (idle 0.1 < 0.5): neither fires."""
    res, jobs = _planted()
    out = _by_name(reservations_idle(res, jobs, NODES, W))
    assert set(out) == {"train-daily", "demo"}
    demo = out["demo"]
    assert demo["patch_content"] == "scontrol delete reservationname=demo"
    assert demo["severity"] == "critical"
    assert demo["expected_gain_gpu_h_per_week"] == 140.0
    assert demo["confidence"] == 0.208
    ev = json.loads(demo["evidence"])
    assert (ev["reserved_gpu_h"], ev["used_gpu_h"], ev["idle_share"], ev["action"]) == (
        80.0, 0.0, 1.0, "remove",
    )  # fmt: skip


def test_usage_per_occurrence() -> None:
    """busy: 16 reserved GPUs × 10 h = 576 000 GPU-s reserved, 16 × 9 h = 518 400 used, 2 nodes
    used; train-daily occurrence 4 (day 3) used nothing."""
    res, jobs = _planted()
    u = reservation_usage(res, jobs, NODES, W)
    busy = u.filter(pl.col("name") == "busy").row(0, named=True)
    assert (busy["reserved_gpu_s"], busy["used_gpu_s"], busy["nodes_used"]) == (
        576_000.0, 518_400.0, 2,
    )  # fmt: skip
    daily = u.filter(pl.col("name") == "train-daily")
    assert daily["used_gpu_s"].to_list() == [86_400.0, 86_400.0, 115_200.0, 0.0]


def test_well_used_reservation_does_not_fire() -> None:
    """Control: train-daily with a 32-GPU job filling every occurrence (5 of 6 h: idle 1/6 ≈
    0.17 < 0.5) and no other reservation gives no recommendation."""
    nodes4 = ["n1", "n2", "n3", "n4"]
    res = pl.DataFrame(
        [_res("train-daily", d * DAY, d * DAY + 6 * H, nodes4, ["DAILY"]) for d in range(4)],
        schema=RES_SCHEMA,
    )
    jobs = pl.DataFrame([_job(d * DAY, 5 * H, 32, nodes4) for d in range(4)], schema=JOBS_SCHEMA)
    out = reservations_idle(res, jobs, NODES, W)
    assert out.is_empty() and list(out.schema) == list(RECOMMENDATION_SCHEMA)
    assert reservations_idle(res.clear(), jobs, NODES, W).is_empty()


def test_thresholds_are_arguments() -> None:
    """With min_idle_share 0.95 train-daily (0.896) no longer fires; demo (1.0) still does."""
    res, jobs = _planted()
    out = _by_name(reservations_idle(res, jobs, NODES, W, min_idle_share=0.95))
    assert set(out) == {"demo"}


def test_bundled_fleet_idle_reservation_is_found(
    materialized: Materialized, fleet_dir: Path
) -> None:
    """The two-day sample fleet plants ``safety-eval``: h100-008 (8 GPUs) reserved daily
    02:00–06:00 New York time for the safety team, which never uses it. In the window it occurs
    twice (2 × 4 h × 8 GPUs = 64 GPU-h reserved, 0 used: idle share 1), so it is removed; the
    numbers match ``planted.json``."""
    cfg = materialized.cfg
    with connect(cfg.serving_path, read_only=True) as con:
        inputs = read_inputs(con, cfg)
    recs = recommendations_frame(inputs).filter(pl.col("rule") == "reservation_idle")
    assert recs["scope"].to_list() == ["cluster=slurm-a/reservation=safety-eval"]
    r = recs.row(0, named=True)
    assert r["patch_content"] == "scontrol delete reservationname=safety-eval"
    ev = json.loads(r["evidence"])
    planted = json.loads((fleet_dir / "planted.json").read_text())
    assert (ev["reserved_gpu_h"], ev["used_gpu_h"], ev["idle_share"], ev["occurrences"]) == (
        64.0, 0.0, 1.0, 2,
    )  # fmt: skip
    assert ev["reserved_gpu_h"] == planted["idle_reservation"]["reserved_gpu_hours"]
    assert r["expected_gain_gpu_h_per_week"] == pytest.approx(64.0 / inputs.window.weeks, abs=0.01)
