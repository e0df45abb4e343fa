"""Privacy by construction: user names are pseudonymised when the serving copy is published, and
nothing published from it (tables, views, the weekly report, patch files, KPIs) names a user."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import re
import shutil
import stat
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pytest
from plotly.offline import get_plotlyjs
from typer.testing import CliRunner

from pipelines import privacy
from pipelines.cli.report import report_app
from pipelines.privacy import (
    FREE_TEXT_COLUMNS,
    FREE_TEXT_EVERYWHERE,
    NOT_PERSONAL_COLUMNS,
    SYSTEM_LOGINS,
    USER_LIKE_COLUMN,
    USER_NAME_COLUMNS,
    PseudonymCollision,
    Pseudonyms,
    known_user_names,
    load_salt,
    pseudonymise,
    salt_path,
)
from pipelines.recommendations import OUTPUT_FILES, run_recommendations, write_outputs
from pipelines.report import build_weekly_report
from pipelines.report.weekly import find_chromium
from pipelines.warehouse import publish_serving_copy
from tests.conftest import REPO, Materialized

WEEK = "2026-W45"


def _real_names(warehouse: Path) -> set[str]:
    """The warehouse's user names (the ``user_name`` of jobs and every other user column),
    less the service logins."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        jobs = {r[0] for r in con.execute("SELECT DISTINCT user_name FROM jobs").fetchall()}
        names = (jobs | known_user_names(con)) - SYSTEM_LOGINS - {None}
    assert len(names) > 10, "the small fleet has its users"
    return {n for n in names if n}


def _named(text: str, names: set[str]) -> set[str]:
    """The names that appear in ``text`` as whole words."""
    return {n for n in names if re.search(rf"(?<![^\W_]){re.escape(n)}(?![^\W_])", text)}


def _dump(db: Path) -> str:
    """Every text value of every table and view of a DuckDB file, one per line."""
    lines: list[str] = []
    with duckdb.connect(str(db), read_only=True) as con:
        cols = con.execute(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns"
            " WHERE data_type LIKE 'VARCHAR%' OR data_type LIKE '%[]' OR data_type = 'JSON'"
        ).fetchall()
        assert len(cols) > 100
        for schema, table, column in cols:
            rows = con.execute(
                f'SELECT DISTINCT CAST("{column}" AS VARCHAR) FROM "{schema}"."{table}"'
            ).fetchall()
            lines += [str(v) for (v,) in rows if v is not None]
    return "\n".join(lines)


def _published(cfg_dir: Path, work: Path, serving: Path, *, pdf: bool) -> dict[str, str]:
    """The text of everything published from ``serving``: the copy itself, the weekly report,
    the patch files (as the Dagster run wrote them beside the warehouse, and written again from
    the copy), and ``goodput kpis``."""
    recs = run_recommendations_files(serving, work / "recs")
    report = build_weekly_report(
        serving, WEEK, work / "reports", pdf=pdf, recommendations=recs / "latest.json"
    )
    # The page inlines plotly.js, whose code has words such as ``zoe`` and ``igor``: left out.
    library = get_plotlyjs().replace("</script", "<\\/script")
    page = report.html.read_text("utf-8")
    assert library in page
    out = {"serving copy": _dump(serving), "report.html": page.replace(library, "")}
    out["report.json"] = report.json.read_text("utf-8")
    for name in ("latest.json", *OUTPUT_FILES.values()):
        out[f"recs/{name}"] = (recs / name).read_text("utf-8")
        out[f"dagster recs/{name}"] = (cfg_dir / "recommendations" / name).read_text("utf-8")
    kpis = CliRunner().invoke(report_app, ["kpis", "--db", str(serving)])
    assert kpis.exit_code == 0, kpis.output
    out["goodput kpis"] = kpis.stdout
    if report.pdf is not None:
        text = subprocess.run(
            ["pdftotext", str(report.pdf), "-"], capture_output=True, text=True, check=True
        ).stdout
        assert "Jain" in text
        out["report.pdf"] = text
    return out


def run_recommendations_files(serving: Path, out: Path) -> Path:
    """Patch files written from ``serving`` by ``python -m pipelines.recommendations``."""
    from pipelines.config import load_config

    cfg = load_config()
    run_recommendations(cfg, out_dir=out, db=serving)
    return out


