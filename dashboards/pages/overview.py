"""Overview: the four answers (occupancy, waste, fairness, large-job time to start) with their
scope, window and counts, what changed and why, the top recommendations; then the waterfall,
trends, data quality and freshness.

The window is the latest complete ISO week while the date filter is at its default (METRICS.md
"Complete periods"); a picked window that the data do not cover whole is shown with a banner and
never compared with the period before.
"""

from __future__ import annotations

import datetime as dt

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import _charts, _filters, queries
from metrics.headlines import AVOIDABLE_LEAVES, MIN_KM_JOBS, overview_window
from metrics.schema import WATERFALL_LEAVES
from pipelines.config import load_config
from pipelines.freshness import stale_sources
from pipelines.report.narrative import Facts, contributions, most_owed, narrative

st.title("GPU fleet overview")

path = queries.serving_path()
cfg = load_config()
large = cfg.large_job_gpus
f = _filters.render(path)
head = queries.headline(path, f)
bounds = queries.filter_bounds(path)
if not head or head.get("capacity_gpu_h") is None or bounds is None:
    st.warning(f"No data yet in {path}: run `goodput materialize` (or `make run`).")
    st.stop()

# --- the window: latest complete week by default --------------------------------------------------
as_of, data_from = queries.period_bounds(path, f)
win = overview_window((f.start, f.end), bounds, as_of=as_of, data_from=data_from)
wf = queries.window_filters(f, win.start, win.end)
pf = queries.window_filters(f, win.previous_start, win.start)
last_day = win.end - dt.timedelta(days=1)
days = round(win.hours / 24)
window_text = period_text = f"{win.start:%Y-%m-%d} – {last_day:%Y-%m-%d} UTC"
if win.latest_complete_week:
    iso = win.start.isocalendar()
    period_text = f"week {iso.year}-W{iso.week:02d}"
    window_text += f" ({period_text})"
previous_text = f"the previous {days} day{'s' if days != 1 else ''}"
if not win.complete:
    window_text += f", partial: {win.covered_h:,.1f} of {win.hours:g} h"
    if f.start is None and f.end is None:
        st.warning(
            "No complete week in the data yet: the answers cover every day with data, a partial "
            f"window ({win.covered_h:,.1f} of {win.hours:g} hours covered), not compared with "
            "the period before."
        )
    else:
        st.warning(
            f"The picked window is partial: the data cover {win.covered_h:,.1f} of its "
            f"{win.hours:g} hours; nothing is compared with the period before."
        )
scope_text = f"cluster: {f.cluster or 'all'} · team: {f.team or 'all'}"
st.caption(
    f"Window {window_text}"
    + (" — the latest complete week, the default; pick dates for another." if
       win.latest_complete_week else "")
    + f" · data as of {as_of:%Y-%m-%d %H:%M} UTC · {scope_text}"
    if as_of else f"Window {window_text} · {scope_text}"
)  # fmt: skip

# --- scopes --------------------------------------------------------------------------------------
occ_now, occ_before = queries.overview_occupancy(path, wf), queries.overview_occupancy(path, pf)
n_clusters = occ_now.height
cap_scope = f"cluster {f.cluster}" if f.cluster else "fleet"
cap_label = cap_scope + (" (capacity has no team: the team filter does not apply)" if f.team
                         else "")  # fmt: skip
team_scope = f"team {f.team}" if f.team else cap_scope


def _sum(df: pl.DataFrame, col: str) -> float:
    return float(df[col].sum()) if df.height else 0.0


def _why_not(before_has_data: bool) -> str:
    if not win.complete:
        return "no change shown: the window is partial"
    if not win.previous_complete:
        return f"no change shown: the data do not cover {previous_text} whole"
    return "" if before_has_data else f"no change shown: no data in {previous_text}"


def _pct(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.1%}"


def _h(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds / 3600:.1f} h"


c1, c2, c3, c4 = st.columns(4)

# Occupancy: allocated ÷ available, capacity-based (fleet or cluster).
alloc, avail = _sum(occ_now, "allocated_gpu_h"), _sum(occ_now, "available_gpu_h")
alloc0, avail0 = _sum(occ_before, "allocated_gpu_h"), _sum(occ_before, "available_gpu_h")
occ = alloc / avail if avail > 0 else None
occ0 = alloc0 / avail0 if avail0 > 0 else None
d_occ = occ - occ0 if occ is not None and occ0 is not None and win.comparable else None
with c1:
    st.metric(
        "Occupancy",
        f"{occ:.1%}" if occ is not None else "n/a",
        delta=f"{d_occ * 100:+.1f} pp" if d_occ is not None else None,
        help="Allocated GPU-seconds ÷ (capacity − down − planned down), METRICS.md.",
    )
    st.caption(
        f"**{cap_label}** · {alloc:,.0f} of {avail:,.0f} available GPU-h allocated · "
        f"{window_text} · {n_clusters} cluster{'s' if n_clusters != 1 else ''}"
        + (f" · vs {previous_text}" if d_occ is not None else f" · {_why_not(occ0 is not None)}")
    )

