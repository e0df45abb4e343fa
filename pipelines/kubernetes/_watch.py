"""Live Kubernetes Events: list, then watch, into the JSON-lines spool the file parser reads.

Kubernetes keeps Events for one hour by default, so a daily ``kubectl get events`` misses most
of a day; the Kueue Workload events (evictions, admissions) that date attempt boundaries are
exactly the ones lost. This module follows the API's own list-then-watch protocol
(kubernetes.io "Efficient detection of changes"):

1. **List** ``/api/v1/events`` (all namespaces, or one) and write every item; remember the list's
   ``metadata.resourceVersion``.
2. **Watch** from that version with ``allowWatchBookmarks=true`` and a server-side timeout; write
   ``ADDED``/``MODIFIED`` events (a ``DELETED`` Event is only its TTL expiring: skipped), move
   the resume point to each object's ``resourceVersion``, and to each ``BOOKMARK``'s.
3. When the server ends the watch (its timeout) watch again from the resume point; when the
   connection drops mid-stream, wait (exponential backoff) and resume from the same point; when
   the server answers **410 Gone** (``ERROR`` event with code 410, or HTTP 410: the version is
   older than the server keeps), list again.

Each event is appended as one JSON line ``{"type": ..., "object": <the Event as the API sent
it>}`` to ``<spool>/<cluster>/k8s/events_<YYYY-MM-DD>.jsonl``, the day being the event's own last
time (UTC), so the file source (``events*.jsonl``) and ``parse_k8s_events`` read it as they read
an export; the same uid written twice (a relist, a ``MODIFIED``) is folded there. An event whose
uid was already written at the same ``resourceVersion`` is not written again. The resume point is
kept in ``<spool>/<cluster>/k8s/.watch_state.json``, so a restarted watcher carries on.

The ``kubernetes`` Python client (``pip install kubernetes``) does the HTTP, TLS and
authentication; the stream is read line by line here (``kubernetes.watch.Watch`` retries a 410
itself and hides dropped connections, which this module must see).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

__all__ = ["EventSpool", "WatchStats", "core_v1_api", "watch_events"]

log = logging.getLogger(__name__)

_GONE: Final = 410
_CONNECT_S: Final = 10.0
_LIST_READ_S: Final = 120.0
_READ_SLACK_S: Final = 60.0
_TIME_FIELDS: Final = (
    ("lastTimestamp",),
    ("series", "lastObservedTime"),
    ("eventTime",),
    ("deprecatedLastTimestamp",),
    ("firstTimestamp",),
    ("metadata", "creationTimestamp"),
)


class ResourceExpired(Exception):
    """The resource version is too old (HTTP 410 Gone, or an ``ERROR`` event with code 410)."""


@dataclass
class WatchStats:
    """What one :func:`watch_events` run did.

    Attributes:
        listed: items received from list calls.
        written: lines appended to the spool.
        skipped: events not written (already written at that version, or ``DELETED``).
        bookmarks: ``BOOKMARK`` events seen.
        relists: lists after a 410 Gone.
        reconnects: watches resumed after a dropped or failed connection.
        watches: watch requests made.
        resource_version: the resume point at the end.
        files: spool files written to.
    """

    listed: int = 0
    written: int = 0
    skipped: int = 0
    bookmarks: int = 0
    relists: int = 0
    reconnects: int = 0
    watches: int = 0
    resource_version: str | None = None
    files: set[Path] = field(default_factory=set)


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _event_day(obj: dict[str, Any]) -> str:
    """The UTC day of the event's latest time (today when it carries none)."""
    for path in _TIME_FIELDS:
        value = _get(obj, *path)
        if isinstance(value, str) and value:
            try:
                return datetime.fromisoformat(value).astimezone(UTC).date().isoformat()
            except ValueError:
                continue
    return datetime.now(UTC).date().isoformat()


