"""Column-wise writers for the fleet at scale (see :mod:`pipelines.sample_fleet._scale`).

The day sweep reads the work folder's Parquet (jobs sorted by submit, GPU allocations sorted by
start), keeps only the records alive on the current day, and writes per day: one
``sacct --parsable2 --allocations`` file (built with polars string expressions, the same fields
and value notation as :func:`pipelines.sample_fleet._writers.sacct_day_rows`), one Parquet file of
hourly per-GPU DCGM aggregates, and for the last days the 5-minute dcgm-exporter text through
:func:`pipelines.sample_fleet._dcgm.write_dcgm_day`. State files reuse the bundled writers.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl

from pipelines.dcgm import DCGM_HOURLY_SCHEMA
from pipelines.sample_fleet._dcgm import DcgmContext, write_dcgm_day
from pipelines.sample_fleet._model import TEAMS, ClusterSpec, GpuAllocation, NodeEvent, gpu_uuid
from pipelines.sample_fleet._scale import (
    DAY,
    DRIFT_RAW_SHARES,
    DRIFT_TEAM,
    IDLE_TEAM,
    STARVED_PARTITION,
    ScaleConfig,
    iter_days,
)
from pipelines.sample_fleet._writers import (
    SACCT_FIELDS,
    LocalTime,
    write_inventory,
    write_node_events,
    write_registry,
    write_sshare,
)

__all__ = [
    "HOURLY_SCHEMA",
    "dcgm_hourly_day",
    "planted",
    "sacct_day_frame",
    "write_days",
    "write_json",
    "write_state",
]

CPUS_PER_GPU = 12
MEM_MB_PER_GPU = 65536
STEP_S = 300
SAMPLES_PER_HOUR = 3600 // STEP_S
#: Columns of the hourly DCGM aggregates (one row per GPU, hour and ``hpc_job`` label value,
#: as a recording rule ``avg_over_time(...[1h])`` grouped by the exporter's labels gives): the
#: schema the ingest reads them with, :data:`pipelines.dcgm._hourly.DCGM_HOURLY_SCHEMA`.
HOURLY_SCHEMA = DCGM_HOURLY_SCHEMA


def _ts(col: str | pl.Expr) -> pl.Expr:
    e = pl.col(col) if isinstance(col, str) else col
    return pl.from_epoch(e, "s").dt.strftime("%Y-%m-%dT%H:%M:%S")


def _dur(e: pl.Expr) -> pl.Expr:
    """Slurm ``[D-]HH:MM:SS`` of integer seconds (column-wise :func:`fmt_duration`)."""
    s = e.clip(0)
    d = s // 86400
    hms = pl.concat_str(
        [
            ((s % 86400) // 3600).cast(pl.String).str.zfill(2),
            pl.lit(":"),
            ((s % 3600) // 60).cast(pl.String).str.zfill(2),
            pl.lit(":"),
            (s % 60).cast(pl.String).str.zfill(2),
        ]
    )
    return pl.when(d > 0).then(pl.concat_str([d.cast(pl.String), pl.lit("-"), hms])).otherwise(hms)


def sacct_day_frame(jobs: pl.DataFrame, now: int, cluster: str) -> pl.DataFrame:
    """The rows of one daily export run at ``now`` (one ``line`` column), in submit order.

    Args:
        jobs: work-table jobs alive on the day (``raw_id, partition, qos, team, user, uid, submit,
            eligible, start, end, state, exit_code, gpus, nnodes, limit_s, nodelist``).
        now: the export's time (the day's end, epoch s).
        cluster: cluster name.

    Returns:
        ``line``: the ``|``-joined fields of :data:`SACCT_FIELDS`.
    """
    started = pl.col("start").is_not_null() & (pl.col("start") < now)
    ended = pl.col("end").is_not_null() & (pl.col("end") <= now)
    g = pl.col("gpus").cast(pl.String)
    cpus = (pl.col("gpus") * CPUS_PER_GPU).cast(pl.String)
    mem = (pl.col("gpus") * MEM_MB_PER_GPU).cast(pl.String)
    nn = pl.col("nnodes").cast(pl.String)
    req = pl.concat_str(
        [
            pl.lit("billing="),
            cpus,
            pl.lit(",cpu="),
            cpus,
            pl.lit(",gres/gpu="),
            g,
            pl.lit(",mem="),
            mem,
            pl.lit("M,node="),
            nn,
        ]
    )
    alloc = pl.concat_str(
        [
            pl.lit("billing="),
            cpus,
            pl.lit(",cpu="),
            cpus,
            pl.lit(",gres/gpu:h100="),
            g,
            pl.lit(",gres/gpu="),
            g,
            pl.lit(",mem="),
            mem,
            pl.lit("M,node="),
            nn,
        ]
    )
    rid = pl.col("raw_id").cast(pl.String)
    cols = [
        rid,
        rid,
        pl.lit(cluster),
        pl.col("partition"),
        pl.col("qos"),
        pl.col("team"),
        pl.col("team"),
        pl.col("user"),
        pl.col("uid").cast(pl.String),
        _ts("submit"),
        _ts("eligible"),
        pl.when(started)
        .then(_ts("start"))
        .when(ended)
        .then(pl.lit("None"))
        .otherwise(pl.lit("Unknown")),
        pl.when(ended).then(_ts("end")).otherwise(pl.lit("Unknown")),
        pl.when(started)
        .then(_dur(pl.when(ended).then(pl.col("end")).otherwise(now) - pl.col("start")))
        .otherwise(pl.lit("00:00:00")),
        pl.when(ended).then(pl.col("exit_code")).otherwise(pl.lit("0:0")),
        pl.when(ended)
        .then(pl.col("state"))
        .when(started)
        .then(pl.lit("RUNNING"))
        .otherwise(pl.lit("PENDING")),
        nn,
        pl.when(started).then(cpus).otherwise(pl.lit("0")),
        req,
        pl.when(started).then(alloc).otherwise(pl.lit("")),
        _dur(pl.col("limit_s")),
        pl.when(started).then(pl.col("nodelist")).otherwise(pl.lit("None assigned")),
        pl.concat_str([pl.lit("train_g"), g]),
    ]
    return jobs.sort("submit", "raw_id").select(pl.concat_str(cols, separator="|").alias("line"))


def _hours(start: pl.Expr, end: pl.Expr, a: int, b: int) -> pl.Expr:
    h0 = (pl.max_horizontal(start, pl.lit(a)) // 3600) * 3600
    h1 = ((pl.min_horizontal(end, pl.lit(b)) - 1) // 3600) * 3600
    return pl.int_ranges(h0, h1 + 1, 3600)


def _samples(s: pl.Expr, e: pl.Expr) -> pl.Expr:
    """5-minute sample instants (multiples of 300 s) in ``[s, e)``."""
    return ((e + STEP_S - 1) // STEP_S - (s + STEP_S - 1) // STEP_S).cast(pl.Int32)


def dcgm_hourly_day(
    gpus: pl.DataFrame, allocs: pl.DataFrame, events: list[NodeEvent], a: int, b: int, cluster: str
) -> pl.DataFrame:
    """Hourly per-GPU DCGM aggregates of one day (schema :data:`HOURLY_SCHEMA`).

    An allocated piece of an hour gives a row labelled with its job (``samples`` = the 5-minute
    instants it covers, ``gr_engine_active_avg`` = the job's activity, ``fb_used_max_mib`` =
    20,000 + 60,000 × activity); the rest of the hour, less the instants the node was down (no
    scrape), gives an unlabelled row at activity 0. XID 79 marks the hour a lemon GPU failed.

    Args:
        gpus: ``hostname, gpu, uuid`` of every GPU.
        allocs: GPU allocations alive on the day (``raw_id, host, gpu, start, end, activity``).
        events: node DOWN intervals.
        a: the day's first second. b: the next day's first second.
        cluster: cluster name.
    """
    al = (
        allocs.filter((pl.col("start") < b) & (pl.col("end") > a))
        .with_columns(_hours(pl.col("start"), pl.col("end"), a, b).alias("h"))
        .explode("h")
        .with_columns(
            _samples(
                pl.max_horizontal("start", "h"), pl.min_horizontal("end", pl.col("h") + 3600)
            ).alias("samples")
        )
        .filter(pl.col("samples") > 0)
        .select(
            pl.col("host").alias("hostname"),
            pl.col("gpu").cast(pl.Int32),
            "h",
            pl.col("raw_id").cast(pl.String).alias("hpc_job"),
            "samples",
            pl.col("activity").alias("gr_engine_active_avg"),
        )
    )
    ev = [
        (e.host, e.start, e.end if e.end is not None else b)
        for e in events
        if e.start < b and (e.end is None or e.end > a)
    ]
    down = (
        pl.DataFrame(ev, schema={"hostname": pl.String, "s": pl.Int64, "e": pl.Int64}, orient="row")
        .with_columns(_hours(pl.col("s"), pl.col("e"), a, b).alias("h"))
        .explode("h")
        .with_columns(
            _samples(pl.max_horizontal("s", "h"), pl.min_horizontal("e", pl.col("h") + 3600)).alias(
                "down"
            )
        )
        .group_by("hostname", "h")
        .agg(pl.col("down").sum())
    )
    hours = pl.DataFrame({"h": list(range(a, b, 3600))}, schema={"h": pl.Int64})
    used = al.group_by("hostname", "gpu", "h").agg(pl.col("samples").sum().alias("used"))
    free = (
        gpus.select("hostname", "gpu")
        .join(hours, how="cross")
        .join(used, on=["hostname", "gpu", "h"], how="left")
        .join(down, on=["hostname", "h"], how="left")
        .with_columns(
            (SAMPLES_PER_HOUR - pl.col("used").fill_null(0) - pl.col("down").fill_null(0))
            .cast(pl.Int32)
            .alias("samples")
        )
        .filter(pl.col("samples") > 0)
        .select(
            "hostname",
            "gpu",
            "h",
            pl.lit(None, pl.String).alias("hpc_job"),
            "samples",
            pl.lit(0.0).alias("gr_engine_active_avg"),
        )
    )
    xid = pl.DataFrame(
        [
            (e.host, e.xid_gpu, e.xid_time // 3600 * 3600, e.xid)
            for e in events
            if e.xid and a <= e.xid_time < b
        ],
        schema={"hostname": pl.String, "gpu": pl.Int32, "h": pl.Int64, "xid_last": pl.Int64},
        orient="row",
    )
    out = (
        pl.concat([al, free])
        .join(xid, on=["hostname", "gpu", "h"], how="left")
        .join(gpus, on=["hostname", "gpu"], how="left")
        .with_columns(
            pl.lit(cluster).alias("cluster"),
            pl.from_epoch("h", "s")
            .dt.cast_time_unit("us")
            .dt.replace_time_zone("UTC")
            .alias("hour"),
            pl.when(pl.col("hpc_job").is_not_null())
            .then((20000 + 60000 * pl.col("gr_engine_active_avg")).round(0).cast(pl.Int64))
            .otherwise(0)
            .alias("fb_used_max_mib"),
            pl.col("xid_last").fill_null(0),
        )
        .sort("hostname", "gpu", "h", "hpc_job", nulls_last=True)
    )
    return out.select([pl.col(c).cast(t) for c, t in HOURLY_SCHEMA.items()])


def _gpu_frame(cfg: ScaleConfig, cluster: ClusterSpec) -> pl.DataFrame:
    rows = [
        (n.host, g, gpu_uuid(cfg.seed, cluster.name, n.host, g))
        for n in cluster.nodes
        for g in range(n.gpus)
    ]
    return pl.DataFrame(
        rows, schema={"hostname": pl.String, "gpu": pl.Int32, "uuid": pl.String}, orient="row"
    )


def _dcgm_5min(
    path: Path,
    cfg: ScaleConfig,
    cluster: ClusterSpec,
    allocs: pl.DataFrame,
    events: list[NodeEvent],
    day_index: int,
    a: int,
    b: int,
) -> None:
    day = allocs.filter((pl.col("start") < b) & (pl.col("end") > a))
    objs = [
        GpuAllocation(
            cluster.name,
            r[0],
            r[1],
            r[2],
            r[3],
            str(r[4]),
            r[5],
            r[6],
            "idle" if r[5] == IDLE_TEAM else "busy",
            int(20000 + 60000 * r[6]),
            (("hpc_job", str(r[4])),),
        )
        for r in day.select("host", "gpu", "start", "end", "raw_id", "team", "activity").iter_rows()
    ]
    ctx = DcgmContext.build(cfg.seed, 0, cluster, objs, events)
    write_dcgm_day(path, ctx, cfg.seed, day_index, a, b)


def write_days(
    out: Path, cfg: ScaleConfig, cluster: ClusterSpec, work: Path, events: list[NodeEvent], bar: Any
) -> tuple[int, int, dict[str, Any]]:
    """The day sweep: sacct, hourly DCGM Parquet and (last days) 5-minute DCGM text per day.

    Returns:
        ``(files written, attempt rows written, per-team telemetry sums for planted.json)``.
    """
    base = out / "inputs" / cluster.name
    sacct_dir, hourly_dir, dcgm_dir = base / "sacct", base / "dcgm_hourly", base / "dcgm"
    for d in (sacct_dir, dcgm_dir):
        d.mkdir(parents=True, exist_ok=True)
        for p in d.glob("*"):
            if p.is_file() and (p.name.startswith("sacct_") or p.name.startswith("dcgm_")):
                p.unlink()
    if hourly_dir.exists():
        import shutil

        shutil.rmtree(hourly_dir)
    jobs_scan = pl.scan_parquet(work / "jobs" / "*.parquet")
    alloc_scan = pl.scan_parquet(work / "allocs" / "*.parquet")
    gpus = _gpu_frame(cfg, cluster)
    open_jobs: pl.DataFrame | None = None
    open_allocs: pl.DataFrame | None = None
    files = rows = 0
    team_act: dict[str, list[float]] = {}
    five_from = cfg.days - min(cfg.days, cfg.dcgm_5min_days)
    header = "|".join(SACCT_FIELDS)
    for i, (day, a, b) in enumerate(iter_days(cfg)):
        lo_j = pl.col("submit") >= a if open_jobs is not None else pl.lit(True)
        chunk = jobs_scan.filter(lo_j & (pl.col("submit") < b)).collect()
        open_jobs = chunk if open_jobs is None else pl.concat([open_jobs, chunk])
        open_jobs = open_jobs.filter(pl.col("end").is_null() | (pl.col("end") >= a))
        lines = sacct_day_frame(open_jobs, b, cluster.name)["line"]
        rows += lines.len()
        (sacct_dir / f"sacct_{day.isoformat()}.psv").write_text(
            header + "\n" + "\n".join(lines.to_list()) + "\n", encoding="utf-8"
        )
        lo_a = pl.col("start") >= a if open_allocs is not None else pl.lit(True)
        ach = alloc_scan.filter(lo_a & (pl.col("start") < b)).collect()
        open_allocs = ach if open_allocs is None else pl.concat([open_allocs, ach])
        open_allocs = open_allocs.filter(pl.col("end") > a)
        hourly = dcgm_hourly_day(gpus, open_allocs, events, a, b, cluster.name)
        folder = hourly_dir / f"date={day.isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        hourly.write_parquet(folder / f"dcgm_hourly_{day.isoformat()}.parquet", statistics=True)
        teams = (
            hourly.filter(pl.col("hpc_job").is_not_null())
            .join(
                open_allocs.select(
                    pl.col("raw_id").cast(pl.String).alias("hpc_job"), "team"
                ).unique("hpc_job"),
                on="hpc_job",
            )
            .group_by("team")
            .agg(
                pl.col("samples").sum().alias("n"),
                (pl.col("samples") * pl.col("gr_engine_active_avg")).sum().alias("s"),
            )
        )
        for t, n, s in teams.iter_rows():
            acc = team_act.setdefault(t, [0.0, 0.0])
            acc[0] += n
            acc[1] += s
        files += 2
        if i >= five_from:
            _dcgm_5min(
                dcgm_dir / f"dcgm_{day.isoformat()}.prom.gz",
                cfg,
                cluster,
                open_allocs,
                events,
                i,
                a,
                b,
            )
            files += 1
        bar.update(1)
    return files, rows, {"team_activity": team_act}


class _UsageJob(SimpleNamespace):
    """A stand-in job for :func:`write_sshare`: one attempt ``[start, now]`` whose decayed CPU
    usage equals a (team, user)'s total (so the bundled writer formats the file)."""


