"""Pseudonymisation of user names for everything published (pages, report, patches, KPIs).

Real user names stay in the warehouse, for its admins. What readers see is the serving copy, and
:func:`pipelines.warehouse.publish_serving_copy` runs :func:`pseudonymise_database` on it: every
column of :data:`USER_NAME_COLUMNS` holds the name's pseudonym ``user-1a2b3c4d5e6f``, and in every
column of :data:`FREE_TEXT_COLUMNS` each known user name (whole word, case-sensitive, longest
first) is replaced by its pseudonym. Pages, ``goodput sql``, the report and the patch files read
the copy, so they show pseudonyms. ``GOODPUT_SHOW_USER_NAMES=1`` when the copy is published is the
one opt-in that keeps the names.

A pseudonym is ``user-`` and the first 12 hex digits (48 bits) of HMAC-SHA256(salt, name): two
of 100,000 names share one with a chance of about 1 in 56,000, and a publish where two known names
do is refused (:class:`PseudonymCollision`) rather than merging them. The salt is
``$GOODPUT_PSEUDONYM_SALT`` or else a random one written on first use to ``.pseudonym_salt``
beside the warehouse (mode 0600, kept out of git): the same salt gives the same pseudonyms in
every publish, and nobody without it can hash a list of logins to reverse them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import duckdb

__all__ = [
    "FREE_TEXT_COLUMNS",
    "FREE_TEXT_EVERYWHERE",
    "NOT_PERSONAL_COLUMNS",
    "PSEUDONYM",
    "PSEUDONYM_HEX",
    "SALT_ENV",
    "SALT_FILE",
    "SHOW_USER_NAMES_ENV",
    "SYSTEM_LOGINS",
    "USER_LABEL_KEYS",
    "USER_LABEL_TABLES",
    "USER_LIKE_COLUMN",
    "USER_NAME_COLUMNS",
    "PseudonymCollision",
    "Pseudonyms",
    "known_user_names",
    "load_salt",
    "pseudonymise",
    "pseudonymise_database",
    "salt_path",
    "show_user_names",
    "user_names_of",
]

#: The opt-in: ``1``/``true``/``yes`` when the serving copy is published keeps the real names.
SHOW_USER_NAMES_ENV = "GOODPUT_SHOW_USER_NAMES"
#: A site-wide salt; when unset, the salt file beside the warehouse is used (made on first use).
SALT_ENV = "GOODPUT_PSEUDONYM_SALT"
#: The salt file's name, in the warehouse's folder (``data/.pseudonym_salt``).
SALT_FILE = ".pseudonym_salt"
#: Hex digits of the HMAC in a pseudonym (48 bits: 6 digits, 24 bits, merged two of 4,800 names
#: with a chance of one half).
PSEUDONYM_HEX = 12
#: What a pseudonym looks like: also the 6 digits of copies published before December 2026, so
#: that a value of such a copy is not taken for a real name and pseudonymised again.
PSEUDONYM = re.compile(rf"user-(?:[0-9a-f]{{{PSEUDONYM_HEX}}}|[0-9a-f]{{6}})")

#: Columns whose value is a user name (or, for ``VARCHAR[]`` columns, a list of them), by table:
#: replaced by the pseudonym. Their values are also the known names that free text is scrubbed of.
USER_NAME_COLUMNS: dict[str, tuple[str, ...]] = {
    "raw.slurm_rows": ("user_name",),
    "raw.slurm_events": ("user_name",),  # who set a node's state
    "raw.slurm_nodes": ("reason_user",),  # who set a node's reason
    "raw.slurm_reservations": ("users",),
    "raw.slurm_sprio": ("user_name",),
    "raw.sshare": ("user_name",),
    "raw.slurm_transactions": ("actor", "assoc_user"),  # who made a change; whose association
    "core.slurm_jobs": ("user_name",),
    "core.jobs": ("user_name",),
    "analytics.time_to_start_jobs": ("user_name",),
    "analytics.policy_changes": ("actor",),  # who made the change
}

#: Columns scrubbed in every table that has them (a test checks each is somewhere): identifiers
#: that join tables (job ids, accounts, namespaces, partitions and ClusterQueues, QOS and
#: LocalQueues) are scrubbed alike everywhere, so joins still match; file paths may hold a home
#: folder. Each known user name in them becomes its pseudonym.
FREE_TEXT_EVERYWHERE: frozenset[str] = frozenset(
    {"file", "job_id", "job_id_raw", "account", "accounts", "namespace", "partition",
     "partitions", "qos", "queue_name", "cluster_queue", "hpc_job"}
)  # fmt: skip

#: Free-text columns of one table that can carry a user name (job names, comments, groups that
#: may be personal, Kubernetes object names, labels and messages, rejected lines, the
#: recommendations' text and patches), besides :data:`FREE_TEXT_EVERYWHERE`.
FREE_TEXT_COLUMNS: dict[str, tuple[str, ...]] = {
    "raw.ingests": ("info",),
    "raw.rejected_rows": ("raw", "reason"),
    "core.inventory_rejected": ("raw", "reason"),
    "raw.slurm_rows": ("job_name", "extra", "reason", "group_name"),
    "raw.slurm_events": ("reason",),
    "raw.slurm_nodes": ("reason",),
    "raw.slurm_reservations": ("name",),
    "raw.slurm_sdiag": ("item", "text"),
    # a user's name, a personal account's (the association's account too)
    "raw.slurm_transactions": ("target", "value", "assoc_account"),
    "raw.slurm_config": ("value",),  # paths may hold a home folder
    "raw.slurm_node_comments": ("comment", "pod"),  # free text an administrator set
    "raw.dcgm_samples": ("pod", "container"),
    "raw.slurm_squeue": ("reason",),
    "raw.k8s_nodes": ("labels", "taints", "ready_reason"),
    "raw.k8s_pods": ("name", "owner_name", "workload_name", "labels"),
    "raw.k8s_workloads": (
        "name", "owner_name", "conditions", "evicted_message", "finished_message",
        "preempted_message",
    ),
    "raw.k8s_events": ("involved_name", "involved_namespace", "message"),
    "raw.kueue_cluster_queues": ("name", "cohort"),
    "raw.kueue_local_queues": ("name",),
    "raw.kueue_workload_topology": ("name", "pod_set"),
    "core.slurm_jobs": ("job_name", "extra", "reason", "group_name", "job_key", "row_id"),
    "core.k8s_pods": ("name", "owner_name", "workload_name", "labels"),
    "core.k8s_workloads": ("end_message",),
    "core.k8s_events": ("involved_name", "involved_namespace", "message"),
    "core.k8s_pending_reasons": ("example",),
    "analytics.data_quality": ("detail",),
    # the build's bookkeeping of the pods' lives and sample days (pod names as loaded)
    "analytics.build_pod_lives": ("pod",),
    "analytics.build_pod_days": ("pod",),
    "analytics.gpu_activity": ("job_group",),
    "analytics.recommendations": ("scope", "evidence", "change_text", "patch_content"),
    "analytics.recommendation_proposals": ("scope", "change_text", "patch_content"),
    "analytics.registry_drift": ("objects",),
    "analytics.scheduler_fairshare": ("object",),
    "analytics.policy_changes": ("object", "old", "new"),
}  # fmt: skip

#: Tables whose ``labels`` (a JSON object) may name a user, and the last segments of the label
#: keys that do (``user``, ``run.ai/user``, ``example.org/owner``; case-insensitive, Kubernetes'
#: ``app.kubernetes.io/`` labels excepted): their values are known names
#: (``sql/raw/k8s_label_user_names.sql``), so a user seen only in Kubernetes or Kueue objects is
#: pseudonymised in the labels and scrubbed from pod names, event messages and comments.
USER_LABEL_TABLES: tuple[str, ...] = ("raw.k8s_pods", "core.k8s_pods")
USER_LABEL_KEYS: tuple[str, ...] = (
    "user", "username", "user-name", "user_name", "user-id", "userid", "owner", "creator",
    "created-by", "requester", "requested-by", "submitter", "submitted-by", "login", "author",
)  # fmt: skip

#: Column names that look like a user's (:data:`USER_LIKE_COLUMN`) but hold none: the owner
#: of a Kubernetes object is another object (its kind, its uid).
NOT_PERSONAL_COLUMNS: frozenset[str] = frozenset({"owner_kind", "owner_uid"})

#: A column name that suggests a person: every text column so named must be in
#: :data:`USER_NAME_COLUMNS`, :data:`FREE_TEXT_COLUMNS`, :data:`FREE_TEXT_EVERYWHERE` or
#: :data:`NOT_PERSONAL_COLUMNS` (a test fails otherwise).
USER_LIKE_COLUMN = re.compile(
    r"(^|_)(user|users|owner|owners|login|logins|author|requester|submitter|person|email)(_|$)"
)

#: Service logins that are no person (the Slurm and root associations, the Slurm daemon):
#: left as they are, and not scrubbed from text (``slurm`` is in ``slurm.conf``).
SYSTEM_LOGINS: frozenset[str] = frozenset({"root", "slurm", "nobody"})

_TRUE = ("1", "true", "yes")


def show_user_names() -> bool:
    """True when ``GOODPUT_SHOW_USER_NAMES`` is ``1``/``true``/``yes`` (read at call time)."""
    return os.environ.get(SHOW_USER_NAMES_ENV, "").strip().lower() in _TRUE


def pseudonymise(name: str, *, salt: str) -> str:
    """A stable pseudonym ``user-1a2b3c4d5e6f`` for a user name: ``user-`` and the first
    :data:`PSEUDONYM_HEX` hex digits of HMAC-SHA256 keyed with ``salt`` (RFC 2104).

    Args:
        name: the user name.
        salt: the site's secret salt (:func:`load_salt`).
    """
    digest = hmac.new(salt.encode("utf-8"), name.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"user-{digest[:PSEUDONYM_HEX]}"


class PseudonymCollision(ValueError):
    """Two known user names have one pseudonym under the salt: publishing would merge them.

    The message gives the pseudonym and how many names share it, never the names. A new salt
    (``$GOODPUT_PSEUDONYM_SALT``, or a new ``.pseudonym_salt``) draws new pseudonyms.
    """


def salt_path(warehouse: str | Path) -> Path:
    """The salt file of a warehouse: ``.pseudonym_salt`` in its folder."""
    return Path(warehouse).resolve().parent / SALT_FILE


def load_salt(warehouse: str | Path) -> str:
    """The pseudonyms' salt: ``$GOODPUT_PSEUDONYM_SALT``, else the salt file beside the
    warehouse, written with 32 random bytes (hex, mode 0600) when there is none yet.

    Two publishes racing for a first salt agree: the file is linked into place only when absent.
    """
    env = os.environ.get(SALT_ENV, "").strip()
    if env:
        return env
    path = salt_path(warehouse)
    if path.is_file():
        text = path.read_text(encoding="utf-8").strip()
        if text:
            return text
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=SALT_FILE + ".", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(secrets.token_hex(32) + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:  # another publish made it first, or an empty one is there
            if not path.read_text(encoding="utf-8").strip():
                os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path.read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class Pseudonyms:
    """The pseudonyms of a set of known user names under one salt.

    Attributes:
        salt: the salt (:func:`load_salt`).
        names: the real names to replace; system logins (:data:`SYSTEM_LOGINS`) and values that
            already are pseudonyms are left out.
    """

    salt: str
    names: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of_names(cls, salt: str, names: Iterable[str | None]) -> Pseudonyms:
        """Pseudonyms of ``names`` (empty, system and pseudonym values dropped)."""
        keep = {n for n in names if n and n not in SYSTEM_LOGINS and not PSEUDONYM.fullmatch(n)}
        return cls(salt, frozenset(keep))

    @cached_property
    def mapping(self) -> dict[str, str]:
        """Real name → pseudonym.

        Raises:
            PseudonymCollision: two of the names have one pseudonym.
        """
        out = {n: pseudonymise(n, salt=self.salt) for n in sorted(self.names)}
        if len(set(out.values())) < len(out):
            seen = Counter(out.values())
            alias, n = seen.most_common(1)[0]
            raise PseudonymCollision(
                f"{n} known user names share the pseudonym {alias}: publishing would merge"
                f" them; set a new salt (${SALT_ENV}, or remove {SALT_FILE} beside the"
                " warehouse) to draw new pseudonyms"
            )
        return out

    @cached_property
    def _alternation(self) -> str:
        return "|".join(re.escape(n) for n in sorted(self.names, key=lambda n: (-len(n), n)))

    @cached_property
    def _words(self) -> re.Pattern[str]:
        # A word is a run of letters and digits: ``_ - . / @`` and spaces separate words, so
        # ``alice`` is found in ``alice_run``, ``/home/alice/x`` and ``alice-7f2``, not in
        # ``malice``.
        return re.compile(rf"(?<![^\W_])(?:{self._alternation})(?![^\W_])")

    @property
    def prefilter(self) -> str:
        """An RE2 pattern that every text holding a known name matches (a superset)."""
        return self._alternation

    def of(self, name: str | None) -> str | None:
        """The pseudonym of a known name; any other value (``None``, ``root``) as it is."""
        return None if name is None else self.mapping.get(name, name)

    def scrub(self, text: str | None) -> str | None:
        """``text`` with every known name (whole word, case-sensitive, longest first) replaced
        by its pseudonym."""
        if not text or not self.names:
            return text
        return self._words.sub(lambda m: self.mapping[m.group(0)], text)


def user_names_of(con: duckdb.DuckDBPyConnection) -> str:
    """How a database holds user names: ``pseudonymised`` or ``shown`` for a serving copy (its
    ``meta.privacy``), ``real`` for a warehouse or a copy published before pseudonymisation."""
    marked = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()"
        " AND schema_name = 'meta' AND table_name = 'privacy'"
    ).fetchall()[0][0]
    if not marked:
        return "real"
    rows = con.execute("SELECT user_names FROM meta.privacy").fetchall()
    return str(rows[0][0]) if rows else "real"


def _columns(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    """``schema.table`` → column → type, for the base tables of the connection's database."""
    rows = con.execute(
        "SELECT c.table_schema, c.table_name, c.column_name, c.data_type"
        " FROM information_schema.columns c JOIN information_schema.tables t"
        " USING (table_catalog, table_schema, table_name)"
        " WHERE t.table_type = 'BASE TABLE' AND t.table_catalog = current_database()"
    ).fetchall()
    out: dict[str, dict[str, str]] = {}
    for schema, table, column, dtype in rows:
        out.setdefault(f"{schema}.{table}", {})[column] = dtype
    return out


