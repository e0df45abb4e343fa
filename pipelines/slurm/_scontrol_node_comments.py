"""Parse polled ``scontrol --oneliner show nodes`` output for each node's ``Comment``.

Slinky's slurm-operator writes the pod a Slurm node runs in into the node's ``Comment`` as
JSON: ``{"namespace","podName","node","nodeSetName","nodeSetUID"}`` (SlinkyProject/
slurm-operator ``internal/utils/podinfo/podinfo.go``, ``PodInfo``; written by
``UpdateNodeWithPodInfo`` in ``internal/controller/nodeset/slurmcontrol/slurmcontrol.go``).
Polled over time, these comments date the map Slurm node → pod → Kubernetes node
(:mod:`pipelines.core.slurm_on_k8s`).

:func:`parse_node_comments` reads one file (or ``text``) into rows of
:data:`NODE_COMMENT_SCHEMA`, one per node record; the poll time is the file name's
``node_comments_<YYYY-MM-DD>T<HHMMSS>Z`` stamp (what the live source writes), else the file's
modification time. A comment that opens with ``{`` but is not a JSON object, or whose pod
fields are not strings, is rejected naming the ``Comment`` field; any other comment (free text
an administrator set) is kept with the pod columns NULL.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._text import UTC, BadValue, Collected, iter_records, key_tokens, read_text

__all__ = ["NODE_COMMENT_SCHEMA", "parse_node_comments", "poll_stamp"]

#: One row per node and poll: ``comment`` as printed; ``namespace``, ``pod``, ``k8s_node``,
#: ``nodeset``, ``nodeset_uid`` from its slurm-operator JSON (NULL when the comment is not
#: one); ``state`` and ``gres`` as scontrol prints them.
NODE_COMMENT_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "slurm_node": pl.String(),
    "polled_at": UTC,
    "comment": pl.String(),
    "namespace": pl.String(),
    "pod": pl.String(),
    "k8s_node": pl.String(),
    "nodeset": pl.String(),
    "nodeset_uid": pl.String(),
    "state": pl.String(),
    "gres": pl.String(),
    "file": pl.String(),
    "line_no": pl.Int64(),
    "line_end": pl.Int64(),
}

_STAMP: Final = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2})(\d{2})(\d{2})Z")
#: PodInfo's JSON keys → columns (slurm-operator ``podinfo.PodInfo`` json tags).
_POD_INFO: Final = {"namespace": "namespace", "podName": "pod", "node": "k8s_node",
                    "nodeSetName": "nodeset", "nodeSetUID": "nodeset_uid"}  # fmt: skip


def poll_stamp(when: dt.datetime) -> str:
    """The ``<YYYY-MM-DD>T<HHMMSS>Z`` stamp of a poll time, as the file name carries it."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H%M%SZ")


def _polled_at(path: Path) -> dt.datetime | None:
    m = _STAMP.search(path.name)
    if m:
        day, hh, mm, ss = m.groups()
        return dt.datetime.fromisoformat(f"{day}T{hh}:{mm}:{ss}+00:00")
    if path.exists():
        return dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC)
    return None


def _pod_info(comment: str | None) -> dict[str, str | None]:
    out: dict[str, str | None] = dict.fromkeys(_POD_INFO.values())
    if not comment or comment == "(null)" or not comment.lstrip().startswith("{"):
        return out
    try:
        doc = json.loads(comment)
    except json.JSONDecodeError as err:
        raise BadValue("Comment", f"Comment opens with '{{' but is not JSON: {err.msg}") from err
    if not isinstance(doc, dict):
        raise BadValue("Comment", "Comment JSON is not an object")
    for key, col in _POD_INFO.items():
        value = doc.get(key)
        if value is not None and not isinstance(value, str):
            raise BadValue("Comment", f"Comment JSON {key!r} is not a string")
        out[col] = value or None
    return out


def parse_node_comments(
    path: str | Path,
    *,
    cluster: str = "default",
    polled_at: dt.datetime | None = None,
    text: str | None = None,
) -> ParseResult:
    """Read polled ``scontrol show nodes`` output into one row per node with its ``Comment``.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the Slurm cluster (scontrol does not print it).
        polled_at: when the output was taken (default: the file name's stamp, else its
            modification time).
        text: the output itself, instead of reading ``path``.

    Returns:
        Rows with :data:`NODE_COMMENT_SCHEMA`; ``info`` has ``nodes`` and ``with_pod`` (rows
        whose comment names a pod).

    Raises:
        InputFormatError: the file cannot be read, holds no ``NodeName=`` record while not
            empty, or no poll time is known.
    """
    file, lines = read_text(path, text)
    when = polled_at or _polled_at(Path(path))
    if when is None:
        raise InputFormatError(file, "no poll time: name the file node_comments_<day>T<HHMMSS>Z")
    out = Collected(file)
    records = list(iter_records(lines, "NodeName="))
    if records and not any(rec[0].startswith("NodeName=") for _f, _l, rec in records):
        raise InputFormatError(file, "no 'NodeName=' record: not `scontrol show nodes` output")
    for first, last, record in records:
        raw = "\n".join(record)
        if not record[0].startswith("NodeName="):
            out.reject(first, raw, "line outside a NodeName= record", line_end=last)
            continue
        tokens = key_tokens(record)
        comment = tokens.get("Comment", "")
        try:
            row: dict[str, Any] = {
                "cluster": cluster,
                "slurm_node": tokens["NodeName"],
                "polled_at": when,
                "comment": None if comment in ("", "(null)") else comment,
                **_pod_info(comment),
                "state": tokens.get("State") or None,
                "gres": tokens.get("Gres") or None,
                "file": file,
                "line_no": first,
                "line_end": last,
            }
        except BadValue as err:
            out.reject(first, raw, str(err), field_name=err.field_name, line_end=last)
            continue
        out.rows.append(row)
    with_pod = sum(1 for r in out.rows if r["pod"])
    return out.result(NODE_COMMENT_SCHEMA, {"nodes": len(out.rows), "with_pod": with_pod})
