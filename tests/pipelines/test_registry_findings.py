"""What a build says of the allocation registry: GPU-hours no team counts, pools no cluster uses.

A registry that does not map an account, or no registry file at all, leaves that work to no
team: fairness and every per-team number change without a word. A pool that names no cluster
and no cluster's GPU type (``h100x``) leaves its shares applying nowhere. Both are data-quality
findings (METRICS.md, "Reconciliation").
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config
from tests.pipelines.test_inventory import _SACCT as _INVENTORY_SACCT

# Two jobs on 2026-11-02: the inventory test's job of account nlp, 8 GPUs 10:00-12:00 (16
# GPU-hours), and one of account cv, 2 GPUs 10:00-11:00 (2 GPU-hours).
_SACCT = (
    _INVENTORY_SACCT
    + "910002|910002|slurm-z|gpu|normal|cv|cv|judy|1010|2026-11-02T09:00:00|2026-11-02T09:00:00|"
    "2026-11-02T10:00:00|2026-11-02T11:00:00|01:00:00|0:0|COMPLETED|1|2|"
    "billing=2,cpu=2,gres/gpu=2,mem=1000M,node=1|"
    "billing=2,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=1000M,node=1|2-00:00:00|z-002|b\n"
)
_REGISTRY = """\
teams:
  - team: vision
    slurm_accounts: cv
    shares:
      - {share: 0.5}
      - {share: 0.7, pool: A100}
      - {share: 0.9, pool: h100x}
"""


@pytest.mark.slow
def test_unmapped_accounts_and_unmatched_pools_are_findings(tmp_path: Path) -> None:
    """With the registry: nlp's 16 GPU-hours are unattributed (cv's 2 are team vision's), and
    pool h100x matches nothing (pool A100 is slurm-z's GPU type, in another case). Without the
    registry file: all 18 GPU-hours are unattributed and the finding names the missing file."""
    data = tmp_path / "data"
    (data / "inventory").mkdir(parents=True)
    (data / "inventory" / "slurm-z.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nz-001,8,a100,gpu,z1\nz-002,8,a100,gpu,z1\n",
        encoding="utf-8",
    )
    registry = data / "registry.yaml"
    registry.write_text(_REGISTRY, encoding="utf-8")
    sacct = data / "inputs" / "slurm-z" / "sacct" / "2026-11-02.txt"
    sacct.parent.mkdir(parents=True)
    sacct.write_text(_SACCT, encoding="utf-8")
    cfg = load_config(
        write_config(tmp_path, days_dir=data, clusters=(("slurm-z", "slurm", "UTC"),))
    )
    query = (
        'SELECT cluster, day, "check", value, detail FROM data_quality'
        " WHERE \"check\" IN ('unattributed_gpu_hours', 'registry_pool_unmatched')"
        ' ORDER BY "check", cluster'
    )
    day = dt.date(2026, 11, 2)
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        loaded = ingest_file(con, "sacct", sacct, IngestOptions(cluster="slurm-z", tz="UTC"))
        assert (loaded.rows_loaded, loaded.rows_rejected) == (2, 0)
        rebuild(con, cfg, full=True)
        with_registry = con.execute(query).fetchall()
        registry.unlink()
        rebuild(con, cfg, full=True)
        without = con.execute(query).fetchall()
    assert with_registry == [
        (None, None, "registry_pool_unmatched", 1.0,
         "registry pool h100x (teams vision) names no cluster and no cluster's GPU type: its"
         " shares apply nowhere"),
        ("slurm-z", day, "unattributed_gpu_hours", 16.0,
         "not in the allocation registry: nlp 16.0 h"),
    ]  # fmt: skip
    assert without == [
        ("slurm-z", day, "unattributed_gpu_hours", 18.0,
         "no allocation registry (registry.yaml not found): no GPU-hour counts for a team"),
    ]  # fmt: skip
