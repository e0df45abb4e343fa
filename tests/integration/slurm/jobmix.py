"""A job mix that exercises every job outcome the pipeline must account for, in about 2 minutes.

:func:`run_job_mix` submits, on a started :class:`~.cluster.SlurmTestCluster`: jobs that complete,
fail (exit 1, and killed by a signal), hit their 1-minute limit (TIMEOUT), are cancelled while
pending and while running, are requeued and rerun, a ``%2``-throttled array, a 2-node 16-GPU job
with an ``srun`` step, a CPU-only job, a 4-GPU job on ``debug`` and a whole-cluster 32-GPU job that
pends for resources until the others are done; it drives the cancels and the requeue and waits
until everything has ended and slurmdbd has every record.

:func:`capture_run` then rolls the hour up and captures what the tests compare: ``sacct`` for
the hour (every state, every attempt, steps included) and ``sreport``'s GPU utilization.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from .cluster import SlurmTestCluster, slurm_time

__all__ = [
    "SACCT_STATES",
    "ClusterRun",
    "JobMix",
    "SubmittedJob",
    "capture_run",
    "run_job_mix",
    "sacct_capture_args",
]

#: Every state sacct can select (``-s``): without an explicit list sacct omits jobs cancelled
#: before they became eligible.
SACCT_STATES = "BF,CA,CD,DL,F,NF,OOM,PD,PR,R,RQ,RS,RV,S,TO"


@dataclass(frozen=True)
class SubmittedJob:
    """One job (or one array element) of the mix and what sacct must end up saying about it.

    Attributes:
        key: what the job is for, e.g. ``"timeout"``; unique within the mix.
        job_id: sacct's ``JobID`` of the allocation row (``"12"``, or ``"9_3"`` for an array task).
        user: submitting user.
        account: account charged.
        partition: partition it ran in.
        gpus: GPUs of the allocation (all nodes together); 0 for the CPU-only job.
        nodes: nodes of the allocation.
        states: final ``State`` of each attempt, oldest first, as sacct ``-D`` prints them
            (``"CANCELLED"`` matches ``"CANCELLED by <uid>"``).
        exit_code: sacct's ``ExitCode`` of the last attempt (``"1:0"``, ``"0:9"``, …).
        ran: whether the job was ever allocated (the pending-cancelled one never was).
    """

    key: str
    job_id: str
    user: str
    account: str
    partition: str
    gpus: int
    nodes: int
    states: tuple[str, ...]
    exit_code: str = "0:0"
    ran: bool = True

    @property
    def final_state(self) -> str:
        """State of the last attempt."""
        return self.states[-1]


@dataclass(frozen=True)
class JobMix:
    """What :func:`run_job_mix` submitted, and when (cluster clock, UTC)."""

    jobs: tuple[SubmittedJob, ...]
    submitted_at: datetime
    finished_at: datetime

    def by_key(self, key: str) -> SubmittedJob:
        """The job submitted for ``key``."""
        return next(job for job in self.jobs if job.key == key)

    def expected_final_states(self) -> dict[str, str]:
        """sacct ``JobID`` → expected ``State`` of the last attempt (prefix for CANCELLED)."""
        return {job.job_id: job.final_state for job in self.jobs}


@dataclass(frozen=True)
class ClusterRun:
    """A started cluster after the mix, with the rolled-up hour's captured outputs.

    Attributes:
        cluster: the live cluster (still running while the session lasts).
        mix: the submitted jobs.
        hour_start: start of the rolled-up hour (UTC, cluster clock); the mix ran inside it.
        hour_end: ``hour_start`` + 1 h.
        sacct_argv: the sacct command that produced ``sacct_text``.
        sacct_text: ``sacct --parsable2 --format=ALL`` for the hour: every state, every attempt
            (``-D``), job steps included, times in UTC.
        sreport: :meth:`SlurmTestCluster.sreport_utilization` for the hour (GPU-seconds).
        mix_wall_s: wall-clock seconds the mix took.
        rollup_wall_s: wall-clock seconds the rollup took.
        rss_mb: resident memory of all the cluster's processes after the mix, in MiB.
    """

    cluster: SlurmTestCluster
    mix: JobMix
    hour_start: datetime
    hour_end: datetime
    sacct_argv: tuple[str, ...]
    sacct_text: str
    sreport: dict[str, int]
    mix_wall_s: float
    rollup_wall_s: float
    rss_mb: float


def sacct_capture_args(start: datetime, end: datetime, fmt: str = "ALL") -> list[str]:
    """sacct arguments for a full, unambiguous capture of a window (run with TZ=UTC).

    Args:
        start: window start.
        end: window end.
        fmt: ``--format`` value.

    Returns:
        Arguments for ``sacct`` (without the program name).
    """
    return [
        "--allusers", "--parsable2", "--duplicates", f"--state={SACCT_STATES}",
        f"--starttime={slurm_time(start)}", f"--endtime={slurm_time(end)}", f"--format={fmt}",
    ]  # fmt: skip


def run_job_mix(cluster: SlurmTestCluster, timeout: float = 300.0) -> JobMix:
    """Submit the mix, drive its cancels and requeue, and wait until everything has ended.

    Args:
        cluster: a started cluster with the default users and accounts.
        timeout: seconds to wait for the whole mix.

    Returns:
        The submitted jobs with their expected final states.
    """
    submitted_at = cluster.now()
    jobs: list[SubmittedJob] = []

    def submit(
        key: str,
        script: str,
        *,
        user: str,
        account: str,
        gpus: int = 0,
        nodes: int = 1,
        partition: str = "gpu",
        states: tuple[str, ...] = ("COMPLETED",),
        exit_code: str = "0:0",
        ran: bool = True,
        qos: str | None = None,
        time_limit: str = "00:10:00",
        cpus_per_task: int = 1,
        extra: tuple[str, ...] = (),
    ) -> str:
        job_id = cluster.sbatch(
            script, user=user, account=account, job_name=key, partition=partition, qos=qos,
            gpus_per_node=gpus // nodes, nodes=nodes, cpus_per_task=cpus_per_task,
            time_limit=time_limit, extra=extra,
        )  # fmt: skip
        jobs.append(
            SubmittedJob(key, job_id, user, account, partition, gpus, nodes, states, exit_code, ran)
        )
        return job_id

    # Longest first: the TIMEOUT job sets the mix's length (1-minute limit, checked every 30 s).
    submit("timeout", "sleep 600", user="carol", account="team-c", gpus=1, qos="low",
           time_limit="1", states=("TIMEOUT",))  # fmt: skip
    running = submit("cancel-running", "sleep 600", user="bob", account="team-b", gpus=2,
                     states=("CANCELLED",))  # fmt: skip
    pending = submit("cancel-pending", "sleep 5", user="dave", account="team-c", gpus=1,
                     states=("CANCELLED",), ran=False,
                     extra=(f"--dependency=afterany:{running}",))  # fmt: skip
    requeue = submit("requeue", "sleep 20", user="alice", account="team-a", gpus=2,
                     states=("REQUEUED", "COMPLETED"), extra=("--requeue",))  # fmt: skip
    submit("completed", "sleep 25", user="alice", account="team-a", gpus=4,
           cpus_per_task=8)  # fmt: skip
    submit("failed-exit", "sleep 4; exit 1", user="bob", account="team-b", gpus=2,
           states=("FAILED",), exit_code="1:0")  # fmt: skip
    submit("failed-signal", "sleep 4; kill -KILL $$", user="carol", account="team-c", gpus=1,
           states=("FAILED",), exit_code="0:9")  # fmt: skip
    submit("two-node", "sleep 15; srun --ntasks=2 --ntasks-per-node=1 true", user="bob",
           account="team-b", gpus=16, nodes=2, extra=("--ntasks-per-node=1",))  # fmt: skip
    submit("cpu-only", "sleep 12", user="dave", account="team-a", cpus_per_task=4)
    submit("debug-4gpu", "sleep 10", user="carol", account="team-c", gpus=4, partition="debug")
    array_id = cluster.sbatch(
        "sleep 10", user="alice", account="team-a", job_name="array", gpus_per_node=1,
        extra=["--array=0-3%2"],
    )  # fmt: skip
    jobs += [
        SubmittedJob(f"array-{task}", f"{array_id}_{task}", "alice", "team-a", "gpu", 1, 1,
                     ("COMPLETED",))
        for task in range(4)
    ]  # fmt: skip
    # A whole-cluster job: it pends for resources until the GPU jobs above have ended, so the
    # hour has GPUs held idle for an eligible pending job (METRICS.md leaf ``held``; sreport's
    # GPU Planned stays 0: slurmdbd counts planned time for CPUs only). ``--nice`` puts it below
    # every other job: at its size-weighted priority it would otherwise be the first to start
    # (all 4 nodes, before the rest), and every other job would start in one burst on the nodes
    # it had just released, instead of the mix's own order.
    submit("whole-cluster", "sleep 5", user="dave", account="team-a", gpus=32, nodes=4,
           extra=("--ntasks-per-node=1", "--nice=5000"))  # fmt: skip

    # Cancel one job while it is pending (on its dependency) and one while it runs. Wait until
    # slurmdbd has the pending job: cancelled before that, its record gets a Start time.
    cluster.wait_for_state(pending, ["PENDING"])
    _wait_recorded(cluster, pending, "PENDING")
    cluster.run(["scancel", pending], user="dave")
    cluster.wait_for_state(running, ["RUNNING"])
    time.sleep(5)
    cluster.run(["scancel", running], user="bob")

    # Requeue a running job; it would wait ~120 s before it may start again, so hurry it.
    cluster.wait_for_state(requeue, ["RUNNING"])
    time.sleep(5)
    cluster.run(["scontrol", "requeue", requeue])
    cluster.wait_for_state(requeue, ["PENDING"], timeout=30)
    # slurmd refuses a launch credential created in the same second as the requeue that revoked
    # the job's old one ("Killing non-startable batch JobId=…: Job credential revoked", the second
    # attempt FAILED with exit 1; seen on an idle machine): start it in a later second.
    time.sleep(1.1)
    cluster.run(["scontrol", "update", f"JobId={requeue}", "StartTime=now"])

    cluster.wait_all_done(timeout=timeout)
    return JobMix(jobs=tuple(jobs), submitted_at=submitted_at, finished_at=cluster.now())


def _wait_recorded(cluster: SlurmTestCluster, job_id: str, state: str, timeout: float = 30) -> None:
    """Wait until sacct (slurmdbd) shows ``job_id`` in ``state``."""
    deadline = time.monotonic() + timeout
    argv = ["--allusers", "--noheader", "--parsable2", "-X", "-j", job_id, "--format=State"]
    while cluster.sacct_text(argv).strip() != state:
        if time.monotonic() > deadline:
            raise TimeoutError(f"sacct does not show job {job_id} as {state} after {timeout} s")
        time.sleep(0.5)


def capture_run(cluster: SlurmTestCluster, timeout: float = 300.0) -> ClusterRun:
    """Run the mix, roll the hour up, and capture sacct and sreport for that hour.

    Args:
        cluster: a freshly started cluster (its :attr:`~SlurmTestCluster.hour_start` just began).
        timeout: seconds allowed for the mix.

    Returns:
        The cluster with the mix's jobs and the hour's captures.
    """
    began = time.monotonic()
    mix = run_job_mix(cluster, timeout=timeout)
    mix_done = time.monotonic()
    rss_mb = cluster.memory_rss_mb()
    hour_start = cluster.rollup()
    rollup_done = time.monotonic()
    if hour_start != cluster.hour_start:
        raise RuntimeError(
            f"the mix ran past its hour ({cluster.hour_start:%H:%M} → {hour_start:%H:%M})"
        )
    hour_end = hour_start + timedelta(hours=1)
    args = sacct_capture_args(hour_start, hour_end)
    sacct_text = cluster.sacct_text(args)
    sreport = cluster.sreport_utilization(hour_start, hour_end)
    # Kept beside the logs: what to look at when a test fails (GOODPUT_KEEP_SLURM_DIR=1).
    captures = cluster.base_dir / "captures"
    captures.mkdir(exist_ok=True)
    (captures / "sacct_all.psv").write_text(sacct_text)
    (captures / "sacct_argv.txt").write_text(" ".join(["sacct", *args]) + "\n")
    (captures / "sreport_gpu_seconds.json").write_text(json.dumps(sreport, indent=2) + "\n")
    return ClusterRun(
        cluster=cluster,
        mix=mix,
        hour_start=hour_start,
        hour_end=hour_end,
        sacct_argv=("sacct", *args),
        sacct_text=sacct_text,
        sreport=sreport,
        mix_wall_s=mix_done - began,
        rollup_wall_s=rollup_done - mix_done,
        rss_mb=rss_mb,
    )
