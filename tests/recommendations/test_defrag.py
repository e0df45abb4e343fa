"""The defragmentation-candidates rule on literal frames (hand-computed), and on the bundled
fleet's rack-scale cluster.

Cluster c: racks d1 = n1–n4, d2 = n5–n8, d3 = n9–n12, 4 GPUs per node; window one week from
h0 = 2026-11-02 00:00 UTC. Running at h0: S1 (1 GPU, n1, since h0 − 2 h), S4 (2 GPUs, n2, since
h0 − 1 h), S2 (2 GPUs, n5, since h0 − 1 h), S3 (4 GPUs, n6, since h0 − 1 h), L (16 GPUs, n9–n12,
large). Large job B asks 16 GPUs (4 nodes), eligible h0, started h0 + 2 h, 7200 s of
fragmentation delay.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from metrics.recommendations import Window
from metrics.recommendations.defrag import defrag_candidates
from pipelines.recommendations import read_inputs, recommendations_frame
from pipelines.sample_fleet._rackscale import FRAGMENT_DAYS
from pipelines.warehouse import connect
from tests.rackscale import START, build_rackscale_warehouse

H0 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
HR = dt.timedelta(hours=1)
W = Window(H0, H0 + dt.timedelta(days=7))
T = pl.Datetime("us", "UTC")


def _topology() -> pl.DataFrame:
    return pl.DataFrame(
        {"cluster": ["c"] * 12, "domain": [f"d{1 + i // 4}" for i in range(12)],
         "node": [f"n{i + 1}" for i in range(12)], "valid_from": [None] * 12,
         "valid_to": [None] * 12},
        schema_overrides={"valid_from": T, "valid_to": T},
    )  # fmt: skip


def _nodes() -> pl.DataFrame:
    return pl.DataFrame({"cluster": ["c"] * 12, "host": [f"n{i + 1}" for i in range(12)],
                         "gpus": [4.0] * 12})  # fmt: skip


def _jobs(s1_gpus: float = 1.0, s4_gpus: float = 2.0, extra: bool = False) -> pl.DataFrame:
    rows = [
        ("S1", s1_gpus, H0 - 2 * HR, ["n1"]),
        ("S4", s4_gpus, H0 - HR, ["n2"]),
        ("S2", 2.0, H0 - HR, ["n5"]),
        ("S3", 4.0, H0 - HR, ["n6"]),
        ("L", 16.0, H0 - HR, ["n9", "n10", "n11", "n12"]),
    ]
    if extra:
        rows += [("S5", 3.0, H0 - HR, ["n7"]), ("S6", 3.0, H0 - HR, ["n8"])]
    return pl.DataFrame(
        {"cluster": ["c"] * len(rows), "job_id": [r[0] for r in rows],
         "attempt": [1] * len(rows), "gpus": [r[1] for r in rows],
         "start_at": [r[2] for r in rows], "end_at": [H0 + 5 * HR] * len(rows),
         "node_list": [r[3] for r in rows]},
        schema_overrides={"start_at": T, "end_at": T},
    )  # fmt: skip


def _capacity(d1: tuple[int, float], d2: tuple[int, float]) -> pl.DataFrame:
    """(free whole nodes, free GPUs) of d1 and d2 at h0; d3 is full."""
    return pl.DataFrame(
        {"cluster": ["c"] * 3, "hour": [H0] * 3, "domain": ["d1", "d2", "d3"],
         "healthy_nodes": [4, 4, 4], "free_nodes": [d1[0], d2[0], 0],
         "free_gpus": [d1[1], d2[1], 0.0]},
        schema_overrides={"hour": T},
    )  # fmt: skip


def _causes(req_gpus: float = 16.0, nodes: int = 4) -> pl.DataFrame:
    return pl.DataFrame(
        {"cluster": ["c"], "job_id": ["B"], "attempt": [1], "team": ["t"],
         "req_gpus": [req_gpus], "req_nodes": [nodes], "eligible_at": [H0],
         "start_at": [H0 + 2 * HR], "wait_s": [7200.0], "fragmentation_s": [7200.0]},
        schema_overrides={"eligible_at": T, "start_at": T},
    )  # fmt: skip


def test_frees_the_domain_closest_to_whole_and_checks_the_moves_land() -> None:
    """h0: free GPUs d1 3 + 2 + 8 = 13, d2 2 + 0 + 8 = 10: 23 ≥ 16 but the best rack has 2
    whole free nodes < 4: blocked. Deficits d1 2, d2 2, d3 4: d1 first; its nodes held only by
    small jobs: n1 (S1, 1 GPU) then n2 (S4, 2 GPUs): moving S1 and S4 frees 2 = the deficit.
    Replay: room outside d1 = n5 2 (S2 holds 2), n6 0, n9–n12 0, d2's 2 whole free nodes 4 + 4;
    S4's 2 GPUs go to n5 (best fit), S1's 1 to a free node: both land. Gain: 16 GPUs × min(7200,
    7200) s = 32 GPU-h; the moved jobs ran 1 × 2 h + 2 × 1 h = 4 GPU-h; net 28 GPU-h over one
    week = 28 GPU-h a week; wait reduction 7200 s; confidence min(1, 1/3)."""
    got = defrag_candidates(
        _causes(), _capacity((2, 13.0), (2, 10.0)), _topology(), _jobs(), _nodes(), W,
        {"c": "slurm"}, large_gpus=16,
    )  # fmt: skip
    assert got.height == 1
    r = got.row(0, named=True)
    assert (r["rule"], r["cluster"], r["severity"], r["patch_kind"]) == (
        "defrag_candidates", "c", "critical", None,
    )  # fmt: skip
    assert r["expected_gain_gpu_h_per_week"] == 28.0
    assert r["expected_wait_reduction_s"] == 7200.0
    assert r["confidence"] == round(1 / 3, 3)
    ev = json.loads(r["evidence"])
    (cand,) = ev["candidates"]
    assert (cand["domain"], cand["whole_free_trays"], cand["deficit_trays"]) == ("d1", 2, 2)
    assert [(m["job_id"], m["gpus"], m["gpu_h_run"]) for m in cand["moves"]] == [
        ("S1", 1.0, 2.0), ("S4", 2.0, 2.0),
    ]  # fmt: skip
    assert (ev["gain_gpu_h"], ev["moved_gpu_h_run"]) == (32.0, 4.0)


def test_one_freed_domain_serves_one_gang() -> None:
    """A second blocked job B2 like B but eligible at h0 with 3600 s of fragmentation: at h0
    the same move frees d1, worth 16 × 1 h − 4 = 12 GPU-h for B2 and 28 for B; d2 would need
    S2 and S3 (2 + 4 GPUs): room outside d2 = n1 3, n2 2 and d1's two whole free nodes; S3's 4
    → a whole node, S2's 2 → n2; it lands: B2 gets d2, worth 16 − (2 × 1 + 4 × 1) = 10 GPU-h.
    Kept: B on d1 (28), then B2 on d2 (10) (its d1 candidate reuses d1 at h0 and S1, S4):
    38 GPU-h a week, not 28 + 12."""
    b2 = _causes().with_columns(
        pl.lit("B2").alias("job_id"), pl.lit(3600.0).alias("fragmentation_s"),
        pl.lit(3600.0).alias("wait_s"), pl.lit(H0 + HR).cast(T).alias("start_at"),
    )  # fmt: skip
    got = defrag_candidates(
        pl.concat([_causes(), b2]), _capacity((2, 13.0), (2, 10.0)), _topology(), _jobs(),
        _nodes(), W, {"c": "slurm"}, large_gpus=16,
    )  # fmt: skip
    ev = json.loads(got["evidence"][0])
    assert [(c["large_job"], c["domain"], c["net_gpu_h"]) for c in ev["candidates"]] == [
        ("B", "d1", 28.0), ("B2", "d2", 10.0),
    ]  # fmt: skip
    assert got["expected_gain_gpu_h_per_week"][0] == 38.0


def test_a_still_pending_gang_gets_a_requeue_patch() -> None:
    """B still pending at the cut-off (no start; its wait runs to h0 + 2 h = as_of): the same
    move, as ``scontrol requeue S1,S4``."""
    causes = _causes().with_columns(pl.lit(None, T).alias("start_at"))
    got = defrag_candidates(
        causes, _capacity((2, 13.0), (2, 10.0)), _topology(), _jobs(), _nodes(), W,
        {"c": "slurm"}, as_of=H0 + 2 * HR, large_gpus=16,
    )  # fmt: skip
    assert got["patch_content"][0].startswith("scontrol requeue S1,S4  # frees domain d1 for job B")


def test_quiet_when_more_moves_are_needed_than_allowed() -> None:
    """Control: max_moves 1: d1 needs S1 and S4, d2 needs S2 and S3, d3 is held by the large
    L: no candidate, no recommendation."""
    got = defrag_candidates(
        _causes(), _capacity((2, 13.0), (2, 10.0)), _topology(), _jobs(), _nodes(), W,
        {"c": "slurm"}, large_gpus=16, max_moves=1,
    )  # fmt: skip
    assert got.height == 0


def test_replay_rejects_a_move_with_nowhere_to_go() -> None:
    """Control: B asks 12 GPUs (3 nodes); S1 holds 3 GPUs of n1, S4 all of n2, S5 and S6 3 of
    n7 and n8. Free: d1 1 + 0 + 8 = 9, d2 2 + 0 + 1 + 1 = 4: 13 ≥ 12, best rack 2 < 3 whole
    free nodes: blocked. d1 (deficit 1): moving S1 (3 GPUs) frees n1, but outside d1 the room is
    n5 2, n7 1, n8 1 and no whole free node: 3 GPUs land nowhere. d2 (deficit 3): S2, S5, S6
    (2 + 3 + 3 GPUs) free n5, n7, n8; room outside: n1 1, d1's 2 whole free nodes 4 + 4: 3 → 4,
    3 → 4, then 2 finds only 1 + 1 + 1: rejected. d3: held by the large L. Nothing."""
    got = defrag_candidates(
        _causes(12.0, 3), _capacity((2, 9.0), (0, 4.0)), _topology(),
        _jobs(s1_gpus=3.0, s4_gpus=4.0, extra=True), _nodes(), W, {"c": "slurm"},
        large_gpus=16,
    )  # fmt: skip
    assert got.height == 0


def test_the_rackscale_fleet_gets_defragmentation_candidates(tmp_path: Path) -> None:
    """Through the catalogue on nine days of slurm-nvl (tests/rackscale.py): a
    defrag_candidates recommendation for slurm-nvl whose candidates each move at most 3 small
    jobs out of one domain, with a positive net gain, and whose largest candidate lies in the
    planted fragmentation period (days 5–6 after the start)."""
    cfg = build_rackscale_warehouse(tmp_path)
    with connect(cfg.warehouse_path, read_only=True) as con:
        frame = recommendations_frame(read_inputs(con, cfg))
    got = frame.filter(pl.col("rule") == "defrag_candidates")
    assert got["cluster"].to_list() == ["slurm-nvl"]
    ev = json.loads(got["evidence"][0])
    assert ev["candidates"] and all(1 <= len(c["moves"]) <= 3 for c in ev["candidates"])
    assert got["expected_gain_gpu_h_per_week"][0] > 0
    start = dt.datetime.combine(START, dt.time(), dt.UTC)
    period = (
        start + dt.timedelta(days=FRAGMENT_DAYS[0]),
        start + dt.timedelta(days=FRAGMENT_DAYS[1]),
    )
    top = dt.datetime.fromisoformat(ev["candidates"][0]["hour"])
    assert period[0] <= top < period[1]
