"""The bundled fleet's rack-scale cluster ``slurm-nvl``: its inputs load through the input
kinds, every planted finding is detected by the topology views and the controls are not, the
stranded split conserves the waterfall's leaves, and the other clusters' files do not change."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.sample_fleet import generate_sample_fleet
from pipelines.sample_fleet._rackscale import (
    FAILED_RACK,
    FAILED_TRAYS,
    FRAGMENT_DAYS,
    RACKSCALE_CLUSTER,
    SPREAD_TEAM,
    generate_rackscale,
)
from pipelines.sample_fleet._writers import write_registry
from pipelines.warehouse import connect, init_warehouse
from pipelines.warehouse.sql import load_sql
from tests.conftest import write_config
from tests.pipelines.test_incremental import assert_equals_full_rebuild
from tests.rackscale import KINDS, START, build_rackscale_warehouse

FRAG_FROM = dt.datetime.combine(START, dt.time(), dt.UTC) + dt.timedelta(days=FRAGMENT_DAYS[0])
FRAG_TO = dt.datetime.combine(START, dt.time(), dt.UTC) + dt.timedelta(days=FRAGMENT_DAYS[1])


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nine days of slurm-nvl alone (sacct, node events, topology.conf, hourly DCGM), built."""
    return build_rackscale_warehouse(tmp_path_factory.mktemp("nvl")).warehouse_path


def test_the_map_is_four_blocks_of_eighteen_trays(warehouse: Path) -> None:
    """topology.conf (block form) gives level ``block``: nvl01 … nvl04, 18 trays each."""
    with connect(warehouse, read_only=True) as con:
        rows = con.execute(
            "SELECT level, domain, count(*) FROM topology_nodes GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert rows == [("block", f"nvl0{i}", 18) for i in range(1, 5)]


def test_spread_team_gangs_span_domains_and_no_other_team_does(warehouse: Path) -> None:
    """Planted: multimodal's gangs (no segment) mostly span two blocks or more (spread > 0);
    control: every other team's gang is inside one block (spread 0)."""
    with connect(warehouse, read_only=True) as con:
        rows = con.execute(
            "SELECT j.team = $t AS spread_team, count(*), count(*) FILTER (WHERE p.spread > 0),"
            " max(p.domains_used) FROM job_placement p JOIN jobs j USING (cluster, job_id, attempt)"
            " WHERE p.level = 'block' AND p.nodes > 1 GROUP BY ALL ORDER BY ALL",
            {"t": SPREAD_TEAM},
        ).fetchall()
    (others, n_others, spread_others, max_others), (team, n_team, spread_team, max_team) = rows
    assert (others, team) == (False, True)
    assert n_others > 20 and spread_others == 0 and max_others == 1
    assert n_team > 5 and spread_team / n_team > 0.7 and max_team >= 2


def test_failed_trays_degrade_one_rack_only(warehouse: Path) -> None:
    """Planted: from day 3 nvl03 has 2 trays out (gb-041 DOWN, gb-047 DRAIN): its healthy size is
    16 at the end and no 18-tray slot is left there; control: the other racks are never
    degraded. Segment-capacity efficiency at s = 18 then is 3 × 18 ÷ (3 × 18 + 16) = 54/70."""
    with connect(warehouse, read_only=True) as con:
        degraded = con.execute(
            "SELECT domain, max(degraded_nodes) FROM domain_capacity_hourly"
            " WHERE level = 'block' GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        last = con.execute(
            "SELECT healthy_nodes, efficiency, healthy_slots FROM segment_capacity_hourly"
            " WHERE segment_size = 18 ORDER BY hour DESC LIMIT 1"
        ).fetchone()
    assert degraded == [("nvl01", 0), ("nvl02", 0), (FAILED_RACK, 2), ("nvl04", 0)]
    assert last == (70, pytest.approx(54 / 70), 3)
    assert set(FAILED_TRAYS) <= {f"gb-{i:03d}" for i in range(37, 55)}  # both in nvl03


def test_fragmentation_not_quota_holds_large_jobs_in_the_planted_period(warehouse: Path) -> None:
    """Planted: large jobs eligible in days 5–6 wait mostly for topology: their fragmentation
    delay exceeds their quota and priority delay, with idle GPU-hours accumulated while blocked;
    control: the mean fragmentation delay of large jobs eligible before the period is under a
    fifth of the period's."""
    with connect(warehouse, read_only=True) as con:
        inside = con.execute(
            "SELECT count(*), sum(fragmentation_s), sum(quota_s), sum(priority_s),"
            " avg(fragmentation_s), sum(blocked_idle_gpu_s) FROM large_job_wait_causes"
            " WHERE eligible_at >= $a AND eligible_at < $b",
            {"a": FRAG_FROM, "b": FRAG_TO},
        ).fetchone()
        before = con.execute(
            "SELECT count(*), avg(fragmentation_s) FROM large_job_wait_causes"
            " WHERE eligible_at < $a",
            {"a": FRAG_FROM},
        ).fetchone()
    assert inside is not None and before is not None
    n, frag, quota, prio, mean_in, idle = inside
    assert n >= 3
    assert frag > quota and frag > prio
    assert idle > 0
    assert before[0] >= 5
    assert before[1] < mean_in / 5


def test_stranded_split_conserves_the_waterfall_leaves(warehouse: Path) -> None:
    """The asset check's query: no cluster-hour whose parts miss the idle or held leaf; and
    stranded GPUs appear in the fragmentation period (some hour with stranded_gpus > 0)."""
    with connect(warehouse, read_only=True) as con:
        (bad,) = con.execute(load_sql("checks/stranded_splits_conserve_leaves")).fetchone() or (1,)
        (stranded,) = con.execute(
            "SELECT max(stranded_gpus) FROM stranded_gpu_hourly WHERE hour >= $a AND hour < $b",
            {"a": FRAG_FROM, "b": FRAG_TO},
        ).fetchone() or (None,)
    assert bad == 0
    assert stranded is not None and stranded > 0


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and RACKSCALE_CLUSTER not in str(p.relative_to(root))
    }


