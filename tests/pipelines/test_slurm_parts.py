"""The build reads the Slurm rows in parts of job identity: the same core and analytics tables as
reading them whole, with the raw rows of one part at a time in memory."""

from __future__ import annotations

import contextlib
import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.analytics.build import _read_raw, rebuild
from pipelines.config import Config, load_config
from pipelines.core import resolve_slurm_parts
from pipelines.core.slurm_identity import resolve_slurm_jobs
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse, read_table
from pipelines.warehouse.sql import load_sql
from tests.conftest import write_config
from tests.pipelines.test_incremental import (
    _assert_frames_close,
    _days,
    _load_day,
    _tables,
    assert_equals_full_rebuild,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: A real Slurm 22.05 export (arrays, requeues, steps): see its SOURCE.md.
LAB = FIXTURES / "slurm-22.05-lab" / "sacct_all.psv"


def _key(frame: pl.DataFrame) -> pl.DataFrame:
    """``cluster, job_key`` of raw rows, as the core layer computes it."""
    return resolve_slurm_jobs(frame.lazy(), pl.LazyFrame(schema={"key": pl.String(),
                                                                "team": pl.String()})
                              ).select("cluster", "job_key").unique().collect()  # fmt: skip


@pytest.fixture(scope="module")
def loaded(fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Config, Path]:
    """Day 1 of the bundled fleet and the real lab export in one warehouse, not yet built."""
    work = tmp_path_factory.mktemp("slurm-parts")
    cfg = load_config(write_config(work, days_dir=fleet_dir))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_day(con, cfg, _days(cfg)[0])
        ingest_file(con, "sacct", LAB, IngestOptions(cluster="lab", tz="UTC"))
    return cfg, cfg.warehouse_path


def test_parts_hold_whole_identities_in_key_order(loaded: tuple[Config, Path]) -> None:
    """With 50 rows a part, the rows come in ceil(n / 50) parts (the quantile cuts are
    distinct here), every ``(cluster, job_key)`` in exactly one part, every row once, and the
    parts resolved one by one give the frame of one resolution of all rows, in its order."""
    _cfg, db = loaded
    with duckdb.connect(str(db), read_only=True) as con:
        whole = read_table(con, "raw.slurm_rows")
        raw = _read_raw(con, 50)
        assert raw.slurm_rows.height == 0 and raw.slurm_rows.schema == whole.schema
        assert raw.slurm_parts is not None
        parts = list(raw.slurm_parts())
    n = whole.height
    assert n > 500  # the fleet day plus the lab file: enough rows for several parts
    assert len(parts) == -(-n // 50)
    assert sum(p.height for p in parts) == n
    keys = pl.concat([_key(p).with_columns(pl.lit(i).alias("part")) for i, p in
                      enumerate(parts)])  # fmt: skip
    assert keys.select("cluster", "job_key").is_duplicated().sum() == 0
    assert keys.height == _key(whole).height
    teams = pl.DataFrame({"key": ["team-c"], "team": ["vision"]})
    one = resolve_slurm_jobs(whole.lazy(), teams.lazy()).collect()
    assert resolve_slurm_parts(iter(parts), teams).equals(one)
    assert "lab" in set(one["cluster"]) and one.filter(pl.col("team") == "vision").height > 0


def test_the_build_in_parts_equals_the_build_whole(
    loaded: tuple[Config, Path], tmp_path: Path
) -> None:
    """A full rebuild reading the Slurm rows 40 at a time, each part written to
    ``core.slurm_jobs`` as it is resolved, writes every core and analytics table as the first
    build of the warehouse does (full by its plan, the rows in one part, ``core.slurm_jobs``
    written whole from memory), row for row; the build log counts the parted table's rows."""
    cfg, db = loaded
    parted = tmp_path / "parted.duckdb"
    shutil.copyfile(db, parted)
    whole = tmp_path / "whole.duckdb"
    shutil.copyfile(db, whole)
    with connect(whole) as con:
        rebuild(con, cfg, slurm_part_rows=10**9)
    with connect(parted) as con:
        rebuild(con, cfg, full=True, slurm_part_rows=40)
    with connect(whole, read_only=True) as a, connect(parted, read_only=True) as b:
        tables = _tables(a)
        assert tables == _tables(b) and "core.slurm_jobs" in tables
        assert a.execute("SELECT count(*) FROM core.slurm_jobs").fetchall()[0][0] > 500
        logged = b.execute(
            "SELECT mode, rows_inserted FROM analytics.build_log"
            " WHERE table_name = 'core.slurm_jobs'"
        ).fetchall()
        assert logged == [
            ("full", a.execute("SELECT count(*) FROM core.slurm_jobs").fetchall()[0][0])
        ]
        for t in tables:
            _assert_frames_close(
                a.sql(f"SELECT * FROM {t}").pl(), b.sql(f"SELECT * FROM {t}").pl(), t
            )


def test_part_rows_must_be_positive(loaded: tuple[Config, Path]) -> None:
    _cfg, db = loaded
    with (
        duckdb.connect(str(db), read_only=True) as con,
        pytest.raises(ValueError, match="positive"),
    ):
        _read_raw(con, -1)


def test_an_incremental_build_diffs_each_part_into_core_slurm_jobs(
    fleet_dir: Path, tmp_path: Path
) -> None:
    """Day 1 built (its first build: a full plan, the staged parts replace the table), then day
    2 built incrementally with 40 rows a part: each part is diffed into the stored rows of its
    range of identities (build log mode ``rows``, the deletions and insertions summed),
    deleting exactly the day-1 rows absent from the
    day-2 table and inserting the day-2 rows absent from the day-1 table (anti-joins counted
    here; fewer than a quarter of the day-1 rows deleted), the staging table is gone, and the
    table equals a full rebuild of a copy, row for row."""
    cfg = load_config(write_config(tmp_path, days_dir=fleet_dir))
    first, second = _days(cfg)[:2]
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        _load_day(con, cfg, first)
        rebuild(con, cfg, slurm_part_rows=40)
        old = con.sql("SELECT * FROM core.slurm_jobs").pl()
        _load_day(con, cfg, second)
        rebuild(con, cfg, slurm_part_rows=40)
        new = con.sql("SELECT * FROM core.slurm_jobs").pl()
        log = con.execute(
            "SELECT build_id, mode, rows_deleted, rows_inserted FROM analytics.build_log"
            " WHERE table_name = 'core.slurm_jobs' ORDER BY build_id"
        ).fetchall()
        staged = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'slurm_jobs_staged'"
        ).fetchall()[0][0]
    keys = [c for c, t in old.schema.items() if not isinstance(t, pl.List)]
    gone = old.join(new, on=keys, how="anti", nulls_equal=True)
    added = new.join(old, on=keys, how="anti", nulls_equal=True)
    assert [(m, d, i) for _b, m, d, i in log] == [
        ("full", None, old.height),
        ("rows", gone.height, added.height),
    ]
    assert 0 < gone.height < old.height // 4 and added.height > 0 and staged == 0
    full = tmp_path / "full.duckdb"
    shutil.copyfile(cfg.warehouse_path, full)
    with connect(full) as con:
        rebuild(con, cfg, full=True)
        _assert_frames_close(new, con.sql("SELECT * FROM core.slurm_jobs").pl(), "core.slurm_jobs")


def test_identities_gone_from_the_raw_rows_leave_core_slurm_jobs(
    loaded: tuple[Config, Path], tmp_path: Path
) -> None:
    """The fleet's day 1 and the lab export built with 40 raw rows a part; then the raw rows of
    the first and the last identity in key order (the open ends of the first and last range)
    and of one identity in the middle are deleted, and the warehouse rebuilt (incrementally, 40
    rows a part): those identities' resolved rows are gone from ``core.slurm_jobs`` (the
    range diffs delete what no part holds any more), no other row is rewritten (deleted =
    their stored row count, inserted = 0), and the table equals a full rebuild of a copy."""
    cfg, db = loaded
    work = tmp_path / "w.duckdb"
    shutil.copyfile(db, work)
    with connect(work) as con:
        rebuild(con, cfg, slurm_part_rows=40)
        keys = con.sql(
            "SELECT DISTINCT cluster, job_key FROM core.slurm_jobs"
            " ORDER BY cluster || chr(0) || job_key"
        ).fetchall()
        dropped = [keys[0], keys[len(keys) // 2], keys[-1]]
        (stored,) = con.execute(
            "SELECT count(*) FROM core.slurm_jobs WHERE (cluster, job_key) IN"
            " (SELECT unnest($c), unnest($k))",
            {"c": [c for c, _ in dropped], "k": [k for _, k in dropped]},
        ).fetchall()[0]
        raw = con.sql("SELECT * FROM raw.slurm_rows").pl()
        gone = _key(raw).join(
            pl.DataFrame(dropped, schema=["cluster", "job_key"], orient="row"),
            on=["cluster", "job_key"], how="semi",
        )  # fmt: skip
        assert gone.height == 3
        with_keys = resolve_slurm_jobs(raw.lazy(), pl.LazyFrame(
            schema={"key": pl.String(), "team": pl.String()})).collect()  # fmt: skip
        lines = with_keys.join(gone, on=["cluster", "job_key"], how="semi").select(
            "ingest_id", "line_no"
        )
        con.execute(
            "DELETE FROM raw.slurm_rows WHERE (ingest_id, line_no) IN"
            " (SELECT unnest($i), unnest($l))",
            {"i": lines["ingest_id"].to_list(), "l": lines["line_no"].to_list()},
        )
        rebuild(con, cfg, slurm_part_rows=40)
        left = con.execute(
            "SELECT count(*) FROM core.slurm_jobs WHERE (cluster, job_key) IN"
            " (SELECT unnest($c), unnest($k))",
            {"c": [c for c, _ in dropped], "k": [k for _, k in dropped]},
        ).fetchall()[0][0]
        log = con.execute(
            "SELECT mode, rows_deleted, rows_inserted FROM analytics.build_log"
            " WHERE table_name = 'core.slurm_jobs' ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
        new = con.sql("SELECT * FROM core.slurm_jobs").pl()
    assert stored >= 3 and left == 0
    assert log == ("rows", stored, 0)
    full = tmp_path / "full.duckdb"
    shutil.copyfile(work, full)
    with connect(full) as con:
        rebuild(con, cfg, full=True)
        _assert_frames_close(new, con.sql("SELECT * FROM core.slurm_jobs").pl(), "core.slurm_jobs")


def test_only_the_parts_whose_identities_changed_are_resolved_again(
    loaded: tuple[Config, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fleet's day 1 and the lab export built with 40 raw rows a part (the first build
    resolves every part). Built again with no new row: no part is resolved again (each comes
    from the stored ``core.slurm_jobs``) and nothing is written to it. Then a second copy of the
    lab export is loaded (an overlapping export: the same lines under a new ingest id): only the
    parts of cluster ``lab``'s identities (sorted first: ``lab`` < ``slurm-a``) are resolved
    again, and every table equals a full rebuild of a copy."""
    import pipelines.core.build as core_build

    cfg, db = loaded
    work = tmp_path / "w.duckdb"
    shutil.copyfile(db, work)
    resolved: list[int] = []
    real = core_build.resolve_slurm_jobs

    def counted(rows: pl.LazyFrame, teams: pl.LazyFrame) -> pl.LazyFrame:
        n = rows.select(pl.len()).collect().item()
        if n:  # (the empty frame the core layer resolves for the columns is not a part)
            resolved.append(n)
        return real(rows, teams)

    monkeypatch.setattr(core_build, "resolve_slurm_jobs", counted)
    with connect(work) as con:
        rebuild(con, cfg, slurm_part_rows=40)
        first, resolved[:] = list(resolved), []
        (lab_rows,) = con.execute(
            "SELECT count(*) FROM raw.slurm_rows WHERE cluster = 'lab'"
        ).fetchall()[0]
        rebuild(con, cfg, slurm_part_rows=40)
        again, resolved[:] = list(resolved), []
        log = con.execute(
            "SELECT mode, rows_deleted, rows_inserted FROM analytics.build_log"
            " WHERE table_name = 'core.slurm_jobs' ORDER BY build_id DESC LIMIT 1"
        ).fetchall()[0]
        again_lab = tmp_path / "sacct_all_again.psv"
        shutil.copyfile(LAB, again_lab)
        ingest_file(con, "sacct", again_lab, IngestOptions(cluster="lab", tz="UTC"))
        rebuild(con, cfg, slurm_part_rows=40)
        relabelled = list(resolved)
    assert len(first) > 3 and sum(first) > lab_rows
    assert again == [] and log == ("rows", 0, 0)
    assert 0 < len(relabelled) < len(first)
    assert lab_rows <= sum(relabelled) < sum(first)
    assert assert_equals_full_rebuild(cfg, tmp_path, work) > 20


def test_a_load_under_an_old_ingest_id_is_resolved_again(
    loaded: tuple[Config, Path], tmp_path: Path
) -> None:
    """A copy of the lab export loaded last and built (40 raw rows a part); then that load is
    deleted (its rows and its ``raw.ingests`` row, as a lake load drops loads it does not own)
    and the same file, with job 4's allocation now FAILED (same line count), loaded: the new
    load takes the freed ingest id, with the same row count. Its file hash and load time mark
    it changed: job 4's stored row says FAILED after the incremental build, and every table
    equals a full rebuild of a copy."""
    cfg, db = loaded
    work = tmp_path / "w.duckdb"
    shutil.copyfile(db, work)
    again = tmp_path / "sacct_all_again.psv"
    lines = LAB.read_text().splitlines(keepends=True)
    again.write_text("".join(lines))
    state = (
        "SELECT state FROM core.slurm_jobs"
        " WHERE cluster = 'lab' AND job_key = '4' AND is_allocation"
    )
    with connect(work) as con:
        first = ingest_file(con, "sacct", again, IngestOptions(cluster="lab", tz="UTC"))
        rebuild(con, cfg, slurm_part_rows=40)
        before = con.execute(state).fetchall()
        for sql in ("DELETE FROM raw.slurm_rows WHERE ingest_id = $i",
                    "DELETE FROM raw.ingests WHERE ingest_id = $i"):  # fmt: skip
            con.execute(sql, {"i": first.ingest_id})
        assert lines[7].count("|COMPLETED|") == 1
        lines[7] = lines[7].replace("|COMPLETED|", "|FAILED|")
        again.write_text("".join(lines))
        second = ingest_file(con, "sacct", again, IngestOptions(cluster="lab", tz="UTC"))
        rebuild(con, cfg, slurm_part_rows=40)
        after = con.execute(state).fetchall()
    assert second.ingest_id == first.ingest_id and second.rows_loaded == first.rows_loaded
    assert before == [("COMPLETED",)] and after == [("FAILED",)]
    assert assert_equals_full_rebuild(cfg, tmp_path, work) > 20


def test_ranges_are_cut_tight_around_the_changed_identities() -> None:
    """Cuts ``c, g`` (ranges ``["", c)``, ``[c, g)``, ``[g, …)``) and changed keys ``d, e``
    (in the middle range) and ``h`` (in the last): the middle range is cut at ``d`` and just
    after ``e`` (``e`` + NUL, the next key in byte order), the last at ``h`` and after it; the
    first range, with no changed key, is left whole. No changed key: the cuts as they are."""
    from pipelines.analytics.build import _around_dirty

    assert _around_dirty(["c", "g"], ["d", "e", "h"]) == ["c", "d", "e\0", "g", "h", "h\0"]
    assert _around_dirty(["c", "g"], []) == ["c", "g"]
    assert _around_dirty([], ["b"]) == ["b", "b\0"]
    assert _around_dirty(["c"], ["c", "c"]) == ["c", "c\0"]


def test_stored_rows_of_other_types_are_resolved_again_not_lost(
    loaded: tuple[Config, Path], tmp_path: Path
) -> None:
    """Built (40 raw rows a part), then ``core.slurm_jobs.timelimit_s`` changed to DOUBLE (as a
    library upgrade could map a column otherwise), then a copy of the lab export loaded: the
    resolved parts cannot be diffed into the stored rows, so the table is staged and replaced
    whole, and no part may come from the stored rows (it would be lost): every part is
    resolved again, ``core.slurm_jobs`` is back to BIGINT with every identity, and every table
    equals a full rebuild of a copy."""
    cfg, db = loaded
    work = tmp_path / "w.duckdb"
    shutil.copyfile(db, work)
    with connect(work) as con:
        rebuild(con, cfg, slurm_part_rows=40)
        (n_before,) = con.execute("SELECT count(*) FROM core.slurm_jobs").fetchall()[0]
        con.execute("ALTER TABLE core.slurm_jobs ALTER timelimit_s TYPE DOUBLE")
        again = tmp_path / "sacct_all_again.psv"
        shutil.copyfile(LAB, again)
        ingest_file(con, "sacct", again, IngestOptions(cluster="lab", tz="UTC"))
        rebuild(con, cfg, slurm_part_rows=40)
        (n_after,) = con.execute("SELECT count(*) FROM core.slurm_jobs").fetchall()[0]
        (kind,) = con.execute(
            "SELECT data_type FROM duckdb_columns()"
            " WHERE table_name = 'slurm_jobs' AND column_name = 'timelimit_s'"
        ).fetchall()[0]
    assert n_after == n_before > 500 and kind == "BIGINT"
    assert assert_equals_full_rebuild(cfg, tmp_path, work) > 20


def test_the_stored_resolution_is_reused_only_after_the_build_that_recorded_it(
    loaded: tuple[Config, Path], tmp_path: Path
) -> None:
    """After a build, its resolution is reusable under today's key and not under another
    (other code, registry or libraries); once a later build is on record that did not record
    a resolution (older code, which may have rewritten ``core.slurm_jobs``), it is not; nor
    where a raw Slurm row names a cluster with a NUL byte."""
    from pipelines.analytics.incremental import resolution_key, reusable_resolution

    cfg, db = loaded
    work = tmp_path / "w.duckdb"
    shutil.copyfile(db, work)
    key = resolution_key(cfg.registry_path)
    with connect(work) as con:
        rebuild(con, cfg, slurm_part_rows=40)
        assert reusable_resolution(con, key)
        assert not reusable_resolution(con, "another key")
        con.execute(
            "INSERT INTO analytics.build_state SELECT build_id + 1, now(), mode,"
            " max_ingest_id, fingerprint, as_of_json, reason FROM analytics.build_state"
            " ORDER BY build_id DESC LIMIT 1"
        )
        assert not reusable_resolution(con, key)
        rebuild(con, cfg, slurm_part_rows=40)
        assert reusable_resolution(con, key)
        # a cluster name with a NUL byte sorts otherwise as a range key than as a pair
        con.execute(
            "INSERT INTO raw.slurm_rows BY NAME"
            " SELECT * REPLACE (cluster || chr(0) || 'x' AS cluster)"
            " FROM raw.slurm_rows LIMIT 1"
        )
        assert not reusable_resolution(con, key)


@contextlib.contextmanager
def _built_in_parts(
    loaded: tuple[Config, Path], tmp_path: Path
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to a copy of the loaded warehouse just built in full in parts of 40 raw
    rows (the build's temporary views, e.g. the keyed raw rows, still there)."""
    cfg, db = loaded
    work = tmp_path / "w.duckdb"
    shutil.copyfile(db, work)
    with connect(work) as con:
        rebuild(con, cfg, slurm_part_rows=40)
        yield con


def test_stored_parts_come_one_per_run_of_unchanged_ranges_with_the_range_rows(
    loaded: tuple[Config, Path], tmp_path: Path
) -> None:
    """Built once (the lab export sorts before ``slurm-a``), the stored resolution is read
    through :class:`_SlurmParts` with cuts at every 7th identity and two changed keys: the
    ranges holding neither come as one :class:`StoredPart` per run of consecutive such
    ranges (here 3 runs around the 2 changed ranges, the runs' length not capped), and each
    stored part's attempts,
    never-started allocations and per-cluster latest times are exactly those of
    ``core.slurm_jobs`` in its range of ``(cluster, job_key)``, computed here by polars on the
    whole table: ranges within one cluster, across the two clusters, the first and the last."""
    from pipelines.analytics.build import _SlurmParts
    from pipelines.core import StoredPart
    from pipelines.core.build import resolved_slurm_schema

    with _built_in_parts(loaded, tmp_path) as con:
        jobs = con.sql("SELECT * FROM core.slurm_jobs").pl()
        schema = resolved_slurm_schema(read_table(con, "raw.slurm_rows").clear())
        keys = sorted({f"{c}\0{k}" for c, k in jobs.select("cluster", "job_key").iter_rows()})
        cuts = keys[7::7]
        dirty = [keys[len(keys) // 3], keys[2 * len(keys) // 3]]
        parts = _SlurmParts(con, cuts, dirty, schema, run_ranges=len(cuts) + 1)
        got = list(parts())
        stored = [p for p in got if isinstance(p, StoredPart)]
    assert len(cuts) > 10 and {"lab", "slurm-a"} <= set(jobs["cluster"])
    assert len(got) == 5 and len(stored) == 3 == parts.stored
    assert [isinstance(p, StoredPart) for p in got] == [True, False, True, False, True]
    key = pl.concat_str(pl.col("cluster"), pl.lit("\0"), pl.col("job_key"))
    ranges = list(itertools.pairwise(["", *cuts, None]))
    clean = [not any(lo <= d and (hi is None or d < hi) for d in dirty) for lo, hi in ranges]
    assert clean.count(False) == 2
    grouped = itertools.groupby(zip(clean, ranges, strict=True), key=lambda r: r[0])
    runs = [(g[0][1][0], g[-1][1][1]) for g in (list(run) for _, run in grouped) if g[0][0]]
    assert [r[0].split("\0")[0] for r in runs] == ["", "slurm-a", "slurm-a"]
    assert runs[0][1].startswith("lab\0") is False and runs[-1][1] is None
    allocs = jobs.filter(pl.col("is_allocation"))
    for part, (lo, hi) in zip(stored, runs, strict=True):
        in_range = (key >= lo) & ((key < hi) if hi is not None else pl.lit(True))
        want = allocs.filter(in_range & pl.col("start_at").is_not_null())
        assert part.attempts.height == want.height > 0
        assert part.attempts["job_key"].to_list() == want["job_key"].to_list()
        assert part.attempts["gpu_s"].to_list() == want["gpu_s"].to_list()
        pending = allocs.filter(in_range & pl.col("start_at").is_null())
        assert sorted(part.pending["job_id"].to_list()) == sorted(pending["job_id"].to_list())
        latest = jobs.filter(in_range).group_by("cluster").agg(pl.col("end_at").max())
        assert part.cuts.select("cluster", "end_at").equals(latest.sort("cluster"))


def test_stored_runs_are_read_a_few_ranges_at_a_time_with_the_same_rows_in_the_same_order(
    loaded: tuple[Config, Path], tmp_path: Path
) -> None:
    """The stored resolution of a run of unchanged ranges is read at most ``run_ranges``
    ranges at a time (a read's memory grows with its rows: one read of a run as long as the
    history needs memory that grows with it). With cuts at every 5th identity and one changed
    key, the runs of 2 ranges at most come as ⌈run length ÷ 2⌉ stored parts per run, each
    part's range within its run, and together they hold the same attempts, never-started
    allocations and latest times, in the same order, as the runs read whole. The default cap is
    :data:`STORED_RUN_RANGES`."""
    from pipelines.analytics.build import STORED_RUN_RANGES, _SlurmParts
    from pipelines.core import StoredPart
    from pipelines.core.build import resolved_slurm_schema

    with _built_in_parts(loaded, tmp_path) as con:
        jobs = con.sql("SELECT cluster, job_key FROM core.slurm_jobs").pl()
        schema = resolved_slurm_schema(read_table(con, "raw.slurm_rows").clear())
        keys = sorted({f"{c}\0{k}" for c, k in jobs.iter_rows()})
        cuts = keys[5::5]
        dirty = [keys[len(keys) // 2]]
        whole_reader = _SlurmParts(con, cuts, dirty, schema, run_ranges=len(cuts) + 1)
        whole = [p for p in whole_reader() if isinstance(p, StoredPart)]
        capped = _SlurmParts(con, cuts, dirty, schema, run_ranges=2)
        got, spans = [], []
        for part in capped():
            if isinstance(part, StoredPart):
                got.append(part)
                spans.append(capped.current)
        assert _SlurmParts(con, cuts, dirty, schema).run_ranges == STORED_RUN_RANGES
    ranges = list(itertools.pairwise(["", *cuts, None]))
    clean = [not any(lo <= d and (hi is None or d < hi) for d in dirty) for lo, hi in ranges]
    runs = [len(list(g)) for c, g in itertools.groupby(clean) if c]
    assert len(cuts) > 10 and len(runs) == len(whole) == 2 and max(runs) > 2
    assert len(got) == sum(-(-n // 2) for n in runs)
    starts = {lo: i for i, (lo, _) in enumerate(ranges)}
    for lo, hi, last in spans:  # each read spans at most 2 of the ranges
        end = len(ranges) if last else starts[hi]
        assert 1 <= end - starts[lo] <= 2
    for field in ("attempts", "pending", "cuts"):
        if field == "cuts":  # latest times per cluster: the whole run's are the parts' maxima
            parts = [pl.concat([getattr(p, field) for p in got]).group_by("cluster").max()]
            want = [pl.concat([getattr(p, field) for p in whole]).group_by("cluster").max()]
            assert parts[0].sort("cluster").equals(want[0].sort("cluster"))
            continue
        assert pl.concat([getattr(p, field) for p in got]).equals(
            pl.concat([getattr(p, field) for p in whole])
        )
    assert sum(p.attempts.height for p in got) > 50


def test_stored_parts_come_in_the_resolution_order_when_the_stored_rows_do_not(
    loaded: tuple[Config, Path], tmp_path: Path
) -> None:
    """The stored resolution is read in the table's own order (no ``ORDER BY``). After a full
    build in parts that order is the resolution's. Here every third identity's rows are
    deleted and appended again, as an incremental build's row diff does, so the stored rows
    are out of order; read as stored parts (two ranges a read, no changed key), the attempts
    still come exactly as ``ORDER BY cluster, job_key, start_at, step`` (NULLs last) gives
    them, and equal the parts read before the rows were moved (columns, types, order)."""
    from pipelines.analytics.build import _SlurmParts
    from pipelines.core import StoredPart
    from pipelines.core.build import resolved_slurm_schema

    with _built_in_parts(loaded, tmp_path) as con:
        schema = resolved_slurm_schema(read_table(con, "raw.slurm_rows").clear())
        keys = sorted(
            {
                f"{c}\0{k}"
                for c, k in con.sql("SELECT cluster, job_key FROM core.slurm_jobs").pl().iter_rows()
            }
        )
        before = [p for p in _SlurmParts(con, keys[9::9], [], schema, run_ranges=2)()]
        moved = [k.split("\0")[1] for k in keys[::3]]
        con.execute("BEGIN TRANSACTION")
        con.execute(
            "CREATE TEMP TABLE moved AS"
            " SELECT * FROM core.slurm_jobs WHERE list_contains($k, job_key)",
            {"k": moved},
        )
        con.execute("DELETE FROM core.slurm_jobs WHERE list_contains($k, job_key)", {"k": moved})
        con.execute("INSERT INTO core.slurm_jobs SELECT * FROM moved")
        con.execute("COMMIT")
        stored = con.sql(
            "SELECT cluster, job_key FROM core.slurm_jobs"
            " WHERE is_allocation AND start_at IS NOT NULL"
        ).pl()
        parts = _SlurmParts(con, keys[9::9], [], schema, run_ranges=2)
        got = list(parts())
        want = con.sql(
            "SELECT * EXCLUDE (step) FROM (" + load_sql("analytics/stored_part_attempts") + ")"
            " ORDER BY cluster NULLS LAST, job_key NULLS LAST, start_at NULLS LAST,"
            " step NULLS LAST",
            params={"last": True, "lo_cluster": "", "lo_job_key": "", "hi_cluster": "",
                    "hi_job_key": ""},
        ).pl()  # fmt: skip
    assert all(isinstance(p, StoredPart) for p in got) and len(got) == parts.stored > 3
    assert not stored.equals(stored.sort("cluster", "job_key", nulls_last=True))
    attempts = pl.concat([p.attempts for p in got])
    assert attempts.schema == pl.concat([p.attempts for p in before]).schema
    assert attempts.height == want.height > 50
    assert attempts.select("cluster", "job_key", "start_at", "gpu_s").equals(
        want.select("cluster", "job_key", "start_at", "gpu_s")
    )
    assert attempts.equals(pl.concat([p.attempts for p in before]))


def test_changed_ranges_are_read_together_and_come_one_part_per_range_as_read_alone(
    loaded: tuple[Config, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ranges holding changed keys are counted in one pass and read in one pass per batch
    of consecutive ones whose rows add up to ``batch_rows`` at most (a range alone in its batch
    is read by itself), and each still comes as a part of its own, in the ranges' order, with
    the rows ``sql/analytics/slurm_rows_part.sql`` reads for that range alone. Cuts at every
    5th raw identity, four changed keys spread over the key space, the ranges cut around them
    as an incremental build cuts them (:func:`_around_dirty`):

    - room for every range: one count and one read for the four;
    - ``batch_rows`` of the first two ranges' rows: the batches a greedy cut in order gives;
    - ``batch_rows=1``: every range read alone (a range of more rows than the budget is still
      read, by itself);
    - one changed key: its range read alone, with no count.

    The stored parts between them are the same every time."""
    import pipelines.analytics.build as build
    from pipelines.analytics.build import _around_dirty, _SlurmParts
    from pipelines.core import StoredPart
    from pipelines.core.build import resolved_slurm_schema

    reads: list[str] = []
    real = build.run_named

    def counted(con: duckdb.DuckDBPyConnection, name: str, *args: object) -> pl.DataFrame:
        reads.append(name)
        return real(con, name, *args)  # type: ignore[arg-type]

    with _built_in_parts(loaded, tmp_path) as con:
        schema = resolved_slurm_schema(read_table(con, "raw.slurm_rows").clear())
        keys = [k for (k,) in con.execute(
            "SELECT DISTINCT _part_key FROM slurm_rows_keyed ORDER BY 1").fetchall()]  # fmt: skip
        dirty = [keys[len(keys) * i // 5] for i in (1, 2, 3, 4)]
        cuts = _around_dirty(keys[5::5], dirty)
        reader = _SlurmParts(con, cuts, dirty, schema)
        changed = [r for r in reader.ranges if not reader._is_clean(*r)]
        want = {
            r: real(con, "analytics/slurm_rows_part", {"lo": r[0], "hi": r[1], "last": r[2]})
            for r in changed
        }
        sizes = [want[r].height for r in changed]

        def run(
            batch_rows: int, changed_keys: list[str] = dirty
        ) -> tuple[list[tuple[tuple[str, str, bool], object]], list[str]]:
            reads.clear()
            parts = _SlurmParts(
                con, _around_dirty(keys[5::5], changed_keys), changed_keys, schema,
                run_ranges=2, batch_rows=batch_rows,
            )  # fmt: skip
            got = [(parts.current, part) for part in parts()]
            return got, list(reads)

        monkeypatch.setattr(build, "run_named", counted)
        runs = {
            "all": run(10**9),
            "first two": run(sizes[0] + sizes[1]),
            "alone": run(1),
        }
        one_key = run(10**9, dirty[:1])
    assert len(changed) == 4 and min(sizes) > 0
    one_raw = [p for _, p in one_key[0] if not isinstance(p, StoredPart)]
    assert len(one_raw) == 1 and one_raw[0].height > 0
    assert one_key[1].count("analytics/slurm_rows_in_ranges_count") == 0
    assert one_key[1].count("analytics/slurm_rows_part") == 1
    assert one_key[1].count("analytics/slurm_rows_in_ranges") == 0

    def greedy(budget: int) -> list[int]:  # the reads of more than one range, by size
        batches, rows = [[sizes[0]]], sizes[0]
        for n in sizes[1:]:
            if rows + n > budget:
                batches.append([])
                rows = 0
            batches[-1].append(n)
            rows += n
        return [len(b) for b in batches if len(b) > 1]

    expected = {
        "all": (1, [4]),
        "first two": (1, greedy(sizes[0] + sizes[1])),
        "alone": (1, []),
    }
    assert expected["first two"][1][0] >= 2
    stored = []
    for label, (got, names) in runs.items():
        raw = [(span, p) for span, p in got if not isinstance(p, StoredPart)]
        assert [span for span, _ in raw] == changed, label
        starts = [span[0] for span, _ in got]  # every part in key order, stored or not
        assert starts == sorted(starts) and len(set(starts)) == len(starts), label
        for span, part in raw:
            assert isinstance(part, pl.DataFrame)
            alone_rows = want[span]
            assert part.schema == alone_rows.schema and part.height == alone_rows.height, label
            assert part.sort(part.columns).equals(alone_rows.sort(alone_rows.columns)), label
        counts, together = expected[label]
        assert names.count("analytics/slurm_rows_in_ranges_count") == counts, label
        assert names.count("analytics/slurm_rows_in_ranges") == len(together), label
        assert names.count("analytics/slurm_rows_part") == 4 - sum(together), label
        stored.append([p.attempts for _, p in got if isinstance(p, StoredPart)])
    assert len(stored[0]) > 3
    for other in stored[1:]:
        assert len(other) == len(stored[0])
        assert all(a.equals(b) for a, b in zip(stored[0], other, strict=True))


def test_changed_range_reads_must_be_positive(loaded: tuple[Config, Path]) -> None:
    """A batch of no rows or a stored run of no ranges is refused when the parts are made."""
    from pipelines.analytics.build import _SlurmParts

    _cfg, db = loaded
    with duckdb.connect(str(db), read_only=True) as con:
        for kw in ({"batch_rows": 0}, {"run_ranges": 0}):
            with pytest.raises(ValueError, match=f"{next(iter(kw))} must be positive, got 0"):
                _SlurmParts(con, [], [], None, **kw)


def test_the_resolution_does_not_depend_on_the_order_of_the_raw_rows(
    loaded: tuple[Config, Path],
) -> None:
    """The raw rows of the fleet's day 1 and the lab export, with a second copy of the lab
    export (an overlapping export: every line again under a new ingest id, so each of its
    identities has rows to de-duplicate), resolved as read, reversed and in three shuffled
    orders, on the engine the build resolves on, give the same resolution, row for row:
    dedup, supersession and attempts decide by the rows' times, ingest ids and line numbers,
    never by where a row comes (so ranges read in one pass need not keep the order each read
    alone gives)."""
    _cfg, db = loaded
    with duckdb.connect(str(db), read_only=True) as con:
        whole = read_table(con, "raw.slurm_rows")
    lab = whole.filter(pl.col("cluster") == "lab")
    again = lab.with_columns(pl.col("ingest_id") + whole["ingest_id"].max())
    once = whole
    whole = pl.concat([whole, again])
    teams = pl.DataFrame({"key": ["team-c"], "team": ["vision"]}).lazy()

    def resolve(rows: pl.DataFrame) -> pl.DataFrame:
        return resolve_slurm_jobs(rows.lazy(), teams).collect(engine="in-memory")

    one = resolve(whole)
    orders = [
        whole.reverse(),
        *(whole.sample(fraction=1.0, shuffle=True, seed=s) for s in (1, 2, 3)),
    ]
    assert lab.height > 80 and one.height > 300
    assert one.height == resolve(once).height  # the second copy's rows were de-duplicated
    for rows in orders:
        assert not rows.equals(whole)
        assert resolve(rows).equals(one)


def test_parts_of_more_keys_than_the_sample_hold_whole_identities_and_about_equal_rows(
    tmp_path: Path,
) -> None:
    """150,000 raw rows of 50,000 identities (three rows each, in two clusters), more keys than
    the 100,000 the range bounds are sampled from (``sql/analytics/slurm_row_bounds.sql``), cut
    into parts of about 10,000 rows under a 64 MB DuckDB limit: every row comes in exactly one
    part, every identity whole in one part, in ascending key order, 13 to 17 parts (15 exactly
    at equal cuts) of 6,000 to 14,000 rows (a sampled quantile is off by a few hundred rows)."""
    from pipelines.warehouse import memory_limit

    with connect(tmp_path / "w.duckdb") as con:
        init_warehouse(con)
        con.execute(
            "INSERT INTO raw.slurm_rows BY NAME"
            " SELECT CASE WHEN i // 3 % 2 = 0 THEN 'alpha' ELSE 'beta' END AS cluster,"
            " CAST(i // 3 AS VARCHAR) AS job_id, CAST(i // 3 AS VARCHAR) AS job_id_raw,"
            " CASE i % 3 WHEN 0 THEN NULL WHEN 1 THEN 'batch' ELSE '0' END AS step,"
            " i % 3 = 0 AS is_allocation, 'f.psv' AS file, i AS line_no, 1 AS ingest_id"
            " FROM range(150000) r(i)"
        )
        with memory_limit(con, "64MB"):
            raw = _read_raw(con, 10_000)
            assert raw.slurm_parts is not None
            parts = [p.select("cluster", "job_id") for p in raw.slurm_parts()]
    sizes = [p.height for p in parts]
    assert sum(sizes) == 150_000 and 13 <= len(parts) <= 17
    assert min(sizes) >= 6_000 and max(sizes) <= 14_000
    ids = [p.unique() for p in parts]
    assert sum(i.height for i in ids) == 50_000  # no identity in two parts
    assert all(i.height * 3 == p.height for i, p in zip(ids, parts, strict=True))
    firsts = [(p["cluster"][0], p["job_id"].min()) for p in parts]
    assert firsts[0][0] == "alpha" and firsts[-1][0] == "beta"
    assert [f[0] for f in firsts] == sorted(f[0] for f in firsts)


def test_the_range_diff_selects_exactly_the_stored_rows_of_its_range(
    loaded: tuple[Config, Path], tmp_path: Path
) -> None:
    """``sql/analytics/slurm_jobs_in_range.sql`` (the WHERE clause each resolved part is diffed
    under) selects, for every range of ``(cluster, job_key)`` sort keys, exactly the rows of
    ``core.slurm_jobs`` that polars' filter of the whole table selects: ranges between
    consecutive keys, between a key and the same key followed by NUL (how the ranges are cut
    around changed identities), across the two clusters, the first (from ``""``) and the last
    (no upper end). The conjuncts that DuckDB pushes into the scan are implied by the range;
    one that cut a row (a bound off by one key) fails here."""
    from pipelines.analytics.build import _range_params
    from pipelines.warehouse.sql import load_sql

    with _built_in_parts(loaded, tmp_path) as con:
        jobs = con.sql("SELECT rowid AS r, cluster, job_key FROM core.slurm_jobs").pl()
        keys = sorted({f"{c}\0{k}" for c, k in jobs.select("cluster", "job_key").iter_rows()})
        bounds = sorted({"", *keys[::5], *(k + "\0" for k in keys[2::9])})
        ranges = [(lo, hi, False) for lo, hi in itertools.pairwise(bounds)]
        ranges += [(b, "", True) for b in bounds[::4]]
        where = load_sql("analytics/slurm_jobs_in_range")
        got = [
            sorted(r[0] for r in con.execute(
                f"SELECT rowid FROM core.slurm_jobs {where}", _range_params(*rng)
            ).fetchall())
            for rng in ranges
        ]  # fmt: skip
    key = pl.concat_str(pl.col("cluster"), pl.lit("\0"), pl.col("job_key"))
    assert {"lab", "slurm-a"} <= set(jobs["cluster"]) and len(ranges) > 40
    nonempty = 0
    for (lo, hi, last), rows in zip(ranges, got, strict=True):
        in_range = (key >= lo) & (pl.lit(True) if last else key < hi)
        want = sorted(jobs.filter(in_range)["r"].to_list())
        assert rows == want, (lo, hi, last)
        nonempty += bool(want)
    assert nonempty > 30


def test_the_range_diff_of_a_cluster_name_with_a_nul_byte_keeps_every_row_of_its_range() -> None:
    """A cluster named ``a NUL b``: its sort keys hold two NUL bytes, so splitting a bound at
    the first one gives cluster ``a``, and the pushed-down conjuncts would drop both of its rows
    from the range ``a NUL b NUL k1`` … ``a NUL b NUL k9``. Unsplit (what :func:`_slurm_parts`
    passes when a raw cluster name holds a NUL byte) the range test on the whole key selects
    them; split, they are lost (the case the flag exists for)."""
    from pipelines.analytics.build import _range_params
    from pipelines.warehouse.sql import load_sql

    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES ('a' || chr(0) || 'b', 'k1'),"
        " ('a' || chr(0) || 'b', 'k5'), ('z', 'k1')) v(cluster, job_key)"
    )
    where = load_sql("analytics/slurm_jobs_in_range")
    bounds = ("a\0b\0k1", "a\0b\0k9", False)
    unsplit = con.execute(f"SELECT * FROM t {where}", _range_params(*bounds, split=False))
    assert unsplit.fetchall() == [("a\0b", "k1"), ("a\0b", "k5")]
    split = con.execute(f"SELECT * FROM t {where}", _range_params(*bounds))
    assert split.fetchall() == []
