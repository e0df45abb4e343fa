"""Time charts carry the policy changes in their window (``dashboards._charts.annotate_changes``):
a dotted rule per change and a hover saying what, who, when and the effect."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import duckdb
import plotly.express as px
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from dashboards import _charts
from tests.dashboards import changes_db

_LEDGER_SCHEMA = ("change_id", "cluster", "scheduler", "scope", "object", "key", "old", "new",
                  "actor", "changed_at", "changed_after", "source")  # fmt: skip


def _ledger() -> pl.DataFrame:
    return pl.DataFrame([dict(zip(_LEDGER_SCHEMA, r, strict=True)) for r in changes_db.LEDGER])


def _effects() -> pl.DataFrame:
    cols = ("change_id", "bundle_id", "cluster", "scope", "kpi", "method", "window_start",
            "window_end", "n_pre", "n_post", "unit", "before", "after", "estimate", "ci_low",
            "ci_high", "p_value", "placebo_p", "mde", "verdict")  # fmt: skip
    return pl.DataFrame([dict(zip(cols, r, strict=True)) for r in changes_db.IMPACT])


def _daily(first: int, last: int) -> object:
    days = [dt.date(2026, 3, d) for d in range(first, last + 1)]
    return px.bar(pl.DataFrame({"day": days, "gpu_h": [1.0] * len(days)}), x="day", y="gpu_h")


def _shapes(fig: object) -> dict[str, str]:
    spec = fig.to_dict()  # type: ignore[attr-defined]
    return {s["name"]: str(s["x0"]) for s in spec["layout"].get("shapes", ())}


def _hovers(fig: object) -> list[str]:
    """The hover texts of the change annotations, in order; no trace was added for them."""
    assert all(not str(t.name).startswith("change") for t in fig.data)  # type: ignore[attr-defined]
    return [
        a.hovertext
        for a in fig.layout.annotations  # type: ignore[attr-defined]
        if str(a.name).startswith("change ")
    ]


def test_a_change_in_the_window_is_marked_one_outside_is_not() -> None:
    """A daily chart of 03-01 … 03-06 covers up to 03-07 00:00: c1 (03-05 10:00) is marked at
    its time, c4 (03-07 12:00), c2 and c3 (03-10) are not. The hover names what, who, when and
    the effect, the KPI by its label: Jain's index +0.050 (95 % CI +0.020 to +0.080), improved."""
    fig = _charts.annotate_changes(_daily(1, 6), _ledger(), _effects())
    assert _shapes(fig) == {"change c1": "2026-03-05 10:00:00"}
    hover = _hovers(fig)
    assert list(hover) == [
        "<b>account=speech shares</b>: 8 → 3<br>who: alice<br>when: 2026-03-05 10:00 UTC<br>"
        "effect: Jain's index of usage ÷ share: +0.050 (95 % CI +0.020 to +0.080), improved "
        "(its)"
    ]


def test_cluster_filter_and_snapshot_changes() -> None:
    """03-01 … 03-15 on k8s-b only: cq-prod's change (03-07 12:00), dated between two
    snapshots, no actor, no effect rows; slurm-a's changes are left out."""
    fig = _charts.annotate_changes(_daily(1, 15), _ledger(), _effects(), cluster="k8s-b")
    assert _shapes(fig) == {"change c4": "2026-03-07 12:00:00"}
    hover = _hovers(fig)[0]
    assert "who: unknown (the Kubernetes API keeps no history of it)" in hover
    assert "when: between 2026-03-06 12:00 and 2026-03-07 12:00 UTC" in hover
    assert hover.endswith("effect: no effect measured for it")


def test_without_effects_and_without_a_time_axis() -> None:
    """Without the impact view the hover says "effects not measured yet"; a chart whose x axis
    is not time (teams) gets no mark."""
    fig = _charts.annotate_changes(_daily(9, 12), _ledger(), None)
    assert _shapes(fig) == {"change c2": "2026-03-10 06:00:00", "change c3": "2026-03-10 06:00:00"}
    hover = _hovers(fig)
    assert all(h.endswith("effect: effects not measured yet") for h in hover)
    teams = px.bar(pl.DataFrame({"team": ["a", "b"], "gpu_h": [1.0, 2.0]}), x="team", y="gpu_h")
    assert _shapes(_charts.annotate_changes(teams, _ledger(), _effects())) == {}


def test_a_page_chart_carries_the_annotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``_charts.chart`` on a page: the figure Streamlit receives has c1's rule and its
    hover (alice, jain improved), and nothing for the changes after 03-07."""
    db = changes_db.build(tmp_path / "s.duckdb")
    monkeypatch.setenv("GOODPUT_SERVING_DB", str(db))
    script = tmp_path / "page.py"
    script.write_text(
        "import datetime as dt\n"
        "import plotly.express as px\nimport polars as pl\n"
        "from dashboards import _charts\n"
        "days = [dt.date(2026, 3, d) for d in range(1, 7)]\n"
        "df = pl.DataFrame({'day': days, 'gpu_h': [1.0] * 6})\n"
        "_charts.chart(px.bar(df, x='day', y='gpu_h'), df, key='t', definition='d')\n",
        encoding="utf-8",
    )
    at = AppTest.from_file(str(script), default_timeout=60)
    at.run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [(s["name"], s["x0"]) for s in spec["layout"]["shapes"]] == [
        ("change c1", "2026-03-05T10:00:00")
    ]
    hovers = [a["hovertext"] for a in spec["layout"]["annotations"] if "hovertext" in a]
    assert len(hovers) == 1 and "who: alice" in hovers[0] and "improved" in hovers[0]
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM policy_changes").fetchall() == [(4,)]
