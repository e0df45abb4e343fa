"""Time to start: censored (Kaplan–Meier) and naive wait percentiles by size, week, large jobs;
Kubernetes stage percentiles per ClusterQueue and week, and why workloads pended."""

from __future__ import annotations

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import _charts, _filters, queries
from metrics.headlines import MIN_KM_JOBS
from metrics.periods import mark_complete
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
# A percentile of fewer than MIN_KM_JOBS spells is one or two jobs' wait, not a percentile: such
# bars are left off the chart (the table keeps them beside their spell count), as the Overview's
# tile does (METRICS.md "Large-job time to start").
few = by_bucket.filter(pl.col("spells") < MIN_KM_JOBS).select(
    "cluster", shown_bucket, pl.lit(True).alias("few")
)
side = (
    side.join(few, on=["cluster", "bucket"], how="left")
    .with_columns(pl.when(pl.col("few").is_null()).then(pl.col("wait_h")).alias("wait_h"))
    .drop("few")
)
# Buckets without a spell in any cluster are left off the axis (no empty slots).
present = set(side.filter(pl.col("wait_h").is_not_null())["bucket"])
fig = px.bar(
    side.filter(pl.col("bucket").is_in(sorted(present))),
    x="bucket",
    y="wait_h",
    color="estimate",
    barmode="group",
    facet_col="cluster",
    category_orders={
        "bucket": [b for b in (x.replace("<1", "< 1") for x in queries.BUCKET_ORDER)
                   if b in present]
    },
    color_discrete_map=_charts.color_map("series"),
    labels={"wait_h": f"{pct} wait (h)", "bucket": "GPUs"},
)  # fmt: skip
fig.update_yaxes(rangemode="tozero")
_charts.legend_below(fig)
_charts.chart(
    fig,
    by_bucket,
    key="tts_by_bucket",
    definition=(
        "Wait = start − eligible. Censored: Kaplan–Meier, jobs still pending or cancelled while "
        "pending count until then (NULL where S(t) never gets there; reason in the CSV); naive: "
        "nearest-rank over started jobs only. "
        + (
            f"Left off: {few.height} cluster × size group(s) with fewer than {MIN_KM_JOBS} "
            "spells (their waits are in the table)."
            if few.height
            else f"Every group shown has at least {MIN_KM_JOBS} spells."
        )
    ),
)
_charts.table(
    by_bucket,
    key="tts_by_bucket",
    caption="Waits in hours (seconds in the CSV); bucket 'all' = every GPU size; spells = "
    "eligible spells, censored among them.",
)

# --- over weeks, all and large jobs ----------------------------------------------------------
st.subheader(f"Over weeks: all GPU jobs and large jobs (≥ {large:g} GPUs)")
weekly = queries.wait_percentiles_weekly(path, f, large)
if weekly.height:
    # A week the data do not cover whole is not comparable with whole weeks (metrics.periods):
    # left out of the trend, as on the Fairness page; so is a week of fewer than MIN_KM_JOBS
    # spells in its series.
    as_of, data_from = queries.period_bounds(path, f)
    weekly = mark_complete(weekly, as_of=as_of, data_from=data_from)
    partial = sorted(set(weekly.filter(~pl.col("complete"))["week"]))
    thin = weekly.filter(pl.col("complete") & (pl.col("spells") < MIN_KM_JOBS))
    weekly = weekly.filter(pl.col("complete") & (pl.col("spells") >= MIN_KM_JOBS)).drop(
        "complete", "covered_h"
    )
    if partial:
        st.caption(
            "Partial weeks left out of the trend (not comparable with whole weeks): "
            + ", ".join(f"{w:%Y-%m-%d}" for w in partial)
            + "."
        )
    if thin.height:
        st.caption(
            f"Left out, fewer than {MIN_KM_JOBS} spells: "
            + ", ".join(f"{r['jobs']} in the week of {r['week']:%Y-%m-%d} (n = {r['spells']})"
                        for r in thin.iter_rows(named=True))
            + "."
        )  # fmt: skip
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
        color_discrete_map={
            j: "#34495e" if j == "all GPU jobs" else "#d95f02" for j in weekly["jobs"].unique()
        },
    )
    fig2.update_yaxes(rangemode="tozero")
    _charts.legend_below(_charts.week_axis(fig2))
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
    st.info(
        f"No complete week with at least {MIN_KM_JOBS} waiting spells in this window: "
        "no weekly trend to draw."
    )

# --- Kubernetes stages -----------------------------------------------------------------------
st.subheader("Kubernetes stages: quota, admission, scheduling, pod startup, image pull")
stages = queries.k8s_stage_percentiles(path, f)
if stages.height:
    k8s_pct = st.radio("Stage percentile", ["p50", "p90"], index=1, horizontal=True, key="k8s_pct")
    shown = stages.with_columns(
        (pl.col(f"{k8s_pct}_s") / 60).alias("minutes"),
        pl.col("week").dt.strftime("%G-W%V").alias("week of"),
    )
    fig3 = px.bar(
        shown,
        x="label",
        y="minutes",
        color="week of",
        barmode="group",
        facet_col="cluster_queue",
        category_orders={"label": list(queries.K8S_STAGES.values())},
        hover_data=["cluster", "workloads", "p50_s", "p90_s"],
        labels={"minutes": f"{k8s_pct} (min)", "label": "stage", "cluster_queue": "ClusterQueue"},
    )
    fig3.update_yaxes(rangemode="tozero")
    _charts.legend_below(fig3)
    _charts.chart(
        fig3,
        stages,
        key="k8s_stages",
        definition=(
            f"Nearest-rank {k8s_pct} per ClusterQueue and week of eligible time, over workload "
            "attempts whose stage completed: quota wait = quota reserved − eligible; admission "
            "checks = admitted − quota reserved; scheduling = all pods scheduled − admitted; pod "
            "startup = all running − all scheduled; time to running = all running − eligible; "
            "gang start spread = last − first pod running; image pull = slowest pod's pull "
            "(METRICS.md)."
        ),
    )
    _charts.table(
        stages,
        key="k8s_stages",
        csv=False,
        caption="Durations in hours (seconds in the CSV above); workloads = attempts whose stage "
        "completed (stages in progress left out).",
    )
else:
    st.info("No Kubernetes workloads eligible in this window.")

reasons = queries.k8s_pending_reasons(path, f)
if reasons.height:
    fig4 = px.bar(
        reasons.with_columns(
            pl.concat_str("component", pl.lit(": "), "reason").alias("why pending")
        ),
        x="events",
        y="why pending",
        color="cluster",
        orientation="h",
        hover_data=["workloads"],
        labels={"events": "events (Σ counts)"},
        color_discrete_map=_charts.color_map("cluster", reasons["cluster"]),
    )
    _charts.legend_below(fig4)
    fig4.update_yaxes(categoryorder="total ascending")
    _charts.chart(
        fig4,
        reasons,
        key="k8s_pending",
        definition=(
            "Why pending: Σ counts of kube-scheduler FailedScheduling and Kueue Pending events "
            "of workload attempts eligible in the window, by normalised reason (METRICS.md)."
        ),
    )
    with st.expander("Why pending: the numbers"):
        _charts.table(reasons, key="k8s_pending", csv=False, sort_by="events")
