"""The sample fleet's Slurm-on-Kubernetes pair (``sok-c`` in NodeSet pods on ``k8s-c``): its
inputs load, every planted finding is detected, fleet GPU-hours are the same whichever way summed,
and the naive sum differs from the reconciled one by the stated rate."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.sample_fleet._slurm_on_k8s import K8S_CLUSTER, SOK_CLUSTER, write_slurm_on_k8s
from pipelines.sample_fleet._writers import write_registry
from pipelines.warehouse import connect, init_warehouse

START = dt.date(2026, 11, 2)


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict, duckdb.DuckDBPyConnection]]:
    """The pair generated, ingested and built in a warehouse of its own."""
    out = tmp_path_factory.mktemp("sok-fleet")
    planted, cfg = _write_pair(out)
    con = duckdb.connect(str(cfg.warehouse_path))
    init_warehouse(con)
    _load_pair(con, out)
    rebuild(con, cfg, full=True)
    yield planted, con
    con.close()


def _write_pair(out: Path) -> tuple[dict, Config]:
    """The pair's inputs, a registry and a ``goodput.toml`` (sok-c in slurmd pods on k8s-c)
    written under ``out``: the planted findings and the configuration."""
    planted = write_slurm_on_k8s(out, seed=7, start=START)
    write_registry(out / "registry.yaml")
    cfg_path = out / "goodput.toml"
    cfg_path.write_text(
        f'default_cluster = "{SOK_CLUSTER}"\n[warehouse]\npath = "w.duckdb"\n'
        'inputs = "inputs"\ninventory = "inventory"\nregistry = "registry.yaml"\n'
        f'[[clusters]]\nname = "{SOK_CLUSTER}"\nscheduler = "slurm"\nslurm_on_k8s = "A"\n'
        f'kubernetes_cluster = "{K8S_CLUSTER}"\n'
        f'[[clusters]]\nname = "{K8S_CLUSTER}"\nscheduler = "kubernetes"\n',
        encoding="utf-8",
    )
    return planted, load_config(cfg_path)


def _load_pair(
    con: duckdb.DuckDBPyConnection, out: Path, *, sacct: bool = True
) -> dict[str, list[int]]:
    """Load the pair written under ``out`` (:func:`_write_pair`): sok-c's sacct files (unless
    ``sacct`` is false) and node comments, k8s-c's pods files and the fixture's DCGM samples
    (:func:`_write_dcgm`), in that order. Returns the loads' ids by kind, in load order."""
    s_in, k_in = out / "inputs" / SOK_CLUSTER, out / "inputs" / K8S_CLUSTER
    ids: dict[str, list[int]] = {}
    for kind, cluster, files in (
        ("sacct", SOK_CLUSTER, sorted((s_in / "sacct").glob("*.psv")) if sacct else []),
        ("slurm-state", SOK_CLUSTER, sorted((s_in / "slurm_state").glob("*.txt"))),
        ("k8s-pods", K8S_CLUSTER, sorted((k_in / "k8s").glob("pods_*.json"))),
        ("dcgm", K8S_CLUSTER, [_write_dcgm(out / "dcgm_k8s-c.prom")]),
    ):
        for f in files:
            loaded = ingest_file(con, kind, f, IngestOptions(cluster=cluster))
            ids.setdefault(kind, []).append(loaded.ingest_id)
    return ids


#: The DCGM samples the pair's fixture adds (dcgm-exporter text, as k8s-c's exporter writes it):
#: kc-node-01's 8 GPUs, owned by slurmd pod slurm/slurm-worker-sok-0 (Slurm node sok-0), at
#: 2026-11-03 13:00 and 13:05 UTC (Slurm job 5008 holds all 8 GPUs of sok-0 12:08–15:31), gr
#: engine active 0.75; and GPU 0 of kc-node-04 owned by native pod infra/serve-16 at 11:00 (0.5).
#: GPU 3 of kc-node-01 also reports ``DCGM_FI_DEV_XID_ERRORS`` 0 at 13:00 and 79 at 13:05 (one
#: XID event on a slurmd-held GPU: the bundled pair itself writes no DCGM).
_T13 = int(dt.datetime(2026, 11, 3, 13, tzinfo=dt.UTC).timestamp() * 1000)
_T11 = int(dt.datetime(2026, 11, 3, 11, tzinfo=dt.UTC).timestamp() * 1000)


