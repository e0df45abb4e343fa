"""Topology: where gangs fit. A rack grid per hour (free healthy trays, largest placeable
segment, trays out), slots of s trays over time, stranded GPU-hours, large-job placement quality
by team, Kubernetes NVLink co-location, why large jobs waited, and the degraded racks
(METRICS.md "Domain capacity, stranded GPUs and large-job waits")."""

from __future__ import annotations

import math

import plotly.express as px
import plotly.graph_objects as go
import polars as pl
import streamlit as st

from dashboards import _charts, _filters, queries
from pipelines.config import load_config
from pipelines.report.formatting import DATETIME_FORMAT

st.title("Topology")

path = queries.serving_path()
f = _filters.render(path)
st.caption(f"{f.describe()} · states at the start of each hour, at each cluster's gang level")

hours = queries.topology_hours(path, f)
if not hours:
    st.warning(
        f"No topology capacity rows for this selection in {path}: a cluster needs a map "
        "(topology.conf, Node labels or inventory racks) and `goodput materialize`."
    )
    st.stop()

# --- rack grid -------------------------------------------------------------------------------
st.subheader("Rack grid")
hour = st.select_slider(
    "Hour (UTC)", options=hours, value=hours[-1], key="topology_hour",
    format_func=lambda h: h.strftime("%Y-%m-%d %H:%M"),
)  # fmt: skip
grid = queries.topology_rack_grid(path, f, hour)
if grid.height:
    per_row = 6
    tiles = grid.with_columns(
        (pl.int_range(pl.len()) // per_row).alias("_row"),
        (pl.int_range(pl.len()) % per_row).alias("_col"),
        pl.format(
            "{}<br>{}/{} free · seg {}<br>{} out",
            "domain", "free_nodes", "healthy_nodes",
            pl.col("largest_segment").cast(pl.String).fill_null("–"), "degraded_nodes",
        ).alias("_text"),
    )  # fmt: skip
    rows = math.ceil(grid.height / per_row)
    z = [[None] * per_row for _ in range(rows)]
    text = [[""] * per_row for _ in range(rows)]
    for r, c, free, t in tiles.select("_row", "_col", "free_nodes", "_text").iter_rows():
        z[r][c], text[r][c] = free, t
    fig = go.Figure(
        go.Heatmap(
            z=z, text=text, texttemplate="%{text}", colorscale="Greens", zmin=0,
            colorbar={"title": "free healthy trays"}, xgap=4, ygap=4, hoverinfo="text",
        )
    )  # fmt: skip
    fig.update_layout(
        height=140 * rows + 60, yaxis={"autorange": "reversed", "visible": False},
        xaxis={"visible": False},
    )  # fmt: skip
    _charts.chart(
        fig, grid, key="topology_grid",
        definition="One tile per domain: colour = whole free healthy trays at the hour's start; "
        "text = free/healthy trays, the largest configured segment that fits, trays down or "
        "drained.",
    )  # fmt: skip
shown = grid.select(
    pl.col("cluster"),
    pl.col("domain"),
    pl.col("nodes").alias("trays"),
    pl.col("healthy_nodes").alias("healthy"),
    pl.col("degraded_nodes").alias("out"),
    pl.col("allocated_nodes").alias("allocated"),
    pl.col("free_nodes").alias("free"),
    pl.col("free_gpus").alias("free GPUs"),
    pl.col("largest_segment").alias("largest segment"),
)
st.dataframe(shown, key="topology_grid_table", hide_index=True,
             height=_charts.table_height(shown.height))  # fmt: skip

# --- slots over time -------------------------------------------------------------------------
st.subheader("Slots of s trays over time")
slots = queries.topology_segment_slots(path, f)
if slots.height:
    fig = px.line(
        slots.with_columns(pl.col("segment_size").cast(pl.String).alias("s")),
        x="hour", y="free_slots", color="s", line_dash="cluster",
        labels={"free_slots": "free slots", "hour": "hour (UTC)", "s": "segment size (trays)"},
    )  # fmt: skip
    _charts.chart(
        _charts.legend_below(fig), slots, key="topology_slots",
        definition="Free slots = Σ over domains of floor(whole free trays ÷ s): gangs of s trays "
        "that could start now, each inside one domain.",
    )  # fmt: skip
    last = slots.filter(pl.col("hour") == pl.col("hour").max())
    eff = last.select(
        "cluster", pl.col("segment_size").alias("segment size"),
        pl.col("healthy_slots").alias("healthy slots"),
        pl.col("configured_slots").alias("configured slots"),
        pl.col("efficiency").alias("capacity efficiency"),
    )  # fmt: skip
    st.dataframe(eff, key="topology_efficiency_table", hide_index=True,
                 height=_charts.table_height(eff.height))  # fmt: skip
    st.caption(
        "At the window's last hour: segment-capacity efficiency = Σ floor(healthy trays ÷ s)·s ÷ "
        "Σ healthy trays; configured − healthy slots are what failed trays cost at that size."
    )

# --- stranded GPU-hours ----------------------------------------------------------------------
st.subheader("Stranded GPU-hours")
stranded = queries.topology_stranded_daily(path, f)
if stranded.height:
    cols = st.columns(3)
    idle_h = float(stranded.select((pl.col("idle_gpu_h") + pl.col("held_gpu_h")).sum()).item())
    strand_h = float(stranded["stranded_gpu_h"].sum())
    cols[0].metric("Stranded GPU-hours", f"{strand_h:,.0f}")
    cols[1].metric("Stranded ÷ idle", f"{strand_h / idle_h:.1%}" if idle_h else "n/a")
    cols[2].metric("Held for gangs (GPU-hours)", f"{stranded['held_for_gangs_gpu_h'].sum():,.0f}")
    long = stranded.select(
        "day",
        pl.col("idle_stranded_gpu_h").alias("idle: stranded"),
        (pl.col("idle_gpu_h") - pl.col("idle_stranded_gpu_h")).alias("idle: other"),
        pl.col("held_for_gangs_gpu_h").alias("held: for gangs"),
        (pl.col("held_gpu_h") - pl.col("held_for_gangs_gpu_h")).alias("held: other"),
    ).unpivot(index="day", variable_name="part", value_name="GPU-hours")
    fig = px.bar(long, x="day", y="GPU-hours", color="part")
    _charts.chart(
        _charts.legend_below(_charts.day_axis(fig)), stranded, key="topology_stranded",
        definition="The waterfall's idle and held leaves split: stranded = free GPUs not even the "
        "smallest pending job shape can use; held for gangs = held under multi-node demand.",
    )  # fmt: skip

# --- placement quality -----------------------------------------------------------------------
st.subheader("Gang placement by team")
placement = queries.topology_placement_by_team(path, f, load_config().large_job_gpus)
if placement.height:
    shown_p = placement.select(
        "team", "gangs", pl.col("gpu_h").alias("GPU-hours"),
        pl.col("optimal_share").alias("placed optimally (GPU-hour share)"),
        pl.col("mean_spread").alias("mean spread (domains)"),
        pl.col("large_gangs").alias("large gangs"),
        pl.col("large_optimal_share").alias("large: placed optimally"),
    )  # fmt: skip
    st.dataframe(shown_p, key="topology_placement_table", hide_index=True,
                 height=_charts.table_height(shown_p.height))  # fmt: skip
    st.caption(
        "Multi-node gangs started in the window; optimal = domains used ≤ the fewest possible "
        "(spread ≤ 0, `job_placement`)."
    )
else:
    st.info("No multi-node gangs in this selection.")

# --- NVLink co-location ----------------------------------------------------------------------
st.subheader("NVLink co-location (Kubernetes)")
nvlink = queries.topology_nvlink(path, f)
if nvlink.height:
    gangs, colocated = int(nvlink["gangs"].sum()), int(nvlink["colocated"].sum())
    multi, loose = int(nvlink["multi_node_gangs"].sum()), int(nvlink["unconstrained"].sum())
    n_cols = st.columns(3)
    n_cols[0].metric("Gangs that fit one clique", f"{gangs:,}")
    n_cols[1].metric("Ran inside one clique", f"{colocated / gangs:.1%}" if gangs else "n/a")
    n_cols[2].metric("Multi-node gangs with no topology constraint",
                     f"{loose:,} of {multi:,}")  # fmt: skip
    shown_n = nvlink.select(
        "cluster", "week", "gangs", "colocated",
        pl.col("colocation_share").alias("co-location share"),
        pl.col("multi_node_gangs").alias("multi-node gangs"),
        "unconstrained",
        pl.col("unconstrained_share").alias("unconstrained share"),
    )  # fmt: skip
    st.dataframe(shown_n, key="topology_nvlink_table", hide_index=True,
                 height=_charts.table_height(shown_n.height))  # fmt: skip
    st.caption(
        "Multi-node gangs (pods of one workload) started in the week whose size fits one NVLink "
        "clique (`nvidia.com/gpu.clique`); co-located = all their nodes in one clique "
        "(`nvlink_colocation_weekly`; no team filter). Unconstrained = multi-node gangs on clique "
        "nodes whose Kueue Workload named no topology level (no `podset-required-topology`, "
        "`podset-preferred-topology` or `podset-slice-required-topology`): nothing kept their "
        "pods in one NVLink domain. The list below names them, from the placements of the "
        "published recent detail (`[warehouse] serving_detail_days`)."
    )
    loose_gangs = queries.topology_nvlink_unconstrained(path, f)
    if loose_gangs.height:
        st.dataframe(loose_gangs, key="topology_nvlink_unconstrained_table", hide_index=True,
                     height=_charts.table_height(loose_gangs.height))  # fmt: skip
else:
    st.info("No gang on nodes labelled with an NVLink clique in this selection.")

# --- wait decomposition ----------------------------------------------------------------------
st.subheader("Why large jobs waited")
causes = queries.topology_wait_causes(path, f)
if causes.height:
    long = causes.select(
        "team",
        pl.col("quota_h").alias("fair-share / quota"),
        pl.col("priority_h").alias("priority"),
        pl.col("fragmentation_h").alias("fragmentation"),
        pl.col("other_h").alias("other"),
    ).unpivot(index="team", variable_name="cause", value_name="hours")
    fig = px.bar(long, x="team", y="hours", color="cause")
    _charts.chart(
        _charts.legend_below(fig), causes, key="topology_waits",
        definition="Large jobs eligible in the window: wait hours by the state at each hour's "
        "start (quota: the team held its entitlement; priority: too few free GPUs; "
        "fragmentation: enough GPUs, no placement in the topology; other: it would have fit).",
    )  # fmt: skip
    shown_c = causes.select(
        "team", "jobs", pl.col("fragmentation_h").alias("fragmentation h"),
        pl.col("blocked_idle_gpu_h").alias("idle GPU-hours while blocked"),
        pl.col("exact_jobs").alias("exact (polled reasons)"),
    )  # fmt: skip
    st.dataframe(shown_c, key="topology_waits_table", hide_index=True,
                 height=_charts.table_height(shown_c.height))  # fmt: skip
else:
    st.info("No large job waited in this selection.")

# --- degraded racks --------------------------------------------------------------------------
st.subheader("Degraded racks")
degraded = queries.topology_degraded(path, f)
if degraded.height:
    shown_d = degraded.select(
        "cluster", "domain", "trays",
        pl.col("hours_degraded").alias("hours degraded"),
        pl.col("max_trays_out").alias("most trays out"),
        pl.col("healthy_now").alias("healthy trays (last hour)"),
        pl.col("first_degraded").alias("first (UTC)"),
        pl.col("last_degraded").alias("last (UTC)"),
    )  # fmt: skip
    st.dataframe(
        shown_d, key="topology_degraded_table", hide_index=True,
        height=_charts.table_height(shown_d.height),
        column_config={
            "first (UTC)": st.column_config.DatetimeColumn(format=DATETIME_FORMAT),
            "last (UTC)": st.column_config.DatetimeColumn(format=DATETIME_FORMAT),
        },
    )  # fmt: skip
else:
    st.info("No rack had a tray down or drained in this selection.")
