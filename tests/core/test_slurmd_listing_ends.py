"""When a slurmd pod gone from the pod listings ended (``pipelines.core.slurm_on_k8s.
slurmd_listing_ends``, METRICS.md "Slurm on Kubernetes"): at the first complete listing after
its last one, a listing's time being the latest pod time it holds."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from pipelines.core.slurm_on_k8s import POD_HOSTNAME_LABEL, close_unlisted, slurmd_listing_ends

UTC = pl.Datetime("us", "UTC")
TIMES = ("created_at", "scheduled_at", "started_at", "finished_at", "deleted_at")


def _at(hour: float) -> dt.datetime:
    return dt.datetime(2026, 11, 2, tzinfo=dt.UTC) + dt.timedelta(hours=hour)


def _row(ingest: int, ns: str, uid: str, start: float, slurm_node: str | None = None) -> dict:
    labels = json.dumps({POD_HOSTNAME_LABEL: slurm_node} if slurm_node else {})
    at = _at(start)
    return {"ingest_id": ingest, "namespace": ns, "uid": uid, "labels": labels,
            "created_at": at, "scheduled_at": at, "started_at": at, "finished_at": None,
            "deleted_at": None}  # fmt: skip


def _frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema_overrides=dict.fromkeys(TIMES, UTC))


def test_the_first_complete_listing_after_the_last_one_with_it() -> None:
    """s0 (slurm) in listing 1 (time 01:00); listing 2 lists only namespace ml (time 02:00: not
    complete for slurm, `-n ml`); listing 3 lists ml and kube-system (03:00: complete for
    those two, not for slurm, as a `-A -l` selection without the Slurm pods would be); listing
    4 (05:00) holds slurm/s1: s0 ends at 05:00. s1 is in listing 4, the latest: no end. s2, in
    listing 2 of its own namespace only at 00:30, and listing 5 (its namespace, time 00:45,
    not after its last listing's 02:00) does not count: gone at listing 3, 03:00."""
    rows = [
        _row(1, "slurm", "s0", 0, "sok-0"), _row(1, "ml", "m", 1),
        _row(2, "ml", "m2", 2), _row(2, "ml", "s2", 0.5, "sok-2"),
        _row(3, "ml", "m3", 3), _row(3, "kube-system", "dns", 0),
        _row(4, "slurm", "s1", 5, "sok-1"), _row(4, "kube-system", "dns", 0),
        _row(5, "ml", "x", 0.75),
    ]  # fmt: skip
    got = slurmd_listing_ends(_frame(rows))
    assert got.rows() == [("ml", "s2", _at(3)), ("slurm", "s0", _at(5))]


def test_a_gone_pod_is_deleted_then_a_finished_one_kept() -> None:
    """close_unlisted: s0 (open) is deleted at 03:00; f (finished 02:00) keeps its end; a pod
    of another cluster with the same uid is untouched."""
    pods = pl.DataFrame(
        {"cluster": ["kc", "kc", "other"], "namespace": ["slurm"] * 3, "uid": ["s0", "f", "s0"],
         "finished_at": [None, _at(2), None], "deleted_at": [None, None, None]},
        schema_overrides={"finished_at": UTC, "deleted_at": UTC},
    )  # fmt: skip
    ends = pl.DataFrame(
        {"namespace": ["slurm", "slurm"], "uid": ["s0", "f"], "gone_at": [_at(3), _at(3)]},
        schema_overrides={"gone_at": UTC},
    )
    got = close_unlisted(pods, ends, "kc")
    assert got.columns == pods.columns
    assert got["deleted_at"].to_list() == [_at(3), None, None]
