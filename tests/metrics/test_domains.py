"""Domain capacity, segment slots, stranded GPUs and large-job wait causes on a hand-built
cluster (METRICS.md "Domain capacity, stranded GPUs and large-job waits").

The cluster ``c``: racks d1 = n1–n4 and d2 = n5–n8, 4 GPUs per node (32 GPUs); hours
h0 = 2026-11-02 00:00 and h1 = 01:00 UTC, data cut-off h1 + 1 h.

* attempt A (team t1): 8 GPUs on n1, n2 from h0 − 1 h to h1 + 30 min: holds 4 + 4 at h0 and h1;
* attempt B (team t2): 2 GPUs on n5 from h0 to h0 + 30 min: holds 2 of n5 at h0 only;
* n8 down from h0 − 1 h to h1 (healthy again at h1);
* P2 (t0): 4 GPUs, eligible h0 − 30 min, started h0 + 30 min (on n6, ended h0 + 50 min);
* Q (t2): 12 GPUs, eligible h0 + 30 min, started h1 + 30 min;
* P1 (t1): 12 GPUs, eligible h0, never started, still pending;
* R (t0): 24 GPUs, eligible h0, never started, cancelled at h1.
"""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from metrics.domains import (
    _team_held,
    domain_capacity_hourly,
    gang_level,
    hourly_node_states,
    large_job_wait_causes,
    segment_capacity_hourly,
    stranded_hourly,
    topology_reason,
)
from metrics.schema import UTC_DATETIME

H0 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
H1 = H0 + dt.timedelta(hours=1)
M = dt.timedelta(minutes=1)
T = UTC_DATETIME


def _topology() -> pl.LazyFrame:
    nodes = [f"n{i}" for i in range(1, 9)]
    return pl.LazyFrame(
        {
            "cluster": ["c"] * 8,
            "level": ["rack"] * 8,
            "domain": ["d1"] * 4 + ["d2"] * 4,
            "node": nodes,
            "valid_from": [None] * 8,
            "valid_to": [None] * 8,
        },
        schema_overrides={"valid_from": T, "valid_to": T},
    )


def _inventory() -> pl.LazyFrame:
    return pl.LazyFrame({"cluster": ["c"] * 8, "host": [f"n{i}" for i in range(1, 9)],
                         "gpus": [4.0] * 8})  # fmt: skip


def _jobs() -> pl.LazyFrame:
    return pl.LazyFrame(
        {
            "cluster": ["c"] * 4,
            "job_id": ["A", "B", "P2", "Q"],
            "attempt": [1, 1, 1, 1],
            "team": ["t1", "t2", "t0", "t2"],
            "gpus": [8.0, 2.0, 4.0, 12.0],
            "req_gpus": [8.0, 2.0, 4.0, 12.0],
            "eligible_at": [H0 - 60 * M, H0, H0 - 30 * M, H0 + 30 * M],
            "start_at": [H0 - 60 * M, H0, H0 + 30 * M, H1 + 30 * M],
            "end_at": [H1 + 30 * M, H0 + 30 * M, H0 + 50 * M, H1 + 120 * M],
            "node_list": [["n1", "n2"], ["n5"], ["n6"], ["n5", "n6", "n7"]],
        },
        schema_overrides={"eligible_at": T, "start_at": T, "end_at": T},
    )


def _pending() -> pl.LazyFrame:
    return pl.LazyFrame(
        {"cluster": ["c", "c"], "job_id": ["P1", "R"], "team": ["t1", "t0"],
         "req_gpus": [12.0, 24.0], "eligible_at": [H0, H0], "end_at": [None, H1]},
        schema_overrides={"eligible_at": T, "end_at": T},
    )  # fmt: skip


def _down() -> pl.LazyFrame:
    return pl.LazyFrame(
        {"cluster": ["c"], "node": ["n8"], "start_at": [H0 - 60 * M], "end_at": [H1]},
        schema_overrides={"start_at": T, "end_at": T},
    )


def _hours() -> pl.LazyFrame:
    return pl.LazyFrame({"cluster": ["c", "c"], "hour": [H0, H1]}, schema_overrides={"hour": T})


def _as_of() -> pl.LazyFrame:
    return pl.LazyFrame({"cluster": ["c"], "as_of": [H1 + 60 * M]}, schema_overrides={"as_of": T})


