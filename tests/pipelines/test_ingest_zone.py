"""``goodput ingest`` and the raw Dagster asset read a file with the same options, time zone and
zone re-read included (one code path: :func:`pipelines.ingest.ingest_configured`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from typer.testing import CliRunner

import pipelines.ingest
from pipelines.cli import app
from pipelines.config import Config, load_config
from pipelines.definitions import build_defs
from pipelines.kinds import IngestOptions
from pipelines.warehouse import IngestStats

DAY = "2025-03-04"
#: Naive times: 10:00 in New York on DAY is 15:00 UTC (EST, before the March change).
PLAIN = (
    "JobID|State|Start|End|AllocTRES\n"
    "1|COMPLETED|2025-03-04T10:00:00|2025-03-04T11:00:00|gres/gpu=1\n"
)
NAMED = (
    "JobID|Cluster|State|Start|End|AllocTRES\n"
    "1|ny|COMPLETED|2025-03-04T10:00:00|2025-03-04T11:00:00|gres/gpu=1\n"
)


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    """Two Slurm clusters: ``ny`` in America/New_York, ``utc`` (the default) in UTC."""
    path = tmp_path / "goodput.toml"
    path.write_text(
        f"""
default_cluster = "utc"
[warehouse]
path = "{tmp_path / "asset.duckdb"}"
serving_path = "{tmp_path / "serving.duckdb"}"
inputs = "{tmp_path / "inputs"}"
inventory = "{tmp_path / "inventory"}"
registry = "{tmp_path / "registry.yaml"}"
partitions_start = "2025-01-01"
[[clusters]]
name = "utc"
timezone = "UTC"
[[clusters]]
name = "ny"
timezone = "America/New_York"
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("GOODPUT_CONFIG", str(path))
    monkeypatch.delenv("GOODPUT_DB", raising=False)
    return load_config(path)


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[IngestOptions]:
    """Every ``IngestOptions`` a file is read with, in order."""
    out: list[IngestOptions] = []
    real = pipelines.ingest.ingest_file

    def spy(
        con: duckdb.DuckDBPyConnection, source: str, path: Path, opts: IngestOptions
    ) -> IngestStats:
        out.append(opts)
        return real(con, source, path, opts)

    monkeypatch.setattr(pipelines.ingest, "ingest_file", spy)
    return out


def _cli(tmp_path: Path, text: str, *args: str) -> Path:
    f = tmp_path / "cli" / f"sacct_{DAY}.psv"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text, encoding="utf-8")
    db = tmp_path / "cli.duckdb"
    result = CliRunner().invoke(app, ["ingest", "sacct", str(f), "--db", str(db), *args])
    assert result.exit_code == 0, result.output
    return db


def _asset(cfg: Config, cluster: str, text: str) -> Path:
    f = cfg.cluster_input_dir(cluster) / "sacct" / f"sacct_{DAY}.psv"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text, encoding="utf-8")
    defs = build_defs(cfg)
    asset = next(
        a
        for a in defs.assets or []
        if isinstance(a, dg.AssetsDefinition) and dg.AssetKey(["raw", "slurm_rows"]) in a.keys
    )
    result = dg.materialize(
        [asset],
        resources=dict(defs.resources or {}),
        partition_key=str(dg.MultiPartitionKey({"cluster": cluster, "date": DAY})),
    )
    assert result.success
    return cfg.warehouse_path


def _starts(db: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT cluster, job_id, strftime(start_at AT TIME ZONE 'UTC', '%H:%M') "
            "FROM raw.slurm_rows ORDER BY job_id"
        ).fetchall()


def test_cli_and_asset_read_a_non_utc_cluster_with_the_same_options(
    cfg: Config, tmp_path: Path, seen: list[IngestOptions]
) -> None:
    """A file of ``ny`` (America/New_York) gets one read with the same options either way."""
    cli_db = _cli(tmp_path, PLAIN, "--cluster", "ny")
    from_cli = list(seen)
    seen.clear()
    asset_db = _asset(cfg, "ny", PLAIN)
    assert from_cli == seen == [IngestOptions(cluster="ny", tz="America/New_York")]
    assert _starts(cli_db) == _starts(asset_db) == [("ny", "1", "15:00")]


