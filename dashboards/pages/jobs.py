"""Jobs: a searchable list of job attempts, and one job's view (like ``jobstats`` and XDMoD's job
viewer): its attempts, advice, waterfall and per-GPU activity and memory over time.

``?cluster=…&job=…`` in the URL opens that job (``cluster`` is the shared sidebar filter). The
job view is ``goodput job ID`` (:mod:`pipelines.report.job_report`) on the serving copy.
"""

from __future__ import annotations

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import _charts, _filters, queries
from metrics.schema import WATERFALL_LEAVES
from pipelines.config import load_config
from pipelines.report.job_report import (
    JobReport,
    advice,
    fmt_hours,
    format_job_report,
    job_waterfall,
    outcome,
)

#: Widget keys; ``job`` is also the URL query parameter.
KEY_SEARCH = "jobs_search"
KEY_JOB = "job"
KEY_PICK = "jobs_pick"

st.title("Jobs")

path = queries.serving_path()
cfg = load_config()
f = _filters.render(path)
st.caption(f.describe())
if queries.filter_bounds(path) is None:
    st.warning(f"No data yet in {path}: run `goodput materialize` (or `make run`).")
    st.stop()


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _gpu_h(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 3600.0, 2)


# --- the list --------------------------------------------------------------------------------
st.subheader("Job list")
text = st.text_input(
    "Search (job id, user, team, account, partition or state)", key=KEY_SEARCH
)  # fmt: skip
listed = queries.job_list(path, f, text or "")
shown = listed.select(
    pl.col("cluster").alias("cluster"),
    pl.col("job_id").alias("job"),
    pl.col("attempt").alias("attempt"),
    pl.col("user_name").alias("user"),
    pl.col("team").alias("team"),
    pl.col("state").alias("state"),
    pl.col("gpus").alias("GPUs"),
    pl.col("elapsed_s").map_elements(fmt_hours, return_dtype=pl.String()).alias("elapsed"),
    (pl.col("gpu_s") / 3600.0).round(1).alias("GPU-hours"),
    pl.col("mean_activity").alias("GPU activity"),
    # No GPU telemetry for the attempt (no DCGM samples tied to it): its idle time is unknown,
    # not 0, so the cell is left empty as in the one-job view below.
    pl.when(pl.col("observed_gpu_s") > 0).then((pl.col("idle_gpu_s") / 3600.0).round(1))
    .alias("idle GPU-hours"),
    pl.col("start_at").alias("start (UTC)"),
) if listed.height else pl.DataFrame()  # fmt: skip
if shown.height:
    st.dataframe(
        shown,
        key="job_list_table",
        hide_index=True,
        height=_charts.table_height(shown.height),
        column_config={
            "GPUs": st.column_config.NumberColumn(format="%g"),
            "GPU-hours": st.column_config.NumberColumn(format="localized"),
            "idle GPU-hours": st.column_config.NumberColumn(format="localized"),
            "GPU activity": st.column_config.ProgressColumn(
                format="percent", min_value=0.0, max_value=1.0
            ),
            "start (UTC)": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
        },
    )
    st.caption(
        f"{shown.height:,} attempt(s) running in the window, newest first (at most "
        f"{queries.JOB_LIST_LIMIT:,}). Elapsed and GPU-hours run to the data cut-off while a job "
        f"runs. GPU activity and idle GPU-hours are job_gpu_summary's: whole 5-minute buckets "
        f"tied to the attempt, a bucket idle when its mean activity is < θ = "
        f"{cfg.idle_activity:g}; the job view below uses `goodput job`'s rule (each bucket's "
        f"part inside the attempt, idle per GPU), so edge buckets can differ slightly. Empty "
        f"GPU activity and idle GPU-hours: no GPU telemetry tied to the attempt (unknown, not "
        f"0); {shown['idle GPU-hours'].null_count():,} of the {shown.height:,} listed."
    )
    _charts.download(shown, key="job_list_table")
else:
    st.info("No job attempt matches the search and filters.")

# --- one job ---------------------------------------------------------------------------------
st.subheader("One job")
if KEY_JOB not in st.session_state:
    st.session_state[KEY_JOB] = st.query_params.get(KEY_JOB, "")


def _pick() -> None:
    picked = st.session_state.get(KEY_PICK) or ""
    if picked:
        st.session_state[KEY_JOB] = picked


if listed.height:
    st.selectbox(
        "Open a job of the list", ["", *listed["job_id"].unique(maintain_order=True).to_list()],
        key=KEY_PICK, on_change=_pick,
    )  # fmt: skip