def _capacity() -> pl.LazyFrame:
    return domain_capacity_hourly(
        _topology(), _jobs(), _hours(), _inventory(), down=_down(), segment_sizes=(1, 2, 4)
    )


def test_domain_capacity_counts_healthy_held_and_free_nodes_at_each_hour_start() -> None:
    """h0: d1 has n1, n2 held by A (8 GPUs) and n3, n4 free: 4 healthy, 2 allocated, 2 free,
    16 healthy GPUs, 8 free; largest segment of (1, 2, 4) that fits 2 free nodes: 2.
    d2: n8 down (healthy 3, degraded 1), n5 partly held by B (2 of 4), n6, n7 free: allocated
    1, free 2; healthy GPUs 12, free 2 + 4 + 4 = 10, allocated 2; largest 2.
    h1: B ended and n8 is back: d2 all 4 free (16 GPUs), largest segment 4; d1 as at h0."""
    got = _capacity().collect()
    want = pl.DataFrame(
        {
            "cluster": ["c"] * 4,
            "hour": [H0, H0, H1, H1],
            "level": ["rack"] * 4,
            "domain": ["d1", "d2", "d1", "d2"],
            "nodes": [4, 4, 4, 4],
            "healthy_nodes": [4, 3, 4, 4],
            "degraded_nodes": [0, 1, 0, 0],
            "allocated_nodes": [2, 1, 2, 0],
            "free_nodes": [2, 2, 2, 4],
            "healthy_gpus": [16.0, 12.0, 16.0, 16.0],
            "allocated_gpus": [8.0, 2.0, 8.0, 0.0],
            "free_gpus": [8.0, 10.0, 8.0, 16.0],
            "largest_gang_nodes": [2, 2, 2, 4],
            "largest_segment": [2, 2, 2, 4],
        },
        schema_overrides={"hour": T},
    )
    assert_frame_equal(got, want)


def test_segment_capacity_efficiency_shows_what_a_failed_tray_costs() -> None:
    """h0 (healthy d1 = 4, d2 = 3; free 2 and 2): s = 4: configured slots 1 + 1 = 2, healthy
    floor(4/4) + floor(3/4) = 1, free 0 + 0 = 0, usable 1 × 4 = 4 nodes, efficiency 4 / 7;
    s = 2: configured 2 + 2 = 4, healthy 2 + 1 = 3, free 1 + 1 = 2, usable 6, efficiency 6/7;
    s = 1: every healthy node usable, efficiency 7/7 = 1."""
    got = segment_capacity_hourly(_capacity(), (1, 2, 4)).filter(pl.col("hour") == H0).collect()
    assert got.select("segment_size", "configured_slots", "healthy_slots", "free_slots",
                      "usable_nodes").rows() == [(1, 8, 7, 4, 7), (2, 4, 3, 2, 6),
                                                 (4, 2, 1, 0, 4)]  # fmt: skip
    assert got["efficiency"].to_list() == [1.0, 6 / 7, 4 / 7]
    assert got["healthy_nodes"].to_list() == [7, 7, 7]


def test_gang_level_is_the_finest_level_with_multi_node_domains() -> None:
    """Levels rack (2 domains of 4) and spine (1 domain of 8) and host (8 of 1): rack."""
    spine = _topology().with_columns(pl.lit("spine").alias("level"), pl.lit("s1").alias("domain"))
    host = _topology().with_columns(pl.lit("host").alias("level"), pl.col("node").alias("domain"))
    got = gang_level(pl.concat([_topology(), spine, host])).collect()
    assert got.rows() == [("c", dt.datetime(1970, 1, 1, tzinfo=dt.UTC), None, "rack")]


