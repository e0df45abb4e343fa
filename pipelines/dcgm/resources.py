"""DCGM telemetry sources: dcgm-exporter text dumps (the Prometheus twin queries a server)."""

from __future__ import annotations

from pipelines._sources import FileSource

__all__ = ["DcgmFileSource"]


class DcgmFileSource(FileSource):
    """dcgm-exporter text / OpenMetrics dumps under ``<cluster>/dcgm/`` (gzip allowed)."""

    kind: str = "dcgm"
