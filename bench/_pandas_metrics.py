"""The metric-engine benchmark's baseline: the same computation written the obvious way in pandas.

What a competent analyst would write without the engine: each allocation (and each pending
wait, down interval) exploded into hours with ``pd.date_range`` + ``explode``, ``groupby`` for
the waterfall buckets, ``merge_asof`` for the XID rule and the share history, a Python-level
Kaplan–Meier loop per group, a ``groupby(...).apply`` water-filling per hour for fairness,
Python loops for merging down intervals. Exploded frames are reused where a pandas author
naturally would (allocation hours for occupancy and fair-share usage; pending hours for held
demand and fair-share demand; one set of attempt outcomes for waterfall and reliability), which
favours pandas.

It follows the definitions of METRICS.md as :mod:`metrics` implements them, and reports the same
check figures as ``bench_metrics.run_polars`` so the two sides can be compared number for number.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from bench._synth_fleet import AS_OF
from bench.bench_metrics import THETA, Timer

_ONE_H = pd.Timedelta(hours=1)
_ONE_US = pd.Timedelta(microseconds=1)
_LOSS = ["failed_work_infra", "failed_work_user", "preempted_work", "timeout_work"]
_LOST_COLS = [*_LOSS, "cancelled_work"]
_LEAVES = ["down", "planned_down", *_LOST_COLS, "allocated_idle", "goodput", "held", "idle"]
_ALLOC = _LEAVES[2:9]
_BUCKETS = [("<1", 0.0, 1.0), ("1", 1.0, 2.0), ("2-8", 2.0, 9.0), ("9-63", 9.0, 64.0),
            ("64-255", 64.0, 256.0), ("256-1023", 256.0, 1024.0),
            (">=1024", 1024.0, math.inf)]  # fmt: skip
_TTS_GROUPS = (
    ["source", "cluster", "bucket"],
    ["source", "cluster"],
    ["week", "source", "cluster", "bucket"],
    ["source", "cluster", "partition", "bucket"],
    ["source", "cluster", "team", "bucket"],
)


def hour_pieces(df: pd.DataFrame, start: str, end: str) -> pd.DataFrame:
    """Each row's [start, end) split at hour boundaries: ``hour`` and ``sec`` added."""
    df = df[df[end] > df[start]].copy()
    df["hour"] = [
        pd.date_range(s.floor("h"), e - _ONE_US, freq="h")
        for s, e in zip(df[start], df[end], strict=True)
    ]
    df = df.explode("hour")
    df["hour"] = pd.to_datetime(df["hour"], utc=True).astype("datetime64[us, UTC]")
    hour_end = df["hour"] + _ONE_H
    df["sec"] = (
        np.minimum(df[end], hour_end) - np.maximum(df[start], df["hour"])
    ).dt.total_seconds()
    return df


def size_bucket(g: pd.Series) -> pd.Series:
    out = pd.Series(None, index=g.index, dtype=object)
    for label, lo, hi in _BUCKETS:
        m = (g >= lo) & (g < hi) if lo > 0 else (g > 0) & (g < hi)
        out[m] = label
    return out


def monday(ts: pd.Series) -> pd.Series:
    day = ts.dt.floor("D")
    return day - pd.to_timedelta(day.dt.weekday, unit="D")


def nearest_rank(values: np.ndarray, q: float) -> float | None:
    v = np.sort(values[~np.isnan(values)])
    if v.size == 0:
        return None
    return float(v[max(math.ceil(q * v.size) - 1, 0)])


def km_percentiles(d: pd.DataFrame, qs: tuple[float, ...] = (0.5, 0.9, 0.99)) -> pd.Series:
    """Kaplan–Meier percentiles of one group, a Python loop over distinct durations."""
    use = d[d["started"].notna()]
    per_t = (
        use.assign(ev=use["started"].astype(bool), ce=~use["started"].astype(bool))
        .groupby("duration_s")[["ev", "ce"]]
        .sum()
        .sort_index()
    )
    at_risk = len(use)
    surv = 1.0
    found: dict[float, float | None] = {q: None for q in qs}
    for t, ev, ce in per_t.itertuples():
        if at_risk > 0:
            surv *= 1.0 - ev / at_risk
        for q in qs:
            if found[q] is None and surv <= 1.0 - q + 1e-9:
                found[q] = float(t)
        at_risk -= ev + ce
    started = use.loc[use["started"].astype(bool), "duration_s"].to_numpy(dtype=float)
    row: dict[str, object] = {
        "spells": len(use),
        "events": int(use["started"].astype(bool).sum()),
        "censored": int((~use["started"].astype(bool)).sum()),
        "excluded": int(d["started"].isna().sum()),
    }
    for q in qs:
        lab = f"p{q * 100:g}"
        row[f"km_{lab}_s"] = found[q]
        row[f"naive_{lab}_s"] = nearest_rank(started, q)
    return pd.Series(row)


