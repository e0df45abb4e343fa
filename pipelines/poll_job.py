"""The op the ``slurm_live_poll`` schedule runs (:func:`pipelines.automation.build_slurm_poll`)."""

# ruff: noqa: I002 - no `from __future__ import annotations` here: Dagster resolves the op's
# context and config annotations at definition time and rejects strings.

import dagster as dg

from pipelines.slurm.poll import poll_slurm

__all__ = ["PollConfig", "poll_slurm_state"]


class PollConfig(dg.Config):
    """One poll: where to spool, the cluster and its kinds
    (:func:`pipelines.slurm.poll.poll_kinds`)."""

    spool_dir: str
    cluster: str
    kinds: list[str]


@dg.op
def poll_slurm_state(context: dg.OpExecutionContext, config: PollConfig) -> list[str]:
    """Poll one live Slurm cluster once (:func:`pipelines.slurm.poll.poll_slurm`) and return
    the spooled paths.

    Raises:
        RuntimeError: a Slurm client is missing, timed out or failed (the run fails; the next
            tick polls again).
    """
    files = poll_slurm(config.spool_dir, config.cluster, config.kinds)
    context.log.info(f"{config.cluster}: spooled {', '.join(map(str, files))}")
    return [str(f) for f in files]
