"""goodput.toml: defaults, overrides and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import ConfigError, load_config
from pipelines.dcgm.resources import PrometheusDcgmSource
from pipelines.definitions import build_defs
from pipelines.slurm.resources import SacctCliSource
from tests.conftest import REPO


def test_repo_config_loads_with_absolute_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The committed goodput.toml names the bundled fleet's clusters (the Slurm-on-Kubernetes
    pair last) and resolves paths against the repo."""
    monkeypatch.delenv("GOODPUT_DB", raising=False)
    cfg = load_config(REPO / "goodput.toml")
    assert [c.name for c in cfg.clusters] == [
        "slurm-a", "k8s-b", "slurm-nvl", "slurm-p", "sok-c", "k8s-c",
    ]  # fmt: skip
    assert cfg.cluster("slurm-nvl").timezone == "UTC"
    assert (cfg.cluster("sok-c").slurm_on_k8s, cfg.cluster("sok-c").kubernetes_cluster) == (
        "A", "k8s-c",
    )  # fmt: skip
    assert cfg.cluster("slurm-a").timezone == "America/New_York"
    assert cfg.warehouse_path == REPO / "data" / "warehouse.duckdb"
    assert cfg.default_cluster == "slurm-a"


def test_goodput_db_overrides_the_warehouse(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """GOODPUT_DB wins over the file's warehouse path."""
    monkeypatch.setenv("GOODPUT_DB", str(tmp_path / "w.duckdb"))
    assert load_config(REPO / "goodput.toml").warehouse_path == tmp_path / "w.duckdb"


def test_default_cluster_is_default_when_unset(tmp_path: Path) -> None:
    """No default_cluster and no clusters: the cluster is called `default`."""
    p = tmp_path / "g.toml"
    p.write_text("")
    assert load_config(p).default_cluster == "default"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[[clusters]]\nname = "a"\ntimezone = "Mars/Olympus"\n', "unknown IANA time zone"),
        ('[[clusters]]\nname = "a"\nscheduler = "pbs"\n', "scheduler must be"),
        ('[[clusters]]\nscheduler = "slurm"\n', "missing 'name'"),
        ('[sources]\nsacct = "ftp"\n', "sources.sacct"),
        ("[warehouse\n", "g.toml"),
        ("[topology]\nsegment_sizes = [4, 0]\n", "topology.segment_sizes"),
    ],
)
def test_invalid_values_name_the_file_and_key(tmp_path: Path, text: str, needle: str) -> None:
    """Each invalid setting raises ConfigError naming the file and the setting."""
    p = tmp_path / "g.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=needle) as info:
        load_config(p)
    assert "g.toml" in str(info.value)


def test_live_sources_selected_by_config(tmp_path: Path) -> None:
    """`[sources] sacct = "cli", dcgm = "prometheus"` wires the live twins as resources."""
    p = tmp_path / "g.toml"
    p.write_text(
        '[sources]\nsacct = "cli"\ndcgm = "prometheus"\n[prometheus]\nurl = "http://127.0.0.1:1"\n'
    )
    res = build_defs(load_config(p)).resources or {}
    assert isinstance(res["sacct_source"], SacctCliSource)
    assert isinstance(res["dcgm_source"], PrometheusDcgmSource)
    assert res["dcgm_source"].url == "http://127.0.0.1:1"


def test_segment_sizes_default_and_configured(tmp_path: Path) -> None:
    """Unset: 1, 2, 4, 8, 16 and 18 trays; set: distinct and ascending."""
    p = tmp_path / "g.toml"
    p.write_text("")
    assert load_config(p).segment_sizes == (1, 2, 4, 8, 16, 18)
    p.write_text("[topology]\nsegment_sizes = [9, 3, 9]\n")
    assert load_config(p).segment_sizes == (3, 9)
