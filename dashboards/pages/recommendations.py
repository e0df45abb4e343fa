"""Recommendations: scheduler-tuning suggestions, their evidence and patches, the patch files."""

from __future__ import annotations

import json

import streamlit as st

from dashboards import _charts, queries
from pipelines.config import load_config
from pipelines.recommendations import OUTPUT_FILES

#: Code-block language per patch kind.
_LANGUAGE = {"sacctmgr": "bash", "scontrol": "bash", "kubernetes-merge-patch": "yaml"}
_COLUMNS = (
    "severity", "rule", "cluster", "scope", "change_text", "expected_gain_gpu_h_per_week",
    "confidence",
)  # fmt: skip

st.title("Recommendations")

path = queries.serving_path()
recs = queries.recommendations(path)
if recs.height == 0:
    st.info(
        f"No recommendations in {path}: run `goodput materialize` (the recommendations asset), "
        "or the rules found nothing to change."
    )
    st.stop()

first = recs.row(0, named=True)
st.caption(
    f"{recs.height} recommendation(s) from data {first['window_start']:%Y-%m-%d} – "
    f"{first['window_end']:%Y-%m-%d} UTC (as of {first['as_of']:%Y-%m-%d %H:%M} UTC). "
    "Review each change before applying it."
)
_charts.table(
    recs.select(_COLUMNS),
    key="recommendations",
    caption=(
        "Most severe first, then by expected gain (GPU-hours per week); confidence 0–1. "
        "The CSV has the shown columns; evidence and patches are below."
    ),
)

st.subheader("Details")
for rec in recs.iter_rows(named=True):
    with st.expander(f"{rec['severity']} · {rec['rule']} · {rec['scope']}"):
        st.markdown(rec["change_text"])
        wait = rec["expected_wait_reduction_s"]
        if wait is not None:
            st.caption(f"Expected wait reduction: {wait / 3600:.1f} h")
        st.markdown("**Evidence**")
        try:
            st.json(json.loads(rec["evidence"]) if rec["evidence"] else {}, expanded=False)
        except (TypeError, ValueError):
            st.code(str(rec["evidence"]))
        if rec["patch_kind"]:
            st.markdown(f"**Patch** ({rec['patch_kind']})")
            st.code(rec["patch_content"] or "", language=_LANGUAGE.get(rec["patch_kind"]))
        else:
            st.caption("No patch: a change to make by hand.")

st.subheader("Patch files")
folder = load_config().warehouse_path.parent / "recommendations"
files = [folder / name for name in ("latest.json", *OUTPUT_FILES.values())]
present = [f for f in files if f.is_file()]
if present:
    for file in present:
        st.download_button(
            file.name, file.read_bytes(), file.name, key=f"rec_file_{file.name}", on_click="ignore"
        )
    st.caption(f"From {folder}; each file holds every recommendation of its scheduler.")
else:
    st.info(f"No patch files in {folder}: run `python -m pipelines.recommendations`.")
