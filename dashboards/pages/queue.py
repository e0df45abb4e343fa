"""Queue now: the Slurm jobs and Kueue workloads pending at each cluster's data cut-off, with
their size, team, wait so far, the reason where the data give one and, for Slurm jobs, the
scheduler model's estimated start (replayed forward from the cut-off)."""

from __future__ import annotations

import datetime as dt

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import _charts, _filters, queries
from pipelines.report.formatting import DATETIME_FORMAT, fmt_hours

st.title("Queue now")

path = queries.serving_path()
f = _filters.render(path)
st.caption(
    f"cluster: {f.cluster or 'all'} · team: {f.team or 'all'} · the date filter does not apply: "
    "this is the queue at each cluster's data cut-off."
)
if queries.filter_bounds(path) is None:
    st.warning(f"No data yet in {path}: run `goodput materialize` (or `make run`).")
    st.stop()

pending = queries.queue_pending(path, f)
cols = st.columns(3)
cols[0].metric("Pending", f"{pending.height:,}", help="Slurm jobs and Kueue workloads")
cols[1].metric("GPUs requested", f"{pending['gpus'].sum():,.0f}" if pending.height else "0")
waits = pending["wait_s"].drop_nulls().to_list() if pending.height else []
cols[2].metric("Longest wait so far", fmt_hours(max(waits)) if waits else "n/a")
cuts = (
    pending.group_by("cluster").agg(pl.col("as_of").max()).drop_nulls().sort("cluster")
    if pending.height
    else pl.DataFrame()
)
if cuts.height:
    st.caption(
        "Data cut-off (each cluster's queue is as of its own): "
        + ", ".join(f"{c} {t:%Y-%m-%d %H:%M} UTC" for c, t in cuts.iter_rows())
        + "."
    )

if pending.height == 0:
    st.info("Nothing pending at the data cut-off (for these filters).")
    st.stop()

estimates = queries.queue_estimates(path, f)
horizon_d = queries.QUEUE_HORIZON_S / 86400


def _estimate(row: dict[str, object]) -> str:
    """The estimated-start cell: a UTC time and how long after the cut-off, or why none."""
    if row["source"] != "slurm":
        return "n/a (Kueue admission is not modelled)"
    if not row["modelled"]:
        return "n/a (no nodes, GPUs or eligible time to model)"
    start, cut = row["estimated_start"], row["as_of"]
    if not isinstance(start, dt.datetime) or not isinstance(cut, dt.datetime):
        return f"not within {horizon_d:g} days of the cut-off"
    return f"{start:%Y-%m-%d %H:%M} UTC (in {fmt_hours((start - cut).total_seconds())})"


pending = pending.join(
    estimates, on=["cluster", "job_id"], how="left", maintain_order="left"
).with_columns(
    pl.struct("source", "modelled", "estimated_start", "as_of")
    .map_elements(_estimate, return_dtype=pl.String())
    .alias("estimate_text")
)
shown = pending.select(
    pl.col("cluster"),
    pl.col("job_id").alias("job"),
    pl.col("user_name").alias("user"),
    pl.col("team"),
    pl.col("gpus").alias("GPUs"),
    pl.col("wait_s").map_elements(fmt_hours, return_dtype=pl.String()).alias("waiting"),
    pl.col("reason").fill_null("n/a").alias("reason"),
    pl.col("reason_detail").alias("latest pending message"),
    pl.col("estimate_text").alias("estimated start"),
    pl.col("eligible_at").alias("eligible (UTC)"),
    pl.col("submit_at").alias("submitted (UTC)"),
    pl.col("partition").alias("partition / ClusterQueue"),
    pl.col("queue").alias("QOS / LocalQueue"),
    pl.col("source").alias("scheduler"),
)
st.subheader("Pending now")
st.dataframe(
    shown,
    key="queue_pending_table",
    hide_index=True,
    height=_charts.table_height(shown.height),
    column_config={
        "GPUs": st.column_config.NumberColumn(format="%g"),
        "eligible (UTC)": st.column_config.DatetimeColumn(format=DATETIME_FORMAT),
        "submitted (UTC)": st.column_config.DatetimeColumn(format=DATETIME_FORMAT),
    },
)
st.caption(
    "Slurm: jobs never started and still PENDING in the latest sacct export; reason = sacct's "
    "Reason as exported (n/a when the export has none). Kubernetes: Kueue Workloads still "
    "PENDING; reason = their most frequent pending reason (kueue: quota, kube-scheduler: "
    "placement) with the latest event message. Waiting = data cut-off − eligible time (Slurm "
    "Eligible; Kueue: when the Workload could first be admitted), longest first."
)
st.caption(
    "Estimated start (Slurm): the scheduler model (metrics/scheduler_model.py: priority by QOS, "
    "then eligible time; EASY backfill with Slurm's default settings) replayed from the cut-off: "
    "the allocations running then hold their GPUs for what is left of their time limits, and "
    "every pending job of the cluster runs its whole time limit, as `squeue --start` assumes; "
    f"{horizon_d:g} days ahead. An estimate, not Slurm's: it does not know reservations, "
    "dependencies, multifactor priorities or jobs submitted after the cut-off, and places jobs "
    "by best fit (docs/scheduler-model.md). Kueue workloads: not modelled."
)
_charts.download(shown, key="queue_pending_table")

by_team = (
    pending.group_by("cluster", "team")
    .agg(pl.col("gpus").sum().alias("gpus"), pl.len().alias("jobs"))
    .sort(["gpus", "cluster", "team"], descending=[True, False, False])
)
fig = px.bar(
    by_team, x="team", y="gpus", color="cluster", hover_data=["jobs"],
    labels={"gpus": "GPUs requested", "jobs": "pending"},
    color_discrete_map=_charts.color_map("cluster", by_team["cluster"]),
)  # fmt: skip
_charts.legend_below(fig)
_charts.chart(
    fig,
    by_team,
    key="queue_by_team",
    definition="GPUs requested by the jobs and workloads pending at the cut-off, per team.",
)
