"""Parse ``sacctmgr --parsable2 show tres``: the TRES ids slurmdbd names limits by.

:func:`parse_sacctmgr_tres` reads one file (or ``text``) into a
:class:`~pipelines._parse_result.ParseResult` whose ``rows`` follow :data:`TRES_SCHEMA`. The
output is ``Type|Name|ID`` (Slurm 22.05: ``cpu||1``, ``gres|gpu|1001``); limits in
``sacctmgr list transactions`` name TRES by that id (``grp_tres='1001=8'``).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._text import (
    BadValue,
    Collected,
    header_key,
    psv_line,
    psv_names,
    read_text,
    to_int,
)

__all__ = [
    "TRES_SCHEMA",
    "parse_sacctmgr_tres",
]

#: One row per TRES. ``tres`` is the name limits are written with: ``type/name`` when the TRES
#: has a name (``gres/gpu``, ``fs/disk``), else ``type`` (``cpu``).
TRES_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "tres_id": pl.Int64(),
    "tres_type": pl.String(),
    "tres_name": pl.String(),
    "tres": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
}

_COLUMNS: Final = {"type": "type", "name": "name", "id": "id"}


def parse_sacctmgr_tres(
    path: str | Path, *, cluster: str = "default", text: str | None = None
) -> ParseResult:
    """Read ``sacctmgr --parsable2 show tres`` into one row per TRES.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster (slurmdbd) it was taken from.
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`TRES_SCHEMA`; a line with the wrong field count, no type or a
        non-integer id is rejected.

    Raises:
        InputFormatError: the file cannot be read, or its header lacks ``Type`` and ``ID``.
    """
    file, lines = read_text(path, text)
    out = Collected(file)
    # the header is the first non-blank line (blank lines before it carry nothing)
    head = next((i for i, line in enumerate(lines) if line.strip()), None)
    if head is None:
        return out.result(TRES_SCHEMA, {"fields": []})
    names = psv_names(lines[head])
    keys = [_COLUMNS.get(header_key(n)) for n in names]
    if not {"type", "id"} <= set(keys):
        raise InputFormatError(
            file, "header lacks Type|Name|ID: not `sacctmgr -P show tres` output", line=head + 1
        )
    for no, line in enumerate(lines[head + 1 :], head + 2):
        if line.strip():
            psv_line(out, no, line, keys, partial(_tres_row, cluster=cluster, file=file, no=no))
    return out.result(TRES_SCHEMA, {"fields": names})


def _tres_row(values: dict[str, str], cluster: str, file: str, no: int) -> dict[str, Any]:
    kind = values["type"].strip()
    if not kind:
        raise BadValue("Type", "empty Type")
    tres_id = to_int(values["id"], "ID")
    if tres_id is None:
        raise BadValue("ID", "empty ID")
    name = values.get("name", "").strip() or None
    return {
        "cluster": cluster,
        "tres_id": tres_id,
        "tres_type": kind,
        "tres_name": name,
        "tres": f"{kind}/{name}" if name else kind,
        "file": file,
        "line_no": no,
    }