def known_user_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every value of every :data:`USER_NAME_COLUMNS` column of the connection's database
    (list columns' elements included), and the User field of its rejected sacct rows
    (``sql/raw/rejected_sacct_user_names.sql``: a user whose every row was rejected is named
    by the rejected lines alone), and the values of the user-naming labels of the Kubernetes
    pods (:data:`USER_LABEL_TABLES`, :data:`USER_LABEL_KEYS`,
    ``sql/raw/k8s_label_user_names.sql``: Kubernetes objects have no user-name column)."""
    cols = _columns(con)
    names: set[str] = set()
    for table, wanted in USER_NAME_COLUMNS.items():
        for col in wanted:
            dtype = cols.get(table, {}).get(col)
            if dtype is None:
                continue
            value = f"unnest({col})" if dtype.endswith("[]") else col
            rows = con.execute(f"SELECT DISTINCT {value} FROM {table}").fetchall()
            names.update(v for (v,) in rows if isinstance(v, str) and v)
    from pipelines.warehouse.sql import load_sql  # the warehouse package imports this one

    if "raw.rejected_rows" in cols and "raw.ingests" in cols:
        # a user whose every sacct row was rejected is named by the rejected lines only
        rows = con.execute(load_sql("raw/rejected_sacct_user_names")).fetchall()
        names.update(v.strip() for (v,) in rows if isinstance(v, str) and v.strip())
    for table in USER_LABEL_TABLES:
        if cols.get(table, {}).get("labels") is None:
            continue
        rows = con.execute(
            load_sql("raw/k8s_label_user_names").format(table=table),
            {"keys": list(USER_LABEL_KEYS)},
        ).fetchall()
        names.update(v for (v,) in rows if isinstance(v, str) and v)
    return names


def _rewrite(
    con: duckdb.DuckDBPyConnection, table: str, col: str, dtype: str, mapping: dict[str, str]
) -> int:
    """Replace ``col``'s values (or list elements) by ``mapping``; returns rows changed."""
    mapping = {k: v for k, v in mapping.items() if k != v}
    if not mapping:
        return 0
    params = {"k": list(mapping), "v": list(mapping.values())}
    if dtype.endswith("[]"):
        rows = con.execute(
            f"UPDATE {table} SET {col} = list_transform({col}, lambda x:"
            " coalesce(map_extract_value(map($k, $v), x), x))"
            f" WHERE list_has_any({col}, $k)",
            params,
        ).fetchall()
    else:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE _goodput_rename AS"
            " SELECT unnest($k) AS old, unnest($v) AS new",
            params,
        )
        rows = con.execute(
            f"UPDATE {table} SET {col} = r.new FROM _goodput_rename r WHERE {table}.{col} = r.old"
        ).fetchall()
        con.execute("DROP TABLE _goodput_rename")
    return int(rows[0][0]) if rows else 0


