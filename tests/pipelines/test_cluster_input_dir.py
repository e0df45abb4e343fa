"""A cluster's ``input_dir`` is where every file source, the runner and the sensor look."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines._file_source import partitions_with_input
from pipelines._sources import FileSource
from pipelines.automation import input_fingerprints
from pipelines.config import Config, load_config
from pipelines.definitions import build_defs
from pipelines.kinds import input_kinds

DAY = "2026-03-04"


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    """Two clusters: ``east`` under ``<inputs>/east``, ``west`` in its own folder outside it."""
    monkeypatch.delenv("GOODPUT_DB", raising=False)
    path = tmp_path / "goodput.toml"
    path.write_text(
        f"""
default_cluster = "east"
[warehouse]
path = "{tmp_path / "w.duckdb"}"
inputs = "{tmp_path / "inputs"}"
[[clusters]]
name = "east"
[[clusters]]
name = "west"
input_dir = "{tmp_path / "elsewhere" / "west-exports"}"
""",
        encoding="utf-8",
    )
    return load_config(path)


def _write(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / name
    f.write_text("JobID|State\n", encoding="utf-8")
    return f


def test_cluster_input_dirs_gives_the_configured_folder_or_the_default(
    cfg: Config, tmp_path: Path
) -> None:
    """``east`` gets ``<inputs>/east``; ``west`` its configured ``input_dir``."""
    assert cfg.cluster_input_dirs() == {
        "east": tmp_path / "inputs" / "east",
        "west": tmp_path / "elsewhere" / "west-exports",
    }


def test_files_in_a_custom_input_dir_are_found_and_fingerprinted(
    cfg: Config, tmp_path: Path
) -> None:
    """A sacct export in ``west``'s own folder gives its partition and its fingerprint; the
    same file name under ``<inputs>/west`` would not be read."""
    west = _write(tmp_path / "elsewhere" / "west-exports" / "sacct", f"sacct_{DAY}.psv")
    east = _write(tmp_path / "inputs" / "east" / "sacct", f"sacct_{DAY}.psv")
    _write(tmp_path / "inputs" / "west" / "sacct", "sacct_2026-03-05.psv")  # not west's folder
    assert partitions_with_input(cfg.cluster_input_dirs()) == {
        ("east", DAY): {"sacct"},
        ("west", DAY): {"sacct"},
    }
    prints = input_fingerprints(cfg.cluster_input_dirs())
    assert sorted(prints) == sorted([str(east), str(west)])
    assert prints[str(west)][:2] == ["west", DAY]


def test_every_file_source_of_the_definitions_reads_the_custom_input_dir(
    cfg: Config, tmp_path: Path
) -> None:
    """Each file-source resource fetches ``west``'s files from its ``input_dir``."""
    root = tmp_path / "elsewhere" / "west-exports"
    resources = build_defs(cfg).resources or {}
    sources = {k: v for k, v in resources.items() if isinstance(v, FileSource)}
    # one file source per input kind of the registry (9: sacct, slurm-state, topology,
    # slurm-squeue, three Kubernetes kinds, dcgm, dcgm-hourly)
    assert set(sources) == {k.source_key for k in input_kinds()} and len(sources) == 9
    for key, source in sources.items():
        assert source.cluster_dir("west") == root, key
        assert source.cluster_dir("east") == tmp_path / "inputs" / "east", key
    sacct = _write(root / "sacct", f"sacct_{DAY}.psv")
    assert sources["sacct_source"].fetch("west", DAY) == [sacct]
    assert sources["sacct_source"].fetch("east", DAY) == []
