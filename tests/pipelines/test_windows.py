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
            _inventory(cfg),
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
