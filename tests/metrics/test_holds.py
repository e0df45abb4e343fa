"""Pieces of held GPUs (METRICS.md "GPU holding"): stored per node, added up over the nodes."""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics.holds import NODE_HOLD_SCHEMA, merged_pieces, with_pieces

UTC = dt.UTC


def _t(h: int, m: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, 2, h, m, tzinfo=UTC)


def _per_node() -> pl.LazyFrame:
    """The worked example: worker-0 (8 GPUs) on a 08:10–08:40, worker-1 (8 GPUs) on b
    08:20–10:10; and an attempt e whose pods held nothing (one 0-GPU piece, no node)."""
    return pl.DataFrame(
        [
            ("c", "g", 0, _t(8, 10), _t(8, 40), 8.0, "a"),
            ("c", "g", 0, _t(8, 20), _t(10, 10), 8.0, "b"),
            ("c", "e", 0, _t(8), _t(8), 0.0, None),
        ],
        schema=NODE_HOLD_SCHEMA,
        orient="row",
    ).lazy()


def test_pieces_per_node_add_up_to_the_attempt_s_pieces() -> None:
    """a's and b's pieces add up to 8 GPUs 08:10–08:20, 16 08:20–08:40, 8 08:40–10:10
    (8 × 600 + 16 × 1,200 + 8 × 5,400 = 67,200 GPU-s = 8 × 1,800 + 8 × 6,600 per node);
    e's empty piece stays as it is."""
    got = merged_pieces(_per_node()).collect().sort("job_id", "start_at")
    assert got.select("job_id", "start_at", "end_at", "gpus").rows() == [
        ("e", _t(8), _t(8), 0.0),
        ("g", _t(8, 10), _t(8, 20), 8.0),
        ("g", _t(8, 20), _t(8, 40), 16.0),
        ("g", _t(8, 40), _t(10, 10), 8.0),
    ]


def test_with_pieces_adds_up_pieces_per_node_unless_asked_to_keep_the_node() -> None:
    """Every hourly table sees the attempt's pieces (three rows for g); with ``node`` the
    node reliability signals see each node's own (two rows, a and b)."""
    att = pl.DataFrame(
        {
            "cluster": ["c"],
            "job_id": ["g"],
            "attempt": [0],
            "start_at": [_t(8, 10)],
            "end_at": [_t(10, 10)],
            "gpus": [16.0],
        },
        schema_overrides={"start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC")},
    ).lazy()
    merged = with_pieces(att, _per_node()).collect().sort("_ps")
    assert merged["_pg"].to_list() == [8.0, 16.0, 8.0]
    kept = with_pieces(att, _per_node(), node="_host").collect().sort("_host")
    assert kept.select("_host", "_ps", "_pe", "_pg").rows() == [
        ("a", _t(8, 10), _t(8, 40), 8.0),
        ("b", _t(8, 20), _t(10, 10), 8.0),
    ]
