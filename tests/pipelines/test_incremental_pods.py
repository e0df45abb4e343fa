"""Incremental builds equal to a full rebuild where pod-labelled DCGM samples move between jobs
with no changed row spanning their days, at three edges a breaker's load sequences found: a pod
file loaded after the pod's samples (some after the pod ended), a Workload's LocalQueue (its
team) changed, and a pod name used again by a later job's pod. One Kubernetes cluster ``k8s-x``
with two 8-GPU nodes; pods in ``kubectl get pods -o json`` lists, samples in dcgm-exporter text
every 30 minutes."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.analytics.build import rebuild
from pipelines.config import Config, load_config
from pipelines.ingest import IngestOptions, ingest_file
from pipelines.warehouse import connect, init_warehouse
from tests.pipelines.test_incremental import assert_equals_full_rebuild

K = "k8s-x"
_REGISTRY = """teams:
  - team: nlp
    share: 0.5
    k8s_namespaces: [nlp]
    k8s_local_queues: [lq-nlp]
  - team: vision
    share: 0.5
    k8s_namespaces: [vision]
    k8s_local_queues: [lq-vision]
"""


@pytest.fixture
def cluster(tmp_path: Path) -> tuple[Config, Path]:
    """k8s-x, nodes n1 and n2 of 8 GPUs, teams nlp and vision by namespace and LocalQueue."""
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / f"{K}.csv").write_text(
        "host,gpus,gpu_type,partition,rack\nn1,8,h100,cq-a,r1\nn2,8,h100,cq-a,r1\n",
        encoding="utf-8",
    )
    (tmp_path / "inputs").mkdir()
    (tmp_path / "registry.yaml").write_text(_REGISTRY, encoding="utf-8")
    (tmp_path / "goodput.toml").write_text(
        f'default_cluster = "{K}"\n[warehouse]\npath = "{tmp_path / "w.duckdb"}"\n'
        f'serving_path = "{tmp_path / "s.duckdb"}"\ninputs = "{tmp_path / "inputs"}"\n'
        f'inventory = "{tmp_path / "inventory"}"\nregistry = "{tmp_path / "registry.yaml"}"\n'
        f'partitions_start = "2026-01-01"\n[[clusters]]\nname = "{K}"\n'
        'scheduler = "kubernetes"\ntimezone = "UTC"\n',
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "goodput.toml")
    with connect(cfg.warehouse_path) as con:
        init_warehouse(con)
    return cfg, tmp_path


def _pod(name: str, ns: str, owner: str, node: str, start: str, end: str, uid: str = "",
         workload: str = "") -> dict[str, Any]:  # fmt: skip
    """A finished pod of 4 GPUs owned by Job ``owner``, bound and started at ``start``."""
    meta: dict[str, Any] = {
        "name": name, "namespace": ns, "uid": uid or f"uid-{ns}-{name}",
        "creationTimestamp": start, "labels": {},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": owner,
                             "uid": f"juid-{owner}", "controller": True}],
    }  # fmt: skip
    if workload:
        meta["annotations"] = {"kueue.x-k8s.io/workload": workload}
    done = {"exitCode": 0, "reason": "Completed", "startedAt": start, "finishedAt": end}
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"nodeName": node, "containers": [
            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
        "status": {"phase": "Succeeded", "startTime": start,
                   "conditions": [{"type": "PodScheduled", "status": "True",
                                   "lastTransitionTime": start}],
                   "containerStatuses": [{"name": "c", "ready": False, "restartCount": 0,
                                          "state": {"terminated": done}}]},
    }  # fmt: skip


def _workload(name: str, owner: str, queue: str, start: str, end: str) -> dict[str, Any]:
    """A Kueue Workload of one 4-GPU pod set, admitted at ``start``, finished at ``end``."""
    ps = {"count": 1, "name": "main", "template": {"spec": {"containers": [
        {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}}  # fmt: skip
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"creationTimestamp": start, "name": name, "namespace": "nlp",
                     "uid": f"wuid-{name}",
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": owner,
                                          "uid": f"juid-{owner}", "controller": True}]},
        "spec": {"active": True, "podSets": [ps], "priority": 0, "queueName": queue},
        "status": {
            "conditions": [
                {"lastTransitionTime": start, "reason": "QuotaReserved", "status": "True",
                 "type": "QuotaReserved", "message": "Quota reserved in ClusterQueue cq-a"},
                {"lastTransitionTime": start, "reason": "Admitted", "status": "True",
                 "type": "Admitted", "message": "admitted by cq-a"},
                {"lastTransitionTime": end, "reason": "Succeeded", "status": "True",
                 "type": "Finished", "message": "Job finished successfully"}],
            "admission": {"clusterQueue": "cq-a", "podSetAssignments": [
                {"count": 1, "flavors": {"nvidia.com/gpu": "h100"}, "name": "main",
                 "resourceUsage": {"nvidia.com/gpu": "4"}}]},
        },
    }  # fmt: skip


def _list(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "utf-8")
    return path


def _every_30_min(start: str, end: str) -> Iterator[dt.datetime]:
    t, stop = dt.datetime.fromisoformat(start), dt.datetime.fromisoformat(end)
    while t < stop:
        yield t
        t += dt.timedelta(minutes=30)


def _dcgm(path: Path, host: str, gpu: int, ns: str, pod: str, times: Iterator[dt.datetime]) -> Path:
    """Activity 0.5 on one GPU, labelled with the pod, at each of ``times`` (UTC)."""
    m = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    lines = [f"# HELP {m} x", f"# TYPE {m} gauge"] + [
        f'{m}{{gpu="{gpu}",UUID="GPU-{host}-{gpu}",device="nvidia{gpu}",'
        f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",container="c",namespace="{ns}",'
        f'pod="{pod}"}} 0.5 {int(t.replace(tzinfo=dt.UTC).timestamp() * 1000)}'
        for t in times
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _load(cfg: Config, kind: str, path: Path) -> None:
    with connect(cfg.warehouse_path) as con:
        ingest_file(con, kind, path, IngestOptions(cluster=K, tz="UTC"))


def _build(cfg: Config) -> str:
    with connect(cfg.warehouse_path) as con:
        rebuild(con, cfg)
        ((mode,),) = con.execute(
            "SELECT mode FROM analytics.build_state ORDER BY build_id DESC LIMIT 1"
        ).fetchall()
    return str(mode)


def _after(cfg: Config, hour: str) -> list[tuple[Any, ...]]:
    """``job_id, team`` of the pod-attributed GPU activity at or after ``hour`` (UTC)."""
    with connect(cfg.warehouse_path, read_only=True) as con:
        return con.execute(
            "SELECT DISTINCT job_id, team FROM analytics.gpu_activity"
            " WHERE attribution = 'pod' AND bucket >= $h ORDER BY ALL",
            {"h": dt.datetime.fromisoformat(hour).replace(tzinfo=dt.UTC)},
        ).fetchall()


# c-0 (team vision, on n2) holds the cut-off at 11-02 06:00.
_C0 = _pod("c-0", "vision", "jobc", "n2", "2026-11-01T01:00:00Z", "2026-11-02T06:00:00Z")


@pytest.mark.parametrize("rule", [True, False], ids=["planned", "without-the-rule"])
def test_a_pod_loaded_after_its_samples_replans_their_days(
    cluster: tuple[Config, Path], rule: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Samples of pod b-0 every 30 minutes from 11-01 13:10 to 11-02 00:40 are loaded before
    the pod is known: they are the pod's own job ``nlp/b-0`` (no team). The pods file then
    comes again with b-0 (Job jobb, 13:00 to 23:50): the samples go to ``nlp/jobb``, team nlp,
    those of 11-02 too (00:10 and 00:40, after the pod ended, no attempt holding them). The new
    pod plans the days of its stored samples (``_pod_sample_spans``); without that rule 11-02
    keeps ``nlp/b-0``."""
    cfg, base = cluster
    if not rule:
        _without_the_rule(monkeypatch)
    pods = base / "inputs" / "pods_2026-11-01.json"
    _load(cfg, "k8s-pods", _list(pods, [_C0]))
    _load(cfg, "dcgm", _dcgm(base / "inputs" / "dcgm_2026-11-01.prom", "n1", 1, "nlp", "b-0",
                             _every_30_min("2026-11-01T13:10", "2026-11-02T01:00")))  # fmt: skip
    assert _build(cfg) == "full"
    assert _after(cfg, "2026-11-02T00:00") == [("nlp/b-0", None)]
    b0 = _pod("b-0", "nlp", "jobb", "n1", "2026-11-01T13:00:00Z", "2026-11-01T23:50:00Z")
    _load(cfg, "k8s-pods", _list(pods, [_C0, b0]))
    assert _build(cfg) == "incremental"
    if not rule:
        assert _after(cfg, "2026-11-02T00:00") == [("nlp/b-0", None)]
        with pytest.raises(AssertionError, match="gpu_activity"):
            assert_equals_full_rebuild(cfg, base)
        return
    assert _after(cfg, "2026-11-02T00:00") == [("nlp/jobb", "nlp")]
    assert assert_equals_full_rebuild(cfg, base) > 30


