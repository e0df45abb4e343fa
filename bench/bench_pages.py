"""Benchmark: seconds to render each dashboard page, against an empty page rendered the same way.

Each page of the ``st.navigation`` app is rendered with Streamlit's ``AppTest`` (the script runs
in this process, as the server would run it for a browser session; no network or browser time)
against one serving copy, with the data cache cleared before each measured render (the first
visit after the cache's TTL, the slow case). Per page: the median of ``--repeat`` cold renders,
and one warm render (cache filled); the Jobs page is also measured opening one job by URL
(``jobs?cluster=…&job=…``, the attempt with the most observed GPU-seconds). Baselines measured
in the same command:

- ``empty page``: a page that only draws a title, rendered the same way (the AppTest overhead);
- ``count(*) of the views``: a bare ``SELECT count(*)`` of every view the pages read, on one
  read-only connection (how long the data alone takes to scan).

Without ``--db`` the bundled fleet (``goodput generate --days N``) is generated and materialized
into a temporary folder first (about a minute); ``--db PATH`` points at any serving copy (a large
fleet's, say), with ``--config`` for its goodput.toml when the pages need one.

Usage: ``python bench/bench_pages.py [--db serving.duckdb] [--config goodput.toml] [--repeat 3]
[--days 14] [--workdir DIR] [--markdown]``. Prints one JSON line (and a markdown table with
``--markdown``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

APP = REPO / "dashboards" / "app.py"
#: Page file (dashboards/pages/<name>.py) → title, in navigation order.
PAGES = {
    "overview": "Overview",
    "waste": "Waste",
    "fairness": "Fairness",
    "time_to_start": "Time to start",
    "queue": "Queue now",
    "topology": "Topology",
    "jobs": "Jobs",
    "recommendations": "Recommendations",
    "changes": "Changes",
    "reports": "Reports",
    "sql_query": "SQL",
}
#: Pages opened with URL query parameters: name → (page file, title); the parameters come from
#: :func:`page_params` (the Jobs page opening one job, as ``jobs?cluster=…&job=…`` does).
WITH_PARAMS = {"jobs_one": ("jobs", "Jobs, one job by URL")}
#: Pages also measured as the first render of a newly published serving copy: the data cache
#: *and* the shared reader of the file (``st.cache_resource``) cleared before the timed rerun.
NEW_COPY = {"overview_new_copy": ("overview", "Overview, first render of a new copy")}
#: The views the pages read (the count(*) baseline).
VIEWS = (
    "occupancy_hourly", "gpu_waterfall_hourly", "jobs", "time_to_start_jobs", "ingests",
    "data_quality", "rejected_rows", "node_reliability", "fairness_weekly", "k8s_workloads",
    "k8s_pending_reasons", "recommendations", "occupancy_daily", "gpu_activity",
    "slurm_jobs", "job_gpu_summary",
)  # fmt: skip
#: The heading each page draws first (checked after the timed rerun).
HEADINGS = {
    "overview": "GPU fleet overview", "waste": "Waste", "fairness": "Fairness",
    "time_to_start": "Time to start", "queue": "Queue now", "topology": "Topology",
    "jobs": "Jobs", "recommendations": "Recommendations", "changes": "Changes",
    "reports": "Weekly reports", "sql_query": "SQL",
}  # fmt: skip
EMPTY_PAGE = 'import streamlit as st\n\nst.title("empty")\n'


def _write_config(folder: Path) -> Path:
    """A goodput.toml for a bundled fleet under ``folder`` (clusters from the repo's file)."""
    text = (REPO / "goodput.toml").read_text(encoding="utf-8")
    clusters = text[text.index("[[clusters]]") :]
    cfg = folder / "goodput.toml"
    cfg.write_text(
        f'default_cluster = "slurm-a"\n[warehouse]\npath = "{folder}/warehouse.duckdb"\n'
        f'serving_path = "{folder}/serving.duckdb"\ninputs = "{folder}/data/inputs"\n'
        f'inventory = "{folder}/data/inventory"\nregistry = "{folder}/data/registry.yaml"\n'
        f'partitions_start = "2026-01-01"\n\n{clusters}',
        encoding="utf-8",
    )
    return cfg


def bundled_fleet(folder: Path, days: int) -> tuple[Path, Path]:
    """Generate and materialize the bundled fleet; returns (serving copy, goodput.toml)."""
    cfg = _write_config(folder)
    env = {**os.environ, "GOODPUT_CONFIG": str(cfg), "DAGSTER_HOME": str(folder)}
    env.pop("GOODPUT_DB", None)
    goodput = [sys.executable, "-m", "pipelines.cli"]
    out = str(folder / "data")
    subprocess.run([*goodput, "generate", "--out", out, "--days", str(days)], env=env, check=True)
    subprocess.run([*goodput, "materialize"], env=env, check=True, stdout=subprocess.DEVNULL)
    return folder / "serving.duckdb", cfg


def count_views(db: Path) -> tuple[float, dict[str, int]]:
    """Seconds for ``SELECT count(*)`` of every view in :data:`VIEWS` present, and the counts."""
    import duckdb

    counts: dict[str, int] = {}
    t0 = time.perf_counter()
    with duckdb.connect(str(db), read_only=True) as con:
        present = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        present |= {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        for view in VIEWS:
            if view in present:
                counts[view] = int(con.execute(f"SELECT count(*) FROM {view}").fetchall()[0][0])
    return time.perf_counter() - t0, counts


def page_params(db: Path) -> dict[str, dict[str, str]]:
    """Query parameters of :data:`WITH_PARAMS`: the attempt with the most observed GPU-seconds
    in ``job_gpu_summary`` (the heaviest per-GPU series), opened by ``cluster`` and ``job``."""
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT cluster, job_id FROM job_gpu_summary WHERE observed_gpu_s > 0 "
            "ORDER BY observed_gpu_s DESC, job_id LIMIT 1"
        ).fetchone()
    return {"jobs_one": {"cluster": str(row[0]), "job": str(row[1])}} if row else {}


def _render(
    page: str | None,
    *,
    cold: bool,
    timeout: float,
    params: dict[str, str] | None = None,
    new_copy: bool = False,
) -> float:
    """Seconds for one rerun of ``page`` (None: the empty page); asserts no exception.

    The app is opened on the page first (untimed: session set-up, the entry point's first run);
    then, with the data cache cleared when ``cold`` (and the shared reader of the serving copy
    too when ``new_copy``), the page's rerun is timed, as a browser session's rerun would be
    (the entry point, the filters, the page's queries and figures).
    """
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    if page is None:
        at = AppTest.from_string(EMPTY_PAGE, default_timeout=timeout)
        at.run()
    else:
        at = AppTest.from_file(str(APP), default_timeout=timeout)
        for key, value in (params or {}).items():
            at.query_params[key] = value
        at.run()  # the entry point lands on the overview
        if page != "overview":
            at.switch_page(f"pages/{page}.py").run()
    if cold:
        st.cache_data.clear()
    if new_copy:
        st.cache_resource.clear()
    t0 = time.perf_counter()
    at.run()
    took = time.perf_counter() - t0
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].value}")
    shown = [t.value for t in at.title]
    if shown[:1] != [HEADINGS.get(page or "", "empty")]:  # a fall back to the overview is cheap
        raise RuntimeError(f"the rerun of {page} shows {shown}")
    return took