def _write_dcgm(path: Path) -> Path:
    metric = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    lines = [f"# HELP {metric} Ratio of time the graphics engine is active.",
             f"# TYPE {metric} gauge"]  # fmt: skip

    def line(host: str, g: int, ns: str, pod: str, value: float, ms: int) -> str:
        return (
            f'{metric}{{gpu="{g}",UUID="GPU-{host}-{g}",device="nvidia{g}",'
            f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",container="c",'
            f'namespace="{ns}",pod="{pod}"}} {value} {ms}'
        )

    for ms in (_T13, _T13 + 300_000):
        lines += [line("kc-node-01", g, "slurm", "slurm-worker-sok-0", 0.75, ms) for g in range(8)]
    lines.append(line("kc-node-04", 0, "infra", "serve-16", 0.5, _T11))
    # GPU 3 of kc-node-01 (slurmd pod slurm-worker-sok-0) reports XID 79 from 13:05: one event.
    xid = "DCGM_FI_DEV_XID_ERRORS"
    lines += [f"# HELP {xid} Value of the last XID error encountered.", f"# TYPE {xid} gauge"]
    for ms, value in ((_T13, 0), (_T13 + 300_000, 79)):
        lines.append(line("kc-node-01", 3, "slurm", "slurm-worker-sok-0", value, ms).replace(
            metric, xid, 1))  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _q(con: duckdb.DuckDBPyConnection, sql: str) -> pl.DataFrame:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description or []]
    return pl.DataFrame(cur.fetchall(), schema=names, orient="row")


