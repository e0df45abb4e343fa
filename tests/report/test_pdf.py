"""The weekly report printed to PDF by Debian's headless Chromium (no browser is downloaded)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.report import build_weekly_report

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture
def chromium() -> str:
    """Debian's Chromium; a skip when missing, a failure if GOODPUT_REQUIRE_BROWSER is set."""
    if not CHROMIUM.exists():
        if os.environ.get("GOODPUT_REQUIRE_BROWSER"):
            pytest.fail("/usr/bin/chromium missing: run scripts/install-system-deps.sh")
        pytest.skip("/usr/bin/chromium not installed (scripts/install-system-deps.sh)")
    return str(CHROMIUM)


def test_weekly_report_pdf(serving: Path, tmp_path: Path, chromium: str) -> None:
    """report.pdf is a PDF beside report.html; a kept snapshot without a PDF gets one printed."""
    paths = build_weekly_report(serving, "2026-W45", tmp_path, chromium=chromium)
    assert paths.pdf is not None and paths.pdf == paths.folder / "report.pdf"
    assert paths.pdf.read_bytes()[:4] == b"%PDF"
    assert paths.pdf.stat().st_size > 10_000
    assert not list(paths.folder.glob("*.tmp"))
    html_stamp = paths.html.stat().st_mtime_ns
    paths.pdf.unlink()
    kept = build_weekly_report(serving, "2026-W45", tmp_path, chromium=chromium)
    assert kept.written is False and kept.html.stat().st_mtime_ns == html_stamp
    assert kept.pdf is not None and kept.pdf.read_bytes()[:4] == b"%PDF"
