"""SQL: read-only queries over the documented views, as a table, a CSV and a quick chart."""

from __future__ import annotations

import plotly.express as px
import polars as pl
import streamlit as st

from dashboards import _charts, queries
from pipelines.config import load_config
from pipelines.warehouse.safe_sql import QueryResult, SqlRefused, run_query_counted

DEFAULT_QUERY = (
    "SELECT cluster, day, occupancy, allocated_gpu_s / 3600 AS allocated_gpu_h\n"
    "FROM occupancy_daily\nORDER BY cluster, day"
)


@st.cache_data(ttl=60, max_entries=32)
def _run(path: str, query: str, row_limit: int) -> QueryResult:
    """The query's first ``row_limit`` rows and its true row count, under ``[sql]``'s limits.

    Like :func:`dashboards.queries.run_sql`, which returns the rows alone, plus the count.
    """
    cfg = load_config()
    return run_query_counted(
        path, query, row_limit=row_limit, time_limit_s=cfg.sql_time_limit_s,
        memory_limit=cfg.sql_memory_limit,
    )  # fmt: skip


st.title("SQL")
st.caption(
    "One read-only statement over the views below (the serving copy; no files, no settings, "
    "no writes). The shared filters do not apply here: write them into the query."
)

path = queries.serving_path()
columns = queries.view_columns(path)
with st.expander(f"Views ({columns['view'].n_unique() if columns.height else 0}) and columns"):
    st.dataframe(columns, key="sql_views_table", hide_index=True)
    st.caption("Definitions: sql/README.md and METRICS.md.")

query = st.text_area("Query", value=DEFAULT_QUERY, height=160, key="sql_text")
row_limit = st.number_input(
    "Row limit", min_value=1, max_value=100_000, value=10_000, step=1_000, key="sql_row_limit"
)
if not query or not query.strip():
    st.stop()
try:
    counted = _run(path, query, int(row_limit))
except SqlRefused as exc:
    st.error(str(exc))
    st.stop()
except FileNotFoundError as exc:
    st.warning(str(exc))
    st.stop()

result = counted.rows
shown = counted.shown() if counted.capped else f"{result.height:,} rows"
st.caption(f"{shown} × {result.width} columns")
_charts.table(result, key="sql_result", csv=False, human_labels=False)
_charts.download(result, key="sql_result")

numeric = [c for c, t in result.schema.items() if t.is_numeric()]
temporal = [c for c, t in result.schema.items() if t.is_temporal()]
# A chart needs two rows and an x that is not the y: one number (e.g. a count) is not drawn.
axes = [c for c in result.columns if c not in numeric[-1:]] if numeric else []
if result.height < 2 or not axes:
    if result.height:
        st.caption("No quick chart: it needs at least two rows, a number column and another one.")
else:
    st.subheader("Quick chart")
    c1, c2, c3, c4 = st.columns(4)
    first = (
        temporal[0]
        if temporal
        else next((c for c in result.columns if c not in numeric), result.columns[0])
    )
    x = c1.selectbox(
        "x", result.columns, key="sql_chart_x", index=result.columns.index(first),
    )  # fmt: skip
    ys = [c for c in numeric if c != x] or numeric
    y = c2.selectbox("y", ys, index=len(ys) - 1, key="sql_chart_y")
    others = [c for c in result.columns if c not in (x, y)]
    labels = [c for c in others if result.schema[c] == pl.String]
    color = c3.selectbox(
        "colour", ["(none)", *others], key="sql_chart_color",
        index=1 + others.index(labels[0]) if labels else 0,
    )  # fmt: skip
    kind = c4.radio("kind", ["line", "bar", "scatter"], horizontal=True, key="sql_chart_kind")
    plot = {"line": px.line, "bar": px.bar, "scatter": px.scatter}[kind]
    hue = color if color in others else None
    data = result.select(list(dict.fromkeys(c for c in (x, y, hue) if c is not None)))
    fig = plot(
        data, x=x, y=y, color=hue,
        color_discrete_map=_charts.color_map("cluster", data[hue]) if hue == "cluster" else {},
    )  # fmt: skip
    if x in temporal:
        fig.update_xaxes(tickformat="%Y-%m-%d")
    _charts.legend_below(fig)
    _charts.chart(fig, data, key="sql_chart", definition=f"{y} by {x} from the query above.")
