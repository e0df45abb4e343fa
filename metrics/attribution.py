"""Attribute DCGM samples to allocations through an identity table (METRICS.md, "Telemetry
attribution").

Each sample row (one GPU, or one MIG instance, at a time ``ts``) is given at most one allocation
attempt, by the first rule that applies:

1. ``label_hpc_job``: the ``hpc_job`` label (Slurm's ``SLURM_JOB_ID``, sacct's ``job_id_raw``);
2. ``pod``: the ``namespace``/``pod`` labels, through the pod's workload attempt;
3. ``gres_index``: the Slurm per-job GPU map (``scontrol show job -d`` ``GRES=…(IDX:…)``): the
   job holding the sample's device index (``device="nvidiaN"`` → N, else the ``gpu`` label) on
   that host at ``ts``;
4. ``whole_node``: the one Slurm job running on the host at ``ts``, when it holds every GPU of
   the node;
5. ``node_group``: otherwise the host's running Slurm jobs as a group (``job_group``), flagged:
   the sample cannot be tied to one of them, so it adds to no job's activity;
6. ``unattributed``: no candidate.

Jobs whose GPUs on the host are already known (seen through labels there, or in the GPU map
when the sample has a device index) are not candidates of rules 4–5: their GPUs are not this
one. A MIG instance or a fractional share is its own allocation (its own row, its own label);
``gpus`` gives the row's fraction of a GPU, so two jobs on one GPU are never summed into one
GPU's activity. Pure polars: no Dagster, no DuckDB.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

import polars as pl

from metrics.mig import MIG_PATTERN, mig_fraction_expr
from metrics.schema import UTC_DATETIME

__all__ = [
    "ATTRIBUTIONS",
    "attribute_samples",
    "device_index",
    "gres_holdings",
    "hour_holders",
    "mig_fraction",
    "node_holdings",
    "pod_lives",
]

#: The ``attribution`` values, in precedence order.
ATTRIBUTIONS: Final = (
    "label_hpc_job",
    "pod",
    "gres_index",
    "whole_node",
    "node_group",
    "unattributed",
)

_FAR: Final = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)
_UTC = UTC_DATETIME


def mig_fraction(profile: pl.Expr) -> pl.Expr:
    """The fraction of a GPU a sample's entity is: 1.0 without a MIG profile; for a DCGM
    ``GPU_I_PROFILE`` the GPU instance's fraction of :func:`metrics.mig.mig_fraction`
    (``3g.40gb`` → 3/7, ``1c.3g.40gb`` → 3/7, A30 ``1g.6gb`` → 1/4); 1.0 when unreadable or
    impossible (Float64)."""
    return mig_fraction_expr(profile, compute_instance=False).fill_null(1.0)


def device_index(device: pl.Expr, gpu_index: pl.Expr) -> pl.Expr:
    """The GPU's device index for the Slurm GPU map: ``N`` of ``device="nvidiaN"`` (gres.conf
    ``File=/dev/nvidiaN`` order), else the ``gpu`` label (NVML order), else NULL (Int64)."""
    return pl.coalesce(
        device.str.extract(r"^nvidia(\d+)$", 1).cast(pl.Int64), gpu_index.cast(pl.Int64)
    )


def _spans(jobs: pl.LazyFrame) -> pl.LazyFrame:
    """Attempts with a start: ``source, cluster, job_id, _raw, attempt, team, start_at, _end``
    (``_end`` = end, or far in the future while running; ``_raw`` = JobIDRaw, else JobID)."""
    return jobs.filter(pl.col("start_at").is_not_null()).select(
        "source", "cluster", "job_id",
        pl.coalesce("job_id_raw", "job_id").alias("_raw"),
        pl.col("attempt").cast(pl.Int64), "team",
        pl.col("start_at").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
        pl.col("end_at").dt.convert_time_zone("UTC").dt.cast_time_unit("us")
        .fill_null(pl.lit(_FAR, dtype=_UTC)).alias("_end"),
    )  # fmt: skip


def gres_holdings(gres: pl.LazyFrame, jobs: pl.LazyFrame) -> pl.LazyFrame:
    """The Slurm GPU map as one row per (attempt, host, device index) held.

    Args:
        gres: ``raw.slurm_job_gres`` rows: ``cluster, job_id`` (scontrol's JobId = sacct's
            ``job_id_raw``), ``start_at, node, gpu_indices, gres, snapshot_at``. The latest
            snapshot of each (job, start, node) wins, the later row where two are dated alike
            (``sql/analytics/slurm_job_gres.sql`` reads them in load order). Rows without
            indices (``IDX:N/A``) and MIG GRES (their ``IDX`` number MIG devices, not GPUs) are
            left out.
        jobs: ``core.jobs`` rows: ``source, cluster, job_id, job_id_raw, attempt, team,
            start_at, end_at``.

    Returns:
        ``cluster, host, device_index, job_id, attempt, team, start_at, end_at`` (``end_at``
        far in the future while running): the attempt of ``jobs`` (Slurm) whose
        ``[start_at, end_at)`` holds the map row's start (else its snapshot time). Map rows of
        jobs not in ``jobs`` are left out.
    """
    g = (
        gres.filter(
            pl.col("gpu_indices").is_not_null()
            & ~pl.col("gres").fill_null("").str.contains(MIG_PATTERN)
        )
        .with_columns(
            pl.col("start_at", "snapshot_at").dt.convert_time_zone("UTC").dt.cast_time_unit("us")
        )
        .sort("snapshot_at", nulls_last=False, maintain_order=True)
        .unique(["cluster", "job_id", "start_at", "node"], keep="last", maintain_order=True)
        .select(
            "cluster",
            pl.col("job_id").alias("_raw"),
            pl.col("node").alias("host"),
            pl.coalesce("start_at", "snapshot_at").alias("_key"),
            pl.col("gpu_indices").alias("device_index"),
        )
        .explode("device_index")
        .with_columns(pl.col("device_index").cast(pl.Int64))
    )
    spans = _spans(jobs).filter(pl.col("source") == "slurm").drop("source")
    return (
        g.join(spans, on=["cluster", "_raw"], how="inner")
        .filter((pl.col("start_at") <= pl.col("_key")) & (pl.col("_key") < pl.col("_end")))
        .select(
            "cluster", "host", "device_index", "job_id", "attempt", "team", "start_at",
            pl.col("_end").alias("end_at"),
        )
        .unique()
    )  # fmt: skip


def node_holdings(jobs: pl.LazyFrame, nodes: pl.LazyFrame) -> pl.LazyFrame:
    """Slurm GPU attempts per node they ran on, and whether they held the whole node.

    Args:
        jobs: ``core.jobs`` rows: ``source, cluster, job_id, job_id_raw, attempt, team, gpus,
            start_at, end_at, node_list``.
        nodes: ``cluster, host, gpus`` (GPUs of each node).

    Returns:
        ``cluster, host, job_id, attempt, team, start_at, end_at, whole_node``: ``whole_node``
        when the attempt's GPUs per node (``gpus`` ÷ nodes, spread evenly as sacct gives no
        per-node split) are at least the node's GPUs; False when the node's GPUs are unknown.
    """
    per_node = jobs.filter(
        (pl.col("source") == "slurm")
        & (pl.col("gpus") > 0)
        & pl.col("start_at").is_not_null()
        & (pl.col("node_list").list.len() > 0)
    ).with_columns((pl.col("gpus") / pl.col("node_list").list.len()).alias("_node_gpus"))
    spans = (
        _spans(jobs)
        .filter(pl.col("source") == "slurm")
        .select("cluster", "job_id", "attempt", "_end")
    )
    host_gpus = nodes.select("cluster", "host", pl.col("gpus").cast(pl.Float64).alias("_host_gpus"))
    return (
        per_node.select(
            "cluster", "job_id", pl.col("attempt").cast(pl.Int64), "team",
            pl.col("start_at").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
            pl.col("node_list").alias("host"), "_node_gpus",
        )
        .explode("host")
        .join(spans, on=["cluster", "job_id", "attempt"], how="left")
        .join(host_gpus.unique(["cluster", "host"]), on=["cluster", "host"], how="left")
        .select(
            "cluster", "host", "job_id", "attempt", "team", "start_at",
            pl.col("_end").alias("end_at"),
            (pl.col("_node_gpus") >= pl.col("_host_gpus") - 1e-9).fill_null(False)
            .alias("whole_node"),
        )
    )  # fmt: skip


def _match_span(
    rows: pl.LazyFrame, spans: pl.LazyFrame, by: list[str], prefix: str
) -> pl.LazyFrame:
    """For each row, the span of ``spans`` (same ``by``; ``start_at``, ``_end``) started last at
    or before ``ts``, kept only when ``ts`` is before its end: columns ``<prefix>job_id``,
    ``<prefix>attempt``, ``<prefix>team`` (NULL when none)."""
    right = spans.select(
        *by,
        pl.col("start_at").alias("_s"),
        pl.col("_end").alias("_e"),
        pl.col("job_id").alias(f"{prefix}job_id"),
        pl.col("attempt").alias(f"{prefix}attempt"),
        pl.col("team").alias(f"{prefix}team"),
    ).sort("_s")
    out = rows.sort("ts").join_asof(
        right, left_on="ts", right_on="_s", by=by, strategy="backward", check_sortedness=False
    )
    inside = pl.col("_e").is_not_null() & (pl.col("ts") < pl.col("_e"))
    return out.with_columns(
        pl.when(inside).then(pl.col(f"{prefix}{c}")).alias(f"{prefix}{c}")
        for c in ("job_id", "attempt", "team")
    ).drop("_s", "_e")


def _segments(holdings: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Cut each host's time line where a job starts or ends: ``(segments, members)``.

    ``segments``: ``cluster, host, _seg, _seg_end`` (one per piece); ``members``: ``cluster,
    host, _seg`` and the holding's columns, for each job running throughout the piece."""
    bounds = (
        pl.concat(
            [
                holdings.select("cluster", "host", pl.col("start_at").alias("_seg")),
                holdings.select("cluster", "host", pl.col("end_at").alias("_seg")),
            ]
        )
        .unique()
        .sort("cluster", "host", "_seg")
        .with_columns(
            pl.col("_seg").shift(-1).over("cluster", "host").fill_null(pl.lit(_FAR, dtype=_UTC))
            .alias("_seg_end")
        )
    )  # fmt: skip
    members = bounds.join(holdings, on=["cluster", "host"], how="inner").filter(
        (pl.col("start_at") <= pl.col("_seg")) & (pl.col("_seg") < pl.col("end_at"))
    )
    return bounds, members


