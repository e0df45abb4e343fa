"""Input files on disk, laid out as ``<cluster folder>/<kind>/``, assigned to daily partitions.

A cluster's folder is ``<inputs>/<cluster>/`` unless the config gives it an ``input_dir``
(:meth:`pipelines.config.Config.cluster_input_dirs`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path

from pipelines.ingest import file_day
from pipelines.kinds import input_kinds

__all__ = ["files_for_day", "partitions_with_input"]

#: Input kinds and the sub-folder and file patterns they are read from (the kinds registry).
KIND_GLOBS: dict[str, tuple[str, tuple[str, ...]]] = {
    k.name: (k.folder, k.globs) for k in input_kinds()
}


def _day_of(path: Path) -> str:
    """The day in the file's name, else the UTC day of its modification time."""
    day = file_day(path)
    if day is not None:
        return day
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).date().isoformat()


def _files(cluster_dir: Path, kind: str) -> list[Path]:
    sub, globs = KIND_GLOBS[kind]
    folder = cluster_dir / sub
    if not folder.is_dir():
        return []
    found: set[Path] = set()
    for g in globs:
        found.update(p for p in folder.glob(g) if p.is_file())
    return sorted(found)


def files_for_day(cluster_dir: Path, kind: str, day: str) -> list[Path]:
    """Input files of ``kind`` under ``cluster_dir`` that belong to ``day`` (YYYY-MM-DD)."""
    return [p for p in _files(cluster_dir, kind) if _day_of(p) == day]


def partitions_with_input(cluster_dirs: Mapping[str, Path]) -> dict[tuple[str, str], set[str]]:
    """``(cluster, day)`` → the input kinds that have files for it.

    Args:
        cluster_dirs: cluster → its input folder (``Config.cluster_input_dirs()``).
    """
    out: dict[tuple[str, str], set[str]] = {}
    for cluster, cluster_dir in cluster_dirs.items():
        for kind in KIND_GLOBS:
            for p in _files(cluster_dir, kind):
                out.setdefault((cluster, _day_of(p)), set()).add(kind)
    return out