def test_stranded_gpus_per_smallest_shape_and_their_expectation_over_the_mix() -> None:
    """h0: pending P2 (4 GPUs: n = 1), P1 (12: n = 3 <= H = 4) and R (24: n = 6 > H).
    Healthy free GPUs per node: n1 0, n2 0, n3 4, n4 4, n5 2, n6 4, n7 4 (n8 down): 18.
    r = 4: nodes with fewer than 4 free: n1 0 + n2 0 + n5 2 = 2 (stranded_gpus, r_min = 4).
    r = 12: partly held free 2, plus per domain (2 mod 3)·4 + (2 mod 3)·4 = 16: 18.
    r = 24: partly held 2, plus pooled (2 + 2 mod 6)·4 = 16: 18.
    expected = (2 + 18 + 18) / 3 = 38/3. Gang demand (r > 4 GPUs per node) in h0: P1 12 ×
    3600 + R 24 × 3600 + Q 12 × 1800 (eligible h0 + 30 min) = 151,200 GPU-s.
    h1: pending P1 and Q (12 each; R cancelled at h1, P2 started). Whole free d1 2, d2 4, no
    partly held node with free GPUs: (2 mod 3)·4 + (4 mod 3)·4 = 12; free 8 + 16 = 24; gang
    demand P1 43,200 + Q 12 × 1800 = 64,800."""
    got = stranded_hourly(
        _topology(), _jobs(), _hours(), _inventory(), _as_of(), pending=_pending(), down=_down()
    ).collect()
    want = pl.DataFrame(
        {
            "cluster": ["c", "c"],
            "hour": [H0, H1],
            "level": ["rack", "rack"],
            "free_gpus": [18.0, 24.0],
            "pending_jobs": [3, 2],
            "min_pending_gpus": [4.0, 12.0],
            "stranded_gpus": [2.0, 12.0],
            "expected_stranded_gpus": [38 / 3, 12.0],
            "gang_pending_gpu_s": [151_200.0, 64_800.0],
        },
        schema_overrides={"hour": T},
    )
    assert_frame_equal(got, want)


def _shares() -> pl.LazyFrame:
    return pl.LazyFrame(
        {"team": ["t1", "t2"], "pool": ["c", "c"], "share": [0.5, 0.05],
         "valid_from": [dt.datetime(1970, 1, 1, tzinfo=dt.UTC)] * 2},
        schema_overrides={"valid_from": T},
    )  # fmt: skip


def _causes(reasons: pl.LazyFrame | None = None) -> pl.DataFrame:
    return large_job_wait_causes(
        _capacity(), _jobs(), _inventory(), _as_of(), topology=_topology(), pending=_pending(),
        shares=_shares(), reasons=reasons, min_gpus=12, down=_down(),
    ).collect()  # fmt: skip


def test_wait_causes_counterfactual_split_quota_priority_fragmentation() -> None:
    """Capacity 32 GPUs. P1 (t1, share 0.5 → 16 GPUs; t1 holds 8): h0 free 18 >= 12 but the
    fullest domain has 2 whole free nodes < n = 3 → fragmentation 3600 s, idle while blocked
    18 × 3600 = 64,800 GPU-s; h1 free 24, d2 has 4 >= 3 → other 3600 s.
    Q (t2, share 0.05 → 1.6 GPUs; t2 holds B's 2 at h0): h0 piece 1800 s quota; h1 (t2 holds
    0) 1800 s other. R (t0, no share): h0 free 18 < 24 → priority 3600 s."""
    got = _causes()
    assert got.select("job_id", "attempt", "req_nodes", "wait_s", "quota_s", "priority_s",
                      "fragmentation_s", "other_s", "blocked_idle_gpu_s", "basis").rows() == [
        ("P1", None, 3, 7200.0, 0.0, 0.0, 3600.0, 3600.0, 64_800.0, "counterfactual"),
        ("Q", 1, 3, 3600.0, 1800.0, 0.0, 0.0, 1800.0, 0.0, "counterfactual"),
        ("R", None, 6, 3600.0, 0.0, 3600.0, 0.0, 0.0, 0.0, "counterfactual"),
    ]  # fmt: skip


def test_wait_causes_exact_where_a_topology_reason_is_stated() -> None:
    """P1's spell "… allows to fit only 2 out of 3" from h0 + 15 min to h1 + 15 min: h0 piece
    2700 s and h1 piece 900 s are fragmentation (3600 s); the rest (900 + 2700) is other
    (a counterfactual fragmentation reads as other); idle while blocked 18 × 2700 + 24 × 900
    = 70,200 GPU-s. Q's spell says Resources, which states no cause: its seconds take the
    rules at the spell's first instant in each piece: h0 (t2 over its share at the hour start)
    1800 s quota; h1 at h1: only A runs (n1, n2), 32 − 8 = 24 free ≥ 12 and d2 has 4 whole
    free nodes ≥ 3 → 1800 s other; counterfactual. R has no spell: counterfactual."""
    reasons = pl.LazyFrame(
        {"cluster": ["c", "c"], "job_id": ["P1", "Q"],
         "reason": ["Topology allows to fit only 2 out of 3", "Resources"],
         "spell_start": [H0 + 15 * M, H0 + 30 * M], "spell_end": [H1 + 15 * M, H1 + 30 * M]},
        schema_overrides={"spell_start": T, "spell_end": T},
    )  # fmt: skip
    got = _causes(reasons)
    assert got.select("job_id", "quota_s", "priority_s", "fragmentation_s", "other_s",
                      "blocked_idle_gpu_s", "basis").rows() == [
        ("P1", 0.0, 0.0, 3600.0, 3600.0, 70_200.0, "exact"),
        ("Q", 1800.0, 0.0, 0.0, 1800.0, 0.0, "counterfactual"),
        ("R", 0.0, 3600.0, 0.0, 0.0, 0.0, "counterfactual"),
    ]  # fmt: skip


