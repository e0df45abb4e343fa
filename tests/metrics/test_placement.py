"""Gang placement (METRICS.md "Topology and gang placement"): domains used against the fewest
possible, on hand-built maps of 18-node blocks."""

from __future__ import annotations

import datetime as dt
import random

import polars as pl
from polars.testing import assert_frame_equal

from metrics.domains import hourly_node_states
from metrics.placement import (
    FRAGMENTATION_SCHEMA,
    PLACEMENT_SCHEMA,
    _healthy_size,
    _maps,
    fragmentation_hourly,
    job_placement,
)

T0 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
START = T0 + dt.timedelta(hours=1)
_TS = pl.Datetime("us", "UTC")


def _blocks(*sizes: int, valid_from: dt.datetime | None = T0, valid_to: dt.datetime | None = None,
            prefix: str = "b") -> pl.DataFrame:  # fmt: skip
    """Blocks b1, b2, … of the given sizes over nodes n1, n2, … in order."""
    domain, node = [], []
    first = 1
    for i, size in enumerate(sizes, 1):
        domain += [f"{prefix}{i}"] * size
        node += [f"n{k}" for k in range(first, first + size)]
        first += size
    n = len(node)
    return pl.DataFrame(
        {"cluster": ["c"] * n, "level": ["block"] * n, "domain": domain, "node": node,
         "valid_from": [valid_from] * n, "valid_to": [valid_to] * n},
        schema_overrides={"valid_from": _TS, "valid_to": _TS},
    )  # fmt: skip


def _jobs(*node_lists: list[str], segment: list[int | None] | None = None) -> pl.DataFrame:
    n = len(node_lists)
    frame = pl.DataFrame(
        {"cluster": ["c"] * n, "job_id": [str(i) for i in range(1, n + 1)], "attempt": [1] * n,
         "start_at": [START] * n, "node_list": list(node_lists)},
        schema_overrides={"start_at": _TS},
    )  # fmt: skip
    if segment is not None:
        frame = frame.with_columns(pl.Series("segment_size", segment, dtype=pl.Int64()))
    return frame


def _nodes(first: int, last: int) -> list[str]:
    return [f"n{k}" for k in range(first, last + 1)]


def _expected(rows: list[tuple[str, int, int, int, int]]) -> pl.DataFrame:
    """(job_id, nodes, domain_size, used, min) → placement rows at level ``block``."""
    return pl.DataFrame(
        {"cluster": ["c"] * len(rows), "job_id": [r[0] for r in rows], "attempt": [1] * len(rows),
         "level": ["block"] * len(rows), "start_at": [START] * len(rows),
         "nodes": [r[1] for r in rows], "domain_size": [r[2] for r in rows],
         "domains_used": [r[3] for r in rows], "domains_min": [r[4] for r in rows],
         "spread": [r[3] - r[4] for r in rows]},
        schema=PLACEMENT_SCHEMA,
    )  # fmt: skip


def test_eight_nodes_over_two_blocks_spread_by_one() -> None:
    """8 nodes n15–n22 on 18-node blocks (b1 = n1–n18, b2 = n19–n36): 4 in b1, 4 in b2, so
    used 2; min ceil(8/18) = 1; spread 1. Job 2 (n1–n8) sits in b1: used 1, spread 0."""
    got = job_placement(_jobs(_nodes(15, 22), _nodes(1, 8)).lazy(), _blocks(18, 18).lazy())
    assert_frame_equal(got.collect(), _expected([("1", 8, 18, 2, 1), ("2", 8, 18, 1, 1)]))


def test_segment_size_counts_whole_segments_per_domain() -> None:
    """SegmentSize 4, 8 nodes: ceil((8/4) / floor(18/4)) = ceil(2/4) = 1. SegmentSize 10, 30
    nodes n1–n30 (b1 and b2): ceil((30/10) / floor(18/10)) = ceil(3/1) = 3, where without
    segments ceil(30/18) = 2; it used 2 domains, so spread −1 says segments of that size could
    not have been placed as it was."""
    jobs = _jobs(_nodes(15, 22), _nodes(1, 30), segment=[4, 10])
    got = job_placement(jobs.lazy(), _blocks(18, 18).lazy()).collect()
    assert_frame_equal(got, _expected([("1", 8, 18, 2, 1), ("2", 30, 18, 2, 3)]))