def measure(
    repeat: int, timeout: float, params: dict[str, dict[str, str]] | None = None
) -> dict[str, dict[str, float]]:
    """Median cold and one warm render per page, the empty page first; then each page of
    :data:`WITH_PARAMS` that ``params`` gives parameters for."""
    out: dict[str, dict[str, float]] = {}
    _render("overview", cold=True, timeout=timeout)  # imports and first-run costs, not timed
    runs: list[tuple[str, str | None, dict[str, str] | None]] = [
        (page or "empty page", page, None) for page in (None, *PAGES)
    ]
    runs += [(name, WITH_PARAMS[name][0], p) for name, p in (params or {}).items()]
    for name, page, qp in runs:
        cold = [_render(page, cold=True, timeout=timeout, params=qp) for _ in range(repeat)]
        warm = _render(page, cold=False, timeout=timeout, params=qp)
        out[name] = {"cold_s": statistics.median(cold), "warm_s": warm}
    for name, (page, _title) in NEW_COPY.items():
        cold = [_render(page, cold=True, timeout=timeout, new_copy=True) for _ in range(repeat)]
        out[name] = {"cold_s": statistics.median(cold)}  # warm: the Overview's row
    return out


def markdown(result: dict[str, object]) -> str:
    """The section's table: per page cold/warm seconds, as ratios to the count(*) baseline."""
    pages: dict[str, dict[str, float]] = result["pages"]  # type: ignore[assignment]
    base = float(result["count_views_s"])  # type: ignore[arg-type]
    views = len(result["view_rows"])  # type: ignore[arg-type]
    lines = [
        "| page | cold render (s) | ÷ baseline | warm render (s) |",
        "|---|---|---|---|",
        f"| baseline: `SELECT count(*)` of {views} views | {base:.2f} | 1× | |",
    ]
    titles = {
        **PAGES,
        **{k: title for k, (_page, title) in WITH_PARAMS.items()},
        **{k: title for k, (_page, title) in NEW_COPY.items()},
    }
    for name, t in pages.items():
        warm = f"{t['warm_s']:.2f}" if "warm_s" in t else ""
        lines.append(
            f"| {titles.get(name, name)} | {t['cold_s']:.2f} | {t['cold_s'] / base:.1f}× | {warm} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, help="serving copy (default: generate the bundled fleet)")
    ap.add_argument("--config", type=Path, help="goodput.toml for --db (default: GOODPUT_CONFIG)")
    ap.add_argument("--repeat", type=int, default=3, help="cold renders per page (median)")
    ap.add_argument("--days", type=int, default=14, help="days of the bundled fleet")
    ap.add_argument("--workdir", type=Path, help="generate the bundled fleet here and keep it")
    ap.add_argument("--timeout", type=float, default=300, help="seconds allowed per render")
    ap.add_argument("--markdown", action="store_true", help="also print a markdown table")
    args = ap.parse_args()
    cfg: Path | None
    with tempfile.TemporaryDirectory(prefix="bench-pages-") as tmp:
        if args.db is None:
            work = args.workdir.resolve() if args.workdir else Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            db, cfg = bundled_fleet(work, args.days)
        else:
            db = args.db.resolve()
            cfg = args.config.resolve() if args.config else None
        os.environ["GOODPUT_SERVING_DB"] = str(db)
        if cfg is not None:
            os.environ["GOODPUT_CONFIG"] = str(cfg)
        count_s, rows = count_views(db)
        pages = measure(args.repeat, args.timeout, page_params(db))
        result: dict[str, object] = {
            "db": str(db) if args.db else f"bundled fleet, {args.days} days",
            "db_mb": round(db.stat().st_size / 2**20, 1),
            "repeat": args.repeat,
            "count_views_s": count_s,
            "view_rows": rows,
            "pages": pages,
        }
    print(json.dumps(result))
    if args.markdown:
        print(markdown(result))


if __name__ == "__main__":
    main()
