"""The one configuration file, ``goodput.toml`` (path overridable by ``GOODPUT_CONFIG``)."""

from __future__ import annotations

import datetime as dt
import difflib
import os
import re
import threading
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "FRESHNESS_GROUPS",
    "LOSS_POLICIES",
    "ClusterConfig",
    "Config",
    "ConfigError",
    "LossPolicyConfig",
    "load_config",
    "repo_root",
]

#: Source groups with a freshness bound (``[freshness] <group>_hours``; pipelines/freshness.py).
FRESHNESS_GROUPS: tuple[str, ...] = ("sacct", "k8s", "dcgm")
#: Default freshness bound: a daily load plus two hours of slack.
_FRESHNESS_DEFAULT_H = 26.0


class ConfigError(ValueError):
    """The configuration file is missing a required value or holds an invalid one."""


#: The waterfall's loss policies (``[waterfall] loss_policy``; METRICS.md "The GPU-time
#: waterfall", :class:`metrics.waterfall.LossPolicy`).
LOSS_POLICIES: tuple[str, ...] = ("whole_attempt", "checkpoint")


@dataclass(frozen=True)
class LossPolicyConfig:
    """How much of a failed, preempted or timed-out attempt is lost (``[waterfall]``).

    ``whole_attempt`` (default): the whole runtime. ``checkpoint``: min(runtime, Δ/2 + u0), Δ =
    ``checkpoint_interval_s`` (> 0), u0 = ``restart_overhead_s`` (≥ 0), both in seconds
    (METRICS.md "Lost work under the ``checkpoint`` policy"). The build turns it into a
    :class:`metrics.waterfall.LossPolicy` (this module does not import the metric engine).
    """

    kind: str = "whole_attempt"
    checkpoint_interval_s: float | None = None
    restart_overhead_s: float = 0.0


def repo_root() -> Path:
    """The repository root (the folder holding ``goodput.toml`` by default)."""
    return Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ClusterConfig:
    """One cluster: its name, scheduler (``slurm`` | ``kubernetes``), IANA zone and inputs."""

    name: str
    scheduler: str
    timezone: str = "UTC"
    sacct_fields: tuple[str, ...] = ()
    input_dir: Path | None = None
    #: Slurm run on Kubernetes: ``A`` (slurmd in pods that request GPUs: Slinky
    #: slurm-operator), ``B`` (placeholder Slurm jobs for pods: CoreWeave SUNK), ``C`` (pods as
    #: Slurm external jobs: slurm-bridge); None = not on Kubernetes (METRICS.md "Slurm on
    #: Kubernetes").
    slurm_on_k8s: str | None = None
    #: The Kubernetes cluster whose pods and nodes this Slurm cluster runs on (with
    #: ``slurm_on_k8s``).
    kubernetes_cluster: str | None = None
    #: The cluster's own loss policy (any of ``loss_policy``, ``checkpoint_interval_s``,
    #: ``restart_overhead_s`` in its ``[[clusters]]`` entry, the others taken from
    #: ``[waterfall]``); None: the ``[waterfall]`` one.
    loss_policy: LossPolicyConfig | None = None


