"""The Overview shows the Slurm-on-Kubernetes double-count rate where the fleet has such a
cluster (and nothing where it has none), with the sentence on why numbers changed."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from dashboards import queries
from tests.conftest import REPO, Materialized

pytestmark = pytest.mark.slow

APP = str(REPO / "dashboards" / "app.py")
_H = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)

#: The worked example of METRICS.md "Slurm on Kubernetes" (tests/core/test_slurm_on_k8s.py):
#: hour, lent, native, allocated, mirror, Slurm idle, held idle, naive Slurm, naive pods.
_ROWS = [
    (0, 14400.0, 3600.0, 14400.0, 0.0, 0.0, 0.0, 14400.0, 18000.0),
    (1, 14400.0, 3600.0, 3600.0, 0.0, 10800.0, 10800.0, 3600.0, 18000.0),
    (2, 14400.0, 3600.0, 3600.0, 3600.0, 10800.0, 10800.0, 7200.0, 18000.0),
]


def _with_pair(src: Path, dst: Path) -> str:
    """A copy of the serving copy whose slurm_on_k8s_hourly holds the worked example."""
    shutil.copy(src, dst)
    with duckdb.connect(str(dst)) as con:
        for h, lent, native, alloc, mirror, s_idle, held, n_slurm, n_k8s in _ROWS:
            con.execute(
                "insert into analytics.slurm_on_k8s_hourly by name select 'sok-c' as cluster, "
                "'k8s-c' as k8s_cluster, 'A' as pattern, 'kn1' as k8s_node, ? as hour, "
                "28800.0 as capacity_gpu_s, ? as lent_to_slurm_gpu_s, ? as k8s_native_gpu_s, "
                "28800.0 - ? - ? as k8s_idle_gpu_s, ? as slurm_allocated_gpu_s, "
                "? as mirror_gpu_s, ? as slurm_idle_gpu_s, ? as slurmd_held_idle_gpu_s, "
                "? as naive_slurm_gpu_s, ? as naive_k8s_gpu_s, ? + ? as naive_gpu_s, "
                "? + ? as reconciled_gpu_s, (? + ? - ? - ?) / (? + ?) as double_count_rate",
                [_H + dt.timedelta(hours=h), lent, native, lent, native, alloc, mirror, s_idle,
                 held, n_slurm, n_k8s, n_slurm, n_k8s, native, alloc, n_slurm, n_k8s, native,
                 alloc, native, alloc],
            )  # fmt: skip
    return str(dst)


def test_rate_over_the_window_is_the_ratio_of_the_sums(
    materialized: Materialized, tmp_path: Path
) -> None:
    """Σ naive 79 200 GPU-s = 22 GPU-h, Σ reconciled 32 400 = 9 GPU-h: (22 − 9) ÷ 9 = 1.444 (not
    the mean of the hourly 0.8, 2.0, 2.5); lent 3 × 4 GPU-h = 12, held idle 6 GPU-h. The
    bundled fleet alone has no such cluster: no row."""
    assert (
        queries.slurm_on_k8s_rate(str(materialized.cfg.serving_path), queries.Filters()).height == 0
    )
    db = _with_pair(materialized.cfg.serving_path, tmp_path / "s.duckdb")
    got = queries.slurm_on_k8s_rate(db, queries.Filters()).row(0, named=True)
    assert (got["cluster"], got["k8s_cluster"], got["pattern"]) == ("sok-c", "k8s-c", "A")
    assert (got["naive_gpu_h"], got["reconciled_gpu_h"]) == (22.0, 9.0)
    assert got["double_count_rate"] == pytest.approx(13 / 9, rel=1e-12)
    assert (got["lent_gpu_h"], got["slurmd_held_idle_gpu_h"]) == (12.0, 6.0)
    assert queries.slurm_on_k8s_rate(db, queries.Filters(cluster="k8s-c")).height == 1
    assert queries.slurm_on_k8s_rate(db, queries.Filters(cluster="slurm-a")).height == 0


def test_overview_shows_the_rate_and_why(
    materialized: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tile reads 144 % (13 ÷ 9) with the naive and reconciled GPU-hours and one sentence on
    why the numbers differ from a one-sided tool; without the pair the section is absent."""
    monkeypatch.setenv("GOODPUT_CONFIG", str(materialized.cfg.path))
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(materialized.cfg.serving_path))
    plain = AppTest.from_file(APP, default_timeout=60)
    plain.run()
    assert not plain.exception
    assert "Slurm on Kubernetes: counted once" not in [s.value for s in plain.subheader]
    db = _with_pair(materialized.cfg.serving_path, tmp_path / "s.duckdb")
    monkeypatch.setenv("GOODPUT_SERVING_DB", db)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    assert "Slurm on Kubernetes: counted once" in [s.value for s in at.subheader]
    tile = next(m for m in at.metric if m.label == "sok-c on k8s-c: double-count rate")
    assert tile.value == "144%"
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Naive 22 GPU-h (Slurm jobs + every pod) vs reconciled 9 GPU-h")
               for c in captions), captions  # fmt: skip
    assert any(c.startswith("Why these numbers differ") for c in captions)
