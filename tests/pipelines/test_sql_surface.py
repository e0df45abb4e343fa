"""``goodput sql`` publishes the documented views and nothing of the machine (issue 14).

A warehouse loaded from a file under ``tmp_path`` holds that absolute path in ``raw.ingests``;
no statement the command runs may print it, nor a setting. Refused: other schemas and the
catalog (``raw.ingests``, ``duckdb_databases``, ``information_schema``), catalog and setting
functions, ``PRAGMA``/``CALL``/``SHOW``. Allowed: the views, CTEs, row generators, ``DESCRIBE``.
Also: a capped table says "showing N of M rows" with the true M, and a query may open with an
SQL comment (``--``) without ``goodput sql --``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from pipelines.cli import app
from pipelines.warehouse.safe_sql import SqlRefused, run_query_counted

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("isolated_config")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A warehouse with one sacct file loaded from a folder under ``tmp_path``."""
    folder = tmp_path / "exports" / "slurm-a"
    folder.mkdir(parents=True)
    f = folder / "sacct_2026-11-02.psv"
    f.write_text(
        "JobID|State|Start|End|AllocTRES\n"
        "1|COMPLETED|2026-11-02T10:00:00|2026-11-02T11:00:00|gres/gpu=1\n"
        "2|COMPLETED|2026-11-02T10:00:00|2026-11-02T12:00:00|gres/gpu=2\n"
        "3|FAILED|2026-11-02T11:00:00|2026-11-02T11:30:00|gres/gpu=4\n",
        encoding="utf-8",
    )
    path = tmp_path / "x.duckdb"
    result = runner.invoke(app, ["ingest", "sacct", str(f), "--db", str(path)])
    assert result.exit_code == 0, result.output
    return path


def _sql(db: Path, query: str, *args: str) -> Result:
    return runner.invoke(app, ["sql", query, "--db", str(db), *args])


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("SELECT * FROM raw.ingests", "raw.ingests is not one of the documented views"),
        ("PRAGMA database_list", "not PRAGMA"),
        ("SELECT * FROM duckdb_settings()", "duckdb_settings() is not available"),
        ("SELECT current_setting('temp_directory')", "current_setting() is not available"),
        ("select * from duckdb_databases()", "duckdb_databases() is not available"),
        ("SELECT * FROM duckdb_databases", "duckdb_databases is not one of"),
        ("SELECT * FROM pragma_database_list", "pragma_database_list is not one of"),
        ("SELECT \"Current_Setting\"('home_directory')", "current_setting() is not available"),
        ("SELECT * FROM system.main.duckdb_tables", "system.main.duckdb_tables is not one of"),
        ("SELECT * FROM information_schema.schemata", "information_schema.schemata is not one"),
        ("SELECT * FROM duckdb_temporary_files()", "duckdb_temporary_files() is not available"),
        ("SELECT * FROM query('SELECT * FROM raw.ingests')", "query() is not available"),
        ("CALL pragma_database_list()", "not CALL"),
        ("SHOW DATABASES", "SHOW lists the catalog"),
        ("EXPLAIN SELECT * FROM jobs", "not EXPLAIN"),
        ("WITH duckdb_databases AS (SELECT 1) SELECT * FROM duckdb_databases", "a CTE may not"),
        ("SELECT 1; SELECT * FROM raw.ingests", "one statement at a time (2 given)"),
        ("SELECT * FROM core.slurm_jobs", "core.slurm_jobs is not one of"),
        ("SELECT * FROM pg_class", "pg_class is not one of"),
        ("SELECT getenv('HOME')", "getenv() is not available"),
        # built-in macros that expand into the catalog after the check
        ("SELECT pg_get_viewdef(i) FROM range(0, 100000) t(i)", "pg_get_viewdef() is not"),
        ("SELECT pg_catalog.pg_get_viewdef(1)", "pg_get_viewdef() is not available"),
        ("SELECT get_block_size('serving')", "get_block_size() is not available"),
        ("SELECT format_type(1, 1)", "format_type() is not available"),
        ("SELECT col_description(1, 1)", "col_description() is not available"),
        ("SELECT has_table_privilege('jobs', 'select')", "has_table_privilege() is not"),
        ("SELECT current_database()", "current_database() is not available"),
    ],
)
def test_catalog_settings_and_raw_tables_are_refused(
    db: Path, tmp_path: Path, query: str, needle: str
) -> None:
    """Each statement that could show a path or a setting exits 1 with one line saying why;
    nothing of ``tmp_path`` is printed."""
    result = _sql(db, query)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("goodput: error: refused: ")
    assert needle in result.stderr
    assert str(tmp_path) not in result.output


def test_ingests_shows_the_files_base_name(db: Path, tmp_path: Path) -> None:
    """``ingests``, ``slurm_jobs`` and ``rejected_rows`` name the file by its base name; the
    absolute path stays in ``raw.ingests``, which the command does not publish."""
    out = _sql(db, "SELECT * FROM ingests", "--format", "csv")
    assert out.exit_code == 0, out.output
    header, row = out.stdout.splitlines()
    assert header.split(",")[3] == "file"
    assert row.split(",")[3] == "sacct_2026-11-02.psv"
    files = _sql(db, "SELECT DISTINCT file FROM slurm_jobs", "--format", "csv")
    assert files.stdout.splitlines() == ["file", "sacct_2026-11-02.psv"]
    for view in ("ingests", "slurm_jobs", "rejected_rows", "jobs"):
        every = _sql(db, f"SELECT * FROM {view}", "--format", "json")
        assert every.exit_code == 0, every.output
        assert str(tmp_path) not in every.output


