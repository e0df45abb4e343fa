"""The page building blocks: human column labels and formats, week axes, partial days."""

from __future__ import annotations

import datetime as dt

import plotly.express as px
import polars as pl

from dashboards import _charts


def _kind(config: object) -> str:
    return str(config["type_config"]["type"])  # type: ignore[index]


def test_labels_spell_out_engine_names() -> None:
    """GPU-hours, seconds and underscores read as words."""
    assert _charts.label("fair_share_debt_gpu_h") == "fair share debt (GPU-h)"
    assert _charts.label("gpu_h") == "GPU-hours"
    assert _charts.label("p90_s") == "p90"
    assert _charts.label("share_of_capacity") == "share of capacity"
    assert _charts.label("data_age_h") == "data age (h)"


def test_column_config_formats_by_kind() -> None:
    """GPU-hours localized, shares as percentage bars, weeks as dates, waits in hours."""
    df = pl.DataFrame(
        {
            "week": [dt.datetime(2026, 11, 9, tzinfo=dt.UTC)],
            "team": ["nlp"],
            "used_gpu_h": [21728.4],
            "received_share": [0.25],
            "entitlement_ratio": [1.4],
            "p90_s": [5400.0],
        }
    )
    config = _charts.column_config(df)
    assert config["week"]["label"] == "week of"
    assert config["week"]["type_config"]["format"] == "YYYY-MM-DD"
    assert config["used_gpu_h"]["type_config"]["format"] == "localized"
    assert _kind(config["received_share"]) == "progress"
    assert _kind(config["entitlement_ratio"]) == "number"  # can pass 1: not a bar
    assert config["p90_s_hours"]["label"] == "p90 (h)"
    assert config["p90_s_hours"]["type_config"]["format"] == "%.1f h"


def test_tables_grow_to_thirty_rows() -> None:
    """A table shows its rows without scrolling up to 30, then scrolls."""
    assert _charts.table_height(5) == 6 * 35 + 3
    assert _charts.table_height(500) == _charts.table_height(30) == 31 * 35 + 3


def test_week_axis_ticks_are_dates_a_week_apart() -> None:
    """A week axis ticks every 7 days as ``%Y-%m-%d`` (no milliseconds)."""
    fig = px.line(x=[dt.date(2026, 11, 2), dt.date(2026, 11, 9)], y=[1, 2])
    axis = _charts.week_axis(fig).layout.xaxis
    assert axis.tickformat == "%Y-%m-%d" and axis.dtick == 7 * 86_400_000


def test_partial_days_are_drawn_light() -> None:
    """With data to 2026-11-10 12:00 UTC the bar of the 10th is light, the 9th's is not."""
    df = pl.DataFrame({"day": [dt.date(2026, 11, 9), dt.date(2026, 11, 10)], "gpu_h": [24.0, 12.0]})
    fig = px.bar(df, x="day", y="gpu_h")
    as_of = dt.datetime(2026, 11, 10, 12, tzinfo=dt.UTC)
    _charts.mark_partial_days(fig, as_of)
    assert list(fig.data[0].marker.opacity) == [1.0, 0.35]
    assert "partial day" in fig.layout.annotations[0].text


def test_a_whole_day_is_not_partial() -> None:
    """A day that ends at the cut-off is whole."""
    as_of = dt.datetime(2026, 11, 10, tzinfo=dt.UTC)
    assert not _charts.is_partial_day(dt.date(2026, 11, 9), as_of)
    assert _charts.is_partial_day(dt.date(2026, 11, 10), as_of)


def test_partial_days_of_a_line_are_shaded() -> None:
    """A line over a partial day gets a grey band behind that day, and the note."""
    df = pl.DataFrame({"day": [dt.date(2026, 11, 9), dt.date(2026, 11, 10)], "ratio": [0.5, 0.4]})
    fig = px.line(df, x="day", y="ratio")
    _charts.mark_partial_days(fig, dt.datetime(2026, 11, 10, 12, tzinfo=dt.UTC))
    (band,) = fig.layout.shapes
    assert band.x0 == dt.datetime(2026, 11, 9, 12)
    assert band.x1 == dt.datetime(2026, 11, 10, 12)
    assert fig.layout.annotations[0].text.startswith("grey band: partial day")


def _days_fig(days: int, facets: int) -> object:
    start = dt.date(2026, 10, 4)
    df = pl.DataFrame(
        {
            "day": [start + dt.timedelta(days=i) for i in range(days) for _ in range(facets)],
            "cluster": [f"c{j}" for _ in range(days) for j in range(facets)],
            "gpu_h": [1.0] * (days * facets),
        }
    )
    return px.bar(df, x="day", y="gpu_h", facet_col="cluster")


def test_day_axis_keeps_one_tick_a_day_while_they_fit() -> None:
    """Seven days in one chart: a tick a day (7 ≤ DAY_TICKS = 10)."""
    fig = _charts.day_axis(_days_fig(7, 1))
    assert fig.layout.xaxis.dtick == 86_400_000
    assert fig.layout.xaxis.tickformat == "%Y-%m-%d"


def test_day_axis_thins_ticks_of_a_long_span_to_whole_weeks() -> None:
    """44 days (2026-10-04 to 11-16) in 6 facets, as the Waste page's failures chart over the
    bundled fleet: a tick a day drew 44 vertical labels per facet, clipped to "2026-10-". Each
    facet fits max(1, 10 // 6) = 1 tick, so the step is ⌈44 ÷ (7 · 1)⌉ = 7 weeks, on Mondays
    (one label per facet); one chart alone fits 10: ⌈44 ÷ (7 · 10)⌉ = 1 week."""
    six = _charts.day_axis(_days_fig(44, 6))
    assert {six.layout[k].dtick for k in six.layout.to_plotly_json() if k.startswith("xaxis")} == {
        7 * 7 * 86_400_000
    }
    one = _charts.day_axis(_days_fig(44, 1))
    assert one.layout.xaxis.dtick == 7 * 86_400_000
    assert one.layout.xaxis.tick0 == "2026-01-05"  # a Monday
