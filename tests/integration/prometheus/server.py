"""A real Prometheus 2.x over backfilled data, and a faulty HTTP proxy in front of it.

:class:`PrometheusTestServer` writes the generated day of :mod:`.series` as OpenMetrics, turns it
into TSDB blocks with ``promtool tsdb create-blocks-from openmetrics`` and runs ``prometheus`` on
them, bound to 127.0.0.1 on a free port, with no scrape targets. :class:`FaultyProxy` forwards to
it and answers chosen requests with an error instead (or stops listening, so that connections
are refused).
"""

from __future__ import annotations

import http.server
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Final

from .series import write_openmetrics

__all__ = [
    "REQUIRED_BINARIES",
    "FaultyProxy",
    "PrometheusTestServer",
    "build_tsdb",
    "free_port",
    "missing_binaries",
]

#: The binaries the server needs (Debian package ``prometheus``).
REQUIRED_BINARIES: Final = ("prometheus", "promtool")

# No scrape targets: the server only answers queries over the backfilled blocks.
_CONFIG: Final = "global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\nscrape_configs: []\n"


def missing_binaries() -> list[str]:
    """The names in :data:`REQUIRED_BINARIES` that are not on ``PATH``."""
    return [b for b in REQUIRED_BINARIES if shutil.which(b) is None]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def build_tsdb(base: Path) -> Path:
    """Write the generated day as OpenMetrics under ``base`` and backfill it into TSDB blocks.

    Args:
        base: a folder to work in; gets ``day.om`` and the block folder ``tsdb/``.

    Returns:
        The TSDB folder (give it to :class:`PrometheusTestServer`).

    Raises:
        subprocess.CalledProcessError: promtool failed.
    """
    om = base / "day.om"
    write_openmetrics(om)
    tsdb = base / "tsdb"
    subprocess.run(
        [
            "promtool",
            "tsdb",
            "create-blocks-from",
            # 24 h blocks: several times faster than the default 2 h ones
            "--max-block-duration=24h",
            "--quiet",
            "openmetrics",
            str(om),
            str(tsdb),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    om.unlink()
    return tsdb


class PrometheusTestServer:
    """``prometheus`` on an existing TSDB folder, as a context manager.

    Args:
        tsdb: the TSDB folder (see :func:`build_tsdb`); one server at a time may use it.
        extra_args: more command-line flags (``--query.max-samples=2000``).
        lookback_delta: ``--query.lookback-delta``; below the 30 s sample interval, because
            backfilled series have no staleness markers.
    """

    def __init__(
        self, tsdb: Path, *, extra_args: Sequence[str] = (), lookback_delta: str = "25s"
    ) -> None:
        self.tsdb = tsdb
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._args = list(extra_args)
        self._lookback = lookback_delta
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = tsdb.parent / f"prometheus-{self.port}.log"

    def __enter__(self) -> PrometheusTestServer:
        config = self.tsdb.parent / "prometheus.yml"
        config.write_text(_CONFIG)
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    f"--storage.tsdb.path={self.tsdb}",
                    # retention counts back from the newest block, not from now
                    "--storage.tsdb.retention.time=100y",
                    f"--query.lookback-delta={self._lookback}",
                    "--log.level=warn",
                    *self._args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            self._wait_ready(timeout_s=30.0)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _wait_ready(self, timeout_s: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited with {self._proc.returncode}: {self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1.0) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        raise TimeoutError(f"prometheus not ready after {timeout_s} s: {self.log_tail()}")

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the server's log."""
        try:
            return self._log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s); idempotent."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)


class FaultyProxy:
    """An HTTP proxy to ``upstream`` that answers chosen requests with an error.

    Args:
        upstream: base URL to forward to (``http://127.0.0.1:9090``).
        fail: called with each request's path and query string; returns an HTTP status to answer
            with instead of forwarding (``503``), or None to forward.

    Attributes:
        requests: every request's path and query string, in order of arrival.
    """

    def __init__(self, upstream: str, fail: Callable[[str], int | None]) -> None:
        self.upstream = upstream.rstrip("/")
        self.fail = fail
        self.requests: list[str] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with proxy._lock:
                    proxy.requests.append(self.path)
                status = proxy.fail(self.path)
                if status is not None:
                    body = b'{"status":"error","errorType":"unavailable","error":"injected"}'
                    self.send_response(status)
                else:
                    try:
                        with urllib.request.urlopen(proxy.upstream + self.path, timeout=30) as r:
                            status, body = r.status, r.read()
                    except urllib.error.HTTPError as e:
                        status, body = e.code, e.read()
                    self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: the test reads :attr:`FaultyProxy.requests` instead."""

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> FaultyProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening: later connections to :attr:`url` are refused; idempotent."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
