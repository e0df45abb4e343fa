"""The gang level's state in the large-job wait causes and the stranded GPUs, by hand
(METRICS.md "Domain capacity, stranded GPUs and large-job waits"): H is the healthy size of
the map in force, the ``Resources``-spell rule counts each node once, as the hour-start rule.

Cluster ``c``: nodes of 4 GPUs; hours h0 = 2026-11-02 00:00 and h1 = 01:00 UTC.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from metrics.domains import (
    domain_capacity_hourly,
    gang_level,
    large_job_wait_causes,
    stranded_hourly,
)
from metrics.schema import UTC_DATETIME
from pipelines.core.topology import topology_intervals
from pipelines.slurm._topology_yaml import parse_topology_yaml

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


def test_resources_rule_counts_a_node_drained_under_a_running_job_once() -> None:
    """Blocks b1 = n1–n4 and b2 = n5–n8. Jobs 40 (n1) and 41 (n2, 4 GPUs) and 42 (n5–n8, 16
    GPUs) run h0 − 1 h → h0 + 3 h; n1 is drained at h0 − 30 min, while 40 still runs on it.
    Job 43 (8 GPUs = 2 nodes) is eligible h0 + 10 min, seen pending for Resources until it
    starts at h1 on n3, n4.

    At h0 + 10 min: n1 drained (not free, once), n2 held, n3 and n4 whole free; b2 all held.
    Free GPUs 4 + 4 = 8 ≥ 8; k = ceil(2/4) = 1 and b1 holds 2 ≥ 2: other, 3000 s — whether 40
    holds 4 GPUs (taking them off the drained node's again left 28 − 24 = 4 < 8: priority) or
    none (a CPU-only job: taking the drained node off b1's unheld nodes again left 1 < 2:
    fragmentation, 8 × 3000 = 24,000 GPU-s blocked)."""
    hosts = [f"n{i}" for i in range(1, 9)]
    topo = _topology({"b1": hosts[:4], "b2": hosts[4:]})
    inv, down = _inventory(hosts), _down(["n1"], H0 - 30 * M)
    before, after = H0 - 60 * M, H0 + 180 * M
    for cpu_only_gpus in (4.0, 0.0):
        jobs = _jobs(
            [
                ("40", cpu_only_gpus, before, before, after, ["n1"]),
                ("41", 4.0, before, before, after, ["n2"]),
                ("42", 16.0, before, before, after, hosts[4:]),
                ("43", 8.0, H0 + 10 * M, H1, H1 + 60 * M, ["n3", "n4"]),
            ]
        )
        capacity = domain_capacity_hourly(topo, jobs, _hours(), inv, down=down)
        causes = large_job_wait_causes(
            capacity, jobs, inv, _as_of(H1 + 120 * M), topology=topo, min_gpus=8,
            reasons=_spells("43", H0 + 10 * M, H1), down=down,
        ).collect()  # fmt: skip
        assert causes.select(_CAUSES).rows() == [("43", 3000.0, 0.0, 0.0, 3000.0, 0.0)]


def test_resources_rule_leaves_attempts_on_unmapped_nodes_out() -> None:
    """Blocks b1 = n1, n2 and b2 = n3, n4; n9 is in the inventory but in no block. Job 10 (8
    GPUs on n1, n3) and job 11 (4 GPUs on n9) run h0 → h0 + 2 h; job 12 (8 GPUs = 2 nodes) is
    eligible h0 + 10 min and seen pending for Resources until it starts at h0 + 2 h.

    At h0 + 10 min and h1 the blocks' free GPUs are 16 − 8 = 8 ≥ 8 (job 11's 4 GPUs are on no
    block's node); whole free nodes b1 = 1 (n2), b2 = 1 (n4); k = 1 and 1 < 2: fragmentation
    3000 + 3600 = 6600 s, 8 × 6600 = 52,800 GPU-s blocked (taking job 11 off too left 4 < 8:
    priority), as the hour-start rule says without the polls."""
    hosts = ["n1", "n2", "n3", "n4", "n9"]
    topo = _topology({"b1": ["n1", "n2"], "b2": ["n3", "n4"]})
    inv, end = _inventory(hosts), H0 + 120 * M
    jobs = _jobs(
        [
            ("10", 8.0, H0, H0, end, ["n1", "n3"]),
            ("11", 4.0, H0, H0, end, ["n9"]),
            ("12", 8.0, H0 + 10 * M, end, end + 60 * M, ["n1", "n2"]),
        ]
    )
    capacity = domain_capacity_hourly(topo, jobs, _hours(), inv)
    want = [("12", 6600.0, 0.0, 6600.0, 0.0, 52_800.0)]
    for reasons in (None, _spells("12", H0 + 10 * M, end)):
        causes = large_job_wait_causes(
            capacity, jobs, inv, _as_of(end + 60 * M), topology=topo, min_gpus=8,
            reasons=reasons,
        ).collect()  # fmt: skip
        assert causes.select(_CAUSES).rows() == want


D1, D3 = H0 - dt.timedelta(days=1), H0 + dt.timedelta(days=1)


def _tree_then_blocks() -> pl.LazyFrame:
    """From 11-01: a tree, leaves s0–s3 of 2 nodes (level switch-1) under root (switch-2);
    from 11-03: the same pairs as blocks b1–b4 (level block)."""
    pairs = [[f"n{i}", f"n{i + 1}"] for i in (1, 3, 5, 7)]
    leaves = _topology({f"s{i}": p for i, p in enumerate(pairs)}, "switch-1")
    root = _topology({"root": [n for p in pairs for n in p]}, "switch-2")
    blocks = _topology({f"b{i + 1}": p for i, p in enumerate(pairs)})
    first = pl.concat([leaves, root]).with_columns(
        pl.lit(D1, T).alias("valid_from"), pl.lit(D3, T).alias("valid_to")
    )
    return pl.concat([first, blocks.with_columns(pl.lit(D3, T).alias("valid_from"))])


def test_the_gang_level_is_decided_per_map() -> None:
    """A tree in force 11-01 → 11-03, blocks from 11-03; each map's finest level is 4 domains
    of 2 nodes (a tie across maps that picked ``block``, by name, for every hour). Job 60 (16
    GPUs) runs on n1, n3, n5, n7 from h0 − 1 h to h0 + 2 h; job 61 (8 GPUs = 2 nodes) is
    eligible h0 (11-02 00:00) and starts h0 + 2 h.

    Under the tree, at h0 and h1 each leaf has 1 whole free node: 16 free GPUs ≥ 8, k = 1 and
    1 < 2: fragmentation 7,200 s, 16 × 7,200 = 115,200 GPU-s blocked (at ``block``, a level the
    tree lacks, it was other 7,200 s). Stranded for the 8-GPU shape (n = 2 ≤ H = 2): 4 leaves ×
    (1 mod 2) × 4 = 16 GPUs at level switch-1 (there was no row)."""
    topo = _tree_then_blocks()
    assert gang_level(topo).collect().rows() == [
        ("c", D1, D3, "switch-1"),
        ("c", D3, None, "block"),
    ]
    hosts = [f"n{i}" for i in range(1, 9)]
    inv, end = _inventory(hosts), H0 + 120 * M
    jobs = _jobs(
        [
            ("60", 16.0, H0 - 60 * M, H0 - 60 * M, end, ["n1", "n3", "n5", "n7"]),
            ("61", 8.0, H0, end, end + 60 * M, ["n1", "n2"]),
        ]
    )
    capacity = domain_capacity_hourly(topo, jobs, _hours(), inv)
    causes = large_job_wait_causes(
        capacity, jobs, inv, _as_of(end + 60 * M), topology=topo, min_gpus=8
    ).collect()
    assert causes.select(_CAUSES).rows() == [("61", 7200.0, 0.0, 7200.0, 0.0, 115_200.0)]
    stranded = stranded_hourly(topo, jobs, _hours(), inv, _as_of(end + 60 * M)).collect()
    assert stranded.select(
        "hour", "level", "free_gpus", "pending_jobs", "stranded_gpus"
    ).rows() == [
        (H0, "switch-1", 16.0, 1, 16.0),
        (H1, "switch-1", 16.0, 1, 16.0),
    ]


def test_a_topology_yaml_gang_level_is_its_cluster_default_topologys() -> None:
    """The fixture ``topology.yaml``: topo1 (``cluster_default: true``) a tree with leaves s1, s2
    of 2 nodes (level switch-1) under sw_root; topo2 blocks b1–b4 of 4 (level topo2/block).
    Jobs naming no ``Topology=`` use topo1, so the gang level is switch-1, though topo2/block
    has more domains (4 against 2)."""
    fixture = Path(__file__).parents[1] / "fixtures" / "slurm_topology" / "topology.yaml"
    rows = parse_topology_yaml(fixture, cluster="c", valid_from=D1).rows
    none = pl.DataFrame(schema={"cluster": pl.String(), "host": pl.String(), "rack": pl.String()})
    topo = topology_intervals(rows, rows.clear(), none)
    assert gang_level(topo.lazy()).collect().rows() == [("c", D1, None, "switch-1")]
