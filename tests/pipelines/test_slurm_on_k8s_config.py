"""goodput.toml: a Slurm cluster's Slurm-on-Kubernetes pattern and its Kubernetes partner."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import ConfigError, load_config

_SOK = '[[clusters]]\nname = "sok-c"\nscheduler = "slurm"\n'


def test_pattern_and_partner_are_read(tmp_path: Path) -> None:
    """``slurm_on_k8s = "A"`` with ``kubernetes_cluster`` is kept; other clusters have none."""
    p = tmp_path / "g.toml"
    p.write_text(
        _SOK + 'slurm_on_k8s = "A"\nkubernetes_cluster = "k8s-c"\n'
        '[[clusters]]\nname = "k8s-c"\nscheduler = "kubernetes"\n'
    )
    cfg = load_config(p)
    assert (cfg.cluster("sok-c").slurm_on_k8s, cfg.cluster("sok-c").kubernetes_cluster) == (
        "A", "k8s-c",
    )  # fmt: skip
    assert (cfg.cluster("k8s-c").slurm_on_k8s, cfg.cluster("k8s-c").kubernetes_cluster) == (
        None, None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (_SOK + 'slurm_on_k8s = "D"\nkubernetes_cluster = "k"\n', "must be 'A', 'B' or 'C'"),
        (_SOK + 'slurm_on_k8s = "A"\n', "needs kubernetes_cluster"),
        (_SOK + 'kubernetes_cluster = "k"\n', "needs slurm_on_k8s"),
        ('[[clusters]]\nname = "k"\nscheduler = "kubernetes"\nslurm_on_k8s = "A"\n'
         'kubernetes_cluster = "k"\n', "applies to a Slurm cluster"),
    ],
)  # fmt: skip
def test_invalid_pattern_settings_name_the_file(tmp_path: Path, text: str, needle: str) -> None:
    """An unknown pattern, a pattern without its partner (or the reverse), or a pattern on a
    Kubernetes cluster raises ConfigError naming the file and the cluster."""
    p = tmp_path / "g.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=needle) as info:
        load_config(p)
    assert "g.toml: clusters[0]" in str(info.value)
