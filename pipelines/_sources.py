"""The source interface every input kind implements: a file twin and a live twin."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

import dagster as dg

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
    """Exported files under ``<inputs_dir>/<cluster>/<sub-folder>/``; the day is in the name."""

    inputs_dir: str
    kind: str

    def fetch(self, cluster: str, day: str) -> list[Path]:
        """Files of this kind whose name (else modification time) carries ``day``."""
        return files_for_day(Path(self.inputs_dir) / cluster, self.kind, day)
