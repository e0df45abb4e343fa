"""Parse Slurm's ``topology.conf`` (``topology/tree`` and ``topology/block``) into a node →
domain map, one row per level, domain and node.

The two forms (topology.conf(5)):

* ``topology/tree``: ``SwitchName=s0 Nodes=dev[0-5]`` (a leaf switch and its nodes) and
  ``SwitchName=s3 Switches=s[0-2]`` (a switch above other switches). A switch's *level* is its
  height above the nodes: a leaf switch is ``switch-1``, a switch over leaf switches
  ``switch-2``, and so on (one more than its highest child). Every switch is a domain of its
  level holding every node below it.
* ``topology/block``: ``BlockName=block1 Nodes=node[1-32]`` (level ``block``) and the global
  ``BlockSizes=30,120`` (kept in ``info["block_sizes"]``; the higher-level blocks it implies
  are not rows).

Parameter names are case-insensitive, ``#`` starts a comment to the end of the line, and a
line ending in ``\\`` continues on the next. Host lists are expanded as ``sacct``'s NodeList
is (:func:`pipelines.slurm._sacct_values.expand_nodelist`). A line that cannot be read (an
unknown parameter, a bad host list, a switch naming an unknown child, a second form in the
same file, a node already placed at that level) is a rejected row naming its line and field.

Every row carries ``valid_from``: when this map took effect, the day in the file's name
(``topology_2026-11-02.conf`` → 2026-11-02 00:00 UTC), else the file's modification time.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import polars as pl

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._sacct_values import expand_nodelist
from pipelines.slurm._text import UTC, Collected, read_text

__all__ = [
    "BLOCK_LEVEL",
    "TOPOLOGY_SCHEMA",
    "Switch",
    "block_rows",
    "hosts",
    "parse_topology_conf",
    "switch_level",
    "tree_rows",
    "valid_from_of",
]

#: One row per (level, domain, node) of a topology map.
TOPOLOGY_SCHEMA: dict[str, pl.DataType] = {
    "cluster": pl.String(),
    "level": pl.String(),
    "domain": pl.String(),
    "node": pl.String(),
    "valid_from": UTC,
    "file": pl.String(),
    "line_no": pl.Int64(),
}

#: The level of ``topology/block`` blocks.
BLOCK_LEVEL: Final = "block"
_DAY: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_KEYS: Final = {"switchname", "switches", "nodes", "linkspeed", "blockname", "blocksizes"}


def switch_level(height: int) -> str:
    """The level name of a switch ``height`` above the nodes (1: a leaf switch)."""
    return f"switch-{height}"


def valid_from_of(path: Path) -> dt.datetime:
    """When the map in ``path`` took effect: the name's day (00:00 UTC), else its mtime.

    Raises:
        InputFormatError: neither is known (the file does not exist).
    """
    m = _DAY.search(path.name)
    if m:
        try:
            return dt.datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=dt.UTC)
        except ValueError:
            pass
    try:
        return dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC)
    except OSError as err:
        raise InputFormatError(str(path), f"cannot read the file: {err}") from err


@dataclass
class Switch:
    """One switch as read: its first and last line, the text, its nodes and child switches."""

    line_no: int
    line_end: int
    raw: str
    nodes: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


def _logical_lines(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, last line, text) of each non-blank line, comments cut, ``\\`` joined.

    A continued piece ending in ``,`` joins the next without a space (a host list broken
    after a comma, ``Nodes=a[1-4],\\`` / ``  b[1-4]``); other pieces join with one.
    """
    out: list[tuple[int, int, str]] = []
    joined = ""
    first = 0
    for no, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not joined:
            first = no
        more = text.endswith("\\")
        piece = text[:-1].strip() if more else text
        joined = joined + piece if joined.endswith(",") or not joined else f"{joined} {piece}"
        if more:
            continue
        if joined.strip():
            out.append((first, no, joined.strip()))
        joined = ""
    if joined.strip():
        out.append((first, len(lines), joined.strip()))
    return out


