"""Which DCGM samples move a Kubernetes cluster's cut-off (``pipelines.core.build.
_running_pod_samples``, METRICS.md "as_of"): the latest sample of a pod still running, at or
after its start; not a finished or deleted pod's, nor one before the pod's start (an earlier pod
of that name)."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from pipelines.core.build import _as_of, _running_pod_samples, _workload_times

UTC = pl.Datetime("us", "UTC")


def _at(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, 2, hour, minute, tzinfo=dt.UTC)


PODS = pl.DataFrame(
    {
        "cluster": ["k", "k", "k", "k", "j"],
        "namespace": ["nlp"] * 5,
        "name": ["run", "done", "gone", "new", "run"],
        "phase": ["Running", "Succeeded", "Running", "Running", "Running"],
        "created_at": [_at(10), _at(9), _at(9), _at(11), _at(8)],
        "scheduled_at": [_at(10), _at(9), _at(9), _at(11), _at(8)],
        "started_at": [_at(10), _at(9), _at(9), _at(11), _at(8)],
        "finished_at": [None, _at(10), None, None, None],
        "deleted_at": [None, None, _at(10), None, None],
    },
    schema_overrides={c: UTC for c in ("created_at", "scheduled_at", "started_at",
                                       "finished_at", "deleted_at")},
)  # fmt: skip


def test_only_a_running_pods_samples_after_its_start_count() -> None:
    """k: ``run`` sampled to 12:30 counts; ``done`` (finished 10:00, a late sample 13:00) and
    ``gone`` (deleted 10:00, 14:00) do not; ``new`` (started 11:00) has only a sample of 10:45,
    an earlier pod's of that name. j: ``run`` to 09:15. Cut-offs: k 12:30 (its pods: 11:00), j
    09:15 (its pods: 08:00)."""
    samples = pl.DataFrame(
        {
            "cluster": ["k", "k", "k", "k", "j"],
            "namespace": ["nlp"] * 5,
            "pod": ["run", "done", "gone", "new", "run"],
            "last_sample": [_at(12, 30), _at(13), _at(14), _at(10, 45), _at(9, 15)],
        },
        schema_overrides={"last_sample": UTC},
    )
    got = _running_pod_samples(PODS, samples).sort("cluster")
    assert got.rows() == [("j", _at(9, 15)), ("k", _at(12, 30))]
    cols = ["created_at", "scheduled_at", "started_at", "finished_at", "deleted_at"]
    cut = _as_of([(PODS, cols), (got, ["last_sample"])]).sort("cluster")
    assert cut.rows() == [("j", _at(9, 15)), ("k", _at(12, 30))]
    assert _as_of([(PODS, cols)]).sort("cluster").rows() == [("j", _at(8)), ("k", _at(11))]


def test_no_samples_move_nothing() -> None:
    """Without samples (None or empty) no row."""
    assert _running_pod_samples(PODS, None).height == 0
    assert _running_pod_samples(PODS, PODS.head(0).select("cluster", "namespace")).height == 0


def test_workload_condition_times_reach_the_cut_off() -> None:
    """Every ``lastTransitionTime`` of a Workload's conditions counts, a ``False`` one too (its
    ``Evicted`` turned False at the re-admission, 11:10), and its creation; not the backoff
    deadline ``requeue_at`` (13:00, a plan). k: pods to 11:00, Workload ``w`` created 09:00,
    evicted 10:40, re-admitted 11:10 (``Admitted`` True, ``Evicted`` False): cut-off 11:10 (the
    pods alone: 11:00); j: a Workload without conditions created 08:30, after its pods' 08:00:
    cut-off 08:30."""
    conds = json.dumps(
        [
            {"type": "Admitted", "status": "True", "lastTransitionTime": "2026-11-02T11:10:00Z"},
            {"type": "Evicted", "status": "False", "lastTransitionTime": "2026-11-02T11:10:00Z"},
            {"type": "Preempted", "status": "False",
             "lastTransitionTime": "2026-11-02T10:40:00.5Z"},
        ]
    )  # fmt: skip
    wl = pl.DataFrame(
        {
            "cluster": ["k", "j"],
            "created_at": [_at(9), _at(8, 30)],
            "requeue_at": [_at(13), None],
            "conditions": [conds, None],
        },
        schema_overrides={"created_at": UTC, "requeue_at": UTC},
    )
    times = _workload_times(wl)
    assert sorted(times.rows()) == [
        ("j", _at(8, 30)),
        ("k", _at(9)),
        ("k", _at(10, 40) + dt.timedelta(seconds=0.5)),
        ("k", _at(11, 10)),
        ("k", _at(11, 10)),
    ]
    cols = ["created_at", "scheduled_at", "started_at", "finished_at", "deleted_at"]
    cut = _as_of([(PODS, cols), (times, ["wl_time"])]).sort("cluster")
    assert cut.rows() == [("j", _at(8, 30)), ("k", _at(11, 10))]
    assert _workload_times(wl.head(0)).height == 0
