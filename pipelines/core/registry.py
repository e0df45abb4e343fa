"""The allocation registry: the central allocation system's export of teams and their shares.

File format (``data/registry.yaml``)::

    teams:
      - team: vision
        share: 0.10                 # entitlement share (0..1): since forever, in every pool
        slurm_accounts: [vision]    # Slurm accounts that belong to the team
        k8s_namespaces: [vision]    # Kubernetes namespaces
        k8s_local_queues: [lq-vision]
      - team: nlp
        shares:                     # the share's history, per GPU pool
          - {share: 0.10}                                    # since forever, every pool
          - {valid_from: 2026-11-16, share: 0.20}            # from that day, every pool
          - {valid_from: 2026-11-01, share: 0.30, pool: h100}  # GPU pool h100 only
        slurm_accounts: [nlp]
    history:                        # optional: changes listed apart from the teams
      - {team: vision, valid_from: 2026-11-20, share: 0.12}

Share entries (``share:`` on the team, each item of ``shares:``, each item of ``history:``) have

- ``share``: a fraction ≥ 0 (weights of the water-filling: they need not sum to 1);
- ``valid_from`` (optional): a date (00:00 UTC) or UTC datetime from which the share applies,
  until the next ``valid_from`` of the same team and pool (``valid_to``); without it the share
  applies since forever;
- ``pool`` (optional, default ``all``): the GPU pool the share applies to: ``all``, a cluster
  name, or a GPU type (the inventory's ``gpu_type``, e.g. ``a100``).

The simple form (one ``share`` per team) is the same as one entry without ``valid_from`` in pool
``all``. Two entries of a team with the same pool and ``valid_from`` are an error.

``slurm_accounts``, ``k8s_namespaces`` and ``k8s_local_queues`` are lists of names (one name
may be written alone: ``slurm_accounts: research``), read as written (``0123`` and ``no`` are
names, not the numbers and booleans of YAML 1.1). A name listed under two teams is an error
(a job would count for one team and the registry's share for both), as is a key the format does
not know (``slurm_account:`` would otherwise be ignored and leave the team's jobs
``unattributed``).

Which pool's history a cluster uses (:func:`cluster_shares`): the metric engine water-fills per
cluster, so per team and cluster, at each instant, the most specific pool with an entry in effect
wins: the cluster's name, else the cluster's GPU type (when all its GPU nodes are of that one
type; without regard to case), else ``all``; before a more specific pool's first entry the less
specific one holds.
"""

from __future__ import annotations

import datetime as dt
import difflib
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from metrics.data_quality import DATA_QUALITY_SCHEMA
from metrics.schema import UTC_DATETIME

__all__ = [
    "ALL_POOLS",
    "HISTORY_SCHEMA",
    "UNATTRIBUTED",
    "RegistryError",
    "cluster_shares",
    "empty_registry",
    "load_registry",
    "load_registry_history",
    "share_in_effect",
    "shares_at_window_start",
    "unmatched_pools",
]

#: Team of every account or namespace the registry does not name (METRICS.md: never dropped).
UNATTRIBUTED = "unattributed"
#: The pool of a share that applies in every GPU pool.
ALL_POOLS = "all"
#: ``valid_from`` of an entry without one (since forever) when the engine needs a time.
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

_MAP_SCHEMA = {"kind": pl.String(), "key": pl.String(), "team": pl.String()}
_TEAM_SCHEMA = {"team": pl.String(), "share": pl.Float64()}
_UTC = UTC_DATETIME
#: :func:`load_registry_history` columns: ``valid_from``/``valid_to`` NULL = since/until forever.
HISTORY_SCHEMA: dict[str, pl.DataType] = {
    "team": pl.String(),
    "pool": pl.String(),
    "share": pl.Float64(),
    "valid_from": _UTC,
    "valid_to": _UTC,
}
_ENGINE_SCHEMA: dict[str, pl.DataType] = {
    "team": pl.String(),
    "pool": pl.String(),
    "share": pl.Float64(),
    "valid_from": _UTC,
}


