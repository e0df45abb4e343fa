"""``goodput watch k8s``: the live Event watch as a long-running process.

Kubernetes keeps Events for an hour, so the watch must run all the time, not once a day: this
command runs :func:`pipelines.kubernetes.watch_events` until it is told to stop, appending
JSON lines to ``<inputs>/<cluster>/k8s/events_<day>.jsonl`` (the file source's ``k8s-events``
files). Run it under systemd, a Kubernetes Deployment (``--in-cluster``) or ``nohup``.

Stopping: SIGTERM or SIGINT ends the run cleanly. Every event line is written and closed as it
arrives (nothing is buffered), so on a signal the command only saves the resume point (the last
``resourceVersion`` seen) in ``.watch_state.json`` and exits 0; a restarted watcher resumes from
it without listing again.
"""

from __future__ import annotations

import signal
import types
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["run_watch", "watch_app"]

watch_app = typer.Typer(
    name="watch",
    help="Live sources that run continuously (Kubernetes Events).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


class _Stopped(BaseException):
    """Raised from the signal handler to leave a blocking read (not an ``Exception``, so the
    watch loop's retry handlers let it through)."""


def run_watch(
    api: Any,
    spool: Path,
    cluster: str,
    *,
    namespace: str | None = None,
    timeout_seconds: int = 300,
    max_watches: int | None = None,
) -> tuple[Any, str]:
    """Run the watch until SIGTERM/SIGINT (or ``max_watches``); returns (stats, why it ended).

    The signal handlers are installed for the run and restored after it. ``why`` is
    ``"signal"`` or ``"max-watches"``.

    Raises:
        ApiException: an API error other than 410 Gone (e.g. 403 Forbidden).
    """
    from pipelines.kubernetes import EventSpool, WatchStats, watch_events

    seen: dict[str, WatchStats] = {}
    state = {"stop": False}

    def on_signal(signum: int, _frame: types.FrameType | None) -> None:
        state["stop"] = True
        raise _Stopped(signum)

    def stop(stats: WatchStats) -> bool:
        seen["stats"] = stats
        return state["stop"]

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    why = "max-watches"
    try:
        stats = watch_events(
            api,
            spool,
            cluster,
            namespace=namespace,
            timeout_seconds=timeout_seconds,
            max_watches=max_watches,
            stop=stop,
        )
        if state["stop"]:
            why = "signal"
    except _Stopped:
        why = "signal"
        stats = seen.get("stats") or WatchStats()
        # Lines are already on disk; keep where to resume (the last version fully written).
        if stats.resource_version is not None:
            EventSpool(spool, cluster).save_resource_version(stats.resource_version)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return stats, why


@watch_app.command("k8s")
def watch_k8s(
    cluster: Annotated[str, typer.Option(help="Cluster name (folder under the inputs)")],
    kubeconfig: Annotated[
        Path | None, typer.Option(help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    ] = None,
    context: Annotated[str | None, typer.Option(help="kubeconfig context")] = None,
    host: Annotated[
        str | None,
        typer.Option(help="API server URL without credentials (e.g. `kubectl proxy`)"),
    ] = None,
    in_cluster: Annotated[bool, typer.Option(help="Use the pod's service account")] = False,
    namespace: Annotated[str | None, typer.Option(help="One namespace (default: all)")] = None,
    spool: Annotated[
        Path | None, typer.Option(help="Spool root (default: the configured inputs folder)")
    ] = None,
    timeout_seconds: Annotated[
        int, typer.Option(help="Server-side timeout of each watch request (s)")
    ] = 300,
    max_watches: Annotated[
        int | None, typer.Option(help="Stop after this many watch requests (default: never)")
    ] = None,
) -> None:
    """Watch Kubernetes Events continuously into ``<inputs>/<cluster>/k8s/events_<day>.jsonl``.

    Lists, then watches from the list's resourceVersion, resumes after dropped connections and
    re-lists on 410 Gone. SIGTERM/SIGINT stop it cleanly (resume point saved, exit 0).
    """
    from pipelines.config import ConfigError, load_config

    if spool is None:
        try:
            spool = load_config().inputs_dir
        except ConfigError as exc:
            typer.echo(f"goodput: error: {exc}", err=True)
            raise typer.Exit(1) from exc
    try:
        api = _api(host=host, kubeconfig=kubeconfig, context=context, in_cluster=in_cluster)
    except ModuleNotFoundError as exc:
        typer.echo("goodput: error: the `kubernetes` package is not installed", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"watching events of {cluster} into {Path(spool) / cluster / 'k8s'}")
    stats, why = run_watch(
        api,
        Path(spool),
        cluster,
        namespace=namespace,
        timeout_seconds=timeout_seconds,
        max_watches=max_watches,
    )
    typer.echo(
        f"stopped ({why}): {stats.written} events written, {stats.listed} listed, "
        f"{stats.relists} relists, {stats.reconnects} reconnects; "
        f"resume from resourceVersion {stats.resource_version}"
    )


def _api(
    *, host: str | None, kubeconfig: Path | None, context: str | None, in_cluster: bool
) -> Any:
    """A ``CoreV1Api`` from a bare host, a kubeconfig (file/context) or the service account."""
    from pipelines.kubernetes import core_v1_api

    if host is not None or in_cluster or (kubeconfig is None and context is None):
        return core_v1_api(host, in_cluster=in_cluster)
    from kubernetes import client, config  # type: ignore[import-untyped,unused-ignore]

    api_client = config.new_client_from_config(
        config_file=str(kubeconfig) if kubeconfig else None, context=context
    )
    return client.CoreV1Api(api_client)
