"""``load_config`` reads a file once per process and again once the file or GOODPUT_DB changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.config import load_config
from tests.conftest import write_config


@pytest.fixture(autouse=True)
def _no_db_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOODPUT_DB", raising=False)


def test_second_call_returns_the_same_object(tmp_path: Path) -> None:
    """An unchanged file is not read again: both calls give the one ``Config``."""
    path = write_config(tmp_path)
    assert load_config(path) is load_config(path)


def test_an_edited_file_is_read_again(tmp_path: Path) -> None:
    """After the file changes (new text of a new size) the next call sees the new values."""
    path = write_config(tmp_path)
    first = load_config(path)
    assert first.default_cluster == "slurm-a"
    text = path.read_text(encoding="utf-8")
    # the cluster renamed everywhere (a default_cluster alone naming no cluster is refused)
    path.write_text(text.replace('"slurm-a"', '"slurm-zz"'), encoding="utf-8")
    again = load_config(path)
    assert again is not first
    assert again.default_cluster == "slurm-zz"


def test_a_same_size_edit_with_a_new_mtime_is_read_again(tmp_path: Path) -> None:
    """The size alone does not decide: an edit of equal length with a new mtime is read again."""
    path = write_config(tmp_path)
    first = load_config(path)
    text = path.read_text(encoding="utf-8")
    st = path.stat()
    path.write_text(text.replace('"slurm-a"', '"slurm-b"'), encoding="utf-8")
    # Coarse file-system clocks may give the rewrite the old mtime: move it on explicitly.
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert path.stat().st_size == st.st_size
    assert load_config(path).default_cluster == "slurm-b"
    assert first.default_cluster == "slurm-a"


def test_goodput_db_change_gives_a_new_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GOODPUT_DB is part of the key: setting it after a load changes the warehouse path."""
    path = write_config(tmp_path)
    first = load_config(path)
    monkeypatch.setenv("GOODPUT_DB", str(tmp_path / "other.duckdb"))
    second = load_config(path)
    assert second.warehouse_path == tmp_path / "other.duckdb"
    assert first.warehouse_path == tmp_path / "warehouse.duckdb"
    assert load_config(path) is second
