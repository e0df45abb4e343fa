"""goodput.toml: defaults, overrides and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import ConfigError, LossPolicyConfig, load_config
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
        # A misspelt key used to fall back to its default silently (UTC, 0.05, …).
        ('[[clusters]]\nname = "a"\ntime_zone = "America/New_York"\n',
         r"clusters\[0\]: unknown key 'time_zone' \(did you mean 'timezone'\?\)"),
        ("[thresholds]\nidle_activty = 0.1\n",
         r"\[thresholds\]: unknown key 'idle_activty' \(did you mean 'idle_activity'\?\)"),
        ('defualt_cluster = "a"\n', r"unknown key 'defualt_cluster'"),
        ("[report]\nweek = 1\n", r"unknown key 'report'"),
        ("[thresholds]\nidle_activity = 5\n", r"idle_activity: must be a number from 0 to 1"),
        ('[thresholds]\nidle_activity = "5%"\n', r"idle_activity: must be a number"),
        ("[thresholds]\nlarge_job_gpus = 0\n", r"large_job_gpus: must be a number from 1"),
        ("[thresholds]\nregistry_drift_tolerance = -1\n", r"registry_drift_tolerance: must be"),
        ("[prometheus]\nstep_s = 0\n", r"step_s: must be a number from 1"),
        ('[warehouse]\npartitions_start = "01/01/2024"\n', r"partitions_start: must be a day"),
        ('default_cluster = "slurm-b"\n[[clusters]]\nname = "slurm-a"\n',
         r"default_cluster 'slurm-b' is not a configured cluster \(slurm-a\)"),
        ('[[clusters]]\nname = "a"\n[[clusters]]\nname = "a"\n', r"clusters\[1\]: cluster 'a'"),
        ('[[clusters]]\nname = "a"\nsacct_fields = "JobID,State"\n', "sacct_fields must be a list"),
        ('[[clusters]]\nname = "s"\nslurm_on_k8s = "A"\nkubernetes_cluster = "k8s-C"\n'
         '[[clusters]]\nname = "k8s-c"\nscheduler = "kubernetes"\n',
         r"kubernetes_cluster 'k8s-C' is not a configured Kubernetes cluster \(configured: k8s-c"),
    ],
)  # fmt: skip
def test_invalid_values_name_the_file_and_key(tmp_path: Path, text: str, needle: str) -> None:
    """Each invalid setting raises ConfigError naming the file and the setting."""
    p = tmp_path / "g.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=needle) as info:
        load_config(p)
    assert "g.toml" in str(info.value)


def test_a_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    p = tmp_path / "g.toml"
    p.write_bytes('default_cluster = "a"\n'.encode("utf-16"))
    with pytest.raises(ConfigError, match=r"g\.toml: not UTF-8 text"):
        load_config(p)


def test_a_toml_date_is_a_partitions_start(tmp_path: Path) -> None:
    """``partitions_start = 2025-01-01`` (a TOML date, unquoted) is the same day as the string."""
    p = tmp_path / "g.toml"
    p.write_text("[warehouse]\npartitions_start = 2025-01-01\n")
    assert load_config(p).partitions_start == "2025-01-01"


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


def test_the_loss_policy_default_waterfall_section_and_cluster_override(tmp_path: Path) -> None:
    """Unset: ``whole_attempt``. ``[waterfall]`` checkpoint Δ = 3,600 s, u0 = 300 s for every
    cluster without its own; cluster ``b`` sets only ``checkpoint_interval_s = 600`` (u0
    inherited), cluster ``c`` ``loss_policy = "whole_attempt"`` (nothing inherited)."""
    p = tmp_path / "g.toml"
    p.write_text("")
    assert load_config(p).loss_policy == LossPolicyConfig("whole_attempt", None, 0.0)
    p.write_text(
        '[waterfall]\nloss_policy = "checkpoint"\ncheckpoint_interval_s = 3600\n'
        "restart_overhead_s = 300\n"
        '[[clusters]]\nname = "a"\n'
        '[[clusters]]\nname = "b"\ncheckpoint_interval_s = 600\n'
        '[[clusters]]\nname = "c"\nloss_policy = "whole_attempt"\n'
    )
    cfg = load_config(p)
    ckpt = LossPolicyConfig("checkpoint", 3600.0, 300.0)
    assert cfg.loss_policy == ckpt
    assert cfg.loss_policy_of("a") == ckpt
    assert cfg.loss_policy_of("unlisted") == ckpt
    assert cfg.loss_policy_of("b") == LossPolicyConfig("checkpoint", 600.0, 300.0)
    assert cfg.loss_policy_of("c") == LossPolicyConfig("whole_attempt", None, 0.0)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[waterfall]\nloss_policy = "tail"\n',
         r"waterfall\.loss_policy: must be one of 'whole_attempt', 'checkpoint', not 'tail'"),
        ('[waterfall]\nloss_policy = "checkpoint"\n',
         r"waterfall\.checkpoint_interval_s: loss_policy = 'checkpoint' needs"),
        ('[waterfall]\nloss_policy = "checkpoint"\ncheckpoint_interval_s = 0\n',
         r"waterfall\.checkpoint_interval_s: must be a positive number of seconds, not 0"),
        ('[waterfall]\nloss_policy = "checkpoint"\ncheckpoint_interval_s = "1h"\n',
         r"waterfall\.checkpoint_interval_s: must be a positive number of seconds, not '1h'"),
        ('[waterfall]\nloss_policy = "checkpoint"\ncheckpoint_interval_s = inf\n',
         r"waterfall\.checkpoint_interval_s: must be a positive number"),
        ('[waterfall]\nloss_policy = "checkpoint"\ncheckpoint_interval_s = 600\n'
         "restart_overhead_s = -1\n",
         r"waterfall\.restart_overhead_s: must be a number of seconds ≥ 0, not -1"),
        ("[waterfall]\ncheckpoint_interval_s = 600\n",
         r"waterfall\.checkpoint_interval_s: applies only with loss_policy = 'checkpoint'"),
        ("[waterfall]\ncheckpoint_intervall_s = 600\n",
         r"\[waterfall\]: unknown key 'checkpoint_intervall_s' \(did you mean"),
        ('[[clusters]]\nname = "a"\nloss_policy = "checkpoint"\n',
         r"clusters\[0\]\.checkpoint_interval_s: loss_policy = 'checkpoint' needs"),
        ('[[clusters]]\nname = "a"\nloss_policy = "checkpoint"\ncheckpoint_interval_s = -5\n',
         r"clusters\[0\]\.checkpoint_interval_s: must be a positive number of seconds, not -5"),
    ],
)  # fmt: skip
def test_a_bad_loss_policy_names_the_key(tmp_path: Path, text: str, needle: str) -> None:
    """Each bad ``[waterfall]`` or cluster loss-policy value raises ConfigError naming the file
    and the key (never a silent whole-attempt fallback)."""
    p = tmp_path / "g.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=needle) as info:
        load_config(p)
    assert "g.toml" in str(info.value)