def attribute_samples(
    samples: pl.LazyFrame,
    jobs: pl.LazyFrame,
    *,
    pod_jobs: pl.LazyFrame | None = None,
    gres: pl.LazyFrame | None = None,
    nodes: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Give each sample row at most one allocation attempt (module docstring: the rules).

    Args:
        samples: one row per GPU (or MIG instance) and time: ``cluster, host, gpu_uuid,
            gpu_index, device, mig_profile, mig_instance, hpc_job, namespace, pod, ts`` (UTC),
            plus any value columns (kept). ``ts`` is the time the row is matched at (for a
            5-minute bucket of samples, the caller passes the middle of its samples' times).
        jobs: ``core.jobs`` rows: ``source, cluster, job_id, job_id_raw, attempt, team, gpus,
            start_at, end_at, node_list`` (an attempt holds its GPUs over
            ``[start_at, end_at)``; NULL end = still running).
        pod_jobs: ``cluster, namespace, pod, job_id``: the Kubernetes attempt's ``job_id`` of
            each pod (a pod not listed is its own job ``namespace/pod``), and optionally
            ``pod_from`` (UTC: when that pod was bound, else started; NULL: never) and
            ``uid``, one row per pod life: a pod name used again by a later pod (a rerun's
            ``<job>-worker-0``) is the life started last at or before the sample's time, else
            the first life (:func:`pod_lives`).
        gres: ``raw.slurm_job_gres`` rows (see :func:`gres_holdings`); None = no GPU map.
        nodes: ``cluster, host, gpus`` (see :func:`node_holdings`); None = no node known to be
            whole.

    Returns:
        The sample rows with ``job_id, attempt, team, attribution, job_group, gpus`` added:
        ``attribution`` one of :data:`ATTRIBUTIONS`; ``job_id``/``attempt``/``team`` the
        attempt (for a label whose job has no attempt at ``ts``: ``job_id`` from the label,
        ``attempt`` NULL); for ``node_group`` ``job_id``/``attempt`` are NULL, ``job_group``
        lists the group's job ids (sorted, comma-separated) and ``team`` is the group's team
        when they share one; ``gpus`` is the row's fraction of a GPU (:func:`mig_fraction`).
        Rows keep their input order.
    """
    cols = samples.collect_schema().names()
    spans = _spans(jobs)
    slurm = spans.filter(pl.col("source") == "slurm").drop("source")
    s = samples.with_columns(
        pl.col("ts").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
        device_index(pl.col("device"), pl.col("gpu_index")).alias("_di"),
        mig_fraction(pl.col("mig_profile")).alias("gpus"),
    ).with_row_index("_row")
    out_cols = [*cols, "job_id", "attempt", "team", "attribution", "job_group", "gpus"]

    def finish(frame: pl.LazyFrame, kind: str) -> pl.LazyFrame:
        return frame.with_columns(
            pl.lit(kind).alias("attribution"), pl.lit(None, dtype=pl.String()).alias("job_group")
        )

    # 1. hpc_job label → the Slurm attempt with that JobIDRaw holding ts; its job_id
    # (an array task's A_T) comes from the span.
    by_label = _match_span(
        s.filter(pl.col("hpc_job").is_not_null()),
        slurm.with_columns(pl.col("_raw").alias("hpc_job")),
        ["cluster", "hpc_job"], "_m_",
    ).with_columns(
        pl.coalesce("_m_job_id", "hpc_job").alias("job_id"),
        pl.col("_m_attempt").alias("attempt"), pl.col("_m_team").alias("team"),
    )  # fmt: skip
    # 2. pod labels → the pod's workload attempt.
    pod_rows = s.filter(pl.col("hpc_job").is_null() & pl.col("pod").is_not_null())
    pod_rows = (
        pod_lives(pod_rows, pod_jobs)
        if pod_jobs is not None
        else pod_rows.with_columns(pl.lit(None, dtype=pl.String()).alias("_pod_job"))
    ).with_columns(
        pl.coalesce("_pod_job", pl.format("{}/{}", "namespace", "pod")).alias("_key_job")
    )
    by_pod = _match_span(
        pod_rows, spans.drop("source").with_columns(pl.col("job_id").alias("_key_job")),
        ["cluster", "_key_job"], "_m_",
    ).with_columns(
        pl.coalesce("_m_job_id", "_key_job").alias("job_id"),
        pl.col("_m_attempt").alias("attempt"), pl.col("_m_team").alias("team"),
    )  # fmt: skip
    labelled = pl.concat(
        [finish(by_label, "label_hpc_job").select(*out_cols, "_row"),
         finish(by_pod, "pod").select(*out_cols, "_row")]
    )  # fmt: skip

    # 3. GPU map: the job holding the device index (never for a MIG instance).
    rest = s.filter(pl.col("hpc_job").is_null() & pl.col("pod").is_null()).with_columns(
        pl.when(pl.col("mig_instance").is_null()).then(pl.col("_di")).alias("_di")
    )
    held = gres_holdings(gres, jobs) if gres is not None else None
    if held is not None:
        rest = _match_span(
            rest,
            held.rename({"device_index": "_di", "end_at": "_end"}),
            ["cluster", "host", "_di"],
            "_g_",
        )
    else:
        rest = rest.with_columns(
            pl.lit(None, dtype=pl.String()).alias("_g_job_id"),
            pl.lit(None, dtype=pl.Int64()).alias("_g_attempt"),
            pl.lit(None, dtype=pl.String()).alias("_g_team"),
        )
    by_gres = finish(
        rest.filter(pl.col("_g_job_id").is_not_null()).rename(
            {"_g_job_id": "job_id", "_g_attempt": "attempt", "_g_team": "team"}
        ),
        "gres_index",
    ).select(*out_cols, "_row")

    # 4–6. the host's running Slurm jobs not already placed elsewhere.
    open_rows = rest.filter(pl.col("_g_job_id").is_null()).drop(
        "_g_job_id", "_g_attempt", "_g_team"
    )
    on_node = node_holdings(jobs, nodes if nodes is not None else _no_nodes())
    bounds, members = _segments(on_node)
    label_known = (
        labelled.filter(pl.col("attempt").is_not_null())
        .select("cluster", "host", "job_id", "attempt")
        .unique()
        .with_columns(pl.lit(True).alias("_by_label"))
    )
    map_known = (
        held.select("cluster", "host", "job_id", "attempt").unique()
        if held is not None
        else on_node.select("cluster", "host", "job_id", "attempt").clear()
    ).with_columns(pl.lit(True).alias("_by_map"))
    cand = (
        open_rows.select("_row", "cluster", "host", "ts", "_di")
        .sort("ts")
        .join_asof(
            bounds.sort("_seg"), left_on="ts", right_on="_seg", by=["cluster", "host"],
            strategy="backward", check_sortedness=False,
        )
        .filter(pl.col("ts") < pl.col("_seg_end"))
        .join(members, on=["cluster", "host", "_seg"], how="inner")
        .join(label_known, on=["cluster", "host", "job_id", "attempt"], how="left")
        .join(map_known, on=["cluster", "host", "job_id", "attempt"], how="left")
        .filter(
            pl.col("_by_label").is_null()
            & (pl.col("_by_map").is_null() | pl.col("_di").is_null())
        )
        .group_by("_row")
        .agg(
            pl.len().alias("_n"),
            pl.col("job_id").first().alias("_job"),
            pl.col("attempt").first().alias("_att"),
            pl.col("whole_node").first().alias("_whole"),
            pl.col("team").unique().alias("_teams"),
            pl.col("job_id").unique().sort().str.join(",").alias("_group"),
        )
    )  # fmt: skip
    one = (pl.col("_n") == 1) & pl.col("_whole")
    group = pl.col("_n").is_not_null() & ~one
    by_node = open_rows.join(cand, on="_row", how="left").with_columns(
        pl.when(one).then(pl.col("_job")).alias("job_id"),
        pl.when(one).then(pl.col("_att")).alias("attempt"),
        pl.when(one | (group & (pl.col("_teams").list.len() == 1)))
        .then(pl.col("_teams").list.first()).alias("team"),
        pl.when(one).then(pl.lit("whole_node"))
        .when(group).then(pl.lit("node_group"))
        .otherwise(pl.lit("unattributed")).alias("attribution"),
        pl.when(group).then(pl.col("_group")).alias("job_group"),
    ).select(*out_cols, "_row")  # fmt: skip

    # a job's team where no attempt holds the sample: its latest attempt's (one row, the same
    # in every build: the attempts of a job may name different teams)
    teams = (
        spans.sort("cluster", "job_id", "attempt", "start_at", nulls_last=False)
        .unique(["cluster", "job_id"], keep="last", maintain_order=True)
        .select("cluster", "job_id", pl.col("team").alias("_t"))
    )
    return (
        pl.concat([labelled, by_gres, by_node], how="vertical_relaxed")
        .join(teams, on=["cluster", "job_id"], how="left")
        .with_columns(pl.coalesce("team", "_t").alias("team"))
        .sort("_row")
        .select(out_cols)
    )


#: The attributions :func:`hour_holders` keeps: those that name one attempt (no pod labels in
#: the hourly aggregates; a node group names none).
_ONE_ATTEMPT: Final = ("label_hpc_job", "gres_index", "whole_node")


def hour_holders(
    rows: pl.LazyFrame,
    jobs: pl.LazyFrame,
    *,
    gres: pl.LazyFrame | None = None,
    nodes: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Each attempt that held a row's GPU at some time of its hour, by the rules of
    :func:`attribute_samples` (job label, GPU map, whole node).

    An hourly aggregate is known only to its hour ``[hour, hour + 1h)``: the GPU's holders in it
    are those :func:`attribute_samples` finds at the hour's start and at each start of a
    candidate attempt (on the row's host, or of its label's job) inside the hour, so an attempt
    holding the GPU over any part of the hour is found, and two attempts that held it one
    after the other are both. Only one-attempt attributions count (``label_hpc_job``,
    ``gres_index``, ``whole_node``); a GPU of a node shared by several jobs without a label or
    a map entry has no holder, as a 5-minute sample's ``node_group``.

    Args:
        rows: one row per GPU, hour and job label: ``cluster, host, gpu_uuid, gpu_index``
            (Int64: the GPU's index on the host), ``hpc_job`` (NULL: unlabelled), ``hour``
            (UTC, the hour's start), plus any other columns (kept).
        jobs: ``core.jobs`` rows, as :func:`attribute_samples` reads them.
        gres: ``raw.slurm_job_gres`` rows (:func:`gres_holdings`); None = no GPU map.
        nodes: ``cluster, host, gpus`` (:func:`node_holdings`); None = no node known whole.

    Returns:
        ``rows``' columns plus ``job_id, attempt`` (Int64), ``attribution``: one row per input
        row and attempt that held its GPU in its hour (the attribution at the first instant it
        was found); a row with no holder is left out.
    """
    cols = rows.collect_schema().names()
    r = rows.with_columns(
        pl.col("hour").dt.convert_time_zone("UTC").dt.cast_time_unit("us")
    ).with_row_index("_hr")
    hour_end = pl.col("hour") + pl.duration(hours=1)
    spans = _spans(jobs)
    # the candidates: attempts on the row's host, or of its label's job, meeting its hour
    on_host = (
        jobs.filter(pl.col("start_at").is_not_null())
        .select("cluster", "job_id", pl.col("attempt").cast(pl.Int64),
                pl.col("node_list").alias("host"))
        .explode("host")
        .join(r.select("_hr", "cluster", "host", "hour"), on=["cluster", "host"], how="inner")
        .select("_hr", "cluster", "job_id", "attempt", "hour")
    )  # fmt: skip
    by_label = (
        r.filter(pl.col("hpc_job").is_not_null())
        .select("_hr", "cluster", pl.col("hpc_job").alias("_raw"), "hour")
        .join(spans.select("cluster", "_raw", "job_id", "attempt"), on=["cluster", "_raw"])
        .select("_hr", "cluster", "job_id", "attempt", "hour")
    )
    cand = (
        pl.concat([on_host, by_label], how="vertical_relaxed")
        .join(spans.select("cluster", "job_id", "attempt", "start_at", "_end"),
              on=["cluster", "job_id", "attempt"], how="inner")
        .filter((pl.col("start_at") < hour_end) & (pl.col("_end") > pl.col("hour")))
        .collect()
        .lazy()
    )  # fmt: skip
    # Collected once (few rows): the identity rules read the attempts three times, and a
    # lazy semi join would scan every attempt for each.
    keys = cand.select("cluster", "job_id", "attempt").unique()
    held = (
        jobs.with_columns(pl.col("attempt").cast(pl.Int64))
        .join(keys, on=["cluster", "job_id", "attempt"], how="semi")
        .collect()
        .lazy()
    )
    instants = pl.concat(
        [
            r.select("_hr", pl.col("hour").alias("ts")),
            cand.filter(pl.col("start_at") > pl.col("hour")).select(
                "_hr", pl.col("start_at").alias("ts")
            ),
        ]
    ).unique()
    null_s = pl.lit(None, dtype=pl.String())
    probes = r.select(
        "_hr", "cluster", "host", "gpu_uuid", pl.col("gpu_index").cast(pl.Int64), "hpc_job",
        null_s.alias("device"), null_s.alias("mig_profile"), null_s.alias("mig_instance"),
        null_s.alias("namespace"), null_s.alias("pod"),
    ).join(instants, on="_hr", how="inner")  # fmt: skip
    found = (
        attribute_samples(probes, held, gres=gres, nodes=nodes)
        .filter(pl.col("attribution").is_in(_ONE_ATTEMPT) & pl.col("attempt").is_not_null())
        .sort("_hr", "ts")
        .unique(["_hr", "job_id", "attempt"], keep="first", maintain_order=True)
        .select("_hr", "job_id", pl.col("attempt").cast(pl.Int64), "attribution")
    )
    return r.join(found, on="_hr", how="inner", maintain_order="left").select(
        *cols, "job_id", "attempt", "attribution"
    )


#: Where a pod life has no time (``pod_from`` NULL): before every sample.
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def pod_lives(rows: pl.LazyFrame, pod_jobs: pl.LazyFrame, value: str = "job_id") -> pl.LazyFrame:
    """``rows`` (pod-labelled samples: ``cluster, namespace, pod, ts``) with ``_pod_job``: the
    ``value`` column (``job_id``; ``node``: the life's node) of the life of their pod name that
    holds ``ts``.

    Kubernetes names a pod uniquely only while it exists: a rerun of a job with fixed pod
    names (a JobSet's or PyTorchJob's ``<job>-worker-0``, a StatefulSet's ordinals) gives a
    later pod the same name. A sample is the pod's that had the name at its time: the life
    started (``pod_from``) last at or before ``ts`` (its tail after the pod ended too, until
    the next life starts); a sample before every life takes the first (each name's first life
    is taken to start at the epoch, so one backward as-of join decides). A life without a
    start (a pod never bound held no GPU) counts only for a name that has no life with one,
    as starting at the epoch. Lives of one name with the same start are one: the greatest
    ``uid`` (else ``job_id``). Without ``pod_from`` every name has one life, the first listed.
    NULL where the name is not listed.
    """
    key = ["cluster", "namespace", "pod"]
    names = pod_jobs.collect_schema().names()
    if "pod_from" not in names:
        lives = pod_jobs.unique(key, keep="first", maintain_order=True).select(
            *key, pl.col(value).alias("_pod_job")
        )
        return rows.join(lives, on=key, how="left")
    tie = "uid" if "uid" in names else "job_id"
    start = pl.col("pod_from").dt.convert_time_zone("UTC").dt.cast_time_unit("us")
    lives = (
        pod_jobs.select(*key, start.alias("_pf"), *{tie, "job_id", value})
        .filter(pl.col("_pf").is_not_null() | pl.col("_pf").is_null().all().over(key))
        .with_columns(pl.col("_pf").fill_null(_EPOCH))
        .sort(*key, "_pf", tie, nulls_last=False)
        .unique([*key, "_pf"], keep="last", maintain_order=True)
        .with_columns(  # the first life of each name from the epoch on
            pl.when(pl.col("_pf") == pl.col("_pf").min().over(key))
            .then(pl.lit(_EPOCH))
            .otherwise(pl.col("_pf"))
            .alias("_pf")
        )
        .select(*key, "_pf", pl.col(value).alias("_pod_job"))
        .sort("_pf")
    )
    return (
        rows.sort("ts")
        .join_asof(
            lives,
            left_on="ts",
            right_on="_pf",
            by=key,
            strategy="backward",
            check_sortedness=False,
        )
        .drop("_pf")
    )


def _no_nodes() -> pl.LazyFrame:
    return pl.LazyFrame(schema={"cluster": pl.String(), "host": pl.String(), "gpus": pl.Float64()})