def test_the_pair_has_its_own_stream_and_is_deterministic(tmp_path: Path) -> None:
    """Same seed, same bytes; another seed, other jobs."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    write_slurm_on_k8s(a, seed=7, start=START)
    write_slurm_on_k8s(b, seed=7, start=START)
    write_slurm_on_k8s(c, seed=8, start=START)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert len(files) == 1 + 2 + 2 + 8 + 1  # inventory, pods, sacct, comments, planted
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    sacct = Path("inputs") / SOK_CLUSTER / "sacct" / "sacct_2026-11-02.psv"
    assert (a / sacct).read_bytes() != (c / sacct).read_bytes()


def test_every_planted_finding_is_detected(built: tuple[dict, duckdb.DuckDBPyConnection]) -> None:
    """GRES mismatch on sok-1 (8 GPUs in a pod of 6 for 2 h: 2 × 7 200 = 14 400 GPU-s in
    excess); sok-2's migration kc-node-03 → kc-node-04 during job 6002; slurmd-held idle on
    kc-node-01 through 10:00–14:00 of the first day (sok-0 empty, two pods pending: 8 GPUs ×
    3 600 s = 28 800 GPU-s each hour)."""
    planted, con = built
    dq = _q(
        con, f"SELECT \"check\", value, detail FROM data_quality WHERE cluster = '{SOK_CLUSTER}'"
    )
    gres = dq.filter(pl.col("check") == "sok_gres_mismatch")
    assert gres["value"].sum() == planted["gres_mismatch"]["excess_gpu_s"] == 14400
    assert all("kc-node-02" in d for d in gres["detail"])
    moved = dq.filter(pl.col("check") == "sok_node_migration")
    assert moved.select("value", "detail").rows() == [
        (2.0, "job 6002 attempt 0: Slurm node sok-2 moved between Kubernetes nodes "
              "kc-node-03 → kc-node-04"),
    ]  # fmt: skip
    held = _q(
        con,
        "SELECT hour, slurmd_held_idle_gpu_s, slurm_idle_gpu_s FROM slurm_on_k8s_hourly "
        "WHERE k8s_node = 'kc-node-01' AND hour >= TIMESTAMPTZ '2026-11-02 10:00:00+00' "
        "AND hour < TIMESTAMPTZ '2026-11-02 14:00:00+00' ORDER BY hour",
    )
    assert held["slurmd_held_idle_gpu_s"].to_list() == [28800.0] * 4
    assert held["slurm_idle_gpu_s"].to_list() == [28800.0] * 4
    # no Slurm-on-Kubernetes finding the generator did not plant; sok-c has no inventory of its
    # own, but its capacity is what the pods lend, not its observed nodes (no such finding)
    sok = {c for c in dq["check"] if c.startswith("sok_")}
    assert sok == {"sok_gres_mismatch", "sok_node_migration"}
    assert "capacity_from_observed_nodes" not in set(dq["check"])
    # Every account and namespace of the pair is a registry team's, and the slurmd pods'
    # GPU-hours are sok-c's capacity, counted by its own jobs, not a team's work the registry
    # misses (mapping their namespace would count them twice): no GPU-hour is unattributed.
    unattributed = _q(
        con,
        "SELECT cluster, day, detail FROM data_quality WHERE \"check\" = 'unattributed_gpu_hours'",
    )
    assert unattributed.rows() == []


def test_fleet_gpu_hours_are_the_same_whichever_way_summed(
    built: tuple[dict, duckdb.DuckDBPyConnection],
) -> None:
    """Per node-hour and in total: capacity = lent + native + k8s idle (the Kubernetes view)
    = reconciled + k8s idle + Slurm idle (each GPU-second once); the Slurm side sums to the
    lent capacity."""
    _planted, con = built
    h = _q(con, "SELECT * FROM slurm_on_k8s_hourly")
    k8s_view = h["lent_to_slurm_gpu_s"] + h["k8s_native_gpu_s"] + h["k8s_idle_gpu_s"]
    once = h["reconciled_gpu_s"] + h["k8s_idle_gpu_s"] + h["slurm_idle_gpu_s"]
    assert (k8s_view - h["capacity_gpu_s"]).abs().max() <= 1e-9
    assert (once - h["capacity_gpu_s"]).abs().max() <= 1e-9
    slurm_view = h["slurm_allocated_gpu_s"] + h["slurm_idle_gpu_s"]
    assert (slurm_view - h["lent_to_slurm_gpu_s"]).abs().max() <= 1e-9
    assert once.sum() == pytest.approx(h["capacity_gpu_s"].sum(), abs=1e-6)


def test_naive_and_reconciled_differ_by_the_stated_rate(
    built: tuple[dict, duckdb.DuckDBPyConnection],
) -> None:
    """The view's Σ naive and Σ reconciled are the generator's own (from its jobs and pods, not
    from the pipeline), and (naive − reconciled) ÷ reconciled is the stated rate."""
    planted, con = built
    naive, rec = con.execute(
        "SELECT sum(naive_gpu_s), sum(reconciled_gpu_s) FROM slurm_on_k8s_hourly"
    ).fetchone()
    stated = planted["gpu_seconds"]
    assert (naive, rec) == (pytest.approx(stated["naive"], abs=1e-6),
                            pytest.approx(stated["reconciled"], abs=1e-6))  # fmt: skip
    assert (naive - rec) / rec == pytest.approx(stated["double_count_rate"], rel=1e-12)
    print(f"\nsok-c: naive {naive / 3600:.1f} GPU-h, reconciled {rec / 3600:.1f} GPU-h, "
          f"rate {(naive - rec) / rec:.4f}")  # fmt: skip
    assert json.loads(json.dumps(stated))["double_count_rate"] > 0


def test_existing_clusters_keep_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """slurm-a's and k8s-b's inputs, the registry, their inventories and planted.json are byte for
    byte what the generator writes without the Slurm-on-Kubernetes pair (its own RNG stream)."""
    from pipelines.sample_fleet import _generate, generate_sample_fleet

    with_pair, without = tmp_path / "with", tmp_path / "without"
    generate_sample_fleet(with_pair, seed=7, days=1)
    monkeypatch.setattr(_generate, "write_slurm_on_k8s", lambda *a, **k: {})
    generate_sample_fleet(without, seed=7, days=1)
    old = sorted(p.relative_to(without) for p in without.rglob("*") if p.is_file())
    assert {"planted.json", "registry.yaml"} <= {str(p) for p in old}
    assert any(str(p).startswith("inputs/slurm-a/") for p in old)
    assert any(str(p).startswith("inputs/k8s-b/") for p in old)
    for rel in old:
        assert (with_pair / rel).read_bytes() == (without / rel).read_bytes(), rel
    new = {str(p.relative_to(with_pair)) for p in with_pair.rglob("*") if p.is_file()}
    added = new - {str(p) for p in old}
    assert all(
        a.startswith(("inputs/sok-c/", "inputs/k8s-c/"))
        or a in ("inventory/k8s-c.csv", "planted_slurm_on_k8s.json")
        for a in added
    ), added


def test_fleet_tables_count_each_gpu_second_once(
    built: tuple[dict, duckdb.DuckDBPyConnection],
) -> None:
    """occupancy_hourly: in every hour of k8s-c, capacity(sok-c) + capacity(k8s-c) = the 4
    machines × 8 GPUs × 3 600 = 115 200 GPU-s; from the first day's 00:00 the slurmd pods hold
    8 + 6 + 8 = 22 GPUs, so k8s-c keeps 10 × 3 600 = 36 000 and sok-c has 22 × 3 600 = 79 200
    (at 23:00 of the second day the pods end at 23:50: 22 × 3 000 = 66 000 lent, 115 200 −
    66 000 = 49 200 left). The slurmd pods are not k8s-c's allocation (its allocated never
    exceeds its 36 000) and the waterfall's leaves sum to each cluster's capacity in every
    cluster-hour. The double-count rate is untouched (the last test)."""
    _planted, con = built
    occ = _q(con, "SELECT cluster, hour, capacity_gpu_s, allocated_gpu_s, capacity_source "
                  "FROM occupancy_hourly WHERE cluster IN ('sok-c', 'k8s-c')")  # fmt: skip
    occ = occ.with_columns(pl.col("hour").dt.convert_time_zone("UTC"))
    k8s_hours = occ.filter(pl.col("cluster") == K8S_CLUSTER)["hour"]
    assert k8s_hours.len() == 48
    per_hour = occ.group_by("hour").agg(pl.col("capacity_gpu_s").sum())
    assert per_hour.height == 48
    assert per_hour["capacity_gpu_s"].to_list() == [115200.0] * 48
    first = occ.filter(pl.col("hour") == dt.datetime(2026, 11, 2, tzinfo=dt.UTC))
    assert dict(first.select("cluster", "capacity_gpu_s").rows()) == {
        K8S_CLUSTER: 36000.0, SOK_CLUSTER: 79200.0,
    }  # fmt: skip
    last = occ.filter(pl.col("hour") == dt.datetime(2026, 11, 3, 23, tzinfo=dt.UTC))
    assert dict(last.select("cluster", "capacity_gpu_s").rows()) == {
        K8S_CLUSTER: 49200.0, SOK_CLUSTER: 66000.0,
    }  # fmt: skip
    assert set(occ.filter(pl.col("cluster") == SOK_CLUSTER)["capacity_source"]) == {
        "lent_by_kubernetes"
    }
    k8s = occ.filter(pl.col("cluster") == K8S_CLUSTER)
    assert (k8s["allocated_gpu_s"] <= k8s["capacity_gpu_s"]).all()
    # first hour: native pod infra/serve-0 (2 GPUs) only: 2 × 3 600 = 7 200
    assert first.filter(pl.col("cluster") == K8S_CLUSTER)["allocated_gpu_s"].item() == 7200.0
    wf = _q(con, "SELECT cluster, hour, sum(gpu_s) AS leaves, max(capacity_gpu_s) AS cap "
                 "FROM gpu_waterfall_hourly WHERE cluster IN ('sok-c', 'k8s-c') "
                 "GROUP BY ALL")  # fmt: skip
    assert wf.height == 48 + 48
    assert (wf["leaves"] - wf["cap"]).abs().max() <= 1e-6
    assert wf.group_by("hour").agg(pl.col("cap").sum())["cap"].to_list() == [115200.0] * 48


def test_no_team_uses_the_slurmd_pods_gpus_again(
    built: tuple[dict, duckdb.DuckDBPyConnection],
) -> None:
    """The slurmd pods' GPUs are sok-c's capacity and its jobs' usage: in the fair shares of
    k8s-c no team uses more than k8s-c has left once the pods are lent (its teams' usage in an
    hour is that hour's allocation, at most 36 000 in the first), and no team's usage there is
    the pods' (before: the pods' namespace's team used their 22 GPUs again, 79,200 GPU-s in an
    hour of 36,000 available)."""
    _planted, con = built
    fair = _q(
        con,
        "SELECT hour, sum(usage_gpu_s) AS used, max(available_gpu_s) AS avail"
        " FROM analytics.fair_share_hourly WHERE cluster = 'k8s-c' GROUP BY hour",
    )
    assert fair.height > 0
    assert (fair["used"] <= fair["avail"] + 1e-6).all()
    occ = _q(con, "SELECT hour, allocated_gpu_s FROM occupancy_hourly WHERE cluster = 'k8s-c'")
    joined = fair.join(occ, on="hour")
    assert joined.height == fair.height
    assert (joined["used"] - joined["allocated_gpu_s"]).abs().max() <= 1e-6


def test_slurmd_telemetry_is_the_slurm_jobs(
    built: tuple[dict, duckdb.DuckDBPyConnection],
) -> None:
    """The slurmd pod's samples (kc-node-01, pod slurm-worker-sok-0) belong to Slurm node sok-0
    and, by the whole-node rule, to job 5008 (8 GPUs = all of sok-0): 8 GPUs × 2 five-minute
    buckets; its summary observes min(8 seen, 8 allocated) × 300 s × 2 buckets = 4 800 GPU-s at
    mean activity 0.75. No k8s-c row names a slurmd pod's job; the native pod's sample stays
    k8s-c's infra/serve-16 (1 bucket × 1 GPU × 300 s = 300 GPU-s, activity 0.5)."""
    _planted, con = built
    ga = _q(con, "SELECT cluster, host, job_id, attempt, attribution, activity "
                 "FROM gpu_activity")  # fmt: skip
    sok = ga.filter(pl.col("cluster") == SOK_CLUSTER)
    assert sok.height == 16
    assert set(sok.select("host", "job_id", "attempt", "attribution").rows()) == {
        ("sok-0", "5008", 0, "whole_node")
    }
    assert sok["activity"].to_list() == [0.75] * 16
    k8s = ga.filter(pl.col("cluster") == K8S_CLUSTER)
    assert k8s.select("host", "job_id", "attribution", "activity").rows() == [
        ("kc-node-04", "infra/serve-16", "pod", 0.5)
    ]
    assert not k8s["job_id"].str.starts_with("slurm/").any()
    summ = _q(con, "SELECT cluster, job_id, observed_gpu_s, mean_activity FROM job_gpu_summary "
                   "WHERE observed_gpu_s > 0 ORDER BY cluster, job_id")  # fmt: skip
    assert summ.rows() == [
        (K8S_CLUSTER, "infra/serve-16", 300.0, 0.5),
        (SOK_CLUSTER, "5008", 4800.0, 0.75),
    ]
    slurmd_jobs = _q(con, "SELECT job_id FROM job_gpu_summary WHERE job_id LIKE 'slurm/%'")
    assert slurmd_jobs.height == 0