# Waste: the avoidable leaves of the waterfall, GPU-hours and share of capacity.
wf_now, wf_before = queries.waterfall_totals(path, wf), queries.waterfall_totals(path, pf)
capacity, capacity0 = _sum(wf_now, "gpu_h"), _sum(wf_before, "gpu_h")
avoid = wf_now.filter(pl.col("leaf").is_in(AVOIDABLE_LEAVES)) if wf_now.height else wf_now
avoid0 = wf_before.filter(pl.col("leaf").is_in(AVOIDABLE_LEAVES)) if wf_before.height else wf_before
waste, waste0 = _sum(avoid, "gpu_h"), _sum(avoid0, "gpu_h")
share = waste / capacity if capacity > 0 else None
share0 = waste0 / capacity0 if capacity0 > 0 else None
d_waste = share - share0 if share is not None and share0 is not None and win.comparable else None
top_leaves = avoid.sort("gpu_h", descending=True).head(2) if avoid.height else avoid
with c2:
    st.metric(
        "Avoidable waste",
        f"{waste:,.0f} GPU-h" if share is not None else "n/a",
        delta=f"{d_waste * 100:+.1f} pp of capacity" if d_waste is not None else None,
        delta_color="inverse",
        help="Lost work (failed, preempted, timed out), allocated-idle and held GPU-hours "
        "(waterfall leaves 3–6, 8, 10; METRICS.md).",
    )
    st.caption(
        f"**{cap_label}** · {share:.1%} of capacity · largest: "
        + ", ".join(f"{r['leaf']} {r['gpu_h']:,.0f} h" for r in top_leaves.iter_rows(named=True))
        + f" · {window_text} · {n_clusters} cluster{'s' if n_clusters != 1 else ''}"
        + (f" · vs {previous_text}" if d_waste is not None
           else f" · {_why_not(share0 is not None)}")
        if share is not None else f"**{cap_label}** · no waterfall rows in {window_text}"
    )  # fmt: skip

# Fairness: Jain's index of the latest complete week (across teams: fleet or cluster scope).
fair = queries.fairness_answer(path, wf)
owed = most_owed(fair["team_rows"]) if fair else None
with c3:
    if fair is None:
        st.metric("Fairness (Jain's index)", "n/a")
        st.caption(f"**{cap_scope}** · no fairness week in {window_text}")
    else:
        week_text = f"week of {fair['week']:%Y-%m-%d}" + (
            "" if fair["complete"] else f", partial: {fair['covered_h']:,.1f} of 168 h"
        )
        d_jain = (
            fair["jain_index"] - fair["jain_before"]
            if fair["jain_index"] is not None and fair["jain_before"] is not None
            else None
        )
        st.metric(
            "Fairness (Jain's index)",
            f"{fair['jain_index']:.2f}" if fair["jain_index"] is not None else "n/a",
            delta=f"{d_jain:+.2f}" if d_jain is not None else None,
            help="Jain's index over the teams' entitlement ratios (received ÷ fair GPU-time), "
            "1 = every team that asked got its fair share; unmet entitlement = the share of "
            "fair GPU-time not received (METRICS.md).",
        )
        team_line = ""
        if f.team:
            mine = [t for t in fair["team_rows"] if t["team"] == f.team]
            team_line = (
                f" · **team {f.team}**: received "
                + (f"{mine[0]['entitlement_ratio']:.2f}" if mine and mine[0]["entitlement_ratio"]
                   is not None else "n/a")
                + " of its fair share, owed "
                + (f"{mine[0]['fair_share_debt_gpu_h']:,.0f} GPU-h" if mine else "n/a")
            )  # fmt: skip
        st.caption(
            f"**{cap_scope}** (across teams) · {week_text} · {fair['teams']} teams · unmet "
            f"entitlement {_pct(fair['unmet_entitlement'])} · most owed: "
            + (f"team {owed.team}, {owed.debt_gpu_h:,.0f} GPU-h" if owed else "none")
            + team_line
            + (" · vs the week before" if d_jain is not None
               else " · no change shown: this week and the one before are not both complete")
        )  # fmt: skip