@pytest.fixture
def config_env(materialized: Materialized, monkeypatch: pytest.MonkeyPatch) -> Materialized:
    monkeypatch.setenv("GOODPUT_CONFIG", str(materialized.cfg.path))
    monkeypatch.delenv("GOODPUT_SHOW_USER_NAMES", raising=False)
    monkeypatch.delenv("GOODPUT_PSEUDONYM_SALT", raising=False)
    return materialized


# --------------------------------------------------------------------------------------------
# Pseudonyms, scrubbing, salt


def test_pseudonym_is_stable_and_salted() -> None:
    """Same name and salt → same ``user-`` + 12 hex digits of HMAC-SHA256(salt, name); another
    salt or name → another one. HMAC-SHA256(key "s1", "alice") computed by hand with Python's
    ``hmac`` module: fe0b6ee5191d."""
    a = pseudonymise("alice", salt="s1")
    assert re.fullmatch(r"user-[0-9a-f]{12}", a)
    assert a == "user-fe0b6ee5191d"
    assert a == "user-" + hmac.new(b"s1", b"alice", hashlib.sha256).hexdigest()[:12]
    assert pseudonymise("alice", salt="s1") == a
    assert pseudonymise("alice", salt="s2") != a
    assert pseudonymise("bob", salt="s1") != a


