"""Plumbing shared by the benchmark scripts in ``bench/``: peak memory of a process, running one
side of a benchmark in a process of its own and reading back its JSON line, and a small
``goodput.toml`` for a generated fleet.

Scripts run as ``python bench/<script>.py``; they put the repository root on ``sys.path`` and
import this module as ``bench._harness`` (``bench/`` is a namespace package, like
``bench._synth_fleet``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def peak_rss_mb(pid: str = "self") -> float:
    """A process's peak resident memory in MB (kB / 1024): ``VmHWM`` from
    ``/proc/<pid>/status`` (Linux: the program's own peak, from its ``exec``), else this process's
    ``ru_maxrss`` (which on Linux includes the parent's peak before the ``exec``)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        status = ""
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def last_json(stdout: str) -> Any:
    """The JSON value on the last line of a side's standard output (what each child prints).

    Raises ``IndexError`` on empty output and ``json.JSONDecodeError`` if that line is not JSON.
    """
    return json.loads(stdout.strip().splitlines()[-1])


def run_side(script: str, *args: str, env: Mapping[str, str] | None = None) -> Any:
    """Run ``python <script> <args>`` in a process of its own (so its peak memory is its own) and
    return the JSON value on the last line of its standard output.

    Raises ``subprocess.CalledProcessError`` if the process exits non-zero.
    """
    proc = subprocess.run(
        [sys.executable, script, *args],
        check=True, capture_output=True, text=True, env=None if env is None else dict(env),
    )  # fmt: skip
    return last_json(proc.stdout)


def write_bench_config(work: Path, data: Path, cluster: str, partitions_start: str) -> Path:
    """Write ``work/goodput.toml``: warehouse and serving copy in ``work``, inputs, inventory and
    registry of a generated fleet in ``data``, one Slurm cluster in UTC (the default cluster).
    Returns the file's path."""
    text = f"""
default_cluster = "{cluster}"
[warehouse]
path = "{work / "warehouse.duckdb"}"
serving_path = "{work / "serving.duckdb"}"
inputs = "{data / "inputs"}"
inventory = "{data / "inventory"}"
registry = "{data / "registry.yaml"}"
partitions_start = "{partitions_start}"
[[clusters]]
name = "{cluster}"
scheduler = "slurm"
timezone = "UTC"
"""
    path = work / "goodput.toml"
    path.write_text(text, encoding="utf-8")
    return path


def settle_vacuum(db: Path, rounds: int = 500) -> dict[str, Any]:
    """Bring a bulk-loaded warehouse to the state of one loaded a day at a time: checkpoint it
    (after a one-row change, since a checkpoint with nothing committed does nothing) until a
    checkpoint no longer lowers the number of row groups of its tables.

    Each load appends a new row group after the last checkpointed one, so a year loaded file by
    file leaves an under-full row group per file (``raw.dcgm_hourly``: 1,406 groups for 99.2M
    rows, 808 when full); every later checkpoint's vacuum merges a limited number of them
    (measured: 25 groups, 2–3 s on the 10,000-GPU year, whatever the build changed) until none
    is left. A warehouse loaded day by day merges each day's few at that day's checkpoint, so a
    benchmark of the next day starts from the settled state. Returns ``rounds`` (checkpoints
    run), ``s`` (their seconds) and ``row_groups_before``/``row_groups_after`` (all tables).

    Raises ``RuntimeError`` if ``rounds`` checkpoints did not settle it.
    """
    import time

    import duckdb

    def row_groups(con: duckdb.DuckDBPyConnection) -> int:
        names = con.execute(
            "SELECT '\"' || schema_name || '\".\"' || table_name || '\"'"
            " FROM duckdb_tables() WHERE NOT temporary AND table_name <> 'bench_vacuum_round'"
        ).fetchall()
        return sum(
            (con.execute(f"SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('{n}')")
             .fetchone() or (0,))[0]
            for (n,) in names
        )  # fmt: skip

    t = time.perf_counter()
    with duckdb.connect(str(db)) as con:
        before = last = row_groups(con)
        for done in range(1, rounds + 1):
            con.execute(
                "CREATE OR REPLACE TABLE main.bench_vacuum_round AS SELECT $n AS n", {"n": done}
            )
            con.execute("CHECKPOINT")
            now = row_groups(con)
            if now >= last:
                con.execute("DROP TABLE main.bench_vacuum_round")
                con.execute("CHECKPOINT")
                return {"rounds": done, "s": round(time.perf_counter() - t, 1),
                        "row_groups_before": before, "row_groups_after": now}  # fmt: skip
            last = now
    raise RuntimeError(f"{db}: the vacuum did not settle in {rounds} checkpoints")
