"""Telemetry attribution through the identity table (metrics.attribution), on literal frames.

The fleet below (cluster ``c``, every node 8 GPUs, 2026-11-02 UTC):

- ``h1``: job 101 holds 2 GPUs 10:00–12:00, the GPU map says ``IDX:0-1``;
- ``h2``: job 102 holds all 8 GPUs 10:00–11:00, no map;
- ``h3``: jobs 103 (team a) and 104 (team c) hold 2 GPUs each 10:00–12:00, no map;
- ``h4``: one A100 in MIG mode, slice 1 (3g.40gb) labelled ``hpc_job=105``, slice 2 (1g.10gb)
  labelled ``hpc_job=106``.
"""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from metrics.attribution import (
    ATTRIBUTIONS,
    attribute_samples,
    device_index,
    gres_holdings,
    hour_holders,
    mig_fraction,
    node_holdings,
)

UTC = dt.UTC


def _t(h: int, m: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, 2, h, m, tzinfo=UTC)


JOBS = pl.DataFrame(
    {
        "source": ["slurm"] * 7,
        "cluster": ["c"] * 7,
        "job_id": ["101", "102", "103", "104", "105", "106", "200_1"],
        "job_id_raw": ["101", "102", "103", "104", "105", "106", "201"],
        "attempt": [0] * 7,
        "team": ["a", "b", "a", "c", "d", "e", "f"],
        "gpus": [2.0, 8.0, 2.0, 2.0, 3 / 7, 1 / 7, 1.0],
        "start_at": [_t(10), _t(10), _t(10), _t(10), _t(10), _t(10), _t(10)],
        "end_at": [_t(12), _t(11), _t(12), _t(12), _t(12), _t(12), None],
        "node_list": [["h1"], ["h2"], ["h3"], ["h3"], ["h4"], ["h4"], ["h5"]],
    },
    schema_overrides={"start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC")},
)
NODES = pl.DataFrame({"cluster": ["c"] * 5, "host": ["h1", "h2", "h3", "h4", "h5"],
                      "gpus": [8.0, 8.0, 8.0, 1.0, 8.0]})  # fmt: skip
GRES = pl.DataFrame(
    {
        "cluster": ["c"],
        "job_id": ["101"],
        "start_at": [_t(10)],
        "node": ["h1"],
        "gpu_indices": [[0, 1]],
        "gres": ["gpu:a100:2(IDX:0-1)"],
        "snapshot_at": [_t(10, 30)],
    },
    schema_overrides={"start_at": pl.Datetime("us", "UTC"),
                      "snapshot_at": pl.Datetime("us", "UTC")},
)  # fmt: skip

_SAMPLE_SCHEMA = {
    "cluster": pl.String(), "host": pl.String(), "gpu_uuid": pl.String(), "gpu_index": pl.Int32(),
    "device": pl.String(), "mig_profile": pl.String(), "mig_instance": pl.Int32(),
    "hpc_job": pl.String(), "namespace": pl.String(), "pod": pl.String(),
    "ts": pl.Datetime("us", "UTC"), "value": pl.Float64(),
}  # fmt: skip


def _sample(host: str, uuid: str, ts: dt.datetime, *, gpu: int | None = None,
            device: str | None = None, mig: tuple[str, int] | None = None,
            hpc_job: str | None = None, ns: str | None = None, pod: str | None = None,
            value: float = 0.5) -> dict[str, object]:  # fmt: skip
    return {
        "cluster": "c", "host": host, "gpu_uuid": uuid, "gpu_index": gpu, "device": device,
        "mig_profile": mig[0] if mig else None, "mig_instance": mig[1] if mig else None,
        "hpc_job": hpc_job, "namespace": ns, "pod": pod, "ts": ts, "value": value,
    }  # fmt: skip