def test_domain_size_is_the_largest_domain_of_the_map() -> None:
    """Blocks of 10 and 18 nodes: H = 18, so a 12-node job across both (n5–n16) has min
    ceil(12/18) = 1 and spread 1."""
    got = job_placement(_jobs(_nodes(5, 16)).lazy(), _blocks(10, 18).lazy()).collect()
    assert_frame_equal(got, _expected([("1", 12, 18, 2, 1)]))


def test_healthy_size_counts_only_nodes_up_at_the_start() -> None:
    """b1 has n1–n3 down and b2 n19–n26 down at the start: healthy sizes 15 and 10, so H = 15;
    a 16-node job n3–n18 on b1 counts 16 up nodes itself (H = max(15, 16) = 16): min 1.
    A 16-node job over b1 and b2 (n11–n26): min ceil(16/15) = 2, used 2, spread 0. A down
    interval that ended before the start (n4, ended at T0 + 30 min) does not count."""
    down = pl.DataFrame(
        {"cluster": ["c"] * 12, "node": [*_nodes(1, 3), *_nodes(19, 26), "n4"],
         "start_at": [T0] * 12, "end_at": [None] * 11 + [T0 + dt.timedelta(minutes=30)]},
        schema_overrides={"start_at": _TS, "end_at": _TS},
    )  # fmt: skip
    jobs = _jobs(_nodes(3, 18), _nodes(11, 26))
    got = job_placement(jobs.lazy(), _blocks(18, 18).lazy(), down=down.lazy()).collect()
    assert_frame_equal(got, _expected([("1", 16, 16, 1, 1), ("2", 16, 15, 2, 2)]))


def test_the_map_in_force_at_the_start_is_used() -> None:
    """The map until T0 + 30 min puts n1–n36 in one block of 36; from then on two of 18. A
    job starting at T0 + 1 h on n15–n22 is placed with the second: used 2, min 1."""
    old = _blocks(36, valid_to=T0 + dt.timedelta(minutes=30), prefix="old")
    new = _blocks(18, 18, valid_from=T0 + dt.timedelta(minutes=30))
    got = job_placement(_jobs(_nodes(15, 22)).lazy(), pl.concat([old, new]).lazy()).collect()
    assert_frame_equal(got, _expected([("1", 8, 18, 2, 1)]))


def test_an_attempt_with_a_node_the_map_lacks_has_no_row() -> None:
    """n36 and n99 on a map of n1–n36: n99 is not placed, so no row; an attempt without a
    start or without nodes has none either."""
    jobs = pl.concat(
        [
            _jobs(["n36", "n99"], []),
            _jobs(["n1"]).with_columns(pl.lit(None, dtype=_TS).alias("start_at"),
                                       pl.lit("3").alias("job_id")),
        ]
    )  # fmt: skip
    got = job_placement(jobs.lazy(), _blocks(18, 18).lazy()).collect()
    assert got.height == 0
    assert got.schema == pl.Schema(PLACEMENT_SCHEMA)


def test_a_map_in_force_since_ever_places_every_start() -> None:
    """Inventory racks have no ``valid_from``: the map applies to every start."""
    got = job_placement(
        _jobs(_nodes(15, 22)).lazy(), _blocks(18, 18, valid_from=None).lazy()
    ).collect()
    assert_frame_equal(got, _expected([("1", 8, 18, 2, 1)]))


def _hours(*offsets: int) -> pl.DataFrame:
    return pl.DataFrame(
        {"cluster": ["c"] * len(offsets), "hour": [T0 + dt.timedelta(hours=h) for h in offsets]},
        schema_overrides={"hour": _TS},
    )


def _running(nodes: list[str], start: dt.datetime, end: dt.datetime | None) -> pl.DataFrame:
    return pl.DataFrame(
        {"cluster": ["c"], "start_at": [start], "end_at": [end], "node_list": [nodes]},
        schema_overrides={"start_at": _TS, "end_at": _TS},
    )