job_id = (st.text_input("Job ID (Slurm JobID, or Kubernetes namespace/workload)", key=KEY_JOB)
          or "").strip()  # fmt: skip
if job_id:
    if st.query_params.get(KEY_JOB) != job_id:
        st.query_params[KEY_JOB] = job_id
elif KEY_JOB in st.query_params:
    del st.query_params[KEY_JOB]
if not job_id:
    st.info("Pick a job of the list or type its ID; `?cluster=…&job=…` in the URL opens it.")
    st.stop()

report = queries.job_report_of(path, f.cluster, job_id, cfg.idle_activity)
if report is None or (report.attempts.height == 0 and report.never_started.height == 0):
    where = f" on {f.cluster}" if f.cluster else ""
    st.warning(f"No job {job_id}{where} in the serving copy.")
    st.stop()


def _attempts_table(rep: JobReport, cluster: str) -> pl.DataFrame:
    rows = []
    for r in rep.attempts.filter(pl.col("cluster") == cluster).iter_rows(named=True):
        running = r["end_at"] is None
        run_s = r["run_s"] if not running else (r["as_of"] - r["start_at"]).total_seconds()
        gpu_s = r["gpu_s"] if r["gpu_s"] is not None else r["gpu_s_so_far"]
        rows.append(
            {
                "attempt": r["attempt"],
                "state": r["state"],
                "outcome": outcome(r["state"], r["exit_code"]),
                "GPUs": r["gpus"],
                "start (UTC)": r["start_at"],
                "wait": fmt_hours(r["wait_s"]),
                "run time": fmt_hours(run_s) + (" so far" if running else ""),
                "time limit": fmt_hours(r["timelimit_s"]),
                "GPU-hours": _gpu_h(gpu_s),
                "GPU activity": r["mean_activity"],
                "idle GPU-hours": _gpu_h(r["idle_gpu_s"]) if r["observed_gpu_s"] else None,
                "observed GPU-hours": _gpu_h(r["observed_gpu_s"]),
                "peak GPU memory (MiB)": r["peak_fb_used_mib"],
            }
        )
    return pl.DataFrame(rows)


