"""Waste: waterfall by cluster, idle allocations and idle by team, failures, lost work, lemons."""

from __future__ import annotations

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import _charts, _filters, queries
from metrics.headlines import AVOIDABLE_LEAVES
from metrics.schema import WATERFALL_LEAVES
from pipelines.config import load_config

st.title("Waste")

path = queries.serving_path()
cfg = load_config()
f = _filters.render(path)
st.caption(f.describe())
as_of, _data_from = queries.period_bounds(path, f)

# --- waterfall by cluster --------------------------------------------------------------------
by_cluster = queries.waterfall_by_cluster(path, f)
if by_cluster.height == 0:
    st.warning(f"No data yet in {path}: run `goodput materialize` (or `make run`).")
    st.stop()
# The headline: the Overview's avoidable waste, over this page's filters (its days, clusters).
totals = queries.waterfall_totals(path, f)
capacity = float(totals["gpu_h"].sum())
avoidable = totals.filter(pl.col("leaf").is_in(AVOIDABLE_LEAVES))
waste = float(avoidable["gpu_h"].sum())
if capacity > 0:
    h1, h2 = st.columns(2)
    h1.metric(
        "Avoidable waste",
        f"{waste:,.0f} GPU-h",
        help="Lost work (failed, preempted, timed out), allocated-idle and held GPU-hours "
        "(waterfall leaves 3–6, 8, 10; METRICS.md), as on the Overview.",
    )
    h2.metric("Share of capacity", f"{waste / capacity:.1%}")
    largest = avoidable.sort("gpu_h", descending=True).head(2)
    st.caption(
        f"Of {capacity:,.0f} GPU-h of capacity · largest: "
        + ", ".join(f"{r['leaf']} {r['gpu_h']:,.0f} h" for r in largest.iter_rows(named=True))
        + f" · {f.describe()} (the Overview's figure is its week's)"
    )
st.subheader("GPU-time waterfall by cluster")
fig = px.bar(
    by_cluster,
    x="share_of_capacity",
    y="cluster",
    color="leaf",
    orientation="h",
    category_orders={"leaf": list(WATERFALL_LEAVES)},
    color_discrete_map=_charts.LEAF_COLORS,
    hover_data=["gpu_h"],
    labels={"share_of_capacity": "share of capacity", "leaf": "waterfall leaf"},
)
fig.update_xaxes(tickformat=".0%")
_charts.legend_below(fig)
_charts.chart(
    fig,
    by_cluster,
    key="waterfall_by_cluster",
    definition=(
        "Each cluster's capacity split into the METRICS.md leaves (first rule wins; sums to "
        "100 %). The waterfall is per cluster and hour: it has no team or GPU-type dimension."
    ),
)

# --- idle allocations ------------------------------------------------------------------------
st.subheader("Top idle allocations")
top_n = st.number_input(
    "Allocations shown", min_value=5, max_value=200, value=20, step=5, key="waste_idle_top"
)
idle = queries.top_idle_allocations(path, f, cfg.idle_activity, int(top_n))
if idle.height:
    _charts.table(
        idle,
        key="idle_allocations",
        sort_by="idle_gpu_h",
        caption=(
            f"allocated_idle per attempt: allocated GPU-time in 5-minute buckets whose mean DCGM "
            f"activity is < θ = {cfg.idle_activity:g}, for attempts not in a loss leaf (3–7)."
        ),
    )
else:
    st.info("No idle allocated time in this window (or no DCGM activity attributed to jobs).")
_charts.table(
    queries.idle_reconciliation(path, f, cfg.idle_activity),
    key="idle_reconciliation",
    caption=(
        "The waterfall's allocated_idle per cluster beside the sum over attempts above (all of "
        "them, not only those shown). Slurm samples carry the job id and reconcile exactly; "
        "Kubernetes samples are matched to attempts through their pod and Kueue Workload, so a "
        "gap there is time or pods the views cannot tie to one attempt the way the pipeline does."
    ),
)