def test_names_sharing_a_pseudonym_are_refused_not_merged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With 1 hex digit (16 pseudonyms) 17 names must share one: the mapping is refused with the
    pseudonym and the count, never the names. With the real 12 digits the same names are 17
    pseudonyms."""
    names = [f"u{i}" for i in range(17)]
    real = Pseudonyms.of_names("s", names).mapping
    assert len(set(real.values())) == 17
    monkeypatch.setattr(privacy, "PSEUDONYM_HEX", 1)
    with pytest.raises(PseudonymCollision, match=r"known user names share the pseudonym user-"):
        _ = Pseudonyms.of_names("s", names).mapping
    try:
        _ = Pseudonyms.of_names("s", names).mapping
    except PseudonymCollision as err:
        assert not any(re.search(rf"\b{n}\b", str(err)) for n in names)


def test_values_that_already_are_pseudonyms_are_not_renamed() -> None:
    """A pseudonym (12 digits) and one of a copy published before December 2026 (6 digits)
    are left out of the names to replace; ``user-abc`` is no pseudonym."""
    p = Pseudonyms.of_names("s", ["user-0a1b2c3d4e5f", "user-0a1b2c", "user-abc", "alice"])
    assert p.names == frozenset({"user-abc", "alice"})


def test_scrub_replaces_whole_words_case_sensitive_longest_first() -> None:
    """``ann`` and ``ann.lee`` in text: whole words only (``annex``, ``Ann`` and ``joann`` are
    left), the longer name wins, ``_ - / .`` separate words."""
    p = Pseudonyms.of_names("s", ["ann", "ann.lee", "root", None, ""])
    assert p.names == frozenset({"ann", "ann.lee"})  # no system login, no empty value
    a, al = pseudonymise("ann", salt="s"), pseudonymise("ann.lee", salt="s")
    assert p.scrub("ask ann (annex) and Ann, joann") == f"ask {a} (annex) and Ann, joann"
    assert p.scrub("/home/ann.lee/ann_run-ann") == f"/home/{al}/{a}_run-{a}"
    assert p.scrub('{"user": "ann"}') == f'{{"user": "{a}"}}'
    assert p.scrub(None) is None and p.scrub("root cause") == "root cause"
    assert p.of("ann") == a and p.of("carol") == "carol" and p.of(None) is None


def test_a_user_named_only_by_rejected_rows_is_a_known_name(tmp_path: Path) -> None:
    """``orla``'s one sacct row is rejected (its Start is no time), ``bob``'s one JSON item
    too (its start is no number); ``alice`` loads. All three are known names, so the published
    copy's rejected lines carry pseudonyms (before: ``orla`` and ``bob`` reached no user-name column
    and were published in the rejected lines as they are)."""
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse

    text = tmp_path / "sacct_2026-11-09.psv"
    text.write_text(
        "JobID|User|Account|Start|End|AllocTRES|State\n"
        "1|alice|a|2026-11-09T01:00:00|2026-11-09T02:00:00|gres/gpu=1|COMPLETED\n"
        "2|orla|a|not-a-time|2026-11-09T02:00:00|gres/gpu=1|COMPLETED\n"
    )
    item = {"job_id": 3, "user": "bob", "state": {"current": ["COMPLETED"]},
            "time": {"start": "soon", "end": 5}}  # fmt: skip
    doc = tmp_path / "sacct_2026-11-10.json"
    doc.write_text(json.dumps({"meta": {}, "jobs": [item]}))
    wh = tmp_path / "w.duckdb"
    with connect(wh) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster="c", tz="UTC")
        ingest_file(con, "sacct", text, opts)
        ingest_file(con, "sacct", doc, opts)
        assert con.execute("SELECT count(*) FROM raw.rejected_rows").fetchall() == [(2,)]
        assert {"alice", "orla", "bob"} <= known_user_names(con)
    copy = publish_serving_copy(wh, tmp_path / "s.duckdb", show_names=False)
    with duckdb.connect(str(copy), read_only=True) as con:
        lines = " ".join(r for (r,) in con.execute("SELECT raw FROM raw.rejected_rows").fetchall())
    assert "orla" not in lines and "bob" not in lines
    assert lines.count("user-") == 2


def test_a_user_named_only_by_kubernetes_labels_is_a_known_name(tmp_path: Path) -> None:
    """Pod ``train-quillonmarsh-0`` of namespace ``ml`` carries the labels ``user: quillonmarsh``
    and ``example.org/owner: orlaith`` (and ``app.kubernetes.io/created-by: kubeflow``, a
    tool's name); an event says ``Job completed for quillonmarsh``. No Slurm row names either
    user. Both are known names and ``kubeflow`` is not, so the published copy's pod labels and
    name and the event's message carry pseudonyms (before: Kubernetes-only users were known to
    no rule and were published as they are)."""
    from pipelines.ingest import IngestOptions, ingest_file
    from pipelines.warehouse import connect, init_warehouse

    labels = {"user": "quillonmarsh", "example.org/owner": "orlaith",
              "app.kubernetes.io/created-by": "kubeflow"}  # fmt: skip
    pod = {
        "kind": "Pod",
        "metadata": {"uid": "u-1", "name": "train-quillonmarsh-0", "namespace": "ml",
                     "creationTimestamp": "2026-11-09T00:00:00Z", "labels": labels},
        "spec": {"containers": [{"name": "main"}]},
        "status": {"phase": "Pending"},
    }  # fmt: skip
    pods = tmp_path / "pods_2026-11-09.json"
    pods.write_text(json.dumps({"kind": "PodList", "items": [pod]}))
    event = {
        "kind": "Event", "type": "Normal", "reason": "Completed",
        "involvedObject": {"kind": "Pod", "name": "train-quillonmarsh-0", "namespace": "ml"},
        "metadata": {"name": "e1", "namespace": "ml", "uid": "e-1",
                     "creationTimestamp": "2026-11-09T01:00:00Z"},
        "firstTimestamp": "2026-11-09T01:00:00Z", "lastTimestamp": "2026-11-09T01:00:00Z",
        "message": "Job completed for quillonmarsh", "count": 1,
    }  # fmt: skip
    events = tmp_path / "events_2026-11-09.json"
    events.write_text(json.dumps({"kind": "EventList", "items": [event]}))
    wh = tmp_path / "w.duckdb"
    with connect(wh) as con:
        init_warehouse(con)
        opts = IngestOptions(cluster="k8s-a", tz="UTC")
        ingest_file(con, "k8s-pods", pods, opts)
        ingest_file(con, "k8s-events", events, opts)
        known = known_user_names(con)
    assert {"quillonmarsh", "orlaith"} <= known and "kubeflow" not in known
    copy = publish_serving_copy(wh, tmp_path / "s.duckdb", show_names=False)
    with duckdb.connect(str(copy), read_only=True) as con:
        (name, label_text) = con.execute("SELECT name, labels FROM raw.k8s_pods").fetchall()[0]
        (message,) = con.execute("SELECT message FROM raw.k8s_events").fetchall()[0]
    salt = load_salt(wh)
    quill, orla = pseudonymise("quillonmarsh", salt=salt), pseudonymise("orlaith", salt=salt)
    assert name == f"train-{quill}-0"
    assert json.loads(label_text) == {
        "user": quill, "example.org/owner": orla, "app.kubernetes.io/created-by": "kubeflow"
    }  # fmt: skip
    assert message == f"Job completed for {quill}"


def test_salt_file_is_random_private_reused_and_overridden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """First use writes a random salt beside the warehouse, mode 0600; later uses read it;
    ``GOODPUT_PSEUDONYM_SALT`` wins over it; another folder gets another salt."""
    monkeypatch.delenv("GOODPUT_PSEUDONYM_SALT", raising=False)
    wh = tmp_path / "a" / "warehouse.duckdb"
    first = load_salt(wh)
    assert len(first) == 64 and salt_path(wh) == tmp_path / "a" / ".pseudonym_salt"
    assert stat.S_IMODE(salt_path(wh).stat().st_mode) == 0o600
    assert load_salt(wh) == first
    assert load_salt(tmp_path / "b" / "warehouse.duckdb") != first
    monkeypatch.setenv("GOODPUT_PSEUDONYM_SALT", "site-secret")
    assert load_salt(wh) == "site-secret"


def test_salt_file_is_ignored_by_git(tmp_path: Path) -> None:
    """``data/.pseudonym_salt`` (and a salt beside any warehouse) is never committed: the
    repository's ``.gitignore``, in a repository of its own (so the test runs in a tarball too)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copyfile(REPO / ".gitignore", tmp_path / ".gitignore")
    for path in ("data/.pseudonym_salt", "elsewhere/.pseudonym_salt"):
        done = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "-q", path], check=False)
        assert done.returncode == 0, path
    kept = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "-q", "data/x.py"])
    assert kept.returncode == 1  # the test can fail: an ordinary file is not ignored