def _attribute(rows: list[dict[str, object]], **kw: object) -> pl.DataFrame:
    samples = pl.DataFrame(rows, schema=_SAMPLE_SCHEMA)
    return attribute_samples(
        samples.lazy(),
        JOBS.lazy(),
        gres=GRES.lazy(),
        nodes=NODES.lazy(),
        **kw,  # type: ignore[arg-type]
    ).collect()


def _one(rows: list[dict[str, object]], **kw: object) -> dict[str, object]:
    out = _attribute(rows, **kw)
    assert out.height == 1
    return out.row(0, named=True)


def test_gres_index_match() -> None:
    """An unlabelled sample of ``device="nvidia1"`` on h1 at 10:30: the map gives job 101
    (IDX 0-1 on h1, 10:00–12:00), so the sample is job 101's, attempt 0, team a."""
    r = _one([_sample("h1", "GPU-h1-1", _t(10, 30), gpu=1, device="nvidia1")])
    assert (r["attribution"], r["job_id"], r["attempt"], r["team"]) == (
        "gres_index", "101", 0, "a")  # fmt: skip
    assert r["job_group"] is None and r["gpus"] == 1.0


def test_device_label_wins_over_gpu_label() -> None:
    """``device="nvidia0"`` with ``gpu="5"`` (NVML order differs): the device's 0 is the GRES
    index, so job 101 holds it."""
    r = _one([_sample("h1", "GPU-h1-0", _t(11), gpu=5, device="nvidia0")])
    assert (r["attribution"], r["job_id"]) == ("gres_index", "101")


def test_free_gpu_on_a_mapped_node_is_unattributed() -> None:
    """nvidia5 on h1 at 10:30: job 101 runs there but the map says it holds 0-1, and no other
    job runs on h1, so the GPU was free."""
    r = _one([_sample("h1", "GPU-h1-5", _t(10, 30), gpu=5, device="nvidia5")])
    assert (r["attribution"], r["job_id"], r["team"]) == ("unattributed", None, None)


def test_after_the_job_ends_is_unattributed() -> None:
    """nvidia0 on h1 at 12:30: job 101 ended at 12:00 (end exclusive)."""
    r = _one([_sample("h1", "GPU-h1-0", _t(12, 30), gpu=0, device="nvidia0")])
    assert r["attribution"] == "unattributed" and r["job_id"] is None


def test_whole_node_fallback() -> None:
    """h2 has no map; job 102 alone holds its 8 of 8 GPUs at 10:30 → whole_node, job 102; at
    11:00 (its end) nothing runs → unattributed."""
    out = _attribute(
        [_sample("h2", "GPU-h2-3", _t(10, 30), gpu=3), _sample("h2", "GPU-h2-3", _t(11), gpu=3)]
    ).sort("ts")
    assert out["attribution"].to_list() == ["whole_node", "unattributed"]
    assert out["job_id"].to_list() == ["102", None]
    assert out["team"].to_list() == ["b", None]


def test_shared_node_without_map_is_a_flagged_group() -> None:
    """h3: jobs 103 and 104 share the node and there is no map: the sample is the group's,
    flagged ``node_group``, with no single job (``job_id`` NULL) and no team (a and c differ)."""
    r = _one([_sample("h3", "GPU-h3-4", _t(10, 30), gpu=4, device="nvidia4")])
    assert (r["attribution"], r["job_id"], r["attempt"]) == ("node_group", None, None)
    assert (r["job_group"], r["team"]) == ("103,104", None)


def test_mig_slices_are_separate_allocations() -> None:
    """One GPU, two MIG slices labelled with two jobs: each slice is its own job's, with its
    fraction of the GPU (3g.40gb = 3/7, 1g.10gb = 1/7), never one GPU summed."""
    out = _attribute(
        [
            _sample(
                "h4", "GPU-h4-0", _t(10, 30), gpu=0, mig=("3g.40gb", 1), hpc_job="105", value=0.9
            ),
            _sample(
                "h4", "GPU-h4-0", _t(10, 30), gpu=0, mig=("1g.10gb", 2), hpc_job="106", value=0.1
            ),
        ]
    ).sort("mig_instance")
    assert out["attribution"].to_list() == ["label_hpc_job", "label_hpc_job"]
    assert out["job_id"].to_list() == ["105", "106"]
    assert out["gpus"].to_list() == pytest.approx([3 / 7, 1 / 7])
    assert out["value"].to_list() == [0.9, 0.1]