@dataclass(frozen=True)
class Config:
    """The loaded configuration; every path is absolute."""

    path: Path
    warehouse_path: Path
    serving_path: Path
    inputs_dir: Path
    inventory_dir: Path
    registry_path: Path
    partitions_start: str
    prometheus_url: str
    prometheus_step_s: int
    large_job_gpus: float
    idle_activity: float
    default_cluster: str
    clusters: tuple[ClusterConfig, ...] = field(default_factory=tuple)
    #: Input kind → ``file`` (exported files under ``inputs``) or its live twin (``cli`` for
    #: sacct, ``prometheus`` for dcgm); live twins spool to ``inputs`` too.
    sources: dict[str, str] = field(default_factory=dict)
    #: ``none`` | ``bearer`` | ``basic``: which GOODPUT_PROMETHEUS_* variables hold credentials.
    prometheus_auth: str = "none"
    #: Relative registry drift (|configured − registry| ÷ registry share) flagged in
    #: ``registry_drift`` (METRICS.md).
    registry_drift_tolerance: float = 0.2
    #: Freshness group → hours after which its newest load is stale (``[freshness]``).
    freshness_hours: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(FRESHNESS_GROUPS, _FRESHNESS_DEFAULT_H)
    )
    #: Dashboard sign-in: ``none`` or ``oidc`` (Streamlit's ``st.login``; ``[dashboard] auth``).
    dashboard_auth: str = "none"
    #: Days of detail rows (jobs, samples, events) the serving copy keeps before the latest data
    #: cut-off; aggregates are always whole. 0 = every row (``[warehouse] serving_detail_days``).
    serving_detail_days: int = 35
    #: Ad hoc SQL (``goodput sql``, the SQL page): a statement's time limit in seconds and
    #: DuckDB's memory limit, no spilling (``[sql] time_limit_s``, ``memory_limit``).
    sql_time_limit_s: float = 30.0
    sql_memory_limit: str = "2GB"
    #: Segment sizes (nodes = trays) counted in ``domain_capacity_hourly`` and
    #: ``segment_capacity_hourly`` (``[topology] segment_sizes``).
    segment_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 18)
    #: The waterfall's loss policy of every cluster without its own (``[waterfall]``).
    loss_policy: LossPolicyConfig = field(default_factory=LossPolicyConfig)

    def cluster(self, name: str) -> ClusterConfig:
        """The named cluster's settings; an unknown name gets UTC and no field list."""
        for c in self.clusters:
            if c.name == name:
                return c
        return ClusterConfig(name=name, scheduler="slurm", input_dir=self.inputs_dir / name)

    def cluster_input_dir(self, name: str) -> Path:
        """``<inputs>/<cluster>/`` unless the cluster names its own folder."""
        c = self.cluster(name)
        return c.input_dir if c.input_dir is not None else self.inputs_dir / name

    def cluster_input_dirs(self) -> dict[str, Path]:
        """Cluster → its input folder (``input_dir``, else ``<inputs>/<cluster>/``), for every
        configured cluster, or the default cluster alone when none is configured."""
        names = [c.name for c in self.clusters] or [self.default_cluster]
        return {name: self.cluster_input_dir(name) for name in names}

    def loss_policy_of(self, name: str) -> LossPolicyConfig:
        """The named cluster's loss policy: its own (``[[clusters]]``), else ``[waterfall]``'s
        (an unconfigured cluster gets the latter)."""
        own = self.cluster(name).loss_policy
        return own if own is not None else self.loss_policy


#: Every key the file may hold, by table (``""``: the top level; ``clusters``: each
#: ``[[clusters]]`` entry). Anything else is a typo that would otherwise fall back to a default
#: silently (``time_zone`` read as UTC, ``idle_activty`` as 0.05): refused with the key named.
_KEYS: dict[str, frozenset[str]] = {
    "": frozenset({"default_cluster", "warehouse", "sources", "prometheus", "thresholds",
                   "topology", "freshness", "dashboard", "sql", "waterfall", "clusters"}),
    "warehouse": frozenset({"path", "serving_path", "inputs", "inventory", "registry",
                            "partitions_start", "serving_detail_days"}),
    "prometheus": frozenset({"url", "step_s", "auth"}),
    "thresholds": frozenset({"large_job_gpus", "idle_activity", "registry_drift_tolerance"}),
    "topology": frozenset({"segment_sizes"}),
    "dashboard": frozenset({"auth"}),
    "sql": frozenset({"time_limit_s", "memory_limit"}),
    "waterfall": frozenset({"loss_policy", "checkpoint_interval_s", "restart_overhead_s"}),
    "clusters": frozenset({"name", "scheduler", "timezone", "sacct_fields", "input_dir",
                           "slurm_on_k8s", "kubernetes_cluster", "loss_policy",
                           "checkpoint_interval_s", "restart_overhead_s"}),
}  # fmt: skip