def _tokens(text: str) -> tuple[dict[str, str], list[str], str | None]:
    """``Key=value`` tokens by lower-cased key, the keys as written that are not topology.conf
    parameters, and the first token that is not ``Key=value``."""
    tokens: dict[str, str] = {}
    unknown: list[str] = []
    for token in text.split():
        key, sep, value = token.partition("=")
        if not sep or not key:
            return tokens, unknown, token
        if key.lower() not in _KEYS:
            unknown.append(key)
        tokens.setdefault(key.lower(), value)
    return tokens, unknown, None


def hosts(value: str) -> list[str]:
    """A host list expanded (``ValueError`` when malformed or empty)."""
    hosts = expand_nodelist(value)
    if not hosts:
        raise ValueError("empty host list")
    return hosts


def parse_topology_conf(
    path: str | Path,
    *,
    cluster: str = "default",
    text: str | None = None,
    valid_from: dt.datetime | None = None,
) -> ParseResult:
    """Read a ``topology.conf`` (tree or block form) into node → domain rows.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster it describes.
        text: the file's content, instead of reading ``path``.
        valid_from: when the map took effect; default :func:`valid_from_of` ``path``.

    Returns:
        Rows with :data:`TOPOLOGY_SCHEMA` (``line_no``: the line naming the domain). ``info``
        has ``form`` (``tree`` or ``block``), ``domains`` and ``block_sizes`` (a list, block
        form with ``BlockSizes`` only).

    Raises:
        InputFormatError: the file cannot be read, or names no switch and no block.
    """
    file, lines = read_text(path, text)
    when = valid_from or valid_from_of(Path(path))
    out = Collected(file)
    form: str | None = None
    switches: dict[str, Switch] = {}
    blocks: dict[str, tuple[int, list[str]]] = {}
    block_sizes: list[int] | None = None
    for first, last, line in _logical_lines(lines):

        def reject(reason: str, field_name: str | None, *, _f: int = first, _l: int = last,
                   _r: str = line) -> None:  # fmt: skip
            out.reject(_f, _r, reason, field_name=field_name, line_end=_l)

        tokens, unknown, stray = _tokens(line)
        if stray is not None:
            reject(f"not a Key=value parameter: {stray!r}", None)
            continue
        if unknown:
            if unknown[0].lower() == "ringname":
                # topology/ring (Slurm 26.05): not a form this reader maps to domains yet
                reject("a ring (RingName, topology/ring) is not read: only the tree "
                       "(SwitchName) and block (BlockName) forms are", unknown[0])  # fmt: skip
            else:
                reject(f"unknown parameter {unknown[0]!r}", unknown[0])
            continue
        if "blocksizes" in tokens and not ({"switchname", "blockname"} & tokens.keys()):
            try:
                block_sizes = [int(v) for v in tokens["blocksizes"].split(",")]
            except ValueError:
                reject(f"not a list of node counts: {tokens['blocksizes']!r}", "BlockSizes")
            continue
        this = "tree" if "switchname" in tokens else "block" if "blockname" in tokens else None
        if this is None:
            reject("neither SwitchName nor BlockName", None)
            continue
        if form is not None and this != form:
            reject(f"a {this} line in a {form} topology (one form per file)",
                   "SwitchName" if this == "tree" else "BlockName")  # fmt: skip
            continue
        form = this
        name = tokens["switchname" if this == "tree" else "blockname"]
        name_field = "SwitchName" if this == "tree" else "BlockName"
        if not name:
            reject("empty name", name_field)
            continue
        if name in switches or name in blocks:
            reject(f"{name!r} is named twice", name_field)
            continue
        try:
            nodes = hosts(tokens["nodes"]) if "nodes" in tokens else []
        except ValueError as err:
            reject(f"bad host list: {err}", "Nodes")
            continue
        if this == "block":
            if not nodes:
                reject("a block without Nodes", "Nodes")
                continue
            blocks[name] = (first, nodes)
            continue
        try:
            children = hosts(tokens["switches"]) if "switches" in tokens else []
        except ValueError as err:
            reject(f"bad switch list: {err}", "Switches")
            continue
        if not nodes and not children:
            reject("a switch with neither Nodes nor Switches", "Nodes")
            continue
        switches[name] = Switch(first, last, line, nodes, children)
    if form is None:
        if out.rejected:
            return out.result(TOPOLOGY_SCHEMA, {"form": None, "domains": 0})
        raise InputFormatError(file, "not a topology.conf: no SwitchName or BlockName line")
    if form == "block":
        block_rows(out, blocks, cluster, when, BLOCK_LEVEL)
        info: dict[str, object] = {"form": form, "domains": len(blocks)}
        if block_sizes is not None:
            info["block_sizes"] = block_sizes
        return out.result(TOPOLOGY_SCHEMA, info)
    redundant = tree_rows(out, switches, cluster, when)
    info = {"form": form, "domains": len(switches) - len(redundant)}
    if redundant:
        info["redundant_switches"] = redundant
    return out.result(TOPOLOGY_SCHEMA, info)


