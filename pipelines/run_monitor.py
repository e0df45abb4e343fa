"""Dead runs of ``goodput materialize``: found and failed, their concurrency slots freed.

``goodput materialize`` runs its Dagster runs in its own process. A process killed mid-run (kill
-9, an out-of-memory kill, a power loss) leaves its run STARTED and its ``duckdb`` pool slot
(limit 1, ``dagster.yaml``) claimed, so every later run waits for that slot forever. Dagster's
run monitoring does this clean-up for runs a daemon launched; these runs have no daemon, so
each run carries the host and process id that run it (:func:`run_tags`) and the next
``goodput materialize`` calls :func:`free_dead_runs` first: a run whose process is gone is
marked failed and its slots are freed, as run monitoring would.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

import dagster as dg

from pipelines.warehouse import pid_alive

__all__ = ["HOST_TAG", "PID_TAG", "free_dead_runs", "run_tags"]

#: The tags naming the process that runs a ``goodput materialize`` run.
HOST_TAG = "goodput/host"
PID_TAG = "goodput/pid"

_IN_PROGRESS = [
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def run_tags() -> dict[str, str]:
    """The host and process id tags of a run this process runs in-process."""
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


def free_dead_runs(instance: dg.DagsterInstance, log: Callable[[str], None] = print) -> list[str]:
    """Fail the in-progress runs whose process on this host is gone and free the concurrency
    slots that dead or finished runs still hold.

    Only runs tagged by :func:`run_tags` on this host are judged (a run another host or a
    Dagster daemon runs is left to its own monitoring); a run whose process id is alive is left
    alone. Slots claimed by a run that is finished or no longer stored are freed too.

    Args:
        instance: the Dagster instance (``$DAGSTER_HOME``).
        log: where to say what was freed.

    Returns:
        The run ids that were failed or had slots freed, in that order.
    """
    host = socket.gethostname()
    freed: list[str] = []
    storage = instance.event_log_storage
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=_IN_PROGRESS)):
        pid_text = run.tags.get(PID_TAG)
        if run.tags.get(HOST_TAG) != host or not pid_text or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == os.getpid() or pid_alive(pid):
            continue
        instance.report_run_failed(
            run, f"the process that ran it (pid {pid} on {host}) is gone; freed by goodput"
        )
        storage.free_concurrency_slots_for_run(run.run_id)
        freed.append(run.run_id)
        log(f"goodput: run {run.run_id[:8]} was left STARTED by a dead process (pid {pid}): "
            "marked failed, its concurrency slots freed")  # fmt: skip
    for run_id in sorted(storage.get_concurrency_run_ids()):
        if run_id in freed:
            continue
        held = instance.get_run_by_id(run_id)
        if held is None or held.is_finished:
            storage.free_concurrency_slots_for_run(run_id)
            freed.append(run_id)
            log(f"goodput: freed the concurrency slots of finished run {run_id[:8]}")
    return freed
