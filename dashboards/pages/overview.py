"""Overview: headline numbers and weekly change, the GPU-time waterfall, trends, data quality."""

from __future__ import annotations

import datetime as dt

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import _charts, _filters, queries
from metrics.schema import WATERFALL_LEAVES
from pipelines.config import load_config
from pipelines.freshness import stale_sources

st.title("GPU fleet overview")

path = queries.serving_path()
cfg = load_config()
large = cfg.large_job_gpus
f = _filters.render(path)
head = queries.headline(path, f)
if not head or head.get("capacity_gpu_h") is None:
    st.warning(f"No data yet in {path}: run `goodput materialize` (or `make run`).")
    st.stop()

st.caption(
    f"Window {head['first_hour']:%Y-%m-%d %H:%M} – {head['last_hour']:%Y-%m-%d %H:%M} UTC · "
    f"data as of {head['as_of']:%Y-%m-%d %H:%M} UTC · {f.describe()}"
)

# --- headline numbers and week-over-week change ----------------------------------------------
change = queries.headline_change(path, f, large)
before, now = (
    (change.row(0, named=True), change.row(1, named=True))
    if change.height == 2 and change["hours"][0]
    else ({}, {})
)


def _change(name: str) -> float | None:
    a, b = now.get(name), before.get(name)
    return None if a is None or b is None else float(a) - float(b)


p90 = queries.large_job_p90_wait_s(path, large, f)
occ = head["occupancy"]
d_occ, d_gpu_h = _change("occupancy"), _change("allocated_gpu_h")
d_att, d_p90 = _change("attempts"), _change("p90_large_wait_s")
c1, c2, c3, c4 = st.columns(4)
c1.metric(
    "Occupancy",
    f"{occ:.1%}" if occ is not None else "n/a",
    delta=f"{d_occ * 100:+.1f} pp" if d_occ is not None else None,
    help="Allocated GPU-seconds ÷ (capacity − down − planned down), METRICS.md.",
)
c2.metric(
    "GPU-hours allocated",
    f"{head['allocated_gpu_h']:,.0f}",
    delta=f"{d_gpu_h:+,.0f}" if d_gpu_h is not None else None,
    help="Σ GPUs × allocated time of allocation attempts (steps never count).",
)
c3.metric(
    "Jobs (attempts)",
    f"{head['attempts']:,}",
    delta=f"{d_att:+,.0f}" if d_att is not None else None,
    help="Allocation attempts that started; a requeued job counts each attempt.",
)
c4.metric(
    f"p90 wait, jobs ≥ {large:g} GPUs",
    f"{p90 / 3600:.1f} h" if p90 is not None else "n/a",
    delta=f"{d_p90 / 3600:+.1f} h" if d_p90 is not None else None,
    delta_color="inverse",
    help="Nearest-rank p90 of start − eligible over started large attempts (naive).",
)
if now:
    st.caption(
        f"Change: the 7 days to {now['period_end']:%Y-%m-%d %H:%M} UTC ({now['hours']} hours with "
        f"data) vs the 7 days before ({before['hours']}); occupancy in percentage points."
    )
else:
    st.caption("Week-over-week change: no data in the 7 days before the last 7 of the window.")
with st.expander("Last 7 days vs the 7 days before"):
    _charts.table(change, key="headline_change")

# --- the GPU-time waterfall --------------------------------------------------------------------
st.subheader("Where the GPU-hours went")
daily = queries.waterfall_daily(path, f)
if daily.height:
    fig = px.bar(
        daily,
        x="day",
        y="gpu_h",
        color="leaf",
        category_orders={"leaf": list(WATERFALL_LEAVES)},
        color_discrete_map=_charts.LEAF_COLORS,
        labels={"gpu_h": "GPU-hours", "day": "UTC day"},
        hover_data=["cluster"],
    )
    _charts.chart(
        fig,
        daily,
        key="waterfall_daily",
        definition=(
            "GPU-time waterfall: every GPU-second of capacity lands in exactly one leaf, the first "
            "rule that applies in METRICS.md order wins, so each day's bar sums to capacity."
        ),
    )
    _charts.table(
        queries.waterfall_totals(path, f),
        key="waterfall_totals",
        caption="Leaf totals over the window, GPU-hours and share of capacity (all clusters).",
    )
else:
    st.info("No waterfall rows in this window.")

# --- trends ----------------------------------------------------------------------------------
st.subheader("Occupancy and goodput")
trends = queries.trends_daily(path, f)
if trends.height:
    long = trends.unpivot(
        index=["cluster", "day"],
        on=["occupancy", "goodput_ratio"],
        variable_name="metric",
        value_name="ratio",
    )
    fig2 = px.line(long, x="day", y="ratio", color="cluster", line_dash="metric", markers=True)
    fig2.update_yaxes(tickformat=".0%", rangemode="tozero")
    _charts.chart(
        fig2,
        trends,
        key="trends_daily",
        definition=(
            "Occupancy = allocated ÷ (capacity − down − planned_down); fleet goodput ratio = "
            "goodput ÷ capacity; goodput telemetry coverage (observed ÷ goodput) is in the CSV."
        ),
    )

# --- data quality ----------------------------------------------------------------------------
st.subheader("Data quality")
checks = queries.data_quality_checks(path, f)
clean, total = queries.data_quality_score(checks)
if total:
    st.progress(clean / total, text=f"Data-quality score: {clean} of {total} checks clean")
    st.caption(
        "Score = share of (cluster × check) pairs with no finding in the window; checks: GPUs "
        "not tracked, DST repairs, rejected rows, capacity from observed nodes (data_quality)."
    )
findings = queries.data_quality_findings(path, f)
if findings.height:
    _charts.table(findings, key="dq_findings")
else:
    st.caption("No data-quality findings in this window.")

# --- freshness -------------------------------------------------------------------------------
st.subheader("Source freshness")
fresh = stale_sources(queries.freshness(path), cfg, dt.datetime.now(dt.UTC))
if fresh.height:
    stale = fresh.filter(pl.col("stale"))
    if stale.height:
        listed = "; ".join(
            f"{r['source']} on {r['cluster']}: "
            + (
                f"newest data {r['data_age_h']:,.1f} h old"
                if r["data_age_h"] is not None
                else f"loaded {r['load_age_h']:,.1f} h ago (no data time)"
            )
            + f" (bound {r['limit_h']:g} h)"
            for r in stale.iter_rows(named=True)
        )
        st.warning(f"Stale sources (data older than their [freshness] bound): {listed}")
    else:
        st.caption("Every source's newest data are within its [freshness] bound.")
    st.dataframe(
        fresh.select(
            "source", "cluster", "newest_data_at", "data_age_h", "last_loaded_at", "load_age_h",
            "limit_h", "stale", "files", "rows_loaded", "rows_rejected",
        ),
        key="freshness_table",
        hide_index=True,
    )  # fmt: skip
    st.caption(
        "Per source and cluster (UTC): newest_data_at = the newest record time in its loaded "
        "files (not after their load), data_age_h = hours since then; last_loaded_at and "
        "load_age_h = the last load. stale = data age (load age where the rows carry no data "
        "time) > limit_h, the source's [freshness] bound in goodput.toml. Dagster's check "
        "(sensor source_freshness) judges the last load."
    )
rej = queries.rejected_by_reason(path)
if rej.height:
    st.dataframe(rej, key="rejected_table", hide_index=True)
else:
    st.caption("No rejected input rows.")
