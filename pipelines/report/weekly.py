"""The weekly fairness report: one self-contained HTML page and its PDF, kept per ISO week.

The numbers come from the serving copy's documented views (``sql/report/*.sql``); the page is
rendered from ``templates/weekly.html.j2`` with plotly charts and plotly.js inlined (no external
URL is loaded), and Debian's Chromium prints it to PDF. A ``report.json`` sidecar beside the page
holds every number exactly. A week's report is a snapshot: it is never rewritten unless forced.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import polars as pl
from markupsafe import Markup

from metrics import wait_percentiles_km
from metrics.headlines import AVOIDABLE_LEAVES
from metrics.periods import covered_hours, is_complete, latest_complete_week, scope_bounds
from metrics.schema import WATERFALL_LEAVES
from pipelines.privacy import user_names_of
from pipelines.report._common import (
    IsoWeek,
    ReportError,
    fmt_hours,
    fmt_number,
    fmt_pct,
    query,
)
from pipelines.report.changes import week_changes
from pipelines.report.narrative import Driver, Facts, contributions, most_owed
from pipelines.report.narrative import narrative as shared_narrative
from pipelines.report.palette import LEAF_COLORS, SERIES_COLORS, cluster_colors, team_colors
from pipelines.warehouse import table_exists
from pipelines.warehouse.safe_sql import open_readonly

__all__ = [
    "CHROMIUM_FLAGS",
    "BrowserNotFound",
    "ReportPaths",
    "build_weekly_report",
    "collect_weekly",
    "find_chromium",
    "latest_complete_report_week",
    "narrative",
    "print_pdf",
    "render_weekly_html",
]

_TEMPLATES = Path(__file__).resolve().parent / "templates"

#: Chromium's flags for printing: headless, no sandbox (runs as root in CI), nothing fetched,
#: and shared memory in /tmp rather than /dev/shm (64 MiB in a Kubernetes pod or a Docker
#: container unless raised; a page that outgrows it crashes the renderer).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-pdf-header-footer",
)

_SEVERITY_RANK = {"critical": 0, "high": 1, "warning": 2, "medium": 2, "low": 3, "info": 4}
_TOP_RECOMMENDATIONS = 5
_LONGEST_WAITS = 5


class BrowserNotFound(ReportError):
    """No Chromium to print the PDF with (``$GOODPUT_CHROMIUM``, ``chromium`` on PATH)."""


@dataclass(frozen=True)
class ReportPaths:
    """Where a week's report lies.

    Attributes:
        week: ``YYYY-Www``.
        folder: ``<out_dir>/<week>/``.
        html: the self-contained page.
        json: the sidecar with every number of the page.
        pdf: the printed page; ``None`` when not asked for.
        written: False when an existing snapshot was kept (not rewritten).
    """

    week: str
    folder: Path
    html: Path
    json: Path
    pdf: Path | None
    written: bool


# --------------------------------------------------------------------------------------------
# Collecting the numbers


def _rows(df: pl.DataFrame) -> list[dict[str, Any]]:
    return [_jsonable(r) for r in df.iter_rows(named=True)]


def _jsonable(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, dt.datetime | dt.date):
            out[k] = v.isoformat()
        elif isinstance(v, float) and math.isnan(v):
            out[k] = None
        else:
            out[k] = v
    return out


def _by_cluster(rows: Sequence[Mapping[str, Any]]) -> dict[str | None, Mapping[str, Any]]:
    return {r["cluster"]: r for r in rows}


def _p90(spells: pl.DataFrame) -> dict[str | None, dict[str, Any]]:
    """KM p90 of large-job waits per cluster and for the fleet (key ``None``)."""
    out: dict[str | None, dict[str, Any]] = {}
    if spells.height == 0:
        return out
    lf = spells.lazy()
    fleet = wait_percentiles_km(lf, quantiles=(0.9,)).collect()
    per = wait_percentiles_km(lf, by=("cluster",), quantiles=(0.9,)).collect()
    for cluster, frame in (
        (None, fleet),
        *((c, per.filter(pl.col("cluster") == c)) for c in per["cluster"].to_list()),
    ):
        r = frame.row(0, named=True)
        out[cluster] = {
            "large_wait_p90_s": r["km_p90_s"],
            "large_wait_p90_reason": r["km_p90_reason"],
            "large_wait_p90_naive_s": r["naive_p90_s"],
            "large_spells": r["spells"],
            "large_censored": r["censored"],
        }
    return out


def _headline(
    con: duckdb.DuckDBPyConnection, week: IsoWeek, large_job_gpus: float
) -> dict[str | None, dict[str, Any]]:
    """Per cluster and fleet (``None``): occupancy, GPU-hours, goodput, p90 wait, Jain."""
    span = {"start": week.start, "end": week.end}
    occ = _by_cluster(_rows(query(con, "week_occupancy", **span)))
    good = _by_cluster(_rows(query(con, "week_goodput", **span)))
    fair = _by_cluster(_rows(query(con, "week_fairness_summary", week=week.start)))
    waits = _p90(query(con, "large_waits", min_gpus=large_job_gpus, **span))
    out: dict[str | None, dict[str, Any]] = {}
    for cluster, o in occ.items():
        g = good.get(cluster, {})
        f = fair.get(cluster, {})
        w = waits.get(
            cluster,
            {"large_wait_p90_s": None, "large_wait_p90_reason": "no large jobs became eligible",
             "large_wait_p90_naive_s": None, "large_spells": 0, "large_censored": 0},
        )  # fmt: skip
        out[cluster] = {
            "cluster": cluster,
            "hours": o["hours"],
            "occupancy": o["occupancy"],
            "allocated_gpu_h": o["allocated_gpu_s"] / 3600.0,
            "available_gpu_h": o["available_gpu_s"] / 3600.0,
            "capacity_gpu_h": o["capacity_gpu_s"] / 3600.0,
            "goodput_ratio": g.get("goodput_ratio"),
            "goodput_gpu_h": (g.get("goodput_gpu_s") or 0.0) / 3600.0,
            "telemetry_coverage": g.get("telemetry_coverage"),
            **w,
            "jain_index": f.get("jain_index"),
            "unmet_entitlement": f.get("unmet_entitlement"),
            "fairness_teams": f.get("teams"),
        }
    return out


_DELTA_METRICS = (
    ("occupancy", "Occupancy", "pct"),
    ("allocated_gpu_h", "Allocated GPU-hours", "gpu_h"),
    ("goodput_ratio", "Goodput ratio", "pct"),
    ("telemetry_coverage", "Telemetry coverage", "pct"),
    ("large_wait_p90_s", "p90 wait, large jobs", "duration"),
    ("jain_index", "Jain's index", "index"),
    ("unmet_entitlement", "Unmet entitlement", "pct"),
)


def _deltas(this: Mapping[str, Any], last: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    for key, label, unit in _DELTA_METRICS:
        now = this.get(key)
        before = last.get(key) if last else None
        delta = now - before if now is not None and before is not None else None
        out.append(
            {"metric": key, "label": label, "unit": unit, "this_week": now,
             "last_week": before, "delta": delta}
        )  # fmt: skip
    return out


def _team_changes(
    this: Sequence[Mapping[str, Any]], last: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Fleet-level entitlement ratio and debt per team, this week against last, largest first."""
    before = {r["team"]: r for r in last if r["cluster"] is None}
    out = []
    for r in this:
        if r["cluster"] is not None:
            continue
        b = before.get(r["team"], {})
        e_now, e_before = r["entitlement_ratio"], b.get("entitlement_ratio")
        d_now, d_before = r["fair_share_debt_gpu_h"], b.get("fair_share_debt_gpu_h")
        out.append(
            {
                "team": r["team"],
                "entitlement_ratio": e_now,
                "entitlement_ratio_last_week": e_before,
                "entitlement_ratio_delta": (
                    e_now - e_before if e_now is not None and e_before is not None else None
                ),
                "debt_gpu_h": d_now,
                "debt_gpu_h_last_week": d_before,
                "debt_gpu_h_delta": (
                    d_now - d_before if d_now is not None and d_before is not None else None
                ),
            }
        )
    out.sort(key=lambda c: -abs(c["debt_gpu_h_delta"] or 0.0))
    return out


