"""The gang level's state in the large-job wait causes and the stranded GPUs, by hand
(METRICS.md "Domain capacity, stranded GPUs and large-job waits"): H is the healthy size of
the map in force, the ``Resources``-spell rule counts each node once, as the hour-start rule.

Cluster ``c``: nodes of 4 GPUs; hours h0 = 2026-11-02 00:00 and h1 = 01:00 UTC.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from metrics.domains import domain_capacity_hourly, large_job_wait_causes, stranded_hourly
from metrics.schema import UTC_DATETIME

H0 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
H1 = H0 + dt.timedelta(hours=1)
M = dt.timedelta(minutes=1)
T = UTC_DATETIME
_CAUSES = ("job_id", "wait_s", "priority_s", "fragmentation_s", "other_s", "blocked_idle_gpu_s")


def _topology(blocks: dict[str, list[str]], level: str = "block") -> pl.LazyFrame:
    rows = [(d, n) for d, nodes in blocks.items() for n in nodes]
    return pl.LazyFrame(
        {
            "cluster": ["c"] * len(rows),
            "level": [level] * len(rows),
            "domain": [d for d, _ in rows],
            "node": [n for _, n in rows],
            "valid_from": [None] * len(rows),
            "valid_to": [None] * len(rows),
        },
        schema_overrides={"valid_from": T, "valid_to": T},
    )


def _inventory(hosts: list[str]) -> pl.LazyFrame:
    return pl.LazyFrame({"cluster": ["c"] * len(hosts), "host": hosts, "gpus": [4.0] * len(hosts)})


def _jobs(
    rows: list[tuple[str, float, dt.datetime, dt.datetime, dt.datetime, list[str]]],
) -> pl.LazyFrame:
    """``job_id, gpus, eligible_at, start_at, end_at, node_list`` per attempt (team t, attempt
    1, asked = held GPUs)."""
    return pl.LazyFrame(
        {
            "cluster": ["c"] * len(rows),
            "job_id": [r[0] for r in rows],
            "attempt": [1] * len(rows),
            "team": ["t"] * len(rows),
            "gpus": [r[1] for r in rows],
            "req_gpus": [r[1] for r in rows],
            "eligible_at": [r[2] for r in rows],
            "start_at": [r[3] for r in rows],
            "end_at": [r[4] for r in rows],
            "node_list": [r[5] for r in rows],
        },
        schema_overrides={"eligible_at": T, "start_at": T, "end_at": T},
    )


def _down(nodes: list[str], since: dt.datetime) -> pl.LazyFrame:
    return pl.LazyFrame(
        {"cluster": ["c"] * len(nodes), "node": nodes, "start_at": [since] * len(nodes),
         "end_at": [None] * len(nodes)},
        schema_overrides={"start_at": T, "end_at": T},
    )  # fmt: skip


def _hours() -> pl.LazyFrame:
    return pl.LazyFrame({"cluster": ["c", "c"], "hour": [H0, H1]}, schema_overrides={"hour": T})


def _as_of(at: dt.datetime) -> pl.LazyFrame:
    return pl.LazyFrame({"cluster": ["c"], "as_of": [at]}, schema_overrides={"as_of": T})


def _spells(job_id: str, start: dt.datetime, end: dt.datetime) -> pl.LazyFrame:
    return pl.LazyFrame(
        {"cluster": ["c"], "job_id": [job_id], "reason": ["Resources"], "spell_start": [start],
         "spell_end": [end]},
        schema_overrides={"spell_start": T, "spell_end": T},
    )  # fmt: skip


def test_h_is_the_healthy_size_with_drained_nodes() -> None:
    """Blocks b1 = n1–n4 and b2 = n5–n8; n4 and n8 drained since the day before. Job J
    (16 GPUs = n 4 nodes) eligible h0, started h0 + 2 h on n1, n2, n5, n6.

    At h0 and h1 each block has 3 healthy nodes, all whole free: 24 free GPUs ≥ 16. The
    healthy H = 3, so k = ceil(4/3) = 2 blocks and the two hold 3 + 3 = 6 ≥ 4: J fits, its
    wait is other (7,200 s; no block can hold 4 nodes while the drains last, so no placement
    is fragmentation). Stranded for the 16-GPU shape: n = 4 > H = 3, pooled:
    (3 + 3 mod 4) × 4 = 8 GPUs at each hour (with the configured H = 4 it was fragmentation
    7,200 s, 172,800 GPU-s blocked, and the in-domain (3 mod 4 + 3 mod 4) × 4 = 24 stranded)."""
    hosts = [f"n{i}" for i in range(1, 9)]
    topo = _topology({"b1": hosts[:4], "b2": hosts[4:]})
    jobs = _jobs([("J", 16.0, H0, H0 + 120 * M, H0 + 240 * M, ["n1", "n2", "n5", "n6"])])
    inv, down = _inventory(hosts), _down(["n4", "n8"], H0 - 24 * 60 * M)
    capacity = domain_capacity_hourly(topo, jobs, _hours(), inv, down=down)
    causes = large_job_wait_causes(
        capacity, jobs, inv, _as_of(H0 + 180 * M), topology=topo, min_gpus=16
    ).collect()
    assert causes.select(_CAUSES).rows() == [("J", 7200.0, 0.0, 0.0, 7200.0, 0.0)]
    stranded = stranded_hourly(topo, jobs, _hours(), inv, _as_of(H0 + 180 * M), down=down)
    assert stranded.collect().select("hour", "free_gpus", "stranded_gpus").rows() == [
        (H0, 24.0, 8.0),
        (H1, 24.0, 8.0),
    ]
