"""``goodput watch k8s``: the continuous Event watch as a command, against a **replayed** API.

No API server runs here: as in ``test_k8s_watch.py`` (whose replay server and recorded events
these tests reuse), a local HTTP server on 127.0.0.1 replays recorded list and watch responses,
and the real ``kubernetes`` client talks to it. One test runs the command in-process until its
``--max-watches``; the other runs it as its own process, holds the replayed watch stream open,
and stops the process with SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.kubernetes._events_parse import parse_k8s_events
from tests.kubernetes.test_k8s_watch import Script, _bookmark, _event, _list, _Replay, api_server

__all__ = ["api_server"]  # the fixture, re-exported for pytest

HOLD = "hold"  # in a watch script: keep the stream open until the test releases it


def test_watch_command_spools_events_until_max_watches(
    api_server: tuple[str, Script], tmp_path: Path
) -> None:
    """List (2 events), watch 1 (a new event and a bookmark), watch 2 (a count update): three
    distinct events on disk, the count update folded by the file parser; resume point saved."""
    host, script = api_server
    e1, e2 = _event(1, 90, "QuotaReserved"), _event(2, 100, "Admitted")
    e3, e1b = _event(3, 120, "Pending"), _event(1, 160, "QuotaReserved", count=3)
    script.lists.append(_list(100, e1, e2))
    script.watches.extend(
        [[{"type": "ADDED", "object": e3}, _bookmark(150)], [{"type": "MODIFIED", "object": e1b}]]
    )
    result = CliRunner().invoke(
        app,
        ["watch", "k8s", "--cluster", "k8s-b", "--host", host, "--spool", str(tmp_path),
         "--max-watches", "2", "--timeout-seconds", "5"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "stopped (max-watches): 4 events written" in result.output
    folder = tmp_path / "k8s-b" / "k8s"
    assert json.loads((folder / ".watch_state.json").read_text()) == {"resource_version": "160"}
    rows = parse_k8s_events(folder / "events_2026-11-02.jsonl", cluster="k8s-b").rows
    assert sorted(zip(rows["reason"], rows["count"], strict=True)) == [
        ("Admitted", 1), ("Pending", 1), ("QuotaReserved", 3),
    ]  # fmt: skip
    asked = [(r.get("watch"), r.get("resourceVersion")) for r in script.requests]
    assert asked == [(None, None), ("True", "100"), ("True", "150")]


class _HoldingReplay(_Replay):
    """The replay server, plus a watch step that keeps the stream open (a quiet cluster)."""

    release: threading.Event

    def _chunk(self, data: bytes) -> None:
        if data.strip() == json.dumps(HOLD).encode():
            self.release.wait(60)
            return
        super()._chunk(data)


@pytest.fixture
def holding_server() -> Iterator[tuple[str, Script, threading.Event]]:
    script, release = Script(), threading.Event()
    handler = type("Holding", (_HoldingReplay,), {"script": script, "release": release})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script, release
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_sigterm_stops_the_watch_cleanly(
    holding_server: tuple[str, Script, threading.Event], tmp_path: Path
) -> None:
    """The command as its own process: it lists, receives one watched event, then waits on an
    open stream; SIGTERM ends it with exit 0, every event on disk as whole lines and the resume
    point at the last event received."""
    host, script, _release = holding_server
    script.lists.append(_list(100, _event(1, 90, "QuotaReserved")))
    script.watches.append([{"type": "ADDED", "object": _event(2, 130, "Admitted")}, HOLD])
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "watch", "k8s", "--cluster", "k8s-b",
         "--host", host, "--spool", str(tmp_path), "--timeout-seconds", "60"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    spool = tmp_path / "k8s-b" / "k8s" / "events_2026-11-02.jsonl"
    try:
        for _ in range(600):  # wait (up to a minute) for the watched event to land
            if spool.exists() and len(spool.read_text().splitlines()) == 2:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "stopped (signal): 2 events written" in out
    lines = [json.loads(x) for x in spool.read_text().splitlines()]
    assert [x["object"]["reason"] for x in lines] == ["QuotaReserved", "Admitted"]
    state = json.loads((spool.parent / ".watch_state.json").read_text())
    assert state == {"resource_version": "130"}
