"""The child process of :func:`pipelines.warehouse.safe_sql.run_query_counted`: reads one
request (JSON on standard input: ``path, query, row_limit, time_limit_s, memory_limit``), runs
it with :func:`pipelines.warehouse.safe_sql.run_in_process` and writes one pickled answer on
standard output: ``("ok", rows as Arrow IPC bytes, total)`` or ``("refused", message)``. Its
parent watches its resident memory and kills it past the limit."""

from __future__ import annotations

import io
import json
import pickle
import sys


def main() -> None:
    """Answer the request on standard input (see the module docstring)."""
    from pipelines.warehouse.safe_sql import SqlRefused, run_in_process

    req = json.loads(sys.stdin.buffer.read())
    try:
        result = run_in_process(
            req["path"], req["query"], row_limit=req["row_limit"],
            time_limit_s=req["time_limit_s"], memory_limit=req["memory_limit"],
        )  # fmt: skip
    except (SqlRefused, FileNotFoundError) as exc:
        answer: tuple[object, ...] = ("refused", str(exc))
    else:
        buf = io.BytesIO()
        if result.rows.width:
            result.rows.write_ipc(buf)
        answer = ("ok", buf.getvalue(), result.total)
    sys.stdout.buffer.write(pickle.dumps(answer))


if __name__ == "__main__":
    main()
