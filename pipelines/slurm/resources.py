"""Slurm accounting sources: exported ``sacct`` files, or ``sacct`` run live."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

from pipelines._sources import FileSource, InputSource

__all__ = ["SACCT_FIELDS", "SACCT_STATES", "SacctCliSource", "SacctFileSource"]

#: Fields the live source asks ``sacct --format`` for.
SACCT_FIELDS = (
    "JobID,JobIDRaw,Cluster,Partition,QOS,Account,Group,User,UID,Submit,Eligible,Start,End,"
    "Elapsed,ExitCode,State,NNodes,NCPUS,ReqTRES,AllocTRES,Timelimit,NodeList,JobName,Reason"
)
#: Every job state, passed explicitly: without ``--state`` sacct omits jobs cancelled before
#: they became eligible.
SACCT_STATES = "BF,CA,CD,DL,F,NF,OOM,PD,PR,R,RQ,RS,RV,S,TO"


class SacctFileSource(FileSource):
    """``sacct --parsable2`` exports under ``<inputs_dir>/<cluster>/sacct/``."""

    kind: str = "sacct"


class SacctCliSource(InputSource):
    """Runs ``sacct`` for one UTC day and spools its output to a file.

    The command is an argument list (never a shell string), with ``TZ=UTC`` so times are
    unambiguous, ``--duplicates`` so every requeued attempt is listed, an explicit state list,
    and ``--starttime/--endtime`` bounding the day.
    """

    spool_dir: str
    sacct_bin: str = "sacct"
    slurm_conf: str | None = None

    def command(self, cluster: str, day: str) -> list[str]:
        """The ``sacct`` argument list for ``cluster`` and ``day``."""
        start = dt.date.fromisoformat(day)
        end = start + dt.timedelta(days=1)
        return [
            self.sacct_bin, "--parsable2", "--duplicates", "--clusters", cluster,
            "--allusers", "--state", SACCT_STATES, "--format", SACCT_FIELDS,
            "--starttime", f"{start.isoformat()}T00:00:00",
            "--endtime", f"{end.isoformat()}T00:00:00",
        ]  # fmt: skip

    def fetch(self, cluster: str, day: str) -> list[Path]:
        """Run sacct and return the spooled file.

        Raises:
            RuntimeError: sacct exited non-zero (its stderr is in the message).
        """
        env = {**os.environ, "TZ": "UTC"}
        if self.slurm_conf:
            env["SLURM_CONF"] = self.slurm_conf
        proc = subprocess.run(
            self.command(cluster, day), env=env, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"sacct failed ({proc.returncode}): {proc.stderr.strip()}")
        out = Path(self.spool_dir) / cluster / "sacct" / f"sacct_{day}.psv"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(proc.stdout, encoding="utf-8")
        return [out]