def test_free_nodes_split_over_two_blocks_strand_a_gang_of_eight() -> None:
    """An attempt on n1–n12 and n19–n30 from T0 − 30 min to T0 + 90 min leaves 6 free in b1
    and 6 in b2 at T0 and T0 + 1 h: slots for G = 8 are 0 + 0 = 0 against floor(12/8) = 1
    (1 stranded); for G = 4, 1 + 1 = 2 against floor(12/4) = 3 (1 stranded). At T0 + 2 h it
    has ended, 36 free: G = 8 gives 2 + 2 = 4 = floor(36/8); G = 4 gives 4 + 4 = 8 against
    floor(36/4) = 9 (1 stranded)."""
    jobs = _running([*_nodes(1, 12), *_nodes(19, 30)], T0 - dt.timedelta(minutes=30),
                    T0 + dt.timedelta(minutes=90))  # fmt: skip
    got = fragmentation_hourly(
        _blocks(18, 18, valid_from=None).lazy(), jobs.lazy(), _hours(0, 1, 2).lazy(),
        gang_nodes=(4, 8),
    ).collect()  # fmt: skip
    rows = [  # hour offset, G, free, domain slots, unfragmented
        (0, 4, 12, 2, 3), (0, 8, 12, 0, 1), (1, 4, 12, 2, 3), (1, 8, 12, 0, 1),
        (2, 4, 36, 8, 9), (2, 8, 36, 4, 4),
    ]  # fmt: skip
    expected = pl.DataFrame(
        {"cluster": ["c"] * 6, "hour": [T0 + dt.timedelta(hours=r[0]) for r in rows],
         "level": ["block"] * 6, "gang_nodes": [r[1] for r in rows],
         "free_nodes": [r[2] for r in rows], "domain_slots": [r[3] for r in rows],
         "unfragmented_slots": [r[4] for r in rows],
         "stranded_slots": [r[4] - r[3] for r in rows]},
        schema=FRAGMENTATION_SCHEMA,
    )  # fmt: skip
    assert_frame_equal(got, expected)


def test_down_nodes_and_running_attempts_are_not_free() -> None:
    """At T0: an attempt still running (no end) holds n1–n10, n11–n14 are down (open): b1 has
    4 free (n15–n18), b2 18: G = 8 → 0 + 2 = 2 slots against floor(22/8) = 2."""
    down = pl.DataFrame(
        {"cluster": ["c"] * 4, "node": _nodes(11, 14), "start_at": [T0] * 4, "end_at": [None] * 4},
        schema_overrides={"start_at": _TS, "end_at": _TS},
    )  # fmt: skip
    got = fragmentation_hourly(
        _blocks(18, 18).lazy(), _running(_nodes(1, 10), T0, None).lazy(), _hours(0).lazy(),
        down=down.lazy(), gang_nodes=(8,),
    ).collect()  # fmt: skip
    assert got.select("free_nodes", "domain_slots", "unfragmented_slots").rows() == [(22, 2, 2)]


def _healthy_size_by_brute_force(topology: pl.DataFrame, down: pl.DataFrame) -> pl.DataFrame:
    """The largest number of nodes up in one domain at every start or end of a down interval,
    counted directly: each such time against every interval and every domain of the map."""
    times = pl.concat([down["start_at"], down["end_at"].drop_nulls()]).unique().sort()
    rows = []
    for at in times.to_list():
        up = down.filter(
            (pl.col("start_at") <= at) & (pl.col("end_at").is_null() | (at < pl.col("end_at")))
        )["node"]
        per_domain = topology.group_by("domain").agg(
            (~pl.col("node").is_in(up.implode())).sum().alias("up")
        )
        rows.append((at, int(per_domain["up"].max())))  # type: ignore[arg-type]
    return pl.DataFrame(rows, schema={"at": _TS, "healthy_size": pl.Int64()}, orient="row")