class EventSpool:
    """Appends events as JSON lines under ``<spool>/<cluster>/k8s/`` and keeps the resume point.

    Args:
        spool: the spool root (the file source's input folder).
        cluster: the cluster's name (a folder under ``spool``).
    """

    def __init__(self, spool: str | Path, cluster: str) -> None:
        self.folder = Path(spool) / cluster / "k8s"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.state_path = self.folder / ".watch_state.json"
        self._seen: dict[str, str] = {}

    def load_resource_version(self) -> str | None:
        """The saved resume point, or None."""
        try:
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        rv = state.get("resource_version") if isinstance(state, dict) else None
        return str(rv) if rv else None

    def save_resource_version(self, rv: str | None) -> None:
        """Save the resume point (atomically: write, then rename)."""
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"resource_version": rv}), encoding="utf-8")
        tmp.replace(self.state_path)

    def write(self, kind: str, obj: dict[str, Any]) -> Path | None:
        """Append ``{"type": kind, "object": obj}``; None when this version was written already."""
        uid = str(_get(obj, "metadata", "uid") or "")
        rv = str(_get(obj, "metadata", "resourceVersion") or "")
        if uid and rv and self._seen.get(uid) == rv:
            return None
        path = self.folder / f"events_{_event_day(obj)}.jsonl"
        line = json.dumps({"type": kind, "object": obj}, ensure_ascii=False, separators=(",", ":"))
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        if uid:
            self._seen[uid] = rv
        return path


def core_v1_api(host: str | None = None, *, in_cluster: bool = False) -> Any:
    """A ``kubernetes.client.CoreV1Api``: in-cluster config, a kubeconfig, or a bare ``host``.

    Args:
        host: API server URL; when given, no credentials are loaded (a proxy such as
            ``kubectl proxy``, or a test server).
        in_cluster: use the pod's service account.

    Raises:
        ModuleNotFoundError: the ``kubernetes`` package is not installed.
    """
    from kubernetes import client, config  # type: ignore[import-untyped,unused-ignore]

    if host is not None:
        conf = client.Configuration()
        conf.host = host
        return client.CoreV1Api(client.ApiClient(conf))
    if in_cluster:
        config.load_incluster_config()
    else:
        config.load_kube_config()
    return client.CoreV1Api()


def _list_call(api: Any, namespace: str | None) -> Callable[..., Any]:
    if namespace:
        return lambda **kw: api.list_namespaced_event(namespace, **kw)
    return lambda **kw: api.list_event_for_all_namespaces(**kw)


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


def _lines(resp: Any) -> Iterator[str]:
    """Complete lines of a streamed response (a partial last line is dropped)."""
    buffer = b""
    for chunk in resp.stream(amt=None, decode_content=False):
        buffer += chunk if isinstance(chunk, bytes) else str(chunk).encode("utf-8")
        *complete, buffer = buffer.split(b"\n")
        for raw in complete:
            if raw.strip():
                yield raw.decode("utf-8", errors="replace")


def _connection_errors() -> tuple[type[BaseException], ...]:
    import urllib3

    return (
        urllib3.exceptions.ProtocolError,
        urllib3.exceptions.ReadTimeoutError,
        urllib3.exceptions.NewConnectionError,
        urllib3.exceptions.MaxRetryError,
        ConnectionError,
        TimeoutError,
    )


def _list(call: Callable[..., Any], spool: EventSpool, stats: WatchStats) -> str | None:
    resp = call(_preload_content=False, _request_timeout=(_CONNECT_S, _LIST_READ_S))
    try:
        doc = json.loads(resp.data)
    finally:
        resp.release_conn()
    for item in doc.get("items") or []:
        if isinstance(item, dict):
            item.setdefault("kind", "Event")
            item.setdefault("apiVersion", doc.get("apiVersion", "v1"))
            stats.listed += 1
            _write(spool, "ADDED", item, stats)
    rv = _get(doc, "metadata", "resourceVersion")
    return str(rv) if rv else None


def _write(spool: EventSpool, kind: str, obj: dict[str, Any], stats: WatchStats) -> None:
    path = spool.write(kind, obj)
    if path is None:
        stats.skipped += 1
    else:
        stats.written += 1
        stats.files.add(path)


