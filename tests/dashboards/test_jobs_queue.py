"""The Jobs and Queue-now pages against the serving copy's own views.

The Jobs page lists attempts (searchable), and ``?cluster=…&job=…`` opens one job: its per-GPU
series equals ``gpu_activity`` for that job and its figures are ``goodput job``'s. The Queue
page counts what is pending at the cut-off, as a direct query on the views does.
"""

from __future__ import annotations

import re

import polars as pl
import pytest

from tests.conftest import Materialized
from tests.dashboards.test_pages import _page, _table, _view

pytestmark = pytest.mark.slow

ONE_JOB = "('label_hpc_job', 'pod', 'gres_index', 'whole_node')"


@pytest.fixture
def serving(materialized: Materialized, monkeypatch: pytest.MonkeyPatch) -> str:
    """The small fleet's serving copy, wired into the app through the environment."""
    path = str(materialized.cfg.serving_path)
    monkeypatch.setenv("GOODPUT_SERVING_DB", path)
    monkeypatch.setenv("GOODPUT_CONFIG", str(materialized.cfg.path))
    return path


def _idlest_kubernetes_job(serving: str) -> tuple[str, str]:
    """The Kubernetes attempt with the most idle GPU-seconds in ``job_gpu_summary``."""
    cluster, job_id = _view(
        serving,
        "select cluster, job_id from job_gpu_summary where source = 'kubernetes' "
        "and observed_gpu_s > 0 order by idle_gpu_s desc, job_id limit 1",
    ).row(0)
    return str(cluster), str(job_id)


def test_jobs_page_url_opens_the_job_with_its_gpu_series(serving: str) -> None:
    """``?cluster=&job=`` opens the job: its per-GPU series is ``gpu_activity``'s rows for it,
    the attempts table shows telemetry (not "no telemetry") and the URL keeps the job."""
    cluster, job_id = _idlest_kubernetes_job(serving)
    at = _page("jobs", cluster=cluster, job=job_id)
    assert [t.value for t in at.title] == ["Jobs"]
    assert at.text_input(key="job").value == job_id
    assert at.query_params["job"] == job_id and at.query_params["cluster"] == cluster

    shown = _table(at, "GPU", "5-minute bucket (UTC)", "activity")
    want = _view(
        serving,
        "select gpu_uuid, bucket, activity from gpu_activity where cluster = '"
        + cluster + "' and job_id = '" + job_id + "' and attribution in " + ONE_JOB
        + " order by gpu_uuid, bucket",
    )  # fmt: skip
    assert want.height > 0
    got = (
        shown.select(
            "gpu_uuid",
            pl.col("5-minute bucket (UTC)").dt.convert_time_zone("UTC").dt.cast_time_unit("us")
            .alias("bucket"),
            "activity",
        )
        .sort("gpu_uuid", "bucket")
    )  # fmt: skip
    assert got["gpu_uuid"].to_list() == want["gpu_uuid"].to_list()
    assert got["bucket"].to_list() == want["bucket"].dt.cast_time_unit("us").to_list()
    assert got["activity"].to_list() == pytest.approx(want["activity"].to_list(), rel=1e-12)

    attempts = _table(at, "attempt", "outcome", "observed GPU-hours", "idle GPU-hours")
    assert attempts.height == 1
    assert attempts["observed GPU-hours"][0] > 0 and attempts["idle GPU-hours"][0] > 0
    assert "no telemetry" not in at.get("code")[0].proto.code_text


def test_jobs_page_search_filters_the_list(serving: str) -> None:
    """The list holds every attempt by default; a search keeps the attempts whose id, user,
    team, account, partition or state contain the text (a direct query counts them)."""
    at = _page("jobs")
    everything = _table(at, "job", "user", "team", "GPU-hours")
    (n_all,) = _view(serving, "select count(*) from jobs").row(0)
    assert everything.height == n_all
    user = str(_view(serving, "select min(user_name) from jobs where source = 'slurm'").item())
    at.text_input(key="jobs_search").set_value(user).run()
    assert not at.exception
    found = _table(at, "job", "user", "team", "GPU-hours")
    (n_user,) = _view(
        serving,
        "select count(*) from jobs where contains(lower(concat_ws(' ', job_id, job_id_raw, "
        f"user_name, team, account, partition, state)), lower('{user}'))",
    ).row(0)
    assert 0 < found.height == n_user
    assert set(found["user"].drop_nulls()) == {user}


