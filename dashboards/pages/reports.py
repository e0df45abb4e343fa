"""Reports: the weekly reports kept beside the serving copy, newest first."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboards import queries
from pipelines.report import IsoWeek, ReportError

#: File name → (button label, MIME type), in the order the buttons are drawn.
_FILES = {
    "report.html": ("HTML", "text/html"),
    "report.pdf": ("PDF", "application/pdf"),
    "report.json": ("JSON", "application/json"),
}


def _weeks(root: Path) -> list[tuple[IsoWeek, Path]]:
    """``(week, folder)`` of every ``<root>/<YYYY-Www>/`` folder, newest first."""
    found = []
    for folder in root.iterdir() if root.is_dir() else ():
        try:
            week = IsoWeek.parse(folder.name)
        except ReportError:
            continue
        if folder.is_dir():
            found.append((week, folder))
    return sorted(found, reverse=True)


st.title("Weekly reports")

root = Path(queries.serving_path()).parent / "reports"
weeks = _weeks(root)
if not weeks:
    st.info(f"No weekly reports in {root}: run `goodput report`.")
    st.stop()

st.caption(f"{len(weeks)} week(s) in {root}; a week's report is a snapshot taken when it was made.")
for week, folder in weeks:
    st.subheader(str(week))
    shown = [(name, *_FILES[name]) for name in _FILES if (folder / name).is_file()]
    if not shown:
        st.caption("No report files in this folder.")
        continue
    for col, (name, label, mime) in zip(st.columns(len(shown)), shown, strict=True):
        col.download_button(
            label,
            (folder / name).read_bytes(),
            f"goodput-{week}-{name}",
            mime=mime,
            key=f"report_{week}_{name}",
            on_click="ignore",
        )
