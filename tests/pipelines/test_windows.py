"""One window path (issue 13): :func:`pipelines.analytics.windows.window_tables` asked for every
cluster-day explicitly gives the full build's time-keyed rows (``days=None``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.analytics.build import _inventory, _occupancy, _read_raw, _read_registry
from pipelines.analytics.dcgm_hourly_metrics import hourly_activity
from pipelines.analytics.windows import WINDOW_TABLES, telemetry_window, window_tables
from pipelines.config import Config
from pipelines.core import BuildUnit, build_core
from pipelines.core import build as core_build
from pipelines.warehouse import connect, init_warehouse

# The module-scoped fixture of the incremental tests (a full and an incremental build), shared.
from tests.pipelines.test_incremental import _assert_frames_close, two_builds  # noqa: F401

pytestmark = pytest.mark.slow


def test_every_day_explicitly_equals_the_full_build(request: pytest.FixtureRequest) -> None:
    """``days`` = every UTC day of every cluster's occupancy hours gives the same four tables
    as ``days=None`` (the full build), row for row; the summary covers every job with GPUs."""
    built: tuple[Config, Path] = request.getfixturevalue("two_builds")
    cfg, full = built
    with connect(full) as con:
        core = build_core(
            _read_raw(con),
            _read_registry(cfg.registry_path),
            _inventory(cfg)[0],
            BuildUnit.everything(),
        )
        occ = _occupancy(core)
        args = dict(
            jobs=core.jobs, pending=core.pending, occupancy=occ, as_of=core.as_of,
            pod_jobs=core.pod_jobs, nodes=core.nodes, idle_threshold=cfg.idle_activity,
        )  # fmt: skip
        every = window_tables(con, **args)  # type: ignore[arg-type]
        days: dict[str, set] = {}
        for c, d in occ.select("cluster", pl.col("hour").dt.date().alias("d")).unique().rows():
            days.setdefault(c, set()).add(d)
        explicit = window_tables(con, **args, days=days)  # type: ignore[arg-type]
    assert every.job_keys is None and explicit.job_keys is not None
    assert set(every.tables) == set(explicit.tables) == set(WINDOW_TABLES)
    for t in WINDOW_TABLES:
        a = every.tables[t]
        b = explicit.tables[t].select(a.columns)
        assert a.height > 0, t
        _assert_frames_close(a, b, t)


def test_overlapping_keeps_rows_whose_span_touches_a_day() -> None:
    """Days {03-02, 03-05}, cut-off 03-06 12:00. Rows, by span [earliest of submit, eligible and
    start; end, or the cut-off while open, but no earlier than the start]:

    - a: submitted 03-01 10:00, ended 03-03 → touches 03-02: kept;
    - b: 03-03 → 03-04: between the days: left out;
    - c: started 03-05 23:00, ended 03-05 23:30 → on 03-05: kept;
    - d: no time at all: left out;
    - e: started 03-04, end recorded at 03-01 (before its start) → [03-04, 03-04]: left out;
    - f: submitted 03-04, still open → [03-04, 03-06]: touches 03-05: kept;
    - g: submitted 02-20, started 03-03, ended 03-03 → touches 03-02 while waiting: kept, but
      not when the span starts at the start (``from_col="start_at"``), which also drops d.

    Kept rows keep their order; no day: nothing kept."""
    import datetime as dt

    from pipelines.analytics.windows import _overlapping

    def t(m: int, d: int, h: int = 0, mi: int = 0) -> dt.datetime:
        return dt.datetime(2026, m, d, h, mi, tzinfo=dt.UTC)

    ts = pl.Datetime("us", "UTC")
    jobs = pl.DataFrame(
        {
            "id": list("abcdefg"),
            "submit_at": [t(3, 1, 10), t(3, 3), t(3, 5, 22), None, t(3, 4), t(3, 4), t(2, 20)],
            "start_at": [t(3, 1, 11), t(3, 3), t(3, 5, 23), None, t(3, 4), None, t(3, 3)],
            "end_at": [t(3, 3), t(3, 4), t(3, 5, 23, 30), None, t(3, 1), None, t(3, 3, 5)],
        },
        schema_overrides={"submit_at": ts, "start_at": ts, "end_at": ts},
    )
    days = {dt.date(2026, 3, 2), dt.date(2026, 3, 5)}
    cut = t(3, 6, 12)
    assert _overlapping(jobs, days, cut, from_col="wait")["id"].to_list() == ["a", "c", "f", "g"]
    assert _overlapping(jobs, days, cut, from_col="start_at")["id"].to_list() == ["a", "c"]
    assert _overlapping(jobs, set(), cut, from_col="wait").height == 0


def test_a_windows_hourly_telemetry_is_what_its_readers_read() -> None:
    """The incremental window's ``raw.dcgm_hourly`` (:func:`telemetry_window` over [10:00,
    11:00) with its one-day margin) holds cluster a's labelled hours with samples from 10:00 on
    2 March less a day: five columns; the 08:00 row (in the margin) stays, the 09:00 row of the
    day before (25 h early), an unlabelled GPU, a row without samples, cluster b's row and the
    12:00 row (after the window) do not. The hourly activity read from it over [10:00, 11:00)
    equals the warehouse's own: job 7's (12 × 0.5 + 6 × 0.9) ÷ 18 = 19/30, two GPUs."""
    h10 = dt.datetime(2026, 3, 2, 10, tzinfo=dt.UTC)
    hours = dt.timedelta(hours=1)
    con = duckdb.connect()
    mem = None
    try:
        init_warehouse(con)
        rows = [  # cluster, hostname, gpu, uuid, hour, hpc_job, samples, activity
            ("a", "n1", 0, "GPU-0", h10, "7", 12, 0.5),
            ("a", "n1", 1, "GPU-1", h10, "7", 6, 0.9),
            ("a", "n1", 2, "GPU-2", h10, None, 12, 0.0),
            ("a", "n1", 3, "GPU-3", h10, "7", 0, 0.7),
            ("b", "m1", 0, "GPU-9", h10, "7", 12, 0.1),
            ("a", "n1", 0, "GPU-0", h10 + 2 * hours, "7", 11, 0.2),
            ("a", "n1", 0, "GPU-0", h10 - 2 * hours, "7", 10, 0.3),
            ("a", "n1", 0, "GPU-0", h10 - 25 * hours, "7", 9, 0.4),
        ]
        for r in rows:
            con.execute(
                "INSERT INTO raw.dcgm_hourly (cluster, hostname, gpu, uuid, hour, hpc_job,"
                " samples, gr_engine_active_avg, fb_used_max_mib, xid_last, ingest_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1000, NULL, 1)",
                list(r),
            )
        lo, hi = h10, h10 + hours
        mem = telemetry_window(con, "a", lo, hi)
        held = mem.sql("SELECT * FROM raw.dcgm_hourly ORDER BY samples DESC").pl()
        assert held.columns == ["cluster", "hour", "hpc_job", "samples", "gr_engine_active_avg"]
        assert held["samples"].to_list() == [12, 10, 6]
        jobs = pl.DataFrame(
            {"cluster": ["a"], "job_id": ["7"], "attempt": [0], "start_at": [h10 - 3 * hours]},
            schema_overrides={"start_at": pl.Datetime("us", "UTC")},
        )
        got = hourly_activity(mem, jobs, cluster="a", window=(lo, hi))
        assert got.equals(hourly_activity(con, jobs, cluster="a", window=(lo, hi)))
        assert got["activity"].to_list() == pytest.approx([19 / 30])
        assert got["gpus"].to_list() == [2.0]
    finally:
        if mem is not None:
            mem.close()
        con.close()


def test_a_cluster_without_inventory_keeps_its_observed_nodes(
    request: pytest.FixtureRequest,
) -> None:
    """With slurm-a's inventory rows left out, slurm-a's ``core.nodes`` are the hosts its
    attempts ran on (``observed``; each with the most GPUs one attempt held there, worked out
    here from ``core.jobs`` by hand), while the other clusters' nodes stay their inventory's,
    row for row as with the whole inventory (the observed hosts of inventoried clusters are
    never worked out: :func:`pipelines.core.build._observed_hosts`)."""
    built: tuple[Config, Path] = request.getfixturevalue("two_builds")
    cfg, full = built
    inventory = _inventory(cfg)[0]
    assert "slurm-a" in set(inventory["cluster"])
    skipped: list[set[str]] = []
    observed_hosts = core_build._observed_hosts

    def spy(attempts: pl.DataFrame, skip: Collection[str] = ()) -> pl.DataFrame:
        skipped.append(set(skip))
        return observed_hosts(attempts, skip)

    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setattr(core_build, "_observed_hosts", spy)
    with connect(full) as con:
        registry = _read_registry(cfg.registry_path)
        whole = build_core(_read_raw(con), registry, inventory, BuildUnit.everything())
        # every part skips the inventoried clusters: their hosts are never exploded
        assert skipped and all(s == set(inventory["cluster"]) for s in skipped)
        skipped.clear()
        without = build_core(
            _read_raw(con),
            registry,
            inventory.filter(pl.col("cluster") != "slurm-a"),
            BuildUnit.everything(),
        )
    assert skipped and all(s == set(inventory["cluster"]) - {"slurm-a"} for s in skipped)
    key = ["cluster", "host"]
    others = pl.col("cluster") != "slurm-a"
    assert without.nodes.filter(others).sort(key).equals(whole.nodes.filter(others).sort(key))
    seen = without.nodes.filter(~others)
    assert set(seen["capacity_source"]) == {"observed"}
    by_hand = (
        whole.jobs.filter((pl.col("cluster") == "slurm-a") & (pl.col("gpus") > 0))
        .with_columns((pl.col("gpus") / pl.col("node_list").list.len()).alias("per_node"))
        .explode("node_list")
        .group_by(pl.col("node_list").alias("host"))
        .agg(pl.col("per_node").max().alias("gpus"))
        .sort("host")
    )
    assert by_hand.height > 0
    assert seen.select("host", "gpus").sort("host").equals(by_hand)


def test_overlapping_reaches_a_piece_held_past_the_attempts_end() -> None:
    """Day {03-02}: attempt t ran 03-01 20:00 - 23:55, its pods holding 8 GPUs until 03-02
    00:05 (a grace period: a piece past end_at, METRICS.md "GPU holding"). With its pieces
    its span reaches 03-02 and it is kept (the waterfall of 03-02 reads its 8 x 300 GPU-s);
    without, it is left out."""
    import datetime as dt

    from metrics.holds import HOLD_SCHEMA
    from pipelines.analytics.windows import _overlapping

    ts = pl.Datetime("us", "UTC")
    start = dt.datetime(2026, 3, 1, 20, tzinfo=dt.UTC)
    end = dt.datetime(2026, 3, 1, 23, 55, tzinfo=dt.UTC)
    jobs = pl.DataFrame(
        {"cluster": ["c"], "job_id": ["t"], "attempt": [0], "submit_at": [start],
         "start_at": [start], "end_at": [end]},
        schema_overrides={"submit_at": ts, "start_at": ts, "end_at": ts},
    )  # fmt: skip
    holds = pl.DataFrame(
        [("c", "t", 0, start, end, 16.0),
         ("c", "t", 0, end, dt.datetime(2026, 3, 2, 0, 5, tzinfo=dt.UTC), 8.0)],
        schema=HOLD_SCHEMA, orient="row",
    )  # fmt: skip
    days, cut = {dt.date(2026, 3, 2)}, dt.datetime(2026, 3, 3, tzinfo=dt.UTC)
    kept = _overlapping(jobs, days, cut, from_col="wait", holds=holds)
    assert kept.to_dicts() == jobs.to_dicts()
    assert _overlapping(jobs, days, cut, from_col="wait").height == 0