for cluster in sorted(
    set(report.attempts["cluster"].to_list()) | set(report.never_started["cluster"].to_list())
):
    mine = report.attempts.filter(pl.col("cluster") == cluster)
    st.markdown(f"#### {job_id} on {cluster}")
    if mine.height:
        head = mine.row(0, named=True)
        st.caption(
            f"user: {head['user_name'] or 'n/a'} · team: {head['team']} · account: "
            f"{head['account'] or 'n/a'} · partition: {head['partition'] or 'n/a'} · QOS/queue: "
            f"{head['qos'] or 'n/a'} · data cut-off {head['as_of']:%Y-%m-%d %H:%M} UTC"
        )
        attempts = _attempts_table(report, cluster)
        st.dataframe(
            attempts,
            key=f"job_attempts_{cluster}_table",
            hide_index=True,
            column_config={
                "GPUs": st.column_config.NumberColumn(format="%g"),
                "GPU-hours": st.column_config.NumberColumn(format="localized"),
                "idle GPU-hours": st.column_config.NumberColumn(format="localized"),
                "observed GPU-hours": st.column_config.NumberColumn(format="localized"),
                "GPU activity": st.column_config.ProgressColumn(
                    format="percent", min_value=0.0, max_value=1.0
                ),
                "peak GPU memory (MiB)": st.column_config.NumberColumn(format="localized"),
                "start (UTC)": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
            },
        )
        st.caption(
            "As `goodput job`: GPU activity = mean of 5-minute means per GPU (GR_ENGINE_ACTIVE, "
            "else GPU_UTIL), each weighted by the part of its bucket inside the attempt; idle "
            f"GPU-hours = GPU-buckets with mean < θ = {cfg.idle_activity:g}; samples tied to the "
            "attempt as the pipeline ties them (gpu_activity). The Waste page judges a bucket "
            "by the allocation's mean over its GPUs."
        )
        notes = [
            f"Attempt {r['attempt']}: {note}"
            for r in mine.iter_rows(named=True)
            for note in advice(r)
        ]
        for note in notes:
            st.warning(note)
        if not notes:
            st.success("No advice for this job.")

        leaves = job_waterfall(report).filter(pl.col("cluster") == cluster)
        if leaves.height:
            by_leaf = (
                leaves.group_by("leaf")
                .agg((pl.col("gpu_s").sum() / 3600.0).alias("gpu_h"))
                .with_columns((pl.col("gpu_h") / pl.col("gpu_h").sum()).alias("share"))
                .sort(pl.col("leaf").replace_strict(
                    {leaf: i for i, leaf in enumerate(WATERFALL_LEAVES)}, default=99))
            )  # fmt: skip
            fig = px.bar(
                by_leaf, x="gpu_h", y="leaf", color="leaf", orientation="h",
                category_orders={"leaf": list(WATERFALL_LEAVES)},
                color_discrete_map=_charts.LEAF_COLORS, hover_data=["share"],
                labels={"gpu_h": "GPU-hours", "leaf": "waterfall leaf"},
            )  # fmt: skip
            fig.update_layout(height=120 + 40 * by_leaf.height, showlegend=False)
            _charts.chart(
                fig,
                by_leaf,
                key=f"job_waterfall_{cluster}",
                definition=(
                    "The job's GPU-hours by waterfall leaf (METRICS.md, whole_attempt): a "
                    "failed, preempted, timed-out or cancelled attempt puts all its time in its "
                    "loss leaf; otherwise idle GPU-hours (as above) are allocated_idle and the "
                    "rest goodput (time without telemetry stays goodput)."
                ),
            )

        series = queries.job_gpu_series(path, cluster, job_id)
        if series.height:
            series = series.with_columns(
                pl.concat_str(
                    pl.col("host"), pl.lit(" "), pl.col("gpu_uuid").str.slice(0, 12),
                    pl.when(pl.col("mig_instance").is_not_null())
                    .then(pl.format(" MIG {}", pl.col("mig_instance"))).otherwise(pl.lit("")),
                ).alias("GPU")
            )  # fmt: skip
            fig_act = px.line(
                series, x="bucket", y="activity", color="GPU", line_group="attempt",
                labels={"bucket": "5-minute bucket (UTC)", "activity": "GPU activity"},
            )  # fmt: skip
            fig_act.update_yaxes(tickformat=".0%", rangemode="tozero")
            _charts.legend_below(fig_act)
            _charts.chart(
                fig_act,
                series,
                key=f"job_activity_{cluster}",
                definition=(
                    "Per GPU (or MIG instance) and 5-minute bucket: mean activity from "
                    "gpu_activity (GR_ENGINE_ACTIVE, else GPU_UTIL / 100), rows the pipeline "
                    "tied to this job."
                ),
            )
            fig_mem = px.line(
                series, x="bucket", y="fb_used_mib", color="GPU", line_group="attempt",
                labels={"bucket": "5-minute bucket (UTC)", "fb_used_mib": "memory used (MiB)"},
            )  # fmt: skip
            fig_mem.update_yaxes(rangemode="tozero")
            _charts.legend_below(fig_mem)
            _charts.chart(
                fig_mem,
                series,
                key=f"job_memory_{cluster}",
                definition="Per GPU and 5-minute bucket: the highest DCGM_FI_DEV_FB_USED (MiB).",
            )
            st.dataframe(
                series.select(
                    "attempt", "GPU", "host", "gpu_uuid", "mig_instance",
                    pl.col("bucket").alias("5-minute bucket (UTC)"),
                    pl.col("activity"), "signal",
                    pl.col("fb_used_mib").alias("memory used (MiB)"),
                ),
                key=f"job_series_{cluster}_table",
                hide_index=True,
                column_config={
                    "activity": st.column_config.NumberColumn(format="percent"),
                    "5-minute bucket (UTC)": st.column_config.DatetimeColumn(
                        format="YYYY-MM-DD HH:mm"
                    ),
                },
            )  # fmt: skip
        else:
            st.info(
                "No DCGM telemetry tied to this job in the serving copy (it keeps the last "
                "[warehouse] serving_detail_days days of samples)."
            )
    never = report.never_started.filter(pl.col("cluster") == cluster)
    if never.height:
        st.dataframe(
            never.select(
                pl.col("state"), pl.col("req_gpus").alias("GPUs requested"),
                pl.col("submit_at").alias("submitted (UTC)"),
                pl.col("eligible_at").alias("eligible (UTC)"), pl.col("reason"),
            ),
            key=f"job_never_{cluster}_table",
            hide_index=True,
        )  # fmt: skip
        st.caption("Rows of this job that never started (pending, or cancelled while pending).")

with st.expander("As `goodput job` prints it"):
    st.code(format_job_report(report), language=None)
