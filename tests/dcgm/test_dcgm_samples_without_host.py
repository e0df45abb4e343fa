"""DCGM samples without a host label: stored, but said (ingest warning, data-quality finding).

dcgm-exporter issue #272 posted three samples with lowercase ``dcgm_fi_*`` names, a lowercase
``uuid`` label and no ``Hostname`` (nor ``node``/``kubernetes_node``) label
(``tests/fixtures/dcgm-exporter/issue272_no_host.prom``, verbatim). Such a sample has a GPU
identity, so it is no reject (``parse_dcgm`` rejects bad syntax, bad values and samples without
a GPU identity, not samples without a host), but it can join no node: before, the load said
"3 rows loaded, 0 rejected" and nothing else (METRICS.md "DCGM host names").
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pipelines.analytics.build import rebuild
from pipelines.config import load_config
from pipelines.dcgm._dcgm_parse import iter_parse_dcgm, parse_dcgm
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.conftest import write_config

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dcgm-exporter" / "issue272_no_host.prom"
C = "c1"
SCRAPE = dt.datetime(2026, 12, 7, 12, 0, tzinfo=dt.UTC)
GPU0 = "GPU-ed1353d6-52ba-8793-7230-4d5d3eb68167"
GPU1 = "GPU-6043e4b2-feaa-8010-34c7-61d1a01576bb"
METRIC = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


def test_hostless_samples_are_kept_and_counted() -> None:
    """3 sample lines, none with a host label: 3 rows, 0 rejected, host NULL on each;
    ``samples_without_host`` = 3 and a warning naming the two GPUs (gpu 0 has two MIG
    instances, so 2 distinct series of 3 samples)."""
    res = parse_dcgm(FIXTURE, scrape_time=SCRAPE)
    assert res.rows.height == 3
    assert res.rejected.height == 0
    assert res.rows["host"].null_count() == 3
    assert res.info["samples_without_host"] == 3
    assert res.info["hostless_gpus"] == [f"{METRIC} on {GPU0}", f"{METRIC} on {GPU1}"]
    (warning,) = res.info["warnings"]  # type: ignore[misc]
    assert warning.startswith("3 DCGM samples have no host label")
    assert GPU0 in warning and GPU1 in warning


def test_hostless_samples_counted_over_blocks() -> None:
    """Read in blocks of one line each, the last block's count and warning are the file's
    (1 + 1 + 1 = 3), as the whole file's."""
    blocks = list(iter_parse_dcgm(FIXTURE, scrape_time=SCRAPE, chunk_bytes=100))
    assert len(blocks) == 3
    assert sum(int(b.info["samples_without_host"]) for b in blocks) == 3  # type: ignore[call-overload]
    whole = parse_dcgm(FIXTURE, scrape_time=SCRAPE)
    assert blocks[-1].info["warnings"] == whole.info["warnings"]


def test_a_scrape_with_hosts_has_no_warning(tmp_path: Path) -> None:
    """A sample with a ``Hostname`` label: 0 without a host, no warning."""
    path = tmp_path / "one.prom"
    path.write_text(f'{METRIC}{{gpu="0",UUID="{GPU0}",Hostname="n1"}} 0.5\n')
    res = parse_dcgm(path, scrape_time=SCRAPE)
    assert res.info["samples_without_host"] == 0
    assert "warnings" not in res.info


def test_hostless_samples_are_an_ingest_warning_and_a_finding(tmp_path: Path) -> None:
    """Loaded into cluster c1: the load's warning says 3 samples have no host, and a build's
    data quality has ``dcgm_samples_without_host`` for c1 with value 3 (the 3 samples) and
    the 2 series (the uuids sort GPU-6043… before GPU-ed13…). Before: no warning, no finding."""
    cfg = load_config(write_config(tmp_path, clusters=((C, "slurm", "UTC"),)))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        stats = ingest_file(con, "dcgm", FIXTURE, IngestOptions(cluster=C, scrape_time=SCRAPE))
        assert (stats.rows_loaded, stats.rows_rejected) == (3, 0)
        assert len(stats.warnings) == 1
        assert stats.warnings[0].startswith("3 DCGM samples have no host label")
        rebuild(con, cfg)
        found = con.execute(
            'SELECT cluster, "check", value, detail FROM analytics.data_quality'
            " WHERE \"check\" = 'dcgm_samples_without_host'"
        ).fetchall()
    assert found == [
        (
            C,
            "dcgm_samples_without_host",
            3.0,
            "DCGM samples without a host label (node, kubernetes_node, Hostname, hostname): "
            f"{METRIC} on {GPU1}, {METRIC} on {GPU0}; 3 of them without a pod or hpc_job label"
            " either (no job sees those)",
        )
    ]


def test_hostless_samples_with_a_pod_label_are_told_apart(tmp_path: Path) -> None:
    """The #272 lines with the pod labels of the second and third filled in (pod_name "train-0",
    namespace "ml"): still 3 samples without a host (value 3), but only the first, whose pod
    labels are empty, has no job label; the other two reach pod ml/train-0's job."""
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    labelled = [lines[0]] + [
        ln.replace('pod_name="",pod_namespace=""', 'pod_name="train-0",pod_namespace="ml"')
        for ln in lines[1:]
    ]
    path = tmp_path / "pods.prom"
    path.write_text("\n".join(labelled) + "\n", encoding="utf-8")
    cfg = load_config(write_config(tmp_path, clusters=((C, "slurm", "UTC"),)))
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
        ingest_file(con, "dcgm", path, IngestOptions(cluster=C, scrape_time=SCRAPE))
        rebuild(con, cfg)
        found = con.execute(
            "SELECT value, detail FROM analytics.data_quality"
            " WHERE \"check\" = 'dcgm_samples_without_host'"
        ).fetchall()
    assert len(found) == 1
    assert found[0][0] == 3.0
    assert found[0][1].endswith(
        "; 1 of them without a pod or hpc_job label either (no job sees those)"
    )
