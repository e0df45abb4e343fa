"""Page building blocks: every chart comes with its one-line definition and its data as CSV."""

from __future__ import annotations

from typing import Any

import polars as pl
import streamlit as st

from pipelines.warehouse.safe_sql import flat_for_csv

__all__ = ["LEAF_COLORS", "chart", "csv_bytes", "download", "table"]

#: One colour per waterfall leaf (the default palette has 10 colours for 11 leaves): greys for
#: capacity that was not there, reds/oranges for lost work, yellow for idle allocations, green
#: for goodput, blues for unallocated capacity.
LEAF_COLORS: dict[str, str] = {
    "down": "#4d4d4d",
    "planned_down": "#a6a6a6",
    "failed_work_infra": "#b2182b",
    "failed_work_user": "#ef6548",
    "preempted_work": "#fd8d3c",
    "timeout_work": "#fdae6b",
    "cancelled_work": "#d9c8a9",
    "allocated_idle": "#ffd92f",
    "goodput": "#1a9850",
    "held": "#6baed6",
    "idle": "#c6dbef",
}


def csv_bytes(df: pl.DataFrame) -> bytes:
    """``df`` as UTF-8 CSV; nested columns as text (see
    :func:`pipelines.warehouse.safe_sql.flat_for_csv`:
    lists of scalars joined with commas, structs and nested lists as JSON)."""
    return flat_for_csv(df).write_csv().encode("utf-8")


def download(df: pl.DataFrame, *, key: str, label: str = "Download CSV") -> None:
    """A CSV download button for ``df`` (file ``<key>.csv``, widget key ``<key>_csv``)."""
    st.download_button(
        label, csv_bytes(df), f"{key}.csv", mime="text/csv", key=f"{key}_csv", on_click="ignore"
    )


def chart(fig: Any, data: pl.DataFrame, *, key: str, definition: str) -> None:
    """A plotly figure, its definition (METRICS.md) as a caption, and its data as CSV.

    Args:
        fig: the plotly figure.
        data: the frame the figure shows (offered as ``<key>.csv``).
        key: stable element key prefix: ``<key>_chart``, ``<key>_csv``.
        definition: one line saying what the numbers are.
    """
    st.plotly_chart(fig, key=f"{key}_chart")
    st.caption(definition)
    download(data, key=key)


def table(df: pl.DataFrame, *, key: str, caption: str | None = None) -> None:
    """A data table (element key ``<key>_table``) with its CSV download (``<key>_table.csv``)."""
    st.dataframe(df, key=f"{key}_table", hide_index=True)
    if caption:
        st.caption(caption)
    download(df, key=f"{key}_table")