def _without_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's pod rule (``_pod_sample_spans``) finds no day."""
    import pipelines.analytics.incremental as incremental

    none = pl.DataFrame(
        schema={"cluster": pl.String(), "lo": pl.Datetime("us", "UTC"),
                "hi": pl.Datetime("us", "UTC")}
    )  # fmt: skip
    monkeypatch.setattr(incremental, "_pod_sample_spans", lambda *_a: (none, None))


@pytest.mark.parametrize("rule", [True, False], ids=["planned", "without-the-rule"])
def test_a_workloads_queue_changed_moves_its_pods_tail_to_the_new_team(
    cluster: tuple[Config, Path], rule: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workload job-jobb-1 (LocalQueue lq-nlp: team nlp) ran pod b-0 11-01 13:00–23:50; its
    samples run to 11-02 00:40. The Workloads file comes again with LocalQueue lq-vision: the
    job's rows change (team vision) and, with them, its pod's samples of 11-02, on which no
    attempt of the job lies (without the rule they keep team nlp)."""
    cfg, base = cluster
    if not rule:
        _without_the_rule(monkeypatch)
    start, end = "2026-11-01T13:00:00Z", "2026-11-01T23:50:00Z"
    b0 = _pod("b-0", "nlp", "jobb", "n1", start, end, workload="job-jobb-1")
    _load(cfg, "k8s-pods", _list(base / "inputs" / "pods_2026-11-01.json", [_C0, b0]))
    _load(cfg, "dcgm", _dcgm(base / "inputs" / "dcgm_2026-11-01.prom", "n1", 1, "nlp", "b-0",
                             _every_30_min("2026-11-01T13:10", "2026-11-02T01:00")))  # fmt: skip
    workloads = base / "inputs" / "workloads_2026-11-01.json"
    _load(cfg, "k8s-objects", _list(workloads, [_workload("job-jobb-1", "jobb", "lq-nlp", start,
                                                          end)]))  # fmt: skip
    assert _build(cfg) == "full"
    assert _after(cfg, "2026-11-02T00:00") == [("nlp/job-jobb-1", "nlp")]
    _load(cfg, "k8s-objects", _list(workloads, [_workload("job-jobb-1", "jobb", "lq-vision",
                                                          start, end)]))  # fmt: skip
    assert _build(cfg) == "incremental"
    if not rule:
        assert _after(cfg, "2026-11-02T00:00") == [("nlp/job-jobb-1", "nlp")]
        with pytest.raises(AssertionError, match="gpu_activity"):
            assert_equals_full_rebuild(cfg, base)
        return
    assert _after(cfg, "2026-11-02T00:00") == [("nlp/job-jobb-1", "vision")]
    assert assert_equals_full_rebuild(cfg, base) > 30


def test_a_pod_name_used_again_keeps_the_first_pods_samples(
    cluster: tuple[Config, Path],
) -> None:
    """Job joba's pod w-0 (uid u-a) ran 11-01 01:00–10:00, with samples; job aaa's pod, named
    w-0 again (uid u-b), runs 11-02 01:00–10:00. The samples of 11-01 stay joba's, in the
    incremental build and in a full one (they went to aaa, the one job a pod name had: the
    full build differed from the incremental one, which kept them)."""
    cfg, base = cluster
    _two_lives(cfg, base, first="2026-11-01", then="2026-11-02", c0_end="2026-11-03",
               samples=("2026-11-01T01:10", "2026-11-01T10:00"))  # fmt: skip
    assert _after(cfg, "2026-11-01T00:00") == [("nlp/joba", "nlp")]
    assert _after(cfg, "2026-11-01T00:00") == [("nlp/joba", "nlp")]
    assert assert_equals_full_rebuild(cfg, base) > 30


@pytest.mark.parametrize("rule", [True, False], ids=["planned", "without-the-rule"])
def test_an_earlier_pod_of_a_name_loaded_late_takes_its_tail_back(
    cluster: tuple[Config, Path], rule: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pod w-0 of job aaa (uid u-b) runs 11-03 01:00–10:00; samples of w-0 on 11-02 (every 30
    minutes, 00:10 to 23:40) lie before it: with it the only life of the name, they are aaa's.
    Then the pods file of 11-01 comes with job joba's w-0 (uid u-a, 11-01 01:00–10:00): the
    samples of 11-02 are its tail (the life that held the name last before them), joba's. No
    changed row spans 11-02 (joba's runs on 11-01, aaa's did not change): the pod rule plans it
    (without it the samples stay aaa's)."""
    cfg, base = cluster
    if not rule:
        _without_the_rule(monkeypatch)
    _two_lives(cfg, base, first="2026-11-03", then="2026-11-01", c0_end="2026-11-04",
               samples=("2026-11-02T00:10", "2026-11-03T00:00"), jobs=("aaa", "joba"),
               before=[("nlp/aaa", "nlp")])  # fmt: skip
    if not rule:
        assert _after(cfg, "2026-11-02T00:00") == [("nlp/aaa", "nlp")]
        with pytest.raises(AssertionError, match="gpu_activity"):
            assert_equals_full_rebuild(cfg, base)
        return
    assert _after(cfg, "2026-11-02T00:00") == [("nlp/joba", "nlp")]
    assert assert_equals_full_rebuild(cfg, base) > 30


def _two_lives(
    cfg: Config, base: Path, *, first: str, then: str, c0_end: str, samples: tuple[str, str],
    jobs: tuple[str, str] = ("joba", "aaa"), before: list[tuple[Any, ...]] | None = None,
) -> None:  # fmt: skip
    """Two lives of pod ``nlp/w-0`` on n1, GPU 0, each 01:00–10:00 of its day: job ``jobs[0]``
    on ``first`` (uid u-1, loaded with c-0, which holds the cut-off to ``c0_end`` 10:00, and
    with samples every 30 minutes over ``samples``), built in full (its pod-attributed activity
    from ``samples[0]`` on is ``before``, when given), then job ``jobs[1]`` on ``then`` (uid
    u-2), its pods file loaded and built incrementally."""
    c0 = _pod("c-0", "vision", "jobc", "n2", "2026-11-01T00:00:00Z", f"{c0_end}T10:00:00Z")
    days = zip(jobs, (first, then), strict=True)
    lives = [_pod("w-0", "nlp", job, "n1", f"{day}T01:00:00Z", f"{day}T10:00:00Z", f"u-{i}")
             for i, (job, day) in enumerate(days, start=1)]  # fmt: skip
    _load(cfg, "k8s-pods", _list(base / "inputs" / f"pods_{first}.json", [lives[0], c0]))
    _load(cfg, "dcgm", _dcgm(base / "inputs" / f"dcgm_{samples[0][:10]}.prom", "n1", 0, "nlp",
                             "w-0", _every_30_min(*samples)))  # fmt: skip
    assert _build(cfg) == "full"
    if before is not None:
        assert _after(cfg, samples[0]) == before
    _load(cfg, "k8s-pods", _list(base / "inputs" / f"pods_{then}.json", [lives[1]]))
    assert _build(cfg) == "incremental"
