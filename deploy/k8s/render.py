"""Render the ConfigMaps of deploy/k8s from the files they carry.

``manifests/configmaps.yaml`` holds three ConfigMaps built from files of this repository, so the
cluster never runs a copy that drifted from them:

- ``goodput-config``: the repository's ``goodput.toml`` with the ``[warehouse]`` paths moved onto
  the ``goodput-warehouse`` volume (``/data/...``): paths in the file are relative to it, and it
  is mounted read-only at ``/etc/goodput``;
- ``goodput-dagster-instance``: ``deploy/k8s/dagster.k8s.yaml`` as ``dagster.yaml``;
- ``goodput-workspace``: the webserver's and daemon's ``workspace.yaml`` (the code location's
  gRPC service).

Usage: ``python deploy/k8s/render.py`` rewrites the file; ``--check`` exits 1 when it is stale
(the test runs the same comparison).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = HERE / "manifests" / "configmaps.yaml"
NAMESPACE = "goodput"
LABELS = {"app.kubernetes.io/part-of": "goodput"}

#: [warehouse] keys whose relative paths move onto the warehouse volume, and where to.
WAREHOUSE_PATHS = {
    "path": "/data/warehouse.duckdb",
    "serving_path": "/data/serving.duckdb",
    "inputs": "/data/inputs",
    "inventory": "/data/inventory",
    "registry": "/data/registry.yaml",
}

WORKSPACE = {
    "load_from": [
        {
            "grpc_server": {
                "host": "goodput-code",
                "port": 4000,
                "location_name": "goodput",
            }
        }
    ]
}


def cluster_toml(text: str) -> str:
    """``goodput.toml`` with the ``[warehouse]`` paths of :data:`WAREHOUSE_PATHS` replaced.

    Raises:
        ValueError: a key of :data:`WAREHOUSE_PATHS` is not in the file's ``[warehouse]`` table.
    """
    out: list[str] = []
    section = ""
    done: set[str] = set()
    for line in text.splitlines():
        head = re.match(r"^\s*\[([^\]]+)\]\s*$", line)
        if head:
            section = head.group(1).strip()
        key = re.match(r"^(\s*)([A-Za-z_]+)(\s*=\s*)\"[^\"]*\"(.*)$", line)
        if section == "warehouse" and key and key.group(2) in WAREHOUSE_PATHS:
            name = key.group(2)
            line = f'{key.group(1)}{name}{key.group(3)}"{WAREHOUSE_PATHS[name]}"{key.group(4)}'
            done.add(name)
        out.append(line)
    missing = set(WAREHOUSE_PATHS) - done
    if missing:
        raise ValueError(f"goodput.toml [warehouse] lacks {sorted(missing)}")
    rendered = "\n".join(out) + "\n"
    parsed = tomllib.loads(rendered)
    assert all(parsed["warehouse"][k] == v for k, v in WAREHOUSE_PATHS.items())
    return rendered


def _config_map(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": dict(LABELS)},
        "data": data,
    }


def _literal(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so the ConfigMaps read like the files they hold."""


_Dumper.add_representer(str, _literal)


def render() -> str:
    """The text of ``manifests/configmaps.yaml``."""
    docs = [
        _config_map(
            "goodput-config",
            {"goodput.toml": cluster_toml((ROOT / "goodput.toml").read_text(encoding="utf-8"))},
        ),
        _config_map(
            "goodput-dagster-instance",
            {"dagster.yaml": (HERE / "dagster.k8s.yaml").read_text(encoding="utf-8")},
        ),
        _config_map(
            "goodput-workspace",
            {"workspace.yaml": yaml.safe_dump(WORKSPACE, sort_keys=False)},
        ),
    ]
    header = (
        "# Rendered by deploy/k8s/render.py from goodput.toml and dagster.k8s.yaml: do not edit.\n"
    )
    body = yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, width=100)
    return header + body


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is stale: run python deploy/k8s/render.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
