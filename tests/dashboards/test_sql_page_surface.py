"""The SQL page publishes the documented views and nothing of the machine (issue 14).

The page runs on a serving file loaded from a folder under ``tmp_path`` (its absolute path is in
``raw.ingests``): the catalog, settings and raw tables are refused with one error element each,
``ingests`` names the file by its base name, and a capped result says "showing N of M rows".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from pipelines.cli import app
from tests.conftest import REPO

PAGE = str(REPO / "dashboards" / "pages" / "sql_query.py")


@pytest.fixture
def serving(isolated_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A database with one sacct file of 3 jobs loaded, wired into the page."""
    folder = tmp_path / "exports"
    folder.mkdir()
    f = folder / "sacct_2026-11-02.psv"
    f.write_text(
        "JobID|State|Start|End|AllocTRES\n"
        + "".join(
            f"{i}|COMPLETED|2026-11-02T10:00:00|2026-11-02T11:00:00|gres/gpu=1\n" for i in (1, 2, 3)
        ),
        encoding="utf-8",
    )
    db = tmp_path / "serving.duckdb"
    result = CliRunner().invoke(app, ["ingest", "sacct", str(f), "--db", str(db)])
    assert result.exit_code == 0, result.output
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(db))
    return db


def _run(query: str, row_limit: int | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception
    if row_limit is not None:
        at.number_input(key="sql_row_limit").set_value(row_limit)
    at.text_area(key="sql_text").input(query).run()
    assert not at.exception
    return at


def _text(at: AppTest) -> str:
    parts = [e.value for e in at.caption] + [e.value for e in at.error]
    parts += [d.value.to_csv() for d in at.dataframe]  # the tables as pandas frames
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("SELECT * FROM raw.ingests", "raw.ingests is not one of the documented views"),
        ("PRAGMA database_list", "not PRAGMA"),
        ("SELECT * FROM duckdb_settings()", "duckdb_settings() is not available"),
        ("SELECT current_setting('temp_directory')", "current_setting() is not available"),
        ("SELECT * FROM duckdb_databases()", "duckdb_databases() is not available"),
    ],
)
def test_catalog_and_settings_are_refused_on_the_page(
    serving: Path, tmp_path: Path, query: str, needle: str
) -> None:
    """One error element saying why, no result table, no path of ``tmp_path`` on the page."""
    at = _run(query)
    assert len(at.error) == 1 and at.error[0].value.startswith("refused: ")
    assert needle in at.error[0].value
    assert [list(d.value.columns) for d in at.dataframe] == [["view", "column", "type"]]
    assert str(tmp_path) not in _text(at)


def test_ingests_on_the_page_shows_the_base_name(serving: Path, tmp_path: Path) -> None:
    """Every column of ``ingests`` is on the page; ``file`` is the base name, no path."""
    at = _run("SELECT * FROM ingests")
    assert not at.error
    result = at.dataframe[-1].value
    assert list(result["file"]) == ["sacct_2026-11-02.psv"]
    assert str(tmp_path) not in _text(at)


def test_capped_result_says_showing_n_of_the_true_count(serving: Path) -> None:
    """A row limit of 2 over 3 jobs shows 2 rows and says "showing 2 of 3 rows"; with the
    default limit the caption counts the rows as before."""
    at = _run("SELECT job_id FROM jobs ORDER BY job_id", row_limit=2)
    assert list(at.dataframe[-1].value["job_id"]) == ["1", "2"]
    assert "showing 2 of 3 rows × 1 columns" in [c.value for c in at.caption]
    full = _run("SELECT job_id FROM jobs")
    assert "3 rows × 1 columns" in [c.value for c in full.caption]
