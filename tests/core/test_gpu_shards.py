"""Slurm GPU shards (``gres/shard``) as fractions of a GPU (``pipelines.core.gpu_shards``),
on hand-made TRES strings, node states and attempts (METRICS.md "Units and identities")."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from pipelines.core.gpu_shards import (
    latest_gpus_per_shard,
    node_gpus_per_shard,
    node_shard_states,
    pending_shard_gpus,
    shard_gpus,
    tres_shards,
)

#: A DGX Spark's AllocTRES of a job holding 40 of its GB10's shards (a public sacct fixture).
SPARK = "billing=10,cpu=10,gres/shard:nvidia_gb10=40,gres/shard=40,mem=50G,node=1"


@pytest.mark.parametrize(
    ("tres", "shards"),
    [
        (SPARK, 40.0),  # the untyped count wins over the typed one (not 80)
        ("cpu=32,gres/shard=32,mem=98G", 32.0),
        ("cpu=2,gres/shard:a=3,gres/shard:b=5", 8.0),  # typed only: summed
        ("billing=8,cpu=8,gres/gpu=1,mem=10G,node=1", 0.0),
        ("gres/shardx=4", 0.0),  # another GRES whose name starts alike
        ("", 0.0),
        (None, None),
    ],
)
def test_the_shards_a_tres_string_names(tres: str | None, shards: float | None) -> None:
    got = pl.select(tres_shards(pl.lit(tres, dtype=pl.String())).alias("s")).item()
    assert got == shards


def test_gpus_per_shard_of_a_node() -> None:
    """dgx-spark ``gpu:nvidia_gb10:1,shard:nvidia_gb10:80``: 1/80; tux ``gpu:2,shard:64(S:0)``:
    2/64; a node without shards, or with shards and no GPU, is left out."""
    nodes = pl.DataFrame(
        {
            "cluster": ["c", "c", "c", "c"],
            "host": ["dgx-spark", "tux", "plain", "odd"],
            "gpus": [1.0, 2.0, 8.0, 0.0],
            "gres": ["gpu:nvidia_gb10:1,shard:nvidia_gb10:80", "gpu:2,shard:64(S:0)", "gpu:8",
                     "shard:8"],
        }
    )  # fmt: skip
    got = node_gpus_per_shard(nodes)
    assert got.rows() == [("c", "dgx-spark", 1 / 80), ("c", "tux", 2 / 64)]


def _attempts() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "cluster": ["c"] * 6,
            "job_id": ["101", "102", "103", "104", "105", "106"],
            "node_list": [["dgx-spark"], ["tux", "dgx-spark"], ["g1"], ["unknown"],
                          ["dgx-spark", "unknown"], ["dgx-spark"]],
            "gpus": [0.0, 0.0, 4.0, 0.0, 0.0, 0.0],
            "shards": [40.0, 32.0, 8.0, 40.0, 40.0, 20.0],
            "req_gpus": [0.0, 0.0, 4.0, 0.0, 0.0, 0.0],
            "req_shards": [40.0, 16.0, 8.0, 40.0, 40.0, 20.0],
            "run_s": [7200, 3600, 3600, 3600, 3600, None],
            "gpu_s": [0.0, 0.0, 14400.0, 0.0, 0.0, None],
        },
        schema_overrides={"run_s": pl.Int64()},
    )  # fmt: skip


def test_a_jobs_shards_as_gpus_from_its_nodes() -> None:
    """By hand (dgx-spark 1 GPU / 80 shards, tux 2 GPUs / 64 shards):

    - 101: 40 shards on dgx-spark for 2 h: 40/80 = 0.5 GPU, 0.5 × 7,200 = 3,600 GPU-s;
    - 102: 32 shards over tux and dgx-spark, 16 on each: 16 × 2/64 + 16/80 = 0.5 + 0.2 = 0.7
      GPU, 2,520 GPU-s;
    - 103 holds 4 GPUs (gres/gpu): its shards are never added (4 GPUs, 14,400 GPU-s);
    - 104 and 105 ran on a node of unknown shard count: 0 GPUs (105's dgx-spark half is not
      counted alone);
    - 106, running (no run_s): 20/80 = 0.25 GPU, GPU-s NULL.

    Requested alike: 101 40/80 = 0.5, 102 16 shards: 8 × 2/64 + 8/80 = 0.35, 103 its 4 GPUs,
    104 and 105 0, 106 0.25."""
    per_shard = pl.DataFrame(
        {"cluster": ["c", "c"], "host": ["dgx-spark", "tux"], "gpus_per_shard": [1 / 80, 2 / 64]}
    )
    got = shard_gpus(_attempts(), per_shard)
    assert got.columns == _attempts().columns
    assert got["job_id"].to_list() == ["101", "102", "103", "104", "105", "106"]
    assert got["gpus"].to_list() == pytest.approx([0.5, 0.7, 4.0, 0.0, 0.0, 0.25])
    assert got["gpu_s"].to_list()[:5] == pytest.approx([3600.0, 2520.0, 14400.0, 0.0, 0.0])
    assert got["gpu_s"][5] is None
    assert got["req_gpus"].to_list() == pytest.approx([0.5, 0.35, 4.0, 0.0, 0.0, 0.25])


def test_without_node_state_the_attempts_are_unchanged() -> None:
    empty = pl.DataFrame(
        schema={"cluster": pl.String(), "host": pl.String(), "gpus_per_shard": pl.Float64()}
    )
    assert shard_gpus(_attempts(), empty).equals(_attempts())


def test_a_pending_jobs_shards_where_the_clusters_nodes_are_sharded_alike() -> None:
    """Cluster c's sharded nodes all hold 1 GPU per 80 shards: a pending row asking 20 shards
    asks 20/80 = 0.25 GPU. Cluster d's nodes differ (1/80, 2/64): no node is known yet, so its
    row keeps 0. A row asking 2 GPUs keeps them; cluster e has no node state."""
    per_shard = pl.DataFrame(
        {
            "cluster": ["c", "c", "d", "d"],
            "host": ["s1", "s2", "s3", "tux"],
            "gpus_per_shard": [1 / 80, 1 / 80, 1 / 80, 2 / 64],
        }
    )
    pending = pl.DataFrame(
        {
            "cluster": ["c", "d", "c", "e"],
            "job_id": ["1", "2", "3", "4"],
            "req_gpus": [0.0, 0.0, 2.0, 0.0],
            "req_shards": [20.0, 20.0, 0.0, 20.0],
        }
    )
    got = pending_shard_gpus(pending, per_shard)
    assert got.columns == pending.columns
    assert got["req_gpus"].to_list() == pytest.approx([0.25, 0.0, 2.0, 0.0])


def _day(day: str | None, hour: int = 12) -> dt.datetime | None:
    return None if day is None else dt.datetime.fromisoformat(day).replace(hour=hour, tzinfo=dt.UTC)


def _states() -> pl.DataFrame:
    """dgx's states: undated (an old load) 1 GPU / 40 shards, 2026-01-05 1/80, 2026-02-01 no
    shard, 2026-03-01 2/80; tux's one, 2026-02-01 2/64; old's 2026-01-01 1/8, then 2026-02-01
    no shard (unsharded since). Each snapshot at noon UTC, in the SQL's order."""
    return node_shard_states(
        pl.DataFrame(
            {
                "cluster": ["c"] * 7,
                "host": ["dgx", "dgx", "dgx", "dgx", "old", "old", "tux"],
                "gpus": [1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 2.0],
                "gres": ["gpu:1,shard:40", "gpu:1,shard:80", "gpu:1", "gpu:2,shard:80",
                         "gpu:1,shard:8", "gpu:1", "gpu:2,shard:64"],
                "snapshot_at": [_day(None), _day("2026-01-05"), _day("2026-02-01"),
                                _day("2026-03-01"), _day("2026-01-01"), _day("2026-02-01"),
                                _day("2026-02-01")],
            },
            schema_overrides={"snapshot_at": pl.Datetime("us", "UTC")},
        )
    )  # fmt: skip


