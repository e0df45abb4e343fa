"""Time to start: censored (Kaplan–Meier) and naive wait percentiles by size, week, large jobs."""

from __future__ import annotations

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import _charts, _filters, queries
from pipelines.config import load_config

st.title("Time to start")

path = queries.serving_path()
large = load_config().large_job_gpus
f = _filters.render(path)
st.caption(f"{f.describe()} · spells by eligible time")

by_bucket = queries.wait_percentiles(path, f)
if by_bucket.height == 0:
    st.warning(f"No waiting spells for this selection in {path}: run `goodput materialize`.")
    st.stop()

# --- by size bucket --------------------------------------------------------------------------
st.subheader("Wait percentiles by job size")
pct = st.radio("Percentile", ["p50", "p90", "p99"], index=1, horizontal=True, key="tts_percentile")
# Plotly reads a category label starting with "<" as HTML, so "<1" would vanish from the axis.
shown_bucket = pl.col("bucket").replace({"<1": "< 1"})
side = by_bucket.select(
    "cluster",
    shown_bucket,
    (pl.col(f"{pct}_s") / 3600).alias("censored (Kaplan–Meier)"),
    (pl.col(f"naive_{pct}_s") / 3600).alias("naive (started only)"),
).unpivot(index=["cluster", "bucket"], variable_name="estimate", value_name="wait_h")
fig = px.bar(
    side,
    x="bucket",
    y="wait_h",
    color="estimate",
    barmode="group",
    facet_col="cluster",
    category_orders={"bucket": [b.replace("<1", "< 1") for b in queries.BUCKET_ORDER]},
    labels={"wait_h": f"{pct} wait (h)", "bucket": "GPUs"},
)
_charts.chart(
    fig,
    by_bucket,
    key="tts_by_bucket",
    definition=(
        "Wait = start − eligible. Censored: Kaplan–Meier, jobs still pending or cancelled while "
        "pending count until then (NULL where S(t) never gets there; reason in the CSV); naive: "
        "nearest-rank over started jobs only."
    ),
)
st.dataframe(by_bucket, key="tts_by_bucket_table", hide_index=True)
st.caption("Seconds; bucket 'all' = every GPU size; spells = eligible spells, censored among them.")

# --- over weeks, all and large jobs ----------------------------------------------------------
st.subheader(f"Over weeks: all GPU jobs and large jobs (≥ {large:g} GPUs)")
weekly = queries.wait_percentiles_weekly(path, f, large)
if weekly.height:
    wlong = weekly.select(
        "jobs",
        "week",
        (pl.col(f"{pct}_s") / 3600).alias("censored (Kaplan–Meier)"),
        (pl.col(f"naive_{pct}_s") / 3600).alias("naive (started only)"),
    ).unpivot(index=["jobs", "week"], variable_name="estimate", value_name="wait_h")
    fig2 = px.line(
        wlong,
        x="week",
        y="wait_h",
        color="jobs",
        line_dash="estimate",
        markers=True,
        labels={"wait_h": f"{pct} wait (h)", "week": "week of eligible time"},
    )
    _charts.chart(
        fig2,
        weekly,
        key="tts_weekly",
        definition=(
            f"The {pct} wait per week of eligible time (Monday 00:00 UTC); large = ≥ {large:g} "
            "GPUs (config large_job_gpus); censored and naive as above."
        ),
    )
else:
    st.info("No dated waiting spells in this window.")