def test_a_file_naming_another_cluster_is_reread_in_its_zone_on_both_paths(
    cfg: Config, tmp_path: Path, seen: list[IngestOptions]
) -> None:
    """Rows whose Cluster column says ``ny``, loaded for the UTC default cluster (CLI) or from
    the ``utc`` folder (asset), are read again in New York time by both."""
    cli_db = _cli(tmp_path, NAMED)
    from_cli = list(seen)
    seen.clear()
    asset_db = _asset(cfg, "utc", NAMED)
    first = IngestOptions(cluster="utc", tz="UTC")
    assert from_cli == seen == [first, dataclasses.replace(first, tz="America/New_York")]
    assert _starts(cli_db) == _starts(asset_db) == [("ny", "1", "15:00")]


def test_tz_given_on_the_command_line_is_not_overridden(
    cfg: Config, tmp_path: Path, seen: list[IngestOptions]
) -> None:
    """``--tz`` wins over the zone of the cluster the rows name: one read, in that zone."""
    db = _cli(tmp_path, NAMED, "--tz", "UTC")
    assert seen == [IngestOptions(cluster="utc", tz="UTC")]
    assert _starts(db) == [("ny", "1", "10:00")]


def test_a_file_naming_an_unconfigured_cluster_says_so(
    cfg: Config, tmp_path: Path, seen: list[IngestOptions]
) -> None:
    """Rows whose Cluster column says ``nyc`` (not in goodput.toml: a misspelt ``ny``) are read
    in UTC, the zone of a cluster the configuration lacks, and the command now says so with the
    zone (before, it said only "1 rows loaded, 0 rejected", every time 5 hours off)."""
    f = tmp_path / "cli" / f"sacct_{DAY}.psv"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(NAMED.replace("|ny|", "|nyc|"), encoding="utf-8")
    db = tmp_path / "cli.duckdb"
    result = CliRunner().invoke(app, ["ingest", "sacct", str(f), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert (
        "rows name cluster(s) nyc that goodput.toml does not configure: their times were read"
        " as UTC" in result.output
    )
    assert seen == [IngestOptions(cluster="utc", tz="UTC")]
    assert _starts(db) == [("nyc", "1", "10:00")]
    # Loaded for ny: read again in UTC (an unknown cluster's zone), and said so.
    seen.clear()
    db = tmp_path / "cli-ny.duckdb"
    args = ["ingest", "sacct", str(f), "--db", str(db), "--cluster", "ny"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "their times were read as UTC" in result.output
    first = IngestOptions(cluster="ny", tz="America/New_York")
    assert seen == [first, dataclasses.replace(first, tz="UTC")]
    assert _starts(db) == [("nyc", "1", "10:00")]


def test_a_json_file_naming_an_unconfigured_cluster_claims_no_zone(
    cfg: Config, tmp_path: Path
) -> None:
    """sacct --json (Mila's 23.11.5 job, cluster ``mila``, not configured) with ``--tz
    America/New_York``: the epoch times are not shifted (start 2021-02-19 09:00:09 UTC, as
    printed), and the warning names the cluster without saying the times were read in New York
    time (before: "their times were read as America/New_York")."""
    f = Path(__file__).resolve().parents[1] / "fixtures" / "sarc-sacct-json" / "sacct_23.11.5.json"
    db = tmp_path / "json.duckdb"
    args = ["ingest", "sacct", str(f), "--db", str(db), "--tz", "America/New_York"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (
        "rows name cluster(s) mila that goodput.toml does not configure: their times are epoch"
        " seconds (sacct --json), read without a zone" in result.output
    )
    assert "read as America/New_York" not in result.output
    with duckdb.connect(str(db), read_only=True) as con:
        starts = con.execute(
            "SELECT DISTINCT strftime(start_at AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S')"
            " FROM raw.slurm_rows WHERE step IS NULL"
        ).fetchall()
    assert starts == [("2021-02-19 09:00:09",)]