class RegistryError(ValueError):
    """The registry file is malformed (the message names the file and entry)."""


def empty_registry() -> tuple[pl.DataFrame, pl.DataFrame]:
    """An empty registry: ``(teams, mapping)`` frames with their schemas."""
    return pl.DataFrame(schema=_TEAM_SCHEMA), pl.DataFrame(schema=_MAP_SCHEMA)


class _NamesAsWritten(yaml.SafeLoader):
    """YAML's safe loader with every plain scalar kept as written but null: an account
    ``0123`` stays ``0123`` (YAML 1.1 reads it as the octal 83), a namespace ``no`` stays
    ``no`` (not False), a team ``2024`` stays a name. Shares and dates are read from the text
    by :func:`_share_value` and :func:`_valid_from`. A key written twice in one mapping (where
    YAML keeps the last, silently) is an error naming its line."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"found the key {key!r} twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_NamesAsWritten.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag == "tag:yaml.org,2002:null"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _read_doc(p: Path) -> dict[str, Any] | None:
    if not p.exists():
        return None
    try:
        doc = yaml.load(p.read_text(encoding="utf-8"), Loader=_NamesAsWritten) or {}
    except UnicodeDecodeError as exc:
        raise RegistryError(f"{p}: not UTF-8 text ({exc.reason})") from exc
    except OSError as exc:  # a folder, or a file that cannot be read
        raise RegistryError(f"{p}: cannot be read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise RegistryError(f"{p}: not valid YAML: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("teams"), list):
        raise RegistryError(f"{p}: expected a mapping with a 'teams' list")
    _known_keys(doc, _DOC_KEYS, str(p))
    return doc


#: The keys of the document, and of each entry of ``teams``: anything else is a typo that would
#: otherwise be ignored (``slurm_account:`` leaving the team's jobs unattributed).
_DOC_KEYS = frozenset({"teams", "history"})
_TEAM_KEYS = frozenset(
    {"team", "share", "shares", "slurm_accounts", "k8s_namespaces", "k8s_local_queues"}
)


def _known_keys(item: dict[Any, Any], known: frozenset[str], where: str) -> None:
    """Raise :class:`RegistryError` for a key of ``item`` not in ``known`` (named, with the
    nearest known key when one is close)."""
    for key in item:
        if key not in known:
            near = difflib.get_close_matches(str(key), sorted(known), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise RegistryError(f"{where}: unknown key {key!r}{hint}")


def _names(value: object, where: str) -> list[str]:
    """The names of an account, namespace or LocalQueue list: a YAML list of names, or one name
    written alone (``slurm_accounts: research``; iterating the string would give its letters).

    Raises:
        RegistryError: a name is empty or not a scalar.
    """
    items = [value] if isinstance(value, str | int) and not isinstance(value, bool) else value
    if value is None:
        return []
    if not isinstance(items, list) or not all(
        isinstance(v, str | int) and not isinstance(v, bool) and str(v) for v in items
    ):
        raise RegistryError(f"{where}: must be a list of names, not {value!r}")
    return [str(v) for v in items]


def _share_value(value: object, where: str) -> float:
    if isinstance(value, bool):
        raise RegistryError(f"{where}: share is not a number")
    try:
        share = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise RegistryError(f"{where}: share is not a number") from exc
    if not share >= 0:  # also rejects NaN
        raise RegistryError(f"{where}: share must be >= 0")
    if share == float("inf"):
        raise RegistryError(f"{where}: share must be a finite number")
    return share


def _valid_from(value: object, where: str) -> dt.datetime | None:
    """A date (00:00 UTC) or datetime (naive = UTC) → UTC datetime; None = since forever."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError as exc:
            raise RegistryError(f"{where}: valid_from {value!r} is not a date") from exc
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    raise RegistryError(f"{where}: valid_from {value!r} is not a date")


