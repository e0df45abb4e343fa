"""What a reader takes from a page's first screen: the number, its week, and no percentile or
trend point drawn from too few spells or a partial week.

AppTest over the small fleet's serving copy (two days, 2026-11-02 and -03: no ISO week is whole).
"""

from __future__ import annotations

import json
import re

import duckdb
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from metrics.headlines import MIN_KM_JOBS
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


def _page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception
    return at


def _values(v: object) -> list[float]:
    """A plotly trace array as floats (plotly ≥ 6 writes numbers as base64 ``bdata``)."""
    import base64

    import numpy as np

    if isinstance(v, dict):
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        return [float(x) for x in arr]
    return [float(x) for x in v]  # type: ignore[attr-defined]


def _figure(at: AppTest, x_title: str) -> dict[str, object] | None:
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if spec["layout"].get("xaxis", {}).get("title", {}).get("text") == x_title:
            return spec  # type: ignore[no-any-return]
    return None


def test_time_to_start_chart_draws_no_percentile_of_too_few_spells(serving: str) -> None:
    """A cluster × size group of fewer than MIN_KM_JOBS (10) spells has no bar: its "p90" is
    one of a handful of waits (of 3 spells, nearest rank ⌈0.9 · 3⌉ = 3: the longest one), which
    the Overview's tile refuses to show under n = 10; the table keeps it beside its count."""
    at = _page("time_to_start")
    groups = _view(
        serving,
        "select cluster, coalesce(bucket, 'all') as bucket, jobs from time_to_start_summary"
        " where week is null and partition is null and team is null and jobs > 0"
        " and (p90_s is not null or naive_p90_s is not null)",
    )
    few = {(c, b) for c, b, n in groups.iter_rows() if n < MIN_KM_JOBS}
    assert few, "the small fleet has groups of fewer than 10 spells with a p90"
    spec = _figure(at, "GPUs")
    assert spec is not None
    drawn = set()
    for t in spec["data"]:  # type: ignore[index]
        cluster = re.search(r"cluster=([^<]+)", t["hovertemplate"]).group(1)  # type: ignore[union-attr]
        drawn |= {(cluster, x) for x, y in zip(t["x"], _values(t["y"]), strict=True) if y == y}
    assert drawn, "groups with at least 10 spells are drawn"
    assert drawn.isdisjoint({(c, b.replace("<1", "< 1")) for c, b in few})
    assert any(f"fewer than {MIN_KM_JOBS} spells" in c.value for c in at.caption)


def test_time_to_start_trend_leaves_out_partial_weeks(serving: str) -> None:
    """The two-day fleet covers 48 of the 168 hours of the week of 2026-11-02: that week is not
    drawn as a point of the weekly trend (it is not comparable with whole weeks, as on the
    Fairness page) and a caption names it."""
    at = _page("time_to_start")
    weeks = _view(serving, "select distinct week from time_to_start_jobs where week is not null")
    assert weeks.height > 0
    spec = _figure(at, "week of eligible time")
    drawn = [x for t in spec["data"] for x in t["x"]] if spec else []  # type: ignore[index]
    assert drawn == []
    assert any(
        "Partial weeks left out of the trend" in c.value and "2026-11-02" in c.value
        for c in at.caption
    )


def test_fairness_page_states_the_weeks_jain_index(serving: str) -> None:
    """The Fairness page opens with the picked week's answer as numbers, as the Overview's tile
    gives it. Hand computation: Jain's index = (Σe)² ÷ (n · Σe²) over the entitlement ratios
    e_t = U_t ÷ F_t of the teams with demand in ``fairness_weekly`` (fleet rows of the week);
    unmet entitlement = Σ max(0, F − U) ÷ Σ F; most owed = the largest debt F − U in GPU-h."""
    at = _page("fairness")
    box = next(s for s in at.selectbox if s.label == "Week")
    week = box.value
    rows = _view(
        serving,
        "select team, entitlement_ratio as e, fair_gpu_s as f, used_gpu_s as u,"
        " fair_share_debt_gpu_h as debt from fairness_weekly where \"window\" = 'week'"
        f" and cluster is null and week = '{week.isoformat()}' and demand_gpu_s > 0",
    )
    e = rows["e"].to_list()
    jain = sum(e) ** 2 / (len(e) * sum(x * x for x in e))
    unmet = sum(max(0.0, f - u) for f, u in zip(rows["f"], rows["u"], strict=True)) / sum(rows["f"])
    team, debt = rows.sort("debt", descending=True).select("team", "debt").row(0)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Jain's index"] == f"{jain:.2f}"
    assert shown["Unmet entitlement"] == f"{unmet:.1%}"
    assert shown["Most owed"] == f"{team}: {debt:,.0f} GPU-h"
    assert any(f"week of {week:%Y-%m-%d}" in c.value for c in at.caption)


def _table(at: AppTest, *columns: str) -> pl.DataFrame:
    for element in at.dataframe:
        if set(columns) <= set(element.value.columns):
            return pl.from_pandas(element.value)
    raise AssertionError(f"no table with columns {columns}")


def test_jobs_list_leaves_idle_empty_without_telemetry(serving: str) -> None:
    """An attempt with no GPU telemetry (``job_gpu_summary.observed_gpu_s`` = 0: no DCGM sample
    tied to it) has an unknown idle time, not 0 GPU-hours; one with telemetry keeps its idle
    GPU-hours (idle_gpu_s ÷ 3600, e.g. 5,400 s → 1.5)."""
    at = _page("jobs")
    shown = _table(at, "cluster", "job", "attempt", "idle GPU-hours")
    summary = _view(
        serving,
        "select cluster, job_id as job, attempt, observed_gpu_s, idle_gpu_s"
        " from job_gpu_summary where gpus > 0",
    )
    joined = shown.join(summary, on=["cluster", "job", "attempt"], how="inner")
    dark = joined.filter(pl.col("observed_gpu_s") == 0)
    lit = joined.filter(pl.col("observed_gpu_s") > 0)
    assert dark.height > 0 and lit.height > 0
    assert dark["idle GPU-hours"].null_count() == dark.height
    assert lit["idle GPU-hours"].to_list() == [round(s / 3600, 1) for s in lit["idle_gpu_s"]]
    assert any("no GPU telemetry tied to the attempt" in c.value for c in at.caption)


def test_waste_page_opens_with_the_avoidable_waste_of_its_window(serving: str) -> None:
    """The Waste page's first screen gives the Overview's avoidable waste (the loss leaves,
    allocated_idle and held: METRICS.md "Dashboard and report figures") over its own filters
    (all days, all clusters by default) and its share of capacity: Σ avoidable GPU-s ÷ 3600 and
    that over Σ every leaf's GPU-s (the waterfall sums to capacity). Before: no such number."""
    from metrics.headlines import AVOIDABLE_LEAVES

    at = _page("waste")
    leaves = ", ".join(f"'{leaf}'" for leaf in AVOIDABLE_LEAVES)
    waste_s, capacity_s = _view(
        serving,
        f"select sum(gpu_s) filter (where bucket in ({leaves})), sum(gpu_s)"
        " from gpu_waterfall_hourly",
    ).row(0)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Avoidable waste"] == f"{waste_s / 3600:,.0f} GPU-h"
    assert metrics["Share of capacity"] == f"{waste_s / capacity_s:.1%}"
    assert 0 < waste_s < capacity_s