def pseudonymise_database(con: duckdb.DuckDBPyConnection, pseudonyms: Pseudonyms) -> int:
    """Pseudonymise a database in place (the serving copy being published): user-name columns
    (:data:`USER_NAME_COLUMNS`) get the pseudonyms, free-text columns (:data:`FREE_TEXT_COLUMNS`,
    :data:`FREE_TEXT_EVERYWHERE`) are scrubbed of the known names. Tables or columns that are
    absent are skipped.

    Args:
        con: a read-write connection to the copy (never the warehouse).
        pseudonyms: the salt and the known names (:func:`known_user_names` of the warehouse).

    Returns:
        The number of values changed.
    """
    if not pseudonyms.names:
        return 0
    cols = _columns(con)
    changed = 0
    for table, wanted in USER_NAME_COLUMNS.items():
        for col in wanted:
            dtype = cols.get(table, {}).get(col)
            if dtype is not None:
                changed += _rewrite(con, table, col, dtype, pseudonyms.mapping)
    for table, types in cols.items():
        users = USER_NAME_COLUMNS.get(table, ())
        for col in sorted(set(FREE_TEXT_COLUMNS.get(table, ())) | FREE_TEXT_EVERYWHERE):
            dtype = types.get(col)
            if dtype is None or col in users:
                continue
            if dtype.endswith("[]"):
                sql = f"SELECT DISTINCT unnest({col}) AS x FROM {table}"
            elif dtype == "VARCHAR":
                sql = f"SELECT DISTINCT {col} AS x FROM {table}"
            else:
                continue
            # The pattern runs on the distinct values only, far fewer than the rows.
            rows = con.execute(
                f"SELECT x FROM ({sql}) WHERE x IS NOT NULL AND regexp_matches(x, $p)",
                {"p": pseudonyms.prefilter},
            ).fetchall()
            mapping = {v: str(pseudonyms.scrub(v)) for (v,) in rows}
            changed += _rewrite(con, table, col, dtype, mapping)
    return changed