def test_patch_naming_a_user_is_commented_out_unless_names_are_shown(tmp_path: Path) -> None:
    """A sacctmgr patch on a personal account ``ann``: written commented out, naming the
    pseudonym and where the real name is; with names shown it is written as it is."""
    row = {
        "id": "rec-1", "rule": "idle_allocations", "cluster": "c", "scope": "cluster=c/account=ann",
        "severity": "warning", "evidence": json.dumps({"top_offenders": [{"user": "ann"}]}),
        "expected_gain_gpu_h_per_week": 1.0, "expected_wait_reduction_s": None,
        "confidence": 0.5, "change_text": "Cap ann's account.", "patch_kind": "sacctmgr",
        "patch_content": "sacctmgr -i modify account name=ann set GrpTRES=gres/gpu=8",
        "window_start": dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
        "window_end": dt.datetime(2026, 11, 2, tzinfo=dt.UTC),
    }  # fmt: skip
    frame = pl.DataFrame([row])
    as_of = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
    p = Pseudonyms.of_names("s", ["ann"])
    a = p.mapping["ann"]
    hidden = write_outputs(frame, tmp_path / "hidden", as_of, pseudonyms=p, show_names=False)
    text = hidden["sacctmgr.sh"].read_text("utf-8")
    assert not _named(text, {"ann"})
    assert f"# sacctmgr -i modify account name={a} set GrpTRES=gres/gpu=8\n" in text
    assert f"names user {a} by pseudonym" in text and "warehouse" in text
    assert "GOODPUT_SHOW_USER_NAMES=1" in text
    assert not _named(hidden["latest.json"].read_text("utf-8"), {"ann"})
    shown = write_outputs(frame, tmp_path / "shown", as_of, pseudonyms=p, show_names=True)
    text = shown["sacctmgr.sh"].read_text("utf-8")
    assert "\nsacctmgr -i modify account name=ann set GrpTRES=gres/gpu=8\n" in text
    assert a not in text


# --------------------------------------------------------------------------------------------
# The declared columns against the warehouse


