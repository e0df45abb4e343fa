"""``goodput poll slurm``: one poll of a live Slurm cluster's frequently changing state, for cron.

The same poll the Dagster schedule ``slurm_live_poll`` runs every two minutes
(:mod:`pipelines.slurm.poll`): ``squeue`` appended to ``<inputs>/<cluster>/squeue/squeue_<day>.txt``
and, on Slurm run on Kubernetes, ``scontrol show nodes`` spooled as
``<inputs>/<cluster>/slurm_state/node_comments_<stamp>.txt``. A crontab line::

    */2 * * * * goodput poll slurm --cluster slurm-a
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["poll_app"]

poll_app = typer.Typer(
    name="poll",
    help="One poll of live scheduler state (run it from cron every minute or few).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@poll_app.command("slurm")
def poll_slurm_cmd(
    cluster: Annotated[str, typer.Option(help="Slurm cluster name (-M; folder under the inputs)")],
    kinds: Annotated[
        list[str] | None,
        typer.Option(
            "--kinds",
            help="squeue and/or node_comments (default: squeue, and node_comments where the "
            "cluster is configured with slurm_on_k8s)",
        ),
    ] = None,
    slurm_conf: Annotated[
        str | None, typer.Option(help="SLURM_CONF for the clients (default: theirs)")
    ] = None,
    bin_dir: Annotated[
        str | None, typer.Option(help="Folder of the Slurm clients (default: PATH)")
    ] = None,
    spool: Annotated[
        Path | None, typer.Option(help="Spool root (default: the configured inputs folder)")
    ] = None,
    clock_offset_s: Annotated[
        float,
        typer.Option(help="Seconds the cluster's clock runs ahead of this host's (normally 0)"),
    ] = 0.0,
) -> None:
    """Poll ``squeue`` (and node comments) of one cluster once and spool it."""
    from pipelines.config import ConfigError, load_config
    from pipelines.slurm.poll import poll_kinds, poll_slurm

    try:
        cfg = load_config()
    except ConfigError as exc:
        typer.echo(f"goodput: error: {exc}", err=True)
        raise typer.Exit(1) from exc
    chosen = [k for arg in kinds for k in arg.split(",") if k] if kinds else None
    try:
        files = poll_slurm(
            spool or cfg.inputs_dir, cluster, chosen or poll_kinds(cfg.cluster(cluster)),
            slurm_conf=slurm_conf, bin_dir=bin_dir, clock_offset_s=clock_offset_s,
        )  # fmt: skip
    except (ValueError, RuntimeError) as exc:
        typer.echo(f"goodput: error: {exc}", err=True)
        raise typer.Exit(1) from exc
    for f in files:
        typer.echo(f"spooled {f}")