def _usage_stub(team: str, user: str, usage: float, now: int, lam: float) -> _UsageJob:
    # usage = cpus · (1 − e^{−λx}) / λ  →  x = −ln(1 − λ·usage / cpus) / λ, with cpus > λ·usage
    cpus = math.floor(lam * usage) + 2
    x = -math.log(1 - lam * usage / cpus) / lam
    att = SimpleNamespace(start=now - x, end=now)
    return _UsageJob(team=team, user=user, cpus=cpus, attempts=[att])


def write_state(
    out: Path, cfg: ScaleConfig, cluster: ClusterSpec, work: Path, events: list[NodeEvent]
) -> int:
    """Registry, inventory, ``events_<last day>.psv`` and ``sshare_<last day>.psv``; returns the
    number of files written."""
    w0, w1 = cfg.window
    (out / "inventory").mkdir(parents=True, exist_ok=True)
    write_registry(out / "registry.yaml")
    write_inventory(out / "inventory" / f"{cluster.name}.csv", cluster)
    state = out / "inputs" / cluster.name / "slurm_state"
    state.mkdir(parents=True, exist_ok=True)
    last = (cfg.start + dt.timedelta(days=cfg.days - 1)).isoformat()
    lt = LocalTime(cfg.tz)
    write_node_events(
        state / f"events_{last}.psv",
        cluster.name,
        events,
        w0 - 49 * DAY,
        w0,
        w1,
        lt,
        cluster_gpus=cluster.gpus,
    )
    half_life = 7 * DAY
    lam = math.log(2) / half_life
    usage = (
        pl.scan_parquet(work / "jobs" / "*.parquet")
        .filter(pl.col("start").is_not_null() & (pl.col("start") < w1))
        .with_columns(pl.col("end").fill_null(w1).clip(upper_bound=w1).alias("e"))
        .with_columns(
            (
                pl.col("gpus")
                * CPUS_PER_GPU
                * ((-lam * (w1 - pl.col("e"))).exp() - (-lam * (w1 - pl.col("start"))).exp())
                / lam
            ).alias("u")
        )
        .group_by("team", "user")
        .agg(pl.col("u").sum())
        .sort("team", "user")
        .collect()
    )
    stubs = [_usage_stub(t, u, x, w1, lam) for t, u, x in usage.iter_rows()]
    raw_shares = {t.name: round(t.share * 100) for t in TEAMS}
    raw_shares[DRIFT_TEAM] = DRIFT_RAW_SHARES
    write_sshare(
        state / f"sshare_{last}.psv",
        stubs,  # type: ignore[arg-type]
        raw_shares,
        w1,
        half_life_s=half_life,
    )
    return 4


