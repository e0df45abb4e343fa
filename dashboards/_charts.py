"""Page building blocks: every chart comes with its one-line definition and its data as CSV;
every table with human column labels and formats, key columns first, and its data as CSV.

Colours come from :mod:`pipelines.report.palette` (shared with the PDF report), numbers from
:mod:`pipelines.report.formatting`.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
import streamlit as st

from pipelines.report.changes import change_hover, changes_in_window
from pipelines.report.formatting import DATE_FORMAT, DATETIME_FORMAT, GPU_H_FORMAT, HOURS_FORMAT
from pipelines.report.palette import LEAF_COLORS, color_map
from pipelines.warehouse.safe_sql import flat_for_csv

__all__ = [
    "CHANGE_COLOR",
    "DAY_TICKS",
    "KEY_COLUMNS",
    "LEAF_COLORS",
    "annotate_changes",
    "chart",
    "color_map",
    "column_config",
    "csv_bytes",
    "day_axis",
    "download",
    "is_partial_day",
    "label",
    "legend_below",
    "mark_partial_days",
    "table",
    "table_height",
    "week_axis",
]

#: Columns that say what a row is: shown first, in this order, wherever a table has them.
KEY_COLUMNS: tuple[str, ...] = (
    "week",
    "day",
    "cluster",
    "scheduler",
    "source",
    "team",
    "severity",
    "rule",
    "scope",
    "leaf",
    "bucket",
    "lemon_rank",
    "host",
    "job_id",
    "user",
    "view",
)

#: Ratios that are shares of a whole (0 … 1): drawn as a bar with a percentage.
_SHARE_SUFFIXES = ("_share", "share_of_capacity", "_ratio", "occupancy", "activity")
#: Ratios that can pass 1 or go negative: plain numbers.
_NOT_SHARES = ("entitlement_ratio", "drift", "relative_drift")
#: Words spelled out in labels.
_WORDS = {"gpu": "GPU", "gpus": "GPUs", "h": "(h)", "id": "ID", "dq": "DQ", "xid": "XID"}
#: Table rows visible before it scrolls: tall enough that a week of days or every team fits.
_MAX_ROWS = 30
_ROW_PX = 35
#: Suffix of the hours twin of a duration column in seconds.
_HOURS = "_hours"


def label(name: str) -> str:
    """A reader's label for an engine column name: ``fair_share_debt_gpu_h`` → ``fair share
    debt (GPU-h)``, ``p90_s`` → ``p90``, ``share_of_capacity`` → ``share of capacity``."""
    if name.endswith("_gpu_h") or name == "gpu_h":
        head = name.removesuffix("gpu_h").rstrip("_").replace("_", " ")
        return f"{head} (GPU-h)".strip() if head else "GPU-hours"
    if name.endswith("_s"):
        name = name.removesuffix("_s")
    words = [_WORDS.get(w, w) for w in name.split("_")]
    return " ".join(words)


def _is_share(name: str) -> bool:
    return name not in _NOT_SHARES and (name.startswith("share") or name.endswith(_SHARE_SUFFIXES))


def column_config(df: pl.DataFrame, *, human_labels: bool = True) -> dict[str, Any]:
    """Streamlit ``column_config`` for ``df``'s engine columns: GPU-hours with thousands
    separators, shares as percentage bars, durations (``*_s``, seconds) in hours, weeks and days
    as dates, instants to the minute; every column with a human label (or its own name when
    ``human_labels`` is false, e.g. for a user's SQL)."""
    config: dict[str, Any] = {}
    for name, dtype in df.schema.items():
        text = label(name) if human_labels else name
        if dtype == pl.Date or (name in ("week", "day") and dtype.is_temporal()):
            config[name] = st.column_config.DatetimeColumn(
                "week of" if name == "week" and human_labels else text, format=DATE_FORMAT
            )
        elif isinstance(dtype, pl.Datetime):
            config[name] = st.column_config.DatetimeColumn(text + " (UTC)", format=DATETIME_FORMAT)
        elif not dtype.is_numeric():
            config[name] = st.column_config.Column(text)
        elif name.endswith("gpu_h"):
            config[name] = st.column_config.NumberColumn(text, format=GPU_H_FORMAT)
        elif _is_share(name) and dtype.is_float():
            config[name] = st.column_config.ProgressColumn(
                text, format="percent", min_value=0.0, max_value=1.0
            )
        elif name.endswith("_s") and human_labels:
            config[name] = st.column_config.NumberColumn(text + " (s)", format="%d")
            config[name + _HOURS] = st.column_config.NumberColumn(
                text + " (h)", format=HOURS_FORMAT
            )
        elif name.endswith("_h"):
            config[name] = st.column_config.NumberColumn(text, format="%.1f")
        elif dtype.is_float():
            config[name] = st.column_config.NumberColumn(text, format="localized")
        else:
            config[name] = st.column_config.NumberColumn(text, format="%d")
    return config


def _seconds(df: pl.DataFrame) -> list[str]:
    return [c for c, t in df.schema.items() if c.endswith("_s") and t.is_numeric()]


def _display(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` as shown: each duration ``<c>_s`` (seconds) gets an hours twin ``<c>_s_hours``
    that the view shows in its place (a NumberColumn cannot divide); the seconds stay in the data
    and the CSV."""
    seconds = _seconds(df)
    return df.with_columns((pl.col(c) / 3600).alias(c + _HOURS) for c in seconds) if seconds else df


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


def legend_below(fig: Any, *, title: str | None = None) -> Any:
    """A horizontal legend under the plot, so many entries wrap instead of being clipped."""
    fig.update_layout(
        legend={"orientation": "h", "yanchor": "top", "y": -0.2, "xanchor": "left", "x": 0,
                "title": {"text": title} if title is not None else None}
    )  # fmt: skip
    return fig


def week_axis(fig: Any, *, axis: str = "x") -> Any:
    """A week axis: one tick per Monday, as a date (no milliseconds)."""
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    update(tickformat="%Y-%m-%d", dtick=7 * 86_400_000, tick0="2026-01-05")
    return fig


#: The most date ticks a day axis gets across the chart's width (all its facets together): a
#: ``YYYY-MM-DD`` label is about 70 px wide with its gap about 90, so more than this on a
#: laptop screen turns them vertical and the legend below clips them ("2026-10-").
DAY_TICKS = 10


def day_axis(fig: Any) -> Any:
    """A day axis: dates, one tick a day at most.

    One tick a day while the days fit (:data:`DAY_TICKS` across the chart, shared by its facets);
    a longer span gets a tick every whole week, on Mondays (more weeks: every 2, 3, … weeks), so
    the labels stay readable instead of being clipped.
    """
    days = {
        t.date()
        for trace in fig.data
        if trace.x is not None
        for t in (_as_time(x) for x in trace.x)
        if t is not None
    }
    facets = max(1, sum(1 for k in fig.layout.to_plotly_json() if k.startswith("xaxis")))
    fit = max(1, DAY_TICKS // facets)
    span = (max(days) - min(days)).days + 1 if days else 1
    if span <= fit:
        fig.update_xaxes(tickformat="%Y-%m-%d", dtick=86_400_000)
    else:
        weeks = -(-span // (7 * fit))  # ceil: every `weeks` weeks keeps ≤ fit ticks
        fig.update_xaxes(tickformat="%Y-%m-%d", dtick=weeks * 7 * 86_400_000, tick0="2026-01-05")
    return fig


def mark_partial_days(fig: Any, as_of: dt.datetime | None) -> Any:
    """Bars of days that end after the data cut-off ``as_of`` drawn light (lines get a grey band
    behind those days), with a note: a partial day is not a short day (METRICS.md "Complete
    periods")."""
    if as_of is None:
        return fig
    partial = False
    shaded: set[dt.datetime] = set()
    for trace in fig.data:
        if trace.x is None:
            continue
        days = [_as_datetime(x) for x in trace.x]
        flags = [is_partial_day(d, as_of) for d in days]
        if not any(flags):
            continue
        partial = True
        if trace.type == "bar":
            trace.marker.opacity = [0.35 if p else 1.0 for p in flags]
        else:  # a line: shade the partial days behind it
            shaded |= {d for d, p in zip(days, flags, strict=True) if p}
    if shaded:
        fig.add_vrect(
            # naive UTC: plotly.js does not read offsets in date strings
            x0=(min(shaded) - dt.timedelta(hours=12)).replace(tzinfo=None),
            x1=(max(shaded) + dt.timedelta(hours=12)).replace(tzinfo=None),
            fillcolor="#bdbdbd", opacity=0.25, line_width=0, layer="below",
        )  # fmt: skip
    if partial:
        fig.add_annotation(
            text=f"{'grey band' if shaded else 'light bars'}: partial day "
            f"(data to {as_of:%Y-%m-%d %H:%M} UTC)",
            xref="paper", yref="paper", x=1, y=1.08, showarrow=False, xanchor="right",
        )  # fmt: skip
    return fig


def _as_datetime(x: Any) -> dt.datetime:
    if isinstance(x, dt.datetime):
        return x
    if isinstance(x, dt.date):
        return dt.datetime(x.year, x.month, x.day, tzinfo=dt.UTC)
    text = str(x)
    return dt.datetime.fromisoformat(text[:10]).replace(tzinfo=dt.UTC)


#: The colour of a policy change's rule on a time chart (no leaf, cluster or series uses it).
CHANGE_COLOR = "#e7298a"


def _as_time(x: Any) -> dt.datetime | None:
    """An x value as an aware UTC instant, or None when it is not a time."""
    if isinstance(x, dt.datetime):
        return x.astimezone(dt.UTC) if x.tzinfo else x.replace(tzinfo=dt.UTC)
    if isinstance(x, dt.date):
        return dt.datetime(x.year, x.month, x.day, tzinfo=dt.UTC)
    if isinstance(x, np.datetime64):
        text = str(np.datetime_as_string(x.astype("datetime64[s]"), unit="s"))
        return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
    if isinstance(x, str) and len(x) >= 10 and x[4] == "-" and x[7] == "-":
        try:
            parsed = dt.datetime.fromisoformat(x[:19])
        except ValueError:
            return None
        return parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed
    return None


def _time_window(fig: Any) -> tuple[dt.datetime, dt.datetime] | None:
    """The first and last instant of the figure's time x axis (its primary one), the last
    extended by one step when the points are whole days or weeks (a bar of day d covers d);
    None when no trace has times on it."""
    times: list[dt.datetime] = []
    for trace in fig.data:
        if trace.x is None or getattr(trace, "xaxis", None) not in (None, "x"):
            continue
        found = [_as_time(x) for x in trace.x]
        if not found or any(t is None for t in found):
            continue
        times += [t for t in found if t is not None]
    if not times:
        return None
    ordered = sorted(set(times))
    lo, hi = ordered[0], ordered[-1]
    if all(t.hour == t.minute == t.second == 0 for t in ordered):
        steps = [b - a for a, b in itertools.pairwise(ordered)]
        hi += min(steps) if steps else dt.timedelta(days=1)
    return lo, hi


def annotate_changes(
    fig: Any,
    ledger: pl.DataFrame,
    effects: pl.DataFrame | None,
    *,
    cluster: str | None = None,
) -> Any:
    """Mark each policy change in the figure's time window: a dotted vertical rule at its time
    and a ▼ over the plot whose hover says what, who, when and the effect
    (:func:`pipelines.report.changes.change_hover`).

    Args:
        fig: a plotly figure; one without times on its x axis is left as it is.
        ledger: ``policy_changes`` rows (``change_id, cluster, scheduler, object, key, old,
            new, actor, changed_at, changed_after``).
        effects: ``policy_change_impact`` rows, or None (effects not measured yet).
        cluster: keep that cluster's changes only (the page's cluster filter).

    Returns:
        ``fig``, with per change one ``line`` shape and one annotation (a ▼ over the plot
        carrying the hover text), both named ``change <change_id>``; no trace is added.
    """
    window = _time_window(fig)
    if window is None or ledger.height == 0:
        return fig
    inside = changes_in_window(ledger, window[0], window[1], cluster)
    if inside.height == 0:
        return fig
    rows = inside.sort("changed_at").to_dicts()
    # naive UTC: plotly.js does not read offsets in date strings
    xs = [r["changed_at"].astimezone(dt.UTC).replace(tzinfo=None) for r in rows]
    for r, x in zip(rows, xs, strict=True):
        fig.add_shape(
            type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1,
            line={"color": CHANGE_COLOR, "width": 1, "dash": "dot"},
            name=f"change {r['change_id']}",
        )  # fmt: skip
        fig.add_annotation(
            x=x, xref="x", y=1, yref="paper", yanchor="bottom", text="▼", showarrow=False,
            font={"color": CHANGE_COLOR, "size": 12}, hovertext=change_hover(r, effects),
            name=f"change {r['change_id']}",
        )  # fmt: skip
    return fig


def _page_changes(fig: Any) -> None:
    """:func:`annotate_changes` with the serving copy's ledger and the page's cluster filter;
    nothing when the copy has no ledger."""
    from dashboards import _filters, queries  # _filters imports queries: kept out of import time

    marks = queries.change_marks(queries.serving_path())
    if marks is None:
        return
    chosen = st.session_state.get(_filters.STATE_KEY) or {}
    cluster = chosen.get("cluster")
    annotate_changes(fig, marks[0], marks[1], cluster=None if cluster in (None, _filters.ALL)
                     else str(cluster))  # fmt: skip


def chart(fig: Any, data: pl.DataFrame, *, key: str, definition: str) -> None:
    """A plotly figure, its definition (METRICS.md) as a caption, and its data as CSV.

    A figure with a time x axis carries the policy changes in its window
    (:func:`annotate_changes`).

    Args:
        fig: the plotly figure.
        data: the frame the figure shows (offered as ``<key>.csv``).
        key: stable element key prefix: ``<key>_chart``, ``<key>_csv``.
        definition: one line saying what the numbers are.
    """
    _page_changes(fig)
    st.plotly_chart(fig, key=f"{key}_chart")
    st.caption(definition)
    download(data, key=key)


def table(
    df: pl.DataFrame,
    *,
    key: str,
    caption: str | None = None,
    sort_by: str | Sequence[str] | None = None,
    descending: bool = True,
    hide: Sequence[str] = (),
    csv: bool = True,
    human_labels: bool = True,
) -> None:
    """A data table (element key ``<key>_table``) with its CSV download (``<key>_table.csv``).

    The table shows human labels and formats (:func:`column_config`), key columns
    (:data:`KEY_COLUMNS`) first, up to 30 rows before it scrolls; the CSV keeps the engine
    names and values.

    Args:
        df: the rows.
        key: stable element key prefix.
        caption: one line under the table.
        sort_by: columns to sort by (what matters most first); ``None`` keeps ``df``'s order.
        descending: the sort direction.
        hide: columns left out of the view (still in the CSV).
        csv: offer the CSV download.
        human_labels: label columns for a reader (else by their own names).
    """
    if sort_by is not None:
        df = df.sort(sort_by, descending=descending, nulls_last=True)
    order = [c for c in KEY_COLUMNS if c in df.columns] if human_labels else []
    order += [c for c in df.columns if c not in order and c not in hide]
    # A reader's table shows durations in hours; a user's SQL result keeps its own units.
    seconds = set(_seconds(df)) if human_labels else set()
    order = [c + _HOURS if c in seconds else c for c in order]
    shown = _display(df) if human_labels else df
    config = column_config(df, human_labels=human_labels)
    st.dataframe(
        shown,
        key=f"{key}_table",
        hide_index=True,
        column_config={c: v for c, v in config.items() if c in shown.columns},
        column_order=order,
        height=table_height(df.height),
    )
    if caption:
        st.caption(caption)
    if csv:
        download(df, key=f"{key}_table")


def table_height(rows: int) -> int:
    """Pixels for ``rows`` rows and the header, at most :data:`_MAX_ROWS` rows."""
    return (min(max(rows, 1), _MAX_ROWS) + 1) * _ROW_PX + 3


def is_partial_day(day: dt.date | dt.datetime, as_of: dt.datetime | None) -> bool:
    """Whether the UTC ``day`` ends after the data cut-off ``as_of`` (its bar is partial)."""
    if as_of is None:
        return False
    start = day if isinstance(day, dt.datetime) else dt.datetime(day.year, day.month, day.day)
    if start.tzinfo is None:
        start = start.replace(tzinfo=dt.UTC)
    return start + dt.timedelta(days=1) > as_of
