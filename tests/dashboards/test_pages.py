"""Every dashboard page renders from the serving copy and shows the values the views hold.

One ``AppTest`` per page, through the ``st.navigation`` entry point (``switch_page``); each compares
a number on the page with the same number queried straight from the serving copy. The filters are
driven through the URL and the sidebar; the SQL page shows rows for a SELECT and an error element
(not an exception) for a write.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from dashboards import queries
from pipelines.config import load_config
from tests.conftest import REPO, Materialized

pytestmark = pytest.mark.slow

APP = str(REPO / "dashboards" / "app.py")


@pytest.fixture
def serving(materialized: Materialized, monkeypatch: pytest.MonkeyPatch) -> str:
    """The small fleet's serving copy, wired into the app through the environment."""
    path = str(materialized.cfg.serving_path)
    monkeypatch.setenv("GOODPUT_SERVING_DB", path)
    monkeypatch.setenv("GOODPUT_CONFIG", str(materialized.cfg.path))
    return path


def _view(serving: str, sql: str) -> pl.DataFrame:
    with duckdb.connect(serving, read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        out: pl.DataFrame = con.sql(sql).pl()
        return out


def _page(page: str | None = None, **query_params: str) -> AppTest:
    """The app, run once on its default page (overview), then on ``pages/<page>.py``."""
    at = AppTest.from_file(APP, default_timeout=60)
    for name, value in query_params.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception
    if page is not None:
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception
    return at


def _table(at: AppTest, *columns: str) -> pl.DataFrame:
    """The first table on the page with all of ``columns`` (AppTest does not expose table keys)."""
    for element in at.dataframe:
        if set(columns) <= set(element.value.columns):
            return pl.from_pandas(element.value)
    raise AssertionError(f"no table with columns {columns}")


TILES = [
    "Occupancy",
    "Avoidable waste",
    "Fairness (Jain's index)",
    "Large-job time to start (≥ 64 GPUs)",
]
AVOIDABLE = "('failed_work_infra', 'failed_work_user', 'preempted_work', 'timeout_work', "
AVOIDABLE += "'allocated_idle', 'held')"


def _tile_captions(at: AppTest) -> list[str]:
    """The caption under each of the four tiles (scope · numbers · window · counts)."""
    return [c.value for c in at.caption if c.value.startswith("**")][:4]


def test_overview_page(serving: str) -> None:
    """The four answers equal the views: occupancy (allocated ÷ available, fleet), avoidable
    waste (leaves 3–6, 8, 10; GPU-hours and share of capacity), Jain's index, unmet entitlement
    and the most-owed team of the latest fairness week (no week is complete in the 2-day fleet,
    so the partial one, labelled), and the large-job KM counts (fewer than 10 jobs: no
    percentile). Each tile's caption names its scope, window and counts; the window is every
    day with data, flagged partial in a banner; the waterfall totals and data-quality score
    are the views'."""
    at = _page()
    occ, alloc, avail = _view(
        serving,
        "select sum(allocated_gpu_s) / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s),"
        " sum(allocated_gpu_s) / 3600, sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s)"
        " / 3600 from occupancy_hourly",
    ).row(0)
    waste, capacity = _view(
        serving,
        f"select sum(gpu_s) filter (where bucket in {AVOIDABLE}) / 3600, sum(gpu_s) / 3600"
        " from gpu_waterfall_hourly",
    ).row(0)
    week, teams, jain, unmet = _view(
        serving,
        "select week, teams, jain_index, unmet_entitlement from fairness_summary_weekly"
        " where \"window\" = 'week' and cluster is null order by week desc limit 1",
    ).row(0)
    owed_team, owed_h = _view(
        serving,
        "select team, fair_share_debt_gpu_h from fairness_weekly where \"window\" = 'week'"
        f" and cluster is null and week = '{week.isoformat()}' order by 2 desc limit 1",
    ).row(0)
    jobs, censored = _view(
        serving,
        "select count(*), count(*) filter (where not started) from time_to_start_jobs"
        " where size_gpus >= 64 and started is not null",
    ).row(0)
    shown = {m.label: m.value for m in at.metric}
    assert list(shown) == TILES
    assert shown["Occupancy"] == f"{occ:.1%}"
    assert shown["Avoidable waste"] == f"{waste:,.0f} GPU-h"
    assert shown["Fairness (Jain's index)"] == f"{jain:.2f}"
    assert 0 < jobs < 10  # the 2-day fleet has too few large jobs for a percentile
    assert shown[TILES[3]] == "too few jobs (n < 10)"
    assert all(m.proto.delta == "" for m in at.metric)  # a partial window is never compared
    occ_cap, waste_cap, fair_cap, km_cap = _tile_captions(at)
    assert occ_cap.startswith("**fleet** · ")
    assert f"{alloc:,.0f} of {avail:,.0f} available GPU-h allocated" in occ_cap
    assert "2 clusters" in occ_cap and "no change shown: the window is partial" in occ_cap
    leaf, leaf_h = _view(
        serving,
        f"select bucket, sum(gpu_s) / 3600 from gpu_waterfall_hourly where bucket in {AVOIDABLE}"
        " group by 1 order by 2 desc limit 1",
    ).row(0)
    assert waste_cap.startswith(
        f"**fleet** · {waste / capacity:.1%} of capacity · largest: {leaf} {leaf_h:,.0f} h"
    )
    assert fair_cap.startswith(f"**fleet** (across teams) · week of {week:%Y-%m-%d}, partial")
    assert f"{teams} teams · unmet entitlement {unmet:.1%}" in fair_cap
    assert f"most owed: team {owed_team}, {owed_h:,.0f} GPU-h" in fair_cap
    assert km_cap.startswith("**fleet** · eligible in ")
    assert f"n = {jobs} jobs, {censored} censored" in km_cap
    assert any(w.value.startswith("No complete week in the data yet") for w in at.warning)
    first_day, last_day = _view(
        serving, "select min(hour)::date, max(as_of)::date from occupancy_hourly"
    ).row(0)
    assert f"{first_day:%Y-%m-%d} – {last_day:%Y-%m-%d} UTC, partial" in occ_cap

    narrative = [m.value for m in at.markdown if m.value.startswith("- ")]
    assert narrative[0].startswith("- The window is partial")
    assert f"{occ * 100:.1f} % occupied" in narrative[1]
    rules = _view(serving, "select rule from recommendations order by case severity when "
                  "'critical' then 0 when 'warning' then 1 when 'info' then 2 else 3 end, "
                  "expected_gain_gpu_h_per_week desc nulls last, id limit 3")["rule"]  # fmt: skip
    top = [m.value for m in at.markdown if re.match(r"^[123]\. \*\*", m.value)]
    assert [re.search(r"`([^`]+)`", t).group(1) for t in top] == rules.to_list()  # type: ignore[union-attr]
    assert [t.value for t in at.title] == ["GPU fleet overview"]

    totals = _table(at, "leaf", "gpu_h", "share_of_capacity")
    expected = _view(
        serving,
        "select bucket as leaf, sum(gpu_s) / 3600 as gpu_h from gpu_waterfall_hourly group by 1",
    )
    assert totals["leaf"].to_list() == [
        "down", "planned_down", "failed_work_infra", "failed_work_user", "preempted_work",
        "timeout_work", "cancelled_work", "allocated_idle", "goodput", "held", "idle",
    ]  # fmt: skip
    got = dict(zip(totals["leaf"], totals["gpu_h"], strict=True))
    for leaf, want in expected.iter_rows():
        assert got[leaf] == pytest.approx(want)
    assert totals["share_of_capacity"].sum() == pytest.approx(1.0)

    clusters = _view(serving, "select distinct cluster from occupancy_hourly")["cluster"]
    dq = _view(serving, 'select cluster, "check" from data_quality')
    checks = [
        "gpus_not_tracked", "dst_ambiguous_times", "dst_nonexistent_times", "rejected_rows",
        "capacity_from_observed_nodes", "gpu_shards_without_node_state", "unattributed_gpu_hours",
        "registry_pool_unmatched", "nodes_outside_inventory",
    ]  # fmt: skip
    flagged = sum(
        1
        for c in clusters
        for k in checks
        if dq.filter(
            (pl.col("check") == k) & (pl.col("cluster").is_null() | (pl.col("cluster") == c))
        ).height
    )
    total = len(clusters) * len(checks)
    assert at.get("progress")[0].proto.text == (
        f"Data-quality score: {total - flagged} of {total} checks clean"
    )


def test_overview_tiles_name_their_scope_with_a_team(serving: str) -> None:
    """Team nlp picked: the capacity tiles say the team filter does not apply to them and keep
    the fleet's numbers; the fairness tile adds team nlp's entitlement ratio and debt (from
    ``fairness_weekly``); the time-to-start tile counts nlp's large jobs only."""
    at = _page(team="nlp")
    occ = _view(
        serving,
        "select sum(allocated_gpu_s) / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s)"
        " from occupancy_hourly",
    ).item()
    ratio, debt = _view(
        serving,
        "select entitlement_ratio, fair_share_debt_gpu_h from fairness_weekly"
        " where \"window\" = 'week' and cluster is null and team = 'nlp'"
        " order by week desc limit 1",
    ).row(0)
    jobs, censored = _view(
        serving,
        "select count(*), count(*) filter (where not started) from time_to_start_jobs"
        " where size_gpus >= 64 and started is not null and team = 'nlp'",
    ).row(0)
    assert {m.label: m.value for m in at.metric}["Occupancy"] == f"{occ:.1%}"
    occ_cap, waste_cap, fair_cap, km_cap = _tile_captions(at)
    no_team = "**fleet (capacity has no team: the team filter does not apply)** · "
    assert occ_cap.startswith(no_team) and waste_cap.startswith(no_team)
    assert fair_cap.startswith("**fleet** (across teams)")
    assert f"**team nlp**: received {ratio:.2f} of its fair share, owed {debt:,.0f} GPU-h" in (
        fair_cap
    )
    assert km_cap.startswith("**team nlp** · ")
    assert f"n = {jobs} jobs, {censored} censored" in km_cap


def test_overview_time_to_start_tile_with_enough_jobs(
    serving: str, materialized: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With "large" = 8 GPUs the 2-day fleet has ≥ 10 such waits: the tile shows the KM p90 of
    the spells queried straight from ``time_to_start_jobs``, the caption their count, censored
    count and the p50 with its Greenwood CI; the partial window shows no change."""
    from metrics.headlines import km_quantile_ci
    from metrics.survival import wait_percentiles_km

    cfg = tmp_path / "goodput.toml"
    text = materialized.cfg.path.read_text(encoding="utf-8")
    cfg.write_text(text + "\n[thresholds]\nlarge_job_gpus = 8\n", encoding="utf-8")
    monkeypatch.setenv("GOODPUT_CONFIG", str(cfg))
    at = _page()
    spells = _view(
        serving,
        "select wait_s as duration_s, started from time_to_start_jobs where size_gpus >= 8",
    )
    km = wait_percentiles_km(spells.lazy(), quantiles=(0.5, 0.9)).collect().row(0, named=True)
    assert km["spells"] >= 10
    lo, hi = km_quantile_ci(spells.filter(pl.col("started").is_not_null()).lazy(), 0.5)
    assert lo is not None and hi is not None
    shown = {m.label: m for m in at.metric}["Large-job time to start (≥ 8 GPUs)"]
    assert shown.value == f"p90 {km['km_p90_s'] / 3600:.1f} h" and shown.proto.delta == ""
    caption = _tile_captions(at)[3]
    assert caption.startswith("**fleet** · eligible in ")
    assert f"n = {km['spells']} jobs, {km['censored']} censored" in caption
    assert (
        f"p50 {km['km_p50_s'] / 3600:.1f} h (95 % CI {lo / 3600:.1f} h – {hi / 3600:.1f} h)"
        in caption
    )
    assert caption.endswith("no change shown: the window is partial")


def test_headline_change_compares_last_seven_days_with_the_seven_before(tmp_path: Path) -> None:
    """Week-over-week: the 7 days up to the data cut-off vs the 7 days before, from literal rows."""
    db = tmp_path / "tiny.duckdb"
    cut = dt.datetime(2026, 3, 15, tzinfo=dt.UTC)
    with duckdb.connect(str(db)) as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(
            "create table occupancy_hourly (cluster varchar, hour timestamptz,"
            " capacity_gpu_s double, down_gpu_s double, planned_down_gpu_s double,"
            " allocated_gpu_s double, as_of timestamptz)"
        )
        # One hour 10 days before the cut (25 % busy) and one 2 days before (75 % busy).
        for days_back, alloc in ((10, 900.0), (2, 2700.0)):
            con.execute(
                "insert into occupancy_hourly values ('c', ?, 3600, 0, 0, ?, ?)",
                [cut - dt.timedelta(days=days_back), alloc, cut],
            )
        con.execute(
            "create table jobs (source varchar, cluster varchar, job_id varchar, team varchar,"
            " gpus double, wait_s double, eligible_at timestamptz, start_at timestamptz)"
        )
        for i, days_back in enumerate((10, 2, 2)):
            start = cut - dt.timedelta(days=days_back)
            con.execute(
                "insert into jobs values ('slurm', 'c', ?, 't', 64, ?, ?, ?)",
                [str(i), 60.0 * (i + 1), start - dt.timedelta(seconds=60 * (i + 1)), start],
            )
    change = queries.headline_change(str(db), queries.Filters(), 64.0)
    assert change["period"].to_list() == ["previous 7 days", "last 7 days"]
    assert change["period_end"][1] == cut
    assert change["occupancy"].to_list() == [0.25, 0.75]
    assert change["allocated_gpu_h"].to_list() == [0.25, 0.75]
    assert change["hours"].to_list() == [1, 1]
    assert change["attempts"].to_list() == [1, 2]
    assert change["p90_large_wait_s"].to_list() == [60.0, 180.0]


def test_waste_page(serving: str) -> None:
    """Idle time per attempt reconciles with the waterfall; lemon nodes are the views'."""
    at = _page("waste")
    at.number_input(key="waste_idle_top").set_value(200).run()
    assert not at.exception
    leaf = _view(
        serving,
        "select cluster, sum(gpu_s) / 3600 as gpu_h from gpu_waterfall_hourly"
        " where bucket = 'allocated_idle' group by 1",
    )
    recon = _table(at, "waterfall_idle_gpu_h", "per_attempt_idle_gpu_h")
    assert dict(recon.select("cluster", "waterfall_idle_gpu_h").iter_rows()) == pytest.approx(
        dict(leaf.iter_rows())
    )
    # Slurm samples carry the job id (hpc_job): the per-attempt sum is the leaf, to the bit.
    idle = _table(at, "job_id", "idle_gpu_h")
    slurm = idle.filter(pl.col("cluster") == "slurm-a")
    want = leaf.filter(pl.col("cluster") == "slurm-a")["gpu_h"].item()
    assert want > 0
    assert slurm["idle_gpu_h"].sum() == pytest.approx(want, rel=1e-9)
    assert recon.filter(pl.col("cluster") == "slurm-a")["attempts"].item() == slurm.height

    lemons = _table(at, "lemon_rank", "host")
    worst = _view(serving, "select cluster, host from node_reliability where lemon_rank = 1")
    got = dict(lemons.filter(pl.col("lemon_rank") == 1).select("cluster", "host").iter_rows())
    assert got == dict(worst.iter_rows())
    assert lemons["lemon_rank"].max() == 10


def test_idle_by_team_hand_computed(tmp_path: Path) -> None:
    """Allocated-idle GPU-hours per cluster, team and GPU type, from literal rows (θ = 0.05).

    Attempt A (t1, h100, 4 GPUs, COMPLETED, 10:02–10:20):
      bucket 10:00: 3 GPUs at 0, 0, 0.09 → mean 0.03 < θ: 3 GPUs × 180 s (from 10:02) = 540 GPU-s;
      bucket 10:05: 4 GPUs at 0.5 → busy;
      bucket 10:10: 5 GPUs seen at 0.01 → min(5, 4) = 4 × 300 s = 1200 GPU-s;
      bucket 10:15: 4 GPUs at 0 but attributed `node_group` → not the attempt's activity.
      A = 1740 GPU-s = 0.48333 GPU-h.
    Attempt B (t2, 2 GPUs, FAILED, idle) is a loss leaf: left out.
    Attempt C (t2, untyped, 1 GPU, running since 11:50, as_of 12:00): bucket 11:55 idle = 300 GPU-s;
      bucket 12:00 is after as_of → 0.  C = 300 GPU-s = 0.08333 GPU-h.
    """
    db = _tiny_idle_db(tmp_path)
    got = queries.idle_by_team(str(db), queries.Filters(), 0.05)
    assert got.select("cluster", "team", "gpu_type", "attempts").rows() == [
        ("c", "t1", "h100", 1),
        ("c", "t2", "untyped", 1),
    ]
    assert got["idle_gpu_h"].to_list() == pytest.approx([1740 / 3600, 300 / 3600])
    only_t2 = queries.idle_by_team(str(db), queries.Filters(team="t2"), 0.05)
    assert only_t2["team"].to_list() == ["t2"]


def _tiny_idle_db(tmp_path: Path) -> Path:
    """The attempts A, B, C of :func:`test_idle_by_team_hand_computed` in ``tiny.duckdb``."""
    db = tmp_path / "tiny.duckdb"
    day = dt.datetime(2026, 3, 15, tzinfo=dt.UTC)

    def at(h: int, m: int) -> dt.datetime:
        return day.replace(hour=h, minute=m)

    with duckdb.connect(str(db)) as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(
            "create table jobs (cluster varchar, job_id varchar, attempt bigint, team varchar,"
            " gpu_type varchar, gpus double, start_at timestamptz, end_at timestamptz,"
            " state varchar, as_of timestamptz)"
        )
        con.executemany(
            "insert into jobs values ('c', ?, 0, ?, ?, ?, ?, ?, ?, ?)",
            [
                ["A", "t1", "h100", 4, at(10, 2), at(10, 20), "COMPLETED", at(12, 0)],
                ["B", "t2", None, 2, at(10, 0), at(10, 10), "FAILED", at(12, 0)],
                ["C", "t2", None, 1, at(11, 50), None, "RUNNING", at(12, 0)],
            ],
        )
        con.execute(
            "create table gpu_activity (cluster varchar, job_id varchar, attempt bigint,"
            " bucket timestamptz, activity double, gpus double, attribution varchar)"
        )
        rows = [
            *(["A", at(10, 0), a, "label_hpc_job"] for a in (0.0, 0.0, 0.09)),
            *(["A", at(10, 5), 0.5, "label_hpc_job"] for _ in range(4)),
            *(["A", at(10, 10), 0.01, "label_hpc_job"] for _ in range(5)),
            *(["A", at(10, 15), 0.0, "node_group"] for _ in range(4)),
            *(["B", at(10, 0), 0.0, "label_hpc_job"] for _ in range(2)),
            ["C", at(11, 55), 0.0, "pod"],
            ["C", at(12, 0), 0.0, "pod"],
        ]
        con.executemany(
            "insert into gpu_activity values ('c', ?, 0, ?, ?, 1.0, ?)", [list(r) for r in rows]
        )
        # no attempt has pieces of held GPUs: each holds its GPUs over its span
        con.execute(
            "create table job_holds as select cluster, job_id, attempt, start_at, end_at,"
            " gpus, false as pieced from jobs"
        )
    return db


def test_idle_by_team_keeps_the_head_of_lost_attempts_under_checkpoint(tmp_path: Path) -> None:
    """The rows of :func:`test_idle_by_team_hand_computed` under ``checkpoint`` with Δ = 600 s,
    u0 = 0 (``[waterfall]`` in goodput.toml; :func:`queries.loss_caps` gives cap = 300 s):
    attempt B (t2, 2 GPUs, FAILED 10:00–10:10, runtime 600 s) loses min(600, 300) = 300 s, its
    tail 10:05–10:10, and keeps its head 10:00–10:05: bucket 10:00 idle, 2 GPUs × 300 s = 600
    GPU-s, as the waterfall's allocated_idle counts it. t2: C's 300 + B's 600 = 900 GPU-s,
    2 attempts; t1 (A) unchanged, 1,740. The same from a cluster's own policy; a cluster's own
    ``whole_attempt`` over a checkpointing ``[waterfall]`` leaves B out again (t2: 300)."""
    db = _tiny_idle_db(tmp_path)
    toml = tmp_path / "g.toml"
    toml.write_text('[waterfall]\nloss_policy = "checkpoint"\ncheckpoint_interval_s = 600\n')
    caps = queries.loss_caps(load_config(toml))
    assert caps == ((), (), 300.0)
    for loss in (caps, (("c",), (300.0,), None)):
        got = queries.idle_by_team(str(db), queries.Filters(), 0.05, loss)
        assert got.select("cluster", "team", "gpu_type", "attempts").rows() == [
            ("c", "t1", "h100", 1),
            ("c", "t2", "untyped", 2),
        ]
        assert got["idle_gpu_h"].to_list() == pytest.approx([1740 / 3600, 900 / 3600])
    whole = queries.idle_by_team(str(db), queries.Filters(), 0.05, (("c",), (None,), 300.0))
    assert whole["idle_gpu_h"].to_list() == pytest.approx([1740 / 3600, 300 / 3600])


def test_idle_by_team_counts_a_gangs_pieces_of_held_gpus(tmp_path: Path) -> None:
    """Gang G (t1, 16 GPUs, COMPLETED, 10:00–10:20) held 16 GPUs 10:00–10:10, then 8 (a
    worker ended; its pieces, METRICS.md "GPU holding"); 16 GPUs seen idle in each of its
    four buckets. As the waterfall's allocated_idle: 16 × 600 + min(16, 8) × 600 = 14,400
    GPU-s = 4 GPU-h (16 GPUs over its span: 19,200 = 5.333 GPU-h)."""
    db = tmp_path / "gang.duckdb"
    day = dt.datetime(2026, 3, 15, tzinfo=dt.UTC)

    def at(h: int, m: int) -> dt.datetime:
        return day.replace(hour=h, minute=m)

    with duckdb.connect(str(db)) as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(
            "create table jobs (cluster varchar, job_id varchar, attempt bigint, team varchar,"
            " gpu_type varchar, gpus double, start_at timestamptz, end_at timestamptz,"
            " state varchar, as_of timestamptz)"
        )
        con.execute(
            "insert into jobs values ('c', 'G', 0, 't1', 'h100', 16, ?, ?, 'COMPLETED', ?)",
            [at(10, 0), at(10, 20), at(12, 0)],
        )
        con.execute(
            "create table gpu_activity (cluster varchar, job_id varchar, attempt bigint,"
            " bucket timestamptz, activity double, gpus double, attribution varchar)"
        )
        con.executemany(
            "insert into gpu_activity values ('c', 'G', 0, ?, 0.0, 16.0, 'pod')",
            [[at(10, m)] for m in (0, 5, 10, 15)],
        )
        con.execute(
            "create table job_holds (cluster varchar, job_id varchar, attempt bigint,"
            " start_at timestamptz, end_at timestamptz, gpus double, pieced boolean)"
        )
        con.executemany(
            "insert into job_holds values ('c', 'G', 0, ?, ?, ?, true)",
            [[at(10, 0), at(10, 10), 16.0], [at(10, 10), at(10, 20), 8.0]],
        )
    got = queries.idle_by_team(str(db), queries.Filters(), 0.05)
    assert got.select("team", "attempts").rows() == [("t1", 1)]
    assert got["idle_gpu_h"].to_list() == pytest.approx([4.0])


def test_waste_page_idle_by_team(serving: str) -> None:
    """The idle-by-team chart shows recsys (the planted idle team) first, with the GPU-hours
    recomputed here in polars from ``gpu_activity`` and ``jobs`` (METRICS.md allocated_idle:
    per attempt and 5-minute bucket, GPU-weighted mean activity < θ = 0.05, min(GPUs seen, GPUs
    allocated) × the bucket's part of [start, min(end, as_of)), loss-leaf attempts left out);
    each cluster's teams sum to its ``allocated_idle`` leaf in ``gpu_waterfall_hourly``."""
    import json

    at = _page("waste")
    spec = next(
        s
        for s in (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
        if s["layout"].get("yaxis", {}).get("title", {}).get("text") == "idle GPU-hours"
    )
    shown: dict[str, float] = {}
    for trace in spec["data"]:
        for team, value in zip(trace["x"], _plotly_values(trace["y"]), strict=True):
            shown[team] = shown.get(team, 0.0) + value
    assert max(shown, key=lambda t: shown[t]) == "recsys"

    loss = ["NODE_FAIL", "BOOT_FAIL", "FAILED", "OUT_OF_MEMORY", "PREEMPTED", "REQUEUED",
            "TIMEOUT", "DEADLINE", "CANCELLED", "REVOKED"]  # fmt: skip
    jobs = _view(
        serving,
        "select cluster, job_id, attempt, team, gpus as alloc, start_at, end_at, as_of, state"
        " from jobs where gpus > 0",
    ).filter(
        pl.col("end_at").is_null()
        | (pl.col("end_at") > pl.col("as_of"))
        | ~pl.col("state").str.split(" ").list.first().str.to_uppercase().is_in(loss)
    )
    act = _view(
        serving,
        "select cluster, job_id, attempt, bucket, activity, gpus from gpu_activity"
        " where attribution in ('label_hpc_job', 'pod', 'gres_index', 'whole_node')"
        " and attempt is not null and activity is not null",
    )
    per_bucket = act.group_by("cluster", "job_id", "attempt", "bucket").agg(
        ((pl.col("activity") * pl.col("gpus")).sum() / pl.col("gpus").sum()).alias("activity"),
        pl.col("gpus").sum(),
    )
    stop = pl.min_horizontal(pl.col("end_at").fill_null(pl.col("as_of")), pl.col("as_of"))
    five = dt.timedelta(minutes=5)
    secs = (
        pl.min_horizontal(pl.col("bucket") + five, stop)
        - pl.max_horizontal(pl.col("bucket"), pl.col("start_at"))
    ).dt.total_microseconds() / 1e6
    idle = (
        per_bucket.filter(pl.col("activity") < 0.05)
        .join(jobs, on=["cluster", "job_id", "attempt"])
        .with_columns(
            (pl.min_horizontal("gpus", "alloc") * secs.clip(lower_bound=0.0) / 3600).alias("h")
        )
    )
    want = idle.filter(pl.col("team") == "recsys")["h"].sum()
    assert want > 0
    assert shown["recsys"] == pytest.approx(want, rel=1e-9)

    leaf = _view(
        serving,
        "select cluster, sum(gpu_s) / 3600 as gpu_h from gpu_waterfall_hourly"
        " where bucket = 'allocated_idle' group by 1",
    )
    by_cluster = dict(idle.group_by("cluster").agg(pl.col("h").sum()).iter_rows())
    assert by_cluster == pytest.approx(dict(leaf.iter_rows()), rel=1e-9)
    assert sum(shown.values()) == pytest.approx(sum(by_cluster.values()), rel=1e-9)


def test_fairness_page(serving: str) -> None:
    """Fleet-wide fair-share debt per team and week equals ``fairness_weekly``."""
    at = _page("fairness")
    table = _table(at, "week", "team", "fair_share_debt_gpu_h")
    view = _view(
        serving,
        "select week, team, fair_share_debt_gpu_h from fairness_weekly"
        " where \"window\" = 'week' and cluster is null order by week, team",
    )
    assert table.height == view.height > 0
    assert table["team"].to_list() == view["team"].to_list()
    assert table["fair_share_debt_gpu_h"].to_list() == pytest.approx(
        view["fair_share_debt_gpu_h"].to_list()
    )
    assert table["received_share"].sum() == pytest.approx(view["week"].n_unique())


def test_fairness_page_marks_a_partial_week(serving: str) -> None:
    """The two-day fleet has no complete week: the week offered first is the latest partial one,
    labelled with the hours its data cover, under a banner; the trend leaves partial weeks out."""
    at = _page("fairness")
    cut, begin = _view(
        serving,
        "select min(c), max(b) from (select max(as_of) c, min(hour) b"
        " from occupancy_hourly group by cluster)",
    ).row(0)
    week = dt.datetime.combine(cut.date() - dt.timedelta(days=cut.weekday()), dt.time(),
                               tzinfo=dt.UTC)  # fmt: skip
    hours = (cut - max(week, begin)).total_seconds() / 3600
    box = next(s for s in at.selectbox if s.label == "Week")
    assert box.format_func(box.value) == f"{week:%Y-%m-%d} (partial: {hours:,.1f} of 168 h)"
    assert any(f"is partial: the data cover {hours:,.1f} of its" in w.value for w in at.warning)
    assert any("Partial weeks left out of the trend" in c.value for c in at.caption)


def test_fairness_page_shows_the_planted_registry_drift(serving: str) -> None:
    """The drift table shows speech's Slurm drift as ``registry_drift`` holds it: RawShares 3 of
    95 (the other teams keep share × 100 = 92) against its registry share 0.08, so configured
    3/95 ≈ 0.0316 and drift ≈ −0.0484, flagged."""
    at = _page("fairness")
    table = _table(at, "scheduler", "team", "drift", "drifted")
    shown = table.filter((pl.col("scheduler") == "slurm") & (pl.col("team") == "speech"))
    view = _view(
        serving,
        "select drift, drifted from registry_drift where scheduler = 'slurm' and team = 'speech'",
    )
    assert shown.height == view.height == 1
    assert shown["drift"][0] == pytest.approx(view["drift"][0])
    assert view["drift"][0] == pytest.approx(3 / 95 - 0.08)
    assert shown["drifted"][0] and view["drifted"][0]
    assert _table(at, "scheduler", "object", "raw_shares").height > 0


def test_time_to_start_page(serving: str) -> None:
    """KM and naive percentiles per cluster and size bucket equal ``time_to_start_summary``."""
    at = _page("time_to_start")
    table = _table(at, "cluster", "bucket", "p90_s")
    view = _view(
        serving,
        "select cluster, coalesce(bucket, 'all') as bucket, jobs, censored, p50_s, p90_s, p99_s,"
        " naive_p50_s, naive_p90_s, naive_p99_s from time_to_start_summary"
        " where week is null and partition is null and team is null and jobs > 0",
    )
    assert table.height == view.height > 0
    joined = view.join(table, on=["cluster", "bucket"], how="left", suffix="_page")
    assert (joined["spells"] == joined["jobs"]).all()
    for col in ("censored", "p50_s", "p90_s", "p99_s", "naive_p50_s", "naive_p90_s"):
        want, got = joined[col].to_list(), joined[f"{col}_page"].to_list()
        assert [None if v is None or v != v else v for v in got] == want, col


def test_sql_page_select_shows_rows(serving: str) -> None:
    """A SELECT over a view shows its rows in the result table."""
    at = _page("sql_query")
    views = _table(at, "view", "column", "type")
    assert {"jobs", "gpu_waterfall_hourly", "fairness_weekly"} <= set(views["view"])
    at.text_area(key="sql_text").input("select count(*) as n from jobs").run()
    assert not at.exception
    assert not at.error
    want = _view(serving, "select count(*) as n from jobs")["n"][0]
    assert _table(at, "n")["n"].to_list() == [want]


def test_sql_page_write_shows_an_error(serving: str) -> None:
    """A write is refused with an error element, not an exception."""
    at = _page("sql_query")
    at.text_area(key="sql_text").input("create table x(a int)").run()
    assert not at.exception
    assert at.error and "refused" in at.error[0].value
    assert [list(d.value.columns) for d in at.dataframe] == [["view", "column", "type"]]


def test_filters_persist_across_pages_and_in_the_url(serving: str) -> None:
    """A cluster from the URL filters the overview and stays chosen on the next page."""
    at = _page(cluster="k8s-b")
    occ = _view(
        serving,
        "select sum(allocated_gpu_s) / sum(capacity_gpu_s - down_gpu_s - planned_down_gpu_s)"
        " from occupancy_hourly where cluster = 'k8s-b'",
    ).item()
    assert {m.label: m.value for m in at.metric}["Occupancy"] == f"{occ:.1%}"
    at.switch_page("pages/waste.py").run()
    assert not at.exception
    assert at.selectbox(key="cluster").value == "k8s-b"
    assert set(_table(at, "lemon_rank", "host")["cluster"]) == {"k8s-b"}
    at.selectbox(key="team").set_value("nlp").run()
    assert at.query_params["cluster"] == "k8s-b" and at.query_params["team"] == "nlp"
    at.selectbox(key="cluster").set_value("All").run()
    assert "cluster" not in at.query_params


def test_recommendations_page(serving: str) -> None:
    """One table row per row of the ``recommendations`` view, one detail expander each."""
    at = _page("recommendations")
    assert [t.value for t in at.title] == ["Recommendations"]
    want = _view(serving, "select count(*) as n from recommendations")["n"][0]
    table = _table(at, "severity", "rule", "scope", "change_text", "confidence")
    assert table.height == want > 0
    statuses = _view(serving, "select status from recommendations")["status"]
    assert sorted(table["status"]) == sorted(statuses) and set(statuses) <= {
        "proposed", "applied", "measured", "confirmed", "regressed"}  # fmt: skip
    assert len(at.expander) == want
    files = {b.proto.label for b in at.get("download_button")}
    assert {"latest.json", "slurm.conf.patch", "kueue-patches.yaml"} <= files


def _plotly_values(v: object) -> list[float]:
    """A plotly trace array as floats (plotly ≥ 6 writes numbers as base64 ``bdata``)."""
    import base64

    import numpy as np

    if isinstance(v, dict):
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        return [float(x) for x in arr]
    return [float(x) for x in v]  # type: ignore[attr-defined]


def test_recommendations_page_evidence_charts(serving: str) -> None:
    """Every recommendation has an evidence chart (titled ``rule · scope``) with its definition
    and CSV; recsys's idle chart shows, per day, the allocated GPU-hours ``gpu_activity`` holds
    for the team in the recommendation's window (5-minute buckets × 300 s, summed)."""
    import json

    at = _page("recommendations")
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    charts = {s["layout"]["title"]["text"]: s for s in specs}
    recs = _view(serving, "select id, rule, scope, window_start, window_end from recommendations")
    assert recs.height > 0
    for r in recs.iter_rows(named=True):
        assert f"{r['rule']} · {r['scope']}" in charts, r["scope"]
    csvs = {b.proto.label for b in at.get("download_button")}
    assert len(specs) == recs.height and "Download CSV" in csvs
    idle = recs.filter(pl.col("scope") == "cluster=slurm-a/team=recsys").row(0, named=True)
    trace = next(
        t
        for t in charts["idle_allocations · cluster=slurm-a/team=recsys"]["data"]
        if t["name"] == "allocated_gpu_h"
    )
    want = _view(
        serving,
        "select date_trunc('day', bucket) as day, count(*) * 300 / 3600.0 as gpu_h"
        " from gpu_activity where cluster = 'slurm-a' and team = 'recsys'"
        f" and bucket >= '{idle['window_start'].isoformat()}'"
        f" and bucket < '{idle['window_end'].isoformat()}' group by 1 order by 1",
    )
    assert want["gpu_h"].sum() > 0
    assert _plotly_values(trace["y"]) == pytest.approx(want["gpu_h"].to_list())


def test_recommendations_page_without_the_view(
    serving: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A serving copy without the ``recommendations`` view shows an info message."""
    db = tmp_path / "serving.duckdb"
    shutil.copyfile(serving, db)
    with duckdb.connect(str(db)) as con:
        con.execute("drop view recommendations")
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(db))
    at = _page("recommendations")
    assert at.info and "No recommendations" in at.info[0].value
    assert not at.dataframe


def test_reports_page_lists_the_weeks_folder(
    tmp_path: Path, isolated_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A week folder under ``reports/`` beside the serving copy is listed with its files."""
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(tmp_path / "serving.duckdb"))
    at = _page("reports")
    assert at.info  # no reports folder yet
    week = tmp_path / "reports" / "2026-W45"
    week.mkdir(parents=True)
    (week / "report.html").write_text("<html></html>")
    (week / "report.json").write_text("{}")
    (tmp_path / "reports" / "not-a-week").mkdir()
    at.run()
    assert not at.exception
    assert [s.value for s in at.subheader] == ["2026-W45"]
    assert [b.proto.label for b in at.get("download_button")] == ["HTML", "JSON"]


def test_time_to_start_page_kubernetes_stages(serving: str) -> None:
    """Each shown stage p50/p90 per ClusterQueue and week equals the nearest rank over the view.

    Hand computation (nearest rank, METRICS.md): the p90 of n durations is the ⌈0.9·n⌉-th
    smallest; recomputed here in SQL with ``list_sort`` and the same 1-based index, over
    ``k8s_workloads`` rows with the stage's duration, grouped by ClusterQueue and week.
    """
    at = _page("time_to_start")
    table = _table(at, "cluster_queue", "stage", "p90_s")
    assert set(table["stage"]) == set(queries.K8S_STAGES)
    want = _view(
        serving,
        "with w as (select cluster, coalesce(cluster_queue, '(no ClusterQueue)') as cluster_queue,"
        " date_trunc('week', eligible_at) as week, quota_wait_s, admission_check_s, scheduling_s,"
        " pod_startup_s, time_to_running_s, gang_start_spread_s, image_pull_s from k8s_workloads"
        " where eligible_at is not null),"
        " d as (unpivot w on quota_wait_s, admission_check_s, scheduling_s, pod_startup_s,"
        " time_to_running_s, gang_start_spread_s, image_pull_s into name stage value v)"
        " select cluster, cluster_queue, week, stage, count(*) as n,"
        " list_sort(list(v))[ceil(0.5 * count(*))::int] as p50_s,"
        " list_sort(list(v))[ceil(0.9 * count(*))::int] as p90_s"
        " from d where v is not null group by all",
    )
    assert table.height == want.height > 0
    keys = ["cluster", "cluster_queue", "week", "stage"]
    joined = want.join(table, on=keys, how="left", suffix="_page")
    assert (joined["workloads"] == joined["n"]).all()
    assert joined["p50_s_page"].to_list() == joined["p50_s"].to_list()
    assert joined["p90_s_page"].to_list() == joined["p90_s"].to_list()
    assert any("ClusterQueue" in c.value for c in at.caption)
    ids = [b.proto.id for b in at.get("download_button")]
    assert any(i.endswith("-k8s_stages_csv") for i in ids)
    assert any(i.endswith("-k8s_pending_csv") for i in ids)
    pending = _table(at, "component", "reason", "events")
    total = _view(
        serving,
        "select component, reason, sum(events)::bigint as events from k8s_pending_reasons"
        " group by all",
    )
    assert dict(zip(pending["reason"], pending["events"], strict=True)) == dict(
        zip(total["reason"], total["events"], strict=True)
    )


def test_overview_flags_stale_sources(
    serving: str, materialized: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a dcgm bound of 0.0001 h (0.36 s) every dcgm source is stale and flagged; a bound of
    10⁶ h on sacct and Kubernetes keeps their data (November 2026) fresh. The fixture's sacct
    data are weeks older than its load, and the table shows both ages."""
    cfg = tmp_path / "goodput.toml"
    text = materialized.cfg.path.read_text(encoding="utf-8")
    cfg.write_text(
        text + "\n[freshness]\ndcgm_hours = 0.0001\nsacct_hours = 1e6\nk8s_hours = 1e6\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GOODPUT_CONFIG", str(cfg))
    at = _page()
    fresh = _table(at, "source", "cluster", "last_loaded_at", "stale")
    dcgm_clusters = _view(serving, "select distinct cluster from ingests where source = 'dcgm'")
    flagged = fresh.filter(pl.col("stale"))
    assert set(flagged["source"]) == {"dcgm"}
    assert set(flagged["cluster"]) == set(dcgm_clusters["cluster"])
    sacct = fresh.filter(pl.col("source") == "sacct")
    assert sacct["limit_h"].to_list() == [1e6]
    newest = _view(serving, "select max(newest_data_at) from ingests where source = 'sacct'")
    assert sacct["newest_data_at"][0] == newest.item()
    assert sacct["data_age_h"][0] > sacct["load_age_h"][0]
    assert any(w.value.startswith("Stale sources") and "dcgm on" in w.value for w in at.warning)


def test_recommendations_page_pseudonymises_user_names(
    serving: str, materialized: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No user name of the warehouse's evidence appears on the page; their pseudonyms (the serving
    copy's) do. A copy published with ``GOODPUT_SHOW_USER_NAMES=1`` shows the names."""
    import json

    from pipelines.privacy import load_salt, pseudonymise
    from pipelines.warehouse import publish_serving_copy

    warehouse = materialized.cfg.warehouse_path
    names: set[str] = set()
    for (text,) in _view(str(warehouse), "select evidence from recommendations").iter_rows():
        for row in json.loads(text).get("top_offenders", []) + json.loads(text).get("users", []):
            names.add(row["user"])
    assert names  # the bundled fleet's idle and time-limit findings name users

    def shown(at: AppTest) -> str:
        parts = [m.value for m in at.markdown] + [c.value for c in at.code]
        parts += [str(j.value) for j in at.json] + [str(d.value.to_dict()) for d in at.dataframe]
        return "\n".join(parts)

    monkeypatch.delenv("GOODPUT_SHOW_USER_NAMES", raising=False)
    text = shown(_page("recommendations"))
    assert not {n for n in names if re.search(rf"\b{re.escape(n)}\b", text)}
    salt = load_salt(warehouse)
    assert all(pseudonymise(n, salt=salt) in text for n in names)
    monkeypatch.setenv("GOODPUT_SHOW_USER_NAMES", "1")
    copy = publish_serving_copy(warehouse, tmp_path / "shown.duckdb")
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(copy))
    text = shown(_page("recommendations"))
    assert all(re.search(rf"\b{re.escape(n)}\b", text) for n in names)


def test_sql_page_stops_a_runaway_query_naming_the_limit(
    serving: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``[sql] time_limit_s = 1`` an infinite recursive CTE is stopped: one error element
    naming the limit, no exception box."""
    cfg = Path(os.environ["GOODPUT_CONFIG"])
    limited = tmp_path / "goodput.toml"
    limited.write_text(cfg.read_text() + '\n[sql]\ntime_limit_s = 1\nmemory_limit = "1GB"\n')
    monkeypatch.setenv("GOODPUT_CONFIG", str(limited))
    at = _page("sql_query")
    runaway = (
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
    )
    at.text_area(key="sql_text").input(runaway).run()
    assert not at.exception
    assert [e.value for e in at.error] == ["query stopped: time limit of 1 s"]


def test_overview_waterfall_colours_are_the_reports(serving: str) -> None:
    """Each leaf in the overview's waterfall chart has the colour the weekly PDF report gives it
    (one palette, :mod:`pipelines.report.palette`)."""
    import json

    from pipelines.report.weekly import _figures

    at = _page()
    spec = next(
        s
        for s in (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
        if any(t.get("name") == "goodput" for t in s["data"])
    )
    shown = {t["name"]: t["marker"]["color"] for t in spec["data"]}
    data = {
        "daily": [],
        "teams": [],
        "waterfall": [{"cluster": "c", "bucket": leaf, "gpu_h": 1.0} for leaf in shown],
    }
    report = {t.name: t.marker.color for t in _figures(data)["waterfall"].data}
    assert "goodput" in shown and shown == {leaf: report[leaf] for leaf in shown}


def test_time_to_start_chart_leaves_out_empty_size_buckets(serving: str) -> None:
    """The wait-by-size chart's axis lists only buckets with a wait; every bucket it lists has
    a bar."""
    import json

    at = _page("time_to_start")
    spec = next(
        s
        for s in (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
        if s["layout"].get("xaxis", {}).get("title", {}).get("text") == "GPUs"
    )
    listed = spec["layout"]["xaxis"]["categoryarray"]
    drawn = {
        x
        for t in spec["data"]
        for x, y in zip(t["x"], _plotly_values(t["y"]), strict=True)
        if y == y  # NaN: no bar
    }
    assert listed and set(listed) == drawn


def test_sql_page_draws_no_chart_of_a_single_number(serving: str) -> None:
    """A count is a table, not a one-point chart: no quick chart, a caption says why."""
    at = _page("sql_query")
    assert at.get("plotly_chart")  # the default query (clusters × days) is charted
    at.text_area(key="sql_text").input("select count(*) as n from jobs").run()
    assert not at.exception
    assert not at.get("plotly_chart")
    assert any("No quick chart" in c.value for c in at.caption)
