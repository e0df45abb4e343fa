"""`goodput sql --format table`: a box table that fits a fixed terminal width."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.cli._table import render_table


def _wide() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "cluster": ["slurm-a", "k8s-b"],
            "day": [dt.date(2026, 11, 9), dt.date(2026, 11, 10)],
            "allocated_gpu_h": [21728.4, 123.0],
            "note": ["a very long note that goes on well past any column width", "x"],
            **{f"c{i}": [i, 10 * i] for i in range(12)},
        }
    )


def test_a_narrow_result_is_shown_whole() -> None:
    """Two columns fit in 80 characters: every cell whole, numbers right-aligned."""
    out = render_table(pl.DataFrame({"cluster": ["slurm-a"], "gpu_h": [21728.4]}), width=80)
    assert out.splitlines() == [
        "┌─────────┬───────────┐",
        "│ cluster │ gpu_h     │",
        "│ string  │ float64   │",
        "├─────────┼───────────┤",
        "│ slurm-a │ 21,728.40 │",
        "└─────────┴───────────┘",
        "1 row × 2 columns (2 shown)",
    ]


def test_no_line_is_wider_than_the_terminal() -> None:
    """At 80, 60 and 40 characters every line fits."""
    for width in (80, 60, 40):
        lines = render_table(_wide(), width=width).splitlines()
        assert max(len(line) for line in lines) <= width, width


def test_middle_columns_are_elided_and_counted() -> None:
    """Too many columns for 80 characters: the first and last stay, an ``…`` column stands for
    the middle ones, and the footer says how many are shown."""
    lines = render_table(_wide(), width=80).splitlines()
    header = [c.strip() for c in lines[1].strip("│").split("│")]
    assert header[:2] == ["cluster", "day"] and header[-1] == "c11" and "…" in header
    shown = len(header) - 1
    assert lines[-1] == f"2 rows × 16 columns ({shown} shown)"


def test_long_cells_are_cut_with_an_ellipsis() -> None:
    """A cell longer than the widest column (40) ends in ``…``."""
    out = render_table(_wide().select("cluster", "note"), width=200)
    assert "│ a very long note that goes on well past… │" in out


def test_long_results_show_first_and_last_rows() -> None:
    """100 rows at most 6 shown: 0–2, a ``⋮`` row, 97–99, and the footer counts them."""
    lines = render_table(pl.DataFrame({"n": range(100)}), width=30, max_rows=6).splitlines()
    body = [line.strip("│ ") for line in lines[4:-2]]
    assert body == ["0", "1", "2", "⋮", "97", "98", "99"]
    assert lines[-1] == "100 rows (6 shown) × 1 column (1 shown)"


@pytest.mark.usefixtures("isolated_config")
def test_the_sql_command_fits_the_terminal_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``goodput sql --format table`` on a 50-column terminal (``COLUMNS``): every line fits,
    and the footer counts the rows and columns."""
    f = tmp_path / "s.psv"
    f.write_text(
        "JobID|State|Start|End|AllocTRES\n1|RUNNING|2026-11-02T10:00:00|Unknown|gres/gpu=1\n"
    )
    db = tmp_path / "x.duckdb"
    assert CliRunner().invoke(app, ["ingest", "sacct", str(f), "--db", str(db)]).exit_code == 0
    monkeypatch.setenv("COLUMNS", "50")
    result = CliRunner().invoke(app, ["sql", "select * from jobs", "--db", str(db)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 50
    assert lines[-1].startswith("1 row × ") and lines[-1].endswith(" shown)")
    assert "│ …" in lines[1] or "… │" in lines[1]  # jobs is wider than 50: columns elided
