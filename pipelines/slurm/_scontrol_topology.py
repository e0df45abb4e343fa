"""Parse ``scontrol show topology`` output into the node → domain rows of ``topology.conf``
(:mod:`._topology_conf`), so a cluster whose ``topology.conf`` is not at hand is mapped from
what slurmctld holds.

The output is one line per switch or block, as slurmctld prints it (``SwitchName=%s Level=%u
LinkSpeed=%u`` then `` Nodes=%s`` and `` Switches=%s`` when set, in Slurm's
``src/api/topo_info.c`` and, from 23.11, ``src/plugins/topology/{tree,block}``)::

    SwitchName=s0 Level=0 LinkSpeed=1 Nodes=gpu-[001-002]
    SwitchName=s2 Level=1 LinkSpeed=1 Nodes=gpu-[001-004] Switches=s[0-1]
    BlockName=b1 BlockIndex=0 Nodes=node[1-32]

A switch above others lists every node below it as well as its child switches. Levels are
named as for ``topology.conf``: a switch's level is ``switch-<height>`` with height one more
than its highest child (Slurm's ``Level=`` counts from 0 at the leaves, so ``Level=N`` is
``switch-<N+1>`` for a tree Slurm built); blocks are level ``block``. A line that cannot be
read (not ``Key=value``, an unknown key, a bad host list, a switch naming an unknown child,
tree and block lines in one output) is a rejected row naming its line and field;
``No topology information available`` (no topology plugin) is an empty map, not an error.

``valid_from``: the day in the file's name, else its modification time, as for
``topology.conf``: the output is a snapshot of the map in force when it was taken.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Final

from pipelines._parse_result import InputFormatError, ParseResult
from pipelines.slurm._text import Collected, read_text
from pipelines.slurm._topology_conf import (
    BLOCK_LEVEL,
    TOPOLOGY_SCHEMA,
    Switch,
    block_rows,
    hosts,
    tree_rows,
    valid_from_of,
)

__all__ = ["parse_scontrol_topology"]

#: Keys ``scontrol show topology`` prints (lower case); ``Level``, ``LinkSpeed``,
#: ``BlockIndex`` and ``BlockSize`` are read past (the level follows from the tree).
_KEYS: Final = {"switchname", "level", "linkspeed", "nodes", "switches", "blockname",
                "blockindex", "blocksize"}  # fmt: skip
#: What scontrol prints when no topology plugin is configured.
_NO_TOPOLOGY: Final = "No topology information available"


def parse_scontrol_topology(
    path: str | Path,
    *,
    cluster: str = "default",
    text: str | None = None,
    valid_from: dt.datetime | None = None,
) -> ParseResult:
    """Read ``scontrol show topology`` output into node → domain rows.

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster it describes.
        text: the output, instead of reading ``path``.
        valid_from: when the map took effect; default :func:`valid_from_of` ``path``.

    Returns:
        Rows with :data:`TOPOLOGY_SCHEMA` (``line_no``: the line naming the domain); ``info``
        has ``form`` (``tree``, ``block`` or None when the output names no switch and no
        block), ``domains`` and ``source`` = ``"scontrol show topology"``.

    Raises:
        InputFormatError: the file cannot be read, or has text but no switch or block line
            and no readable line at all.
    """
    file, lines = read_text(path, text)
    when = valid_from or valid_from_of(Path(path))
    out = Collected(file)
    form: str | None = None
    switches: dict[str, Switch] = {}
    blocks: dict[str, tuple[int, list[str]]] = {}
    empty = True
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        empty = False
        if line.startswith(_NO_TOPOLOGY):
            continue
        tokens: dict[str, str] = {}
        bad: str | None = None
        for token in line.split():
            key, sep, value = token.partition("=")
            if not sep or not key:
                bad = f"not a Key=value field: {token!r}"
                break
            if key.lower() not in _KEYS:
                bad = f"unknown field {key!r}"
                break
            tokens.setdefault(key.lower(), value)
        if bad is not None:
            out.reject(no, raw, bad, field_name=None)
            continue
        this = "tree" if "switchname" in tokens else "block" if "blockname" in tokens else None
        if this is None:
            out.reject(no, raw, "neither SwitchName nor BlockName", field_name=None)
            continue
        name_field = "SwitchName" if this == "tree" else "BlockName"
        if form is not None and this != form:
            out.reject(no, raw, f"a {this} line in a {form} topology", field_name=name_field)
            continue
        name = tokens["switchname" if this == "tree" else "blockname"]
        if not name or name in switches or name in blocks:
            why = "empty name" if not name else f"{name!r} is named twice"
            out.reject(no, raw, why, field_name=name_field)
            continue
        form = this
        try:
            nodes = hosts(tokens["nodes"]) if tokens.get("nodes") else []
            children = hosts(tokens["switches"]) if tokens.get("switches") else []
        except ValueError as err:
            which = "Nodes" if "nodes" in tokens else "Switches"
            out.reject(no, raw, f"bad host list: {err}", field_name=which)
            continue
        if this == "block":
            if not nodes:
                out.reject(no, raw, "a block without Nodes", field_name="Nodes")
                continue
            blocks[name] = (no, nodes)
        elif not nodes and not children:
            out.reject(no, raw, "a switch with neither Nodes nor Switches", field_name="Nodes")
        else:
            switches[name] = Switch(no, no, raw, nodes, children)
    if empty:
        raise InputFormatError(file, "empty: not scontrol show topology output")
    info: dict[str, object] = {"form": form, "source": "scontrol show topology"}
    if form == "block":
        block_rows(out, blocks, cluster, when, BLOCK_LEVEL)
        info["domains"] = len(blocks)
    elif form == "tree":
        redundant = tree_rows(out, switches, cluster, when)
        info["domains"] = len(switches) - len(redundant)
        if redundant:
            info["redundant_switches"] = redundant
    else:
        info["domains"] = 0
    return out.result(TOPOLOGY_SCHEMA, info)
