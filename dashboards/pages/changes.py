"""Changes: the policy-change ledger (what, scope, old → new, who, when) and what each did."""

from __future__ import annotations

import streamlit as st

from dashboards import _charts, _filters, queries
from pipelines.report.changes import NOT_MEASURED, effects_table, ledger_table

st.title("Changes")

path = queries.serving_path()
f = _filters.render(path)
st.caption(
    f"{f.describe()} · changes by the time they were made (the team filter does not apply); "
    "actors are pseudonyms"
)

ledger = queries.policy_changes(path, f)
if ledger is None:
    st.warning(
        f"No policy-change ledger in {path}: run `goodput materialize` with the Slurm state "
        "(`sacctmgr list transactions`, `scontrol show config`, `sshare`) or Kueue object "
        "snapshots loaded."
    )
    st.stop()
effects = queries.change_effects(path, f)

# --- what changed ----------------------------------------------------------------------------
st.subheader("What changed")
if ledger.height == 0:
    st.info("No scheduler setting changed in this window.")
else:
    _charts.table(
        ledger_table(ledger, effects, queries.applied_recommendations(path)),
        key="changes_ledger",
        caption=(
            "One row per change; changes estimated together (a bundle: same cluster, close in "
            "time) are one row listing each member. Slurm records no actor and no time for "
            "`scontrol reconfigure`, sshare or Kueue snapshots: the change lies between two "
            "snapshots. Recommendation: the recommendation the change applied and its life so far "
            "(applied → measured → confirmed or regressed). "
            "Newest first."
        ),
    )

# --- what it did -----------------------------------------------------------------------------
st.subheader("What it did")
if effects is None:
    st.info(
        f"{NOT_MEASURED[0].upper()}{NOT_MEASURED[1:]}: this serving copy has no "
        "`policy_change_impact` view."
    )
else:
    shown = effects_table(effects, ledger)
    if shown is None or shown.height == 0:
        st.info("No effect measured for the changes on this cluster.")
    else:
        _charts.table(
            shown,
            key="changes_effects",
            caption=(
                "Effect = the KPI after the change minus what it would have been without it "
                "(its: interrupted time series; did: against untouched clusters; replay: the "
                "scheduler model under the old setting), with its 95 % interval. Placebo p: "
                "the share of fake change dates before the change with an effect as large. "
                "MDE: the smallest effect the window detects (80 % power, 5 % test); the "
                "window is enough to tell when the effect is at least the MDE (METRICS.md)."
            ),
        )