def test_jobs_page_unknown_job_says_so(serving: str) -> None:
    """A job id the serving copy lacks is a warning, not an exception."""
    at = _page("jobs", job="no-such-job")
    assert any("No job no-such-job" in w.value for w in at.warning)


def test_queue_page_counts_the_pending_jobs_at_the_cut_off(serving: str) -> None:
    """Pending now = Slurm rows never started and still PENDING + Kueue Workloads PENDING; the
    same number as the PENDING spells of ``time_to_start_jobs``, censored, or excluded for a
    throttled array's tasks waiting for their array's slots (no eligible time, METRICS.md
    "Arrays"; the sample fleet has such arrays); waits to the cut-off."""
    at = _page("queue")
    assert [t.value for t in at.title] == ["Queue now"]
    (slurm,) = _view(
        serving,
        "select count(*) from slurm_jobs where step is null and start_at is null "
        "and state = 'PENDING'",
    ).row(0)
    (kueue,) = _view(serving, "select count(*) from k8s_workloads where state = 'PENDING'").row(0)
    (spells,) = _view(
        serving, "select count(*) from time_to_start_jobs where state = 'PENDING' and not started"
    ).row(0)
    (throttled,) = _view(
        serving,
        "select count(*) from time_to_start_jobs where state = 'PENDING' and started is null"
        " and eligible_at is null and job_id like '%\\_%' escape '\\'",
    ).row(0)
    assert slurm > 0 and kueue > 0 and throttled > 0 and slurm + kueue == spells + throttled
    shown = {m.label: m.value for m in at.metric}
    assert shown["Pending"] == f"{slurm + kueue:,}"
    table = _table(at, "job", "GPUs", "waiting", "reason", "estimated start")
    assert table.height == slurm + kueue
    # Estimated starts (hand-checked on a built copy in test_queue_estimate.py): every Slurm
    # job gets a start at or after its cluster's cut-off or "not within 7 days"; Kueue is n/a.
    slurm_rows = table.filter(pl.col("scheduler") == "slurm")
    ((cut,),) = _view(
        serving, "select strftime(max(as_of), '%Y-%m-%d %H:%M') from jobs where source = 'slurm'"
    ).rows()
    for text in slurm_rows["estimated start"]:
        assert text == "not within 7 days of the cut-off" or (
            re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in .+\)", text) and text[:16] >= cut
        ), text
    assert set(table.filter(pl.col("scheduler") == "kubernetes")["estimated start"]) == {
        "n/a (Kueue admission is not modelled)"
    }
    (gpus,) = _view(
        serving,
        "select sum(req_gpus) from slurm_jobs where step is null and start_at is null "
        "and state = 'PENDING'",
    ).row(0)
    (k_gpus,) = _view(
        serving,
        "select sum(coalesce(nullif(req_gpus, 0), gpus)) from k8s_workloads "
        "where state = 'PENDING'",
    ).row(0)
    assert shown["GPUs requested"] == f"{gpus + k_gpus:,.0f}"
    k8s = table.filter(pl.col("scheduler") == "kubernetes")
    assert k8s.height == kueue and k8s["reason"].str.starts_with("kueue:").all()


def test_queue_page_cluster_filter(serving: str) -> None:
    """``?cluster=`` keeps that cluster's pending workloads only."""
    (cluster, n) = _view(
        serving, "select cluster, count(*) from k8s_workloads where state = 'PENDING' group by 1"
    ).row(0)
    at = _page("queue", cluster=str(cluster))
    assert {m.label: m.value for m in at.metric}["Pending"] == f"{n:,}"
