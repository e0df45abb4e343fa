"""Live event watch (list, then watch) against a replayed Kubernetes API.

No API server runs here, so these tests start a local HTTP server on 127.0.0.1 (stdlib
``http.server``) that **replays recorded API responses**: an ``EventList`` for each list call
and, for each watch call, a chunked stream of watch events as the API server sends them
(``ADDED``/``MODIFIED``/``DELETED``, a ``BOOKMARK``, an ``ERROR`` Status with code 410, an
HTTP 410 answer, and a connection dropped in the middle of a line). The real ``kubernetes``
client talks to it over HTTP, so the requests (``watch``, ``resourceVersion``,
``allowWatchBookmarks``, ``timeoutSeconds``) are the ones a real API server would receive.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import polars as pl
import pytest

from pipelines.kubernetes._events_parse import parse_k8s_events
from pipelines.kubernetes._watch import core_v1_api, watch_events

DROP = object()  # in a watch script: drop the connection in the middle of a line
GONE_HTTP = object()  # a whole watch request answered 410 Gone


def _event(n: int, rv: int, reason: str, *, count: int = 1, day: int = 2) -> dict[str, Any]:
    """A core/v1 Event about a Kueue Workload, as the API server serialises it."""
    ts = f"2026-11-{day:02d}T10:{n:02d}:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"job-train-llm-7b-3f2a1.18{n:014x}",
            "namespace": "nlp",
            "uid": f"0a0b0c0d-0000-4000-8000-{n:012d}",
            "resourceVersion": str(rv),
            "creationTimestamp": ts,
        },
        "involvedObject": {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "Workload",
            "name": "job-train-llm-7b-3f2a1",
            "namespace": "nlp",
            "uid": "5b1f0c3e-2d4a-4e8b-9c7d-1a2b3c4d5e6f",
        },
        "reason": reason,
        "message": f"{reason} (recorded event {n})",
        "source": {"component": "kueue-admission"},
        "firstTimestamp": ts,
        "lastTimestamp": ts,
        "count": count,
        "type": "Normal",
        "eventTime": None,
        "reportingComponent": "kueue-admission",
        "reportingInstance": "",
    }


def _list(rv: int, *items: dict[str, Any]) -> dict[str, Any]:
    # In a list, the API server leaves kind/apiVersion off the items.
    bare = [{k: v for k, v in i.items() if k not in ("kind", "apiVersion")} for i in items]
    return {"kind": "EventList", "apiVersion": "v1", "metadata": {"resourceVersion": str(rv)},
            "items": bare}  # fmt: skip


def _bookmark(rv: int) -> dict[str, Any]:
    return {"type": "BOOKMARK", "object": {"kind": "Event", "apiVersion": "v1",
            "metadata": {"resourceVersion": str(rv), "creationTimestamp": None}}}  # fmt: skip


def _expired(old: int, now: int) -> dict[str, Any]:
    return {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": f"too old resource version: {old} ({now})",
            "reason": "Expired", "code": 410}}  # fmt: skip


@dataclass
class Script:
    """What the replay server answers, in order, and what it was asked."""

    lists: deque[dict[str, Any]] = field(default_factory=deque)
    watches: deque[list[Any]] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)


class _Replay(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script: Script

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test asserts on the recorded requests instead."""

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.script.requests.append({"path": url.path, **query})
        # Go's strconv.ParseBool, as the API server: the Python client sends "True".
        if query.get("watch", "").lower() not in ("true", "1", "t"):
            if not self.script.lists:
                self._send_json(500, {"message": "replay script has no more lists"})
                return
            self._send_json(200, self.script.lists.popleft())
            return
        if not self.script.watches:
            self._send_json(500, {"message": "replay script has no more watches"})
            return
        steps = self.script.watches.popleft()
        if steps and steps[0] is GONE_HTTP:
            self._send_json(410, _expired(int(query["resourceVersion"]), 999)["object"])
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for step in steps:
            if step is DROP:
                partial = b'{"type":"ADDED","object":{"kind":"Ev'
                self.wfile.write(b"400\r\n" + partial)
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._chunk(json.dumps(step).encode() + b"\n")
        self.wfile.write(b"0\r\n\r\n")  # the server's timeout: a clean end of the stream