def test_views_ctes_generators_and_describe_still_run(db: Path) -> None:
    """The rule refuses names, not shapes: a CTE over a view, a qualified ``main`` view, a row
    generator, a CTE named like a raw table (raw tables are not reached unqualified),
    ``DESCRIBE`` and ``SUMMARIZE`` of a view all run."""
    for query, want in [
        ("WITH c AS (SELECT gpus FROM main.jobs) SELECT sum(gpus) AS g FROM c", ["g", "7.0"]),
        ("SELECT count(*) AS n FROM range(4) CROSS JOIN unnest([1, 2])", ["n", "8"]),
        ("WITH slurm_rows AS (SELECT 2 AS a) SELECT a FROM slurm_rows", ["a", "2"]),
        (
            "SELECT column_name FROM (DESCRIBE jobs) WHERE column_name = 'gpu_s'",
            ["column_name", "gpu_s"],
        ),
        ("SELECT count(*) AS n FROM (SUMMARIZE jobs) WHERE column_name = 'gpus'", ["n", "1"]),
    ]:
        result = _sql(db, query, "--format", "csv")
        assert result.exit_code == 0, (query, result.output)
        assert result.stdout.splitlines() == want, query


def test_no_writable_path_is_reachable(db: Path) -> None:
    """Nothing spills or writes: the spill folder and temporary files are not published, and
    COPY and ATTACH are refused before they reach a file."""
    target = db.parent / "out.csv"
    for query in (
        "SELECT current_setting('temp_directory')",
        "SELECT * FROM duckdb_temporary_files()",
        f"COPY (SELECT 1) TO '{target}'",
        f"ATTACH '{db.parent / 'other.duckdb'}' AS o",
    ):
        result = _sql(db, query)
        assert result.exit_code == 1, query
    assert not target.exists()
    assert not (db.parent / "other.duckdb").exists()


def test_capped_table_says_showing_n_of_the_true_count(db: Path) -> None:
    """``--limit 2`` over 5 rows prints 2 rows and "showing 2 of 5 rows"; csv keeps stdout to
    the rows and says it on stderr; an uncapped query says nothing."""
    capped = _sql(db, "SELECT range AS i FROM range(5) ORDER BY i", "--limit", "2")
    assert capped.exit_code == 0, capped.output
    assert capped.stdout.splitlines()[-1] == "showing 2 of 5 rows (--limit 2)"
    assert "│     1 │" in capped.stdout and "│     2 │" not in capped.stdout
    csv = _sql(db, "SELECT range AS i FROM range(5)", "--limit", "2", "--format", "csv")
    assert csv.stdout.splitlines() == ["i", "0", "1"]
    assert csv.stderr.strip() == "goodput: note: showing 2 of 5 rows (--limit 2)"
    exact = _sql(db, "SELECT range AS i FROM range(2)", "--limit", "2")
    assert "showing" not in exact.output


def test_count_stopped_by_the_time_limit_says_more_than(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first 3 of 10^11 generated rows come at once; counting them all takes minutes, so
    the 1 s time limit stops the count and the table says "more than 3"."""
    toml = tmp_path / "goodput.toml"
    toml.write_text('[sql]\ntime_limit_s = 1\nmemory_limit = "1GB"\n')
    monkeypatch.setenv("GOODPUT_CONFIG", str(toml))
    result = _sql(db, "SELECT range AS i FROM range(100000000000)", "--limit", "3")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "showing 3 of more than 3 rows (--limit 3)"


def test_counted_result_from_the_library(db: Path) -> None:
    """``run_query_counted`` gives the capped rows and the true total; a refusal is raised."""
    res = run_query_counted(db, "SELECT * FROM range(7)", row_limit=3)
    assert (res.rows.height, res.total, res.capped) == (3, 7, True)
    assert res.shown() == "showing 3 of 7 rows"
    with pytest.raises(SqlRefused, match=r"^refused: raw\.ingests is not one of"):
        run_query_counted(db, "SELECT file FROM raw.ingests")


def test_a_query_opening_with_a_comment_runs_without_double_dash(db: Path) -> None:
    """``goodput sql "-- note\\nselect 1"`` runs the query (click would read ``--`` as an
    option); with options after it too; a mistyped option is still an error, exit 2."""
    result = _sql(db, "-- note: a = 1\nSELECT 41 + 1 AS answer", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["answer", "42"]
    before = runner.invoke(app, ["sql", "--format", "csv", "--db", str(db), "-- x\nSELECT 1 AS a"])
    assert before.exit_code == 0, before.output
    assert before.stdout.splitlines() == ["a", "1"]
    typo = runner.invoke(app, ["sql", "--fromat", "--db", str(db)])
    assert typo.exit_code == 2
    assert "no such option: --fromat" in typo.stderr
