"""Fairness: entitlement vs received vs fair allocation per team, Jain's index, fair-share debt."""

from __future__ import annotations

import datetime as dt

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import _charts, _filters, queries
from metrics.periods import mark_complete
from pipelines.report.narrative import most_owed

st.title("Fairness")

path = queries.serving_path()
f = _filters.render(path)
scope = f"cluster {f.cluster}" if f.cluster else "the fleet (every cluster's pool)"
st.caption(f"{f.describe()} · weekly windows (Monday 00:00 UTC) over {scope}")

teams = queries.fairness_teams(path, f)
if teams.height == 0:
    st.warning(
        f"No fairness rows for this selection in {path}: run `goodput materialize` "
        "(or widen the filters)."
    )
    st.stop()

# Complete weeks first: the default is the latest week the data cover whole (metrics.periods);
# a partial week is offered, marked, and shown only when picked.
as_of, data_from = queries.period_bounds(path, f)
weeks_df = mark_complete(
    pl.DataFrame({"week": sorted(set(teams["week"]))}), as_of=as_of, data_from=data_from
).sort(["complete", "week"], descending=True)
covered = {r["week"]: (r["complete"], r["covered_h"]) for r in weeks_df.iter_rows(named=True)}


def _week_label(w: dt.datetime) -> str:
    whole, hours = covered[w]
    return f"{w:%Y-%m-%d}" if whole else f"{w:%Y-%m-%d} (partial: {hours:,.1f} of 168 h)"


week = st.selectbox(
    "Week", weeks_df["week"].to_list(), format_func=_week_label, key="fairness_week"
)
week_whole, week_hours = covered[week]
if not week_whole:
    st.warning(
        f"The week of {week:%Y-%m-%d} is partial: the data cover {week_hours:,.1f} of its "
        f"168 hours (data cut-off {as_of:%Y-%m-%d %H:%M} UTC). Its shares and index describe "
        "only those hours and are not comparable with whole weeks."
        if as_of
        else f"The week of {week:%Y-%m-%d} is partial."
    )
in_week = teams.filter(teams["week"] == week)
summary = queries.fairness_summary(path, f)

# --- the week's answer in numbers: the Overview's Fairness tile, for the picked week ----------
picked = summary.filter(pl.col("week") == week)
owed = most_owed(in_week.to_dicts())
c1, c2, c3 = st.columns(3)
jain = picked["jain_index"][0] if picked.height else None
unmet = picked["unmet_entitlement"][0] if picked.height else None
c1.metric(
    "Jain's index",
    f"{jain:.2f}" if jain is not None else "n/a",
    help="Jain's index over the teams' entitlement ratios (received ÷ fair GPU-time), 1 = every "
    "team that asked got its fair share (METRICS.md).",
)
c2.metric(
    "Unmet entitlement",
    f"{unmet:.1%}" if unmet is not None else "n/a",
    help="The share of the fair GPU-time the teams did not receive: Σ max(0, F − U) ÷ Σ F.",
)
c3.metric(
    "Most owed",
    f"{owed.team}: {owed.debt_gpu_h:,.0f} GPU-h" if owed else "none",
    help="The team with the largest fair-share debt F_t − U_t (GPU-hours it was owed).",
)
st.caption(
    f"**{'cluster ' + f.cluster if f.cluster else 'fleet'}** (across teams) · week of "
    f"{week:%Y-%m-%d}"
    + ("" if week_whole else f", partial: {week_hours:,.1f} of 168 h")
    + (f" · {picked['teams'][0]} teams with demand" if picked.height else "")
    + (
        f" · {owed.team} received {owed.entitlement_ratio:.2f} of its fair share"
        if owed and owed.entitlement_ratio is not None
        else ""
    )
)

# --- entitlement vs received vs fair ---------------------------------------------------------
st.subheader("Entitlement, received and fair allocation per team")
shares = in_week.unpivot(
    index=["team"],
    on=["entitlement_share", "received_share", "fair_share"],
    variable_name="measure",
    value_name="share",
)
fig = px.bar(
    shares.with_columns(pl.col("measure").str.strip_suffix("_share")),
    x="team",
    y="share",
    color="measure",
    barmode="group",
    color_discrete_map={
        m.removesuffix("_share"): c for m, c in _charts.color_map("series").items()
    },
    category_orders={"measure": ["entitlement", "received", "fair"]},
)
fig.update_yaxes(tickformat=".0%", rangemode="tozero")
_charts.legend_below(fig)
_charts.chart(
    fig,
    in_week,
    key="fairness_shares",
    definition=(
        "Entitlement = the team's registry share s_t; received = U_t ÷ Σ U (allocated GPU-time); "
        "fair = F_t ÷ Σ F, F water-filled per hour and pool by s_t capped at demand."
    ),
)