def test_unlabelled_mig_slice_never_uses_the_gpu_map() -> None:
    """A MIG instance's GRES ``IDX`` counts MIG devices, not GPUs: an unlabelled slice on h1
    ``nvidia0`` is not matched to job 101 by index, and without a usable index job 101 (known
    by its map) stays a candidate: a group of one, flagged (101 holds 2 of 8 GPUs: not
    whole), team a."""
    r = _one([_sample("h1", "GPU-h1-0", _t(10, 30), gpu=0, device="nvidia0",
                      mig=("1g.10gb", 3))])  # fmt: skip
    assert (r["attribution"], r["job_group"], r["team"]) == ("node_group", "101", "a")


def test_hpc_job_label_matches_job_id_raw() -> None:
    """``hpc_job=201`` is SLURM_JOB_ID (JobIDRaw) of array task ``200_1``: the sample is that
    attempt's, running (no end)."""
    r = _one([_sample("h5", "GPU-h5-0", _t(11), gpu=0, hpc_job="201")])
    assert (r["attribution"], r["job_id"], r["attempt"], r["team"]) == (
        "label_hpc_job", "200_1", 0, "f")  # fmt: skip


def test_label_of_unknown_job_keeps_the_label() -> None:
    """``hpc_job=999`` names no attempt: the label is kept as ``job_id`` with no attempt."""
    r = _one([_sample("h5", "GPU-h5-1", _t(11), gpu=1, hpc_job="999")])
    assert (r["attribution"], r["job_id"], r["attempt"]) == ("label_hpc_job", "999", None)


def test_labelled_job_is_no_candidate_for_unlabelled_gpus() -> None:
    """h3 with job 103 seen through its label: an unlabelled GPU there can only be 104's (2 of
    8 GPUs, not whole) → a group of one, flagged."""
    out = _attribute(
        [_sample("h3", "GPU-h3-0", _t(10, 30), gpu=0, hpc_job="103"),
         _sample("h3", "GPU-h3-6", _t(10, 30), gpu=6)]
    ).sort("gpu_index")  # fmt: skip
    assert out["attribution"].to_list() == ["label_hpc_job", "node_group"]
    assert out["job_group"].to_list() == [None, "104"]
    assert out["team"].to_list() == ["a", "c"]


def test_pod_labels_map_to_the_workload_attempt() -> None:
    """Pod ``ml/trainer-0`` belongs to workload attempt ``ml/trainer`` (pod_jobs)."""
    jobs = pl.concat(
        [JOBS, JOBS.head(1).with_columns(
            source=pl.lit("kubernetes"), job_id=pl.lit("ml/trainer"), job_id_raw=pl.lit("uid1"),
            team=pl.lit("k"), node_list=pl.lit(["n1"]))]
    )  # fmt: skip
    pod_jobs = pl.DataFrame({"cluster": ["c"], "namespace": ["ml"], "pod": ["trainer-0"],
                             "job_id": ["ml/trainer"]})  # fmt: skip
    samples = pl.DataFrame(
        [_sample("n1", "GPU-n1-0", _t(10, 30), gpu=0, ns="ml", pod="trainer-0")],
        schema=_SAMPLE_SCHEMA,
    )
    r = (
        attribute_samples(samples.lazy(), jobs.lazy(), pod_jobs=pod_jobs.lazy())
        .collect()
        .row(0, named=True)
    )
    assert (r["attribution"], r["job_id"], r["attempt"], r["team"]) == ("pod", "ml/trainer", 0, "k")


