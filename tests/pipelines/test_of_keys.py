"""The rows of a few keys among many (:func:`pipelines.analytics.chunks.of_keys`), on
hand-made rows: the same rows, in the same order, as polars' semi join."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.analytics.chunks import of_keys

ROWS = pl.DataFrame(
    {
        "cluster": ["a", "b", "a", "a", None, "b"],
        "job_id": ["1", "1", "2", None, "3", "2"],
        "attempt": [0, 0, 0, 0, 0, 1],
    }
)


def test_rows_of_the_keys_on_both_columns_in_frame_order() -> None:
    """Keys (a, 1) and (b, 2): rows 0 and 5; b's job 1 and a's job 2 share a job id with a key
    but not its cluster, so they are left out."""
    keys = pl.DataFrame({"cluster": ["a", "b"], "job_id": ["1", "2"]})
    got = of_keys(ROWS.lazy(), keys, ["cluster", "job_id"]).collect()
    assert got.rows() == [("a", "1", 0), ("b", "2", 1)]
    assert got.equals(ROWS.join(keys, on=["cluster", "job_id"], how="semi", maintain_order="left"))


def test_nulls_match_only_where_nulls_are_equal() -> None:
    """Key (a, NULL) matches row 3 when NULLs are equal, nothing otherwise; key (NULL, 3)
    matches row 4 the same way (its job id is looked up, its cluster joined)."""
    keys = pl.DataFrame({"cluster": ["a", None], "job_id": [None, "3"]})
    equal = of_keys(ROWS.lazy(), keys, ["cluster", "job_id"], nulls_equal=True).collect()
    assert equal.rows() == [("a", None, 0), (None, "3", 0)]
    assert of_keys(ROWS.lazy(), keys, ["cluster", "job_id"]).collect().height == 0


def test_the_lookup_column_must_be_a_key() -> None:
    with pytest.raises(ValueError, match="not one of the keys"):
        of_keys(ROWS.lazy(), ROWS.select("cluster"), ["cluster"])
