"""goodput dashboard: the overview page (``goodput app`` / ``make run``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script by Streamlit

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import queries
from metrics.schema import SIZE_BUCKETS
from pipelines.config import load_config

st.set_page_config(page_title="goodput", layout="wide")
st.title("GPU fleet overview")

path = queries.serving_path()
large = load_config().large_job_gpus
head = queries.headline(path)
if not head or head.get("capacity_gpu_h") is None:
    st.warning(f"No data yet in {path}: run `goodput materialize` (or `make run`).")
    st.stop()

st.caption(
    f"Window {head['first_hour']:%Y-%m-%d %H:%M} – {head['last_hour']:%Y-%m-%d %H:%M} UTC · "
    f"data as of {head['as_of']:%Y-%m-%d %H:%M} UTC"
)
p90 = queries.large_job_p90_wait_s(path, large)
c1, c2, c3, c4 = st.columns(4)
occ = head["occupancy"]
c1.metric(
    "Occupancy",
    f"{occ:.1%}" if occ is not None else "n/a",
    help=("Allocated GPU-seconds ÷ (capacity − down − planned down), METRICS.md."),
)
c2.metric(
    "GPU-hours allocated",
    f"{head['allocated_gpu_h']:,.0f}",
    help="Σ GPUs × allocated time of allocation attempts (steps never count).",
)
c3.metric(
    "Jobs (attempts)",
    f"{head['attempts']:,}",
    help="Allocation attempts that started; a requeued job counts each attempt.",
)
c4.metric(
    f"p90 wait, jobs ≥ {large:g} GPUs",
    f"{p90 / 3600:.1f} h" if p90 is not None else "n/a",
    help="Nearest-rank p90 of start − eligible over started large attempts (naive).",
)

st.subheader("Occupancy over time")
st.caption("Daily allocated ÷ available GPU-seconds per cluster.")
occ_daily = queries.occupancy_daily(path)
fig = px.line(occ_daily, x="day", y="occupancy", color="cluster", markers=True)
fig.update_yaxes(tickformat=".0%", rangemode="tozero")
st.plotly_chart(fig, key="occupancy_chart")
st.download_button("Download CSV", occ_daily.write_csv(), "occupancy_daily.csv", key="dl_occ")

st.subheader("Wait to start by job size")
st.caption("Naive (started attempts only) wait percentiles, start − eligible, by GPUs requested.")
waits = queries.wait_by_bucket(path)
if waits.height:
    long = waits.unpivot(
        index=["cluster", "bucket"],
        on=["naive_p50_s", "naive_p90_s"],
        variable_name="percentile",
        value_name="wait_s",
    ).with_columns((pl.col("wait_s") / 3600).alias("wait_h"))
    fig2 = px.bar(
        long,
        x="bucket",
        y="wait_h",
        color="percentile",
        facet_col="cluster",
        barmode="group",
        labels={"wait_h": "wait (h)"},
        category_orders={"bucket": [label for label, _lo, _hi in SIZE_BUCKETS] + ["all"]},
    )
    st.plotly_chart(fig2, key="wait_chart")
st.dataframe(waits, key="wait_table")

st.subheader("Data freshness and rejected rows")
st.dataframe(queries.freshness(path), key="freshness_table")
rej = queries.rejected_by_reason(path)
if rej.height:
    st.dataframe(rej, key="rejected_table")
else:
    st.caption("No rejected input rows.")