def water_fill_hour(g: pd.DataFrame) -> pd.Series:
    """Weighted max-min fair split of the hour's capacity (progressive filling)."""
    cap = max(float(g["available_gpu_s"].iloc[0]), 0.0)
    w = g["share"].to_numpy(dtype=float)
    d = g["demand_gpu_s"].to_numpy(dtype=float)
    active = (w > 0) & (d > 0)
    fair = np.zeros(len(g))
    if d[active].sum() <= cap:
        fair[active] = d[active]
        return pd.Series(fair, index=g.index)
    left = cap
    open_ = active.copy()
    while open_.any():
        lam = left / w[open_].sum()
        sat = open_ & (d <= lam * w)
        if not sat.any():
            fair[open_] = lam * w[open_]
            break
        fair[sat] = d[sat]
        left -= d[sat].sum()
        open_ &= ~sat
    return pd.Series(fair, index=g.index)


def jain(x: pd.Series) -> float | None:
    x = x.dropna()
    sq = float((x * x).sum())
    return float(x.sum()) ** 2 / (len(x) * sq) if sq > 0 else None


def run_pandas(folder: Path) -> dict[str, object]:
    """Every metric family, pandas; returns timings and the same check figures as polars."""
    cut = pd.Timestamp(AS_OF).as_unit("us")
    tm = Timer()
    checks: dict[str, float] = {}
    names = ("jobs", "pending", "nodes", "shares", "down", "xid", "job_summary")
    d: dict[str, pd.DataFrame] = tm.run(
        "load", lambda: {n: pd.read_parquet(folder / f"{n}.parquet") for n in names}
    )
    jobs, pending, nodes = d["jobs"], d["pending"], d["nodes"]
    keep: dict[str, pd.DataFrame] = {}

    def occupancy() -> pd.DataFrame:
        dn = d["down"].copy()
        dn["end_at"] = np.minimum(dn["end_at"].fillna(cut), cut)
        dp = hour_pieces(dn, "start_at", "end_at")
        dp["gs"] = dp["gpus"] * dp["sec"]
        down = dp.pivot_table(index="hour", columns="state", values="gs", aggfunc="sum")
        a = jobs[jobs["start_at"].notna() & (jobs["gpus"] > 0)].copy()
        a["_end"] = np.minimum(a["end_at"].fillna(cut), cut)
        ap = hour_pieces(a[["team", "gpus", "start_at", "_end"]], "start_at", "_end")
        ap["gs"] = ap["gpus"] * ap["sec"]
        keep["alloc_pieces"] = ap
        alloc = ap.groupby("hour")["gs"].sum()
        hours = pd.date_range(alloc.index.min(), alloc.index.max(), freq="h").as_unit("us")
        occ = pd.DataFrame({"hour": hours})
        occ["capacity_gpu_s"] = float(nodes["gpus"].sum()) * 3600.0
        occ = occ.merge(alloc.rename("allocated_gpu_s"), left_on="hour", right_index=True,
                        how="left")  # fmt: skip
        occ = occ.merge(down, left_on="hour", right_index=True, how="left")
        occ["down_gpu_s"] = occ.get("down", 0.0)
        occ["planned_down_gpu_s"] = occ.get("planned", 0.0)
        occ = occ.fillna({"allocated_gpu_s": 0.0, "down_gpu_s": 0.0, "planned_down_gpu_s": 0.0})
        avail = occ["capacity_gpu_s"] - occ["down_gpu_s"] - occ["planned_down_gpu_s"]
        occ["occupancy"] = (occ["allocated_gpu_s"] / avail).where(avail > 0)
        return occ

    occ: pd.DataFrame = tm.run("occupancy", occupancy)
    checks["allocated_gpu_h"] = float(occ["allocated_gpu_s"].sum()) / 3600

    def outcomes() -> pd.DataFrame:
        o = jobs[jobs["start_at"].notna() & (jobs["start_at"] <= cut) & (jobs["gpus"] > 0)].copy()
        o["_rid"] = np.arange(len(o))
        o["counted_end_at"] = np.minimum(o["end_at"].fillna(cut), cut)
        o["_running"] = o["end_at"].isna() | (o["end_at"] > cut)
        o["_state"] = o["state"].str.strip().str.split(" ").str[0].str.upper()
        f = o.loc[(o["_state"] == "FAILED") & ~o["_running"], ["_rid", "cluster", "end_at",
                                                               "node_list"]]  # fmt: skip
        f = f.explode("node_list").rename(columns={"node_list": "host"}).dropna(subset=["host"])
        f = f.sort_values("end_at")
        x = d["xid"][["cluster", "host", "ts"]].dropna().sort_values("ts")
        hit = pd.merge_asof(f, x, left_on="end_at", right_on="ts", by=["cluster", "host"],
                            direction="backward", tolerance=pd.Timedelta(seconds=600))  # fmt: skip
        infra_rids = set(hit.loc[hit["ts"].notna(), "_rid"])
        o["infra_event"] = o["_rid"].isin(infra_rids)
        s = o["_state"]
        o["leaf"] = np.select(
            [o["_running"],
             s.isin(["NODE_FAIL", "BOOT_FAIL"]) | ((s == "FAILED") & o["infra_event"]),
             s.isin(["FAILED", "OUT_OF_MEMORY"]), s.isin(["PREEMPTED", "REQUEUED"]),
             s.isin(["TIMEOUT", "DEADLINE"]), s.isin(["CANCELLED", "REVOKED"])],
            ["goodput", "failed_work_infra", "failed_work_user", "preempted_work", "timeout_work",
             "cancelled_work"],
            default="goodput",
        )  # fmt: skip
        o["runtime_s"] = (o["counted_end_at"] - o["start_at"]).dt.total_seconds().clip(lower=0)
        o["lost_s"] = np.where(o["leaf"] != "goodput", o["runtime_s"], 0.0)
        o["lost_from_at"] = o["counted_end_at"] - pd.to_timedelta(
            (o["lost_s"] * 1e6).round().astype("int64"), unit="us"
        )
        return o

    def waterfall() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
        o = outcomes()
        keep["outcomes"] = o
        w0, w1 = occ["hour"].min(), occ["hour"].max() + _ONE_H
        o = o[(o["start_at"] < w1) & (o["counted_end_at"] > w0)]
        lo = o[o["leaf"] != "goodput"].copy()
        lo["_from"] = np.maximum(lo["lost_from_at"], w0)
        lo["_to"] = np.minimum(lo["counted_end_at"], w1)
        lp = hour_pieces(lo[["leaf", "gpus", "_from", "_to"]], "_from", "_to")
        lp["gs"] = lp["gpus"] * lp["sec"]
        lost = lp.pivot_table(index="hour", columns="leaf", values="gs", aggfunc="sum")
        ke = o[["gpus", "start_at", "lost_from_at"]].copy()
        ke["_from"] = np.maximum(ke["start_at"], w0)
        ke["_to"] = np.minimum(ke["lost_from_at"], w1)
        kp = hour_pieces(ke[["gpus", "_from", "_to"]], "_from", "_to")
        kp["gs"] = kp["gpus"] * kp["sec"]
        kept = kp.groupby("hour")["gs"].sum().rename("_kept")
        # Observed: hourly per-GPU telemetry joined to the attempts.
        tel = pd.read_parquet(folder / "gpu_hourly", columns=["cluster", "hpc_job", "attempt",
                                                              "hour", "activity"])  # fmt: skip
        tel = tel[tel["hpc_job"].notna() & tel["activity"].notna()]
        tel = tel[(tel["hour"] >= w0) & (tel["hour"] < w1)]
        j = tel.merge(
            o[["cluster", "job_id", "attempt", "gpus", "start_at", "lost_from_at",
               "counted_end_at", "leaf"]],
            left_on=["cluster", "hpc_job", "attempt"], right_on=["cluster", "job_id", "attempt"],
        )  # fmt: skip
        b, be = j["hour"], j["hour"] + _ONE_H
        g = np.minimum(1.0, j["gpus"]).clip(lower=0)
        j["kept_s"] = (np.minimum(be, j["lost_from_at"]) - np.maximum(b, j["start_at"])
                       ).dt.total_seconds().clip(lower=0)  # fmt: skip
        j["lost_s"] = (np.minimum(be, j["counted_end_at"]) - np.maximum(b, j["lost_from_at"])
                       ).dt.total_seconds().clip(lower=0)  # fmt: skip
        k = j[j["kept_s"] > 0]
        kk = pd.DataFrame({
            "hour": k["hour"],
            "leaf": np.where(k["activity"] < THETA, "allocated_idle", "goodput"),
            "observed_gpu_s": g[k.index] * k["kept_s"],
            "active_gpu_s": g[k.index] * k["kept_s"] * k["activity"],
        })  # fmt: skip
        lz = j[j["lost_s"] > 0]
        ll = pd.DataFrame({
            "hour": lz["hour"], "leaf": lz["leaf"],
            "observed_gpu_s": g[lz.index] * lz["lost_s"],
            "active_gpu_s": g[lz.index] * lz["lost_s"] * lz["activity"],
        })  # fmt: skip
        observed = pd.concat([kk, ll]).groupby(["hour", "leaf"], as_index=False).sum()
        idle_obs = (
            observed[observed["leaf"] == "allocated_idle"]
            .set_index("hour")["observed_gpu_s"]
            .rename("allocated_idle")
        )
        # Held demand: eligible pending spans (reused by fairness).
        pa = jobs[jobs["start_at"].notna()]
        spans = pd.concat([
            pd.DataFrame({"team": pa["team"],
                          "_gpus": np.where(pa["req_gpus"] > 0, pa["req_gpus"], pa["gpus"]),
                          "_from": pa["eligible_at"], "_to": np.minimum(pa["start_at"], cut)}),
            pd.DataFrame({"team": pending["team"], "_gpus": pending["req_gpus"],
                          "_from": pending["eligible_at"],
                          "_to": np.minimum(pending["end_at"].fillna(cut), cut)}),
        ])  # fmt: skip
        spans = spans[(spans["_gpus"] > 0) & (spans["_to"] > spans["_from"])]
        pp = hour_pieces(spans, "_from", "_to")
        pp["gs"] = pp["_gpus"] * pp["sec"]
        keep["pending_pieces"] = pp
        demand = pp[(pp["hour"] >= w0) & (pp["hour"] < w1)].groupby("hour")["gs"].sum()
        wide = occ[["hour", "capacity_gpu_s", "down_gpu_s", "planned_down_gpu_s"]].set_index("hour")
        wide = wide.join(lost).join(kept).join(idle_obs).join(demand.rename("_demand"))
        for c in [*_LOST_COLS, "_kept", "allocated_idle", "_demand"]:
            wide[c] = wide[c].fillna(0.0) if c in wide else 0.0
        allocated = wide[_LOST_COLS].sum(axis=1) + wide["_kept"]
        unalloc = (wide["capacity_gpu_s"] - wide["down_gpu_s"] - wide["planned_down_gpu_s"]
                   - allocated).clip(lower=0)  # fmt: skip
        wide["down"] = wide["down_gpu_s"]
        wide["planned_down"] = wide["planned_down_gpu_s"]
        wide["goodput"] = wide["_kept"] - wide["allocated_idle"]
        wide["held"] = np.minimum(unalloc, wide["_demand"])
        wide["idle"] = unalloc - wide["held"]
        long = wide.reset_index().melt(id_vars=["hour", "capacity_gpu_s"], value_vars=_LEAVES,
                                       var_name="leaf", value_name="gpu_s")  # fmt: skip
        wf = long.merge(observed, on=["hour", "leaf"], how="left").fillna(
            {"observed_gpu_s": 0.0, "active_gpu_s": 0.0}
        )
        sums = wf.groupby("hour").agg(cap=("capacity_gpu_s", "first"), leaves=("gpu_s", "sum"))
        bad = sums[(sums["leaves"] - sums["cap"]).abs() > 0.001 * sums["cap"].abs() + 1e-9]
        wf["day"] = wf["hour"].dt.date
        daily = wf.groupby("day").apply(_headline, include_groups=False)
        return wf, bad, daily

    wf, bad, _daily = tm.run("waterfall", waterfall)
    checks["conservation_violations"] = len(bad)
    for leaf, gs in wf.groupby("leaf")["gpu_s"].sum().items():
        checks[f"wf_{leaf}_gpu_h"] = float(gs) / 3600
    fleet = _headline(wf)
    for k in ("occupancy", "goodput_ratio", "allocated_activity", "telemetry_coverage"):
        checks[k] = fleet[k]

    def time_to_start() -> list[pd.DataFrame]:
        a = jobs.copy()
        st = a["start_at"]
        started = st.notna() & (st <= cut)
        stop = st.where(started, np.minimum(a["end_at"].fillna(cut), cut))
        el = a["eligible_at"]
        never = el.isna() | (el > cut) | (st.notna() & (el > st)) | (
            st.isna() & a["end_at"].notna() & (el > a["end_at"]))  # fmt: skip
        a["duration_s"] = (stop - el).dt.total_seconds().where(~never)
        a["started"] = started.astype(object).where(~never, None)
        a["size_gpus"] = a["gpus"].where(st.notna(), a["req_gpus"].fillna(a["gpus"]))
        p = pending.copy()
        pstop = np.minimum(p["end_at"].fillna(cut), cut)
        pnever = p["eligible_at"].isna() | (p["eligible_at"] > cut) | (
            p["end_at"].notna() & (p["eligible_at"] > p["end_at"]))  # fmt: skip
        p["duration_s"] = (pstop - p["eligible_at"]).dt.total_seconds().where(~pnever)
        p["started"] = pd.Series(False, index=p.index, dtype=object).where(~pnever, None)
        p["size_gpus"] = p["req_gpus"]
        sp = pd.concat([a, p], ignore_index=True)
        sp = sp[sp["size_gpus"] > 0].copy()
        sp["bucket"] = size_bucket(sp["size_gpus"])
        sp["week"] = monday(sp["eligible_at"])
        sp["partition"] = sp["partition"].fillna("(none)")
        sp["team"] = sp["team"].fillna("(none)")
        out = [
            sp.groupby(list(by), dropna=False)[["duration_s", "started"]]
            .apply(km_percentiles)
            .reset_index()
            for by in _TTS_GROUPS
        ]
        nv = jobs[(jobs["gpus"] > 0) & jobs["wait_s"].notna()].copy()
        nv["bucket"] = size_bucket(nv["gpus"])
        for by in (["source", "cluster", "bucket"], ["source", "cluster"]):
            out.append(
                nv.groupby(by)["wait_s"].agg(
                    jobs="size",
                    naive_p50_s=lambda v: nearest_rank(v.to_numpy(float), 0.5),
                    naive_p90_s=lambda v: nearest_rank(v.to_numpy(float), 0.9),
                    naive_p99_s=lambda v: nearest_rank(v.to_numpy(float), 0.99),
                )
            )
        return out

    tts: list[pd.DataFrame] = tm.run("time_to_start", time_to_start)
    overall = tts[1].iloc[0]
    for k in ("spells", "censored", "km_p50_s", "km_p90_s", "km_p99_s", "naive_p50_s"):
        checks[f"tts_{k}"] = float(overall[k])

    def fairness() -> list[pd.DataFrame]:
        ap = keep["alloc_pieces"]
        used = ap.groupby(["team", "hour"])["gs"].sum().rename("usage_gpu_s")
        pp = keep["pending_pieces"]
        waiting = pp.groupby(["team", "hour"])["gs"].sum().rename("pending_gpu_s")
        rows = pd.concat([used, waiting], axis=1).fillna(0.0).reset_index()
        rows["demand_gpu_s"] = rows["usage_gpu_s"] + rows["pending_gpu_s"]
        avail = occ[["hour"]].copy()
        avail["available_gpu_s"] = (occ["capacity_gpu_s"] - occ["down_gpu_s"]
                                    - occ["planned_down_gpu_s"]).clip(lower=0)  # fmt: skip
        rows = rows.merge(avail, on="hour")
        sh = d["shares"].copy()
        sh["_from"] = pd.to_datetime(sh["valid_from"]).dt.tz_localize("UTC").astype(
            "datetime64[us, UTC]")  # fmt: skip
        rows = pd.merge_asof(rows.sort_values("hour"), sh[["team", "share", "_from"]]
                             .sort_values("_from"), left_on="hour", right_on="_from",
                             by="team", direction="backward")  # fmt: skip
        rows["share"] = rows["share"].fillna(0.0)
        rows["fair_gpu_s"] = rows.groupby("hour", group_keys=False)[
            ["available_gpu_s", "share", "demand_gpu_s"]
        ].apply(water_fill_hour)
        out = [rows]
        sums = ["usage_gpu_s", "demand_gpu_s", "fair_gpu_s"]
        rows["week"] = monday(rows["hour"])
        rows["day"] = rows["hour"].dt.floor("D")
        for _pool in (True, False):  # per cluster, and fleet (one cluster here: computed twice)
            wk = rows.groupby(["week", "team"])[sums].sum().reset_index()
            daily = rows.groupby(["day", "team"])[sums].sum()
            days = pd.date_range(rows["day"].min(), rows["day"].max(), freq="D")
            grid = pd.MultiIndex.from_product([days, sorted(rows["team"].unique())],
                                              names=["day", "team"])  # fmt: skip
            daily = daily.reindex(grid, fill_value=0.0).reset_index()
            roll = daily.groupby("team")[sums].rolling(28, min_periods=1).sum()
            daily[sums] = roll.reset_index(level=0, drop=True).sort_index()
            daily["window_end"] = daily["day"] + pd.Timedelta(days=1)
            daily = daily[daily["window_end"].dt.weekday == 0]
            for ent, key in ((wk, "week"), (daily, "window_end")):
                ent["entitlement_ratio"] = (ent["usage_gpu_s"] / ent["fair_gpu_s"]).where(
                    ent["fair_gpu_s"] > 0)  # fmt: skip
                ent["unmet_gpu_s"] = (ent["fair_gpu_s"] - ent["usage_gpu_s"]).clip(lower=0)
                ent["debt_gpu_h"] = (ent["fair_gpu_s"] - ent["usage_gpu_s"]) / 3600
                out.append(ent)
                out.append(ent.groupby(key).apply(_fair_summary, include_groups=False))
        wj = jobs[(jobs["gpus"] > 0) & jobs["wait_s"].notna() & (jobs["wait_s"] >= 0)].copy()
        wj["window_start"] = monday(wj["eligible_at"])
        wj["bucket"] = size_bucket(wj["gpus"])
        keys = ["window_start", "cluster", "bucket"]
        ov = wj.groupby(keys)["wait_s"].mean().rename("overall_mean_wait_s")
        pt = wj.groupby([*keys, "team"])["wait_s"].agg(["size", "mean"]).reset_index()
        pt = pt.merge(ov, on=keys)
        pt["wait_ratio"] = pt["mean"] / pt["overall_mean_wait_s"]
        out.append(pt)
        return out

    fair: list[pd.DataFrame] = tm.run("fairness", fairness)
    checks["fair_gpu_h"] = float(fair[0]["fair_gpu_s"].sum()) / 3600
    checks["pending_gpu_h"] = float(fair[0]["pending_gpu_s"].sum()) / 3600
    checks["weekly_jain_mean"] = float(fair[2]["fairness_index"].mean())

    def reliability() -> list[pd.DataFrame]:
        o = keep["outcomes"].copy()
        o["_n"] = o["node_list"].map(len)
        o = o[o["_n"] > 0]
        o["_lost"] = o["gpus"] / o["_n"] * o["lost_s"]
        ex = o.explode("node_list").rename(columns={"node_list": "host"})
        ex["_nf"] = ex["state"].str.upper().str.startswith("NODE_FAIL")
        ex["_inf"] = ex["leaf"] == "failed_work_infra"
        ex["_lost_loss"] = ex["_lost"].where(ex["leaf"].isin(_LOSS), 0.0)
        ex["_lost_inf"] = ex["_lost"].where(ex["_inf"], 0.0)
        per = ex.groupby(["cluster", "host"]).agg(
            attempts=("leaf", "size"), node_fail_attempts=("_nf", "sum"),
            infra_failed_attempts=("_inf", "sum"), lost_gpu_s=("_lost_loss", "sum"),
            infra_lost_gpu_s=("_lost_inf", "sum"),
        )  # fmt: skip
        x = (
            d["xid"]
            .groupby(["cluster", "host"])
            .agg(
                xid_events=("xid", "size"), xid_codes=("xid", lambda v: sorted(v.dropna().unique()))
            )
        )
        down_rows = []
        dn = d["down"].copy()
        dn["end_at"] = np.minimum(dn["end_at"].fillna(cut), cut)
        for (c, h, planned), g in dn.sort_values("start_at").groupby(
            ["cluster", "host", "planned"]
        ):
            total, episodes, cur_s, cur_e = 0.0, 0, None, None
            for s_, e_ in zip(g["start_at"], g["end_at"], strict=True):
                if cur_e is None or s_ > cur_e:
                    if cur_e is not None:
                        total += (cur_e - cur_s).total_seconds()
                    cur_s, cur_e, episodes = s_, e_, episodes + 1
                else:
                    cur_e = max(cur_e, e_)
            if cur_e is not None:
                total += (cur_e - cur_s).total_seconds()
            down_rows.append((c, h, planned, total, episodes))
        dd = pd.DataFrame(down_rows, columns=["cluster", "host", "planned", "s", "episodes"])
        down = dd.pivot_table(index=["cluster", "host"], columns="planned", values="s",
                              aggfunc="sum", fill_value=0.0)  # fmt: skip
        down.columns = ["planned_down_s" if c else "down_s" for c in down.columns]
        eps = dd[~dd["planned"]].groupby(["cluster", "host"])["episodes"].sum()
        node = nodes.set_index(["cluster", "host"])[["rack"]]
        table = node.join(per, how="outer").join(x, how="outer").join(down, how="outer")
        table = table.join(eps.rename("down_episodes"), how="left").fillna(
            {"attempts": 0, "node_fail_attempts": 0, "infra_failed_attempts": 0, "xid_events": 0,
             "down_s": 0.0, "planned_down_s": 0.0, "down_episodes": 0, "lost_gpu_s": 0.0,
             "infra_lost_gpu_s": 0.0}
        ).reset_index()  # fmt: skip
        rate = table.groupby("cluster")["infra_failed_attempts"].transform("sum") / table.groupby(
            "cluster")["attempts"].transform("sum")  # fmt: skip
        table["expected_infra_failures"] = table["attempts"] * rate.fillna(0.0)
        table["lemon_score"] = (table["infra_failed_attempts"] + 1) / (
            table["expected_infra_failures"] + 1)  # fmt: skip
        table["infra_share"] = (table["infra_lost_gpu_s"] / table["lost_gpu_s"]).where(
            table["lost_gpu_s"] > 0)  # fmt: skip
        table = table.sort_values(["cluster", "lemon_score", "xid_events", "down_s", "host"],
                                  ascending=[True, False, False, False, True])  # fmt: skip
        table["lemon_rank"] = table.groupby("cluster").cumcount() + 1
        rack = table.groupby(["cluster", "rack"], dropna=False)[
            ["attempts", "infra_failed_attempts", "expected_infra_failures", "lost_gpu_s",
             "infra_lost_gpu_s", "xid_events", "down_s"]].sum()  # fmt: skip
        rack["lemon_score"] = (rack["infra_failed_attempts"] + 1) / (
            rack["expected_infra_failures"] + 1)  # fmt: skip
        # ETTR per run.
        o = keep["outcomes"]
        wait = (o["start_at"] - o["eligible_at"]).dt.total_seconds()
        lost = o["lost_s"].where(o["leaf"].isin(_LOSS), 0.0)
        e = pd.DataFrame({
            "cluster": o["cluster"], "job_id": o["job_id"], "team": o["team"], "gpus": o["gpus"],
            "_q": wait.where(wait >= 0, 0.0).fillna(0.0), "productive_s": o["runtime_s"] - lost,
            "unproductive_s": lost,
            "running": o["end_at"].isna() | (o["end_at"] > cut),
        })  # fmt: skip
        runs = e.groupby(["cluster", "job_id"]).agg(
            team=("team", "first"), attempts=("gpus", "size"), gpus=("gpus", "max"),
            queue_s=("_q", "sum"), productive_s=("productive_s", "sum"),
            unproductive_s=("unproductive_s", "sum"), running=("running", "any"),
        )  # fmt: skip
        pw = pending.copy()
        pw["_w"] = (
            np.minimum(pw["end_at"].fillna(cut), cut) - pw["eligible_at"]
        ).dt.total_seconds()
        again = pw[pw["_w"] > 0].groupby(["cluster", "job_id"])["_w"].sum()
        runs = runs.join(again.rename("_rq"), how="left")
        runs["queue_s"] += runs["_rq"].fillna(0.0)
        tot = runs["queue_s"] + runs["productive_s"] + runs["unproductive_s"]
        runs["ettr"] = (runs["productive_s"] / tot).where(tot > 0)
        return [table, rack, runs]

    rel: list[pd.DataFrame] = tm.run("reliability", reliability)
    checks["lost_gpu_h"] = float(rel[0]["lost_gpu_s"].sum()) / 3600
    checks["infra_lost_gpu_h"] = float(rel[0]["infra_lost_gpu_s"].sum()) / 3600
    checks["down_h"] = float(rel[0]["down_s"].sum()) / 3600
    checks["ettr_mean"] = float(rel[2]["ettr"].mean())

    def telemetry() -> pd.DataFrame:
        js = d["job_summary"].copy()
        js["_act"] = js["mean_activity"] * js["observed_gpu_s"]
        t = js.groupby(["cluster", "team"])[["gpu_s", "observed_gpu_s", "idle_gpu_s", "_act"]].sum()
        t["allocated_activity"] = t["_act"] / t["observed_gpu_s"]
        t["idle_gpu_h"] = t["idle_gpu_s"] / 3600
        return t.sort_values("idle_gpu_s", ascending=False)

    tel: pd.DataFrame = tm.run("telemetry_summary", telemetry)
    checks["idle_gpu_h"] = float(tel["idle_gpu_s"].sum()) / 3600

    def data_quality() -> pd.DataFrame:
        a = jobs[jobs["start_at"].notna()].copy()
        a["day"] = a["start_at"].dt.date
        per = a.groupby(["cluster", "day", "partition"]).agg(
            allocs=("gpus", "size"), with_gpus=("gpus", lambda g: int((g > 0).sum()))
        )
        return per[per["with_gpus"] == 0]

    dq: pd.DataFrame = tm.run("data_quality", data_quality)
    checks["dq_findings"] = len(dq)
    res = tm.result()
    res["checks"] = checks
    res["finished_at"] = dt.datetime.now(dt.UTC).isoformat()
    res["wall"] = time.perf_counter() - tm.t0
    return res