# Large-job time to start: Kaplan–Meier p90 with its CI, the counts, a minimum n.
km = queries.large_wait_summary(path, wf, large)
km0 = queries.large_wait_summary(path, pf, large)
km_label = f"Large-job time to start (≥ {large:g} GPUs)"
with c4:
    d_p90 = (
        km.p90_s - km0.p90_s
        if win.comparable
        and km.enough
        and km0.enough
        and km.p90_s is not None
        and km0.p90_s is not None
        else None
    )
    value = (
        f"p90 {_h(km.p90_s)}" if km.enough and km.p90_s is not None
        else "p90 not reached" if km.enough else f"too few jobs (n < {MIN_KM_JOBS})"
    )  # fmt: skip
    st.metric(
        km_label,
        value,
        delta=f"{d_p90 / 3600:+.1f} h" if d_p90 is not None else None,
        delta_color="inverse",
        help="Kaplan–Meier percentiles of start − eligible, still-pending and cancelled waits "
        f"censored; shown from {MIN_KM_JOBS} jobs, 95 % CI by Greenwood (METRICS.md).",
    )
    counts = f"n = {km.jobs} jobs, {km.censored} censored"
    if km.enough:
        detail = (
            f" · p50 {_h(km.p50_s)} (95 % CI {_h(km.p50_ci_s[0])} – {_h(km.p50_ci_s[1])}), "
            f"p90 95 % CI {_h(km.p90_ci_s[0])} – {_h(km.p90_ci_s[1])}"
            + (f" ({km.p90_reason})" if km.p90_reason else "")
        )
    else:
        detail = f" · percentiles shown from n = {MIN_KM_JOBS}"
    why = (
        f" · vs {previous_text} (n = {km0.jobs})" if d_p90 is not None
        else f" · no change shown: n < {MIN_KM_JOBS}" if not km.enough
        else f" · {_why_not(True)}" if not win.comparable
        else f" · no change shown: {previous_text} have n = {km0.jobs} jobs"
    )  # fmt: skip
    st.caption(f"**{team_scope}** · eligible in {window_text} · {counts}{detail}{why}")

# --- what changed and why -----------------------------------------------------------------------
st.subheader("What changed")
teams_now = queries.overview_team_allocated(path, wf)
teams_before = queries.overview_team_allocated(path, pf)
drivers = []
if d_occ is not None and avail > 0 and avail0 > 0:
    drivers += contributions(teams_now, teams_before, key="team", part="allocated_gpu_h",
                             whole_now=avail, whole_before=avail0)  # fmt: skip
    drivers += contributions(occ_now, occ_before, key="cluster", part="allocated_gpu_h",
                             whole_now=avail, whole_before=avail0)  # fmt: skip
waste_drivers = (
    contributions(avoid, avoid0, key="leaf", part="gpu_h", whole_now=capacity,
                  whole_before=capacity0)
    if d_waste is not None else []
)  # fmt: skip
recs, recs_scope, recs_total = queries.top_recommendations(path, wf)
biggest = avoid.sort("gpu_h", descending=True).row(0, named=True) if avoid.height else None
facts = Facts(
    period=period_text,
    unit="week" if win.latest_complete_week else "window",
    previous=previous_text,
    scope=f"cluster {f.cluster}'s" if f.cluster else "the fleet's",
    complete=win.complete,
    covered_h=win.covered_h,
    period_h=win.hours,
    as_of=f"{as_of:%Y-%m-%d %H:%M} UTC" if as_of else None,
    occupancy=occ,
    allocated_gpu_h=alloc,
    available_gpu_h=avail,
    occupancy_delta=d_occ,
    occupancy_drivers=drivers,
    waste_gpu_h=waste if share is not None else None,
    waste_share=share,
    waste_delta=d_waste,
    waste_leaf=biggest["leaf"] if biggest else None,
    waste_leaf_gpu_h=biggest["gpu_h"] if biggest else None,
    waste_drivers=waste_drivers,
    large_job_gpus=large,
    wait_scope=f" of team {f.team}" if f.team else "",
    large_spells=km.jobs,
    large_p90_s=km.p90_s if km.enough else None,
    large_p90_reason=km.p90_reason if km.enough else f"too few jobs (n = {km.jobs} < "
    f"{MIN_KM_JOBS})",
    jain_index=fair["jain_index"] if fair else None,
    unmet_entitlement=fair["unmet_entitlement"] if fair else None,
    most_owed=owed,
    recommendations_total=recs_total,
    top_recommendation=recs["change_text"][0] if recs.height else None,
)  # fmt: skip
for sentence in narrative(facts):
    st.markdown(f"- {sentence}")