def test_every_row_gets_exactly_one_attribution() -> None:
    """Five samples in, five out, each with one of the six kinds."""
    rows = [
        _sample("h1", "GPU-h1-1", _t(10, 30), gpu=1, device="nvidia1"),
        _sample("h2", "GPU-h2-3", _t(10, 30), gpu=3),
        _sample("h3", "GPU-h3-4", _t(10, 30), gpu=4),
        _sample("h4", "GPU-h4-0", _t(10, 30), mig=("3g.40gb", 1), hpc_job="105"),
        _sample("h9", "GPU-h9-0", _t(10, 30), gpu=0),
    ]
    out = _attribute(rows)
    assert out.height == 5
    assert set(out["attribution"]) <= set(ATTRIBUTIONS)
    assert sorted(out["attribution"]) == sorted(
        ["gres_index", "whole_node", "node_group", "label_hpc_job", "unattributed"]
    )


def test_helpers() -> None:
    """``mig_fraction``: none → 1, 3g.40gb → 3/7, 1c.2g.20gb → 2/7; ``device_index``: nvidia3 →
    3, otherwise the ``gpu`` label; ``gres_holdings`` explodes IDX 0-1 into two rows;
    ``node_holdings`` marks 102 (8 of 8) whole and 101 (2 of 8) not."""
    f = pl.DataFrame({"p": [None, "3g.40gb", "1c.2g.20gb"]}, schema={"p": pl.String()})
    assert f.select(mig_fraction(pl.col("p")).alias("x"))["x"].to_list() == pytest.approx(
        [1, 3 / 7, 2 / 7]
    )
    d = pl.DataFrame({"d": ["nvidia3", None, "gpu7"], "g": [9, 4, 2]})
    assert d.select(device_index(pl.col("d"), pl.col("g")).alias("x"))["x"].to_list() == [3, 4, 2]
    held = gres_holdings(GRES.lazy(), JOBS.lazy()).collect().sort("device_index")
    assert held["device_index"].to_list() == [0, 1] and held["job_id"].to_list() == ["101"] * 2
    whole = node_holdings(JOBS.lazy(), NODES.lazy()).collect()
    flags = dict(zip(whole["job_id"], whole["whole_node"], strict=True))
    assert flags["102"] and not flags["101"] and flags["105"] is False


def test_gres_latest_snapshot_wins_then_the_later_row() -> None:
    """Two map rows of job 101 on h1 (same start): the one dated 10:45 (GPUs 4-5) beats the one
    dated 10:30 (GPUs 0-1) though it comes first; undated, the later row wins (GPUs 0-1, then,
    in the other order, GPUs 4-5)."""
    newer = GRES.with_columns(
        pl.lit([4, 5]).alias("gpu_indices"), pl.lit(_t(10, 45)).alias("snapshot_at")
    )
    held = gres_holdings(pl.concat([newer, GRES]).lazy(), JOBS.lazy()).collect()
    assert sorted(held["device_index"].to_list()) == [4, 5]
    undated = [f.with_columns(pl.lit(None, pl.Datetime("us", "UTC")).alias("snapshot_at"))
               for f in (newer, GRES)]  # fmt: skip
    for order, want in ((undated, [0, 1]), (undated[::-1], [4, 5])):
        held = gres_holdings(pl.concat(order).lazy(), JOBS.lazy()).collect()
        assert sorted(held["device_index"].to_list()) == want


def _pod_samples(*at: dt.datetime) -> pl.DataFrame:
    """Samples of GPU 0 of h1 labelled with pod ``nlp/w-0``, one at each time ``at``."""
    n = len(at)
    return pl.DataFrame(
        {"cluster": ["c"] * n, "host": ["h1"] * n, "gpu_uuid": ["G0"] * n, "gpu_index": [0] * n,
         "device": ["nvidia0"] * n, "mig_profile": [None] * n, "mig_instance": [None] * n,
         "hpc_job": [None] * n, "namespace": ["nlp"] * n, "pod": ["w-0"] * n, "ts": list(at)},
        schema_overrides={"ts": pl.Datetime("us", "UTC"), "mig_profile": pl.String(),
                          "mig_instance": pl.String(), "hpc_job": pl.String()},
    )  # fmt: skip