def test_other_clusters_files_are_the_same_with_the_rackscale_cluster(tmp_path: Path) -> None:
    """Two days of the fleet with and without slurm-nvl: every file of slurm-a, k8s-b, the
    registry, their inventories and planted.json is byte-identical."""
    generate_sample_fleet(tmp_path / "with", seed=7, days=2)
    generate_sample_fleet(tmp_path / "without", seed=7, days=2, rackscale=False)
    with_nvl, without = _digests(tmp_path / "with"), _digests(tmp_path / "without")
    assert with_nvl == without
    assert any(k.startswith("inputs/slurm-a/") for k in without)
    assert (tmp_path / "with" / "inventory" / f"{RACKSCALE_CLUSTER}.csv").is_file()


def test_slurm_nvl_files_are_the_same_for_the_same_seed(tmp_path: Path) -> None:
    """Generated twice (seed 7, four days): every slurm-nvl file is byte-identical; another
    seed gives another sacct day."""
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        generate_rackscale(tmp_path / name, seed=seed, start=START, days=4)
    files = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    assert len(files) == 1 + 2 * 4 + 3
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    day = Path("inputs") / RACKSCALE_CLUSTER / "sacct" / f"sacct_{START}.psv"
    assert (tmp_path / "a" / day).read_bytes() != (tmp_path / "c" / day).read_bytes()


def _nine_days(tmp_path: Path) -> tuple[Config, list[tuple[str, Path]], IngestOptions]:
    """slurm-nvl's nine days generated under ``tmp_path``: the config, its input files by kind
    (``tests.rackscale.KINDS`` order) and their ingest options (none loaded)."""
    data = tmp_path / "nvl"
    generate_rackscale(data, seed=7, start=START, days=9)
    write_registry(data / "registry.yaml")
    cfg = load_config(
        write_config(data, days_dir=data, clusters=((RACKSCALE_CLUSTER, "slurm", "UTC"),))
    )
    base = data / "inputs" / RACKSCALE_CLUSTER
    files = [(kind, f) for kind, pattern in KINDS for f in sorted(base.glob(pattern))]
    return cfg, files, IngestOptions(cluster=RACKSCALE_CLUSTER, tz="UTC")