def test_resources_spells_take_the_rules_at_the_poll_instant() -> None:
    """P1 seen pending for Resources (no cause stated, as Slurm 22.05 says of a gang held by
    ``--switches``) in two polled spells; each spell's seconds take the rules at its first
    instant in the piece, from the attempts running then:

    * h0 + 35 min – h0 + 40 min (300 s): A (n1, n2, 8 GPUs) and P2 (n6, 4 GPUs) run; healthy
      at h0: 28 GPUs (n8 down) → 28 − 12 = 16 free ≥ 12; whole free nodes d1 = n3, n4 → 2,
      d2 = 4 − 1 held − 1 down = 2; n = 3, k = 1, best 2 < 3 → fragmentation 300 s, idle
      16 × 300 = 4,800 GPU-s;
    * h0 + 55 min – h1 + 10 min: at h0 + 55 only A runs (B ended h0 + 30, P2 h0 + 50):
      28 − 8 = 20 free, d2 = 4 − 1 down = 3 ≥ 3 → other 300 s; at h1 (n8 healthy again) A
      runs: 24 free, d2 = 4 → other 600 s.

    The rest takes the hour-start rules as before: h0 3600 − 600 = 3000 s fragmentation (idle
    18 × 3000 = 54,000), h1 3000 s other. P1: fragmentation 300 + 3000 = 3300, other 300 + 600
    + 3000 = 3900, idle 58,800; no stated reason → counterfactual."""
    reasons = pl.LazyFrame(
        {"cluster": ["c", "c"], "job_id": ["P1", "P1"], "reason": ["Resources", "Resources"],
         "spell_start": [H0 + 35 * M, H0 + 55 * M], "spell_end": [H0 + 40 * M, H1 + 10 * M]},
        schema_overrides={"spell_start": T, "spell_end": T},
    )  # fmt: skip
    got = _causes(reasons).filter(pl.col("job_id") == "P1")
    assert got.select("wait_s", "quota_s", "priority_s", "fragmentation_s", "other_s",
                      "blocked_idle_gpu_s", "basis").rows() == [
        (7200.0, 0.0, 0.0, 3300.0, 3900.0, 58_800.0, "counterfactual"),
    ]  # fmt: skip


def test_topology_reasons() -> None:
    """Kueue's TAS message and Slurm switch/topology reasons count; Resources and Priority not."""
    got = pl.select(
        topology_reason(
            pl.Series(
                [
                    "Resources",
                    "Priority",
                    "ReqSwitch wait",
                    "TOPOLOGY",
                    "allows to fit only 2 out of 3",
                ]
            )
        )
    ).to_series()
    assert got.to_list() == [False, False, True, True, True]


def test_wait_causes_of_named_jobs_only_are_their_rows_of_all() -> None:
    """``only`` names Q (an attempt) and R (never started): their rows are exactly those of
    the whole computation (Q's quota piece still reads t2's GPUs held by B, an attempt not
    named), and P1's wait is not computed."""
    whole = _causes()
    only = pl.LazyFrame({"cluster": ["c", "c"], "job_id": ["Q", "R"]})
    got = large_job_wait_causes(
        _capacity(), _jobs(), _inventory(), _as_of(), topology=_topology(), pending=_pending(),
        shares=_shares(), min_gpus=12, only=only,
    ).collect()  # fmt: skip
    assert got["job_id"].to_list() == ["Q", "R"]
    assert_frame_equal(got, whole.filter(pl.col("job_id").is_in(["Q", "R"])))
    assert got.filter(pl.col("job_id") == "Q")["quota_s"].to_list() == [1800.0]


