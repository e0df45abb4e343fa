"""Recommendations: scheduler-tuning suggestions, their evidence and patches, the patch files."""

from __future__ import annotations

import json
from typing import Any

import plotly.express as px
import polars as pl
import streamlit as st
from plotly.subplots import make_subplots

from dashboards import _charts, queries
from pipelines.config import load_config
from pipelines.recommendations import OUTPUT_FILES

#: Code-block language per patch kind.
_LANGUAGE = {"sacctmgr": "bash", "scontrol": "bash", "kubernetes-merge-patch": "yaml"}
_COLUMNS = (
    "severity", "rule", "cluster", "scope", "change_text", "expected_gain_gpu_h_per_week",
    "confidence",
)  # fmt: skip

#: Evidence numbers compared in a bar chart, per rule without a time-series query (label, key).
_EVIDENCE_BARS: dict[str, tuple[tuple[str, str], ...]] = {
    "reservation_idle": (("reserved GPU-h", "reserved_gpu_h"), ("used GPU-h", "used_gpu_h")),
    "registry_drift_slurm": (
        ("registry share", "registry_normalised_share"),
        ("scheduler share", "scheduler_normalised_share"),
    ),
    "registry_drift_kueue": (
        ("nominalQuota GPUs", "nominal_gpus"),
        ("from the registry", "expected_nominal_gpus"),
    ),
    "kueue_borrowing": (
        ("nominalQuota GPUs", "nominal_gpus"),
        ("p90 wanted above quota", "p90_wanted_above_quota_gpus"),
    ),
}
_BAR_DEFINITIONS: dict[str, str] = {
    "reservation_idle": "GPU-hours the reservation held in the window (its nodes' GPUs × its "
    "occurrences) against GPU-hours its jobs used on them; the gap is the reservation's idle time.",
    "registry_drift_slurm": "The team's share of the allocation registry against its share in "
    "Slurm (sshare NormShares among the registry's accounts).",
    "registry_drift_kueue": "The ClusterQueue's GPU nominalQuota against the quota the registry's "
    "shares give it within its cohort.",
    "kueue_borrowing": "The ClusterQueue's GPU nominalQuota against the p90 of the GPUs its "
    "pending Workloads wanted beyond it while lenders had quota unused.",
}


def _numbers(ev: dict[str, Any], rule: str) -> pl.DataFrame:
    """``quantity, value``: the rule's compared evidence numbers (all numeric ones if unknown)."""
    pairs = _EVIDENCE_BARS.get(rule) or tuple(
        (k, k) for k, v in ev.items() if isinstance(v, int | float) and not isinstance(v, bool)
    )
    rows = [(label, float(ev[k])) for label, k in pairs if isinstance(ev.get(k), int | float)]
    return pl.DataFrame(rows, schema={"quantity": pl.String, "value": pl.Float64}, orient="row")


