"""Parse Slurm's ``topology.yaml`` (Slurm 25.05 and later: several named topologies in one
file) into the same node → domain rows as ``topology.conf`` (:mod:`._topology_conf`).

Each list item is a topology: ``topology`` (its name), ``cluster_default`` and exactly one of
``tree`` (``switches``: ``switch`` with ``children`` or ``nodes``), ``block`` (``block_sizes``,
``blocks``: ``block`` with ``nodes``) or ``flat`` (no domains, no rows). The cluster-default
topology's levels are named as in ``topology.conf`` (``switch-1``…, ``block``), so a cluster
moving from one file to the other keeps its levels; any other topology's levels carry its name
(``topo2/block``). An item or entry that cannot be read is a rejected row naming its line and
field; the others load.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

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

__all__ = ["parse_topology_yaml"]

_LINE = "__line__"


class _LineLoader(yaml.SafeLoader):
    """A safe loader that records each mapping's first line under ``__line__``."""


def _mapping_with_line(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    mapping[_LINE] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


def _text(value: object) -> str | None:
    return str(value) if isinstance(value, str | int) and str(value) != "" else None


def _raw(entry: object) -> str:
    """An entry as text for ``rejected.raw`` (without the recorded line)."""
    if isinstance(entry, dict):
        return str({k: v for k, v in entry.items() if k != _LINE})
    return str(entry)


def _line(item: object, default: int) -> int:
    return int(item.get(_LINE, default)) if isinstance(item, dict) else default


def _named(
    out: Collected, entry: object, key: str, default_line: int, seen: Mapping[str, object]
) -> tuple[int, str, str] | None:
    """A switch or block entry's line, raw text (without the line marker) and name (its
    ``key``), or None after rejecting an entry without a name or with one already ``seen``."""
    no = _line(entry, default_line)
    if not isinstance(entry, dict):
        out.reject(no, str(entry), f"a {key} without a name", field_name=key)
        return None
    raw = str({k: v for k, v in entry.items() if k != _LINE})
    name = _text(entry.get(key))
    if name is None:
        out.reject(no, raw, f"a {key} without a name", field_name=key)
        return None
    if name in seen:
        out.reject(no, raw, f"{name!r} is named twice", field_name=key)
        return None
    return no, raw, name


def _tree(out: Collected, topo: dict[str, Any], cluster: str, when: dt.datetime,
          prefix: str) -> list[str]:  # fmt: skip
    """Rows of a tree topology's switches; returns the redundant parents' names (``tree_rows``)."""
    tree = topo.get("tree")
    entries = tree.get("switches") if isinstance(tree, dict) else None
    if not isinstance(entries, list):
        out.reject(_line(topo, 1), str(topo.get("topology")), "tree without a switches list",
                   field_name="tree.switches")  # fmt: skip
        return []
    switches: dict[str, Switch] = {}
    for entry in entries:
        named = _named(out, entry, "switch", _line(topo, 1), switches)
        if named is None:
            continue
        no, raw, name = named
        try:
            nodes = hosts(str(entry["nodes"])) if entry.get("nodes") else []
        except ValueError as err:
            out.reject(no, raw, f"bad host list: {err}", field_name="nodes")
            continue
        try:
            children = hosts(str(entry["children"])) if entry.get("children") else []
        except ValueError as err:
            out.reject(no, raw, f"bad switch list: {err}", field_name="children")
            continue
        if not nodes and not children:
            out.reject(no, raw, "a switch with neither nodes nor children", field_name="nodes")
            continue
        switches[name] = Switch(no, no, raw, nodes, children)
    return tree_rows(out, switches, cluster, when, prefix, ("children", "nodes"))


def _block(out: Collected, topo: dict[str, Any], cluster: str, when: dt.datetime,
           prefix: str) -> list[int] | None:  # fmt: skip
    block = topo.get("block")
    entries = block.get("blocks") if isinstance(block, dict) else None
    if not isinstance(block, dict) or not isinstance(entries, list):
        out.reject(_line(topo, 1), str(topo.get("topology")), "block without a blocks list",
                   field_name="block.blocks")  # fmt: skip
        return None
    blocks: dict[str, tuple[int, list[str]]] = {}
    for entry in entries:
        named = _named(out, entry, "block", _line(block, 1), blocks)
        if named is None:
            continue
        no, raw, name = named
        try:
            nodes = hosts(str(entry.get("nodes") or ""))
        except ValueError as err:
            out.reject(no, raw, f"bad host list: {err}", field_name="nodes")
            continue
        blocks[name] = (no, nodes)
    block_rows(out, blocks, cluster, when, prefix + BLOCK_LEVEL)
    sizes = block.get("block_sizes")
    if isinstance(sizes, list) and all(isinstance(x, int) for x in sizes):
        return [int(x) for x in sizes]
    return None


def parse_topology_yaml(
    path: str | Path,
    *,
    cluster: str = "default",
    text: str | None = None,
    valid_from: dt.datetime | None = None,
) -> ParseResult:
    """Read a ``topology.yaml`` into node → domain rows (:data:`TOPOLOGY_SCHEMA`).

    Args:
        path: the file (also the ``file`` label when ``text`` is given).
        cluster: the cluster it describes.
        text: the file's content, instead of reading ``path``.
        valid_from: when the map took effect; default the day in the file's name, else its
            modification time.

    Returns:
        Rows of every tree and block topology (levels of the first ``cluster_default: true``
        topology unprefixed, of the others prefixed ``<name>/``). ``info`` has ``form``
        (``yaml``), ``topologies`` (name → ``tree``, ``block`` or ``flat``), ``default`` and
        ``block_sizes`` (name → list, for block topologies that give them) and
        ``redundant_switches`` (name → the tree's redundant parents, as ``topology.conf``'s
        info lists them; only for trees that have some).

    Raises:
        InputFormatError: the file cannot be read, is not YAML, or is not a list of topologies.
    """
    file, lines = read_text(path, text)
    when = valid_from or valid_from_of(Path(path))
    try:
        doc = yaml.load("\n".join(lines), Loader=_LineLoader)  # a SafeLoader subclass
    except yaml.YAMLError as err:
        raise InputFormatError(file, f"not YAML: {err}") from err
    if not isinstance(doc, list) or not any(isinstance(t, dict) and "topology" in t for t in doc):
        raise InputFormatError(file, "not a topology.yaml: no list of `- topology:` items")
    out = Collected(file)
    topologies = [t for t in doc if isinstance(t, dict)]
    default = next((t.get("topology") for t in topologies if t.get("cluster_default") is True),
                   None)  # fmt: skip
    kinds: dict[str, str] = {}
    block_sizes: dict[str, list[int]] = {}
    redundant: dict[str, list[str]] = {}
    for topo in doc:
        if not isinstance(topo, dict) or _text(topo.get("topology")) is None:
            out.reject(_line(topo, 1), str(topo), "not a named topology", field_name="topology")
            continue
        name = str(topo["topology"])
        forms = [f for f in ("tree", "block", "flat") if f in topo]
        if len(forms) != 1:
            others = [
                str(k)
                for k in topo
                if k not in ("topology", "cluster_default", *forms) and not str(k).startswith("__")
            ]
            named = forms + others
            reason = (
                f"needs exactly one of tree, block, flat; it names {', '.join(named)}"
                if named
                else "needs exactly one of tree, block, flat; it names none"
            )
            if others and not forms:
                reason += " (ring and torus3d topologies are not read)"
            out.reject(_line(topo, 1), name, reason, field_name="topology")
            continue
        kinds[name] = forms[0]
        prefix = "" if name == default else f"{name}/"
        if forms[0] == "tree":
            spares = _tree(out, topo, cluster, when, prefix)
            if spares:
                redundant[name] = spares
        elif forms[0] == "block":
            sizes = _block(out, topo, cluster, when, prefix)
            if sizes is not None:
                block_sizes[name] = sizes
    info: dict[str, object] = {"form": "yaml", "topologies": kinds, "default": default}
    if block_sizes:
        info["block_sizes"] = block_sizes
    if redundant:
        info["redundant_switches"] = redundant
    return out.result(TOPOLOGY_SCHEMA, info)