def test_the_pair_by_explicit_days_equals_the_full_build(
    built: tuple[dict, duckdb.DuckDBPyConnection],
) -> None:
    """The incremental window path (each cluster's own telemetry window; sok-c's also reads
    k8s-c's samples, each window keeps its own cluster's rows) asked for every day gives the
    full build's four time-keyed tables, row for row, with the slurmd pods' telemetry on sok-c."""
    from pipelines.analytics.build import (
        _known_inventory,
        _occupancy,
        _read_raw,
        _read_registry,
        _without_slurmd,
    )
    from pipelines.analytics.slurm_on_k8s import slurm_on_k8s_tables
    from pipelines.analytics.windows import WINDOW_TABLES, window_tables
    from pipelines.core import BuildUnit, build_core
    from tests.pipelines.test_incremental import _assert_frames_close

    _planted, con = built
    cfg_path = Path(con.execute("PRAGMA database_list").fetchall()[0][2]).parent / "goodput.toml"
    cfg = load_config(cfg_path)
    raw = _read_raw(con)
    core = build_core(raw, _read_registry(cfg.registry_path), _known_inventory(cfg, raw, con)[0],
                      BuildUnit.everything())  # fmt: skip
    sok = slurm_on_k8s_tables(con, cfg, core)
    occ = _occupancy(core, sok)
    args = dict(
        jobs=_without_slurmd(core.jobs, sok.slurmd_jobs), pending=core.pending, occupancy=occ,
        as_of=core.as_of, pod_jobs=core.pod_jobs, nodes=core.nodes,
        idle_threshold=cfg.idle_activity, slurmd_maps=sok.slurmd_maps,
    )  # fmt: skip
    every = window_tables(con, **args)  # type: ignore[arg-type]
    days: dict[str, set] = {}
    for c, d in occ.select("cluster", pl.col("hour").dt.date().alias("d")).unique().rows():
        days.setdefault(c, set()).add(d)
    explicit = window_tables(con, **args, days=days)  # type: ignore[arg-type]
    for t in WINDOW_TABLES:
        a = every.tables[t]
        b = explicit.tables[t].select(a.columns)
        assert a.height > 0, t
        _assert_frames_close(a, b, t)
    act = explicit.tables["analytics.gpu_activity"]
    assert act.filter(pl.col("cluster") == SOK_CLUSTER).height == 16