def _entry(item: object, team: str, where: str) -> dict[str, object]:
    if not isinstance(item, dict) or "share" not in item:
        raise RegistryError(f"{where}: each share entry needs a 'share'")
    unknown = set(item) - {"team", "share", "valid_from", "pool"}
    if unknown:
        raise RegistryError(f"{where}: unknown key(s) {sorted(unknown)}")
    pool = item.get("pool", ALL_POOLS)
    if not isinstance(pool, str) or not pool:
        raise RegistryError(f"{where}: pool must be a non-empty name")
    return {
        "team": team,
        "pool": pool,
        "share": _share_value(item["share"], where),
        "valid_from": _valid_from(item.get("valid_from"), where),
    }


def _parse(p: Path, doc: dict[str, Any]) -> tuple[list[dict[str, object]], pl.DataFrame]:
    """Share entries (team, pool, share, valid_from) in file order, and the mapping."""
    entries: list[dict[str, object]] = []
    mapping: list[dict[str, object]] = []
    names: list[str] = []
    owner: dict[tuple[str, str], str] = {}
    for i, item in enumerate(doc["teams"]):
        if not isinstance(item, dict) or "team" not in item:
            raise RegistryError(f"{p}: teams[{i}]: each entry needs a 'team'")
        if item["team"] is None or str(item["team"]).strip() == "":
            raise RegistryError(f"{p}: teams[{i}]: 'team' needs a name")
        team = str(item["team"])
        where = f"{p}: teams[{i}] ({team})"
        _known_keys(item, _TEAM_KEYS, where)
        if team in names:
            raise RegistryError(f"{where}: team listed twice")
        names.append(team)
        if "share" in item or "shares" not in item:
            entries.append(
                {
                    "team": team,
                    "pool": ALL_POOLS,
                    "share": _share_value(item.get("share", 0.0), where),
                    "valid_from": None,
                }
            )
        hist = item.get("shares")
        if hist is not None:
            if not isinstance(hist, list):
                raise RegistryError(f"{where}: 'shares' must be a list")
            entries += [_entry(e, team, f"{where}: shares[{j}]") for j, e in enumerate(hist)]
        for kind, field in (
            ("slurm_account", "slurm_accounts"),
            ("k8s_namespace", "k8s_namespaces"),
            ("k8s_local_queue", "k8s_local_queues"),
        ):
            for name in _names(item.get(field), f"{where}: {field}"):
                other = owner.setdefault((kind, name), team)
                if other != team:
                    raise RegistryError(
                        f"{where}: {field}: {name!r} is also listed under team {other!r}"
                        " (a job would count for one team, the registry's share for both)"
                    )
                mapping.append({"kind": kind, "key": name, "team": team})
    history = doc.get("history")
    if history is not None:
        if not isinstance(history, list):
            raise RegistryError(f"{p}: 'history' must be a list")
        for k, e in enumerate(history):
            team = str(e.get("team")) if isinstance(e, dict) else "?"
            where = f"{p}: history[{k}] ({team})"
            if team not in names:
                raise RegistryError(f"{where}: team is not in 'teams'")
            entries.append(_entry(e, team, where))
    seen: set[tuple[object, ...]] = set()
    for e in entries:
        key = (e["team"], e["pool"], e["valid_from"])
        if key in seen:
            vf = e["valid_from"] or "since forever"
            raise RegistryError(f"{p}: team {e['team']}: two shares for pool {e['pool']} from {vf}")
        seen.add(key)
    return entries, pl.DataFrame(mapping, schema=_MAP_SCHEMA)