def _text_columns(db: Path) -> dict[str, dict[str, str]]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT table_schema, table_name, column_name, data_type"
            " FROM information_schema.columns JOIN information_schema.tables"
            " USING (table_schema, table_name) WHERE table_type = 'BASE TABLE'"
        ).fetchall()
    out: dict[str, dict[str, str]] = {}
    for schema, table, column, dtype in rows:
        if dtype.startswith("VARCHAR"):
            out.setdefault(f"{schema}.{table}", {})[column] = dtype
    return out


def test_every_user_like_column_is_declared(materialized: Materialized) -> None:
    """A text column named like a person's (``user``, ``owner``, ``login``…) in any table of the
    warehouse is pseudonymised, scrubbed, or declared not personal: a new table with such a
    column fails here until ``pipelines/privacy.py`` says what it holds."""
    missing = [
        f"{table}.{column}"
        for table, cols in _text_columns(materialized.cfg.warehouse_path).items()
        for column in cols
        if USER_LIKE_COLUMN.search(column)
        and column not in NOT_PERSONAL_COLUMNS
        and column not in FREE_TEXT_EVERYWHERE
        and column not in USER_NAME_COLUMNS.get(table, ())
        and column not in FREE_TEXT_COLUMNS.get(table, ())
    ]
    assert not missing, f"declare these in pipelines/privacy.py: {missing}"


def test_every_declared_column_is_a_text_column_of_the_warehouse(
    materialized: Materialized,
) -> None:
    """A renamed column would silently stop being pseudonymised: each declared one exists."""
    cols = _text_columns(materialized.cfg.warehouse_path)
    for declared in (USER_NAME_COLUMNS, FREE_TEXT_COLUMNS):
        for table, wanted in declared.items():
            for column in wanted:
                assert column in cols.get(table, {}), f"{table}.{column}"
    for column in FREE_TEXT_EVERYWHERE:
        assert any(column in c for c in cols.values()), column


# --------------------------------------------------------------------------------------------
# Everything published


def test_published_artefacts_name_no_user(config_env: Materialized, tmp_path: Path) -> None:
    """No user name of the warehouse appears in any table or view of the serving copy, in the
    weekly report (HTML, JSON, and the PDF's text where Chromium and pdftotext are), in the patch
    files (from the Dagster run and from the copy), or in ``goodput kpis``; their pseudonyms do."""
    cfg = config_env.cfg
    names = _real_names(cfg.warehouse_path)
    pdf = shutil.which("pdftotext") is not None and _has_chromium()
    published = _published(cfg.warehouse_path.parent, tmp_path, cfg.serving_path, pdf=pdf)
    leaks = {where: sorted(_named(text, names)) for where, text in published.items()}
    assert not {k: v for k, v in leaks.items() if v}
    # The names were there to hide: the warehouse dumps them, the copy has their pseudonyms.
    assert _named(_dump(cfg.warehouse_path), names) == names
    salt = load_salt(cfg.warehouse_path)
    copy = published["serving copy"]
    assert all(pseudonymise(n, salt=salt) in copy for n in _job_users(cfg.warehouse_path))
    report = json.loads(published["report.json"])
    assert report["user_names"] == "pseudonymised"
    assert report["longest_waits"]
    assert all(re.fullmatch(r"user-[0-9a-f]{12}", w["user"]) for w in report["longest_waits"])
    assert re.search(r"user-[0-9a-f]{12}", published["dagster recs/latest.json"])


def test_the_published_file_holds_no_name_in_its_bytes(
    config_env: Materialized, tmp_path: Path
) -> None:
    """The serving copy's bytes, not only its live rows: pseudonymising updates the copied rows
    in place and DuckDB frees the old blocks without zeroing them, so the first copy's file still
    held every real name beside its pseudonym (``strings serving.duckdb``). A name's bytes may
    appear only inside the copy's live text (a view's SQL, a longer word)."""
    cfg = config_env.cfg
    names = _real_names(cfg.warehouse_path)
    for detail_days in (0, 35):
        copy = publish_serving_copy(
            cfg.warehouse_path, tmp_path / f"s{detail_days}.duckdb", detail_days=detail_days
        )
        data = copy.read_bytes()
        with duckdb.connect(str(copy), read_only=True) as con:
            views = " ".join(
                sql for (sql,) in con.execute("SELECT sql FROM duckdb_views()").fetchall()
            )
        live = _dump(copy) + views
        assert {n for n in names if n.encode() in data and n not in live} == set()