def test_the_last_day_built_incrementally_equals_a_full_build(tmp_path: Path) -> None:
    """slurm-nvl's first eight days built, then its last day's files (sacct, hourly DCGM and the
    node events file, named for that day, which holds the failed trays' intervals of day 3)
    loaded and built incrementally: every core and analytics table equals a full build of the
    same rows (floats within 1e-9 relative). The map, node intervals and Kueue-free placements
    of the rack-scale cluster take the incremental path of the topology tables: those tables
    are written by day and hold the block level, and the placements by job."""
    cfg, files, opts = _nine_days(tmp_path)
    last = (START + dt.timedelta(days=8)).isoformat()
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, f in files:
            if last not in f.name:
                ingest_file(con, kind, f, opts)
        rebuild(con, cfg)
        for kind, f in files:
            if last in f.name:
                ingest_file(con, kind, f, opts)
        rebuild(con, cfg)
        ((build_id, mode),) = con.execute(
            "SELECT build_id, mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
        log = dict(
            con.execute(
                "SELECT table_name, mode FROM analytics.build_log WHERE build_id = $b",
                {"b": build_id},
            ).fetchall()
        )
        levels = con.execute(
            "SELECT DISTINCT level FROM analytics.domain_capacity_hourly ORDER BY 1"
        ).fetchall()
    assert mode == "incremental"
    assert {t: log[f"analytics.{t}"] for t in ("domain_capacity_hourly", "job_placement")} == {
        "domain_capacity_hourly": "days",
        "job_placement": "jobs",
    }
    assert levels == [("block",)]
    assert_equals_full_rebuild(cfg, tmp_path)


def test_a_late_file_showing_a_pending_job_started_equals_a_full_build(tmp_path: Path) -> None:
    """slurm-nvl's nine days loaded, but job 700596 (64 GPUs, pending in day 2's snapshot) left
    out of day 3's sacct file, so the first build sees it waiting to the cut-off (day 8). Then
    a second file named for day 3 holds only its row: it started on day 3 and ended that day.
    The incremental build equals a full one: the job's wait is the same key (submit and
    eligible unchanged), so the plan takes its days from the earliest instant any version of
    it stopped waiting (its new start), not from the old row's cut-off; planned from there,
    the stale pending demand of days 4–8 leaves the hourly fair shares, the fairness windows,
    the waterfall and the stranded capacity. Without it those five tables differ (found by a
    review, with the reproduction this test keeps)."""
    cfg, files, opts = _nine_days(tmp_path)
    day3 = (START + dt.timedelta(days=3)).isoformat()
    (f3,) = [f for _k, f in files if day3 in f.name and "sacct" in f.name]
    lines = f3.read_text().splitlines(keepends=True)
    (row,) = [line for line in lines if line.startswith("700596|")]
    assert "|64|" in row or "gres/gpu=64" in row
    for sub, text in (("a", "".join(x for x in lines if not x.startswith("700596|"))),
                      ("b", lines[0] + row)):  # fmt: skip
        (tmp_path / sub).mkdir()
        (tmp_path / sub / f3.name).write_text(text)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, f in files:
            if f != f3:
                ingest_file(con, kind, f, opts)
        ingest_file(con, "sacct", tmp_path / "a" / f3.name, opts)
        rebuild(con, cfg)
        pending = con.execute(
            "SELECT count(*) FROM analytics.build_pending WHERE job_id = '700596'"
        ).fetchall()
        ingest_file(con, "sacct", tmp_path / "b" / f3.name, opts)
        rebuild(con, cfg)
        ((mode,),) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
        started = con.execute(
            "SELECT count(*) FROM core.jobs WHERE job_id = '700596' AND start_at IS NOT NULL"
        ).fetchall()
    assert pending == [(1,)] and started == [(1,)] and mode == "incremental"
    assert_equals_full_rebuild(cfg, tmp_path)