if recs.height:
    st.markdown(f"**Top recommendations** ({recs_scope}):")
    for i, r in enumerate(recs.iter_rows(named=True), start=1):
        st.markdown(f"{i}. **{r['severity']}** · `{r['rule']}` · {r['scope']}: {r['change_text']}")
    st.caption("All recommendations, their evidence and patches: the Recommendations page.")
else:
    st.caption("No recommendations in this scope.")

# --- Slurm on Kubernetes: each GPU-second once ------------------------------------------------
sok = queries.slurm_on_k8s_rate(path, wf)
if sok.height:
    st.subheader("Slurm on Kubernetes: counted once")
    for r in sok.iter_rows(named=True):
        rate = r["double_count_rate"]
        st.metric(
            f"{r['cluster']} on {r['k8s_cluster']}: double-count rate",
            "n/a" if rate is None else f"{rate:.0%}",
            help="(naive − reconciled) ÷ reconciled GPU-hours over the window (METRICS.md "
            '"Slurm on Kubernetes").',
        )
        st.caption(
            f"Naive {r['naive_gpu_h']:,.0f} GPU-h (Slurm jobs + every pod) vs reconciled "
            f"{r['reconciled_gpu_h']:,.0f} GPU-h · lent to Slurm {r['lent_gpu_h']:,.0f} GPU-h, "
            f"of which slurmd-held idle while pods pended {r['slurmd_held_idle_gpu_h']:,.0f} GPU-h."
        )
    st.caption(
        "Why these numbers differ from a Slurm-only or Kubernetes-only tool: slurmd runs in pods "
        "that hold GPUs, so each GPU-second appears once as the pod's and once as the Slurm "
        "job's; here it is counted once, under the layer that used it."
    )

# --- the GPU-time waterfall --------------------------------------------------------------------
st.subheader("Where the GPU-hours went")
daily = queries.waterfall_daily(path, wf)
if daily.height:
    fig = px.bar(
        daily,
        x="day",
        y="gpu_h",
        color="leaf",
        category_orders={"leaf": list(WATERFALL_LEAVES)},
        color_discrete_map=_charts.LEAF_COLORS,
        labels={"gpu_h": "GPU-hours", "day": "UTC day", "leaf": "waterfall leaf"},
        hover_data=["cluster"],
    )
    _charts.legend_below(_charts.day_axis(_charts.mark_partial_days(fig, as_of)))
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
        wf_now,
        key="waterfall_totals",
        caption="Leaf totals over the window, GPU-hours and share of capacity (all clusters).",
    )
else:
    st.info("No waterfall rows in this window.")

# --- trends ----------------------------------------------------------------------------------
st.subheader("Occupancy and goodput")
trends = queries.trends_daily(path, wf)
if trends.height:
    long = trends.unpivot(
        index=["cluster", "day"],
        on=["occupancy", "goodput_ratio"],
        variable_name="metric",
        value_name="ratio",
    )
    fig2 = px.line(
        long, x="day", y="ratio", color="cluster", line_dash="metric", markers=True,
        color_discrete_map=_charts.color_map("cluster", long["cluster"]),
        labels={"ratio": "share", "day": "UTC day"},
    )  # fmt: skip
    fig2.update_yaxes(tickformat=".0%", rangemode="tozero")
    _charts.legend_below(_charts.day_axis(_charts.mark_partial_days(fig2, as_of)))
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
checks = queries.data_quality_checks(path, wf)
clean, total = queries.data_quality_score(checks)
if total:
    st.progress(clean / total, text=f"Data-quality score: {clean} of {total} checks clean")
    st.caption(
        "Score = share of (cluster × check) pairs with no finding in the window; checks: GPUs "
        "not tracked, DST repairs, rejected rows, capacity from observed nodes, GPU-hours no "
        "team counts, registry pools that match no cluster (data_quality)."
    )
findings = queries.data_quality_findings(path, wf)
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
    _charts.table(
        fresh.select(
            "source", "cluster", "stale", "newest_data_at", "data_age_h", "last_loaded_at",
            "load_age_h", "limit_h", "files", "rows_loaded", "rows_rejected",
        ).sort("stale", "source", "cluster", descending=[True, False, False]),
        key="freshness",
        csv=False,
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
    _charts.table(rej, key="rejected", csv=False)
else:
    st.caption("No rejected input rows.")
