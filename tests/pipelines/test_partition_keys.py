"""``split_partition_key`` reads a cluster × day key as an object or as Dagster's key text."""

from __future__ import annotations

import dagster as dg
import pytest

from pipelines.partitions import split_partition_key


def test_key_object_and_its_text_give_the_same_pair() -> None:
    """``MultiPartitionKey`` text joins the values in dimension-name order: ``cluster|date``."""
    key = dg.MultiPartitionKey({"date": "2026-11-02", "cluster": "slurm-a"})
    assert str(key) == "slurm-a|2026-11-02"
    assert split_partition_key(key) == ("slurm-a", "2026-11-02")
    assert split_partition_key(str(key)) == ("slurm-a", "2026-11-02")


@pytest.mark.parametrize("text", ["slurm-a", "slurm-a|11/02/2026", "|2026-11-02", "a|b|c"])
def test_malformed_key_text_is_refused(text: str) -> None:
    """Text without a cluster, a ``|`` or an ISO day names no partition."""
    with pytest.raises(ValueError, match="not a cluster\\|YYYY-MM-DD partition key"):
        split_partition_key(text)