def test_healthy_size_equals_a_direct_count_on_random_outages() -> None:
    """200 random down intervals (some still open, some of zero length, some overlapping on one
    node) on blocks of 18, 18 and 12 nodes: the healthy size at every start and end equals a
    direct count of the nodes up in each block at that time, maximised over blocks (so the
    pairs of times and intervals that meet are all formed, and only those count)."""
    rng = random.Random(19)
    topo = _blocks(18, 18, 12)
    starts = [T0 + dt.timedelta(minutes=rng.randrange(0, 2000)) for _ in range(200)]
    down = pl.DataFrame(
        {"cluster": ["c"] * 200,
         "node": [f"n{rng.randrange(1, 49)}" for _ in range(200)],
         "start_at": starts,
         "end_at": [None if rng.random() < 0.05
                    else s if rng.random() < 0.05  # zero-length: down at no instant
                    else s + dt.timedelta(minutes=rng.randrange(1, 600))
                    for s in starts]},
        schema_overrides={"start_at": _TS, "end_at": _TS},
    )  # fmt: skip
    maps = _maps(topo.lazy())
    sizes = maps.group_by("cluster", "level", "valid_from", "domain").agg(
        pl.len().cast(pl.Int64).alias("_size")
    )
    got = (
        _healthy_size(maps, sizes, down.lazy())
        .collect()
        .select("at", pl.col("healthy_size").cast(pl.Int64))
        .sort("at")
    )
    want = _healthy_size_by_brute_force(topo, down)
    assert got.height == want.height > 300
    assert_frame_equal(got, want)
    assert want["healthy_size"].min() < 18  # outages do shrink the largest block at times


def test_fragmentation_from_node_states_equals_its_own_count_on_random_attempts() -> None:
    """300 random attempts (1–6 nodes, some still running, some ending before the hours, some
    with a repeated node) and 40 down intervals (some open) on blocks of 18, 18 and 12 nodes,
    over 30 hours: the fragmentation computed from :func:`metrics.domains.hourly_node_states`
    (free: healthy and held by no attempt) equals the one computed from its own coverage of
    the attempts and the down intervals, row for row; and some hour has a stranded slot, so
    the comparison is not of empty tables."""
    rng = random.Random(19)
    topo = _blocks(18, 18, 12, valid_from=None)
    hour = dt.timedelta(hours=1)

    def instant() -> dt.datetime:
        return T0 + dt.timedelta(minutes=rng.randrange(-300, 30 * 60))

    starts = [instant() for _ in range(300)]
    jobs = pl.DataFrame(
        {"cluster": ["c"] * 300, "start_at": starts,
         "end_at": [None if rng.random() < 0.1 else s + dt.timedelta(minutes=rng.randrange(1, 600))
                    for s in starts],
         "gpus": [8.0] * 300,
         "node_list": [[f"n{rng.randrange(1, 49)}" for _ in range(rng.randrange(1, 7))]
                       for _ in starts]},
        schema_overrides={"start_at": _TS, "end_at": _TS},
    )  # fmt: skip
    down_starts = [instant() for _ in range(40)]
    down = pl.DataFrame(
        {"cluster": ["c"] * 40, "node": [f"n{rng.randrange(1, 49)}" for _ in down_starts],
         "start_at": down_starts,
         "end_at": [None if rng.random() < 0.2 else s + dt.timedelta(minutes=rng.randrange(0, 300))
                    for s in down_starts]},
        schema_overrides={"start_at": _TS, "end_at": _TS},
    )  # fmt: skip
    hours = pl.DataFrame(
        {"cluster": ["c"] * 30, "hour": [T0 + i * hour for i in range(30)]},
        schema_overrides={"hour": _TS},
    )
    inventory = pl.DataFrame({"cluster": ["c"] * 48, "host": _nodes(1, 48), "gpus": [8.0] * 48})
    states = hourly_node_states(
        topo.lazy(), jobs.lazy(), hours.lazy(), inventory.lazy(), down.lazy()
    )
    own = fragmentation_hourly(
        topo.lazy(), jobs.lazy(), hours.lazy(), down=down.lazy(), gang_nodes=(2, 4, 8)
    ).collect()
    got = fragmentation_hourly(
        topo.lazy(), jobs.lazy(), hours.lazy(), down=down.lazy(), gang_nodes=(2, 4, 8),
        states=states,
    ).collect()  # fmt: skip
    assert own.height == 30 * 3
    assert own["stranded_slots"].max() > 0  # type: ignore[operator]
    assert_frame_equal(got, own)