def _watch_once(
    call: Callable[..., Any],
    rv: str,
    spool: EventSpool,
    stats: WatchStats,
    timeout_seconds: int,
    stop: Callable[[WatchStats], bool],
) -> str:
    """One watch request from ``rv``; returns the resume point when the server ends it."""
    stats.watches += 1
    resp = call(
        watch=True,
        resource_version=rv,
        allow_watch_bookmarks=True,
        timeout_seconds=timeout_seconds,
        _preload_content=False,
        # The server ends the stream after timeout_seconds; a silent socket past that (plus
        # slack for bookmarks) is a dead connection, resumed like a dropped one.
        _request_timeout=(_CONNECT_S, timeout_seconds + _READ_SLACK_S),
    )
    try:
        for line in _lines(resp):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                log.warning("skipping a watch line that is not JSON: %.200s", line)
                continue
            kind = event.get("type")
            obj = event.get("object")
            if not isinstance(obj, dict):
                continue
            if kind == "ERROR":
                if obj.get("code") == _GONE:
                    raise ResourceExpired(str(obj.get("message")))
                raise RuntimeError(f"watch error {obj.get('code')}: {obj.get('message')}")
            new_rv = _get(obj, "metadata", "resourceVersion")
            if kind == "BOOKMARK":
                stats.bookmarks += 1
            elif kind in ("ADDED", "MODIFIED"):
                _write(spool, kind, obj, stats)
            else:
                stats.skipped += 1
            if new_rv:
                rv = str(new_rv)
                stats.resource_version = rv
            if stop(stats):
                break
    finally:
        # Close first: a connection left mid-stream must not go back to the pool.
        resp.close()
        resp.release_conn()
    return rv


def watch_events(
    api: Any,
    spool: str | Path,
    cluster: str,
    *,
    namespace: str | None = None,
    timeout_seconds: int = 300,
    max_watches: int | None = None,
    stop: Callable[[WatchStats], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_backoff_s: float = 60.0,
) -> WatchStats:
    """List then watch Events into the spool until ``stop`` says so.

    Args:
        api: a ``kubernetes.client.CoreV1Api`` (see :func:`core_v1_api`).
        spool: the spool root; files go to ``<spool>/<cluster>/k8s/events_<day>.jsonl``.
        cluster: the cluster's name.
        namespace: watch one namespace; None = all.
        timeout_seconds: server-side timeout of each watch request (the server then ends the
            stream and the watch is renewed from the last resource version).
        max_watches: stop after this many watch requests (None = no limit).
        stop: called after each event and each watch; True ends the run.
        sleep: how to wait between reconnects (exponential backoff from 1 s).
        max_backoff_s: the longest wait between reconnects.

    Returns:
        The run's :class:`WatchStats`; the resume point is saved in the spool.

    Raises:
        ApiException: any API error other than 410 Gone (e.g. 403 Forbidden).
    """
    store = EventSpool(spool, cluster)
    stats = WatchStats()
    call = _list_call(api, namespace)
    should_stop = stop or (lambda _s: False)
    dropped = _connection_errors()
    rv = store.load_resource_version()
    backoff = 1.0
    while not should_stop(stats) and (max_watches is None or stats.watches < max_watches):
        try:
            if rv is None:
                rv = _list(call, store, stats)
                stats.resource_version = rv
                store.save_resource_version(rv)
                if rv is None:
                    raise RuntimeError("the event list carries no resourceVersion")
            rv = _watch_once(call, rv, store, stats, timeout_seconds, should_stop)
            backoff = 1.0
        except ResourceExpired:
            log.info("resource version %s expired (410 Gone): listing again", rv)
            rv = None
            stats.relists += 1
        except dropped as exc:
            # Resume after the last event that arrived whole (the stats track it as they go).
            rv = stats.resource_version or rv
            stats.reconnects += 1
            log.warning("watch connection lost (%s); resuming from %s in %.0fs", exc, rv, backoff)
            sleep(backoff)
            backoff = min(backoff * 2, max_backoff_s)
        except Exception as exc:
            if _status(exc) != _GONE:
                raise
            log.info("resource version %s expired (HTTP 410): listing again", rv)
            rv = None
            stats.relists += 1
        stats.resource_version = rv
        store.save_resource_version(rv)
    return stats
