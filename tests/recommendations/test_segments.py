"""The segment-size rule on literal frames (hand-computed)."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from metrics.recommendations import Window
from metrics.recommendations.segments import segment_sizes

W = Window(dt.datetime(2026, 11, 2, tzinfo=dt.UTC), dt.datetime(2026, 11, 16, tzinfo=dt.UTC))
EFF = {1: 1.0, 2: 1.0, 4: 0.914, 8: 0.914, 16: 0.914, 18: 0.771}


def _eff(eff: dict[int, float]) -> pl.DataFrame:
    """Cluster c: blocks of 18, 1,000 healthy GPU-hours in the window (2 weeks)."""
    return pl.DataFrame({"cluster": ["c"] * len(eff), "segment_size": list(eff),
                         "efficiency": list(eff.values()), "domain_size": [18] * len(eff),
                         "healthy_gpu_h": [1000.0] * len(eff)})  # fmt: skip


def _jobs() -> pl.DataFrame:
    """Three attempts of 18 nodes, three of 16, two of 8 (too few), one single node."""
    lists = [[f"n{i}" for i in range(n)] for n in (18, 18, 18, 16, 16, 16, 8, 8, 1)]
    return pl.DataFrame({"cluster": ["c"] * len(lists), "node_list": lists})


def test_largest_dividing_segment_that_keeps_95_percent() -> None:
    """18 nodes: E(18) = 0.771 < 0.95; sizes dividing 18: 18, 2, 1; E(2) = 1 → --segment=2;
    gain (1 − 0.771) × 1000 ÷ 2 weeks = 114.5 GPU-h a week; gap 0.179 ≥ 0.05 → critical.
    16 nodes: E(16) = 0.914; 8 and 4 also 0.914; E(2) = 1 → 2; gain 0.086 × 500 = 43;
    gap 0.036 → warning. 8 nodes: two attempts, under three: none."""
    got = segment_sizes(_eff(EFF), _jobs(), W, {"c": "slurm"}).sort("scope")
    ev = [json.loads(e) for e in got["evidence"]]
    assert [(e["nodes"], e["segment_size"]) for e in ev] == [(16, 2), (18, 2)]
    assert got["severity"].to_list() == ["warning", "critical"]
    gains = got["expected_gain_gpu_h_per_week"].to_list()
    assert abs(gains[0] - 43.0) < 1e-9 and abs(gains[1] - 114.5) < 1e-9
    assert got["patch_kind"].to_list() == [None, None]
    assert "--segment=2" in got["change_text"][1]


def test_quiet_when_whole_blocks_keep_their_capacity() -> None:
    """Control: every E(s) = 0.97 ≥ 0.95 (no tray out worth a segment): nothing; and a
    Kubernetes cluster never gets one."""
    assert segment_sizes(_eff(dict.fromkeys(EFF, 0.97)), _jobs(), W, {"c": "slurm"}).height == 0
    assert segment_sizes(_eff(EFF), _jobs(), W, {"c": "kubernetes"}).height == 0