def load_recommendations(path: Path | None) -> dict[str, Any]:
    """The top recommendations of ``latest.json`` (most severe first), or why there are none.

    Args:
        path: the file: an object with ``as_of`` and a ``recommendations`` list of objects with
            ``id, rule, scope, severity, change_text, expected_gain``.

    Returns:
        ``{"source", "as_of", "total", "items", "note"}``; ``note`` says why ``items`` is empty.
    """
    empty: dict[str, Any] = {
        # the file's name, not its path: a published report names no folder of the machine
        "source": path.name if path else None, "as_of": None, "total": 0, "items": [],
        "note": "No recommendations yet.",
    }  # fmt: skip
    if path is None or not path.exists():
        return empty
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {
            **empty,
            "note": f"The recommendations file could not be read ({exc.__class__.__name__}).",
        }
    recs = raw.get("recommendations") if isinstance(raw, dict) else None
    if not isinstance(recs, list):
        return {**empty, "note": "The recommendations file holds no `recommendations` list."}
    fields = ("id", "rule", "scope", "severity", "change_text", "expected_gain")
    items = [{f: r.get(f) for f in fields} for r in recs if isinstance(r, dict)]
    items.sort(key=lambda r: _SEVERITY_RANK.get(str(r["severity"]).lower(), 5))
    return {
        "source": path.name,
        "as_of": raw.get("as_of"),
        "total": len(items),
        "items": items[:_TOP_RECOMMENDATIONS],
        "note": None if items else "No recommendations yet.",
    }