# --- Jain's index over time -------------------------------------------------------------------
st.subheader("Fairness index over time")
if summary.height:
    summary = mark_complete(summary, as_of=as_of, data_from=data_from)
    partial = summary.filter(~pl.col("complete"))
    summary = summary.filter(pl.col("complete")).drop("complete", "covered_h")
    if partial.height:
        st.caption(
            "Partial weeks left out of the trend (not comparable with whole weeks): "
            + ", ".join(f"{w:%Y-%m-%d}" for w in partial["week"])
            + "."
        )
if summary.height:
    long = summary.rename(
        {"jain_index": "Jain's index", "unmet_entitlement": "unmet entitlement (share)"}
    ).unpivot(
        index=["week"],
        on=["Jain's index", "unmet entitlement (share)"],
        variable_name="measure",
        value_name="value",
    )
    series = _charts.color_map("series")
    fig2 = px.line(
        long, x="week", y="value", color="measure", markers=True,
        color_discrete_map={"Jain's index": series["jain_index"],
                            "unmet entitlement (share)": series["unmet_entitlement"]},
        labels={"week": "week of", "value": "index / share (0–1)"},
    )  # fmt: skip
    fig2.update_yaxes(rangemode="tozero")
    _charts.legend_below(_charts.week_axis(fig2))
    _charts.chart(
        fig2,
        summary,
        key="fairness_index",
        definition=(
            "Jain's index = (Σe)² ÷ (n·Σe²) over the entitlement ratios e_t = U_t ÷ F_t of teams "
            "with demand (1 = all equal); unmet entitlement = Σ max(0, F − U) ÷ Σ F. "
            "Fleet- or cluster-wide: the team filter does not apply."
        ),
    )

# --- fair-share debt -------------------------------------------------------------------------
st.subheader("Fair-share debt")
debt = in_week.sort("fair_share_debt_gpu_h", descending=True)
fig3 = px.bar(
    debt,
    x="team",
    y="fair_share_debt_gpu_h",
    color="team",
    color_discrete_map=_charts.color_map(
        "team", debt["team"], universe=queries.filter_values(path, "team")
    ),
    hover_data=["fair_gpu_h", "used_gpu_h", "demand_gpu_h", "entitlement_ratio"],
    labels={"fair_share_debt_gpu_h": "debt (GPU-hours)"},
)
fig3.update_layout(showlegend=False)
_charts.chart(
    fig3,
    debt,
    key="fairness_debt",
    definition="Fair-share debt = F_t − U_t in GPU-hours (positive: the team is owed).",
)
_charts.table(teams, key="fairness_teams", caption="Every week in the window, per team.")

# --- the schedulers' own view and registry drift ---------------------------------------------
st.subheader("Registry drift: what the schedulers are configured with")
drift = queries.registry_drift(path, f)
if drift.height == 0:
    st.info(
        "No sshare or Kueue ClusterQueue snapshot loaded: nothing to compare the registry with."
    )
else:
    drifted = drift.filter(drift["drifted"])
    st.caption(
        f"{drifted.height} of {drift.height} rows drift beyond the tolerance "
        f"({float(drift['tolerance'][0]):.0%} relative)."
    )
    _charts.table(
        drift,
        key="registry_drift",
        caption=(
            "configured_share: Slurm RawShares ÷ Σ over the registry's accounts in the cluster, or "
            "Kueue nominal GPUs ÷ the cohort's; registry_share: the registry share normalised the "
            "same way; drift = configured − registry (share fractions); relative = drift ÷ "
            "registry share."
        ),
    )
st.subheader("The schedulers' own view")
sched = queries.scheduler_fairshare(path, f)
if sched.height:
    _charts.table(
        sched,
        key="scheduler_fairshare",
        caption=(
            "Slurm: the latest `sshare` per account (RawShares, NormShares, EffectvUsage, LevelFS, "
            "FairShare; usage is billing-weighted, not GPU-seconds). Kueue: nominal, used and "
            "borrowed GPUs per ClusterQueue."
        ),
    )
