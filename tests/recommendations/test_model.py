"""The recommendation record: stable ids, the frame schema, and the formatting helpers."""

from __future__ import annotations

import json

import pytest

from metrics.recommendations import (
    RECOMMENDATION_SCHEMA,
    Recommendation,
    recommendation_id,
    scope_key,
    to_frame,
)
from metrics.recommendations._model import ladder_ceil, nearest_rank_value, slurm_duration
from tests.recommendations._frames import window


def _rec(scope: str = "cluster=a", rule: str = "r") -> Recommendation:
    return Recommendation(
        rule=rule,
        cluster="a",
        scope=scope,
        severity="warning",
        window=window(7),
        evidence={"x": 1.23456789, "nan": float("nan")},
        change_text="do it",
        confidence=1.5,
        expected_gain_gpu_h_per_week=10.0,
    )


def test_id_is_a_hash_of_rule_and_scope() -> None:
    """The same (rule, scope) always gives the same id; another scope or rule another id."""
    a = recommendation_id("lemon_node", "cluster=slurm-a/node=a100-013")
    assert a == recommendation_id("lemon_node", "cluster=slurm-a/node=a100-013")
    assert a.startswith("rec-") and len(a) == 16
    assert a != recommendation_id("lemon_node", "cluster=slurm-a/node=a100-014")
    assert a != recommendation_id("idle_allocations", "cluster=slurm-a/node=a100-013")
    assert _rec().id == recommendation_id("r", "cluster=a")


def test_scope_key_keeps_argument_order_and_drops_none() -> None:
    """Scopes read left to right, from the cluster down."""
    assert scope_key(cluster="c", partition="gpu", user=None) == "cluster=c/partition=gpu"


def test_frame_rows_are_clean() -> None:
    """Evidence is JSON with the window added and NaN as null; confidence is clipped to 1."""
    frame = to_frame([_rec()])
    assert frame.schema == RECOMMENDATION_SCHEMA
    row = frame.row(0, named=True)
    assert json.loads(row["evidence"]) == {
        "x": 1.2346,
        "nan": None,
        "window": {"start": "2026-01-05T00:00:00Z", "end": "2026-01-12T00:00:00Z"},
    }
    assert row["confidence"] == 1.0


def test_duplicate_findings_are_rejected() -> None:
    """Two rows with one (rule, scope) would share an id."""
    with pytest.raises(ValueError, match="share"):
        to_frame([_rec(), _rec()])


def test_unknown_severity_or_patch_kind_is_rejected() -> None:
    """Severity and patch kind are a contract with the dashboards and patch files."""
    with pytest.raises(ValueError, match="severity"):
        Recommendation("r", "a", "s", "urgent", window(1), {}, "t", 1.0)
    with pytest.raises(ValueError, match="patch kind"):
        Recommendation("r", "a", "s", "info", window(1), {}, "t", 1.0, patch_kind="helm")


def test_formatting_helpers() -> None:
    """Slurm durations, the standard-duration ladder and nearest-rank percentiles."""
    assert slurm_duration(90) == "00:01:30"
    assert slurm_duration(2 * 86400) == "2-00:00:00"
    assert slurm_duration(86400 + 3661) == "1-01:01:01"
    assert ladder_ceil(3 * 3600) == 4 * 3600
    assert ladder_ceil(3600) == 3600
    assert ladder_ceil(20 * 86400) == 20 * 86400
    assert nearest_rank_value([5, 1, 3, 2, 4], 0.5) == 3
    assert nearest_rank_value([1, 2, 3, 4], 0.95) == 4
    assert nearest_rank_value([], 0.5) is None