def load_registry_history(path: str | Path) -> pl.DataFrame:
    """Read the registry's share history: one row per share entry.

    Args:
        path: the YAML file (format in the module docstring); a missing file gives no rows.

    Returns:
        ``team, pool, share, valid_from, valid_to`` (:data:`HISTORY_SCHEMA`): share is a
        fraction; ``valid_from`` NULL = since forever; ``valid_to`` = the next ``valid_from`` of
        the same team and pool (exclusive), NULL = still in effect. Sorted by team, pool,
        valid_from (NULL first).

    Raises:
        RegistryError: malformed file or entry (names the file and the entry): no ``teams``
            list, a team without ``team``, a share that is not a number ≥ 0, a ``valid_from``
            that is not a date, an unknown key, a ``history`` item for an unknown team, or two
            entries of a team for the same pool and ``valid_from``.
    """
    p = Path(path)
    doc = _read_doc(p)
    if doc is None:
        return pl.DataFrame(schema=HISTORY_SCHEMA)
    entries, _ = _parse(p, doc)
    frame = pl.DataFrame(
        entries, schema={k: v for k, v in HISTORY_SCHEMA.items() if k != "valid_to"}
    )
    return (
        frame.sort("team", "pool", "valid_from", nulls_last=False)
        .with_columns(pl.col("valid_from").shift(-1).over("team", "pool").alias("valid_to"))
        .select(list(HISTORY_SCHEMA))
    )


def share_in_effect(history: pl.DataFrame, at: dt.datetime) -> pl.DataFrame:
    """Each team's fleet share at ``at``: ``team, share`` (one row per team of ``history``).

    The pool-``all`` entry in effect at ``at``; a team with no ``all`` entry in effect gets the
    mean of its pool entries in effect; a team with nothing in effect gets 0.0.

    Args:
        history: :func:`load_registry_history` output.
        at: the instant (naive = UTC).
    """
    at = at.replace(tzinfo=dt.UTC) if at.tzinfo is None else at.astimezone(dt.UTC)
    live = history.filter(
        (pl.col("valid_from").is_null() | (pl.col("valid_from") <= at))
        & (pl.col("valid_to").is_null() | (pl.col("valid_to") > at))
    )
    per_team = live.group_by("team").agg(
        pl.when((pl.col("pool") == ALL_POOLS).any())
        .then(pl.col("share").filter(pl.col("pool") == ALL_POOLS).first())
        .otherwise(pl.col("share").mean())
        .alias("share")
    )
    teams = history.select("team").unique(maintain_order=True)
    return (
        teams.join(per_team, on="team", how="left")
        .with_columns(pl.col("share").fill_null(0.0))
        .select(pl.col("team").cast(pl.String), pl.col("share").cast(pl.Float64))
    )