@pytest.fixture
def api_server() -> Iterator[tuple[str, Script]]:
    script = Script()
    handler = type("Replay", (_Replay,), {"script": script})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_list_then_watch_with_bookmark_drop_and_gone(
    api_server: tuple[str, Script], tmp_path: Path
) -> None:
    """A bookmark moves the resume point, a dropped connection resumes from it, a 410 (as an
    ERROR event and as an HTTP answer) re-lists; nothing is lost or half-written."""
    host, script = api_server
    e1, e2 = _event(1, 90, "QuotaReserved"), _event(2, 100, "Admitted")
    e3, e4, e5 = (
        _event(3, 101, "Pending"),
        _event(4, 290, "Preempted"),
        _event(5, 401, "Pending", day=3),
    )
    e1b = {**_event(1, 151, "QuotaReserved", count=2)}
    script.lists.extend(
        [_list(100, e1, e2), _list(300, e1b, e2, e3, e4), _list(400, e1b, e2, e3, e4)]
    )
    script.watches.extend(
        [
            [{"type": "ADDED", "object": e3}, _bookmark(150)],
            [{"type": "MODIFIED", "object": e1b}, DROP],
            [_expired(151, 300)],
            [GONE_HTTP],
            [{"type": "ADDED", "object": e5}, {"type": "DELETED", "object": e2}],
        ]
    )
    waits: list[float] = []
    stats = watch_events(
        core_v1_api(host), tmp_path, "k8s-b", timeout_seconds=30,
        stop=lambda s: s.written >= 6, sleep=waits.append,
    )  # fmt: skip
    asked = [(r.get("watch"), r.get("resourceVersion")) for r in script.requests]
    assert asked == [
        (None, None), ("True", "100"), ("True", "150"), ("True", "151"),
        (None, None), ("True", "300"), (None, None), ("True", "400"),
    ]  # fmt: skip
    watch = script.requests[1]
    assert (watch["allowWatchBookmarks"], watch["timeoutSeconds"]) == ("True", "30")
    assert script.requests[0]["path"] == "/api/v1/events"
    assert (stats.relists, stats.reconnects, stats.bookmarks, stats.watches) == (2, 1, 1, 5)
    assert (stats.listed, stats.written, stats.skipped) == (10, 6, 7)
    assert waits == [1.0]
    assert stats.resource_version == "401"
    folder = tmp_path / "k8s-b" / "k8s"
    assert sorted(p.name for p in folder.glob("events_*.jsonl")) == [
        "events_2026-11-02.jsonl",
        "events_2026-11-03.jsonl",
    ]
    assert json.loads((folder / ".watch_state.json").read_text()) == {"resource_version": "401"}


def test_the_spool_reads_back_with_the_file_parser(
    api_server: tuple[str, Script], tmp_path: Path
) -> None:
    """The spooled JSON lines are what ``parse_k8s_events`` reads: one row per uid, latest count."""
    host, script = api_server
    e1, e1b = _event(1, 90, "QuotaReserved"), _event(1, 120, "QuotaReserved", count=3)
    script.lists.append(_list(100, e1))
    script.watches.append(
        [
            {"type": "MODIFIED", "object": e1b},
            {"type": "ADDED", "object": _event(2, 130, "Admitted")},
        ]
    )
    watch_events(core_v1_api(host), tmp_path, "k8s-b", max_watches=1)
    res = parse_k8s_events(tmp_path / "k8s-b" / "k8s" / "events_2026-11-02.jsonl", cluster="k8s-b")
    assert res.rejected.height == 0
    assert res.info["framing"] == "jsonl"
    rows = res.rows.sort("reason").select("reason", "count", "involved_kind").rows()
    assert rows == [("Admitted", 1, "Workload"), ("QuotaReserved", 3, "Workload")]
    assert res.rows["first_seen"].dtype == pl.Datetime("us", "UTC")


def test_a_restarted_watcher_resumes_without_listing(
    api_server: tuple[str, Script], tmp_path: Path
) -> None:
    """The saved resource version is the resume point of the next run: no second list."""
    host, script = api_server
    script.lists.append(_list(100))
    script.watches.extend(
        [[_bookmark(180)], [{"type": "ADDED", "object": _event(7, 181, "Admitted")}]]
    )
    first = watch_events(core_v1_api(host), tmp_path, "k8s-b", max_watches=1)
    second = watch_events(core_v1_api(host), tmp_path, "k8s-b", max_watches=1)
    assert (first.listed, first.resource_version) == (0, "180")
    assert (second.written, second.resource_version) == (1, "181")
    asked = [(r.get("watch"), r.get("resourceVersion")) for r in script.requests]
    assert asked == [(None, None), ("True", "100"), ("True", "180")]


def test_other_api_errors_are_raised(api_server: tuple[str, Script], tmp_path: Path) -> None:
    """A failure that is not 410 Gone (here a 500 from an empty script) is not swallowed."""
    host, _script = api_server
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as exc:
        watch_events(core_v1_api(host), tmp_path, "k8s-b", max_watches=1)
    assert exc.value.status == 500


def test_namespaced_watch(api_server: tuple[str, Script], tmp_path: Path) -> None:
    """One namespace: ``/api/v1/namespaces/<ns>/events``."""
    host, script = api_server
    script.lists.append(_list(5))
    script.watches.append([])
    watch_events(core_v1_api(host), tmp_path, "k8s-b", namespace="nlp", max_watches=1)
    assert [r["path"] for r in script.requests] == ["/api/v1/namespaces/nlp/events"] * 2