def _evidence_chart(rec: dict[str, Any], ev: dict[str, Any]) -> None:
    """The recommendation's evidence chart, its definition and CSV (or a note when no data)."""
    rule, scope, key = rec["rule"], rec["scope"], f"rec_{rec['id']}"
    title = f"{rule} · {scope}"
    data = queries.recommendation_evidence(
        path, rule, scope, rec["window_start"], rec["window_end"],
        float(ev.get("large_gpus") or 64),
    )  # fmt: skip
    if data.height and rule == "idle_allocations":
        long = data.unpivot(index="day", variable_name="series", value_name="gpu_h")
        fig = px.bar(long, x="day", y="gpu_h", color="series", barmode="group", title=title,
                     color_discrete_map=_charts.color_map("series"))  # fmt: skip
        _charts.legend_below(_charts.day_axis(fig))
        definition = (
            "Per UTC day: the team's GPU-hours allocated and seen by DCGM (5-minute buckets) "
            "and its active GPU-hours (Σ DCGM_FI_PROF_GR_ENGINE_ACTIVE × time); the gap is "
            "idle allocated time."
        )
    elif data.height and rule == "time_limits":
        fig = px.bar(data, x="run_to_limit", y="attempts", title=title)
        definition = (
            "Completed GPU attempts per 0.05-wide bin of elapsed ÷ time limit; a pile near 0 "
            "means limits far above run times, which keeps backfill from using the gaps."
        )
    elif data.height and rule in ("backfill_tuning", "large_job_reservation"):
        fig = make_subplots(specs=[[{"secondary_y": True}]])
        fig.add_bar(x=data["day"].to_list(), y=data["held_gpu_h"].to_list(), name="held GPU-h",
                    marker_color=_charts.LEAF_COLORS["held"])  # fmt: skip
        fig.add_scatter(
            x=data["day"].to_list(), y=data["mean_wait_h"].to_list(), name="mean large wait (h)",
            secondary_y=True, line_color=_charts.color_map("series")["attempts"],
        )  # fmt: skip
        fig.update_layout(title=title)
        fig.update_yaxes(rangemode="tozero")
        _charts.legend_below(_charts.day_axis(fig))
        definition = (
            "Per UTC day: GPU-hours idle while a large job waited (waterfall leaf `held`, bars) "
            f"and the mean wait (h) of large attempts (≥ {ev.get('large_gpus', 64):g} GPUs) that "
            "started that day (line)."
        )
    elif data.height and rule == "fairness_drift":
        named = {t["team"] for t in (ev.get("over_teams") or []) + (ev.get("under_teams") or [])}
        data = data.filter(pl.col("team").is_in(sorted(named))) if named else data
        long = data.unpivot(
            index=["week", "team"], on=["used_gpu_h", "fair_gpu_h"], variable_name="series",
            value_name="gpu_h",
        )  # fmt: skip
        fig = px.line(long, x="week", y="gpu_h", color="team", line_dash="series", title=title,
                      color_discrete_map=_charts.color_map(
                          "team", long["team"], universe=queries.filter_values(path, "team")
                      ))  # fmt: skip
        _charts.legend_below(_charts.week_axis(fig))
        definition = (
            "Per ISO week: GPU-hours each named team received (used) against its fair "
            "allocation (water-filled by registry share and demand, fairness_weekly)."
        )
    elif data.height and rule in ("preempt_exempt_time", "preemption_grace_time"):
        fig = px.bar(data, x="run_min", y="attempts", hover_data=["gpu_h"], title=title)
        definition = (
            "GPU attempts that ended PREEMPTED, per 10-minute bin of how long they ran first "
            "(minutes); a pile at the left is churn: work preempted before it got going."
        )
    elif data.height and rule == "lemon_node":
        long = data.unpivot(index="day", variable_name="series", value_name="count")
        fig = px.bar(long, x="day", y="count", color="series", barmode="group", title=title,
                     color_discrete_map=_charts.color_map("series"))  # fmt: skip
        _charts.legend_below(_charts.day_axis(fig))
        definition = (
            "Per UTC day (by start): attempts that ran on the node and those that ended NODE_FAIL."
        )
    else:
        data = _numbers(ev, rule)
        if data.height == 0:
            st.caption("No numeric evidence to chart.")
            return
        fig = px.bar(data, x="quantity", y="value", title=title)
        definition = _BAR_DEFINITIONS.get(
            rule, "The finding's evidence numbers (units in the names)."
        )
    _charts.chart(fig, data, key=key, definition=definition)


st.title("Recommendations")

path = queries.serving_path()
recs = queries.recommendations(path)
if recs.height == 0:
    st.info(
        f"No recommendations in {path}: run `goodput materialize` (the recommendations asset), "
        "or the rules found nothing to change."
    )
    st.stop()

first = recs.row(0, named=True)
st.caption(
    f"{recs.height} recommendation(s) from data {first['window_start']:%Y-%m-%d} – "
    f"{first['window_end']:%Y-%m-%d} UTC (as of {first['as_of']:%Y-%m-%d %H:%M} UTC). "
    "Review each change before applying it."
)
_charts.table(
    recs.select([*_COLUMNS, *(c for c in ("status",) if c in recs.columns)]),
    key="recommendations",
    caption=(
        "Most severe first, then by expected gain (GPU-hours per week); confidence 0–1. "
        "Status: proposed → applied (a policy change set what it proposes) → measured → "
        "confirmed or regressed (its target KPI; a regressed one proposes its rollback), see "
        "the Changes page. The CSV has the shown columns; evidence and patches are below."
    ),
)

st.subheader("Details")
for rec in recs.iter_rows(named=True):
    with st.expander(f"{rec['severity']} · {rec['rule']} · {rec['scope']}"):
        st.markdown(rec["change_text"])
        if rec.get("change_id"):
            st.caption(f"Status: {rec['status']} (policy change {rec['change_id']})")
        wait = rec["expected_wait_reduction_s"]
        if wait is not None:
            st.caption(f"Expected wait reduction: {wait / 3600:.1f} h")
        st.markdown("**Evidence**")
        try:
            evidence = json.loads(rec["evidence"]) if rec["evidence"] else {}
        except (TypeError, ValueError):
            evidence = None
        if isinstance(evidence, dict):
            _evidence_chart(rec, evidence)
            st.json(evidence, expanded=False)
        else:
            st.code(str(rec["evidence"]))
        if rec["patch_kind"]:
            st.markdown(f"**Patch** ({rec['patch_kind']})")
            st.code(rec["patch_content"] or "", language=_LANGUAGE.get(rec["patch_kind"]))
        else:
            st.caption("No patch: a change to make by hand.")

st.subheader("Patch files")
folder = load_config().warehouse_path.parent / "recommendations"
files = [folder / name for name in ("latest.json", *OUTPUT_FILES.values())]
present = [f for f in files if f.is_file()]
if present:
    for file in present:
        st.download_button(
            file.name, file.read_bytes(), file.name, key=f"rec_file_{file.name}", on_click="ignore"
        )
    st.caption(f"From {folder}; each file holds every recommendation of its scheduler.")
else:
    st.info(f"No patch files in {folder}: run `python -m pipelines.recommendations`.")
