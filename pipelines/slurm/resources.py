"""Slurm sources: exported ``sacct`` files, or ``sacct`` and the cluster-state commands run live.

The live twins run the Slurm clients as argument lists (never a shell string) with ``TZ=UTC``
(so ``--starttime``/``Start=`` bound UTC days) and ``SLURM_TIME_FORMAT=%s``, so every time they
print is epoch seconds: the spooled file means the same instant whatever time zone it is later
read in (the raw assets read naive times in the cluster's configured zone; an epoch needs none).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import Field

from pipelines._sources import FileSource, InputSource
from pipelines.slurm import SACCT, SLURM_STATE, SQUEUE, TOPOLOGY
from pipelines.slurm._reservations import RESERVATION_HISTORY_FIELDS
from pipelines.slurm._scontrol_node_comments import poll_stamp
from pipelines.slurm._sprio import SPRIO_FORMAT
from pipelines.slurm._squeue import POLL_MARKER, SQUEUE_FORMAT

__all__ = [
    "EVENT_FIELDS",
    "SACCT_FIELDS",
    "SACCT_STATES",
    "STATE_KINDS",
    "SacctCliSource",
    "SacctFileSource",
    "SlurmStateCliSource",
    "SlurmStateFileSource",
    "SqueueFileSource",
    "TopologyFileSource",
    "slurm_client_env",
]

#: Fields the live source asks ``sacct --format`` for.
SACCT_FIELDS = (
    "JobID,JobIDRaw,Cluster,Partition,QOS,Account,Group,User,UID,Submit,Eligible,Start,End,"
    "Elapsed,ExitCode,State,NNodes,NCPUS,ReqTRES,AllocTRES,Timelimit,NodeList,JobName,Reason,"
    "AdminComment,MCSLabel"
)
#: Every job state, passed explicitly: without ``--state`` sacct omits jobs cancelled before
#: they became eligible.
SACCT_STATES = "BF,CA,CD,DL,F,NF,OOM,PD,PR,R,RQ,RS,RV,S,TO"
#: Fields asked of ``sacctmgr show event`` (its default has no TRES, hence no GPU count).
EVENT_FIELDS = (
    "Cluster,ClusterNodes,NodeName,TimeStart,TimeEnd,State,StateRaw,Event,Reason,User,TRES"
)
#: The cluster-state outputs :class:`SlurmStateCliSource` spools, by kind (``jobs``: only when
#: asked for, see the class).
STATE_KINDS = ("nodes", "events", "sshare", "sprio", "sdiag", "transactions", "tres",
               "scontrol_config", "jobs", "reservations", "reservation_history",
               "squeue", "node_comments")  # fmt: skip
#: Kinds fetched only when :attr:`SlurmStateCliSource.kinds` names them.
_ON_REQUEST_KINDS = frozenset(
    {"jobs", "reservations", "reservation_history", "squeue", "node_comments"}
)


def slurm_client_env(
    extra: Mapping[str, str] | None = None, slurm_conf: str | None = None
) -> dict[str, str]:
    """Environment for a Slurm client run by a live source.

    Args:
        extra: variables added to this process's environment (a test cluster's ``LD_PRELOAD``,
            ``FAKETIME``, …).
        slurm_conf: ``SLURM_CONF``, when the cluster's ``slurm.conf`` is not the default one.

    Returns:
        The environment, with ``TZ=UTC`` and ``SLURM_TIME_FORMAT=%s`` always set last (an
        inherited ``SLURM_TIME_FORMAT=relative`` would print times without a date).
    """
    env = {**os.environ, **(extra or {})}
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    env["TZ"] = "UTC"
    env["SLURM_TIME_FORMAT"] = "%s"
    return env


def _day_window(day: str) -> tuple[str, str]:
    """``YYYY-MM-DDT00:00:00`` of ``day`` and of the next day (UTC, as the clients run)."""
    start = dt.date.fromisoformat(day)
    end = start + dt.timedelta(days=1)
    return f"{start.isoformat()}T00:00:00", f"{end.isoformat()}T00:00:00"


def _run(argv: Sequence[str], env: Mapping[str, str], timeout_s: float) -> str:
    """Run one Slurm client and return its stdout.

    Raises:
        RuntimeError: the program is missing, timed out or exited non-zero (stderr in the
            message).
    """
    try:
        proc = subprocess.run(
            list(argv), env=dict(env), capture_output=True, text=True, check=False,
            timeout=timeout_s,
        )  # fmt: skip
    except FileNotFoundError as err:
        raise RuntimeError(f"{argv[0]} not found: {err}") from err
    except subprocess.TimeoutExpired as err:
        raise RuntimeError(f"{argv[0]} timed out after {timeout_s:.0f} s") from err
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def _spool(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


class SacctFileSource(FileSource):
    """``sacct --parsable2`` exports under ``<inputs_dir>/<cluster>/sacct/``."""

    kind: str = SACCT.name


class SlurmStateFileSource(FileSource):
    """Cluster-state exports under ``<inputs_dir>/<cluster>/slurm_state/``: ``events_<day>.*``
    (``sacctmgr -P show event``), ``nodes_<day>.*`` (``scontrol show nodes -o``),
    ``sshare_<day>.*`` (``sshare -a -l -P``), ``transactions_<day>.*`` (``sacctmgr -P list
    transactions``), ``tres_<day>.*`` (``sacctmgr -P show tres``), ``scontrol_config_<day>.*``
    (``scontrol show config``), and the other prefixes of
    :data:`~pipelines.slurm.STATE_PREFIXES`."""

    kind: str = SLURM_STATE.name


class SqueueFileSource(FileSource):
    """Polled ``squeue`` output under ``<inputs_dir>/<cluster>/squeue/`` (``squeue_<day>.txt``,
    one block per poll, as :class:`SlurmStateCliSource` appends them)."""

    kind: str = SQUEUE.name


class TopologyFileSource(FileSource):
    """Slurm ``topology.conf`` copies under ``<inputs_dir>/<cluster>/topology/``, one per day
    the map changed (``topology_<day>.conf``)."""

    kind: str = TOPOLOGY.name


class SacctCliSource(InputSource):
    """Runs ``sacct`` for one UTC day and spools its output to a file.

    The command is an argument list (never a shell string), run with ``TZ=UTC`` and epoch
    times (:func:`slurm_client_env`), ``--allusers``, ``--duplicates`` so every requeued attempt
    is listed, an explicit state list, and ``--starttime/--endtime`` bounding the day. The
    output goes to ``<spool_dir>/<cluster>/sacct/sacct_<day>.psv``, where
    :class:`SacctFileSource` finds it when ``spool_dir`` is the inputs folder.

    Attributes:
        spool_dir: folder the output is written under.
        sacct_bin: the ``sacct`` program.
        slurm_conf: ``SLURM_CONF`` for the cluster (default: the client's own).
        env: extra environment variables for the client.
        timeout_s: seconds before the command is given up.
    """

    spool_dir: str
    sacct_bin: str = "sacct"
    slurm_conf: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = 600.0

    def command(self, cluster: str, day: str) -> list[str]:
        """The ``sacct`` argument list for ``cluster`` and ``day``."""
        start, end = _day_window(day)
        return [
            self.sacct_bin, "--parsable2", "--duplicates", "--clusters", cluster,
            "--allusers", "--state", SACCT_STATES, "--format", SACCT_FIELDS,
            "--starttime", start, "--endtime", end,
        ]  # fmt: skip

    def fetch(self, cluster: str, day: str) -> list[Path]:
        """Run sacct and return the spooled file.

        Raises:
            RuntimeError: sacct is missing, timed out or exited non-zero (its stderr is in the
                message).
        """
        env = slurm_client_env(self.env, self.slurm_conf)
        text = _run(self.command(cluster, day), env, self.timeout_s)
        return [_spool(Path(self.spool_dir) / cluster / "sacct" / f"sacct_{day}.psv", text)]


class SlurmStateCliSource(InputSource):
    """Runs Slurm's cluster-state commands for one UTC day and spools each output to a file.

    Files: ``<spool_dir>/<cluster>/slurm_state/<kind>_<day>.txt`` for the kinds of
    :data:`STATE_KINDS`, each read by its command's parser in :mod:`pipelines.slurm`:

    - ``nodes``: ``scontrol --oneliner show nodes`` (the node inventory, now);
    - ``events``: ``sacctmgr --parsable2 show event`` with ``Start``/``End`` bounding the day
      (sacctmgr lists every event that overlaps it, open ones included) and
      ``Format=`` :data:`EVENT_FIELDS`: cluster TRES registrations and node down/drain spans;
    - ``sshare``: ``sshare --all --long --parsable2`` (fair share, now);
    - ``sprio``: ``sprio --format`` :data:`~pipelines.slurm._sprio.SPRIO_FORMAT`
      (pending jobs' priority factors, now; sprio has no ``--parsable2``);
    - ``sdiag``: ``sdiag`` (scheduler and backfill statistics, now);
    - ``transactions``: ``sacctmgr --parsable2 list transactions`` with ``Start``/``End``
      bounding the day and ``WithAssoc`` (who changed which association, QOS or limit, and
      when: the policy-change ledger); not limited to the cluster, because QOS belong to none;
    - ``tres``: ``sacctmgr --parsable2 show tres`` (the TRES ids limits are written with);
    - ``scontrol_config``: ``scontrol show config`` (the settings in force, now: Slurm keeps no
      history of them, so the ledger diffs successive snapshots; one a day is the ledger's
      resolution for ``slurm.conf`` changes);
    - ``jobs``: ``scontrol --details --oneliner show job`` (every job slurmctld holds, with the
      GPU indices each running job holds per node: the map for attributing GPU telemetry to
      jobs, now). Fetched only when :attr:`kinds` names it: it is worth something only while
      jobs run, so fetch it often (``kinds=["jobs"]``) rather than with the daily kinds.
    - ``reservations``: ``scontrol --oneliner show reservation`` (reservations now); and
      ``reservation_history``: ``sacctmgr --parsable2 show reservation`` for the day with
      ``Format=`` :data:`~pipelines.slurm._reservations.RESERVATION_HISTORY_FIELDS` (what
      slurmdbd recorded, with unused wall time). Both only when :attr:`kinds` names them.
    - ``squeue``: ``squeue --all --states=PENDING,RUNNING,COMPLETING -O``
      :data:`~pipelines.slurm._squeue.SQUEUE_FORMAT` (every job's state and pending reason,
      now), *appended* to ``<spool_dir>/<cluster>/squeue/squeue_<day of the poll>.txt`` after a
      ``# poll_time=<epoch>`` line (the host clock plus :attr:`clock_offset_s`), for the
      ``slurm-squeue`` kind. Only when :attr:`kinds` names it: poll it every minute or few
      (``kinds=["squeue"]``); the reason spells are as fine as the polls.
    - ``node_comments``: ``scontrol --oneliner show nodes`` again, spooled as
      ``node_comments_<day>T<HHMMSS>Z.txt`` (the poll time, so successive polls accumulate):
      each node's ``Comment``, where Slinky's slurm-operator writes the pod and Kubernetes node
      the Slurm node runs in (the dated ``slurm_node_map``). Only when :attr:`kinds` names it;
      poll it as often as the map should be exact (``kinds=["node_comments"]``).

    Only ``events``, ``transactions`` and ``reservation_history`` look at ``day``; the others
    are snapshots of the
    moment they run, so fetch them for the current day. Each command names the cluster
    (``-M``/``Clusters=``).

    Attributes:
        spool_dir: folder the outputs are written under.
        bin_dir: folder holding the Slurm clients (default: found on ``PATH``).
        slurm_conf: ``SLURM_CONF`` for the cluster (default: the client's own).
        env: extra environment variables for the clients.
        kinds: which outputs to fetch (a subset of :data:`STATE_KINDS`; default: all but
            ``jobs``, ``reservations`` and ``reservation_history``).
        timeout_s: seconds before one command is given up.
        clock_offset_s: seconds added to the host clock for the poll time (a cluster whose
            clock differs from this host's, as the test cluster's faked one; normally 0).
    """

    spool_dir: str
    bin_dir: str | None = None
    slurm_conf: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    kinds: list[str] = Field(
        default_factory=lambda: [k for k in STATE_KINDS if k not in _ON_REQUEST_KINDS]
    )
    timeout_s: float = 120.0
    clock_offset_s: float = 0.0

    def _bin(self, name: str) -> str:
        return str(Path(self.bin_dir) / name) if self.bin_dir else name

    def commands(self, cluster: str, day: str) -> dict[str, list[str]]:
        """The argument list of each kind in :attr:`kinds`, for ``cluster`` and ``day``.

        Raises:
            ValueError: an unknown kind.
        """
        start, end = _day_window(day)
        every = {
            "nodes": [self._bin("scontrol"), "-M", cluster, "--oneliner", "show", "nodes"],
            "events": [
                self._bin("sacctmgr"), "--parsable2", "show", "event", f"Clusters={cluster}",
                f"Start={start}", f"End={end}", f"Format={EVENT_FIELDS}",
            ],
            "sshare": [self._bin("sshare"), "-M", cluster, "--all", "--long", "--parsable2"],
            "sprio": [self._bin("sprio"), "-M", cluster, "--format", SPRIO_FORMAT],
            "sdiag": [self._bin("sdiag"), "-M", cluster],
            "transactions": [
                self._bin("sacctmgr"), "--parsable2", "list", "transactions", f"Start={start}",
                f"End={end}", "WithAssoc",
            ],
            "tres": [self._bin("sacctmgr"), "--parsable2", "show", "tres"],
            "scontrol_config": [self._bin("scontrol"), "-M", cluster, "show", "config"],
            "jobs": [
                self._bin("scontrol"), "-M", cluster, "--details", "--oneliner", "show", "job",
            ],
            "reservations": [
                self._bin("scontrol"), "-M", cluster, "--oneliner", "show", "reservation",
            ],
            "node_comments": [
                self._bin("scontrol"), "-M", cluster, "--oneliner", "show", "nodes",
            ],
            "reservation_history": [
                self._bin("sacctmgr"), "--parsable2", "show", "reservation", f"Clusters={cluster}",
                f"Start={start}", f"End={end}", f"Format={RESERVATION_HISTORY_FIELDS}",
            ],
            "squeue": [
                self._bin("squeue"), "-M", cluster, "--all", "--states=PENDING,RUNNING,COMPLETING",
                "-O", SQUEUE_FORMAT,
            ],
        }  # fmt: skip
        unknown = sorted(set(self.kinds) - set(every))
        if unknown:
            raise ValueError(f"unknown kinds {unknown}; expected some of {list(STATE_KINDS)}")
        return {kind: every[kind] for kind in STATE_KINDS if kind in self.kinds}

    def path(self, cluster: str, kind: str, day: str, polled_at: dt.datetime | None = None) -> Path:
        """Where the output of ``kind`` for ``cluster`` and ``day`` is spooled (``node_comments``:
        stamped with ``polled_at``, default now)."""
        name = f"{kind}_{day}"
        if kind == "node_comments":
            name = f"{kind}_{poll_stamp(polled_at or dt.datetime.now(dt.UTC))}"
        return Path(self.spool_dir) / cluster / "slurm_state" / f"{name}.txt"

    def fetch(self, cluster: str, day: str) -> list[Path]:
        """Run each command and return the spooled files, in :data:`STATE_KINDS` order.

        Raises:
            RuntimeError: a command is missing, timed out or exited non-zero (nothing is spooled
                for it; the files of the commands before it are kept).
            ValueError: an unknown kind in :attr:`kinds`.
        """
        env = slurm_client_env(self.env, self.slurm_conf)
        files = []
        for kind, argv in self.commands(cluster, day).items():
            if kind == "squeue":
                files.append(self._poll_squeue(cluster, argv, env))
                continue
            text = _run(argv, env, self.timeout_s)
            files.append(_spool(self.path(cluster, kind, day), text))
        return files

    def _poll_squeue(self, cluster: str, argv: list[str], env: Mapping[str, str]) -> Path:
        """Run one squeue poll and append it, stamped, to the poll day's file."""
        now = time.time() + self.clock_offset_s
        text = _run(argv, env, self.timeout_s)
        day = dt.datetime.fromtimestamp(now, tz=dt.UTC).date().isoformat()
        path = Path(self.spool_dir) / cluster / "squeue" / f"squeue_{day}.txt"
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        return _spool(path, f"{before}{POLL_MARKER}{int(now)}\n{text}")