def load_registry(
    path: str | Path, *, at: dt.datetime | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read the allocation registry: the shares in effect now, and the team mapping.

    Args:
        path: the YAML file; a missing file gives an empty registry (every team unattributed).
        at: the instant whose shares are returned (default: now, UTC); see
            :func:`share_in_effect` for teams with per-pool or future shares.

    Returns:
        ``teams`` (team, share: one row per team, in file order) and ``mapping`` (kind ∈
        {slurm_account, k8s_namespace, k8s_local_queue}, key, team).

    Raises:
        RegistryError: as :func:`load_registry_history`.
    """
    p = Path(path)
    doc = _read_doc(p)
    if doc is None:
        return empty_registry()
    entries, mapping = _parse(p, doc)
    history = load_registry_history(p)
    current = share_in_effect(history, at or dt.datetime.now(dt.UTC))
    order = pl.DataFrame(
        {"team": list(dict.fromkeys(str(e["team"]) for e in entries))}, schema={"team": pl.String()}
    )
    teams = order.join(current, on="team", how="left").with_columns(pl.col("share").fill_null(0.0))
    return teams.select(list(_TEAM_SCHEMA)), mapping


def cluster_shares(history: pl.DataFrame, nodes: pl.DataFrame) -> pl.DataFrame:
    """The share history per cluster, for the metric engine's per-cluster water-filling.

    Per team and cluster, at each instant the most specific pool with an entry in effect is
    used: the cluster's name, else the cluster's GPU type (when every GPU node of the cluster in
    ``nodes`` has that one ``gpu_type``; matched without regard to case, as ``H100`` and
    ``h100`` name one GPU), else ``all``. Before a more specific pool's first entry the less
    specific one holds (a team with ``all`` shares since forever and an ``h100`` share from
    2026-11-01 has its ``all`` share on an h100 cluster until then, not none); from it on, the
    more specific pool's entries hold, whatever ``all`` does later.

    Args:
        history: :func:`load_registry_history` output.
        nodes: ``cluster, gpu_type`` and optionally ``gpus`` (``core.nodes``; GPU-less nodes
            are left out of the type test); every cluster named here gets rows.

    Returns:
        ``team, pool, share, valid_from`` with ``pool`` = the cluster and ``valid_from`` a UTC
        datetime (since forever = 1970-01-01), one row per change of the share: the ``shares``
        argument of :func:`metrics.fairness.fair_share_hourly`.
    """
    if history.height == 0 or nodes.height == 0:
        return pl.DataFrame(schema=_ENGINE_SCHEMA)
    clusters = _cluster_types(nodes)
    candidates = (
        history.join(clusters, how="cross")
        .with_columns(
            _POOL_RANK.alias("_rank"), pl.col("valid_from").fill_null(pl.lit(_EPOCH, dtype=_UTC))
        )
        .filter(pl.col("_rank") > 0)
        .select("team", "cluster", "_rank", "valid_from", "share")
    )
    # Each instant a share may change (any candidate entry's start), with every entry in effect
    # then; the most specific pool among them, and its latest entry, give the share.
    at = candidates.select("team", "cluster", pl.col("valid_from").alias("_at")).unique()
    team_cluster = ["team", "cluster", "_at"]
    chosen = (
        at.join(candidates, on=["team", "cluster"])
        .filter(pl.col("valid_from") <= pl.col("_at"))
        .filter(pl.col("_rank") == pl.col("_rank").max().over(team_cluster))
        .filter(pl.col("valid_from") == pl.col("valid_from").max().over(team_cluster))
        .sort("cluster", "team", "_at")
    )
    return (
        chosen.filter(pl.col("share").ne_missing(pl.col("share").shift(1).over("cluster", "team")))
        .select("team", pl.col("cluster").alias("pool"), "share", pl.col("_at").alias("valid_from"))
        .sort("pool", "team", "valid_from")
    )


#: How specifically an entry's ``pool`` names a row's ``cluster`` (with its lower-case
#: ``gpu_type`` from :func:`_cluster_types`): 3 its name, 2 its GPU type (in any case), 1
#: ``all``, 0 not at all. :func:`cluster_shares` and :func:`unmatched_pools` both match by it.
_POOL_RANK = (
    pl.when(pl.col("pool") == pl.col("cluster"))
    .then(3)
    .when(pl.col("pool").str.to_lowercase() == pl.col("gpu_type"))
    .then(2)
    .when(pl.col("pool") == ALL_POOLS)
    .then(1)
    .otherwise(0)
)


def _cluster_types(nodes: pl.DataFrame) -> pl.DataFrame:
    """``cluster, gpu_type``: every cluster of ``nodes``, with its GPU nodes' one type in lower
    case (NULL where they have several, or none); GPU-less nodes are left out of the test."""
    gpu_nodes = nodes.filter(pl.col("gpus").fill_null(1) > 0) if "gpus" in nodes.columns else nodes
    types = gpu_nodes.group_by("cluster").agg(
        pl.when(pl.col("gpu_type").str.to_lowercase().n_unique() == 1)
        .then(pl.col("gpu_type").str.to_lowercase().first())
        .alias("gpu_type")
    )
    return nodes.select("cluster").unique().join(types, on="cluster", how="left")


def unmatched_pools(history: pl.DataFrame, nodes: pl.DataFrame) -> pl.DataFrame:
    """The registry's pools that no cluster uses: shares that apply nowhere.

    A pool other than ``all`` applies to a cluster of that name, or to a cluster whose GPU nodes
    all have that ``gpu_type`` (without regard to case), as :func:`cluster_shares` uses them. A
    misspelt pool (``h100x``), a GPU type no cluster has, or the type of a cluster whose nodes
    have several types matches nothing, and the team falls back to its ``all`` share, or to
    none, without a word; this says it.

    Args:
        history: :func:`load_registry_history` output.
        nodes: ``cluster, gpu_type`` and optionally ``gpus`` (``core.nodes``).

    Returns:
        :data:`metrics.data_quality.DATA_QUALITY_SCHEMA` rows with ``check =
        'registry_pool_unmatched'``, one per such pool (by name), no cluster (the registry is
        the fleet's), no day, no partition, ``value`` = its share entries, ``detail`` naming
        the pool and its teams; empty when ``nodes`` is (nothing to match yet).
    """
    if history.height == 0 or nodes.height == 0:
        return pl.DataFrame(schema=DATA_QUALITY_SCHEMA)
    matched = (
        history.select("pool")
        .unique()
        .join(_cluster_types(nodes), how="cross")
        .filter(_POOL_RANK.fill_null(0) > 0)
        .select("pool")
    )
    unmatched = history.join(matched.unique(), on="pool", how="anti")
    return (
        unmatched.group_by("pool")
        .agg(pl.len().cast(pl.Float64).alias("value"), pl.col("team").unique().sort())
        .sort("pool")
        .select(
            pl.lit(None, dtype=pl.String()).alias("cluster"),
            pl.lit(None, dtype=pl.Date()).alias("day"),
            pl.lit(None, dtype=pl.String()).alias("partition"),
            pl.lit("registry_pool_unmatched").alias("check"),
            "value",
            pl.format(
                "registry pool {} (teams {}) names no cluster and no cluster's GPU type: "
                "its shares apply nowhere",
                pl.col("pool"),
                pl.col("team").list.join(", "),
            ).alias("detail"),
        )
    )


def shares_at_window_start(
    frame: pl.DataFrame, per_cluster: pl.DataFrame, history: pl.DataFrame
) -> pl.DataFrame:
    """Add ``share``: the team's registry share in effect at each row's ``window_start``.

    Args:
        frame: ``window_start`` (UTC), ``cluster`` (NULL = the fleet), ``team``.
        per_cluster: :func:`cluster_shares` output (used for rows with a cluster).
        history: :func:`load_registry_history` output (the pool-``all`` entries are used for
            fleet rows).

    Returns:
        ``frame`` with ``share`` (fraction; NULL for a team without a share then).
    """
    fleet = history.filter(pl.col("pool") == ALL_POOLS).select(
        "team",
        pl.lit("").alias("pool"),
        "share",
        pl.col("valid_from").fill_null(pl.lit(_EPOCH, dtype=_UTC)),
    )
    sh = pl.concat([per_cluster.select(list(_ENGINE_SCHEMA)), fleet]).sort("valid_from")
    keyed = frame.with_row_index("_row").with_columns(
        pl.col("cluster").fill_null("").alias("_pool"),
        pl.col("window_start").dt.convert_time_zone("UTC").dt.cast_time_unit("us").alias("_at"),
    )
    joined = keyed.sort("_at").join_asof(
        sh.rename({"pool": "_pool", "share": "_share"}),
        left_on="_at",
        right_on="valid_from",
        by=["team", "_pool"],
        strategy="backward",
        check_sortedness=False,
    )
    out = joined.sort("_row").with_columns(pl.col("_share").alias("share"))
    return out.drop("_row", "_pool", "_at", "_share", "valid_from")