def _check_keys(table: object, section: str, where: str) -> dict[str, object]:
    """``table`` (a TOML table) whose keys are all known in ``section`` (:data:`_KEYS`).

    Raises:
        ConfigError: ``table`` is not a table, or holds a key the section does not know (named,
            with the nearest known key when one is close).
    """
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table, not {table!r}")
    for key in table:
        if key not in _KEYS[section]:
            near = difflib.get_close_matches(key, sorted(_KEYS[section]), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            known = ", ".join(sorted(_KEYS[section]))
            raise ConfigError(f"{where}: unknown key {key!r}{hint}; known: {known}")
    return table


def _number(
    table: dict[str, object], key: str, default: float, where: str, *, lo: float, hi: float
) -> float:
    """``table[key]`` (else ``default``): a number from ``lo`` to ``hi`` (inclusive).

    Raises:
        ConfigError: not a number, or outside the range (named with ``where``).
    """
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise ConfigError(f"{where}.{key}: must be a number from {lo:g} to {hi:g}, not {value!r}")
    return float(value)


def _slurm_on_k8s(c: dict[str, object], sched: str, where: str) -> tuple[str | None, str | None]:
    """A cluster's ``slurm_on_k8s`` pattern and ``kubernetes_cluster`` partner, checked."""
    pattern, partner = c.get("slurm_on_k8s"), c.get("kubernetes_cluster")
    if pattern is None:
        if partner is not None:
            raise ConfigError(f"{where}: kubernetes_cluster needs slurm_on_k8s ('A', 'B' or 'C')")
        return None, None
    if pattern not in ("A", "B", "C"):
        raise ConfigError(f"{where}: slurm_on_k8s must be 'A', 'B' or 'C', not {pattern!r}")
    if sched != "slurm":
        raise ConfigError(f"{where}: slurm_on_k8s applies to a Slurm cluster, not {sched!r}")
    if not isinstance(partner, str) or not partner:
        raise ConfigError(f"{where}: slurm_on_k8s needs kubernetes_cluster (the pods' cluster)")
    return str(pattern), partner


def _check_tz(name: str, where: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"{where}: unknown IANA time zone {name!r}") from exc
    return name


#: What a loaded file's ``Config`` depends on besides its text: the resolved path, the file's
#: mtime (ns), size and inode (an edited or replaced file is read again), and ``GOODPUT_DB``.
_CacheKey = tuple[Path, int, int, int, str | None]

#: Resolved config path → (the key it was read under, the ``Config``): one entry per file.
_LOADED: dict[Path, tuple[_CacheKey, Config]] = {}
_LOADED_LOCK = threading.Lock()


def load_config(path: str | Path | None = None) -> Config:
    """Load ``goodput.toml``, read once per process while the file and ``GOODPUT_DB`` stay put.

    A second call returns the same ``Config`` object unless the file's mtime, size or inode or
    ``GOODPUT_DB`` changed since, in which case the file is read again.

    Args:
        path: the file; default ``$GOODPUT_CONFIG`` or ``<repo>/goodput.toml``.

    Returns:
        The configuration with paths resolved against the file's folder; ``GOODPUT_DB`` overrides
        the warehouse path.

    Raises:
        ConfigError: the file is missing or holds an invalid value (named in the message).
    """
    cfg_path = Path(path or os.environ.get("GOODPUT_CONFIG") or repo_root() / "goodput.toml")
    cfg_path = cfg_path.resolve()
    try:
        st = cfg_path.stat()
    except FileNotFoundError as exc:
        raise ConfigError(f"{cfg_path}: configuration file not found") from exc
    db_env = os.environ.get("GOODPUT_DB")
    # A relative GOODPUT_DB resolves against the working directory: key on where it points.
    key: _CacheKey = (
        cfg_path,
        st.st_mtime_ns,
        st.st_size,
        st.st_ino,
        str(Path(db_env).resolve()) if db_env else None,
    )
    with _LOADED_LOCK:
        hit = _LOADED.get(cfg_path)
    if hit is not None and hit[0] == key:
        return hit[1]
    cfg = _read_config(cfg_path, db_env)
    with _LOADED_LOCK:
        _LOADED[cfg_path] = (key, cfg)
    return cfg


def _read_config(cfg_path: Path, db_env: str | None) -> Config:
    """Parse and check the file at ``cfg_path`` (resolved); ``db_env`` is ``$GOODPUT_DB``."""
    try:
        raw = tomllib.loads(cfg_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{cfg_path}: configuration file not found") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{cfg_path}: not UTF-8 text ({exc.reason})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{cfg_path}: {exc}") from exc
    _check_keys(raw, "", str(cfg_path))
    for section in (
        "warehouse",
        "prometheus",
        "thresholds",
        "topology",
        "dashboard",
        "sql",
        "waterfall",
    ):
        _check_keys(raw.get(section, {}), section, f"{cfg_path}: [{section}]")
    base = cfg_path.parent

    def p(value: str) -> Path:
        q = Path(value)
        return q if q.is_absolute() else (base / q).resolve()

    wh = raw.get("warehouse", {})
    prom = raw.get("prometheus", {})
    th = raw.get("thresholds", {})
    policy = _loss_policy(raw.get("waterfall", {}), None, f"{cfg_path}: waterfall")
    inputs_dir = p(wh.get("inputs", "data/inputs"))
    clusters: list[ClusterConfig] = []
    if not isinstance(raw.get("clusters", []), list):
        raise ConfigError(f"{cfg_path}: clusters must be an array of tables ([[clusters]])")
    for i, c in enumerate(raw.get("clusters", [])):
        where = f"{cfg_path}: clusters[{i}]"
        _check_keys(c, "clusters", where)
        if "name" not in c:
            raise ConfigError(f"{where}: missing 'name'")
        if any(k.name == str(c["name"]) for k in clusters):
            raise ConfigError(f"{where}: cluster {c['name']!r} is listed twice")
        fields = c.get("sacct_fields", [])
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise ConfigError(f"{where}: sacct_fields must be a list of field names")
        sched = c.get("scheduler", "slurm")
        if sched not in ("slurm", "kubernetes"):
            raise ConfigError(f"{where}: scheduler must be 'slurm' or 'kubernetes', not {sched!r}")
        pattern, partner = _slurm_on_k8s(c, sched, where)
        clusters.append(
            ClusterConfig(
                name=str(c["name"]),
                scheduler=sched,
                timezone=_check_tz(str(c.get("timezone", "UTC")), where),
                sacct_fields=tuple(c.get("sacct_fields", ())),
                input_dir=p(c["input_dir"]) if "input_dir" in c else inputs_dir / str(c["name"]),
                slurm_on_k8s=pattern,
                kubernetes_cluster=partner,
                loss_policy=_loss_policy(c, policy, where) if _LOSS_KEYS & c.keys() else None,
            )
        )
    default_cluster = str(raw.get("default_cluster") or "default")
    names = {c.name: c.scheduler for c in clusters}
    if names and "default_cluster" in raw and default_cluster not in names:
        raise ConfigError(
            f"{cfg_path}: default_cluster {default_cluster!r} is not a configured cluster"
            f" ({', '.join(names)})"
        )
    for i, c in enumerate(clusters):
        if c.kubernetes_cluster is not None and names.get(c.kubernetes_cluster) != "kubernetes":
            k8s = ", ".join(n for n, kind in names.items() if kind == "kubernetes") or "none"
            raise ConfigError(
                f"{cfg_path}: clusters[{i}]: kubernetes_cluster {c.kubernetes_cluster!r} is not"
                f" a configured Kubernetes cluster (configured: {k8s})"
            )
    return Config(
        path=cfg_path,
        warehouse_path=Path(db_env).resolve()
        if db_env
        else p(wh.get("path", "data/warehouse.duckdb")),
        serving_path=p(wh.get("serving_path", "data/serving.duckdb")),
        inputs_dir=inputs_dir,
        inventory_dir=p(wh.get("inventory", "data/inventory")),
        registry_path=p(wh.get("registry", "data/registry.yaml")),
        partitions_start=_date(
            wh.get("partitions_start", "2024-01-01"), f"{cfg_path}: [warehouse]"
        ),
        prometheus_url=str(prom.get("url", "http://127.0.0.1:9090")),
        prometheus_step_s=int(
            _number(prom, "step_s", 300, f"{cfg_path}: [prometheus]", lo=1, hi=86_400)
        ),
        large_job_gpus=_number(th, "large_job_gpus", 64, f"{cfg_path}: [thresholds]", lo=1, hi=1e9),
        idle_activity=_number(th, "idle_activity", 0.05, f"{cfg_path}: [thresholds]", lo=0, hi=1),
        registry_drift_tolerance=_number(
            th, "registry_drift_tolerance", 0.2, f"{cfg_path}: [thresholds]", lo=0, hi=1e9
        ),
        default_cluster=default_cluster,
        clusters=tuple(clusters),
        sources=_sources(raw.get("sources", {}), cfg_path),
        prometheus_auth=_choice(
            str(prom.get("auth", "none")),
            ("none", "bearer", "basic"),
            f"{cfg_path}: prometheus.auth",
        ),
        freshness_hours=_freshness(raw.get("freshness", {}), cfg_path),
        serving_detail_days=_non_negative_int(
            wh.get("serving_detail_days", 35), f"{cfg_path}: warehouse.serving_detail_days"
        ),
        dashboard_auth=_choice(
            str(raw.get("dashboard", {}).get("auth", "none")),
            ("none", "oidc"),
            f"{cfg_path}: dashboard.auth",
        ),
        sql_time_limit_s=_positive(
            raw.get("sql", {}).get("time_limit_s", 30), f"{cfg_path}: sql.time_limit_s"
        ),
        sql_memory_limit=_memory(
            raw.get("sql", {}).get("memory_limit", "2GB"), f"{cfg_path}: sql.memory_limit"
        ),
        segment_sizes=_segment_sizes(
            raw.get("topology", {}).get("segment_sizes", [1, 2, 4, 8, 16, 18]),
            f"{cfg_path}: topology.segment_sizes",
        ),
        loss_policy=policy,
    )


#: The loss-policy keys of ``[waterfall]`` and of a ``[[clusters]]`` entry.
_LOSS_KEYS = frozenset({"loss_policy", "checkpoint_interval_s", "restart_overhead_s"})


def _loss_policy(
    table: dict[str, object], inherit: LossPolicyConfig | None, where: str
) -> LossPolicyConfig:
    """The loss policy of ``table`` (``[waterfall]``, or a ``[[clusters]]`` entry whose unset
    keys come from ``inherit``, the ``[waterfall]`` policy).

    Raises:
        ConfigError: ``loss_policy`` is not one of :data:`LOSS_POLICIES`;
            ``checkpoint_interval_s`` is not a positive number or ``restart_overhead_s`` not a
            number ≥ 0 (seconds); ``checkpoint`` without an interval; an interval or overhead
            set beside ``loss_policy = "whole_attempt"`` (it would be ignored). Each names the
            key.
    """
    base = inherit or LossPolicyConfig()
    kind = table.get("loss_policy", base.kind)
    if kind not in LOSS_POLICIES:
        raise ConfigError(
            f"{where}.loss_policy: must be one of {', '.join(map(repr, LOSS_POLICIES))},"
            f" not {kind!r}"
        )
    interval = table.get("checkpoint_interval_s", base.checkpoint_interval_s)
    if interval is not None and (
        isinstance(interval, bool)
        or not isinstance(interval, int | float)
        or not 0 < interval < float("inf")
    ):
        raise ConfigError(
            f"{where}.checkpoint_interval_s: must be a positive number of seconds, not {interval!r}"
        )
    overhead = table.get("restart_overhead_s", base.restart_overhead_s)
    if (
        isinstance(overhead, bool)
        or not isinstance(overhead, int | float)
        or not (0 <= overhead < float("inf"))
    ):
        raise ConfigError(
            f"{where}.restart_overhead_s: must be a number of seconds ≥ 0, not {overhead!r}"
        )
    if kind == "whole_attempt":
        for key in ("checkpoint_interval_s", "restart_overhead_s"):
            if key in table:
                raise ConfigError(
                    f"{where}.{key}: applies only with loss_policy = 'checkpoint'"
                    " (the whole_attempt policy loses the whole runtime)"
                )
        return LossPolicyConfig()
    if interval is None:
        raise ConfigError(
            f"{where}.checkpoint_interval_s: loss_policy = 'checkpoint' needs the checkpoint"
            " interval Δ, a positive number of seconds"
        )
    return LossPolicyConfig(str(kind), float(interval), float(overhead))


def _date(value: object, where: str) -> str:
    """``partitions_start``: a day written ``YYYY-MM-DD`` (a TOML date or a string)."""
    text = str(value)
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        text = ""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise ConfigError(f"{where}.partitions_start: must be a day as YYYY-MM-DD, not {value!r}")
    return text


def _segment_sizes(value: object, where: str) -> tuple[int, ...]:
    """Distinct positive whole numbers of nodes, ascending."""
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise ConfigError(f"{where}: must be a list of positive whole numbers, not {value!r}")
    return tuple(sorted(set(value)))


def _positive(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{where}: must be a positive number of seconds, not {value!r}")
    return float(value)


def _memory(value: object, where: str) -> str:
    """A DuckDB memory size: a number and a unit (``2GB``, ``512MB``, ``1.5GiB``)."""
    if not isinstance(value, str) or not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", value.strip()):
        raise ConfigError(f"{where}: must be a size such as '2GB' or '512MB', not {value!r}")
    return value.strip()


def _non_negative_int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}: must be a whole number of days ≥ 0, not {value!r}")
    return value


def _freshness(raw: object, cfg_path: Path) -> dict[str, float]:
    """``[freshness] <group>_hours`` → group → hours (positive), defaults for the rest."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{cfg_path}: [freshness] must be a table")
    out = dict.fromkeys(FRESHNESS_GROUPS, _FRESHNESS_DEFAULT_H)
    for key, value in raw.items():
        group = key.removesuffix("_hours")
        if group not in out or not key.endswith("_hours"):
            raise ConfigError(
                f"{cfg_path}: freshness.{key}: expected one of sacct_hours, k8s_hours, dcgm_hours"
            )
        try:
            hours = float(value)
        except (TypeError, ValueError):
            hours = -1.0
        if not hours > 0:
            raise ConfigError(f"{cfg_path}: freshness.{key}: must be a positive number of hours")
        out[group] = hours
    return out


_SOURCE_CHOICES = {"sacct": ("file", "cli"), "dcgm": ("file", "prometheus")}


def _choice(value: str, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return value


def _sources(raw: object, cfg_path: Path) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{cfg_path}: [sources] must be a table")
    out = {}
    for kind, value in raw.items():
        if kind not in _SOURCE_CHOICES:
            raise ConfigError(f"{cfg_path}: sources.{kind}: unknown input kind")
        out[kind] = _choice(str(value), _SOURCE_CHOICES[kind], f"{cfg_path}: sources.{kind}")
    return out
