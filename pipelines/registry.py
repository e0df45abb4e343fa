"""The allocation registry: the central allocation system's export of teams and their shares.

File format (``data/registry.yaml``)::

    teams:
      - team: vision
        share: 0.10                 # entitlement share of the fleet (0..1)
        slurm_accounts: [vision]    # Slurm accounts that belong to the team
        k8s_namespaces: [vision]    # Kubernetes namespaces
        k8s_local_queues: [lq-vision]
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import yaml

__all__ = ["UNATTRIBUTED", "RegistryError", "empty_registry", "load_registry"]

#: Team of every account or namespace the registry does not name (METRICS.md: never dropped).
UNATTRIBUTED = "unattributed"

_MAP_SCHEMA = {"kind": pl.String(), "key": pl.String(), "team": pl.String()}
_TEAM_SCHEMA = {"team": pl.String(), "share": pl.Float64()}


class RegistryError(ValueError):
    """The registry file is malformed (the message names the file and entry)."""


def empty_registry() -> tuple[pl.DataFrame, pl.DataFrame]:
    """An empty registry: ``(teams, mapping)`` frames with their schemas."""
    return pl.DataFrame(schema=_TEAM_SCHEMA), pl.DataFrame(schema=_MAP_SCHEMA)


def load_registry(path: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read the allocation registry.

    Args:
        path: the YAML file; a missing file gives an empty registry (every team unattributed).

    Returns:
        ``teams`` (team, share) and ``mapping`` (kind ∈ {slurm_account, k8s_namespace,
        k8s_local_queue}, key, team).

    Raises:
        RegistryError: the file is not a mapping with a ``teams`` list of ``team``/``share`` items.
    """
    p = Path(path)
    if not p.exists():
        return empty_registry()
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise RegistryError(f"{p}: not valid YAML: {exc}") from exc
    items = doc.get("teams") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise RegistryError(f"{p}: expected a mapping with a 'teams' list")
    teams: list[dict[str, object]] = []
    mapping: list[dict[str, object]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "team" not in item:
            raise RegistryError(f"{p}: teams[{i}]: each entry needs a 'team'")
        team = str(item["team"])
        try:
            share = float(item.get("share", 0.0))
        except (TypeError, ValueError) as exc:
            raise RegistryError(f"{p}: teams[{i}] ({team}): share is not a number") from exc
        if share < 0:
            raise RegistryError(f"{p}: teams[{i}] ({team}): share must be >= 0")
        teams.append({"team": team, "share": share})
        for kind, field in (
            ("slurm_account", "slurm_accounts"),
            ("k8s_namespace", "k8s_namespaces"),
            ("k8s_local_queue", "k8s_local_queues"),
        ):
            for key in item.get(field, []) or []:
                mapping.append({"kind": kind, "key": str(key), "team": team})
    return pl.DataFrame(teams, schema=_TEAM_SCHEMA), pl.DataFrame(mapping, schema=_MAP_SCHEMA)