def test_a_nodes_states_over_time() -> None:
    """Each state's GPUs per shard, NULL where it names no shard; the latest per node: dgx 2/80,
    tux 2/64, old left out (its latest state names no shard)."""
    states = _states()
    assert states.columns == ["cluster", "host", "snapshot_at", "gpus_per_shard"]
    assert states["gpus_per_shard"].to_list() == [1 / 40, 1 / 80, None, 2 / 80, 1 / 8, None, 2 / 64]
    assert latest_gpus_per_shard(states).rows() == [("c", "dgx", 2 / 80), ("c", "tux", 2 / 64)]


def test_an_attempt_counts_by_its_nodes_states_at_its_start() -> None:
    """By hand, 40 shards each (a9: 4), 1 h each (GPU-s = GPUs × 3,600):

    - a1 dgx from 2026-01-01: only the undated state precedes it: 40 × 1/40 = 1.0 GPU;
    - a2 dgx from 2026-01-05 12:00, the snapshot's own time: 40 × 1/80 = 0.5 GPU;
    - a3 dgx from 2026-02-10: the 2026-02-01 state names no shard, passed over for 2026-01-05's:
      0.5 GPU;
    - a4 dgx from 2026-03-10: 40 × 2/80 = 1.0 GPU (the latest state gives the same);
    - a5 tux from 2026-01-01, before its first state: its earliest, 40 × 2/64 = 1.25 GPU;
    - a6 dgx and tux from 2026-03-10: 20 × 2/80 + 20 × 2/64 = 0.5 + 0.625 = 1.125 GPU;
    - a7 dgx, no start: its latest state, 1.0 GPU;
    - a8 on a node without state: 0 GPUs;
    - a9 old from 2026-01-10: 4 × 1/8 = 0.5 GPU (old is unsharded since: by its latest state
      it would be unknown, 0).

    Requested alike (req_shards = shards)."""
    starts = [_day("2026-01-01"), _day("2026-01-05"), _day("2026-02-10"), _day("2026-03-10"),
              _day("2026-01-01"), _day("2026-03-10"), None, _day("2026-03-10"),
              _day("2026-01-10")]  # fmt: skip
    shards = [40.0] * 8 + [4.0]
    attempts = pl.DataFrame(
        {
            "cluster": ["c"] * 9,
            "job_id": [f"a{i}" for i in range(1, 10)],
            "node_list": [["dgx"], ["dgx"], ["dgx"], ["dgx"], ["tux"], ["dgx", "tux"], ["dgx"],
                          ["gone"], ["old"]],
            "start_at": starts,
            "gpus": [0.0] * 9,
            "shards": shards,
            "req_gpus": [0.0] * 9,
            "req_shards": shards,
            "run_s": [3600] * 9,
            "gpu_s": [0.0] * 9,
        },
        schema_overrides={"start_at": pl.Datetime("us", "UTC"), "run_s": pl.Int64()},
    )  # fmt: skip
    got = shard_gpus(attempts, _states())
    want = [1.0, 0.5, 0.5, 1.0, 1.25, 1.125, 1.0, 0.0, 0.5]
    assert got.columns == attempts.columns
    assert got["job_id"].to_list() == attempts["job_id"].to_list()
    assert got["gpus"].to_list() == pytest.approx(want)
    assert got["gpu_s"].to_list() == pytest.approx([g * 3600 for g in want])
    assert got["req_gpus"].to_list() == pytest.approx(want)