def _nearest_rank(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[max(0, math.ceil(q * len(s)) - 1)], 2)


def planted(
    cfg: ScaleConfig, cluster: ClusterSpec, work: Path, events: list[NodeEvent], acc: dict[str, Any]
) -> dict[str, Any]:
    """The planted findings and calibration figures, measured on what was written."""
    w0, w1 = cfg.window
    jobs = pl.scan_parquet(work / "jobs" / "*.parquet")
    win = jobs.filter((pl.col("submit") >= w0) & (pl.col("submit") < w1)).with_columns(
        (
            (pl.col("end").fill_null(w1).clip(upper_bound=w1) - pl.col("start")).fill_null(0)
            * pl.col("gpus")
        ).alias("gpu_s")
    )
    cal = (
        win.select(
            pl.len().alias("jobs"),
            (pl.col("gpus") == 1).mean().alias("share_jobs_1_gpu"),
            (pl.col("gpu_s").filter(pl.col("gpus") >= 8).sum() / pl.col("gpu_s").sum()).alias(
                "share_gpu_time_jobs_ge_8_gpus"
            ),
            (pl.col("state").str.starts_with("NODE_FAIL")).sum().alias("node_fail_jobs"),
        )
        .collect()
        .row(0, named=True)
    )
    large = (
        win.filter(pl.col("gpus") >= 64)
        .with_columns(((pl.col("start").fill_null(w1) - pl.col("eligible")) / 3600).alias("wait_h"))
        .select("partition", "wait_h")
        .collect()
    )
    starved = large.filter(pl.col("partition") == STARVED_PARTITION)["wait_h"].to_list()
    rest = large.filter(pl.col("partition") != STARVED_PARTITION)["wait_h"].to_list()
    lemon_host = cluster.nodes[0].host
    lemon_events = [e for e in events if e.host == lemon_host]
    nf = (
        pl.scan_parquet(work / "allocs" / "*.parquet")
        .filter(pl.col("host") == lemon_host)
        .select("raw_id")
        .unique()
        .join(jobs.select("raw_id", "state"), on="raw_id")
        .filter(pl.col("state") == "NODE_FAIL")
        .collect()
    )
    ta = acc["team_activity"]
    means = {t: round(s / n, 4) for t, (n, s) in ta.items() if n}
    other = [v for t, v in means.items() if t != IDLE_TEAM]
    return {
        "seed": cfg.seed,
        "gpus": cluster.gpus,
        "days": cfg.days,
        "window": {"start": cfg.start.isoformat(), "days": cfg.days, "tz": cfg.tz},
        "calibration": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in cal.items()},
        "idle_team": {
            "team": IDLE_TEAM,
            "metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "mean_activity": means.get(IDLE_TEAM),
            "min_mean_activity_of_other_teams": min(other) if other else None,
        },
        "starved_large_jobs": {
            "cluster": cluster.name,
            "partition": STARVED_PARTITION,
            "min_gpus": 64,
            "cause": "bf_window 1 h below time limits of up to 3 days",
            "attempts": len(starved),
            "p50_wait_hours": _nearest_rank(starved, 0.5),
            "p90_wait_hours": _nearest_rank(starved, 0.9),
            "other_partitions_attempts": len(rest),
            "other_partitions_p90_wait_hours": _nearest_rank(rest, 0.9),
            "note": "waits of jobs still pending at the window end count up to the end",
        },
        "lemon_node": {
            "cluster": cluster.name,
            "host": lemon_host,
            "xid": 79,
            "down_events": len(lemon_events),
            "node_fail_attempts": nf.height,
            "fleet_down_events": len(events),
        },
        "registry_drift": {
            "team": DRIFT_TEAM,
            "registry_share": dict((t.name, t.share) for t in TEAMS)[DRIFT_TEAM],
            "sshare_raw_shares": DRIFT_RAW_SHARES,
        },
    }


def write_json(path: Path, obj: dict[str, Any]) -> None:
    """Sorted keys, two-space indent."""
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")