def test_slurmd_xid_is_the_slurm_node_and_job(
    built: tuple[dict, duckdb.DuckDBPyConnection],
) -> None:
    """The XID on kc-node-01's GPU 3 (slurmd pod slurm-worker-sok-0, i.e. Slurm node sok-0, at
    13:05 while job 5008 holds all 8 GPUs of sok-0) counts once, on the Slurm side: the lemon
    table gives sok-0 1 event (code 79) and no k8s-c node any; job 5008's summary has 1 XID
    event (whole-node rule) and no other job has one."""
    _planted, con = built
    rel = _q(con, "SELECT cluster, host, xid_events, xid_codes FROM node_reliability "
                  "WHERE xid_events > 0")  # fmt: skip
    assert rel.rows() == [(SOK_CLUSTER, "sok-0", 1, [79])]
    summ = _q(con, "SELECT cluster, job_id, xid_events FROM job_gpu_summary "
                   "WHERE xid_events > 0")  # fmt: skip
    assert summ.rows() == [(SOK_CLUSTER, "5008", 1)]


def test_the_incremental_plan_compares_the_slurmd_map_with_the_stored_one(
    built: tuple[dict, duckdb.DuckDBPyConnection],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rebuild with nothing new, on copies of the pair's warehouse: the plan compares the
    build's slurmd map with the stored one (``analytics.slurm_node_map``). Unchanged, it finds no
    span. With the stored map's first interval deleted, it finds that interval's times, for
    sok-c and for k8s-c, its Kubernetes cluster (an event that interval now places was left on
    the Kubernetes node by the stored map)."""
    from pipelines.analytics import incremental

    _planted, con = built
    con.execute("CHECKPOINT")
    src = Path(con.execute("PRAGMA database_list").fetchall()[0][2])
    cfg = load_config(src.parent / "goodput.toml")
    found: list[tuple[int, int, pl.DataFrame]] = []
    real = incremental._moved_map_spans

    def spy(
        old: pl.DataFrame, new: pl.DataFrame, pairs: pl.DataFrame | None = None
    ) -> pl.DataFrame:
        spans = real(old, new, pairs)
        found.append((old.height, new.height, spans))
        return spans

    monkeypatch.setattr(incremental, "_moved_map_spans", spy)
    far = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)
    for delete in (False, True):
        db = tmp_path / f"w{int(delete)}.duckdb"
        shutil.copyfile(src, db)
        with connect(db) as copy:
            rows = copy.execute(
                "SELECT slurm_node, valid_from, valid_to FROM analytics.slurm_node_map"
                " ORDER BY slurm_node, valid_from LIMIT 1"
            ).fetchall()
            if delete:
                copy.execute(
                    "DELETE FROM analytics.slurm_node_map WHERE slurm_node = $n"
                    " AND valid_from = $f",
                    {"n": rows[0][0], "f": rows[0][1]},
                )
            rebuild(copy, cfg)
            ((mode,),) = copy.execute(
                "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
            ).fetchall()
        assert mode == "incremental"
    (n_old, n_new, same), (n_less, n_new2, spans) = found
    assert n_old == n_new == n_new2 > 0 and n_less == n_old - 1
    assert same.height == 0
    _node, start, end = rows[0]
    lo = start.astimezone(dt.UTC)
    hi = far if end is None else end.astimezone(dt.UTC)
    assert spans.rows() == [(K8S_CLUSTER, lo, hi), (SOK_CLUSTER, lo, hi)]


def _sacct_and_dcgm(con: duckdb.DuckDBPyConnection, out: Path) -> None:
    """The pair's sacct files (both days) and the fixture's DCGM samples, loaded; no pods, no
    node comments: no slurmd map, and k8s-c has telemetry but no attempt (no cut-off)."""
    for f in sorted((out / "inputs" / SOK_CLUSTER / "sacct").glob("*.psv")):
        ingest_file(con, "sacct", f, IngestOptions(cluster=SOK_CLUSTER))
    ingest_file(con, "dcgm", _write_dcgm(out / "dcgm_k8s-c.prom"),
                IngestOptions(cluster=K8S_CLUSTER))  # fmt: skip


def _activity_rows(db: Path, cluster: str, day: dt.date) -> int:
    with connect(db, read_only=True) as con:
        ((n,),) = con.execute(
            "SELECT count(*) FROM analytics.gpu_activity WHERE cluster = $c"
            " AND CAST(timezone('UTC', bucket) AS DATE) = $d",
            {"c": cluster, "d": day},
        ).fetchall()
    return int(n)


@pytest.mark.parametrize("rule", [True, False], ids=["planned", "without-the-rule"])
def test_a_late_node_comment_that_places_slurmd_telemetry_replans_the_days_it_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule: bool
) -> None:
    """Built first from the sacct files, the DCGM samples and the node comments polled at 11-03
    18:00 (the map places slurm-worker-sok-0 on sok-0 from then on: its samples of 11-03
    13:00-13:05 lie before, so they stay on k8s-c's kc-node-01). Then the node comments polled
    at 11-02 18:00 are loaded (a file of day 11-02): the map now places the same pod on sok-0
    from 11-02 18:00 on, so those samples and the XID at 13:05 of 11-03 are sok-c's. The map
    names the same pods as before (the pod rule, ``_map_pod_spans``, finds nothing); the plan
    takes the map's moved span over the telemetry's times: 11-02 and 11-03 of both clusters,
    and the incremental build equals a full rebuild (sok-c's GPU activity on 11-03: 16 rows, 8
    GPUs at 2 samples; the XID on sok-0). Without the rule (``_map_telemetry_days`` finding
    nothing) 11-03 is planned all the same, now by the occupancy: a node known only from its
    comment lends its ``Gres=`` GPUs while the comment holds, so the earlier poll moves
    kc-node-01's 8 GPUs from k8s-c to sok-c from 11-02 18:00 on and both clusters' hours of
    11-03 change, and the plan takes those hours; the build again equals a full rebuild."""
    from pipelines.analytics import incremental
    from tests.pipelines.test_incremental import assert_equals_full_rebuild

    if not rule:
        monkeypatch.setattr(incremental, "_map_telemetry_days", lambda *args: {})
    _planted, cfg = _write_pair(tmp_path)
    comments = tmp_path / "inputs" / SOK_CLUSTER / "slurm_state"
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _sacct_and_dcgm(con, tmp_path)
        ingest_file(con, "slurm-state", comments / "node_comments_2026-11-03T180000Z.txt",
                    IngestOptions(cluster=SOK_CLUSTER))  # fmt: skip
        rebuild(con, cfg, full=True)
    before = _activity_rows(cfg.warehouse_path, SOK_CLUSTER, dt.date(2026, 11, 3))
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, "slurm-state", comments / "node_comments_2026-11-02T180000Z.txt",
                    IngestOptions(cluster=SOK_CLUSTER))  # fmt: skip
        rebuild(con, cfg)
        ((days,),) = con.execute(
            "SELECT days FROM analytics.build_log WHERE build_id = 2"
            " AND table_name = 'analytics.gpu_activity'"
        ).fetchall()
        xid = _q(con, "SELECT cluster, host, xid_events FROM analytics.node_reliability"
                      " WHERE xid_events > 0").rows()  # fmt: skip
    assert xid == [(SOK_CLUSTER, "sok-0", 1)]
    day2, day3 = "2026-11-02", "2026-11-03"
    planned = {SOK_CLUSTER: [day2, day3], K8S_CLUSTER: [day2, day3]}
    assert json.loads(days) == planned
    after = _activity_rows(cfg.warehouse_path, SOK_CLUSTER, dt.date(2026, 11, 3))
    assert (before, after) == (0, 16)
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30


def _serve16_gpu1(path: Path) -> Path:
    """A DCGM file of k8s-c: GPU 1 of kc-node-04, native pod infra/serve-16, at 11-03 12:00 UTC,
    graphics engine active 0.25."""
    path.write_text(
        "# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.\n"
        "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n"
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-kc-node-04-1",device="nvidia1",'
        'modelName="NVIDIA H100 80GB HBM3",Hostname="kc-node-04",container="c",'
        f'namespace="infra",pod="serve-16"}} 0.25 {_T11 + 3_600_000}\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("sacct", [True, False], ids=["with-sacct", "without-sacct"])
def test_a_new_dcgm_load_of_the_pair_equals_a_full_rebuild(tmp_path: Path, sacct: bool) -> None:
    """The whole pair (node comments, pods, the fixture's DCGM samples; with or without sok-c's
    sacct files) built in full; then a second DCGM file of k8s-c (serve-16's GPU 1 at 11-03
    12:00). The incremental build equals a full rebuild, and kc-node-04 has both samples'
    activity (0.5 at 11:00, 0.25 at 12:00).

    With the sacct files, the new load's XID spans (which carry their load's id) are lent to
    sok-c through the pair: that concatenation used to fail, so any DCGM load of a
    Slurm-on-Kubernetes pair stopped the build. Without them, sok-c has the pods' GPUs as
    lent capacity (occupancy hours) but no attempt and no cut-off: a full build gives it no
    waterfall, and an incremental one must not either (it wrote 264 rows there)."""
    from tests.pipelines.test_incremental import assert_equals_full_rebuild

    _planted, cfg = _write_pair(tmp_path)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_pair(con, tmp_path, sacct=sacct)
        rebuild(con, cfg, full=True)
        ingest_file(con, "dcgm", _serve16_gpu1(tmp_path / "dcgm_k8s-c_2.prom"),
                    IngestOptions(cluster=K8S_CLUSTER))  # fmt: skip
        rebuild(con, cfg)
        modes = con.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
        rows = _q(con, "SELECT gpu_uuid, activity FROM analytics.gpu_activity"
                       " WHERE host = 'kc-node-04' ORDER BY bucket").rows()  # fmt: skip
        lent = _q(con, "SELECT count(*) AS n FROM analytics.gpu_waterfall_hourly"
                       f" WHERE cluster = '{SOK_CLUSTER}'").item()  # fmt: skip
    assert [m for (m,) in modes] == ["full", "incremental"]
    assert rows == [("GPU-kc-node-04-0", 0.5), ("GPU-kc-node-04-1", 0.25)]
    assert (lent > 0) is sacct
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30


def test_a_cluster_with_telemetry_and_no_attempt_keeps_its_activity_on_a_replanned_day(
    tmp_path: Path,
) -> None:
    """k8s-c has DCGM samples and no pod, so no attempt and no cut-off: a full build keeps the
    GPU activity of its native pod infra/serve-16 (kc-node-04 GPU 0, 11-03 11:00). A second
    DCGM file of k8s-c (the same pod's GPU 1 at 11-03 12:00) plans k8s-c's 11-03: the
    incremental build reads that day's samples as a full build does, keeping the 11:00 row and
    adding the 12:00 one (2 rows on kc-node-04), and equals a full rebuild. (Before, a day of a
    cluster without a cut-off was skipped: its stored rows deleted and none written.)"""
    from tests.pipelines.test_incremental import assert_equals_full_rebuild

    _planted, cfg = _write_pair(tmp_path)
    extra = _serve16_gpu1(tmp_path / "dcgm_k8s-c_2.prom")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _sacct_and_dcgm(con, tmp_path)
        rebuild(con, cfg, full=True)
        ingest_file(con, "dcgm", extra, IngestOptions(cluster=K8S_CLUSTER))
        rebuild(con, cfg)
        modes = con.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
        rows = _q(con, "SELECT gpu_uuid, activity FROM analytics.gpu_activity"
                       " WHERE host = 'kc-node-04' ORDER BY bucket").rows()  # fmt: skip
    assert [m for (m,) in modes] == ["full", "incremental"]
    assert rows == [("GPU-kc-node-04-0", 0.5), ("GPU-kc-node-04-1", 0.25)]
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30


def test_a_warehouse_of_telemetry_alone_keeps_no_activity_on_a_new_load(tmp_path: Path) -> None:
    """Only k8s-c's DCGM samples loaded (no sacct, no pods, no comments): no cluster has a
    cut-off, and a full build keeps no window row (its placeholder scope). A second DCGM file
    then plans k8s-c's 11-03: the incremental build must keep none either (it wrote 18 GPU
    activity rows against the full build's 0), and equals a full rebuild."""
    from tests.pipelines.test_incremental import assert_equals_full_rebuild

    _planted, cfg = _write_pair(tmp_path)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "dcgm", _write_dcgm(tmp_path / "dcgm_k8s-c.prom"),
                    IngestOptions(cluster=K8S_CLUSTER))  # fmt: skip
        rebuild(con, cfg, full=True)
        ingest_file(con, "dcgm", _serve16_gpu1(tmp_path / "dcgm_k8s-c_2.prom"),
                    IngestOptions(cluster=K8S_CLUSTER))  # fmt: skip
        rebuild(con, cfg)
        modes = con.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
        (n,) = con.execute("SELECT count(*) FROM analytics.gpu_activity").fetchone() or (None,)
    assert [m for (m,) in modes] == ["full", "incremental"] and n == 0
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30


def test_deleting_the_pairs_loads_until_no_cutoff_is_left_equals_a_full_rebuild(
    tmp_path: Path,
) -> None:
    """The whole pair loaded and built; then sok-c's two sacct loads deleted (its attempts and
    cut-off gone: lent capacity only), then k8s-c's two pods loads (the last cut-off gone), a
    build after each. Every build equals a full rebuild of the same warehouse. The last one is
    the case where no cluster has a cut-off: a full build keeps no window row, no GPU summary
    and no wait-spell count. An incremental build there kept the vanished jobs' GPU summaries
    (13 rows) and their spells' counts (4 rows) until the jobs whose rows changed were named
    even where no window reads them, and a build with no cluster to count compared every
    stored count; now that turn (some cluster with a cut-off and hours, then none) makes the
    build full, and says so."""
    from tests.pipelines.test_incremental import assert_equals_full_rebuild, delete_load

    _planted, cfg = _write_pair(tmp_path)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ids = _load_pair(con, tmp_path)
        rebuild(con, cfg, full=True)
    for kind in ("sacct", "k8s-pods"):
        for ingest_id in reversed(ids[kind]):
            with connect(cfg.warehouse_path) as con:
                delete_load(con, ingest_id)
                rebuild(con, cfg)
            assert assert_equals_full_rebuild(cfg, tmp_path) > 30, (kind, ingest_id)
    with connect(cfg.warehouse_path, read_only=True) as con:
        left = [
            con.execute(f"SELECT count(*) FROM {t}").fetchone()
            for t in ("core.build_cutoffs", "analytics.job_gpu_summary",
                      "analytics.time_to_start_counts", "analytics.gpu_activity")
        ]  # fmt: skip
        modes = con.execute(
            "SELECT mode, reason FROM analytics.build_state ORDER BY build_id"
        ).fetchall()
    assert left == [(0,), (0,), (0,), (0,)]
    # (deleting sok-c's sacct loads changes its nodes, so those builds run in full)
    assert modes[-2:] == [
        ("incremental", "incremental"),
        ("full", "no cluster has a cut-off and occupancy hours any more"),
    ]


@pytest.mark.parametrize("rule", [True, False], ids=["planned", "without-the-rule"])
def test_a_pod_entering_and_leaving_the_slurmd_map_replans_its_samples_days(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule: bool
) -> None:
    """Built first from the sacct files and the DCGM samples alone: kc-node-04's sample of
    11-03 11:00 is native pod infra/serve-16's (attribution ``pod``). Then node comments polled
    at 11-05 00:00 name infra/serve-16 as sok-1's pod: the map places it from 11-05 on only, but
    a slurmd pod's labels are cleared on every sample of it, so the 11-03 sample turns
    ``unattributed``. The plan reads that pod's sample days (11-03) and the incremental build
    equals a full rebuild. Deleting the comments' load takes the pod out of the map again: the
    sample is serve-16's once more, and again equal. Without the rule (``_map_pod_spans``
    finding nothing) only 11-05 is planned and the 11-03 row stays ``pod``, against
    ``unattributed`` in a full build."""
    from pipelines.analytics import incremental
    from tests.pipelines.test_incremental import assert_equals_full_rebuild, delete_load

    if not rule:
        monkeypatch.setattr(
            incremental, "_map_pod_spans", lambda *args: pl.DataFrame(
                schema={"cluster": pl.String(), "lo": pl.Datetime("us", "UTC"),
                        "hi": pl.Datetime("us", "UTC")})
        )  # fmt: skip
    _planted, cfg = _write_pair(tmp_path)
    polled = tmp_path / "inputs" / SOK_CLUSTER / "slurm_state"
    late = tmp_path / "node_comments_2026-11-05T000000Z.txt"
    late.write_text(
        (polled / "node_comments_2026-11-03T180000Z.txt")
        .read_text(encoding="utf-8")
        .replace('"namespace":"slurm","podName":"slurm-worker-sok-1"',
                 '"namespace":"infra","podName":"serve-16"'),
        encoding="utf-8",
    )  # fmt: skip

    def serve16(con: duckdb.DuckDBPyConnection) -> list[tuple]:
        return _q(con, "SELECT job_id, attribution FROM analytics.gpu_activity"
                       " WHERE host = 'kc-node-04'").rows()  # fmt: skip

    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _sacct_and_dcgm(con, tmp_path)
        rebuild(con, cfg, full=True)
        before = serve16(con)
        loaded = ingest_file(con, "slurm-state", late, IngestOptions(cluster=SOK_CLUSTER))
        rebuild(con, cfg)
        ((days,),) = con.execute(
            "SELECT days FROM analytics.build_log WHERE build_id = 2"
            " AND table_name = 'analytics.gpu_activity'"
        ).fetchall()
        entered = serve16(con)
    assert before == [("infra/serve-16", "pod")]
    both = {SOK_CLUSTER: ["2026-11-03", "2026-11-05"], K8S_CLUSTER: ["2026-11-03", "2026-11-05"]}
    assert json.loads(days) == (both if rule else {c: ["2026-11-05"] for c in both})
    assert entered == ([(None, "unattributed")] if rule else before)
    if not rule:
        with pytest.raises(AssertionError, match=r"analytics\.gpu_activity"):
            assert_equals_full_rebuild(cfg, tmp_path)
        return
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30
    with connect(cfg.warehouse_path) as con:
        delete_load(con, loaded.ingest_id)
        rebuild(con, cfg)
        left = serve16(con)
    assert left == before
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30