def _row(
    cluster: str, level: str, domain: str, node: str, when: dt.datetime, file: str, line_no: int
) -> dict[str, object]:
    return {"cluster": cluster, "level": level, "domain": domain, "node": node,
            "valid_from": when, "file": file, "line_no": line_no}  # fmt: skip


def block_rows(
    out: Collected,
    blocks: dict[str, tuple[int, list[str]]],
    cluster: str,
    when: dt.datetime,
    level: str,
) -> None:
    """Rows of every block (name → first line, nodes) at ``level``; a node a second block
    names is rejected there."""
    placed: dict[str, str] = {}
    for name, (line_no, nodes) in blocks.items():
        for node in nodes:
            other = placed.setdefault(node, name)
            if other == name:
                out.rows.append(_row(cluster, level, name, node, when, out.file, line_no))
            else:
                _duplicate(out, line_no, name, node, other)


def tree_rows(
    out: Collected,
    switches: dict[str, Switch],
    cluster: str,
    when: dt.datetime,
    prefix: str = "",
    field_names: tuple[str, str] = ("Switches", "Nodes"),
) -> list[str]:
    """Rows of every switch (its height and every node below it, level ``prefix`` +
    ``switch-<height>``); a switch naming an unknown child, or under itself, is rejected
    (field ``field_names[0]``; a node placed twice at a level: ``field_names[1]``).

    A switch with the same child switches and nodes as an earlier one (a redundant parent:
    the SchedMD topology guide's tree with four spines over the same four leaves) is the same
    domain reached over another link: it gets no rows and its nodes are not rejected. Returns
    those switches' names (sorted)."""
    height: dict[str, int] = {}
    below: dict[str, list[str]] = {}
    bad: set[str] = set()

    def walk(name: str, path: tuple[str, ...]) -> bool:
        if name in height:
            return True
        sw = switches[name]
        nodes = list(sw.nodes)
        h = 1
        for child in sw.children:
            if child not in switches or child in bad:
                out.reject(sw.line_no, sw.raw, f"unknown switch {child!r}",
                           field_name=field_names[0], line_end=sw.line_end)  # fmt: skip
                bad.add(name)
                return False
            if child in path:
                out.reject(sw.line_no, sw.raw, f"switch {child!r} is below itself",
                           field_name=field_names[0], line_end=sw.line_end)  # fmt: skip
                bad.add(name)
                return False
            if not walk(child, (*path, child)):
                bad.add(name)
                return False
            h = max(h, height[child] + 1)
            nodes += below[child]
        height[name] = h
        below[name] = list(dict.fromkeys(nodes))
        return True

    for name in switches:
        walk(name, (name,))
    placed: dict[tuple[str, str], str] = {}
    first: dict[tuple[str, frozenset[str], frozenset[str]], str] = {}
    redundant: list[str] = []
    for name, sw in switches.items():
        if name in bad:
            continue
        level = prefix + switch_level(height[name])
        same = (level, frozenset(sw.children), frozenset(sw.nodes))
        if (sw.children or sw.nodes) and first.setdefault(same, name) != name:
            redundant.append(name)
            continue
        for node in below[name]:
            other = placed.setdefault((level, node), name)
            if other == name:
                out.rows.append(_row(cluster, level, name, node, when, out.file, sw.line_no))
            else:
                _duplicate(out, sw.line_no, name, node, other, field_names[1])
    return sorted(redundant)


def _duplicate(
    out: Collected, line_no: int, name: str, node: str, other: str, field_name: str = "Nodes"
) -> None:
    """A node a second domain of the same level names: kept in the first, rejected here."""
    out.reject(line_no, f"{name}: {node}", f"node {node!r} is already in {other!r} at this level",
               field_name=field_name)  # fmt: skip