def latest_complete_report_week(serving_db: str | Path) -> IsoWeek:
    """The latest ISO week the serving copy's data cover whole, every cluster alike
    (:func:`metrics.periods.latest_complete_week`): the report's default week.

    Raises:
        ReportError: no week is complete yet (the message gives the data's span).
        FileNotFoundError: no such serving copy.
    """
    con = open_readonly(serving_db)
    try:
        bounds = query(con, "period_bounds")
    finally:
        con.close()
    cut, begin = scope_bounds(bounds["as_of"].to_list(), bounds["data_from"].to_list())
    start = latest_complete_week(cut, begin)
    if start is None:
        span = f"{begin:%Y-%m-%d %H:%M} to {cut:%Y-%m-%d %H:%M} UTC" if cut and begin else "none"
        raise ReportError(
            f"no complete ISO week in {serving_db} yet (data: {span}); pick a week with --week "
            "to report a partial one"
        )
    return IsoWeek.of(start)


def _topology(con: duckdb.DuckDBPyConnection, span: Mapping[str, object]) -> list[dict[str, Any]]:
    """Per cluster with a topology map, the week's topology headline numbers
    (``sql/report/week_topology.sql``); none from a serving copy without the topology views."""
    try:
        return _rows(query(con, "week_topology", **span))
    except duckdb.CatalogException:
        return []