def test_team_held_gpus_at_hour_starts_sum_mig_slices_exactly() -> None:
    """Held at an hour start h: Σ GPUs of the team's attempts with start <= h < end, in units
    of 1/7,340,032,000 GPU (U). Team t at H0: a (3/7, a MIG slice) + b (4/7) + d (2, starting
    exactly at H0) = 3 GPUs = 3 U exactly; c (within H0's hour) and f (ends before it starts)
    hold none. At H1: a (ends after H1) + e (0.5, running) = 13/14 GPU (d ends exactly at H1,
    so is not held). At H2: e alone. Team u holds none."""
    h2 = H1 + dt.timedelta(hours=1)
    jobs = pl.LazyFrame(
        {
            "cluster": ["c"] * 6,
            "team": ["t"] * 6,
            "gpus": [3 / 7, 4 / 7, 1.0, 2.0, 0.5, 5.0],
            "start_at": [H0 - 30 * M, H0 - 10 * M, H0 + 10 * M, H0, H0 + 30 * M, H1],
            "end_at": [H1 + 10 * M, H0 + 20 * M, H0 + 50 * M, H1, None, H0],
        },
        schema_overrides={"start_at": T, "end_at": T},
    )
    wanted = pl.DataFrame(
        {"cluster": ["c"] * 4, "hour": [H0, H1, h2, H0], "team": ["t", "t", "t", "u"]},
        schema_overrides={"hour": T},
    )
    got = _team_held(jobs, wanted).collect().sort("team", "hour")
    assert got.select("team", "hour").rows() == [("t", H0), ("t", H1), ("t", h2), ("u", H0)]
    unit = 7_000 * 2**20
    assert got["_held"].to_list() == [3 * unit, 13 * unit // 14, unit // 2, 0]
    gpus = [held / unit for held in got["_held"].to_list()]
    assert gpus[0] == 3.0
    assert gpus[1:] == pytest.approx([13 / 14, 0.5, 0.0], abs=1e-12)


def test_quota_when_a_team_holds_exactly_its_entitlement_in_tenths_of_a_gpu() -> None:
    """Team t3 (share 1/32 of the 32 GPUs: entitled to 1 GPU) runs ten pods of 0.1 GPU through
    H0; its 12-GPU job BIG waits from H0 to H1. At H0 t3 holds exactly its 1 GPU, so the hour is
    quota (3600 s), though the ten tenths sum to 0.9999999999999999 as floats."""
    tenths = pl.LazyFrame(
        {"cluster": ["c"] * 10, "job_id": [f"X{i}" for i in range(10)], "attempt": [1] * 10,
         "team": ["t3"] * 10, "gpus": [0.1] * 10, "req_gpus": [0.1] * 10,
         "eligible_at": [H0 - 60 * M] * 10, "start_at": [H0 - 60 * M] * 10,
         "end_at": [H1 + 120 * M] * 10, "node_list": [["n7"]] * 10},
        schema_overrides={"eligible_at": T, "start_at": T, "end_at": T},
    )  # fmt: skip
    big = pl.LazyFrame(
        {"cluster": ["c"], "job_id": ["BIG"], "team": ["t3"], "req_gpus": [12.0],
         "eligible_at": [H0], "end_at": [H1]},
        schema_overrides={"eligible_at": T, "end_at": T},
    )  # fmt: skip
    shares = pl.LazyFrame(
        {"team": ["t3"], "pool": ["c"], "share": [1 / 32],
         "valid_from": [dt.datetime(1970, 1, 1, tzinfo=dt.UTC)]},
        schema_overrides={"valid_from": T},
    )  # fmt: skip
    jobs = pl.concat([_jobs(), tenths])
    assert sum([0.1] * 10) < 1.0
    causes = large_job_wait_causes(
        _capacity(), jobs, _inventory(), _as_of(), topology=_topology(),
        pending=pl.concat([_pending(), big]), shares=shares, min_gpus=12,
    )  # fmt: skip
    got = causes.collect().filter(pl.col("job_id") == "BIG")
    assert got.select("wait_s", "quota_s").rows() == [(3600.0, 3600.0)]


def test_wait_with_no_capacity_snapshot_counts_as_other() -> None:
    """R's wait moved two hours earlier (h0 − 2 h to h0 − 1 h): no capacity row covers that
    hour, so its 3600 s are other, not priority."""
    early = (
        _pending()
        .with_columns(
            pl.lit(H0 - 120 * M).cast(T).alias("eligible_at"),
            pl.lit(H0 - 60 * M).cast(T).alias("end_at"),
        )
        .filter(pl.col("job_id") == "R")
    )
    got = large_job_wait_causes(
        _capacity(), _jobs().clear(), _inventory(), _as_of(), topology=_topology(),
        pending=early, min_gpus=12,
    ).collect()  # fmt: skip
    assert got.select("job_id", "wait_s", "priority_s", "other_s").rows() == [
        ("R", 3600.0, 0.0, 3600.0)
    ]


def _nvlink_view_rows(columns: str) -> list[tuple[object, ...]]:
    """``columns`` of ``nvlink_colocation_weekly`` over the hand-made ``analytics.job_placement``
    of the two tests below (through the build's ``analytics.nvlink_colocation_weekly``)."""
    import duckdb

    from pipelines.warehouse.sql import load_sql

    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE SCHEMA analytics")
        con.execute(
            "CREATE TABLE analytics.job_placement AS SELECT * FROM (VALUES"
            " ('k', 'g1', 'nvlink', TIMESTAMPTZ '2026-11-03 10:00:00+00', 2, 3, 1,"
            "  'required: nvidia.com/gpu.clique'),"
            " ('k', 'g2', 'nvlink', TIMESTAMPTZ '2026-11-04 10:00:00+00', 3, 3, 2, NULL),"
            " ('k', 'g3', 'nvlink', TIMESTAMPTZ '2026-11-04 11:00:00+00', 4, 3, 2, NULL),"
            " ('k', 's1', 'nvlink', TIMESTAMPTZ '2026-11-04 12:00:00+00', 1, 3, 1, NULL),"
            " ('k', 'g1', 'rack', TIMESTAMPTZ '2026-11-03 10:00:00+00', 2, 8, 2, NULL))"
            " AS t(cluster, job_id, level, start_at, nodes, domain_size, domains_used,"
            " topology_request)"
        )
        # the cut-off is stored once per cluster, not in the rows
        con.execute(
            "CREATE SCHEMA core; CREATE TABLE core.build_cutoffs AS "
            "SELECT 'k' AS cluster, TIMESTAMPTZ '2026-11-08 00:00:00+00' AS as_of"
        )
        # the build stores the weekly counts from the placements; the view adds the cut-off
        con.execute(
            "CREATE TABLE analytics.nvlink_colocation_weekly AS "
            + load_sql("analytics/nvlink_colocation_weekly")
        )
        con.execute(load_sql("views/nvlink_colocation_weekly"))
        return con.execute(f"SELECT {columns} FROM nvlink_colocation_weekly").fetchall()


def test_nvlink_colocation_counts_gangs_that_fit_one_clique() -> None:
    """``nvlink_colocation_weekly`` over a hand-made ``analytics.job_placement``: at level
    nvlink, g1 (2 nodes, clique of 3, 1 clique used) and g2 (3 nodes, 2 used) fit one clique;
    g3 (4 nodes > 3) cannot and s1 (1 node) is no gang; a rack-level row does not count. Week
    of 2026-11-02: gangs 2, co-located 1, share 1/2."""
    rows = _nvlink_view_rows("cluster, week, gangs, colocated, colocation_share")
    assert rows == [("k", dt.date(2026, 11, 2), 2, 1, 0.5)]


def test_nvlink_unconstrained_counts_multi_node_gangs_without_a_topology_request() -> None:
    """Same rows: the multi-node gangs on clique nodes are g1, g2, g3 (s1 has one node; the
    rack row is another level), whatever their fit. g1's Workload asked for
    ``required: nvidia.com/gpu.clique``; g2 and g3 asked for nothing: unconstrained 2 of 3,
    share 2/3."""
    rows = _nvlink_view_rows("week, multi_node_gangs, unconstrained, unconstrained_share")
    assert rows == [(dt.date(2026, 11, 2), 3, 2, 2 / 3)]


def test_topology_requests_take_the_first_named_level_per_workload() -> None:
    """Workload ns/w1: pod set ``leader`` preferred rack, ``worker`` required clique → the
    first pod set by name (leader): ``preferred: rack``. ns/w2: slice-required block. ns/w3:
    ``unconstrained: true`` only (no level) → no row. Keys ``<namespace>/<name>``."""
    from metrics.placement import topology_requests

    rows = pl.LazyFrame(
        {
            "cluster": ["k"] * 4,
            "namespace": ["ns"] * 4,
            "name": ["w1", "w1", "w2", "w3"],
            "pod_set": ["worker", "leader", "main", "main"],
            "required": ["nvidia.com/gpu.clique", None, None, None],
            "preferred": [None, "rack", None, None],
            "slice_required": [None, None, "block", None],
        }
    )
    got = topology_requests(rows).collect().sort("job_id")
    assert got.rows() == [
        ("k", "ns/w1", "preferred: rack"),
        ("k", "ns/w2", "slice-required: block"),
    ]


def test_hourly_node_states_at_h0_and_the_tables_read_from_them() -> None:
    """At h0: n1 and n2 each hold 4 of A's 8 GPUs (8 / 2 nodes), 0 free; n5 holds B's 2 of
    4, 2 free; n8 is down: not healthy, 0 free; n3 holds nothing, 4 free. The capacity and the
    stranded GPUs computed from these states, passed in, are the tables computed without them."""
    states = hourly_node_states(_topology(), _jobs(), _hours(), _inventory(), _down()).collect()
    at_h0 = states.filter(pl.col("hour") == H0).sort("node")
    assert at_h0.select("node", "_gpus", "_healthy", "_held", "_attempts", "_free").rows() == [
        ("n1", 4.0, True, 4.0, 1, 0.0), ("n2", 4.0, True, 4.0, 1, 0.0),
        ("n3", 4.0, True, 0.0, 0, 4.0), ("n4", 4.0, True, 0.0, 0, 4.0),
        ("n5", 4.0, True, 2.0, 1, 2.0), ("n6", 4.0, True, 0.0, 0, 4.0),
        ("n7", 4.0, True, 0.0, 0, 4.0), ("n8", 4.0, False, 0.0, 0, 0.0),
    ]  # fmt: skip
    given = states.lazy()
    assert_frame_equal(
        domain_capacity_hourly(
            _topology(), _jobs(), _hours(), _inventory(), down=_down(), segment_sizes=(1, 2, 4),
            states=given,
        ).collect(),
        _capacity().collect(),
    )  # fmt: skip
    assert_frame_equal(
        stranded_hourly(
            _topology(), _jobs(), _hours(), _inventory(), _as_of(), pending=_pending(),
            down=_down(), states=given,
        ).collect(),
        stranded_hourly(
            _topology(), _jobs(), _hours(), _inventory(), _as_of(), pending=_pending(),
            down=_down(),
        ).collect(),
    )  # fmt: skip


def test_a_stated_spell_outside_the_wait_states_nothing_of_it() -> None:
    """P1 waits from h0 (never started, to the cut-off at h2); a Priority spell of P1 from
    h0 − 30 min to h0 − 10 min, before it was eligible (a stale poll), does not make its wait
    exact: the counterfactual split stands (3600 s fragmentation, 3600 s other, 64,800 idle
    GPU-s), as with no spell. The same spell moved to h0 + 10 min … h0 + 20 min overlaps the
    wait: h0's counterfactual fragmentation reads as other (7200 s other), basis exact."""

    def spell(start: dt.datetime, end: dt.datetime) -> pl.LazyFrame:
        return pl.LazyFrame(
            {"cluster": ["c"], "job_id": ["P1"], "reason": ["Priority"], "spell_start": [start],
             "spell_end": [end]},
            schema_overrides={"spell_start": T, "spell_end": T},
        )  # fmt: skip

    cols = ("job_id", "fragmentation_s", "other_s", "blocked_idle_gpu_s", "basis")
    before = _causes(spell(H0 - 30 * M, H0 - 10 * M)).filter(pl.col("job_id") == "P1")
    assert before.select(cols).rows() == [("P1", 3600.0, 3600.0, 64_800.0, "counterfactual")]
    inside = _causes(spell(H0 + 10 * M, H0 + 20 * M)).filter(pl.col("job_id") == "P1")
    assert inside.select(cols).rows() == [("P1", 0.0, 7200.0, 0.0, "exact")]


def test_a_pending_het_job_is_one_shape_of_its_summed_gpus() -> None:
    """Het job 300 (components 300+0 and 300+1, 8 GPUs = 2 nodes each) pending since h0; A and B
    as above, job C holds all of n7 through h0, n8 down. Free at h0: n3 4, n4 4, n5 2, n6 4 =
    14; whole free nodes d1 2 (n3, n4), d2 1 (n6); partly held n5 2 free; H = 4.
    One job of 16 GPUs (n = 4 <= H): (2 mod 4)·4 + (1 mod 4)·4 + 2 = 14: every free GPU, as
    Slurm starts the components together and 3 whole free nodes cannot hold 4.
    Before (two jobs of 8, n = 2): (2 mod 2)·4 + (1 mod 2)·4 + 2 = 6, pending_jobs 2, shape 8.
    Gang demand is 16 × 3,600 = 57,600 GPU-s either way."""
    c = pl.LazyFrame(
        {"cluster": ["c"], "job_id": ["C"], "attempt": [1], "team": ["t2"], "gpus": [4.0],
         "req_gpus": [4.0], "eligible_at": [H0 - 60 * M], "start_at": [H0 - 60 * M],
         "end_at": [H1 + 30 * M], "node_list": [["n7"]]},
        schema_overrides={"eligible_at": T, "start_at": T, "end_at": T},
    )  # fmt: skip
    jobs = pl.concat([_jobs().filter(pl.col("job_id").is_in(["A", "B"])), c])
    pending = pl.LazyFrame(
        {"cluster": ["c", "c"], "job_id": ["300+0", "300+1"], "team": ["t1", "t1"],
         "req_gpus": [8.0, 8.0], "eligible_at": [H0, H0], "end_at": [None, None]},
        schema_overrides={"eligible_at": T, "end_at": T},
    )  # fmt: skip
    assert _stranded_at_h0(jobs, pending) == [(14.0, 1, 16.0, 14.0, 14.0, 57_600.0)]


def _stranded_at_h0(jobs: pl.LazyFrame, pending: pl.LazyFrame) -> list[tuple[object, ...]]:
    """``free_gpus, pending_jobs, min_pending_gpus, stranded_gpus, expected_stranded_gpus,
    gang_pending_gpu_s`` of :func:`stranded_hourly` at h0 on the shared topology."""
    hours = _hours().filter(pl.col("hour") == H0)
    got = stranded_hourly(
        _topology(), jobs, hours, _inventory(), _as_of(), pending=pending, down=_down()
    ).collect()
    return got.select(
        "free_gpus",
        "pending_jobs",
        "min_pending_gpus",
        "stranded_gpus",
        "expected_stranded_gpus",
        "gang_pending_gpu_s",
    ).rows()


def test_a_partly_running_het_job_s_shape_is_its_pending_components_gpus() -> None:
    """Het job 300: 300+0 (8 GPUs) runs on n3, n4 from h0 − 1 h (partial rows), 300+1 (8 GPUs)
    pending since h0 − 1 h; A and B as above, n8 down. Free at h0: n5 2, n6 4, n7 4 = 10; whole
    free nodes d1 0, d2 2 (n6, n7); partly held n5 2 free; H = 4. 300+0's GPUs are allocated,
    so the pending shape is 300+1's 8 GPUs (n = 2): 2 + (0 mod 2)·4 + (2 mod 2)·4 = 2 stranded;
    gang demand (8 > 4 GPUs a node) 8 × 3,600 = 28,800 GPU-s.
    Before (one shape of 16, n = 4): 2 + (0 mod 4)·4 + (2 mod 4)·4 = 10 stranded, 16 × 3,600 =
    57,600 GPU-s. (300+0's attempt 0 and 300+1's pending row are the unit's attempt 0.)"""
    run = pl.LazyFrame(
        {"cluster": ["c"], "job_id": ["300+0"], "attempt": [0], "team": ["t1"], "gpus": [8.0],
         "req_gpus": [8.0], "eligible_at": [H0 - 60 * M], "start_at": [H0 - 60 * M],
         "end_at": [None], "node_list": [["n3", "n4"]]},
        schema_overrides={"eligible_at": T, "start_at": T, "end_at": T},
    )  # fmt: skip
    jobs = pl.concat([_jobs().filter(pl.col("job_id").is_in(["A", "B"])), run])
    pending = pl.LazyFrame(
        {"cluster": ["c"], "job_id": ["300+1"], "team": ["t1"], "req_gpus": [8.0],
         "eligible_at": [H0 - 60 * M], "end_at": [None]},
        schema_overrides={"eligible_at": T, "end_at": T},
    )  # fmt: skip
    assert _stranded_at_h0(jobs, pending) == [(10.0, 1, 8.0, 2.0, 2.0, 28_800.0)]
