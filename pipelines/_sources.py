"""The source interface every input kind implements: a file twin and a live twin."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

import dagster as dg
from pydantic import Field

from pipelines._file_source import files_for_day

__all__ = ["FileSource", "InputSource"]


class InputSource(dg.ConfigurableResource, ABC):  # type: ignore[type-arg]  # Dagster idiom
    """Where one kind of input comes from, for one cluster and UTC day.

    ``fetch`` returns files to parse: a file twin returns exported files; a live twin queries the
    system and spools what it got to a file first, so every load is a file load (idempotent by
    path, re-parseable, and kept as evidence).
    """

    @abstractmethod
    def fetch(self, cluster: str, day: str) -> list[Path]:
        """Input files for ``cluster`` and ``day`` (YYYY-MM-DD, UTC)."""


class FileSource(InputSource):
    """Exported files under ``<inputs_dir>/<cluster>/<sub-folder>/``; the day is in the name.

    Attributes:
        inputs_dir: the inputs folder, holding one folder per cluster.
        kind: the input kind (the kinds registry's name).
        cluster_dirs: cluster → its own input folder, for clusters configured with an
            ``input_dir`` (``Config.cluster_input_dirs()``); others use ``<inputs_dir>/<cluster>``.
    """

    inputs_dir: str
    kind: str
    cluster_dirs: dict[str, str] = Field(default_factory=dict)

    def cluster_dir(self, cluster: str) -> Path:
        """The folder holding ``cluster``'s input sub-folders."""
        own = self.cluster_dirs.get(cluster)
        return Path(own) if own else Path(self.inputs_dir) / cluster

    def fetch(self, cluster: str, day: str) -> list[Path]:
        """Files of this kind whose name (else modification time) carries ``day``."""
        return files_for_day(self.cluster_dir(cluster), self.kind, day)