def collect_weekly(
    serving_db: str | Path,
    week: IsoWeek,
    *,
    large_job_gpus: float = 64.0,
    recommendations: Path | None = None,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Every number of one week's report, JSON-ready (the sidecar's content).

    User names are as the serving copy holds them: pseudonyms unless it was published with
    ``GOODPUT_SHOW_USER_NAMES=1`` (``user_names`` says which).

    Args:
        serving_db: the serving copy (opened read-only, locked down).
        week: the ISO week.
        large_job_gpus: "large" job threshold (GPUs) for the p90 wait.
        recommendations: ``latest.json`` of the recommendations; ``None`` or missing = none yet.
        now: the generation time (default: now, UTC).

    Raises:
        ReportError: the serving copy has no occupancy data in that week.
        FileNotFoundError: no such serving copy.
    """
    con = open_readonly(serving_db)
    try:
        user_names = user_names_of(con)
        heads = _headline(con, week, large_job_gpus)
        if None not in heads:
            raise ReportError(f"no data for {week} ({week.start:%Y-%m-%d} to "
                              f"{week.end:%Y-%m-%d}) in {serving_db}")  # fmt: skip
        prev = _headline(con, week.previous(), large_job_gpus)
        span = {"start": week.start, "end": week.end}
        teams = _rows(query(con, "week_fairness", week=week.start))
        teams_last = _rows(query(con, "week_fairness", week=week.previous().start))
        team_universe = [str(t) for t in query(con, "team_universe")["team"]]
        waterfall = _rows(query(con, "week_waterfall", **span))
        daily = _rows(query(con, "week_occupancy_daily", **span))
        waits = _rows(query(con, "week_longest_waits", limit=_LONGEST_WAITS, **span))
        topology = _topology(con, span)
        as_of_df = query(con, "data_as_of")
        bounds = query(con, "period_bounds")
        changes = week_changes(
            query(con, "policy_changes") if table_exists(con, "policy_changes") else None,
            query(con, "policy_change_impact")
            if table_exists(con, "policy_change_impact")
            else None,
            week.start,
            week.end,
        )
    finally:
        con.close()
    cut, begin = scope_bounds(bounds["as_of"].to_list(), bounds["data_from"].to_list())
    complete = is_complete(week.start, week.end, as_of=cut, data_from=begin)
    if not complete:  # a partial week is never compared as if whole
        prev, teams_last = {}, []
    for w in waits:
        w["user"] = w.pop("user_name")
    as_of: dt.datetime | None = as_of_df["as_of"].max()  # type: ignore[assignment]
    fleet = heads[None]
    data: dict[str, Any] = {
        "week": str(week),
        "week_start": week.start.isoformat(),
        "week_end": week.end.isoformat(),
        "previous_week": str(week.previous()),
        "generated_at": (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
        "as_of": as_of.isoformat() if as_of else None,
        "as_of_by_cluster": {r["cluster"]: r["as_of"] for r in _rows(as_of_df)},
        "complete": complete,
        "covered_h": covered_hours(week.start, week.end, as_of=cut, data_from=begin),
        "large_job_gpus": large_job_gpus,
        "user_names": user_names,
        "fleet": fleet,
        "clusters": [v for k, v in sorted(heads.items(), key=lambda kv: str(kv[0])) if k],
        "previous": prev.get(None),
        "previous_clusters": [v for k, v in sorted(prev.items(), key=lambda kv: str(kv[0])) if k],
        "deltas": _deltas(fleet, prev.get(None)),
        "teams": teams,
        "team_universe": team_universe,
        "team_changes": _team_changes(teams, teams_last),
        "waterfall": [{**r, "gpu_h": r["gpu_s"] / 3600.0} for r in waterfall],
        "daily": daily,
        "longest_waits": waits,
        "topology": topology,
        "recommendations": load_recommendations(recommendations),
        "policy_changes": changes,
    }
    data["narrative"] = narrative(data)
    return data


# --------------------------------------------------------------------------------------------
# The narrative


def _waste(data: Mapping[str, Any]) -> dict[str, Any]:
    """The fleet's avoidable waste of the week (METRICS.md), from the report's waterfall rows."""
    fleet = [r for r in data.get("waterfall", []) if r.get("cluster") is None]
    capacity = sum(float(r["gpu_s"]) for r in fleet)
    leaves = {
        r["bucket"]: float(r["gpu_s"]) / 3600.0 for r in fleet if r["bucket"] in AVOIDABLE_LEAVES
    }
    if capacity <= 0:
        return {}
    leaf = max(sorted(leaves), key=lambda k: leaves[k]) if leaves else None
    total = sum(leaves.values())
    return {
        "waste_gpu_h": total,
        "waste_share": total * 3600.0 / capacity,
        "waste_leaf": leaf,
        "waste_leaf_gpu_h": leaves.get(leaf) if leaf else None,
    }


def _cluster_drivers(data: Mapping[str, Any]) -> list[Driver]:
    """Each cluster's contribution to the fleet's occupancy change (:func:`contributions`)."""
    this, last = data.get("clusters") or [], data.get("previous_clusters") or []
    now_avail = (data["fleet"] or {}).get("available_gpu_h") or 0.0
    prev_avail = (data.get("previous") or {}).get("available_gpu_h") or 0.0
    if not this or not last or now_avail <= 0 or prev_avail <= 0:
        return []
    frame = [pl.DataFrame({"cluster": [r["cluster"] for r in rows],
                           "allocated_gpu_h": [float(r["allocated_gpu_h"]) for r in rows]})
             for rows in (this, last)]  # fmt: skip
    return contributions(frame[0], frame[1], key="cluster", part="allocated_gpu_h",
                         whole_now=now_avail, whole_before=prev_avail)  # fmt: skip


def narrative(data: Mapping[str, Any]) -> list[str]:
    """Templated sentences built from the week's numbers (no external service): the shared
    :func:`pipelines.report.narrative.narrative` of the Overview page, on the report's numbers.

    Args:
        data: :func:`collect_weekly` output (without ``narrative``).
    """
    f = data["fleet"]
    deltas = {d["metric"]: d["delta"] for d in data["deltas"]}
    recs = data["recommendations"]
    facts = Facts(
        period=data["week"],
        complete=bool(data["complete"]),
        covered_h=data.get("covered_h", 0.0),
        as_of=data["as_of"],
        occupancy=f["occupancy"],
        allocated_gpu_h=f["allocated_gpu_h"],
        available_gpu_h=f["available_gpu_h"],
        occupancy_delta=deltas.get("occupancy"),
        occupancy_drivers=_cluster_drivers(data),
        goodput_ratio=f["goodput_ratio"],
        goodput_delta=deltas.get("goodput_ratio"),
        telemetry_coverage=f.get("telemetry_coverage"),
        **_waste(data),
        large_job_gpus=float(data["large_job_gpus"]),
        large_spells=int(f.get("large_spells") or 0),
        large_p90_s=f.get("large_wait_p90_s"),
        large_p90_reason=f.get("large_wait_p90_reason"),
        jain_index=f.get("jain_index"),
        unmet_entitlement=f.get("unmet_entitlement"),
        most_owed=most_owed([t for t in data["teams"] if t["cluster"] is None]),
        recommendations_total=int(recs["total"]),
        top_recommendation=recs["items"][0]["change_text"] if recs["total"] else None,
    )
    return shared_narrative(facts)


# --------------------------------------------------------------------------------------------
# Rendering


def _figure_html(fig: Any, div_id: str) -> Markup:
    fig.update_layout(
        template="plotly_white", width=700, height=300,
        margin={"l": 50, "r": 10, "t": 40, "b": 40}, font={"size": 11},
    )  # fmt: skip
    html = fig.to_html(
        full_html=False, include_plotlyjs=False, div_id=div_id,
        config={"staticPlot": True, "displaylogo": False, "responsive": False},
    )  # fmt: skip
    # plotly's own markup; the data values in it are JSON-encoded by plotly.
    return Markup(html)


def _charts(data: Mapping[str, Any]) -> dict[str, Markup]:
    return {name: _figure_html(fig, f"chart-{name}") for name, fig in _figures(data).items()}


def _figures(data: Mapping[str, Any]) -> dict[str, Any]:
    """The report's plotly figures, coloured from :mod:`pipelines.report.palette` (the
    dashboard's colours): occupancy per cluster and day, the waterfall, used and fair per team,
    fair-share debt per team (each team in its colour, resolved over ``team_universe`` as the
    dashboard's Fairness page does)."""
    import plotly.graph_objects as go

    charts: dict[str, Any] = {}
    daily = data["daily"]
    fig = go.Figure()
    clusters_c = cluster_colors(r["cluster"] for r in daily)
    for cluster in sorted({r["cluster"] for r in daily}):
        rows = [r for r in daily if r["cluster"] == cluster]
        fig.add_bar(x=[r["day"][:10] for r in rows], y=[r["occupancy"] for r in rows], name=cluster,
                    marker_color=clusters_c.get(cluster))  # fmt: skip
    fig.update_layout(title="Occupancy per UTC day", yaxis_tickformat=".0%", barmode="group")
    fig.update_xaxes(type="category")
    charts["occupancy"] = fig

    wf = [r for r in data["waterfall"] if r["cluster"] is not None]
    clusters = sorted({r["cluster"] for r in wf})
    fig = go.Figure()
    for leaf in WATERFALL_LEAVES:
        vals = {r["cluster"]: r["gpu_h"] for r in wf if r["bucket"] == leaf}
        fig.add_bar(
            y=clusters, x=[vals.get(c, 0.0) for c in clusters], name=leaf, orientation="h",
            marker_color=LEAF_COLORS[leaf],
        )  # fmt: skip
    fig.update_layout(title="Where the GPU-hours went (waterfall leaves)", barmode="stack",
                      xaxis_title="GPU-hours", height=260)  # fmt: skip
    charts["waterfall"] = fig

    teams = [
        t for t in data["teams"]
        if t["cluster"] is None and ((t["demand_gpu_s"] or 0) > 0 or (t["used_gpu_s"] or 0) > 0)
    ]  # fmt: skip
    fig = go.Figure()
    fig.add_bar(x=[t["team"] for t in teams], y=[t["used_gpu_s"] / 3600 for t in teams],
                name="used", marker_color=SERIES_COLORS["used"])  # fmt: skip
    fig.add_bar(x=[t["team"] for t in teams], y=[(t["fair_gpu_s"] or 0) / 3600 for t in teams],
                name="fair", marker_color=SERIES_COLORS["fair"])  # fmt: skip
    fig.update_layout(title="Used and fair GPU-hours per team (fleet)", barmode="group",
                      yaxis_title="GPU-hours")  # fmt: skip
    charts["teams"] = fig

    owed = sorted(teams, key=lambda t: -(t.get("fair_share_debt_gpu_h") or 0.0))
    team_c = team_colors([t["team"] for t in owed], data.get("team_universe", ()))
    fig = go.Figure()
    for t in owed:
        fig.add_bar(x=[t["team"]], y=[t.get("fair_share_debt_gpu_h") or 0.0], name=t["team"],
                    marker_color=team_c[t["team"]], showlegend=False)  # fmt: skip
    fig.update_layout(title="Fair-share debt per team (fleet; positive: the team is owed)",
                      yaxis_title="GPU-hours")  # fmt: skip
    charts["debt"] = fig
    return charts


def _fmt_delta(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    sign = "+" if value > 0 else "−" if value < 0 else "±"
    mag = abs(value)
    if unit == "pct":
        return f"{sign}{mag * 100:.1f} pt"
    if unit == "duration":
        return f"{sign}{fmt_hours(mag)}"
    if unit == "index":
        return f"{sign}{mag:.3f}"
    return f"{sign}{mag:,.1f}"


def _fmt_value(value: float | None, unit: str) -> str:
    if unit == "pct":
        return fmt_pct(value)
    if unit == "duration":
        return fmt_hours(value)
    if unit == "index":
        return "n/a" if value is None else f"{value:.3f}"
    return fmt_number(value)


def _fmt_gain(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return fmt_number(float(value))
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_fmt_gain(v)}" for k, v in value.items())
    return str(value)


def _fmt_gpu_h(seconds: float | None) -> str:
    return fmt_number(None if seconds is None else seconds / 3600.0)


def _exact(value: object) -> str:
    """The exact value for a ``data-value`` attribute (``repr`` of floats round-trips)."""
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def render_weekly_html(data: Mapping[str, Any]) -> str:
    """The self-contained page: inline CSS, charts, plotly.js inlined once, no external URL.

    Args:
        data: :func:`collect_weekly` output.
    """
    from plotly.offline import get_plotlyjs

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=fmt_pct, num=fmt_number, dur=fmt_hours, delta=_fmt_delta, value=_fmt_value,
        gain=_fmt_gain, exact=_exact, gpuh=_fmt_gpu_h,
    )  # fmt: skip
    # plotly.js is trusted markup; guard the inline script against a closing tag anyway.
    plotly_js = Markup(get_plotlyjs().replace("</script", "<\\/script"))
    return env.get_template("weekly.html.j2").render(
        d=data, charts=_charts(data), plotly_js=plotly_js
    )


# --------------------------------------------------------------------------------------------
# PDF and the snapshot


def find_chromium(explicit: str | None = None) -> str:
    """The Chromium binary: ``explicit``, ``$GOODPUT_CHROMIUM``, ``chromium`` on PATH.

    Raises:
        BrowserNotFound: none of them exists.
    """
    for candidate in (explicit, os.environ.get("GOODPUT_CHROMIUM"), shutil.which("chromium"),
                      "/usr/bin/chromium"):  # fmt: skip
        if candidate and Path(candidate).exists():
            return candidate
    raise BrowserNotFound(
        "no Chromium to print the PDF: install Debian's `chromium`, set GOODPUT_CHROMIUM, "
        "or skip the PDF (--no-pdf)"
    )


def print_pdf(
    html: Path, pdf: Path, *, chromium: str | None = None, timeout_s: float = 180.0
) -> Path:
    """Print a local HTML file to PDF with headless Chromium (fresh profile, nothing fetched).

    The PDF is written to a temporary name beside ``pdf`` and renamed over it.

    Raises:
        BrowserNotFound: no Chromium.
        ReportError: Chromium failed, timed out or wrote no PDF.
    """
    binary = find_chromium(chromium)
    pdf.parent.mkdir(parents=True, exist_ok=True)
    tmp = pdf.with_name(pdf.name + ".tmp")
    with tempfile.TemporaryDirectory(prefix="goodput-chromium-") as profile:
        argv = [
            binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--print-to-pdf={tmp}",
            html.resolve().as_uri(),
        ]  # fmt: skip
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            tmp.unlink(missing_ok=True)
            raise ReportError(
                f"chromium did not finish printing {html} in {timeout_s:g} s"
            ) from exc
    try:
        with tmp.open("rb") as fh:
            ok = fh.read(4) == b"%PDF"
    except FileNotFoundError:
        ok = False
    if proc.returncode != 0 or not ok:
        tmp.unlink(missing_ok=True)
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        raise ReportError(f"chromium failed to print {html} (exit {proc.returncode}): {tail}")
    os.replace(tmp, pdf)
    return pdf


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def build_weekly_report(
    serving_db: str | Path,
    week: str | IsoWeek,
    out_dir: str | Path | None = None,
    *,
    force: bool = False,
    pdf: bool = True,
    large_job_gpus: float = 64.0,
    recommendations: Path | None = None,
    chromium: str | None = None,
) -> ReportPaths:
    """Write (or keep) ``<out_dir>/<YYYY-Www>/report.html``, ``report.json`` and ``report.pdf``.

    A week's report is a snapshot: when ``report.html`` exists it is kept as it is unless
    ``force``; only a missing PDF is then printed from the kept page.

    Args:
        serving_db: the serving copy.
        week: ISO week, ``"2026-W45"``.
        out_dir: the reports folder; default ``reports/`` beside ``serving_db``.
        force: rewrite an existing snapshot.
        pdf: print the PDF too (needs Chromium).
        large_job_gpus: "large" job threshold (GPUs).
        recommendations: ``latest.json``; default ``recommendations/latest.json`` beside
            ``serving_db`` (absent = "no recommendations yet").
        chromium: the Chromium binary (default: :func:`find_chromium`).

    Returns:
        The paths, and whether they were written now.

    Raises:
        ReportError: an invalid week or no data for it; :class:`BrowserNotFound` when ``pdf``
            and no Chromium is found (checked before anything is written).
        FileNotFoundError: no such serving copy.
    """
    wk = week if isinstance(week, IsoWeek) else IsoWeek.parse(week)
    db = Path(serving_db)
    root = Path(out_dir) if out_dir is not None else db.parent / "reports"
    folder = root / str(wk)
    html, sidecar, pdf_path = folder / "report.html", folder / "report.json", folder / "report.pdf"
    binary = find_chromium(chromium) if pdf else None
    if html.exists() and not force:
        if binary and not pdf_path.exists():
            print_pdf(html, pdf_path, chromium=binary)
        return ReportPaths(str(wk), folder, html, sidecar, pdf_path if pdf_path.exists() else None,
                           written=False)  # fmt: skip
    recs = recommendations if recommendations is not None else (
        db.parent / "recommendations" / "latest.json"
    )  # fmt: skip
    data = collect_weekly(db, wk, large_job_gpus=large_job_gpus, recommendations=recs)
    page = render_weekly_html(data)
    folder.mkdir(parents=True, exist_ok=True)
    _write_atomic(sidecar, json.dumps(data, indent=2, sort_keys=True) + "\n")
    _write_atomic(html, page)
    if binary:
        print_pdf(html, pdf_path, chromium=binary)
    elif force:
        pdf_path.unlink(missing_ok=True)  # a stale PDF must not outlive the page it printed
    return ReportPaths(str(wk), folder, html, sidecar, pdf_path if binary else None, written=True)
