"""A seeded, vectorised synthetic GPU fleet for the metric-engine benchmark (one year by default).

Not the realistic simulator (``pipelines/sample_fleet``): this one only has to be big, plausible
and fast to build (numpy, no per-job Python). Layout:

- ``nodes`` nodes × 8 GPUs in racks of 32. The first 80 % run single-node jobs: each node is cut
  into *lanes* of 1, 2, 4 or 8 GPUs (a random layout per node); the rest are grouped into blocks
  of 2–32 whole nodes that run multi-node jobs (16–256 GPUs).
- Each lane runs a back-to-back sequence of jobs separated by gaps (log-normal durations, a heavy
  tail up to 7 days; exponential gaps), so capacity is never exceeded by construction.
- End states COMPLETED / FAILED / OUT_OF_MEMORY / NODE_FAIL / PREEMPTED / TIMEOUT / CANCELLED
  (a few "lemon" nodes fail 10× more often); a PREEMPTED or NODE_FAIL attempt is requeued as the
  next job of its lane (same ``job_id``, ``attempt`` + 1). The last job of a lane may still run
  at ``as_of`` (``end_at`` NULL, RUNNING).
- Node down intervals (unplanned and planned maintenance) on single-node-lane nodes: a job
  running when an unplanned one starts ends there in NODE_FAIL, jobs starting inside one are
  dropped, so down time and allocations never overlap.
- XID events: one at each NODE_FAIL, one in the last 10 minutes of 20 % of FAILED attempts (infra
  by the waterfall rule), and background ones.
- Never-started jobs (cancelled while pending, or still pending at ``as_of``: censored).
- Telemetry: per-job summaries (``job_gpu_summary`` columns) and hourly per-GPU aggregates
  (``cluster, host, gpu_uuid, hour, hpc_job, attempt, activity``; the job label is the job on
  that GPU at the hour's midpoint), written as Parquet parts.

:func:`write_fleet` writes every table as Parquet under a folder; :func:`read_fleet` loads them.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

CLUSTER = "bench"
YEAR0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
AS_OF = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SPAN_S = int((AS_OF - YEAR0).total_seconds())
HOURS = SPAN_S // 3600
GPUS_PER_NODE = 8
RACK_NODES = 32

#: Node layouts of single-node lanes (GPU widths summing to 8) and how often each is drawn.
_LAYOUTS: tuple[tuple[int, ...], ...] = (
    (8,), (4, 4), (4, 2, 2), (2, 2, 2, 2), (4, 2, 1, 1), (2, 2, 1, 1, 1, 1), (1,) * 8,
)  # fmt: skip
_LAYOUT_P = np.array([0.22, 0.22, 0.14, 0.12, 0.12, 0.10, 0.08])
_BLOCK_NODES = (32, 8, 8, 4, 4, 2, 2)

_STATES = np.array(
    ["COMPLETED", "FAILED", "OUT_OF_MEMORY", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL"]
)
_STATE_P = np.array([0.705, 0.12, 0.005, 0.08, 0.04, 0.04, 0.01])
N_TEAMS = 24

_TS = pl.Datetime("us", "UTC")


def _teams() -> list[str]:
    return ["recsys", *(f"team{i:02d}" for i in range(1, N_TEAMS))]


def _lanes(nodes: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Lanes: ``width`` GPUs, ``node0`` first node, ``nnodes`` nodes, ``gpu0`` first GPU index."""
    single = round(nodes * 0.8)
    width, node0, nnodes, gpu0 = [], [], [], []
    layouts = rng.choice(len(_LAYOUTS), size=single, p=_LAYOUT_P)
    for n, k in enumerate(layouts):
        off = 0
        for w in _LAYOUTS[k]:
            width.append(w)
            node0.append(n)
            nnodes.append(1)
            gpu0.append(off)
            off += w
    n = single
    i = 0
    while n < nodes:
        b = _BLOCK_NODES[i % len(_BLOCK_NODES)]
        while n + b > nodes:
            b //= 2
        width.append(b * GPUS_PER_NODE)
        node0.append(n)
        nnodes.append(b)
        gpu0.append(0)
        n += b
        i += 1
    return {
        "width": np.array(width, dtype=np.int64),
        "node0": np.array(node0, dtype=np.int64),
        "nnodes": np.array(nnodes, dtype=np.int64),
        "gpu0": np.array(gpu0, dtype=np.int64),
        "single_nodes": np.array([single]),
    }


