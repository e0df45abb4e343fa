"""A real, throwaway Slurm 22.05 cluster with accounting, started on this one machine.

``SlurmTestCluster`` writes its own configuration under a folder and starts munged, MariaDB,
slurmdbd, slurmctld and one ``slurmd -N gpu-00X`` per node by hand (no systemd, nothing in /etc
changed), following ``/work/shared/notes/slurm-in-ci.md``:

* 4 nodes ``gpu-[001-004]`` × 8 GPUs backed by fake ``mknod`` device files, 32 CPUs each
  (``SlurmdParameters=config_overrides``), partitions ``gpu`` (default) and ``debug``;
* ``TopologyPlugin=topology/tree``: leaf switches ``leaf1`` (gpu-001, gpu-002) and ``leaf2``
  (gpu-003, gpu-004) under ``spine`` (:data:`LEAF_SWITCHES`; ``topology.conf`` beside
  ``slurm.conf``), two "domains" of 16 GPUs for gang placement;
* accounts ``team-a/b/c`` (fairshare 50/30/20) with fictional users, QOS ``normal/high/low``,
  ``AccountingStorageTRES=gres/gpu``; every daemon on loopback and on ports picked free at start.

Two tricks make the numbers testable:

* **Fictional users** (``alice``, ``bob``, …) exist only in a private passwd/group file that
  every Slurm process reads through ``libnss_wrapper`` (``LD_PRELOAD``); jobs really run as
  their uids. Nothing is added to ``/etc/passwd``.
* **A clock aligned to an hour.** slurmdbd rolls up complete hours only, and sreport's
  *Reported* counts from the cluster's registration. All Slurm daemons and client commands run
  under ``libfaketime`` with one fixed offset chosen so that the cluster registers a few seconds
  before a whole hour (:attr:`SlurmTestCluster.hour_start`); ``start()`` returns once that hour
  has begun. :meth:`SlurmTestCluster.rollup` then restarts slurmdbd once with its clock one hour
  further ahead, so that it rolls up that hour. Client commands must therefore use
  :meth:`SlurmTestCluster.env` (or :meth:`SlurmTestCluster.run`), and "now" in a test is
  :meth:`SlurmTestCluster.now`, not the host clock.

Example::

    with SlurmTestCluster(Path(tempfile.mkdtemp())) as cluster:
        job_id = cluster.sbatch("sleep 5", user="alice", gpus_per_node=2)
        cluster.wait_all_done(timeout=60)
        print(cluster.sacct_text(["--allusers", "--parsable2", "-j", job_id]))
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import string
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType

__all__ = [
    "CLUSTER_NAME",
    "DEFAULT_ACCOUNTS",
    "DEFAULT_USERS",
    "GPUS_PER_NODE",
    "LEAF_SWITCHES",
    "NODE_NAMES",
    "REQUIRED_BINARIES",
    "SPINE_SWITCH",
    "ClusterUser",
    "SlurmCommandError",
    "SlurmTestCluster",
    "missing_requirements",
    "slurm_time",
]

CLUSTER_NAME = "testgpu"
NODE_NAMES: tuple[str, ...] = ("gpu-001", "gpu-002", "gpu-003", "gpu-004")
NODE_RANGE = "gpu-[001-004]"
DEBUG_NODE_RANGE = "gpu-[001-002]"
#: ``topology/tree``: leaf switch → its nodes (each leaf a "domain" of 2 nodes, 16 GPUs), both
#: under the spine switch :data:`SPINE_SWITCH`.
LEAF_SWITCHES: Mapping[str, tuple[str, ...]] = {
    "leaf1": ("gpu-001", "gpu-002"),
    "leaf2": ("gpu-003", "gpu-004"),
}
SPINE_SWITCH = "spine"
GPUS_PER_NODE = 8
CPUS_PER_NODE = 32

#: Account → fairshare.
DEFAULT_ACCOUNTS: Mapping[str, int] = {"team-a": 50, "team-b": 30, "team-c": 20}

#: Programs the cluster needs, looked up on PATH plus the sbin folders.
REQUIRED_BINARIES: tuple[str, ...] = (
    "munged", "mariadbd", "mariadb-install-db", "mariadb", "slurmdbd", "slurmctld", "slurmd",
    "sacctmgr", "sbatch", "scancel", "scontrol", "squeue", "sinfo", "sacct", "sreport", "sdiag",
)  # fmt: skip

_TEMPLATES = Path(__file__).parent / "templates"
_SBIN_PATH = "/usr/local/sbin:/usr/sbin:/sbin"
_LIB_GLOBS: Mapping[str, str] = {
    # The MT build serialises its own state; every Slurm daemon is multi-threaded.
    "libfaketime": "/usr/lib/*/faketime/libfaketimeMT.so.1",
    "libnss_wrapper": "/usr/lib/*/libnss_wrapper.so",
}
#: Seconds between fixing the fake clock and the start of :attr:`hour_start`. Starting slurmdbd,
#: slurmctld and the 4 slurmd until the nodes are idle took ~11 s on a 2-core machine; the rest
#: is margin (``start()`` waits it out).
_DEFAULT_HOUR_LEAD_S = 30
#: Free disk space below which :meth:`SlurmTestCluster.start` refuses to start (bytes).
_MIN_FREE_BYTES = 2 * 2**30
_ENV_MARKER = "GOODPUT_SLURM_TEST_CLUSTER"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass(frozen=True)
class ClusterUser:
    """A fictional Unix user known only to the cluster's processes (via nss_wrapper).

    Attributes:
        name: login name, also the Slurm user name.
        uid: numeric uid (and gid of the user's own group); high, to stay clear of real users.
        accounts: Slurm accounts the user may charge; the first is the default account.
    """

    name: str
    uid: int
    accounts: tuple[str, ...]


DEFAULT_USERS: tuple[ClusterUser, ...] = (
    ClusterUser("alice", 51001, ("team-a",)),
    ClusterUser("bob", 51002, ("team-b",)),
    ClusterUser("carol", 51003, ("team-c",)),
    ClusterUser("dave", 51004, ("team-c", "team-a")),
)


class SlurmCommandError(subprocess.CalledProcessError):
    """A cluster command exited non-zero; the message carries its stdout and stderr."""

    def __str__(self) -> str:
        return (
            f"{super().__str__()}\n--- stdout ---\n{self.stdout or ''}"
            f"\n--- stderr ---\n{self.stderr or ''}"
        )


def _find_binary(name: str) -> str | None:
    return shutil.which(name, path=f"{os.environ.get('PATH', '')}:{_SBIN_PATH}")


def _remove_stale_faketime_ipc(shm_dir: Path = Path("/dev/shm")) -> int:
    """Remove libfaketime's per-process semaphores and shared memory whose process is gone.

    libfaketime names them after the creating pid (``sem.faketime_sem_<pid>``,
    ``faketime_shm_<pid>``) and removes them at a normal exit; a killed daemon or job leaves
    them behind, and a later process given the same pid can then fail to start. Files of live
    pids (another cluster's, another test run's) are kept.

    Returns:
        How many files were removed.
    """
    removed = 0
    for path in shm_dir.glob("*faketime_*_*"):
        pid = path.name.rsplit("_", 1)[-1]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    return removed


def _find_library(key: str) -> Path | None:
    pattern = _LIB_GLOBS[key]
    matches = sorted(Path("/").glob(pattern.lstrip("/")))
    return matches[0] if matches else None


def missing_requirements() -> list[str]:
    """Names of the programs and libraries the cluster needs that this machine lacks.

    Returns:
        An empty list when everything that ``scripts/install-system-deps.sh`` installs is there.
    """
    missing = [name for name in REQUIRED_BINARIES if _find_binary(name) is None]
    missing += [key for key in _LIB_GLOBS if _find_library(key) is None]
    return missing


def slurm_time(moment: datetime) -> str:
    """Format a moment as Slurm expects on the command line, in UTC (clients run with TZ=UTC).

    Args:
        moment: an aware datetime.

    Returns:
        e.g. ``"2026-11-30T02:00:00"``.
    """
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now (all sockets held open together, so no duplicates)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
        return ports


class _Daemon:
    """One daemon process started in the foreground, its output going to a log file."""

    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str], log: Path) -> None:
        self.name = name
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                list(argv),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # keep Ctrl-C of the test run away from the daemons
                preexec_fn=_die_with_parent,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds."""
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the test process dies, even by SIGKILL (no orphans)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"({path} unreadable)"
    return "\n".join(text.splitlines()[-lines:])


class SlurmTestCluster:
    """A 4-node, 32-GPU Slurm 22.05 cluster with slurmdbd accounting, for tests.

    Use it as a context manager: entering starts every daemon and waits until the nodes are
    idle and :attr:`hour_start` has begun; leaving cancels what is left, stops every daemon and
    kills any process still carrying this cluster's marker, so that nothing outlives it.

    Args:
        base_dir: an existing, empty folder for configuration, state, database and logs. It and
            all its parents must be traversable by other users (``o+x``), because jobs run as
            the fictional users (pytest's ``tmp_path`` is not: it lives under a 0700 folder;
            ``tempfile.mkdtemp()`` is, once chmod-ed 0755, which this class does).
        users: the fictional users and their accounts.
        accounts: account name → fairshare.
        hour_lead_s: seconds between the cluster's registration and :attr:`hour_start`.
    """

    def __init__(
        self,
        base_dir: Path,
        *,
        users: Sequence[ClusterUser] = DEFAULT_USERS,
        accounts: Mapping[str, int] = DEFAULT_ACCOUNTS,
        hour_lead_s: int = _DEFAULT_HOUR_LEAD_S,
    ) -> None:
        self.base_dir = base_dir.resolve()
        self.users: dict[str, ClusterUser] = {user.name: user for user in users}
        self.accounts = dict(accounts)
        self.hour_lead_s = hour_lead_s
        self.etc_dir = self.base_dir / "etc"
        self.state_dir = self.base_dir / "state"
        self.run_dir = self.base_dir / "run"
        self.log_dir = self.base_dir / "log"
        self.dev_dir = self.base_dir / "dev"
        self.db_dir = self.base_dir / "mariadb"
        #: every job's stdout and stderr (``job-<JobIDRaw>.out``), kept for failure reports
        self.job_out_dir = self.base_dir / "jobout"
        self.munge_dir = self.base_dir / "munge"
        self.munge_socket = self.munge_dir / "munge.socket"
        self.mariadb_socket = self.db_dir / "mysqld.sock"
        self.slurm_conf = self.etc_dir / "slurm.conf"
        self.marker = uuid.uuid4().hex
        self.hostname = socket.gethostname().split(".")[0]
        self._db_password = secrets.token_hex(12)
        self._ports: dict[str, int] = {}
        self._daemons: dict[str, _Daemon] = {}
        self._libs: dict[str, Path] = {}
        #: fake clock = host clock + this many seconds (Slurm daemons and clients).
        self.clock_offset_s = 0
        #: extra seconds slurmdbd's clock runs ahead of the others after :meth:`rollup`.
        self._dbd_extra_s = 0
        self._hour_start: datetime | None = None
        #: wall-clock seconds ``start()`` took, and of those the wait for the hour to begin.
        self.startup_s: float | None = None
        self.hour_margin_s: float | None = None

    # ------------------------------------------------------------------ public API

    @property
    def hour_start(self) -> datetime:
        """Start (UTC, on the cluster's clock) of the first whole hour the cluster was up for."""
        if self._hour_start is None:
            raise RuntimeError("the cluster is not started")
        return self._hour_start

    def now(self) -> datetime:
        """The cluster's clock (host clock + :attr:`clock_offset_s`), UTC."""
        return datetime.now(UTC) + timedelta(seconds=self.clock_offset_s)

    def env(self) -> dict[str, str]:
        """Environment for Slurm client commands: ``SLURM_CONF``, TZ, the fake clock and users.

        Returns:
            ``os.environ`` (less any inherited ``SLURM_*``) plus this cluster's variables; pass it
            as ``env=`` to ``subprocess`` when running Slurm clients yourself.
        """
        env = {key: value for key, value in os.environ.items() if not key.startswith("SLURM_")}
        env.update(self._slurm_env(self.clock_offset_s))
        return env

    def run(
        self,
        argv: Sequence[str],
        *,
        user: str | None = None,
        check: bool = True,
        input_text: str | None = None,
        timeout: float = 60.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against this cluster.

        Args:
            argv: the command as a list, e.g. ``["squeue", "-h"]`` (never a shell string).
            user: run as this fictional user instead of root.
            check: raise :class:`SlurmCommandError` on a non-zero exit.
            input_text: text for the command's stdin.
            timeout: seconds before the command is killed.

        Returns:
            The finished process, stdout and stderr as text.
        """
        # as a fictional user: its uid and own group only, in a folder every user may enter
        uid = None if user in (None, "root") else self.users[user].uid
        proc = subprocess.run(
            list(argv),
            env=self.env(),
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            user=uid,
            group=uid,
            extra_groups=None if uid is None else [],
            cwd=None if uid is None else "/tmp",
        )
        if check and proc.returncode != 0:
            raise SlurmCommandError(proc.returncode, list(argv), proc.stdout, proc.stderr)
        return proc

    def sbatch(
        self,
        script: str,
        *,
        user: str = "alice",
        account: str | None = None,
        job_name: str = "job",
        partition: str | None = None,
        qos: str | None = None,
        gpus_per_node: int = 0,
        nodes: int = 1,
        cpus_per_task: int = 1,
        time_limit: str = "00:10:00",
        extra: Sequence[str] = (),
    ) -> str:
        """Submit a batch job whose body is ``script`` (bash), as ``user``.

        Output (stdout and stderr) goes to :meth:`job_output`'s file, the working folder is /tmp.

        Args:
            script: the job's shell commands (a ``#!/bin/bash`` line is prepended).
            user: fictional user (or ``"root"``) who submits and runs the job.
            account: account to charge; the user's default account when None.
            job_name: ``--job-name``.
            partition: ``--partition``; the default partition (``gpu``) when None.
            qos: ``--qos``; the association's default (``normal``) when None.
            gpus_per_node: GPUs per node (``--gres=gpu:N``); 0 for none.
            nodes: ``--nodes``.
            cpus_per_task: ``--cpus-per-task``.
            time_limit: ``--time``.
            extra: further sbatch options, e.g. ``["--array=0-3%2"]``.

        Returns:
            The job id as sbatch prints it with ``--parsable`` (for an array: the array's id).
        """
        argv = [
            "sbatch", "--parsable", f"--job-name={job_name}", f"--nodes={nodes}",
            f"--cpus-per-task={cpus_per_task}", f"--time={time_limit}",
            f"--output={self.job_out_dir}/job-%j.out", "--chdir=/tmp",
            # The job's own processes run without libfaketime: they would inherit sbatch's
            # FAKETIME_SHARED, naming a semaphore sbatch removed when it exited, and
            # libfaketime 0.9.10 then sometimes exits 1 before the script runs ("sem_open
            # failed and recreation attempts failed"), a job FAILED at launch. Slurm's
            # records keep the faked clock: slurmd and slurmstepd still run under it.
            f"--export=ALL,LD_PRELOAD={self._libs['libnss_wrapper']}",
        ]  # fmt: skip
        if account is not None:
            argv.append(f"--account={account}")
        if partition is not None:
            argv.append(f"--partition={partition}")
        if qos is not None:
            argv.append(f"--qos={qos}")
        if gpus_per_node:
            argv.append(f"--gres=gpu:{gpus_per_node}")
        argv += list(extra)
        proc = self.run(argv, user=user, input_text=f"#!/bin/bash\n{script}\n")
        return proc.stdout.strip().split(";")[0]

    def job_output(self, raw_job_id: str) -> str:
        """What a job (or one array task, by its own ``JobIDRaw``) wrote to stdout and stderr.

        Returns:
            The text, or ``""`` when the job wrote nothing or never started.
        """
        path = self.job_out_dir / f"job-{raw_job_id}.out"
        return path.read_text(errors="replace") if path.exists() else ""

    def node_log_lines(self, raw_job_id: str) -> list[str]:
        """The lines of slurmctld's and every slurmd's log that name this job (``JobId=N``,
        ``JobId=A_T(N)``, ``[N.batch]``, ``job N``, ``StepId=N.``), for a failed test's message."""
        pattern = re.compile(
            rf"(JobId={raw_job_id}\b|\({raw_job_id}\)|\[{raw_job_id}\.|job {raw_job_id}\b"
            rf"|StepId={raw_job_id}\.)"
        )
        lines: list[str] = []
        for log in sorted(self.log_dir.glob("*.log")):
            with contextlib.suppress(OSError):
                for line in log.read_text(errors="replace").splitlines():
                    if pattern.search(line):
                        lines.append(f"{log.name}: {line}")
        return lines

    def job_state(self, job_id: str) -> str:
        """The job's current state as squeue prints it (``PENDING``, ``RUNNING``, …)."""
        out = self.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"]).stdout
        states = out.split()
        return states[0] if states else ""

    def wait_for_state(self, job_id: str, states: Sequence[str], timeout: float = 60.0) -> str:
        """Wait until ``job_id`` is in one of ``states``; return the state seen."""
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            seen = self.job_state(job_id)
            if seen in states:
                return seen
            time.sleep(0.5)
        raise TimeoutError(f"job {job_id} still {seen!r} after {timeout:.0f} s, wanted {states}")

    def wait_all_done(self, timeout: float = 300.0) -> None:
        """Wait until no job is pending, running or completing, and slurmdbd has every record.

        Args:
            timeout: seconds to wait in all.
        """
        deadline = time.monotonic() + timeout
        while True:
            queue = self.run(["squeue", "-h", "-o", "%i %T"]).stdout.strip()
            if not queue:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"jobs still queued after {timeout:.0f} s:\n{queue}")
            time.sleep(1.0)
        while self._dbd_agent_queue() > 0:
            if time.monotonic() > deadline:
                raise TimeoutError("slurmctld still has records queued for slurmdbd")
            time.sleep(0.5)

    def sacct_text(self, args: Sequence[str]) -> str:
        """Run ``sacct`` with ``args`` (TZ=UTC) and return its stdout."""
        return self.run(["sacct", *args]).stdout

    def sreport_utilization(self, start: datetime, end: datetime) -> dict[str, int]:
        """GPU-seconds of ``sreport cluster utilization -T gres/gpu -t seconds`` for a window.

        Args:
            start: window start (aware datetime); sreport's window is ``[start, end)``.
            end: window end.

        Returns:
            Keys ``Allocated``, ``Down``, ``PlannedDown``, ``Idle``, ``Planned``, ``Reported``;
            all 0 when the window has not been rolled up.
        """
        argv = [
            "sreport", "-P", "-n", "cluster", "utilization", "-T", "gres/gpu", "-t", "seconds",
            f"start={slurm_time(start)}", f"end={slurm_time(end)}",
        ]  # fmt: skip
        keys = ("Allocated", "Down", "PlannedDown", "Idle", "Planned", "Reported")
        for line in self.run(argv).stdout.splitlines():
            fields = line.split("|")
            if len(fields) == 8 and fields[0] == CLUSTER_NAME and fields[1] == "gres/gpu":
                return {key: int(value) for key, value in zip(keys, fields[2:], strict=True)}
        return dict.fromkeys(keys, 0)

    def rollup(self, timeout: float = 90.0) -> datetime:
        """Make slurmdbd roll up the current hour now, instead of after it has ended.

        slurmdbd rolls up complete hours only, at start and hourly. This restarts it once with
        its clock one hour further ahead than the rest of the cluster, so that the hour that
        contains :meth:`now` looks complete to it, and waits until sreport shows that hour.
        Call it once, after the jobs have ended (it waits for them): usage arriving later is
        not rolled up again, and slurmdbd's clock stays one hour ahead from then on.

        Args:
            timeout: seconds to wait for the rolled-up hour to appear.

        Returns:
            The start of the rolled-up hour (UTC, cluster clock).
        """
        if self._dbd_extra_s:
            raise RuntimeError("rollup() was already called on this cluster")
        self.wait_all_done(timeout=timeout)
        hour = self.now().replace(minute=0, second=0, microsecond=0)
        self._dbd_extra_s += 3600
        self._daemons.pop("slurmdbd").stop()
        self._start_slurmdbd()
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(SlurmCommandError):
                if self.sreport_utilization(hour, hour + timedelta(hours=1))["Reported"] > 0:
                    break
            if time.monotonic() > deadline:
                log = _tail(self.log_dir / "slurmdbd.log")
                raise TimeoutError(f"slurmdbd did not roll up {hour:%H:%M}:\n{log}")
            time.sleep(1.0)
        return hour

    def processes(self) -> list[int]:
        """Pids of every live process carrying this cluster's marker (daemons, steps, jobs)."""
        needle = f"{_ENV_MARKER}={self.marker}".encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if needle in (entry / "environ").read_bytes():
                    pids.append(int(entry.name))
        return pids

    def memory_rss_mb(self) -> float:
        """Resident memory of all this cluster's processes together, in MiB."""
        total_kb = 0
        for pid in self.processes():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total_kb += int(line.split()[1])
        return total_kb / 1024

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> SlurmTestCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Write the configuration, start every daemon, set up accounts; see the class doc."""
        began = time.monotonic()
        missing = missing_requirements()
        if missing:
            raise RuntimeError(
                f"missing {', '.join(missing)}: run scripts/install-system-deps.sh as root"
            )
        if os.geteuid() != 0:
            raise RuntimeError("SlurmTestCluster must run as root (daemons run jobs as other uids)")
        # slurmd writes each job's script and step files under the state folder and MariaDB its
        # tables: on a nearly full disk jobs fail at launch, which reads like a Slurm bug.
        free = shutil.disk_usage(self.base_dir).free
        if free < _MIN_FREE_BYTES:
            raise RuntimeError(
                f"only {free / 2**30:.1f} GiB free under {self.base_dir}; the test cluster needs "
                f"{_MIN_FREE_BYTES / 2**30:.0f} GiB (slurmd spool, MariaDB, job output)"
            )
        self._libs = {key: p for key in _LIB_GLOBS if (p := _find_library(key)) is not None}
        try:
            _remove_stale_faketime_ipc()
            self._prepare_files()
            self._start_munged()
            self._start_mariadb()
            # Fix the fake clock: the cluster will register ~hour_lead_s before a whole hour.
            host_now = int(time.time())
            self.clock_offset_s = -(host_now % 3600) - self.hour_lead_s
            self._hour_start = datetime.fromtimestamp(host_now - host_now % 3600, tz=UTC)
            self._start_slurmdbd()
            self._setup_accounting()
            self._start_slurmctld()
            for node in NODE_NAMES:
                self._start_slurmd(node)
            self._wait_nodes_idle(timeout=60)
            self._setup_qos_limits()
            self._wait_hour_start()
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - began

    def stop(self) -> None:
        """Cancel remaining jobs, stop the daemons (newest first), kill any straggler, and
        remove the libfaketime semaphores and shared memory that killed processes left."""
        if "slurmctld" in self._daemons and self._daemons["slurmctld"].alive():
            with contextlib.suppress(Exception):
                self._cancel_everything(timeout=20)
        for name in reversed(list(self._daemons)):
            self._daemons[name].stop()
        self._daemons.clear()
        for _ in range(20):
            leftovers = self.processes()
            if not leftovers:
                break
            for pid in leftovers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.25)
        _remove_stale_faketime_ipc()

    # ------------------------------------------------------------------ internals

    def _slurm_env(self, offset_s: int) -> dict[str, str]:
        """Variables shared by every Slurm daemon and client of this cluster."""
        return {
            "SLURM_CONF": str(self.slurm_conf),
            "TZ": "UTC",
            "LD_PRELOAD": f"{self._libs['libfaketime']} {self._libs['libnss_wrapper']}",
            # relative offset in seconds; the monotonic clock stays real (timeouts, sleeps)
            "FAKETIME": f"{offset_s:+d}",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "NSS_WRAPPER_PASSWD": str(self.etc_dir / "passwd"),
            "NSS_WRAPPER_GROUP": str(self.etc_dir / "group"),
            _ENV_MARKER: self.marker,
        }

    def _daemon_env(self, *, faked: bool, offset_s: int | None = None) -> dict[str, str]:
        env = {
            "PATH": f"{os.environ.get('PATH', '/usr/bin:/bin')}:{_SBIN_PATH}",
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            _ENV_MARKER: self.marker,
        }
        if faked:
            env.update(self._slurm_env(self.clock_offset_s if offset_s is None else offset_s))
        return env

    def _prepare_files(self) -> None:
        base = self.base_dir
        if not base.is_dir():
            raise ValueError(f"{base} is not a folder")
        base.chmod(0o755)
        for parent in base.parents:
            if not parent.stat().st_mode & stat.S_IXOTH:
                raise ValueError(
                    f"{parent} is not traversable by other users; jobs run as fictional users "
                    f"and need to reach {base} (use tempfile.mkdtemp(), not pytest's tmp_path)"
                )
        for folder in (self.etc_dir, self.state_dir, self.run_dir, self.log_dir, self.dev_dir):
            folder.mkdir(mode=0o755)
        # jobs run as the fictional users and write their output here (sticky, like /tmp)
        self.job_out_dir.mkdir()
        self.job_out_dir.chmod(0o1777)
        for node in NODE_NAMES:
            (self.state_dir / "slurmd" / node).mkdir(parents=True, mode=0o755)
        (self.state_dir / "ctld").mkdir(mode=0o700)
        for index in range(GPUS_PER_NODE):
            os.mknod(self.dev_dir / f"nvidia{index}", 0o666 | stat.S_IFCHR, os.makedev(195, index))
        self._ports = dict(
            zip(
                ("mariadb", "slurmdbd", "slurmctld", "slurmd", *NODE_NAMES),
                _free_ports(4 + len(NODE_NAMES)),
                strict=True,
            )
        )
        passwd = ["root:x:0:0:root:/root:/bin/bash"]
        group = ["root:x:0:"]
        for user in self.users.values():
            passwd.append(f"{user.name}:x:{user.uid}:{user.uid}:{user.name}:/tmp:/bin/bash")
            group.append(f"{user.name}:x:{user.uid}:")
        (self.etc_dir / "passwd").write_text("\n".join(passwd) + "\n")
        (self.etc_dir / "group").write_text("\n".join(group) + "\n")
        (self.etc_dir / "plugstack.conf").write_text("")
        node_lines = [
            f"NodeName={node} NodeHostname={node} NodeAddr=127.0.0.1 Port={self._ports[node]} "
            f"CPUs={CPUS_PER_NODE} Boards=1 SocketsPerBoard=2 CoresPerSocket={CPUS_PER_NODE // 2} "
            f"ThreadsPerCore=1 RealMemory=512000 Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN"
            for node in NODE_NAMES
        ]
        values = {
            "cluster_name": CLUSTER_NAME,
            "hostname": self.hostname,
            "slurmctld_port": self._ports["slurmctld"],
            "slurmd_port": self._ports["slurmd"],
            "slurmdbd_port": self._ports["slurmdbd"],
            "mariadb_port": self._ports["mariadb"],
            "munge_socket": self.munge_socket,
            "state_dir": self.state_dir,
            "run_dir": self.run_dir,
            "log_dir": self.log_dir,
            "etc_dir": self.etc_dir,
            "dev_dir": self.dev_dir,
            "node_lines": "\n".join(node_lines),
            "node_range": NODE_RANGE,
            "debug_node_range": DEBUG_NODE_RANGE,
            "last_gpu": GPUS_PER_NODE - 1,
            "db_user": "slurm",
            "db_password": self._db_password,
            "db_name": "slurm_acct_db",
            "leaf1": "leaf1",
            "leaf1_nodes": ",".join(LEAF_SWITCHES["leaf1"]),
            "leaf2": "leaf2",
            "leaf2_nodes": ",".join(LEAF_SWITCHES["leaf2"]),
            "spine": SPINE_SWITCH,
        }
        for name in ("slurm.conf", "gres.conf", "slurmdbd.conf", "topology.conf"):
            template = string.Template((_TEMPLATES / f"{name}.tmpl").read_text())
            target = self.etc_dir / name
            target.write_text(template.substitute(values))
            target.chmod(0o600 if name == "slurmdbd.conf" else 0o644)

    def _start(self, name: str, argv: Sequence[str], env: Mapping[str, str]) -> _Daemon:
        binary = _find_binary(argv[0])
        if binary is None:
            raise RuntimeError(f"{argv[0]} not found")
        daemon = _Daemon(name, [binary, *argv[1:]], env, self.log_dir / f"{name}.out")
        self._daemons[name] = daemon
        return daemon

    def _wait(
        self, what: str, ready: Callable[[], object], timeout: float, logs: Sequence[str]
    ) -> None:
        """Poll ``ready()`` until true; on timeout or a dead daemon, raise with log tails."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):
                if ready():
                    return
            dead = [d.name for d in self._daemons.values() if not d.alive()]
            if dead or time.monotonic() > deadline:
                reason = f"exited: {', '.join(dead)}" if dead else f"timed out ({timeout:.0f} s)"
                tails = "\n".join(f"--- {log} ---\n{_tail(self.log_dir / log)}" for log in logs)
                raise RuntimeError(f"waiting for {what}: {reason}\n{tails}")
            time.sleep(0.25)

    def _start_munged(self) -> None:
        self.munge_dir.mkdir(mode=0o755)
        key = self.munge_dir / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        self._start(
            "munged",
            [
                "munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                f"--key-file={key}", f"--pid-file={self.run_dir / 'munged.pid'}",
                f"--log-file={self.log_dir / 'munged.log'}",
                f"--seed-file={self.munge_dir / 'munged.seed'}", "--num-threads=4",
            ],
            self._daemon_env(faked=False),
        )  # fmt: skip
        self._wait("munged", self.munge_socket.exists, 20, ["munged.out", "munged.log"])

    def _mariadb(self, sql: str) -> None:
        subprocess.run(
            [
                _find_binary("mariadb") or "mariadb", "--no-defaults",
                f"--socket={self.mariadb_socket}", "--user=root", "--execute", sql,
            ],
            check=True, capture_output=True, text=True, timeout=30,
            env=self._daemon_env(faked=False),
        )  # fmt: skip

    def _start_mariadb(self) -> None:
        self.db_dir.mkdir(mode=0o755)
        datadir = self.db_dir / "data"
        env = self._daemon_env(faked=False)
        with (self.log_dir / "mariadb-install-db.out").open("wb") as out:
            subprocess.run(
                [
                    _find_binary("mariadb-install-db") or "mariadb-install-db", "--no-defaults",
                    f"--datadir={datadir}", "--user=root", "--skip-test-db",
                    "--auth-root-authentication-method=socket",
                ],
                check=True, stdout=out, stderr=subprocess.STDOUT, timeout=120, env=env,
            )  # fmt: skip
        self._start(
            "mariadbd",
            [
                "mariadbd", "--no-defaults", f"--datadir={datadir}",
                f"--socket={self.mariadb_socket}", f"--port={self._ports['mariadb']}",
                "--bind-address=127.0.0.1", "--user=root", "--skip-name-resolve",
                f"--pid-file={self.run_dir / 'mariadbd.pid'}",
                f"--log-error={self.log_dir / 'mariadbd.log'}",
                # small and quick: a test database of a few hundred rows
                "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M",
                "--innodb-flush-log-at-trx-commit=0", "--performance-schema=OFF",
                # what slurmdbd checks at start ("Database settings not recommended values")
                "--innodb-lock-wait-timeout=900", "--max-connections=50",
            ],
            env,
        )  # fmt: skip

        def ready() -> bool:
            self._mariadb("SELECT 1")
            return True

        self._wait("MariaDB", ready, 60, ["mariadbd.log"])
        password = self._db_password
        self._mariadb(
            f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}';"
            f"CREATE USER 'slurm'@'localhost' IDENTIFIED BY '{password}';"
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
        )

    def _start_slurmdbd(self) -> None:
        env = self._daemon_env(faked=True, offset_s=self.clock_offset_s + self._dbd_extra_s)
        self._start("slurmdbd", ["slurmdbd", "-D"], env)
        self._wait_dbd_ready(60)

    def _wait_dbd_ready(self, timeout: float) -> None:
        def ready() -> bool:
            proc = self.run(["sacctmgr", "-n", "-P", "list", "cluster", "format=Cluster"])
            return proc.returncode == 0

        self._wait("slurmdbd", ready, timeout, ["slurmdbd.out", "slurmdbd.log"])

    def _sacctmgr(self, *args: str) -> None:
        self.run(["sacctmgr", "-i", *args])

    def _setup_accounting(self) -> None:
        self._sacctmgr("add", "cluster", CLUSTER_NAME)
        self._sacctmgr("add", "qos", "high", "Priority=100")
        self._sacctmgr("add", "qos", "low", "Priority=0")
        self._sacctmgr("modify", "qos", "normal", "set", "Priority=10")
        for account, share in self.accounts.items():
            self._sacctmgr(
                "add", "account", account, f"Cluster={CLUSTER_NAME}", f"Fairshare={share}",
                f"Description={account}", "Organization=goodput",
            )  # fmt: skip
        # set on the accounts before the users exist, so that their associations inherit it
        self._sacctmgr(
            "modify", "account", "where", f"Cluster={CLUSTER_NAME}",
            "set", "QOS=normal,high,low", "DefaultQOS=normal",
        )  # fmt: skip
        for user in self.users.values():
            self._sacctmgr(
                "add", "user", user.name, f"Cluster={CLUSTER_NAME}",
                f"Account={','.join(user.accounts)}", f"DefaultAccount={user.accounts[0]}",
            )  # fmt: skip
        # root may submit too (charged to team-a), as in the lab run
        self._sacctmgr("add", "user", "root", f"Cluster={CLUSTER_NAME}", "Account=team-a")

    def _setup_qos_limits(self) -> None:
        # only possible once slurmctld registered gres/gpu as a TRES
        self._sacctmgr("modify", "qos", "high", "set", "GrpTRES=gres/gpu=24")
        self._sacctmgr("modify", "qos", "low", "set", "MaxTRESPerUser=gres/gpu=8")

    def _start_slurmctld(self) -> None:
        self._start("slurmctld", ["slurmctld", "-D"], self._daemon_env(faked=True))

        def ready() -> bool:
            return self.run(["scontrol", "ping"], check=False).stdout.count("UP") > 0

        self._wait("slurmctld", ready, 60, ["slurmctld.out", "slurmctld.log"])

    def _start_slurmd(self, node: str) -> None:
        self._start(f"slurmd-{node}", ["slurmd", "-D", "-N", node], self._daemon_env(faked=True))

    def _wait_nodes_idle(self, timeout: float) -> None:
        def ready() -> bool:
            out = self.run(["sinfo", "-h", "-N", "-p", "gpu", "-o", "%N %T"]).stdout.split("\n")
            states = dict(line.split() for line in out if line.strip())
            return sorted(states) == sorted(NODE_NAMES) and set(states.values()) == {"idle"}

        logs = ["slurmctld.log", *(f"slurmd-{node}.log" for node in NODE_NAMES)]
        self._wait("nodes idle", ready, timeout, logs)

    def _wait_hour_start(self) -> None:
        registered = self.now()
        if registered >= self.hour_start:
            raise RuntimeError(
                f"startup took longer than hour_lead_s={self.hour_lead_s}: the cluster was up "
                f"only at {registered:%H:%M:%S}, after the hour began; raise hour_lead_s"
            )
        self.hour_margin_s = (self.hour_start - registered).total_seconds()
        time.sleep(self.hour_margin_s + 1.0)

    def _dbd_agent_queue(self) -> int:
        for line in self.run(["sdiag"]).stdout.splitlines():
            if "DBD Agent queue size" in line:
                return int(line.split(":")[1])
        return 0

    def _cancel_everything(self, timeout: float) -> None:
        ids = self.run(["squeue", "-h", "-o", "%i"], timeout=10).stdout.split()
        if not ids:
            return
        self.run(["scancel", *ids], check=False, timeout=10)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.run(["squeue", "-h", "-o", "%i"], timeout=10).stdout.strip():
                return
            time.sleep(0.5)

    def iter_logs(self) -> Iterator[Path]:
        """Every log file of the cluster (for attaching to a failed test's report)."""
        yield from sorted(self.log_dir.glob("*"))
