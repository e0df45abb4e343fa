"""The metric-engine tables (waterfall, time to start, fairness, reliability) from core tables.

Each cluster is computed against its own data cut-off ``as_of``; the metric functions live in
:mod:`metrics` (pure polars). Telemetry is attributed by label here (``hpc_job`` on Slurm GPUs,
``namespace/pod`` on Kubernetes GPUs); GPUs without such a label stay unobserved.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from metrics import (
    entitlement,
    fair_share_hourly,
    fairness_summary,
    gpu_waterfall_hourly,
    node_reliability,
    wait_percentiles_km,
    wait_spells,
)

__all__ = ["ACTIVITY_METRIC", "build_metric_tables"]

#: The GPU activity signal (METRICS.md), 0–1.
ACTIVITY_METRIC = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"

_TTS_GROUPS: tuple[tuple[str, ...], ...] = (
    ("source", "cluster", "bucket"),
    ("source", "cluster"),
    ("week", "source", "cluster", "bucket"),
    ("source", "cluster", "partition", "bucket"),
    ("source", "cluster", "team", "bucket"),
)
_TTS_COLS = ["week", "source", "cluster", "partition", "team", "bucket"]


def _attribute(samples: pl.DataFrame, pod_jobs: pl.DataFrame) -> pl.DataFrame:
    """Add ``job_id``: the ``hpc_job`` label (Slurm), else the pod's workload
    (``<namespace>/<workload>`` through ``pod_jobs``: cluster, namespace, pod, job_id), else
    ``<namespace>/<pod>``; then drop the label columns."""
    mapped = samples.join(pod_jobs.unique(["cluster", "namespace", "pod"]),
                          on=["cluster", "namespace", "pod"], how="left")  # fmt: skip
    return mapped.with_columns(
        pl.coalesce(
            "hpc_job", "job_id", pl.format("{}/{}", pl.col("namespace"), pl.col("pod"))
        ).alias("job_id")
    ).drop("hpc_job", "namespace", "pod")


def _activity(
    con: duckdb.DuckDBPyConnection, jobs: pl.DataFrame, pod_jobs: pl.DataFrame
) -> pl.DataFrame:
    """Mean activity per allocation attempt and 5-minute bucket, from label-attributed samples."""
    raw: pl.DataFrame = con.sql(
        "SELECT cluster, hpc_job, namespace, pod,"
        " time_bucket(INTERVAL 5 MINUTE, ts) AS bucket, avg(value) AS activity,"
        " count(DISTINCT gpu_uuid)::DOUBLE AS gpus"
        " FROM raw.dcgm_samples WHERE metric = $m AND value IS NOT NULL"
        " AND (hpc_job IS NOT NULL OR pod IS NOT NULL) GROUP BY ALL",
        params={"m": ACTIVITY_METRIC},
    ).pl()
    samples = _attribute(raw, pod_jobs)
    if samples.height == 0:
        return pl.DataFrame(
            schema={"cluster": pl.String(), "job_id": pl.String(), "attempt": pl.Int64(),
                    "bucket": pl.Datetime("us", "UTC"), "activity": pl.Float64(),
                    "gpus": pl.Float64()}
        )  # fmt: skip
    # One row per allocation and bucket: the pods (or nodes) of one allocation are summed, their
    # activity weighted by the GPUs each contributed.
    samples = (
        samples.with_columns(pl.col("bucket").dt.convert_time_zone("UTC"))
        .group_by("cluster", "job_id", "bucket")
        .agg(
            ((pl.col("activity") * pl.col("gpus")).sum() / pl.col("gpus").sum()).alias("activity"),
            pl.col("gpus").sum(),
        )
    )
    spans = jobs.select("cluster", "job_id", "attempt", "start_at", "end_at")
    return (
        samples.join(spans, on=["cluster", "job_id"], how="inner")
        .filter(
            (pl.col("bucket") >= pl.col("start_at").dt.truncate("5m"))
            & (pl.col("end_at").is_null() | (pl.col("bucket") < pl.col("end_at")))
        )
        .sort("start_at")
        .unique(["cluster", "job_id", "bucket"], keep="last")
        .select("cluster", "job_id", "attempt", "bucket", "activity", "gpus")
    )


def _xid_events(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """XID events: each change of ``DCGM_FI_DEV_XID_ERRORS`` to a non-zero value (it holds the
    last XID, not a count), plus non-zero ``DCGM_EXP_XID_ERRORS_COUNT`` samples."""
    df: pl.DataFrame = con.sql(
        "SELECT cluster, host, ts, value::BIGINT AS xid FROM ("
        " SELECT cluster, host, gpu_uuid, ts, value,"
        "  lag(value) OVER (PARTITION BY cluster, host, gpu_uuid ORDER BY ts) AS prev"
        " FROM raw.dcgm_samples WHERE metric = 'DCGM_FI_DEV_XID_ERRORS')"
        " WHERE value > 0 AND (prev IS NULL OR prev <> value)"
        " UNION ALL SELECT cluster, host, ts, NULL::BIGINT FROM raw.dcgm_samples"
        " WHERE metric = 'DCGM_EXP_XID_ERRORS_COUNT' AND value > 0"
    ).pl()
    return df.with_columns(pl.col("ts").dt.convert_time_zone("UTC"))


def _down_intervals(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    events: pl.DataFrame = con.sql(
        "SELECT DISTINCT cluster, node AS host, start_at, end_at, state, reason"
        " FROM raw.slurm_events WHERE event = 'node'"
    ).pl()
    return events.with_columns(
        pl.col("start_at", "end_at").dt.convert_time_zone("UTC"),
        pl.col("reason")
        .fill_null("")
        .str.to_lowercase()
        .str.contains("maint|planned|reboot|upgrade")
        .alias("planned"),
    )


def job_gpu_summary(
    con: duckdb.DuckDBPyConnection,
    jobs: pl.DataFrame,
    activity: pl.DataFrame,
    pod_jobs: pl.DataFrame,
    *,
    idle_threshold: float,
    bucket_s: float = 300.0,
) -> pl.DataFrame:
    """One row per allocation attempt with its telemetry summary (persisted beyond retention).

    ``observed_gpu_s`` = Σ GPUs seen × bucket length over the attempt's 5-minute buckets;
    ``mean_activity`` = GPU-second-weighted mean activity; ``idle_gpu_s`` = observed GPU-seconds
    of buckets with activity < θ; ``peak_fb_used_mib`` = max ``DCGM_FI_DEV_FB_USED``;
    ``xid_events`` = XID changes on the attempt's labelled GPUs. Attempts without telemetry have
    0 observed GPU-seconds and NULL activity.
    """
    per = (
        activity.with_columns((pl.col("gpus").fill_null(1.0) * bucket_s).alias("_obs"))
        .group_by("cluster", "job_id", "attempt")
        .agg(
            pl.col("_obs").sum().alias("observed_gpu_s"),
            ((pl.col("activity") * pl.col("_obs")).sum() / pl.col("_obs").sum()).alias(
                "mean_activity"
            ),
            pl.col("_obs").filter(pl.col("activity") < idle_threshold).sum().alias("idle_gpu_s"),
        )
    )
    fb_raw: pl.DataFrame = con.sql(
        "SELECT cluster, hpc_job, namespace, pod, max(value) AS peak_fb_used_mib"
        " FROM raw.dcgm_samples WHERE metric = 'DCGM_FI_DEV_FB_USED'"
        " AND (hpc_job IS NOT NULL OR pod IS NOT NULL) GROUP BY ALL"
    ).pl()
    fb = (
        _attribute(fb_raw, pod_jobs)
        .group_by("cluster", "job_id")
        .agg(pl.col("peak_fb_used_mib").max())
    )
    xid_raw: pl.DataFrame = con.sql(
        "SELECT cluster, hpc_job, namespace, pod, count(*) AS xid_events FROM ("
        " SELECT cluster, hpc_job, namespace, pod, value,"
        "  lag(value) OVER (PARTITION BY cluster, host, gpu_uuid ORDER BY ts) AS prev"
        " FROM raw.dcgm_samples WHERE metric = 'DCGM_FI_DEV_XID_ERRORS'"
        "  AND (hpc_job IS NOT NULL OR pod IS NOT NULL))"
        " WHERE value > 0 AND (prev IS NULL OR prev <> value) GROUP BY ALL"
    ).pl()
    xid = (
        _attribute(xid_raw, pod_jobs).group_by("cluster", "job_id").agg(pl.col("xid_events").sum())
    )
    base = jobs.filter(pl.col("gpus") > 0).select(
        "source", "cluster", "job_id", "attempt", "team", "gpus", "gpu_s"
    )
    return (
        base.join(per, on=["cluster", "job_id", "attempt"], how="left")
        .join(fb.select("cluster", "job_id", "peak_fb_used_mib"), on=["cluster", "job_id"],
              how="left")
        .join(xid, on=["cluster", "job_id"], how="left")
        .with_columns(
            pl.col("observed_gpu_s").fill_null(0.0),
            pl.col("idle_gpu_s").fill_null(0.0),
            pl.col("xid_events").fill_null(0).cast(pl.Int64),
        )
    )  # fmt: skip


def gpu_activity(
    con: duckdb.DuckDBPyConnection, jobs: pl.DataFrame, pod_jobs: pl.DataFrame
) -> pl.DataFrame:
    """Per GPU (or MIG instance) and 5-minute bucket: activity, the signal used, job and team.

    Activity is ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0–1) where present, else
    ``DCGM_FI_DEV_GPU_UTIL`` / 100 (METRICS.md); ``signal`` names the one used. ``job_id`` is the
    label-attributed allocation (NULL when the GPU carried no job label in the bucket).
    """
    raw: pl.DataFrame = con.sql(
        "SELECT cluster, host, gpu_uuid, mig_instance,"
        " time_bucket(INTERVAL 5 MINUTE, ts) AS bucket,"
        " avg(value) FILTER (WHERE metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE') AS gr,"
        " avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL') / 100.0 AS util,"
        " any_value(hpc_job) AS hpc_job, any_value(namespace) AS namespace,"
        " any_value(pod) AS pod"
        " FROM raw.dcgm_samples"
        " WHERE metric IN ('DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_DEV_GPU_UTIL')"
        " GROUP BY ALL"
    ).pl()
    labelled = raw.filter(pl.col("hpc_job").is_not_null() | pl.col("pod").is_not_null())
    unlabelled = raw.filter(pl.col("hpc_job").is_null() & pl.col("pod").is_null())
    teams = jobs.select("cluster", "job_id", "team").unique(["cluster", "job_id"])
    out = pl.concat(
        [
            _attribute(labelled, pod_jobs),
            unlabelled.drop("hpc_job", "namespace", "pod").with_columns(
                pl.lit(None, dtype=pl.String()).alias("job_id")
            ),
        ],
        how="vertical_relaxed",
    )
    return (
        out.join(teams, on=["cluster", "job_id"], how="left")
        .select(
            "cluster", "host", "gpu_uuid", "mig_instance",
            pl.col("bucket").dt.convert_time_zone("UTC"),
            pl.coalesce("gr", "util").alias("activity"),
            pl.when(pl.col("gr").is_not_null()).then(pl.lit("DCGM_FI_PROF_GR_ENGINE_ACTIVE"))
            .when(pl.col("util").is_not_null()).then(pl.lit("DCGM_FI_DEV_GPU_UTIL"))
            .alias("signal"),
            "job_id", "team",
        )
    )  # fmt: skip


def _concat(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()


def build_metric_tables(
    con: duckdb.DuckDBPyConnection,
    *,
    jobs: pl.DataFrame,
    pending: pl.DataFrame,
    occupancy: pl.DataFrame,
    shares: pl.DataFrame,
    nodes: pl.DataFrame,
    as_of: pl.DataFrame,
    idle_threshold: float,
    pod_jobs: pl.DataFrame | None = None,
) -> dict[str, pl.DataFrame]:
    """Compute the metric-engine tables for every cluster with data.

    Args:
        con: warehouse connection (DCGM samples and Slurm node events are read from it).
        jobs: ``core.jobs`` rows (attempts).
        pending: never-started rows: ``cluster, source, job_id, partition, team, req_gpus,
            submit_at, eligible_at, end_at, state``.
        occupancy: ``analytics.occupancy_hourly`` rows (capacity and down per cluster-hour).
        shares: registry ``team, share``.
        nodes: ``core.nodes`` (for racks).
        as_of: ``cluster, as_of``.
        idle_threshold: θ for ``allocated_idle``.
        pod_jobs: ``cluster, namespace, pod, job_id``: the Kubernetes attempt each pod belongs
            to, for attributing pod-labelled samples.

    Returns:
        Frames by table name: ``analytics.gpu_waterfall_hourly``, ``analytics.time_to_start_jobs``,
        ``analytics.time_to_start_km``, ``analytics.fairness_weekly``,
        ``analytics.fairness_summary_weekly``, ``analytics.node_reliability``.
    """
    pod_jobs = (
        pod_jobs
        if pod_jobs is not None
        else pl.DataFrame(
            schema={"cluster": pl.String(), "namespace": pl.String(), "pod": pl.String(),
                    "job_id": pl.String()}
        )
    )  # fmt: skip
    activity = _activity(con, jobs, pod_jobs)
    xid = _xid_events(con)
    down = _down_intervals(con)
    wf, spells, tts, fair_hourly, rel = [], [], [], [], []
    cuts = [
        (str(r["cluster"]), r["as_of"])
        for r in as_of.filter(pl.col("as_of").is_not_null()).iter_rows(named=True)
        if occupancy.filter(pl.col("cluster") == r["cluster"]).height
    ]
    placeholder = not cuts
    if placeholder:
        # Nothing to compute: run once on one empty hour so every table keeps its columns.
        epoch = dt.datetime(2000, 1, 3, tzinfo=dt.UTC)
        cuts = [("", epoch)]
        occupancy = pl.DataFrame(
            {"cluster": [""], "hour": [epoch], "capacity_gpu_s": [0.0], "down_gpu_s": [0.0],
             "planned_down_gpu_s": [0.0]}
        ).with_columns(pl.col("hour").dt.cast_time_unit("us"))  # fmt: skip
    for c, cut in cuts:
        assert isinstance(cut, dt.datetime)
        j = jobs.filter(pl.col("cluster") == c)
        p = pending.filter(pl.col("cluster") == c)
        cap = occupancy.filter(pl.col("cluster") == c).select(
            "cluster", "hour", "capacity_gpu_s", "down_gpu_s", "planned_down_gpu_s"
        )
        if cap.height == 0:
            continue
        wf.append(
            gpu_waterfall_hourly(
                j.lazy(), cap.lazy(), cut, pending=p.lazy(),
                activity=activity.filter(pl.col("cluster") == c).lazy(),
                xid_events=xid.filter(pl.col("cluster") == c).lazy(),
                idle_threshold=idle_threshold,
            ).collect()
        )  # fmt: skip
        sp = wait_spells(j.lazy(), cut, pending=p.lazy()).collect()
        spells.append(sp.with_columns(pl.lit(cut).alias("as_of")))
        for by in _TTS_GROUPS:
            # A NULL partition or team is its own group, labelled, so that NULL keeps meaning
            # "all" in the summary.
            labelled = sp.with_columns(
                pl.col(c).cast(pl.String).fill_null("(none)")
                for c in by
                if c in ("partition", "team")
            )
            tts.append(wait_percentiles_km(labelled.lazy(), by=by).collect())
        fair_hourly.append(
            fair_share_hourly(j.lazy(), cap.lazy(), shares.lazy(), cut, pending=p.lazy()).collect()
        )
        rel.append(
            node_reliability(
                j.lazy(), cut,
                xid_events=xid.filter(pl.col("cluster") == c).lazy(),
                down_intervals=down.filter(pl.col("cluster") == c).lazy(),
                nodes=nodes.filter(pl.col("cluster") == c).select("cluster", "host", "rack").lazy(),
            ).collect()
        )  # fmt: skip
    out: dict[str, pl.DataFrame] = {}
    waterfall = _concat(wf)
    if waterfall.width:
        waterfall = waterfall.with_columns(pl.col("leaf").cast(pl.String).alias("bucket")).drop(
            "leaf"
        )
    out["analytics.gpu_waterfall_hourly"] = waterfall
    out["analytics.time_to_start_jobs"] = _concat(spells)
    km = _concat(tts)
    for col in _TTS_COLS:
        if col not in km.columns and km.width:
            km = km.with_columns(pl.lit(None).alias(col))
    out["analytics.time_to_start_km"] = km
    fh = _concat(fair_hourly)
    weekly, summary = [], []
    if fh.width:
        for window in ("week", "rolling_28d"):
            per_cluster = entitlement(fh.lazy(), window=window, by_pool=True).collect()  # type: ignore[arg-type]
            fleet = entitlement(fh.lazy(), window=window, by_pool=False).collect()  # type: ignore[arg-type]
            if window == "rolling_28d":  # one rolling window per week end (Monday 00:00 UTC)
                per_cluster = per_cluster.filter(pl.col("window_end").dt.weekday() == 1)
                fleet = fleet.filter(pl.col("window_end").dt.weekday() == 1)
            per_cluster = per_cluster.rename({"pool": "cluster"})
            fleet = fleet.with_columns(pl.lit(None, dtype=pl.String()).alias("cluster"))
            for ent in (per_cluster, fleet):
                weekly.append(ent.with_columns(pl.lit(window).alias("window")))
            summary.append(
                fairness_summary(per_cluster.rename({"cluster": "pool"}).lazy())
                .collect()
                .rename({"pool": "cluster"})
                .with_columns(pl.lit(window).alias("window"))
            )
            summary.append(
                fairness_summary(fleet.drop("cluster").lazy())
                .collect()
                .with_columns(
                    pl.lit(None, dtype=pl.String()).alias("cluster"), pl.lit(window).alias("window")
                )
            )
    out["analytics.fairness_weekly"] = _concat(weekly)
    out["analytics.fairness_summary_weekly"] = _concat(summary)
    out["analytics.node_reliability"] = _concat(rel)
    out["analytics.gpu_activity"] = gpu_activity(con, jobs, pod_jobs)
    out["analytics.job_gpu_summary"] = job_gpu_summary(
        con, jobs, activity, pod_jobs, idle_threshold=idle_threshold
    )
    if placeholder:
        out = {table: frame.clear() for table, frame in out.items()}
    return out
