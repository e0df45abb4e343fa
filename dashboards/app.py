"""goodput dashboard: the entry point (``goodput app`` / ``make run``).

Sets up the page and runs the selected page from ``dashboards/pages/``. Each page draws the
shared filters (:mod:`dashboards._filters`) and lays out its widgets; the data comes from
:mod:`dashboards.queries`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script by Streamlit

import streamlit as st

from dashboards import _auth

PAGES = Path(__file__).resolve().parent / "pages"

st.set_page_config(page_title="goodput", layout="wide")
_auth.gate(sidebar=True)  # [dashboard] auth = "oidc": nothing below runs until the visitor signs in
page = st.navigation(
    [
        st.Page(PAGES / "overview.py", title="Overview", icon=":material/dashboard:", default=True),
        st.Page(PAGES / "waste.py", title="Waste", icon=":material/delete_sweep:"),
        st.Page(PAGES / "fairness.py", title="Fairness", icon=":material/balance:"),
        st.Page(PAGES / "time_to_start.py", title="Time to start", icon=":material/schedule:"),
        st.Page(PAGES / "queue.py", title="Queue now", icon=":material/hourglass_top:"),
        st.Page(PAGES / "topology.py", title="Topology", icon=":material/grid_view:"),
        st.Page(PAGES / "jobs.py", title="Jobs", icon=":material/work:"),
        st.Page(PAGES / "recommendations.py", title="Recommendations", icon=":material/tune:"),
        st.Page(PAGES / "changes.py", title="Changes", icon=":material/history:"),
        st.Page(PAGES / "reports.py", title="Reports", icon=":material/description:"),
        st.Page(PAGES / "sql_query.py", title="SQL", icon=":material/database:", url_path="sql"),
    ]
)
page.run()
