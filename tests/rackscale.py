"""A warehouse of the bundled fleet's rack-scale cluster ``slurm-nvl`` alone (nine days from
2026-11-02: past the failed trays of day 3 and the fragmentation period of days 5–6), loaded
through the input kinds and built; shared by its fleet and dashboard tests."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.sample_fleet._rackscale import RACKSCALE_CLUSTER, generate_rackscale
from pipelines.sample_fleet._writers import write_registry
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

START = dt.date(2026, 11, 2)
DAYS = 9
#: Input kind → file pattern under ``inputs/slurm-nvl/``.
KINDS = (
    ("sacct", "sacct/*.psv"),
    ("slurm-state", "slurm_state/*.psv"),
    ("topology", "topology/*.conf"),
    ("dcgm-hourly", "dcgm_hourly/*/*.parquet"),
)


def build_rackscale_warehouse(data: Path) -> Config:
    """Generate slurm-nvl into ``data``, ingest every file (none may reject a row), rebuild.

    Returns:
        The configuration (its ``warehouse_path`` holds the views).
    """
    generate_rackscale(data, seed=7, start=START, days=DAYS)
    write_registry(data / "registry.yaml")
    cfg = load_config(
        write_config(data, days_dir=data, clusters=((RACKSCALE_CLUSTER, "slurm", "UTC"),))
    )
    base = data / "inputs" / RACKSCALE_CLUSTER
    opts = IngestOptions(cluster=RACKSCALE_CLUSTER, tz="UTC")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        for kind, pattern in KINDS:
            for f in sorted(base.glob(pattern)):
                stats = ingest_file(con, kind, f, opts)
                if stats.rows_rejected:
                    raise AssertionError(f"{f}: {stats.rows_rejected} rows rejected")
        rebuild(con, cfg)
    return cfg