def _headline(wf: pd.DataFrame) -> pd.Series:
    alloc = wf["leaf"].isin(_ALLOC)
    cap = wf.loc[wf["leaf"] == "down", "capacity_gpu_s"].sum()
    down = wf.loc[wf["leaf"] == "down", "gpu_s"].sum()
    pdown = wf.loc[wf["leaf"] == "planned_down", "gpu_s"].sum()
    allocated = wf.loc[alloc, "gpu_s"].sum()
    good = wf.loc[wf["leaf"] == "goodput", "gpu_s"].sum()
    obs = wf.loc[alloc, "observed_gpu_s"].sum()
    act = wf.loc[alloc, "active_gpu_s"].sum()
    avail = cap - down - pdown
    return pd.Series({
        "capacity_gpu_s": cap, "allocated_gpu_s": allocated, "goodput_gpu_s": good,
        "occupancy": allocated / avail if avail > 0 else None,
        "goodput_ratio": good / cap if cap > 0 else None,
        "allocated_activity": act / obs if obs > 0 else None,
        "telemetry_coverage": obs / allocated if allocated > 0 else None,
    })  # fmt: skip


def _fair_summary(g: pd.DataFrame) -> pd.Series:
    counted = (g["demand_gpu_s"] > 0) & g["entitlement_ratio"].notna()
    fair = g["fair_gpu_s"].sum()
    return pd.Series({
        "teams": int(counted.sum()), "usage_gpu_s": g["usage_gpu_s"].sum(), "fair_gpu_s": fair,
        "fairness_index": jain(g.loc[counted, "entitlement_ratio"]),
        "unmet_entitlement": g["unmet_gpu_s"].sum() / fair if fair > 0 else None,
    })  # fmt: skip
