"""Incremental = full on a history longer than any look-back a new day's steps need.

The other incremental tests hold two or three days, so a step that reads only a recent part of
the history (the per-day build of ``docs/design/per-day-build.md``) would pass them even with
a wrong bound. Here the history is 40 days over a month boundary (2026-01-26 to 03-06, six
week boundaries): the scale fleet's 16-GPU jobs wait up to weeks, runs last days, the last day
ends with attempts still running and jobs still pending, so the new day's plan and its
look-backs reach back into February and an earlier cluster-month unit is planned when a
February file is loaded again with one changed row.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, file_day, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild

_START = dt.date(2026, 1, 26)
_DAYS = 40
_KINDS = (("sacct", "sacct/*.psv"), ("slurm-state", "slurm_state/*.psv"),
          ("dcgm-hourly", "dcgm_hourly/date=*/*.parquet"))  # fmt: skip


def _fleet(tmp_path: Path) -> tuple[Config, Path]:
    from pipelines.sample_fleet._scale import ScaleConfig, generate_scale_fleet

    out = tmp_path / "fleet"
    generate_scale_fleet(
        out,
        ScaleConfig(gpus=16, days=_DAYS, seed=3, start=_START, dcgm_5min_days=0),
        progress=False,
    )
    toml = write_config(tmp_path, days_dir=out, clusters=(("scale-a", "slurm", "UTC"),))
    return load_config(toml), out / "inputs" / "scale-a"


def _load(con: duckdb.DuckDBPyConnection, base: Path, days: set[str]) -> None:
    for kind, pattern in _KINDS:
        for f in sorted(base.glob(pattern)):
            if file_day(f) in days:
                st = ingest_file(con, kind, f, IngestOptions(cluster="scale-a", tz="UTC"))
                assert st.rows_rejected == 0, f


def test_a_new_day_and_a_late_february_file_on_forty_days_equal_a_full_rebuild(
    tmp_path: Path,
) -> None:
    """39 days built in full, the 40th loaded and built incrementally, then the sacct file of
    2026-02-03 loaded again with one job ending an hour earlier and built incrementally: each
    incremental build equals a full rebuild of a copy of it, every core and analytics table
    row for row, and the plan reaches back as far as the history asks.

    Hand check of the history's reach (from the generated files): on the last day jobs
    submitted in early February are still pending (a wait of more than three weeks, across the
    February-March boundary), so the time-to-start tables of the new day read waits that began
    weeks before it."""
    cfg, base = _fleet(tmp_path)
    days = [(_START + dt.timedelta(days=i)).isoformat() for i in range(_DAYS)]
    with connect(cfg.warehouse_path) as con:
        con.execute("SET TimeZone = 'UTC'")
        init_warehouse(con)
        _load(con, base, set(days[:-1]))
        rebuild(con, cfg)
        _load(con, base, {days[-1]})
        rebuild(con, cfg)
        # the history's reach: a job still pending at the end of the last day has waited more
        # than three weeks (eligible 2026-02-08 17:23:55: 26.3 days to 03-07 00:00)
        oldest = con.execute(
            "SELECT min(eligible_at) FROM core.slurm_jobs"
            " WHERE is_allocation AND start_at IS NULL AND state = 'PENDING'"
        ).fetchall()[0][0]
        assert oldest is not None
        assert oldest < dt.datetime(2026, 3, 7, tzinfo=dt.UTC) - dt.timedelta(days=21)
    assert assert_equals_full_rebuild(cfg, tmp_path) > 30

    # One February job ends an hour earlier: a load of an earlier cluster-month.
    feb = base / "sacct" / "sacct_2026-02-03.psv"
    lines = feb.read_text().splitlines()
    # an allocation row (a JobID without a step suffix), so core.jobs changes
    at = next(
        i for i, line in enumerate(lines) if "|COMPLETED|" in line and "." not in line.split("|")[0]
    )
    fields = lines[at].split("|")
    end = dt.datetime.fromisoformat(fields[12]) - dt.timedelta(hours=1)
    start = dt.datetime.fromisoformat(fields[11])
    assert end > start
    fields[12] = end.isoformat()
    elapsed = int((end - start).total_seconds())
    d, rest = divmod(elapsed, 86400)
    h, rest = divmod(rest, 3600)
    fields[13] = (f"{d}-" if d else "") + f"{h:02d}:{rest // 60:02d}:{rest % 60:02d}"
    lines[at] = "|".join(fields)
    changed = tmp_path / "sacct_2026-02-03.psv"
    changed.write_text("\n".join(lines) + "\n")
    with connect(cfg.warehouse_path) as con:
        con.execute("SET TimeZone = 'UTC'")
        st = ingest_file(con, "sacct", changed, IngestOptions(cluster="scale-a", tz="UTC"))
        assert st.rows_rejected == 0
        rebuild(con, cfg)
        modes = con.execute("SELECT mode FROM analytics.build_state ORDER BY build_id").fetchall()
        assert [m for (m,) in modes] == ["full", "incremental", "incremental"]
        planned = con.execute(
            "SELECT days FROM analytics.build_log WHERE build_id = 3"
            " AND table_name = 'analytics.occupancy_hourly'"
        ).fetchall()
        assert planned and "2026-02" in str(planned[0][0])
        (job_end,) = con.execute(
            "SELECT end_at FROM core.jobs WHERE job_id = $j", {"j": fields[0]}
        ).fetchall()[0]
        assert job_end == end.replace(tzinfo=dt.UTC)
    (tmp_path / "second").mkdir()
    assert assert_equals_full_rebuild(cfg, tmp_path / "second") > 30
