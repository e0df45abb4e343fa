"""Work out how a ``sacct`` text file is laid out: header, delimiter, fields, trailing delimiter."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pipelines._json import loads_deep
from pipelines._parse_result import InputFormatError
from pipelines.slurm._sacct_fields import KNOWN_FIELDS, canonical_field

__all__ = ["Layout", "SacctFormatError", "check_kind", "detect_layout", "json_layout"]

#: Delimiters tried, in this order, when a headerless file is read without ``delimiter=``.
#: ``^|^`` comes before ``|`` because it splits a line into as many parts as ``|`` does.
_CANDIDATE_DELIMITERS: tuple[str, ...] = ("^|^", "|", "☃", "\t", ";", ",")
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_ID_KEYS = frozenset({"jobid", "jobidraw"})


class SacctFormatError(InputFormatError):
    """A whole ``sacct`` file cannot be read: not sacct output, or its layout cannot be found."""


@dataclass(frozen=True)
class Layout:
    """How the records of one file are laid out.

    Attributes:
        delimiter: the field delimiter (one or more characters).
        keys: the fields' lower-case keys in file order (a repeated field gets ``_2``, ``_3``).
        names: the fields' display names in file order (sacct's spelling where known).
        header: whether the file's first non-blank line is a header.
        parsable: whether lines end in a trailing delimiter (``--parsable``, not ``--parsable2``).
        header_text: the header line as written, or None.
    """

    delimiter: str
    keys: tuple[str, ...]
    names: tuple[str, ...]
    header: bool
    parsable: bool
    header_text: str | None


#: How a JSON document starts (an object's first key, or an array of objects); a text export
#: may start with ``{`` (an AdminComment first column) but not with ``{"key":``.
_JSON_START = re.compile(r'(\{\s*"[^"\n|]*"\s*:|\[\s*[{\]])')
#: A YAML document's first line: a ``%YAML`` directive or the document start ``---`` (Slurm's
#: ``--yaml`` writes ``---``, then tagged keys such as ``!!str id: !!str 7.0``), never a
#: sacct text line (a fixed-width export's rule line is ``---- ----``, with spaces).
_YAML_START = re.compile(r"(%YAML\b[^|\n]*|---(?:[ \t]+[^|\s][^|\n]*)?)[ \t]*\r?(?:\n|$)")


#: Top-level keys of the other Slurm ``--json`` documents, and what each one is.
_OTHER_SLURM_JSON: Final = (
    (
        "statistics",
        "sdiag --json output (scheduler statistics; `goodput ingest slurm-state` "
        "reads sdiag text as sdiag_<day>.txt)",
    ),
    (
        "nodes",
        "sinfo/scontrol show nodes --json output (node records; `goodput ingest "
        "slurm-state` reads `scontrol show nodes -o` text as nodes_<day>.txt)",
    ),
    ("partitions", "scontrol show partitions --json output"),
    (
        "reservations",
        "scontrol show reservations --json output (`goodput ingest slurm-state` "
        "reads `scontrol show reservations` text as reservations_<day>.txt)",
    ),
    (
        "shares",
        "sshare --json output (fair-share tree; `goodput ingest slurm-state` reads "
        "`sshare -a -l -P` as sshare_<day>.psv)",
    ),
)


def other_slurm_json(document: dict[str, Any]) -> str | None:
    """What a Slurm JSON document is when it is positively not ``sacct --json``; else None.

    slurmctld's job list (``squeue --json``, ``scontrol show jobs --json``, slurmrestd's
    ``/slurm/vX/jobs``) also has a ``jobs`` list, but its ``meta.plugin.type`` is
    ``openapi/slurmctld`` (22.05: ``openapi/v0.0.38``; sacct's is ``openapi/slurmdbd``,
    ``openapi/dbv0.0.38``), its ``meta.command`` names ``squeue``/``scontrol``, and its job
    items carry ``job_state`` and ``submit_time`` instead of sacct's ``state`` and ``time``
    objects. Any one of these identifies it; a document that has none loads as sacct.
    """
    meta = document.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    plugin = meta.get("plugin")
    plugin_type = plugin.get("type") if isinstance(plugin, dict) else None
    command = meta.get("command")
    first = command[0] if isinstance(command, list) and command else None
    jobs = document.get("jobs")
    slurmctld = (
        "squeue --json / scontrol show jobs --json output (slurmctld's job list of live jobs;"
        " ingest sacct reads `sacct --json` or `sacct --parsable2` from slurmdbd)"
    )
    if isinstance(first, str) and first.rsplit("/", 1)[-1] in ("squeue", "scontrol"):
        return slurmctld
    if isinstance(jobs, list):
        if plugin_type in ("openapi/slurmctld", "openapi/v0.0.38", "openapi/v0.0.37"):
            return slurmctld
        items = [j for j in jobs[:20] if isinstance(j, dict)]
        if items and all(
            "time" not in j and ("job_state" in j or "submit_time" in j) for j in items
        ):
            return slurmctld
        return None
    for key, what in _OTHER_SLURM_JSON:
        if key in document:
            return what
    return None


def check_kind(file: str, head: str, whole: bytes) -> dict[str, Any] | None:
    """Raise when the content is clearly not ``sacct`` output; return a ``--json`` document.

    Args:
        file: the file's name, for messages.
        head: the first 64 KiB of the content, decoded.
        whole: the whole content, parsed as JSON only when ``head`` starts with ``{`` or ``[``
            (a text export may start with ``{`` too: an AdminComment in the first column).

    Returns:
        The parsed document when the content is ``sacct --json`` output (an object with
        ``jobs``), else None (text output).

    Raises:
        SacctFormatError: the content is binary, JSON that is not ``sacct --json``, HTML/XML,
            or YAML (``sacct --yaml``).
    """
    if head.count("\x00") > max(1, len(head) // 100):
        # more than 1 % NUL bytes (a binary file, UTF-16 text); a few NUL bytes in a text
        # export reject their rows only (pipelines.slurm._sacct_parse, "NUL byte in …")
        raise SacctFormatError(file, "binary content (NUL bytes), not sacct text output")
    control = sum(1 for ch in head if ord(ch) < 32 and ch not in "\t\r\n\f\v")
    if head and control / len(head) > 0.05:
        raise SacctFormatError(file, "binary content (control characters), not sacct output")
    stripped = head.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            document = loads_deep(whole)
        except json.JSONDecodeError as exc:
            if _JSON_START.match(stripped):
                # ``{"meta": …`` or ``[{…``: a JSON document broken off, not a text export
                raise SacctFormatError(
                    file, f"invalid JSON ({exc.msg} at line {exc.lineno}; truncated?)"
                ) from exc
            document = None
        except (ValueError, RecursionError):
            document = None
        if isinstance(document, dict):
            other = other_slurm_json(document)
            if other is not None:
                raise SacctFormatError(file, f"{other}, not sacct --json output")
        if isinstance(document, dict) and isinstance(document.get("jobs"), list):
            return document
        if isinstance(document, dict | list):
            raise SacctFormatError(file, "JSON without a 'jobs' list, not sacct output")
    if stripped.startswith("<"):
        raise SacctFormatError(file, "HTML/XML, not sacct text output")
    if _YAML_START.match(stripped):
        raise SacctFormatError(
            file,
            "YAML (sacct --yaml?), not sacct text output; ingest sacct reads `sacct --json` or "
            "`sacct --parsable2`",
        )
    other = other_text_kind(stripped)
    if other is not None:
        raise SacctFormatError(file, f"not sacct output: {other}")
    return None


#: ``scontrol show node(s)`` output: a record starts with ``NodeName=<name>`` followed by
#: another ``Key=`` (``Arch=``, ``CoresPerSocket=``, ``Partitions=`` …), never a sacct line.
_SCONTROL_NODE = re.compile(r"NodeName=[^\s|=]+\s+[A-Z][A-Za-z]*=")
#: A Prometheus/OpenMetrics exposition (a dcgm-exporter scrape): its first line is a ``# HELP``
#: or ``# TYPE`` comment, or a sample ``name{label="value",…} number`` (sacct text has no
#: ``{label="`` right after a leading metric name, and no ``|``-free line ending in a number
#: after ``}``).
_PROMETHEUS = re.compile(
    r"#\s*(?:HELP|TYPE)\s+[A-Za-z_:][A-Za-z0-9_:]*\s"
    r"|[A-Za-z_:][A-Za-z0-9_:]*\{[A-Za-z_][A-Za-z0-9_]*=\"[^\n|]*\}\s+\S+[ \t]*(?:\S+)?[ \t]*\r?$",
    re.MULTILINE,
)


def other_text_kind(head: str) -> str | None:
    """What a text file is when its first line says it is another input kind; else None.

    Args:
        head: the content's start, leading whitespace stripped.

    Returns:
        A phrase naming the kind and the ingest that reads it (``scontrol show node`` output:
        ``goodput ingest slurm-state``; a Prometheus scrape: ``goodput ingest dcgm``), or None
        (read on as sacct text).
    """
    first = head.split("\n", 1)[0]
    if _SCONTROL_NODE.match(first):
        return (
            "this reads as `scontrol show node` output (NodeName=… records); "
            "use `goodput ingest slurm-state` (the file named nodes_<day>.txt)"
        )
    if _PROMETHEUS.match(first):
        return (
            "this reads as a Prometheus scrape (dcgm-exporter /metrics); use `goodput ingest dcgm`"
        )
    return None


def _keys_and_names(raw_names: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    keys: list[str] = []
    names: list[str] = []
    seen: Counter[str] = Counter()
    for raw in raw_names:
        key = canonical_field(raw)
        seen[key] += 1
        name = KNOWN_FIELDS.get(key, raw.split("%", 1)[0].strip())
        if seen[key] > 1:
            key = f"{key}_{seen[key]}"
            name = f"{name}_{seen[key]}"
        keys.append(key)
        names.append(name)
    return tuple(keys), tuple(names)


def _check_unique(file: str, tokens: Sequence[str], line_no: int) -> None:
    """Raise when a header names one column twice (which of the two holds it is unknowable)."""
    seen: dict[str, int] = {}
    for pos, token in enumerate(tokens, start=1):
        key = canonical_field(token)
        if key in seen:
            raise SacctFormatError(
                file,
                f"the header names column {token!r} twice (fields {seen[key]} and {pos})",
                line=line_no,
            )
        seen[key] = pos


def _is_header(tokens: Sequence[str]) -> bool:
    """A header: every token a name, a JobID/JobIDRaw among them, at least half known."""
    if not tokens or not all(_NAME_RE.fullmatch(t) for t in tokens):
        return False
    lower = [t.lower() for t in tokens]
    if not _ID_KEYS.intersection(lower):
        return False
    known = sum(1 for t in lower if t in KNOWN_FIELDS)
    return known * 2 >= len(tokens)


def _header(line: str, delimiter: str | None) -> tuple[list[str], str, bool] | None:
    """Split a header line; returns ``(names, delimiter, parsable)`` or None if not a header."""
    if delimiter is not None:
        parsable = line.endswith(delimiter)
        body = line[: -len(delimiter)] if parsable else line
        tokens = body.split(delimiter)
        return (tokens, delimiter, parsable) if _is_header(tokens) else None
    matches = list(_NAME_RE.finditer(line))
    if not matches or matches[0].start() != 0:
        return None
    seps = {line[a.end() : b.start()] for a, b in itertools.pairwise(matches)}
    tail = line[matches[-1].end() :]
    tokens = [m.group(0) for m in matches]
    if len(seps) > 1 or "" in seps:
        return None
    sep = next(iter(seps)) if seps else (tail or "|")
    if tail not in ("", sep) or sep.isspace():
        return None
    return (tokens, sep, tail == sep and bool(tail)) if _is_header(tokens) else None


def _looks_fixed_width(line: str) -> bool:
    tokens = line.split()
    return len(tokens) > 1 and _is_header(tokens)


def _guess_delimiter(file: str, lines: Sequence[str], n: int) -> str:
    """The candidate delimiter that splits most sample lines into ``n`` (or ``n`` + 1) parts."""
    extra = Counter(ch for line in lines for ch in line if not ch.isalnum() and not ch.isspace())
    candidates = list(_CANDIDATE_DELIMITERS) + [
        ch for ch, _ in extra.most_common(8) if ch not in _CANDIDATE_DELIMITERS
    ]
    best: tuple[float, int, str] | None = None
    for order, delim in enumerate(candidates):
        if n > 1 and not any(delim in line for line in lines):
            continue
        fit = sum(
            1
            for line in lines
            if line.count(delim) + 1 == n or (line.count(delim) == n and line.endswith(delim))
        )
        score = fit / len(lines)
        if best is None or (score, -order) > (best[0], best[1]):
            best = (score, -order, delim)
    # multi-line records make some lines short, so a fifth of the lines fitting is enough
    if best is None or best[0] < 0.2:
        raise SacctFormatError(
            file,
            f"cannot find a delimiter that splits the lines into the {n} fields given; "
            "give the delimiter (goodput ingest --delimiter D)",
        )
    return best[2]


def _guess_parsable(lines: Sequence[str], delim: str, n: int) -> bool:
    trailing = sum(1 for line in lines if line.count(delim) == n and line.endswith(delim))
    plain = sum(1 for line in lines if line.count(delim) + 1 == n)
    return trailing > plain


def detect_layout(
    file: str,
    sample: Sequence[tuple[int, str]],
    fields: Sequence[str] | None,
    delimiter: str | None,
) -> Layout:
    """Find the header, delimiter and field list of a file from its first non-blank lines.

    Args:
        file: the file's name, for error messages.
        sample: ``(line_no, text)`` of the first non-blank lines (at least one).
        fields: ``--format`` field names for headerless files, or None.
        delimiter: the delimiter, or None to detect it.

    Returns:
        The :class:`Layout`.

    Raises:
        SacctFormatError: headerless without ``fields``, fixed-width output, or no delimiter
            found.
    """
    if delimiter == "":
        raise SacctFormatError(file, "the delimiter must not be empty")
    line_no, first = sample[0]
    found = _header(first, delimiter)
    if found is not None:
        tokens, delim, parsable = found
        _check_unique(file, tokens, line_no)
        keys, names = _keys_and_names(tokens)
        return Layout(delim, keys, names, True, parsable, first)
    if _looks_fixed_width(first):
        raise SacctFormatError(
            file,
            "fixed-width sacct output (columns padded with spaces, long values cut to '+'); "
            "run sacct -P / --parsable2",
            line=line_no,
        )
    if not fields:
        raise SacctFormatError(
            file,
            "no sacct header line (sacct --noheader); pass --fields / fields= with the "
            "sacct --format field names in file order",
            line=line_no,
        )
    keys, names = _keys_and_names(fields)
    if not _ID_KEYS.intersection(keys):
        raise SacctFormatError(file, "fields= must include JobID or JobIDRaw")
    texts = [text for _, text in sample]
    delim = delimiter if delimiter is not None else _guess_delimiter(file, texts, len(keys))
    return Layout(delim, keys, names, False, _guess_parsable(texts, delim, len(keys)), None)


def json_layout(names: Sequence[str]) -> Layout:
    """The layout of records made from ``sacct --json`` (fields ``names``, no delimiter)."""
    keys, display = _keys_and_names(names)
    return Layout("|", keys, display, False, False, None)