def _down_intervals(
    single: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``node, start_s, end_s, planned``: about 2 per node-year, in distinct even months."""
    counts = rng.poisson(2.0, size=single).clip(0, 6)
    node = np.repeat(np.arange(single), counts)
    month = np.concatenate([rng.choice(6, size=c, replace=False) * 2 for c in counts]).astype(
        np.int64
    )
    month_s = SPAN_S // 12
    start = month * month_s + rng.integers(0, month_s - 4 * 86400, size=node.size)
    planned = rng.random(node.size) < 0.3
    dur = np.where(
        planned, rng.lognormal(np.log(8 * 3600), 0.5, node.size),
        rng.lognormal(np.log(4 * 3600), 1.0, node.size),
    ).clip(600, 3 * 86400).astype(np.int64)  # fmt: skip
    order = np.lexsort((start, node))
    return node[order], start[order], (start + dur)[order], planned[order]


def synthesise(nodes: int = 1250, *, seed: int = 7, dur_scale: float = 1.1) -> dict[str, Any]:
    """Build the fleet in memory as numpy arrays and small polars frames (see the module doc)."""
    rng = np.random.default_rng(seed)
    lanes = _lanes(nodes, rng)
    single = int(lanes["single_nodes"][0])
    n_lanes = lanes["width"].size
    multi = lanes["nnodes"] > 1
    # Durations (s): log-normal, heavy tail; multi-node jobs run longer. Gaps: exponential.
    mean_cycle = 9000.0 * dur_scale
    k = int(SPAN_S / mean_cycle * 1.6) + 64
    med = np.where(multi, 4 * 1800.0, 1800.0)[:, None] * dur_scale
    dur = (rng.lognormal(0.0, 1.6, size=(n_lanes, k)) * med).clip(30, 7 * 86400).astype(np.int64)
    gap = rng.exponential(2600.0 * dur_scale, size=(n_lanes, k)).astype(np.int64) + 1
    gap[:, 0] = rng.integers(0, 3600, size=n_lanes)
    start = np.cumsum(gap + dur, axis=1) - dur
    if (start[:, -1] < SPAN_S).any():
        raise RuntimeError("not enough jobs drawn per lane; raise k")
    lane_of = np.repeat(np.arange(n_lanes), k).reshape(n_lanes, k)
    keep = start < SPAN_S
    s = start[keep]
    e = s + dur[keep]
    lane = lane_of[keep]
    del start, dur, gap, lane_of, keep

    # Down intervals on single-node lanes: truncate a job running at an unplanned start (NODE_FAIL),
    # drop jobs that start inside or run into a down interval.
    d_node, d_s, d_e, d_planned = _down_intervals(single, rng)
    node = lanes["node0"][lane]
    forced_fail = np.zeros(s.size, dtype=bool)
    single_job = lanes["nnodes"][lane] == 1
    big = np.int64(SPAN_S * 4)
    dkey_s = d_node * big + d_s
    jkey_s = node * big + s
    # The first down interval of the node that ends after the job starts.
    idx = np.searchsorted(d_node * big + d_e, jkey_s, side="right")
    has = single_job & (idx < d_node.size)
    idx_c = np.minimum(idx, max(d_node.size - 1, 0))
    if d_node.size:
        hit = has & (d_node[idx_c] == node) & (dkey_s[idx_c] < node * big + e)
        starts_before = hit & (d_s[idx_c] > s)
        trunc = starts_before & ~d_planned[idx_c]
        e = np.where(trunc, d_s[idx_c], e)
        forced_fail = trunc
        drop = hit & ~trunc
        s, e, lane, node, forced_fail = (
            s[~drop],
            e[~drop],
            lane[~drop],
            node[~drop],
            forced_fail[~drop],
        )
    n = s.size

    # End states; lemon nodes fail 10x more often. Requeue after PREEMPTED / NODE_FAIL.
    lemon = rng.random(nodes) < 0.01
    state_i = rng.choice(len(_STATES), size=n, p=_STATE_P)
    lemon_job = lemon[node] & (rng.random(n) < 0.09)
    state_i = np.where(lemon_job | forced_fail, 6, state_i)
    running = e > SPAN_S
    width = lanes["width"][lane]
    new_lane = np.empty(n, dtype=bool)
    new_lane[0] = True
    new_lane[1:] = lane[1:] != lane[:-1]
    requeue_prev = np.zeros(n, dtype=bool)
    requeue_prev[1:] = np.isin(state_i[:-1], (5, 6)) & ~new_lane[1:]
    job_no = np.cumsum(~requeue_prev) - 1
    run_start = np.maximum.accumulate(np.where(~requeue_prev, np.arange(n), 0))
    attempt = np.arange(n) - run_start
    # Teams: Zipf-like weights; multi-node jobs mostly from the big training teams.
    teams = np.array(_teams())
    w = 1.0 / np.arange(1, N_TEAMS + 1) ** 0.9
    team_job = rng.choice(N_TEAMS, size=int(job_no[-1]) + 1, p=w / w.sum())
    team_i = team_job[job_no]
    part = np.where(
        multi[lane], "gpu-large", np.where((width == 1) & (job_no % 3 == 0), "debug", "gpu")
    )
    # Waits: eligible -> start, heavy-tailed, longer for large jobs; submit before eligible.
    wait = (rng.lognormal(np.log(120.0), 2.0, n) * np.sqrt(width)).clip(0, 14 * 86400)
    wait = np.minimum(wait, s + 30 * 86400.0).astype(np.int64)
    hold = np.where(rng.random(n) < 0.1, rng.exponential(600.0, n), 0.0).astype(np.int64)
    elig = s - wait
    submit = elig - hold

    # XID events: at NODE_FAIL ends, before 20 % of FAILED ends, and background noise.
    failed = (state_i == 1) & ~running
    infra = failed & (rng.random(n) < 0.2)
    nf = (state_i == 6) & ~running
    x_node = np.concatenate([node[nf], node[infra], rng.integers(0, nodes, 24 * nodes)])
    x_ts = np.concatenate(
        [
            e[nf],
            e[infra] - rng.integers(1, 600, int(infra.sum())),
            rng.integers(0, SPAN_S, 24 * nodes),
        ]
    )
    x_code = np.concatenate(
        [np.full(int(nf.sum()), 79), rng.choice([48, 63, 94, 31], int(infra.sum())),
         rng.choice([13, 31, 43], 24 * nodes)]
    )  # fmt: skip

    # Activity: per job from its team (recsys mostly idle), per GPU-hour with noise.
    team_mu = np.where(np.arange(N_TEAMS) == 0, 0.04, rng.uniform(0.35, 0.8, N_TEAMS))
    act = np.clip(rng.normal(team_mu[team_i], 0.15), 0.0, 1.0)
    idle_frac = np.where(act < 0.05, 1.0, rng.beta(1, 9, n))

    return {
        "nodes": nodes, "lanes": lanes, "single": single, "lemon": lemon,
        "s": s, "e": e, "lane": lane, "node": node, "state_i": state_i, "running": running,
        "width": width, "job_no": job_no, "attempt": attempt, "team_i": team_i, "part": part,
        "elig": elig, "submit": submit, "act": act, "idle_frac": idle_frac,
        "x_node": x_node, "x_ts": x_ts, "x_code": x_code,
        "d_node": d_node, "d_s": d_s, "d_e": d_e, "d_planned": d_planned,
        "teams": teams, "w": w, "rng": rng,
    }  # fmt: skip


def _ts(seconds: pl.Expr | str) -> pl.Expr:
    col = pl.col(seconds) if isinstance(seconds, str) else seconds
    return (pl.lit(YEAR0).dt.cast_time_unit("us") + pl.duration(seconds=col)).cast(_TS)


def _hosts(nodes: int) -> list[str]:
    return [f"gpu{i:05d}" for i in range(nodes)]


def write_fleet(out: Path, nodes: int = 1250, *, seed: int = 7, dur_scale: float = 1.1) -> None:
    """Synthesise and write ``jobs, pending, nodes, shares, down, xid, job_summary`` Parquet
    files and ``gpu_hourly/part-*.parquet`` under ``out``."""
    f = synthesise(nodes, seed=seed, dur_scale=dur_scale)
    out.mkdir(parents=True, exist_ok=True)
    rng: np.random.Generator = f["rng"]
    hosts = pl.Series("h", _hosts(nodes))
    lanes: dict[str, np.ndarray] = f["lanes"]
    teams: np.ndarray = f["teams"]
    lane = f["lane"]
    n_nodes_job = lanes["nnodes"][lane]
    s, e = f["s"], f["e"]
    running = f["running"]
    job_id = pl.Series("job_id", f["job_no"]).cast(pl.String)
    node_lists = pl.int_ranges(
        pl.Series(lanes["node0"][lane]), pl.Series(lanes["node0"][lane] + n_nodes_job),
        eager=True,
    )  # fmt: skip
    jobs = pl.DataFrame(
        {
            "source": "slurm",
            "cluster": CLUSTER,
            "job_id": job_id,
            "attempt": f["attempt"],
            "team": teams[f["team_i"]],
            "partition": f["part"],
            "state": np.where(running, "RUNNING", _STATES[f["state_i"]]),
            "gpus": f["width"].astype(np.float64),
            "req_gpus": f["width"].astype(np.float64),
            "_sub": f["submit"], "_elig": f["elig"], "_s": s,
            "_e": np.where(running, -1, e),
            "_nl": node_lists,
        }
    ).with_columns(
        _ts("_sub").alias("submit_at"),
        _ts("_elig").alias("eligible_at"),
        _ts("_s").alias("start_at"),
        pl.when(pl.col("_e") >= 0).then(_ts("_e")).alias("end_at"),
        pl.col("_nl").list.eval(pl.element().replace_strict(
            pl.int_range(0, nodes, eager=True), hosts, return_dtype=pl.String)).alias("node_list"),
    ).with_columns(
        ((pl.col("start_at") - pl.col("eligible_at")).dt.total_seconds()).cast(pl.Float64)
        .alias("wait_s"),
        ((pl.col("end_at") - pl.col("start_at")).dt.total_seconds()).cast(pl.Float64)
        .alias("run_s"),
    ).with_columns((pl.col("run_s") * pl.col("gpus")).alias("gpu_s")).drop(
        "_sub", "_elig", "_s", "_e", "_nl"
    )  # fmt: skip
    jobs.write_parquet(out / "jobs.parquet")

    # Per-job telemetry summaries (job_gpu_summary columns).
    gpu_s = ((np.minimum(e, SPAN_S) - s) * f["width"]).astype(np.float64)
    cov = np.where(rng.random(s.size) < 0.97, 1.0, 0.0)
    pl.DataFrame(
        {
            "source": "slurm", "cluster": CLUSTER, "job_id": job_id, "attempt": f["attempt"],
            "team": teams[f["team_i"]], "gpus": f["width"].astype(np.float64), "gpu_s": gpu_s,
            "observed_gpu_s": gpu_s * cov,
            "mean_activity": np.where(cov > 0, f["act"], np.nan),
            "idle_gpu_s": gpu_s * cov * f["idle_frac"],
            "peak_fb_used_mib": rng.uniform(1000, 80000, s.size),
            "xid_events": np.zeros(s.size, dtype=np.int64),
        }
    ).with_columns(pl.col("mean_activity").fill_nan(None)).write_parquet(
        out / "job_summary.parquet"
    )  # fmt: skip
    del jobs

    # Never-started jobs: ~2 % of attempts; cancelled while pending, or pending at as_of.
    n_p = int(s.size * 0.02)
    pe = rng.integers(0, SPAN_S, n_p)
    still = pe > SPAN_S - 3 * 86400
    pend_end = np.where(
        still, -1, np.minimum(pe + rng.lognormal(np.log(1800), 1.5, n_p), SPAN_S - 1)
    )
    w: np.ndarray = f["w"]
    req = rng.choice([1, 2, 4, 8, 16, 64, 256], size=n_p, p=[0.3, 0.2, 0.2, 0.2, 0.05, 0.04, 0.01])
    pl.DataFrame(
        {
            "cluster": CLUSTER, "source": "slurm",
            "job_id": pl.Series(np.arange(n_p) + 50_000_000).cast(pl.String),
            "partition": np.where(req > 8, "gpu-large", "gpu"),
            "team": teams[rng.choice(N_TEAMS, size=n_p, p=w / w.sum())],
            "req_gpus": req.astype(np.float64), "_pe": pe, "_end": pend_end.astype(np.int64),
            "state": np.where(still, "PENDING", "CANCELLED"),
        }
    ).with_columns(
        _ts("_pe").alias("submit_at"), _ts("_pe").alias("eligible_at"),
        pl.when(pl.col("_end") >= 0).then(_ts("_end")).alias("end_at"),
    ).drop("_pe", "_end").write_parquet(out / "pending.parquet")  # fmt: skip

    pl.DataFrame(
        {
            "cluster": CLUSTER, "host": hosts,
            "rack": pl.Series(np.arange(nodes) // RACK_NODES).cast(pl.String).str.zfill(3),
            "gpus": 8.0, "capacity_source": "inventory",
        }
    ).with_columns(("r" + pl.col("rack")).alias("rack")).write_parquet(
        out / "nodes.parquet"
    )  # fmt: skip

    share = w / w.sum()
    sh = pl.DataFrame({"team": teams, "share": share, "valid_from": dt.date(2024, 12, 1)})
    changed = sh.head(4).with_columns(
        (pl.col("share") * 0.7).alias("share"), pl.lit(dt.date(2025, 7, 1)).alias("valid_from")
    )
    pl.concat([sh, changed]).write_parquet(out / "shares.parquet")

    pl.DataFrame(
        {
            "cluster": CLUSTER, "event": "node", "node": hosts.gather(f["d_node"]),
            "_s": f["d_s"], "_e": f["d_e"], "planned": f["d_planned"],
            "gpus": 8.0,
        }
    ).with_columns(
        _ts("_s").alias("start_at"), _ts("_e").alias("end_at"),
        pl.when("planned").then(pl.lit("planned")).otherwise(pl.lit("down")).alias("state"),
        pl.when("planned").then(pl.lit("maint: driver upgrade"))
        .otherwise(pl.lit("GPU fell off bus"))
        .alias("reason"),
    ).drop("_s", "_e").rename({"node": "host"}).write_parquet(out / "down.parquet")  # fmt: skip

    pl.DataFrame(
        {"cluster": CLUSTER, "host": hosts.gather(f["x_node"]), "_t": f["x_ts"], "xid": f["x_code"]}
    ).with_columns(_ts("_t").alias("ts")).drop("_t").write_parquet(out / "xid.parquet")

    _write_gpu_hourly(out / "gpu_hourly", f, hosts, rng)


def _write_gpu_hourly(
    folder: Path, f: dict[str, Any], hosts: pl.Series, rng: np.random.Generator
) -> None:
    """Hourly per-GPU activity: one row per GPU and hour of the year; ``hpc_job``/``attempt``
    name the job on that GPU at the hour's midpoint (NULL when none)."""
    folder.mkdir(parents=True, exist_ok=True)
    lanes: dict[str, np.ndarray] = f["lanes"]
    nodes = int(f["nodes"])
    s: np.ndarray = f["s"]
    e: np.ndarray = f["e"]
    lane: np.ndarray = f["lane"]
    act: np.ndarray = f["act"]
    idle_frac: np.ndarray = f["idle_frac"]
    # Lane of each GPU (node-major).
    gpu_lane = np.empty(nodes * GPUS_PER_NODE, dtype=np.int64)
    for li in range(lanes["width"].size):
        n0, nn, g0, w = (
            lanes["node0"][li],
            lanes["nnodes"][li],
            lanes["gpu0"][li],
            lanes["width"][li],
        )
        for nd in range(n0, n0 + nn):
            per = min(w, GPUS_PER_NODE)
            gpu_lane[nd * GPUS_PER_NODE + g0 : nd * GPUS_PER_NODE + g0 + per] = li
    # Job at each lane-hour midpoint.
    mids = np.arange(HOURS, dtype=np.int64) * 3600 + 1800
    big = np.int64(SPAN_S * 4)
    jkey = lane * big + s
    chunk_nodes = 125
    for c0 in range(0, nodes, chunk_nodes):
        g = np.arange(c0 * GPUS_PER_NODE, min(nodes, c0 + chunk_nodes) * GPUS_PER_NODE)
        gl = gpu_lane[g]
        q = (gl[:, None] * big + mids[None, :]).ravel()
        idx = np.searchsorted(jkey, q, side="right") - 1
        idx_c = np.maximum(idx, 0)
        on = (idx >= 0) & (lane[idx_c] == np.repeat(gl, HOURS)) & (e[idx_c] > np.tile(mids, g.size))
        j = np.where(on, idx_c, -1)
        noise = rng.normal(0.0, 0.05, j.size)
        idle_hour = rng.random(j.size) < idle_frac[idx_c]
        a = np.where(
            on, np.where(idle_hour, 0.01, np.clip(act[idx_c] + noise, 0.0, 1.0)), 0.0
        ).astype(np.float32)
        job_no: np.ndarray = f["job_no"]
        attempt: np.ndarray = f["attempt"]
        pl.DataFrame(
            {
                "cluster": CLUSTER,
                "host": hosts.gather(np.repeat(g // GPUS_PER_NODE, HOURS)),
                "gpu_uuid": pl.Series(np.repeat(g, HOURS)).cast(pl.String),
                "_h": np.tile(np.arange(HOURS, dtype=np.int64) * 3600, g.size),
                "hpc_job": pl.Series(np.where(on, job_no[idx_c], -1)),
                "attempt": np.where(on, attempt[idx_c], -1),
                "activity": a,
            }
        ).with_columns(
            _ts("_h").alias("hour"),
            pl.when(pl.col("hpc_job") >= 0)
            .then(pl.col("hpc_job").cast(pl.String))
            .alias("hpc_job"),
            pl.when(pl.col("attempt") >= 0).then(pl.col("attempt")).alias("attempt"),
            ("GPU-" + pl.col("gpu_uuid")).alias("gpu_uuid"),
        ).drop("_h").write_parquet(folder / f"part-{c0:05d}.parquet")  # fmt: skip


def read_fleet(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, pl.DataFrame]:
    """The tables of a written fleet but ``skip`` (``gpu_hourly`` always stays on disk)."""
    names = ("jobs", "pending", "nodes", "shares", "down", "xid", "job_summary")
    return {n: pl.read_parquet(folder / f"{n}.parquet") for n in names if n not in skip}
