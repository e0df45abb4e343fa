"""The rebuild fingerprint hashes only the code and SQL that compute stored tables (issue 13):
editing the CLI, a page, the report or a parser no longer forces a full rebuild, while a change
to a metric, the core layer, the analytics build or a view still does."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipelines.analytics.incremental import build_code_files

REPO = Path(__file__).resolve().parents[2]


def test_build_code_files_are_the_table_code_only() -> None:
    files = {str(f.relative_to(REPO)) for f in build_code_files(REPO)}
    for needed in (
        "metrics/occupancy.py",
        "metrics/mig.py",
        "pipelines/core/build.py",
        "pipelines/analytics/build.py",
        "pipelines/analytics/incremental.py",
        "pipelines/warehouse/tables.py",
        "sql/analytics/dcgm_gpu_buckets.sql",
    ):
        assert needed in files, needed
    assert any(f.startswith("sql/views/") for f in files)
    assert any(f.startswith("sql/checks/") for f in files)
    for left_out in ("sql/report/", "sql/dashboard/", "dashboards/", "pipelines/slurm/", "bench/"):
        assert not any(f.startswith(left_out) for f in files), left_out
    assert not any("cli" in Path(f).parts or f.endswith("cli.py") for f in files)
    assert "pipelines/ingest.py" not in files


def test_fingerprint_ignores_a_report_edit(tmp_path: Path) -> None:
    """A copy of the build folders plus a report query: adding a line to the report's SQL leaves
    the file list and its bytes unchanged; adding one to a view changes them."""

    for d in ("metrics", "pipelines/core", "pipelines/analytics", "sql/views", "sql/report"):
        shutil.copytree(REPO / d, tmp_path / d)

    def digest() -> bytes:
        return b"".join(
            str(f.relative_to(tmp_path)).encode() + f.read_bytes()
            for f in build_code_files(tmp_path)
        )

    before = digest()
    report = next((tmp_path / "sql/report").glob("*.sql"))
    report.write_text(report.read_text() + "\n-- edited\n")
    assert digest() == before
    view = next((tmp_path / "sql/views").glob("*.sql"))
    view.write_text(view.read_text() + "\n-- edited\n")
    assert digest() != before