# --- idle allocated time by team -------------------------------------------------------------
st.subheader("Allocated-idle GPU-hours by team")
by_team = queries.idle_by_team(path, f, cfg.idle_activity, queries.loss_caps(cfg))
if by_team.height:
    team_order = (
        by_team.group_by("team")
        .agg(pl.col("idle_gpu_h").sum())
        .sort(["idle_gpu_h", "team"], descending=[True, False])["team"]
        .to_list()
    )
    fig_idle = px.bar(
        by_team,
        x="team",
        y="idle_gpu_h",
        color="gpu_type",
        facet_col="cluster",
        category_orders={"team": team_order},
        hover_data=["attempts"],
        color_discrete_map=_charts.color_map("gpu_type", by_team["gpu_type"]),
        labels={"idle_gpu_h": "idle GPU-hours", "gpu_type": "GPU type"},
    )
    _charts.legend_below(fig_idle)
    _charts.chart(
        fig_idle,
        by_team,
        key="idle_by_team",
        definition=(
            f"allocated_idle (waterfall leaf 8) per cluster, team and GPU type, from gpu_activity: "
            f"observed allocated GPU-time in 5-minute buckets whose mean DCGM activity is "
            f"< θ = {cfg.idle_activity:g}, over each attempt's kept time: attempts in a loss "
            f"leaf (3–6) keep only what the configured loss policy does not lose ([waterfall] "
            f"in goodput.toml; whole_attempt: nothing), cancelled ones (7) nothing; a "
            f"cluster's teams sum to its allocated_idle leaf."
        ),
    )
else:
    st.info("No idle allocated time in this window (or no DCGM activity attributed to jobs).")

# --- failures by cause -----------------------------------------------------------------------
st.subheader("Failures by cause")
failures = queries.failures_daily(path, f)
if failures.height:
    fig_fail = px.bar(
        failures,
        x="day",
        y="gpu_h",
        color="leaf",
        facet_col="cluster",
        category_orders={"leaf": list(queries.FAILURE_LEAVES)},
        color_discrete_map=_charts.LEAF_COLORS,
        labels={"gpu_h": "GPU-hours", "day": "UTC day", "leaf": "waterfall leaf"},
    )
    _charts.legend_below(_charts.day_axis(_charts.mark_partial_days(fig_fail, as_of)))
    _charts.chart(
        fig_fail,
        failures,
        key="failures_daily",
        definition=(
            "failed_work_infra = attempts ending NODE_FAIL, BOOT_FAIL, or FAILED with an XID / "
            "health event on their nodes in the last 10 minutes; failed_work_user = other FAILED "
            "and OUT_OF_MEMORY."
        ),
    )

# --- lost work by team and GPU type ----------------------------------------------------------
st.subheader("Allocated time by end state, per team")
lost = queries.lost_work_by_team(path, f)
if lost.height:
    shown = lost.filter(~lost["end_state"].is_in(["completed", "running"]))
    fig_team = px.bar(
        shown,
        x="team",
        y="gpu_h",
        color="end_state",
        hover_data=["gpu_type", "attempts"],
        color_discrete_map=_charts.color_map("state"),
        labels={"gpu_h": "GPU-hours", "end_state": "end state"},
    )
    _charts.legend_below(fig_team)
    _charts.chart(
        fig_team,
        lost,
        key="lost_by_team",
        definition=(
            "GPUs × allocated time of attempts by end state (whole attempts, from jobs; the CSV "
            "has every state and GPU type). Not the waterfall: no XID split, no idle."
        ),
    )

# --- lemon nodes -----------------------------------------------------------------------------
st.subheader("Lemon nodes")
top_nodes = st.number_input(
    "Nodes per cluster", min_value=1, max_value=100, value=10, step=1, key="waste_lemon_top"
)
lemons = queries.lemon_nodes(path, f, int(top_nodes))
_charts.table(
    lemons,
    key="lemon_nodes",
    caption=(
        "Lemon score = (infra failures on the node + 1) ÷ (expected + 1); 1 ≈ an average node; "
        "rank 1 = worst (score, then XID events, then down time). Whole data window."
    ),
)
