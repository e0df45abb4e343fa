"""Filters shared by every page: date range, cluster and team.

Each page calls :func:`render` first; it draws the filter widgets in the sidebar and returns the
:class:`~dashboards.queries.Filters` the page binds into its SQL. The values persist across pages
and reruns in ``st.session_state`` (under one key that is not a widget key, because Streamlit drops
a widget's state when a run does not draw it, as on a page switch) and are mirrored into the URL
with ``st.query_params`` (``?from=2026-11-02&to=2026-11-03&cluster=slurm-a&team=nlp``; a value at
its default is left out), so a filtered view is a shareable link. On a session's first run the URL
seeds the values; invalid or unknown values fall back to the defaults.

Pages draw the widgets themselves, rather than the entry point: Streamlit can run a page file
from ``pages/`` without the entry point (before any session has called ``st.navigation``, and in
``AppTest`` reruns), and the filters must work there too.
"""

from __future__ import annotations

import datetime as dt
from typing import TypedDict

import streamlit as st

from dashboards import queries

__all__ = ["ALL", "KEY_CLUSTER", "KEY_FROM", "KEY_TEAM", "KEY_TO", "STATE_KEY", "render"]

#: The option meaning "no restriction".
ALL = "All"
#: Widget keys; also the URL query parameter names.
KEY_FROM = "from"
KEY_TO = "to"
KEY_CLUSTER = "cluster"
KEY_TEAM = "team"
#: Where the chosen values live in ``st.session_state`` between runs and pages.
STATE_KEY = "goodput_filters"


class _Chosen(TypedDict):
    start: dt.date
    end: dt.date
    cluster: str
    team: str


def _parse_day(text: str | None, lo: dt.date, hi: dt.date, default: dt.date) -> dt.date:
    try:
        day = dt.date.fromisoformat(text) if text else default
    except ValueError:
        return default
    return min(max(day, lo), hi)


def _from_url(first: dt.date, last: dt.date, clusters: list[str], teams: list[str]) -> _Chosen:
    """The values in the URL's query parameters, defaults where absent or invalid."""
    qp = st.query_params
    cluster, team = qp.get(KEY_CLUSTER, ALL), qp.get(KEY_TEAM, ALL)
    return _Chosen(
        start=_parse_day(qp.get(KEY_FROM), first, last, first),
        end=_parse_day(qp.get(KEY_TO), first, last, last),
        cluster=cluster if cluster in clusters else ALL,
        team=team if team in teams else ALL,
    )


def _to_url(chosen: _Chosen, first: dt.date, last: dt.date) -> None:
    """Mirror ``chosen`` into the URL, leaving defaults out (only changed keys are written)."""
    wanted = {
        KEY_FROM: None if chosen["start"] == first else chosen["start"].isoformat(),
        KEY_TO: None if chosen["end"] == last else chosen["end"].isoformat(),
        KEY_CLUSTER: None if chosen["cluster"] == ALL else chosen["cluster"],
        KEY_TEAM: None if chosen["team"] == ALL else chosen["team"],
    }
    for name, value in wanted.items():
        if value is None:
            if name in st.query_params:
                del st.query_params[name]
        elif st.query_params.get(name) != value:
            st.query_params[name] = value


def _clamped(day: dt.date, first: dt.date, last: dt.date) -> dt.date:
    return min(max(day, first), last)


def render(path: str) -> queries.Filters:
    """Draw the filter widgets in the sidebar and return the filters they set.

    Nothing is drawn when the serving copy has no data (the page says how to produce it). A
    range covering every day with data is no date restriction (so the default view shows exactly
    what the views hold); a reversed range is read in order.
    """
    bounds = queries.filter_bounds(path)
    if bounds is None:
        return queries.Filters()
    first, last = bounds
    clusters = [ALL, *queries.filter_values(path, "cluster")]
    teams = [ALL, *queries.filter_values(path, "team")]
    saved: _Chosen = st.session_state.get(STATE_KEY) or _from_url(first, last, clusters, teams)
    with st.sidebar:
        st.subheader("Filters")
        start = st.date_input(
            "From (UTC day)", value=_clamped(saved["start"], first, last),
            min_value=first, max_value=last, key=KEY_FROM,
        )  # fmt: skip
        end = st.date_input(
            "To (UTC day, inclusive)", value=_clamped(saved["end"], first, last),
            min_value=first, max_value=last, key=KEY_TO,
        )  # fmt: skip
        cluster = st.selectbox(
            "Cluster", clusters, key=KEY_CLUSTER,
            index=clusters.index(saved["cluster"]) if saved["cluster"] in clusters else 0,
        )  # fmt: skip
        team = st.selectbox(
            "Team", teams, key=KEY_TEAM,
            index=teams.index(saved["team"]) if saved["team"] in teams else 0,
        )  # fmt: skip
        st.caption("Views without a team (capacity, waterfall, nodes) ignore the team filter.")
    lo = start if isinstance(start, dt.date) else first
    hi = end if isinstance(end, dt.date) else last
    lo, hi = min(lo, hi), max(lo, hi)
    chosen = _Chosen(start=lo, end=hi, cluster=cluster or ALL, team=team or ALL)
    st.session_state[STATE_KEY] = chosen
    _to_url(chosen, first, last)
    return queries.Filters(
        start=None if lo <= first else lo,
        end=None if hi >= last else hi,
        cluster=None if chosen["cluster"] == ALL else chosen["cluster"],
        team=None if chosen["team"] == ALL else chosen["team"],
    )
