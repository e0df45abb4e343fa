"""A real Prometheus 2.x holding one generated day of dcgm-exporter series.

Used by ``tests/integration/test_prometheus_source.py``; needs the Debian package ``prometheus``
(``prometheus`` and ``promtool``), which ``scripts/install-system-deps.sh`` installs.
"""

from __future__ import annotations

from .server import (
    REQUIRED_BINARIES,
    FaultyProxy,
    PrometheusTestServer,
    build_tsdb,
    free_port,
    missing_binaries,
)

__all__ = [
    "REQUIRED_BINARIES",
    "FaultyProxy",
    "PrometheusTestServer",
    "build_tsdb",
    "free_port",
    "missing_binaries",
]
