"""One window path (issue 13): :func:`pipelines.analytics.windows.window_tables` asked for every
cluster-day explicitly gives the full build's time-keyed rows (``days=None``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.analytics.build import _inventory, _occupancy, _read_raw, _read_registry
from pipelines.analytics.windows import WINDOW_TABLES, window_tables
from pipelines.config import Config
from pipelines.core import BuildUnit, build_core
from pipelines.warehouse import connect

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