def _job_users(warehouse: Path) -> set[str]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute("SELECT DISTINCT user_name FROM jobs WHERE user_name IS NOT NULL")
        return {r[0] for r in rows.fetchall()}


def _has_chromium() -> bool:
    try:
        find_chromium()
    except Exception:
        return False
    return True


def test_pseudonyms_are_stable_across_publishes(config_env: Materialized, tmp_path: Path) -> None:
    """Two publishes with the same salt give the same pseudonyms (trend views hold)."""
    cfg = config_env.cfg
    again = publish_serving_copy(cfg.warehouse_path, tmp_path / "again.duckdb", detail_days=0)
    sql = "SELECT DISTINCT user_name FROM jobs ORDER BY ALL"
    with duckdb.connect(str(again), read_only=True) as con:
        second = con.execute(sql).fetchall()
    with duckdb.connect(str(cfg.serving_path), read_only=True) as con:
        first = con.execute(sql).fetchall()
    assert first == second and len(first) > 10


def test_opt_in_publishes_real_names(
    config_env: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GOODPUT_SHOW_USER_NAMES=1`` at publish time: the copy, the report and the patch files
    written from the copy name the users (so the test above can fail)."""
    cfg = config_env.cfg
    monkeypatch.setenv("GOODPUT_SHOW_USER_NAMES", "1")
    shown = publish_serving_copy(cfg.warehouse_path, tmp_path / "shown.duckdb", detail_days=35)
    monkeypatch.delenv("GOODPUT_SHOW_USER_NAMES")
    published = _published(cfg.warehouse_path.parent, tmp_path, shown, pdf=False)
    users = _job_users(cfg.warehouse_path)
    assert _named(published["serving copy"], users) == users
    assert json.loads(published["report.json"])["user_names"] == "shown"
    assert _named(published["report.html"], users)
    assert _named(published["recs/latest.json"], users)
    assert _named(published["recs/sacctmgr.sh"] + published["recs/slurm.conf.patch"], users)


@pytest.mark.parametrize("detail_days", [0, 35])
def test_names_in_free_text_are_scrubbed(
    materialized: Materialized, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, detail_days: int
) -> None:
    """Names planted in a warehouse's job names, comments and pod names (``alice_run``,
    ``/home/alice``, ``alice-pod``) are pseudonyms in the copy, whole or cut to recent detail."""
    monkeypatch.setenv("GOODPUT_PSEUDONYM_SALT", "planted")
    monkeypatch.delenv("GOODPUT_SHOW_USER_NAMES", raising=False)
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(materialized.cfg.warehouse_path, warehouse)
    with duckdb.connect(str(warehouse)) as con:
        for table in ("raw.slurm_rows", "core.slurm_jobs"):
            con.execute(
                f"UPDATE {table} SET job_name = user_name || '_run',"
                " extra = 'workdir=/home/' || user_name || '/x' WHERE user_name IS NOT NULL"
            )
        con.execute("UPDATE core.k8s_pods SET name = 'alice-' || name")
    names = _real_names(warehouse)
    copy = publish_serving_copy(warehouse, tmp_path / "s.duckdb", detail_days=detail_days)
    assert not _named(_dump(copy), names)
    with duckdb.connect(str(copy), read_only=True) as con:
        rows = con.execute(
            "SELECT DISTINCT user_name, job_name, extra FROM slurm_jobs WHERE user_name IS NOT NULL"
        ).fetchall()
        pods = con.execute("SELECT DISTINCT split_part(name, '-', 1) FROM k8s_pods").fetchall()
    assert rows and all(j == f"{u}_run" and e == f"workdir=/home/{u}/x" for u, j, e in rows)
    assert all(re.fullmatch(r"user-[0-9a-f]{12}", u) for u, _, _ in rows)
    assert pods == [("user",)]