def test_a_pod_name_used_again_is_the_life_that_had_it_then() -> None:
    """Pod ``w-0`` of namespace ``nlp`` ran twice: job ``nlp/joba`` bound it at 10:00 (attempt
    on h1 10:00–11:00), job ``nlp/aaa`` at 11:30 (h1 11:30–12:00). Samples at 10:30 and at
    11:10 (the first pod's tail, after its end) go to joba (attempt 0, then NULL: no attempt
    holds 11:10), 11:40 to aaa; a sample at 09:50, before either life, to the first (joba).
    Without ``pod_from`` the name has one life, the first listed (joba at every time)."""
    jobs = pl.DataFrame(
        {"source": ["kubernetes"] * 2, "cluster": ["c"] * 2, "job_id": ["nlp/joba", "nlp/aaa"],
         "job_id_raw": ["a", "b"], "attempt": [0, 0], "team": ["nlp", "vision"],
         "gpus": [1.0, 1.0], "start_at": [_t(10), _t(11, 30)], "end_at": [_t(11), _t(12)],
         "node_list": [["h1"], ["h1"]]},
        schema_overrides={"start_at": pl.Datetime("us", "UTC"),
                          "end_at": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    lives = pl.DataFrame(
        {"cluster": ["c", "c"], "namespace": ["nlp", "nlp"], "pod": ["w-0", "w-0"],
         "job_id": ["nlp/aaa", "nlp/joba"], "pod_from": [_t(11, 30), _t(10)]},
        schema_overrides={"pod_from": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    samples = _pod_samples(_t(10, 30), _t(11, 10), _t(11, 40), _t(9, 50))
    got = attribute_samples(samples.lazy(), jobs.lazy(), pod_jobs=lives.lazy()).collect()
    assert got.select("job_id", "attempt", "team", "attribution").rows() == [
        ("nlp/joba", 0, "nlp", "pod"),
        ("nlp/joba", None, "nlp", "pod"),
        ("nlp/aaa", 0, "vision", "pod"),
        ("nlp/joba", None, "nlp", "pod"),
    ]
    undated = lives.drop("pod_from").reverse()  # joba listed first
    got = attribute_samples(samples.lazy(), jobs.lazy(), pod_jobs=undated.lazy()).collect()
    assert got["job_id"].to_list() == ["nlp/joba"] * 4


def test_a_pod_never_bound_takes_no_sample_from_a_bound_one() -> None:
    """Pod ``w-0`` was created for job ``nlp/pend`` (uid u-9, never bound: no ``pod_from``) and
    ran for ``nlp/joba`` from 10:00 (uid u-1): samples at 09:50 and 10:30 are joba's (the
    unbound life held no GPU). With the unbound life alone, the name is its job's at every time.
    Job ``nlp/joba``'s two attempts name teams ``nlp`` (attempt 0, 10:00–10:20) and ``vision``
    (attempt 1, 10:40–11:00): the sample at 10:30, held by neither, takes the latest attempt's
    team (vision)."""
    jobs = pl.DataFrame(
        {"source": ["kubernetes"] * 2, "cluster": ["c"] * 2, "job_id": ["nlp/joba"] * 2,
         "job_id_raw": ["a", "a"], "attempt": [1, 0], "team": ["vision", "nlp"],
         "gpus": [1.0, 1.0], "start_at": [_t(10, 40), _t(10)], "end_at": [_t(11), _t(10, 20)],
         "node_list": [["h1"], ["h1"]]},
        schema_overrides={"start_at": pl.Datetime("us", "UTC"),
                          "end_at": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    lives = pl.DataFrame(
        {"cluster": ["c", "c"], "namespace": ["nlp", "nlp"], "pod": ["w-0", "w-0"],
         "uid": ["u-9", "u-1"], "job_id": ["nlp/pend", "nlp/joba"], "pod_from": [None, _t(10)]},
        schema_overrides={"pod_from": pl.Datetime("us", "UTC")},
    )  # fmt: skip
    samples = _pod_samples(_t(9, 50), _t(10, 30))
    got = attribute_samples(samples.lazy(), jobs.lazy(), pod_jobs=lives.lazy()).collect()
    assert got.select("job_id", "attempt", "team").rows() == [
        ("nlp/joba", None, "vision"),
        ("nlp/joba", None, "vision"),
    ]
    alone = lives.filter(pl.col("uid") == "u-9")
    got = attribute_samples(samples.lazy(), jobs.lazy(), pod_jobs=alone.lazy()).collect()
    assert got["job_id"].to_list() == ["nlp/pend", "nlp/pend"]


# hour_holders: the attempts holding a GPU over some part of an hour (hourly aggregates).
_HOUR_JOBS = pl.DataFrame(
    {
        "source": ["slurm"] * 4,
        "cluster": ["c"] * 4,
        "job_id": ["301", "302", "303", "304"],
        "job_id_raw": ["301", "302", "303", "304"],
        "attempt": [0] * 4,
        "team": ["a", "b", "c", "d"],
        "gpus": [8.0, 8.0, 8.0, 1.0],
        "start_at": [_t(9), _t(10, 20), _t(12), _t(10, 30)],
        "end_at": [_t(10, 10), _t(11), _t(13), _t(11)],
        "node_list": [["h2"], ["h2"], ["h2"], ["h3"]],
    },
    schema_overrides={"start_at": pl.Datetime("us", "UTC"), "end_at": pl.Datetime("us", "UTC")},
)


def _hour_rows(host: str, hour: dt.datetime, hpc_job: str | None = None) -> pl.LazyFrame:
    return pl.LazyFrame(
        {"cluster": ["c"], "host": [host], "gpu_uuid": [f"GPU-{host}-0"], "gpu_index": [0],
         "hpc_job": [hpc_job], "hour": [hour]},
        schema_overrides={"hour": pl.Datetime("us", "UTC"), "hpc_job": pl.String()},
    )  # fmt: skip


def _holders(rows: pl.LazyFrame) -> list[tuple[str, str]]:
    out = hour_holders(rows, _HOUR_JOBS.lazy(), nodes=NODES.lazy()).collect()
    return sorted(zip(out["job_id"], out["attribution"], strict=True))


def test_hour_holders_finds_each_whole_node_attempt_of_the_hour() -> None:
    """h2's GPU 0, unlabelled, in hour 10:00: job 301 held all of h2 until 10:10 and job 302
    from 10:20: both held it in the hour (whole node, found at 10:00 and at 10:20); job 303
    starts at 12:00, outside it. In hour 12:00 only 303; in hour 11:00 none (302 ended at
    11:00, its end not in [11:00, 12:00))."""
    assert _holders(_hour_rows("h2", _t(10))) == [("301", "whole_node"), ("302", "whole_node")]
    assert _holders(_hour_rows("h2", _t(12))) == [("303", "whole_node")]
    assert _holders(_hour_rows("h2", _t(11))) == []


def test_hour_holders_reads_the_label_and_never_a_shared_node() -> None:
    """h3's GPU 0 in hour 10:00: job 304 holds 1 of h3's 8 GPUs from 10:30; labelled
    ``hpc_job=304`` the row is 304's (found at its start, 10:30); unlabelled it has no holder
    (304 does not hold the whole node: a 5-minute sample's node_group would not count)."""
    assert _holders(_hour_rows("h3", _t(10), "304")) == [("304", "label_hpc_job")]
    assert _holders(_hour_rows("h3", _t(10))) == []
