"""The stored wait-spell counts of an incremental build, by hand: stored counts, less the stored
spells of the recomputed jobs, plus their new spells."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from pipelines.analytics.metrics_build import TTS_COUNTS_TABLE, _spell_counts
from pipelines.warehouse import connect, init_warehouse
from pipelines.warehouse.tables import replace_table

_W = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)  # a Monday


def _spells(rows: list[tuple[str, str | None, float | None, bool | None]]) -> pl.DataFrame:
    """Spells of cluster c (slurm, partition gpu, size bucket 1, week ``_W``): ``(job_id, team,
    duration_s, started)``."""
    return pl.DataFrame(
        [(_W, "slurm", "c", "gpu", team, "1", d, s, job) for job, team, d, s in rows],
        schema={"week": pl.Datetime("us", "UTC"), "source": pl.String(), "cluster": pl.String(),
                "partition": pl.String(), "team": pl.String(), "bucket": pl.String(),
                "duration_s": pl.Float64(), "started": pl.Boolean(), "job_id": pl.String()},
        orient="row",
    )  # fmt: skip


def _counts(spells: pl.DataFrame) -> pl.DataFrame:
    return spells.drop("job_id").group_by(pl.all()).agg(pl.len().cast(pl.Int64).alias("n"))


def test_an_incremental_builds_counts_take_out_old_spells_and_put_in_new_ones(
    tmp_path: Path,
) -> None:
    """Stored spells: A and B waited 60 s (started), C is censored at 120 s, E (team NULL) waited
    60 s. The recomputed jobs: C (now started at 150 s), D (new, started at 60 s) and E (gone:
    no new spell). Hand count: (team t, 60 s, started) 2 − 0 + 1 = 3; (t, 120 s, censored)
    1 − 1 = 0, dropped; (t, 150 s, started) 0 + 1 = 1; (NULL, 60 s, started) 1 − 1 = 0,
    dropped. Without keys, the fresh counts alone. The cluster-weeks whose counts may differ:
    those of the keys' new and stored spells, (c, the week) alone."""
    stored_spells = _spells([("A", "t", 60.0, True), ("B", "t", 60.0, True),
                             ("C", "t", 120.0, False), ("E", None, 60.0, True)])  # fmt: skip
    fresh = _counts(_spells([("C", "t", 150.0, True), ("D", "t", 60.0, True)]))
    keys = pl.DataFrame({"cluster": ["c", "c", "c"], "job_id": ["C", "D", "E"]})
    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        replace_table(con, "analytics.time_to_start_jobs", stored_spells)
        replace_table(con, TTS_COUNTS_TABLE, _counts(stored_spells))
        got, weeks = _spell_counts(con, [fresh], keys)
        alone, no_weeks = _spell_counts(con, [fresh], None)
    assert got.select("team", "duration_s", "started", "n").rows() == [
        ("t", 60.0, True, 3),
        ("t", 150.0, True, 1),
    ]
    assert got["week"].to_list() == [_W, _W]
    # the one cluster-week the keys' spells fall in is the one whose rows may differ
    assert weeks is not None and weeks.rows() == [("c", _W)]
    assert no_weeks is None
    assert alone.select("team", "duration_s", "n").rows() == [("t", 60.0, 1), ("t", 150.0, 1)]
